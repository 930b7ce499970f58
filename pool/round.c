/*
 * Learned rounds: a cache that repeats the same work round after round (af_pool_cache_round
 * marks the rounds) records one round and lays its blocks out in one arena, the way the planner
 * lays out a graph's tensors (seed 1, §6.1: cache the first round's plan, then follow it). This
 * file: the round boundary, the replay and the arenas; pool/learn.c: recording and placing.
 *
 * Why: a size-class pool keeps each class's memory for that class. When the classes' peaks come
 * at different moments of a round, the memory reserved is the sum of the classes' peaks, not the
 * peak of their sum; re-cutting free memory online (regions: best fit + coalescing) helps, but a
 * non-moving allocator that does not know the future still fragments on such traces. One
 * recorded round is that future: the planner's interval placement packs the round's blocks
 * close to its peak of live bytes.
 *
 * Recording and learning (pool/learn.c): one round's requests and frees, then their intervals
 * placed by the planner's af_place_intervals, each block's earlier overlapping blocks listed
 * (pred, a cover first), and the round's free order (fo). Before the arena is mapped (outside
 * the pool's reservation) the cache's idle class blocks and the pool's idle chunks go back to the
 * OS (af_pool_trim).
 *
 * Replay (inline in cache.c via pool_int.h, else af__pool_rp_alloc): the i-th alloc of a round gets
 * block i's place when it fits and no block of pred(i) is in use; blocks of later indexes cannot be
 * in use yet (a round hands out block i at most once, in index order) and none is left from the
 * previous round (checked at each round's end; otherwise the next round is served by the classes:
 * "held"). So two blocks in use never share bytes, whatever order the caller frees in. The owner
 * frees with plain stores; other threads free under glock with a CAS (af__pool_arena_free).
 *
 * Lock rule: recording, learning and the replay fields belong to the cache's thread; pool->arenas
 * and arena ownership change under glock; block states are atomics (relaxed for the owner's own
 * stores, acquire/release between the owner's checks and other threads' frees).
 */
#include "pool/pool_int.h"

#include "arenaflow/pack.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

static uint64_t arena_meta(const af__pool_arena_t *a)
{
    return sizeof(*a) + a->n * (sizeof(*a->e) + 2 * sizeof(uint32_t)) +
           ((size_t)1 << a->hbits) * sizeof(*a->hash) +
           ((uint64_t)a->e[a->n - 1].pb + a->e[a->n - 1].pn) * sizeof(*a->pred);
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
    for (uint32_t s = af__pool_rp_hslot(key, a->hbits); a->hash[s].key; s = (s + 1) & mask) {
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
    if (!p->opts.round_max || k->rp_tries >= AF__POOL_LEARN_TRIES)
        return 0;
    if (!k->learn) { /* start recording with the next round */
        af__pool_learn_start(k);
        af__pool_cache_paths(k);
        return 0;
    }
    if (af__pool_learn_empty(k)) { /* no requests: nothing to learn, no try spent */
        af__pool_learn_reset(k);
        return 0;
    }
    af__pool_arena_t *a = af__pool_learn_plan(k);
    if (a && install(k, a) == 0) {
        af__pool_learn_drop(k);
    } else {
        if (a)
            af__pool_arena_free_mem(a);
        if (++k->rp_tries >= AF__POOL_LEARN_TRIES)
            af__pool_learn_drop(k);
        else
            af__pool_learn_reset(k);
    }
    af__pool_cache_paths(k);
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
                af__pool_exact_live(k->pool, (int64_t)size);
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
        af__pool_exact_live(p, -(int64_t)AF__LD(&e->req));
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
    af__pool_arena_free_mem(a);
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
    af__pool_learn_drop(k);
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
        af__pool_arena_free_mem(a);
    }
}
