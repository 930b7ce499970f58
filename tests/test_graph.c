/*
 * Tests of the graph model, its validation and the JSON format (graph/graph.c, graph/validate.c,
 * graph/json.c, graph/json_write.c).
 *
 * - Every rejection the format promises has its own test: the error code AND that the message
 *   names the culprit (tensor, node or line/column).
 * - The bad graphs under tests/data/bad/ (also used by tests/cli_validate.sh) carry their
 *   expectation in a "comment": "EXPECT AF_CODE | culprit | ..." line, checked here too.
 * - Round trip: parse -> write -> parse gives the same graph, and writing it again gives the same
 *   bytes, for the examples and for random builder graphs (fixed seeds, printed on failure).
 * - Out-of-memory injection through af_replace_allocator: allocation n fails, for n = 0, 1, ...
 *   until the call succeeds; every failure must be AF_ENOMEM and leave no live allocation.
 *
 * AF_SOURCE_DIR (set by ctest) locates examples/ and tests/data/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/graph.h"
#include "arenaflow/plan.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ---------------------------------------------------------------------------- */

static const char *source_dir(void)
{
    const char *s = getenv("AF_SOURCE_DIR");
    return s && s[0] ? s : ".";
}

static void src_path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", source_dir(), rel);
}

/*
 * Test graphs are written with single quotes for readability; this turns them into JSON.
 * GRAPH(t, n) wraps tensor and node lists in the top-level object.
 */
#define GRAPH(tensors, nodes)                                                                      \
    "{'format': 'arenaflow-graph', 'version': 1, 'tensors': [" tensors "], 'nodes': [" nodes "]}"

static char *dq(const char *s)
{
    char *d = strdup(s);
    assert_non_null(d);
    for (char *p = d; *p; p++)
        if (*p == '\'')
            *p = '"';
    return d;
}

static int parse_q(const char *quoted, af_graph_t **g, af_error_t *err)
{
    char *text = dq(quoted);
    af_error_clear(err);
    int rc = af_graph_parse_json(text, strlen(text), g, err);
    free(text);
    return rc;
}

/* Parses `quoted`; asserts failure with `code` and a message containing each culprit. */
static void expect_reject_v(const char *quoted, int code, va_list ap)
{
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = parse_q(quoted, &g, &err);
    if (rc != code)
        print_error("expected %s, got %s: %s\n", af_err_name(code), af_err_name(rc), err.msg);
    assert_int_equal(rc, code);
    assert_null(g);
    assert_int_equal(err.code, code);
    const char *c;
    while ((c = va_arg(ap, const char *))) {
        if (!strstr(err.msg, c))
            print_error("message \"%s\" does not name '%s'\n", err.msg, c);
        assert_non_null(strstr(err.msg, c));
    }
}

static void expect_reject(const char *quoted, int code, ...)
{
    va_list ap;
    va_start(ap, code);
    expect_reject_v(quoted, code, ap);
    va_end(ap);
}

static af_graph_t *load_example(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/examples/%s", source_dir(), name);
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    int rc = af_graph_load_json(path, &g, &err);
    if (rc)
        print_error("%s: %s\n", path, err.msg);
    assert_int_equal(rc, 0);
    assert_non_null(g);
    assert_true(af_graph_is_finalized(g));
    return g;
}

static int32_t tensor_id(const af_graph_t *g, const char *name)
{
    int32_t id = af_graph_find_tensor(g, name);
    if (id < 0)
        print_error("no tensor '%s'\n", name);
    assert_true(id >= 0);
    return id;
}

static int32_t node_id(const af_graph_t *g, const char *name)
{
    int32_t id = af_graph_find_node(g, name);
    if (id < 0)
        print_error("no node '%s'\n", name);
    assert_true(id >= 0);
    return id;
}

/* ---- deep comparison -------------------------------------------------------------------- */

static int attr_equal(const af_attr_t *a, const af_attr_t *b)
{
    if (strcmp(a->name, b->name) || a->type != b->type)
        return 0;
    switch (a->type) {
    case AF_ATTR_INT:
        return a->i == b->i;
    case AF_ATTR_FLOAT:
        return memcmp(&a->f, &b->f, sizeof(double)) == 0;
    case AF_ATTR_STRING:
        return strcmp(a->s, b->s) == 0;
    case AF_ATTR_INTS:
        return a->n == b->n && (a->n == 0 || !memcmp(a->ints, b->ints, (size_t)a->n * 8));
    case AF_ATTR_FLOATS:
        return a->n == b->n && (a->n == 0 || !memcmp(a->floats, b->floats, (size_t)a->n * 8));
    }
    return 0;
}

#define DIFF(...)                                                                                  \
    do {                                                                                           \
        print_error(__VA_ARGS__);                                                                  \
        return 0;                                                                                  \
    } while (0)

/* 1 when a and b describe the same graph (names, sizes, kinds, edges, attrs...); else prints. */
static int graph_equal(const af_graph_t *a, const af_graph_t *b)
{
    if (strcmp(af_graph_name(a), af_graph_name(b)))
        DIFF("graph name '%s' vs '%s'\n", af_graph_name(a), af_graph_name(b));
    if (af_graph_tensor_count(a) != af_graph_tensor_count(b) ||
        af_graph_node_count(a) != af_graph_node_count(b))
        DIFF("counts differ\n");
    for (int32_t i = 0; i < af_graph_tensor_count(a); i++) {
        const af_tensor_info_t *x = af_graph_tensor(a, i), *y = af_graph_tensor(b, i);
        if (strcmp(x->name, y->name) || x->bytes != y->bytes || x->dtype != y->dtype ||
            x->rank != y->rank || x->kind != y->kind || x->alias_of != y->alias_of ||
            x->alias_offset != y->alias_offset || x->producer != y->producer ||
            x->n_consumers != y->n_consumers)
            DIFF("tensor %d ('%s' vs '%s') differs\n", i, x->name, y->name);
        for (int32_t k = 0; k < x->rank; k++)
            if (x->shape[k] != y->shape[k])
                DIFF("tensor '%s' shape[%d] differs\n", x->name, k);
        for (int32_t k = 0; k < x->n_consumers; k++)
            if (x->consumers[k] != y->consumers[k])
                DIFF("tensor '%s' consumers differ\n", x->name);
    }
    for (int32_t i = 0; i < af_graph_node_count(a); i++) {
        const af_node_info_t *x = af_graph_node(a, i), *y = af_graph_node(b, i);
        if (strcmp(x->name, y->name) || strcmp(x->op, y->op) || x->n_inputs != y->n_inputs ||
            x->n_outputs != y->n_outputs || memcmp(&x->cost, &y->cost, sizeof(double)) ||
            x->n_inplace != y->n_inplace || x->n_attrs != y->n_attrs)
            DIFF("node %d ('%s' vs '%s') differs\n", i, x->name, y->name);
        for (int32_t k = 0; k < x->n_inputs; k++)
            if (x->inputs[k] != y->inputs[k])
                DIFF("node '%s' input %d differs\n", x->name, k);
        for (int32_t k = 0; k < x->n_outputs; k++)
            if (x->outputs[k] != y->outputs[k])
                DIFF("node '%s' output %d differs\n", x->name, k);
        for (int32_t k = 0; k < x->n_inplace; k++)
            if (x->inplace[k].input != y->inplace[k].input ||
                x->inplace[k].output != y->inplace[k].output)
                DIFF("node '%s' in-place hint %d differs\n", x->name, k);
        for (int32_t k = 0; k < x->n_attrs; k++)
            if (!attr_equal(&x->attrs[k], &y->attrs[k]))
                DIFF("node '%s' attribute '%s' differs\n", x->name, x->attrs[k].name);
    }
    return 1;
}

