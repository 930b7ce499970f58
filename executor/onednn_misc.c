/*
 * oneDNN pooling, Softmax/LogSoftmax, BatchNormalization, LayerNormalization,
 * InstanceNormalization, reductions, Concat, Transpose and Cast.
 *
 * Exactness rules (anything else falls back to the reference kernel):
 * - AveragePool with ceil_mode and count_include_pad: how ONNX counts the overhang is not
 *   oneDNN's rule; MaxPool with an Indices output.
 * - Softmax over one axis (the reference kernel's semantics).
 * - BatchNormalization in inference mode with its five constant inputs, as the per-channel
 *   affine y = (float)(x * s) + t (af__bn_affine): what a Conv with the folded affine computes.
 * - LayerNormalization normalises the dims from `axis` on: the tensor is seen as
 *   [outer, inner], oneDNN normalises the last dim.
 * - InstanceNormalization: batch normalisation with computed statistics on the tensor seen as
 *   [1, N*C, spatial] (mean and biased variance over the spatial dims, as ONNX), scale and bias
 *   repeated N times; the statistics go to working memory.
 * - Reductions with constant axes; ReduceL1/L2/SumSquare as oneDNN's Lp norms.
 * - Cast only where oneDNN's conversion is ONNX's (to f32/f16/bf16 from f32, f16, bf16, i8,
 *   u8, i32, bool): float to integer rounds differently, integer narrowing saturates.
 * - Transpose is a reorder to permuted strides.
 * - Resize (N and C kept, constant or output-derived scales): linear with half_pixel (or
 *   pytorch_half_pixel to more than one pixel) — oneDNN's linear resampling clamps at the edges
 *   as ONNX does; nearest for integer upscaling with half_pixel + round_prefer_floor/ceil or
 *   asymmetric + floor, where oneDNN's round((o + 0.5) / F - 0.5) is ONNX's pixel.
 */
#include "executor/onednn_int.h"

#include <math.h>
#include <string.h>

/* Reads an INTS attribute into v (at most max); returns the count or -1 when absent. */
static int attr_ints(odn_build_t *b, const char *name, int64_t *v, int max)
{
    const af_attr_t *a = af__odn_attr(b, name);
    if (!a || a->type != AF_ATTR_INTS || a->n > max)
        return -1;
    memcpy(v, a->ints, (size_t)a->n * sizeof(*v));
    return a->n;
}

static int io_shapes(odn_build_t *b, int *nx, dnnl_dims_t x, int *ny, dnnl_dims_t y)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (ni->n_inputs < 1 || b->n_out < 1)
        return af__odn_nosup(b, "%s needs an input and an output", ni->op);
    int rc = af__odn_shape(b, ni->inputs[0], nx, x);
    return rc ? rc : af__odn_shape(b, ni->outputs[0], ny, y);
}

/* The node's "axis" attribute (default def) made non-negative for rank n; AF_ENOTSUP when out
 * of range. */
static int get_axis(odn_build_t *b, int64_t def, int n, int64_t *axis)
{
    *axis = af__odn_attr_i(b, "axis", def);
    if (*axis < 0)
        *axis += n;
    return *axis >= 0 && *axis < n ? 0 : af__odn_nosup(b, "axis out of range");
}

/* Descriptors of input 0 and output 0 in their layouts. */
static int io_mds(odn_build_t *b, dnnl_memory_desc_t *mx, dnnl_memory_desc_t *my)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int rc = af__odn_md(b, ni->inputs[0], mx);
    return rc ? rc : af__odn_md(b, ni->outputs[0], my);
}

/* A one-primitive node: SRC = input 0, DST = output 0, with extra args. */
static int simple(odn_build_t *b, const void *desc, const dnnl_memory_desc_t *x,
                  const dnnl_memory_desc_t *y, int n_extra, const odn_arg_t *extra)
{
    dnnl_primitive_desc_t pd;
    int rc = af__odn_pd(b, desc, NULL, &pd);
    if (rc)
        return rc;
    odn_arg_t args[ODN_MAX_ARGS];
    int n = 0;
    args[n++] = af__odn_arg(DNNL_ARG_SRC, ODN_IN, 0, 0, x);
    for (int i = 0; i < n_extra; i++)
        args[n++] = extra[i];
    args[n++] = af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, y);
    return af__odn_main(b, pd, n, args);
}

