/*
 * oneDNN elementwise ops: the unary family on the eltwise primitive (one table row per ONNX op:
 * algorithm, alpha, beta, where the parameters come from), the binary ops on the binary
 * primitive with numpy broadcasting, Pow with a constant scalar exponent on eltwise pow, and Sum
 * of same-shaped inputs on the sum primitive.
 *
 * Unary ops run on the tensor as one flat vector, so they do not care about its layout. Binary:
 * oneDNN broadcasts only its second source, so the operand with the output's shape goes first;
 * when only the second ONNX operand has it, commutative ops swap and comparisons swap with
 * their mirror (a < b is b > a); Sub and Div with a broadcast first operand, and two broadcast
 * operands, are left to the reference kernel. Ops oneDNN 2.6 lacks (HardSigmoid, Erf, Round's
 * ONNX rounding, ...) are not in the table: the reference kernel runs them; so is Log, whose
 * oneDNN approximation is 1.4e-6 off at log(1) = 0 (ONNX's test wants 1e-7). oneDNN computes
 * integer arithmetic in f32 and saturates or rounds to nearest when it stores; ONNX wraps and
 * truncates, so integer tensors take arithmetic (unary, Add Sub Mul Div) to the reference.
 */
#include "executor/onednn_int.h"

#include <float.h>
#include <string.h>

/* Where an eltwise parameter comes from. */
enum { P_NONE = 0, P_CONST, P_ATTR, P_INPUT };

typedef struct unary_row {
    const char *op;
    dnnl_alg_kind_t alg;
    uint8_t a_from, b_from;
    float a, b;         /* P_CONST values, or the attribute's default */
    const char *a_attr; /* P_ATTR: attribute name (P_INPUT: attribute before opset 11) */
    const char *b_attr;
} unary_row_t;

static const unary_row_t unary_rows[] = {
    {.op = "Relu", .alg = dnnl_eltwise_relu},
    {.op = "LeakyRelu", .alg = dnnl_eltwise_relu, .a_from = P_ATTR, .a = 0.01f, .a_attr = "alpha"},
    {.op = "Sigmoid", .alg = dnnl_eltwise_logistic},
    {.op = "Tanh", .alg = dnnl_eltwise_tanh},
    {.op = "Elu", .alg = dnnl_eltwise_elu, .a_from = P_ATTR, .a = 1.0f, .a_attr = "alpha"},
    {.op = "Exp", .alg = dnnl_eltwise_exp},
    {.op = "Sqrt", .alg = dnnl_eltwise_sqrt},
    {.op = "Abs", .alg = dnnl_eltwise_abs},
    {.op = "Neg", .alg = dnnl_eltwise_linear, .a_from = P_CONST, .a = -1.0f},
    {.op = "Reciprocal",
     .alg = dnnl_eltwise_pow,
     .a_from = P_CONST,
     .a = 1.0f,
     .b_from = P_CONST,
     .b = -1.0f},
    {.op = "Softplus", .alg = dnnl_eltwise_soft_relu},
    {.op = "HardSwish", .alg = dnnl_eltwise_hardswish},
    {.op = "Mish", .alg = dnnl_eltwise_mish},
    {.op = "Gelu", .alg = dnnl_eltwise_gelu_erf}, /* approximate="tanh": gelu_tanh, below */
    {.op = "Relu6", .alg = dnnl_eltwise_clip_v2, .a_from = P_CONST, .b_from = P_CONST, .b = 6},
    {.op = "Clip",
     .alg = dnnl_eltwise_clip_v2,
     .a_from = P_INPUT,
     .a = -FLT_MAX,
     .a_attr = "min",
     .b_from = P_INPUT,
     .b = FLT_MAX,
     .b_attr = "max"},
};

