/*
 * Operator fusion (option `fuse`, af_plan_fuse): a graph pass whose result is an ordinary graph
 * the rest of the planner, the verifier and the executor handle. A fused node is one node; the
 * tensors it no longer writes are gone from the graph, so they take no arena bytes.
 *
 * Four folds, in this order:
 * 1. BatchNormalization (inference: one output, constant scale/bias/mean/var, or the zoo's packed
 *    [4, C] form) into the Conv that produces its input, as a per-channel affine after the
 *    convolution: y = conv(x) * s + t, s and t computed here once (af__bn_affine) into new
 *    constants ("scale#bn.<bn>", "shift#bn.<bn>") that become the Conv's inputs after its bias
 *    (attribute fused_affine = the index of s; a Conv without a bias gets a zero one first).
 *    The BatchNormalization kernels compute the same two f32 operations from the same s and t,
 *    so the fused plan's floats are the unfused plan's, bit for bit. (Folding s into the
 *    weights instead saves the pass over the output but rounds differently: ~4e-5 relative on
 *    PP-OCRv4 det, whose layers amplify one-ulp changes.) Constants without data (the model
 *    zoo's) fold structurally.
 * 2. A constant bias Add after a Conv (not one with a folded affine) or a MatMul: per channel
 *    ([C], [C,1,1], [1,C,1,1]) into the Conv's bias (a new constant B + c, or c when the Conv has
 * none); along the last axis into a MatMul (PyTorch's Linear exports MatMul + Add) as input 2,
 * attribute fused_bias = 2 (oneDNN's matmul bias; the C loop adds it after the reference kernel).
 * 2'. A residual Add(y, s) into the Conv (with a bias), MatMul or Gemm (with C) producing y:
 *    s becomes the last input, attribute fused_sum = its index, with an in-place hint so the
 *    output may take s's bytes (oneDNN's sum post-op); s must not be one of the node's inputs.
 * 3. Chains of elementwise unary ops (Relu, LeakyRelu, Sigmoid, Tanh, Clip, Relu6, HardSwish,
 *    HardSigmoid, Gelu, Elu, Softplus, Abs, Neg, Exp, Sqrt) into the node that produces their
 *    input, whatever its op (Conv, MatMul, Gemm, Add, another unary, ...): the node keeps its op
 *    and gains the attributes fused_post (the ops, comma-separated), fused_alpha and
 *    fused_beta (one parameter pair each, resolved here: LeakyRelu's alpha, Clip's bounds...).
 *    The executor applies them in order on output 0 after the node's kernel (oneDNN Conv,
 *    MatMul/Gemm and binary ops as post-ops in the primitive, every other kernel in a C loop).
 *
 * A tensor is folded away only when it is an f32 intermediate with one consumer, read once,
 * not a graph output, not a view and without views. The pass runs once in node order, so a
 * chain head absorbs the whole chain. Reentrant: no state outside the call.
 */
#include "planner/planner_int.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_POST 8
#define AF__FUSE_MAX_HINTS 16

typedef struct unary_op {
    const char *op;
    float a, b;                  /* defaults */
    const char *a_attr, *b_attr; /* attributes that give them (Clip: inputs 1, 2 too) */
} unary_op_t;

static const unary_op_t unary_ops[] = {
    {"Relu", 0, 0, NULL, NULL},
    {"LeakyRelu", 0.01f, 0, "alpha", NULL},
    {"Sigmoid", 0, 0, NULL, NULL},
    {"Tanh", 0, 0, NULL, NULL},
    {"Clip", -FLT_MAX, FLT_MAX, "min", "max"},
    {"Relu6", 0, 6, NULL, NULL}, /* applied as Clip(0, 6) */
    {"HardSwish", 0, 0, NULL, NULL},
    {"HardSigmoid", 0.2f, 0.5f, "alpha", "beta"},
    {"Gelu", 0, 0, NULL, NULL},
    {"Elu", 1.0f, 0, "alpha", NULL},
    {"Softplus", 0, 0, NULL, NULL},
    {"Abs", 0, 0, NULL, NULL},
    {"Neg", 0, 0, NULL, NULL},
    {"Exp", 0, 0, NULL, NULL},
    {"Sqrt", 0, 0, NULL, NULL},
};

/* What happens to one node of the source graph. */
typedef struct fnode {
    int32_t out0;   /* tensor that replaces output 0, or -1 */
    int32_t aff;    /* BN fold: index of the scale s in the new constants (shift t next), or -1 */
    int32_t w, b;   /* index of the Conv's new weights (fuse_bn = weights) / bias there, or -1 */
    int32_t sum;    /* residual: tensor added to output 0 (an extra input, in place), or -1 */
    int32_t bias;   /* MatMul: constant added along the last axis (input 2, fused_bias), or -1 */
    int32_t n_post; /* unary ops applied after the kernel */
    const char *post[MAX_POST];
    double alpha[MAX_POST], beta[MAX_POST];
    double cost; /* the node's cost plus the costs of the nodes it absorbed */
} fnode_t;

