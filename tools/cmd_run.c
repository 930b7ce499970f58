/*
 * arenaflow run [GRAPH]: plan a graph and execute it for a number of rounds on the worker pool,
 * pipelined (several rounds in flight on a libuv loop), then print memory (naive vs arena),
 * throughput, system allocator calls per round and, with --verify, the number of corrupted
 * tensors the verify kernels caught (text, or one JSON object with --json).
 *
 * With real data (--input NAME=FILE.npy|FILE.pb), the files are bound to the graph inputs (their
 * dims fixed at import), real kernels run by default, and every graph output is summarised
 * (dtype, shape, min/max/mean, first values) beside the memory report and, with --output-dir,
 * written as DIR/<output name>.npy.
 *
 * System allocator calls are counted through the library's allocator hooks (every heap call
 * of the library), plus the pool's OS calls (mmap/munmap/madvise) and dynamic-region
 * allocations during the timed rounds.
 */
#include "tools/run_data.h"
#include "tools/run_util.h"

#include "arenaflow/cache.h"
#include "arenaflow/zoo.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

/* ---- shared helpers (run_util.h) -------------------------------------------------------- */

static uint64_t alloc_calls;

static void *cnt_malloc(size_t n)
{
    __atomic_fetch_add(&alloc_calls, 1, __ATOMIC_RELAXED);
    return malloc(n);
}
static void *cnt_calloc(size_t c, size_t n)
{
    __atomic_fetch_add(&alloc_calls, 1, __ATOMIC_RELAXED);
    return calloc(c, n);
}
static void *cnt_realloc(void *p, size_t n)
{
    __atomic_fetch_add(&alloc_calls, 1, __ATOMIC_RELAXED);
    return realloc(p, n);
}

void run_count_allocs(void)
{
    af_replace_allocator(cnt_malloc, cnt_realloc, cnt_calloc, free);
}

uint64_t run_alloc_calls(void)
{
    return __atomic_load_n(&alloc_calls, __ATOMIC_RELAXED);
}

af_graph_t *run_load_graph(const char *path, int32_t batch)
{
    if (strncmp(path, "zoo:", 4) != 0)
        return cli_load_graph(path, NULL, 0);
    af_zoo_opts_t o;
    af_zoo_opts_init(&o);
    o.batch = batch;
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    if (af_zoo_build(path + 4, &o, &g, &err)) {
        cli_error("%s", err.msg);
        return NULL;
    }
    return g;
}

static int exec_setter(void *opts, const char *key, const char *value, af_error_t *err)
{
    return af_executor_opts_set(opts, key, value, err);
}

int run_load_exec_config(const char *path, af_executor_opts_t *opts)
{
    return cli_load_section(path, "executor", exec_setter, opts);
}

/* ---- the command ------------------------------------------------------------------------ */

#define RUN_MAX_INPUTS 64

typedef struct run_args {
    const char *path, *config, *kernels, *reuse, *cache, *output_dir, *fuse, *fuse_bn, *budget;
    long rounds, threads, inflight, warmup, batch;
    int verify, safe, json, compare, offload;
    const char *in_args[RUN_MAX_INPUTS];
    int n_in_args;
} run_args_t;

