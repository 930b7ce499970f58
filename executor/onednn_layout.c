/*
 * Layout propagation for the oneDNN set: which activation tensors live channels-last (NHWC,
 * NWC, NDHWC) instead of ONNX's plain NCHW order.
 *
 * oneDNN's direct convolutions (brgconv) read and write channels-last; on plain tensors only its
 * gemm path runs (3-4x slower), so a plain tensor costs a reorder into working memory and back
 * at every convolution. Propagating the layout keeps a whole run of Conv -> eltwise -> pooling
 * -> Conv channels-last with no reorder at all, and the planned sizes do not change (no
 * padding: channels-last has the bytes of plain).
 *
 * Rule. Tensors are grouped by the nodes that need their operands in one layout: an eltwise
 * node ties its input to its output (it runs on the flat buffer), a binary node ties the
 * operands of the output's shape to the output, BatchNormalization, Concat and Sum tie all.
 * A group goes channels-last when some member is read or written by a Conv, ConvTranspose or a
 * pooling node and no member is seen by anything that reads bytes in ONNX order: a node on the
 * reference kernels or an op that is not layout-aware, a view (Reshape...), a graph input or
 * output, a constant. Tensors whose two layouts are the same bytes (one channel, one
 * spatial element, one value everywhere: a ConstantOfShape's output or a constant of one
 * repeated element, e.g. the zeros a channel-padding Concat appends) never hold a group back.
 */
#include "executor/onednn_int.h"

#include <string.h>

enum { OP_OTHER = 0, OP_WINDOW, OP_TIE_FIRST, OP_TIE_SAME, OP_TIE_ALL };

static int op_kind(const char *op)
{
    static const char *const window[] = {"Conv",        "ConvTranspose",     "MaxPool",
                                         "AveragePool", "GlobalAveragePool", "GlobalMaxPool"};
    static const char *const first[] = {
        "Relu",      "LeakyRelu", "Sigmoid", "Tanh",  "Elu",        "Exp",
        "Log",       "Sqrt",      "Abs",     "Neg",   "Reciprocal", "Softplus",
        "HardSwish", "Mish",      "Gelu",    "Relu6", "Clip",       "BatchNormalization",
        "Pow"};
    static const char *const same[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
    for (size_t i = 0; i < AF_ARRAY_SIZE(window); i++)
        if (!strcmp(op, window[i]))
            return OP_WINDOW;
    for (size_t i = 0; i < AF_ARRAY_SIZE(first); i++)
        if (!strcmp(op, first[i]))
            return OP_TIE_FIRST;
    for (size_t i = 0; i < AF_ARRAY_SIZE(same); i++)
        if (!strcmp(op, same[i]))
            return OP_TIE_SAME;
    if (!strcmp(op, "Concat") || !strcmp(op, "Sum"))
        return OP_TIE_ALL;
    return OP_OTHER;
}

static int32_t find(int32_t *up, int32_t t)
{
    while (up[t] != t)
        t = up[t] = up[up[t]];
    return t;
}

static void unite(int32_t *up, int32_t a, int32_t b)
{
    a = find(up, a);
    b = find(up, b);
    if (a != b)
        up[a] = b;
}

/* Rank 3..5 with a static shape; *same = both layouts are the same bytes. */
static int spatial(const af_tensor_info_t *t, int *same)
{
    if (t->rank < 3 || t->rank > 5 || t->bytes < 0)
        return 0;
    int64_t sp = 1;
    for (int32_t i = 2; i < t->rank; i++)
        sp *= t->shape[i];
    *same = t->shape[1] == 1 || sp == 1;
    return 1;
}

typedef const void *(*const_fn)(void *, int32_t);

/* Constant t holds one value in every element (the zeros of a channel padding): the same bytes
 * in both layouts. Its bytes are the caller's (a session's, which may differ from the graph's),
 * or the graph's when the caller has none (lowering); a constant without graph data is not. */
static int uniform_constant(const af_graph_t *g, int32_t id, const_fn constant, void *cu)
{
    const af_tensor_info_t *t = af_graph_tensor(g, id);
    uint32_t es = af_dtype_size(t->dtype);
    if (t->kind != AF_TENSOR_CONSTANT)
        return 0;
    if (!t->data)
        return 0; /* no values: the session makes a pattern up */
    const uint8_t *d = constant ? constant(cu, id) : NULL;
    if (!d)
        d = t->data;
    if (!d || !es || t->bytes <= 0 || t->bytes % es)
        return 0;
    for (int64_t i = es; i < t->bytes; i += es)
        if (memcmp(d, d + i, es))
            return 0;
    return 1;
}

/* Input index of node v's fused residual (attribute fused_sum), or -1. */
static int32_t fused_sum(const af_graph_t *g, int32_t v)
{
    const af_attr_t *a = af_graph_node_attr(g, v, "fused_sum");
    return a && a->type == AF_ATTR_INT ? (int32_t)a->i : -1;
}

/* Whether input/output slot of node v may be channels-last (its kernel reads it so). */
static int slot_ok(const af_graph_t *g, int32_t v, int kind, int is_out, int32_t k)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    switch (kind) {
    case OP_WINDOW: /* and a fused residual (af_plan_fuse), read as the output is written */
        return is_out || k == 0 || (!is_out && k == fused_sum(g, v));
    case OP_TIE_FIRST:
        return is_out || k == 0;
    case OP_TIE_SAME: {
        const af_tensor_info_t *t = af_graph_tensor(g, is_out ? ni->outputs[k] : ni->inputs[k]);
        const af_tensor_info_t *y = af_graph_tensor(g, ni->outputs[0]);
        return is_out || (t->rank == y->rank && t->bytes == y->bytes);
    }
    case OP_TIE_ALL:
        return 1;
    default:
        return 0;
    }
}