typedef struct newc {
    char name[300];
    float *data;
    int64_t count;
    int32_t rank;
    int64_t shape[AF_MAX_RANK];
} newc_t;

typedef struct fuse {
    const af_graph_t *g;
    int32_t nt, nn;
    uint8_t *dead_t, *dead_n, *has_view;
    fnode_t *fn;
    newc_t *nc; /* three per Conv at most */
    int32_t n_nc;
    int with_data; /* the BN fold being made computes data (else a structural fold) */
    int weights;   /* fuse_bn = weights: s goes into the Conv's weights (W' = W s) */
    af_fuse_report_t rep;
} fuse_t;

static const unary_op_t *find_unary(const char *op)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(unary_ops); i++)
        if (!strcmp(unary_ops[i].op, op))
            return &unary_ops[i];
    return NULL;
}

/* f32 constant data of tensor t with `count` elements (count < 0: any), else NULL. */
static const float *f32_const(const af_graph_t *g, int32_t t, int64_t count)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    if (!ti || ti->kind != AF_TENSOR_CONSTANT || !ti->data || ti->dtype != AF_DTYPE_F32 ||
        ti->bytes <= 0 || (count >= 0 && ti->bytes != count * 4))
        return NULL;
    return ti->data;
}

static int has_data(const af_graph_t *g, int32_t t, int64_t count)
{
    return f32_const(g, t, count) != NULL;
}

/* An f32 constant of `count` elements without data (a zoo graph's weights: the executor fills
 * them itself). */
static int f32_const_nodata(const af_graph_t *g, int32_t t, int64_t count)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    return ti && ti->kind == AF_TENSOR_CONSTANT && !ti->data && ti->dtype == AF_DTYPE_F32 &&
           ti->bytes == count * 4;
}

/* Tensor t may disappear into its one consumer c: see the file comment. */
static int foldable(const fuse_t *f, int32_t t, int32_t c)
{
    const af_tensor_info_t *ti = af_graph_tensor(f->g, t);
    if (ti->kind != AF_TENSOR_INTERMEDIATE || ti->dtype != AF_DTYPE_F32 || ti->bytes <= 0 ||
        ti->alias_of >= 0 || f->has_view[t] || ti->n_consumers != 1 || ti->consumers[0] != c ||
        f->dead_n[c])
        return 0;
    const af_node_info_t *ci = af_graph_node(f->g, c);
    int reads = 0;
    for (int32_t k = 0; k < ci->n_inputs; k++)
        reads += ci->inputs[k] == t;
    return reads == 1 && ci->n_inputs > 0 && ci->inputs[0] == t;
}

/* The node's output 0 now (after earlier folds). */
static int32_t out0(const fuse_t *f, int32_t v)
{
    const af_node_info_t *ni = af_graph_node(f->g, v);
    if (ni->n_outputs < 1)
        return -1;
    return f->fn[v].out0 >= 0 ? f->fn[v].out0 : ni->outputs[0];
}

/* Outputs of node v other than output 0 are scratch (or there are none). */
static int only_scratch_after_first(const af_graph_t *g, int32_t v)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    for (int32_t k = 1; k < ni->n_outputs; k++)
        if (af_graph_tensor(g, ni->outputs[k])->kind != AF_TENSOR_SCRATCH)
            return 0;
    return ni->n_outputs >= 1;
}

static double attr_f(const af_graph_t *g, int32_t v, const char *name, double dflt)
{
    const af_attr_t *a = name ? af_graph_node_attr(g, v, name) : NULL;
    if (!a)
        return dflt;
    return a->type == AF_ATTR_FLOAT ? a->f : a->type == AF_ATTR_INT ? (double)a->i : dflt;
}

/* Parameters of unary node w: 0, or -1 when it cannot be fused (non-constant Clip bound, Gelu
 * with the tanh approximation, an op that is not a unary of the table). */
static int unary_params(const af_graph_t *g, int32_t w, double *a, double *b)
{
    const af_node_info_t *wi = af_graph_node(g, w);
    const unary_op_t *u = find_unary(wi->op);
    if (!u || !only_scratch_after_first(g, w))
        return -1;
    *a = attr_f(g, w, u->a_attr, u->a);
    *b = attr_f(g, w, u->b_attr, u->b);
    if (!strcmp(u->op, "Gelu")) {
        const af_attr_t *ap = af_graph_node_attr(g, w, "approximate");
        if (ap && ap->type == AF_ATTR_STRING && ap->s && strcmp(ap->s, "none"))
            return -1;
    }
    if (!strcmp(u->op, "Clip")) {
        for (int32_t k = 1; k < wi->n_inputs && k < 3; k++) {
            const af_tensor_info_t *ti = af_graph_tensor(g, wi->inputs[k]);
            if (!ti->name[0]) /* an omitted optional input */
                continue;
            const float *d = f32_const(g, wi->inputs[k], 1);
            if (!d)
                return -1;
            *(k == 1 ? a : b) = d[0];
        }
        return wi->n_inputs <= 3 ? 0 : -1;
    }
    return wi->n_inputs == 1 ? 0 : -1;
}

