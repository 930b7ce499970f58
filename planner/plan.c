/*
 * af_plan_create(): schedule -> lifetimes -> in-place groups -> placement -> reuse edges ->
 * report -> verify.
 *
 * In-place: a node's hint "output k may overwrite input j" is taken when input j's tensor (an
 * intermediate arena tensor) is the latest member of its group, dies at this very node, and the
 * output fits in the group's block and is not also read by the node. The output then joins the
 * input's group: one block whose lifetime is the union of its members' (a chain a -> b -> c of
 * in-place ops is one block). Placement works on groups.
 *
 * Where a tensor lives: constants (and views of constants) outside the arena; tensors of
 * unknown size (and their views) in the dynamic region at run time; views at their root's
 * offset plus the view offset; everything else in the arena at its group's offset.
 *
 * Safe mode turns reuse off: every arena tensor gets its own bytes (naive placement, no
 * in-place), the reference the diagnosis compares against.
 */
#include "planner/budget_int.h"
#include "planner/planner_int.h"

#include <stdio.h>
#include <string.h>

/* Report figures that cost a second placement (input order, shared objects) are skipped above
 * this many tensors, where they would double the planning time. */
#define AF__INPUT_ORDER_MAX_TENSORS 100000

static double ms_since(uint64_t t0)
{
    return (double)(af_now_ns() - t0) / 1e6;
}

void af_plan_destroy(af_plan_t *p)
{
    if (!p)
        return;
    af__free(p->order);
    af__free(p->step);
    af__free(p->tp);
    af__free(p->group);
    af__free(p->glast);
    af__free(p->views);
    af__free(p->view_next);
    af__free(p->edges);
    af__budget_free(p->budget);
    af_graph_destroy(p->fused_g);
    af__free(p);
}

/* Placement classes and lifetimes, before groups (host: the graph has a SwapOut node), and the
 * report figures the tensor records give (constant bytes, dynamic tensors): this is the plan's
 * one pass over the records after the lifetimes. Returns the number of scratch tensors (for
 * af__plan_scratch_figure). */
static int32_t classify(af_plan_t *p, const af_lifetime_t *lt, int host)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g), n_scratch = 0;
    for (int32_t i = 0; i < nt; i++) {
        const af_tensor_info_t *t = af_graph_tensor(g, i);
        const af_tensor_info_t *r = af_graph_tensor(g, af_graph_alias_root(g, i));
        af_tensor_plan_t *x = &p->tp[i];
        x->first = lt[i].first;
        x->last = lt[i].last;
        x->offset = 0;
        x->bytes = 0;
        x->buffer = -1;
        x->inplace_of = -1;
        p->group[i] = -1;
        if (r->kind == AF_TENSOR_CONSTANT)
            x->where = AF_WHERE_CONSTANT;
        else if (r->bytes < 0 || t->bytes < 0)
            x->where = AF_WHERE_DYNAMIC;
        else if (host && af__is_host_tier(g, i))
            x->where = AF_WHERE_HOST; /* a SwapOut's copy: host area, not the arena */
        else if (t->alias_of >= 0)
            x->where = AF_WHERE_ALIAS;
        else
            x->where = AF_WHERE_ARENA;
        if (x->where == AF_WHERE_ARENA && t->bytes > 0 && x->first >= 0) {
            x->bytes = af__align_up((uint64_t)t->bytes, p->opts.alignment);
            p->group[i] = i;
        }
        n_scratch += t->kind == AF_TENSOR_SCRATCH;
        if (x->where == AF_WHERE_CONSTANT && t->alias_of < 0 && t->bytes > 0)
            p->rep.constant_bytes += (uint64_t)t->bytes;
        if (x->where == AF_WHERE_DYNAMIC && t->alias_of < 0)
            p->rep.dynamic_tensors++;
    }
    return n_scratch;
}

/* strict mode: every other reader of a (and of its views) is a data ancestor of node v. */
static int readers_ordered(const af_plan_t *p, int32_t a, int32_t v, af__dsearch_t *ds)
{
    const af_graph_t *g = p->g;
    for (int32_t t = a; t >= 0; t = t == a ? p->views[a] : p->view_next[t]) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        for (int32_t k = 0; k < ti->n_consumers; k++) {
            int32_t r = ti->consumers[k];
            if (r != v && !af__dsearch_ordered(ds, p->step[r], p->step[v]))
                return 0;
        }
    }
    return 1;
}

