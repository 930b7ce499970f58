/*
 * The pool module's one private header, shared by pool/pool.c (create, ladder, stats, block
 * queries), pool/chunk.c (address space, chunks, central lists, huge chunks, trim),
 * pool/borrow.c (the slow path: borrowing under the global mutex), pool/cache.c (the
 * lock-free per-worker fast path, the cache-less calls) and pool/heap.c (re-cut blocks from a
 * cache's heap of extents). Other modules use include/arenaflow/pool.h only.
 *
 * Locks (ranks in common/common_int.h, AF__RANK_POOL_*): pool->glock (global mutex: address
 * space, chunk table, borrowing, huge chunks, the list of caches and of heaps, heaps changing
 * hands, trim) before cls->lock (one per class: its central free list and its chunks' free
 * counts), never the reverse. A cache's bins, and the extents of the heap it holds, are touched
 * only by the thread using the cache; other threads read its counters (relaxed atomics) for
 * statistics and push the heap's blocks they free onto its remote list (CAS).
 */
#ifndef ARENAFLOW_POOL_INT_H
#define ARENAFLOW_POOL_INT_H

#include "arenaflow/pool.h"
#include "common/common_int.h"

#include <pthread.h>
#include <stdatomic.h>

#define AF__POOL_GRANULE_SHIFT 14 /* chunks start and end on 16 KiB granules */
#define AF__POOL_GRANULE ((uint64_t)1 << AF__POOL_GRANULE_SHIFT)
#define AF__POOL_LUT_SIZE 512
#define AF__POOL_HUGE_CLASS 0xffu /* owner class byte of a huge chunk's block */
#define AF__POOL_HEAP_CLASS 0xfeu /* owner class byte of a re-cut block (pool/heap.c) */
#define AF__POOL_SPAN (-2)        /* chunk cls of a heap's span (pool/heap.c) */
#define AF__POOL_CACHE_HUGE 4     /* free huge chunks a cache keeps for reuse without a lock */
#define AF__POOL_HBINS 64    /* a cache keeps freed re-cut blocks of 1..64 granules by length */
#define AF__POOL_HBIN_CAP 64 /* ... up to this many of each length */

/* Relaxed accessors for single-writer counters that other threads read. */
#define AF__LD(p) atomic_load_explicit((p), memory_order_relaxed)
#define AF__ST(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define AF__ADD(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define AF__SUB(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_relaxed)

/* ---- the block state word ----
 * kind (af_block_state_t) in bits 0..7, owner class in 8..15, borrower class in 16..23, and in
 * 24..31 the tag of the cache that handed the block out (0: none). A cache frees a block carrying
 * its own tag with a plain (relaxed) load and store, every other free with a compare-and-swap.
 * Every read and write of the word goes through the accessors below. */
#define AF__POOL_TAG_SHIFT 24
#define AF__POOL_NTAGS 256 /* tags 1..255; a cache created when all are taken gets none */
static inline uint32_t af__blk_state(uint32_t kind, uint32_t owner, uint32_t borrower)
{
    return kind | (owner << 8) | (borrower << 16);
}
static inline uint32_t af__blk_kind(uint32_t st)
{
    return st & 0xffu;
}
static inline uint32_t af__blk_owner(uint32_t st)
{
    return (st >> 8) & 0xffu;
}
static inline uint32_t af__blk_borrower(uint32_t st)
{
    return (st >> 16) & 0xffu;
}
/* The word without its tag, and with tag `tag` instead. */
static inline uint32_t af__blk_untagged(uint32_t st)
{
    return st & ((1u << AF__POOL_TAG_SHIFT) - 1);
}
static inline uint32_t af__blk_tagged(uint32_t st, uint32_t tag)
{
    return af__blk_untagged(st) | (tag << AF__POOL_TAG_SHIFT);
}
/* The tag bits alone (compared with a cache's `owned`). */
static inline uint32_t af__blk_tag_bits(uint32_t st)
{
    return st & ~((1u << AF__POOL_TAG_SHIFT) - 1);
}
/* FREE, same owner class, no borrower, no tag. */
static inline uint32_t af__blk_freed(uint32_t st)
{
    return af__blk_state(AF_BLOCK_FREE, af__blk_owner(st), 0);
}