/* ---- BatchNormalization into Conv -------------------------------------------------------- */

/* A new f32 constant shaped like tensor `like`, or [count] when like < 0. */
static newc_t *new_const(fuse_t *f, int32_t like, const char *base, const char *conv, int64_t count)
{
    newc_t *c = &f->nc[f->n_nc];
    const af_tensor_info_t *li = like >= 0 ? af_graph_tensor(f->g, like) : NULL;
    c->rank = li ? li->rank : 1;
    for (int32_t k = 0; k < c->rank; k++)
        c->shape[k] = li ? li->shape[k] : count;
    snprintf(c->name, sizeof c->name, "%s#bn.%s", base, conv);
    for (int k = 2; af_graph_find_tensor(f->g, c->name) >= 0; k++)
        snprintf(c->name, sizeof c->name, "%s#bn%d.%s", base, k, conv);
    c->count = count;
    f->n_nc++;
    if (!f->with_data)
        return c;
    c->data = af__malloc((size_t)count * sizeof(float));
    return c->data ? c : NULL;
}

/* The per-channel parameters of BN node v (C channels): its four inputs, or the packed [4, C]
 * form of scale, bias, mean, var. All NULL when they have no data. */
static void bn_inputs(const af_graph_t *g, int32_t v, int64_t C, const float *p[4])
{
    const af_node_info_t *vi = af_graph_node(g, v);
    const float *packed = vi->n_inputs == 2 ? f32_const(g, vi->inputs[1], 4 * C) : NULL;
    for (int k = 0; k < 4; k++)
        p[k] = vi->n_inputs == 2 ? (packed ? packed + k * C : NULL)
                                 : f32_const(g, vi->inputs[k + 1], C);
}

/* fuse_bn = weights: W'[o] = W[o] s[o], B'[o] = (B[o] - mean[o]) s[o] + bias[o] in double, new
 * constants "<W>#bn.<conv>", "<B>#bn.<conv>" (one pass less, other roundings). 1: the weights
 * have no data while the BatchNormalization has (no fold). */
static int fold_weights(fuse_t *f, int32_t u, const float *p[4], double eps, int64_t C)
{
    const af_node_info_t *ui = af_graph_node(f->g, u);
    const af_tensor_info_t *wi = af_graph_tensor(f->g, ui->inputs[1]);
    int64_t per = wi->bytes / 4 / C;
    const float *w = f32_const(f->g, ui->inputs[1], C * per);
    const float *b = ui->n_inputs >= 3 ? f32_const(f->g, ui->inputs[2], C) : NULL;
    if (per * C * 4 != wi->bytes ||
        (f->with_data ? !w || (ui->n_inputs >= 3 && !b)
                      : !f32_const_nodata(f->g, ui->inputs[1], C * per)))
        return 1;
    const char *bname = ui->n_inputs >= 3 ? af_graph_tensor(f->g, ui->inputs[2])->name : "bias";
    newc_t *nw = new_const(f, ui->inputs[1], wi->name, ui->name, C * per);
    newc_t *nb = nw ? new_const(f, -1, bname, ui->name, C) : NULL;
    if (!nb)
        return AF_ENOMEM;
    for (int64_t o = 0; f->with_data && o < C; o++) {
        double s = (double)p[0][o] / sqrt((double)p[3][o] + eps);
        for (int64_t i = 0; i < per; i++)
            nw->data[o * per + i] = (float)((double)w[o * per + i] * s);
        nb->data[o] = (float)(((b ? (double)b[o] : 0.0) - p[2][o]) * s + p[1][o]);
    }
    f->fn[u].w = (int32_t)(nw - f->nc);
    f->fn[u].b = (int32_t)(nb - f->nc);
    return 0;
}

/* fuse_bn = affine (the default): s and t (af__bn_affine: the BatchNormalization kernels' own
 * two f32 operations, so the fused plan computes the unfused plan's floats) become inputs of
 * Conv u after its bias. A Conv without a bias gets a zero one (acc + 0 is acc). */
static int fold_affine(fuse_t *f, int32_t u, int32_t v, const float *p[4], double eps, int64_t C)
{
    const af_node_info_t *ui = af_graph_node(f->g, u), *vi = af_graph_node(f->g, v);
    const char *bn = vi->name[0] ? vi->name : ui->name;
    newc_t *ns = new_const(f, -1, "scale", bn, C);
    newc_t *nt = ns ? new_const(f, -1, "shift", bn, C) : NULL;
    newc_t *nz = nt && ui->n_inputs < 3 ? new_const(f, -1, "bias", ui->name, C) : NULL;
    if (!nt || (ui->n_inputs < 3 && !nz))
        return AF_ENOMEM;
    for (int64_t o = 0; f->with_data && o < C; o++) {
        af__bn_affine(p[0][o], p[1][o], p[2][o], p[3][o], eps, &ns->data[o], &nt->data[o]);
        if (nz)
            nz->data[o] = 0.0f;
    }
    f->fn[u].aff = (int32_t)(ns - f->nc);
    f->fn[u].b = nz ? (int32_t)(nz - f->nc) : -1;
    return 0;
}

