/*
 * Reference kernels — convolution and pooling on NC[D][H]W tensors with 1 to 3 spatial dims:
 * Conv, ConvTranspose, MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool,
 * GlobalMaxPool, GlobalLpPool, MaxUnpool; the window geometry is shared with the quantised
 * convolutions (kernels_ref_quant.c).
 *
 * Geometry: 1-D and 2-D problems are run as 3-D ones with leading spatial dims of size 1.
 * Padding comes from `pads` (begin values, then end values) or from auto_pad (SAME_UPPER puts
 * the odd cell at the end, SAME_LOWER at the beginning, as ONNX says), and the output size the
 * graph gives is checked against the ONNX formula (floor, or ceil with ceil_mode). Graphs built
 * for planning only (the model zoo) carry shapes without window attributes: when no window
 * attribute is present and the defaults do not give the output size, stride = ceil(in / out),
 * kernel = stride + 1 (3 at stride 1) and symmetric padding are inferred instead (a transposed
 * convolution gets stride = out / in) — never when any window attribute is present.
 *
 * Pure functions; no temporaries.
 */
#include "executor/kernels_ref.h"

#include <float.h>

/* ---- geometry ----------------------------------------------------------------------------- */

enum { PAD_NOTSET, PAD_VALID, PAD_SAME_UPPER, PAD_SAME_LOWER };

static int auto_pad(const af_graph_t *g, int32_t node)
{
    static const char *const pads[] = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
    int p = kr_pick(kr_attr_s(g, node, "auto_pad", ""), pads, 4, PAD_NOTSET);
    return p < 0 ? PAD_NOTSET : p; /* an unknown spelling behaves as NOTSET, as before */
}

static int64_t out_size(int64_t in, int64_t k, int64_t st, int64_t dil, int64_t pb, int64_t pe,
                        int ceil_m, int pool)
{
    int64_t span = in + pb + pe - ((k - 1) * dil + 1);
    if (span < 0 && !pool)
        return 0;
    /* pooling: C division, truncating toward zero, as ONNX's shape inference and ONNX Runtime
     * (whose Conv refuses it): a window reaching past the padded input by less than a stride
     * still gives one output, over the cells that exist */
    int64_t o = (ceil_m ? span + st - 1 : span) / st + 1;
    if (o < 1)
        return 0;
    /* the last window must start inside the input or its leading padding (ONNX, PyTorch) */
    if (ceil_m && o > 1 && (o - 1) * st >= in + pb)
        o--;
    return o;
}

/* Zoo graphs: one dim's window inferred from the sizes alone (see the file comment). */
static void infer_dim(af__kr_win_t *w, int d, int have_k)
{
    int64_t in = w->in[d], out = w->out[d];
    w->st[d] = out > 0 ? (in + out - 1) / out : 1;
    if (w->st[d] < 1)
        w->st[d] = 1;
    if (!have_k)
        w->k[d] = w->st[d] > 1 ? w->st[d] + 1 : 3;
    int64_t need = (out - 1) * w->st[d] + w->dil[d] * (w->k[d] - 1) + 1 - in;
    w->pb[d] = w->pe[d] = need > 0 ? (need + 1) / 2 : 0;
}

