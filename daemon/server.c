/*
 * arenaflowd main: H2O (the libuv build, Debian's libh2o) on one libuv loop, signals, drain and
 * reload.
 *
 * HTTP: h2o parses HTTP/1.1 and buffers each request body (up to max_body; above it h2o itself
 * answers 413 before the body is read). One handler registered at "/" turns the h2o request into
 * an af__dreq_t and calls af__daemon_handle(); the answer may come later (plans and runs finish
 * off the loop), so the handler returns without responding and the answer callback responds.
 *
 * Client gone mid-run: h2o frees a request's memory pool when its connection closes. The answer
 * callback must then not touch the request. A small "waiter" (heap, two references) links the
 * two: the request pool holds one reference through a shared allocation whose dispose callback
 * clears waiter->req; the pending answer holds the other. Whoever drops the last frees it.
 *
 * Signals (uv_signal_t, so handlers run on the loop thread as ordinary callbacks):
 *   SIGTERM/SIGINT: stop accepting (close the listener), mark draining (new work gets 503,
 *     /readyz 503), wait for runs and plans in flight up to drain_timeout_ms, then ask the runs
 *     left to stop after their current round, answer them, flush, and leave the loop: exit 0.
 *   SIGHUP: reload the config file into a fresh struct; on any error keep the running config and
 *     log why. listen and state_dir need a restart (logged); limits, planner and log level apply
 *     to the next request.
 */
#include "daemon/daemon_int.h"

#include <h2o.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct server {
    h2o_globalconf_t config;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    uv_tcp_t listener;
    int listening;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t drain_timer;
    uint64_t drain_started_ns;
    int drain_phase; /* 0 running, 1 waiting for work, 2 flushing */
    af__daemon_t *d;
    af__dcli_t cli;
} server_t;

static server_t srv;

/* ---- requests ---------------------------------------------------------------------------- */

typedef struct waiter {
    h2o_req_t *req;
    int refs;
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

static const struct {
    int status;
    const char *reason;
} reasons[] = {
    {200, "OK"},
    {201, "Created"},
    {400, "Bad Request"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {413, "Payload Too Large"},
    {429, "Too Many Requests"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {503, "Service Unavailable"},
};

static const char *reason_of(int status)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(reasons); i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Unknown";
}

static void on_answer(af__dres_t *res, void *arg)
{
    waiter_t *w = arg;
    h2o_req_t *req = w->req;
    if (req)
        af__dlog(AF__LOG_DEBUG, "%.*s %.*s -> %d", (int)req->method.len, req->method.base,
                 (int)(req->path.len > 200 ? 200 : req->path.len), req->path.base, res->status);
    if (req) {
        req->res.status = res->status;
        req->res.reason = reason_of(res->status);
        const char *ct = res->content_type ? res->content_type : "text/plain";
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ct, strlen(ct));
        if (res->allow)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, res->allow,
                           strlen(res->allow));
        if (res->status == 429 || res->status == 503)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
                           H2O_STRLIT("1"));
        req->res.content_length = res->body ? res->body_len : 0;
        h2o_send_inline(req, res->body ? res->body : "", res->body ? res->body_len : 0);
    } else {
        af__dlog(AF__LOG_INFO, "client went away before its answer (status %d)", res->status);
    }
    af__dres_free(res);
    waiter_unref(w);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    waiter_t *w = malloc(sizeof(*w));
    if (!w) {
        h2o_send_error_generic(req, 500, "Internal Server Error", "out of memory", 0);
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
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (ct >= 0) {
        r.content_type = req->headers.entries[ct].value.base;
        r.content_type_len = req->headers.entries[ct].value.len;
    }
    r.body = req->entity.base ? req->entity.base : "";
    r.body_len = req->entity.base ? req->entity.len : 0;
    af__daemon_handle(srv.d, &r, on_answer, w);
    return 0;
}

/* ---- listener ---------------------------------------------------------------------------- */

static void on_accept(uv_stream_t *listener, int status)
{
    if (status != 0)
        return;
    uv_tcp_t *conn = h2o_mem_alloc(sizeof(*conn));
    uv_tcp_init(listener->loop, conn);
    if (uv_accept(listener, (uv_stream_t *)conn) != 0) {
        uv_close((uv_handle_t *)conn, (uv_close_cb)free);
        return;
    }
    h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)conn, (uv_close_cb)free);
    h2o_accept(&srv.accept_ctx, sock);
}

