/*
 * arenaflowd OIP tensor data: datatype names and the JSON form of tensor elements.
 *
 * The protocol's datatypes are BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32, FP64 and BYTES
 * (Triton adds BF16, which arenaflow has, so it is accepted too). JSON "data" is the tensor's
 * elements in row-major order, either flat ([1,2,3,4] for shape [2,2]) or nested ([[1,2],[3,4]]):
 * both are read by walking the arrays depth-first, so only the element count is checked against
 * the shape. Reading is strict: an integer type takes JSON integers in its range, a float type
 * any number, BOOL only true/false; anything else is a 400 with the element's index. JSON has no
 * NaN or infinities: they are written as the strings "nan", "inf", "-inf" and read back from
 * the same strings. FP16 / BF16 travel in JSON as numbers and are rounded to nearest even.
 *
 * Thread-safe (no state): called from the threadpool by the inference jobs.
 */
#include "daemon/oip_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int dt;
} dtypes[] = {
    {"BOOL", AF_DTYPE_BOOL},  {"UINT8", AF_DTYPE_U8},     {"UINT16", AF_DTYPE_U16},
    {"UINT32", AF_DTYPE_U32}, {"UINT64", AF_DTYPE_U64},   {"INT8", AF_DTYPE_I8},
    {"INT16", AF_DTYPE_I16},  {"INT32", AF_DTYPE_I32},    {"INT64", AF_DTYPE_I64},
    {"FP16", AF_DTYPE_F16},   {"FP32", AF_DTYPE_F32},     {"FP64", AF_DTYPE_F64},
    {"BF16", AF_DTYPE_BF16},  {"BYTES", AF_DTYPE_STRING},
};

int af__oip_dtype_parse(const char *name, int *dt)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(dtypes); i++)
        if (strcmp(dtypes[i].name, name) == 0) {
            *dt = dtypes[i].dt;
            return 0;
        }
    return -1;
}

const char *af__oip_dtype_name(int dt)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(dtypes); i++)
        if (dtypes[i].dt == dt)
            return dtypes[i].name;
    return NULL;
}

int64_t af__oip_numel(const int64_t *shape, int32_t rank)
{
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > INT64_MAX / shape[i]))
            return -1;
        n *= shape[i];
    }
    return n;
}

/* ---- FP16 and BF16 ------------------------------------------------------------------------ */

uint16_t af__oip_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xFFu, m = x & 0x7FFFFFu;
    if (e == 0xFF) /* inf, nan (quiet, keeps a payload bit) */
        return (uint16_t)(sign | 0x7C00u | (m ? 0x200u | (m >> 13) : 0));
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 0x1F)
        return (uint16_t)(sign | 0x7C00u);
    if (he <= 0) { /* subnormal or zero: shift the full mantissa, round to nearest even */
        if (he < -10)
            return (uint16_t)sign;
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - he);
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)he << 10) | (m >> 13), rem = m & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent: still right (up to inf) */
    return (uint16_t)(sign | h);
}

float af__oip_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, x;
    if (e == 0x1F) {
        x = sign | 0x7F800000u | (m << 13);
    } else if (e == 0) {
        if (m == 0) {
            x = sign;
        } else { /* subnormal: normalise */
            e = 113;
            while (!(m & 0x400u)) {
                m <<= 1;
                e--;
            }
            x = sign | (e << 23) | ((m & 0x3FFu) << 13);
        }
    } else {
        x = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- JSON -> bytes ----------------------------------------------------------------------- */

typedef struct reader {
    int dt;
    uint64_t numel, at;
    uint8_t *dst;
    char *msg;
    size_t len;
} reader_t;

static int is_float(int dt)
{
    return dt == AF_DTYPE_F16 || dt == AF_DTYPE_F32 || dt == AF_DTYPE_F64 || dt == AF_DTYPE_BF16;
}

static int is_signed(int dt)
{
    return dt == AF_DTYPE_I8 || dt == AF_DTYPE_I16 || dt == AF_DTYPE_I32 || dt == AF_DTYPE_I64;
}

static int float_of(const json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s)
        return -1;
    if (!strcmp(s, "nan") || !strcmp(s, "NaN"))
        *out = NAN;
    else if (!strcmp(s, "inf") || !strcmp(s, "Infinity"))
        *out = INFINITY;
    else if (!strcmp(s, "-inf") || !strcmp(s, "-Infinity"))
        *out = -INFINITY;
    else
        return -1;
    return 0;
}