/* Writes g, parses the text back, compares, writes again and compares the two texts. */
static void check_roundtrip(const af_graph_t *g, const char *label)
{
    af_error_t err;
    af_error_clear(&err);
    char *t1 = NULL, *t2 = NULL;
    int rc = af_graph_to_json(g, &t1, &err);
    if (rc)
        print_error("%s: write: %s\n", label, err.msg);
    assert_int_equal(rc, 0);
    af_graph_t *g2 = NULL;
    rc = af_graph_parse_json(t1, strlen(t1), &g2, &err);
    if (rc)
        print_error("%s: re-read: %s\n%s\n", label, err.msg, t1);
    assert_int_equal(rc, 0);
    int same = graph_equal(g, g2);
    if (!same)
        print_error("%s: graph changed in the round trip\n", label);
    assert_true(same);
    assert_int_equal(af_graph_to_json(g2, &t2, &err), 0);
    if (strcmp(t1, t2))
        print_error("%s: second write differs\n", label);
    assert_string_equal(t1, t2);
    af_free(t1);
    af_free(t2);
    af_graph_destroy(g2);
}

/* ---- examples --------------------------------------------------------------------------- */

static const char *const examples[] = {"diamond.json", "seed2_hotel.json", "mlp.json",
                                       "default.json"};

static void test_graph_loads_examples(void **state)
{
    (void)state;
    af_graph_t *g = load_example("diamond.json");
    const af_tensor_info_t *A = af_graph_tensor(g, tensor_id(g, "A"));
    assert_int_equal(A->n_consumers, 2);
    assert_int_equal(A->consumers[0], node_id(g, "B"));
    assert_int_equal(A->consumers[1], node_id(g, "C"));
    const af_tensor_info_t *D = af_graph_tensor(g, tensor_id(g, "D"));
    assert_int_equal(D->consumers[0], node_id(g, "E"));
    assert_int_equal(D->consumers[1], node_id(g, "F"));
    assert_int_equal(af_graph_node(g, node_id(g, "join"))->n_preds, 4);
    af_graph_destroy(g);

    g = load_example("mlp.json");
    const af_tensor_info_t *x = af_graph_tensor(g, tensor_id(g, "x"));
    assert_int_equal(x->alias_of, tensor_id(g, "image"));
    assert_int_equal(x->bytes, 32 * 784 * 4);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "w1"))->kind, AF_TENSOR_CONSTANT);
    const af_node_info_t *relu = af_graph_node(g, node_id(g, "relu1"));
    assert_int_equal(relu->n_inplace, 1);
    assert_int_equal(relu->inplace[0].output, 0);
    assert_int_equal(relu->inplace[0].input, 0);
    af_graph_destroy(g);

    g = load_example("default.json");
    assert_in_range(af_graph_node_count(g), 40, 80);
    for (int32_t i = 0; i < af_graph_tensor_count(g); i++)
        assert_true(af_graph_tensor(g, i)->bytes > 0); /* real shapes: every size known */
    af_graph_destroy(g);
}

/* Brute-force lifetimes in input order: [producer step, last consumer step]; the rules of
 * DESIGN.md (inputs from 0, outputs to the end). */
static void lifetime(const af_graph_t *g, int32_t t, int *first, int *last)
{
    int32_t nn = af_graph_node_count(g);
    const int32_t *order = af_graph_input_order(g);
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    *first = ti->kind == AF_TENSOR_INPUT ? 0 : -1;
    *last = ti->kind == AF_TENSOR_OUTPUT ? nn - 1 : -1;
    for (int step = 0; step < nn; step++) {
        const af_node_info_t *n = af_graph_node(g, order[step]);
        for (int32_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] == t && *first < 0)
                *first = step;
        for (int32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t && step > *last)
                *last = step;
    }
}

static void test_graph_seed2_example_has_the_seed_lifetimes(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int64_t bytes;
        int first, last;
    } want[] = {{"w1", 512, 0, 3},
                {"a1", 128, 0, 1},
                {"w2", 256, 1, 4},
                {"a2", 128, 2, 3},
                {"out", 64, 3, 4}};
    af_graph_t *g = load_example("seed2_hotel.json");
    assert_int_equal(af_graph_tensor_count(g), 5);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int32_t t = tensor_id(g, want[i].name);
        int first, last;
        lifetime(g, t, &first, &last);
        if (first != want[i].first || last != want[i].last)
            print_error("%s: [%d,%d], seed says [%d,%d]\n", want[i].name, first, last,
                        want[i].first, want[i].last);
        assert_int_equal(af_graph_tensor(g, t)->bytes, want[i].bytes);
        assert_int_equal(first, want[i].first);
        assert_int_equal(last, want[i].last);
    }
    af_graph_destroy(g);
}

/* Peak of live bytes (inputs/outputs included) when nodes run in `order`. */
static int64_t peak_for_order(const af_graph_t *g, const int32_t *order)
{
    int32_t nn = af_graph_node_count(g), nt = af_graph_tensor_count(g);
    int64_t peak = 0;
    for (int step = 0; step < nn; step++) {
        int64_t live = 0;
        for (int32_t t = 0; t < nt; t++) {
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            int first = ti->kind == AF_TENSOR_INPUT ? 0 : nn, last = -1;
            for (int s = 0; s < nn; s++) {
                const af_node_info_t *n = af_graph_node(g, order[s]);
                for (int32_t k = 0; k < n->n_outputs; k++)
                    if (n->outputs[k] == t && s < first)
                        first = s;
                for (int32_t k = 0; k < n->n_inputs; k++)
                    if (n->inputs[k] == t && s > last)
                        last = s;
            }
            if (ti->kind == AF_TENSOR_OUTPUT)
                last = nn - 1;
            if (first <= step && step <= last)
                live += ti->bytes;
        }
        if (live > peak)
            peak = live;
    }
    return peak;
}

static void test_graph_diamond_example_order_matters(void **state)
{
    (void)state;
    af_graph_t *g = load_example("diamond.json");
    const char *better_names[] = {"make_A", "B", "C", "make_D", "E", "F", "join"};
    int32_t better[7];
    assert_int_equal(af_graph_node_count(g), 7);
    for (int i = 0; i < 7; i++)
        better[i] = node_id(g, better_names[i]);
    int64_t in_order = peak_for_order(g, af_graph_input_order(g));
    int64_t branch_first = peak_for_order(g, better);
    print_message("diamond: peak %lld in input order, %lld running A's branch first\n",
                  (long long)in_order, (long long)branch_first);
    assert_true(branch_first * 3 < in_order * 2); /* the seed's point: order changes the peak */
    af_graph_destroy(g);
}

/* The examples promise things the planner must see too: seed 2's lifetimes, the diamond's
 * order-dependent peak, and every example plans and verifies. */
