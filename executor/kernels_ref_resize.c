/*
 * Reference kernels — Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample
 * (scales attribute or input), every mode of the ONNX definition: nearest (round_prefer_floor,
 * round_prefer_ceil, floor, ceil), linear and cubic (cubic_coeff_a, exclude_outside) over any
 * number of dims, with the coordinate transformations half_pixel, pytorch_half_pixel,
 * align_corners, asymmetric, tf_half_pixel_for_nn and tf_crop_and_resize (roi,
 * extrapolation_value).
 *
 * Each output element is a weighted sum over the product of per-dim taps (1 for nearest, 2 for
 * linear, 4 for cubic; taps of weight 0 are dropped, so unresized dims cost one). Taps outside
 * the input clamp to the edge, as ONNX's reference pads with edge values; exclude_outside
 * zeroes them and renormalises. The scale of a dim is the `scales` value when given, else
 * output / input (the ONNX rule). Opset-10 Resize and Upsample use asymmetric coordinates and
 * floor for nearest. Pure functions; taps live in a fixed array.
 */
#include "executor/kernels_ref.h"

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { CT_HALF, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_NN, CT_CROP };
enum { NR_PREFER_FLOOR, NR_PREFER_CEIL, NR_FLOOR, NR_CEIL };

typedef struct rs {
    int mode, ct, nr, exclude;
    double a, extrap;
    double scale[AF_MAX_RANK], roi[2 * AF_MAX_RANK];
    kr_shape_t sx, sy;
} rs_t;

static int pick(const char *s, const char *const *names, int n, int def)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return s[0] ? -1 : def;
}

/* Attributes (mode, transformation, rounding); -1 for a value not in the ONNX lists. */
static int rs_attrs(const af_graph_t *g, int32_t node, int legacy, rs_t *r)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const cts[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nrs[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    r->mode = pick(kr_attr_s(g, node, "mode", "nearest"), modes, 3, M_NEAREST);
    if (r->mode < 0 && !strcmp(kr_attr_s(g, node, "mode", ""), "bilinear"))
        r->mode = M_LINEAR; /* Upsample-7 spelling */
    r->ct = legacy
                ? CT_ASYM
                : pick(kr_attr_s(g, node, "coordinate_transformation_mode", ""), cts, 6, CT_HALF);
    r->nr =
        legacy ? NR_FLOOR : pick(kr_attr_s(g, node, "nearest_mode", ""), nrs, 4, NR_PREFER_FLOOR);
    r->exclude = (int)kr_attr_i(g, node, "exclude_outside", 0);
    r->a = kr_attr_f(g, node, "cubic_coeff_a", -0.75);
    r->extrap = kr_attr_f(g, node, "extrapolation_value", 0.0);
    return r->mode < 0 || r->ct < 0 || r->nr < 0 ? -1 : 0;
}

/* 1 for Upsample and opset-10 Resize (X, scales). */
static int is_legacy(const af_graph_t *g, int32_t node)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    return !strcmp(ni->op, "Upsample") ||
           (ni->n_inputs == 2 && !af_graph_node_attr(g, node, "arenaflow.input_positions"));
}

/* Scales and roi from the inputs (run time). */
static int rs_params(const af_kernel_args_t *a, rs_t *r)
{
    const af_graph_t *g = a->graph;
    int legacy = is_legacy(g, a->node);
    if (kr_in_shape(a, 0, &r->sx) || kr_out_shape(a, 0, &r->sy) || r->sx.rank != r->sy.rank ||
        rs_attrs(g, a->node, legacy, r))
        return AF_ESHAPE;
    int32_t rank = r->sx.rank, sp = legacy ? 1 : 2;
    uint64_t b;
    int32_t ts;
    const void *sc = kr_in(a, sp, &b, &ts);
    int32_t ns = sc ? (int32_t)(b / af_dtype_size(kr_dtype(g, ts))) : 0;
    double fs[AF_MAX_RANK];
    const af_attr_t *at = af_graph_node_attr(g, a->node, "scales");
    if (!sc && at && at->type == AF_ATTR_FLOATS && at->n == rank) {
        for (int32_t i = 0; i < rank; i++)
            fs[i] = at->floats[i];
        ns = rank;
    } else {
        for (int32_t i = 0; i < ns && i < AF_MAX_RANK; i++)
            fs[i] = af__elem_load(kr_dtype(g, ts), sc, i);
    }
    if (ns && ns != rank)
        return AF_ESHAPE;
    for (int32_t i = 0; i < rank; i++) {
        r->scale[i] = ns ? fs[i] : r->sx.d[i] ? (double)r->sy.d[i] / (double)r->sx.d[i] : 1;
        double want = (double)r->sx.d[i] * fs[i]; /* floor(in x scale), float-rounding tolerant */
        if (ns && (int64_t)floor(want) != r->sy.d[i] && (int64_t)floor(want + 1e-5) != r->sy.d[i])
            return AF_ESHAPE; /* the output size the scales give */
        r->roi[i] = 0;
        r->roi[i + rank] = 1;
    }
    const void *roi = legacy ? NULL : kr_in(a, 1, &b, &ts);
    if (roi && b == 2 * (uint64_t)rank * af_dtype_size(kr_dtype(g, ts)))
        for (int32_t i = 0; i < 2 * rank; i++)
            r->roi[i] = af__elem_load(kr_dtype(g, ts), roi, i);
    return 0;
}

