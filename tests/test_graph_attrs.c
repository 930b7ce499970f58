/*
 * Node attributes at scale (issue 16, item 5): af_graph_node_set_attr() checks whether a node
 * already has an attribute of that name (and replaces it). The check was a scan of the node's
 * attributes, so one node with 100k attributes (a 1.7 MB JSON body) took 38 s to read; it must
 * be sub-linear. Also the replacement semantics the check exists for, below and above the
 * number of attributes where a node switches to its index.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU seconds of this process: a complexity guard, not a benchmark. Wall time would count the
 * other processes of a loaded machine (a sanitizer build at load 20 took > 3 s of wall time
 * for milliseconds of CPU); a scan per insertion costs tens of CPU seconds wherever it runs. */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static af_graph_t *one_node_graph(int32_t *node)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t x = {.name = "x", .bytes = 64, .rank = -1, .kind = AF_TENSOR_INPUT};
    af_tensor_desc_t y = {.name = "y", .bytes = 64, .rank = -1, .kind = AF_TENSOR_OUTPUT};
    assert_int_equal(af_graph_add_tensor(g, &x, NULL, NULL), 0);
    assert_int_equal(af_graph_add_tensor(g, &y, NULL, NULL), 0);
    const char *in[] = {"x"}, *out[] = {"y"};
    af_node_desc_t n = {
        .name = "n", .op = "Relu", .inputs = in, .n_inputs = 1, .outputs = out, .n_outputs = 1};
    assert_int_equal(af_graph_add_node(g, &n, node, NULL), 0);
    return g;
}

static void test_graph_attrs_many_distinct_fast(void **state)
{
    (void)state;
    enum { N = 100000 };
    int32_t node;
    af_graph_t *g = one_node_graph(&node);
    double t0 = cpu_s();
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "attr_%d", i);
        af_attr_t a = {.name = name, .type = AF_ATTR_INT, .i = i};
        assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
    }
    double s = cpu_s() - t0;
    print_message("  %d distinct attributes on one node in %.3f CPU s\n", N, s);
    /* a scan per insertion is 5e9 string compares (38 s); the index takes milliseconds */
    if (s > 3.0)
        fail_msg("%d attributes took %.1f s: the duplicate check is not sub-linear", N, s);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    assert_int_equal(af_graph_node(g, node)->n_attrs, N);
    const af_attr_t *a = af_graph_node_attr(g, node, "attr_77777");
    assert_non_null(a);
    assert_int_equal(a->i, 77777);
    af_graph_destroy(g);
}

static void test_graph_attrs_replace_keeps_one(void **state)
{
    (void)state;
    static const int counts[] = {3, 8, 9, 40, 1000};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        int32_t node;
        af_graph_t *g = one_node_graph(&node);
        char name[32];
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof(name), "k%d", i);
            af_attr_t a = {.name = name, .type = AF_ATTR_INT, .i = i};
            assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
        }
        /* replace every third one, with another type */
        for (int i = 0; i < n; i += 3) {
            snprintf(name, sizeof(name), "k%d", i);
            af_attr_t a = {.name = name, .type = AF_ATTR_STRING, .s = "replaced"};
            assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
        }
        assert_int_equal(af_graph_finalize(g, NULL), 0);
        assert_int_equal(af_graph_node(g, node)->n_attrs, n);
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof(name), "k%d", i);
            const af_attr_t *a = af_graph_node_attr(g, node, name);
            assert_non_null(a);
            if (i % 3 == 0) {
                assert_int_equal(a->type, AF_ATTR_STRING);
                assert_string_equal(a->s, "replaced");
            } else {
                assert_int_equal(a->type, AF_ATTR_INT);
                assert_int_equal(a->i, i);
            }
        }
        af_graph_destroy(g);
    }
}

/* The JSON reader goes through the same function: a 1.7 MB body with one node of 100k
 * attributes parses in well under a second. */
static void test_graph_attrs_json_node_with_100k(void **state)
{
    (void)state;
    enum { N = 100000 };
    size_t cap = (size_t)N * 24 + 1024, o = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    o += (size_t)snprintf(b + o, cap - o,
                          "{\"format\":\"arenaflow-graph\",\"version\":1,\"tensors\":["
                          "{\"name\":\"x\",\"kind\":\"input\",\"bytes\":64},"
                          "{\"name\":\"y\",\"kind\":\"output\",\"bytes\":64}],\"nodes\":["
                          "{\"name\":\"n\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":"
                          "[\"y\"],\"attrs\":{");
    for (int i = 0; i < N; i++)
        o += (size_t)snprintf(b + o, cap - o, "%s\"a%d\":%d", i ? "," : "", i, i);
    o += (size_t)snprintf(b + o, cap - o, "}}]}");
    assert_true(o < cap);
    double t0 = cpu_s();
    af_graph_t *g = NULL;
    af_error_t err;
    if (af_graph_parse_json(b, o, &g, &err) != 0)
        fail_msg("parse: %s", err.msg);
    double s = cpu_s() - t0;
    print_message("  %zu-byte graph, one node with %d attributes, parsed in %.3f CPU s\n", o, N, s);
    if (s > 3.0)
        fail_msg("parsing took %.1f s", s);
    assert_int_equal(af_graph_node(g, 0)->n_attrs, N);
    af_graph_destroy(g);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_attrs_replace_keeps_one),
        cmocka_unit_test(test_graph_attrs_many_distinct_fast),
        cmocka_unit_test(test_graph_attrs_json_node_with_100k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
