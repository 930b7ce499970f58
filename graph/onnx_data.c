/*
 * ONNX importer — the bytes of the constant tensors the graph carries.
 *
 * Every constant the importer emits gets its data from one source, in this order:
 *   1. a view of a constant (Reshape, Identity... of a weight) shares its source's bytes;
 *   2. located bytes (v->raw): a payload in the mapped model file or an external data file is
 *      pointed to as is when it is aligned to its element size (zero-copy; the graph takes a
 *      reference on the mapping); otherwise — misaligned, or inside the protobuf message or
 *      the caller's buffer, which die with the import — it is copied;
 *   3. the typed fields of the TensorProto (float_data, int32_data holding 8/16-bit types,
 *      bool and fp16/bf16 bit patterns, int64_data, double_data, uint64_data for uint32/64),
 *      converted into little-endian elements;
 *   4. folded values (v->vals, doubles), converted to the element type (fp16 and bf16 rounded
 *      to nearest even).
 * A string tensor, or one whose values are not all known, gets no data. Copies go into one
 * heap store sized beforehand (af__onnx_data_prepare), each tensor 64-byte aligned; the mapped
 * pages a copy was read from are released right after (madvise), so loading a model whose
 * payloads are all misaligned peaks near one copy of the weights, not two.
 *
 * Raw bytes are little-endian; on a big-endian host they are always copied and swapped.
 * Threading: importer state only; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <string.h>

#define T(x) ONNX__TENSOR_PROTO__DATA_TYPE__##x

static const int big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

/* The value whose bytes v's data are (views follow their source), bounded. */
static const af__onnx_val_t *data_of(const af__onnx_imp_t *im, const af__onnx_val_t *v)
{
    for (size_t hops = 0; v->data_src >= 0 && hops < im->n_vals; hops++)
        v = &im->vals[v->data_src];
    return v;
}

enum { SRC_NONE, SRC_MAP, SRC_COPY, SRC_TYPED, SRC_VALS, SRC_STRINGS };

/* The strings of a STRING constant (its TensorProto's string_data or a Constant's
 * value_string(s), every element given) with their count in *n, or NULL. */
static const ProtobufCBinaryData *string_data(const af__onnx_imp_t *im, const af__onnx_val_t *v,
                                              size_t *n)
{
    static const ProtobufCBinaryData none;
    const af__onnx_val_t *s = data_of(im, v);
    int64_t numel = af__onnx_numel(v);
    const ProtobufCBinaryData *d = s->tp ? s->tp->string_data : s->strs;
    *n = s->tp ? s->tp->n_string_data : s->n_strs;
    if (v->elem != T(STRING) || s->elem != T(STRING) || numel < 0 || af__onnx_numel(s) != numel ||
        *n != (size_t)numel || (!d && *n) || (!s->tp && !s->strs))
        return NULL;
    return d ? d : &none; /* an empty tensor */
}

/* Bytes of the n strings at d. */
static uint64_t string_bytes(const ProtobufCBinaryData *d, size_t n)
{
    uint64_t b = 0;
    for (size_t i = 0; d && i < n; i++)
        b += d[i].len; /* each below the message size: no overflow */
    return b;
}

