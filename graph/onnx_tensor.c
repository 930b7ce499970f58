/*
 * ONNX TensorProto files: decoding one serialized tensor into plain element bytes, and
 * encoding plain bytes back (raw_data). Used for the ONNX backend test data
 * (test_data_set_N/input_K.pb) by `arenaflow run --input` and `arenaflow onnx-test`.
 *
 * The importer decodes initializers too (onnx_fold.c keeps small ones as doubles for folding);
 * this file is self-contained on purpose: it produces the exact element bytes (int64 beyond
 * 2^53, NaN payloads, fp16 patterns unchanged), which the folding path does not need.
 *
 * Packing rules (onnx.proto): raw_data holds fixed-width little-endian elements; otherwise the
 * typed field of the element type does — float_data (FLOAT), double_data (DOUBLE), int64_data
 * (INT64), uint64_data (UINT32, UINT64), int32_data (INT32, INT16, INT8, UINT16, UINT8, BOOL,
 * FLOAT16 and BFLOAT16 as 16-bit patterns, one element per int32), string_data (STRING: decoded
 * into one block, the af_string_t handles first and the strings' bytes after them, so the
 * tensor's `bytes` are the handles' and one free releases both).
 *
 * Invariant: the element count is checked against the dims before any byte is written, so a
 * corrupt file gives AF_EPARSE, never an out-of-bounds access. Reentrant, no state.
 */
#include "arenaflow/onnx.h"
#include "common/common_int.h"

#include <string.h>

void af_onnx_tensor_clear(af_onnx_tensor_t *t)
{
    if (!t)
        return;
    af__free(t->name);
    af__free(t->data);
    memset(t, 0, sizeof(*t));
}

#ifdef AF_HAVE_ONNX
#include "graph/onnx_int.h"

#define T(x) ONNX__TENSOR_PROTO__DATA_TYPE__##x

/* protobuf-c allocations through the library hooks; *data is set when one failed. */
static void *pb_alloc(void *data, size_t size)
{
    void *p = af__malloc(size ? size : 1);
    if (!p)
        *(int *)data = 1;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data;
    af__free(p);
}

static void put_le(uint8_t *p, uint64_t v, int size)
{
    for (int i = 0; i < size; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Element count held by the typed field of elem; -1 when the type has no typed field we read. */
static int64_t typed_count(const Onnx__TensorProto *t, int32_t elem)
{
    switch (elem) {
    case T(FLOAT):
        return (int64_t)t->n_float_data;
    case T(DOUBLE):
        return (int64_t)t->n_double_data;
    case T(INT64):
        return (int64_t)t->n_int64_data;
    case T(UINT32):
    case T(UINT64):
        return (int64_t)t->n_uint64_data;
    case T(INT32):
    case T(INT16):
    case T(INT8):
    case T(UINT16):
    case T(UINT8):
    case T(BOOL):
    case T(FLOAT16):
    case T(BFLOAT16):
        return (int64_t)t->n_int32_data;
    default:
        return -1;
    }
}

/* Element i of the typed field as its little-endian bit pattern. */
static uint64_t typed_bits(const Onnx__TensorProto *t, int32_t elem, size_t i)
{
    switch (elem) {
    case T(FLOAT): {
        uint32_t u;
        memcpy(&u, &t->float_data[i], 4);
        return u;
    }
    case T(DOUBLE): {
        uint64_t u;
        memcpy(&u, &t->double_data[i], 8);
        return u;
    }
    case T(INT64):
        return (uint64_t)t->int64_data[i];
    case T(UINT32):
    case T(UINT64):
        return t->uint64_data[i];
    default:
        return (uint64_t)(uint32_t)t->int32_data[i];
    }
}

static const char *elem_name(int32_t elem)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&onnx__tensor_proto__data_type__descriptor, elem);
    return v ? v->name : "?";
}

