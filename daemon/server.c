/*
 * arenaflowd main: H2O (the libuv build, Debian's libh2o, which links OpenSSL 3) on one libuv
 * loop: the listener, TLS, the connection cap, signals (drain and reload).
 *
 * Listener: loopback by default (127.0.0.1:8080), and the start-up log says whether the address
 * is loopback-only and whether authentication and TLS are on; a non-loopback address without
 * [auth] tokens is served, with a warning that anyone who reaches it may delete every graph.
 * More than max_connections open connections: a new one is answered 503 (plain HTTP) or closed
 * (TLS) at once. TLS: with [server] tls_cert and tls_key, h2o does the handshake (TLS 1.2+) on
 * every connection and no ALPN protocol is offered, so the connection speaks HTTP/1.1.
 *
 * Signals (uv_signal_t, so handlers run on the loop thread as ordinary callbacks):
 *   SIGTERM/SIGINT: stop accepting (close the listener), mark draining (new work gets 503,
 *     /readyz 503), wait for runs, plans, deletions and the start-up load in flight up to
 *     drain_timeout_ms, then ask the runs left to stop after their current round and the plans
 *     to stop, answer them, flush, and leave the loop: exit 0.
 *   SIGHUP: reload the config file into a fresh struct (and the tokens file and the TLS
 *     certificate); on any error keep the running configuration and log why. listen and
 *     state_dir need a restart (logged); everything else applies: limits, planner, log level,
 *     tokens, TLS certificate, request timeout, and [executor] / fast_kernels (new runs get new
 *     executors) and plan_cache_bytes.
 */
#include "daemon/oip_int.h"
#include "daemon/server_int.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

server_t af__srv;

/* ---- listener ---------------------------------------------------------------------------- */

static void on_conn_closed(uv_handle_t *h)
{
    af__srv.connections--;
    free(h);
}

static void on_refused_closed(uv_handle_t *h)
{
    free(h);
}

static void on_accept(uv_stream_t *listener, int status)
{
    if (status != 0)
        return;
    uv_tcp_t *conn = h2o_mem_alloc(sizeof(*conn));
    uv_tcp_init(listener->loop, conn);
    if (uv_accept(listener, (uv_stream_t *)conn) != 0) {
        uv_close((uv_handle_t *)conn, on_refused_closed);
        return;
    }
    if (af__srv.connections >= af__srv.d->cfg.max_connections) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                                   "Retry-After: 1\r\nContent-Length: 0\r\n\r\n";
        uv_buf_t b = uv_buf_init((char *)busy, sizeof(busy) - 1);
        if (!af__srv.accept_ctx.ssl_ctx)
            uv_try_write((uv_stream_t *)conn, &b, 1);
        af__srv.d->metrics.connections_refused++;
        uv_close((uv_handle_t *)conn, on_refused_closed);
        return;
    }
    af__srv.connections++;
    h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)conn, on_conn_closed);
    h2o_accept(&af__srv.accept_ctx, sock);
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

static int is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a);
}

static void log_listening(const af__daemon_t *d, const struct sockaddr_storage *got)
{
    char ip[64] = "?";
    int port;
    const char *scheme = af__srv.accept_ctx.ssl_ctx ? "https" : "http";
    if (got->ss_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)got, ip, sizeof(ip));
        port = ntohs(((const struct sockaddr_in6 *)got)->sin6_port);
        af__dlog(AF__LOG_INFO, "listening on %s://[%s]:%d", scheme, ip, port);
    } else {
        uv_ip4_name((const struct sockaddr_in *)got, ip, sizeof(ip));
        port = ntohs(((const struct sockaddr_in *)got)->sin_port);
        af__dlog(AF__LOG_INFO, "listening on %s://%s:%d", scheme, ip, port);
    }
    size_t admins = af__tokens_count(d->tokens, AF__ROLE_ADMIN),
           readers = af__tokens_count(d->tokens, AF__ROLE_READ);
    if (is_loopback(got))
        af__dlog(AF__LOG_INFO, "loopback only: other hosts cannot connect; authentication %s",
                 d->tokens ? "on" : "off (any local process may submit, run and delete)");
    else if (!d->tokens)
        af__dlog(AF__LOG_WARN,
                 "%s is not a loopback address and [auth] tokens_file is not set: "
                 "anyone who can reach it may submit, run and delete graphs",
                 ip);
    else if (!af__srv.accept_ctx.ssl_ctx)
        af__dlog(AF__LOG_WARN,
                 "%s is not a loopback address and TLS is off: bearer tokens "
                 "travel in clear text",
                 ip);
    if (d->tokens)
        af__dlog(AF__LOG_INFO, "authentication: %zu admin and %zu read-only tokens", admins,
                 readers);
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
    uv_tcp_init(loop, &af__srv.listener);
    if ((rc = uv_tcp_bind(&af__srv.listener, (struct sockaddr *)&ss, 0)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&af__srv.listener, 128, on_accept)) != 0) {
        af__dlog(AF__LOG_ERROR, "cannot listen on %s: %s", addr, uv_strerror(rc));
        uv_close((uv_handle_t *)&af__srv.listener, NULL);
        return rc;
    }
    af__srv.listening = 1;
    struct sockaddr_storage got;
    int len = sizeof(got);
    uv_tcp_getsockname(&af__srv.listener, (struct sockaddr *)&got, &len);
    log_listening(af__srv.d, &got);
    return 0;
}

