/*
 * Reference kernels — elementwise ops with several operands: binary arithmetic and comparisons
 * with numpy broadcasting, logic and bit shifts, variadic Max/Min/Sum/Mean, Where, Clip,
 * Cast/CastLike, PRelu, Dropout (inference). Unary ops are in kernels_ref_unary.c.
 *
 * Each op is one descriptor (its double function, its exact int64 function when integers are
 * allowed, the dtypes it accepts, the attributes it reads); one generic kernel per arity walks
 * the elements. Paths: f32 (the common case, no conversion calls), integers through int64
 * (exact, wrapping as C unsigned arithmetic does, division by zero gives 0), everything else
 * through double with the result rounded to the output type. Pure functions.
 */
#include "executor/kernels_ref.h"

#include <float.h>

/* ---- binary functions --------------------------------------------------------------------- */

typedef double (*b_fn)(double x, double y, const kr_ew_t *p);
typedef int64_t (*bi_fn)(int64_t x, int64_t y, const kr_ew_t *p);

typedef struct bop {
    b_fn f;
    bi_fn fi;
    uint32_t mask;
    int out_bool;
    int mixed; /* the second operand may have its own dtype (Pow's exponent) */
    kr_prm_fn prm;
} bop_t;

static double f_add(double x, double y, const kr_ew_t *p)
{
    return x + y;
}
static int64_t i_add(int64_t x, int64_t y, const kr_ew_t *p)
{
    return (int64_t)((uint64_t)x + (uint64_t)y);
}
static double f_sub(double x, double y, const kr_ew_t *p)
{
    return x - y;
}
static int64_t i_sub(int64_t x, int64_t y, const kr_ew_t *p)
{
    return (int64_t)((uint64_t)x - (uint64_t)y);
}
static double f_mul(double x, double y, const kr_ew_t *p)
{
    return x * y;
}
static int64_t i_mul(int64_t x, int64_t y, const kr_ew_t *p)
{
    return (int64_t)((uint64_t)x * (uint64_t)y);
}
static double f_div(double x, double y, const kr_ew_t *p)
{
    return x / y;
}
static int64_t i_div(int64_t x, int64_t y, const kr_ew_t *p)
{
    if (y == 0)
        return 0;
    if (p->uns)
        return (int64_t)((uint64_t)x / (uint64_t)y);
    return y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y;
}
static double f_pow(double x, double y, const kr_ew_t *p)
{
    return pow(x, y);
}
static int64_t i_pow(int64_t x, int64_t y, const kr_ew_t *p)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    for (uint64_t e = (uint64_t)y; e; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return (int64_t)r;
}
/* Mod: fmod = 1 takes the dividend's sign (C fmod), fmod = 0 the divisor's (Python %). */
static double f_mod(double x, double y, const kr_ew_t *p)
{
    double r = fmod(x, y);
    if (!p->i0 && r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}
static int64_t i_mod(int64_t x, int64_t y, const kr_ew_t *p)
{
    if (y == 0)
        return 0;
    if (p->uns)
        return (int64_t)((uint64_t)x % (uint64_t)y);
    int64_t r = y == -1 ? 0 : x % y;
    if (!p->i0 && r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}
static double f_max(double x, double y, const kr_ew_t *p)
{
    return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
}
static int64_t i_max(int64_t x, int64_t y, const kr_ew_t *p)
{
    if (p->uns)
        return (uint64_t)x > (uint64_t)y ? x : y;
    return x > y ? x : y;
}
static double f_min(double x, double y, const kr_ew_t *p)
{
    return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
}
static int64_t i_min(int64_t x, int64_t y, const kr_ew_t *p)
{
    if (p->uns)
        return (uint64_t)x < (uint64_t)y ? x : y;
    return x < y ? x : y;
}
static double f_prelu(double x, double y, const kr_ew_t *p)
{
    return x < 0 ? x * y : x;
}
static int64_t i_prelu(int64_t x, int64_t y, const kr_ew_t *p)
{
    return !p->uns && x < 0 ? (int64_t)((uint64_t)x * (uint64_t)y) : x;
}
static int cmp_i(int64_t x, int64_t y, int uns)
{
    if (uns)
        return (uint64_t)x < (uint64_t)y ? -1 : (uint64_t)x > (uint64_t)y;
    return x < y ? -1 : x > y;
}
static double f_eq(double x, double y, const kr_ew_t *p)
{
    return x == y;
}
static int64_t i_eq(int64_t x, int64_t y, const kr_ew_t *p)
{
    return x == y;
}
static double f_gt(double x, double y, const kr_ew_t *p)
{
    return x > y;
}
static int64_t i_gt(int64_t x, int64_t y, const kr_ew_t *p)
{
    return cmp_i(x, y, p->uns) > 0;
}
static double f_ge(double x, double y, const kr_ew_t *p)
{
    return x >= y;
}
static int64_t i_ge(int64_t x, int64_t y, const kr_ew_t *p)
{
    return cmp_i(x, y, p->uns) >= 0;
}
static double f_lt(double x, double y, const kr_ew_t *p)
{
    return x < y;
}
static int64_t i_lt(int64_t x, int64_t y, const kr_ew_t *p)
{
    return cmp_i(x, y, p->uns) < 0;
}
static double f_le(double x, double y, const kr_ew_t *p)
{
    return x <= y;
}
static int64_t i_le(int64_t x, int64_t y, const kr_ew_t *p)
{
    return cmp_i(x, y, p->uns) <= 0;
}
static int64_t i_and(int64_t x, int64_t y, const kr_ew_t *p)
{
    return (x != 0) & (y != 0);
}
static int64_t i_or(int64_t x, int64_t y, const kr_ew_t *p)
{
    return (x != 0) | (y != 0);
}
static int64_t i_xor(int64_t x, int64_t y, const kr_ew_t *p)
{
    return (x != 0) ^ (y != 0);
}
static int64_t i_shift(int64_t x, int64_t y, const kr_ew_t *p)
{
    uint64_t s = (uint64_t)y;
    if (s >= 64)
        return 0;
    return (int64_t)(p->i0 ? (uint64_t)x << s : (uint64_t)x >> s);
}
static double f_none(double x, double y, const kr_ew_t *p)
{
    return 0;
}

static void p_mod(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->i0 = kr_attr_i(g, n, "fmod", 0);
}
static void p_shift(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->i0 = strcmp(kr_attr_s(g, n, "direction", "RIGHT"), "LEFT") == 0;
}

/* PRelu before opset 7 took a slope of shape [C] for input [N, C, ...] (per channel, not
 * numpy broadcast): such a slope is read as [C, 1, ..., 1]. */
static void prelu_slope(const bop_t *o, const kr_shape_t *x, kr_shape_t *slope)
{
    kr_shape_t bs;
    if (o->f != f_prelu || !kr_broadcast(x, slope, &bs) || slope->rank != 1 || x->rank < 2 ||
        slope->d[0] != x->d[1])
        return;
    slope->rank = x->rank - 1;
    for (int32_t i = 1; i < slope->rank; i++)
        slope->d[i] = 1;
}

/* ---- the binary kernel -------------------------------------------------------------------- */

static int binary(const af_kernel_args_t *a, const bop_t *o)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sh[2], so;
    if (a->n_inputs < 2 || kr_in_shape(a, 0, &sh[0]) || kr_in_shape(a, 1, &sh[1]) ||
        kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    prelu_slope(o, &sh[0], &sh[1]);
    kr_shape_t bs;
    if (kr_broadcast(&sh[0], &sh[1], &bs) || kr_numel(&bs) != kr_numel(&so))
        return AF_ESHAPE;
    af_dtype_t d0 = kr_dtype(g, a->info->inputs[0]), d1 = kr_dtype(g, a->info->inputs[1]);
    af_dtype_t dout = kr_dtype(g, a->info->outputs[0]);
    kr_ew_t p = {.uns = kr_is_unsigned(d0)};
    if (o->prm)
        o->prm(g, a->node, &p);
    const void *x = a->inputs[0], *w = a->inputs[1];
    void *y = a->outputs[0];
    int64_t n = kr_numel(&bs);
    int ints =
        o->fi && (kr_is_int(d0) || d0 == AF_DTYPE_BOOL) && (kr_is_int(d1) || d1 == AF_DTYPE_BOOL);
    int f32 = !ints && d0 == AF_DTYPE_F32 && d1 == AF_DTYPE_F32 && dout == AF_DTYPE_F32;
    kr_bcast_t b;
    kr_bcast_init(&b, &bs, sh, 2);
    for (int64_t i = 0; i < n; i++, kr_bcast_next(&b)) {
        int64_t i0 = b.off[0], i1 = b.off[1];
        if (ints)
            af__elem_store_i(dout, y, i,
                             o->fi(af__elem_load_i(d0, x, i0), af__elem_load_i(d1, w, i1), &p));
        else if (f32)
            ((float *)y)[i] = (float)o->f(((const float *)x)[i0], ((const float *)w)[i1], &p);
        else
            af__elem_store(dout, y, i,
                           o->f(af__elem_load(d0, x, i0), af__elem_load(d1, w, i1), &p));
    }
    return 0;
}

static int binary_check(const af_graph_t *g, int32_t node, af_error_t *err, const bop_t *o)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    if (ni->n_inputs != 2)
        return kr_unsup(err, "%d inputs (2 expected)", (int)ni->n_inputs);
    int rc = kr_check_in(g, node, 0, o->mask, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, o->mixed ? KR_NUMERIC : o->mask, err);
    if (rc)
        return rc;
    af_dtype_t d0 = kr_dtype(g, ni->inputs[0]), d1 = kr_dtype(g, ni->inputs[1]);
    af_dtype_t dout = kr_dtype(g, ni->outputs[0]);
    if (!o->mixed && d0 != d1)
        return kr_unsup(err, "inputs of dtypes %s and %s", af_dtype_name(d0), af_dtype_name(d1));
    if (o->out_bool ? dout != AF_DTYPE_BOOL : dout != d0)
        return kr_unsup(err, "output of dtype %s for inputs of %s", af_dtype_name(dout),
                        af_dtype_name(d0));
    if (!o->fi && !kr_is_float(d0))
        return kr_unsup(err, "integer inputs (%s)", af_dtype_name(d0));
    kr_shape_t s0, s1, bs;
    kr_shape_of(g, ni->inputs[0], &s0);
    kr_shape_of(g, ni->inputs[1], &s1);
    prelu_slope(o, &s0, &s1);
    if (kr_broadcast(&s0, &s1, &bs))
        return kr_unsup(err, "shapes that do not broadcast");
    return 0;
}

#define BINARY(NAME, F, FI, MASK, OUTB, MIXED, PRM)                                                \
    static const bop_t b_##NAME = {F, FI, MASK, OUTB, MIXED, PRM};                                 \
    static int k_##NAME(const af_kernel_args_t *a)                                                 \
    {                                                                                              \
        return binary(a, &b_##NAME);                                                               \
    }                                                                                              \
    static int c_##NAME(const af_graph_t *g, int32_t n, af_error_t *e)                             \
    {                                                                                              \
        return binary_check(g, n, e, &b_##NAME);                                                   \
    }

#define UINTS (KR_DT(U8) | KR_DT(U16) | KR_DT(U32) | KR_DT(U64))

BINARY(Add, f_add, i_add, KR_NUMERIC, 0, 0, NULL)
BINARY(Sub, f_sub, i_sub, KR_NUMERIC, 0, 0, NULL)
BINARY(Mul, f_mul, i_mul, KR_NUMERIC, 0, 0, NULL)
BINARY(Div, f_div, i_div, KR_NUMERIC, 0, 0, NULL)
BINARY(Pow, f_pow, i_pow, KR_NUMERIC, 0, 1, NULL)
BINARY(Mod, f_mod, i_mod, KR_NUMERIC, 0, 0, p_mod)
BINARY(PRelu, f_prelu, i_prelu, KR_NUMERIC, 0, 0, NULL)
BINARY(EqualNum, f_eq, i_eq, KR_ALL | KR_DT(STRING), 1, 0, NULL)

/* Equal: numbers through the binary kernel; strings (af_string_t handles) compared byte for
 * byte, with broadcasting (it reads strings and makes none, so it takes them). */
static int k_Equal(const af_kernel_args_t *a)
{
    if (kr_dtype(a->graph, a->info->inputs[0]) != AF_DTYPE_STRING)
        return k_EqualNum(a);
    kr_shape_t sh[2], so, bs;
    if (a->n_inputs < 2 || kr_in_shape(a, 0, &sh[0]) || kr_in_shape(a, 1, &sh[1]) ||
        kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_out_ok(a, 0) ||
        kr_broadcast(&sh[0], &sh[1], &bs) || kr_numel(&bs) != kr_numel(&so))
        return AF_ESHAPE;
    const af_string_t *x = a->inputs[0], *w = a->inputs[1];
    uint8_t *y = a->outputs[0];
    kr_bcast_t b;
    kr_bcast_init(&b, &bs, sh, 2);
    for (int64_t i = 0, n = kr_numel(&bs); i < n; i++, kr_bcast_next(&b)) {
        const af_string_t *p = &x[b.off[0]], *q = &w[b.off[1]];
        y[i] = p->len == q->len && (!p->len || !memcmp(p->data, q->data, (size_t)p->len));
    }
    return 0;
}
#define c_Equal c_EqualNum
BINARY(Greater, f_gt, i_gt, KR_NUMERIC, 1, 0, NULL)
BINARY(GreaterOrEqual, f_ge, i_ge, KR_NUMERIC, 1, 0, NULL)
BINARY(Less, f_lt, i_lt, KR_NUMERIC, 1, 0, NULL)
BINARY(LessOrEqual, f_le, i_le, KR_NUMERIC, 1, 0, NULL)
BINARY(And, f_none, i_and, KR_DT(BOOL), 1, 0, NULL)
BINARY(Or, f_none, i_or, KR_DT(BOOL), 1, 0, NULL)
BINARY(Xor, f_none, i_xor, KR_DT(BOOL), 1, 0, NULL)
BINARY(BitShift, f_none, i_shift, UINTS, 0, 0, p_shift)

/* ---- variadic: Max, Min, Sum, Mean -------------------------------------------------------- */

typedef struct vop {
    b_fn f;
    bi_fn fi;
    int mean;
} vop_t;

static int variadic(const af_kernel_args_t *a, const vop_t *o)
{
    const af_graph_t *g = a->graph;
    int32_t n_in = a->n_inputs;
    kr_shape_t sh[KR_BCAST_MAX], so;
    if (n_in < 1 || n_in > KR_BCAST_MAX || kr_out_shape(a, 0, &so) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    kr_shape_t bs = {0};
    for (int32_t k = 0; k < n_in; k++) {
        if (kr_in_shape(a, k, &sh[k]) || kr_in_ok(a, k) ||
            (k ? kr_broadcast(&bs, &sh[k], &bs) : (bs = sh[0], 0)))
            return AF_ESHAPE;
    }
    if (kr_numel(&bs) != kr_numel(&so))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]);
    kr_ew_t p = {.uns = kr_is_unsigned(dt)};
    int ints = kr_is_int(dt) && o->fi;
    kr_bcast_t b;
    kr_bcast_init(&b, &bs, sh, n_in);
    int64_t n = kr_numel(&bs);
    for (int64_t i = 0; i < n; i++, kr_bcast_next(&b)) {
        if (ints) {
            int64_t acc = af__elem_load_i(dt, a->inputs[0], b.off[0]);
            for (int32_t k = 1; k < n_in; k++)
                acc = o->fi(acc, af__elem_load_i(dt, a->inputs[k], b.off[k]), &p);
            af__elem_store_i(dt, a->outputs[0], i, acc);
        } else {
            double acc = af__elem_load(dt, a->inputs[0], b.off[0]);
            for (int32_t k = 1; k < n_in; k++)
                acc = o->f(acc, af__elem_load(dt, a->inputs[k], b.off[k]), &p);
            af__elem_store(dt, a->outputs[0], i, o->mean ? acc / n_in : acc);
        }
    }
    return 0;
}

static int variadic_check(const af_graph_t *g, int32_t node, af_error_t *err, const vop_t *o)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    if (ni->n_inputs < 1 || ni->n_inputs > KR_BCAST_MAX)
        return kr_unsup(err, "%d inputs (1 to %d supported)", (int)ni->n_inputs, KR_BCAST_MAX);
    int rc = kr_check_same(g, node, ni->n_inputs, o->fi ? KR_NUMERIC : KR_FLOATS, err);
    if (rc)
        return rc;
    kr_shape_t bs, s;
    kr_shape_of(g, ni->inputs[0], &bs);
    for (int32_t k = 1; k < ni->n_inputs; k++)
        if (kr_shape_of(g, ni->inputs[k], &s) || kr_broadcast(&bs, &s, &bs))
            return kr_unsup(err, "shapes that do not broadcast");
    return 0;
}

#define VARIADIC(NAME, F, FI, MEAN)                                                                \
    static const vop_t v_##NAME = {F, FI, MEAN};                                                   \
    static int k_##NAME(const af_kernel_args_t *a)                                                 \
    {                                                                                              \
        return variadic(a, &v_##NAME);                                                             \
    }                                                                                              \
    static int c_##NAME(const af_graph_t *g, int32_t n, af_error_t *e)                             \
    {                                                                                              \
        return variadic_check(g, n, e, &v_##NAME);                                                 \
    }

VARIADIC(Max, f_max, i_max, 0)
VARIADIC(Min, f_min, i_min, 0)
VARIADIC(Sum, f_add, i_add, 0)
VARIADIC(Mean, f_add, NULL, 1)

/* ---- Where, Clip, Cast, Dropout ----------------------------------------------------------- */

static int k_Where(const af_kernel_args_t *a)
{
    kr_shape_t sh[3], so, bs;
    if (a->n_inputs != 3 || kr_out_shape(a, 0, &so) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    for (int32_t k = 0; k < 3; k++)
        if (kr_in_shape(a, k, &sh[k]) || kr_in_ok(a, k))
            return AF_ESHAPE;
    if (kr_broadcast(&sh[0], &sh[1], &bs) || kr_broadcast(&bs, &sh[2], &bs) ||
        kr_numel(&bs) != kr_numel(&so))
        return AF_ESHAPE;
    size_t es = af_dtype_size(kr_dtype(a->graph, a->info->outputs[0]));
    const uint8_t *c = a->inputs[0], *x = a->inputs[1], *w = a->inputs[2];
    uint8_t *y = a->outputs[0];
    kr_bcast_t b;
    kr_bcast_init(&b, &bs, sh, 3);
    int64_t n = kr_numel(&bs);
    for (int64_t i = 0; i < n; i++, kr_bcast_next(&b)) {
        const uint8_t *src = c[b.off[0]] ? x + (size_t)b.off[1] * es : w + (size_t)b.off[2] * es;
        memcpy(y + (size_t)i * es, src, es);
    }
    return 0;
}

static int c_Where(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    if (ni->n_inputs != 3)
        return kr_unsup(err, "%d inputs (3 expected)", (int)ni->n_inputs);
    int rc = kr_check_in(g, node, 0, KR_DT(BOOL), err);
    if (rc)
        return rc;
    af_dtype_t dt = kr_dtype(g, ni->outputs[0]);
    if (kr_dtype(g, ni->inputs[1]) != dt || kr_dtype(g, ni->inputs[2]) != dt)
        return kr_unsup(err, "X, Y and the output of different dtypes");
    return 0;
}

/* Clip: bounds from inputs 1 and 2 (opset 11+, each optional) or attributes min/max. */
static int k_Clip(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t so;
    if (kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]);
    int64_t n = kr_numel(&so);
    if ((uint64_t)n * af_dtype_size(dt) > a->input_bytes[0])
        return AF_ESHAPE;
    uint64_t bl, bh;
    const void *lo = kr_in(a, 1, &bl, NULL), *hi = kr_in(a, 2, &bh, NULL);
    size_t es = af_dtype_size(dt);
    if ((lo && bl < es) || (hi && bh < es))
        return AF_ESHAPE;
    const void *x = a->inputs[0];
    void *y = a->outputs[0];
    if (kr_is_int(dt)) {
        int uns = kr_is_unsigned(dt);
        int64_t l = lo ? af__elem_load_i(dt, lo, 0) : uns ? 0 : INT64_MIN;
        int64_t h = hi ? af__elem_load_i(dt, hi, 0) : uns ? -1 : INT64_MAX;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = af__elem_load_i(dt, x, i);
            if (uns)
                v = (uint64_t)v < (uint64_t)l ? l : (uint64_t)v > (uint64_t)h ? h : v;
            else
                v = v < l ? l : v > h ? h : v;
            af__elem_store_i(dt, y, i, v);
        }
        return 0;
    }
    double l = lo ? af__elem_load(dt, lo, 0) : kr_attr_f(g, a->node, "min", -INFINITY);
    double h = hi ? af__elem_load(dt, hi, 0) : kr_attr_f(g, a->node, "max", INFINITY);
    for (int64_t i = 0; i < n; i++) {
        double v = af__elem_load(dt, x, i);
        af__elem_store(dt, y, i, v < l ? l : v > h ? h : v);
    }
    return 0;
}

static int c_Clip(const af_graph_t *g, int32_t node, af_error_t *err)
{
    return kr_check_same(g, node, 3, KR_NUMERIC, err);
}

/* Cast / CastLike: integers to integers exactly (wrapping), anything with a float through
 * double (float to integer truncates toward zero and saturates; NaN gives 0). */
static int k_Cast(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t so;
    if (kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t di = kr_dtype(g, a->info->inputs[0]), dout = kr_dtype(g, a->info->outputs[0]);
    int64_t n = kr_numel(&so);
    if ((uint64_t)n * af_dtype_size(di) > a->input_bytes[0])
        return AF_ESHAPE;
    const void *x = a->inputs[0];
    void *y = a->outputs[0];
    if (di == dout) {
        if (y != x)
            memcpy(y, x, (size_t)n * af_dtype_size(di));
    } else if (!kr_is_float(di) && !kr_is_float(dout)) {
        for (int64_t i = 0; i < n; i++)
            af__elem_store_i(dout, y, i, af__elem_load_i(di, x, i));
    } else {
        for (int64_t i = 0; i < n; i++)
            af__elem_store(dout, y, i, af__elem_load(di, x, i));
    }
    return 0;
}

static int c_Cast(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_ALL, err);
    return rc ? rc : kr_check_out(g, node, 0, KR_ALL, err);
}

/* Dropout at inference (training_mode absent or false): a copy, and a mask of ones. */
static int k_Dropout(const af_kernel_args_t *a)
{
    uint64_t tb;
    const uint8_t *train = kr_in(a, 2, &tb, NULL);
    if (train && tb >= 1 && train[0]) {
        uint64_t rb;
        const void *ratio = kr_in(a, 1, &rb, NULL);
        int32_t rt = kr_in_tensor(a->graph, a->node, 1);
        double r = ratio && rb ? af__elem_load(kr_dtype(a->graph, rt), ratio, 0)
                               : kr_attr_f(a->graph, a->node, "ratio", 0.5);
        if (r != 0)
            return AF_ENOTSUP; /* random dropping: not reproducible, not implemented */
    }
    uint64_t yb, mb;
    void *y = kr_out(a, 0, &yb, NULL);
    uint8_t *mask = kr_out(a, 1, &mb, NULL);
    if (!y || kr_in_ok(a, 0) || kr_out_ok(a, 0) || a->input_bytes[0] < yb)
        return AF_ESHAPE;
    if (y != a->inputs[0])
        memcpy(y, a->inputs[0], (size_t)yb);
    if (mask)
        memset(mask, 1, (size_t)mb);
    return 0;
}

static int c_Dropout(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_FLOATS, err);
    if (!rc)
        rc = kr_check_out(g, node, 1, KR_DT(BOOL), err);
    return rc;
}

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }

const af__kernel_entry_t af__kref_elem[] = {
    ROW(Add),
    ROW(Sub),
    ROW(Mul),
    ROW(Div),
    ROW(Pow),
    ROW(Mod),
    ROW(PRelu),
    {.op = "Equal", .fn = k_Equal, .check = c_Equal, .strings = 1},
    ROW(Greater),
    ROW(GreaterOrEqual),
    ROW(Less),
    ROW(LessOrEqual),
    ROW(And),
    ROW(Or),
    ROW(Xor),
    ROW(BitShift),
    ROW(Max),
    ROW(Min),
    ROW(Sum),
    ROW(Mean),
    {.op = "Where", .fn = k_Where, .check = c_Where, .strings = 1}, /* copies X or Y bytes */
    ROW(Clip),
    ROW(Cast),
    {.op = "CastLike", .fn = k_Cast, .check = c_Cast},
    ROW(Dropout),
    {.op = NULL},
};
