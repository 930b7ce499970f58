/*
 * Pool-internal structures shared by pool/pool.c (create, ladder, stats), pool/chunk.c (address
 * space, chunks, central lists, borrowing, huge chunks, trim), pool/cache.c (the lock-free
 * per-worker fast path) and pool/region.c (large classes carved from per-cache regions). Other
 * modules use include/arenaflow/pool.h only.
 *
 * Lock ranks (take in this order, never the reverse):
 *   1. pool->glock   (global mutex: address space, chunk table, borrowing, huge chunks, the list
 *                     of caches, trim)
 *   2. cls->lock     (one per class: that class's central free list and its chunks' free counts)
 * Regions take only glock (growth, adoption, orphaning, trim); their remote-free stacks are
 * lock-free.
 * A cache's bins, free-extent heap and regions' page links are touched only by the thread using
 * the cache (or, once the cache is destroyed, under glock); other threads read their counters and
 * page tags (relaxed atomics) for statistics.
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
#define AF__POOL_CACHE_HUGE 4     /* free huge chunks a cache keeps for reuse without a lock */
#define AF__POOL_PAGE_SHIFT 12    /* regions are carved in 4 KiB pages */
#define AF__POOL_REGION (-2)      /* af__pool_chunk_t.cls of a cache region */
#define AF__POOL_NIL UINT32_MAX   /* no page (free-extent list end) */
#define AF__POOL_XBINS 256        /* free-extent size bins (len key, see region.c) */

/* Relaxed accessors for single-writer counters that other threads read. */
#define AF__LD(p) atomic_load_explicit((p), memory_order_relaxed)
#define AF__ST(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define AF__ADD(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define AF__SUB(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_relaxed)

/* State word: kind in bits 0..7, owner class in 8..15, borrower class in 16..23, and in 24..31
 * the tag of the cache that handed the block out (0: none). A cache frees a block carrying its
 * own tag with a plain (relaxed) load and store, every other free with a compare-and-swap. */
static inline uint32_t af__blk_state(uint32_t kind, uint32_t owner, uint32_t borrower)
{
    return kind | (owner << 8) | (borrower << 16);
}
#define AF__POOL_TAG_SHIFT 24
#define AF__POOL_NTAGS 256 /* tags 1..255; a cache created when all are taken gets none */

typedef struct af__pool_block {
    _Atomic uint32_t state;
    _Atomic uint32_t req; /* bytes requested by the current user (classes are < 4 GiB); relaxed:
                             statistics sum it over blocks in use from any thread */
    char *addr;
    struct af__pool_block *prev, *next; /* central free list links (class lock) */
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
    /* regions (cls == AF__POOL_REGION): `bytes` is the mapped prefix of a VA span of va_bytes;
     * changed under glock only */
    uint64_t va_bytes;
    _Atomic(af_pool_cache_t *) owner;   /* NULL: orphaned (its cache was destroyed) */
    _Atomic(af__pool_block_t *) remote; /* blocks freed by other threads (MPSC stack) */
    struct af__pool_chunk *rnext;       /* the owner's (or the orphan) region list */
} af__pool_chunk_t;

/* Per 4 KiB page of the reservation, for regions: the first and last page of every extent carry
 * its tag (length in pages << 1 | free); a free extent's first page links it into its heap bin. */
typedef struct af__pool_page {
    _Atomic uint32_t tag;
    uint32_t next, prev;
    uint32_t pad;
} af__pool_page_t;

/* Free extents of a cache's regions, segregated by length (key of the length, as the size
 * lookup's key) with a bitmap of non-empty bins. */
typedef struct af__pool_heap {
    uint64_t map[AF__POOL_XBINS / 64];
    uint32_t head[AF__POOL_XBINS];
} af__pool_heap_t;

