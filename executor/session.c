/*
 * Sessions and rounds: a session binds a compiled plan (program) to an executor; a round is one
 * execution of every node, in its own arena instance taken from the pool.
 *
 * Round life: a free slot is taken (slots are allocated once per session, so a round allocates
 * nothing on the heap), the arena comes from the pool, pending counters are reset from the
 * program, graph inputs and constants get their pointers (caller buffers are used in place when
 * the plan put the tensor in the arena) and, when verifying, their checksums; the root nodes
 * are pushed to the workers. The worker that finishes the last node completes the round: checks
 * the outputs, copies views/dynamic outputs to caller buffers, frees dynamic tensors, returns
 * the arena, and wakes the synchronous caller or posts the round to the session's loop
 * (uv_async_send), whose callback runs the user's completion callback and frees the slot.
 *
 * Verification (session opts / executor verify): before a kernel runs, each input is hashed and
 * compared with the checksum its producer recorded; after it runs, each output is hashed. The
 * first mismatch names the polluted tensor and the node that read it.
 *
 * If branches (guards.c): a node of the branch a round does not take is skipped before its
 * kernel; its outputs have no value this round: the If node, their only reader outside the
 * branch, gets NULL (0 bytes) for them and copies the taken branch's outputs.
 *
 * Kernel call: the node's prepared state, its working memory (its planned scratch tensor, or the
 * worker's unplanned buffer) and its OpenMP team go into the arguments; a node whose team is
 * larger than one takes that many of the executor's cores while it runs (af__exec_cores_take),
 * and the worker's OpenMP team size is set when it changes from one node to the next. The
 * scratch tensor is not an output for the kernel (n_outputs leaves it out: it is the node's last
 * output, af_kernels_lower puts it there) and it is never checksummed.
 *
 * Plan swap (replan_after_warmup, replan.c): s->prog is replaced under s->mu; each round holds a
 * reference on the program it started with, so in-flight rounds finish on the old plan.
 *
 * Lock rule: s->mu protects slots, the completed list, stats and s->prog; it is never held while
 * a kernel runs or while pushing tasks (rank 1 in executor_int.h).
 */
#include "executor/executor_int.h"

#include <string.h>

uint64_t af__round_sum(const af__round_t *r, int32_t t)
{
    return r->sum[t];
}

static inline void *tensor_ptr(const af__round_t *r, const af__prog_t *p, int32_t t)
{
    if (p->loc[t] == AF__LOC_ALIAS_DYN)
        return r->ptr[p->root[t]] ? (uint8_t *)r->ptr[p->root[t]] + p->off[t] : NULL;
    return r->ptr[t];
}

static inline uint64_t tensor_bytes(const af__round_t *r, const af__prog_t *p, int32_t t)
{
    switch (p->loc[t]) {
    case AF__LOC_DYN:
        return r->dbytes[t];
    case AF__LOC_ALIAS_DYN: {
        uint64_t rb = r->dbytes[p->root[t]];
        if (p->bytes[t])
            return p->bytes[t];
        return rb > p->off[t] ? rb - p->off[t] : 0;
    }
    default:
        return p->bytes[t];
    }
}

/* Node v is in the If branch this round does not take (guards.c): it is skipped. */
static inline int skipped(const af__round_t *r, const af__prog_t *p, int32_t v)
{
    if (!p->guard_t || v < 0 || p->guard_t[v] < 0)
        return 0;
    if (p->guard_br[v] == AF__GUARD_DEAD)
        return 1;
    const uint8_t *c = tensor_ptr(r, p, p->guard_t[v]);
    return c && (c[0] != 0) != p->guard_br[v];
}

/* A skipped node: its outputs get checksum 0 (their bytes are stale; nothing checks them: the
 * only readers are skipped too, or the If node, which ignores the branch not taken). */
static void skip_node(af__round_t *r, const af_node_info_t *ni, int32_t v)
{
    if (r->s->verify)
        for (int32_t k = 0; k < ni->n_outputs; k++)
            r->sum[ni->outputs[k]] = 0;
    if (r->s->history)
        r->seq[v] = atomic_fetch_add_explicit(&r->seq_ctr, 1, memory_order_relaxed) + 1;
}

static void mark_corrupt(af__round_t *r, int32_t t, int32_t node)
{
    atomic_fetch_add(&r->corrupted, 1);
    int zero = 0;
    if (atomic_compare_exchange_strong(&r->first_corrupt, &zero, t + 1))
        atomic_store(&r->first_corrupt_node, node);
    zero = 0;
    atomic_compare_exchange_strong(&r->status, &zero, AF_ECORRUPT);
}

