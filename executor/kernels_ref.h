/*
 * Shared pieces of the reference kernels (executor/kernels_ref_*.c): shapes and dtypes from the
 * graph, attributes, element loads and stores for every dtype, numpy broadcasting, ONNX
 * positions of optional inputs, and the checks session creation runs.
 *
 * Conventions of every reference kernel:
 *   - shapes and dtypes come from the graph's tensor infos (af_graph_tensor), attributes from
 *     af_graph_node_attr; a tensor of unknown dtype counts as f32 (graphs built for planning);
 *   - the row's check refuses at bind time what the kernel does not implement (dynamic shapes,
 *     dtypes, attribute values) with a message naming it; the kernel itself still validates
 *     every size it relies on and returns AF_ESHAPE rather than reading out of bounds;
 *   - no heap: temporaries are bounded stack arrays (KR_STACK_* below) or live in the outputs;
 *   - no state, no locks: kernels run concurrently on any worker.
 */
#ifndef ARENAFLOW_EXECUTOR_KERNELS_REF_H
#define ARENAFLOW_EXECUTOR_KERNELS_REF_H

#include "executor/executor_int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct kr_shape {
    int32_t rank;
    int64_t d[AF_MAX_RANK];
} kr_shape_t;

/* Largest stack temporary a kernel may use, in bytes (worker stacks are >= 2 MiB). */
#define KR_STACK_BYTES (64 * 1024)

/* ---- graph access ------------------------------------------------------------------------- */

/* dtype of tensor t (AF_DTYPE_UNKNOWN reads as f32). */
af_dtype_t kr_dtype(const af_graph_t *g, int32_t t);
/* Shape of tensor t; AF_ESHAPE when its rank or a dim is unknown. */
int kr_shape_of(const af_graph_t *g, int32_t t, kr_shape_t *s);
int64_t kr_numel(const kr_shape_t *s);

/*
 * Index into a->inputs of the node's ONNX input at position pos, or -1 when the model omitted
 * it (the importer's "arenaflow.input_positions" attribute, or pos beyond the inputs).
 */
int32_t kr_in_index(const af_graph_t *g, int32_t node, int32_t pos);
int32_t kr_out_index(const af_graph_t *g, int32_t node, int32_t pos);
/* Tensor id of ONNX input / output position pos, or -1. */
int32_t kr_in_tensor(const af_graph_t *g, int32_t node, int32_t pos);
int32_t kr_out_tensor(const af_graph_t *g, int32_t node, int32_t pos);

/* Attributes: value, or def when absent (or of another type). */
int64_t kr_attr_i(const af_graph_t *g, int32_t node, const char *name, int64_t def);
double kr_attr_f(const af_graph_t *g, int32_t node, const char *name, double def);
const char *kr_attr_s(const af_graph_t *g, int32_t node, const char *name, const char *def);
/* Index of s in names (n of them); def for "" (the attribute is absent), -1 when not listed. */
int kr_pick(const char *s, const char *const *names, int n, int def);
/* ints attribute into out (at most max); returns the count, -1 when absent. */
int32_t kr_attr_ints(const af_graph_t *g, int32_t node, const char *name, int64_t *out,
                     int32_t max);

/* ---- kernel-side access (args) ------------------------------------------------------------ */

/* Input at ONNX position pos: pointer, bytes, tensor id; NULL / -1 when omitted. */
const void *kr_in(const af_kernel_args_t *a, int32_t pos, uint64_t *bytes, int32_t *tensor);
void *kr_out(const af_kernel_args_t *a, int32_t pos, uint64_t *bytes, int32_t *tensor);
/* Shape of the input / output at ONNX position pos (AF_ESHAPE when omitted or unknown). */
int kr_in_shape(const af_kernel_args_t *a, int32_t pos, kr_shape_t *s);
int kr_out_shape(const af_kernel_args_t *a, int32_t pos, kr_shape_t *s);
/* Checks that the buffer at input/output pos holds at least its shape's bytes (AF_ESHAPE). */
int kr_in_ok(const af_kernel_args_t *a, int32_t pos);
int kr_out_ok(const af_kernel_args_t *a, int32_t pos);

/* Integer values of the input at ONNX position pos (any integer dtype) into out (at most max
 * written); returns the input's element count (callers check it against max), -1 when the
 * input is omitted. */
