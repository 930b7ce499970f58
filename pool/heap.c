/*
 * Heaps: re-cutting for large requests made through a cache (opts.recut_min).
 *
 * A request above recut_min made through a cache is not rounded to a class: it is cut, to the
 * granule (16 KiB), from the free extents of the cache's heap, best fit (the smallest extent that
 * holds it, the lowest address among equals), cut from the extent's top end, or from its bottom
 * when it is the lowest extent and at most 3/4 of the block would be left (the small rest then
 * stays next to the blocks above it and coalesces with them when they are freed, instead of
 * waiting next to the bump for the heap to grow into it), and when freed its granules go back as
 * an extent coalesced with its free neighbours. Memory is shared between sizes as in a
 * general-purpose allocator, so reserved memory follows the peak of live bytes rather than the
 * peaks of each class. When no extent fits, the heap maps memory (glock): only the part its lowest
 * extent lacks when that extent starts at the heaps' bump pointer (spans grow down from the top of
 * the reservation, chunks up from its bottom), so a heap grown by one thread stays one range. A
 * block's descriptor is the granule-indexed one (dtab) at its first granule: free finds it with one
 * load, its length is in the descriptor; the span (a chunk of class AF__POOL_SPAN covering mapped
 * granules of the heap) names the heap.
 *
 * Threads: only the cache using the heap reads or writes its extents, with no lock. A block freed
 * by anything else (another cache, af_pool_free) is moved to FREE with the same compare-and-swap
 * as every block (double frees are reported), then pushed onto the heap's `remote` stack (CAS);
 * the owner takes the whole stack (one exchange) on its next heap request. Heaps belong to the
 * pool and outlive caches: a destroyed cache's heap, with its memory and extents, is adopted by
 * the next cache created. af_pool_cache_flush hands the cache's heap back to the pool (the
 * cache adopts one again at its next large request); trim and the idle policy unmap the spans of
 * heaps no cache uses that are wholly free.
 *
 * Invariants: an extent and a block in use never share a granule; the extents are sorted by
 * start and no two touch (af__pool_rl_give merges them); a FREE re-cut block is on no list or on
 * its heap's remote stack, once.
 */
#include "pool/pool_int.h"

#include <string.h>

/* Index of the smallest extent of at least n granules (the lowest among equals), or SIZE_MAX. */
static size_t heap_fit(const af__pool_heap_t *h, uint64_t n)
{
    size_t pick = SIZE_MAX;
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < h->nxt; i++) {
        uint64_t l = h->xt[i].len;
        if (l >= n && l < best) {
            if (l == n)
                return i;
            best = l;
            pick = i;
        }
    }
    return pick;
}

/* Gives granules [g, g + n) back to the heap's extents, merged with the ones it touches. */
static void heap_give(af__pool_heap_t *h, uint64_t g, uint64_t n)
{
    size_t lo = 0, hi = h->nxt; /* first extent starting after g */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->xt[mid].start < g)
            lo = mid + 1;
        else
            hi = mid;
    }
    af__pool_range_t *x = h->xt;
    int prev = lo > 0 && x[lo - 1].start + x[lo - 1].len == g;
    int next = lo < h->nxt && g + n == x[lo].start;
    if (prev && next) {
        x[lo - 1].len += n + x[lo].len;
        memmove(&x[lo], &x[lo + 1], (h->nxt - lo - 1) * sizeof(*x));
        h->nxt--;
    } else if (prev) {
        x[lo - 1].len += n;
    } else if (next) {
        x[lo].start = g;
        x[lo].len += n;
    } else if (af__grow((void **)&h->xt, &h->cap_xt, h->nxt + 1, sizeof(*x)) == 0) {
        x = h->xt;
        memmove(&x[lo + 1], &x[lo], (h->nxt - lo) * sizeof(*x));
        x[lo] = (af__pool_range_t){g, n};
        h->nxt++;
    } /* else no memory for the list: the range stays unused until the pool is destroyed */
}

/* Gives the top block of k's bin g back to its heap's extents. */
static void hbin_unbin(af_pool_cache_t *k, uint64_t g)
{
    af_pool_t *p = k->pool;
    uint32_t n = AF__LD(&k->hn[g]);
    af__pool_block_t *b = k->hslots[g * AF__POOL_HBIN_CAP + n - 1];
    AF__ST(&k->hn[g], n - 1);
    AF__ST(&k->hb_flushed, AF__LD(&k->hb_flushed) + 1);
    af__pool_heap_free(p, k, af__pool_chunk_of(p, b), b);
}

