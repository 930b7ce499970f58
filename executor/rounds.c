/*
 * Starting and finishing rounds on the caller's side: one synchronous round (af_session_run),
 * a submitted round completed on the session's loop (af_session_submit), and a batch of rounds
 * with one wait (af_session_run_n).
 *
 * A round takes a free slot under s->mu, then (outside the lock) an arena from the pool, its
 * pointers and counters (af__round_start) and pushes its root nodes. The worker that finishes
 * its last node records it (af__session_round_done) and hands it over: wakes the synchronous
 * caller, or queues it for the loop.
 *
 * Inline rounds: a synchronous round of a session whose plan allows it (af__kernel_inline_ok)
 * runs on the caller's thread (af__round_run_inline) and completes there; the worker pool never
 * sees it. Every other round, and one whose caller is a worker, goes to the workers.
 *
 * Batches: the caller starts as many rounds of the batch as there are free slots (at least one,
 * waiting for it) and then sleeps once. A worker that finishes a batch round starts the next
 * round of the batch itself in the same slot with the same arena: no slot or pool trip, no
 * wake-up of the caller; the new round's first root is that worker's next task (hand-over), the
 * others go onto its own deque. Rounds of a batch still overlap (one per slot, up to
 * max_inflight), except on a small chain (one slot); a small plan's rounds are one task each,
 * their nodes run in plan order by one worker (af__batch_modes). The first failure stops the batch
 * from starting more rounds; the rounds already running finish; the last one out wakes the
 * caller. All rounds of a batch run the program that was current when it started.
 *
 * Lock rule: s->mu (rank 1) guards slots, stats and the batch's fields; it is never held while
 * pushing tasks or starting a round's arrays.
 */
#include "executor/executor_int.h"

#include <string.h>

/* A batch of af_session_run_n(); lives on the caller's stack until active drops to 0. */
struct af__batch {
    int32_t n;           /* rounds in the batch */
    int32_t started;     /* [mu] rounds taken so far (the next round's index) */
    int32_t active;      /* [mu] slots running a round of the batch */
    int status;          /* [mu] first failure */
    af_error_t err;      /* [mu] its message */
    int32_t n_in, n_out; /* buffers per round */
    const af_buffer_t *in;
    af_buffer_t *out;
};

static const af_buffer_t *batch_in(const af__batch_t *b, int32_t i)
{
    return b->in ? b->in + (size_t)i * (size_t)b->n_in : NULL;
}

static af_buffer_t *batch_out(const af__batch_t *b, int32_t i)
{
    return b->out ? b->out + (size_t)i * (size_t)b->n_out : NULL;
}

static void describe_failure(const af__round_t *r, int status, af_error_t *err)
{
    const af_graph_t *g = r->prog->g;
    int fc = atomic_load(&r->first_corrupt);
    if (status == AF_ECORRUPT && fc) {
        int32_t node = atomic_load(&r->first_corrupt_node);
        af__err(err, status, "round %llu: tensor '%s' corrupted (%d tensors): read by %s%s%s",
                (unsigned long long)r->id, af_graph_tensor(g, fc - 1)->name,
                atomic_load(&r->corrupted), node >= 0 ? "node '" : "the caller",
                node >= 0 ? af_graph_node(g, node)->name : "", node >= 0 ? "'" : "");
    } else {
        int32_t fn = atomic_load(&r->failed_node);
        /* an If the importer kept one branch of (graph/onnx.c): say why the other cannot run */
        const af_attr_t *dead = fn >= 0 ? af_graph_node_attr(g, fn, "arenaflow.if_dead") : NULL;
        af__err(err, status, "round %llu failed: %s%s%s%s%s%s%s%.300s", (unsigned long long)r->id,
                af_strerror(status), fn >= 0 ? " (node '" : "",
                fn >= 0 ? af_graph_node(g, fn)->name : "", fn >= 0 ? "', op " : "",
                fn >= 0 ? af_graph_node(g, fn)->op : "", fn >= 0 ? ")" : "",
                dead && dead->type == AF_ATTR_STRING
                    ? ": the condition takes the branch that cannot run for these input shapes: "
                    : "",
                dead && dead->type == AF_ATTR_STRING ? dead->s : "");
    }
}

