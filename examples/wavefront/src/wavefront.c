/*
 * The Smith-Waterman kernels (declared, and exported, in include/wavefront.h). H[i][j], the best
 * score of a local alignment ending at a[i-1] and b[j-1], is max(0, H[i-1][j-1] + s(a, b),
 * H[i-1][j] - gap, H[i][j-1] - gap), with row 0 and column 0 zero. A block is computed row by row
 * from the borders of its neighbours; only the borders (and, if asked, the whole table) are kept.
 * Nothing here locks: the graph orders every read of a border after the block that wrote it.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wavefront.h"

/* What one slot's frame writes. rows[r] is table row min(r B, n), the bottom border of block row
 * r - 1 (rows[0] is row 0); cols[c] is table column min(c B, m). */
typedef struct {
    int32_t *rows;  /* (nbi + 1) x (m + 1) */
    int32_t *cols;  /* (nbj + 1) x (n + 1) */
    int32_t *maxes; /* nbi x nbj: each block's maximum */
    int32_t *table; /* (n + 1) x (m + 1), or NULL */
} wf_slot;

struct wf_problem {
    uint8_t *a, *b;
    size_t n, m, block, nbi, nbj, slots;
    int32_t match, mismatch, gap;
    wf_slot *slot;
};

static void fail(const TomiiCallCtx *ctx, const char *message) {
    snprintf(ctx->err.ptr, ctx->err.cap, "%s: %s", ctx->node, message);
}

static bool slot_alloc(wf_slot *slot, const wf_problem *p, bool keep_table) {
    slot->rows = calloc((p->nbi + 1) * (p->m + 1), sizeof(int32_t));
    slot->cols = calloc((p->nbj + 1) * (p->n + 1), sizeof(int32_t));
    slot->maxes = calloc(p->nbi * p->nbj, sizeof(int32_t));
    slot->table = keep_table ? calloc((p->n + 1) * (p->m + 1), sizeof(int32_t)) : NULL;
    return slot->rows != NULL && slot->cols != NULL && slot->maxes != NULL &&
           (slot->table != NULL || !keep_table);
}

static const char *check_params(const char *a, const char *b, size_t block, int32_t match,
                                int32_t mismatch, int32_t gap, size_t slots) {
    if (a[0] == '\0' || b[0] == '\0') {
        return "both sequences must have at least one letter";
    }
    if (strlen(a) > (1u << 24) || strlen(b) > (1u << 24)) {
        return "a sequence is longer than 2^24 letters";
    }
    if (block == 0 || block > 65536) {
        return "the block size must be 1..65536";
    }
    if (match <= 0 || match > 100 || mismatch > 0 || mismatch < -100 || gap <= 0 || gap > 100) {
        return "the scores must be 0 < match <= 100, -100 <= mismatch <= 0, 0 < gap <= 100";
    }
    if (slots == 0 || slots > 1024) {
        return "the slot count must be 1..1024";
    }
    return NULL;
}

wf_problem *wf_problem_new(const TomiiCallCtx *ctx, const char *a, const char *b, size_t block,
                           int32_t match, int32_t mismatch, int32_t gap, size_t slots,
                           bool keep_table) {
    const char *wrong = check_params(a, b, block, match, mismatch, gap, slots);
    if (wrong != NULL) {
        fail(ctx, wrong);
        return NULL;
    }
    wf_problem *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return NULL;
    }
    p->n = strlen(a);
    p->m = strlen(b);
    p->block = block;
    p->nbi = (p->n + block - 1) / block;
    p->nbj = (p->m + block - 1) / block;
    p->slots = slots;
    p->match = match;
    p->mismatch = mismatch;
    p->gap = gap;
    p->a = (uint8_t *)strdup(a);
    p->b = (uint8_t *)strdup(b);
    p->slot = calloc(slots, sizeof *p->slot);
    bool ok = p->a != NULL && p->b != NULL && p->slot != NULL;
    for (size_t s = 0; ok && s < slots; s++) {
        ok = slot_alloc(&p->slot[s], p, keep_table);
    }
    if (!ok) {
        wf_problem_destroy(p);
        fail(ctx, "out of memory");
        return NULL;
    }
    return p;
}

void wf_problem_destroy(wf_problem *p) {
    if (p == NULL) {
        return;
    }
    for (size_t s = 0; p->slot != NULL && s < p->slots; s++) {
        free(p->slot[s].rows);
        free(p->slot[s].cols);
        free(p->slot[s].maxes);
        free(p->slot[s].table);
    }
    free(p->slot);
    free(p->a);
    free(p->b);
    free(p);
}

/* The calling frame's slot, or NULL (failing the call) when the problem has too few. */
static const wf_slot *frame_slot(const TomiiCallCtx *ctx, const wf_problem *p) {
    if (ctx->slot >= p->slots) {
        char message[160];
        snprintf(message, sizeof message,
                 "the frame runs in slot %u but the problem has borders for %zu slot(s): give "
                 "wf_problem_new the run's slot count",
                 ctx->slot, p->slots);
        fail(ctx, message);
        return NULL;
    }
    return &p->slot[ctx->slot];
}

static int32_t max3(int32_t x, int32_t y, int32_t z) {
    int32_t xy = x > y ? x : y;
    return xy > z ? xy : z;
}

