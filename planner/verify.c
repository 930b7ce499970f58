/*
 * Plan verifier, independent of the placer: it recomputes every tensor's true use range from
 * the graph and the order (its own loop, not lifetime.c), then checks
 *   0. the order is a permutation of the nodes that runs every node after its predecessors;
 *   1. each arena tensor's planned lifetime covers its true uses (incl. readers of its views);
 *   2. alignment, arena bounds, views inside their root;
 *   3. no two tensors live at the same step share a byte (sweep over steps with the live set
 *      kept by offset, a bitmap over the ranks of the offsets: a newcomer is checked against its
 *      two neighbours). The only allowed sharing is a declared in-place hand-over: B over A at
 *      the node where A dies;
 *   4. (reuse on) for every byte range handed from tenant A to tenant B, each node touching A
 *      is ordered before B's producer by data edges plus the plan's reuse edges, and every
 *      other reader of an in-place donor is ordered before the node that overwrites it.
 * Check 3 is the interval sweep of the pack module (af_intervals_find_overlap, pack/verify.c),
 * given the plan's tensors as intervals of steps and its in-place hand-overs. Check 4 (and the
 * reuse edges' direction) is planner/verify_reuse.c, built from offsets, lifetimes and edges
 * with no code of the edge generator (planner/reuse.c).
 *
 * Lock rule: none; everything is per call.
 */
#include "planner/budget_int.h"
#include "planner/planner_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- plan checks ---------------------------------------------------------------------------- */

/* True use range of every tensor's root bytes, from the graph and the order alone; tb gets each
 * tensor's bytes (the checks after this pass read no tensor record unless they report). */
static int true_ranges(const af_plan_t *p, int32_t *tf, int32_t *tl, int64_t *tb)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    for (int32_t t = 0; t < nt; t++) {
        tf[t] = INT32_MAX;
        tl[t] = -1;
    }
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        int32_t r = af_graph_alias_root(g, t);
        int32_t lo = INT32_MAX, hi = -1;
        tb[t] = ti->bytes;
        if (ti->producer >= 0)
            lo = hi = p->step[ti->producer];
        if (ti->kind == AF_TENSOR_INPUT)
            lo = 0;
        for (int32_t k = 0; k < ti->n_consumers; k++) {
            int32_t s = p->step[ti->consumers[k]];
            lo = s < lo ? s : lo;
            hi = s > hi ? s : hi;
        }
        if (ti->kind == AF_TENSOR_OUTPUT)
            hi = nn - 1;
        if (hi < 0)
            continue;
        if (lo < tf[r])
            tf[r] = lo;
        if (hi > tl[r])
            tl[r] = hi;
    }
    return 0;
}

static int check_tensors(const af_plan_t *p, const int32_t *tf, const int32_t *tl,
                         const int64_t *tb, af_error_t *err)
{
    const af_graph_t *g = p->g;
    uint64_t a = p->opts.alignment;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_plan_t *x = &p->tp[t];
        if (x->where != AF_WHERE_ALIAS && x->where != AF_WHERE_ARENA)
            continue; /* no arena offset to check (host tensors: budget_verify.c) */
        /* sizes from tb: the record is read only for a message */
        if (x->where == AF_WHERE_ALIAS) {
            int32_t r = af_graph_alias_root(g, t);
            uint64_t want = p->tp[r].offset + (uint64_t)af_graph_alias_root_offset(g, t);
            if (x->offset != want ||
                (p->tp[r].where == AF_WHERE_ARENA &&
                 x->offset + (uint64_t)tb[t] > p->tp[r].offset + p->tp[r].bytes))
                return af__err(err, AF_EVERIFY, "view '%s' is not inside its base '%s'",
                               af_graph_tensor(g, t)->name, af_graph_tensor(g, r)->name);
            continue;
        }
        if (x->where != AF_WHERE_ARENA || tb[t] <= 0)
            continue;
        if (tl[t] < 0 && x->bytes == 0)
            continue; /* no step produces or reads it (a dead tensor): it needs no bytes */
        if (x->bytes < (uint64_t)tb[t])
            return af__err(err, AF_EVERIFY, "tensor '%s' reserves %llu bytes, needs %lld",
                           af_graph_tensor(g, t)->name, (unsigned long long)x->bytes,
                           (long long)tb[t]);
        if (x->offset % a)
            return af__err(err, AF_EVERIFY, "tensor '%s' at offset %llu is not %llu-aligned",
                           af_graph_tensor(g, t)->name, (unsigned long long)x->offset,
                           (unsigned long long)a);
        if (x->offset + x->bytes > p->arena)
            return af__err(err, AF_EVERIFY, "tensor '%s' [%llu, %llu) is outside the arena (%llu)",
                           af_graph_tensor(g, t)->name, (unsigned long long)x->offset,
                           (unsigned long long)(x->offset + x->bytes),
                           (unsigned long long)p->arena);
        if (tl[t] >= 0 && (x->first > tf[t] || x->last < tl[t]))
            return af__err(err, AF_EVERIFY,
                           "tensor '%s' is used in steps [%d, %d] but planned live only in "
                           "[%d, %d]",
                           af_graph_tensor(g, t)->name, tf[t], tl[t], x->first, x->last);
    }
    return 0;
}