/* A parameter of a unary op (P_INPUT: constant input `input`, else the old attribute). */
static int param(odn_build_t *b, uint8_t from, float def, const char *attr, int input, float *v)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    *v = def;
    if (from == P_ATTR || (from == P_INPUT && attr && af__odn_attr(b, attr)))
        *v = (float)af__odn_attr_f(b, attr, def);
    if (from == P_INPUT && input < ni->n_inputs)
        return af__odn_const_scalar(b, input, v);
    return 0;
}

static int is_float(af_dtype_t dt)
{
    return dt == AF_DTYPE_F32 || dt == AF_DTYPE_F16 || dt == AF_DTYPE_BF16;
}

/* Flat descriptors of input i and output 0 (same element count and dtype required). */
static int flat_io(odn_build_t *b, int32_t i, dnnl_memory_desc_t *x, dnnl_memory_desc_t *y)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    const af_tensor_info_t *tx = af_graph_tensor(b->in->g, ni->inputs[i]);
    const af_tensor_info_t *ty = af_graph_tensor(b->in->g, ni->outputs[0]);
    uint32_t es = af_dtype_size(ty->dtype);
    if (tx->bytes != ty->bytes || tx->dtype != ty->dtype || !es || tx->bytes <= 0)
        return af__odn_nosup(b, "input and output differ in size or dtype");
    if (!is_float(ty->dtype) && strcmp(ni->op, "Relu") && strcmp(ni->op, "Max") &&
        strcmp(ni->op, "Min"))
        return af__odn_nosup(b, "integer arithmetic (ONNX wraps, oneDNN saturates)");
    dnnl_dims_t d = {ty->bytes / es};
    int rc = af__odn_md_as(b, ni->inputs[i], 1, d, x);
    return rc ? rc : af__odn_md_as(b, ni->outputs[0], 1, d, y);
}

static int eltwise(odn_build_t *b, int32_t input, dnnl_alg_kind_t alg, float alpha, float beta)
{
    dnnl_memory_desc_t x, y;
    int rc = flat_io(b, input, &x, &y);
    if (rc)
        return rc;
    dnnl_eltwise_desc_t d;
    if (dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &x, alpha, beta) !=
        dnnl_success)
        return af__odn_nosup(b, "eltwise descriptor");
    dnnl_primitive_desc_t pd;
    if ((rc = af__odn_pd(b, &d, NULL, &pd)))
        return rc;
    odn_arg_t args[2] = {af__odn_arg(DNNL_ARG_SRC, ODN_IN, input, 0, &x),
                         af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, &y)};
    return af__odn_main(b, pd, 2, args);
}

int af__odn_unary(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    const unary_row_t *r = NULL;
    for (size_t i = 0; i < AF_ARRAY_SIZE(unary_rows) && !r; i++)
        if (!strcmp(unary_rows[i].op, ni->op))
            r = &unary_rows[i];
    if (!r || ni->n_inputs < 1 || ni->n_outputs < 1)
        return af__odn_nosup(b, "op %s", ni->op);
    dnnl_alg_kind_t alg = r->alg;
    /* The importer drops omitted optional inputs: Clip(X, max) cannot be told from
     * Clip(X, min), so two inputs are left to the reference kernel. */
    if (r->a_from == P_INPUT && ni->n_inputs == 2)
        return af__odn_nosup(b, "Clip with one bound input (min or max?)");
    if (!strcmp(ni->op, "Gelu")) {
        const af_attr_t *ap = af__odn_attr(b, "approximate");
        if (ap && ap->type == AF_ATTR_STRING && ap->s && !strcmp(ap->s, "tanh"))
            alg = dnnl_eltwise_gelu_tanh;
        else if (ap && (ap->type != AF_ATTR_STRING || !ap->s || strcmp(ap->s, "none")))
            return af__odn_nosup(b, "Gelu approximate attribute");
    }
    float alpha, beta;
    int rc = param(b, r->a_from, r->a, r->a_attr, 1, &alpha);
    if (!rc)
        rc = param(b, r->b_from, r->b, r->b_attr, 2, &beta);
    return rc ? rc : eltwise(b, 0, alg, alpha, beta);
}

