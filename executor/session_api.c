/*
 * Public session calls: create/destroy, synchronous rounds, submitted rounds completed on the
 * caller's libuv loop, statistics, checksums and history of the last round.
 *
 * Slots: max_inflight round structures are allocated at creation with every per-round array
 * (pointers, checksums, pending counters), so running a round allocates nothing from the heap;
 * the arena comes from the pool (whose cached blocks make that free of OS calls after the first
 * rounds).
 *
 * Lock rule: s->mu (rank 1). A worker completing a round takes s->mu to publish it; the waiter
 * (af_session_run) or the loop callback (submit) returns the slot under s->mu. uv_async_send is
 * called with s->mu held so the session cannot be destroyed between publication and the send.
 */
#include "executor/executor_int.h"

#include <stdlib.h>
#include <string.h>

void af__session_slot_put(af_session_t *s, af__round_t *r)
{
    af__prog_release(r->prog);
    r->prog = NULL;
    s->free_slots[s->n_free++] = r->slot;
    uv_cond_broadcast(&s->cv);
}

/* Runs the callbacks of completed submitted rounds; loop thread. */
static void drain_done(af_session_t *s)
{
    uv_mutex_lock(&s->mu);
    af__round_t *r = s->done_head;
    s->done_head = s->done_tail = NULL;
    uv_mutex_unlock(&s->mu);
    while (r) {
        af__round_t *next = r->next_done;
        if (r->cb)
            r->cb(s, r->id, r->final_status, r->user);
        uv_mutex_lock(&s->mu);
        af__session_slot_put(s, r);
        uv_mutex_unlock(&s->mu);
        r = next;
    }
}

static void on_async(uv_async_t *h)
{
    drain_done((af_session_t *)h);
}

static void slots_free(af_session_t *s)
{
    for (int32_t i = 0; s->slots && i < s->n_slots; i++) {
        af__round_t *r = &s->slots[i];
        af__free(r->ptr);
        af__free(r->dbytes);
        af__free(r->sum);
        af__free(r->seq);
        af__free(r->owned);
        af__free(r->pending);
        af__free(r->roots);
    }
    af__free(s->slots);
    af__free(s->inl);
}

static void session_free(af_session_t *s)
{
    slots_free(s);
    af__free(s->free_slots);
    af__free(s->sc_ptr);
    af__free(s->sc_bytes);
    af__free(s->sc_flags);
    for (int32_t t = 0; s->const_own && s->prog && t < s->prog->n_tensors; t++)
        af__free(s->const_own[t]);
    af__free(s->const_own);
    af__free(s->const_ptr);
    af__free(s->consts);
    af__free(s->const_sum);
    af__free(s->last_sum);
    af__free(s->last_seq);
    af__free(s->dyn_max);
    for (int32_t k = 0; s->kept && s->prog && k < s->prog->n_outputs; k++)
        af__free(s->kept[k]);
    af__free(s->kept);
    af__free(s->kept_cap);
    af__free(s->kept_len);
    af__free(s->kept_valid);
    af__prog_release(s->prog);
    af__free(s);
}

static void on_close(uv_handle_t *h)
{
    session_free((af_session_t *)h);
}

static uint64_t pool_os_calls(af_pool_t *pool)
{
    static __thread af_pool_stats_t st; /* large: keep it off the stack */
    af_pool_stats(pool, &st);
    return st.os_maps + st.os_unmaps + st.os_madvise;
}

