/*
 * Compiling a plan for execution: everything a round needs, computed once per plan so that the
 * per-node work at run time is a few loads and atomic decrements.
 *
 * - Successor lists (CSR) over the union of data edges and the plan's reuse edges, deduplicated,
 *   and the initial pending count of every node (its distinct predecessors in that union). Any
 *   order the workers pick that respects these edges is safe for the planned arena: that is
 *   the contract af_plan_verify() proves.
 * - Tensor locations: arena offset, constant storage offset, dynamic (served at run time), or a
 *   view of another tensor (resolved through its alias root).
 * - The kernel of every node, looked up once.
 *
 * A program is immutable after creation and shared by the rounds that run it (reference
 * counted: a re-planned program replaces the old one while in-flight rounds finish on theirs).
 */
#include "executor/executor_int.h"

#include <stdlib.h>
#include <string.h>

/* Arena byte range of a tensor (resolving views); 0 when it has no arena bytes. */
static int arena_range(const af_plan_t *plan, int32_t t, uint64_t *lo, uint64_t *hi)
{
    const af_graph_t *g = af_plan_graph(plan);
    int32_t r = af_graph_alias_root(g, t);
    const af_tensor_plan_t *rp = af_plan_tensor(plan, r);
    int64_t bytes = af_graph_tensor(g, t)->bytes;
    if (rp->where != AF_WHERE_ARENA || bytes <= 0)
        return 0;
    *lo = rp->offset + (uint64_t)af_graph_alias_root_offset(g, t);
    *hi = *lo + (uint64_t)bytes;
    return 1;
}

/*
 * In-place guard edges. A node writing output B in place of input A overwrites bytes that other
 * readers of A (or of views sharing A's bytes) may still need when they are not ordered before
 * it by data edges. The plan order runs them first; the edges reader -> producer(B) make every
 * parallel order do the same. Only readers earlier in the plan order get an edge (a later
 * reader would be a planner error the verifier reports), so no cycle can form.
 */
static int add_inplace_guards(const af_plan_t *plan, af_reuse_edge_t **e, size_t *ne, size_t *cap)
{
    const af_graph_t *g = af_plan_graph(plan);
    int32_t nt = af_graph_tensor_count(g);
    for (int32_t b = 0; b < nt; b++) {
        const af_tensor_plan_t *bp = af_plan_tensor(plan, b);
        int32_t pb = af_graph_tensor(g, b)->producer;
        uint64_t blo, bhi, tlo, thi;
        if (bp->inplace_of < 0 || pb < 0 || !arena_range(plan, b, &blo, &bhi))
            continue;
        int32_t sb = af_plan_step_of(plan, pb);
        for (int32_t t = 0; t < nt; t++) {
            const af_tensor_plan_t *tp = af_plan_tensor(plan, t);
            if (t == b || !arena_range(plan, t, &tlo, &thi) || thi <= blo || tlo >= bhi)
                continue;
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            int32_t first = tp->first, last = tp->last;
            if (ti->alias_of >= 0) { /* views live as long as their root says */
                const af_tensor_plan_t *rp = af_plan_tensor(plan, af_graph_alias_root(g, t));
                first = rp->first;
                last = rp->last;
            }
            if (first > sb || last < sb)
                continue;
            for (int32_t j = 0; j < ti->n_consumers; j++) {
                int32_t r = ti->consumers[j];
                if (r == pb || af_plan_step_of(plan, r) > sb)
                    continue;
                if (af__grow((void **)e, cap, *ne + 1, sizeof(**e)))
                    return AF_ENOMEM;
                (*e)[(*ne)++] = (af_reuse_edge_t){r, pb, t, b};
            }
        }
    }
    return 0;
}

/* Adds r -> to for every node r touching tensor t (producer and readers, views included) that
 * runs before `to` in the plan order. views: CSR of the views of each root tensor. */
static int add_toucher_edges(const af_plan_t *plan, int32_t t, int32_t to, const int32_t *voff,
                             const int32_t *views, af_reuse_edge_t **e, size_t *ne, size_t *cap)
{
    const af_graph_t *g = af_plan_graph(plan);
    int32_t st = af_plan_step_of(plan, to);
    for (int32_t k = voff[t] - 1; k < voff[t + 1]; k++) {
        int32_t x = k < voff[t] ? t : views[k];
        const af_tensor_info_t *xi = af_graph_tensor(g, x);
        for (int32_t j = -1; j < xi->n_consumers; j++) {
            int32_t r = j < 0 ? xi->producer : xi->consumers[j];
            if (r < 0 || r == to || af_plan_step_of(plan, r) > st)
                continue;
            if (af__grow((void **)e, cap, *ne + 1, sizeof(**e)))
                return AF_ENOMEM;
            (*e)[(*ne)++] = (af_reuse_edge_t){r, to, t, -1};
        }
    }
    return 0;
}

