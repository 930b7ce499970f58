/*
 * Scheduler registry and the default portfolio `best`.
 *
 * Every scheduler is one row of sched_table. All of them work on the memory model of
 * planner_int.h (built once per call) and report the exact simulated peak of their order,
 * which matches af_order_peak() by construction (same lifetime rule, same alignment).
 *
 * `best` runs the portfolio members (input, lpmf, xla-list, seed, dfs, rpo, bfs) and keeps every
 * order as a candidate. Then:
 *   - n <= dp_max_nodes (and <= 64): exact DP over the whole graph, node by node, with the best
 *     member's peak as the pruning bound; when it completes within dp_max_states the result is
 *     proven optimal (res->optimal).
 *   - otherwise, n <= REFINE_MAX_NODES: peak-targeted refinement (the HMCOS idea) of copies of
 *     the three best distinct member orders: windows around the current peak step, first with
 *     chains contracted (up to dp_max_nodes chains, MAX_WINDOW_NODES nodes), then node by node,
 *     are re-ordered exactly by the DP while that lowers the peak, under one state budget of
 *     min(dp_max_states, REFINE_STATES) shared by the three.
 * The winner is the candidate with the lowest simulated peak; ties go to the smallest placed
 * arena (portfolio placer on the order's intervals, for graphs of at most PLACE_EVAL_ROOTS arena
 * tensors), then the smaller area (sum over steps of live bytes), then table order. The input
 * order is a candidate, so the result is never worse than it.
 *
 * Fast path rule for big graphs: above BIG_NODES nodes only input and lpmf run (the input order
 * and an O(n log n) member that does well on wide graphs) and there is no refinement, so a
 * million-tensor graph schedules in about a second.
 *
 * Budget: with opts->budget set, an order whose peak exceeds it is refused with AF_EBUDGET, the
 * message naming the scheduler, the peak step and node, and the largest tensors live there. The
 * seed scheduler additionally applies its executability check while ordering.
 *
 * Reentrant: no global mutable state (the name list is built from a constant table).
 */
#include "planner/planner_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_NODES 60000
#define REFINE_MAX_NODES 60000
#define REFINE_ROUNDS 24
#define MAX_WINDOW_NODES 512 /* refinement windows: at most this many nodes (and 64 units) */
#define PLACE_EVAL_ROOTS 400 /* tie-break by placed arena up to this many arena tensors */
#define PLACE_EVAL_MAX 4     /* and for at most this many distinct tied orders */
#define REFINE_STATES 120000 /* window-DP states per `best` call, over all windows */

typedef int (*member_fn)(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order,
                         af_error_t *err);

static int member_input(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order,
                        af_error_t *err)
{
    (void)o;
    (void)err;
    memcpy(order, af_graph_input_order(m->g), (size_t)m->n * sizeof(*order));
    return 0;
}

typedef int (*member_peak_fn)(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order,
                              uint64_t *peak, uint64_t *area, af_error_t *err);

/* Portfolio members, in tie-break order. `big` = also run on graphs above BIG_NODES. A member
 * with a `peak` entry reports its order's af__smodel_peak figures itself (its own simulation
 * already ran the order): the portfolio skips the second pass over it. */
static const struct member {
    const char *name;
    member_fn fn;
    int big;
    member_peak_fn peak;
} members[] = {
    {"input", member_input, 1, NULL},          {"lpmf", af__sched_lpmf, 1, af__sched_lpmf_peak},
    {"xla-list", af__sched_xla_list, 0, NULL}, {"seed", af__sched_seed, 0, NULL},
    {"dfs", af__sched_dfs, 0, NULL},           {"rpo", af__sched_rpo, 0, NULL},
    {"bfs", af__sched_bfs, 0, NULL},
};

/* ---- budget errors ------------------------------------------------------------------------ */

typedef struct live_t {
    int32_t t;
    uint64_t bytes;
} live_t;

static int cmp_live(const void *a, const void *b)
{
    const live_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->t - y->t;
}

