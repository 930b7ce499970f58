/*
 * The "real" kernel set: straightforward f32 reference kernels so examples compute something
 * real (not tuned: no blocking, no SIMD beyond what the compiler does): elementwise (Relu,
 * Relu6, Clip, Sigmoid, Tanh, Gelu, Add, Sub, Mul, Div), MatMul, Gemm, Conv, pooling,
 * BatchNormalization, LayerNormalization, Softmax, Concat, Split, Transpose, Gather, views.
 *
 * Shapes come from the graph's tensor infos (ONNX semantics, NCHW layout for Conv and pooling);
 * a tensor whose rank is unknown makes the kernel return AF_ESHAPE. Binary elementwise ops use
 * numpy broadcasting. Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) copy their input
 * unless the planner made the output an alias of it, in which case there is nothing to do.
 *
 * Pure functions of their arguments: no state, no locks.
 */
#include "executor/kernels_ref.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef struct shape {
    int32_t rank;
    int64_t d[AF_MAX_RANK];
} shape_t;

static int get_shape(const af_kernel_args_t *a, int32_t t, shape_t *s)
{
    const af_tensor_info_t *ti = af_graph_tensor(a->graph, t);
    if (ti->rank < 0 || ti->rank > AF_MAX_RANK)
        return AF_ESHAPE;
    s->rank = ti->rank;
    for (int32_t i = 0; i < ti->rank; i++) {
        if (ti->shape[i] < 0)
            return AF_ESHAPE;
        s->d[i] = ti->shape[i];
    }
    return 0;
}

static int64_t numel(const shape_t *s)
{
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++)
        n *= s->d[i];
    return n;
}

static int64_t attr_i(const af_kernel_args_t *a, const char *name, int64_t def)
{
    const af_attr_t *at = af_graph_node_attr(a->graph, a->node, name);
    return at && at->type == AF_ATTR_INT ? at->i : def;
}

static double attr_f(const af_kernel_args_t *a, const char *name, double def)
{
    const af_attr_t *at = af_graph_node_attr(a->graph, a->node, name);
    return at && at->type == AF_ATTR_FLOAT ? at->f : def;
}

/* ints attribute element k, or def. */
static int64_t attr_ik(const af_kernel_args_t *a, const char *name, int32_t k, int64_t def)
{
    const af_attr_t *at = af_graph_node_attr(a->graph, a->node, name);
    return at && at->type == AF_ATTR_INTS && k < at->n ? at->ints[k] : def;
}

/* ---- elementwise ------------------------------------------------------------------------ */

typedef float (*unary_fn)(float x);
static float f_relu(float x)
{
    return x > 0 ? x : 0;
}
static float f_sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}
static float f_tanh(float x)
{
    return tanhf(x);
}

static int unary(const af_kernel_args_t *a, unary_fn f)
{
    if (a->n_inputs < 1 || a->n_outputs < 1)
        return AF_EINVAL;
    const float *x = a->inputs[0];
    float *y = a->outputs[0];
    uint64_t n = a->output_bytes[0] / 4;
    if (a->input_bytes[0] / 4 < n)
        return AF_ESHAPE;
    for (uint64_t i = 0; i < n; i++)
        y[i] = f(x[i]);
    return 0;
}

static int k_relu(const af_kernel_args_t *a)
{
    return unary(a, f_relu);
}
static int k_sigmoid(const af_kernel_args_t *a)
{
    return unary(a, f_sigmoid);
}
static int k_tanh(const af_kernel_args_t *a)
{
    return unary(a, f_tanh);
}

/* Views: nothing to do when the output aliases the input, else a copy. */
static int k_view(const af_kernel_args_t *a)
{
    if (a->n_inputs < 1 || a->n_outputs < 1)
        return AF_EINVAL;
    if (a->outputs[0] == a->inputs[0])
        return 0;
    uint64_t n = a->output_bytes[0] < a->input_bytes[0] ? a->output_bytes[0] : a->input_bytes[0];
    memmove(a->outputs[0], a->inputs[0], (size_t)n);
    return 0;
}

