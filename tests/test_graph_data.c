/*
 * Tests of constant data in the graph model (graph/store.c), its JSON weights file
 * (graph/json.c, graph/json_write.c), dynamic reasons, and sessions reading the data
 * (executor/session_api.c).
 *
 * What a user relies on: af_graph_set_data copies or borrows exactly the bytes given and rejects
 * what cannot be right (not a constant, wrong size, misaligned borrow, finalized graph); a graph
 * that shares another's data keeps it alive after the other is destroyed (ASan sees a use after
 * free otherwise); save_json writes GRAPH.weights beside the JSON and load_json maps it back
 * with every byte equal, and a truncated, misnamed or escaping weights file is a clear error;
 * sessions compute with the graph's weights, and af_session_constant() gives one session its
 * own copy without touching the graph or the other sessions.
 */
#include "arenaflow/executor.h"
#include "arenaflow/plan.h"
#include "tests/graph_testutil.h"

#include <sys/stat.h>

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/af_graph_data.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void add(af_graph_t *g, const char *name, af_tensor_kind_t kind, int rank,
                const int64_t *shape)
{
    af_tensor_desc_t d = {.name = name,
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .dtype = AF_DTYPE_F32,
                          .rank = rank,
                          .shape = shape,
                          .kind = kind};
    assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
}

static void add_node2(af_graph_t *g, const char *name, const char *op, const char *a, const char *b,
                      const char *out)
{
    const char *ins[] = {a, b};
    af_node_desc_t d = {
        .name = name, .op = op, .inputs = ins, .n_inputs = 2, .outputs = &out, .n_outputs = 1};
    assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
}

static const float W[4] = {1, 2, 3, 4}; /* y = x W with x [1,2], W [2,2] */

/* x [1,2] (input) . W [2,2] (constant) -> y [1,2]; W's data attached with `mode`. */
static af_graph_t *matmul_graph(af_data_mode_t mode)
{
    af_graph_t *g;
    int64_t s12[] = {1, 2}, s22[] = {2, 2};
    assert_int_equal(af_graph_create(&g), 0);
    add(g, "x", AF_TENSOR_INPUT, 2, s12);
    add(g, "W", AF_TENSOR_CONSTANT, 2, s22);
    add(g, "y", AF_TENSOR_OUTPUT, 2, s12);
    add_node2(g, "mm", "MatMul", "x", "W", "y");
    af_error_t err;
    assert_int_equal(af_graph_set_data(g, 1, W, sizeof W, mode, &err), 0);
    assert_int_equal(af_graph_finalize(g, &err), 0);
    return g;
}

static void test_graph_data_set_copy_borrow(void **state)
{
    (void)state;
    af_graph_t *g = matmul_graph(AF_DATA_COPY);
    const af_tensor_info_t *w = af_graph_tensor(g, tensor_id(g, "W"));
    assert_ptr_not_equal(w->data, W);
    assert_memory_equal(w->data, W, sizeof W);
    assert_int_equal((uintptr_t)w->data % 64, 0);
    assert_int_equal(af_graph_data_bytes(g), sizeof W);
    assert_null(af_graph_tensor(g, tensor_id(g, "x"))->data);
    af_graph_destroy(g);
    g = matmul_graph(AF_DATA_BORROW);
    assert_ptr_equal(af_graph_tensor(g, tensor_id(g, "W"))->data, W);
    af_graph_destroy(g);
}

static void expect_set_error(af_graph_t *g, int32_t t, const void *d, int64_t n,
                             af_data_mode_t mode, int code, const char *needle)
{
    af_error_t err;
    af_error_clear(&err);
    int rc = af_graph_set_data(g, t, d, n, mode, &err);
    if (rc != code || !strstr(err.msg, needle))
        print_error("want %s '%s', got %s: %s\n", af_err_name(code), needle, af_err_name(rc),
                    err.msg);
    assert_int_equal(rc, code);
    assert_non_null(strstr(err.msg, needle));
}

static void test_graph_data_rejects(void **state)
{
    (void)state;
    af_graph_t *g;
    int64_t s22[] = {2, 2};
    assert_int_equal(af_graph_create(&g), 0);
    add(g, "W", AF_TENSOR_CONSTANT, 2, s22);
    add(g, "a", AF_TENSOR_INTERMEDIATE, 2, s22);
    af_tensor_desc_t dyn = {.name = "D", .bytes = AF_BYTES_DYNAMIC, .kind = AF_TENSOR_CONSTANT};
    assert_int_equal(af_graph_add_tensor(g, &dyn, NULL, NULL), 0);
    char buf[20] = {0};
    expect_set_error(g, 1, W, 16, AF_DATA_COPY, AF_EINVAL, "'a'");
    expect_set_error(g, 0, W, 12, AF_DATA_COPY, AF_ESIZE, "12 bytes");
    expect_set_error(g, 2, W, 16, AF_DATA_COPY, AF_ESIZE, "dynamic");
    expect_set_error(g, 0, buf + 1, 16, AF_DATA_BORROW, AF_EINVAL, "aligned");
    expect_set_error(g, 7, W, 16, AF_DATA_COPY, AF_EINVAL, "unknown tensor");
    expect_set_error(g, 0, NULL, 16, AF_DATA_COPY, AF_EINVAL, "NULL");
    assert_int_equal(af_graph_set_data(g, 0, W, 16, AF_DATA_COPY, NULL), 0);
    assert_int_equal(af_graph_set_data(g, 0, W, 16, AF_DATA_COPY, NULL), 0); /* replaces */
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    expect_set_error(g, 0, W, 16, AF_DATA_COPY, AF_EINVAL, "finalized");
    af_graph_destroy(g);
}

