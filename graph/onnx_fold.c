/*
 * ONNX importer — tensor data and constant folding.
 *
 * Decoding: a TensorProto's dims give the value's shape; its data (raw_data little-endian, or
 * the typed repeated fields) is checked against the dims (a mismatch is AF_EPARSE, so a
 * corrupt file cannot make us read past a buffer) and, for tensors of at most
 * AF__ONNX_FOLD_MAX numeric elements, kept as doubles in v->vals.
 *
 * Folding: after a node's shapes are known, ops that compute shapes (elementwise arithmetic and
 * comparisons, Cast, Gather, Concat, Slice, Split, Transpose, Squeeze/Unsqueeze/Reshape/Identity,
 * Expand, ConstantOfShape, Range, full reductions, Where) get their output values from their
 * inputs' values, element by element, with numpy broadcasting. An element computed from an unknown
 * one is unknown (AF__ONNX_UNK). The importer drops a node whose outputs are all fully known: they
 * become constant tensors. Integer division truncates, as ONNX's data propagation does.
 *
 * Invariant: vals, when set, has exactly numel() elements. No state; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <string.h>

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define OUT(i) ((i) < c->n_out ? c->out[i] : NULL)
#define T(x) ONNX__TENSOR_PROTO__DATA_TYPE__##x

/* ONNX data type -> bytes per element, af_dtype_t, integer-like (exact in folding). */
static const struct {
    int size;
    int dtype;
    int is_int;
} elem_tab[] = {
    [0] = {0, AF_DTYPE_UNKNOWN, 0},
    [T(FLOAT)] = {4, AF_DTYPE_F32, 0},
    [T(UINT8)] = {1, AF_DTYPE_U8, 1},
    [T(INT8)] = {1, AF_DTYPE_I8, 1},
    [T(UINT16)] = {2, AF_DTYPE_U16, 1},
    [T(INT16)] = {2, AF_DTYPE_I16, 1},
    [T(INT32)] = {4, AF_DTYPE_I32, 1},
    [T(INT64)] = {8, AF_DTYPE_I64, 1},
    [T(STRING)] = {16, AF_DTYPE_STRING, 0}, /* af_string_t handles; bytes outside */
    [T(BOOL)] = {1, AF_DTYPE_BOOL, 1},
    [T(FLOAT16)] = {2, AF_DTYPE_F16, 0},
    [T(DOUBLE)] = {8, AF_DTYPE_F64, 0},
    [T(UINT32)] = {4, AF_DTYPE_U32, 1},
    [T(UINT64)] = {8, AF_DTYPE_U64, 1},
    [T(COMPLEX64)] = {8, AF_DTYPE_UNKNOWN, 0},
    [T(COMPLEX128)] = {16, AF_DTYPE_UNKNOWN, 0},
    [T(BFLOAT16)] = {2, AF_DTYPE_BF16, 0},
};

static int known_elem(int32_t elem)
{
    return elem >= 0 && (size_t)elem < AF_ARRAY_SIZE(elem_tab);
}

int af__onnx_elem_size(int32_t elem)
{
    return known_elem(elem) ? elem_tab[elem].size : 0;
}

int af__onnx_dtype(int32_t elem)
{
    return known_elem(elem) ? elem_tab[elem].dtype : AF_DTYPE_UNKNOWN;
}

int af__onnx_is_int(int32_t elem)
{
    return known_elem(elem) && elem_tab[elem].is_int;
}

int64_t af__onnx_numel(const af__onnx_val_t *v)
{
    if (v->rank < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) {
        if (v->dims[i] < 0 || __builtin_mul_overflow(n, v->dims[i], &n))
            return -1;
    }
    return n;
}

int af__onnx_vals_alloc(af__onnx_val_t *v)
{
    int64_t n = af__onnx_numel(v);
    af__free(v->vals);
    v->vals = NULL;
    if (n < 0 || n > AF__ONNX_FOLD_MAX)
        return 1;
    v->vals = af__malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!v->vals)
        return -1;
    for (int64_t i = 0; i < n; i++)
        v->vals[i] = AF__ONNX_UNK;
    return 0;
}