/* Stats of a completed round; s->mu held. */
static void record_round(af_session_t *s, af__round_t *r, int status)
{
    const af__prog_t *p = r->prog;
    s->rounds++;
    s->nodes_run += (uint64_t)p->n_nodes;
    if (status)
        s->failed_rounds++;
    s->corrupted += (uint64_t)atomic_load(&r->corrupted);
    int32_t fn = atomic_load(&r->failed_node);
    if (status && status != AF_ECORRUPT && fn >= 0 && s->first_failed_node < 0) {
        s->first_failed_node = fn;
        s->first_failed_status = status;
    }
    int fc = atomic_load(&r->first_corrupt);
    if (fc && s->first_corrupt_tensor < 0) {
        s->first_corrupt_tensor = fc - 1;
        s->first_corrupt_node = atomic_load(&r->first_corrupt_node);
    }
    if (s->verify)
        memcpy(s->last_sum, r->sum, (size_t)p->n_tensors * sizeof(uint64_t));
    if (s->history)
        memcpy(s->last_seq, r->seq, (size_t)p->n_nodes * sizeof(uint64_t));
    s->have_last = 1;
    af__replan_observe(s, r);
}

/* Pushes the roots of a started round (hint: the worker calling, -1 any other thread). 0 or
 * AF_ENOMEM. A worker (hint >= 0: it finished the batch's previous round) keeps the first root
 * as its hand-over task (af__worker_t.hand) and runs it as soon as the completion returns, and
 * sleepers are woken only for the others: a batch of a one-root graph never touches a deque or
 * wakes a worker at a round start, nor can an idle worker steal the round's first node. */
static int push_roots(af__round_t *r, int32_t hint, af_error_t *err)
{
    const af__prog_t *p = r->prog;
    /* All roots in one all-or-nothing push: when the deque cannot grow, no node has started
     * and the round fails cleanly (the session stays usable). A whole-round task stands for
     * every node: a small plan's round in a batch of at least one round per worker (with fewer,
     * the workers would have no round of their own to run). */
    int whole = r->batch && r->s->batch_whole && r->batch->n >= r->s->ex->n;
    int32_t n = whole ? 1 : p->n_roots;
    for (int32_t i = 0; i < n; i++)
        r->roots[i] = (af__task_t){r, whole ? AF__TASK_ROUND : p->roots[i]};
    int keep = hint >= 0;
    if (af__exec_push(r->s->ex, hint, r->roots + keep, (size_t)(n - keep)))
        return af__err(err, AF_ENOMEM, "no memory to queue the round's %d first nodes", n);
    if (keep) { /* after the push: a failed round has no node running */
        af__worker_t *w = &r->s->ex->workers[hint];
        w->hand = r->roots[0];
        w->has_hand = 1;
    }
    return 0;
}

/* Records the batch's first failure (e: its message) unless one is recorded. */
static void batch_fail(af_session_t *s, af__batch_t *b, int rc, const af_error_t *e)
{
    uv_mutex_lock(&s->mu);
    if (!b->status) {
        b->status = rc;
        if (e)
            b->err = *e;
        else
            af__err(&b->err, rc, "%s", af_strerror(rc));
    }
    uv_mutex_unlock(&s->mu);
}

/* A batch round is over and no next round runs in its slot: give the slot back, and wake the
 * caller when it was the batch's last. */
static void batch_leave(af_session_t *s, af__round_t *r)
{
    af__batch_t *b = r->batch;
    af__round_release(r);
    uv_mutex_lock(&s->mu);
    r->batch = NULL;
    s->running--;
    b->active--;
    af__session_slot_put(s, r); /* broadcasts s->cv: the caller re-checks b->active */
    uv_mutex_unlock(&s->mu);
}

/* Worker side of a finished batch round: record it, then run the batch's next round in the
 * same slot and arena, or leave. */
static void batch_round_done(af_session_t *s, af__round_t *r, int status, int32_t hint)
{
    af__batch_t *b = r->batch;
    uv_mutex_lock(&s->mu);
    record_round(s, r, status);
    if (status && !b->status) {
        b->status = status;
        describe_failure(r, status, &b->err);
    }
    int32_t next = -1;
    if (!b->status && b->started < b->n) {
        next = b->started++;
        r->id = s->next_round++;
    }
    uv_mutex_unlock(&s->mu);
    if (next < 0) {
        batch_leave(s, r);
        return;
    }
    af__round_release_dynamic(r);
    af_error_t e;
    af_error_clear(&e);
    int rc = af__round_start(r, batch_in(b, next), batch_out(b, next), &e);
    if (!rc && r->prog->n_nodes == 0) {
        af__round_complete(r, hint);
        return;
    }
    if (!rc && !(rc = push_roots(r, hint, &e)))
        return;
    batch_fail(s, b, rc, &e);
    batch_leave(s, r);
}

