/*
 * A rematerialisation schedule (af_step_t list over a source graph) -> a rewritten graph -> an
 * ordinary plan.
 *
 * Replay: every source tensor has a current copy (a tensor id of the new graph). A step RUN v
 * reads the current copies of v's inputs; its first run is node v itself (its outputs keep
 * their ids), every later run is a new node — same op, attributes, cost and in-place hints —
 * whose outputs are new tensors that become the current copies (a view's copy is a view of the
 * current copy of its base). SWAP_OUT t adds a SwapOut node from t's current copy to a new host
 * tensor; SWAP_IN t adds a SwapIn node from t's latest host copy to a new arena tensor, which
 * becomes current. So a copy lives from its producer to its last reader: dropping a tensor is
 * simply not reading that copy again.
 *
 * The new graph keeps every source tensor and node at its id (new ones are appended), so graph
 * inputs, outputs and their ids are unchanged for the caller. New names are the source name
 * with "@r<k>" (k-th recompute), "@host<k>", "@in<k>" or "@out<k>", made unique if the source
 * already uses one. The steps give the order; it is topological in the new graph by
 * construction (every read is of a copy an earlier step made).
 */
#include "planner/budget_int.h"

#include <stdio.h>
#include <string.h>

typedef struct rw {
    const af_graph_t *g;
    int32_t nt, nn;
    int32_t *cur;      /* per source tensor: current copy, -1 none */
    int32_t *host;     /* per source tensor: latest host copy, -1 none */
    int32_t *runs;     /* per source node: runs so far */
    int32_t *src_base; /* per source tensor: the copy its view output aliases (first run) */
    int32_t *final_in; /* per source tensor: the step of the SwapIn that makes a graph output's
                          last copy, which takes the output's id; -1 none */
    int32_t *first;    /* per source tensor: the copy its producer's first run writes when the
                          id goes to a SwapIn (final_in), else -1 */
    int32_t *t_origin, *t_base; /* per new tensor (id - nt): source tensor, base copy or -1 */
    uint8_t *t_kind;            /* per new tensor: COPY_RECOMPUTED, COPY_HOST, COPY_SWAPPED_IN */
    size_t n_newt, cap_newt;
    int32_t *n_origin; /* per new node (id - nn): source node or -1 */
    uint8_t *n_role;
    int32_t *n_io_off; /* new node k's tensors: io[n_io_off[k] .. n_io_off[k + 1]) */
    size_t n_newn, cap_newn, cap_off;
    int32_t *io; /* inputs then outputs of the new nodes */
    size_t n_io, cap_io;
    int32_t *sio; /* inputs of the source nodes at their first run */
    size_t n_sio, cap_sio;
    int32_t *src_io_off; /* per source node: offset of its inputs in sio */
    int32_t *order;
    size_t n_order;
} rw_t;

static void rw_free(rw_t *w)
{
    af__free(w->cur), af__free(w->host), af__free(w->runs), af__free(w->t_origin);
    af__free(w->final_in), af__free(w->first);
    af__free(w->src_base), af__free(w->t_base), af__free(w->t_kind), af__free(w->n_origin),
        af__free(w->n_role);
    af__free(w->n_io_off), af__free(w->io), af__free(w->sio), af__free(w->src_io_off);
    af__free(w->order);
}

static int push_io(rw_t *w, int32_t t)
{
    if (af__grow((void **)&w->io, &w->cap_io, w->n_io + 1, sizeof(int32_t)))
        return AF_ENOMEM;
    w->io[w->n_io++] = t;
    return 0;
}

static int push_sio(rw_t *w, int32_t t)
{
    if (af__grow((void **)&w->sio, &w->cap_sio, w->n_sio + 1, sizeof(int32_t)))
        return AF_ENOMEM;
    w->sio[w->n_sio++] = t;
    return 0;
}

enum { COPY_RECOMPUTED = 0, COPY_HOST = 1, COPY_SWAPPED_IN = 2, COPY_FIRST = 3 };

