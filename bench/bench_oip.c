/*
 * bench_oip — an open-loop (constant-rate) load generator speaking the Open Inference Protocol
 * (v2 REST) to arenaflowd, or to anything in front of it (HAProxy).
 *
 *   bench_oip --addr HOST:PORT --model NAME [--rates R1,R2,... | --rate-min R --rate-max R]
 *             [--duration S] [--min-requests N] [--warmup S] [--connections N]
 *             [--health-pct P] [--onnx MODEL.onnx --kernels K] [--pid DAEMON_PID]
 *
 * The model's metadata (GET /v2/models/NAME) gives its inputs; each gets a deterministic
 * pattern of its datatype, sent two ways: JSON data ("infer json") and the binary tensor data
 * extension with binary outputs ("infer binary"). One answer of each kind, fetched before the
 * load, is the reference: every later 200 is compared with it byte for byte (the model is
 * deterministic), so a wrong answer is counted, not just a failed one. P% of the requests are
 * GET /v2/health/live on the same connections: the floor of the HTTP path alone, measured on
 * the same daemon in the same run.
 *
 * Each rate step runs N connections (one thread each, keep-alive), each sending at R/N on a
 * fixed schedule; latency is measured from the scheduled send time, so a server that falls
 * behind shows it in the tail (no coordinated omission). A step lasts --duration seconds, or
 * longer when that would record fewer than --min-requests requests (default 2000: a p99 of
 * fewer says little). Steps go through --rates, or double from --rate-min (default 25 req/s)
 * up to --rate-max, and stop after the first step that saturates: the achieved
 * rate (requests scheduled after the warm-up, over the time until the last one was answered)
 * under 90% of the target. Per step and kind: requests, achieved req/s, p50/p99/p99.9/max
 * latency (us), errors (non-200 or I/O error) and wrong answers; the load average after it and,
 * with --pid, the daemon's CPU time and context switches per request sent. Then the highest
 * rate whose infer p99 stays under 2x the lowest step's p50 ("unloaded"), p99 as measured.
 *
 * --pid: after the sweep, a closed loop (one connection, 3000 requests of each kind) reads the
 * daemon's CPU time (every thread's /proc/PID/task/TID/schedstat) and context switches
 * (voluntary and not, /proc/PID/task/TID/status) around each kind: per request, figures machine
 * load does not inflate the way it does latency.
 *
 * --onnx: the same model is also run in this process through af_session_run() with the same
 * input bytes (kernels K, default real): the difference of the p50s is the HTTP path's overhead
 * per request. Exit status: 0, or 1 if any answer below saturation was an error or wrong.
 */
#include "arenaflow/executor.h"
#include "arenaflow/onnx.h"
#include "bench/bench_http.h"

#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/prctl.h>

enum { K_JSON = 0, K_BIN, K_HEALTH, K_COUNT };
static const char *const kind_names[K_COUNT] = {"infer json", "infer binary", "health/live"};

typedef struct cfg {
    char host[64], model[128];
    int port, conns, health_pct;
    double duration, warmup, rate_max, rate_min, min_requests;
    double rates[32];
    int n_rates;
    const char *onnx, *kernels;
    int pid; /* --pid: the daemon, for its CPU time per request */
} cfg_t;

typedef struct body {
    char *p;
    size_t n;
    char extra[96]; /* Inference-Header-Content-Length line, or "" */
    char *ref;      /* the reference answer */
    size_t ref_n;
} body_t;

static body_t bodies[2];
static char path_infer[256];
static uint8_t *in_bytes[16];
static uint64_t in_len[16];
static int n_inputs;
static double low_p50[2]; /* p50 of each inference kind at the lowest rate */
static double closed_p50[K_COUNT], closed_cpu[K_COUNT], closed_sw[K_COUNT]; /* --pid: closed loop */

/* CPU time (ns) and context switches of every thread of the daemon (--pid) */
typedef struct proc_use {
    uint64_t cpu_ns, switches;
} proc_use_t;
static proc_use_t proc_use(int pid);
static void loadavg(char *buf, size_t n);

