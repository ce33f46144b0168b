/*
 * The streaming-pipeline transform bench: the kernels tomii.build exports from this header
 * (conventions: plugins/matrix-compute-c/README.md). Per frame, N items: ingest makes item i of
 * frame f, transform runs a fixed amount of floating-point work on it, aggregate takes the mean
 * of the N transformed items and emit passes it on as the frame's output.
 */

#ifndef PIPELINE_H
#define PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "tomii/kernel.h"

/* Item ctx->instance of frame ctx->frame for frames of `items` items:
 * (instance + 1) / items + (frame mod 16) / 64, in (0, 1.25). */
// @tomii_export
double pl_ingest(const TomiiCallCtx *ctx, size_t items);

/* The mean of sin(k x) for k = 1 .. iterations, summed in that order: about 8 ns an iteration. */
// @tomii_export
double pl_transform(const TomiiCallCtx *ctx, double x, size_t iterations);

/* The mean of the `count` transformed items, summed in instance order; fails on a value that
 * is not a double. */
// @tomii_export(variadic)
double pl_aggregate(const TomiiCallCtx *ctx, const TomiiValue *items, size_t count);

/* The frame's result: `mean`, unchanged. */
// @tomii_export
double pl_emit(const TomiiCallCtx *ctx, double mean);

#endif /* PIPELINE_H */
