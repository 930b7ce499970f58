/*
 * arenaflowd /v2: the Open Inference Protocol's REST API (KServe "V2", Triton's HTTP API).
 *
 *   GET  /v2                                     server metadata (name, version, extensions)
 *   GET  /v2/health/live, /v2/health/ready       200 {"live": true} / {"ready": true}; not
 *                                                ready is 400 {"ready": false} (the spec: a
 *                                                4xx status means false)
 *   GET  /v2/models/{m}[/versions/{v}]           model metadata: inputs, outputs (-1: dynamic)
 *   GET  /v2/models/{m}[/versions/{v}]/ready     200 {"name", "ready": true}; 404 when not loaded
 *   GET  /v2/models/{m}[/versions/{v}]/config    Triton's model configuration (load generators)
 *   GET  /v2/models[/{m}[/versions/{v}]]/stats   Triton's statistics extension
 *   POST /v2/models/{m}[/versions/{v}]/infer     inference (oip_infer.c)
 *   GET|POST /v2/repository/index                the repository's models and their state
 *   POST /v2/repository/models/{m}/load|unload   model repository extension
 *
 * Errors are {"error": "<message>"} with the status of the error table's kind (errors.c): 400
 * for a bad request, 404 for an unknown model, version or endpoint, 405 with Allow, 401/403
 * with authentication on (health needs no token, reads and inference a read token, load and
 * unload an admin token), 429/503 when overloaded or draining. Loop thread only.
 */
#include "daemon/oip_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEGS 6

typedef struct oreq {
    af__daemon_t *d;
    const af__dreq_t *req;
    af__reply_t *r;
    const char *seg[MAX_SEGS];
    size_t segl[MAX_SEGS];
    int n;
    char model[AF__OIP_NAME_MAX];
    int64_t version;    /* -1: none given */
    const char *action; /* "", "ready", "config", "stats", "infer" */
} oreq_t;

static void ok_json(oreq_t *o, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return af__reply_error(o->d, o->r, AF__DERR_BUSY, "out of memory");
    af__reply_text(o->d, o->r, status, "application/json", text, strlen(text));
}

static int seg_is(const oreq_t *o, int i, const char *lit)
{
    return i < o->n && o->segl[i] == strlen(lit) && memcmp(o->seg[i], lit, o->segl[i]) == 0;
}

static int split(oreq_t *o)
{
    o->n = af__path_split(o->req->path, o->req->path_len, o->seg, o->segl, MAX_SEGS);
    return o->n < 0 ? -1 : 0;
}

/* ---- JSON views ---------------------------------------------------------------------------- */

/* The listed versions of a model, ascending. */
static json_t *versions_json(af__daemon_t *d, const char *name)
{
    json_t *a = json_array();
    int64_t last = 0;
    for (;;) {
        int64_t next = INT64_MAX;
        for (af__model_t *m = ((af__oip_t *)d->oip)->models; m; m = m->next)
            if (strcmp(m->name, name) == 0 && m->version > last && m->version < next)
                next = m->version;
        if (next == INT64_MAX)
            return a;
        char v[24];
        snprintf(v, sizeof(v), "%" PRId64, next);
        json_array_append_new(a, json_string(v));
        last = next;
    }
}

/* Inputs (output = 0) or outputs of a model: [{name, datatype, shape}] or, for the
 * configuration, Triton's [{name, data_type: "TYPE_FP32", dims}]. */