/*
 * glast[lead] = last step of the group, latest[lead] = the member that lives last. In fence
 * mode the other readers of a donor are ordered before the in-place writer by reuse edges
 * (reuse.c); in strict mode a hand-over is taken only when data dependencies already order
 * them (conservatively: proven by a bounded search).
 */
static int take_inplace(af_plan_t *p, int32_t *glast, int32_t *latest)
{
    const af_graph_t *g = p->g;
    int32_t nn = af_graph_node_count(g);
    int strict = p->opts.parallel_reuse == AF_REUSE_STRICT;
    af__dsearch_t ds;
    if (strict && af__dsearch_init(&ds, g, p->step))
        return AF_ENOMEM;
    for (int32_t s = 0; s < nn; s++) {
        int32_t v = p->order[s];
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t k = 0; k < nd->n_inplace; k++) {
            int32_t a = nd->inputs[nd->inplace[k].input];
            int32_t b = nd->outputs[nd->inplace[k].output];
            if (a == b || p->group[a] < 0 || p->group[b] != b ||
                af_graph_tensor(g, a)->kind != AF_TENSOR_INTERMEDIATE || p->tp[b].inplace_of >= 0)
                continue;
            int32_t lead = p->group[a];
            if (latest[lead] != a || glast[lead] != s || p->tp[b].first != s ||
                p->tp[b].bytes > p->tp[lead].bytes)
                continue;
            int reads_b = 0;
            for (int32_t j = 0; j < nd->n_inputs; j++)
                reads_b |= nd->inputs[j] == b;
            if (reads_b || (strict && !readers_ordered(p, a, v, &ds)))
                continue;
            p->group[b] = lead;
            p->tp[b].inplace_of = a;
            glast[lead] = p->tp[b].last;
            latest[lead] = b;
        }
    }
    if (strict)
        af__dsearch_free(&ds);
    return 0;
}

/* One interval per in-place group (leader = lowest-step member); returns the count. */
static size_t group_intervals(const af_plan_t *p, const int32_t *glast, int32_t *ids,
                              af_interval_t *iv)
{
    size_t n = 0;
    for (int32_t i = 0; i < af_graph_tensor_count(p->g); i++) {
        if (p->group[i] != i)
            continue;
        ids[n] = i;
        iv[n].lower = p->tp[i].first;
        iv[n].upper = (int64_t)glast[i] + 1;
        iv[n].size = p->tp[i].bytes;
        iv[n].offset = 0;
        n++;
    }
    return n;
}

/* Shared-object figure for the report: best of the seed's colouring and greedy-by-size on the
 * same groups (greedy-by-size is quadratic; skipped above 2,000 groups). */
static int shared_figure(const af_plan_t *p, const int32_t *glast, uint64_t *out, af_error_t *err)
{
    int32_t nt = af_graph_tensor_count(p->g);
    int32_t *ids = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int32_t *buf = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    af_interval_t *iv = af__malloc((size_t)(nt + 1) * sizeof(af_interval_t));
    int rc = 0;
    if (!ids || !buf || !iv) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
    } else {
        size_t n = group_intervals(p, glast, ids, iv);
        int32_t nb;
        uint64_t a = 0, b = UINT64_MAX;
        rc = af_place_shared(iv, n, "color-end", p->opts.alignment, buf, &nb, &a, err);
        if (!rc && n <= 2000)
            rc = af_place_shared(iv, n, "greedy-size", p->opts.alignment, buf, &nb, &b, err);
        *out = a < b ? a : b;
    }
    af__free(ids);
    af__free(buf);
    af__free(iv);
    return rc;
}

/*
 * parallel_reuse = strict: a block may pass to a new tenant only when every node touching the
 * old tenant is a data-dependency ancestor of the new tenant's producer, so no reuse edge is
 * ever needed. With desc[r] = steps of r's descendants (bitsets, reverse order), F(r) = 1 +
 * the last step not descending from r; a group's block stays reserved until the max F over
 * its touchers. Quadratic memory (nodes^2 / 8 bytes), so limited to AF__STRICT_MAX_NODES.
 */
#define AF__STRICT_MAX_NODES 16384

