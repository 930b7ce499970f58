/*
 * arenaflowd submissions and deletions.
 *
 * A submission (POST /v1/graphs) goes through three steps; only the cheap checks run on the loop
 * thread, so no body, however built, stalls the other clients:
 *   1. admission (loop): draining, body size, submissions in progress (max_pending_plans); the
 *      body is copied (h2o frees the request if the client goes away) and the rest goes off
 *      the loop;
 *   2. parse (threadpool): the parser memory the body needs is estimated (limits.c) and
 *      reserved from max_parse_bytes (413 when one body alone needs more, 503 "busy" while
 *      others hold it); then JSON or ONNX is parsed, the graph checked against the per-graph
 *      limits (422) and fingerprinted: now its id is known;
 *   3. in the id's turn (af__id_run: submissions and deletions of one id run one after another)
 *      on the loop: a listed id is a cache hit (200); else max_graphs (429) and max_plans_bytes
 *      (507) are checked and the graph's estimated bytes reserved; then off the loop again, the
 *      plan comes from the plan cache under a time limit (max_plan_ms: the planner's interrupt
 *      hook abandons it, 422), is checked against max_arena_bytes (422), the graph file is
 *      written (unique temp file, fsync, rename, fsync) and the plan file checked on disk and
 *      fsync'd. Only when every write succeeded is the graph listed and answered 201; a failed
 *      write answers 507 and lists nothing.
 * A deletion waits for its id's turn too, unlists the graph and removes its file off the loop;
 * it answers 200 once the removal is durable (a failed removal lists the graph again: 507).
 *
 * Lock rule: work callbacks touch only their job (which owns a copy of everything it needs:
 * body, limits, planner options, directory) and the thread-safe plan cache; the parse budget
 * and the cancel flag are atomics of the daemon. Everything else runs on the loop thread.
 */
#include "daemon/daemon_int.h"

#if defined(__has_include)
#if __has_include("arenaflow/onnx.h")
#include "arenaflow/onnx.h"
#define AF_DAEMON_HAVE_ONNX 1
#endif
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ONNX_INPUTS 32

typedef struct sub {
    af__op_t op; /* the id's turn */
    uv_work_t w;
    af__daemon_t *d;
    af__reply_t r;
    /* copied at admission */
    char *body;
    size_t body_len;
    int onnx;
    char inputs[MAX_ONNX_INPUTS][256];
    int n_inputs;
    af__limits_t lim;
    af_plan_opts_t opts;
    char *planner;
    char state_dir[AF__DCFG_STR];
    af_plan_cache_t *cache;
    atomic_uint_fast64_t *parse_used;
    atomic_int *cancel;
    /* results */
    int rc;          /* library result, answered through the table */
    af__derr_t kind; /* or a kind of the daemon's own, when has_kind */
    int has_kind;
    af_error_t err;
    char msg[AF_ERROR_MSG_MAX + 256];
    af_graph_t *graph;
    char *text; /* canonical JSON of the graph (fingerprinted, then written) */
    char id[AF__ID_LEN + 1];
    uint64_t held;
    int held_reserved, planning;
    const af_plan_t *plan;
    uint64_t plan_started_ns;
    int timed_out;
    int32_t warn_from;
    af__cache_view_t view;
} sub_t;

static void sub_free(sub_t *s)
{
    af__cache_release(s->d, s->cache, s->plan);
    af__cache_apply(s->d, &s->view);
    af_graph_destroy(s->graph);
    af_free(s->text);
    free(s->body);
    free(s->planner);
    free(s);
}

