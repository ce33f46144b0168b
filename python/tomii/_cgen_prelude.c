/*
 * The helpers at the top of every registry file that tomii.build generates from an annotated
 * header (_cgen.py copies this file in, after the includes): the argument checks and conversions
 * of the kernel wrappers, with messages naming the kernel, the argument and the expected and found
 * types (the same wording as the Rust attribute's). Never compiled on its own.
 */
#define TOMII_HELPER static __attribute__((unused))

typedef struct {
    const char *kernel;
    const char *const *params;
    size_t count;
    const char *listed;
} TomiiSignature;

TOMII_HELPER __attribute__((format(printf, 2, 3))) int32_t tomii_fail(const TomiiCallCtx *ctx, const char *format, ...) {
    if (ctx->err.ptr != NULL && ctx->err.cap > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(ctx->err.ptr, ctx->err.cap, format, args);
        va_end(args);
    }
    return TOMII_ERR;
}

TOMII_HELPER void tomii_clear_error(const TomiiCallCtx *ctx) {
    if (ctx->err.ptr != NULL && ctx->err.cap > 0) {
        ctx->err.ptr[0] = '\0';
    }
}

/* Whether a kernel that takes the context wrote a message into ctx->err: its way to fail. */
TOMII_HELPER bool tomii_failed(const TomiiCallCtx *ctx) {
    return ctx->err.ptr != NULL && ctx->err.cap > 0 && ctx->err.ptr[0] != '\0';
}

TOMII_HELPER const char *tomii_tag_name(uint32_t tag) {
    static const char *const names[] = {
        "none", "bool", "int8_t", "int16_t", "int32_t", "int64_t", "i128", "uint8_t", "uint16_t",
        "uint32_t", "uint64_t", "u128", "size_t", "ptrdiff_t", "float", "double", "float _Complex",
        "double _Complex", "char", "string", "bytes", "array", "list", "object",
    };
    return tag < sizeof names / sizeof names[0] ? names[tag] : "an unknown type";
}

TOMII_HELPER void tomii_describe(const TomiiValue *v, char *text, size_t cap) {
    switch (v->tag) {
    case TOMII_TAG_NONE: snprintf(text, cap, "no value (NONE)"); break;
    case TOMII_TAG_BOOL: snprintf(text, cap, "a bool (%s)", v->payload.b ? "true" : "false"); break;
    case TOMII_TAG_I8: case TOMII_TAG_I16: case TOMII_TAG_I32: case TOMII_TAG_I64: case TOMII_TAG_ISIZE:
        snprintf(text, cap, "a signed integer (%" PRId64 ")", v->payload.i); break;
    case TOMII_TAG_U8: case TOMII_TAG_U16: case TOMII_TAG_U32: case TOMII_TAG_U64: case TOMII_TAG_USIZE:
        snprintf(text, cap, "an unsigned integer (%" PRIu64 ")", v->payload.u); break;
    case TOMII_TAG_F32: snprintf(text, cap, "an f32 (%g)", (double)v->payload.f32); break;
    case TOMII_TAG_F64: snprintf(text, cap, "an f64 (%g)", v->payload.f64); break;
    case TOMII_TAG_STR: snprintf(text, cap, "a string of %zu bytes", v->payload.buf.len); break;
    case TOMII_TAG_ARRAY:
        snprintf(text, cap, "an array of %s (%zu elements)", tomii_tag_name(v->elem), v->payload.buf.len); break;
    case TOMII_TAG_LIST: snprintf(text, cap, "a list of %zu values", v->payload.buf.len); break;
    case TOMII_TAG_OBJECT: snprintf(text, cap, "an object of type id 0x%08x", (unsigned)v->elem); break;
    default: snprintf(text, cap, "a %s", tomii_tag_name(v->tag)); break;
    }
}

TOMII_HELPER bool tomii_mismatch(const TomiiCallCtx *ctx, const TomiiSignature *sig, size_t index, const char *expected,
                                 const TomiiValue *found) {
    char text[96];
    tomii_describe(found, text, sizeof text);
    tomii_fail(ctx, "kernel %s, argument %zu (%s): expected %s, found %s", sig->kernel, index, sig->params[index],
               expected, text);
    return false;
}

TOMII_HELPER bool tomii_check_count(const TomiiCallCtx *ctx, const TomiiSignature *sig, size_t nargs) {
    if (nargs == sig->count) {
        return true;
    }
    tomii_fail(ctx, "kernel %s takes %zu argument(s) (%s), got %zu", sig->kernel, sig->count, sig->listed, nargs);
    return false;
}