typedef struct af__pool_class {
    pthread_mutex_t lock;
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
    _Atomic int64_t rgn_blocks; /* region blocks carved by destroyed caches, not yet returned */
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
    _Atomic int64_t carved;  /* region class: blocks carved from a region minus returned to one
                                (also pads the bin to 64 bytes: bins[c] is one shift away) */
} af__pool_bin_t;
_Static_assert(sizeof(af__pool_bin_t) == 64, "a bin is one cache line");

/* Requests served from bin (pops, own and lent) and around it (direct): a snapshot. */
static inline uint64_t af__pool_bin_allocs(const af__pool_bin_t *bin)
{
    int64_t pops = AF__LD(&bin->moved) + (int64_t)AF__LD(&bin->frees) - (int64_t)AF__LD(&bin->n);
    return (pops > 0 ? (uint64_t)pops : 0) + AF__LD(&bin->direct);
}

/* ---- learned rounds (pool/round.c) ---- */

/* One block of a learned round: its place in the arena. */
typedef struct af__pool_rent {
    uint32_t off, units;    /* offset and size in the arena, in AF_POOL_ALIGN units */
    uint32_t fpos;          /* its free's position among the round's frees */
    uint32_t pb, pn;        /* earlier blocks of the round sharing bytes with it: pred[pb, pb+pn),
                               its first dn a cover (every other one shares bytes with one of them) */
    _Atomic uint32_t state; /* round << 1 | in use (the owner's plain stores; CAS from others); the
                               round is the cache's count of rounds when the block was handed out */
    _Atomic uint32_t req;   /* bytes requested while in use (statistics) */
    uint32_t dn;
    uint32_t gpos; /* the inline fast path's check: the round's frees up to this position must
                  have come in order (0: no earlier block shares its bytes; its cover's one
                  block's free position + 1; UINT32_MAX: a larger cover, never inline) */
    uint32_t pad;
} af__pool_rent_t;

/* A free position of the learned round: the block freed there and its offset (one load). */
typedef struct af__pool_fslot {
    uint32_t off, e;
} af__pool_fslot_t;

/* Offset hash slot: key = offset in units + 1 (0: empty); the blocks placed at that offset are
 * byoff[at ..] (while their offset is the key's): at most one of them is in use. */
typedef struct af__pool_hslot {
    uint32_t key, at;
} af__pool_hslot_t;

typedef struct af__pool_arena {
    char *base;
    uint64_t bytes; /* mapped (outside the pool's reservation) */
    uint32_t n, hbits;
    af__pool_rent_t *e;
    uint32_t *pred;
    af__pool_fslot_t *fo;    /* the block freed at each free position of the round */
    _Atomic uint64_t remote; /* blocks freed by other threads (glock) */
    uint32_t *byoff;         /* blocks by offset */
    af__pool_hslot_t *hash;
    _Atomic(af_pool_cache_t *) owner; /* NULL once its cache is destroyed */
    struct af__pool_arena *next;      /* pool->arenas (glock) */
} af__pool_arena_t;

struct af__pool_learn; /* a round being recorded (round.c) */

