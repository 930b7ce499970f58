/*
 * arenaflow — the graph model.
 *
 * A graph is a set of tensors and the nodes (operators) that produce and consume them. Build it
 * with the af_graph_add_* calls in any order (names are resolved later), then call
 * af_graph_finalize(), which validates it and builds the derived tables (producer, consumers,
 * node-level edges, a stable topological "input order"). After finalize the graph is immutable
 * and every read accessor below is valid; before it, only the builder calls and the name lookups
 * (af_graph_find_tensor/af_graph_find_node) are.
 *
 * Threading: building is single-threaded; a finalized graph may be read from any number of
 * threads at once.
 *
 * Ownership: the graph copies every string and array it is given. Pointers returned by the
 * accessors belong to the graph and stay valid until af_graph_destroy(). Constant data (weights)
 * is the exception that avoids copies: see af_graph_set_data() — the graph either owns a copy,
 * borrows the caller's bytes, or holds a counted reference on storage it shares with other
 * graphs (a mapped model file, a copy made by the ONNX importer), freed with the last of them.
 */
#ifndef ARENAFLOW_GRAPH_H
#define ARENAFLOW_GRAPH_H

#include "arenaflow/common.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_graph af_graph_t;

typedef enum {
    AF_TENSOR_INTERMEDIATE = 0,
    AF_TENSOR_INPUT = 1,
    AF_TENSOR_OUTPUT = 2,
    AF_TENSOR_CONSTANT = 3, /* weights: live outside the activation arena */
    /* Working memory of one node (a kernel's scratchpad, layout-reorder buffers): an output of
     * that node that nobody reads, so it lives during the node's step only. Kernels receive it
     * as af_kernel_args_t.scratch, not as an output. Added by af_kernels_lower(). */
    AF_TENSOR_SCRATCH = 4,
} af_tensor_kind_t;

/* name, JSON spelling, bytes per element */
#define AF_DTYPE_MAP(X)                                                                            \
    X(UNKNOWN, "unknown", 0)                                                                       \
    X(F32, "f32", 4)                                                                               \
    X(F16, "f16", 2)                                                                               \
    X(BF16, "bf16", 2)                                                                             \
    X(F64, "f64", 8)                                                                               \
    X(I8, "i8", 1)                                                                                 \
    X(U8, "u8", 1)                                                                                 \
    X(I16, "i16", 2)                                                                               \
    X(U16, "u16", 2)                                                                               \
    X(I32, "i32", 4)                                                                               \
    X(U32, "u32", 4)                                                                               \
    X(I64, "i64", 8)                                                                               \
    X(U64, "u64", 8)                                                                               \
    X(BOOL, "bool", 1)                                                                             \
    X(STRING, "string", 16)

typedef enum {
#define AF__DTYPE_ENUM(name, str, size) AF_DTYPE_##name,
    AF_DTYPE_MAP(AF__DTYPE_ENUM)
#undef AF__DTYPE_ENUM
        AF_DTYPE_COUNT_
} af_dtype_t;

/*
 * One element of an AF_DTYPE_STRING tensor: a handle to bytes that live outside the arena (the
 * arena plans and moves the 16-byte handles like any fixed-size element). The bytes are owned by
 * whoever made the handle and must stay alive and unchanged while any tensor holds it: the caller
 * for the inputs it binds, the graph for string constants (ONNX string initializers, copied at
 * import), arenaflowd for a request's strings until the answer is encoded. Data-movement kernels
 * copy handles unchanged; no built-in kernel creates strings (ops that would are refused at
 * session creation). `data` may be NULL when len is 0; the bytes are not NUL-terminated and may
 * hold NULs.
 */
typedef struct af_string {
    const char *data;
    uint64_t len;
#if UINTPTR_MAX == 0xFFFFFFFFu
    uint32_t pad_; /* 16 bytes on 32-bit targets too: the size AF_DTYPE_MAP gives */
#endif
} af_string_t;

/* "f32"... for a dtype; "unknown" for out-of-range values. */
const char *af_dtype_name(af_dtype_t dt);
/* Bytes per element; 0 for AF_DTYPE_UNKNOWN. */
uint32_t af_dtype_size(af_dtype_t dt);
/* Parses a dtype name ("f32", also ONNX-style "float32", "float", "int64"...). AF_EINVAL if
 * unknown. */
