/*
 * arenaflowd — private interfaces between the daemon's files.
 *
 *   config.c   the option table, INI parsing (inih), command-line overrides
 *   api.c      routing and every endpoint, as a socket-free function (af__daemon_handle)
 *   store.c    the graph registry and the state directory (write temp + fsync + rename)
 *   work.c     planning and runs off the loop thread (uv_queue_work), the executor glue
 *   metrics.c  counters, the run-latency histogram, Prometheus text exposition
 *   server.c   h2o on libuv: listener, request glue, signals (drain, reload), main()
 *
 * Lock rule: the loop thread owns the daemon, the registry, the metrics and every request. Work
 * callbacks running on libuv's threadpool touch only their own job struct and the immutable graph
 * and plan it holds a reference to; results travel back in the job and are applied in the
 * after-work callback, on the loop thread. There are no locks in the daemon.
 */
#ifndef ARENAFLOW_DAEMON_INT_H
#define ARENAFLOW_DAEMON_INT_H

#include "arenaflow/cache.h"
#include "arenaflow/executor.h"
#include "arenaflow/graph.h"
#include "arenaflow/plan.h"
#include "arenaflow/pool.h"
#include "common/common_int.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* ---- configuration (config.c) ------------------------------------------------------------ */

#define AF__DCFG_MAX_PLANNER 32
#define AF__DCFG_STR 256

typedef struct af__dcfg {
    char listen[AF__DCFG_STR];    /* HOST:PORT, [v6]:PORT; port 0 = any free port */
    char state_dir[AF__DCFG_STR]; /* "" = no persistence */
    char log_level[16];           /* error, warn, info, debug */
    uint64_t max_body;            /* bytes; larger bodies get 413 */
    int64_t max_graphs;           /* graphs kept; more get 429 */
    int64_t max_runs;             /* concurrent runs; more get 429 */
    int64_t max_rounds;           /* rounds per run request; more get 400 */
    int64_t max_pending_plans;    /* submissions being planned at once; more get 429 */
    int64_t drain_timeout_ms;     /* SIGTERM: wait this long for in-flight work */
    uint64_t plan_cache_bytes;    /* LRU bound of the library plan cache (bytes) */
    /* [planner] section, kept as given so it can be hashed, stored and re-applied */
    int n_planner;
    char planner_key[AF__DCFG_MAX_PLANNER][32];
    char planner_val[AF__DCFG_MAX_PLANNER][64];
    af_plan_opts_t plan_opts;
    /* [executor] section (af_executor_opts_set keys) */
    int n_exec;
    char exec_key[AF__DCFG_MAX_PLANNER][32];
    char exec_val[AF__DCFG_MAX_PLANNER][64];
    af_executor_opts_t exec_opts;
    char fast_kernels[16]; /* kernel set for runs with verify=false */
} af__dcfg_t;

/* Command-line values that win over the file on every (re)load; NULL = not given. */
typedef struct af__dcli {
    const char *config;
    const char *listen;
    const char *state_dir;
} af__dcli_t;

/* Fills the defaults. */
void af__dcfg_init(af__dcfg_t *c);
/* Defaults, then the file (if any), then the overrides. 0, or -1 with a message in err. */
int af__dcfg_load(af__dcfg_t *c, const af__dcli_t *cli, char *err, size_t errlen);
/* "k=v;k=v" of the planner section: part of every graph's fingerprint. */
void af__dcfg_planner_string(const af__dcfg_t *c, char *buf, size_t len);

/* ---- logging (server.c) ------------------------------------------------------------------ */

enum { AF__LOG_ERROR = 0, AF__LOG_WARN, AF__LOG_INFO, AF__LOG_DEBUG };
void af__dlog_set_level(const char *name);
void af__dlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- metrics (metrics.c) ----------------------------------------------------------------- */

