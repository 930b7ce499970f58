/*
 * arenaflowd work off the loop thread: planning submitted graphs and running rounds.
 *
 * Both go through uv_queue_work(): the work callback runs on libuv's threadpool and touches only
 * its job (a graph it owns, or a referenced entry whose graph and plan are immutable, and the
 * session, whose af_session_run() is thread-safe); the after-work callback runs on the loop
 * thread and applies the result to the registry and the metrics, then answers the request. So
 * the loop never waits for a plan or a round, and the daemon needs no locks.
 *
 * Rounds run on the executor's own worker threads (af_session_run() blocks the threadpool thread
 * until the round completes). Two executors are created on first use: one with the "verify"
 * kernels (for {"verify": true}: every input is checked against its producer's checksum, so a
 * plan that lets two live tensors share bytes is caught) and one with the [runs] fast_kernels
 * set (default "empty", pure scheduling and memory traffic). An entry keeps one session per
 * executor, created on its first run.
 *
 * Drain: the run loop checks d->cancel_runs between rounds, so a drain that times out stops
 * every run after the round it is in. Loop thread only, except the work callbacks.
 */
#include "daemon/daemon_int.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct exec_state {
    af_pool_t *pool;      /* one arena pool shared by both executors (thread-safe) */
    af_executor_t *ex[2]; /* [0] fast kernels, [1] verify kernels */
} exec_state_t;

typedef struct job {
    uv_work_t w;
    af__daemon_t *d;
    af__dres_t *res;
    af__dres_cb cb;
    void *arg;
    int rc;
    af_error_t err;
    /* submit */
    af_graph_t *graph;
    const af_plan_t *plan; /* from the plan cache: released unless handed to an entry */
    af_plan_cache_t *cache;
    af_plan_opts_t opts;
    char *planner;
    char state_dir[AF__DCFG_STR];
    char id[AF__ID_LEN + 1];
    /* run */
    af__entry_t *entry;
    af_session_t *session;
    int verify;
    int64_t rounds, done;
    double *lat_s;
    double wall_s;
    af_session_stats_t stats;
} job_t;

static void job_free(job_t *j)
{
    if (j->plan)
        af_plan_cache_release(j->cache, j->plan);
    af_graph_destroy(j->graph);
    free(j->planner);
    free(j->lat_s);
    free(j);
}

/* ---- submissions ------------------------------------------------------------------------- */

static void plan_work(uv_work_t *w)
{
    job_t *j = w->data;
    j->rc = af_plan_cache_get(j->cache, j->graph, &j->opts, &j->plan, NULL, &j->err);
    if (j->rc == 0)
        j->rc = af_plan_verify(j->plan, &j->err);
    if (j->rc == 0)
        j->rc = af__store_write(j->state_dir, j->id, j->graph, j->planner, &j->err);
}

static void answer_entry(af__daemon_t *d, af__dres_t *res, af__entry_t *e, int created,
                         af__dres_cb cb, void *arg)
{
    json_t *body = af__entry_json(e, 1);
    if (body)
        json_object_set_new(body, "cache", json_string(created ? "miss" : "hit"));
    af__respond_json(d, res, created ? 201 : 200, body, cb, arg);
}

static int plan_status(int rc)
{
    switch (rc) {
    case AF_ENOMEM:
    case AF_EIO:
    case AF_EVERIFY:
        return 500;
    default:
        return 400;
    }
}

static void plan_after(uv_work_t *w, int status)
{
    job_t *j = w->data;
    af__daemon_t *d = j->d;
    d->pending_plans--;
    if (status != 0 && j->rc == 0)
        j->rc = status;
    if (j->rc != 0) {
        char msg[AF_ERROR_MSG_MAX + 64];
        snprintf(msg, sizeof(msg), "cannot plan the graph: %s",
                 j->err.msg[0] ? j->err.msg : af_strerror(j->rc));
        d->metrics.plans_failed++;
        af__respond_error(d, j->res, plan_status(j->rc), NULL, msg, j->cb, j->arg);
        job_free(j);
        return;
    }
    af__entry_t *e = af__store_find(d, j->id);
    if (e) { /* the same graph was submitted twice at once: the first one won */
        e->hits++;
        d->metrics.cache_hits++;
        answer_entry(d, j->res, e, 0, j->cb, j->arg);
        job_free(j);
        return;
    }
    e = calloc(1, sizeof(*e));
    if (!e || af__store_add(d, e) != 0) {
        free(e);
        af__respond_error(d, j->res, 500, NULL, "out of memory", j->cb, j->arg);
        job_free(j);
        return;
    }
    memcpy(e->id, j->id, sizeof(e->id));
    e->graph = j->graph;
    e->plan = j->plan;
    e->cache = j->cache;
    e->planner = j->planner;
    j->graph = NULL;
    j->plan = NULL;
    j->planner = NULL;
    d->metrics.cache_misses++;
    af__dlog(AF__LOG_INFO, "graph %s planned: %d nodes, arena %" PRIu64 " bytes", e->id,
             af_graph_node_count(e->graph), af_plan_arena_bytes(e->plan));
    answer_entry(d, j->res, e, 1, j->cb, j->arg);
    job_free(j);
}