static int strict_extend(const af_plan_t *p, const int32_t *ids, af_interval_t *iv, size_t n,
                         af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nn = af_graph_node_count(g);
    if (nn > AF__STRICT_MAX_NODES)
        return af__err(err, AF_ENOTSUP,
                       "parallel_reuse = strict supports graphs up to %d nodes (this one has %d); "
                       "use fence",
                       AF__STRICT_MAX_NODES, nn);
    size_t words = ((size_t)nn + 63) / 64;
    uint64_t *desc = af__calloc((size_t)nn * words + 1, sizeof(uint64_t));
    int32_t *f = af__malloc((size_t)(nn + 1) * sizeof(int32_t));
    int32_t *off = NULL, *nodes = NULL;
    if (!desc || !f || af__group_touchers(p, &off, &nodes)) {
        af__free(desc);
        af__free(f);
        af__free(off);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    for (int32_t s = nn - 1; s >= 0; s--) {
        int32_t v = p->order[s];
        uint64_t *dv = desc + (size_t)s * words;
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t k = 0; k < nd->n_succs; k++) {
            int32_t ss = p->step[nd->succs[k]];
            const uint64_t *du = desc + (size_t)ss * words;
            for (size_t w = 0; w < words; w++)
                dv[w] |= du[w];
            dv[ss / 64] |= 1ull << (ss % 64);
        }
        /* last step after s that is not a descendant of v (word at a time, from the top) */
        int32_t last = s;
        for (size_t w = words; w-- > (size_t)s / 64;) {
            uint64_t m = ~dv[w];
            if (w == (size_t)s / 64)
                m &= (s % 64 == 63) ? 0 : ~0ull << (s % 64 + 1);
            if (w == words - 1 && nn % 64)
                m &= (1ull << (nn % 64)) - 1;
            if (m) {
                last = (int32_t)(w * 64 + 63 - (size_t)__builtin_clzll(m));
                break;
            }
        }
        f[v] = last + 1;
    }
    for (size_t k = 0; k < n; k++) {
        int32_t lead = ids[k];
        int64_t until = iv[k].upper;
        for (int32_t x = off[lead]; x < off[lead + 1]; x++)
            if (f[nodes[x]] > until)
                until = f[nodes[x]];
        iv[k].upper = until > iv[k].upper ? until : iv[k].upper;
    }
    af__free(desc);
    af__free(f);
    af__free(off);
    af__free(nodes);
    return 0;
}

/* Places the groups; writes offsets (and buffers in shared mode) of every group member. */
static int place_groups(af_plan_t *p, const int32_t *glast, int safe, const char *placer,
                        uint64_t *arena, uint64_t *lb, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g);
    int32_t *ids = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    af_interval_t *iv = af__malloc((size_t)(nt + 1) * sizeof(af_interval_t));
    int32_t *buf = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int rc = 0;
    if (!ids || !iv || !buf) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    size_t n = group_intervals(p, glast, ids, iv);
    *lb = af_intervals_lower_bound(iv, n, 1);
    if (!safe && p->opts.parallel_reuse == AF_REUSE_STRICT &&
        (rc = strict_extend(p, ids, iv, n, err)))
        goto out;
    af_place_opts_t po = {.alignment = p->opts.alignment,
                          .time_limit_s = p->opts.time_limit_s,
                          .capacity = p->opts.capacity,
                          .search_effort = p->opts.search_effort};
    int32_t nb = 0;
    if (safe) {
        rc = af_place_intervals(iv, n, "naive", &po, arena, err);
        for (size_t i = 0; i < n; i++)
            buf[i] = (int32_t)i;
    } else if (p->opts.mode == AF_MODE_SHARED) {
        uint64_t best = UINT64_MAX;
        const char *cands[2] = {placer, NULL};
        if (strcmp(placer, "portfolio") == 0) {
            cands[0] = "color-end";
            cands[1] = "greedy-size";
        }
        for (int c = 0; c < 2 && cands[c] && !rc; c++) {
            af_interval_t *tmp = af__malloc((n + 1) * sizeof(*tmp));
            int32_t *tb = af__malloc((n + 1) * sizeof(int32_t));
            uint64_t total = 0;
            if (!tmp || !tb) {
                rc = af__err(err, AF_ENOMEM, "out of memory");
            } else {
                memcpy(tmp, iv, n * sizeof(*tmp));
                rc = af_place_shared(tmp, n, cands[c], p->opts.alignment, tb, &nb, &total, err);
                if (!rc && total < best) {
                    best = total;
                    memcpy(iv, tmp, n * sizeof(*tmp));
                    memcpy(buf, tb, n * sizeof(int32_t));
                    p->rep.placer = cands[c];
                }
            }
            af__free(tmp);
            af__free(tb);
        }
        *arena = best == UINT64_MAX ? 0 : best;
    } else {
        rc = af_place_intervals(iv, n, placer, &po, arena, err);
    }
    if (rc)
        goto out;
    for (size_t k = 0; k < n; k++) {
        p->tp[ids[k]].offset = iv[k].offset;
        p->tp[ids[k]].buffer = (safe || p->opts.mode == AF_MODE_SHARED) ? buf[k] : -1;
    }
    for (int32_t i = 0; i < nt; i++) {
        int32_t lead = p->group[i];
        if (lead >= 0 && lead != i) {
            p->tp[i].offset = p->tp[lead].offset;
            p->tp[i].buffer = p->tp[lead].buffer;
        }
    }
