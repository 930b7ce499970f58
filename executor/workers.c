/*
 * The worker pool: threads created with libuv's thread API and owned by the executor.
 *
 * Algorithm: every worker has a deque of ready tasks (round, node). A worker pops from the tail
 * of its own deque, and when that is empty steals from the head of another worker's deque
 * (victims tried in a pseudo-random rotation). Running a task releases the node's successors;
 * the first successor that becomes ready is run by the same worker right away (no queue trip),
 * the others are pushed onto its deque. A worker that finds no task spins briefly and then
 * sleeps on the executor's condition variable.
 *
 * Invariants: a deque's `avail` equals its count (written under its mutex), so an idle worker
 * looks for work with plain loads of the deques' own cache lines: no shared counter is written
 * per task (a global one, read-modify-written by both workers on every push and pop, cost more
 * than an empty node at 2 threads). A pusher stores `avail` and then reads `sleepers`, both
 * seq_cst, signalling under `mu` when it is > 0; a would-be sleeper increments `sleepers`
 * (seq_cst) under `mu` before re-reading every `avail` (seq_cst): in the single order of seq_cst
 * operations one of the two comes first and is seen by the other, so a wake-up cannot be lost.
 *
 * Lock rule: one deque mutex at a time; `mu` only around sleeping and signalling; never a lock
 * while a kernel runs (ranks in executor_int.h).
 */
#include "executor/executor_int.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A spin-wait hint: the idle worker's loads leave the busy worker's deque line alone a while. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- deques ----------------------------------------------------------------------------- */

/* Caller holds d->mu. Grows the ring; the only allocation on the scheduling path, and it only
 * happens until the deque has seen its largest backlog. */
static int deque_reserve(af__deque_t *d, size_t need)
{
    if (need <= d->cap)
        return 0;
    size_t cap = d->cap ? d->cap : 64;
    while (cap < need)
        cap *= 2;
    af__task_t *nb = af__malloc(cap * sizeof(*nb));
    if (!nb)
        return AF_ENOMEM;
    for (size_t i = 0; i < d->count; i++)
        nb[i] = d->buf[(d->head + i) % d->cap];
    af__free(d->buf);
    d->buf = nb;
    d->cap = cap;
    d->head = 0;
    return 0;
}

static inline size_t deque_avail(af__deque_t *d)
{
    return atomic_load_explicit(&d->avail, memory_order_relaxed);
}

/* Caller holds d->mu: publishes the count to idle workers. */
static inline void deque_publish(af__deque_t *d)
{
    atomic_store_explicit(&d->avail, d->count, memory_order_relaxed);
}

/* The same after adding tasks, seq_cst: the pusher's side of the wake-up protocol (this store,
 * then wake_sleepers' load of `sleepers`, against the sleeper's increment, then its loads). */
static inline void deque_publish_added(af__deque_t *d)
{
    atomic_store(&d->avail, d->count);
}

#define PRIV_MAX ((int)(sizeof(((af__worker_t *)0)->priv) / sizeof(af__task_t)))

/* Pops the newest task of w's own deque. From a long deque (at least 4 times what it takes, so
 * thieves keep plenty) it also moves up to PRIV_MAX more into w's private stack under the same
 * lock: a wide fan-out then costs one lock per PRIV_MAX + 1 tasks instead of one per task.
 * run_chain empties the private stack before it returns, so those tasks are never stranded. */
static int deque_pop_tail(af__worker_t *w, af__task_t *t)
{
    af__deque_t *d = &w->dq;
    int ok = 0;
    if (!deque_avail(d)) /* a stale 0 only delays the task: sleeping re-reads with seq_cst */
        return 0;
    uv_mutex_lock(&d->mu);
    if (d->count) {
        d->count--;
        *t = d->buf[(d->head + d->count) % d->cap];
        size_t room = (size_t)(PRIV_MAX - w->npriv);
        if (d->count >= 4 * room)
            for (size_t i = 0; i < room; i++) {
                d->count--;
                w->priv[w->npriv++] = d->buf[(d->head + d->count) % d->cap];
            }
        deque_publish(d);
        ok = 1;
    }
    uv_mutex_unlock(&d->mu);
    return ok;
}