struct af_pool_cache {
    /* hot: copies of the pool's read-only lookup fields (one dependent load less per call) */
    af_pool_t *pool;
    char *rp_base;     /* the learned arena (free checks this range first); NULL: none */
    uint64_t rp_bytes; /* 0 when none */
    uint64_t max_size;
    char *va_base;
    uint64_t ngranules;
    _Atomic(af__pool_chunk_t *) *gtab;
    af__pool_block_t *dtab;
    int flags; /* nonzero: every call takes the general path (poison, ASan, exact peak) */
    uint32_t region_first; /* the pool's region_first (classes carved from regions) */
    uint32_t tag;          /* this cache's tag (1..255), or 0 */
    uint32_t owned;    /* tag bits of a block this cache handed out (bits 24..31 of its state word);
                          UINT32_MAX, which no state matches, without a tag or in a debug mode */
    uint64_t fast_max; /* max_size; 0 in a debug mode or when the size table is not exact: every
                          request then takes the general path */
    uint64_t full[2];  /* bit c set: bins[c] is not empty (borrowing finds a bin with one ctz) */
    uint8_t lut[AF__POOL_LUT_SIZE];
    af__pool_chunk_t *huge[AF__POOL_CACHE_HUGE]; /* free huge chunks this cache freed */
    _Atomic uint64_t slow_allocs, slow_frees;
    struct af_pool_cache *prev, *next; /* pool->caches (glock) */
    af__pool_chunk_t *regions;         /* this cache's regions (list changed under glock) */
    af__pool_heap_t heap;              /* their free extents (this cache's thread only) */
    /* learned rounds (this cache's thread; counters relaxed, read by statistics) */
    af__pool_arena_t *arena;
    af__pool_rent_t *rp_e;
    const uint32_t *rp_pred;
    const af__pool_fslot_t *rp_fo;
    /* Counts kept without a counter on the inline paths: this round's hits through them are
     * rp_i - rp_i0 - rp_slow, its inline frees rp_ok; af_pool_cache_round adds them to rp_hits
     * and rp_frees (af__pool_rp_count reads the sum). */
    _Atomic uint32_t rp_i; /* the round's next block */
    _Atomic uint32_t
        rp_ok; /* the round's first rp_ok frees came in order, through the inline free */
    _Atomic uint32_t rp_i0, rp_slow; /* the round's first block (rp_n when held); positions the
                                        general alloc path took this round */
    uint32_t rp_n;                   /* blocks */
    uint32_t rp_fi;    /* the inline free's position: rp_ok, or the sentinel's (rp_n) once a free
                      came out of order or in a debug mode */
    uint64_t rp_lmask; /* ~0, or 0 in a debug mode (the inline alloc then never serves) */

    uint32_t rp_done;  /* state word of a block handed out this round and freed (rp_gen << 1) */
    uint32_t rp_gen;   /* rounds begun (31 bits), in the state words it hands out */
    uint32_t rp_tries; /* rounds recorded without success */
    uint32_t rp_hold;  /* this round is served by the classes (a block was in use) */
    struct af__pool_learn *learn; /* recording a round */
    _Atomic uint64_t rp_hits, rp_frees, rp_misses, rp_held;
    af__pool_bin_t bins[]; /* one per class, inline: one load less on the fast path */
};

typedef struct af__pool_range {
    uint64_t start, len; /* granule indexes */
} af__pool_range_t;

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

    pthread_mutex_t glock;
    uint64_t va_bump;        /* granules handed out from the top of the reservation */
    af__pool_range_t *vfree; /* unmapped holes below va_bump */
    size_t nvfree, cap_vfree;
    af__pool_range_t *mfree; /* mapped, owned by no chunk: retired chunks, coalesced */
    size_t nmfree, cap_mfree;
    uint64_t mfree_bytes;
    af__pool_chunk_t **chunks; /* every descriptor ever made (glock) */
    size_t nchunks, cap_chunks;
    af__pool_chunk_t *spare; /* released descriptors, reused (linked by hnext) */
    af__pool_chunk_t *huge_free;
    uint64_t huge_free_bytes;
    af_pool_cache_t *caches;
    uint64_t tags_used[AF__POOL_NTAGS / 64]; /* cache tags in use (glock) */
    _Atomic uint64_t last_idle_scan;
    af__pool_page_t *rtab; /* page table of regions (mmap'd NORESERVE, committed as used) */
    uint64_t npages;
    uint32_t region_first;     /* classes >= this are carved from cache regions (nclasses: none) */
    uint64_t region_span;      /* VA bytes a new region reserves (it maps a prefix on demand) */
    af__pool_chunk_t *orphans; /* regions of destroyed caches (glock) */
    af__pool_arena_t *arenas;  /* learned-round arenas, of live and destroyed caches (glock) */
    struct af__pool_direct *direct; /* recorded rounds' blocks: open hash on the address (glock) */
    size_t ndirect, cap_direct;

    /* counters (relaxed atomics; slow paths only, except the optional exact peak) */
    _Atomic uint64_t reserved, peak_reserved, huge_bytes, metadata;
    _Atomic int64_t live_req; /* exact_peak: requested bytes in use (else unused: the fast path
                                 keeps no byte count; af__pool_live_req sums the blocks) */
    _Atomic uint64_t peak_req;
    _Atomic uint64_t global_locks, class_locks, borrows;
    _Atomic uint64_t os_maps, os_unmaps, os_madvise, trimmed, recycled;
    _Atomic uint64_t double_frees, foreign_frees;
    _Atomic uint64_t huge_allocs, huge_frees;
    _Atomic uint64_t retired_fast_allocs, retired_fast_frees;
    _Atomic uint64_t arena_bytes, arena_remote_frees, rounds_learned;
    _Atomic uint64_t direct_allocs, direct_frees; /* a recorded round's own mappings */
    _Atomic uint64_t retired_rp_hits, retired_rp_frees, retired_rp_misses, retired_rp_held;
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
/* Reserve budget (pool/room.c): before `bytes` are mapped for class c (-1: a huge request),
 * releases idle memory that cannot serve the request (cached huge chunks, fully free chunks of
 * other classes in the central lists, single-block chunks in the calling cache k, may be NULL)
 * until reserved + bytes <= opts.reserve_ratio x max(peak requested, live), or nothing idle is
 * left. No-op when opts.reserve_ratio is 0. glock held. */
