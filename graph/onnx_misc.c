/*
 * ONNX importer — shape rules of the remaining ops the ONNX backend tests use: the losses
 * (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), GridSample, RoiAlign, MaxUnpool, Det,
 * the random ops (Bernoulli, RandomUniform/Normal and their *Like forms), the window and signal
 * ops (Hann/Hamming/BlackmanWindow, MelWeightMatrix, DFT, STFT), TfIdfVectorizer, CenterCropPad,
 * the training ops of domain ai.onnx.preview.training (Adagrad, Momentum, Adam), whose
 * outputs are shaped like the tensors they update; and TopK, OneHot, DepthToSpace/SpaceToDepth
 * (listed in onnx_shape.c's table).
 *
 * Reference: the ONNX operator specification (onnx/defs, opsets up to 18). As everywhere in the
 * importer, a dim is written only when it follows from known dims and values. Lookup:
 * af__onnx_rule_misc() and af__onnx_rule_training(). No state; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <string.h>

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define OUT(i) ((i) < c->n_out ? c->out[i] : NULL)
#define T(x) ONNX__TENSOR_PROTO__DATA_TYPE__##x

/* The scalar value of input i (a 1-element tensor with a known value), else -1 with a reason. */
static int64_t scalar_in(af__onnx_ctx_t *c, int i)
{
    const af__onnx_val_t *v = IN(i);
    if (!v || af__onnx_numel(v) != 1 || !af__onnx_vals_known(v)) {
        if (v)
            af__onnx_why(c, "the value of input '%s' is known only at run time", v->name);
        return -1;
    }
    return af__onnx_d2i(v->vals[0]);
}

static int attr_is(const Onnx__NodeProto *n, const char *name, const char *val, int dflt)
{
    const Onnx__AttributeProto *a = af__onnx_attr(n, name);
    if (!a || !a->has_s)
        return dflt;
    return a->s.len == strlen(val) && !memcmp(a->s.data, val, a->s.len);
}

/* Loss: "none" keeps the target's shape, "mean"/"sum" give a scalar; SCE's log_prob is scores'. */
static int rule_loss(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *target = IN(1);
    if (!x || !OUT(0))
        return 0;
    c->out[0]->elem = x->elem;
    if (attr_is(c->node, "reduction", "none", 0)) {
        if (target)
            af__onnx_copy_shape(c->out[0], target);
    } else {
        af__onnx_set_rank(c->out[0], 0);
    }
    if (OUT(1)) { /* SoftmaxCrossEntropyLoss log_prob */
        af__onnx_copy_shape(c->out[1], x);
        c->out[1]->elem = x->elem;
    }
    return 0;
}

/* GridSample(X [N,C,D...], grid [N,H...,r]) -> [N, C, H...]. */
static int rule_grid_sample(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *grid = IN(1);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 3 || !grid || grid->rank != x->rank)
        return 0;
    af__onnx_set_rank(o, x->rank);
    o->dims[0] = x->dims[0];
    o->dims[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++)
        o->dims[i] = grid->dims[i - 1];
    return 0;
}

/* RoiAlign(X [N,C,H,W], rois [R,4], batch_indices [R]) -> [R, C, output_height, output_width]. */
static int rule_roi_align(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *rois = IN(1);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    af__onnx_set_rank(o, 4);
    o->dims[0] = rois && rois->rank == 2 ? rois->dims[0] : -1;
    o->dims[1] = x->rank == 4 ? x->dims[1] : -1;
    o->dims[2] = af__onnx_attr_i(c->node, "output_height", 1);
    o->dims[3] = af__onnx_attr_i(c->node, "output_width", 1);
    return 0;
}