int af__odn_pool(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int nx, ny, rc;
    dnnl_dims_t x, y;
    if ((rc = io_shapes(b, &nx, x, &ny, y)))
        return rc;
    int is_max = strstr(ni->op, "Max") != NULL, global = !strncmp(ni->op, "Global", 6);
    if (nx < 3 || nx > 5 || ny != nx || b->n_out > 1)
        return af__odn_nosup(b, "%s of rank %d or with Indices", ni->op, nx);
    odn_win_t w;
    memset(&w, 0, sizeof w);
    int ceil = (int)af__odn_attr_i(b, "ceil_mode", 0);
    int incl = (int)af__odn_attr_i(b, "count_include_pad", 0);
    if (global) {
        w.sp = nx - 2;
        for (int i = 0; i < w.sp; i++)
            w.k[i] = x[2 + i], w.s[i] = 1;
    } else if ((rc = af__odn_window(b, x, y, nx - 2, NULL, 0, ceil, &w))) {
        return rc;
    }
    if (!is_max && ceil && incl)
        return af__odn_nosup(b, "AveragePool with ceil_mode and count_include_pad");
    if (!is_max && af__odn_attr(b, "dilations"))
        for (int i = 0; i < w.sp; i++)
            if (w.d[i])
                return af__odn_nosup(b, "AveragePool with dilations");
    dnnl_memory_desc_t mx, my;
    if ((rc = io_mds(b, &mx, &my)))
        return rc;
    /* A one-pixel output reads the same in both layouts: described like a channels-last input,
     * oneDNN's jit pooling takes the node (mixed layouts go to its ref kernel, 10x slower). */
    const uint8_t *lay = b->in->layout;
    int64_t pixels = 1;
    for (int i = 2; i < ny; i++)
        pixels *= y[i];
    if (lay && lay[ni->inputs[0]] == AF__LAYOUT_CHANNELS_LAST &&
        lay[ni->outputs[0]] != AF__LAYOUT_CHANNELS_LAST && pixels == 1) {
        dnnl_dims_t st;
        af__odn_channels_last(ny, y, st);
        if (dnnl_memory_desc_init_by_strides(&my, ny, y, my.data_type, st) != dnnl_success)
            return af__odn_nosup(b, "pooling output descriptor");
    }
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max
                          : incl ? dnnl_pooling_avg_include_padding
                                 : dnnl_pooling_avg_exclude_padding;
    dnnl_pooling_v2_desc_t d;
    if (dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &mx, &my, w.s, w.k, w.d,
                                          w.pl, w.pr) != dnnl_success)
        return af__odn_nosup(b, "pooling descriptor");
    return simple(b, &d, &mx, &my, 0, NULL);
}

int af__odn_softmax(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int nx, ny, rc;
    dnnl_dims_t x, y;
    if ((rc = io_shapes(b, &nx, x, &ny, y)))
        return rc;
    int64_t axis;
    if ((rc = get_axis(b, -1, nx, &axis)))
        return rc;
    if (ny != nx)
        return af__odn_nosup(b, "softmax output rank");
    dnnl_memory_desc_t mx, my;
    if ((rc = io_mds(b, &mx, &my)))
        return rc;
    dnnl_softmax_v2_desc_t d;
    dnnl_alg_kind_t alg = strcmp(ni->op, "LogSoftmax") ? dnnl_softmax_accurate : dnnl_softmax_log;
    if (dnnl_softmax_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &mx, &my, (int)axis) !=
        dnnl_success)
        return af__odn_nosup(b, "softmax descriptor");
    return simple(b, &d, &mx, &my, 0, NULL);
}

