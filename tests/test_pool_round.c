/*
 * Tests of the pool's learned rounds (af_pool_cache_round, pool/round.c) on one thread: a cache
 * records one round, lays its blocks out in one arena and serves the following rounds from it;
 * rounds that depart from the recorded one, bad frees, rounds that cannot be learned, caches
 * destroyed with arena blocks in use, debug modes. (Other threads: test_pool_round_threads.c.)
 *
 * Method (pool_round_runner.h): a fixed-seed trace of allocs and frees is replayed through a cache
 * round after round; every block carries a pattern checked at its free, no two live blocks may
 * share a byte, and once the arena's places are known every request is checked against the
 * documented rule (its place, or a class block outside the arena), and each round's round_hits
 * against the number of requests that got their place. Seeds are printed on failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arenaflow/pool.h"
#include "pool_testutil.h"
#include "pool_round_runner.h"

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The configurations the replay tests run under: the defaults, regions for the classes of
 * 16 KiB or more (where misses go), poison (which also takes the CAS path on every free) with
 * the exact peak (one shared atomic per call). */
static const round_cfg_t CFG_DEFAULT = {.name = "default"},
                         CFG_REGIONS = {.name = "regions", .region_min = 16 * KiB},
                         CFG_POISON = {.name = "poison, exact peak", .poison = 1, .exact_peak = 1};

/* ---- 1. learn, then serve ----------------------------------------------------------------- */

