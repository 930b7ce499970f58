/*
 * Model-zoo tests: every model builds into a finalized, valid graph with the structure its
 * architecture has (parameter counts, node counts in a plausible range, dtypes, FLOP costs,
 * weights as constants), the node order is the insertion (framework) order, batch scales the
 * activations, the JSON writer round-trips it, every model plans and verifies with the default
 * scheduler, bad names/options give clear errors, and allocation failures are clean.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/plan.h"
#include "arenaflow/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t const_bytes(const af_graph_t *g)
{
    uint64_t b = 0;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++)
        if (af_graph_tensor(g, t)->kind == AF_TENSOR_CONSTANT)
            b += (uint64_t)af_graph_tensor(g, t)->bytes;
    return b;
}

static uint64_t activation_bytes(const af_graph_t *g)
{
    uint64_t b = 0;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->kind != AF_TENSOR_CONSTANT && ti->alias_of < 0 && ti->bytes > 0)
            b += (uint64_t)ti->bytes;
    }
    return b;
}

static af_graph_t *build(const char *name, int batch, int seq)
{
    af_zoo_opts_t o;
    af_zoo_opts_init(&o);
    o.batch = batch;
    o.seq = seq;
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    int rc = af_zoo_build(name, &o, &g, &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", name, err.msg);
    assert_int_equal(rc, 0);
    assert_non_null(g);
    return g;
}

static void test_zoo_every_model_is_valid(void **state)
{
    (void)state;
    size_t n;
    const af_zoo_entry_t *e = af_zoo_list(&n);
    assert_true(n >= 10);
    for (size_t i = 0; i < n; i++) {
        af_graph_t *g = build(e[i].name, 0, 0);
        assert_true(af_graph_is_finalized(g));
        assert_string_equal(af_graph_name(g), e[i].name);
        int32_t nn = af_graph_node_count(g);
        assert_true(nn >= 20); /* resmlp-/convnet-train are small on purpose (exact MILP) */
        /* framework order: the insertion order is already topological */
        const int32_t *io = af_graph_input_order(g);
        for (int32_t k = 0; k < nn; k++)
            assert_int_equal(io[k], k);
        int outputs = 0, inputs = 0;
        for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            assert_true(ti->bytes > 0);
            assert_int_not_equal(ti->dtype, AF_DTYPE_UNKNOWN);
            assert_true(ti->rank >= 1);
            outputs += ti->kind == AF_TENSOR_OUTPUT;
            inputs += ti->kind == AF_TENSOR_INPUT;
        }
        assert_true(outputs >= 1);
        assert_true(inputs >= 1);
        for (int32_t v = 0; v < nn; v++)
            assert_true(af_graph_node(g, v)->cost > 0);
        assert_true(const_bytes(g) > 0);
        assert_non_null(af_zoo_find(e[i].name));
        af_graph_destroy(g);
    }
}

/* Parameter counts of the published architectures (weights are f32 constants). */
static void test_zoo_parameter_counts(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double params_m, tol;
    } want[] = {
        {"resnet50", 25.6, 0.3},   /* 25.56M */
        {"mobilenetv2", 3.5, 0.2}, /* 3.50M */
        {"inception3", 23.8, 0.5}, /* 23.8M without the aux head */
        {"bert", 109.5, 1.0},      /* 109.5M */
        {"gpt2", 163.0, 1.5},      /* 124.4M + untied 38.6M LM head + mask */
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        af_graph_t *g = build(want[i].name, 0, 0);
        double params = (double)const_bytes(g) / 4 / 1e6;
        if (params < want[i].params_m - want[i].tol || params > want[i].params_m + want[i].tol)
            fprintf(stderr, "%s: %.2fM parameters\n", want[i].name, params);
        assert_true(params >= want[i].params_m - want[i].tol);
        assert_true(params <= want[i].params_m + want[i].tol);
        af_graph_destroy(g);
    }
}

static void test_zoo_batch_and_seq_scale(void **state)
{
    (void)state;
    af_graph_t *a = build("resnet50", 1, 0), *b = build("resnet50", 4, 0);
    assert_int_equal(af_graph_node_count(a), af_graph_node_count(b));
    assert_int_equal(activation_bytes(b), 4 * activation_bytes(a));
    assert_int_equal(const_bytes(a), const_bytes(b));
    af_graph_destroy(a);
    af_graph_destroy(b);
    a = build("bert", 1, 64);
    b = build("bert", 1, 128);
    int32_t ids = af_graph_find_tensor(b, "input_ids");
    assert_true(ids >= 0);
    assert_int_equal(af_graph_tensor(b, ids)->shape[1], 128);
    assert_true(activation_bytes(b) > 2 * activation_bytes(a)); /* attention is quadratic */
    af_graph_destroy(a);
    af_graph_destroy(b);
}