static int budget_error(const af__smodel_t *m, const af_plan_opts_t *o, const int32_t *order,
                        const char *who, uint64_t peak, af_error_t *err)
{
    const af_graph_t *g = m->g;
    int32_t nt = af_graph_tensor_count(g), step = 0;
    uint64_t p2;
    af__smodel_peak(m, order, &p2, &step, NULL);
    af_lifetime_t *lt = af__malloc(((size_t)nt + 1) * sizeof(*lt));
    live_t *lv = af__malloc(((size_t)nt + 1) * sizeof(*lv));
    char list[300] = "";
    int32_t n_live = 0;
    if (lt && lv && af_lifetimes_compute(g, order, lt, NULL) == 0) {
        for (int32_t t = 0; t < nt; t++)
            if (af__is_arena_root(g, t) && lt[t].first >= 0 && lt[t].first <= step &&
                step <= lt[t].last)
                lv[n_live++] = (live_t){t, af__align_up((uint64_t)af_graph_tensor(g, t)->bytes,
                                                        o->alignment ? o->alignment : 1)};
        qsort(lv, (size_t)n_live, sizeof(*lv), cmp_live);
        size_t len = 0;
        int32_t shown = 0;
        for (; shown < n_live && len < sizeof(list) - 64; shown++) {
            int w = snprintf(list + len, sizeof(list) - len, "%s%s (%llu)", shown ? ", " : "",
                             af_graph_tensor(g, lv[shown].t)->name,
                             (unsigned long long)lv[shown].bytes);
            if (w < 0 || (size_t)w >= sizeof(list) - len) {
                list[len] = '\0';
                break;
            }
            len += (size_t)w;
        }
        if (shown < n_live && len < sizeof(list) - 24)
            snprintf(list + len, sizeof(list) - len, " and %d more", (int)(n_live - shown));
    }
    af__free(lt);
    af__free(lv);
    return af__err(err, AF_EBUDGET,
                   "memory budget %llu bytes cannot be met: best order (%s) peaks at %llu "
                   "bytes at step %d (node '%s'); live there: %s",
                   (unsigned long long)o->budget, who, (unsigned long long)peak, (int)step,
                   m->n ? af_graph_node(g, order[step])->name : "", list);
}

/* ---- refinement --------------------------------------------------------------------------- */

typedef struct refine {
    const af__smodel_t *m;
    int32_t *order, *step;
    uint64_t *during, *live_after;
    uint64_t peak, states, max_states;
    int32_t k;
    int optimal;
} refine_t;

static void scan_peak(refine_t *r, int32_t *ps)
{
    r->peak = 0;
    *ps = 0;
    for (int32_t s = 0; s < r->m->n; s++)
        if (r->during[s] > r->peak) {
            r->peak = r->during[s];
            *ps = s;
        }
}

/*
 * Recomputes the profile of steps [lo, hi) after the window was reordered: the rest of the
 * order is unchanged, and so are the live bytes outside the window. A root is allocated at its
 * first touch and freed after its last (step[] is current), O(touches of the window's roots).
 */
static void update_window(refine_t *r, int32_t lo, int32_t hi)
{
    const af__smodel_t *m = r->m;
    uint64_t live = lo ? r->live_after[lo - 1] : m->base;
    for (int32_t s = lo; s < hi; s++) {
        int32_t v = r->order[s];
        uint64_t alloc = 0, freed = 0;
        for (int32_t t = m->t_off[v]; t < m->t_off[v + 1]; t++) {
            int32_t x = m->t_root[t], mn = INT32_MAX, mx = -1;
            for (int32_t i = m->r_off[x]; i < m->r_off[x + 1]; i++) {
                int32_t st = r->step[m->r_node[i]];
                mn = st < mn ? st : mn;
                mx = st > mx ? st : mx;
            }
            if (!(m->flags[x] & SM_INPUT) && mn == s)
                alloc += m->size[x];
            if (!(m->flags[x] & SM_PINNED) && mx == s)
                freed += m->size[x];
        }
        r->during[s] = live + alloc + (s == 0 ? m->extra0 : 0);
        live = live + alloc - freed;
        r->live_after[s] = live;
    }
}

/*
 * Grows a window from `anchor` to the left (dir < 0), right (dir > 0) or both ways alternately
 * (dir == 0) while it holds at most r->k units.
 */
