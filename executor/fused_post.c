/*
 * Fused ops (planner/fuse.c, af_plan_fuse) around a node's kernel. A node may carry
 * - fused_affine = k: inputs k (s) and k + 1 (t), one value per channel (dim 1) of output 0:
 *   y = (float)(y * s) + t, first (a BatchNormalization folded into a Conv; the
 *   BatchNormalization kernels compute these two f32 operations from the same s and t,
 *   af__bn_affine, so the fused node gives the unfused plan's floats);
 * - fused_bias = k: constant input k is added along output 0's last axis (a MatMul's bias: a
 *   PyTorch Linear), first;
 * - fused_sum = k: input k is added to output 0 (a residual Add folded into a Conv, MatMul or
 *   Gemm); the plan may give output 0 the bytes of input k (in-place hint);
 * - fused_post ("Relu,Clip") with fused_alpha / fused_beta: unary ops applied, in order, on
 *   output 0 after the sum.
 * AF__POST_PRIM: the kernel set's primitive applies them (oneDNN bias, sum and eltwise post-ops,
 * af__kprep_out_t.post_fused); its dst must hold the addend first, so a sum input that is not
 * already in place is copied into the output before the kernel. AF__POST_LOOP (every other
 * kernel): the kernel runs, then C loops over the f32 elements add the bias, the sum input and
 * apply the unary ops in place — when the output took the sum input's bytes, the addend is copied
 * aside first (a heap buffer: the loop is the oracle's path, not a fast one). The unary math is
 * the reference kernels' (double, rounded to f32 once per op), so a fused plan on the reference
 * kernels gives the unfused plan's values. Elementwise work does not care about the layout.
 *
 * Lock rule: none; af__post_call touches only the node's own buffers.
 */
#include "executor/executor_int.h"

#include <math.h>
#include <string.h>

typedef struct post_op {
    int kind;
    double a, b;
} post_op_t;

enum {
    P_RELU,
    P_LEAKY,
    P_SIGMOID,
    P_TANH,
    P_CLIP,
    P_HARDSWISH,
    P_HARDSIGMOID,
    P_GELU,
    P_ELU,
    P_SOFTPLUS,
    P_ABS,
    P_NEG,
    P_EXP,
    P_SQRT
};

static const char *const post_names[] = {"Relu",      "LeakyRelu",   "Sigmoid", "Tanh", "Clip",
                                         "HardSwish", "HardSigmoid", "Gelu",    "Elu",  "Softplus",
                                         "Abs",       "Neg",         "Exp",     "Sqrt"};

static double apply(const post_op_t *o, double x)
{
    switch (o->kind) {
    case P_RELU:
        return x > 0 ? x : x == x ? 0 : x;
    case P_LEAKY:
        return x < 0 ? o->a * x : x;
    case P_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case P_TANH:
        return tanh(x);
    case P_CLIP:
        return x < o->a ? o->a : x > o->b ? o->b : x;
    case P_HARDSWISH: {
        double h = x / 6.0 + 0.5;
        return x * (h < 0 ? 0 : h > 1 ? 1 : h);
    }
    case P_HARDSIGMOID: {
        double h = o->a * x + o->b;
        return h < 0 ? 0 : h > 1 ? 1 : h;
    }
    case P_GELU:
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case P_ELU:
        return x < 0 ? o->a * (exp(x) - 1.0) : x;
    case P_SOFTPLUS:
        return x > 30 ? x : log1p(exp(x));
    case P_ABS:
        return fabs(x);
    case P_NEG:
        return -x;
    case P_EXP:
        return exp(x);
    default:
        return sqrt(x);
    }
}

/* Input index given by attribute `name` of node v in *at (-1 without it); AF_EINVAL when bad. */
static int input_attr(const af_graph_t *g, int32_t v, const char *name, int32_t *at,
                      af_error_t *err)
{
    const af_attr_t *a = af_graph_node_attr(g, v, name);
    const af_node_info_t *ni = af_graph_node(g, v);
    *at = -1;
    if (a && (a->type != AF_ATTR_INT || a->i < 1 || a->i >= ni->n_inputs))
        return af__err(err, AF_EINVAL, "node '%s': bad %s attribute", ni->name, name);
    *at = a ? (int32_t)a->i : -1;
    return 0;
}

int af__post_any(const af__post_t *pp)
{
    return pp->n > 0 || pp->sum >= 0 || pp->bias >= 0 || pp->affine >= 0;
}