static void test_zoo_training_graphs_have_backward(void **state)
{
    (void)state;
    const char *names[] = {"resnet50-train", "bert-train"};
    const char *fwd[] = {"resnet50", "bert"};
    for (int i = 0; i < 2; i++) {
        af_graph_t *t = build(names[i], 0, 0), *f = build(fwd[i], 0, 0);
        assert_true(af_graph_node_count(t) > 2 * af_graph_node_count(f) - 20);
        int grads = 0, out_bytes_ok = 1;
        for (int32_t v = 0; v < af_graph_node_count(t); v++)
            grads += strstr(af_graph_node(t, v)->op, "Grad") != NULL;
        assert_true(grads > af_graph_node_count(f) / 3);
        /* every weight gradient is a graph output of the weight's size */
        uint64_t wout = 0;
        for (int32_t k = 0; k < af_graph_tensor_count(t); k++) {
            const af_tensor_info_t *ti = af_graph_tensor(t, k);
            if (ti->kind == AF_TENSOR_OUTPUT)
                wout += (uint64_t)ti->bytes;
        }
        out_bytes_ok = wout >= const_bytes(t) / 2;
        assert_true(out_bytes_ok);
        /* saved activations: the input order's peak is far above the forward graph's */
        int32_t *order = malloc((size_t)af_graph_node_count(t) * sizeof(int32_t));
        memcpy(order, af_graph_input_order(t), (size_t)af_graph_node_count(t) * sizeof(int32_t));
        uint64_t pt, pf;
        assert_int_equal(af_order_peak(t, order, 256, &pt, NULL, NULL), 0);
        free(order);
        assert_int_equal(af_order_peak(f, af_graph_input_order(f), 256, &pf, NULL, NULL), 0);
        assert_true(pt > 10 * pf);
        af_graph_destroy(t);
        af_graph_destroy(f);
    }
}

static void test_zoo_random_networks_depend_on_seed(void **state)
{
    (void)state;
    af_zoo_opts_t o;
    af_zoo_opts_init(&o);
    af_graph_t *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(af_zoo_build("randwire", &o, &a, NULL), 0);
    assert_int_equal(af_zoo_build("randwire", &o, &b, NULL), 0);
    o.seed = 12345;
    assert_int_equal(af_zoo_build("randwire", &o, &c, NULL), 0);
    char *ja = NULL, *jb = NULL, *jc = NULL;
    assert_int_equal(af_graph_to_json(a, &ja, NULL), 0);
    assert_int_equal(af_graph_to_json(b, &jb, NULL), 0);
    assert_int_equal(af_graph_to_json(c, &jc, NULL), 0);
    assert_string_equal(ja, jb); /* deterministic */
    assert_true(strcmp(ja, jc) != 0);
    af_free(ja);
    af_free(jb);
    af_free(jc);
    af_graph_destroy(a);
    af_graph_destroy(b);
    af_graph_destroy(c);
}

static void test_zoo_json_round_trip(void **state)
{
    (void)state;
    size_t n;
    const af_zoo_entry_t *e = af_zoo_list(&n);
    for (size_t i = 0; i < n; i++) {
        af_graph_t *g = build(e[i].name, 0, 0), *h = NULL;
        char *json = NULL;
        af_error_t err;
        af_error_clear(&err);
        assert_int_equal(af_graph_to_json(g, &json, &err), 0);
        if (af_graph_parse_json(json, strlen(json), &h, &err))
            fprintf(stderr, "%s: %s\n", e[i].name, err.msg);
        assert_non_null(h);
        assert_int_equal(af_graph_node_count(h), af_graph_node_count(g));
        assert_int_equal(af_graph_tensor_count(h), af_graph_tensor_count(g));
        assert_int_equal(activation_bytes(h), activation_bytes(g));
        af_free(json);
        af_graph_destroy(h);
        af_graph_destroy(g);
    }
}

