/*
 * arenaflow — the buffer pool: size-class blocks carved from mmap'd chunks, per-worker caches,
 * cross-class borrowing, re-cut blocks for large cached requests, trimming, statistics. The
 * executor takes each round's arena from it (af_pool_alloc) and its workers serve dynamic tensors
 * (size known only at run time) from one cache each (executor/dynamic.c).
 *
 * Model (seed 1, §4.2–4.3, §5.3):
 *   - The pool reserves one range of address space at creation and maps chunks inside it on
 *     demand (mmap). A chunk belongs to one size class and is cut into equal blocks. Requests
 *     are rounded up to the alignment (256 B) and served from the smallest class that fits;
 *     requests above the largest class get a chunk of their own ("huge"), which is kept for reuse
 *     until trimmed.
 *   - Every block has one atomic state word: free, in use, or borrowed, plus its owner class.
 *   - Fast path: an af_pool_cache_t (one per worker thread) holds a small stack of free blocks
 *     per class (and up to 4 freed huge chunks); alloc and free through a cache take no lock.
 *     On a miss the cache first borrows a free block of a larger class from its own stacks (no
 *     lock), then moves a batch from the class's central free list (per-class lock), then
 *     borrows from the next larger non-empty central list (global mutex). A borrowed block
 *     always returns to the class it came from when freed (the seed's §5.3 fragmentation bug is
 *     a regression test). Only then is a chunk mapped.
 *   - Re-cutting: a request above `recut_min` (default 32 KiB) made through a cache is not
 *     rounded to a class: it is cut to the 16 KiB granule, best fit, from the free extents of the
 *     cache's heap (memory mapped for that cache, sorted by address), and its granules go back
 *     coalesced with their free neighbours when it is freed, so memory moves between sizes as in a
 *     general-purpose allocator (af_pool_block_info reports owner_class -1 and the cut size).
 *     No lock unless the heap must map more; a block freed by another thread returns to its heap
 *     through a lock-free list. af_pool_alloc (no cache) always uses the ladder.
 *   - Frees may come from any thread (any cache, or no cache). Double frees and pointers the
 *     pool does not own are reported (AF_EDOUBLEFREE / AF_EFOREIGN), never crash.
 *   - Trim returns idle chunks (every block free in the central lists) and the wholly free
 *     memory of heaps no cache holds (a cache hands its heap back when flushed or destroyed) to the
 *     OS, by call or by an idle policy.
 *
 * Threading: a pool is thread-safe except where noted. A cache is owned by one thread at a time
 * (not thread-safe); any thread may free into any pool, with or without a cache.
 */
#ifndef ARENAFLOW_POOL_H
#define ARENAFLOW_POOL_H

#include "arenaflow/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_pool af_pool_t;
typedef struct af_pool_cache af_pool_cache_t;

#define AF_POOL_MAX_CLASSES 128
#define AF_POOL_ALIGN 256 /* every block is aligned to (and sized in multiples of) this */

/* Class ladders. */
typedef enum {
    AF_POOL_LADDER_DEFAULT = 0, /* geometric, `steps_per_doubling` classes per power of two
                                   (default 4: rounding waste <= 25% of the aligned request),
                                   from 256 B to `max_class` (default 64 MiB) */
    AF_POOL_LADDER_SEED = 1,    /* the seed's 256 KiB / 1 MiB / 4 MiB / 16 MiB / 64 MiB, plus
                                   256 B..64 KiB powers of two below it so small requests do not
                                   take a 256 KiB block (set seed_pure=1 to drop those) */
    AF_POOL_LADDER_CUSTOM = 2,  /* `classes[0..nclasses)`, ascending multiples of 256 */
} af_pool_ladder_t;

