/*
 * Reference kernels — unary elementwise ops: math (Abs, Neg, Sign, Sqrt, Exp, Log, the
 * trigonometric and hyperbolic functions, Erf, Ceil, Floor, Round), activations (Relu, Relu6,
 * Sigmoid, Softplus, Softsign, HardSwish, Gelu, Elu, Celu, Selu, LeakyRelu, HardSigmoid,
 * ThresholdedRelu, Shrink) and tests (IsNaN, IsInf, Not).
 *
 * Each op is one descriptor: its double function, its exact int64 function when integers are
 * allowed, the dtypes it accepts and the attributes it reads; one generic kernel walks the
 * elements: f32 without conversion calls, integers through int64, the rest through double
 * rounded to the output type. Pure functions.
 */
#include "executor/kernels_ref.h"

typedef double (*u_fn)(double x, const kr_ew_t *p);
typedef int64_t (*ui_fn)(int64_t x, const kr_ew_t *p);

typedef struct uop {
    u_fn f;
    ui_fn fi;      /* integer path, NULL when the op takes floats only */
    uint32_t mask; /* accepted input dtypes */
    int out_bool;  /* output is bool whatever the input */
    kr_prm_fn prm;
} uop_t;

/* ---- unary functions ---------------------------------------------------------------------- */

static double f_abs(double x, const kr_ew_t *p)
{
    return fabs(x);
}
static int64_t i_abs(int64_t x, const kr_ew_t *p)
{
    return p->uns || x >= 0 ? x : (int64_t)(0 - (uint64_t)x);
}
static double f_neg(double x, const kr_ew_t *p)
{
    return -x;
}
static int64_t i_neg(int64_t x, const kr_ew_t *p)
{
    return (int64_t)(0 - (uint64_t)x);
}
static double f_sign(double x, const kr_ew_t *p)
{
    return x > 0 ? 1 : x < 0 ? -1 : x; /* NaN stays NaN, -0 stays 0 */
}
static int64_t i_sign(int64_t x, const kr_ew_t *p)
{
    return p->uns ? x != 0 : (x > 0) - (x < 0);
}
static double f_relu(double x, const kr_ew_t *p)
{
    return x > 0 ? x : x == x ? 0 : x;
}
static int64_t i_relu(int64_t x, const kr_ew_t *p)
{
    return p->uns || x > 0 ? x : 0;
}
static double f_relu6(double x, const kr_ew_t *p)
{
    return x < 0 ? 0 : x > 6 ? 6 : x;
}
static double f_recip(double x, const kr_ew_t *p)
{
    return 1.0 / x;
}
static double f_sqrt(double x, const kr_ew_t *p)
{
    return sqrt(x);
}
static double f_exp(double x, const kr_ew_t *p)
{
    return exp(x);
}
static double f_log(double x, const kr_ew_t *p)
{
    return log(x);
}
static double f_sin(double x, const kr_ew_t *p)
{
    return sin(x);
}
static double f_cos(double x, const kr_ew_t *p)
{
    return cos(x);
}
static double f_tan(double x, const kr_ew_t *p)
{
    return tan(x);
}
static double f_asin(double x, const kr_ew_t *p)
{
    return asin(x);
}
static double f_acos(double x, const kr_ew_t *p)
{
    return acos(x);
}
static double f_atan(double x, const kr_ew_t *p)
{
    return atan(x);
}
static double f_sinh(double x, const kr_ew_t *p)
{
    return sinh(x);
}
static double f_cosh(double x, const kr_ew_t *p)
{
    return cosh(x);
}
static double f_tanh(double x, const kr_ew_t *p)
{
    return tanh(x);
}
static double f_asinh(double x, const kr_ew_t *p)
{
    return asinh(x);
}
static double f_acosh(double x, const kr_ew_t *p)
{
    return acosh(x);
}
static double f_atanh(double x, const kr_ew_t *p)
{
    return atanh(x);
}
static double f_erf(double x, const kr_ew_t *p)
{
    return erf(x);
}
static double f_ceil(double x, const kr_ew_t *p)
{
    return ceil(x);
}
static double f_floor(double x, const kr_ew_t *p)
{
    return floor(x);
}
static double f_round(double x, const kr_ew_t *p)
{
    return nearbyint(x); /* half to even (the default rounding mode), as ONNX requires */
}
static double f_sigmoid(double x, const kr_ew_t *p)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
static double f_softplus(double x, const kr_ew_t *p)
{
    return x > 30 ? x : log1p(exp(x));
}
static double f_softsign(double x, const kr_ew_t *p)
{
    return x / (1.0 + fabs(x));
}
static double f_hardswish(double x, const kr_ew_t *p)
{
    double h = x / 6.0 + 0.5;
    return x * (h < 0 ? 0 : h > 1 ? 1 : h);
}
static double f_gelu(double x, const kr_ew_t *p)
{
    if (p->i0) /* approximate = "tanh" */
        return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
}
static double f_elu(double x, const kr_ew_t *p)
{
    return x >= 0 ? x : p->alpha * (exp(x) - 1.0);
}
static double f_celu(double x, const kr_ew_t *p)
{
    return (x > 0 ? x : 0) + fmin(0.0, p->alpha * (exp(x / p->alpha) - 1.0));
}
static double f_selu(double x, const kr_ew_t *p)
{
    return p->gamma * (x > 0 ? x : p->alpha * (exp(x) - 1.0));
}
static double f_leaky(double x, const kr_ew_t *p)
{
    return x >= 0 ? x : p->alpha * x;
}
static double f_hardsigmoid(double x, const kr_ew_t *p)
{
    double v = p->alpha * x + p->beta;
    return v < 0 ? 0 : v > 1 ? 1 : v;
}
static double f_thresholded(double x, const kr_ew_t *p)
{
    return x > p->alpha ? x : 0;
}
static double f_shrink(double x, const kr_ew_t *p)
{
    return x < -p->beta ? x + p->alpha : x > p->beta ? x - p->alpha : 0;
}
static double f_isnan(double x, const kr_ew_t *p)
{
    return isnan(x);
}
static double f_isinf(double x, const kr_ew_t *p)
{
    return isinf(x) && ((x > 0 && p->i0) || (x < 0 && p->i1));
}
static double f_not(double x, const kr_ew_t *p)
{
    return x == 0;
}
static int64_t i_not(int64_t x, const kr_ew_t *p)
{
    return x == 0;
}