int af__kr_window(const af_graph_t *g, int32_t node, const kr_shape_t *sx, const kr_shape_t *sy,
                  const int64_t *kdims, int transposed, af__kr_win_t *w, af_error_t *err)
{
    int32_t nd = sx->rank - 2;
    if (nd < 1 || nd > 3 || sy->rank != sx->rank)
        return kr_unsup(err, "%d spatial dims (1 to 3 supported)", (int)nd);
    int64_t k[3], st[3], dil[3], pads[6], op[3], os[3];
    int nk = kr_attr_ints(g, node, "kernel_shape", k, 3);
    int ns = kr_attr_ints(g, node, "strides", st, 3);
    int ndl = kr_attr_ints(g, node, "dilations", dil, 3);
    int np = kr_attr_ints(g, node, "pads", pads, 6);
    int nop = kr_attr_ints(g, node, "output_padding", op, 3);
    int nos = kr_attr_ints(g, node, "output_shape", os, 3);
    int ap = auto_pad(g, node), ceil_m = (int)kr_attr_i(g, node, "ceil_mode", 0);
    int pool = strstr(af_graph_node(g, node)->op, "Pool") != NULL;
    if ((nk >= 0 && nk != nd) || (ns >= 0 && ns != nd) || (ndl >= 0 && ndl != nd) ||
        (np >= 0 && np != 2 * nd))
        return kr_unsup(err, "window attributes of the wrong length for %d spatial dims", (int)nd);
    int no_attrs = nk < 0 && ns < 0 && ndl < 0 && np < 0 && ap == PAD_NOTSET && nop < 0 && nos < 0;
    memset(w, 0, sizeof(*w));
    w->nd = nd;
    for (int d = 0; d < 3; d++) {
        int s = d - (3 - nd); /* index into the node's dims, < 0 for the padding dims */
        w->in[d] = s < 0 ? 1 : sx->d[2 + s];
        w->out[d] = s < 0 ? 1 : sy->d[2 + s];
        w->k[d] = s < 0 ? 1 : kdims ? kdims[s] : nk > 0 ? k[s] : 0;
        w->st[d] = s < 0 || ns < 0 ? 1 : st[s];
        w->dil[d] = s < 0 || ndl < 0 ? 1 : dil[s];
        w->pb[d] = s < 0 || np < 0 ? 0 : pads[s];
        w->pe[d] = s < 0 || np < 0 ? 0 : pads[s + nd];
        if (w->k[d] <= 0 && !no_attrs)
            return kr_unsup(err, "no kernel_shape");
        if ((s >= 0 && (w->st[d] < 1 || w->dil[d] < 1)) || w->pb[d] < 0 || w->pe[d] < 0)
            return kr_unsup(err, "strides/dilations below 1 or negative pads");
        if (s < 0)
            continue;
        int64_t span = (w->k[d] - 1) * w->dil[d] + 1;
        if (transposed) {
            int64_t adj = nop > s ? op[s] : 0;
            int64_t natural = w->st[d] * (w->in[d] - 1) + adj + span;
            if (nos > 0 || ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
                int64_t total = natural - (nos > 0 ? os[s] : w->in[d] * w->st[d]);
                total = total > 0 ? total : 0;
                w->pb[d] = ap == PAD_SAME_UPPER ? total / 2 : total - total / 2;
                w->pe[d] = total - w->pb[d];
            }
            int64_t got = natural - w->pb[d] - w->pe[d];
            if (w->out[d] != got && no_attrs && w->in[d] > 0 && w->out[d] % w->in[d] == 0) {
                /* zoo graph: stride = out / in, padding trims the kernel's overhang */
                w->st[d] = w->out[d] / w->in[d];
                int64_t total = w->st[d] * (w->in[d] - 1) + span - w->out[d];
                w->pb[d] = total > 0 ? total / 2 : 0;
                w->pe[d] = total > 0 ? total - w->pb[d] : 0;
                got = w->st[d] * (w->in[d] - 1) + span - w->pb[d] - w->pe[d];
            }
            if (w->out[d] != got && !(nos > 0 && w->out[d] > got))
                return kr_unsup(err, "output dim %d is %lld, the attributes give %lld", (int)s,
                                (long long)w->out[d], (long long)got);
            continue;
        }
        if (ap == PAD_SAME_UPPER || ap == PAD_SAME_LOWER) {
            int64_t o = (w->in[d] + w->st[d] - 1) / w->st[d];
            int64_t total = (o - 1) * w->st[d] + span - w->in[d];
            total = total > 0 ? total : 0;
            w->pb[d] = ap == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pe[d] = total - w->pb[d];
        } else if (ap == PAD_VALID) {
            w->pb[d] = w->pe[d] = 0;
        }
        int64_t want = w->k[d] > 0 ? out_size(w->in[d], w->k[d], w->st[d], w->dil[d], w->pb[d],
                                              w->pe[d], ceil_m, pool)
                                   : -1;
        if (want == w->out[d])
            continue;
        if (!no_attrs)
            return kr_unsup(err, "output dim %d is %lld, the window attributes give %lld", (int)s,
                            (long long)w->out[d], (long long)want);
        infer_dim(w, d, kdims != NULL);
    }
    return 0;
}

