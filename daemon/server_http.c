/*
 * arenaflowd HTTP glue: an h2o request becomes an af__dreq_t for af__daemon_handle(), and its
 * answer becomes the h2o response.
 *
 * HTTP/1.1 only, as documented: h2o's upgrade to HTTP/2 is off, so "Upgrade: h2c" is ignored
 * (the request is served as HTTP/1.1) and the HTTP/2 connection preface ("PRI * HTTP/2.0",
 * prior knowledge) is a 400; no ALPN protocol is offered over TLS, so TLS clients speak
 * HTTP/1.1 too. h2o buffers each request body (up to max_body; above it h2o answers 413 before
 * reading it) and bounds the time a request may take to arrive (request_timeout_ms: headers and
 * body together, so a slowloris client is cut off, idle keep-alive connections too).
 *
 * Framing: h2o takes the first Content-Length header and ignores the others, and prefers
 * Transfer-Encoding over Content-Length; a proxy in front may do otherwise, which is how a
 * second request gets smuggled inside a body. h2o does not keep the headers it used for
 * framing, so check_framing() reads the request's header block from the connection's input
 * buffer (for HTTP/1 the current request starts it): two different Content-Length values, two
 * Transfer-Encoding headers, or Transfer-Encoding with Content-Length are answered 400 and the
 * connection is closed after the answer.
 *
 * Client gone mid-run: h2o frees a request's memory pool when its connection closes. The answer
 * callback must then not touch the request. A small "waiter" (heap, two references) links the
 * two: the request pool holds one reference through a shared allocation whose dispose callback
 * clears waiter->req; the pending answer holds the other. Whoever drops the last frees it.
 * Loop thread only.
 */
#include "daemon/server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct waiter {
    h2o_req_t *req;
    int refs;
    int close; /* close the connection after the answer (bad framing) */
} waiter_t;

static void waiter_unref(waiter_t *w)
{
    if (--w->refs == 0)
        free(w);
}

static void waiter_dispose(void *p)
{
    waiter_t *w = *(waiter_t **)p;
    w->req = NULL;
    waiter_unref(w);
}

static void on_answer(af__dres_t *res, void *arg)
{
    waiter_t *w = arg;
    h2o_req_t *req = w->req;
    if (req) {
        af__dlog(AF__LOG_DEBUG, "%.*s %.*s -> %d", (int)req->method.len, req->method.base,
                 (int)(req->path.len > 200 ? 200 : req->path.len), req->path.base, res->status);
        req->res.status = res->status;
        req->res.reason = af__http_reason(res->status);
        const char *ct = res->content_type ? res->content_type : "text/plain";
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ct, strlen(ct));
        if (res->allow)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, res->allow,
                           strlen(res->allow));
        if (res->retry_after)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
                           H2O_STRLIT("1"));
        if (res->challenge)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                           H2O_STRLIT("Bearer realm=\"arenaflowd\""));
        if (res->has_infer_header) {
            char *v = h2o_mem_alloc_pool(&req->pool, 24);
            int n = snprintf(v, 24, "%llu", (unsigned long long)res->infer_header_len);
            h2o_add_header_by_str(&req->pool, &req->res.headers,
                                  H2O_STRLIT("inference-header-content-length"), 0, NULL, v,
                                  (size_t)n);
        }
        if (w->close)
            req->http1_is_persistent = 0;
        req->res.content_length = res->body ? res->body_len : 0;
        h2o_send_inline(req, res->body ? res->body : "", res->body ? res->body_len : 0);
    } else {
        af__dlog(AF__LOG_INFO, "client went away before its answer (status %d)", res->status);
    }
    af__dres_free(res);
    waiter_unref(w);
}

/* Value of a header line "name: value" (lowercase name, as h2o leaves it) or NULL. */
static const char *header_value(const char *line, size_t n, const char *name, size_t *vlen)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return NULL;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    *vlen = (size_t)(end - v);
    return v;
}

/* Compares every comma-separated element of a Content-Length value with *first (set by the
 * first one seen). 0 when they all agree. */
static int cl_agree(const char *v, size_t n, const char **first, size_t *first_len)
{
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && v[j] != ',')
            j++;
        size_t a = i, b = j;
        while (a < b && (v[a] == ' ' || v[a] == '\t'))
            a++;
        while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
            b--;
        if (!*first) {
            *first = v + a;
            *first_len = b - a;
        } else if (b - a != *first_len || memcmp(v + a, *first, b - a) != 0) {
            return -1;
        }
        i = j + 1;
    }
    return 0;
}

