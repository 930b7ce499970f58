/*
 * Private interface of the ONNX importer, shared by its files:
 *   graph/onnx.c        protobuf reading, value table, node order, If inlining;
 *   graph/onnx_map.c    zero-copy location of tensor bytes in the serialized model;
 *   graph/onnx_inputs.c graph inputs, user dims, declared types;
 *   graph/onnx_shape.c  per-op shape inference (one table row per op), onnx_layout.c and
 *                       onnx_quant.c hold the longer rules;
 *   graph/onnx_fold.c   tensor decoding and constant folding of small integer/float tensors;
 *   graph/onnx_move.c   the data-movement ops of both folds, and the byte fold of large ones;
 *   graph/onnx_data.c   constant data of the emitted tensors; onnx_ext.c external data files;
 *   graph/onnx_emit.c   mapping onto the graph model.
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
#include "graph/graph_int.h"

#include <math.h>
#include <stdint.h>

#include "onnx.pb-c.h"

#define AF__ONNX_RANK_MAX 16
#define AF__ONNX_FOLD_MAX 4096 /* tensors with more elements never carry values */
#define AF__ONNX_FOLD_BYTES_MAX ((uint64_t)256 << 20) /* byte-folded data, per import */
#define AF__ONNX_UNK NAN                              /* an element whose value is not known */

typedef struct af__onnx_val {
    const char *name;                /* points into the protobuf message */
    int32_t elem;                    /* ONNX TensorProto.DataType, 0 = unknown */
    int rank;                        /* -1 = unknown */
    int64_t dims[AF__ONNX_RANK_MAX]; /* -1 = unknown */
    double *vals; /* NULL, or numel() element values (some may be AF__ONNX_UNK) */
    int is_const; /* initializer, Constant output or fully folded: no run-time producer */
    /* Constant bytes (little-endian elements): raw points at raw_len bytes inside raw_store
     * (mapped model, external file: may be pointed to as is) or, raw_store NULL, inside the
     * protobuf message or the caller's buffer (copied at emit). tp: the TensorProto whose typed
     * fields hold the data when raw is NULL. data_src: a view of a constant shares the bytes of
     * value data_src (-1 otherwise). Otherwise the data, if any, are the folded vals. */
    const uint8_t *raw;
    size_t raw_len;
    af__store_t *raw_store;
    const Onnx__TensorProto *tp;
    /* A Constant's value_string(s) attribute: the strings of a STRING constant without tp. */
    const ProtobufCBinaryData *strs;
    size_t n_strs;
    int data_src;
    char *why; /* why the shape is not known (dynamic tensor), or NULL */
    int is_input, is_output;
    int used;                                /* read by a kept node, or a graph input/output */
    int alias_of;                            /* value index this one is a view of, or -1 */
    int producer;                            /* index of the kept node producing it, or -1 */
    const Onnx__TypeProto__Tensor *declared; /* type the model declares (value_info...), or NULL */
} af__onnx_val_t;

/* What a shape rule sees: the node, its inputs (NULL for an absent optional input), outputs. */
struct af__onnx_imp;

typedef struct af__onnx_ctx {
    struct af__onnx_imp *im;
    const Onnx__NodeProto *node;
    af__onnx_val_t *in[32];
    int n_in;
    af__onnx_val_t *out[32];
    int n_out;
    int64_t opset; /* default-domain opset version */
    af_error_t *err;
    char why[160]; /* set by a rule (af__onnx_why) that leaves an output's dims unknown */
} af__onnx_ctx_t;

typedef struct af__onnx_knode {
    const Onnx__NodeProto *node;
    int32_t *io; /* n_in input value ids (-1 absent) then n_out output ids (-1 absent) */
    int n_in, n_out;
    /* Kept inside a branch of an If whose condition is known only at run time: the condition's
     * value id and the branch (1 then, 0 else), emitted as arenaflow.if_cond/if_branch so the
     * executor skips the node when the other branch is taken. guard -1: always runs. */
    int32_t guard;
    int branch;
    /* An If whose other branch cannot run for the given input shapes (its shape inference
     * failed): the branch it keeps (1 then, 0 else), -1 for every other node. */
    int live;
} af__onnx_knode_t;

