/*
 * Operator fusion (planner/fuse.c, af_plan_fuse, option fuse): what folds and what must not,
 * that folded intermediates are gone from the plan, and that a fused plan computes what the
 * unfused plan computes — on the reference kernels (the oracle applies the post-ops in a C loop)
 * and on the real kernels (oneDNN post-ops), for small graphs and the model zoo's inference
 * graphs with weights attached. Outputs are compared within 1e-5 of the largest magnitude of
 * the unfused output; a Conv+BatchNormalization block with random weights bit for bit (the
 * folded affine computes the BatchNormalization kernels' own floats).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/arenaflow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5

static void tensor(af_graph_t *g, const char *name, af_tensor_kind_t kind, int rank,
                   const int64_t *shape)
{
    af_tensor_desc_t d = {.name = name,
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .dtype = AF_DTYPE_F32,
                          .rank = rank,
                          .shape = shape,
                          .kind = kind};
    int32_t id;
    assert_int_equal(af_graph_add_tensor(g, &d, &id, NULL), 0);
    if (kind != AF_TENSOR_CONSTANT)
        return;
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    float *v = malloc((size_t)n * 4);
    for (int64_t k = 0; k < n; k++) /* variances and scales positive: names "var", "scale" */
        v[k] = strstr(name, "var") || strstr(name, "scale")
                   ? 0.5f + (float)((k * 7 + id) % 11) / 11.0f
                   : (float)((k * 37 + id * 11) % 97) / 97.0f - 0.5f;
    assert_int_equal(af_graph_set_data(g, id, v, n * 4, AF_DATA_COPY, NULL), 0);
    free(v);
}

static void node(af_graph_t *g, const char *name, const char *op, const char **in, int n_in,
                 const char *out)
{
    af_node_desc_t d = {
        .name = name, .op = op, .inputs = in, .n_inputs = n_in, .outputs = &out, .n_outputs = 1};
    assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
}

/*
 * x -> Conv(W, B) -> c -> BatchNormalization -> bn -> Relu -> r -> Clip(lo, hi) -> k -> Sigmoid
 * -> out; with `second` the Conv output c is also read by an Add (c + out -> out2, the output),
 * with `c_out` c is a graph output.
 */
static af_graph_t *conv_bn_chain(int second, int c_out)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t xs[4] = {1, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, cs[1] = {4}, ys[4] = {1, 4, 6, 6};
    int64_t one[1] = {1};
    tensor(g, "x", AF_TENSOR_INPUT, 4, xs);
    tensor(g, "W", AF_TENSOR_CONSTANT, 4, ws);
    tensor(g, "B", AF_TENSOR_CONSTANT, 1, cs);
    const char *p[4] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; i++)
        tensor(g, p[i], AF_TENSOR_CONSTANT, 1, cs);
    tensor(g, "lo", AF_TENSOR_CONSTANT, 1, one);
    tensor(g, "hi", AF_TENSOR_CONSTANT, 1, one);
    tensor(g, "c", c_out ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE, 4, ys);
    tensor(g, "bn", AF_TENSOR_INTERMEDIATE, 4, ys);
    tensor(g, "r", AF_TENSOR_INTERMEDIATE, 4, ys);
    tensor(g, "k", AF_TENSOR_INTERMEDIATE, 4, ys);
    tensor(g, "out", second ? AF_TENSOR_INTERMEDIATE : AF_TENSOR_OUTPUT, 4, ys);
    const char *ci[3] = {"x", "W", "B"}, *bi[5] = {"c", "scale", "bias", "mean", "var"};
    const char *ri[1] = {"bn"}, *ki[3] = {"r", "lo", "hi"}, *si[1] = {"k"};
    node(g, "conv", "Conv", ci, 3, "c");
    node(g, "bnorm", "BatchNormalization", bi, 5, "bn");
    node(g, "relu", "Relu", ri, 1, "r");
    node(g, "clip", "Clip", ki, 3, "k");
    node(g, "sig", "Sigmoid", si, 1, "out");
    if (second) {
        tensor(g, "out2", AF_TENSOR_OUTPUT, 4, ys);
        const char *ai[2] = {"c", "out"};
        node(g, "add", "Add", ai, 2, "out2");
    }
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

/* x -> Conv a -> a; a -> Conv b -> b -> Conv c -> c; Add(c, a) -> sum -> Relu -> out: the Add
 * folds into Conv c (a is not c's input), which then writes over a in place. */
static af_graph_t *residual(void)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t xs[4] = {1, 4, 6, 6}, ws[4] = {4, 4, 1, 1}, cs[1] = {4};
    tensor(g, "x", AF_TENSOR_INPUT, 4, xs);
    const char *names[3] = {"a", "b", "c"}, *prev = "x";
    char w[3][8], b[3][8];
    for (int i = 0; i < 3; i++) {
        snprintf(w[i], sizeof w[i], "W%d", i);
        snprintf(b[i], sizeof b[i], "B%d", i);
        tensor(g, w[i], AF_TENSOR_CONSTANT, 4, ws);
        tensor(g, b[i], AF_TENSOR_CONSTANT, 1, cs);
        tensor(g, names[i], AF_TENSOR_INTERMEDIATE, 4, xs);
        const char *in[3] = {prev, w[i], b[i]};
        node(g, names[i], "Conv", in, 3, names[i]);
        prev = names[i];
    }
    tensor(g, "sum", AF_TENSOR_INTERMEDIATE, 4, xs);
    tensor(g, "out", AF_TENSOR_OUTPUT, 4, xs);
    const char *ai[2] = {"c", "a"}, *ri[1] = {"sum"};
    node(g, "add", "Add", ai, 2, "sum");
    node(g, "relu", "Relu", ri, 1, "out");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

