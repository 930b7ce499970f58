/*
 * Reference kernels — int8/uint8 quantisation: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
 *
 * Quantise: q = saturate(round_half_even(x / scale) + zero_point) into the zero point's type
 * (uint8 when it is omitted); dequantise: (q - zero_point) * scale. Scales and zero points are
 * scalars or per-axis vectors (QuantizeLinear/DequantizeLinear `axis`, default 1; a per-row
 * A zero point and per-column B zero point for the matrix products; per output channel for the
 * convolution weights). Integer products accumulate exactly (in double: |terms| < 2^16, far
 * below 2^53); requantisation multiplies by x_scale * w_scale / y_scale and rounds half to
 * even, as ONNX's reference does. Pure functions.
 */
#include "executor/kernels_ref.h"

#define Q8 (KR_DT(I8) | KR_DT(U8))

/* Element i of an optional per-axis parameter at input pos (scalar: element 0); def when the
 * input is omitted. */
static double prm_at(const af_kernel_args_t *a, int32_t pos, int64_t i, double def)
{
    uint64_t b;
    int32_t t;
    const void *p = kr_in(a, pos, &b, &t);
    if (!p)
        return def;
    af_dtype_t dt = kr_dtype(a->graph, t);
    uint64_t n = b / af_dtype_size(dt);
    return n == 0 ? def : af__elem_load(dt, p, n == 1 ? 0 : (int64_t)(i % (int64_t)n));
}

/* The number of elements of input pos (0 when omitted). */
static int64_t prm_count(const af_kernel_args_t *a, int32_t pos)
{
    uint64_t b;
    int32_t t;
    if (!kr_in(a, pos, &b, &t))
        return 0;
    return (int64_t)(b / af_dtype_size(kr_dtype(a->graph, t)));
}

static double quantize(double v, double zp, af_dtype_t dt)
{
    double q = nearbyint(v) + zp;
    double lo = dt == AF_DTYPE_I8 ? -128 : 0, hi = dt == AF_DTYPE_I8 ? 127 : 255;
    return q < lo ? lo : q > hi ? hi : q;
}

/* The index along the quantisation axis of flat element i of shape s (axis < 0: scalar). */
static int64_t axis_index(const kr_shape_t *s, int32_t axis, int64_t i)
{
    if (axis < 0)
        return 0;
    int64_t inner = 1;
    for (int32_t k = axis + 1; k < s->rank; k++)
        inner *= s->d[k];
    return i / inner % s->d[axis];
}

static int quant_axis(const af_kernel_args_t *a, const kr_shape_t *sx, int32_t *axis)
{
    int64_t n = prm_count(a, 1);
    *axis = -1;
    if (n <= 1)
        return 0;
    *axis = kr_axis(kr_attr_i(a->graph, a->node, "axis", 1), sx->rank);
    return *axis < 0 || sx->d[*axis] != n ? AF_ESHAPE : 0;
}

/* QuantizeLinear / DequantizeLinear: scale at input 1, zero point at input 2, per axis. */
static int quant_linear(const af_kernel_args_t *a, int dequant)
{
    kr_shape_t sx;
    int32_t axis;
    if (kr_in_shape(a, 0, &sx) || kr_in_ok(a, 0) || kr_out_ok(a, 0) || quant_axis(a, &sx, &axis))
        return AF_ESHAPE;
    af_dtype_t dx = kr_dtype(a->graph, a->info->inputs[0]);
    af_dtype_t dy = kr_dtype(a->graph, a->info->outputs[0]);
    int64_t n = kr_numel(&sx);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = axis_index(&sx, axis, i);
        double x = af__elem_load(dx, a->inputs[0], i), s = prm_at(a, 1, c, 1.0);
        double z = prm_at(a, 2, c, 0.0);
        /* quantising divides in f32, as ONNX's reference computes it */
        double v = dequant ? (float)((x - z) * s) : quantize((double)((float)x / (float)s), z, dy);
        af__elem_store(dy, a->outputs[0], i, v);
    }
    return 0;
}

static int k_QuantizeLinear(const af_kernel_args_t *a)
{
    return quant_linear(a, 0);
}

static int k_DequantizeLinear(const af_kernel_args_t *a)
{
    return quant_linear(a, 1);
}

static int c_QuantizeLinear(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_DT(F32) | KR_DT(I32), err);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_DT(F32), err);
    if (!rc)
        rc = kr_check_out(g, node, 0, Q8, err);
    int32_t tz = kr_in_tensor(g, node, 2);
    if (!rc && tz >= 0 && kr_dtype(g, tz) != kr_dtype(g, kr_out_tensor(g, node, 0)))
        return kr_unsup(err, "zero point and output of different dtypes");
    return rc;
}