/* Routes, for "requests by route and status". One row per route template. */
#define AF__ROUTE_MAP(X)                                                                           \
    X(GRAPHS, "/v1/graphs")                                                                        \
    X(GRAPH, "/v1/graphs/{id}")                                                                    \
    X(RUN, "/v1/graphs/{id}/run")                                                                  \
    X(EVENTS, "/v1/graphs/{id}/events.csv")                                                        \
    X(SVG, "/v1/graphs/{id}/memory.svg")                                                           \
    X(METRICS, "/metrics")                                                                         \
    X(HEALTHZ, "/healthz")                                                                         \
    X(READYZ, "/readyz")                                                                           \
    X(OTHER, "other")

typedef enum {
#define AF__ROUTE_ENUM(name, path) AF__ROUTE_##name,
    AF__ROUTE_MAP(AF__ROUTE_ENUM)
#undef AF__ROUTE_ENUM
        AF__ROUTE_COUNT
} af__route_t;

#define AF__STATUS_SLOTS 16
#define AF__LAT_BUCKETS 16

typedef struct af__metrics {
    uint64_t requests[AF__ROUTE_COUNT][AF__STATUS_SLOTS];
    int statuses[AF__STATUS_SLOTS];       /* status code of each slot, 0 = unused */
    uint64_t lat_bucket[AF__LAT_BUCKETS]; /* per-round latency, non-cumulative */
    uint64_t lat_count;
    double lat_sum_s;
    uint64_t rounds;
    uint64_t runs_ok, runs_failed, runs_canceled;
    uint64_t cache_hits, cache_misses;
    uint64_t plans_failed;
    uint64_t verify_failures;
} af__metrics_t;

void af__metrics_count(af__metrics_t *m, af__route_t route, int status);
void af__metrics_round(af__metrics_t *m, double seconds);
/* Upper bounds (seconds) of the latency buckets, AF__LAT_BUCKETS - 1 finite ones then +Inf. */
extern const double af__lat_bounds[AF__LAT_BUCKETS - 1];

/* ---- the registry (store.c) -------------------------------------------------------------- */

#define AF__ID_LEN 32 /* hex digits of the 128-bit fingerprint */

typedef struct af__entry {
    char id[AF__ID_LEN + 1];
    af_graph_t *graph;      /* the daemon's copy (names, persistence as JSON) */
    const af_plan_t *plan;  /* held from the plan cache until the entry is freed */
    af_plan_cache_t *cache; /* where plan goes back to */
    char *planner;          /* the planner string the plan was made with */
    int refs;               /* 1 for the registry while listed + 1 per run in flight */
    int listed;             /* 0 once deleted (freed when refs drops to 0) */
    uint64_t created_unix;
    uint64_t hits, runs, rounds;
    af_session_t *session[2]; /* [0] fast kernels, [1] verify kernels; created on first run */
} af__entry_t;

typedef struct af__daemon af__daemon_t;

af__entry_t *af__store_find(af__daemon_t *d, const char *id);
/* Adds a planned graph (takes ownership of graph, plan, planner). 0 or AF_ENOMEM. */
int af__store_add(af__daemon_t *d, af__entry_t *e);
/* Unlists an entry and removes its file; the memory goes when the last run lets go. */
void af__store_remove(af__daemon_t *d, af__entry_t *e);
void af__entry_ref(af__entry_t *e);
void af__entry_unref(af__entry_t *e);
/* Loads every graph in the state directory (re-planning it). Returns the count loaded. */
int af__store_load_all(af__daemon_t *d);
void af__store_free_all(af__daemon_t *d);
/*
 * Persists one graph atomically: <dir>/graphs/<id>.json.tmp, fsync, rename, fsync(dir).
 * Thread-safe (touches only the file system and the immutable graph); called off the loop.
 * 0 or a negative errno/AF_E code with a message in err.
 */
int af__store_write(const char *state_dir, const char *id, const af_graph_t *g, const char *planner,
                    af_error_t *err);
/* Builds planner opts from a "k=v;k=v" string. */
int af__planner_opts_from_string(const char *s, af_plan_opts_t *o, af_error_t *err);
/* Fingerprint of a graph + planner string: 32 hex digits into id. Thread-safe. */
int af__fingerprint(const af_graph_t *g, const char *planner, char id[AF__ID_LEN + 1],
                    af_error_t *err);