static void store_float(reader_t *r, uint8_t *p, double x)
{
    if (r->dt == AF_DTYPE_F64) {
        memcpy(p, &x, 8);
    } else if (r->dt == AF_DTYPE_F32) {
        float f = (float)x;
        memcpy(p, &f, 4);
    } else {
        uint16_t h = r->dt == AF_DTYPE_F16 ? af__oip_f32_to_f16((float)x) : f32_to_bf16((float)x);
        memcpy(p, &h, 2);
    }
}

static int put_float(reader_t *r, uint8_t *p, const json_t *v)
{
    double x;
    if (float_of(v, &x) != 0) {
        snprintf(r->msg, r->len, "element %" PRIu64 " is not a number", r->at);
        return -1;
    }
    store_float(r, p, x);
    return 0;
}

static int not_bool(reader_t *r)
{
    snprintf(r->msg, r->len, "element %" PRIu64 " is not true or false", r->at);
    return -1;
}

static int not_int(reader_t *r)
{
    snprintf(r->msg, r->len, "element %" PRIu64 " is not an integer", r->at);
    return -1;
}

/* An integer x as r's (integer) dtype, range checked. */
static int store_int(reader_t *r, uint8_t *p, int64_t x)
{
    uint32_t size = af_dtype_size((af_dtype_t)r->dt);
    int bits = (int)size * 8;
    int ok =
        is_signed(r->dt)
            ? (bits == 64 || (x >= -(INT64_C(1) << (bits - 1)) && x < (INT64_C(1) << (bits - 1))))
            : (x >= 0 && (bits == 64 || x < (INT64_C(1) << bits)));
    if (!ok) {
        snprintf(r->msg, r->len, "element %" PRIu64 " (%" PRId64 ") is out of range for %s", r->at,
                 x, af__oip_dtype_name(r->dt));
        return -1;
    }
    uint64_t u = (uint64_t)x;
    for (uint32_t i = 0; i < size; i++)
        p[i] = (uint8_t)(u >> (8 * i)); /* little-endian */
    return 0;
}

static int put_int(reader_t *r, uint8_t *p, const json_t *v)
{
    if (r->dt == AF_DTYPE_BOOL) {
        if (!json_is_boolean(v))
            return not_bool(r);
        *p = json_is_true(v) ? 1 : 0;
        return 0;
    }
    if (!json_is_integer(v))
        return not_int(r);
    /* jansson reads integers as json_int_t (int64): UINT64 above 2^63 cannot be sent in JSON */
    return store_int(r, p, (int64_t)json_integer_value(v));
}

static int not_string(reader_t *r)
{
    snprintf(r->msg, r->len, "element %" PRIu64 " is not a string (BYTES elements are)", r->at);
    return -1;
}

/* A BYTES element: the handle of jansson's copy of the string (UTF-8, NULs allowed). */
static int put_string(reader_t *r, uint8_t *p, const json_t *v)
{
    if (!json_is_string(v))
        return not_string(r);
    af_string_t h = {json_string_value(v), (uint64_t)json_string_length(v)};
    memcpy(p, &h, sizeof(h));
    return 0;
}