typedef float (*binary_fn)(float x, float y);
static float f_add(float x, float y)
{
    return x + y;
}
static float f_sub(float x, float y)
{
    return x - y;
}
static float f_mul(float x, float y)
{
    return x * y;
}
static float f_div(float x, float y)
{
    return x / y;
}

/* Broadcast strides of s against the output shape o (0 where s has a 1 or no dim). */
static void bstrides(const shape_t *s, const shape_t *o, int64_t *st)
{
    int64_t acc = 1;
    for (int32_t i = o->rank - 1, j = s->rank - 1; i >= 0; i--, j--) {
        if (j >= 0 && s->d[j] != 1) {
            st[i] = acc;
            acc *= s->d[j];
        } else {
            st[i] = 0;
            if (j >= 0)
                acc *= s->d[j];
        }
    }
}

static int binary(const af_kernel_args_t *a, binary_fn f)
{
    if (a->n_inputs < 2 || a->n_outputs < 1)
        return AF_EINVAL;
    shape_t sa, sb, so;
    const float *x = a->inputs[0], *y = a->inputs[1];
    float *z = a->outputs[0];
    uint64_t n = a->output_bytes[0] / 4;
    if (a->input_bytes[0] == a->output_bytes[0] && a->input_bytes[1] == a->output_bytes[0]) {
        for (uint64_t i = 0; i < n; i++)
            z[i] = f(x[i], y[i]);
        return 0;
    }
    if (get_shape(a, a->info->inputs[0], &sa) || get_shape(a, a->info->inputs[1], &sb) ||
        get_shape(a, a->info->outputs[0], &so))
        return AF_ESHAPE;
    int64_t ta[AF_MAX_RANK], tb[AF_MAX_RANK], idx[AF_MAX_RANK] = {0};
    bstrides(&sa, &so, ta);
    bstrides(&sb, &so, tb);
    int64_t total = numel(&so), ia = 0, ib = 0;
    if ((uint64_t)total > n)
        return AF_ESHAPE;
    for (int64_t i = 0; i < total; i++) {
        z[i] = f(x[ia], y[ib]);
        for (int32_t k = so.rank - 1; k >= 0; k--) { /* odometer increment */
            idx[k]++;
            ia += ta[k];
            ib += tb[k];
            if (idx[k] < so.d[k])
                break;
            ia -= ta[k] * so.d[k];
            ib -= tb[k] * so.d[k];
            idx[k] = 0;
        }
    }
    return 0;
}

static int k_add(const af_kernel_args_t *a)
{
    return binary(a, f_add);
}
static int k_sub(const af_kernel_args_t *a)
{
    return binary(a, f_sub);
}
static int k_mul(const af_kernel_args_t *a)
{
    return binary(a, f_mul);
}
static int k_div(const af_kernel_args_t *a)
{
    return binary(a, f_div);
}

/* ---- matrix products -------------------------------------------------------------------- */

/* C[M,N] = alpha * op(A) op(B) (+ C if accumulate). Row-major, lda/ldb are row lengths. */
static void gemm(int64_t m, int64_t n, int64_t k, const float *A, int ta, const float *B, int tb,
                 float alpha, float *C)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            float av = alpha * (ta ? A[p * m + i] : A[i * k + p]);
            if (av == 0)
                continue;
            float *c = C + i * n;
            if (tb)
                for (int64_t j = 0; j < n; j++)
                    c[j] += av * B[j * k + p];
            else
                for (int64_t j = 0; j < n; j++)
                    c[j] += av * B[p * n + j];
        }
}

