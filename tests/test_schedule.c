/*
 * Scheduler tests: every scheduler returns a topological permutation whose reported peak equals
 * af_order_peak() on 2,000 random DAGs; `best` is never worse than the input order; the exact
 * DP equals a brute-force optimum (exhaustive enumeration of topological orders, pruned only by
 * the best complete order found so far, with its own peak simulation) on every random DAG of
 * <= 16 nodes, and the rate at which each heuristic hits that optimum is printed; budgets that
 * cannot be met fail with AF_EBUDGET naming the step and the live tensors; the seed scheduler's
 * executability check keeps a feasible budget; out-of-memory at every allocation is clean.
 * Every plan made here is checked with af_plan_verify().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/plan.h"
#include "planner/planner_int.h"
#include "tests/randdag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SCHED 9

static void fail_seed(uint64_t seed, const char *what)
{
    fprintf(stderr, "FAILED with seed %llu: %s\n", (unsigned long long)seed, what);
    fail();
}

/* ---- independent peak simulation ---------------------------------------------------------- */

typedef struct sim {
    int32_t nr;
    uint64_t size[512];
    int32_t total[512]; /* nodes touching the root */
    int input[512], pinned[512];
    int32_t touch[64][64]; /* node -> roots touched (distinct) */
    int32_t n_touch[64];
} sim_t;

static int is_root(const af_graph_t *g, int32_t t)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    return ti->alias_of < 0 && ti->kind != AF_TENSOR_CONSTANT && ti->bytes > 0;
}

static void sim_build(const af_graph_t *g, uint64_t align, sim_t *s)
{
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    int32_t rid[512];
    memset(s, 0, sizeof(*s));
    assert_true(nt < 512 && nn <= 64);
    for (int32_t t = 0; t < nt; t++) {
        rid[t] = -1;
        if (is_root(g, t)) {
            rid[t] = s->nr;
            s->size[s->nr] = af__align_up((uint64_t)af_graph_tensor(g, t)->bytes, align);
            s->input[s->nr] = af_graph_tensor(g, t)->kind == AF_TENSOR_INPUT;
            s->nr++;
        }
    }
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t j = 0; j < nd->n_inputs + nd->n_outputs; j++) {
            int32_t t = j < nd->n_inputs ? nd->inputs[j] : nd->outputs[j - nd->n_inputs];
            int32_t r = rid[af_graph_alias_root(g, t)];
            int dup = 0;
            for (int32_t k = 0; k < s->n_touch[v]; k++)
                dup |= s->touch[v][k] == r;
            if (r < 0 || dup)
                continue;
            s->touch[v][s->n_touch[v]++] = r;
            s->total[r]++;
        }
    }
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = rid[af_graph_alias_root(g, t)];
        if (r >= 0 && af_graph_tensor(g, t)->kind == AF_TENSOR_OUTPUT)
            s->pinned[r] = 1;
    }
}

/* Live bytes while node v runs as step `step`, cnt[r] = touches already run. */
static uint64_t sim_during(const sim_t *s, const int32_t *cnt, int32_t v, int32_t step)
{
    uint64_t live = 0;
    for (int32_t r = 0; r < s->nr; r++) {
        int here = 0;
        for (int32_t k = 0; k < s->n_touch[v]; k++)
            here |= s->touch[v][k] == r;
        int started = s->input[r] || cnt[r] > 0 || here;
        int alive = s->pinned[r] || cnt[r] < s->total[r];
        if (s->input[r] && s->total[r] == 0 && !s->pinned[r])
            alive = step == 0;
        if (started && alive)
            live += s->size[r];
    }
    return live;
}

/* ---- brute force -------------------------------------------------------------------------- */

typedef struct bf {
    const af_graph_t *g;
    const sim_t *s;
    int32_t n;
    int32_t indeg[64], cnt[512], order[64], best_order[64];
    uint8_t done[64];
    uint64_t best;
    uint64_t leaves;
} bf_t;