int af_dtype_parse(const char *name, af_dtype_t *out);

#define AF_BYTES_DYNAMIC (-1)    /* size unknown until run time */
#define AF_BYTES_FROM_SHAPE (-2) /* compute from dtype x shape; dynamic if a dim is unknown */
#define AF_MAX_RANK 8

typedef struct af_tensor_desc {
    const char *name;      /* required, unique among tensors */
    int64_t bytes;         /* >= 0, AF_BYTES_DYNAMIC or AF_BYTES_FROM_SHAPE */
    af_dtype_t dtype;      /* AF_DTYPE_UNKNOWN when not known */
    int rank;              /* -1 when unknown; 0..AF_MAX_RANK */
    const int64_t *shape;  /* rank dims; a dim < 0 means unknown */
    af_tensor_kind_t kind; /* default AF_TENSOR_INTERMEDIATE (0) */
    const char *alias_of;  /* NULL, or the base tensor this one is a view of */
    int64_t alias_offset;  /* byte offset of the view inside its base */
} af_tensor_desc_t;

/* "Output `output` may overwrite input `input` if that input dies at this node." */
typedef struct af_inplace {
    int32_t output; /* index into the node's outputs */
    int32_t input;  /* index into the node's inputs */
} af_inplace_t;

typedef struct af_node_desc {
    const char *name; /* unique among nodes; NULL gives "node<index>" */
    const char *op;   /* op type, e.g. "Conv"; required */
    const char *const *inputs;
    int32_t n_inputs;
    const char *const *outputs;
    int32_t n_outputs;
    double cost; /* estimated time in ns (or FLOPs); <= 0 means unknown */
    const af_inplace_t *inplace;
    int32_t n_inplace;
} af_node_desc_t;

typedef enum {
    AF_ATTR_INT = 0,
    AF_ATTR_FLOAT,
    AF_ATTR_STRING,
    AF_ATTR_INTS,
    AF_ATTR_FLOATS,
} af_attr_type_t;

typedef struct af_attr {
    const char *name;
    af_attr_type_t type;
    int64_t i;
    double f;
    const char *s;
    const int64_t *ints;
    const double *floats;
    int32_t n; /* element count of ints/floats */
} af_attr_t;

/* Creates an empty graph. Returns 0 or AF_ENOMEM; *out set only on success. */
int af_graph_create(af_graph_t **out);
/*
 * Makes room for n_tensors tensors and n_nodes nodes (counts of the whole graph, not more):
 * adding up to that many then grows no table, which saves the copies and page faults of
 * growing at 10^5+ entries. Optional, a hint only; before finalize. Returns 0, AF_EINVAL
 * (negative count or a finalized graph) or AF_ENOMEM (the graph unchanged and still usable).
 * Not thread-safe (a graph is built by one thread).
 */
int af_graph_reserve(af_graph_t *g, int32_t n_tensors, int32_t n_nodes);
/* Frees the graph and everything it owns. NULL is a no-op. */
void af_graph_destroy(af_graph_t *g);

/* Sets the graph's name (copied). Returns 0 or AF_ENOMEM. */
int af_graph_set_name(af_graph_t *g, const char *name);
/* The graph's name ("" when unset). */
const char *af_graph_name(const af_graph_t *g);

/*
 * Adds a tensor. Errors: AF_EINVAL (no name, bad kind/rank, graph finalized), AF_ESIZE
 * (negative or overflowing size), AF_ENOMEM. *id_out (may be NULL) gets the tensor's id (dense,
 * in insertion order). err may be NULL. A name already taken is not refused here (an add does
 * not look names up, which keeps building a 10^6-tensor graph free of a cache miss per add):
 * af_graph_finalize() refuses it with AF_EDUP, naming it and both ids. To test whether a name is
 * taken before adding, call af_graph_find_tensor().
 */
int af_graph_add_tensor(af_graph_t *g, const af_tensor_desc_t *d, int32_t *id_out, af_error_t *err);