/* PyTorch's Linear layers: x[2,3,16] -> MatMul(W1) -> Add(B1, .) -> Relu -> h; s = Sigmoid(h);
 * h -> MatMul(W2) -> Add(., B2) -> Add(., s) -> out. Both bias Adds fold into their MatMul
 * (fused_bias = 2), the residual into the second (fused_sum = 3, output in place of s: the
 * MatMul reads h, not s); the Relu becomes the first MatMul's post-op. */
static af_graph_t *linear(void)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t xs[3] = {2, 3, 16}, w1[2] = {16, 8}, b[1] = {8}, w2[2] = {8, 8}, hs[3] = {2, 3, 8};
    tensor(g, "x", AF_TENSOR_INPUT, 3, xs);
    tensor(g, "W1", AF_TENSOR_CONSTANT, 2, w1);
    tensor(g, "B1", AF_TENSOR_CONSTANT, 1, b);
    tensor(g, "W2", AF_TENSOR_CONSTANT, 2, w2);
    tensor(g, "B2", AF_TENSOR_CONSTANT, 1, b);
    const char *names[] = {"mm1", "l1", "h", "s", "mm2", "l2"};
    for (int i = 0; i < 6; i++)
        tensor(g, names[i], AF_TENSOR_INTERMEDIATE, 3, hs);
    tensor(g, "out", AF_TENSOR_OUTPUT, 3, hs);
    const char *m1[2] = {"x", "W1"}, *a1[2] = {"B1", "mm1"}, *r[1] = {"l1"}, *m2[2] = {"h", "W2"};
    const char *a2[2] = {"mm2", "B2"}, *a3[2] = {"l2", "s"}, *sg[1] = {"h"};
    node(g, "mm1", "MatMul", m1, 2, "mm1");
    node(g, "add1", "Add", a1, 2, "l1");
    node(g, "relu", "Relu", r, 1, "h");
    node(g, "sig", "Sigmoid", sg, 1, "s");
    node(g, "mm2", "MatMul", m2, 2, "mm2");
    node(g, "add2", "Add", a2, 2, "l2");
    node(g, "add3", "Add", a3, 2, "out");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

/* x[1,3,4,4] -> Conv(W, no bias) -> y -> Add(C[1,2,1,1], y) -> z -> Relu -> out: the Add's
 * constant becomes the Conv's bias (a new [2] constant), the Relu its post-op. With `bias`, the
 * Conv has a bias B, and the new bias is B + C. */
static af_graph_t *conv_add(int bias)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t xs[4] = {1, 3, 4, 4}, ws[4] = {2, 3, 1, 1}, cs[4] = {1, 2, 1, 1}, bs[1] = {2};
    int64_t ys[4] = {1, 2, 4, 4};
    tensor(g, "x", AF_TENSOR_INPUT, 4, xs);
    tensor(g, "W", AF_TENSOR_CONSTANT, 4, ws);
    tensor(g, "C", AF_TENSOR_CONSTANT, 4, cs);
    if (bias)
        tensor(g, "B", AF_TENSOR_CONSTANT, 1, bs);
    tensor(g, "y", AF_TENSOR_INTERMEDIATE, 4, ys);
    tensor(g, "z", AF_TENSOR_INTERMEDIATE, 4, ys);
    tensor(g, "out", AF_TENSOR_OUTPUT, 4, ys);
    const char *ci[3] = {"x", "W", "B"}, *ai[2] = {"C", "y"}, *ri[1] = {"z"};
    node(g, "conv", "Conv", ci, bias ? 3 : 2, "y");
    node(g, "add", "Add", ai, 2, "z");
    node(g, "relu", "Relu", ri, 1, "out");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

static af_plan_t *plan(const af_graph_t *g, af_fuse_mode_t fuse)
{
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.fuse = fuse;
    af_plan_t *p = NULL;
    af_error_t err;
    if (af_plan_create(g, &o, &p, &err))
        fail_msg("plan: %s", err.msg);
    assert_int_equal(af_plan_verify(p, NULL), 0);
    return p;
}

