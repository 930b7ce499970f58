/*
 * Tests of the pool's learned rounds (af_pool_cache_round, pool/round.c): a cache records one
 * round, lays its blocks out in one arena and serves the following rounds from it.
 *
 * Method: a trace is a fixed-seed list of allocs and frees (block i freed 1..maxlife steps after
 * it was allocated). A runner replays it through a cache, writes a pattern into every block at
 * alloc and checks it at free, and checks that no two live blocks share a byte. Once a round has
 * been served entirely from the arena, the runner knows every block's place and predicts each
 * later request from the documented rule alone: the i-th alloc of a round gets place i when the
 * round is not held (no arena block in use at its start), the request fits (size <= place i's
 * size, blocks being sized in multiples of AF_POOL_ALIGN) and no arena block in use shares bytes
 * with place i; anything else is served by the classes, outside the arena. Each alloc is checked
 * against the prediction, and each round's round_hits against the number of predicted hits.
 *
 * Random inputs come from fixed seeds (xorshift64*, pool_testutil.h), printed on failure. Under
 * ASan/TSan the stress test runs fewer rounds (SCALE).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arenaflow/pool.h"
#include "pool_testutil.h"

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static size_t align_up(size_t n)
{
    return (n + AF_POOL_ALIGN - 1) / AF_POOL_ALIGN * AF_POOL_ALIGN;
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
static uint64_t events_peak(const ev_t *ev, int nev, int cap)
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
static void trace_make(trace_t *t, uint64_t seed, int n, size_t lo, size_t hi, int maxlife)
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

static void trace_free(trace_t *t)
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
    int next_held;    /* the last round's end decided the next one is held */
    int check_poison; /* requested bytes read 0xAA at alloc */
    int check_asan;   /* under ASan: a freed arena block is poisoned, a live one is not */
    af_pool_stats_t st0;
} run_t;

static void run_init(run_t *r, af_pool_t *pool, uint64_t seed, int cap)
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

static void run_fini(run_t *r)
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

static int places_overlap(const run_t *r, int a, int b)
{
    return r->addr[a] < r->addr[b] + r->psize[b] && r->addr[b] < r->addr[a] + r->psize[a];
}

/* The documented rule: the place alloc number ai gets, or -1 for the classes. */
static int predict(const run_t *r, int ai, size_t size)
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

static void no_overlap(const run_t *r, const void *p, size_t size, int id)
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

static int all_bytes(const void *p, size_t n, unsigned char v)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != v)
            return 0;
    return 1;
}

