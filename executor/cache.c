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
 * File format (native endianness; the version and a byte-order mark reject foreign files):
 *   header  { magic "AFPLANC", version, bom 0x01020304, fingerprint, tensors, nodes, arena
 *             bytes, scheduler name[32], placer name[32] }
 *   order   int32 x nodes
 *   offsets uint64 x tensors
 *   trailer XXH3-64 of everything before it
 *
 * Lock rule: one mutex per cache, held for whole lookups, planning included (a cache serialises
 * the planning it does; the executor's locks are never taken under it).
 */
#define XXH_STATIC_LINKING_ONLY
#include "arenaflow/cache.h"
#include "executor/executor_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define CACHE_VERSION 1u
#define CACHE_BOM 0x01020304u
#define NAME_LEN 32

typedef struct file_hdr {
    char magic[8];
    uint32_t version, bom;
    uint64_t fp;
    int32_t nt, nn;
    uint64_t arena;
    char sched[NAME_LEN], placer[NAME_LEN];
} file_hdr_t;

typedef struct entry {
    uint64_t fp;
    af_graph_t *g;   /* warm: the cache's copy of the graph */
    af_plan_t *plan; /* warm */
    int32_t *order;  /* cold: as stored */
    uint64_t *offsets;
    file_hdr_t hdr;
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
    uint64_t tmp_seq;
};

void af_plan_cache_opts_init(af_plan_cache_opts_t *o)
{
    o->max_bytes = 256ull << 20;
    o->dir = NULL;
}

/* ---- fingerprint ------------------------------------------------------------------------ */

static void h_bytes(XXH3_state_t *s, const void *p, size_t n)
{
    XXH3_64bits_update(s, p, n);
}
static void h_u64(XXH3_state_t *s, uint64_t v)
{
    h_bytes(s, &v, sizeof v);
}
static void h_f64(XXH3_state_t *s, double v)
{
    h_bytes(s, &v, sizeof v);
}
static void h_str(XXH3_state_t *s, const char *str)
{
    size_t n = str ? strlen(str) : 0;
    h_u64(s, n);
    h_bytes(s, str ? str : "", n);
}

static void h_attrs(XXH3_state_t *s, const af_node_info_t *ni)
{
    h_u64(s, (uint64_t)ni->n_attrs);
    for (int32_t a = 0; a < ni->n_attrs; a++) {
        const af_attr_t *at = &ni->attrs[a];
        h_str(s, at->name);
        h_u64(s, (uint64_t)at->type);
        h_u64(s, (uint64_t)at->i);
        h_f64(s, at->f);
        h_str(s, at->type == AF_ATTR_STRING ? at->s : NULL);
        h_u64(s, (uint64_t)at->n);
        if (at->type == AF_ATTR_INTS && at->n > 0)
            h_bytes(s, at->ints, (size_t)at->n * sizeof(int64_t));
        if (at->type == AF_ATTR_FLOATS && at->n > 0)
            h_bytes(s, at->floats, (size_t)at->n * sizeof(double));
    }
}

uint64_t af_plan_fingerprint(const af_graph_t *g, const af_plan_opts_t *opts)
{
    XXH3_state_t s;
    XXH3_64bits_reset(&s);
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (opts)
        o = *opts;
    h_str(&s, "arenaflow-plan-v1");
    h_str(&s, o.schedule ? o.schedule : "best");
    h_str(&s, o.placer ? o.placer : "portfolio");
    uint64_t ints[] = {(uint64_t)o.mode,
                       o.alignment,
                       o.budget,
                       o.capacity,
                       (uint64_t)o.inplace,
                       (uint64_t)o.safe_mode,
                       (uint64_t)o.parallel_reuse,
                       (uint64_t)o.dp_max_nodes,
                       o.dp_max_states,
                       (uint64_t)o.verify,
                       o.search_effort};
    h_bytes(&s, ints, sizeof ints);
    h_f64(&s, o.alpha);
    h_f64(&s, o.beta);
    h_f64(&s, o.time_limit_s);
    if (o.budget) { /* the budget passes' options change the plan only under a budget */
        uint64_t passes[] = {(uint64_t)o.recompute, (uint64_t)o.offload};
        h_bytes(&s, passes, sizeof passes);
        h_f64(&s, o.bandwidth);
        h_f64(&s, o.compute_rate);
    }
    h_str(&s, af_graph_name(g));
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    h_u64(&s, (uint64_t)nt);
    h_u64(&s, (uint64_t)nn);
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        h_str(&s, ti->name);
        uint64_t v[] = {(uint64_t)ti->bytes, (uint64_t)ti->dtype,    (uint64_t)ti->rank,
                        (uint64_t)ti->kind,  (uint64_t)ti->alias_of, (uint64_t)ti->alias_offset};
        h_bytes(&s, v, sizeof v);
        if (ti->rank > 0)
            h_bytes(&s, ti->shape, (size_t)ti->rank * sizeof(int64_t));
    }
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        h_str(&s, ni->name);
        h_str(&s, ni->op);
        h_u64(&s, (uint64_t)ni->n_inputs);
        h_bytes(&s, ni->inputs, (size_t)ni->n_inputs * sizeof(int32_t));
        h_u64(&s, (uint64_t)ni->n_outputs);
        h_bytes(&s, ni->outputs, (size_t)ni->n_outputs * sizeof(int32_t));
        h_f64(&s, ni->cost);
        h_u64(&s, (uint64_t)ni->n_inplace);
        if (ni->n_inplace > 0)
            h_bytes(&s, ni->inplace, (size_t)ni->n_inplace * sizeof(af_inplace_t));
        h_attrs(&s, ni);
    }
    return XXH3_64bits_digest(&s);
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
    af__free(e->order);
    af__free(e->offsets);
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

