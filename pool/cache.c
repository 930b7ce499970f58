/*
 * Per-worker caches (the lock-free fast path) and the cache-less calls.
 *
 * A cache holds, per class, a stack of free blocks (capacity cache_cap: cache_slots, at most
 * cache_bytes per class, at least 2) and a bitmap of its non-empty stacks. alloc pops from the
 * class's stack, or, when that is empty, from the nearest non-empty larger stack within
 * borrow_near (one ctz on the bitmap; the block is marked BORROWED and goes back to its owner's
 * stack when freed), and stores INUSE/BORROWED plus the cache's tag in the block's state word.
 * No lock and no atomic read-modify-write on either path.
 *
 * The fast paths keep one counter (a bin's frees); blocks handed out are derived from it and the
 * bin's moves (af__pool_bin_allocs), lent blocks still out are counted by a state scan in
 * af_pool_stats. Size -> class is a branch-free key into the lookup table.
 *
 * Free finds a block of a granule or more with one load: its descriptor sits in the pool's
 * granule-indexed descriptor table (dtab) at the granule it starts in, and matches only when its
 * address is the pointer; a smaller block is found through its chunk (granule table, one
 * multiply). A block whose state word carries this cache's tag was handed out by this cache: the
 * state word names its owner class, the state is moved to FREE with a plain (relaxed) store and
 * the block pushed onto that OWNER class's stack. Every other free (another cache's block, a
 * block from af_pool_alloc, a huge chunk, or a state without a tag: FREE blocks never carry one)
 * moves the state word INUSE/BORROWED -> FREE with a compare-and-swap.
 *
 * Double frees: a second free of a block always finds the state FREE (untagged) and is reported
 * as AF_EDOUBLEFREE, whichever thread or cache makes it, as long as it is ordered after the
 * first (the same thread, or any synchronisation between the two threads). Two frees of the same
 * block racing on two threads are a use-after-free in the caller; they are still arbitrated by
 * the CAS (one wins, one is reported) unless one of them is the plain free of the allocating
 * cache, which would have to pay a locked instruction on every free to arbitrate that race too.
 * Pools with poison or exact_peak, and ASan builds, take the CAS on every free.
 *
 * Requests above recut_min (pool/heap.c) skip the classes: they are re-cut from the cache's heap,
 * adopted at the first such request and handed back to the pool by flush and destroy; a re-cut
 * block this cache handed out carries its tag and class byte AF__POOL_HEAP_CLASS, and is freed
 * with a plain store too (cache_free_heap).
 *
 * Misses, in order: (1) lend from a larger class in this same cache (above), (2) take a batch from
 * the class's central list (class lock), (3) af__pool_alloc_slow: borrow from a larger central
 * list or map a chunk (global mutex). A full stack hands `batch` blocks back to the central list
 * (class lock). Blocks freed through a cache may have been allocated by any other cache or by
 * af_pool_alloc: a block belongs to its class, not to a cache.
 *
 * Invariants: bins[c] holds only FREE blocks of class c; a block in a bin is in no central list;
 * bit c of `full` is set iff bins[c].n > 0; a FREE state word carries no tag.
 * Lock rule: the cache itself is single-threaded; counters other threads read are relaxed
 * atomics with one writer. Class locks are taken without glock held (ranks in common_int.h).
 */
#include "pool/pool_int.h"

#include <string.h>

#if defined(__GNUC__)
#define AF__LIKELY(x) __builtin_expect(!!(x), 1)
#define AF__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define AF__COLD __attribute__((noinline, cold))
#define AF__NOINLINE __attribute__((noinline))
#define AF__INLINE __attribute__((always_inline))
#else
#define AF__NOINLINE
#define AF__INLINE
#define AF__LIKELY(x) (x)
#define AF__UNLIKELY(x) (x)
#define AF__COLD
#endif

#define HSLOTS_BYTES (AF__POOL_HBINS * AF__POOL_HBIN_CAP * sizeof(af__pool_block_t *))

/* Keeps the non-empty-bin bitmap in step with bins[c].n. */
static inline void bin_mark(af_pool_cache_t *k, uint32_t c, uint32_t n)
{
    uint64_t bit = 1ull << (c & 63);
    if (n)
        k->full[c >> 6] |= bit;
    else
        k->full[c >> 6] &= ~bit;
}