static void grow_window(const refine_t *r, int32_t anchor, int dir, int contract, int32_t *lo_out,
                        int32_t *hi_out)
{
    const af__smodel_t *m = r->m;
    int32_t lo = anchor, hi = anchor + 1;
    int side = dir >= 0 ? 1 : -1, blocked_l = 0, blocked_r = 0;
    while (hi - lo < MAX_WINDOW_NODES && !(blocked_l && blocked_r)) {
        if (dir > 0 || (dir == 0 && side > 0 && !blocked_r) || (dir == 0 && blocked_l)) {
            if (hi >= m->n || af__dp_units(m, r->step, r->order, lo, hi + 1, contract) > r->k)
                blocked_r = 1;
            else
                hi++;
            if (dir > 0 && blocked_r)
                break;
        } else {
            if (lo <= 0 || af__dp_units(m, r->step, r->order, lo - 1, hi, contract) > r->k)
                blocked_l = 1;
            else
                lo--;
            if (dir < 0 && blocked_l)
                break;
        }
        side = -side;
    }
    *lo_out = lo;
    *hi_out = hi;
}

/* Tries windows around the peak step; *better = 1 if one lowered its local peak. */
static int refine_round(refine_t *r, int32_t ps, int *better, int32_t *lo_out, int32_t *hi_out)
{
    const af__smodel_t *m = r->m;
    *better = 0;
    for (int contract = 1; contract >= 0; contract--)
        for (int dir = 0; dir < 3 && r->states < r->max_states; dir++) {
            int32_t lo, hi;
            grow_window(r, ps, dir == 0 ? 0 : (dir == 1 ? -1 : 1), contract, &lo, &hi);
            af__dp_window_t w = {.lo = lo,
                                 .hi = hi,
                                 .contract = contract,
                                 .bound = r->peak,
                                 .live_before = lo ? r->live_after[lo - 1] : m->base,
                                 .max_states = (r->max_states - r->states) / 4 + 1024};
            if (af__sched_dp_window(m, r->order, r->step, &w))
                return AF_ENOMEM;
            r->states += w.states_used;
            if (w.improved) {
                *better = 1;
                *lo_out = lo;
                *hi_out = hi;
                return 0;
            }
        }
    return 0;
}

/* Exact DP on small graphs, peak-targeted window DP on larger ones. *peak is updated. */
static int refine(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, uint64_t *peak,
                  int *optimal, int *changed)
{
    int32_t n = m->n, k = o->dp_max_nodes > 64 ? 64 : o->dp_max_nodes;
    *optimal = 0;
    *changed = 0;
    if (n == 0 || k < 2)
        return 0;
    refine_t r = {.m = m, .order = order, .max_states = o->dp_max_states, .k = k < n ? k : n};
    r.step = af__malloc((size_t)n * sizeof(int32_t));
    r.during = af__malloc((size_t)n * sizeof(uint64_t));
    r.live_after = af__malloc((size_t)n * sizeof(uint64_t));
    int rc = AF_ENOMEM;
    if (!r.step || !r.during || !r.live_after)
        goto out;
    for (int32_t s = 0; s < n; s++)
        r.step[order[s]] = s;
    if (n <= k) {
        af__dp_window_t w = {.lo = 0,
                             .hi = n,
                             .bound = *peak,
                             .live_before = m->base,
                             .max_states = o->dp_max_states};
        if ((rc = af__sched_dp_window(m, order, r.step, &w)))
            goto out;
        *optimal = w.complete;
        *changed = w.improved;
        if (w.improved)
            *peak = w.peak;
        rc = 0;
        goto out;
    }
    rc = 0;
    if (n > REFINE_MAX_NODES)
        goto out;
    if (af__smodel_profile(m, order, r.during, r.live_after)) {
        rc = AF_ENOMEM;
        goto out;
    }
    for (int round = 0; round < REFINE_ROUNDS && r.states < r.max_states; round++) {
        int32_t ps, lo = 0, hi = 0;
        int better;
        scan_peak(&r, &ps);
        if ((rc = refine_round(&r, ps, &better, &lo, &hi)))
            goto out;
        if (!better)
            break;
        update_window(&r, lo, hi);
        *changed = 1;
    }
    if (*changed) {
        int32_t ps;
        scan_peak(&r, &ps);
        *peak = r.peak;
    }
out:
    af__free(r.step);
    af__free(r.during);
    af__free(r.live_after);
    return rc;
}