static int write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes the entry's file atomically: temp file, fsync, rename, fsync of the directory. */
static void persist(af_plan_cache_t *c, const entry_t *e)
{
    if (!c->dir)
        return;
    const af_plan_t *p = e->plan;
    if (af_plan_graph(p) != e->g)
        return; /* rewritten under a budget: the file holds the source graph's order only, so
                   such a plan is planned again after a restart instead of stored */
    int32_t nt = e->hdr.nt, nn = e->hdr.nn;
    size_t n = sizeof(file_hdr_t) + (size_t)nn * 4 + (size_t)nt * 8;
    uint8_t *buf = af__malloc(n + 8);
    if (!buf) {
        warn(c, "plan cache: out of memory writing a cache file");
        return;
    }
    memcpy(buf, &e->hdr, sizeof(file_hdr_t));
    memcpy(buf + sizeof(file_hdr_t), af_plan_order(p), (size_t)nn * 4);
    uint64_t *offs = (uint64_t *)(void *)(buf + sizeof(file_hdr_t) + (size_t)nn * 4);
    for (int32_t t = 0; t < nt; t++) {
        uint64_t off = af_plan_tensor(p, t)->offset;
        memcpy(&offs[t], &off, 8);
    }
    uint64_t sum = XXH3_64bits(buf, n);
    memcpy(buf + n, &sum, 8);
    char path[4096], tmp[4160];
    file_path(c, e->fp, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%llu", path, (long)getpid(),
             (unsigned long long)c->tmp_seq++);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok = fd >= 0 && write_all(fd, buf, n + 8) == 0 && fsync(fd) == 0;
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok) {
        warn(c, "plan cache: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    } else {
        int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        c->st.files_written++;
    }
    af__free(buf);
}

static int read_file(const char *path, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat sb;
    uint8_t *buf = NULL;
    if (fstat(fd, &sb) != 0 || sb.st_size < 0 || sb.st_size > (1ll << 34) ||
        !(buf = af__malloc((size_t)sb.st_size + 1))) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *len = got;
    return 0;
}

/* Validates one file; returns a cold entry or NULL with *why set. */
static entry_t *load_file(const char *path, uint64_t want_fp, const char **why)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    entry_t *e = NULL;
    file_hdr_t h;
    if (read_file(path, &buf, &len)) {
        *why = "cannot be read";
        return NULL;
    }
    if (len < sizeof h + 8) {
        *why = "truncated";
        goto out;
    }
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, "AFPLANC", 8) != 0) {
        *why = "not a plan cache file (bad magic)";
        goto out;
    }
    if (h.version != CACHE_VERSION || h.bom != CACHE_BOM) {
        *why = "foreign format version or byte order";
        goto out;
    }
    if (h.nt < 0 || h.nn < 0 || h.nt > (1 << 28) || h.nn > (1 << 28) ||
        len != sizeof h + (size_t)h.nn * 4 + (size_t)h.nt * 8 + 8) {
        *why = "size fields do not match the file length";
        goto out;
    }
    uint64_t sum;
    memcpy(&sum, buf + len - 8, 8);
    if (XXH3_64bits(buf, len - 8) != sum) {
        *why = "checksum mismatch (corrupted)";
        goto out;
    }
    if (h.fp != want_fp || memchr(h.sched, 0, NAME_LEN) == NULL ||
        memchr(h.placer, 0, NAME_LEN) == NULL) {
        *why = "fingerprint does not match the file name";
        goto out;
    }
    e = af__calloc(1, sizeof(*e));
    if (e) {
        e->order = af__malloc((size_t)h.nn * 4 + 4);
        e->offsets = af__malloc((size_t)h.nt * 8 + 8);
    }
    if (!e || !e->order || !e->offsets) {
        entry_free(e);
        e = NULL;
        *why = "out of memory";
        goto out;
    }
    e->fp = h.fp;
    e->hdr = h;
    memcpy(e->order, buf + sizeof h, (size_t)h.nn * 4);
    memcpy(e->offsets, buf + sizeof h + (size_t)h.nn * 4, (size_t)h.nt * 8);
    e->bytes = entry_bytes(h.nt, h.nn, 0);