static json_t *tensors_json(const af__model_t *m, int output, int config)
{
    int skip = config && m->cfg.max_batch > 0; /* Triton: dims without the batch axis */
    json_t *a = json_array();
    int32_t n = af__model_io_count(m, output);
    for (int32_t i = 0; i < n; i++) {
        af_io_info_t io;
        af__model_io(m, output, i, &io);
        json_t *shape = json_array();
        for (int32_t k = skip; k < io.rank; k++)
            json_array_append_new(shape, json_integer(io.shape[k] < 0 ? -1 : io.shape[k]));
        if (io.rank < 0)
            json_array_append_new(shape, json_integer(-1));
        const char *dt = af__oip_dtype_name(io.dtype);
        char type[32];
        snprintf(type, sizeof(type), "TYPE_%s", dt ? (strcmp(dt, "BYTES") ? dt : "STRING") : "?");
        json_array_append_new(a, config ? json_pack("{s:s, s:s, s:o}", "name", io.name, "data_type",
                                                    type, "dims", shape)
                                        : json_pack("{s:s, s:s, s:o}", "name", io.name, "datatype",
                                                    dt ? dt : "?", "shape", shape));
    }
    return a;
}

static json_t *stats_json(const af__model_t *m)
{
    char v[24];
    snprintf(v, sizeof(v), "%" PRId64, m->version);
    json_t *succ = json_pack("{s:I, s:I}", "count", (json_int_t)m->ok, "ns", (json_int_t)m->ns_ok);
    json_t *fail = json_pack("{s:I, s:I}", "count", (json_int_t)m->failed, "ns", (json_int_t)0);
    json_t *comp =
        json_pack("{s:I, s:I}", "count", (json_int_t)m->ok, "ns", (json_int_t)m->ns_compute);
    json_t *queue = json_pack("{s:I, s:I}", "count", (json_int_t)m->ok, "ns",
                              (json_int_t)(m->ns_ok - m->ns_compute));
    json_t *batches = json_array();
    for (int r = 1; r < AF__OIP_MAX_BATCH_STATS; r++)
        if (m->batch_count[r])
            json_array_append_new(batches,
                                  json_pack("{s:i, s:{s:I, s:I}}", "batch_size", r, "compute_infer",
                                            "count", (json_int_t)m->batch_count[r], "ns",
                                            (json_int_t)m->batch_ns[r]));
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:{s:o, s:o, s:o, s:o}, s:o}", "name", m->name,
                     "version", v, "last_inference", (json_int_t)m->last_unix_ms, "inference_count",
                     (json_int_t)m->ok, "execution_count", (json_int_t)m->executions,
                     "inference_stats", "success", succ, "fail", fail, "queue", queue,
                     "compute_infer", comp, "batch_stats", batches);
}

/* Triton's model configuration: tensors, max_batch_size, instance_group, dynamic_batching. */
static json_t *config_json(const af__model_t *m)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:[{s:I, s:s}]}", "name", m->name,
                          "platform", m->platform, "backend", "arenaflow", "max_batch_size",
                          (json_int_t)m->cfg.max_batch, "input", tensors_json(m, 0, 1), "output",
                          tensors_json(m, 1, 1), "instance_group", "count",
                          (json_int_t)m->cfg.instances, "kind", "KIND_CPU");
    if (c && m->cfg.batching) {
        json_t *pref = json_array();
        for (int i = 0; i < m->cfg.n_preferred; i++)
            json_array_append_new(pref, json_integer(m->cfg.preferred[i]));
        json_object_set_new(c, "dynamic_batching",
                            json_pack("{s:o, s:I}", "preferred_batch_size", pref,
                                      "max_queue_delay_microseconds", (json_int_t)m->cfg.delay_us));
    }
    return c;
}