/* Why the request's framing is refused, or NULL. */
static const char *check_framing(h2o_req_t *req)
{
    h2o_socket_t *sock =
        req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (!sock || !sock->input)
        return NULL;
    const char *p = sock->input->bytes, *end = p + sock->input->size;
    const char *first = NULL;
    size_t first_len = 0;
    int n_cl = 0, n_te = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        size_t n = (size_t)(nl - p);
        if (n == 0 || (n == 1 && p[0] == '\r'))
            break; /* end of the header block */
        size_t vlen;
        const char *v;
        if ((v = header_value(p, n, "content-length", &vlen)) != NULL) {
            n_cl++;
            if (cl_agree(v, vlen, &first, &first_len) != 0)
                return "conflicting Content-Length headers";
        } else if (header_value(p, n, "transfer-encoding", &vlen)) {
            n_te++;
        }
        p = nl + 1;
    }
    if (n_te > 1)
        return "more than one Transfer-Encoding header";
    if (n_te && n_cl)
        return "both Transfer-Encoding and Content-Length";
    return NULL;
}

static void header_of(h2o_req_t *req, const h2o_token_t *tok, const char **v, size_t *n)
{
    ssize_t i = h2o_find_header(&req->headers, tok, -1);
    if (i >= 0) {
        *v = req->headers.entries[i].value.base;
        *n = req->headers.entries[i].value.len;
    }
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    waiter_t *w = calloc(1, sizeof(*w));
    if (!w) {
        h2o_send_error_generic(req, 503, "Service Unavailable", "out of memory", 0);
        return 0;
    }
    w->req = req;
    w->refs = 2;
    waiter_t **slot = h2o_mem_alloc_shared(&req->pool, sizeof(*slot), waiter_dispose);
    *slot = w;
    af__dreq_t r = {0};
    r.method = req->method.base;
    r.method_len = req->method.len;
    r.path = req->path_normalized.base;
    r.path_len = req->path_normalized.len;
    if (req->query_at != SIZE_MAX) {
        r.query = req->path.base + req->query_at + 1;
        r.query_len = req->path.len - req->query_at - 1;
    }
    header_of(req, H2O_TOKEN_CONTENT_TYPE, &r.content_type, &r.content_type_len);
    header_of(req, H2O_TOKEN_AUTHORIZATION, &r.authorization, &r.authorization_len);
    ssize_t ih =
        h2o_find_header_by_str(&req->headers, H2O_STRLIT("inference-header-content-length"), -1);
    if (ih >= 0) {
        r.infer_header = req->headers.entries[ih].value.base;
        r.infer_header_len = req->headers.entries[ih].value.len;
    }
    r.reject = check_framing(req);
    w->close = r.reject != NULL;
    r.body = req->entity.base ? req->entity.base : "";
    r.body_len = req->entity.base ? req->entity.len : 0;
    af__daemon_handle(af__srv.d, &r, on_answer, w);
    return 0;
}

void af__http_setup(const af__dcfg_t *cfg)
{
    h2o_config_init(&af__srv.config);
    af__srv.config.server_name = h2o_iovec_init(H2O_STRLIT("arenaflowd"));
    af__srv.config.http1.upgrade_to_http2 = 0; /* HTTP/1.1 only: no h2c, no prior knowledge */
    af__srv.config.max_request_entity_size = cfg->lim.max_body;
    af__srv.config.http1.req_timeout = (uint64_t)cfg->request_timeout_ms;
    af__srv.config.handshake_timeout = (uint64_t)cfg->request_timeout_ms;
    h2o_hostconf_t *host =
        h2o_config_register_host(&af__srv.config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(path, sizeof(*handler));
    handler->on_req = on_req;
}

void af__http_apply(const af__dcfg_t *cfg)
{
    af__srv.config.max_request_entity_size = cfg->lim.max_body;
    af__srv.config.http1.req_timeout = (uint64_t)cfg->request_timeout_ms;
    af__srv.ctx.http1.req_timeout.timeout = (uint64_t)cfg->request_timeout_ms;
    af__srv.config.handshake_timeout = (uint64_t)cfg->request_timeout_ms;
    af__srv.ctx.handshake_timeout.timeout = (uint64_t)cfg->request_timeout_ms;
}