/* 1-D descriptor [c] of input i (which must hold c elements). */
static int vec_md(odn_build_t *b, int32_t i, int64_t c, dnnl_memory_desc_t *md)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    const af_tensor_info_t *ti = af_graph_tensor(b->in->g, ni->inputs[i]);
    if (ti->bytes != c * (int64_t)af_dtype_size(ti->dtype) || ti->dtype != AF_DTYPE_F32)
        return af__odn_nosup(b, "input %d is not an f32 vector of %lld", i, (long long)c);
    dnnl_dims_t d = {c};
    return af__odn_md_as(b, ni->inputs[i], 1, d, md);
}

/* s and t of BatchNormalization (af__bn_affine) for c channels into st[0..c) and st[c..2c)
 * (zeros while querying). */
static int bn_affine(odn_build_t *b, int64_t c, float *st)
{
    const float *p[4];
    for (int i = 0; i < 4; i++)
        if (!af__odn_is_const(b, i + 1) || (!(p[i] = af__odn_const(b, i + 1)) && b->st))
            return af__odn_nosup(b, "BatchNormalization parameters must be constants");
    double eps = af__odn_attr_f(b, "epsilon", 1e-5);
    for (int64_t k = 0; k < c; k++)
        if (b->st)
            af__bn_affine(p[0][k], p[1][k], p[2][k], p[3][k], eps, &st[k], &st[c + k]);
        else
            st[k] = st[c + k] = 0.0f;
    return 0;
}

/* The post-ops of the BatchNormalization binary: + t, then the node's fused unary ops
 * (af__odn_fused_post; b->post_fused says whether they made it, else the C loop applies them). */
static int bn_post(odn_build_t *b, const dnnl_memory_desc_t *mc, dnnl_primitive_attr_t attr)
{
    af__post_t pp;
    int more = !af__post_parse(b->in->g, b->in->node, &pp, NULL) && pp.n > 0 && pp.sum < 0;
    b->post_fused = 0;
    for (int pass = more ? 0 : 1; pass < 2; pass++) {
        dnnl_post_ops_t po = NULL;
        int ok = dnnl_post_ops_create(&po) == dnnl_success &&
                 dnnl_post_ops_append_binary(po, dnnl_binary_add, mc) == dnnl_success;
        if (ok && !pass)
            af__odn_fused_post(b, po);
        ok = ok && (pass || b->post_fused) &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
        if (po)
            dnnl_post_ops_destroy(po);
        if (ok)
            return 0;
        b->post_fused = 0;
    }
    return af__odn_nosup(b, "binary post-op");
}

/* BatchNormalization (inference) as y = (float)(x * s) + t per channel: a binary multiply with
 * an add post-op, the two f32 operations of a Conv with the folded affine (af_plan_fuse), so
 * fused and unfused plans give the same floats; fused unary ops after it are post-ops too. */