void af__pool_make_room(af_pool_t *p, int32_t c, uint64_t bytes, uint64_t live, af_pool_cache_t *k);

/*
 * Slow allocation of class c once the caller's own sources are empty: borrow from a larger
 * class's central list, else map a chunk for c. Takes glock (and class locks). On success *blk
 * is in state INUSE or BORROWED with req set. `want` = requested bytes.
 */
int af__pool_alloc_slow(af_pool_t *p, uint32_t c, uint64_t want, af_pool_cache_t *k,
                        af__pool_block_t **blk);
/* Makes a new chunk for class c and pushes its blocks to the central list. glock held. For a
 * single-block class it first cuts the chunk from retired mapped memory, scavenging free
 * single-block chunks of other classes (and the caller's cache k, may be NULL) if needed. */
int af__pool_grow(af_pool_t *p, uint32_t c, af_pool_cache_t *k);
/* The cache's fast-path switches (fast_max, owned): everything through the general path in a debug
 * mode, while a round is recorded (allocs and frees) or learned (allocs), else the class fast path.
 */
void af__pool_cache_paths(af_pool_cache_t *k);
/* Returns up to `count` blocks of k's bin c to the central list (takes the class lock). */
void af__pool_bin_flush(af_pool_cache_t *k, uint32_t c, uint32_t count);
/* k: the calling cache (its cached huge chunks count as idle for the reserve budget), or NULL */
int af__pool_huge_alloc(af_pool_t *p, uint64_t size, af_pool_cache_t *k, void **out);
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

/* ---- regions (pool/region.c) ---- */
/* Address space (chunk.c, glock held): n granules from the reservation, and back. */
int af__pool_va_take(af_pool_t *p, uint64_t n, uint64_t *start);
void af__pool_va_give(af_pool_t *p, uint64_t start, uint64_t n);
void af__pool_note_reserved(af_pool_t *p);
/* Region class c for cache k: drains remote frees, carves the block (best fit in k's free
 * extents), else flushes k's region bins and retries, else adopts an orphaned region or maps more
 * (glock). On success *out is INUSE, tagged with k, req = size. */
int af__pool_region_alloc(af_pool_cache_t *k, uint32_t c, uint64_t size, af__pool_block_t **out);
/* A huge request (< 4 GiB) of cache k carved from its regions: INUSE, huge class, no tag. */
int af__pool_region_huge(af_pool_cache_t *k, uint64_t size, af__pool_block_t **out);
/* Bytes of the region extent of block b (its pages; a huge block's size). */
uint64_t af__pool_region_bytes(const af_pool_t *p, const af__pool_block_t *b);
/* A FREE region block leaving k's bins: back to k's free extents when k owns its region, else to
 * its owner (remote). */