/*
 * The descriptor that adds a tensor like tensor t of g to another graph: its name, size, dtype,
 * shape, kind and view (alias_of: the base tensor's name in g). Its pointers are g's, valid while
 * g lives; a caller renaming or retyping the copy overwrites those fields. t must be a tensor of
 * g (an out-of-range id gives an all-zero descriptor, which af_graph_add_tensor refuses).
 */
af_tensor_desc_t af_graph_tensor_desc(const af_graph_t *g, int32_t t);

/*
 * Adds a node. Tensor names are resolved by af_graph_finalize(), so tensors may be added after
 * the nodes that use them. Errors: AF_EINVAL, AF_ENOMEM. A node name already taken is refused by
 * af_graph_finalize() (AF_EDUP), as for tensors; af_graph_find_node() tells it before adding.
 */
int af_graph_add_node(af_graph_t *g, const af_node_desc_t *d, int32_t *id_out, af_error_t *err);

/* Sets (or replaces) an attribute on a node; strings and arrays are copied. */
int af_graph_node_set_attr(af_graph_t *g, int32_t node, const af_attr_t *attr, af_error_t *err);

/* ---- constant data (weights) and dynamic sizes -------------------------------------------- */

typedef enum {
    AF_DATA_COPY = 0,   /* the graph copies the bytes into storage it owns (64-byte aligned) */
    AF_DATA_BORROW = 1, /* the graph points at the caller's bytes, which must stay valid and
                           unchanged until every graph sharing them is destroyed */
} af_data_mode_t;

/*
 * Attaches the bytes of constant tensor `tensor` (before finalize). `bytes` must equal the
 * tensor's size and `data` (BORROW) be aligned to its element size. Replaces earlier data.
 * Errors: AF_EINVAL (not a constant, an alias, finalized graph, NULL data, misaligned), AF_ESIZE
 * (size differs or the tensor is dynamic), AF_ENOMEM. Not thread-safe (a builder call).
 */
int af_graph_set_data(af_graph_t *g, int32_t tensor, const void *data, int64_t bytes,
                      af_data_mode_t mode, af_error_t *err);

/*
 * Gives dst's tensor the data of src's tensor without copying (before dst is finalized): storage
 * the source owns is shared by reference count and stays alive until both graphs are destroyed;
 * borrowed bytes stay borrowed. Used by graph copies (re-planning, the plan cache). src must be
 * finalized; it is only read, so it may be shared with other threads. A source tensor without
 * data is a no-op. Errors as af_graph_set_data().
 */
int af_graph_share_data(af_graph_t *dst, int32_t dst_tensor, const af_graph_t *src,
                        int32_t src_tensor, af_error_t *err);

/*
 * Records why tensor `tensor`'s size is unknown (before finalize; the text is copied), e.g. "op
 * NonZero, node 'nz': the output size depends on the input's values". Importers call it for
 * every dynamic tensor so nothing is dynamic silently. Errors: AF_EINVAL, AF_ENOMEM.
 */
int af_graph_set_dynamic_reason(af_graph_t *g, int32_t tensor, const char *reason, af_error_t *err);

/*
 * Why a tensor of a finalized graph is dynamic: the recorded reason, or (none recorded) a
 * generic one ("a view of dynamic tensor 'x'", "size not given"). NULL when the size is known or
 * the id is out of range. The text belongs to the graph. Thread-safe.
 */
const char *af_graph_dynamic_reason(const af_graph_t *g, int32_t tensor);

/* Sum of the bytes of constant data the graph carries (0 when none). */
uint64_t af_graph_data_bytes(const af_graph_t *g);

/*
 * Validates the graph and builds the derived tables. Rejects, with a message naming the culprit:
 * two tensors or two nodes with the same name (AF_EDUP, the message gives the name and both
 * ids; such a graph never finalizes: destroy it), unknown tensor names, a tensor produced twice, a
 * tensor read but never produced (unless it is an input or constant), a cycle (the message names
 * the nodes on it), an alias whose base is unknown, circular or too small, an in-place hint out of
 * range. Returns 0 or the AF_E* code. Calling it twice is a no-op.
 */
int af_graph_finalize(af_graph_t *g, af_error_t *err);
int af_graph_is_finalized(const af_graph_t *g);