int af__odn_batchnorm(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int nx, ny, rc;
    dnnl_dims_t x, y;
    if ((rc = io_shapes(b, &nx, x, &ny, y)))
        return rc;
    if (ni->n_inputs != 5 || b->n_out != 1 || nx < 2 || nx > 5 || ny != nx ||
        af__odn_attr_i(b, "training_mode", 0))
        return af__odn_nosup(b, "BatchNormalization other than inference with 5 inputs");
    dnnl_memory_desc_t mx, my, v, mc;
    for (int i = 0; i < 4; i++)
        if ((rc = vec_md(b, i + 1, x[1], &v)))
            return rc;
    dnnl_dims_t cd = {1, x[1], 1, 1, 1};
    static const dnnl_format_tag_t plain[] = {dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde};
    if ((rc = io_mds(b, &mx, &my)) ||
        dnnl_memory_desc_init_by_tag(&mc, nx, cd, dnnl_f32, plain[nx - 2]) != dnnl_success)
        return rc ? rc : af__odn_nosup(b, "per-channel descriptor");
    float *st = af__malloc((size_t)x[1] * 2 * sizeof(float));
    if (!st)
        return af__err(b->err, AF_ENOMEM, "out of memory");
    dnnl_binary_desc_t d;
    dnnl_primitive_attr_t attr = NULL;
    odn_arg_t args[4] = {af__odn_arg(DNNL_ARG_SRC_0, ODN_IN, 0, 0, &mx)};
    args[3] = af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, &my);
    uint64_t vb = (uint64_t)x[1] * sizeof(float);
    rc = bn_affine(b, x[1], st);
    if (!rc && dnnl_binary_desc_init(&d, dnnl_binary_mul, &mx, &mc, &my) != dnnl_success)
        rc = af__odn_nosup(b, "binary descriptor");
    if (!rc && !(rc = af__odn_attr_create(b, &attr)))
        rc = bn_post(b, &mc, attr);
    if (!rc && !(rc = af__odn_arg_data(b, DNNL_ARG_SRC_1, &mc, st, vb, &args[1])))
        rc = af__odn_arg_data(b, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, &mc, st + x[1],
                              vb, &args[2]);
    dnnl_primitive_desc_t pd = NULL;
    if (!rc)
        rc = af__odn_pd(b, &d, attr, &pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    af__free(st);
    if (rc) {
        for (int k = 1; k < 3; k++)
            if (args[k].fixed)
                dnnl_memory_destroy(args[k].fixed);
        return rc;
    }
    return af__odn_main(b, pd, 4, args);
}

int af__odn_layernorm(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int nx, ny, rc;
    dnnl_dims_t x, y;
    if ((rc = io_shapes(b, &nx, x, &ny, y)))
        return rc;
    int64_t axis;
    if ((rc = get_axis(b, -1, nx, &axis)))
        return rc;
    if (ni->n_inputs < 2 || ni->n_inputs > 3 || b->n_out != 1)
        return af__odn_nosup(b, "LayerNormalization inputs or extra outputs");
    dnnl_dims_t d2 = {1, 1};
    for (int i = 0; i < nx; i++)
        d2[i >= axis] *= x[i];
    dnnl_memory_desc_t mx, my, ms, mb;
    if ((rc = af__odn_md_as(b, ni->inputs[0], 2, d2, &mx)) ||
        (rc = af__odn_md_as(b, ni->outputs[0], 2, d2, &my)) || (rc = vec_md(b, 1, d2[1], &ms)) ||
        (ni->n_inputs > 2 && (rc = vec_md(b, 2, d2[1], &mb))))
        return rc;
    float eps = (float)af__odn_attr_f(b, "epsilon", 1e-5);
    unsigned flags = dnnl_use_scale | (ni->n_inputs > 2 ? dnnl_use_shift : 0);
    dnnl_layer_normalization_desc_t d;
    if (dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &mx, NULL, eps,
                                                   flags) != dnnl_success)
        return af__odn_nosup(b, "layer normalization descriptor");
    odn_arg_t extra[2] = {af__odn_arg(DNNL_ARG_SCALE, ODN_IN, 1, 0, &ms),
                          af__odn_arg(DNNL_ARG_SHIFT, ODN_IN, 2, 0, &mb)};
    return simple(b, &d, &mx, &my, ni->n_inputs > 2 ? 2 : 1, extra);
}

/* Scale or bias of InstanceNormalization repeated n times (a fixed argument). */
static int tiled(odn_build_t *b, int arg, int32_t i, int64_t c, int64_t n, odn_arg_t *out)
{
    dnnl_memory_desc_t v, t;
    dnnl_dims_t d = {c * n};
    int rc = vec_md(b, i, c, &v);
    if (rc || (rc = af__odn_md_as(b, af_graph_node(b->in->g, b->in->node)->inputs[i], 1, d, &t)))
        return rc;
    if (!af__odn_is_const(b, i))
        return af__odn_nosup(b, "InstanceNormalization scale and bias must be constants");
    const float *src = af__odn_const(b, i);
    if (!b->st) {
        *out = af__odn_arg(arg, ODN_FIXED, 0, 0, &t);
        return 0;
    }
    if (!src)
        return af__odn_nosup(b, "no constant data");
    float *buf = af__malloc((size_t)(c * n) * sizeof(float));
    if (!buf)
        return af__err(b->err, AF_ENOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++)
        memcpy(buf + k * c, src, (size_t)c * sizeof(float));
    rc = af__odn_arg_data(b, arg, &t, buf, (uint64_t)(c * n) * sizeof(float), out);
    af__free(buf);
    return rc;
}

