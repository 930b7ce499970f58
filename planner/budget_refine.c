/*
 * Under a budget: refinement of the search's answer on placed plans.
 *
 * The simulator (budget_evict.c) judges a schedule by a two-stream estimate that cannot see the
 * reuse edges placement adds: a node taking over bytes a SwapOut still reads waits for it, a
 * SwapIn waits for the bytes it lands on. Near a busy copy link that misjudges which tensors to
 * swap. So, from the portfolio member behind the best plan, each tensor it evicted is flipped to
 * the other way back (swapped instead of recomputed, or the reverse; the victim choices stay
 * the simulator's), the schedule placed and timed with the plan's own model, and a flip kept
 * when the plan fits and is cheaper than the trajectory so far; the flips are walked again while
 * a walk kept one (flips interact), at most SWEEPS walks. Raising the target (below) from a
 * point of the walk can beat raising it from the walk's end, so it is raised on the way too,
 * after FIRST_WORK / nodes flips. Four trajectories are walked:
 * flips ordered by recompute cost per byte, by recompute cost, from a seed that swaps more
 * (swap weight 0.25), and with the other pricing of swap-out stalls. Each ends by raising the
 * simulator's target into the slack placement left under the budget (mixed plans often pack
 * well under it), with the ways back fixed. Work is bounded by counts: at most REFINE_WORK / nodes
 * flips and RAISE_TRIES raises per trajectory.
 */
#include "planner/budget_search.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

#define REFINE_WORK 60000 /* placed flips: at most this many node placements (tries x nodes) */
#define FIRST_WORK 6000   /* ... after this many, the target is raised once on the way */
#define SWEEPS 4          /* passes over the flips while one of the pass before was kept */
#define RAISE_TRIES 4     /* placed plans with the target raised into placement's slack */

/* Sorts s->flips[0..n) dearest first: by the producer's cost per byte (swapping those saves most
 * per byte moved) or, with total, by the producer's cost (swapping those saves most per swap). */
static void order_flips(const search_t *s, int32_t n, int total)
{
    double *key = s->key;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = s->flips[i];
        const af_tensor_info_t *ti = af_graph_tensor(s->g, t);
        double k = ti->producer >= 0 && ti->bytes > 0 ? af__node_cost(s->g, ti->producer) : 0;
        k = total || k == 0 ? k : k / (double)ti->bytes;
        int32_t j = i;
        for (; j > 0 && key[j - 1] < k; j--) /* insertion: n is small */
            key[j] = key[j - 1], s->flips[j] = s->flips[j - 1];
        key[j] = k, s->flips[j] = t;
    }
}

/* Evicted tensors of win into s->flips, dearest per byte first. Returns their count. */
static int32_t flip_order(const search_t *s, const af__remat_result_t *win)
{
    int32_t n = 0;
    for (int32_t i = 0; i < win->n_evicted; i++) /* a graph output comes back only by a swap */
        if (af_graph_tensor(s->g, win->evicted[i])->kind != AF_TENSOR_OUTPUT)
            s->flips[n++] = win->evicted[i];
    order_flips(s, n, 0);
    return n;
}

/* Runs cfg (its mode is s->mode) with no override, records in s->mode the tensors it swapped and
 * in s->flips (*n) the tensors it evicted, in the order flips try them. 0, 1 (no schedule),
 * AF_ENOMEM. */
int af__budget_seed_modes(const search_t *s, int k, const af__remat_cfg_t *cfg, int32_t *n)
{
    af__remat_result_t r;
    memset(s->mode, AF__REMAT_ANY, (size_t)af_graph_tensor_count(s->g));
    int rc = af__budget_run(s, k, cfg, &r);
    if (rc)
        return rc;
    for (size_t i = 0; i < r.n_steps; i++)
        if (r.steps[i].kind == AF_STEP_SWAP_OUT)
            s->mode[r.steps[i].id] = AF__REMAT_SWAP;
    *n = flip_order(s, &r);
    af__remat_result_free(&r);
    return 0;
}

/* The memo slot of a schedule: its own, or the empty one where it goes (NULL when full). */
static placed_memo_t *memo_slot(const search_t *s, uint64_t key)
{
    for (uint64_t i = 0; i < AF__MEMO_SLOTS; i++) {
        placed_memo_t *m = &s->memo[(key + i) & (AF__MEMO_SLOTS - 1)];
        if (!m->key || m->key == key)
            return m;
    }
    return NULL;
}

/*
 * Runs cfg on context k and places the schedule: *out (NULL when cfg has no schedule, or when
 * the same steps were placed before and their plan cannot beat `need`: then *arena and *obj are
 * the earlier plan's). 0 or an error.
 */
static int placed_run(const search_t *s, int k, const af__remat_cfg_t *cfg, double need,
                      af_plan_t **out, uint64_t *arena, double *obj, af_error_t *err)
{
    af__remat_result_t r;
    *out = NULL;
    int rc = af__budget_run(s, k, cfg, &r);
    if (rc)
        return rc == AF_ENOMEM ? rc : 0;
    uint64_t key = XXH3_64bits(r.steps, r.n_steps * sizeof(af_step_t)) | 1;
    placed_memo_t *m = memo_slot(s, key);
    if (m && m->key == key && m->obj >= need) {
        *arena = m->arena, *obj = m->obj;
        af__remat_result_free(&r);
        return 0;
    }
    cand_t c = {r.steps, r.n_steps, 0, "evict", r.peak};
    rc = af__budget_place(s, &c, out, err);
    af__remat_result_free(&r);
    if (!rc) {
        *arena = (*out)->arena, *obj = af__budget_plan_objective(s, *out);
        if (m)
            *m = (placed_memo_t){key, *arena, *obj};
    }
    return rc;
}

