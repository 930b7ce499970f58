/*
 * The plan cache (include/arenaflow/cache.h): fingerprint -> plan, LRU bounded by bytes,
 * persisted as one file per plan.
 *
 * Entries live on one doubly linked list, most recently used first; lookups scan it (a cache
 * holds tens to thousands of plans; a scan is far cheaper than the planning it saves). An entry
 * is "warm" (graph copy + plan) or "cold" (order + offsets read from disk, waiting for its first
 * lookup, which rebuilds the plan with af_plan_restore() — verified, never trusted — instead of
 * planning again). Pinned entries (handed out, not released) are never evicted.
 *
 * Files: DIR/<fingerprint>.afplan holds af_plan_encode()'s record of the plan (planner/
 * serialize.c owns the format), written with af_file_write_durable() (common/file.c) and read
 * back with af_file_read() + af_plan_decode().
 *
 * Lock rule: one mutex per cache (AF__RANK_PLAN_CACHE, common/common_int.h), held for whole
 * lookups, planning included (a cache serialises the planning it does; the executor's locks are
 * never taken under it).
 */
#include "arenaflow/cache.h"
#include "executor/executor_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A cache file is at most this large (2^28 tensors and nodes: the record's own bound). */
#define FILE_MAX (1ull << 34)

typedef struct entry {
    uint64_t fp;
    af_graph_t *g;        /* warm: the cache's copy of the graph */
    af_plan_t *plan;      /* warm */
    af_plan_record_t rec; /* cold: order and offsets as stored (NULL once warm); both: counts,
                             arena bytes and the names of the scheduler and placer */
    uint64_t bytes;
    int32_t pins;
    struct entry *prev, *next;
} entry_t;

struct af_plan_cache {
    af_plan_cache_opts_t opts;
    char *dir;
    uv_mutex_t mu;
    entry_t *head, *tail;
    af_plan_cache_stats_t st;
    char **warn;
    size_t n_warn, cap_warn;
};

void af_plan_cache_opts_init(af_plan_cache_opts_t *o)
{
    o->max_bytes = 256ull << 20;
    o->dir = NULL;
    o->durable = 0;
}

/* ---- entries and LRU -------------------------------------------------------------------- */