static void set_kind(sub_t *s, af__derr_t kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_kind(sub_t *s, af__derr_t kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
    va_end(ap);
    s->kind = kind;
    s->has_kind = 1;
}

/* Answers the submission's error and frees it (loop thread). */
static void sub_fail(af__daemon_t *d, sub_t *s, const char *prefix)
{
    if (s->has_kind)
        af__reply_error(d, &s->r, s->kind, "%s", s->msg);
    else
        af__reply_rc(d, &s->r, s->rc, &s->err, prefix);
    d->pending_plans--;
    sub_free(s);
}

/* ---- step 2: parse (threadpool) --------------------------------------------------------- */

static int reserve_parse(sub_t *s, uint64_t need)
{
    uint_fast64_t used = atomic_load(s->parse_used);
    do {
        if (used + need > s->lim.max_parse_bytes)
            return -1;
    } while (!atomic_compare_exchange_weak(s->parse_used, &used, used + need));
    return 0;
}

static int parse_body(sub_t *s)
{
    if (!s->onnx)
        return af_graph_parse_json(s->body, s->body_len, &s->graph, &s->err);
#ifdef AF_DAEMON_HAVE_ONNX
    const char *inputs[MAX_ONNX_INPUTS];
    for (int i = 0; i < s->n_inputs; i++)
        inputs[i] = s->inputs[i];
    af_onnx_opts_t oo;
    af_onnx_opts_init(&oo);
    oo.inputs = inputs;
    oo.n_inputs = s->n_inputs;
    /* v1 graphs are plans: the state directory keeps the structure (canonical JSON) and a
     * restart must load the same graph the submission planned, so the weights are not kept
     * (this also spares the copy of every weight af_onnx_load_mem would make). */
    oo.skip_data = 1;
    oo.dims_flag = "?input="; /* where this request takes dims */
    int rc = af_onnx_load_mem(s->body, s->body_len, &oo, &s->graph, &s->err);
    if (rc != 0) { /* the prefix goes in front of the importer's message */
        snprintf(s->msg, sizeof(s->msg), "invalid ONNX model: %s",
                 s->err.msg[0] ? s->err.msg : af_strerror(rc));
    }
    return rc;
#else
    return af__err(&s->err, AF_ENOTSUP, "ONNX import is not built into this daemon");
#endif
}

static void parse_work(uv_work_t *w)
{
    sub_t *s = w->data;
    uint64_t need = s->onnx ? af__onnx_cost(s->body_len) : af__json_cost(s->body, s->body_len);
    if (need > s->lim.max_parse_bytes)
        return set_kind(s, AF__DERR_TOO_LARGE,
                        "parsing this %zu-byte body would take about %" PRIu64
                        " MiB; max_parse_bytes is %" PRIu64 " MiB",
                        s->body_len, need >> 20, s->lim.max_parse_bytes >> 20);
    if (reserve_parse(s, need) != 0)
        return set_kind(s, AF__DERR_BUSY,
                        "other submissions are being parsed (max_parse_bytes); retry shortly");
    s->rc = parse_body(s);
    atomic_fetch_sub(s->parse_used, need);
    free(s->body);
    s->body = NULL;
    if (s->rc != 0)
        return;
    if (af__limits_check(&s->lim, s->graph, &s->kind, s->msg, sizeof(s->msg)) != 0) {
        s->has_kind = 1;
        return;
    }
    /* names that are not UTF-8 cannot be written as JSON: the client's error (400) */
    if ((s->rc = af_graph_to_json(s->graph, &s->text, &s->err)) != 0)
        return;
    size_t n = strlen(s->text);
    /* The graph planned and fingerprinted is the one its stored text reads back as, so a
     * restart finds the same id and the same plan file (an ONNX graph's canonical form drops
     * importer-only details such as the reasons of dynamic tensors). */
    af_graph_t *canon = NULL;
    if ((s->rc = af_graph_parse_json(s->text, n, &canon, &s->err)) != 0)
        return;
    af_graph_destroy(s->graph);
    s->graph = canon;
    if ((s->rc = af__fingerprint_graph(s->graph, s->planner, s->id)) != 0)
        return;
    s->held = af__held_estimate(s->graph, n);
}

/* ---- step 3: plan and store (threadpool) ------------------------------------------------ */

static int plan_interrupt(void *arg)
{
    sub_t *s = arg;
    if (atomic_load(s->cancel))
        return 1;
    uint64_t now = af_now_ns();
    if (!s->plan_started_ns) { /* the first call is at the start of planning */
        s->plan_started_ns = now;
        return 0;
    }
    if (now - s->plan_started_ns > (uint64_t)s->lim.max_plan_ms * 1000000u)
        s->timed_out = 1;
    return s->timed_out;
}

static void plan_work(uv_work_t *w)
{
    sub_t *s = w->data;
    s->opts.interrupt = plan_interrupt;
    s->opts.interrupt_arg = s;
    s->rc = af_plan_cache_get(s->cache, s->graph, &s->opts, &s->plan, NULL, &s->err);
    af__cache_snapshot(s->cache, &s->view, s->warn_from);
    if (s->rc == AF_ECANCELED && s->timed_out) {
        s->rc = af__err(&s->err, AF_ETIMEDOUT,
                        "planning took longer than max_plan_ms (%" PRId64
                        " ms) and was abandoned; raise [limits] max_plan_ms or simplify the graph",
                        s->lim.max_plan_ms);
        return;
    }
    if (s->rc != 0)
        return;
    uint64_t arena = af_plan_arena_bytes(s->plan);
    if (arena > s->lim.max_arena_bytes)
        return set_kind(s, AF__DERR_LIMIT,
                        "the planned arena has %" PRIu64 " bytes; max_arena_bytes is %" PRIu64,
                        arena, s->lim.max_arena_bytes);
    if (!s->opts.verify && (s->rc = af_plan_verify(s->plan, &s->err)) != 0)
        return;
    if ((s->rc = af__store_write(s->state_dir, s->id, s->text, s->planner, &s->err)) != 0)
        return;
    s->rc = af__store_plan_durable(s->state_dir, af_plan_fingerprint(s->graph, &s->opts), &s->err);
    if (s->rc != 0) /* the graph must not come back at restart without being acknowledged */
        af__store_unlink(s->state_dir, s->id, NULL);
}

static void answer_entry(af__daemon_t *d, af__reply_t *r, af__entry_t *e, int created)
{
    json_t *body = af__entry_json(e, 1);
    if (body)
        json_object_set_new(body, "cache", json_string(created ? "miss" : "hit"));
    af__reply_json(d, r, created ? 201 : 200, body);
}

static void plan_after(uv_work_t *w, int status)
{
    sub_t *s = w->data;
    af__daemon_t *d = s->d;
    char id[AF__ID_LEN + 1];
    memcpy(id, s->id, sizeof(id));
    d->held_bytes -= s->held;
    d->planning--;
    af__cache_apply(d, &s->view);
    if (status != 0 && s->rc == 0 && !s->has_kind)
        s->rc = status;
    af__entry_t *e = NULL;
    if (s->rc == 0 && !s->has_kind &&
        (!(e = af__entry_new(s->id, s->cache, s->plan, s->planner, s->held)) ||
         af__store_add(d, e) != 0)) {
        if (e) {
            e->plan = NULL;
            e->planner = NULL;
            af__entry_unref(e);
            e = NULL;
        }
        af__store_unlink(s->state_dir, s->id, NULL); /* rare: keep disk and list agreeing */
        s->rc = af__err(&s->err, AF_ENOMEM, "out of memory");
    }
    if (!e) {
        d->metrics.plans_failed++;
        d->metrics.plans_timed_out += s->rc == AF_ETIMEDOUT;
        sub_fail(d, s, "cannot plan and store the graph");
    } else {
        s->plan = NULL;
        s->planner = NULL;
        d->metrics.cache_misses++;
        af__dlog(AF__LOG_INFO, "graph %s planned: %d nodes, arena %" PRIu64 " bytes", e->id,
                 af_graph_node_count(e->graph), af_plan_arena_bytes(e->plan));
        answer_entry(d, &s->r, e, 1);
        d->pending_plans--;
        sub_free(s);
    }
    af__id_release(d, id);
}

/* The submission's turn on its id (loop thread). */
static void sub_locked(af__daemon_t *d, af__op_t *op)
{
    sub_t *s = (sub_t *)(void *)((char *)op - offsetof(sub_t, op));
    char id[AF__ID_LEN + 1];
    memcpy(id, s->id, sizeof(id));
    af__entry_t *e = af__store_find(d, id);
    if (e) {
        e->hits++;
        d->metrics.cache_hits++;
        answer_entry(d, &s->r, e, 0);
        d->pending_plans--;
        sub_free(s);
    } else if (d->draining) {
        set_kind(s, AF__DERR_DRAINING, "shutting down: not accepting graphs");
        sub_fail(d, s, NULL);
    } else if ((int64_t)d->n_entries + d->planning >= d->cfg.max_graphs) {
        set_kind(s, AF__DERR_TOO_MANY,
                 "graph limit reached (max_graphs = %" PRId64 "); delete a graph first",
                 d->cfg.max_graphs);
        sub_fail(d, s, NULL);
    } else if (d->held_bytes + s->held > d->cfg.max_plans_bytes) {
        set_kind(s, AF__DERR_STORAGE,
                 "the graphs kept hold about %" PRIu64 " MiB and this one needs %" PRIu64
                 " MiB more; max_plans_bytes is %" PRIu64 " MiB: delete a graph first",
                 d->held_bytes >> 20, (s->held + (1u << 20) - 1) >> 20,
                 d->cfg.max_plans_bytes >> 20);
        sub_fail(d, s, NULL);
    } else {
        s->warn_from = d->cache_warnings;
        int rc = uv_queue_work(d->loop, &s->w, plan_work, plan_after);
        if (rc == 0) {
            d->held_bytes += s->held;
            d->planning++;
            return; /* holds the id until plan_after */
        }
        s->rc = rc;
        sub_fail(d, s, "cannot queue the work");
    }
    af__id_release(d, id);
}

static void parse_after(uv_work_t *w, int status)
{
    sub_t *s = w->data;
    af__daemon_t *d = s->d;
    if (status != 0 && s->rc == 0 && !s->has_kind)
        s->rc = status;
    if (s->rc != 0 || s->has_kind) {
        if (s->rc == AF_ENOMEM && !s->has_kind)
            set_kind(s, AF__DERR_BUSY, "out of memory parsing the graph; retry later");
        if (s->onnx && !s->has_kind && s->msg[0]) { /* the message already says what was wrong */
            snprintf(s->err.msg, sizeof(s->err.msg), "%.*s", (int)sizeof(s->err.msg) - 1, s->msg);
            return sub_fail(d, s, NULL);
        }
        return sub_fail(d, s, s->rc == AF_ENOMEM ? NULL : "invalid graph");
    }
    s->op.fn = sub_locked;
    if (af__id_run(d, s->id, &s->op) != 0) {
        set_kind(s, AF__DERR_BUSY, "out of memory");
        sub_fail(d, s, NULL);
    }
}

/* ---- step 1: admission (loop) ---------------------------------------------------------- */

static int ctype_is(const af__dreq_t *r, const char *want)
{
    size_t n = strlen(want);
    return r->content_type && r->content_type_len >= n &&
           strncasecmp(r->content_type, want, n) == 0;
}

void af__submit(af__daemon_t *d, const af__dreq_t *req, af__reply_t *r)
{
    if (d->draining)
        return af__reply_error(d, r, AF__DERR_DRAINING, "shutting down: not accepting graphs");
    if (req->body_len > d->cfg.lim.max_body)
        return af__reply_error(d, r, AF__DERR_TOO_LARGE,
                               "body of %zu bytes exceeds max_body (%" PRIu64 ")", req->body_len,
                               d->cfg.lim.max_body);
    if (req->body_len == 0)
        return af__reply_error(d, r, AF__DERR_BAD_REQUEST,
                               "empty body: send a JSON graph or ONNX bytes");
    if (d->pending_plans >= d->cfg.max_pending_plans)
        return af__reply_error(d, r, AF__DERR_TOO_MANY,
                               "%" PRId64 " graphs are being planned; retry later",
                               d->pending_plans);
    char fmtq[16] = "";
    af__query_get(req, "format", 0, fmtq, sizeof(fmtq));
    int onnx = ctype_is(req, "application/onnx") || ctype_is(req, "application/octet-stream") ||
               strcmp(fmtq, "onnx") == 0;
#ifdef AF_DAEMON_HAVE_ONNX
    if (onnx && !af_onnx_available())
#else
    if (onnx)
#endif
        return af__reply_error(d, r, AF__DERR_NOT_BUILT,
                               "ONNX import is not built into this daemon; send a JSON graph");
    char planner[AF__DCFG_MAX_PLANNER * 100];
    af__dcfg_planner_string(&d->cfg, planner, sizeof(planner));
    sub_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->body = malloc(req->body_len)) || !(s->planner = strdup(planner))) {
        if (s)
            sub_free(s);
        return af__reply_error(d, r, AF__DERR_BUSY, "out of memory");
    }
    memcpy(s->body, req->body, req->body_len);
    s->body_len = req->body_len;
    s->onnx = onnx;
    while (s->n_inputs < MAX_ONNX_INPUTS &&
           af__query_get(req, "input", s->n_inputs, s->inputs[s->n_inputs], sizeof(s->inputs[0])) ==
               0)
        s->n_inputs++;
    s->d = d;
    s->r = *r;
    s->w.data = s;
    s->lim = d->cfg.lim;
    s->opts = d->cfg.plan_opts;
    s->cache = d->plans;
    s->parse_used = &d->parse_used;
    s->cancel = &d->cancel_plans;
    snprintf(s->state_dir, sizeof(s->state_dir), "%s", d->cfg.state_dir);
    int rc = uv_queue_work(d->loop, &s->w, parse_work, parse_after);
    if (rc != 0) {
        sub_free(s);
        return af__reply_rc(d, r, rc, NULL, "cannot queue the work");
    }
    d->pending_plans++;
}

