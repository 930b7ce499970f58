/*
 * ONNX importer — tensors whose data lives in external files (ONNX IR "external data").
 *
 * A TensorProto with data_location = EXTERNAL names its bytes with external_data entries:
 * "location" (required: a path relative to the model file's directory), "offset" and "length"
 * (optional decimal byte counts; default 0 and the rest of the file) and "checksum" (optional:
 * the SHA-1 of the whole file, 40 hex digits). Rules enforced here, each with an error naming
 * the tensor: the location is relative, has no ".." component and, once symlinks are resolved,
 * still lies inside the model's directory (a model cannot make us read /etc/shadow); the range
 * lies inside the file and holds exactly the bytes the dims and type need; a checksum, when
 * given, matches (checked once per file, reading it in chunks with read(), so the pages do not
 * count in the process's memory). Each file is mapped once, read-only, and every tensor in it
 * points into the mapping. Loading from memory has no directory: external data is AF_ENOTSUP.
 *
 * Threading: all state is in the importer; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- SHA-1 (FIPS 180-4), for the optional checksum key ---------------------------------- */

typedef struct sha1 {
    uint32_t h[5];
    uint64_t len;
    uint8_t buf[64];
    size_t n;
} sha1_t;

static uint32_t rol(uint32_t x, int k)
{
    return x << k | x >> (32 - k);
}

static void sha1_block(sha1_t *s, const uint8_t *p)
{
    uint32_t w[80], a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)
            f = (b & c) | (~b & d), k = 0x5a827999;
        else if (i < 40)
            f = b ^ c ^ d, k = 0x6ed9eba1;
        else if (i < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
        else
            f = b ^ c ^ d, k = 0xca62c1d6;
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d, d = c, c = rol(b, 30), b = a, a = t;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e;
}

static void sha1_add(sha1_t *s, const uint8_t *p, size_t n)
{
    s->len += n;
    while (n) {
        size_t k = 64 - s->n < n ? 64 - s->n : n;
        memcpy(s->buf + s->n, p, k);
        s->n += k, p += k, n -= k;
        if (s->n == 64) {
            sha1_block(s, s->buf);
            s->n = 0;
        }
    }
}

static void sha1_hex(sha1_t *s, char out[41])
{
    uint64_t bits = s->len * 8;
    uint8_t pad = 0x80, zero = 0, lenb[8];
    sha1_add(s, &pad, 1);
    while (s->n != 56)
        sha1_add(s, &zero, 1);
    for (int i = 0; i < 8; i++)
        lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha1_add(s, lenb, 8);
    for (int i = 0; i < 5; i++)
        snprintf(out + 8 * i, 9, "%08x", (unsigned)s->h[i]);
}

/* SHA-1 of the file, hex. 0 or AF_EIO / AF_ENOMEM. */
static int file_sha1(const char *path, char out[41], af_error_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint8_t *buf = af__malloc(65536);
    if (fd < 0 || !buf) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        af__free(buf);
        return fd < 0 ? af__err(err, AF_EIO, "cannot open '%s': %s", path, strerror(e))
                      : af__err(err, AF_ENOMEM, "out of memory");
    }
    sha1_t s = {{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}, 0, {0}, 0};
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, buf, 65536);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = af__err(err, AF_EIO, "cannot read '%s': %s", path, strerror(errno));
        if (r <= 0)
            break;
        sha1_add(&s, buf, (size_t)r);
    }
    close(fd);
    af__free(buf);
    if (!rc)
        sha1_hex(&s, out);
    return rc;
}

