/*
 * Tests of the buffer pool (pool/).
 *
 * Stress tests draw from a fixed-seed PRNG (xorshift64*) and print the seed on failure. Every
 * live block carries a pattern derived from its id, checked before it is freed, so a block handed
 * out twice or written by someone else is caught. Under ASan/TSan the operation counts are
 * divided by 4 (AF_ASAN_BUILD / AF_TSAN_BUILD) to keep the run short.
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
#include <time.h>
#include <unistd.h>

/* ---- ladder ------------------------------------------------------------------------------ */

static void test_pool_ladder_default_waste_bounded(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    uint32_t n = af_pool_nclasses(p);
    assert_true(n > 20 && n < AF_POOL_MAX_CLASSES);
    assert_int_equal(af_pool_class_size(p, 0), 256);
    assert_int_equal(af_pool_class_size(p, n - 1), 64ull << 20);
    uint64_t seed = 42;
    double worst = 0;
    for (int i = 0; i < 200000; i++) {
        size_t s = rng_size(&seed, 1, 64u << 20);
        int c = af_pool_class_of(p, s);
        assert_true(c >= 0);
        uint64_t bs = af_pool_class_size(p, (uint32_t)c), al = (s + 255) / 256 * 256;
        assert_true(bs >= s);
        assert_true(c == 0 || af_pool_class_size(p, (uint32_t)c - 1) < s);
        double w = (double)bs / (double)al;
        worst = w > worst ? w : worst;
    }
    /* boundaries exactly */
    for (uint32_t c = 0; c < n; c++) {
        uint64_t bs = af_pool_class_size(p, c);
        assert_int_equal(af_pool_class_of(p, bs), (int)c);
        if (c + 1 < n)
            assert_int_equal(af_pool_class_of(p, bs + 1), (int)c + 1);
    }
    assert_true(worst <= 1.25);
    assert_int_equal(af_pool_class_of(p, (64u << 20) + 1), -1);
    af_pool_destroy(p);
}

static void test_pool_ladder_seed_preset(void **state)
{
    (void)state;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.ladder = AF_POOL_LADDER_SEED;
    o.seed_pure = 1;
    af_pool_t *p = make_pool(&o);
    static const uint64_t want[] = {256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
    assert_int_equal(af_pool_nclasses(p), 5);
    for (uint32_t c = 0; c < 5; c++)
        assert_int_equal(af_pool_class_size(p, c), want[c]);
    assert_int_equal(af_pool_class_of(p, 300), 0);
    assert_int_equal(af_pool_class_of(p, (1u << 20) + 1), 2);
    af_pool_destroy(p);
}

static void test_pool_ladder_bad_custom_rejected(void **state)
{
    (void)state;
    static const uint64_t bad[] = {256, 1000};
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.ladder = AF_POOL_LADDER_CUSTOM;
    o.classes = bad;
    o.nclasses = 2;
    af_pool_t *p = NULL;
    af_error_t err;
    assert_int_equal(af_pool_create(&o, &p, &err), AF_EINVAL);
    assert_null(p);
    assert_true(strlen(err.msg) > 0);
}

/* ---- basic behaviour and error reporting ------------------------------------------------ */

static void test_pool_alloc_aligned_and_writable(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *a[64];
    for (int i = 0; i < 64; i++) {
        size_t s = (size_t)1 << (i % 24);
        int rc = i % 2 ? af_pool_cache_alloc(k, s, &a[i]) : af_pool_alloc(p, s, &a[i]);
        assert_int_equal(rc, 0);
        assert_int_equal((uintptr_t)a[i] % AF_POOL_ALIGN, 0);
        fill(a[i], s, (uint64_t)i);
    }
    for (int i = 0; i < 64; i++) {
        assert_true(check(a[i], (size_t)1 << (i % 24), (uint64_t)i));
        assert_int_equal(i % 3 ? af_pool_free(p, a[i]) : af_pool_cache_free(k, a[i]), 0);
    }
    void *x;
    assert_int_equal(af_pool_alloc(p, 0, &x), AF_EINVAL);
    assert_int_equal(af_pool_cache_alloc(k, 0, &x), AF_EINVAL);
    af_pool_cache_destroy(k);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.allocs, 64);
    assert_int_equal(st.frees, 64);
    assert_int_equal(st.requested_bytes, 0);
    assert_int_equal(st.allocated_bytes, 0);
    af_pool_destroy(p);
}