int af__odn_instnorm(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int nx, ny, rc;
    dnnl_dims_t x, y;
    if ((rc = io_shapes(b, &nx, x, &ny, y)))
        return rc;
    if (ni->n_inputs != 3 || nx < 3)
        return af__odn_nosup(b, "InstanceNormalization needs X, scale, B of rank >= 3");
    dnnl_dims_t d3 = {1, x[0] * x[1], 1};
    for (int i = 2; i < nx; i++)
        d3[2] *= x[i];
    dnnl_memory_desc_t mx, my, st;
    dnnl_dims_t ds = {d3[1]};
    if ((rc = af__odn_md_as(b, ni->inputs[0], 3, d3, &mx)) ||
        (rc = af__odn_md_as(b, ni->outputs[0], 3, d3, &my)) ||
        (rc = af__odn_md_as(b, ni->outputs[0], 1, ds, &st)))
        return rc;
    float eps = (float)af__odn_attr_f(b, "epsilon", 1e-5);
    dnnl_batch_normalization_desc_t d;
    if (dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_training, &mx, eps,
                                                   dnnl_use_scale | dnnl_use_shift) != dnnl_success)
        return af__odn_nosup(b, "batch normalization descriptor");
    odn_arg_t extra[4];
    if ((rc = tiled(b, DNNL_ARG_SCALE, 1, x[1], x[0], &extra[0])))
        return rc;
    if ((rc = tiled(b, DNNL_ARG_SHIFT, 2, x[1], x[0], &extra[1]))) {
        if (extra[0].fixed)
            dnnl_memory_destroy(extra[0].fixed);
        return rc;
    }
    uint64_t sb = dnnl_memory_desc_get_size(&st);
    extra[2] = af__odn_arg(DNNL_ARG_MEAN, ODN_SCR, 0, af__odn_scratch(b, sb), &st);
    extra[3] = af__odn_arg(DNNL_ARG_VARIANCE, ODN_SCR, 0, af__odn_scratch(b, sb), &st);
    return simple(b, &d, &mx, &my, 4, extra);
}

typedef struct reduce_row {
    const char *op;
    dnnl_alg_kind_t alg;
    float p;
} reduce_row_t;

static const reduce_row_t reduce_rows[] = {
    {"ReduceMax", dnnl_reduction_max, 0},
    {"ReduceMin", dnnl_reduction_min, 0},
    {"ReduceSum", dnnl_reduction_sum, 0},
    {"ReduceMean", dnnl_reduction_mean, 0},
    {"ReduceProd", dnnl_reduction_mul, 0},
    {"ReduceL1", dnnl_reduction_norm_lp_sum, 1},
    {"ReduceL2", dnnl_reduction_norm_lp_sum, 2},
    {"ReduceSumSquare", dnnl_reduction_norm_lp_power_p_sum, 2},
};

/* Axes of a reduction: attribute, or constant input 1; *all when none are given. */
static int reduce_axes(odn_build_t *b, int nx, uint8_t *mask)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int64_t ax[DNNL_MAX_NDIMS];
    int n = attr_ints(b, "axes", ax, DNNL_MAX_NDIMS);
    if (n < 0 && ni->n_inputs > 1) {
        const af_tensor_info_t *ti = af_graph_tensor(b->in->g, ni->inputs[1]);
        if (!af__odn_is_const(b, 1) || ti->dtype != AF_DTYPE_I64 || ti->bytes / 8 > DNNL_MAX_NDIMS)
            return af__odn_nosup(b, "reduction axes must be a constant i64 tensor");
        n = (int)(ti->bytes / 8);
        const int64_t *d = af__odn_const(b, 1);
        if (!d && !b->in->query)
            return af__odn_nosup(b, "reduction axes: no constant data");
        for (int i = 0; i < n; i++)
            ax[i] = d ? d[i] : i; /* querying: any axes of that count size the same */
    }
    memset(mask, n > 0 ? 0 : 1, DNNL_MAX_NDIMS);
    if (n == 0 && af__odn_attr_i(b, "noop_with_empty_axes", 0))
        return af__odn_nosup(b, "noop_with_empty_axes");
    for (int i = 0; i < n; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + nx : ax[i];
        if (a < 0 || a >= nx)
            return af__odn_nosup(b, "reduction axis out of range");
        mask[a] = 1;
    }
    return 0;
}

