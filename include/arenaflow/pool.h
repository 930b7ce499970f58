/*
 * arenaflow — the buffer pool: size-class blocks carved from mmap'd chunks, per-worker caches,
 * cross-class borrowing, trimming, statistics; and the dynamic region (jemalloc arena) for
 * tensors whose size is unknown at plan time.
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
 *     a regression test). Only then is a chunk made: cut from memory that retired chunks left
 *     mapped (opts.recycle), else mapped.
 *   - Frees may come from any thread (any cache, or no cache). Double frees and pointers the
 *     pool does not own are reported (AF_EDOUBLEFREE / AF_EFOREIGN), never crash.
 *   - Trim returns idle chunks (every block free in the central lists) to the OS, by call or by
 *     an idle policy.
 *   - Opt-in regions (opts.region_min): in caches, classes of at least that size (and huge
 *     requests) are carved from per-cache regions (best fit, split on demand, coalesced on free)
 * instead of fixed-class chunks, so memory is re-cut between classes without a lock; a region grows
 * under the global mutex only when its free extents cannot serve a request. See pool/region.c.
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
    int recycle;    /* before mapping a chunk, retire every fully free chunk (flushing the calling
                       cache first) into coalescing mapped ranges and cut the new chunk from them:
                       lower reserved/peak, but in steady state it trades blocks between classes
                       under the global lock instead of keeping them cached; default 0 */
    int poison;     /* debug: fill 0x55 on free, 0xAA on alloc; default 0 */
    int exact_peak; /* keep one shared atomic of live bytes for an exact peak (costs
                       one atomic add per op); default 0 */
    /* Reserve budget (pool/room.c): before mapping, idle memory that cannot serve the request
     * (cached huge chunks, free chunks of other classes in the central lists and in the calling
     * cache) is unmapped until reserved + the new chunk <= reserve_ratio x the peak of requested
     * bytes in use. Re-cuts memory between classes, at the price of OS calls and global-mutex
     * slow paths in every round whose working set moves between classes; 0 = off (default). */
    double reserve_ratio;
    /* Regions (pool/region.c): classes of at least region_min bytes (>= 16 KiB), and huge requests
     * below 4 GiB, are carved, in caches, from per-cache regions: memory is re-cut between classes
     * (split on demand, coalesced when freed) with no lock, and a region grows under the global
     * mutex only when its free extents cannot serve a request. Blocks keep their class size; such
     * classes neither lend nor borrow in caches (no free-block bins either: a freed block coalesces
     * at once, so each round of a repeated plan starts from the same layout). Calls without a cache
     * still use fixed-class chunks. Lower reserved/peak on most plans, but every region-class
     * alloc+free costs a best-fit carve and a coalesce (~3x the bin fast path). 0 = off (default).
     */
    uint64_t region_min;
    /* Learned rounds (pool/round.c, af_pool_cache_round): most requests a cache records in one
     * round to lay them out as an arena (at most 65536: learning is quadratic in it); 0 = never
     * learn. Default 4096. */
    uint32_t round_max;
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
/* Returns every block the cache holds to the central lists (so trim can see them). */
void af_pool_cache_flush(af_pool_cache_t *cache);

/*
 * Learned rounds (seed 1, §6.1: a graph driven many rounds caches its first round's plan and
 * follows it). A caller that repeats the same work round after round (an executor's worker, a
 * stream stage) marks each round's end with af_pool_cache_round. The first call starts
 * recording: the next round's requests are recorded (size, order of allocs and frees) and served
 * as they come, those of 16 KiB or more by a mapping of their own that is unmapped when freed (so
 * the recorded round reserves about what it has live), smaller ones by the size classes. At the end
 * of a recorded round in which every block the cache allocated was freed through it (at most
 * opts.round_max allocations, each < 4 GiB), the cache lays that round's blocks out in one arena
 * with the planner's interval placement (af_place_intervals, "portfolio": blocks that are never
 * live at once share bytes, so the arena is close to the round's peak of live bytes), returns its
 * idle class blocks and the pool's idle chunks to the OS (af_pool_trim), and maps the arena (one OS
 * call, counted in reserved bytes). From then on the i-th allocation of a round gets the i-th
 * recorded block's place, with no lock and no atomic read-modify-write, when it fits (size <= the
 * recorded size rounded up to 256 bytes) and every earlier block of the round sharing its bytes has
 * been freed; any other request (larger, extra, or one whose place is still taken because frees
 * came in another order) is served by the size classes as before, so a round that departs from the
 * recorded one stays correct. A round starting with a block of the arena still in use (kept across
 * the boundary) is served by the classes entirely. Frees of arena blocks: plain stores from this
 * cache; a CAS under the global mutex from other threads and af_pool_free. Double frees and
 * interior pointers are reported as for other blocks. A round that cannot be learned (a block not
 * freed in it, too many requests) is recorded again, up to 3 times, then learning stops (a round
 * without requests does not count). A cache learns once; destroying it releases the arena (kept
 * until its last block is freed if some are in use). Debug modes (poison, exact_peak, ASan) apply.
 * Returns 0, or AF_EINVAL (cache NULL). Cost: a recorded round is slower (every call takes the
 * general path; two OS calls per block of 16 KiB or more); learning plans once (milliseconds for
 * hundreds of blocks).
 */
