/*
 * Dynamic tensors (size known only at run time) on the pool's per-worker caches.
 *
 * Every worker thread owns one af_pool_cache_t of the executor's pool: a dynamic output is
 * allocated by the worker that runs its producer, from that worker's cache — no lock and no
 * atomic read-modify-write while the cache holds a block of the size class (per-block state
 * word, seed 1 §4.3), a borrow from a larger class of the same cache otherwise, and the pool's
 * class lock / global mutex only on a miss. A round's dynamic tensors are freed when it is
 * released, by whichever thread that is: a worker frees through its own cache (any block of the
 * pool), any other thread (the caller of a synchronous run, the loop thread) with af_pool_free.
 * Measured before this file existed, against the jemalloc region it replaces (ns per
 * alloc+free pair, 4 KiB .. 16 MiB): 1336..2391 there, 7..14 through a cache; on a ResNet-50
 * whose 174 intermediates were all dynamic, `arenaflow run --kernels empty` went from ~1250 to
 * ~2100 rounds/s (see the commit message).
 *
 * Lock rule: a cache is touched only by the thread it is bound to (af__dyn_bind at worker
 * start); creation and destruction run while no worker runs (executor create / destroy).
 */
#include "executor/executor_int.h"

/* The calling thread's cache and the executor it belongs to (NULL on non-worker threads). */
static _Thread_local af_pool_cache_t *tls_cache;
static _Thread_local const af_executor_t *tls_ex;

int af__dyn_init(af_executor_t *ex, af_error_t *err)
{
    ex->dyn = af__calloc((size_t)ex->n, sizeof(*ex->dyn));
    if (!ex->dyn)
        return af__err(err, AF_ENOMEM, "out of memory for the workers' pool caches");
    for (int32_t i = 0; i < ex->n; i++) {
        int rc = af_pool_cache_create(ex->pool, &ex->dyn[i]);
        if (rc) {
            af__dyn_fini(ex);
            return af__err(err, rc, "cannot create a worker's pool cache: %s", af_strerror(rc));
        }
    }
    return 0;
}

void af__dyn_fini(af_executor_t *ex)
{
    if (!ex->dyn)
        return;
    for (int32_t i = 0; i < ex->n; i++)
        af_pool_cache_destroy(ex->dyn[i]);
    af__free(ex->dyn);
    ex->dyn = NULL;
}

void af__dyn_bind(af__worker_t *w)
{
    tls_cache = w->ex->dyn[w->id];
    tls_ex = w->ex;
}

int af__dyn_alloc(af_executor_t *ex, size_t bytes, void **out)
{
    if (tls_ex == ex)
        return af_pool_cache_alloc(tls_cache, bytes, out);
    return af_pool_alloc(ex->pool, bytes, out);
}

int af__dyn_free(af_executor_t *ex, void *ptr)
{
    if (tls_ex == ex)
        return af_pool_cache_free(tls_cache, ptr);
    return af_pool_free(ex->pool, ptr);
}
