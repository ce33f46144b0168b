/*
 * Word count as map-reduce: the kernels tomii.build exports from this header (conventions:
 * plugins/matrix-compute-c/README.md). A map task counts the words of its chunk of the corpus
 * into a table split into R partitions by word hash; reduce task r merges partition r of every
 * map's table; collect writes the R merged partitions out as text. Tables are opaque handles the
 * runtime destroys when the frame drops them; no kernel changes a table it is given.
 */

#ifndef WORDCOUNT_H
#define WORDCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "tomii/kernel.h"

/* The corpus: the bytes of a text file, loaded once per run. */
typedef struct mr_corpus mr_corpus;

/* Word counts in one or more partitions (hash tables keyed by word). */
typedef struct mr_table mr_table;

/* Loads the corpus file at `path` (words separated by ASCII whitespace). */
// @tomii_export(free=mr_corpus_destroy)
mr_corpus *mr_corpus_load(const TomiiCallCtx *ctx, const char *path);

/* Frees a corpus made by mr_corpus_load. */
void mr_corpus_destroy(mr_corpus *corpus);

/* Counts the words of chunk ctx->instance of `maps` (the words that start in bytes
 * [size i / maps, size (i + 1) / maps)), into `reduces` partitions: a word goes to partition
 * (FNV-1a 64 of the word >> 32) mod reduces. */
// @tomii_export(free=mr_table_destroy)
mr_table *mr_map(const TomiiCallCtx *ctx, const mr_corpus *corpus, size_t maps, size_t reduces);

/* Merges partition ctx->instance of every map table in `tables` into a table of one partition. */
// @tomii_export(variadic, free=mr_table_destroy)
mr_table *mr_reduce(const TomiiCallCtx *ctx, const TomiiValue *tables, size_t count);

/* The merged partitions `tables` (one each) as text, "word\tcount\n" per word in byte order of
 * the words; fails if a word is in two partitions. */
// @tomii_export(variadic, free=free)
char *mr_collect(const TomiiCallCtx *ctx, const TomiiValue *tables, size_t count);

/* Frees a table made by mr_map or mr_reduce. */
void mr_table_destroy(mr_table *table);

#endif /* WORDCOUNT_H */
