/*
 * The learned-round tests' runner (test_pool_round*.c): fixed-seed traces of allocs and frees, and
 * a runner that replays them through a cache round after round, writes a pattern into every block
 * at alloc and checks it at free, checks that no two live blocks share a byte, and predicts each
 * request of a learned round from the documented rule (include/arenaflow/pool.h,
 * af_pool_cache_round):
 *   the i-th alloc of a round gets place i when the round is not held (no arena block in use at
 *   its start), the request fits (size <= place i's size, blocks being sized in multiples of
 *   AF_POOL_ALIGN) and no arena block in use shares bytes with place i; anything else is served by
 *   the classes, outside the arena.
 * The places are taken from the first round served entirely from the arena (run_learn). Include
 * after <cmocka.h> and pool_testutil.h.
 */
#ifndef ARENAFLOW_TESTS_POOL_ROUND_RUNNER_H
#define ARENAFLOW_TESTS_POOL_ROUND_RUNNER_H

#include "arenaflow/pool.h"

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static inline size_t align_up(size_t n)
{
    return (n + AF_POOL_ALIGN - 1) / AF_POOL_ALIGN * AF_POOL_ALIGN;
}

/* ---- pool configurations (cmocka prestate: a test's *state points to one, or is NULL) ---------
 */

typedef struct {
    const char *name;
    uint64_t region_min;  /* opts.region_min */
    int poison;           /* opts.poison */
    int exact_peak;       /* opts.exact_peak */
    int recycle;          /* opts.recycle */
    double reserve_ratio; /* opts.reserve_ratio */
} round_cfg_t;

/* A pool with the defaults changed by the test's configuration; prints it. */
static inline af_pool_t *cfg_pool(void **state)
{
    const round_cfg_t *c = state ? *state : NULL;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    if (c) {
        o.region_min = c->region_min;
        o.poison = c->poison;
        o.exact_peak = c->exact_peak;
        o.recycle = c->recycle;
        o.reserve_ratio = c->reserve_ratio;
        printf("[%s]\n", c->name);
    }
    return make_pool(&o);
}

/* ---- traces ------------------------------------------------------------------------------ */

enum { EV_ALLOC = 1, EV_FREE = 2 };

typedef struct {
    int op, id;
    size_t size; /* EV_ALLOC */
} ev_t;

typedef struct {
    uint64_t seed;
    int n, nev; /* blocks; events (2n) */
    ev_t *ev;
    uint64_t peak; /* peak of live requested bytes */
} trace_t;

/* Peak of live requested bytes of an event list (ids below cap). */
static inline uint64_t events_peak(const ev_t *ev, int nev, int cap)
{
    size_t *sz = calloc((size_t)cap, sizeof(*sz));
    uint64_t live = 0, peak = 0;
    for (int e = 0; e < nev; e++) {
        if (ev[e].op == EV_ALLOC) {
            sz[ev[e].id] = ev[e].size;
            live += ev[e].size;
            peak = live > peak ? live : peak;
        } else {
            live -= sz[ev[e].id];
        }
    }
    free(sz);
    return peak;
}

/* n blocks of log-uniform sizes in [lo, hi]; block i is allocated at step i and freed at the start
 * of step i + 1 .. i + maxlife (before that step's alloc). */
static inline void trace_make(trace_t *t, uint64_t seed, int n, size_t lo, size_t hi, int maxlife)
{
    uint64_t s = seed;
    int *death = calloc((size_t)n, sizeof(*death));
    size_t *size = calloc((size_t)n, sizeof(*size));
    t->seed = seed;
    t->n = n;
    t->nev = 0;
    t->ev = calloc(2 * (size_t)n, sizeof(*t->ev));
    for (int i = 0; i < n; i++) {
        size[i] = rng_size(&s, lo, hi);
        death[i] = i + 1 + (int)(rng_next(&s) % (uint64_t)maxlife);
    }
    for (int step = 0; step <= n + maxlife; step++) {
        for (int i = step > maxlife ? step - maxlife : 0; i < step && i < n; i++)
            if (death[i] == step)
                t->ev[t->nev++] = (ev_t){EV_FREE, i, 0};
        if (step < n)
            t->ev[t->nev++] = (ev_t){EV_ALLOC, step, size[step]};
    }
    assert_int_equal(t->nev, 2 * n);
    t->peak = events_peak(t->ev, t->nev, n);
    free(death);
    free(size);
}

static inline void trace_free(trace_t *t)
{
    free(t->ev);
    t->ev = NULL;
}

/* ---- the runner: replays events through a cache, checks contents and predicts places ------- */

enum { HOW_CACHE = 0, HOW_POOL = 1, HOW_OTHER = 2 }; /* which free call a free event uses */

