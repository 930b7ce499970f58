/*
 * The skyline engine of the placement search (pack/search_sky.c) against the canonical one
 * (pack/search_dfs.c), engine by engine, with no node limit and no clock (each answer a proof):
 * - On small random instances, the two branching rules of the skyline search (the lowest
 *   point; the most constrained point with forward checking) give the canonical search's answer
 *   at every capacity from one below each partition's lower bound to its optimum, and every
 *   packing they return is valid under its capacity; so do both rules with the fit order and
 *   the row test of the anytime search's restarts. (The optimum of these instances is nearly
 *   always the lower bound, so the packings found at it carry the test, not the refutations.)
 * - On jittered tight instances of every shape (a packing at the optimum exists, with holes the
 *   search must leave empty), no rule ever refutes the optimum, and each finds it on most
 *   within a node limit: an unsound waste level or branching point fails here (raising the
 *   waste level by 64 bytes fails all three tests).
 * The canonical search is itself checked against brute force in tests/test_search.c.
 *
 * Property tests over a fixed-seed PRNG; the seed of a failing case is printed.
 */
#include "arenaflow/pack.h"
#include "pack/pack_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
    return rnd() % n;
}

/* 1 when the partition's offsets form a packing under cap: aligned, no two buffers live in a
 * common section overlap in space. */
static int valid(const af__search_part_t *sp, const uint64_t *off, uint64_t cap)
{
    for (int32_t i = 0; i < sp->n; i++) {
        if (off[i] % sp->alignment || off[i] + sp->size[i] > cap)
            return 0;
        for (int32_t j = i + 1; j < sp->n; j++) {
            int time = sp->sec_lo[i] < sp->sec_hi[j] && sp->sec_lo[j] < sp->sec_hi[i];
            int space = off[i] < off[j] + sp->size[j] && off[j] < off[i] + sp->size[i];
            if (time && space)
                return 0;
        }
    }
    return 1;
}

/* engine 0: canonical; 1: skyline at the lowest point; 2: skyline at the most constrained; 3
 * and 4: 1 and 2 with the fit order and the row test (the anytime search's skyline restarts). */
enum { N_ENGINES = 5 };

static int decide(af__search_pinfo_t *pi, int engine, uint64_t cap, uint64_t *out,
                  af__search_key_t *keys, uint64_t limit)
{
    af__search_part_t *sp = &pi->sp;
    af__search_static_order(pi, 0, keys);
    sp->node_limit = limit;
    sp->use_clock = 0;
    sp->nodes = 0;
    sp->sky_ff = engine == 2 || engine == 4;
    sp->sky_fit = sp->sky_rows = engine >= 3;
    int r = engine == 0 ? af__search_dfs(sp, 0, af__search_order_spec[0], cap, out)
                        : af__search_sky(sp, 0, cap, out);
    assert_true(r == AF__SEARCH_FOUND || r == AF__SEARCH_INFEASIBLE ||
                (limit && r == AF__SEARCH_ABORTED));
    if (r == AF__SEARCH_FOUND)
        assert_true(valid(sp, out, cap));
    return r;
}

/* A random instance: n buffers in [0, horizon), sizes 1..max_size aligned up to a. */
static void random_instance(af_interval_t *iv, size_t n, int64_t horizon, uint64_t max_size,
                            uint64_t a)
{
    for (size_t i = 0; i < n; i++) {
        int64_t lo = (int64_t)below((uint64_t)horizon - 1);
        int64_t hi = lo + 1 + (int64_t)below(3);
        static const uint64_t sizes[] = {3, 5, 7, 11, 13, 17};
        uint64_t size = max_size ? 1 + below(max_size) : sizes[below(6)];
        iv[i] = (af_interval_t){lo, hi, (size + a - 1) / a * a, 0};
    }
}

/* Every engine's answer on every partition of one instance at the capacities from one below
 * its lower bound to its optimum. */