static int k_matmul(const af_kernel_args_t *a)
{
    shape_t sa, sb, so;
    if (a->n_inputs < 2 || get_shape(a, a->info->inputs[0], &sa) ||
        get_shape(a, a->info->inputs[1], &sb) || get_shape(a, a->info->outputs[0], &so) ||
        sa.rank < 2 || sb.rank < 2 || so.rank < 2)
        return AF_ESHAPE;
    int64_t m = sa.d[sa.rank - 2], k = sa.d[sa.rank - 1], n = sb.d[sb.rank - 1];
    if (sb.d[sb.rank - 2] != k)
        return AF_ESHAPE;
    int64_t mn = m * n > 0 ? m * n : 1, mk = m * k > 0 ? m * k : 1, kn = k * n > 0 ? k * n : 1;
    int64_t batch = numel(&so) / mn, ba = numel(&sa) / mk, bb = numel(&sb) / kn;
    if (ba < 1 || bb < 1)
        return AF_ESHAPE;
    float *out = a->outputs[0];
    memset(out, 0, (size_t)(batch * m * n) * 4);
    for (int64_t b = 0; b < batch; b++)
        gemm(m, n, k, (const float *)a->inputs[0] + (b % ba) * m * k, 0,
             (const float *)a->inputs[1] + (b % bb) * k * n, 0, 1.0f, out + b * m * n);
    return 0;
}

static int k_gemm(const af_kernel_args_t *a)
{
    shape_t sa, sb, sc;
    if (a->n_inputs < 2 || get_shape(a, a->info->inputs[0], &sa) ||
        get_shape(a, a->info->inputs[1], &sb) || sa.rank < 2 || sb.rank != 2)
        return AF_ESHAPE;
    int ta = (int)attr_i(a, "transA", 0), tb = (int)attr_i(a, "transB", 0);
    float alpha = (float)attr_f(a, "alpha", 1.0), beta = (float)attr_f(a, "beta", 1.0);
    if (sa.rank > 2 && ta)
        return AF_ESHAPE;
    /* A of rank > 2 (a framework Linear layer): the leading dims are rows */
    int64_t m = ta ? sa.d[1] : numel(&sa) / (sa.d[sa.rank - 1] ? sa.d[sa.rank - 1] : 1);
    int64_t k = ta ? sa.d[0] : sa.d[sa.rank - 1];
    int64_t n = tb ? sb.d[0] : sb.d[1];
    if ((tb ? sb.d[1] : sb.d[0]) != k || a->output_bytes[0] < (uint64_t)(m * n) * 4)
        return AF_ESHAPE;
    float *out = a->outputs[0];
    memset(out, 0, (size_t)(m * n) * 4);
    if (a->n_inputs > 2 && beta != 0 && !get_shape(a, a->info->inputs[2], &sc)) {
        const float *c = a->inputs[2];
        int64_t cm = sc.rank == 2 ? sc.d[0] : 1, cn = sc.rank >= 1 ? sc.d[sc.rank - 1] : 1;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                out[i * n + j] = beta * c[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
    }
    gemm(m, n, k, a->inputs[0], ta, a->inputs[1], tb, alpha, out);
    return 0;
}

/* ---- convolution and pooling (NCHW) ----------------------------------------------------- */

typedef struct win {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
} win_t;

/* One spatial dimension of a window whose attributes are missing (graphs built for planning,
 * like the model zoo's, carry shapes only): stride = ceil(in / out), kernel from the weights or
 * stride + 1, padding so that the output size comes out (ONNX exports carry the attributes). */
static void infer_dim(int64_t in, int64_t out, int have_k, int have_s, int have_p, int64_t *k,
                      int64_t *st, int64_t *pad, int64_t dil)
{
    if (!have_s)
        *st = out > 0 ? (in + out - 1) / out : 1;
    if (*st < 1)
        *st = 1;
    if (!have_k)
        *k = *st > 1 ? *st + 1 : 3;
    if (!have_p) {
        int64_t need = (out - 1) * *st + dil * (*k - 1) + 1 - in;
        *pad = need > 0 ? (need + 1) / 2 : 0;
    }
}

static void get_win(const af_kernel_args_t *a, int64_t kh, int64_t kw, const shape_t *sx,
                    const shape_t *so, int k_known, win_t *w)
{
    const af_graph_t *g = a->graph;
    int has_k = k_known || af_graph_node_attr(g, a->node, "kernel_shape");
    int has_s = af_graph_node_attr(g, a->node, "strides") != NULL;
    int has_p = af_graph_node_attr(g, a->node, "pads") != NULL;
    w->kh = attr_ik(a, "kernel_shape", 0, kh);
    w->kw = attr_ik(a, "kernel_shape", 1, kw);
    w->sh = attr_ik(a, "strides", 0, 1);
    w->sw = attr_ik(a, "strides", 1, 1);
    w->ph = attr_ik(a, "pads", 0, 0);
    w->pw = attr_ik(a, "pads", 1, 0);
    w->dh = attr_ik(a, "dilations", 0, 1);
    w->dw = attr_ik(a, "dilations", 1, 1);
    infer_dim(sx->d[2], so->d[2], has_k, has_s, has_p, &w->kh, &w->sh, &w->ph, w->dh);
    infer_dim(sx->d[3], so->d[3], has_k, has_s, has_p, &w->kw, &w->sw, &w->pw, w->dw);
}

static int k_conv(const af_kernel_args_t *a)
{
    shape_t sx, sw, so;
    if (a->n_inputs < 2 || get_shape(a, a->info->inputs[0], &sx) ||
        get_shape(a, a->info->inputs[1], &sw) || get_shape(a, a->info->outputs[0], &so) ||
        sx.rank != 4 || sw.rank != 4 || so.rank != 4)
        return AF_ESHAPE;
    int64_t N = sx.d[0], C = sx.d[1], H = sx.d[2], W = sx.d[3];
    int64_t M = sw.d[0], CG = sw.d[1], OH = so.d[2], OW = so.d[3];
    int64_t G = attr_i(a, "group", CG > 0 && C % CG == 0 ? C / CG : 1); /* depthwise if absent */
    win_t w;
    get_win(a, sw.d[2], sw.d[3], &sx, &so, 1, &w);
    if (G <= 0 || C != CG * G || M % G || so.d[1] != M)
        return AF_ESHAPE;
    const float *x = a->inputs[0], *k = a->inputs[1];
    const float *bias = a->n_inputs > 2 ? a->inputs[2] : NULL;
    float *y = a->outputs[0];
    int64_t MG = M / G;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t g = m / MG;
            float *yo = y + (n * M + m) * OH * OW;
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    float acc = bias ? bias[m] : 0.0f;
                    for (int64_t c = 0; c < CG; c++) {
                        const float *xc = x + (n * C + g * CG + c) * H * W;
                        const float *kc = k + (m * CG + c) * w.kh * w.kw;
                        for (int64_t i = 0; i < w.kh; i++) {
                            int64_t ih = oh * w.sh - w.ph + i * w.dh;
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int64_t j = 0; j < w.kw; j++) {
                                int64_t iw = ow * w.sw - w.pw + j * w.dw;
                                if (iw >= 0 && iw < W)
                                    acc += xc[ih * W + iw] * kc[i * w.kw + j];
                            }
                        }
                    }
                    yo[oh * OW + ow] = acc;
                }
        }
    return 0;
}