/* Real data of a run: dims specs for the importer, tensors for the inputs, kept outputs. */
typedef struct run_data {
    char *specs[RUN_MAX_INPUTS]; /* "NAME=dims" for the importer: the user's, then the files' */
    int n_specs, n_user_specs;
    data_in_t ins[RUN_MAX_INPUTS]; /* tensors read from files */
    const char *files[RUN_MAX_INPUTS];
    char *names[RUN_MAX_INPUTS];
    int n_ins;
    af_buffer_t *bufs; /* per session input */
    af_tensor_t *outs; /* copies of the outputs of the last round */
    char **out_names;
    int32_t n_outs;
    int32_t n_pattern; /* session inputs no file was given for */
    char first_pattern[256];
} run_data_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: arenaflow run [GRAPH] [options]\n\n"
            "Plans GRAPH (a JSON graph, an .onnx model, or zoo:NAME for a model-zoo graph;\n"
            "default " RUN_DEFAULT_GRAPH ") and executes it for a number of rounds on a pool of\n"
            "worker threads, several rounds in flight, each in its own arena from the pool.\n\n"
            "options:\n"
            "  --rounds N         timed rounds (default 20; 1 with --input files)\n"
            "  --warmup N         untimed rounds first (default 2 x inflight: every arena and\n"
            "                     deque has reached its size before the timed rounds; 1 with\n"
            "                     --input files)\n"
            "  --threads N        worker threads (default: all CPUs)\n"
            "  --inflight N       rounds in flight at once (default 4)\n"
            "  --verify           verify kernels: every input checked against the checksum its\n"
            "                     producer recorded; exit 1 if any tensor was corrupted\n"
            "  --input NAME=FILE  bind a .npy or ONNX .pb tensor file to graph input NAME (its\n"
            "                     dims fix the input's shape); inputs not given are filled with\n"
            "                     a pattern\n"
            "  --input NAME=DIMS  ONNX: fix a symbolic input shape (input=1,3,224,224) or a\n"
            "                     symbolic dim (batch_size=1); may be repeated\n"
            "  --output-dir DIR   write every graph output as DIR/<output name>.npy (.pb for\n"
            "                     string outputs; DIR is\n"
            "                     created when missing; bytes\n"
            "                     outside [A-Za-z0-9._-] and a leading '.' become '_'; a name\n"
            "                     that sanitises like an earlier one gets _<index>)\n"
            "  --kernels SET      real (the fastest built in: onednn when built with oneDNN;\n"
            "                     the default with --input files), onednn (oneDNN where it\n"
            "                     computes the op exactly, reference otherwise), reference\n"
            "                     (naive C kernels, the oracle), verify (pattern kernels\n"
            "                     checking every input; the default without files) or empty\n"
            "  --fuse on|off|auto operator fusion (BatchNormalization into Conv, unary ops as\n"
            "                     post-ops of the node before them; default auto: on with the\n"
            "                     real and onednn kernels, off otherwise)\n"
            "  --fuse-bn affine|weights   BatchNormalization into Conv: the affine after it\n"
            "                     (default: exact) or into its weights (faster, inexact)\n"
            "  --budget BYTES     fit the arena in BYTES (K/M/G ok), recomputing tensors (and\n"
            "                     with --offload swapping them to host memory) when no order\n"
            "                     fits, as 'arenaflow plan --budget'; outputs are unchanged\n"
            "  --offload          under --budget: also consider host offload (SwapOut/SwapIn)\n"
            "  --safe             plan in safe mode (no reuse: every tensor its own bytes)\n"
            "  --parallel-reuse fence|strict   reuse guarded by edges, or only along data edges\n"
            "  --compare-reuse    also plan fence and strict and print arena and critical path\n"
            "  --batch N          batch size for zoo:NAME graphs\n"
            "  --cache DIR        take the plan from a persistent plan cache in DIR (planned and\n"
            "                     stored on a miss; a later run, even after a restart, hits)\n"
            "  --config FILE      INI file: [planner] and [executor] sections\n"
            "  --json             print one JSON object\n"
            "  -h, --help         this help\n\n"
            "With real data the outputs are summarised (name, dtype, shape, min/max/mean,\n"
            "first values) after the memory report; a model whose ops lack kernels is refused\n"
            "with every missing op and unsupported node listed at once.\n\n"
            "exit status: 0 ok, 1 rejected input, failed round or corrupted tensor, 2 usage\n");
}

