/*
 * The stream-analytics kernels (declared, and exported, in include/streamstats.h). Every kernel
 * but sa_alert only reads what it is given and returns a new array or text; sa_alert adds to the
 * run's tally with atomic additions, since alerts of frames in different slots may run at once.
 */

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streamstats.h"

struct sa_tally {
    _Atomic uint64_t frames, checked, anomalies;
};

static const uint64_t GOLDEN = 0x9E3779B97F4A7C15ull;
static const double TWO_PI = 6.283185307179586;

/* Output n (n = 0, 1, ...) of the splitmix64 sequence whose state starts at `state`. */
static uint64_t draw(uint64_t state, uint64_t n) {
    uint64_t z = state + (n + 1) * GOLDEN;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A draw as a double in [0, 1): its top 53 bits. */
static double unit(uint64_t x) {
    return (double)(x >> 11) * 0x1p-53;
}

static void fail(const TomiiCallCtx *ctx, const char *message) {
    snprintf(ctx->err.ptr, ctx->err.cap, "%s[%u]: %s", ctx->node, ctx->instance, message);
}

/* A double array item of `len` elements, or NULL. */
static const double *doubles(const TomiiValue *item, size_t len) {
    if (item->tag != TOMII_TAG_ARRAY || item->elem != TOMII_TAG_F64 || item->payload.buf.len != len) {
        return NULL;
    }
    return item->payload.buf.data;
}

sa_tally *sa_tally_new(const TomiiCallCtx *ctx) {
    sa_tally *tally = calloc(1, sizeof *tally);
    if (tally == NULL) {
        fail(ctx, "out of memory");
    }
    return tally;
}

void sa_tally_destroy(sa_tally *tally) {
    free(tally);
}

double *sa_read(const TomiiCallCtx *ctx, uint64_t seed, size_t window, double period,
                double noise, double spike, double rate) {
    if (window < 3 || !(period > 0)) {
        fail(ctx, "the window needs at least 3 readings and a positive period");
        return NULL;
    }
    double *x = malloc(window * sizeof *x);
    if (x == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    uint64_t sensor = ctx->instance;
    uint64_t key = draw(draw(seed, ctx->frame), sensor);
    double phase = TWO_PI * unit(draw(~seed, sensor));
    double start = (double)ctx->frame * (double)window;
    for (size_t k = 0; k < window; k++) {
        double signal = sin(TWO_PI * (start + (double)k) / period + phase);
        x[k] = signal + noise * (2.0 * unit(draw(key, 2 + k)) - 1.0);
    }
    if (unit(draw(key, 0)) < rate) {
        x[draw(key, 1) % window] += spike;
    }
    return x;
}

double *sa_stats(const TomiiCallCtx *ctx, const double *window, size_t len) {
    double *s = malloc(4 * sizeof *s);
    if (s == NULL || len == 0) {
        free(s);
        fail(ctx, len == 0 ? "an empty window" : "out of memory");
        return NULL;
    }
    double sum = 0, lo = window[0], hi = window[0];
    for (size_t k = 0; k < len; k++) {
        sum += window[k];
        lo = window[k] < lo ? window[k] : lo;
        hi = window[k] > hi ? window[k] : hi;
    }
    double mean = sum / (double)len, squares = 0;
    for (size_t k = 0; k < len; k++) {
        squares += (window[k] - mean) * (window[k] - mean);
    }
    s[0] = mean;
    s[1] = squares / (double)len;
    s[2] = lo;
    s[3] = hi;
    return s;
}

double sa_peak(const TomiiCallCtx *ctx, const double *stats, size_t len) {
    if (len != 4) {
        fail(ctx, "sa_peak reads a stats array of 4 values");
        return NAN;
    }
    return stats[3];
}

double *sa_detect(const TomiiCallCtx *ctx, const double *window, size_t len, double z_limit) {
    if (len < 3) {
        fail(ctx, "the window needs at least 3 readings");
        return NULL;
    }
    size_t at = 0;
    for (size_t k = 1; k < len; k++) {
        at = window[k] > window[at] ? k : at;
    }
    double neighbours = at == 0         ? window[1]
                        : at == len - 1 ? window[len - 2]
                                        : (window[at - 1] + window[at + 1]) / 2;
    double mean = (window[len - 1] - window[0]) / (double)(len - 1), squares = 0;
    for (size_t k = 0; k + 1 < len; k++) {
        double d = window[k + 1] - window[k] - mean;
        squares += d * d;
    }
    double spread = sqrt(squares / (double)(len - 1));
    double *d = malloc(3 * sizeof *d);
    if (d == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    d[0] = (window[at] - neighbours) / spread;
    d[1] = (double)at;
    d[2] = d[0] > z_limit ? 1.0 : 0.0;
    return d;
}

double *sa_group(const TomiiCallCtx *ctx, const TomiiValue *items, size_t count) {
    size_t members = count / 2;
    if (count == 0 || count % 2 != 0) {
        fail(ctx, "sa_group reads G stats and G detect results");
        return NULL;
    }
    double *g = malloc((4 + 3 * members) * sizeof *g);
    if (g == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    double means = 0, moments = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t j = 0; j < members; j++) {
        const double *s = doubles(&items[j], 4);
        const TomiiValue *found = &items[members + j];
        const double *d = doubles(found, 3);
        if (s == NULL || (d == NULL && found->tag != TOMII_TAG_NONE)) {
            free(g);
            fail(ctx, "an item is not a stats array (4 doubles) or a detect result (3 or NONE)");
            return NULL;
        }
        means += s[0];
        moments += s[1] + s[0] * s[0];
        lo = s[2] < lo ? s[2] : lo;
        hi = s[3] > hi ? s[3] : hi;
        double *member = &g[4 + 3 * j];
        member[0] = d == NULL ? -1.0 : d[2];
        member[1] = d == NULL ? NAN : d[0];
        member[2] = d == NULL ? -1.0 : d[1];
    }
    g[0] = means / (double)members;
    g[1] = moments / (double)members - g[0] * g[0];
    g[2] = lo;
    g[3] = hi;
    return g;
}

/* A growing text buffer; `ok` turns false when memory runs out. */
typedef struct {
    char *text;
    size_t len, cap;
    bool ok;
} text_buf;

static void put(text_buf *t, const char *line) {
    size_t n = strlen(line);
    if (t->ok && t->len + n + 1 > t->cap) {
        size_t cap = 2 * t->cap + n + 1;
        char *text = realloc(t->text, cap);
        t->ok = text != NULL;
        if (t->ok) {
            t->text = text;
            t->cap = cap;
        }
    }
    if (t->ok) {
        memcpy(t->text + t->len, line, n + 1);
        t->len += n;
    }
}

static char *finish(const TomiiCallCtx *ctx, text_buf *t) {
    if (!t->ok) {
        free(t->text);
        fail(ctx, "out of memory");
        return NULL;
    }
    return t->text;
}

/* The group summaries among `items`, checked; `group` members each. */
static bool groups_ok(const TomiiValue *items, size_t count, size_t group) {
    for (size_t b = 0; b < count; b++) {
        if (doubles(&items[b], 4 + 3 * group) == NULL) {
            return false;
        }
    }
    return true;
}

char *sa_alert(const TomiiCallCtx *ctx, const sa_tally *tally, size_t group,
               const TomiiValue *items, size_t count) {
    if (group == 0 || !groups_ok(items, count, group)) {
        fail(ctx, "sa_alert reads group summaries of `group` members");
        return NULL;
    }
    text_buf t = {.text = calloc(1, 1), .cap = 1, .ok = true};
    t.ok = t.text != NULL;
    uint64_t checked = 0, anomalies = 0;
    char line[96];
    for (size_t b = 0; b < count; b++) {
        const double *g = items[b].payload.buf.data;
        for (size_t j = 0; j < group; j++) {
            const double *member = &g[4 + 3 * j];
            checked += member[0] >= 0;
            if (member[0] == 1.0) {
                anomalies++;
                snprintf(line, sizeof line, "%zu %.0f %.17g\n", b * group + j, member[2], member[1]);
                put(&t, line);
            }
        }
    }
    /* The tally is the run's one shared, changing value: only atomic additions touch it. */
    sa_tally *shared = (sa_tally *)tally;
    atomic_fetch_add(&shared->frames, 1);
    atomic_fetch_add(&shared->checked, checked);
    atomic_fetch_add(&shared->anomalies, anomalies);
    return finish(ctx, &t);
}

char *sa_report(const TomiiCallCtx *ctx, size_t group, const TomiiValue *items, size_t count) {
    size_t groups = group == 0 ? 0 : count / (group + 1), sensors = groups * group;
    bool ok = groups > 0 && groups * (group + 1) == count;
    for (size_t s = 0; ok && s < sensors; s++) {
        ok = doubles(&items[s], 4) != NULL;
    }
    if (!ok || !groups_ok(items + sensors, groups, group)) {
        fail(ctx, "sa_report reads every sensor's stats, then every group's summary");
        return NULL;
    }
    text_buf t = {.text = calloc(1, 1), .cap = 1, .ok = true};
    t.ok = t.text != NULL;
    char line[256];
    for (size_t s = 0; s < sensors; s++) {
        const double *v = items[s].payload.buf.data;
        const double *g = items[sensors + s / group].payload.buf.data;
        snprintf(line, sizeof line, "sensor %zu %.17g %.17g %.17g %.17g %.0f\n", s, v[0], v[1],
                 v[2], v[3], g[4 + 3 * (s % group)]);
        put(&t, line);
    }
    double means = 0, moments = 0, lo = INFINITY, hi = -INFINITY;
    size_t all_checked = 0, all_anomalies = 0;
    for (size_t b = 0; b < groups; b++) {
        const double *g = items[sensors + b].payload.buf.data;
        size_t checked = 0, anomalies = 0;
        for (size_t j = 0; j < group; j++) {
            checked += g[4 + 3 * j] >= 0;
            anomalies += g[4 + 3 * j] == 1.0;
        }
        snprintf(line, sizeof line, "group %zu %.17g %.17g %.17g %.17g %zu %zu\n", b, g[0], g[1],
                 g[2], g[3], checked, anomalies);
        put(&t, line);
        means += g[0];
        moments += g[1] + g[0] * g[0];
        lo = g[2] < lo ? g[2] : lo;
        hi = g[3] > hi ? g[3] : hi;
        all_checked += checked;
        all_anomalies += anomalies;
    }
    double mean = means / (double)groups;
    snprintf(line, sizeof line, "frame %llu %.17g %.17g %.17g %.17g %zu %zu\n",
             (unsigned long long)ctx->frame, mean, moments / (double)groups - mean * mean, lo, hi,
             all_checked, all_anomalies);
    put(&t, line);
    return finish(ctx, &t);
}

char *sa_totals(const TomiiCallCtx *ctx, const sa_tally *tally) {
    char *text = malloc(96);
    if (text == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    snprintf(text, 96, "frames %llu\nchecked %llu\nanomalies %llu\n",
             (unsigned long long)atomic_load(&tally->frames),
             (unsigned long long)atomic_load(&tally->checked),
             (unsigned long long)atomic_load(&tally->anomalies));
    return text;
}
