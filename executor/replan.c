/*
 * Re-planning after warm-up (replan_after_warmup = N, seed 1 §5.2).
 *
 * Tensors whose size is unknown at plan time are served by the dynamic region. During the first
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
#include "executor/session_int.h"

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

/* Copies g with the dynamic tensors sized from sizes[] (0 keeps a tensor dynamic). Constant
 * data is shared with g (reference-counted storage), not copied. */
int af__exec_copy_graph(const af_graph_t *g, const uint64_t *sizes, af_graph_t **out,
                        af_error_t *err)
{
    af_graph_t *c = NULL;
    int rc = af_graph_create(&c);
    if (rc)
        return af__err(err, rc, "re-plan: cannot create a graph");
    if ((rc = af_graph_set_name(c, af_graph_name(g))))
        goto fail;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        af_tensor_desc_t d = {
            .name = ti->name,
            .bytes = ti->bytes,
            .dtype = ti->dtype,
            .rank = ti->rank,
            .shape = ti->shape,
            .kind = ti->kind,
            .alias_of = ti->alias_of >= 0 ? af_graph_tensor(g, ti->alias_of)->name : NULL,
            .alias_offset = ti->alias_offset,
        };
        if (ti->bytes < 0 && sizes && sizes[t]) {
            d.bytes = (int64_t)sizes[t];
            d.rank = -1; /* the shape had unknown dims; the size is what warm-up saw */
            d.shape = NULL;
        }
        int32_t id;
        if ((rc = af_graph_add_tensor(c, &d, &id, err)) ||
            (rc = af_graph_share_data(c, id, g, t, err)) || /* weights: shared, not copied */
            (d.bytes < 0 && ti->dynamic_reason &&
             (rc = af_graph_set_dynamic_reason(c, id, ti->dynamic_reason, err))))
            goto fail;
    }
    const char **names = NULL;
    size_t cap = 0;
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        size_t need = (size_t)ni->n_inputs + (size_t)ni->n_outputs + 1;
        if ((rc = af__grow((void **)&names, &cap, need, sizeof(*names)))) {
            af__free(names);
            goto fail;
        }
        for (int32_t i = 0; i < ni->n_inputs; i++)
            names[i] = af_graph_tensor(g, ni->inputs[i])->name;
        for (int32_t k = 0; k < ni->n_outputs; k++)
            names[ni->n_inputs + k] = af_graph_tensor(g, ni->outputs[k])->name;
        af_node_desc_t nd = {
            .name = ni->name,
            .op = ni->op,
            .inputs = names,
            .n_inputs = ni->n_inputs,
            .outputs = names + ni->n_inputs,
            .n_outputs = ni->n_outputs,
            .cost = ni->cost,
            .inplace = ni->inplace,
            .n_inplace = ni->n_inplace,
        };
        int32_t id;
        if ((rc = af_graph_add_node(c, &nd, &id, err))) {
            af__free(names);
            goto fail;
        }
        for (int32_t a = 0; a < ni->n_attrs; a++)
            if ((rc = af_graph_node_set_attr(c, id, &ni->attrs[a], err))) {
                af__free(names);
                goto fail;
            }
    }
    af__free(names);
    if ((rc = af_graph_finalize(c, err)))
        goto fail;
    *out = c;
    return 0;
fail:
    af_graph_destroy(c);
    if (err && !err->code)
        af__err(err, rc, "re-plan: cannot copy the graph: %s", af_strerror(rc));
    return rc;
}

/* Builds the re-planned program (no lock held). */
static int replan(af_session_t *s, const af__prog_t *old, const uint64_t *sizes, af__prog_t **out)
{
    af_error_t err;
    af_error_clear(&err);
    af_graph_t *g = NULL;
    af_plan_t *plan = NULL;
    int rc = af__exec_copy_graph(old->g, sizes, &g, &err);
    if (rc)
        return rc;
    if ((rc = af_plan_create(g, &s->replan_opts, &plan, &err)))
        goto fail;
    if ((rc = af_plan_verify(plan, &err)))
        goto fail;
    if ((rc = af__prog_create(s->ex, plan, out, &err)))
        goto fail;
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