void af__oip_metrics(af__daemon_t *d, char **b, size_t *l, size_t *c)
{
    const af__oip_t *o = d->oip;
    if (!o)
        return;
    af__buf_printf(b, l, c,
                   "# HELP arenaflowd_model_plans_total Model and shape plans, by source: planned, "
                   "or restored from <state_dir>/model_plans.\n"
                   "# TYPE arenaflowd_model_plans_total counter\n"
                   "arenaflowd_model_plans_total{source=\"planned\"} %" PRIu64 "\n"
                   "arenaflowd_model_plans_total{source=\"restored\"} %" PRIu64 "\n"
                   "# HELP arenaflowd_model_batches_total Batched rounds (dynamic batching).\n"
                   "# TYPE arenaflowd_model_batches_total counter\n"
                   "arenaflowd_model_batches_total %" PRIu64 "\n"
                   "# HELP arenaflowd_model_batched_requests_total Requests run in batches.\n"
                   "# TYPE arenaflowd_model_batched_requests_total counter\n"
                   "arenaflowd_model_batched_requests_total %" PRIu64 "\n"
                   "# HELP arenaflowd_model_loop_requests_total Small inferences served on the "
                   "event loop (no threadpool trip).\n"
                   "# TYPE arenaflowd_model_loop_requests_total counter\n"
                   "arenaflowd_model_loop_requests_total %" PRIu64 "\n"
                   "# HELP arenaflowd_model_instance_rounds_total Rounds per model instance.\n"
                   "# TYPE arenaflowd_model_instance_rounds_total counter\n",
                   o->plans_made, o->plans_restored, o->batches, o->batched_requests,
                   o->loop_requests);
    for (const af__model_t *m = o->models; m; m = m->next)
        for (int i = 0; i < m->cfg.instances && i < AF__OIP_MAX_INSTANCES; i++)
            af__buf_printf(b, l, c,
                           "arenaflowd_model_instance_rounds_total{model=\"%s\",version=\"%" PRId64
                           "\",instance=\"%d\"} %" PRIu64 "\n",
                           m->name, m->version, i, m->inst_rounds[i]);
}

/* ---- handlers ------------------------------------------------------------------------------ */

static void h_server(oreq_t *o)
{
    ok_json(o, 200,
            json_pack("{s:s, s:s, s:[s, s, s, s]}", "name", "arenaflowd", "version", af_version(),
                      "extensions", "binary_tensor_data", "model_repository", "statistics",
                      "model_configuration"));
}

static int is_ready(const af__daemon_t *d)
{
    const af__oip_t *x = d->oip;
    return !d->draining && d->ready && x->loaded;
}

static void h_health(oreq_t *o)
{
    if (seg_is(o, 2, "live"))
        return ok_json(o, 200, json_pack("{s:b}", "live", 1));
    int ready = is_ready(o->d);
    ok_json(o, ready ? 200 : 400, json_pack("{s:b}", "ready", ready));
}

static void h_model(oreq_t *o, af__model_t *m)
{
    const char *a = o->action;
    if (!strcmp(a, "ready"))
        return ok_json(o, 200, json_pack("{s:s, s:b}", "name", m->name, "ready", 1));
    if (!strcmp(a, "stats"))
        return ok_json(o, 200, json_pack("{s:[o]}", "model_stats", stats_json(m)));
    if (!strcmp(a, "config"))
        return ok_json(o, 200, config_json(m));
    ok_json(o, 200,
            json_pack("{s:s, s:o, s:s, s:o, s:o}", "name", m->name, "versions",
                      versions_json(o->d, m->name), "platform", m->platform, "inputs",
                      tensors_json(m, 0, 0), "outputs", tensors_json(m, 1, 0)));
}

static void h_all_stats(oreq_t *o)
{
    json_t *a = json_array();
    for (af__model_t *m = ((af__oip_t *)o->d->oip)->models; m; m = m->next)
        json_array_append_new(a, stats_json(m));
    ok_json(o, 200, json_pack("{s:o}", "model_stats", a));
}

typedef struct load_wait {
    af__reply_t r;
    char name[AF__OIP_NAME_MAX];
} load_wait_t;

static void load_done(af__daemon_t *d, void *arg, int rc, const char *msg)
{
    load_wait_t *w = arg;
    if (rc != 0)
        af__reply_error(d, &w->r, AF__DERR_BAD_REQUEST, "failed to load '%s': %s", w->name,
                        msg ? msg : af_strerror(rc));
    else
        af__reply_text(d, &w->r, 200, "application/json", strdup("{}"), 2);
    free(w);
}

