/*
 * Under a budget: the driver of recomputation and offload.
 *
 * When no order fits opts.budget (B), af_plan_create() comes here. The best unbudgeted plan
 * gives the base order (the graph's input order is tried too); then, for a byte target T
 * (first T = B):
 *   1. schedules are built for T — the exact chain DP when the graph is a training chain, and
 *      the evict-on-demand simulator over a portfolio of scores (next-use exponent beta 0..2,
 *      with and without the evicted neighbourhood, swap weights when offloading) on each base
 *      order — and the cheapest is improved locally: tensors it evicted are protected one at a
 *      time, and jittered scores are tried, each change kept when it lowers the cost;
 *   2. the winner becomes a rewritten graph and is placed like any plan.
 * Placement may need more than the simulated live bytes (fragmentation) or less (in-place
 * hand-overs the simulator does not count), so T moves: down by the excess while the arena is
 * over B, up by the slack while it fits, then bisected between the two, at most MAX_ROUNDS
 * placements. The cost is the recomputed nodes' cost, or with offload the modelled overhead
 * (two-stream time minus one plain round), so swaps win where their transfer hides behind
 * compute. With offload and recomputation, the best plan is then refined on placed plans from the
 * portfolio members behind it (budget_refine.c), and when it costs anything the search runs again
 * with the portfolio also pricing swap-out stalls (search_again()), and last with swap-ins that
 * make room for their prefetch. The best plan that fits is verified and
 * returned.
 *
 * When none fits, the smallest budget the same search meets is found by bisection and named in
 * the AF_EBUDGET message, beside the bound no schedule can beat (the most bytes one node needs).
 *
 * Work is bounded by counts, not by the clock, so a plan is the same on any machine.
 */
#include "planner/budget_search.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_ROUNDS 8         /* placements per budget */
#define PROTECT_TRIES 24     /* local improvement: evicted tensors tried as protected */
#define NOISE_TRIES 8        /* local improvement: jittered runs */
#define FLIP_TRIES 24        /* local improvement: evicted tensors tried the other way back */
#define FLIP_WORK 10000      /* ... at most this many simulated nodes (tries x nodes) */
#define RECOMPUTE_WEIGHT 1e6 /* a swap weight under which recomputation always wins */

int af__budget_wanted(const af_graph_t *g, const af_plan_opts_t *o)
{
    return o && g && af_graph_is_finalized(g) && o->budget && (o->recompute || o->offload) &&
           !o->safe_mode && o->mode == AF_MODE_OFFSET;
}

static double objective(const search_t *s, const af__remat_result_t *r)
{
    return s->o->offload ? r->est_time - s->base : r->extra_cost;
}

/* Keeps r's steps in *best when r is cheaper (r is consumed either way). */
static void consider(cand_t *best, af__remat_result_t *r, double obj, const char *method)
{
    if (!best->steps || obj < best->obj) {
        af__free(best->steps);
        *best = (cand_t){r->steps, r->n_steps, obj, method, r->peak};
        r->steps = NULL;
    }
    af__remat_result_free(r);
}

/*
 * With offload and recomputation, the scores decide per eviction whether a tensor is swapped or
 * recomputed from estimates: a transfer that hides behind compute costs nothing, one that
 * saturates the link costs more than its weight says. So each evicted tensor of the winner is
 * flipped to the other way (its victim choices unchanged), kept when the two-stream estimate
 * drops. cfg is the winner's; the modes kept stay in s->mode.
 */