typedef struct step {
    double rate, dur; /* target req/s; seconds recorded (--duration, longer for --min-requests) */
    uint64_t t0;
    bh_lat_t lat[K_COUNT];
    uint64_t errors[K_COUNT], wrong[K_COUNT], statuses[600];
    uint64_t last_done; /* completion time of the last recorded request */
    uint64_t sent;      /* requests sent, warm-up included */
    pthread_mutex_t mu;
} step_t;

typedef struct worker {
    pthread_t th;
    int idx;
    const cfg_t *c;
    step_t *st;
} worker_t;

/* ---- requests ------------------------------------------------------------------------------ */

static uint64_t dt_size(const char *dt)
{
    return strstr(dt, "64") ? 8 : strstr(dt, "32") ? 4 : strstr(dt, "16") ? 2 : 1;
}

static void fill_pattern(uint8_t *p, uint64_t n, const char *dt)
{
    uint64_t size = dt_size(dt);
    for (uint64_t i = 0; i < n / size; i++) {
        uint64_t v = (i * 7 + 3) % 11;
        if (!strcmp(dt, "FP32")) {
            float f = (float)v / 8.0f - 0.5f;
            memcpy(p + i * 4, &f, 4);
        } else if (!strcmp(dt, "FP64")) {
            double f = (double)v / 8.0 - 0.5;
            memcpy(p + i * 8, &f, 8);
        } else if (!strcmp(dt, "FP16")) {
            uint16_t h = (uint16_t)(0x3800 + v * 0x40); /* 0.5 .. ~0.8 */
            memcpy(p + i * 2, &h, 2);
        } else {
            memset(p + i * size, 0, size);
            p[i * size] = (uint8_t)(!strcmp(dt, "BOOL") ? v & 1 : v);
        }
    }
}

static void append(char **b, size_t *n, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char **b, size_t *n, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(*b + *n, *cap - *n, fmt, ap);
        va_end(ap);
        if ((size_t)k < *cap - *n) {
            *n += (size_t)k;
            return;
        }
        *cap = (*cap + (size_t)k) * 2;
        *b = realloc(*b, *cap);
    }
}

static void json_elems(char **b, size_t *n, size_t *cap, const uint8_t *p, uint64_t bytes,
                       const char *dt)
{
    append(b, n, cap, "[");
    if (!strcmp(dt, "FP32"))
        for (uint64_t i = 0; i < bytes / 4; i++) {
            float f;
            memcpy(&f, p + i * 4, 4);
            append(b, n, cap, "%s%.9g", i ? "," : "", (double)f);
        }
    else if (!strcmp(dt, "FP64"))
        for (uint64_t i = 0; i < bytes / 8; i++) {
            double f;
            memcpy(&f, p + i * 8, 8);
            append(b, n, cap, "%s%.17g", i ? "," : "", f);
        }
    else if (!strcmp(dt, "BOOL"))
        for (uint64_t i = 0; i < bytes; i++)
            append(b, n, cap, "%s%s", i ? "," : "", p[i] ? "true" : "false");
    else /* integer patterns are small: the low byte carries the value */
        for (uint64_t i = 0, sz = dt_size(dt); i < bytes; i += sz)
            append(b, n, cap, "%s%d", i ? "," : "", p[i]);
    append(b, n, cap, "]");
}

