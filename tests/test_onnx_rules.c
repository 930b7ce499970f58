/*
 * Shape rules of the ONNX importer, one node at a time (graph/onnx_shape.c, onnx_layout.c,
 * onnx_quant.c, onnx_misc.c): Conv with groups, dilations, asymmetric and automatic pads,
 * depthwise; ConvTranspose with output_padding and output_shape; MatMul batched and broadcast;
 * pooling with ceil_mode, dilations, auto_pad; reductions with axes as an input (opset 18),
 * keepdims, noop_with_empty_axes; Split by num_outputs and by a split input; the quantisation
 * ops; Einsum (explicit, implicit, ellipsis, trace); GatherND with batch_dims; and the rest of
 * the ops the ONNX backend tests use. Each case states the output shapes worked out by hand
 * from the ONNX specification; shapes known only from values at run time must stay unknown
 * and say why. Inferred shapes only (use_declared = 0): nothing to fall back on.
 * (tests/onnx_outputs.py checks the same rules against the backend tests' real outputs.)
 */
#include "arenaflow/onnx.h"
#include "tests/onnx_testutil.h"

enum { U8 = 2, I32 = 6 };

typedef struct in_spec {
    const char *name;
    int elem;
    int rank;
    int64_t dims[6];
    int n_vals; /* > 0: an int64 initializer with these values; 0: a graph input */
    int64_t vals[6];
} in_spec_t;

typedef struct rcase {
    const char *op;
    int opset;
    in_spec_t in[9];
    const char *ins; /* node inputs ("-" = absent); default: the specs' names in order */
    attr_t attrs[4];
    int n_attrs;
    int n_out;
    int rank[4];
    int64_t dims[4][6]; /* -1: must be unknown */
    int elem[4];        /* 0: not checked */
    const char *why;    /* when a dim is unknown: words its reason must contain */
} rcase_t;

