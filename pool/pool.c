/*
 * The pool object: options, the class ladder, create/destroy, statistics, block queries.
 *
 * Ladder. Sizes are counted in 256-byte units (the alignment). The default ladder is geometric:
 * for every power of two p (in units) it holds p * (1 + k/s) for k = 0..s-1 (s =
 * steps_per_doubling), rounded up to a whole unit and deduplicated, up to max_class. With s = 4
 * the classes are 256, 512, 768, 1 Ki, 1.25 Ki, 1.5 Ki, 1.75 Ki, 2 Ki, 2.5 Ki, ... so a request,
 * once aligned, wastes less than 1/s of itself. The seed ladder is 256 KiB, 1, 4, 16, 64 MiB
 * (optionally preceded by powers of two from 256 B). Size -> class is a 512-entry table indexed by
 * (log2 units, next 3 bits) giving the first class that can fit the bucket's smallest size,
 * followed by at most a few steps up.
 *
 * Invariants: classes ascend strictly, each a multiple of 256 and < 4 GiB; class count <=
 * AF_POOL_MAX_CLASSES (the state word keeps the class in 8 bits; 0xff marks huge chunks).
 * Lock rule: see pool_int.h (glock before class locks). Statistics read single-writer counters
 * with relaxed loads, so they are exact only when the pool is quiescent.
 */
#include "pool/pool_int.h"

#include <string.h>
#include <sys/mman.h>

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

void af_pool_opts_init(af_pool_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->ladder = AF_POOL_LADDER_DEFAULT;
    o->steps_per_doubling = 4;
    o->max_class = 64ull << 20;
#ifdef AF_TSAN_BUILD
    o->va_reserve = 16ull << 30;
#else
    o->va_reserve = 32ull << 30;
#endif
    o->cache_slots = 128;
    o->cache_bytes = 1ull << 30;
    o->borrow_max_ratio = 4.0;
    o->cache_borrow_ratio = 4.0;
    o->chunk_min = 16ull << 10;
    o->chunk_max = 128ull << 10;
    o->huge_cache_bytes = 1ull << 30;
    o->recut_min = 32ull << 10;
}

/* Appends units u to the ladder if it is larger than the last one. */
static int ladder_push(uint32_t *units, uint32_t *n, uint64_t u)
{
    if (*n && units[*n - 1] >= u)
        return 0;
    if (*n >= AF_POOL_MAX_CLASSES - 1 || u > UINT32_MAX / 2)
        return AF_EINVAL;
    units[(*n)++] = (uint32_t)u;
    return 0;
}

static int build_ladder(const af_pool_opts_t *o, uint32_t *units, uint32_t *n, af_error_t *err)
{
    static const uint64_t seed[] = {256ull << 10, 1ull << 20, 4ull << 20, 16ull << 20, 64ull << 20};
    *n = 0;
    if (o->ladder == AF_POOL_LADDER_DEFAULT) {
        uint32_t s = o->steps_per_doubling;
        if (s < 1 || s > 16 || o->max_class < AF_POOL_ALIGN || o->max_class >= (1ull << 32))
            return af__err(err, AF_EINVAL,
                           "pool: default ladder needs 1..16 steps per doubling "
                           "and 256 B <= max_class < 4 GiB");
        uint64_t maxu = (o->max_class + AF_POOL_ALIGN - 1) / AF_POOL_ALIGN;
        for (uint64_t p = 1; p <= maxu; p *= 2)
            for (uint32_t k = 0; k < s; k++) {
                uint64_t u = (p * (s + k) + s - 1) / s;
                if (u > maxu)
                    break;
                if (ladder_push(units, n, u))
                    return af__err(err, AF_EINVAL, "pool: ladder has more than %d classes",
                                   AF_POOL_MAX_CLASSES - 1);
            }
        if (ladder_push(units, n, maxu))
            return af__err(err, AF_EINVAL, "pool: ladder too long");
        return 0;
    }
    if (o->ladder == AF_POOL_LADDER_SEED) {
        if (!o->seed_pure)
            for (uint64_t u = 1; u < seed[0] / AF_POOL_ALIGN; u *= 2)
                ladder_push(units, n, u);
        for (size_t i = 0; i < AF_ARRAY_SIZE(seed); i++)
            ladder_push(units, n, seed[i] / AF_POOL_ALIGN);
        return 0;
    }
    if (o->ladder == AF_POOL_LADDER_CUSTOM && o->classes && o->nclasses > 0 &&
        o->nclasses < AF_POOL_MAX_CLASSES) {
        for (uint32_t i = 0; i < o->nclasses; i++) {
            uint64_t b = o->classes[i];
            if (b == 0 || b % AF_POOL_ALIGN || b >= (1ull << 32) || (i && b <= o->classes[i - 1]))
                return af__err(err, AF_EINVAL,
                               "pool: custom class %u (%llu bytes) must be a multiple of 256, "
                               "below 4 GiB and larger than the one before",
                               i, (unsigned long long)b);
            units[(*n)++] = (uint32_t)(b / AF_POOL_ALIGN);
        }
        return 0;
    }
    return af__err(err, AF_EINVAL, "pool: unknown ladder or empty custom class list");
}

