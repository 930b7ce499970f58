/*
 * arenaflowd graph registry, per-id serialisation and the state directory's graph files.
 *
 * A graph's id is the library's one graph fingerprint (af_graph_fingerprint, XXH3-128 over the
 * graph's fields) salted with the planner settings string, taken on the graph as its stored
 * canonical JSON reads back (af_graph_to_json then af_graph_parse_json: what a restart loads), so
 * formatting and key order of the submitted text do not matter. Submitting a graph that is already
 * listed is therefore a cache hit, across restarts too.
 * An id is exactly 32 lowercase hex digits; anything else on an {id} route is unknown, so no
 * request ever names a file that is not one of ours (no path traversal, no empty id).
 *
 * Persistence: each graph is one file <state_dir>/graphs/<id>.json holding
 *   {"format":"arenaflowd-graph/1","id":..., "planner":"k=v;...", "graph":{...}}
 * through the library's one durable write (af_file_write_durable_fn: a temp file no other writer
 * uses, created with O_EXCL and ending in ".tmp", fsync'd, renamed over the final name, and the
 * directory fsync'd), so after a crash (kill -9,
 * power loss) a file is either the complete old state or the complete new one, never a torn
 * mix, and two writers never share a temp file. Every step's result is returned: the caller
 * answers 201 only when all of them succeeded.
 *
 * Per-id serialisation (af__id_run/af__id_release): an id with an operation in progress has a
 * lock record holding a FIFO of operations; the head holds the id. Submissions and deletions of
 * one id therefore run one after another in arrival order, so a DELETE can never remove the
 * file of a graph that a later-acknowledged submission relies on.
 *
 * Entries are reference counted: the registry holds one reference while the graph is listed and
 * every run in flight holds one, so DELETE during a run unlists at once and frees after the run.
 * Loop thread only, except the file functions and af__fingerprint_graph(), which are thread-safe.
 */
#include "daemon/daemon_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FORMAT_TAG "arenaflowd-graph/1"

int af__fingerprint_graph(const af_graph_t *g, const char *planner, char id[AF__ID_LEN + 1])
{
    af_fingerprint_t fp;
    int rc = af_graph_fingerprint(g, planner, strlen(planner), &fp);
    if (rc == 0)
        af_fingerprint_hex(&fp, id);
    return rc;
}