static void test_pool_double_free_detected(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *a, *b, *h;
    assert_int_equal(af_pool_alloc(p, 1000, &a), 0);
    assert_int_equal(af_pool_cache_alloc(k, 5000, &b), 0);
    assert_int_equal(af_pool_alloc(p, 100u << 20, &h), 0); /* huge */
    assert_int_equal(af_pool_free(p, a), 0);
    assert_int_equal(af_pool_free(p, a), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_cache_free(k, a), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_cache_free(k, b), 0);
    assert_int_equal(af_pool_cache_free(k, b), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_free(p, b), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_free(p, h), 0);
    assert_int_equal(af_pool_free(p, h), AF_EDOUBLEFREE);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.double_frees, 5);
    /* the pool still works and hands the blocks out again */
    void *a2;
    assert_int_equal(af_pool_alloc(p, 1000, &a2), 0);
    assert_ptr_equal(a2, a);
    assert_int_equal(af_pool_free(p, a2), 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

/* Frees across caches: the allocating cache frees its own blocks without a CAS (tag in the
 * state word); whichever cache or call frees a block second, the double free is reported, and a
 * block lent to a smaller class goes back to its owner class on the plain path too. */
typedef struct {
    af_pool_cache_t *k;
    void *ptr;
    int rc;
} xfree_arg_t;

static void *xfree_thread(void *arg)
{
    xfree_arg_t *a = arg;
    a->rc = af_pool_cache_free(a->k, a->ptr);
    return NULL;
}

static void test_pool_double_free_detected_across_caches(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *ka, *kb;
    assert_int_equal(af_pool_cache_create(p, &ka), 0);
    assert_int_equal(af_pool_cache_create(p, &kb), 0);
    void *x, *y, *z;
    /* owner first (plain path), then another cache on another thread, then no cache */
    assert_int_equal(af_pool_cache_alloc(ka, 3000, &x), 0);
    assert_int_equal(af_pool_cache_free(ka, x), 0);
    xfree_arg_t xa = {kb, x, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, xfree_thread, &xa), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(xa.rc, AF_EDOUBLEFREE);
    assert_int_equal(af_pool_free(p, x), AF_EDOUBLEFREE);
    assert_int_equal(af_pool_cache_free(ka, x), AF_EDOUBLEFREE);
    /* another cache first (CAS path), then the owner */
    assert_int_equal(af_pool_cache_alloc(ka, 3000, &y), 0);
    xa = (xfree_arg_t){kb, y, -1};
    assert_int_equal(pthread_create(&th, NULL, xfree_thread, &xa), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(xa.rc, 0);
    assert_int_equal(af_pool_cache_free(ka, y), AF_EDOUBLEFREE);
    /* a lent block: freed by its cache on the plain path, back to the owner class, then again */
    af_pool_cache_t *kc;
    assert_int_equal(af_pool_cache_create(p, &kc), 0);
    int small = af_pool_class_of(p, 4096), big = small + 1;
    size_t big_size = (size_t)af_pool_class_size(p, (uint32_t)big);
    assert_int_equal(af_pool_cache_alloc(kc, big_size, &z), 0);
    assert_int_equal(af_pool_cache_free(kc, z), 0); /* kc's stack of class `big` holds z */
    void *w;
    assert_int_equal(af_pool_cache_alloc(kc, 4096, &w), 0);
    af_pool_block_info_t bi;
    assert_int_equal(af_pool_block_info(p, w, &bi), 0);
    assert_ptr_equal(w, z); /* lent from the cache's own larger stack, no lock */
    assert_int_equal(bi.state, AF_BLOCK_BORROWED);
    assert_int_equal(bi.owner_class, big);
    assert_int_equal(bi.borrower_class, small);
    assert_int_equal(af_pool_cache_free(kc, w), 0);
    assert_int_equal(af_pool_block_info(p, w, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_FREE);
    assert_int_equal(bi.owner_class, big); /* back to its owner class (seed §5.3) */
    assert_int_equal(af_pool_cache_free(kc, w), AF_EDOUBLEFREE);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.double_frees, 5);
    af_pool_cache_destroy(kc);
    af_pool_cache_destroy(kb);
    af_pool_cache_destroy(ka);
    af_pool_destroy(p);
}

static void test_pool_foreign_pointer_detected(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    af_pool_t *q = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *a, *other;
    int local = 0;
    char *heap = malloc(64);
    assert_int_equal(af_pool_alloc(p, 4096, &a), 0);
    assert_int_equal(af_pool_alloc(q, 4096, &other), 0);
    assert_int_equal(af_pool_free(p, &local), AF_EFOREIGN);
    assert_int_equal(af_pool_free(p, heap), AF_EFOREIGN);
    assert_int_equal(af_pool_free(p, NULL), AF_EFOREIGN);
    assert_int_equal(af_pool_free(p, (char *)a + 256), AF_EFOREIGN); /* interior */
    assert_int_equal(af_pool_cache_free(k, (char *)a + 8), AF_EFOREIGN);
    assert_int_equal(af_pool_cache_free(k, other), AF_EFOREIGN); /* another pool's block */
    af_pool_block_info_t bi;
    assert_int_equal(af_pool_block_info(p, (char *)a + 256, &bi), AF_EFOREIGN);
    assert_int_equal(af_pool_block_info(p, a, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_INUSE);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.foreign_frees, 6);
    assert_int_equal(af_pool_free(p, a), 0);
    assert_int_equal(af_pool_free(q, other), 0);
    free(heap);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
    af_pool_destroy(q);
}

/*
 * Seed §5.3: a block borrowed by a smaller class must go back to the class it came from.
 * The buggy pool returned it to the borrower's class, so the large class slowly emptied.
 */
static void borrow_roundtrip(int use_cache)
{
    static const uint64_t ladder[] = {1u << 20, 4u << 20};
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.ladder = AF_POOL_LADDER_CUSTOM;
    o.classes = ladder;
    o.nclasses = 2;
    o.cache_borrow_ratio = 4; /* let the cache lend its 4 MiB block to a 1 MiB request */
    o.recut_min = 0;          /* the ladder for every size (re-cutting: test_pool_recut.c) */
    af_pool_t *p = make_pool(&o);
    af_pool_cache_t *k = NULL;
    if (use_cache)
        assert_int_equal(af_pool_cache_create(p, &k), 0);
#define ALLOC(s, out) (k ? af_pool_cache_alloc(k, (s), (out)) : af_pool_alloc(p, (s), (out)))
#define FREE(x) (k ? af_pool_cache_free(k, (x)) : af_pool_free(p, (x)))
    void *big, *small, *again;
    assert_int_equal(ALLOC(4u << 20, &big), 0);
    assert_int_equal(FREE(big), 0);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    uint64_t maps = st.os_maps;
    assert_int_equal(st.classes[0].blocks, 0);

    assert_int_equal(ALLOC(1u << 20, &small), 0); /* class 0 is empty: borrow */
    assert_ptr_equal(small, big);
    af_pool_block_info_t bi;
    assert_int_equal(af_pool_block_info(p, small, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_BORROWED);
    assert_int_equal(bi.owner_class, 1);
    assert_int_equal(bi.borrower_class, 0);
    af_pool_stats(p, &st);
    assert_int_equal(st.borrows, 1);
    assert_int_equal(st.classes[1].blocks_lent, 1);

    assert_int_equal(FREE(small), 0);
    assert_int_equal(af_pool_block_info(p, small, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_FREE);
    assert_int_equal(bi.owner_class, 1);
    af_pool_stats(p, &st);
    assert_int_equal(st.classes[1].blocks_lent, 0);
    assert_int_equal(st.classes[1].blocks_free + st.classes[1].blocks_cached, 1);
    assert_int_equal(st.classes[0].blocks, 0);
    assert_int_equal(st.classes[0].blocks_free + st.classes[0].blocks_cached, 0);

    /* the large class gets its block back, without mapping anything */
    assert_int_equal(ALLOC(3u << 20, &again), 0);
    assert_ptr_equal(again, big);
    assert_int_equal(af_pool_block_info(p, again, &bi), 0);
    assert_int_equal(bi.state, AF_BLOCK_INUSE);
    af_pool_stats(p, &st);
    assert_int_equal(st.os_maps, maps);
    assert_int_equal(FREE(again), 0);
#undef ALLOC
#undef FREE
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

static void test_pool_borrow_returns_to_owner_class(void **state)
{
    (void)state;
    borrow_roundtrip(0);
}

static void test_pool_borrow_returns_to_owner_class_cached(void **state)
{
    (void)state;
    borrow_roundtrip(1);
}

static void test_pool_huge_reused_then_trimmed(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    void *h, *h2;
    assert_int_equal(af_pool_alloc(p, (100u << 20) + 3, &h), 0);
    memset(h, 1, 1 << 20);
    assert_int_equal(af_pool_free(p, h), 0);
    assert_int_equal(af_pool_alloc(p, 90u << 20, &h2), 0); /* within 25%: reused */
    assert_ptr_equal(h2, h);
    assert_int_equal(af_pool_free(p, h2), 0);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.os_maps, 1);
    assert_true(st.reserved_bytes >= (100u << 20));
    uint64_t rel = 0;
    assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_RELEASE, &rel), 0);
    assert_true(rel >= (100u << 20));
    af_pool_stats(p, &st);
    assert_int_equal(st.reserved_bytes, 0);
    assert_int_equal(af_pool_free(p, h), AF_EFOREIGN); /* unmapped now */
    af_pool_destroy(p);
}

/* Once a cache holds blocks of a class, alloc/free pairs through it take no lock at all. */
static void test_pool_cache_fast_path_takes_no_lock(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    static const size_t sizes[] = {256, 3000, 70000, 1u << 20, 5u << 20, 60u << 20};
    void *a[(sizeof(sizes) / sizeof(sizes[0]))];
    for (size_t i = 0; i < (sizeof(sizes) / sizeof(sizes[0])); i++) /* warm-up */
        assert_int_equal(af_pool_cache_alloc(k, sizes[i], &a[i]), 0);
    for (size_t i = 0; i < (sizeof(sizes) / sizeof(sizes[0])); i++)
        assert_int_equal(af_pool_cache_free(k, a[i]), 0);
    af_pool_stats_t st0, st;
    af_pool_stats(p, &st0);
    for (int r = 0; r < 1000; r++) {
        for (size_t i = 0; i < (sizeof(sizes) / sizeof(sizes[0])); i++)
            assert_int_equal(af_pool_cache_alloc(k, sizes[i] - (size_t)r % 200, &a[i]), 0);
        for (size_t i = 0; i < (sizeof(sizes) / sizeof(sizes[0])); i++)
            assert_int_equal(af_pool_cache_free(k, a[i]), 0);
    }
    af_pool_stats(p, &st);
    assert_int_equal(st.global_locks, st0.global_locks);
    assert_int_equal(st.class_locks, st0.class_locks);
    assert_int_equal(st.os_maps, st0.os_maps);
    assert_int_equal(st.fast_allocs - st0.fast_allocs, 1000 * (sizeof(sizes) / sizeof(sizes[0])));
    assert_int_equal(st.fast_frees - st0.fast_frees, 1000 * (sizeof(sizes) / sizeof(sizes[0])));
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

/* A cache keeps the huge chunks it frees and hands them out again without the global mutex
 * (with re-cutting off: above recut_min a cache re-cuts instead, see test_pool_recut.c). */
static void test_pool_cache_keeps_huge_chunks(void **state)
{
    (void)state;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.recut_min = 0;
    af_pool_t *p = make_pool(&o);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    void *h, *h2;
    assert_int_equal(af_pool_cache_alloc(k, 100u << 20, &h), 0);
    assert_int_equal(af_pool_cache_free(k, h), 0);
    af_pool_stats_t st0, st;
    af_pool_stats(p, &st0);
    assert_int_equal(af_pool_cache_alloc(k, 90u << 20, &h2), 0);
    assert_ptr_equal(h2, h);
    assert_int_equal(af_pool_cache_free(k, h2), 0);
    af_pool_stats(p, &st);
    assert_int_equal(st.global_locks, st0.global_locks);
    assert_int_equal(st.os_maps, st0.os_maps);
    assert_int_equal(af_pool_cache_free(k, h2), AF_EDOUBLEFREE);
    assert_int_equal(st.requested_bytes, 0);
    af_pool_cache_flush(k); /* back to the pool, where trim sees it */
    uint64_t rel = 0;
    af_pool_trim(p, AF_POOL_TRIM_RELEASE, &rel);
    assert_true(rel >= (100u << 20));
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

/* ---- stress -------------------------------------------------------------------------- */

static void test_pool_trim_releases_rss(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    enum { N = 96 };
    void *a[N];
    for (int i = 0; i < N; i++) {
        assert_int_equal(af_pool_cache_alloc(k, 1u << 20, &a[i]), 0);
        memset(a[i], 0x11, 1u << 20);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(af_pool_cache_free(k, a[i]), 0);
    af_pool_cache_flush(k);
    long before = rss_pages();
    uint64_t rel = 0;
    assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_RELEASE, &rel), 0);
    long after = rss_pages();
    long page = sysconf(_SC_PAGESIZE);
    double drop = (double)(before - after) * (double)page / (1 << 20);
    printf("trim: released %.1f MiB, RSS %.1f -> %.1f MiB (drop %.1f MiB)\n",
           (double)rel / (1 << 20), (double)before * page / (1 << 20),
           (double)after * page / (1 << 20), drop);
    assert_true(rel >= (uint64_t)N << 20);
    assert_true(drop >= 0.75 * N);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.reserved_bytes, 0);
    assert_true(st.os_unmaps > 0);
    /* the pool keeps working after a trim */
    void *x;
    assert_int_equal(af_pool_cache_alloc(k, 1u << 20, &x), 0);
    memset(x, 1, 1u << 20);
    assert_int_equal(af_pool_cache_free(k, x), 0);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
}

static void test_pool_trim_purge_keeps_blocks(void **state)
{
    (void)state;
    af_pool_t *p = make_pool(NULL);
    enum { N = 64 };
    void *a[N];
    for (int i = 0; i < N; i++) {
        assert_int_equal(af_pool_alloc(p, 1u << 20, &a[i]), 0);
        memset(a[i], 0x22, 1u << 20);
    }
    void *keep = a[0];
    for (int i = 1; i < N; i++)
        assert_int_equal(af_pool_free(p, a[i]), 0);
    long before = rss_pages();
    uint64_t rel = 0;
    af_pool_stats_t st0, st;
    af_pool_stats(p, &st0);
    assert_int_equal(af_pool_trim(p, AF_POOL_TRIM_PURGE, &rel), 0);
    long after = rss_pages();
    double drop = (double)(before - after) * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
    printf("purge: %.1f MiB madvised, RSS drop %.1f MiB\n", (double)rel / (1 << 20), drop);
    assert_true(drop >= 0.75 * (N - 1));
    af_pool_stats(p, &st);
    assert_int_equal(st.reserved_bytes, st0.reserved_bytes); /* still mapped */
    assert_true(st.os_madvise >= N - 1);
    unsigned char *c = keep;
    assert_int_equal(c[12345], 0x22); /* the block in use is untouched */
    assert_int_equal(af_pool_free(p, keep), 0);
    af_pool_destroy(p);
}

static void test_pool_idle_policy_releases(void **state)
{
    (void)state;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.idle_trim_ms = 500; /* far above what a loaded machine or TSan puts between two calls:
                             at 5 ms the "too early" check failed under TSan with load 12 */
    af_pool_t *p = make_pool(&o);
    void *a[8];
    for (int i = 0; i < 8; i++)
        assert_int_equal(af_pool_alloc(p, 2u << 20, &a[i]), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(af_pool_free(p, a[i]), 0);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_true(st.reserved_bytes >= 16u << 20);
    assert_int_equal(af_pool_maintain(p), 0); /* too early: nothing is idle long enough */
    af_pool_stats(p, &st);
    assert_true(st.reserved_bytes >= 16u << 20);
    struct timespec ts = {0, 700 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(af_pool_maintain(p), 0);
    af_pool_stats(p, &st);
    assert_int_equal(st.reserved_bytes, 0);
    af_pool_destroy(p);
}

/* ---- debug poisoning, out of memory ------------------------------------------------------ */

static void test_pool_poison_patterns(void **state)
{
    (void)state;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.poison = 1;
    af_pool_t *p = make_pool(&o);
    unsigned char *a;
    assert_int_equal(af_pool_alloc(p, 1000, (void **)&a), 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(a[i], 0xAA);
    memset(a, 0, 1000);
    assert_int_equal(af_pool_free(p, a), 0);
#ifndef AF_ASAN_BUILD /* ASan forbids reading a freed block: that is the point */
    for (int i = 0; i < 1024; i++)
        assert_int_equal(a[i], 0x55);
#endif
    af_pool_destroy(p);
}

/* Under ASan a block in the pool is poisoned, so a use after free inside the pool is reported. */
static void test_pool_asan_poisons_free_blocks(void **state)
{
    (void)state;
#ifdef AF_ASAN_BUILD
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    char *a, *b;
    assert_int_equal(af_pool_alloc(p, 5000, (void **)&a), 0);
    assert_int_equal(af_pool_cache_alloc(k, 700, (void **)&b), 0);
    assert_false(__asan_address_is_poisoned(a));
    assert_false(__asan_address_is_poisoned(a + 4999));
    assert_false(__asan_address_is_poisoned(b + 699));
    assert_int_equal(af_pool_free(p, a), 0);
    assert_int_equal(af_pool_cache_free(k, b), 0);
    assert_true(__asan_address_is_poisoned(a));
    assert_true(__asan_address_is_poisoned(a + 4999));
    assert_true(__asan_address_is_poisoned(b));
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
#else
    skip();
#endif
}

static int fail_at = -1, alloc_count = 0;
static void *failing_malloc(size_t n)
{
    return alloc_count++ == fail_at ? NULL : malloc(n);
}
static void *failing_calloc(size_t c, size_t n)
{
    return alloc_count++ == fail_at ? NULL : calloc(c, n);
}
static void *failing_realloc(void *p, size_t n)
{
    return alloc_count++ == fail_at ? NULL : realloc(p, n);
}

/* Fails allocation n = 0, 1, 2, ... of a create + cache + grow sequence until it succeeds. */
static void test_pool_oom_every_allocation(void **state)
{
    (void)state;
    int succeeded = 0;
    for (fail_at = 0; fail_at < 64 && !succeeded; fail_at++) {
        alloc_count = 0;
        af_replace_allocator(failing_malloc, failing_realloc, failing_calloc, free);
        af_pool_t *p = NULL;
        af_pool_cache_t *k = NULL;
        void *a = NULL, *h = NULL;
        int rc = af_pool_create(NULL, &p, NULL);
        if (rc == 0)
            rc = af_pool_cache_create(p, &k);
        if (rc == 0)
            rc = af_pool_cache_alloc(k, 3000, &a);
        if (rc == 0)
            rc = af_pool_alloc(p, 200u << 20, &h);
        af_reset_allocator();
        assert_true(rc == 0 || rc == AF_ENOMEM);
        if (rc == 0) {
            succeeded = 1;
            assert_int_equal(af_pool_free(p, h), 0);
            assert_int_equal(af_pool_cache_free(k, a), 0);
        }
        af_pool_cache_destroy(k);
        af_pool_destroy(p);
    }
    fail_at = -1;
    assert_true(succeeded);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_ladder_default_waste_bounded),
        cmocka_unit_test(test_pool_ladder_seed_preset),
        cmocka_unit_test(test_pool_ladder_bad_custom_rejected),
        cmocka_unit_test(test_pool_alloc_aligned_and_writable),
        cmocka_unit_test(test_pool_double_free_detected),
        cmocka_unit_test(test_pool_double_free_detected_across_caches),
        cmocka_unit_test(test_pool_foreign_pointer_detected),
        cmocka_unit_test(test_pool_borrow_returns_to_owner_class),
        cmocka_unit_test(test_pool_borrow_returns_to_owner_class_cached),
        cmocka_unit_test(test_pool_huge_reused_then_trimmed),
        cmocka_unit_test(test_pool_cache_fast_path_takes_no_lock),
        cmocka_unit_test(test_pool_cache_keeps_huge_chunks),
        cmocka_unit_test(test_pool_trim_releases_rss),
        cmocka_unit_test(test_pool_trim_purge_keeps_blocks),
        cmocka_unit_test(test_pool_idle_policy_releases),
        cmocka_unit_test(test_pool_poison_patterns),
        cmocka_unit_test(test_pool_asan_poisons_free_blocks),
        cmocka_unit_test(test_pool_oom_every_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