out:
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
        const char *why = "file name is not <fingerprint>.afplan";
        entry_t *e = NULL;
        if (n == 16 + 7 && sscanf(de->d_name, "%16llx%15s", &fp, tail) == 2 &&
            strcmp(tail, ".afplan") == 0)
            e = load_file(path, fp, &why);
        if (!e) {
            c->st.files_rejected++;
            warn(c, "plan cache: ignored %s: %s", path, why);
            continue;
        }
        c->st.files_loaded++;
        insert(c, e);
    }
    closedir(d);
    return 0;
}

/* ---- public calls ----------------------------------------------------------------------- */

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
    return rc;
}

void af_plan_cache_destroy(af_plan_cache_t *c)
{
    if (!c)
        return;
    while (c->head) {
        entry_t *e = c->head;
        lru_unlink(c, e);
        entry_free(e);
    }
    for (size_t i = 0; i < c->n_warn; i++)
        af__free(c->warn[i]);
    af__free(c->warn);
    uv_mutex_destroy(&c->mu);
    af__free(c->dir);
    af__free(c);
}

/* Plans g (copied) with o — or, given a stored order and offsets, rebuilds that plan with
 * af_plan_restore(), which verifies it — and fills a warm entry. */
static int plan_entry(entry_t *e, const af_graph_t *g, const af_plan_opts_t *o,
                      const int32_t *order, const uint64_t *offsets, af_error_t *err)
{
    int rc = af__exec_copy_graph(g, NULL, &e->g, err);
    if (rc)
        return rc;
    if (order)
        rc = af_plan_restore(e->g, o, order, offsets, &e->plan, err);
    else
        rc = af_plan_create(e->g, o, &e->plan, err);
    if (rc || (rc = af_plan_verify(e->plan, err)))
        return rc;
    const af_plan_report_t *r = af_plan_report(e->plan);
    memset(&e->hdr, 0, sizeof e->hdr);
    memcpy(e->hdr.magic, "AFPLANC", 8);
    e->hdr.version = CACHE_VERSION;
    e->hdr.bom = CACHE_BOM;
    e->hdr.fp = e->fp;
    e->hdr.nt = af_graph_tensor_count(g);
    e->hdr.nn = af_graph_node_count(g);
    e->hdr.arena = af_plan_arena_bytes(e->plan);
    snprintf(e->hdr.sched, NAME_LEN, "%s", r->schedule ? r->schedule : "");
    snprintf(e->hdr.placer, NAME_LEN, "%s", r->placer ? r->placer : "");
    e->bytes = entry_bytes(e->hdr.nt, e->hdr.nn, af_plan_reuse_edge_count(e->plan));
    return 0;
}

/* A cold entry's first lookup: rebuild the stored plan (order + offsets, verified) for this
 * graph. Returns 1 when restored, 0 when the file did not fit the graph and it was re-planned. */
static int restore(af_plan_cache_t *c, entry_t *e, const af_graph_t *g, const af_plan_opts_t *o,
                   af_error_t *err, int *rc)
{
    entry_t tmp = {.fp = e->fp};
    int same = e->hdr.nt == af_graph_tensor_count(g) && e->hdr.nn == af_graph_node_count(g) &&
               plan_entry(&tmp, g, o, e->order, e->offsets, NULL) == 0 &&
               af_plan_arena_bytes(tmp.plan) == e->hdr.arena;
    if (same) { /* keep the names of the scheduler and placer that made it */
        memcpy(tmp.hdr.sched, e->hdr.sched, NAME_LEN);
        memcpy(tmp.hdr.placer, e->hdr.placer, NAME_LEN);
    }
    if (!same) {
        char path[4096];
        file_path(c, e->fp, path, sizeof path);
        warn(c, "plan cache: %s does not match the plan its graph gives; re-planned", path);
        af_plan_destroy(tmp.plan);
        af_graph_destroy(tmp.g);
        tmp = (entry_t){.fp = e->fp};
        if ((*rc = plan_entry(&tmp, g, o, NULL, NULL, err))) {
            af_plan_destroy(tmp.plan);
            af_graph_destroy(tmp.g);
            return 0;
        }
    }
    af__free(e->order);
    af__free(e->offsets);
    e->order = NULL;
    e->offsets = NULL;
    e->g = tmp.g;
    e->plan = tmp.plan;
    e->hdr = tmp.hdr;
    c->st.bytes -= e->bytes;
    e->bytes = tmp.bytes;
    c->st.bytes += e->bytes;
    if (!same)
        persist(c, e);
    *rc = 0;
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
            if ((rc = plan_entry(e, g, &o, NULL, NULL, err))) {
                entry_free(e);
                e = NULL;
            } else {
                persist(c, e);
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
