/*
 * Tests of the ONNX importer (graph/onnx*.c).
 *
 * Small models are written in the test itself with a minimal protobuf encoder (field numbers
 * from onnx.proto), so each test states exactly the graph it feeds: shape-subgraph folding,
 * views as aliases, symbolic dims set by the user, If inlining, Loop rejection, unknown ops
 * becoming dynamic, clear errors naming op and node. Real models come from Debian's
 * libonnx-testdata when it is installed (skipped otherwise): they import, and one is planned
 * and verified. The fuzz-style test feeds truncated and bit-flipped copies of a real model
 * (fixed-seed PRNG, seed printed on failure): every run returns 0 or a clean error with a
 * message; under ASan it also proves there is no leak or bad read. The OOM test fails
 * allocation n = 0, 1, ... and checks that every failure is AF_ENOMEM with nothing leaked.
 */
#include "arenaflow/executor.h"
#include "arenaflow/onnx.h"
#include "arenaflow/plan.h"
#include "tests/onnx_testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- models ------------------------------------------------------------------------------ */

/*
 * x[N,3,4,4] -> Relu -> r; Shape(r) -> Gather([0]) -> Squeeze -> Unsqueeze -> Concat([b, -1])
 * -> Reshape(r) -> y -> Sigmoid -> z.
 * With N given, the shape chain folds and y is a static [N,48] view of r.
 */
static pb_t model_shape_chain(void)
{
    pb_t g = {0};
    int64_t xd[] = {-1, 3, 4, 4}, zero = 0, minus1 = -1;
    pb_t idx = tensor_i64(NULL, 1, &zero, 0); /* [0]: Gather gives [N], Squeeze makes N */
    attr_t value = {'t', "value", .sub = &idx}, axis0 = {'i', "axis", .i = 0};
    add_input(&g, "x", F32, 4, xd, "N");
    add_i64_init(&g, "minus1", 1, &minus1);
    add_node(&g, "Relu", "relu", "x", "r", NULL, 0, NULL);
    add_node(&g, "Shape", "shape", "r", "s", NULL, 0, NULL);
    add_node(&g, "Constant", "const0", "", "i0", &value, 1, NULL);
    add_node(&g, "Gather", "gather", "s,i0", "b", &axis0, 1, NULL);
    add_node(&g, "Squeeze", "sq", "b", "b0", NULL, 0, NULL);
    add_node(&g, "Unsqueeze", "unsq", "b0", "b1", &(attr_t){'I', "axes", .ints = &zero, .n = 1}, 1,
             NULL);
    add_node(&g, "Concat", "concat", "b1,minus1", "tgt", &axis0, 1, NULL);
    add_node(&g, "Reshape", "reshape", "r,tgt", "y", NULL, 0, NULL);
    add_node(&g, "Sigmoid", "sig", "y", "z", NULL, 0, NULL);
    add_output(&g, "z", F32);
    return make_model(&g);
}