void af__work_submit(af__daemon_t *d, af_graph_t *g, af__dres_t *res, af__dres_cb cb, void *arg)
{
    char planner[AF__DCFG_MAX_PLANNER * 100];
    af__dcfg_planner_string(&d->cfg, planner, sizeof(planner));
    job_t *j = calloc(1, sizeof(*j));
    if (!j || !(j->planner = strdup(planner))) {
        af_graph_destroy(g);
        free(j);
        return af__respond_error(d, res, 500, NULL, "out of memory", cb, arg);
    }
    *j = (job_t){.d = d,
                 .res = res,
                 .cb = cb,
                 .arg = arg,
                 .graph = g,
                 .planner = j->planner,
                 .opts = d->cfg.plan_opts,
                 .cache = d->plans};
    j->w.data = j;
    snprintf(j->state_dir, sizeof(j->state_dir), "%s", d->cfg.state_dir);
    int rc = af__fingerprint(g, planner, j->id, &j->err);
    if (rc != 0) { /* e.g. names that are not UTF-8 cannot be written as JSON: the client's */
        af__respond_error(d, res, rc == AF_ENOMEM ? 500 : 400, NULL, j->err.msg, cb, arg);
        return job_free(j);
    }
    af__entry_t *e = af__store_find(d, j->id);
    if (e) {
        e->hits++;
        d->metrics.cache_hits++;
        answer_entry(d, res, e, 0, cb, arg);
        return job_free(j);
    }
    if ((int64_t)d->n_entries + d->pending_plans >= d->cfg.max_graphs) {
        af__respond_error(d, res, 429, NULL,
                          "graph limit reached (max_graphs); delete a graph first", cb, arg);
        return job_free(j);
    }
    d->pending_plans++;
    rc = uv_queue_work(d->loop, &j->w, plan_work, plan_after);
    if (rc != 0) {
        d->pending_plans--;
        af__respond_error(d, res, 500, NULL, uv_strerror(rc), cb, arg);
        job_free(j);
    }
}

/* ---- runs -------------------------------------------------------------------------------- */

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
    for (int i = 0; i < 2; i++)
        af_executor_destroy(x->ex[i]);
    af_pool_destroy(x->pool);
    free(x);
    d->exec = NULL;
}

static int get_session(af__daemon_t *d, af__entry_t *e, int verify, af_error_t *err)
{
    exec_state_t *x = d->exec;
    if (e->session[verify])
        return 0;
    if (!x->ex[verify]) {
        af_executor_opts_t o = d->cfg.exec_opts;
        o.kernels = verify ? "verify" : d->cfg.fast_kernels;
        o.pool = x->pool;
        int rc = af_executor_create(&o, &x->ex[verify], err);
        if (rc != 0)
            return rc;
        af__dlog(AF__LOG_INFO, "executor (%s kernels) started with %d threads", o.kernels,
                 af_executor_threads(x->ex[verify]));
    }
    return af_session_create(x->ex[verify], e->plan, NULL, &e->session[verify], err);
}