TOMII_HELPER bool tomii_is_signed(uint32_t tag) {
    return tag == TOMII_TAG_I8 || tag == TOMII_TAG_I16 || tag == TOMII_TAG_I32 || tag == TOMII_TAG_I64 ||
           tag == TOMII_TAG_ISIZE;
}

TOMII_HELPER bool tomii_is_unsigned(uint32_t tag) {
    return tag == TOMII_TAG_U8 || tag == TOMII_TAG_U16 || tag == TOMII_TAG_U32 || tag == TOMII_TAG_U64 ||
           tag == TOMII_TAG_USIZE;
}

TOMII_HELPER bool tomii_signed(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                               int64_t low, int64_t high, const char *expected, int64_t *out) {
    const TomiiValue *v = &args[i];
    if (tomii_is_signed(v->tag) && v->payload.i >= low && v->payload.i <= high) {
        *out = v->payload.i;
        return true;
    }
    if (tomii_is_unsigned(v->tag) && v->payload.u <= (uint64_t)high) {
        *out = (int64_t)v->payload.u;
        return true;
    }
    return tomii_mismatch(ctx, sig, i, expected, v);
}

TOMII_HELPER bool tomii_unsigned(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                                 uint64_t high, const char *expected, uint64_t *out) {
    const TomiiValue *v = &args[i];
    if (tomii_is_unsigned(v->tag) && v->payload.u <= high) {
        *out = v->payload.u;
        return true;
    }
    if (tomii_is_signed(v->tag) && v->payload.i >= 0 && (uint64_t)v->payload.i <= high) {
        *out = (uint64_t)v->payload.i;
        return true;
    }
    return tomii_mismatch(ctx, sig, i, expected, v);
}

/* Any number: graph literals such as 2 are integers. */
TOMII_HELPER bool tomii_real(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                             const char *expected, double *out) {
    const TomiiValue *v = &args[i];
    switch (v->tag) {
    case TOMII_TAG_F64: *out = v->payload.f64; return true;
    case TOMII_TAG_F32: *out = v->payload.f32; return true;
    default:
        if (tomii_is_signed(v->tag)) {
            *out = (double)v->payload.i;
            return true;
        }
        if (tomii_is_unsigned(v->tag)) {
            *out = (double)v->payload.u;
            return true;
        }
        return tomii_mismatch(ctx, sig, i, expected, v);
    }
}

TOMII_HELPER bool tomii_bool(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                             const char *expected, bool *out) {
    if (args[i].tag != TOMII_TAG_BOOL) {
        return tomii_mismatch(ctx, sig, i, expected, &args[i]);
    }
    *out = args[i].payload.b;
    return true;
}

TOMII_HELPER bool tomii_complex(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                                const char *expected, double out[2]) {
    const TomiiValue *v = &args[i];
    if (v->tag == TOMII_TAG_C64) {
        out[0] = v->payload.c64[0];
        out[1] = v->payload.c64[1];
        return true;
    }
    if (v->tag == TOMII_TAG_C32) {
        out[0] = v->payload.c32[0];
        out[1] = v->payload.c32[1];
        return true;
    }
    return tomii_mismatch(ctx, sig, i, expected, v);
}

/* A NUL-terminated copy of a string argument (the ABI's strings are not terminated); free it. */
TOMII_HELPER bool tomii_string(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                               char **out) {
    const TomiiValue *v = &args[i];
    if (v->tag != TOMII_TAG_STR) {
        return tomii_mismatch(ctx, sig, i, "a string", v);
    }
    *out = malloc(v->payload.buf.len + 1);
    if (*out == NULL) {
        tomii_fail(ctx, "kernel %s, argument %zu (%s): out of memory", sig->kernel, i, sig->params[i]);
        return false;
    }
    if (v->payload.buf.len > 0) {
        memcpy(*out, v->payload.buf.data, v->payload.buf.len);
    }
    (*out)[v->payload.buf.len] = '\0';
    return true;
}

/* The element tag of a `void *NAME: array` parameter: an array of any element type. */
#define TOMII_ANY_ELEMENT UINT32_MAX

TOMII_HELPER bool tomii_array(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                              uint32_t elem, const char *expected, const void **data, size_t *len) {
    if (args[i].tag != TOMII_TAG_ARRAY || (elem != TOMII_ANY_ELEMENT && args[i].elem != elem)) {
        return tomii_mismatch(ctx, sig, i, expected, &args[i]);
    }
    *data = args[i].payload.buf.data;
    *len = args[i].payload.buf.len;
    return true;
}

/* Whether `v` is a handle a parameter of `type_id` takes: one of that type or a `void *` one (Tomii
 * 1.2's handles were untyped); with `any` (a `void *` parameter), a handle of any type. */