/* The smallest class d in (c, last] whose bin holds a block, or -1. */
static inline AF__INLINE int next_full(const af_pool_cache_t *k, uint32_t c, uint32_t last)
{
    for (uint32_t w = (c + 1) >> 6; w < 2 && w <= (last >> 6); w++) {
        uint64_t m = k->full[w];
        if (w == (c + 1) >> 6)
            m &= ~0ull << ((c + 1) & 63);
        if (m) {
            uint32_t d = w * 64 + (uint32_t)__builtin_ctzll(m);
            return d <= last ? (int)d : -1;
        }
    }
    return -1;
}

int af_pool_cache_create(af_pool_t *p, af_pool_cache_t **out)
{
    if (!p || !out)
        return AF_EINVAL;
    af_pool_cache_t *k = af__calloc(1, sizeof(*k) + p->nclasses * sizeof(k->bins[0]));
    if (!k)
        return AF_ENOMEM;
    k->pool = p;
    k->max_size = p->max_size;
    k->va_base = p->va_base;
    k->ngranules = p->ngranules;
    k->gtab = p->gtab;
    k->dtab = p->dtab;
    memcpy(k->lut, p->lut, sizeof(k->lut));
#if defined(AF_ASAN_BUILD)
    k->flags = 1; /* poison/unpoison every block */
#else
    k->flags = p->poison || p->exact_peak;
#endif
    size_t total = 0;
    for (uint32_t c = 0; c < p->nclasses; c++)
        total += p->cls[c].cache_cap;
    af__pool_slot_t *slots = af__malloc(total * sizeof(*slots));
    int bins = p->opts.recut_min && p->opts.recut_bins;
    k->hslots = bins ? af__malloc(HSLOTS_BYTES) : NULL;
    if (!slots || (bins && !k->hslots)) {
        af__free(slots);
        af__free(k->hslots);
        af__free(k);
        return AF_ENOMEM;
    }
    for (uint32_t c = 0; c < p->nclasses; c++) {
        k->bins[c].slots = slots;
        k->bins[c].cap = p->cls[c].cache_cap;
        k->bins[c].near = p->cls[c].borrow_near;
        slots += p->cls[c].cache_cap;
    }
    af__pool_glock(p);
    for (uint32_t t = 1; t < AF__POOL_NTAGS && !k->tag; t++)
        if (!(p->tags_used[t / 64] & (1ull << (t % 64)))) {
            p->tags_used[t / 64] |= 1ull << (t % 64);
            k->tag = t;
        }
    /* Without a tag or in a debug mode nothing matches `owned` (a FREE block carries no tag)
     * and every free takes the general path; the size table must be exact for the fast path. */
    k->fast_max = !k->flags && p->lut_exact ? p->max_size : 0;
    k->recut_min = p->opts.recut_min; /* the heap is adopted at the first such request */
    if (k->recut_min && k->fast_max > k->recut_min)
        k->fast_max = k->recut_min;
    k->owned = !k->flags && k->tag ? k->tag << AF__POOL_TAG_SHIFT : UINT32_MAX;
    /* bins of re-cut blocks: only where the fast path sends every request above recut_min */
    if (k->hslots && k->owned != UINT32_MAX && k->fast_max == k->recut_min)
        k->hbin_max = AF__POOL_HBINS;
    k->hinuse = af__blk_tagged(af__blk_state(AF_BLOCK_INUSE, AF__POOL_HEAP_CLASS, 0), k->tag);
    for (uint32_t c = 0; c < p->nclasses; c++)
        k->bins[c].inuse = af__blk_tagged(af__blk_state(AF_BLOCK_INUSE, c, 0), k->tag);
    k->next = p->caches;
    if (p->caches)
        p->caches->prev = k;
    p->caches = k;
    AF__ADD(&p->metadata, sizeof(*k) + p->nclasses * sizeof(k->bins[0]) + total * sizeof(*slots) +
                              (k->hslots ? HSLOTS_BYTES : 0));
    af__pool_gunlock(p);
    *out = k;
    return 0;
}

