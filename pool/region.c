/*
 * Regions: the large classes (block size >= opts.region_min, at least 16 KiB) and huge requests
 * below 4 GiB (through a cache) are not cut from fixed-class chunks or chunks of their own but
 * carved on demand from per-cache regions, so memory is re-cut between
 * classes as the working set moves (a fixed-class pool ends a round holding the union of what
 * each phase needed; see the "no re-cut" ladder bound bench_pool prints).
 *
 * A region is a span of the pool's reservation owned by one cache, mapped from its start up to
 * a top that grows on demand (under glock: the only lock on this path) and shrinks when trimmed.
 * Inside it, memory is a sequence of extents in 4 KiB pages, each free or one block. The page
 * table pool->rtab (a side table: nothing is written into tensor memory) holds every extent's
 * boundary tags (length << 1 | free, at its first and last page), and each free extent's links
 * in the owner's heap: free extents segregated by length (8 bins per power of two) with a bitmap
 * of non-empty bins. Carving takes the best fit among a few extents of the request's bin, else the
 * first extent of the next non-empty bin, and splits off the rest; returning an extent coalesces
 * it with free neighbours (their tags are at the pages on either side). A block keeps its class
 * size (the ladder still decides rounding) and gets a descriptor in the granule-indexed table
 * dtab, as other large blocks: free finds it with one load, and the one atomic state word says
 * free / in use with its class and the cache's tag.
 *
 * Order on a bin miss of a region class (cache.c sends it here; no lending to or from region
 * classes): (1) drain the blocks other threads freed into this cache's regions, (2) carve,
 * (3) return every block sitting in the cache's region-class bins to the extents (they coalesce)
 * and carve again, (4) under glock, adopt orphaned regions, else grow the newest region's top
 * (in place when its VA is free, else a new span), then carve. Steps 1-3 take no lock and no
 * OS call: in a steady state (the same plan each round) rounds re-cut memory between classes
 * without either. Bins still serve repeated sizes first, and a full bin hands blocks back.
 *
 * Cross-thread frees never touch the owner's heap: the block (state already FREE by CAS) is
 * pushed onto its region's lock-free remote stack (MPSC: any thread pushes, the owner takes the
 * whole stack with one exchange). A destroyed cache's regions become orphans (owner NULL): their
 * extents keep only their tags (no heap), a remote free then drains the stack under glock, and
 * the next cache that needs to grow adopts them. The pusher checks the owner after its push and
 * the destroyer drains after clearing the owner, both sequentially consistent, so no block is
 * stranded. Trim: a cache flush unmaps the free top of its regions; af_pool_trim drains orphans,
 * unmaps their free tops and releases fully free ones (their VA goes back to the pool).
 *
 * Invariants: the pages [base, base + bytes) of a region are covered by extents whose first and
 * last pages carry the right tags; a free extent of a live cache's region is in that cache's
 * heap, one of an orphan in none; bins[c].carved + class rgn_blocks sums blocks carved and not
 * returned (a remote free subtracts from rgn_blocks at once); a region block is never lent.
 * Lock rule: heap, links and tags of a region are written by its owner's thread alone, or under
 * glock once it is an orphan; a region's bytes, va_bytes and list links change under glock.
 * Tags are relaxed atomics (statistics walk them under glock while owners run).
 */
#include "pool/pool_int.h"

#include <string.h>
#include <sys/mman.h>

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

#define PG AF__POOL_PAGE_SHIFT
#define GPG (AF__POOL_GRANULE_SHIFT - AF__POOL_PAGE_SHIFT) /* pages per granule, as a shift */
#define NIL AF__POOL_NIL
#define SCAN 16 /* extents of the request's own bin looked at for a best fit */

static inline uint32_t tag(const af_pool_t *p, uint64_t pg)
{
    return atomic_load_explicit(&p->rtab[pg].tag, memory_order_relaxed);
}