typedef struct af__pool_block {
    _Atomic uint32_t state;
    _Atomic uint32_t req; /* bytes requested by the current user (classes are < 4 GiB); relaxed:
                             statistics sum it over blocks in use from any thread */
    char *addr;
    union {
        struct af__pool_block *prev; /* central free list link (class lock) */
        _Atomic uint64_t ngran;      /* re-cut block (pool/heap.c): its length in granules (relaxed:
                                        statistics read it on blocks in use) */
    };
    struct af__pool_block *next; /* central free list link; a re-cut block's link on its heap's
                                    list of blocks freed by other threads */
} af__pool_block_t;

typedef struct af__pool_chunk {
    char *base;
    uint64_t bytes;               /* mapped bytes (multiple of the granule) */
    uint64_t bs;                  /* block size */
    uint64_t inv;                 /* ceil(2^32 / bs): exact division of block offsets (< 2^32) */
    _Atomic uint64_t req;         /* huge chunk: bytes requested (relaxed, as a block's req) */
    uint32_t nblocks, cap_blocks; /* blocks in use / allocated in `blocks` (kept when retired) */
    int32_t cls;                  /* class, or -1 for a huge chunk */
    uint32_t nfree;               /* blocks in the central free list (class lock) */
    int mapped;                   /* 0 once released (descriptor kept for reuse) */
    int dt; /* block size >= one granule: the block descriptors live in pool->dtab, at the
               granule each block starts in (`blocks` is then unused) */
    uint64_t idle_since; /* ns when nfree reached nblocks (class lock) */
    af__pool_block_t *blocks;
    struct af__pool_chunk *hnext; /* huge cache list (glock) */
    struct af__pool_heap *heap;   /* span: the heap it belongs to (set before publishing) */
} af__pool_chunk_t;

typedef struct af__pool_range {
    uint64_t start, len; /* granule indexes */
} af__pool_range_t;

/* A heap (pool/heap.c): the mapped ranges ("spans") one cache re-cuts its large requests from,
 * its free ones kept as extents sorted by address and coalesced. Only the cache using the heap
 * touches `xt`; other threads push the heap's blocks they free onto `remote`. Heaps belong to
 * the pool (a destroyed cache's heap waits, with its memory, for the next cache). */
typedef struct af__pool_heap {
    af__pool_range_t *xt; /* free extents (owner only) */
    size_t nxt, cap_xt;
    _Atomic(af__pool_block_t *) remote; /* freed elsewhere: push by CAS, the owner takes all */
    /* counters: the owner writes allocs/frees/live_*, other threads add to r* (relaxed) */
    _Atomic uint64_t allocs, frees, rfrees, grows;
    /* (bytes and requested bytes in use are summed over the blocks: af__pool_heap_totals) */
    _Atomic uint64_t spans_bytes; /* mapped for this heap (glock) */
    int adopted;                  /* used by a cache (glock) */
    struct af__pool_heap *next;   /* pool->heaps (glock) */
} af__pool_heap_t;

typedef struct af__pool_class {
    pthread_mutex_t lock; /* AF__RANK_POOL_CLASS */
    uint64_t bs;
    af__pool_block_t *head; /* central free list, LIFO at head */
    _Atomic uint64_t nfree; /* written under the class lock, peeked without it */
    uint64_t nblocks, nchunks;
    uint64_t next_chunk; /* bytes of the next chunk to map (glock) */
    uint32_t cache_cap, batch;
    uint32_t borrow_last;           /* slow path borrows from central lists of (cls, borrow_last] */
    uint32_t borrow_near;           /* a cache borrows from its own bins of (cls, borrow_near] */
    _Atomic uint64_t allocs, frees; /* through no-cache calls, borrows, retired caches */
    _Atomic uint64_t lent_total;
    char pad[64];
} af__pool_class_t;