static void run_alloc(run_t *r, int id, size_t size)
{
    int ai = r->nalloc++;
    int pred = predict(r, ai, size);
    void *p = NULL;
    int rc = af_pool_cache_alloc(r->k, size, &p);
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

static void run_free(run_t *r, int id, int how)
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

static void run_events(run_t *r, const ev_t *ev, int nev)
{
    for (int e = 0; e < nev; e++) {
        if (ev[e].op == EV_ALLOC)
            run_alloc(r, ev[e].id, ev[e].size);
        else
            run_free(r, ev[e].id, HOW_CACHE);
    }
}

/* What a round did. hits, misses, os_maps: during the round; learned, next_held: at its end
 * (af_pool_cache_round learns, and decides whether the next round is held). */
typedef struct {
    uint64_t hits, misses, learned, next_held, os_maps;
    int allocs, predicted;
} round_delta_t;

static void run_begin(run_t *r, int round)
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
static round_delta_t run_end(run_t *r)
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
static void run_learn_places(run_t *r)
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
static void run_learn(run_t *r, const trace_t *t)
{
    run_begin(r, 0);
    run_events(r, t->ev, t->nev);
    round_delta_t d = run_end(r); /* starts recording */
    assert_int_equal(d.learned, 0);
    assert_int_equal(d.hits, 0);
    run_begin(r, 1);
    run_events(r, t->ev, t->nev);
    d = run_end(r);
    assert_int_equal(d.hits, 0);
    assert_int_equal(d.learned, 1);
    af_pool_stats_t st;
    af_pool_stats(r->pool, &st);
    assert_int_equal(st.round_arenas, 1);
    assert_true(st.round_arena_bytes > 0);
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

/* ---- 1. learn, then serve ----------------------------------------------------------------- */

static void test_round_learns_and_serves(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0x0001ea4edull, 200, 256, 4 * MiB, 8);
    af_pool_t *p = make_pool(NULL);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    run_learn(&r, &t);
    for (int round = 3; round < 10; round++) {
        run_begin(&r, round);
        run_events(&r, t.ev, t.nev);
        round_delta_t d = run_end(&r);
        assert_int_equal(d.hits, t.n);
        assert_int_equal(d.misses, 0);
        assert_int_equal(d.os_maps, 0); /* nothing from the classes: no chunk mapped */
        assert_int_equal(d.learned, 0); /* a cache learns once */
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    double ratio = (double)st.reserved_bytes / (double)t.peak;
    printf("learned round: %d blocks, peak live %.2f MiB, arena %.2f MiB, reserved %.2f MiB "
           "(%.3f x peak), hits %llu\n",
           t.n, (double)t.peak / MiB, (double)st.round_arena_bytes / MiB,
           (double)st.reserved_bytes / MiB, ratio, (unsigned long long)st.round_hits);
    assert_int_equal(st.round_hits, 8 * (uint64_t)t.n); /* rounds 2..9 */
    assert_int_equal(st.round_misses, 0);
    assert_int_equal(st.rounds_learned, 1);
    assert_int_equal(st.round_arenas, 1);
    assert_true(st.round_arena_bytes >= t.peak);
    assert_true(ratio <= 1.25);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.requested_bytes, 0);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.allocs, 10 * (uint64_t)t.n);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* ---- 2. rounds that depart from the recorded one ------------------------------------------ */

/* Copies the trace's events into out with one departure; returns the number of events. */
typedef struct {
    int grow, shrink;       /* id of the request asked larger (2x + 4 KiB) / smaller (half) */
    int extra_at, extra_n;  /* extra_n requests of 64 KiB + 1 before alloc event extra_at */
    int hold_from, hold_to; /* frees among events [from, to) postponed to `to`, reversed */
    int keep;               /* id whose free is left out (kept across the round's end) */
} departure_t;

static int deviate(const trace_t *t, const departure_t *dv, ev_t *out)
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

static const departure_t NO_DEV = {-1, -1, -1, 0, -1, -1, -1};

static void test_round_deviations_stay_correct(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0xde7a7e5ull, 200, 256, 4 * MiB, 8);
    af_pool_t *p = make_pool(NULL);
    run_t r;
    run_init(&r, p, t.seed, t.n + 8);
    run_learn(&r, &t);
    ev_t *ev = calloc((size_t)t.nev + 64, sizeof(*ev));
    struct {
        const char *what;
        departure_t dv;
    } rounds[] = {
        {"larger request", {100, -1, -1, 0, -1, -1, -1}},
        {"smaller request", {-1, 100, -1, 0, -1, -1, -1}},
        {"extra requests in the middle", {-1, -1, 100, 3, -1, -1, -1}},
        {"extra requests at the end", {-1, -1, -1, 0, -1, -1, -1}},
        {"frees postponed and reversed", {-1, -1, -1, 0, 150, 210, -1}},
        {"learned trace", NO_DEV},
        {"a block kept across the round's end", {-1, -1, -1, 0, -1, -1, 199}},
        {"held: the kept block freed first", NO_DEV},
        {"learned trace again", NO_DEV},
    };
    int nround = (int)(sizeof(rounds) / sizeof(rounds[0]));
    for (int i = 0; i < nround; i++) {
        int n = deviate(&t, &rounds[i].dv, ev), round = 3 + i;
        run_begin(&r, round);
        if (i == 3) { /* extras after the last recorded alloc: beyond the recorded round */
            for (int x = 0; x < 5; x++)
                ev[n + x] = (ev_t){EV_ALLOC, t.n + x, 4 * KiB};
            for (int x = 0; x < 5; x++)
                ev[n + 5 + x] = (ev_t){EV_FREE, t.n + x, 0};
            n += 10;
        }
        if (i == 7) {
            assert_int_equal(r.held, 1); /* the model agrees the kept block is in the arena */
            run_free(&r, 199, HOW_CACHE);
        }
        run_events(&r, ev, n);
        round_delta_t d = run_end(&r);
        printf("round %d, %s: %d allocs, %llu hits, %llu misses, next round held %llu\n", round,
               rounds[i].what, d.allocs, (unsigned long long)d.hits, (unsigned long long)d.misses,
               (unsigned long long)d.next_held);
        if (i != 7)
            assert_int_equal(d.hits + d.misses, d.allocs);
        switch (i) {
        case 0: /* the larger one misses; the rest keep their places */
            assert_int_equal(d.hits, t.n - 1);
            break;
        case 1:
            assert_int_equal(d.hits, t.n);
            break;
        case 3:
            assert_int_equal(d.hits, t.n);
            assert_int_equal(d.misses, 5);
            break;
        case 4: /* postponed frees keep places taken: later requests sharing them miss */
            assert_true(d.misses > 0);
            break;
        case 6:
            assert_int_equal(d.hits, t.n);
            assert_int_equal(d.next_held, 1);
            break;
        case 7:
            assert_int_equal(d.hits, 0);
            assert_int_equal(d.next_held, 0);
            break;
        case 5:
        case 8:
            assert_int_equal(d.hits, t.n);
            assert_int_equal(d.misses, 0);
            break;
        }
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.rounds_learned, 1);
    assert_int_equal(st.rounds_held, 1);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    free(ev);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* ---- 3. frees from another thread --------------------------------------------------------- */

enum { QCAP = 512 };

typedef struct {
    void *ptr;
    size_t size;
    uint64_t tag;
    int how;
} item_t;

/* A thread that frees what it is handed (through its own cache or af_pool_free). */
typedef struct {
    af_pool_t *pool;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item_t q[QCAP];
    int head, tail, stop;
    long pushed, done;
    int bad, errors;
} freer_t;

static void *freer_main(void *arg)
{
    freer_t *f = arg;
    af_pool_cache_t *k;
    if (af_pool_cache_create(f->pool, &k))
        return NULL;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (f->head == f->tail && !f->stop)
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->head == f->tail)
            break;
        item_t it = f->q[f->head];
        f->head = (f->head + 1) % QCAP;
        pthread_mutex_unlock(&f->mu);
        int bad = !check(it.ptr, it.size, it.tag);
        int rc = it.how == HOW_POOL ? af_pool_free(f->pool, it.ptr) : af_pool_cache_free(k, it.ptr);
        pthread_mutex_lock(&f->mu);
        f->bad += bad;
        f->errors += rc != 0;
        f->done++;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->mu);
    af_pool_cache_destroy(k);
    return NULL;
}