/* A new tensor copying source tensor `origin`; returns its id or -1 (out of memory). */
static int32_t new_tensor(rw_t *w, int32_t origin, int32_t base, int kind)
{
    size_t c1 = w->cap_newt, c2 = w->cap_newt, need = w->n_newt + 1;
    if (af__grow((void **)&w->t_origin, &c1, need, sizeof(int32_t)) ||
        af__grow((void **)&w->t_base, &c2, need, sizeof(int32_t)) ||
        af__grow((void **)&w->t_kind, &w->cap_newt, need, 1))
        return -1;
    w->t_origin[w->n_newt] = origin;
    w->t_base[w->n_newt] = base;
    w->t_kind[w->n_newt] = (uint8_t)kind;
    return w->nt + (int32_t)w->n_newt++;
}

/* Opens a new node; its inputs and outputs are pushed to io after. -1 when out of memory. */
static int32_t new_node(rw_t *w, int32_t origin, af_node_role_t role)
{
    size_t c1 = w->cap_newn, need = w->n_newn + 1;
    if (af__grow((void **)&w->n_origin, &c1, need, sizeof(int32_t)) ||
        af__grow((void **)&w->n_role, &w->cap_newn, need, 1) ||
        af__grow((void **)&w->n_io_off, &w->cap_off, need + 1, sizeof(int32_t)))
        return -1;
    w->n_origin[w->n_newn] = origin;
    w->n_role[w->n_newn] = (uint8_t)role;
    w->n_io_off[w->n_newn] = (int32_t)w->n_io;
    return w->nn + (int32_t)w->n_newn++;
}

static int step_run(rw_t *w, size_t i, int32_t v, af_error_t *err)
{
    const af_graph_t *g = w->g;
    const af_node_info_t *nd = af_graph_node(g, v);
    int32_t id = v;
    if (w->runs[v] == 0)
        w->src_io_off[v] = (int32_t)w->n_sio;
    else if ((id = new_node(w, v, AF_ROLE_RECOMPUTE)) < 0)
        return af__err(err, AF_ENOMEM, "out of memory");
    for (int32_t k = 0; k < nd->n_inputs; k++) {
        int32_t c = w->cur[nd->inputs[k]];
        if (c < 0)
            return af__err(err, AF_EINVAL, "step %zu: node '%s' reads '%s' before any step made it",
                           i, nd->name, af_graph_tensor(g, nd->inputs[k])->name);
        if (w->runs[v] ? push_io(w, c) : push_sio(w, c))
            return af__err(err, AF_ENOMEM, "out of memory");
    }
    for (int32_t k = 0; k < nd->n_outputs; k++) {
        /* a view output aliases the copy of its base that is current now */
        int32_t o = nd->outputs[k], base = -1;
        const af_tensor_info_t *oi = af_graph_tensor(g, o);
        if (oi->alias_of >= 0 && (base = w->cur[oi->alias_of]) < 0)
            return af__err(err, AF_EINVAL, "step %zu: view '%s' of '%s', which no step made", i,
                           oi->name, af_graph_tensor(g, oi->alias_of)->name);
        if (w->runs[v] == 0 && w->final_in[o] < 0) {
            w->src_base[o] = base;
            continue;
        }
        if (w->runs[v] == 0) { /* the output's id goes to its last SwapIn: a copy here */
            if ((w->first[o] = new_tensor(w, o, -1, COPY_FIRST)) < 0)
                return af__err(err, AF_ENOMEM, "out of memory");
            continue;
        }
        int32_t c = new_tensor(w, o, base, COPY_RECOMPUTED);
        if (c < 0 || push_io(w, c))
            return af__err(err, AF_ENOMEM, "out of memory");
    }
    for (int32_t k = 0; k < nd->n_outputs; k++) {
        int32_t o = nd->outputs[k];
        if (w->runs[v])
            w->cur[o] = w->io[w->n_io - (size_t)nd->n_outputs + (size_t)k];
        else
            w->cur[o] = w->first[o] >= 0 ? w->first[o] : o;
    }
    w->runs[v]++;
    w->order[w->n_order++] = id;
    return 0;
}

static int swappable(const af_graph_t *g, int32_t t)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    return af__is_arena_root(g, t) && ti->kind != AF_TENSOR_CONSTANT;
}