/* ---- read access (finalized graphs) ------------------------------------------------------- */

typedef struct af_tensor_info {
    const char *name;
    int64_t bytes; /* AF_BYTES_DYNAMIC when unknown */
    af_dtype_t dtype;
    int32_t rank; /* -1 unknown */
    const int64_t *shape;
    af_tensor_kind_t kind;
    int32_t alias_of; /* base tensor id, or -1 */
    int64_t alias_offset;
    int32_t producer;         /* node id, or -1 */
    int32_t n_consumers;      /* distinct consumer nodes */
    const int32_t *consumers; /* node ids, ascending */
    /*
     * Constant tensors: their bytes (`bytes` of them, little-endian elements, aligned to the
     * element size), read-only; NULL when the graph carries no data for the tensor (executors
     * then fill it themselves). Always NULL for other kinds.
     */
    const void *data;
    /* Why the size is unknown (bytes == AF_BYTES_DYNAMIC), when the builder said; else NULL.
     * af_graph_dynamic_reason() always gives a text for a dynamic tensor. */
    const char *dynamic_reason;
} af_tensor_info_t;

typedef struct af_node_info {
    const char *name;
    const char *op;
    int32_t n_inputs;
    const int32_t *inputs; /* tensor ids, as given (a tensor may appear twice) */
    int32_t n_outputs;
    const int32_t *outputs;
    double cost;
    int32_t n_inplace;
    const af_inplace_t *inplace;
    int32_t n_preds; /* distinct predecessor nodes (producers of inputs) */
    const int32_t *preds;
    int32_t n_succs; /* distinct successor nodes (consumers of outputs) */
    const int32_t *succs;
    int32_t n_attrs;
    const af_attr_t *attrs;
} af_node_info_t;

int32_t af_graph_tensor_count(const af_graph_t *g);
int32_t af_graph_node_count(const af_graph_t *g);
/* Read-only views; NULL when id is out of range. Valid until the graph is destroyed. */
const af_tensor_info_t *af_graph_tensor(const af_graph_t *g, int32_t id);
const af_node_info_t *af_graph_node(const af_graph_t *g, int32_t id);
/*
 * Id by name, or -1. O(1) average. Also valid before finalize (then, like the builder calls,
 * from the building thread only): the first lookup builds the name table, later ones add the
 * names added since, so lookups between adds stay O(1) amortised. With a duplicate name, the
 * first id that has it. Thread-safe on a finalized graph.
 */
int32_t af_graph_find_tensor(const af_graph_t *g, const char *name);
int32_t af_graph_find_node(const af_graph_t *g, const char *name);
/* Attribute by name, or NULL. */
const af_attr_t *af_graph_node_attr(const af_graph_t *g, int32_t node, const char *name);
/*
 * The order the graph came in: node ids in insertion order when that is topological, otherwise
 * Kahn's order taking the lowest-index ready node first. af_graph_node_count() entries.
 */
const int32_t *af_graph_input_order(const af_graph_t *g);
/* Root of a tensor's alias chain (itself when not an alias). */
int32_t af_graph_alias_root(const af_graph_t *g, int32_t tensor);
/* Byte offset of a tensor inside its alias root (0 when not an alias). */
int64_t af_graph_alias_root_offset(const af_graph_t *g, int32_t tensor);

/*
 * Copies a finalized graph: same tensor and node ids, names, sizes, shapes, views, in-place hints,
 * costs, attributes, constant data (shared with g: reference-counted storage, not copied) and
 * dynamic reasons; the copy is finalized and owned by the caller. With dynamic_sizes (NULL:
 * none), every dynamic tensor t with dynamic_sizes[t] > 0 gets that fixed size (and an unknown
 * shape) instead — how a graph is re-planned once warm-up rounds have shown the real sizes.
 * Errors: AF_EINVAL (g not finalized), AF_ENOMEM; *out set only on success. Thread-safe on a
 * finalized graph (it is only read).
 */
int af_graph_copy(const af_graph_t *g, const uint64_t *dynamic_sizes, af_graph_t **out,
                  af_error_t *err);

