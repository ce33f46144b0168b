/*
 * The matrix-compute example in C: the kernels tomii.build exports from this header. Each
 * `// @tomii_export` marks the declaration below it; the conventions are in ../README.md. The
 * numbers are the Rust and Python versions' (plugins/matrix-compute/README.md defines them).
 */

#ifndef MATCOMP_H
#define MATCOMP_H

#include <complex.h>
#include <stddef.h>

#include "tomii/kernel.h"

/* A planned forward DFT of one length; opaque to the graph, shared by every compute_fft call. */
typedef struct fft_plan fft_plan;

/* Plans the `len`-point forward DFT, unnormalised: X[k] = sum_j x[j] e^(-2 pi i jk/len). */
// @tomii_export(free=fft_plan_destroy)
fft_plan *fft_planner(size_t len);

/* Frees a plan made by fft_planner. */
void fft_plan_destroy(fft_plan *plan);

/* The deterministic test vector of the calling instance (ctx->instance): `len` complex numbers
 * from an integer hash. */
// @tomii_export(out_len=len, free=free)
float complex *generate_vector(const TomiiCallCtx *ctx, size_t len);

/* The spectrum of `v`; fails (through ctx) when `v` does not have the planned length. */
// @tomii_export(out_len=len, free=free)
float complex *compute_fft(const TomiiCallCtx *ctx, const fft_plan *plan, const float complex *v, size_t len);

/* The outer product v vᴴ as a len × len row-major matrix: M[r][c] = v[r] conj(v[c]). */
// @tomii_export(out_len=len * len, free=free)
float complex *vec_to_mat(const float complex *v, size_t len);

/* Writes every array of `arrays` (each an array of float complex), in order, to `path` as
 * little-endian (re, im) float pairs; returns the sum of |re| + |im| over all elements. */
// @tomii_export(variadic)
double write_to_file(const TomiiCallCtx *ctx, const char *path, const TomiiValue *arrays, size_t count);

#endif /* MATCOMP_H */