/* ---- Conv ------------------------------------------------------------------------------- */

/* Channels and groups of a Conv (W: [M, C/G, k...]) or ConvTranspose (W: [C, M/G, k...]). */
static int conv_channels(const af_graph_t *g, int32_t node, const kr_shape_t *sx,
                         const kr_shape_t *sw, const kr_shape_t *sy, int transposed,
                         af__kr_conv_t *c, af_error_t *err)
{
    if (sw->rank != sx->rank || sx->rank < 3)
        return kr_unsup(err, "weights of rank %d for input of rank %d", (int)sw->rank,
                        (int)sx->rank);
    c->n = sx->d[0];
    c->c = sx->d[1];
    c->m = sy->d[1];
    int64_t per = sw->d[1]; /* C/G (Conv) or M/G (ConvTranspose) */
    int64_t def = !transposed && per > 0 && c->c % per == 0 ? c->c / per : 1; /* zoo depthwise */
    c->g = kr_attr_i(g, node, "group", def);
    if (c->g < 1 || c->c % c->g || c->m % c->g)
        return kr_unsup(err, "group %lld for %lld input and %lld output channels", (long long)c->g,
                        (long long)c->c, (long long)c->m);
    int ok = transposed ? sw->d[0] == c->c && per * c->g == c->m
                        : sw->d[0] == c->m && per * c->g == c->c;
    if (!ok || sy->d[0] != c->n)
        return kr_unsup(err,
                        "weights [%lld, %lld, ...] do not fit %lld -> %lld channels in "
                        "%lld groups",
                        (long long)sw->d[0], (long long)per, (long long)c->c, (long long)c->m,
                        (long long)c->g);
    return af__kr_window(g, node, sx, sy, sw->d + 2, transposed, &c->w, err);
}

int af__kr_conv_geom(const af_graph_t *g, int32_t node, int32_t x_pos, int32_t w_pos,
                     int transposed, af__kr_conv_t *c, af_error_t *err)
{
    kr_shape_t sx, sw, sy;
    int32_t tx = kr_in_tensor(g, node, x_pos), tw = kr_in_tensor(g, node, w_pos);
    int32_t ty = kr_out_tensor(g, node, 0);
    if (tx < 0 || tw < 0 || ty < 0 || kr_shape_of(g, tx, &sx) || kr_shape_of(g, tw, &sw) ||
        kr_shape_of(g, ty, &sy))
        return kr_unsup(err, "missing input or dynamic shape");
    return conv_channels(g, node, &sx, &sw, &sy, transposed, c, err);
}

double af__kr_conv_at(const af__kr_conv_t *c, const void *x, af_dtype_t dx, double xz,
                      const void *w, af_dtype_t dw, double wz, int64_t n, int64_t m,
                      const int64_t o[3])
{
    const af__kr_win_t *wn = &c->w;
    int64_t cg = c->c / c->g, grp = m / (c->m / c->g);
    int64_t plane = wn->in[0] * wn->in[1] * wn->in[2], ksz = wn->k[0] * wn->k[1] * wn->k[2];
    double acc = 0;
    for (int64_t ci = 0; ci < cg; ci++) {
        int64_t xb = (n * c->c + grp * cg + ci) * plane, wb = (m * cg + ci) * ksz;
        for (int64_t i = 0; i < wn->k[0]; i++) {
            int64_t z = o[0] * wn->st[0] - wn->pb[0] + i * wn->dil[0];
            if (z < 0 || z >= wn->in[0])
                continue;
            for (int64_t j = 0; j < wn->k[1]; j++) {
                int64_t h = o[1] * wn->st[1] - wn->pb[1] + j * wn->dil[1];
                if (h < 0 || h >= wn->in[1])
                    continue;
                for (int64_t l = 0; l < wn->k[2]; l++) {
                    int64_t q = o[2] * wn->st[2] - wn->pb[2] + l * wn->dil[2];
                    if (q < 0 || q >= wn->in[2])
                        continue;
                    double xv = af__elem_load(dx, x, xb + (z * wn->in[1] + h) * wn->in[2] + q);
                    double wv = af__elem_load(dw, w, wb + (i * wn->k[1] + j) * wn->k[2] + l);
                    acc += (xv - xz) * (wv - wz);
                }
            }
        }
    }
    return acc;
}

