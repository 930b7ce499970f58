/*
 * arenaflowd HTTP API, independent of sockets: af__daemon_handle() takes a method, a path, a
 * query, a content type, an Authorization value and a body, and answers through a callback. The
 * h2o glue (server_http.c) and the fuzz harness both call it; nothing here knows about
 * connections.
 *
 * A request goes through four gates, in this order, before its handler runs:
 *   1. framing: the HTTP layer may have found the request's framing unacceptable (two different
 *      Content-Length values, Content-Length with Transfer-Encoding): 400;
 *   2. routing: one table of (method, route, role, handler); the path is split into at most
 *      four segments ("v1", "graphs", id, action) and matched against the route templates of
 *      AF__ROUTE_MAP. A path that matches with another method answers 405 with an Allow list;
 *      no match is 404. An {id} must be 32 lowercase hex digits, else it is unknown (404), so an
 *      empty id, a NUL byte or "../" never reaches a handler or a file name;
 *   3. authentication, when [auth] tokens are configured: the row's role (none, read, admin)
 *      against the bearer token's: no valid token is 401 (with WWW-Authenticate), a read token
 *      on an admin route 403;
 *   4. state: until the state directory is loaded, /v1 answers 503 "loading".
 * Every error goes through the error table (errors.c). The plan's event table and its picture
 * are rendered off the loop thread (they grow with the graph). Loop thread only.
 */
#include "daemon/daemon_int.h"
#include "daemon/oip_int.h"

#if defined(__has_include)
#if __has_include("arenaflow/render.h")
#include "arenaflow/render.h"
#define AF_DAEMON_HAVE_SVG 1
#endif
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run request bodies are {"rounds": N, "verify": B}: anything longer is not one. */
#define RUN_BODY_MAX 4096

typedef struct ctx {
    af__daemon_t *d;
    const af__dreq_t *req;
    af__entry_t *entry; /* for routes with {id} */
    const char *id;     /* valid id (NUL-terminated copy), for routes with {id} */
    af__reply_t r;
} ctx_t;

typedef void (*handler_fn)(ctx_t *c);

static void fail(ctx_t *c, af__derr_t kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(ctx_t *c, af__derr_t kind, const char *fmt, ...)
{
    char msg[AF_ERROR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    af__reply_error(c->d, &c->r, kind, "%s", msg);
}

static void text(ctx_t *c, int status, const char *s)
{
    af__reply_text(c->d, &c->r, status, "text/plain; charset=utf-8", strdup(s), strlen(s));
}

/* ---- rendering off the loop (events.csv, memory.svg) ----------------------------------- */

typedef struct render {
    uv_work_t w;
    af__daemon_t *d;
    af__entry_t *e;
    af__reply_t r;
    int svg;
    int width, height;
    int rc;
    af_error_t err;
    char *text;
    size_t len;
} render_t;

static void render_work(uv_work_t *w)
{
    render_t *j = w->data;
    FILE *f = open_memstream(&j->text, &j->len);
    if (!f) {
        j->rc = AF_ENOMEM;
        return;
    }
#ifdef AF_DAEMON_HAVE_SVG
    if (j->svg) {
        af_render_opts_t ro;
        af_render_opts_init(&ro);
        if (j->width)
            ro.width = j->width;
        if (j->height)
            ro.height = j->height;
        j->rc = af_plan_render_svg(j->e->plan, NULL, &ro, f, &j->err);
    }
#endif
    if (!j->svg)
        j->rc = af_plan_write_events_csv(j->e->plan, f, &j->err);
    if (fclose(f) != 0 && j->rc == 0)
        j->rc = AF_ENOMEM;
}

static void render_after(uv_work_t *w, int status)
{
    render_t *j = w->data;
    af__daemon_t *d = j->d;
    d->pending_renders--;
    if (j->rc == 0 && status != 0)
        j->rc = status;
    if (j->rc != 0) {
        free(j->text);
        af__reply_rc(d, &j->r, j->rc, &j->err,
                     j->svg ? "cannot draw the plan" : "cannot write the events");
    } else {
        af__reply_text(d, &j->r, 200, j->svg ? "image/svg+xml" : "text/csv; charset=utf-8", j->text,
                       j->len);
    }
    af__entry_unref(j->e);
    free(j);
}

static void render(ctx_t *c, int svg)
{
    if (c->d->pending_renders >= c->d->cfg.max_pending_plans)
        return fail(c, AF__DERR_TOO_MANY, "%" PRId64 " plans are being rendered; retry later",
                    c->d->pending_renders);
    render_t *j = calloc(1, sizeof(*j));
    if (!j)
        return fail(c, AF__DERR_BUSY, "out of memory");
    *j = (render_t){.d = c->d, .e = c->entry, .r = c->r, .svg = svg};
    j->w.data = j;
    char v[16];
    /* optional picture size: ?width=W&height=H (pixels, bounded) */
    if (af__query_get(c->req, "width", 0, v, sizeof(v)) == 0 && atoi(v) >= 100 && atoi(v) <= 8000)
        j->width = atoi(v);
    if (af__query_get(c->req, "height", 0, v, sizeof(v)) == 0 && atoi(v) >= 100 && atoi(v) <= 8000)
        j->height = atoi(v);
    int rc = uv_queue_work(c->d->loop, &j->w, render_work, render_after);
    if (rc != 0) {
        free(j);
        return af__reply_rc(c->d, &c->r, rc, NULL, "cannot queue the work");
    }
    af__entry_ref(c->entry);
    c->d->pending_renders++;
}

/* ---- handlers ---------------------------------------------------------------------------- */

static void h_submit(ctx_t *c)
{
    af__submit(c->d, c->req, &c->r);
}

static void h_list(ctx_t *c)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < c->d->n_entries; i++)
        json_array_append_new(arr, af__entry_json(c->d->entries[i], 0));
    af__reply_json(c->d, &c->r, 200,
                   json_pack("{s:o, s:i}", "graphs", arr, "count", (int)c->d->n_entries));
}