static int c_DequantizeLinear(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, Q8 | KR_DT(I32), err);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_DT(F32), err);
    return rc ? rc : kr_check_out(g, node, 0, KR_DT(F32), err);
}

/* DynamicQuantizeLinear: uint8 over [min(0, min x), max(0, max x)]. */
static int k_DynamicQuantizeLinear(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    uint64_t sb, zb;
    float *scale = kr_out(a, 1, &sb, NULL);
    uint8_t *zp = kr_out(a, 2, &zb, NULL);
    if (kr_in_shape(a, 0, &sx) || kr_in_ok(a, 0) || kr_out_ok(a, 0) || !scale || sb < 4 || !zp ||
        zb < 1)
        return AF_ESHAPE;
    const float *x = a->inputs[0];
    int64_t n = kr_numel(&sx);
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    /* in f32 like ONNX's definition: the quotients round as float32 divisions do */
    float s = ((float)hi - (float)lo) / 255.0f;
    double z = s != 0 ? quantize((double)(-(float)lo / s), 0, AF_DTYPE_U8) : 0;
    *scale = s;
    *zp = (uint8_t)z;
    for (int64_t i = 0; i < n; i++)
        ((uint8_t *)a->outputs[0])[i] =
            (uint8_t)(s != 0 ? quantize((double)(x[i] / s), z, AF_DTYPE_U8) : z);
    return 0;
}

static int c_DynamicQuantizeLinear(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_DT(F32), err);
    if (!rc)
        rc = kr_check_out(g, node, 0, KR_DT(U8), err);
    if (!rc)
        rc = kr_check_out(g, node, 1, KR_DT(F32), err);
    return rc ? rc : kr_check_out(g, node, 2, KR_DT(U8), err);
}

/* ---- integer matrix products -------------------------------------------------------------- */

/*
 * sum_p (A[i,p] - azp[i]) * (B[p,j] - bzp[j]) for every output of a (batched) product with A at
 * input pa, B at pb and zero points at za / zb; out(i, j, acc) stores one result.
 */
typedef void (*mm_store_fn)(const af_kernel_args_t *a, int64_t at, int64_t j, double acc);