static int step_swap(rw_t *w, size_t i, int out, int32_t t, af_error_t *err)
{
    const af_graph_t *g = w->g;
    if (t < 0 || t >= w->nt)
        return af__err(err, AF_EINVAL, "step %zu: no tensor %d", i, t);
    const char *name = af_graph_tensor(g, t)->name;
    if (!swappable(g, t))
        return af__err(err, AF_EINVAL,
                       "step %zu: '%s' cannot be swapped (only arena tensors that are not views)",
                       i, name);
    int32_t from = out ? w->cur[t] : w->host[t];
    if (from < 0)
        return af__err(err, AF_EINVAL, "step %zu: swap %s of '%s' before %s", i, out ? "out" : "in",
                       name, out ? "any step made it" : "a swap out");
    int32_t id = new_node(w, -1, out ? AF_ROLE_SWAP_OUT : AF_ROLE_SWAP_IN);
    int32_t c = -1;
    if (id >= 0 && !out && w->final_in[t] == (int32_t)i)
        c = t; /* a graph output's last copy: the caller's tensor */
    else if (id >= 0)
        c = new_tensor(w, t, -1, out ? COPY_HOST : COPY_SWAPPED_IN);
    if (c < 0 || push_io(w, from) || push_io(w, c))
        return af__err(err, AF_ENOMEM, "out of memory");
    if (out)
        w->host[t] = c;
    else
        w->cur[t] = c;
    w->order[w->n_order++] = id;
    return 0;
}

/*
 * A graph output swapped out and back keeps its id only if its last copy is the caller's: when
 * the last step that makes a copy of output t (a root with no views) is a SWAP_IN, that SwapIn
 * writes t itself and the producer's first run writes a copy of it, so the output's bytes are
 * free while it is on the host. Otherwise t is the first run's copy, live to the end.
 */
static void find_final_ins(rw_t *w, const af_step_t *steps, size_t n)
{
    const af_graph_t *g = w->g;
    for (int32_t t = 0; t < w->nt; t++)
        w->final_in[t] = w->first[t] = -1;
    for (size_t i = 0; i < n; i++) {
        int32_t id = steps[i].id;
        if (steps[i].kind == AF_STEP_SWAP_IN && id >= 0 && id < w->nt)
            w->final_in[id] = (int32_t)i;
        else if (steps[i].kind == AF_STEP_RUN && id >= 0 && id < w->nn)
            for (int32_t k = 0; k < af_graph_node(g, id)->n_outputs; k++)
                w->final_in[af_graph_node(g, id)->outputs[k]] = -1;
    }
    for (int32_t t = 0; t < w->nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->kind != AF_TENSOR_OUTPUT || ti->alias_of >= 0 || ti->producer < 0)
            w->final_in[t] = -1;
        int32_t rt = af_graph_alias_root(g, t);
        if (rt != t)
            w->final_in[rt] = -1;
    }
}

static int replay(rw_t *w, const af_step_t *steps, size_t n, af_error_t *err)
{
    const af_graph_t *g = w->g;
    w->cur = af__malloc(((size_t)w->nt + 1) * sizeof(int32_t));
    w->host = af__malloc(((size_t)w->nt + 1) * sizeof(int32_t));
    w->runs = af__calloc((size_t)w->nn + 1, sizeof(int32_t));
    w->src_io_off = af__calloc((size_t)w->nn + 1, sizeof(int32_t));
    w->src_base = af__malloc(((size_t)w->nt + 1) * sizeof(int32_t));
    w->order = af__malloc((n + 1) * sizeof(int32_t));
    w->final_in = af__malloc(((size_t)w->nt + 1) * sizeof(int32_t));
    w->first = af__malloc(((size_t)w->nt + 1) * sizeof(int32_t));
    if (!w->cur || !w->host || !w->runs || !w->src_io_off || !w->src_base || !w->order ||
        !w->final_in || !w->first)
        return af__err(err, AF_ENOMEM, "out of memory");
    find_final_ins(w, steps, n);
    for (int32_t t = 0; t < w->nt; t++) {
        w->cur[t] = af_graph_tensor(g, t)->producer < 0 ? t : -1;
        w->host[t] = -1;
        w->src_base[t] = af_graph_tensor(g, t)->alias_of;
    }
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int32_t id = steps[i].id;
        switch (steps[i].kind) {
        case AF_STEP_RUN:
            rc = id < 0 || id >= w->nn ? af__err(err, AF_EINVAL, "step %zu: no node %d", i, id)
                                       : step_run(w, i, id, err);
            break;
        case AF_STEP_SWAP_OUT:
        case AF_STEP_SWAP_IN:
            rc = step_swap(w, i, steps[i].kind == AF_STEP_SWAP_OUT, id, err);
            break;
        default:
            rc = af__err(err, AF_EINVAL, "step %zu: unknown kind %d", i, (int)steps[i].kind);
        }
    }
    for (int32_t v = 0; v < w->nn && !rc; v++)
        if (!w->runs[v])
            rc = af__err(err, AF_EINVAL, "node '%s' never runs in the steps",
                         af_graph_node(g, v)->name);
    if (!rc && af__grow((void **)&w->n_io_off, &w->cap_off, w->n_newn + 1, sizeof(int32_t)))
        rc = af__err(err, AF_ENOMEM, "out of memory");
    if (!rc)
        w->n_io_off[w->n_newn] = (int32_t)w->n_io;
    return rc;
}

