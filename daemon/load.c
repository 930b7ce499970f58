/*
 * arenaflowd start-up: the state directory loads in the background.
 *
 * af__daemon_create() returns at once with d->loading = 1, so the listener comes up and
 * /healthz answers while the stored graphs load; /readyz and every /v1 request answer 503
 * "loading" (Retry-After: 1) until then. One work request on libuv's threadpool does the whole
 * load: it opens the plan cache (which reads and checksums every plan file), removes leftover
 * temp files, and turns every <id>.json into an entry (parse, check that the id is the graph's
 * fingerprint, get its plan from the cache: restored from its plan file and verified, or
 * re-planned). The after-work callback, on the loop thread, lists the entries and sets
 * d->ready. A drain (or af__daemon_destroy) sets d->cancel_plans, which stops the load between
 * files and interrupts a plan being made.
 *
 * A file that does not parse or whose id is not its graph's fingerprint is renamed *.corrupt
 * and logged, never silently dropped; a graph that fails for another reason (out of memory, its
 * plan file cannot be written) keeps its file and is logged, and loads at the next start.
 *
 * Lock rule: the work callback touches only its job and the cache it creates; it reads
 * d->cancel_plans (atomic) and nothing else of the daemon.
 */
#include "daemon/daemon_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct loaded {
    af__entry_t *e;
    struct loaded *next;
} loaded_t;

typedef struct load_job {
    uv_work_t w;
    af__daemon_t *d;
    atomic_int *cancel;
    char state_dir[AF__DCFG_STR];
    uint64_t cache_bytes;
    af_plan_cache_t *cache;
    int rc;
    af_error_t err;
    loaded_t *loaded;
    int n_loaded, n_corrupt, n_skipped;
    char **log; /* messages for the loop thread to log (the worker never logs) */
    size_t n_log, cap_log;
    uint64_t started_ns;
    af__cache_view_t view;
} load_job_t;