static void test_graph_examples_agree_with_planner(void **state)
{
    (void)state;
    af_error_t err;
    af_graph_t *g = load_example("seed2_hotel.json");
    af_lifetime_t lt[5];
    assert_int_equal(af_lifetimes_compute(g, af_graph_input_order(g), lt, &err), 0);
    for (int32_t t = 0; t < 5; t++) {
        int first, last;
        lifetime(g, t, &first, &last);
        if (lt[t].first != first || lt[t].last != last)
            print_error("%s: planner [%d,%d], brute force [%d,%d]\n", af_graph_tensor(g, t)->name,
                        lt[t].first, lt[t].last, first, last);
        assert_int_equal(lt[t].first, first);
        assert_int_equal(lt[t].last, last);
    }
    af_graph_destroy(g);

    g = load_example("diamond.json");
    const char *better_names[] = {"make_A", "B", "C", "make_D", "E", "F", "join"};
    int32_t better[7];
    for (int i = 0; i < 7; i++)
        better[i] = node_id(g, better_names[i]);
    uint64_t p_in = 0, p_better = 0;
    assert_int_equal(af_order_peak(g, af_graph_input_order(g), 256, &p_in, NULL, &err), 0);
    assert_int_equal(af_order_peak(g, better, 256, &p_better, NULL, &err), 0);
    assert_true(p_better * 3 < p_in * 2);
    af_graph_destroy(g);

    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        g = load_example(examples[i]);
        af_plan_opts_t opts;
        af_plan_opts_init(&opts);
        af_plan_t *p = NULL;
        int rc = af_plan_create(g, &opts, &p, &err);
        if (rc)
            print_error("%s: plan: %s\n", examples[i], err.msg);
        assert_int_equal(rc, 0);
        rc = af_plan_verify(p, &err);
        if (rc)
            print_error("%s: verify: %s\n", examples[i], err.msg);
        assert_int_equal(rc, 0);
        const af_plan_report_t *r = af_plan_report(p);
        print_message("%s: arena %llu bytes, naive %llu, lower bound %llu\n", examples[i],
                      (unsigned long long)r->arena_bytes, (unsigned long long)r->naive_bytes,
                      (unsigned long long)r->lower_bound_bytes);
        assert_true(r->arena_bytes <= r->naive_bytes);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

/* ---- the format, field by field -------------------------------------------------------- */

static const char *all_fields =
    "{'format': 'arenaflow-graph', 'version': 1, 'name': 'every field', 'comment': 'c',"
    " 'tensors': ["
    "  {'name': 'in', 'kind': 'input', 'dtype': 'float32', 'shape': [2, 3, 4], 'comment': 'c'},"
    "  {'name': 'w', 'kind': 'constant', 'bytes': 100},"
    "  {'name': 'sym', 'dtype': 'f16', 'shape': ['batch', 8]},"
    "  {'name': 'dyn', 'dynamic': true},"
    "  {'name': 'pad', 'dtype': 'i8', 'shape': [10], 'bytes': 64},"
    "  {'name': 'view', 'alias_of': 'in', 'offset': 32, 'dtype': 'f32', 'shape': [4]},"
    "  {'name': 'scalar', 'dtype': 'f64', 'shape': []},"
    "  {'name': 'out', 'kind': 'output', 'bytes': 96}"
    " ],"
    " 'nodes': ["
    "  {'name': 'a', 'op': 'Conv', 'inputs': ['in', 'w'], 'outputs': ['sym', 'dyn'],"
    "   'cost': 1.5, 'comment': 'c',"
    "   'attrs': {'i': -7, 'f': 0.25, 's': 'same', 'is': [1, 2, 3], 'fs': [1, 2.5], 'b': true}},"
    "  {'op': 'Relu', 'inputs': ['sym'], 'outputs': ['pad'], 'inplace': [{'output': 0, 'input': "
    "0}]},"
    "  {'name': 'c', 'op': 'Add', 'inputs': ['pad', 'view', 'dyn'], 'outputs': ['scalar', 'out'],"
    "   'cost': 12}"
    " ]}";

static void test_graph_json_reads_every_field(void **state)
{
    (void)state;
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = parse_q(all_fields, &g, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(af_graph_name(g), "every field");
    const af_tensor_info_t *t = af_graph_tensor(g, tensor_id(g, "in"));
    assert_int_equal(t->kind, AF_TENSOR_INPUT);
    assert_int_equal(t->dtype, AF_DTYPE_F32);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->shape[2], 4);
    assert_int_equal(t->bytes, 2 * 3 * 4 * 4);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "w"))->kind, AF_TENSOR_CONSTANT);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "w"))->bytes, 100);
    t = af_graph_tensor(g, tensor_id(g, "sym"));
    assert_int_equal(t->bytes, AF_BYTES_DYNAMIC); /* symbolic dim: unknown until run time */
    assert_int_equal(t->shape[0], -1);
    assert_int_equal(t->shape[1], 8);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "dyn"))->bytes, AF_BYTES_DYNAMIC);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "pad"))->bytes, 64); /* bytes wins */
    t = af_graph_tensor(g, tensor_id(g, "view"));
    assert_int_equal(t->alias_of, tensor_id(g, "in"));
    assert_int_equal(t->alias_offset, 32);
    assert_int_equal(t->bytes, 16);
    t = af_graph_tensor(g, tensor_id(g, "scalar"));
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->bytes, 8);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "out"))->kind, AF_TENSOR_OUTPUT);

    int32_t a = node_id(g, "a");
    const af_node_info_t *n = af_graph_node(g, a);
    assert_string_equal(n->op, "Conv");
    assert_true(n->cost == 1.5);
    assert_int_equal(n->n_attrs, 6);
    assert_int_equal(af_graph_node_attr(g, a, "i")->type, AF_ATTR_INT);
    assert_int_equal(af_graph_node_attr(g, a, "i")->i, -7);
    assert_true(af_graph_node_attr(g, a, "f")->f == 0.25);
    assert_string_equal(af_graph_node_attr(g, a, "s")->s, "same");
    const af_attr_t *is = af_graph_node_attr(g, a, "is");
    assert_int_equal(is->type, AF_ATTR_INTS);
    assert_int_equal(is->n, 3);
    assert_int_equal(is->ints[2], 3);
    const af_attr_t *fs = af_graph_node_attr(g, a, "fs");
    assert_int_equal(fs->type, AF_ATTR_FLOATS); /* one real makes the whole list floats */
    assert_true(fs->floats[0] == 1.0 && fs->floats[1] == 2.5);
    assert_int_equal(af_graph_node_attr(g, a, "b")->i, 1);
    n = af_graph_node(g, node_id(g, "node1")); /* unnamed node gets node<index> */
    assert_string_equal(n->op, "Relu");
    assert_int_equal(n->n_inplace, 1);
    assert_true(af_graph_node(g, node_id(g, "c"))->cost == 12.0);
    /* The view reads 'in' (an input): no extra edge; 'c' depends on 'a' and node1. */
    assert_int_equal(af_graph_node(g, node_id(g, "c"))->n_preds, 2);
    check_roundtrip(g, "every field");
    af_graph_destroy(g);
}

static void test_graph_json_roundtrip_examples(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        af_graph_t *g = load_example(examples[i]);
        check_roundtrip(g, examples[i]);
        af_graph_destroy(g);
    }
}

/* ---- random graphs through the builder -------------------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t rnd_below(int64_t n)
{
    return (int64_t)(rnd() % (uint64_t)n);
}

static double rnd_double(void)
{
    /* A finite double with a random mantissa and a wide exponent range. */
    double m = (double)(rnd() >> 11) / 9007199254740992.0;
    return ldexp(rnd() & 1 ? -m : m, (int)rnd_below(200) - 100);
}

