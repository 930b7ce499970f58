/*
 * Reference-kernel tests: the semantic corners the ONNX test data checks only in passing —
 * numpy broadcasting of several operand shapes, negative axes, integer wrapping and division
 * by zero, pads (asymmetric, reflect/edge), ceil_mode and count_include_pad, empty tensors,
 * optional inputs omitted in the middle (arenaflow.input_positions), the fp16/bf16
 * conversions over every bit pattern, and the bind-time checks: a dynamic shape, an
 * unsupported dtype and several missing ops are each refused with a message naming them, all
 * at once. Every run also verifies checksums around each kernel (executor verify = 1).
 */
#include "executor/kernels_ref.h"
#include "tests/kernel_testutil.h"

#include <math.h>
#include <stdlib.h>

#define F32 AF_DTYPE_F32
#define IN AF_TENSOR_INPUT
#define OUT AF_TENSOR_OUTPUT

static af_graph_t *new_graph(void)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    return g;
}

/* [2,1,3] + [4,1] -> [2,4,3], and a scalar * [2,4,3] chained on it */
static void test_kernels_broadcast_three_shapes(void **state)
{
    (void)state;
    af_graph_t *g = new_graph();
    int64_t sa[] = {2, 1, 3}, sb[] = {4, 1}, sy[] = {2, 4, 3};
    kt_tensor(g, "a", F32, IN, 3, sa);
    kt_tensor(g, "b", F32, IN, 2, sb);
    kt_tensor(g, "s", F32, IN, 0, NULL);
    kt_tensor(g, "t", F32, AF_TENSOR_INTERMEDIATE, 3, sy);
    kt_tensor(g, "y", F32, OUT, 3, sy);
    kt_node(g, "Add", "a,b", "t");
    kt_node(g, "Mul", "s,t", "y");
    float a[6] = {1, 2, 3, 4, 5, 6}, b[4] = {10, 20, 30, 40}, s = 2, y[24];
    const char *names[] = {"a", "b", "s", NULL};
    const void *data[] = {a, b, &s};
    assert_int_equal(kt_run(g, "reference", names, data, "y", y, sizeof y, NULL), 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 3; k++)
                assert_float_equal(y[(i * 4 + j) * 3 + k], 2 * (a[i * 3 + k] + b[j]), 0);
    af_graph_destroy(g);
}

/* uint8 Sub wraps, int32 Div truncates toward zero and gives 0 for a zero divisor, Mod
 * follows the divisor's sign (fmod = 0) */
static void test_kernels_integer_semantics(void **state)
{
    (void)state;
    int64_t s4[] = {4};
    {
        af_graph_t *g = new_graph();
        kt_tensor(g, "a", AF_DTYPE_U8, IN, 1, s4);
        kt_tensor(g, "b", AF_DTYPE_U8, IN, 1, s4);
        kt_tensor(g, "y", AF_DTYPE_U8, OUT, 1, s4);
        kt_node(g, "Sub", "a,b", "y");
        uint8_t a[4] = {1, 0, 200, 5}, b[4] = {2, 1, 100, 5}, y[4];
        const char *n[] = {"a", "b", NULL};
        const void *d[] = {a, b};
        assert_int_equal(kt_run(g, "reference", n, d, "y", y, 4, NULL), 0);
        assert_int_equal(y[0], 255);
        assert_int_equal(y[1], 255);
        assert_int_equal(y[2], 100);
        assert_int_equal(y[3], 0);
        af_graph_destroy(g);
    }
    const char *ops[] = {"Div", "Mod"};
    int32_t want[2][4] = {{-3, -1, 0, INT32_MIN}, {1, -3, 0, 0}}; /* INT32_MIN / -1 wraps */
    for (int o = 0; o < 2; o++) {
        af_graph_t *g = new_graph();
        kt_tensor(g, "a", AF_DTYPE_I32, IN, 1, s4);
        kt_tensor(g, "b", AF_DTYPE_I32, IN, 1, s4);
        kt_tensor(g, "y", AF_DTYPE_I32, OUT, 1, s4);
        kt_node(g, ops[o], "a,b", "y");
        int32_t a[4] = {-7, 7, 9, INT32_MIN}, b[4] = {2, -5, 0, -1}, y[4];
        if (o == 1)
            a[3] = -4, b[3] = 2;
        const char *n[] = {"a", "b", NULL};
        const void *d[] = {a, b};
        assert_int_equal(kt_run(g, "reference", n, d, "y", y, sizeof y, NULL), 0);
        for (int i = 0; i < 4; i++)
            if (y[i] != want[o][i])
                fail_msg("%s element %d: %d, expected %d", ops[o], i, y[i], want[o][i]);
        af_graph_destroy(g);
    }
}

