/*
 * Stress tests of the buffer pool (pool/): random sizes, 10^5..10^6 operations, one thread and
 * several threads freeing each other's blocks (split from test_pool.c).
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

typedef struct {
    void *p;
    size_t size;
    uint64_t id;
} obj_t;

static void test_pool_stress_single_thread(void **state)
{
    (void)state;
    const uint64_t seed0 = 0x5eed0001;
    uint64_t seed = seed0;
    af_pool_t *p = make_pool(NULL);
    af_pool_cache_t *k;
    assert_int_equal(af_pool_cache_create(p, &k), 0);
    enum { LIVE = 512 };
    obj_t live[LIVE] = {{0}};
    uint64_t next_id = 1, live_req = 0;
    const long ops = 1000000 / SCALE; /* issue 6: 10^6 operations (normal build) */
    for (long i = 0; i < ops; i++) {
        uint32_t slot = (uint32_t)(rng_next(&seed) % LIVE);
        obj_t *o = &live[slot];
        if (o->p) {
            if (!check(o->p, o->size, o->id)) {
                fprintf(stderr, "seed %#llx op %ld: block %p (id %llu) corrupted\n",
                        (unsigned long long)seed0, i, o->p, (unsigned long long)o->id);
                fail();
            }
            int rc = (o->id & 1) ? af_pool_cache_free(k, o->p) : af_pool_free(p, o->p);
            assert_int_equal(rc, 0);
            live_req -= o->size;
            o->p = NULL;
        } else {
            size_t s = rng_size(&seed, 1, (rng_next(&seed) & 15) ? 256u << 10 : 16u << 20);
            o->id = next_id++;
            o->size = s;
            int rc = (o->id & 2) ? af_pool_cache_alloc(k, s, &o->p) : af_pool_alloc(p, s, &o->p);
            if (rc) {
                fprintf(stderr, "seed %#llx op %ld: alloc %zu failed\n", (unsigned long long)seed0,
                        i, s);
                fail();
            }
            fill(o->p, s, o->id);
            live_req += s;
        }
    }
    printf("single thread: %ld operations (%llu allocs), every block's contents checked at free\n",
           ops, (unsigned long long)(next_id - 1));
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.requested_bytes, live_req);
    assert_int_equal(st.allocs, next_id - 1);
    for (int i = 0; i < LIVE; i++)
        if (live[i].p) {
            assert_true(check(live[i].p, live[i].size, live[i].id));
            assert_int_equal(af_pool_cache_free(k, live[i].p), 0);
        }
    af_pool_cache_destroy(k);
    af_pool_stats(p, &st);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.requested_bytes, 0);
    assert_int_equal(st.allocated_bytes, 0);
    assert_true(st.peak_reserved_bytes >= st.peak_requested_bytes);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    af_pool_destroy(p);
}

/* Multi-thread: each thread allocates, fills, and either frees its own objects or hands them to
 * a shared exchange from which any thread takes and frees them (cross-thread frees). */
enum { NTHREADS = 4, XCHG = 256 };

typedef struct {
    af_pool_t *pool;
    pthread_mutex_t mu;
    obj_t xchg[XCHG];
    atomic_long failures;
    atomic_ullong ids;
} shared_t;

typedef struct {
    shared_t *sh;
    uint64_t seed;
    long ops;
} worker_arg_t;