int af__id_valid(const char *s, size_t n)
{
    if (n != AF__ID_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int af__planner_opts_from_string(const char *s, af_plan_opts_t *o, af_error_t *err)
{
    af_plan_opts_init(o);
    char buf[AF__DCFG_MAX_PLANNER * 100];
    if (strlen(s) >= sizeof(buf))
        return af__err(err, AF_EPARSE, "planner settings too long");
    snprintf(buf, sizeof(buf), "%s", s);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return af__err(err, AF_EPARSE, "planner setting '%s' has no '='", kv);
        *eq = '\0';
        int rc = af_plan_opts_set(o, kv, eq + 1, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- files ------------------------------------------------------------------------------- */

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* The file's head: {"format":...,"id":...,"planner":...,"graph": (the graph text follows). */
static char *file_head(const char *id, const char *planner)
{
    json_t *pl = json_string(planner);
    char *pls = pl ? json_dumps(pl, JSON_ENCODE_ANY) : NULL;
    json_decref(pl);
    if (!pls)
        return NULL;
    size_t n = strlen(pls) + 128;
    char *head = malloc(n);
    if (head)
        snprintf(head, n, "{\"format\":\"%s\",\"id\":\"%s\",\"planner\":%s,\"graph\":", FORMAT_TAG,
                 id, pls);
    free(pls);
    return head;
}

typedef struct gfile {
    const char *head, *text;
} gfile_t;

static int fill_graph_file(int fd, void *ctx)
{
    const gfile_t *f = ctx;
    if (af_file_write_all(fd, f->head, strlen(f->head)) ||
        af_file_write_all(fd, f->text, strlen(f->text)))
        return -1;
    return af_file_write_all(fd, "}", 1);
}

int af__store_write(const char *state_dir, const char *id, const char *text, const char *planner,
                    af_error_t *err)
{
    if (!state_dir[0])
        return 0;
    char fin[AF__DCFG_STR + 64];
    snprintf(fin, sizeof(fin), "%s/graphs/%s.json", state_dir, id);
    char *head = file_head(id, planner);
    if (!head)
        return af__err(err, AF_ENOMEM, "out of memory writing %s", fin);
    gfile_t f = {head, text};
    int rc = af_file_write_durable_fn(fin, fill_graph_file, &f, err);
    free(head);
    return rc;
}

int af__store_unlink(const char *state_dir, const char *id, af_error_t *err)
{
    if (!state_dir[0])
        return 0;
    char dir[AF__DCFG_STR + 16], fin[AF__DCFG_STR + 64];
    snprintf(dir, sizeof(dir), "%s/graphs", state_dir);
    snprintf(fin, sizeof(fin), "%s/%s.json", dir, id);
    if (unlink(fin) != 0 && errno != ENOENT)
        return af__err(err, -errno, "cannot remove %s: %s", fin, strerror(errno));
    int rc = fsync_dir(dir);
    if (rc != 0)
        return af__err(err, rc, "cannot fsync %s: %s", dir, strerror(-rc));
    return 0;
}

int af__store_plan_durable(const char *state_dir, uint64_t fp, af_error_t *err)
{
    if (!state_dir[0])
        return 0;
    char dir[AF__DCFG_STR + 16], path[AF__DCFG_STR + 64];
    snprintf(dir, sizeof(dir), "%s/plans", state_dir);
    snprintf(path, sizeof(path), "%s/%016llx.afplan", dir, (unsigned long long)fp);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return af__err(err, AF_EIO, "the plan file %s was not written", path);
    int rc = fsync_dir(dir);
    if (rc != 0)
        return af__err(err, AF_EIO, "cannot fsync %s: %s", dir, strerror(-rc));
    return 0;
}

/* ---- the registry ------------------------------------------------------------------------ */

af__entry_t *af__store_find(af__daemon_t *d, const char *id)
{
    for (size_t i = 0; i < d->n_entries; i++)
        if (strcmp(d->entries[i]->id, id) == 0)
            return d->entries[i];
    return NULL;
}

af__entry_t *af__entry_new(const char *id, af_plan_cache_t *cache, const af_plan_t *plan,
                           char *planner_taken, uint64_t held)
{
    af__entry_t *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->cache = cache;
    e->plan = plan;
    e->graph = af_plan_graph(plan);
    e->planner = planner_taken;
    e->held = held;
    e->refs = 1;
    return e;
}

int af__store_add(af__daemon_t *d, af__entry_t *e)
{
    if (d->n_entries == d->cap_entries) {
        size_t cap = d->cap_entries ? d->cap_entries * 2 : 16;
        af__entry_t **n = realloc(d->entries, cap * sizeof(*n));
        if (!n)
            return AF_ENOMEM;
        d->entries = n;
        d->cap_entries = cap;
    }
    e->listed = 1;
    e->owner = d;
    if (!e->created_unix)
        e->created_unix = (uint64_t)time(NULL);
    d->entries[d->n_entries++] = e;
    d->held_bytes += e->held;
    return 0;
}

void af__entry_ref(af__entry_t *e)
{
    e->refs++;
}

void af__entry_unref(af__entry_t *e)
{
    if (--e->refs > 0)
        return;
    af__work_entry_release(e);
    af__cache_release(e->owner, e->cache, e->plan);
    free(e->planner);
    free(e);
}

void af__store_unlist(af__daemon_t *d, af__entry_t *e)
{
    for (size_t i = 0; i < d->n_entries; i++) {
        if (d->entries[i] != e)
            continue;
        memmove(&d->entries[i], &d->entries[i + 1], (d->n_entries - i - 1) * sizeof(e));
        d->n_entries--;
        break;
    }
    d->held_bytes -= e->held;
    e->listed = 0;
    af__entry_unref(e);
}

void af__store_free_all(af__daemon_t *d)
{
    while (d->n_entries > 0)
        af__store_unlist(d, d->entries[d->n_entries - 1]);
    free(d->entries);
    d->entries = NULL;
    d->cap_entries = 0;
}

/* ---- per-id serialisation ---------------------------------------------------------------- */

/* The queue of one id. Its nodes belong to the store, so an operation may free itself (its job)
 * before or after it releases the id: the queue never reads an operation's memory again once
 * its fn has been called. */
typedef struct waiting {
    af__op_t *op;
    struct waiting *next;
} waiting_t;

struct af__idlock {
    char id[AF__ID_LEN + 1];
    waiting_t *head, *tail; /* head holds the id */
    int started;            /* head's fn was called */
    int dispatching;        /* inside dispatch(): releases only pop, dispatch starts the next */
    af__idlock_t *next;
};

static af__idlock_t *lock_find(const af__daemon_t *d, const char *id)
{
    for (af__idlock_t *l = d->locks; l; l = l->next)
        if (strcmp(l->id, id) == 0)
            return l;
    return NULL;
}

static void lock_free(af__daemon_t *d, af__idlock_t *lk)
{
    for (af__idlock_t **p = &d->locks; *p; p = &(*p)->next)
        if (*p == lk) {
            *p = lk->next;
            break;
        }
    free(lk);
}

/* Starts operations while the head finishes synchronously (answers at once and releases); stops
 * at one that holds the id across a work request. Iterative, so a queue of instant operations
 * does not recurse. */
static void dispatch(af__daemon_t *d, af__idlock_t *lk)
{
    lk->dispatching = 1;
    while (lk->head && !lk->started) { /* started stays 1 while the head holds the id */
        lk->started = 1;
        lk->head->op->fn(d, lk->head->op);
    }
    lk->dispatching = 0;
    if (!lk->head)
        lock_free(d, lk);
}

int af__id_run(af__daemon_t *d, const char *id, af__op_t *op)
{
    waiting_t *w = calloc(1, sizeof(*w));
    if (!w)
        return AF_ENOMEM;
    w->op = op;
    af__idlock_t *lk = lock_find(d, id);
    if (lk) {
        if (lk->tail)
            lk->tail->next = w;
        else
            lk->head = w;
        lk->tail = w; /* a lock's head has started: w runs when the ones before it released */
        return 0;
    }
    lk = calloc(1, sizeof(*lk));
    if (!lk) {
        free(w);
        return AF_ENOMEM;
    }
    snprintf(lk->id, sizeof(lk->id), "%s", id);
    lk->head = lk->tail = w;
    lk->next = d->locks;
    d->locks = lk;
    dispatch(d, lk);
    return 0;
}

void af__id_release(af__daemon_t *d, const char *id)
{
    af__idlock_t *lk = lock_find(d, id);
    if (!lk || !lk->head)
        return;
    waiting_t *w = lk->head;
    lk->head = w->next;
    if (!lk->head)
        lk->tail = NULL;
    free(w);
    lk->started = 0;
    if (lk->dispatching)
        return;
    if (lk->head)
        dispatch(d, lk);
    else
        lock_free(d, lk);
}

int af__id_busy(const af__daemon_t *d, const char *id)
{
    return lock_find(d, id) != NULL;
}