/* ---- deletions --------------------------------------------------------------------------- */

typedef struct del {
    af__op_t op;
    uv_work_t w;
    af__daemon_t *d;
    af__reply_t r;
    char id[AF__ID_LEN + 1];
    char state_dir[AF__DCFG_STR];
    af__entry_t *e;
    int rc;
    af_error_t err;
} del_t;

static void del_work(uv_work_t *w)
{
    del_t *x = w->data;
    x->rc = af__store_unlink(x->state_dir, x->id, &x->err);
}

static void del_after(uv_work_t *w, int status)
{
    del_t *x = w->data;
    af__daemon_t *d = x->d;
    if (status != 0 && x->rc == 0)
        x->rc = status;
    af__entry_t *e = x->e;
    if (x->rc != 0 && af__store_add(d, e) == 0) { /* the file stays: so does the graph */
        af__reply_rc(d, &x->r, x->rc, &x->err, "cannot delete the graph (it stays listed)");
    } else {
        if (x->rc != 0)
            af__dlog(AF__LOG_ERROR, "graph %s: %s", x->id, x->err.msg);
        af__reply_json(d, &x->r, 200, json_pack("{s:s, s:b}", "id", x->id, "deleted", 1));
        af__entry_unref(e);
    }
    d->pending_deletes--;
    char id[AF__ID_LEN + 1];
    memcpy(id, x->id, sizeof(id));
    free(x);
    af__id_release(d, id);
}