static int walk(reader_t *r, const json_t *v, int depth)
{
    if (json_is_array(v)) {
        if (depth > AF_MAX_RANK) {
            snprintf(r->msg, r->len, "data nests deeper than %d levels", AF_MAX_RANK);
            return -1;
        }
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e) if (walk(r, e, depth + 1) != 0) return -1;
        return 0;
    }
    if (r->at >= r->numel) {
        snprintf(r->msg, r->len, "data has more than the %" PRIu64 " elements of the shape",
                 r->numel);
        return -1;
    }
    uint8_t *p = r->dst + r->at * af_dtype_size((af_dtype_t)r->dt);
    int rc = r->dt == AF_DTYPE_STRING ? put_string(r, p, v)
             : is_float(r->dt)        ? put_float(r, p, v)
                                      : put_int(r, p, v);
    r->at++;
    return rc;
}

int af__oip_json_read(const json_t *data, int dt, uint64_t numel, void *dst, char *msg, size_t len)
{
    reader_t r = {dt, numel, 0, dst, msg, len};
    if (walk(&r, data, 0) != 0)
        return -1;
    if (r.at != numel) {
        snprintf(msg, len, "data has %" PRIu64 " elements, the shape %" PRIu64, r.at, numel);
        return -1;
    }
    return 0;
}

/* One token of a fast-path span (af__oip_fast_split checked its grammar) into r's next
 * element. */
static int text_elem(reader_t *r, const char *t, size_t n)
{
    if (r->at >= r->numel) {
        snprintf(r->msg, r->len, "data has more than the %" PRIu64 " elements of the shape",
                 r->numel);
        return -1;
    }
    uint8_t *p = r->dst + r->at * af_dtype_size((af_dtype_t)r->dt);
    int boolean = t[0] == 't' || t[0] == 'f', rc = 0;
    if (r->dt == AF_DTYPE_STRING) /* the span holds no strings, only numbers and true/false */
        rc = not_string(r);
    else if (r->dt == AF_DTYPE_BOOL)
        rc = boolean ? (*p = t[0] == 't', 0) : not_bool(r);
    else if (boolean)
        rc = is_float(r->dt)
                 ? (snprintf(r->msg, r->len, "element %" PRIu64 " is not a number", r->at), -1)
                 : not_int(r);
    else if (is_float(r->dt))
        store_float(r, p, strtod(t, NULL)); /* JSON numbers are C-locale numbers */
    else if (memchr(t, '.', n) || memchr(t, 'e', n) || memchr(t, 'E', n))
        rc = not_int(r);
    else {
        errno = 0;
        long long x = strtoll(t, NULL, 10);
        rc = errno == ERANGE
                 ? (snprintf(r->msg, r->len, "element %" PRIu64 " is out of range for %s", r->at,
                             af__oip_dtype_name(r->dt)),
                    -1)
                 : store_int(r, p, (int64_t)x);
    }
    r->at++;
    return rc;
}

int af__oip_text_read(const char *s, size_t n, int dt, uint64_t numel, void *dst, char *msg,
                      size_t len)
{
    reader_t r = {dt, numel, 0, dst, msg, len};
    int depth = 0;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == '[' && ++depth > AF_MAX_RANK + 1) {
            snprintf(msg, len, "data nests deeper than %d levels", AF_MAX_RANK);
            return -1;
        }
        if (c == ']')
            depth--;
        if (c == '[' || c == ']' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            i++;
            continue;
        }
        size_t k = i;
        while (k < n && s[k] != ',' && s[k] != ']' && s[k] != ' ' && s[k] != '\t' && s[k] != '\n' &&
               s[k] != '\r')
            k++;
        if (text_elem(&r, s + i, k - i) != 0)
            return -1;
        i = k;
    }
    if (r.at != numel) {
        snprintf(msg, len, "data has %" PRIu64 " elements, the shape %" PRIu64, r.at, numel);
        return -1;
    }
    return 0;
}

/* ---- bytes -> JSON ----------------------------------------------------------------------- */