/* string_data into one block: the n handles (bytes of them), then the strings they point at. */
static int fill_strings(const Onnx__TensorProto *t, af_onnx_tensor_t *out, uint64_t n,
                        uint64_t bytes, af_error_t *err)
{
    const char *nm = t->name ? t->name : "";
    if (t->has_raw_data || (uint64_t)t->n_string_data != n)
        return af__err(err, AF_EPARSE, "tensor '%s': %zu strings in string_data, dims need %llu%s",
                       nm, t->n_string_data, (unsigned long long)n,
                       t->has_raw_data ? " (raw_data cannot hold strings)" : "");
    uint64_t total = bytes;
    for (size_t i = 0; i < t->n_string_data; i++)
        if (!af__add_u64(total, t->string_data[i].len, &total) || total > SIZE_MAX / 2)
            return af__err(err, AF_EPARSE, "tensor '%s': size overflows", nm);
    out->data = af__malloc(total ? (size_t)total : 1);
    out->name = af__strdup(nm);
    if (!out->data || !out->name)
        return af__err(err, AF_ENOMEM, "out of memory decoding tensor '%s'", nm);
    out->bytes = bytes;
    af_string_t *h = out->data;
    char *at = (char *)out->data + bytes;
    for (size_t i = 0; i < t->n_string_data; i++) {
        size_t len = t->string_data[i].len;
        if (len)
            memcpy(at, t->string_data[i].data, len);
        h[i] = (af_string_t){.data = at, .len = len};
        at += len;
    }
    return 0;
}

/* Shape, type and element bytes of an unpacked tensor into out. */
static int fill(const Onnx__TensorProto *t, af_onnx_tensor_t *out, af_error_t *err)
{
    const char *nm = t->name ? t->name : "";
    int32_t elem = t->has_data_type ? t->data_type : 0;
    int sz = af__onnx_elem_size(elem);
    out->dtype = (af_dtype_t)af__onnx_dtype(elem);
    if (!elem)
        return af__err(err, AF_ENOTSUP,
                       "tensor '%s': no element type: not a TensorProto (ONNX "
                       "sequence, map and optional values are not supported)",
                       nm);
    if (out->dtype == AF_DTYPE_UNKNOWN || sz == 0)
        return af__err(err, AF_ENOTSUP,
                       "tensor '%s': element type %s (%d) is not supported (complex numbers "
                       "are not)",
                       nm, elem_name(elem), (int)elem);
    if (t->segment)
        return af__err(err, AF_ENOTSUP,
                       "tensor '%s': a 'segment' field: a segmented tensor, or "
                       "not a TensorProto (ONNX sequence and optional values are not supported)",
                       nm);
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return af__err(err, AF_ENOTSUP,
                       "tensor '%s': data in an external file is not supported "
                       "in a standalone tensor file",
                       nm);
    if (t->n_dims > AF_MAX_RANK)
        return af__err(err, AF_ENOTSUP, "tensor '%s': rank %zu above %d", nm, t->n_dims,
                       AF_MAX_RANK);
    uint64_t n = 1;
    out->rank = (int32_t)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || !af__mul_u64(n, (uint64_t)t->dims[i], &n))
            return af__err(err, AF_EPARSE, "tensor '%s': bad dim %lld", nm, (long long)t->dims[i]);
        out->shape[i] = t->dims[i];
    }
    uint64_t bytes;
    if (!af__mul_u64(n, (uint64_t)sz, &bytes) || bytes > SIZE_MAX / 2)
        return af__err(err, AF_EPARSE, "tensor '%s': size overflows", nm);
    if (elem == T(STRING))
        return fill_strings(t, out, n, bytes, err);
    if (t->has_raw_data) {
        if ((uint64_t)t->raw_data.len != bytes)
            return af__err(err, AF_EPARSE,
                           "tensor '%s': raw_data has %zu bytes, dims and type need %llu", nm,
                           t->raw_data.len, (unsigned long long)bytes);
    } else if (typed_count(t, elem) != (int64_t)n) {
        return af__err(err, AF_EPARSE, "tensor '%s': %lld data elements, dims need %llu", nm,
                       (long long)typed_count(t, elem), (unsigned long long)n);
    }
    out->data = af__malloc(bytes ? (size_t)bytes : 1);
    out->name = af__strdup(nm);
    if (!out->data || !out->name)
        return af__err(err, AF_ENOMEM, "out of memory decoding tensor '%s'", nm);
    out->bytes = bytes;
    if (t->has_raw_data && bytes) /* an empty raw_data may come with a NULL pointer */
        memcpy(out->data, t->raw_data.data, (size_t)bytes);
    else
        for (uint64_t i = 0; i < n; i++)
            put_le((uint8_t *)out->data + i * (uint64_t)sz, typed_bits(t, elem, (size_t)i), sz);
    return 0;
}