/* ---- candidates and selection ------------------------------------------------------------ */

#define MAX_CAND 16

typedef struct cand {
    const char *name;
    int32_t *order;
    uint64_t peak, area, arena;
    int optimal;
} cand_t;

typedef struct pf {
    const af__smodel_t *m;
    const af_plan_opts_t *o;
    cand_t c[MAX_CAND];
    int n;
    uint64_t input_peak;
} pf_t;

static void pf_free(pf_t *p)
{
    for (int i = 0; i < p->n; i++)
        af__free(p->c[i].order);
}

static cand_t *pf_add(pf_t *p, const char *name)
{
    if (p->n == MAX_CAND)
        return NULL;
    cand_t *c = &p->c[p->n];
    memset(c, 0, sizeof(*c));
    c->order = af__malloc(((size_t)p->m->n + 1) * sizeof(int32_t));
    if (!c->order)
        return NULL;
    c->name = name;
    p->n++;
    return c;
}

static int by_peak(const cand_t *a, const cand_t *b)
{
    if (a->peak != b->peak)
        return a->peak < b->peak;
    return a->area < b->area;
}

/*
 * Placed arena of an order: the intervals of the model's roots placed by the portfolio placer
 * (in-place merging, done later by af_plan_create, is not modelled: this is a tie-breaker).
 */
static int placed_arena(const af__smodel_t *m, const af_plan_opts_t *o, const int32_t *order,
                        uint64_t *arena)
{
    int32_t n = m->n, nr = m->nr;
    int32_t *first = af__malloc(((size_t)nr + 1) * sizeof(int32_t));
    int32_t *last = af__malloc(((size_t)nr + 1) * sizeof(int32_t));
    af_interval_t *iv = af__malloc(((size_t)nr + 1) * sizeof(af_interval_t));
    int rc = AF_ENOMEM;
    if (!first || !last || !iv)
        goto out;
    for (int32_t r = 0; r < nr; r++) {
        first[r] = (m->flags[r] & SM_INPUT) ? 0 : -1;
        last[r] = first[r];
    }
    for (int32_t s = 0; s < n; s++)
        for (int32_t t = m->t_off[order[s]]; t < m->t_off[order[s] + 1]; t++) {
            int32_t r = m->t_root[t];
            if (first[r] < 0)
                first[r] = s;
            last[r] = s;
        }
    size_t k = 0;
    for (int32_t r = 0; r < nr; r++) {
        if (first[r] < 0)
            continue;
        int32_t l = (m->flags[r] & SM_PINNED) ? n - 1 : last[r];
        iv[k++] = (af_interval_t){.lower = first[r], .upper = (int64_t)l + 1, .size = m->size[r]};
    }
    af_place_opts_t po = {.alignment = o->alignment ? o->alignment : 1, .time_limit_s = 1};
    rc = af_place_intervals(iv, k, "portfolio", &po, arena, NULL);
out:
    af__free(first);
    af__free(last);
    af__free(iv);
    return rc;
}

static int run_members(pf_t *p, int force_all, af_error_t *err)
{
    const af__smodel_t *m = p->m;
    for (size_t i = 0; i < AF_ARRAY_SIZE(members); i++) {
        if (!force_all && m->n > BIG_NODES && !members[i].big)
            continue;
        cand_t *c = pf_add(p, members[i].name);
        if (!c)
            return af__err(err, AF_ENOMEM, "out of memory in the scheduler");
        const struct member *mb = &members[i];
        int rc = mb->peak ? mb->peak(m, p->o, c->order, &c->peak, &c->area, err)
                          : mb->fn(m, p->o, c->order, err);
        if (!rc && !mb->peak && af__smodel_peak(m, c->order, &c->peak, NULL, &c->area))
            rc = af__err(err, AF_ENOMEM, "out of memory in the scheduler");
        if (rc)
            return rc;
        if (i == 0)
            p->input_peak = c->peak;
    }
    return 0;
}

