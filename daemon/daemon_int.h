/*
 * arenaflowd — private interfaces between the daemon's files.
 *
 *   config.c   the option table, INI parsing (inih), command-line overrides
 *   errors.c   the one error-to-status table of the API (kinds, library codes, reason phrases)
 *   api.c      routing, authentication, the read endpoints, as a socket-free function
 *   reply.c    answers: JSON and error bodies through the error table, JSON views, the query
 *   submit.c   submissions: admission, parsing and planning off the loop, per-id order, delete
 *   limits.c   what bounds a request's work and memory: the JSON cost scan, graph limits
 *   store.c    the graph registry, per-id serialisation, the state directory's files
 *   load.c     loading the state directory in the background at start
 *   cache_ops.c  plan-cache calls off the loop (the cache holds its mutex while it plans)
 *   work.c     runs off the loop thread, executor generations (SIGHUP applies [executor])
 *   auth.c     bearer tokens (read-only and admin)
 *   metrics.c  counters, the run-latency histogram, Prometheus text exposition
 *   server.c   h2o on libuv: listener, TLS, connection cap, signals (drain, reload), main()
 *   server_http.c  the HTTP glue: h2o request -> af__dreq_t, framing checks, answers
 *
 * Lock rule: the loop thread owns the daemon, the registry, the metrics and every request. Work
 * callbacks running on libuv's threadpool touch only their own job struct, the immutable graph
 * and plan it holds a reference to, the plan cache (thread-safe) and the few atomics below
 * (parse budget, cancel flags); results travel back in the job and are applied in the
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

/* What bounds one request's work and memory ([limits]); copied into every job, so workers never
 * read the live configuration (SIGHUP replaces it on the loop thread). */
typedef struct af__limits {
    uint64_t max_body;        /* bytes; larger bodies get 413 */
    int64_t max_nodes;        /* per graph; more get 422 */
    int64_t max_tensors;      /* per graph; more get 422 */
    int64_t max_attrs;        /* attributes per node; more get 422 */
    uint64_t max_arena_bytes; /* planned arena (and any one tensor) per graph; more get 422 */
    uint64_t max_parse_bytes; /* estimated parser memory of all submissions parsed at once */
    int64_t max_plan_ms;      /* planning time per graph; a plan over it is abandoned (422) */
} af__limits_t;

typedef struct af__dcfg {
    char listen[AF__DCFG_STR];      /* HOST:PORT, [v6]:PORT; port 0 = any free port */
    char state_dir[AF__DCFG_STR];   /* "" = no persistence */
    char log_level[16];             /* error, warn, info, debug */
    char tls_cert[AF__DCFG_STR];    /* PEM certificate chain; "" = plain HTTP */
    char tls_key[AF__DCFG_STR];     /* PEM private key */
    int64_t max_connections;        /* open client connections; more are closed at accept */
    int64_t request_timeout_ms;     /* a request (headers and body) must arrive within this */
    char tokens_file[AF__DCFG_STR]; /* [auth]: "" = no authentication */
    af__limits_t lim;
    int64_t max_graphs;        /* graphs kept; more get 429 */
    uint64_t max_plans_bytes;  /* estimated bytes of the graphs and plans kept; more get 507 */
    int64_t max_runs;          /* concurrent runs; more get 429 */
    int64_t max_rounds;        /* rounds per run request; more get 400 */
    int64_t max_pending_plans; /* submissions (and deletions) in progress at once; more get 429 */
    int64_t drain_timeout_ms;  /* SIGTERM: wait this long for in-flight work */
    uint64_t plan_cache_bytes; /* LRU bound of the library plan cache (bytes) */
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
    /* [models]: the OIP v2 model server */
    char model_repository[AF__DCFG_STR]; /* "" = no repository: /v2 serves no models */
    char model_kernels[16];              /* kernel set of the models' executor */
    int64_t max_infers;                  /* inference requests in flight; more get 429 */
    int64_t max_shapes;                  /* concrete shapes kept per symbolic-dims model */
    int64_t max_plan_files;              /* model plans kept in <state_dir>/model_plans */
    int64_t loop_max_us; /* small inferences on the loop: model's average work under it, 0 off */
} af__dcfg_t;

