/*
 * Private interface of the ONNX importer, shared by its three files:
 *   graph/onnx.c       protobuf reading, value table, mapping onto the graph model, If inlining;
 *   graph/onnx_shape.c per-op shape inference (one table row per op);
 *   graph/onnx_fold.c  tensor data decoding and constant folding of small integer/float tensors.
 *
 * A "value" is one ONNX tensor name. Its shape is a rank (-1 unknown) and dims (-1 unknown).
 * Small tensors may also carry their element values (vals, one double per element; integers
 * are exact up to 2^53, and AF__ONNX_UNK marks an element not known, which is how partially
 * known shape vectors — Shape of [N,3,224,224] — propagate like ONNX's data propagation).
 */
#ifndef ARENAFLOW_GRAPH_ONNX_INT_H
#define ARENAFLOW_GRAPH_ONNX_INT_H

#include "arenaflow/onnx.h"
#include "common/common_int.h"

#include <math.h>
#include <stdint.h>

#include "onnx.pb-c.h"

#define AF__ONNX_RANK_MAX 16
#define AF__ONNX_FOLD_MAX 4096 /* tensors with more elements never carry values */
#define AF__ONNX_UNK NAN       /* an element whose value is not known */

typedef struct af__onnx_val {
    const char *name;                /* points into the protobuf message */
    int32_t elem;                    /* ONNX TensorProto.DataType, 0 = unknown */
    int rank;                        /* -1 = unknown */
    int64_t dims[AF__ONNX_RANK_MAX]; /* -1 = unknown */
    double *vals; /* NULL, or numel() element values (some may be AF__ONNX_UNK) */
    int is_const; /* initializer, Constant output or fully folded: no run-time producer */
    int is_input, is_output;
    int used;                                /* read by a kept node, or a graph input/output */
    int alias_of;                            /* value index this one is a view of, or -1 */
    int producer;                            /* index of the kept node producing it, or -1 */
    const Onnx__TypeProto__Tensor *declared; /* type the model declares (value_info...), or NULL */
} af__onnx_val_t;

/* What a shape rule sees: the node, its inputs (NULL for an absent optional input), outputs. */
typedef struct af__onnx_ctx {
    const Onnx__NodeProto *node;
    af__onnx_val_t *in[32];
    int n_in;
    af__onnx_val_t *out[32];
    int n_out;
    int64_t opset; /* default-domain opset version */
    af_error_t *err;
} af__onnx_ctx_t;

typedef struct af__onnx_knode {
    const Onnx__NodeProto *node;
    int32_t *io; /* n_in input value ids (-1 absent) then n_out output ids (-1 absent) */
    int n_in, n_out;
} af__onnx_knode_t;

typedef struct af__onnx_binding {
    const char *param;
    int64_t value;
} af__onnx_binding_t;

/* Importer state (onnx.c builds it, onnx_emit.c turns it into a graph). */
typedef struct af__onnx_imp {
    const af_onnx_opts_t *opts;
    af_error_t *err;
    int64_t opset;
    af__onnx_val_t *vals;
    size_t n_vals, cap_vals;
    int32_t *hash; /* open addressing: value ids, -1 empty; power-of-two size */
    size_t hash_cap;
    af__onnx_knode_t *nodes;
    size_t n_nodes, cap_nodes;
    Onnx__NodeProto **synth; /* Identity nodes made for inlined If outputs */
    size_t n_synth, cap_synth;
    af__onnx_binding_t *binds;
    size_t n_binds, cap_binds;
} af__onnx_imp_t;

/* Value table (onnx.c): id of the value called name, created unknown when new; -1 on OOM. */
int32_t af__onnx_val_get(af__onnx_imp_t *im, const char *name);

/* Inputs and declared types (onnx_inputs.c). The tensor type of a value info, or NULL. */
const Onnx__TypeProto__Tensor *af__onnx_tensor_type(const Onnx__ValueInfoProto *vi);
/* Merges v->declared into v; a contradiction is AF_ESHAPE ("where" qualifies the message). */
int af__onnx_merge_declared(af__onnx_imp_t *im, af__onnx_val_t *v, const char *where);
/* Applies the user's input specs and the inputs' declared types. 0 or an error. */
int af__onnx_setup_inputs(af__onnx_imp_t *im, const Onnx__GraphProto *g);

/*
 * Emits the kept values and nodes as a finalized graph named `name` (onnx_emit.c). Views become
 * aliases, in-place hints are added for elementwise ops, attributes are copied. 0 or an error.
 */
int af__onnx_emit(af__onnx_imp_t *im, const char *name, af_graph_t **out);

/*
 * Checked dim arithmetic for shape rules: on int64 overflow (hostile or corrupt dims) they set
 * *ovf and return 0; the rule then fails with AF_ESHAPE instead of overflowing.
 */
static inline int64_t af__onnx_add(int64_t a, int64_t b, int *ovf)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}
static inline int64_t af__onnx_sub(int64_t a, int64_t b, int *ovf)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}
static inline int64_t af__onnx_mul(int64_t a, int64_t b, int *ovf)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}
#define AF__ONNX_OVERFLOW(c) af__onnx_node_err((c), AF_ESHAPE, "dimension arithmetic overflows")