out:
    af__free(ids);
    af__free(iv);
    af__free(buf);
    return rc;
}

/* af_plan_restore(): every group takes its leader's stored offset; the verifier judges them. */
static int take_offsets(af_plan_t *p, const int32_t *glast, uint64_t *arena, uint64_t *lb,
                        af_error_t *err)
{
    int32_t nt = af_graph_tensor_count(p->g);
    int32_t *ids = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    af_interval_t *iv = af__malloc((size_t)(nt + 1) * sizeof(af_interval_t));
    if (!ids || !iv) {
        af__free(ids);
        af__free(iv);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    size_t n = group_intervals(p, glast, ids, iv);
    *lb = af_intervals_lower_bound(iv, n, 1);
    *arena = 0;
    for (int32_t i = 0; i < nt; i++) {
        int32_t lead = p->group[i];
        if (lead < 0)
            continue;
        p->tp[i].offset = p->given_offsets[lead];
        if (p->tp[i].offset > UINT64_MAX - p->tp[i].bytes) {
            af__free(ids);
            af__free(iv);
            return af__err(err, AF_EVERIFY, "stored offset of '%s' overflows",
                           af_graph_tensor(p->g, i)->name);
        }
        if (p->tp[i].offset + p->tp[i].bytes > *arena)
            *arena = p->tp[i].offset + p->tp[i].bytes;
    }
    af__free(ids);
    af__free(iv);
    return 0;
}

static void place_views(af_plan_t *p)
{
    const af_graph_t *g = p->g;
    for (int32_t i = 0; i < af_graph_tensor_count(g); i++) {
        if (p->tp[i].where != AF_WHERE_ALIAS)
            continue;
        int32_t r = af_graph_alias_root(g, i);
        p->tp[i].offset = p->tp[r].offset + (uint64_t)af_graph_alias_root_offset(g, i);
        p->tp[i].buffer = p->tp[r].buffer;
    }
}

/* AF_EBUDGET message: the peak step, its node and the tensors live there with their bytes. */
static int budget_error(const af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    char live[300];
    size_t len = 0;
    int32_t s = p->rep.peak_step, shown = 0, more = 0;
    live[0] = '\0';
    for (int32_t i = 0; i < af_graph_tensor_count(g); i++) {
        if (p->group[i] < 0 || p->tp[i].first > s || p->tp[i].last < s)
            continue;
        if (len + 64 < sizeof(live)) {
            len += (size_t)snprintf(live + len, sizeof(live) - len, "%s'%s' (%llu B)",
                                    shown ? ", " : "", af_graph_tensor(g, i)->name,
                                    (unsigned long long)p->tp[i].bytes);
            shown++;
        } else {
            more++;
        }
    }
    if (more)
        snprintf(live + len, sizeof(live) - len, " and %d more", more);
    return af__err(err, AF_EBUDGET,
                   "plan needs %llu bytes, over the budget of %llu: at step %d (node '%s') "
                   "live: %s",
                   (unsigned long long)p->arena, (unsigned long long)p->opts.budget, s,
                   af_graph_node(g, p->order[s])->name, live);
}

/* Report figures: arena tensors, naive bytes, and the peak step of the arena tensors' live
 * bytes (as af__peak_of: the arena tensors are its arena roots with a lifetime, their bytes
 * aligned), from the plan's own tables; diff: scratch of node_count + 1 entries. */
static void count_tensors(af_plan_t *p, int64_t *diff)
{
    const af_graph_t *g = p->g;
    af_plan_report_t *r = &p->rep;
    int32_t nn = af_graph_node_count(g);
    memset(diff, 0, (size_t)(nn + 1) * sizeof(*diff));
    for (int32_t i = 0; i < af_graph_tensor_count(g); i++) {
        if (p->group[i] >= 0) {
            r->arena_tensors++;
            r->naive_bytes += p->tp[i].bytes;
            diff[p->tp[i].first] += (int64_t)p->tp[i].bytes;
            diff[p->tp[i].last + 1] -= (int64_t)p->tp[i].bytes;
        }
    }
    int64_t cur = 0, best = 0;
    r->peak_step = 0;
    for (int32_t s = 0; s < nn; s++) {
        cur += diff[s];
        if (cur > best) {
            best = cur;
            r->peak_step = s;
        }
    }
}

/* The order: the given one (restore) or the scheduler's; the report's schedule fields. */
static int schedule_phase(af_plan_t *p, af_error_t *err)
{
    af__sched_result_t sres = {"restored", 0, 0};
    if (af__plan_stop(p))
        return af__plan_stopped_err(err);
    uint64_t t = af_now_ns();
    int rc;
    if (p->given_order)
        memcpy(p->order, p->given_order, (size_t)af_graph_node_count(p->g) * sizeof(int32_t));
    else if ((rc = af__schedule(p->g, &p->opts, p->order, &sres, err)))
        return rc;
    p->rep.schedule = sres.name ? sres.name : p->opts.schedule;
    p->rep.schedule_optimal = sres.optimal;
    p->rep.schedule_ms = ms_since(t);
    return af__plan_stop(p) ? af__plan_stopped_err(err) : 0;
}

static int plan_build(af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    af_plan_report_t *r = &p->rep;
    uint64_t t0 = af_now_ns(), t;
    int rc;

    if ((rc = schedule_phase(p, err)))
        return rc;

    t = af_now_ns();
    af_lifetime_t *lt = af__malloc((size_t)(nt + 1) * sizeof(*lt));
    int32_t *glast = p->glast = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int32_t *latest = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int64_t *diff = af__malloc((size_t)(nn + 2) * sizeof(int64_t));
    if (!lt || !glast || !latest || !diff) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = af__order_steps(g, p->order, p->step, err))) {
        rc = af__err(err, AF_EINVAL, "scheduler '%s' returned a bad order: %s", r->schedule,
                     err ? err->msg : "");
        goto out;
    }
    af__lifetimes_from_steps(g, p->step, lt);
    int32_t n_scratch = classify(p, lt, af__graph_has_host_tier(g));
    for (int32_t i = 0; i < nt; i++) {
        glast[i] = p->tp[i].last;
        latest[i] = i;
    }
    int safe = p->opts.safe_mode;
    if (p->opts.inplace && !safe && take_inplace(p, glast, latest)) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    r->lifetime_ms = ms_since(t);

    t = af_now_ns();
    r->placer = safe ? "naive" : p->opts.placer;
    uint64_t lb = 0;
    if (p->given_offsets)
        rc = take_offsets(p, glast, &p->arena, &lb, err);
    else
        rc = place_groups(p, glast, safe, r->placer, &p->arena, &lb, err);
    if (!rc && af__plan_stop(p))
        rc = af__plan_stopped_err(err);
    if (rc)
        goto out;
    place_views(p);
    af__plan_place_host(p);
    r->place_ms = ms_since(t);
    r->lower_bound_bytes = lb;
    r->arena_bytes = p->arena;
    count_tensors(p, diff);
    r->any_order_bound_bytes = af__plan_any_order_bound(p);
    if (af__plan_scratch_figure(p, r, n_scratch)) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    if (af__plan_stop(p)) {
        rc = af__plan_stopped_err(err);
        goto out;
    }

    /* strict placement needs no reuse edges by construction; the verifier re-proves that */
    if (!safe && !p->figure_only && p->opts.parallel_reuse == AF_REUSE_FENCE) {
        t = af_now_ns();
        if ((rc = af__plan_reuse_edges(p, err)))
            goto out;
        r->reuse_edges = p->n_edges;
        r->place_ms += ms_since(t);
    }
    if (p->opts.mode == AF_MODE_SHARED || safe || p->figure_only)
        r->shared_object_bytes = p->arena;
    else if (nt > AF__INPUT_ORDER_MAX_TENSORS)
        r->shared_object_bytes = 0; /* a report figure: skipped on huge graphs, like input order */
    else if ((rc = shared_figure(p, glast, &r->shared_object_bytes, err)))
        goto out;
    if (af__plan_stop(p)) {
        rc = af__plan_stopped_err(err);
        goto out;
    }
    if (p->opts.budget && p->arena > p->opts.budget) {
        rc = budget_error(p, err);
        goto out;
    }
    r->total_ms = ms_since(t0);