static void test_fuse_intermediates_leave_the_plan(void **state)
{
    (void)state;
    af_graph_t *g = conv_bn_chain(0, 0);
    af_plan_t *p = plan(g, AF_FUSE_ON);
    const af_graph_t *fg = af_plan_graph(p);
    const af_plan_report_t *r = af_plan_report(p);
    assert_int_equal(af_graph_node_count(fg), 1);
    assert_int_equal(r->fused_nodes, 4);
    assert_int_equal(r->bn_folded, 1);
    assert_int_equal(r->fused_tensors, 4);
    const char *gone[] = {"c", "bn", "r", "k", "scale", "var"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        assert_int_equal(af_graph_find_tensor(fg, gone[i]), -1);
    assert_true(af_graph_find_tensor(fg, "out") >= 0);
    /* the weights stay; the BatchNormalization is s and t after the bias (fused_affine) */
    const af_node_info_t *ni = af_graph_node(fg, 0);
    const af_attr_t *fa = af_graph_node_attr(fg, 0, "fused_affine");
    assert_non_null(fa);
    assert_int_equal(fa->i, 3);
    assert_int_equal(ni->n_inputs, 5);
    assert_string_equal(af_graph_tensor(fg, ni->inputs[1])->name, "W");
    assert_string_equal(af_graph_tensor(fg, ni->inputs[2])->name, "B");
    assert_string_equal(af_graph_tensor(fg, ni->inputs[3])->name, "scale#bn.bnorm");
    assert_string_equal(af_graph_tensor(fg, ni->inputs[4])->name, "shift#bn.bnorm");
    const af_attr_t *a = af_graph_node_attr(fg, 0, "fused_post");
    assert_non_null(a);
    assert_string_equal(a->s, "Relu,Clip,Sigmoid");
    /* a chain peaks at one node's input + output either way: the arena may not grow, and the
     * four 576-byte intermediates (768 aligned) leave the naive figure */
    assert_true(r->unfused_bytes >= r->arena_bytes && r->unfused_bytes > 0);
    af_plan_t *q = plan(g, AF_FUSE_OFF);
    assert_int_equal(af_plan_report(q)->naive_bytes, r->naive_bytes + 4 * 768);
    assert_int_equal(af_plan_report(q)->unfused_bytes, 0);
    assert_int_equal(af_graph_node_count(af_plan_graph(q)), 5);
    assert_int_equal(af_plan_report(q)->arena_bytes, r->unfused_bytes);
    af_plan_destroy(q);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_fuse_second_consumer_or_output_stays(void **state)
{
    (void)state;
    for (int c_out = 0; c_out < 2; c_out++) {
        af_graph_t *g = conv_bn_chain(!c_out, c_out);
        af_graph_t *fg = NULL;
        af_fuse_report_t fr;
        assert_int_equal(af_plan_fuse(g, &fg, &fr, NULL), 0);
        /* c has a second reader (the Add) or is a graph output: the BN is not folded, c stays,
         * and the chain after it fuses into the BN */
        assert_int_equal(fr.bn_folded, 0);
        assert_true(af_graph_find_tensor(fg, "c") >= 0);
        assert_true(af_graph_find_node(fg, "conv") >= 0);
        assert_true(af_graph_find_node(fg, "bnorm") >= 0);
        assert_int_equal(af_graph_find_node(fg, "relu"), -1);
        assert_int_equal(fr.post_ops, 3);
        assert_null(af_graph_node_attr(fg, af_graph_find_node(fg, "conv"), "fused_post"));
        af_graph_destroy(fg);
        af_graph_destroy(g);
    }
}

static af_executor_t *make_exec(const char *kernels)
{
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 2;
    o.kernels = kernels;
#ifdef AF_TSAN_BUILD
    /* libgomp is not instrumented: TSan cannot see an OpenMP team's barriers and reports
     * oneDNN handing a heap block to a team thread (binary post-op primitives) as a race. The
     * workers stay 2, so the executor's own hand-overs are still checked. */
    o.intra_op_threads = 1;
#endif
    af_executor_t *ex = NULL;
    assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
    return ex;
}

/* Runs p once on fixed inputs; returns output `which` (malloc'd), its float count in *n. */
static float *run_once(af_executor_t *ex, const af_plan_t *p, int32_t which, size_t *n)
{
    const af_graph_t *g = af_plan_graph(p);
    af_session_opts_t so;
    memset(&so, 0, sizeof so);
    so.keep_outputs = 1;
    af_session_t *s = NULL;
    af_error_t err;
    if (af_session_create(ex, p, &so, &s, &err))
        fail_msg("session: %s", err.msg);
    int32_t ni = af_session_input_count(s);
    af_buffer_t in[8];
    assert_true(ni <= 8);
    for (int32_t i = 0; i < ni; i++) {
        uint64_t b = (uint64_t)af_graph_tensor(g, af_session_input_tensor(s, i))->bytes;
        float *v = malloc(b);
        for (uint64_t k = 0; k < b / 4; k++)
            v[k] = (float)((k * 13 + 5) % 89) / 89.0f - 0.4f;
        in[i] = (af_buffer_t){v, b};
    }
    if (af_session_run(s, in, NULL, &err))
        fail_msg("round: %s", err.msg);
    uint64_t bytes = 0;
    const void *d = af_session_output_data(s, which, &bytes);
    assert_non_null(d);
    float *res = malloc(bytes);
    memcpy(res, d, bytes);
    *n = bytes / 4;
    for (int32_t i = 0; i < ni; i++)
        free(in[i].data);
    af_session_destroy(s);
    return res;
}

/* Fused and unfused plans of g give the same output (within TOL of its largest magnitude). */
static void check_same(af_executor_t *ex, const af_graph_t *g, const char *what)
{
    af_plan_t *p0 = plan(g, AF_FUSE_OFF), *p1 = plan(g, AF_FUSE_ON);
    assert_true(af_plan_report(p1)->fused_nodes > 0);
    int32_t no = 0;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++)
        no += af_graph_tensor(g, t)->kind == AF_TENSOR_OUTPUT;
    for (int32_t o = 0; o < no; o++) {
        size_t n0, n1;
        float *a = run_once(ex, p0, o, &n0), *b = run_once(ex, p1, o, &n1);
        assert_int_equal(n0, n1);
        double big = 0, worst = 0;
        for (size_t k = 0; k < n0; k++)
            big = fabs(a[k]) > big ? fabs(a[k]) : big;
        for (size_t k = 0; k < n0; k++) {
            if (!isfinite(a[k]) || !isfinite(b[k]))
                fail_msg("%s: output %d element %zu not finite", what, o, k);
            double e = fabs((double)a[k] - b[k]) / (big > 0 ? big : 1);
            worst = e > worst ? e : worst;
        }
        printf("%s output %d: %zu values, largest %.4g, worst difference %.3g of it (%d nodes "
               "fused)\n",
               what, o, n0, big, worst, af_plan_report(p1)->fused_nodes);
        if (worst > TOL)
            fail_msg("%s: fused output %d differs by %.3g (relative to %.4g)", what, o, worst, big);
        assert_true(big > 0);
        free(a);
        free(b);
    }
    af_plan_destroy(p0);
    af_plan_destroy(p1);
}

static void test_fuse_residual_in_place(void **state)
{
    (void)state;
    af_graph_t *g = residual();
    af_plan_t *p = plan(g, AF_FUSE_ON);
    const af_graph_t *fg = af_plan_graph(p);
    const af_plan_report_t *r = af_plan_report(p);
    assert_int_equal(r->sums_folded, 1);
    assert_int_equal(af_graph_node_count(fg), 3);
    int32_t c = af_graph_find_node(fg, "c"), a = af_graph_find_tensor(fg, "a");
    int32_t out = af_graph_find_tensor(fg, "out");
    const af_node_info_t *ci = af_graph_node(fg, c);
    assert_int_equal(ci->n_inputs, 4);
    assert_int_equal(ci->inputs[3], a);
    assert_int_equal(ci->outputs[0], out);
    assert_int_equal(af_graph_find_tensor(fg, "sum"), -1);
    assert_int_equal(af_graph_find_tensor(fg, "c"), -1);
    assert_int_equal(af_plan_tensor(p, out)->inplace_of, a); /* the output takes a's bytes */
    assert_true(r->arena_bytes < r->unfused_bytes);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_fuse_linear_bias_and_residual(void **state)
{
    (void)state;
    af_graph_t *g = linear();
    af_plan_t *p = plan(g, AF_FUSE_ON);
    const af_graph_t *fg = af_plan_graph(p);
    const af_plan_report_t *r = af_plan_report(p);
    assert_int_equal(r->biases_folded, 2);
    assert_int_equal(r->sums_folded, 1);
    assert_int_equal(r->fused_nodes, 4);
    assert_int_equal(af_graph_node_count(fg), 3);
    int32_t m1 = af_graph_find_node(fg, "mm1"), m2 = af_graph_find_node(fg, "mm2");
    const af_node_info_t *n1 = af_graph_node(fg, m1), *n2 = af_graph_node(fg, m2);
    assert_int_equal(n1->n_inputs, 3);
    assert_int_equal(n1->inputs[2], af_graph_find_tensor(fg, "B1"));
    assert_int_equal(af_graph_node_attr(fg, m1, "fused_bias")->i, 2);
    assert_string_equal(af_graph_node_attr(fg, m1, "fused_post")->s, "Relu");
    assert_null(af_graph_node_attr(fg, m1, "fused_sum"));
    assert_int_equal(n2->n_inputs, 4);
    assert_int_equal(n2->inputs[2], af_graph_find_tensor(fg, "B2"));
    assert_int_equal(n2->inputs[3], af_graph_find_tensor(fg, "s"));
    assert_int_equal(af_graph_node_attr(fg, m2, "fused_bias")->i, 2);
    assert_int_equal(af_graph_node_attr(fg, m2, "fused_sum")->i, 3);
    int32_t out = af_graph_find_tensor(fg, "out");
    assert_int_equal(n2->outputs[0], out);
    assert_int_equal(af_plan_tensor(p, out)->inplace_of, af_graph_find_tensor(fg, "s"));
    const char *gone[] = {"mm1", "l1", "mm2", "l2"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        assert_int_equal(af_graph_find_tensor(fg, gone[i]), -1);
    af_plan_destroy(p);
    af_graph_destroy(g);
    for (int bias = 0; bias < 2; bias++) { /* a per-channel Add into the Conv's bias */
        g = conv_add(bias);
        p = plan(g, AF_FUSE_ON);
        fg = af_plan_graph(p);
        assert_int_equal(af_plan_report(p)->biases_folded, 1);
        assert_int_equal(af_graph_node_count(fg), 1);
        const af_node_info_t *ci = af_graph_node(fg, 0);
        assert_int_equal(ci->n_inputs, 3);
        const af_tensor_info_t *nb = af_graph_tensor(fg, ci->inputs[2]);
        assert_int_equal(nb->bytes, 8);
        const float *c = af_graph_tensor(g, af_graph_find_tensor(g, "C"))->data;
        const float *b0 = bias ? af_graph_tensor(g, af_graph_find_tensor(g, "B"))->data : NULL;
        for (int o = 0; o < 2; o++) /* the new bias is B + C */
            assert_true(((const float *)nb->data)[o] == (b0 ? b0[o] : 0.0f) + c[o]);
        assert_int_equal(af_graph_find_tensor(fg, "C"), -1);
        assert_int_equal(af_graph_find_tensor(fg, "z"), -1);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

/* A MatMul with a fused bias and residual runs on oneDNN itself with the real kernels (not the
 * reference fallback): the primitive applies the bias, the sum and the eltwise post-ops. */
static void test_fuse_linear_runs_on_onednn(void **state)
{
    (void)state;
    af_executor_t *ex = make_exec("real");
    af_graph_t *g = linear();
    af_plan_t *p = plan(g, AF_FUSE_ON);
    af_session_t *s = NULL;
    af_error_t err;
    if (af_session_create(ex, p, NULL, &s, &err))
        fail_msg("session: %s", err.msg);
    for (int i = 0; i < 2; i++) {
        const char *k = af_session_node_kernel(
            s, af_graph_find_node(af_plan_graph(p), i ? "mm2" : "mm1"), NULL);
        assert_non_null(k);
        printf("%s runs on %s\n", i ? "mm2" : "mm1", k);
        if (strncmp(k, "onednn", 6) && strcmp(k, "real"))
            fail_msg("mm%d runs on %s, not oneDNN", i + 1, k);
    }
    af_session_destroy(s);
    af_plan_destroy(p);
    af_graph_destroy(g);
    af_executor_destroy(ex);
}

/* The budget's lower bound ("no schedule can go below") on a fused graph counts an in-place
 * output once: the fused residual Conv's output takes its sum input's bytes, so the bound is no
 * more than the arena a plan actually reaches, and a budget below the arena is refused naming a
 * bound under it. */
static void test_fuse_budget_bound_counts_in_place_once(void **state)
{
    (void)state;
    af_graph_t *g = residual(), *fg = NULL;
    assert_int_equal(af_plan_fuse(g, &fg, NULL, NULL), 0);
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.fuse = AF_FUSE_OFF;
    o.recompute = 1;
    af_plan_t *p = NULL;
    af_error_t err;
    assert_int_equal(af_plan_create(fg, &o, &p, &err), 0);
    uint64_t least = 0, bound = 0, arena = af_plan_report(p)->arena_bytes;
    assert_int_equal(af_plan_min_budget(fg, &o, &least, &bound, &err), 0);
    printf("fused residual: arena %llu, smallest budget %llu, bound %llu\n",
           (unsigned long long)arena, (unsigned long long)least, (unsigned long long)bound);
    assert_true(bound > 0);
    assert_true(bound <= least);
    assert_true(bound <= arena);
    o.budget = bound > 64 ? bound - 64 : 1;
    af_plan_t *q = NULL;
    assert_int_equal(af_plan_create(fg, &o, &q, &err), AF_EBUDGET);
    char want[64];
    snprintf(want, sizeof want, "go below %llu", (unsigned long long)bound);
    assert_non_null(strstr(err.msg, want));
    af_plan_destroy(p);
    af_graph_destroy(fg);
    af_graph_destroy(g);
}

/* A fused plan is restored from its order and offsets (a plan file, the daemon's model_plans):
 * af_plan_restore_counts gives the fused graph's counts, the ones the order and offsets have. */
static void test_fuse_restore_counts(void **state)
{
    (void)state;
    af_graph_t *g = linear();
    af_plan_t *p = plan(g, AF_FUSE_ON);
    const af_graph_t *fg = af_plan_graph(p);
    af_plan_opts_t o = *af_plan_opts(p);
    int32_t nt = 0, nn = 0;
    assert_int_equal(af_plan_restore_counts(g, &o, &nt, &nn, NULL), 0);
    assert_int_equal(nt, af_graph_tensor_count(fg));
    assert_int_equal(nn, af_graph_node_count(fg));
    assert_true(nn < af_graph_node_count(g));
    uint64_t *off = calloc((size_t)nt, sizeof *off);
    for (int32_t t = 0; t < nt; t++)
        off[t] = af_plan_tensor(p, t)->offset;
    af_plan_t *q = NULL;
    af_error_t err;
    if (af_plan_restore(g, &o, af_plan_order(p), off, &q, &err))
        fail_msg("restore: %s", err.msg);
    assert_int_equal(af_plan_report(q)->arena_bytes, af_plan_report(p)->arena_bytes);
    assert_int_equal(af_graph_node_count(af_plan_graph(q)), nn);
    o.fuse = AF_FUSE_OFF;
    assert_int_equal(af_plan_restore_counts(g, &o, &nt, &nn, NULL), 0);
    assert_int_equal(nn, af_graph_node_count(g));
    assert_int_equal(af_plan_restore_counts(NULL, &o, &nt, &nn, &err), AF_EINVAL);
    free(off);
    af_plan_destroy(q);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_fuse_outputs_equal_unfused_small(void **state)
{
    (void)state;
    const char *sets[] = {"reference", "real"};
    for (int k = 0; k < 2; k++) {
        af_executor_t *ex = make_exec(sets[k]);
        af_graph_t *rg = residual();
        char rw[64];
        snprintf(rw, sizeof rw, "residual (%s)", sets[k]);
        check_same(ex, rg, rw);
        af_graph_destroy(rg);
        af_graph_t *lg = linear();
        snprintf(rw, sizeof rw, "linear (%s)", sets[k]);
        check_same(ex, lg, rw);
        af_graph_destroy(lg);
        for (int bias = 0; bias < 2; bias++) {
            af_graph_t *cg = conv_add(bias);
            snprintf(rw, sizeof rw, "conv+add%s (%s)", bias ? " with bias" : "", sets[k]);
            check_same(ex, cg, rw);
            af_graph_destroy(cg);
        }
        for (int second = 0; second < 2; second++) {
            af_graph_t *g = conv_bn_chain(second, 0);
            char what[64];
            snprintf(what, sizeof what, "conv-bn-chain%s (%s)", second ? "+add" : "", sets[k]);
            check_same(ex, g, what);
            af_graph_destroy(g);
        }
        af_executor_destroy(ex);
    }
}

/* A copy of g whose constants carry deterministic data (BatchNormalization's packed [4, C]
 * parameters with positive scale and variance), weights scaled by 1/sqrt(fan-in). */
static af_graph_t *with_weights(const af_graph_t *g)
{
    af_graph_t *c = NULL;
    assert_int_equal(af_graph_create(&c), 0);
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        af_tensor_desc_t d = af_graph_tensor_desc(g, t);
        int32_t id;
        assert_int_equal(af_graph_add_tensor(c, &d, &id, NULL), 0);
        if (ti->kind != AF_TENSOR_CONSTANT || ti->dtype != AF_DTYPE_F32 || ti->bytes <= 0)
            continue;
        int64_t n = ti->bytes / 4, rows = ti->rank > 0 ? ti->shape[0] : 1;
        float *v = malloc((size_t)ti->bytes);
        int bn = ti->n_consumers > 0 &&
                 !strcmp(af_graph_node(g, ti->consumers[0])->op, "BatchNormalization");
        double scale = 1.0 / sqrt((double)(n / (rows > 0 ? rows : 1)) + 1);
        for (int64_t k = 0; k < n; k++) {
            double u = (double)((k * 37 + t * 11) % 97) / 97.0 - 0.5;
            int64_t row = bn ? k / (n / 4) : 0;
            v[k] = bn ? (float)(row == 0 || row == 3 ? 0.75 + 0.5 * (u + 0.5) : 0.2 * u)
                      : (float)(2.0 * u * scale);
        }
        assert_int_equal(af_graph_set_data(c, id, v, ti->bytes, AF_DATA_COPY, NULL), 0);
        free(v);
    }
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        const char *in[64], *out[16];
        assert_true(ni->n_inputs <= 64 && ni->n_outputs <= 16);
        for (int32_t k = 0; k < ni->n_inputs; k++)
            in[k] = af_graph_tensor(g, ni->inputs[k])->name;
        for (int32_t k = 0; k < ni->n_outputs; k++)
            out[k] = af_graph_tensor(g, ni->outputs[k])->name;
        af_node_desc_t d = {.name = ni->name,
                            .op = ni->op,
                            .inputs = in,
                            .n_inputs = ni->n_inputs,
                            .outputs = out,
                            .n_outputs = ni->n_outputs,
                            .cost = ni->cost,
                            .inplace = ni->inplace,
                            .n_inplace = ni->n_inplace};
        int32_t id;
        assert_int_equal(af_graph_add_node(c, &d, &id, NULL), 0);
        for (int32_t k = 0; k < ni->n_attrs; k++)
            assert_int_equal(af_graph_node_set_attr(c, id, &ni->attrs[k], NULL), 0);
    }
    assert_int_equal(af_graph_finalize(c, NULL), 0);
    return c;
}

static void test_fuse_zoo_real_kernels(void **state)
{
    (void)state;
    af_executor_t *ex = make_exec("real");
    const char *models[] = {"resnet50", "mobilenetv2"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        af_graph_t *z = NULL;
        af_error_t err;
        if (af_zoo_build(models[i], NULL, &z, &err))
            fail_msg("zoo %s: %s", models[i], err.msg);
        af_graph_t *g = with_weights(z);
        check_same(ex, g, models[i]);
        af_graph_destroy(g);
        af_graph_destroy(z);
    }
    af_executor_destroy(ex);
}

/* An f32 constant of n pseudo-random values (a fixed LCG): uniform in [lo, hi). */
static void random_const(af_graph_t *g, const char *name, int rank, const int64_t *shape, double lo,
                         double hi, uint32_t *seed)
{
    af_tensor_desc_t d = {.name = name,
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .dtype = AF_DTYPE_F32,
                          .rank = rank,
                          .shape = shape,
                          .kind = AF_TENSOR_CONSTANT};
    int32_t id;
    assert_int_equal(af_graph_add_tensor(g, &d, &id, NULL), 0);
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    float *v = malloc((size_t)n * 4);
    for (int64_t k = 0; k < n; k++) {
        *seed = *seed * 1664525u + 1013904223u;
        v[k] = (float)(lo + (hi - lo) * (double)(*seed >> 8) / 16777216.0);
    }
    assert_int_equal(af_graph_set_data(g, id, v, n * 4, AF_DATA_COPY, NULL), 0);
    free(v);
}

/* Conv `name` (3x3, pads 1, 16 -> 16 channels, bias when `bias`) of `in`, then a
 * BatchNormalization with random statistics: writes `out`. */
static void conv_bn(af_graph_t *g, const char *name, const char *in, int bias, const char *out,
                    uint32_t *seed)
{
    int64_t ws[4] = {16, 16, 3, 3}, cs[1] = {16}, ys[4] = {1, 16, 10, 10};
    char w[32], b[32], c[32], p[4][32];
    snprintf(w, sizeof w, "%s.W", name);
    snprintf(b, sizeof b, "%s.B", name);
    snprintf(c, sizeof c, "%s.y", name);
    random_const(g, w, 4, ws, -1.0 / 12, 1.0 / 12, seed); /* ~1/sqrt(fan-in 144) */
    if (bias)
        random_const(g, b, 1, cs, -0.1, 0.1, seed);
    static const char *const pn[4] = {"scale", "bias", "mean", "var"};
    static const double lo[4] = {0.3, -0.3, -0.2, 0.05}, hi[4] = {1.7, 0.3, 0.2, 1.5};
    for (int i = 0; i < 4; i++) {
        snprintf(p[i], sizeof p[i], "%s.%s", name, pn[i]);
        random_const(g, p[i], 1, cs, lo[i], hi[i], seed);
    }
    tensor(g, c, AF_TENSOR_INTERMEDIATE, 4, ys);
    const char *ci[3] = {in, w, b}, *bi[5] = {c, p[0], p[1], p[2], p[3]};
    int64_t pads[4] = {1, 1, 1, 1};
    af_attr_t pa = {.name = "pads", .type = AF_ATTR_INTS, .ints = pads, .n = 4};
    const char *cp = c;
    af_node_desc_t d = {.name = name,
                        .op = "Conv",
                        .inputs = ci,
                        .n_inputs = bias ? 3 : 2,
                        .outputs = &cp,
                        .n_outputs = 1};
    int32_t id;
    assert_int_equal(af_graph_add_node(g, &d, &id, NULL), 0);
    assert_int_equal(af_graph_node_set_attr(g, id, &pa, NULL), 0);
    char bn[40];
    snprintf(bn, sizeof bn, "%s.bn", name);
    node(g, bn, "BatchNormalization", bi, 5, out);
}

/* x[1,16,10,10] -> Conv (no bias) -> BN -> Relu -> a; a -> Conv (bias) -> BN -> Add(., x) ->
 * Relu -> out: PP-OCR's and ResNet's blocks, with random weights; both fold whole (the second
 * with the residual as a sum after the affine). */
static af_graph_t *conv_bn_block(void)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t xs[4] = {1, 16, 10, 10};
    uint32_t seed = 12345;
    tensor(g, "x", AF_TENSOR_INPUT, 4, xs);
    const char *names[] = {"n1", "a", "n2", "s", "out"};
    for (int i = 0; i < 5; i++)
        tensor(g, names[i], i == 4 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE, 4, xs);
    conv_bn(g, "c1", "x", 0, "n1", &seed);
    const char *r1[1] = {"n1"}, *ai[2] = {"n2", "x"}, *r2[1] = {"s"};
    node(g, "relu1", "Relu", r1, 1, "a");
    conv_bn(g, "c2", "a", 1, "n2", &seed);
    node(g, "add", "Add", ai, 2, "s");
    node(g, "relu2", "Relu", r2, 1, "out");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

/* Every node of p runs on oneDNN with the real kernels (the unfused BatchNormalization too, and
 * a Conv with the folded affine and the residual sum: oneDNN's jit kernels below AVX-512 take a
 * sum post-op only first, so these run without post-ops, the C loop applying them). */
static void all_on_onednn(af_executor_t *ex, const af_plan_t *p)
{
    af_session_t *s = NULL;
    af_error_t err;
    if (af_session_create(ex, p, NULL, &s, &err))
        fail_msg("session: %s", err.msg);
    const af_graph_t *g = af_plan_graph(p);
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        const char *k = af_session_node_kernel(s, v, NULL);
        printf("  %s (%s) runs on %s\n", af_graph_node(g, v)->name, af_graph_node(g, v)->op, k);
        if (!k || strncmp(k, "onednn", 6))
            fail_msg("%s runs on %s, not oneDNN", af_graph_node(g, v)->name, k ? k : "?");
    }
    af_session_destroy(s);
}

/* Folding BatchNormalization as the affine after the Conv gives the unfused plan's floats bit
 * for bit on both kernel sets (folding it into the weights did not: ~1e-7 relative here, 4e-5
 * on PP-OCRv4 det). */
static void test_fuse_bn_bit_identical(void **state)
{
    (void)state;
    af_graph_t *g = conv_bn_block();
    af_plan_t *p0 = plan(g, AF_FUSE_OFF), *p1 = plan(g, AF_FUSE_ON);
    assert_int_equal(af_plan_report(p1)->bn_folded, 2);
    assert_int_equal(af_graph_node_count(af_plan_graph(p1)), 2);
    const char *sets[] = {"reference", "real"};
    float *first = NULL;
    for (int k = 0; k < 2; k++) {
        af_executor_t *ex = make_exec(sets[k]);
        for (int i = 0; k && i < 2; i++)
            all_on_onednn(ex, i ? p1 : p0);
        size_t n0, n1;
        float *a = run_once(ex, p0, 0, &n0), *b = run_once(ex, p1, 0, &n1);
        assert_int_equal(n0, n1);
        size_t diff = 0, nz = 0;
        for (size_t e = 0; e < n0; e++) {
            diff += memcmp(&a[e], &b[e], 4) != 0;
            nz += a[e] != 0;
        }
        printf("conv-bn block (%s): %zu of %zu values differ (%zu nonzero)\n", sets[k], diff, n0,
               nz);
        assert_true(nz > n0 / 4);
        assert_int_equal(diff, 0);
        if (first) /* the two kernel sets agree closely too (not bit for bit: other sums) */
            for (size_t e = 0; e < n0; e++)
                assert_true(fabs(first[e] - a[e]) <= 1e-4 * (1 + fabs(first[e])));
        free(first);
        first = a;
        free(b);
        af_executor_destroy(ex);
    }
    free(first);
    af_plan_destroy(p0);
    af_plan_destroy(p1);
    af_graph_destroy(g);
}

/* fuse_bn = weights: the old fold, s into the weights (new constants W', B'), no affine inputs;
 * close to the unfused plan but not bit for bit. */
static void test_fuse_bn_weights_option(void **state)
{
    (void)state;
    af_graph_t *g = conv_bn_block();
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    assert_int_equal(o.fuse_bn, AF_FUSE_BN_AFFINE);
    assert_int_equal(af_plan_opts_set(&o, "fuse", "on", NULL), 0);
    assert_int_equal(af_plan_opts_set(&o, "fuse_bn", "weights", NULL), 0);
    assert_int_not_equal(af_plan_opts_set(&o, "fuse_bn", "both", NULL), 0);
    af_plan_t *p1 = NULL, *p0 = plan(g, AF_FUSE_OFF);
    assert_int_equal(af_plan_create(g, &o, &p1, NULL), 0);
    const af_graph_t *fg = af_plan_graph(p1);
    assert_int_equal(af_plan_report(p1)->bn_folded, 2);
    int32_t c1 = af_graph_find_node(fg, "c1");
    assert_true(c1 >= 0);
    assert_null(af_graph_node_attr(fg, c1, "fused_affine"));
    assert_int_equal(af_graph_node(fg, c1)->n_inputs, 3);
    assert_string_equal(af_graph_tensor(fg, af_graph_node(fg, c1)->inputs[1])->name, "c1.W#bn.c1");
    af_executor_t *ex = make_exec("reference");
    size_t n0, n1;
    float *a = run_once(ex, p0, 0, &n0), *b = run_once(ex, p1, 0, &n1);
    assert_int_equal(n0, n1);
    double big = 0, worst = 0;
    for (size_t e = 0; e < n0; e++) {
        big = fabs(a[e]) > big ? fabs(a[e]) : big;
        worst = fabs(a[e] - b[e]) > worst ? fabs(a[e] - b[e]) : worst;
    }
    printf("fuse_bn = weights: worst difference %.3g of %.4g\n", worst, big);
    assert_true(big > 0 && worst <= TOL * big);
    free(a);
    free(b);
    af_executor_destroy(ex);
    af_plan_destroy(p0);
    af_plan_destroy(p1);
    af_graph_destroy(g);
}

static void test_fuse_bad_option_and_args(void **state)
{
    (void)state;
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    assert_int_equal(o.fuse, AF_FUSE_AUTO);
    af_error_t err;
    assert_int_equal(af_plan_opts_set(&o, "fuse", "on", &err), 0);
    assert_int_equal(o.fuse, AF_FUSE_ON);
    assert_int_equal(af_plan_opts_set(&o, "fuse", "sometimes", &err), AF_EINVAL);
    /* fuse = auto: on for the real kernels, off for the others; explicit values stay */
    const char *sets[] = {"real", "onednn", "verify", "reference", "empty", NULL};
    for (int i = 0; i < 6; i++) {
        af_plan_opts_t r;
        af_plan_opts_init(&r);
        af_plan_opts_resolve(&r, sets[i]);
        assert_int_equal(r.fuse, i < 2 ? AF_FUSE_ON : AF_FUSE_OFF);
        r.fuse = i < 2 ? AF_FUSE_OFF : AF_FUSE_ON;
        af_plan_opts_resolve(&r, sets[i]);
        assert_int_equal(r.fuse, i < 2 ? AF_FUSE_OFF : AF_FUSE_ON);
    }
    assert_non_null(strstr(err.msg, "fuse"));
    af_graph_t *out = NULL;
    assert_int_equal(af_plan_fuse(NULL, &out, NULL, &err), AF_EINVAL);
    assert_null(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuse_intermediates_leave_the_plan),
        cmocka_unit_test(test_fuse_second_consumer_or_output_stays),
        cmocka_unit_test(test_fuse_residual_in_place),
        cmocka_unit_test(test_fuse_linear_bias_and_residual),
        cmocka_unit_test(test_fuse_linear_runs_on_onednn),
        cmocka_unit_test(test_fuse_budget_bound_counts_in_place_once),
        cmocka_unit_test(test_fuse_restore_counts),
        cmocka_unit_test(test_fuse_outputs_equal_unfused_small),
        cmocka_unit_test(test_fuse_zoo_real_kernels),
        cmocka_unit_test(test_fuse_bn_bit_identical),
        cmocka_unit_test(test_fuse_bn_weights_option),
        cmocka_unit_test(test_fuse_bad_option_and_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