/* Returns the top `count` blocks of bins[c] to the central list. */
void af__pool_bin_flush(af_pool_cache_t *k, uint32_t c, uint32_t count)
{
    af_pool_t *p = k->pool;
    af__pool_bin_t *bin = &k->bins[c];
    uint32_t n = AF__LD(&bin->n);
    count = count < n ? count : n;
    if (!count)
        return;
    af__pool_clock(p, c);
    for (uint32_t i = 0; i < count; i++)
        af__pool_central_push(p, c, bin->slots[n - 1 - i].b);
    af__pool_cunlock(p, c);
    AF__ST(&bin->n, n - count);
    AF__ST(&bin->moved, AF__LD(&bin->moved) - count);
    bin_mark(k, c, n - count);
}

void af_pool_cache_flush(af_pool_cache_t *k)
{
    if (!k)
        return;
    for (uint32_t c = 0; c < k->pool->nclasses; c++)
        af__pool_bin_flush(k, c, UINT32_MAX);
    for (int i = 0; i < AF__POOL_CACHE_HUGE; i++)
        if (k->huge[i]) {
            af__pool_huge_return(k->pool, k->huge[i]);
            k->huge[i] = NULL;
        }
    af__pool_glock(k->pool);
    af__pool_hbin_flush(k, 1); /* every binned block back to its heap first */
    if (k->heap) {             /* back to the pool, where trim sees it; adopted again when needed */
        af__pool_heap_release(k->pool, k->heap);
        k->heap = NULL;
    }
    af__pool_gunlock(k->pool);
    af__pool_idle_tick(k->pool);
}

void af_pool_cache_destroy(af_pool_cache_t *k)
{
    if (!k)
        return;
    af_pool_t *p = k->pool;
    af_pool_cache_flush(k);
    af__pool_glock(p);
    if (k->prev)
        k->prev->next = k->next;
    else
        p->caches = k->next;
    if (k->next)
        k->next->prev = k->prev;
    if (k->tag)
        p->tags_used[k->tag / 64] &= ~(1ull << (k->tag % 64));
    if (k->heap)
        af__pool_heap_release(p, k->heap);
    uint64_t a = 0, f = 0;
    for (uint32_t c = 0; c < p->nclasses; c++) {
        AF__ADD(&p->cls[c].allocs, af__pool_bin_allocs(&k->bins[c]));
        AF__ADD(&p->cls[c].frees, AF__LD(&k->bins[c].frees));
        uint64_t lent = AF__LD(&k->bins[c].lent);
        AF__ADD(&p->cls[c].lent_total, lent);
        AF__ADD(&p->borrows, lent);
        a += af__pool_bin_allocs(&k->bins[c]);
        f += AF__LD(&k->bins[c].frees);
    }
    AF__ADD(&p->retired_fast_allocs, a - AF__LD(&k->slow_allocs));
    AF__ADD(&p->retired_fast_frees, f - AF__LD(&k->slow_frees));
    size_t total = 0;
    for (uint32_t c = 0; c < p->nclasses; c++)
        total += k->bins[c].cap;
    AF__SUB(&p->metadata, sizeof(*k) + p->nclasses * sizeof(k->bins[0]) +
                              total * sizeof(af__pool_slot_t) + (k->hslots ? HSLOTS_BYTES : 0));
    af__pool_gunlock(p);
    af__free(k->hslots);
    af__free(k->bins[0].slots);
    af__free(k);
}

static inline void live_add(af_pool_cache_t *k, int64_t d)
{
    af__pool_exact_live(k->pool, d);
}