/* Folds BN node v into Conv u (checked by try_bn), as the affine after the Conv or into its
 * weights (option fuse_bn). */
static int fold_bn(fuse_t *f, int32_t u, int32_t v, int64_t C)
{
    const af_graph_t *g = f->g;
    const af_node_info_t *ui = af_graph_node(g, u), *vi = af_graph_node(g, v);
    const float *p[4];
    bn_inputs(g, v, C, p);
    double eps = attr_f(g, v, "epsilon", 1e-5);
    int rc = f->weights ? fold_weights(f, u, p, eps, C) : fold_affine(f, u, v, p, eps, C);
    if (rc)
        return rc > 0 ? 0 : rc;
    fnode_t *fu = &f->fn[u];
    fu->out0 = vi->outputs[0];
    fu->cost += vi->cost > 0 ? vi->cost : 0;
    f->dead_n[v] = 1;
    f->dead_t[ui->outputs[0]] = 1;
    for (int32_t k = 1; k < vi->n_outputs; k++)
        f->dead_t[vi->outputs[k]] = 1; /* the BatchNormalization's scratch */
    f->rep.bn_folded++;
    return 0;
}

/* Conv u followed by BN: fold when every condition holds. */
static int try_bn(fuse_t *f, int32_t u)
{
    const af_graph_t *g = f->g;
    const af_node_info_t *ui = af_graph_node(g, u);
    if (strcmp(ui->op, "Conv") || ui->n_inputs < 2 || ui->n_inputs > 3 ||
        !only_scratch_after_first(g, u))
        return 0;
    int32_t y = ui->outputs[0];
    const af_tensor_info_t *yi = af_graph_tensor(g, y), *wi = af_graph_tensor(g, ui->inputs[1]);
    if (yi->n_consumers != 1 || wi->rank < 1 || wi->shape[0] <= 0)
        return 0;
    int32_t v = yi->consumers[0];
    const af_node_info_t *vi = af_graph_node(g, v);
    if (strcmp(vi->op, "BatchNormalization") || (vi->n_inputs != 5 && vi->n_inputs != 2) ||
        !only_scratch_after_first(g, v) || attr_f(g, v, "training_mode", 0) != 0 ||
        !foldable(f, y, v))
        return 0;
    int64_t C = wi->shape[0];
    if (yi->rank < 3 || yi->shape[1] != C)
        return 0;
    /* every parameter with data (s and t computed), or none (a structural fold) */
    int ok[2] = {1, 1};
    for (int m = 0; m < 2; m++) {
        int (*has)(const af_graph_t *, int32_t, int64_t) = m ? f32_const_nodata : has_data;
        for (int k = 1; k < vi->n_inputs; k++)
            ok[m] = ok[m] && has(g, vi->inputs[k], vi->n_inputs == 2 ? 4 * C : C);
    }
    if (!ok[0] && !ok[1])
        return 0;
    f->with_data = ok[0];
    return fold_bn(f, u, v, C);
}

/* ---- Adds after a node: a constant bias, a residual ------------------------------------- */

/* The Add w that alone reads u's output 0 y, with y an f32 intermediate (no view) and the Add's
 * output of y's bytes: w and its other input (*other), or -1. */
static int32_t add_partner(const fuse_t *f, int32_t u, int32_t *other)
{
    const af_graph_t *g = f->g;
    if (!only_scratch_after_first(g, u))
        return -1;
    int32_t y = out0(f, u);
    const af_tensor_info_t *yi = af_graph_tensor(g, y);
    if (yi->n_consumers != 1 || yi->kind != AF_TENSOR_INTERMEDIATE || yi->dtype != AF_DTYPE_F32 ||
        yi->alias_of >= 0 || f->has_view[y])
        return -1;
    int32_t w = yi->consumers[0];
    const af_node_info_t *wi = af_graph_node(g, w);
    if (strcmp(wi->op, "Add") || wi->n_inputs != 2 || !only_scratch_after_first(g, w) ||
        f->dead_n[w] || wi->inputs[0] == wi->inputs[1])
        return -1;
    const af_tensor_info_t *zi = af_graph_tensor(g, wi->outputs[0]);
    if (zi->bytes != yi->bytes || zi->dtype != AF_DTYPE_F32)
        return -1;
    *other = wi->inputs[wi->inputs[0] == y ? 1 : 0];
    return w;
}

