/*
 * Tests of the pool's reserve budget (pool/room.c, opts.reserve_ratio) and of the granule-indexed
 * block descriptors (large blocks are found with one load on free: stale and interior pointers
 * must still be reported).
 *
 * The budget tests replay phases whose classes cannot lend to each other (each phase's blocks
 * are smaller than the next phase's requests, or more than borrow_max_ratio larger), so a pool
 * that never re-cuts ends holding every phase's blocks; every block carries a pattern checked
 * before it is freed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arenaflow/pool.h"
#include "pool_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NPHASE = 3, PER = 12, ROUNDS = 3 };
/* 1 MiB cannot serve 3 MiB, 3 MiB is more than 4x 256 KiB: only 1 MiB lends to 256 KiB */
static const size_t phase_size[NPHASE] = {1u << 20, 3u << 20, 256u << 10};

/* Replays ROUNDS rounds of the three phases through one cache; returns peak reserved and checks
 * every block's contents and the pool's counters. */
static uint64_t run_phases(double ratio, uint64_t *peak_live, uint64_t *maps_last_round)
{
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.reserve_ratio = ratio;
    af_pool_t *p = make_pool(&o);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *a[PER];
    uint64_t id = 1, maps0 = 0;
    af_pool_stats_t st;
    for (int r = 0; r < ROUNDS; r++) {
        if (r == ROUNDS - 1) {
            af_pool_stats(p, &st);
            maps0 = st.os_maps;
        }
        for (int ph = 0; ph < NPHASE; ph++) {
            for (int i = 0; i < PER; i++) {
                assert_int_equal(af_pool_cache_alloc(k, phase_size[ph], &a[i]), 0);
                fill(a[i], phase_size[ph], id + (uint64_t)i);
            }
            for (int i = 0; i < PER; i++) {
                if (!check(a[i], phase_size[ph], id + (uint64_t)i))
                    fail_msg("round %d phase %d block %d overwritten (ratio %.2f)", r, ph, i,
                             ratio);
                assert_int_equal(af_pool_cache_free(k, a[i]), 0);
            }
            id += PER;
        }
    }
    af_pool_stats(p, &st);
    *maps_last_round = st.os_maps - maps0;
    *peak_live = (uint64_t)PER * phase_size[1];
    assert_int_equal(st.allocs, (uint64_t)ROUNDS * NPHASE * PER);
    assert_int_equal(st.frees, st.allocs);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    uint64_t blocks = 0, bytes = 0;
    for (uint32_t c = 0; c < st.nclasses; c++) {
        blocks += st.classes[c].blocks;
        bytes += st.classes[c].blocks * st.classes[c].block_size;
        assert_int_equal(st.classes[c].blocks_in_use, 0);
    }
    assert_true(blocks >= PER);
    assert_true(bytes <= st.reserved_bytes);
    uint64_t peak = st.peak_reserved_bytes;
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
    return peak;
}

static void test_pool_budget_recuts_memory_between_classes(void **state)
{
    (void)state;
    uint64_t live, maps_off, maps_on;
    uint64_t off = run_phases(0, &live, &maps_off);
    uint64_t on = run_phases(1.25, &live, &maps_on);
    printf("reserve budget: peak reserved %.1f MiB without, %.1f MiB with ratio 1.25 (peak live "
           "%.1f MiB); maps in the last round %llu / %llu\n",
           (double)off / (1 << 20), (double)on / (1 << 20), (double)live / (1 << 20),
           (unsigned long long)maps_off, (unsigned long long)maps_on);
    /* without a budget the pool holds every phase's blocks */
    assert_true((double)off >= 1.3 * (double)live);
    assert_int_equal(maps_off, 0);
    /* with it, reserved stays within the ratio (+ one granule of rounding per block) */
    assert_true((double)on <= 1.25 * (double)live + PER * 16384.0);
}

/* A cached free huge chunk is idle memory too: a different huge request under the budget
 * releases it first. */
static void test_pool_budget_releases_cached_huge_chunks(void **state)
{
    (void)state;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.reserve_ratio = 1.25;
    af_pool_t *p = make_pool(&o);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *x, *y;
    size_t big = 160u << 20, other = 100u << 20; /* huge: above the 64 MiB class; 160 MiB is
                                                   more than 25% above 100 MiB: not reused */
    assert_int_equal(af_pool_cache_alloc(k, big, &x), 0);
    fill(x, big, 7);
    assert_true(check(x, big, 7));
    assert_int_equal(af_pool_cache_free(k, x), 0); /* kept in the cache's huge slots */
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_true(st.reserved_bytes >= big);
    assert_int_equal(af_pool_cache_alloc(k, other, &y), 0);
    fill(y, other, 8);
    af_pool_stats(p, &st);
    /* 160 + 100 MiB would exceed 1.25 x 160 MiB: the cached chunk went back to the OS */
    assert_true(st.reserved_bytes <= other + (1u << 20));
    assert_true(st.huge_bytes <= other + (1u << 20));
    assert_true(check(y, other, 8));
    assert_int_equal(af_pool_cache_free(k, y), 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

/* Large blocks are looked up in the granule table with one load; what is not a block start, or
 * no longer a block, must still be reported (not mistaken for a block, not a double free). */
static void test_pool_large_block_lookup_rejects_stale_and_interior(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *a, *b;
    assert_int_equal(af_pool_cache_alloc(k, 1u << 20, &a), 0);
    assert_int_equal(af_pool_cache_alloc(k, 40u << 10, &b), 0); /* 40 KiB: starts mid-granule */
    af_pool_block_info_t bi;
    assert_int_equal(af_pool_block_info(p, a, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_INUSE);
    assert_int_equal(af_pool_cache_free(k, (char *)a + (16u << 10)), AF_EFOREIGN);
    assert_int_equal(af_pool_cache_free(k, (char *)a + (512u << 10)), AF_EFOREIGN);
    assert_int_equal(af_pool_free(p, (char *)b + 256), AF_EFOREIGN);
    assert_int_equal(af_pool_cache_free(k, b), 0);
    assert_int_equal(af_pool_cache_free(k, b), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_cache_free(k, a), 0);
    assert_int_equal(af_pool_free(p, a), AF_EDOUBLEFREE);
    /* once its chunk is unmapped, the old pointer is foreign */
    af_pool_cache_flush(k);
    uint64_t rel = 0;
    assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_RELEASE, &rel), 0);
    assert_true(rel >= (1u << 20));
    assert_int_equal(af_pool_cache_free(k, a), AF_EFOREIGN);
    assert_int_equal(af_pool_block_info(p, a, &bi), AF_EFOREIGN);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.double_frees, 2);
    assert_int_equal(st.foreign_frees, 4);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_budget_recuts_memory_between_classes),
        cmocka_unit_test(test_pool_budget_releases_cached_huge_chunks),
        cmocka_unit_test(test_pool_large_block_lookup_rejects_stale_and_interior),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