static void h_repository(oreq_t *o)
{
    af__daemon_t *d = o->d;
    if (seg_is(o, 2, "index") && o->n == 3)
        return ok_json(o, 200, af__oip_index(d));
    if (!(o->n == 5 && seg_is(o, 2, "models") && (seg_is(o, 4, "load") || seg_is(o, 4, "unload"))))
        return af__reply_error(d, o->r, AF__DERR_NOT_FOUND, "no such repository endpoint");
    if (!af__oip_name_valid(o->seg[3], o->segl[3]))
        return af__reply_error(d, o->r, AF__DERR_NOT_FOUND,
                               "unknown model (names are [A-Za-z0-9_.-])");
    char name[AF__OIP_NAME_MAX];
    snprintf(name, sizeof(name), "%.*s", (int)o->segl[3], o->seg[3]);
    if (!d->cfg.model_repository[0])
        return af__reply_error(d, o->r, AF__DERR_BAD_REQUEST,
                               "no model repository (start with --model-repository DIR)");
    if (seg_is(o, 4, "unload")) {
        if (af__oip_unload(d, name) != 0)
            return af__reply_error(d, o->r, AF__DERR_NOT_FOUND, "model '%s' is not loaded", name);
        return ok_json(o, 200, json_object());
    }
    load_wait_t *w = calloc(1, sizeof(*w));
    if (!w)
        return af__reply_error(d, o->r, AF__DERR_BUSY, "out of memory");
    w->r = *o->r;
    snprintf(w->name, sizeof(w->name), "%s", name);
    int rc = af__oip_load(d, name, load_done, w);
    if (rc != 0) {
        free(w);
        af__reply_error(d, o->r, af__derr_of(rc), "cannot queue the load: %s", af_strerror(rc));
    }
}

/* ---- routing --------------------------------------------------------------------------------- */

/* /v2/models/{m}[/versions/{v}][/action]: the model, version and action. 0, or -1 (answered). */
static int model_path(oreq_t *o)
{
    if (!af__oip_name_valid(o->seg[2], o->segl[2])) {
        af__reply_error(o->d, o->r, AF__DERR_NOT_FOUND, "unknown model '%.*s'",
                        (int)(o->segl[2] > 128 ? 128 : o->segl[2]), o->seg[2]);
        return -1;
    }
    snprintf(o->model, sizeof(o->model), "%.*s", (int)o->segl[2], o->seg[2]);
    int at = 3;
    o->version = -1;
    if (seg_is(o, 3, "versions")) {
        char v[24] = "";
        char *end;
        if (o->n > 4 && o->segl[4] < sizeof(v))
            snprintf(v, sizeof(v), "%.*s", (int)o->segl[4], o->seg[4]);
        long long x = strtoll(v, &end, 10);
        if (!v[0] || *end || x < 1 || v[0] == '+' || v[0] == '0') {
            af__reply_error(o->d, o->r, AF__DERR_NOT_FOUND, "unknown version of model '%s'",
                            o->model);
            return -1;
        }
        o->version = x;
        at = 5;
    }
    static const char *const actions[] = {"ready", "config", "stats", "infer"};
    o->action = "";
    for (size_t i = 0; o->n == at + 1 && i < AF_ARRAY_SIZE(actions); i++)
        if (seg_is(o, at, actions[i]))
            o->action = actions[i];
    if (o->n > at + 1 || (o->n == at + 1 && !o->action[0])) {
        af__reply_error(o->d, o->r, AF__DERR_NOT_FOUND, "no such endpoint under model '%s'",
                        o->model);
        return -1;
    }
    return 0;
}