int af__post_mode(const af_graph_t *g, int32_t v)
{
    return af_graph_node_attr(g, v, "fused_post") || af_graph_node_attr(g, v, "fused_sum") ||
                   af_graph_node_attr(g, v, "fused_bias") ||
                   af_graph_node_attr(g, v, "fused_affine")
               ? AF__POST_LOOP
               : AF__POST_NONE;
}

int af__post_parse(const af_graph_t *g, int32_t v, af__post_t *out, af_error_t *err)
{
    memset(out, 0, sizeof *out);
    int rc = input_attr(g, v, "fused_sum", &out->sum, err);
    if (rc || (rc = input_attr(g, v, "fused_bias", &out->bias, err)) ||
        (rc = input_attr(g, v, "fused_affine", &out->affine, err)))
        return rc;
    int32_t f = out->affine, ni = af_graph_node(g, v)->n_inputs;
    if ((out->bias >= 0 && out->bias == out->sum) ||
        (f >= 0 && (f + 1 >= ni || out->sum == f || out->sum == f + 1 || out->bias == f ||
                    out->bias == f + 1)))
        return af__err(err, AF_EINVAL,
                       "node '%s': fused_affine, fused_bias and fused_sum name "
                       "one input",
                       af_graph_node(g, v)->name);
    const af_attr_t *ops = af_graph_node_attr(g, v, "fused_post");
    if (!ops)
        return 0;
    const af_attr_t *al = af_graph_node_attr(g, v, "fused_alpha");
    const af_attr_t *be = af_graph_node_attr(g, v, "fused_beta");
    const char *s = ops->type == AF_ATTR_STRING && ops->s ? ops->s : "";
    const char *name = af_graph_node(g, v)->name;
    while (*s) {
        size_t n = strcspn(s, ",");
        int32_t i = out->n, kind = -1;
        for (int k = 0; k < (int)AF_ARRAY_SIZE(post_names); k++)
            if (strlen(post_names[k]) == n && !strncmp(post_names[k], s, n))
                kind = k;
        if (kind < 0 || i == AF__POST_MAX || !al || !be || al->type != AF_ATTR_FLOATS ||
            be->type != AF_ATTR_FLOATS || al->n <= i || be->n <= i)
            return af__err(err, AF_EINVAL, "node '%s': bad fused_post attributes at '%.*s'", name,
                           (int)n, s);
        out->op[i] = post_names[kind];
        out->kind[i] = kind;
        out->a[i] = al->floats[i];
        out->b[i] = be->floats[i];
        out->n++;
        s += n + (s[n] == ',');
    }
    return 0;
}

/* One op over the whole tensor: cheap ops in f32 (exact: the same values as in double), the
 * rest through the reference's double function. An inner loop per op, so it vectorises. */
static void loop_op(float *y, uint64_t n, const post_op_t *o)
{
    float a = (float)o->a, b = (float)o->b;
    switch (o->kind) {
    case P_RELU:
        for (uint64_t e = 0; e < n; e++)
            y[e] = y[e] > 0 ? y[e] : y[e] == y[e] ? 0 : y[e];
        return;
    case P_CLIP:
        for (uint64_t e = 0; e < n; e++)
            y[e] = y[e] < a ? a : y[e] > b ? b : y[e];
        return;
    case P_LEAKY:
        for (uint64_t e = 0; e < n; e++)
            y[e] = y[e] < 0 ? (float)((double)a * y[e]) : y[e];
        return;
    case P_NEG:
        for (uint64_t e = 0; e < n; e++)
            y[e] = -y[e];
        return;
    case P_ABS:
        for (uint64_t e = 0; e < n; e++)
            y[e] = fabsf(y[e]);
        return;
    default:
        for (uint64_t e = 0; e < n; e++)
            y[e] = (float)apply(o, y[e]);
    }
}

/* A folded BatchNormalization on y, C channels of `inner` elements each (plain: [N, C, inner];
 * channels-last: [N, inner, C]): the BatchNormalization kernels' two roundings. */
typedef struct affine {
    const float *s, *t;
    uint64_t c, inner;
    int last;
} affine_t;

static void loop_affine(float *y, uint64_t n, const affine_t *f)
{
    if (f->last) {
        for (uint64_t r = 0; r < n; r += f->c)
            for (uint64_t j = 0; j < f->c; j++) {
                float p = y[r + j] * f->s[j];
                y[r + j] = p + f->t[j];
            }
        return;
    }
    for (uint64_t r = 0, ch = 0; r < n; r += f->inner, ch = (ch + 1) % f->c) {
        float s = f->s[ch], t = f->t[ch];
        for (uint64_t j = 0; j < f->inner; j++) {
            float p = y[r + j] * s;
            y[r + j] = p + t;
        }
    }
}