static void test_onnx_fold_shape_chain(void **state)
{
    (void)state;
    pb_t m = model_shape_chain();
    const char *in[] = {"x=2,3,4,4"};
    af_graph_t *g;
    af_error_t err;
    int rc = load(&m, in, 1, &g, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    /* Shape, Constant, Gather, (Un)Squeeze, Concat fold away: Relu, Reshape, Sigmoid stay. */
    assert_int_equal(af_graph_node_count(g), 3);
    assert_int_equal(af_graph_find_node(g, "gather"), -1);
    const af_tensor_info_t *y = tensor(g, "y"), *tgt = tensor(g, "tgt");
    assert_shape(y, 2, (int64_t)2, (int64_t)48);
    assert_int_equal(y->bytes, 2 * 48 * 4);
    assert_int_equal(y->alias_of, af_graph_find_tensor(g, "r")); /* Reshape is a view */
    assert_int_equal(tgt->kind, AF_TENSOR_CONSTANT);
    assert_shape(tgt, 1, (int64_t)2);
    assert_int_equal(tensor(g, "x")->kind, AF_TENSOR_INPUT);
    assert_int_equal(tensor(g, "z")->kind, AF_TENSOR_OUTPUT);
    assert_int_equal(tensor(g, "z")->bytes, 2 * 48 * 4);
    af_graph_destroy(g);

    /* The symbolic dim can be set by its name too, with the same result. */
    const char *byparam[] = {"N=5"};
    assert_int_equal(load(&m, byparam, 1, &g, &err), 0);
    assert_shape(tensor(g, "y"), 2, (int64_t)5, (int64_t)48);
    af_graph_destroy(g);
    free(m.b);
}

/* Makes the model of g, imports it without --input dims and fails the test on an error. */
static af_graph_t *load_graph_ok(pb_t *g)
{
    pb_t m = make_model(g);
    af_graph_t *gr;
    af_error_t err;
    int rc = load(&m, NULL, 0, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    free(m.b);
    assert_int_equal(rc, 0);
    return gr;
}

/*
 * x[2,3,4] -> Reshape(x, Reshape(Transpose(Unsqueeze([2, 12], axes 1)), [-1])) -> y -> Sigmoid.
 * The target goes through a Transpose of known values (silero VAD v5 computes its STFT pads
 * so): it folds, and y is a static [2,12] view.
 */
static void test_onnx_fold_transpose(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {2, 3, 4}, dims[] = {2, 12}, one = 1, minus1 = -1, perm[] = {1, 0};
    pb_t tv = tensor_i64(NULL, 2, dims, 0);
    attr_t value = {'t', "value", .sub = &tv};
    add_input(&g, "x", F32, 3, xd, NULL);
    add_i64_init(&g, "minus1", 1, &minus1);
    add_node(&g, "Constant", "c", "", "c0", &value, 1, NULL);
    add_node(&g, "Unsqueeze", "u", "c0", "c1", &(attr_t){'I', "axes", .ints = &one, .n = 1}, 1,
             NULL);
    add_node(&g, "Transpose", "t", "c1", "c2", &(attr_t){'I', "perm", .ints = perm, .n = 2}, 1,
             NULL);
    add_node(&g, "Reshape", "flat", "c2,minus1", "tgt", NULL, 0, NULL);
    add_node(&g, "Reshape", "reshape", "x,tgt", "y", NULL, 0, NULL);
    add_node(&g, "Sigmoid", "sig", "y", "z", NULL, 0, NULL);
    add_output(&g, "z", F32);
    af_graph_t *gr = load_graph_ok(&g);
    assert_int_equal(af_graph_find_node(gr, "t"), -1); /* folded */
    assert_shape(tensor(gr, "y"), 2, (int64_t)2, (int64_t)12);
    assert_shape(tensor(gr, "z"), 2, (int64_t)2, (int64_t)12);
    af_graph_destroy(gr);
}

/*
 * Pad(x[1,2,3,3], pads) with pads computed from constants as MLSD's converter emits them:
 * P = Reshape([0,0,1,2, 0,0,3,0], [2,4]); a, b = Split(P, axis 1, [2,2]); pads =
 * Reshape(Concat(a, b, axis 1), [-1]) = [0,0,1,2,0,0,3,0]. The Split folds with the rows of
 * each output taken from every row of P (not a contiguous run), so y is a static [1,2,7,5].
 */
static void test_onnx_fold_split(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {1, 2, 3, 3}, pv[] = {0, 0, 1, 2, 0, 0, 3, 0}, pd[] = {2, 4}, halves[] = {2, 2};
    int64_t minus1 = -1, one = 1;
    add_input(&g, "x", F32, 4, xd, NULL);
    add_i64_init(&g, "pv", 8, pv);
    add_i64_init(&g, "pd", 2, pd);
    add_i64_init(&g, "halves", 2, halves);
    add_i64_init(&g, "minus1", 1, &minus1);
    add_node(&g, "Reshape", "p", "pv,pd", "P", NULL, 0, NULL);
    add_node(&g, "Split", "s", "P,halves", "a,b", &(attr_t){'i', "axis", .i = one}, 1, NULL);
    add_node(&g, "Concat", "cat", "a,b", "ab", &(attr_t){'i', "axis", .i = one}, 1, NULL);
    add_node(&g, "Reshape", "flat", "ab,minus1", "pads", NULL, 0, NULL);
    add_node(&g, "Pad", "pad", "x,pads", "y", NULL, 0, NULL);
    add_node(&g, "Relu", "relu", "y", "z", NULL, 0, NULL);
    add_output(&g, "z", F32);
    af_graph_t *gr = load_graph_ok(&g);
    assert_int_equal(af_graph_find_node(gr, "s"), -1); /* folded */
    assert_shape(tensor(gr, "y"), 4, (int64_t)1, (int64_t)2, (int64_t)7, (int64_t)5);
    af_graph_destroy(gr);
}

/* f32 initializer `name` [rows, cols] holding 0, 1, 2... (raw_data). */
static void add_iota_weight(pb_t *g, const char *name, int64_t rows, int64_t cols)
{
    pb_t t = {0};
    size_t n = (size_t)(rows * cols);
    pb_int(&t, 1, rows);
    pb_int(&t, 1, cols);
    pb_int(&t, 2, F32);
    pb_str(&t, 8, name);
    float *v = malloc(n * 4);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)i;
    pb_bytes(&t, 9, v, n * 4);
    free(v);
    pb_msg(g, 5, &t);
}

/*
 * Weights assembled from constants, too large for the value fold (silero VAD v5 builds its
 * LSTM weights so): W[4,3000] -> Slice rows 1..2 -> s, Slice row 0 -> r, Concat(s, r) -> c
 * [3,3000] -> Gather rows [2, 0] -> g -> Transpose -> t [3000,2] -> MatMul(x, t). Every step
 * folds at import into bytes: only t is emitted, with t[j] = (W[0][j], W[1][j]). A Gather that
 * would repeat rows past the size of its input (w2[9,3000] from W) is not folded.
 */
static pb_t graph_fold_bytes(void)
{
    pb_t g = {0};
    int64_t xd[] = {1, 3000}, one = 1, three = 3, zero = 0, rows[] = {2, 0},
            rep[] = {0, 1, 2, 3, 0, 1, 2, 3, 0};
    add_input(&g, "x", F32, 2, xd, NULL);
    add_iota_weight(&g, "W", 4, 3000);
    add_i64_init(&g, "zero", 1, &zero);
    add_i64_init(&g, "one", 1, &one);
    add_i64_init(&g, "three", 1, &three);
    add_i64_init(&g, "rows", 2, rows);
    add_i64_init(&g, "rep", 9, rep);
    add_node(&g, "Slice", "s", "W,one,three,zero", "s", NULL, 0, NULL);
    add_node(&g, "Slice", "r", "W,zero,one,zero", "r", NULL, 0, NULL);
    add_node(&g, "Concat", "c", "s,r", "c", &(attr_t){'i', "axis", .i = 0}, 1, NULL);
    add_node(&g, "Gather", "g", "c,rows", "g", &(attr_t){'i', "axis", .i = 0}, 1, NULL);
    add_node(&g, "Transpose", "t", "g", "t", NULL, 0, NULL);
    add_node(&g, "MatMul", "mm", "x,t", "y", NULL, 0, NULL);
    add_node(&g, "Gather", "big", "W,rep", "w2", &(attr_t){'i', "axis", .i = 0}, 1, NULL);
    add_node(&g, "Transpose", "t2", "w2", "t2", NULL, 0, NULL);
    add_node(&g, "MatMul", "mm2", "x,t2", "y2", NULL, 0, NULL);
    add_output(&g, "y", F32);
    add_output(&g, "y2", F32);
    return g;
}

static void test_onnx_fold_bytes(void **state)
{
    (void)state;
    pb_t g = graph_fold_bytes();
    af_graph_t *gr = load_graph_ok(&g);
    const char *gone[] = {"s", "r", "c", "g", "t"};
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        assert_int_equal(af_graph_find_node(gr, gone[i]), -1);
    assert_true(af_graph_find_node(gr, "big") >= 0); /* would grow: left to run time */
    assert_true(af_graph_find_node(gr, "t2") >= 0);
    assert_int_equal(af_graph_find_tensor(gr, "c"), -1);
    const af_tensor_info_t *t = tensor(gr, "t");
    assert_shape(t, 2, (int64_t)3000, (int64_t)2);
    assert_int_equal(t->kind, AF_TENSOR_CONSTANT);
    assert_non_null(t->data);
    const float *d = t->data;
    for (int j = 0; j < 3000; j += 499) {
        assert_true(d[2 * j] == (float)j);
        assert_true(d[2 * j + 1] == (float)(3000 + j));
    }
    af_graph_destroy(gr);
}

/*
 * float16 weights cast to float at run time (fp16-weight exports): W f16 [8, 1024] (past the
 * value fold's 4096 elements) -> Cast(to float) -> MatMul(x, w). The Cast folds at import into a
 * float constant holding exactly the f16 values; the byte fold's no-growth rule does not stop it.
 */
static void test_onnx_fold_cast_f16(void **state)
{
    (void)state;
    pb_t g = {0}, t = {0};
    int64_t xd[] = {1, 8};
    add_input(&g, "x", F32, 2, xd, NULL);
    pb_int(&t, 1, 8);
    pb_int(&t, 1, 1024);
    pb_int(&t, 2, 10); /* FLOAT16 */
    pb_str(&t, 8, "W");
    uint16_t h[8 * 1024];
    for (size_t i = 0; i < 8 * 1024; i++)
        h[i] = (uint16_t)(0x3c00 + i % 1024); /* 1 + (i % 1024) / 1024 */
    pb_bytes(&t, 9, h, sizeof(h));
    pb_msg(&g, 5, &t);
    add_node(&g, "Cast", "cast", "W", "w", &(attr_t){'i', "to", .i = 1}, 1, NULL);
    add_node(&g, "MatMul", "mm", "x,w", "y", NULL, 0, NULL);
    add_output(&g, "y", F32);
    af_graph_t *gr = load_graph_ok(&g);
    assert_int_equal(af_graph_find_node(gr, "cast"), -1);
    const af_tensor_info_t *w = tensor(gr, "w");
    assert_int_equal(w->kind, AF_TENSOR_CONSTANT);
    assert_int_equal(w->dtype, AF_DTYPE_F32);
    assert_non_null(w->data);
    const float *d = w->data;
    for (size_t i = 0; i < 8 * 1024; i += 37)
        assert_true(d[i] == 1.0f + (float)(i % 1024) / 1024.0f);
    af_graph_destroy(gr);
}

static void test_onnx_missing_dims_error(void **state)
{
    (void)state;
    pb_t m = model_shape_chain();
    af_graph_t *g;
    af_error_t err;
    assert_int_equal(load(&m, NULL, 0, &g, &err), AF_EINVAL);
    assert_null(g);
    assert_non_null(strstr(err.msg, "input 'x'"));
    assert_non_null(strstr(err.msg, "N"));

    /* With allow_dynamic the graph imports and everything downstream of x is dynamic. */
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.allow_dynamic = 1;
    assert_int_equal(af_onnx_load_mem(m.b, m.n, &o, &g, &err), 0);
    assert_int_equal(tensor(g, "y")->bytes, AF_BYTES_DYNAMIC);
    assert_int_equal(tensor(g, "r")->shape[1], 3); /* what is known stays known */
    assert_int_equal(tensor(g, "y")->rank, 2);     /* [N, -1]: the -1 depends on N */
    assert_int_equal(tensor(g, "y")->shape[1], -1);
    af_graph_destroy(g);

    const char *bad[] = {"nosuch=1,2"}, *rank[] = {"x=1,2"}, *syntax[] = {"x=1,a"};
    assert_int_equal(load(&m, bad, 1, &g, &err), AF_ENOENT);
    assert_non_null(strstr(err.msg, "nosuch"));
    assert_int_equal(load(&m, rank, 1, &g, &err), AF_ESHAPE);
    assert_int_equal(load(&m, syntax, 1, &g, &err), AF_EINVAL);
    free(m.b);
}

/* x[1,4,8,8] -> Conv(w[6,4,3,3], strides 2, pads 1) -> MaxPool(2) -> Gemm after Flatten. */
static void test_onnx_conv_pool_gemm(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {1, 4, 8, 8}, wd[] = {6, 4, 3, 3}, fd[] = {10, 24}, s2[] = {2, 2},
            p1[] = {1, 1, 1, 1}, k2[] = {2, 2};
    add_input(&g, "x", F32, 4, xd, NULL);
    add_weight(&g, "w", 4, wd);
    add_weight(&g, "fc", 2, fd);
    attr_t conv[] = {{'I', "strides", .ints = s2, .n = 2}, {'I', "pads", .ints = p1, .n = 4}};
    add_node(&g, "Conv", "conv", "x,w", "c", conv, 2, NULL);
    attr_t pool[] = {{'I', "kernel_shape", .ints = k2, .n = 2},
                     {'I', "strides", .ints = s2, .n = 2}};
    add_node(&g, "MaxPool", "pool", "c", "p", pool, 2, NULL);
    add_node(&g, "Flatten", "flat", "p", "f", NULL, 0, NULL);
    add_node(&g, "Gemm", "fc", "f,fc", "y", &(attr_t){'i', "transB", .i = 1}, 1, NULL);
    add_output(&g, "y", F32);
    af_graph_t *gr = load_graph_ok(&g);
    assert_shape(tensor(gr, "c"), 4, (int64_t)1, (int64_t)6, (int64_t)4, (int64_t)4);
    assert_shape(tensor(gr, "p"), 4, (int64_t)1, (int64_t)6, (int64_t)2, (int64_t)2);
    assert_shape(tensor(gr, "f"), 2, (int64_t)1, (int64_t)24);
    assert_shape(tensor(gr, "y"), 2, (int64_t)1, (int64_t)10);
    assert_int_equal(tensor(gr, "w")->kind, AF_TENSOR_CONSTANT);
    assert_int_equal(tensor(gr, "f")->alias_of, af_graph_find_tensor(gr, "p"));
    /* Cost estimate in FLOPs: 2 x 96 outputs x (4 x 3 x 3) for the Conv, 2 x 10 x 24 for Gemm. */
    assert_true(af_graph_node(gr, af_graph_find_node(gr, "conv"))->cost == 2.0 * 96 * 36);
    assert_true(af_graph_node(gr, af_graph_find_node(gr, "fc"))->cost == 2.0 * 10 * 24);
    /* Attributes are carried over. */
    const af_attr_t *st = af_graph_node_attr(gr, af_graph_find_node(gr, "conv"), "strides");
    assert_non_null(st);
    assert_int_equal(st->type, AF_ATTR_INTS);
    assert_int_equal(st->n, 2);
    assert_int_equal(st->ints[1], 2);
    af_graph_destroy(gr);
}

static void test_onnx_broadcast_error_names_node(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t ad[] = {2, 3}, bd[] = {4};
    add_input(&g, "a", F32, 2, ad, NULL);
    add_input(&g, "b", F32, 1, bd, NULL);
    add_node(&g, "Add", "the_add", "a,b", "y", NULL, 0, NULL);
    add_output(&g, "y", F32);
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    assert_int_equal(load(&m, NULL, 0, &gr, &err), AF_ESHAPE);
    assert_null(gr);
    assert_non_null(strstr(err.msg, "Add"));
    assert_non_null(strstr(err.msg, "the_add"));
    free(m.b);
}

/* If on a constant (cond 0/1) or run-time condition (cond 2: an input, 3: Not of an input); Loop
 * is rejected by name. */
static pb_t model_control(const char *op, int cond)
{
    pb_t g = {0}, tg = {0}, eg = {0};
    int64_t xd[] = {2, 5}, c = cond;
    add_node(&tg, "Relu", "then_relu", "x", "t_out", NULL, 0, NULL);
    add_output(&tg, "t_out", F32);
    add_node(&eg, "Sigmoid", "else_sig", "x", "e_out", NULL, 0, NULL);
    add_output(&eg, "e_out", F32);
    attr_t br[] = {{'g', "then_branch", .sub = &tg}, {'g', "else_branch", .sub = &eg}};
    add_input(&g, "x", F32, 2, xd, NULL);
    if (cond == 2) { /* condition is a graph input */
        add_input(&g, "cond", BOOL, 0, NULL, NULL);
    } else if (cond == 3) { /* condition computed from one: Not(cin) */
        add_input(&g, "cin", BOOL, 0, NULL, NULL);
        add_node(&g, "Not", "not", "cin", "cond", NULL, 0, NULL);
    } else {
        pb_t ct = tensor_i64(NULL, 1, &c, 1);
        add_node(&g, "Constant", "cond_c", "", "cond", &(attr_t){'t', "value", .sub = &ct}, 1,
                 NULL);
    }
    add_node(&g, op, "ctl", strcmp(op, "If") ? "-,cond" : "cond", "y", br, 2, NULL);
    add_node(&g, "Neg", "neg", "y", "z", NULL, 0, NULL);
    add_output(&g, "z", F32);
    return make_model(&g);
}

static void test_onnx_if_inlined_loop_rejected(void **state)
{
    (void)state;
    af_graph_t *gr;
    af_error_t err;
    for (int cond = 0; cond <= 1; cond++) {
        pb_t m = model_control("If", cond);
        int rc = load(&m, NULL, 0, &gr, &err);
        if (rc)
            print_error("%s\n", err.msg);
        assert_int_equal(rc, 0);
        for (int32_t k = 0; k < af_graph_node_count(gr); k++) /* no If node left */
            assert_string_not_equal(af_graph_node(gr, k)->op, "If");
        assert_true(af_graph_find_node(gr, cond ? "then_relu" : "else_sig") >= 0);
        assert_int_equal(af_graph_find_node(gr, cond ? "else_sig" : "then_relu"), -1);
        assert_shape(tensor(gr, "z"), 2, (int64_t)2, (int64_t)5);
        af_graph_destroy(gr);
        free(m.b);
    }
    /* A condition only known at run time: both branches are imported, the If node selects. */
    pb_t m = model_control("If", 2);
    int rc = load(&m, NULL, 0, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    int32_t ifn = af_graph_find_node(gr, "ctl");
    assert_true(ifn >= 0);
    assert_string_equal(af_graph_node(gr, ifn)->op, "If");
    assert_int_equal(af_graph_node(gr, ifn)->n_inputs, 3); /* cond, then out, else out */
    assert_true(af_graph_find_node(gr, "then_relu") >= 0);
    assert_true(af_graph_find_node(gr, "else_sig") >= 0);
    assert_shape(tensor(gr, "y"), 2, (int64_t)2, (int64_t)5); /* both branches agree */
    af_plan_t *p = NULL;
    assert_int_equal(af_plan_create(gr, NULL, &p, &err), 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    af_plan_destroy(p);
    af_graph_destroy(gr);
    free(m.b);

    m = model_control("Loop", 1);
    assert_int_equal(load(&m, NULL, 0, &gr, &err), AF_ENOTSUP);
    assert_null(gr);
    assert_non_null(strstr(err.msg, "Loop"));
    assert_non_null(strstr(err.msg, "ctl"));

    /* opaque_control_flow: one Loop node that also reads x (its body does), dynamic output. */
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.opaque_control_flow = 1;
    rc = af_onnx_load_mem(m.b, m.n, &o, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    const af_node_info_t *loop = af_graph_node(gr, af_graph_find_node(gr, "ctl"));
    assert_string_equal(loop->op, "Loop");
    int reads_x = 0;
    for (int32_t i = 0; i < loop->n_inputs; i++)
        reads_x |= loop->inputs[i] == af_graph_find_tensor(gr, "x");
    assert_true(reads_x);
    assert_int_equal(tensor(gr, "y")->bytes, AF_BYTES_DYNAMIC);
    assert_int_equal(af_plan_create(gr, NULL, &p, &err), 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    af_plan_destroy(p);
    af_graph_destroy(gr);
    free(m.b);
}

/* Counts the kernel calls of the two branch nodes of model_control and notes which branch
 * outputs the If node gets as NULL (observe hook). */
static int count_branches(void *user, const af_kernel_args_t *a)
{
    int *n = user; /* only the matching node writes its counter: the workers call this for
                    * every node at once, and `n[0] += 0` from another node would race */
    if (!strcmp(a->info->name, "then_relu"))
        n[0]++;
    if (!strcmp(a->info->name, "else_sig"))
        n[1]++;
    if (!strcmp(a->info->name, "ctl")) /* the If: which branch inputs have no value */
        n[2] = (a->inputs[1] == NULL) | (a->inputs[2] == NULL) << 1;
    return 0;
}

/* Runs model_control(If, variant) on kernel set `set` for 6 rounds with a flipping condition
 * input; the output and the branch calls are checked each round. */
static void run_taken_branch(af_plan_t *p, const char *cin, int variant, const char *set,
                             int verify)
{
    const af_graph_t *gr = af_plan_graph(p);
    int xfirst = af_graph_find_tensor(gr, "x") < af_graph_find_tensor(gr, cin);
    float x[10], z[10];
    for (int i = 0; i < 10; i++)
        x[i] = (float)(i - 4) * 0.75f;
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 2;
    o.kernels = set;
    o.verify = verify;
    af_executor_t *ex;
    af_error_t err;
    assert_int_equal(af_executor_create(&o, &ex, &err), 0);
    int calls[3] = {0, 0, 0};
    af_session_opts_t so = {.observe = count_branches, .observe_user = calls};
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
    for (int round = 0; round < 6; round++) {
        uint8_t in_cond = (uint8_t)((round * 7 + verify) % 3 == 0);
        int cond = variant == 3 ? !in_cond : in_cond;
        af_buffer_t in[2] = {{x, sizeof x}, {&in_cond, 1}}, out = {z, sizeof z};
        if (!xfirst)
            in[0] = (af_buffer_t){&in_cond, 1}, in[1] = (af_buffer_t){x, sizeof x};
        int before = calls[cond], rc = af_session_run(s, in, &out, &err);
        if (rc)
            print_error("%s, verify %d: %s\n", set, verify, err.msg);
        assert_int_equal(rc, 0);
        /* the branch not taken never ran (the verify set's Not writes a pattern: one branch) */
        if (variant == 2 || strcmp(set, "verify")) {
            assert_int_equal(calls[cond], before);
            assert_int_equal(calls[2], cond ? 2 : 1); /* the If does not read the other one */
        }
        assert_int_equal(calls[0] + calls[1], round + 1);
        for (int i = 0; i < 10 && strcmp(set, "verify"); i++) {
            double want = cond ? fmax(x[i], 0) : 1 / (1 + exp(-(double)x[i]));
            assert_true(fabs(z[i] + want) < 1e-6);
        }
    }
    af_session_destroy(s);
    af_executor_destroy(ex);
}

/*
 * A run-time If runs only the branch its condition takes, round by round, on the real, the
 * reference and the verify kernels, with the condition a graph input or computed from one
 * (the branch's outer values then pass through gates reading it): the condition flips between
 * rounds, the output follows it (-relu(x) or -sigmoid(x)), the other branch's node is never
 * called, the If node gets no value (NULL) for its output, and with checksums on the stale
 * outputs of the skipped branch are not reported.
 */
static void test_onnx_if_runs_taken_branch(void **state)
{
    (void)state;
    const char *sets[] = {"reference", "real", "verify"};
    for (int variant = 2; variant <= 3; variant++) {
        pb_t m = model_control("If", variant);
        af_graph_t *gr;
        af_plan_t *p;
        af_error_t err;
        assert_int_equal(load(&m, NULL, 0, &gr, &err), 0);
        int gates = 0;
        for (int32_t k = 0; k < af_graph_node_count(gr); k++)
            gates += !strcmp(af_graph_node(gr, k)->op, "arenaflow.IfGate");
        assert_int_equal(gates, 2); /* x, once per branch */
        assert_int_equal(af_plan_create(gr, NULL, &p, &err), 0);
        assert_int_equal(af_plan_verify(p, &err), 0);
        for (int k = 0; k < 6; k++)
            run_taken_branch(p, variant == 3 ? "cin" : "cond", variant, sets[k / 2], k % 2);
        af_plan_destroy(p);
        af_graph_destroy(gr);
        free(m.b);
    }
}

/* A run-time If whose else branch (dead_then: both branches) reshapes x [2,5] to 3x3, which
 * cannot be for those dims; the then branch is Relu (dead_then: a 4x4 reshape too). */
static pb_t model_dead_branch(int dead_then)
{
    pb_t g = {0}, tg = {0}, eg = {0};
    int64_t xd[] = {2, 5}, s3[] = {3, 3}, s4[] = {4, 4};
    if (dead_then)
        add_node(&tg, "Reshape", "then_reshape", "x,shape4", "t_out", NULL, 0, NULL);
    else
        add_node(&tg, "Relu", "then_relu", "x", "t_out", NULL, 0, NULL);
    add_output(&tg, "t_out", F32);
    add_node(&eg, "Reshape", "else_reshape", "x,shape3", "e_out", NULL, 0, NULL);
    add_output(&eg, "e_out", F32);
    attr_t br[] = {{'g', "then_branch", .sub = &tg}, {'g', "else_branch", .sub = &eg}};
    add_input(&g, "x", F32, 2, xd, NULL);
    add_input(&g, "cond", BOOL, 0, NULL, NULL);
    add_i64_init(&g, "shape3", 2, s3);
    add_i64_init(&g, "shape4", 2, s4);
    add_node(&g, "If", "ctl", "cond", "y", br, 2, NULL);
    add_node(&g, "Neg", "neg", "y", "z", NULL, 0, NULL);
    add_output(&g, "z", F32);
    return make_model(&g);
}

/*
 * A run-time If with a branch that cannot run for the given input shapes (silero VAD v5 at
 * 16 kHz: its 8 kHz branch cannot take 512 samples) imports with the other branch only: the If
 * reads [cond, then output], says why in arenaflow.if_dead, runs when the condition takes the
 * kept branch and fails the round, naming the reason, when it takes the other one. With both
 * branches unable to run, the import fails with the kept branch's error.
 */
static void test_onnx_if_dead_branch(void **state)
{
    (void)state;
    pb_t m = model_dead_branch(0);
    af_graph_t *gr;
    af_error_t err;
    int rc = load(&m, NULL, 0, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    int32_t ifn = af_graph_find_node(gr, "ctl");
    assert_true(ifn >= 0);
    assert_int_equal(af_graph_node(gr, ifn)->n_inputs, 2); /* cond, then output */
    assert_int_equal(af_graph_find_node(gr, "else_reshape"), -1);
    assert_true(af_graph_find_node(gr, "then_relu") >= 0);
    const af_attr_t *live = af_graph_node_attr(gr, ifn, "arenaflow.if_live");
    const af_attr_t *dead = af_graph_node_attr(gr, ifn, "arenaflow.if_dead");
    assert_non_null(live);
    assert_int_equal(live->i, 1);
    assert_non_null(dead);
    assert_non_null(strstr(dead->s, "else_reshape"));
    assert_shape(tensor(gr, "z"), 2, (int64_t)2, (int64_t)5);
    af_plan_t *p;
    assert_int_equal(af_plan_create(gr, NULL, &p, &err), 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    const char *sets[] = {"reference", "real"};
    for (int k = 0; k < 2; k++) {
        af_executor_opts_t o;
        af_executor_opts_init(&o);
        o.threads = 2;
        o.kernels = sets[k];
        af_executor_t *ex;
        af_session_t *s;
        assert_int_equal(af_executor_create(&o, &ex, &err), 0);
        assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
        float x[10], z[10];
        for (int i = 0; i < 10; i++)
            x[i] = (float)(i - 4) * 0.75f;
        for (int round = 0; round < 4; round++) {
            uint8_t cond = (uint8_t)(round % 2 == 0);
            int xfirst = af_graph_find_tensor(gr, "x") < af_graph_find_tensor(gr, "cond");
            af_buffer_t in[2] = {{x, sizeof x}, {&cond, 1}}, out = {z, sizeof z};
            if (!xfirst)
                in[0] = (af_buffer_t){&cond, 1}, in[1] = (af_buffer_t){x, sizeof x};
            rc = af_session_run(s, in, &out, &err);
            if (cond) {
                assert_int_equal(rc, 0);
                for (int i = 0; i < 10; i++)
                    assert_true(fabs(z[i] + fmax(x[i], 0)) < 1e-6);
            } else {
                assert_int_equal(rc, AF_ESHAPE);
                assert_non_null(strstr(err.msg, "cannot run for these input shapes"));
                assert_non_null(strstr(err.msg, "else_reshape"));
            }
        }
        af_session_destroy(s);
        af_executor_destroy(ex);
    }
    af_plan_destroy(p);
    af_graph_destroy(gr);
    free(m.b);

    m = model_dead_branch(1);
    assert_int_equal(load(&m, NULL, 0, &gr, &err), AF_ESHAPE);
    assert_null(gr);
    assert_non_null(strstr(err.msg, "neither branch"));
    assert_non_null(strstr(err.msg, "then_reshape"));
    assert_non_null(strstr(err.msg, "else_reshape"));
    free(m.b);
}

/*
 * A batch of 0 (ONNX allows a dim of 0; ORT answers it with empty outputs): MatMul + bias +
 * Relu of x [0,5] give r [0,3], kept as an output of no bytes; ReduceSum of r over the batch is
 * [3] zeros, plus c: t = c. On the real kernels (oneDNN divided by the zero dimension creating
 * the MatMul primitive: SIGFPE in arenaflowd) and the reference ones.
 */
static void test_onnx_zero_batch_runs(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {0, 5}, wd[] = {5, 3}, bd[] = {3}, axes[] = {0};
    add_input(&g, "x", F32, 2, xd, NULL);
    add_input(&g, "c", F32, 1, bd, NULL);
    add_weight(&g, "w", 2, wd);
    add_weight(&g, "b", 1, bd);
    add_i64_init(&g, "axes", 1, axes);
    add_node(&g, "MatMul", "mm", "x,w", "m", NULL, 0, NULL);
    add_node(&g, "Add", "bias", "m,b", "y", NULL, 0, NULL);
    add_node(&g, "Relu", "relu", "y", "r", NULL, 0, NULL);
    attr_t kd = {'i', "keepdims", .i = 0};
    add_node(&g, "ReduceSum", "sum", "r,axes", "s", &kd, 1, NULL);
    add_node(&g, "Add", "plus_c", "s,c", "t", NULL, 0, NULL);
    add_output(&g, "r", F32);
    add_output(&g, "t", F32);
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    int rc = load(&m, NULL, 0, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_shape(tensor(gr, "r"), 2, (int64_t)0, (int64_t)3);
    af_plan_t *p;
    assert_int_equal(af_plan_create(gr, NULL, &p, &err), 0);
    const char *sets[] = {"reference", "real"};
    for (int k = 0; k < 2; k++) {
        af_executor_opts_t o;
        af_executor_opts_init(&o);
        o.threads = 2;
        o.kernels = sets[k];
        af_executor_t *ex;
        af_session_t *s;
        assert_int_equal(af_executor_create(&o, &ex, &err), 0);
        af_session_opts_t so = {.keep_outputs = 1};
        rc = af_session_create(ex, p, &so, &s, &err);
        if (rc)
            print_error("%s: %s\n", sets[k], err.msg);
        assert_int_equal(rc, 0);
        float c[3] = {1.5f, -2, 0.25f}, x0 = 0;
        int xfirst = af_graph_find_tensor(gr, "x") < af_graph_find_tensor(gr, "c");
        af_buffer_t in[2] = {{&x0, 0}, {c, sizeof c}};
        if (!xfirst)
            in[0] = (af_buffer_t){c, sizeof c}, in[1] = (af_buffer_t){&x0, 0};
        rc = af_session_run(s, in, NULL, &err);
        if (rc)
            print_error("%s: %s\n", sets[k], err.msg);
        assert_int_equal(rc, 0);
        int32_t ir = af_session_find_output(s, "r"), it = af_session_find_output(s, "t");
        uint64_t nr = 99, nt = 0;
        assert_non_null(af_session_output_data(s, ir, &nr)); /* produced: no bytes */
        assert_int_equal(nr, 0);
        const float *t = af_session_output_data(s, it, &nt);
        assert_non_null(t);
        assert_int_equal(nt, sizeof c);
        for (int i = 0; i < 3; i++)
            assert_true(t[i] == c[i]);
        af_session_destroy(s);
        af_executor_destroy(ex);
    }
    af_plan_destroy(p);
    af_graph_destroy(gr);
    free(m.b);
}

/* An op nobody knows (custom domain) gives dynamic outputs, and what follows stays dynamic. */
static void test_onnx_unknown_op_dynamic(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {2, 5};
    add_input(&g, "x", F32, 2, xd, NULL);
    add_node(&g, "FancyOp", "fancy", "x", "f", NULL, 0, "com.example");
    add_node(&g, "Relu", "relu", "f", "y", NULL, 0, NULL);
    add_output(&g, "y", F32);
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    assert_int_equal(load(&m, NULL, 0, &gr, &err), 0);
    assert_int_equal(tensor(gr, "f")->bytes, AF_BYTES_DYNAMIC);
    assert_int_equal(tensor(gr, "y")->bytes, AF_BYTES_DYNAMIC);
    assert_int_equal(tensor(gr, "x")->bytes, 40);
    af_graph_destroy(gr);
    free(m.b);
}

/* A Reshape to a shape known only at run time keeps its base's size (a view), nothing more. */
static void test_onnx_view_keeps_base_size(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {2, 3}, sd[] = {2};
    add_input(&g, "x", F32, 2, xd, NULL);
    add_input(&g, "s", I64, 1, sd, NULL);
    add_node(&g, "Relu", "relu", "x", "r", NULL, 0, NULL);
    add_node(&g, "Reshape", "rs", "r,s", "v", NULL, 0, NULL);
    add_node(&g, "Sigmoid", "sig", "v", "y", NULL, 0, NULL);
    add_output(&g, "y", F32);
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    assert_int_equal(load(&m, NULL, 0, &gr, &err), 0);
    const af_tensor_info_t *v = tensor(gr, "v");
    assert_int_equal(v->alias_of, af_graph_find_tensor(gr, "r"));
    assert_int_equal(v->rank, 2);
    assert_int_equal(v->shape[0], -1);                          /* dims unknown... */
    assert_int_equal(v->bytes, 24);                             /* ...size known: a view of r */
    assert_int_equal(tensor(gr, "y")->bytes, AF_BYTES_DYNAMIC); /* not a view: unknown */
    af_graph_destroy(gr);
    free(m.b);
}

/* Hostile dims (Tile by 2^62, Pad by INT64_MAX) are AF_ESHAPE, not an overflow (UBSan). */
static void test_onnx_overflow_dims_rejected(void **state)
{
    (void)state;
    const char *ops[] = {"Tile", "Pad"};
    for (int k = 0; k < 2; k++) {
        pb_t g = {0};
        int64_t xd[] = {4, 3}, rep[] = {(int64_t)1 << 62, 1}, pads[] = {0, 0, INT64_MAX, 0};
        add_input(&g, "x", F32, 2, xd, NULL);
        if (k == 0)
            add_i64_init(&g, "r", 2, rep);
        else
            add_i64_init(&g, "r", 4, pads);
        add_node(&g, ops[k], "big", "x,r", "y", NULL, 0, NULL);
        add_output(&g, "y", F32);
        pb_t m = make_model(&g);
        af_graph_t *gr;
        af_error_t err;
        assert_int_equal(load(&m, NULL, 0, &gr, &err), AF_ESHAPE);
        assert_null(gr);
        assert_non_null(strstr(err.msg, "overflow"));
        assert_non_null(strstr(err.msg, ops[k]));
        free(m.b);
    }
}

/* ---- real models ------------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(n > 0 ? (size_t)n : 1);
    *len = b ? fread(b, 1, (size_t)n, f) : 0;
    fclose(f);
    return b;
}

#define TESTDATA "/usr/share/libonnx-testdata/data/"
static const char *real_models[] = {
    TESTDATA "pytorch-converted/test_Conv2d/model.onnx",
    TESTDATA "pytorch-converted/test_ConvTranspose2d/model.onnx",
    TESTDATA "pytorch-converted/test_BatchNorm2d_eval/model.onnx",
    TESTDATA "pytorch-operator/test_operator_flatten/model.onnx",
    TESTDATA "node/test_reshape_negative_dim/model.onnx",
    TESTDATA "node/test_resize_upsample_scales_nearest/model.onnx",
    TESTDATA "node/test_slice_neg_steps/model.onnx",
    TESTDATA "node/test_layer_normalization_4d_axis0_expanded/model.onnx",
};

static void test_onnx_real_models_plan(void **state)
{
    (void)state;
    int found = 0;
    for (size_t i = 0; i < sizeof(real_models) / sizeof(real_models[0]); i++) {
        af_graph_t *g = NULL;
        af_error_t err;
        af_error_clear(&err);
        int rc = af_onnx_load(real_models[i], NULL, &g, &err);
        if (rc == AF_EIO)
            continue; /* not installed */
        found++;
        if (rc)
            print_error("%s: %s\n", real_models[i], err.msg);
        assert_int_equal(rc, 0);
        assert_true(af_graph_node_count(g) > 0);
        /* Every model here has fully static inputs: every tensor is sized. */
        for (int32_t t = 0; t < af_graph_tensor_count(g); t++)
            assert_true(af_graph_tensor(g, t)->bytes >= 0);
        af_plan_t *p = NULL;
        rc = af_plan_create(g, NULL, &p, &err);
        if (rc)
            print_error("%s: plan: %s\n", real_models[i], err.msg);
        assert_int_equal(rc, 0);
        assert_int_equal(af_plan_verify(p, &err), 0);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
    if (!found)
        skip();
}

/* One load of a damaged copy: 0, or a negative code with a message and *out untouched. */
static void fuzz_one(const char *label, const char *buf, size_t len, const af_onnx_opts_t *o,
                     uint64_t seed, int it, long *ok, long *rejected)
{
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    int rc = af_onnx_load_mem(buf, len, o, &g, &err);
    if (rc == 0) {
        (*ok)++;
        af_graph_destroy(g);
        return;
    }
    (*rejected)++;
    if (g || rc >= 0 || !err.msg[0])
        print_error("%s: seed %llx iteration %d: rc %d without a clean error\n", label,
                    (unsigned long long)seed, it, rc);
    assert_null(g);
    assert_true(rc < 0 && err.msg[0]);
}

/* Every prefix (up to 512 bytes, then every 97th), then `iters` copies with 1-4 bit flips. */
static void fuzz_buf(const char *label, const char *orig, size_t len, const af_onnx_opts_t *o,
                     int iters, uint64_t seed)
{
    long ok = 0, rejected = 0;
    for (size_t n = 0; n < len; n += n < 512 ? 1 : 97)
        fuzz_one(label, orig, n, o, seed, -1, &ok, &rejected);
    char *buf = malloc(len);
    assert_non_null(buf);
    uint64_t x = seed;
    for (int it = 0; it < iters; it++) {
        memcpy(buf, orig, len);
        for (int f = 0; f < 1 + it % 4; f++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t bit = (size_t)(x % (len * 8));
            buf[bit / 8] ^= (char)(1u << (bit % 8));
        }
        fuzz_one(label, buf, len, o, seed, it, &ok, &rejected);
    }
    free(buf);
    print_message("fuzz %s: %ld loads succeeded, %ld rejected cleanly\n", label, ok, rejected);
    assert_true(rejected > 100); /* corruption is really detected */
    assert_true(ok > 0);         /* and harmless damage (weights, names) still loads */
}

/* Truncated and bit-flipped copies of models: 0 or a clean error, never a crash (ASan: no leak). */
static void test_onnx_fuzz_truncated_bitflip(void **state)
{
    (void)state;
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.allow_dynamic = 1;       /* so that damaged dims still reach shape inference */
    o.opaque_control_flow = 1; /* and damaged Loop bodies reach the capture walk */
    pb_t m = model_shape_chain();
    fuzz_buf("shape chain", (const char *)m.b, m.n, &o, 3000, 0x5eed0bad1dea);
    free(m.b);
    m = model_control("If", 2);
    fuzz_buf("run-time If", (const char *)m.b, m.n, &o, 3000, 0x1f1f2b2b);
    free(m.b);
    m = model_control("Loop", 1);
    fuzz_buf("opaque Loop", (const char *)m.b, m.n, &o, 2000, 0x100f);
    free(m.b);
    size_t len = 0;
    char *orig = read_file(real_models[0], &len);
    if (!orig)
        return; /* libonnx-testdata not installed: the synthetic models above still ran */
    fuzz_buf("test_Conv2d", orig, len, NULL, 3000, 0xc0ffee);
    free(orig);
}

/* ---- out-of-memory injection ------------------------------------------------------------ */

static void test_onnx_oom_clean(void **state)
{
    (void)state;
    pb_t m = model_shape_chain();
    const char *in[] = {"x=2,3,4,4"};
    assert_true(oom_run("shape chain", m.b, m.n, NULL, in, 1) > 20);
    free(m.b);
    m = model_control("If", 2); /* both branches imported */
    assert_true(oom_run("run-time If", m.b, m.n, NULL, NULL, 0) > 20);
    free(m.b);
    m = model_control("If", 1); /* inlined branch */
    assert_true(oom_run("constant If", m.b, m.n, NULL, NULL, 0) > 20);
    free(m.b);
    pb_t g = graph_fold_bytes(); /* byte folds */
    m = make_model(&g);
    assert_true(oom_run("byte folds", m.b, m.n, NULL, NULL, 0) > 20);
    free(m.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx_fold_shape_chain),
        cmocka_unit_test(test_onnx_fold_transpose),
        cmocka_unit_test(test_onnx_fold_split),
        cmocka_unit_test(test_onnx_fold_bytes),
        cmocka_unit_test(test_onnx_fold_cast_f16),
        cmocka_unit_test(test_onnx_missing_dims_error),
        cmocka_unit_test(test_onnx_conv_pool_gemm),
        cmocka_unit_test(test_onnx_broadcast_error_names_node),
        cmocka_unit_test(test_onnx_if_inlined_loop_rejected),
        cmocka_unit_test(test_onnx_if_runs_taken_branch),
        cmocka_unit_test(test_onnx_if_dead_branch),
        cmocka_unit_test(test_onnx_zero_batch_runs),
        cmocka_unit_test(test_onnx_unknown_op_dynamic),
        cmocka_unit_test(test_onnx_view_keeps_base_size),
        cmocka_unit_test(test_onnx_overflow_dims_rejected),
        cmocka_unit_test(test_onnx_real_models_plan),
        cmocka_unit_test(test_onnx_fuzz_truncated_bitflip),
        cmocka_unit_test(test_onnx_oom_clean),
    };
    if (!af_onnx_available()) {
        printf("ONNX importer not built in: skipping\n");
        return 0;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