/* Cache miss for class c: see the file comment for the order of the sources. */
static int cache_miss(af_pool_cache_t *k, uint32_t c, uint64_t size, af__pool_block_t **out)
{
    af_pool_t *p = k->pool;
    af__pool_class_t *cls = &p->cls[c];
    af__pool_block_t *b = NULL;
    int d = next_full(k, c, cls->borrow_near);
    if (d >= 0) { /* lend a block of a larger class from this cache: no lock */
        af__pool_bin_t *bd = &k->bins[d];
        uint32_t n = AF__LD(&bd->n);
        b = bd->slots[n - 1].b;
        AF__ST(&bd->n, n - 1);
        if (n == 1)
            bin_mark(k, (uint32_t)d, 0);
        atomic_store_explicit(
            &b->state, af__blk_tagged(af__blk_state(AF_BLOCK_BORROWED, (uint32_t)d, c), k->tag),
            memory_order_relaxed);
        AF__ST(&bd->lent, AF__LD(&bd->lent) + 1);
        *out = b;
        return 0;
    }
    AF__ST(&k->slow_allocs, AF__LD(&k->slow_allocs) + 1);
    af__pool_bin_t *bin = &k->bins[c];
    uint32_t got = 0;
    af__pool_clock(p, c);
    while (got < cls->batch) {
        af__pool_block_t *x = af__pool_central_pop(p, c);
        if (!x)
            break;
        bin->slots[got++] = (af__pool_slot_t){x};
    }
    af__pool_cunlock(p, c);
    AF__ST(&bin->moved, AF__LD(&bin->moved) + got);
    if (got) {
        b = bin->slots[--got].b;
        AF__ST(&bin->n, got);
        bin_mark(k, c, got);
        atomic_store_explicit(&b->state, bin->inuse, memory_order_relaxed);
        *out = b;
        return 0;
    }
    int rc = af__pool_alloc_slow(p, c, size, &b);
    if (rc == 0) { /* ours alone now: tag it so this cache frees it without a CAS */
        uint32_t st = AF__LD(&b->state);
        atomic_store_explicit(&b->state, af__blk_tagged(st, k->tag), memory_order_relaxed);
        af__pool_bin_t *ob = &k->bins[af__blk_owner(st)]; /* the owner counts it */
        AF__ST(&ob->direct, AF__LD(&ob->direct) + 1);
    }
    *out = b;
    return rc;
}

/* A huge request: a chunk this cache freed, within 25% of the size, else the pool (glock). */
static int cache_huge_alloc(af_pool_cache_t *k, size_t size, void **out)
{
    af_pool_t *p = k->pool;
    uint64_t bytes = af__align_up(size, AF__POOL_GRANULE);
    int best = -1;
    for (int i = 0; i < AF__POOL_CACHE_HUGE; i++) {
        af__pool_chunk_t *ch = k->huge[i];
        if (ch && ch->bytes >= bytes && ch->bytes - bytes <= bytes / 4 &&
            (best < 0 || ch->bytes < k->huge[best]->bytes))
            best = i;
    }
    if (best < 0 || bytes < size) {
        AF__ST(&k->slow_allocs, AF__LD(&k->slow_allocs) + 1);
        return af__pool_huge_alloc(p, size, out);
    }
    af__pool_chunk_t *ch = k->huge[best];
    k->huge[best] = NULL;
    AF__ST(&ch->req, size);
    atomic_store_explicit(&af__pool_blk(p, ch, 0)->state,
                          af__blk_state(AF_BLOCK_INUSE, AF__POOL_HUGE_CLASS, 0),
                          memory_order_relaxed);
    AF__ADD(&p->huge_allocs, 1);
    live_add(k, (int64_t)size);
    af__pool_on_alloc(p, ch->base, size);
    *out = ch->base;
    return 0;
}

/* Everything the fast path leaves out: miss, huge, annotations, exact peak (debug modes send
 * every request here). Out of line so the fast path needs no stack frame. */
static AF__COLD int cache_alloc_rest(af_pool_cache_t *k, size_t size, void **out)
{
    af_pool_t *p = k->pool;
    if (size == 0)
        return AF_EINVAL;
    if (k->recut_min && size > k->recut_min)
        return af__pool_heap_alloc(k, size, out);
    if (size > p->max_size)
        return cache_huge_alloc(k, size, out);
    uint32_t c = (uint32_t)af__pool_class_fast(p, size);
    af__pool_bin_t *bin = &k->bins[c];
    uint32_t n = AF__LD(&bin->n);
    af__pool_block_t *b;
    if (n) {
        b = bin->slots[n - 1].b;
        AF__ST(&bin->n, n - 1);
        bin_mark(k, c, n - 1);
        atomic_store_explicit(&b->state, bin->inuse, memory_order_relaxed);
    } else {
        int rc = cache_miss(k, c, size, &b);
        if (rc)
            return rc;
    }
    AF__ST(&b->req, (uint32_t)size);
    live_add(k, (int64_t)size);
    af__pool_on_alloc(p, b->addr, size);
    *out = b->addr;
    return 0;
}

