/*
 * Re-planning after warm-up (replan_after_warmup = N, seed 1 §5.2).
 *
 * Tensors whose size is unknown at plan time are served at run time (dynamic.c). During the first
 * N completed rounds the session records the largest size each dynamic tensor had. Then, once,
 * the graph is copied with those sizes fixed, planned again (same planner options unless the
 * session was given others) and the new program is swapped in under s->mu: rounds started
 * afterwards use it, rounds in flight keep a reference on the old program and finish on it.
 * A tensor that later grows beyond its warm-up size is the caller's risk, as in the seed (the
 * warm-up must cover the sizes the stream will see); kernels always get the planned size.
 *
 * Lock rule: both entry points are called with s->mu held; af__replan_maybe drops it while it
 * plans (replan_state = 1 keeps other threads from planning at the same time).
 */
#include "executor/executor_int.h"

#include <stdio.h>

void af__replan_observe(af_session_t *s, const af__round_t *r)
{
    const af__prog_t *p = r->prog;
    if (s->ex->opts.replan_after_warmup <= 0 || s->replan_state != 0 || !p->n_dyn ||
        atomic_load(&r->status))
        return;
    for (int32_t t = 0; t < p->n_tensors; t++)
        if (p->loc[t] == AF__LOC_DYN && r->dbytes[t] > s->dyn_max[t])
            s->dyn_max[t] = r->dbytes[t];
    s->warm_rounds++;
}

/* Builds the re-planned program (no lock held). */
static int replan(af_session_t *s, const af__prog_t *old, const uint64_t *sizes, af__prog_t **out)
{
    af_error_t err;
    af_error_clear(&err);
    af_graph_t *g = NULL;
    af_plan_t *plan = NULL;
    int rc = af_graph_copy(old->g, sizes, &g, &err);
    if (rc)
        return rc;
    if ((rc = af_plan_create(g, &s->replan_opts, &plan, &err)))
        goto fail;
    if ((rc = af_plan_verify(plan, &err)))
        goto fail;
    if ((rc = af__prog_create(s->ex, plan, out, &err)))
        goto fail;
    if ((rc = af__session_prepare(s, *out, &err))) {
        af__prog_release(*out);
        goto fail;
    }
    (*out)->own_plan = plan;
    (*out)->own_graph = g;
    return 0;
fail:
    af_plan_destroy(plan);
    af_graph_destroy(g);
    return rc;
}

void af__replan_maybe(af_session_t *s)
{
    int32_t n = s->ex->opts.replan_after_warmup;
    if (n <= 0 || s->replan_state != 0 || !s->prog->n_dyn || s->warm_rounds < (uint64_t)n)
        return;
    s->replan_state = 1;
    af__prog_t *old = s->prog;
    atomic_fetch_add(&old->refs, 1);
    uv_mutex_unlock(&s->mu);
    af__prog_t *np = NULL;
    int rc = replan(s, old, s->dyn_max, &np); /* dyn_max is frozen while replan_state = 1 */
    uv_mutex_lock(&s->mu);
    if (rc == 0) {
        s->prog = np;
        af__prog_release(old); /* the session's reference; rounds in flight hold their own */
        s->plan_swaps++;
        s->replan_state = 2;
    } else {
        s->replan_state = 3;
    }
    af__prog_release(old);
}
