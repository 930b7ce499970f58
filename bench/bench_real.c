/*
 * bench_real: latency of real kernels on a real model, as a user would run it — import (ONNX
 * with --input dims, or JSON), lower for the kernel set (scratch tensors), plan, one session,
 * synchronous rounds (af_session_run) on fixed inputs — with the figures of the run:
 *
 *   median / p10 / p90 latency of a round, arena bytes (of which scratch), prepacked weights,
 *   nodes on the set's own kernels and on the fallback, the intra-op team, and the allocations
 *   per timed round: arenaflow's heap calls (allocator hooks), pool OS calls, and every malloc
 *   of the process (oneDNN's and libgomp's included), counted by this program's own malloc
 *   (defined here, it replaces glibc's for every library of the process; no LD_PRELOAD).
 *
 * Weights: the model's own (ONNX initializers). --fill-weights replaces f32 constants with values
 * uniform in [-0.1, 0.1) and f32 scalars with 2 (for JSON graphs, which carry no weights).
 * Inputs: --input NAME=FILE (.npy or .pb) binds the file's tensor and fixes its dims; an input
 * given only dims (NAME=d0,d1,...) gets sin(0.37 i) / 2, as bench/ort_latency.js does. Result
 * checksum printed so a fast wrong answer cannot pass unnoticed between runs; --output-dir DIR
 * writes DIR/<output>.npy after the last round.
 *
 * Memory (Linux /proc/self/status): rss_created_kb after session creation (weights loaded and
 * prepacked, before any round), rss_end_kb after the rounds, peak_rss_kb the process's VmHWM.
 *
 * --profile (one worker): time per node, from one kernel start to the next (observe hook).
 * --plan-for SET: lower and plan the graph for SET (default: the kernels run), e.g. to run the
 * verify kernels on the very plan the oneDNN kernels run on.
 * --fuse on|off: operator fusion (planner option fuse; default on when planning for the real or
 * onednn kernels, as `arenaflow run` does); the JSON gives fused_nodes and the plan's arena.
 * --fuse-bn affine|weights: how a BatchNormalization folds into its Conv (planner fuse_bn).
 *
 * Usage: bench_real MODEL [--input NAME=DIMS|NAME=FILE]... [--threads N] [--intra K]
 *                   [--kernels SET] [--plan-for SET] [--fuse on|off] [--fuse-bn affine|weights]
 *                   [--rounds N] [--warmup N]
 *                   [--profile] [--fill-weights] [--output-dir DIR] [--json]
 */
#include "arenaflow/executor.h"
#include "arenaflow/graph.h"
#include "arenaflow/plan.h"
#include "arenaflow/onnx.h"
#include "arenaflow/tensor.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ---- counting every malloc of the process ------------------------------------------------ */

/* Where the counted calls go: jemalloc when the library links it (libjemalloc exports malloc,
 * so it is the process allocator then), else glibc. */
#ifdef AF_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#define RAW_MALLOC(n) mallocx((n) ? (n) : 1, 0)
#define RAW_CALLOC(n) mallocx((n) ? (n) : 1, MALLOCX_ZERO)
#define RAW_REALLOC(p, n) ((p) ? rallocx((p), (n) ? (n) : 1, 0) : mallocx((n) ? (n) : 1, 0))
#define RAW_MEMALIGN(a, n) mallocx((n) ? (n) : 1, MALLOCX_ALIGN(a))
#define RAW_FREE(p) ((p) ? dallocx((p), 0) : (void)0)
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t c, size_t n);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t a, size_t n);
void __libc_free(void *p);
#define RAW_MALLOC(n) __libc_malloc(n)
#define RAW_CALLOC(n) __libc_calloc(1, n)
#define RAW_REALLOC(p, n) __libc_realloc(p, n)
#define RAW_MEMALIGN(a, n) __libc_memalign(a, n)
#define RAW_FREE(p) __libc_free(p)
#endif
void *memalign(size_t a, size_t n);

static atomic_ullong n_malloc;

void *malloc(size_t n)
{
    atomic_fetch_add_explicit(&n_malloc, 1, memory_order_relaxed);
    return RAW_MALLOC(n);
}
void *calloc(size_t c, size_t n)
{
    atomic_fetch_add_explicit(&n_malloc, 1, memory_order_relaxed);
    if (n && c > SIZE_MAX / n)
        return NULL;
    size_t total = c * n;
    return RAW_CALLOC(total);
}
void *realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&n_malloc, 1, memory_order_relaxed);
    return RAW_REALLOC(p, n);
}
void *memalign(size_t a, size_t n)
{
    atomic_fetch_add_explicit(&n_malloc, 1, memory_order_relaxed);
    return RAW_MEMALIGN(a, n);
}
void *aligned_alloc(size_t a, size_t n)
{
    return memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n)
{
    void *p = memalign(a, n);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}
