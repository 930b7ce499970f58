/*
 * Private to the budget search (planner/budget.c, planner/budget_refine.c): the search state,
 * a schedule candidate, the portfolio member it came from, and the helpers both files use.
 */
#ifndef ARENAFLOW_BUDGET_SEARCH_H
#define ARENAFLOW_BUDGET_SEARCH_H

#include "planner/budget_int.h"

/* The portfolio member a schedule came from (refine() starts again from it). */
typedef struct winner {
    int k; /* context; -1 none */
    af__remat_cfg_t cfg;
} winner_t;

/* Placed schedules of the refinement, by a hash of their steps: the same steps place into the
 * same plan (placement is deterministic), so a schedule met again is not placed again. */
typedef struct placed_memo {
    uint64_t key;   /* XXH3-64 of the steps; 0 = empty slot */
    uint64_t arena; /* placed arena bytes */
    double obj;     /* af__budget_plan_objective of the plan */
} placed_memo_t;

#define AF__MEMO_SLOTS 4096 /* a power of two */

typedef struct search {
    const af_graph_t *g;
    const af_plan_opts_t *o;
    uint64_t budget;
    af__remat_t *ctx[2];
    int n_ctx;
    const int32_t *order; /* the base plan's order */
    double base;          /* one plain round, cost units */
    uint8_t *protect;
    uint8_t *mode;  /* flip(): per tensor, AF__REMAT_* */
    int32_t *flips; /* flip(): evicted tensors in the order tried */
    double *key;
    winner_t *last; /* schedule(): the last winner */
    int quick;      /* minimum-budget probes: part of the portfolio, no local improvement */
    int first_fit;  /* stop at the first plan that fits (feasibility is all that is asked) */
    int stall;      /* the portfolio also prices swap-out stalls (search_again()) */
    int prefetch;   /* the portfolio's swap-ins make room for their prefetch (search_again()) */
    int outswap;    /* the portfolio may swap graph outputs out and back (search_again()) */
    placed_memo_t *memo; /* AF__MEMO_SLOTS slots (budget_refine.c) */
} search_t;

typedef struct cand {
    af_step_t *steps;
    size_t n;
    double obj;
    const char *method;
    uint64_t peak; /* simulated live bytes (upper bound of the plan's) */
} cand_t;

/* One simulator run; 0 (result in *out, which the caller frees), 1 infeasible, AF_ENOMEM. */
static inline int af__budget_run(const search_t *s, int k, const af__remat_cfg_t *cfg,
                                 af__remat_result_t *out)
{
    int rc = af__remat_run(s->ctx[k], cfg, out);
    if (rc)
        af__remat_result_free(out);
    return rc;
}

/* Places a schedule (no budget check, no verification yet). */
static inline int af__budget_place(const search_t *s, const cand_t *c, af_plan_t **out,
                                   af_error_t *err)
{
    af_plan_opts_t o = *s->o;
    o.budget = 0;
    o.verify = 0;
    return af__steps_plan(s->g, &o, c->steps, c->n, c->method, out, err);
}

static inline double af__budget_plan_objective(const search_t *s, const af_plan_t *p)
{
    const af_plan_report_t *r = af_plan_report(p);
    return s->o->offload ? r->modelled_s - r->plain_modelled_s : r->extra_cost;
}

/* Runs cfg (its mode is s->mode) with no override, records in s->mode the tensors it swapped and
 * in s->flips (*n) the tensors it evicted, dearest recompute cost per byte first. 0, 1 (no
 * schedule), AF_ENOMEM. */
int af__budget_seed_modes(const search_t *s, int k, const af__remat_cfg_t *cfg, int32_t *n);

/*
 * Refinement on placed plans, from portfolio member w (budget_refine.c): flips of the way each
 * evicted tensor comes back, judged placed and timed, then the target raised into the slack
 * placement left; *best (fitting the budget) is replaced by any cheaper plan that fits. 0 or an
 * error.
 */
int af__budget_refine(const search_t *s, const winner_t *w, af_plan_t **best, af_error_t *err);

#endif
