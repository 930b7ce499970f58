/*
 * arenaflowd metrics: plain counters owned by the loop thread, rendered in the Prometheus text
 * exposition format (version 0.0.4): for each family one "# HELP" and one "# TYPE" line, then its
 * samples; histograms have cumulative _bucket{le=...} samples ending with le="+Inf", then _sum and
 * _count. Label values are route templates and status codes, which need no escaping.
 *
 * Requests are counted per (route, status) in a small table: statuses get a slot the first time
 * they are seen (16 slots; a 17th distinct status is counted under the last slot's code "other",
 * which cannot happen with the statuses the daemon answers). Loop thread only.
 */
#include "daemon/daemon_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double af__lat_bounds[AF__LAT_BUCKETS - 1] = {
    1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 5e-2, 0.1, 1.0, 10.0,
};

static const char *const route_paths[] = {
#define AF__ROUTE_PATH(name, path) path,
    AF__ROUTE_MAP(AF__ROUTE_PATH)
#undef AF__ROUTE_PATH
};

void af__metrics_count(af__metrics_t *m, af__route_t route, int status)
{
    int slot;
    for (slot = 0; slot < AF__STATUS_SLOTS - 1; slot++) {
        if (m->statuses[slot] == status)
            break;
        if (m->statuses[slot] == 0) {
            m->statuses[slot] = status;
            break;
        }
    }
    m->requests[route][slot]++;
}

void af__metrics_round(af__metrics_t *m, double seconds)
{
    int b = 0;
    while (b < AF__LAT_BUCKETS - 1 && seconds > af__lat_bounds[b])
        b++;
    m->lat_bucket[b]++;
    m->lat_count++;
    m->lat_sum_s += seconds;
    m->rounds++;
}

int af__buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = *cap - *len;
        int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if (*buf && (size_t)n < room) {
            *len += (size_t)n;
            return 0;
        }
        size_t ncap = (*cap ? *cap : 1024);
        while (ncap - *len <= (size_t)n)
            ncap *= 2;
        char *nb = realloc(*buf, ncap);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = ncap;
    }
}

#define P(...) (void)af__buf_printf(&buf, &len, &cap, __VA_ARGS__)

static void counter(char **b, size_t *l, size_t *c, const char *name, const char *help, uint64_t v)
{
    af__buf_printf(b, l, c, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", name, help, name,
                   name, v);
}

