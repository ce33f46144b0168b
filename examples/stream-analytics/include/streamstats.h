/*
 * Sensor stream analytics: the kernels tomii.build exports from this header (conventions:
 * plugins/matrix-compute-c/README.md). Per frame every sensor generates a window of readings
 * (sa_read), summarizes it (sa_stats), and, when its maximum is high (the condition sa_peak),
 * checks whether that maximum is a spike (sa_detect); groups of sensors are summarized
 * (sa_group), the frame's anomalies listed (sa_alert) and the frame reported (sa_report). A tally,
 * made once per run, counts the frames, the checks and the anomalies alert has seen; it is the
 * only value a kernel changes after it is made, and only with atomic additions.
 *
 * Layouts (arrays of doubles):
 *   stats:  [mean, variance, min, max] of the window (variance over W, not W - 1)
 *   detect: [z, index, anomalous]: the maximum at `index` stands z above its neighbours, in units
 *           of the standard deviation of the window's first differences; anomalous is 1 or 0
 *   group:  [mean, variance, min, max] of the group's G windows together, then per member
 *           [status, z, index]: status -1 not checked (detect skipped, z and index NaN and -1),
 *           0 checked and normal, 1 anomalous
 */

#ifndef STREAMSTATS_H
#define STREAMSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "tomii/kernel.h"

/* The run's anomaly tally (frames, windows checked, anomalies), shared by every frame. */
typedef struct sa_tally sa_tally;

/* A zeroed tally. */
// @tomii_export(free=sa_tally_destroy)
sa_tally *sa_tally_new(const TomiiCallCtx *ctx);

/* Frees a tally made by sa_tally_new. */
void sa_tally_destroy(sa_tally *tally);

/* The `window` readings of sensor ctx->instance in frame ctx->frame (../README.md, "The
 * readings"): a sine of period `period` readings, uniform noise in [-noise, noise), and with
 * probability `rate` a spike of height `spike` on one reading. */
// @tomii_export(out_len=window, free=free)
double *sa_read(const TomiiCallCtx *ctx, uint64_t seed, size_t window, double period,
                double noise, double spike, double rate);

/* Mean, variance, min and max of a window. */
// @tomii_export(out_len=4, free=free)
double *sa_stats(const TomiiCallCtx *ctx, const double *window, size_t len);

/* The maximum of a stats array: the condition that decides whether detect runs. */
// @tomii_export
double sa_peak(const TomiiCallCtx *ctx, const double *stats, size_t len);

/* The spike check of a window's maximum: anomalous when its z exceeds `z_limit`. */
// @tomii_export(out_len=3, free=free)
double *sa_detect(const TomiiCallCtx *ctx, const double *window, size_t len, double z_limit);

/* The summary of a group of G sensors: `items` are the G stats then the G detect results
 * (NONE where detect was skipped), in sensor order. */
// @tomii_export(variadic, out_len=4 + 3 * (count / 2), free=free)
double *sa_group(const TomiiCallCtx *ctx, const TomiiValue *items, size_t count);

/* The frame's anomalies, one line "sensor index z" each, in sensor order, from every group's
 * summary (groups of `group` sensors); adds the frame's checks and anomalies to the tally. */
// @tomii_export(variadic, free=free)
char *sa_alert(const TomiiCallCtx *ctx, const sa_tally *tally, size_t group,
               const TomiiValue *items, size_t count);

/* The frame's report as text: a line per sensor ("sensor s mean variance min max status", the
 * status of its group's summary), per group
 * ("group g mean variance min max checked anomalies") and for the frame ("frame f mean variance
 * min max checked anomalies"); `items` are every sensor's stats, then every group's summary. */
// @tomii_export(variadic, free=free)
char *sa_report(const TomiiCallCtx *ctx, size_t group, const TomiiValue *items, size_t count);

/* The tally as text: "frames F\nchecked C\nanomalies A\n". */
// @tomii_export(free=free)
char *sa_totals(const TomiiCallCtx *ctx, const sa_tally *tally);

#endif /* STREAMSTATS_H */