static void note(load_job_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(load_job_t *j, const char *fmt, ...)
{
    char buf[AF_ERROR_MSG_MAX + 600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (j->n_log == j->cap_log) {
        size_t cap = j->cap_log ? j->cap_log * 2 : 8;
        char **n = realloc(j->log, cap * sizeof(*n));
        if (!n)
            return;
        j->log = n;
        j->cap_log = cap;
    }
    if ((j->log[j->n_log] = strdup(buf)) != NULL)
        j->n_log++;
}

static int cancelled(void *arg)
{
    return atomic_load((atomic_int *)arg) != 0;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Parses one stored file into a planned entry. NULL with a message in err; *corrupt = 1 when
 * the file itself is bad (as opposed to a failure to plan or store it now). */
static af__entry_t *load_one(load_job_t *j, const char *path, const char *name, int *corrupt,
                             af_error_t *err)
{
    *corrupt = 1;
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        af__err(err, AF_EPARSE, "%s:%d: %s", path, je.line, je.text);
        return NULL;
    }
    const char *fmt = NULL, *id = NULL, *planner = NULL;
    json_t *gj = NULL;
    af__entry_t *e = NULL;
    char *gtext = NULL, *canon = NULL, *pl = NULL;
    af_graph_t *g = NULL;
    const af_plan_t *plan = NULL;
    char fp[AF__ID_LEN + 1];
    if (json_unpack_ex(root, &je, 0, "{s:s, s:s, s:s, s:o}", "format", &fmt, "id", &id, "planner",
                       &planner, "graph", &gj) != 0) {
        af__err(err, AF_EPARSE, "%s: %s", path, je.text);
        goto out;
    }
    if (strcmp(fmt, "arenaflowd-graph/1") != 0 || !af__id_valid(id, strlen(id)) ||
        strncmp(name, id, AF__ID_LEN) != 0 || strcmp(name + AF__ID_LEN, ".json") != 0) {
        af__err(err, AF_EPARSE, "%s: wrong format tag or id", path);
        goto out;
    }
    af_plan_opts_t opts;
    if (!(gtext = json_dumps(gj, JSON_COMPACT)) || !(pl = strdup(planner))) {
        *corrupt = 0;
        af__err(err, AF_ENOMEM, "out of memory loading %s", path);
        goto out;
    }
    if (af_graph_parse_json(gtext, strlen(gtext), &g, err) != 0 ||
        af__planner_opts_from_string(planner, &opts, err) != 0 ||
        af_graph_to_json(g, &canon, err) != 0 || af__fingerprint_graph(g, planner, fp) != 0)
        goto out;
    if (strcmp(fp, id) != 0) {
        af__err(err, AF_EPARSE, "%s: the id is not the graph's fingerprint (%s)", path, fp);
        goto out;
    }
    *corrupt = 0;
    opts.interrupt = cancelled;
    opts.interrupt_arg = j->cancel;
    if (af_plan_cache_get(j->cache, g, &opts, &plan, NULL, err) != 0 ||
        (!opts.verify && af_plan_verify(plan, err) != 0))
        goto out;
    e = af__entry_new(id, j->cache, plan, pl, af__held_estimate(g, strlen(canon)));
    if (!e) {
        af__err(err, AF_ENOMEM, "out of memory loading %s", path);
        goto out;
    }
    plan = NULL;
    pl = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0)
        e->created_unix = (uint64_t)sb.st_mtime;
out:
    if (plan)
        af_plan_cache_release(j->cache, plan);
    af_graph_destroy(g);
    af_free(canon);
    free(pl);
    free(gtext);
    json_decref(root);
    return e;
}

static void load_dir(load_job_t *j, const char *dir)
{
    DIR *dh = opendir(dir);
    if (!dh) {
        j->rc = af__err(&j->err, AF_EIO, "cannot open %s: %s", dir, strerror(errno));
        return;
    }
    struct dirent *de;
    while ((de = readdir(dh)) != NULL && !atomic_load(j->cancel)) {
        char path[AF__DCFG_STR + 300];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (has_suffix(de->d_name, ".tmp") || strstr(de->d_name, ".json.tmp.")) {
            note(j, "removing unfinished write %s", path);
            unlink(path);
            continue;
        }
        if (!has_suffix(de->d_name, ".json"))
            continue;
        af_error_t err;
        af_error_clear(&err);
        int corrupt = 0;
        af__entry_t *e = load_one(j, path, de->d_name, &corrupt, &err);
        if (!e && corrupt) {
            char bad[AF__DCFG_STR + 320];
            snprintf(bad, sizeof(bad), "%s.corrupt", path);
            note(j, "cannot load stored graph (kept as %s): %s", bad, err.msg);
            rename(path, bad);
            j->n_corrupt++;
            continue;
        }
        loaded_t *l = e ? malloc(sizeof(*l)) : NULL;
        if (!l) {
            if (e) {
                af__entry_unref(e);
                af__err(&err, AF_ENOMEM, "out of memory");
            }
            note(j, "cannot load stored graph %s now (the file stays): %s", path, err.msg);
            j->n_skipped++;
            continue;
        }
        l->e = e;
        l->next = j->loaded;
        j->loaded = l;
        j->n_loaded++;
    }
    closedir(dh);
}

static void load_work(uv_work_t *w)
{
    load_job_t *j = w->data;
    af_plan_cache_opts_t co;
    af_plan_cache_opts_init(&co);
    co.max_bytes = j->cache_bytes;
    co.durable = 1;
    char plans[AF__DCFG_STR + 16], graphs[AF__DCFG_STR + 16];
    if (j->state_dir[0]) {
        mkdir(j->state_dir, 0755);
        snprintf(plans, sizeof(plans), "%s/plans", j->state_dir);
        snprintf(graphs, sizeof(graphs), "%s/graphs", j->state_dir);
        co.dir = plans;
        if (mkdir(graphs, 0755) != 0 && errno != EEXIST) {
            j->rc = af__err(&j->err, AF_EIO, "cannot create %s: %s", graphs, strerror(errno));
            return;
        }
    }
    if ((j->rc = af_plan_cache_create(&co, &j->cache, &j->err)) != 0)
        return;
    if (j->state_dir[0])
        load_dir(j, graphs);
    af__cache_snapshot(j->cache, &j->view, 0);
}

static void load_after(uv_work_t *w, int status)
{
    load_job_t *j = w->data;
    af__daemon_t *d = j->d;
    for (size_t i = 0; i < j->n_log; i++) {
        af__dlog(AF__LOG_WARN, "%s", j->log[i]);
        free(j->log[i]);
    }
    free(j->log);
    d->plans = j->cache;
    af_plan_cache_stats_t cs = j->view.st;
    af__cache_apply(d, &j->view);
    int listed = 0;
    while (j->loaded) {
        loaded_t *l = j->loaded;
        j->loaded = l->next;
        if (af__store_find(d, l->e->id) || af__store_add(d, l->e) != 0)
            af__entry_unref(l->e);
        else
            listed++;
        free(l);
    }
    d->loading = 0;
    if (j->rc != 0 || status != 0) {
        af__dlog(AF__LOG_ERROR, "cannot load the state directory: %s",
                 j->err.msg[0] ? j->err.msg : uv_strerror(status));
    } else {
        if (j->state_dir[0])
            af__dlog(AF__LOG_INFO,
                     "loaded %d stored graphs from %s in %.1f ms (%llu plans restored from disk, "
                     "%llu re-planned, %llu plan files rejected, %d corrupt, %d left for later)",
                     listed, j->state_dir, (double)(af_now_ns() - j->started_ns) / 1e6,
                     (unsigned long long)cs.restored, (unsigned long long)cs.misses,
                     (unsigned long long)cs.files_rejected, j->n_corrupt, j->n_skipped);
        d->ready = 1;
    }
    free(j);
}

int af__load_start(af__daemon_t *d)
{
    load_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return AF_ENOMEM;
    j->d = d;
    j->cancel = &d->cancel_plans;
    j->w.data = j;
    j->cache_bytes = d->cfg.plan_cache_bytes;
    j->started_ns = af_now_ns();
    snprintf(j->state_dir, sizeof(j->state_dir), "%s", d->cfg.state_dir);
    d->loading = 1;
    int rc = uv_queue_work(d->loop, &j->w, load_work, load_after);
    if (rc != 0) {
        d->loading = 0;
        free(j);
    }
    return rc;
}