/* A branch of an If found unable to run for the given input shapes; kept across the import's
 * restarts (onnx.c). */
typedef struct af__onnx_dead {
    const Onnx__NodeProto *node;
    int branch; /* 1 then, 0 else */
    char why[160];
} af__onnx_dead_t;
#define AF__ONNX_MAX_DEAD 16

typedef struct af__onnx_binding {
    const char *param;
    int64_t value;
} af__onnx_binding_t;

/* A tensor payload located in the original model bytes (onnx_map.c). */
typedef struct af__onnx_loc {
    size_t off, len;
} af__onnx_loc_t;

typedef struct af__onnx_map {
    const uint8_t *base;  /* the original model bytes */
    uint8_t *stripped;    /* the model without the located payloads (until unpacked), or NULL */
    size_t stripped_len;  /* its size */
    af__onnx_loc_t *locs; /* marker index -> payload location */
    size_t n_locs;
} af__onnx_map_t;

/* An external data file, mapped once however many tensors live in it (onnx_ext.c). */
typedef struct af__onnx_ext {
    char *location;
    af__store_t *store;
} af__onnx_ext_t;

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
    /* constant data */
    const char *model_dir;   /* directory of the model file (external data), NULL from memory */
    af__onnx_map_t map;      /* located payloads */
    af__store_t *base_store; /* the model bytes when they outlive the import (a mapping) */
    af__onnx_ext_t *ext;     /* external data files */
    size_t n_ext, cap_ext;
    af__store_t *heap; /* one block for the bytes that are copied (emit) */
    size_t heap_used;
    uint8_t **folded; /* bytes of the tensors folded by af__onnx_fold_bytes (owned) */
    size_t n_folded, cap_folded;
    uint64_t folded_bytes; /* their total, at most AF__ONNX_FOLD_BYTES_MAX */
    /* If branches that cannot run for the given shapes, kept when the import restarts */
    af__onnx_dead_t dead[AF__ONNX_MAX_DEAD];
    int n_dead;
    int restart; /* 1: a new dead branch was found, import again */
} af__onnx_imp_t;

/* Value table (onnx.c): id of the value called name, created unknown when new; -1 on OOM. */
int32_t af__onnx_val_get(af__onnx_imp_t *im, const char *name);
/* Id of the value called name, -1 when there is none (onnx.c). */
int32_t af__onnx_val_find(const af__onnx_imp_t *im, const char *name);
/* Appends a kept node reading io[0..n_in) and producing io[n_in..n_in+n_out) (onnx.c).
 * 0 or AF_ENOMEM. */
int af__onnx_keep_node(af__onnx_imp_t *im, const Onnx__NodeProto *n, const int32_t *io, int n_in,
                       int n_out);
#define AF__ONNX_MAX_DEPTH 16 /* nested If branches inlined */
/* Imports the nodes of graph g (the model's, or a branch at nesting depth) into im (onnx.c).
 * 0 or an error. */
int af__onnx_run_graph(af__onnx_imp_t *im, const Onnx__GraphProto *g, int depth);
/* A node's name for messages: its name, or its first output when it has none (onnx.c). */
const char *af__onnx_node_label(const Onnx__NodeProto *n);
/* Records `why` for output v of node n when its size stays unknown (onnx.c). 0 or an error. */
int af__onnx_note_why(af__onnx_imp_t *im, const Onnx__NodeProto *n, af__onnx_val_t *v,
                      const char *why);
/* If (onnx_gate.c): with a condition known at import, the branch it takes replaces it; with
 * one known only at run time, both branches are kept behind gates (or only the one that can run
 * for the given shapes). io: the If's value ids, ni inputs then no outputs. 0 or an error. */
int af__onnx_inline_if(af__onnx_imp_t *im, const Onnx__NodeProto *n, const af__onnx_val_t *cond,
                       int depth);
int af__onnx_import_both(af__onnx_imp_t *im, const Onnx__NodeProto *n, int32_t *io, int ni, int no,
                         int depth);
/* Puts a gate (onnx_gate.c) between each outer value and the nodes [first, end) of one branch
 * (branch 1 then, 0 else) of If node n with condition value cond. 0 or an error. */
