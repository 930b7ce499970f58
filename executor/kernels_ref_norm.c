/*
 * Reference kernels — normalisation and losses: Softmax, LogSoftmax, Hardmax (one axis from
 * opset 13; before it — attribute "arenaflow.opset" from the importer — the input is flattened
 * to 2-D at `axis`, default 1), BatchNormalization (inference, and training mode with running
 * statistics), LayerNormalization (with Mean and InvStdDev outputs), InstanceNormalization,
 * LRN, MeanVarianceNormalization, SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss.
 *
 * Statistics accumulate in double. An f32 BatchNormalization computes (float)(x * s) + t with
 * s and t of af__bn_affine (two f32 roundings: what a Conv with it folded computes, fuse.c).
 * Graphs built for planning (the model zoo) pack BatchNormalization's scale/bias/mean/var into
 * one [4, C] input and LayerNormalization's scale/bias into one [2, C] input; both forms are
 * read. Pure functions, no temporaries.
 */
#include "executor/kernels_ref.h"

/* ---- Softmax family ----------------------------------------------------------------------- */

enum { SM_SOFT, SM_LOG, SM_HARD };

/* outer x dim x inner split of a softmax-like node (see the file comment for old opsets). */
static int sm_split(const af_graph_t *g, int32_t node, const kr_shape_t *s, int64_t *outer,
                    int64_t *dim, int64_t *inner)
{
    int64_t opset = kr_attr_i(g, node, "arenaflow.opset", 13);
    if (opset >= 13)
        return kr_split_axis(s, kr_attr_i(g, node, "axis", -1), outer, dim, inner);
    int32_t ax = kr_axis(kr_attr_i(g, node, "axis", 1), s->rank);
    if (ax < 0)
        return AF_ESHAPE;
    *outer = *dim = 1;
    for (int32_t i = 0; i < s->rank; i++)
        *(i < ax ? outer : dim) *= s->d[i];
    *inner = 1;
    return 0;
}

static int softmax(const af_kernel_args_t *a, int kind)
{
    kr_shape_t sx;
    int64_t outer, dim, inner;
    if (kr_in_shape(a, 0, &sx) || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        sm_split(a->graph, a->node, &sx, &outer, &dim, &inner))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    const void *x = a->inputs[0];
    void *y = a->outputs[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * dim * inner + in, arg = 0;
            double mx = -INFINITY, sum = 0;
            for (int64_t i = 0; i < dim; i++) {
                double v = af__elem_load(dt, x, base + i * inner);
                if (v > mx || i == 0)
                    mx = v, arg = i;
            }
            for (int64_t i = 0; i < dim && kind != SM_HARD; i++)
                sum += exp(af__elem_load(dt, x, base + i * inner) - mx);
            for (int64_t i = 0; i < dim; i++) {
                double v = af__elem_load(dt, x, base + i * inner) - mx, r;
                r = kind == SM_SOFT ? exp(v) / sum : kind == SM_LOG ? v - log(sum) : i == arg;
                af__elem_store(dt, y, base + i * inner, r);
            }
        }
    return 0;
}

static int c_softmax(const af_graph_t *g, int32_t node, af_error_t *err)
{
    kr_shape_t s;
    int64_t o, d, i;
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    if (!rc && (kr_shape_of(g, kr_in_tensor(g, node, 0), &s) || sm_split(g, node, &s, &o, &d, &i)))
        return kr_unsup(err, "axis out of range");
    return rc;
}

static int k_Softmax(const af_kernel_args_t *a)
{
    return softmax(a, SM_SOFT);
}
static int k_LogSoftmax(const af_kernel_args_t *a)
{
    return softmax(a, SM_LOG);
}
static int k_Hardmax(const af_kernel_args_t *a)
{
    return softmax(a, SM_HARD);
}

/* ---- BatchNormalization ------------------------------------------------------------------- */

/* Per-channel parameters: four inputs, or one packed [4, C] tensor (zoo graphs). */
static int bn_params(const af_kernel_args_t *a, int64_t c, const void *prm[4], int64_t off[4])
{
    int packed = a->n_inputs == 2;
    if (!packed && a->n_inputs != 5)
        return AF_ESHAPE;
    for (int32_t i = 0; i < 4; i++) {
        int32_t in = packed ? 1 : i + 1;
        uint64_t need = (uint64_t)c * af_dtype_size(kr_dtype(a->graph, a->info->inputs[in])) *
                        (packed ? (uint64_t)i + 1 : 1);
        if (a->input_bytes[in] < need)
            return AF_ESHAPE;
        prm[i] = a->inputs[in];
        off[i] = packed ? i * c : 0;
    }
    return 0;
}