/* ---- binary --------------------------------------------------------------------------------- */

typedef struct binary_row {
    const char *op;
    dnnl_alg_kind_t alg, swapped; /* swapped: the algorithm with the operands exchanged, or 0 */
} binary_row_t;

static const binary_row_t binary_rows[] = {
    {"Add", dnnl_binary_add, dnnl_binary_add},          {"Sub", dnnl_binary_sub, 0},
    {"Mul", dnnl_binary_mul, dnnl_binary_mul},          {"Div", dnnl_binary_div, 0},
    {"Max", dnnl_binary_max, dnnl_binary_max},          {"Min", dnnl_binary_min, dnnl_binary_min},
    {"Equal", dnnl_binary_eq, dnnl_binary_eq},          {"Greater", dnnl_binary_gt, dnnl_binary_lt},
    {"GreaterOrEqual", dnnl_binary_ge, dnnl_binary_le}, {"Less", dnnl_binary_lt, dnnl_binary_gt},
    {"LessOrEqual", dnnl_binary_le, dnnl_binary_ge},
};

/* Dims of input i padded with leading 1s to rank r; 1 when they broadcast to y. */
static int bcast_dims(odn_build_t *b, int32_t i, int r, const dnnl_dims_t y, dnnl_dims_t d,
                      int *same)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    int n;
    if (af__odn_shape(b, ni->inputs[i], &n, d) || n > r)
        return 0;
    int k = r - n;
    memmove(d + k, d, (size_t)n * sizeof(d[0]));
    for (int j = 0; j < k; j++)
        d[j] = 1;
    *same = 1;
    for (int j = 0; j < r; j++) {
        if (d[j] != y[j] && d[j] != 1)
            return 0;
        *same &= d[j] == y[j];
    }
    return 1;
}

/* A broadcast second operand whose bytes read the same in both layouts (one channel, or one
 * spatial element) is described channels-last when the first operand is: oneDNN's fast binary
 * kernels want matching layouts. */
static int match_layout(odn_build_t *b, int32_t t0, int32_t t1, int nd, const dnnl_dims_t d,
                        dnnl_memory_desc_t *md)
{
    const uint8_t *lay = b->in->layout;
    if (!lay || lay[t0] != AF__LAYOUT_CHANNELS_LAST || lay[t1] == AF__LAYOUT_CHANNELS_LAST ||
        nd < 3)
        return 0;
    int64_t sp = 1;
    for (int i = 2; i < nd; i++)
        sp *= d[i];
    if (d[1] != 1 && sp != 1)
        return 0; /* a plain operand with both: stays plain (correct, slower) */
    dnnl_dims_t st;
    af__odn_channels_last(nd, d, st);
    return dnnl_memory_desc_init_by_strides(md, nd, d, md->data_type, st) == dnnl_success
               ? 0
               : af__odn_nosup(b, "operand descriptor");
}

/* Pow with a constant scalar exponent: eltwise pow(x) = 1 * x^e. */
static int pow_op(odn_build_t *b)
{
    float e;
    int rc = af__odn_const_scalar(b, 1, &e);
    return rc ? rc : eltwise(b, 0, dnnl_eltwise_pow, 1.0f, e);
}