/* Refines copies of the best distinct member orders (exact DP on small graphs). */
static int refine_best(pf_t *p, int force_all)
{
    const af__smodel_t *m = p->m;
    int n0 = p->n, top = m->n <= p->o->dp_max_nodes ? 1 : 3;
    uint8_t used[MAX_CAND] = {0};
    for (int t = 0; t < top; t++) {
        int b = -1;
        for (int i = 0; i < n0; i++) {
            if (used[i])
                continue;
            int dup = 0;
            for (int j = 0; j < n0 && !dup; j++)
                dup = used[j] == 2 && p->c[j].peak == p->c[i].peak &&
                      !memcmp(p->c[j].order, p->c[i].order, (size_t)m->n * sizeof(int32_t));
            if (dup) {
                used[i] = 1;
                continue;
            }
            if (b < 0 || by_peak(&p->c[i], &p->c[b]))
                b = i;
        }
        if (b < 0)
            break;
        used[b] = 2;
        if (!force_all && m->n > BIG_NODES)
            break;
        cand_t *c = pf_add(p, "dp");
        if (!c)
            return AF_ENOMEM;
        memcpy(c->order, p->c[b].order, (size_t)m->n * sizeof(int32_t));
        c->peak = p->c[b].peak;
        int changed = 0;
        af_plan_opts_t o = *p->o;
        if (m->n > o.dp_max_nodes) /* refinement: one shared state budget */
            o.dp_max_states =
                (p->o->dp_max_states < REFINE_STATES ? p->o->dp_max_states : REFINE_STATES) /
                (uint64_t)top;
        int rc = refine(m, &o, c->order, &c->peak, &c->optimal, &changed);
        if (rc)
            return rc;
        if (!changed) { /* same order as the member: keep the member's name */
            c->name = p->c[b].name;
            p->c[b].optimal = c->optimal;
            af__free(c->order);
            p->n--;
            continue;
        }
        if (af__smodel_peak(m, c->order, &c->peak, NULL, &c->area))
            return AF_ENOMEM;
    }
    return 0;
}

/*
 * Lowest simulated peak; among orders tied on it, the smallest placed arena when the graph is
 * small enough to place them all (then the smaller area, then table order).
 */
static int select_best(pf_t *p)
{
    int b = 0;
    for (int i = 1; i < p->n; i++)
        if (by_peak(&p->c[i], &p->c[b]))
            b = i;
    if (p->m->nr > PLACE_EVAL_ROOTS || p->o->budget)
        return b; /* with a budget the lowest peak is what matters */
    uint64_t lim = p->c[b].peak;
    int ties = 0;
    for (int i = 0; i < p->n; i++)
        ties += p->c[i].peak == lim;
    if (ties < 2)
        return b;
    int best = b, evaluated = 1;
    if (placed_arena(p->m, p->o, p->c[b].order, &p->c[b].arena))
        return b;
    for (int i = 0; i < p->n && evaluated < PLACE_EVAL_MAX; i++) {
        cand_t *c = &p->c[i];
        if (i == b || c->peak > lim)
            continue;
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            dup = p->c[j].peak == lim &&
                  !memcmp(p->c[j].order, c->order, (size_t)p->m->n * sizeof(int32_t));
        if (dup || !memcmp(p->c[b].order, c->order, (size_t)p->m->n * sizeof(int32_t)))
            continue;
        evaluated++;
        if (placed_arena(p->m, p->o, c->order, &c->arena))
            return best;
        if (c->arena < p->c[best].arena ||
            (c->arena == p->c[best].arena && by_peak(c, &p->c[best])))
            best = i;
    }
    return best;
}

static int sched_portfolio(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                           af__sched_result_t *res, af_error_t *err, int is_dp)
{
    af__smodel_t m;
    int rc = af__smodel_init(&m, g, o->alignment, err);
    if (rc)
        return rc;
    pf_t p = {.m = &m, .o = o};
    if ((rc = run_members(&p, is_dp, err)))
        goto out;
    if ((rc = refine_best(&p, is_dp))) {
        rc = af__err(err, rc, "out of memory in the exact scheduler");
        goto out;
    }
    int b = select_best(&p);
    cand_t *c = &p.c[b];
    memcpy(order, c->order, (size_t)m.n * sizeof(int32_t));
    res->name = c->name;
    res->peak = c->peak;
    /* proven optimal: a complete DP whose bound was this peak */
    res->optimal = 0;
    for (int i = 0; i < p.n; i++)
        if (p.c[i].optimal && p.c[i].peak == c->peak)
            res->optimal = 1;
    if (o->budget && res->peak > o->budget)
        rc = budget_error(&m, o, order, res->name, res->peak, err);
out:
    pf_free(&p);
    af__smodel_free(&m);
    return rc;
}