void free(void *p)
{
    RAW_FREE(p);
}

static atomic_ullong n_hook;
static void *h_malloc(size_t n)
{
    atomic_fetch_add_explicit(&n_hook, 1, memory_order_relaxed);
    return malloc(n);
}
static void *h_calloc(size_t c, size_t n)
{
    atomic_fetch_add_explicit(&n_hook, 1, memory_order_relaxed);
    return calloc(c, n);
}
static void *h_realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&n_hook, 1, memory_order_relaxed);
    return realloc(p, n);
}

/* ---- profile ---------------------------------------------------------------------------- */

typedef struct prof {
    uint64_t *ns; /* per node */
    uint64_t t_last;
    int32_t last;
} prof_t;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int observe(void *user, const af_kernel_args_t *a)
{
    prof_t *p = user;
    uint64_t t = now_ns();
    if (p->last >= 0)
        p->ns[p->last] += t - p->t_last;
    p->last = a->node;
    p->t_last = t;
    return 0;
}

/* ---- the run ----------------------------------------------------------------------------- */

typedef struct args {
    const char *model, *kernels, *plan_for, *output_dir, *fuse, *fuse_bn;
    const char *inputs[16]; /* importer dims specs */
    char specs[16][600];
    struct {
        const char *name;
        af_tensor_t t;
    } files[16]; /* tensors read from --input NAME=FILE */
    char names[16][256];
    int n_inputs, n_files, threads, intra, rounds, warmup, profile, fill, json;
} args_t;

/* One --input: NAME=DIMS goes to the importer as it is; NAME=FILE (.npy or .pb) is read, bound
 * to input NAME, and its dims are given to the importer. */
static int add_input(args_t *a, const char *arg)
{
    const char *eq = strchr(arg, '='), *v = eq ? eq + 1 : "";
    size_t n = strlen(v), nl = eq ? (size_t)(eq - arg) : 0;
    int file = (n > 4 && !strcmp(v + n - 4, ".npy")) || (n > 3 && !strcmp(v + n - 3, ".pb"));
    af_error_t err;
    af_error_clear(&err);
    if (!eq || !nl || nl >= sizeof a->names[0] || a->n_inputs >= 16) {
        fprintf(stderr, "bench_real: --input %s: want NAME=d0,d1,... or NAME=FILE.npy\n", arg);
        return -1;
    }
    if (file) {
        af_tensor_t *t = &a->files[a->n_files].t;
        if (af_tensor_load(v, t, &err)) {
            fprintf(stderr, "bench_real: --input %s: %s\n", arg, err.msg);
            return -1;
        }
        memcpy(a->names[a->n_files], arg, nl);
        a->names[a->n_files][nl] = 0;
        a->files[a->n_files].name = a->names[a->n_files];
        char *spec = a->specs[a->n_inputs];
        memcpy(spec, arg, nl + 1); /* "NAME=" */
        int k = (int)nl + 1;
        a->n_files++;
        for (int32_t d = 0; d < t->rank && k < (int)sizeof a->specs[0]; d++)
            k += snprintf(spec + k, sizeof a->specs[0] - (size_t)k, "%s%lld", d ? "," : "",
                          (long long)t->shape[d]);
        arg = spec;
    }
    a->inputs[a->n_inputs++] = arg;
    return 0;
}

/* VmRSS or VmHWM of the process, kB (0 where /proc is missing). */
static long proc_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

static int parse(int argc, char **argv, args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->kernels = "real", a->threads = 1, a->rounds = 300, a->warmup = 50;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--input") && v) {
            if (add_input(a, argv[++i]))
                return -1;
        } else if (!strcmp(s, "--output-dir") && v)
            a->output_dir = argv[++i];
        else if (!strcmp(s, "--fill-weights"))
            a->fill = 1;
        else if (!strcmp(s, "--threads") && v)
            a->threads = atoi(argv[++i]);
        else if (!strcmp(s, "--intra") && v)
            a->intra = atoi(argv[++i]);
        else if (!strcmp(s, "--kernels") && v)
            a->kernels = argv[++i];
        else if (!strcmp(s, "--plan-for") && v)
            a->plan_for = argv[++i];
        else if (!strcmp(s, "--fuse") && v)
            a->fuse = argv[++i];
        else if (!strcmp(s, "--fuse-bn") && v)
            a->fuse_bn = argv[++i];
        else if (!strcmp(s, "--rounds") && v)
            a->rounds = atoi(argv[++i]);
        else if (!strcmp(s, "--warmup") && v)
            a->warmup = atoi(argv[++i]);
        else if (!strcmp(s, "--profile"))
            a->profile = 1;
        else if (!strcmp(s, "--json"))
            a->json = 1;
        else if (s[0] != '-' && !a->model)
            a->model = s;
        else
            return -1;
    }
    return a->model && a->rounds > 0 && a->threads > 0 ? 0 : -1;
}