static void del_locked(af__daemon_t *d, af__op_t *op)
{
    del_t *x = (del_t *)(void *)((char *)op - offsetof(del_t, op));
    char id[AF__ID_LEN + 1];
    memcpy(id, x->id, sizeof(id));
    x->e = af__store_find(d, id);
    int rc = -1;
    if (!x->e) {
        af__reply_error(d, &x->r, AF__DERR_NOT_FOUND, "unknown graph id '%s'", id);
    } else {
        af__entry_ref(x->e); /* the job's reference: the entry may be listed again */
        af__store_unlist(d, x->e);
        rc = uv_queue_work(d->loop, &x->w, del_work, del_after);
        if (rc == 0)
            return; /* holds the id until del_after */
        af__store_add(d, x->e);
        af__reply_rc(d, &x->r, rc, NULL, "cannot queue the work");
    }
    d->pending_deletes--;
    free(x);
    af__id_release(d, id);
}

void af__delete(af__daemon_t *d, const char *id, af__reply_t *r)
{
    if (d->draining)
        return af__reply_error(d, r, AF__DERR_DRAINING, "shutting down: not deleting");
    if (d->pending_deletes >= d->cfg.max_pending_plans)
        return af__reply_error(d, r, AF__DERR_TOO_MANY,
                               "%" PRId64 " deletions in progress; retry later",
                               d->pending_deletes);
    del_t *x = calloc(1, sizeof(*x));
    if (!x)
        return af__reply_error(d, r, AF__DERR_BUSY, "out of memory");
    x->d = d;
    x->r = *r;
    x->w.data = x;
    x->op.fn = del_locked;
    snprintf(x->id, sizeof(x->id), "%s", id);
    snprintf(x->state_dir, sizeof(x->state_dir), "%s", d->cfg.state_dir);
    d->pending_deletes++;
    if (af__id_run(d, id, &x->op) != 0) {
        d->pending_deletes--;
        free(x);
        af__reply_error(d, r, AF__DERR_BUSY, "out of memory");
    }
}