static void freer_push(freer_t *f, void *ptr, size_t size, uint64_t tag, int how)
{
    pthread_mutex_lock(&f->mu);
    while ((f->tail + 1) % QCAP == f->head)
        pthread_cond_wait(&f->cv, &f->mu);
    f->q[f->tail] = (item_t){ptr, size, tag, how};
    f->tail = (f->tail + 1) % QCAP;
    f->pushed++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void freer_wait(freer_t *f)
{
    pthread_mutex_lock(&f->mu);
    while (f->done < f->pushed)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

/* Plays the trace; every third free goes to the freer thread (alternating its cache and
 * af_pool_free); sync: waits until it is done, so the frees keep the trace's order. */
static void run_remote_round(run_t *r, const trace_t *t, freer_t *f, int round, int sync)
{
    run_begin(r, round);
    int nth = 0;
    for (int e = 0; e < t->nev; e++) {
        const ev_t *v = &t->ev[e];
        if (v->op == EV_ALLOC) {
            run_alloc(r, v->id, v->size);
            continue;
        }
        if (v->id % 3) {
            run_free(r, v->id, HOW_CACHE);
            continue;
        }
        int id = v->id;
        assert_true(check(r->ptr[id], r->size[id], r->tag[id]));
        freer_push(f, r->ptr[id], r->size[id], r->tag[id], nth++ % 2 ? HOW_POOL : HOW_CACHE);
        if (sync) {
            freer_wait(f);
            if (r->place[id] >= 0)
                r->busy[r->place[id]] = 0;
        }
        r->ptr[id] = NULL;
    }
}

static void test_round_cross_thread_free(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0xc2055ull, 120, 256, 2 * MiB, 8);
    af_pool_t *p = make_pool(NULL);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    run_learn(&r, &t);
    freer_t *f = calloc(1, sizeof(*f));
    f->pool = p;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, freer_main, f), 0);

    /* frees handed over one at a time, in the trace's order: every place is free in time */
    run_remote_round(&r, &t, f, 3, 1);
    round_delta_t d = run_end(&r);
    assert_int_equal(d.hits, t.n);
    assert_int_equal(d.misses, 0);
    /* frees running behind on the other thread: places may still be taken (misses) and the next
     * round may start with one in use (held); only contents are checked (by the freer) */
    r.known = 0;
    int held_rounds = 0;
    for (int round = 4; round < 8; round++) {
        run_remote_round(&r, &t, f, round, 0);
        d = run_end(&r);
        held_rounds += (int)d.next_held;
        assert_int_equal(d.hits + d.misses <= (uint64_t)t.n, 1);
    }
    freer_wait(f);
    memset(r.busy, 0, (size_t)r.nplaces * sizeof(*r.busy));
    /* everything freed now, but the last round may have ended with a block still out: round 8
     * may be held; round 9 is served from the arena again */
    r.known = 0;
    run_begin(&r, 8);
    run_events(&r, t.ev, t.nev);
    d = run_end(&r);
    r.known = 1;
    run_remote_round(&r, &t, f, 9, 1);
    d = run_end(&r);
    assert_int_equal(d.hits, t.n);
    assert_int_equal(d.misses, 0);

    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(th, NULL);
    printf("cross-thread: %ld frees on the other thread, %d held rounds\n", f->done, held_rounds);
    if (f->bad || f->errors)
        fprintf(stderr, "seed %llx: %d corrupted blocks, %d failed frees on the other thread\n",
                (unsigned long long)t.seed, f->bad, f->errors);
    assert_int_equal(f->bad, 0);
    assert_int_equal(f->errors, 0);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* ---- 4. bad frees ------------------------------------------------------------------------- */

