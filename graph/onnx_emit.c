/*
 * ONNX importer — turning the importer's kept values and nodes into a graph (graph.h).
 *
 * Every value read by a kept node, or a graph input/output, becomes a tensor: kind input,
 * constant (initializers, Constant outputs, folded values with no run-time producer; their bytes
 * are attached by onnx_data.c), output or intermediate; bytes = elements x element size when the
 * shape is known, else AF_BYTES_DYNAMIC with the reason recorded; a view's output is an alias of
 * its input at offset 0. Every kept node becomes a node with its attributes (ints, floats, strings
 * and their lists — a list of strings as one comma-joined string, a one-element tensor as its
 * value; other tensors and graphs are not carried), named
 * after the ONNX node (made unique with "#k" since ONNX does not require unique names), with an
 * in-place hint when an elementwise op's output has its input's size and type, and a cost
 * estimate in FLOPs (node_cost). Reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <stdio.h>
#include <string.h>

static int emit_tensor(af__onnx_imp_t *im, af_graph_t *gr, const af__onnx_val_t *v)
{
    int64_t n = af__onnx_numel(v);
    int sz = af__onnx_elem_size(v->elem);
    /* A view keeps its base's element count even when its dims are not known (Reshape to a
     * shape computed at run time): its size is known, not guessed. */
    size_t hops = 0; /* aliases point to earlier values, so chains end; bound them anyway */
    for (const af__onnx_val_t *b = v;
         n < 0 && b->alias_of >= 0 && b->elem == v->elem && hops++ < im->n_vals;) {
        b = &im->vals[b->alias_of];
        n = af__onnx_numel(b);
    }
    /* Every dim known but elements x element size past 2^63-1: the JSON reader's error, not a
     * tensor of unknown size. */
    int known = v->rank >= 0 && v->rank <= AF_MAX_RANK && sz > 0;
    for (int i = 0; known && i < v->rank; i++)
        known = v->dims[i] >= 0;
    if (known && (n < 0 || (uint64_t)n > (uint64_t)INT64_MAX / (uint64_t)sz))
        return af__err(im->err, AF_ESIZE, "tensor '%s': shape x dtype size overflows", v->name);
    af_tensor_desc_t d = {.name = v->name, .dtype = (af_dtype_t)af__onnx_dtype(v->elem)};
    d.rank = v->rank <= AF_MAX_RANK ? v->rank : -1;
    d.shape = v->dims;
    d.bytes = n >= 0 && sz > 0 && (uint64_t)n <= (uint64_t)INT64_MAX / (uint64_t)sz
                  ? n * sz
                  : AF_BYTES_DYNAMIC;
    if (v->is_input)
        d.kind = AF_TENSOR_INPUT;
    else if (v->is_const && v->producer < 0)
        d.kind = AF_TENSOR_CONSTANT;
    else if (v->is_output)
        d.kind = AF_TENSOR_OUTPUT;
    if (v->alias_of >= 0)
        d.alias_of = im->vals[v->alias_of].name;
    int32_t id;
    int rc = af_graph_add_tensor(gr, &d, &id, im->err);
    if (rc)
        return rc;
    if (d.bytes == AF_BYTES_DYNAMIC) {
        char buf[300];
        const char *why = v->why;
        if (v->is_input) {
            snprintf(buf, sizeof(buf),
                     "graph input with unknown dims (give them with %.40s%.200s=d0,d1,...)",
                     af__onnx_dims_flag(im), v->name);
            why = buf;
        } else if (!why && v->alias_of >= 0) {
            snprintf(buf, sizeof(buf), "a view of '%.200s', whose size is unknown",
                     im->vals[v->alias_of].name);
            why = buf;
        } else if (!why && v->is_const) {
            why = "a constant whose shape or element type the model does not give";
        }
        if (why && (rc = af_graph_set_dynamic_reason(gr, id, why, im->err)))
            return rc;
    }
    return af__onnx_data_attach(im, gr, id, v);
}

/* 1 when t holds exactly one numeric element, stored in *v (integers exact up to 2^53). */
static int scalar_tensor(af__onnx_imp_t *im, const Onnx__TensorProto *t, double *v)
{
    af__onnx_val_t tmp = {.name = "", .rank = -1, .alias_of = -1};
    int ok = af__onnx_tensor_decode(im, t, &tmp, NULL) == 0 && af__onnx_numel(&tmp) == 1 &&
             af__onnx_vals_known(&tmp);
    if (ok)
        *v = tmp.vals[0];
    af__free(tmp.vals);
    return ok;
}

