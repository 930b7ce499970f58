/*
 * Lifetime analysis and the simulated peak of an order.
 *
 * For an order (a topological permutation of the nodes), step[v] is v's position. A tensor is
 * allocated right before its producer runs (lazy allocation: first = step of the producer) and
 * freed after its LAST consumer on any branch (last = max step over all consumers — seed 1
 * §3.1: taking the last occurrence on one path under-estimates and corrupts). Graph inputs live
 * from step 0, outputs and constants to the final step. A view (alias) owns no memory: it keeps
 * its root base alive until the alias's own last reader. A tensor nobody produces or reads gets
 * first = last = -1.
 *
 * The peak is computed with a difference array over steps: O(tensors + steps). The report's
 * any-order bound (the bytes one node alone needs, whatever the order) is here too.
 */
#include "planner/planner_int.h"

#include <string.h>

int af__order_steps(const af_graph_t *g, const int32_t *order, int32_t *step, af_error_t *err)
{
    int32_t nn = af_graph_node_count(g);
    for (int32_t i = 0; i < nn; i++)
        step[i] = -1;
    for (int32_t s = 0; s < nn; s++) {
        int32_t v = order[s];
        if (v < 0 || v >= nn || step[v] >= 0)
            return af__err(err, AF_EINVAL, "order is not a permutation of the nodes (step %d)", s);
        step[v] = s;
    }
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t k = 0; k < nd->n_preds; k++)
            if (step[nd->preds[k]] >= step[v])
                return af__err(err, AF_EINVAL, "order is not topological: '%s' runs before '%s'",
                               nd->name, af_graph_node(g, nd->preds[k])->name);
    }
    return 0;
}

void af__lifetimes_from_steps(const af_graph_t *g, const int32_t *step, af_lifetime_t *out)
{
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    int32_t end = nn > 0 ? nn - 1 : 0;
    for (int32_t i = 0; i < nt; i++) {
        const af_tensor_info_t *t = af_graph_tensor(g, i);
        int32_t first = -1, last = -1;
        if (t->producer >= 0)
            first = step[t->producer];
        else if (t->kind == AF_TENSOR_INPUT || t->kind == AF_TENSOR_CONSTANT)
            first = 0;
        for (int32_t k = 0; k < t->n_consumers; k++)
            if (step[t->consumers[k]] > last)
                last = step[t->consumers[k]];
        if (t->kind == AF_TENSOR_OUTPUT || t->kind == AF_TENSOR_CONSTANT)
            last = end;
        if (first < 0 && t->alias_of < 0 && last >= 0)
            first = 0; /* cannot happen in a validated graph; keep the interval sane */
        if (first >= 0 && last < first)
            last = first; /* produced, never read: lives during its producer's step */
        out[i].first = first;
        out[i].last = last;
    }
    /* Views: an alias without a producer exists from its root's start; every alias keeps its
     * root alive to the alias's last reader. Roots are never aliases, so one pass suffices. */
    for (int32_t i = 0; i < nt; i++) {
        int32_t r = af_graph_alias_root(g, i); /* the root table: no tensor record read */
        if (r == i)
            continue;
        if (out[i].first < 0 && out[i].last >= 0)
            out[i].first = out[r].first >= 0 ? out[r].first : 0;
        if (out[i].first >= 0 && out[i].last < out[i].first)
            out[i].last = out[i].first;
        if (out[i].first < 0)
            continue;
        if (out[r].first < 0 || out[i].first < out[r].first)
            out[r].first = out[i].first;
        if (out[i].last > out[r].last)
            out[r].last = out[i].last;
    }
}

int af_lifetimes_compute(const af_graph_t *g, const int32_t *order, af_lifetime_t *out,
                         af_error_t *err)
{
    if (!af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "graph is not finalized");
    int32_t nn = af_graph_node_count(g);
    int32_t *step = af__malloc((size_t)(nn + 1) * sizeof(*step));
    if (!step)
        return af__err(err, AF_ENOMEM, "out of memory");
    int rc = af__order_steps(g, order, step, err);
    if (!rc)
        af__lifetimes_from_steps(g, step, out);
    af__free(step);
    return rc;
}

int af__is_arena_root_in(const af_graph_t *g, int32_t t, int host)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    return ti->alias_of < 0 && ti->kind != AF_TENSOR_CONSTANT && ti->bytes > 0 &&
           !(host && af__is_host_tier(g, t));
}

int af__is_arena_root(const af_graph_t *g, int32_t t)
{
    return af__is_arena_root_in(g, t, 1);
}

