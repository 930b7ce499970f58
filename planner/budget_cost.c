/*
 * Costs for the budget passes and the time model of a round.
 *
 * Node cost: the graph's own estimate when it has one (ONNX imports and the model zoo give
 * FLOPs); otherwise an estimate from the shapes — 2 x output elements x reduction length for
 * Conv/ConvTranspose (the weight's dims after the first) and MatMul/Gemm (the shared dim),
 * output elements for every other op — and 1 when even the shape is unknown, so a recompute is
 * never free.
 *
 * Time model: one compute stream and one copy stream, as on an accelerator with a DMA engine.
 * Nodes are taken in plan order; a node starts when its stream is free and every predecessor
 * over data edges and the plan's reuse edges has finished, and takes cost / compute_rate
 * (compute) or bytes / bandwidth (SwapOut, SwapIn) seconds. A swap thus overlaps the compute
 * that does not depend on it, and a node whose bytes a SwapOut still reads waits for it (the
 * reuse edge), which is exactly the ordering the executor honours.
 */
#include "planner/budget_int.h"

#include <string.h>

static double numel_of(const af_tensor_info_t *t)
{
    if (t->rank >= 0) {
        double n = 1;
        for (int32_t i = 0; i < t->rank; i++) {
            if (t->shape[i] < 0)
                return -1;
            n *= (double)t->shape[i];
        }
        return n;
    }
    uint32_t es = af_dtype_size(t->dtype);
    return t->bytes >= 0 && es ? (double)t->bytes / es : -1;
}

double af__node_cost(const af_graph_t *g, int32_t v)
{
    const af_node_info_t *nd = af_graph_node(g, v);
    if (nd->cost > 0)
        return nd->cost;
    if (nd->n_outputs < 1)
        return 1;
    double n = numel_of(af_graph_tensor(g, nd->outputs[0]));
    if (n <= 0)
        return 1;
    double red = 1;
    const af_tensor_info_t *a = nd->n_inputs > 0 ? af_graph_tensor(g, nd->inputs[0]) : NULL;
    const af_tensor_info_t *w = nd->n_inputs > 1 ? af_graph_tensor(g, nd->inputs[1]) : NULL;
    if ((!strcmp(nd->op, "Conv") || !strcmp(nd->op, "ConvTranspose")) && w && w->rank >= 2) {
        for (int32_t i = 1; i < w->rank; i++)
            red *= w->shape[i] > 0 ? (double)w->shape[i] : 1;
        red *= 2;
    } else if ((!strcmp(nd->op, "MatMul") || !strcmp(nd->op, "Gemm")) && a && a->rank >= 1) {
        const af_attr_t *ta = af_graph_node_attr(g, v, "transA");
        int trans = !strcmp(nd->op, "Gemm") && ta && ta->type == AF_ATTR_INT && ta->i;
        int64_t k = a->shape[trans && a->rank == 2 ? 0 : a->rank - 1];
        red = k > 0 ? 2.0 * (double)k : 1;
    }
    return n * red > 1 ? n * red : 1;
}

double af__swap_seconds(const af_plan_opts_t *o, uint64_t bytes)
{
    double bw = o->bandwidth > 0 ? o->bandwidth : AF_PLAN_BANDWIDTH;
    return (double)bytes / bw;
}

static int is_swap(const af_node_info_t *nd)
{
    return !strcmp(nd->op, AF_OP_SWAP_OUT) || !strcmp(nd->op, AF_OP_SWAP_IN);
}

int af__model_time(const af_plan_t *p, double *seconds)
{
    const af_graph_t *g = p->g;
    int32_t nn = af_graph_node_count(g);
    double rate = p->opts.compute_rate > 0 ? p->opts.compute_rate : AF_PLAN_COMPUTE_RATE;
    double *end = af__calloc((size_t)nn + 1, sizeof(double));
    double *ready = af__calloc((size_t)nn + 1, sizeof(double));
    int32_t *eoff = af__calloc((size_t)nn + 2, sizeof(int32_t));
    int32_t *eto = af__malloc(((size_t)p->n_edges + 1) * sizeof(int32_t));
    if (!end || !ready || !eoff || !eto) {
        af__free(end), af__free(ready), af__free(eoff), af__free(eto);
        return AF_ENOMEM;
    }
    for (int32_t e = 0; e < p->n_edges; e++)
        eoff[p->edges[e].from + 1]++;
    for (int32_t v = 0; v < nn; v++)
        eoff[v + 1] += eoff[v];
    for (int32_t e = 0; e < p->n_edges; e++)
        eto[eoff[p->edges[e].from]++] = p->edges[e].to;
    for (int32_t v = nn; v > 0; v--)
        eoff[v] = eoff[v - 1];
    eoff[0] = 0;
    double stream[2] = {0, 0}, top = 0;
    for (int32_t s = 0; s < nn; s++) {
        int32_t v = p->order[s];
        const af_node_info_t *nd = af_graph_node(g, v);
        int copy = is_swap(nd);
        double t0 = stream[copy] > ready[v] ? stream[copy] : ready[v];
        for (int32_t k = 0; k < nd->n_preds; k++)
            if (end[nd->preds[k]] > t0)
                t0 = end[nd->preds[k]];
        double dur =
            copy && nd->n_inputs > 0
                ? af__swap_seconds(&p->opts, (uint64_t)af_graph_tensor(g, nd->inputs[0])->bytes)
                : af__node_cost(g, v) / rate;
        end[v] = stream[copy] = t0 + dur;
        top = end[v] > top ? end[v] : top;
        for (int32_t k = eoff[v]; k < eoff[v + 1]; k++)
            if (end[v] > ready[eto[k]])
                ready[eto[k]] = end[v];
    }
    *seconds = top;
    af__free(end), af__free(ready), af__free(eoff), af__free(eto);
    return 0;
}