static int parse_args(int argc, char **argv, run_args_t *a)
{
    *a = (run_args_t){.rounds = -1, .warmup = -1, .threads = -1, .inflight = -1};
    static const char *const with_value[] = {
        "--rounds",     "--threads", "--inflight",       "--warmup", "--batch",
        "--config",     "--kernels", "--parallel-reuse", "--cache",  "--input",
        "--output-dir", "--fuse",    "--fuse-bn",        "--budget"};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (cli_is_help(s)) {
            usage(stdout);
            return 1;
        }
        int wv = 0;
        for (size_t k = 0; k < sizeof(with_value) / sizeof(*with_value); k++)
            wv |= strcmp(s, with_value[k]) == 0;
        if (wv && i + 1 >= argc) {
            cli_error("run: %s needs a value", s);
            return CLI_USAGE;
        }
        const char *v = wv ? argv[++i] : NULL;
        long *num = !strcmp(s, "--rounds")     ? &a->rounds
                    : !strcmp(s, "--threads")  ? &a->threads
                    : !strcmp(s, "--inflight") ? &a->inflight
                    : !strcmp(s, "--warmup")   ? &a->warmup
                    : !strcmp(s, "--batch")    ? &a->batch
                                               : NULL;
        if (num) {
            if (cli_parse_long(v, num) || *num > 100000000) {
                cli_error("run: bad value '%s' for %s", v, s);
                return CLI_USAGE;
            }
        } else if (!strcmp(s, "--config")) {
            a->config = v;
        } else if (!strcmp(s, "--kernels")) {
            a->kernels = v;
        } else if (!strcmp(s, "--cache")) {
            a->cache = v;
        } else if (!strcmp(s, "--fuse")) {
            a->fuse = v;
        } else if (!strcmp(s, "--fuse-bn")) {
            a->fuse_bn = v;
        } else if (!strcmp(s, "--budget")) {
            a->budget = v;
        } else if (!strcmp(s, "--output-dir")) {
            a->output_dir = v;
        } else if (!strcmp(s, "--input")) {
            if (a->n_in_args >= RUN_MAX_INPUTS) {
                cli_error("run: more than %d --input options", RUN_MAX_INPUTS);
                return CLI_USAGE;
            }
            a->in_args[a->n_in_args++] = v;
        } else if (!strcmp(s, "--parallel-reuse")) {
            a->reuse = v;
        } else if (!strcmp(s, "--verify")) {
            a->verify = 1;
        } else if (!strcmp(s, "--safe")) {
            a->safe = 1;
        } else if (!strcmp(s, "--offload")) {
            a->offload = 1;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (!strcmp(s, "--compare-reuse")) {
            a->compare = 1;
        } else if (s[0] == '-' && s[1]) {
            cli_error("run: unknown option '%s' (see 'arenaflow run --help')", s);
            return CLI_USAGE;
        } else if (!a->path) {
            a->path = s;
        } else {
            cli_error("run: more than one graph given ('%s' and '%s')", a->path, s);
            return CLI_USAGE;
        }
    }
    if (a->rounds == 0 || a->inflight == 0) {
        cli_error("run: --rounds and --inflight must be at least 1");
        return CLI_USAGE;
    }
    if (!a->path)
        a->path = RUN_DEFAULT_GRAPH;
    return 0;
}

typedef struct loop_ctx {
    long done, failed;
    int first_status;
} loop_ctx_t;

static void on_round(af_session_t *s, uint64_t round, int status, void *user)
{
    (void)s;
    (void)round;
    loop_ctx_t *c = user;
    c->done++;
    if (status) {
        c->failed++;
        if (!c->first_status)
            c->first_status = status;
    }
}

/* Runs n rounds pipelined on the loop (inputs: one buffer per session input, or NULL). */
static void run_rounds(af_session_t *s, uv_loop_t *loop, long n, loop_ctx_t *c,
                       const af_buffer_t *inputs)
{
    long submitted = 0, target = c->done + n;
    while (c->done < target) {
        while (submitted < n && af_session_submit(s, inputs, NULL, on_round, c, NULL) == 0)
            submitted++;
        uv_run(loop, UV_RUN_ONCE);
    }
}

/* ---- real data -------------------------------------------------------------------------- */

static void data_free(run_data_t *d)
{
    for (int i = 0; i < d->n_specs; i++)
        free(d->specs[i]);
    for (int i = 0; i < d->n_ins; i++) {
        af_tensor_clear(&d->ins[i].t);
        free(d->names[i]);
    }
    for (int32_t i = 0; i < d->n_outs; i++) {
        free(d->outs[i].data);
        free(d->out_names[i]);
    }
    free(d->outs);
    free(d->out_names);
    free(d->bufs);
    memset(d, 0, sizeof(*d));
}

/* Reads the --input arguments: the user's dims specs first (the importer gets them), then the
 * files into tensors, each adding the dims spec of its tensor. */
static int data_load(const run_args_t *a, run_data_t *d)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < a->n_in_args; i++) {
            data_arg_t da;
            char why[512];
            if (data_parse_arg(a->in_args[i], &da, why, sizeof why)) {
                cli_error("run: %s", why);
                return CLI_USAGE;
            }
            if (!pass && !da.file) {
                d->specs[d->n_specs++] = strdup(a->in_args[i]);
                d->n_user_specs++;
            }
            if (!pass || !da.file)
                continue;
            af_error_t err;
            af_error_clear(&err);
            data_in_t *in = &d->ins[d->n_ins];
            if (af_tensor_load(da.file, &in->t, &err)) {
                cli_error("run: --input %s: %s", da.name, err.msg);
                return CLI_FAIL;
            }
            d->names[d->n_ins] = strdup(da.name); /* the command line's name, not the file's */
            in->name = d->names[d->n_ins];
            d->files[d->n_ins++] = da.file;
            char spec[600];
            data_dims_spec(da.name, &in->t, spec, sizeof spec);
            d->specs[d->n_specs++] = strdup(spec);
        }
    return 0;
}

