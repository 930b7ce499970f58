/*
 * Preparing a program's nodes for its session: the kernel set's context (oneDNN: one engine,
 * one stream per worker), then, node by node, the entry's prepare step (primitive descriptor,
 * primitive, memory objects per worker, weights reordered once into the layout the primitive
 * wants). An entry that cannot express its node exactly answers AF_ENOTSUP and the node falls
 * back to the reference row of its op, whose check must accept the node (the refusal is the
 * session's error otherwise): the choice is made here, once, never at run time. Each node's OpenMP
 * team is decided here too (af__kernel_team) and the primitives are made on a thread whose OpenMP
 * team has that size, because oneDNN fixes a primitive's thread count when it is created.
 *
 * Working memory: a node that needs some gets it from its scratch tensor (planned, in the arena,
 * af_kernels_lower) — which must be large enough, or the graph was lowered for other options —
 * or, when the graph has none, from a per-worker buffer allocated here, outside the arena, and
 * reported as unplanned.
 *
 * Not thread-safe: called while no round of the program runs (session creation, re-plan, or a
 * round start that found the constants changed and no round in flight).
 */
#include "executor/executor_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static char *dup_name(const char *a, const char *b)
{
    size_t na = strlen(a), nb = b ? strlen(b) : 0;
    char *s = af__malloc(na + nb + 2);
    if (!s)
        return NULL;
    memcpy(s, a, na);
    if (b) {
        s[na] = ':';
        memcpy(s + na + 1, b, nb + 1);
    } else {
        s[na] = 0;
    }
    return s;
}

/* Falls back to the reference row for node v (its check must accept the node); the reason
 * the set's own row refused is in why. */
static int fall_back(af__prog_t *p, const af__kernel_set_t *ks, int32_t v, const af_error_t *why,
                     af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(p->g, v);
    const af__kernel_entry_t *e = af__kref_find(ni->op);
    const char *reason = why->msg[0] ? why->msg : "not supported";
    if (!e)
        return af__err(err, AF_ENOTSUP,
                       "node '%s' (op %s): %s, and kernel set '%s' has no reference kernel for it",
                       ni->name, ni->op, reason, ks->name);
    af_error_t ce;
    af_error_clear(&ce);
    if (e->check && e->check(p->g, v, &ce))
        return af__err(err, AF_ENOTSUP,
                       "kernel set '%s' cannot run node '%.60s' (%.40s): %.200s; the reference "
                       "kernel: %.200s",
                       ks->name, ni->name, ni->op, reason, ce.msg[0] ? ce.msg : "not implemented");
    p->kent[v] = e;
    p->kfn[v] = e->fn;
    p->n_fallback++;
    /* the report names the kernel and why the set's own one does not run it */
    char name[AF_ERROR_MSG_MAX + 64];
    size_t ns = strlen(ks->name);
    if (!strncasecmp(reason, ks->name, ns) && reason[ns] == ':') /* "oneDNN: ..." */
        snprintf(name, sizeof name, "reference (%s)", reason);
    else
        snprintf(name, sizeof name, "reference (%s: %s)", ks->name, reason);
    if (!(p->kname[v] = dup_name(name, NULL)))
        return af__err(err, AF_ENOMEM, "out of memory preparing the kernels");
    return 0;
}

/* Checks node v's working memory against its planned scratch tensor. */
static int check_scratch(af__prog_t *p, int32_t v, uint64_t need, af_error_t *err)
{
    p->scratch_need[v] = need;
    int32_t t = p->scratch_t[v];
    if (t >= 0 && need <= p->bytes[t])
        return 0;
    /* no scratch tensor, or one too small (lowered for other options): the node takes the
     * unplanned per-worker buffer, reported in the session's stats */
    if (need > p->unplanned_scratch)
        p->unplanned_scratch = af__align_up(need, 64);
    return 0;
}