static void bf_rec(bf_t *b, int32_t depth, uint64_t peak)
{
    if (depth == b->n) {
        b->leaves++;
        if (peak < b->best) {
            b->best = peak;
            memcpy(b->best_order, b->order, sizeof(b->order));
        }
        return;
    }
    for (int32_t v = 0; v < b->n; v++) {
        if (b->done[v] || b->indeg[v])
            continue;
        uint64_t d = sim_during(b->s, b->cnt, v, depth);
        uint64_t p = d > peak ? d : peak;
        if (p >= b->best)
            continue; /* cannot beat the best complete order already seen */
        const af_node_info_t *nd = af_graph_node(b->g, v);
        b->done[v] = 1;
        b->order[depth] = v;
        for (int32_t j = 0; j < nd->n_succs; j++)
            b->indeg[nd->succs[j]]--;
        for (int32_t k = 0; k < b->s->n_touch[v]; k++)
            b->cnt[b->s->touch[v][k]]++;
        bf_rec(b, depth + 1, p);
        for (int32_t k = 0; k < b->s->n_touch[v]; k++)
            b->cnt[b->s->touch[v][k]]--;
        for (int32_t j = 0; j < nd->n_succs; j++)
            b->indeg[nd->succs[j]]++;
        b->done[v] = 0;
    }
}

static uint64_t brute_force(const af_graph_t *g, uint64_t align, int32_t *best_order)
{
    static sim_t s;
    static bf_t b;
    sim_build(g, align, &s);
    memset(&b, 0, sizeof(b));
    b.g = g;
    b.s = &s;
    b.n = af_graph_node_count(g);
    b.best = UINT64_MAX;
    for (int32_t v = 0; v < b.n; v++)
        b.indeg[v] = af_graph_node(g, v)->n_preds;
    bf_rec(&b, 0, 0);
    memcpy(best_order, b.best_order, (size_t)b.n * sizeof(int32_t));
    return b.best;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static int is_topological(const af_graph_t *g, const int32_t *order)
{
    int32_t nn = af_graph_node_count(g), step[4096];
    if (nn > 4096)
        return 0;
    for (int32_t v = 0; v < nn; v++)
        step[v] = -1;
    for (int32_t s = 0; s < nn; s++) {
        if (order[s] < 0 || order[s] >= nn || step[order[s]] >= 0)
            return 0;
        step[order[s]] = s;
    }
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t k = 0; k < nd->n_preds; k++)
            if (step[nd->preds[k]] >= step[v])
                return 0;
    }
    return 1;
}

