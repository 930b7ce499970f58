/*
 * Verifier of rewritten plans: every read sees a valid copy of its tensor.
 *
 * The plan verifier (verify.c) already proves that the order is topological, that every tensor
 * is live over all its uses and that no two live tensors share a byte under any parallel
 * execution the plan allows. What is left for a rewritten graph is that each tensor holds the
 * value of the source tensor it stands for. That follows by induction over the order from two
 * local facts checked here for every node:
 *   - a node that runs a source node (the node itself or a recompute) has the same op,
 *     attributes and arity, reads copies of exactly that node's inputs and writes copies of
 *     exactly its outputs (kernels are deterministic, so equal inputs give equal outputs);
 *   - a SwapOut writes a host copy of its input, a SwapIn an arena copy of its host input.
 * Views must stay views of a copy of their base at the same offset, sizes and dtypes must
 * match, the source's own tensors and nodes keep their ids (so graph inputs and outputs are the
 * caller's; a source node writes its own outputs, except a graph output that a SwapIn makes:
 * then it writes a copy, which goes to the host, and the SwapIn's copy of it is the caller's),
 * host tensors lie inside the host area on bytes of their own, and the arena fits the budget.
 */
#include "planner/budget_int.h"

#include <stdlib.h>
#include <string.h>

static int same_tensor(const af_plan_t *p, int32_t t, af_error_t *err)
{
    const af__budget_t *b = p->budget;
    const af_tensor_info_t *c = af_graph_tensor(p->g, t);
    int32_t o = b->tensor_origin[t];
    const af_tensor_info_t *s = af_graph_tensor(b->src, o);
    if (!s || (t < af_graph_tensor_count(b->src) && o != t))
        return af__err(err, AF_EVERIFY, "tensor '%s' claims a bad source tensor", c->name);
    if (c->bytes != s->bytes || c->dtype != s->dtype || c->rank != s->rank)
        return af__err(err, AF_EVERIFY, "tensor '%s' is not like its source '%s'", c->name,
                       s->name);
    if ((c->alias_of >= 0) != (s->alias_of >= 0) ||
        (c->alias_of >= 0 &&
         (b->tensor_origin[c->alias_of] != s->alias_of || c->alias_offset != s->alias_offset)))
        return af__err(err, AF_EVERIFY, "view '%s' does not view a copy of '%s'", c->name,
                       s->alias_of >= 0 ? af_graph_tensor(b->src, s->alias_of)->name : "nothing");
    return 0;
}

/* 1 when source tensor t is a graph output that the rewritten graph makes with a SwapIn (its
 * producer's first run then writes a copy of it, which went to the host and came back). */
static int output_swapped_in(const af_plan_t *p, int32_t t)
{
    int32_t u = af_graph_tensor(p->g, t)->producer;
    return af_graph_tensor(p->budget->src, t)->kind == AF_TENSOR_OUTPUT && u >= 0 &&
           p->budget->role[u] == AF_ROLE_SWAP_IN;
}

/* A node running source node o: same op, attributes, arity; copies in, copies out. */
static int same_run(const af_plan_t *p, int32_t v, int32_t o, af_error_t *err)
{
    const af__budget_t *b = p->budget;
    const af_node_info_t *c = af_graph_node(p->g, v), *s = af_graph_node(b->src, o);
    if (strcmp(c->op, s->op) || c->n_inputs != s->n_inputs || c->n_outputs != s->n_outputs ||
        c->n_attrs != s->n_attrs)
        return af__err(err, AF_EVERIFY, "node '%s' does not run '%s' as it is", c->name, s->name);
    for (int32_t a = 0; a < c->n_attrs; a++)
        if (strcmp(c->attrs[a].name, s->attrs[a].name) || c->attrs[a].type != s->attrs[a].type)
            return af__err(err, AF_EVERIFY, "node '%s' has other attributes than '%s'", c->name,
                           s->name);
    for (int32_t i = 0; i < c->n_inputs; i++)
        if (b->tensor_origin[c->inputs[i]] != s->inputs[i])
            return af__err(err, AF_EVERIFY, "node '%s' reads '%s' where '%s' reads '%s'", c->name,
                           af_graph_tensor(p->g, c->inputs[i])->name, s->name,
                           af_graph_tensor(b->src, s->inputs[i])->name);
    for (int32_t k = 0; k < c->n_outputs; k++)
        if (b->tensor_origin[c->outputs[k]] != s->outputs[k] ||
            (v == o && c->outputs[k] != s->outputs[k] && !output_swapped_in(p, s->outputs[k])))
            return af__err(err, AF_EVERIFY, "node '%s' writes '%s', not a copy of '%s'", c->name,
                           af_graph_tensor(p->g, c->outputs[k])->name,
                           af_graph_tensor(b->src, s->outputs[k])->name);
    return 0;
}

