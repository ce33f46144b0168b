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

TOMII_HELPER bool tomii_array(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                              uint32_t elem, const char *expected, const void **data, size_t *len) {
    if (args[i].tag != TOMII_TAG_ARRAY || args[i].elem != elem) {
        return tomii_mismatch(ctx, sig, i, expected, &args[i]);
    }
    *data = args[i].payload.buf.data;
    *len = args[i].payload.buf.len;
    return true;
}

TOMII_HELPER bool tomii_object(const TomiiCallCtx *ctx, const TomiiSignature *sig, const TomiiValue *args, size_t i,
                               uint32_t type_id, const char *expected, const void **out) {
    if (args[i].tag != TOMII_TAG_OBJECT || args[i].elem != type_id || args[i].payload.buf.data == NULL) {
        return tomii_mismatch(ctx, sig, i, expected, &args[i]);
    }
    *out = args[i].payload.buf.data;
    return true;
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