/* Takes every block other threads freed back into the extents. */
static void heap_take_remote(af_pool_t *p, af__pool_heap_t *h)
{
    af__pool_block_t *b = atomic_exchange_explicit(&h->remote, NULL, memory_order_acquire);
    while (b) {
        af__pool_block_t *nx = b->next;
        uint64_t g = (uint64_t)(b->addr - p->va_base) >> AF__POOL_GRANULE_SHIFT;
        heap_give(h, g, AF__LD(&b->ngran));
        b = nx;
    }
}

/* Maps at least n more granules for the heap (glock). */
static int heap_grow(af_pool_t *p, af__pool_heap_t *h, uint64_t n)
{
    uint64_t ls = 0, ll = 0, s, m;
    if (h->nxt) { /* the lowest extent: grown downwards when it starts at the heaps' bump */
        ls = h->xt[0].start;
        ll = h->xt[0].len;
    }
    af__pool_glock(p);
    int64_t live = af__pool_live_req(p); /* the peak matters as we grow */
    af__pool_note_peak(p, live > 0 ? (uint64_t)live : 0);
    int rc = af__pool_span_new(p, h, ls, ll, n, &s, &m);
    af__pool_gunlock(p);
    if (rc)
        return rc;
    heap_give(h, s, m);
    return heap_fit(h, n) == SIZE_MAX ? AF_ENOMEM : 0; /* no room in the list: lost, see above */
}

/* Adopts a heap for cache k (glock). */
static int heap_attach(af_pool_cache_t *k)
{
    af__pool_glock(k->pool);
    int rc = af__pool_heap_adopt(k->pool, &k->heap);
    af__pool_gunlock(k->pool);
    return rc;
}

/* Splits the smallest binned block of k longer than n granules (of k's heap): its top n granules
 * become the new block at *g, the rest stays binned (or goes to the extents when its bin is
 * full). 0 when no bin holds one. */
static int hbin_split(af_pool_cache_t *k, af__pool_heap_t *h, uint64_t n, uint64_t *g)
{
    af_pool_t *p = k->pool;
    for (uint64_t d = n; d < k->hbin_max; d++) { /* bin d holds blocks of d + 1 > n granules */
        uint32_t cnt = AF__LD(&k->hn[d]);
        if (!cnt)
            continue;
        af__pool_block_t *b = k->hslots[d * AF__POOL_HBIN_CAP + cnt - 1];
        if (af__pool_chunk_of(p, b)->heap != h)
            return 0; /* of a heap this cache held before: left to the flush */
        uint64_t s = (uint64_t)(b->addr - p->va_base) >> AF__POOL_GRANULE_SHIFT, rest = d + 1 - n;
        AF__ST(&k->hn[d], cnt - 1);
        *g = s + rest;
        uint32_t m = AF__LD(&k->hn[rest - 1]);
        AF__ST(&b->ngran, rest);
        if (m < AF__POOL_HBIN_CAP) { /* the rest stays binned: `binned` is unchanged */
            k->hslots[(rest - 1) * AF__POOL_HBIN_CAP + m] = b;
            AF__ST(&k->hn[rest - 1], m + 1);
        } else { /* to the extents, counted as a flush */
            AF__ST(&k->hb_flushed, AF__LD(&k->hb_flushed) + 1);
            AF__ST(&h->frees, AF__LD(&h->frees) + 1);
            heap_give(h, s, rest);
        }
        return 1;
    }
    return 0;
}

/* Where n granules are cut for a request of cache k: the smallest free extent that holds them;
 * else a larger binned block split; else every binned block given back (coalesced) and the extents
 * again; else the heap grows. Sets *g to the first granule. */
static int heap_find(af_pool_cache_t *k, af__pool_heap_t *h, uint64_t n, uint64_t *g)
{
    size_t i = heap_fit(h, n);
    if (i == SIZE_MAX && hbin_split(k, h, n, g))
        return 0;
    if (i == SIZE_MAX && k->hbin_max) {
        af__pool_hbin_flush(k, 0);
        i = heap_fit(h, n);
    }
    if (i == SIZE_MAX) {
        AF__ST(&h->grows, AF__LD(&h->grows) + 1);
        int rc = heap_grow(k->pool, h, n);
        if (rc)
            return rc;
        i = heap_fit(h, n);
    }
    af__pool_range_t *x = &h->xt[i];
    if (i == 0 && 4 * x->len <= 7 * n) { /* the lowest extent, little left over: the bottom */
        *g = x->start;
        x->start += n;
    } else { /* the top */
        *g = x->start + x->len - n;
    }
    x->len -= n;
    if (x->len == 0) {
        memmove(&h->xt[i], &h->xt[i + 1], (h->nxt - i - 1) * sizeof(h->xt[0]));
        h->nxt--;
    }
    return 0;
}

