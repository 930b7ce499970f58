/*
 * Fused plans (option `fuse`): af_plan_create / af_plan_restore plan af__plan_fuse_with()'s
 * graph (planner/fuse.c) and report what fusion saved; af_plan_restore_counts gives the fused
 * graph's counts a stored plan is checked against.
 */
#include "planner/planner_int.h"

#include <string.h>

int af_plan_restore_counts(const af_graph_t *g, const af_plan_opts_t *opts, int32_t *tensors,
                           int32_t *nodes, af_error_t *err)
{
    if (!g || !tensors || !nodes || !af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "af_plan_restore_counts: NULL or unfinalized graph");
    *tensors = af_graph_tensor_count(g);
    *nodes = af_graph_node_count(g);
    if (!opts || opts->fuse != AF_FUSE_ON)
        return 0;
    af_graph_t *fg = NULL;
    af_fuse_report_t fr;
    int rc = af__plan_fuse_with(g, opts, &fg, &fr, err);
    if (!rc && fr.fused_nodes) {
        *tensors = af_graph_tensor_count(fg);
        *nodes = af_graph_node_count(fg);
    }
    af_graph_destroy(fg);
    return rc;
}

/* With fuse = on: plans (or restores) the fused graph, which the plan then owns, and reports
 * what fusion saved against the same options on g (not on a restore: a cache hit stays cheap). */
int af__plan_fused(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                   const uint64_t *offsets, af_plan_t **out, af_error_t *err)
{
    af_graph_t *fg = NULL;
    af_fuse_report_t fr;
    int rc = af__plan_fuse_with(g, opts, &fg, &fr, err);
    if (rc)
        return rc;
    af_plan_opts_t o = *opts;
    o.fuse = AF_FUSE_OFF;
    const af_graph_t *use = fr.fused_nodes ? fg : g;
    af_plan_t *p = NULL;
    rc = order ? af_plan_restore(use, &o, order, offsets, &p, err)
               : af_plan_create(use, &o, &p, err);
    if (rc || !fr.fused_nodes) {
        af_graph_destroy(fg);
        fg = NULL;
    }
    if (rc)
        return rc;
    p->fused_g = fg;
    p->opts.fuse = AF_FUSE_ON;
    p->rep.fused_nodes = fr.fused_nodes;
    p->rep.bn_folded = fr.bn_folded;
    p->rep.sums_folded = fr.sums;
    p->rep.biases_folded = fr.biases;
    p->rep.fused_tensors = fr.removed_tensors;
    p->rep.unfused_bytes = fr.fused_nodes ? 0 : p->arena;
    if (fr.fused_nodes && !order) {
        af_plan_t *q = NULL;
        o.budget = 0;
        o.verify = 0;
        if ((rc = af_plan_create(g, &o, &q, err)) == 0)
            p->rep.unfused_bytes = q->arena;
        af_plan_destroy(q);
    }
    if (rc) {
        af_plan_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}