int af__odn_reduce(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    const reduce_row_t *r = NULL;
    for (size_t i = 0; i < AF_ARRAY_SIZE(reduce_rows) && !r; i++)
        if (!strcmp(reduce_rows[i].op, ni->op))
            r = &reduce_rows[i];
    int nx, ny, rc;
    dnnl_dims_t x, y, dd;
    uint8_t mask[DNNL_MAX_NDIMS];
    if (!r)
        return af__odn_nosup(b, "op %s", ni->op);
    if ((rc = io_shapes(b, &nx, x, &ny, y)) || (rc = reduce_axes(b, nx, mask)))
        return rc;
    int64_t out = 1;
    for (int i = 0; i < nx; i++) {
        dd[i] = mask[i] ? 1 : x[i];
        out *= dd[i];
    }
    int64_t yn = 1;
    for (int i = 0; i < ny; i++)
        yn *= y[i];
    if (out != yn)
        return af__odn_nosup(b, "output size is not the reduction's");
    dnnl_memory_desc_t mx, my;
    if ((rc = af__odn_md(b, ni->inputs[0], &mx)) ||
        (rc = af__odn_md_as(b, ni->outputs[0], nx, dd, &my)))
        return rc;
    dnnl_reduction_desc_t d;
    dnnl_primitive_desc_t pd;
    if (dnnl_reduction_desc_init(&d, r->alg, &mx, &my, r->p, 0.0f) != dnnl_success)
        return af__odn_nosup(b, "reduction descriptor");
    if ((rc = af__odn_pd(b, &d, NULL, &pd)) || (rc = af__odn_ref_instead(b, &pd)))
        return rc;
    odn_arg_t args[2] = {af__odn_arg(DNNL_ARG_SRC, ODN_IN, 0, 0, &mx),
                         af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, &my)};
    return af__odn_main(b, pd, 2, args);
}

int af__odn_concat(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int ny, rc;
    dnnl_dims_t y;
    if (ni->n_inputs < 1 || ni->n_inputs > ODN_MAX_ARGS - 2 || b->n_out != 1)
        return af__odn_nosup(b, "Concat of %d inputs", ni->n_inputs);
    if ((rc = af__odn_shape(b, ni->outputs[0], &ny, y)))
        return rc;
    int64_t axis;
    if ((rc = get_axis(b, 0, ny, &axis)))
        return rc;
    dnnl_memory_desc_t mx[ODN_MAX_ARGS], my;
    for (int32_t i = 0; i < ni->n_inputs; i++)
        if ((rc = af__odn_md(b, ni->inputs[i], &mx[i])))
            return rc;
    if ((rc = af__odn_md(b, ni->outputs[0], &my)))
        return rc;
    dnnl_primitive_attr_t attr;
    if ((rc = af__odn_attr_create(b, &attr)))
        return rc;
    dnnl_primitive_desc_t pd;
    dnnl_status_t s =
        dnnl_concat_primitive_desc_create(&pd, &my, ni->n_inputs, (int)axis, mx, attr, b->ctx->eng);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return af__odn_nosup(b, "no concat primitive");
    odn_arg_t args[ODN_MAX_ARGS];
    for (int32_t i = 0; i < ni->n_inputs; i++)
        args[i] = af__odn_arg(DNNL_ARG_MULTIPLE_SRC + i, ODN_IN, i, 0, &mx[i]);
    args[ni->n_inputs] = af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, &my);
    return af__odn_main(b, pd, ni->n_inputs + 1, args);
}