/* ---- TLS --------------------------------------------------------------------------------- */

/* An SSL_CTX for the configured certificate and key; NULL (TLS off) when none is configured.
 * -1 with a message when the files are unusable. */
static int tls_context(const af__dcfg_t *c, SSL_CTX **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!c->tls_cert[0])
        return 0;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errlen, "TLS: cannot create a context");
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    const char *what = NULL;
    if (SSL_CTX_use_certificate_chain_file(ctx, c->tls_cert) != 1)
        what = c->tls_cert;
    else if (SSL_CTX_use_PrivateKey_file(ctx, c->tls_key, SSL_FILETYPE_PEM) != 1 ||
             SSL_CTX_check_private_key(ctx) != 1)
        what = c->tls_key;
    if (what) {
        char ebuf[256];
        ERR_error_string_n(ERR_get_error(), ebuf, sizeof(ebuf));
        snprintf(err, errlen, "TLS: %.200s: %.200s", what, ebuf);
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return -1;
    }
    *out = ctx;
    return 0;
}

/* ---- signals ----------------------------------------------------------------------------- */

static void stop_signals(void)
{
    uv_signal_stop(&af__srv.sig_term);
    uv_signal_stop(&af__srv.sig_int);
    uv_signal_stop(&af__srv.sig_hup);
}

static void on_drain_tick(uv_timer_t *t)
{
    af__daemon_t *d = af__srv.d;
    if (af__srv.drain_phase == 2) { /* answers written: leave the loop */
        uv_timer_stop(t);
        uv_stop(t->loop);
        return;
    }
    double waited_ms = (double)(af_now_ns() - af__srv.drain_started_ns) / 1e6;
    if (d->active_runs > 0 || d->pending_plans > 0 || d->pending_deletes > 0 ||
        d->pending_renders > 0 || d->loading || af__oip_busy(d)) {
        if (waited_ms > (double)d->cfg.drain_timeout_ms && !atomic_load(&d->cancel_runs)) {
            af__dlog(AF__LOG_WARN,
                     "drain timeout: stopping %lld runs after their current round and %lld "
                     "plans",
                     (long long)d->active_runs, (long long)d->planning);
            atomic_store(&d->cancel_runs, 1);
            atomic_store(&d->cancel_plans, 1);
        }
        return;
    }
    af__dlog(AF__LOG_INFO, "drained in %.0f ms; exiting", waited_ms);
    af__srv.drain_phase = 2; /* one more tick lets h2o flush the last answers */
}

static void on_term(uv_signal_t *s, int signum)
{
    if (af__srv.drain_phase)
        return;
    af__dlog(AF__LOG_INFO, "%s: draining (%lld runs, %lld plans in flight)", strsignal(signum),
             (long long)af__srv.d->active_runs, (long long)af__srv.d->pending_plans);
    af__srv.d->draining = 1;
    af__srv.drain_phase = 1;
    af__srv.drain_started_ns = af_now_ns();
    if (af__srv.listening) {
        uv_close((uv_handle_t *)&af__srv.listener, NULL);
        af__srv.listening = 0;
    }
    uv_timer_start(&af__srv.drain_timer, on_drain_tick, 0, 20);
    (void)s;
}