static __thread const af_plan_t *tl_sort_plan; /* qsort context (no qsort_r in C11) */

static int by_buffer_then_first(const void *a, const void *b)
{
    const af_tensor_plan_t *x = af_plan_tensor(tl_sort_plan, *(const int32_t *)a);
    const af_tensor_plan_t *y = af_plan_tensor(tl_sort_plan, *(const int32_t *)b);
    if (x->buffer != y->buffer)
        return x->buffer < y->buffer ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * Shared-object plans: the planner emits reuse edges for offset mode only, so the executor
 * orders consecutive tenants of a shared buffer itself: every node touching tenant A runs
 * before the producer of the next tenant B (earlier tenants are covered transitively).
 */
static int add_shared_edges(const af_plan_t *plan, af_reuse_edge_t **e, size_t *ne, size_t *cap)
{
    const af_plan_opts_t *o = af_plan_opts(plan);
    if (o->mode != AF_MODE_SHARED || o->safe_mode)
        return 0;
    const af_graph_t *g = af_plan_graph(plan);
    int32_t nt = af_graph_tensor_count(g), n = 0, rc = 0;
    int32_t *ids = af__malloc(((size_t)nt + 1) * sizeof(int32_t));
    int32_t *voff = af__calloc((size_t)nt + 2, sizeof(int32_t));
    int32_t *views = af__malloc(((size_t)nt + 1) * sizeof(int32_t));
    if (!ids || !voff || !views) {
        rc = AF_ENOMEM;
        goto out;
    }
    for (int32_t t = 0; t < nt; t++) { /* views grouped by alias root (CSR) */
        int32_t r = af_graph_alias_root(g, t);
        if (r != t)
            voff[r + 1]++;
    }
    for (int32_t t = 0; t < nt; t++)
        voff[t + 1] += voff[t];
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = af_graph_alias_root(g, t);
        if (r != t)
            views[voff[r]++] = t;
    }
    for (int32_t t = nt; t > 0; t--)
        voff[t] = voff[t - 1];
    voff[0] = 0;
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_plan_t *tp = af_plan_tensor(plan, t);
        if (tp->where == AF_WHERE_ARENA && tp->buffer >= 0 && tp->first >= 0)
            ids[n++] = t;
    }
    tl_sort_plan = plan;
    qsort(ids, (size_t)n, sizeof(int32_t), by_buffer_then_first);
    for (int32_t i = 0; i + 1 < n && !rc; i++) {
        int32_t a = ids[i], b = ids[i + 1];
        int32_t pb = af_graph_tensor(g, b)->producer;
        if (af_plan_tensor(plan, a)->buffer != af_plan_tensor(plan, b)->buffer || pb < 0)
            continue;
        rc = add_toucher_edges(plan, a, pb, voff, views, e, ne, cap);
    }
out:
    af__free(ids);
    af__free(voff);
    af__free(views);
    return rc;
}

