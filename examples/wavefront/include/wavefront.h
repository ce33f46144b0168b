/*
 * Smith-Waterman local alignment over a grid of B x B blocks: the kernels tomii.build exports
 * from this header (conventions: plugins/matrix-compute-c/README.md). A `wf_problem` holds the
 * two sequences and, per slot, the block borders of the DP table, which the block kernels update
 * in place. A block kernel writes only its own block's borders; the graph's edges order every
 * reader after its writers (../README.md, "Why the in-place writes cannot race").
 */

#ifndef WAVEFRONT_H
#define WAVEFRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tomii/kernel.h"

/* The problem and its per-slot DP borders; opaque to the graph. */
typedef struct wf_problem wf_problem;

/* Makes the problem of aligning `a` and `b` (letters, any alphabet) with blocks of `block` rows
 * and columns, scoring `match` (> 0), `mismatch` (<= 0) and a linear `gap` (> 0, subtracted), with
 * one set of borders for each of `slots` slots; with `keep_table`, each slot also keeps the whole
 * (n+1) x (m+1) table. Fails, through ctx, on an empty sequence or a bad parameter. */
// @tomii_export(free=wf_problem_destroy)
wf_problem *wf_problem_new(const TomiiCallCtx *ctx, const char *a, const char *b, size_t block,
                           int32_t match, int32_t mismatch, int32_t gap, size_t slots,
                           bool keep_table);

/* Frees a problem made by wf_problem_new. */
void wf_problem_destroy(wf_problem *problem);

/* Computes block (row_block, diag - row_block) of the calling frame's slot, where row_block =
 * first_row_block + ctx->instance: reads the bottom border of the block above and the right
 * border of the block to the left, writes its own bottom and right borders and its maximum. */
// @tomii_export
void wf_block(const TomiiCallCtx *ctx, const wf_problem *problem, size_t diag,
              size_t first_row_block);

/* The local alignment score of the calling frame: the maximum over every block's maximum. */
// @tomii_export
int64_t wf_score(const TomiiCallCtx *ctx, const wf_problem *problem);

/* The table's last row, H[n][0..m] (`len` must be m + 1). */
// @tomii_export(out_len=len, free=free)
int32_t *wf_last_row(const TomiiCallCtx *ctx, const wf_problem *problem, size_t len);

/* The table's last column, H[0..n][m] (`len` must be n + 1). */
// @tomii_export(out_len=len, free=free)
int32_t *wf_last_col(const TomiiCallCtx *ctx, const wf_problem *problem, size_t len);

/* The whole table, row-major (`len` must be (n + 1) (m + 1)); only for a problem made with
 * keep_table. */
// @tomii_export(out_len=len, free=free)
int32_t *wf_table(const TomiiCallCtx *ctx, const wf_problem *problem, size_t len);

#endif /* WAVEFRONT_H */