/* Command-line values that win over the file on every (re)load; NULL = not given. */
typedef struct af__dcli {
    const char *config;
    const char *listen;
    const char *state_dir;
    const char *model_repository;
} af__dcli_t;

/* Fills the defaults. */
void af__dcfg_init(af__dcfg_t *c);
/* Defaults, then the file (if any), then the overrides. 0, or -1 with a message in err. */
int af__dcfg_load(af__dcfg_t *c, const af__dcli_t *cli, char *err, size_t errlen);
/* "k=v;k=v" of the planner section: part of every graph's fingerprint. */
void af__dcfg_planner_string(const af__dcfg_t *c, char *buf, size_t len);
/* 1 when the executors must be rebuilt to apply b (fast_kernels or [executor] differ from a). */
int af__dcfg_exec_differs(const af__dcfg_t *a, const af__dcfg_t *b);

/* ---- logging (daemon.c) ------------------------------------------------------------------ */

enum { AF__LOG_ERROR = 0, AF__LOG_WARN, AF__LOG_INFO, AF__LOG_DEBUG };
void af__dlog_set_level(const char *name);
void af__dlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- errors (errors.c) ------------------------------------------------------------------- */

/* Kind, HTTP status, JSON "code", Retry-After (1: the condition is temporary). */
#define AF__DERR_MAP(X)                                                                            \
    X(BAD_REQUEST, 400, "bad_request", 0)                                                          \
    X(UNAUTHORIZED, 401, "unauthorized", 0)                                                        \
    X(FORBIDDEN, 403, "forbidden", 0)                                                              \
    X(NOT_FOUND, 404, "not_found", 0)                                                              \
    X(METHOD, 405, "method_not_allowed", 0)                                                        \
    X(TOO_LARGE, 413, "too_large", 0)                                                              \
    X(LIMIT, 422, "limit_exceeded", 0)                                                             \
    X(UNPLANNABLE, 422, "unplannable", 0)                                                          \
    X(PLAN_TIMEOUT, 422, "plan_timeout", 0)                                                        \
    X(TOO_MANY, 429, "too_many_requests", 1)                                                       \
    X(INTERNAL, 500, "internal", 0)                                                                \
    X(NOT_BUILT, 501, "not_implemented", 0)                                                        \
    X(BUSY, 503, "busy", 1)                                                                        \
    X(DRAINING, 503, "shutting_down", 1)                                                           \
    X(LOADING, 503, "loading", 1)                                                                  \
    X(STORAGE, 507, "insufficient_storage", 0)

typedef enum {
#define AF__DERR_ENUM(name, status, code, retry) AF__DERR_##name,
    AF__DERR_MAP(AF__DERR_ENUM)
#undef AF__DERR_ENUM
        AF__DERR_COUNT
} af__derr_t;

int af__derr_status(af__derr_t k);
const char *af__derr_code(af__derr_t k);
int af__derr_retry(af__derr_t k);
/* The kind of a library result (AF_E* code or negative errno); unknown codes are internal. */
af__derr_t af__derr_of(int rc);
/* Reason phrase of an HTTP status ("Not Found"). */
const char *af__http_reason(int status);

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
    X(V2_HEALTH, "/v2/health/{live,ready}")                                                        \
    X(V2_SERVER, "/v2")                                                                            \
    X(V2_MODEL, "/v2/models/{m}[/versions/{v}][/ready,/config,/stats]")                            \
    X(V2_INFER, "/v2/models/{m}[/versions/{v}]/infer")                                             \
    X(V2_REPO, "/v2/repository/...")                                                               \
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
    uint64_t rejected[AF__DERR_COUNT]; /* error answers by kind */
    uint64_t plans_timed_out;
    uint64_t connections_refused; /* closed at accept: over max_connections */
    uint64_t executor_generations;
} af__metrics_t;

