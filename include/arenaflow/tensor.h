/*
 * arenaflow — host tensors and tensor files: NumPy .npy and ONNX TensorProto .pb.
 *
 * A host tensor is a dtype, a shape and the element bytes in C order, little-endian: what a
 * caller binds to a session input (af_buffer_t{data, bytes}) or reads from an output.
 *
 * .npy (NumPy format versions 1.0, 2.0 and 3.0): element types '<f2' '<f4' '<f8' '|i1' '<i2'
 * '<i4' '<i8' '|u1' '<u2' '<u4' '<u8' '|b1' (and the same with '=' or '|' where NumPy writes
 * them); Fortran order and big-endian data are read into C order, little-endian. Object arrays,
 * strings, complex numbers and rank above AF_MAX_RANK are refused with AF_ENOTSUP and a message
 * saying which. The writer
 * writes version 1.0 (2.0 when the header does not fit), headers padded to 64 bytes, as NumPy.
 *
 * .pb: one serialized ONNX TensorProto (af_onnx_tensor_decode, onnx.h; needs the ONNX importer).
 *
 * Threading: every function is reentrant. Ownership: a tensor filled by a read owns its data
 * and name (af_tensor_clear frees them); write functions only read the tensor.
 */
#ifndef ARENAFLOW_TENSOR_H
#define ARENAFLOW_TENSOR_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_tensor {
    char *name; /* .pb files: the tensor's name; NULL or "" otherwise */
    af_dtype_t dtype;
    int32_t rank; /* 0 = scalar */
    int64_t shape[AF_MAX_RANK];
    void *data;     /* element bytes, C order, little-endian (AF_DTYPE_STRING: af_string_t
                     * handles; a .pb read keeps the strings after them in the same block) */
    uint64_t bytes; /* element count x af_dtype_size(dtype) */
} af_tensor_t;

/* Element count (product of the dims; 1 for a scalar). */
uint64_t af_tensor_numel(const af_tensor_t *t);
/* Element i of t as a double (f16/bf16 widened, integers exact up to 2^53, bool 0/1); 0 when
 * i is out of range or t holds strings. */
double af_tensor_get(const af_tensor_t *t, uint64_t i);
/* Frees the data and name a read gave *t and empties it. NULL is a no-op. */
void af_tensor_clear(af_tensor_t *t);

/*
 * Parses a .npy file held in memory into *out (cleared first; left empty on failure). Returns 0,
 * AF_EPARSE (not .npy, truncated, malformed header, data size disagrees with the shape),
 * AF_ENOTSUP (the cases above), AF_ENOMEM.
 */
int af_tensor_npy_parse(const void *buf, size_t len, af_tensor_t *out, af_error_t *err);
/*
 * Serialises t as .npy into a buffer the caller frees with af_free(). Returns 0, AF_EINVAL
 * (dtype without a NumPy type — bf16, string: save those as .pb — or bytes disagree with the
 * shape), AF_ENOMEM.
 */
int af_tensor_npy_encode(const af_tensor_t *t, void **out, size_t *len, af_error_t *err);

/*
 * Reads a tensor file: .npy when it starts with NumPy's magic, otherwise a TensorProto (.pb).
 * Errors as for the parsers, plus AF_EIO (cannot read the file; the message names it).
 */
int af_tensor_load(const char *path, af_tensor_t *out, af_error_t *err);
/* Writes t as .npy, durably (af_file_write_durable: temp file, fsync, rename). 0, AF_EIO,
 * AF_EINVAL, AF_ENOMEM. */
int af_tensor_save_npy(const char *path, const af_tensor_t *t, af_error_t *err);
/* Writes t as a TensorProto .pb, durably, the same way. 0, AF_EIO, AF_EINVAL, AF_ENOMEM,
 * AF_ENOTSUP. */
int af_tensor_save_pb(const char *path, const af_tensor_t *t, af_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_TENSOR_H */