static int is_place_start(const run_t *r, uintptr_t a)
{
    for (int j = 0; j < r->nplaces; j++)
        if (r->addr[j] == a)
            return 1;
    return 0;
}

static void test_round_bad_frees(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0xbadf1ee5ull, 40, 4 * KiB, 512 * KiB, 4);
    af_pool_t *p = make_pool(NULL);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    assert_int_equal(af_pool_cache_create(p, &r.other), 0);
    run_learn(&r, &t);
    run_begin(&r, 3);
    int nbad = 0, id = -1;
    uint64_t doubles = 0, foreign = 0;
    for (int e = 0; e < t.nev; e++) {
        const ev_t *v = &t.ev[e];
        if (v->op == EV_ALLOC) {
            run_alloc(&r, v->id, v->size);
            continue;
        }
        id = v->id;
        if (r.place[id] < 0 || nbad >= 6) {
            run_free(&r, id, HOW_CACHE);
            continue;
        }
        void *b = r.ptr[id];
        af_pool_block_info_t bi;
        assert_int_equal(af_pool_block_info(p, b, &bi), 0);
        assert_int_equal(bi.state, AF_BLOCK_INUSE);
        assert_true(bi.block_size >= r.size[id]);
        /* interior pointers (unaligned, and aligned but not the start of any place) */
        uintptr_t in = (uintptr_t)b + AF_POOL_ALIGN;
        while (in < (uintptr_t)b + r.size[id] && is_place_start(&r, in))
            in += AF_POOL_ALIGN;
        assert_int_equal(af_pool_cache_free(r.k, (char *)b + 8), AF_EFOREIGN);
        assert_int_equal(af_pool_free(p, (char *)b + 8), AF_EFOREIGN);
        foreign += 2;
        if (in < (uintptr_t)b + r.size[id]) {
            assert_int_equal(af_pool_cache_free(r.k, (void *)in), AF_EFOREIGN);
            assert_int_equal(af_pool_free(p, (void *)in), AF_EFOREIGN);
            assert_int_equal(af_pool_cache_free(r.other, (void *)in), AF_EFOREIGN);
            foreign += 3;
        }
        assert_int_equal(af_pool_block_info(p, b, &bi), 0);
        assert_int_equal(bi.state, AF_BLOCK_INUSE);
        /* the block is intact; freed by its cache, af_pool_free or the other cache in turn */
        run_free(&r, id, nbad % 3);
        assert_int_equal(af_pool_block_info(p, b, &bi), 0);
        assert_int_equal(bi.state, AF_BLOCK_FREE);
        assert_int_equal(af_pool_cache_free(r.k, b), AF_EDOUBLEFREE);
        assert_int_equal(af_pool_free(p, b), AF_EDOUBLEFREE);
        assert_int_equal(af_pool_cache_free(r.other, b), AF_EDOUBLEFREE);
        doubles += 3;
        nbad++;
    }
    assert_int_equal(nbad, 6);
    round_delta_t d = run_end(&r);
    /* the round is unchanged by the bad frees: next round, every block has its place again */
    run_begin(&r, 4);
    run_events(&r, t.ev, t.nev);
    round_delta_t d2 = run_end(&r);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    printf("bad frees: %llu double, %llu foreign; hits %llu then %llu of %d\n",
           (unsigned long long)st.double_frees, (unsigned long long)st.foreign_frees,
           (unsigned long long)d.hits, (unsigned long long)d2.hits, t.n);
    assert_int_equal(d.hits, t.n);
    assert_int_equal(d2.hits, t.n);
    assert_int_equal(st.double_frees, doubles);
    assert_int_equal(st.foreign_frees, foreign);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.allocs, st.frees);
    af_pool_cache_destroy(r.other);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* ---- 5. rounds that cannot be learned ----------------------------------------------------- */

