/*
 * ONNX importer — static shape inference, one table row per op.
 *
 * Each rule reads its inputs' element types, ranks and dims (and, for shape-computing inputs
 * such as Reshape's target or Slice's starts, their folded values) and writes its outputs'.
 * Rules follow ONNX's own inference (onnx/defs, release 1.12) so the results can be compared
 * with `onnx.shape_inference.infer_shapes(data_prop=True)`: a dim is written only when it
 * follows from known dims and values; otherwise it stays -1 (unknown) and the tensor becomes
 * dynamic. A contradiction between inputs (broadcasting mismatch, Concat ranks that differ...)
 * is an AF_ESHAPE error naming the op and the node. Ops with no row leave their outputs unknown.
 *
 * Invariants: a rule never reads past rank or n_in; a rule that sets out->rank >= 0 sets every
 * dim (possibly -1). No state; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <stdio.h>
#include <string.h>

typedef af__onnx_rule_fn rule_fn;

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define OUT(i) ((i) < c->n_out ? c->out[i] : NULL)

static const char *node_name(const Onnx__NodeProto *n)
{
    if (n->name && n->name[0])
        return n->name;
    return n->n_output && n->output[0][0] ? n->output[0] : "(unnamed)"; /* its first output */
}

int af__onnx_node_err(af__onnx_ctx_t *c, int code, const char *fmt, ...)
{
    char detail[AF_ERROR_MSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return af__err(c->err, code, "op %s, node '%s': %s", c->node->op_type, node_name(c->node),
                   detail);
}

void af__onnx_set_rank(af__onnx_val_t *v, int rank)
{
    v->rank = rank;
    for (int i = 0; i < AF__ONNX_RANK_MAX; i++)
        v->dims[i] = -1;
}

void af__onnx_copy_shape(af__onnx_val_t *dst, const af__onnx_val_t *src)
{
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof(dst->dims));
}

int af__onnx_check_rank(af__onnx_ctx_t *c, int rank)
{
    if (rank > AF__ONNX_RANK_MAX)
        return af__onnx_node_err(c, AF_ENOTSUP, "rank %d above %d", rank, AF__ONNX_RANK_MAX);
    return 0;
}

