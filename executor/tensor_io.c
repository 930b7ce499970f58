/*
 * Tensor files: NumPy .npy reader and writer, and loading/saving either format by content.
 *
 * .npy layout (numpy/lib/format.py documents it): the magic "\x93NUMPY", a major and a minor
 * version byte, the header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0), then
 * the header — an ASCII (3.0: UTF-8) Python dict literal with the keys 'descr', 'fortran_order'
 * and 'shape', padded with spaces and a final '\n' so the data starts on a 64-byte boundary —
 * and the raw element bytes. The header parser below reads exactly that literal: strings,
 * True/False and tuples of non-negative integers; anything else is AF_EPARSE.
 *
 * Reentrant; no state.
 */
#include "arenaflow/onnx.h"
#include "arenaflow/tensor.h"
#include "common/common_int.h"
#include "executor/kernels_ref.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* NumPy type strings (without the byte-order character) per dtype. */
static const struct {
    const char *code;
    af_dtype_t dt;
} npy_types[] = {
    {"f2", AF_DTYPE_F16}, {"f4", AF_DTYPE_F32}, {"f8", AF_DTYPE_F64}, {"i1", AF_DTYPE_I8},
    {"i2", AF_DTYPE_I16}, {"i4", AF_DTYPE_I32}, {"i8", AF_DTYPE_I64}, {"u1", AF_DTYPE_U8},
    {"u2", AF_DTYPE_U16}, {"u4", AF_DTYPE_U32}, {"u8", AF_DTYPE_U64}, {"b1", AF_DTYPE_BOOL},
};

uint64_t af_tensor_numel(const af_tensor_t *t)
{
    uint64_t n = 1;
    for (int32_t i = 0; t && i < t->rank; i++)
        n *= t->shape[i] > 0 ? (uint64_t)t->shape[i] : 0;
    return n;
}

double af_tensor_get(const af_tensor_t *t, uint64_t i)
{
    if (!t || !t->data || i >= af_tensor_numel(t) || !af_dtype_size(t->dtype) ||
        t->dtype == AF_DTYPE_STRING || (i + 1) * af_dtype_size(t->dtype) > t->bytes)
        return 0;
    return af__elem_load(t->dtype, t->data, (int64_t)i);
}

void af_tensor_clear(af_tensor_t *t)
{
    if (!t)
        return;
    af__free(t->name);
    af__free(t->data);
    memset(t, 0, sizeof(*t));
}

/* ---- the header dict ---------------------------------------------------------------------- */

typedef struct hdr {
    const char *p, *end;
    char descr[32];
    int fortran, have_descr, have_fortran, have_shape;
    int32_t rank;
    int64_t shape[AF_MAX_RANK];
} hdr_t;

static void skip_ws(hdr_t *h)
{
    while (h->p < h->end && isspace((unsigned char)*h->p))
        h->p++;
}

static int eat(hdr_t *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return 1;
    }
    return 0;
}

/* A quoted string (' or ") into out; 0 or -1. */
static int read_str(hdr_t *h, char *out, size_t cap)
{
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return -1;
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (n + 1 >= cap)
            return -1;
        out[n++] = *h->p++;
    }
    if (h->p >= h->end)
        return -1;
    h->p++;
    out[n] = 0;
    return 0;
}

static int read_shape(hdr_t *h, af_error_t *err)
{
    if (!eat(h, '('))
        return af__err(err, AF_EPARSE, ".npy header: 'shape' is not a tuple");
    h->rank = 0;
    while (!eat(h, ')')) {
        skip_ws(h);
        if (h->p >= h->end || !isdigit((unsigned char)*h->p))
            return af__err(err, AF_EPARSE, ".npy header: bad dimension in 'shape'");
        int64_t v = 0;
        while (h->p < h->end && isdigit((unsigned char)*h->p)) {
            if (v > (INT64_MAX - 9) / 10)
                return af__err(err, AF_EPARSE, ".npy header: dimension overflows");
            v = v * 10 + (*h->p++ - '0');
        }
        if (h->rank >= AF_MAX_RANK)
            return af__err(err, AF_ENOTSUP, ".npy: rank above %d is not supported", AF_MAX_RANK);
        h->shape[h->rank++] = v;
        if (!eat(h, ',') && (skip_ws(h), h->p >= h->end || *h->p != ')'))
            return af__err(err, AF_EPARSE, ".npy header: malformed 'shape'");
    }
    h->have_shape = 1;
    return 0;
}