/* The C loop: the affine (when there is one), y += bias along the last axis (nb elements),
 * y += s (when there is a sum input), then every unary op in order: the unfused nodes' f32
 * arithmetic. */
static void loop(float *y, const affine_t *aff, const float *bias, uint64_t nb, const float *s,
                 uint64_t n, const af__post_t *pp)
{
    if (aff)
        loop_affine(y, n, aff);
    for (uint64_t r = 0; bias && r < n; r += nb)
        for (uint64_t j = 0; j < nb; j++)
            y[r + j] += bias[j];
    for (uint64_t e = 0; s && e < n; e++)
        y[e] += s[e];
    for (int32_t i = 0; i < pp->n; i++) {
        post_op_t o = {pp->kind[i], pp->a[i], pp->b[i]};
        loop_op(y, n, &o);
    }
}

/* [a, a + n) and [b, b + m) share a byte. */
static int overlap(const void *a, uint64_t n, const void *b, uint64_t m)
{
    const char *x = a, *y = b;
    return x < y + m && y < x + n;
}

/* The affine of fused_affine = pp->affine over output 0 (bytes), laid out as layout0. */
static int affine_of(const af_graph_t *g, int32_t v, const af_kernel_args_t *a,
                     const af__post_t *pp, int layout0, affine_t *f)
{
    const af_tensor_info_t *yi = af_graph_tensor(g, af_graph_node(g, v)->outputs[0]);
    uint64_t n = a->output_bytes[0] / sizeof(float);
    f->s = a->inputs[pp->affine];
    f->t = a->inputs[pp->affine + 1];
    f->c = yi->rank >= 2 && yi->shape[1] > 0 ? (uint64_t)yi->shape[1] : 0;
    f->last = layout0 == AF__LAYOUT_CHANNELS_LAST;
    uint64_t outer = yi->shape[0] > 0 ? (uint64_t)yi->shape[0] * f->c : 0;
    f->inner = outer && n % outer == 0 ? n / outer : 0;
    if (!f->s || !f->t || !f->inner || a->input_bytes[pp->affine] != f->c * sizeof(float) ||
        a->input_bytes[pp->affine + 1] != f->c * sizeof(float))
        return AF_ESHAPE;
    return 0;
}

int af__post_call(af_kernel_fn fn, const af_graph_t *g, int32_t v, const af_kernel_args_t *a,
                  int mode, int layout0)
{
    af__post_t pp;
    if (af__post_parse(g, v, &pp, NULL) || a->n_outputs < 1 || !a->outputs[0])
        return AF_EINVAL;
    affine_t aff = {0};
    if (pp.affine >= 0 && mode == AF__POST_LOOP && affine_of(g, v, a, &pp, layout0, &aff))
        return AF_ESHAPE;
    float *y = a->outputs[0];
    uint64_t bytes = a->output_bytes[0], n = bytes / sizeof(float);
    const float *s = NULL, *bias = pp.bias >= 0 ? a->inputs[pp.bias] : NULL;
    uint64_t nb = pp.bias >= 0 ? a->input_bytes[pp.bias] / sizeof(float) : 0;
    if (pp.bias >= 0 && (!bias || !nb || n % nb))
        return AF_ESHAPE;
    float *tmp = NULL;
    if (pp.sum >= 0) {
        s = a->inputs[pp.sum];
        if (!s || a->input_bytes[pp.sum] != bytes)
            return AF_ESHAPE;
        int same = overlap(y, bytes, s, bytes);
        if (mode == AF__POST_PRIM && !same) /* the primitive adds what dst holds */
            memcpy(y, s, bytes);
        else if (mode == AF__POST_PRIM && (const void *)y != (const void *)s)
            return AF_EINVAL;                     /* partly overlapping: never planned */
        else if (mode == AF__POST_LOOP && same) { /* in place: keep the addend */
            if (!(tmp = af__malloc(bytes)))
                return AF_ENOMEM;
            memcpy(tmp, s, bytes);
            s = tmp;
        }
    }
    int rc = fn(a);
    if (!rc && mode == AF__POST_LOOP)
        loop(y, pp.affine >= 0 ? &aff : NULL, bias, nb, s, n, &pp);
    af__free(tmp);
    return rc;
}
