/*
 * arenaflowd HTTP API, independent of sockets: af__daemon_handle() takes a method, a path, a
 * query, a content type and a body, and answers through a callback. The h2o glue (server.c) and
 * the fuzz harness both call it; nothing here knows about connections.
 *
 * Routing is one table of (method, route, handler); the path is split into at most four segments
 * ("v1", "graphs", id, action) and matched against the route templates of AF__ROUTE_MAP. A path
 * that matches a route with another method answers 405 with an Allow list; no match is 404.
 *
 * Errors are JSON: {"error":{"status":404,"code":"not_found","message":"..."}}. Every answer is
 * counted in the metrics under its route template and status before the callback runs.
 * Loop thread only.
 */
#include "daemon/daemon_int.h"

#if defined(__has_include)
#if __has_include("arenaflow/onnx.h")
#include "arenaflow/onnx.h"
#define AF_DAEMON_HAVE_ONNX 1
#endif
#if __has_include("arenaflow/render.h")
#include "arenaflow/render.h"
#define AF_DAEMON_HAVE_SVG 1
#endif
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctx {
    af__daemon_t *d;
    const af__dreq_t *req;
    af__entry_t *entry; /* for routes with {id} */
    af__dres_t *res;
    af__dres_cb cb;
    void *arg;
} ctx_t;

typedef void (*handler_fn)(ctx_t *c);

static void finish(af__daemon_t *d, af__dres_t *res, af__dres_cb cb, void *arg)
{
    af__metrics_count(&d->metrics, res->route, res->status);
    cb(res, arg);
}

static void respond_text(ctx_t *c, int status, const char *type, char *body, size_t len)
{
    c->res->status = status;
    c->res->content_type = type;
    c->res->body = body;
    c->res->body_len = len;
    finish(c->d, c->res, c->cb, c->arg);
}

void af__respond_json(af__daemon_t *d, af__dres_t *res, int status, json_t *body, af__dres_cb cb,
                      void *arg)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
    json_decref(body);
    if (!text) {
        status = 500;
        text = strdup("{\"error\":{\"status\":500,\"code\":\"internal\",\"message\":\"out of "
                      "memory\"}}");
    }
    res->status = status;
    res->content_type = "application/json";
    res->body = text;
    res->body_len = text ? strlen(text) : 0;
    if (res->body_len && res->body) {
        /* a trailing newline makes curl output readable; JSON parsers ignore it */
        char *n = realloc(res->body, res->body_len + 2);
        if (n) {
            n[res->body_len++] = '\n';
            n[res->body_len] = '\0';
            res->body = n;
        }
    }
    finish(d, res, cb, arg);
}

static const struct {
    int status;
    const char *code;
} error_codes[] = {
    {400, "bad_request"},     {404, "not_found"},         {405, "method_not_allowed"},
    {413, "too_large"},       {429, "too_many_requests"}, {500, "internal"},
    {501, "not_implemented"}, {503, "unavailable"},
};

/* Length (1..4) of the well-formed UTF-8 sequence at s, as jansson accepts it, or 0. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0 || cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0; /* overlong, out of range or a surrogate */
    return n;
}

/* Copies msg into out, each byte that starts no valid UTF-8 sequence replaced by '?': error
 * messages quote paths, methods and names from the request, and json_pack rejects bad UTF-8. */
static void utf8_clean(const char *msg, char *out, size_t cap)
{
    const unsigned char *s = (const unsigned char *)msg;
    size_t o = 0;
    while (*s && o + 5 < cap) {
        size_t n = utf8_seq(s);
        if (n == 0) {
            out[o++] = '?';
            s++;
        } else {
            memcpy(out + o, s, n);
            o += n;
            s += n;
        }
    }
    out[o] = '\0';
}