static int k_BatchNormalization(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sx;
    const void *prm[4];
    int64_t po[4];
    if (kr_in_shape(a, 0, &sx) || sx.rank < 2 || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t n = sx.d[0], c = sx.d[1], inner = n * c > 0 ? kr_numel(&sx) / (n * c) : 0;
    if (bn_params(a, c, prm, po))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]);
    af_dtype_t dp = kr_dtype(g, a->info->inputs[1]),
               ds = kr_dtype(g, a->info->inputs[a->n_inputs - 1]);
    double eps = kr_attr_f(g, a->node, "epsilon", 1e-5);
    double mom = kr_attr_f(g, a->node, "momentum", 0.9);
    int train = (int)kr_attr_i(g, a->node, "training_mode", 0);
    void *rm = kr_out(a, 1, NULL, NULL), *rv = kr_out(a, 2, NULL, NULL);
    if (train && (kr_out_ok(a, 1) || kr_out_ok(a, 2) || !rm || !rv))
        return AF_ESHAPE;
    for (int64_t ch = 0; ch < c; ch++) {
        double sc = af__elem_load(dp, prm[0], po[0] + ch),
               b = af__elem_load(dp, prm[1], po[1] + ch);
        double m = af__elem_load(ds, prm[2], po[2] + ch), v = af__elem_load(ds, prm[3], po[3] + ch);
        if (train) { /* batch statistics (population variance), running ones updated */
            double s = 0, s2 = 0, cnt = (double)(n * inner);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < inner; j++)
                    s += af__elem_load(dt, a->inputs[0], (i * c + ch) * inner + j);
            double bm = cnt ? s / cnt : 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < inner; j++) {
                    double d = af__elem_load(dt, a->inputs[0], (i * c + ch) * inner + j) - bm;
                    s2 += d * d;
                }
            double bv = cnt ? s2 / cnt : 0;
            af__elem_store(ds, rm, ch, m * mom + bm * (1 - mom));
            af__elem_store(ds, rv, ch, v * mom + bv * (1 - mom));
            m = bm;
            v = bv;
        }
        double k = sc / sqrt(v + eps), o = b - m * k;
        float fs, ft; /* f32: the affine a Conv with this BatchNormalization folded computes */
        af__bn_affine(sc, b, m, v, eps, &fs, &ft);
        for (int64_t i = 0; i < n; i++) {
            int64_t base = (i * c + ch) * inner;
            if (dt == AF_DTYPE_F32) {
                const float *xp = (const float *)a->inputs[0] + base;
                float *yp = (float *)a->outputs[0] + base;
                for (int64_t j = 0; j < inner; j++) {
                    float p = xp[j] * fs;
                    yp[j] = p + ft;
                }
                continue;
            }
            for (int64_t j = 0; j < inner; j++)
                af__elem_store(dt, a->outputs[0], base + j,
                               af__elem_load(dt, a->inputs[0], base + j) * k + o);
        }
    }
    return 0;
}

static int c_BatchNormalization(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    for (int32_t i = 1; !rc && i < ni->n_inputs; i++)
        rc = kr_check_in(g, node, i, KR_FLOATS, err);
    if (!rc && ni->n_inputs != 5 && ni->n_inputs != 2)
        return kr_unsup(err, "%d inputs", (int)ni->n_inputs);
    if (!rc && kr_attr_i(g, node, "training_mode", 0) && ni->n_outputs != 3)
        return kr_unsup(err, "training mode without both running statistics outputs");
    return rc;
}

/* ---- LayerNormalization, InstanceNormalization, MVN ---------------------------------------- */

/* Mean and population variance of n contiguous elements from base (two passes, in double). */
static void moments(af_dtype_t dt, const void *x, int64_t base, int64_t n, double *mean,
                    double *var)
{
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; i++)
        m += af__elem_load(dt, x, base + i);
    m /= (double)(n ? n : 1);
    for (int64_t i = 0; i < n; i++) {
        double d = af__elem_load(dt, x, base + i) - m;
        v += d * d;
    }
    *mean = m;
    *var = v / (double)(n ? n : 1);
}

