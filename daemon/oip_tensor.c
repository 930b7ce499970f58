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

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int dt;
} dtypes[] = {
    {"BOOL", AF_DTYPE_BOOL},  {"UINT8", AF_DTYPE_U8},   {"UINT16", AF_DTYPE_U16},
    {"UINT32", AF_DTYPE_U32}, {"UINT64", AF_DTYPE_U64}, {"INT8", AF_DTYPE_I8},
    {"INT16", AF_DTYPE_I16},  {"INT32", AF_DTYPE_I32},  {"INT64", AF_DTYPE_I64},
    {"FP16", AF_DTYPE_F16},   {"FP32", AF_DTYPE_F32},   {"FP64", AF_DTYPE_F64},
    {"BF16", AF_DTYPE_BF16},  {"BYTES", AF__OIP_BYTES},
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

static int put_float(reader_t *r, uint8_t *p, const json_t *v)
{
    double x;
    if (float_of(v, &x) != 0) {
        snprintf(r->msg, r->len, "element %" PRIu64 " is not a number", r->at);
        return -1;
    }
    if (r->dt == AF_DTYPE_F64) {
        memcpy(p, &x, 8);
    } else if (r->dt == AF_DTYPE_F32) {
        float f = (float)x;
        memcpy(p, &f, 4);
    } else {
        uint16_t h = r->dt == AF_DTYPE_F16 ? af__oip_f32_to_f16((float)x) : f32_to_bf16((float)x);
        memcpy(p, &h, 2);
    }
    return 0;
}

static int put_int(reader_t *r, uint8_t *p, const json_t *v)
{
    uint32_t size = af_dtype_size((af_dtype_t)r->dt);
    if (r->dt == AF_DTYPE_BOOL) {
        if (!json_is_boolean(v)) {
            snprintf(r->msg, r->len, "element %" PRIu64 " is not true or false", r->at);
            return -1;
        }
        *p = json_is_true(v) ? 1 : 0;
        return 0;
    }
    if (!json_is_integer(v)) {
        snprintf(r->msg, r->len, "element %" PRIu64 " is not an integer", r->at);
        return -1;
    }
    /* jansson reads integers as json_int_t (int64): UINT64 above 2^63 cannot be sent in JSON */
    int64_t x = (int64_t)json_integer_value(v);
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
    int rc = is_float(r->dt) ? put_float(r, p, v) : put_int(r, p, v);
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

/* ---- bytes -> JSON ----------------------------------------------------------------------- */

static int put_double(char **buf, size_t *len, size_t *cap, double x, int digits)
{
    if (isnan(x))
        return af__buf_printf(buf, len, cap, "\"nan\"");
    if (isinf(x))
        return af__buf_printf(buf, len, cap, x > 0 ? "\"inf\"" : "\"-inf\"");
    char t[40];
    snprintf(t, sizeof(t), "%.*g", digits, x);
    /* "1" would read back as an integer: keep floats floats, as the spec's examples write them */
    if (!strpbrk(t, ".eE"))
        return af__buf_printf(buf, len, cap, "%s.0", t);
    return af__buf_printf(buf, len, cap, "%s", t);
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
                          dt == AF_DTYPE_F16 ? 5 : 4);
    case AF_DTYPE_F32:
        memcpy(&f, p, 4);
        return put_double(buf, len, cap, f, 9);
    case AF_DTYPE_F64:
        memcpy(&x, p, 8);
        return put_double(buf, len, cap, x, 17);
    case AF_DTYPE_BOOL:
        return af__buf_printf(buf, len, cap, *p ? "true" : "false");
    default:
        break;
    }
    uint32_t size = af_dtype_size((af_dtype_t)dt);
    for (uint32_t k = 0; k < size; k++)
        u |= (uint64_t)p[k] << (8 * k);
    if (!is_signed(dt))
        return af__buf_printf(buf, len, cap, "%" PRIu64, u);
    if (size < 8 && (u >> (size * 8 - 1)) & 1)
        u |= ~UINT64_C(0) << (size * 8); /* sign-extend */
    memcpy(&i, &u, 8);
    return af__buf_printf(buf, len, cap, "%" PRId64, i);
}

int af__oip_json_write(char **buf, size_t *len, size_t *cap, const void *src, int dt,
                       uint64_t numel)
{
    const uint8_t *p = src;
    uint32_t size = af_dtype_size((af_dtype_t)dt);
    if (af__buf_printf(buf, len, cap, "[") != 0)
        return -1;
    for (uint64_t i = 0; i < numel; i++) {
        if ((i && af__buf_printf(buf, len, cap, ",") != 0) ||
            put_elem(buf, len, cap, p + i * size, dt) != 0)
            return -1;
    }
    return af__buf_printf(buf, len, cap, "]");
}