/* Appends n bytes. 0 or -1 on OOM. */
static int put_raw(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 1024;
        while (nc < *len + n + 1)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

__extension__ typedef unsigned __int128 u128;

/* The P digits of q (1 <= P <= 9) as %g prints them with decimal exponent X: trailing zeros
 * dropped, exponent form when X < -4 or X >= P. Returns the length written at o. */
static int g_layout(uint64_t q, int P, int X, int neg, char *out)
{
    char d[10], *o = out;
    for (int i = P - 1; i >= 0; i--, q /= 10)
        d[i] = (char)('0' + q % 10);
    int n = P;
    while (n > 1 && d[n - 1] == '0')
        n--;
    if (neg)
        *o++ = '-';
    if (X < -4 || X >= P) {
        *o++ = d[0];
        if (n > 1)
            *o++ = '.', memcpy(o, d + 1, (size_t)n - 1), o += n - 1;
        int ax = X < 0 ? -X : X;
        *o++ = 'e';
        *o++ = X < 0 ? '-' : '+';
        if (ax >= 100)
            *o++ = (char)('0' + ax / 100), ax %= 100;
        *o++ = (char)('0' + ax / 10);
        *o++ = (char)('0' + ax % 10);
    } else if (X >= 0) {
        for (int i = 0; i <= X; i++)
            *o++ = i < n ? d[i] : '0';
        if (n > X + 1)
            *o++ = '.', memcpy(o, d + X + 1, (size_t)(n - X - 1)), o += n - X - 1;
    } else {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -X - 1; i++)
            *o++ = '0';
        memcpy(o, d, (size_t)n);
        o += n;
    }
    return (int)(o - out);
}

int af__oip_fmt_float(float x, int P, char *out)
{
    uint32_t bits, m;
    memcpy(&bits, &x, 4);
    int neg = (int)(bits >> 31), be = (int)((bits >> 23) & 0xFFu), e;
    m = bits & 0x7FFFFFu;
    if (be == 0xFF || P < 1 || P > 9)
        return 0;
    if (be == 0 && m == 0)
        return g_layout(0, 1, 0, neg, out);
    e = be ? be - 150 : -149;
    m |= be ? 0x800000u : 0;
    while (!(m & 1u))
        m >>= 1, e++;
    if (e > 40 || e < -44) /* the exact value would not fit 128 bits: the caller uses printf */
        return 0;
    /* the exact value is N * 10^-k */
    u128 N = m;
    int k = e < 0 ? -e : 0;
    if (e >= 0)
        N <<= e;
    for (int i = 0; i < k; i++)
        N *= 5;
    int D = 1;
    for (u128 p = 10; D < 38 && N >= p; p *= 10)
        D++;
    int X = D - 1 - k;
    uint64_t q;
    if (D > P) { /* round half to even on the exact remainder, as glibc does */
        u128 div = 1, top = 1;
        for (int i = 0; i < D - P; i++)
            div *= 10;
        for (int i = 0; i < P; i++)
            top *= 10;
        u128 qq = N / div, r = N - qq * div, half = div / 2;
        if (r > half || (r == half && (qq & 1)))
            qq++;
        if (qq == top)
            qq /= 10, X++;
        q = (uint64_t)qq;
    } else {
        q = (uint64_t)N;
        for (int i = D; i < P; i++)
            q *= 10;
    }
    return g_layout(q, P, X, neg, out);
}

static int put_double(char **buf, size_t *len, size_t *cap, double x, int digits, int is_float)
{
    if (isnan(x))
        return put_raw(buf, len, cap, "\"nan\"", 5);
    if (isinf(x))
        return x > 0 ? put_raw(buf, len, cap, "\"inf\"", 5) : put_raw(buf, len, cap, "\"-inf\"", 6);
    char t[48];
    int n = is_float ? af__oip_fmt_float((float)x, digits, t) : 0;
    if (n == 0)
        n = snprintf(t, sizeof(t), "%.*g", digits, x);
    /* "1" would read back as an integer: keep floats floats, as the spec's examples write them */
    if (!memchr(t, '.', (size_t)n) && !memchr(t, 'e', (size_t)n))
        t[n++] = '.', t[n++] = '0';
    return put_raw(buf, len, cap, t, (size_t)n);
}