int af_onnx_tensor_decode(const void *buf, size_t len, af_onnx_tensor_t *out, af_error_t *err)
{
    if (!out || (!buf && len))
        return af__err(err, AF_EINVAL, "af_onnx_tensor_decode: NULL argument");
    memset(out, 0, sizeof(*out));
    int oom = 0;
    ProtobufCAllocator al = {pb_alloc, pb_free, &oom};
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(&al, len, buf);
    if (!t)
        return oom ? af__err(err, AF_ENOMEM, "out of memory decoding a tensor")
                   : af__err(err, AF_EPARSE, "not a serialized ONNX TensorProto (%zu bytes)", len);
    int rc = fill(t, out, err);
    onnx__tensor_proto__free_unpacked(t, &al);
    if (rc)
        af_onnx_tensor_clear(out);
    return rc;
}

/* ONNX element type of a dtype, 0 when it has none. */
static int32_t onnx_elem(af_dtype_t dt)
{
    for (int32_t e = 1; e <= T(BFLOAT16); e++)
        if (af__onnx_elem_size(e) > 0 && af__onnx_dtype(e) == (int)dt)
            return e;
    return 0;
}

int af_onnx_tensor_encode(const af_onnx_tensor_t *t, void **out, size_t *len, af_error_t *err)
{
    if (!t || !out || !len || (!t->data && t->bytes))
        return af__err(err, AF_EINVAL, "af_onnx_tensor_encode: NULL argument");
    int32_t elem = onnx_elem(t->dtype);
    if (!elem || t->rank < 0 || t->rank > AF_MAX_RANK)
        return af__err(err, AF_EINVAL, "tensor '%s': dtype %s or rank %d cannot be encoded",
                       t->name ? t->name : "", af_dtype_name(t->dtype), (int)t->rank);
    uint64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++)
        if (t->shape[i] < 0 || !af__mul_u64(n, (uint64_t)t->shape[i], &n))
            return af__err(err, AF_EINVAL, "tensor '%s': bad dim", t->name ? t->name : "");
    if (n * af_dtype_size(t->dtype) != t->bytes)
        return af__err(err, AF_EINVAL, "tensor '%s': %llu bytes, the shape needs %llu",
                       t->name ? t->name : "", (unsigned long long)t->bytes,
                       (unsigned long long)(n * af_dtype_size(t->dtype)));
    Onnx__TensorProto m;
    onnx__tensor_proto__init(&m);
    int64_t dims[AF_MAX_RANK];
    memcpy(dims, t->shape, sizeof(dims));
    m.n_dims = (size_t)t->rank;
    m.dims = dims;
    m.has_data_type = 1;
    m.data_type = elem;
    m.name = t->name ? t->name : (char *)"";
    ProtobufCBinaryData *strs = NULL;
    if (t->dtype == AF_DTYPE_STRING) { /* string_data, pointing at the handles' bytes */
        if (!(strs = af__malloc(n ? (size_t)n * sizeof(*strs) : 1)))
            return af__err(err, AF_ENOMEM, "out of memory encoding a tensor");
        const af_string_t *h = t->data;
        for (uint64_t i = 0; i < n; i++)
            strs[i] = (ProtobufCBinaryData){(size_t)h[i].len, (uint8_t *)(uintptr_t)h[i].data};
        m.n_string_data = (size_t)n;
        m.string_data = strs;
    } else {
        m.has_raw_data = 1;
        m.raw_data.len = (size_t)t->bytes;
        m.raw_data.data = t->data;
    }
    size_t need = onnx__tensor_proto__get_packed_size(&m);
    uint8_t *b = af__malloc(need ? need : 1);
    if (b)
        *len = onnx__tensor_proto__pack(&m, b);
    af__free(strs);
    if (!b)
        return af__err(err, AF_ENOMEM, "out of memory encoding a tensor");
    *out = b;
    return 0;
}

#else /* !AF_HAVE_ONNX */

int af_onnx_tensor_decode(const void *buf, size_t len, af_onnx_tensor_t *out, af_error_t *err)
{
    (void)buf;
    (void)len;
    if (out)
        memset(out, 0, sizeof(*out));
    return af__err(err, AF_ENOTSUP, "ONNX support is not built in (needs protobuf-c)");
}

int af_onnx_tensor_encode(const af_onnx_tensor_t *t, void **out, size_t *len, af_error_t *err)
{
    (void)t;
    (void)out;
    (void)len;
    return af__err(err, AF_ENOTSUP, "ONNX support is not built in (needs protobuf-c)");
}

#endif /* AF_HAVE_ONNX */