/* Copies the kept outputs of the last round into d->outs and writes them to --output-dir. */
/* 1 for the kernel sets whose outputs are patterns (a string output then holds no handles). */
static int pattern_kernels(const char *kernels)
{
    return kernels && (!strcmp(kernels, "verify") || !strcmp(kernels, "empty"));
}

static int data_collect(const run_args_t *a, const af_session_t *s, run_data_t *d, int patterns)
{
    int32_t n = af_session_output_count(s);
    d->outs = calloc((size_t)n + 1, sizeof(*d->outs));
    d->out_names = calloc((size_t)n + 1, sizeof(char *));
    if (!d->outs || !d->out_names)
        return CLI_FAIL;
    if (a->output_dir && data_make_dirs(a->output_dir) != 0) {
        cli_error("run: --output-dir %s: %s", a->output_dir, strerror(errno));
        return CLI_FAIL;
    }
    int rc = 0;
    for (int32_t i = 0; i < n; i++) {
        af_tensor_t v;
        af_io_info_t io;
        char why[512];
        af_session_io_info(s, 1, i, &io);
        if (patterns && io.dtype == AF_DTYPE_STRING)
            continue; /* patterns, not handles: nothing to print or write */
        if (data_output(s, i, &v, why, sizeof why)) {
            cli_error("run: %s", why);
            rc = CLI_FAIL;
            continue;
        }
        af_tensor_t *o = &d->outs[d->n_outs];
        *o = v;
        o->name = NULL;
        o->data = malloc(v.bytes ? (size_t)v.bytes : 1);
        if (!o->data)
            return CLI_FAIL;
        memcpy(o->data, v.data, (size_t)v.bytes);
        d->out_names[d->n_outs++] = strdup(io.name);
        if (!a->output_dir)
            continue;
        char file[256], path[4096];
        data_file_name(io.name, (int)i, file, sizeof file);
        for (int32_t k = 0; k + 1 < d->n_outs; k++) { /* names that sanitise alike: _<i> */
            char other[256];
            data_file_name(d->out_names[k], (int)k, other, sizeof other);
            if (!strcmp(other, file)) {
                file[strlen(file) - 4] = 0;
                snprintf(other, sizeof other, "%.200s_%d.npy", file, (int)i);
                snprintf(file, sizeof file, "%s", other);
                break;
            }
        }
        int pb = o->dtype == AF_DTYPE_STRING; /* NumPy has no string type: a TensorProto */
        if (pb)
            snprintf(file + strlen(file) - 4, 5, ".pb");
        snprintf(path, sizeof path, "%s/%s", a->output_dir, file);
        af_error_t err;
        af_error_clear(&err);
        if (pb ? af_tensor_save_pb(path, o, &err) : af_tensor_save_npy(path, o, &err)) {
            cli_error("run: output '%s': %s", io.name, err.msg);
            rc = CLI_FAIL;
        }
    }
    return rc;
}

typedef struct reuse_cmp {
    uint64_t arena;
    double cp_cost;
    int32_t cp_nodes;
    int ok;
} reuse_cmp_t;

static void compare_reuse(const af_graph_t *g, const af_plan_opts_t *base, reuse_cmp_t out[2])
{
    for (int m = 0; m < 2; m++) {
        af_plan_opts_t o = *base;
        o.parallel_reuse = m ? AF_REUSE_STRICT : AF_REUSE_FENCE;
        af_plan_t *p = NULL;
        out[m].ok = af_plan_create(g, &o, &p, NULL) == 0 &&
                    af_executor_critical_path(p, &out[m].cp_cost, &out[m].cp_nodes) == 0;
        out[m].arena = p ? af_plan_arena_bytes(p) : 0;
        af_plan_destroy(p);
    }
}

typedef struct run_result {
    double seconds, rounds_per_s, ns_per_node, plan_ms;
    uint64_t heap_calls, pool_os, dyn_allocs;
    double sys_per_round;
    af_session_stats_t st;
    int32_t threads, inflight;
    const char *kernels;
    double cp_cost;
    int32_t cp_nodes;
    int cache_hit;    /* -1: no cache */
    run_data_t *data; /* inputs given and outputs kept (real data) */
} run_result_t;