/* Decimal digits of an integer. */
static int put_decimal(char **buf, size_t *len, size_t *cap, uint64_t u, int neg)
{
    char t[24], *o = t + sizeof(t);
    do
        *--o = (char)('0' + u % 10);
    while (u /= 10);
    if (neg)
        *--o = '-';
    return put_raw(buf, len, cap, o, (size_t)(t + sizeof(t) - o));
}

/* The string of handle p as a JSON string: '"', '\\' and control characters escaped, the rest
 * (UTF-8, checked by af__oip_strings_utf8 beforehand) as it is. 0 or -1 on OOM. */
static int put_json_string(char **buf, size_t *len, size_t *cap, const uint8_t *p)
{
    af_string_t h;
    memcpy(&h, p, sizeof(h));
    const char *s = h.data;
    size_t run = 0; /* bytes of s copied as they are, pending */
    if (put_raw(buf, len, cap, "\"", 1) != 0)
        return -1;
    for (uint64_t i = 0; i < h.len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            run++;
            continue;
        }
        char esc[8];
        int n = c == '"'    ? snprintf(esc, sizeof(esc), "\\\"")
                : c == '\\' ? snprintf(esc, sizeof(esc), "\\\\")
                : c == '\n' ? snprintf(esc, sizeof(esc), "\\n")
                            : snprintf(esc, sizeof(esc), "\\u%04x", c);
        if ((run && put_raw(buf, len, cap, s + i - run, run) != 0) ||
            put_raw(buf, len, cap, esc, (size_t)n) != 0)
            return -1;
        run = 0;
    }
    if (run && put_raw(buf, len, cap, s + h.len - run, run) != 0)
        return -1;
    return put_raw(buf, len, cap, "\"", 1);
}

static int put_elem(char **buf, size_t *len, size_t *cap, const uint8_t *p, int dt)
{
    uint16_t h;
    float f;
    double x;
    int64_t i = 0;
    uint64_t u = 0;
    switch (dt) {
    case AF_DTYPE_F16:
    case AF_DTYPE_BF16:
        memcpy(&h, p, 2);
        return put_double(buf, len, cap,
                          dt == AF_DTYPE_F16 ? af__oip_f16_to_f32(h) : bf16_to_f32(h),
                          dt == AF_DTYPE_F16 ? 5 : 4, 1);
    case AF_DTYPE_F32:
        memcpy(&f, p, 4);
        return put_double(buf, len, cap, f, 9, 1);
    case AF_DTYPE_F64:
        memcpy(&x, p, 8);
        return put_double(buf, len, cap, x, 17, 0);
    case AF_DTYPE_BOOL:
        return *p ? put_raw(buf, len, cap, "true", 4) : put_raw(buf, len, cap, "false", 5);
    case AF_DTYPE_STRING:
        return put_json_string(buf, len, cap, p);
    default:
        break;
    }
    uint32_t size = af_dtype_size((af_dtype_t)dt);
    for (uint32_t k = 0; k < size; k++)
        u |= (uint64_t)p[k] << (8 * k);
    if (!is_signed(dt))
        return put_decimal(buf, len, cap, u, 0);
    if (size < 8 && (u >> (size * 8 - 1)) & 1)
        u |= ~UINT64_C(0) << (size * 8); /* sign-extend */
    memcpy(&i, &u, 8);
    return put_decimal(buf, len, cap, i < 0 ? (uint64_t)0 - u : u, i < 0);
}