static void rnd_name(char *buf, size_t n, const char *prefix, int i)
{
    static const char *const odd[] = {"", " spaced", "\\\"q\"", "\xc3\xa9t\xc3\xa9", "/x:0"};
    snprintf(buf, n, "%s%d%s", prefix, i, rnd_below(4) == 0 ? odd[rnd_below(5)] : "");
}

static void add_random_tensor(af_graph_t *g, const char *name, af_tensor_kind_t kind,
                              const char *alias_of, int64_t base_bytes)
{
    af_tensor_desc_t d = {0};
    int64_t shape[4];
    d.name = name;
    d.kind = kind;
    d.rank = -1;
    d.shape = shape;
    int style = (int)rnd_below(4);
    if (style == 0) {
        d.bytes = rnd_below(1 << 20);
    } else if (style == 1 && !alias_of) {
        d.bytes = AF_BYTES_DYNAMIC;
        d.rank = (int)rnd_below(3);
        for (int i = 0; i < d.rank; i++)
            shape[i] = rnd_below(3) ? rnd_below(9) : -1;
    } else {
        d.dtype = (af_dtype_t)(1 + rnd_below(AF_DTYPE_COUNT_ - 1));
        d.rank = (int)rnd_below(5);
        for (int i = 0; i < d.rank; i++)
            shape[i] = 1 + rnd_below(6);
        d.bytes = rnd_below(3) ? AF_BYTES_FROM_SHAPE : 100000 + rnd_below(1000); /* padded */
    }
    if (alias_of) { /* a view: fixed size inside the base */
        d.dtype = AF_DTYPE_UNKNOWN;
        d.rank = -1;
        d.bytes = rnd_below(base_bytes + 1);
        d.alias_of = alias_of;
        d.alias_offset = rnd_below(base_bytes - d.bytes + 1);
    }
    af_error_t err;
    int rc = af_graph_add_tensor(g, &d, NULL, &err);
    if (rc)
        print_error("add_tensor %s: %s\n", name, err.msg);
    assert_int_equal(rc, 0);
}

static void add_random_attrs(af_graph_t *g, int32_t node)
{
    int na = (int)rnd_below(4);
    for (int k = 0; k < na; k++) {
        char name[16];
        int64_t ints[4];
        double floats[4];
        snprintf(name, sizeof(name), "a%d", k);
        af_attr_t a = {0};
        a.name = name;
        a.type = (af_attr_type_t)rnd_below(5);
        a.i = (int64_t)rnd();
        a.f = rnd_double();
        a.s = rnd_below(2) ? "tab\there \"quoted\" \\ \xe2\x9c\x93" : "";
        a.n = 1 + (int32_t)rnd_below(4); /* an empty list reads back as ints (documented) */
        for (int i = 0; i < 4; i++) {
            ints[i] = (int64_t)rnd();
            floats[i] = rnd_below(2) ? rnd_double() : (double)rnd_below(5);
        }
        a.ints = ints;
        a.floats = floats;
        assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
    }
}

/* A random valid DAG using every feature the format has. */
static af_graph_t *random_graph(void)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    assert_int_equal(af_graph_set_name(g, rnd_below(2) ? "random \"graph\"" : ""), 0);
    char names[64][48];
    int64_t sizes[64];
    int nt = 0;
    int ninputs = 1 + (int)rnd_below(3);
    for (int i = 0; i < ninputs; i++, nt++) {
        rnd_name(names[nt], sizeof(names[nt]), rnd_below(3) ? "in" : "w", nt);
        add_random_tensor(g, names[nt], rnd_below(3) ? AF_TENSOR_INPUT : AF_TENSOR_CONSTANT, NULL,
                          0);
        sizes[nt] = af_graph_tensor(g, nt)->bytes;
    }
    int nn = 1 + (int)rnd_below(20);
    for (int v = 0; v < nn && nt < 60; v++) {
        const char *ins[3], *outs[2];
        int ni = 1 + (int)rnd_below(3), no = 1 + (int)rnd_below(2);
        for (int k = 0; k < ni; k++)
            ins[k] = names[rnd_below(nt)];
        for (int k = 0; k < no; k++, nt++) {
            rnd_name(names[nt], sizeof(names[nt]), "t", nt);
            int32_t base = af_graph_find_tensor(g, ins[0]);
            int alias = rnd_below(5) == 0 && sizes[base] >= 0;
            add_random_tensor(g, names[nt], v == nn - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE,
                              alias ? ins[0] : NULL, alias ? sizes[base] : 0);
            sizes[nt] = af_graph_tensor(g, nt)->bytes;
            outs[k] = names[nt];
        }
        af_inplace_t ip[2] = {{0, (int32_t)rnd_below(ni)}, {(int32_t)rnd_below(no), 0}};
        char nname[48];
        rnd_name(nname, sizeof(nname), "n", v);
        af_node_desc_t d = {nname,
                            rnd_below(2) ? "Conv" : "Op \"x\"",
                            ins,
                            ni,
                            outs,
                            no,
                            0,
                            ip,
                            (int32_t)rnd_below(3)};
        int c = (int)rnd_below(3);
        d.cost = c == 0 ? 0 : c == 1 ? (double)rnd_below(1000000) : fabs(rnd_double());
        int32_t id;
        af_error_t err;
        int rc = af_graph_add_node(g, &d, &id, &err);
        if (rc)
            print_error("add_node: %s\n", err.msg);
        assert_int_equal(rc, 0);
        add_random_attrs(g, id);
    }
    af_error_t err;
    int rc = af_graph_finalize(g, &err);
    if (rc)
        print_error("finalize: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return g;
}

static void test_graph_json_roundtrip_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        rng = seed * 0x9e3779b97f4a7c15ull;
        char label[64];
        snprintf(label, sizeof(label), "random graph, seed %llu", (unsigned long long)seed);
        af_graph_t *g = random_graph();
        check_roundtrip(g, label); /* prints the label (the seed) on failure */
        af_graph_destroy(g);
    }
}

/* ---- save / load files ----------------------------------------------------------------- */

static void test_graph_save_json_is_atomic_and_reloads(void **state)
{
    (void)state;
    char dir[] = "/tmp/af_test_graph_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/g.json", dir);
    af_error_t err;
    af_graph_t *g = load_example("mlp.json"), *h = load_example("diamond.json");
    assert_int_equal(af_graph_save_json(h, path, &err), 0);
    assert_int_equal(af_graph_save_json(g, path, &err), 0); /* replaces the old file */
    af_graph_t *back = NULL;
    assert_int_equal(af_graph_load_json(path, &back, &err), 0);
    assert_true(graph_equal(g, back));
    /* Nothing but the target is left in the directory (the temp file was renamed). */
    DIR *d = opendir(dir);
    assert_non_null(d);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            entries++;
    closedir(d);
    assert_int_equal(entries, 1);
    /* Unwritable target: AF_EIO naming the path, the old file untouched. */
    char bad[300];
    snprintf(bad, sizeof(bad), "%s/no/such/dir/g.json", dir);
    assert_int_equal(af_graph_save_json(g, bad, &err), AF_EIO);
    assert_non_null(strstr(err.msg, "no/such/dir"));
    /* Missing file on load: AF_EIO naming it. */
    af_graph_t *none = NULL;
    assert_int_equal(af_graph_load_json(bad, &none, &err), AF_EIO);
    assert_null(none);
    assert_non_null(strstr(err.msg, "no/such/dir"));
    unlink(path);
    rmdir(dir);
    af_graph_destroy(back);
    af_graph_destroy(g);
    af_graph_destroy(h);
}