int af__onnx_gate_branch(af__onnx_imp_t *im, const Onnx__NodeProto *n, size_t first, size_t end,
                         int32_t cond, int branch);

/* How the caller takes input dims, for messages (af_onnx_opts_t.dims_flag; "--input "). */
static inline const char *af__onnx_dims_flag(const af__onnx_imp_t *im)
{
    return im->opts->dims_flag ? im->opts->dims_flag : "--input ";
}

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

typedef int (*af__onnx_rule_fn)(af__onnx_ctx_t *c);
/* Shape rules kept beside the ops they belong to, by op name (NULL when none). */
af__onnx_rule_fn af__onnx_rule_quant(const char *op);    /* onnx_quant.c */
af__onnx_rule_fn af__onnx_rule_misc(const char *op);     /* onnx_misc.c */
af__onnx_rule_fn af__onnx_rule_training(const char *op); /* ai.onnx.preview.training */

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
/* 1 when the node's op has a shape rule. */
int af__onnx_has_rule(const Onnx__NodeProto *n);
/* 1 when the op (default domain) is a view: output aliases input 0. */
int af__onnx_is_view(const char *op);
/* 1 when the op is elementwise with output 0 shaped like input 0 (in-place candidate). */
int af__onnx_is_inplace(const char *op);

/* MatMul's numpy semantics (1-D promotion, broadcast batch dims) of a x b into o's shape. */
int af__onnx_matmul_shape(af__onnx_ctx_t *c, const af__onnx_val_t *a, const af__onnx_val_t *b,
                          af__onnx_val_t *o);

/* A convolution or pooling window read from the node's attributes (onnx_shape.c). */
typedef struct af__onnx_win {
    int ns; /* spatial dims (set by the caller) */
    int64_t k[AF__ONNX_RANK_MAX], s[AF__ONNX_RANK_MAX], d[AF__ONNX_RANK_MAX];
    int64_t p[2 * AF__ONNX_RANK_MAX];
    const char *auto_pad; /* "NOTSET", "SAME" (upper or lower) or "VALID" */
} af__onnx_win_t;
/* Kernel (attribute, else weight w's dims), strides, dilations, pads, auto_pad. 0, 1 when the
 * kernel is not known, or AF_ESHAPE. */
int af__onnx_read_window(af__onnx_ctx_t *c, const af__onnx_val_t *w, af__onnx_win_t *wn);

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
/* onnx_misc.c */
int af__onnx_rule_topk(af__onnx_ctx_t *c);
int af__onnx_rule_onehot(af__onnx_ctx_t *c);
int af__onnx_rule_depth_space(af__onnx_ctx_t *c);
/* Numpy slice clamping: clamps *start and returns the element count along the axis. */
int64_t af__onnx_slice_len(int64_t dim, int64_t *start, int64_t end, int64_t step);

/*
 * Tensor data (onnx_fold.c): decodes a TensorProto's shape into v, locates its bytes (v->raw /
 * v->tp: located payload, external file through im, raw_data or typed fields) and, when it has
 * at most AF__ONNX_FOLD_MAX elements of a numeric type, its values. im may be NULL (no located
 * payloads, no external files: such a tensor gets its shape only). Returns 0, AF_EPARSE (data
 * size disagrees with dims, bad external data), AF_EINVAL/AF_EIO (external file), AF_ENOMEM.
 */
int af__onnx_tensor_decode(af__onnx_imp_t *im, const Onnx__TensorProto *t, af__onnx_val_t *v,
                           af_error_t *err);

/* ---- zero-copy and constant data ---- */

/*
 * Writes into m a copy of the len model bytes without the large TensorProto payloads
 * (m->stripped; NULL when there is nothing to strip or the bytes are unusual) and where those
 * payloads are. Returns 0 or AF_ENOMEM. af__onnx_map_free() releases it.
 */
int af__onnx_map_strip(const uint8_t *data, size_t len, af__onnx_map_t *m);
/* Frees the stripped copy once it is unpacked (the locations stay). */
void af__onnx_map_release_stripped(af__onnx_map_t *m);
void af__onnx_map_free(af__onnx_map_t *m);
/* The located payload of t (a marker placed by af__onnx_map_strip): 1 and *p, *len set; or 0. */
int af__onnx_map_get(const af__onnx_map_t *m, const Onnx__TensorProto *t, const uint8_t **p,
                     size_t *len);
