/*
 * af_kernels_lower(): makes every byte of a node's working memory a planned tensor.
 *
 * For each node whose entry in the kernel set prepares a state, the entry is asked (query mode:
 * primitive descriptors only, no primitive, no weight reorder) how many bytes of working memory
 * the node needs while it runs — a oneDNN scratchpad, buffers for reordering an operand to the
 * layout the primitive wants — with the largest OpenMP team a session on these options may give
 * the node (a scratchpad grows with the team), then the graph is copied with one
 * AF_TENSOR_SCRATCH output of that size on each such node. The planner sees a tensor produced
 * by the node and read by nobody: it lives during the node's step only, and shares bytes with
 * anything not live then.
 *
 * The tensor layouts (channels-last between convolutions) are chosen first, as the session will
 * choose them. A node whose entry answers AF_ENOTSUP gets nothing: the session will run it on
 * the fallback kernel, which needs no working memory. Reentrant: no state outside the call.
 */
#include "executor/executor_int.h"

#include <stdio.h>
#include <string.h>

typedef struct scratch_out {
    const uint64_t *bytes; /* per node, 0: none */
    char name[300];
} scratch_out_t;

/* The scratch output of node v ("<node>#scratch", or with a number when taken). */
static int scratch_tensor(void *user, const af_graph_t *g, int32_t v, af_tensor_desc_t *d)
{
    scratch_out_t *so = user;
    if (!so->bytes[v])
        return 0;
    const char *node = af_graph_node(g, v)->name;
    snprintf(so->name, sizeof so->name, "%s#scratch", node);
    for (int k = 2; af_graph_find_tensor(g, so->name) >= 0; k++)
        snprintf(so->name, sizeof so->name, "%s#scratch%d", node, k);
    d->name = so->name;
    d->bytes = (int64_t)so->bytes[v];
    d->dtype = AF_DTYPE_U8;
    d->rank = -1;
    d->kind = AF_TENSOR_SCRATCH;
    return 1;
}

/* Values of constants are not needed to size working memory. */
static const void *no_constant(void *cu, int32_t tensor)
{
    (void)cu;
    (void)tensor;
    return NULL;
}

static int already_lowered(const af_graph_t *g, int32_t v)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    for (int32_t k = 0; k < ni->n_outputs; k++)
        if (af_graph_tensor(g, ni->outputs[k])->kind == AF_TENSOR_SCRATCH)
            return 1;
    return 0;
}

/* Working memory of every node, into scratch[] (64-byte multiples). */
static int query_nodes(const af__kernel_set_t *ks, const af_graph_t *g, int32_t intra,
                       void *backend, const uint8_t *layout, uint64_t *scratch, af_error_t *err)
{
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        const af__kernel_entry_t *e = af__kernel_find(ks->table, ni->op);
        if (!e || !e->prepare || already_lowered(g, v))
            continue;
        af__kprep_t in = {.g = g,
                          .node = v,
                          .team = af__kernel_team(g, v, intra),
                          .workers = 1,
                          .query = 1,
                          .constant = no_constant,
                          .backend = backend,
                          .layout = layout};
        af__kprep_out_t out;
        memset(&out, 0, sizeof out);
        af_error_t why;
        af_error_clear(&why);
        ks->backend->set_team(in.team);
        int rc = e->prepare(&in, &out, &why);
        if (rc == AF_ENOTSUP)
            continue;
        if (rc)
            return af__err(err, rc, "lowering node '%s' (op %s): %s", ni->name, ni->op,
                           why.msg[0] ? why.msg : af_strerror(rc));
        if (e->release && out.state)
            e->release(out.state);
        scratch[v] = af__align_up(out.scratch_bytes, 64);
    }
    return 0;
}

int af_kernels_lower(const af_executor_opts_t *eo, const af_graph_t *g, af_graph_t **out,
                     af_error_t *err)
{
    af_executor_opts_t o;
    if (eo)
        o = *eo;
    else
        af_executor_opts_init(&o);
    if (!g || !out || !af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "af_kernels_lower: %s",
                       !g || !out ? "NULL argument" : "graph is not finalized");
    const af__kernel_set_t *ks = af__kernel_set(o.kernels ? o.kernels : "verify");
    if (!ks)
        return af__err(err, AF_EINVAL, "af_kernels_lower: unknown kernel set '%s'", o.kernels);
    int32_t n = af_graph_node_count(g);
    uint64_t *scratch = af__calloc((size_t)n + 1, sizeof(uint64_t));
    if (!scratch)
        return af__err(err, AF_ENOMEM, "out of memory lowering the graph");
    int rc = 0;
    if (ks->backend && ks->table) {
        void *ctx = NULL;
        if ((rc = ks->backend->create(1, &ctx, err)))
            goto out;
        int32_t team0 = ks->backend->get_team(), intra = af__kernel_intra_max(&o);
        af__kprep_t base = {.g = g, .workers = 1, .constant = no_constant, .backend = ctx};
        uint8_t *layout = NULL;
        rc = af__kernel_layouts(ks, &base, intra, &layout, err);
        if (!rc)
            rc = query_nodes(ks, g, intra, ctx, layout, scratch, err);
        af__free(layout);
        ks->backend->set_team(team0);
        ks->backend->destroy(ctx);
        if (rc)
            goto out;
    }
    scratch_out_t so = {.bytes = scratch};
    rc = af_graph_copy_extend(g, NULL, scratch_tensor, &so, out, err);
out:
    af__free(scratch);
    return rc;
}
