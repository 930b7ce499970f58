/*
 * arenaflowd core object and logging.
 *
 * af__daemon_create() builds everything but the sockets: configuration copy, tokens, metrics,
 * the executor state, and starts loading the state directory in the background (load.c). A fuzz
 * harness or a unit test can create one on a private loop, call af__daemon_handle() and run the
 * loop until the answer arrives, with no network at all. af__daemon_reconfigure() is SIGHUP's
 * work: it applies a new configuration to the running daemon.
 *
 * Logging goes to stderr, one line per event: "<UTC time> arenaflowd[<pid>] <level>: <message>".
 * Loop thread only (the log level is a plain int read by whoever logs).
 */
#include "daemon/daemon_int.h"
#include "daemon/oip_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int log_level = AF__LOG_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void af__dlog_set_level(const char *name)
{
    for (int i = 0; i < (int)AF_ARRAY_SIZE(level_names); i++)
        if (strcmp(level_names[i], name) == 0)
            log_level = i;
}

void af__dlog(int level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    char line[1024], ts[32];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03dZ arenaflowd[%d] %s: %s\n", ts, (int)(tv.tv_usec / 1000), (int)getpid(),
            level_names[level], line);
}

void af__dres_free(af__dres_t *res)
{
    if (!res || res->is_static)
        return;
    free(res->body);
    free(res);
}

int af__daemon_create(uv_loop_t *loop, const af__dcfg_t *cfg, af__daemon_t **out)
{
    af__daemon_t *d = calloc(1, sizeof(*d));
    if (!d)
        return AF_ENOMEM;
    d->loop = loop;
    d->cfg = *cfg;
    d->started_ns = af_now_ns();
    af__dlog_set_level(cfg->log_level);
    char err[512];
    int rc = af__tokens_load(cfg->tokens_file, &d->tokens, err, sizeof(err));
    if (rc != 0) {
        af__dlog(AF__LOG_ERROR, "%s", err);
        free(d);
        return AF_EINVAL;
    }
    if ((rc = af__work_init(d)) != 0 || (rc = af__oip_init(d)) != 0 ||
        (rc = af__load_start(d)) != 0) {
        while (af__oip_busy(d) && uv_run(d->loop, UV_RUN_ONCE))
            ;
        af__oip_fini(d);
        af__work_fini(d);
        af__tokens_free(d->tokens);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int af__daemon_reconfigure(af__daemon_t *d, const af__dcfg_t *n, char *err, size_t errlen)
{
    af__tokens_t *tokens = NULL;
    if (af__tokens_load(n->tokens_file, &tokens, err, errlen) != 0)
        return -1;
    int exec_changed = af__dcfg_exec_differs(&d->cfg, n);
    af__dcfg_t keep = d->cfg;
    d->cfg = *n;
    /* these need a new socket or a new state: the running values stay (server.c logs it) */
    memcpy(d->cfg.listen, keep.listen, sizeof(keep.listen));
    memcpy(d->cfg.state_dir, keep.state_dir, sizeof(keep.state_dir));
    memcpy(d->cfg.tls_cert, keep.tls_cert, sizeof(keep.tls_cert));
    memcpy(d->cfg.tls_key, keep.tls_key, sizeof(keep.tls_key));
    memcpy(d->cfg.model_repository, keep.model_repository, sizeof(keep.model_repository));
    memcpy(d->cfg.model_kernels, keep.model_kernels, sizeof(keep.model_kernels));
    af__tokens_free(d->tokens);
    d->tokens = tokens;
    af__dlog_set_level(n->log_level);
    if (exec_changed)
        af__work_reconfigure(d);
    af__cache_set_max_bytes(d, n->plan_cache_bytes);
    return 0;
}

/* Background work that holds a pointer to the daemon. */
static int busy(const af__daemon_t *d)
{
    return d->loading || d->pending_plans || d->pending_deletes || d->pending_renders ||
           d->active_runs || d->planning || d->cache_jobs || af__oip_busy(d);
}

void af__daemon_destroy(af__daemon_t *d)
{
    if (!d)
        return;
    atomic_store(&d->cancel_plans, 1);
    atomic_store(&d->cancel_runs, 1);
    d->draining = 1;
    while (busy(d) && uv_run(d->loop, UV_RUN_ONCE))
        ;
    af__store_free_all(d); /* sessions first: they are bound to the executors */
    while (d->cache_jobs && uv_run(d->loop, UV_RUN_ONCE)) /* the plans go back off the loop */
        ;
    af__oip_fini(d);
    af__work_fini(d);
    af_plan_cache_destroy(d->plans); /* every plan was released with its entry */
    af__tokens_free(d->tokens);
    free(d);
}