/* How constant v gets its `bytes` bytes. */
static int source(const af__onnx_imp_t *im, const af__onnx_val_t *v, uint64_t bytes)
{
    int sz = af__onnx_elem_size(v->elem);
    int64_t n = af__onnx_numel(v);
    size_t ns;
    if (v->elem == T(STRING))
        return string_data(im, v, &ns) ? SRC_STRINGS : SRC_NONE;
    if (sz == 0 || n < 0 || (uint64_t)n * (uint64_t)sz != bytes)
        return SRC_NONE;
    const af__onnx_val_t *s = data_of(im, v);
    if (s != v && (s->elem != v->elem || af__onnx_numel(s) != n))
        return SRC_NONE; /* a view that changes the element type: not ours to reinterpret */
    if (s->raw) {
        if (s->raw_len != bytes)
            return SRC_NONE;
        int align = sz > 8 ? 8 : sz;
        int aligned = ((uintptr_t)s->raw & (uintptr_t)(align - 1)) == 0;
        int map = s->raw_store && aligned && (!big_endian || sz == 1) && !im->opts->copy_data;
        return map ? SRC_MAP : SRC_COPY;
    }
    const Onnx__TensorProto *t = s->tp;
    if (t &&
        !(t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return SRC_TYPED;
    return af__onnx_vals_known(v) ? SRC_VALS : SRC_NONE;
}

/* The tensors af__onnx_emit() makes constants of (the same test as its emit_tensor). */
static int emitted_const(const af__onnx_val_t *v)
{
    return (v->used || v->is_output) && !v->is_input && v->is_const && v->producer < 0 &&
           v->alias_of < 0;
}

static uint64_t val_bytes(const af__onnx_val_t *v)
{
    int64_t n = af__onnx_numel(v);
    int sz = af__onnx_elem_size(v->elem);
    return n >= 0 && sz > 0 && (uint64_t)n <= UINT64_MAX / (uint64_t)sz ? (uint64_t)n * (uint64_t)sz
                                                                        : 0;
}

int af__onnx_data_prepare(af__onnx_imp_t *im)
{
    if (im->opts->skip_data)
        return 0;
    uint64_t total = 0;
    for (size_t i = 0; i < im->n_vals; i++) {
        const af__onnx_val_t *v = &im->vals[i];
        if (!emitted_const(v))
            continue;
        uint64_t b = val_bytes(v);
        int src = source(im, v, b);
        size_t ns = 0;
        const ProtobufCBinaryData *strs = src == SRC_STRINGS ? string_data(im, v, &ns) : NULL;
        b += string_bytes(strs, ns); /* the handles, then the strings they point at */
        if (src != SRC_NONE && src != SRC_MAP && !af__add_u64(af__align_up(total, 64), b, &total))
            return af__err(im->err, AF_ESIZE, "constant data overflows");
    }
    if (!total)
        return 0;
    if (total > SIZE_MAX / 2 || af__store_heap((size_t)total, &im->heap))
        return af__err(im->err, AF_ENOMEM, "out of memory for %llu bytes of constant data",
                       (unsigned long long)total);
    return 0;
}

/* ---- conversions ------------------------------------------------------------------------- */

/* Little-endian store of the low sz bytes of u. */
static void put_le(uint8_t *p, uint64_t u, int sz)
{
    for (int i = 0; i < sz; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

/* IEEE half bits of d, rounded to nearest even (the default rounding mode). */
static uint16_t double_to_half(double d)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d))
        return sign | 0x7e00;
    if (a >= 65520.0) /* rounds to infinity */
        return sign | 0x7c00;
    int e;
    double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    if (a == 0 || e - 1 < -14) {
        double q = nearbyint(ldexp(a, 24)); /* subnormal: units of 2^-24 (0x400 = normal) */
        return sign | (uint16_t)q;
    }
    double q = nearbyint((2 * m - 1) * 1024);
    int E = e - 1;
    if (q >= 1024) {
        q = 0;
        E++;
    }
    if (E > 15)
        return sign | 0x7c00;
    return sign | (uint16_t)((E + 15) << 10) | (uint16_t)q;
}

/* bfloat16 bits of d: through float, upper half rounded to nearest even. */
static uint16_t double_to_bf16(double d)
{
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return (uint16_t)(u >> 16 | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

double af__onnx_round_to(double v, int32_t elem)
{
    if (elem == T(FLOAT16)) {
        uint16_t h = double_to_half(v);
        uint8_t b[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
        return af__onnx_raw_elem(b, elem);
    }
    if (elem == T(BFLOAT16)) {
        uint16_t h = double_to_bf16(v);
        uint8_t b[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
        return af__onnx_raw_elem(b, elem);
    }
    return v;
}

/* Element value d written as elem at p. */
static void put_elem(uint8_t *p, double d, int32_t elem)
{
    switch (elem) {
    case T(FLOAT): {
        float f = (float)d;
        uint32_t u;
        memcpy(&u, &f, 4);
        put_le(p, u, 4);
        return;
    }
    case T(DOUBLE): {
        uint64_t u;
        memcpy(&u, &d, 8);
        put_le(p, u, 8);
        return;
    }
    case T(FLOAT16):
        put_le(p, double_to_half(d), 2);
        return;
    case T(BFLOAT16):
        put_le(p, double_to_bf16(d), 2);
        return;
    case T(BOOL):
        p[0] = d != 0;
        return;
    case T(UINT64):
        put_le(p, d >= 18446744073709551615.0 ? UINT64_MAX : d > 0 ? (uint64_t)d : 0, 8);
        return;
    default: /* integers: exact in the double; two's complement truncated to the size */
        put_le(p, (uint64_t)af__onnx_d2i(d), af__onnx_elem_size(elem));
    }
}

/* Element i of t's typed field as little-endian bytes. */
static void put_typed(uint8_t *p, const Onnx__TensorProto *t, int32_t elem, size_t i)
{
    int sz = af__onnx_elem_size(elem);
    uint32_t u32;
    uint64_t u64;
    switch (elem) {
    case T(FLOAT):
    case T(COMPLEX64): /* pairs of floats */
        memcpy(&u32, &t->float_data[i], 4);
        put_le(p, u32, 4);
        return;
    case T(DOUBLE):
    case T(COMPLEX128):
        memcpy(&u64, &t->double_data[i], 8);
        put_le(p, u64, 8);
        return;
    case T(INT64):
        put_le(p, (uint64_t)t->int64_data[i], 8);
        return;
    case T(UINT32):
    case T(UINT64):
        put_le(p, t->uint64_data[i], sz);
        return;
    default: /* int32_data: int32 itself, the 8/16-bit integers, bool, fp16/bf16 bits */
        put_le(p, (uint64_t)(int64_t)t->int32_data[i], sz);
    }
}

/* Fills dst (bytes) from v's source src. */
static void fill(uint8_t *dst, const af__onnx_val_t *v, const af__onnx_val_t *s, int src,
                 uint64_t bytes)
{
    int sz = af__onnx_elem_size(v->elem);
    size_t n = (size_t)(bytes / (uint64_t)sz);
    if (src == SRC_COPY) {
        if (!big_endian || sz == 1) {
            memcpy(dst, s->raw, (size_t)bytes);
            return;
        }
        int part = v->elem == T(COMPLEX64) || v->elem == T(COMPLEX128) ? sz / 2 : sz;
        for (size_t i = 0; i < (size_t)bytes; i += (size_t)part) /* swap each element */
            for (int k = 0; k < part; k++)
                dst[i + (size_t)k] = s->raw[i + (size_t)(part - 1 - k)];
    } else if (src == SRC_TYPED) {
        int complex = v->elem == T(COMPLEX64) || v->elem == T(COMPLEX128);
        int step = complex ? sz / 2 : sz;
        for (size_t i = 0; i < n * (complex ? 2 : 1); i++)
            put_typed(dst + i * (size_t)step, s->tp, v->elem, i);
    } else {
        for (size_t i = 0; i < n; i++)
            put_elem(dst + i * (size_t)sz, v->vals[i], v->elem);
    }
}

/* The handles of a STRING constant at dst (bytes of them), its strings right after: graph-owned
 * copies, so the model's buffer may go once the import returns. */
static void fill_strings(uint8_t *dst, const ProtobufCBinaryData *d, size_t n, uint64_t bytes)
{
    af_string_t *h = (af_string_t *)(void *)dst;
    char *at = (char *)dst + bytes;
    for (size_t i = 0; i < n; i++) {
        size_t len = d[i].len;
        if (len)
            memcpy(at, d[i].data, len);
        h[i] = (af_string_t){.data = at, .len = len};
        at += len;
    }
}

int af__onnx_const_bytes(const af__onnx_imp_t *im, const af__onnx_val_t *v, const uint8_t **p,
                         uint8_t **owned, uint64_t *bytes)
{
    *owned = NULL;
    *bytes = val_bytes(v);
    int src = *bytes ? source(im, v, *bytes) : SRC_NONE;
    const af__onnx_val_t *s = data_of(im, v);
    if (src == SRC_NONE || src == SRC_STRINGS) /* handles exist only in the graph's copy */
        return 1;
    if ((src == SRC_MAP || src == SRC_COPY) && !big_endian) {
        *p = s->raw;
        return 0;
    }
    if (!(*owned = af__malloc((size_t)*bytes)))
        return AF_ENOMEM;
    fill(*owned, v, s, src, *bytes);
    *p = *owned;
    return 0;
}

int af__onnx_data_attach(af__onnx_imp_t *im, af_graph_t *gr, int32_t id, const af__onnx_val_t *v)
{
    if (im->opts->skip_data || !emitted_const(v))
        return 0;
    uint64_t bytes = val_bytes(v);
    int src = source(im, v, bytes);
    const af__onnx_val_t *s = data_of(im, v);
    if (src == SRC_NONE)
        return 0;
    if (src == SRC_MAP)
        return af__graph_attach(gr, id, s->raw_store, s->raw, im->err);
    if (bytes == 0) { /* an empty tensor has (empty) data too */
        static const uint64_t empty;
        return af__graph_attach(gr, id, NULL, &empty, im->err);
    }
    size_t at = (size_t)af__align_up(im->heap_used, 64);
    size_t ns = 0;
    const ProtobufCBinaryData *strs = src == SRC_STRINGS ? string_data(im, v, &ns) : NULL;
    uint64_t extra = string_bytes(strs, ns);
    if (!im->heap || at + bytes + extra > im->heap->len) /* prepare() sized it for these */
        return af__err(im->err, AF_EINVAL, "tensor '%s': constant data was not reserved", v->name);
    if (strs)
        fill_strings(im->heap->base + at, strs, ns, bytes);
    else
        fill(im->heap->base + at, v, s, src, bytes);
    if (src == SRC_COPY) /* the source pages were read once; the copy is what stays */
        af__store_release_pages(s->raw_store, s->raw, (size_t)bytes);
    im->heap_used = at + (size_t)(bytes + extra);
    return af__graph_attach(gr, id, im->heap, im->heap->base + at, im->err);
}

#endif /* AF_HAVE_ONNX */