static int alloc_slots(af_session_t *s, const af__prog_t *p)
{
    size_t nt = (size_t)p->n_tensors + 1, nn = (size_t)p->n_nodes + 1;
    s->n_slots = s->ex->opts.max_inflight;
    s->slots = af__calloc((size_t)s->n_slots, sizeof(*s->slots));
    s->free_slots = af__malloc((size_t)s->n_slots * sizeof(int32_t));
    if (!s->slots || !s->free_slots)
        return AF_ENOMEM;
    for (int32_t i = 0; i < s->n_slots; i++) {
        af__round_t *r = &s->slots[i];
        r->s = s;
        r->slot = i;
        r->ptr = af__calloc(nt, sizeof(void *));
        r->dbytes = af__calloc(nt, sizeof(uint64_t));
        r->sum = af__calloc(nt, sizeof(uint64_t));
        r->seq = af__calloc(nn, sizeof(uint64_t));
        r->owned = af__calloc(nt, 1);
        r->pending = af__calloc(nn, sizeof(atomic_int));
        r->roots = af__malloc(nn * sizeof(af__task_t));
        if (!r->ptr || !r->dbytes || !r->sum || !r->seq || !r->owned || !r->pending || !r->roots)
            return AF_ENOMEM;
        s->free_slots[s->n_free++] = s->n_slots - 1 - i;
    }
    if (!s->inline_ok)
        return 0;
    /* the contexts inline rounds run nodes in: one per slot, ids after the workers' */
    if (!(s->inl = af__calloc((size_t)s->n_slots, sizeof(*s->inl))))
        return AF_ENOMEM;
    for (int32_t i = 0; i < s->n_slots; i++) {
        s->inl[i].ex = s->ex;
        s->inl[i].id = s->ex->n + i;
        s->inl[i].team = -1;
    }
    return 0;
}

/* The program rounds start with; s->prog changes under s->mu when a re-plan is swapped in
 * (graph inputs and outputs stay the same: the re-planned graph is a copy). */
static const af__prog_t *cur_prog(const af_session_t *s)
{
    af_session_t *m = (af_session_t *)s;
    uv_mutex_lock(&m->mu);
    const af__prog_t *p = m->prog;
    uv_mutex_unlock(&m->mu);
    return p;
}

void af__session_const_sums(af_session_t *s, const af__prog_t *p)
{
    if (!s->verify)
        return; /* only verify kernels compare checksums; weights are not read for nothing */
    for (int32_t t = 0; t < p->n_tensors; t++)
        if (p->loc[t] == AF__LOC_CONST)
            s->const_sum[t] = af__exec_checksum(s->const_ptr[t], p->bytes[t]);
}

void *af_session_constant(af_session_t *s, int32_t tensor, uint64_t *bytes)
{
    if (!s)
        return NULL;
    const af__prog_t *p = cur_prog(s);
    if (tensor < 0 || tensor >= p->n_tensors || p->loc[tensor] != AF__LOC_CONST)
        return NULL;
    uv_mutex_lock(&s->mu);
    uint8_t *ptr = s->const_ptr[tensor];
    const void *shared = af_graph_tensor(p->g, tensor)->data;
    if (shared && ptr == shared) { /* the graph's read-only bytes: this session gets a copy */
        uint8_t *own = af__malloc(p->bytes[tensor] ? (size_t)p->bytes[tensor] : 1);
        if (!own) {
            uv_mutex_unlock(&s->mu);
            return NULL;
        }
        memcpy(own, shared, (size_t)p->bytes[tensor]);
        s->const_own[tensor] = own;
        s->const_ptr[tensor] = ptr = own;
    }
    s->consts_dirty = 1;
    uv_mutex_unlock(&s->mu);
    if (bytes)
        *bytes = p->bytes[tensor];
    return ptr;
}

/*
 * Constant storage. A constant the graph carries data for (ONNX weights, a JSON graph's
 * weights file) is read where the graph keeps it: zero-copy, read-only, shared by every
 * session on the graph. The others get session storage filled once with a per-tensor
 * deterministic pattern.
 */
static int alloc_consts(af_session_t *s, const af__prog_t *p)
{
    size_t nt = (size_t)p->n_tensors + 1;
    s->const_sum = af__calloc(nt, sizeof(uint64_t));
    s->const_ptr = af__calloc(nt, sizeof(uint8_t *));
    s->const_own = af__calloc(nt, sizeof(uint8_t *));
    uint64_t own = 0;
    for (int32_t t = 0; t < p->n_tensors; t++)
        if (p->loc[t] == AF__LOC_CONST && !af_graph_tensor(p->g, t)->data)
            own = af__align_up(own + p->bytes[t], 64);
    s->consts = af__calloc(1, own ? (size_t)own : 1);
    if (!s->consts || !s->const_sum || !s->const_ptr || !s->const_own)
        return AF_ENOMEM;
    own = 0;
    for (int32_t t = 0; t < p->n_tensors; t++) {
        const void *data = af_graph_tensor(p->g, t)->data;
        if (p->loc[t] != AF__LOC_CONST)
            continue;
        if (data) {
            s->const_ptr[t] = (uint8_t *)data; /* kernels only read constants */
            continue;
        }
        s->const_ptr[t] = s->consts + own;
        af__exec_fill_tensor(p->g, t, s->const_ptr[t], p->bytes[t],
                             af__exec_mix(0xc0457, (uint64_t)t));
        own = af__align_up(own + p->bytes[t], 64);
    }
    af__session_const_sums(s, p);
    return 0;
}

