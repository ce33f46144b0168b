/*
 * The tiled Cholesky kernels (declared, and exported, in ../include/cholesky.h), on OpenBLAS's
 * CBLAS and LAPACKE. The matrix keeps its lower tiles only, each tile × tile doubles
 * column-major and contiguous; a slot's work copy has the same layout. A tile kernel writes one
 * tile of its frame's copy and reads tiles the graph has already finished; it must never take a
 * lock or touch another slot's copy (../README.md explains why no two writers ever meet).
 */

#include <cblas.h>
#include <lapacke.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cholesky.h"

typedef struct {
    double *tiles;  /* the frame's work copy; NULL until the slot's first POTRF(0) */
    double *sums;   /* per tile, the sum of its entries of L, by the tile's last writer */
    uint64_t frame; /* the frame whose factor `tiles` holds, once `digested` */
    int digested;
} cholesky_slot;

struct cholesky_matrix {
    size_t tiles;        /* tiles per side */
    size_t tile;         /* order of a tile */
    size_t n;            /* tiles · tile */
    size_t tile_len;     /* tile · tile */
    size_t lower;        /* tiles of the lower triangle, diagonal included */
    double *input;       /* A, in the tile layout */
    size_t slots;        /* entries of `slot` */
    cholesky_slot *slot; /* one work copy per slot, indexed by ctx->slot */
};

static void fail(const TomiiCallCtx *ctx, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(ctx->err.ptr, ctx->err.cap, format, args);
    va_end(args);
}

/* Tile (i, j), i >= j, of a copy in the tile layout. */
static double *tile_at(const cholesky_matrix *m, double *copy, size_t i, size_t j) {
    return copy + (i * (i + 1) / 2 + j) * m->tile_len;
}

/* A_rc, symmetric: a uniform number in [-1, 1) from (seed, max(r, c), min(r, c)) off the
 * diagonal, n plus one in [0, 1) on it, so that A is diagonally dominant, hence SPD. */