enum { PLAIN = 0, KEEP_ONE, EXTRA_ONE, POOL_FREE };

/* Plays the trace as one round, with: KEEP_ONE, one more alloc never freed (returned in *kept);
 * EXTRA_ONE, one more alloc freed before the round's end; POOL_FREE, block 0 freed with
 * af_pool_free instead of the cache. Returns the round's counters. */
static round_delta_t plain_round(run_t *r, const trace_t *t, int round, int mode, void **kept)
{
    run_begin(r, round);
    void *extra = NULL;
    for (int e = 0; e < t->nev; e++) {
        const ev_t *v = &t->ev[e];
        if (v->op == EV_ALLOC)
            run_alloc(r, v->id, v->size);
        else
            run_free(r, v->id, mode == POOL_FREE && v->id == 0 ? HOW_POOL : HOW_CACHE);
        if ((mode == KEEP_ONE || mode == EXTRA_ONE) && e == t->nev / 2)
            assert_int_equal(af_pool_cache_alloc(r->k, 3000, &extra), 0);
    }
    if (mode == EXTRA_ONE)
        assert_int_equal(af_pool_cache_free(r->k, extra), 0);
    if (mode == KEEP_ONE)
        *kept = extra;
    return run_end(r);
}

static af_pool_t *round_pool(uint32_t round_max)
{
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.round_max = round_max;
    return make_pool(&o);
}

/* `bad` recordings that cannot be learned (a block kept), then clean rounds. Returns the round
 * hits of the last clean round. */
static uint64_t learn_after_failures(const trace_t *t, int bad)
{
    af_pool_t *p = round_pool(4096);
    run_t r;
    run_init(&r, p, t->seed, t->n);
    void *kept[8];
    int round = 0;
    plain_round(&r, t, round++, PLAIN, NULL); /* starts recording */
    for (int i = 0; i < bad; i++) {
        round_delta_t d = plain_round(&r, t, round++, KEEP_ONE, &kept[i]);
        assert_int_equal(d.learned, 0);
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.round_arenas, 0);
    round_delta_t d = {0};
    uint64_t learned = 0;
    for (int i = 0; i < 4; i++) {
        d = plain_round(&r, t, round++, PLAIN, NULL);
        learned += d.learned;
    }
    af_pool_stats(p, &st);
    assert_int_equal(st.rounds_learned, learned);
    assert_int_equal(st.round_arenas, learned);
    for (int i = 0; i < bad; i++)
        assert_int_equal(af_pool_cache_free(r.k, kept[i]), 0);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    return learned ? d.hits : 0;
}