static void gauge(char **b, size_t *l, size_t *c, const char *name, const char *help, double v)
{
    af__buf_printf(b, l, c, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

/* The families of the limits and guards: error answers by kind, abandoned plans, refused
 * connections, executor generations, the memory reservations. */
static void guard_metrics(af__daemon_t *d, char **b, size_t *l, size_t *c)
{
    af__buf_printf(
        b, l, c,
        "# HELP arenaflowd_errors_total Error answers, by kind (the code of the JSON error).\n"
        "# TYPE arenaflowd_errors_total counter\n");
    static const char *const kinds[] = {
#define AF__KIND_NAME(name, status, code, retry) code,
        AF__DERR_MAP(AF__KIND_NAME)
#undef AF__KIND_NAME
    };
    for (int k = 0; k < AF__DERR_COUNT; k++)
        if (d->metrics.rejected[k])
            af__buf_printf(b, l, c,
                           "arenaflowd_errors_total{code=\"%s\",status=\"%d\"} %" PRIu64 "\n",
                           kinds[k], af__derr_status((af__derr_t)k), d->metrics.rejected[k]);
    counter(b, l, c, "arenaflowd_plans_timed_out_total", "Plans abandoned at max_plan_ms.",
            d->metrics.plans_timed_out);
    counter(b, l, c, "arenaflowd_connections_refused_total",
            "Connections closed at accept (max_connections).", d->metrics.connections_refused);
    counter(b, l, c, "arenaflowd_executor_generations_total",
            "Executor generations started (SIGHUP changes of [executor] or fast_kernels).",
            d->metrics.executor_generations);
    gauge(b, l, c, "arenaflowd_held_bytes",
          "Estimated bytes of the graphs kept and being planned (max_plans_bytes).",
          (double)d->held_bytes);
    gauge(b, l, c, "arenaflowd_parse_bytes",
          "Estimated parser bytes of submissions being parsed (max_parse_bytes).",
          (double)atomic_load(&d->parse_used));
    gauge(b, l, c, "arenaflowd_submissions_in_progress",
          "Submissions admitted and not yet answered.", (double)d->pending_plans);
    gauge(b, l, c, "arenaflowd_loading", "1 while the state directory loads.", d->loading);
}

char *af__metrics_render(af__daemon_t *d, size_t *out_len)
{
    const af__metrics_t *m = &d->metrics;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    P("# HELP arenaflowd_http_requests_total HTTP requests answered, by route and status.\n"
      "# TYPE arenaflowd_http_requests_total counter\n");
    for (int r = 0; r < AF__ROUTE_COUNT; r++)
        for (int s = 0; s < AF__STATUS_SLOTS; s++)
            if (m->requests[r][s])
                P("arenaflowd_http_requests_total{route=\"%s\",status=\"%d\"} %" PRIu64 "\n",
                  route_paths[r], m->statuses[s], m->requests[r][s]);
    P("# HELP arenaflowd_run_round_seconds Wall time of one executed round.\n"
      "# TYPE arenaflowd_run_round_seconds histogram\n");
    uint64_t cum = 0;
    for (int b = 0; b < AF__LAT_BUCKETS - 1; b++) {
        cum += m->lat_bucket[b];
        P("arenaflowd_run_round_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", af__lat_bounds[b], cum);
    }
    P("arenaflowd_run_round_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", m->lat_count);
    P("arenaflowd_run_round_seconds_sum %.9f\n", m->lat_sum_s);
    P("arenaflowd_run_round_seconds_count %" PRIu64 "\n", m->lat_count);
    counter(&buf, &len, &cap, "arenaflowd_rounds_executed_total", "Rounds executed.", m->rounds);
    P("# HELP arenaflowd_runs_total Run requests finished, by outcome.\n"
      "# TYPE arenaflowd_runs_total counter\n"
      "arenaflowd_runs_total{outcome=\"ok\"} %" PRIu64 "\n"
      "arenaflowd_runs_total{outcome=\"failed\"} %" PRIu64 "\n"
      "arenaflowd_runs_total{outcome=\"canceled\"} %" PRIu64 "\n",
      m->runs_ok, m->runs_failed, m->runs_canceled);
    counter(&buf, &len, &cap, "arenaflowd_plan_cache_hits_total",
            "Graph submissions answered from the plan cache.", m->cache_hits);
    counter(&buf, &len, &cap, "arenaflowd_plan_cache_misses_total",
            "Graph submissions that had to be planned.", m->cache_misses);
    counter(&buf, &len, &cap, "arenaflowd_plan_failures_total",
            "Graph submissions rejected by the planner.", m->plans_failed);
    uint64_t arena = 0;
    for (size_t i = 0; i < d->n_entries; i++)
        arena += af_plan_arena_bytes(d->entries[i]->plan);
    gauge(&buf, &len, &cap, "arenaflowd_plan_cache_size", "Graphs (and plans) held.",
          (double)d->n_entries);
    gauge(&buf, &len, &cap, "arenaflowd_plan_cache_arena_bytes",
          "Sum of the planned arena sizes of the graphs held.", (double)arena);
    gauge(&buf, &len, &cap, "arenaflowd_runs_in_flight", "Run requests executing now.",
          (double)d->active_runs);
    gauge(&buf, &len, &cap, "arenaflowd_draining", "1 while shutting down.", d->draining);
    gauge(&buf, &len, &cap, "arenaflowd_uptime_seconds", "Seconds since start.",
          (double)(af_now_ns() - d->started_ns) / 1e9);
    af_plan_cache_stats_t cs = d->cache_stats; /* a snapshot: the loop never waits for the cache */
    gauge(&buf, &len, &cap, "arenaflowd_plan_cache_bytes",
          "Estimated bytes of the plans in the library plan cache.", (double)cs.bytes);
    gauge(&buf, &len, &cap, "arenaflowd_plan_cache_entries",
          "Plans in the library plan cache (listed or kept for reuse).", (double)cs.entries);
    counter(&buf, &len, &cap, "arenaflowd_plan_cache_restored_total",
            "Plans restored from the state directory instead of planned.", cs.restored);
    counter(&buf, &len, &cap, "arenaflowd_plan_cache_evictions_total",
            "Plans dropped by the plan cache's LRU bound.", cs.evictions);
    counter(&buf, &len, &cap, "arenaflowd_plan_cache_files_rejected_total",
            "Plan files found corrupted or foreign at start (ignored).", cs.files_rejected);
    guard_metrics(d, &buf, &len, &cap);
    af__work_metrics(d, &buf, &len, &cap);
    af__oip_metrics(d, &buf, &len, &cap);
    if (buf && out_len)
        *out_len = len;
    return buf;
}