/* ---- parameters --------------------------------------------------------------------------- */

static void p_alpha1(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->alpha = kr_attr_f(g, n, "alpha", 1.0);
}
static void p_leaky(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->alpha = kr_attr_f(g, n, "alpha", 0.01);
}
static void p_selu(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->alpha = kr_attr_f(g, n, "alpha", 1.67326319217681884765625);
    p->gamma = kr_attr_f(g, n, "gamma", 1.05070102214813232421875);
}
static void p_hardsigmoid(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->alpha = kr_attr_f(g, n, "alpha", 0.2);
    p->beta = kr_attr_f(g, n, "beta", 0.5);
}
static void p_shrink(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->alpha = kr_attr_f(g, n, "bias", 0.0);
    p->beta = kr_attr_f(g, n, "lambd", 0.5);
}
static void p_isinf(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->i0 = kr_attr_i(g, n, "detect_positive", 1);
    p->i1 = kr_attr_i(g, n, "detect_negative", 1);
}
static void p_gelu(const af_graph_t *g, int32_t n, kr_ew_t *p)
{
    p->i0 = strcmp(kr_attr_s(g, n, "approximate", "none"), "tanh") == 0;
}

/* ---- the unary kernel --------------------------------------------------------------------- */

#define SIGNED (KR_FLOATS | KR_DT(I8) | KR_DT(I16) | KR_DT(I32) | KR_DT(I64))

static int unary(const af_kernel_args_t *a, const uop_t *u)
{
    const af_graph_t *g = a->graph;
    kr_shape_t so;
    if (a->n_inputs < 1 || a->n_outputs < 1 || kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) ||
        kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t di = kr_dtype(g, a->info->inputs[0]), dout = kr_dtype(g, a->info->outputs[0]);
    int64_t n = kr_numel(&so);
    if ((uint64_t)n * af_dtype_size(di) > a->input_bytes[0])
        return AF_ESHAPE;
    kr_ew_t p = {.uns = kr_is_unsigned(di)};
    if (u->prm)
        u->prm(g, a->node, &p);
    const void *x = a->inputs[0];
    void *y = a->outputs[0];
    if (u->fi && (kr_is_int(di) || di == AF_DTYPE_BOOL)) {
        for (int64_t i = 0; i < n; i++)
            af__elem_store_i(dout, y, i, u->fi(af__elem_load_i(di, x, i), &p));
    } else if (di == AF_DTYPE_F32 && dout == AF_DTYPE_F32) {
        const float *xf = x;
        float *yf = y;
        for (int64_t i = 0; i < n; i++)
            yf[i] = (float)u->f(xf[i], &p);
    } else {
        for (int64_t i = 0; i < n; i++)
            af__elem_store(dout, y, i, u->f(af__elem_load(di, x, i), &p));
    }
    return 0;
}

static int unary_check(const af_graph_t *g, int32_t node, af_error_t *err, const uop_t *u)
{
    int rc = kr_check_in(g, node, 0, u->mask, err);
    if (rc)
        return rc;
    const af_node_info_t *ni = af_graph_node(g, node);
    af_dtype_t di = kr_dtype(g, ni->inputs[0]), dout = kr_dtype(g, ni->outputs[0]);
    if (u->out_bool ? dout != AF_DTYPE_BOOL : dout != di)
        return kr_unsup(err, "output of dtype %s for input %s", af_dtype_name(dout),
                        af_dtype_name(di));
    return 0;
}