/* A reorder node from (input 0, from) to (output 0, to). */
static int reorder_node(odn_build_t *b, const dnnl_memory_desc_t *from,
                        const dnnl_memory_desc_t *to)
{
    dnnl_primitive_attr_t attr;
    int rc = af__odn_attr_create(b, &attr);
    if (rc)
        return rc;
    dnnl_primitive_desc_t pd;
    dnnl_status_t s =
        dnnl_reorder_primitive_desc_create(&pd, from, b->ctx->eng, to, b->ctx->eng, attr);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return af__odn_nosup(b, "no reorder for these layouts or types");
    odn_arg_t args[2] = {af__odn_arg(DNNL_ARG_FROM, ODN_IN, 0, 0, from),
                         af__odn_arg(DNNL_ARG_TO, ODN_OUT, 0, 0, to)};
    return af__odn_step(b, pd, 2, args);
}

int af__odn_transpose(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int nx, ny, rc;
    dnnl_dims_t x, y;
    if ((rc = io_shapes(b, &nx, x, &ny, y)))
        return rc;
    int64_t perm[DNNL_MAX_NDIMS];
    int np = attr_ints(b, "perm", perm, DNNL_MAX_NDIMS);
    if (np < 0)
        for (int i = 0; i < nx; i++)
            perm[i] = nx - 1 - i, np = nx;
    uint8_t used[DNNL_MAX_NDIMS] = {0};
    if (np != nx || ny != nx || af_graph_tensor(b->in->g, ni->inputs[0])->rank != nx)
        return af__odn_nosup(b, "Transpose perm");
    for (int i = 0; i < nx; i++) {
        if (perm[i] < 0 || perm[i] >= nx || used[perm[i]] || y[i] != x[perm[i]])
            return af__odn_nosup(b, "Transpose perm");
        used[perm[i]] = 1;
    }
    dnnl_memory_desc_t from, to;
    if ((rc = af__odn_md(b, ni->inputs[0], &from)))
        return rc;
    /* the output's row-major strides, given to the input dims they come from */
    dnnl_dims_t st;
    int64_t acc = 1;
    for (int i = nx - 1; i >= 0; i--) {
        st[perm[i]] = acc;
        acc *= y[i];
    }
    if (dnnl_memory_desc_init_by_strides(&to, nx, x, from.data_type, st) != dnnl_success)
        return af__odn_nosup(b, "Transpose descriptor");
    return reorder_node(b, &from, &to);
}

int af__odn_cast(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (ni->n_inputs != 1 || b->n_out != 1)
        return af__odn_nosup(b, "Cast arity");
    af_dtype_t from = af_graph_tensor(b->in->g, ni->inputs[0])->dtype;
    af_dtype_t to = af_graph_tensor(b->in->g, ni->outputs[0])->dtype;
    int to_float = to == AF_DTYPE_F32 || to == AF_DTYPE_F16 || to == AF_DTYPE_BF16;
    if (!to_float && from != to)
        return af__odn_nosup(b, "Cast %s to %s", af_dtype_name(from), af_dtype_name(to));
    dnnl_memory_desc_t mx, my;
    int rc = af__odn_md(b, ni->inputs[0], &mx);
    return rc ? rc : (rc = af__odn_md(b, ni->outputs[0], &my)) ? rc : reorder_node(b, &mx, &my);
}

/* ---- Resize --------------------------------------------------------------------------------- */

static int attr_is(odn_build_t *b, const char *name, const char *def, const char *v)
{
    const af_attr_t *a = af__odn_attr(b, name);
    const char *s = a && a->type == AF_ATTR_STRING && a->s ? a->s : def;
    return !strcmp(s, v);
}

/* A constant f32 scales input must say what the output size says (ONNX transforms coordinates
 * with the given scale, oneDNN with output / input). */