static void test_round_not_learnable(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0x0dd5ull, 20, 1 * KiB, 256 * KiB, 4);
    /* two failed recordings: the third learns; three: learning has stopped */
    uint64_t after2 = learn_after_failures(&t, 2), after3 = learn_after_failures(&t, 3);
    printf("not learnable: hits after 2 failed recordings %llu, after 3 %llu\n",
           (unsigned long long)after2, (unsigned long long)after3);
    assert_int_equal(after2, t.n);
    assert_int_equal(after3, 0);

    /* a block of the recorded round freed through af_pool_free: not freed through the cache */
    af_pool_t *p = round_pool(4096);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    plain_round(&r, &t, 0, PLAIN, NULL);
    round_delta_t d = plain_round(&r, &t, 1, POOL_FREE, NULL);
    assert_int_equal(d.learned, 0);
    d = plain_round(&r, &t, 2, PLAIN, NULL); /* the next recording is clean */
    assert_int_equal(d.learned, 1);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);

    /* round_max = 0: never */
    p = round_pool(0);
    run_init(&r, p, t.seed, t.n);
    for (int i = 0; i < 6; i++) {
        d = plain_round(&r, &t, i, PLAIN, NULL);
        assert_int_equal(d.learned, 0);
        assert_int_equal(d.hits, 0);
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.round_arenas, 0);
    assert_int_equal(st.round_hits + st.round_misses, 0);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);

    /* round_max = n: a round of n + 1 allocs is not learned, the next one of n is */
    p = round_pool((uint32_t)t.n);
    run_init(&r, p, t.seed, t.n);
    plain_round(&r, &t, 0, PLAIN, NULL);
    d = plain_round(&r, &t, 1, EXTRA_ONE, NULL); /* n + 1 allocs, all freed */
    assert_int_equal(d.learned, 0);
    d = plain_round(&r, &t, 2, PLAIN, NULL);
    assert_int_equal(d.learned, 1);
    d = plain_round(&r, &t, 3, PLAIN, NULL);
    assert_int_equal(d.hits, t.n);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);

    /* round_max = n - 1: a clean round of n allocs is too long */
    p = round_pool((uint32_t)t.n - 1);
    run_init(&r, p, t.seed, t.n);
    for (int i = 0; i < 3; i++)
        assert_int_equal(plain_round(&r, &t, i, PLAIN, NULL).learned, 0);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* ---- 6. destroying the cache while its arena's blocks are in use -------------------------- */

/* Learns the trace, then plays the next round up to the event where the most arena blocks are
 * in use; returns how many are. */
static int learn_and_stop_midway(run_t *r, const trace_t *t)
{
    run_learn(r, t);
    int best = 0, at = 0, live = 0;
    for (int e = 0; e < t->nev; e++) {
        live += t->ev[e].op == EV_ALLOC ? 1 : -1;
        if (live > best) {
            best = live;
            at = e;
        }
    }
    run_begin(r, 3);
    run_events(r, t->ev, at + 1);
    int n = 0;
    for (int id = 0; id < t->n; id++)
        n += r->ptr[id] && r->place[id] >= 0;
    assert_int_equal(n, best);
    return n;
}

/* Under ASan: once the arena is unmapped, none of its bytes may stay poisoned, or the next
 * mapping the system puts there (any library's) reports a use-after-poison. */
static void no_stale_poison(const run_t *r)
{
#ifdef AF_ASAN_BUILD
    void *bad = __asan_region_is_poisoned((void *)r->lo, r->hi - r->lo);
    if (bad)
        fprintf(stderr, "released arena [%p, %p): %p still poisoned\n", (void *)r->lo,
                (void *)r->hi, bad);
    assert_null(bad);
#else
    (void)r;
#endif
}

static void test_round_cache_destroy_with_live_blocks(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0xde57c0ull, 60, 4 * KiB, 1 * MiB, 8);
    af_pool_t *p = make_pool(NULL);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    int live = learn_and_stop_midway(&r, &t);
    af_pool_cache_destroy(r.k);
    r.k = NULL;
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    uint64_t arena = st.round_arena_bytes, reserved = st.reserved_bytes;
    assert_int_equal(st.round_arenas, 1); /* kept while its blocks are in use */
    assert_true(arena > 0);
    for (int id = 0, left = live; id < t.n; id++)
        if (r.ptr[id]) {
            void *b = r.ptr[id];
            run_free(&r, id, HOW_POOL);
            /* the orphan's last block releases it: that pointer is no longer the pool's */
            assert_int_equal(af_pool_free(p, b), --left ? AF_EDOUBLEFREE : AF_EFOREIGN);
        }
    af_pool_stats(p, &st);
    assert_int_equal(st.round_arenas, 0);
    uint64_t rel = 0;
    assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_RELEASE, &rel), 0);
    af_pool_stats(p, &st);
    printf("cache destroyed with %d arena blocks in use: arena %.2f MiB, reserved %.2f -> %.2f "
           "MiB\n",
           live, (double)arena / MiB, (double)reserved / MiB, (double)st.reserved_bytes / MiB);
    assert_int_equal(st.round_arenas, 0);
    assert_int_equal(st.round_arena_bytes, 0);
    assert_true(st.reserved_bytes + arena <= reserved);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.double_frees, (uint64_t)live - 1);
    no_stale_poison(&r);
    /* the pool still serves */
    void *b;
    assert_int_equal(af_pool_alloc(p, 100 * KiB, &b), 0);
    assert_int_equal(af_pool_free(p, b), 0);
    run_fini(&r);
    af_pool_destroy(p);

    /* a cache destroyed with nothing in use releases its arena at once */
    p = make_pool(NULL);
    run_init(&r, p, t.seed, t.n);
    run_learn(&r, &t);
    af_pool_stats(p, &st);
    reserved = st.reserved_bytes;
    arena = st.round_arena_bytes;
    af_pool_cache_destroy(r.k);
    af_pool_stats(p, &st);
    assert_int_equal(st.round_arenas, 0);
    assert_true(st.reserved_bytes + arena <= reserved);
    no_stale_poison(&r);
    run_fini(&r);
    af_pool_destroy(p);

    /* the pool destroyed with arena blocks in use (after the cache; then with the cache still
     * there): nothing leaks (ASan's leak check) */
    for (int with_cache = 0; with_cache < 2; with_cache++) {
        p = make_pool(NULL);
        run_init(&r, p, t.seed, t.n);
        learn_and_stop_midway(&r, &t);
        if (!with_cache)
            af_pool_cache_destroy(r.k);
        af_pool_destroy(p);
        no_stale_poison(&r);
        run_fini(&r);
    }
    trace_free(&t);
}

