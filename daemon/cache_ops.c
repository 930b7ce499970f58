/*
 * arenaflowd and the plan cache: no call from the loop thread.
 *
 * The library's plan cache (include/arenaflow/cache.h) holds its mutex for whole lookups,
 * planning included, so any cache call can wait for the plan being made: seconds for a large
 * graph. The loop thread therefore never calls it. Releasing a plan and changing the LRU bound
 * are small work requests on libuv's threadpool (af__cache_release, af__cache_set_max_bytes);
 * the figures /metrics shows and the warnings the log shows come from snapshots that every work
 * request touching the cache takes before it finishes (af__cache_snapshot, in the worker) and
 * that its after-work callback hands to the loop (af__cache_apply).
 *
 * Lock rule: the work callbacks touch only their job and the (thread-safe) cache.
 */
#include "daemon/daemon_int.h"

#include <stdlib.h>
#include <string.h>

void af__cache_snapshot(af_plan_cache_t *c, af__cache_view_t *v, int32_t from)
{
    memset(v, 0, sizeof(*v));
    if (!c)
        return;
    af_plan_cache_stats(c, &v->st);
    v->from = from;
    const char *w;
    while (v->n < AF__CACHE_VIEW_WARN && (w = af_plan_cache_warning(c, from + v->n)) != NULL)
        v->warn[v->n++] = strdup(w);
    v->valid = 1;
}

void af__cache_apply(af__daemon_t *d, af__cache_view_t *v)
{
    if (!v->valid)
        return;
    d->cache_stats = v->st; /* snapshots of different jobs may arrive out of order: near enough */
    for (int32_t i = 0; i < v->n; i++) {
        if (v->warn[i] && v->from + i >= d->cache_warnings) {
            af__dlog(AF__LOG_WARN, "%s", v->warn[i]);
            d->cache_warnings = v->from + i + 1;
        }
        free(v->warn[i]);
    }
    v->n = 0;
    v->valid = 0;
}

typedef struct cache_job {
    uv_work_t w;
    af__daemon_t *d;
    af_plan_cache_t *cache;
    const af_plan_t *plan; /* release it, or NULL */
    uint64_t max_bytes;    /* set the bound, or 0 */
    int32_t from;
    af__cache_view_t view;
} cache_job_t;

static void cache_work(uv_work_t *w)
{
    cache_job_t *j = w->data;
    if (j->plan)
        af_plan_cache_release(j->cache, j->plan);
    if (j->max_bytes)
        af_plan_cache_set_max_bytes(j->cache, j->max_bytes);
    af__cache_snapshot(j->cache, &j->view, j->from);
}

static void cache_after(uv_work_t *w, int status)
{
    (void)status;
    cache_job_t *j = w->data;
    j->d->cache_jobs--;
    af__cache_apply(j->d, &j->view);
    free(j);
}

static void queue(af__daemon_t *d, af_plan_cache_t *cache, const af_plan_t *plan,
                  uint64_t max_bytes)
{
    cache_job_t *j = calloc(1, sizeof(*j));
    if (j) {
        *j = (cache_job_t){.d = d,
                           .cache = cache,
                           .plan = plan,
                           .max_bytes = max_bytes,
                           .from = d->cache_warnings};
        j->w.data = j;
        if (uv_queue_work(d->loop, &j->w, cache_work, cache_after) == 0) {
            d->cache_jobs++;
            return;
        }
        free(j);
    }
    /* cannot queue (out of memory): do it here; the loop may wait, nothing leaks */
    if (plan)
        af_plan_cache_release(cache, plan);
    if (max_bytes)
        af_plan_cache_set_max_bytes(cache, max_bytes);
}

void af__cache_release(af__daemon_t *d, af_plan_cache_t *cache, const af_plan_t *plan)
{
    if (!plan)
        return;
    if (!d) { /* a worker's own entry (the loader): release in place */
        af_plan_cache_release(cache, plan);
        return;
    }
    queue(d, cache, plan, 0);
}

void af__cache_set_max_bytes(af__daemon_t *d, uint64_t max_bytes)
{
    if (d->plans && max_bytes)
        queue(d, d->plans, NULL, max_bytes);
}