int af__onnx_vals_known(const af__onnx_val_t *v)
{
    int64_t n = af__onnx_numel(v);
    if (!v->vals || n < 0)
        return 0;
    for (int64_t i = 0; i < n; i++)
        if (isnan(v->vals[i]))
            return 0;
    return 1;
}

const Onnx__AttributeProto *af__onnx_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

int64_t af__onnx_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = af__onnx_attr(n, name);
    return a && a->has_i ? a->i : def;
}

double af__onnx_attr_f(const Onnx__NodeProto *n, const char *name, double def)
{
    const Onnx__AttributeProto *a = af__onnx_attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* ---- decoding ------------------------------------------------------------------------- */

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

double af__onnx_raw_elem(const uint8_t *p, int32_t elem)
{
    uint64_t u = 0;
    int sz = af__onnx_elem_size(elem);
    for (int i = sz - 1; i >= 0; i--)
        u = u << 8 | p[i]; /* ONNX raw_data is little-endian */
    switch (elem) {
    case T(FLOAT): {
        float f;
        uint32_t w = (uint32_t)u;
        memcpy(&f, &w, 4);
        return f;
    }
    case T(DOUBLE): {
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    case T(FLOAT16):
        return half_to_double((uint16_t)u);
    case T(BFLOAT16): {
        float f;
        uint32_t w = (uint32_t)u << 16;
        memcpy(&f, &w, 4);
        return f;
    }
    case T(INT8):
        return (int8_t)u;
    case T(INT16):
        return (int16_t)u;
    case T(INT32):
        return (int32_t)u;
    case T(INT64):
        return (double)(int64_t)u;
    default:
        return (double)u; /* unsigned, bool */
    }
}

/* Element count the typed fields hold for this type, and element i of them. */
static size_t typed_count(const Onnx__TensorProto *t, int32_t elem)
{
    switch (elem) {
    case T(FLOAT):
        return t->n_float_data;
    case T(DOUBLE):
        return t->n_double_data;
    case T(INT64):
        return t->n_int64_data;
    case T(UINT32):
    case T(UINT64):
        return t->n_uint64_data;
    case T(STRING):
        return t->n_string_data;
    case T(COMPLEX64):
        return t->n_float_data / 2;
    case T(COMPLEX128):
        return t->n_double_data / 2;
    default:
        return t->n_int32_data;
    }
}

static double typed_elem(const Onnx__TensorProto *t, int32_t elem, size_t i)
{
    switch (elem) {
    case T(FLOAT):
        return t->float_data[i];
    case T(DOUBLE):
        return t->double_data[i];
    case T(INT64):
        return (double)t->int64_data[i];
    case T(UINT32):
    case T(UINT64):
        return (double)t->uint64_data[i];
    case T(FLOAT16):
        return half_to_double((uint16_t)t->int32_data[i]);
    case T(BFLOAT16):
        return af__onnx_raw_elem(
            (const uint8_t[]){(uint8_t)t->int32_data[i], (uint8_t)(t->int32_data[i] >> 8)},
            elem); /* the bits, as little-endian bytes */
    default:
        return t->int32_data[i];
    }
}

/* Locates t's bytes for v: a located payload, an external file, raw_data or typed fields. */
static int locate_data(af__onnx_imp_t *im, const Onnx__TensorProto *t, af__onnx_val_t *v,
                       const char *name, uint64_t need, af_error_t *err)
{
    const uint8_t *p;
    size_t len;
    v->raw = NULL;
    v->raw_len = 0;
    v->raw_store = NULL;
    v->tp = t;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (!im || (im->opts && im->opts->skip_data && af__onnx_numel(v) > AF__ONNX_FOLD_MAX))
            return 1; /* shape only */
        af__store_t *st;
        int rc = af__onnx_external(im, t, name, need, &p, &st, err);
        if (rc)
            return rc;
        v->raw = p;
        v->raw_len = (size_t)need;
        v->raw_store = st;
        return 0;
    }
    if (im && af__onnx_map_get(&im->map, t, &p, &len)) {
        v->raw = p;
        v->raw_len = len;
        v->raw_store = im->base_store;
    } else if (t->has_raw_data) {
        v->raw = t->raw_data.data;
        v->raw_len = t->raw_data.len;
    }
    if (v->raw && v->elem != T(STRING) && (uint64_t)v->raw_len != need)
        return af__err(err, AF_EPARSE,
                       "tensor '%s': raw_data has %zu bytes, dims and type need %llu", name,
                       v->raw_len, (unsigned long long)need);
    return 0;
}

int af__onnx_tensor_decode(af__onnx_imp_t *im, const Onnx__TensorProto *t, af__onnx_val_t *v,
                           af_error_t *err)
{
    const char *name = t->name && t->name[0] ? t->name : v->name;
    v->elem = t->has_data_type ? t->data_type : 0;
    if (t->n_dims > AF__ONNX_RANK_MAX)
        return af__err(err, AF_ENOTSUP, "tensor '%s': rank %zu above %d", name, t->n_dims,
                       AF__ONNX_RANK_MAX);
    v->rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return af__err(err, AF_EPARSE, "tensor '%s': negative dim %lld", name,
                           (long long)t->dims[i]);
        v->dims[i] = t->dims[i];
    }
    int64_t n = af__onnx_numel(v);
    int sz = af__onnx_elem_size(v->elem);
    if (n < 0 || (sz && (uint64_t)n > UINT64_MAX / (uint64_t)sz))
        return af__err(err, AF_EPARSE, "tensor '%s': element count overflows", name);
    int rc = locate_data(im, t, v, name, (uint64_t)n * (uint64_t)sz, err);
    if (rc)
        return rc > 0 ? 0 : rc;
    int typed = v->elem != T(STRING) && v->elem != T(COMPLEX64) && v->elem != T(COMPLEX128);
    if (v->raw && v->elem != T(STRING)) {
        if (sz == 0)
            return af__err(err, AF_EPARSE, "tensor '%s': raw_data for element type %d", name,
                           (int)v->elem);
    } else if (t->has_data_location &&
               t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        return 0; /* shape only (loaded from memory without data, or skip_data) */
    } else if (typed_count(t, v->elem) != (size_t)n) {
        return af__err(err, AF_EPARSE, "tensor '%s': %zu data elements, dims need %lld", name,
                       typed_count(t, v->elem), (long long)n);
    }
    if (!typed || sz == 0 || af__onnx_vals_alloc(v) > 0)
        return 0;
    if (!v->vals)
        return af__err(err, AF_ENOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++)
        v->vals[i] = v->raw ? af__onnx_raw_elem(v->raw + i * sz, v->elem)
                            : typed_elem(t, v->elem, (size_t)i);
    return 0;
}

