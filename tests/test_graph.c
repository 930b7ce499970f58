/*
 * Tests of the graph model and its validation (graph/graph.c, graph/validate.c), through the
 * JSON loader and the C builder.
 *
 * - Every rejection the format promises has its own test: the error code AND that the message
 *   names the culprit (tensor, node or line/column).
 * - The bad graphs under tests/data/bad/ (also used by tests/cli_validate.sh) carry their
 *   expectation in a "comment": "EXPECT AF_CODE | culprit | ..." line, checked here too.
 * - The examples keep their promises: seed 2's lifetimes, the diamond's order-dependent peak;
 *   every example plans and verifies.
 *
 * AF_SOURCE_DIR (set by ctest) locates examples/ and tests/data/.
 */
#include "tests/graph_testutil.h"

#include "arenaflow/plan.h"

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
                  AF_EDUP, "'twin'", "tensors 0 and 1", NULL);
}

static void test_graph_rejects_duplicate_node_name(void **state)
{
    (void)state;
    expect_reject(GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 4}, {'name': 'a', 'bytes': 4},"
                        "{'name': 'b', 'bytes': 4}",
                        "{'name': 'same_node', 'op': 'Relu', 'inputs': ['x'], 'outputs': ['a']},"
                        "{'name': 'same_node', 'op': 'Relu', 'inputs': ['a'], 'outputs': ['b']}"),
                  AF_EDUP, "'same_node'", "nodes 0 and 1", NULL);
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

/* Nodes may name tensors declared after them; a finalize that fails on a missing name leaves the
 * graph buildable, and declaring the tensor lets the next finalize succeed with the right ids.
 * A reserved graph behaves the same. */