int af__odn_binary(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (ni->n_inputs != 2 || ni->n_outputs < 1)
        return af__odn_nosup(b, "%s with %d inputs", ni->op, ni->n_inputs);
    if (!strcmp(ni->op, "Pow"))
        return pow_op(b);
    const binary_row_t *row = NULL;
    for (size_t i = 0; i < AF_ARRAY_SIZE(binary_rows) && !row; i++)
        if (!strcmp(binary_rows[i].op, ni->op))
            row = &binary_rows[i];
    int ny, rc;
    dnnl_dims_t dy, d0, d1;
    if (!row)
        return af__odn_nosup(b, "op %s", ni->op);
    if (row->alg == dnnl_binary_add || row->alg == dnnl_binary_sub || row->alg == dnnl_binary_mul ||
        row->alg == dnnl_binary_div) {
        const af_tensor_info_t *ty = af_graph_tensor(b->in->g, ni->outputs[0]);
        if (!is_float(ty->dtype))
            return af__odn_nosup(b, "integer %s (ONNX wraps and truncates)", ni->op);
    }
    if ((rc = af__odn_shape(b, ni->outputs[0], &ny, dy)))
        return rc;
    int s0, s1;
    if (!bcast_dims(b, 0, ny, dy, d0, &s0) || !bcast_dims(b, 1, ny, dy, d1, &s1))
        return af__odn_nosup(b, "operands do not broadcast to the output");
    int i0 = 0, i1 = 1;
    dnnl_alg_kind_t alg = row->alg;
    if (!s0) {
        if (!s1 || !row->swapped)
            return af__odn_nosup(b, "%s with a broadcast first operand", ni->op);
        i0 = 1, i1 = 0, alg = row->swapped;
    }
    dnnl_memory_desc_t a, c, y;
    int64_t n = 1, n1 = 1;
    for (int i = 0; i < ny; i++)
        n *= dy[i], n1 *= i1 ? d1[i] : d0[i];
    if (n1 == 1 || n1 == n) { /* a scalar or an equal-shaped operand: flat, any layout */
        dnnl_dims_t fy = {n}, f1 = {n1};
        ny = 1;
        memcpy(dy, fy, sizeof fy);
        memcpy(i0 ? d1 : d0, fy, sizeof fy);
        memcpy(i1 ? d1 : d0, f1, sizeof f1);
    }
    if ((rc = af__odn_md_as(b, ni->inputs[i0], ny, i0 ? d1 : d0, &a)) ||
        (rc = af__odn_md_as(b, ni->inputs[i1], ny, i1 ? d1 : d0, &c)) ||
        (rc = af__odn_md_as(b, ni->outputs[0], ny, dy, &y)))
        return rc;
    if ((rc = match_layout(b, ni->inputs[i0], ni->inputs[i1], ny, i1 ? d1 : d0, &c)))
        return rc;
    dnnl_binary_desc_t d;
    if (dnnl_binary_desc_init(&d, alg, &a, &c, &y) != dnnl_success)
        return af__odn_nosup(b, "binary descriptor");
    dnnl_primitive_desc_t pd;
    dnnl_primitive_attr_t attr; /* fused unary ops (af_plan_fuse) as eltwise post-ops */
    if ((rc = af__odn_post_attr(b, &attr)))
        return rc;
    rc = af__odn_pd(b, &d, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (rc)
        return rc;
    odn_arg_t args[3] = {af__odn_arg(DNNL_ARG_SRC_0, ODN_IN, i0, 0, &a),
                         af__odn_arg(DNNL_ARG_SRC_1, ODN_IN, i1, 0, &c),
                         af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, &y)};
    return af__odn_main(b, pd, 3, args);
}

int af__odn_sum(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (ni->n_inputs < 2 || ni->n_inputs > ODN_MAX_ARGS - 2 || ni->n_outputs < 1)
        return ni->n_inputs == 1 ? eltwise(b, 0, dnnl_eltwise_linear, 1.0f, 0.0f)
                                 : af__odn_nosup(b, "Sum of %d inputs", ni->n_inputs);
    dnnl_memory_desc_t x[ODN_MAX_ARGS], y;
    float scales[ODN_MAX_ARGS];
    int rc = 0;
    for (int32_t i = 0; i < ni->n_inputs && !rc; i++) {
        rc = flat_io(b, i, &x[i], &y);
        scales[i] = 1.0f;
    }
    if (rc)
        return rc;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_attr_t attr;
    if ((rc = af__odn_attr_create(b, &attr)))
        return rc;
    dnnl_status_t s =
        dnnl_sum_primitive_desc_create(&pd, &y, ni->n_inputs, scales, x, attr, b->ctx->eng);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return af__odn_nosup(b, "no sum primitive");
    odn_arg_t args[ODN_MAX_ARGS];
    for (int32_t i = 0; i < ni->n_inputs; i++)
        args[i] = af__odn_arg(DNNL_ARG_MULTIPLE_SRC + i, ODN_IN, i, 0, &x[i]);
    args[ni->n_inputs] = af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, &y);
    return af__odn_main(b, pd, ni->n_inputs + 1, args);
}

