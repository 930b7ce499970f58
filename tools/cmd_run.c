/*
 * arenaflow run [GRAPH]: plan a graph and execute it for a number of rounds on the worker pool,
 * pipelined (several rounds in flight on a libuv loop), then print memory (naive vs arena),
 * throughput, system allocator calls per round and, with --verify, the number of corrupted
 * tensors the verify kernels caught (text, or one JSON object with --json).
 *
 * System allocator calls are counted through the library's allocator hooks (every heap call
 * of the library), plus the pool's OS calls (mmap/munmap/madvise) and dynamic-region
 * allocations during the timed rounds.
 */
#include "tools/run_util.h"

#include "arenaflow/cache.h"
#include "arenaflow/zoo.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

typedef struct run_args {
    const char *path, *config, *kernels, *reuse, *cache;
    long rounds, threads, inflight, warmup, batch;
    int verify, safe, json, compare;
} run_args_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: arenaflow run [GRAPH] [options]\n\n"
            "Plans GRAPH (a JSON graph, an .onnx model, or zoo:NAME for a model-zoo graph;\n"
            "default " RUN_DEFAULT_GRAPH ") and executes it for a number of rounds on a pool of\n"
            "worker threads, several rounds in flight, each in its own arena from the pool.\n\n"
            "options:\n"
            "  --rounds N         timed rounds (default 20)\n"
            "  --warmup N         untimed rounds first (default 2 x inflight: every arena and\n"
            "                     deque has reached its size before the timed rounds)\n"
            "  --threads N        worker threads (default: all CPUs)\n"
            "  --inflight N       rounds in flight at once (default 4)\n"
            "  --verify           verify kernels: every input checked against the checksum its\n"
            "                     producer recorded; exit 1 if any tensor was corrupted\n"
            "  --kernels SET      verify (default), real (f32 kernels) or empty\n"
            "  --safe             plan in safe mode (no reuse: every tensor its own bytes)\n"
            "  --parallel-reuse fence|strict   reuse guarded by edges, or only along data edges\n"
            "  --compare-reuse    also plan fence and strict and print arena and critical path\n"
            "  --batch N          batch size for zoo:NAME graphs\n"
            "  --cache DIR        take the plan from a persistent plan cache in DIR (planned and\n"
            "                     stored on a miss; a later run, even after a restart, hits)\n"
            "  --config FILE      INI file: [planner] and [executor] sections\n"
            "  --json             print one JSON object\n"
            "  -h, --help         this help\n\n"
            "exit status: 0 ok, 1 rejected input, failed round or corrupted tensor, 2 usage\n");
}

static int parse_args(int argc, char **argv, run_args_t *a)
{
    *a = (run_args_t){.rounds = 20, .warmup = -1, .threads = -1, .inflight = -1};
    static const char *const with_value[] = {"--rounds",  "--threads",        "--inflight",
                                             "--warmup",  "--batch",          "--config",
                                             "--kernels", "--parallel-reuse", "--cache"};
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
        } else if (!strcmp(s, "--parallel-reuse")) {
            a->reuse = v;
        } else if (!strcmp(s, "--verify")) {
            a->verify = 1;
        } else if (!strcmp(s, "--safe")) {
            a->safe = 1;
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
    if (a->rounds < 1 || a->inflight == 0) {
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

/* Runs n rounds pipelined on the loop. */
static void run_rounds(af_session_t *s, uv_loop_t *loop, long n, loop_ctx_t *c)
{
    long submitted = 0, target = c->done + n;
    while (c->done < target) {
        while (submitted < n && af_session_submit(s, NULL, NULL, on_round, c, NULL) == 0)
            submitted++;
        uv_run(loop, UV_RUN_ONCE);
    }
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
    int cache_hit; /* -1: no cache */
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
    af_session_opts_t so = {0};
    so.loop = &loop;
    if ((rc = af_session_create(ex, p, &so, &s, &err))) {
        cli_error("run: %s", err.msg);
        af_executor_destroy(ex);
        uv_loop_close(&loop);
        return CLI_FAIL;
    }
    r->threads = af_executor_threads(ex);
    r->inflight = eo->max_inflight;
    r->kernels = eo->kernels;
    loop_ctx_t c = {0};
    run_rounds(s, &loop, a->warmup, &c);
    af_session_stats_t st0;
    af_session_stats(s, &st0);
    uint64_t heap0 = run_alloc_calls();
    uint64_t t0 = af_now_ns();
    run_rounds(s, &loop, a->rounds, &c);
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
        cli_error("run: %ld rounds failed: %s%s%s%s%s%s", c.failed, af_strerror(c.first_status),
                  fn >= 0 ? " (first at node '" : "", fn >= 0 ? af_graph_node(g, fn)->name : "",
                  fn >= 0 ? "', op " : "", fn >= 0 ? af_graph_node(g, fn)->op : "",
                  fn >= 0 ? ")" : "");
    }
    af_session_destroy(s);
    uv_run(&loop, UV_RUN_NOWAIT);
    af_executor_destroy(ex);
    uv_loop_close(&loop);
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? CLI_OK : rc;
    run_count_allocs();
    af_plan_opts_t po;
    af_plan_opts_init(&po);
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.verify = 0;
    if (a.config && (cli_load_config(a.config, &po) || run_load_exec_config(a.config, &eo)))
        return CLI_FAIL;
    af_error_t err;
    af_error_clear(&err);
    if (a.reuse && af_plan_opts_set(&po, "parallel_reuse", a.reuse, &err)) {
        cli_error("run: %s", err.msg);
        return CLI_USAGE;
    }
    if (a.kernels && af_executor_opts_set(&eo, "kernels", a.kernels, &err)) {
        cli_error("run: %s", err.msg);
        return CLI_USAGE;
    }
    if (a.verify) {
        eo.verify = 1;
        if (!a.kernels)
            eo.kernels = "verify";
    }
    /* the executor's rule for verify = auto: on with the verify kernels */
    a.verify = eo.verify > 0 || (eo.verify < 0 && strcmp(eo.kernels, "verify") == 0);
    if (a.threads >= 0)
        eo.threads = (int32_t)a.threads;
    if (a.inflight > 0)
        eo.max_inflight = (int32_t)a.inflight;
    if (a.warmup < 0)
        a.warmup = 2L * eo.max_inflight +
                   (eo.replan_after_warmup > 0 ? eo.replan_after_warmup + 2L * eo.max_inflight : 0);
    if (a.safe)
        po.safe_mode = 1;
    af_graph_t *g = run_load_graph(a.path, (int32_t)a.batch);
    if (!g)
        return CLI_FAIL;
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
        return CLI_FAIL;
    }
    run_result_t r = {0};
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
    return rc;
}