static int flip(const search_t *s, int k, af__remat_cfg_t cfg, double cur, cand_t *best)
{
    cfg.mode = s->mode;
    cfg.noise = 0;
    int32_t n, nn = af_graph_node_count(s->g);
    int rc = af__budget_seed_modes(s, k, &cfg, &n);
    if (rc)
        return rc == AF_ENOMEM ? rc : 0;
    int32_t tries =
        FLIP_WORK / (nn > 0 ? nn : 1) < FLIP_TRIES ? FLIP_WORK / (nn > 0 ? nn : 1) : FLIP_TRIES;
    for (int32_t i = 0; i < n && i < tries; i++) {
        int32_t t = s->flips[i];
        uint8_t was = s->mode[t];
        s->mode[t] = was == AF__REMAT_SWAP ? AF__REMAT_RECOMPUTE : AF__REMAT_SWAP;
        af__remat_result_t r;
        if ((rc = af__budget_run(s, k, &cfg, &r)) == AF_ENOMEM)
            return rc;
        if (rc == 0 && objective(s, &r) < cur) {
            cur = objective(s, &r);
            consider(best, &r, cur, "evict");
            continue;
        }
        s->mode[t] = was;
        if (!rc)
            af__remat_result_free(&r);
    }
    return 0;
}

/* Local improvement of the winner (context k, cfg): protection and jitter. */
static int improve(const search_t *s, int k, af__remat_cfg_t cfg, af__remat_result_t *win,
                   cand_t *best)
{
    int32_t nt = af_graph_tensor_count(s->g);
    memset(s->protect, 0, (size_t)nt);
    cfg.protect = s->protect;
    int32_t tries = win->n_evicted < PROTECT_TRIES ? win->n_evicted : PROTECT_TRIES;
    double cur = objective(s, win);
    for (int32_t i = 0; i < tries; i++) {
        int32_t t = win->evicted[i];
        s->protect[t] = 1;
        af__remat_result_t r;
        int rc = af__budget_run(s, k, &cfg, &r);
        if (rc == AF_ENOMEM)
            return rc;
        if (rc == 0 && objective(s, &r) < cur) {
            cur = objective(s, &r);
            consider(best, &r, cur, "evict");
        } else {
            s->protect[t] = 0;
            if (!rc)
                af__remat_result_free(&r);
        }
    }
    for (uint64_t seed = 1; seed <= NOISE_TRIES; seed++) {
        cfg.noise = seed;
        af__remat_result_t r;
        int rc = af__budget_run(s, k, &cfg, &r);
        if (rc == AF_ENOMEM)
            return rc;
        if (!rc)
            consider(best, &r, objective(s, &r), "evict");
    }
    if (s->o->offload && s->o->recompute) {
        cfg.noise = 0;
        return flip(s, k, cfg, best->steps && best->obj < cur ? best->obj : cur, best);
    }
    return 0;
}

/* The cheapest schedule for target T, and in *alt the best portfolio member when local
 * improvement or the chain DP beat it (placement may favour either). 0 with *best filled, 1
 * none, AF_ENOMEM. */