void af__metrics_count(af__metrics_t *m, af__route_t route, int status);
void af__metrics_round(af__metrics_t *m, double seconds);
/* Upper bounds (seconds) of the latency buckets, AF__LAT_BUCKETS - 1 finite ones then +Inf. */
extern const double af__lat_bounds[AF__LAT_BUCKETS - 1];

/* ---- the registry (store.c) -------------------------------------------------------------- */

#define AF__ID_LEN 32 /* hex digits of the 128-bit fingerprint */

typedef struct af__sess af__sess_t; /* work.c: a session on one executor generation */
typedef struct af__daemon af__daemon_t;

typedef struct af__entry {
    char id[AF__ID_LEN + 1];
    const af_graph_t *graph; /* the plan cache's copy (af_plan_graph(plan)), not owned */
    const af_plan_t *plan;   /* held from the plan cache until the entry is freed */
    af_plan_cache_t *cache;  /* where plan goes back to */
    af__daemon_t *owner;     /* set when listed: the plan goes back off the loop */
    char *planner;           /* the planner string the plan was made with */
    uint64_t held;           /* estimated bytes of graph and plan (max_plans_bytes) */
    int refs;                /* 1 for the registry while listed + 1 per run in flight */
    int listed;              /* 0 once deleted (freed when refs drops to 0) */
    uint64_t created_unix;
    uint64_t hits, runs, rounds;
    /* [0] fast kernels, [1] verify kernels: created on the first run, on the executors of the
     * configuration then current; after a SIGHUP that changes them the next run makes a new
     * one (runs still using the old one keep it until they finish). */
    af__sess_t *sess[2];
} af__entry_t;

/* ---- the plan cache, off the loop (cache_ops.c) ----------------------------------------- */

#define AF__CACHE_VIEW_WARN 8
/* What a worker saw of the cache: its figures and the warnings from index `from` on. */
typedef struct af__cache_view {
    af_plan_cache_stats_t st;
    int32_t from, n;
    char *warn[AF__CACHE_VIEW_WARN];
    int valid;
} af__cache_view_t;

/* Worker: snapshot of c's figures and of its warnings from index `from`. */
void af__cache_snapshot(af_plan_cache_t *c, af__cache_view_t *v, int32_t from);
/* Loop: keeps the figures for /metrics, logs the warnings not logged yet, frees v's strings. */
void af__cache_apply(af__daemon_t *d, af__cache_view_t *v);
/* Loop: releases plan off the loop (in place when d is NULL: on a worker). */
void af__cache_release(af__daemon_t *d, af_plan_cache_t *cache, const af_plan_t *plan);
/* Loop: changes the plan cache's LRU bound off the loop. */
void af__cache_set_max_bytes(af__daemon_t *d, uint64_t max_bytes);

af__entry_t *af__store_find(af__daemon_t *d, const char *id);
/* Lists a planned entry (takes ownership of plan and planner). 0 or AF_ENOMEM. */
int af__store_add(af__daemon_t *d, af__entry_t *e);
/* Unlists an entry (no file I/O); the memory goes when the last run lets go. */
void af__store_unlist(af__daemon_t *d, af__entry_t *e);
void af__entry_ref(af__entry_t *e);
void af__entry_unref(af__entry_t *e);
/* A fresh entry for a plan of the cache (taken: released with the entry). NULL on OOM. */
af__entry_t *af__entry_new(const char *id, af_plan_cache_t *cache, const af_plan_t *plan,
                           char *planner_taken, uint64_t held);
void af__store_free_all(af__daemon_t *d);