static uint64_t dyn_size(af_session_t *s, int32_t t, uint64_t round)
{
    if (s->opts.dynamic_bytes)
        return s->opts.dynamic_bytes(s->opts.dynamic_user, t, round);
    return s->ex->opts.dynamic_default_bytes;
}

/* Allocates the node's dynamic outputs from the worker's pool cache (dynamic.c). */
static int alloc_dynamic(af__round_t *r, const af__prog_t *p, const af_node_info_t *ni)
{
    for (int32_t k = 0; k < ni->n_outputs; k++) {
        int32_t t = ni->outputs[k];
        if (p->loc[t] != AF__LOC_DYN || r->ptr[t])
            continue;
        uint64_t n = dyn_size(r->s, t, r->id);
        void *q = NULL;
        int rc = af__dyn_alloc(r->s->ex, n ? n : 1, &q);
        if (rc)
            return rc;
        r->ptr[t] = q;
        r->dbytes[t] = n;
        r->owned[t] = 1;
        atomic_fetch_add_explicit(&r->s->dyn_allocs, 1, memory_order_relaxed);
    }
    return 0;
}

static void fail_round(af__round_t *r, int rc, int32_t node)
{
    int zero = 0;
    if (atomic_compare_exchange_strong(&r->status, &zero, rc))
        atomic_store(&r->failed_node, node);
    atomic_store(&r->abort, 1);
}

static int overlaps_output(const void *p, uint64_t n, void *const *outp, const uint64_t *outb,
                           int32_t n_out)
{
    const uint8_t *a = p;
    for (int32_t k = 0; k < n_out; k++) {
        const uint8_t *b = outp[k];
        if (b && a < b + outb[k] && b < a + n)
            return 1;
    }
    return 0;
}

/*
 * Second read of the inputs, after the kernel: catches a writer that raced with the kernel
 * (bytes overwritten between the first check and the end of the read). Inputs the node itself
 * overwrote (in place) are skipped.
 */
static void recheck_inputs(af__round_t *r, const af_node_info_t *ni, const void **in,
                           const uint64_t *inb, const uint8_t *ok_in, void *const *outp,
                           const uint64_t *outb, int32_t n_out, int32_t v)
{
    for (int32_t i = 0; i < ni->n_inputs; i++) {
        int32_t t = ni->inputs[i];
        if (!ok_in[i] || !in[i] || overlaps_output(in[i], inb[i], outp, outb, n_out))
            continue;
        if (af__exec_checksum(in[i], inb[i]) != r->sum[t])
            mark_corrupt(r, t, v);
    }
}

/* Runs the kernel with the node's OpenMP team and, when teams are about, its cores. */
static int call_kernel(af__worker_t *w, const af__prog_t *p, const af_kernel_args_t *a)
{
    af_executor_t *ex = w->ex;
    int32_t team = a->team;
    if (p->backend && w->team != team) {
        ex->set->backend->set_team(team);
        w->team = team;
    }
    int cores = atomic_load_explicit(&ex->teams_live, memory_order_relaxed) > 0;
    if (cores)
        af__exec_cores_take(ex, team);
    int rc = p->post[a->node]
                 ? af__post_call(p->kfn[a->node], p->g, a->node, a, p->post[a->node],
                                 p->layout && a->n_outputs > 0 ? p->layout[a->info->outputs[0]]
                                                               : AF__LAYOUT_PLAIN)
                 : p->kfn[a->node](a);
    if (cores)
        af__exec_cores_give(ex, team);
    return rc;
}