/* Bin c of the cache is empty: lend a block of the nearest larger class from this cache (still no
 * lock), else the general path (out of line). Inline: on traces whose sizes fall between the
 * classes of the blocks a cache holds, most requests are served this way (randwire and darts
 * lend 53% and 70% of their requests under recut_min 0). */
static inline AF__INLINE int cache_lend(af_pool_cache_t *k, uint32_t c, size_t size, void **out)
{
    int d = next_full(k, c, k->bins[c].near);
    if (d < 0)
        return cache_alloc_rest(k, size, out);
    af__pool_bin_t *bin = &k->bins[d];
    uint32_t n = AF__LD(&bin->n);
    af__pool_slot_t sl = bin->slots[n - 1];
    AF__ST(&bin->n, n - 1);
    if (n == 1)
        bin_mark(k, (uint32_t)d, 0);
    /* BORROWED = INUSE + 1, and the borrower class in bits 16..23 */
    uint32_t st = bin->inuse + (AF_BLOCK_BORROWED - AF_BLOCK_INUSE) + (c << 16);
    atomic_store_explicit(&sl.b->state, st, memory_order_relaxed);
    AF__ST(&sl.b->req, (uint32_t)size);
    AF__ST(&bin->lent, AF__LD(&bin->lent) + 1);
    *out = sl.b->addr;
    return 0;
}

/* Above recut_min: a re-cut block of the same length from the cache's bins (no search), else the
 * general path. Out of line, so the fast path needs no stack frame. */
static AF__NOINLINE int cache_alloc_big(af_pool_cache_t *k, size_t size, void **out)
{
    uint64_t g = (uint64_t)(size - 1) >> AF__POOL_GRANULE_SHIFT; /* granules - 1 (size 0: huge) */
    uint32_t n;
    if (AF__LIKELY(g < k->hbin_max) && AF__LIKELY((n = AF__LD(&k->hn[g])) != 0)) {
        af__pool_block_t *b = k->hslots[g * AF__POOL_HBIN_CAP + n - 1];
        AF__ST(&k->hn[g], n - 1);
        atomic_store_explicit(&b->state, k->hinuse, memory_order_relaxed);
        AF__ST(&b->req, (uint32_t)size);
        *out = b->addr;
        return 0;
    }
    return cache_alloc_rest(k, size, out);
}

int af_pool_cache_alloc(af_pool_cache_t *k, size_t size, void **out)
{
    uint64_t s1 = size - 1;              /* (s1 >> 8) = ceil(size / 256) - 1 */
    if (AF__UNLIKELY(s1 >= k->fast_max)) /* re-cut, huge, size 0 (s1 wraps), or a debug mode */
        return cache_alloc_big(k, size, out);
    size_t c = k->lut[af__pool_lut_key(s1 >> 8)]; /* exact, or fast_max would be 0 */
    af__pool_bin_t *bin = &k->bins[c];
    uint32_t n = AF__LD(&bin->n);
    if (AF__UNLIKELY(!n))
        return cache_lend(k, (uint32_t)c, size, out);
    uint32_t st = bin->inuse;
    af__pool_slot_t sl = bin->slots[n - 1];
    AF__ST(&bin->n, n - 1);
    if (AF__UNLIKELY(n == 1))
        k->full[c >> 6] &= ~(1ull << (c & 63));
    atomic_store_explicit(&sl.b->state, st, memory_order_relaxed);
    AF__ST(&sl.b->req, (uint32_t)size);
    *out = sl.b->addr;
    return 0;
}

/* Moves the block's state to FREE. Returns 0 with the old state, or AF_EDOUBLEFREE. */
static inline int release_state(af_pool_t *p, af__pool_block_t *b, uint32_t *old)
{
    uint32_t st = atomic_load_explicit(&b->state, memory_order_relaxed);
    for (;;) {
        if (AF__UNLIKELY(af__blk_kind(st) == AF_BLOCK_FREE)) {
            AF__ADD(&p->double_frees, 1);
            return AF_EDOUBLEFREE;
        }
        uint32_t fr = af__blk_freed(st);
        if (AF__LIKELY(atomic_compare_exchange_weak_explicit(
                &b->state, &st, fr, memory_order_acq_rel, memory_order_relaxed)))
            break;
    }
    *old = st;
    return 0;
}

