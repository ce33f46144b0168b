/*
 * A C scheduler that crashes, hangs or corrupts the host's memory, for tests/broken_plugins.rs:
 * the `tomii` command must end within its limit with one line naming the plugin, never with a
 * panic trace or a bare "Segmentation fault".
 *
 * The structure of fifo_sched.c: one ring buffer behind a pthread mutex, sized from
 * init->max_ready; a worker gets the oldest tasks whose range contains it. After AFTER tasks
 * (default 5, -DAFTER=N) were handed out correctly, it misbehaves as one `-D` macro says (a
 * crash happens on one thread only, the first to find it due):
 *
 *   (none)            behaves: the control
 *   -DCRASH_SEGFAULT  pop writes through a NULL pointer (SIGSEGV)
 *   -DCRASH_ABORT     pop writes a line to stderr, then calls abort() (SIGABRT)
 *   -DCRASH_EXIT      pop calls exit(3)
 *   -DCRASH_STACK     pop recurses without end: a stack overflow
 *   -DCRASH_OVERRUN   pop writes one descriptor past `max` into the host's buffer (once), and
 *                     reports only the ones it was allowed to write
 *   -DCRASH_HEAP      pop writes past the end of a heap block of its own (once), and is otherwise
 *                     correct: the run completes, and the C library finds the corruption only
 *                     when the library frees the block as it is unloaded, after the run (glibc:
 *                     "double free or corruption (!prev)", then abort())
 *   -DHANG_PUSH_AFTER push never returns (an infinite loop); a value given to it is ignored:
 *                     AFTER says when
 *   -DHANG_POP        pop never returns (an infinite loop)
 *   -DHANG_POP_ONCE   one pop never returns, on the first thread to find it due; the others go on
 *   -DSLEEP_POP_US=N  every pop sleeps N microseconds, and is otherwise correct: slow, not hung
 *   -DNULL_CREATE     create returns TOMII_OK but leaves the state NULL
 *   -DFAIL_CREATE     create returns TOMII_ERR without writing a message
 */

#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "task_ring.h"

#ifndef AFTER
#define AFTER 5
#endif

typedef struct Crash {
    LockedRing queue;    /* first: the state is made by locked_ring_create */
    uint64_t handed_out; /* tasks handed out */
    int overran;         /* CRASH_OVERRUN wrote past `max` once */
} Crash;

static int32_t crash_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
#if defined(NULL_CREATE)
    (void)init, (void)err;
    *state = NULL;
    return TOMII_OK;
#elif defined(FAIL_CREATE)
    (void)init, (void)state, (void)err;
    return TOMII_ERR;
#else
    return locked_ring_create(sizeof(Crash), 0, init, state, err); /* a correct FIFO's */
#endif
}

/* Whether AFTER tasks were handed out: the misbehaviour is due. */
__attribute__((unused)) static int due(Crash *crash) {
    pthread_mutex_lock(&crash->queue.lock);
    int due = crash->handed_out >= AFTER;
    pthread_mutex_unlock(&crash->queue.lock);
    return due;
}

#ifdef CRASH_HEAP
/* A block of the scheduler's own, and the one right after it in memory, whose header the overrun
 * corrupts: only the scheduler's own memory. Too large for glibc's per-thread cache, so that
 * freeing the first checks the second; the second is never freed, so nothing finds the
 * corruption before that. Adjacent as glibc lays chunks out on x86-64 and aarch64 (a 16-byte
 * header): pairs are made until one is (those that are not are leaked); with none, no overrun. */
enum { BLOCK = 4096, HEADER = 16 };
static unsigned char *block, *next_block;

__attribute__((constructor)) static void make_blocks(void) {
    for (int tries = 0; tries < 64 && next_block == NULL; tries++) {
        unsigned char *first = malloc(BLOCK), *second = malloc(BLOCK);
        if (first != NULL && second == first + BLOCK + HEADER) {
            block = first;
            next_block = second;
        }
    }
}