static af_graph_t *load(const args_t *a, af_error_t *err)
{
    af_graph_t *g = NULL;
    size_t n = strlen(a->model);
    if (n > 5 && !strcmp(a->model + n - 5, ".onnx")) {
        af_onnx_opts_t o;
        af_onnx_opts_init(&o);
        o.inputs = a->inputs;
        o.n_inputs = a->n_inputs;
        return af_onnx_load(a->model, &o, &g, err) ? NULL : g;
    }
    return af_graph_load_json(a->model, &g, err) ? NULL : g;
}

/* Sane weights (f32 uniform in [-0.1, 0.1)), fixed seed. */
static void fill_weights(af_session_t *s, const af_graph_t *g)
{
    uint32_t x = 12345;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        uint64_t n = 0;
        float *p = ti->dtype == AF_DTYPE_F32 ? af_session_constant(s, t, &n) : NULL;
        if (p && n == 4) {
            *p = 2.0f;
            continue;
        }
        for (uint64_t i = 0; p && i < n / 4; i++) {
            x = x * 1664525u + 1013904223u;
            p[i] = ((float)(x >> 8) / (float)(1u << 24) - 0.5f) * 0.2f;
        }
    }
}

/* CPU time (user + system) of the process, us. */
static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct bufs {
    af_buffer_t in[16], out[16];
    int32_t ni, no;
} bufs_t;

/* Points the inputs read from files at their tensors (after make_bufs' pattern). */
static int bind_files(const args_t *a, af_session_t *s, bufs_t *b)
{
    for (int i = 0; i < a->n_files; i++) {
        int32_t k = af_session_find_input(s, a->files[i].name);
        if (k < 0 || b->in[k].bytes != a->files[i].t.bytes) {
            fprintf(stderr, "bench_real: input '%s': %s\n", a->files[i].name,
                    k < 0 ? "no graph input of that name" : "size differs from the graph's");
            return -1;
        }
        free(b->in[k].data);
        b->in[k].data = a->files[i].t.data;
    }
    return 0;
}

/* DIR/<output>.npy for every output of the last round. */
static int write_outputs(const char *dir, const af_session_t *s, const bufs_t *b)
{
    for (int32_t i = 0; i < b->no; i++) {
        af_io_info_t io;
        af_session_io_info(s, 1, i, &io);
        af_tensor_t t = {
            .dtype = io.dtype, .rank = io.rank, .data = b->out[i].data, .bytes = b->out[i].bytes};
        memcpy(t.shape, io.shape, sizeof(t.shape[0]) * (size_t)io.rank);
        char path[4096]; /* DIR/<name>.npy, bytes outside [A-Za-z0-9._-] and a leading '.' -> _ */
        int k = snprintf(path, sizeof path, "%s/", dir), k0 = k;
        for (const char *c = io.name; *c && k < k0 + 200; c++, k++)
            path[k] = (isalnum((unsigned char)*c) || strchr("._-", *c)) && (*c != '.' || k > k0)
                          ? *c
                          : '_';
        snprintf(path + k, sizeof path - (size_t)k, "%s.npy", k > k0 ? "" : "output");
        af_error_t err;
        af_error_clear(&err);
        if (af_tensor_save_npy(path, &t, &err)) {
            fprintf(stderr, "bench_real: %s: %s\n", path, err.msg);
            return -1;
        }
    }
    return 0;
}

