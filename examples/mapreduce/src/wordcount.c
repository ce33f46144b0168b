/*
 * The word-count kernels (declared, and exported, in include/wordcount.h). A partition is an
 * open-addressing hash table (linear probing, at most half full) whose keys live in the table's
 * own byte arena, so a table never points into the corpus or into another table. Tables are
 * written only by the call that makes them; afterwards every kernel only reads them.
 */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wordcount.h"

struct mr_corpus {
    char *text;
    size_t size;
};

typedef struct {
    uint64_t hash;  /* FNV-1a 64 of the word; 0 marks an empty slot (a word hashing to 0 is 1) */
    uint64_t count;
    size_t offset;  /* of the word in the arena */
    size_t len;
} mr_entry;

typedef struct {
    mr_entry *slots;
    size_t cap, used;
    char *arena;
    size_t arena_len, arena_cap;
} mr_part;

struct mr_table {
    size_t parts;
    mr_part *part;
};

/* The type id tomii.build gives `mr_table *` handles: FNV-1a (32 bits) of the type name. */
static uint32_t type_id(const char *name) {
    uint32_t h = 2166136261u;
    for (; *name != '\0'; name++) {
        h = (h ^ (uint8_t)*name) * 16777619u;
    }
    return h;
}

static uint64_t word_hash(const char *word, size_t len) {
    uint64_t h = 14695981039346656037ull;
    for (size_t k = 0; k < len; k++) {
        h = (h ^ (uint8_t)word[k]) * 1099511628211ull;
    }
    return h == 0 ? 1 : h;
}

static void fail(const TomiiCallCtx *ctx, const char *message) {
    snprintf(ctx->err.ptr, ctx->err.cap, "%s[%u]: %s", ctx->node, ctx->instance, message);
}

mr_corpus *mr_corpus_load(const TomiiCallCtx *ctx, const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        char message[512];
        snprintf(message, sizeof message, "cannot open the corpus %s", path);
        fail(ctx, message);
        return NULL;
    }
    mr_corpus *corpus = calloc(1, sizeof *corpus);
    bool ok = corpus != NULL && fseek(file, 0, SEEK_END) == 0;
    long size = ok ? ftell(file) : -1;
    ok = ok && size >= 0 && fseek(file, 0, SEEK_SET) == 0;
    if (ok) {
        corpus->size = (size_t)size;
        corpus->text = malloc(corpus->size + 1);
        ok = corpus->text != NULL && fread(corpus->text, 1, corpus->size, file) == corpus->size;
    }
    fclose(file);
    if (!ok) {
        mr_corpus_destroy(corpus);
        fail(ctx, "cannot read the corpus");
        return NULL;
    }
    return corpus;
}

void mr_corpus_destroy(mr_corpus *corpus) {
    if (corpus != NULL) {
        free(corpus->text);
        free(corpus);
    }
}

static bool part_init(mr_part *p, size_t cap) {
    p->cap = cap;
    p->slots = calloc(cap, sizeof *p->slots);
    p->arena_cap = 16 * cap;
    p->arena = malloc(p->arena_cap);
    return p->slots != NULL && p->arena != NULL;
}

static bool part_grow(mr_part *p) {
    mr_part bigger = *p;
    bigger.cap = 2 * p->cap;
    bigger.slots = calloc(bigger.cap, sizeof *bigger.slots);
    if (bigger.slots == NULL) {
        return false;
    }
    for (size_t k = 0; k < p->cap; k++) {
        if (p->slots[k].hash != 0) {
            size_t at = p->slots[k].hash & (bigger.cap - 1);
            while (bigger.slots[at].hash != 0) {
                at = (at + 1) & (bigger.cap - 1);
            }
            bigger.slots[at] = p->slots[k];
        }
    }
    free(p->slots);
    *p = bigger;
    return true;
}

/* Adds `count` to `word`; false when out of memory. */
static bool part_add(mr_part *p, const char *word, size_t len, uint64_t hash, uint64_t count) {
    size_t at = hash & (p->cap - 1);
    for (; p->slots[at].hash != 0; at = (at + 1) & (p->cap - 1)) {
        mr_entry *e = &p->slots[at];
        if (e->hash == hash && e->len == len && memcmp(p->arena + e->offset, word, len) == 0) {
            e->count += count;
            return true;
        }
    }
    if (p->arena_len + len > p->arena_cap) {
        size_t cap = 2 * p->arena_cap + len;
        char *arena = realloc(p->arena, cap);
        if (arena == NULL) {
            return false;
        }
        p->arena = arena;
        p->arena_cap = cap;
    }
    memcpy(p->arena + p->arena_len, word, len);
    p->slots[at] = (mr_entry){.hash = hash, .count = count, .offset = p->arena_len, .len = len};
    p->arena_len += len;
    p->used++;
    return 2 * p->used <= p->cap || part_grow(p);
}

static mr_table *table_new(size_t parts) {
    mr_table *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    t->parts = parts;
    t->part = calloc(parts, sizeof *t->part);
    bool ok = t->part != NULL;
    for (size_t r = 0; ok && r < parts; r++) {
        ok = part_init(&t->part[r], 1024);
    }
    if (!ok) {
        mr_table_destroy(t);
        return NULL;
    }
    return t;
}