static int pool(const af_kernel_args_t *a, int is_max, int global)
{
    shape_t sx, so;
    if (a->n_inputs < 1 || get_shape(a, a->info->inputs[0], &sx) ||
        get_shape(a, a->info->outputs[0], &so) || sx.rank != 4 || so.rank != 4)
        return AF_ESHAPE;
    int64_t NC = sx.d[0] * sx.d[1], H = sx.d[2], W = sx.d[3], OH = so.d[2], OW = so.d[3];
    win_t w;
    get_win(a, global ? H : 1, global ? W : 1, &sx, &so, global, &w);
    if (global)
        w = (win_t){H, W, 1, 1, 0, 0, 1, 1};
    const float *x = a->inputs[0];
    float *y = a->outputs[0];
    for (int64_t c = 0; c < NC; c++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                float acc = is_max ? -FLT_MAX : 0.0f;
                int64_t cnt = 0;
                for (int64_t i = 0; i < w.kh; i++) {
                    int64_t ih = oh * w.sh - w.ph + i * w.dh;
                    for (int64_t j = 0; ih >= 0 && ih < H && j < w.kw; j++) {
                        int64_t iw = ow * w.sw - w.pw + j * w.dw;
                        if (iw < 0 || iw >= W)
                            continue;
                        float v = x[(c * H + ih) * W + iw];
                        acc = is_max ? (v > acc ? v : acc) : acc + v;
                        cnt++;
                    }
                }
                y[(c * OH + oh) * OW + ow] = is_max ? acc : (cnt ? acc / (float)cnt : 0.0f);
            }
    return 0;
}

