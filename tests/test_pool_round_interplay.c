/*
 * Learned rounds (af_pool_cache_round) alongside the rest of the pool: trim (release and purge),
 * the idle policy, cache flushes and invalid calls in the middle of replayed rounds must neither
 * release nor corrupt the arena of a live cache, nor move a round's position; requests above the
 * largest class (huge) are recorded and placed like the others.
 *
 * Method (pool_round_runner.h): fixed-seed traces replayed round after round; every block carries
 * a pattern checked at its free, live blocks never share a byte, and every request of a learned
 * round is checked against the documented rule (its place, or a class block outside the arena).
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

/* Between the events of replayed rounds: trims (release, purge), the idle policy, cache flushes,
 * invalid requests (size 0: AF_EINVAL; SIZE_MAX: AF_ESIZE) and NULL frees (AF_EFOREIGN). A failed
 * call is no allocation of the round: every request still gets its place, and blocks in use keep
 * their contents. */
static void test_round_survives_trim_flush_and_errors(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0x7a1d0ull, 120, 256, 4 * MiB, 8);
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.idle_trim_ms = 1;
    af_pool_t *p = make_pool(&o);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    assert_int_equal(af_pool_cache_round(NULL), AF_EINVAL);
    run_learn(&r, &t);
    af_pool_stats_t st0, st;
    af_pool_stats(p, &st0);
    int calls = 0;
    for (int round = 3; round < 6; round++) {
        run_begin(&r, round);
        for (int e = 0; e < t.nev; e++) {
            run_events(&r, &t.ev[e], 1);
            if (e % 7)
                continue;
            uint64_t rel = 0;
            void *z = NULL;
            switch ((e / 7) % 5) {
            case 0:
                assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_RELEASE | AF_POOL_TRIM_PURGE, &rel),
                                 0);
                break;
            case 1:
                assert_int_equal(af_pool_maintain(p), 0);
                break;
            case 2:
                af_pool_cache_flush(r.k);
                break;
            case 3:
                assert_int_equal(af_pool_cache_alloc(r.k, 0, &z), AF_EINVAL);
                assert_int_equal(af_pool_cache_alloc(r.k, SIZE_MAX, &z), AF_ESIZE);
                assert_null(z);
                break;
            case 4:
                assert_int_equal(af_pool_cache_free(r.k, NULL), AF_EFOREIGN);
                assert_int_equal(af_pool_free(p, NULL), AF_EFOREIGN);
                break;
            }
            calls++;
        }
        round_delta_t d = run_end(&r);
        assert_int_equal(d.hits, t.n);
        assert_int_equal(d.misses, 0);
    }
    af_pool_stats(p, &st);
    printf("trim/flush/errors: %d calls between the events of 3 rounds; arena %.2f MiB kept, "
           "reserved %.2f -> %.2f MiB\n",
           calls, (double)st.round_arena_bytes / MiB, (double)st0.reserved_bytes / MiB,
           (double)st.reserved_bytes / MiB);
    assert_int_equal(st.round_arenas, 1);
    assert_int_equal(st.round_arena_bytes, st0.round_arena_bytes);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.double_frees, 0);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* A trace with requests above the largest class (64 MiB): the recorded round maps them, the
 * arena places them like the others, and the replay serves them. */
static void test_round_huge_requests(void **state)
{
    (void)state;
    trace_t t;
    trace_make(&t, 0x4a6eull, 40, 64 * KiB, 8 * MiB, 4);
    int huge = 0;
    for (int e = 0; e < t.nev; e++)
        if (t.ev[e].op == EV_ALLOC && t.ev[e].id % 13 == 5) {
            t.ev[e].size = (size_t)(66 + 4 * huge++) * MiB + 1000;
        }
    t.peak = events_peak(t.ev, t.nev, t.n);
    af_pool_t *p = make_pool(NULL);
    assert_int_equal(af_pool_class_of(p, 66 * MiB), -1);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    run_learn(&r, &t);
    for (int round = 3; round < 5; round++) {
        run_begin(&r, round);
        run_events(&r, t.ev, t.nev);
        round_delta_t d = run_end(&r);
        assert_int_equal(d.hits, t.n);
        assert_int_equal(d.os_maps, 0);
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    double ratio = (double)st.reserved_bytes / (double)t.peak;
    printf("huge requests: %d of %d above 64 MiB, peak live %.1f MiB, arena %.1f MiB, reserved "
           "%.3f x peak\n",
           huge, t.n, (double)t.peak / MiB, (double)st.round_arena_bytes / MiB, ratio);
    assert_true(huge >= 3);
    assert_true(ratio <= 1.25);
    assert_int_equal(st.huge_bytes, 0); /* no huge chunk kept: they live in the arena */
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_survives_trim_flush_and_errors),
        cmocka_unit_test(test_round_huge_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
