/*
 * The matrix-compute kernels in C (declared, and exported, in include/matcomp.h). The DFT is the
 * direct O(n^2) sum over a table of twiddle factors, in double precision: any length works, and
 * the numbers stay within 1e-3 of the Rust (rustfft) and NumPy versions.
 */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcomp.h"

struct fft_plan {
    size_t len;
    double complex *twiddles; /* twiddles[k] = e^(-2 pi i k / len) */
};

fft_plan *fft_planner(size_t len) {
    fft_plan *plan = malloc(sizeof *plan);
    double complex *twiddles = malloc((len > 0 ? len : 1) * sizeof *twiddles);
    if (plan == NULL || twiddles == NULL) {
        free(plan);
        free(twiddles);
        return NULL;
    }
    const double pi = acos(-1.0);
    for (size_t k = 0; k < len; k++) {
        twiddles[k] = cexp(-2.0 * pi * I * (double)k / (double)len);
    }
    plan->len = len;
    plan->twiddles = twiddles;
    return plan;
}

void fft_plan_destroy(fft_plan *plan) {
    if (plan != NULL) {
        free(plan->twiddles);
        free(plan);
    }
}

/* One part of a sample: 16 bits of the hash as a multiple of 1/65536 in [-0.5, 0.5). */
static float part(uint32_t bits) {
    return (float)(bits & 0xffffu) / 65536.0f - 0.5f;
}

float complex *generate_vector(const TomiiCallCtx *ctx, size_t len) {
    float complex *v = malloc((len > 0 ? len : 1) * sizeof *v);
    if (v == NULL) {
        return NULL;
    }
    for (size_t k = 0; k < len; k++) {
        /* Only the low 32 bits of the position enter the hash, as in the Rust and NumPy versions. */
        uint32_t position = ctx->instance * 1000003u + (uint32_t)k;
        uint32_t hash = position * 2654435761u;
        hash ^= hash >> 16;
        v[k] = part(hash) + part(hash >> 16) * I;
    }
    return v;
}

float complex *compute_fft(const TomiiCallCtx *ctx, const fft_plan *plan, const float complex *v, size_t len) {
    if (len != plan->len) {
        snprintf(ctx->err.ptr, ctx->err.cap, "compute_fft: the vector has %zu elements, the plan %zu", len, plan->len);
        return NULL;
    }
    float complex *spectrum = malloc((len > 0 ? len : 1) * sizeof *spectrum);
    if (spectrum == NULL) {
        snprintf(ctx->err.ptr, ctx->err.cap, "compute_fft: out of memory");
        return NULL;
    }
    for (size_t k = 0; k < len; k++) {
        double complex sum = 0;
        for (size_t j = 0; j < len; j++) {
            sum += (double complex)v[j] * plan->twiddles[(j * k) % len];
        }
        spectrum[k] = (float complex)sum;
    }
    return spectrum;
}

float complex *vec_to_mat(const float complex *v, size_t len) {
    float complex *m = malloc((len > 0 ? len * len : 1) * sizeof *m);
    if (m == NULL) {
        return NULL;
    }
    for (size_t r = 0; r < len; r++) {
        for (size_t c = 0; c < len; c++) {
            m[r * len + c] = v[r] * conjf(v[c]);
        }
    }
    return m;
}

/* Writes `value` as 4 little-endian bytes, whatever the machine's byte order. */
static int put_float(FILE *file, float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    unsigned char bytes[4] = {bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff, bits >> 24};
    return fwrite(bytes, 1, sizeof bytes, file) == sizeof bytes;
}

double write_to_file(const TomiiCallCtx *ctx, const char *path, const TomiiValue *arrays, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (arrays[i].tag != TOMII_TAG_ARRAY || arrays[i].elem != TOMII_TAG_C32) {
            snprintf(ctx->err.ptr, ctx->err.cap, "write_to_file: item %zu is not an array of float complex", i);
            return 0.0;
        }
    }
    FILE *file = fopen(path, "wb");
    if (file == NULL) {
        snprintf(ctx->err.ptr, ctx->err.cap, "write_to_file: cannot write %s", path);
        return 0.0;
    }
    double checksum = 0.0;
    int written = 1;
    for (size_t i = 0; i < count; i++) {
        const float complex *data = arrays[i].payload.buf.data;
        for (size_t k = 0; k < arrays[i].payload.buf.len; k++) {
            written &= put_float(file, crealf(data[k])) & put_float(file, cimagf(data[k]));
            checksum += fabs((double)crealf(data[k])) + fabs((double)cimagf(data[k]));
        }
    }
    if (fclose(file) != 0 || !written) {
        snprintf(ctx->err.ptr, ctx->err.cap, "write_to_file: cannot write %s", path);
    }
    return checksum;
}