int af_pool_cache_round(af_pool_cache_t *cache);

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
    int owner_class;    /* class the block belongs to; -1 for a huge chunk */
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
    uint64_t reserved_bytes;       /* bytes mapped (chunks + huge), what the OS gave us */
    uint64_t peak_reserved_bytes;  /* since create or af_pool_reset_peak */
    uint64_t allocated_bytes;      /* block bytes in use by callers */
    uint64_t peak_requested_bytes; /* of requested_bytes: exact with opts.exact_peak, else
                                     sampled at slow paths and stats calls (a lower bound) */
    uint64_t requested_bytes;      /* bytes callers asked for, of blocks in use */
    uint64_t metadata_bytes;       /* descriptors and tables (heap) */
    uint64_t huge_bytes;           /* part of reserved_bytes held by huge chunks (in use+cached) */
    uint64_t allocs, frees;        /* all successful calls */
    uint64_t fast_allocs, fast_frees; /* served by a cache with no lock */
    uint64_t borrows;                 /* cross-class borrows */
    uint64_t global_locks;            /* global mutex acquisitions */
    uint64_t class_locks; /* per-class lock acquisitions (cache refill/flush, no-cache) */
    uint64_t os_maps, os_unmaps, os_madvise; /* OS calls */
    uint64_t trimmed_bytes;                  /* total released by trim / idle policy */
    uint64_t recycled_bytes; /* free chunks of one class re-cut for another, no OS call */
    uint64_t double_frees, foreign_frees; /* bad frees reported */
    double fragmentation; /* peak_reserved_bytes / peak_requested_bytes (0 if none) */
    /* learned rounds (af_pool_cache_round) */
    uint64_t round_arenas, round_arena_bytes; /* arenas mapped now, their bytes (in reserved) */
    uint64_t round_hits;                      /* requests served from an arena */
    uint64_t round_misses; /* requests of a replayed round served by the classes instead (a held
                          round's requests are not counted here: see rounds_held) */
    uint64_t rounds_learned,
        rounds_held; /* arenas built; rounds begun with an arena block in use */
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

/* ---------------------------------------------------------------------------------------- */
/*
 * Dynamic region: tensors whose size is known only at run time (the seed's conservative
 * branch). With jemalloc (AF_HAVE_JEMALLOC) it is a dedicated jemalloc arena
 * (mallctl "arenas.create", mallocx/dallocx with MALLOCX_ARENA | MALLOCX_TCACHE_NONE); without
 * it, the library's allocator hooks. Each block carries a small header so foreign pointers and
 * double frees are reported. Thread-safe.
 */
typedef struct af_dynregion af_dynregion_t;

typedef struct af_dynregion_stats {
    uint64_t live_bytes, peak_bytes; /* requested bytes */
    uint64_t allocs, frees;
    int jemalloc;          /* 1 when backed by a jemalloc arena */
    unsigned arena_index;  /* jemalloc arena index (when jemalloc) */
    uint64_t arena_mapped; /* jemalloc stats.arenas.<i>.mapped when available, else 0 */
} af_dynregion_stats_t;

/* Returns 0 and sets *out, or AF_ENOMEM / AF_EIO (jemalloc refused an arena; message in err). */
int af_dynregion_create(af_dynregion_t **out, af_error_t *err);
/* Frees the region and every block still allocated in it. NULL is a no-op. */
void af_dynregion_destroy(af_dynregion_t *dr);
/* 64-byte aligned. Returns 0, AF_EINVAL (size 0), AF_ESIZE, AF_ENOMEM. */
int af_dynregion_alloc(af_dynregion_t *dr, size_t size, void **out);
/* Returns 0, AF_EDOUBLEFREE, AF_EFOREIGN (best effort: checks the header magic). */
int af_dynregion_free(af_dynregion_t *dr, void *ptr);
int af_dynregion_stats(af_dynregion_t *dr, af_dynregion_stats_t *st);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_POOL_H */