typedef struct {
    af_pool_t *pool;
    af_pool_cache_t *k, *other; /* other: a second cache (HOW_OTHER) */
    uint64_t seed;              /* of the trace, printed on failure */
    int round;                  /* round being played (tags, messages) */
    int cap;                    /* ids */
    void **ptr;                 /* by id: the live block or NULL */
    size_t *size;
    uint64_t *tag;
    int *place; /* by id: the arena place it took, or -1 */
    /* this round's allocs, in order */
    int nalloc, acap;
    void **aptr;
    size_t *asize;
    /* the learned layout, once known */
    int known, nplaces;
    uintptr_t *addr, lo, hi;
    size_t *psize; /* aligned */
    int *busy;     /* by place: an arena block there is in use */
    int held, hits_pred;
    int next_held;         /* the last round's end decided the next one is held */
    int check_poison;      /* requested bytes read 0xAA at alloc */
    int check_asan;        /* under ASan: a freed arena block is poisoned, a live one is not */
    int enomem_ok, enomem; /* an alloc may fail with AF_ENOMEM (skipped, counted) */
    af_pool_stats_t st0;
} run_t;

static inline void run_init(run_t *r, af_pool_t *pool, uint64_t seed, int cap)
{
    memset(r, 0, sizeof(*r));
    r->pool = pool;
    assert_int_equal(af_pool_cache_create(pool, &r->k), 0);
    r->seed = seed;
    r->cap = cap;
    r->ptr = calloc((size_t)cap, sizeof(*r->ptr));
    r->size = calloc((size_t)cap, sizeof(*r->size));
    r->tag = calloc((size_t)cap, sizeof(*r->tag));
    r->place = calloc((size_t)cap, sizeof(*r->place));
    r->acap = 4 * cap;
    r->aptr = calloc((size_t)r->acap, sizeof(*r->aptr));
    r->asize = calloc((size_t)r->acap, sizeof(*r->asize));
}

static inline void run_fini(run_t *r)
{
    free(r->ptr);
    free(r->size);
    free(r->tag);
    free(r->place);
    free(r->aptr);
    free(r->asize);
    free(r->addr);
    free(r->psize);
    free(r->busy);
}

static inline int places_overlap(const run_t *r, int a, int b)
{
    return r->addr[a] < r->addr[b] + r->psize[b] && r->addr[b] < r->addr[a] + r->psize[a];
}

/* The documented rule: the place alloc number ai gets, or -1 for the classes. */
static inline int predict(const run_t *r, int ai, size_t size)
{
    if (!r->known || r->held || ai >= r->nplaces)
        return -1;
    if (size > r->psize[ai])
        return -1;
    for (int j = 0; j < r->nplaces; j++)
        if (r->busy[j] && places_overlap(r, j, ai))
            return -1;
    return ai;
}

static inline void no_overlap(const run_t *r, const void *p, size_t size, int id)
{
    uintptr_t a = (uintptr_t)p;
    for (int j = 0; j < r->cap; j++) {
        uintptr_t b = (uintptr_t)r->ptr[j];
        if (j == id || !b)
            continue;
        if (a < b + r->size[j] && b < a + size) {
            fprintf(stderr,
                    "seed %llx round %d: block %d [%p, +%zu) overlaps live block %d [%p, "
                    "+%zu)\n",
                    (unsigned long long)r->seed, r->round, id, p, size, j, r->ptr[j], r->size[j]);
            fail();
        }
    }
}

static inline int all_bytes(const void *p, size_t n, unsigned char v)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != v)
            return 0;
    return 1;
}