/* A cached free block: its descriptor only (8 bytes: half the stores on free and twice the slots
 * per cache line); alloc reads the address from the descriptor, whose line it writes anyway. */
typedef struct af__pool_slot {
    af__pool_block_t *b;
} af__pool_slot_t;

typedef struct af__pool_bin {
    _Atomic uint32_t n;
    uint32_t cap;
    uint32_t near;  /* the class's borrow_near (copied: one cache line less on a lend) */
    uint32_t inuse; /* state word of a block of this class handed out by this cache: INUSE, class,
                       cache tag (a lend to class b adds 1 for BORROWED and b << 16) */
    af__pool_slot_t *slots;
    /* Counters (one writer, relaxed). The fast paths keep one: frees (blocks pushed). Blocks
     * handed out are derived (af__pool_bin_allocs): pops = moved + frees - n. */
    _Atomic uint64_t frees;
    _Atomic int64_t moved;   /* blocks moved in from the central list minus flushed back */
    _Atomic uint64_t direct; /* blocks of this class handed out without passing the bin */
    _Atomic uint64_t lent;   /* blocks of this class this cache lent to smaller requests */
    uint64_t pad;            /* pads the bin to 64 bytes: bins[c] is one shift away */
} af__pool_bin_t;
_Static_assert(sizeof(af__pool_bin_t) == 64, "a bin is one cache line");

/* Requests served from bin (pops, own and lent) and around it (direct): a snapshot. */
static inline uint64_t af__pool_bin_allocs(const af__pool_bin_t *bin)
{
    int64_t pops = AF__LD(&bin->moved) + (int64_t)AF__LD(&bin->frees) - (int64_t)AF__LD(&bin->n);
    return (pops > 0 ? (uint64_t)pops : 0) + AF__LD(&bin->direct);
}

struct af_pool_cache {
    /* hot: copies of the pool's read-only lookup fields (one dependent load less per call) */
    af_pool_t *pool;
    uint64_t max_size;
    char *va_base;
    uint64_t ngranules;
    _Atomic(af__pool_chunk_t *) *gtab;
    af__pool_block_t *dtab;
    int flags;         /* nonzero: every call takes the general path (poison, ASan, exact peak) */
    uint32_t tag;      /* this cache's tag (1..255), or 0 */
    uint32_t owned;    /* tag bits of a block this cache handed out (bits 24..31 of its state word);
                          UINT32_MAX, which no state matches, without a tag or in a debug mode */
    uint64_t fast_max; /* max_size; 0 in a debug mode or when the size table is not exact: every
                          request then takes the general path */
    uint64_t full[2];  /* bit c set: bins[c] is not empty (borrowing finds a bin with one ctz) */
    uint8_t lut[AF__POOL_LUT_SIZE];
    af__pool_chunk_t *huge[AF__POOL_CACHE_HUGE]; /* free huge chunks this cache freed */
    af__pool_heap_t *heap; /* requests above recut_min are re-cut from it (NULL: none adopted yet,
                              or handed back by af_pool_cache_flush) */
    uint64_t recut_min;    /* 0: re-cutting off */
    /* Re-cut blocks this cache freed, kept by length (pool/heap.c): hslots[g * AF__POOL_HBIN_CAP
     * + i], i < hn[g], holds FREE blocks of g + 1 granules, out of their heap's extents; a
     * request of that many granules pops one with no search. hbin_max: bins in use (0 in a debug
     * mode, without a tag or without re-cutting). Counters (one writer, relaxed): blocks pushed,
     * blocks flushed back to the extents (blocks popped = pushed - flushed - still binned). */
    uint64_t hbin_max;
    uint32_t hinuse; /* state word of a re-cut block this cache hands out */
    af__pool_block_t **hslots;
    _Atomic uint32_t hn[AF__POOL_HBINS];
    _Atomic uint64_t hb_pushes, hb_flushed;
    _Atomic uint64_t slow_allocs, slow_frees;
    struct af_pool_cache *prev, *next; /* pool->caches (glock) */
    af__pool_bin_t bins[];             /* one per class, inline: one load less on the fast path */
};

