/*
 * arenaflowd model plans: planning a model (or one concrete shape of a model with symbolic
 * dims) under the daemon's [limits], and keeping the plans on disk so a restarted daemon
 * restores them instead of planning again.
 *
 * Files: <state_dir>/model_plans/<key>.afplan, key = af_plan_fingerprint(graph, planner
 * options) in hex, the bytes af_plan_encode() gives (written with af_file_write_durable). A
 * plan is found by the graph it is for, not by the model's name: the graph's fingerprint
 * covers its structure, shapes and the planner options, which is all a plan depends on (the
 * weights are not in the plan). A file is never trusted: af_plan_decode() checks its framing
 * and checksum, the record's key and counts must be the graph's, and af_plan_restore()
 * verifies the order and every offset; anything else is planned again (and the file
 * rewritten). The directory is bounded by [models] max_plan_files: after each write the
 * files past that count are removed, least recently used first (a restore touches its file).
 *
 * Off the loop only (uv_queue_work): several workers may write the directory at once
 * (af_file_write_durable is safe for that; two writers of one key write the same bytes).
 */
#include "daemon/oip_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLAN_FILE_MAX (1u << 30)

typedef struct deadline {
    atomic_int *cancel;
    uint64_t end_ns;
    int timed_out;
} deadline_t;

static int plan_interrupt(void *arg)
{
    deadline_t *t = arg;
    if (atomic_load(t->cancel))
        return 1;
    t->timed_out = af_now_ns() > t->end_ns;
    return t->timed_out;
}

/* Plans g as /v1 submissions are: interrupted past max_plan_ms or when the daemon stops. */
static int plan_fresh(const af_graph_t *g, const af_plan_opts_t *po, const af__limits_t *lim,
                      atomic_int *cancel, af_plan_t **out, af_error_t *err)
{
    deadline_t t = {cancel, af_now_ns() + (uint64_t)lim->max_plan_ms * 1000000u, 0};
    af_plan_opts_t o = *po;
    o.interrupt = plan_interrupt;
    o.interrupt_arg = &t;
    int rc = af_plan_create(g, &o, out, err);
    if (rc == AF_ECANCELED && t.timed_out)
        return af__err(err, AF_ETIMEDOUT, "planning took longer than max_plan_ms (%lld ms)",
                       (long long)lim->max_plan_ms);
    return rc;
}

/* The stored plan for g at path, restored and verified; NULL when there is none or it does not
 * fit (why in note). */
static af_plan_t *restore(const af_graph_t *g, const af_plan_opts_t *po, uint64_t key,
                          const char *path, char *note, size_t note_len)
{
    char *buf = NULL;
    size_t len = 0;
    af_error_t err;
    af_error_clear(&err);
    struct stat st;
    if (stat(path, &st) != 0 || af_file_read(path, PLAN_FILE_MAX, &buf, &len, &err) != 0)
        return NULL;
    af_plan_record_t rec = {0};
    af_plan_t *p = NULL;
    int rc = af_plan_decode(buf, len, &rec, &err);
    af_free(buf);
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    if (rc == 0)
        rc = af_plan_restore_counts(g, po, &nt, &nn, &err); /* the fused graph's */
    if (rc == 0 && (rec.key != key || rec.tensors != nt || rec.nodes != nn))
        rc = af__err(&err, AF_EPARSE, "the record is for another graph");
    if (rc == 0)
        rc = af_plan_restore(g, po, rec.order, rec.offsets, &p, &err);
    af_plan_record_free(&rec);
    if (rc != 0) {
        snprintf(note, note_len, "%s not restored (%.300s): planned again", path,
                 err.msg[0] ? err.msg : af_strerror(rc));
        return NULL;
    }
    utimensat(AT_FDCWD, path, NULL, 0); /* the directory's LRU order */
    return p;
}

static void prune(const char *dir, int64_t max);

typedef struct plan_file {
    char name[64];
    int64_t mtime_ns;
} plan_file_t;

static int older(const void *a, const void *b)
{
    const plan_file_t *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

void af__oip_plans_prune(const af__plan_dir_t *pd)
{
    if (pd->dir[0])
        prune(pd->dir, pd->max_files);
}

static void prune(const char *dir, int64_t max)
{
    DIR *dd = opendir(dir);
    plan_file_t *f = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while (dd && (e = readdir(dd)) != NULL) {
        size_t l = strlen(e->d_name);
        char path[AF__DCFG_STR + 128];
        struct stat st;
        if (l < 8 || l >= sizeof(f->name) || strcmp(e->d_name + l - 7, ".afplan") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0)
            continue;
        if (n == cap) {
            plan_file_t *nf = realloc(f, (cap = cap ? cap * 2 : 64) * sizeof(*f));
            if (!nf)
                break;
            f = nf;
        }
        snprintf(f[n].name, sizeof(f[n].name), "%s", e->d_name);
        f[n++].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    if (dd)
        closedir(dd);
    if (n > 0)
        qsort(f, n, sizeof(*f), older);
    for (size_t i = 0; max >= 0 && n > (size_t)max && i < n - (size_t)max; i++) {
        char path[AF__DCFG_STR + 128];
        snprintf(path, sizeof(path), "%s/%s", dir, f[i].name);
        unlink(path);
    }
    free(f);
}

static void store(const af_plan_t *p, uint64_t key, const char *path, const af__plan_dir_t *pd,
                  char *note, size_t note_len)
{
    void *buf = NULL;
    size_t len = 0;
    af_error_t err;
    af_error_clear(&err);
    char parent[sizeof(pd->dir)];
    snprintf(parent, sizeof(parent), "%s", pd->dir);
    char *slash = strrchr(parent, '/');
    if (slash) /* the state directory may not be there yet on the first start */
        *slash = 0, mkdir(parent, 0755);
    mkdir(pd->dir, 0755);
    if (af_plan_encode(p, key, &buf, &len, &err) == 0 &&
        af_file_write_durable(path, buf, len, &err) == 0)
        prune(pd->dir, pd->max_files);
    else
        snprintf(note, note_len, "plan not stored in %s: %.300s", path,
                 err.msg[0] ? err.msg : af_strerror(err.code));
    af_free(buf);
}

int af__oip_plan(const af_graph_t *g, const af_plan_opts_t *po, const af__limits_t *lim,
                 atomic_int *cancel, const af__plan_dir_t *pd, af_plan_t **out, int *restored,
                 char *note, size_t note_len, af_error_t *err)
{
    uint64_t key = pd && pd->dir[0] ? af_plan_fingerprint(g, po) : 0;
    char path[AF__DCFG_STR + 128];
    snprintf(path, sizeof(path), "%s/%016" PRIx64 ".afplan", pd ? pd->dir : "", key);
    note[0] = 0;
    *restored = 0;
    *out = key ? restore(g, po, key, path, note, note_len) : NULL;
    int rc = 0;
    if (*out)
        *restored = 1;
    else if ((rc = plan_fresh(g, po, lim, cancel, out, err)) == 0 && key && pd->max_files > 0)
        store(*out, key, path, pd, note, note_len);
    if (rc == 0 && af_plan_arena_bytes(*out) > lim->max_arena_bytes) {
        rc = af__err(err, AF_EINVAL, "the planned arena has %llu bytes; max_arena_bytes is %llu",
                     (unsigned long long)af_plan_arena_bytes(*out),
                     (unsigned long long)lim->max_arena_bytes);
        af_plan_destroy(*out);
        *out = NULL;
    }
    return rc;
}
