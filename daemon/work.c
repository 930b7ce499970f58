/*
 * arenaflowd runs: rounds off the loop thread, on executors that follow the configuration.
 *
 * A run goes through uv_queue_work(): the work callback runs on libuv's threadpool and touches
 * only its job (a referenced entry whose graph and plan are immutable, and a session whose
 * af_session_run() is thread-safe); the after-work callback runs on the loop thread and applies
 * the result to the registry and the metrics, then answers the request.
 *
 * Rounds run on the executor's own worker threads (af_session_run() blocks the threadpool thread
 * until the round completes). Executors come in generations: a generation is the pair of
 * executors made from one configuration, one with the "verify" kernels (for {"verify": true}:
 * every input is checked against its producer's checksum, so a plan that lets two live tensors
 * share bytes is caught) and one with [runs] fast_kernels (default "empty"), each created on
 * first use. A SIGHUP that changes fast_kernels or [executor] starts a new generation: the next
 * run of every graph gets a session on it. An old generation lives while sessions on it exist
 * (each is reference counted by the entry that holds it and the runs using it) and is destroyed
 * with its threads when the last goes. All executors share one arena pool. A session is made
 * (af_session_create compiles the plan's program: tens of ms for 100k nodes) in the work
 * callback of the run that needs it, and adopted by the entry in the after-work callback.
 *
 * Drain: the run loop checks d->cancel_runs between rounds, so a drain that times out stops
 * every run after the round it is in. Loop thread only, except the work callbacks.
 */
#include "daemon/daemon_int.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gen {
    af_executor_t *ex[2]; /* [0] fast kernels, [1] verify kernels; created on first use */
    af_executor_opts_t opts;
    char fast_kernels[16];
    int refs; /* sessions on it + 1 while it is the current generation */
    unsigned serial;
    struct gen *next; /* every live generation, current first */
    struct exec_state *x;
} gen_t;

typedef struct exec_state {
    af_pool_t *pool; /* one arena pool shared by every executor (thread-safe) */
    gen_t *gens;     /* live generations; the head is current when cur_valid */
    gen_t *cur;      /* NULL until the first run after start or a reconfiguration */
    unsigned serial;
    uint64_t tasks_done, steals_done; /* counters of destroyed executors */
} exec_state_t;

struct af__sess {
    af_session_t *s;
    gen_t *gen;
    int users;    /* runs using it now */
    int attached; /* 1 while an entry holds it */
};

typedef struct job {
    uv_work_t w;
    af__daemon_t *d;
    af__reply_t r;
    int rc;
    af_error_t err;
    af__entry_t *entry;
    af__sess_t *sess; /* the session used (made by run_work when make_sess) */
    gen_t *gen;       /* make_sess: the generation to make it on (a reference is held) */
    int make_sess;
    int sess_failed; /* make_sess: af_session_create failed (rc, err say why) */
    const char *kernels;
    int verify;
    int64_t rounds, done;
    double *lat_s;
    double wall_s;
    af_session_stats_t stats;
} job_t;

/* ---- generations and sessions --------------------------------------------------------- */