/*
 * Per-id serialisation: submissions and deletions of one id run one after another, in arrival
 * order. af__id_run() runs op->fn now when no operation holds the id, else when the ones before
 * it have called af__id_release(). The holder releases exactly once, possibly from inside fn.
 * Returns 0 or AF_ENOMEM (op not queued). Loop thread only.
 */
typedef struct af__op af__op_t;
struct af__op {
    void (*fn)(af__daemon_t *d, af__op_t *op);
};
int af__id_run(af__daemon_t *d, const char *id, af__op_t *op);
void af__id_release(af__daemon_t *d, const char *id);
/* 1 when an operation holds or waits for the id. */
int af__id_busy(const af__daemon_t *d, const char *id);

/* 1 when s (n bytes) is an id: exactly 32 lowercase hex digits. */
int af__id_valid(const char *s, size_t n);

/*
 * The state directory's graph files, <dir>/graphs/<id>.json, written atomically: a temp file
 * with a unique name (<id>.json.tmp.<pid>.<seq>, O_EXCL), fsync, rename, fsync of the directory.
 * text is the graph's canonical JSON. Thread-safe; called off the loop. 0, or a negative errno
 * with a message naming the file in err.
 */
int af__store_write(const char *state_dir, const char *id, const char *text, const char *planner,
                    af_error_t *err);
/* Removes <dir>/graphs/<id>.json and fsyncs the directory (a missing file is success). */
int af__store_unlink(const char *state_dir, const char *id, af_error_t *err);
/* Makes sure <dir>/plans/<fp>.afplan is a regular file and fsyncs <dir>/plans: the plan cache
 * wrote it. 0, or AF_EIO with a message. */
int af__store_plan_durable(const char *state_dir, uint64_t fp, af_error_t *err);
/* Builds planner opts from a "k=v;k=v" string. */
int af__planner_opts_from_string(const char *s, af_plan_opts_t *o, af_error_t *err);
/* A graph's id: af_graph_fingerprint salted with the planner string, 32 hex digits. 0 or
 * AF_EINVAL (graph not finalized). Thread-safe. */
int af__fingerprint_graph(const af_graph_t *g, const char *planner, char id[AF__ID_LEN + 1]);

/* ---- loading the state directory (load.c) ------------------------------------------------ */

/* Opens the plan cache and loads every stored graph off the loop; d->ready becomes 1 in the
 * after-work callback. 0 or an error (then nothing was queued). Loop thread. */
int af__load_start(af__daemon_t *d);

/* ---- limits (limits.c) ------------------------------------------------------------------- */

/* Estimated bytes jansson needs for the DOM of text (a linear scan, no allocation). */
uint64_t af__json_cost(const char *text, size_t len);
/* Upper bound of the bytes the ONNX importer needs for a model of len bytes (its wire check
 * refuses models that would decode to more). */
uint64_t af__onnx_cost(size_t len);
/* Checks a parsed graph against the per-graph limits. 0, or an error kind with a message. */
int af__limits_check(const af__limits_t *lim, const af_graph_t *g, af__derr_t *kind, char *msg,
                     size_t len);
/* Estimated resident bytes of a listed graph: the plan cache's graph copy and the plan. */
uint64_t af__held_estimate(const af_graph_t *g, size_t text_len);

/* ---- authentication (auth.c) ------------------------------------------------------------- */

typedef enum { AF__ROLE_NONE = 0, AF__ROLE_READ = 1, AF__ROLE_ADMIN = 2 } af__role_t;
typedef struct af__tokens af__tokens_t;
/* Reads a tokens file ("admin TOKEN" / "read TOKEN" lines, # comments). NULL path = no auth
 * (*out = NULL). 0, or -1 with a message in err. */
int af__tokens_load(const char *path, af__tokens_t **out, char *err, size_t errlen);
void af__tokens_free(af__tokens_t *t);
/* The role of an "Authorization: Bearer X" value (constant time in the token's length). */
af__role_t af__tokens_role(const af__tokens_t *t, const char *value, size_t len);
size_t af__tokens_count(const af__tokens_t *t, af__role_t role);