static int schedule(const search_t *s, uint64_t T, cand_t *best, cand_t *alt)
{
    static const double betas[] = {0, 0.5, 1, 2}, weights[] = {0, 0.05, 0.25, 1};
    *best = *alt = (cand_t){0};
    double extra;
    af_step_t *cs;
    size_t cn;
    int rc = af__chain_plan(s->g, s->o->alignment, T, &cs, &cn, &extra);
    if (rc == AF_ENOMEM)
        return rc;
    if (rc == 0)
        *best = (cand_t){cs, cn, extra, "chain-dp", T};
    int win_k = -1;
    af__remat_cfg_t win_cfg = {0};
    af__remat_result_t win = {0}, plain = {0}; /* plain: the best member without stall pricing */
    winner_t by_stall[2] = {{-1, {0}}, {-1, {0}}};
    double stall_obj[2] = {HUGE_VAL, HUGE_VAL};
    /* probes (quick): the base order, beta 1 and 2, the neighbourhood, swap weights 0 and 1 */
    size_t nw = s->o->offload ? AF_ARRAY_SIZE(weights) : 1,
           wstep = (s->quick || s->first_fit) && nw > 1 ? nw - 1 : 1;
    int stalls = s->stall && !s->quick && !s->first_fit ? 2 : 1;
    for (int k = 0; k < (s->quick ? 1 : s->n_ctx); k++)
        for (size_t b = s->quick ? 2 : 0; b < AF_ARRAY_SIZE(betas); b++)
            for (int rec = s->quick; rec < 2; rec++)
                for (size_t i = 0; i < nw * (size_t)stalls; i += wstep) {
                    size_t w = i % nw;
                    af__remat_cfg_t cfg = {.target = T,
                                           .beta = betas[b],
                                           .recursive = rec,
                                           .swap_weight = weights[w],
                                           .stall = (int)(i / nw),
                                           .prefetch = s->prefetch,
                                           .swap_outputs = s->outswap};
                    af__remat_result_t r;
                    if ((rc = af__budget_run(s, k, &cfg, &r)) == AF_ENOMEM) {
                        af__remat_result_free(&win);
                        af__remat_result_free(&plain);
                        af__free(best->steps);
                        best->steps = NULL;
                        return rc;
                    }
                    if (rc)
                        continue;
                    if (objective(s, &r) < stall_obj[cfg.stall]) {
                        stall_obj[cfg.stall] = objective(s, &r);
                        by_stall[cfg.stall] = (winner_t){k, cfg};
                    }
                    if (win_k < 0 || objective(s, &r) < objective(s, &win)) {
                        if (win_k >= 0 && !win_cfg.stall) { /* kept as plain, see below */
                            af__remat_result_free(&plain);
                            plain = win;
                        } else {
                            af__remat_result_free(&win);
                        }
                        win = r, win_k = k, win_cfg = cfg;
                    } else if (!cfg.stall &&
                               (!plain.steps || objective(s, &r) < objective(s, &plain))) {
                        af__remat_result_free(&plain);
                        plain = r;
                    } else {
                        af__remat_result_free(&r);
                    }
                    if (s->quick) /* a probe asks whether T can be met, not at what cost */
                        goto done;
                }
done:
    s->last[0].k = win_k;
    s->last[0].cfg = win_cfg;
    s->last[1] = by_stall[!win_cfg.stall];
    if (!win_cfg.stall) /* the winner is the plain member itself */
        af__remat_result_free(&plain);
    if (win_k >= 0 && !s->quick && !s->first_fit && (rc = improve(s, win_k, win_cfg, &win, best))) {
        af__remat_result_free(&win);
        af__remat_result_free(&plain);
        af__free(best->steps);
        best->steps = NULL;
        return rc;
    }
    if (win_k >= 0 && best->steps && objective(s, &win) >= best->obj) {
        *alt = (cand_t){win.steps, win.n_steps, objective(s, &win), "evict", win.peak};
        win.steps = NULL;
        af__remat_result_free(&win);
    } else if (win_k >= 0) {
        consider(best, &win, objective(s, &win), "evict");
    }
    /* a winner priced with stalls may pack over the budget: the plain member is the runner-up */
    if (plain.steps && !alt->steps) {
        *alt = (cand_t){plain.steps, plain.n_steps, objective(s, &plain), "evict", plain.peak};
        plain.steps = NULL;
    }
    af__remat_result_free(&plain);
    return best->steps ? 0 : 1;
}

/* What the target search knows: the largest target whose plan fitted (ok), the smallest whose
 * plan was over the budget (bad), the largest with no schedule at all (inf). */
typedef struct bracket {
    uint64_t ok, bad, inf;
    uint64_t top; /* lowest simulated peak of a schedule placed over the budget */
} bracket_t;

/* The next target: up by the slack while everything fitted, down by the excess (from the
 * schedule's own peak) while nothing did, else the middle of the bracket. */
static uint64_t next_target(const bracket_t *k, uint64_t T, uint64_t peak, uint64_t arena,
                            uint64_t B, int none)
{
    if (k->bad == UINT64_MAX)
        return none ? T : T + (B - arena);
    if (k->ok)
        return k->ok + (k->bad - k->ok) / 2;
    uint64_t from = peak < T ? peak : T, top = k->top < k->bad ? k->top : k->bad;
    if (!none && from > k->inf + (arena - B) + 1)
        return from - (arena - B) - 1;
    return k->inf + (top - k->inf) / 2; /* targets above a schedule's peak change nothing */
}

/*
 * The greedy rematerialiser's schedule at the budget, placed (its improved form first, then the
 * plain one if that packs over the budget): a plan that fits becomes *best, the bar the target
 * search must beat, so the answer is never worse than the greedy's. Recomputation only (with
 * offload, one_way() runs this search too); not when feasibility is all that is asked.
 */