static int scales_match(odn_build_t *b, int nx, const dnnl_dims_t x, const dnnl_dims_t y)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    for (int32_t i = 1; i < ni->n_inputs; i++) {
        const af_tensor_info_t *ti = af_graph_tensor(b->in->g, ni->inputs[i]);
        if (ti->dtype != AF_DTYPE_F32 || ti->bytes != 4 * nx)
            continue; /* roi (2 x rank) or sizes (i64) */
        if (!af__odn_is_const(b, i))
            return af__odn_nosup(b, "Resize scales computed at run time");
        const float *sc = af__odn_const(b, i);
        for (int k = 0; sc && k < nx; k++)
            if (fabsf(sc[k] - (float)y[k] / (float)x[k]) > 1e-6f * sc[k])
                return af__odn_nosup(b, "Resize scale %g is not output / input", (double)sc[k]);
    }
    return 0;
}

/* Nearest: integer upscaling, where oneDNN's round((o + 0.5) / F - 0.5) picks ONNX's pixel. */
static int nearest_ok(odn_build_t *b, int nx, const dnnl_dims_t x, const dnnl_dims_t y)
{
    int asym = attr_is(b, "coordinate_transformation_mode", "half_pixel", "asymmetric");
    int half = attr_is(b, "coordinate_transformation_mode", "half_pixel", "half_pixel") ||
               attr_is(b, "coordinate_transformation_mode", "half_pixel", "pytorch_half_pixel");
    int floor_mode = attr_is(b, "nearest_mode", "round_prefer_floor", "floor");
    int round_mode = attr_is(b, "nearest_mode", "round_prefer_floor", "round_prefer_floor") ||
                     attr_is(b, "nearest_mode", "round_prefer_floor", "round_prefer_ceil");
    if (!((asym && floor_mode) || (half && round_mode)))
        return af__odn_nosup(b, "Resize nearest with these coordinate/rounding modes");
    for (int i = 2; i < nx; i++)
        if (y[i] % x[i])
            return af__odn_nosup(b, "Resize nearest by a non-integer factor");
    return 0;
}

int af__odn_resize(odn_build_t *b)
{
    int nx, ny, rc;
    dnnl_dims_t x, y;
    if ((rc = io_shapes(b, &nx, x, &ny, y)))
        return rc;
    if (nx < 3 || nx > 5 || ny != nx || x[0] != y[0] || x[1] != y[1] ||
        af__odn_attr_i(b, "antialias", 0))
        return af__odn_nosup(b, "Resize of rank %d, of N or C, or antialiased", nx);
    int linear = attr_is(b, "mode", "nearest", "linear");
    if (!linear && !attr_is(b, "mode", "nearest", "nearest"))
        return af__odn_nosup(b, "Resize mode other than nearest and linear");
    int pytorch = attr_is(b, "coordinate_transformation_mode", "half_pixel", "pytorch_half_pixel");
    for (int i = 2; pytorch && i < nx; i++)
        if (y[i] == 1)
            return af__odn_nosup(b, "pytorch_half_pixel to one pixel");
    if (linear && !pytorch &&
        !attr_is(b, "coordinate_transformation_mode", "half_pixel", "half_pixel"))
        return af__odn_nosup(b, "Resize linear other than half_pixel");
    for (int i = 2; !linear && i < nx; i++)
        if (y[i] < x[i])
            return af__odn_nosup(b, "Resize nearest downscaling");
    if ((!linear && (rc = nearest_ok(b, nx, x, y))) || (rc = scales_match(b, nx, x, y)))
        return rc;
    dnnl_memory_desc_t mx, my;
    if ((rc = io_mds(b, &mx, &my)))
        return rc;
    dnnl_resampling_desc_t d;
    if (dnnl_resampling_forward_desc_init(&d, dnnl_forward_inference,
                                          linear ? dnnl_resampling_linear : dnnl_resampling_nearest,
                                          NULL, &mx, &my) != dnnl_success)
        return af__odn_nosup(b, "resampling descriptor");
    return simple(b, &d, &mx, &my, 0, NULL);
}