out:
    af__free(lt);
    af__free(latest);
    af__free(diff);
    return rc;
}

static int plan_new(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                    const uint64_t *offsets, int figure_only, af_plan_t **out, af_error_t *err);

/* Arena bytes of the same pipeline on the input order (report only: no reuse edges, no
 * shared-object figure, no nested input-order figure). */
static int input_order_arena(const af_plan_t *p, uint64_t *out, af_error_t *err)
{
    af_plan_opts_t o = p->opts;
    o.schedule = "input";
    o.verify = 0;
    o.budget = 0;
    o.search_effort = 0; /* the portfolio's search member runs on the chosen order only */
    if (strcmp(o.placer, "search") == 0)
        o.placer = "portfolio";
    af_plan_t *q = NULL;
    int rc = plan_new(p->g, &o, NULL, NULL, 1, &q, err);
    if (!rc)
        *out = q->arena;
    af_plan_destroy(q);
    return rc;
}

/* 1 when name is one of the pack module's placers. */
static int is_placer(const char *name)
{
    for (const char *const *n = af_place_names(); *n; n++)
        if (strcmp(*n, name) == 0)
            return 1;
    return 0;
}

int af_plan_create(const af_graph_t *g, const af_plan_opts_t *opts, af_plan_t **out,
                   af_error_t *err)
{
    if (opts && opts->fuse == AF_FUSE_ON && g && out && af_graph_is_finalized(g))
        return af__plan_fused(g, opts, NULL, NULL, out, err);
    int rc = plan_new(g, opts, NULL, NULL, 0, out, err);
    /* Under a budget no order meets: rewrite the graph (planner/budget.c). */
    if (rc == AF_EBUDGET && af__budget_wanted(g, opts))
        rc = af__budget_plan(g, opts, out, err);
    return rc;
}

