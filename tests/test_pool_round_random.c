/*
 * A property test of the pool's learned rounds (af_pool_cache_round): after a trace is learned,
 * every round departs from it at random (a request larger or smaller, extra requests, a window
 * of frees postponed and reversed, a block kept across the round's end, frees through
 * af_pool_free or another cache), and every request is checked against the documented rule by
 * the runner of pool_round_runner.h (its place or a class block outside the arena; the round
 * held exactly when an arena block is in use at its start; round_hits per round), with contents
 * and overlaps checked throughout. Fixed seeds, printed with the round on failure; under
 * ASan/TSan the run is shorter (SCALE). Runs under four pool configurations (misses take the
 * class path, regions, or recycling under a reserve budget).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arenaflow/pool.h"
#include "pool_testutil.h"
#include "pool_round_runner.h"

#include <stdio.h>
#include <stdlib.h>

static const round_cfg_t CFG_DEFAULT = {.name = "default"},
                         CFG_REGIONS = {.name = "regions", .region_min = 16 * KiB},
                         CFG_POISON = {.name = "poison, exact peak", .poison = 1, .exact_peak = 1},
                         CFG_BUDGET = {.name = "recycle, reserve budget 1.25",
                                       .recycle = 1,
                                       .reserve_ratio = 1.25};

/* Random departures for one round (none in about a quarter of the rounds). */
static departure_t draw_departure(uint64_t *s, const trace_t *t, int may_keep)
{
    departure_t dv = {-1, -1, -1, 0, -1, -1, -1};
    uint64_t x = rng_next(s);
    if (x % 4 == 0)
        dv.grow = (int)(rng_next(s) % (uint64_t)t->n);
    if ((x >> 2) % 4 == 0)
        dv.shrink = (int)(rng_next(s) % (uint64_t)t->n);
    if ((x >> 4) % 5 == 0) {
        dv.extra_at = (int)(rng_next(s) % (uint64_t)t->n);
        dv.extra_n = 1 + (int)((x >> 8) % 3);
    }
    if ((x >> 12) % 4 == 0) {
        dv.hold_from = (int)(rng_next(s) % (uint64_t)t->nev);
        dv.hold_to = dv.hold_from + 1 + (int)((x >> 20) % 40);
        dv.hold_to = dv.hold_to > t->nev ? t->nev : dv.hold_to;
    }
    if (may_keep && (x >> 28) % 8 == 0)
        dv.keep = (int)(rng_next(s) % (uint64_t)t->n);
    return dv;
}

static void test_round_random_departures(void **state)
{
    const uint64_t seed = 0xd1ce5ull;
    trace_t t;
    trace_make(&t, seed, 150, 256, 2 * MiB, 8);
    af_pool_t *p = cfg_pool(state);
    int exact = ((const round_cfg_t *)*state)->exact_peak;
    run_t r;
    run_init(&r, p, seed, t.n + 8);
    assert_int_equal(af_pool_cache_create(p, &r.other), 0);
    run_learn(&r, &t);
    ev_t *ev = calloc((size_t)t.nev + 64, sizeof(*ev));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull, hits = 0, misses = 0;
    int kept = -1, rounds = 400 / SCALE, held = 0, remote = 0, allocs = 0;
    uint64_t now = 0, peak = 0; /* requested bytes in use, and their peak since the learn */
    af_pool_reset_peak(p);
    for (int round = 3; round < 3 + rounds; round++) {
        departure_t dv = draw_departure(&s, &t, kept < 0);
        int n = deviate(&t, &dv, ev);
        run_begin(&r, round);
        held += r.held;
        if (kept >= 0) {
            now -= r.size[kept];
            run_free(&r, kept, HOW_CACHE);
        }
        for (int e = 0; e < n; e++) {
            if (ev[e].op == EV_ALLOC) {
                run_alloc(&r, ev[e].id, ev[e].size);
                now += ev[e].size;
                peak = now > peak ? now : peak;
                continue;
            }
            now -= r.size[ev[e].id];
            uint64_t y = rng_next(&s) % 20;
            int how = y == 0 ? HOW_POOL : y == 1 ? HOW_OTHER : HOW_CACHE;
            remote += how != HOW_CACHE;
            run_free(&r, ev[e].id, how);
        }
        af_pool_stats_t st;
        af_pool_stats(p, &st);
        if (st.requested_bytes != now || (exact && st.peak_requested_bytes != peak)) {
            fprintf(stderr,
                    "seed %llx round %d: requested_bytes %llu (peak %llu), %llu in use "
                    "(peak %llu)\n",
                    (unsigned long long)seed, round, (unsigned long long)st.requested_bytes,
                    (unsigned long long)st.peak_requested_bytes, (unsigned long long)now,
                    (unsigned long long)peak);
            fail();
        }
        round_delta_t d = run_end(&r); /* checks round_hits against the rule */
        if (!r.held && d.hits + d.misses != (uint64_t)d.allocs) {
            fprintf(stderr, "seed %llx round %d: %llu hits + %llu misses, %d allocs\n",
                    (unsigned long long)seed, round, (unsigned long long)d.hits,
                    (unsigned long long)d.misses, d.allocs);
            fail();
        }
        hits += d.hits;
        misses += d.misses;
        allocs += d.allocs;
        kept = dv.keep;
    }
    if (kept >= 0)
        run_free(&r, kept, HOW_CACHE);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    printf("random departures: %d rounds, %d allocs, %llu hits, %llu misses, %d held rounds, %d "
           "frees elsewhere\n",
           rounds, allocs, (unsigned long long)hits, (unsigned long long)misses, held, remote);
    assert_true(held > 0 && hits > 0 && misses > 0); /* every kind of round happened */
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    assert_int_equal(st.rounds_learned, 1);
    free(ev);
    af_pool_cache_destroy(r.other);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_round_random_departures, (void *)&CFG_DEFAULT),
        cmocka_unit_test_prestate(test_round_random_departures, (void *)&CFG_REGIONS),
        cmocka_unit_test_prestate(test_round_random_departures, (void *)&CFG_POISON),
        cmocka_unit_test_prestate(test_round_random_departures, (void *)&CFG_BUDGET),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