typedef struct af_pool_opts {
    af_pool_ladder_t ladder;     /* default AF_POOL_LADDER_DEFAULT */
    uint32_t steps_per_doubling; /* default ladder: 1..16; default 4 */
    uint64_t max_class;          /* default ladder: largest class in bytes; default 64 MiB */
    int seed_pure;               /* seed ladder: only the five seed classes; default 0 */
    const uint64_t *classes;     /* custom ladder (copied at create) */
    uint32_t nclasses;
    uint64_t va_reserve;       /* address space reserved up front; default 32 GiB (TSan: 16 GiB) */
    uint32_t cache_slots;      /* per-cache, per-class stack capacity; default 128 */
    uint64_t cache_bytes;      /* per-cache, per-class byte cap (min 2 blocks); default 1 GiB */
    double borrow_max_ratio;   /* borrow only from classes <= ratio x the wanted class; default 4;
                                  0 disables borrowing */
    double cache_borrow_ratio; /* a cache lends its own free blocks up to this ratio without a
                                  lock (capped by borrow_max_ratio); default 4 */
    uint64_t chunk_min;        /* smallest chunk mapped for a class; default 16 KiB */
    uint64_t chunk_max;        /* chunks grow (doubling per class) up to this; default 128 KiB
                                  (a class larger than this maps one block per chunk) */
    uint64_t huge_cache_bytes; /* freed huge chunks kept for reuse up to this; default 1 GiB */
    uint32_t idle_trim_ms;     /* idle policy: chunks idle this long are released during slow
                                  paths and af_pool_maintain(); 0 = off (default) */
    int poison;                /* debug: fill 0x55 on free, 0xAA on alloc; default 0 */
    int exact_peak;            /* keep one shared atomic of live bytes for an exact peak (costs
                                  one atomic add per op); default 0 */
    uint64_t recut_min;        /* requests above this made through a cache are cut to the 16 KiB
                                  granule, best fit, from that cache's heap of free extents,
                                  coalesced on free (no class rounding, memory shared between
                                  sizes); 0 = off (every request uses the ladder); else
                                  >= 16 KiB; default 32 KiB */
    int recut_bins;            /* with re-cutting: a cache keeps the re-cut blocks it frees (up to
                                  1 MiB, 64 of each length) by length and hands one to the next
                                  request of that many granules with no search (a longer one is
                                  split when none fits; all go back, coalesced, before the heap
                                  grows). About 2x faster re-cut allocs and frees, but blocks
                                  reused in freed order rather than best fit: on repeated rounds
                                  reserved memory drifts up (BENCHMARKS.md section 3); default 0 */
} af_pool_opts_t;

/* Fills *o with the defaults above. */
void af_pool_opts_init(af_pool_opts_t *o);

/*
 * Creates a pool. Returns 0 and sets *out, or AF_EINVAL (bad ladder/options, message in err),
 * AF_ENOMEM (address space or metadata). The caller owns *out (af_pool_destroy). err may be NULL.
 */
int af_pool_create(const af_pool_opts_t *opts, af_pool_t **out, af_error_t *err);

/*
 * Destroys the pool and unmaps all of its memory, including blocks still in use. All caches must
 * have been destroyed first (remaining ones are freed with the pool; using them afterwards is
 * undefined). NULL is a no-op. Not thread-safe with other calls on the same pool.
 */
void af_pool_destroy(af_pool_t *pool);

/*
 * Allocates `size` bytes (> 0), aligned to AF_POOL_ALIGN. Sets *out on success. Returns AF_EINVAL
 * (size 0), AF_ESIZE (overflow), AF_ENOMEM (no address space or mmap failed). The block belongs
 * to the caller until af_pool_free. Thread-safe; takes the class lock (use a cache to avoid it).
 */
int af_pool_alloc(af_pool_t *pool, size_t size, void **out);

/*
 * Frees a block from af_pool_alloc / af_pool_cache_alloc, from any thread. Returns 0,
 * AF_EDOUBLEFREE (block already free), AF_EFOREIGN (pointer not the start of a block of this
 * pool, or NULL). Thread-safe.
 */
int af_pool_free(af_pool_t *pool, void *ptr);

/*
 * Per-worker cache. af_pool_cache_create: returns 0 or AF_ENOMEM; the caller owns *out. The
 * create/destroy calls are thread-safe; one cache must be used by one thread at a time.
 * af_pool_cache_destroy returns its free blocks to the pool (NULL is a no-op).
 */
int af_pool_cache_create(af_pool_t *pool, af_pool_cache_t **out);
void af_pool_cache_destroy(af_pool_cache_t *cache);
/* Fast path: no lock while the cache holds a block of the class. Same returns as af_pool_alloc. */
int af_pool_cache_alloc(af_pool_cache_t *cache, size_t size, void **out);
/*
 * Fast path free (any block of the cache's pool, whoever allocated it). As af_pool_free. A block
 * this cache handed out is freed with plain stores (no atomic read-modify-write); any other
 * with a compare-and-swap. A double free is reported whenever the second free is ordered after
 * the first (same thread, or the threads synchronised in between); two frees of one block racing
 * on two threads are arbitrated too, except when one of them is this plain path (a caller bug
 * that would cost a locked instruction per free to catch; pools with `poison` take the CAS).
 */
int af_pool_cache_free(af_pool_cache_t *cache, void *ptr);
/* Returns every block the cache holds to the central lists, and its heap to the pool (so trim
 * can see them; the cache takes a heap again at its next re-cut request). */