/* Element count of a value; -1 when a dim or the rank is unknown. */
int64_t af__onnx_numel(const af__onnx_val_t *v);
/* Bytes per element of an ONNX data type; 0 when unknown or variable (strings). */
int af__onnx_elem_size(int32_t elem);
/* af_dtype_t of an ONNX data type (AF_DTYPE_UNKNOWN for strings, complex...). */
int af__onnx_dtype(int32_t elem);
/* 1 for integer and bool element types. */
int af__onnx_is_int(int32_t elem);
/* Error naming the node and its op; returns code. */
int af__onnx_node_err(af__onnx_ctx_t *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Shape helpers (onnx_shape.c). set_rank sets every dim unknown. */
void af__onnx_set_rank(af__onnx_val_t *v, int rank);
void af__onnx_copy_shape(af__onnx_val_t *dst, const af__onnx_val_t *src);
/* AF_ENOTSUP when rank exceeds AF__ONNX_RANK_MAX. */
int af__onnx_check_rank(af__onnx_ctx_t *c, int rank);
/* Normalises a possibly negative axis; AF_ESHAPE naming the node when out of range. */
int af__onnx_norm_axis(af__onnx_ctx_t *c, int64_t axis, int rank, int *out);
/* double -> int64 clamped to the int64 range (INT64_MAX in Slice ends is a double 2^63). */
int64_t af__onnx_d2i(double d);
/*
 * Integer list from attribute `attr` (when present) or else from input idx's values. Returns the
 * count, -1 when absent, -2 when present but not known (or longer than max).
 */
int af__onnx_int_list(af__onnx_ctx_t *c, const char *attr, int idx, int64_t *out, int max);

/* Attribute lookup by name (NULL when absent). */
const Onnx__AttributeProto *af__onnx_attr(const Onnx__NodeProto *n, const char *name);
int64_t af__onnx_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def);
double af__onnx_attr_f(const Onnx__NodeProto *n, const char *name, double def);

/*
 * Shape inference (onnx_shape.c): fills the outputs' elem/rank/dims and, for shape-like data,
 * vals. Unknown ops leave the outputs unknown. Returns 0, AF_ESHAPE (inconsistent inputs, message
 * names the op and node) or AF_ENOMEM.
 */
int af__onnx_infer(af__onnx_ctx_t *c);
/* 1 when the op (default domain) is a view: output aliases input 0. */
int af__onnx_is_view(const char *op);
/* 1 when the op is elementwise with output 0 shaped like input 0 (in-place candidate). */
int af__onnx_is_inplace(const char *op);

/* Shape rules of the data-movement ops (onnx_layout.c), dispatched from onnx_shape.c. */
int af__onnx_rule_reshape(af__onnx_ctx_t *c);
int af__onnx_rule_flatten(af__onnx_ctx_t *c);
int af__onnx_rule_transpose(af__onnx_ctx_t *c);
int af__onnx_rule_concat(af__onnx_ctx_t *c);
int af__onnx_rule_split(af__onnx_ctx_t *c);
int af__onnx_rule_slice(af__onnx_ctx_t *c);
int af__onnx_rule_gather(af__onnx_ctx_t *c);
int af__onnx_rule_squeeze(af__onnx_ctx_t *c);
int af__onnx_rule_unsqueeze(af__onnx_ctx_t *c);
int af__onnx_rule_resize(af__onnx_ctx_t *c);
int af__onnx_rule_reduce(af__onnx_ctx_t *c);
int af__onnx_rule_shape(af__onnx_ctx_t *c);
int af__onnx_rule_constant(af__onnx_ctx_t *c);
int af__onnx_rule_constant_of_shape(af__onnx_ctx_t *c);
int af__onnx_rule_expand(af__onnx_ctx_t *c);
int af__onnx_rule_pad(af__onnx_ctx_t *c);
int af__onnx_rule_range(af__onnx_ctx_t *c);
int af__onnx_rule_tile(af__onnx_ctx_t *c);
int af__onnx_rule_topk(af__onnx_ctx_t *c);
int af__onnx_rule_onehot(af__onnx_ctx_t *c);
int af__onnx_rule_depth_space(af__onnx_ctx_t *c);
/* Numpy slice clamping: clamps *start and returns the element count along the axis. */
int64_t af__onnx_slice_len(int64_t dim, int64_t *start, int64_t end, int64_t step);

/*
 * Tensor data (onnx_fold.c): decodes a TensorProto's shape into v and, when it has at most
 * AF__ONNX_FOLD_MAX elements of a numeric type, its values. Returns 0, AF_EPARSE (data size
 * disagrees with dims) or AF_ENOMEM.
 */
int af__onnx_tensor_decode(const Onnx__TensorProto *t, af__onnx_val_t *v, af_error_t *err);
/* Allocates v->vals for numel elements, all AF__ONNX_UNK. 0 or AF_ENOMEM (or 1: too big/unknown).
 */
int af__onnx_vals_alloc(af__onnx_val_t *v);
/* 1 when every element of v is known. */
int af__onnx_vals_known(const af__onnx_val_t *v);

/* Folding (onnx_fold.c): computes output values from input values where the op allows it. */
int af__onnx_fold(af__onnx_ctx_t *c);

/* Numpy broadcasting of a and b into out (ranks/dims). AF_ESHAPE on mismatch. */
int af__onnx_broadcast(af__onnx_ctx_t *c, const af__onnx_val_t *a, const af__onnx_val_t *b,
                       af__onnx_val_t *out);

#endif