void af__round_run_node(af__worker_t *w, af__round_t *r, int32_t v)
{
    af_session_t *s = r->s;
    const af__prog_t *p = r->prog;
    if (atomic_load_explicit(&r->abort, memory_order_relaxed))
        return;
    const af_node_info_t *ni = af_graph_node(p->g, v);
    if (p->guard_t && skipped(r, p, v)) {
        skip_node(r, ni, v);
        return;
    }
    size_t stride = af__session_sc_stride(s);
    const void **in = (const void **)s->sc_ptr + (size_t)w->id * stride;
    void **outp = s->sc_ptr + (size_t)w->id * stride + s->max_in;
    uint64_t *inb = s->sc_bytes + (size_t)w->id * stride;
    uint64_t *outb = inb + s->max_in;
    uint8_t *ok_in = s->sc_flags + (size_t)w->id * stride;
    int verify = s->verify;
    if (p->n_dyn && alloc_dynamic(r, p, ni)) {
        fail_round(r, AF_ENOMEM, v);
        return;
    }
    for (int32_t i = 0; i < ni->n_inputs; i++) {
        int32_t t = ni->inputs[i];
        in[i] = tensor_ptr(r, p, t);
        inb[i] = tensor_bytes(r, p, t);
        ok_in[i] = 1;
        if (p->guard_t && skipped(r, p, af_graph_tensor(p->g, t)->producer)) {
            in[i] = NULL; /* the If node's input from the branch not taken: no value */
            inb[i] = 0;
            ok_in[i] = 0;
        } else if (verify && in[i] && af__exec_checksum(in[i], inb[i]) != r->sum[t]) {
            mark_corrupt(r, t, v);
            ok_in[i] = 0;
        }
    }
    int32_t n_out = ni->n_outputs, st = p->scratch_t[v];
    n_out -= st >= 0;
    for (int32_t k = 0; k < n_out; k++) {
        int32_t t = ni->outputs[k];
        outp[k] = tensor_ptr(r, p, t);
        outb[k] = tensor_bytes(r, p, t);
    }
    af_kernel_args_t a = {
        .graph = p->g,
        .info = ni,
        .node = v,
        .worker = w->id,
        .round = r->id,
        .n_inputs = ni->n_inputs,
        .inputs = in,
        .input_bytes = inb,
        .n_outputs = n_out,
        .outputs = outp,
        .output_bytes = outb,
        .user = p->kuser[v],
        .priv = r,
        .state = p->kstate[v],
        .team = p->team[v],
        .scratch = NULL, /* every member named: no block clear (rep stos) on every node */
        .scratch_bytes = 0,
    };
    if (st >= 0 && p->scratch_need[v] <= p->bytes[st]) {
        a.scratch = r->ptr[st];
        a.scratch_bytes = p->bytes[st];
    } else if (p->scratch_need[v]) { /* not lowered, or lowered for other options */
        a.scratch = p->wscratch + (size_t)w->id * (size_t)p->unplanned_scratch;
        a.scratch_bytes = p->unplanned_scratch;
    }
    int rc = s->opts.observe ? s->opts.observe(s->opts.observe_user, &a) : 0;
    if (!rc)
        rc = call_kernel(w, p, &a);
    if (rc) {
        fail_round(r, rc, v);
        return;
    }
    if (verify) {
        for (int32_t k = 0; k < n_out; k++)
            if (outp[k])
                r->sum[ni->outputs[k]] = af__exec_checksum(outp[k], outb[k]);
        recheck_inputs(r, ni, in, inb, ok_in, outp, outb, n_out, v);
    }
    if (s->history)
        r->seq[v] = atomic_fetch_add_explicit(&r->seq_ctr, 1, memory_order_relaxed) + 1;
}

/* Every node of r in the plan order, as context w (inline and whole rounds). */
static void run_in_order(af__worker_t *w, af__round_t *r)
{
    const int32_t *order = af_plan_order(r->prog->plan);
    for (int32_t i = 0; i < r->prog->n_nodes; i++)
        af__round_run_node(w, r, order[i]);
}

/*
 * An inline round: every node on the calling thread, in the plan's order (which respects the
 * data and reuse edges the workers follow: af_plan_verify proves it; plans with If guards, whose
 * edges it need not respect, never run inline), so a plan runs the sequence it was planned for.
 * No counter is touched. The node runs in context s->inl[slot] (its own scratch pointers,
 * oneDNN stream and memory objects); the thread's OpenMP setting is made 1 for the round (every
 * node of an inline plan runs without a team) and given back after.
 */
void af__round_run_inline(af__round_t *r)
{
    af_session_t *s = r->s;
    const af__prog_t *p = r->prog;
    af__worker_t *w = &s->inl[r->slot];
    const af__backend_t *be = p->backend ? s->ex->set->backend : NULL;
    int32_t team0 = be ? be->get_team() : 1;
    w->team = team0;
    run_in_order(w, r);
    if (be && w->team != team0)
        be->set_team(team0);
    atomic_fetch_add_explicit(&s->ex->inline_tasks, (uint64_t)p->n_nodes, memory_order_relaxed);
}