static int read_value(hdr_t *h, const char *key, af_error_t *err)
{
    skip_ws(h);
    if (!strcmp(key, "descr")) {
        if (read_str(h, h->descr, sizeof(h->descr)))
            return af__err(err, AF_ENOTSUP, ".npy: structured or unusual 'descr' not supported");
        h->have_descr = 1;
        return 0;
    }
    if (!strcmp(key, "fortran_order")) {
        size_t left = (size_t)(h->end - h->p);
        if (left >= 4 && !memcmp(h->p, "True", 4))
            h->fortran = 1, h->p += 4;
        else if (left >= 5 && !memcmp(h->p, "False", 5))
            h->fortran = 0, h->p += 5;
        else
            return af__err(err, AF_EPARSE, ".npy header: 'fortran_order' is not True/False");
        h->have_fortran = 1;
        return 0;
    }
    if (!strcmp(key, "shape"))
        return read_shape(h, err);
    return af__err(err, AF_EPARSE, ".npy header: unknown key '%s'", key);
}

static int parse_header(hdr_t *h, af_error_t *err)
{
    if (!eat(h, '{'))
        return af__err(err, AF_EPARSE, ".npy header is not a dict");
    while (!eat(h, '}')) {
        char key[32];
        if (read_str(h, key, sizeof(key)) || !eat(h, ':'))
            return af__err(err, AF_EPARSE, ".npy header: malformed key");
        int rc = read_value(h, key, err);
        if (rc)
            return rc;
        if (!eat(h, ',') && (skip_ws(h), h->p >= h->end || *h->p != '}'))
            return af__err(err, AF_EPARSE, ".npy header: malformed dict");
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape)
        return af__err(err, AF_EPARSE, ".npy header lacks 'descr', 'fortran_order' or 'shape'");
    return 0;
}

/* dtype of a descr such as '<f4' (*swap = 1 for big-endian elements of more than a byte); 0 or
 * AF_ENOTSUP naming the descr. */
static int descr_dtype(const char *d, af_dtype_t *out, int *swap, af_error_t *err)
{
    char order = d[0];
    const char *code = d + 1;
    *swap = order == '>';
    if (order != '<' && order != '|' && order != '=' && order != '>')
        code = d, order = 0;
    if (!strcmp(code, "?"))
        code = "b1";
    for (size_t i = 0; order && i < AF_ARRAY_SIZE(npy_types); i++)
        if (!strcmp(code, npy_types[i].code)) {
            *out = npy_types[i].dt;
            return 0;
        }
    if (code[0] == 'O')
        return af__err(err, AF_ENOTSUP, ".npy: object arrays ('%s') are not supported", d);
    return af__err(err, AF_ENOTSUP, ".npy: element type '%s' is not supported", d);
}

/* Copies n elements of es bytes from src (a .npy payload) to dst in C order, little-endian:
 * a Fortran-order array (numpy.save of a transposed one) is permuted, big-endian elements are
 * byte-swapped. */
static void from_npy_order(uint8_t *dst, const uint8_t *src, uint64_t n, size_t es, int32_t rank,
                           const int64_t *shape, int fortran, int swap)
{
    if (!fortran || rank < 2) {
        memcpy(dst, src, (size_t)(n * es));
    } else {
        int64_t idx[AF_MAX_RANK] = {0}, stride[AF_MAX_RANK];
        uint64_t f = 0; /* the Fortran offset of C element i, kept with an odometer */
        stride[0] = 1;
        for (int32_t k = 1; k < rank; k++)
            stride[k] = stride[k - 1] * shape[k - 1];
        for (uint64_t i = 0; i < n; i++) {
            memcpy(dst + i * es, src + f * es, es);
            for (int32_t k = rank - 1; k >= 0; k--) {
                f += (uint64_t)stride[k];
                if (++idx[k] < shape[k])
                    break;
                f -= (uint64_t)(stride[k] * shape[k]);
                idx[k] = 0;
            }
        }
    }
    for (uint64_t i = 0; swap && es > 1 && i < n; i++)
        for (size_t a = 0, z = es - 1; a < z; a++, z--) {
            uint8_t t = dst[i * es + a];
            dst[i * es + a] = dst[i * es + z];
            dst[i * es + z] = t;
        }
}