static int sched_best(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                      af__sched_result_t *res, af_error_t *err)
{
    return sched_portfolio(g, o, order, res, err, 0);
}

static int sched_dp(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                    af__sched_result_t *res, af_error_t *err)
{
    int rc = sched_portfolio(g, o, order, res, err, 1);
    res->name = "dp";
    return rc;
}

static int run_member(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                      af__sched_result_t *res, af_error_t *err, const char *name)
{
    const struct member *mb = NULL;
    for (size_t i = 0; i < AF_ARRAY_SIZE(members); i++)
        if (strcmp(members[i].name, name) == 0)
            mb = &members[i];
    af__smodel_t m;
    int rc = af__smodel_init(&m, g, o->alignment, err);
    if (rc)
        return rc;
    res->name = mb->name;
    if (!(rc = mb->fn(&m, o, order, err)) &&
        !(rc = af__smodel_peak(&m, order, &res->peak, NULL, NULL)) && o->budget &&
        res->peak > o->budget)
        rc = budget_error(&m, o, order, mb->name, res->peak, err);
    if (rc == AF_ENOMEM)
        af__err(err, rc, "out of memory in the scheduler");
    af__smodel_free(&m);
    return rc;
}

#define MEMBER_ENTRY(fn, name)                                                                     \
    static int fn(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,                    \
                  af__sched_result_t *res, af_error_t *err)                                        \
    {                                                                                              \
        return run_member(g, o, order, res, err, name);                                            \
    }
MEMBER_ENTRY(sched_input, "input")
MEMBER_ENTRY(sched_seed, "seed")
MEMBER_ENTRY(sched_xla, "xla-list")
MEMBER_ENTRY(sched_lpmf, "lpmf")
MEMBER_ENTRY(sched_dfs, "dfs")
MEMBER_ENTRY(sched_rpo, "rpo")
MEMBER_ENTRY(sched_bfs, "bfs")

static const af__sched_entry_t sched_table[] = {
    {"input", sched_input, "the order the graph came in"},
    {"seed", sched_seed, "seed list scheduler: alpha*freed/time + beta*critical path; budget"},
    {"xla-list", sched_xla, "XLA list scheduler: bytes freed - bytes defined"},
    {"lpmf", sched_lpmf, "Inductor least-peak-memory-first"},
    {"dfs", sched_dfs, "XLA post-order DFS, heavy operand subtrees first"},
    {"rpo", sched_rpo, "reverse post-order"},
    {"bfs", sched_bfs, "breadth-first (Kahn, FIFO)"},
    {"dp", sched_dp, "exact DP (Serenity) up to dp_max_nodes, window DP beyond"},
    {"best", sched_best, "portfolio of all, lowest simulated peak, DP/refinement (default)"},
};

static const char *const sched_names[] = {"input", "seed", "xla-list", "lpmf", "dfs",
                                          "rpo",   "bfs",  "dp",       "best", NULL};
_Static_assert(AF_ARRAY_SIZE(sched_names) == AF_ARRAY_SIZE(sched_table) + 1,
               "sched_names out of step with sched_table");

const char *const *af_schedule_names(void)
{
    return sched_names;
}

const af__sched_entry_t *af__sched_find(const char *name)
{
    for (size_t i = 0; name && i < AF_ARRAY_SIZE(sched_table); i++)
        if (strcmp(sched_table[i].name, name) == 0)
            return &sched_table[i];
    return NULL;
}

int af__schedule(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                 af__sched_result_t *res, af_error_t *err)
{
    const char *name = o->schedule ? o->schedule : "best";
    const af__sched_entry_t *e = af__sched_find(name);
    memset(res, 0, sizeof(*res));
    if (!e)
        return af__err(err, AF_EINVAL,
                       "unknown scheduler '%s' (known: input, seed, xla-list, "
                       "lpmf, dfs, rpo, bfs, dp, best)",
                       name);
    if (!af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "graph is not finalized");
    return e->fn(g, o, order, res, err);
}