void af__round_run_whole(af__worker_t *w, af__round_t *r)
{
    run_in_order(w, r);
    /* only this worker writes its counter: no locked add */
    uint64_t n = (uint64_t)r->prog->n_nodes;
    atomic_store_explicit(&w->tasks, atomic_load_explicit(&w->tasks, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Worker side of completion: final reads, copies, releases. Then hand over to the waiter. */
void af__round_complete(af__round_t *r, int32_t hint)
{
    af_session_t *s = r->s;
    const af__prog_t *p = r->prog;
    int aborted = atomic_load(&r->abort);
    for (int32_t k = 0; k < p->n_outputs; k++) {
        int32_t t = p->outputs[k];
        void *src = tensor_ptr(r, p, t);
        uint64_t n = tensor_bytes(r, p, t);
        if (aborted || (!src && n)) /* a tensor of no elements has no bytes to point at */
            continue;
        if (s->verify && af_graph_tensor(p->g, t)->producer >= 0 &&
            af__exec_checksum(src, n) != r->sum[t])
            mark_corrupt(r, t, -1);
        af_buffer_t *ob = r->out ? &r->out[k] : NULL;
        if ((!ob || !ob->data) && s->opts.keep_outputs)
            af__session_keep_output(s, k, src, n);
        if (ob && ob->data && ob->data != src) {
            uint64_t m = n < ob->bytes ? n : ob->bytes;
            if (m)
                memcpy(ob->data, src, (size_t)m);
            if (p->loc[t] == AF__LOC_DYN || p->loc[t] == AF__LOC_ALIAS_DYN)
                ob->bytes = n;
        }
    }
    af__session_round_done(s, r, hint);
}

/* Caller side of the start of a round: pointers, inputs, counters. */
int af__round_start(af__round_t *r, const af_buffer_t *inputs, af_buffer_t *outputs,
                    af_error_t *err)
{
    af_session_t *s = r->s;
    const af__prog_t *p = r->prog;
    int32_t nt = p->n_tensors;
    r->in = inputs;
    r->out = outputs;
    memset(r->owned, 0, (size_t)nt);
    memset(r->dbytes, 0, (size_t)nt * sizeof(uint64_t));
    if (s->verify)
        memset(r->sum, 0, (size_t)nt * sizeof(uint64_t));
    for (int32_t t = 0; t < nt; t++) {
        switch (p->loc[t]) {
        case AF__LOC_ARENA:
            r->ptr[t] = r->arena + p->off[t];
            break;
        case AF__LOC_CONST:
            r->ptr[t] = s->const_ptr[t];
            if (s->verify)
                r->sum[t] = s->const_sum[t];
            break;
        default:
            r->ptr[t] = NULL;
        }
        int32_t slot = p->slot_of[t];
        if (slot > -2 || p->loc[t] != AF__LOC_ARENA)
            continue; /* not a graph output, or no bytes of its own */
        const af_buffer_t *ob = outputs ? &outputs[-2 - slot] : NULL;
        if (ob && ob->data) {
            if (ob->bytes < p->bytes[t])
                return af__err(err, AF_EINVAL, "output buffer %d ('%s'): %llu bytes, needs %llu",
                               -2 - slot, af_graph_tensor(p->g, t)->name,
                               (unsigned long long)ob->bytes, (unsigned long long)p->bytes[t]);
            r->ptr[t] = ob->data; /* the producer writes straight into the caller's buffer */
        }
    }
    for (int32_t i = 0; i < p->n_inputs; i++) {
        int32_t t = p->inputs[i];
        const af_buffer_t *ib = inputs ? &inputs[i] : NULL;
        const char *name = af_graph_tensor(p->g, t)->name;
        if (p->loc[t] == AF__LOC_DYN) {
            if (ib && ib->data) {
                r->ptr[t] = ib->data;
                r->dbytes[t] = ib->bytes;
            } else {
                uint64_t n = dyn_size(s, t, r->id);
                int rc = af__dyn_alloc(s->ex, n ? n : 1, &r->ptr[t]);
                if (rc)
                    return af__err(err, rc, "dynamic input '%s': %s", name, af_strerror(rc));
                r->dbytes[t] = n;
                r->owned[t] = 1;
                af__exec_fill_tensor(p->g, t, r->ptr[t], n, af__exec_mix((uint64_t)t, r->id));
            }
        } else if (p->loc[t] == AF__LOC_ARENA) {
            if (ib && ib->data) {
                if (ib->bytes < p->bytes[t])
                    return af__err(err, AF_EINVAL, "input buffer %d ('%s'): %llu bytes, needs %llu",
                                   i, name, (unsigned long long)ib->bytes,
                                   (unsigned long long)p->bytes[t]);
                r->ptr[t] = ib->data; /* read in place: nobody writes a graph input */
            } else {
                af__exec_fill_tensor(p->g, t, r->ptr[t], p->bytes[t],
                                     af__exec_mix((uint64_t)t, r->id));
            }
        }
        if (s->verify && r->ptr[t])
            r->sum[t] = af__exec_checksum(r->ptr[t], tensor_bytes(r, p, t));
    }
    for (int32_t t = 0; t < nt; t++)
        if (p->loc[t] == AF__LOC_ALIAS)
            r->ptr[t] = r->ptr[p->root[t]] ? (uint8_t *)r->ptr[p->root[t]] + p->off[t] : NULL;
    for (int32_t v = 0; v < p->n_nodes; v++)
        atomic_store_explicit(&r->pending[v], p->init_pending[v], memory_order_relaxed);
    atomic_store_explicit(&r->remaining, p->n_sinks, memory_order_relaxed);
    atomic_store_explicit(&r->status, 0, memory_order_relaxed);
    atomic_store_explicit(&r->abort, 0, memory_order_relaxed);
    atomic_store_explicit(&r->corrupted, 0, memory_order_relaxed);
    atomic_store_explicit(&r->first_corrupt, 0, memory_order_relaxed);
    atomic_store_explicit(&r->first_corrupt_node, -1, memory_order_relaxed);
    atomic_store_explicit(&r->failed_node, -1, memory_order_relaxed);
    atomic_store_explicit(&r->seq_ctr, 0, memory_order_relaxed);
    return 0;
}

/* Frees the dynamic tensors a round took from the pool. Any thread. */
void af__round_release_dynamic(af__round_t *r)
{
    af_session_t *s = r->s;
    const af__prog_t *p = r->prog;
    if (p->n_dyn || p->n_inputs)
        for (int32_t t = 0; t < p->n_tensors; t++)
            if (r->owned[t]) {
                af__dyn_free(s->ex, r->ptr[t]);
                r->owned[t] = 0;
            }
}

/* Frees what a round took from the pool (arena and dynamic tensors). Any thread. */
void af__round_release(af__round_t *r)
{
    af_session_t *s = r->s;
    af__round_release_dynamic(r);
    if (r->arena) {
        af_pool_free(s->ex->pool, r->arena);
        r->arena = NULL;
    }
}

/* ---- prepared kernels ------------------------------------------------------------------- */

typedef struct const_src {
    const af_session_t *s;
    const af__prog_t *p; /* the program being prepared (a re-plan's is not s->prog yet) */
} const_src_t;

/* Constant data of tensor t for the kernels' prepare step. The constant layout of a re-planned
 * program is the session's (same graph, same constants). */
static const void *session_const(void *cu, int32_t t)
{
    const const_src_t *c = cu;
    const af__prog_t *p = c->p;
    if (t < 0 || t >= p->n_tensors || p->loc[t] != AF__LOC_CONST)
        return NULL;
    return c->s->const_ptr[t];
}

int af__session_prepare(af_session_t *s, af__prog_t *p, af_error_t *err)
{
    const_src_t c = {s, p};
    p->workers = s->n_ctx; /* the workers, and the inline rounds' contexts */
    return af__prog_prepare(p, s->ex, session_const, &c, err);
}

void af__session_consts_changed(af_session_t *s)
{
    af__prog_t *p = s->prog;
    if (!p->n_backend)
        return; /* no prepared state read the constants */
    af_error_t err;
    af_error_clear(&err);
    af__prog_unprepare(p);
    if (af__session_prepare(s, p, &err)) {
        /* Out of memory, most likely: the nodes are left without a state, their kernels fail
         * every round with AF_EINVAL (never a result computed from stale weights). */
        s->first_failed_status = err.code;
    }
}

const char *af_session_node_kernel(const af_session_t *s, int32_t node, int32_t *team)
{
    af_session_t *m = (af_session_t *)s;
    uv_mutex_lock(&m->mu);
    const af__prog_t *p = m->prog;
    const char *n = node >= 0 && node < p->n_nodes ? p->kname[node] : NULL;
    if (team && n)
        *team = p->team[node];
    uv_mutex_unlock(&m->mu);
    return n;
}

void af__session_kernel_stats(const af_session_t *s, af_session_stats_t *o)
{
    const af__prog_t *p = s->prog;
    o->scratch_bytes = p->planned_scratch;
    o->unplanned_scratch_bytes = p->unplanned_scratch * (uint64_t)p->workers;
    o->prepacked_bytes = p->prepacked_bytes;
    o->backend_nodes = p->n_backend;
    o->fallback_nodes = p->n_fallback;
    o->intra_op_threads = p->intra;
}