/* Builds the successor CSR and initial pending counts for a plan. */
static int build_edges(const af_plan_t *plan, int data_only, int32_t **off_out, int32_t **succ_out,
                       int32_t **pend_out)
{
    const af_graph_t *g = af_plan_graph(plan);
    int32_t n = af_graph_node_count(g);
    size_t ne_all = 0, cap_all = 0;
    af_reuse_edge_t *re = NULL;
    if (!data_only) {
        int32_t npe = af_plan_reuse_edge_count(plan);
        if (af__grow((void **)&re, &cap_all, (size_t)npe + 1, sizeof(*re)))
            return AF_ENOMEM;
        if (npe)
            memcpy(re, af_plan_reuse_edges(plan), (size_t)npe * sizeof(*re));
        ne_all = (size_t)npe;
        if (add_inplace_guards(plan, &re, &ne_all, &cap_all) ||
            add_shared_edges(plan, &re, &ne_all, &cap_all)) {
            af__free(re);
            return AF_ENOMEM;
        }
    }
    int32_t ne = (int32_t)ne_all;
    int32_t *off = af__calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *pend = af__calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *mark = af__malloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *roff = af__calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *rto = af__malloc(((size_t)ne + 1) * sizeof(int32_t));
    size_t total = 0;
    int32_t *succ = NULL;
    if (!off || !pend || !mark || !roff || !rto)
        goto oom;
    /* Reuse edges grouped by their source node. An edge against the plan order could close a
     * cycle (a round that never ends): such a plan is refused. */
    for (int32_t i = 0; i < ne; i++) {
        if (re[i].from < 0 || re[i].from >= n || re[i].to < 0 || re[i].to >= n)
            continue;
        if (af_plan_step_of(plan, re[i].from) >= af_plan_step_of(plan, re[i].to)) {
            af__free(off);
            af__free(pend);
            af__free(mark);
            af__free(roff);
            af__free(rto);
            af__free(re);
            return AF_EVERIFY;
        }
        roff[re[i].from + 1]++;
    }
    for (int32_t i = 0; i < n; i++)
        roff[i + 1] += roff[i];
    for (int32_t i = 0; i < ne; i++)
        if (re[i].from >= 0 && re[i].from < n && re[i].to >= 0 && re[i].to < n)
            rto[roff[re[i].from]++] = re[i].to;
    for (int32_t i = n; i > 0; i--)
        roff[i] = roff[i - 1];
    roff[0] = 0;
    for (int32_t i = 0; i < n; i++)
        total += (size_t)af_graph_node(g, i)->n_succs + (size_t)(roff[i + 1] - roff[i]);
    succ = af__malloc((total + 1) * sizeof(int32_t));
    if (!succ)
        goto oom;
    for (int32_t i = 0; i < n; i++)
        mark[i] = -1;
    int32_t k = 0;
    for (int32_t v = 0; v < n; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        off[v] = k;
        for (int32_t j = 0; j < ni->n_succs; j++) {
            int32_t s = ni->succs[j];
            if (s != v && mark[s] != v) {
                mark[s] = v;
                succ[k++] = s;
                pend[s]++;
            }
        }
        for (int32_t j = roff[v]; j < roff[v + 1]; j++) {
            int32_t s = rto[j];
            if (s != v && mark[s] != v) {
                mark[s] = v;
                succ[k++] = s;
                pend[s]++;
            }
        }
    }
    off[n] = k;
    af__free(mark);
    af__free(roff);
    af__free(rto);
    af__free(re);
    *off_out = off;
    *succ_out = succ;
    *pend_out = pend;
    return 0;
oom:
    af__free(off);
    af__free(pend);
    af__free(mark);
    af__free(roff);
    af__free(rto);
    af__free(succ);
    af__free(re);
    return AF_ENOMEM;
}

int af_executor_critical_path(const af_plan_t *p, double *cost, int32_t *nodes)
{
    if (!p)
        return AF_EINVAL;
    int32_t *off, *succ, *pend;
    int rc = build_edges(p, 0, &off, &succ, &pend);
    if (rc)
        return rc;
    const af_graph_t *g = af_plan_graph(p);
    int32_t n = af_graph_node_count(g);
    const int32_t *order = af_plan_order(p);
    double *best = af__calloc((size_t)n + 1, sizeof(double));
    int32_t *len = af__calloc((size_t)n + 1, sizeof(int32_t));
    if (!best || !len) {
        rc = AF_ENOMEM;
        goto out;
    }
    double top = 0;
    int32_t top_len = 0;
    /* The plan order respects data and reuse edges, so one forward pass suffices. */
    for (int32_t i = 0; i < n; i++) {
        int32_t v = order[i];
        double c = af_graph_node(g, v)->cost;
        best[v] += c > 0 ? c : 1;
        len[v] += 1;
        if (best[v] > top)
            top = best[v], top_len = len[v];
        for (int32_t j = off[v]; j < off[v + 1]; j++) {
            int32_t s = succ[j];
            if (best[v] > best[s])
                best[s] = best[v], len[s] = len[v];
        }
    }
    if (cost)
        *cost = top;
    if (nodes)
        *nodes = top_len;
out:
    af__free(best);
    af__free(len);
    af__free(off);
    af__free(succ);
    af__free(pend);
    return rc;
}