/* MaxUnpool(X, I, output_shape?): the given shape, or (in - 1) * stride + kernel - pads. */
static int rule_max_unpool(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *shape = IN(2);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (shape) {
        int64_t d[AF__ONNX_RANK_MAX];
        int n = af__onnx_int_list(c, NULL, 2, d, AF__ONNX_RANK_MAX);
        if (n >= 0) {
            af__onnx_set_rank(o, n);
            memcpy(o->dims, d, (size_t)n * sizeof(int64_t));
        }
        return 0;
    }
    if (x->rank < 3)
        return 0;
    af__onnx_win_t wn = {.ns = x->rank - 2};
    int rc = af__onnx_read_window(c, NULL, &wn);
    if (rc)
        return rc > 0 ? 0 : rc;
    af__onnx_copy_shape(o, x);
    int ovf = 0;
    for (int i = 0; i < wn.ns; i++)
        if (x->dims[i + 2] >= 0) {
            int64_t v = af__onnx_mul(x->dims[i + 2] - 1, wn.s[i], &ovf);
            v = af__onnx_add(v, wn.k[i], &ovf);
            o->dims[i + 2] = af__onnx_sub(v, af__onnx_add(wn.p[i], wn.p[i + wn.ns], &ovf), &ovf);
        }
    return ovf ? AF__ONNX_OVERFLOW(c) : 0;
}

/* Det(X [..., M, M]) -> [...]. */
static int rule_det(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    c->out[0]->elem = x->elem;
    if (x->rank < 0)
        return 0;
    if (x->rank < 2)
        return af__onnx_node_err(c, AF_ESHAPE, "input rank %d, want >= 2", x->rank);
    af__onnx_copy_shape(c->out[0], x);
    c->out[0]->rank = x->rank - 2;
    return 0;
}

/* Bernoulli, Random*Like: x's shape, attribute dtype (default: x's type). RandomUniform/Normal:
 * the shape attribute, dtype default float. */