static int parse_listen(const char *s, struct sockaddr_storage *ss)
{
    char host[AF__DCFG_STR];
    const char *colon = strrchr(s, ':');
    if (!colon)
        return UV_EINVAL;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || colon == s)
        return UV_EINVAL;
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
        snprintf(host, sizeof(host), "%.*s", (int)(hl - 2), s + 1);
        return uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss);
    }
    snprintf(host, sizeof(host), "%.*s", (int)hl, s);
    return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss);
}

static int start_listener(uv_loop_t *loop, const char *addr)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    int rc = parse_listen(addr, &ss);
    if (rc != 0) {
        af__dlog(AF__LOG_ERROR, "bad listen address '%s' (want HOST:PORT or [V6]:PORT)", addr);
        return rc;
    }
    uv_tcp_init(loop, &srv.listener);
    if ((rc = uv_tcp_bind(&srv.listener, (struct sockaddr *)&ss, 0)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&srv.listener, 128, on_accept)) != 0) {
        af__dlog(AF__LOG_ERROR, "cannot listen on %s: %s", addr, uv_strerror(rc));
        uv_close((uv_handle_t *)&srv.listener, NULL);
        return rc;
    }
    srv.listening = 1;
    struct sockaddr_storage got;
    int len = sizeof(got);
    char ip[64] = "?";
    int port = 0;
    uv_tcp_getsockname(&srv.listener, (struct sockaddr *)&got, &len);
    if (got.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&got, ip, sizeof(ip));
        port = ntohs(((struct sockaddr_in6 *)&got)->sin6_port);
        af__dlog(AF__LOG_INFO, "listening on http://[%s]:%d", ip, port);
    } else {
        uv_ip4_name((struct sockaddr_in *)&got, ip, sizeof(ip));
        port = ntohs(((struct sockaddr_in *)&got)->sin_port);
        af__dlog(AF__LOG_INFO, "listening on http://%s:%d", ip, port);
    }
    return 0;
}

/* ---- signals ----------------------------------------------------------------------------- */

static void stop_signals(void)
{
    uv_signal_stop(&srv.sig_term);
    uv_signal_stop(&srv.sig_int);
    uv_signal_stop(&srv.sig_hup);
}

static void on_drain_tick(uv_timer_t *t)
{
    af__daemon_t *d = srv.d;
    if (srv.drain_phase == 2) { /* answers written: leave the loop */
        uv_timer_stop(t);
        uv_stop(t->loop);
        return;
    }
    double waited_ms = (double)(af_now_ns() - srv.drain_started_ns) / 1e6;
    if (d->active_runs > 0 || d->pending_plans > 0) {
        if (waited_ms > (double)d->cfg.drain_timeout_ms && !atomic_load(&d->cancel_runs)) {
            af__dlog(AF__LOG_WARN, "drain timeout: stopping %lld runs after their current round",
                     (long long)d->active_runs);
            atomic_store(&d->cancel_runs, 1);
        }
        return;
    }
    af__dlog(AF__LOG_INFO, "drained in %.0f ms; exiting", waited_ms);
    srv.drain_phase = 2; /* one more tick lets h2o flush the last answers */
}

static void on_term(uv_signal_t *s, int signum)
{
    if (srv.drain_phase)
        return;
    af__dlog(AF__LOG_INFO, "%s: draining (%lld runs, %lld plans in flight)", strsignal(signum),
             (long long)srv.d->active_runs, (long long)srv.d->pending_plans);
    srv.d->draining = 1;
    srv.drain_phase = 1;
    srv.drain_started_ns = af_now_ns();
    if (srv.listening) {
        uv_close((uv_handle_t *)&srv.listener, NULL);
        srv.listening = 0;
    }
    uv_timer_start(&srv.drain_timer, on_drain_tick, 0, 20);
    (void)s;
}