/* Tensor locations, constant layout, graph inputs/outputs. */
static int build_tensors(af__prog_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = p->n_tensors;
    p->loc = af__calloc((size_t)nt + 1, 1);
    p->root = af__malloc(((size_t)nt + 1) * sizeof(int32_t));
    p->off = af__calloc((size_t)nt + 1, sizeof(uint64_t));
    p->bytes = af__calloc((size_t)nt + 1, sizeof(uint64_t));
    p->slot_of = af__malloc(((size_t)nt + 1) * sizeof(int32_t));
    p->inputs = af__malloc(((size_t)nt + 1) * sizeof(int32_t));
    p->outputs = af__malloc(((size_t)nt + 1) * sizeof(int32_t));
    if (!p->loc || !p->root || !p->off || !p->bytes || !p->slot_of || !p->inputs || !p->outputs)
        return af__err(err, AF_ENOMEM, "out of memory compiling the plan");
    uint64_t cbytes = 0;
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        const af_tensor_plan_t *tp = af_plan_tensor(p->plan, t);
        p->root[t] = af_graph_alias_root(g, t);
        p->bytes[t] = ti->bytes >= 0 ? (uint64_t)ti->bytes : 0;
        p->slot_of[t] = -1;
        if (ti->kind == AF_TENSOR_INPUT && ti->alias_of < 0)
            p->slot_of[t] = p->n_inputs, p->inputs[p->n_inputs++] = t;
        else if (ti->kind == AF_TENSOR_OUTPUT)
            p->slot_of[t] = -2 - p->n_outputs, p->outputs[p->n_outputs++] = t;
        if (ti->alias_of >= 0)
            continue; /* second pass */
        if (ti->kind == AF_TENSOR_CONSTANT || tp->where == AF_WHERE_CONSTANT) {
            p->loc[t] = AF__LOC_CONST;
            p->off[t] = cbytes;
            cbytes = af__align_up(cbytes + p->bytes[t], 64);
        } else if (tp->where == AF_WHERE_DYNAMIC || ti->bytes < 0) {
            p->loc[t] = AF__LOC_DYN;
            p->n_dyn++;
        } else if (tp->where == AF_WHERE_ARENA) {
            p->loc[t] = AF__LOC_ARENA;
            p->off[t] = tp->offset;
            if (tp->offset + p->bytes[t] > p->arena_bytes)
                return af__err(err, AF_EVERIFY,
                               "tensor '%s' (offset %llu, %llu bytes) lies outside the arena "
                               "(%llu bytes)",
                               ti->name, (unsigned long long)tp->offset,
                               (unsigned long long)p->bytes[t], (unsigned long long)p->arena_bytes);
        }
    }
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->alias_of < 0)
            continue;
        int32_t r = p->root[t];
        p->off[t] = (uint64_t)af_graph_alias_root_offset(g, t);
        p->loc[t] = p->loc[r] == AF__LOC_DYN ? AF__LOC_ALIAS_DYN : AF__LOC_ALIAS;
        if (p->loc[r] == AF__LOC_NONE)
            p->loc[t] = AF__LOC_NONE;
    }
    p->const_bytes = cbytes;
    return 0;
}

int af__prog_create(af_executor_t *ex, const af_plan_t *plan, af__prog_t **out, af_error_t *err)
{
    const af_graph_t *g = af_plan_graph(plan);
    af__prog_t *p = af__calloc(1, sizeof(*p));
    if (!p)
        return af__err(err, AF_ENOMEM, "out of memory compiling the plan");
    p->plan = plan;
    p->g = g;
    p->n_nodes = af_graph_node_count(g);
    p->n_tensors = af_graph_tensor_count(g);
    p->arena_bytes = af_plan_arena_bytes(plan);
    atomic_init(&p->refs, 1);
    int rc = build_edges(plan, ex->opts.debug_ignore_reuse_edges, &p->succ_off, &p->succ,
                         &p->init_pending);
    if (rc) {
        af__err(err, rc,
                rc == AF_EVERIFY ? "the plan has a reuse edge against its own order (refused: it "
                                   "could deadlock a round)"
                                 : "out of memory compiling the plan");
        goto fail;
    }
    if ((rc = build_tensors(p, err)))
        goto fail;
    size_t n = (size_t)p->n_nodes + 1;
    p->roots = af__malloc(n * sizeof(int32_t));
    p->kfn = af__calloc(n, sizeof(af_kernel_fn));
    p->kuser = af__calloc(n, sizeof(void *));
    if (!p->roots || !p->kfn || !p->kuser) {
        rc = af__err(err, AF_ENOMEM, "out of memory compiling the plan");
        goto fail;
    }
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        if (p->init_pending[v] == 0)
            p->roots[p->n_roots++] = v;
        if (ni->n_inputs > p->max_in)
            p->max_in = ni->n_inputs;
        if (ni->n_outputs > p->max_out)
            p->max_out = ni->n_outputs;
        if (af__exec_kernel_lookup(ex, ni->op, &p->kfn[v], &p->kuser[v])) {
            rc = af__err(err, AF_ENOTSUP,
                         "no kernel for op '%s' (node '%s') in kernel set '%s'; register one "
                         "with af_executor_register_kernel()",
                         ni->op, ni->name, ex->opts.kernels);
            goto fail;
        }
    }
    *out = p;
    return 0;
fail:
    af__prog_release(p);
    return rc;
}

void af__prog_release(af__prog_t *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    af__free(p->succ_off);
    af__free(p->succ);
    af__free(p->init_pending);
    af__free(p->roots);
    af__free(p->kfn);
    af__free(p->kuser);
    af__free(p->loc);
    af__free(p->root);
    af__free(p->off);
    af__free(p->bytes);
    af__free(p->slot_of);
    af__free(p->inputs);
    af__free(p->outputs);
    af_plan_destroy(p->own_plan);
    af_graph_destroy(p->own_graph);
    af__free(p);
}
