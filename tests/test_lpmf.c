/*
 * LPMF (planner/schedule_lpmf.c) against a direct transcription of its rule: at every step,
 * over all ready nodes, recompute mem1 = L + a(v) and mem2 = mem1 - f(v) from scratch and take
 * the lowest mem2 among those with mem1 <= P, else the lowest mem1 (ties on input position).
 * The scheduler keeps the ready set in a list when it is small and in a segment tree when it is
 * large, switching both ways; graphs here have narrow and very wide frontiers (layers of up to
 * 400 nodes) so both structures and the switches are exercised. Fixed-seed PRNG; the seed is
 * printed on failure.
 */
#include "planner/planner_int.h"
#include "tests/randdag.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The rule, O(n) per step. */
static void reference_lpmf(const af__smodel_t *m, int32_t *order)
{
    const af_graph_t *g = m->g;
    af__sstate_t s;
    assert_int_equal(af__sstate_init(&s, m), 0);
    int32_t *indeg = calloc((size_t)m->n + 1, sizeof(int32_t));
    uint8_t *ready = calloc((size_t)m->n + 1, 1);
    for (int32_t v = 0; v < m->n; v++) {
        indeg[v] = af_graph_node(g, v)->n_preds;
        ready[v] = indeg[v] == 0;
    }
    uint64_t peak = m->base + m->extra0;
    for (int32_t k = 0; k < m->n; k++) {
        uint64_t room = peak > s.live ? peak - s.live : 0;
        int32_t best = -1, left = -1;
        int64_t best_key = 0;
        for (int32_t v = 0; v < m->n; v++) {
            if (!ready[v])
                continue;
            int64_t key = (int64_t)m->def[v] - (int64_t)af__sstate_freed(&s, v);
            if (m->def[v] <= room &&
                (best < 0 || key < best_key || (key == best_key && m->pos[v] < m->pos[best]))) {
                best = v;
                best_key = key;
            }
            if (left < 0 || m->def[v] < m->def[left] ||
                (m->def[v] == m->def[left] && m->pos[v] < m->pos[left]))
                left = v;
        }
        int32_t v = best >= 0 ? best : left;
        assert_true(v >= 0);
        order[k] = v;
        ready[v] = 0;
        uint64_t during = s.live + af__sstate_alloc(&s, v);
        peak = during > peak ? during : peak;
        af__sstate_run(&s, v, NULL, NULL);
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t j = 0; j < nd->n_succs; j++)
            if (--indeg[nd->succs[j]] == 0)
                ready[nd->succs[j]] = 1;
    }
    af__sstate_free(&s);
    free(indeg);
    free(ready);
}

/* Layers of random width (1..400, some wide, some narrow); each node reads 1-3 tensors of the
 * previous two layers; sizes from a few distinct values so keys tie often. */