static void h_get(ctx_t *c)
{
    af__reply_json(c->d, &c->r, 200, af__entry_json(c->entry, 1));
}

static void h_delete(ctx_t *c)
{
    af__delete(c->d, c->id, &c->r);
}

static void h_events(ctx_t *c)
{
    render(c, 0);
}

static void h_svg(ctx_t *c)
{
#ifdef AF_DAEMON_HAVE_SVG
    render(c, 1);
#else
    fail(c, AF__DERR_NOT_BUILT, "the memory picture (SVG renderer) is not built into this daemon");
#endif
}

static void h_run(ctx_t *c)
{
    const af__dreq_t *r = c->req;
    if (c->d->draining)
        return fail(c, AF__DERR_DRAINING, "shutting down: not starting runs");
    if (!af__work_can_run())
        return fail(c, AF__DERR_NOT_BUILT,
                    "the executor is not built into this daemon: runs are unavailable");
    if (r->body_len > RUN_BODY_MAX)
        return fail(c, AF__DERR_TOO_LARGE, "a run request is at most %d bytes", RUN_BODY_MAX);
    json_int_t rounds = 1;
    int verify = 0;
    if (r->body_len > 0) {
        json_error_t je;
        json_t *j = json_loadb(r->body, r->body_len, 0, &je);
        if (!j)
            return fail(c, AF__DERR_BAD_REQUEST, "malformed JSON at line %d column %d: %s", je.line,
                        je.column, je.text);
        int rc =
            json_unpack_ex(j, &je, JSON_STRICT, "{s?I, s?b}", "rounds", &rounds, "verify", &verify);
        json_decref(j);
        if (rc != 0)
            return fail(c, AF__DERR_BAD_REQUEST,
                        "bad run request: %s (expected {\"rounds\": int, \"verify\": bool})",
                        je.text);
    }
    if (rounds < 1 || rounds > c->d->cfg.max_rounds)
        return fail(c, AF__DERR_BAD_REQUEST, "rounds must be in 1..%" PRId64, c->d->cfg.max_rounds);
    if (c->d->active_runs >= c->d->cfg.max_runs)
        return fail(c, AF__DERR_TOO_MANY,
                    "%" PRId64 " runs in flight (max_concurrent_runs); retry later",
                    c->d->active_runs);
    af__work_run(c->d, c->entry, rounds, verify, &c->r);
}