/* Storage for kept outputs: the planned size of each (dynamic ones grow on first use). */
static int alloc_kept(af_session_t *s, const af__prog_t *p)
{
    if (!s->opts.keep_outputs)
        return 0;
    size_t n = (size_t)p->n_outputs + 1;
    s->kept = af__calloc(n, sizeof(void *));
    s->kept_cap = af__calloc(n, sizeof(uint64_t));
    s->kept_len = af__calloc(n, sizeof(uint64_t));
    s->kept_valid = af__calloc(n, 1);
    if (!s->kept || !s->kept_cap || !s->kept_len || !s->kept_valid)
        return AF_ENOMEM;
    for (int32_t k = 0; k < p->n_outputs; k++) {
        uint64_t b = p->bytes[p->outputs[k]];
        if (!(s->kept[k] = af__malloc(b ? (size_t)b : 1)))
            return AF_ENOMEM;
        s->kept_cap[k] = b;
    }
    return 0;
}

void af__session_keep_output(af_session_t *s, int32_t k, const void *src, uint64_t n)
{
    uv_mutex_lock(&s->mu);
    if (n > s->kept_cap[k]) {
        void *q = af__realloc(s->kept[k], (size_t)n);
        if (!q) {
            s->kept_valid[k] = 0;
            uv_mutex_unlock(&s->mu);
            return;
        }
        s->kept[k] = q;
        s->kept_cap[k] = n;
    }
    if (n)
        memcpy(s->kept[k], src, (size_t)n);
    s->kept_len[k] = n;
    s->kept_valid[k] = 1;
    uv_mutex_unlock(&s->mu);
}

int af_session_create(af_executor_t *ex, const af_plan_t *plan, const af_session_opts_t *opts,
                      af_session_t **out, af_error_t *err)
{
    if (!ex || !plan || !out)
        return af__err(err, AF_EINVAL, "af_session_create: NULL argument");
    af_session_t *s = af__calloc(1, sizeof(*s));
    if (!s)
        return af__err(err, AF_ENOMEM, "out of memory creating a session");
    if (opts)
        s->opts = *opts;
    s->replan_opts = opts && opts->replan_opts ? *opts->replan_opts : *af_plan_opts(plan);
    s->opts.replan_opts = &s->replan_opts;
    s->ex = ex;
    s->verify = ex->verify;
    s->history = ex->opts.history;
    s->first_corrupt_tensor = s->first_corrupt_node = s->first_failed_node = -1;
    int rc = af__prog_create(ex, plan, &s->prog, err);
    if (rc) {
        af__free(s);
        return rc;
    }
    const af__prog_t *p = s->prog;
    s->max_in = p->max_in;
    s->max_out = p->max_out;
    size_t per = af__session_sc_stride(s);
    s->inline_ok = af__kernel_inline_ok(ex, p);
    af__batch_modes(p, &s->batch_serial, &s->batch_whole);
    s->n_ctx = ex->n + (s->inline_ok ? ex->opts.max_inflight : 0);
    s->sc_ptr = af__calloc(per * (size_t)s->n_ctx, sizeof(void *));
    s->sc_bytes = af__calloc(per * (size_t)s->n_ctx, sizeof(uint64_t));
    s->sc_flags = af__calloc(per * (size_t)s->n_ctx, 1);
    s->last_sum = af__calloc((size_t)p->n_tensors + 1, sizeof(uint64_t));
    s->last_seq = af__calloc((size_t)p->n_nodes + 1, sizeof(uint64_t));
    s->dyn_max = af__calloc((size_t)p->n_tensors + 1, sizeof(uint64_t));
    if (!s->sc_ptr || !s->sc_bytes || !s->sc_flags || !s->last_sum || !s->last_seq || !s->dyn_max ||
        alloc_slots(s, p) || alloc_consts(s, p) || alloc_kept(s, p)) {
        rc = af__err(err, AF_ENOMEM, "out of memory creating a session");
        goto fail;
    }
    if ((rc = af__session_prepare(s, s->prog, err)))
        goto fail;
    if ((rc = uv_mutex_init(&s->mu))) {
        af__err(err, rc, "uv_mutex_init: %s", af_strerror(rc));
        goto fail;
    }
    if ((rc = uv_cond_init(&s->cv))) {
        af__err(err, rc, "uv_cond_init: %s", af_strerror(rc));
        goto fail_mu;
    }
    if (s->opts.loop) {
        if ((rc = uv_async_init(s->opts.loop, &s->async, on_async))) {
            af__err(err, rc, "uv_async_init: %s", af_strerror(rc));
            goto fail_cv;
        }
        s->has_async = 1;
    }
    /* Every node of every round in flight could sit in one deque; capped for huge graphs. */
    size_t backlog = (size_t)p->n_nodes * (size_t)s->n_slots;
    af__exec_reserve(ex, backlog < 65536 ? backlog : 65536);
    s->pool_os0 = pool_os_calls(ex->pool);
    *out = s;
    return 0;
fail_cv:
    uv_cond_destroy(&s->cv);
fail_mu:
    uv_mutex_destroy(&s->mu);
fail:
    session_free(s);
    return rc;
}