static inline void set_ext(af_pool_t *p, uint64_t s, uint64_t len, uint32_t free)
{
    uint32_t v = (uint32_t)(len << 1) | free;
    atomic_store_explicit(&p->rtab[s].tag, v, memory_order_relaxed);
    atomic_store_explicit(&p->rtab[s + len - 1].tag, v, memory_order_relaxed);
}

static inline uint64_t page_of(const af_pool_t *p, const void *a)
{
    return (uint64_t)((const char *)a - p->va_base) >> PG;
}

static inline uint64_t r_lo(const af_pool_t *p, const af__pool_chunk_t *r)
{
    return page_of(p, r->base);
}

static inline uint64_t r_hi(const af_pool_t *p, const af__pool_chunk_t *r)
{
    return page_of(p, r->base) + (r->bytes >> PG);
}

/* Bin of a free extent of len pages: len below 16, then 8 bins per power of two. */
static inline unsigned xkey(uint64_t len)
{
    if (len < 16)
        return (unsigned)len;
    unsigned lg = 63u - (unsigned)__builtin_clzll(len);
    return 8u * (lg - 3u) + (unsigned)(len >> (lg - 3u));
}

/* ---- free extents (owner, or glock for an orphan: h == NULL keeps tags only) ------------- */

static void x_link(af_pool_t *p, af__pool_heap_t *h, uint64_t s, uint64_t len)
{
    set_ext(p, s, len, 1);
    if (!h)
        return;
    unsigned key = xkey(len);
    af__pool_page_t *e = &p->rtab[s];
    e->prev = NIL;
    e->next = h->head[key];
    if (e->next != NIL)
        p->rtab[e->next].prev = (uint32_t)s;
    h->head[key] = (uint32_t)s;
    h->map[key >> 6] |= 1ull << (key & 63);
}

static void x_unlink(af_pool_t *p, af__pool_heap_t *h, uint64_t s, uint64_t len)
{
    if (!h)
        return;
    unsigned key = xkey(len);
    af__pool_page_t *e = &p->rtab[s];
    if (e->prev != NIL)
        p->rtab[e->prev].next = e->next;
    else if ((h->head[key] = e->next) == NIL)
        h->map[key >> 6] &= ~(1ull << (key & 63));
    if (e->next != NIL)
        p->rtab[e->next].prev = e->prev;
}

/* Carves n pages: best fit among the first SCAN extents of n's bin, else the first extent of the
 * next non-empty bin (all longer). Returns the first page, or NIL. */
static uint64_t x_take(af_pool_t *p, af__pool_heap_t *h, uint64_t n)
{
    unsigned key = xkey(n);
    uint64_t best = NIL, blen = 0;
    int scan = 0;
    for (uint32_t s = h->head[key]; s != NIL && scan < SCAN; s = p->rtab[s].next, scan++) {
        uint64_t len = tag(p, s) >> 1;
        if (len >= n && (best == NIL || len < blen)) {
            best = s;
            blen = len;
            if (len == n)
                break;
        }
    }
    for (unsigned w = (key + 1) >> 6; best == NIL && w < AF__POOL_XBINS / 64; w++) {
        uint64_t m = h->map[w];
        if (w == (key + 1) >> 6)
            m &= ~0ull << ((key + 1) & 63);
        if (m) {
            best = h->head[w * 64 + (unsigned)__builtin_ctzll(m)];
            blen = tag(p, best) >> 1;
        }
    }
    if (best == NIL)
        return NIL;
    x_unlink(p, h, best, blen);
    if (blen > n)
        x_link(p, h, best + n, blen - n);
    set_ext(p, best, n, 0);
    return best;
}