struct af_pool {
    /* read-mostly, hot */
    char *va_base;
    uint64_t ngranules;
    _Atomic(af__pool_chunk_t *) *gtab; /* granule -> chunk (release on publish, acquire on read) */
    af__pool_block_t *dtab; /* granule -> descriptor of the block of >= 1 granule starting in it
                               (addr NULL when none): free finds such a block with one load. An
                               mmap'd NORESERVE array, committed page by page as it is used */
    uint64_t max_size;      /* largest class in bytes */
    uint32_t nclasses;
    int poison, exact_peak;
    int lut_exact;                       /* lut[] alone maps sizes to classes (no step up) */
    uint32_t units[AF_POOL_MAX_CLASSES]; /* class size in 256-byte units */
    uint8_t lut[AF__POOL_LUT_SIZE];
    af__pool_class_t *cls;

    af_pool_opts_t opts;
    void *va_raw; /* start of the reservation as mmap returned it */
    uint64_t va_bytes;

    pthread_mutex_t glock; /* AF__RANK_POOL_GLOBAL */
    uint64_t va_bump;      /* granules handed out from the bottom of the reservation up (chunks) */
    uint64_t hp_low; /* and from its top down (heaps' spans: one heap's growth stays one range) */
    af__pool_range_t *vfree; /* unmapped holes below va_bump */
    size_t nvfree, cap_vfree;
    af__pool_chunk_t **chunks; /* every descriptor ever made (glock) */
    size_t nchunks, cap_chunks;
    af__pool_chunk_t *spare; /* released descriptors, reused (linked by hnext) */
    af__pool_chunk_t *huge_free;
    uint64_t huge_free_bytes;
    af_pool_cache_t *caches;
    af__pool_heap_t *heaps;                  /* every heap made (glock) */
    uint64_t tags_used[AF__POOL_NTAGS / 64]; /* cache tags in use (glock) */
    _Atomic uint64_t last_idle_scan;
    /* counters (relaxed atomics; slow paths only, except the optional exact peak) */
    _Atomic uint64_t reserved, peak_reserved, huge_bytes, metadata;
    _Atomic int64_t live_req; /* exact_peak: requested bytes in use (else unused: the fast path
                                 keeps no byte count; af__pool_live_req sums the blocks) */
    _Atomic uint64_t peak_req;
    _Atomic uint64_t global_locks, class_locks, borrows;
    _Atomic uint64_t os_maps, os_unmaps, os_madvise, trimmed;
    _Atomic uint64_t double_frees, foreign_frees;
    _Atomic uint64_t huge_allocs, huge_frees;
    _Atomic uint64_t retired_fast_allocs, retired_fast_frees;
    _Atomic uint64_t retired_hb; /* re-cut blocks popped from flushed caches' bins */
};

/* Size -> class: u = ceil(size / 256) units; a table on (log2, 3 mantissa bits) of v = u - 1.
 * A bucket holds v in [lo, hi), i.e. u in [lo + 1, hi]; its entry is the class of u = hi when
 * every u of the bucket maps to that class (so the table alone is the answer: `lut_exact`, true
 * for the default ladder with 1, 2, 4 or 8 steps per doubling), else the class of u = lo + 1 and
 * a few steps up follow. */
static inline uint32_t af__pool_lut_key(uint64_t v)
{
    /* Branch-free form of: v < 16 ? v : 16 + (lg - 4) * 8 + ((v >> (lg - 3)) & 7) with lg the
     * top bit of v. With sh = lg' - 3, lg' the top bit of (v | 8), it is 8 sh + (v >> sh): below
     * 16, sh = 0 and the key is v; above, v >> sh is 8 + the 3 bits under the top one. */
    unsigned sh = 60u - (unsigned)__builtin_clzll(v | 8u);
    return (uint32_t)((sh << 3) + (v >> sh));
}

static inline int af__pool_class_fast(const af_pool_t *p, uint64_t size)
{
    uint64_t u = (size + (AF_POOL_ALIGN - 1)) >> 8;
    uint32_t c = p->lut[af__pool_lut_key(u - 1)];
    if (!p->lut_exact)
        while (p->units[c] < u)
            c++;
    return (int)c;
}

