/*
 * Reference kernels — signal processing (opset 17): DFT (real or complex input, inverse,
 * onesided, dft_length), STFT (frame_step, window, frame_length, onesided), HannWindow,
 * HammingWindow, BlackmanWindow (periodic or symmetric); TfIdfVectorizer on integer tokens; and
 * the training optimisers of the ai.onnx.preview.training domain: Adagrad, Adam, Momentum
 * (standard and Nesterov).
 *
 * Transforms are direct O(n^2) sums in double (a reference, not an FFT). Complex values are
 * the trailing [.., 2] dim of ONNX. Window sizes come from the size input and must match the
 * output shape. Pure functions.
 */
#include "executor/kernels_ref.h"

#define TWO_PI 6.283185307179586

/* ---- DFT, STFT ---------------------------------------------------------------------------- */

/* One transform along a strided line: in (real when cin == 1, complex when 2) of n_in points
 * zero-padded or cut to len, out of n_out complex points. */
static void dft_line(af_dtype_t dt, const void *in, int64_t ibase, int64_t istride, int cin,
                     int64_t n_in, void *out, int64_t obase, int64_t ostride, int64_t n_out,
                     int64_t len, int inverse, const void *win, af_dtype_t dw)
{
    double sign = inverse ? 1 : -1;
    for (int64_t k = 0; k < n_out; k++) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < len && j < n_in; j++) {
            double xr = af__elem_load(dt, in, ibase + j * istride * cin);
            double xi = cin == 2 ? af__elem_load(dt, in, ibase + j * istride * cin + 1) : 0;
            double w = win ? af__elem_load(dw, win, j) : 1;
            double ang = sign * TWO_PI * (double)(j * k % len) / (double)len;
            re += w * (xr * cos(ang) - xi * sin(ang));
            im += w * (xr * sin(ang) + xi * cos(ang));
        }
        if (inverse)
            re /= (double)len, im /= (double)len;
        af__elem_store(dt, out, obase + k * ostride * 2, re);
        af__elem_store(dt, out, obase + k * ostride * 2 + 1, im);
    }
}

static int k_DFT(const af_kernel_args_t *a)
{
    kr_shape_t sx, sy;
    int64_t len = 0;
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &sy) || sx.rank < 2 || sy.rank != sx.rank ||
        kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int cin = (int)sx.d[sx.rank - 1];
    int32_t ax = kr_axis(kr_attr_i(a->graph, a->node, "axis", 1), sx.rank - 1);
    int inverse = (int)kr_attr_i(a->graph, a->node, "inverse", 0);
    int onesided = (int)kr_attr_i(a->graph, a->node, "onesided", 0);
    if (ax < 0 || (cin != 1 && cin != 2) || sy.d[sy.rank - 1] != 2)
        return AF_ESHAPE;
    int32_t nl = kr_in_ints(a, 1, &len, 1);
    len = nl == 1 ? len : sx.d[ax];
    int64_t n_out = onesided ? len / 2 + 1 : len;
    if (len < 1 || sy.d[ax] != n_out)
        return AF_ESHAPE;
    int64_t outer = 1, inner = 1;
    for (int32_t i = 0; i < ax; i++)
        outer *= sx.d[i];
    for (int32_t i = ax + 1; i < sx.rank - 1; i++)
        inner *= sx.d[i];
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++)
            dft_line(dt, a->inputs[0], (o * sx.d[ax] * inner + in) * cin, inner, cin, sx.d[ax],
                     a->outputs[0], (o * n_out * inner + in) * 2, inner, n_out, len, inverse, NULL,
                     dt);
    return 0;
}