static void on_hup(uv_signal_t *s, int signum)
{
    (void)s;
    (void)signum;
    af__daemon_t *d = af__srv.d;
    af__dcfg_t n;
    char err[512];
    if (!af__srv.cli.config) {
        af__dlog(AF__LOG_WARN, "SIGHUP: no --config file to reload");
        return;
    }
    SSL_CTX *tls = NULL;
    if (af__dcfg_load(&n, &af__srv.cli, err, sizeof(err)) != 0 ||
        tls_context(&n, &tls, err, sizeof(err)) != 0 ||
        af__daemon_reconfigure(d, &n, err, sizeof(err)) != 0) {
        SSL_CTX_free(tls);
        af__dlog(AF__LOG_ERROR, "SIGHUP: reload failed, keeping the old configuration: %s", err);
        return;
    }
    if (strcmp(n.listen, d->cfg.listen) != 0 || strcmp(n.state_dir, d->cfg.state_dir) != 0)
        af__dlog(AF__LOG_WARN, "SIGHUP: listen and state_dir changes take effect at restart");
    SSL_CTX_free(af__srv.accept_ctx.ssl_ctx); /* connections keep their own reference */
    af__srv.accept_ctx.ssl_ctx = tls;
    af__http_apply(&n);
    af__dlog(AF__LOG_INFO,
             "SIGHUP: configuration reloaded from %s (max_body %llu, max_concurrent_runs %lld, "
             "fast_kernels %s, plan_cache_bytes %llu, TLS %s, %s)",
             af__srv.cli.config, (unsigned long long)n.lim.max_body, (long long)n.max_runs,
             n.fast_kernels, (unsigned long long)n.plan_cache_bytes, tls ? "on" : "off",
             d->tokens ? "authentication on" : "authentication off");
}

/* ---- main -------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: arenaflowd [--config FILE] [--listen HOST:PORT] [--state-dir DIR]\n"
               "                  [--model-repository DIR]\n"
               "  --config FILE      INI file (see configs/arenaflowd.ini): limits, TLS, bearer\n"
               "                     tokens, planner and executor settings; SIGHUP reloads it\n"
               "  --listen HOST:PORT address to serve on (default 127.0.0.1:8080; port 0 = any)\n"
               "  --state-dir DIR    where graphs are kept across restarts (default: none)\n"
               "  --model-repository DIR  models served by the Open Inference Protocol (/v2):\n"
               "                     DIR/<name>/<version>/model.onnx (or model.json), loaded at\n"
               "                     start ([models] repository; see docs/serve.md)\n"
               "  --version          print the version and exit\n");
}

static int parse_args(int argc, char **argv, af__dcli_t *cli)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},
        {"listen", required_argument, NULL, 'l'},
        {"state-dir", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"model-repository", required_argument, NULL, 'm'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:l:s:m:hV", longs, NULL)) != -1) {
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
        case 'm':
            cli->model_repository = optarg;
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
    if (parse_args(argc, argv, &af__srv.cli) != 0)
        return 2;
    if (af__dcfg_load(&cfg, &af__srv.cli, err, sizeof(err)) != 0) {
        fprintf(stderr, "arenaflowd: %s\n", err);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit makes write() fail with EFBIG instead */
    uv_loop_t *loop = uv_default_loop();
    af__dlog_set_level(cfg.log_level);
    SSL_CTX *tls = NULL;
    if (tls_context(&cfg, &tls, err, sizeof(err)) != 0) {
        af__dlog(AF__LOG_ERROR, "cannot start: %s", err);
        return 1;
    }
    int rc = af__daemon_create(loop, &cfg, &af__srv.d);
    if (rc != 0) {
        af__dlog(AF__LOG_ERROR, "cannot start: %s", af_strerror(rc));
        SSL_CTX_free(tls);
        return 1;
    }
    af__http_setup(&cfg);
    h2o_context_init(&af__srv.ctx, loop, &af__srv.config);
    af__srv.accept_ctx.ctx = &af__srv.ctx;
    af__srv.accept_ctx.hosts = af__srv.config.hosts;
    af__srv.accept_ctx.ssl_ctx = tls;
    if (start_listener(loop, cfg.listen) != 0) {
        af__daemon_destroy(af__srv.d);
        return 1;
    }
    uv_timer_init(loop, &af__srv.drain_timer);
    uv_signal_init(loop, &af__srv.sig_term);
    uv_signal_init(loop, &af__srv.sig_int);
    uv_signal_init(loop, &af__srv.sig_hup);
    uv_signal_start(&af__srv.sig_term, on_term, SIGTERM);
    uv_signal_start(&af__srv.sig_int, on_term, SIGINT);
    uv_signal_start(&af__srv.sig_hup, on_hup, SIGHUP);
    af__dlog(AF__LOG_INFO, "arenaflowd %s serving (pid %d); stored graphs load in the background",
             af_version(), (int)getpid());
    uv_run(loop, UV_RUN_DEFAULT);
    stop_signals();
    /* Open keep-alive connections belong to h2o and die with the process; our own state is
     * released so leak checkers see only what h2o keeps. */
    af__daemon_destroy(af__srv.d);
    SSL_CTX_free(af__srv.accept_ctx.ssl_ctx);
    af__dlog(AF__LOG_INFO, "bye");
    return 0;
}