void af_session_destroy(af_session_t *s)
{
    if (!s)
        return;
    uv_mutex_lock(&s->mu);
    while (s->running > 0)
        uv_cond_wait(&s->cv, &s->mu);
    uv_mutex_unlock(&s->mu);
    drain_done(s); /* callbacks of rounds the loop has not delivered yet */
    uv_cond_destroy(&s->cv);
    uv_mutex_destroy(&s->mu);
    if (s->has_async)
        uv_close((uv_handle_t *)&s->async, on_close);
    else
        session_free(s);
}

int32_t af_session_inflight(const af_session_t *s)
{
    af_session_t *m = (af_session_t *)s;
    uv_mutex_lock(&m->mu);
    int32_t n = m->n_slots - m->n_free;
    uv_mutex_unlock(&m->mu);
    return n;
}

int32_t af_session_input_count(const af_session_t *s)
{
    return cur_prog(s)->n_inputs;
}
int32_t af_session_output_count(const af_session_t *s)
{
    return cur_prog(s)->n_outputs;
}
int32_t af_session_input_tensor(const af_session_t *s, int32_t i)
{
    const af__prog_t *p = cur_prog(s);
    return i >= 0 && i < p->n_inputs ? p->inputs[i] : -1;
}
int32_t af_session_output_tensor(const af_session_t *s, int32_t i)
{
    const af__prog_t *p = cur_prog(s);
    return i >= 0 && i < p->n_outputs ? p->outputs[i] : -1;
}

int af_session_io_info(const af_session_t *s, int output, int32_t i, af_io_info_t *out)
{
    if (!s || !out)
        return AF_EINVAL;
    const af__prog_t *p = cur_prog(s);
    if (i < 0 || i >= (output ? p->n_outputs : p->n_inputs))
        return AF_EINVAL;
    int32_t t = output ? p->outputs[i] : p->inputs[i];
    const af_tensor_info_t *ti = af_graph_tensor(p->g, t);
    int dyn = p->loc[t] == AF__LOC_DYN || p->loc[t] == AF__LOC_ALIAS_DYN || ti->bytes < 0;
    *out = (af_io_info_t){.name = ti->name,
                          .tensor = t,
                          .dtype = ti->dtype,
                          .rank = ti->rank,
                          .shape = ti->shape,
                          .bytes = dyn ? 0 : p->bytes[t],
                          .dynamic = dyn};
    return 0;
}

static int32_t find_io(const af_session_t *s, int output, const char *name)
{
    const af__prog_t *p = cur_prog(s);
    int32_t t = name ? af_graph_find_tensor(p->g, name) : -1;
    if (t < 0)
        return -1;
    int32_t slot = p->slot_of[t];
    if (output)
        return slot <= -2 ? -2 - slot : -1;
    return slot >= 0 ? slot : -1;
}