static int print_json(const run_args_t *a, const af_graph_t *g, const af_plan_t *p,
                      const run_result_t *r, const reuse_cmp_t *cmp)
{
    const af_plan_report_t *rep = af_plan_report(p);
    json_t *o = json_pack(
        "{s:s, s:i, s:i, s:I, s:i, s:i, s:s, s:b, s:b, s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:I, "
        "s:I, s:f, s:I, s:I, s:I, s:I, s:f, s:i, s:f}",
        "graph", af_graph_name(g), "nodes", rep->nodes, "tensors", rep->tensors, "rounds",
        (json_int_t)a->rounds, "threads", r->threads, "inflight", r->inflight, "kernels",
        r->kernels, "verify", a->verify, "safe", a->safe, "parallel_reuse",
        af_plan_opts(p)->parallel_reuse == AF_REUSE_STRICT ? "strict" : "fence",
        "corrupted_tensors", (json_int_t)r->st.corrupted_tensors, "failed_rounds",
        (json_int_t)r->st.failed_rounds, "arena_bytes", (json_int_t)r->st.arena_bytes,
        "rounds_per_s", r->rounds_per_s, "ns_per_node", r->ns_per_node, "seconds", r->seconds,
        "naive_bytes", (json_int_t)rep->naive_bytes, "lower_bound_bytes",
        (json_int_t)rep->lower_bound_bytes, "system_allocs_per_round", r->sys_per_round,
        "heap_calls", (json_int_t)r->heap_calls, "pool_os_calls", (json_int_t)r->pool_os,
        "dynamic_allocs", (json_int_t)r->dyn_allocs, "reuse_edges", (json_int_t)rep->reuse_edges,
        "critical_path_cost", r->cp_cost, "critical_path_nodes", r->cp_nodes, "plan_ms",
        r->plan_ms);
    if (!o)
        return CLI_FAIL;
    if (r->cache_hit >= 0)
        json_object_set_new(o, "plan_cache_hit", json_boolean(r->cache_hit));
    json_object_set_new(o, "plan_swaps", json_integer((json_int_t)r->st.plan_swaps));
    json_object_set_new(o, "scratch_bytes", json_integer((json_int_t)rep->scratch_bytes));
    json_object_set_new(o, "unplanned_scratch_bytes",
                        json_integer((json_int_t)r->st.unplanned_scratch_bytes));
    json_object_set_new(o, "prepacked_bytes", json_integer((json_int_t)r->st.prepacked_bytes));
    json_object_set_new(o, "fused_nodes", json_integer(rep->fused_nodes));
    json_object_set_new(o, "unfused_arena_bytes", json_integer((json_int_t)rep->unfused_bytes));
    const run_data_t *d = r->data;
    if (d->n_ins) {
        json_t *ins = json_array();
        for (int i = 0; ins && i < d->n_ins; i++)
            json_array_append_new(
                ins, json_pack("{s:s, s:s}", "name", d->ins[i].name, "file", d->files[i]));
        json_object_set_new(o, "inputs", ins ? ins : json_null());
    }
    if (d->outs) {
        json_t *outs = json_array();
        for (int32_t i = 0; outs && i < d->n_outs; i++)
            json_array_append_new(outs, data_summary_json(d->out_names[i], &d->outs[i]));
        json_object_set_new(o, "outputs", outs ? outs : json_null());
        if (a->output_dir)
            json_object_set_new(o, "output_dir", json_string(a->output_dir));
    }
    if (cmp) {
        for (int m = 0; m < 2; m++)
            if (cmp[m].ok)
                json_object_set_new(o, m ? "strict" : "fence",
                                    json_pack("{s:I, s:f, s:i}", "arena_bytes",
                                              (json_int_t)cmp[m].arena, "critical_path_cost",
                                              cmp[m].cp_cost, "critical_path_nodes",
                                              cmp[m].cp_nodes));
    }
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return CLI_FAIL;
    puts(s);
    free(s);
    return CLI_OK;
}