static double entry(uint64_t seed, size_t n, size_t r, size_t c) {
    uint64_t hi = r > c ? r : c, lo = r > c ? c : r;
    uint64_t z = seed + (hi * (uint64_t)n + lo + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double unit = (double)(z >> 11) * 0x1.0p-53;
    return r == c ? (double)n + unit : 2.0 * unit - 1.0;
}

static double *alloc_doubles(size_t count) {
    size_t bytes = (count * sizeof(double) + 63) / 64 * 64;
    return aligned_alloc(64, bytes > 0 ? bytes : 64);
}

cholesky_matrix *cholesky_matrix_new(const TomiiCallCtx *ctx, size_t tiles, size_t tile, uint64_t seed, size_t slots) {
    if (tiles == 0 || tile == 0 || slots == 0) {
        fail(ctx, "cholesky_matrix_new: tiles, tile and slots must be positive (got %zu, %zu, %zu)", tiles, tile, slots);
        return NULL;
    }
    if (tiles > 4096 || tile > 4096 || slots > 4096) {
        fail(ctx, "cholesky_matrix_new: at most 4096 tiles per side, a tile of 4096 and 4096 slots (got %zu, %zu, %zu)", tiles, tile, slots);
        return NULL;
    }
    openblas_set_num_threads(1);
    cholesky_matrix *m = calloc(1, sizeof *m);
    if (m == NULL) {
        fail(ctx, "cholesky_matrix_new: out of memory");
        return NULL;
    }
    m->tiles = tiles;
    m->tile = tile;
    m->n = tiles * tile;
    m->tile_len = tile * tile;
    m->lower = tiles * (tiles + 1) / 2;
    m->slots = slots;
    m->input = alloc_doubles(m->lower * m->tile_len);
    m->slot = calloc(slots, sizeof *m->slot);
    if (m->input == NULL || m->slot == NULL) {
        cholesky_matrix_destroy(m);
        fail(ctx, "cholesky_matrix_new: out of memory for a matrix of order %zu", tiles * tile);
        return NULL;
    }
    for (size_t i = 0; i < tiles; i++) {
        for (size_t j = 0; j <= i; j++) {
            double *t = tile_at(m, m->input, i, j);
            for (size_t c = 0; c < tile; c++) {
                for (size_t r = 0; r < tile; r++) {
                    t[r + c * tile] = entry(seed, m->n, i * tile + r, j * tile + c);
                }
            }
        }
    }
    return m;
}

void cholesky_matrix_destroy(cholesky_matrix *m) {
    if (m == NULL) {
        return;
    }
    for (size_t s = 0; m->slot != NULL && s < m->slots; s++) {
        free(m->slot[s].tiles);
        free(m->slot[s].sums);
    }
    free(m->slot);
    free(m->input);
    free(m);
}

/* The frame's work copy, or NULL with the error set. */
static double *work_copy(const TomiiCallCtx *ctx, const cholesky_matrix *m, const char *kernel) {
    if (ctx->slot >= m->slots) {
        fail(ctx,
             "%s: the frame runs in slot %u, but the matrix has work copies for %zu slots; "
             "build the graph with cholesky_graph(slots=...) of at least the run's slots",
             kernel, (unsigned)ctx->slot, m->slots);
        return NULL;
    }
    double *copy = m->slot[ctx->slot].tiles;
    if (copy == NULL) {
        fail(ctx, "%s: slot %u has no work copy yet: POTRF(0) must be the frame's first task", kernel, (unsigned)ctx->slot);
    }
    return copy;
}

/* Tile (i, j) of the frame's copy, loaded from A when step k = 0 is its first writer. */
static double *own_tile(const cholesky_matrix *m, double *copy, size_t k, size_t i, size_t j) {
    double *t = tile_at(m, copy, i, j);
    if (k == 0) {
        memcpy(t, tile_at(m, m->input, i, j), m->tile_len * sizeof *t);
    }
    return t;
}

/* Checks 0 <= k < i < tiles for a kernel updating row i at step k. */
static int check_row(const TomiiCallCtx *ctx, const cholesky_matrix *m, const char *kernel, size_t k, size_t i) {
    if (k < i && i < m->tiles) {
        return 1;
    }
    fail(ctx, "%s: step k = %zu, tile row i = %zu (instance %u) is outside 0 <= k < i < %zu tiles",
         kernel, k, i, (unsigned)ctx->instance, m->tiles);
    return 0;
}

/* Notes the sum of tile (i, j)'s entries of L (the lower triangle of a diagonal tile) for the
 * digest: called by the tile's last writer, POTRF(j) or TRSM(j, i). Four partial sums, so that
 * the additions overlap. */
static void note_sum(const TomiiCallCtx *ctx, const cholesky_matrix *m, const double *t, size_t i, size_t j) {
    double part[4] = {0.0, 0.0, 0.0, 0.0};
    size_t tile = m->tile;
    for (size_t c = 0; c < tile; c++) {
        const double *column = t + c * tile;
        for (size_t r = i == j ? c : 0; r < tile; r++) {
            part[r % 4] += column[r];
        }
    }
    m->slot[ctx->slot].sums[i * (i + 1) / 2 + j] = (part[0] + part[1]) + (part[2] + part[3]);
}

void cholesky_potrf(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k) {
    if (k >= m->tiles) {
        fail(ctx, "cholesky_potrf: step k = %zu, but the matrix has %zu tiles per side", k, m->tiles);
        return;
    }
    if (k == 0 && ctx->slot < m->slots) {
        /* The frame's only root: nothing else of this frame runs yet, and the slot's previous
         * frame has completed, so this is the slot's one writer of its entry. */
        cholesky_slot *slot = &m->slot[ctx->slot];
        if (slot->tiles == NULL) {
            slot->tiles = alloc_doubles(m->lower * m->tile_len);
        }
        if (slot->sums == NULL) {
            slot->sums = alloc_doubles(m->lower);
        }
        if (slot->tiles == NULL || slot->sums == NULL) {
            fail(ctx, "cholesky_potrf: out of memory for slot %u's work copy", (unsigned)ctx->slot);
            return;
        }
        slot->digested = 0;
    }
    double *copy = work_copy(ctx, m, "cholesky_potrf");
    if (copy == NULL) {
        return;
    }
    double *a = own_tile(m, copy, k, k, k);
    int n = (int)m->tile;
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, a, n);
    if (info != 0) {
        fail(ctx, "cholesky_potrf: LAPACKE_dpotrf on tile (%zu, %zu) returned %d (%s)", k, k, (int)info,
             info > 0 ? "the matrix is not positive definite" : "an invalid argument");
        return;
    }
    note_sum(ctx, m, a, k, k);
}