/* Offset of element j of the normalised block [dims from axis] in a parameter of shape p
 * (unidirectional broadcast against the block shape blk). */
static int64_t bcast_idx(const kr_shape_t *p, const kr_shape_t *blk, int64_t j)
{
    int64_t off = 0, stride = 1;
    for (int32_t i = blk->rank - 1, k = p->rank - 1; i >= 0; i--, k--) {
        int64_t ix = j % blk->d[i];
        j /= blk->d[i];
        if (k < 0)
            continue;
        if (p->d[k] != 1)
            off += ix * stride;
        stride *= p->d[k];
    }
    return off;
}

static int k_LayerNormalization(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sx, ss, sb, blk;
    if (kr_in_shape(a, 0, &sx) || sx.rank < 1 || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        kr_in_shape(a, 1, &ss) || kr_in_ok(a, 1))
        return AF_ESHAPE;
    int32_t ax = kr_axis(kr_attr_i(g, a->node, "axis", -1), sx.rank);
    if (ax < 0)
        return AF_ESHAPE;
    int64_t outer = 1, dim = 1;
    blk.rank = sx.rank - ax;
    for (int32_t i = 0; i < sx.rank; i++) {
        *(i < ax ? &outer : &dim) *= sx.d[i];
        if (i >= ax)
            blk.d[i - ax] = sx.d[i];
    }
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]), dp = kr_dtype(g, a->info->inputs[1]);
    const void *sc = a->inputs[1], *b = kr_in(a, 2, NULL, NULL);
    int64_t boff = 0;
    if (!b && a->n_inputs == 2 && kr_numel(&ss) == 2 * dim) { /* packed [2, C] (zoo) */
        b = sc;
        boff = dim;
        ss = (kr_shape_t){.rank = 1, .d = {dim}};
    }
    sb = ss;
    if (b && boff == 0 && (kr_in_shape(a, 2, &sb) || kr_in_ok(a, 2)))
        return AF_ESHAPE;
    double eps = kr_attr_f(g, a->node, "epsilon", 1e-5);
    void *mo = kr_out(a, 1, NULL, NULL), *io = kr_out(a, 2, NULL, NULL);
    af_dtype_t dm = mo ? kr_dtype(g, kr_out_tensor(g, a->node, 1)) : dt;
    af_dtype_t di = io ? kr_dtype(g, kr_out_tensor(g, a->node, 2)) : dt;
    if ((mo && kr_out_ok(a, 1)) || (io && kr_out_ok(a, 2)))
        return AF_ESHAPE;
    for (int64_t o = 0; o < outer; o++) {
        double mean, var;
        moments(dt, a->inputs[0], o * dim, dim, &mean, &var);
        double inv = 1.0 / sqrt(var + eps);
        for (int64_t i = 0; i < dim; i++) {
            double v = (af__elem_load(dt, a->inputs[0], o * dim + i) - mean) * inv *
                       af__elem_load(dp, sc, bcast_idx(&ss, &blk, i));
            if (b)
                v += af__elem_load(dp, b, boff + bcast_idx(&sb, &blk, i));
            af__elem_store(dt, a->outputs[0], o * dim + i, v);
        }
        if (mo)
            af__elem_store(dm, mo, o, mean);
        if (io)
            af__elem_store(di, io, o, inv);
    }
    return 0;
}

static int c_LayerNormalization(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    for (int32_t i = 1; !rc && i < 3; i++)
        rc = kr_check_in(g, node, i, KR_FLOATS, err);
    for (int32_t i = 1; !rc && i < 3; i++)
        rc = kr_check_out(g, node, i, KR_FLOATS, err);
    return rc;
}