static int emit_attrs(af__onnx_imp_t *im, af_graph_t *gr, int32_t id, const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        af_attr_t at = {.name = a->name};
        double *fl = NULL;
        char s[256];
        if (a->has_i) {
            at.type = AF_ATTR_INT;
            at.i = a->i;
        } else if (a->has_f) {
            at.type = AF_ATTR_FLOAT;
            at.f = a->f;
        } else if (a->has_s) {
            at.type = AF_ATTR_STRING;
            snprintf(s, sizeof(s), "%.*s", (int)(a->s.len < 255 ? a->s.len : 255),
                     (const char *)a->s.data);
            at.s = s;
        } else if (a->n_ints) {
            at.type = AF_ATTR_INTS;
            at.ints = a->ints;
            at.n = (int32_t)a->n_ints;
        } else if (a->n_floats && a->n_floats <= INT32_MAX) {
            at.type = AF_ATTR_FLOATS;
            if (!(fl = af__malloc(a->n_floats * sizeof(*fl))))
                return af__err(im->err, AF_ENOMEM, "out of memory");
            for (size_t k = 0; k < a->n_floats; k++)
                fl[k] = a->floats[k];
            at.floats = fl;
            at.n = (int32_t)a->n_floats;
        } else if (a->n_strings) { /* a list of strings (RNN activations): comma-joined */
            size_t len = 0;
            for (size_t k = 0; k < a->n_strings && len + 1 < sizeof(s); k++)
                len += (size_t)snprintf(s + len, sizeof(s) - len, "%s%.*s", k ? "," : "",
                                        (int)a->strings[k].len, (const char *)a->strings[k].data);
            at.type = AF_ATTR_STRING;
            at.s = s;
        } else if (a->t && scalar_tensor(im, a->t, &at.f)) {
            at.type = AF_ATTR_FLOAT; /* a one-element tensor (ConstantOfShape's value) */
        } else {
            continue; /* other tensors, graphs, types: not carried */
        }
        int rc = af_graph_node_set_attr(gr, id, &at, im->err);
        af__free(fl);
        if (rc)
            return rc;
    }
    return 0;
}

/*
 * Estimated cost in FLOPs for the scheduler: 2 x output elements x reduction length for
 * Conv/ConvTranspose/MatMul/Gemm, output elements otherwise; 0 (unknown) when the output's
 * shape is not known.
 */
static double node_cost(const af__onnx_imp_t *im, const af__onnx_knode_t *k)
{
    if (k->n_out < 1 || k->io[k->n_in] < 0)
        return 0;
    int64_t n = af__onnx_numel(&im->vals[k->io[k->n_in]]);
    if (n < 0)
        return 0;
    const char *op = k->node->op_type;
    const af__onnx_val_t *a = k->n_in > 0 && k->io[0] >= 0 ? &im->vals[k->io[0]] : NULL;
    const af__onnx_val_t *w = k->n_in > 1 && k->io[1] >= 0 ? &im->vals[k->io[1]] : NULL;
    double red = 1;
    if ((!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) && w && w->rank >= 2) {
        for (int i = 1; i < w->rank; i++)
            red *= w->dims[i] > 0 ? (double)w->dims[i] : 1;
        red *= 2;
    } else if ((!strcmp(op, "MatMul") || !strcmp(op, "Gemm")) && a && a->rank >= 1) {
        int trans = !strcmp(op, "Gemm") && af__onnx_attr_i(k->node, "transA", 0);
        int64_t kd = a->dims[trans && a->rank == 2 ? 0 : a->rank - 1];
        red = kd > 0 ? 2.0 * (double)kd : 1;
    }
    return (double)n * red;
}

/*
 * An omitted optional input or output ("" in ONNX, e.g. Resize(X, "", "", sizes)) is not a
 * tensor, so the node's lists are shorter than ONNX's: when an omission shifts a later entry,
 * the ONNX position of every kept entry is recorded in the ints attributes
 * "arenaflow.input_positions" / "arenaflow.output_positions" (kernels read them). Nodes whose
 * omissions are all trailing get none.
 */
static int emit_positions(af__onnx_imp_t *im, af_graph_t *gr, int32_t id, const af__onnx_knode_t *k)
{
    for (int side = 0; side < 2; side++) {
        int64_t pos[32];
        int n = 0, shifted = 0, base = side ? k->n_in : 0, cnt = side ? k->n_out : k->n_in;
        for (int i = 0; i < cnt && n < 32; i++)
            if (k->io[base + i] >= 0) {
                shifted |= i != n;
                pos[n++] = i;
            }
        if (!shifted)
            continue;
        af_attr_t at = {.name = side ? "arenaflow.output_positions" : "arenaflow.input_positions",
                        .type = AF_ATTR_INTS,
                        .ints = pos,
                        .n = n};
        int rc = af_graph_node_set_attr(gr, id, &at, im->err);
        if (rc)
            return rc;
    }
    return 0;
}