static inline void run_alloc(run_t *r, int id, size_t size)
{
    int ai = r->nalloc++;
    int pred = predict(r, ai, size);
    void *p = NULL;
    int rc = af_pool_cache_alloc(r->k, size, &p);
    if (rc == AF_ENOMEM && r->enomem_ok) { /* out-of-memory tests: the block is skipped */
        r->enomem++;
        r->ptr[id] = NULL;
        return;
    }
    if (rc) {
        fprintf(stderr, "seed %llx round %d: alloc %d of %zu bytes: %s\n",
                (unsigned long long)r->seed, r->round, ai, size, af_strerror(rc));
        fail();
    }
    int got = -1;
    if (r->known) {
        int in_arena = (uintptr_t)p >= r->lo && (uintptr_t)p < r->hi;
        got = ai < r->nplaces && (uintptr_t)p == r->addr[ai] ? ai : -1;
        if (got != pred || (got < 0 && in_arena)) {
            fprintf(stderr,
                    "seed %llx round %d: alloc %d (%zu bytes, place size %zu): expected %s, got "
                    "%p (%s)\n",
                    (unsigned long long)r->seed, r->round, ai, size,
                    ai < r->nplaces ? r->psize[ai] : 0, pred >= 0 ? "its place" : "a class block",
                    p,
                    got >= 0   ? "its place"
                    : in_arena ? "elsewhere in the arena"
                               : "a class block");
            fail();
        }
        if (got >= 0)
            r->busy[got] = 1;
        r->hits_pred += got >= 0;
    }
    if (ai < r->acap) {
        r->aptr[ai] = p;
        r->asize[ai] = size;
    }
    no_overlap(r, p, size, id);
    if (r->check_poison && !all_bytes(p, size, 0xAA)) {
        fprintf(stderr, "seed %llx round %d: alloc %d (%zu bytes at %p) not filled with 0xAA\n",
                (unsigned long long)r->seed, r->round, ai, size, p);
        fail();
    }
#ifdef AF_ASAN_BUILD
    if (r->check_asan)
        assert_null(__asan_region_is_poisoned(p, size));
#endif
    r->ptr[id] = p;
    r->size[id] = size;
    r->tag[id] = ((uint64_t)r->round << 32) | (uint64_t)id;
    r->place[id] = got;
    fill(p, size, r->tag[id]);
}

static inline void run_free(run_t *r, int id, int how)
{
    void *p = r->ptr[id];
    assert_non_null(p);
    if (!check(p, r->size[id], r->tag[id])) {
        fprintf(stderr, "seed %llx round %d: block %d (%zu bytes at %p, place %d) corrupted\n",
                (unsigned long long)r->seed, r->round, id, r->size[id], p, r->place[id]);
        fail();
    }
    int rc = how == HOW_POOL    ? af_pool_free(r->pool, p)
             : how == HOW_OTHER ? af_pool_cache_free(r->other, p)
                                : af_pool_cache_free(r->k, p);
    if (rc) {
        fprintf(stderr, "seed %llx round %d: free of block %d: %s\n", (unsigned long long)r->seed,
                r->round, id, af_strerror(rc));
        fail();
    }
#ifdef AF_ASAN_BUILD
    if (r->check_asan && r->place[id] >= 0)
        assert_true(__asan_address_is_poisoned(p));
#endif
    if (r->place[id] >= 0)
        r->busy[r->place[id]] = 0;
    r->ptr[id] = NULL;
}

static inline void run_events(run_t *r, const ev_t *ev, int nev)
{
    for (int e = 0; e < nev; e++) {
        if (ev[e].op == EV_ALLOC)
            run_alloc(r, ev[e].id, ev[e].size);
        else if (r->ptr[ev[e].id] || !r->enomem_ok)
            run_free(r, ev[e].id, HOW_CACHE);
    }
}

/* What a round did. hits, misses, os_maps: during the round; learned, next_held: at its end
 * (af_pool_cache_round learns, and decides whether the next round is held). */
typedef struct {
    uint64_t hits, misses, learned, next_held, os_maps;
    int allocs, predicted;
} round_delta_t;

static inline void run_begin(run_t *r, int round)
{
    r->round = round;
    r->nalloc = 0;
    r->hits_pred = 0;
    r->held = 0;
    for (int j = 0; r->known && j < r->nplaces; j++)
        r->held |= r->busy[j];
    if (r->known && r->held != r->next_held) {
        fprintf(stderr, "seed %llx round %d: %s, but the round is %sheld\n",
                (unsigned long long)r->seed, round,
                r->held ? "an arena block is in use" : "no arena block is in use",
                r->next_held ? "" : "not ");
        fail();
    }
    af_pool_stats(r->pool, &r->st0);
}

/* Ends the round (af_pool_cache_round) and returns what the round did. */
static inline round_delta_t run_end(run_t *r)
{
    af_pool_stats_t st;
    af_pool_stats(r->pool, &st);
    round_delta_t d = {
        st.round_hits - r->st0.round_hits,
        st.round_misses - r->st0.round_misses,
        0,
        0,
        st.os_maps - r->st0.os_maps,
        r->nalloc,
        r->hits_pred,
    };
    if (r->known && d.hits != (uint64_t)r->hits_pred) {
        fprintf(stderr, "seed %llx round %d: round_hits grew by %llu, %d allocs got their place\n",
                (unsigned long long)r->seed, r->round, (unsigned long long)d.hits, r->hits_pred);
        fail();
    }
    assert_int_equal(af_pool_cache_round(r->k), 0);
    af_pool_stats(r->pool, &st);
    d.learned = st.rounds_learned - r->st0.rounds_learned;
    d.next_held = st.rounds_held - r->st0.rounds_held;
    r->next_held = (int)d.next_held;
    return d;
}