/* ---- rejections: one test per case ----------------------------------------------------- */

static void test_graph_rejects_cycle(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 't1', 'bytes': 4},"
                        "{'name': 't2', 'bytes': 4}, {'name': 't3', 'bytes': 4}",
                        "{'name': 'loop_a', 'op': 'Add', 'inputs': ['x', 't3'], 'outputs': "
                        "['t1']},"
                        "{'name': 'loop_b', 'op': 'Relu', 'inputs': ['t1'], 'outputs': ['t2']},"
                        "{'name': 'loop_c', 'op': 'Relu', 'inputs': ['t2'], 'outputs': ['t3']}"),
                  AF_ECYCLE, "'loop_a'", "'loop_b'", "'loop_c'", NULL);
}

static void test_graph_rejects_cycle_behind_acyclic_prefix(void **state)
{
    (void)state;
    /* A long chain feeds a 2-cycle: the message must name the cycle, not the chain. */
    char tensors[8192] = "{'name': 'x', 'kind': 'input', 'bytes': 4}", nodes[8192] = "";
    size_t tl = strlen(tensors), nl = 0;
    for (int i = 0; i < 30; i++) {
        char prev[16];
        snprintf(prev, sizeof(prev), i ? "c%d" : "x", i - 1);
        tl += (size_t)snprintf(tensors + tl, sizeof(tensors) - tl, ", {'name': 'c%d', 'bytes': 4}",
                               i);
        nl += (size_t)snprintf(nodes + nl, sizeof(nodes) - nl,
                               "%s{'name': 'chain%d', 'op': 'Relu', 'inputs': ['%s'], 'outputs': "
                               "['c%d']}",
                               i ? ", " : "", i, prev, i);
    }
    snprintf(tensors + tl, sizeof(tensors) - tl,
             ", {'name': 'p', 'bytes': 4}, {'name': 'q', 'bytes': 4}");
    snprintf(nodes + nl, sizeof(nodes) - nl,
             ", {'name': 'ping', 'op': 'Add', 'inputs': ['c29', 'q'], 'outputs': ['p']},"
             " {'name': 'pong', 'op': 'Relu', 'inputs': ['p'], 'outputs': ['q']}");
    char doc[20000];
    snprintf(doc, sizeof(doc), GRAPH("%s", "%s"), tensors, nodes);
    expect_reject(doc, AF_ECYCLE, "'ping'", "'pong'", NULL);
    af_graph_t *g = NULL;
    af_error_t err;
    parse_q(doc, &g, &err);
    assert_null(strstr(err.msg, "chain")); /* only the nodes on the cycle are named */
}

static void test_graph_rejects_long_cycle(void **state)
{
    (void)state;
    /* 40 nodes with long names on one cycle: the message is shortened, never overflows, and
     * still names nodes of the cycle. */
    enum { N = 40 };
    static char tensors[N * 160], nodes[N * 400], doc[N * 600];
    size_t tl = 0, nl = 0;
    for (int i = 0; i < N; i++) {
        tl += (size_t)snprintf(tensors + tl, sizeof(tensors) - tl,
                               "%s{'name': 'edge_%d', 'bytes': 4}", i ? ", " : "", i);
        nl += (size_t)snprintf(nodes + nl, sizeof(nodes) - nl,
                               "%s{'name': 'a_rather_long_node_name_on_the_ring_number_%d', 'op': "
                               "'Relu', 'inputs': ['edge_%d'], 'outputs': ['edge_%d']}",
                               i ? ", " : "", i, (i + N - 1) % N, i);
    }
    snprintf(doc, sizeof(doc), GRAPH("%s", "%s"), tensors, nodes);
    expect_reject(doc, AF_ECYCLE, "a_rather_long_node_name_on_the_ring_number_", NULL);
}

static void test_graph_rejects_self_loop(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'm', 'bytes': 4}",
                        "{'name': 'narcissus', 'op': 'Add', 'inputs': ['x', 'm'], 'outputs': "
                        "['m']}"),
                  AF_ECYCLE, "narcissus", NULL);
}

static void test_graph_rejects_tensor_produced_twice(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'dup_t', 'bytes': 4}",
                        "{'name': 'p1', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['dup_t']},"
                        "{'name': 'p2', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['dup_t']}"),
                  AF_EPRODUCED, "'dup_t'", "'p1'", "'p2'", NULL);
}

static void test_graph_rejects_produced_input(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'feed', 'kind': 'input', 'bytes': 4}",
                        "{'name': 'writer', 'op': 'Fill', 'outputs': ['feed']}"),
                  AF_EPRODUCED, "'feed'", "'writer'", NULL);
}

static void test_graph_rejects_tensor_never_produced(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'orphan', 'bytes': "
                        "4}, {'name': 'y', 'kind': 'output', 'bytes': 4}",
                        "{'name': 'reader', 'op': 'Add', 'inputs': ['x', 'orphan'], 'outputs': "
                        "['y']}"),
                  AF_ENOPRODUCER, "'orphan'", "'reader'", NULL);
}

static void test_graph_rejects_view_of_never_produced_base(void **state)
{
    (void)state;
    /* Reading a view reads its base's bytes: nobody writes them here. */
    expect_reject(GRAPH("{'name': 'base', 'bytes': 16}, {'name': 'view', 'bytes': 8, 'alias_of': "
                        "'base', 'offset': 8}, {'name': 'y', 'kind': 'output', 'bytes': 8}",
                        "{'name': 'peek', 'op': 'Copy', 'inputs': ['view'], 'outputs': ['y']}"),
                  AF_ENOPRODUCER, "'view'", "'base'", "'peek'", NULL);
}

static void test_graph_rejects_output_never_produced(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'lost', 'kind': "
                        "'output', 'bytes': 4}",
                        ""),
                  AF_ENOPRODUCER, "'lost'", NULL);
}

static void test_graph_rejects_unknown_tensor_name(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'y', 'bytes': 4}",
                        "{'name': 'haunted', 'op': 'Add', 'inputs': ['x', 'ghost'], 'outputs': "
                        "['y']}"),
                  AF_ENOENT, "'ghost'", "'haunted'", NULL);
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}",
                        "{'name': 'n', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['phantom']}"),
                  AF_ENOENT, "'phantom'", NULL);
}

static void test_graph_rejects_unknown_alias_base(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'view', 'bytes': 4, 'alias_of': 'nowhere'}", ""), AF_ENOENT,
                  "'nowhere'", "'view'", NULL);
}

static void test_graph_rejects_alias_cycle(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'v1', 'bytes': 4, 'alias_of': 'v2'},"
                        "{'name': 'v2', 'bytes': 4, 'alias_of': 'v1'}",
                        ""),
                  AF_ECYCLE, "'v1'", NULL);
}

static void test_graph_rejects_duplicate_tensor_name(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'twin', 'kind': 'input', 'bytes': 4}, {'name': 'twin', 'bytes': "
                        "8}",
                        ""),
                  AF_EDUP, "'twin'", NULL);
}

