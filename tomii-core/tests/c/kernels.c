/*
 * A kernel library written in C against tomii/tomii.h, for tests/c_plugins.rs: it proves the
 * kernel ABI works from C through the real loader, including ownership of returned buffers.
 *
 *   add_u64    the sum of its arguments, each an unsigned integer (u8, u16, u32, u64, usize), as
 *              a u64. Any other argument fails the call with a message naming its index.
 *   make_text  the text "NODE:INSTANCE:FRAME" as a STR in memory from malloc; its release frees it
 *              and counts the release in `tomii_test_released` (`tomii_test_made` counts the
 *              texts made), which the test reads through the dynamic loader.
 *
 *   times_ten  its unsigned argument times the u64 its registry entry's `data` points at (10):
 *   times_hundred          the same function, registered again with data pointing at 100
 *              (kernel ABI v1.1: one function, several kernels).
 *
 *   spin_forever  never returns (an infinite loop): a kernel stuck for the kernel watchdog. With
 *              $TOMII_TEST_SPIN_MARK set, it first creates the file it names: a test then knows
 *              a kernel is stuck.
 *
 * Variants:
 *   -DKERNEL_ABI_MAJOR=N   the registry claims kernel ABI vN (rejected)
 *   -DNULL_FUNC            an extra entry "hollow" has a NULL function (rejected)
 *   -DINTERRUPT_ON_LOAD    loading the library sends the process SIGINT, as a Ctrl-C pressed
 *                          while the plugins load
 *   -DABI_V1_0             the registry is laid out as a v1.0 library: entries end before `data`
 *                          and the minor version is 0; it loads, and its kernels see data NULL
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "tomii/tomii.h"

#ifndef KERNEL_ABI_MAJOR
#define KERNEL_ABI_MAJOR TOMII_KERNEL_ABI_MAJOR
#endif

_Static_assert(sizeof(atomic_ulong) == 8, "the test reads the counters as 64-bit atomics");

atomic_ulong tomii_test_made;
atomic_ulong tomii_test_released;

__attribute__((format(printf, 2, 3))) static int32_t fail(const TomiiCallCtx *ctx, const char *format, ...) {
    if (ctx->err.ptr != NULL && ctx->err.cap > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(ctx->err.ptr, ctx->err.cap, format, args);
        va_end(args);
    }
    return TOMII_ERR;
}

static int32_t add_u64(const TomiiValue *args, size_t nargs, TomiiValue *out, const TomiiCallCtx *ctx) {
    uint64_t sum = 0;
    for (size_t i = 0; i < nargs; i++) {
        switch (args[i].tag) {
        case TOMII_TAG_U8:
        case TOMII_TAG_U16:
        case TOMII_TAG_U32:
        case TOMII_TAG_U64:
        case TOMII_TAG_USIZE:
            if (__builtin_add_overflow(sum, args[i].payload.u, &sum)) {
                return fail(ctx, "add_u64: the sum overflows u64 at argument %zu", i);
            }
            break;
        default:
            return fail(ctx, "add_u64: argument %zu has tag %u, not an unsigned integer", i, (unsigned)args[i].tag);
        }
    }
    out->tag = TOMII_TAG_U64;
    out->elem = 0;
    out->payload.u = sum;
    return TOMII_OK;
}

static void release_text(void *data, size_t len, void *ctx) {
    (void)len;
    (void)ctx;
    free(data);
    atomic_fetch_add(&tomii_test_released, 1);
}

static int32_t make_text(const TomiiValue *args, size_t nargs, TomiiValue *out, const TomiiCallCtx *ctx) {
    (void)args;
    (void)nargs;
    const char *format = "%s:%u:%llu";
    unsigned long long frame = ctx->frame;
    int len = snprintf(NULL, 0, format, ctx->node, (unsigned)ctx->instance, frame);
    char *text = len < 0 ? NULL : malloc((size_t)len + 1);
    if (text == NULL) {
        return fail(ctx, "make_text: out of memory");
    }
    snprintf(text, (size_t)len + 1, format, ctx->node, (unsigned)ctx->instance, frame);
    atomic_fetch_add(&tomii_test_made, 1);
    out->tag = TOMII_TAG_STR;
    out->elem = 0;
    out->payload.buf.data = text;
    out->payload.buf.len = (size_t)len; /* not NUL-terminated as far as the ABI goes */
    out->payload.buf.ctx = NULL;
    out->payload.buf.release = release_text;
    return TOMII_OK;
}

static int32_t times_data(const TomiiValue *args, size_t nargs, TomiiValue *out, const TomiiCallCtx *ctx) {
    if (nargs != 1 || args[0].tag != TOMII_TAG_U64) {
        return fail(ctx, "times_data takes one u64");
    }
    /* A v1.0 host's context ends before `data`; a v1.0 library's entries have none (NULL). */
    int has_data = ctx->struct_size >= offsetof(TomiiCallCtx, data) + sizeof(void *) && ctx->data != NULL;
    uint64_t factor = has_data ? *(const uint64_t *)ctx->data : 1;
    out->tag = TOMII_TAG_U64;
    out->elem = 0;
    out->payload.u = args[0].payload.u * factor;
    return TOMII_OK;
}

static int32_t spin_forever(const TomiiValue *args, size_t nargs, TomiiValue *out, const TomiiCallCtx *ctx) {
    (void)args, (void)nargs, (void)out, (void)ctx;
    const char *mark = getenv("TOMII_TEST_SPIN_MARK");
    FILE *marked = mark != NULL ? fopen(mark, "w") : NULL;
    if (marked != NULL) {
        fclose(marked);
    }
    static volatile int forever = 1; /* a volatile condition: the loop cannot be assumed to end */
    while (forever) {
    }
    return TOMII_ERR;
}

__attribute__((unused)) static const uint64_t TEN = 10;
__attribute__((unused)) static const uint64_t HUNDRED = 100;

#ifdef ABI_V1_0
/* The entry of kernel ABI v1.0, before `data` was appended. */
typedef struct {
    const char *name;
    TomiiKernelFn func;
    uint32_t flags;
    uint32_t reserved;
} EntryV10;
#define ENTRY_TYPE EntryV10
#define WITH_DATA(pointer)
#define ABI_MINOR 0
#else
#define ENTRY_TYPE TomiiKernelEntry
#define WITH_DATA(pointer) , .data = (void *)(pointer)
#define ABI_MINOR TOMII_KERNEL_ABI_MINOR
#endif

static const ENTRY_TYPE ENTRIES[] = {
    {.name = "add_u64", .func = add_u64},
    {.name = "make_text", .func = make_text},
    {.name = "times_ten", .func = times_data WITH_DATA(&TEN)},
    {.name = "times_hundred", .func = times_data WITH_DATA(&HUNDRED)},
    {.name = "spin_forever", .func = spin_forever},
#ifdef NULL_FUNC
    {.name = "hollow", .func = NULL},
#endif
};

static const TomiiKernelRegistry REGISTRY = {
    .abi_major = KERNEL_ABI_MAJOR,
    .abi_minor = ABI_MINOR,
    .struct_size = sizeof(TomiiKernelRegistry),
    .entry_size = sizeof(ENTRY_TYPE),
    .library = "c-kernels",
    .entries = (const TomiiKernelEntry *)ENTRIES,
    .count = sizeof ENTRIES / sizeof ENTRIES[0],
};

const TomiiKernelRegistry *tomii_kernels_v1(void) {
    return &REGISTRY;
}

#ifdef INTERRUPT_ON_LOAD
#include <signal.h>

__attribute__((constructor)) static void interrupt_on_load(void) {
    raise(SIGINT);
}
#endif