static void warn(af_plan_cache_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(af_plan_cache_t *c, const char *fmt, ...)
{
    char buf[AF_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = af__strdup(buf);
    if (!s || af__grow((void **)&c->warn, &c->cap_warn, c->n_warn + 1, sizeof(char *))) {
        af__free(s);
        return; /* out of memory: the warning is lost, nothing else is */
    }
    c->warn[c->n_warn++] = s;
}

static void entry_free(entry_t *e)
{
    if (!e)
        return;
    af_plan_destroy(e->plan);
    af_graph_destroy(e->g);
    af_plan_record_free(&e->rec);
    af__free(e);
}

static void lru_unlink(af_plan_cache_t *c, entry_t *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(af_plan_cache_t *c, entry_t *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

static uint64_t entry_bytes(int32_t nt, int32_t nn, int32_t edges)
{
    /* graph copy + plan + stored arrays, per element, as allocated by their modules (estimate) */
    return sizeof(entry_t) + (uint64_t)nt * (sizeof(af_tensor_plan_t) + 8 + 160) +
           (uint64_t)nn * (4 + 4 + 200) + (uint64_t)edges * sizeof(af_reuse_edge_t);
}

static void file_path(const af_plan_cache_t *c, uint64_t fp, char *out, size_t n);

/* Removes an entry's file: a plan dropped from the cache is dropped from disk too, so the
 * directory stays bounded by the same LRU bound as memory. */
static void forget_file(af_plan_cache_t *c, const entry_t *e)
{
    if (!c->dir)
        return;
    char path[4096];
    file_path(c, e->fp, path, sizeof path);
    if (unlink(path) == 0)
        c->st.files_removed++;
    else if (errno != ENOENT)
        warn(c, "plan cache: cannot remove %s: %s", path, strerror(errno));
}

static void evict(af_plan_cache_t *c)
{
    entry_t *e = c->tail;
    while (e && c->st.bytes > c->opts.max_bytes) {
        entry_t *prev = e->prev;
        if (e->pins == 0) {
            lru_unlink(c, e);
            c->st.bytes -= e->bytes;
            c->st.entries--;
            c->st.evictions++;
            forget_file(c, e);
            entry_free(e);
        }
        e = prev;
    }
}

static void insert(af_plan_cache_t *c, entry_t *e)
{
    lru_push_front(c, e);
    c->st.bytes += e->bytes;
    c->st.entries++;
    evict(c);
}

/* ---- files ------------------------------------------------------------------------------ */

static void file_path(const af_plan_cache_t *c, uint64_t fp, char *out, size_t n)
{
    snprintf(out, n, "%s/%016llx.afplan", c->dir, (unsigned long long)fp);
}

/* Writes the entry's record durably. 0, or AF_EIO (also kept as a warning) with a message in
 * err (may be NULL); the caller decides whether that fails the lookup (opts.durable). */
static int persist(af_plan_cache_t *c, const entry_t *e, af_error_t *err)
{
    if (!c->dir)
        return 0;
    void *buf = NULL;
    size_t n = 0;
    char path[4096];
    af_error_t why;
    int rc = 0;
    file_path(c, e->fp, path, sizeof path);
    if (af_plan_encode(e->plan, e->fp, &buf, &n, &why) ||
        af_file_write_durable(path, buf, n, &why)) {
        warn(c, "plan cache: cannot write %s: %s", path, why.msg);
        rc = af__err(err, AF_EIO, "plan cache: cannot write %s: %s", path, why.msg);
    } else {
        c->st.files_written++;
    }
    af__free(buf);
    return rc;
}

/* Validates one file; returns a cold entry or NULL with the reason in *why. */
static entry_t *load_file(const char *path, uint64_t want_fp, af_error_t *why)
{
    char *buf = NULL;
    size_t len = 0;
    if (af_file_read(path, FILE_MAX, &buf, &len, why)) {
        af__err(why, AF_EIO, "cannot be read");
        return NULL;
    }
    entry_t *e = af__calloc(1, sizeof(*e));
    if (!e) {
        af__err(why, AF_ENOMEM, "out of memory");
    } else if (af_plan_decode(buf, len, &e->rec, why)) {
        entry_free(e);
        e = NULL;
    } else if (e->rec.key != want_fp) {
        af__err(why, AF_EPARSE, "fingerprint does not match the file name");
        entry_free(e);
        e = NULL;
    } else {
        e->fp = e->rec.key;
        e->bytes = entry_bytes(e->rec.tensors, e->rec.nodes, 0);
    }
    af__free(buf);
    return e;
}

static int load_dir(af_plan_cache_t *c, af_error_t *err)
{
    if (mkdir(c->dir, 0755) != 0 && errno != EEXIST)
        return af__err(err, AF_EIO, "plan cache: cannot create %s: %s", c->dir, strerror(errno));
    DIR *d = opendir(c->dir);
    if (!d)
        return af__err(err, AF_EIO, "plan cache: cannot read %s: %s", c->dir, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 7 || strcmp(de->d_name + n - 7, ".afplan") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", c->dir, de->d_name);
        unsigned long long fp = 0;
        char tail[16] = "";
        af_error_t why;
        af__err(&why, AF_EPARSE, "file name is not <fingerprint>.afplan");
        entry_t *e = NULL;
        if (n == 16 + 7 && sscanf(de->d_name, "%16llx%15s", &fp, tail) == 2 &&
            strcmp(tail, ".afplan") == 0)
            e = load_file(path, fp, &why);
        if (!e) {
            c->st.files_rejected++;
            warn(c, "plan cache: ignored %s: %s", path, why.msg);
            continue;
        }
        c->st.files_loaded++;
        insert(c, e);
    }
    closedir(d);
    return 0;
}

/* ---- public calls ----------------------------------------------------------------------- */

/* Entries, warnings and the cache itself (the mutex is the caller's). */
static void free_cache(af_plan_cache_t *c)
{
    while (c->head) {
        entry_t *e = c->head;
        lru_unlink(c, e);
        entry_free(e);
    }
    for (size_t i = 0; i < c->n_warn; i++)
        af__free(c->warn[i]);
    af__free(c->warn);
    af__free(c->dir);
    af__free(c);
}

int af_plan_cache_create(const af_plan_cache_opts_t *opts, af_plan_cache_t **out, af_error_t *err)
{
    if (!out)
        return af__err(err, AF_EINVAL, "af_plan_cache_create: out is NULL");
    af_plan_cache_t *c = af__calloc(1, sizeof(*c));
    if (!c)
        return af__err(err, AF_ENOMEM, "out of memory creating the plan cache");
    af_plan_cache_opts_init(&c->opts);
    if (opts)
        c->opts = *opts;
    int rc = AF_ENOMEM;
    if (c->opts.dir && !(c->dir = af__strdup(c->opts.dir)))
        goto fail;
    c->opts.dir = c->dir;
    if ((rc = uv_mutex_init(&c->mu)))
        goto fail;
    if (c->dir && (rc = load_dir(c, err))) {
        uv_mutex_destroy(&c->mu);
        goto fail_quiet;
    }
    *out = c;
    return 0;
fail:
    af__err(err, rc, "cannot create the plan cache: %s", af_strerror(rc));
fail_quiet:
    free_cache(c);
    return rc;
}

void af_plan_cache_destroy(af_plan_cache_t *c)
{
    if (!c)
        return;
    uv_mutex_destroy(&c->mu);
    free_cache(c);
}

/* Plans g (copied) with o — or, given a stored order and offsets, rebuilds that plan with
 * af_plan_restore(), which verifies it — and fills a warm entry. */
static int plan_entry(entry_t *e, const af_graph_t *g, const af_plan_opts_t *o,
                      const int32_t *order, const uint64_t *offsets, af_error_t *err)
{
    int rc = af_graph_copy(g, NULL, &e->g, err);
    if (rc)
        return rc;
    if (order)
        rc = af_plan_restore(e->g, o, order, offsets, &e->plan, err);
    else
        rc = af_plan_create(e->g, o, &e->plan, err);
    if (rc || (rc = af_plan_verify(e->plan, err)))
        return rc;
    const af_plan_report_t *r = af_plan_report(e->plan);
    e->rec = (af_plan_record_t){.key = e->fp,
                                .tensors = af_graph_tensor_count(g),
                                .nodes = af_graph_node_count(g),
                                .arena_bytes = af_plan_arena_bytes(e->plan)};
    snprintf(e->rec.schedule, sizeof e->rec.schedule, "%s", r->schedule ? r->schedule : "");
    snprintf(e->rec.placer, sizeof e->rec.placer, "%s", r->placer ? r->placer : "");
    e->bytes = entry_bytes(e->rec.tensors, e->rec.nodes, af_plan_reuse_edge_count(e->plan));
    return 0;
}

/* A cold entry's first lookup: rebuild the stored plan (order + offsets, verified) for this
 * graph. Returns 1 when restored, 0 when the file did not fit the graph and it was re-planned. */
static int restore(af_plan_cache_t *c, entry_t *e, const af_graph_t *g, const af_plan_opts_t *o,
                   af_error_t *err, int *rc)
{
    entry_t tmp = {.fp = e->fp};
    int32_t nt = 0, nn = 0; /* a fused plan's record has the fused graph's counts */
    int same = af_plan_restore_counts(g, o, &nt, &nn, NULL) == 0 && e->rec.tensors == nt &&
               e->rec.nodes == nn &&
               plan_entry(&tmp, g, o, e->rec.order, e->rec.offsets, NULL) == 0 &&
               af_plan_arena_bytes(tmp.plan) == e->rec.arena_bytes;
    if (same) { /* keep the names of the scheduler and placer that made it */
        memcpy(tmp.rec.schedule, e->rec.schedule, sizeof tmp.rec.schedule);
        memcpy(tmp.rec.placer, e->rec.placer, sizeof tmp.rec.placer);
    }
    /* a plan rewritten under a budget (recompute / offload nodes) is stored with the rewritten
     * graph's order, which no source graph restores: planned again, not a mismatch */
    int rewritten = o->budget && e->rec.nodes > af_graph_node_count(g);
    if (!same && !rewritten) {
        char path[4096];
        file_path(c, e->fp, path, sizeof path);
        warn(c, "plan cache: %s does not match the plan its graph gives; re-planned", path);
    }
    if (!same) {
        af_plan_destroy(tmp.plan);
        af_graph_destroy(tmp.g);
        tmp = (entry_t){.fp = e->fp};
        if ((*rc = plan_entry(&tmp, g, o, NULL, NULL, err))) {
            af_plan_destroy(tmp.plan);
            af_graph_destroy(tmp.g);
            return 0;
        }
    }
    af_plan_record_free(&e->rec);
    e->g = tmp.g;
    e->plan = tmp.plan;
    e->rec = tmp.rec;
    c->st.bytes -= e->bytes;
    e->bytes = tmp.bytes;
    c->st.bytes += e->bytes;
    *rc = 0;
    if (!same && persist(c, e, c->opts.durable ? err : NULL) && c->opts.durable)
        *rc = AF_EIO; /* durable: the caller drops the entry, a retry writes it again */
    return same;
}

int af_plan_cache_get(af_plan_cache_t *c, const af_graph_t *g, const af_plan_opts_t *opts,
                      const af_plan_t **out, int *hit, af_error_t *err)
{
    if (!c || !g || !out || !af_graph_is_finalized(g))
        return af__err(err, AF_EINVAL, "af_plan_cache_get: bad arguments");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (opts)
        o = *opts;
    uint64_t fp = af_plan_fingerprint(g, &o);
    int rc = 0, h = 0;
    uv_mutex_lock(&c->mu);
    entry_t *e = c->head;
    while (e && e->fp != fp)
        e = e->next;
    if (e && e->plan) {
        h = 1;
        c->st.hits++;
    } else if (e) {
        if (restore(c, e, g, &o, err, &rc)) {
            h = 1;
            c->st.hits++;
            c->st.restored++;
        } else if (rc) {
            lru_unlink(c, e);
            c->st.bytes -= e->bytes;
            c->st.entries--;
            entry_free(e);
            e = NULL;
        } else {
            c->st.misses++;
        }
    } else {
        c->st.misses++;
        e = af__calloc(1, sizeof(*e));
        if (!e) {
            rc = af__err(err, AF_ENOMEM, "out of memory in the plan cache");
        } else {
            e->fp = fp;
            rc = plan_entry(e, g, &o, NULL, NULL, err);
            if (!rc && persist(c, e, c->opts.durable ? err : NULL) && c->opts.durable)
                rc = AF_EIO; /* durable: not kept, so a retry plans and writes again */
            if (rc) {
                entry_free(e);
                e = NULL;
            } else {
                e->pins = 1; /* not evictable by its own insertion */
                insert(c, e);
                e->pins = 0;
            }
        }
    }
    if (e && !rc) {
        lru_unlink(c, e);
        lru_push_front(c, e);
        e->pins++;
        *out = e->plan;
    }
    uv_mutex_unlock(&c->mu);
    if (hit)
        *hit = h;
    return rc;
}

void af_plan_cache_release(af_plan_cache_t *c, const af_plan_t *p)
{
    if (!c || !p)
        return;
    uv_mutex_lock(&c->mu);
    for (entry_t *e = c->head; e; e = e->next)
        if (e->plan == p) {
            if (e->pins > 0)
                e->pins--;
            break;
        }
    evict(c);
    uv_mutex_unlock(&c->mu);
}

void af_plan_cache_set_max_bytes(af_plan_cache_t *c, uint64_t max_bytes)
{
    if (!c)
        return;
    uv_mutex_lock(&c->mu);
    c->opts.max_bytes = max_bytes;
    evict(c);
    uv_mutex_unlock(&c->mu);
}

void af_plan_cache_stats(af_plan_cache_t *c, af_plan_cache_stats_t *out)
{
    uv_mutex_lock(&c->mu);
    *out = c->st;
    uv_mutex_unlock(&c->mu);
}

const char *af_plan_cache_warning(af_plan_cache_t *c, int32_t i)
{
    uv_mutex_lock(&c->mu);
    const char *w = i >= 0 && (size_t)i < c->n_warn ? c->warn[i] : NULL;
    uv_mutex_unlock(&c->mu);
    return w;
}