/* The general free: foreign pointers, double frees, huge chunks, borrowed blocks, full bins,
 * annotations. */
static AF__COLD int cache_free_rest(af_pool_cache_t *k, af__pool_block_t *b)
{
    af_pool_t *p = k->pool;
    if (!b) {
        AF__ADD(&p->foreign_frees, 1);
        return AF_EFOREIGN;
    }
    uint32_t st;
    int rc = release_state(p, b, &st);
    if (rc)
        return rc;
    af__pool_chunk_t *ch = af__pool_chunk_of(p, b); /* the block is ours: its chunk stays */
    if (ch->cls == AF__POOL_SPAN) {
        af__pool_heap_free(p, k, ch, b);
        return 0;
    }
    if (ch->cls == -1) {
        for (int i = 0; i < AF__POOL_CACHE_HUGE; i++)
            if (!k->huge[i]) { /* keep it for this cache's next huge request: no lock */
                af__pool_on_free(p, ch->base, ch->bytes);
                live_add(k, -(int64_t)AF__LD(&ch->req));
                AF__ADD(&p->huge_frees, 1);
                k->huge[i] = ch;
                return 0;
            }
        AF__ST(&k->slow_frees, AF__LD(&k->slow_frees) + 1);
        return af__pool_huge_free(p, ch);
    }
    /* the owner class, also for a borrowed block (seed §5.3) */
    uint32_t c = (uint32_t)ch->cls;
    af__pool_bin_t *bin = &k->bins[c];
    live_add(k, -(int64_t)AF__LD(&b->req));
    af__pool_on_free(p, b->addr, p->cls[c].bs);
    uint32_t n = AF__LD(&bin->n);
    if (n == bin->cap) {
        AF__ST(&k->slow_frees, AF__LD(&k->slow_frees) + 1);
        af__pool_bin_flush(k, c, p->cls[c].batch);
        n = AF__LD(&bin->n);
        af__pool_idle_tick(p);
    }
    bin->slots[n] = (af__pool_slot_t){b};
    AF__ST(&bin->n, n + 1);
    if (n == 0)
        bin_mark(k, c, 1);
    AF__ST(&bin->frees, AF__LD(&bin->frees) + 1);
    return 0;
}

/* Every free the fast path does not take. Out of line, so the fast path needs no stack frame. */
static AF__NOINLINE int cache_free_slow(af_pool_cache_t *k, void *ptr, af__pool_block_t *b)
{
    (void)ptr;
    return cache_free_rest(k, b);
}

/* A re-cut block this cache handed out: FREE with a plain store (as a class block), back to the
 * heap it came from (this cache's, unless the cache that tagged it was destroyed meanwhile). */
static AF__NOINLINE int cache_free_heap(af_pool_cache_t *k, af__pool_block_t *b, uint32_t st)
{
    atomic_store_explicit(&b->state, af__blk_freed(st), memory_order_relaxed);
    af__pool_heap_free(k->pool, k, af__pool_chunk_of(k->pool, b), b);
    return 0;
}

