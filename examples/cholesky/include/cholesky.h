/*
 * Tiled Cholesky factorisation A = L Lᵀ: the kernels tomii.build exports from this header (each
 * `// @tomii_export` marks the declaration below it; plugins/matrix-compute-c/README.md has the
 * conventions). The tile kernels update tiles of a shared matrix in place; they never lock, and
 * rely on the graph's edges to order every two tasks that touch one tile (../README.md, "Tiles,
 * slots and why the writes never race"). Only a slot's first POTRF(0) and the post-nodes allocate.
 */

#ifndef CHOLESKY_H
#define CHOLESKY_H

#include <stddef.h>
#include <stdint.h>

#include "tomii/kernel.h"

/* The input matrix A (tiles × tiles tiles of tile × tile doubles) and one work copy per slot. */
typedef struct cholesky_matrix cholesky_matrix;

/* Makes the symmetric positive definite matrix A of order n = tiles · tile from `seed` (its
 * entries depend on n and seed only, not on the tiling) with room for `slots` frames in flight,
 * and sets OpenBLAS to one thread. Fails (through ctx) on a zero size or out of memory. */
// @tomii_export(free=cholesky_matrix_destroy)
cholesky_matrix *cholesky_matrix_new(const TomiiCallCtx *ctx, size_t tiles, size_t tile, uint64_t seed, size_t slots);

/* Frees a matrix made by cholesky_matrix_new, with its work copies. */
void cholesky_matrix_destroy(cholesky_matrix *m);

/* POTRF(k): factors diagonal tile (k, k) of the frame's copy, L_kk L_kkᵀ = A_kk. POTRF(0), the
 * frame's only root, first gives the slot its work copy if it has none yet. */
// @tomii_export
void cholesky_potrf(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k);

/* TRSM(k, i) for i = k + 1 + ctx->instance: tile (i, k) ← tile (i, k) · L_kk⁻ᵀ. */
// @tomii_export
void cholesky_trsm(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k);

/* SYRK(k, i) for i = k + 1 + ctx->instance: tile (i, i) ← tile (i, i) − L_ik L_ikᵀ. */
// @tomii_export
void cholesky_syrk(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k);

/* GEMM(k, i, j) for i = j + 1 + ctx->instance (j > k): tile (i, j) ← tile (i, j) − L_ik L_jkᵀ. */
// @tomii_export
void cholesky_gemm(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k, size_t j);

/* The frame's last task: the sum of every entry of the frame's L (of the sums each tile's last
 * writer, POTRF or TRSM, noted), and a note of which frame the slot's copy holds (for
 * cholesky_factor). */
// @tomii_export
double cholesky_digest(const TomiiCallCtx *ctx, const cholesky_matrix *m);

/* A as an n × n row-major array (n = tiles · tile, which the graph passes for the length). */
// @tomii_export(out_len=n * n, free=free)
double *cholesky_input(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t n);

/* A post-node: the L of the last frame (ctx->frame) as an n × n row-major array, zero above the
 * diagonal. Fails when no slot holds that frame's factor. */
// @tomii_export(out_len=n * n, free=free)
double *cholesky_factor(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t n);

#endif /* CHOLESKY_H */