int af__onnx_norm_axis(af__onnx_ctx_t *c, int64_t axis, int rank, int *out)
{
    *out = 0;
    if (axis < -rank || axis >= rank)
        return af__onnx_node_err(c, AF_ESHAPE, "axis %lld out of range for rank %d",
                                 (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

int64_t af__onnx_d2i(double d)
{
    if (d >= 9.2233720368547758e18)
        return INT64_MAX;
    if (d <= -9.2233720368547758e18)
        return INT64_MIN;
    return (int64_t)d;
}

/*
 * Integer list from an attribute (preferred when present) or else from input `idx`'s values.
 * Returns the count, -1 when absent, -2 when present but its values are not known.
 */
int af__onnx_int_list(af__onnx_ctx_t *c, const char *attr, int idx, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = attr ? af__onnx_attr(c->node, attr) : NULL;
    if (a) {
        if ((int)a->n_ints > max)
            return -2;
        for (size_t i = 0; i < a->n_ints; i++)
            out[i] = a->ints[i];
        return (int)a->n_ints;
    }
    const af__onnx_val_t *v = idx >= 0 ? IN(idx) : NULL;
    if (!v)
        return -1;
    int64_t n = af__onnx_numel(v);
    if (n < 0 || n > max || !v->vals || !af__onnx_vals_known(v)) {
        af__onnx_why(c, "the values of input '%s' are known only at run time", v->name);
        return -2;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = af__onnx_d2i(v->vals[i]);
    return (int)n;
}

/* ---- elementwise ---------------------------------------------------------------------- */

static int rule_unary(af__onnx_ctx_t *c)
{
    if (!IN(0))
        return 0;
    for (int o = 0; o < c->n_out && o < 1; o++) {
        af__onnx_copy_shape(c->out[o], c->in[0]);
        c->out[o]->elem = c->in[0]->elem;
    }
    return 0;
}

static int rule_unary_bool(af__onnx_ctx_t *c)
{
    rule_unary(c);
    if (OUT(0))
        c->out[0]->elem = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    return 0;
}

int af__onnx_broadcast(af__onnx_ctx_t *c, const af__onnx_val_t *a, const af__onnx_val_t *b,
                       af__onnx_val_t *out)
{
    if (a->rank < 0 || b->rank < 0) {
        af__onnx_set_rank(out, -1);
        return 0;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    int64_t dims[AF__ONNX_RANK_MAX];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da == 1)
            dims[i] = db;
        else if (db == 1)
            dims[i] = da;
        else if (da < 0 && db < 0)
            dims[i] = -1;
        else if (da < 0 || db < 0)
            dims[i] = da < 0 ? db : da; /* the other one must match (or be 1, ruled out) */
        else if (da == db)
            dims[i] = da;
        else
            return af__onnx_node_err(c, AF_ESHAPE,
                                     "cannot broadcast '%s' and '%s' (dim %d: %lld vs %lld)",
                                     a->name, b->name, i, (long long)da, (long long)db);
    }
    af__onnx_set_rank(out, r);
    memcpy(out->dims, dims, (size_t)r * sizeof(int64_t));
    return 0;
}

/* Variadic broadcast of every present input; output element type from input `elem_from`. */
static int bcast_all(af__onnx_ctx_t *c, int elem_from, int32_t elem)
{
    if (!OUT(0))
        return 0;
    af__onnx_val_t acc = {.rank = 0};
    int first = 1, rc;
    for (int i = 0; i < c->n_in; i++) {
        if (!c->in[i])
            continue;
        if (first) {
            af__onnx_copy_shape(&acc, c->in[i]);
            acc.name = c->in[i]->name;
            first = 0;
        } else if ((rc = af__onnx_broadcast(c, &acc, c->in[i], &acc))) {
            return rc;
        }
    }
    if (first)
        return 0;
    af__onnx_copy_shape(c->out[0], &acc);
    c->out[0]->elem = elem ? elem : (IN(elem_from) ? c->in[elem_from]->elem : 0);
    return 0;
}

static int rule_bcast(af__onnx_ctx_t *c)
{
    return bcast_all(c, 0, 0);
}

static int rule_compare(af__onnx_ctx_t *c)
{
    return bcast_all(c, 0, ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
}

static int rule_where(af__onnx_ctx_t *c)
{
    return bcast_all(c, 1, 0);
}

static int rule_cast(af__onnx_ctx_t *c)
{
    rule_unary(c);
    if (OUT(0)) {
        if (!strcmp(c->node->op_type, "CastLike"))
            c->out[0]->elem = IN(1) ? c->in[1]->elem : 0;
        else
            c->out[0]->elem = (int32_t)af__onnx_attr_i(c->node, "to", 0);
    }
    return 0;
}

static int rule_eyelike(af__onnx_ctx_t *c)
{
    rule_unary(c);
    if (OUT(0))
        c->out[0]->elem = (int32_t)af__onnx_attr_i(c->node, "dtype", c->out[0]->elem);
    return 0;
}

/* ---- linear algebra ------------------------------------------------------------------- */

static int rule_matmul(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *a = IN(0), *b = IN(1);
    if (!a || !b || !OUT(0))
        return 0;
    c->out[0]->elem = a->elem;
    if (!strcmp(c->node->op_type, "MatMulInteger"))
        c->out[0]->elem = ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    return af__onnx_matmul_shape(c, a, b, c->out[0]);
}

int af__onnx_matmul_shape(af__onnx_ctx_t *c, const af__onnx_val_t *a, const af__onnx_val_t *b,
                          af__onnx_val_t *o)
{
    if (a->rank < 0 || b->rank < 0)
        return 0;
    if (a->rank == 0 || b->rank == 0)
        return af__onnx_node_err(c, AF_ESHAPE, "MatMul of a scalar");
    /* Promote 1-D operands as numpy does, broadcast the batch dims, then drop promoted dims. */
    af__onnx_val_t pa = {.name = a->name}, pb = {.name = b->name};
    af__onnx_set_rank(&pa, a->rank == 1 ? 2 : a->rank);
    af__onnx_set_rank(&pb, b->rank == 1 ? 2 : b->rank);
    if (a->rank == 1) {
        pa.dims[0] = 1;
        pa.dims[1] = a->dims[0];
    } else {
        memcpy(pa.dims, a->dims, (size_t)a->rank * sizeof(int64_t));
    }
    if (b->rank == 1) {
        pb.dims[0] = b->dims[0];
        pb.dims[1] = 1;
    } else {
        memcpy(pb.dims, b->dims, (size_t)b->rank * sizeof(int64_t));
    }
    int64_t k1 = pa.dims[pa.rank - 1], k2 = pb.dims[pb.rank - 2];
    if (k1 >= 0 && k2 >= 0 && k1 != k2)
        return af__onnx_node_err(c, AF_ESHAPE, "inner dims differ: %lld vs %lld", (long long)k1,
                                 (long long)k2);
    af__onnx_val_t ba = pa, bb = pb, batch;
    ba.rank -= 2;
    bb.rank -= 2;
    int rc = af__onnx_broadcast(c, &ba, &bb, &batch);
    if (rc)
        return rc;
    if ((rc = af__onnx_check_rank(c, batch.rank + 2)))
        return rc;
    int r = batch.rank;
    af__onnx_set_rank(o, 0);
    memcpy(o->dims, batch.dims, (size_t)r * sizeof(int64_t));
    if (a->rank != 1)
        o->dims[r++] = pa.dims[pa.rank - 2];
    if (b->rank != 1)
        o->dims[r++] = pb.dims[pb.rank - 1];
    o->rank = r;
    return 0;
}

static int rule_gemm(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *a = IN(0), *b = IN(1);
    if (!a || !b || !OUT(0))
        return 0;
    c->out[0]->elem = a->elem;
    if (a->rank < 0 || b->rank < 0)
        return 0;
    if (a->rank != 2 || b->rank != 2)
        return af__onnx_node_err(c, AF_ESHAPE, "Gemm needs 2-D inputs (got rank %d and %d)",
                                 a->rank, b->rank);
    int ta = af__onnx_attr_i(c->node, "transA", 0) != 0;
    int tb = af__onnx_attr_i(c->node, "transB", 0) != 0;
    int64_t k1 = a->dims[ta ? 0 : 1], k2 = b->dims[tb ? 1 : 0];
    if (k1 >= 0 && k2 >= 0 && k1 != k2)
        return af__onnx_node_err(c, AF_ESHAPE, "inner dims differ: %lld vs %lld", (long long)k1,
                                 (long long)k2);
    af__onnx_set_rank(c->out[0], 2);
    c->out[0]->dims[0] = a->dims[ta ? 1 : 0];
    c->out[0]->dims[1] = b->dims[tb ? 0 : 1];
    return 0;
}

/* LSTM / GRU / RNN: Y [seq, dirs, batch, hidden], Y_h and Y_c [dirs, batch, hidden]. */
static int rule_rnn(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *w = IN(1);
    if (!x)
        return 0;
    const char *op = c->node->op_type;
    int gates = !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1;
    const Onnx__AttributeProto *dir = af__onnx_attr(c->node, "direction");
    int64_t dirs =
        dir && dir->has_s && dir->s.len == 13 && !memcmp(dir->s.data, "bidirectional", 13) ? 2 : 1;
    int64_t hidden = af__onnx_attr_i(c->node, "hidden_size", -1);
    if (hidden < 0 && w && w->rank == 3 && w->dims[1] >= 0)
        hidden = w->dims[1] / gates;
    int layout = af__onnx_attr_i(c->node, "layout", 0) != 0;
    int64_t seq = x->rank == 3 ? x->dims[layout ? 1 : 0] : -1;
    int64_t batch = x->rank == 3 ? x->dims[layout ? 0 : 1] : -1;
    if (x->rank >= 0 && x->rank != 3)
        return af__onnx_node_err(c, AF_ESHAPE, "input rank %d, want 3", x->rank);
    for (int o = 0; o < c->n_out && o < 3; o++) {
        af__onnx_val_t *v = c->out[o];
        v->elem = x->elem;
        if (o == 0) {
            af__onnx_set_rank(v, 4);
            int64_t d[4] = {seq, dirs, batch, hidden}, dl[4] = {batch, seq, dirs, hidden};
            memcpy(v->dims, layout ? dl : d, sizeof(d));
        } else {
            af__onnx_set_rank(v, 3);
            int64_t d[3] = {dirs, batch, hidden}, dl[3] = {batch, dirs, hidden};
            memcpy(v->dims, layout ? dl : d, sizeof(d));
        }
    }
    return 0;
}

/* ---- convolution and pooling ---------------------------------------------------------- */

typedef af__onnx_win_t win_t;

int af__onnx_read_window(af__onnx_ctx_t *c, const af__onnx_val_t *w, win_t *wn)
{
    int ns = wn->ns;
    int64_t tmp[2 * AF__ONNX_RANK_MAX];
    if (ns < 0 || ns > AF__ONNX_RANK_MAX)
        return 1;
    int n = af__onnx_int_list(c, "kernel_shape", -1, tmp, AF__ONNX_RANK_MAX);
    if (n < 0 && w && w->rank == ns + 2) {
        for (int i = 0; i < ns; i++)
            wn->k[i] = w->dims[i + 2];
    } else if (n == ns) {
        memcpy(wn->k, tmp, (size_t)ns * sizeof(int64_t));
    } else {
        return n < 0 ? 1
                     : af__onnx_node_err(c, AF_ESHAPE, "kernel_shape has %d dims, input %d", n, ns);
    }
    for (int i = 0; i < ns; i++)
        wn->s[i] = wn->d[i] = 1;
    for (int i = 0; i < 2 * ns; i++)
        wn->p[i] = 0;
    if ((n = af__onnx_int_list(c, "strides", -1, tmp, AF__ONNX_RANK_MAX)) >= 0) {
        if (n != ns)
            return af__onnx_node_err(c, AF_ESHAPE, "strides has %d values, want %d", n, ns);
        memcpy(wn->s, tmp, (size_t)ns * sizeof(int64_t));
    }
    if ((n = af__onnx_int_list(c, "dilations", -1, tmp, AF__ONNX_RANK_MAX)) >= 0) {
        if (n != ns)
            return af__onnx_node_err(c, AF_ESHAPE, "dilations has %d values, want %d", n, ns);
        memcpy(wn->d, tmp, (size_t)ns * sizeof(int64_t));
    }
    if ((n = af__onnx_int_list(c, "pads", -1, tmp, 2 * AF__ONNX_RANK_MAX)) >= 0) {
        if (n != 2 * ns)
            return af__onnx_node_err(c, AF_ESHAPE, "pads has %d values, want %d", n, 2 * ns);
        memcpy(wn->p, tmp, (size_t)n * sizeof(int64_t));
    }
    for (int i = 0; i < ns; i++)
        if (wn->s[i] <= 0 || wn->d[i] <= 0 || wn->k[i] < 1)
            return af__onnx_node_err(c, AF_ESHAPE, "non-positive stride, dilation or kernel");
    const Onnx__AttributeProto *ap = af__onnx_attr(c->node, "auto_pad");
    wn->auto_pad = "NOTSET";
    if (ap && ap->has_s) {
        if (ap->s.len == 10 && !memcmp(ap->s.data, "SAME_UPPER", 10))
            wn->auto_pad = "SAME";
        else if (ap->s.len == 10 && !memcmp(ap->s.data, "SAME_LOWER", 10))
            wn->auto_pad = "SAME";
        else if (ap->s.len == 5 && !memcmp(ap->s.data, "VALID", 5))
            wn->auto_pad = "VALID";
    }
    return 0;
}

/* Conv, pooling: out = floor|ceil((in + pads - dilated kernel) / stride) + 1. */
static int rule_window(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    const char *op = c->node->op_type;
    int is_conv = !strncmp(op, "Conv", 4) || !strcmp(op, "QLinearConv");
    const af__onnx_val_t *w = is_conv ? IN(!strcmp(op, "QLinearConv") ? 3 : 1) : NULL;
    if (!x || !OUT(0))
        return 0;
    if (!strcmp(op, "ConvInteger"))
        c->out[0]->elem = ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    else if (!strcmp(op, "QLinearConv"))
        c->out[0]->elem = IN(7) ? IN(7)->elem : 0;
    else
        c->out[0]->elem = x->elem;
    if (x->rank < 0)
        return 0;
    if (x->rank < 2)
        return af__onnx_node_err(c, AF_ESHAPE, "input '%s' has rank %d, want >= 2", x->name,
                                 x->rank);
    win_t wn = {.ns = x->rank - 2};
    int rc = af__onnx_read_window(c, w, &wn);
    if (rc)
        return rc > 0 ? 0 : rc;
    int ceil_mode = af__onnx_attr_i(c->node, "ceil_mode", 0) != 0;
    af__onnx_val_t *o = c->out[0];
    af__onnx_set_rank(o, x->rank);
    o->dims[0] = x->dims[0];
    o->dims[1] = is_conv ? (w && w->rank >= 1 ? w->dims[0] : -1) : x->dims[1];
    for (int i = 0; i < wn.ns; i++) {
        int64_t in = x->dims[i + 2];
        if (in < 0)
            continue;
        int ovf = 0;
        int64_t ek = af__onnx_add(af__onnx_mul(wn.k[i] - 1, wn.d[i], &ovf), 1, &ovf);
        if (!strcmp(wn.auto_pad, "SAME")) {
            o->dims[i + 2] = in / wn.s[i] + (in % wn.s[i] != 0);
            continue;
        }
        int64_t pads =
            strcmp(wn.auto_pad, "VALID") ? af__onnx_add(wn.p[i], wn.p[i + wn.ns], &ovf) : 0;
        int64_t eff = af__onnx_add(in, pads, &ovf);
        if (ovf)
            return AF__ONNX_OVERFLOW(c);
        /* pooling as ONNX's own shape inference and ONNX Runtime (whose Conv refuses it): C
         * division, truncating toward zero, so a window reaching past the padded input by less
         * than a stride still gives one output, over the cells that exist */
        int64_t num = af__onnx_add(eff - ek, ceil_mode ? wn.s[i] - 1 : 0, &ovf);
        if (ovf)
            return AF__ONNX_OVERFLOW(c);
        if (num / wn.s[i] < 0 || (is_conv && eff < ek))
            return af__onnx_node_err(c, AF_ESHAPE, "kernel %lld larger than padded input %lld",
                                     (long long)ek, (long long)eff);
        o->dims[i + 2] = num / wn.s[i] + 1;
    }
    if (OUT(1) && !strcmp(op, "MaxPool")) {
        af__onnx_copy_shape(c->out[1], o);
        c->out[1]->elem = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    }
    return 0;
}

static int rule_conv_transpose(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *w = IN(1);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 0)
        return 0;
    if (x->rank < 2)
        return af__onnx_node_err(c, AF_ESHAPE, "input rank %d, want >= 2", x->rank);
    win_t wn = {.ns = x->rank - 2};
    int rc = af__onnx_read_window(c, w, &wn);
    if (rc)
        return rc > 0 ? 0 : rc;
    int64_t group = af__onnx_attr_i(c->node, "group", 1);
    int64_t outpad[AF__ONNX_RANK_MAX] = {0}, oshape[AF__ONNX_RANK_MAX];
    int nop = af__onnx_int_list(c, "output_padding", -1, outpad, AF__ONNX_RANK_MAX);
    int nos = af__onnx_int_list(c, "output_shape", -1, oshape, AF__ONNX_RANK_MAX);
    if (nop >= 0 && nop != wn.ns)
        return af__onnx_node_err(c, AF_ESHAPE, "output_padding has %d values, want %d", nop, wn.ns);
    af__onnx_set_rank(o, x->rank);
    o->dims[0] = x->dims[0];
    int ovf = 0;
    o->dims[1] = w && w->rank >= 2 && w->dims[1] >= 0 ? af__onnx_mul(w->dims[1], group, &ovf) : -1;
    for (int i = 0; i < wn.ns; i++) {
        int64_t in = x->dims[i + 2];
        if (nos == wn.ns) {
            o->dims[i + 2] = oshape[i];
        } else if (nos == wn.ns + 2) {
            o->dims[i + 2] = oshape[i + 2];
        } else if (in >= 0) {
            int64_t full = af__onnx_mul(wn.s[i], in - 1, &ovf);
            full = af__onnx_add(full, outpad[i], &ovf);
            full = af__onnx_add(full, af__onnx_mul(wn.k[i] - 1, wn.d[i], &ovf), &ovf);
            full = af__onnx_add(full, 1, &ovf);
            if (!strcmp(wn.auto_pad, "SAME"))
                o->dims[i + 2] = af__onnx_mul(in, wn.s[i], &ovf);
            else
                o->dims[i + 2] =
                    af__onnx_sub(af__onnx_sub(full, wn.p[i], &ovf), wn.p[i + wn.ns], &ovf);
            if (o->dims[i + 2] < 0)
                return af__onnx_node_err(c, AF_ESHAPE, "negative output size on axis %d", i + 2);
        }
    }
    return ovf ? AF__ONNX_OVERFLOW(c) : 0;
}

static int rule_global_pool(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_copy_shape(c->out[0], x);
    c->out[0]->elem = x->elem;
    for (int i = 2; i < x->rank; i++)
        c->out[0]->dims[i] = 1;
    return 0;
}

/* BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization... */
static int rule_norm(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x)
        return 0;
    rule_unary(c);
    const char *op = c->node->op_type;
    if (!strcmp(op, "LayerNormalization") && x->rank >= 0) {
        int axis, rc;
        if ((rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", -1), x->rank, &axis)))
            return rc;
        for (int o = 1; o < c->n_out && o < 3; o++) {
            af__onnx_copy_shape(c->out[o], x);
            for (int i = axis; i < x->rank; i++)
                c->out[o]->dims[i] = 1;
            c->out[o]->elem = (int32_t)af__onnx_attr_i(c->node, "stash_type", 1);
        }
    } else if (!strcmp(op, "BatchNormalization")) {
        for (int o = 1; o < c->n_out && o < 5; o++) {
            const af__onnx_val_t *src = IN(o == 1 || o == 3 ? 3 : 4);
            if (src) {
                af__onnx_copy_shape(c->out[o], src);
                c->out[o]->elem = src->elem;
            }
        }
    }
    return 0;
}

static int rule_dropout(af__onnx_ctx_t *c)
{
    rule_unary(c);
    if (OUT(1) && IN(0)) {
        af__onnx_copy_shape(c->out[1], c->in[0]);
        c->out[1]->elem = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    }
    return 0;
}

/* ---- the table ------------------------------------------------------------------------ */

enum { F_VIEW = 1, F_INPLACE = 2 };

typedef struct rule {
    const char *op;
    rule_fn fn;
    int flags;
} rule_t;

/* One row per op. F_VIEW: output 0 is a view of input 0; F_INPLACE: may overwrite input 0. */
static const rule_t rules[] = {
    /* views */
    {"Identity", rule_unary, F_VIEW},
    {"Reshape", af__onnx_rule_reshape, F_VIEW},
    {"Flatten", af__onnx_rule_flatten, F_VIEW},
    {"Squeeze", af__onnx_rule_squeeze, F_VIEW},
    {"Unsqueeze", af__onnx_rule_unsqueeze, F_VIEW},
    /* unary elementwise */
    {"Relu", rule_unary, F_INPLACE},
    {"Sigmoid", rule_unary, F_INPLACE},
    {"HardSigmoid", rule_unary, F_INPLACE},
    {"HardSwish", rule_unary, F_INPLACE},
    {"LeakyRelu", rule_unary, F_INPLACE},
    {"PRelu", rule_unary, 0}, /* slope broadcasts into X (legacy opsets: any way) */
    {"Elu", rule_unary, F_INPLACE},
    {"Selu", rule_unary, F_INPLACE},
    {"Celu", rule_unary, F_INPLACE},
    {"ThresholdedRelu", rule_unary, F_INPLACE},
    {"Softplus", rule_unary, F_INPLACE},
    {"Softsign", rule_unary, F_INPLACE},
    {"Tanh", rule_unary, F_INPLACE},
    {"Clip", rule_unary, F_INPLACE},
    {"Exp", rule_unary, F_INPLACE},
    {"Log", rule_unary, F_INPLACE},
    {"Sqrt", rule_unary, F_INPLACE},
    {"Neg", rule_unary, F_INPLACE},
    {"Abs", rule_unary, F_INPLACE},
    {"Reciprocal", rule_unary, F_INPLACE},
    {"Floor", rule_unary, F_INPLACE},
    {"Ceil", rule_unary, F_INPLACE},
    {"Round", rule_unary, F_INPLACE},
    {"Sign", rule_unary, F_INPLACE},
    {"Erf", rule_unary, F_INPLACE},
    {"Sin", rule_unary, F_INPLACE},
    {"Cos", rule_unary, F_INPLACE},
    {"Tan", rule_unary, F_INPLACE},
    {"Asin", rule_unary, F_INPLACE},
    {"Acos", rule_unary, F_INPLACE},
    {"Atan", rule_unary, F_INPLACE},
    {"Sinh", rule_unary, F_INPLACE},
    {"Cosh", rule_unary, F_INPLACE},
    {"Asinh", rule_unary, F_INPLACE},
    {"Acosh", rule_unary, F_INPLACE},
    {"Atanh", rule_unary, F_INPLACE},
    {"Shrink", rule_unary, F_INPLACE},
    {"Mish", rule_unary, F_INPLACE},
    {"Gelu", rule_unary, F_INPLACE},
    {"Not", rule_unary, F_INPLACE},
    {"BitwiseNot", rule_unary, F_INPLACE},
    {"IsNaN", rule_unary_bool, 0},
    {"IsInf", rule_unary_bool, 0},
    {"Softmax", rule_unary, 0},
    {"LogSoftmax", rule_unary, 0},
    {"Hardmax", rule_unary, 0},
    {"LpNormalization", rule_unary, 0},
    {"MeanVarianceNormalization", rule_unary, 0},
    {"LRN", rule_unary, 0},
    {"CumSum", rule_unary, 0},
    {"Trilu", rule_unary, 0},
    {"ReverseSequence", rule_unary, 0},
    {"EyeLike", rule_eyelike, 0},
    {"Cast", rule_cast, 0},
    {"CastLike", rule_cast, 0},
    {"Dropout", rule_dropout, 0},
    {"BatchNormalization", rule_norm, 0},
    {"InstanceNormalization", rule_norm, 0},
    {"LayerNormalization", rule_norm, 0},
    {"GroupNormalization", rule_norm, 0},
    /* broadcasting */
    {"Add", rule_bcast, 0},
    {"Sub", rule_bcast, 0},
    {"Mul", rule_bcast, 0},
    {"Div", rule_bcast, 0},
    {"Pow", rule_bcast, 0},
    {"Mod", rule_bcast, 0},
    {"Max", rule_bcast, 0},
    {"Min", rule_bcast, 0},
    {"Sum", rule_bcast, 0},
    {"Mean", rule_bcast, 0},
    {"BitShift", rule_bcast, 0},
    {"BitwiseAnd", rule_bcast, 0},
    {"BitwiseOr", rule_bcast, 0},
    {"BitwiseXor", rule_bcast, 0},
    {"And", rule_compare, 0},
    {"Or", rule_compare, 0},
    {"Xor", rule_compare, 0},
    {"Equal", rule_compare, 0},
    {"Less", rule_compare, 0},
    {"Greater", rule_compare, 0},
    {"LessOrEqual", rule_compare, 0},
    {"GreaterOrEqual", rule_compare, 0},
    {"Where", rule_where, 0},
    /* linear algebra, convolution, pooling */
    {"MatMul", rule_matmul, 0},
    {"MatMulInteger", rule_matmul, 0},
    {"Gemm", rule_gemm, 0},
    {"LSTM", rule_rnn, 0},
    {"GRU", rule_rnn, 0},
    {"RNN", rule_rnn, 0},
    {"Conv", rule_window, 0},
    {"ConvInteger", rule_window, 0},
    {"QLinearConv", rule_window, 0},
    {"ConvTranspose", rule_conv_transpose, 0},
    {"MaxPool", rule_window, 0},
    {"AveragePool", rule_window, 0},
    {"LpPool", rule_window, 0},
    {"GlobalAveragePool", rule_global_pool, 0},
    {"GlobalMaxPool", rule_global_pool, 0},
    {"GlobalLpPool", rule_global_pool, 0},
    /* data movement and shape computation (onnx_layout.c) */
    {"Transpose", af__onnx_rule_transpose, 0},
    {"Concat", af__onnx_rule_concat, 0},
    {"Split", af__onnx_rule_split, 0},
    {"Slice", af__onnx_rule_slice, 0},
    {"Gather", af__onnx_rule_gather, 0},
    {"GatherElements", af__onnx_rule_gather, 0},
    {"Resize", af__onnx_rule_resize, 0},
    {"Upsample", af__onnx_rule_resize, 0},
    {"ReduceMean", af__onnx_rule_reduce, 0},
    {"ReduceSum", af__onnx_rule_reduce, 0},
    {"ReduceMax", af__onnx_rule_reduce, 0},
    {"ReduceMin", af__onnx_rule_reduce, 0},
    {"ReduceProd", af__onnx_rule_reduce, 0},
    {"ReduceL1", af__onnx_rule_reduce, 0},
    {"ReduceL2", af__onnx_rule_reduce, 0},
    {"ReduceLogSum", af__onnx_rule_reduce, 0},
    {"ReduceLogSumExp", af__onnx_rule_reduce, 0},
    {"ReduceSumSquare", af__onnx_rule_reduce, 0},
    {"ArgMax", af__onnx_rule_reduce, 0},
    {"ArgMin", af__onnx_rule_reduce, 0},
    {"Shape", af__onnx_rule_shape, 0},
    {"Size", af__onnx_rule_shape, 0},
    {"Constant", af__onnx_rule_constant, 0},
    {"ConstantOfShape", af__onnx_rule_constant_of_shape, 0},
    {"Expand", af__onnx_rule_expand, 0},
    {"Pad", af__onnx_rule_pad, 0},
    {"Range", af__onnx_rule_range, 0},
    {"Tile", af__onnx_rule_tile, 0},
    {"TopK", af__onnx_rule_topk, 0},
    {"OneHot", af__onnx_rule_onehot, 0},
    {"DepthToSpace", af__onnx_rule_depth_space, 0},
    {"SpaceToDepth", af__onnx_rule_depth_space, 0},
};

/* The node's shape rule: this file's table, then onnx_quant.c's and onnx_misc.c's; the training
 * ops of ai.onnx.preview.training; none for other domains (their outputs stay unknown). */
static rule_fn find_rule(const Onnx__NodeProto *n)
{
    if (n->domain && !strcmp(n->domain, "ai.onnx.preview.training"))
        return af__onnx_rule_training(n->op_type);
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
        return NULL;
    for (size_t i = 0; i < AF_ARRAY_SIZE(rules); i++)
        if (!strcmp(rules[i].op, n->op_type))
            return rules[i].fn;
    rule_fn f = af__onnx_rule_quant(n->op_type);
    return f ? f : af__onnx_rule_misc(n->op_type);
}

int af__onnx_has_rule(const Onnx__NodeProto *n)
{
    return find_rule(n) != NULL;
}

int af__onnx_infer(af__onnx_ctx_t *c)
{
    rule_fn r = find_rule(c->node);
    if (!r)
        return 0;
    int rc = r(c);
    if (rc)
        return rc;
    int is_default = !c->node->domain || !c->node->domain[0] || !strcmp(c->node->domain, "ai.onnx");
    return is_default ? af__onnx_fold(c) : 0;
}

static int has_flag(const char *op, int flag)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(rules); i++)
        if (!strcmp(rules[i].op, op))
            return (rules[i].flags & flag) != 0;
    return 0;
}

int af__onnx_is_view(const char *op)
{
    return has_flag(op, F_VIEW);
}

int af__onnx_is_inplace(const char *op)
{
    return has_flag(op, F_INPLACE);
}

#endif /* AF_HAVE_ONNX */