static void h_metrics(ctx_t *c)
{
    size_t len = 0;
    char *t = af__metrics_render(c->d, &len);
    af__reply_text(c->d, &c->r, 200, "text/plain; version=0.0.4; charset=utf-8", t, len);
}

static void h_healthz(ctx_t *c)
{
    text(c, 200, "ok\n");
}

static void h_readyz(ctx_t *c)
{
    if (c->d->draining)
        return text(c, 503, "draining\n");
    if (!c->d->ready)
        return text(c, 503,
                    c->d->loading ? "loading\n"
                                  : "not ready: the state directory did "
                                    "not load (see the log)\n");
    text(c, 200, "ready\n");
}

/* ---- routing ----------------------------------------------------------------------------- */

typedef struct route_row {
    const char *method;
    af__route_t route;
    af__role_t role; /* needed when authentication is on */
    handler_fn fn;
} route_row_t;

static const route_row_t routes[] = {
    {"POST", AF__ROUTE_GRAPHS, AF__ROLE_ADMIN, h_submit},
    {"GET", AF__ROUTE_GRAPHS, AF__ROLE_READ, h_list},
    {"GET", AF__ROUTE_GRAPH, AF__ROLE_READ, h_get},
    {"DELETE", AF__ROUTE_GRAPH, AF__ROLE_ADMIN, h_delete},
    {"POST", AF__ROUTE_RUN, AF__ROLE_ADMIN, h_run},
    {"GET", AF__ROUTE_EVENTS, AF__ROLE_READ, h_events},
    {"GET", AF__ROUTE_SVG, AF__ROLE_READ, h_svg},
    {"GET", AF__ROUTE_METRICS, AF__ROLE_READ, h_metrics},
    {"GET", AF__ROUTE_HEALTHZ, AF__ROLE_NONE, h_healthz},
    {"GET", AF__ROUTE_READYZ, AF__ROLE_NONE, h_readyz},
};

static const char *const allow_lists[AF__ROUTE_COUNT] = {
    [AF__ROUTE_GRAPHS] = "GET, POST", [AF__ROUTE_GRAPH] = "GET, DELETE",
    [AF__ROUTE_RUN] = "POST",         [AF__ROUTE_EVENTS] = "GET",
    [AF__ROUTE_SVG] = "GET",          [AF__ROUTE_METRICS] = "GET",
    [AF__ROUTE_HEALTHZ] = "GET",      [AF__ROUTE_READYZ] = "GET",
};

static int seg_is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* Maps a path to a route; id and idlen get the {id} segment (NULL and 0 when there is none). */
int af__path_split(const char *path, size_t len, const char **seg, size_t *segl, int max)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && path[i] == '/')
            i++;
        if (i == len)
            break;
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        if (n == max)
            return -1;
        seg[n] = path + i;
        segl[n++] = j - i;
        i = j;
    }
    return n;
}

static af__route_t match(const char *path, size_t len, const char **id, size_t *idlen)
{
    const char *seg[5];
    size_t segl[5];
    *id = NULL;
    *idlen = 0;
    int n = af__path_split(path, len, seg, segl, 5);
    if (n < 0)
        return AF__ROUTE_OTHER;
    if (n == 1 && seg_is(seg[0], segl[0], "metrics"))
        return AF__ROUTE_METRICS;
    if (n == 1 && seg_is(seg[0], segl[0], "healthz"))
        return AF__ROUTE_HEALTHZ;
    if (n == 1 && seg_is(seg[0], segl[0], "readyz"))
        return AF__ROUTE_READYZ;
    if (n < 2 || !seg_is(seg[0], segl[0], "v1") || !seg_is(seg[1], segl[1], "graphs"))
        return AF__ROUTE_OTHER;
    if (n == 2)
        return AF__ROUTE_GRAPHS;
    *id = seg[2];
    *idlen = segl[2];
    if (n == 3)
        return AF__ROUTE_GRAPH;
    if (n == 4 && seg_is(seg[3], segl[3], "run"))
        return AF__ROUTE_RUN;
    if (n == 4 && seg_is(seg[3], segl[3], "events.csv"))
        return AF__ROUTE_EVENTS;
    if (n == 4 && seg_is(seg[3], segl[3], "memory.svg"))
        return AF__ROUTE_SVG;
    *id = NULL;
    *idlen = 0;
    return AF__ROUTE_OTHER;
}