/* Node u absorbs the Add w after it: w's output becomes u's output 0. */
static void absorb_add(fuse_t *f, int32_t u, int32_t w)
{
    const af_node_info_t *wi = af_graph_node(f->g, w);
    fnode_t *fu = &f->fn[u];
    f->dead_t[out0(f, u)] = 1;
    fu->out0 = wi->outputs[0];
    fu->cost += wi->cost > 0 ? wi->cost : 0;
    f->dead_n[w] = 1;
    for (int32_t j = 1; j < wi->n_outputs; j++)
        f->dead_t[wi->outputs[j]] = 1;
}

/* Constant c (f32, count elements) broadcast against tensor y varies along axis `axis` of y
 * only: its shape, aligned right, is 1 everywhere else and y's size there. */
static int along_axis(const af_graph_t *g, int32_t c, int32_t y, int32_t axis, int64_t count)
{
    const af_tensor_info_t *ci = af_graph_tensor(g, c), *yi = af_graph_tensor(g, y);
    if (ci->kind != AF_TENSOR_CONSTANT || ci->dtype != AF_DTYPE_F32 || ci->bytes != count * 4 ||
        ci->rank > yi->rank || axis < 0 || axis >= yi->rank || yi->shape[axis] != count)
        return 0;
    for (int32_t d = 0; d < ci->rank; d++) {
        int32_t yd = yi->rank - ci->rank + d;
        if (ci->shape[d] != (yd == axis ? count : 1))
            return 0;
    }
    return ci->rank >= yi->rank - axis; /* a shorter shape would align elsewhere */
}

/* Conv u: the per-channel constant c joins its bias, computed into a new constant (or, for the
 * zoo's weights without data, a structural one). 0, 1 when the data do not allow it, or
 * AF_ENOMEM. */
static int conv_bias(fuse_t *f, int32_t u, int32_t c, int64_t C)
{
    const af_graph_t *g = f->g;
    const af_node_info_t *ui = af_graph_node(g, u);
    fnode_t *fu = &f->fn[u];
    const float *cd = f32_const(g, c, C);
    newc_t *nb = fu->b >= 0 ? &f->nc[fu->b] : NULL;
    const float *old = !nb && ui->n_inputs == 3 ? f32_const(g, ui->inputs[2], C) : NULL;
    int old_data = nb ? nb->data != NULL : ui->n_inputs == 3 ? old != NULL : cd != NULL;
    if (!nb && ui->n_inputs == 3 && !old && !f32_const_nodata(g, ui->inputs[2], C))
        return 1; /* a bias that is no constant of C floats */
    if (old_data != (cd != NULL))
        return 1; /* data on one side only */
    if (!nb) {
        const char *base = ui->n_inputs == 3 ? af_graph_tensor(g, ui->inputs[2])->name : "bias";
        f->with_data = cd != NULL;
        if (!(nb = new_const(f, -1, base, ui->name, C)))
            return AF_ENOMEM;
        for (int64_t o = 0; cd && o < C; o++)
            nb->data[o] = old ? old[o] : 0.0f;
        fu->b = (int32_t)(nb - f->nc);
    }
    for (int64_t o = 0; cd && o < C; o++)
        nb->data[o] += cd[o];
    return 0;
}

/* A constant bias Add after node u: into a Conv's bias (per channel), or into a MatMul along its
 * last axis as input 2 (attribute fused_bias; oneDNN's matmul bias, PyTorch's Linear). */
static int try_bias(fuse_t *f, int32_t u)
{
    const af_graph_t *g = f->g;
    const af_node_info_t *ui = af_graph_node(g, u);
    int conv = !strcmp(ui->op, "Conv"), mm = !strcmp(ui->op, "MatMul");
    int32_t c, w;
    if ((!conv && !mm) || ui->n_inputs < 2 || ui->n_inputs > (conv ? 3 : 2) || f->fn[u].aff >= 0 ||
        (w = add_partner(f, u, &c)) < 0)
        return 0;
    int32_t y = out0(f, u);
    const af_tensor_info_t *yi = af_graph_tensor(g, y), *wt = af_graph_tensor(g, ui->inputs[1]);
    if (conv) {
        int64_t C = wt->rank >= 1 ? wt->shape[0] : 0;
        if (C <= 0 || yi->rank < 3 || !along_axis(g, c, y, 1, C))
            return 0;
        int rc = conv_bias(f, u, c, C);
        if (rc)
            return rc > 0 ? 0 : rc;
    } else {
        if (yi->rank < 1 || wt->rank < 2 ||
            !along_axis(g, c, y, yi->rank - 1, yi->shape[yi->rank - 1]))
            return 0;
        f->fn[u].bias = c;
    }
    absorb_add(f, u, w);
    f->rep.biases++;
    return 0;
}

/* Conv (with bias), MatMul or Gemm (with C) u whose output only feeds Add(y, s) or Add(s, y), s
 * an activation of y's shape: s becomes the last input, added to the product, and the output may
 * take s's bytes in place (oneDNN's sum post-op). No cycle can appear: every path from u runs
 * through y, whose one reader is the Add, so s does not depend on u. */