void af__pool_region_put(af_pool_cache_t *k, af__pool_chunk_t *r, af__pool_block_t *b);
/* A FREE region block freed by a thread that does not own its region (lock-free push; an
 * orphaned region is then drained under glock). */
void af__pool_region_remote(af_pool_t *p, af__pool_chunk_t *r, af__pool_block_t *b);
/* Cache flush: remote frees back into the extents, free region tops unmapped (takes glock). */
void af__pool_region_flush(af_pool_cache_t *k);
/* Cache destroy (glock held, after the flush): k's regions become orphans. */
void af__pool_region_orphan(af_pool_cache_t *k);
/* Trim (glock held): orphaned regions drained, fully free ones released, free tops unmapped. */
uint64_t af__pool_region_trim(af_pool_t *p);
/* Requested bytes of the blocks in use in region r (a walk of its extents; glock held); adds the
 * extent bytes of its huge blocks in use to *huge (may be NULL). */
int64_t af__pool_region_live(af_pool_t *p, const af__pool_chunk_t *r, uint64_t *huge);

/* ---- learned rounds (pool/round.c) ---- */
/* The inline fast paths of a learned round (cache.c): the free that is the round's next one, as
 * long as the round's frees come in order; the round's next block when the request fits and the
 * block of its one-block cover (see round.c) is among the frees that came in order (it was handed
 * out from the arena this round, is free, and so was every earlier block sharing its bytes).
 * Return 0 when they cannot tell: af__pool_rp_alloc/free decide. */
static inline int af__pool_rp_alloc_fast(af_pool_cache_t *k, uint64_t s1, void **out)
{
    uint32_t i = AF__LD(&k->rp_i);
    af__pool_rent_t *e = &k->rp_e[i]; /* at rp_n (or without an arena): a sentinel, size 0 */
    uint64_t lim = (uint64_t)e->units * AF_POOL_ALIGN & k->rp_lmask;
    if (!((s1 < lim) & (e->gpos <= AF__LD(&k->rp_ok)))) /* one branch */
        return 0;
    AF__ST(&k->rp_i, i + 1);
    atomic_store_explicit(&e->state, k->rp_done | 1, memory_order_relaxed);
    AF__ST(&e->req, (uint32_t)(s1 + 1));
    *out = k->rp_base + (uint64_t)e->off * AF_POOL_ALIGN;
    return 1;
}
static inline int af__pool_rp_free_fast(af_pool_cache_t *k, void *ptr)
{
    uint32_t f = k->rp_fi;             /* the round's next free position */
    af__pool_fslot_t fs = k->rp_fo[f]; /* at rp_n: a sentinel whose block is never in use */
    af__pool_rent_t *e = &k->rp_e[fs.e];
    uint32_t st = atomic_load_explicit(&e->state, memory_order_relaxed);
    if (!((k->rp_base + (uint64_t)fs.off * AF_POOL_ALIGN == (char *)ptr) & st)) /* one branch */
        return 0;
    atomic_store_explicit(&e->state, st & ~1u, memory_order_release);
    k->rp_fi = f + 1;
    AF__ST(&k->rp_ok, f + 1);
    return 1;
}
/* The general entries for a cache with a learned arena: alloc while the cache has one, free of a
 * pointer inside it. They fall back to the general path (af__pool_cache_alloc_general). */
