/*
 * arenaflowd's HTTP server (the binary, not the socket-free core): state shared by server.c
 * (listener, TLS, signals, main) and server_http.c (h2o request glue). Loop thread only.
 */
#ifndef ARENAFLOW_DAEMON_SERVER_INT_H
#define ARENAFLOW_DAEMON_SERVER_INT_H

#include "daemon/daemon_int.h"

#include <h2o.h>

typedef struct server {
    h2o_globalconf_t config;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    uv_tcp_t listener;
    int listening;
    int64_t connections; /* open client connections */
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t drain_timer;
    uint64_t drain_started_ns;
    int drain_phase; /* 0 running, 1 waiting for work, 2 flushing */
    af__daemon_t *d;
    af__dcli_t cli;
} server_t;

extern server_t af__srv;

/* Registers the request handler on af__srv.config and applies the HTTP settings of cfg
 * (HTTP/1.1 only, body limit, request timeout). */
void af__http_setup(const af__dcfg_t *cfg);
/* Applies a reloaded configuration's HTTP settings to the running context. */
void af__http_apply(const af__dcfg_t *cfg);

#endif
