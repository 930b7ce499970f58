/*
 * arenaflow — the plan cache: graphs driven many rounds are planned once.
 *
 * Key: af_plan_fingerprint() (arenaflow/plan.h): the graph's fingerprint (names, op types,
 * tensor sizes, kinds, dtypes, shapes, views, in-place hints, attributes, costs, edges) salted
 * with every planner option.
 * Value: a plan made on the cache's own copy of the graph, so the caller's graph may be freed.
 * The cache is an LRU bounded by the (estimated) bytes of its entries; entries in use (not yet
 * released) are never evicted. An evicted entry's file is deleted too, so the directory is bounded
 * by the same LRU. Hit, miss, restore and eviction counters.
 *
 * Persistence (opts.dir): each plan is also written to DIR/<fingerprint>.afplan as
 * af_plan_encode() gives it, durably (af_file_write_durable: a temp file unique per writer,
 * fsync, rename, fsync of the directory). At creation every *.afplan file is read back with
 * af_plan_decode(): magic, format version, size fields and an XXH3 checksum are checked;
 * a corrupted or foreign file is ignored and reported as a warning (af_plan_cache_warning()),
 * never trusted. A restored entry holds the order and offsets the plan had; the first lookup
 * that hits it rebuilds the plan with the recorded scheduler (no schedule search) and accepts
 * it only when the order and every offset equal the stored ones, then runs af_plan_verify().
 *
 * Threading: every function is thread-safe (one mutex per cache).
 */
#ifndef ARENAFLOW_CACHE_H
#define ARENAFLOW_CACHE_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"
#include "arenaflow/plan.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_plan_cache af_plan_cache_t;

typedef struct af_plan_cache_opts {
    uint64_t max_bytes; /* LRU bound on the bytes of cached entries; default 256 MiB */
    const char *dir;    /* persistence directory (created if missing); NULL = memory only */
    /* 1: a plan whose file cannot be written (or whose directory cannot be fsync'd) fails
     * af_plan_cache_get with AF_EIO and is not kept, so a retry plans and writes it again.
     * 0 (default): the failed write is only a warning. */
    int durable;
} af_plan_cache_opts_t;

void af_plan_cache_opts_init(af_plan_cache_opts_t *o);

typedef struct af_plan_cache_stats {
    uint64_t hits;      /* lookups answered by a plan in memory */
    uint64_t restored;  /* lookups answered by a plan restored from disk (also in hits) */
    uint64_t misses;    /* lookups that planned */
    uint64_t evictions; /* entries dropped by the LRU bound */
    uint64_t entries;   /* entries now (in memory, including restored ones not yet used) */
    uint64_t bytes;     /* estimated bytes of the entries now */
    uint64_t files_loaded, files_rejected, files_written;
    uint64_t files_removed; /* files of evicted entries deleted (the directory follows the LRU) */
} af_plan_cache_stats_t;

/*
 * Creates a cache; with opts->dir, loads the plans persisted there. Bad files are warnings, not
 * errors. Errors: AF_EINVAL, AF_EIO (the directory cannot be created or read), AF_ENOMEM.
 * *out set only on success.
 */
int af_plan_cache_create(const af_plan_cache_opts_t *opts, af_plan_cache_t **out, af_error_t *err);
/* Frees the cache and its plans. Every plan handed out must have been released. NULL ok. */
void af_plan_cache_destroy(af_plan_cache_t *c);

/*
 * Returns the plan for (g, opts): from memory, from disk, or freshly planned (and persisted).
 * *out belongs to the cache and stays valid until af_plan_cache_release(); its graph is the
 * cache's copy of g (same tensor and node ids). *hit (may be NULL) gets 1 for a hit. Errors:
 * those of af_plan_create(); a failed write of the cache file is a warning, or AF_EIO when the
 * cache is durable.
 */
int af_plan_cache_get(af_plan_cache_t *c, const af_graph_t *g, const af_plan_opts_t *opts,
                      const af_plan_t **out, int *hit, af_error_t *err);
/* Releases a plan from af_plan_cache_get(); it may be evicted afterwards. */
void af_plan_cache_release(af_plan_cache_t *c, const af_plan_t *p);

/* Changes the LRU bound (evicting unpinned entries above it at once). Thread-safe. */
void af_plan_cache_set_max_bytes(af_plan_cache_t *c, uint64_t max_bytes);

void af_plan_cache_stats(af_plan_cache_t *c, af_plan_cache_stats_t *out);
/* Warnings collected (ignored files, failed writes), oldest first; NULL past the end. The
 * string stays valid until the cache is destroyed. */
const char *af_plan_cache_warning(af_plan_cache_t *c, int32_t i);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_CACHE_H */