void af__respond_error(af__daemon_t *d, af__dres_t *res, int status, const char *code,
                       const char *msg, af__dres_cb cb, void *arg)
{
    char clean[AF_ERROR_MSG_MAX + 128];
    utf8_clean(msg, clean, sizeof(clean));
    msg = clean;
    if (!code) {
        code = "error";
        for (size_t i = 0; i < AF_ARRAY_SIZE(error_codes); i++)
            if (error_codes[i].status == status)
                code = error_codes[i].code;
    }
    json_t *j =
        json_pack("{s:{s:i, s:s, s:s}}", "error", "status", status, "code", code, "message", msg);
    af__respond_json(d, res, status, j, cb, arg);
}

static void fail(ctx_t *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(ctx_t *c, int status, const char *fmt, ...)
{
    char msg[AF_ERROR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    af__respond_error(c->d, c->res, status, NULL, msg, c->cb, c->arg);
}

/* ---- JSON views ------------------------------------------------------------------------ */

static json_t *report_json(const af_plan_t *p)
{
    const af_plan_report_t *r = af_plan_report(p);
    json_t *j = json_object();
    json_object_set_new(j, "tensors", json_integer(r->tensors));
    json_object_set_new(j, "nodes", json_integer(r->nodes));
    json_object_set_new(j, "arena_tensors", json_integer(r->arena_tensors));
    json_object_set_new(j, "dynamic_tensors", json_integer(r->dynamic_tensors));
    json_object_set_new(j, "constant_bytes", json_integer((json_int_t)r->constant_bytes));
    json_object_set_new(j, "naive_bytes", json_integer((json_int_t)r->naive_bytes));
    json_object_set_new(j, "input_order_bytes", json_integer((json_int_t)r->input_order_bytes));
    json_object_set_new(j, "shared_object_bytes", json_integer((json_int_t)r->shared_object_bytes));
    json_object_set_new(j, "arena_bytes", json_integer((json_int_t)r->arena_bytes));
    json_object_set_new(j, "lower_bound_bytes", json_integer((json_int_t)r->lower_bound_bytes));
    json_object_set_new(j, "any_order_bound_bytes",
                        json_integer((json_int_t)r->any_order_bound_bytes));
    json_object_set_new(j, "peak_step", json_integer(r->peak_step));
    json_object_set_new(j, "schedule", json_string(r->schedule ? r->schedule : ""));
    json_object_set_new(j, "placer", json_string(r->placer ? r->placer : ""));
    json_object_set_new(j, "schedule_optimal", json_boolean(r->schedule_optimal));
    json_object_set_new(j, "reuse_edges", json_integer(r->reuse_edges));
    json_object_set_new(j, "arena_over_lower_bound",
                        json_real(r->lower_bound_bytes
                                      ? (double)r->arena_bytes / (double)r->lower_bound_bytes
                                      : 1.0));
    json_t *ms = json_pack("{s:f, s:f, s:f, s:f, s:f}", "schedule", r->schedule_ms, "lifetime",
                           r->lifetime_ms, "place", r->place_ms, "verify", r->verify_ms, "total",
                           r->total_ms);
    json_object_set_new(j, "time_ms", ms);
    return j;
}

json_t *af__entry_json(const af__entry_t *e, int with_report)
{
    /* Names come from user input (an ONNX graph name may be any bytes): never let one break the
     * answer; json_pack's "s" would fail on invalid UTF-8. */
    json_t *name = json_string(af_graph_name(e->graph));
    if (!name)
        name = json_string("(name is not valid UTF-8)");
    json_t *j = json_pack(
        "{s:s, s:o, s:i, s:i, s:I, s:I, s:I, s:I, s:s}", "id", e->id, "name", name, "nodes",
        af_graph_node_count(e->graph), "tensors", af_graph_tensor_count(e->graph), "arena_bytes",
        (json_int_t)af_plan_arena_bytes(e->plan), "created", (json_int_t)e->created_unix, "runs",
        (json_int_t)e->runs, "rounds", (json_int_t)e->rounds, "planner", e->planner);
    if (j && with_report)
        json_object_set_new(j, "report", report_json(e->plan));
    return j;
}

/* ---- handlers ---------------------------------------------------------------------------- */

static int ctype_is(const af__dreq_t *r, const char *want)
{
    size_t n = strlen(want);
    return r->content_type && r->content_type_len >= n &&
           strncasecmp(r->content_type, want, n) == 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * The nth value of `key` in the query ("k=v&k=v", %XX and '+' decoded), copied into out (cut at
 * len - 1 bytes). Returns 0, or -1 when absent. The query is not NUL-terminated.
 */
static int query_get(const af__dreq_t *r, const char *key, int nth, char *out, size_t len)
{
    if (!r->query)
        return -1;
    size_t klen = strlen(key), i = 0;
    while (i < r->query_len) {
        size_t j = i;
        while (j < r->query_len && r->query[j] != '&')
            j++;
        const char *v = r->query + i + klen + 1;
        if (j - i > klen && strncmp(r->query + i, key, klen) == 0 && r->query[i + klen] == '=' &&
            nth-- == 0) {
            size_t vlen = j - i - klen - 1, o = 0;
            for (size_t k = 0; k < vlen && o + 1 < len; k++) {
                int hi, lo;
                if (v[k] == '%' && k + 2 < vlen && (hi = hexval(v[k + 1])) >= 0 &&
                    (lo = hexval(v[k + 2])) >= 0) {
                    out[o++] = (char)(hi * 16 + lo);
                    k += 2;
                } else {
                    out[o++] = v[k] == '+' ? ' ' : v[k];
                }
            }
            out[o] = '\0';
            return 0;
        }
        i = j + 1;
    }
    return -1;
}

static void h_submit(ctx_t *c)
{
    const af__dreq_t *r = c->req;
    af_error_t err;
    af_error_clear(&err);
    if (c->d->draining)
        return fail(c, 503, "shutting down: not accepting graphs");
    if (r->body_len > c->d->cfg.max_body)
        return fail(c, 413, "body of %zu bytes exceeds max_body (%" PRIu64 ")", r->body_len,
                    c->d->cfg.max_body);
    if (r->body_len == 0)
        return fail(c, 400, "empty body: send a JSON graph or ONNX bytes");
    if (c->d->pending_plans >= c->d->cfg.max_pending_plans)
        return fail(c, 429, "%" PRId64 " graphs are being planned; retry later",
                    c->d->pending_plans);
    af_graph_t *g = NULL;
    char fmtq[16] = "";
    query_get(r, "format", 0, fmtq, sizeof(fmtq));
    int onnx = ctype_is(r, "application/onnx") || ctype_is(r, "application/octet-stream") ||
               strcmp(fmtq, "onnx") == 0;
    if (onnx) {
#ifdef AF_DAEMON_HAVE_ONNX
        char dims[32][256];
        const char *inputs[32];
        int n = 0;
        while (n < 32 && query_get(r, "input", n, dims[n], sizeof(dims[n])) == 0) {
            inputs[n] = dims[n];
            n++;
        }
        if (!af_onnx_available())
            return fail(c, 501, "ONNX import is not built into this daemon; send a JSON graph");
        af_onnx_opts_t oo;
        af_onnx_opts_init(&oo);
        oo.inputs = inputs;
        oo.n_inputs = n;
        if (af_onnx_load_mem(r->body, r->body_len, &oo, &g, &err) != 0)
            return fail(c, err.code == AF_ENOMEM ? 500 : 400, "invalid ONNX model: %s", err.msg);
#else
        return fail(c, 501, "ONNX import is not built into this daemon; send a JSON graph");
#endif
    } else if (af_graph_parse_json(r->body, r->body_len, &g, &err) != 0) {
        return fail(c, 400, "invalid graph: %s", err.msg);
    }
    af__work_submit(c->d, g, c->res, c->cb, c->arg);
}

static void h_list(ctx_t *c)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < c->d->n_entries; i++)
        json_array_append_new(arr, af__entry_json(c->d->entries[i], 0));
    af__respond_json(c->d, c->res, 200,
                     json_pack("{s:o, s:i}", "graphs", arr, "count", (int)c->d->n_entries), c->cb,
                     c->arg);
}

static void h_get(ctx_t *c)
{
    af__respond_json(c->d, c->res, 200, af__entry_json(c->entry, 1), c->cb, c->arg);
}

static void h_delete(ctx_t *c)
{
    if (c->d->draining)
        return fail(c, 503, "shutting down");
    json_t *j = json_pack("{s:s, s:b}", "id", c->entry->id, "deleted", 1);
    af__store_remove(c->d, c->entry);
    af__respond_json(c->d, c->res, 200, j, c->cb, c->arg);
}

static void h_events(ctx_t *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    af_error_t err;
    af_error_clear(&err);
    int rc = f ? af_plan_write_events_csv(c->entry->plan, f, &err) : AF_ENOMEM;
    if (f)
        fclose(f);
    if (rc != 0) {
        free(text);
        return fail(c, 500, "cannot write events: %s", err.msg);
    }
    respond_text(c, 200, "text/csv; charset=utf-8", text, len);
}

static void h_svg(ctx_t *c)
{
#ifdef AF_DAEMON_HAVE_SVG
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    af_error_t err;
    af_error_clear(&err);
    af_render_opts_t ro;
    af_render_opts_init(&ro);
    char v[16];
    /* optional picture size: ?width=W&height=H (pixels, bounded) */
    if (query_get(c->req, "width", 0, v, sizeof(v)) == 0 && atoi(v) >= 100 && atoi(v) <= 8000)
        ro.width = atoi(v);
    if (query_get(c->req, "height", 0, v, sizeof(v)) == 0 && atoi(v) >= 100 && atoi(v) <= 8000)
        ro.height = atoi(v);
    int rc = f ? af_plan_render_svg(c->entry->plan, NULL, &ro, f, &err) : AF_ENOMEM;
    if (f)
        fclose(f);
    if (rc != 0) {
        free(text);
        return fail(c, 500, "cannot draw the plan: %s", err.msg);
    }
    respond_text(c, 200, "image/svg+xml", text, len);
#else
    fail(c, 501, "the memory picture (SVG renderer) is not built into this daemon");
#endif
}

static void h_run(ctx_t *c)
{
    const af__dreq_t *r = c->req;
    if (c->d->draining)
        return fail(c, 503, "shutting down: not starting runs");
    if (!af__work_can_run())
        return fail(c, 501, "the executor is not built into this daemon: runs are unavailable");
    json_int_t rounds = 1;
    int verify = 0;
    if (r->body_len > 0) {
        json_error_t je;
        json_t *j = json_loadb(r->body, r->body_len, 0, &je);
        if (!j)
            return fail(c, 400, "malformed JSON at line %d column %d: %s", je.line, je.column,
                        je.text);
        int rc =
            json_unpack_ex(j, &je, JSON_STRICT, "{s?I, s?b}", "rounds", &rounds, "verify", &verify);
        json_decref(j);
        if (rc != 0)
            return fail(c, 400,
                        "bad run request: %s (expected {\"rounds\": int, \"verify\": "
                        "bool})",
                        je.text);
    }
    if (rounds < 1 || rounds > c->d->cfg.max_rounds)
        return fail(c, 400, "rounds must be in 1..%" PRId64, c->d->cfg.max_rounds);
    if (c->d->active_runs >= c->d->cfg.max_runs)
        return fail(c, 429, "%" PRId64 " runs in flight (max_concurrent_runs); retry later",
                    c->d->active_runs);
    af__work_run(c->d, c->entry, rounds, verify, c->res, c->cb, c->arg);
}

static void h_metrics(ctx_t *c)
{
    size_t len = 0;
    char *text = af__metrics_render(c->d, &len);
    if (!text)
        return fail(c, 500, "out of memory");
    respond_text(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

static void h_healthz(ctx_t *c)
{
    respond_text(c, 200, "text/plain; charset=utf-8", strdup("ok\n"), 3);
}

static void h_readyz(ctx_t *c)
{
    if (c->d->draining)
        return respond_text(c, 503, "text/plain; charset=utf-8", strdup("draining\n"), 9);
    if (!c->d->ready)
        return respond_text(c, 503, "text/plain; charset=utf-8", strdup("loading\n"), 8);
    respond_text(c, 200, "text/plain; charset=utf-8", strdup("ready\n"), 6);
}

/* ---- routing ----------------------------------------------------------------------------- */

typedef struct route_row {
    const char *method;
    af__route_t route;
    handler_fn fn;
} route_row_t;

static const route_row_t routes[] = {
    {"POST", AF__ROUTE_GRAPHS, h_submit},  {"GET", AF__ROUTE_GRAPHS, h_list},
    {"GET", AF__ROUTE_GRAPH, h_get},       {"DELETE", AF__ROUTE_GRAPH, h_delete},
    {"POST", AF__ROUTE_RUN, h_run},        {"GET", AF__ROUTE_EVENTS, h_events},
    {"GET", AF__ROUTE_SVG, h_svg},         {"GET", AF__ROUTE_METRICS, h_metrics},
    {"GET", AF__ROUTE_HEALTHZ, h_healthz}, {"GET", AF__ROUTE_READYZ, h_readyz},
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

/* Maps a path to a route; copies the {id} segment into id (empty when none). */
static af__route_t match(const char *path, size_t len, char *id, size_t idlen)
{
    const char *seg[5];
    size_t segl[5];
    int n = 0;
    size_t i = 0;
    id[0] = '\0';
    while (i < len) {
        while (i < len && path[i] == '/')
            i++;
        if (i == len)
            break;
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        if (n == 5)
            return AF__ROUTE_OTHER;
        seg[n] = path + i;
        segl[n++] = j - i;
        i = j;
    }
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
    snprintf(id, idlen, "%.*s", (int)(segl[2] < idlen ? segl[2] : idlen - 1), seg[2]);
    if (segl[2] >= idlen)
        id[0] = '?'; /* too long to be an id: stays unknown */
    if (n == 3)
        return AF__ROUTE_GRAPH;
    if (n == 4 && seg_is(seg[3], segl[3], "run"))
        return AF__ROUTE_RUN;
    if (n == 4 && seg_is(seg[3], segl[3], "events.csv"))
        return AF__ROUTE_EVENTS;
    if (n == 4 && seg_is(seg[3], segl[3], "memory.svg"))
        return AF__ROUTE_SVG;
    return AF__ROUTE_OTHER;
}

void af__daemon_handle(af__daemon_t *d, const af__dreq_t *req, af__dres_cb cb, void *arg)
{
    af__dres_t *res = calloc(1, sizeof(*res));
    static af__dres_t oom; /* only when even the response struct cannot be allocated */
    if (!res) {
        memset(&oom, 0, sizeof(oom));
        oom.status = 500;
        oom.content_type = "text/plain";
        oom.is_static = 1;
        cb(&oom, arg);
        return;
    }
    char id[AF__ID_LEN + 2];
    ctx_t c = {d, req, NULL, res, cb, arg};
    res->route = match(req->path, req->path_len, id, sizeof(id));
    const route_row_t *row = NULL;
    for (size_t i = 0; i < AF_ARRAY_SIZE(routes); i++)
        if (routes[i].route == res->route && seg_is(req->method, req->method_len, routes[i].method))
            row = &routes[i];
    if (!row && res->route == AF__ROUTE_OTHER)
        return fail(&c, 404, "no such endpoint: %.*s",
                    (int)(req->path_len > 200 ? 200 : req->path_len), req->path);
    if (!row) {
        res->allow = allow_lists[res->route];
        return fail(&c, 405, "method %.*s not allowed here; use %s",
                    (int)(req->method_len > 16 ? 16 : req->method_len), req->method, res->allow);
    }
    if (id[0]) {
        c.entry = af__store_find(d, id);
        if (!c.entry)
            return fail(&c, 404, "unknown graph id '%s'", id);
    }
    row->fn(&c);
}