#define IN(n, e, r, ...)                                                                           \
    {                                                                                              \
        n, e, r, {__VA_ARGS__}, 0,                                                                 \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
#define VALS(n, r, d0, k, ...)                                                                     \
    {                                                                                              \
        n, 7, r, {d0}, k,                                                                          \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define INTS(nm, ...)                                                                              \
    {                                                                                              \
        'I', nm, .ints = (const int64_t[]){__VA_ARGS__},                                           \
                 .n = sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)                     \
    }
#define INT(nm, v)                                                                                 \
    {                                                                                              \
        'i', nm, .i = v                                                                            \
    }
#define STR(nm, v)                                                                                 \
    {                                                                                              \
        's', nm, .str = v                                                                          \
    }

static const rcase_t cases[] = {
    /* Conv: groups 2, dilations [2,1], pads top 1 left 0 bottom 2 right 1, strides [2,3] */
    {"Conv",
     13,
     {IN("x", F32, 4, 1, 4, 10, 12), IN("w", F32, 4, 6, 2, 3, 3)},
     NULL,
     {INT("group", 2), INTS("dilations", 2, 1), INTS("pads", 1, 0, 2, 1), INTS("strides", 2, 3)},
     4,
     1,
     {4},
     {{1, 6, 5, 4}},
     {F32},
     NULL},
    /* depthwise, SAME_UPPER, stride 2: ceil(in / 2) */
    {"Conv",
     13,
     {IN("x", F32, 4, 2, 8, 7, 9), IN("w", F32, 4, 8, 1, 3, 3)},
     NULL,
     {INT("group", 8), STR("auto_pad", "SAME_UPPER"), INTS("strides", 2, 2)},
     3,
     1,
     {4},
     {{2, 8, 4, 5}},
     {F32},
     NULL},
    /* ConvTranspose: stride 2 (3 - 1) + output_padding 1 + kernel 3 = 8; channels 3 x group 1 */
    {"ConvTranspose",
     13,
     {IN("x", F32, 4, 1, 2, 3, 3), IN("w", F32, 4, 2, 3, 3, 3)},
     NULL,
     {INTS("strides", 2, 2), INTS("output_padding", 1, 1)},
     2,
     1,
     {4},
     {{1, 3, 8, 8}},
     {F32},
     NULL},
    {"ConvTranspose",
     13,
     {IN("x", F32, 4, 1, 2, 3, 3), IN("w", F32, 4, 2, 3, 3, 3)},
     NULL,
     {INTS("strides", 3, 3), INTS("output_shape", 10, 8)},
     2,
     1,
     {4},
     {{1, 3, 10, 8}},
     {F32},
     NULL},
    {"MatMul",
     13,
     {IN("a", F32, 4, 2, 1, 3, 4), IN("b", F32, 3, 5, 4, 6)},
     NULL,
     {{0}},
     0,
     1,
     {4},
     {{2, 5, 3, 6}},
     {F32},
     NULL},
    {"MatMul",
     13,
     {IN("a", F32, 1, 4), IN("b", F32, 3, 3, 4, 2)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{3, 2}},
     {F32},
     NULL},
    /* MaxPool: dilated kernel 5, stride 2, ceil_mode: ceil((10 - 5) / 2) + 1 = 4 */
    {"MaxPool",
     13,
     {IN("x", F32, 4, 1, 1, 10, 10)},
     NULL,
     {INTS("kernel_shape", 3, 3), INTS("strides", 2, 2), INTS("dilations", 2, 2),
      INT("ceil_mode", 1)},
     4,
     2,
     {4, 4},
     {{1, 1, 4, 4}, {1, 1, 4, 4}},
     {F32, I64},
     NULL},
    /* MaxPool 2/2 on a row of 1 and a column of 5: the window reaches past the input by less
     * than a stride, one output (ONNX's C division: (1 - 2) / 2 + 1 = 1; (5 - 2) / 2 + 1 = 2) */
    {"MaxPool",
     13,
     {IN("x", F32, 4, 2, 200, 1, 5)},
     NULL,
     {INTS("kernel_shape", 2, 2), INTS("strides", 2, 2)},
     2,
     1,
     {4},
     {{2, 200, 1, 2}},
     {F32},
     NULL},
    {"AveragePool",
     13,
     {IN("x", F32, 4, 1, 3, 7, 7)},
     NULL,
     {INTS("kernel_shape", 3, 3), INTS("strides", 2, 2), STR("auto_pad", "VALID")},
     3,
     1,
     {4},
     {{1, 3, 3, 3}},
     {F32},
     NULL},
    /* reductions, opset 18: axes as an input */
    {"ReduceSum",
     18,
     {IN("x", F32, 3, 2, 3, 4), VALS("axes", 1, 1, 1, 1)},
     NULL,
     {INT("keepdims", 0)},
     1,
     1,
     {2},
     {{2, 4}},
     {F32},
     NULL},
    {"ReduceMean",
     18,
     {IN("x", F32, 3, 2, 3, 4)},
     NULL,
     {INT("noop_with_empty_axes", 1)},
     1,
     1,
     {3},
     {{2, 3, 4}},
     {F32},
     NULL},
    {"ReduceMax", 18, {IN("x", F32, 3, 2, 3, 4)}, NULL, {{0}}, 0, 1, {3}, {{1, 1, 1}}, {F32}, NULL},
    {"ReduceMin",
     18,
     {IN("x", F32, 3, 2, 3, 4), IN("axes", I64, 1, 1)},
     NULL,
     {{0}},
     0,
     1,
     {3},
     {{-1, -1, -1}},
     {F32},
     "input 'axes'"},
    {"ArgMax",
     13,
     {IN("x", F32, 3, 3, 4, 5)},
     NULL,
     {INT("axis", 1), INT("keepdims", 0)},
     2,
     1,
     {2},
     {{3, 5}},
     {I64},
     NULL},
    /* Split: opset 18 num_outputs (last chunk smaller), split as an input */
    {"Split",
     18,
     {IN("x", F32, 1, 7)},
     NULL,
     {INT("num_outputs", 3)},
     1,
     3,
     {1, 1, 1},
     {{3}, {3}, {1}},
     {F32, F32, F32},
     NULL},
    {"Split",
     13,
     {IN("x", F32, 2, 4, 7), VALS("split", 1, 2, 2, 2, 5)},
     NULL,
     {INT("axis", 1)},
     1,
     2,
     {2, 2},
     {{4, 2}, {4, 5}},
     {F32, F32},
     NULL},
    /* quantisation */
    {"QuantizeLinear",
     13,
     {IN("x", F32, 2, 2, 3), IN("s", F32, 0), IN("zp", U8, 0)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{2, 3}},
     {U8},
     NULL},
    {"QuantizeLinear",
     13,
     {IN("x", F32, 2, 2, 3), IN("s", F32, 0)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{2, 3}},
     {U8},
     NULL},
    {"DequantizeLinear",
     13,
     {IN("x", U8, 1, 4), IN("s", F32, 0), IN("zp", U8, 0)},
     NULL,
     {{0}},
     0,
     1,
     {1},
     {{4}},
     {F32},
     NULL},
    {"DynamicQuantizeLinear",
     13,
     {IN("x", F32, 2, 3, 4)},
     NULL,
     {{0}},
     0,
     3,
     {2, 0, 0},
     {{3, 4}, {0}, {0}},
     {U8, F32, U8},
     NULL},
    {"QLinearMatMul",
     13,
     {IN("a", U8, 3, 2, 3, 4), IN("as", F32, 0), IN("az", U8, 0), IN("b", U8, 2, 4, 5),
      IN("bs", F32, 0), IN("bz", U8, 0), IN("ys", F32, 0), IN("yz", U8, 0)},
     NULL,
     {{0}},
     0,
     1,
     {3},
     {{2, 3, 5}},
     {U8},
     NULL},
    {"ConvInteger",
     13,
     {IN("x", U8, 4, 1, 1, 5, 5), IN("w", U8, 4, 2, 1, 3, 3)},
     NULL,
     {{0}},
     0,
     1,
     {4},
     {{1, 2, 3, 3}},
     {I32},
     NULL},
    {"MatMulInteger",
     13,
     {IN("a", U8, 2, 3, 4), IN("b", U8, 2, 4, 2)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{3, 2}},
     {I32},
     NULL},
    {"QLinearConv",
     13,
     {IN("x", U8, 4, 1, 1, 5, 5), IN("xs", F32, 0), IN("xz", U8, 0), IN("w", U8, 4, 2, 1, 3, 3),
      IN("ws", F32, 0), IN("wz", U8, 0), IN("ys", F32, 0), IN("yz", U8, 0)},
     NULL,
     {{0}},
     0,
     1,
     {4},
     {{1, 2, 3, 3}},
     {U8},
     NULL},
    /* Einsum: explicit, implicit (sorted letters), ellipsis with a diagonal, trace, transpose */
    {"Einsum",
     13,
     {IN("a", F32, 3, 2, 3, 4), IN("b", F32, 3, 2, 4, 5)},
     NULL,
     {STR("equation", "bij,bjk->bik")},
     1,
     1,
     {3},
     {{2, 3, 5}},
     {F32},
     NULL},
    {"Einsum",
     13,
     {IN("a", F32, 2, 3, 4), IN("b", F32, 2, 4, 5)},
     NULL,
     {STR("equation", "ij, jk")},
     1,
     1,
     {2},
     {{3, 5}},
     {F32},
     NULL},
    {"Einsum",
     13,
     {IN("a", F32, 3, 2, 3, 3)},
     NULL,
     {STR("equation", "...ii->...i")},
     1,
     1,
     {2},
     {{2, 3}},
     {F32},
     NULL},
    {"Einsum",
     13,
     {IN("a", F32, 2, 3, 3)},
     NULL,
     {STR("equation", "ii")},
     1,
     1,
     {0},
     {{0}},
     {F32},
     NULL},
    {"Einsum",
     13,
     {IN("a", F32, 2, 3, 4)},
     NULL,
     {STR("equation", "ba")},
     1,
     1,
     {2},
     {{4, 3}},
     {F32},
     NULL},
    /* indexing */
    {"GatherND",
     13,
     {IN("x", F32, 3, 2, 3, 4), IN("i", I64, 2, 2, 1)},
     NULL,
     {INT("batch_dims", 1)},
     1,
     1,
     {2},
     {{2, 4}},
     {F32},
     NULL},
    {"GatherND",
     13,
     {IN("x", F32, 2, 2, 2), IN("i", I64, 2, 2, 2)},
     NULL,
     {{0}},
     0,
     1,
     {1},
     {{2}},
     {F32},
     NULL},
    {"Gather",
     13,
     {IN("x", F32, 3, 3, 4, 5), IN("i", I64, 2, 2, 2)},
     NULL,
     {INT("axis", 1)},
     1,
     1,
     {4},
     {{3, 2, 2, 5}},
     {F32},
     NULL},
    {"GatherElements",
     13,
     {IN("x", F32, 3, 3, 4, 5), IN("i", I64, 3, 3, 2, 5)},
     NULL,
     {INT("axis", 1)},
     1,
     1,
     {3},
     {{3, 2, 5}},
     {F32},
     NULL},
    {"ScatterND",
     13,
     {IN("x", F32, 2, 4, 4), IN("i", I64, 2, 2, 1), IN("u", F32, 2, 2, 4)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{4, 4}},
     {F32},
     NULL},
    {"ScatterElements",
     13,
     {IN("x", F32, 2, 3, 3), IN("i", I64, 2, 2, 3), IN("u", F32, 2, 2, 3)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{3, 3}},
     {F32},
     NULL},
    {"NonZero", 13, {IN("x", F32, 2, 2, 3)}, NULL, {{0}}, 0, 1, {2}, {{2, -1}}, {I64}, "nonzero"},
    {"Unique",
     13,
     {IN("x", F32, 1, 6)},
     NULL,
     {{0}},
     0,
     4,
     {1, 1, 1, 1},
     {{-1}, {-1}, {6}, {-1}},
     {F32, I64, I64, I64},
     "distinct"},
    {"Compress",
     13,
     {IN("x", F32, 2, 2, 3), VALS("c", 1, 3, 3, 1, 0, 1)},
     NULL,
     {INT("axis", 1)},
     1,
     1,
     {2},
     {{2, 2}},
     {F32},
     NULL},
    {"Compress",
     13,
     {IN("x", F32, 2, 2, 3), IN("c", 9, 1, 3)},
     NULL,
     {{0}},
     0,
     1,
     {1},
     {{-1}},
     {F32},
     "condition"},
    {"NonMaxSuppression",
     13,
     {IN("b", F32, 3, 1, 6, 4), IN("s", F32, 3, 1, 1, 6)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{-1, 3}},
     {I64},
     "boxes"},
    {"OneHot",
     13,
     {IN("i", I64, 2, 2, 3), VALS("d", 0, 0, 1, 5), IN("v", F32, 1, 2)},
     NULL,
     {{0}},
     0,
     1,
     {3},
     {{2, 3, 5}},
     {F32},
     NULL},
    {"OneHot",
     13,
     {IN("i", I64, 2, 2, 3), IN("d", I64, 0), IN("v", F32, 1, 2)},
     NULL,
     {INT("axis", 1)},
     1,
     1,
     {3},
     {{2, -1, 3}},
     {F32},
     "depth"},
    {"TopK",
     13,
     {IN("x", F32, 2, 3, 4), VALS("k", 1, 1, 1, 2)},
     NULL,
     {INT("axis", 1)},
     1,
     2,
     {2, 2},
     {{3, 2}, {3, 2}},
     {F32, I64},
     NULL},
    /* data movement */
    {"DepthToSpace",
     13,
     {IN("x", F32, 4, 1, 8, 2, 3)},
     NULL,
     {INT("blocksize", 2)},
     1,
     1,
     {4},
     {{1, 2, 4, 6}},
     {F32},
     NULL},
    {"SpaceToDepth",
     13,
     {IN("x", F32, 4, 1, 2, 4, 6)},
     NULL,
     {INT("blocksize", 2)},
     1,
     1,
     {4},
     {{1, 8, 2, 3}},
     {F32},
     NULL},
    {"Tile",
     13,
     {IN("x", F32, 2, 2, 2), VALS("r", 1, 2, 2, 2, 3)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{4, 6}},
     {F32},
     NULL},
    {"Expand",
     13,
     {IN("x", F32, 2, 3, 1), VALS("s", 1, 3, 3, 2, 1, 6)},
     NULL,
     {{0}},
     0,
     1,
     {3},
     {{2, 3, 6}},
     {F32},
     NULL},
    {"Where",
     13,
     {IN("c", 9, 2, 2, 1), IN("x", F32, 2, 1, 3), IN("y", F32, 0)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{2, 3}},
     {F32},
     NULL},
    {"Pad",
     13,
     {IN("x", F32, 2, 2, 3), VALS("p", 1, 4, 4, 0, 1, 0, 2)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{2, 6}},
     {F32},
     NULL},
    {"Pad",
     18,
     {IN("x", F32, 2, 2, 3), VALS("p", 1, 2, 2, 1, 2), IN("v", F32, 0), VALS("a", 1, 1, 1, 1)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{2, 6}},
     {F32},
     NULL},
    {"Slice",
     13,
     {IN("x", F32, 2, 3, 5), VALS("s", 1, 1, 1, 1), VALS("e", 1, 1, 1, -1), VALS("a", 1, 1, 1, 1)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{3, 3}},
     {F32},
     NULL},
    {"Slice",
     13,
     {IN("x", F32, 1, 7), VALS("s", 1, 1, 1, -1), VALS("e", 1, 1, 1, -100), VALS("a", 1, 1, 1, 0),
      VALS("st", 1, 1, 1, -2)},
     NULL,
     {{0}},
     0,
     1,
     {1},
     {{4}},
     {F32},
     NULL},
    {"Transpose",
     13,
     {IN("x", F32, 3, 2, 3, 4)},
     NULL,
     {INTS("perm", 2, 0, 1)},
     1,
     1,
     {3},
     {{4, 2, 3}},
     {F32},
     NULL},
    {"Range",
     13,
     {VALS("a", 0, 0, 1, 0), VALS("b", 0, 0, 1, 10), VALS("d", 0, 0, 1, 3)},
     NULL,
     {{0}},
     0,
     1,
     {1},
     {{4}},
     {I64},
     NULL},
    {"ConstantOfShape",
     13,
     {VALS("s", 1, 2, 2, 2, 3)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{2, 3}},
     {F32},
     NULL},
    {"EyeLike",
     13,
     {IN("x", F32, 2, 3, 4)},
     NULL,
     {INT("dtype", 7)},
     1,
     1,
     {2},
     {{3, 4}},
     {I64},
     NULL},
    {"Trilu", 14, {IN("x", F32, 2, 3, 4)}, NULL, {{0}}, 0, 1, {2}, {{3, 4}}, {F32}, NULL},
    {"CumSum",
     14,
     {IN("x", F32, 2, 3, 4), IN("ax", I64, 0)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{3, 4}},
     {F32},
     NULL},
    {"CastLike",
     15,
     {IN("x", F32, 2, 3, 4), IN("t", I64, 0)},
     NULL,
     {{0}},
     0,
     1,
     {2},
     {{3, 4}},
     {I64},
     NULL},
    {"Hardmax", 13, {IN("x", F32, 2, 3, 4)}, NULL, {{0}}, 0, 1, {2}, {{3, 4}}, {F32}, NULL},
    {"LayerNormalization",
     17,
     {IN("x", F32, 3, 2, 3, 4), IN("g", F32, 1, 4)},
     NULL,
     {{0}},
     0,
     3,
     {3, 3, 3},
     {{2, 3, 4}, {2, 3, 1}, {2, 3, 1}},
     {F32, F32, F32},
     NULL},
    {"GroupNormalization",
     18,
     {IN("x", F32, 4, 2, 4, 3, 3), IN("s", F32, 1, 2), IN("b", F32, 1, 2)},
     NULL,
     {INT("num_groups", 2)},
     1,
     1,
     {4},
     {{2, 4, 3, 3}},
     {F32},
     NULL},
    {"Resize",
     13,
     {IN("x", F32, 4, 1, 1, 4, 4), VALS("sz", 1, 4, 4, 1, 1, 8, 6)},
     "x,-,-,sz",
     {{0}},
     0,
     1,
     {4},
     {{1, 1, 8, 6}},
     {F32},
     NULL},
    /* signal, losses, misc */
    {"DFT",
     17,
     {IN("x", F32, 3, 1, 10, 1)},
     NULL,
     {INT("onesided", 1)},
     1,
     1,
     {3},
     {{1, 6, 2}},
     {F32},
     NULL},
    {"STFT",
     17,
     {IN("x", F32, 3, 1, 64, 1), VALS("step", 0, 0, 1, 8), IN("w", F32, 1, 16)},
     NULL,
     {{0}},
     0,
     1,
     {4},
     {{1, 7, 9, 2}},
     {F32},
     NULL},
    {"NegativeLogLikelihoodLoss",
     13,
     {IN("x", F32, 3, 3, 5, 2), IN("t", I64, 2, 3, 2)},
     NULL,
     {STR("reduction", "none")},
     1,
     1,
     {2},
     {{3, 2}},
     {F32},
     NULL},
    {"SoftmaxCrossEntropyLoss",
     13,
     {IN("x", F32, 2, 3, 5), IN("t", I64, 1, 3)},
     NULL,
     {{0}},
     0,
     2,
     {0, 2},
     {{0}, {3, 5}},
     {F32, F32},
     NULL},
    {"GridSample",
     16,
     {IN("x", F32, 4, 1, 3, 5, 5), IN("g", F32, 4, 1, 7, 9, 2)},
     NULL,
     {{0}},
     0,
     1,
     {4},
     {{1, 3, 7, 9}},
     {F32},
     NULL},
    {"RoiAlign",
     16,
     {IN("x", F32, 4, 1, 3, 8, 8), IN("r", F32, 2, 5, 4), IN("b", I64, 1, 5)},
     NULL,
     {INT("output_height", 2), INT("output_width", 3)},
     2,
     1,
     {4},
     {{5, 3, 2, 3}},
     {F32},
     NULL},
    {"Det", 13, {IN("x", F32, 3, 4, 3, 3)}, NULL, {{0}}, 0, 1, {1}, {{4}}, {F32}, NULL},
    {"HannWindow", 17, {VALS("n", 0, 0, 1, 10)}, NULL, {{0}}, 0, 1, {1}, {{10}}, {F32}, NULL},
    {"Bernoulli", 15, {IN("x", F32, 2, 3, 4)}, NULL, {{0}}, 0, 1, {2}, {{3, 4}}, {F32}, NULL},
};

/* The af_dtype_t of an ONNX element type used here. */
static int dtype_of(int elem)
{
    switch (elem) {
    case F32:
        return AF_DTYPE_F32;
    case U8:
        return AF_DTYPE_U8;
    case I32:
        return AF_DTYPE_I32;
    case I64:
        return AF_DTYPE_I64;
    case BOOL:
        return AF_DTYPE_BOOL;
    default:
        return -1;
    }
}

/* Builds the one-node model of a case. */
static pb_t case_model(const rcase_t *c)
{
    pb_t g = {0};
    char ins[200] = "", outs[64] = "";
    for (int i = 0; i < 9 && c->in[i].name; i++) {
        const in_spec_t *s = &c->in[i];
        if (s->n_vals) {
            pb_t t = tensor_i64(s->name, s->n_vals, s->vals, s->rank == 0);
            pb_msg(&g, 5, &t);
        } else {
            add_input(&g, s->name, s->elem, s->rank, s->dims, NULL);
        }
        snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s%s", i ? "," : "", s->name);
    }
    for (int o = 0; o < c->n_out; o++) {
        char nm[16];
        snprintf(nm, sizeof nm, "o%d", o);
        snprintf(outs + strlen(outs), sizeof outs - strlen(outs), "%s%s", o ? "," : "", nm);
        add_output(&g, nm, F32);
    }
    add_node(&g, c->op, "n", c->ins ? c->ins : ins, outs, c->attrs, c->n_attrs, NULL);
    return make_model_opset(&g, c->opset);
}

static void check_case(size_t k)
{
    const rcase_t *c = &cases[k];
    pb_t m = case_model(c);
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.use_declared = 0;
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    int rc = af_onnx_load_mem(m.b, m.n, &o, &g, &err);
    free(m.b);
    if (rc)
        fail_msg("case %zu (%s): %s", k, c->op, err.msg);
    for (int i = 0; i < c->n_out; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "o%d", i);
        const af_tensor_info_t *t = tensor(g, nm);
        int bad = t->rank != c->rank[i];
        for (int d = 0; !bad && d < t->rank; d++)
            bad = t->shape[d] != c->dims[i][d];
        if (c->elem[i] && (int)t->dtype != dtype_of(c->elem[i]))
            bad = 1;
        if (bad) {
            char got[100] = "";
            for (int d = 0; d < t->rank; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "",
                         (long long)t->shape[d]);
            fail_msg("case %zu (%s) output %d: rank %d [%s] %s", k, c->op, i, t->rank, got,
                     af_dtype_name(t->dtype));
        }
        const char *why = af_graph_dynamic_reason(g, af_graph_find_tensor(g, nm));
        if (c->why && t->bytes < 0 && (!why || !strstr(why, c->why)))
            fail_msg("case %zu (%s) output %d: reason '%s' lacks '%s'", k, c->op, i,
                     why ? why : "(none)", c->why);
    }
    af_graph_destroy(g);
}