static int k_maxpool(const af_kernel_args_t *a)
{
    return pool(a, 1, 0);
}
static int k_avgpool(const af_kernel_args_t *a)
{
    return pool(a, 0, 0);
}
static int k_gavgpool(const af_kernel_args_t *a)
{
    return pool(a, 0, 1);
}

/* ---- Softmax, Concat -------------------------------------------------------------------- */

/* Splits a shape around `axis`: outer x dim x inner. */
static int split_axis(const shape_t *s, int64_t axis, int64_t *outer, int64_t *dim, int64_t *inner)
{
    if (axis < 0)
        axis += s->rank;
    if (axis < 0 || axis >= s->rank)
        return AF_ESHAPE;
    *outer = *inner = 1;
    for (int32_t i = 0; i < axis; i++)
        *outer *= s->d[i];
    *dim = s->d[axis];
    for (int32_t i = (int32_t)axis + 1; i < s->rank; i++)
        *inner *= s->d[i];
    return 0;
}

static int k_softmax(const af_kernel_args_t *a)
{
    shape_t sx;
    int64_t outer, dim, inner;
    if (a->n_inputs < 1 || get_shape(a, a->info->inputs[0], &sx) ||
        split_axis(&sx, attr_i(a, "axis", -1), &outer, &dim, &inner))
        return AF_ESHAPE;
    const float *x = a->inputs[0];
    float *y = a->outputs[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            const float *xv = x + o * dim * inner + in;
            float *yv = y + o * dim * inner + in;
            float mx = -FLT_MAX, sum = 0;
            for (int64_t i = 0; i < dim; i++)
                mx = xv[i * inner] > mx ? xv[i * inner] : mx;
            for (int64_t i = 0; i < dim; i++) {
                yv[i * inner] = expf(xv[i * inner] - mx);
                sum += yv[i * inner];
            }
            for (int64_t i = 0; i < dim; i++)
                yv[i * inner] /= sum;
        }
    return 0;
}

static int k_concat(const af_kernel_args_t *a)
{
    shape_t so;
    int64_t outer, dim, inner;
    if (get_shape(a, a->info->outputs[0], &so) ||
        split_axis(&so, attr_i(a, "axis", 0), &outer, &dim, &inner))
        return AF_ESHAPE;
    uint8_t *y = a->outputs[0];
    uint64_t row = (uint64_t)dim * (uint64_t)inner * 4, at = 0;
    for (int32_t i = 0; i < a->n_inputs; i++) {
        uint64_t part = a->input_bytes[i] / (uint64_t)(outer ? outer : 1);
        if (at + part > row)
            return AF_ESHAPE;
        for (int64_t o = 0; o < outer; o++)
            memcpy(y + (uint64_t)o * row + at, (const uint8_t *)a->inputs[i] + (uint64_t)o * part,
                   (size_t)part);
        at += part;
    }
    return at == row ? 0 : AF_ESHAPE;
}

/* ---- normalisation, activations and layout ops of the model zoo -------------------------- */

static float f_relu6(float x)
{
    return x < 0 ? 0 : (x > 6 ? 6 : x);
}
static float f_gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678f));
}
static int k_relu6(const af_kernel_args_t *a)
{
    return unary(a, f_relu6);
}
static int k_gelu(const af_kernel_args_t *a)
{
    return unary(a, f_gelu);
}