int af__pool_rp_alloc(af_pool_cache_t *k, size_t size, void **out);
int af__pool_rp_free(af_pool_cache_t *k, void *ptr);
/* Arena blocks cache k handed out and freed, so far (a snapshot from another thread). */
void af__pool_rp_count(const af_pool_cache_t *k, uint64_t *hits, uint64_t *frees);
/* cache.c's general allocation path (a miss, huge, debug modes), recording included. */
int af__pool_cache_alloc_general(af_pool_cache_t *k, size_t size, void **out);
/* A cache without a learned arena: the inline paths see sentinels (af_pool_cache_create). */
void af__pool_rp_none(af_pool_cache_t *k);
/* The exact-peak counter (opts.exact_peak) moved by d bytes. */
static inline void af__pool_exact_live(af_pool_t *p, int64_t d)
{
    if (p->exact_peak) {
        int64_t v = AF__ADD(&p->live_req, d) + d;
        if (d > 0)
            af__pool_note_peak(p, (uint64_t)v);
    }
}
/* Slot of an offset key in an arena's offset hash of 2^bits slots. */
static inline uint32_t af__pool_rp_hslot(uint32_t key, uint32_t bits)
{
    return (key * 0x9E3779B1u) >> (32 - bits);
}
#define AF__POOL_LEARN_TRIES 3 /* rounds recorded without success before learning stops */
/* Recording (pool/learn.c): start (AF_ENOMEM), nothing recorded yet, start over, stop; the
 * recorded round placed as an arena not yet mapped (NULL: cannot be learned); an arena's heap
 * memory freed. */
int af__pool_learn_start(af_pool_cache_t *k);
int af__pool_learn_empty(const af_pool_cache_t *k);
void af__pool_learn_reset(af_pool_cache_t *k);
void af__pool_learn_drop(af_pool_cache_t *k);
af__pool_arena_t *af__pool_learn_plan(af_pool_cache_t *k);
void af__pool_arena_free_mem(af__pool_arena_t *a);
/* Recording (cache.c calls these on the general paths while k->learn is set). */
void af__pool_learn_alloc(af_pool_cache_t *k, void *ptr, uint64_t size);
void af__pool_learn_free(af_pool_cache_t *k, void *ptr);
/* A free of an arena block by a thread that does not own the arena (or af_pool_free): finds
 * the arena (glock), moves the block to free with a CAS. AF_EFOREIGN when ptr is in no arena
 * (not counted), AF_EDOUBLEFREE (counted). */
int af__pool_arena_free(af_pool_t *p, void *ptr);
/* Block info of an arena block; AF_EFOREIGN when none. Takes glock. */
int af__pool_arena_info(af_pool_t *p, const void *ptr, af_pool_block_info_t *info);
/* Cache destroy (glock held): the cache's arena is released, or orphaned while blocks are in use;
 * its recording is dropped. */
void af__pool_round_detach(af_pool_cache_t *k);
/* Trim (glock held): orphaned arenas with no block in use are released. Returns bytes. */
uint64_t af__pool_arena_trim(af_pool_t *p);
/* Statistics (glock held): requested and block bytes in use in arenas, arenas and their bytes. */
void af__pool_arena_live(af_pool_t *p, int64_t *req, uint64_t *blocks);
/* Pool destroy: unmaps every arena. */
void af__pool_arena_unmap_all(af_pool_t *p);
/* A recorded round's requests of AF__POOL_DIRECT_MIN bytes or more get a mapping of their own,
 * unmapped when freed, so recording reserves about what is live (pool->direct, glock). 1: not
 * such a request (use the classes); 0 or an error. */
#define AF__POOL_DIRECT_MIN (16u << 10)
int af__pool_direct_alloc(af_pool_cache_t *k, size_t size, void **out);
/* Free of such a block from any thread: 0, AF_EDOUBLEFREE (counted), AF_EFOREIGN (not counted). */
int af__pool_direct_free(af_pool_t *p, void *ptr);
int af__pool_direct_info(af_pool_t *p, const void *ptr, af_pool_block_info_t *info);
/* Statistics (glock held) and pool destroy, as the arena ones. */
void af__pool_direct_live(af_pool_t *p, int64_t *req, uint64_t *blocks);
void af__pool_direct_unmap_all(af_pool_t *p);

/* Memory annotations on hand-out and return (ASan poisoning, debug patterns). */
void af__pool_on_alloc(const af_pool_t *p, void *addr, uint64_t size);
void af__pool_on_free(const af_pool_t *p, void *addr, uint64_t bs);

#endif