/* Prepares node v with entry e. */
static int prepare_node(af__prog_t *p, const af__kernel_set_t *ks, int32_t v,
                        const af__kprep_t *base, af_error_t *err)
{
    af__kprep_t in = *base;
    in.node = v;
    in.team = af__kernel_team(p->g, v, p->intra);
    af__kprep_out_t out;
    memset(&out, 0, sizeof out);
    af_error_t why;
    af_error_clear(&why);
    if (ks->backend)
        ks->backend->set_team(in.team);
    int rc = p->kent[v]->prepare(&in, &out, &why);
    if (rc == AF_ENOTSUP)
        return fall_back(p, ks, v, &why, err);
    if (rc)
        return af__err(err, rc, "node '%s' (op %s): %s", af_graph_node(p->g, v)->name,
                       af_graph_node(p->g, v)->op, why.msg[0] ? why.msg : af_strerror(rc));
    p->kstate[v] = out.state;
    if (out.post_fused) /* the primitive applies them (a sum: from what its dst holds) */
        p->post[v] = af_graph_node_attr(p->g, v, "fused_sum") ? AF__POST_PRIM : AF__POST_NONE;
    p->team[v] = in.team;
    if (in.team > p->max_team)
        p->max_team = in.team;
    p->prepacked_bytes += out.const_bytes;
    p->n_backend++;
    if (!(p->kname[v] = dup_name(ks->name, out.impl[0] ? out.impl : NULL)))
        return af__err(err, AF_ENOMEM, "out of memory preparing the kernels");
    return check_scratch(p, v, out.scratch_bytes, err);
}

int af__kernel_layouts(const af__kernel_set_t *ks, const af__kprep_t *base, int32_t intra,
                       uint8_t **layout, af_error_t *err)
{
    *layout = NULL;
    if (!ks->backend || !ks->backend->layouts)
        return 0;
    const af_graph_t *g = base->g;
    int32_t nn = af_graph_node_count(g), nt = af_graph_tensor_count(g);
    uint8_t *on = af__calloc((size_t)nn + 1, 1), *lay = af__calloc((size_t)nt + 1, 1);
    if (!on || !lay) {
        af__free(on);
        af__free(lay);
        return af__err(err, AF_ENOMEM, "out of memory choosing layouts");
    }
    int rc = 0;
    for (int32_t v = 0; v < nn && !rc; v++) {
        const af__kernel_entry_t *e = af__kernel_find(ks->table, af_graph_node(g, v)->op);
        if (!e || !e->prepare)
            continue;
        af__kprep_t in = *base;
        in.node = v;
        in.query = 1;
        in.layout = NULL;
        in.team = af__kernel_team(g, v, intra);
        af__kprep_out_t out;
        memset(&out, 0, sizeof out);
        af_error_t why;
        af_error_clear(&why);
        rc = e->prepare(&in, &out, &why);
        on[v] = rc == 0;
        if (rc == AF_ENOTSUP)
            rc = 0;
        else if (rc)
            af__err(err, rc, "node '%s': %s", af_graph_node(g, v)->name, why.msg);
        if (out.state && e->release)
            e->release(out.state);
    }
    if (!rc && ks->backend->layouts(g, on, base->constant, base->cu, lay))
        rc = af__err(err, AF_ENOMEM, "out of memory choosing layouts");
    af__free(on);
    if (rc)
        af__free(lay);
    else
        *layout = lay;
    return rc;
}

/* Names of the nodes that did not get a prepared state. */
static int name_rest(af__prog_t *p, const af__kernel_set_t *ks)
{
    for (int32_t v = 0; v < p->n_nodes; v++) {
        if (p->kname[v])
            continue;
        const char *op = af_graph_node(p->g, v)->op, *n = ks->name;
        if (!p->kent[v] && !ks->all)
            n = "registered";
        else if (ks->table && p->kent[v] == af__kref_find(op))
            n = "reference";
        else if (p->kent[v] == &af__kernel_no_elements)
            n = "none:no elements";
        if (!(p->kname[v] = dup_name(n, NULL)))
            return AF_ENOMEM;
    }
    return 0;
}