/* f32 Conv: the hot loop without conversions. */
static void conv_f32(const af__kr_conv_t *c, const float *x, const float *w, const float *b,
                     float *y)
{
    const af__kr_win_t *wn = &c->w;
    int64_t cg = c->c / c->g, mg = c->m / c->g;
    int64_t plane = wn->in[0] * wn->in[1] * wn->in[2], ksz = wn->k[0] * wn->k[1] * wn->k[2];
    int64_t oplane = wn->out[0] * wn->out[1] * wn->out[2];
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t m = 0; m < c->m; m++) {
            float *yo = y + (n * c->m + m) * oplane;
            const float *xg = x + (n * c->c + (m / mg) * cg) * plane, *wm = w + m * cg * ksz;
            for (int64_t oz = 0; oz < wn->out[0]; oz++)
                for (int64_t oh = 0; oh < wn->out[1]; oh++)
                    for (int64_t ow = 0; ow < wn->out[2]; ow++) {
                        float acc = b ? b[m] : 0.0f;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t i = 0; i < wn->k[0]; i++) {
                                int64_t z = oz * wn->st[0] - wn->pb[0] + i * wn->dil[0];
                                if (z < 0 || z >= wn->in[0])
                                    continue;
                                for (int64_t j = 0; j < wn->k[1]; j++) {
                                    int64_t h = oh * wn->st[1] - wn->pb[1] + j * wn->dil[1];
                                    if (h < 0 || h >= wn->in[1])
                                        continue;
                                    const float *xr =
                                        xg + ci * plane + (z * wn->in[1] + h) * wn->in[2];
                                    const float *wr = wm + ci * ksz + (i * wn->k[1] + j) * wn->k[2];
                                    for (int64_t l = 0; l < wn->k[2]; l++) {
                                        int64_t q = ow * wn->st[2] - wn->pb[2] + l * wn->dil[2];
                                        if (q >= 0 && q < wn->in[2])
                                            acc += xr[q] * wr[l];
                                    }
                                }
                            }
                        yo[(oz * wn->out[1] + oh) * wn->out[2] + ow] = acc;
                    }
        }
}

