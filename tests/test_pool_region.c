/*
 * Tests of the pool's regions (pool/region.c, opts.region_min): large classes carved from
 * per-cache regions, re-cut between classes, coalesced on free, freed from other threads, left
 * behind by destroyed caches, trimmed. Each test compares with region_min = 0 where the feature
 * is what makes the difference, so it fails when regions are switched off.
 *
 * Random tests draw from a fixed-seed PRNG (xorshift64*) and print the seed on failure; blocks
 * carry a pattern derived from their id, checked before they are freed. Under ASan/TSan the
 * operation counts are divided by 4.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arenaflow/pool.h"
#include "pool_testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KiB (1u << 10)
#define MiB (1u << 20)

static af_pool_t *region_pool(uint64_t region_min)
{
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.region_min = region_min;
    return make_pool(&o);
}

static void mark_ends(void *p, size_t n, uint64_t id)
{
    uint64_t *w = p;
    w[0] = id * 0x9E3779B97F4A7C15ull;
    w[n / 8 - 1] = ~id;
}

static int ends_marked(const void *p, size_t n, uint64_t id)
{
    const uint64_t *w = p;
    return w[0] == id * 0x9E3779B97F4A7C15ull && w[n / 8 - 1] == ~id;
}

/* Phases whose working sets use different classes (16 x 1 MiB, then 7 x 2 MiB, then 3 x 5 MiB,
 * each freed before the next), repeated: a fixed-class pool keeps all three sets (about 2.3x the
 * peak), regions re-cut the same memory. Returns peak reserved / peak live. */
