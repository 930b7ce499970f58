/*
 * Reference kernels — reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (axes from the attribute,
 * or from input 1 as ReduceSum does from opset 13 and every reduction from opset 18; keepdims;
 * noop_with_empty_axes), ArgMax / ArgMin (select_last_index), CumSum (exclusive, reverse).
 *
 * Floats accumulate in double; integer Sum/Prod/Max/Min accumulate in int64 (wrapping). The
 * output's element count must match what the axes give (AF_ESHAPE otherwise). Pure functions.
 */
#include "executor/kernels_ref.h"

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQ };

/* The reduced dims of a reduction node into red[]; 1 when it is a no-op (empty axes with
 * noop_with_empty_axes), 0 otherwise, -1 on a bad axis. */
static int red_axes(const af_kernel_args_t *a, const kr_shape_t *sx, int *red)
{
    int64_t axes[AF_MAX_RANK];
    int32_t n = kr_in_index(a->graph, a->node, 1) >= 0
                    ? kr_in_ints(a, 1, axes, AF_MAX_RANK)
                    : kr_attr_ints(a->graph, a->node, "axes", axes, AF_MAX_RANK);
    if (n > AF_MAX_RANK)
        return -1;
    for (int32_t i = 0; i < sx->rank; i++)
        red[i] = n <= 0;
    if (n <= 0)
        return kr_attr_i(a->graph, a->node, "noop_with_empty_axes", 0) ? 1 : 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = kr_axis(axes[i], sx->rank);
        if (d < 0)
            return -1;
        red[d] = 1;
    }
    return 0;
}

static double red_f(int kind, const void *x, af_dtype_t dt, int64_t base, const kr_red_t *r,
                    int64_t nr)
{
    double acc = kind == R_PROD ? 1 : kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : 0;
    double mx = -INFINITY;
    if (kind == R_LOGSUMEXP)
        for (int64_t j = 0; j < nr; j++)
            mx = fmax(mx, af__elem_load(dt, x, base + kr_red_off(r, j)));
    if (kind == R_LOGSUMEXP && isinf(mx))
        mx = 0;
    for (int64_t j = 0; j < nr; j++) {
        double v = af__elem_load(dt, x, base + kr_red_off(r, j));
        switch (kind) {
        case R_MAX:
            acc = isnan(v) || v > acc ? v : acc;
            break;
        case R_MIN:
            acc = isnan(v) || v < acc ? v : acc;
            break;
        case R_PROD:
            acc *= v;
            break;
        case R_L1:
            acc += fabs(v);
            break;
        case R_L2:
        case R_SUMSQ:
            acc += v * v;
            break;
        case R_LOGSUMEXP:
            acc += exp(v - mx);
            break;
        default:
            acc += v;
        }
    }
    switch (kind) {
    case R_MEAN:
        return nr ? acc / (double)nr : NAN;
    case R_L2:
        return sqrt(acc);
    case R_LOGSUM:
        return log(acc);
    case R_LOGSUMEXP:
        return log(acc) + mx;
    default:
        return acc;
    }
}

static int64_t red_i(int kind, const void *x, af_dtype_t dt, int64_t base, const kr_red_t *r,
                     int64_t nr)
{
    int uns = kr_is_unsigned(dt);
    uint64_t acc = kind == R_PROD ? 1 : 0;
    for (int64_t j = 0; j < nr; j++) {
        int64_t v = af__elem_load_i(dt, x, base + kr_red_off(r, j));
        if (kind == R_MAX || kind == R_MIN) {
            int first = j == 0, gt = uns ? (uint64_t)v > acc : v > (int64_t)acc;
            int lt = uns ? (uint64_t)v < acc : v < (int64_t)acc;
            if (first || (kind == R_MAX ? gt : lt))
                acc = (uint64_t)v;
        } else if (kind == R_PROD) {
            acc *= (uint64_t)v;
        } else if (kind == R_SUMSQ) {
            acc += (uint64_t)v * (uint64_t)v;
        } else if (kind == R_L1) {
            acc += uns || v >= 0 ? (uint64_t)v : 0 - (uint64_t)v;
        } else {
            acc += (uint64_t)v;
        }
    }
    if (kind == R_MEAN && nr)
        return uns ? (int64_t)(acc / (uint64_t)nr) : (int64_t)acc / nr;
    return (int64_t)acc;
}

static int reduce(const af_kernel_args_t *a, int kind)
{
    kr_shape_t sx, so;
    int red[AF_MAX_RANK];
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int noop = red_axes(a, &sx, red);
    if (noop < 0)
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    if (noop) {
        if (kr_numel(&so) != kr_numel(&sx))
            return AF_ESHAPE;
        if (a->outputs[0] != a->inputs[0])
            memcpy(a->outputs[0], a->inputs[0], (size_t)a->output_bytes[0]);
        return 0;
    }
    kr_red_t r;
    kr_red_init(&r, &sx, red);
    int64_t nk = kr_numel(&r.keep), nr = kr_numel(&r.red);
    if (nk != kr_numel(&so))
        return AF_ESHAPE;
    int ints = kr_is_int(dt) && kind != R_L2 && kind != R_LOGSUM && kind != R_LOGSUMEXP;
    for (int64_t k = 0; k < nk; k++) {
        int64_t base = kr_red_keep(&r, k);
        if (ints)
            af__elem_store_i(dt, a->outputs[0], k, red_i(kind, a->inputs[0], dt, base, &r, nr));
        else
            af__elem_store(dt, a->outputs[0], k, red_f(kind, a->inputs[0], dt, base, &r, nr));
    }
    return 0;
}