/* ---- 7. debug modes ----------------------------------------------------------------------- */

static void test_round_debug_modes(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0xdeb06ull, 100, 256, 1 * MiB, 6);
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.poison = 1;
    o.exact_peak = 1;
    af_pool_t *p = make_pool(&o);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    r.check_poison = 1; /* every alloc reads 0xAA, class blocks and arena blocks alike */
    run_learn(&r, &t);
    r.check_asan = 1;
    for (int round = 3; round < 5; round++) {
        af_pool_reset_peak(p);
        run_begin(&r, round);
        uint64_t live = 0;
        for (int e = 0; e < t.nev; e++) {
            const ev_t *v = &t.ev[e];
            live += v->op == EV_ALLOC ? v->size : 0;
            live -= v->op == EV_FREE ? r.size[v->id] : 0;
            if (v->op == EV_ALLOC)
                run_alloc(&r, v->id, v->size);
            else
                run_free(&r, v->id, HOW_CACHE);
            if (e % 16 == 0) {
                af_pool_stats_t st;
                af_pool_stats(p, &st);
                assert_int_equal(st.requested_bytes, live);
            }
        }
        af_pool_stats_t st;
        af_pool_stats(p, &st);
        printf("debug modes: round %d, peak requested %llu, trace peak %llu, hits %d\n", round,
               (unsigned long long)st.peak_requested_bytes, (unsigned long long)t.peak,
               r.hits_pred);
        assert_int_equal(st.peak_requested_bytes, t.peak);
        assert_int_equal(st.requested_bytes, 0);
        assert_int_equal(run_end(&r).hits, t.n);
    }
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* ---- 8. two threads, each its own learned trace, deviations, hand-overs ------------------- */

typedef struct stress_thr {
    af_pool_t *pool;
    uint64_t seed;
    int rounds;
    struct stress_thr *peer;
    pthread_mutex_t mu; /* the incoming queue */
    item_t q[QCAP];
    int head, tail;
    _Atomic int finished;
    /* results */
    int bad, errors, handed;
    uint64_t allocs;
} stress_thr_t;

/* Frees what the peer handed over (half through the cache, half through af_pool_free). */
static void stress_drain(stress_thr_t *s, af_pool_cache_t *k)
{
    for (;;) {
        pthread_mutex_lock(&s->mu);
        if (s->head == s->tail) {
            pthread_mutex_unlock(&s->mu);
            return;
        }
        item_t it = s->q[s->head];
        s->head = (s->head + 1) % QCAP;
        pthread_mutex_unlock(&s->mu);
        s->bad += !check(it.ptr, it.size, it.tag);
        s->errors += (it.how ? af_pool_free(s->pool, it.ptr) : af_pool_cache_free(k, it.ptr)) != 0;
    }
}

static int stress_hand(stress_thr_t *to, item_t it)
{
    pthread_mutex_lock(&to->mu);
    int ok = (to->tail + 1) % QCAP != to->head;
    if (ok) {
        to->q[to->tail] = it;
        to->tail = (to->tail + 1) % QCAP;
    }
    pthread_mutex_unlock(&to->mu);
    return ok;
}

