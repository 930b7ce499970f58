/*
 * arenaflowd answers: JSON and error bodies, the JSON views of a graph and its plan report, and
 * the query-string reader shared by the endpoints.
 *
 * Errors are JSON: {"error":{"status":404,"code":"not_found","message":"..."}}, or the Open
 * Inference Protocol's {"error":"..."} for /v2 requests (res->oip); the status,
 * the code and Retry-After come from the kind's row of the error table (errors.c). Messages
 * quote request bytes (paths, methods, names), so they are cleaned to valid UTF-8 first. Every
 * answer is counted in the metrics under its route template and status before the callback
 * runs. Loop thread only.
 */
#include "daemon/daemon_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void finish(af__daemon_t *d, af__reply_t *r)
{
    af__metrics_count(&d->metrics, r->res->route, r->res->status);
    r->cb(r->res, r->arg);
}

void af__reply_json(af__daemon_t *d, af__reply_t *r, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
    json_decref(body);
    af__dres_t *res = r->res;
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
    finish(d, r);
}

void af__reply_text(af__daemon_t *d, af__reply_t *r, int status, const char *type, char *body,
                    size_t len)
{
    r->res->status = body ? status : 500;
    r->res->content_type = type;
    r->res->body = body;
    r->res->body_len = body ? len : 0;
    finish(d, r);
}

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

static void reply_kind(af__daemon_t *d, af__reply_t *r, af__derr_t kind, const char *msg)
{
    char clean[AF_ERROR_MSG_MAX + 256];
    utf8_clean(msg, clean, sizeof(clean));
    int status = af__derr_status(kind);
    if (af__derr_retry(kind))
        r->res->retry_after = 1;
    if (kind == AF__DERR_UNAUTHORIZED)
        r->res->challenge = 1;
    d->metrics.rejected[kind]++;
    if (r->res->oip) { /* the Open Inference Protocol's error body, compact as its answers */
        json_t *j = json_pack("{s:s}", "error", clean);
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        return af__reply_text(d, r, status, "application/json", text, text ? strlen(text) : 0);
    }
    json_t *j = json_pack("{s:{s:i, s:s, s:s}}", "error", "status", status, "code",
                          af__derr_code(kind), "message", clean);
    af__reply_json(d, r, status, j);
}

void af__reply_error(af__daemon_t *d, af__reply_t *r, af__derr_t kind, const char *fmt, ...)
{
    char msg[AF_ERROR_MSG_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    reply_kind(d, r, kind, msg);
}

void af__reply_rc(af__daemon_t *d, af__reply_t *r, int rc, const af_error_t *err,
                  const char *prefix)
{
    char msg[AF_ERROR_MSG_MAX + 256];
    snprintf(msg, sizeof(msg), "%s%s%s", prefix ? prefix : "", prefix ? ": " : "",
             err && err->msg[0] ? err->msg : af_strerror(rc));
    reply_kind(d, r, af__derr_of(rc), msg);
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

/* ---- the query string -------------------------------------------------------------------- */

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

int af__query_get(const af__dreq_t *r, const char *key, int nth, char *out, size_t len)
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