int32_t kr_in_ints(const af_kernel_args_t *a, int32_t pos, int64_t *out, int32_t max);

/* ---- elements ----------------------------------------------------------------------------- */

float af__f16_to_f32(uint16_t h);
uint16_t af__f32_to_f16(float f);
float af__bf16_to_f32(uint16_t h);
uint16_t af__f32_to_bf16(float f);
/* Element i of a buffer of dtype dt as double / as int64 (unsigned 64-bit: its bit pattern). */
double af__elem_load(af_dtype_t dt, const void *p, int64_t i);
int64_t af__elem_load_i(af_dtype_t dt, const void *p, int64_t i);
/* Stores v into element i: floats rounded to the type, integers converted the way C casts do,
 * except NaN/out-of-range floats, which saturate (no undefined behaviour); bool is v != 0. */
void af__elem_store(af_dtype_t dt, void *p, int64_t i, double v);
void af__elem_store_i(af_dtype_t dt, void *p, int64_t i, int64_t v);
/* 1 for f16/bf16/f32/f64. */
int kr_is_float(af_dtype_t dt);
/* 1 for the signed and unsigned integer types (not bool). */
int kr_is_int(af_dtype_t dt);
int kr_is_unsigned(af_dtype_t dt);

/* ---- broadcasting ------------------------------------------------------------------------- */

#define KR_BCAST_MAX 8 /* operands of one broadcast walk */

/* Walks an output shape in C order, keeping each operand's flat offset under numpy rules. */
typedef struct kr_bcast {
    int32_t rank, n;
    int64_t d[AF_MAX_RANK];
    int64_t st[KR_BCAST_MAX][AF_MAX_RANK];
    int64_t idx[AF_MAX_RANK];
    int64_t off[KR_BCAST_MAX];
} kr_bcast_t;

/* Numpy broadcast of shapes a and b into out; AF_ESHAPE when incompatible. */
int kr_broadcast(const kr_shape_t *a, const kr_shape_t *b, kr_shape_t *out);
/* Starts a walk of out over n operand shapes (each broadcastable to out). */
void kr_bcast_init(kr_bcast_t *b, const kr_shape_t *out, const kr_shape_t *ops, int32_t n);
/* Advances to the next output element. */
void kr_bcast_next(kr_bcast_t *b);

/* Splits a shape around axis (negative counts from the end): outer x dim x inner. */
int kr_split_axis(const kr_shape_t *s, int64_t axis, int64_t *outer, int64_t *dim, int64_t *inner);
/* Normalises a possibly negative axis against rank; -1 when out of range. */
int32_t kr_axis(int64_t axis, int32_t rank);

/*
 * Reduction over a subset of dims: the kept dims and the reduced dims of a shape, each walked by
 * a flat index. kr_red_keep(r, k) is the flat input offset of kept position k (reduced dims at
 * 0), kr_red_off(r, j) the offset of reduced position j relative to it.
 */
typedef struct kr_red {
    kr_shape_t keep, red;
    int64_t kst[AF_MAX_RANK], rst[AF_MAX_RANK]; /* input strides of the kept / reduced dims */
} kr_red_t;
void kr_red_init(kr_red_t *r, const kr_shape_t *s, const int *reduced);
int64_t kr_red_keep(const kr_red_t *r, int64_t k);
int64_t kr_red_off(const kr_red_t *r, int64_t j);

/* ---- checks (session creation) ------------------------------------------------------------ */

/* Bit of a dtype in a mask of accepted dtypes. */
#define KR_DT(x) (1u << AF_DTYPE_##x)
#define KR_FLOATS (KR_DT(F32) | KR_DT(F64) | KR_DT(F16) | KR_DT(BF16))
#define KR_INTS                                                                                    \
    (KR_DT(I8) | KR_DT(U8) | KR_DT(I16) | KR_DT(U16) | KR_DT(I32) | KR_DT(U32) | KR_DT(I64) |      \
     KR_DT(U64))
#define KR_NUMERIC (KR_FLOATS | KR_INTS)
#define KR_ALL (KR_NUMERIC | KR_DT(BOOL))