/* A trajectory of placed plans: its own current objective (a step is kept when it lowers it),
 * and the best plan of the whole refinement. */
typedef struct walk {
    double at;       /* the trajectory's objective (HUGE_VAL before its first plan) */
    double best_obj; /* objective of *best */
    af_plan_t **best;
} walk_t;

/* Runs and places cfg; 1 in *kept when the plan fits and lowers w->at (then *best takes it when
 * it beats best_obj too); *arena is the placed arena (UINT64_MAX with no schedule). 0 or an
 * error. */
static int placed_try(const search_t *s, int k, const af__remat_cfg_t *cfg, walk_t *w, int *kept,
                      uint64_t *arena, af_error_t *err)
{
    af_plan_t *p;
    double obj = HUGE_VAL;
    *kept = 0;
    *arena = UINT64_MAX;
    int rc = placed_run(s, k, cfg, w->best_obj, &p, arena, &obj, err);
    if (rc)
        return rc;
    if (*arena <= s->budget && obj < w->at) {
        w->at = obj;
        *kept = 1;
        if (obj < w->best_obj) {
            w->best_obj = obj;
            af_plan_destroy(*w->best);
            *w->best = p;
            return 0;
        }
    }
    af_plan_destroy(p);
    return 0;
}

/*
 * Swaps free their bytes on a schedule the simulator counts at its target, yet placement often
 * packs the mixed plan well under the budget (in-place hand-overs, swapped bytes reused): that
 * slack is memory the plan could keep instead of recomputing or swapping. With the ways back
 * fixed (cfg.mode), the target is raised by the best plan's slack, halved when the plan packs
 * over the budget, at most RAISE_TRIES placements.
 */
static int raise_target(const search_t *s, int k, af__remat_cfg_t cfg, uint64_t arena, walk_t *w,
                        af_error_t *err)
{
    uint64_t align = s->o->alignment ? s->o->alignment : 1, ok = cfg.target;
    uint64_t step = arena <= s->budget ? s->budget - arena : 0;
    for (int i = 0; i < RAISE_TRIES && step >= align && w->at > 0; i++) {
        int kept;
        cfg.target = (ok + step) / align * align;
        int rc = placed_try(s, k, &cfg, w, &kept, &arena, err);
        if (rc)
            return rc;
        if (arena <= s->budget)
            ok = cfg.target, step = kept ? s->budget - arena : step;
        else
            step /= 2;
    }
    return 0;
}

/* raise_target() from the trajectory's present state, which then goes on from where it was
 * (its objective is not lowered by the raised plans: the flips after it keep the target). */
static int raise_kept(const search_t *s, int k, af__remat_cfg_t cfg, uint64_t arena, walk_t *w,
                      af_error_t *err)
{
    double at = w->at;
    int rc = raise_target(s, k, cfg, arena, w, err);
    w->at = at;
    return rc;
}

/*
 * Flips judged on placed plans. The simulator's two-stream estimate cannot see the reuse edges
 * placement adds (a node taking over bytes a SwapOut still reads waits for it, a SwapIn waits
 * for the bytes it lands on), so near a saturated copy stream it misjudges which tensors to swap.
 * From the winner w of the best plan's round, each evicted tensor is flipped to the other way
 * back, the schedule placed and timed, and the flip kept when the plan fits and is cheaper; then
 * the target is raised into the slack placement left (raise_target).
 */
int af__budget_refine(const search_t *s, const winner_t *w, af_plan_t **best, af_error_t *err)
{
    int32_t nn = af_graph_node_count(s->g);
    int32_t tries = REFINE_WORK / (nn > 0 ? nn : 1), first = FIRST_WORK / (nn > 0 ? nn : 1);
    af__remat_cfg_t cfg = w->cfg;
    cfg.protect = NULL;
    cfg.noise = 0;
    cfg.mode = s->mode;
    walk_t wk = {HUGE_VAL, af__budget_plan_objective(s, *best), best};
    for (int pass = 0; pass < 4 && wk.best_obj > 0; pass++) {
        int32_t n;
        cfg.swap_weight = pass == 2 ? 0.25 : w->cfg.swap_weight;
        cfg.stall = pass == 3 ? !w->cfg.stall : w->cfg.stall;
        int kept;
        uint64_t arena, a;
        int rc = af__budget_seed_modes(s, w->k, &cfg, &n);
        if (rc)
            return rc == AF_ENOMEM ? rc : 0;
        order_flips(s, n, pass > 0);
        wk.at = HUGE_VAL;
        if ((rc = placed_try(s, w->k, &cfg, &wk, &kept, &arena, err)))
            return rc;
        int32_t left = tries, done = 0;
        for (int sweep = 0, any = 1; sweep < SWEEPS && any; sweep++) {
            any = 0;
            for (int32_t i = 0; i < n && left > 0; i++, left--, done++) {
                if (done == first && (rc = raise_kept(s, w->k, cfg, arena, &wk, err)))
                    return rc;
                int32_t t = s->flips[i];
                uint8_t was = s->mode[t];
                s->mode[t] = was == AF__REMAT_SWAP ? AF__REMAT_RECOMPUTE : AF__REMAT_SWAP;
                if ((rc = placed_try(s, w->k, &cfg, &wk, &kept, &a, err)))
                    return rc;
                if (!kept)
                    s->mode[t] = was;
                else
                    arena = a, any = 1;
            }
        }
        if ((rc = raise_target(s, w->k, cfg, arena, &wk, err)))
            return rc;
    }
    return 0;
}