/* Rows i0..i1 and columns j0..j1 (1-based, inclusive) of the table, from `top` (H[i0-1][j0-1..j1])
 * and column j0 - 1 of `left`; leaves the block's last row in `top`, writes its last column to
 * `right`; returns the block's maximum. `cur` has room for j1 - j0 + 2 cells. */
static int32_t sweep_block(const wf_problem *p, const wf_slot *s, size_t i0, size_t i1, size_t j0,
                           size_t j1, int32_t *top, int32_t *cur, const int32_t *left,
                           int32_t *right) {
    size_t width = j1 - j0 + 1;
    int32_t best = 0;
    for (size_t i = i0; i <= i1; i++) {
        uint8_t letter = p->a[i - 1];
        const uint8_t *b = p->b + (j0 - 1);
        cur[0] = left[i];
        for (size_t k = 1; k <= width; k++) {
            int32_t diagonal = top[k - 1] + (letter == b[k - 1] ? p->match : p->mismatch);
            int32_t h = max3(diagonal, top[k] - p->gap, cur[k - 1] - p->gap);
            h = h > 0 ? h : 0;
            cur[k] = h;
            best = h > best ? h : best;
        }
        right[i] = cur[width];
        if (s->table != NULL) {
            memcpy(s->table + i * (p->m + 1) + j0, cur + 1, width * sizeof(int32_t));
        }
        memcpy(top, cur, (width + 1) * sizeof(int32_t));
    }
    return best;
}

void wf_block(const TomiiCallCtx *ctx, const wf_problem *p, size_t diag, size_t first_row_block) {
    const wf_slot *s = frame_slot(ctx, p);
    if (s == NULL) {
        return;
    }
    size_t bi = first_row_block + ctx->instance;
    if (bi >= p->nbi || diag < bi || diag - bi >= p->nbj) {
        fail(ctx, "the block is outside the grid: diag and first_row_block do not match the problem");
        return;
    }
    size_t bj = diag - bi, B = p->block;
    size_t i0 = bi * B + 1, i1 = (bi + 1) * B < p->n ? (bi + 1) * B : p->n;
    size_t j0 = bj * B + 1, j1 = (bj + 1) * B < p->m ? (bj + 1) * B : p->m;
    size_t width = j1 - j0 + 1;
    int32_t *scratch = malloc(2 * (width + 1) * sizeof(int32_t));
    if (scratch == NULL) {
        fail(ctx, "out of memory");
        return;
    }
    int32_t *top = scratch, *cur = scratch + width + 1;
    /* The bottom border of the block above, from its corner (written by the block above-left). */
    memcpy(top, s->rows + bi * (p->m + 1) + (j0 - 1), (width + 1) * sizeof(int32_t));
    const int32_t *left = s->cols + bj * (p->n + 1);
    int32_t *right = s->cols + (bj + 1) * (p->n + 1);
    s->maxes[bi * p->nbj + bj] = sweep_block(p, s, i0, i1, j0, j1, top, cur, left, right);
    memcpy(s->rows + (bi + 1) * (p->m + 1) + j0, top + 1, width * sizeof(int32_t));
    free(scratch);
}

int64_t wf_score(const TomiiCallCtx *ctx, const wf_problem *p) {
    const wf_slot *s = frame_slot(ctx, p);
    if (s == NULL) {
        return 0;
    }
    int32_t best = 0;
    for (size_t k = 0; k < p->nbi * p->nbj; k++) {
        best = s->maxes[k] > best ? s->maxes[k] : best;
    }
    return best;
}

/* A copy of `len` cells from `from`, failing the call unless len is `expected`. */
static int32_t *copy_cells(const TomiiCallCtx *ctx, const int32_t *from, size_t len,
                           size_t expected, const char *what) {
    if (len != expected) {
        char message[160];
        snprintf(message, sizeof message, "len is %zu, but %s has %zu cells", len, what, expected);
        fail(ctx, message);
        return NULL;
    }
    int32_t *out = malloc(len * sizeof(int32_t));
    if (out == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    memcpy(out, from, len * sizeof(int32_t));
    return out;
}

int32_t *wf_last_row(const TomiiCallCtx *ctx, const wf_problem *p, size_t len) {
    const wf_slot *s = frame_slot(ctx, p);
    if (s == NULL) {
        return NULL;
    }
    return copy_cells(ctx, s->rows + p->nbi * (p->m + 1), len, p->m + 1, "the last row");
}

int32_t *wf_last_col(const TomiiCallCtx *ctx, const wf_problem *p, size_t len) {
    const wf_slot *s = frame_slot(ctx, p);
    if (s == NULL) {
        return NULL;
    }
    return copy_cells(ctx, s->cols + p->nbj * (p->n + 1), len, p->n + 1, "the last column");
}

int32_t *wf_table(const TomiiCallCtx *ctx, const wf_problem *p, size_t len) {
    const wf_slot *s = frame_slot(ctx, p);
    if (s == NULL) {
        return NULL;
    }
    if (s->table == NULL) {
        fail(ctx, "the problem keeps no table: make it with keep_table");
        return NULL;
    }
    return copy_cells(ctx, s->table, len, (p->n + 1) * (p->m + 1), "the table");
}