static int greedy_seed(const search_t *s, af_plan_t **best, af_error_t *err)
{
    if (s->o->offload || !s->o->recompute || s->first_fit)
        return 0;
    int rc = 0;
    for (int improve = 1; improve >= 0 && !*best && !rc; improve--) {
        cand_t c = {.method = "greedy"};
        rc = af__greedy_plan(s->g, s->order, s->o->alignment, s->budget, improve, &c.steps, &c.n,
                             &c.peak);
        af_plan_t *p = NULL;
        if (rc == 1)
            return 0;
        if (!rc && !(rc = af__budget_place(s, &c, &p, err)) && p->arena <= s->budget)
            *best = p, p = NULL;
        af_plan_destroy(p);
        af__free(c.steps);
    }
    return rc;
}

/*
 * The best placed plan within the budget, moving the target as placement demands. 0 with
 * *out, AF_EBUDGET when nothing fits, or an error.
 */
static int search(const search_t *s, af_plan_t **out, af_error_t *err)
{
    uint64_t B = s->budget, T = B, align = s->o->alignment;
    uint64_t floor = af__remat_floor(s->ctx[0]);
    af_plan_t *best = NULL;
    int rc = greedy_seed(s, &best, err);
    bracket_t k = {0, UINT64_MAX, 0, UINT64_MAX};
    winner_t best_w = {-1, {0}}, other_w = {-1, {0}};
    for (int round = 0; !rc && round < MAX_ROUNDS && T >= floor; round++) {
        cand_t c, alt;
        if ((rc = schedule(s, T, &c, &alt)) == AF_ENOMEM)
            break;
        af_plan_t *p = NULL;
        uint64_t peak = rc == 0 ? c.peak : T;
        if (rc == 0)
            rc = af__budget_place(s, &c, &p, err);
        if (!rc && p->arena > B && alt.steps) { /* the runner-up may pack better */
            af_plan_destroy(p);
            p = NULL;
            peak = alt.peak;
            rc = af__budget_place(s, &alt, &p, err);
        }
        uint64_t arena = p ? p->arena : 0;
        af__free(c.steps);
        af__free(alt.steps);
        int fit = !rc && arena <= B, none = rc == 1;
        if (rc && !none)
            break;
        rc = 0;
        if (none && !k.ok)
            k.inf = T; /* no schedule at T: none below either */
        else if (fit)
            k.ok = T;
        else
            k.bad = T, k.top = peak < k.top ? peak : k.top;
        if (fit && (!best || af__budget_plan_objective(s, p) < af__budget_plan_objective(s, best)))
            af_plan_destroy(best), best = p, p = NULL, best_w = s->last[0], other_w = s->last[1];
        af_plan_destroy(p);
        uint64_t next = next_target(&k, T, peak, arena, B, none);
        next = next / align * align;
        if ((best && s->first_fit) || next == T || next >= k.bad || next <= k.ok || next <= k.inf ||
            (best && (k.bad - k.ok <= B / 512 || af__budget_plan_objective(s, best) <= 0)))
            break;
        T = next;
    }
    if (!rc && best && best_w.k >= 0 && s->o->offload && s->o->recompute && !s->first_fit &&
        af__budget_plan_objective(s, best) > 0)
        rc = af__budget_refine(s, &best_w, &best, err);
    if (!rc && best && other_w.k >= 0 && s->o->offload && s->o->recompute && !s->first_fit &&
        af__budget_plan_objective(s, best) > 0)
        rc = af__budget_refine(s, &other_w, &best, err);
    *s->last = best_w;
    if (rc && rc != AF_EBUDGET) {
        af_plan_destroy(best);
        return rc;
    }
    if (!best)
        return AF_EBUDGET;
    *out = best;
    return 0;
}

static void search_free(search_t *s)
{
    for (int k = 0; k < s->n_ctx; k++)
        af__remat_destroy(s->ctx[k]);
    af__free(s->protect);
    af__free(s->mode);
    af__free(s->flips);
    af__free(s->key);
    af__free(s->last);
    af__free(s->memo);
}