/* Softmax over axis -1 equals axis 1 on rank 2; Concat on axis -1; Gather with -1 indices */
static void test_kernels_negative_axes(void **state)
{
    (void)state;
    int64_t s23[] = {2, 3}, s26[] = {2, 6}, s2[] = {2}, s22[] = {2, 2};
    af_graph_t *g = new_graph();
    kt_tensor(g, "x", F32, IN, 2, s23);
    kt_tensor(g, "i", AF_DTYPE_I64, IN, 1, s2);
    kt_tensor(g, "sm", F32, AF_TENSOR_INTERMEDIATE, 2, s23);
    kt_tensor(g, "c", F32, AF_TENSOR_INTERMEDIATE, 2, s26);
    kt_tensor(g, "y", F32, OUT, 2, s22);
    kt_attr_i(g, kt_node(g, "Softmax", "x", "sm"), "axis", -1);
    kt_attr_i(g, kt_node(g, "Concat", "x,sm", "c"), "axis", -1);
    kt_attr_i(g, kt_node(g, "Gather", "c,i", "y"), "axis", -1);
    float x[6] = {1, 2, 3, 0, 0, 0}, y[4];
    int64_t idx[2] = {-1, 0}; /* last column (softmax of the row's last), first column (x) */
    const char *n[] = {"x", "i", NULL};
    const void *d[] = {x, idx};
    assert_int_equal(kt_run(g, "reference", n, d, "y", y, sizeof y, NULL), 0);
    double e = exp(1) + exp(2) + exp(3);
    assert_float_equal(y[0], exp(3) / e, 1e-6);
    assert_float_equal(y[1], 1, 0);
    assert_float_equal(y[2], 1.0 / 3, 1e-6);
    assert_float_equal(y[3], 0, 0);
    af_graph_destroy(g);
}

/* Conv with asymmetric pads [top 1, left 0, bottom 0, right 1], stride 2 */
static void test_kernels_conv_asymmetric_pads(void **state)
{
    (void)state;
    af_graph_t *g = new_graph();
    int64_t sx[] = {1, 1, 3, 3}, sw[] = {1, 1, 2, 2}, sy[] = {1, 1, 2, 2};
    kt_tensor(g, "x", F32, IN, 4, sx);
    kt_tensor(g, "w", F32, IN, 4, sw);
    kt_tensor(g, "y", F32, OUT, 4, sy);
    int32_t c = kt_node(g, "Conv", "x,w", "y");
    int64_t pads[] = {1, 0, 0, 1}, st[] = {2, 2}, k[] = {2, 2};
    kt_attr_ints(g, c, "pads", pads, 4);
    kt_attr_ints(g, c, "strides", st, 2);
    kt_attr_ints(g, c, "kernel_shape", k, 2);
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 10, 100, 1000}, y[4];
    const char *n[] = {"x", "w", NULL};
    const void *d[] = {x, w};
    assert_int_equal(kt_run(g, "reference", n, d, "y", y, sizeof y, NULL), 0);
    /* padded input rows: [0 0 0 | 1 2 3 0 | 4 5 6 0 | 7 8 9 0]; windows at rows -1 and 1 */
    assert_float_equal(y[0], 100 * 1 + 1000 * 2, 0);
    assert_float_equal(y[1], 100 * 3 + 1000 * 0, 0);
    assert_float_equal(y[2], 1 * 4 + 10 * 5 + 100 * 7 + 1000 * 8, 0);
    assert_float_equal(y[3], 1 * 6 + 100 * 9, 0);
    af_graph_destroy(g);
}

/* MaxPool 3x3/2 with ceil_mode on 4x4 gives 2x2 (the last window hangs over the edge), and
 * AveragePool (pads 1, ceil_mode) with count_include_pad counts pad cells but not the overhang */