static int make_bufs(af_session_t *s, const af_graph_t *g, bufs_t *b)
{
    b->ni = af_session_input_count(s);
    b->no = af_session_output_count(s);
    if (b->ni > 16 || b->no > 16)
        return -1;
    for (int32_t i = 0; i < b->ni; i++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, af_session_input_tensor(s, i));
        b->in[i].bytes = (uint64_t)ti->bytes;
        b->in[i].data = calloc(1, (size_t)ti->bytes + 1);
        for (int64_t k = 0; ti->dtype == AF_DTYPE_F32 && k < ti->bytes / 4; k++)
            ((float *)b->in[i].data)[k] = 0.5f * sinf(0.37f * (float)k);
    }
    for (int32_t i = 0; i < b->no; i++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, af_session_output_tensor(s, i));
        b->out[i].bytes = (uint64_t)(ti->bytes > 0 ? ti->bytes : 0);
        b->out[i].data = calloc(1, (size_t)b->out[i].bytes + 1);
    }
    return 0;
}

static double checksum(const af_session_t *s, const af_graph_t *g, const bufs_t *b)
{
    double sum = 0;
    for (int32_t i = 0; i < b->no; i++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, af_session_output_tensor(s, i));
        for (uint64_t k = 0; ti->dtype == AF_DTYPE_F32 && k < b->out[i].bytes / 4; k++)
            sum += ((const float *)b->out[i].data)[k] * (double)((k % 7) + 1);
    }
    return sum;
}

static void print_profile(const af_session_t *s, const af_graph_t *g, const prof_t *pr, int rounds)
{
    uint64_t total = 0;
    for (int32_t v = 0; v < af_graph_node_count(g); v++)
        total += pr->ns[v];
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        int32_t team = 0;
        const char *k = af_session_node_kernel(s, v, &team);
        printf("  %8.2f us %5.1f%%  %-18s %-40.40s %s (team %d)\n",
               (double)pr->ns[v] / rounds / 1e3,
               total ? 100.0 * (double)pr->ns[v] / (double)total : 0, af_graph_node(g, v)->op,
               af_graph_node(g, v)->name, k, team);
    }
}