int af__graph_has_host_tier(const af_graph_t *g)
{
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        const char *op = af_graph_node(g, v)->op;
        if (op[0] == AF_OP_SWAP_OUT[0] && strcmp(op, AF_OP_SWAP_OUT) == 0)
            return 1;
    }
    return 0;
}

uint64_t af__peak_of(const af_graph_t *g, const af_lifetime_t *lt, uint64_t alignment,
                     int32_t *peak_step, int64_t *diff)
{
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    memset(diff, 0, (size_t)(nn + 1) * sizeof(*diff));
    int host = af__graph_has_host_tier(g);
    for (int32_t i = 0; i < nt; i++) {
        if (!af__is_arena_root_in(g, i, host) || lt[i].first < 0)
            continue;
        int64_t b = (int64_t)af__align_up((uint64_t)af_graph_tensor(g, i)->bytes, alignment);
        diff[lt[i].first] += b;
        diff[lt[i].last + 1] -= b;
    }
    int64_t cur = 0, best = 0;
    int32_t best_s = 0;
    for (int32_t s = 0; s < nn; s++) {
        cur += diff[s];
        if (cur > best) {
            best = cur;
            best_s = s;
        }
    }
    if (peak_step)
        *peak_step = best_s;
    return (uint64_t)best;
}

int af_order_peak(const af_graph_t *g, const int32_t *order, uint64_t alignment, uint64_t *peak,
                  int32_t *peak_step, af_error_t *err)
{
    if (!af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "graph is not finalized");
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    af_lifetime_t *lt = af__malloc((size_t)(nt + 1) * sizeof(*lt));
    int64_t *diff = af__malloc((size_t)(nn + 2) * sizeof(*diff));
    if (!lt || !diff) {
        af__free(lt);
        af__free(diff);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    int rc = af_lifetimes_compute(g, order, lt, err);
    if (!rc)
        *peak = af__peak_of(g, lt, alignment ? alignment : 1, peak_step, diff);
    af__free(lt);
    af__free(diff);
    return rc;
}

/* 1 when a tensor before position j of nd's list io (inputs, then outputs) has root r. */
static int root_seen(const af_graph_t *g, const af_node_info_t *nd, int io, int32_t j, int32_t r)
{
    for (int io2 = 0; io2 <= io; io2++) {
        int32_t c2 = io2 ? nd->n_outputs : nd->n_inputs;
        const int32_t *t2 = io2 ? nd->outputs : nd->inputs;
        int32_t lim = io2 == io ? j : c2;
        for (int32_t m = 0; m < lim; m++)
            if (af_graph_alias_root(g, t2[m]) == r)
                return 1;
    }
    return 0;
}

#define AF__BOUND_SEEN 32 /* arena roots remembered per node; beyond, root_seen rescans */

uint64_t af__plan_any_order_bound(af_plan_t *p)
{
    const af_graph_t *g = p->g;
    uint64_t best = 0;
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        uint64_t sum = 0;
        int32_t seen[AF__BOUND_SEEN], n_seen = 0; /* the arena roots counted at v, while they fit */
        for (int io = 0; io < 2; io++) {
            int32_t cnt = io ? nd->n_outputs : nd->n_inputs;
            const int32_t *ts = io ? nd->outputs : nd->inputs;
            for (int32_t j = 0; j < cnt; j++) {
                if (af__plan_poll(p)) /* per tensor: a node may have thousands */
                    return 0;         /* the caller sees p->stopped */
                int32_t r = af_graph_alias_root(g, ts[j]);
                if (p->group[r] < 0)
                    continue;
                int dup = 0; /* count each root once per node */
                if (n_seen < AF__BOUND_SEEN) {
                    for (int32_t m = 0; m < n_seen && !dup; m++)
                        dup = seen[m] == r;
                    if (!dup)
                        seen[n_seen++] = r;
                } else {
                    dup = root_seen(g, nd, io, j, r);
                }
                if (!dup)
                    sum += p->tp[r].bytes;
            }
        }
        /* an in-place pair may share one block: count only the larger of the two */
        for (int32_t k = 0; k < nd->n_inplace; k++) {
            int32_t a = af_graph_alias_root(g, nd->inputs[nd->inplace[k].input]);
            int32_t b = af_graph_alias_root(g, nd->outputs[nd->inplace[k].output]);
            if (a == b || p->group[a] < 0 || p->group[b] < 0)
                continue;
            uint64_t m = p->tp[a].bytes < p->tp[b].bytes ? p->tp[a].bytes : p->tp[b].bytes;
            sum = sum > m ? sum - m : 0;
        }
        if (sum > best)
            best = sum;
    }
    return best;
}