/* ---- requests (api.c) -------------------------------------------------------------------- */

typedef struct af__dreq {
    const char *method;
    size_t method_len;
    const char *path; /* without the query, percent-decoded (may hold NUL bytes) */
    size_t path_len;
    const char *query; /* after '?', or NULL */
    size_t query_len;
    const char *content_type; /* or NULL */
    size_t content_type_len;
    const char *authorization; /* the Authorization header's value, or NULL */
    size_t authorization_len;
    const char *infer_header; /* Inference-Header-Content-Length's value (OIP), or NULL */
    size_t infer_header_len;
    const char *reject; /* the HTTP layer refuses the request's framing (400): why; or NULL */
    const char *body;
    size_t body_len;
} af__dreq_t;

typedef struct af__dres {
    int status;
    const char *content_type; /* static string */
    char *body;               /* malloc'd (plain malloc: the receiver frees it with free()) */
    size_t body_len;
    af__route_t route;
    const char *allow;         /* for 405: static "GET, DELETE"..., else NULL */
    int retry_after;           /* seconds for a Retry-After header; 0 = none */
    int challenge;             /* 401: send WWW-Authenticate */
    int is_static;             /* the out-of-memory answer: not freed by af__dres_free() */
    int oip;                   /* a /v2 request: errors are {"error": "..."} */
    int has_infer_header;      /* OIP binary outputs: send Inference-Header-Content-Length */
    uint64_t infer_header_len; /* the JSON header's bytes at the start of the body */
} af__dres_t;

/* Called exactly once per request, on the loop thread, maybe before af__daemon_handle returns.
 * The callee owns res->body. */
typedef void (*af__dres_cb)(af__dres_t *res, void *arg);
/* Frees a response and its body (what every af__dres_cb must eventually call). */
void af__dres_free(af__dres_t *res);

/* Socket-free entry point: what the HTTP glue and the fuzz harness call. Loop thread only. */
void af__daemon_handle(af__daemon_t *d, const af__dreq_t *req, af__dres_cb cb, void *arg);

/* Splits a path into at most max segments (empty ones skipped). The count, or -1 above max. */
int af__path_split(const char *path, size_t len, const char **seg, size_t *segl, int max);

/* A pending answer: the response, its callback and argument. */
typedef struct af__reply {
    af__dres_t *res;
    af__dres_cb cb;
    void *arg;
} af__reply_t;

/* Answers with a JSON body (stolen; NULL = out of memory, answered 500). */
void af__reply_json(af__daemon_t *d, af__reply_t *r, int status, json_t *body);
/* Answers a text body (malloc'd, taken; NULL = out of memory, answered 500). */
void af__reply_text(af__daemon_t *d, af__reply_t *r, int status, const char *type, char *body,
                    size_t len);