static void test_kernels_pool_ceil_and_pad_count(void **state)
{
    (void)state;
    int64_t sx[] = {1, 1, 4, 4}, sy[] = {1, 1, 2, 2}, k[] = {3, 3}, st[] = {2, 2};
    int64_t pads[] = {1, 1, 1, 1}, sp[] = {1, 1, 3, 3};
    af_graph_t *g = new_graph();
    kt_tensor(g, "x", F32, IN, 4, sx);
    kt_tensor(g, "m", F32, OUT, 4, sy);
    kt_tensor(g, "a", F32, OUT, 4, sp);
    int32_t m = kt_node(g, "MaxPool", "x", "m");
    kt_attr_ints(g, m, "kernel_shape", k, 2);
    kt_attr_ints(g, m, "strides", st, 2);
    kt_attr_i(g, m, "ceil_mode", 1);
    int32_t av = kt_node(g, "AveragePool", "x", "a");
    kt_attr_ints(g, av, "kernel_shape", k, 2);
    kt_attr_ints(g, av, "strides", st, 2);
    kt_attr_ints(g, av, "pads", pads, 4);
    kt_attr_i(g, av, "count_include_pad", 1);
    kt_attr_i(g, av, "ceil_mode", 1);
    float x[16], y[4], avg[9];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    const char *n[] = {"x", NULL};
    const void *d[] = {x};
    assert_int_equal(kt_run(g, "reference", n, d, "m", y, sizeof y, NULL), 0);
    assert_float_equal(y[0], 10, 0);
    assert_float_equal(y[1], 11, 0);
    assert_float_equal(y[2], 14, 0);
    assert_float_equal(y[3], 15, 0);
    af_graph_destroy(g);
    g = new_graph();
    kt_tensor(g, "x", F32, IN, 4, sx);
    kt_tensor(g, "a", F32, OUT, 4, sp);
    av = kt_node(g, "AveragePool", "x", "a");
    kt_attr_ints(g, av, "kernel_shape", k, 2);
    kt_attr_ints(g, av, "strides", st, 2);
    kt_attr_ints(g, av, "pads", pads, 4);
    kt_attr_i(g, av, "count_include_pad", 1);
    kt_attr_i(g, av, "ceil_mode", 1);
    assert_int_equal(kt_run(g, "reference", n, d, "a", avg, sizeof avg, NULL), 0);
    assert_float_equal(avg[0], (0 + 1 + 4 + 5) / 9.0f, 1e-6); /* 4 cells + 5 pad cells */
    assert_float_equal(avg[4], (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.0f, 1e-6);
    /* the last window covers input rows 3..4 with 4 = bottom pad: 2 x 2 in bounds of 9 */
    assert_float_equal(avg[8], (15) / 4.0f, 1e-6);
    af_graph_destroy(g);
}

/* MaxPool and AveragePool 2x2/2 on a 1x3 input (ORT runs the PaddleOCR direction classifier so
 * at 31 rows): the window reaches past the input, the output is 1x1 over the cells that exist */
static void test_kernels_pool_window_past_input(void **state)
{
    (void)state;
    int64_t sx[] = {1, 1, 1, 3}, sy[] = {1, 1, 1, 1}, k[] = {2, 2}, st[] = {2, 2};
    const char *ops[] = {"MaxPool", "AveragePool"};
    float x[3] = {4, -1, 9}, y[1], want[] = {4, 1.5f};
    for (int i = 0; i < 2; i++) {
        af_graph_t *g = new_graph();
        kt_tensor(g, "x", F32, IN, 4, sx);
        kt_tensor(g, "y", F32, OUT, 4, sy);
        int32_t v = kt_node(g, ops[i], "x", "y");
        kt_attr_ints(g, v, "kernel_shape", k, 2);
        kt_attr_ints(g, v, "strides", st, 2);
        const char *n[] = {"x", NULL};
        const void *d[] = {x};
        assert_int_equal(kt_run(g, "reference", n, d, "y", y, sizeof y, NULL), 0);
        assert_float_equal(y[0], want[i], 1e-6);
        af_graph_destroy(g);
    }
}

/* Pad reflect and edge on one row; empty tensors through Add and Concat */
static void test_kernels_pad_modes_and_empty(void **state)
{
    (void)state;
    const char *modes[] = {"reflect", "edge", "constant"};
    float want[3][7] = {{3, 2, 1, 2, 3, 2, 1}, {1, 1, 1, 2, 3, 3, 3}, {9, 9, 1, 2, 3, 9, 9}};
    for (int m = 0; m < 3; m++) {
        af_graph_t *g = new_graph();
        int64_t s3[] = {3}, s7[] = {7}, s1[] = {2};
        kt_tensor(g, "x", F32, IN, 1, s3);
        kt_tensor(g, "p", AF_DTYPE_I64, IN, 1, s1);
        kt_tensor(g, "v", F32, IN, 0, NULL);
        kt_tensor(g, "y", F32, OUT, 1, s7);
        kt_attr_s(g, kt_node(g, "Pad", "x,p,v", "y"), "mode", modes[m]);
        float x[3] = {1, 2, 3}, v = 9, y[7];
        int64_t pads[2] = {2, 2};
        const char *n[] = {"x", "p", "v", NULL};
        const void *d[] = {x, pads, &v};
        assert_int_equal(kt_run(g, "reference", n, d, "y", y, sizeof y, NULL), 0);
        for (int i = 0; i < 7; i++)
            if (y[i] != want[m][i])
                fail_msg("Pad %s element %d: %g, expected %g", modes[m], i, y[i], want[m][i]);
        af_graph_destroy(g);
    }
    af_graph_t *g = new_graph();
    int64_t s03[] = {0, 3}, s13[] = {1, 3};
    kt_tensor(g, "e", F32, IN, 2, s03);
    kt_tensor(g, "x", F32, IN, 2, s13);
    kt_tensor(g, "z", F32, AF_TENSOR_INTERMEDIATE, 2, s03);
    kt_tensor(g, "y", F32, OUT, 2, s13);
    kt_node(g, "Add", "e,x", "z"); /* [0,3] + [1,3] -> [0,3] */
    kt_attr_i(g, kt_node(g, "Concat", "z,x", "y"), "axis", 0);
    float x[3] = {4, 5, 6}, y[3];
    const char *n[] = {"x", NULL};
    const void *d[] = {x};
    assert_int_equal(kt_run(g, "reference", n, d, "y", y, sizeof y, NULL), 0);
    assert_memory_equal(y, x, sizeof x);
    af_graph_destroy(g);
}

/* Clip(x, "", max): the omitted min shifts max to the node's second input; the importer's
 * positions attribute says it is ONNX input 2 */
static void test_kernels_optional_input_positions(void **state)
{
    (void)state;
    af_graph_t *g = new_graph();
    int64_t s4[] = {4};
    kt_tensor(g, "x", F32, IN, 1, s4);
    kt_tensor(g, "hi", F32, IN, 0, NULL);
    kt_tensor(g, "y", F32, OUT, 1, s4);
    int64_t pos[] = {0, 2};
    kt_attr_ints(g, kt_node(g, "Clip", "x,hi", "y"), "arenaflow.input_positions", pos, 2);
    float x[4] = {-5, 0, 1, 7}, hi = 1, y[4];
    const char *n[] = {"x", "hi", NULL};
    const void *d[] = {x, &hi};
    assert_int_equal(kt_run(g, "reference", n, d, "y", y, sizeof y, NULL), 0);
    assert_float_equal(y[0], -5, 0); /* no lower bound */
    assert_float_equal(y[3], 1, 0);
    af_graph_destroy(g);
}

/* Every half bit pattern survives f16 -> f32 -> f16; ties round to even; bf16 rounds to
 * nearest even and keeps NaN a NaN */
static void test_kernels_half_conversions(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = af__f16_to_f32((uint16_t)h);
        uint16_t back = af__f32_to_f16(f);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) /* NaN: stays a NaN */
            assert_true(isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff));
        else if (back != h)
            fail_msg("half 0x%04x -> %g -> 0x%04x", h, f, back);
    }
    assert_int_equal(af__f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie: to even (down) */
    assert_int_equal(af__f32_to_f16(1.0f + 3.0f / 2048), 0x3c02); /* tie: to even (up) */
    assert_int_equal(af__f32_to_f16(65520.0f), 0x7c00);           /* overflows to inf */
    assert_int_equal(af__f32_to_f16(5.96e-8f), 0x0001);           /* smallest subnormal */
    assert_int_equal(af__f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
    assert_int_equal(af__f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    assert_true(isnan(af__bf16_to_f32(af__f32_to_bf16(NAN))));
}

/* Bind-time checks: all refusals of one graph in one message */
static void test_kernels_checks_list_everything(void **state)
{
    (void)state;
    af_graph_t *g = new_graph();
    int64_t s4[] = {4}, dyn[] = {-1};
    kt_tensor(g, "x", F32, IN, 1, s4);
    kt_tensor(g, "i8", AF_DTYPE_I8, IN, 1, s4);
    kt_tensor(g, "a", F32, AF_TENSOR_INTERMEDIATE, 1, s4);
    kt_tensor(g, "b", F32, AF_TENSOR_INTERMEDIATE, 1, s4);
    kt_tensor(g, "c", AF_DTYPE_I8, AF_TENSOR_INTERMEDIATE, 1, s4);
    kt_tensor(g, "d", F32, AF_TENSOR_INTERMEDIATE, 1, dyn);
    kt_tensor(g, "y", F32, OUT, 1, s4);
    kt_node(g, "Frob", "x", "a");
    kt_node(g, "Frob", "a", "b");
    kt_node(g, "Sqrt", "i8", "c"); /* Sqrt takes floats only */
    kt_node(g, "Relu", "b", "d");  /* dynamic output */
    kt_node(g, "Zap", "d,c", "y");
    af_error_t err;
    float y[4];
    assert_int_equal(kt_run(g, "reference", NULL, NULL, "y", y, sizeof y, &err), AF_ENOTSUP);
    const char *says[] = {
        "Frob (2 nodes)",         "Zap", "Sqrt", "dtype i8", "'d' has a dynamic shape",
        "cannot run 5 of 5 nodes"};
    for (size_t i = 0; i < sizeof(says) / sizeof(*says); i++)
        if (!strstr(err.msg, says[i]))
            fail_msg("'%s' does not say '%s'", err.msg, says[i]);
    af_graph_destroy(g);
}

/* String tensors: Gather, Concat, Transpose and Where move the caller's handles unchanged
 * (the same pointers come out), Equal compares bytes; an op that would read strings as numbers
 * (Add) is refused at binding naming the op and the dtype. The oneDNN set hands the string nodes
 * to the reference kernels (its Concat/Transpose/Equal rows refuse the dtype). */
static void test_kernels_strings(void **state)
{
    (void)state;
    static const char nul[] = {'n', 0, 'l'};
    const af_string_t x[6] = {{"a", 1}, {nul, 3}, {"", 0}, {"\xce\xba", 2}, {"a", 1}, {"zz", 2}};
    const af_string_t k[3] = {{"a", 1}, {"\xce\xba", 2}, {"q", 1}};
    const int64_t idx[2] = {1, 0};
    const uint8_t cond[9] = {1, 0, 1, 0, 1, 0, 1, 0, 1};
    const char *kernels[] = {"reference", "real"};
    for (int ks = 0; ks < 2; ks++) {
        int64_t s23[] = {2, 3}, s13[] = {1, 3}, s33[] = {3, 3}, s2[] = {2};
        af_graph_t *g = new_graph();
        kt_tensor(g, "x", AF_DTYPE_STRING, IN, 2, s23);
        kt_tensor(g, "k", AF_DTYPE_STRING, IN, 2, s13);
        kt_tensor(g, "i", AF_DTYPE_I64, IN, 1, s2);
        kt_tensor(g, "m", AF_DTYPE_BOOL, IN, 2, s33);
        kt_tensor(g, "g", AF_DTYPE_STRING, AF_TENSOR_INTERMEDIATE, 2, s23);
        kt_tensor(g, "c", AF_DTYPE_STRING, AF_TENSOR_INTERMEDIATE, 2, s33);
        kt_tensor(g, "t", AF_DTYPE_STRING, AF_TENSOR_INTERMEDIATE, 2, s33);
        kt_tensor(g, "w", AF_DTYPE_STRING, OUT, 2, s33);
        kt_tensor(g, "e", AF_DTYPE_BOOL, OUT, 2, s33);
        kt_attr_i(g, kt_node(g, "Gather", "x,i", "g"), "axis", 0);
        kt_attr_i(g, kt_node(g, "Concat", "g,k", "c"), "axis", 0);
        kt_node(g, "Transpose", "c", "t");
        kt_node(g, "Where", "m,t,c", "w");
        kt_node(g, "Equal", "w,k", "e");
        const char *n[] = {"x", "k", "i", "m", NULL};
        const void *d[] = {x, k, idx, cond};
        af_string_t w[9];
        uint8_t e[9];
        assert_int_equal(kt_run(g, kernels[ks], n, d, "w", w, sizeof w, NULL), 0);
        assert_int_equal(kt_run(g, kernels[ks], n, d, "e", e, sizeof e, NULL), 0);
        /* c = [x row 1; x row 0; k], t = c^T, w = cond ? t : c */
        const af_string_t *c[9] = {&x[3], &x[4], &x[5], &x[0], &x[1], &x[2], &k[0], &k[1], &k[2]};
        for (int r = 0; r < 3; r++)
            for (int col = 0; col < 3; col++) {
                int at = r * 3 + col;
                const af_string_t *want = cond[at] ? c[col * 3 + r] : c[at];
                assert_ptr_equal(w[at].data, want->data); /* the handle itself, unchanged */
                assert_int_equal(w[at].len, want->len);
                const af_string_t *kk = &k[col];
                int eq = w[at].len == kk->len && !memcmp(w[at].data, kk->data, kk->len);
                if (e[at] != eq)
                    fail_msg("%s: Equal at %d is %d, want %d", kernels[ks], at, e[at], eq);
            }
        af_graph_destroy(g);
    }
    /* an input the caller does not bind reads as empty strings (not a pattern of bytes) */
    af_graph_t *g = new_graph();
    int64_t s2[] = {2};
    kt_tensor(g, "x", AF_DTYPE_STRING, IN, 1, s2);
    kt_tensor(g, "y", AF_DTYPE_STRING, OUT, 1, s2);
    kt_node(g, "Identity", "x", "y");
    af_string_t y[2] = {{"junk", 4}, {"junk", 4}};
    assert_int_equal(kt_run(g, "reference", NULL, NULL, "y", y, sizeof y, NULL), 0);
    assert_true(y[0].len == 0 && y[1].len == 0);
    af_graph_destroy(g);
    g = new_graph();
    kt_tensor(g, "x", AF_DTYPE_STRING, IN, 1, s2);
    kt_tensor(g, "y", AF_DTYPE_STRING, OUT, 1, s2);
    kt_node(g, "Add", "x,x", "y");
    af_error_t err;
    assert_int_equal(kt_run(g, "reference", NULL, NULL, "y", y, sizeof y, &err), AF_ENOTSUP);
    if (!strstr(err.msg, "(Add): tensor 'x' has dtype string, and no Add kernel takes strings"))
        fail_msg("'%s'", err.msg);
    af_graph_destroy(g);
}

/* Each op name the reference set documents has a row; each row's check exists */
static void test_kernels_table_rows(void **state)
{
    (void)state;
    const char *ops[] = {"Abs",
                         "Add",
                         "ArgMax",
                         "AveragePool",
                         "BatchNormalization",
                         "Cast",
                         "CastLike",
                         "Clip",
                         "Concat",
                         "Conv",
                         "ConvInteger",
                         "ConvTranspose",
                         "CumSum",
                         "DFT",
                         "DepthToSpace",
                         "DequantizeLinear",
                         "Einsum",
                         "Expand",
                         "Gather",
                         "GatherElements",
                         "GatherND",
                         "Gemm",
                         "GridSample",
                         "GRU",
                         "LayerNormalization",
                         "LSTM",
                         "MatMul",
                         "MatMulInteger",
                         "MaxPool",
                         "Mod",
                         "NegativeLogLikelihoodLoss",
                         "OneHot",
                         "Pad",
                         "QLinearConv",
                         "QLinearMatMul",
                         "QuantizeLinear",
                         "ReduceSum",
                         "Reshape",
                         "Resize",
                         "RNN",
                         "RoiAlign",
                         "ScatterND",
                         "Slice",
                         "Softmax",
                         "SoftmaxCrossEntropyLoss",
                         "Split",
                         "TopK",
                         "Transpose",
                         "Trilu",
                         "Where"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++) {
        const af__kernel_entry_t *e = af__kref_find(ops[i]);
        if (!e || !e->fn || !e->check)
            fail_msg("reference set: no row (or no check) for %s", ops[i]);
        assert_non_null(af_kernel_builtin("real", ops[i]));
    }
    assert_null(af__kref_find("NoSuchOp"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_broadcast_three_shapes),
        cmocka_unit_test(test_kernels_integer_semantics),
        cmocka_unit_test(test_kernels_negative_axes),
        cmocka_unit_test(test_kernels_conv_asymmetric_pads),
        cmocka_unit_test(test_kernels_pool_ceil_and_pad_count),
        cmocka_unit_test(test_kernels_pool_window_past_input),
        cmocka_unit_test(test_kernels_pad_modes_and_empty),
        cmocka_unit_test(test_kernels_optional_input_positions),
        cmocka_unit_test(test_kernels_half_conversions),
        cmocka_unit_test(test_kernels_checks_list_everything),
        cmocka_unit_test(test_kernels_table_rows),
        cmocka_unit_test(test_kernels_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