static int k_STFT(const af_kernel_args_t *a)
{
    kr_shape_t sx, sy;
    int64_t step = 0, flen = 0;
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &sy) || sx.rank != 3 || sy.rank != 4 ||
        kr_in_ok(a, 0) || kr_out_ok(a, 0) || kr_in_ints(a, 1, &step, 1) != 1 || step < 1)
        return AF_ESHAPE;
    uint64_t wb;
    int32_t tw;
    const void *win = kr_in(a, 2, &wb, &tw);
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    af_dtype_t dw = win ? kr_dtype(a->graph, tw) : dt;
    if (kr_in_ints(a, 3, &flen, 1) != 1)
        flen = win ? (int64_t)(wb / af_dtype_size(dw)) : 0;
    int onesided = (int)kr_attr_i(a->graph, a->node, "onesided", 1);
    int cin = (int)sx.d[2];
    int64_t frames = flen > 0 && sx.d[1] >= flen ? (sx.d[1] - flen) / step + 1 : 0;
    int64_t bins = onesided ? flen / 2 + 1 : flen;
    if (flen < 1 || (cin != 1 && cin != 2) || sy.d[0] != sx.d[0] || sy.d[1] != frames ||
        sy.d[2] != bins || sy.d[3] != 2 || (win && wb < (uint64_t)flen * af_dtype_size(dw)))
        return AF_ESHAPE;
    for (int64_t b = 0; b < sx.d[0]; b++)
        for (int64_t f = 0; f < frames; f++)
            dft_line(dt, a->inputs[0], (b * sx.d[1] + f * step) * cin, 1, cin, flen, a->outputs[0],
                     ((b * frames + f) * bins) * 2, 1, bins, flen, 0, win, dw);
    return 0;
}

static int c_dft(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    return rc ? rc : kr_check_in(g, node, 1, KR_DT(I32) | KR_DT(I64), err);
}

/* ---- windows ------------------------------------------------------------------------------ */

enum { W_HANN, W_HAMMING, W_BLACKMAN };

static int window(const af_kernel_args_t *a, int kind)
{
    kr_shape_t sy;
    int64_t n = 0;
    if (kr_out_shape(a, 0, &sy) || sy.rank != 1 || kr_out_ok(a, 0) ||
        kr_in_ints(a, 0, &n, 1) != 1 || n != sy.d[0])
        return AF_ESHAPE;
    int periodic = (int)kr_attr_i(a->graph, a->node, "periodic", 1);
    double den = periodic ? (double)n : (double)(n - 1);
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    for (int64_t i = 0; i < n; i++) {
        double x = den > 0 ? TWO_PI * (double)i / den : 0, v;
        if (kind == W_HANN)
            v = 0.5 - 0.5 * cos(x);
        else if (kind == W_HAMMING)
            v = 25.0 / 46.0 - (21.0 / 46.0) * cos(x);
        else
            v = 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
        af__elem_store(dt, a->outputs[0], i, v);
    }
    return 0;
}

static int c_window(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_DT(I32) | KR_DT(I64), err);
    return rc ? rc : kr_check_out(g, node, 0, KR_NUMERIC, err);
}

static int k_HannWindow(const af_kernel_args_t *a)
{
    return window(a, W_HANN);
}
static int k_HammingWindow(const af_kernel_args_t *a)
{
    return window(a, W_HAMMING);
}
static int k_BlackmanWindow(const af_kernel_args_t *a)
{
    return window(a, W_BLACKMAN);
}

/* ---- optimisers (ai.onnx.preview.training) ------------------------------------------------ */

enum { O_ADAGRAD, O_ADAM, O_MOMENTUM };

/*
 * Inputs R (learning rate), T (update count), then k tensors each of X, G and (Momentum: V;
 * Adagrad: H; Adam: V, H); outputs the new X then the new state tensors in the same order.
 */
