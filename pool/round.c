/*
 * Learned rounds: a cache that repeats the same work round after round (af_pool_cache_round
 * marks the rounds) records one round and lays its blocks out in one arena, the way the planner
 * lays out a graph's tensors (seed 1, §6.1: cache the first round's plan, then follow it).
 *
 * Why: a size-class pool keeps each class's memory for that class. When the classes' peaks come
 * at different moments of a round, the memory reserved is the sum of the classes' peaks, not the
 * peak of their sum; re-cutting free memory online (regions: best fit + coalescing) helps, but a
 * non-moving allocator that does not know the future still fragments on such traces. One
 * recorded round is that future: the planner's interval placement packs the round's blocks
 * close to its peak of live bytes.
 *
 * Recording (k->learn): every call of the cache takes the general path (fast_max = 0 for allocs,
 * owned = no tag for frees) and notes its event: alloc i at position lo[i], its free at hi[i]
 * (positions count the recorded allocs and frees). A pointer -> latest alloc index hash finds the
 * alloc a free ends (a pointer freed and handed out again maps to its newest alloc). Blocks freed
 * elsewhere (another thread) leave their alloc open: that round cannot be learned.
 *
 * Learning (at the round's end): intervals [lo, hi) of the aligned sizes are placed by
 * af_place_intervals ("portfolio", 256-byte offsets) and verified; for every block i the earlier
 * blocks of the round that share bytes with it are listed (pred); a hash maps offsets to the
 * block placed there last. The cache's idle class blocks and the pool's idle chunks go back to the
 * OS first (af_pool_trim), then the arena is mapped (outside the pool's reservation).
 *
 * Replay (cache.c, af__pool_rp_take): the i-th alloc of a round gets block i's place when it fits
 * and no block of pred(i) is in use; blocks of later indexes cannot be in use yet (a round hands
 * out block i at most once, in index order) and none is left from the previous round (checked at
 * each round's end; otherwise the next round is served by the classes: "held"). So two blocks in
 * use never share bytes, whatever order the caller frees in. The owner frees with plain stores;
 * other threads free under glock with a CAS (af__pool_arena_free).
 *
 * Lock rule: recording, learning and the replay fields belong to the cache's thread; pool->arenas
 * and arena ownership change under glock; block states are atomics (relaxed for the owner's own
 * stores, acquire/release between the owner's checks and other threads' frees).
 */
#include "pool/pool_int.h"

#include "arenaflow/plan.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

#define LEARN_TRIES 3 /* rounds recorded without success before learning stops */

struct af__pool_learn {
    uint64_t *size;
    int64_t *lo, *hi; /* event positions of alloc and free (-1: not freed) */
    size_t n, cap;
    int64_t ev;
    uintptr_t *hk; /* pointer -> newest alloc index (open addressing, no deletions) */
    uint32_t *hv;
    size_t hcap, hn;
    int broken; /* too many allocs, a size >= 4 GiB, or out of memory: not learnable */
};

