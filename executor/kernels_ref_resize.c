/*
 * Reference kernels — GridSample and RoiAlign (see below), and Resize (opset 10: X, scales; 11+: X,
 * roi, scales, sizes) and Upsample (scales attribute or input), every mode of the ONNX definition:
 * nearest (round_prefer_floor, round_prefer_ceil, floor, ceil), linear and cubic (cubic_coeff_a,
 * exclude_outside) over any number of dims, with the coordinate transformations half_pixel,
 * pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn and tf_crop_and_resize (roi,
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

/* Attributes (mode, transformation, rounding); -1 for a value not in the ONNX lists. */
static int rs_attrs(const af_graph_t *g, int32_t node, int legacy, rs_t *r)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const cts[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nrs[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    r->mode = kr_pick(kr_attr_s(g, node, "mode", "nearest"), modes, 3, M_NEAREST);
    if (r->mode < 0 && !strcmp(kr_attr_s(g, node, "mode", ""), "bilinear"))
        r->mode = M_LINEAR; /* Upsample-7 spelling */
    r->ct =
        legacy ? CT_ASYM
               : kr_pick(kr_attr_s(g, node, "coordinate_transformation_mode", ""), cts, 6, CT_HALF);
    r->nr = legacy ? NR_FLOOR
                   : kr_pick(kr_attr_s(g, node, "nearest_mode", ""), nrs, 4, NR_PREFER_FLOOR);
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

/* ---- GridSample ------------------------------------------------------------------------- */

/*
 * GridSample (opset 16) on [N, C, H, W] with a grid [N, Ho, Wo, 2] of (x, y) in [-1, 1]: modes
 * bilinear, nearest, bicubic (A = -0.75); padding zeros, border, reflection; align_corners. The
 * semantics are PyTorch's grid_sample, which ONNX adopted: for nearest and bilinear the
 * unnormalised coordinate is clipped (border) or reflected then clipped (reflection) before
 * sampling; bicubic applies the padding to each of its 16 taps; a tap outside the image reads 0.
 */
enum { GS_BILINEAR, GS_NEAREST, GS_BICUBIC };
enum { GP_ZEROS, GP_BORDER, GP_REFLECTION };

typedef struct gs {
    int mode, pad, align;
    int64_t h, w;
} gs_t;

static double reflect(double x, double lo2, double hi2)
{
    if (lo2 == hi2)
        return 0;
    double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    x = fabs(x - mn);
    double extra = fmod(x, span);
    int flips = (int)floor(x / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

static double gs_pad(const gs_t *g, double x, int64_t size)
{
    if (g->pad == GP_BORDER)
        return x < 0 ? 0 : x > (double)(size - 1) ? (double)(size - 1) : x;
    if (g->pad == GP_REFLECTION) {
        x = g->align ? reflect(x, 0, 2.0 * (double)(size - 1))
                     : reflect(x, -1, 2.0 * (double)size - 1);
        return x < 0 ? 0 : x > (double)(size - 1) ? (double)(size - 1) : x;
    }
    return x;
}

static double gs_pixel(const gs_t *g, af_dtype_t dt, const void *x, int64_t base, int64_t yy,
                       int64_t xx)
{
    if (yy < 0 || yy >= g->h || xx < 0 || xx >= g->w)
        return 0;
    return af__elem_load(dt, x, base + yy * g->w + xx);
}

static double gs_sample(const gs_t *g, af_dtype_t dt, const void *x, int64_t base, double gx,
                        double gy)
{
    double ix = g->align ? (gx + 1) / 2 * (double)(g->w - 1) : ((gx + 1) * (double)g->w - 1) / 2;
    double iy = g->align ? (gy + 1) / 2 * (double)(g->h - 1) : ((gy + 1) * (double)g->h - 1) / 2;
    if (g->mode == GS_BICUBIC) {
        double fx = floor(ix), fy = floor(iy), tx = ix - fx, ty = iy - fy, v = 0;
        for (int i = -1; i <= 2; i++)
            for (int j = -1; j <= 2; j++) {
                double px = gs_pad(g, fx + j, g->w), py = gs_pad(g, fy + i, g->h);
                v += cubic_w(ty - i, -0.75) * cubic_w(tx - j, -0.75) *
                     gs_pixel(g, dt, x, base, (int64_t)py, (int64_t)px);
            }
        return v;
    }
    ix = gs_pad(g, ix, g->w);
    iy = gs_pad(g, iy, g->h);
    if (g->mode == GS_NEAREST)
        return gs_pixel(g, dt, x, base, (int64_t)nearbyint(iy), (int64_t)nearbyint(ix));
    double fx = floor(ix), fy = floor(iy), tx = ix - fx, ty = iy - fy;
    int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
    return (1 - ty) * ((1 - tx) * gs_pixel(g, dt, x, base, y0, x0) +
                       tx * gs_pixel(g, dt, x, base, y0, x0 + 1)) +
           ty * ((1 - tx) * gs_pixel(g, dt, x, base, y0 + 1, x0) +
                 tx * gs_pixel(g, dt, x, base, y0 + 1, x0 + 1));
}

static int gs_attrs(const af_graph_t *g, int32_t node, gs_t *o)
{
    static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    o->mode = kr_pick(kr_attr_s(g, node, "mode", ""), modes, 3, GS_BILINEAR);
    o->pad = kr_pick(kr_attr_s(g, node, "padding_mode", ""), pads, 3, GP_ZEROS);
    o->align = (int)kr_attr_i(g, node, "align_corners", 0);
    return o->mode < 0 || o->pad < 0 ? -1 : 0;
}

static int k_GridSample(const af_kernel_args_t *a)
{
    kr_shape_t sx, sg, sy;
    gs_t g;
    if (kr_in_shape(a, 0, &sx) || kr_in_shape(a, 1, &sg) || kr_out_shape(a, 0, &sy) ||
        sx.rank != 4 || sg.rank != 4 || sy.rank != 4 || sg.d[3] != 2 || sg.d[0] != sx.d[0] ||
        sy.d[0] != sx.d[0] || sy.d[1] != sx.d[1] || sy.d[2] != sg.d[1] || sy.d[3] != sg.d[2] ||
        kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_out_ok(a, 0) || gs_attrs(a->graph, a->node, &g))
        return AF_ESHAPE;
    g.h = sx.d[2];
    g.w = sx.d[3];
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    af_dtype_t dg = kr_dtype(a->graph, a->info->inputs[1]);
    int64_t n = sx.d[0], c = sx.d[1], ho = sy.d[2], wo = sy.d[3];
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t p = 0; p < ho * wo; p++) {
                int64_t gi = (b * ho * wo + p) * 2;
                double gx = af__elem_load(dg, a->inputs[1], gi);
                double gy = af__elem_load(dg, a->inputs[1], gi + 1);
                af__elem_store(dt, a->outputs[0], (b * c + ch) * ho * wo + p,
                               gs_sample(&g, dt, a->inputs[0], (b * c + ch) * g.h * g.w, gx, gy));
            }
    return 0;
}

static int c_GridSample(const af_graph_t *g, int32_t node, af_error_t *err)
{
    gs_t o;
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_FLOATS, err);
    if (!rc && gs_attrs(g, node, &o))
        return kr_unsup(err, "mode '%s' or padding_mode '%s'", kr_attr_s(g, node, "mode", ""),
                        kr_attr_s(g, node, "padding_mode", ""));
    return rc;
}

/* ---- RoiAlign ---------------------------------------------------------------------------- */

/*
 * RoiAlign (opset 16) on [N, C, H, W] with rois [R, 4] = (x1, y1, x2, y2) and batch_indices:
 * each output bin averages (mode avg) or takes the largest of (mode max) sampling_ratio^2
 * bilinear samples (ceil(roi size / output size) per dim when sampling_ratio is 0), with
 * half_pixel coordinates (offset 0.5) or output_half_pixel (no offset, rois at least 1x1), as
 * ONNX's definition and ONNX Runtime compute it.
 */
static double roi_bilinear(af_dtype_t dt, const void *x, int64_t base, int64_t h, int64_t w,
                           double y, double xx)
{
    if (y < -1.0 || y > (double)h || xx < -1.0 || xx > (double)w)
        return 0;
    y = y <= 0 ? 0 : y;
    xx = xx <= 0 ? 0 : xx;
    int64_t y0 = (int64_t)y, x0 = (int64_t)xx, y1, x1;
    if (y0 >= h - 1)
        y0 = y1 = h - 1, y = (double)y0;
    else
        y1 = y0 + 1;
    if (x0 >= w - 1)
        x0 = x1 = w - 1, xx = (double)x0;
    else
        x1 = x0 + 1;
    double ly = y - (double)y0, lx = xx - (double)x0, hy = 1 - ly, hx = 1 - lx;
    return hy * hx * af__elem_load(dt, x, base + y0 * w + x0) +
           hy * lx * af__elem_load(dt, x, base + y0 * w + x1) +
           ly * hx * af__elem_load(dt, x, base + y1 * w + x0) +
           ly * lx * af__elem_load(dt, x, base + y1 * w + x1);
}

static int k_RoiAlign(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sx, sr, sy;
    if (kr_in_shape(a, 0, &sx) || kr_in_shape(a, 1, &sr) || kr_out_shape(a, 0, &sy) ||
        sx.rank != 4 || sr.rank != 2 || sr.d[1] != 4 || sy.rank != 4 || sy.d[0] != sr.d[0] ||
        sy.d[1] != sx.d[1] || kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_in_ok(a, 2) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t oh = sy.d[2], ow = sy.d[3], c = sx.d[1], h = sx.d[2], w = sx.d[3];
    int64_t sr_attr = kr_attr_i(g, a->node, "sampling_ratio", 0);
    double scale = kr_attr_f(g, a->node, "spatial_scale", 1.0);
    int half = strcmp(kr_attr_s(g, a->node, "coordinate_transformation_mode", "half_pixel"),
                      "output_half_pixel") != 0;
    int is_max = !strcmp(kr_attr_s(g, a->node, "mode", "avg"), "max");
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]), dr = kr_dtype(g, a->info->inputs[1]);
    af_dtype_t di = kr_dtype(g, a->info->inputs[2]);
    for (int64_t r = 0; r < sr.d[0]; r++) {
        int64_t b = af__elem_load_i(di, a->inputs[2], r);
        if (b < 0 || b >= sx.d[0])
            return AF_EINVAL;
        double off = half ? 0.5 : 0, v[4];
        for (int k = 0; k < 4; k++)
            v[k] = af__elem_load(dr, a->inputs[1], r * 4 + k) * scale - off;
        double rw = v[2] - v[0], rh = v[3] - v[1];
        if (!half)
            rw = rw > 1 ? rw : 1, rh = rh > 1 ? rh : 1;
        double bh = rh / (double)oh, bw = rw / (double)ow;
        int64_t gh = sr_attr > 0 ? sr_attr : (int64_t)ceil(rh / (double)oh);
        int64_t gw = sr_attr > 0 ? sr_attr : (int64_t)ceil(rw / (double)ow);
        double cnt = (double)(gh * gw > 0 ? gh * gw : 1);
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t p = 0; p < oh * ow; p++) {
                int64_t ph = p / ow, pw = p % ow, base = (b * c + ch) * h * w;
                double acc = is_max ? -INFINITY : 0;
                for (int64_t iy = 0; iy < gh; iy++)
                    for (int64_t ix = 0; ix < gw; ix++) {
                        double y = v[1] + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        double xx = v[0] + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                        double s = roi_bilinear(dt, a->inputs[0], base, h, w, y, xx);
                        acc = is_max ? (s > acc ? s : acc) : acc + s;
                    }
                af__elem_store(dt, a->outputs[0], (r * c + ch) * oh * ow + p,
                               is_max ? (gh * gw > 0 ? acc : 0) : acc / cnt);
            }
    }
    return 0;
}

static int c_RoiAlign(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_FLOATS, err);
    return rc ? rc : kr_check_in(g, node, 2, KR_DT(I32) | KR_DT(I64), err);
}

const af__kernel_entry_t af__kref_resize[] = {
    {.op = "Resize", .fn = k_resize, .check = c_resize},
    {.op = "Upsample", .fn = k_resize, .check = c_resize},
    {.op = "GridSample", .fn = k_GridSample, .check = c_GridSample},
    {.op = "RoiAlign", .fn = k_RoiAlign, .check = c_RoiAlign},
    {.op = NULL},
};
