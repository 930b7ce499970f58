/*
 * arenaflow — ONNX import with static shape inference.
 *
 * af_onnx_load() reads an .onnx model (protobuf) and maps it onto the graph model (graph.h):
 *   - initializers and Constant outputs become constant tensors (outside the activation arena)
 *     that carry their bytes (af_tensor_info_t.data): raw_data, the typed fields (float_data,
 *     int32_data with ONNX's packing of 8/16-bit types and bool, int64_data, double_data,
 *     uint64_data), or external data files next to the model (data_location EXTERNAL, keys
 *     location/offset/length/checksum; a location that leaves the model's directory is
 *     refused); folded values (Shape -> Gather -> Concat...) carry theirs too;
 *   - zero-copy: af_onnx_load() maps the model file read-only and points constants into the
 *     mapping (external files likewise) when the bytes are aligned to their element size, and
 *     copies them into one aligned block the graph owns otherwise. The payloads are located
 *     in the wire format before protobuf-c unpacks the rest, so they are never copied on the
 *     way; the graph keeps the mapping alive until af_graph_destroy() (and graph copies share
 *     it). af_onnx_load_mem() copies the bytes (the caller's buffer is only borrowed for the
 *     call);
 *   - graph inputs and outputs keep their kinds;
 *   - view ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) become aliases of their input
 *     (offset 0), so they own no memory;
 *   - node attributes (ints, floats, strings and their lists) are carried over;
 *   - shapes are inferred statically in C, and shape-computing subgraphs (Shape -> Gather ->
 *     Concat -> Reshape...) are folded into integer constants, so computed shapes become static;
 *   - an If whose condition folds to a constant is replaced by the branch it takes.
 *   - nodes stored out of topological order are sorted (Kahn's order, stable: file order among
 *     the ready nodes), as ONNX Runtime accepts them.
 * Whatever cannot be known at load time becomes a dynamic tensor (AF_BYTES_DYNAMIC), never a
 * guess, with the reason recorded (af_graph_dynamic_reason(): the op, the node and what was not
 * known). The returned graph is finalized.
 *
 * An If whose condition is only known at run time keeps both branches (planned together: a
 * conservative superset) and an If node that reads both branches' outputs.
 *
 * Errors (never a crash, never a print): AF_EPARSE (not an ONNX model, truncated or corrupt
 * protobuf, malformed tensor data), AF_ENOTSUP (Loop/Scan unless opaque_control_flow,
 * sequence/map graph inputs..., external data when loading from memory), AF_ESHAPE (inconsistent
 * shapes: the message names the op and the node), AF_EINVAL (bad --input spec, or an input left
 * with unknown dims when allow_dynamic is off: the message names the input and its symbolic dims),
 * AF_ENOENT (--input names no input), AF_EIO (file cannot be read), AF_ENOMEM.
 *
 * Threading: reentrant (no global state). Ownership: *out belongs to the caller
 * (af_graph_destroy); opts and its strings are only read during the call.
 */
#ifndef ARENAFLOW_ONNX_H
#define ARENAFLOW_ONNX_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_onnx_opts {
    /*
     * Input dims, "NAME=1,3,224,224" (NAME a graph input; "NAME=" is a scalar) or
     * "PARAM=4" (PARAM a symbolic dim name such as "batch_size", set everywhere it appears).
     */
    const char *const *inputs;
    int n_inputs;
    /* 1: inputs may keep unknown dims (their tensors become dynamic). 0 (default): error. */
    int allow_dynamic;
    /*
     * 1 (default): where inference cannot tell a shape, use the fully numeric shape the model
     * declares (value_info / graph outputs); a declared shape that contradicts the inferred one
     * is an AF_ESHAPE error. 0: inferred shapes only (used to compare with ONNX's inference).
     */
    int use_declared;
    /* 1: keep the nodes whose outputs were folded into constants (default 0: drop them). */
    int keep_folded;
    /*
     * 1: Loop, Scan and other ops with subgraphs (If excepted: it is always handled) become one
     * opaque node that also reads every outer value its body reads; its outputs are dynamic and
     * its body's memory is not planned. 0 (default): they are rejected with AF_ENOTSUP.
     */
    int opaque_control_flow;
    /* 1: do not load constant data (shapes and plans only; constants get no data). 0 default. */
    int skip_data;
    /*
     * 1: copy every constant's bytes into memory the graph owns, keeping no mapping of the model
     * or its external files (use it when those files may change or disappear while the graph
     * lives: a mapped file truncated underneath is a SIGBUS). 0 (default): zero-copy.
     */
    int copy_data;
    /*
     * How the caller takes input dims, for messages about unknown ones: "give them with
     * <dims_flag>NAME=d0,d1,...". NULL (default): "--input " (the CLI); the daemon's upload
     * says "?input=".
     */
    const char *dims_flag;
} af_onnx_opts_t;