static void test_graph_rejects_duplicate_node_name(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'a', 'bytes': 4},"
                        "{'name': 'b', 'bytes': 4}",
                        "{'name': 'same_node', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['a']},"
                        "{'name': 'same_node', 'op': 'Relu', 'inputs': ['a'], 'outputs': ['b']}"),
                  AF_EDUP, "'same_node'", NULL);
}

static void test_graph_rejects_negative_size(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'neg', 'kind': 'input', 'bytes': -8}", ""), AF_ESIZE, "'neg'",
                  "-8", NULL);
    expect_reject(
        GRAPH("{'name': 'negdim', 'dtype': 'f32', 'shape': [4, -3], 'kind': 'input'}", ""),
        AF_ESIZE, "'negdim'", NULL);
    expect_reject(GRAPH("{'name': 'b', 'kind': 'input', 'bytes': 8},"
                        "{'name': 'negoff', 'bytes': 4, 'alias_of': 'b', 'offset': -1}",
                        ""),
                  AF_ESIZE, "'negoff'", NULL);
}

static void test_graph_rejects_non_integer_size(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'frac', 'kind': 'input', 'bytes': 10.5}", ""), AF_ESIZE, "'frac'",
                  NULL);
    expect_reject(GRAPH("{'name': 'text', 'kind': 'input', 'bytes': '10'}", ""), AF_ESIZE, "'text'",
                  NULL);
    expect_reject(GRAPH("{'name': 'halfdim', 'kind': 'input', 'dtype': 'u8', 'shape': [2.5]}", ""),
                  AF_ESIZE, "'halfdim'", NULL);
}

static void test_graph_rejects_size_above_int64(void **state)
{
    (void)state;
    /* Too big for jansson's integers: the reader still names the tensor (second pass). */
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4},"
                        "{'name': 'huge', 'kind': 'input', 'bytes': 18446744073709551616}",
                        ""),
                  AF_ESIZE, "'huge'", NULL);
    expect_reject(GRAPH("{'name': 'hugedim', 'kind': 'input', 'dtype': 'u8', 'shape': "
                        "[99999999999999999999]}",
                        ""),
                  AF_ESIZE, "'hugedim'", NULL);
    /* INT64_MAX itself is a legal (if silly) size. */
    af_graph_t *g = NULL;
    af_error_t err;
    assert_int_equal(
        parse_q(GRAPH("{'name': 'max', 'kind': 'input', 'bytes': 9223372036854775807}", ""), &g,
                &err),
        0);
    assert_int_equal(af_graph_tensor(g, 0)->bytes, INT64_MAX);
    af_graph_destroy(g);
}

static void test_graph_rejects_overflowing_shape(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'wide', 'kind': 'input', 'dtype': 'f64', 'shape': [4294967296, "
                        "4294967296]}",
                        ""),
                  AF_ESIZE, "'wide'", NULL);
    /* 2^61 elements x 8 bytes = 2^64: overflows exactly at the dtype multiply. */
    expect_reject(GRAPH("{'name': 'edge', 'kind': 'input', 'dtype': 'i64', 'shape': "
                        "[2305843009213693952]}",
                        ""),
                  AF_ESIZE, "'edge'", NULL);
}

static void test_graph_rejects_bytes_below_shape(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'short', 'kind': 'input', 'dtype': 'f32', 'shape': [4], "
                        "'bytes': 15}",
                        ""),
                  AF_ESIZE, "'short'", NULL);
}

static void test_graph_rejects_alias_outside_base(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'small', 'kind': 'input', 'bytes': 64},"
                        "{'name': 'bigview', 'bytes': 64, 'alias_of': 'small', 'offset': 16}",
                        ""),
                  AF_ESIZE, "'bigview'", "'small'", NULL);
}

static void test_graph_rejects_missing_size(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'nosize', 'kind': 'input', 'dtype': 'f32'}", ""), AF_ESIZE,
                  "'nosize'", NULL);
    expect_reject(GRAPH("{'name': 'both', 'kind': 'input', 'bytes': 4, 'dynamic': true}", ""),
                  AF_EINVAL, "'both'", NULL);
}

static void test_graph_rejects_malformed_json_with_line_and_column(void **state)
{
    (void)state;
    /* The stray comma is at line 3, column 2 (jansson reports the token after it). */
    const char *text = "{'format': 'arenaflow-graph', 'version': 1,\n"
                       " 'tensors': [{'name': 'x', 'kind': 'input', 'bytes': 4},\n"
                       " ], 'nodes': []}";
    expect_reject(text, AF_EPARSE, "line 3", "column 2", NULL);
    expect_reject("{'format': 'arenaflow-graph',\n\n   'version': 1 'x'", AF_EPARSE, "line 3",
                  NULL);
    expect_reject("", AF_EPARSE, "line", NULL);
    expect_reject("{'tensors': [", AF_EPARSE, "column", NULL);
    /* Not NUL-terminated: only len bytes are read. */
    af_graph_t *g = NULL;
    af_error_t err;
    assert_int_equal(af_graph_parse_json("{\"format\"xxxx", 10, &g, &err), AF_EPARSE);
}

static void test_graph_rejects_duplicate_key(void **state)
{
    (void)state;
    expect_reject("{'format': 'arenaflow-graph', 'version': 1,\n 'tensors': [\n"
                  "  {'name': 'a', 'bytes': 16, 'bytes': 32}], 'nodes': []}",
                  AF_EPARSE, "line 3", "duplicate", NULL);
}

static void test_graph_rejects_unknown_key(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'typo', 'byts': 16}", ""), AF_EPARSE, "'typo'", "'byts'", NULL);
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}",
                        "{'name': 'n', 'op': 'Relu', 'input': ['x']}"),
                  AF_EPARSE, "'n'", "'input'", NULL);
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'y', 'bytes': 4}",
                        "{'name': 'n', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['y'],"
                        " 'inplace': [{'output': 0, 'inptu': 0}]}"),
                  AF_EPARSE, "'n'", "'inptu'", NULL);
    expect_reject("{'format': 'arenaflow-graph', 'version': 1, 'tensors': [], 'nodes': [],"
                  " 'node': []}",
                  AF_EPARSE, "'node'", NULL);
}

static void test_graph_rejects_bad_dtype_and_kind(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'odd', 'kind': 'input', 'dtype': 'f33', 'shape': [4]}", ""),
                  AF_EPARSE, "'odd'", "'f33'", NULL);
    expect_reject(GRAPH("{'name': 'k', 'kind': 'weight', 'bytes': 4}", ""), AF_EPARSE, "'k'",
                  "kind", NULL);
    expect_reject(GRAPH("{'name': 'deep', 'kind': 'input', 'dtype': 'u8', 'shape': "
                        "[1,1,1,1,1,1,1,1,1]}",
                        ""),
                  AF_EINVAL, "'deep'", NULL);
}

static void test_graph_rejects_wrong_format_or_version(void **state)
{
    (void)state;
    expect_reject("{'format': 'arenaflow-plan', 'version': 1, 'tensors': [], 'nodes': []}",
                  AF_EPARSE, "format", NULL);
    expect_reject("{'version': 1, 'tensors': [], 'nodes': []}", AF_EPARSE, "format", NULL);
    expect_reject("{'format': 'arenaflow-graph', 'version': 2, 'tensors': [], 'nodes': []}",
                  AF_ENOTSUP, "version 2", NULL);
    expect_reject("[1, 2]", AF_EPARSE, "object", NULL);
}