static void gen_unref(gen_t *g)
{
    if (--g->refs > 0)
        return;
    exec_state_t *x = g->x;
    for (gen_t **p = &x->gens; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
    for (int i = 0; i < 2; i++) {
        uint64_t t = 0, s = 0;
        if (g->ex[i])
            af_executor_counters(g->ex[i], &t, &s);
        x->tasks_done += t;
        x->steals_done += s;
        af_executor_destroy(g->ex[i]);
    }
    af__dlog(AF__LOG_INFO, "executor generation %u stopped (no sessions left)", g->serial);
    free(g);
}

static void sess_drop(af__sess_t *s)
{
    if (!s || s->users > 0 || s->attached)
        return;
    af_session_destroy(s->s);
    gen_unref(s->gen);
    free(s);
}

void af__work_entry_release(af__entry_t *e)
{
    for (int v = 0; v < 2; v++) {
        if (!e->sess[v])
            continue;
        e->sess[v]->attached = 0;
        sess_drop(e->sess[v]);
        e->sess[v] = NULL;
    }
}

static gen_t *current_gen(af__daemon_t *d)
{
    exec_state_t *x = d->exec;
    if (x->cur)
        return x->cur;
    gen_t *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->opts = d->cfg.exec_opts;
    snprintf(g->fast_kernels, sizeof(g->fast_kernels), "%s", d->cfg.fast_kernels);
    g->refs = 1;
    g->serial = ++x->serial;
    g->x = x;
    g->next = x->gens;
    x->gens = g;
    x->cur = g;
    d->metrics.executor_generations++;
    return g;
}

void af__work_reconfigure(af__daemon_t *d)
{
    exec_state_t *x = d->exec;
    if (!x || !x->cur)
        return; /* the next run starts from the new configuration anyway */
    gen_t *old = x->cur;
    x->cur = NULL;
    af__dlog(AF__LOG_INFO,
             "executors reconfigured: the next runs use new ones; generation %u stops when its "
             "%d sessions are idle",
             old->serial, old->refs - 1);
    gen_unref(old);
}

/* The current generation with its executor for kind v running (made on first use). NULL with
 * a message in err. */
static gen_t *gen_for(af__daemon_t *d, int v, af_error_t *err)
{
    gen_t *g = current_gen(d);
    if (!g) {
        af__err(err, AF_ENOMEM, "out of memory");
        return NULL;
    }
    if (!g->ex[v]) {
        exec_state_t *x = d->exec;
        af_executor_opts_t o = g->opts;
        o.kernels = v ? "verify" : g->fast_kernels;
        o.pool = x->pool;
        if (af_executor_create(&o, &g->ex[v], err) != 0)
            return NULL;
        af__dlog(AF__LOG_INFO, "executor (%s kernels) started with %d threads", o.kernels,
                 af_executor_threads(g->ex[v]));
    }
    return g;
}

/* run_after: a session run_work made becomes the entry's, unless the entry has one of the same
 * generation by now (another run made it) or is gone; then it goes when this run ends. */
static void adopt(af__entry_t *e, int v, af__sess_t *s)
{
    if (!e->listed || (e->sess[v] && e->sess[v]->gen == s->gen))
        return;
    if (e->sess[v]) { /* stale: the runs using it keep it alive */
        e->sess[v]->attached = 0;
        sess_drop(e->sess[v]);
    }
    s->attached = 1;
    e->sess[v] = s;
}

int af__work_can_run(void)
{
    return 1;
}

int af__work_init(af__daemon_t *d)
{
    exec_state_t *x = calloc(1, sizeof(exec_state_t));
    if (!x)
        return AF_ENOMEM;
    af_pool_opts_t po;
    af_pool_opts_init(&po);
    po.exact_peak = 1; /* /metrics reports the peak: one atomic add per arena is cheap */
    af_error_t err;
    af_error_clear(&err);
    int rc = af_pool_create(&po, &x->pool, &err);
    if (rc != 0) {
        af__dlog(AF__LOG_ERROR, "cannot create the arena pool: %s", err.msg);
        free(x);
        return rc;
    }
    d->exec = x;
    return 0;
}

void af__work_fini(af__daemon_t *d)
{
    exec_state_t *x = d->exec;
    if (!x)
        return;
    if (x->cur) /* sessions went with their entries, so this is the last reference */
        gen_unref(x->cur);
    while (x->gens) { /* only if a session leaked: never leave threads behind */
        x->gens->refs = 1;
        gen_unref(x->gens);
    }
    af_pool_destroy(x->pool);
    free(x);
    d->exec = NULL;
}

/* ---- runs ------------------------------------------------------------------------------ */

/* Binding a plan to an executor compiles its program (tens of ms for 100k nodes): here, not on
 * the loop. The generation's reference moves to the session. */
static int make_session(job_t *j)
{
    af__sess_t *s = calloc(1, sizeof(*s));
    if (!s)
        return af__err(&j->err, AF_ENOMEM, "out of memory");
    int rc = af_session_create(j->gen->ex[j->verify], j->entry->plan, NULL, &s->s, &j->err);
    if (rc != 0) {
        free(s);
        return rc;
    }
    s->gen = j->gen;
    s->users = 1;
    j->sess = s;
    return 0;
}

static void run_work(uv_work_t *w)
{
    job_t *j = w->data;
    if (j->make_sess && (j->rc = make_session(j)) != 0) {
        j->sess_failed = 1;
        return;
    }
    uint64_t t0 = af_now_ns();
    for (j->done = 0; j->done < j->rounds; j->done++) {
        if (atomic_load_explicit(&j->d->cancel_runs, memory_order_relaxed)) {
            j->rc = AF_ECANCELED;
            break;
        }
        uint64_t a = af_now_ns();
        j->rc = af_session_run(j->sess->s, NULL, NULL, &j->err);
        j->lat_s[j->done] = (double)(af_now_ns() - a) / 1e9;
        if (j->rc != 0)
            break;
    }
    j->wall_s = (double)(af_now_ns() - t0) / 1e9;
    af_session_stats(j->sess->s, &j->stats);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values, in microseconds. */
static double pct_us(const double *v, int64_t n, double p)
{
    if (n == 0)
        return 0;
    int64_t k = (int64_t)ceil(p / 100.0 * (double)n);
    if (k < 1)
        k = 1;
    return v[k - 1] * 1e6;
}

static json_t *run_json(const job_t *j)
{
    double sum = 0;
    for (int64_t i = 0; i < j->done; i++)
        sum += j->lat_s[i];
    qsort(j->lat_s, (size_t)j->done, sizeof(double), cmp_double);
    json_t *lat = json_pack(
        "{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "min", j->done ? j->lat_s[0] * 1e6 : 0.0, "mean",
        j->done ? sum / (double)j->done * 1e6 : 0.0, "p50", pct_us(j->lat_s, j->done, 50), "p90",
        pct_us(j->lat_s, j->done, 90), "p99", pct_us(j->lat_s, j->done, 99), "p999",
        pct_us(j->lat_s, j->done, 99.9), "max", j->done ? j->lat_s[j->done - 1] * 1e6 : 0.0);
    json_t *mem = json_pack(
        "{s:I, s:I, s:I, s:I, s:I}", "arena_bytes", (json_int_t)af_plan_arena_bytes(j->entry->plan),
        "naive_bytes", (json_int_t)af_plan_report(j->entry->plan)->naive_bytes,
        "session_arena_bytes", (json_int_t)j->stats.arena_bytes, "dynamic_allocs",
        (json_int_t)j->stats.dynamic_allocs, "pool_os_calls", (json_int_t)j->stats.pool_os_calls);
    return json_pack("{s:s, s:s, s:I, s:I, s:b, s:f, s:f, s:o, s:o, s:I}", "id", j->entry->id,
                     "kernels", j->kernels, "rounds_requested", (json_int_t)j->rounds,
                     "rounds_done", (json_int_t)j->done, "verify", j->verify, "wall_ms",
                     j->wall_s * 1e3, "rounds_per_s",
                     j->wall_s > 0 ? (double)j->done / j->wall_s : 0.0, "latency_us", lat, "memory",
                     mem, "corrupted_tensors", (json_int_t)j->stats.corrupted_tensors);
}

static void run_after(uv_work_t *w, int status)
{
    job_t *j = w->data;
    af__daemon_t *d = j->d;
    d->active_runs--;
    if (j->sess_failed) { /* AF_ENOTSUP: a kernel set that cannot run these ops: the client's */
        af__reply_rc(d, &j->r, j->rc, &j->err, "cannot run this graph");
        gen_unref(j->gen);
        af__entry_unref(j->entry);
        free(j->lat_s);
        free(j);
        return;
    }
    if (j->make_sess)
        adopt(j->entry, j->verify, j->sess);
    for (int64_t i = 0; i < j->done; i++)
        af__metrics_round(&d->metrics, j->lat_s[i]);
    j->entry->runs++;
    j->entry->rounds += (uint64_t)j->done;
    if (status != 0 && j->rc == 0)
        j->rc = status;
    if (j->rc == 0) {
        d->metrics.runs_ok++;
        af__reply_json(d, &j->r, 200, run_json(j));
    } else if (j->rc == AF_ECANCELED) {
        d->metrics.runs_canceled++;
        af__reply_error(d, &j->r, AF__DERR_DRAINING,
                        "shutting down: run stopped after %" PRId64 " of %" PRId64 " rounds",
                        j->done, j->rounds);
    } else {
        d->metrics.runs_failed++;
        if (j->rc == AF_ECORRUPT)
            d->metrics.verify_failures++;
        char prefix[96];
        snprintf(prefix, sizeof(prefix), "round %" PRId64 " failed (%s)", j->done,
                 af_err_name(j->rc));
        af__reply_rc(d, &j->r, j->rc, &j->err, prefix);
    }
    j->sess->users--;
    sess_drop(j->sess);
    af__entry_unref(j->entry);
    free(j->lat_s);
    free(j);
}

void af__work_run(af__daemon_t *d, af__entry_t *e, int64_t rounds, int verify, af__reply_t *r)
{
    af_error_t err;
    af_error_clear(&err);
    int v = verify ? 1 : 0;
    gen_t *g = gen_for(d, v, &err);
    if (!g)
        return af__reply_rc(d, r, err.code ? err.code : AF_ENOMEM, &err, "cannot run this graph");
    af__sess_t *s = e->sess[v] && e->sess[v]->gen == g ? e->sess[v] : NULL;
    job_t *j = calloc(1, sizeof(*j));
    double *lat = malloc((size_t)rounds * sizeof(double));
    if (!j || !lat) {
        free(j);
        free(lat);
        return af__reply_error(d, r, AF__DERR_BUSY, "out of memory");
    }
    *j = (job_t){.d = d,
                 .r = *r,
                 .entry = e,
                 .sess = s,
                 .gen = g,
                 .make_sess = s == NULL,
                 .kernels = v ? "verify" : g->fast_kernels,
                 .verify = v,
                 .rounds = rounds,
                 .lat_s = lat};
    j->w.data = j;
    int rc = uv_queue_work(d->loop, &j->w, run_work, run_after);
    if (rc != 0) {
        free(j);
        free(lat);
        return af__reply_rc(d, r, rc, NULL, "cannot queue the run");
    }
    af__entry_ref(e);
    if (s)
        s->users++;
    else
        g->refs++; /* for the session run_work makes */
    d->active_runs++;
}

void af__work_metrics(af__daemon_t *d, char **buf, size_t *len, size_t *cap)
{
    exec_state_t *x = d->exec;
    uint64_t sessions = 0, tasks = x->tasks_done, steals = x->steals_done;
    for (size_t i = 0; i < d->n_entries; i++)
        sessions += (d->entries[i]->sess[0] != NULL) + (d->entries[i]->sess[1] != NULL);
    for (gen_t *g = x->gens; g; g = g->next)
        for (int i = 0; i < 2; i++) {
            uint64_t t = 0, s = 0;
            if (g->ex[i])
                af_executor_counters(g->ex[i], &t, &s);
            tasks += t;
            steals += s;
        }
    af_pool_stats_t st;
    memset(&st, 0, sizeof(st));
    af_pool_stats(x->pool, &st);
    static const struct {
        const char *name, *type, *help;
        size_t off; /* in af_pool_stats_t, or SIZE_MAX for the local values below */
    } rows[] = {
        {"arenaflowd_pool_reserved_bytes", "gauge", "Bytes the arena pool has mapped from the OS.",
         offsetof(af_pool_stats_t, reserved_bytes)},
        {"arenaflowd_pool_allocated_bytes", "gauge", "Pool block bytes in use by rounds now.",
         offsetof(af_pool_stats_t, allocated_bytes)},
        {"arenaflowd_pool_requested_bytes", "gauge", "Arena bytes rounds asked for, in use now.",
         offsetof(af_pool_stats_t, requested_bytes)},
        {"arenaflowd_pool_peak_requested_bytes", "gauge", "Peak of arena bytes in use.",
         offsetof(af_pool_stats_t, peak_requested_bytes)},
        {"arenaflowd_pool_peak_reserved_bytes", "gauge", "Peak of pool bytes mapped.",
         offsetof(af_pool_stats_t, peak_reserved_bytes)},
        {"arenaflowd_pool_os_maps_total", "counter", "mmap calls made by the pool.",
         offsetof(af_pool_stats_t, os_maps)},
        {"arenaflowd_pool_allocs_total", "counter", "Arena blocks handed out by the pool.",
         offsetof(af_pool_stats_t, allocs)},
    };
    for (size_t i = 0; i < AF_ARRAY_SIZE(rows); i++) {
        uint64_t v;
        memcpy(&v, (const char *)&st + rows[i].off, sizeof(v));
        af__buf_printf(buf, len, cap, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", rows[i].name,
                       rows[i].help, rows[i].name, rows[i].type, rows[i].name, v);
    }
    af__buf_printf(buf, len, cap,
                   "# HELP arenaflowd_sessions Executor sessions bound to plans.\n"
                   "# TYPE arenaflowd_sessions gauge\narenaflowd_sessions %" PRIu64 "\n"
                   "# HELP arenaflowd_executor_tasks_total Node executions run by the workers.\n"
                   "# TYPE arenaflowd_executor_tasks_total counter\n"
                   "arenaflowd_executor_tasks_total %" PRIu64 "\n"
                   "# HELP arenaflowd_executor_steals_total Tasks stolen between workers.\n"
                   "# TYPE arenaflowd_executor_steals_total counter\n"
                   "arenaflowd_executor_steals_total %" PRIu64 "\n",
                   sessions, tasks, steals);
}