static void run_work(uv_work_t *w)
{
    job_t *j = w->data;
    uint64_t t0 = af_now_ns();
    for (j->done = 0; j->done < j->rounds; j->done++) {
        if (atomic_load_explicit(&j->d->cancel_runs, memory_order_relaxed)) {
            j->rc = AF_ECANCELED;
            break;
        }
        uint64_t a = af_now_ns();
        j->rc = af_session_run(j->session, NULL, NULL, &j->err);
        j->lat_s[j->done] = (double)(af_now_ns() - a) / 1e9;
        if (j->rc != 0)
            break;
    }
    j->wall_s = (double)(af_now_ns() - t0) / 1e9;
    af_session_stats(j->session, &j->stats);
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
    return json_pack("{s:s, s:I, s:I, s:b, s:f, s:f, s:o, s:o, s:I}", "id", j->entry->id,
                     "rounds_requested", (json_int_t)j->rounds, "rounds_done", (json_int_t)j->done,
                     "verify", j->verify, "wall_ms", j->wall_s * 1e3, "rounds_per_s",
                     j->wall_s > 0 ? (double)j->done / j->wall_s : 0.0, "latency_us", lat, "memory",
                     mem, "corrupted_tensors", (json_int_t)j->stats.corrupted_tensors);
}

static void run_after(uv_work_t *w, int status)
{
    job_t *j = w->data;
    af__daemon_t *d = j->d;
    d->active_runs--;
    for (int64_t i = 0; i < j->done; i++)
        af__metrics_round(&d->metrics, j->lat_s[i]);
    j->entry->runs++;
    j->entry->rounds += (uint64_t)j->done;
    if (status != 0 && j->rc == 0)
        j->rc = status;
    if (j->rc == 0) {
        d->metrics.runs_ok++;
        af__respond_json(d, j->res, 200, run_json(j), j->cb, j->arg);
    } else {
        char msg[AF_ERROR_MSG_MAX + 128];
        int code = 500;
        if (j->rc == AF_ECANCELED) {
            d->metrics.runs_canceled++;
            code = 503;
            snprintf(msg, sizeof(msg),
                     "shutting down: run stopped after %" PRId64 " of %" PRId64 " rounds", j->done,
                     j->rounds);
        } else {
            d->metrics.runs_failed++;
            if (j->rc == AF_ECORRUPT)
                d->metrics.verify_failures++;
            snprintf(msg, sizeof(msg), "round %" PRId64 " failed (%s): %s", j->done,
                     af_err_name(j->rc), j->err.msg[0] ? j->err.msg : af_strerror(j->rc));
        }
        af__respond_error(d, j->res, code, NULL, msg, j->cb, j->arg);
    }
    af__entry_unref(j->entry);
    j->entry = NULL;
    job_free(j);
}

void af__work_run(af__daemon_t *d, af__entry_t *e, int64_t rounds, int verify, af__dres_t *res,
                  af__dres_cb cb, void *arg)
{
    af_error_t err;
    af_error_clear(&err);
    int rc = get_session(d, e, verify ? 1 : 0, &err);
    if (rc != 0) {
        char msg[AF_ERROR_MSG_MAX + 64];
        snprintf(msg, sizeof(msg), "cannot run this graph: %s",
                 err.msg[0] ? err.msg : af_strerror(rc));
        return af__respond_error(d, res, rc == AF_ENOTSUP ? 400 : 500, NULL, msg, cb, arg);
    }
    job_t *j = calloc(1, sizeof(*j));
    double *lat = malloc((size_t)rounds * sizeof(double));
    if (!j || !lat) {
        free(j);
        free(lat);
        return af__respond_error(d, res, 500, NULL, "out of memory", cb, arg);
    }
    *j = (job_t){.d = d,
                 .res = res,
                 .cb = cb,
                 .arg = arg,
                 .entry = e,
                 .session = e->session[verify ? 1 : 0],
                 .verify = verify ? 1 : 0,
                 .rounds = rounds,
                 .lat_s = lat};
    j->w.data = j;
    af__entry_ref(e);
    d->active_runs++;
    rc = uv_queue_work(d->loop, &j->w, run_work, run_after);
    if (rc != 0) {
        d->active_runs--;
        af__entry_unref(e);
        j->entry = NULL;
        job_free(j);
        af__respond_error(d, res, 500, NULL, uv_strerror(rc), cb, arg);
    }
}

void af__work_metrics(af__daemon_t *d, char **buf, size_t *len, size_t *cap)
{
    exec_state_t *x = d->exec;
    uint64_t sessions = 0, tasks = 0, steals = 0;
    for (size_t i = 0; i < d->n_entries; i++)
        sessions += (d->entries[i]->session[0] != NULL) + (d->entries[i]->session[1] != NULL);
    for (int i = 0; i < 2; i++) {
        uint64_t t = 0, s = 0;
        if (x->ex[i])
            af_executor_counters(x->ex[i], &t, &s);
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