/* Returns the extent starting at page s to the free ones, merged with free neighbours. */
static void x_put(af_pool_t *p, af__pool_heap_t *h, const af__pool_chunk_t *r, uint64_t s)
{
    uint64_t len = tag(p, s) >> 1, lo = r_lo(p, r), hi = r_hi(p, r);
    if (s + len < hi) {
        uint32_t t = tag(p, s + len);
        if (t & 1) {
            x_unlink(p, h, s + len, t >> 1);
            len += t >> 1;
        }
    }
    if (s > lo) {
        uint32_t t = tag(p, s - 1);
        if (t & 1) {
            uint64_t l = t >> 1;
            x_unlink(p, h, s - l, l);
            s -= l;
            len += l;
        }
    }
    x_link(p, h, s, len);
}

/* Takes the blocks other threads freed into r and returns them to the extents (k: the owner, or
 * NULL for an orphan under glock). */
static void drain(af_pool_t *p, af_pool_cache_t *k, af__pool_chunk_t *r)
{
    if (!atomic_load(&r->remote))
        return;
    af__pool_block_t *b = atomic_exchange(&r->remote, NULL);
    while (b) { /* (counted out of the class's blocks by the thread that freed it) */
        af__pool_block_t *nx = b->next;
        b->next = NULL;
        x_put(p, k ? &k->heap : NULL, r, page_of(p, b->addr));
        b = nx;
    }
}

/* ---- growth (glock) ---------------------------------------------------------------------- */

static void set_granules(af_pool_t *p, char *a, uint64_t bytes, af__pool_chunk_t *val)
{
    uint64_t g0 = (uint64_t)(a - p->va_base) >> AF__POOL_GRANULE_SHIFT;
    for (uint64_t g = g0; g < g0 + (bytes >> AF__POOL_GRANULE_SHIFT); g++) {
        p->dtab[g].addr = NULL;
        atomic_store_explicit(&p->gtab[g], val, memory_order_release);
    }
}