static int k_InstanceNormalization(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    if (kr_in_shape(a, 0, &sx) || sx.rank < 3 || a->n_inputs != 3 || kr_in_ok(a, 0) ||
        kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    int64_t n = sx.d[0], c = sx.d[1], inner = n * c > 0 ? kr_numel(&sx) / (n * c) : 0;
    size_t es = af_dtype_size(dt);
    if (a->input_bytes[1] < (uint64_t)c * es || a->input_bytes[2] < (uint64_t)c * es)
        return AF_ESHAPE;
    double eps = kr_attr_f(a->graph, a->node, "epsilon", 1e-5);
    for (int64_t i = 0; i < n * c; i++) {
        double mean, var;
        moments(dt, a->inputs[0], i * inner, inner, &mean, &var);
        double k = af__elem_load(dt, a->inputs[1], i % c) / sqrt(var + eps);
        double b = af__elem_load(dt, a->inputs[2], i % c);
        for (int64_t j = 0; j < inner; j++)
            af__elem_store(dt, a->outputs[0], i * inner + j,
                           (af__elem_load(dt, a->inputs[0], i * inner + j) - mean) * k + b);
    }
    return 0;
}

static int c_InstanceNormalization(const af_graph_t *g, int32_t node, af_error_t *err)
{
    return kr_check_same(g, node, 3, KR_FLOATS, err);
}

static int k_MeanVarianceNormalization(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    if (kr_in_shape(a, 0, &sx) || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t axes[AF_MAX_RANK] = {0, 2, 3};
    int32_t na = kr_attr_ints(a->graph, a->node, "axes", axes, AF_MAX_RANK);
    int red[AF_MAX_RANK] = {0};
    for (int32_t i = 0; i < (na < 0 ? 3 : na); i++) {
        int32_t d = kr_axis(axes[i], sx.rank);
        if (d < 0)
            return AF_ESHAPE;
        red[d] = 1;
    }
    kr_red_t r;
    kr_red_init(&r, &sx, red);
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    int64_t nk = kr_numel(&r.keep), nr = kr_numel(&r.red);
    for (int64_t k = 0; k < nk; k++) {
        int64_t base = kr_red_keep(&r, k);
        double mean = 0, var = 0;
        for (int64_t j = 0; j < nr; j++)
            mean += af__elem_load(dt, a->inputs[0], base + kr_red_off(&r, j));
        mean /= (double)(nr ? nr : 1);
        for (int64_t j = 0; j < nr; j++) {
            double d = af__elem_load(dt, a->inputs[0], base + kr_red_off(&r, j)) - mean;
            var += d * d;
        }
        double sd = sqrt(var / (double)(nr ? nr : 1)) + 1e-9;
        for (int64_t j = 0; j < nr; j++) {
            int64_t at = base + kr_red_off(&r, j);
            af__elem_store(dt, a->outputs[0], at,
                           (af__elem_load(dt, a->inputs[0], at) - mean) / sd);
        }
    }
    return 0;
}

static int c_MeanVarianceNormalization(const af_graph_t *g, int32_t node, af_error_t *err)
{
    return kr_check_same(g, node, 1, KR_FLOATS, err);
}

/* LRN across channels: y = x / (bias + alpha / size * sum of squares in the window)^beta. */
static int k_LRN(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sx;
    if (kr_in_shape(a, 0, &sx) || sx.rank < 3 || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t size = kr_attr_i(g, a->node, "size", 1);
    double alpha = kr_attr_f(g, a->node, "alpha", 1e-4), beta = kr_attr_f(g, a->node, "beta", 0.75);
    double bias = kr_attr_f(g, a->node, "bias", 1.0);
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]);
    int64_t n = sx.d[0], c = sx.d[1], inner = n * c > 0 ? kr_numel(&sx) / (n * c) : 0;
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t j = 0; j < inner; j++) {
                double sq = 0;
                for (int64_t k = ch - lo; k <= ch + hi; k++)
                    if (k >= 0 && k < c) {
                        double v = af__elem_load(dt, a->inputs[0], (i * c + k) * inner + j);
                        sq += v * v;
                    }
                int64_t at = (i * c + ch) * inner + j;
                af__elem_store(dt, a->outputs[0], at,
                               af__elem_load(dt, a->inputs[0], at) /
                                   pow(bias + alpha / (double)size * sq, beta));
            }
    return 0;
}

static int c_LRN(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    if (!rc && kr_attr_i(g, node, "size", 0) < 1)
        return kr_unsup(err, "size below 1");
    return rc;
}

/* ---- losses ------------------------------------------------------------------------------- */

/*
 * Shared by SoftmaxCrossEntropyLoss (scores, softmax taken here) and NegativeLogLikelihoodLoss
 * (log-probabilities given): input [N, C, d...], labels [N, d...], optional weights [C];
 * reduction none / sum / mean (mean divides by the summed weights of counted labels).
 */