void af_pool_cache_flush(af_pool_cache_t *cache);

/* Trim modes. */
#define AF_POOL_TRIM_RELEASE                                                                       \
    1u /* unmap chunks whose blocks are all free (central) + huge cache                            \
        */
#define AF_POOL_TRIM_PURGE                                                                         \
    2u /* madvise(DONTNEED) free blocks >= 64 KiB in the central lists                             \
          (memory stays reserved, RSS drops, pages refault on reuse) */

/*
 * Returns idle memory to the OS. Blocks sitting in caches are not seen (flush them first).
 * Sets *released (may be NULL) to the bytes unmapped or purged. Returns 0. Thread-safe.
 */
int af_pool_trim(af_pool_t *pool, unsigned flags, uint64_t *released);

/* Applies the idle policy now (for a daemon timer). Returns 0. Thread-safe. */
int af_pool_maintain(af_pool_t *pool);

/* Block state, as kept in each block's atomic state word. */
typedef enum {
    AF_BLOCK_FREE = 0,
    AF_BLOCK_INUSE = 1,
    AF_BLOCK_BORROWED = 2, /* in use by a request of a smaller class */
} af_block_state_t;

typedef struct af_pool_block_info {
    af_block_state_t state;
    int owner_class;    /* class the block belongs to; -1 for a huge chunk or a re-cut block */
    int borrower_class; /* class of the request when state == AF_BLOCK_BORROWED, else -1 */
    uint64_t block_size;
} af_pool_block_info_t;

/* Describes the block starting at ptr. Returns 0, or AF_EFOREIGN. Thread-safe (a snapshot). */
int af_pool_block_info(af_pool_t *pool, const void *ptr, af_pool_block_info_t *info);

/* Index of the class a request of `size` bytes maps to, or -1 for huge. */
int af_pool_class_of(const af_pool_t *pool, size_t size);
uint32_t af_pool_nclasses(const af_pool_t *pool);
uint64_t af_pool_class_size(const af_pool_t *pool, uint32_t cls);

typedef struct af_pool_class_stats {
    uint64_t block_size;
    uint64_t chunks;
    uint64_t blocks;        /* blocks mapped for this class */
    uint64_t blocks_free;   /* in the central free list */
    uint64_t blocks_cached; /* free, held by caches */
    uint64_t blocks_in_use; /* handed out (including lent to smaller classes) */
    uint64_t blocks_lent;   /* currently borrowed by a smaller class */
    uint64_t lent_total;    /* times a block of this class was borrowed */
    uint64_t allocs, frees; /* requests served for / returned to this class (incl. borrowed) */
} af_pool_class_stats_t;

typedef struct af_pool_stats {
    uint64_t reserved_bytes;       /* bytes mapped (chunks + huge + heaps), what the OS gave us */
    uint64_t peak_reserved_bytes;  /* since create or af_pool_reset_peak */
    uint64_t allocated_bytes;      /* block bytes in use by callers */
    uint64_t peak_requested_bytes; /* of requested_bytes: exact with opts.exact_peak, else
                                     sampled at slow paths and stats calls (a lower bound) */
    uint64_t requested_bytes;      /* bytes callers asked for, of blocks in use */
    uint64_t metadata_bytes;       /* descriptors and tables (heap) */
    uint64_t huge_bytes;           /* part of reserved_bytes held by huge chunks (in use+cached) */
    uint64_t allocs, frees;        /* all successful calls */
    uint64_t fast_allocs, fast_frees; /* served by a cache with no lock (re-cut ones included) */
    uint64_t borrows;                 /* cross-class borrows */
    uint64_t global_locks;            /* global mutex acquisitions */
    uint64_t class_locks; /* per-class lock acquisitions (cache refill/flush, no-cache) */
    uint64_t os_maps, os_unmaps, os_madvise; /* OS calls */
    uint64_t trimmed_bytes;                  /* total released by trim / idle policy */
    uint64_t double_frees, foreign_frees;    /* bad frees reported */
    double fragmentation; /* peak_reserved_bytes / peak_requested_bytes (0 if none) */
    uint32_t nclasses;
    af_pool_class_stats_t classes[AF_POOL_MAX_CLASSES];
} af_pool_stats_t;

/*
 * Fills *st. Thread-safe; counters kept by caches in use on other threads are read as a
 * snapshot (exact when the pool is quiescent). Returns 0.
 */
int af_pool_stats(af_pool_t *pool, af_pool_stats_t *st);
/* Restarts the peak counters at the current values. Thread-safe. */
void af_pool_reset_peak(af_pool_t *pool);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_POOL_H */