/* Gate 3. 0 when the request may go on; else it was answered. */
static int authorize(ctx_t *c, const route_row_t *row)
{
    if (!c->d->tokens || row->role == AF__ROLE_NONE)
        return 0;
    af__role_t have =
        af__tokens_role(c->d->tokens, c->req->authorization, c->req->authorization_len);
    if (have == AF__ROLE_NONE) {
        fail(c, AF__DERR_UNAUTHORIZED, "%s: send \"Authorization: Bearer TOKEN\"",
             c->req->authorization ? "the bearer token is not valid" : "authentication required");
        return -1;
    }
    if (have < row->role) {
        fail(c, AF__DERR_FORBIDDEN, "a read-only token cannot %.*s here; use an admin token",
             (int)(c->req->method_len > 16 ? 16 : c->req->method_len), c->req->method);
        return -1;
    }
    return 0;
}

static const route_row_t *find_row(af__route_t route, const af__dreq_t *req)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(routes); i++)
        if (routes[i].route == route && seg_is(req->method, req->method_len, routes[i].method))
            return &routes[i];
    return NULL;
}

void af__daemon_handle(af__daemon_t *d, const af__dreq_t *req, af__dres_cb cb, void *arg)
{
    af__dres_t *res = calloc(1, sizeof(*res));
    static af__dres_t oom; /* only when even the response struct cannot be allocated */
    if (!res) {
        memset(&oom, 0, sizeof(oom));
        oom.status = 503;
        oom.retry_after = 1;
        oom.content_type = "text/plain";
        oom.is_static = 1;
        cb(&oom, arg);
        return;
    }
    ctx_t c = {.d = d, .req = req, .r = {res, cb, arg}};
    if (req->path_len >= 3 && memcmp(req->path, "/v2", 3) == 0 &&
        (req->path_len == 3 || req->path[3] == '/'))
        return af__oip_handle(d, req, &c.r); /* the Open Inference Protocol (oip.c) */
    const char *id;
    size_t idlen;
    res->route = match(req->path, req->path_len, &id, &idlen);
    if (req->reject)
        return fail(&c, AF__DERR_BAD_REQUEST, "%s", req->reject);
    const route_row_t *row = find_row(res->route, req);
    if (!row && res->route == AF__ROUTE_OTHER)
        return fail(&c, AF__DERR_NOT_FOUND, "no such endpoint: %.*s",
                    (int)(req->path_len > 200 ? 200 : req->path_len), req->path);
    if (!row) {
        res->allow = allow_lists[res->route];
        return fail(&c, AF__DERR_METHOD, "method %.*s not allowed here; use %s",
                    (int)(req->method_len > 16 ? 16 : req->method_len), req->method, res->allow);
    }
    if (authorize(&c, row) != 0)
        return;
    if (!d->ready && res->route <= AF__ROUTE_SVG) /* the /v1 routes come first in the map */
        return fail(&c, AF__DERR_LOADING, "%s",
                    d->loading ? "loading the stored graphs; retry shortly"
                               : "the state directory did not load (see the log)");
    char idbuf[AF__ID_LEN + 1];
    if (id) {
        if (!af__id_valid(id, idlen))
            return fail(&c, AF__DERR_NOT_FOUND,
                        "unknown graph id '%.*s' (an id is 32 lowercase hex digits)",
                        (int)(idlen > 64 ? 64 : idlen), id);
        memcpy(idbuf, id, AF__ID_LEN);
        idbuf[AF__ID_LEN] = '\0';
        c.id = idbuf;
        c.entry = af__store_find(d, idbuf);
        if (!c.entry && row->fn != h_delete)
            return fail(&c, AF__DERR_NOT_FOUND, "unknown graph id '%s'", idbuf);
    }
    row->fn(&c);
}