static int loss(const af_kernel_args_t *a, int softmax_first)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sx;
    if (kr_in_shape(a, 0, &sx) || sx.rank < 2 || kr_in_ok(a, 0) || kr_in_ok(a, 1) ||
        kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t n = sx.d[0], c = sx.d[1], inner = n * c > 0 ? kr_numel(&sx) / (n * c) : 0;
    af_dtype_t dt = kr_dtype(g, a->info->inputs[0]), dl = kr_dtype(g, a->info->inputs[1]);
    af_dtype_t dy = kr_dtype(g, a->info->outputs[0]);
    uint64_t wb, lpb;
    const void *w = kr_in(a, 2, &wb, NULL);
    void *lp = kr_out(a, 1, &lpb, NULL);
    if ((w && wb < (uint64_t)c * af_dtype_size(dt)) ||
        (lp && lpb < (uint64_t)(n * c * inner) * af_dtype_size(dt)))
        return AF_ESHAPE;
    const char *red = kr_attr_s(g, a->node, "reduction", "mean");
    int none = !strcmp(red, "none"), mean = !strcmp(red, "mean");
    const af_attr_t *ig = af_graph_node_attr(g, a->node, "ignore_index");
    int64_t ignore = ig && ig->type == AF_ATTR_INT ? ig->i : INT64_MIN;
    if (none && a->output_bytes[0] < (uint64_t)(n * inner) * af_dtype_size(dy))
        return AF_ESHAPE;
    double total = 0, wsum = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = i * c * inner + j,
                    lab = af__elem_load_i(dl, a->inputs[1], i * inner + j);
            double mx = -INFINITY, lse = 0;
            if (softmax_first) {
                for (int64_t k = 0; k < c; k++)
                    mx = fmax(mx, af__elem_load(dt, a->inputs[0], base + k * inner));
                for (int64_t k = 0; k < c; k++)
                    lse += exp(af__elem_load(dt, a->inputs[0], base + k * inner) - mx);
                lse = log(lse) + mx;
                for (int64_t k = 0; lp && k < c; k++)
                    af__elem_store(dt, lp, base + k * inner,
                                   af__elem_load(dt, a->inputs[0], base + k * inner) - lse);
            }
            double v = 0;
            if (lab != ignore) {
                if (lab < 0 || lab >= c)
                    return AF_EINVAL; /* a label outside [0, C) */
                double wt = w ? af__elem_load(dt, w, lab) : 1.0;
                v = -(af__elem_load(dt, a->inputs[0], base + lab * inner) - lse) * wt;
                wsum += wt;
            }
            if (none)
                af__elem_store(dy, a->outputs[0], i * inner + j, v);
            total += v;
        }
    if (!none)
        af__elem_store(dy, a->outputs[0], 0, mean ? (wsum != 0 ? total / wsum : 0) : total);
    return 0;
}

static int c_loss(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_FLOATS, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_DT(I32) | KR_DT(I64), err);
    if (!rc)
        rc = kr_check_in(g, node, 2, KR_FLOATS, err);
    const char *red = kr_attr_s(g, node, "reduction", "mean");
    if (!rc && strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
        return kr_unsup(err, "reduction '%s'", red);
    return rc;
}

static int k_SoftmaxCrossEntropyLoss(const af_kernel_args_t *a)
{
    return loss(a, 1);
}
static int k_NegativeLogLikelihoodLoss(const af_kernel_args_t *a)
{
    return loss(a, 0);
}

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }

const af__kernel_entry_t af__kref_norm[] = {
    {.op = "Softmax", .fn = k_Softmax, .check = c_softmax},
    {.op = "LogSoftmax", .fn = k_LogSoftmax, .check = c_softmax},
    {.op = "Hardmax", .fn = k_Hardmax, .check = c_softmax},
    ROW(BatchNormalization),
    ROW(LayerNormalization),
    ROW(InstanceNormalization),
    ROW(MeanVarianceNormalization),
    ROW(LRN),
    {.op = "SoftmaxCrossEntropyLoss", .fn = k_SoftmaxCrossEntropyLoss, .check = c_loss},
    {.op = "NegativeLogLikelihoodLoss", .fn = k_NegativeLogLikelihoodLoss, .check = c_loss},
    {.op = NULL},
};