/* Contexts for the base plan's order and the graph's input order. */
static int search_init(search_t *s, const af_graph_t *g, const af_plan_opts_t *o,
                       const af_plan_t *p0)
{
    *s = (search_t){.g = g, .o = o};
    size_t nt = (size_t)af_graph_tensor_count(g) + 1;
    s->protect = af__calloc(nt, 1);
    s->mode = af__calloc(nt, 1);
    s->flips = af__malloc(nt * sizeof(int32_t));
    s->key = af__malloc(nt * sizeof(double));
    s->last = af__calloc(2, sizeof(winner_t));
    s->memo = af__calloc(AF__MEMO_SLOTS, sizeof(placed_memo_t));
    if (!s->protect || !s->mode || !s->flips || !s->key || !s->last || !s->memo)
        return AF_ENOMEM;
    const int32_t *orders[2] = {af_plan_order(p0), af_graph_input_order(g)};
    int32_t nn = af_graph_node_count(g);
    s->order = orders[0];
    int two = memcmp(orders[0], orders[1], (size_t)nn * sizeof(int32_t)) != 0;
    for (int k = 0; k < 1 + two; k++)
        if (af__remat_create(g, orders[k], o, &s->ctx[s->n_ctx++]))
            return AF_ENOMEM;
    for (int32_t v = 0; v < nn; v++)
        s->base += af__node_cost(g, v);
    return 0;
}

/* 0 when some schedule keeps the simulated live bytes within T (quick portfolio), 1 when none,
 * AF_ENOMEM. */
static int model_meets(search_t *s, uint64_t T)
{
    cand_t c, alt;
    s->quick = 1;
    int rc = schedule(s, T, &c, &alt);
    s->quick = 0;
    af__free(c.steps);
    af__free(alt.steps);
    return rc;
}

/*
 * Smallest budget in [lo, hi] the planner meets, hi being met. Bisection on the simulated
 * schedules (cheap: no placement) to max(alignment, hi / 1000), then the full search — the one
 * af_plan_create() runs — confirms it, stepping up by 1/256, 1/128, ... of it until it plans:
 * the named budget always plans.
 */
static int bisect(search_t *s, uint64_t lo, uint64_t hi, uint64_t *out, af_plan_t **plan,
                  af_error_t *err)
{
    uint64_t align = s->o->alignment, top = hi;
    while (hi - lo > align && hi - lo > hi / 1000) {
        uint64_t mid = (lo + (hi - lo) / 2) / align * align;
        if (mid <= lo)
            break;
        int rc = model_meets(s, mid);
        if (rc == AF_ENOMEM)
            return af__err(err, rc, "out of memory");
        if (rc)
            lo = mid;
        else
            hi = mid;
    }
    s->first_fit = 1; /* a rescued plan (refuse) is rare: feasibility first */
    for (uint64_t step = hi / 256 + 1; hi < top; hi = af__align_up(hi + step, align), step *= 2) {
        s->budget = hi;
        af_plan_t *p = NULL;
        int rc = search(s, &p, err);
        if (!rc && plan)
            *plan = p;
        else
            af_plan_destroy(p);
        if (!rc)
            break;
        if (rc != AF_EBUDGET)
            return rc;
    }
    s->first_fit = 0;
    *out = hi < top ? hi : top;
    return 0;
}

/* The base plan (no budget) and a search over it. */
static int prepare(const af_graph_t *g, const af_plan_opts_t *o, af_plan_t **p0, search_t *s,
                   af_error_t *err)
{
    af_plan_opts_t o0 = *o;
    o0.budget = 0;
    o0.verify = 0;
    int rc = af_plan_create(g, &o0, p0, err);
    if (!rc && (rc = search_init(s, g, o, *p0)))
        rc = af__err(err, rc, "out of memory");
    return rc;
}

