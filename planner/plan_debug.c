/*
 * Test hooks that break a finished plan the way a buggy planner would (a moved offset, a short
 * lifetime, a dropped reuse edge, ...), one per verifier check: mutation tests show that each
 * check of af_plan_verify() catches its bug (tests/test_verify.c). Not for production use.
 *
 * Lock rule: none; the caller owns the plan exclusively while it breaks it.
 */
#include "planner/planner_int.h"

int af_plan_debug_set_offset(af_plan_t *p, int32_t tensor, uint64_t offset)
{
    if (tensor < 0 || tensor >= af_graph_tensor_count(p->g))
        return AF_EINVAL;
    p->tp[tensor].offset = offset;
    return 0;
}

int af_plan_debug_break(af_plan_t *p, af_plan_break_t how, int32_t a, int32_t b)
{
    int32_t nt = af_graph_tensor_count(p->g), nn = af_graph_node_count(p->g);
    int node = how == AF_PLAN_BREAK_ORDER, edge = how >= AF_PLAN_BREAK_EDGE;
    int32_t lim = node ? nn : edge ? p->n_edges : nt;
    int two = node || how == AF_PLAN_BREAK_OVERLAP || how == AF_PLAN_BREAK_INPLACE;
    if (a < 0 || a >= lim || (two && (b < 0 || b >= lim)))
        return AF_EINVAL;
    af_tensor_plan_t *x = edge || node ? NULL : &p->tp[a];
    switch (how) {
    case AF_PLAN_BREAK_ORDER: {
        int32_t sa = p->step[a], sb = p->step[b];
        p->order[sa] = b;
        p->order[sb] = a;
        p->step[a] = sb;
        p->step[b] = sa;
        return 0;
    }
    case AF_PLAN_BREAK_LIFETIME:
        x->last--;
        return 0;
    case AF_PLAN_BREAK_BYTES:
        x->bytes = (uint64_t)af_graph_tensor(p->g, a)->bytes - 1;
        return 0;
    case AF_PLAN_BREAK_ALIGN:
    case AF_PLAN_BREAK_VIEW:
        x->offset++;
        return 0;
    case AF_PLAN_BREAK_BOUNDS:
        x->offset = p->arena;
        return 0;
    case AF_PLAN_BREAK_OVERLAP:
        x->offset = p->tp[b].offset;
        return 0;
    case AF_PLAN_BREAK_INPLACE:
        x->inplace_of = b;
        return 0;
    case AF_PLAN_BREAK_EDGE:
        p->edges[a] = p->edges[--p->n_edges];
        return 0;
    case AF_PLAN_BREAK_EDGE_DIR: {
        int32_t f = p->edges[a].from;
        p->edges[a].from = p->edges[a].to;
        p->edges[a].to = f;
        return 0;
    }
    }
    return AF_EINVAL;
}
