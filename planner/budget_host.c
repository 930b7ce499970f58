/*
 * The host tier and what a rewritten plan says about its nodes.
 *
 * A tensor is in the host tier when it is the output of a SwapOut node (and is neither a view
 * nor of unknown size): it takes no arena bytes, and the plan gives it an offset in a separate
 * host area. Host tensors are never reused — each has its own aligned bytes, in tensor id order
 * — so no write-after-read ordering is needed there: the host tier is large and cheap, the
 * arena is what the budget is about.
 *
 * Roles and origins come from the af__budget_t of a rewritten plan; a plain plan answers for
 * itself (every node runs once, every tensor is its own origin).
 */
#include "planner/budget_int.h"

#include <string.h>

int af__is_host_tier(const af_graph_t *g, int32_t t)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    if (!ti || ti->producer < 0 || ti->alias_of >= 0 || ti->bytes < 0)
        return 0;
    /* asked for every tensor in several passes of every plan: the first byte decides for
     * almost every op before the call */
    const char *op = af_graph_node(g, ti->producer)->op;
    return op[0] == AF_OP_SWAP_OUT[0] && strcmp(op, AF_OP_SWAP_OUT) == 0;
}

void af__plan_place_host(af_plan_t *p)
{
    uint64_t at = 0;
    for (int32_t t = 0; t < af_graph_tensor_count(p->g); t++) {
        af_tensor_plan_t *x = &p->tp[t];
        if (x->where != AF_WHERE_HOST)
            continue;
        x->offset = at;
        x->bytes = af__align_up((uint64_t)af_graph_tensor(p->g, t)->bytes, p->opts.alignment);
        at += x->bytes;
    }
    p->host = at;
    p->rep.host_bytes = at;
}

void af__budget_free(af__budget_t *b)
{
    if (!b)
        return;
    af_graph_destroy(b->g);
    af__free(b->node_origin);
    af__free(b->tensor_origin);
    af__free(b->role);
    af__free(b);
}

const char *af__budget_event_type(const af_plan_t *p, int32_t node)
{
    switch (af_plan_node_role(p, node)) {
    case AF_ROLE_RECOMPUTE:
        return "RECOMPUTE";
    case AF_ROLE_SWAP_OUT:
        return "SWAP_OUT";
    case AF_ROLE_SWAP_IN:
        return "SWAP_IN";
    default:
        return "EXEC";
    }
}

const af_graph_t *af_plan_source_graph(const af_plan_t *p)
{
    return p->budget ? p->budget->src : p->g;
}

af_node_role_t af_plan_node_role(const af_plan_t *p, int32_t node)
{
    if (node < 0 || node >= af_graph_node_count(p->g))
        return AF_ROLE_RUN;
    if (p->budget)
        return (af_node_role_t)p->budget->role[node];
    /* a plain plan of a graph that has copy nodes of its own */
    const char *op = af_graph_node(p->g, node)->op;
    return !strcmp(op, AF_OP_SWAP_OUT)  ? AF_ROLE_SWAP_OUT
           : !strcmp(op, AF_OP_SWAP_IN) ? AF_ROLE_SWAP_IN
                                        : AF_ROLE_RUN;
}

int32_t af_plan_node_origin(const af_plan_t *p, int32_t node)
{
    if (node < 0 || node >= af_graph_node_count(p->g))
        return -1;
    return p->budget ? p->budget->node_origin[node] : node;
}

int32_t af_plan_tensor_origin(const af_plan_t *p, int32_t tensor)
{
    if (tensor < 0 || tensor >= af_graph_tensor_count(p->g))
        return -1;
    return p->budget ? p->budget->tensor_origin[tensor] : tensor;
}

uint64_t af_plan_host_bytes(const af_plan_t *p)
{
    return p->host;
}