/* Descriptor j of a chunk (see af__pool_chunk_t.dt). */
static inline af__pool_block_t *af__pool_blk(const af_pool_t *p, const af__pool_chunk_t *ch,
                                             uint64_t j)
{
    if (!ch->dt)
        return &ch->blocks[j];
    uint64_t off = (uint64_t)(ch->base - p->va_base) + j * ch->bs;
    return &p->dtab[off >> AF__POOL_GRANULE_SHIFT];
}

/* The chunk holding block b (relaxed: callers hold a lock, or own the block). */
static inline af__pool_chunk_t *af__pool_chunk_of(const af_pool_t *p, const af__pool_block_t *b)
{
    uint64_t g = (uint64_t)(b->addr - p->va_base) >> AF__POOL_GRANULE_SHIFT;
    return atomic_load_explicit(&p->gtab[g], memory_order_relaxed);
}

/* The block of a chunk smaller than a granule starting at ptr (granule g), or NULL. */
static inline af__pool_block_t *af__pool_lookup_small(_Atomic(af__pool_chunk_t *) *gtab,
                                                      const void *ptr, uint64_t g,
                                                      af__pool_chunk_t **chunk_out)
{
    af__pool_chunk_t *ch = atomic_load_explicit(&gtab[g], memory_order_acquire);
    if (!ch || ch->dt)
        return NULL; /* no chunk, or inside a large block (its start is in dtab) */
    uint64_t o = (uint64_t)((const char *)ptr - ch->base);
    uint64_t idx = (o * ch->inv) >> 32;
    if (idx >= ch->nblocks || idx * ch->bs != o)
        return NULL;
    *chunk_out = ch;
    return &ch->blocks[idx];
}

/* Looks up the block starting at ptr; NULL when ptr is not one (foreign or interior). */
static inline af__pool_block_t *af__pool_lookup(const af_pool_t *p, const void *ptr,
                                                af__pool_chunk_t **chunk_out)
{
    uint64_t off = (uint64_t)((uintptr_t)ptr - (uintptr_t)p->va_base);
    uint64_t g = off >> AF__POOL_GRANULE_SHIFT;
    if (g >= p->ngranules)
        return NULL;
    af__pool_block_t *b = &p->dtab[g];
    if (b->addr != ptr)
        return af__pool_lookup_small(p->gtab, ptr, g, chunk_out);
    af__pool_chunk_t *ch = atomic_load_explicit(&p->gtab[g], memory_order_acquire);
    if (!ch)
        return NULL;
    *chunk_out = ch;
    return b;
}

void af__pool_glock(af_pool_t *p);
void af__pool_gunlock(af_pool_t *p);
void af__pool_clock(af_pool_t *p, uint32_t c);
void af__pool_cunlock(af_pool_t *p, uint32_t c);

/* Central lists (class lock held). */
void af__pool_central_push(af_pool_t *p, uint32_t c, af__pool_block_t *b);
af__pool_block_t *af__pool_central_pop(af_pool_t *p, uint32_t c);
void af__pool_central_unlink(af_pool_t *p, uint32_t c, af__pool_block_t *b);
/* Unmaps a chunk none of whose blocks is on a list or in use (glock held; the class's block and
 * chunk counts are the caller's). */
void af__pool_chunk_release(af_pool_t *p, af__pool_chunk_t *ch);

/*
 * Slow allocation of class c once the caller's own sources are empty (pool/borrow.c): borrow
 * from a larger class's central list, else map a chunk for c. Takes glock (and class locks). On
 * success *blk is in state INUSE or BORROWED with req set. `want` = requested bytes.
 */
