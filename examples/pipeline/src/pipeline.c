#include "pipeline.h"

#include <math.h>
#include <stdio.h>

double pl_ingest(const TomiiCallCtx *ctx, size_t items) {
    return (double)(ctx->instance + 1) / (double)items + (double)(ctx->frame % 16) / 64.0;
}

double pl_transform(const TomiiCallCtx *ctx, double x, size_t iterations) {
    (void)ctx;
    double sum = 0.0;
    for (size_t k = 1; k <= iterations; k++) {
        sum += sin((double)k * x);
    }
    return iterations ? sum / (double)iterations : 0.0;
}

double pl_aggregate(const TomiiCallCtx *ctx, const TomiiValue *items, size_t count) {
    double sum = 0.0;
    for (size_t i = 0; i < count; i++) {
        if (items[i].tag != TOMII_TAG_F64) {
            snprintf(ctx->err.ptr, ctx->err.cap, "%s: item %zu is not a double (tag %u)", ctx->node, i,
                     (unsigned)items[i].tag);
            return NAN;
        }
        sum += items[i].payload.f64;
    }
    return count ? sum / (double)count : 0.0;
}

double pl_emit(const TomiiCallCtx *ctx, double mean) {
    (void)ctx;
    return mean;
}