/* Fills *o with the defaults above. */
void af_onnx_opts_init(af_onnx_opts_t *o);

/* Loads a model from a file. opts may be NULL (defaults). *out set only on success. */
int af_onnx_load(const char *path, const af_onnx_opts_t *opts, af_graph_t **out, af_error_t *err);

/* Same, from len bytes in memory (fuzzing, daemon uploads). The buffer is only read. */
int af_onnx_load_mem(const void *data, size_t len, const af_onnx_opts_t *opts, af_graph_t **out,
                     af_error_t *err);

/* 1 when the ONNX importer is built in; otherwise the loaders return AF_ENOTSUP. */
int af_onnx_available(void);

/* ---- ONNX TensorProto files (graph/onnx_tensor.c) ---------------------------------------
 *
 * One serialized TensorProto, the format of the ONNX backend test data (test_data_set_N/
 * input_K.pb, output_K.pb). Decoding reads raw_data (little-endian) and every typed field with
 * ONNX's packing rules: float_data (FLOAT), double_data (DOUBLE), int64_data (INT64),
 * uint64_data (UINT32, UINT64), int32_data (INT32, INT16, INT8, UINT16, UINT8, BOOL, and
 * FLOAT16/BFLOAT16 as their 16-bit patterns). The element bytes come out little-endian in C
 * order, whatever field held them. STRING tensors (string_data) decode to af_string_t handles
 * (`bytes` = 16 x count) followed, in the same block, by the strings they point at; encoding a
 * string tensor writes string_data from the handles. Complex numbers, external data, rank above
 * AF_MAX_RANK are AF_ENOTSUP (the message says which); a corrupt message, or data whose size
 * disagrees with the dims, is AF_EPARSE.
 */
typedef struct af_onnx_tensor {
    char *name;       /* the TensorProto's name ("" when it has none); owned, af_free() */
    af_dtype_t dtype; /* never AF_DTYPE_UNKNOWN after a successful decode */
    int32_t rank;     /* 0 = scalar */
    int64_t shape[AF_MAX_RANK];
    void *data;     /* bytes elements (C order, little-endian); owned, af_free(); non-NULL
                     * (strings: the handles, then the bytes they point at, one block) */
    uint64_t bytes; /* element count x af_dtype_size(dtype) */
} af_onnx_tensor_t;

/*
 * Decodes len bytes of a serialized TensorProto into *out (cleared first; on failure it is left
 * empty). Returns 0, AF_EPARSE, AF_ENOTSUP, AF_ENOMEM, or AF_ENOTSUP when the importer is not
 * built in. Reentrant; the buffer is only read.
 */
int af_onnx_tensor_decode(const void *buf, size_t len, af_onnx_tensor_t *out, af_error_t *err);
/*
 * Encodes t as a TensorProto (raw_data) into a buffer the caller frees with af_free(). Returns
 * 0, AF_EINVAL (unknown dtype, bytes disagree with the shape), AF_ENOMEM. Reentrant.
 */
int af_onnx_tensor_encode(const af_onnx_tensor_t *t, void **out, size_t *len, af_error_t *err);
/* Frees what a decode gave *t and empties it. NULL is a no-op. */
void af_onnx_tensor_clear(af_onnx_tensor_t *t);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_ONNX_H */