TOMII_HELPER bool tomii_is_handle(const TomiiValue *v, bool any, uint32_t type_id) {
    return v->tag == TOMII_TAG_OBJECT && v->payload.buf.data != NULL &&
           (any || v->elem == type_id || v->elem == TOMII_VOID_HANDLE);
}

TOMII_HELPER bool tomii_object(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                               bool any, uint32_t type_id, const char *expected, const void **out) {
    if (!tomii_is_handle(&args[i], any, type_id)) {
        return tomii_mismatch(ctx, sig, i, expected, &args[i]);
    }
    *out = args[i].payload.buf.data;
    return true;
}

/* The trailing results of a variadic kernel as the pointer array of `void **items, size_t count`:
 * each must be a handle. The array is the calling thread's, grown when a call needs more, so a call
 * allocates only the first time a thread sees that many items; it is valid for the call. */
TOMII_HELPER bool tomii_handles(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                                bool any, uint32_t type_id, const char *expected, void ***out, size_t *count) {
    static _Thread_local void **pointers = NULL;
    static _Thread_local size_t capacity = 0;
    if (args[i].tag != TOMII_TAG_LIST) {
        return tomii_mismatch(ctx, sig, i, "the trailing results of a variadic kernel", &args[i]);
    }
    const TomiiValue *items = args[i].payload.buf.data;
    size_t n = args[i].payload.buf.len;
    if (n > capacity) {
        size_t wanted = n < 16 ? 16 : n;
        void **grown = realloc(pointers, wanted * sizeof *grown);
        if (grown == NULL) {
            tomii_fail(ctx, "kernel %s, argument %zu (%s): out of memory", sig->kernel, i, sig->params[i]);
            return false;
        }
        pointers = grown;
        capacity = wanted;
    }
    for (size_t k = 0; k < n; k++) {
        if (!tomii_is_handle(&items[k], any, type_id)) {
            char text[96];
            tomii_describe(&items[k], text, sizeof text);
            tomii_fail(ctx, "kernel %s, argument %zu (%s), item %zu: expected %s, found %s", sig->kernel, i,
                       sig->params[i], k, expected, text);
            return false;
        }
        pointers[k] = items[k].payload.buf.data;
    }
    *out = pointers;
    *count = n;
    return true;
}

/*
 * Tomii 1.2's `NAME: array` and `NAME: mut_array` arrays are read under a read lock and changed in
 * place under a write lock, as 1.2 did: the locks of this library are a fixed table of stripes
 * chosen by the array's address, taken in stripe order (each stripe once, for writing if any array
 * on it is written), so two calls never deadlock and a reader never sees half a write.
 */
#define TOMII_STRIPES 64

static __attribute__((unused)) pthread_rwlock_t tomii_stripes[TOMII_STRIPES] = {
    [0 ... TOMII_STRIPES - 1] = PTHREAD_RWLOCK_INITIALIZER,
};

typedef struct {
    const void *data;
    bool write;
    /* Set by tomii_lock_all: the stripe, and whether this entry holds its lock. */
    unsigned stripe;
    bool held;
} TomiiLock;

TOMII_HELPER void tomii_lock_all(TomiiLock *locks, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t address = (uint64_t)(uintptr_t)locks[i].data;
        locks[i].stripe = (unsigned)((address * 0x9E3779B97F4A7C15ull) >> 58);
    }
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && locks[j - 1].stripe > locks[j].stripe; j--) {
            TomiiLock swapped = locks[j];
            locks[j] = locks[j - 1];
            locks[j - 1] = swapped;
        }
    }
    for (size_t i = 0; i < n;) {
        size_t end = i;
        bool write = false;
        while (end < n && locks[end].stripe == locks[i].stripe) {
            write = write || locks[end].write;
            locks[end++].held = false;
        }
        if (write) {
            pthread_rwlock_wrlock(&tomii_stripes[locks[i].stripe]);
        } else {
            pthread_rwlock_rdlock(&tomii_stripes[locks[i].stripe]);
        }
        locks[i].held = true;
        i = end;
    }
}

TOMII_HELPER void tomii_unlock_all(TomiiLock *locks, size_t n) {
    for (size_t i = n; i-- > 0;) {
        if (locks[i].held) {
            pthread_rwlock_unlock(&tomii_stripes[locks[i].stripe]);
        }
    }
}

TOMII_HELPER bool tomii_list(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                             const TomiiValue **items, size_t *count) {
    if (args[i].tag != TOMII_TAG_LIST) {
        return tomii_mismatch(ctx, sig, i, "a list (the trailing results of a variadic kernel)", &args[i]);
    }
    *items = args[i].payload.buf.data;
    *count = args[i].payload.buf.len;
    return true;
}