static int same_swap(const af_plan_t *p, int32_t v, int out, af_error_t *err)
{
    const af_node_info_t *c = af_graph_node(p->g, v);
    const char *op = out ? AF_OP_SWAP_OUT : AF_OP_SWAP_IN;
    if (strcmp(c->op, op) || c->n_inputs != 1 || c->n_outputs != 1)
        return af__err(err, AF_EVERIFY, "node '%s' is not a %s of one tensor", c->name, op);
    int32_t in = c->inputs[0], o = c->outputs[0];
    af_where_t want_in = out ? AF_WHERE_ARENA : AF_WHERE_HOST;
    af_where_t want_out = out ? AF_WHERE_HOST : AF_WHERE_ARENA;
    if (p->budget->tensor_origin[in] != p->budget->tensor_origin[o] || p->tp[in].where != want_in ||
        p->tp[o].where != want_out)
        return af__err(err, AF_EVERIFY, "%s '%s' does not copy '%s' like for like between tiers",
                       op, c->name, af_graph_tensor(p->g, in)->name);
    return 0;
}

static int check_origins(const af_plan_t *p, af_error_t *err)
{
    const af__budget_t *b = p->budget;
    int32_t nt0 = af_graph_tensor_count(b->src), nn0 = af_graph_node_count(b->src);
    if (af_graph_tensor_count(p->g) < nt0 || af_graph_node_count(p->g) < nn0)
        return af__err(err, AF_EVERIFY, "the rewritten graph lost source tensors or nodes");
    int rc = 0;
    for (int32_t t = 0; t < af_graph_tensor_count(p->g) && !rc; t++)
        rc = same_tensor(p, t, err);
    for (int32_t v = 0; v < af_graph_node_count(p->g) && !rc; v++) {
        int32_t o = b->node_origin[v];
        switch (b->role[v]) {
        case AF_ROLE_RUN:
        case AF_ROLE_RECOMPUTE:
            if (o < 0 || o >= nn0 || (b->role[v] == AF_ROLE_RUN) != (v == o))
                return af__err(err, AF_EVERIFY, "node '%s' claims a bad source node",
                               af_graph_node(p->g, v)->name);
            rc = same_run(p, v, o, err);
            break;
        case AF_ROLE_SWAP_OUT:
        case AF_ROLE_SWAP_IN:
            rc = same_swap(p, v, b->role[v] == AF_ROLE_SWAP_OUT, err);
            break;
        default:
            rc = af__err(err, AF_EVERIFY, "node '%s' has no role", af_graph_node(p->g, v)->name);
        }
    }
    return rc;
}

typedef struct span {
    uint64_t off, end;
    int32_t t;
} span_t;

static int cmp_span(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off);
}

/* Host tensors: own bytes, inside the host area, aligned, at least their size. */
static int check_host(const af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g);
    size_t n = 0;
    for (int32_t t = 0; t < nt; t++)
        n += p->tp[t].where == AF_WHERE_HOST;
    if (!n)
        return 0;
    span_t *sp = af__malloc(n * sizeof(*sp));
    if (!sp)
        return af__err(err, AF_ENOMEM, "out of memory");
    n = 0;
    int rc = 0;
    for (int32_t t = 0; t < nt && !rc; t++) {
        const af_tensor_plan_t *x = &p->tp[t];
        if (x->where != AF_WHERE_HOST)
            continue;
        if (!af__is_host_tier(g, t) || x->bytes < (uint64_t)af_graph_tensor(g, t)->bytes ||
            x->offset % p->opts.alignment || x->offset + x->bytes > p->host)
            rc = af__err(err, AF_EVERIFY, "host tensor '%s' is not in the host area",
                         af_graph_tensor(g, t)->name);
        sp[n++] = (span_t){x->offset, x->offset + x->bytes, t};
    }
    qsort(sp, n, sizeof(*sp), cmp_span);
    for (size_t i = 1; i < n && !rc; i++)
        if (sp[i].off < sp[i - 1].end)
            rc = af__err(err, AF_EVERIFY, "host tensors '%s' and '%s' share bytes",
                         af_graph_tensor(g, sp[i - 1].t)->name, af_graph_tensor(g, sp[i].t)->name);
    af__free(sp);
    return rc;
}

int af__budget_verify(const af_plan_t *p, af_error_t *err)
{
    int rc = check_host(p, err);
    if (rc || !p->budget)
        return rc;
    if (p->opts.budget && p->arena > p->opts.budget)
        return af__err(err, AF_EVERIFY, "arena of %llu bytes is over the budget of %llu",
                       (unsigned long long)p->arena, (unsigned long long)p->opts.budget);
    return check_origins(p, err);
}