static void test_zoo_every_model_plans_and_verifies(void **state)
{
    (void)state;
    size_t n;
    const af_zoo_entry_t *e = af_zoo_list(&n);
    for (size_t i = 0; i < n; i++) {
        af_graph_t *g = build(e[i].name, 0, 0);
        af_plan_t *p = NULL;
        af_error_t err;
        af_error_clear(&err);
        if (af_plan_create(g, NULL, &p, &err))
            fprintf(stderr, "%s: %s\n", e[i].name, err.msg);
        assert_non_null(p);
        assert_int_equal(af_plan_verify(p, &err), 0);
        const af_plan_report_t *r = af_plan_report(p);
        uint64_t in_peak;
        assert_int_equal(af_order_peak(g, af_graph_input_order(g), 256, &in_peak, NULL, NULL), 0);
        assert_true(r->lower_bound_bytes <= in_peak); /* default never worse than input */
        assert_true(r->arena_bytes < r->naive_bytes);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

/* The order matters on randomly wired networks: the default cuts RandWire's peak by >= 20%. */
static void test_zoo_randwire_default_beats_input_order(void **state)
{
    (void)state;
    af_graph_t *g = build("randwire", 0, 0);
    af_plan_t *p = NULL;
    af_error_t err;
    af_error_clear(&err);
    assert_int_equal(af_plan_create(g, NULL, &p, &err), 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    uint64_t in_peak, best_peak;
    assert_int_equal(af_order_peak(g, af_graph_input_order(g), 256, &in_peak, NULL, NULL), 0);
    assert_int_equal(af_order_peak(g, af_plan_order(p), 256, &best_peak, NULL, NULL), 0);
    printf("randwire: input-order peak %llu, default %llu (%.1f%% lower), arena %llu\n",
           (unsigned long long)in_peak, (unsigned long long)best_peak,
           100.0 * (1.0 - (double)best_peak / (double)in_peak),
           (unsigned long long)af_plan_arena_bytes(p));
    assert_true((double)best_peak <= 0.8 * (double)in_peak);
    assert_true(af_plan_arena_bytes(p) < af_plan_report(p)->input_order_bytes);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_zoo_bad_requests(void **state)
{
    (void)state;
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    assert_int_equal(af_zoo_build("resnet51", NULL, &g, &err), AF_ENOENT);
    assert_null(g);
    assert_non_null(strstr(err.msg, "resnet51"));
    assert_non_null(strstr(err.msg, "resnet50")); /* lists the known names */
    af_zoo_opts_t o;
    af_zoo_opts_init(&o);
    o.batch = -3;
    af_error_clear(&err);
    assert_int_equal(af_zoo_build("resnet50", &o, &g, &err), AF_EINVAL);
    assert_non_null(strstr(err.msg, "batch"));
    o.batch = 1;
    o.seq = 1 << 20;
    assert_int_equal(af_zoo_build("bert", &o, &g, &err), AF_EINVAL);
    assert_int_equal(af_zoo_build("bert", NULL, NULL, &err), AF_EINVAL);
    assert_null(af_zoo_find("nope"));
}

#include "tests/oom_countdown.h"

static void test_zoo_oom_is_clean(void **state)
{
    (void)state;
    /* the library's allocations fail one after the other (every one at first, then spaced
     * out); each model's build reports AF_ENOMEM and leaks nothing (ASan) until it succeeds */
    size_t n;
    const af_zoo_entry_t *e = af_zoo_list(&n);
    for (size_t i = 0; i < n; i++) {
        int ok = 0, steps = 0;
        for (int fail_at = 0; !ok && fail_at < 1000000; fail_at += 1 + fail_at / 4, steps++) {
            af_graph_t *g = NULL;
            af_error_t err;
            af_error_clear(&err);
            af_replace_allocator(oom_malloc, oom_realloc, oom_calloc, free);
            oom_countdown = fail_at;
            int rc = af_zoo_build(e[i].name, NULL, &g, &err);
            oom_countdown = -1;
            af_reset_allocator();
            if (rc == 0) {
                ok = 1;
                af_graph_destroy(g);
            } else {
                if (rc != AF_ENOMEM)
                    fprintf(stderr, "%s: fail_at %d: %s\n", e[i].name, fail_at, err.msg);
                assert_int_equal(rc, AF_ENOMEM);
                assert_null(g);
            }
        }
        assert_true(ok);
        assert_true(steps > 10);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_every_model_is_valid),
        cmocka_unit_test(test_zoo_parameter_counts),
        cmocka_unit_test(test_zoo_batch_and_seq_scale),
        cmocka_unit_test(test_zoo_training_graphs_have_backward),
        cmocka_unit_test(test_zoo_random_networks_depend_on_seed),
        cmocka_unit_test(test_zoo_json_round_trip),
        cmocka_unit_test(test_zoo_every_model_plans_and_verifies),
        cmocka_unit_test(test_zoo_randwire_default_beats_input_order),
        cmocka_unit_test(test_zoo_bad_requests),
        cmocka_unit_test(test_zoo_oom_is_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