static void cross_check(uint64_t seed, size_t max_n)
{
    rng_state = seed;
    size_t n = 2 + below(max_n - 1);
    uint64_t a = below(3) == 0 ? 8 : 1;
    af_interval_t iv[16];
    random_instance(iv, n, 3 + (int64_t)below(6), below(2) ? 1 + below(60) : 0, a);
    af__search_key_t keys[3 * 16];
    int64_t times[2 * 16];
    af__search_pinfo_t *parts = NULL;
    int32_t nparts = 0;
    size_t maxn = 0;
    assert_int_equal(af__search_build_parts(iv, n, a, NULL, &parts, &nparts, &maxn, keys, times),
                     0);
    uint64_t out[16];
    for (int32_t k = 0; k < nparts; k++) {
        af__search_pinfo_t *pi = &parts[k];
        uint64_t opt = pi->lb;
        while (decide(pi, 0, opt, out, keys, 0) != AF__SEARCH_FOUND)
            opt++;
        for (uint64_t cap = pi->lb > 1 ? pi->lb - 1 : 1; cap <= opt; cap++)
            for (int engine = 1; engine < N_ENGINES; engine++) {
                int want = cap < opt ? AF__SEARCH_INFEASIBLE : AF__SEARCH_FOUND;
                int got = decide(pi, engine, cap, out, keys, 0);
                if (got != want)
                    fprintf(stderr, "seed %llu part %d engine %d cap %llu: %d, canonical %d\n",
                            (unsigned long long)seed, (int)k, engine, (unsigned long long)cap, got,
                            want);
                assert_int_equal(got, want);
            }
    }
    for (int32_t k = 0; k < nparts; k++)
        af__search_free_part(&parts[k]);
    af__free(parts);
}

static void test_sky_engines_agree_small(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 600; seed++)
        cross_check(seed * 7919, 9);
}

static void test_sky_engines_agree_larger(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 150; seed++)
        cross_check(seed * 104729 + 1, 14);
}

/* Jittered tight instances (see the file comment), 40 to 90 buffers. */
static void test_sky_engines_jittered_tight(void **state)
{
    (void)state;
    int found[N_ENGINES] = {0}, cases = 0;
    for (int shape = 0; shape < AF_TIGHT_N_SHAPES; shape++)
        for (uint64_t seed = 1; seed <= 6; seed++) {
            af_tight_opts_t to;
            af_tight_opts_init(&to);
            to.shape = (af_tight_shape_t)shape;
            to.buffers = 30 + 10 * (size_t)seed;
            to.seed = seed;
            to.capacity = 4096;
            to.jitter = 0.1 * (double)(1 + seed % 3);
            af_interval_t *iv;
            size_t n;
            uint64_t opt;
            af_error_t err;
            assert_int_equal(af_tight_generate(&to, &iv, &n, &opt, &err), 0);
            af__search_key_t *keys = malloc(3 * n * sizeof *keys);
            int64_t *times = malloc(2 * n * sizeof *times);
            uint64_t *out = malloc(n * sizeof *out);
            af__search_pinfo_t *parts = NULL;
            int32_t nparts = 0;
            size_t maxn = 0;
            assert_non_null(keys);
            assert_non_null(times);
            assert_non_null(out);
            assert_int_equal(
                af__search_build_parts(iv, n, 1, NULL, &parts, &nparts, &maxn, keys, times), 0);
            int ok[N_ENGINES] = {1, 1, 1, 1, 1};
            for (int32_t k = 0; k < nparts; k++)
                for (int engine = 0; engine < N_ENGINES; engine++) {
                    int r = decide(&parts[k], engine, opt, out, keys, 200000);
                    if (r == AF__SEARCH_INFEASIBLE)
                        fprintf(stderr, "shape %d seed %llu engine %d: optimum %llu refuted\n",
                                shape, (unsigned long long)seed, engine, (unsigned long long)opt);
                    assert_int_not_equal(r, AF__SEARCH_INFEASIBLE);
                    ok[engine] &= r == AF__SEARCH_FOUND;
                }
            for (int engine = 0; engine < N_ENGINES; engine++)
                found[engine] += ok[engine];
            cases++;
            for (int32_t k = 0; k < nparts; k++)
                af__search_free_part(&parts[k]);
            af__free(parts);
            free(keys);
            free(times);
            free(out);
            af_tight_free(iv);
        }
    fprintf(stderr,
            "found within the limit: canonical %d, lowest point %d, constrained %d, with fit "
            "order and row test %d and %d, of %d\n",
            found[0], found[1], found[2], found[3], found[4], cases);
    for (int engine = 1; engine < N_ENGINES; engine++)
        assert_true(found[engine] * 2 > cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sky_engines_agree_small),
        cmocka_unit_test(test_sky_engines_agree_larger),
        cmocka_unit_test(test_sky_engines_jittered_tight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