int af_plan_min_budget(const af_graph_t *g, const af_plan_opts_t *opts, uint64_t *out,
                       uint64_t *bound, af_error_t *err)
{
    if (!g || !out || !af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "NULL or unfinalized graph, or NULL output");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (opts)
        o = *opts;
    af_plan_t *p0 = NULL;
    search_t s = {0};
    int rc = prepare(g, &o, &p0, &s, err);
    if (!rc) {
        uint64_t fl = af__remat_floor(s.ctx[0]);
        if (bound)
            *bound = fl;
        rc = (o.recompute || o.offload) && fl < p0->arena
                 ? bisect(&s, fl > 0 ? fl - 1 : 0, p0->arena, out, NULL, err)
                 : (*out = p0->arena, 0);
    }
    search_free(&s);
    af_plan_destroy(p0);
    return rc;
}

/*
 * The search failed at the budget: find the smallest budget it meets. When that is within the
 * budget after all (the target search is a heuristic and can miss), its plan is the answer
 * (*out); otherwise AF_EBUDGET with the first failure's text and the smallest budget.
 */
static int refuse(search_t *s, const af_plan_t *p0, const char *first, af_plan_t **out,
                  af_error_t *err)
{
    uint64_t fl = af__remat_floor(s->ctx[0]), least = p0->arena, B = s->budget;
    int rc = fl < p0->arena ? bisect(s, fl > 0 ? fl - 1 : 0, p0->arena, &least, out, err) : 0;
    if (rc || (*out && least <= B))
        return rc;
    af_plan_destroy(*out);
    *out = NULL;
    return af__err(err, AF_EBUDGET,
                   "%.260s; with %s the smallest budget arenaflow meets is %llu bytes (no "
                   "schedule can go below %llu: the graph outputs, or one node's inputs and "
                   "outputs, need that much at once)",
                   first,
                   s->o->offload ? (s->o->recompute ? "recomputation and offload" : "offload")
                                 : "recomputation",
                   (unsigned long long)least, (unsigned long long)fl);
}

/*
 * With offload and recomputation both allowed, the plans of each alone are candidates too: the
 * mixed portfolio can pack worse than recomputation alone, or swap less well than offload alone
 * (its scores recompute where a swap would have hidden), and allowing more must never cost more.
 * `swap` picks the way kept (1 offload alone, 0 recomputation alone). Keeps in *p whichever plan
 * has the lower modelled overhead; rc is the result so far (0 with *p, or AF_EBUDGET); returns
 * the combined result. Nothing is searched when *p already costs nothing.
 */
static int one_way(const search_t *s, const af_plan_t *p0, af_plan_t **p, int rc, int swap,
                   af_error_t *err)
{
    if (!s->o->offload || !s->o->recompute || (!rc && af__budget_plan_objective(s, *p) <= 0) ||
        (swap && rc))
        return rc; /* offload alone is for a cheaper plan: it meets no budget the mix missed */
    af_plan_opts_t o2 = *s->o;
    if (swap)
        o2.recompute = 0;
    else
        o2.offload = 0;
    search_t s2;
    af_plan_t *q = NULL;
    int rc2 = search_init(&s2, s->g, &o2, p0) ? AF_ENOMEM : 0;
    winner_t w = {-1, {0}};
    if (!rc2) {
        s2.budget = s->budget;
        rc2 = search(&s2, &q, err);
        w = *s2.last;
    }
    search_free(&s2);
    if (rc2 && rc2 != AF_EBUDGET) {
        af_plan_destroy(*p);
        *p = NULL;
        return rc2 == AF_ENOMEM ? af__err(err, rc2, "out of memory") : rc2;
    }
    if (!rc2 && !swap && w.k >= 0 && w.k < s->n_ctx && af__budget_plan_objective(s, q) > 0) {
        /* from recomputation alone, swap what hides: the same victims, swapped back instead;
         * refined whether or not it beats *p (a cheaper mix must not skip this path) */
        w.cfg.swap_weight = RECOMPUTE_WEIGHT;
        rc2 = af__budget_refine(s, &w, &q, err);
        if (rc2) {
            af_plan_destroy(q);
            af_plan_destroy(*p);
            *p = NULL;
            return rc2 == AF_ENOMEM ? af__err(err, rc2, "out of memory") : rc2;
        }
    }
    if (!rc2 && (rc || af__budget_plan_objective(s, q) < af__budget_plan_objective(s, *p))) {
        af_plan_destroy(*p);
        *p = q;
        return 0;
    }
    af_plan_destroy(q);
    return rc;
}