/* ---- building the new graph ------------------------------------------------------------- */

/* "<base>@<tag><k>", bumped until no source tensor (nodes: node) has the name. */
static void make_name(const rw_t *w, int node, const char *base, const char *tag, int32_t k,
                      char *out, size_t n)
{
    for (int32_t bump = 0;; bump++) {
        if (bump)
            snprintf(out, n, "%s@%s%d_%d", base, tag, k, bump);
        else
            snprintf(out, n, "%s@%s%d", base, tag, k);
        if ((node ? af_graph_find_node(w->g, out) : af_graph_find_tensor(w->g, out)) < 0)
            return;
    }
}

/* Names of every tensor of the new graph (source names kept), in names[]. */
static int name_tensors(const rw_t *w, char **names, af_error_t *err)
{
    static const char *const tags[] = {"r", "host", "in", "first"};
    int32_t *copies = af__calloc((size_t)w->nt + 1, sizeof(int32_t));
    if (!copies)
        return af__err(err, AF_ENOMEM, "out of memory");
    for (int32_t t = 0; t < w->nt + (int32_t)w->n_newt; t++) {
        int32_t o = t < w->nt ? t : w->t_origin[t - w->nt];
        const char *base = af_graph_tensor(w->g, o)->name;
        char buf[300];
        if (t >= w->nt)
            make_name(w, 0, base, tags[w->t_kind[t - w->nt]], ++copies[o], buf, sizeof buf);
        if (!(names[t] = af__strdup(t < w->nt ? base : buf))) {
            af__free(copies);
            return af__err(err, AF_ENOMEM, "out of memory");
        }
    }
    af__free(copies);
    return 0;
}

static int add_tensors(const rw_t *w, af_graph_t *g2, char **names, af_error_t *err)
{
    int rc = name_tensors(w, names, err);
    for (int32_t t = 0; t < w->nt + (int32_t)w->n_newt && !rc; t++) {
        int32_t base = t < w->nt ? w->src_base[t] : w->t_base[t - w->nt];
        af_tensor_desc_t d = af_graph_tensor_desc(w->g, t < w->nt ? t : w->t_origin[t - w->nt]);
        d.name = names[t]; /* a recomputed copy: a new name, an intermediate, its own base */
        d.kind = t < w->nt ? d.kind : AF_TENSOR_INTERMEDIATE;
        d.alias_of = base >= 0 ? names[base] : NULL;
        d.alias_offset = base >= 0 ? d.alias_offset : 0;
        rc = af_graph_add_tensor(g2, &d, NULL, err);
    }
    return rc;
}