static size_t ptr_slot(uintptr_t p, size_t cap)
{
    return (size_t)(((uint64_t)p * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int hash_put(struct af__pool_learn *l, uintptr_t key, uint32_t v)
{
    if ((l->hn + 1) * 2 > l->hcap) {
        size_t nc = l->hcap ? l->hcap * 2 : 1024;
        uintptr_t *nk = af__calloc(nc, sizeof(*nk));
        uint32_t *nv = af__malloc(nc * sizeof(*nv));
        if (!nk || !nv) {
            af__free(nk);
            af__free(nv);
            return AF_ENOMEM;
        }
        for (size_t i = 0; i < l->hcap; i++)
            if (l->hk[i]) {
                size_t s = ptr_slot(l->hk[i], nc);
                while (nk[s])
                    s = (s + 1) & (nc - 1);
                nk[s] = l->hk[i];
                nv[s] = l->hv[i];
            }
        af__free(l->hk);
        af__free(l->hv);
        l->hk = nk;
        l->hv = nv;
        l->hcap = nc;
    }
    size_t s = ptr_slot(key, l->hcap);
    while (l->hk[s] && l->hk[s] != key)
        s = (s + 1) & (l->hcap - 1);
    if (!l->hk[s])
        l->hn++;
    l->hk[s] = key;
    l->hv[s] = v;
    return 0;
}

static int64_t hash_get(const struct af__pool_learn *l, uintptr_t key)
{
    if (!l->hcap)
        return -1;
    for (size_t s = ptr_slot(key, l->hcap); l->hk[s]; s = (s + 1) & (l->hcap - 1))
        if (l->hk[s] == key)
            return l->hv[s];
    return -1;
}

static void learn_reset(struct af__pool_learn *l)
{
    l->n = 0;
    l->ev = 0;
    l->broken = 0;
    l->hn = 0;
    if (l->hcap)
        memset(l->hk, 0, l->hcap * sizeof(*l->hk));
}

static void learn_drop(af_pool_cache_t *k)
{
    struct af__pool_learn *l = k->learn;
    if (!l)
        return;
    af__free(l->size);
    af__free(l->lo);
    af__free(l->hi);
    af__free(l->hk);
    af__free(l->hv);
    af__free(l);
    k->learn = NULL;
}

/* The cache's fast-path switches: everything through the general path while recording or
 * replaying (allocs) / recording (frees), else as af_pool_cache_create set them. */
static void set_paths(af_pool_cache_t *k)
{
    af_pool_t *p = k->pool;
    int plain = !k->flags && !k->learn;
    k->fast_max = plain && !k->arena && p->lut_exact ? p->max_size : 0;
    k->owned = plain && k->tag ? k->tag << AF__POOL_TAG_SHIFT : UINT32_MAX;
}

void af__pool_learn_alloc(af_pool_cache_t *k, void *ptr, uint64_t size)
{
    struct af__pool_learn *l = k->learn;
    if (l->broken)
        return;
    if (l->n >= k->pool->opts.round_max || size >= (1ull << 32) - AF_POOL_ALIGN) {
        l->broken = 1;
        return;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        uint64_t *s = af__realloc(l->size, nc * sizeof(*s));
        if (s)
            l->size = s;
        int64_t *lo = s ? af__realloc(l->lo, nc * sizeof(*lo)) : NULL;
        if (lo)
            l->lo = lo;
        int64_t *hi = lo ? af__realloc(l->hi, nc * sizeof(*hi)) : NULL;
        if (!hi) {
            l->broken = 1;
            return;
        }
        l->hi = hi;
        l->cap = nc;
    }
    if (hash_put(l, (uintptr_t)ptr, (uint32_t)l->n)) {
        l->broken = 1;
        return;
    }
    l->size[l->n] = size;
    l->lo[l->n] = l->ev++;
    l->hi[l->n] = -1;
    l->n++;
}

void af__pool_learn_free(af_pool_cache_t *k, void *ptr)
{
    struct af__pool_learn *l = k->learn;
    int64_t i = l->broken ? -1 : hash_get(l, (uintptr_t)ptr);
    if (i >= 0 && l->hi[i] < 0)
        l->hi[i] = l->ev++;
}

static void arena_free_mem(af__pool_arena_t *a)
{
    af__free(a->e);
    af__free(a->pred);
    af__free(a->fo);
    af__free(a->byoff);
    af__free(a->hash);
    af__free(a);
}

static uint64_t arena_meta(const af__pool_arena_t *a)
{
    return sizeof(*a) + a->n * (sizeof(*a->e) + 2 * sizeof(uint32_t)) +
           ((size_t)1 << a->hbits) * sizeof(*a->hash) + a->e[a->n - 1].pb + a->e[a->n - 1].pn;
}

static uint32_t hslot(uint32_t key, uint32_t bits)
{
    return (key * 0x9E3779B1u) >> (32 - bits);
}

/* Lists, for every block, the earlier blocks sharing bytes with it (O(n^2): n <= round_max),
 * a cover first: taken from the latest down, a block joins the cover unless it shares bytes with
 * a block already in it (then that block's own list has it). */
static int build_pred(af__pool_arena_t *a)
{
    size_t total = 0, cap = (size_t)a->n * 4 + 16;
    uint32_t *pred = af__malloc(cap * sizeof(*pred)), *tmp = af__malloc(a->n * sizeof(*tmp)),
             *stamp = af__calloc(a->n, sizeof(*stamp));
    if (!pred || !tmp || !stamp)
        goto nomem;
    for (uint32_t i = 0; i < a->n; i++) {
        af__pool_rent_t *e = &a->e[i];
        uint32_t np = 0;
        for (uint32_t j = 0; j < i; j++) {
            const af__pool_rent_t *f = &a->e[j];
            if (f->off < e->off + e->units && e->off < f->off + f->units)
                tmp[np++] = j;
        }
        if (af__grow((void **)&pred, &cap, total + np, sizeof(*pred)))
            goto nomem;
        e->pb = (uint32_t)total;
        e->pn = np;
        uint32_t nd = 0, nr = np; /* cover at the front, the rest at the back */
        for (uint32_t q = np; q-- > 0;) {
            uint32_t j = tmp[q];
            if (stamp[j] == i + 1) {
                pred[total + --nr] = j;
                continue;
            }
            pred[total + nd++] = j;
            for (uint32_t x = a->e[j].pb; x < a->e[j].pb + a->e[j].pn; x++)
                stamp[pred[x]] = i + 1;
        }
        e->dn = nd;
        total += np;
    }
    af__free(tmp);
    af__free(stamp);
    a->pred = pred;
    return 0;
nomem:
    af__free(pred);
    af__free(tmp);
    af__free(stamp);
    return AF_ENOMEM;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Blocks by offset, and a hash from each offset to its run in that list. */
static int build_hash(af__pool_arena_t *a)
{
    uint32_t bits = 4;
    while ((1u << bits) < 2 * a->n)
        bits++;
    a->hbits = bits;
    a->hash = af__calloc((size_t)1 << bits, sizeof(*a->hash));
    a->byoff = af__malloc(a->n * sizeof(*a->byoff));
    if (!a->hash || !a->byoff)
        return AF_ENOMEM;
    uint64_t *ord = af__malloc(a->n * sizeof(*ord)); /* offset << 32 | block */
    if (!ord)
        return AF_ENOMEM;
    for (uint32_t i = 0; i < a->n; i++)
        ord[i] = (uint64_t)a->e[i].off << 32 | i;
    qsort(ord, a->n, sizeof(*ord), cmp_u64);
    for (uint32_t i = 0; i < a->n; i++)
        a->byoff[i] = (uint32_t)ord[i];
    af__free(ord);
    uint32_t mask = (1u << bits) - 1;
    for (uint32_t x = 0; x < a->n; x++) {
        uint32_t key = a->e[a->byoff[x]].off + 1, s = hslot(key, bits);
        if (x && a->e[a->byoff[x - 1]].off + 1 == key)
            continue; /* the run's first block holds the slot */
        while (a->hash[s].key)
            s = (s + 1) & mask;
        a->hash[s] = (af__pool_hslot_t){key, x};
    }
    return 0;
}

/* The block of arena a starting at ptr that is in use, or NULL; *placed: some block starts there.
 */
static af__pool_rent_t *find(const af__pool_arena_t *a, const void *ptr, int *placed)
{
    uint64_t o = (uint64_t)((const char *)ptr - a->base);
    *placed = 0;
    if (o & (AF_POOL_ALIGN - 1) || o / AF_POOL_ALIGN >= UINT32_MAX - 1)
        return NULL;
    uint32_t key = (uint32_t)(o / AF_POOL_ALIGN) + 1, mask = (1u << a->hbits) - 1;
    for (uint32_t s = hslot(key, a->hbits); a->hash[s].key; s = (s + 1) & mask) {
        if (a->hash[s].key != key)
            continue;
        *placed = 1;
        for (uint32_t x = a->hash[s].at; x < a->n && a->e[a->byoff[x]].off + 1 == key; x++) {
            af__pool_rent_t *e = &a->e[a->byoff[x]];
            if (atomic_load_explicit(&e->state, memory_order_acquire) & 1)
                return e;
        }
        return NULL;
    }
    return NULL;
}

/* Places the recorded round; NULL when it cannot be learned. */
static af__pool_arena_t *plan_round(const struct af__pool_learn *l)
{
    if (l->broken || !l->n)
        return NULL;
    for (size_t i = 0; i < l->n; i++)
        if (l->hi[i] < 0)
            return NULL; /* a block outlived the round or was freed elsewhere */
    af_interval_t *iv = af__malloc(l->n * sizeof(*iv));
    uint32_t *at = NULL; /* event position -> alloc index + 1 of the free there (0: an alloc) */
    af__pool_arena_t *a = af__calloc(1, sizeof(*a));
    if (!iv || !a)
        goto fail;
    for (size_t i = 0; i < l->n; i++)
        iv[i] = (af_interval_t){l->lo[i], l->hi[i], af__align_up(l->size[i], AF_POOL_ALIGN), 0};
    af_place_opts_t po = {.alignment = AF_POOL_ALIGN, .search_effort = 150};
    uint64_t height = 0;
    if (af_place_intervals(iv, l->n, "portfolio", &po, &height, NULL) ||
        af_intervals_verify(iv, l->n, height, AF_POOL_ALIGN, NULL) || !height ||
        height / AF_POOL_ALIGN >= UINT32_MAX)
        goto fail;
    a->n = (uint32_t)l->n;
    a->bytes = af__align_up(height, 4096);
    a->e = af__calloc(l->n + 1, sizeof(*a->e)); /* + the inline paths' sentinel */
    a->fo = af__malloc((l->n + 1) * sizeof(*a->fo));
    at = af__calloc((size_t)l->ev, sizeof(*at));
    if (!a->e || !a->fo || !at)
        goto fail;
    for (size_t i = 0; i < l->n; i++) {
        a->e[i].off = (uint32_t)(iv[i].offset / AF_POOL_ALIGN);
        a->e[i].units = (uint32_t)(iv[i].size / AF_POOL_ALIGN);
        at[l->hi[i]] = (uint32_t)i + 1;
    }
    a->e[l->n].gpos = UINT32_MAX; /* sentinel: size 0, never in use */
    a->fo[l->n] = (af__pool_fslot_t){0, (uint32_t)l->n};
    uint32_t nf = 0; /* the frees in the order they came */
    for (int64_t t = 0; t < l->ev; t++)
        if (at[t]) {
            a->e[at[t] - 1].fpos = nf;
            a->fo[nf++] = (af__pool_fslot_t){a->e[at[t] - 1].off, at[t] - 1};
        }
    if (build_pred(a) || build_hash(a))
        goto fail;
    for (size_t i = 0; i < l->n; i++) { /* the inline alloc's check (pool_int.h) */
        af__pool_rent_t *e = &a->e[i];
        e->gpos = e->dn == 0 ? 0 : e->dn == 1 ? a->e[a->pred[e->pb]].fpos + 1 : UINT32_MAX;
    }
    af__free(iv);
    af__free(at);
    return a;
fail:
    af__free(iv);
    af__free(at);
    if (a)
        arena_free_mem(a);
    return NULL;
}

/* Maps a learned arena and hands it to k (after giving idle memory back). 0 or AF_ENOMEM. */
static int install(af_pool_cache_t *k, af__pool_arena_t *a)
{
    af_pool_t *p = k->pool;
    af_pool_cache_flush(k);
    af_pool_trim(p, AF_POOL_TRIM_RELEASE, NULL);
    void *m = mmap(NULL, a->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return AF_ENOMEM;
#ifdef AF_ASAN_BUILD
    ASAN_POISON_MEMORY_REGION(m, a->bytes);
#endif
    a->base = m;
    atomic_store(&a->owner, k);
    af__pool_glock(p);
    a->next = p->arenas;
    p->arenas = a;
    AF__ADD(&p->os_maps, 1);
    AF__ADD(&p->reserved, a->bytes);
    AF__ADD(&p->arena_bytes, a->bytes);
    AF__ADD(&p->rounds_learned, 1);
    AF__ADD(&p->metadata, arena_meta(a));
    af__pool_note_reserved(p);
    af__pool_gunlock(p);
    k->arena = a;
    k->rp_e = a->e;
    k->rp_pred = a->pred;
    k->rp_fo = a->fo;
    k->rp_n = a->n;
    k->rp_lmask = k->flags ? 0 : ~0ull;
    k->rp_fi = k->flags ? a->n : 0;
    AF__ST(&k->rp_i, 0);
    AF__ST(&k->rp_i0, 0);
    AF__ST(&k->rp_slow, 0);
    AF__ST(&k->rp_ok, 0);
    k->rp_gen = 1;
    k->rp_done = 2;
    k->rp_base = a->base;
    k->rp_bytes = a->bytes;
    return 0;
}

static uint32_t arena_in_use(const af__pool_arena_t *a)
{
    uint32_t live = 0;
    for (uint32_t i = 0; i < a->n; i++)
        live += atomic_load_explicit(&a->e[i].state, memory_order_acquire) & 1;
    return live;
}

static af__pool_rent_t none_e = {.gpos = UINT32_MAX}; /* read only: never handed out */
static const af__pool_fslot_t none_fo = {0, 0};

void af__pool_rp_none(af_pool_cache_t *k)
{
    k->rp_e = &none_e;
    k->rp_fo = &none_fo;
    k->rp_lmask = 0;
    AF__ST(&k->rp_i, 0);
    k->rp_fi = 0;
    k->rp_n = 0;
}

int af_pool_cache_round(af_pool_cache_t *k)
{
    if (!k)
        return AF_EINVAL;
    af_pool_t *p = k->pool;
    if (k->arena) { /* replaying: the next round starts at block 0 unless one is still in use */
        uint64_t hits, frees; /* the round's counts join the totals */
        af__pool_rp_count(k, &hits, &frees);
        AF__ST(&k->rp_hits, hits);
        AF__ST(&k->rp_frees, frees);
        /* blocks in use: handed out - freed here - freed by other threads */
        int held = hits != frees + atomic_load_explicit(&k->arena->remote, memory_order_acquire);
        uint32_t i0 = held ? k->rp_n : 0;
        AF__ST(&k->rp_i, i0);
        AF__ST(&k->rp_i0, i0);
        AF__ST(&k->rp_slow, 0);
        AF__ST(&k->rp_ok, 0);
        k->rp_gen = (k->rp_gen + 1) & 0x7fffffffu; /* 0 is reserved for "never handed out" */
        if (!k->rp_gen)
            k->rp_gen = 1;
        k->rp_done = k->rp_gen << 1;
        k->rp_hold = (uint32_t)held;
        k->rp_fi = k->flags ? k->rp_n : 0;
        if (held)
            AF__ST(&k->rp_held, AF__LD(&k->rp_held) + 1);
        return 0;
    }
    if (!p->opts.round_max || k->rp_tries >= LEARN_TRIES)
        return 0;
    if (!k->learn) { /* start recording with the next round */
        k->learn = af__calloc(1, sizeof(*k->learn));
        set_paths(k);
        return 0;
    }
    if (!k->learn->n && !k->learn->broken) { /* no requests: nothing to learn, no try spent */
        learn_reset(k->learn);
        return 0;
    }
    af__pool_arena_t *a = plan_round(k->learn);
    if (a && install(k, a) == 0) {
        learn_drop(k);
    } else {
        if (a)
            arena_free_mem(a);
        if (++k->rp_tries >= LEARN_TRIES)
            learn_drop(k);
        else
            learn_reset(k->learn);
    }
    set_paths(k);
    return 0;
}

/* ---- replay: the fast paths (this cache's thread) ---------------------------------------- */

/* Whether block e's bytes are free: no earlier block of the round sharing them is in use. Fast:
 * every block of e's cover was handed out this round (so its own earlier blocks were free then,
 * and a round hands each block out once, in order) and is free again. Else every one is checked. */
static inline int clear(const af_pool_cache_t *k, const af__pool_rent_t *e)
{
    const uint32_t *pr = k->rp_pred + e->pb, done = k->rp_gen << 1;
    uint32_t j = 0;
    while (j < e->dn && atomic_load_explicit(&k->rp_e[pr[j]].state, memory_order_acquire) == done)
        j++;
    if (j == e->dn)
        return 1;
    for (j = 0; j < e->pn; j++)
        if (atomic_load_explicit(&k->rp_e[pr[j]].state, memory_order_acquire) & 1)
            return 0;
    return 1;
}

static void exact_live(af_pool_t *p, int64_t d)
{
    if (p->exact_peak) {
        int64_t v = AF__ADD(&p->live_req, d) + d;
        if (d > 0)
            af__pool_note_peak(p, (uint64_t)v);
    }
}

/* Serves the round's block i (its place fits and is free): marks it in use. */
static char *take(af_pool_cache_t *k, af__pool_rent_t *e, size_t size)
{
    atomic_store_explicit(&e->state, k->rp_gen << 1 | 1, memory_order_relaxed);
    AF__ST(&e->req, (uint32_t)size);
    AF__ST(&k->rp_hits, AF__LD(&k->rp_hits) + 1);
    return k->rp_base + (uint64_t)e->off * AF_POOL_ALIGN;
}

void af__pool_rp_count(const af_pool_cache_t *k, uint64_t *hits, uint64_t *frees)
{
    uint32_t inl = AF__LD(&k->rp_i) - AF__LD(&k->rp_i0) - AF__LD(&k->rp_slow);
    *hits = AF__LD(&k->rp_hits) + inl;
    *frees = AF__LD(&k->rp_frees) + AF__LD(&k->rp_ok);
}

/* The general alloc of a cache with a learned arena (the inline path said no). A request takes
 * the round's next position when it is served, from its place or (a miss) from the classes; a
 * request that fails (size 0, too large for any mapping) is no part of the round. */
int af__pool_rp_alloc(af_pool_cache_t *k, size_t size, void **out)
{
    if (!size)
        return AF_EINVAL;
    uint32_t i = AF__LD(&k->rp_i);
    if (i < k->rp_n) {
        af__pool_rent_t *e = &k->rp_e[i];
        if (size <= (uint64_t)e->units * AF_POOL_ALIGN && clear(k, e)) {
            AF__ST(&k->rp_i, i + 1);
            AF__ST(&k->rp_slow, AF__LD(&k->rp_slow) + 1);
            char *a = take(k, e, size);
            if (k->flags) {
                exact_live(k->pool, (int64_t)size);
                af__pool_on_alloc(k->pool, a, size);
            }
            *out = a;
            return 0;
        }
    }
    int rc = af__pool_cache_alloc_general(k, size, out);
    if (rc)
        return rc;
    if (i < k->rp_n) { /* out of place or too large: a miss that takes the position */
        AF__ST(&k->rp_i, i + 1);
        AF__ST(&k->rp_slow, AF__LD(&k->rp_slow) + 1);
    }
    if (i < k->rp_n || !k->rp_hold) /* ... or an extra request */
        AF__ST(&k->rp_misses, AF__LD(&k->rp_misses) + 1);
    return 0;
}

/* A free that is not the round's next one (or a debug mode): found by offset. */
static int rp_free_rest(af_pool_cache_t *k, void *ptr)
{
    af_pool_t *p = k->pool;
    int placed;
    af__pool_rent_t *e = find(k->arena, ptr, &placed);
    if (!e) {
        AF__ADD(placed ? &p->double_frees : &p->foreign_frees, 1);
        return placed ? AF_EDOUBLEFREE : AF_EFOREIGN;
    }
    uint32_t st = atomic_load_explicit(&e->state, memory_order_relaxed);
    if (k->flags) {
        exact_live(p, -(int64_t)AF__LD(&e->req));
        af__pool_on_free(p, ptr, (uint64_t)e->units * AF_POOL_ALIGN);
        if (!atomic_compare_exchange_strong_explicit(&e->state, &st, st & ~1u, memory_order_release,
                                                     memory_order_relaxed)) {
            AF__ADD(&p->double_frees, 1);
            return AF_EDOUBLEFREE;
        }
    } else {
        atomic_store_explicit(&e->state, st & ~1u, memory_order_release);
    }

    k->rp_fi = k->rp_n; /* out of order: rp_ok stays, the round's other frees are looked up */
    AF__ST(&k->rp_frees, AF__LD(&k->rp_frees) + 1);
    return 0;
}

int af__pool_rp_free(af_pool_cache_t *k, void *ptr)
{
    return rp_free_rest(k, ptr); /* the inline fast path (af__pool_rp_free_fast) said no */
}

/* ---- other threads, statistics, teardown (glock) --------------------------------------- */

static af__pool_arena_t *arena_of(af_pool_t *p, const void *ptr)
{
    for (af__pool_arena_t *a = p->arenas; a; a = a->next)
        if ((uintptr_t)ptr - (uintptr_t)a->base < a->bytes)
            return a;
    return NULL;
}

/* Unpoisoned first: ASan's shadow outlives the mapping, and whatever is mapped there next would
 * read as poisoned. */
static void arena_unmap(af__pool_arena_t *a)
{
#ifdef AF_ASAN_BUILD
    ASAN_UNPOISON_MEMORY_REGION(a->base, a->bytes);
#endif
    munmap(a->base, a->bytes);
}

static void arena_release(af_pool_t *p, af__pool_arena_t *a)
{
    af__pool_arena_t **pp = &p->arenas;
    while (*pp != a)
        pp = &(*pp)->next;
    *pp = a->next;
    arena_unmap(a);
    AF__ADD(&p->os_unmaps, 1);
    AF__SUB(&p->reserved, a->bytes);
    AF__SUB(&p->arena_bytes, a->bytes);
    AF__ADD(&p->trimmed, a->bytes);
    AF__SUB(&p->metadata, arena_meta(a));
    arena_free_mem(a);
}

int af__pool_arena_free(af_pool_t *p, void *ptr)
{
    af__pool_glock(p);
    af__pool_arena_t *a = arena_of(p, ptr);
    int placed = 0;
    af__pool_rent_t *e = a ? find(a, ptr, &placed) : NULL;
    int rc = placed ? AF_EDOUBLEFREE : AF_EFOREIGN;
    if (!e && placed)
        AF__ADD(&p->double_frees, 1);
    if (e) {
        rc = 0;
        uint64_t bs = (uint64_t)e->units * AF_POOL_ALIGN;
        uint32_t st = atomic_load_explicit(&e->state, memory_order_relaxed);
        if (st & 1) {
            if (p->exact_peak)
                AF__SUB(&p->live_req, (int64_t)AF__LD(&e->req));
            af__pool_on_free(p, ptr, bs); /* before the block can be handed out again */
        }
        if (!(st & 1) ||
            !atomic_compare_exchange_strong_explicit(&e->state, &st, st & ~1u, memory_order_release,
                                                     memory_order_relaxed)) {
            AF__ADD(&p->double_frees, 1);
            rc = AF_EDOUBLEFREE;
        } else {
            AF__ADD(&p->arena_remote_frees, 1);
            /* release: the round's end (acquire) orders this thread's use of the block before
             * the owner hands it out again */
            atomic_fetch_add_explicit(&a->remote, 1, memory_order_release);
            if (!atomic_load(&a->owner) && !arena_in_use(a))
                arena_release(p, a); /* an orphan's last block */
        }
    }
    af__pool_gunlock(p);
    return rc;
}

int af__pool_arena_info(af_pool_t *p, const void *ptr, af_pool_block_info_t *info)
{
    pthread_mutex_lock(&p->glock); /* statistics: not counted */
    af__pool_arena_t *a = arena_of(p, ptr);
    int placed = 0;
    af__pool_rent_t *e = a ? find(a, ptr, &placed) : NULL;
    if (placed) {
        info->state = e ? AF_BLOCK_INUSE : AF_BLOCK_FREE;
        info->owner_class = -1;
        info->borrower_class = -1;
        info->block_size = e ? (uint64_t)e->units * AF_POOL_ALIGN : 0; /* free: sizes differ */
    }
    pthread_mutex_unlock(&p->glock);
    return placed ? 0 : AF_EFOREIGN;
}

void af__pool_round_detach(af_pool_cache_t *k)
{
    af_pool_t *p = k->pool;
    learn_drop(k);
    uint64_t hits, frees;
    af__pool_rp_count(k, &hits, &frees);
    AF__ADD(&p->retired_rp_hits, hits);
    AF__ADD(&p->retired_rp_frees, frees);
    AF__ADD(&p->retired_rp_misses, AF__LD(&k->rp_misses));
    AF__ADD(&p->retired_rp_held, AF__LD(&k->rp_held));
    af__pool_arena_t *a = k->arena;
    if (!a)
        return;
    k->arena = NULL;
    atomic_store(&a->owner, NULL);
    if (!arena_in_use(a))
        arena_release(p, a);
}

uint64_t af__pool_arena_trim(af_pool_t *p)
{
    uint64_t freed = 0;
    for (af__pool_arena_t *a = p->arenas, *next; a; a = next) {
        next = a->next;
        if (!atomic_load(&a->owner) && !arena_in_use(a)) {
            freed += a->bytes;
            arena_release(p, a);
        }
    }
    return freed;
}

void af__pool_arena_live(af_pool_t *p, int64_t *req, uint64_t *blocks)
{
    for (af__pool_arena_t *a = p->arenas; a; a = a->next)
        for (uint32_t i = 0; i < a->n; i++)
            if (atomic_load_explicit(&a->e[i].state, memory_order_acquire) & 1) {
                if (req)
                    *req += AF__LD(&a->e[i].req);
                if (blocks)
                    *blocks += (uint64_t)a->e[i].units * AF_POOL_ALIGN;
            }
}

void af__pool_arena_unmap_all(af_pool_t *p)
{
    while (p->arenas) {
        af__pool_arena_t *a = p->arenas;
        p->arenas = a->next;
        arena_unmap(a);
        arena_free_mem(a);
    }
}

/* ---- a recorded round's own mappings (glock) --------------------------------------------- */

/* One block mapped for a recorded round; entries stay (live 0) once unmapped, so a second free is
 * reported as a double free; a later mapping at the same address takes the entry over. */
struct af__pool_direct {
    uintptr_t ptr; /* 0: empty slot */
    uint64_t bytes, req;
    int live;
};

static size_t direct_slot(uintptr_t ptr, size_t cap)
{
    return (size_t)((((uint64_t)ptr >> 12) * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static struct af__pool_direct *direct_find(af_pool_t *p, uintptr_t ptr)
{
    if (!p->cap_direct)
        return NULL;
    for (size_t s = direct_slot(ptr, p->cap_direct); p->direct[s].ptr;
         s = (s + 1) & (p->cap_direct - 1))
        if (p->direct[s].ptr == ptr)
            return &p->direct[s];
    return NULL;
}

static struct af__pool_direct *direct_put(af_pool_t *p, uintptr_t ptr)
{
    struct af__pool_direct *d = direct_find(p, ptr);
    if (d)
        return d;
    if ((p->ndirect + 1) * 2 > p->cap_direct) {
        size_t nc = p->cap_direct ? p->cap_direct * 2 : 256;
        struct af__pool_direct *nd = af__calloc(nc, sizeof(*nd));
        if (!nd)
            return NULL;
        for (size_t i = 0; i < p->cap_direct; i++)
            if (p->direct[i].ptr) {
                size_t s = direct_slot(p->direct[i].ptr, nc);
                while (nd[s].ptr)
                    s = (s + 1) & (nc - 1);
                nd[s] = p->direct[i];
            }
        AF__ADD(&p->metadata, (nc - p->cap_direct) * sizeof(*nd));
        af__free(p->direct);
        p->direct = nd;
        p->cap_direct = nc;
    }
    size_t s = direct_slot(ptr, p->cap_direct);
    while (p->direct[s].ptr)
        s = (s + 1) & (p->cap_direct - 1);
    p->ndirect++;
    p->direct[s].ptr = ptr;
    return &p->direct[s];
}

int af__pool_direct_alloc(af_pool_cache_t *k, size_t size, void **out)
{
    af_pool_t *p = k->pool;
    if (size < AF__POOL_DIRECT_MIN || k->learn->broken)
        return 1;
    uint64_t bytes = af__align_up(size, 4096);
    if (bytes < size)
        return AF_ESIZE;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1; /* the classes may still have room */
    af__pool_glock(p);
    struct af__pool_direct *d = direct_put(p, (uintptr_t)m);
    if (d) {
        d->bytes = bytes;
        d->req = size;
        d->live = 1;
        AF__ADD(&p->direct_allocs, 1);
        AF__ADD(&p->os_maps, 1);
        AF__ADD(&p->reserved, bytes);
        af__pool_note_reserved(p);
    }
    af__pool_gunlock(p);
    if (!d) {
        munmap(m, bytes);
        return 1;
    }
    exact_live(p, (int64_t)size);
    af__pool_on_alloc(p, m, size);
    *out = m;
    return 0;
}

int af__pool_direct_free(af_pool_t *p, void *ptr)
{
    af__pool_glock(p);
    struct af__pool_direct *d = direct_find(p, (uintptr_t)ptr);
    int rc = !d ? AF_EFOREIGN : !d->live ? AF_EDOUBLEFREE : 0;
    if (rc == AF_EDOUBLEFREE)
        AF__ADD(&p->double_frees, 1);
    if (rc == 0) {
        d->live = 0;
        AF__ADD(&p->direct_frees, 1);
        exact_live(p, -(int64_t)d->req);
        munmap(ptr, d->bytes);
        AF__ADD(&p->os_unmaps, 1);
        AF__SUB(&p->reserved, d->bytes);
    }
    af__pool_gunlock(p);
    return rc;
}

int af__pool_direct_info(af_pool_t *p, const void *ptr, af_pool_block_info_t *info)
{
    pthread_mutex_lock(&p->glock); /* statistics: not counted */
    struct af__pool_direct *d = direct_find(p, (uintptr_t)ptr);
    if (d) {
        info->state = d->live ? AF_BLOCK_INUSE : AF_BLOCK_FREE;
        info->owner_class = info->borrower_class = -1;
        info->block_size = d->bytes;
    }
    pthread_mutex_unlock(&p->glock);
    return d ? 0 : AF_EFOREIGN;
}

void af__pool_direct_live(af_pool_t *p, int64_t *req, uint64_t *blocks)
{
    for (size_t i = 0; i < p->cap_direct; i++)
        if (p->direct[i].ptr && p->direct[i].live) {
            if (req)
                *req += (int64_t)p->direct[i].req;
            if (blocks)
                *blocks += p->direct[i].bytes;
        }
}

void af__pool_direct_unmap_all(af_pool_t *p)
{
    for (size_t i = 0; i < p->cap_direct; i++)
        if (p->direct[i].ptr && p->direct[i].live)
            munmap((void *)p->direct[i].ptr, p->direct[i].bytes);
    af__free(p->direct);
    p->direct = NULL;
    p->cap_direct = p->ndirect = 0;
}