/* First class holding u units (the last one if none: such sizes are huge, never looked up). */
static uint32_t class_of_units(const af_pool_t *p, uint64_t u)
{
    uint32_t c = 0;
    while (c + 1 < p->nclasses && p->units[c] < u)
        c++;
    return c;
}

static void build_lut(af_pool_t *p)
{
    uint64_t maxu = p->units[p->nclasses - 1];
    p->lut_exact = 1;
    for (uint32_t key = 0; key < AF__POOL_LUT_SIZE; key++) {
        uint64_t lo, hi; /* v = u - 1 in [lo, hi) for this key */
        if (key < 16) {
            lo = key;
            hi = key + 1;
        } else {
            uint32_t lg = (key - 16) / 8 + 4, m = (key - 16) % 8;
            if (lg > 40) { /* far above any class (< 4 GiB = 2^24 units): never looked up */
                p->lut[key] = (uint8_t)(p->nclasses - 1);
                continue;
            }
            lo = (uint64_t)(8 + m) << (lg - 3);
            hi = (uint64_t)(9 + m) << (lg - 3);
        }
        uint32_t c_lo = class_of_units(p, lo + 1), c_hi = class_of_units(p, hi);
        if (lo + 1 > maxu) { /* beyond the largest class: never looked up */
            p->lut[key] = (uint8_t)c_lo;
            continue;
        }
        if (hi > maxu) /* the bucket's top is huge: its in-range part ends at the last class */
            c_hi = p->nclasses - 1;
        if (c_lo == c_hi)
            p->lut[key] = (uint8_t)c_hi;
        else {
            p->lut[key] = (uint8_t)c_lo;
            p->lut_exact = 0;
        }
    }
}

static void init_classes(af_pool_t *p)
{
    const af_pool_opts_t *o = &p->opts;
    for (uint32_t c = 0; c < p->nclasses; c++) {
        af__pool_class_t *k = &p->cls[c];
        k->bs = (uint64_t)p->units[c] * AF_POOL_ALIGN;
        uint64_t cap = o->cache_bytes / k->bs;
        cap = cap < 2 ? 2 : cap;
        k->cache_cap = (uint32_t)(cap < o->cache_slots ? cap : o->cache_slots);
        if (k->cache_cap == 0)
            k->cache_cap = 1;
        k->batch = k->cache_cap / 2 ? k->cache_cap / 2 : 1;
        k->next_chunk = o->chunk_min;
        uint32_t last = c;
        if (o->borrow_max_ratio > 0)
            while (last + 1 < p->nclasses &&
                   (double)p->units[last + 1] <= o->borrow_max_ratio * p->units[c])
                last++;
        k->borrow_last = last;
        last = c;
        while (last + 1 < p->nclasses && last < k->borrow_last &&
               (double)p->units[last + 1] <= o->cache_borrow_ratio * p->units[c])
            last++;
        k->borrow_near = last;
    }
}