/* Every input and output of the node has a known shape; else AF_ENOTSUP naming the tensor. */
int kr_check_static(const af_graph_t *g, int32_t node, af_error_t *err);
/* Static shapes, and input/output at ONNX position pos has a dtype in mask (omitted: ok). */
int kr_check_in(const af_graph_t *g, int32_t node, int32_t pos, uint32_t mask, af_error_t *err);
int kr_check_out(const af_graph_t *g, int32_t node, int32_t pos, uint32_t mask, af_error_t *err);
/* Inputs pos0.. and output 0 share one dtype from mask (elementwise ops). */
int kr_check_same(const af_graph_t *g, int32_t node, int32_t n_in, uint32_t mask, af_error_t *err);
/* AF_ENOTSUP "<what>" for the node (a formatted reason). */
int kr_unsup(af_error_t *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- convolution geometry (kernels_ref_conv.c, shared with the quantised convolutions) ---- */

/* Window of a conv/pool node, as 3 spatial dims (1-D and 2-D padded with leading size-1 dims). */
typedef struct af__kr_win {
    int32_t nd; /* spatial dims of the node */
    int64_t in[3], out[3], k[3], st[3], dil[3], pb[3], pe[3];
} af__kr_win_t;

typedef struct af__kr_conv {
    int64_t n, c, m, g; /* batch, input channels, output channels, groups */
    af__kr_win_t w;
} af__kr_conv_t;

/* Window of node from x and y shapes (kdims: kernel dims from the weights, or NULL for the
 * kernel_shape attribute); AF_ENOTSUP naming the inconsistency. */
int af__kr_window(const af_graph_t *g, int32_t node, const kr_shape_t *sx, const kr_shape_t *sy,
                  const int64_t *kdims, int transposed, af__kr_win_t *w, af_error_t *err);
/* Geometry of a Conv-like node with X at input x_pos and W at input w_pos. */
int af__kr_conv_geom(const af_graph_t *g, int32_t node, int32_t x_pos, int32_t w_pos,
                     int transposed, af__kr_conv_t *c, af_error_t *err);
/* sum over the window of (x - xz) * (w - wz) for output cell (n, m, o[3]). */
double af__kr_conv_at(const af__kr_conv_t *c, const void *x, af_dtype_t dx, double xz,
                      const void *w, af_dtype_t dw, double wz, int64_t n, int64_t m,
                      const int64_t o[3]);

/* ---- matrix product geometry (kernels_ref_nn.c, shared with the quantised products) ------- */

typedef struct af__kr_mm {
    int64_t m, k, n;
    kr_shape_t ba, bb, bo; /* batch shapes of A, B and the output (numpy broadcast) */
} af__kr_mm_t;
/* MatMul geometry with A at input a_pos and B at b_pos (numpy 1-D promotion). */
int af__kr_mm_geom(const af_graph_t *g, int32_t node, int32_t a_pos, int32_t b_pos, af__kr_mm_t *mm,
                   af_error_t *err);

/* ---- elementwise parameters (kernels_ref_unary.c, kernels_ref_elem.c) ---------------------- */

/* Parameters an op takes from its attributes. */
typedef struct ew {
    double alpha, beta, gamma;
    int64_t i0, i1;
    int uns; /* the integer operands are unsigned */
} kr_ew_t;

/* Reads an op's attributes into its parameters. */
typedef void (*kr_prm_fn)(const af_graph_t *g, int32_t node, kr_ew_t *p);

/* ---- the family tables ------------------------------------------------------------------- */

/* Each kernels_ref_<family>.c exports one table ending with {.op = NULL}; kernels_ref.c joins
 * them into af__kernels_ref. */
extern const af__kernel_entry_t af__kref_unary[];
extern const af__kernel_entry_t af__kref_elem[];
extern const af__kernel_entry_t af__kref_nn[];
extern const af__kernel_entry_t af__kref_conv[];
extern const af__kernel_entry_t af__kref_data[];
extern const af__kernel_entry_t af__kref_norm[];
extern const af__kernel_entry_t af__kref_reduce[];
extern const af__kernel_entry_t af__kref_gather[];
extern const af__kernel_entry_t af__kref_quant[];
extern const af__kernel_entry_t af__kref_resize[];
extern const af__kernel_entry_t af__kref_rnn[];
extern const af__kernel_entry_t af__kref_signal[];

#endif