static void *stress_worker(void *arg)
{
    worker_arg_t *wa = arg;
    shared_t *sh = wa->sh;
    uint64_t seed = wa->seed;
    af_pool_cache_t *k;
    if (af_pool_cache_create(sh->pool, &k)) {
        atomic_fetch_add(&sh->failures, 1);
        return NULL;
    }
    enum { MINE = 64 };
    obj_t mine[MINE] = {{0}};
    for (long i = 0; i < wa->ops; i++) {
        uint64_t r = rng_next(&seed);
        obj_t *o = &mine[r % MINE];
        if (!o->p) {
            o->size = rng_size(&seed, 1, (r >> 40) % 64 ? 64u << 10 : 8u << 20);
            o->id = atomic_fetch_add(&sh->ids, 1);
            if (af_pool_cache_alloc(k, o->size, &o->p)) {
                atomic_fetch_add(&sh->failures, 1);
                o->p = NULL;
                continue;
            }
            fill(o->p, o->size, o->id);
            continue;
        }
        obj_t out = *o;
        o->p = NULL;
        if ((r >> 20) & 1) { /* swap with the exchange: free whatever was there */
            uint32_t x = (uint32_t)((r >> 24) % XCHG);
            pthread_mutex_lock(&sh->mu);
            obj_t prev = sh->xchg[x];
            sh->xchg[x] = out;
            pthread_mutex_unlock(&sh->mu);
            out = prev;
            if (!out.p)
                continue;
        }
        if (!check(out.p, out.size, out.id))
            atomic_fetch_add(&sh->failures, 1);
        int rc = (r >> 30) & 3 ? af_pool_cache_free(k, out.p) : af_pool_free(sh->pool, out.p);
        if (rc)
            atomic_fetch_add(&sh->failures, 1);
    }
    for (int i = 0; i < MINE; i++)
        if (mine[i].p) {
            if (!check(mine[i].p, mine[i].size, mine[i].id) || af_pool_cache_free(k, mine[i].p))
                atomic_fetch_add(&sh->failures, 1);
        }
    af_pool_cache_destroy(k);
    return NULL;
}

static void stress_multi_thread(uint64_t seed0, int idle_trim, long ops)
{
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    o.cache_slots = 8; /* small caches: exercise refill, flush and central borrowing */
    if (idle_trim)     /* and idle chunks released while others allocate */
        o.idle_trim_ms = 1;
    shared_t sh;
    memset(&sh, 0, sizeof(sh));
    sh.pool = make_pool(&o);
    pthread_mutex_init(&sh.mu, NULL);
    atomic_init(&sh.failures, 0);
    atomic_init(&sh.ids, 1);
    pthread_t th[NTHREADS];
    worker_arg_t wa[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        wa[t] = (worker_arg_t){&sh, seed0 + (uint64_t)t * 7919, ops};
        assert_int_equal(pthread_create(&th[t], NULL, stress_worker, &wa[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    long fails = atomic_load(&sh.failures);
    if (fails)
        fprintf(stderr, "seed %#llx: %ld failures\n", (unsigned long long)seed0, fails);
    assert_int_equal(fails, 0);
    for (int x = 0; x < XCHG; x++)
        if (sh.xchg[x].p) {
            assert_true(check(sh.xchg[x].p, sh.xchg[x].size, sh.xchg[x].id));
            assert_int_equal(af_pool_free(sh.pool, sh.xchg[x].p), 0);
        }
    af_pool_stats_t st;
    af_pool_stats(sh.pool, &st);
    printf("%d threads: %ld operations, %llu allocs and %llu frees (any thread's objects)\n",
           NTHREADS, NTHREADS * ops, (unsigned long long)st.allocs, (unsigned long long)st.frees);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.requested_bytes, 0);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    assert_true(st.fast_allocs > 0 && st.fast_allocs <= st.allocs);
    for (uint32_t c = 0; c < st.nclasses; c++) {
        assert_int_equal(st.classes[c].blocks_in_use, 0);
        assert_int_equal(st.classes[c].blocks_lent, 0);
    }
    uint64_t rel = 0;
    af_pool_trim(sh.pool, AF_POOL_TRIM_RELEASE, &rel);
    af_pool_stats(sh.pool, &st);
    assert_int_equal(st.reserved_bytes, 0); /* every cache was flushed on destroy */
    pthread_mutex_destroy(&sh.mu);
    af_pool_destroy(sh.pool);
}

static void test_pool_stress_multi_thread_cross_free(void **state)
{
    (void)state;
    stress_multi_thread(0x5eed0002, 0, 250000 / SCALE); /* x 4 threads: 10^6 operations */
}

static void test_pool_stress_multi_thread_idle_trim(void **state)
{
    (void)state;
    stress_multi_thread(0x5eed0003, 1, 30000 / SCALE);
}

/* ---- trim --------------------------------------------------------------------------- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_stress_single_thread),
        cmocka_unit_test(test_pool_stress_multi_thread_cross_free),
        cmocka_unit_test(test_pool_stress_multi_thread_idle_trim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