int af_pool_create(const af_pool_opts_t *opts, af_pool_t **out, af_error_t *err)
{
    af_pool_opts_t def;
    if (!opts) {
        af_pool_opts_init(&def);
        opts = &def;
    }
    if (!out)
        return af__err(err, AF_EINVAL, "pool: out is NULL");
    uint32_t units[AF_POOL_MAX_CLASSES], n = 0;
    int rc = build_ladder(opts, units, &n, err);
    if (rc)
        return rc;
    if (opts->chunk_min < AF__POOL_GRANULE || opts->chunk_max < opts->chunk_min ||
        opts->chunk_max > (1ull << 31) || opts->cache_slots == 0 ||
        opts->va_reserve < (64ull << 20) || (opts->recut_min && opts->recut_min < AF__POOL_GRANULE))
        return af__err(err, AF_EINVAL,
                       "pool: need 16 KiB <= chunk_min <= chunk_max <= 2 GiB, cache_slots > 0 "
                       "va_reserve >= 64 MiB and recut_min 0 or >= 16 KiB");

    af_pool_t *p = af__calloc(1, sizeof(*p));
    if (!p)
        goto fail_nomem;
    p->opts = *opts;
    p->opts.classes = NULL;
    p->nclasses = n;
    memcpy(p->units, units, n * sizeof(units[0]));
    p->max_size = (uint64_t)units[n - 1] * AF_POOL_ALIGN;
    p->poison = opts->poison;
    p->exact_peak = opts->exact_peak;
    build_lut(p);
    p->cls = af__calloc(n, sizeof(af__pool_class_t));
    if (!p->cls)
        goto fail_cls;
    p->ngranules = opts->va_reserve >> AF__POOL_GRANULE_SHIFT;
    p->hp_low = p->ngranules;
    init_classes(p);

    p->va_bytes = (p->ngranules + 1) << AF__POOL_GRANULE_SHIFT;
    void *va =
        mmap(NULL, p->va_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (va == MAP_FAILED)
        goto fail_va;
    uintptr_t base = ((uintptr_t)va + AF__POOL_GRANULE - 1) & ~(uintptr_t)(AF__POOL_GRANULE - 1);
    p->va_base = (char *)base;
    p->gtab = af__calloc(p->ngranules, sizeof(p->gtab[0]));
    if (!p->gtab)
        goto fail_gtab;
    p->va_raw = va;
    void *dt = mmap(NULL, p->ngranules * sizeof(af__pool_block_t), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (dt == MAP_FAILED)
        goto fail_dtab;
    p->dtab = dt;
    if (pthread_mutex_init(&p->glock, NULL))
        goto fail_lock;
    uint32_t c = 0;
    for (; c < n; c++)
        if (pthread_mutex_init(&p->cls[c].lock, NULL))
            break;
    if (c < n) {
        while (c--)
            pthread_mutex_destroy(&p->cls[c].lock);
        pthread_mutex_destroy(&p->glock);
        goto fail_lock;
    }
    AF__ST(&p->metadata,
           sizeof(*p) + n * sizeof(af__pool_class_t) + p->ngranules * sizeof(p->gtab[0]));
    *out = p;
    return 0;

fail_lock:
    munmap(p->dtab, p->ngranules * sizeof(af__pool_block_t));
fail_dtab:
    af__free(p->gtab);
fail_gtab:
    munmap(va, p->va_bytes);
    af__free(p->cls);
    af__free(p);
    return af__err(err, AF_ENOMEM, "pool: out of memory for the granule table");
fail_va:
    af__free(p->cls);
    af__free(p);
    return af__err(err, AF_ENOMEM, "pool: cannot reserve %llu bytes of address space",
                   (unsigned long long)opts->va_reserve);
fail_cls:
    af__free(p);
fail_nomem:
    return af__err(err, AF_ENOMEM, "pool: out of memory for the pool descriptor");
}

void af_pool_destroy(af_pool_t *p)
{
    if (!p)
        return;
    while (p->caches) {
        af_pool_cache_t *k = p->caches;
        p->caches = k->next;
        af__free(k->hslots);
        af__free(k->bins[0].slots);
        af__free(k);
    }
    af__pool_unmap_all(p);
    for (size_t i = 0; i < p->nchunks; i++) {
        af__free(p->chunks[i]->blocks);
        af__free(p->chunks[i]);
    }
    af__free(p->chunks);
    af__pool_heap_destroy_all(p);
    af__free(p->vfree);
    munmap(p->va_raw, p->va_bytes);
    munmap(p->dtab, p->ngranules * sizeof(af__pool_block_t));
    af__free(p->gtab);
    for (uint32_t c = 0; c < p->nclasses; c++)
        pthread_mutex_destroy(&p->cls[c].lock);
    pthread_mutex_destroy(&p->glock);
    af__free(p->cls);
    af__free(p);
}

void af__pool_glock(af_pool_t *p)
{
    pthread_mutex_lock(&p->glock);
    AF__ADD(&p->global_locks, 1);
}

void af__pool_gunlock(af_pool_t *p)
{
    pthread_mutex_unlock(&p->glock);
}

void af__pool_clock(af_pool_t *p, uint32_t c)
{
    pthread_mutex_lock(&p->cls[c].lock);
    AF__ADD(&p->class_locks, 1);
}

void af__pool_cunlock(af_pool_t *p, uint32_t c)
{
    pthread_mutex_unlock(&p->cls[c].lock);
}

void af__pool_on_alloc(const af_pool_t *p, void *addr, uint64_t size)
{
#ifdef AF_ASAN_BUILD
    ASAN_UNPOISON_MEMORY_REGION(addr, size);
#endif
    if (p->poison)
        memset(addr, 0xAA, size);
}

void af__pool_on_free(const af_pool_t *p, void *addr, uint64_t bs)
{
    if (p->poison) {
#ifdef AF_ASAN_BUILD
        ASAN_UNPOISON_MEMORY_REGION(addr, bs);
#endif
        memset(addr, 0x55, bs);
    }
#ifdef AF_ASAN_BUILD
    ASAN_POISON_MEMORY_REGION(addr, bs);
#endif
    (void)addr;
    (void)bs;
}

void af__pool_note_peak(af_pool_t *p, uint64_t live)
{
    uint64_t pk = AF__LD(&p->peak_req);
    while (live > pk && !atomic_compare_exchange_weak_explicit(
                            &p->peak_req, &pk, live, memory_order_relaxed, memory_order_relaxed))
        ;
}

int64_t af__pool_live_req(af_pool_t *p)
{
    if (p->exact_peak)
        return AF__LD(&p->live_req);
    int64_t v = 0;
    af__pool_heap_sum_t hs;
    af__pool_heap_totals(p, &hs);
    v = hs.req;
    for (size_t i = 0; i < p->nchunks; i++) {
        af__pool_chunk_t *ch = p->chunks[i];
        if (!ch->mapped)
            continue;
        for (uint32_t j = 0; j < ch->nblocks; j++) {
            af__pool_block_t *b = af__pool_blk(p, ch, j);
            uint32_t kind = af__blk_kind(AF__LD(&b->state));
            if (kind == AF_BLOCK_INUSE || kind == AF_BLOCK_BORROWED)
                v += ch->cls < 0 ? (int64_t)AF__LD(&ch->req) : (int64_t)AF__LD(&b->req);
        }
    }
    return v;
}

int af_pool_class_of(const af_pool_t *p, size_t size)
{
    if (!p || size == 0 || size > p->max_size)
        return -1;
    return af__pool_class_fast(p, size);
}

uint32_t af_pool_nclasses(const af_pool_t *p)
{
    return p ? p->nclasses : 0;
}

uint64_t af_pool_class_size(const af_pool_t *p, uint32_t c)
{
    return p && c < p->nclasses ? p->cls[c].bs : 0;
}

int af_pool_block_info(af_pool_t *p, const void *ptr, af_pool_block_info_t *info)
{
    af__pool_chunk_t *ch;
    af__pool_block_t *b = p ? af__pool_lookup(p, ptr, &ch) : NULL;
    if (!p || !info || !b)
        return AF_EFOREIGN;
    uint32_t st = atomic_load_explicit(&b->state, memory_order_acquire);
    info->state = (af_block_state_t)af__blk_kind(st);
    info->owner_class = ch->cls < 0 ? -1 : ch->cls;
    info->borrower_class = info->state == AF_BLOCK_BORROWED ? (int)af__blk_borrower(st) : -1;
    info->block_size =
        ch->cls == AF__POOL_SPAN ? AF__LD(&b->ngran) << AF__POOL_GRANULE_SHIFT : ch->bs;
    return 0;
}

/* Blocks of each class lent to a smaller class now: their state words say BORROWED (a scan:
 * the fast paths keep no count of lent blocks coming back). glock held. */
static void count_lent(af_pool_t *p, uint64_t *lent)
{
    for (size_t i = 0; i < p->nchunks; i++) {
        af__pool_chunk_t *ch = p->chunks[i];
        if (!ch->mapped || ch->cls < 0)
            continue;
        for (uint32_t j = 0; j < ch->nblocks; j++)
            if (af__blk_kind(AF__LD(&af__pool_blk(p, ch, j)->state)) == AF_BLOCK_BORROWED)
                lent[ch->cls]++;
    }
}

static void class_stats(af_pool_t *p, uint32_t c, uint64_t lent, af_pool_class_stats_t *cs)
{
    af__pool_class_t *k = &p->cls[c];
    pthread_mutex_lock(&k->lock); /* not counted: statistics are not the allocation path */
    cs->block_size = k->bs;
    cs->chunks = k->nchunks;
    cs->blocks = k->nblocks;
    cs->blocks_free = AF__LD(&k->nfree);
    pthread_mutex_unlock(&k->lock);
    cs->lent_total = AF__LD(&k->lent_total);
    cs->allocs = AF__LD(&k->allocs);
    cs->frees = AF__LD(&k->frees);
    for (af_pool_cache_t *q = p->caches; q; q = q->next) {
        cs->blocks_cached += AF__LD(&q->bins[c].n);
        cs->allocs += af__pool_bin_allocs(&q->bins[c]);
        cs->frees += AF__LD(&q->bins[c].frees);
        cs->lent_total += AF__LD(&q->bins[c].lent);
    }
    cs->blocks_lent = lent;
    uint64_t held = cs->blocks_free + cs->blocks_cached;
    cs->blocks_in_use = cs->blocks > held ? cs->blocks - held : 0;
}

int af_pool_stats(af_pool_t *p, af_pool_stats_t *st)
{
    if (!p || !st)
        return AF_EINVAL;
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&p->glock); /* not counted, see class_stats */
    st->nclasses = p->nclasses;
    uint64_t lent[AF_POOL_MAX_CLASSES] = {0};
    count_lent(p, lent);
    for (uint32_t c = 0; c < p->nclasses; c++) {
        af_pool_class_stats_t *cs = &st->classes[c];
        class_stats(p, c, lent[c], cs);
        st->allocated_bytes += cs->blocks_in_use * cs->block_size;
        st->allocs += cs->allocs;
        st->frees += cs->frees;
    }
    uint64_t slow_a = 0, slow_f = 0, cache_a = 0, cache_f = 0;
    for (af_pool_cache_t *q = p->caches; q; q = q->next) {
        slow_a += AF__LD(&q->slow_allocs);
        slow_f += AF__LD(&q->slow_frees);
        for (uint32_t c = 0; c < p->nclasses; c++) {
            cache_a += af__pool_bin_allocs(&q->bins[c]);
            cache_f += AF__LD(&q->bins[c].frees);
            st->borrows += AF__LD(&q->bins[c].lent);
        }
    }
    st->fast_allocs = AF__LD(&p->retired_fast_allocs) + (cache_a - slow_a);
    st->fast_frees = AF__LD(&p->retired_fast_frees) + (cache_f - slow_f);
    int64_t live = af__pool_live_req(p);
    st->requested_bytes = live > 0 ? (uint64_t)live : 0;
    af__pool_note_peak(p, st->requested_bytes);
    uint64_t huge_live = 0;
    for (size_t i = 0; i < p->nchunks; i++) {
        af__pool_chunk_t *ch = p->chunks[i];
        if (ch->mapped && ch->cls == -1 &&
            af__blk_kind(AF__LD(&af__pool_blk(p, ch, 0)->state)) != AF_BLOCK_FREE)
            huge_live += ch->bytes;
    }
    af__pool_heap_sum_t hs;
    af__pool_heap_totals(p, &hs);
    pthread_mutex_unlock(&p->glock);
    st->allocated_bytes += huge_live + hs.bytes;
    st->allocs += hs.allocs;
    st->frees += hs.frees;
    st->fast_allocs += hs.fast_allocs;
    st->fast_frees += hs.fast_frees;
    st->allocs += AF__LD(&p->huge_allocs);
    st->frees += AF__LD(&p->huge_frees);
    st->reserved_bytes = AF__LD(&p->reserved);
    st->peak_reserved_bytes = AF__LD(&p->peak_reserved);
    st->peak_requested_bytes = AF__LD(&p->peak_req);
    st->metadata_bytes = AF__LD(&p->metadata);
    st->huge_bytes = AF__LD(&p->huge_bytes);
    st->borrows += AF__LD(&p->borrows);
    st->global_locks = AF__LD(&p->global_locks);
    st->class_locks = AF__LD(&p->class_locks);
    st->os_maps = AF__LD(&p->os_maps);
    st->os_unmaps = AF__LD(&p->os_unmaps);
    st->os_madvise = AF__LD(&p->os_madvise);
    st->trimmed_bytes = AF__LD(&p->trimmed);
    st->double_frees = AF__LD(&p->double_frees);
    st->foreign_frees = AF__LD(&p->foreign_frees);
    st->fragmentation = st->peak_requested_bytes
                            ? (double)st->peak_reserved_bytes / (double)st->peak_requested_bytes
                            : 0.0;
    return 0;
}

void af_pool_reset_peak(af_pool_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->glock);
    AF__ST(&p->peak_reserved, AF__LD(&p->reserved));
    int64_t live = af__pool_live_req(p);
    AF__ST(&p->peak_req, live > 0 ? (uint64_t)live : 0);
    pthread_mutex_unlock(&p->glock);
}