/* A graph sharing another's data keeps it alive (an ASan use-after-free otherwise). */
static void test_graph_data_share_outlives_source(void **state)
{
    (void)state;
    af_graph_t *src = matmul_graph(AF_DATA_COPY), *dst;
    int64_t s22[] = {2, 2};
    assert_int_equal(af_graph_create(&dst), 0);
    add(dst, "W2", AF_TENSOR_CONSTANT, 2, s22);
    add(dst, "i", AF_TENSOR_INTERMEDIATE, 2, s22);
    assert_int_equal(af_graph_share_data(dst, 0, src, tensor_id(src, "W"), NULL), 0);
    assert_int_equal(af_graph_share_data(dst, 1, src, tensor_id(src, "x"), NULL), 0); /* none */
    assert_int_equal(af_graph_share_data(dst, 1, src, tensor_id(src, "W"), NULL), AF_EINVAL);
    const void *p = af_graph_tensor(src, tensor_id(src, "W"))->data;
    af_graph_destroy(src);
    assert_int_equal(af_graph_finalize(dst, NULL), 0);
    assert_ptr_equal(af_graph_tensor(dst, 0)->data, p);
    assert_memory_equal(af_graph_tensor(dst, 0)->data, W, sizeof W);
    af_graph_destroy(dst);
}