static void test_onnx_rules_cases(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        check_case(k);
    print_message("%zu single-node cases\n", sizeof cases / sizeof cases[0]);
}

/* Inconsistent inputs are AF_ESHAPE naming the op and the node, never a guess. */
static void test_onnx_rules_errors(void **state)
{
    (void)state;
    static const rcase_t bad[] = {
        {"Einsum",
         13,
         {IN("a", F32, 2, 3, 4), IN("b", F32, 2, 5, 6)},
         NULL,
         {STR("equation", "ij,jk->ik")},
         1,
         1,
         {0},
         {{0}},
         {0},
         NULL},
        {"Einsum",
         13,
         {IN("a", F32, 2, 3, 4)},
         NULL,
         {STR("equation", "ijk->i")},
         1,
         1,
         {0},
         {{0}},
         {0},
         NULL},
        {"GatherND",
         13,
         {IN("x", F32, 2, 2, 2), IN("i", I64, 2, 2, 3)},
         NULL,
         {{0}},
         0,
         1,
         {0},
         {{0}},
         {0},
         NULL},
        {"MatMul",
         13,
         {IN("a", F32, 2, 3, 4), IN("b", F32, 2, 5, 6)},
         NULL,
         {{0}},
         0,
         1,
         {0},
         {{0}},
         {0},
         NULL},
        {"Det", 13, {IN("x", F32, 1, 4)}, NULL, {{0}}, 0, 1, {0}, {{0}}, {0}, NULL},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        pb_t m = case_model(&bad[k]);
        af_onnx_opts_t o;
        af_onnx_opts_init(&o);
        o.use_declared = 0;
        af_graph_t *g = NULL;
        af_error_t err;
        af_error_clear(&err);
        int rc = af_onnx_load_mem(m.b, m.n, &o, &g, &err);
        free(m.b);
        if (rc != AF_ESHAPE || !strstr(err.msg, bad[k].op) || !strstr(err.msg, "node 'n'"))
            fail_msg("bad case %zu (%s): %s: %s", k, bad[k].op, af_err_name(rc), err.msg);
        assert_null(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx_rules_cases),
        cmocka_unit_test(test_onnx_rules_errors),
    };
    if (!af_onnx_available()) {
        printf("ONNX importer not built in: skipping\n");
        return 0;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
