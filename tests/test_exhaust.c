/*
 * Pool exhaustion at run time (issue #10, item 4): when the arena pool cannot grow, a round
 * fails with a clear error, and the executor, the failing session and every other session stay
 * usable. The pool is created with the smallest address-space reservation it accepts (64 MiB),
 * so a plan whose arena is larger cannot get one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arenaflow/executor.h"
#include "arenaflow/graph.h"
#include "arenaflow/plan.h"
#include "arenaflow/pool.h"

/* x -> n0 -> t0 -> n1 -> t1 ... -> out, every intermediate `bytes` large. */
static af_graph_t *chain(int64_t bytes, int len)
{
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    char name[32], prev[32], node[32];
    af_tensor_desc_t d = {.name = "x", .bytes = 4096, .rank = -1, .kind = AF_TENSOR_INPUT};
    assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
    snprintf(prev, sizeof prev, "x");
    for (int i = 0; i < len; i++) {
        snprintf(name, sizeof name, "t%d", i);
        d = (af_tensor_desc_t){.name = name,
                               .bytes = i == len - 1 ? 4096 : bytes,
                               .rank = -1,
                               .kind = i == len - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE};
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
        const char *in[] = {prev}, *out[] = {name};
        snprintf(node, sizeof node, "n%d", i);
        af_node_desc_t nd = {node, "Op", in, 1, out, 1, 1.0, NULL, 0};
        assert_int_equal(af_graph_add_node(g, &nd, NULL, NULL), 0);
        snprintf(prev, sizeof prev, "%s", name);
    }
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

static void test_exhaust_round_fails_cleanly_and_sessions_survive(void **state)
{
    (void)state;
    af_pool_opts_t po;
    af_pool_opts_init(&po);
    po.va_reserve = 64ull << 20;
    af_pool_t *pool;
    af_error_t err;
    assert_int_equal(af_pool_create(&po, &pool, &err), 0);
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.threads = 2;
    eo.pool = pool;
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&eo, &ex, &err), 0);

    af_graph_t *small = chain(1 << 20, 6), *big = chain(48 << 20, 4);
    af_plan_t *ps, *pb;
    assert_int_equal(af_plan_create(small, NULL, &ps, &err), 0);
    assert_int_equal(af_plan_create(big, NULL, &pb, &err), 0);
    assert_true(af_plan_arena_bytes(pb) > (64ull << 20)); /* two 48 MiB tensors live at once */

    af_session_t *ss, *sb;
    assert_int_equal(af_session_create(ex, ps, NULL, &ss, &err), 0);
    assert_int_equal(af_session_create(ex, pb, NULL, &sb, &err), 0);
    assert_int_equal(af_session_run(ss, NULL, NULL, &err), 0);

    /* the big plan's arena cannot come from a 64 MiB pool: the round fails, clearly */
    for (int i = 0; i < 3; i++) {
        af_error_clear(&err);
        int rc = af_session_run(sb, NULL, NULL, &err);
        assert_int_equal(rc, AF_ENOMEM);
        assert_non_null(strstr(err.msg, "arena"));
    }
    print_message("failed round says: %s\n", err.msg);

    /* everything else keeps working, and nothing computed before is lost */
    for (int i = 0; i < 20; i++)
        assert_int_equal(af_session_run(ss, NULL, NULL, &err), 0);
    af_session_stats_t st;
    af_session_stats(ss, &st);
    assert_int_equal(st.rounds, 21);
    assert_int_equal(st.corrupted_tensors, 0);
    af_session_stats(sb, &st);
    assert_int_equal(st.corrupted_tensors, 0);

    /* the failed session can be destroyed, and a fitting plan still runs on the same pool */
    af_session_destroy(sb);
    af_session_t *s2;
    assert_int_equal(af_session_create(ex, ps, NULL, &s2, &err), 0);
    assert_int_equal(af_session_run(s2, NULL, NULL, &err), 0);
    af_session_destroy(s2);
    af_session_destroy(ss);
    af_executor_destroy(ex);
    af_pool_destroy(pool);
    af_plan_destroy(ps);
    af_plan_destroy(pb);
    af_graph_destroy(small);
    af_graph_destroy(big);
}

/* Round 1 asks the dynamic region for an impossible size (2^60 bytes); others for 4 KiB. */
static uint64_t dyn_bytes(void *user, int32_t tensor, uint64_t round)
{
    (void)user;
    (void)tensor;
    return round == 1 ? 1ull << 60 : 4096;
}

static void test_exhaust_dynamic_region_round_fails_then_recovers(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t x = {.name = "x", .bytes = 4096, .rank = -1, .kind = AF_TENSOR_INPUT};
    af_tensor_desc_t d = {.name = "d", .bytes = AF_BYTES_DYNAMIC, .rank = -1};
    af_tensor_desc_t y = {.name = "y", .bytes = 4096, .rank = -1, .kind = AF_TENSOR_OUTPUT};
    assert_int_equal(af_graph_add_tensor(g, &x, NULL, NULL), 0);
    assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
    assert_int_equal(af_graph_add_tensor(g, &y, NULL, NULL), 0);
    const char *ix[] = {"x"}, *id[] = {"d"}, *iy[] = {"y"};
    af_node_desc_t n0 = {"grow", "Op", ix, 1, id, 1, 1.0, NULL, 0};
    af_node_desc_t n1 = {"shrink", "Op", id, 1, iy, 1, 1.0, NULL, 0};
    assert_int_equal(af_graph_add_node(g, &n0, NULL, NULL), 0);
    assert_int_equal(af_graph_add_node(g, &n1, NULL, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p;
    af_error_t err;
    assert_int_equal(af_plan_create(g, NULL, &p, &err), 0);
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.threads = 2;
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&eo, &ex, &err), 0);
    af_session_opts_t so = {0};
    so.dynamic_bytes = dyn_bytes;
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
    assert_int_equal(af_session_run(s, NULL, NULL, &err), 0); /* round 0 */
    int rc = af_session_run(s, NULL, NULL, &err);             /* round 1: impossible size */
    assert_int_equal(rc, AF_ENOMEM);
    print_message("dynamic round says: %s\n", err.msg);
    for (int i = 0; i < 5; i++)
        assert_int_equal(af_session_run(s, NULL, NULL, &err), 0);
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.corrupted_tensors, 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exhaust_round_fails_cleanly_and_sessions_survive),
        cmocka_unit_test(test_exhaust_dynamic_region_round_fails_then_recovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