int af__plan_with_order(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                        af_plan_t **out, af_error_t *err)
{
    return plan_new(g, opts, order, NULL, 0, out, err);
}

int af_plan_restore(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                    const uint64_t *offsets, af_plan_t **out, af_error_t *err)
{
    if (!order || !offsets)
        return af__err(err, AF_EINVAL, "restore needs an order and offsets");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (opts)
        o = *opts;
    o.verify = 1; /* a stored plan is never trusted */
    if (o.fuse == AF_FUSE_ON && g && out && af_graph_is_finalized(g))
        return af__plan_fused(g, &o, order, offsets, out, err);
    return plan_new(g, &o, order, offsets, 0, out, err);
}

static int plan_make(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                     const uint64_t *offsets, int figure_only, af_plan_t **out, af_error_t *err);

/* One plan is one scratch scope: the big per-tensor tables its phases free are handed to the
 * next phase instead of coming fresh from the kernel (common.c). */
static int plan_new(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                    const uint64_t *offsets, int figure_only, af_plan_t **out, af_error_t *err)
{
    af__scratch_begin();
    int rc = plan_make(g, opts, order, offsets, figure_only, out, err);
    af__scratch_end();
    return rc;
}

static int plan_make(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                     const uint64_t *offsets, int figure_only, af_plan_t **out, af_error_t *err)
{
    if (!g || !out)
        return af__err(err, AF_EINVAL, "NULL graph or output pointer");
    if (!af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "graph is not finalized");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (opts)
        o = *opts;
    if (o.alignment == 0 || (o.alignment & (o.alignment - 1)))
        return af__err(err, AF_EINVAL, "alignment %llu is not a power of two",
                       (unsigned long long)o.alignment);
    if (!o.placer)
        o.placer = "portfolio";
    if (!o.schedule)
        o.schedule = "best";
    if (!is_placer(o.placer))
        return af__err(err, AF_EINVAL, "unknown placement algorithm '%s'", o.placer);
    if (!af__sched_find(o.schedule))
        return af__err(err, AF_EINVAL, "unknown scheduler '%s'", o.schedule);

    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    af_plan_t *p = af__calloc(1, sizeof(*p));
    if (!p)
        return af__err(err, AF_ENOMEM, "out of memory");
    p->g = g;
    p->opts = o;
    p->given_order = order;
    p->given_offsets = offsets;
    p->figure_only = figure_only;
    p->rep.tensors = nt;
    p->rep.nodes = nn;
    p->order = af__malloc((size_t)(nn + 1) * sizeof(int32_t));
    p->step = af__malloc((size_t)(nn + 1) * sizeof(int32_t));
    p->tp = af__calloc((size_t)nt + 1, sizeof(af_tensor_plan_t));
    p->group = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    p->views = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    p->view_next = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int rc;
    if (!p->order || !p->step || !p->tp || !p->group || !p->views || !p->view_next) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto fail;
    }
    for (int32_t t = 0; t < nt; t++)
        p->views[t] = p->view_next[t] = -1;
    for (int32_t t = nt - 1; t >= 0; t--) {
        int32_t r = af_graph_alias_root(g, t);
        if (r != t) {
            p->view_next[t] = p->views[r];
            p->views[r] = t;
        }
    }
    if ((rc = plan_build(p, err)))
        goto fail;
    p->given_order = NULL;
    p->given_offsets = NULL;
    uint64_t t = af_now_ns();
    /* The input-order figure costs a second plan: skipped (0) for restored plans and above
     * AF__INPUT_ORDER_MAX_TENSORS, where it would double the planning time. */
    if (order || figure_only || nt > AF__INPUT_ORDER_MAX_TENSORS)
        p->rep.input_order_bytes = 0;
    else if (strcmp(p->rep.schedule ? p->rep.schedule : "", "input") == 0 || o.safe_mode)
        p->rep.input_order_bytes = p->arena;
    else if ((rc = input_order_arena(p, &p->rep.input_order_bytes, err)))
        goto fail;
    p->rep.total_ms += ms_since(t);
    if (!rc && af__plan_stop(p)) {
        rc = af__plan_stopped_err(err);
        goto fail;
    }
    if (o.verify) {
        t = af_now_ns();
        if ((rc = af_plan_verify(p, err)))
            goto fail;
        p->rep.verify_ms = ms_since(t);
    }
    p->opts.interrupt = NULL; /* the hook's argument may not outlive this call */
    p->opts.interrupt_arg = NULL;
    *out = p;
    return 0;
fail:
    af_plan_destroy(p);
    return rc;
}

/* ---- accessors ------------------------------------------------------------------------------- */

const af_graph_t *af_plan_graph(const af_plan_t *p)
{
    return p->g;
}

const af_plan_report_t *af_plan_report(const af_plan_t *p)
{
    return &p->rep;
}

const af_plan_opts_t *af_plan_opts(const af_plan_t *p)
{
    return &p->opts;
}

const int32_t *af_plan_order(const af_plan_t *p)
{
    return p->order;
}

int32_t af_plan_step_of(const af_plan_t *p, int32_t node)
{
    if (node < 0 || node >= af_graph_node_count(p->g))
        return -1;
    return p->step[node];
}

const af_tensor_plan_t *af_plan_tensor(const af_plan_t *p, int32_t tensor)
{
    if (tensor < 0 || tensor >= af_graph_tensor_count(p->g))
        return NULL;
    return &p->tp[tensor];
}

uint64_t af_plan_arena_bytes(const af_plan_t *p)
{
    return p->arena;
}

int32_t af_plan_reuse_edge_count(const af_plan_t *p)
{
    return p->n_edges;
}

const af_reuse_edge_t *af_plan_reuse_edges(const af_plan_t *p)
{
    return p->edges;
}