int32_t af_session_find_input(const af_session_t *s, const char *name)
{
    return s ? find_io(s, 0, name) : -1;
}

int32_t af_session_find_output(const af_session_t *s, const char *name)
{
    return s ? find_io(s, 1, name) : -1;
}

const void *af_session_output_data(const af_session_t *s, int32_t i, uint64_t *bytes)
{
    af_session_t *m = (af_session_t *)s;
    if (!s || !s->kept || i < 0 || i >= af_session_output_count(s))
        return NULL;
    uv_mutex_lock(&m->mu);
    const void *d = m->kept_valid[i] ? m->kept[i] : NULL;
    if (bytes)
        *bytes = d ? m->kept_len[i] : 0;
    uv_mutex_unlock(&m->mu);
    return d;
}

int af_session_read_output(const af_session_t *s, int32_t i, void *dst, uint64_t cap,
                           uint64_t *bytes)
{
    af_session_t *m = (af_session_t *)s;
    if (!s || (!dst && cap))
        return AF_EINVAL;
    if (!s->kept || i < 0 || i >= af_session_output_count(s))
        return AF_ENOENT;
    int rc = 0;
    uv_mutex_lock(&m->mu);
    if (!m->kept_valid[i])
        rc = AF_ENOENT;
    else if (bytes)
        *bytes = m->kept_len[i];
    if (!rc && m->kept_len[i] > cap)
        rc = AF_EINVAL;
    if (!rc && m->kept_len[i])
        memcpy(dst, m->kept[i], (size_t)m->kept_len[i]);
    uv_mutex_unlock(&m->mu);
    return rc;
}

const af_plan_t *af_session_plan(const af_session_t *s)
{
    af_session_t *m = (af_session_t *)s;
    uv_mutex_lock(&m->mu);
    const af_plan_t *p = m->prog->plan;
    uv_mutex_unlock(&m->mu);
    return p;
}

void af_session_stats(const af_session_t *s, af_session_stats_t *o)
{
    af_session_t *m = (af_session_t *)s;
    memset(o, 0, sizeof(*o));
    uint64_t os = pool_os_calls(m->ex->pool);
    uv_mutex_lock(&m->mu);
    o->rounds = m->rounds;
    o->failed_rounds = m->failed_rounds;
    o->corrupted_tensors = m->corrupted;
    o->nodes_run = m->nodes_run;
    o->plan_swaps = m->plan_swaps;
    o->arena_bytes =
        af_plan_arena_bytes(m->prog->plan); /* the round block also holds the host tier */
    o->first_corrupt_tensor = m->first_corrupt_tensor;
    o->first_corrupt_node = m->first_corrupt_node;
    o->first_failed_node = m->first_failed_node;
    o->first_failed_status = m->first_failed_status;
    o->pool_os_calls = os - m->pool_os0;
    af__session_kernel_stats(m, o);
    uv_mutex_unlock(&m->mu);
    o->dynamic_allocs = atomic_load(&m->dyn_allocs);
}

int af_session_checksums(const af_session_t *s, uint64_t *out, int32_t n)
{
    af_session_t *m = (af_session_t *)s;
    if (!out || n < m->prog->n_tensors)
        return AF_EINVAL;
    uv_mutex_lock(&m->mu);
    memcpy(out, m->last_sum, (size_t)m->prog->n_tensors * sizeof(uint64_t));
    uv_mutex_unlock(&m->mu);
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    const af_history_entry_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int af_session_history(const af_session_t *s, af_history_entry_t *out, int32_t max)
{
    af_session_t *m = (af_session_t *)s;
    if (!m->history || (!out && max))
        return AF_EINVAL;
    int32_t k = 0;
    uv_mutex_lock(&m->mu);
    const af__prog_t *p = m->prog;
    for (int32_t t = 0; t < p->n_tensors && k < max; t++) {
        int32_t prod = af_graph_tensor(p->g, t)->producer;
        if (p->loc[t] != AF__LOC_ARENA || prod < 0 || !m->last_seq[prod])
            continue;
        out[k++] = (af_history_entry_t){t, prod, m->last_seq[prod]};
    }
    uv_mutex_unlock(&m->mu);
    qsort(out, (size_t)k, sizeof(*out), by_seq); /* in the order the bytes were written */
    return k;
}