/* Builds both request bodies from the model's metadata. 0 or -1. */
static int build_bodies(const cfg_t *c, const char *meta)
{
    json_error_t je;
    json_t *m = json_loads(meta, 0, &je), *ins = json_object_get(m, "inputs");
    if (!json_is_array(ins) || json_array_size(ins) > 16) {
        fprintf(stderr, "bench_oip: bad model metadata: %.200s\n", meta);
        return -1;
    }
    char *b[2] = {NULL, NULL};
    size_t n[2] = {0, 0}, cap[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        append(&b[k], &n[k], &cap[k], "{\"inputs\":[");
    size_t i;
    json_t *in;
    json_array_foreach(ins, i, in)
    {
        const char *name = json_string_value(json_object_get(in, "name")),
                   *dt = json_string_value(json_object_get(in, "datatype"));
        json_t *shape = json_object_get(in, "shape");
        char *sh = json_dumps(shape, JSON_COMPACT);
        uint64_t numel = 1, size = dt_size(dt);
        if (strstr(dt, "F16") || strstr(dt, "FP16") || !strcmp(dt, "BYTES")) {
            fprintf(stderr,
                    "bench_oip: input %s is %s: only FP32, FP64, BOOL and integer "
                    "inputs are generated\n",
                    name, dt);
            return -1;
        }
        for (size_t d = 0; d < json_array_size(shape); d++)
            numel *= (uint64_t)json_integer_value(json_array_get(shape, d));
        in_len[i] = numel * size;
        in_bytes[i] = malloc(in_len[i] + 1);
        fill_pattern(in_bytes[i], in_len[i], dt);
        for (int k = 0; k < 2; k++) {
            append(&b[k], &n[k], &cap[k], "%s{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":%s,",
                   i ? "," : "", name, dt, sh);
            if (k == K_BIN)
                append(&b[k], &n[k], &cap[k], "\"parameters\":{\"binary_data_size\":%" PRIu64 "}}",
                       in_len[i]);
            else {
                append(&b[k], &n[k], &cap[k], "\"data\":");
                json_elems(&b[k], &n[k], &cap[k], in_bytes[i], in_len[i], dt);
                append(&b[k], &n[k], &cap[k], "}");
            }
        }
        free(sh);
    }
    n_inputs = (int)json_array_size(ins);
    append(&b[K_JSON], &n[K_JSON], &cap[K_JSON], "]}");
    append(&b[K_BIN], &n[K_BIN], &cap[K_BIN], "],\"parameters\":{\"binary_data_output\":true}}");
    snprintf(bodies[K_BIN].extra, sizeof(bodies[K_BIN].extra),
             "Inference-Header-Content-Length: %zu\r\n", n[K_BIN]);
    for (int k = 0; k < n_inputs; k++) {
        if (n[K_BIN] + in_len[k] + 1 > cap[K_BIN])
            b[K_BIN] = realloc(b[K_BIN], cap[K_BIN] = (n[K_BIN] + in_len[k] + 1) * 2);
        memcpy(b[K_BIN] + n[K_BIN], in_bytes[k], in_len[k]);
        n[K_BIN] += in_len[k];
    }
    for (int k = 0; k < 2; k++)
        bodies[k].p = b[k], bodies[k].n = n[k];
    snprintf(path_infer, sizeof(path_infer), "/v2/models/%s/infer", c->model);
    json_decref(m);
    return 0;
}

static int send_kind(int fd, int kind, bh_resp_t *r)
{
    if (kind == K_HEALTH)
        return bh_exchange(fd, "GET", "/v2/health/live", NULL, NULL, 0, NULL, r);
    return bh_exchange(fd, "POST", path_infer, bodies[kind].extra, bodies[kind].p, bodies[kind].n,
                       NULL, r);
}

/* Metadata and the reference answers. 0 or -1. */
static int prepare(const cfg_t *c)
{
    int fd = bh_dial(c->host, c->port);
    bh_resp_t r = {0};
    char path[256];
    snprintf(path, sizeof(path), "/v2/models/%s", c->model);
    int st = fd >= 0 ? bh_exchange(fd, "GET", path, NULL, NULL, 0, NULL, &r) : -1;
    if (st != 200) {
        fprintf(stderr, "bench_oip: GET %s: %d %.200s\n", path, st, r.buf ? r.buf : "");
        return -1;
    }
    if (build_bodies(c, r.buf) != 0)
        return -1;
    for (int k = 0; k < 2; k++) {
        if ((st = send_kind(fd, k, &r)) != 200) {
            fprintf(stderr, "bench_oip: reference %s: %d %.300s\n", kind_names[k], st, r.buf);
            return -1;
        }
        bodies[k].ref = malloc(r.len + 1);
        memcpy(bodies[k].ref, r.buf, r.len);
        bodies[k].ref_n = r.len;
    }
    close(fd);
    free(r.buf);
    return 0;
}

/* ---- one rate step ---------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    const cfg_t *c = w->c;
    step_t *st = w->st;
    /* sends on time: the default 50 us timer slack of a sleep would count as server latency */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    double interval_ns = 1e9 * c->conns / st->rate;
    uint64_t end = st->t0 + (uint64_t)((c->warmup + st->dur) * 1e9);
    uint64_t rec_from = st->t0 + (uint64_t)(c->warmup * 1e9);
    bh_resp_t r = {0};
    bh_lat_t lat[K_COUNT] = {{0}};
    uint64_t err[K_COUNT] = {0}, wrong[K_COUNT] = {0}, statuses[600] = {0};
    int fd = -1;
    uint64_t last = 0, sent = 0;
    for (uint64_t i = 0;; i++) {
        uint64_t when =
            st->t0 + (uint64_t)((double)i * interval_ns + interval_ns * w->idx / c->conns);
        if (when >= end)
            break;
        bh_sleep_until(when);
        uint64_t slot = (i * (uint64_t)c->conns + (uint64_t)w->idx) % 100;
        int kind = slot < (uint64_t)c->health_pct ? K_HEALTH : (int)(slot & 1);
        if (fd < 0)
            fd = bh_dial(c->host, c->port);
        int status = fd >= 0 ? send_kind(fd, kind, &r) : -1;
        uint64_t done = af_now_ns();
        sent++;
        if (status < 0 && fd >= 0) {
            close(fd);
            fd = -1;
        }
        if (when < rec_from) /* recorded: the requests scheduled after the warm-up */
            continue;
        last = done;
        statuses[status > 0 && status < 600 ? status : 0]++;
        if (status != 200)
            err[kind]++;
        else if (kind != K_HEALTH &&
                 (r.len != bodies[kind].ref_n || memcmp(r.buf, bodies[kind].ref, r.len) != 0))
            wrong[kind]++;
        bh_lat_push(&lat[kind], (double)(done - when) / 1e3);
    }
    if (fd >= 0)
        close(fd);
    free(r.buf);
    pthread_mutex_lock(&st->mu);
    for (int k = 0; k < K_COUNT; k++) {
        for (size_t j = 0; j < lat[k].n; j++)
            bh_lat_push(&st->lat[k], lat[k].v[j]);
        free(lat[k].v);
        st->errors[k] += err[k];
        st->wrong[k] += wrong[k];
    }
    for (int s = 0; s < 600; s++)
        st->statuses[s] += statuses[s];
    st->last_done = last > st->last_done ? last : st->last_done;
    st->sent += sent;
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Runs one step and prints its rows; returns 1 when the step saturated. *bad += errors. */
static int run_step(const cfg_t *c, double rate, double *unloaded_p50, double *best_rate,
                    uint64_t *bad)
{
    step_t st = {.rate = rate, .t0 = af_now_ns() + 10000000u};
    /* long enough for --min-requests recorded requests: a p99 of fewer says little */
    st.dur = c->min_requests / rate > c->duration ? c->min_requests / rate : c->duration;
    pthread_mutex_init(&st.mu, NULL);
    proc_use_t u0 = c->pid > 0 ? proc_use(c->pid) : (proc_use_t){0, 0};
    worker_t *ws = calloc((size_t)c->conns, sizeof(worker_t));
    for (int i = 0; i < c->conns; i++) {
        ws[i] = (worker_t){.idx = i, .c = c, .st = &st};
        pthread_create(&ws[i].th, NULL, worker_main, &ws[i]);
    }
    for (int i = 0; i < c->conns; i++)
        pthread_join(ws[i].th, NULL);
    free(ws);
    proc_use_t u1 = c->pid > 0 ? proc_use(c->pid) : (proc_use_t){0, 0};
    size_t total = 0;
    double infer_p99 = 0, infer_p50 = 0;
    uint64_t errs = 0;
    for (int k = 0; k < K_COUNT; k++) {
        bh_lat_t *l = &st.lat[k];
        qsort(l->v, l->n, sizeof(double), bh_cmp_d);
        total += l->n;
        errs += st.errors[k] + st.wrong[k];
        printf("%8.0f  %-13s %8zu %9.1f %9.0f %9.0f %9.0f %9.0f %6" PRIu64 " %6" PRIu64 "\n", rate,
               kind_names[k], l->n, (double)l->n / st.dur, bh_pct(l, 50), bh_pct(l, 99),
               bh_pct(l, 99.9), l->n ? l->v[l->n - 1] : 0.0, st.errors[k], st.wrong[k]);
        if (k != K_HEALTH && low_p50[k] == 0)
            low_p50[k] = bh_pct(l, 50);
        if (k != K_HEALTH) {
            infer_p99 = bh_pct(l, 99) > infer_p99 ? bh_pct(l, 99) : infer_p99;
            infer_p50 = bh_pct(l, 50) > infer_p50 ? bh_pct(l, 50) : infer_p50;
        }
    }
    printf("          answers:");
    for (int s = 0; s < 600; s++)
        if (st.statuses[s])
            printf(" %s%d x %" PRIu64, s ? "" : "I/O error ", s, st.statuses[s]);
    printf("\n");
    /* achieved: the recorded requests over the time from the end of the warm-up to the last
     * answer, so a server that falls behind stretches the time and lowers the rate */
    double span = (double)(st.last_done - st.t0) / 1e9 - c->warmup;
    double achieved = span > 0 ? (double)total / (span > st.dur ? span : st.dur) : 0;
    char la[64];
    loadavg(la, sizeof(la));
    printf("          achieved %.0f req/s of %.0f over %.1f s; load average %s", achieved, rate,
           st.dur, la);
    if (c->pid > 0) /* the warm-up's requests are in these too: per request sent */
        printf("; daemon per request: CPU %.1f us, %.2f context switches",
               (double)(u1.cpu_ns - u0.cpu_ns) / 1e3 / (double)(st.sent ? st.sent : 1),
               (double)(u1.switches - u0.switches) / (double)(st.sent ? st.sent : 1));
    printf("\n");
    int saturated = achieved < 0.9 * rate;
    if (*unloaded_p50 == 0)
        *unloaded_p50 = infer_p50;
    if (!saturated && infer_p99 < 2 * *unloaded_p50 && errs == 0)
        *best_rate = rate;
    if (!saturated)
        *bad += errs;
    for (int k = 0; k < K_COUNT; k++)
        free(st.lat[k].v);
    pthread_mutex_destroy(&st.mu);
    return saturated;
}

/* ---- daemon CPU per request ------------------------------------------------------------ */

/* What every thread of process pid has used: CPU time (ns, /proc/PID/task/TID/schedstat) and
 * context switches (voluntary + nonvoluntary, /proc/PID/task/TID/status). Zeros when
 * unreadable. Threads that ended in between are not counted (the daemon's live for its life). */
static uint64_t status_switches(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[256];
    uint64_t n = 0;
    unsigned long long v;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
            sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
            n += v;
    if (f)
        fclose(f);
    return n;
}

static proc_use_t proc_use(int pid)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
    DIR *dd = opendir(dir);
    proc_use_t u = {0, 0};
    struct dirent *e;
    while (dd && (e = readdir(dd)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[400];
        snprintf(path, sizeof(path), "%s/%s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long ns = 0;
        if (f && fscanf(f, "%llu", &ns) == 1)
            u.cpu_ns += ns;
        if (f)
            fclose(f);
        snprintf(path, sizeof(path), "%s/%s/status", dir, e->d_name);
        u.switches += status_switches(path);
    }
    if (dd)
        closedir(dd);
    return u;
}

static void loadavg(char *buf, size_t n)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double a = 0, b = 0, c = 0;
    if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
        snprintf(buf, n, "%.2f %.2f %.2f", a, b, c);
    else
        snprintf(buf, n, "?");
    if (f)
        fclose(f);
}

/* Closed loop, one connection, n requests of each kind: the daemon's CPU time per request
 * (every thread, /proc schedstat) and the client's p50, beside machine load. */
static void cpu_probe(const cfg_t *c, int n)
{
    int fd = bh_dial(c->host, c->port);
    bh_resp_t r = {0};
    if (fd < 0)
        return;
    for (int k = 0; k < K_COUNT; k++) {
        bh_lat_t l = {0};
        proc_use_t u0 = proc_use(c->pid);
        uint64_t t0 = af_now_ns();
        for (int i = 0; i < n; i++) {
            uint64_t t = af_now_ns();
            if (send_kind(fd, k, &r) != 200)
                break;
            bh_lat_push(&l, (double)(af_now_ns() - t) / 1e3);
        }
        proc_use_t u1 = proc_use(c->pid);
        uint64_t cpu = u1.cpu_ns - u0.cpu_ns, wall = af_now_ns() - t0;
        qsort(l.v, l.n, sizeof(double), bh_cmp_d);
        closed_p50[k] = bh_pct(&l, 50);
        closed_cpu[k] = l.n ? (double)cpu / 1e3 / (double)l.n : 0.0;
        closed_sw[k] = l.n ? (double)(u1.switches - u0.switches) / (double)l.n : 0.0;
        printf("closed loop %-13s %6zu requests: p50 %.0f us, p99 %.0f us; daemon CPU %.1f us "
               "per request (%.0f%% of one CPU), %.2f context switches per request\n",
               kind_names[k], l.n, bh_pct(&l, 50), bh_pct(&l, 99), closed_cpu[k],
               100.0 * (double)cpu / (double)wall, closed_sw[k]);
        free(l.v);
    }
    close(fd);
    free(r.buf);
}

/* ---- in process ------------------------------------------------------------------------ */

/* p50 of af_session_run on the same model and inputs; 0 on failure (printed). */
static double in_process(const cfg_t *c, double *p99)
{
    af_error_t err;
    af_error_clear(&err);
    af_graph_t *g = NULL;
    af_plan_t *p = NULL;
    af_executor_t *ex = NULL;
    af_session_t *s = NULL;
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    double p50 = 0;
    if (af_onnx_load(c->onnx, NULL, &g, &err) || af_plan_create(g, NULL, &p, &err) ||
        af_executor_opts_set(&eo, "kernels", c->kernels, &err) ||
        af_executor_create(&eo, &ex, &err) || af_session_create(ex, p, NULL, &s, &err)) {
        fprintf(stderr, "bench_oip: --onnx %s: %s\n", c->onnx, err.msg);
        goto out;
    }
    af_buffer_t in[16];
    for (int32_t i = 0; i < af_session_input_count(s) && i < 16; i++)
        in[i] = (af_buffer_t){in_bytes[i], in_len[i]};
    bh_lat_t l = {0};
    for (int i = 0; i < 2000; i++) {
        uint64_t t = af_now_ns();
        if (af_session_run(s, in, NULL, &err) != 0) {
            fprintf(stderr, "bench_oip: af_session_run: %s\n", err.msg);
            break;
        }
        if (i >= 200)
            bh_lat_push(&l, (double)(af_now_ns() - t) / 1e3);
    }
    qsort(l.v, l.n, sizeof(double), bh_cmp_d);
    p50 = bh_pct(&l, 50);
    *p99 = bh_pct(&l, 99);
    free(l.v);
out:
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
    return p50;
}

/* ---- main ------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: bench_oip --addr HOST:PORT --model NAME [--rates R1,R2,...] "
                    "[--rate-min R] [--rate-max R] [--duration S] [--min-requests N] "
                    "[--warmup S] [--connections N] "
                    "[--health-pct P] [--onnx MODEL.onnx] [--kernels K] [--pid DAEMON_PID]\n");
    exit(2);
}

static void parse_args(int argc, char **argv, cfg_t *c)
{
    *c = (cfg_t){.host = "127.0.0.1",
                 .conns = 8,
                 .health_pct = 10,
                 .duration = 3,
                 .warmup = 0.5,
                 .rate_max = 3200,
                 .rate_min = 25,
                 .min_requests = 2000,
                 .kernels = "real"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            usage();
        if (!strcmp(a, "--addr")) {
            if (bh_parse_addr(v, c->host, sizeof(c->host), &c->port) != 0)
                usage();
        } else if (!strcmp(a, "--model"))
            snprintf(c->model, sizeof(c->model), "%s", v);
        else if (!strcmp(a, "--rates"))
            for (char *e, *p = (char *)v; *p && c->n_rates < 32; p = *e ? e + 1 : e)
                c->rates[c->n_rates++] = strtod(p, &e);
        else if (!strcmp(a, "--rate-max"))
            c->rate_max = atof(v);
        else if (!strcmp(a, "--rate-min"))
            c->rate_min = atof(v);
        else if (!strcmp(a, "--min-requests"))
            c->min_requests = atof(v);
        else if (!strcmp(a, "--duration"))
            c->duration = atof(v);
        else if (!strcmp(a, "--warmup"))
            c->warmup = atof(v);
        else if (!strcmp(a, "--connections"))
            c->conns = atoi(v);
        else if (!strcmp(a, "--health-pct"))
            c->health_pct = atoi(v);
        else if (!strcmp(a, "--onnx"))
            c->onnx = v;
        else if (!strcmp(a, "--kernels"))
            c->kernels = v;
        else if (!strcmp(a, "--pid"))
            c->pid = atoi(v);
        else
            usage();
    }
    if (!c->port || !c->model[0] || c->conns < 1 || c->conns > 512 || c->duration <= 0 ||
        c->health_pct < 0 || c->health_pct > 100 || c->rate_min <= 0 || c->min_requests < 0)
        usage();
    for (int i = 0; i < c->n_rates; i++)
        if (!(c->rates[i] > 0))
            usage();
    if (!c->n_rates)
        for (double r = c->rate_min; r <= c->rate_max && c->n_rates < 32; r *= 2)
            c->rates[c->n_rates++] = r;
}

int main(int argc, char **argv)
{
    cfg_t c;
    parse_args(argc, argv, &c);
    if (prepare(&c) != 0)
        return 1;
    printf("bench_oip: model %s at %s:%d, %d connections, %.1f s per rate (+%.1f s warm-up), "
           "%d%% health/live; JSON body %zu bytes, binary body %zu bytes\n",
           c.model, c.host, c.port, c.conns, c.duration, c.warmup, c.health_pct, bodies[0].n,
           bodies[1].n);
    printf("%8s  %-13s %8s %9s %9s %9s %9s %9s %6s %6s\n", "rate", "kind", "requests", "req/s",
           "p50_us", "p99_us", "p99.9_us", "max_us", "errors", "wrong");
    double unloaded = 0, best = 0;
    uint64_t bad = 0;
    for (int i = 0; i < c.n_rates; i++)
        if (run_step(&c, c.rates[i], &unloaded, &best, &bad))
            break;
    printf("unloaded infer p50 %.0f us (lowest rate); highest rate with infer p99 < 2x that and "
           "no errors: %.0f req/s; errors or wrong answers below saturation: %" PRIu64 "\n",
           unloaded, best, bad);
    if (c.pid > 0)
        cpu_probe(&c, 3000);
    if (c.onnx) {
        double p99 = 0, p50 = in_process(&c, &p99);
        if (p50 > 0)
            printf("in process (af_session_run, %s kernels): p50 %.1f us, p99 %.1f us; HTTP path "
                   "overhead per request at the lowest rate (p50 difference): JSON %.0f us, "
                   "binary %.0f us\n",
                   c.kernels, p50, p99, low_p50[K_JSON] - p50, low_p50[K_BIN] - p50);
        if (p50 > 0 && closed_p50[K_JSON] > 0)
            printf("HTTP path overhead per request, closed loop (p50 minus in process): JSON %.0f "
                   "us, binary %.0f us, /v2/health/live alone %.0f us; daemon CPU per request: "
                   "JSON %.1f us, binary %.1f us, health %.1f us; context switches per request: "
                   "JSON %.2f, binary %.2f, health %.2f\n",
                   closed_p50[K_JSON] - p50, closed_p50[K_BIN] - p50, closed_p50[K_HEALTH],
                   closed_cpu[K_JSON], closed_cpu[K_BIN], closed_cpu[K_HEALTH], closed_sw[K_JSON],
                   closed_sw[K_BIN], closed_sw[K_HEALTH]);
    }
    for (int k = 0; k < 2; k++)
        free(bodies[k].p), free(bodies[k].ref);
    for (int k = 0; k < n_inputs; k++)
        free(in_bytes[k]);
    return bad ? 1 : 0;
}