static af_graph_t *layered_graph(uint64_t seed)
{
    af_zoo_rng_t r = {seed * 0x9e3779b97f4a7c15ull + 7};
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    char name[32], nn[32], ib[3][32];
    int32_t prev_lo = 0, lo = 0, hi = 1, nt = 1, layers = 3 + (int)af_zoo_rng_below(&r, 10);
    af_tensor_desc_t in = {.name = "t0", .bytes = 4096, .rank = -1, .kind = AF_TENSOR_INPUT};
    assert_int_equal(af_graph_add_tensor(g, &in, NULL, NULL), 0);
    for (int32_t l = 0; l < layers; l++) {
        int32_t width = af_zoo_rng_below(&r, 3) == 0 ? 1 + (int32_t)af_zoo_rng_below(&r, 8)
                                                     : 1 + (int32_t)af_zoo_rng_below(&r, 400);
        int32_t first = nt;
        for (int32_t w = 0; w < width; w++) {
            snprintf(name, sizeof name, "t%d", nt);
            af_tensor_desc_t d = {.name = name,
                                  .bytes = 256 * (int64_t)(1 + af_zoo_rng_below(&r, 6)),
                                  .rank = -1,
                                  .kind =
                                      l == layers - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE};
            assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
            const char *ins[3];
            int fan = 1 + (int)af_zoo_rng_below(&r, 3);
            for (int k = 0; k < fan; k++) {
                int32_t t = prev_lo + (int32_t)af_zoo_rng_below(&r, (uint64_t)(hi - prev_lo));
                snprintf(ib[k], sizeof ib[k], "t%d", t);
                ins[k] = ib[k];
            }
            const char *outs[1] = {name};
            snprintf(nn, sizeof nn, "n%d", nt);
            af_node_desc_t nd = {.name = nn,
                                 .op = "Op",
                                 .inputs = ins,
                                 .n_inputs = fan,
                                 .outputs = outs,
                                 .n_outputs = 1,
                                 .cost = 1};
            assert_int_equal(af_graph_add_node(g, &nd, NULL, NULL), 0);
            nt++;
        }
        prev_lo = lo;
        lo = first;
        hi = nt;
    }
    af_error_t err;
    assert_int_equal(af_graph_finalize(g, &err), 0);
    return g;
}

static void check_graph(af_graph_t *g, uint64_t seed, int32_t *max_ready)
{
    af__smodel_t m;
    af_error_t err;
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    assert_int_equal(af__smodel_init(&m, g, 256, &err), 0);
    int32_t *got = malloc(((size_t)m.n + 1) * sizeof(int32_t));
    int32_t *want = malloc(((size_t)m.n + 1) * sizeof(int32_t));
    assert_int_equal(af__sched_lpmf(&m, &o, got, &err), 0);
    reference_lpmf(&m, want);
    for (int32_t k = 0; k < m.n; k++)
        if (got[k] != want[k]) {
            print_error("seed %llu: step %d runs node %d, the rule picks %d\n",
                        (unsigned long long)seed, k, got[k], want[k]);
            fail();
        }
    /* the figures lpmf reports of its order are the simulation's of the same order */
    uint64_t peak = 0, area = 0, want_peak = 1, want_area = 1;
    assert_int_equal(af__sched_lpmf_peak(&m, &o, got, &peak, &area, &err), 0);
    assert_int_equal(af__smodel_peak(&m, got, &want_peak, NULL, &want_area), 0);
    assert_true(peak == want_peak && area == want_area);
    /* widest frontier the order went through, to check the test reaches the tree */
    int32_t *indeg = calloc((size_t)m.n + 1, sizeof(int32_t)), ready = 0;
    for (int32_t v = 0; v < m.n; v++)
        ready += (indeg[v] = af_graph_node(g, v)->n_preds) == 0;
    for (int32_t k = 0; k < m.n; k++) {
        *max_ready = ready > *max_ready ? ready : *max_ready;
        ready--;
        const af_node_info_t *nd = af_graph_node(g, got[k]);
        for (int32_t j = 0; j < nd->n_succs; j++)
            ready += --indeg[nd->succs[j]] == 0;
    }
    free(indeg);
    free(got);
    free(want);
    af__smodel_free(&m);
}

static void test_lpmf_matches_rule_on_layered_graphs(void **state)
{
    (void)state;
    int32_t max_ready = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        af_graph_t *g = layered_graph(seed);
        check_graph(g, seed, &max_ready);
        af_graph_destroy(g);
    }
    assert_true(max_ready > 200); /* the tree was used */
}

static void test_lpmf_matches_rule_on_random_dags(void **state)
{
    (void)state;
    int32_t max_ready = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        af_graph_t *g = rd_graph(seed, 120);
        assert_non_null(g);
        check_graph(g, seed, &max_ready);
        af_graph_destroy(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lpmf_matches_rule_on_layered_graphs),
        cmocka_unit_test(test_lpmf_matches_rule_on_random_dags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