/* ---- folding -------------------------------------------------------------------------- */

/* Flat index of input `in` feeding output element `flat` under numpy broadcasting. */
static int64_t bcast_src(const af__onnx_val_t *o, const af__onnx_val_t *in, int64_t flat)
{
    int64_t src = 0, stride = 1;
    for (int d = o->rank - 1, k = in->rank - 1; d >= 0; d--, k--) {
        int64_t i = flat % o->dims[d];
        flat /= o->dims[d];
        if (k < 0)
            continue;
        if (in->dims[k] != 1)
            src += i * stride;
        stride *= in->dims[k];
    }
    return src;
}

static double to_type(double v, int32_t elem)
{
    if (isnan(v))
        return v;
    if (elem == T(BOOL))
        return v != 0;
    if (af__onnx_is_int(elem))
        return trunc(v);
    if (elem == T(FLOAT))
        return (float)v;
    return af__onnx_round_to(v, elem); /* fp16, bf16 */
}

typedef double (*bin_fn)(double a, double b, int isint);

static double f_add(double a, double b, int i)
{
    return a + b;
}
static double f_sub(double a, double b, int i)
{
    return a - b;
}
static double f_mul(double a, double b, int i)
{
    return a * b;
}
static double f_div(double a, double b, int i)
{
    return i ? (b == 0 ? AF__ONNX_UNK : trunc(a / b)) : a / b;
}
static double f_mod(double a, double b, int i)
{
    if (b == 0)
        return AF__ONNX_UNK;
    double r = fmod(a, b);
    return i && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static double f_pow(double a, double b, int i)
{
    return pow(a, b);
}
static double f_max(double a, double b, int i)
{
    return a > b ? a : b;
}
static double f_min(double a, double b, int i)
{
    return a < b ? a : b;
}
static double f_eq(double a, double b, int i)
{
    return a == b;
}
static double f_lt(double a, double b, int i)
{
    return a < b;
}
static double f_gt(double a, double b, int i)
{
    return a > b;
}
static double f_le(double a, double b, int i)
{
    return a <= b;
}
static double f_ge(double a, double b, int i)
{
    return a >= b;
}
static double f_and(double a, double b, int i)
{
    return a != 0 && b != 0;
}
static double f_or(double a, double b, int i)
{
    return a != 0 || b != 0;
}
static double f_xor(double a, double b, int i)
{
    return (a != 0) != (b != 0);
}

static const struct {
    const char *op;
    bin_fn fn;
} bin_tab[] = {
    {"Add", f_add},        {"Sub", f_sub},           {"Mul", f_mul}, {"Div", f_div},
    {"Mod", f_mod},        {"Pow", f_pow},           {"Max", f_max}, {"Min", f_min},
    {"Sum", f_add},        {"Equal", f_eq},          {"Less", f_lt}, {"Greater", f_gt},
    {"LessOrEqual", f_le}, {"GreaterOrEqual", f_ge}, {"And", f_and}, {"Or", f_or},
    {"Xor", f_xor},
};

typedef double (*un_fn)(double a);
static double u_id(double a)
{
    return a;
}
static double u_neg(double a)
{
    return -a;
}
static double u_abs(double a)
{
    return fabs(a);
}
static double u_sqrt(double a)
{
    return sqrt(a);
}
static double u_floor(double a)
{
    return floor(a);
}
static double u_ceil(double a)
{
    return ceil(a);
}
static double u_relu(double a)
{
    return a > 0 ? a : 0;
}
static double u_sign(double a)
{
    return (a > 0) - (a < 0);
}
static double u_not(double a)
{
    return a == 0;
}
static double u_recip(double a)
{
    return 1 / a;
}
static double u_round(double a)
{
    return nearbyint(a);
}

static const struct {
    const char *op;
    un_fn fn;
} un_tab[] = {
    {"Identity", u_id},  {"Cast", u_id},    {"CastLike", u_id}, {"Neg", u_neg},
    {"Abs", u_abs},      {"Sqrt", u_sqrt},  {"Floor", u_floor}, {"Ceil", u_ceil},
    {"Relu", u_relu},    {"Sign", u_sign},  {"Not", u_not},     {"Reciprocal", u_recip},
    {"Round", u_round},  {"Reshape", u_id}, {"Flatten", u_id},  {"Squeeze", u_id},
    {"Unsqueeze", u_id}, {"Expand", u_id},
};

/* Elementwise: every present input broadcast into the output (Where: cond ? x : y). */
static int fold_elementwise(af__onnx_ctx_t *c, af__onnx_val_t *o, bin_fn bin, un_fn un)
{
    int is_where = !strcmp(c->node->op_type, "Where");
    int nin = un ? 1 : c->n_in;
    int flat_copy = un && strcmp(c->node->op_type, "Expand");
    for (int i = 0; i < nin; i++) /* broadcasting needs ranks <= the output's */
        if (!c->in[i] || !c->in[i]->vals || (!flat_copy && c->in[i]->rank > o->rank))
            return 0;
    if (un && af__onnx_numel(c->in[0]) != af__onnx_numel(o) && strcmp(c->node->op_type, "Expand"))
        return 0;
    int rc = af__onnx_vals_alloc(o);
    if (rc)
        return rc < 0 ? AF_ENOMEM : 0;
    int isint = af__onnx_is_int(c->in[0]->elem);
    int64_t n = af__onnx_numel(o);
    for (int64_t e = 0; e < n; e++) {
        double a = c->in[0]->vals[flat_copy ? e : bcast_src(o, c->in[0], e)], r;
        if (un) {
            r = un(a);
        } else if (is_where) {
            double x = c->in[1]->vals[bcast_src(o, c->in[1], e)];
            double y = c->in[2]->vals[bcast_src(o, c->in[2], e)];
            r = isnan(a) ? AF__ONNX_UNK : a != 0 ? x : y;
        } else {
            r = a;
            for (int i = 1; i < nin && !isnan(r); i++) {
                double b = c->in[i]->vals[bcast_src(o, c->in[i], e)];
                r = isnan(b) ? AF__ONNX_UNK : bin(r, b, isint);
            }
        }
        o->vals[e] = isnan(a) ? AF__ONNX_UNK : to_type(r, o->elem);
    }
    return 0;
}

/* Gather, Concat, Slice, Transpose over the values (onnx_move.c moves the doubles). */
static int fold_move(af__onnx_ctx_t *c, af__onnx_val_t *o)
{
    int nd = strcmp(c->node->op_type, "Concat") ? 1 : c->n_in;
    const uint8_t *src[32];
    for (int i = 0; i < nd; i++) {
        if (!c->in[i] || !c->in[i]->vals || af__onnx_numel(c->in[i]) < 0)
            return 0;
        src[i] = (const uint8_t *)c->in[i]->vals;
    }
    if (!strcmp(c->node->op_type, "Gather") && !c->in[1]->vals)
        return 0;
    int rc = af__onnx_vals_alloc(o);
    if (rc)
        return rc < 0 ? AF_ENOMEM : 0;
    if (af__onnx_move(c, o, src, (uint8_t *)o->vals, sizeof(double)) &&
        strcmp(c->node->op_type, "Gather")) {
        af__free(o->vals); /* parameters not known: no values */
        o->vals = NULL;
    }
    return 0;
}

static int fold_misc(af__onnx_ctx_t *c, af__onnx_val_t *o)
{
    const char *op = c->node->op_type;
    int64_t n = af__onnx_numel(o);
    int rc;
    if (!strcmp(op, "ConstantOfShape")) {
        double fill = 0;
        const Onnx__AttributeProto *a = af__onnx_attr(c->node, "value");
        if (a && a->t) {
            af__onnx_val_t tmp = {.name = "value"};
            if ((rc = af__onnx_tensor_decode(c->im, a->t, &tmp, c->err)))
                return rc;
            int ok = tmp.vals && af__onnx_numel(&tmp) == 1;
            fill = ok ? tmp.vals[0] : AF__ONNX_UNK;
            af__free(tmp.vals);
        }
        if ((rc = af__onnx_vals_alloc(o)))
            return rc < 0 ? AF_ENOMEM : 0;
        for (int64_t i = 0; i < n; i++)
            o->vals[i] = fill;
    } else if (!strcmp(op, "Range")) {
        double s = c->in[0]->vals[0], d = c->in[2]->vals[0];
        if ((rc = af__onnx_vals_alloc(o)))
            return rc < 0 ? AF_ENOMEM : 0;
        for (int64_t i = 0; i < n; i++)
            o->vals[i] = to_type(s + (double)i * d, o->elem);
    } else if (!strncmp(op, "Reduce", 6) && n == 1 && c->in[0]->vals) {
        const af__onnx_val_t *x = c->in[0];
        int64_t m = af__onnx_numel(x);
        int prod = !strcmp(op, "ReduceProd"), sum = !strcmp(op, "ReduceSum");
        int mx = !strcmp(op, "ReduceMax"), mn = !strcmp(op, "ReduceMin");
        if (!(prod || sum || mx || mn) || m < 1)
            return 0;
        double r = x->vals[0];
        for (int64_t i = 1; i < m; i++) {
            double v = x->vals[i];
            r = prod ? r * v : sum ? r + v : mx ? (v > r ? v : r) : (v < r ? v : r);
        }
        if ((rc = af__onnx_vals_alloc(o)))
            return rc < 0 ? AF_ENOMEM : 0;
        o->vals[0] = isnan(r) ? AF__ONNX_UNK : r;
    }
    return 0;
}

/* Split: every output's values are its slab of the input's along the axis (the shape rule has
 * set every output's dims). A pads or shape vector split into scalars, as converters emit. */
static int fold_split(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !x->vals || x->rank < 1 || af__onnx_numel(x) < 0)
        return 0;
    int axis, rc;
    if ((rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", 0), x->rank, &axis)))
        return rc;
    int64_t outer = 1, inner = 1, at = 0;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    for (int k = 0; k < c->n_out; k++) {
        af__onnx_val_t *o = OUT(k);
        if (!o || o->vals || o->rank != x->rank || o->dims[axis] < 0 ||
            at + o->dims[axis] > x->dims[axis])
            return 0;
        at += o->dims[axis];
    }
    at = 0;
    for (int k = 0; k < c->n_out; k++) {
        af__onnx_val_t *o = OUT(k);
        int64_t len = o->dims[axis];
        if ((rc = af__onnx_vals_alloc(o)))
            return rc < 0 ? AF_ENOMEM : 0;
        for (int64_t i = 0; i < outer; i++)
            memcpy(o->vals + i * len * inner, x->vals + (i * x->dims[axis] + at) * inner,
                   (size_t)(len * inner) * sizeof(double));
        at += len;
    }
    return 0;
}

int af__onnx_fold(af__onnx_ctx_t *c)
{
    af__onnx_val_t *o = OUT(0);
    if (!o || o->vals || c->n_in < 1)
        return 0;
    if (!strcmp(c->node->op_type, "Split"))
        return fold_split(c);
    int64_t n = af__onnx_numel(o);
    if (n < 0 || n > AF__ONNX_FOLD_MAX)
        return 0;
    const char *op = c->node->op_type;
    if (!strcmp(op, "Range") || !strcmp(op, "ConstantOfShape") || !strncmp(op, "Reduce", 6)) {
        for (int i = 0; i < c->n_in; i++)
            if (c->in[i] &&
                (!c->in[i]->vals || (!strcmp(op, "Range") && !af__onnx_vals_known(c->in[i]))))
                return 0;
        if (!strcmp(op, "ConstantOfShape") && !af__onnx_vals_known(c->in[0]))
            return 0;
        return fold_misc(c, o);
    }
    if (!c->in[0])
        return 0;
    for (size_t i = 0; i < AF_ARRAY_SIZE(bin_tab); i++)
        if (!strcmp(op, bin_tab[i].op))
            return fold_elementwise(c, o, bin_tab[i].fn, NULL);
    for (size_t i = 0; i < AF_ARRAY_SIZE(un_tab); i++)
        if (!strcmp(op, un_tab[i].op))
            return fold_elementwise(c, o, NULL, un_tab[i].fn);
    if (!strcmp(op, "Where") && c->n_in == 3)
        return fold_elementwise(c, o, NULL, NULL);
    if (af__onnx_is_move(op) && (strcmp(op, "Gather") || (c->n_in >= 2 && c->in[1])))
        return fold_move(c, o);
    return 0;
}

#endif /* AF_HAVE_ONNX */