static void print_text(const run_args_t *a, const af_graph_t *g, const af_plan_t *p,
                       const run_result_t *r, const reuse_cmp_t *cmp)
{
    const af_plan_report_t *rep = af_plan_report(p);
    char nb[32], ab[32];
    af_format_bytes(nb, sizeof nb, rep->naive_bytes);
    af_format_bytes(ab, sizeof ab, r->st.arena_bytes);
    printf("graph          %s (%d nodes, %d tensors)\n",
           af_graph_name(g)[0] ? af_graph_name(g) : a->path, rep->nodes, rep->tensors);
    printf("plan           %s%s, schedule %s, placer %s, %d reuse edges, %.1f ms\n",
           af_plan_opts(p)->parallel_reuse == AF_REUSE_STRICT ? "strict" : "fence",
           a->safe ? " (safe mode)" : "", rep->schedule, rep->placer, rep->reuse_edges, r->plan_ms);
    printf("memory         naive %s -> arena %s (%.2fx less)\n", nb, ab,
           r->st.arena_bytes ? (double)rep->naive_bytes / (double)r->st.arena_bytes : 1.0);
    if (rep->unfused_bytes)
        printf("fusion         %d nodes fused (%d BatchNormalization into Conv); arena without "
               "fusion %llu bytes\n",
               rep->fused_nodes, rep->bn_folded, (unsigned long long)rep->unfused_bytes);
    if (rep->scratch_tensors || r->st.unplanned_scratch_bytes)
        printf("scratch        %llu bytes of the arena host kernel working memory (%d tensors); "
               "%llu outside it\n",
               (unsigned long long)rep->scratch_bytes, rep->scratch_tensors,
               (unsigned long long)r->st.unplanned_scratch_bytes);
    if (r->st.plan_swaps)
        printf("re-planned     %llu time(s) after warm-up (dynamic tensors sized from the rounds "
               "seen; naive figure is the first plan's)\n",
               (unsigned long long)r->st.plan_swaps);
    printf("rounds         %ld on %d threads (%d in flight), %s kernels\n", a->rounds, r->threads,
           r->inflight, r->kernels);
    printf("throughput     %.1f rounds/s (%.3f ms/round, %.0f ns/node)\n", r->rounds_per_s,
           1e3 / r->rounds_per_s, r->ns_per_node);
    printf("critical path  %d nodes, cost %.4g\n", r->cp_nodes, r->cp_cost);
    printf("system allocs  %.2f per round (heap %llu, pool OS %llu, dynamic %llu)\n",
           r->sys_per_round, (unsigned long long)r->heap_calls, (unsigned long long)r->pool_os,
           (unsigned long long)r->dyn_allocs);
    if (cmp)
        for (int m = 0; m < 2; m++) {
            char b[32];
            af_format_bytes(b, sizeof b, cmp[m].arena);
            if (cmp[m].ok)
                printf("%-14s arena %s, critical path %d nodes, cost %.4g\n",
                       m ? "strict" : "fence", b, cmp[m].cp_nodes, cmp[m].cp_cost);
        }
    const run_data_t *d = r->data;
    if (d->outs) {
        printf("inputs         %d from files", d->n_ins);
        if (d->n_pattern)
            printf(", %d filled with a pattern (first: '%s')", (int)d->n_pattern, d->first_pattern);
        printf("\n");
        printf("outputs        %d%s%s%s\n", (int)d->n_outs, a->output_dir ? " written to " : "",
               a->output_dir ? a->output_dir : "", a->output_dir ? " as <name>.npy" : "");
        for (int32_t i = 0; i < d->n_outs; i++)
            data_print_summary(stdout, d->out_names[i], &d->outs[i]);
    }
    if (r->st.failed_rounds)
        printf("failed rounds  %llu\n", (unsigned long long)r->st.failed_rounds);
    if (a->verify)
        printf("verified: %llu corrupted tensors\n", (unsigned long long)r->st.corrupted_tensors);
    else
        printf("not verified (use --verify)\n");
}