/* The route, its method and role. */
static af__route_t classify(oreq_t *o, const char **method, af__role_t *role)
{
    *method = "GET";
    *role = AF__ROLE_READ;
    if (o->n == 1)
        return AF__ROUTE_V2_SERVER;
    if (seg_is(o, 1, "health") && o->n == 3 && (seg_is(o, 2, "live") || seg_is(o, 2, "ready"))) {
        *role = AF__ROLE_NONE;
        return AF__ROUTE_V2_HEALTH;
    }
    if (seg_is(o, 1, "repository")) {
        *method = seg_is(o, 2, "index") ? "GET, POST" : "POST";
        *role = seg_is(o, 2, "index") ? AF__ROLE_READ : AF__ROLE_ADMIN;
        return AF__ROUTE_V2_REPO;
    }
    if (seg_is(o, 1, "models") && o->n >= 3) {
        const char *last = o->seg[o->n - 1];
        size_t ll = o->segl[o->n - 1];
        if (ll == 5 && !memcmp(last, "infer", 5)) {
            *method = "POST";
            return AF__ROUTE_V2_INFER;
        }
        return AF__ROUTE_V2_MODEL;
    }
    return AF__ROUTE_OTHER;
}

static int method_ok(const af__dreq_t *req, const char *allowed)
{
    char m[16];
    snprintf(m, sizeof(m), "%.*s", (int)(req->method_len > 15 ? 15 : req->method_len), req->method);
    const char *p = strstr(allowed, m);
    size_t n = strlen(m);
    return n && p && (p[n] == '\0' || p[n] == ',') && (p == allowed || p[-1] == ' ');
}

static int authorized(oreq_t *o, af__role_t need)
{
    if (!o->d->tokens || need == AF__ROLE_NONE)
        return 1;
    af__role_t have =
        af__tokens_role(o->d->tokens, o->req->authorization, o->req->authorization_len);
    if (have == AF__ROLE_NONE)
        af__reply_error(o->d, o->r, AF__DERR_UNAUTHORIZED,
                        "authentication required: send \"Authorization: Bearer TOKEN\"");
    else if (have < need)
        af__reply_error(o->d, o->r, AF__DERR_FORBIDDEN, "this needs an admin token");
    return have >= need;
}

static void dispatch(oreq_t *o, af__route_t route)
{
    af__daemon_t *d = o->d;
    if (route == AF__ROUTE_V2_SERVER)
        return h_server(o);
    if (route == AF__ROUTE_V2_HEALTH)
        return h_health(o);
    if (route == AF__ROUTE_V2_REPO)
        return h_repository(o);
    if (o->n == 3 && seg_is(o, 2, "stats"))
        return h_all_stats(o);
    if (model_path(o) != 0)
        return;
    af__oip_t *x = d->oip;
    af__model_t *m = af__oip_find(d, o->model, o->version);
    if (!m && !x->loaded)
        return af__reply_error(d, o->r, AF__DERR_LOADING, "the model repository is loading");
    if (!m && o->version >= 0 && af__oip_find(d, o->model, -1))
        return af__reply_error(d, o->r, AF__DERR_NOT_FOUND, "model '%s' has no version %" PRId64,
                               o->model, o->version);
    if (!m)
        return af__reply_error(d, o->r, AF__DERR_NOT_FOUND, "unknown model '%s'", o->model);
    if (route == AF__ROUTE_V2_INFER)
        return af__oip_infer(d, m, o->req, o->r);
    h_model(o, m);
}

void af__oip_handle(af__daemon_t *d, const af__dreq_t *req, af__reply_t *r)
{
    oreq_t o = {.d = d, .req = req, .r = r};
    r->res->oip = 1;
    if (req->reject) {
        r->res->route = AF__ROUTE_OTHER;
        return af__reply_error(d, r, AF__DERR_BAD_REQUEST, "%s", req->reject);
    }
    const char *method;
    af__role_t role;
    af__route_t route = split(&o) == 0 ? classify(&o, &method, &role) : AF__ROUTE_OTHER;
    r->res->route = route;
    if (route == AF__ROUTE_OTHER)
        return af__reply_error(d, r, AF__DERR_NOT_FOUND, "no such endpoint: %.*s",
                               (int)(req->path_len > 200 ? 200 : req->path_len), req->path);
    if (!method_ok(req, method)) {
        r->res->allow = method;
        return af__reply_error(d, r, AF__DERR_METHOD, "method not allowed here; use %s", method);
    }
    if (!authorized(&o, role))
        return;
    dispatch(&o, route);
}