int af__prog_prepare(af__prog_t *p, af_executor_t *ex, const void *(*const_ptr)(void *, int32_t),
                     void *cu, af_error_t *err)
{
    const af__kernel_set_t *ks = ex->set;
    p->ex = ex;
    if (p->workers < ex->n) /* the caller may ask for more contexts (a session's inline rounds) */
        p->workers = ex->n;
    p->intra = af__kernel_intra(p->plan, &ex->opts);
    p->max_team = 1;
    int rc = 0, team0 = 1;
    if (ks->backend) {
        if ((rc = ks->backend->create(p->workers, &p->backend, err)))
            return rc;
        team0 = ks->backend->get_team();
    }
    af__kprep_t base = {
        .g = p->g, .workers = p->workers, .constant = const_ptr, .cu = cu, .backend = p->backend};
    rc = af__kernel_layouts(ks, &base, p->intra, &p->layout, err);
    base.layout = p->layout;
    for (int32_t v = 0; v < p->n_nodes && !rc; v++)
        if (p->kent[v] && p->kent[v]->prepare)
            rc = prepare_node(p, ks, v, &base, err);
    if (ks->backend)
        ks->backend->set_team(team0); /* the caller's thread gets its own setting back */
    if (!rc && name_rest(p, ks))
        rc = af__err(err, AF_ENOMEM, "out of memory preparing the kernels");
    for (int32_t v = 0; v < p->n_nodes && !rc; v++)
        if (p->scratch_t[v] >= 0)
            p->planned_scratch += p->bytes[p->scratch_t[v]];
    if (!rc && p->unplanned_scratch) {
        size_t n = (size_t)p->unplanned_scratch * (size_t)p->workers + 64;
        if (!(p->wscratch_raw = af__malloc(n)))
            rc = af__err(err, AF_ENOMEM, "out of memory for %llu bytes of working memory",
                         (unsigned long long)n);
        else
            p->wscratch = (uint8_t *)af__align_up((uintptr_t)p->wscratch_raw, 64);
    }
    if (!rc && p->max_team > 1)
        atomic_fetch_add(&ex->teams_live, 1);
    p->prepared = !rc;
    if (rc)
        af__prog_unprepare(p);
    return rc;
}

void af__prog_unprepare(af__prog_t *p)
{
    if (!p->ex)
        return; /* never prepared */
    const af__kernel_set_t *ks = p->ex->set;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        if (p->kstate[v] && p->kent[v] && p->kent[v]->release)
            p->kent[v]->release(p->kstate[v]);
        p->kstate[v] = NULL;
        af__free(p->kname[v]);
        p->kname[v] = NULL;
        /* back to the set's own entry: a re-prepare may decide differently */
        if (p->kent[v] && !ks->all && p->kent[v] != &af__kernel_no_elements) {
            const char *op = af_graph_node(p->g, v)->op;
            const af__kernel_entry_t *e = af__kernel_find(ks->table, op);
            p->kent[v] = e ? e : p->kent[v];
            p->kfn[v] = p->kent[v]->fn;
            p->post[v] = (uint8_t)af__post_mode(p->g, v);
        }
        p->team[v] = 1;
        p->scratch_need[v] = 0;
    }
    if (p->prepared && p->max_team > 1)
        atomic_fetch_sub(&p->ex->teams_live, 1);
    if (p->backend)
        ks->backend->destroy(p->backend);
    p->backend = NULL;
    af__free(p->wscratch_raw);
    p->wscratch_raw = NULL;
    af__free(p->layout);
    p->layout = NULL;
    p->wscratch = NULL;
    p->unplanned_scratch = p->planned_scratch = p->prepacked_bytes = 0;
    p->n_backend = p->n_fallback = 0;
    p->max_team = 1;
    p->prepared = 0;
    p->ex = NULL;
}