int af__pool_alloc_slow(af_pool_t *p, uint32_t c, uint64_t want, af__pool_block_t **blk);
/* Makes a new chunk for class c and pushes its blocks to the central list. glock held. */
int af__pool_grow(af_pool_t *p, uint32_t c);
/* Returns up to `count` blocks of k's bin c to the central list (takes the class lock). */
void af__pool_bin_flush(af_pool_cache_t *k, uint32_t c, uint32_t count);
int af__pool_huge_alloc(af_pool_t *p, uint64_t size, void **out);
int af__pool_huge_free(af_pool_t *p, af__pool_chunk_t *ch);
/* Puts a free (already annotated) huge chunk on the pool's huge cache or unmaps it. Takes glock. */
void af__pool_huge_return(af_pool_t *p, af__pool_chunk_t *ch);
/* Releases every chunk and the reservation (destroy). */
void af__pool_unmap_all(af_pool_t *p);
/* Idle policy check from slow paths (no lock held). */
void af__pool_idle_tick(af_pool_t *p);
/* Requested bytes in use: the exact counter with exact_peak, else the sum of `req` over every
 * block in use (O(blocks): slow paths that grow the pool and statistics only). glock held. */
int64_t af__pool_live_req(af_pool_t *p);
void af__pool_note_peak(af_pool_t *p, uint64_t live);

/* The exact-peak counter (opts.exact_peak) moved by d bytes. */
static inline void af__pool_exact_live(af_pool_t *p, int64_t d)
{
    if (p->exact_peak) {
        int64_t v = AF__ADD(&p->live_req, d) + d;
        if (d > 0)
            af__pool_note_peak(p, (uint64_t)v);
    }
}

/* Sorted granule range lists (pool/chunk.c): give merges with neighbours (AF_ENOMEM when the
 * list cannot grow). */
int af__pool_rl_give(af__pool_range_t **v, size_t *nv, size_t *cap, uint64_t start, uint64_t n);
/* Maps memory for heap h (glock held): n granules, or, when h's lowest extent [low_start,
 * low_start + low_len) starts at the heaps' bump pointer (which grows down from the top of the
 * reservation while chunks grow up from its bottom), the n - low_len granules below it.
 * Publishes them as a span of h; *start, *len = the new range. */
int af__pool_span_new(af_pool_t *p, af__pool_heap_t *h, uint64_t low_start, uint64_t low_len,
                      uint64_t n, uint64_t *start, uint64_t *len);

/* Heaps (pool/heap.c). adopt/release: glock held (cache create/destroy). */
int af__pool_heap_adopt(af_pool_t *p, af__pool_heap_t **out);
void af__pool_heap_release(af_pool_t *p, af__pool_heap_t *h);
void af__pool_heap_destroy_all(af_pool_t *p);
/* Unmaps the wholly free spans of heaps no cache uses; returns the bytes (glock held). */
uint64_t af__pool_heap_trim(af_pool_t *p);
/* A request of `size` bytes re-cut from cache k's heap (no lock unless memory must be mapped). */
int af__pool_heap_alloc(af_pool_cache_t *k, size_t size, void **out);
/* Block b of span ch, already moved to FREE: back to its heap (k: the freeing cache, or NULL). */
void af__pool_heap_free(af_pool_t *p, af_pool_cache_t *k, af__pool_chunk_t *ch,
                        af__pool_block_t *b);
/* Gives every block of k's bins back to its heap's extents; folds the bins' counters into the
 * pool's when `retire` (glock held then, as af_pool_stats reads them under it). */
void af__pool_hbin_flush(af_pool_cache_t *k, int retire);
/* Sums over the heaps (glock held): bytes and requested bytes in use, allocs and frees, and of
 * them those that took no lock (allocs that mapped nothing, the owner's own frees). */
typedef struct af__pool_heap_sum {
    uint64_t bytes, allocs, frees, fast_allocs, fast_frees;
    int64_t req;
} af__pool_heap_sum_t;
void af__pool_heap_totals(af_pool_t *p, af__pool_heap_sum_t *sum);

/* Memory annotations on hand-out and return (ASan poisoning, debug patterns). */
void af__pool_on_alloc(const af_pool_t *p, void *addr, uint64_t size);
void af__pool_on_free(const af_pool_t *p, void *addr, uint64_t bs);

#endif