void cholesky_trsm(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k) {
    size_t i = k + 1 + ctx->instance;
    double *copy = work_copy(ctx, m, "cholesky_trsm");
    if (copy == NULL || !check_row(ctx, m, "cholesky_trsm", k, i)) {
        return;
    }
    int n = (int)m->tile;
    double *b = own_tile(m, copy, k, i, k);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, n, n, 1.0,
                tile_at(m, copy, k, k), n, b, n);
    note_sum(ctx, m, b, i, k);
}

void cholesky_syrk(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k) {
    size_t i = k + 1 + ctx->instance;
    double *copy = work_copy(ctx, m, "cholesky_syrk");
    if (copy == NULL || !check_row(ctx, m, "cholesky_syrk", k, i)) {
        return;
    }
    int n = (int)m->tile;
    double *c = own_tile(m, copy, k, i, i);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, n, -1.0, tile_at(m, copy, i, k), n, 1.0, c, n);
}

void cholesky_gemm(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t k, size_t j) {
    size_t i = j + 1 + ctx->instance;
    double *copy = work_copy(ctx, m, "cholesky_gemm");
    if (copy == NULL || !check_row(ctx, m, "cholesky_gemm", k, j) || !check_row(ctx, m, "cholesky_gemm", j, i)) {
        return;
    }
    int n = (int)m->tile;
    double *c = own_tile(m, copy, k, i, j);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, n, n, n, -1.0, tile_at(m, copy, i, k), n,
                tile_at(m, copy, j, k), n, 1.0, c, n);
}

double cholesky_digest(const TomiiCallCtx *ctx, const cholesky_matrix *m) {
    if (work_copy(ctx, m, "cholesky_digest") == NULL) {
        return 0.0;
    }
    cholesky_slot *slot = &m->slot[ctx->slot];
    double sum = 0.0;
    for (size_t t = 0; t < m->lower; t++) {
        sum += slot->sums[t];
    }
    slot->frame = ctx->frame;
    slot->digested = 1;
    return sum;
}

/* `copy` (in the tile layout) as an n × n row-major array: both triangles from the lower one
 * when `symmetric`, else zero above the diagonal. */
static double *dense(const TomiiCallCtx *ctx, const cholesky_matrix *m, double *copy, size_t n, int symmetric,
                     const char *kernel) {
    if (n != m->n) {
        fail(ctx, "%s: n = %zu, but the matrix has order %zu (tiles · tile)", kernel, n, m->n);
        return NULL;
    }
    double *out = malloc(n * n * sizeof *out);
    if (out == NULL) {
        fail(ctx, "%s: out of memory for %zu × %zu doubles", kernel, n, n);
        return NULL;
    }
    for (size_t r = 0; r < n; r++) {
        for (size_t c = 0; c < n; c++) {
            size_t hi = r > c ? r : c, lo = r > c ? c : r;
            double v = tile_at(m, copy, hi / m->tile, lo / m->tile)[hi % m->tile + (lo % m->tile) * m->tile];
            out[r * n + c] = r >= c || symmetric ? v : 0.0;
        }
    }
    return out;
}

double *cholesky_input(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t n) {
    return dense(ctx, m, m->input, n, 1, "cholesky_input");
}

double *cholesky_factor(const TomiiCallCtx *ctx, const cholesky_matrix *m, size_t n) {
    for (size_t s = 0; s < m->slots; s++) {
        if (m->slot[s].digested && m->slot[s].frame == ctx->frame) {
            return dense(ctx, m, m->slot[s].tiles, n, 0, "cholesky_factor");
        }
    }
    fail(ctx, "cholesky_factor: no slot holds the factor of frame %llu (run at least one frame)",
         (unsigned long long)ctx->frame);
    return NULL;
}