/* Geometry, bias (input 2, may be absent) and dtype of a Conv or ConvTranspose; 0 or AF_ESHAPE. */
static int conv_prepare(const af_kernel_args_t *a, int transposed, af__kr_conv_t *c, const void **b,
                        af_dtype_t *dt)
{
    uint64_t bb;
    if (af__kr_conv_geom(a->graph, a->node, 0, 1, transposed, c, NULL) || kr_in_ok(a, 0) ||
        kr_in_ok(a, 1) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    *b = kr_in(a, 2, &bb, NULL);
    *dt = kr_dtype(a->graph, a->info->outputs[0]);
    return *b && bb < (uint64_t)c->m * af_dtype_size(*dt) ? AF_ESHAPE : 0;
}

static int k_Conv(const af_kernel_args_t *a)
{
    af__kr_conv_t c;
    const void *b;
    af_dtype_t dt;
    if (conv_prepare(a, 0, &c, &b, &dt))
        return AF_ESHAPE;
    if (dt == AF_DTYPE_F32) {
        conv_f32(&c, a->inputs[0], a->inputs[1], b, a->outputs[0]);
        return 0;
    }
    const af__kr_win_t *w = &c.w;
    int64_t i = 0, o[3];
    for (int64_t n = 0; n < c.n; n++)
        for (int64_t m = 0; m < c.m; m++)
            for (o[0] = 0; o[0] < w->out[0]; o[0]++)
                for (o[1] = 0; o[1] < w->out[1]; o[1]++)
                    for (o[2] = 0; o[2] < w->out[2]; o[2]++, i++) {
                        double v =
                            af__kr_conv_at(&c, a->inputs[0], dt, 0, a->inputs[1], dt, 0, n, m, o);
                        af__elem_store(dt, a->outputs[0], i, v + (b ? af__elem_load(dt, b, m) : 0));
                    }
    return 0;
}

static int c_Conv(const af_graph_t *g, int32_t node, af_error_t *err)
{
    af__kr_conv_t c;
    int rc = kr_check_same(g, node, 3, KR_FLOATS, err);
    return rc ? rc : af__kr_conv_geom(g, node, 0, 1, 0, &c, err);
}

/* ConvTranspose: every input cell scatters its kernel into the output (zeroed first). */
static int k_ConvTranspose(const af_kernel_args_t *a)
{
    af__kr_conv_t c;
    const void *b;
    af_dtype_t dt;
    if (conv_prepare(a, 1, &c, &b, &dt))
        return AF_ESHAPE;
    const af__kr_win_t *w = &c.w;
    int64_t cg = c.c / c.g, mg = c.m / c.g, ksz = w->k[0] * w->k[1] * w->k[2];
    int64_t plane = w->in[0] * w->in[1] * w->in[2], op = w->out[0] * w->out[1] * w->out[2];
    const void *x = a->inputs[0], *k = a->inputs[1];
    void *y = a->outputs[0];
    for (int64_t n = 0; n < c.n; n++)
        for (int64_t m = 0; m < c.m; m++)
            for (int64_t i = 0; i < op; i++)
                af__elem_store(dt, y, (n * c.m + m) * op + i, b ? af__elem_load(dt, b, m) : 0);
    for (int64_t n = 0; n < c.n; n++)
        for (int64_t ci = 0; ci < c.c; ci++) {
            int64_t grp = ci / cg;
            for (int64_t p = 0; p < plane; p++) {
                int64_t iz = p / (w->in[1] * w->in[2]), ih = p / w->in[2] % w->in[1],
                        iw = p % w->in[2];
                double xv = af__elem_load(dt, x, (n * c.c + ci) * plane + p);
                for (int64_t mo = 0; mo < mg; mo++) {
                    int64_t m = grp * mg + mo;
                    for (int64_t q = 0; q < ksz; q++) {
                        int64_t kz = q / (w->k[1] * w->k[2]), kh = q / w->k[2] % w->k[1],
                                kw = q % w->k[2];
                        int64_t oz = iz * w->st[0] - w->pb[0] + kz * w->dil[0];
                        int64_t oh = ih * w->st[1] - w->pb[1] + kh * w->dil[1];
                        int64_t ow = iw * w->st[2] - w->pb[2] + kw * w->dil[2];
                        if (oz < 0 || oz >= w->out[0] || oh < 0 || oh >= w->out[1] || ow < 0 ||
                            ow >= w->out[2])
                            continue;
                        int64_t yi = (n * c.m + m) * op + (oz * w->out[1] + oh) * w->out[2] + ow;
                        double wv = af__elem_load(dt, k, (ci * mg + mo) * ksz + q);
                        af__elem_store(dt, y, yi, af__elem_load(dt, y, yi) + xv * wv);
                    }
                }
            }
        }
    return 0;
}

static int c_ConvTranspose(const af_graph_t *g, int32_t node, af_error_t *err)
{
    af__kr_conv_t c;
    int rc = kr_check_same(g, node, 3, KR_FLOATS, err);
    return rc ? rc : af__kr_conv_geom(g, node, 0, 1, 1, &c, err);
}

/* ---- pooling ---------------------------------------------------------------------------- */

enum { POOL_MAX, POOL_AVG, POOL_LP };

static int pool_geom(const af_graph_t *g, int32_t node, int global, af__kr_win_t *w,
                     af_error_t *err)
{
    kr_shape_t sx, sy;
    int32_t tx = kr_in_tensor(g, node, 0), ty = kr_out_tensor(g, node, 0);
    if (tx < 0 || ty < 0 || kr_shape_of(g, tx, &sx) || kr_shape_of(g, ty, &sy))
        return kr_unsup(err, "missing input or dynamic shape");
    if (sx.rank < 3 || sy.rank != sx.rank || sy.d[0] != sx.d[0] || sy.d[1] != sx.d[1])
        return kr_unsup(err, "input rank %d, output rank %d", (int)sx.rank, (int)sy.rank);
    if (!global)
        return af__kr_window(g, node, &sx, &sy, NULL, 0, w, err);
    memset(w, 0, sizeof(*w));
    w->nd = sx.rank - 2;
    if (w->nd > 3)
        return kr_unsup(err, "%d spatial dims (1 to 3 supported)", (int)w->nd);
    for (int d = 0; d < 3; d++) {
        int s = d - (3 - w->nd);
        w->in[d] = w->k[d] = s < 0 ? 1 : sx.d[2 + s];
        w->out[d] = w->st[d] = w->dil[d] = 1;
        if (s >= 0 && sy.d[2 + s] != 1)
            return kr_unsup(err, "global pooling to a spatial size other than 1");
    }
    return 0;
}

static int pool(const af_kernel_args_t *a, int kind, int global)
{
    const af_graph_t *g = a->graph;
    af__kr_win_t w;
    kr_shape_t sx;
    if (pool_geom(g, a->node, global, &w, NULL) || kr_in_shape(a, 0, &sx) || kr_in_ok(a, 0) ||
        kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(g, a->info->inputs[0]);
    int incl = (int)kr_attr_i(g, a->node, "count_include_pad", 0);
    double p = (double)kr_attr_i(g, a->node, "p", 2);
    int col = (int)kr_attr_i(g, a->node, "storage_order", 0);
    uint64_t ib;
    int64_t *idx = kr_out(a, 1, &ib, NULL);
    int64_t nc = sx.d[0] * sx.d[1], plane = w.in[0] * w.in[1] * w.in[2];
    int64_t oplane = w.out[0] * w.out[1] * w.out[2];
    if (idx && ib < (uint64_t)(nc * oplane) * 8)
        return AF_ESHAPE;
    for (int64_t c = 0; c < nc; c++)
        for (int64_t o = 0; o < oplane; o++) {
            int64_t oz = o / (w.out[1] * w.out[2]), oh = o / w.out[2] % w.out[1], ow = o % w.out[2];
            double acc = kind == POOL_MAX ? -INFINITY : 0;
            int64_t cnt = 0, arg = 0, span = 1;
            for (int d = 0; d < 3; d++) { /* count_include_pad: cells inside the padded input */
                int64_t s0 = (d == 0 ? oz : d == 1 ? oh : ow) * w.st[d] - w.pb[d], in_d = 0;
                for (int64_t k = 0; k < w.k[d]; k++)
                    in_d += s0 + k * w.dil[d] < w.in[d] + w.pe[d];
                span *= in_d;
            }
            for (int64_t i = 0; i < w.k[0]; i++) {
                int64_t z = oz * w.st[0] - w.pb[0] + i * w.dil[0];
                for (int64_t j = 0; z >= 0 && z < w.in[0] && j < w.k[1]; j++) {
                    int64_t h = oh * w.st[1] - w.pb[1] + j * w.dil[1];
                    for (int64_t l = 0; h >= 0 && h < w.in[1] && l < w.k[2]; l++) {
                        int64_t q = ow * w.st[2] - w.pb[2] + l * w.dil[2];
                        if (q < 0 || q >= w.in[2])
                            continue;
                        int64_t at = (z * w.in[1] + h) * w.in[2] + q;
                        double v = af__elem_load(dt, a->inputs[0], c * plane + at);
                        cnt++;
                        if (kind == POOL_MAX) {
                            if (cnt == 1 || v > acc) {
                                acc = v;
                                arg = col ? (q * w.in[1] + h) * w.in[0] + z : at;
                            }
                        } else {
                            acc += kind == POOL_LP ? pow(fabs(v), p) : v;
                        }
                    }
                }
            }
            if (kind == POOL_AVG)
                acc = (incl ? span : cnt) ? acc / (double)(incl ? span : cnt) : 0;
            else if (kind == POOL_LP)
                acc = pow(acc, 1.0 / p);
            af__elem_store(dt, a->outputs[0], c * oplane + o, acc);
            if (idx)
                idx[c * oplane + o] = c * plane + arg;
        }
    return 0;
}

static int pool_check(const af_graph_t *g, int32_t node, af_error_t *err, uint32_t mask, int global)
{
    af__kr_win_t w;
    int rc = kr_check_same(g, node, 1, mask, err);
    if (!rc)
        rc = kr_check_out(g, node, 1, KR_DT(I64), err);
    return rc ? rc : pool_geom(g, node, global, &w, err);
}

#define POOL(NAME, KIND, GLOBAL, MASK)                                                             \
    static int k_##NAME(const af_kernel_args_t *a)                                                 \
    {                                                                                              \
        return pool(a, KIND, GLOBAL);                                                              \
    }                                                                                              \
    static int c_##NAME(const af_graph_t *g, int32_t n, af_error_t *e)                             \
    {                                                                                              \
        return pool_check(g, n, e, MASK, GLOBAL);                                                  \
    }

#define MAXPOOL_DTS (KR_FLOATS | KR_DT(I8) | KR_DT(U8))
POOL(MaxPool, POOL_MAX, 0, MAXPOOL_DTS)
POOL(AveragePool, POOL_AVG, 0, KR_FLOATS)
POOL(LpPool, POOL_LP, 0, KR_FLOATS)
POOL(GlobalMaxPool, POOL_MAX, 1, MAXPOOL_DTS)
POOL(GlobalAveragePool, POOL_AVG, 1, KR_FLOATS)
POOL(GlobalLpPool, POOL_LP, 1, KR_FLOATS)

/*
 * MaxUnpool: zeros, then each value of X goes to the position its index I names. I is a flat
 * index into the default unpooled shape [N, C, (in - 1) * stride - pads + kernel ...] (what
 * MaxPool's Indices refer to); an output_shape larger than that puts the same multi-index into
 * the bigger output (the rest stays zero).
 */
static int k_MaxUnpool(const af_kernel_args_t *a)
{
    kr_shape_t sx, si, sy, sd;
    int64_t k[3], st[3], pads[6];
    if (kr_in_shape(a, 0, &sx) || kr_in_shape(a, 1, &si) || kr_out_shape(a, 0, &sy) ||
        kr_numel(&sx) != kr_numel(&si) || sx.rank < 3 || sy.rank != sx.rank || kr_in_ok(a, 0) ||
        kr_in_ok(a, 1) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int32_t nd = sx.rank - 2;
    int nk = kr_attr_ints(a->graph, a->node, "kernel_shape", k, 3);
    int ns = kr_attr_ints(a->graph, a->node, "strides", st, 3);
    int np = kr_attr_ints(a->graph, a->node, "pads", pads, 6);
    if (nk != nd || (ns >= 0 && ns != nd) || (np >= 0 && np != 2 * nd))
        return AF_ESHAPE;
    sd = sx;
    for (int32_t i = 0; i < nd; i++)
        sd.d[2 + i] =
            (sx.d[2 + i] - 1) * (ns > 0 ? st[i] : 1) - (np > 0 ? pads[i] + pads[i + nd] : 0) + k[i];
    size_t es = af_dtype_size(kr_dtype(a->graph, a->info->outputs[0]));
    int64_t n = kr_numel(&sx), nt = kr_numel(&sd), ny = kr_numel(&sy);
    memset(a->outputs[0], 0, (size_t)ny * es);
    for (int64_t i = 0; i < n; i++) {
        int64_t at = ((const int64_t *)a->inputs[1])[i], off = 0, stride = 1;
        if (at < 0 || at >= nt)
            return AF_EINVAL;
        for (int32_t d = sd.rank - 1; d >= 0; d--) { /* same multi-index, output strides */
            int64_t ix = at % sd.d[d];
            at /= sd.d[d];
            if (ix >= sy.d[d])
                return AF_EINVAL;
            off += ix * stride;
            stride *= sy.d[d];
        }
        memcpy((uint8_t *)a->outputs[0] + (size_t)off * es,
               (const uint8_t *)a->inputs[0] + (size_t)i * es, es);
    }
    return 0;
}

static int c_MaxUnpool(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    return rc ? rc : kr_check_in(g, node, 1, KR_DT(I64), err);
}

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }

const af__kernel_entry_t af__kref_conv[] = {
    ROW(Conv),          ROW(ConvTranspose),     ROW(MaxPool),      ROW(AveragePool), ROW(LpPool),
    ROW(GlobalMaxPool), ROW(GlobalAveragePool), ROW(GlobalLpPool), ROW(MaxUnpool),   {.op = NULL},
};