int af_tensor_npy_parse(const void *buf, size_t len, af_tensor_t *out, af_error_t *err)
{
    if (!out || (!buf && len))
        return af__err(err, AF_EINVAL, "af_tensor_npy_parse: NULL argument");
    memset(out, 0, sizeof(*out));
    const uint8_t *b = buf;
    if (len < 10 || memcmp(b, npy_magic, 6))
        return af__err(err, AF_EPARSE, "not a .npy file (no NumPy magic)");
    int major = b[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return af__err(err, AF_EPARSE, ".npy: truncated header");
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        start = 12;
    } else {
        return af__err(err, AF_ENOTSUP, ".npy format version %d.%d is not supported", major, b[7]);
    }
    if (hlen > len - start)
        return af__err(err, AF_EPARSE, ".npy: header of %zu bytes, file has %zu", hlen, len);
    hdr_t h = {.p = (const char *)b + start, .end = (const char *)b + start + hlen};
    int rc = parse_header(&h, err);
    if (rc)
        return rc;
    af_dtype_t dt = AF_DTYPE_UNKNOWN;
    int swap = 0;
    if ((rc = descr_dtype(h.descr, &dt, &swap, err)))
        return rc;
    uint64_t n = 1;
    for (int32_t i = 0; i < h.rank; i++)
        if (!af__mul_u64(n, (uint64_t)h.shape[i], &n))
            return af__err(err, AF_EPARSE, ".npy: element count overflows");
    uint64_t bytes, data_len = (uint64_t)(len - start - hlen);
    if (!af__mul_u64(n, af_dtype_size(dt), &bytes) || bytes != data_len)
        return af__err(err, AF_EPARSE, ".npy: %llu data bytes, shape and type need %llu",
                       (unsigned long long)data_len, (unsigned long long)bytes);
    out->data = af__malloc(bytes ? (size_t)bytes : 1);
    if (!out->data)
        return af__err(err, AF_ENOMEM, "out of memory reading a .npy array");
    from_npy_order(out->data, b + start + hlen, n, af_dtype_size(dt), h.rank, h.shape, h.fortran,
                   swap);
    out->dtype = dt;
    out->rank = h.rank;
    memcpy(out->shape, h.shape, sizeof(h.shape));
    out->bytes = bytes;
    return 0;
}

/* Checks dtype/shape/bytes agree; the NumPy code of the dtype into *code. */
static int check_tensor(const af_tensor_t *t, const char **code, af_error_t *err)
{
    if (!t || (!t->data && t->bytes) || t->rank < 0 || t->rank > AF_MAX_RANK)
        return af__err(err, AF_EINVAL, "bad tensor (NULL data or rank out of range)");
    *code = NULL;
    for (size_t i = 0; i < AF_ARRAY_SIZE(npy_types); i++)
        if (npy_types[i].dt == t->dtype)
            *code = npy_types[i].code;
    if (!*code)
        return af__err(err, AF_EINVAL, "dtype %s has no NumPy type", af_dtype_name(t->dtype));
    for (int32_t i = 0; i < t->rank; i++)
        if (t->shape[i] < 0)
            return af__err(err, AF_EINVAL, "negative dim %lld", (long long)t->shape[i]);
    uint64_t need = af_tensor_numel(t) * af_dtype_size(t->dtype);
    if (need != t->bytes)
        return af__err(err, AF_EINVAL, "tensor has %llu bytes, its shape needs %llu",
                       (unsigned long long)t->bytes, (unsigned long long)need);
    return 0;
}

