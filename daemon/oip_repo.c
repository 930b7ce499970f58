/*
 * arenaflowd model repository: the models the /v2 API serves.
 *
 * Layout (read-only for the daemon; several daemons may share one):
 *     DIR/<name>/<version>/model.onnx      an ONNX model with its weights, or
 *     DIR/<name>/<version>/model.json      an arenaflow JSON graph
 *     DIR/<name>/config.json               optional: {"inputs": {"x": [1, 3, 224, 224]},
 *                                          "dims": {"batch_size": 1}} fixes symbolic input dims
 * <name> is [A-Za-z0-9_.-]; <version> a positive decimal number; other entries are skipped.
 * Every version found is loaded; a request without a version gets the highest.
 *
 * A load runs off the loop (uv_queue_work): import, check against [limits], plan with the
 * daemon's [planner] settings, bind a session on the models' executor ([models] kernels, the
 * real kernels by default). The after-work callback lists the new versions and unlists the old
 * ones of the same name; requests in flight keep the model they started with (references), so
 * a reload or an unload never pulls a model from under a round. A model that fails to load is
 * remembered with its reason for /v2/repository/index. Loop thread only, except load_work.
 */
#include "daemon/oip_int.h"
#include "arenaflow/onnx.h"

#include <dirent.h>
#include <stdatomic.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SPECS AF__OIP_MAX_SPECS

typedef struct failure {
    char name[AF__OIP_NAME_MAX];
    char reason[AF_ERROR_MSG_MAX];
    struct failure *next;
} failure_t;

typedef struct load_job {
    uv_work_t w;
    af__daemon_t *d;
    char name[AF__OIP_NAME_MAX]; /* "" = every model of the repository */
    char dir[AF__DCFG_STR];
    af_plan_opts_t plan_opts;
    af__limits_t lim;
    af_executor_t *ex;
    af__plan_dir_t pd;
    af__model_t *got;  /* loaded versions */
    failure_t *failed; /* models (names) that did not load */
    int n_found;       /* model directories seen */
    af__oip_done_fn done;
    void *arg;
} load_job_t;

static failure_t *failures; /* the last failure of each name (loop thread) */