static int rule_random(af__onnx_ctx_t *c)
{
    if (!OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    const af__onnx_val_t *x = IN(0);
    if (x) {
        af__onnx_copy_shape(o, x);
        o->elem = (int32_t)af__onnx_attr_i(c->node, "dtype", x->elem);
        return 0;
    }
    int64_t d[AF__ONNX_RANK_MAX];
    int n = af__onnx_int_list(c, "shape", -1, d, AF__ONNX_RANK_MAX);
    o->elem = (int32_t)af__onnx_attr_i(c->node, "dtype", T(FLOAT));
    if (n >= 0) {
        af__onnx_set_rank(o, n);
        memcpy(o->dims, d, (size_t)n * sizeof(int64_t));
    }
    return 0;
}

/* Hann/Hamming/BlackmanWindow(size) -> [size]. */
static int rule_window_fn(af__onnx_ctx_t *c)
{
    if (!OUT(0))
        return 0;
    af__onnx_set_rank(c->out[0], 1);
    c->out[0]->dims[0] = scalar_in(c, 0);
    c->out[0]->elem = (int32_t)af__onnx_attr_i(c->node, "output_datatype", T(FLOAT));
    return 0;
}

/* MelWeightMatrix(num_mel_bins, dft_length, ...) -> [dft_length / 2 + 1, num_mel_bins]. */
static int rule_mel(af__onnx_ctx_t *c)
{
    if (!OUT(0))
        return 0;
    int64_t bins = scalar_in(c, 0), len = scalar_in(c, 1);
    af__onnx_set_rank(c->out[0], 2);
    c->out[0]->dims[0] = len >= 0 ? len / 2 + 1 : -1;
    c->out[0]->dims[1] = bins;
    c->out[0]->elem = (int32_t)af__onnx_attr_i(c->node, "output_datatype", T(FLOAT));
    return 0;
}

/* DFT(input [..., 1|2], dft_length?): the input's shape, last dim 2, the axis dim the DFT
 * length (onesided: length / 2 + 1). */
static int rule_dft(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 2)
        return 0;
    int axis, rc;
    if ((rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", 1), x->rank - 1, &axis)))
        return rc;
    af__onnx_copy_shape(o, x);
    o->dims[x->rank - 1] = 2;
    int64_t n = IN(1) ? scalar_in(c, 1) : x->dims[axis];
    if (n >= 0 && af__onnx_attr_i(c->node, "onesided", 0))
        n = n / 2 + 1;
    o->dims[axis] = n;
    return 0;
}

/* STFT(signal [B, L, 1|2], frame_step, window?, frame_length?) -> [B, frames, bins, 2]. */
static int rule_stft(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *win = IN(2);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    af__onnx_set_rank(o, 4);
    o->dims[3] = 2;
    if (x->rank != 3)
        return 0;
    o->dims[0] = x->dims[0];
    int64_t step = scalar_in(c, 1);
    int64_t len = IN(3) ? scalar_in(c, 3) : win && win->rank == 1 ? win->dims[0] : -1;
    if (step > 0 && len > 0 && x->dims[1] >= len)
        o->dims[1] = (x->dims[1] - len) / step + 1;
    if (len > 0)
        o->dims[2] = af__onnx_attr_i(c->node, "onesided", 1) ? len / 2 + 1 : len;
    return 0;
}

/* TfIdfVectorizer(X [B?, L]) -> [B?, max(ngram_indexes) + 1] floats. */
static int rule_tfidf(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    const Onnx__AttributeProto *ix = af__onnx_attr(c->node, "ngram_indexes");
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = T(FLOAT);
    if (x->rank != 1 && x->rank != 2)
        return 0;
    int64_t m = -1;
    for (size_t i = 0; ix && i < ix->n_ints; i++)
        m = ix->ints[i] > m ? ix->ints[i] : m;
    af__onnx_set_rank(o, x->rank);
    if (x->rank == 2)
        o->dims[0] = x->dims[0];
    o->dims[x->rank - 1] = ix ? m + 1 : -1;
    return 0;
}

/* CenterCropPad(input, shape, axes?): the input with the given dims on the given axes. */
static int rule_center_crop_pad(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0) || x->rank < 0)
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    int64_t d[AF__ONNX_RANK_MAX], ax[AF__ONNX_RANK_MAX];
    int n = af__onnx_int_list(c, NULL, 1, d, AF__ONNX_RANK_MAX);
    int na = af__onnx_int_list(c, "axes", -1, ax, AF__ONNX_RANK_MAX);
    af__onnx_copy_shape(o, x);
    if (n < 0 || (na >= 0 && na != n) || (na < 0 && n != x->rank)) {
        for (int i = 0; i < x->rank; i++)
            o->dims[i] = -1;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int a, rc;
        if ((rc = af__onnx_norm_axis(c, na >= 0 ? ax[i] : i, x->rank, &a)))
            return rc;
        o->dims[a] = d[i];
    }
    return 0;
}

/* TopK, OneHot, DepthToSpace/SpaceToDepth: dispatched from onnx_shape.c's table. */