int af_tensor_npy_encode(const af_tensor_t *t, void **out, size_t *len, af_error_t *err)
{
    const char *code = NULL;
    if (!out || !len)
        return af__err(err, AF_EINVAL, "af_tensor_npy_encode: NULL argument");
    int rc = check_tensor(t, &code, err);
    if (rc)
        return rc;
    char dict[64 + 24 * AF_MAX_RANK];
    int n = snprintf(dict, sizeof(dict), "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     code[0] == 'f' || code[1] != '1' ? '<' : '|', code);
    for (int32_t i = 0; i < t->rank; i++)
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)t->shape[i]);
    n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%s), }", t->rank == 1 ? "," : "");
    size_t pre = 10, total = ((pre + (size_t)n + 1 + 63) / 64) * 64; /* 1.0: fits in uint16 */
    size_t hlen = total - pre;
    uint8_t *b = af__malloc(total + (size_t)t->bytes);
    if (!b)
        return af__err(err, AF_ENOMEM, "out of memory writing a .npy array");
    memcpy(b, npy_magic, 6);
    b[6] = 1;
    b[7] = 0;
    b[8] = (uint8_t)(hlen & 0xff);
    b[9] = (uint8_t)(hlen >> 8);
    memcpy(b + pre, dict, (size_t)n);
    memset(b + pre + n, ' ', hlen - (size_t)n - 1);
    b[total - 1] = '\n';
    if (t->bytes)
        memcpy(b + total, t->data, (size_t)t->bytes);
    *out = b;
    *len = total + (size_t)t->bytes;
    return 0;
}

/* ---- files -------------------------------------------------------------------------------- */

static int read_all(const char *path, uint8_t **out, size_t *len, af_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return af__err(err, AF_EIO, "%s: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (af__grow((void **)&buf, &cap, n + 65536, 1)) {
            rc = af__err(err, AF_ENOMEM, "out of memory reading %s", path);
            break;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = af__err(err, AF_EIO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (rc) {
        af__free(buf);
        return rc;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Prefixes err's message with the path. */
static int with_path(af_error_t *err, int rc, const char *path)
{
    if (rc && err) {
        char tmp[AF_ERROR_MSG_MAX];
        snprintf(tmp, sizeof(tmp), "%s", err->msg);
        af__err(err, rc, "%s: %s", path, tmp);
    }
    return rc;
}

int af_tensor_load(const char *path, af_tensor_t *out, af_error_t *err)
{
    if (!path || !out)
        return af__err(err, AF_EINVAL, "af_tensor_load: NULL argument");
    memset(out, 0, sizeof(*out));
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = read_all(path, &buf, &len, err);
    if (rc)
        return rc;
    if (len >= 6 && !memcmp(buf, npy_magic, 6)) {
        rc = af_tensor_npy_parse(buf, len, out, err);
    } else {
        af_onnx_tensor_t pt;
        rc = af_onnx_tensor_decode(buf, len, &pt, err);
        if (rc == 0) {
            out->name = pt.name;
            out->dtype = pt.dtype;
            out->rank = pt.rank;
            memcpy(out->shape, pt.shape, sizeof(out->shape));
            out->data = pt.data;
            out->bytes = pt.bytes;
        }
    }
    af__free(buf);
    return with_path(err, rc, path);
}

int af_tensor_save_npy(const char *path, const af_tensor_t *t, af_error_t *err)
{
    if (!path)
        return af__err(err, AF_EINVAL, "af_tensor_save_npy: NULL path");
    void *buf = NULL;
    size_t len = 0;
    int rc = af_tensor_npy_encode(t, &buf, &len, err);
    if (rc)
        return with_path(err, rc, path);
    rc = af_file_write_durable(path, buf, len, err);
    af__free(buf);
    return rc;
}

int af_tensor_save_pb(const char *path, const af_tensor_t *t, af_error_t *err)
{
    if (!path || !t)
        return af__err(err, AF_EINVAL, "af_tensor_save_pb: NULL argument");
    af_onnx_tensor_t pt = {
        .name = t->name, .dtype = t->dtype, .rank = t->rank, .data = t->data, .bytes = t->bytes};
    memcpy(pt.shape, t->shape, sizeof(pt.shape));
    void *buf = NULL;
    size_t len = 0;
    int rc = af_onnx_tensor_encode(&pt, &buf, &len, err);
    if (rc)
        return with_path(err, rc, path);
    rc = af_file_write_durable(path, buf, len, err);
    af__free(buf);
    return rc;
}