/* Clip with min/max from attributes (opset < 11) or optional inputs 1 and 2. */
static int k_clip(const af_kernel_args_t *a)
{
    float lo = (float)attr_f(a, "min", -FLT_MAX), hi = (float)attr_f(a, "max", FLT_MAX);
    if (a->n_inputs > 1 && a->inputs[1] && a->input_bytes[1] >= 4)
        lo = *(const float *)a->inputs[1];
    if (a->n_inputs > 2 && a->inputs[2] && a->input_bytes[2] >= 4)
        hi = *(const float *)a->inputs[2];
    const float *x = a->inputs[0];
    float *y = a->outputs[0];
    uint64_t n = a->output_bytes[0] / 4;
    if (a->input_bytes[0] / 4 < n)
        return AF_ESHAPE;
    for (uint64_t i = 0; i < n; i++)
        y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
    return 0;
}

/* Inference BatchNormalization, NCHW: y = scale * (x - mean) / sqrt(var + eps) + bias. */
static int k_batchnorm(const af_kernel_args_t *a)
{
    shape_t sx;
    if ((a->n_inputs != 5 && a->n_inputs != 2) || get_shape(a, a->info->inputs[0], &sx) ||
        sx.rank < 2)
        return AF_ESHAPE;
    int64_t n = sx.d[0], c = sx.d[1], nc = n * c > 0 ? n * c : 1, inner = numel(&sx) / nc;
    const float *prm[4]; /* scale, bias, mean, var: four inputs, or one packed [4, C] tensor */
    for (int32_t i = 0; i < 4; i++) {
        int32_t in = a->n_inputs == 5 ? i + 1 : 1;
        uint64_t need = (uint64_t)c * 4 * (a->n_inputs == 5 ? 1 : (uint64_t)i + 1);
        if (a->input_bytes[in] < need)
            return AF_ESHAPE;
        prm[i] = (const float *)a->inputs[in] + (a->n_inputs == 5 ? 0 : i * c);
    }
    const float *x = a->inputs[0], *sc = prm[0], *b = prm[1], *m = prm[2], *v = prm[3];
    float eps = (float)attr_f(a, "epsilon", 1e-5);
    float *y = a->outputs[0];
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++) {
            float k = sc[ch] / sqrtf(v[ch] + eps), o = b[ch] - m[ch] * k;
            const float *xp = x + (i * c + ch) * inner;
            float *yp = y + (i * c + ch) * inner;
            for (int64_t j = 0; j < inner; j++)
                yp[j] = xp[j] * k + o;
        }
    return 0;
}

/* LayerNormalization over the dims from `axis` on (default -1), inputs X, scale, bias. */
static int k_layernorm(const af_kernel_args_t *a)
{
    shape_t sx;
    if (a->n_inputs < 2 || get_shape(a, a->info->inputs[0], &sx) || sx.rank < 1)
        return AF_ESHAPE;
    int64_t axis = attr_i(a, "axis", -1);
    if (axis < 0)
        axis += sx.rank;
    if (axis < 0 || axis >= sx.rank)
        return AF_ESHAPE;
    int64_t outer = 1, dim = 1;
    for (int32_t i = 0; i < sx.rank; i++)
        *(i < axis ? &outer : &dim) *= sx.d[i];
    /* scale and bias as two inputs, or one packed [2, C] tensor */
    int packed = a->n_inputs == 2 && a->input_bytes[1] >= (uint64_t)dim * 8;
    if (a->input_bytes[1] < (uint64_t)dim * 4 ||
        (a->n_inputs > 2 && a->inputs[2] && a->input_bytes[2] < (uint64_t)dim * 4))
        return AF_ESHAPE;
    const float *x = a->inputs[0], *sc = a->inputs[1];
    const float *b = packed ? sc + dim : a->n_inputs > 2 ? a->inputs[2] : NULL;
    float eps = (float)attr_f(a, "epsilon", 1e-5);
    float *y = a->outputs[0];
    for (int64_t o = 0; o < outer; o++) {
        const float *xv = x + o * dim;
        float *yv = y + o * dim;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < dim; i++)
            mean += xv[i];
        mean /= (double)dim;
        for (int64_t i = 0; i < dim; i++)
            var += (xv[i] - mean) * (xv[i] - mean);
        float inv = (float)(1.0 / sqrt(var / (double)dim + eps));
        for (int64_t i = 0; i < dim; i++)
            yv[i] = (float)(xv[i] - mean) * inv * sc[i] + (b ? b[i] : 0.0f);
    }
    return 0;
}

