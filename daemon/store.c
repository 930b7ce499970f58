/*
 * arenaflowd graph registry and state directory.
 *
 * A graph's id is its fingerprint: XXH3-128 of the graph's canonical JSON (af_graph_to_json, so
 * formatting and key order of the submitted text do not matter) followed by the planner settings
 * string. Submitting a graph that is already listed is therefore a cache hit, across restarts too.
 *
 * Persistence: each graph is one file <state_dir>/graphs/<id>.json holding
 *   {"format":"arenaflowd-graph/1","id":..., "planner":"k=v;...", "graph":{...}}
 * written as <id>.json.tmp, fsync'd, renamed over the final name, and the directory fsync'd, so
 * after a crash (kill -9, power loss) a file is either the complete old state or the complete new
 * one, never a torn mix. Leftover *.tmp files are removed at start; a file that fails to parse is
 * renamed to *.corrupt and reported, never silently dropped. At start every stored graph is
 * re-planned with the planner settings stored beside it, so its id (and cache hits) are stable.
 *
 * Entries are reference counted: the registry holds one reference while the graph is listed and
 * every run in flight holds one, so DELETE during a run unlists at once and frees after the run.
 * Loop thread only, except af__store_write() and af__fingerprint(), which are thread-safe.
 */
#include "daemon/daemon_int.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FORMAT_TAG "arenaflowd-graph/1"

int af__fingerprint(const af_graph_t *g, const char *planner, char id[AF__ID_LEN + 1],
                    af_error_t *err)
{
    char *text = NULL;
    int rc = af_graph_to_json(g, &text, err);
    if (rc != 0)
        return rc;
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, text, strlen(text));
    XXH3_128bits_update(&st, "\n", 1);
    XXH3_128bits_update(&st, planner, strlen(planner));
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    af_free(text);
    snprintf(id, AF__ID_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
    return 0;
}

int af__planner_opts_from_string(const char *s, af_plan_opts_t *o, af_error_t *err)
{
    af_plan_opts_init(o);
    char buf[AF__DCFG_MAX_PLANNER * 100];
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

static void graphs_dir(const char *state_dir, char *out, size_t len)
{
    snprintf(out, len, "%s/graphs", state_dir);
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static char *file_text(const af_graph_t *g, const char *id, const char *planner, af_error_t *err)
{
    char *gtext = NULL;
    if (af_graph_to_json(g, &gtext, err) != 0)
        return NULL;
    json_error_t je;
    json_t *gj = json_loads(gtext, 0, &je);
    af_free(gtext);
    if (!gj) {
        af__err(err, AF_EPARSE, "graph JSON does not re-parse: %s", je.text);
        return NULL;
    }
    json_t *root = json_pack("{s:s, s:s, s:s, s:o}", "format", FORMAT_TAG, "id", id, "planner",
                             planner, "graph", gj);
    char *out = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!out)
        af__err(err, AF_ENOMEM, "out of memory serialising graph %s", id);
    return out;
}

int af__store_write(const char *state_dir, const char *id, const af_graph_t *g, const char *planner,
                    af_error_t *err)
{
    if (!state_dir[0])
        return 0;
    char dir[AF__DCFG_STR + 16], tmp[AF__DCFG_STR + 64], fin[AF__DCFG_STR + 64];
    graphs_dir(state_dir, dir, sizeof(dir));
    snprintf(fin, sizeof(fin), "%s/%s.json", dir, id);
    snprintf(tmp, sizeof(tmp), "%s/%s.json.tmp", dir, id);
    char *text = file_text(g, id, planner, err);
    if (!text)
        return err ? err->code : AF_ENOMEM;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -errno : write_all(fd, text, strlen(text));
    free(text);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, fin) != 0)
        rc = -errno;
    if (rc == 0)
        rc = fsync_dir(dir);
    if (rc != 0) {
        unlink(tmp);
        return af__err(err, AF_EIO, "cannot write %s: %s", fin, strerror(-rc));
    }
    return 0;
}

af__entry_t *af__store_find(af__daemon_t *d, const char *id)
{
    for (size_t i = 0; i < d->n_entries; i++)
        if (strcmp(d->entries[i]->id, id) == 0)
            return d->entries[i];
    return NULL;
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
    e->refs = 1;
    e->listed = 1;
    if (!e->created_unix)
        e->created_unix = (uint64_t)time(NULL);
    d->entries[d->n_entries++] = e;
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
    for (int i = 0; i < 2; i++)
        af_session_destroy(e->session[i]);
    if (e->plan)
        af_plan_cache_release(e->cache, e->plan);
    af_graph_destroy(e->graph);
    free(e->planner);
    free(e);
}