static void *stress_main(void *arg)
{
    stress_thr_t *s = arg;
    trace_t t;
    trace_make(&t, s->seed, 64, 256, 1 * MiB, 8);
    uint64_t rs = s->seed ^ 0x5deece66dull;
    af_pool_cache_t *k;
    if (af_pool_cache_create(s->pool, &k)) {
        s->errors++;
        return NULL;
    }
    void *ptr[64] = {0};
    size_t size[64];
    for (int round = 0; round < s->rounds; round++) {
        int dev_on = round >= 3; /* rounds 0-2: recorded and learned as they are */
        for (int e = 0; e < t.nev; e++) {
            const ev_t *v = &t.ev[e];
            uint64_t x = rng_next(&rs);
            uint64_t tag = ((uint64_t)round << 40) | (s->seed << 8) | (uint64_t)v->id;
            if (v->op == EV_ALLOC) {
                size[v->id] = dev_on && x % 50 == 0 ? 2 * v->size + 4 * KiB : v->size;
                if (af_pool_cache_alloc(k, size[v->id], &ptr[v->id])) {
                    s->errors++;
                    goto out;
                }
                fill(ptr[v->id], size[v->id], tag);
                s->allocs++;
            } else {
                s->bad += !check(ptr[v->id], size[v->id], tag);
                item_t it = {ptr[v->id], size[v->id], tag, (int)(x >> 32) & 1};
                if (dev_on && x % 10 == 1 && stress_hand(s->peer, it))
                    s->handed++;
                else
                    s->errors += af_pool_cache_free(k, ptr[v->id]) != 0;
                ptr[v->id] = NULL;
            }
            stress_drain(s, k);
        }
        s->errors += af_pool_cache_round(k) != 0;
    }
out:
    atomic_store(&s->finished, 1);
    while (!atomic_load(&s->peer->finished))
        stress_drain(s, k);
    stress_drain(s, k);
    for (int i = 0; i < 64; i++)
        if (ptr[i])
            af_pool_cache_free(k, ptr[i]);
    af_pool_cache_destroy(k);
    trace_free(&t);
    return NULL;
}

static void test_round_two_thread_stress(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    stress_thr_t *s = calloc(2, sizeof(*s));
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        s[i].pool = p;
        s[i].seed = 0x57e55ull + (uint64_t)i;
        s[i].rounds = 200 / SCALE;
        s[i].peer = &s[1 - i];
        pthread_mutex_init(&s[i].mu, NULL);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &s[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    uint64_t allocs = 0;
    for (int i = 0; i < 2; i++) {
        if (s[i].bad || s[i].errors)
            fprintf(stderr, "seed %llx: %d corrupted blocks, %d failed calls\n",
                    (unsigned long long)s[i].seed, s[i].bad, s[i].errors);
        assert_int_equal(s[i].bad, 0);
        assert_int_equal(s[i].errors, 0);
        allocs += s[i].allocs;
    }
    printf("two threads: %llu allocs, %d + %d handed over, %llu hits, %llu misses, %llu held, "
           "learned %llu\n",
           (unsigned long long)allocs, s[0].handed, s[1].handed, (unsigned long long)st.round_hits,
           (unsigned long long)st.round_misses, (unsigned long long)st.rounds_held,
           (unsigned long long)st.rounds_learned);
    assert_int_equal(st.rounds_learned, 2);
    assert_true(st.round_hits > 0);
    assert_true(s[0].handed > 0 && s[1].handed > 0);
    assert_int_equal(st.allocs, allocs);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    /* a cache may be destroyed while the other thread still holds blocks of its arena: the arena
     * is kept until they are freed, and released by the last free */
    assert_int_equal(st.round_arenas, 0);
    assert_int_equal(st.round_arena_bytes, 0);
    for (int i = 0; i < 2; i++)
        pthread_mutex_destroy(&s[i].mu);
    free(s);
    af_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_learns_and_serves),
        cmocka_unit_test(test_round_deviations_stay_correct),
        cmocka_unit_test(test_round_cross_thread_free),
        cmocka_unit_test(test_round_bad_frees),
        cmocka_unit_test(test_round_not_learnable),
        cmocka_unit_test(test_round_cache_destroy_with_live_blocks),
        cmocka_unit_test(test_round_debug_modes),
        cmocka_unit_test(test_round_two_thread_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