int af__onnx_rule_topk(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x)
        return 0;
    for (int o = 0; o < c->n_out && o < 2; o++) {
        c->out[o]->elem = o ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : x->elem;
        if (x->rank < 0)
            continue;
        int axis, rc;
        if ((rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", -1), x->rank, &axis)))
            return rc;
        int64_t k[1];
        int n = af__onnx_int_list(c, "k", 1, k, 1);
        af__onnx_copy_shape(c->out[o], x);
        c->out[o]->dims[axis] = n == 1 ? k[0] : -1;
    }
    return 0;
}

int af__onnx_rule_onehot(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *idx = IN(0), *depth = IN(1), *vals = IN(2);
    if (!idx || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = vals ? vals->elem : 0;
    if (idx->rank < 0)
        return 0;
    int r = idx->rank + 1, axis, rc;
    if ((rc = af__onnx_check_rank(c, r)) ||
        (rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", -1), r, &axis)))
        return rc;
    af__onnx_set_rank(o, r);
    for (int i = 0, k = 0; i < r; i++)
        if (i != axis)
            o->dims[i] = idx->dims[k++];
    if (depth && af__onnx_numel(depth) == 1 && depth->vals && !isnan(depth->vals[0]))
        o->dims[axis] = depth->vals[0] >= 0 ? af__onnx_d2i(depth->vals[0]) : -1;
    else if (depth)
        af__onnx_why(c, "the value of input '%s' (depth) is known only at run time", depth->name);
    return 0;
}

int af__onnx_rule_depth_space(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 0)
        return 0;
    if (x->rank != 4)
        return af__onnx_node_err(c, AF_ESHAPE, "input rank %d, want 4", x->rank);
    int64_t b = af__onnx_attr_i(c->node, "blocksize", 0);
    if (b <= 0)
        return af__onnx_node_err(c, AF_ESHAPE, "blocksize must be positive");
    int to_space = !strcmp(c->node->op_type, "DepthToSpace"), ovf = 0;
    int64_t bb = af__onnx_mul(b, b, &ovf);
    af__onnx_set_rank(o, 4);
    o->dims[0] = x->dims[0];
    if (to_space) {
        o->dims[1] = x->dims[1] >= 0 && !ovf ? x->dims[1] / bb : -1;
        o->dims[2] = x->dims[2] >= 0 ? af__onnx_mul(x->dims[2], b, &ovf) : -1;
        o->dims[3] = x->dims[3] >= 0 ? af__onnx_mul(x->dims[3], b, &ovf) : -1;
    } else {
        o->dims[1] = x->dims[1] >= 0 ? af__onnx_mul(x->dims[1], bb, &ovf) : -1;
        o->dims[2] = x->dims[2] >= 0 ? x->dims[2] / b : -1;
        o->dims[3] = x->dims[3] >= 0 ? x->dims[3] / b : -1;
    }
    return ovf ? AF__ONNX_OVERFLOW(c) : 0;
}

static const struct {
    const char *op;
    af__onnx_rule_fn fn;
} rules[] = {
    {"NegativeLogLikelihoodLoss", rule_loss},
    {"SoftmaxCrossEntropyLoss", rule_loss},
    {"GridSample", rule_grid_sample},
    {"RoiAlign", rule_roi_align},
    {"MaxUnpool", rule_max_unpool},
    {"Det", rule_det},
    {"Bernoulli", rule_random},
    {"RandomUniformLike", rule_random},
    {"RandomNormalLike", rule_random},
    {"RandomUniform", rule_random},
    {"RandomNormal", rule_random},
    {"HannWindow", rule_window_fn},
    {"HammingWindow", rule_window_fn},
    {"BlackmanWindow", rule_window_fn},
    {"MelWeightMatrix", rule_mel},
    {"DFT", rule_dft},
    {"STFT", rule_stft},
    {"TfIdfVectorizer", rule_tfidf},
    {"CenterCropPad", rule_center_crop_pad},
};

af__onnx_rule_fn af__onnx_rule_misc(const char *op)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(rules); i++)
        if (!strcmp(rules[i].op, op))
            return rules[i].fn;
    return NULL;
}

/*
 * Adagrad(R, T, X..., G..., H...) -> X_new..., H_new...; Momentum(R, T, X..., G..., V...) ->
 * X_new..., V_new...; Adam(R, T, X..., G..., V..., H...) -> X_new..., V_new..., H_new...: output
 * k of group j is shaped like input 2 + j * n + k of the tensors being updated.
 */
static int rule_training(af__onnx_ctx_t *c)
{
    int groups = !strcmp(c->node->op_type, "Adam") ? 4 : 3; /* inputs after R, T */
    if (c->n_in < 2 || (c->n_in - 2) % groups)
        return 0;
    int n = (c->n_in - 2) / groups;
    for (int o = 0; o < c->n_out && o < (groups - 1) * n; o++) {
        int j = o / n, k = o % n;
        const af__onnx_val_t *src = IN(2 + (j == 0 ? 0 : j + 1) * n + k);
        if (src) {
            af__onnx_copy_shape(c->out[o], src);
            c->out[o]->elem = src->elem;
        }
    }
    return 0;
}

af__onnx_rule_fn af__onnx_rule_training(const char *op)
{
    if (!strcmp(op, "Adagrad") || !strcmp(op, "Momentum") || !strcmp(op, "Adam"))
        return rule_training;
    return NULL;
}

#endif /* AF_HAVE_ONNX */