static int sched(const af_graph_t *g, const char *name, int32_t *order, af__sched_result_t *res,
                 uint64_t budget, af_error_t *err)
{
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.schedule = name;
    o.budget = budget;
    return af__schedule(g, &o, order, res, err);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_schedule_names_table(void **state)
{
    (void)state;
    const char *const *names = af_schedule_names();
    static const char *want[N_SCHED] = {"input", "seed", "xla-list", "lpmf", "dfs",
                                        "rpo",   "bfs",  "dp",       "best"};
    int n = 0;
    while (names[n])
        n++;
    assert_int_equal(n, N_SCHED);
    for (int i = 0; i < N_SCHED; i++) {
        int found = 0;
        for (int k = 0; k < n; k++)
            found |= strcmp(names[k], want[i]) == 0;
        assert_true(found);
        assert_non_null(af__sched_find(want[i]));
    }
    assert_null(af__sched_find("nope"));
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    assert_string_equal(o.schedule, "best");
}

static void test_schedule_unknown_name_error(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(7, 10);
    assert_non_null(g);
    int32_t order[16];
    af__sched_result_t res;
    af_error_t err;
    af_error_clear(&err);
    assert_int_equal(sched(g, "fastest", order, &res, 0, &err), AF_EINVAL);
    assert_non_null(strstr(err.msg, "fastest"));
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    af_error_clear(&err);
    assert_int_not_equal(af_plan_opts_set(&o, "schedule", "fastest", &err), 0);
    af_graph_destroy(g);
}

static void test_schedule_random_dags_valid_orders(void **state)
{
    (void)state;
    const char *const *names = af_schedule_names();
    int32_t order[128];
    uint64_t worse_than_input = 0, improved = 0;
    for (uint64_t seed = 1; seed <= 2000; seed++) {
        af_graph_t *g = rd_graph(seed, seed % 4 == 0 ? 100 : 40);
        if (!g)
            fail_seed(seed, "generator");
        uint64_t peak_input = 0, peak_best = 0;
        for (int k = 0; names[k]; k++) {
            af__sched_result_t res;
            af_error_t err;
            af_error_clear(&err);
            if (sched(g, names[k], order, &res, 0, &err)) {
                fprintf(stderr, "%s: %s\n", names[k], err.msg);
                fail_seed(seed, names[k]);
            }
            if (!is_topological(g, order))
                fail_seed(seed, names[k]);
            uint64_t peak;
            assert_int_equal(af_order_peak(g, order, 256, &peak, NULL, NULL), 0);
            if (peak != res.peak) {
                fprintf(stderr, "%s: reported %llu, af_order_peak %llu\n", names[k],
                        (unsigned long long)res.peak, (unsigned long long)peak);
                fail_seed(seed, "peak mismatch");
            }
            if (strcmp(names[k], "input") == 0)
                peak_input = peak;
            if (strcmp(names[k], "best") == 0)
                peak_best = peak;
        }
        worse_than_input += peak_best > peak_input;
        improved += peak_best < peak_input;
        af_graph_destroy(g);
    }
    printf("random DAGs: best below input order on %llu of 2000, worse on %llu\n",
           (unsigned long long)improved, (unsigned long long)worse_than_input);
    assert_int_equal(worse_than_input, 0);
}

static void test_schedule_dp_equals_brute_force(void **state)
{
    (void)state;
    const char *heur[] = {"input", "seed", "xla-list", "lpmf", "dfs", "rpo", "bfs", "best", "dp"};
    enum { NH = sizeof(heur) / sizeof(heur[0]) };
    int hits[NH] = {0};
    int cases = 0, proven = 0;
    int32_t order[64], bf_order[64];
    for (uint64_t seed = 10001; seed <= 10600; seed++) {
        af_graph_t *g = rd_graph(seed, 16);
        if (!g)
            fail_seed(seed, "generator");
        assert_true(af_graph_node_count(g) <= 16);
        uint64_t opt = brute_force(g, 256, bf_order);
        uint64_t check;
        assert_int_equal(af_order_peak(g, bf_order, 256, &check, NULL, NULL), 0);
        if (check != opt)
            fail_seed(seed, "brute-force simulation disagrees with af_order_peak");
        for (int h = 0; h < NH; h++) {
            af__sched_result_t res;
            if (sched(g, heur[h], order, &res, 0, NULL))
                fail_seed(seed, heur[h]);
            uint64_t peak;
            assert_int_equal(af_order_peak(g, order, 256, &peak, NULL, NULL), 0);
            if (peak < opt)
                fail_seed(seed, "a scheduler beat the brute-force optimum");
            hits[h] += peak == opt;
            if (strcmp(heur[h], "dp") == 0) {
                if (peak != opt) {
                    fprintf(stderr, "dp %llu vs optimum %llu (%d nodes)\n",
                            (unsigned long long)peak, (unsigned long long)opt,
                            af_graph_node_count(g));
                    fail_seed(seed, "exact DP is not optimal");
                }
                if (!res.optimal)
                    fail_seed(seed, "exact DP did not report optimality");
                proven += res.optimal;
            }
        }
        cases++;
        af_graph_destroy(g);
    }
    printf("brute force on %d random DAGs of <= 16 nodes; optimum hit rate:\n", cases);
    for (int h = 0; h < NH; h++)
        printf("  %-9s %5.1f%% (%d/%d)\n", heur[h], 100.0 * hits[h] / cases, hits[h], cases);
    assert_int_equal(hits[NH - 1], cases);
    assert_int_equal(hits[NH - 2], cases); /* best runs the DP at this size */
    assert_int_equal(proven, cases);
}

static void test_schedule_plans_verify(void **state)
{
    (void)state;
    const char *const *names = af_schedule_names();
    for (uint64_t seed = 501; seed <= 560; seed++) {
        af_graph_t *g = rd_graph(seed, 60);
        assert_non_null(g);
        uint64_t input_arena = 0;
        for (int k = 0; names[k]; k++) {
            af_plan_opts_t o;
            af_plan_opts_init(&o);
            o.schedule = names[k];
            af_plan_t *p = NULL;
            af_error_t err;
            af_error_clear(&err);
            if (af_plan_create(g, &o, &p, &err)) {
                fprintf(stderr, "%s: %s\n", names[k], err.msg);
                fail_seed(seed, "af_plan_create");
            }
            if (af_plan_verify(p, &err)) {
                fprintf(stderr, "%s: %s\n", names[k], err.msg);
                fail_seed(seed, "af_plan_verify");
            }
            const af_plan_report_t *r = af_plan_report(p);
            uint64_t peak;
            assert_int_equal(af_order_peak(g, af_plan_order(p), 256, &peak, NULL, NULL), 0);
            assert_true(r->arena_bytes >= r->lower_bound_bytes);
            if (strcmp(names[k], "input") == 0)
                input_arena = peak;
            if (strcmp(names[k], "best") == 0 && peak > input_arena)
                fail_seed(seed, "best peak above input order peak in a plan");
            af_plan_destroy(p);
        }
        af_graph_destroy(g);
    }
}

/* A diamond of wide branches: two big tensors per branch; running one branch to completion
 * before starting the other halves the peak. */
static af_graph_t *branches_graph(int nb, int64_t x_bytes)
{
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t in = {.name = "x", .bytes = x_bytes, .rank = -1, .kind = AF_TENSOR_INPUT};
    assert_int_equal(af_graph_add_tensor(g, &in, NULL, NULL), 0);
    char names[64][16];
    const char *sum_in[16];
    for (int b = 0; b < nb; b++) {
        snprintf(names[2 * b], 16, "a%d", b);
        snprintf(names[2 * b + 1], 16, "s%d", b);
        af_tensor_desc_t a = {.name = names[2 * b], .bytes = 1 << 20, .rank = -1};
        af_tensor_desc_t s = {.name = names[2 * b + 1], .bytes = 1024, .rank = -1};
        assert_int_equal(af_graph_add_tensor(g, &a, NULL, NULL), 0);
        assert_int_equal(af_graph_add_tensor(g, &s, NULL, NULL), 0);
        sum_in[b] = names[2 * b + 1];
    }
    /* framework order: all expansions first, then all reductions (the bad order) */
    for (int b = 0; b < nb; b++) {
        const char *i[1] = {"x"}, *o[1] = {names[2 * b]};
        af_node_desc_t d = {
            .op = "Expand", .inputs = i, .n_inputs = 1, .outputs = o, .n_outputs = 1, .cost = 10};
        assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
    }
    for (int b = 0; b < nb; b++) {
        const char *i[1] = {names[2 * b]}, *o[1] = {names[2 * b + 1]};
        af_node_desc_t d = {
            .op = "Reduce", .inputs = i, .n_inputs = 1, .outputs = o, .n_outputs = 1, .cost = 10};
        assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
    }
    af_tensor_desc_t y = {.name = "y", .bytes = 1024, .rank = -1, .kind = AF_TENSOR_OUTPUT};
    assert_int_equal(af_graph_add_tensor(g, &y, NULL, NULL), 0);
    const char *o[1] = {"y"};
    af_node_desc_t d = {
        .op = "Sum", .inputs = sum_in, .n_inputs = nb, .outputs = o, .n_outputs = 1, .cost = 10};
    assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

static void test_schedule_best_beats_bad_input_order(void **state)
{
    (void)state;
    af_graph_t *g = branches_graph(8, 1024);
    int32_t order[32];
    af__sched_result_t in, best;
    assert_int_equal(sched(g, "input", order, &in, 0, NULL), 0);
    assert_int_equal(sched(g, "best", order, &best, 0, NULL), 0);
    assert_true(is_topological(g, order));
    /* input order holds all 8 MiB tensors at once; a good order holds one */
    assert_true(in.peak >= 8u << 20);
    assert_true(best.peak < 2u << 20);
    af_graph_destroy(g);
}

static void test_schedule_budget_infeasible_names_step(void **state)
{
    (void)state;
    af_graph_t *g = branches_graph(4, 1024);
    int32_t order[32];
    af__sched_result_t res;
    af_error_t err;
    const char *const *names = af_schedule_names();
    for (int k = 0; names[k]; k++) {
        af_error_clear(&err);
        /* 512 KiB: below the single 1 MiB tensor, so no order can fit */
        assert_int_equal(sched(g, names[k], order, &res, 512 * 1024, &err), AF_EBUDGET);
        assert_int_equal(err.code, AF_EBUDGET);
        assert_non_null(strstr(err.msg, "step"));
        assert_non_null(strstr(err.msg, "1048576")); /* a live tensor's bytes */
        assert_non_null(strstr(err.msg, "a"));       /* names a tensor */
    }
    /* the same through af_plan_create */
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.budget = 512 * 1024;
    af_plan_t *p = NULL;
    af_error_clear(&err);
    assert_int_equal(af_plan_create(g, &o, &p, &err), AF_EBUDGET);
    assert_null(p);
    assert_non_null(strstr(err.msg, "budget"));
    af_graph_destroy(g);
}

static void test_schedule_budget_seed_executability(void **state)
{
    (void)state;
    /* A 16 MiB input makes 1 MiB of freed bytes a small score, so without a budget the seed's
     * greedy opens every branch (critical-path term first); with the executability check it
     * must keep one branch open at a time. */
    af_graph_t *g = branches_graph(6, 16 << 20);
    int32_t order[32];
    af__sched_result_t res, nob;
    af_error_t err;
    af_error_clear(&err);
    uint64_t budget = (17u << 20) + 16 * 1024;
    assert_int_equal(sched(g, "seed", order, &nob, 0, NULL), 0);
    assert_true(nob.peak > budget);
    assert_int_equal(sched(g, "seed", order, &res, budget, &err), 0);
    assert_true(is_topological(g, order));
    assert_true(res.peak <= budget);
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.budget = budget;
    af_plan_t *p = NULL;
    assert_int_equal(af_plan_create(g, &o, &p, &err), 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    uint64_t peak;
    assert_int_equal(af_order_peak(g, af_plan_order(p), 256, &peak, NULL, NULL), 0);
    assert_true(peak <= budget);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_schedule_budget_bad_values(void **state)
{
    (void)state;
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    af_error_t err;
    af_error_clear(&err);
    assert_int_equal(af_plan_opts_set(&o, "budget", "lots", &err), AF_EINVAL);
    assert_non_null(strstr(err.msg, "budget"));
    af_error_clear(&err);
    assert_int_equal(af_plan_opts_set(&o, "budget", "-5", &err), AF_EINVAL);
    assert_int_equal(af_plan_opts_set(&o, "budget", "64M", &err), 0);
    assert_int_equal(o.budget, 64u << 20);
}

/* Unread inputs, producer-less views, dynamic tensors and views that are outputs. */
static void test_schedule_edge_semantics_match_lifetimes(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t t[] = {
        {.name = "x", .bytes = 4096, .rank = -1, .kind = AF_TENSOR_INPUT},
        {.name = "unused", .bytes = 100000, .rank = -1, .kind = AF_TENSOR_INPUT},
        {.name = "a", .bytes = 8192, .rank = -1},
        {.name = "va", .bytes = 4096, .rank = -1, .alias_of = "a", .alias_offset = 4096},
        {.name = "d", .bytes = AF_BYTES_DYNAMIC, .rank = -1},
        {.name = "b", .bytes = 2048, .rank = -1},
        {.name = "y", .bytes = 512, .rank = -1, .kind = AF_TENSOR_OUTPUT},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        assert_int_equal(af_graph_add_tensor(g, &t[i], NULL, NULL), 0);
    const char *i0[] = {"x"}, *o0[] = {"a"}, *i1[] = {"x"}, *o1[] = {"d"}, *i2[] = {"d"},
               *o2[] = {"b"}, *i3[] = {"va", "b"}, *o3[] = {"y"};
    af_node_desc_t n[] = {
        {.op = "A", .inputs = i0, .n_inputs = 1, .outputs = o0, .n_outputs = 1},
        {.op = "D", .inputs = i1, .n_inputs = 1, .outputs = o1, .n_outputs = 1},
        {.op = "B", .inputs = i2, .n_inputs = 1, .outputs = o2, .n_outputs = 1},
        {.op = "Y", .inputs = i3, .n_inputs = 2, .outputs = o3, .n_outputs = 1},
    };
    for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
        assert_int_equal(af_graph_add_node(g, &n[i], NULL, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    const char *const *names = af_schedule_names();
    for (int k = 0; names[k]; k++) {
        int32_t order[8];
        af__sched_result_t res;
        assert_int_equal(sched(g, names[k], order, &res, 0, NULL), 0);
        uint64_t peak;
        assert_int_equal(af_order_peak(g, order, 256, &peak, NULL, NULL), 0);
        assert_int_equal(res.peak, peak);
        assert_true(peak >= 100096); /* the unread input is live during step 0 */
    }
    af_graph_destroy(g);
}

/* Empty and one-node graphs: every scheduler copes and reports the right peak. */
static void test_schedule_tiny_graphs(void **state)
{
    (void)state;
    const char *const *names = af_schedule_names();
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    int32_t order[2];
    af__sched_result_t res;
    for (int k = 0; names[k]; k++) {
        assert_int_equal(sched(g, names[k], order, &res, 0, NULL), 0);
        assert_int_equal(res.peak, 0);
    }
    af_graph_destroy(g);
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t x = {.name = "x", .bytes = 1000, .rank = -1, .kind = AF_TENSOR_INPUT};
    af_tensor_desc_t y = {.name = "y", .bytes = 3000, .rank = -1, .kind = AF_TENSOR_OUTPUT};
    assert_int_equal(af_graph_add_tensor(g, &x, NULL, NULL), 0);
    assert_int_equal(af_graph_add_tensor(g, &y, NULL, NULL), 0);
    const char *i[1] = {"x"}, *o[1] = {"y"};
    af_node_desc_t d = {.op = "Op", .inputs = i, .n_inputs = 1, .outputs = o, .n_outputs = 1};
    assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    for (int k = 0; names[k]; k++) {
        assert_int_equal(sched(g, names[k], order, &res, 0, NULL), 0);
        assert_int_equal(order[0], 0);
        assert_int_equal(res.peak, 1024 + 3072); /* both aligned to 256 */
    }
    af_graph_destroy(g);
}

/* ---- out of memory ------------------------------------------------------------------------ */

#include "tests/oom_countdown.h"

static void test_schedule_oom_every_allocation(void **state)
{
    (void)state;
    const char *const *names = af_schedule_names();
    af_graph_t *small = rd_graph(42, 12), *big = rd_graph(43, 90);
    assert_non_null(small);
    assert_non_null(big);
    for (int gi = 0; gi < 2; gi++) {
        af_graph_t *g = gi ? big : small;
        for (int k = 0; names[k]; k++) {
            int32_t order[128];
            int ok = 0;
            for (int fail_at = 0; fail_at < 2000 && !ok; fail_at++) {
                af__sched_result_t res;
                af_error_t err;
                af_error_clear(&err);
                af_replace_allocator(oom_malloc, oom_realloc, oom_calloc, free);
                oom_countdown = fail_at;
                int rc = sched(g, names[k], order, &res, 0, &err);
                oom_countdown = -1;
                af_reset_allocator();
                if (rc == 0) {
                    ok = 1;
                    assert_true(is_topological(g, order));
                } else {
                    assert_int_equal(rc, AF_ENOMEM);
                }
            }
            assert_true(ok);
        }
    }
    af_graph_destroy(small);
    af_graph_destroy(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_names_table),
        cmocka_unit_test(test_schedule_unknown_name_error),
        cmocka_unit_test(test_schedule_random_dags_valid_orders),
        cmocka_unit_test(test_schedule_dp_equals_brute_force),
        cmocka_unit_test(test_schedule_plans_verify),
        cmocka_unit_test(test_schedule_best_beats_bad_input_order),
        cmocka_unit_test(test_schedule_budget_infeasible_names_step),
        cmocka_unit_test(test_schedule_budget_seed_executability),
        cmocka_unit_test(test_schedule_budget_bad_values),
        cmocka_unit_test(test_schedule_edge_semantics_match_lifetimes),
        cmocka_unit_test(test_schedule_tiny_graphs),
        cmocka_unit_test(test_schedule_oom_every_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