static int int_matmul(const af_kernel_args_t *a, int32_t pa, int32_t pb, int32_t za, int32_t zb,
                      mm_store_fn store)
{
    af__kr_mm_t mm;
    if (af__kr_mm_geom(a->graph, a->node, pa, pb, &mm, NULL) || kr_in_ok(a, pa) ||
        kr_in_ok(a, pb) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    const void *A = kr_in(a, pa, NULL, NULL), *B = kr_in(a, pb, NULL, NULL);
    af_dtype_t da = kr_dtype(a->graph, kr_in_tensor(a->graph, a->node, pa));
    af_dtype_t db = kr_dtype(a->graph, kr_in_tensor(a->graph, a->node, pb));
    kr_shape_t ops[2] = {mm.ba, mm.bb};
    kr_bcast_t b;
    kr_bcast_init(&b, &mm.bo, ops, 2);
    int64_t nb = kr_numel(&mm.bo);
    for (int64_t bi = 0; bi < nb; bi++, kr_bcast_next(&b))
        for (int64_t i = 0; i < mm.m; i++) {
            double az = prm_at(a, za, i, 0.0);
            for (int64_t j = 0; j < mm.n; j++) {
                double bz = prm_at(a, zb, j, 0.0), acc = 0;
                for (int64_t p = 0; p < mm.k; p++)
                    acc += (af__elem_load(da, A, b.off[0] * mm.m * mm.k + i * mm.k + p) - az) *
                           (af__elem_load(db, B, b.off[1] * mm.k * mm.n + p * mm.n + j) - bz);
                store(a, (bi * mm.m + i) * mm.n + j, j, acc);
            }
        }
    return 0;
}

static void store_i32(const af_kernel_args_t *a, int64_t at, int64_t j, double acc)
{
    (void)j;
    ((int32_t *)a->outputs[0])[at] = (int32_t)acc;
}

static void store_qlinear_mm(const af_kernel_args_t *a, int64_t at, int64_t j, double acc)
{
    af_dtype_t dy = kr_dtype(a->graph, a->info->outputs[0]);
    double s = prm_at(a, 1, 0, 1.0) * prm_at(a, 4, j, 1.0) / prm_at(a, 6, 0, 1.0);
    af__elem_store(dy, a->outputs[0], at, quantize(acc * s, prm_at(a, 7, 0, 0.0), dy));
}

static int k_MatMulInteger(const af_kernel_args_t *a)
{
    return int_matmul(a, 0, 1, 2, 3, store_i32);
}

static int k_QLinearMatMul(const af_kernel_args_t *a)
{
    return int_matmul(a, 0, 3, 2, 5, store_qlinear_mm);
}

static int c_MatMulInteger(const af_graph_t *g, int32_t node, af_error_t *err)
{
    af__kr_mm_t mm;
    int rc = kr_check_in(g, node, 0, Q8, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, Q8, err);
    if (!rc)
        rc = kr_check_out(g, node, 0, KR_DT(I32), err);
    return rc ? rc : af__kr_mm_geom(g, node, 0, 1, &mm, err);
}

static int c_QLinearMatMul(const af_graph_t *g, int32_t node, af_error_t *err)
{
    af__kr_mm_t mm;
    int rc = kr_check_in(g, node, 0, Q8, err);
    if (!rc)
        rc = kr_check_in(g, node, 3, Q8, err);
    if (!rc)
        rc = kr_check_out(g, node, 0, Q8, err);
    if (!rc && af_graph_node(g, node)->n_inputs != 8)
        return kr_unsup(err, "%d inputs (8 expected)", (int)af_graph_node(g, node)->n_inputs);
    return rc ? rc : af__kr_mm_geom(g, node, 0, 3, &mm, err);
}

/* ---- integer convolutions ----------------------------------------------------------------- */

static int int_conv(const af_kernel_args_t *a, int32_t px, int32_t pw, int32_t zx, int32_t zw,
                    int qlinear)
{
    af__kr_conv_t c;
    if (af__kr_conv_geom(a->graph, a->node, px, pw, 0, &c, NULL) || kr_in_ok(a, px) ||
        kr_in_ok(a, pw) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    const void *x = kr_in(a, px, NULL, NULL), *w = kr_in(a, pw, NULL, NULL);
    af_dtype_t dx = kr_dtype(a->graph, kr_in_tensor(a->graph, a->node, px));
    af_dtype_t dw = kr_dtype(a->graph, kr_in_tensor(a->graph, a->node, pw));
    af_dtype_t dy = kr_dtype(a->graph, a->info->outputs[0]);
    uint64_t bb;
    const int32_t *bias = qlinear ? kr_in(a, 8, &bb, NULL) : NULL;
    if (bias && bb < (uint64_t)c.m * 4)
        return AF_ESHAPE;
    double xz = prm_at(a, zx, 0, 0.0);
    const af__kr_win_t *wn = &c.w;
    int64_t i = 0, o[3];
    for (int64_t n = 0; n < c.n; n++)
        for (int64_t m = 0; m < c.m; m++) {
            double wz = prm_at(a, zw, m, 0.0);
            for (o[0] = 0; o[0] < wn->out[0]; o[0]++)
                for (o[1] = 0; o[1] < wn->out[1]; o[1]++)
                    for (o[2] = 0; o[2] < wn->out[2]; o[2]++, i++) {
                        double acc = af__kr_conv_at(&c, x, dx, xz, w, dw, wz, n, m, o);
                        if (!qlinear) {
                            ((int32_t *)a->outputs[0])[i] = (int32_t)acc;
                            continue;
                        }
                        acc += bias ? bias[m] : 0;
                        double s =
                            prm_at(a, 1, 0, 1.0) * prm_at(a, 4, m, 1.0) / prm_at(a, 6, 0, 1.0);
                        af__elem_store(dy, a->outputs[0], i,
                                       quantize(acc * s, prm_at(a, 7, 0, 0.0), dy));
                    }
        }
    return 0;
}

static int k_ConvInteger(const af_kernel_args_t *a)
{
    return int_conv(a, 0, 1, 2, 3, 0);
}

static int k_QLinearConv(const af_kernel_args_t *a)
{
    return int_conv(a, 0, 3, 2, 5, 1);
}

static int c_ConvInteger(const af_graph_t *g, int32_t node, af_error_t *err)
{
    af__kr_conv_t c;
    int rc = kr_check_in(g, node, 0, Q8, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, Q8, err);
    if (!rc)
        rc = kr_check_out(g, node, 0, KR_DT(I32), err);
    return rc ? rc : af__kr_conv_geom(g, node, 0, 1, 0, &c, err);
}

static int c_QLinearConv(const af_graph_t *g, int32_t node, af_error_t *err)
{
    af__kr_conv_t c;
    int rc = kr_check_in(g, node, 0, Q8, err);
    if (!rc)
        rc = kr_check_in(g, node, 3, Q8, err);
    if (!rc)
        rc = kr_check_in(g, node, 8, KR_DT(I32), err);
    if (!rc)
        rc = kr_check_out(g, node, 0, Q8, err);
    return rc ? rc : af__kr_conv_geom(g, node, 0, 3, 0, &c, err);
}

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }

const af__kernel_entry_t af__kref_quant[] = {
    ROW(QuantizeLinear), ROW(DequantizeLinear), ROW(DynamicQuantizeLinear), ROW(MatMulInteger),
    ROW(QLinearMatMul),  ROW(ConvInteger),      ROW(QLinearConv),           {.op = NULL},
};
