/*
 * The oneDNN kernel set, shared by onednn.c (backend, node state, the one run kernel) and the
 * op files onednn_conv.c, onednn_matmul.c, onednn_eltwise.c, onednn_misc.c.
 *
 * A prepared node is a short program of oneDNN primitives ("steps": reorders of operands into
 * the layout the main primitive wants, the main primitive, reorders of its result back). Each
 * argument of a step says where its bytes are at run time: an input or output of the node, the
 * node's working memory (scratch: scratchpads and reorder buffers at fixed offsets), or fixed
 * memory made at prepare time (weights, prepacked or in place in the session's constants).
 * Memory objects whose handle changes (inputs, outputs, scratch) exist once per worker, so no
 * two threads ever set the handle of the same dnnl_memory_t; fixed ones are shared, never set.
 *
 * Prepare functions return AF_ENOTSUP, with the reason in err, for every node oneDNN cannot
 * compute exactly (attribute, dtype, shape): the node then runs on the reference kernel.
 */
#ifndef ARENAFLOW_EXECUTOR_ONEDNN_INT_H
#define ARENAFLOW_EXECUTOR_ONEDNN_INT_H

#include "executor/executor_int.h"

#include <oneapi/dnnl/dnnl.h>

#define ODN_MAX_STEPS 4
#define ODN_MAX_ARGS 10
#define ODN_MAX_FIXED 4

typedef enum { ODN_IN = 0, ODN_OUT, ODN_SCR, ODN_FIXED } odn_where_t;

typedef struct odn_arg {
    int arg;       /* DNNL_ARG_* */
    uint8_t where; /* odn_where_t */
    int16_t index; /* input / output index (ODN_IN, ODN_OUT) */
    uint64_t off;  /* byte offset inside that buffer */
    dnnl_memory_desc_t md;
    dnnl_memory_t fixed; /* ODN_FIXED: shared by every worker, its handle never changes */
} odn_arg_t;

typedef struct odn_step {
    dnnl_primitive_t prim;
    int n;
    odn_arg_t a[ODN_MAX_ARGS];
} odn_step_t;

typedef struct odn_ctx {
    dnnl_engine_t eng;
    dnnl_stream_t *streams; /* one per worker */
    int32_t workers;
} odn_ctx_t;

typedef struct odn_node {
    odn_ctx_t *ctx;
    int32_t workers;
    int n_steps;
    odn_step_t step[ODN_MAX_STEPS];
    dnnl_memory_t *mem; /* [worker][step][arg]; NULL for fixed arguments */
    void **cur;         /* the handle each of them has now */
    uint64_t scratch;   /* bytes of working memory the steps use */
    int n_raw;
    void *raw[ODN_MAX_FIXED]; /* prepacked weights (af__malloc) */
    uint64_t const_bytes;
    char impl[64];
} odn_node_t;

/* Building a node: the prepare functions fill it step by step. */
typedef struct odn_build {
    const af__kprep_t *in;
    odn_ctx_t *ctx;
    odn_node_t *st; /* NULL while querying */
    af_error_t *err;
    uint64_t scratch;
    char impl[64];
    int32_t n_out;  /* the node's outputs without its scratch tensor */
    int post_fused; /* the primitive applies the node's fused ops (af__kprep_out_t) */
    int no_post;    /* build without them (the C loop applies them, fused_post.c) */
} odn_build_t;

typedef int (*odn_prepare_fn)(odn_build_t *b);

/* ---- onednn.c ---------------------------------------------------------------------------- */

/* Runs a prepared node: every step in order on the worker's stream. */
int af__odn_run(const af_kernel_args_t *a);
/* Wraps a prepare function: allocation, finishing, cleanup on failure. */
int af__odn_prepare(const af__kprep_t *in, af__kprep_out_t *out, af_error_t *err,
                    odn_prepare_fn fn);
void af__odn_release(void *state);

/* The backend's layout choice (onednn_layout.c) and channels-last strides of [N, C, sp...]. */
int af__odn_layouts(const af_graph_t *g, const uint8_t *on_set,
                    const void *(*constant)(void *, int32_t), void *cu, uint8_t *layout);
void af__odn_channels_last(int nd, const dnnl_dims_t dims, dnnl_dims_t st);

/* oneDNN's ref implementations are loop nests several times slower than the reference kernels
 * (a 258-channel depthwise 1-D convolution of silero VAD: 520 us on oneDNN, 62 us on the
 * reference kernel; its 129-channel mean over channels: 25-33 us): when *pd is one and the
 * node's tensors are all in ONNX order, as the reference kernels read them, destroys *pd (NULL)
 * and returns AF_ENOTSUP, so the node runs on the reference kernel. A node with a channels-last
 * tensor keeps oneDNN's ref (the layout pass decided on the answer; the reference kernel would
 * misread it): 0, *pd kept. */
int af__odn_ref_instead(odn_build_t *b, dnnl_primitive_desc_t *pd);
/* AF_ENOTSUP with a reason (always returns AF_ENOTSUP). */
int af__odn_nosup(odn_build_t *b, const char *fmt, ...);
/* oneDNN's data type for a tensor's dtype; dnnl_data_type_undef when it has none. */
dnnl_data_type_t af__odn_dtype(af_dtype_t dt);
/* Shape of tensor t (rank 0 becomes [1]); AF_ENOTSUP when unknown. */
int af__odn_shape(odn_build_t *b, int32_t t, int *nd, dnnl_dims_t dims);
/* Memory descriptor of tensor t in its layout (plain row-major, or channels-last when the layout
 * choice made it so), optionally with its dims reshaped to nd/dims (same element count; a
 * channels-last tensor cannot be reshaped, except into one flat dim). */