/* ---- requests (api.c) -------------------------------------------------------------------- */

typedef struct af__dreq {
    const char *method;
    size_t method_len;
    const char *path; /* without the query */
    size_t path_len;
    const char *query; /* after '?', or NULL */
    size_t query_len;
    const char *content_type; /* or NULL */
    size_t content_type_len;
    const char *body;
    size_t body_len;
} af__dreq_t;

typedef struct af__dres {
    int status;
    const char *content_type; /* static string */
    char *body;               /* malloc'd (plain malloc: the receiver frees it with free()) */
    size_t body_len;
    af__route_t route;
    const char *allow; /* for 405: static "GET, DELETE"..., else NULL */
    int is_static;     /* the out-of-memory answer: not freed by af__dres_free() */
} af__dres_t;

/* Called exactly once per request, on the loop thread, maybe before af__daemon_handle returns.
 * The callee owns res->body. */
typedef void (*af__dres_cb)(af__dres_t *res, void *arg);
/* Frees a response and its body (what every af__dres_cb must eventually call). */
void af__dres_free(af__dres_t *res);

/* Socket-free entry point: what the HTTP glue and the fuzz harness call. Loop thread only. */
void af__daemon_handle(af__daemon_t *d, const af__dreq_t *req, af__dres_cb cb, void *arg);

/* Helpers to finish a response (also used by work.c). Take ownership of nothing. */
void af__respond_json(af__daemon_t *d, af__dres_t *res, int status, json_t *body_steal,
                      af__dres_cb cb, void *arg);
void af__respond_error(af__daemon_t *d, af__dres_t *res, int status, const char *code,
                       const char *msg, af__dres_cb cb, void *arg);
/* The plan report of an entry as a JSON object. */
json_t *af__entry_json(const af__entry_t *e, int with_report);

/* ---- work off the loop (work.c) ---------------------------------------------------------- */

/* Plans g (taken) off the loop, persists it, adds it; answers 201 / 200 (hit) / 400 / 429. */
void af__work_submit(af__daemon_t *d, af_graph_t *g, af__dres_t *res, af__dres_cb cb, void *arg);
/* Runs rounds of e off the loop; answers 200 with latencies, or an error. */
void af__work_run(af__daemon_t *d, af__entry_t *e, int64_t rounds, int verify, af__dres_t *res,
                  af__dres_cb cb, void *arg);
/* Executor set-up and tear-down; 0 or an error code (the daemon still serves without runs). */
int af__work_init(af__daemon_t *d);
void af__work_fini(af__daemon_t *d);
/* 1 when runs are available in this build. */
int af__work_can_run(void);
/* Appends pool/executor/plan-cache gauges to a Prometheus text buffer (may add nothing). */
void af__work_metrics(af__daemon_t *d, char **buf, size_t *len, size_t *cap);

/* ---- the daemon -------------------------------------------------------------------------- */

struct af__daemon {
    uv_loop_t *loop;
    af__dcfg_t cfg;
    af__metrics_t metrics;
    af__entry_t **entries; /* listed entries, in insertion order */
    size_t n_entries, cap_entries;
    int64_t active_runs;
    int64_t pending_plans;
    int draining;
    atomic_int cancel_runs; /* set on the loop thread when the drain times out; read by work */
    int ready;
    uint64_t started_ns;
    void *exec;             /* executor state owned by work.c */
    af_plan_cache_t *plans; /* the library's plan cache, persisted in <state_dir>/plans */
};

/* A daemon without sockets: registry, metrics, executor. The caller runs the loop. */
int af__daemon_create(uv_loop_t *loop, const af__dcfg_t *cfg, af__daemon_t **out);
void af__daemon_destroy(af__daemon_t *d);
/* Renders /metrics. Returns a malloc'd NUL-terminated string, or NULL on OOM. */
char *af__metrics_render(af__daemon_t *d, size_t *len);

/* Growable text buffer for the renderers (plain malloc). 0 or -1 on OOM. */
int af__buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