int af__oip_name_valid(const char *s, size_t n)
{
    if (n == 0 || n >= AF__OIP_NAME_MAX || (n == 1 && s[0] == '.') ||
        (n == 2 && s[0] == '.' && s[1] == '.'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* Binds n sessions of plan (each with its own arena instances) into inst; inst[0] first. */
static int bind_instances(af_executor_t *ex, const af_plan_t *plan, int64_t n, af_session_t **inst,
                          af_error_t *err)
{
    int rc = 0;
    for (int64_t i = 0; i < (n < 1 ? 1 : n) && rc == 0; i++)
        rc = af_session_create(ex, plan, NULL, &inst[i], err);
    return rc;
}

static void destroy_instances(af_session_t **inst)
{
    for (int i = 0; i < AF__OIP_MAX_INSTANCES; i++)
        af_session_destroy(inst[i]);
}

static void variant_free(af__variant_t *v)
{
    destroy_instances(v->inst);
    af_plan_destroy(v->plan);
    af_graph_destroy(v->graph);
    free(v);
}

void af__variant_unref(af__variant_t *v)
{
    if (v && --v->refs == 0)
        variant_free(v);
}

static void model_free(af__model_t *m)
{
    while (m->variants) {
        af__variant_t *v = m->variants;
        m->variants = v->next;
        v->listed = 0;
        af__variant_unref(v);
    }
    for (int i = 0; i < m->n_specs; i++)
        free(m->specs[i]);
    destroy_instances(m->inst);
    af_plan_destroy(m->plan);
    af_graph_destroy(m->graph);
    free(m->bq);
    free(m);
}

void af__model_ref(af__model_t *m)
{
    m->refs++;
}

void af__model_unref(af__model_t *m)
{
    if (--m->refs == 0)
        model_free(m);
}

int af__model_pick(af__model_t *m)
{
    int n =
        (int)(m->cfg.instances < AF__OIP_MAX_INSTANCES ? m->cfg.instances : AF__OIP_MAX_INSTANCES);
    int start = n > 1 ? (int)(m->picks++ % (uint64_t)n) : 0, best = start;
    for (int k = 1; k < n; k++) { /* the fewest in flight, ties taken in turn */
        int i = (start + k) % n;
        if (m->inst_inflight[i] < m->inst_inflight[best])
            best = i;
    }
    m->inst_inflight[best]++;
    return best;
}

/* ---- inputs and outputs, shapes ---------------------------------------------------------- */

int32_t af__model_io_count(const af__model_t *m, int output)
{
    if (m->sess)
        return output ? af_session_output_count(m->sess) : af_session_input_count(m->sess);
    int32_t n = 0;
    for (int32_t t = 0; t < af_graph_tensor_count(m->graph); t++)
        n += af_graph_tensor(m->graph, t)->kind == (output ? AF_TENSOR_OUTPUT : AF_TENSOR_INPUT);
    return n;
}

int af__model_io(const af__model_t *m, int output, int32_t i, af_io_info_t *out)
{
    if (m->sess)
        return af_session_io_info(m->sess, output, i, out);
    for (int32_t t = 0, k = 0; t < af_graph_tensor_count(m->graph); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(m->graph, t);
        if (ti->kind != (output ? AF_TENSOR_OUTPUT : AF_TENSOR_INPUT) || k++ != i)
            continue;
        *out = (af_io_info_t){ti->name,     t,         ti->dtype,
                              ti->rank,     ti->shape, ti->bytes < 0 ? 0 : (uint64_t)ti->bytes,
                              ti->bytes < 0};
        return 0;
    }
    return AF_EINVAL;
}

af__variant_t *af__variant_find(af__model_t *m, const char *key)
{
    for (af__variant_t *v = m->variants; v; v = v->next)
        if (strcmp(v->key, key) == 0) {
            v->last_use = ++m->uses;
            return v;
        }
    return NULL;
}

af__variant_t *af__variant_build(const af__model_t *m, const char *key, af_executor_t *ex,
                                 const af_plan_opts_t *po, const af__limits_t *lim,
                                 const af__plan_dir_t *pd, atomic_int *cancel, af_error_t *err)
{
    af__variant_t *v = calloc(1, sizeof(*v));
    char *specs[AF__OIP_MAX_SPECS * 2], keybuf[sizeof(v->key)];
    int n = 0;
    if (!v) {
        af__err(err, AF_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(v->key, sizeof(v->key), "%s", key);
    snprintf(keybuf, sizeof(keybuf), "%s", key);
    for (int i = 0; i < m->n_specs; i++)
        specs[n++] = m->specs[i];
    for (char *save = NULL, *t = strtok_r(keybuf, ";", &save); t && n < AF__OIP_MAX_SPECS * 2;
         t = strtok_r(NULL, ";", &save))
        specs[n++] = t;
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.inputs = (const char *const *)specs;
    o.n_inputs = n;
    o.copy_data = 1;
    af__derr_t kind;
    char why[AF_ERROR_MSG_MAX];
    int rc = af_onnx_load(m->file, &o, &v->graph, err);
    if (rc == 0 && af__limits_check(lim, v->graph, &kind, why, sizeof(why)) != 0)
        rc = af__err(err, AF_EINVAL, "%s", why);
    if (rc == 0)
        rc = af__oip_plan(v->graph, po, lim, cancel, pd, &v->plan, &v->restored, v->note,
                          sizeof(v->note), err);
    if (rc == 0)
        rc = bind_instances(ex, v->plan, m->cfg.instances, v->inst, err);
    if (rc != 0) {
        variant_free(v);
        return NULL;
    }
    v->sess = v->inst[0];
    v->refs = 1;
    return v;
}

af__variant_t *af__variant_add(af__model_t *m, af__variant_t *v, int64_t max)
{
    af__variant_t *have = af__variant_find(m, v->key);
    if (have) { /* another request planned this shape first */
        af__variant_unref(v);
        return have;
    }
    while (m->n_variants >= max) { /* evict the least recently used idle variant */
        af__variant_t **lru = NULL;
        for (af__variant_t **p = &m->variants; *p; p = &(*p)->next)
            if ((*p)->refs == 1 && (!lru || (*p)->last_use < (*lru)->last_use))
                lru = p;
        if (!lru)
            break; /* every one is in use: keep one more for now */
        af__variant_t *old = *lru;
        *lru = old->next;
        old->listed = 0;
        m->n_variants--;
        af__dlog(AF__LOG_INFO, "model %s: shape %s evicted ([models] max_shapes %lld)", m->name,
                 old->key, (long long)max);
        af__variant_unref(old);
    }
    v->listed = 1;
    v->last_use = ++m->uses;
    v->next = m->variants;
    m->variants = v;
    m->n_variants++;
    if (v->note[0])
        af__dlog(AF__LOG_WARN, "model %s: %s", m->name, v->note);
    af__dlog(AF__LOG_INFO, "model %s version %lld: %s for %s (arena %llu bytes, %d nodes fused)",
             m->name, (long long)m->version, v->restored ? "plan restored" : "planned", v->key,
             (unsigned long long)af_plan_arena_bytes(v->plan),
             (int)af_plan_report(v->plan)->fused_nodes);
    return v;
}

/* ---- off the loop: reading one model ----------------------------------------------------- */

/* Imports an ONNX model with specs. A model whose inputs keep symbolic dims is imported again
 * with them dynamic, for its metadata: it becomes poly (one plan per concrete shape). */
static int load_onnx(af__model_t *m, const char *path, char **specs, int n, af_error_t *err)
{
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.inputs = (const char *const *)specs;
    o.n_inputs = n;
    o.copy_data = 1; /* the repository's files may be replaced while the model is served */
    int rc = af_onnx_load(path, &o, &m->graph, err);
    if (rc == AF_EINVAL && strstr(err->msg, "unknown dims")) {
        o.allow_dynamic = 1;
        o.skip_data = 1; /* metadata only: the variants load the weights */
        af_error_clear(err);
        if ((rc = af_onnx_load(path, &o, &m->graph, err)) == 0) {
            m->poly = 1;
            snprintf(m->file, sizeof(m->file), "%s", path);
            for (int i = 0; i < n; i++)
                m->specs[m->n_specs++] = strdup(specs[i]);
        }
    }
    return rc;
}

static int load_graph(load_job_t *j, const char *vdir, const char *cfg, af__model_t *m,
                      af_error_t *err)
{
    (void)j;
    char path[AF__DCFG_STR * 2 + 64], *specs[AF__OIP_MAX_SPECS];
    struct stat st;
    int n = 0, rc;
    if (af__oip_read_config(cfg, specs, &n, &m->cfg, err->msg, sizeof(err->msg)) != 0) {
        for (int i = 0; i < n; i++)
            free(specs[i]);
        return err->code = AF_EINVAL;
    }
    snprintf(path, sizeof(path), "%s/model.onnx", vdir);
    if (stat(path, &st) == 0) {
        rc = load_onnx(m, path, specs, n, err);
        snprintf(m->platform, sizeof(m->platform), "onnx");
    } else if (snprintf(path, sizeof(path), "%s/model.json", vdir), stat(path, &st) == 0) {
        rc = af_graph_load_json(path, &m->graph, err);
        snprintf(m->platform, sizeof(m->platform), "arenaflow_graph");
    } else {
        rc = af__err(err, AF_ENOENT, "%s has no model.onnx or model.json", vdir);
    }
    for (int i = 0; i < n; i++)
        free(specs[i]);
    return rc;
}

/* A model whose input or output has no arenaflow dtype (complex numbers; an ONNX STRING tensor is
 * AF_DTYPE_STRING, OIP BYTES) has no OIP datatype for it, so it is not served (docs/serve.md). */
static int check_io_types(const af__model_t *m, const char *kernels, af_error_t *err)
{
    int patterns = !strcmp(kernels, "verify") || !strcmp(kernels, "empty");
    for (int32_t t = 0; t < af_graph_tensor_count(m->graph); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(m->graph, t);
        if (ti->kind == AF_TENSOR_OUTPUT && ti->dtype == AF_DTYPE_STRING && patterns)
            return af__err(err, AF_EINVAL,
                           "output '%s' is BYTES, and the %s kernels write patterns, not strings "
                           "([models] kernels = real serves it)",
                           ti->name, kernels);
        if ((ti->kind != AF_TENSOR_INPUT && ti->kind != AF_TENSOR_OUTPUT) ||
            ti->dtype != AF_DTYPE_UNKNOWN)
            continue;
        const char *why = af_graph_dynamic_reason(m->graph, t);
        return af__err(err, AF_EINVAL,
                       "%s '%s' has no arenaflow datatype (%s), so it has no OIP datatype",
                       ti->kind == AF_TENSOR_INPUT ? "input" : "output", ti->name,
                       why ? why : "unknown element type");
    }
    return 0;
}

/* max_batch_size needs a batch axis: axis 0 of every input symbolic (planned per batch size). */
static int check_batch_axis(const af__model_t *m, af_error_t *err)
{
    if (m->cfg.max_batch == 0)
        return 0;
    if (!m->poly)
        return af__err(err, AF_EINVAL,
                       "max_batch_size needs a batch axis: axis 0 of every input symbolic, and "
                       "this model's inputs are all fixed");
    for (int32_t i = 0; i < af__model_io_count(m, 0); i++) {
        af_io_info_t io;
        af__model_io(m, 0, i, &io);
        if (io.rank < 1 || io.shape[0] >= 0)
            return af__err(err, AF_EINVAL,
                           "max_batch_size needs a batch axis: input '%s' has no symbolic axis 0",
                           io.name);
    }
    return 0;
}

static int load_version(load_job_t *j, const char *name, int64_t v, af_error_t *err)
{
    af__model_t *m = calloc(1, sizeof(*m));
    if (!m)
        return af__err(err, AF_ENOMEM, "out of memory");
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->version = v;
    char vdir[AF__DCFG_STR * 2], cfg[AF__DCFG_STR * 2];
    snprintf(vdir, sizeof(vdir), "%s/%s/%" PRId64, j->dir, name, v);
    snprintf(cfg, sizeof(cfg), "%s/%s/config.json", j->dir, name);
    int rc = load_graph(j, vdir, cfg, m, err);
    if (rc == 0)
        rc = check_io_types(m, j->d->cfg.model_kernels, err);
    af__derr_t kind;
    char why[AF_ERROR_MSG_MAX];
    if (rc == 0 && af__limits_check(&j->lim, m->graph, &kind, why, sizeof(why)) != 0)
        rc = af__err(err, AF_EINVAL, "%s", why);
    if (rc == 0)
        rc = check_batch_axis(m, err);
    if (rc == 0 && !m->poly) {
        char note[AF_ERROR_MSG_MAX];
        rc = af__oip_plan(m->graph, &j->plan_opts, &j->lim, &j->d->cancel_plans, &j->pd, &m->plan,
                          &m->restored, note, sizeof(note), err);
        if (note[0])
            af__dlog(AF__LOG_WARN, "model %s: %s", name, note);
    }
    if (rc == 0 && !m->poly)
        rc = bind_instances(j->ex, m->plan, m->cfg.instances, m->inst, err);
    if (rc != 0) {
        model_free(m);
        return rc;
    }
    m->sess = m->inst[0];
    m->refs = 1;
    m->next = j->got;
    j->got = m;
    return 0;
}

static void add_failure(load_job_t *j, const char *name, const char *reason)
{
    failure_t *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    snprintf(f->name, sizeof(f->name), "%s", name);
    snprintf(f->reason, sizeof(f->reason), "%s", reason);
    f->next = j->failed;
    j->failed = f;
}

/* Every numeric version directory of one model. */
static void load_model(load_job_t *j, const char *name)
{
    char mdir[AF__DCFG_STR * 2];
    snprintf(mdir, sizeof(mdir), "%s/%s", j->dir, name);
    DIR *dd = opendir(mdir);
    if (!dd)
        return add_failure(j, name, "no such model directory");
    j->n_found++;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dd)) != NULL && n < AF__OIP_MAX_VERSIONS) {
        char *end;
        long long v = strtoll(e->d_name, &end, 10);
        if (*end || v < 1 || e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        af_error_t err;
        af_error_clear(&err);
        n++;
        if (load_version(j, name, v, &err) != 0) {
            char why[AF_ERROR_MSG_MAX];
            snprintf(why, sizeof(why), "version %lld: %.400s", v,
                     err.msg[0] ? err.msg : af_strerror(err.code));
            add_failure(j, name, why);
        }
    }
    closedir(dd);
    if (n == 0)
        add_failure(j, name, "no version directory (DIR/<name>/<version>/model.onnx)");
}

static void load_work(uv_work_t *w)
{
    load_job_t *j = w->data;
    af__oip_plans_prune(&j->pd); /* [models] max_plan_files may have shrunk */
    if (j->name[0])
        return load_model(j, j->name);
    DIR *dd = opendir(j->dir);
    if (!dd)
        return add_failure(j, "", strerror(errno));
    struct dirent *e;
    while ((e = readdir(dd)) != NULL)
        if (af__oip_name_valid(e->d_name, strlen(e->d_name)) && e->d_name[0] != '.')
            load_model(j, e->d_name);
    closedir(dd);
}

/* ---- on the loop: the registry ----------------------------------------------------------- */

static void forget_failure(const char *name)
{
    for (failure_t **p = &failures; *p; p = &(*p)->next)
        if (strcmp((*p)->name, name) == 0) {
            failure_t *f = *p;
            *p = f->next;
            free(f);
            return;
        }
}

static void unlist(af__oip_t *o, const char *name)
{
    for (af__model_t **p = &o->models; *p;) {
        af__model_t *m = *p;
        if (strcmp(m->name, name) != 0) {
            p = &m->next;
            continue;
        }
        *p = m->next;
        m->listed = 0;
        af__model_unref(m);
    }
}

static void load_after(uv_work_t *w, int status)
{
    load_job_t *j = w->data;
    af__daemon_t *d = j->d;
    af__oip_t *o = d->oip;
    o->loading--;
    char msg[AF_ERROR_MSG_MAX + 64] = "";
    for (af__model_t *m = j->got; m; m = m->next) /* a reload replaces every version */
        unlist(o, m->name), forget_failure(m->name);
    if (j->name[0] && !j->got)
        unlist(o, j->name);
    int n = 0;
    while (j->got) {
        af__model_t *m = j->got;
        j->got = m->next;
        m->listed = 1;
        m->next = o->models;
        o->models = m;
        n++;
        if (!m->poly)
            *(m->restored ? &o->plans_restored : &o->plans_made) += 1;
        if (m->poly)
            af__dlog(AF__LOG_INFO,
                     "model %s version %" PRId64 " loaded (%s, symbolic dims: planned per shape)",
                     m->name, m->version, m->platform);
        else
            af__dlog(AF__LOG_INFO,
                     "model %s version %" PRId64 " loaded (%s, arena %" PRIu64
                     " bytes, plan %s, %" PRId64 " instance%s, %d nodes fused)",
                     m->name, m->version, m->platform, af_plan_arena_bytes(m->plan),
                     m->restored ? "restored" : "planned", m->cfg.instances,
                     m->cfg.instances == 1 ? "" : "s", (int)af_plan_report(m->plan)->fused_nodes);
    }
    while (j->failed) {
        failure_t *f = j->failed;
        j->failed = f->next;
        af__dlog(AF__LOG_WARN, "model %s: %s", f->name[0] ? f->name : j->dir, f->reason);
        snprintf(msg, sizeof(msg), "%s", f->reason);
        forget_failure(f->name);
        f->next = failures;
        failures = f;
    }
    if (!j->name[0]) {
        o->loaded = 1;
        af__dlog(AF__LOG_INFO, "model repository %s: %d versions loaded from %d model directories",
                 j->dir, n, j->n_found);
    }
    if (j->done)
        j->done(d, j->arg, status ? status : (n ? 0 : AF_EINVAL), msg[0] ? msg : NULL);
    free(j);
}

int af__oip_load(af__daemon_t *d, const char *name, af__oip_done_fn done, void *arg)
{
    af__oip_t *o = d->oip;
    load_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return AF_ENOMEM;
    j->d = d;
    snprintf(j->name, sizeof(j->name), "%s", name ? name : "");
    snprintf(j->dir, sizeof(j->dir), "%s", d->cfg.model_repository);
    j->plan_opts = d->cfg.plan_opts;
    af_plan_opts_resolve(&j->plan_opts, d->cfg.model_kernels); /* fuse = auto: on for "real" */
    j->lim = d->cfg.lim;
    j->ex = o->ex;
    j->pd = o->pd;
    j->pd.max_files = d->cfg.max_plan_files;
    j->done = done;
    j->arg = arg;
    j->w.data = j;
    int rc = uv_queue_work(d->loop, &j->w, load_work, load_after);
    if (rc != 0) {
        free(j);
        return rc;
    }
    o->loading++;
    return 0;
}

int af__oip_unload(af__daemon_t *d, const char *name)
{
    af__oip_t *o = d->oip;
    if (!af__oip_find(d, name, -1))
        return -1;
    unlist(o, name);
    af__dlog(AF__LOG_INFO, "model %s unloaded", name);
    return 0;
}

af__model_t *af__oip_find(af__daemon_t *d, const char *name, int64_t v)
{
    af__oip_t *o = d->oip;
    af__model_t *best = NULL;
    for (af__model_t *m = o ? o->models : NULL; m; m = m->next)
        if (strcmp(m->name, name) == 0 &&
            (v < 0 ? !best || m->version > best->version : m->version == v))
            best = m;
    return best;
}

static json_t *index_row(af__daemon_t *d, const char *name)
{
    af__oip_t *o = d->oip;
    json_t *arr = json_array();
    for (af__model_t *m = o->models; m; m = m->next)
        if (strcmp(m->name, name) == 0) {
            char v[24];
            snprintf(v, sizeof(v), "%" PRId64, m->version);
            json_array_append_new(
                arr, json_pack("{s:s, s:s, s:s}", "name", name, "version", v, "state", "READY"));
        }
    if (json_array_size(arr) > 0)
        return arr;
    const char *reason = "not loaded";
    for (failure_t *f = failures; f; f = f->next)
        if (strcmp(f->name, name) == 0)
            reason = f->reason;
    json_array_append_new(
        arr, json_pack("{s:s, s:s, s:s}", "name", name, "state", "UNAVAILABLE", "reason", reason));
    return arr;
}

json_t *af__oip_index(af__daemon_t *d)
{
    json_t *out = json_array();
    DIR *dd = d->cfg.model_repository[0] ? opendir(d->cfg.model_repository) : NULL;
    struct dirent *e;
    while (dd && (e = readdir(dd)) != NULL) {
        if (!af__oip_name_valid(e->d_name, strlen(e->d_name)) || e->d_name[0] == '.')
            continue;
        json_t *rows = index_row(d, e->d_name);
        json_array_extend(out, rows); /* copies the references */
        json_decref(rows);
    }
    if (dd)
        closedir(dd);
    return out;
}

/* ---- life ---------------------------------------------------------------------------------- */

int af__oip_init(af__daemon_t *d)
{
    af__oip_t *o = calloc(1, sizeof(*o));
    if (!o)
        return AF_ENOMEM;
    af_executor_opts_t eo = d->cfg.exec_opts;
    eo.kernels = d->cfg.model_kernels;
    af_error_t err;
    af_error_clear(&err);
    d->oip = o;
    if (!d->cfg.model_repository[0]) {
        o->loaded = 1;
        return 0;
    }
    if (d->cfg.state_dir[0]) /* created with the first plan stored */
        snprintf(o->pd.dir, sizeof(o->pd.dir), "%s/model_plans", d->cfg.state_dir);
    int rc = uv_timer_init(d->loop, &o->batch_timer);
    o->timer_open = rc == 0;
    o->batch_timer.data = d;
    if (rc == 0)
        rc = af_executor_create(&eo, &o->ex, &err);
    if (rc == 0)
        rc = af__oip_load(d, NULL, NULL, NULL);
    if (rc != 0) {
        af__dlog(AF__LOG_ERROR, "model repository: %s", err.msg[0] ? err.msg : af_strerror(rc));
        af__oip_fini(d);
        return rc;
    }
    af__dlog(AF__LOG_INFO, "model repository %s: loading with the %s kernels",
             d->cfg.model_repository, eo.kernels);
    return 0;
}

int af__oip_busy(const af__daemon_t *d)
{
    const af__oip_t *o = d->oip;
    return o && (o->loading || o->inflight);
}

void af__oip_fini(af__daemon_t *d)
{
    af__oip_t *o = d->oip;
    if (!o)
        return;
    while (o->models) {
        af__model_t *m = o->models;
        o->models = m->next;
        m->listed = 0;
        af__model_unref(m);
    }
    while (failures) {
        failure_t *f = failures;
        failures = f->next;
        free(f);
    }
    af_executor_destroy(o->ex);
    if (o->timer_open) { /* the handle is o's: closed before o goes */
        uv_close((uv_handle_t *)&o->batch_timer, NULL);
        uv_run(d->loop, UV_RUN_NOWAIT);
    }
    free(o);
    d->oip = NULL;
}