int af__odn_md(odn_build_t *b, int32_t t, dnnl_memory_desc_t *md);
int af__odn_md_as(odn_build_t *b, int32_t t, int nd, const dnnl_dims_t dims,
                  dnnl_memory_desc_t *md);
/* Constant data of input i (NULL while querying or when it is no constant). */
const void *af__odn_const(odn_build_t *b, int32_t i);
/* 1 when input i of the node is a constant tensor. */
int af__odn_is_const(odn_build_t *b, int32_t i);
/* Scalar float value of constant input i (0 while querying); AF_ENOTSUP when not a scalar. */
int af__odn_const_scalar(odn_build_t *b, int32_t i, float *v);

/* Integer / float attributes of the node. */
int64_t af__odn_attr_i(odn_build_t *b, const char *name, int64_t def);
double af__odn_attr_f(odn_build_t *b, const char *name, double def);
const af_attr_t *af__odn_attr(odn_build_t *b, const char *name);
/* Attribute handle with the user-managed scratchpad (caller destroys it). */
int af__odn_attr_create(odn_build_t *b, dnnl_primitive_attr_t *attr);
/* Primitive descriptor; AF_ENOTSUP naming the op when oneDNN refuses it. attr may be NULL. */
int af__odn_pd(odn_build_t *b, const void *desc, const_dnnl_primitive_attr_t attr,
               dnnl_primitive_desc_t *pd);
/* Fused ops (af_plan_fuse: fused_sum as a sum post-op, then fused_post as eltwise post-ops;
 * onednn_eltwise.c): appends them all to po when oneDNN has every one (b->post_fused = 1), else
 * leaves po as it was in effect (post_fused = 0: po must then not be used; the executor's C loop
 * applies them). af__odn_post_attr: af__odn_attr_create() plus those post-ops. Both return 0 or
 * AF_ENOMEM. */
int af__odn_fused_post(odn_build_t *b, dnnl_post_ops_t po);
int af__odn_post_attr(odn_build_t *b, dnnl_primitive_attr_t *attr);
/* Reserves working memory (64-byte aligned offsets). */
uint64_t af__odn_scratch(odn_build_t *b, uint64_t bytes);
/* An argument of the node's own memory. */
odn_arg_t af__odn_arg(int arg, odn_where_t where, int index, uint64_t off,
                      const dnnl_memory_desc_t *md);
/* A fixed argument holding constant input i in the layout `want` (reordered once into a
 * prepacked buffer when it differs from the plain layout `have`). */
int af__odn_arg_const(odn_build_t *b, int arg, int32_t i, const dnnl_memory_desc_t *have,
                      const dnnl_memory_desc_t *want, odn_arg_t *out);
/* A fixed argument on memory the state owns, filled from host data (n bytes). */
int af__odn_arg_data(odn_build_t *b, int arg, const dnnl_memory_desc_t *md, const void *data,
                     uint64_t n, odn_arg_t *out);
/* Appends a step running pd with args (and its scratchpad, when it has one). Takes pd. */
int af__odn_step(odn_build_t *b, dnnl_primitive_desc_t pd, int n, const odn_arg_t *args);
/* Appends the steps of the main primitive pd with its src/dst arguments reordered through
 * working memory where pd wants another layout than the node's tensors have: args[k] with
 * where = ODN_IN/ODN_OUT and md = the tensor's plain layout are compared with pd's md for
 * args[k].arg. Takes pd. */
int af__odn_main(odn_build_t *b, dnnl_primitive_desc_t pd, int n, odn_arg_t *args);

/* A sliding window (Conv, ConvTranspose, pooling): per spatial dim the kernel, stride,
 * dilation (oneDNN's: ONNX's minus one), paddings. */
typedef struct odn_win {
    int sp; /* spatial dims */
    dnnl_dims_t k, s, d, pl, pr;
} odn_win_t;

/* Reads the window attributes of the node for input shape x and output shape y (both rank
 * sp + 2); kernel gives the kernel dims when the attribute may be absent (NULL: required).
 * transposed: ConvTranspose rules (output_padding, output_shape). Checks that oneDNN's output
 * size formula gives y's spatial dims. AF_ENOTSUP otherwise. */
int af__odn_window(odn_build_t *b, const dnnl_dims_t x, const dnnl_dims_t y, int sp,
                   const int64_t *kernel, int transposed, int ceil_ok, odn_win_t *w);

/* ---- op prepare functions ---------------------------------------------------------------- */

int af__odn_conv(odn_build_t *b);      /* Conv */
int af__odn_deconv(odn_build_t *b);    /* ConvTranspose */
int af__odn_matmul(odn_build_t *b);    /* MatMul */
int af__odn_gemm(odn_build_t *b);      /* Gemm */
int af__odn_unary(odn_build_t *b);     /* the eltwise family */
int af__odn_binary(odn_build_t *b);    /* Add Sub Mul Div Max Min, comparisons, Pow */
int af__odn_sum(odn_build_t *b);       /* Sum, Max/Min of more than two */
int af__odn_pool(odn_build_t *b);      /* MaxPool AveragePool Global*Pool */
int af__odn_softmax(odn_build_t *b);   /* Softmax LogSoftmax */
int af__odn_batchnorm(odn_build_t *b); /* BatchNormalization */
int af__odn_layernorm(odn_build_t *b); /* LayerNormalization */
int af__odn_reduce(odn_build_t *b);    /* Reduce* */
int af__odn_concat(odn_build_t *b);    /* Concat */
int af__odn_transpose(odn_build_t *b); /* Transpose */
int af__odn_cast(odn_build_t *b);      /* Cast */
int af__odn_instnorm(odn_build_t *b);  /* InstanceNormalization */
int af__odn_resize(odn_build_t *b);    /* Resize */

#endif