/*
 * Called by af_graph_copy_extend() for every node v of the source graph, in id order: returns 1
 * after filling *desc with one more output tensor for the copy of v (added right before the
 * node, so its id follows the tensors added so far; desc's strings need only live until the
 * call returns), 0 for none, or a negative AF_E* code that fails the copy.
 */
typedef int (*af_graph_extra_output_fn)(void *user, const af_graph_t *g, int32_t node,
                                        af_tensor_desc_t *desc);
/*
 * af_graph_copy() that can give nodes one more output each (how kernels' working memory becomes
 * planned tensors): ids of the source graph's tensors and nodes are kept, the extra tensors'
 * ids follow them. extra NULL: same as af_graph_copy(). Errors as af_graph_copy() plus the
 * callback's; *out set only on success. Thread-safe on a finalized graph.
 */
int af_graph_copy_extend(const af_graph_t *g, const uint64_t *dynamic_sizes,
                         af_graph_extra_output_fn extra, void *user, af_graph_t **out,
                         af_error_t *err);

/* ---- identity -------------------------------------------------------------------------------- */

/* A 128-bit fingerprint (XXH3-128); hi and lo are its two halves. */
typedef struct af_fingerprint {
    uint64_t hi, lo;
} af_fingerprint_t;

/* Hex digits of a fingerprint: hi then lo, 32 lowercase digits and a NUL. */
#define AF_FINGERPRINT_HEX 33

/*
 * The graph's identity: XXH3-128 over salt[0, salt_len) (what else the caller's key depends on,
 * e.g. the planner options; may be NULL with 0) followed by everything planning and execution
 * read from the graph — its name; every tensor's name, size, dtype, shape, kind, view and
 * constant data; every node's name, op, inputs, outputs, cost, in-place hints and attributes,
 * in id order. Two graphs
 * built the same way have the same fingerprint on every machine of the same byte order; the
 * formatting of the JSON they came from does not matter. Returns 0, or AF_EINVAL (g not
 * finalized, or out NULL). Thread-safe.
 */
int af_graph_fingerprint(const af_graph_t *g, const void *salt, size_t salt_len,
                         af_fingerprint_t *out);
/* Writes fp as AF_FINGERPRINT_HEX - 1 hex digits and a NUL into out. */
void af_fingerprint_hex(const af_fingerprint_t *fp, char out[AF_FINGERPRINT_HEX]);

/* ---- JSON format (docs/graph-format.md) --------------------------------------------------- */

/*
 * Parses a JSON graph from memory (len bytes, need not be NUL-terminated) and finalizes it.
 * Malformed JSON gives AF_EPARSE with line and column in err; validation errors as for
 * af_graph_finalize(); a graph that references a weights file is AF_ENOTSUP (text from memory
 * has no directory to find it in: use af_graph_load_json). *out set only on success; the
 * caller owns it.
 */
int af_graph_parse_json(const char *text, size_t len, af_graph_t **out, af_error_t *err);
/*
 * Same, from a file. AF_EIO when the file cannot be read. A referenced weights file is looked
 * up in the JSON file's directory (a name that leaves it is AF_EINVAL), mapped read-only, and
 * the constants point into the mapping (zero-copy; copied when misaligned); a file whose size
 * differs from the one recorded, or a tensor range outside it, is AF_EPARSE.
 */
int af_graph_load_json(const char *path, af_graph_t **out, af_error_t *err);
/*
 * Serialises a finalized graph to a NUL-terminated JSON string the caller frees with af_free().
 * The text holds the structure only: constant data is not written (af_graph_save_json writes it
 * to a weights file), so a graph read back from this text has constants without data.
 */
int af_graph_to_json(const af_graph_t *g, char **out, af_error_t *err);
/*
 * Writes the JSON to a file durably (af_file_write_durable: unique temp file, fsync, rename,
 * fsync of the directory). When the graph carries constant data, the bytes go first to a
 * weights file next to it (PATH with ".json" replaced by ".weights", or PATH + ".weights"),
 * written the same way, and the JSON references it by file name with each tensor's offset and
 * size (docs/graph-format.md). A string constant with data has no such form: AF_ENOTSUP.
 */
int af_graph_save_json(const af_graph_t *g, const char *path, af_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_GRAPH_H */