/* Transpose by `perm` (default: reverse), any element size. */
static int k_transpose(const af_kernel_args_t *a)
{
    shape_t sx, so;
    if (get_shape(a, a->info->inputs[0], &sx) || get_shape(a, a->info->outputs[0], &so) ||
        sx.rank != so.rank || sx.rank < 1)
        return AF_ESHAPE;
    int32_t r = sx.rank;
    int64_t total = numel(&sx), perm[AF_MAX_RANK], in_st[AF_MAX_RANK], idx[AF_MAX_RANK] = {0};
    uint64_t es = total ? a->input_bytes[0] / (uint64_t)total : 0;
    if (!es || a->output_bytes[0] < a->input_bytes[0])
        return AF_ESHAPE;
    const af_attr_t *pa = af_graph_node_attr(a->graph, a->node, "perm");
    int used[AF_MAX_RANK] = {0}, reversed = 1;
    for (int32_t i = 0; i < r; i++) {
        perm[i] = pa ? attr_ik(a, "perm", i, i) : r - 1 - i;
        reversed &= so.d[i] == sx.d[r - 1 - i];
    }
    if (!pa && !reversed) /* no perm given and not a reversal: match dims in order */
        for (int32_t i = 0; i < r; i++) {
            perm[i] = -1;
            for (int32_t j = 0; j < r && perm[i] < 0; j++)
                if (!used[j] && sx.d[j] == so.d[i])
                    perm[i] = j, used[j] = 1;
        }
    int64_t acc = 1;
    for (int32_t i = r - 1; i >= 0; i--) {
        in_st[i] = acc;
        acc *= sx.d[i];
    }
    for (int32_t i = 0; i < r; i++)
        if (perm[i] < 0 || perm[i] >= r || so.d[i] != sx.d[perm[i]])
            return AF_ESHAPE;
    const uint8_t *x = a->inputs[0];
    uint8_t *y = a->outputs[0];
    for (int64_t o = 0; o < total; o++) { /* o walks the output in order */
        int64_t src = 0;
        for (int32_t i = 0; i < r; i++)
            src += idx[i] * in_st[perm[i]];
        memcpy(y + (uint64_t)o * es, x + (uint64_t)src * es, (size_t)es);
        for (int32_t i = r - 1; i >= 0; i--) {
            if (++idx[i] < so.d[i])
                break;
            idx[i] = 0;
        }
    }
    return 0;
}

/* Gather rows along `axis` (default 0); indices i64 or i32, wrapped into range (ONNX allows
 * negatives; anything else from a pattern-filled input is clamped, never read out of bounds). */
static int k_gather(const af_kernel_args_t *a)
{
    shape_t sd;
    int64_t outer, dim, inner;
    if (a->n_inputs < 2 || get_shape(a, a->info->inputs[0], &sd) ||
        split_axis(&sd, attr_i(a, "axis", 0), &outer, &dim, &inner) || dim <= 0)
        return AF_ESHAPE;
    const af_tensor_info_t *ti = af_graph_tensor(a->graph, a->info->inputs[1]);
    int is32 = ti->dtype == AF_DTYPE_I32;
    uint64_t n_idx = a->input_bytes[1] / (is32 ? 4 : 8);
    int64_t cells = outer * dim * inner > 0 ? outer * dim * inner : 1;
    uint64_t es = a->input_bytes[0] / (uint64_t)cells;
    uint64_t row = (uint64_t)inner * es;
    if (!es || a->output_bytes[0] < (uint64_t)outer * n_idx * row)
        return AF_ESHAPE;
    const uint8_t *d = a->inputs[0];
    uint8_t *y = a->outputs[0];
    for (int64_t o = 0; o < outer; o++)
        for (uint64_t k = 0; k < n_idx; k++) {
            int64_t ix =
                is32 ? ((const int32_t *)a->inputs[1])[k] : ((const int64_t *)a->inputs[1])[k];
            ix %= dim;
            if (ix < 0)
                ix += dim;
            memcpy(y + ((uint64_t)o * n_idx + k) * row,
                   d + ((uint64_t)o * (uint64_t)dim + (uint64_t)ix) * row, (size_t)row);
        }
    return 0;
}