/* Some deque holds a task (seq_cst loads: the sleeper's side of the wake-up protocol). */
static int any_avail(af_executor_t *ex)
{
    for (int32_t i = 0; i < ex->n; i++)
        if (atomic_load(&ex->workers[i].dq.avail))
            return 1;
    return 0;
}

/* The pusher's side: tasks were just published (deque_publish_added); wake sleepers (all when
 * n > 1). */
static void wake_sleepers(af_executor_t *ex, size_t n)
{
    if (atomic_load(&ex->sleepers) > 0) {
        uv_mutex_lock(&ex->mu);
        if (n > 1)
            uv_cond_broadcast(&ex->cv);
        else
            uv_cond_signal(&ex->cv);
        uv_mutex_unlock(&ex->mu);
    }
}

void af__exec_reserve(af_executor_t *ex, size_t tasks)
{
    for (int32_t i = 0; i < ex->n; i++) {
        af__deque_t *d = &ex->workers[i].dq;
        uv_mutex_lock(&d->mu);
        (void)deque_reserve(d, tasks); /* best effort: pushes grow the deque if this failed */
        uv_mutex_unlock(&d->mu);
    }
}

int af__exec_push(af_executor_t *ex, int32_t hint, const af__task_t *t, size_t n)
{
    if (n == 0)
        return 0;
    if (hint < 0 || hint >= ex->n)
        hint = (int32_t)(atomic_fetch_add_explicit(&ex->rr, 1, memory_order_relaxed) %
                         (unsigned)ex->n);
    af__deque_t *d = &ex->workers[hint].dq;
    uv_mutex_lock(&d->mu);
    int rc = deque_reserve(d, d->count + n);
    if (rc) {
        uv_mutex_unlock(&d->mu);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        d->buf[(d->head + d->count + i) % d->cap] = t[i];
    d->count += n;
    deque_publish_added(d);
    uv_mutex_unlock(&d->mu);
    wake_sleepers(ex, n);
    return 0;
}

/* Steals the older half of a victim's deque (at most STEAL_MAX): one lock per batch instead of
 * one per task. The first stolen task is returned; the others go to the thief's own deque (and
 * sleepers are woken for them, as for a push). */
#define STEAL_MAX 32
static int steal_half(af__worker_t *w, af__deque_t *d, af__task_t *t)
{
    af__task_t got[STEAL_MAX];
    size_t k = 0;
    uv_mutex_lock(&d->mu);
    if (d->count) {
        k = (d->count + 1) / 2;
        if (k > STEAL_MAX)
            k = STEAL_MAX;
        for (size_t i = 0; i < k; i++)
            got[i] = d->buf[(d->head + i) % d->cap];
        d->head = (d->head + k) % d->cap;
        d->count -= k;
        deque_publish(d);
    }
    uv_mutex_unlock(&d->mu);
    if (!k)
        return 0;
    *t = got[0];
    if (k > 1) {
        af__deque_t *own = &w->dq;
        uv_mutex_lock(&own->mu);
        if (deque_reserve(own, own->count + k - 1) == 0) {
            for (size_t i = 1; i < k; i++)
                own->buf[(own->head + own->count + i - 1) % own->cap] = got[i];
            own->count += k - 1;
            deque_publish_added(own);
            k = 1;
        }
        uv_mutex_unlock(&own->mu);
        if (k == 1)
            wake_sleepers(w->ex, 2);
        if (k > 1) { /* no memory to hold them: give them back to the victim's head */
            uv_mutex_lock(&d->mu);
            if (deque_reserve(d, d->count + k - 1) == 0) {
                for (size_t i = k - 1; i >= 1; i--) {
                    d->head = (d->head + d->cap - 1) % d->cap;
                    d->buf[d->head] = got[i];
                }
                d->count += k - 1;
                deque_publish(d);
            }
            uv_mutex_unlock(&d->mu);
        }
    }
    return 1;
}

static int find_task(af__worker_t *w, af__task_t *t)
{
    af_executor_t *ex = w->ex;
    if (deque_pop_tail(w, t))
        return 1;
    w->rng = w->rng * 1103515245u + 12345u;
    int32_t start = (int32_t)((w->rng >> 8) % (uint32_t)ex->n);
    for (int32_t i = 0; i < ex->n; i++) {
        int32_t v = (start + i) % ex->n;
        if (v != w->id && deque_avail(&ex->workers[v].dq) && steal_half(w, &ex->workers[v].dq, t)) {
            atomic_fetch_add_explicit(&w->steals, 1, memory_order_relaxed);
            return 1;
        }
    }
    return 0;
}

static void run_chain(af__worker_t *w, af__task_t t);

/* The task a worker runs next without looking at a deque: the first of the batch round a
 * completion just started (its hand-over task), else the top of its private stack. */
static inline int next_task(af__worker_t *w, af__task_t *t)
{
    if (w->has_hand) {
        w->has_hand = 0;
        *t = w->hand;
        return 1;
    }
    if (w->npriv == 0)
        return 0;
    *t = w->priv[--w->npriv];
    return 1;
}

/* Runs t now on this worker (when there is no memory to queue it). The batch buffer is set
 * aside so the nested run cannot overwrite entries the caller still has to handle. */
static void run_inline(af__worker_t *w, af__task_t t)
{
    af__task_t *keep = w->rbuf;
    size_t cap = w->rcap;
    w->rbuf = NULL;
    w->rcap = 0;
    run_chain(w, t);
    af__free(w->rbuf);
    w->rbuf = keep;
    w->rcap = cap;
}

/* Decrements a round counter, returning its old value. With one worker only that worker ever
 * decrements (the caller sets the counters before the round's first push, under a deque lock):
 * a plain load and store then do, without the locked instruction that costs as much as an
 * empty node. With several, a counter that already reads 1 is ours alone: every other
 * decrement of this round has happened (each predecessor decrements once), and the acquire load
 * of the value the last of them wrote (acq_rel) orders their writes before our reads, as the
 * locked decrement would. Nothing reads the counter again before the next round resets it, so
 * the last decrement is skipped: the second predecessor of a two-input node, the common case,
 * pays no locked instruction and needs the line only shared. Only worth it (`peek`) for
 * counters starting at 2: on a join of many inputs the load nearly never reads 1 and would only
 * add a second transfer of a contended line before the locked decrement. */
static inline int count_down(atomic_int *c, int solo, int peek)
{
    if (solo) {
        int v = atomic_load_explicit(c, memory_order_relaxed);
        atomic_store_explicit(c, v - 1, memory_order_relaxed);
        return v;
    }
    if (peek && atomic_load_explicit(c, memory_order_acquire) == 1)
        return 1;
    return atomic_fetch_sub_explicit(c, 1, memory_order_acq_rel);
}

/*
 * Runs a task and then, as long as it makes one ready, the successor it released. The other
 * successors it makes ready are pushed in one batch (one lock, one wake-up) — or, while every
 * other worker sleeps or its own deque still holds work for thieves, up to PRIV_MAX of them are
 * kept in the worker's private stack (no lock, no shared counter); the chain ends only when that
 * stack is empty, so a private task is never stranded. A whole-round task (AF__TASK_ROUND, a
 * small batch round) runs every node of its round in plan order and completes it.
 *
 * Per node the only atomic read-modify-writes (none with one worker: count_down) are the pending
 * counters of successors with several predecessors (a successor with one is ready as soon as this
 * node is done) and, for a sink, the round's remaining counter. Why counting sinks is enough: every
 * node is an ancestor of a sink, and a sink runs only after all its ancestors have released their
 * successors. Why r stays valid after the last decrement: a successor this node has not released
 * yet cannot have run, nor can any sink below it, so the round is not over while this node still
 * has counters to decrement; afterwards it touches only tasks it holds (nodes that have not run).
 */
static void run_chain(af__worker_t *w, af__task_t t)
{
    af_executor_t *ex = w->ex;
    int solo = ex->n == 1;
    for (;;) {
        af__round_t *r = t.r;
        const af__prog_t *p = r->prog;
        if (t.node == AF__TASK_ROUND) { /* a whole round, in plan order: no counter touched */
            af__round_run_whole(w, r);
            af__round_complete(r, w->id);
            if (!next_task(w, &t))
                return;
            continue;
        }
        af__round_run_node(w, r, t.node);
        /* only this worker writes its counter: no locked add */
        atomic_store_explicit(&w->tasks, atomic_load_explicit(&w->tasks, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        int32_t next = -1;
        size_t nready = 0;
        int32_t lo = p->succ_off[t.node], hi = p->succ_off[t.node + 1];
        if (lo == hi) {
            if (count_down(&r->remaining, solo, 0) == 1)
                af__round_complete(r, w->id); /* r may be reused from here on */
            if (!next_task(w, &t))
                return;
            continue;
        }
        for (int32_t i = lo; i < hi; i++) {
            int32_t s = p->succ[i];
            int32_t ip = p->init_pending[s];
            if (ip != 1 && count_down(&r->pending[s], solo, ip == 2) != 1)
                continue;
            if (next < 0) {
                next = s;
                continue;
            }
            if (w->npriv < PRIV_MAX &&
                (deque_avail(&w->dq) > 0 ||
                 atomic_load_explicit(&ex->sleepers, memory_order_relaxed) >= ex->n - 1)) {
                w->priv[w->npriv++] = (af__task_t){r, s};
                continue;
            }
            if (nready == w->rcap &&
                af__grow((void **)&w->rbuf, &w->rcap, nready + 1, sizeof(*w->rbuf))) {
                run_inline(w, (af__task_t){r, s}); /* no memory to queue it: run it now */
                continue;
            }
            w->rbuf[nready++] = (af__task_t){r, s};
        }
        if (nready && af__exec_push(ex, w->id, w->rbuf, nready))
            for (size_t i = 0; i < nready; i++) /* unrun nodes: r stays valid */
                run_inline(w, w->rbuf[i]);
        if (next >= 0)
            t.node = next;
        else if (!next_task(w, &t))
            return;
    }
}

/* Set on every worker thread: af_session_run there queues its round instead of running it
 * inline (the worker's own deque and scratch are in use). */
static _Thread_local int tls_is_worker;

int af__exec_on_worker(void)
{
    return tls_is_worker;
}

static void worker_main(void *arg)
{
    af__worker_t *w = arg;
    af_executor_t *ex = w->ex;
    af__task_t t;
    tls_is_worker = 1;
    af__dyn_bind(w);
    if (ex->set && ex->set->backend) {
        /* libgomp allocates a thread's settings the first time they are set: now, not in a
         * round (0 allocations per round, even on the first node this worker runs). */
        ex->set->backend->set_team(1);
        w->team = 1;
    }
    atomic_fetch_add_explicit(&ex->ready, 1, memory_order_release);
    for (;;) {
        int spins = 0;
        while (!find_task(w, &t)) {
            if (atomic_load(&ex->stop))
                return;
            if (++spins < 64) {
                cpu_relax();
                continue;
            }
            if (spins < 64 + 32) { /* then yield a little: a wake-up costs a futex call */
                sched_yield();
                continue;
            }
            uv_mutex_lock(&ex->mu);
            atomic_fetch_add(&ex->sleepers, 1);
            while (!any_avail(ex) && !atomic_load(&ex->stop))
                uv_cond_wait(&ex->cv, &ex->mu);
            atomic_fetch_sub(&ex->sleepers, 1);
            uv_mutex_unlock(&ex->mu);
            spins = 0;
        }
        run_chain(w, t);
    }
}

/* ---- executor lifecycle ----------------------------------------------------------------- */

int32_t af__exec_cpu_count(void)
{
    uv_cpu_info_t *info;
    int n = 0;
    if (uv_cpu_info(&info, &n) == 0) {
        uv_free_cpu_info(info, n);
        return n > 0 ? n : 1;
    }
    return 1;
}

/* The kernel set exists in this build and the numbers are in range. */
static int check_opts(af_executor_opts_t *o, af_error_t *err)
{
    int rc = af_executor_opts_set(o, "kernels", o->kernels, err); /* to its static name */
    if (rc)
        return rc;
    if (o->threads < 0 || o->max_inflight < 1 || o->replan_after_warmup < 0 ||
        o->intra_op_threads < 0)
        return af__err(err, AF_EINVAL, "executor options out of range");
    return 0;
}

/* Initialises every worker's deque and release buffer; ex->started counts those done. */
static int init_workers(af_executor_t *ex)
{
    for (int32_t i = 0; i < ex->n; i++) {
        af__worker_t *w = &ex->workers[i];
        w->ex = ex;
        w->id = i;
        w->rng = 0x9e3779b9u * (uint32_t)(i + 1);
        w->team = -1; /* not set yet: the first node with a backend sets it */
        int rc = uv_mutex_init(&w->dq.mu);
        if (rc)
            return rc;
        /* Room for the successors one node releases at once: grown only past this fan-out. */
        w->rcap = 1024;
        if (!(w->rbuf = af__malloc(w->rcap * sizeof(*w->rbuf)))) {
            uv_mutex_destroy(&w->dq.mu);
            return AF_ENOMEM;
        }
        ex->started = i + 1; /* deque mutexes initialised so far */
    }
    return 0;
}

int af_executor_create(const af_executor_opts_t *opts, af_executor_t **out, af_error_t *err)
{
    if (!out)
        return af__err(err, AF_EINVAL, "af_executor_create: out is NULL");
    af_executor_opts_t o;
    if (opts)
        o = *opts;
    else
        af_executor_opts_init(&o);
    if (!o.kernels)
        o.kernels = "verify";
    int rc = check_opts(&o, err);
    if (rc)
        return rc;
    if (o.dynamic_default_bytes == 0)
        o.dynamic_default_bytes = 4096;
    rc = AF_ENOMEM;
    af_executor_t *ex = af__calloc(1, sizeof(*ex));
    if (!ex)
        goto fail;
    ex->opts = o;
    ex->n = o.threads ? o.threads : af__exec_cpu_count();
    ex->set = af__kernel_set(o.kernels);
    ex->cores = o.intra_op_threads > ex->n ? o.intra_op_threads : ex->n;
    atomic_init(&ex->cores_free, ex->cores);
    ex->workers = af__calloc((size_t)ex->n, sizeof(*ex->workers));
    if (!ex->workers)
        goto fail_ex;
    if ((rc = uv_mutex_init(&ex->mu)))
        goto fail_workers;
    if ((rc = uv_cond_init(&ex->cv)))
        goto fail_mu;
    if ((rc = uv_mutex_init(&ex->kmu)))
        goto fail_cv;
    if ((rc = uv_mutex_init(&ex->tmu)))
        goto fail_kmu0;
    if ((rc = uv_cond_init(&ex->tcv))) {
        uv_mutex_destroy(&ex->tmu);
        goto fail_kmu0;
    }
    ex->verify = o.verify < 0 ? strcmp(o.kernels, "verify") == 0 : o.verify;
    ex->pool = o.pool;
    if (!ex->pool) {
        if ((rc = af_pool_create(NULL, &ex->pool, err)))
            goto fail_kmu;
        ex->own_pool = 1;
    }
    if ((rc = af__dyn_init(ex, err)))
        goto fail_pool;
    if ((rc = init_workers(ex)))
        goto fail_threads;
    for (int32_t i = 0; i < ex->n; i++) {
        if ((rc = uv_thread_create(&ex->workers[i].thread, worker_main, &ex->workers[i]))) {
            atomic_store(&ex->stop, 1);
            uv_mutex_lock(&ex->mu);
            uv_cond_broadcast(&ex->cv);
            uv_mutex_unlock(&ex->mu);
            for (int32_t j = 0; j < i; j++)
                uv_thread_join(&ex->workers[j].thread);
            goto fail_threads;
        }
    }
    /* Every worker's setup (its thread's first allocations: libgomp's settings) is done before
     * the executor is handed out: a worker scheduled late on a loaded machine would otherwise
     * allocate during the first rounds — which, run inline on the caller, need no worker. */
    while (atomic_load_explicit(&ex->ready, memory_order_acquire) < ex->n)
        sched_yield();
    *out = ex;
    return 0;

fail_threads:
    for (int32_t i = 0; i < ex->started; i++) {
        uv_mutex_destroy(&ex->workers[i].dq.mu);
        af__free(ex->workers[i].rbuf);
    }
    af__dyn_fini(ex);
fail_pool:
    if (ex->own_pool)
        af_pool_destroy(ex->pool);
fail_kmu:
    uv_cond_destroy(&ex->tcv);
    uv_mutex_destroy(&ex->tmu);
fail_kmu0:
    uv_mutex_destroy(&ex->kmu);
fail_cv:
    uv_cond_destroy(&ex->cv);
fail_mu:
    uv_mutex_destroy(&ex->mu);
fail_workers:
    af__free(ex->workers);
fail_ex:
    af__free(ex);
fail:
    return af__err(err, rc, "cannot start the executor: %s", af_strerror(rc));
}

void af_executor_destroy(af_executor_t *ex)
{
    if (!ex)
        return;
    atomic_store(&ex->stop, 1);
    uv_mutex_lock(&ex->mu);
    uv_cond_broadcast(&ex->cv);
    uv_mutex_unlock(&ex->mu);
    for (int32_t i = 0; i < ex->n; i++)
        uv_thread_join(&ex->workers[i].thread);
    for (int32_t i = 0; i < ex->n; i++) {
        uv_mutex_destroy(&ex->workers[i].dq.mu);
        af__free(ex->workers[i].dq.buf);
        af__free(ex->workers[i].rbuf);
    }
    for (size_t i = 0; i < ex->n_kregs; i++)
        af__free(ex->kregs[i].op);
    af__free(ex->kregs);
    af__dyn_fini(ex);
    if (ex->own_pool)
        af_pool_destroy(ex->pool);
    uv_mutex_destroy(&ex->kmu);
    uv_cond_destroy(&ex->tcv);
    uv_mutex_destroy(&ex->tmu);
    uv_cond_destroy(&ex->cv);
    uv_mutex_destroy(&ex->mu);
    af__free(ex->workers);
    af__free(ex);
}

int32_t af_executor_threads(const af_executor_t *ex)
{
    return ex ? ex->n : 0;
}

const af_executor_opts_t *af_executor_opts(const af_executor_t *ex)
{
    return ex ? &ex->opts : NULL;
}

af_pool_t *af_executor_pool(const af_executor_t *ex)
{
    return ex ? ex->pool : NULL;
}

void af_executor_counters(const af_executor_t *ex, uint64_t *tasks, uint64_t *steals)
{
    uint64_t t = ex ? atomic_load_explicit(&ex->inline_tasks, memory_order_relaxed) : 0, st = 0;
    for (int32_t i = 0; ex && i < ex->n; i++) {
        t += atomic_load_explicit(&ex->workers[i].tasks, memory_order_relaxed);
        st += atomic_load_explicit(&ex->workers[i].steals, memory_order_relaxed);
    }
    if (tasks)
        *tasks = t;
    if (steals)
        *steals = st;
}

/* ---- kernel registry -------------------------------------------------------------------- */

int af_executor_register_kernel(af_executor_t *ex, const char *op, af_kernel_fn fn, void *user)
{
    if (!ex || !op || !*op || !fn)
        return AF_EINVAL;
    int rc = 0;
    uv_mutex_lock(&ex->kmu);
    for (size_t i = 0; i < ex->n_kregs; i++)
        if (strcmp(ex->kregs[i].op, op) == 0) {
            ex->kregs[i].fn = fn;
            ex->kregs[i].user = user;
            goto out;
        }
    char *name = af__strdup(op);
    if (!name ||
        (rc = af__grow((void **)&ex->kregs, &ex->cap_kregs, ex->n_kregs + 1, sizeof(*ex->kregs)))) {
        af__free(name);
        rc = AF_ENOMEM;
        goto out;
    }
    ex->kregs[ex->n_kregs++] = (af__kernel_reg_t){name, fn, user};
out:
    uv_mutex_unlock(&ex->kmu);
    return rc;
}

int af__exec_registered(af_executor_t *ex, const char *op, af_kernel_fn *fn, void **user)
{
    uv_mutex_lock(&ex->kmu);
    for (size_t i = 0; i < ex->n_kregs; i++)
        if (strcmp(ex->kregs[i].op, op) == 0) {
            *fn = ex->kregs[i].fn;
            *user = ex->kregs[i].user;
            uv_mutex_unlock(&ex->kmu);
            return 0;
        }
    uv_mutex_unlock(&ex->kmu);
    *user = NULL;
    *fn = NULL;
    return AF_ENOTSUP;
}

/* ---- cores (OpenMP teams) ------------------------------------------------------------------
 * A node with a team of k takes k of the executor's cores while it runs. The fast path is one
 * CAS; a worker that finds too few cores spins a little (the holder is usually a short node),
 * then sleeps on tcv. A giver that sees waiters broadcasts under tmu; a waiter counts itself
 * under tmu before re-checking, so a wake-up cannot be lost (as for the sleeping workers). */

static int cores_try(af_executor_t *ex, int32_t k)
{
    int c = atomic_load(&ex->cores_free); /* seq_cst: pairs with the giver's waiting check */
    while (c >= k)
        if (atomic_compare_exchange_weak_explicit(&ex->cores_free, &c, c - k, memory_order_acquire,
                                                  memory_order_relaxed))
            return 1;
    return 0;
}

void af__exec_cores_take(af_executor_t *ex, int32_t k)
{
    if (k > ex->cores)
        k = ex->cores;
    for (int spin = 0; spin < 256; spin++) {
        if (cores_try(ex, k))
            return;
        if (spin > 64)
            sched_yield();
    }
    uv_mutex_lock(&ex->tmu);
    atomic_fetch_add(&ex->cores_waiting, 1);
    while (!cores_try(ex, k))
        uv_cond_wait(&ex->tcv, &ex->tmu);
    atomic_fetch_sub(&ex->cores_waiting, 1);
    uv_mutex_unlock(&ex->tmu);
}

void af__exec_cores_give(af_executor_t *ex, int32_t k)
{
    if (k > ex->cores)
        k = ex->cores;
    atomic_fetch_add(&ex->cores_free, k);
    if (atomic_load(&ex->cores_waiting) > 0) {
        uv_mutex_lock(&ex->tmu);
        uv_cond_broadcast(&ex->tcv);
        uv_mutex_unlock(&ex->tmu);
    }
}