static int emit_node(af__onnx_imp_t *im, af_graph_t *gr, const af__onnx_knode_t *k, size_t idx)
{
    const Onnx__NodeProto *n = k->node;
    const char *ins[32], *outs[32];
    int ni = 0, no = 0;
    for (int i = 0; i < k->n_in; i++)
        if (k->io[i] >= 0)
            ins[ni++] = im->vals[k->io[i]].name;
    for (int i = 0; i < k->n_out; i++)
        if (k->io[k->n_in + i] >= 0)
            outs[no++] = im->vals[k->io[k->n_in + i]].name;
    char name[300];
    snprintf(name, sizeof(name), "%s", n->name && n->name[0] ? n->name : "");
    if (!name[0])
        snprintf(name, sizeof(name), "%s_%zu", n->op_type, idx);
    af_inplace_t ip = {0, 0};
    af_node_desc_t d = {.cost = node_cost(im, k),
                        .name = name,
                        .op = n->op_type,
                        .inputs = ins,
                        .n_inputs = ni,
                        .outputs = outs,
                        .n_outputs = no};
    if (af__onnx_is_inplace(n->op_type) && k->n_in > 0 && k->io[0] >= 0 && no > 0 &&
        k->io[k->n_in] >= 0) {
        const af__onnx_val_t *a = &im->vals[k->io[0]], *b = &im->vals[k->io[k->n_in]];
        if (!a->is_const && a->elem == b->elem && af__onnx_numel(a) >= 0 &&
            af__onnx_numel(a) == af__onnx_numel(b) && a->alias_of < 0 && !a->is_input) {
            d.inplace = &ip;
            d.n_inplace = 1;
        }
    }
    /* ONNX does not require unique node names: a taken one gets a number (the builder's adds
     * accept a duplicate and leave it to finalize, so the importer asks first). */
    int32_t id = -1;
    int rc = af__graph_find_node_checked(gr, name, &id);
    for (int t = 1; !rc && id >= 0 && t < 1000; t++) {
        snprintf(name, sizeof(name), "%.250s#%d", n->name && n->name[0] ? n->name : n->op_type, t);
        rc = af__graph_find_node_checked(gr, name, &id);
    }
    if (rc)
        return af__err(im->err, rc, "out of memory");
    rc = af_graph_add_node(gr, &d, &id, im->err);
    if (!rc)
        rc = emit_positions(im, gr, id, k);
    if (!rc && im->opset < 13 &&
        (!strcmp(n->op_type, "Softmax") || !strcmp(n->op_type, "LogSoftmax") ||
         !strcmp(n->op_type, "Hardmax"))) {
        /* before opset 13 these flatten the input to 2-D at `axis` (default 1) */
        af_attr_t at = {.name = "arenaflow.opset", .type = AF_ATTR_INT, .i = im->opset};
        rc = af_graph_node_set_attr(gr, id, &at, im->err);
    }
    if (!rc && k->guard >= 0) { /* a node of an If branch: the executor may skip it */
        af_attr_t at = {
            .name = "arenaflow.if_cond", .type = AF_ATTR_STRING, .s = im->vals[k->guard].name};
        rc = af_graph_node_set_attr(gr, id, &at, im->err);
        at = (af_attr_t){.name = "arenaflow.if_branch", .type = AF_ATTR_INT, .i = k->branch};
        if (!rc)
            rc = af_graph_node_set_attr(gr, id, &at, im->err);
    }
    if (!rc && k->live >= 0) { /* an If with one branch that cannot run (onnx.c) */
        af_attr_t at = {.name = "arenaflow.if_live", .type = AF_ATTR_INT, .i = k->live};
        rc = af_graph_node_set_attr(gr, id, &at, im->err);
        for (int i = 0; !rc && i < im->n_dead; i++)
            if (im->dead[i].node == n) {
                at = (af_attr_t){
                    .name = "arenaflow.if_dead", .type = AF_ATTR_STRING, .s = im->dead[i].why};
                rc = af_graph_node_set_attr(gr, id, &at, im->err);
            }
    }
    return rc ? rc : emit_attrs(im, gr, id, n);
}

int af__onnx_emit(af__onnx_imp_t *im, const char *name, af_graph_t **out)
{
    af_graph_t *gr = NULL;
    int rc = af_graph_create(&gr);
    if (rc)
        return af__err(im->err, rc, "out of memory");
    if ((name && (rc = af_graph_set_name(gr, name))) || (rc = af__onnx_data_prepare(im)))
        goto fail;
    for (size_t i = 0; i < im->n_vals; i++) {
        const af__onnx_val_t *v = &im->vals[i];
        if ((v->used || v->is_output) && (rc = emit_tensor(im, gr, v)))
            goto fail;
    }
    for (size_t i = 0; i < im->n_nodes; i++)
        if ((rc = emit_node(im, gr, &im->nodes[i], i)))
            goto fail;
    if ((rc = af_graph_finalize(gr, im->err)))
        goto fail;
    *out = gr;
    return 0;
fail:
    af_graph_destroy(gr);
    return rc;
}

#endif /* AF_HAVE_ONNX */