/*
 * Locates the bytes of external-data tensor t (`need` bytes): maps its file (relative to
 * im->model_dir; a path leaving that directory is refused) and sets *p into the mapping and
 * *store. Errors name the tensor: AF_EPARSE (missing or bad keys, range outside the file,
 * checksum mismatch), AF_ENOTSUP (loaded from memory), AF_EINVAL (path leaves the directory),
 * AF_EIO, AF_ENOMEM.
 */
int af__onnx_external(af__onnx_imp_t *im, const Onnx__TensorProto *t, const char *name,
                      uint64_t need, const uint8_t **p, af__store_t **store, af_error_t *err);
void af__onnx_ext_free(af__onnx_imp_t *im);
/* Reserves copy space for every constant value the graph will carry (before emitting). */
int af__onnx_data_prepare(af__onnx_imp_t *im);
/* Attaches the data of constant value v to graph tensor id (a no-op when it has none). */
int af__onnx_data_attach(af__onnx_imp_t *im, af_graph_t *gr, int32_t id, const af__onnx_val_t *v);
/*
 * After a node's shapes are final: when output v's size is still unknown, records in v->why
 * why (the rule's c->why, an unknown input, no rule for the op...). 0 or AF_ENOMEM.
 */
int af__onnx_note_dynamic(af__onnx_ctx_t *c, af__onnx_val_t *v, int is_default);
/* Stable Kahn order of g's nodes (file order among ready ones): *out, g->n_node entries. */
int af__onnx_node_order(const Onnx__GraphProto *g, int32_t **out);
/* Records a rule's reason for leaving a dim unknown (first one wins; printf-style). */
void af__onnx_why(af__onnx_ctx_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Element at p (little-endian bytes of type elem) as a double. */
double af__onnx_raw_elem(const uint8_t *p, int32_t elem);
/* v rounded to elem's precision for fp16/bf16 (nearest even); v itself for other types. */
double af__onnx_round_to(double v, int32_t elem);
/* Allocates v->vals for numel elements, all AF__ONNX_UNK. 0 or AF_ENOMEM (or 1: too big/unknown).
 */
int af__onnx_vals_alloc(af__onnx_val_t *v);
/* 1 when every element of v is known. */
int af__onnx_vals_known(const af__onnx_val_t *v);

/* Folding (onnx_fold.c): computes output values from input values where the op allows it. */
int af__onnx_fold(af__onnx_ctx_t *c);

/* Data-movement ops (onnx_move.c). af__onnx_is_move: Gather, Concat, Slice or Transpose.
 * af__onnx_move: node c's output o from its data inputs' elements src[i] (sz bytes each) into
 * dst; 0 done, 1 not foldable (parameters unknown) or partly written (Gather index unknown).
 * af__onnx_fold_bytes: makes c's output a constant with bytes when its data inputs are
 * constants with bytes, within the bounds above; 0 (folded or not) or AF_ENOMEM. */
int af__onnx_is_move(const char *op);
int af__onnx_move(af__onnx_ctx_t *c, const af__onnx_val_t *o, const uint8_t *const *src,
                  uint8_t *dst, size_t sz);
int af__onnx_fold_bytes(af__onnx_ctx_t *c);

/* Constant data (onnx_data.c): the little-endian bytes of constant v: *p points at *bytes bytes,
 * made in *owned (the caller frees it) when they are not stored as such. 0, 1 when v has no
 * data, AF_ENOMEM. */
int af__onnx_const_bytes(const af__onnx_imp_t *im, const af__onnx_val_t *v, const uint8_t **p,
                         uint8_t **owned, uint64_t *bytes);

/* Numpy broadcasting of a and b into out (ranks/dims). AF_ESHAPE on mismatch. */
int af__onnx_broadcast(af__onnx_ctx_t *c, const af__onnx_val_t *a, const af__onnx_val_t *b,
                       af__onnx_val_t *out);

#endif