void af__store_remove(af__daemon_t *d, af__entry_t *e)
{
    for (size_t i = 0; i < d->n_entries; i++) {
        if (d->entries[i] != e)
            continue;
        memmove(&d->entries[i], &d->entries[i + 1], (d->n_entries - i - 1) * sizeof(e));
        d->n_entries--;
        break;
    }
    if (d->cfg.state_dir[0]) {
        char dir[AF__DCFG_STR + 16], fin[AF__DCFG_STR + 64];
        graphs_dir(d->cfg.state_dir, dir, sizeof(dir));
        snprintf(fin, sizeof(fin), "%s/%s.json", dir, e->id);
        if (unlink(fin) != 0 && errno != ENOENT)
            af__dlog(AF__LOG_WARN, "cannot remove %s: %s", fin, strerror(errno));
        fsync_dir(dir);
    }
    e->listed = 0;
    af__entry_unref(e);
}

void af__store_free_all(af__daemon_t *d)
{
    for (size_t i = 0; i < d->n_entries; i++) {
        d->entries[i]->listed = 0;
        af__entry_unref(d->entries[i]);
    }
    free(d->entries);
    d->entries = NULL;
    d->n_entries = d->cap_entries = 0;
}

/* Parses one stored file into a planned entry. NULL with a message in err. */
static af__entry_t *load_one(af_plan_cache_t *cache, const char *path, const char *name,
                             af_error_t *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        af__err(err, AF_EPARSE, "%s:%d: %s", path, je.line, je.text);
        return NULL;
    }
    const char *fmt = NULL, *id = NULL, *planner = NULL;
    json_t *gj = NULL;
    af__entry_t *e = NULL;
    char *gtext = NULL;
    if (json_unpack_ex(root, &je, 0, "{s:s, s:s, s:s, s:o}", "format", &fmt, "id", &id, "planner",
                       &planner, "graph", &gj) != 0) {
        af__err(err, AF_EPARSE, "%s: %s", path, je.text);
        goto out;
    }
    if (strcmp(fmt, FORMAT_TAG) != 0 || strlen(id) != AF__ID_LEN ||
        strncmp(name, id, AF__ID_LEN) != 0) {
        af__err(err, AF_EPARSE, "%s: wrong format tag or id", path);
        goto out;
    }
    gtext = json_dumps(gj, JSON_COMPACT);
    af_plan_opts_t opts;
    e = calloc(1, sizeof(*e));
    if (!gtext || !e || !(e->planner = strdup(planner))) {
        af__err(err, AF_ENOMEM, "out of memory loading %s", path);
        goto fail;
    }
    memcpy(e->id, id, AF__ID_LEN + 1);
    e->cache = cache;
    if (af_graph_parse_json(gtext, strlen(gtext), &e->graph, err) != 0 ||
        af__planner_opts_from_string(planner, &opts, err) != 0 ||
        af_plan_cache_get(cache, e->graph, &opts, &e->plan, NULL, err) != 0 ||
        af_plan_verify(e->plan, err) != 0)
        goto fail;
    struct stat sb;
    if (stat(path, &sb) == 0)
        e->created_unix = (uint64_t)sb.st_mtime;
    goto out;
fail:
    if (e) {
        if (e->plan)
            af_plan_cache_release(cache, e->plan);
        af_graph_destroy(e->graph);
        free(e->planner);
        free(e);
    }
    e = NULL;
out:
    free(gtext);
    json_decref(root);
    return e;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int af__store_load_all(af__daemon_t *d)
{
    if (!d->cfg.state_dir[0])
        return 0;
    char dir[AF__DCFG_STR + 16];
    graphs_dir(d->cfg.state_dir, dir, sizeof(dir));
    mkdir(d->cfg.state_dir, 0755);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        af__dlog(AF__LOG_ERROR, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    DIR *dh = opendir(dir);
    if (!dh) {
        af__dlog(AF__LOG_ERROR, "cannot open %s: %s", dir, strerror(errno));
        return -1;
    }
    int loaded = 0;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        char path[AF__DCFG_STR + 300];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (has_suffix(de->d_name, ".tmp")) {
            af__dlog(AF__LOG_INFO, "removing unfinished write %s", path);
            unlink(path);
            continue;
        }
        if (!has_suffix(de->d_name, ".json"))
            continue;
        af_error_t err;
        af_error_clear(&err);
        af__entry_t *e = load_one(d->plans, path, de->d_name, &err);
        if (!e) {
            char bad[AF__DCFG_STR + 320];
            snprintf(bad, sizeof(bad), "%s.corrupt", path);
            af__dlog(AF__LOG_ERROR, "cannot load stored graph (kept as %s): %s", bad, err.msg);
            rename(path, bad);
            continue;
        }
        if (af__store_find(d, e->id) || af__store_add(d, e) != 0) {
            e->refs = 1;
            af__entry_unref(e);
            continue;
        }
        loaded++;
    }
    closedir(dh);
    return loaded;
}