static int c_reduce(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_NUMERIC, err);
    return rc ? rc : kr_check_in(g, node, 1, KR_DT(I64) | KR_DT(I32), err);
}

#define REDUCE(NAME, KIND)                                                                         \
    static int k_##NAME(const af_kernel_args_t *a)                                                 \
    {                                                                                              \
        return reduce(a, KIND);                                                                    \
    }

REDUCE(ReduceSum, R_SUM)
REDUCE(ReduceMean, R_MEAN)
REDUCE(ReduceMax, R_MAX)
REDUCE(ReduceMin, R_MIN)
REDUCE(ReduceProd, R_PROD)
REDUCE(ReduceL1, R_L1)
REDUCE(ReduceL2, R_L2)
REDUCE(ReduceLogSum, R_LOGSUM)
REDUCE(ReduceLogSumExp, R_LOGSUMEXP)
REDUCE(ReduceSumSquare, R_SUMSQ)

/* ---- ArgMax, ArgMin ----------------------------------------------------------------------- */

static int arg(const af_kernel_args_t *a, int is_max)
{
    kr_shape_t sx, so;
    int64_t outer, dim, inner;
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        kr_split_axis(&sx, kr_attr_i(a->graph, a->node, "axis", 0), &outer, &dim, &inner) ||
        kr_numel(&so) != outer * inner || dim < 1)
        return AF_ESHAPE;
    int last = (int)kr_attr_i(a->graph, a->node, "select_last_index", 0);
    af_dtype_t dt = kr_dtype(a->graph, a->info->inputs[0]);
    int64_t *y = a->outputs[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t best = 0, base = o * dim * inner + in;
            double bv = af__elem_load(dt, a->inputs[0], base);
            for (int64_t i = 1; i < dim; i++) {
                double v = af__elem_load(dt, a->inputs[0], base + i * inner);
                int better = is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
                if (better)
                    best = i, bv = v;
            }
            y[o * inner + in] = best;
        }
    return 0;
}

static int c_arg(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_NUMERIC, err);
    return rc ? rc : kr_check_out(g, node, 0, KR_DT(I64), err);
}

static int k_ArgMax(const af_kernel_args_t *a)
{
    return arg(a, 1);
}
static int k_ArgMin(const af_kernel_args_t *a)
{
    return arg(a, 0);
}

/* ---- CumSum ------------------------------------------------------------------------------- */

static int k_CumSum(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    int64_t ax = 0, outer, dim, inner;
    if (kr_in_shape(a, 0, &sx) || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        kr_in_ints(a, 1, &ax, 1) != 1 || kr_split_axis(&sx, ax, &outer, &dim, &inner))
        return AF_ESHAPE;
    int excl = (int)kr_attr_i(a->graph, a->node, "exclusive", 0);
    int rev = (int)kr_attr_i(a->graph, a->node, "reverse", 0);
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    int ints = kr_is_int(dt);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            double acc = 0;
            uint64_t iacc = 0;
            for (int64_t s = 0; s < dim; s++) {
                int64_t i = rev ? dim - 1 - s : s, at = (o * dim + i) * inner + in;
                double v = ints ? 0 : af__elem_load(dt, a->inputs[0], at);
                int64_t iv = ints ? af__elem_load_i(dt, a->inputs[0], at) : 0;
                if (!excl)
                    acc += v, iacc += (uint64_t)iv;
                if (ints)
                    af__elem_store_i(dt, a->outputs[0], at, (int64_t)iacc);
                else
                    af__elem_store(dt, a->outputs[0], at, acc);
                if (excl)
                    acc += v, iacc += (uint64_t)iv;
            }
        }
    return 0;
}

static int c_CumSum(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_NUMERIC, err);
    return rc ? rc : kr_check_in(g, node, 1, KR_DT(I64) | KR_DT(I32), err);
}

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_reduce                                             \
    }

const af__kernel_entry_t af__kref_reduce[] = {
    ROW(ReduceSum),
    ROW(ReduceMean),
    ROW(ReduceMax),
    ROW(ReduceMin),
    ROW(ReduceProd),
    ROW(ReduceL1),
    ROW(ReduceL2),
    ROW(ReduceLogSum),
    ROW(ReduceLogSumExp),
    ROW(ReduceSumSquare),
    {.op = "ArgMax", .fn = k_ArgMax, .check = c_arg},
    {.op = "ArgMin", .fn = k_ArgMin, .check = c_arg},
    {.op = "CumSum", .fn = k_CumSum, .check = c_CumSum},
    {.op = NULL},
};