/* Executes the plan; fills r. Returns 0 or prints the error and returns CLI_FAIL. */
static int execute(const run_args_t *a, const af_plan_t *p, const af_executor_opts_t *eo,
                   run_result_t *r)
{
    af_error_t err;
    af_error_clear(&err);
    af_executor_t *ex = NULL;
    af_session_t *s = NULL;
    uv_loop_t loop;
    int rc = uv_loop_init(&loop);
    if (rc || (rc = af_executor_create(eo, &ex, &err))) {
        cli_error("run: %s", err.msg[0] ? err.msg : af_strerror(rc));
        if (!ex)
            uv_loop_close(&loop);
        return CLI_FAIL;
    }
    run_data_t *d = r->data;
    int keep = d->n_ins > 0 || a->output_dir;
    af_session_opts_t so = {.loop = &loop, .keep_outputs = keep};
    char why[512];
    if ((rc = af_session_create(ex, p, &so, &s, &err)) ||
        !(d->bufs = calloc((size_t)af_session_input_count(s) + 1, sizeof(af_buffer_t))) ||
        data_bind(s, d->ins, d->n_ins, d->bufs, why, sizeof why)) {
        cli_error("run: %s", rc ? err.msg : d->bufs ? why : "out of memory");
        af_session_destroy(s);
        uv_run(&loop, UV_RUN_NOWAIT);
        af_executor_destroy(ex);
        uv_loop_close(&loop);
        return CLI_FAIL;
    }
    for (int32_t i = 0; i < af_session_input_count(s); i++) {
        af_io_info_t io;
        if (d->bufs[i].data || af_session_io_info(s, 0, i, &io))
            continue;
        if (!d->n_pattern++)
            snprintf(d->first_pattern, sizeof d->first_pattern, "%s", io.name);
    }
    r->threads = af_executor_threads(ex);
    r->inflight = eo->max_inflight;
    r->kernels = eo->kernels;
    loop_ctx_t c = {0};
    run_rounds(s, &loop, a->warmup, &c, d->bufs);
    af_session_stats_t st0;
    af_session_stats(s, &st0);
    uint64_t heap0 = run_alloc_calls();
    uint64_t t0 = af_now_ns();
    run_rounds(s, &loop, a->rounds, &c, d->bufs);
    uint64_t t1 = af_now_ns();
    r->heap_calls = run_alloc_calls() - heap0;
    af_session_stats(s, &r->st);
    r->pool_os = r->st.pool_os_calls - st0.pool_os_calls;
    r->dyn_allocs = r->st.dynamic_allocs - st0.dynamic_allocs;
    r->seconds = (double)(t1 - t0) / 1e9;
    r->rounds_per_s = (double)a->rounds / (r->seconds > 0 ? r->seconds : 1e-9);
    uint64_t nodes = (uint64_t)af_plan_report(p)->nodes * (uint64_t)a->rounds;
    r->ns_per_node = nodes ? (double)(t1 - t0) / (double)nodes : 0;
    r->sys_per_round = (double)(r->heap_calls + r->pool_os + r->dyn_allocs) / (double)a->rounds;
    if (c.failed && !r->st.corrupted_tensors) {
        const af_graph_t *g = af_plan_graph(p);
        int32_t fn = r->st.first_failed_node;
        const af_node_info_t *ni = fn >= 0 ? af_graph_node(g, fn) : NULL;
        /* an If the importer kept one branch of: why the other cannot run */
        const af_attr_t *dead = ni ? af_graph_node_attr(g, fn, "arenaflow.if_dead") : NULL;
        const char *dw = dead && dead->type == AF_ATTR_STRING ? dead->s : NULL;
        cli_error("run: %ld rounds failed: %s%s%s%s%s%s%s%.300s", c.failed,
                  af_strerror(c.first_status), ni ? " (first at node '" : "", ni ? ni->name : "",
                  ni ? "', op " : "", ni ? ni->op : "", ni ? ")" : "",
                  dw ? ": the condition takes the branch that cannot run: " : "", dw ? dw : "");
    }
    if (keep && !c.failed)
        rc = data_collect(a, s, d, pattern_kernels(eo->kernels));
    af_session_destroy(s);
    uv_run(&loop, UV_RUN_NOWAIT);
    af_executor_destroy(ex);
    uv_loop_close(&loop);
    return rc;
}

/* Planner and executor options from the config file and the command line; 0 or an exit code. */
static int setup_opts(run_args_t *a, const run_data_t *d, af_plan_opts_t *po,
                      af_executor_opts_t *eo)
{
    af_plan_opts_init(po);
    af_executor_opts_init(eo);
    eo->verify = 0;
    if (a->config && (cli_load_config(a->config, po) || run_load_exec_config(a->config, eo)))
        return CLI_FAIL;
    af_error_t err;
    af_error_clear(&err);
    if (a->reuse && af_plan_opts_set(po, "parallel_reuse", a->reuse, &err)) {
        cli_error("run: %s", err.msg);
        return CLI_USAGE;
    }
    if ((a->kernels && af_executor_opts_set(eo, "kernels", a->kernels, &err)) ||
        (a->fuse && af_plan_opts_set(po, "fuse", a->fuse, &err)) ||
        (a->fuse_bn && af_plan_opts_set(po, "fuse_bn", a->fuse_bn, &err)) ||
        (a->budget && af_plan_opts_set(po, "budget", a->budget, &err)) ||
        (a->offload && af_plan_opts_set(po, "offload", "1", &err))) {
        cli_error("run: %s", err.msg);
        return CLI_USAGE;
    }
    if (a->verify) {
        eo->verify = 1;
        if (!a->kernels)
            eo->kernels = "verify";
    } else if (d->n_ins && !a->kernels) {
        eo->kernels = "real"; /* real data: real kernels unless told otherwise */
    }
    /* the executor's rule for verify = auto: on with the verify kernels */
    a->verify = eo->verify > 0 || (eo->verify < 0 && strcmp(eo->kernels, "verify") == 0);
    if (a->threads >= 0)
        eo->threads = (int32_t)a->threads;
    if (a->inflight > 0)
        eo->max_inflight = (int32_t)a->inflight;
    if (a->rounds < 0)
        a->rounds = d->n_ins ? 1 : 20;
    if (a->warmup < 0)
        a->warmup = d->n_ins ? 1
                             : 2L * eo->max_inflight +
                                   (eo->replan_after_warmup > 0
                                        ? eo->replan_after_warmup + 2L * eo->max_inflight
                                        : 0);
    if (a->safe)
        po->safe_mode = 1;
    af_plan_opts_resolve(po, eo->kernels);
    return 0;
}