static void test_graph_data_dynamic_reason(void **state)
{
    (void)state;
    af_graph_t *g = NULL;
    af_error_t err;
    const char *text = GRAPH("{'name': 'x', 'kind': 'input', 'bytes': 8},"
                             "{'name': 'd', 'dynamic': true, 'dynamic_reason': 'op NonZero: "
                             "values'},"
                             "{'name': 'e', 'dtype': 'f32', 'shape': ['n', 2]},"
                             "{'name': 'v', 'alias_of': 'd', 'dynamic': true}",
                             "{'op': 'NonZero', 'inputs': ['x'], 'outputs': ['d', 'e']}");
    assert_int_equal(parse_q(text, &g, &err), 0);
    assert_string_equal(af_graph_dynamic_reason(g, tensor_id(g, "d")), "op NonZero: values");
    assert_non_null(strstr(af_graph_dynamic_reason(g, tensor_id(g, "e")), "dimension"));
    assert_non_null(strstr(af_graph_dynamic_reason(g, tensor_id(g, "v")), "view"));
    assert_null(af_graph_dynamic_reason(g, tensor_id(g, "x")));
    assert_null(af_graph_dynamic_reason(g, 99));
    check_roundtrip(g, "dynamic reason"); /* the reason is written back */
    char *json = NULL;
    assert_int_equal(af_graph_to_json(g, &json, NULL), 0);
    assert_non_null(strstr(json, "\"dynamic_reason\": \"op NonZero: values\""));
    af_free(json);
    af_graph_destroy(g);
}

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void test_graph_data_json_weights(void **state)
{
    (void)state;
    af_graph_t *g = matmul_graph(AF_DATA_COPY), *h;
    af_error_t err;
    char json[300], weights[300];
    path_in(json, sizeof json, "mm.json");
    path_in(weights, sizeof weights, "mm.weights");
    assert_int_equal(af_graph_save_json(g, json, &err), 0);
    struct stat st;
    assert_int_equal(stat(weights, &st), 0);
    assert_int_equal(st.st_size, sizeof W);
    int rc = af_graph_load_json(json, &h, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_true(graph_equal(g, h));
    assert_memory_equal(af_graph_tensor(h, tensor_id(h, "W"))->data, W, sizeof W);
    af_graph_destroy(h);

    /* The same text from memory has no directory to find the weights in. */
    FILE *f = fopen(json, "rb");
    char text[4096];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    assert_int_equal(af_graph_parse_json(text, n, &h, &err), AF_ENOTSUP);
    assert_non_null(strstr(err.msg, "mm.weights"));

    /* A truncated weights file, an escaping name, a range outside the file: clear errors. */
    assert_int_equal(truncate(weights, 8), 0);
    assert_int_equal(af_graph_load_json(json, &h, &err), AF_EPARSE);
    assert_non_null(strstr(err.msg, "8 bytes"));
    char bad[300];
    path_in(bad, sizeof bad, "bad.json");
    struct {
        const char *text;
        int code;
        const char *needle;
    } cases[] = {
        {"{'format': 'arenaflow-graph', 'version': 1, 'weights': {'file': '../mm.weights', "
         "'bytes': 8}, 'tensors': [], 'nodes': []}",
         AF_EINVAL, "relative path"},
        {"{'format': 'arenaflow-graph', 'version': 1, 'weights': {'file': 'mm.weights', 'bytes': "
         "8}, 'tensors': [{'name': 'w', 'kind': 'constant', 'bytes': 16, 'data': {'offset': 0, "
         "'bytes': 16}}], 'nodes': []}",
         AF_EPARSE, "outside the weights file"},
        {"{'format': 'arenaflow-graph', 'version': 1, 'weights': {'file': 'mm.weights', 'bytes': "
         "8}, 'tensors': [{'name': 'w', 'kind': 'constant', 'bytes': 4, 'data': {'offset': 0, "
         "'bytes': 8}}], 'nodes': []}",
         AF_ESIZE, "'w'"},
        {"{'format': 'arenaflow-graph', 'version': 1, 'tensors': [{'name': 'w', 'kind': "
         "'constant', 'bytes': 4, 'data': {'offset': 0, 'bytes': 4}}], 'nodes': []}",
         AF_EPARSE, "names no weights"},
        {"{'format': 'arenaflow-graph', 'version': 1, 'weights': {'file': 'none.weights', "
         "'bytes': 0}, 'tensors': [], 'nodes': []}",
         AF_EIO, "none.weights"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = dq(cases[i].text);
        f = fopen(bad, "wb");
        fputs(t, f);
        fclose(f);
        free(t);
        af_error_clear(&err);
        rc = af_graph_load_json(bad, &h, &err);
        if (rc != cases[i].code || !strstr(err.msg, cases[i].needle))
            print_error("case %zu: %s: %s\n", i, af_err_name(rc), err.msg);
        assert_int_equal(rc, cases[i].code);
        assert_non_null(strstr(err.msg, cases[i].needle));
    }

    /* A graph without data writes no weights file and no reference. */
    af_graph_t *plain = NULL;
    assert_int_equal(parse_q(GRAPH("{'name': 'a', 'kind': 'input', 'bytes': 4}", ""), &plain, &err),
                     0);
    char pj[300], pw[300];
    path_in(pj, sizeof pj, "plain.json");
    path_in(pw, sizeof pw, "plain.weights");
    assert_int_equal(af_graph_save_json(plain, pj, &err), 0);
    assert_int_not_equal(stat(pw, &st), 0);
    af_graph_destroy(plain);
    af_graph_destroy(g);
}

static af_session_t *session_on(af_executor_t *ex, const af_plan_t *p)
{
    af_session_t *s;
    af_error_t err;
    int rc = af_session_create(ex, p, NULL, &s, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    return s;
}

static void run(af_session_t *s, float *y)
{
    float x[2] = {1, 1};
    af_buffer_t in = {x, sizeof x}, out = {y, 8};
    af_error_t err;
    int rc = af_session_run(s, &in, &out, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
}

/* Sessions use the graph's weights; af_session_constant() copies them for one session only. */
static void test_graph_data_sessions(void **state)
{
    (void)state;
    for (int verify = 0; verify < 2; verify++) {
        af_graph_t *g = matmul_graph(AF_DATA_COPY);
        af_plan_t *p;
        assert_int_equal(af_plan_create(g, NULL, &p, NULL), 0);
        af_executor_opts_t o;
        af_executor_opts_init(&o);
        o.threads = 1;
        o.kernels = "real";
        o.verify = verify;
        af_executor_t *ex;
        assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
        af_session_t *a = session_on(ex, p), *b = session_on(ex, p);
        float ya[2], yb[2];
        run(a, ya);
        assert_float_equal(ya[0], 4, 0); /* [1 1] . [1 2; 3 4] = [4 6] */
        assert_float_equal(ya[1], 6, 0);
        uint64_t n = 0;
        int32_t wid = tensor_id(g, "W");
        float *w = af_session_constant(a, wid, &n);
        assert_non_null(w);
        assert_int_equal(n, sizeof W);
        assert_ptr_not_equal(w, af_graph_tensor(g, wid)->data);
        assert_memory_equal(w, W, sizeof W); /* the copy starts as the graph's bytes */
        assert_ptr_equal(af_session_constant(a, wid, NULL), w); /* copied once */
        w[0] = 10;
        run(a, ya);
        run(b, yb);
        assert_float_equal(ya[0], 13, 0); /* session a: its own weights */
        assert_float_equal(yb[0], 4, 0);  /* session b and the graph: untouched */
        assert_memory_equal(af_graph_tensor(g, wid)->data, W, sizeof W);
        af_session_destroy(a);
        af_session_destroy(b);
        af_executor_destroy(ex);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_data_set_copy_borrow),
        cmocka_unit_test(test_graph_data_rejects),
        cmocka_unit_test(test_graph_data_share_outlives_source),
        cmocka_unit_test(test_graph_data_dynamic_reason),
        cmocka_unit_test(test_graph_data_json_weights),
        cmocka_unit_test(test_graph_data_sessions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