static int optimise(const af_kernel_args_t *a, int kind)
{
    const af_graph_t *g = a->graph;
    int per = kind == O_ADAM ? 4 : 3, k = (a->n_inputs - 2) / per;
    if (a->n_inputs != 2 + k * per || a->n_outputs != k * (per - 1) || k < 1)
        return AF_ESHAPE;
    int64_t t = 0;
    if (kr_in_ints(a, 1, &t, 1) != 1 || a->input_bytes[0] < 4)
        return AF_ESHAPE;
    double r = af__elem_load(kr_dtype(g, a->info->inputs[0]), a->inputs[0], 0);
    double norm = kr_attr_f(g, a->node, "norm_coefficient", 0);
    double alpha = kr_attr_f(g, a->node, "alpha", 0.9), beta = kr_attr_f(g, a->node, "beta", 0.999);
    double eps = kr_attr_f(g, a->node, "epsilon", 0);
    double decay = kr_attr_f(g, a->node, "decay_factor", 0);
    double post = kr_attr_f(g, a->node, "norm_coefficient_post", 0);
    int nesterov = !strcmp(kr_attr_s(g, a->node, "mode", "standard"), "nesterov");
    if (kind == O_MOMENTUM)
        beta = kr_attr_f(g, a->node, "beta", 0);
    for (int i = 0; i < k; i++) {
        int32_t ix = 2 + i, ig = 2 + k + i, is = 2 + 2 * k + i;
        if (kr_in_ok(a, ix) || kr_in_ok(a, ig) || kr_in_ok(a, is) || kr_out_ok(a, i) ||
            kr_out_ok(a, k + i) || a->input_bytes[ix] != a->input_bytes[ig] ||
            (kind == O_ADAM && (kr_in_ok(a, is + k) || kr_out_ok(a, 2 * k + i))))
            return AF_ESHAPE;
        af_dtype_t dt = kr_dtype(g, a->info->inputs[ix]);
        int64_t n = (int64_t)(a->input_bytes[ix] / af_dtype_size(dt));
        for (int64_t e = 0; e < n; e++) {
            double x = af__elem_load(dt, a->inputs[ix], e);
            double gr = norm * x + af__elem_load(dt, a->inputs[ig], e);
            double s = af__elem_load(dt, a->inputs[is], e), xn;
            if (kind == O_ADAGRAD) {
                double h = s + gr * gr;
                xn = x - r / (1 + (double)t * decay) * gr / (sqrt(h) + eps);
                af__elem_store(dt, a->outputs[k + i], e, h);
            } else if (kind == O_MOMENTUM) {
                double v = alpha * s + (t > 0 ? beta : 1) * gr;
                xn = nesterov ? x - r * (gr + alpha * v) : x - r * v;
                af__elem_store(dt, a->outputs[k + i], e, v);
            } else {
                double h = af__elem_load(dt, a->inputs[is + k], e);
                double v = alpha * s + (1 - alpha) * gr;
                h = beta * h + (1 - beta) * gr * gr;
                double ra =
                    t > 0 ? r * sqrt(1 - pow(beta, (double)t)) / (1 - pow(alpha, (double)t)) : r;
                xn = (1 - post) * (x - ra * v / (sqrt(h) + eps));
                af__elem_store(dt, a->outputs[k + i], e, v);
                af__elem_store(dt, a->outputs[2 * k + i], e, h);
            }
            af__elem_store(dt, a->outputs[i], e, xn);
        }
    }
    return 0;
}

static int c_optimiser(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    int rc = kr_check_in(g, node, 0, KR_FLOATS, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_DT(I64), err);
    for (int32_t i = 2; !rc && i < ni->n_inputs; i++)
        rc = kr_check_in(g, node, i, KR_FLOATS, err);
    return rc;
}

static int k_Adagrad(const af_kernel_args_t *a)
{
    return optimise(a, O_ADAGRAD);
}
static int k_Adam(const af_kernel_args_t *a)
{
    return optimise(a, O_ADAM);
}
static int k_Momentum(const af_kernel_args_t *a)
{
    return optimise(a, O_MOMENTUM);
}

/* ---- TfIdfVectorizer (integer tokens) ---------------------------------------------------- */

#define TFIDF_POOL 2048 /* ints of the pool attributes read onto the stack (2 x 16 KiB) */

/*
 * Counts the pool's n-grams (min_gram_length..max_gram_length, items up to max_skip_count
 * apart; unigrams once per position) in each row of X, as ONNX Runtime does, and writes TF
 * counts, IDF weights or TFIDF products at ngram_indexes. The pool: n-grams of length n start
 * at offset ngram_counts[n - 1] of pool_int64s.
 */