/* ---- fused unary post-ops (af_plan_fuse's fused_post attribute) ------------------------------ */

/* The eltwise algorithm of fused op i (af__post_t), appended to po; 0 when oneDNN lacks it. */
static int append_fused(dnnl_post_ops_t po, const af__post_t *pp, int32_t i)
{
    static const struct {
        const char *op;
        dnnl_alg_kind_t alg;
        int params; /* 0: none, 1: alpha, 2: alpha and beta */
    } rows[] = {{"Relu", dnnl_eltwise_relu, 0},
                {"LeakyRelu", dnnl_eltwise_relu, 1},
                {"Sigmoid", dnnl_eltwise_logistic, 0},
                {"Tanh", dnnl_eltwise_tanh, 0},
                {"Clip", dnnl_eltwise_clip_v2, 2},
                {"HardSwish", dnnl_eltwise_hardswish, 0},
                {"Gelu", dnnl_eltwise_gelu_erf, 0},
                {"Elu", dnnl_eltwise_elu, 1},
                {"Softplus", dnnl_eltwise_soft_relu, 0},
                {"Abs", dnnl_eltwise_abs, 0},
                {"Exp", dnnl_eltwise_exp, 0},
                {"Sqrt", dnnl_eltwise_sqrt, 0}};
    const char *op = pp->op[i];
    float a = (float)pp->a[i], b = (float)pp->b[i];
    if (!strcmp(op, "Neg"))
        return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, -1.0f, 0) ==
               dnnl_success;
    if (!strcmp(op, "HardSigmoid")) /* max(0, min(1, a x + b)): linear, then clip */
        return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, a, b) == dnnl_success &&
               dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0, 1) == dnnl_success;
    for (size_t k = 0; k < AF_ARRAY_SIZE(rows); k++)
        if (!strcmp(rows[k].op, op))
            return dnnl_post_ops_append_eltwise(po, 1.0f, rows[k].alg, rows[k].params ? a : 0,
                                                rows[k].params > 1 ? b : 0) == dnnl_success;
    return 0;
}

int af__odn_fused_post(odn_build_t *b, dnnl_post_ops_t po)
{
    af__post_t pp;
    b->post_fused = 0;
    if (b->no_post || af__post_parse(b->in->g, b->in->node, &pp, NULL) || (!pp.n && pp.sum < 0))
        return 0;
    int n0 = dnnl_post_ops_len(po);
    if (pp.sum >= 0 && dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success)
        return 0;
    for (int32_t i = 0; i < pp.n; i++)
        if (!append_fused(po, &pp, i))
            return 0; /* the caller drops po: the C loop applies them all (fused_post.c) */
    b->post_fused = dnnl_post_ops_len(po) > n0;
    return 0;
}

int af__odn_post_attr(odn_build_t *b, dnnl_primitive_attr_t *attr)
{
    int rc = af__odn_attr_create(b, attr);
    b->post_fused = 0;
    if (rc || b->no_post ||
        (!af_graph_node_attr(b->in->g, b->in->node, "fused_post") &&
         !af_graph_node_attr(b->in->g, b->in->node, "fused_sum")))
        return rc;
    dnnl_post_ops_t po = NULL;
    if (dnnl_post_ops_create(&po) != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        return af__err(b->err, AF_ENOMEM, "oneDNN: cannot create post-ops");
    }
    af__odn_fused_post(b, po);
    if (b->post_fused && dnnl_primitive_attr_set_post_ops(*attr, po) != dnnl_success)
        b->post_fused = 0;
    dnnl_post_ops_destroy(po);
    return 0;
}
