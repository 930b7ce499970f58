/*
 * Out-of-memory tests of the pool's learned rounds (af_pool_cache_round): the library's heap
 * allocations (af_replace_allocator) fail from the n-th one counted after the cache's first
 * round call, n = 0, 1, ..., through recording, learning (the planner's placement, the arena's
 * tables) and the replayed rounds, until a run does not reach allocation n. At every point the
 * rounds stay correct (the runner of pool_round_runner.h checks contents and overlaps; an alloc
 * may answer AF_ENOMEM), af_pool_cache_round returns 0, and after the pool is destroyed no heap
 * allocation of the library is left (the hooks count them). The clean run must have learned.
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

/* Counting hooks: allocation number fail_at fails, and every later one unless fail_once
 * (fail_at < 0: none). */
static long n_allocs, fail_at = -1, live_allocs;
static int fail_once;

static int should_fail(void)
{
    if (fail_at < 0)
        return 0;
    long i = n_allocs++;
    return fail_once ? i == fail_at : i >= fail_at;
}

static void *hook_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = malloc(n);
    live_allocs += p != NULL;
    return p;
}

static void *hook_calloc(size_t c, size_t n)
{
    if (should_fail())
        return NULL;
    void *p = calloc(c, n);
    live_allocs += p != NULL;
    return p;
}

static void *hook_realloc(void *old, size_t n)
{
    if (should_fail())
        return NULL;
    void *p = realloc(old, n);
    live_allocs += p && !old;
    return p;
}

static void hook_free(void *p)
{
    live_allocs -= p != NULL;
    free(p);
}

/* One run with allocation n failing: 5 rounds (recorded, learned, replayed). Returns 1 when the
 * failure was reached. */
static int one_run(const trace_t *t, long n, uint64_t *learned, uint64_t *last_hits, int *enomem)
{
    long live0 = live_allocs;
    af_pool_t *p = make_pool(NULL);
    run_t r;
    run_init(&r, p, t->seed, t->n);
    r.enomem_ok = 1;
    n_allocs = 0;
    fail_at = n;
    round_delta_t d = {0};
    for (int round = 0; round < 5; round++) {
        run_begin(&r, round);
        if (round == 0)
            assert_int_equal(af_pool_cache_round(r.k), 0); /* records from the first request */
        run_events(&r, t->ev, t->nev);
        d = run_end(&r);
    }
    int reached = n_allocs > n;
    fail_at = -1;
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    *learned = st.rounds_learned;
    *last_hits = d.hits;
    *enomem = r.enomem;
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    if (live_allocs != live0)
        fprintf(stderr, "seed %llx: allocation %ld failed: %ld allocations leaked\n",
                (unsigned long long)t->seed, n, live_allocs - live0);
    assert_int_equal(live_allocs, live0);
    return reached;
}

/* state: 0, every allocation from the n-th on fails; 1, only the n-th (the run goes on). */
static void test_round_oom_while_learning(void **state)
{
    trace_t t;
    trace_make(&t, 0x00e77ull, 60, 256, 512 * KiB, 6);
    long n;
    int failed_allocs = 0, unlearned = 0;
    fail_once = (int)(intptr_t)*state;
    for (n = 0; n < 100000; n++) {
        uint64_t learned = 0, hits = 0;
        int enomem = 0;
        int reached = one_run(&t, n, &learned, &hits, &enomem);
        if (!reached) { /* the clean run */
            assert_int_equal(learned, 1);
            assert_int_equal(hits, t.n);
            break;
        }
        failed_allocs += enomem;
        unlearned += !learned;
    }
    printf(
        "oom while learning (%s): %ld injection points, %d allocs answered AF_ENOMEM, %d runs did "
        "not learn; no leak\n",
        fail_once ? "one failure" : "failures from then on", n, failed_allocs, unlearned);
    assert_true(n > 5 && n < 100000); /* learning allocates: the points were exercised */
    trace_free(&t);
}

int main(void)
{
    af_replace_allocator(hook_malloc, hook_realloc, hook_calloc, hook_free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_round_oom_while_learning, (void *)0),
        cmocka_unit_test_prestate(test_round_oom_while_learning, (void *)1),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    af_reset_allocator();
    return rc;
}