/* Maps `bytes` more at r's top (within its VA) and adds them to the free extents. */
static int map_top(af_pool_t *p, af__pool_heap_t *h, af__pool_chunk_t *r, uint64_t bytes)
{
    char *a = r->base + r->bytes;
    if (mmap(a, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        MAP_FAILED)
        return AF_ENOMEM;
    AF__ADD(&p->os_maps, 1);
#ifdef AF_ASAN_BUILD
    ASAN_POISON_MEMORY_REGION(a, bytes);
#endif
    AF__ADD(&p->reserved, bytes);
    af__pool_note_reserved(p);
    set_granules(p, a, bytes, r);
    uint64_t s = page_of(p, a);
    r->bytes += bytes;
    set_ext(p, s, bytes >> PG, 0);
    x_put(p, h, r, s);
    return 0;
}

static af__pool_chunk_t *desc_new(af_pool_t *p)
{
    af__pool_chunk_t *r = p->spare;
    if (r) {
        p->spare = r->hnext;
        return r;
    }
    if (af__grow((void **)&p->chunks, &p->cap_chunks, p->nchunks + 1, sizeof(p->chunks[0])))
        return NULL;
    if (!(r = af__calloc(1, sizeof(*r))))
        return NULL;
    p->chunks[p->nchunks++] = r;
    AF__ADD(&p->metadata, sizeof(*r));
    return r;
}

/* A new region for k with VA for at least `bytes` (nothing mapped yet). */
static af__pool_chunk_t *region_new(af_pool_t *p, af_pool_cache_t *k, uint64_t bytes)
{
    uint64_t span = bytes > p->region_span ? bytes : p->region_span, start;
    if (af__pool_va_take(p, span >> AF__POOL_GRANULE_SHIFT, &start)) {
        span = bytes; /* the reservation is tight: just what is needed */
        if (af__pool_va_take(p, span >> AF__POOL_GRANULE_SHIFT, &start))
            return NULL;
    }
    af__pool_chunk_t *r = desc_new(p);
    if (!r) {
        af__pool_va_give(p, start, span >> AF__POOL_GRANULE_SHIFT);
        return NULL;
    }
    r->base = p->va_base + (start << AF__POOL_GRANULE_SHIFT);
    r->bytes = 0;
    r->va_bytes = span;
    r->bs = r->inv = 0;
    r->nblocks = r->nfree = 0;
    r->cls = AF__POOL_REGION;
    r->mapped = 1;
    r->dt = 1; /* block descriptors in dtab */
    r->idle_since = 0;
    r->hnext = NULL;
    AF__ST(&r->req, 0);
    atomic_store(&r->remote, NULL);
    atomic_store(&r->owner, k);
    r->rnext = k->regions;
    k->regions = r;
    return r;
}

/* Orphaned regions become k's: their free extents go into k's heap. */
static void adopt(af_pool_t *p, af_pool_cache_t *k)
{
    af__pool_chunk_t *r;
    while ((r = p->orphans)) {
        p->orphans = r->rnext;
        drain(p, NULL, r);
        uint64_t hi = r_hi(p, r);
        for (uint64_t s = r_lo(p, r); s < hi;) {
            uint32_t t = tag(p, s);
            if (!(t >> 1))
                break; /* cannot happen: the extents cover the mapped pages */
            if (t & 1)
                x_link(p, &k->heap, s, t >> 1);
            s += t >> 1;
        }
        atomic_store(&r->owner, k);
        /* behind the newest region: that one keeps growing */
        if (k->regions) {
            r->rnext = k->regions->rnext;
            k->regions->rnext = r;
        } else {
            r->rnext = NULL;
            k->regions = r;
        }
    }
}

/* Makes room for n more pages in k's regions: adopts orphans, else maps at the newest region's
 * top (the free top extent counts), growing its VA in place when the pool's bump pointer is at
 * its end, else in a new region. Takes glock. */
static int grow(af_pool_cache_t *k, uint64_t n)
{
    af_pool_t *p = k->pool;
    int rc = 0;
    af__pool_glock(p);
    if (p->orphans) {
        adopt(p, k);
        af__pool_gunlock(p);
        return 0;
    }
    af__pool_chunk_t *r = k->regions;
    uint64_t f = 0;
    if (r && r->bytes) {
        uint32_t t = tag(p, r_hi(p, r) - 1);
        f = t & 1 ? t >> 1 : 0;
    }
    /* at least 1/32 of what the region maps (at most 2 MiB): fewer OS calls while it grows */
    uint64_t step = r ? r->bytes / 32 : 0;
    step = step > (2u << 20) ? (2u << 20) : step;
    uint64_t need = (n > f ? n - f : 0) << PG;
    uint64_t bytes = af__align_up(need > step ? need : step, AF__POOL_GRANULE);
    if (r && r->bytes + bytes > r->va_bytes) {
        uint64_t end = (uint64_t)(r->base + r->va_bytes - p->va_base) >> AF__POOL_GRANULE_SHIFT;
        uint64_t more = (r->bytes + bytes - r->va_bytes) >> AF__POOL_GRANULE_SHIFT;
        if (end == p->va_bump && p->va_bump + more <= p->ngranules) {
            p->va_bump += more;
            r->va_bytes += more << AF__POOL_GRANULE_SHIFT;
        } else {
            r = NULL;
        }
    }
    if (!r) {
        bytes = af__align_up(n << PG, AF__POOL_GRANULE);
        r = region_new(p, k, bytes);
    }
    rc = r ? map_top(p, &k->heap, r, bytes) : AF_ENOMEM;
    af__pool_gunlock(p);
    return rc;
}

/* ---- the cache's side ---------------------------------------------------------------------- */

/* Carves n pages for k: the order of the file comment. Returns the block's descriptor (its
 * address set), or NULL when the pool cannot grow. */
static af__pool_block_t *carve(af_pool_cache_t *k, uint64_t n)
{
    af_pool_t *p = k->pool;
    for (af__pool_chunk_t *r = k->regions; r; r = r->rnext)
        drain(p, k, r);
    uint64_t s = x_take(p, &k->heap, n);
    if (s == NIL) { /* what the bins hold may coalesce into room */
        for (uint32_t d = p->region_first; d < p->nclasses; d++)
            if (AF__LD(&k->bins[d].n))
                af__pool_bin_flush(k, d, UINT32_MAX);
        s = x_take(p, &k->heap, n);
    }
    for (int tries = 0; s == NIL; tries++) {
        if (tries == 3 || grow(k, n))
            return NULL;
        AF__ST(&k->slow_allocs, AF__LD(&k->slow_allocs) + 1);
        s = x_take(p, &k->heap, n);
    }
    af__pool_block_t *b = &p->dtab[s >> GPG];
    b->addr = p->va_base + (s << PG);
    b->prev = b->next = NULL;
    return b;
}

int af__pool_region_alloc(af_pool_cache_t *k, uint32_t c, uint64_t size, af__pool_block_t **out)
{
    (void)size;
    af_pool_t *p = k->pool;
    uint64_t n = (((uint64_t)p->units[c] << 8) + (1u << PG) - 1) >> PG; /* units: a hot line */
    af__pool_block_t *b = carve(k, n);
    if (!b)
        return AF_ENOMEM;
    atomic_store_explicit(&b->state, k->bins[c].inuse, memory_order_relaxed);
    af__pool_bin_t *bin = &k->bins[c];
    AF__ST(&bin->carved, AF__LD(&bin->carved) + 1);
    AF__ST(&bin->moved, AF__LD(&bin->moved) + 1); /* counted as a pop (af__pool_bin_allocs) */
    *out = b;
    return 0;
}

int af__pool_region_huge(af_pool_cache_t *k, uint64_t size, af__pool_block_t **out)
{
    af__pool_block_t *b = carve(k, (size + (1u << PG) - 1) >> PG);
    if (!b)
        return AF_ENOMEM;
    atomic_store_explicit(&b->req, (uint32_t)size, memory_order_relaxed);
    atomic_store_explicit(&b->state, af__blk_state(AF_BLOCK_INUSE, AF__POOL_HUGE_CLASS, 0),
                          memory_order_relaxed); /* no tag: its free takes the general path */
    AF__ADD(&k->pool->huge_allocs, 1);
    *out = b;
    return 0;
}

uint64_t af__pool_region_bytes(const af_pool_t *p, const af__pool_block_t *b)
{
    return (uint64_t)(tag(p, page_of(p, b->addr)) >> 1) << PG;
}

void af__pool_region_put(af_pool_cache_t *k, af__pool_chunk_t *r, af__pool_block_t *b)
{
    af_pool_t *p = k->pool;
    if (atomic_load_explicit(&r->owner, memory_order_relaxed) != k) {
        af__pool_region_remote(p, r, b); /* a block of another cache's region (tag reused) */
        return;
    }
    uint32_t c = (AF__LD(&b->state) >> 8) & 0xff;
    if (c != AF__POOL_HUGE_CLASS)
        AF__ST(&k->bins[c].carved, AF__LD(&k->bins[c].carved) - 1);
    x_put(p, &k->heap, r, page_of(p, b->addr));
}

void af__pool_region_remote(af_pool_t *p, af__pool_chunk_t *r, af__pool_block_t *b)
{
    uint32_t c = (AF__LD(&b->state) >> 8) & 0xff;
    if (c != AF__POOL_HUGE_CLASS)
        AF__SUB(&p->cls[c].rgn_blocks, 1); /* no longer carved */
    af__pool_block_t *h = atomic_load_explicit(&r->remote, memory_order_relaxed);
    do
        b->next = h;
    while (!atomic_compare_exchange_weak_explicit(&r->remote, &h, b, memory_order_seq_cst,
                                                  memory_order_relaxed));
    if (atomic_load(&r->owner))
        return; /* its owner drains it on its next carve */
    af__pool_glock(p);
    if (!atomic_load_explicit(&r->owner, memory_order_relaxed))
        drain(p, NULL, r);
    af__pool_gunlock(p);
}

/* Unmaps the whole granules of r's free top extent. glock held. Returns the bytes released. */
static uint64_t trim_top(af_pool_t *p, af__pool_heap_t *h, af__pool_chunk_t *r)
{
    uint64_t hi = r_hi(p, r);
    if (!r->bytes || !(tag(p, hi - 1) & 1))
        return 0;
    uint64_t len = tag(p, hi - 1) >> 1, s = hi - len;
    uint64_t cut = af__align_up(s, 1u << GPG);
    if (cut >= hi)
        return 0;
    x_unlink(p, h, s, len);
    if (cut > s)
        x_link(p, h, s, cut - s);
    char *a = p->va_base + (cut << PG);
    uint64_t bytes = (hi - cut) << PG;
    set_granules(p, a, bytes, NULL);
#ifdef AF_ASAN_BUILD
    ASAN_UNPOISON_MEMORY_REGION(a, bytes);
#endif
    mmap(a, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    AF__ADD(&p->os_unmaps, 1);
    AF__SUB(&p->reserved, bytes);
    AF__ADD(&p->trimmed, bytes);
    r->bytes -= bytes;
    return bytes;
}

void af__pool_region_flush(af_pool_cache_t *k)
{
    af_pool_t *p = k->pool;
    int top = 0;
    for (af__pool_chunk_t *r = k->regions; r; r = r->rnext) {
        drain(p, k, r);
        top |= r->bytes && (tag(p, r_hi(p, r) - 1) & 1);
    }
    if (!top)
        return;
    af__pool_glock(p);
    for (af__pool_chunk_t *r = k->regions; r; r = r->rnext)
        trim_top(p, &k->heap, r);
    af__pool_gunlock(p);
}

void af__pool_region_orphan(af_pool_cache_t *k)
{
    af_pool_t *p = k->pool;
    for (uint32_t c = p->region_first; c < p->nclasses; c++) {
        AF__ADD(&p->cls[c].rgn_blocks, AF__LD(&k->bins[c].carved));
        AF__ST(&k->bins[c].carved, 0);
    }
    af__pool_chunk_t *r;
    while ((r = k->regions)) {
        k->regions = r->rnext;
        atomic_store(&r->owner, NULL);
        r->rnext = p->orphans;
        p->orphans = r;
        drain(p, NULL, r);
    }
}

uint64_t af__pool_region_trim(af_pool_t *p)
{
    uint64_t freed = 0;
    for (af__pool_chunk_t **pp = &p->orphans; *pp;) {
        af__pool_chunk_t *r = *pp;
        drain(p, NULL, r);
        freed += trim_top(p, NULL, r);
        if (r->bytes) {
            pp = &r->rnext;
            continue;
        }
        *pp = r->rnext; /* nothing mapped: the span goes back to the pool */
        af__pool_va_give(p, (uint64_t)(r->base - p->va_base) >> AF__POOL_GRANULE_SHIFT,
                         r->va_bytes >> AF__POOL_GRANULE_SHIFT);
        r->mapped = 0;
        r->hnext = p->spare;
        p->spare = r;
    }
    return freed;
}

int64_t af__pool_region_live(af_pool_t *p, const af__pool_chunk_t *r, uint64_t *huge)
{
    int64_t v = 0;
    uint64_t hi = r_hi(p, r);
    for (uint64_t s = r_lo(p, r); s < hi;) {
        uint32_t t = tag(p, s);
        uint64_t len = t >> 1;
        if (!len || s + len > hi)
            break; /* an owner is rewriting the tags: a snapshot ends here */
        if (!(t & 1)) {
            uint32_t st = AF__LD(&p->dtab[s >> GPG].state);
            if ((st & 0xff) == AF_BLOCK_INUSE || (st & 0xff) == AF_BLOCK_BORROWED) {
                v += (int64_t)AF__LD(&p->dtab[s >> GPG].req);
                if (huge && ((st >> 8) & 0xff) == AF__POOL_HUGE_CLASS)
                    *huge += len << PG;
            }
        }
        s += len;
    }
    return v;
}