static double phases(uint64_t region_min, uint64_t *maps_late)
{
    af_pool_t *p = region_pool(region_min);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    static const struct {
        int n;
        size_t size;
    } ph[] = {{16, 1 * MiB}, {7, 2 * MiB}, {3, 5 * MiB}};
    void *a[16];
    uint64_t peak = 0;
    af_pool_stats_t st;
    for (int round = 0; round < 4; round++) {
        if (round == 2) {
            af_pool_stats(p, &st);
            *maps_late = st.os_maps;
        }
        for (size_t f = 0; f < sizeof(ph) / sizeof(ph[0]); f++) {
            for (int i = 0; i < ph[f].n; i++) {
                assert_int_equal(af_pool_cache_alloc(k, ph[f].size, &a[i]), 0);
                mark_ends(a[i], ph[f].size, (uint64_t)i);
            }
            peak = (uint64_t)ph[f].n * ph[f].size > peak ? (uint64_t)ph[f].n * ph[f].size : peak;
            for (int i = 0; i < ph[f].n; i++) {
                assert_true(ends_marked(a[i], ph[f].size, (uint64_t)i));
                assert_int_equal(af_pool_cache_free(k, a[i]), 0);
            }
        }
    }
    af_pool_stats(p, &st);
    *maps_late = st.os_maps - *maps_late;
    double ratio = (double)st.peak_reserved_bytes / (double)peak;
    assert_int_equal(st.allocated_bytes, 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
    return ratio;
}

static void test_pool_region_recut_between_classes(void **state)
{
    (void)state;
    uint64_t late_r = 0, late_f = 0;
    double with = phases(16 * KiB, &late_r), without = phases(0, &late_f);
    printf("phases: reserved/peak %.3f with regions, %.3f fixed classes; OS maps in rounds 3-4: "
           "%llu\n",
           with, without, (unsigned long long)late_r);
    assert_true(with <= 1.25);
    assert_true(without > 1.25); /* the pattern needs the re-cut */
    assert_int_equal(late_r, 0); /* the same layout every round: no map after the first */
}

/* Huge requests (above the largest class) are carved from the regions too: one after another,
 * 72, 100, 130 and 90 MiB reuse the same memory; chunks of their own would be kept side by side
 * by the huge cache. */
static uint64_t huge_sequence(uint64_t region_min)
{
    af_pool_t *p = region_pool(region_min);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    static const size_t mib[] = {72, 100, 130, 90};
    for (size_t i = 0; i < 4; i++) {
        void *b;
        assert_int_equal(af_pool_cache_alloc(k, mib[i] * MiB, &b), 0);
        mark_ends(b, mib[i] * MiB, i);
        af_pool_block_info_t bi;
        assert_int_equal(af_pool_block_info(p, b, &bi), 0);
        assert_int_equal(bi.owner_class, -1);
        assert_true(bi.block_size >= mib[i] * MiB);
        af_pool_stats_t st;
        af_pool_stats(p, &st);
        assert_true(st.allocated_bytes >= mib[i] * MiB);
        assert_int_equal(st.requested_bytes, mib[i] * MiB);
        assert_true(ends_marked(b, mib[i] * MiB, i));
        assert_int_equal(af_pool_cache_free(k, b), 0);
        assert_int_equal(af_pool_cache_free(k, b), AF_EDOUBLEFREE);
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.allocs, 4);
    assert_int_equal(st.frees, 4);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
    return st.peak_reserved_bytes;
}

static void test_pool_region_huge_requests_recut(void **state)
{
    (void)state;
    uint64_t with = huge_sequence(16 * KiB), without = huge_sequence(0);
    printf("huge: peak reserved %.1f MiB with regions, %.1f MiB with chunks of their own\n",
           (double)with / MiB, (double)without / MiB);
    assert_true(with <= 130 * MiB * 5 / 4);
    assert_true(without > 130 * MiB * 5 / 4);
}

/* Four adjacent 64 KiB blocks freed in any order coalesce into one extent a 256 KiB block fits
 * in, without a new mapping. */
static void test_pool_region_coalesces_free_neighbours(void **state)
{
    (void)state;
    af_pool_t *p = region_pool(16 * KiB);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *a[4], *big;
    for (int i = 0; i < 4; i++)
        assert_int_equal(af_pool_cache_alloc(k, 64 * KiB, &a[i]), 0);
    for (int i = 1; i < 4; i++)
        assert_ptr_equal((char *)a[i - 1] + 64 * KiB, a[i]); /* carved one after another */
    void *guard; /* keeps the extents from reaching the region's free top */
    assert_int_equal(af_pool_cache_alloc(k, 64 * KiB, &guard), 0);
    af_pool_stats_t st0, st1;
    af_pool_stats(p, &st0);
    static const int order[4] = {1, 3, 0, 2};
    for (int i = 0; i < 4; i++)
        assert_int_equal(af_pool_cache_free(k, a[order[i]]), 0);
    assert_int_equal(af_pool_cache_alloc(k, 256 * KiB, &big), 0);
    af_pool_stats(p, &st1);
    assert_ptr_equal(big, a[0]);
    assert_int_equal(st1.os_maps, st0.os_maps);
    assert_int_equal(st1.reserved_bytes, st0.reserved_bytes);
    af_pool_block_info_t bi;
    assert_int_equal(af_pool_block_info(p, big, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_INUSE);
    assert_int_equal(bi.block_size, 256 * KiB);
    assert_int_equal(af_pool_cache_free(k, big), 0);
    assert_int_equal(af_pool_cache_free(k, guard), 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

/* ---- cross-thread frees -------------------------------------------------------------------- */

enum { RING = 256 };

typedef struct {
    af_pool_t *pool;
    _Atomic(void *) slot[RING];
    size_t size[RING];
    uint64_t id[RING];
    _Atomic int done;
    int bad, errors;
} xfer_t;

static void *consumer(void *arg)
{
    xfer_t *x = arg;
    af_pool_cache_t *k;
    if (af_pool_cache_create(x->pool, &k))
        return NULL;
    for (;;) {
        int idle = 1, done = atomic_load(&x->done); /* read before the pass: nothing is missed */
        for (int i = 0; i < RING; i++) {
            void *b = atomic_load_explicit(&x->slot[i], memory_order_acquire);
            if (!b)
                continue;
            idle = 0;
            x->bad += !ends_marked(b, x->size[i], x->id[i]);
            x->errors += af_pool_cache_free(k, b) != 0;
            atomic_store_explicit(&x->slot[i], NULL, memory_order_release);
        }
        if (idle && done)
            break;
    }
    af_pool_cache_destroy(k);
    return NULL;
}

static void test_pool_region_cross_thread_free_stress(void **state)
{
    (void)state;
    const uint64_t seed = 0x5eed0606;
    uint64_t s = seed;
    xfer_t *x = calloc(1, sizeof(*x));
    x->pool = region_pool(16 * KiB);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(x->pool, &k), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, consumer, x), 0);
    int ops = 200000 / SCALE, own = 0;
    void *mine[64] = {0};
    size_t msz[64];
    for (int n = 0; n < ops; n++) {
        uint64_t r = rng_next(&s);
        size_t size = (size_t)(16 * KiB + (r >> 20) % (2 * MiB));
        void *b;
        int rc = af_pool_cache_alloc(k, size, &b);
        if (rc) {
            fprintf(stderr, "seed %llx: alloc failed at %d\n", (unsigned long long)seed, n);
            fail();
        }
        mark_ends(b, size, (uint64_t)n);
        if (r % 4 == 0) { /* kept and freed here, interleaved with the remote frees */
            int i = (int)((r >> 8) % 64);
            if (mine[i]) {
                assert_true(ends_marked(mine[i], msz[i], (uint64_t)i + 1000000000u));
                assert_int_equal(af_pool_cache_free(k, mine[i]), 0);
            }
            mark_ends(b, size, (uint64_t)i + 1000000000u);
            mine[i] = b;
            msz[i] = size;
            own++;
            continue;
        }
        int i = (int)((r >> 8) % RING);
        while (atomic_load_explicit(&x->slot[i], memory_order_acquire))
            i = (i + 1) % RING;
        x->size[i] = size;
        x->id[i] = (uint64_t)n;
        atomic_store_explicit(&x->slot[i], b, memory_order_release);
    }
    atomic_store(&x->done, 1);
    pthread_join(th, NULL);
    for (int i = 0; i < 64; i++)
        if (mine[i]) {
            assert_true(ends_marked(mine[i], msz[i], (uint64_t)i + 1000000000u));
            assert_int_equal(af_pool_cache_free(k, mine[i]), 0);
        }
    if (x->bad || x->errors)
        fprintf(stderr, "seed %llx: %d bad blocks, %d free errors\n", (unsigned long long)seed,
                x->bad, x->errors);
    assert_int_equal(x->bad, 0);
    assert_int_equal(x->errors, 0);
    af_pool_cache_flush(k); /* drains the remote frees: everything coalesces and is trimmed */
    af_pool_stats_t st;
    af_pool_stats(x->pool, &st);
    printf("cross-thread: %d ops (%d kept locally), reserved after flush %llu, allocs %llu frees "
           "%llu\n",
           ops, own, (unsigned long long)st.reserved_bytes, (unsigned long long)st.allocs,
           (unsigned long long)st.frees);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.reserved_bytes, 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(x->pool);
    free(x);
}

/* ---- destroyed caches, bad frees, trim ------------------------------------------------------ */

typedef struct {
    af_pool_t *pool;
    void *b[8];
} owner_t;

/* 100 KiB .. 700 KiB, and one huge block (carved from the region too) */
static size_t osize(int i)
{
    return i == 7 ? 70 * MiB : (size_t)(i + 1) * 100 * KiB;
}

static void *alloc_and_quit(void *arg)
{
    owner_t *o = arg;
    af_pool_cache_t *k;
    if (af_pool_cache_create(o->pool, &k))
        return NULL;
    for (int i = 0; i < 8; i++)
        if (af_pool_cache_alloc(k, osize(i), &o->b[i]) == 0)
            mark_ends(o->b[i], osize(i), (uint64_t)i);
    af_pool_cache_destroy(k); /* blocks still out: its regions become orphans */
    return NULL;
}

static void test_pool_region_cache_destroy_with_blocks_out(void **state)
{
    (void)state;
    af_pool_t *p = region_pool(16 * KiB);
    owner_t o = {p, {0}};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, alloc_and_quit, &o), 0);
    pthread_join(th, NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    for (int i = 0; i < 8; i++) {
        assert_non_null(o.b[i]);
        assert_true(ends_marked(o.b[i], osize(i), (uint64_t)i));
        /* half without a cache (glock drain of an orphan), half through another cache */
        assert_int_equal(i % 2 ? af_pool_free(p, o.b[i]) : af_pool_cache_free(k, o.b[i]), 0);
        assert_int_equal(af_pool_free(p, o.b[i]), AF_EDOUBLEFREE);
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.allocated_bytes, 0);
    assert_true(st.reserved_bytes > 0);
    uint64_t rel = 0;
    assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_RELEASE, &rel), 0);
    af_pool_stats(p, &st);
    assert_int_equal(st.reserved_bytes, 0); /* the orphaned region was fully free: released */
    assert_true(rel > 0);
    /* the pool still serves from a new region */
    void *b;
    assert_int_equal(af_pool_cache_alloc(k, 300 * KiB, &b), 0);
    mark_ends(b, 300 * KiB, 7);
    assert_int_equal(af_pool_cache_free(k, b), 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

static void test_pool_region_double_free_and_foreign(void **state)
{
    (void)state;
    af_pool_t *p = region_pool(16 * KiB);
    af_pool_cache_t *k, *k2;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    assert_int_equal(af_pool_cache_create(p, &k2), 0);
    void *a, *b;
    assert_int_equal(af_pool_cache_alloc(k, 96 * KiB, &a), 0);
    assert_int_equal(af_pool_cache_alloc(k, 96 * KiB, &b), 0);
    af_pool_block_info_t bi;
    assert_int_equal(af_pool_block_info(p, a, &bi), 0);
    assert_int_equal(bi.block_size, 96 * KiB);
    assert_int_equal(bi.owner_class, af_pool_class_of(p, 96 * KiB));
    /* interior pointers of a live region block are foreign, and leave it intact */
    assert_int_equal(af_pool_cache_free(k, (char *)a + 256), AF_EFOREIGN);
    assert_int_equal(af_pool_cache_free(k, (char *)a + 16 * KiB), AF_EFOREIGN);
    assert_int_equal(af_pool_free(p, (char *)a + 32 * KiB), AF_EFOREIGN);
    assert_int_equal(af_pool_cache_free(k2, (char *)b + 4 * KiB), AF_EFOREIGN);
    assert_int_equal(af_pool_block_info(p, a, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_INUSE);
    /* double frees: same cache, another cache, no cache */
    assert_int_equal(af_pool_cache_free(k, a), 0);
    assert_int_equal(af_pool_cache_free(k, a), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_cache_free(k2, b), 0); /* remote */
    assert_int_equal(af_pool_cache_free(k2, b), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_free(p, b), AF_EDOUBLEFREE);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.double_frees, 3);
    assert_int_equal(st.foreign_frees, 4);
    assert_int_equal(st.allocated_bytes, 0);
    af_pool_cache_destroy(k2);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

static void test_pool_region_trim_releases_rss(void **state)
{
    (void)state;
    af_pool_t *p = region_pool(16 * KiB);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    enum { N = 48 };
    void *a[N];
    size_t total = 0;
    for (int i = 0; i < N; i++) {
        size_t size = (size_t)(1 + i % 3) * 768 * KiB;
        assert_int_equal(af_pool_cache_alloc(k, size, &a[i]), 0);
        memset(a[i], 0x11, size);
        total += size;
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(af_pool_cache_free(k, a[i]), 0);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_true(st.reserved_bytes >= total);
    long before = rss_pages();
    af_pool_cache_flush(k); /* the region is one free extent now: its top goes back to the OS */
    long after = rss_pages();
    double drop = (double)(before - after) * (double)sysconf(_SC_PAGESIZE);
    af_pool_stats(p, &st);
    printf("region trim: %.1f MiB touched, RSS drop %.1f MiB, reserved now %llu\n",
           (double)total / MiB, drop / MiB, (unsigned long long)st.reserved_bytes);
    assert_true(drop >= 0.75 * (double)total);
    assert_int_equal(st.reserved_bytes, 0);
    assert_true(st.os_unmaps > 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

/* Random sizes from 256 B to 8 MiB and a few of 72 MiB (small classes, region classes, huge),
 * through a cache and without one (fixed-class blocks of region classes then reach the cache's free
 * path), in a pool with poison and an exact peak: contents, statistics and the peak stay right. */
static void test_pool_region_mixed_stress_with_poison(void **state)
{
    (void)state;
    const uint64_t seed = 0xabad1dea;
    uint64_t s = seed;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.region_min = 16 * KiB;
    o.poison = 1;
    o.exact_peak = 1;
    af_pool_t *p;
    assert_int_equal(af_pool_create(&o, &p, NULL), 0);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    enum { SLOTS = 64 };
    void *b[SLOTS] = {0};
    size_t sz[SLOTS] = {0};
    uint64_t live = 0, peak = 0;
    int ops = 10000 / SCALE;
    for (int n = 0; n < ops; n++) {
        uint64_t r = rng_next(&s);
        int i = (int)(r % SLOTS);
        if (b[i]) {
            if (!ends_marked(b[i], sz[i], (uint64_t)i + (uint64_t)sz[i])) {
                fprintf(stderr, "seed %llx: block %d corrupted at op %d\n",
                        (unsigned long long)seed, i, n);
                fail();
            }
            assert_int_equal(r & 256 ? af_pool_free(p, b[i]) : af_pool_cache_free(k, b[i]), 0);
            live -= sz[i];
            b[i] = NULL;
            continue;
        }
        /* log-uniform 256 B .. 8 MiB, and now and then a huge one */
        double u = (double)((r >> 11) & 0xfffff) / 1048576.0;
        size_t size = (size_t)(256.0 * __builtin_exp(u * __builtin_log(32768.0)));
        if ((r >> 40) % 512 == 0)
            size = 72 * MiB;
        size = size < 64 ? 64 : size;
        assert_int_equal(
            r & 512 ? af_pool_alloc(p, size, &b[i]) : af_pool_cache_alloc(k, size, &b[i]), 0);
        assert_int_equal(((const unsigned char *)b[i])[size - 1], 0xAA); /* junk on alloc */
        mark_ends(b[i], size, (uint64_t)i + (uint64_t)size);
        sz[i] = size;
        live += size;
        peak = live > peak ? live : peak;
    }
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.requested_bytes, live);
    assert_int_equal(st.peak_requested_bytes, peak);
    for (int i = 0; i < SLOTS; i++)
        if (b[i]) {
            assert_true(ends_marked(b[i], sz[i], (uint64_t)i + (uint64_t)sz[i]));
            assert_int_equal(af_pool_cache_free(k, b[i]), 0);
        }
    af_pool_stats(p, &st);
    assert_int_equal(st.requested_bytes, 0);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_region_recut_between_classes),
        cmocka_unit_test(test_pool_region_coalesces_free_neighbours),
        cmocka_unit_test(test_pool_region_huge_requests_recut),
        cmocka_unit_test(test_pool_region_cross_thread_free_stress),
        cmocka_unit_test(test_pool_region_cache_destroy_with_blocks_out),
        cmocka_unit_test(test_pool_region_double_free_and_foreign),
        cmocka_unit_test(test_pool_region_trim_releases_rss),
        cmocka_unit_test(test_pool_region_mixed_stress_with_poison),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