static void try_sum(fuse_t *f, int32_t u)
{
    const af_graph_t *g = f->g;
    const af_node_info_t *ui = af_graph_node(g, u);
    int bias = ui->n_inputs == 3 || f->fn[u].b >= 0; /* a folded BatchNormalization gave one */
    int ok = !strcmp(ui->op, "Conv")     ? ui->n_inputs <= 3 && bias
             : !strcmp(ui->op, "MatMul") ? ui->n_inputs == 2
             : !strcmp(ui->op, "Gemm")   ? ui->n_inputs == 3
                                         : 0;
    int32_t s, w;
    if (!ok || (w = add_partner(f, u, &s)) < 0)
        return;
    const af_tensor_info_t *yi = af_graph_tensor(g, out0(f, u)), *si = af_graph_tensor(g, s);
    if (si->kind == AF_TENSOR_CONSTANT || si->dtype != AF_DTYPE_F32 || si->bytes != yi->bytes ||
        si->rank != yi->rank)
        return;
    for (int32_t d = 0; d < yi->rank; d++)
        if (si->shape[d] != yi->shape[d])
            return;
    for (int32_t j = 0; j < ui->n_inputs; j++)
        if (ui->inputs[j] == s) /* the output may take s's bytes: the node must not read it */
            return;
    f->fn[u].sum = s;
    absorb_add(f, u, w);
    f->rep.sums++;
}

/* ---- unary chains ------------------------------------------------------------------------ */

/* Node u absorbs the unary ops that follow its output 0 while they may. */
static void try_chain(fuse_t *f, int32_t u)
{
    const af_graph_t *g = f->g;
    const af_node_info_t *ui = af_graph_node(g, u);
    if (!strncmp(ui->op, "Swap", 4) || ui->n_outputs < 1)
        return;
    fnode_t *fu = &f->fn[u];
    for (;;) {
        int32_t y = out0(f, u);
        const af_tensor_info_t *yi = af_graph_tensor(g, y);
        if (fu->n_post == MAX_POST || yi->n_consumers != 1)
            return;
        int32_t w = yi->consumers[0];
        double a, b;
        if (!foldable(f, y, w) || unary_params(g, w, &a, &b))
            return;
        const af_node_info_t *wi = af_graph_node(g, w);
        if (af_graph_tensor(g, wi->outputs[0])->dtype != AF_DTYPE_F32 ||
            af_graph_tensor(g, wi->outputs[0])->bytes != yi->bytes)
            return;
        fu->post[fu->n_post] = strcmp(wi->op, "Relu6") ? wi->op : "Clip";
        fu->alpha[fu->n_post] = a;
        fu->beta[fu->n_post++] = b;
        fu->out0 = wi->outputs[0];
        fu->cost += wi->cost > 0 ? wi->cost : 0;
        f->dead_n[w] = 1;
        f->dead_t[y] = 1;
        for (int32_t k = 1; k < wi->n_outputs; k++)
            f->dead_t[wi->outputs[k]] = 1; /* the absorbed node's scratch */
        f->rep.post_ops++;
    }
}

/* Constants that only dead or refolded nodes read become dead too. */
static void drop_unread_constants(fuse_t *f)
{
    for (int32_t t = 0; t < f->nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(f->g, t);
        if (ti->kind != AF_TENSOR_CONSTANT || ti->n_consumers == 0)
            continue;
        int read = 0;
        for (int32_t k = 0; k < ti->n_consumers && !read; k++) {
            int32_t c = ti->consumers[k];
            const af_node_info_t *ci = af_graph_node(f->g, c);
            if (f->dead_n[c])
                continue;
            for (int32_t j = 0; j < ci->n_inputs && !read; j++)
                read = ci->inputs[j] == t &&
                       !((j == 1 && f->fn[c].w >= 0) || (j == 2 && f->fn[c].b >= 0));
        }
        f->dead_t[t] = !read;
    }
    for (int32_t v = 0; v < f->nn; v++)
        if (!f->dead_n[v] && f->fn[v].bias >= 0)
            f->dead_t[f->fn[v].bias] = 0; /* a MatMul's fused bias */
}

/* ---- the fused graph ---------------------------------------------------------------------- */