static void test_graph_rejects_inplace_out_of_range(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'y', 'bytes': 4}",
                        "{'name': 'overreach', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['y'],"
                        " 'inplace': [{'output': 0, 'input': 3}]}"),
                  AF_EINVAL, "'overreach'", NULL);
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'y', 'bytes': 4}",
                        "{'name': 'negidx', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['y'],"
                        " 'inplace': [{'output': -1, 'input': 0}]}"),
                  AF_EPARSE, "'negidx'", NULL);
}

static void test_graph_rejects_wrong_field_types(void **state)
{
    (void)state;
    const char *x = "{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'y', 'bytes': 4}";
    char buf[1024];
    static const struct {
        const char *node, *culprit;
    } cases[] = {
        {"{'name': 'noop', 'inputs': ['x'], 'outputs': ['y']}", "'noop'"},
        {"{'name': 'strin', 'op': 'R', 'inputs': 'x', 'outputs': ['y']}", "'strin'"},
        {"{'name': 'numin', 'op': 'R', 'inputs': [3], 'outputs': ['y']}", "'numin'"},
        {"{'name': 'negcost', 'op': 'R', 'inputs': ['x'], 'outputs': ['y'], 'cost': -1}",
         "'negcost'"},
        {"{'name': 'nested', 'op': 'R', 'inputs': ['x'], 'outputs': ['y'], 'attrs': {'k': {}}}",
         "'k'"},
        {"{'name': 'mixed', 'op': 'R', 'inputs': ['x'], 'outputs': ['y'], 'attrs': {'m': [1, "
         "'a']}}",
         "'m'"},
        {"{'name': 'nullattr', 'op': 'R', 'inputs': ['x'], 'outputs': ['y'], 'attrs': {'z': "
         "null}}",
         "'z'"},
        {"{'name': 7, 'op': 'R'}", "nodes[0]"},
        {"42", "nodes[0]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(buf, sizeof(buf),
                 "{'format': 'arenaflow-graph', 'version': 1, 'tensors': [%s], 'nodes': [%s]}", x,
                 cases[i].node);
        expect_reject(buf, AF_EPARSE, cases[i].culprit, NULL);
    }
    expect_reject("{'format': 'arenaflow-graph', 'version': 1, 'tensors': {}, 'nodes': []}",
                  AF_EPARSE, "'tensors'", NULL);
    expect_reject(GRAPH("{'bytes': 4}", ""), AF_EPARSE, "tensors[0]", NULL);
}

static void test_graph_builder_rejects_cycle(void **state)
{
    (void)state;
    /* The same validation runs for graphs built in C. */
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    const char *names[] = {"u", "v"};
    for (int i = 0; i < 2; i++) {
        af_tensor_desc_t d = {0};
        d.name = names[i];
        d.bytes = 16;
        d.rank = -1;
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
    }
    af_node_desc_t n1 = {"fwd", "Op", &names[0], 1, &names[1], 1, 0, NULL, 0};
    af_node_desc_t n2 = {"back", "Op", &names[1], 1, &names[0], 1, 0, NULL, 0};
    assert_int_equal(af_graph_add_node(g, &n1, NULL, NULL), 0);
    assert_int_equal(af_graph_add_node(g, &n2, NULL, NULL), 0);
    af_error_t err;
    assert_int_equal(af_graph_finalize(g, &err), AF_ECYCLE);
    assert_non_null(strstr(err.msg, "'fwd'"));
    assert_non_null(strstr(err.msg, "'back'"));
    assert_false(af_graph_is_finalized(g));
    af_graph_destroy(g);
}

/* Every file in tests/data/bad/ fails with the code and culprits its EXPECT comment names. */
static void test_graph_rejects_bad_files(void **state)
{
    (void)state;
    char dirpath[1024];
    src_path(dirpath, sizeof(dirpath), "tests/data/bad");
    DIR *d = opendir(dirpath);
    assert_non_null(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        char path[2048], text[8192];
        snprintf(path, sizeof(path), "%s/%s", dirpath, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        char *exp = strstr(text, "EXPECT ");
        if (!exp)
            print_error("%s has no EXPECT comment\n", path);
        assert_non_null(exp);
        char line[512];
        size_t k = 0;
        for (exp += 7; *exp && *exp != '"' && k < sizeof(line) - 1; exp++)
            line[k++] = *exp;
        line[k] = '\0';
        af_graph_t *g = NULL;
        af_error_t err;
        af_error_clear(&err);
        int rc = af_graph_load_json(path, &g, &err);
        assert_null(g);
        char *save = NULL;
        char *tok = strtok_r(line, "|", &save);
        int first = 1;
        for (; tok; tok = strtok_r(NULL, "|", &save), first = 0) {
            while (*tok == ' ')
                tok++;
            size_t tl = strlen(tok);
            while (tl && tok[tl - 1] == ' ')
                tok[--tl] = '\0';
            if (first ? strcmp(af_err_name(rc), tok) != 0 : strstr(err.msg, tok) == NULL) {
                print_error("%s: got %s \"%s\", expected %s\n", e->d_name, af_err_name(rc), err.msg,
                            tok);
                fail();
            }
        }
        files++;
    }
    closedir(d);
    print_message("%d bad graph files rejected as expected\n", files);
    assert_true(files >= 20);
}

/* Random byte edits of a valid file: every result is a graph or a clean error with a message. */
static void test_graph_survives_corrupted_input(void **state)
{
    (void)state;
    char path[1024];
    src_path(path, sizeof(path), "examples/mlp.json");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char orig[16384], buf[16384];
    size_t n = fread(orig, 1, sizeof(orig), f);
    fclose(f);
    static const char junk[] = "{}[]\",:0-9e.ntf \\\x01\xff";
    const uint64_t seed = 20261129;
    rng = seed;
    int ok = 0, rejected = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, orig, n);
        int edits = 1 + (int)rnd_below(3);
        for (int k = 0; k < edits; k++)
            buf[rnd_below((int64_t)n)] = junk[rnd_below(sizeof(junk) - 1)];
        size_t len = rnd_below(8) ? n : (size_t)rnd_below((int64_t)n); /* sometimes truncated */
        af_graph_t *g = NULL;
        af_error_t err;
        af_error_clear(&err);
        int rc = af_graph_parse_json(buf, len, &g, &err);
        if (rc == 0) {
            ok++;
            af_graph_destroy(g);
            continue;
        }
        if (rc > 0 || g != NULL || err.msg[0] == '\0' || err.code != rc)
            print_error("seed %llu iteration %d: rc %d, message \"%s\"\n", (unsigned long long)seed,
                        it, rc, err.msg);
        assert_true(rc < 0 && g == NULL && err.msg[0] && err.code == rc);
        rejected++;
    }
    print_message("corrupted inputs: %d rejected cleanly, %d still valid\n", rejected, ok);
    assert_true(rejected > 0);
}