/* Answers an error of a kind: its status, code and Retry-After from the table. */
void af__reply_error(af__daemon_t *d, af__reply_t *r, af__derr_t kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answers a library result rc (AF_E* or negative errno) through the table, with err's message
 * (or af_strerror) after the prefix. */
void af__reply_rc(af__daemon_t *d, af__reply_t *r, int rc, const af_error_t *err,
                  const char *prefix);
/* The plan report of an entry as a JSON object. */
json_t *af__entry_json(const af__entry_t *e, int with_report);
/* The nth value of key in the query (%XX and '+' decoded, cut at len - 1). 0, or -1: absent. */
int af__query_get(const af__dreq_t *r, const char *key, int nth, char *out, size_t len);

/* ---- submissions (submit.c) -------------------------------------------------------------- */

/* POST /v1/graphs: admission on the loop, parse + plan + write off it. */
void af__submit(af__daemon_t *d, const af__dreq_t *req, af__reply_t *r);
/* DELETE /v1/graphs/{id} (id valid): in the id's order; the file goes off the loop. */
void af__delete(af__daemon_t *d, const char *id, af__reply_t *r);

/* ---- runs (work.c) ----------------------------------------------------------------------- */

/* Runs rounds of e off the loop; answers 200 with latencies, or an error. */
void af__work_run(af__daemon_t *d, af__entry_t *e, int64_t rounds, int verify, af__reply_t *r);
/* Executor set-up and tear-down; 0 or an error code (the daemon still serves without runs). */
int af__work_init(af__daemon_t *d);
void af__work_fini(af__daemon_t *d);
/* SIGHUP: the next runs use new executors built from d->cfg; the old ones go when idle. */
void af__work_reconfigure(af__daemon_t *d);
/* Drops an entry's sessions (af__entry_unref calls it before freeing the entry). */
void af__work_entry_release(af__entry_t *e);
/* 1 when runs are available in this build. */
int af__work_can_run(void);
/* Appends the model server's families (plans, batches, instances) to a Prometheus buffer. */
void af__oip_metrics(af__daemon_t *d, char **b, size_t *l, size_t *c);
/* Appends pool/executor/plan-cache gauges to a Prometheus text buffer (may add nothing). */
void af__work_metrics(af__daemon_t *d, char **buf, size_t *len, size_t *cap);

/* ---- the daemon -------------------------------------------------------------------------- */

typedef struct af__idlock af__idlock_t; /* store.c */

struct af__daemon {
    uv_loop_t *loop;
    af__dcfg_t cfg;
    af__metrics_t metrics;
    af__tokens_t *tokens;  /* NULL = no authentication */
    af__entry_t **entries; /* listed entries, in insertion order */
    size_t n_entries, cap_entries;
    af__idlock_t *locks; /* ids with operations in progress */
    uint64_t held_bytes; /* estimated bytes of listed graphs + submissions being planned */
    int64_t active_runs;
    int64_t pending_plans;   /* submissions admitted and not yet answered */
    int64_t pending_deletes; /* deletions admitted and not yet answered */
    int64_t pending_renders; /* event tables and pictures being rendered */
    int64_t planning;        /* submissions past their id's turn, being planned and stored */
    int loading;             /* 1 while the state directory loads (answers 503 "loading") */
    int draining;
    atomic_int cancel_runs;  /* set on the loop thread when the drain times out; read by work */
    atomic_int cancel_plans; /* set at the drain timeout: planning and loading stop */
    atomic_uint_fast64_t parse_used; /* estimated parser bytes of submissions being parsed */
    int ready;
    uint64_t started_ns;
    void *exec;             /* executor state owned by work.c */
    af_plan_cache_t *plans; /* the library's plan cache, persisted in <state_dir>/plans */
    int32_t cache_warnings; /* plan cache warnings already logged */
    af_plan_cache_stats_t cache_stats; /* the last snapshot (cache_ops.c) */
    int64_t cache_jobs;                /* plan-cache work requests in flight */
    struct af__oip *oip;               /* the /v2 model server (oip_repo.c) */
};

/* A daemon without sockets: registry, metrics, executor; the state directory loads in the
 * background (d->ready becomes 1 once it is in). The caller runs the loop. */
int af__daemon_create(uv_loop_t *loop, const af__dcfg_t *cfg, af__daemon_t **out);
/* Waits (running the loop) for background work that touches the daemon, then frees it. */
void af__daemon_destroy(af__daemon_t *d);
/* SIGHUP with a validated configuration: applies everything but listen, state_dir and TLS
 * (logged). 0, or -1 with a message (then nothing changed). */
int af__daemon_reconfigure(af__daemon_t *d, const af__dcfg_t *n, char *err, size_t errlen);
/* Renders /metrics. Returns a malloc'd NUL-terminated string, or NULL on OOM. */
char *af__metrics_render(af__daemon_t *d, size_t *len);

/* Growable text buffer for the renderers (plain malloc). 0 or -1 on OOM. */
int af__buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