int af__pool_heap_alloc(af_pool_cache_t *k, size_t size, void **out)
{
    af_pool_t *p = k->pool;
    if (!k->heap && heap_attach(k))
        return AF_ENOMEM;
    af__pool_heap_t *h = k->heap;
    uint64_t bytes = af__align_up(size, AF__POOL_GRANULE);
    if (bytes < size || size == 0)
        return size ? AF_ESIZE : AF_EINVAL;
    uint64_t n = bytes >> AF__POOL_GRANULE_SHIFT;
    if (atomic_load_explicit(&h->remote, memory_order_relaxed))
        heap_take_remote(p, h);
    uint64_t g;
    int rc = heap_find(k, h, n, &g);
    if (rc)
        return rc;
    af__pool_block_t *b = &p->dtab[g];
    AF__ST(&b->ngran, n);
    b->next = NULL;
    /* the request as counted (capped at 4 GiB: the word is 32 bits) is what free subtracts */
    uint32_t rq = (uint32_t)(size < UINT32_MAX ? size : UINT32_MAX);
    atomic_store_explicit(&b->req, rq, memory_order_relaxed);
    atomic_store_explicit(
        &b->state, af__blk_tagged(af__blk_state(AF_BLOCK_INUSE, AF__POOL_HEAP_CLASS, 0), k->tag),
        memory_order_relaxed);
    b->addr = p->va_base + (g << AF__POOL_GRANULE_SHIFT);
    AF__ST(&h->allocs, AF__LD(&h->allocs) + 1);
    if (k->flags) { /* poison, exact peak, ASan */
        af__pool_exact_live(p, (int64_t)rq);
        af__pool_on_alloc(p, b->addr, size);
    }
    *out = b->addr;
    return 0;
}

void af__pool_heap_free(af_pool_t *p, af_pool_cache_t *k, af__pool_chunk_t *ch, af__pool_block_t *b)
{
    af__pool_heap_t *h = ch->heap;
    uint64_t n = AF__LD(&b->ngran);
    int64_t req = (int64_t)AF__LD(&b->req), bytes = (int64_t)(n << AF__POOL_GRANULE_SHIFT);
    if (!k || k->flags) { /* poison, exact peak, ASan: as alloc, only then (a cache's flags) */
        af__pool_exact_live(p, -req);
        af__pool_on_free(p, b->addr, (uint64_t)bytes);
    }
    if (k && k->heap == h) {
        AF__ST(&h->frees, AF__LD(&h->frees) + 1);
        heap_give(h, (uint64_t)(b->addr - p->va_base) >> AF__POOL_GRANULE_SHIFT, n);
        return;
    }
    AF__ADD(&h->rfrees, 1);
    af__pool_block_t *top = atomic_load_explicit(&h->remote, memory_order_relaxed);
    do
        b->next = top;
    while (!atomic_compare_exchange_weak_explicit(&h->remote, &top, b, memory_order_release,
                                                  memory_order_relaxed));
}

/* Removes granules [g, g + n) from the extents when one extent holds them all. 0: not free. */
static int heap_cut(af__pool_heap_t *h, uint64_t g, uint64_t n)
{
    for (size_t i = 0; i < h->nxt; i++) {
        af__pool_range_t *x = &h->xt[i];
        if (x->start > g || x->start + x->len < g + n)
            continue;
        uint64_t tail = x->start + x->len - (g + n);
        if (x->start == g && tail == 0) {
            memmove(x, x + 1, (h->nxt - i - 1) * sizeof(*x));
            h->nxt--;
        } else if (x->start == g) {
            x->start += n;
            x->len -= n;
        } else if (tail == 0) {
            x->len -= n;
        } else {
            if (af__grow((void **)&h->xt, &h->cap_xt, h->nxt + 1, sizeof(*x)))
                return 0; /* cannot split: the span stays */
            x = &h->xt[i];
            memmove(x + 2, x + 1, (h->nxt - i - 1) * sizeof(*x));
            x[1] = (af__pool_range_t){g + n, tail};
            x->len = g - x->start;
            h->nxt++;
        }
        return 1;
    }
    return 0;
}

uint64_t af__pool_heap_trim(af_pool_t *p)
{
    uint64_t freed = 0;
    for (af__pool_heap_t *h = p->heaps; h; h = h->next)
        if (!h->adopted)
            heap_take_remote(p, h);
    for (size_t i = 0; i < p->nchunks; i++) {
        af__pool_chunk_t *ch = p->chunks[i];
        if (!ch->mapped || ch->cls != AF__POOL_SPAN || ch->heap->adopted)
            continue;
        uint64_t g = (uint64_t)(ch->base - p->va_base) >> AF__POOL_GRANULE_SHIFT;
        uint64_t n = ch->bytes >> AF__POOL_GRANULE_SHIFT;
        if (!heap_cut(ch->heap, g, n))
            continue;
        for (uint64_t j = g; j < g + n; j++) /* no stale block start may outlive the span */
            p->dtab[j].addr = NULL;
        AF__SUB(&ch->heap->spans_bytes, ch->bytes);
        freed += ch->bytes;
        af__pool_chunk_release(p, ch);
    }
    return freed;
}