/* Original coordinate of output index x along dim d; sets *outside for tf_crop_and_resize. */
static double coord(const rs_t *r, int32_t d, int64_t x, int *outside)
{
    /* the resized length is in x scale, unrounded, as in ONNX's reference */
    double s = r->scale[d], in = (double)r->sx.d[d], out = in * s, xr = (double)x;
    *outside = 0;
    switch (r->ct) {
    case CT_PYTORCH:
        return out > 1 ? (xr + 0.5) / s - 0.5 : 0;
    case CT_ALIGN:
        return out == 1 ? 0 : xr * (in - 1) / (out - 1);
    case CT_ASYM:
        return xr / s;
    case CT_TF_NN:
        return (xr + 0.5) / s;
    case CT_CROP: {
        double st = r->roi[d], en = r->roi[d + r->sx.rank];
        double v = out > 1 ? st * (in - 1) + xr * (en - st) * (in - 1) / (out - 1)
                           : 0.5 * (st + en) * (in - 1);
        *outside = v < 0 || v > in - 1;
        return v;
    }
    default:
        return (xr + 0.5) / s - 0.5;
    }
}

static double cubic_w(double t, double A) /* |t| the distance to the tap */
{
    t = fabs(t);
    if (t <= 1)
        return ((A + 2) * t - (A + 3)) * t * t + 1;
    if (t < 2)
        return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
    return 0;
}

/* Taps of one dim: indices and weights; returns their count (0: outside, extrapolate). */
static int taps(const rs_t *r, int32_t d, int64_t x, int64_t *ix, double *w)
{
    int outside;
    double c = coord(r, d, x, &outside);
    int64_t in = r->sx.d[d];
    if (outside)
        return 0;
    if (r->mode == M_NEAREST) {
        double f = floor(c), frac = c - f;
        int64_t i = r->nr == NR_FLOOR  ? (int64_t)f
                    : r->nr == NR_CEIL ? (int64_t)ceil(c)
                    : frac == 0.5      ? (int64_t)(r->nr == NR_PREFER_FLOOR ? f : f + 1)
                                       : (int64_t)nearbyint(c);
        ix[0] = i < 0 ? 0 : i >= in ? in - 1 : i;
        w[0] = 1;
        return 1;
    }
    int64_t base = (int64_t)floor(c);
    double t = c - (double)base, sum = 0;
    int n = 0;
    int lo = r->mode == M_LINEAR ? 0 : -1, hi = r->mode == M_LINEAR ? 1 : 2;
    for (int k = lo; k <= hi; k++) {
        int64_t i = base + k;
        double wt = r->mode == M_LINEAR ? (k == 0 ? 1 - t : t) : cubic_w(t - k, r->a);
        if (r->exclude && (i < 0 || i >= in))
            wt = 0;
        sum += wt;
        if (wt == 0)
            continue;
        ix[n] = i < 0 ? 0 : i >= in ? in - 1 : i;
        w[n++] = wt;
    }
    for (int k = 0; r->exclude && sum != 0 && k < n; k++)
        w[k] /= sum;
    return n;
}

static int k_resize(const af_kernel_args_t *a)
{
    rs_t r;
    if (rs_params(a, &r) || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    int32_t rank = r.sx.rank;
    int64_t st[AF_MAX_RANK], acc = 1, idx[AF_MAX_RANK] = {0}, n = kr_numel(&r.sy);
    for (int32_t i = rank - 1; i >= 0; i--)
        st[i] = acc, acc *= r.sx.d[i];
    for (int64_t o = 0; o < n; o++) {
        int64_t ti[AF_MAX_RANK][4], k[AF_MAX_RANK] = {0};
        double tw[AF_MAX_RANK][4];
        int nt[AF_MAX_RANK], outside = 0;
        for (int32_t d = 0; d < rank; d++)
            outside |= (nt[d] = taps(&r, d, idx[d], ti[d], tw[d])) == 0;
        double v = 0;
        if (outside) {
            v = r.extrap;
        } else {
            for (;;) { /* odometer over the tap product */
                double wt = 1;
                int64_t off = 0;
                for (int32_t d = 0; d < rank; d++) {
                    wt *= tw[d][k[d]];
                    off += ti[d][k[d]] * st[d];
                }
                v += wt * af__elem_load(dt, a->inputs[0], off);
                int32_t d = rank - 1;
                while (d >= 0 && ++k[d] == nt[d])
                    k[d--] = 0;
                if (d < 0)
                    break;
            }
        }
        af__elem_store(dt, a->outputs[0], o, v);
        for (int32_t d = rank - 1; d >= 0; d--) {
            if (++idx[d] < r.sy.d[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}

static int c_resize(const af_graph_t *g, int32_t node, af_error_t *err)
{
    rs_t r;
    int rc = kr_check_same(g, node, 1, KR_FLOATS | KR_DT(I8) | KR_DT(U8), err);
    if (!rc && rs_attrs(g, node, is_legacy(g, node), &r))
        return kr_unsup(err,
                        "mode '%s', coordinate_transformation_mode '%s' or nearest_mode "
                        "'%s'",
                        kr_attr_s(g, node, "mode", ""),
                        kr_attr_s(g, node, "coordinate_transformation_mode", ""),
                        kr_attr_s(g, node, "nearest_mode", ""));
    if (!rc && kr_attr_i(g, node, "antialias", 0))
        return kr_unsup(err, "antialias");
    return rc;
}

const af__kernel_entry_t af__kref_resize[] = {
    {.op = "Resize", .fn = k_resize, .check = c_resize},
    {.op = "Upsample", .fn = k_resize, .check = c_resize},
    {.op = NULL},
};