static void test_graph_writer_rejects_nan_attribute(void **state)
{
    (void)state;
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t t = {0};
    t.name = "x";
    t.bytes = 4;
    t.rank = -1;
    t.kind = AF_TENSOR_INPUT;
    assert_int_equal(af_graph_add_tensor(g, &t, NULL, NULL), 0);
    const char *in[] = {"x"};
    af_node_desc_t n = {"B", "Norm", in, 1, NULL, 0, 0, NULL, 0};
    int32_t id;
    assert_int_equal(af_graph_add_node(g, &n, &id, NULL), 0);
    af_attr_t a = {0};
    a.name = "eps";
    a.type = AF_ATTR_FLOAT;
    a.f = NAN;
    assert_int_equal(af_graph_node_set_attr(g, id, &a, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    /* After finalize the graph is immutable (it may be shared between threads). */
    assert_int_equal(af_graph_node_set_attr(g, id, &a, NULL), AF_EINVAL);
    char *text = NULL;
    af_error_t err;
    assert_int_equal(af_graph_to_json(g, &text, &err), AF_EINVAL);
    assert_null(text);
    assert_non_null(strstr(err.msg, "'eps'"));
    assert_non_null(strstr(err.msg, "'B'"));
    af_graph_destroy(g);
}

/* ---- out-of-memory injection ------------------------------------------------------------ */

static long fail_at = -1, n_allocs, live_allocs;

static void *oom_malloc(size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = malloc(n);
    if (p)
        live_allocs++;
    return p;
}

static void *oom_calloc(size_t c, size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = calloc(c, n);
    if (p)
        live_allocs++;
    return p;
}

static void *oom_realloc(void *old, size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = realloc(old, n);
    if (p && !old)
        live_allocs++;
    return p;
}

static void oom_free(void *p)
{
    if (p)
        live_allocs--;
    free(p);
}

static int reset_allocator(void **state)
{
    (void)state;
    af_reset_allocator();
    return 0;
}

typedef int (*oom_op_fn)(const char *path);

/*
 * Runs op with allocation n failing, n = 0, 1, ... until it succeeds. Every failure must return
 * AF_ENOMEM (or one of `also_ok`) and leave no live allocation. Returns the injection points.
 */
static long run_oom(const char *label, const char *path, oom_op_fn op, int final_rc, int also_ok,
                    long min_points)
{
    long n;
    for (n = 0; n < 200000; n++) {
        fail_at = n;
        n_allocs = 0;
        live_allocs = 0;
        af_replace_allocator(oom_malloc, oom_realloc, oom_calloc, oom_free);
        int rc = op(path);
        af_reset_allocator();
        if (live_allocs != 0)
            print_error("%s: allocation %ld failed -> rc %s and %ld allocations leaked\n", label, n,
                        af_err_name(rc), live_allocs);
        assert_int_equal(live_allocs, 0);
        if (n_allocs <= n) { /* the failure point was never reached: the run was clean */
            if (rc != final_rc)
                print_error("%s: clean run returned %s\n", label, af_err_name(rc));
            assert_int_equal(rc, final_rc);
            break;
        }
        if (rc != AF_ENOMEM && rc != also_ok)
            print_error("%s: allocation %ld failed -> %s, expected AF_ENOMEM\n", label, n,
                        af_err_name(rc));
        assert_true(rc == AF_ENOMEM || rc == also_ok);
    }
    print_message("%s: %ld allocation-failure points injected, all clean\n", label, n);
    assert_true(n >= min_points); /* the loader really allocates along this path */
    return n;
}

static int op_load(const char *path)
{
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_graph_load_json(path, &g, &err);
    if (rc == 0)
        af_graph_destroy(g);
    else if (g)
        return 12345; /* *out must stay untouched on failure */
    return rc;
}

static int op_load_write(const char *path)
{
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_graph_load_json(path, &g, &err);
    if (rc)
        return rc;
    char *text = NULL;
    rc = af_graph_to_json(g, &text, &err);
    af_free(text);
    af_graph_destroy(g);
    return rc;
}

static void test_graph_load_json_survives_oom(void **state)
{
    (void)state;
    char path[1024];
    src_path(path, sizeof(path), "examples/default.json");
    run_oom("load default.json", path, op_load, 0, AF_ENOMEM, 500);
    src_path(path, sizeof(path), "examples/mlp.json");
    run_oom("load+write mlp.json", path, op_load_write, 0, AF_ENOMEM, 50);
    /* A rejected file cleans up too: the second pass (integer overflow) may give the syntax
     * error when it runs out of memory, never a crash or a leak. */
    src_path(path, sizeof(path), "tests/data/bad/huge_size.json");
    run_oom("load huge_size.json", path, op_load, AF_ESIZE, AF_EPARSE, 3);
    src_path(path, sizeof(path), "tests/data/bad/cycle.json");
    run_oom("load cycle.json", path, op_load, AF_ECYCLE, AF_ECYCLE, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_loads_examples),
        cmocka_unit_test(test_graph_seed2_example_has_the_seed_lifetimes),
        cmocka_unit_test(test_graph_diamond_example_order_matters),
        cmocka_unit_test(test_graph_examples_agree_with_planner),
        cmocka_unit_test(test_graph_json_reads_every_field),
        cmocka_unit_test(test_graph_json_roundtrip_examples),
        cmocka_unit_test(test_graph_json_roundtrip_random),
        cmocka_unit_test(test_graph_save_json_is_atomic_and_reloads),
        cmocka_unit_test(test_graph_rejects_cycle),
        cmocka_unit_test(test_graph_rejects_cycle_behind_acyclic_prefix),
        cmocka_unit_test(test_graph_rejects_long_cycle),
        cmocka_unit_test(test_graph_rejects_self_loop),
        cmocka_unit_test(test_graph_rejects_tensor_produced_twice),
        cmocka_unit_test(test_graph_rejects_produced_input),
        cmocka_unit_test(test_graph_rejects_tensor_never_produced),
        cmocka_unit_test(test_graph_rejects_output_never_produced),
        cmocka_unit_test(test_graph_rejects_view_of_never_produced_base),
        cmocka_unit_test(test_graph_rejects_unknown_tensor_name),
        cmocka_unit_test(test_graph_rejects_unknown_alias_base),
        cmocka_unit_test(test_graph_rejects_alias_cycle),
        cmocka_unit_test(test_graph_rejects_duplicate_tensor_name),
        cmocka_unit_test(test_graph_rejects_duplicate_node_name),
        cmocka_unit_test(test_graph_rejects_negative_size),
        cmocka_unit_test(test_graph_rejects_non_integer_size),
        cmocka_unit_test(test_graph_rejects_size_above_int64),
        cmocka_unit_test(test_graph_rejects_overflowing_shape),
        cmocka_unit_test(test_graph_rejects_bytes_below_shape),
        cmocka_unit_test(test_graph_rejects_alias_outside_base),
        cmocka_unit_test(test_graph_rejects_missing_size),
        cmocka_unit_test(test_graph_rejects_malformed_json_with_line_and_column),
        cmocka_unit_test(test_graph_rejects_duplicate_key),
        cmocka_unit_test(test_graph_rejects_unknown_key),
        cmocka_unit_test(test_graph_rejects_bad_dtype_and_kind),
        cmocka_unit_test(test_graph_rejects_wrong_format_or_version),
        cmocka_unit_test(test_graph_rejects_inplace_out_of_range),
        cmocka_unit_test(test_graph_rejects_wrong_field_types),
        cmocka_unit_test(test_graph_builder_rejects_cycle),
        cmocka_unit_test(test_graph_rejects_bad_files),
        cmocka_unit_test(test_graph_survives_corrupted_input),
        cmocka_unit_test(test_graph_writer_rejects_nan_attribute),
        cmocka_unit_test_teardown(test_graph_load_json_survives_oom, reset_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