int main(int argc, char **argv)
{
    args_t a;
    if (parse(argc, argv, &a)) {
        fprintf(stderr, "usage: bench_real MODEL [--input NAME=DIMS|NAME=FILE]... [--threads N] "
                        "[--intra K] [--kernels SET] [--plan-for SET] [--fuse on|off] [--fuse-bn "
                        "affine|weights] [--rounds N] "
                        "[--warmup N] "
                        "[--profile] [--fill-weights] [--output-dir DIR] [--json]\n");
        return 2;
    }
    af_replace_allocator(h_malloc, h_realloc, h_calloc, free);
    af_error_t err;
    af_error_clear(&err);
    af_graph_t *g = load(&a, &err), *lg = NULL;
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = a.kernels;
    eo.threads = a.profile ? 1 : a.threads;
    eo.intra_op_threads = a.intra;
    eo.verify = 0;
    eo.max_inflight = 1;
    af_plan_t *p = NULL;
    af_executor_t *ex = NULL;
    af_session_t *s = NULL;
    prof_t pr = {.last = -1};
    af_session_opts_t so = {0};
    if (g && a.profile) {
        pr.ns = calloc((size_t)af_graph_node_count(g) + 1, sizeof(uint64_t));
        so.observe = observe;
        so.observe_user = &pr;
    }
    af_executor_opts_t lo = eo;
    lo.kernels = a.plan_for ? a.plan_for : a.kernels;
    af_plan_opts_t po; /* fusion: --fuse, else on when planning for real / onednn kernels */
    af_plan_opts_init(&po);
    if ((a.fuse && af_plan_opts_set(&po, "fuse", a.fuse, &err)) ||
        (a.fuse_bn && af_plan_opts_set(&po, "fuse_bn", a.fuse_bn, &err))) {
        fprintf(stderr, "bench_real: %s\n", err.msg);
        return 2;
    }
    af_plan_opts_resolve(&po, lo.kernels);
    if (!g || af_kernels_lower(&lo, g, &lg, &err) || af_plan_create(lg, &po, &p, &err) ||
        af_executor_create(&eo, &ex, &err) || af_session_create(ex, p, &so, &s, &err)) {
        fprintf(stderr, "bench_real: %s\n", err.msg);
        return 1;
    }
    const af_graph_t *pg = af_plan_graph(p); /* the fused graph: the session's tensor ids */
    long rss_created = proc_kb("VmRSS");
    if (a.fill)
        fill_weights(s, pg);
    bufs_t b;
    if (make_bufs(s, pg, &b)) {
        fprintf(stderr, "bench_real: too many inputs or outputs\n");
        return 1;
    }
    if (bind_files(&a, s, &b))
        return 1;
    for (int i = 0; i < a.warmup; i++)
        if (af_session_run(s, b.in, b.out, &err)) {
            fprintf(stderr, "bench_real: %s\n", err.msg);
            return 1;
        }
    if (a.profile)
        memset(pr.ns, 0, (size_t)af_graph_node_count(pg) * sizeof(uint64_t));
    uint64_t *lat = calloc((size_t)a.rounds, sizeof(uint64_t));
    af_session_stats_t st0, st;
    af_session_stats(s, &st0);
    uint64_t m0 = atomic_load(&n_malloc), h0 = atomic_load(&n_hook);
    double c0 = cpu_us();
    for (int i = 0; i < a.rounds; i++) {
        uint64_t t0 = now_ns();
        af_session_run(s, b.in, b.out, &err);
        lat[i] = now_ns() - t0;
        pr.last = -1; /* the round's last node is closed by the round's end */
    }
    double cpu = (cpu_us() - c0) / a.rounds;
    uint64_t mallocs = atomic_load(&n_malloc) - m0, hooks = atomic_load(&n_hook) - h0;
    long rss_end = proc_kb("VmRSS"), hwm = proc_kb("VmHWM"); /* fopen mallocs: after the count */
    if (getenv("BENCH_REAL_DEBUG"))
        fprintf(stderr, "mallocs before the timed rounds: %llu\n", (unsigned long long)m0);
    af_session_stats(s, &st);
    qsort(lat, (size_t)a.rounds, sizeof(*lat), cmp_u64);
    const af_plan_report_t *rep = af_plan_report(p);
    double med = (double)lat[a.rounds / 2] / 1e3, p10 = (double)lat[a.rounds / 10] / 1e3,
           p90 = (double)lat[a.rounds * 9 / 10] / 1e3;
    double per = 1.0 / a.rounds;
    if (a.json)
        printf(
            "{\"model\": \"%s\", \"kernels\": \"%s\", \"threads\": %d, \"intra_op_threads\": %d, "
            "\"median_us\": %.2f, \"p10_us\": %.2f, \"p90_us\": %.2f, \"cpu_us_per_round\": %.1f, "
            "\"arena_bytes\": %llu, \"fused_nodes\": %d, "
            "\"scratch_bytes\": %llu, \"prepacked_bytes\": %llu, \"backend_nodes\": %d, "
            "\"fallback_nodes\": %d, \"heap_calls_per_round\": %.2f, "
            "\"pool_os_calls_per_round\": %.2f, \"process_mallocs_per_round\": %.2f, "
            "\"failed_rounds\": %llu, \"rss_created_kb\": %ld, \"rss_end_kb\": %ld, "
            "\"peak_rss_kb\": %ld, \"checksum\": %.9g}\n",
            a.model, a.kernels, eo.threads, st.intra_op_threads, med, p10, p90, cpu,
            (unsigned long long)rep->arena_bytes, rep->fused_nodes,
            (unsigned long long)rep->scratch_bytes, (unsigned long long)st.prepacked_bytes,
            st.backend_nodes, st.fallback_nodes, (double)hooks * per,
            (double)(st.pool_os_calls - st0.pool_os_calls) * per, (double)mallocs * per,
            (unsigned long long)st.failed_rounds, rss_created, rss_end, hwm, checksum(s, pg, &b));
    else
        printf("%s: %s kernels, %d worker(s), intra-op team %d: median %.1f us (p10 %.1f, p90 "
               "%.1f), CPU %.1f us per round; arena %llu B (scratch %llu B), prepacked %llu B, %d "
               "nodes on %s, %d on "
               "fallback; per round: %.2f heap calls, %.2f pool OS calls, %.2f process "
               "mallocs; %llu failed rounds; RSS %ld kB after creation, %ld kB at the end, "
               "peak %ld kB; checksum %.9g\n",
               a.model, a.kernels, eo.threads, st.intra_op_threads, med, p10, p90, cpu,
               (unsigned long long)rep->arena_bytes, (unsigned long long)rep->scratch_bytes,
               (unsigned long long)st.prepacked_bytes, st.backend_nodes,
               af_kernel_set_resolve(a.kernels), st.fallback_nodes, (double)hooks * per,
               (double)(st.pool_os_calls - st0.pool_os_calls) * per, (double)mallocs * per,
               (unsigned long long)st.failed_rounds, rss_created, rss_end, hwm,
               checksum(s, pg, &b));
    if (a.output_dir && write_outputs(a.output_dir, s, &b))
        return 1;
    if (a.profile)
        print_profile(s, pg, &pr, a.rounds);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(lg);
    af_graph_destroy(g);
    return st.failed_rounds ? 1 : 0;
}