/* The mapped file for a location (mapped and checked on first use). */
static int ext_file(af__onnx_imp_t *im, const char *loc, const char *sum, const char *name,
                    af__store_t **out, af_error_t *err)
{
    for (size_t i = 0; i < im->n_ext; i++)
        if (!strcmp(im->ext[i].location, loc)) {
            *out = im->ext[i].store;
            return 0; /* a checksum is verified when the file is first opened */
        }
    char *path = NULL;
    int rc = af__store_resolve(im->model_dir, loc, &path, err);
    if (rc) {
        char msg[AF_ERROR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
        return af__err(err, rc, "tensor '%s': external data: %s", name, msg);
    }
    char hex[41];
    if (sum && !(rc = file_sha1(path, hex, err)) && strcasecmp(hex, sum))
        rc = af__err(err, AF_EPARSE,
                     "tensor '%s': external data file '%s' has SHA-1 %s, the model says %s", name,
                     loc, hex, sum);
    af__store_t *st = NULL;
    char *lc = NULL;
    if (!rc && !(rc = af__store_map(path, &st, err))) {
        lc = af__strdup(loc);
        if (!lc || af__grow((void **)&im->ext, &im->cap_ext, im->n_ext + 1, sizeof(*im->ext))) {
            af__free(lc);
            af__store_unref(st);
            rc = af__err(err, AF_ENOMEM, "out of memory");
        } else {
            im->ext[im->n_ext++] = (af__onnx_ext_t){lc, st};
            *out = st;
        }
    }
    af__free(path);
    return rc;
}

/* Parses a decimal byte count; -1 when it is not one. */
static int64_t parse_count(const char *s)
{
    if (!s || !*s)
        return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, *s - '0', &v))
            return -1;
    }
    return v;
}

int af__onnx_external(af__onnx_imp_t *im, const Onnx__TensorProto *t, const char *name,
                      uint64_t need, const uint8_t **p, af__store_t **store, af_error_t *err)
{
    const char *loc = NULL, *off = NULL, *len = NULL, *sum = NULL;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value)
            continue;
        if (!strcmp(e->key, "location"))
            loc = e->value;
        else if (!strcmp(e->key, "offset"))
            off = e->value;
        else if (!strcmp(e->key, "length"))
            len = e->value;
        else if (!strcmp(e->key, "checksum"))
            sum = e->value;
    }
    if (!loc)
        return af__err(err, AF_EPARSE, "tensor '%s': external data without a 'location'", name);
    if (!im->model_dir)
        return af__err(err, AF_ENOTSUP,
                       "tensor '%s': data in external file '%s'; load the model from its file "
                       "(not from memory) so the file can be found",
                       name, loc);
    int64_t o = off ? parse_count(off) : 0, l = len ? parse_count(len) : -2;
    if (o < 0 || l == -1)
        return af__err(err, AF_EPARSE, "tensor '%s': external data offset '%s' / length '%s'", name,
                       off ? off : "", len ? len : "");
    if (sum && strlen(sum) != 40)
        return af__err(err, AF_EPARSE, "tensor '%s': external data checksum '%s' is not SHA-1",
                       name, sum);
    af__store_t *st = NULL;
    int rc = ext_file(im, loc, sum, name, &st, err);
    if (rc)
        return rc;
    uint64_t avail = (uint64_t)o <= st->len ? st->len - (uint64_t)o : 0;
    if ((uint64_t)o > st->len || (l >= 0 && (uint64_t)l > avail))
        return af__err(err, AF_EPARSE,
                       "tensor '%s': external range offset %lld length %lld is outside '%s' (%zu "
                       "bytes)",
                       name, (long long)o, (long long)l, loc, st->len);
    uint64_t have = l >= 0 ? (uint64_t)l : avail;
    if (have != need && (l >= 0 || avail < need))
        return af__err(err, AF_EPARSE,
                       "tensor '%s': external data holds %llu bytes, dims and type need %llu", name,
                       (unsigned long long)have, (unsigned long long)need);
    *p = st->base + o;
    *store = st;
    return 0;
}

void af__onnx_ext_free(af__onnx_imp_t *im)
{
    for (size_t i = 0; i < im->n_ext; i++) {
        af__free(im->ext[i].location);
        af__store_unref(im->ext[i].store);
    }
    af__free(im->ext);
    im->ext = NULL;
    im->n_ext = im->cap_ext = 0;
}

#endif /* AF_HAVE_ONNX */