static void on_hup(uv_signal_t *s, int signum)
{
    (void)s;
    (void)signum;
    af__daemon_t *d = srv.d;
    af__dcfg_t n;
    char err[512];
    if (!srv.cli.config) {
        af__dlog(AF__LOG_WARN, "SIGHUP: no --config file to reload");
        return;
    }
    if (af__dcfg_load(&n, &srv.cli, err, sizeof(err)) != 0) {
        af__dlog(AF__LOG_ERROR, "SIGHUP: reload failed, keeping the old configuration: %s", err);
        return;
    }
    if (strcmp(n.listen, d->cfg.listen) != 0 || strcmp(n.state_dir, d->cfg.state_dir) != 0)
        af__dlog(AF__LOG_WARN, "SIGHUP: listen and state_dir changes take effect at restart");
    memcpy(n.listen, d->cfg.listen, sizeof(n.listen));
    memcpy(n.state_dir, d->cfg.state_dir, sizeof(n.state_dir));
    d->cfg = n;
    srv.config.max_request_entity_size = n.max_body;
    af__dlog_set_level(n.log_level);
    af__dlog(AF__LOG_INFO,
             "SIGHUP: configuration reloaded from %s (max_body %llu, max_concurrent_runs %lld)",
             srv.cli.config, (unsigned long long)n.max_body, (long long)n.max_runs);
}

/* ---- main -------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: arenaflowd [--config FILE] [--listen HOST:PORT] [--state-dir DIR]\n"
               "  --config FILE      INI file (see configs/arenaflowd.ini); SIGHUP reloads it\n"
               "  --listen HOST:PORT address to serve on (default 127.0.0.1:8080; port 0 = any)\n"
               "  --state-dir DIR    where graphs are kept across restarts (default: none)\n"
               "  --version          print the version and exit\n");
}

static int parse_args(int argc, char **argv, af__dcli_t *cli)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},    {"listen", required_argument, NULL, 'l'},
        {"state-dir", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},         {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:l:s:hV", longs, NULL)) != -1) {
        switch (ch) {
        case 'c':
            cli->config = optarg;
            break;
        case 'l':
            cli->listen = optarg;
            break;
        case 's':
            cli->state_dir = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case 'V':
            printf("arenaflowd %s\n", af_version());
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "arenaflowd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    af__dcfg_t cfg;
    char err[512];
    if (parse_args(argc, argv, &srv.cli) != 0)
        return 2;
    if (af__dcfg_load(&cfg, &srv.cli, err, sizeof(err)) != 0) {
        fprintf(stderr, "arenaflowd: %s\n", err);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    uv_loop_t *loop = uv_default_loop();
    af__dlog_set_level(cfg.log_level);
    int rc = af__daemon_create(loop, &cfg, &srv.d);
    if (rc != 0) {
        af__dlog(AF__LOG_ERROR, "cannot start: %s", af_strerror(rc));
        return 1;
    }
    h2o_config_init(&srv.config);
    srv.config.max_request_entity_size = cfg.max_body;
    srv.config.server_name = h2o_iovec_init(H2O_STRLIT("arenaflowd"));
    h2o_hostconf_t *host =
        h2o_config_register_host(&srv.config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(path, sizeof(*handler));
    handler->on_req = on_req;
    h2o_context_init(&srv.ctx, loop, &srv.config);
    srv.accept_ctx.ctx = &srv.ctx;
    srv.accept_ctx.hosts = srv.config.hosts;
    if (start_listener(loop, cfg.listen) != 0) {
        af__daemon_destroy(srv.d);
        return 1;
    }
    uv_timer_init(loop, &srv.drain_timer);
    uv_signal_init(loop, &srv.sig_term);
    uv_signal_init(loop, &srv.sig_int);
    uv_signal_init(loop, &srv.sig_hup);
    uv_signal_start(&srv.sig_term, on_term, SIGTERM);
    uv_signal_start(&srv.sig_int, on_term, SIGINT);
    uv_signal_start(&srv.sig_hup, on_hup, SIGHUP);
    af__dlog(AF__LOG_INFO, "arenaflowd %s ready (pid %d, %zu graphs)", af_version(), (int)getpid(),
             srv.d->n_entries);
    uv_run(loop, UV_RUN_DEFAULT);
    stop_signals();
    /* Open keep-alive connections belong to h2o and die with the process; our own state is
     * released so leak checkers see only what h2o keeps. */
    af__daemon_destroy(srv.d);
    af__dlog(AF__LOG_INFO, "bye");
    return 0;
}
