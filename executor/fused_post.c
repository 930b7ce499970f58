/*
 * Fused unary post-ops (planner/fuse.c, af_plan_fuse): a node with the attribute fused_post
 * ("Relu,Clip") and the parameter lists fused_alpha / fused_beta applies those ops, in order, on
 * its output 0 after its kernel ran — unless the kernel set's prepare put them into its
 * primitive (oneDNN eltwise post-ops, af__kprep_out_t.post_fused). The loop is one pass over the
 * f32 elements, in place, so the layout of the tensor does not matter. The math is the
 * reference kernels' (double, rounded to f32 once per op), so a fused plan on reference kernels
 * gives the unfused plan's values.
 *
 * Lock rule: none; af__post_run touches only the node's output.
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

int af__post_parse(const af_graph_t *g, int32_t v, af__post_t *out, af_error_t *err)
{
    memset(out, 0, sizeof *out);
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

int af__post_run(const af_graph_t *g, int32_t v, const af_kernel_args_t *a)
{
    af__post_t pp;
    if (af__post_parse(g, v, &pp, NULL))
        return AF_EINVAL;
    if (a->n_outputs < 1 || !a->outputs[0])
        return pp.n ? AF_EINVAL : 0;
    float *y = a->outputs[0];
    uint64_t n = a->output_bytes[0] / sizeof(float);
    post_op_t o[AF__POST_MAX];
    for (int32_t i = 0; i < pp.n; i++)
        o[i] = (post_op_t){pp.kind[i], pp.a[i], pp.b[i]};
    for (uint64_t e = 0; e < n; e++) {
        float x = y[e];
        for (int32_t i = 0; i < pp.n; i++)
            x = (float)apply(&o[i], x);
        y[e] = x;
    }
    return 0;
}