/* Adds one node of the new graph: source node `src` (or a swap), tensors io[0 .. n_in + n_out). */
static int add_node(const rw_t *w, const af_plan_opts_t *o, af_graph_t *g2, char **names,
                    int32_t id, int32_t src, int32_t swap_t, af_node_role_t role, const int32_t *io,
                    int32_t n_in, int32_t n_out, int32_t k, af_error_t *err)
{
    const af_graph_t *g = w->g;
    const char *ptr[2 * 64];
    const char **nm = n_in + n_out <= 128 ? ptr : af__malloc(((size_t)n_in + n_out) * sizeof(*nm));
    if (!nm)
        return af__err(err, AF_ENOMEM, "out of memory");
    for (int32_t i = 0; i < n_in + n_out; i++)
        nm[i] = names[io[i]];
    const af_node_info_t *si = src >= 0 ? af_graph_node(g, src) : NULL;
    char buf[300];
    const char *tags[] = {"", "r", "out", "in"};
    if (role != AF_ROLE_RUN)
        make_name(w, 1, si ? si->name : af_graph_tensor(g, swap_t)->name, tags[role], k, buf,
                  sizeof buf);
    uint64_t bytes = swap_t >= 0 ? (uint64_t)af_graph_tensor(g, swap_t)->bytes : 0;
    af_node_desc_t d = {
        .name = role == AF_ROLE_RUN ? si->name : buf,
        .op = si                         ? si->op
              : role == AF_ROLE_SWAP_OUT ? AF_OP_SWAP_OUT
                                         : AF_OP_SWAP_IN,
        .inputs = nm,
        .n_inputs = n_in,
        .outputs = nm + n_in,
        .n_outputs = n_out,
        .cost = si ? si->cost : af__swap_seconds(o, bytes) * o->compute_rate,
        .inplace = si ? si->inplace : NULL,
        .n_inplace = si ? si->n_inplace : 0,
    };
    int rc = af_graph_add_node(g2, &d, NULL, err);
    for (int32_t a = 0; si && !rc && a < si->n_attrs; a++)
        rc = af_graph_node_set_attr(g2, id, &si->attrs[a], err);
    if (nm != ptr)
        af__free(nm);
    return rc;
}

static int add_nodes(const rw_t *w, const af_plan_opts_t *o, af_graph_t *g2, char **names,
                     af_error_t *err)
{
    const af_graph_t *g = w->g;
    int32_t *runs = af__calloc((size_t)w->nn + 1, sizeof(int32_t));
    int32_t *swaps = af__calloc((size_t)w->nt + 1, sizeof(int32_t));
    int32_t *tmp = NULL;
    size_t cap = 0;
    int rc = runs && swaps ? 0 : af__err(err, AF_ENOMEM, "out of memory");
    for (int32_t v = 0; v < w->nn && !rc; v++) { /* source nodes: inputs as at their first run */
        const af_node_info_t *nd = af_graph_node(g, v);
        if (af__grow((void **)&tmp, &cap, (size_t)nd->n_inputs + nd->n_outputs + 1, 4)) {
            rc = af__err(err, AF_ENOMEM, "out of memory");
            break;
        }
        memcpy(tmp, w->sio + w->src_io_off[v], (size_t)nd->n_inputs * sizeof(int32_t));
        for (int32_t k = 0; k < nd->n_outputs; k++)
            tmp[nd->n_inputs + k] =
                w->first[nd->outputs[k]] >= 0 ? w->first[nd->outputs[k]] : nd->outputs[k];
        rc = add_node(w, o, g2, names, v, v, -1, AF_ROLE_RUN, tmp, nd->n_inputs, nd->n_outputs, 0,
                      err);
    }
    for (size_t k = 0; k < w->n_newn && !rc; k++) {
        int32_t src = w->n_origin[k], n_io = w->n_io_off[k + 1] - w->n_io_off[k];
        const int32_t *io = w->io + w->n_io_off[k];
        af_node_role_t role = (af_node_role_t)w->n_role[k];
        int32_t swap_t = src >= 0 ? -1 : io[1] < w->nt ? io[1] : w->t_origin[io[1] - w->nt];
        int32_t n_in = src >= 0 ? af_graph_node(g, src)->n_inputs : 1;
        int32_t nth = src >= 0 ? ++runs[src] : ++swaps[swap_t];
        rc = add_node(w, o, g2, names, w->nn + (int32_t)k, src, swap_t, role, io, n_in, n_io - n_in,
                      nth, err);
    }
    af__free(runs);
    af__free(swaps);
    af__free(tmp);
    return rc;
}