static void test_round_learns_and_serves(void **state)
{
    trace_t t;
    trace_make(&t, 0x0001ea4edull, 200, 256, 4 * MiB, 8);
    af_pool_t *p = cfg_pool(state);
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

static const departure_t NO_DEV = {-1, -1, -1, 0, -1, -1, -1};

static void test_round_deviations_stay_correct(void **state)
{
    trace_t t;
    trace_make(&t, 0xde7a7e5ull, 200, 256, 4 * MiB, 8);
    af_pool_t *p = cfg_pool(state);
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
    trace_t t;
    trace_make(&t, 0xbadf1ee5ull, 40, 4 * KiB, 512 * KiB, 4);
    af_pool_t *p = cfg_pool(state);
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

enum { PLAIN = 0, KEEP_ONE, EXTRA_ONE, POOL_FREE, OTHER_FREE };

/* Plays the trace as one round, with: KEEP_ONE, one more alloc never freed (returned in *kept);
 * EXTRA_ONE, one more alloc freed before the round's end; POOL_FREE / OTHER_FREE, block 0
 * freed with af_pool_free / another cache (r->other) instead of the cache. Returns the round's
 * counters. */
static round_delta_t plain_round(run_t *r, const trace_t *t, int round, int mode, void **kept)
{
    run_begin(r, round);
    void *extra = NULL;
    for (int e = 0; e < t->nev; e++) {
        const ev_t *v = &t->ev[e];
        if (v->op == EV_ALLOC)
            run_alloc(r, v->id, v->size);
        else
            run_free(r, v->id,
                     v->id                ? HOW_CACHE
                     : mode == POOL_FREE  ? HOW_POOL
                     : mode == OTHER_FREE ? HOW_OTHER
                                          : HOW_CACHE);
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

    /* a block of the recorded round freed through af_pool_free or another cache: not freed
     * through the cache */
    af_pool_t *p;
    run_t r;
    round_delta_t d;
    for (int mode = POOL_FREE; mode <= OTHER_FREE; mode++) {
        p = round_pool(4096);
        run_init(&r, p, t.seed, t.n);
        assert_int_equal(af_pool_cache_create(p, &r.other), 0);
        plain_round(&r, &t, 0, PLAIN, NULL);
        d = plain_round(&r, &t, 1, mode, NULL);
        assert_int_equal(d.learned, 0);
        d = plain_round(&r, &t, 2, PLAIN, NULL); /* the next recording is clean */
        assert_int_equal(d.learned, 1);
        af_pool_cache_destroy(r.other);
        af_pool_cache_destroy(r.k);
        run_fini(&r);
        af_pool_destroy(p);
    }

    /* round_max above 65536 is refused (learning is quadratic in it) */
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.round_max = 65537;
    af_error_t err = {0};
    p = NULL;
    assert_int_equal(af_pool_create(&o, &p, &err), AF_EINVAL);
    assert_null(p);
    assert_true(strstr(err.msg, "round_max") != NULL);
    o.round_max = 65536;
    p = make_pool(&o);
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

/* Rounds in which the cache allocates nothing (a worker that got no work) are neither learned nor
 * failed recordings: a cache idle for more rounds than the recording tries still learns its first
 * round with work. */
static void test_round_empty_rounds_do_not_count(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0xe3b7ull, 20, 1 * KiB, 256 * KiB, 4);
    af_pool_t *p = round_pool(4096);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    for (int i = 0; i < 6; i++) { /* starts recording, then 5 empty rounds */
        run_begin(&r, 0);
        assert_int_equal(run_end(&r).learned, 0);
    }
    round_delta_t d = plain_round(&r, &t, 1, PLAIN, NULL);
    printf("empty rounds: after 5, the first round with work learned: %llu\n",
           (unsigned long long)d.learned);
    assert_int_equal(d.learned, 1);
    d = plain_round(&r, &t, 2, PLAIN, NULL);
    assert_int_equal(d.hits, t.n);
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

    /* a cache destroyed in the middle of its recorded round (blocks of their own mapping and
     * class blocks in use): they are freed with af_pool_free afterwards, and unmapped */
    p = make_pool(NULL);
    run_init(&r, p, t.seed, t.n);
    assert_int_equal(af_pool_cache_round(r.k), 0); /* records from the first request */
    run_begin(&r, 0);
    run_events(&r, t.ev, t.nev / 2);
    af_pool_cache_destroy(r.k);
    int out = 0;
    for (int id = 0; id < t.n; id++)
        if (r.ptr[id]) {
            void *q = r.ptr[id];
            run_free(&r, id, HOW_POOL);
            assert_int_equal(af_pool_free(p, q), AF_EDOUBLEFREE);
            out++;
        }
    af_pool_stats(p, &st);
    assert_true(out > 0);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.requested_bytes, 0);
    assert_int_equal(st.double_frees, (uint64_t)out);
    assert_int_equal(st.rounds_learned, 0);
    assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_RELEASE, NULL), 0);
    af_pool_stats(p, &st);
    assert_int_equal(st.reserved_bytes, 0);
    run_fini(&r);
    af_pool_destroy(p);

    /* the pool destroyed with arena blocks in use (after the cache; then with the cache still
     * there), and in the middle of a recorded round: nothing leaks (ASan's leak check) */
    p = make_pool(NULL);
    run_init(&r, p, t.seed, t.n);
    assert_int_equal(af_pool_cache_round(r.k), 0);
    run_events(&r, t.ev, t.nev / 2);
    af_pool_destroy(p);
    run_fini(&r);
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

/* ---- 7b. the recorded round ------------------------------------------------------------- */

/* Bad frees of a live block b of `size` bytes, then its free (through run_free): interior
 * pointers are foreign, the block stays intact; a second free is a double free. Adds the bad
 * frees reported to *foreign and *doubles. */
static void bad_frees_around(run_t *r, int id, uint64_t *foreign, uint64_t *doubles)
{
    void *b = r->ptr[id];
    af_pool_block_info_t bi;
    assert_int_equal(af_pool_block_info(r->pool, b, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_INUSE);
    assert_true(bi.block_size >= r->size[id]);
    assert_int_equal(af_pool_cache_free(r->k, (char *)b + 8), AF_EFOREIGN);
    assert_int_equal(af_pool_free(r->pool, (char *)b + 4096), AF_EFOREIGN);
    *foreign += 2;
    run_free(r, id, HOW_CACHE);
    assert_int_equal(af_pool_cache_free(r->k, b), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_free(r->pool, b), AF_EDOUBLEFREE);
    *doubles += 2;
}

/* A cache whose first call is af_pool_cache_round records its very first round: blocks of
 * 16 KiB or more get mappings of their own, unmapped when freed, so the recorded round reserves
 * about what it has live. Bad frees there are reported as for any block, and do not keep the
 * round from being learned; the exact peak counts the recorded round's blocks. */
static void test_round_recording_reserves_live(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0x5ec0dedull, 200, 256, 4 * MiB, 8);
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.exact_peak = 1;
    double ratio[2];
    for (int learn = 0; learn < 2; learn++) { /* 0: the classes alone (round_max 0), reference */
        o.round_max = learn ? 4096 : 0;
        af_pool_t *p = make_pool(&o);
        run_t r;
        run_init(&r, p, t.seed, t.n);
        assert_int_equal(af_pool_cache_round(r.k), 0); /* records from the first request */
        af_pool_reset_peak(p);
        run_begin(&r, 0);
        uint64_t live = 0, foreign = 0, doubles = 0;
        int nbad = 0;
        for (int e = 0; e < t.nev; e++) {
            const ev_t *v = &t.ev[e];
            if (v->op == EV_ALLOC) {
                run_alloc(&r, v->id, v->size);
                live += v->size;
            } else {
                live -= r.size[v->id];
                if (r.size[v->id] >= 16 * KiB && nbad < 4) {
                    bad_frees_around(&r, v->id, &foreign, &doubles);
                    nbad++;
                } else {
                    run_free(&r, v->id, HOW_CACHE);
                }
            }
            if (e % 16 == 0) {
                af_pool_stats_t st;
                af_pool_stats(p, &st);
                assert_int_equal(st.requested_bytes, live);
            }
        }
        af_pool_stats_t st;
        af_pool_stats(p, &st);
        ratio[learn] = (double)st.peak_reserved_bytes / (double)t.peak;
        assert_int_equal(nbad, 4);
        assert_int_equal(st.peak_requested_bytes, t.peak);
        assert_int_equal(st.foreign_frees, foreign);
        assert_int_equal(st.double_frees, doubles);
        assert_int_equal(st.allocated_bytes, 0);
        round_delta_t d = run_end(&r);
        assert_int_equal(d.learned, (uint64_t)learn);
        if (learn) { /* the round recorded despite the bad frees: the next one is all hits */
            run_begin(&r, 1);
            run_events(&r, t.ev, t.nev);
            d = run_end(&r);
            assert_int_equal(d.hits, t.n);
        }
        af_pool_cache_destroy(r.k);
        run_fini(&r);
        af_pool_destroy(p);
    }
    printf("recorded round: peak reserved / peak live %.3f (the classes alone: %.3f)\n", ratio[1],
           ratio[0]);
    assert_true(ratio[1] <= 1.25);
    trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_round_learns_and_serves, (void *)&CFG_DEFAULT),
        cmocka_unit_test_prestate(test_round_learns_and_serves, (void *)&CFG_REGIONS),
        cmocka_unit_test_prestate(test_round_learns_and_serves, (void *)&CFG_POISON),
        cmocka_unit_test_prestate(test_round_deviations_stay_correct, (void *)&CFG_DEFAULT),
        cmocka_unit_test_prestate(test_round_deviations_stay_correct, (void *)&CFG_REGIONS),
        cmocka_unit_test_prestate(test_round_deviations_stay_correct, (void *)&CFG_POISON),
        cmocka_unit_test_prestate(test_round_bad_frees, (void *)&CFG_DEFAULT),
        cmocka_unit_test_prestate(test_round_bad_frees, (void *)&CFG_REGIONS),
        cmocka_unit_test_prestate(test_round_bad_frees, (void *)&CFG_POISON),
        cmocka_unit_test(test_round_not_learnable),
        cmocka_unit_test(test_round_empty_rounds_do_not_count),
        cmocka_unit_test(test_round_cache_destroy_with_live_blocks),
        cmocka_unit_test(test_round_debug_modes),
        cmocka_unit_test(test_round_recording_reserves_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