/*
 * With offload and recomputation, the search again with one of the portfolio's knobs set (*knob:
 * s->stall or s->prefetch); *p is replaced when that plan is cheaper. Nothing is searched when
 * *p costs nothing. 0 or an error (AF_EBUDGET is not one).
 *
 * s->stall: the portfolio also prices swap-out stalls (budget_evict.c:
 * cfg.stall), which avoids swaps whose bytes are needed before the link drains them. A second
 * search, not a wider first one: its winners pack differently, and feasibility must not depend
 * on them (bert-train at batch 32 under its batch-8 arena once planned with recomputation alone
 * and was refused with both).
 *
 * s->prefetch: swap-ins make room for their prefetch (cfg.prefetch): where no headroom under the
 * target lets a transfer start early enough to hide, copies cheaper to recompute than the wait
 * are dropped before it. Run last, after the single-way searches, so that every search before
 * it takes the path it takes without it (run before them, a cheaper plan skipped the refinement
 * from recomputation alone in one_way(): convnet-train at 0.6 x peak 0.801% -> 0.812%).
 */
static int search_again(search_t *s, int *knob, af_plan_t **p, af_error_t *err)
{
    if (!s->o->offload || !s->o->recompute || af__budget_plan_objective(s, *p) <= 0)
        return 0;
    af_plan_t *q = NULL;
    *knob = 1;
    int rc = search(s, &q, err);
    *knob = 0;
    if (!rc && af__budget_plan_objective(s, q) < af__budget_plan_objective(s, *p)) {
        af_plan_destroy(*p);
        *p = q;
        return 0;
    }
    af_plan_destroy(q);
    if (rc == AF_EBUDGET)
        return 0;
    if (rc) {
        af_plan_destroy(*p);
        *p = NULL;
    }
    return rc;
}

int af__budget_plan(const af_graph_t *g, const af_plan_opts_t *o, af_plan_t **out, af_error_t *err)
{
    uint64_t t0 = af_now_ns();
    char first[AF_ERROR_MSG_MAX];
    snprintf(first, sizeof first, "%s", err && err->msg[0] ? err->msg : "budget exceeded");
    af_plan_t *p0 = NULL, *p = NULL;
    search_t s = {0};
    int rc = prepare(g, o, &p0, &s, err);
    if (!rc && p0->arena <= o->budget) { /* placement met it where the scheduler's check did not */
        p = p0;
        p0 = NULL;
    } else if (!rc) {
        s.budget = o->budget;
        rc = search(&s, &p, err);
        if (!rc)
            rc = search_again(&s, &s.stall, &p, err);
        for (int swap = 0; swap < 2 && (rc == 0 || rc == AF_EBUDGET); swap++)
            rc = one_way(&s, p0, &p, rc, swap, err);
        if (!rc) /* last: the searches before it take the same paths as without it */
            rc = search_again(&s, &s.prefetch, &p, err);
        if (!rc) { /* and graph outputs swapped out and back, with the prefetch room */
            s.prefetch = 1;
            rc = search_again(&s, &s.outswap, &p, err);
            s.prefetch = 0;
        }
        if (rc == AF_EBUDGET)
            rc = refuse(&s, p0, first, &p, err);
    }
    if (!rc) {
        p->opts.budget = o->budget;
        p->opts.verify = o->verify;
    }
    if (!rc && p->budget) {
        p->rep.unbudgeted_bytes = p0->arena;
        p->rep.budget_ms = (double)(af_now_ns() - t0) / 1e6;
        p->rep.total_ms += p->rep.budget_ms;
    }
    if (!rc && o->verify && (rc = af_plan_verify(p, err)))
        af_plan_destroy(p);
    search_free(&s);
    af_plan_destroy(p0);
    if (!rc)
        *out = p;
    return rc;
}