static void test_graph_builder_resolves_late_names(void **state)
{
    (void)state;
    for (int reserve = 0; reserve < 2; reserve++) {
        af_graph_t *g;
        assert_int_equal(af_graph_create(&g), 0);
        if (reserve)
            assert_int_equal(af_graph_reserve(g, 3, 2), 0);
        assert_int_equal(af_graph_reserve(g, -1, 0), AF_EINVAL);
        const char *i1[] = {"x"}, *o1[] = {"mid"}, *i2[] = {"mid", "x"}, *o2[] = {"y"};
        af_node_desc_t n1 = {"first", "Relu", i1, 1, o1, 1, 1.0, NULL, 0};
        af_node_desc_t n2 = {"second", "Add", i2, 2, o2, 1, 1.0, NULL, 0};
        assert_int_equal(af_graph_add_node(g, &n1, NULL, NULL), 0); /* nothing declared yet */
        af_tensor_desc_t d = {.name = "x", .bytes = 8, .rank = -1, .kind = AF_TENSOR_INPUT};
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
        assert_int_equal(af_graph_add_node(g, &n2, NULL, NULL), 0); /* x known, mid not */
        d = (af_tensor_desc_t){.name = "y", .bytes = 8, .rank = -1, .kind = AF_TENSOR_OUTPUT};
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
        af_error_t err;
        assert_int_equal(af_graph_finalize(g, &err), AF_ENOENT);
        assert_non_null(strstr(err.msg, "'mid'"));
        assert_non_null(strstr(err.msg, "'first'"));
        d = (af_tensor_desc_t){.name = "mid", .bytes = 8, .rank = -1};
        int32_t mid = -1;
        assert_int_equal(af_graph_add_tensor(g, &d, &mid, NULL), 0);
        assert_int_equal(af_graph_finalize(g, &err), 0);
        assert_int_equal(af_graph_reserve(g, 10, 10), AF_EINVAL); /* finalized */
        const af_node_info_t *a = af_graph_node(g, af_graph_find_node(g, "first"));
        const af_node_info_t *b = af_graph_node(g, af_graph_find_node(g, "second"));
        assert_int_equal(a->inputs[0], af_graph_find_tensor(g, "x"));
        assert_int_equal(a->outputs[0], mid);
        assert_int_equal(b->inputs[0], mid);
        assert_int_equal(b->inputs[1], af_graph_find_tensor(g, "x"));
        assert_int_equal(b->outputs[0], af_graph_find_tensor(g, "y"));
        assert_int_equal(af_graph_tensor(g, mid)->producer, af_graph_find_node(g, "first"));
        af_graph_destroy(g);
    }
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
/* The copy has the same ids and content (equal fingerprint); dynamic sizes fix dynamic tensors;
 * every change of content or salt changes the fingerprint. */
static void test_graph_copy_and_fingerprint(void **state)
{
    (void)state;
    /* in -> Relu -> d (dynamic) -> Relu -> out */
    af_graph_t *g = NULL, *c = NULL, *fixed = NULL;
    af_error_t err;
    assert_int_equal(af_graph_create(&g), 0);
    const af_tensor_desc_t td[] = {
        {.name = "in", .bytes = 1024, .rank = -1, .kind = AF_TENSOR_INPUT},
        {.name = "d", .bytes = AF_BYTES_DYNAMIC, .rank = -1},
        {.name = "out", .bytes = 1024, .rank = -1, .kind = AF_TENSOR_OUTPUT}};
    for (int i = 0; i < 3; i++)
        assert_int_equal(af_graph_add_tensor(g, &td[i], NULL, &err), 0);
    const char *n1in[] = {"in"}, *n1out[] = {"d"}, *n2in[] = {"d"}, *n2out[] = {"out"};
    const af_node_desc_t nd[] = {{"a", "Relu", n1in, 1, n1out, 1, 1.0, NULL, 0},
                                 {"b", "Relu", n2in, 1, n2out, 1, 1.0, NULL, 0}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(af_graph_add_node(g, &nd[i], NULL, &err), 0);
    assert_int_equal(af_graph_finalize(g, &err), 0);
    assert_int_equal(af_graph_copy(g, NULL, &c, &err), 0);
    assert_int_equal(af_graph_tensor_count(c), af_graph_tensor_count(g));
    assert_int_equal(af_graph_node_count(c), af_graph_node_count(g));
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++)
        assert_string_equal(af_graph_tensor(c, t)->name, af_graph_tensor(g, t)->name);
    af_fingerprint_t a, b, salted;
    assert_int_equal(af_graph_fingerprint(g, NULL, 0, &a), 0);
    assert_int_equal(af_graph_fingerprint(c, NULL, 0, &b), 0);
    assert_true(a.hi == b.hi && a.lo == b.lo);
    assert_int_equal(af_graph_fingerprint(g, "x", 1, &salted), 0);
    assert_false(a.hi == salted.hi && a.lo == salted.lo);
    char hex[AF_FINGERPRINT_HEX];
    af_fingerprint_hex(&a, hex);
    assert_int_equal(strlen(hex), 32);
    /* fixing the dynamic tensors' sizes gives another graph */
    int32_t nt = af_graph_tensor_count(g), dyn = -1;
    uint64_t *sizes = calloc((size_t)nt, sizeof(uint64_t));
    assert_non_null(sizes);
    for (int32_t t = 0; t < nt; t++)
        if (af_graph_tensor(g, t)->bytes < 0) {
            sizes[t] = 4096;
            dyn = t;
        }
    assert_int_equal(dyn, 1);
    assert_int_equal(af_graph_copy(g, sizes, &fixed, &err), 0);
    assert_int_equal(af_graph_tensor(fixed, dyn)->bytes, 4096);
    assert_int_equal(af_graph_fingerprint(fixed, NULL, 0, &b), 0);
    assert_false(a.hi == b.hi && a.lo == b.lo);
    free(sizes);
    /* an unfinalized graph is refused */
    af_graph_t *raw = NULL;
    assert_int_equal(af_graph_create(&raw), 0);
    assert_int_equal(af_graph_fingerprint(raw, NULL, 0, &b), AF_EINVAL);
    assert_int_equal(af_graph_copy(raw, NULL, &c, &err), AF_EINVAL);
    af_graph_destroy(raw);
    af_graph_destroy(fixed);
    af_graph_destroy(c);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_loads_examples),
        cmocka_unit_test(test_graph_seed2_example_has_the_seed_lifetimes),
        cmocka_unit_test(test_graph_diamond_example_order_matters),
        cmocka_unit_test(test_graph_examples_agree_with_planner),
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
        cmocka_unit_test(test_graph_builder_resolves_late_names),
        cmocka_unit_test(test_graph_rejects_bad_files),
        cmocka_unit_test(test_graph_copy_and_fingerprint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