int af__pool_heap_adopt(af_pool_t *p, af__pool_heap_t **out)
{
    af__pool_heap_t *h = p->heaps;
    while (h && h->adopted)
        h = h->next;
    if (!h) {
        h = af__calloc(1, sizeof(*h));
        if (!h)
            return AF_ENOMEM;
        h->next = p->heaps;
        p->heaps = h;
        AF__ADD(&p->metadata, sizeof(*h));
    }
    h->adopted = 1;
    heap_take_remote(p, h); /* what was freed while nobody used it */
    *out = h;
    return 0;
}

void af__pool_heap_release(af_pool_t *p, af__pool_heap_t *h)
{
    heap_take_remote(p, h);
    h->adopted = 0;
}

void af__pool_heap_destroy_all(af_pool_t *p)
{
    while (p->heaps) {
        af__pool_heap_t *h = p->heaps;
        p->heaps = h->next;
        af__free(h->xt);
        af__free(h);
    }
}

void af__pool_hbin_flush(af_pool_cache_t *k, int retire)
{
    af_pool_t *p = k->pool;
    for (uint64_t g = 0; g < AF__POOL_HBINS; g++)
        while (AF__LD(&k->hn[g]))
            hbin_unbin(k, g);
    if (!retire)
        return;
    AF__ADD(&p->retired_hb, AF__LD(&k->hb_pushes) - AF__LD(&k->hb_flushed));
    AF__ST(&k->hb_pushes, 0);
    AF__ST(&k->hb_flushed, 0);
}

/* Bytes and requested bytes of the re-cut blocks in use: a block's descriptor is at its first
 * granule, in use and of the heap class only while it is (stale descriptors inside free or other
 * blocks say FREE), so the spans' granules are walked block by block. Relaxed reads: a snapshot. */
static void heap_sum_live(af_pool_t *p, af__pool_heap_sum_t *sum)
{
    for (size_t i = 0; i < p->nchunks; i++) {
        af__pool_chunk_t *ch = p->chunks[i];
        if (!ch->mapped || ch->cls != AF__POOL_SPAN)
            continue;
        uint64_t g = (uint64_t)(ch->base - p->va_base) >> AF__POOL_GRANULE_SHIFT;
        uint64_t end = g + (ch->bytes >> AF__POOL_GRANULE_SHIFT);
        while (g < end) {
            af__pool_block_t *b = &p->dtab[g];
            uint32_t st = AF__LD(&b->state), kind = af__blk_kind(st);
            uint64_t n = AF__LD(&b->ngran);
            if (kind == AF_BLOCK_FREE || af__blk_owner(st) != AF__POOL_HEAP_CLASS || n == 0) {
                g++;
                continue;
            }
            sum->bytes += n << AF__POOL_GRANULE_SHIFT;
            sum->req += (int64_t)AF__LD(&b->req);
            g += n;
        }
    }
}

void af__pool_heap_totals(af_pool_t *p, af__pool_heap_sum_t *sum)
{
    memset(sum, 0, sizeof(*sum));
    /* blocks popped from and pushed to caches' bins: pops = pushes - flushed - still binned */
    uint64_t hb = AF__LD(&p->retired_hb);
    for (af_pool_cache_t *q = p->caches; q; q = q->next) {
        uint64_t binned = 0;
        for (uint64_t g = 0; g < AF__POOL_HBINS; g++)
            binned += AF__LD(&q->hn[g]);
        uint64_t moved = AF__LD(&q->hb_pushes) - AF__LD(&q->hb_flushed);
        hb += moved;
        sum->allocs += moved - binned;
        sum->fast_allocs += moved - binned;
    }
    sum->frees = sum->fast_frees = hb;
    sum->allocs += AF__LD(&p->retired_hb);
    sum->fast_allocs += AF__LD(&p->retired_hb);
    for (af__pool_heap_t *h = p->heaps; h; h = h->next) {
        sum->allocs += AF__LD(&h->allocs);
        sum->frees += AF__LD(&h->frees) + AF__LD(&h->rfrees);
        sum->fast_allocs += AF__LD(&h->allocs) - AF__LD(&h->grows);
        sum->fast_frees += AF__LD(&h->frees);
    }
    heap_sum_live(p, sum);
}