int af__oip_json_write(char **buf, size_t *len, size_t *cap, const void *src, int dt,
                       uint64_t numel)
{
    const uint8_t *p = src;
    uint32_t size = af_dtype_size((af_dtype_t)dt);
    if (put_raw(buf, len, cap, "[", 1) != 0)
        return -1;
    for (uint64_t i = 0; i < numel; i++) {
        if ((i && put_raw(buf, len, cap, ",", 1) != 0) ||
            put_elem(buf, len, cap, p + i * size, dt) != 0)
            return -1;
    }
    return put_raw(buf, len, cap, "]", 1);
}

/* ---- BYTES: UTF-8 and the binary form ---------------------------------------------------- */

/* Length of the UTF-8 sequence at s[0..n) (shortest form, no surrogates, <= U+10FFFF), 0 when
 * it is not one. */
static size_t utf8_len(const unsigned char *s, uint64_t n)
{
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (k == 0 || k > n || (k == 2 && c < 0xC2) || (k == 4 && c > 0xF4))
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((k == 3 && c == 0xE0 && s[1] < 0xA0) || (k == 3 && c == 0xED && s[1] >= 0xA0) ||
        (k == 4 && c == 0xF0 && s[1] < 0x90) || (k == 4 && c == 0xF4 && s[1] >= 0x90))
        return 0; /* overlong, surrogate, beyond U+10FFFF */
    return k;
}

int64_t af__oip_strings_utf8(const void *src, uint64_t numel)
{
    const af_string_t *h = src;
    for (uint64_t e = 0; e < numel; e++) {
        const unsigned char *s = (const unsigned char *)h[e].data;
        for (uint64_t i = 0; i < h[e].len;) {
            size_t k = utf8_len(s + i, h[e].len - i);
            if (k == 0)
                return (int64_t)e;
            i += k;
        }
    }
    return -1;
}

int af__oip_bytes_read(const uint8_t *p, uint64_t n, uint64_t numel, void *dst, char *msg,
                       size_t len)
{
    af_string_t *h = dst;
    uint64_t at = 0;
    for (uint64_t e = 0; e < numel; e++) {
        if (n - at < 4) {
            snprintf(msg, len,
                     "element %" PRIu64 ": %" PRIu64 " bytes left, a 4-byte length prefix expected",
                     e, n - at);
            return -1;
        }
        uint64_t l = (uint64_t)p[at] | (uint64_t)p[at + 1] << 8 | (uint64_t)p[at + 2] << 16 |
                     (uint64_t)p[at + 3] << 24;
        at += 4;
        if (l > n - at) {
            snprintf(msg, len,
                     "element %" PRIu64 ": length %" PRIu64 " runs past binary_data_size (%" PRIu64
                     " bytes left)",
                     e, l, n - at);
            return -1;
        }
        h[e] = (af_string_t){(const char *)p + at, l};
        at += l;
    }
    if (at != n) {
        snprintf(msg, len,
                 "%" PRIu64 " bytes of binary_data_size are left after the %" PRIu64
                 " elements of the shape",
                 n - at, numel);
        return -1;
    }
    return 0;
}

uint64_t af__oip_bytes_size(const void *src, uint64_t numel)
{
    const af_string_t *h = src;
    uint64_t total = 0;
    for (uint64_t e = 0; e < numel; e++)
        total += 4 + h[e].len;
    return total;
}

int af__oip_bytes_write(char **buf, size_t *len, size_t *cap, const void *src, uint64_t numel)
{
    const af_string_t *h = src;
    for (uint64_t e = 0; e < numel; e++) {
        if (h[e].len > UINT32_MAX)
            return -1; /* the 4-byte prefix cannot say it (refused before: see the caller) */
        uint8_t pre[4] = {(uint8_t)h[e].len, (uint8_t)(h[e].len >> 8), (uint8_t)(h[e].len >> 16),
                          (uint8_t)(h[e].len >> 24)};
        if (put_raw(buf, len, cap, (const char *)pre, 4) != 0 ||
            (h[e].len && put_raw(buf, len, cap, h[e].data, (size_t)h[e].len) != 0))
            return -1;
    }
    return 0;
}