static int check_overlaps(const af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g);
    af_interval_t *iv = af__malloc((size_t)(nt + 1) * sizeof(*iv));
    int32_t *ids = af__malloc((size_t)(nt + 1) * sizeof(*ids));
    int32_t *at = af__malloc((size_t)(nt + 1) * sizeof(*at)); /* tensor -> index in iv, or -1 */
    int32_t *donor = af__malloc((size_t)(nt + 1) * sizeof(*donor));
    if (!iv || !ids || !at || !donor) {
        af__free(iv);
        af__free(ids);
        af__free(at);
        af__free(donor);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    size_t m = 0;
    int rc = 0;
    for (int32_t t = 0; t < nt && !rc; t++) {
        const af_tensor_plan_t *x = &p->tp[t];
        at[t] = -1;
        if (x->where != AF_WHERE_ARENA || x->bytes == 0 || x->first < 0)
            continue;
        int32_t h = -1;
        if (x->inplace_of >= 0) {
            /* a declared hand-over: the donor dies at the step its successor is produced by a
             * node carrying the matching hint; the block is the first tenant's (chain root) */
            int32_t root = x->inplace_of;
            for (int32_t hops = 0; p->tp[root].inplace_of >= 0 && hops < nt; hops++)
                root = p->tp[root].inplace_of;
            const af_node_info_t *nd = af_graph_node(g, p->order[x->first]);
            for (int32_t k = 0; k < nd->n_inplace && h < 0; k++)
                if (nd->outputs[nd->inplace[k].output] == t &&
                    nd->inputs[nd->inplace[k].input] == x->inplace_of &&
                    p->tp[x->inplace_of].last == x->first && x->bytes <= p->tp[root].bytes &&
                    x->offset == p->tp[x->inplace_of].offset)
                    h = x->inplace_of;
            if (h < 0)
                rc = af__err(err, AF_EVERIFY,
                             "tensor '%s' claims an in-place hand-over from "
                             "'%s' that the graph does not allow here",
                             af_graph_tensor(g, t)->name, af_graph_tensor(g, x->inplace_of)->name);
        }
        at[t] = (int32_t)m;
        ids[m] = t;
        donor[m] = h; /* a tensor id for now: an index once every tensor has one */
        iv[m++] = (af_interval_t){x->first, (int64_t)x->last + 1, x->bytes, x->offset};
    }
    if (rc)
        goto out;
    for (size_t i = 0; i < m; i++)
        donor[i] = donor[i] >= 0 ? at[donor[i]] : -1;
    size_t ia = 0, ib = 0;
    rc = af_intervals_find_overlap(iv, m, donor, &ia, &ib);
    if (rc == AF_ENOMEM) {
        rc = af__err(err, rc, "out of memory");
    } else if (rc == AF_EVERIFY) {
        int32_t a = ids[ia], b = ids[ib];
        const af_tensor_plan_t *x = &p->tp[a], *y = &p->tp[b];
        rc = af__err(err, AF_EVERIFY,
                     "tensors '%s' (steps %d-%d, bytes [%llu, %llu)) and '%s' (steps %d-%d, "
                     "bytes [%llu, %llu)) are live at the same time and share bytes",
                     af_graph_tensor(g, a)->name, x->first, x->last, (unsigned long long)x->offset,
                     (unsigned long long)(x->offset + x->bytes), af_graph_tensor(g, b)->name,
                     y->first, y->last, (unsigned long long)y->offset,
                     (unsigned long long)(y->offset + y->bytes));
    }
out:
    af__free(iv);
    af__free(ids);
    af__free(at);
    af__free(donor);
    return rc;
}

/* The order: a permutation of the nodes (order[] and step[] agree) in which every node comes
 * after its predecessors. */
static int check_order(const af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nn = af_graph_node_count(g);
    for (int32_t v = 0; v < nn; v++) {
        int32_t s = p->step[v];
        if (s < 0 || s >= nn || p->order[s] != v)
            return af__err(err, AF_EVERIFY, "node '%s' has no consistent step in the order",
                           af_graph_node(g, v)->name);
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t k = 0; k < nd->n_preds; k++)
            if (p->step[nd->preds[k]] >= s)
                return af__err(err, AF_EVERIFY, "node '%s' runs before its predecessor '%s'",
                               nd->name, af_graph_node(g, nd->preds[k])->name);
    }
    return 0;
}

int af_plan_verify(const af_plan_t *p, af_error_t *err)
{
    if (!p)
        return af__err(err, AF_EINVAL, "NULL plan");
    int32_t nt = af_graph_tensor_count(p->g);
    int32_t *tf = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int32_t *tl = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int64_t *tb = af__malloc((size_t)(nt + 1) * sizeof(int64_t));
    int rc;
    if (!tf || !tl || !tb)
        rc = af__err(err, AF_ENOMEM, "out of memory");
    else if (!(rc = check_order(p, err)) && !(rc = true_ranges(p, tf, tl, tb)) &&
             !(rc = check_tensors(p, tf, tl, tb, err)) && !(rc = check_overlaps(p, err)) &&
             !(rc = af__budget_verify(p, err)) && !p->opts.safe_mode)
        rc = af__verify_reuse(p, err); /* check 4: planner/verify_reuse.c */
    af__free(tf);
    af__free(tl);
    af__free(tb);
    return rc;
}