static int add_tensors(const fuse_t *f, af_graph_t *ng, af_error_t *err)
{
    const af_graph_t *g = f->g;
    for (int32_t t = 0; t < f->nt; t++) {
        if (f->dead_t[t])
            continue;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        af_tensor_desc_t d = af_graph_tensor_desc(g, t);
        int32_t id;
        int rc = af_graph_add_tensor(ng, &d, &id, err);
        if (!rc && ti->data)
            rc = af_graph_share_data(ng, id, g, t, err);
        if (!rc && ti->dynamic_reason)
            rc = af_graph_set_dynamic_reason(ng, id, ti->dynamic_reason, err);
        if (rc)
            return rc;
    }
    for (int32_t i = 0; i < f->n_nc; i++) {
        const newc_t *c = &f->nc[i];
        af_tensor_desc_t d = {.name = c->name,
                              .bytes = c->count * 4,
                              .dtype = AF_DTYPE_F32,
                              .rank = c->rank,
                              .shape = c->shape,
                              .kind = AF_TENSOR_CONSTANT};
        int32_t id;
        int rc = af_graph_add_tensor(ng, &d, &id, err);
        if (!rc && c->data)
            rc = af_graph_set_data(ng, id, c->data, c->count * 4, AF_DATA_COPY, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* The fused_post / fused_alpha / fused_beta attributes of node id (source node v). */
static int add_post_attrs(const fnode_t *fv, af_graph_t *ng, int32_t id, af_error_t *err)
{
    char ops[MAX_POST * 16] = "";
    size_t len = 0;
    for (int32_t i = 0; i < fv->n_post; i++)
        len += (size_t)snprintf(ops + len, sizeof ops - len, "%s%s", i ? "," : "", fv->post[i]);
    af_attr_t a[3] = {
        {.name = "fused_post", .type = AF_ATTR_STRING, .s = ops},
        {.name = "fused_alpha", .type = AF_ATTR_FLOATS, .floats = fv->alpha, .n = fv->n_post},
        {.name = "fused_beta", .type = AF_ATTR_FLOATS, .floats = fv->beta, .n = fv->n_post}};
    for (int i = 0; i < 3; i++) {
        int rc = af_graph_node_set_attr(ng, id, &a[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

static int add_node(const fuse_t *f, af_graph_t *ng, int32_t v, const char **names, af_error_t *err)
{
    const af_graph_t *g = f->g;
    const af_node_info_t *ni = af_graph_node(g, v);
    const fnode_t *fv = &f->fn[v];
    const char **in = names, **out = names + ni->n_inputs + 4; /* bias, s, t, sum */
    int32_t n_in = ni->n_inputs;
    for (int32_t k = 0; k < ni->n_inputs; k++)
        in[k] = af_graph_tensor(g, ni->inputs[k])->name;
    if (fv->w >= 0)
        in[1] = f->nc[fv->w].name;
    if (fv->b >= 0) {
        in[2] = f->nc[fv->b].name;
        n_in = n_in < 3 ? 3 : n_in;
    }
    int32_t aff_at = n_in;
    if (fv->aff >= 0) { /* the folded BatchNormalization's s and t, after the bias */
        in[n_in++] = f->nc[fv->aff].name;
        in[n_in++] = f->nc[fv->aff + 1].name;
    }
    if (fv->bias >= 0) /* a MatMul's input 2 */
        in[n_in++] = af_graph_tensor(g, fv->bias)->name;
    int32_t bias_at = n_in - 1;
    if (fv->sum >= 0) /* the last input (after X, W, B), output 0 may take its bytes */
        in[n_in++] = af_graph_tensor(g, fv->sum)->name;
    for (int32_t k = 0; k < ni->n_outputs; k++)
        out[k] = af_graph_tensor(g, ni->outputs[k])->name;
    if (fv->out0 >= 0)
        out[0] = af_graph_tensor(g, fv->out0)->name;
    af_inplace_t hints[AF__FUSE_MAX_HINTS];
    int32_t n_hints = ni->n_inplace < AF__FUSE_MAX_HINTS - 1 ? ni->n_inplace : 0;
    if (n_hints)
        memcpy(hints, ni->inplace, (size_t)n_hints * sizeof(*hints));
    if (fv->sum >= 0)
        hints[n_hints++] = (af_inplace_t){.output = 0, .input = n_in - 1};
    af_node_desc_t d = {.name = ni->name,
                        .op = ni->op,
                        .inputs = in,
                        .n_inputs = n_in,
                        .outputs = out,
                        .n_outputs = ni->n_outputs,
                        .cost = fv->cost,
                        .inplace = fv->sum >= 0 ? hints : ni->inplace,
                        .n_inplace = fv->sum >= 0 ? n_hints : ni->n_inplace};
    int32_t id;
    int rc = af_graph_add_node(ng, &d, &id, err);
    for (int32_t k = 0; !rc && k < ni->n_attrs; k++)
        rc = af_graph_node_set_attr(ng, id, &ni->attrs[k], err);
    af_attr_t sa = {.name = "fused_sum", .type = AF_ATTR_INT, .i = n_in - 1};
    if (!rc && fv->sum >= 0)
        rc = af_graph_node_set_attr(ng, id, &sa, err);
    af_attr_t ba = {.name = "fused_bias", .type = AF_ATTR_INT, .i = bias_at};
    if (!rc && fv->bias >= 0)
        rc = af_graph_node_set_attr(ng, id, &ba, err);
    af_attr_t aa = {.name = "fused_affine", .type = AF_ATTR_INT, .i = aff_at};
    if (!rc && fv->aff >= 0)
        rc = af_graph_node_set_attr(ng, id, &aa, err);
    if (!rc && fv->n_post)
        rc = add_post_attrs(fv, ng, id, err);
    return rc;
}

static int build(const fuse_t *f, af_graph_t **out, af_error_t *err)
{
    const af_graph_t *g = f->g;
    af_graph_t *ng = NULL;
    int32_t most = 4;
    for (int32_t v = 0; v < f->nn; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        most = ni->n_inputs + ni->n_outputs + 6 > most ? ni->n_inputs + ni->n_outputs + 6 : most;
    }
    const char **names = af__calloc((size_t)most, sizeof(char *));
    int rc = names ? af_graph_create(&ng) : AF_ENOMEM;
    if (!rc && af_graph_name(g))
        rc = af_graph_set_name(ng, af_graph_name(g));
    if (!rc)
        rc = add_tensors(f, ng, err);
    for (int32_t v = 0; !rc && v < f->nn; v++)
        if (!f->dead_n[v])
            rc = add_node(f, ng, v, names, err);
    if (!rc)
        rc = af_graph_finalize(ng, err);
    af__free(names);
    if (rc == AF_ENOMEM)
        af__err(err, rc, "out of memory fusing the graph");
    if (rc) {
        af_graph_destroy(ng);
        return rc;
    }
    *out = ng;
    return 0;
}

static void free_fuse(fuse_t *f)
{
    for (int32_t i = 0; f->nc && i < f->n_nc; i++)
        af__free(f->nc[i].data);
    af__free(f->nc);
    af__free(f->fn);
    af__free(f->dead_t);
    af__free(f->dead_n);
    af__free(f->has_view);
}

static int fuse_init(fuse_t *f, const af_graph_t *g)
{
    f->g = g;
    f->nt = af_graph_tensor_count(g);
    f->nn = af_graph_node_count(g);
    f->dead_t = af__calloc((size_t)f->nt + 1, 1);
    f->has_view = af__calloc((size_t)f->nt + 1, 1);
    f->dead_n = af__calloc((size_t)f->nn + 1, 1);
    f->fn = af__calloc((size_t)f->nn + 1, sizeof(fnode_t));
    f->nc = af__calloc((size_t)f->nn * 3 + 1, sizeof(newc_t));
    if (!f->dead_t || !f->has_view || !f->dead_n || !f->fn || !f->nc)
        return AF_ENOMEM;
    for (int32_t t = 0; t < f->nt; t++)
        if (af_graph_tensor(g, t)->alias_of >= 0)
            f->has_view[af_graph_tensor(g, t)->alias_of] = 1;
    for (int32_t v = 0; v < f->nn; v++) {
        f->fn[v].out0 = f->fn[v].aff = f->fn[v].w = f->fn[v].b = f->fn[v].sum = f->fn[v].bias = -1;
        f->fn[v].cost = af_graph_node(g, v)->cost;
    }
    return 0;
}

int af__plan_fuse_with(const af_graph_t *g, const af_plan_opts_t *opts, af_graph_t **out,
                       af_fuse_report_t *rep, af_error_t *err)
{
    if (!g || !out || !af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "af_plan_fuse: %s",
                       !g || !out ? "NULL argument" : "graph is not finalized");
    fuse_t f;
    memset(&f, 0, sizeof f);
    f.weights = opts && opts->fuse_bn == AF_FUSE_BN_WEIGHTS;
    int rc = fuse_init(&f, g);
    const int32_t *order = af_graph_input_order(g);
    for (int32_t i = 0; !rc && i < f.nn; i++)
        if (!f.dead_n[order[i]])
            rc = try_bn(&f, order[i]);
    for (int32_t i = 0; !rc && i < f.nn; i++)
        if (!f.dead_n[order[i]])
            rc = try_bias(&f, order[i]);
    for (int32_t i = 0; !rc && i < f.nn; i++)
        if (!f.dead_n[order[i]])
            try_sum(&f, order[i]);
    for (int32_t i = 0; !rc && i < f.nn; i++)
        if (!f.dead_n[order[i]])
            try_chain(&f, order[i]);
    if (rc) {
        free_fuse(&f);
        return af__err(err, rc, "out of memory fusing the graph");
    }
    drop_unread_constants(&f);
    for (int32_t t = 0; t < f.nt; t++)
        if (f.dead_t[t] && af_graph_tensor(g, t)->kind == AF_TENSOR_INTERMEDIATE) {
            f.rep.removed_tensors++;
            f.rep.removed_bytes += (uint64_t)af_graph_tensor(g, t)->bytes;
        }
    f.rep.fused_nodes = f.rep.bn_folded + f.rep.biases + f.rep.sums + f.rep.post_ops;
    rc = build(&f, out, err);
    if (!rc && rep)
        *rep = f.rep;
    free_fuse(&f);
    return rc;
}

int af_plan_fuse(const af_graph_t *g, af_graph_t **out, af_fuse_report_t *rep, af_error_t *err)
{
    return af__plan_fuse_with(g, NULL, out, rep, err);
}