/* After a round served entirely from the arena: its allocs' addresses are the places. */
static inline void run_learn_places(run_t *r)
{
    r->nplaces = r->nalloc;
    r->addr = calloc((size_t)r->nplaces, sizeof(*r->addr));
    r->psize = calloc((size_t)r->nplaces, sizeof(*r->psize));
    r->busy = calloc((size_t)r->nplaces, sizeof(*r->busy));
    r->lo = UINTPTR_MAX;
    r->hi = 0;
    for (int i = 0; i < r->nplaces; i++) {
        r->addr[i] = (uintptr_t)r->aptr[i];
        r->psize[i] = align_up(r->asize[i]);
        assert_int_equal(r->addr[i] % AF_POOL_ALIGN, 0);
        r->lo = r->addr[i] < r->lo ? r->addr[i] : r->lo;
        r->hi = r->addr[i] + r->psize[i] > r->hi ? r->addr[i] + r->psize[i] : r->hi;
    }
    r->known = 1;
}

/* Rounds 0 (not recorded), 1 (recorded: learned at its end) and 2 (the first replay: every alloc
 * from the arena, which gives the places). Checks the counters at each step. */
static inline void run_learn(run_t *r, const trace_t *t)
{
    run_begin(r, 0);
    run_events(r, t->ev, t->nev);
    round_delta_t d = run_end(r); /* starts recording */
    assert_int_equal(d.learned, 0);
    assert_int_equal(d.hits, 0);
    run_begin(r, 1);
    run_events(r, t->ev, t->nev);
    af_pool_stats_t st0, st;
    af_pool_stats(r->pool, &st0);
    d = run_end(r);
    assert_int_equal(d.hits, 0);
    assert_int_equal(d.learned, 1);
    af_pool_stats(r->pool, &st);
    assert_int_equal(st.round_arenas, 1);
    assert_true(st.round_arena_bytes > 0);
    assert_int_equal(st.os_maps - st0.os_maps, 1);             /* the arena: one OS call */
    assert_int_equal(st.reserved_bytes, st.round_arena_bytes); /* idle memory went back first */
    run_begin(r, 2);
    run_events(r, t->ev, t->nev);
    d = run_end(r);
    if (d.hits != (uint64_t)t->n || d.misses != 0) {
        fprintf(stderr, "seed %llx: first replayed round: %llu hits, %llu misses of %d allocs\n",
                (unsigned long long)r->seed, (unsigned long long)d.hits,
                (unsigned long long)d.misses, t->n);
        fail();
    }
    run_learn_places(r);
    assert_true(r->hi - r->lo <= st.round_arena_bytes);
}

/* ---- departures from the trace ------------------------------------------------------------ */

/* One round's departures from the trace (-1 / 0: none). */
typedef struct {
    int grow, shrink;       /* id of the request asked larger (2x + 4 KiB) / smaller (half) */
    int extra_at, extra_n;  /* extra_n requests of 64 KiB + 1 before alloc event extra_at */
    int hold_from, hold_to; /* frees among events [from, to) postponed to `to`, reversed */
    int keep;               /* id whose free is left out (kept across the round's end) */
} departure_t;

/* Copies the trace's events into out with the departures dv; returns the number of events. */

static inline int deviate(const trace_t *t, const departure_t *dv, ev_t *out)
{
    int n = 0, nheld = 0, held[64];
    for (int e = 0; e <= t->nev; e++) {
        if (e == dv->hold_to)
            while (nheld)
                out[n++] = (ev_t){EV_FREE, held[--nheld], 0};
        if (e == t->nev)
            break;
        ev_t v = t->ev[e];
        if (v.op == EV_ALLOC && v.id == dv->extra_at)
            for (int x = 0; x < dv->extra_n; x++)
                out[n++] = (ev_t){EV_ALLOC, t->n + x, 64 * KiB + 1};
        if (v.op == EV_ALLOC && v.id == dv->grow)
            v.size = 2 * v.size + 4 * KiB;
        if (v.op == EV_ALLOC && v.id == dv->shrink)
            v.size = v.size / 2 > 0 ? v.size / 2 : 1;
        if (v.op == EV_FREE && v.id == dv->keep)
            continue;
        if (v.op == EV_FREE && e >= dv->hold_from && e < dv->hold_to) {
            assert_true(nheld < 64);
            held[nheld++] = v.id;
            continue;
        }
        out[n++] = v;
    }
    for (int x = 0; x < dv->extra_n; x++) /* the extra blocks are freed at the round's end */
        out[n++] = (ev_t){EV_FREE, t->n + x, 0};
    return n;
}

#endif