#define UNARY(NAME, F, FI, MASK, OUTB, PRM)                                                        \
    static const uop_t u_##NAME = {F, FI, MASK, OUTB, PRM};                                        \
    static int k_##NAME(const af_kernel_args_t *a)                                                 \
    {                                                                                              \
        return unary(a, &u_##NAME);                                                                \
    }                                                                                              \
    static int c_##NAME(const af_graph_t *g, int32_t n, af_error_t *e)                             \
    {                                                                                              \
        return unary_check(g, n, e, &u_##NAME);                                                    \
    }

UNARY(Abs, f_abs, i_abs, KR_NUMERIC, 0, NULL)
UNARY(Neg, f_neg, i_neg, SIGNED, 0, NULL)
UNARY(Sign, f_sign, i_sign, KR_NUMERIC, 0, NULL)
UNARY(Relu, f_relu, i_relu, SIGNED, 0, NULL)
UNARY(Relu6, f_relu6, NULL, KR_FLOATS, 0, NULL)
UNARY(Reciprocal, f_recip, NULL, KR_FLOATS, 0, NULL)
UNARY(Sqrt, f_sqrt, NULL, KR_FLOATS, 0, NULL)
UNARY(Exp, f_exp, NULL, KR_FLOATS, 0, NULL)
UNARY(Log, f_log, NULL, KR_FLOATS, 0, NULL)
UNARY(Sin, f_sin, NULL, KR_FLOATS, 0, NULL)
UNARY(Cos, f_cos, NULL, KR_FLOATS, 0, NULL)
UNARY(Tan, f_tan, NULL, KR_FLOATS, 0, NULL)
UNARY(Asin, f_asin, NULL, KR_FLOATS, 0, NULL)
UNARY(Acos, f_acos, NULL, KR_FLOATS, 0, NULL)
UNARY(Atan, f_atan, NULL, KR_FLOATS, 0, NULL)
UNARY(Sinh, f_sinh, NULL, KR_FLOATS, 0, NULL)
UNARY(Cosh, f_cosh, NULL, KR_FLOATS, 0, NULL)
UNARY(Tanh, f_tanh, NULL, KR_FLOATS, 0, NULL)
UNARY(Asinh, f_asinh, NULL, KR_FLOATS, 0, NULL)
UNARY(Acosh, f_acosh, NULL, KR_FLOATS, 0, NULL)
UNARY(Atanh, f_atanh, NULL, KR_FLOATS, 0, NULL)
UNARY(Erf, f_erf, NULL, KR_FLOATS, 0, NULL)
UNARY(Ceil, f_ceil, NULL, KR_FLOATS, 0, NULL)
UNARY(Floor, f_floor, NULL, KR_FLOATS, 0, NULL)
UNARY(Round, f_round, NULL, KR_FLOATS, 0, NULL)
UNARY(Sigmoid, f_sigmoid, NULL, KR_FLOATS, 0, NULL)
UNARY(Softplus, f_softplus, NULL, KR_FLOATS, 0, NULL)
UNARY(Softsign, f_softsign, NULL, KR_FLOATS, 0, NULL)
UNARY(HardSwish, f_hardswish, NULL, KR_FLOATS, 0, NULL)
UNARY(Gelu, f_gelu, NULL, KR_FLOATS, 0, p_gelu)
UNARY(Elu, f_elu, NULL, KR_FLOATS, 0, p_alpha1)
UNARY(Celu, f_celu, NULL, KR_FLOATS, 0, p_alpha1)
UNARY(Selu, f_selu, NULL, KR_FLOATS, 0, p_selu)
UNARY(LeakyRelu, f_leaky, NULL, KR_FLOATS, 0, p_leaky)
UNARY(HardSigmoid, f_hardsigmoid, NULL, KR_FLOATS, 0, p_hardsigmoid)
UNARY(ThresholdedRelu, f_thresholded, NULL, KR_FLOATS, 0, p_alpha1)
UNARY(Shrink, f_shrink, NULL, KR_NUMERIC, 0, p_shrink)
UNARY(IsNaN, f_isnan, NULL, KR_FLOATS, 1, NULL)
UNARY(IsInf, f_isinf, NULL, KR_FLOATS, 1, p_isinf)
UNARY(Not, f_not, i_not, KR_DT(BOOL), 1, NULL)

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }

const af__kernel_entry_t af__kref_unary[] = {
    ROW(Abs),       ROW(Neg),        ROW(Sign),        ROW(Relu),
    ROW(Relu6),     ROW(Reciprocal), ROW(Sqrt),        ROW(Exp),
    ROW(Log),       ROW(Sin),        ROW(Cos),         ROW(Tan),
    ROW(Asin),      ROW(Acos),       ROW(Atan),        ROW(Sinh),
    ROW(Cosh),      ROW(Tanh),       ROW(Asinh),       ROW(Acosh),
    ROW(Atanh),     ROW(Erf),        ROW(Ceil),        ROW(Floor),
    ROW(Round),     ROW(Sigmoid),    ROW(Softplus),    ROW(Softsign),
    ROW(HardSwish), ROW(Gelu),       ROW(Elu),         ROW(Celu),
    ROW(Selu),      ROW(LeakyRelu),  ROW(HardSigmoid), ROW(ThresholdedRelu),
    ROW(Shrink),    ROW(IsNaN),      ROW(IsInf),       ROW(Not),
    {.op = NULL},
};