/* Split along `axis` into the outputs' shapes. */
static int k_split(const af_kernel_args_t *a)
{
    shape_t sx;
    int64_t outer, dim, inner;
    if (get_shape(a, a->info->inputs[0], &sx) ||
        split_axis(&sx, attr_i(a, "axis", 0), &outer, &dim, &inner))
        return AF_ESHAPE;
    uint64_t in_row = a->input_bytes[0] / (uint64_t)(outer ? outer : 1), at = 0;
    const uint8_t *x = a->inputs[0];
    for (int32_t k = 0; k < a->n_outputs; k++) {
        uint64_t part = a->output_bytes[k] / (uint64_t)(outer ? outer : 1);
        if (at + part > in_row)
            return AF_ESHAPE;
        for (int64_t o = 0; o < outer; o++)
            memcpy((uint8_t *)a->outputs[k] + (uint64_t)o * part, x + (uint64_t)o * in_row + at,
                   (size_t)part);
        at += part;
    }
    return 0;
}

/* Every input and output f32, shapes static. */
static int c_f32(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    int rc = 0;
    for (int32_t i = 0; i < ni->n_inputs && !rc; i++)
        rc = kr_check_in(g, node, i, KR_DT(F32), err);
    for (int32_t i = 0; i < ni->n_outputs && !rc; i++)
        rc = kr_check_out(g, node, i, KR_DT(F32), err);
    return rc;
}

static int c_any(const af_graph_t *g, int32_t node, af_error_t *err)
{
    return kr_check_static(g, node, err);
}

const af__kernel_entry_t af__kref_nn[] = {
    {.op = "Relu", .fn = k_relu, .check = c_f32},
    {.op = "Sigmoid", .fn = k_sigmoid, .check = c_f32},
    {.op = "Tanh", .fn = k_tanh, .check = c_f32},
    {.op = "Add", .fn = k_add, .check = c_f32},
    {.op = "Sub", .fn = k_sub, .check = c_f32},
    {.op = "Mul", .fn = k_mul, .check = c_f32},
    {.op = "Div", .fn = k_div, .check = c_f32},
    {.op = "MatMul", .fn = k_matmul, .check = c_f32},
    {.op = "Gemm", .fn = k_gemm, .check = c_f32},
    {.op = "Conv", .fn = k_conv, .check = c_f32},
    {.op = "MaxPool", .fn = k_maxpool, .check = c_f32},
    {.op = "AveragePool", .fn = k_avgpool, .check = c_f32},
    {.op = "GlobalAveragePool", .fn = k_gavgpool, .check = c_f32},
    {.op = "Softmax", .fn = k_softmax, .check = c_f32},
    {.op = "Concat", .fn = k_concat, .check = c_any},
    {.op = "Reshape", .fn = k_view, .check = c_any},
    {.op = "Flatten", .fn = k_view, .check = c_any},
    {.op = "Squeeze", .fn = k_view, .check = c_any},
    {.op = "Unsqueeze", .fn = k_view, .check = c_any},
    {.op = "Identity", .fn = k_view, .check = c_any},
    {.op = "Relu6", .fn = k_relu6, .check = c_f32},
    {.op = "Gelu", .fn = k_gelu, .check = c_f32},
    {.op = "Clip", .fn = k_clip, .check = c_f32},
    {.op = "BatchNormalization", .fn = k_batchnorm, .check = c_f32},
    {.op = "LayerNormalization", .fn = k_layernorm, .check = c_f32},
    {.op = "Transpose", .fn = k_transpose, .check = c_any},
    {.op = "Gather", .fn = k_gather, .check = c_any},
    {.op = "Split", .fn = k_split, .check = c_any},
    {.op = NULL},
};
