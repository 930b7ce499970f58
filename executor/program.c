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
 * - The kernel of every node, looked up once: a registered kernel, else the set's entry (its
 *   table, then its fallback table); entries that prepare a state are prepared by the session
 *   (prepare.c) once constants exist. Ops without any kernel are listed all at once.
 * - The scratch tensor of every node (an AF_TENSOR_SCRATCH output, af_kernels_lower()).
 * - The If-branch guards and the edges that order guarded nodes after their condition
 *   (guards.c).
 *
 * A program is immutable after creation and shared by the rounds that run it (reference
 * counted: a re-planned program replaces the old one while in-flight rounds finish on theirs).
 */
#include "executor/executor_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        } else if (tp->where == AF_WHERE_ARENA || tp->where == AF_WHERE_HOST) {
            /* the host tier lies behind the arena in the round's block (arena_bytes covers it) */
            p->loc[t] = AF__LOC_ARENA;
            p->off[t] =
                tp->offset + (tp->where == AF_WHERE_HOST ? af_plan_arena_bytes(p->plan) : 0);
            if (p->off[t] + p->bytes[t] > p->arena_bytes)
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
    p->arena_bytes = af_plan_arena_bytes(plan) + af_plan_host_bytes(plan); /* + host tier */
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
    if ((rc = build_tensors(p, err)) || (rc = af__prog_guards(p, err)))
        goto fail;
    size_t n = (size_t)p->n_nodes + 1;
    p->roots = af__malloc(n * sizeof(int32_t));
    p->kfn = af__calloc(n, sizeof(af_kernel_fn));
    p->kuser = af__calloc(n, sizeof(void *));
    p->kent = af__calloc(n, sizeof(*p->kent));
    p->kstate = af__calloc(n, sizeof(void *));
    p->team = af__malloc(n * sizeof(int32_t));
    p->scratch_t = af__malloc(n * sizeof(int32_t));
    p->scratch_need = af__calloc(n, sizeof(uint64_t));
    p->kname = af__calloc(n, sizeof(char *));
    p->post = af__calloc(n, 1);
    if (!p->roots || !p->kfn || !p->kuser || !p->kent || !p->kstate || !p->team || !p->scratch_t ||
        !p->scratch_need || !p->kname || !p->post) {
        rc = af__err(err, AF_ENOMEM, "out of memory compiling the plan");
        goto fail;
    }
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        if (p->init_pending[v] == 0)
            p->roots[p->n_roots++] = v;
        if (p->succ_off[v] == p->succ_off[v + 1])
            p->n_sinks++;
        if (ni->n_inputs > p->max_in)
            p->max_in = ni->n_inputs;
        if (ni->n_outputs > p->max_out)
            p->max_out = ni->n_outputs;
        p->team[v] = 1;
        p->scratch_t[v] = -1;
        for (int32_t k = 0; k < ni->n_outputs; k++)
            if (af_graph_tensor(g, ni->outputs[k])->kind == AF_TENSOR_SCRATCH)
                p->scratch_t[v] = ni->outputs[k];
    }
    if ((rc = af__prog_bind_kernels(ex, p, err)))
        goto fail;
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
    af__prog_unprepare(p);
    af__free(p->kent);
    af__free(p->kstate);
    af__free(p->team);
    af__free(p->scratch_t);
    af__free(p->scratch_need);
    af__free(p->post);
    af__free(p->kname);
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
    af__free(p->guard_t);
    af__free(p->guard_br);
    af_plan_destroy(p->own_plan);
    af_graph_destroy(p->own_graph);
    af__free(p);
}