void mr_table_destroy(mr_table *t) {
    if (t == NULL) {
        return;
    }
    for (size_t r = 0; t->part != NULL && r < t->parts; r++) {
        free(t->part[r].slots);
        free(t->part[r].arena);
    }
    free(t->part);
    free(t);
}

static bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

mr_table *mr_map(const TomiiCallCtx *ctx, const mr_corpus *corpus, size_t maps, size_t reduces) {
    if (maps == 0 || reduces == 0 || ctx->instance >= maps) {
        fail(ctx, "maps must cover this instance and reduces must be at least 1");
        return NULL;
    }
    const char *text = corpus->text;
    size_t size = corpus->size, i = ctx->instance;
    size_t start = size * i / maps, end = size * (i + 1) / maps;
    /* A word that starts before the chunk belongs to the chunk before. */
    while (start > 0 && start < size && !is_space(text[start - 1]) && !is_space(text[start])) {
        start++;
    }
    mr_table *t = table_new(reduces);
    if (t == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    size_t at = start;
    while (at < end) {
        while (at < end && is_space(text[at])) {
            at++;
        }
        if (at == end) {
            break;
        }
        size_t first = at;
        while (at < size && !is_space(text[at])) {
            at++;
        }
        uint64_t hash = word_hash(text + first, at - first);
        if (!part_add(&t->part[(hash >> 32) % reduces], text + first, at - first, hash, 1)) {
            mr_table_destroy(t);
            fail(ctx, "out of memory");
            return NULL;
        }
    }
    return t;
}

/* Item k of `tables` as a table, or NULL (failing the call) when it is not one. */
static const mr_table *table_at(const TomiiCallCtx *ctx, const TomiiValue *tables, size_t k) {
    if (tables[k].tag != TOMII_TAG_OBJECT || tables[k].elem != type_id("mr_table") ||
        tables[k].payload.buf.data == NULL) {
        char message[128];
        snprintf(message, sizeof message, "item %zu is not an mr_table handle", k);
        fail(ctx, message);
        return NULL;
    }
    return tables[k].payload.buf.data;
}

mr_table *mr_reduce(const TomiiCallCtx *ctx, const TomiiValue *tables, size_t count) {
    mr_table *merged = table_new(1);
    if (merged == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    for (size_t k = 0; k < count; k++) {
        const mr_table *t = table_at(ctx, tables, k);
        if (t == NULL || ctx->instance >= t->parts) {
            if (t != NULL) {
                fail(ctx, "a map table has fewer partitions than there are reduce tasks");
            }
            mr_table_destroy(merged);
            return NULL;
        }
        const mr_part *p = &t->part[ctx->instance];
        for (size_t s = 0; s < p->cap; s++) {
            const mr_entry *e = &p->slots[s];
            if (e->hash != 0 &&
                !part_add(&merged->part[0], p->arena + e->offset, e->len, e->hash, e->count)) {
                mr_table_destroy(merged);
                fail(ctx, "out of memory");
                return NULL;
            }
        }
    }
    return merged;
}

typedef struct {
    const char *word;
    size_t len;
    uint64_t count;
} mr_word;

static int by_word(const void *x, const void *y) {
    const mr_word *a = x, *b = y;
    int order = memcmp(a->word, b->word, a->len < b->len ? a->len : b->len);
    return order != 0 ? order : (a->len > b->len) - (a->len < b->len);
}

/* Every word of the tables, sorted; NULL (failing the call) on a bad item or out of memory. */
static mr_word *gather(const TomiiCallCtx *ctx, const TomiiValue *tables, size_t count, size_t *n) {
    size_t total = 0;
    for (size_t k = 0; k < count; k++) {
        const mr_table *t = table_at(ctx, tables, k);
        if (t == NULL) {
            return NULL;
        }
        total += t->part[0].used;
    }
    mr_word *words = malloc((total > 0 ? total : 1) * sizeof *words);
    if (words == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    *n = 0;
    for (size_t k = 0; k < count; k++) {
        const mr_part *p = &((const mr_table *)tables[k].payload.buf.data)->part[0];
        for (size_t s = 0; s < p->cap; s++) {
            if (p->slots[s].hash != 0) {
                const mr_entry *e = &p->slots[s];
                words[(*n)++] = (mr_word){p->arena + e->offset, e->len, e->count};
            }
        }
    }
    qsort(words, *n, sizeof *words, by_word);
    return words;
}

char *mr_collect(const TomiiCallCtx *ctx, const TomiiValue *tables, size_t count) {
    size_t n = 0;
    mr_word *words = gather(ctx, tables, count, &n);
    if (words == NULL) {
        return NULL;
    }
    size_t cap = 1;
    for (size_t k = 0; k < n; k++) {
        cap += words[k].len + 22;
        if (k > 0 && by_word(&words[k - 1], &words[k]) == 0) {
            fail(ctx, "a word is in two partitions");
            free(words);
            return NULL;
        }
    }
    char *text = malloc(cap);
    size_t at = 0;
    for (size_t k = 0; text != NULL && k < n; k++) {
        memcpy(text + at, words[k].word, words[k].len);
        at += words[k].len;
        at += (size_t)snprintf(text + at, cap - at, "\t%llu\n", (unsigned long long)words[k].count);
    }
    free(words);
    if (text == NULL) {
        fail(ctx, "out of memory");
        return NULL;
    }
    text[at] = '\0';
    return text;
}