/* Marks the groups a node holds back (blocked) or asks for (wanted), and ties its operands. */
static void visit(const af_graph_t *g, int32_t v, int on_set, int32_t *up, uint8_t *blocked,
                  uint8_t *wanted)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    int kind = on_set ? op_kind(ni->op) : OP_OTHER;
    for (int is_out = 0; is_out < 2; is_out++) {
        int32_t n = is_out ? ni->n_outputs : ni->n_inputs;
        for (int32_t k = 0; k < n; k++) {
            int32_t t = is_out ? ni->outputs[k] : ni->inputs[k];
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            int same = 0;
            if (ti->kind == AF_TENSOR_SCRATCH || !spatial(ti, &same))
                continue;
            if (is_out && !strcmp(ni->op, "ConstantOfShape"))
                same = 1; /* one value everywhere: the same bytes in both layouts */
            if (!slot_ok(g, v, kind, is_out, k)) {
                if (!same)
                    blocked[t] = 1;
                continue;
            }
            if (kind == OP_WINDOW && !same)
                wanted[t] = 1;
            if (kind >= OP_TIE_FIRST || (kind == OP_WINDOW && !is_out && k == fused_sum(g, v)))
                unite(up, t, ni->outputs[0]);
        }
    }
}

static int layouts(const af_graph_t *g, const uint8_t *on_set, const_fn constant, void *cu,
                   uint8_t *layout)
{
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    int32_t *up = af__malloc(((size_t)nt + 1) * sizeof(int32_t));
    uint8_t *blocked = af__calloc((size_t)nt + 1, 1), *wanted = af__calloc((size_t)nt + 1, 1);
    if (!up || !blocked || !wanted) {
        af__free(up);
        af__free(blocked);
        af__free(wanted);
        return AF_ENOMEM;
    }
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        int same = 0;
        up[t] = t;
        /* bytes read in ONNX order by the caller or through a view */
        if (spatial(ti, &same) && !same && !uniform_constant(g, t, constant, cu) &&
            (ti->kind != AF_TENSOR_INTERMEDIATE || ti->alias_of >= 0))
            blocked[t] = 1;
    }
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = af_graph_tensor(g, t)->alias_of >= 0 ? af_graph_alias_root(g, t) : -1;
        int same = 0;
        if (r >= 0 && spatial(af_graph_tensor(g, r), &same) && !same)
            blocked[r] = 1; /* the base of a view */
    }
    for (int32_t v = 0; v < nn; v++)
        visit(g, v, on_set[v], up, blocked, wanted);
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = find(up, t);
        blocked[r] |= blocked[t];
        wanted[r] |= wanted[t];
    }
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = find(up, t);
        layout[t] = wanted[r] && !blocked[r] ? AF__LAYOUT_CHANNELS_LAST : AF__LAYOUT_PLAIN;
    }
    af__free(up);
    af__free(blocked);
    af__free(wanted);
    return 0;
}

/* Channels-last strides for dims [N, C, spatial...]. */
void af__odn_channels_last(int nd, const dnnl_dims_t dims, dnnl_dims_t st)
{
    int64_t acc = dims[1] > 0 ? dims[1] : 1;
    st[1] = 1;
    for (int i = nd - 1; i >= 2; i--) {
        st[i] = acc;
        acc *= dims[i] > 0 ? dims[i] : 1;
    }
    st[0] = acc;
}

int af__odn_layouts(const af_graph_t *g, const uint8_t *on_set, const_fn constant, void *cu,
                    uint8_t *layout)
{
    return layouts(g, on_set, constant, cu, layout);
}