/* ONNX models get every dims spec (the files' dims too); JSON graphs have fixed shapes, so only
 * the user's dims specs are passed on (and refused there), the files are bound as they are. */
static af_graph_t *load_graph(const run_args_t *a, run_data_t *d)
{
    size_t n = strlen(a->path);
    int onnx = n > 5 && !strcmp(a->path + n - 5, ".onnx");
    if (strncmp(a->path, "zoo:", 4) != 0)
        return cli_load_graph(a->path, d->specs, onnx ? d->n_specs : d->n_user_specs);
    if (d->n_specs) {
        cli_error("run: --input applies to graph files, not to %s", a->path);
        return NULL;
    }
    return run_load_graph(a->path, (int32_t)a->batch);
}

int cmd_run(int argc, char **argv)
{
    run_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? CLI_OK : rc;
    run_count_allocs();
    run_data_t d = {0};
    af_plan_opts_t po;
    af_executor_opts_t eo;
    af_error_t err;
    af_error_clear(&err);
    if ((rc = data_load(&a, &d)) || (rc = setup_opts(&a, &d, &po, &eo))) {
        data_free(&d);
        return rc;
    }
    af_graph_t *g = load_graph(&a, &d);
    if (g && strcmp(eo.kernels, "verify") && strcmp(eo.kernels, "empty"))
        g = run_lower_graph(g, eo.kernels, eo.threads); /* kernel working memory planned */
    if (!g) {
        data_free(&d);
        return CLI_FAIL;
    }
    const af_plan_t *p = NULL;
    af_plan_t *own = NULL;
    af_plan_cache_t *cache = NULL;
    int hit = 0;
    uint64_t t0 = af_now_ns();
    if (a.cache) {
        af_plan_cache_opts_t co;
        af_plan_cache_opts_init(&co);
        co.dir = a.cache;
        if ((rc = af_plan_cache_create(&co, &cache, &err)) == 0) {
            for (int32_t i = 0; af_plan_cache_warning(cache, i); i++)
                cli_error("warning: %s", af_plan_cache_warning(cache, i));
            rc = af_plan_cache_get(cache, g, &po, &p, &hit, &err);
        }
    } else if ((rc = af_plan_create(g, &po, &own, &err)) == 0) {
        p = own;
    }
    if (rc) {
        cli_error("run: %s", err.msg);
        af_plan_cache_destroy(cache);
        af_graph_destroy(g);
        data_free(&d);
        return CLI_FAIL;
    }
    run_result_t r = {.data = &d};
    r.cache_hit = cache ? hit : -1;
    r.plan_ms = (double)(af_now_ns() - t0) / 1e6;
    af_executor_critical_path(p, &r.cp_cost, &r.cp_nodes);
    reuse_cmp_t cmp[2];
    if (a.compare)
        compare_reuse(g, &po, cmp);
    rc = execute(&a, p, &eo, &r);
    if (rc == 0) {
        if (a.json)
            rc = print_json(&a, g, p, &r, a.compare ? cmp : NULL);
        else
            print_text(&a, g, p, &r, a.compare ? cmp : NULL);
        if (r.st.corrupted_tensors || r.st.failed_rounds)
            rc = CLI_FAIL;
    }
    if (cache) {
        af_plan_cache_stats_t cs;
        af_plan_cache_stats(cache, &cs);
        if (!a.json)
            printf("plan cache     %s (%s; %llu hits, %llu restored from disk, %llu misses)\n",
                   hit ? "hit" : "miss", a.cache, (unsigned long long)cs.hits,
                   (unsigned long long)cs.restored, (unsigned long long)cs.misses);
        af_plan_cache_release(cache, p);
        af_plan_cache_destroy(cache);
    }
    af_plan_destroy(own);
    af_graph_destroy(g);
    data_free(&d);
    return rc;
}