/* The new graph, finalized, and the origin tables for the plan. */
static int build(const rw_t *w, const af_plan_opts_t *o, af__budget_t *b, af_error_t *err)
{
    int32_t nt2 = w->nt + (int32_t)w->n_newt, nn2 = w->nn + (int32_t)w->n_newn;
    char **names = af__calloc((size_t)nt2 + 1, sizeof(char *));
    b->node_origin = af__malloc(((size_t)nn2 + 1) * sizeof(int32_t));
    b->tensor_origin = af__malloc(((size_t)nt2 + 1) * sizeof(int32_t));
    b->role = af__calloc((size_t)nn2 + 1, 1);
    int rc = names && b->node_origin && b->tensor_origin && b->role
                 ? af_graph_create(&b->g)
                 : af__err(err, AF_ENOMEM, "out of memory");
    if (!rc && !(rc = af_graph_set_name(b->g, af_graph_name(w->g))) &&
        !(rc = add_tensors(w, b->g, names, err)) && !(rc = add_nodes(w, o, b->g, names, err)))
        rc = af_graph_finalize(b->g, err);
    for (int32_t t = 0; t < nt2 && names; t++)
        af__free(names[t]);
    af__free(names);
    if (rc)
        return rc;
    for (int32_t t = 0; t < nt2; t++)
        b->tensor_origin[t] = t < w->nt ? t : w->t_origin[t - w->nt];
    for (int32_t v = 0; v < nn2; v++) {
        b->node_origin[v] = v < w->nn ? v : w->n_origin[v - w->nn];
        b->role[v] = v < w->nn ? AF_ROLE_RUN : w->n_role[v - w->nn];
    }
    return 0;
}

/* Budget figures of a rewritten plan's report (the driver adds unbudgeted_bytes). */
static int fill_report(af_plan_t *p, const char *method)
{
    af_plan_report_t *r = &p->rep;
    const af__budget_t *b = p->budget;
    double rate = p->opts.compute_rate > 0 ? p->opts.compute_rate : AF_PLAN_COMPUTE_RATE;
    r->schedule = method;
    r->budget_method = method;
    for (int32_t v = 0; v < af_graph_node_count(b->src); v++)
        r->base_cost += af__node_cost(b->src, v);
    for (int32_t v = 0; v < af_graph_node_count(p->g); v++) {
        if (b->role[v] == AF_ROLE_RECOMPUTE) {
            r->recomputed_nodes++;
            r->extra_cost += af__node_cost(p->g, v);
        } else if (b->role[v] != AF_ROLE_RUN) {
            r->swap_nodes++;
            if (b->role[v] == AF_ROLE_SWAP_OUT)
                r->swapped_bytes +=
                    (uint64_t)af_graph_tensor(p->g, af_graph_node(p->g, v)->inputs[0])->bytes;
        }
    }
    r->plain_modelled_s = r->base_cost / rate;
    int rc = af__model_time(p, &r->modelled_s);
    if (r->modelled_s < r->plain_modelled_s) /* equal up to rounding: sums in other orders */
        r->modelled_s = r->plain_modelled_s;
    return rc;
}

int af__steps_plan(const af_graph_t *g, const af_plan_opts_t *opts, const af_step_t *steps,
                   size_t n, const char *method, af_plan_t **out, af_error_t *err)
{
    if (!g || !out || (!steps && n))
        return af__err(err, AF_EINVAL, "NULL graph, steps or output pointer");
    if (!af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "graph is not finalized");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (opts)
        o = *opts;
    rw_t w = {.g = g, .nt = af_graph_tensor_count(g), .nn = af_graph_node_count(g)};
    af__budget_t *b = af__calloc(1, sizeof(*b));
    af_plan_t *p = NULL;
    int rc = b ? replay(&w, steps, n, err) : af__err(err, AF_ENOMEM, "out of memory");
    if (!rc && !(rc = build(&w, &o, b, err))) {
        b->src = g;
        af_plan_opts_t o2 = o;
        o2.verify = 0; /* verified below, once the origins are attached */
        rc = af__plan_with_order(b->g, &o2, w.order, &p, err);
    }
    rw_free(&w);
    if (rc) {
        af__budget_free(b);
        return rc;
    }
    p->budget = b;
    p->opts.verify = o.verify;
    if ((rc = fill_report(p, method)))
        rc = af__err(err, rc, "out of memory");
    else if (o.verify)
        rc = af_plan_verify(p, err);
    if (rc) {
        af_plan_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

int af_plan_from_steps(const af_graph_t *g, const af_plan_opts_t *opts, const af_step_t *steps,
                       size_t n, af_plan_t **out, af_error_t *err)
{
    return af__steps_plan(g, opts, steps, n, "steps", out, err);
}