static int k_TfIdfVectorizer(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sx, sy;
    int64_t pool[TFIDF_POOL], counts[64], idx[TFIDF_POOL];
    int32_t np = kr_attr_ints(g, a->node, "pool_int64s", pool, TFIDF_POOL);
    int32_t nc = kr_attr_ints(g, a->node, "ngram_counts", counts, 64);
    int32_t ni = kr_attr_ints(g, a->node, "ngram_indexes", idx, TFIDF_POOL);
    int64_t mn = kr_attr_i(g, a->node, "min_gram_length", 1),
            mx = kr_attr_i(g, a->node, "max_gram_length", 1);
    int64_t skip = kr_attr_i(g, a->node, "max_skip_count", 0);
    const char *mode = kr_attr_s(g, a->node, "mode", "TF");
    const af_attr_t *wt = af_graph_node_attr(g, a->node, "weights");
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &sy) || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        np < 0 || np > TFIDF_POOL || nc < mx || nc > 64 || ni < 0 || ni > TFIDF_POOL ||
        sx.rank < 1 || sx.rank > 2 || sy.rank != sx.rank || mn < 1 || mx < mn)
        return AF_ESHAPE;
    int64_t rows = sx.rank == 2 ? sx.d[0] : 1, len = sx.d[sx.rank - 1], c = sy.d[sy.rank - 1];
    af_dtype_t dx = kr_dtype(g, a->info->inputs[0]), dy = kr_dtype(g, a->info->outputs[0]);
    for (int64_t i = 0; i < rows * c; i++)
        af__elem_store(dy, a->outputs[0], i, 0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t n = mn; n <= mx; n++) {
            int64_t off = counts[n - 1], end = n < nc ? counts[n] : np, base = 0;
            for (int64_t m = 1; m < n; m++) /* pool n-grams shorter than n come first */
                base += ((m < nc ? counts[m] : np) - counts[m - 1]) / m;
            for (int64_t sk = 0; sk <= (n == 1 ? 0 : skip); sk++)
                for (int64_t st = 0; st + (n - 1) * (sk + 1) < len; st++)
                    for (int64_t j = off, q = base; j + n <= end; j += n, q++) {
                        int match = q < ni && idx[q] >= 0 && idx[q] < c;
                        for (int64_t k = 0; k < n && match; k++)
                            match = af__elem_load_i(dx, a->inputs[0],
                                                    r * len + st + k * (sk + 1)) == pool[j + k];
                        if (!match)
                            continue;
                        int64_t at = r * c + idx[q];
                        af__elem_store(dy, a->outputs[0], at,
                                       af__elem_load(dy, a->outputs[0], at) + 1);
                    }
        }
    int idf = !strcmp(mode, "IDF"), tfidf = !strcmp(mode, "TFIDF");
    for (int64_t i = 0; (idf || tfidf) && i < rows * c; i++) {
        double v = af__elem_load(dy, a->outputs[0], i), w = 1;
        for (int32_t k = 0; wt && wt->type == AF_ATTR_FLOATS && k < ni && k < wt->n; k++)
            if (idx[k] == i % c)
                w = wt->floats[k];
        af__elem_store(dy, a->outputs[0], i, idf ? (v > 0 ? w : 0) : v * w);
    }
    return 0;
}

static int c_TfIdfVectorizer(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_DT(I32) | KR_DT(I64), err);
    if (!rc)
        rc = kr_check_out(g, node, 0, KR_DT(F32), err);
    int64_t tmp;
    if (!rc && kr_attr_ints(g, node, "pool_int64s", &tmp, 1) < 0)
        return kr_unsup(err, "a string pool (pool_strings)");
    if (!rc && kr_attr_ints(g, node, "pool_int64s", &tmp, 1) > TFIDF_POOL)
        return kr_unsup(err, "a pool above %d tokens", TFIDF_POOL);
    return rc;
}

const af__kernel_entry_t af__kref_signal[] = {
    {.op = "DFT", .fn = k_DFT, .check = c_dft},
    {.op = "STFT", .fn = k_STFT, .check = c_dft},
    {.op = "HannWindow", .fn = k_HannWindow, .check = c_window},
    {.op = "HammingWindow", .fn = k_HammingWindow, .check = c_window},
    {.op = "BlackmanWindow", .fn = k_BlackmanWindow, .check = c_window},
    {.op = "Adagrad", .fn = k_Adagrad, .check = c_optimiser},
    {.op = "Adam", .fn = k_Adam, .check = c_optimiser},
    {.op = "Momentum", .fn = k_Momentum, .check = c_optimiser},
    {.op = "TfIdfVectorizer", .fn = k_TfIdfVectorizer, .check = c_TfIdfVectorizer},
    {.op = NULL},
};