__attribute__((destructor)) static void free_block(void) {
    free(block);
}

/* Writes 32 bytes past the end of `block`: over the next block's header, into its first bytes. */
static void overrun_block(void) {
    if (next_block != NULL) {
        memset(block + BLOCK, 0x5a, 32);
    }
}
#endif

/* Never returns. A loop with a constant condition may not be assumed to end (C11 6.8.5p6). */
__attribute__((unused)) static void spin_forever(void) {
    for (;;) {
    }
}

static int32_t crash_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)worker;
    Crash *crash = state;
#ifdef HANG_PUSH_AFTER
    if (due(crash)) {
        spin_forever();
    }
#endif
    pthread_mutex_lock(&crash->queue.lock);
    int32_t status = ring_push(&crash->queue.ring, tasks, n);
    pthread_mutex_unlock(&crash->queue.lock);
    return status;
}

/* Recurses `depth` times, each call with a frame of its own: given a huge depth, overflows the
 * stack (volatile, so the frames cannot be optimised away). */
__attribute__((unused)) static int recurse(unsigned long depth) {
    volatile char frame[256];
    frame[0] = (char)depth;
    return depth == 0 ? 0 : recurse(depth - 1) + frame[0];
}

/* Whether this thread is the one to crash: the misbehaviour is due, and no other thread took
 * it (so two workers never abort, exit or write their line at the same time). */
__attribute__((unused)) static int crashes_now(Crash *crash) {
    static atomic_flag taken = ATOMIC_FLAG_INIT;
    return due(crash) && !atomic_flag_test_and_set(&taken);
}

/* The crash of the chosen macro, when it is due; returns when no crash was chosen. */
static void crash_if_due(Crash *crash) {
#if defined(CRASH_SEGFAULT)
    if (crashes_now(crash)) {
        /* Volatile both ways: the compiler can neither prove the pointer NULL (and emit a trap
         * instead) nor drop the store. */
        volatile int *volatile nowhere = NULL;
        *nowhere = 1;
    }
#elif defined(CRASH_ABORT)
    if (crashes_now(crash)) {
        fputs("c-crash: calling abort() on purpose\n", stderr);
        abort();
    }
#elif defined(CRASH_EXIT)
    if (crashes_now(crash)) {
        exit(3);
    }
#elif defined(CRASH_STACK)
    static volatile unsigned long depth = (unsigned long)-1;
    if (crashes_now(crash)) {
        recurse(depth);
    }
#elif defined(HANG_POP)
    if (due(crash)) {
        spin_forever();
    }
#elif defined(HANG_POP_ONCE)
    if (crashes_now(crash)) {
        spin_forever();
    }
#else
    (void)crash;
#endif
}

static int32_t crash_pop(void *state, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    Crash *crash = state;
#ifdef SLEEP_POP_US
    struct timespec pause = {SLEEP_POP_US / 1000000, (SLEEP_POP_US % 1000000) * 1000L};
    nanosleep(&pause, NULL);
#endif
    crash_if_due(crash);
    pthread_mutex_lock(&crash->queue.lock);
    size_t count = ring_pop(&crash->queue.ring, worker, out, max);
#ifdef CRASH_OVERRUN
    if (crash->handed_out >= AFTER && count > 0 && !crash->overran) {
        out[max] = out[0]; /* one descriptor past the end of the buffer the host lent */
        crash->overran = 1;
    }
#endif
#ifdef CRASH_HEAP
    if (crash->handed_out >= AFTER && !crash->overran) {
        overrun_block();
        crash->overran = 1;
    }
#endif
    crash->handed_out += count;
    pthread_mutex_unlock(&crash->queue.lock);
    *n_out = count;
    return TOMII_OK;
}

static const TomiiSchedulerVtable VTABLE = {
    .header = {TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR, sizeof(TomiiSchedulerVtable), 0, "c-crash"},
    .create = crash_create,
    .destroy = locked_ring_destroy,
    .push = crash_push,
    .pop = crash_pop,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