int af_pool_cache_free(af_pool_cache_t *k, void *ptr)
{
    /* af__pool_lookup with the cache's copies of the pool's fields: a block of a granule or
     * more is found with one load (dtab), a smaller one through its chunk */
    uint64_t g = (uint64_t)((uintptr_t)ptr - (uintptr_t)k->va_base) >> AF__POOL_GRANULE_SHIFT;
    if (AF__UNLIKELY(g >= k->ngranules))
        return cache_free_slow(k, ptr, NULL);
    af__pool_block_t *b = &k->dtab[g];
    if (AF__UNLIKELY(b->addr != ptr)) {
        af__pool_chunk_t *ch;
        b = af__pool_lookup_small(k->gtab, ptr, g, &ch);
        if (AF__UNLIKELY(!b))
            return cache_free_slow(k, ptr, NULL);
    }
    /* Fast case: a block this cache handed out (in use or borrowed; FREE blocks carry no tag, so
     * a second free of it never matches and goes to the CAS in cache_free_rest). Its state word
     * names the owner class (seed §5.3: a borrowed block goes back to it); tagged blocks are
     * never huge. */
    uint32_t st = atomic_load_explicit(&b->state, memory_order_relaxed);
    if (AF__UNLIKELY(af__blk_tag_bits(st) != k->owned))
        return cache_free_slow(k, ptr, b);
    uint32_t c = af__blk_owner(st);
    if (AF__UNLIKELY(c == AF__POOL_HEAP_CLASS)) { /* a re-cut block: onto the bin of its length */
        uint64_t len1 = AF__LD(&b->ngran) - 1;
        uint32_t m;
        if (AF__UNLIKELY(len1 >= k->hbin_max) ||
            AF__UNLIKELY((m = AF__LD(&k->hn[len1])) == AF__POOL_HBIN_CAP))
            return cache_free_heap(k, b, st);
        atomic_store_explicit(&b->state, af__blk_freed(st), memory_order_relaxed);
        k->hslots[len1 * AF__POOL_HBIN_CAP + m] = b;
        AF__ST(&k->hn[len1], m + 1);
        AF__ST(&k->hb_pushes, AF__LD(&k->hb_pushes) + 1);
        return 0;
    }
    af__pool_bin_t *bin = &k->bins[c];
    uint32_t n = AF__LD(&bin->n);
    if (AF__UNLIKELY(n == bin->cap))
        return cache_free_rest(k, b);
    atomic_store_explicit(&b->state, af__blk_freed(st), memory_order_relaxed);
    bin->slots[n] = (af__pool_slot_t){b};
    AF__ST(&bin->n, n + 1);
    if (AF__UNLIKELY(n == 0))
        k->full[c >> 6] |= 1ull << (c & 63);
    AF__ST(&bin->frees, AF__LD(&bin->frees) + 1);
    return 0;
}

/* ---- without a cache: the class lock on every call ------------------------------------- */

int af_pool_alloc(af_pool_t *p, size_t size, void **out)
{
    if (!p || !out || size == 0)
        return AF_EINVAL;
    if (size > p->max_size)
        return af__pool_huge_alloc(p, size, out);
    uint32_t c = (uint32_t)af__pool_class_fast(p, size);
    af__pool_clock(p, c);
    af__pool_block_t *b = af__pool_central_pop(p, c);
    af__pool_cunlock(p, c);
    if (b) {
        atomic_store_explicit(&b->state, af__blk_state(AF_BLOCK_INUSE, c, 0), memory_order_relaxed);
        AF__ST(&b->req, (uint32_t)size);
    } else {
        int rc = af__pool_alloc_slow(p, c, size, &b);
        if (rc)
            return rc;
    }
    AF__ADD(&p->cls[af__blk_owner(AF__LD(&b->state))].allocs, 1);
    int64_t v = AF__ADD(&p->live_req, (int64_t)size) + (int64_t)size;
    if (p->exact_peak)
        af__pool_note_peak(p, (uint64_t)v);
    af__pool_on_alloc(p, b->addr, size);
    *out = b->addr;
    return 0;
}

int af_pool_free(af_pool_t *p, void *ptr)
{
    if (!p)
        return AF_EINVAL;
    af__pool_chunk_t *ch;
    af__pool_block_t *b = af__pool_lookup(p, ptr, &ch);
    if (!b) {
        AF__ADD(&p->foreign_frees, 1);
        return AF_EFOREIGN;
    }
    uint32_t st;
    int rc = release_state(p, b, &st);
    if (rc)
        return rc;
    if (ch->cls == AF__POOL_SPAN) {
        af__pool_heap_free(p, NULL, ch, b);
        return 0;
    }
    if (ch->cls == -1)
        return af__pool_huge_free(p, ch);
    uint32_t c = (uint32_t)ch->cls;
    AF__SUB(&p->live_req, (int64_t)AF__LD(&b->req));
    AF__ADD(&p->cls[c].frees, 1);
    af__pool_on_free(p, b->addr, p->cls[c].bs);
    af__pool_clock(p, c);
    af__pool_central_push(p, c, b);
    af__pool_cunlock(p, c);
    af__pool_idle_tick(p);
    return 0;
}