void af__session_round_done(af_session_t *s, af__round_t *r, int32_t hint)
{
    int status = atomic_load(&r->status);
    if (r->batch) {
        batch_round_done(s, r, status, hint);
        return;
    }
    uv_mutex_lock(&s->mu);
    record_round(s, r, status);
    uv_mutex_unlock(&s->mu);

    af__round_release(r);

    uv_mutex_lock(&s->mu);
    r->final_status = status;
    r->done = 1;
    s->running--;
    if (r->sync) {
        uv_cond_broadcast(&s->cv);
    } else {
        r->next_done = NULL;
        if (s->done_tail)
            s->done_tail->next_done = r;
        else
            s->done_head = r;
        s->done_tail = r;
        uv_cond_broadcast(&s->cv);
        if (s->has_async)
            uv_async_send(&s->async);
    }
    uv_mutex_unlock(&s->mu);
}

/*
 * Takes a free slot (waiting for one when wait is set; AF_EBUSY otherwise) for a new round.
 * With a batch, the round is the batch's next one and *index gets it; AF_ENOENT when the batch
 * has no round left to start or has failed.
 */
static int take_slot(af_session_t *s, int wait, af__batch_t *b, int32_t *index, af__round_t **out)
{
    uv_mutex_lock(&s->mu);
    af__replan_maybe(s);
    if (s->consts_dirty && s->running == 0) { /* no round reads the constants right now */
        af__session_const_sums(s, s->prog);
        af__session_consts_changed(s);
        s->consts_dirty = 0;
    }
    while (s->n_free == 0 && (!b || (!b->status && b->started < b->n))) {
        if (!wait) {
            uv_mutex_unlock(&s->mu);
            return AF_EBUSY;
        }
        uv_cond_wait(&s->cv, &s->mu);
    }
    if (b && (b->status || b->started >= b->n)) {
        uv_mutex_unlock(&s->mu);
        return AF_ENOENT;
    }
    af__round_t *r = &s->slots[s->free_slots[--s->n_free]];
    r->prog = s->prog;
    atomic_fetch_add(&r->prog->refs, 1);
    r->id = s->next_round++;
    r->batch = b;
    if (b) {
        *index = b->started++;
        b->active++;
    }
    s->running++;
    uv_mutex_unlock(&s->mu);
    *out = r;
    return 0;
}

/* An af_session_run() round may run on its caller's thread: the session's plan allows it, the
 * caller is not a worker, and fewer than `threads` rounds of the executor run inline now (the
 * workers' count bounds the callers' as it bounds the workers). Takes one of those places. */
static int inline_take(af_session_t *s, const af__round_t *r)
{
    if (!s->inline_ok || r->batch || !r->sync || af__exec_on_worker())
        return 0;
    af_executor_t *ex = s->ex;
    int live = atomic_load_explicit(&ex->inline_live, memory_order_relaxed);
    while (live < ex->n)
        if (atomic_compare_exchange_weak_explicit(&ex->inline_live, &live, live + 1,
                                                  memory_order_acquire, memory_order_relaxed))
            return 1;
    return 0;
}

/* Starts a taken round. On success it is running (or already complete); on failure the slot is
 * back (a batch round: left the batch). */
static int launch(af_session_t *s, af__round_t *r, const af_buffer_t *inputs, af_buffer_t *outputs,
                  af_error_t *err)
{
    const af__prog_t *p = r->prog;
    int rc = 0;
    r->arena = NULL;
    if (p->arena_bytes &&
        (rc = af_pool_alloc(s->ex->pool, (size_t)p->arena_bytes, (void **)&r->arena))) {
        af__err(err, rc, "the pool cannot give a %llu-byte arena: %s",
                (unsigned long long)p->arena_bytes, af_strerror(rc));
        goto fail;
    }
    if ((rc = af__round_start(r, inputs, outputs, err)))
        goto fail;
    if (p->n_nodes == 0) {
        af__round_complete(r, -1);
        return 0;
    }
    if (inline_take(s, r)) { /* no hand-over to a worker, no wake-up of this thread */
        af__round_run_inline(r);
        atomic_fetch_sub_explicit(&s->ex->inline_live, 1, memory_order_release);
        af__round_complete(r, -1);
        return 0;
    }
    if ((rc = push_roots(r, -1, err)))
        goto fail;
    return 0;
fail:
    if (r->batch) {
        batch_fail(s, r->batch, rc, err);
        batch_leave(s, r);
        return rc;
    }
    af__round_release(r);
    uv_mutex_lock(&s->mu);
    s->running--;
    af__session_slot_put(s, r);
    uv_mutex_unlock(&s->mu);
    return rc;
}

