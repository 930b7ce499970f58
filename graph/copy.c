/*
 * Graph copy (af_graph_copy): rebuilds a finalized graph through the public builder calls, in id
 * order, so the copy has the same tensor and node ids and passes the same validation. The plan
 * cache plans on its own copy (the caller may free its graph); re-planning after warm-up copies
 * the graph with the dynamic tensors' observed sizes fixed; lowering (af_kernels_lower) gives
 * nodes one more output each through af_graph_copy_extend's callback. Extra tensors get ids after
 * the source graph's (they are added when their node is, after every source tensor).
 *
 * Lock rule: none; the source graph is only read.
 */
#include "graph/graph_int.h"

#include <string.h>

af_tensor_desc_t af_graph_tensor_desc(const af_graph_t *g, int32_t t)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    af_tensor_desc_t d;
    memset(&d, 0, sizeof d);
    if (!ti)
        return d;
    d.name = ti->name;
    d.bytes = ti->bytes;
    d.dtype = ti->dtype;
    d.rank = ti->rank;
    d.shape = ti->shape;
    d.kind = ti->kind;
    d.alias_of = ti->alias_of >= 0 ? af_graph_tensor(g, ti->alias_of)->name : NULL;
    d.alias_offset = ti->alias_offset;
    return d;
}

/* Adds the tensors of g to c, dynamic ones sized from sizes[] where given. */
static int copy_tensors(af_graph_t *c, const af_graph_t *g, const uint64_t *sizes, af_error_t *err)
{
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        af_tensor_desc_t d = af_graph_tensor_desc(g, t);
        if (ti->bytes < 0 && sizes && sizes[t]) {
            d.bytes = (int64_t)sizes[t];
            d.rank = -1; /* the shape had unknown dims; the size is what warm-up saw */
            d.shape = NULL;
        }
        int32_t id;
        int rc;
        if ((rc = af_graph_add_tensor(c, &d, &id, err)) ||
            (rc = af_graph_share_data(c, id, g, t, err)) || /* weights: shared, not copied */
            (d.bytes < 0 && ti->dynamic_reason &&
             (rc = af_graph_set_dynamic_reason(c, id, ti->dynamic_reason, err))))
            return rc;
    }
    return 0;
}

/* Adds node v of g to c (names[] has room for its tensors and one extra output). */
static int copy_node(af_graph_t *c, const af_graph_t *g, int32_t v, const char **names,
                     af_graph_extra_output_fn extra, void *user, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    for (int32_t i = 0; i < ni->n_inputs; i++)
        names[i] = af_graph_tensor(g, ni->inputs[i])->name;
    for (int32_t k = 0; k < ni->n_outputs; k++)
        names[ni->n_inputs + k] = af_graph_tensor(g, ni->outputs[k])->name;
    int32_t n_out = ni->n_outputs, id;
    af_tensor_desc_t xd;
    memset(&xd, 0, sizeof xd);
    int rc = extra ? extra(user, g, v, &xd) : 0;
    if (rc < 0)
        return af__err(err, rc, "graph copy: node '%s': %s", ni->name, af_strerror(rc));
    if (rc > 0) {
        if ((rc = af_graph_add_tensor(c, &xd, NULL, err)))
            return rc;
        names[ni->n_inputs + n_out++] = xd.name;
    }
    af_node_desc_t nd = {
        .name = ni->name,
        .op = ni->op,
        .inputs = names,
        .n_inputs = ni->n_inputs,
        .outputs = names + ni->n_inputs,
        .n_outputs = n_out,
        .cost = ni->cost,
        .inplace = ni->inplace,
        .n_inplace = ni->n_inplace,
    };
    if ((rc = af_graph_add_node(c, &nd, &id, err)))
        return rc;
    for (int32_t a = 0; a < ni->n_attrs; a++)
        if ((rc = af_graph_node_set_attr(c, id, &ni->attrs[a], err)))
            return rc;
    return 0;
}

int af_graph_copy_extend(const af_graph_t *g, const uint64_t *sizes, af_graph_extra_output_fn extra,
                         void *user, af_graph_t **out, af_error_t *err)
{
    if (!g || !out || !af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "graph copy: the graph is not finalized");
    af_graph_t *c = NULL;
    int rc = af_graph_create(&c);
    if (rc)
        return af__err(err, rc, "graph copy: cannot create a graph");
    if ((rc = af_graph_set_name(c, af_graph_name(g))) || (rc = copy_tensors(c, g, sizes, err)))
        goto fail;
    const char **names = NULL;
    size_t cap = 0;
    for (int32_t v = 0; v < af_graph_node_count(g) && !rc; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        size_t need = (size_t)ni->n_inputs + (size_t)ni->n_outputs + 2;
        if (!(rc = af__grow((void **)&names, &cap, need, sizeof(*names))))
            rc = copy_node(c, g, v, names, extra, user, err);
    }
    af__free(names);
    if (rc || (rc = af_graph_finalize(c, err)))
        goto fail;
    *out = c;
    return 0;
fail:
    af_graph_destroy(c);
    if (err && !err->code)
        af__err(err, rc, "graph copy: %s", af_strerror(rc));
    return rc;
}

int af_graph_copy(const af_graph_t *g, const uint64_t *sizes, af_graph_t **out, af_error_t *err)
{
    return af_graph_copy_extend(g, sizes, NULL, NULL, out, err);
}
