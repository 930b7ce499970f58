/*
 * arenaflowd core object and logging.
 *
 * af__daemon_create() builds everything but the sockets: configuration copy, metrics, the graph
 * registry (loading the state directory, re-planning every stored graph), and the executor state.
 * A fuzz harness or a unit test can create one on a private loop, call af__daemon_handle() and
 * run the loop until the answer arrives, with no network at all.
 *
 * Logging goes to stderr, one line per event: "<UTC time> arenaflowd[<pid>] <level>: <message>".
 * Loop thread only (the log level is a plain int read by whoever logs).
 */
#include "daemon/daemon_int.h"

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
    int rc = af__work_init(d);
    if (rc != 0) {
        free(d);
        return rc;
    }
    uint64_t t0 = af_now_ns();
    af_plan_cache_opts_t co;
    af_plan_cache_opts_init(&co);
    co.max_bytes = cfg->plan_cache_bytes;
    char plans_dir[AF__DCFG_STR + 16];
    if (cfg->state_dir[0]) {
        mkdir(cfg->state_dir, 0755);
        snprintf(plans_dir, sizeof(plans_dir), "%s/plans", cfg->state_dir);
        co.dir = plans_dir;
    }
    af_error_t err;
    af_error_clear(&err);
    rc = af_plan_cache_create(&co, &d->plans, &err);
    if (rc != 0) {
        af__dlog(AF__LOG_ERROR, "cannot open the plan cache: %s", err.msg);
        af__work_fini(d);
        free(d);
        return rc;
    }
    const char *w;
    for (int32_t i = 0; (w = af_plan_cache_warning(d->plans, i)) != NULL; i++)
        af__dlog(AF__LOG_WARN, "plan cache: %s", w);
    int n = af__store_load_all(d);
    if (n < 0) {
        af_plan_cache_destroy(d->plans);
        af__work_fini(d);
        free(d);
        return AF_EIO;
    }
    af_plan_cache_stats_t cs;
    af_plan_cache_stats(d->plans, &cs);
    if (cfg->state_dir[0])
        af__dlog(AF__LOG_INFO,
                 "loaded %d stored graphs from %s in %.1f ms (%llu plans restored from disk, "
                 "%llu re-planned, %llu plan files rejected)",
                 n, cfg->state_dir, (double)(af_now_ns() - t0) / 1e6,
                 (unsigned long long)cs.restored, (unsigned long long)cs.misses,
                 (unsigned long long)cs.files_rejected);
    d->ready = 1;
    *out = d;
    return 0;
}

void af__daemon_destroy(af__daemon_t *d)
{
    if (!d)
        return;
    af__store_free_all(d); /* sessions first: they are bound to the executors */
    af__work_fini(d);
    af_plan_cache_destroy(d->plans); /* every plan was released with its entry */
    free(d);
}