/* Takes a slot and starts a round. On success *rout is running (or already complete). */
static int round_begin(af_session_t *s, const af_buffer_t *inputs, af_buffer_t *outputs, int sync,
                       af_round_cb cb, void *user, af__round_t **rout, af_error_t *err)
{
    af__round_t *r;
    int rc = take_slot(s, sync, NULL, NULL, &r);
    if (rc)
        return af__err(err, rc, "%d rounds already in flight", s->n_slots);
    r->sync = sync;
    r->done = 0;
    r->cb = cb;
    r->user = user;
    if ((rc = launch(s, r, inputs, outputs, err)))
        return rc;
    *rout = r;
    return 0;
}

int af_session_run(af_session_t *s, const af_buffer_t *inputs, af_buffer_t *outputs,
                   af_error_t *err)
{
    if (!s)
        return af__err(err, AF_EINVAL, "af_session_run: NULL session");
    af__round_t *r = NULL; /* set by round_begin on success (-O3 cannot tell) */
    int rc = round_begin(s, inputs, outputs, 1, NULL, NULL, &r, err);
    if (rc)
        return rc;
    uv_mutex_lock(&s->mu);
    while (!r->done)
        uv_cond_wait(&s->cv, &s->mu);
    rc = r->final_status;
    if (rc)
        describe_failure(r, rc, err);
    af__session_slot_put(s, r);
    uv_mutex_unlock(&s->mu);
    return rc;
}

/* Under this modelled cost of a round (FLOPs or ns; the inline rounds' bound) its nodes are so
 * short that spreading them over workers costs more than it gives: a locked decrement per
 * two-input node, a deque lock per queued task, lines moving between cores. */
#define AF__BATCH_SMALL_COST 2e6
/* Parallelism (total cost / critical path) under which a round has nothing to run in parallel. */
#define AF__BATCH_CHAIN 1.2

void af__batch_modes(const af__prog_t *p, int *serial, int *whole)
{
    double total = 0, cp = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        double c = af_graph_node(p->g, v)->cost;
        total += c > 0 ? c : 1;
    }
    int small = total < AF__BATCH_SMALL_COST;
    /* If guards add edges the plan's order need not respect (as for inline rounds) */
    *whole = small && !p->guard_t;
    *serial = small && af_executor_critical_path(p->plan, &cp, NULL) == 0 && cp > 0 &&
              total < AF__BATCH_CHAIN * cp;
}

int af_session_run_n(af_session_t *s, int32_t n, const af_buffer_t *inputs, af_buffer_t *outputs,
                     af_error_t *err)
{
    if (!s || n < 0)
        return af__err(err, AF_EINVAL, "af_session_run_n: %s",
                       s ? "negative round count" : "NULL session");
    af__batch_t b = {.n = n, .in = inputs, .out = outputs};
    uv_mutex_lock(&s->mu);
    b.n_in = s->prog->n_inputs; /* the same for every program of the session */
    b.n_out = s->prog->n_outputs;
    int no_nodes = s->prog->n_nodes == 0;
    uv_mutex_unlock(&s->mu);
    /* A round without nodes completes on the thread that starts it: a batch of them would
     * nest one completion in the other, so they simply run one by one. */
    for (int32_t i = 0; no_nodes && i < n; i++) {
        int rc = af_session_run(s, batch_in(&b, i), batch_out(&b, i), err);
        if (rc)
            return rc;
    }
    if (no_nodes)
        return 0;
    af_error_clear(&b.err);
    /* a small chain: one round at a time, each started by the worker that ran the previous one
     * (batch_round_done), so the other workers stay asleep */
    int slots = s->batch_serial ? 1 : s->n_slots;
    for (int k = 0; k < slots; k++) {
        af__round_t *r;
        int32_t i = 0;
        /* The first round waits for a slot; later ones take only free slots: the batch then
         * runs on the slots it has. */
        if (take_slot(s, k == 0, &b, &i, &r))
            break;
        af_error_t e;
        af_error_clear(&e);
        if (launch(s, r, batch_in(&b, i), batch_out(&b, i), &e))
            break; /* recorded in b */
    }
    uv_mutex_lock(&s->mu);
    while (b.active > 0)
        uv_cond_wait(&s->cv, &s->mu);
    uv_mutex_unlock(&s->mu);
    if (b.status && err)
        *err = b.err;
    return b.status;
}

int af_session_submit(af_session_t *s, const af_buffer_t *inputs, af_buffer_t *outputs,
                      af_round_cb cb, void *user, uint64_t *round_out)
{
    if (!s || !s->has_async)
        return AF_EINVAL;
    af__round_t *r = NULL;
    int rc = round_begin(s, inputs, outputs, 0, cb, user, &r, NULL);
    if (rc == 0 && round_out)
        *round_out = r->id;
    return rc;
}
