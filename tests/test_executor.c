/*
 * Executor tests: rounds on the worker pool with verify kernels (random DAGs x thread counts x
 * parallel_reuse modes, pipelined on a libuv loop), broken plans caught, real f32 kernels
 * against hand-computed results, user kernels, dynamic tensors and re-plan after warm-up, zero
 * heap calls per round, options, out-of-memory paths.
 *
 * Scale: the random-DAG property test runs AF_EXEC_DAGS graphs (default 1000; 100 under
 * ASan/TSan builds, which are ~10x slower); the seed is printed on failure.
 */
#include "arenaflow/executor.h"
#include "arenaflow/plan.h"
#include "tests/randdag.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <cmocka.h>

#if defined(AF_TSAN_BUILD) || defined(AF_ASAN_BUILD)
#define DEFAULT_DAGS 100
#else
#define DEFAULT_DAGS 1000
#endif

/* inline_rounds: af_executor_opts.inline_rounds (-1 auto, the default) */
static af_executor_t *make_exec_inline(int threads, const char *kernels, int inline_rounds)
{
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = threads;
    o.kernels = kernels;
    o.inline_rounds = inline_rounds;
    af_executor_t *ex = NULL;
    af_error_t err;
    int rc = af_executor_create(&o, &ex, &err);
    if (rc)
        fprintf(stderr, "af_executor_create: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return ex;
}

static af_executor_t *make_exec(int threads, const char *kernels)
{
    return make_exec_inline(threads, kernels, -1);
}

static af_plan_t *make_plan(const af_graph_t *g, af_parallel_reuse_t mode, int safe)
{
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.parallel_reuse = mode;
    o.safe_mode = safe;
    af_plan_t *p = NULL;
    af_error_t err;
    int rc = af_plan_create(g, &o, &p, &err);
    if (rc)
        fprintf(stderr, "af_plan_create: %s\n", err.msg);
    assert_int_equal(rc, 0);
    rc = af_plan_verify(p, &err);
    if (rc)
        fprintf(stderr, "af_plan_verify: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return p;
}

/* ---- a small graph builder -------------------------------------------------------------- */

static void add_t(af_graph_t *g, const char *name, int64_t bytes, af_tensor_kind_t kind)
{
    af_tensor_desc_t d = {0};
    d.name = name;
    d.bytes = bytes;
    d.rank = -1;
    d.kind = kind;
    assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
}

static void add_n(af_graph_t *g, const char *name, const char *op, const char *in0, const char *in1,
                  const char *out)
{
    const char *ins[2] = {in0, in1};
    af_node_desc_t d = {0};
    d.name = name;
    d.op = op;
    d.inputs = ins;
    d.n_inputs = in1 ? 2 : 1;
    d.outputs = &out;
    d.n_outputs = 1;
    assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
}

/* x -> n1 -> a -> n2 -> b -> n3(a, b) -> y: a is live while b is written. */
static af_graph_t *chain_graph(void)
{
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    add_t(g, "x", 4096, AF_TENSOR_INPUT);
    add_t(g, "a", 4096, AF_TENSOR_INTERMEDIATE);
    add_t(g, "b", 4096, AF_TENSOR_INTERMEDIATE);
    add_t(g, "c", 4096, AF_TENSOR_INTERMEDIATE);
    add_t(g, "y", 4096, AF_TENSOR_OUTPUT);
    add_n(g, "n1", "Op", "x", NULL, "a");
    add_n(g, "n2", "Op", "a", NULL, "b");
    add_n(g, "n3", "Op", "a", "b", "c");
    add_n(g, "n4", "Op", "c", NULL, "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

static void test_executor_chain_runs_clean(void **state)
{
    (void)state;
    af_graph_t *g = chain_graph();
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec(2, "verify");
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    for (int i = 0; i < 50; i++) {
        int rc = af_session_run(s, NULL, NULL, &err);
        if (rc)
            fprintf(stderr, "round %d: %s\n", i, err.msg);
        assert_int_equal(rc, 0);
    }
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.rounds, 50);
    assert_int_equal(st.corrupted_tensors, 0);
    assert_int_equal(st.nodes_run, 200);
    assert_int_equal(st.arena_bytes, af_plan_arena_bytes(p));
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* Overlapping two live tensors through the debug hook: the verifier and the verify kernels
 * must both notice, and the error must name the polluted tensor. */
static void test_executor_overlapped_offsets_caught(void **state)
{
    (void)state;
    af_graph_t *g = chain_graph();
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 1); /* safe: every tensor its own bytes */
    int32_t a = af_graph_find_tensor(g, "a"), b = af_graph_find_tensor(g, "b");
    assert_int_equal(af_plan_debug_set_offset(p, b, af_plan_tensor(p, a)->offset), 0);
    af_error_t err;
    assert_int_equal(af_plan_verify(p, &err), AF_EVERIFY);
    af_executor_t *ex = make_exec(1, "verify");
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    int rc = af_session_run(s, NULL, NULL, &err);
    assert_int_equal(rc, AF_ECORRUPT);
    assert_non_null(strstr(err.msg, "'a'"));
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.first_corrupt_tensor, a);
    assert_int_equal(st.first_corrupt_node, af_graph_find_node(g, "n3"));
    assert_true(st.corrupted_tensors >= 1);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* ---- reuse edges: removing them lets a parallel order corrupt data ----------------------- */

static int32_t slow_node = -1;

static int slow_kernel(const af_kernel_args_t *a)
{
    if (a->node == slow_node)
        uv_sleep(30);
    return af_kernel_builtin("verify", a->info->op)(a);
}

/*
 * i -> PA -> A -> F(A, D) -> E (out); i -> SD -> D; i -> PT -> B -> CB -> out2.
 * A and B are the same size and unordered by data, so a memory-minimal plan shares their bytes
 * and orders the pair with a reuse edge. Each op type is unique so the test can slow one node.
 */
static af_graph_t *reuse_graph(void)
{
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    add_t(g, "i", 256, AF_TENSOR_INPUT);
    add_t(g, "A", 65536, AF_TENSOR_INTERMEDIATE);
    add_t(g, "B", 65536, AF_TENSOR_INTERMEDIATE);
    add_t(g, "D", 256, AF_TENSOR_INTERMEDIATE);
    add_t(g, "E", 256, AF_TENSOR_OUTPUT);
    add_t(g, "out2", 256, AF_TENSOR_OUTPUT);
    add_n(g, "PA", "PA", "i", NULL, "A");
    add_n(g, "SD", "SD", "i", NULL, "D");
    add_n(g, "F", "F", "A", "D", "E");
    add_n(g, "PT", "PT", "i", NULL, "B");
    add_n(g, "CB", "CB", "B", NULL, "out2");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

static uint64_t corrupted_with(const af_plan_t *p, int ignore_edges, int32_t slow)
{
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 3;
    o.debug_ignore_reuse_edges = ignore_edges;
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
    const char *ops[] = {"PA", "SD", "F", "PT", "CB"};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(af_executor_register_kernel(ex, ops[i], slow_kernel, NULL), 0);
    slow_node = slow;
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, NULL, &s, NULL), 0);
    for (int i = 0; i < 2; i++)
        af_session_run(s, NULL, NULL, NULL);
    af_session_stats_t st;
    af_session_stats(s, &st);
    af_session_destroy(s);
    af_executor_destroy(ex);
    return st.corrupted_tensors;
}

static void test_executor_reuse_edges_required(void **state)
{
    (void)state;
    af_graph_t *g = reuse_graph();
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    assert_true(af_plan_reuse_edge_count(p) > 0);
    uint64_t with_edges = 0, without = 0;
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        with_edges += corrupted_with(p, 0, v);
#ifndef AF_TSAN_BUILD /* without the edges the race is real: TSan would (rightly) report it */
        without += corrupted_with(p, 1, v);
#endif
    }
    assert_int_equal(with_edges, 0);
#ifndef AF_TSAN_BUILD
    assert_true(without > 0); /* some slowed node lets the unordered writer in first */
#else
    (void)without;
#endif
    af_plan_destroy(p);
    /* strict: A and B never share bytes, so even without edges nothing is corrupted */
    p = make_plan(g, AF_REUSE_STRICT, 0);
    assert_int_equal(af_plan_reuse_edge_count(p), 0);
    for (int32_t v = 0; v < af_graph_node_count(g); v++)
        assert_int_equal(corrupted_with(p, 1, v), 0);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* ---- random DAGs, pipelined on a loop ---------------------------------------------------- */

typedef struct pipe_ctx {
    int done, failed;
    int status[8];
} pipe_ctx_t;

static void on_round(af_session_t *s, uint64_t round, int status, void *user)
{
    (void)s;
    pipe_ctx_t *c = user;
    c->status[round % 8] = status;
    c->done++;
    if (status)
        c->failed++;
}

static void run_pipelined(af_executor_t *ex, const af_plan_t *p, uv_loop_t *loop, uint64_t seed,
                          int rounds)
{
    af_session_opts_t so = {0};
    so.loop = loop;
    af_session_t *s;
    af_error_t err;
    int rc = af_session_create(ex, p, &so, &s, &err);
    if (rc)
        fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err.msg);
    assert_int_equal(rc, 0);
    pipe_ctx_t c = {0};
    int submitted = 0;
    while (c.done < rounds) {
        while (submitted < rounds && af_session_submit(s, NULL, NULL, on_round, &c, NULL) == 0)
            submitted++;
        uv_run(loop, UV_RUN_ONCE);
    }
    af_session_stats_t st;
    af_session_stats(s, &st);
    if (c.failed || st.corrupted_tensors)
        fprintf(stderr, "seed %llu: %d failed rounds, %llu corrupted tensors (first %d)\n",
                (unsigned long long)seed, c.failed, (unsigned long long)st.corrupted_tensors,
                st.first_corrupt_tensor);
    assert_int_equal(c.failed, 0);
    assert_int_equal(st.corrupted_tensors, 0);
    af_session_destroy(s);
    uv_run(loop, UV_RUN_NOWAIT); /* closes the session's async handle */
}

static void test_executor_random_dags_verified(void **state)
{
    (void)state;
    int dags = DEFAULT_DAGS;
    const char *env = getenv("AF_EXEC_DAGS");
    if (env)
        dags = atoi(env);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int threads[3] = {1, 2, 4};
    af_executor_t *ex[3];
    for (int i = 0; i < 3; i++)
        ex[i] = make_exec(threads[i], "verify");
    long checked = 0;
    for (int d = 0; d < dags; d++) {
        uint64_t seed = 1000 + (uint64_t)d;
        af_graph_t *g = rd_graph(seed, 24);
        if (!g)
            fail_msg("seed %llu: rd_graph failed", (unsigned long long)seed);
        for (int mode = 0; mode < 2; mode++) {
            af_plan_t *p = make_plan(g, mode ? AF_REUSE_STRICT : AF_REUSE_FENCE, 0);
            for (int i = 0; i < 3; i++) {
                run_pipelined(ex[i], p, &loop, seed, 3);
                checked++;
            }
            af_plan_destroy(p);
        }
        af_graph_destroy(g);
    }
    assert_int_equal(checked, (long)dags * 6);
    for (int i = 0; i < 3; i++)
        af_executor_destroy(ex[i]);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Shared-object plans carry no reuse edges from the planner: the executor orders the tenants
 * of each shared buffer itself. */
static void test_executor_shared_mode_verified(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    af_executor_t *ex = make_exec(4, "verify");
    int dags = DEFAULT_DAGS / 5;
    for (int d = 0; d < dags; d++) {
        uint64_t seed = 5000 + (uint64_t)d;
        af_graph_t *g = rd_graph(seed, 24);
        assert_non_null(g);
        af_plan_opts_t o;
        af_plan_opts_init(&o);
        o.mode = AF_MODE_SHARED;
        af_plan_t *p = NULL;
        af_error_t err;
        int rc = af_plan_create(g, &o, &p, &err);
        if (rc)
            fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
        assert_int_equal(af_plan_verify(p, &err), 0);
        run_pipelined(ex, p, &loop, seed, 3);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
    af_executor_destroy(ex);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Several threads running rounds of one session at once (more than max_inflight). */
typedef struct mt_ctx {
    af_session_t *s;
    int rounds, failed;
} mt_ctx_t;

static void mt_main(void *arg)
{
    mt_ctx_t *c = arg;
    for (int i = 0; i < c->rounds; i++)
        if (af_session_run(c->s, NULL, NULL, NULL))
            c->failed++;
}

static void test_executor_concurrent_callers(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(77, 40);
    assert_non_null(g);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec(2, "verify");
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, NULL, &s, NULL), 0);
    uv_thread_t th[6];
    mt_ctx_t c[6];
    for (int i = 0; i < 6; i++) {
        c[i] = (mt_ctx_t){s, 20, 0};
        assert_int_equal(uv_thread_create(&th[i], mt_main, &c[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        uv_thread_join(&th[i]);
        assert_int_equal(c[i].failed, 0);
    }
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.rounds, 120);
    assert_int_equal(st.corrupted_tensors, 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* ---- real kernels, user kernels, caller buffers ----------------------------------------- */

static void add_shaped(af_graph_t *g, const char *name, int rank, const int64_t *shape,
                       af_tensor_kind_t kind)
{
    af_tensor_desc_t d = {0};
    d.name = name;
    d.bytes = AF_BYTES_FROM_SHAPE;
    d.dtype = AF_DTYPE_F32;
    d.rank = rank;
    d.shape = shape;
    d.kind = kind;
    assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
}

/* y = softmax(relu(x W + b)) on a 2x3 . 3x2 problem, with caller-provided buffers. */
static void test_executor_real_kernels_mlp(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t s23[] = {2, 3}, s32[] = {3, 2}, s22[] = {2, 2}, s2[] = {2};
    add_shaped(g, "x", 2, s23, AF_TENSOR_INPUT);
    add_shaped(g, "W", 2, s32, AF_TENSOR_INPUT);
    add_shaped(g, "b", 1, s2, AF_TENSOR_INPUT);
    add_shaped(g, "h", 2, s22, AF_TENSOR_INTERMEDIATE);
    add_shaped(g, "hb", 2, s22, AF_TENSOR_INTERMEDIATE);
    add_shaped(g, "r", 2, s22, AF_TENSOR_INTERMEDIATE);
    add_shaped(g, "y", 2, s22, AF_TENSOR_OUTPUT);
    add_n(g, "mm", "MatMul", "x", "W", "h");
    add_n(g, "add", "Add", "h", "b", "hb");
    add_n(g, "relu", "Relu", "hb", NULL, "r");
    add_n(g, "sm", "Softmax", "r", NULL, "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 2;
    o.kernels = "real";
    o.verify = 1; /* checksums around real kernels too */
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    assert_int_equal(af_session_input_count(s), 3);
    assert_int_equal(af_session_output_count(s), 1);
    float x[6] = {1, 2, 3, -1, -2, -3}, W[6] = {1, 0, 0, 1, 1, -1}, b[2] = {0.5f, -0.5f};
    float y[4] = {0};
    af_buffer_t in[3], out[1] = {{y, sizeof y}};
    for (int32_t i = 0; i < 3; i++) {
        const char *nm = af_graph_tensor(g, af_session_input_tensor(s, i))->name;
        in[i] = strcmp(nm, "x") == 0   ? (af_buffer_t){x, sizeof x}
                : strcmp(nm, "W") == 0 ? (af_buffer_t){W, sizeof W}
                                       : (af_buffer_t){b, sizeof b};
    }
    int rc = af_session_run(s, in, out, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    /* x W = [[1+3, 2-3], [-1-3, -2+3]] = [[4, -1], [-4, 1]]; + b; relu; softmax rows */
    float h[4] = {4.5f, 0.0f, 0.0f, 0.5f};
    for (int r = 0; r < 2; r++) {
        float e0 = expf(h[2 * r]), e1 = expf(h[2 * r + 1]);
        assert_float_equal(y[2 * r], e0 / (e0 + e1), 1e-5);
        assert_float_equal(y[2 * r + 1], e1 / (e0 + e1), 1e-5);
    }
    /* a too small output buffer is refused before anything runs */
    out[0].bytes = 8;
    assert_int_equal(af_session_run(s, in, out, &err), AF_EINVAL);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void set_ints(af_graph_t *g, const char *node, const char *name, const int64_t *v, int n)
{
    af_attr_t at = {0};
    at.name = name;
    at.type = AF_ATTR_INTS;
    at.ints = v;
    at.n = n;
    assert_int_equal(af_graph_node_set_attr(g, af_graph_find_node(g, node), &at, NULL), 0);
}

/* Conv (explicit strides/pads) then MaxPool, checked by hand. */
static void test_executor_real_conv_pool(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t sx[] = {1, 1, 3, 3}, sw[] = {1, 1, 2, 2}, sy[] = {1, 1, 2, 2}, sp[] = {1, 1, 1, 1};
    add_shaped(g, "x", 4, sx, AF_TENSOR_INPUT);
    add_shaped(g, "w", 4, sw, AF_TENSOR_INPUT);
    add_shaped(g, "y", 4, sy, AF_TENSOR_INTERMEDIATE);
    add_shaped(g, "p", 4, sp, AF_TENSOR_OUTPUT);
    add_n(g, "conv", "Conv", "x", "w", "y");
    add_n(g, "pool", "MaxPool", "y", NULL, "p");
    int64_t ones[] = {1, 1}, zeros[] = {0, 0, 0, 0}, k2[] = {2, 2};
    set_ints(g, "conv", "strides", ones, 2);
    set_ints(g, "conv", "pads", zeros, 4);
    set_ints(g, "pool", "kernel_shape", k2, 2);
    set_ints(g, "pool", "strides", ones, 2);
    set_ints(g, "pool", "pads", zeros, 4);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec(2, "real");
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, out = 0;
    af_buffer_t in[2], o = {&out, sizeof out};
    for (int32_t i = 0; i < 2; i++)
        in[i] = af_session_input_tensor(s, i) == af_graph_find_tensor(g, "x")
                    ? (af_buffer_t){x, sizeof x}
                    : (af_buffer_t){w, sizeof w};
    int rc = af_session_run(s, in, &o, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_float_equal(out, 5 + 6 + 8 + 9, 0); /* conv = [12 16; 24 28], max = 28 */
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* Weights as constants, filled by the caller through af_session_constant(). */
static void test_executor_constant_weights(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t s12[] = {1, 2}, s22[] = {2, 2};
    add_shaped(g, "x", 2, s12, AF_TENSOR_INPUT);
    add_shaped(g, "W", 2, s22, AF_TENSOR_CONSTANT);
    add_shaped(g, "y", 2, s12, AF_TENSOR_OUTPUT);
    add_n(g, "mm", "MatMul", "x", "W", "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 1;
    o.kernels = "real";
    o.verify = 1;
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    uint64_t wb = 0;
    assert_null(af_session_constant(s, af_graph_find_tensor(g, "x"), &wb));
    float *w = af_session_constant(s, af_graph_find_tensor(g, "W"), &wb);
    assert_non_null(w);
    assert_int_equal(wb, 16);
    w[0] = 1, w[1] = 2, w[2] = 3, w[3] = 4;
    float x[2] = {1, 1}, y[2] = {0, 0};
    af_buffer_t in = {x, sizeof x}, out = {y, sizeof y};
    int rc = af_session_run(s, &in, &out, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0); /* new weights: checksums re-taken, no false corruption */
    assert_float_equal(y[0], 4, 0);
    assert_float_equal(y[1], 6, 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static int unknown_kernel_user;

static int double_kernel(const af_kernel_args_t *a)
{
    assert_ptr_equal(a->user, &unknown_kernel_user);
    const float *x = a->inputs[0];
    float *y = a->outputs[0];
    for (uint64_t i = 0; i < a->output_bytes[0] / 4; i++)
        y[i] = 2 * x[i];
    return 0;
}

static void test_executor_user_kernel_and_missing_op(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t s4[] = {4};
    add_shaped(g, "x", 1, s4, AF_TENSOR_INPUT);
    add_shaped(g, "y", 1, s4, AF_TENSOR_OUTPUT);
    add_n(g, "d", "Double", "x", NULL, "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec(1, "real");
    af_session_t *s = NULL;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), AF_ENOTSUP);
    assert_non_null(strstr(err.msg, "Double"));
    assert_null(s);
    assert_int_equal(af_executor_register_kernel(ex, "Double", double_kernel, &unknown_kernel_user),
                     0);
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    float x[4] = {1, 2, 3, 4}, y[4];
    af_buffer_t in = {x, sizeof x}, out = {y, sizeof y};
    assert_int_equal(af_session_run(s, &in, &out, &err), 0);
    for (int i = 0; i < 4; i++)
        assert_float_equal(y[i], 2 * x[i], 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static int failing_kernel(const af_kernel_args_t *a)
{
    (void)a;
    return AF_EIO;
}

static void test_executor_kernel_error_fails_round(void **state)
{
    (void)state;
    af_graph_t *g = chain_graph();
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec(2, "verify");
    assert_int_equal(af_executor_register_kernel(ex, "Op", failing_kernel, NULL), 0);
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    assert_int_equal(af_session_run(s, NULL, NULL, &err), AF_EIO);
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.failed_rounds, 1);
    /* A failing round stops a batch: its error comes back, no round starts after it (at most
     * the max_inflight rounds already started run), and the session stays usable. */
    assert_int_equal(af_session_run_n(s, 1000, NULL, NULL, &err), AF_EIO);
    assert_non_null(strstr(err.msg, "failed"));
    assert_non_null(strstr(err.msg, "'n1'"));
    af_session_stats(s, &st);
    assert_true(st.rounds >= 2 && st.rounds <= 1 + (uint64_t)af_executor_opts(ex)->max_inflight);
    assert_int_equal(st.failed_rounds, st.rounds);
    assert_int_equal(af_session_inflight(s), 0);
    assert_int_equal(af_session_run(s, NULL, NULL, &err), AF_EIO); /* still usable */
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* ---- round batches (af_session_run_n) --------------------------------------------------- */

/* Each round of a batch reads its own input and writes its own output buffer, while rounds
 * overlap: y_i = relu(x_i) + x_i for 40 rounds on 1, 2 and 4 workers, checksums verified. */
static void test_executor_run_n_rounds_use_their_buffers(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t s4[] = {4};
    add_shaped(g, "x", 1, s4, AF_TENSOR_INPUT);
    add_shaped(g, "r", 1, s4, AF_TENSOR_INTERMEDIATE);
    add_shaped(g, "y", 1, s4, AF_TENSOR_OUTPUT);
    add_n(g, "relu", "Relu", "x", NULL, "r");
    add_n(g, "add", "Add", "r", "x", "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    enum { N = 40 };
    static float x[N][4], y[N][4];
    af_buffer_t in[N], out[N];
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 4; k++)
            x[i][k] = (float)(i * 4 + k) * (k % 2 ? -0.5f : 1.0f);
        in[i] = (af_buffer_t){x[i], sizeof x[i]};
        out[i] = (af_buffer_t){y[i], sizeof y[i]};
    }
    int threads[3] = {1, 2, 4};
    for (int t = 0; t < 3; t++) {
        af_executor_opts_t o;
        af_executor_opts_init(&o);
        o.threads = threads[t];
        o.kernels = "real";
        o.verify = 1;
        af_executor_t *ex;
        assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
        af_session_t *s;
        af_error_t err;
        assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
        memset(y, 0, sizeof y);
        int rc = af_session_run_n(s, N, in, out, &err);
        if (rc)
            fprintf(stderr, "run_n: %s\n", err.msg);
        assert_int_equal(rc, 0);
        for (int i = 0; i < N; i++)
            for (int k = 0; k < 4; k++)
                assert_float_equal(y[i][k], (x[i][k] > 0 ? x[i][k] : 0) + x[i][k], 1e-6);
        af_session_stats_t st;
        af_session_stats(s, &st);
        assert_int_equal(st.rounds, N);
        assert_int_equal(st.nodes_run, 2 * N);
        assert_int_equal(st.corrupted_tensors, 0);
        assert_int_equal(af_session_inflight(s), 0);
        assert_int_equal(af_session_run_n(s, 0, NULL, NULL, &err), 0);
        assert_int_equal(af_session_run_n(s, -1, NULL, NULL, &err), AF_EINVAL);
        af_session_destroy(s);
        af_executor_destroy(ex);
    }
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* Random DAGs under verify kernels: a batch runs every node of every round, with no tensor
 * corrupted, on 1, 2 and 4 workers (the schedule's counters differ with one worker). */
static void test_executor_run_n_random_dags_verified(void **state)
{
    (void)state;
    int threads[3] = {1, 2, 4};
    af_executor_t *ex[3];
    for (int i = 0; i < 3; i++)
        ex[i] = make_exec(threads[i], "verify");
    for (int d = 0; d < DEFAULT_DAGS / 10; d++) {
        uint64_t seed = 5000 + (uint64_t)d;
        af_graph_t *g = rd_graph(seed, 24);
        if (!g)
            fail_msg("seed %llu: rd_graph failed", (unsigned long long)seed);
        af_plan_t *p = make_plan(g, d % 2 ? AF_REUSE_STRICT : AF_REUSE_FENCE, 0);
        for (int i = 0; i < 3; i++) {
            af_session_t *s;
            af_error_t err;
            assert_int_equal(af_session_create(ex[i], p, NULL, &s, &err), 0);
            int rc = af_session_run_n(s, 9, NULL, NULL, &err);
            if (rc)
                fail_msg("seed %llu, %d threads: %s", (unsigned long long)seed, threads[i],
                         err.msg);
            af_session_stats_t st;
            af_session_stats(s, &st);
            assert_int_equal(st.rounds, 9);
            assert_int_equal(st.nodes_run, 9 * (uint64_t)af_graph_node_count(g));
            assert_int_equal(st.corrupted_tensors, 0);
            af_session_destroy(s);
        }
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
    for (int i = 0; i < 3; i++)
        af_executor_destroy(ex[i]);
}

/* Root -> `width` leaves -> one join of all of them (kind 0), or `width`-wide layers whose nodes
 * read two nodes of the layer before (kind 1): the shapes where workers batch-pop from a long
 * deque and where the last predecessor of a two-input node skips its locked decrement. */
static af_graph_t *wide_graph(int kind, int width, int layers)
{
    af_graph_t *g;
    char tn[32], nn[32], a[32], b[32];
    assert_int_equal(af_graph_create(&g), 0);
    add_t(g, "x", 256, AF_TENSOR_INPUT);
    if (kind == 0) {
        add_t(g, "r", 256, AF_TENSOR_INTERMEDIATE);
        add_n(g, "root", "Op", "x", NULL, "r");
        const char **leaves = test_malloc(sizeof(char *) * (size_t)width);
        char(*names)[16] = test_malloc(16 * (size_t)width);
        for (int i = 0; i < width; i++) {
            snprintf(names[i], sizeof names[i], "l%d", i);
            snprintf(nn, sizeof nn, "leaf%d", i);
            add_t(g, names[i], 256, AF_TENSOR_INTERMEDIATE);
            add_n(g, nn, "Op", "r", NULL, names[i]);
            leaves[i] = names[i];
        }
        add_t(g, "y", 256, AF_TENSOR_OUTPUT);
        const char *out = "y";
        af_node_desc_t d = {.name = "join",
                            .op = "Op",
                            .inputs = leaves,
                            .n_inputs = width,
                            .outputs = &out,
                            .n_outputs = 1};
        assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
        test_free(names);
        test_free(leaves);
    } else {
        uint64_t rng = 7;
        for (int l = 0; l < layers; l++)
            for (int j = 0; j < width; j++) {
                snprintf(tn, sizeof tn, "t%d_%d", l, j);
                snprintf(nn, sizeof nn, "n%d_%d", l, j);
                add_t(g, tn, 256, l == layers - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE);
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                snprintf(a, sizeof a, "t%d_%d", l - 1, (int)((rng >> 33) % (uint64_t)width));
                snprintf(b, sizeof b, "t%d_%d", l - 1, (int)((rng >> 45) % (uint64_t)width));
                add_n(g, nn, "Op", l ? a : "x", l ? b : NULL, tn);
            }
    }
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

static void test_executor_wide_graphs_run_each_node_once(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        af_graph_t *g = wide_graph(kind, kind ? 40 : 300, 6);
        af_plan_t *p = make_plan(g, AF_REUSE_STRICT, 0);
        uint64_t nodes = (uint64_t)af_graph_node_count(g);
        for (int threads = 2; threads <= 4; threads += 2) {
            af_executor_t *ex = make_exec(threads, "verify");
            af_session_t *s;
            af_error_t err;
            assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
            uint64_t t0, t1;
            af_executor_counters(ex, &t0, NULL);
            int rc = af_session_run_n(s, 40, NULL, NULL, &err);
            if (rc)
                fail_msg("kind %d, %d threads: %s", kind, threads, err.msg);
            af_executor_counters(ex, &t1, NULL);
            af_session_stats_t st;
            af_session_stats(s, &st);
            assert_int_equal(st.rounds, 40);
            assert_int_equal(st.failed_rounds, 0);
            assert_int_equal(st.corrupted_tensors, 0); /* no node ran before its inputs */
            assert_int_equal(t1 - t0, 40 * nodes);     /* every node once per round */
            af_session_destroy(s);
            af_executor_destroy(ex);
        }
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

/* ---- dynamic tensors and re-planning ----------------------------------------------------- */

static uint64_t dyn_bytes(void *user, int32_t t, uint64_t round)
{
    (void)user;
    return 1000 + 24 * (uint64_t)t + 8 * (round % 3); /* sizes vary over the warm-up rounds */
}

static void test_executor_replan_after_warmup(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    add_t(g, "x", 512, AF_TENSOR_INPUT);
    add_t(g, "d1", AF_BYTES_DYNAMIC, AF_TENSOR_INTERMEDIATE);
    add_t(g, "d2", AF_BYTES_DYNAMIC, AF_TENSOR_INTERMEDIATE);
    add_t(g, "s", 512, AF_TENSOR_INTERMEDIATE);
    add_t(g, "y", 512, AF_TENSOR_OUTPUT);
    add_n(g, "n1", "Op", "x", NULL, "d1");
    add_n(g, "n2", "Op", "d1", NULL, "d2");
    add_n(g, "n3", "Op", "d2", "x", "s");
    add_n(g, "n4", "Op", "s", "d1", "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    assert_int_equal(af_plan_report(p)->dynamic_tensors, 2);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 2;
    o.replan_after_warmup = 3;
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
    af_session_opts_t so = {0};
    so.loop = &loop;
    so.dynamic_bytes = dyn_bytes;
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
    /* pipelined: rounds are in flight while the swap happens */
    pipe_ctx_t c = {0};
    int submitted = 0;
    while (c.done < 24) {
        while (submitted < 24 && af_session_submit(s, NULL, NULL, on_round, &c, NULL) == 0)
            submitted++;
        uv_run(&loop, UV_RUN_ONCE);
    }
    assert_int_equal(c.failed, 0);
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.plan_swaps, 1);
    assert_int_equal(st.corrupted_tensors, 0);
    assert_true(st.dynamic_allocs >= 6); /* warm-up rounds used the dynamic region */
    const af_plan_t *np = af_session_plan(s);
    assert_ptr_not_equal(np, p);
    assert_int_equal(af_plan_report(np)->dynamic_tensors, 0);
    assert_int_equal(af_plan_verify(np, &err), 0);
    /* the re-planned arena holds the largest size seen in warm-up: warm-up is the first 3
     * rounds to complete, which with rounds in flight need not be rounds 0, 1 and 2, so the size
     * is one of those dyn_bytes hands out (round % 3 = 0, 1 or 2), never less than the smallest */
    int32_t d1 = af_graph_find_tensor(af_plan_graph(np), "d1");
    int64_t b1 = af_graph_tensor(af_plan_graph(np), d1)->bytes;
    assert_true(b1 >= (int64_t)dyn_bytes(NULL, d1, 0) && b1 <= (int64_t)dyn_bytes(NULL, d1, 2));
    assert_int_equal((b1 - (int64_t)dyn_bytes(NULL, d1, 0)) % 8, 0);
    uint64_t allocs_before = st.dynamic_allocs;
    assert_int_equal(af_session_run(s, NULL, NULL, &err), 0);
    af_session_stats(s, &st);
    assert_int_equal(st.dynamic_allocs, allocs_before); /* no dynamic tensor left */
    af_session_destroy(s);
    uv_run(&loop, UV_RUN_NOWAIT);
    af_executor_destroy(ex);
    assert_int_equal(uv_loop_close(&loop), 0);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* Dynamic tensors come from the workers' pool caches (executor/dynamic.c): after warm-up a round
 * allocates them without a lock, maps next to nothing, and every byte is checked by the verify
 * kernels. */
static void test_executor_dynamic_tensors_from_worker_caches(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    add_t(g, "x", 512, AF_TENSOR_INPUT);
    add_t(g, "d1", AF_BYTES_DYNAMIC, AF_TENSOR_INTERMEDIATE);
    add_t(g, "d2", AF_BYTES_DYNAMIC, AF_TENSOR_INTERMEDIATE);
    add_t(g, "y", 512, AF_TENSOR_OUTPUT);
    add_n(g, "n1", "Op", "x", NULL, "d1");
    add_n(g, "n2", "Op", "d1", NULL, "d2");
    add_n(g, "n3", "Op", "d2", "d1", "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 2;
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
    af_session_opts_t so = {0};
    so.dynamic_bytes = dyn_bytes;
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
    for (int r = 0; r < 50; r++) /* warm-up: the caches fill */
        assert_int_equal(af_session_run(s, NULL, NULL, &err), 0);
    af_pool_stats_t a, b;
    af_pool_stats(af_executor_pool(ex), &a);
    for (int r = 0; r < 100; r++)
        assert_int_equal(af_session_run(s, NULL, NULL, &err), 0);
    af_pool_stats(af_executor_pool(ex), &b);
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.corrupted_tensors, 0);
    assert_true(st.dynamic_allocs >= 2 * 150);
    /* 200 dynamic allocations in the timed rounds, served by the workers' caches */
    assert_true(b.fast_allocs - a.fast_allocs >= 150);
    /* Blocks drift between the two caches (a round is freed by the worker that completes it),
     * so a cache may map a chunk now and then until both hold their share: bounded, never one
     * per round (it was 0-1 in 100 rounds on an idle machine, up to 1 under load). */
    assert_true(b.os_maps - a.os_maps <= 8);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* ---- allocation counting and OOM -------------------------------------------------------- */

static long heap_calls;
static long fail_at = -1;

static void *count_malloc(size_t n)
{
    if (fail_at >= 0 && __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED) == fail_at)
        return NULL;
    if (fail_at < 0)
        __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED);
    return malloc(n);
}
static void *count_calloc(size_t c, size_t n)
{
    if (fail_at >= 0 && __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED) == fail_at)
        return NULL;
    if (fail_at < 0)
        __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED);
    return calloc(c, n);
}
static void *count_realloc(void *p, size_t n)
{
    if (fail_at >= 0 && __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED) == fail_at)
        return NULL;
    if (fail_at < 0)
        __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED);
    return realloc(p, n);
}

static void test_executor_no_heap_calls_per_round(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(4242, 30);
    assert_non_null(g);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec(2, "verify");
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, NULL, &s, NULL), 0);
    for (int i = 0; i < 5; i++) /* warm-up: deques and pool caches reach their size */
        assert_int_equal(af_session_run(s, NULL, NULL, NULL), 0);
    af_session_stats_t st0, st1;
    af_session_stats(s, &st0);
    heap_calls = 0;
    fail_at = -1;
    af_replace_allocator(count_malloc, count_realloc, count_calloc, NULL);
    for (int i = 0; i < 100; i++)
        assert_int_equal(af_session_run(s, NULL, NULL, NULL), 0);
    long calls = __atomic_load_n(&heap_calls, __ATOMIC_RELAXED);
    af_reset_allocator();
    af_session_stats(s, &st1);
    assert_int_equal(calls, 0);
    assert_int_equal(st1.pool_os_calls - st0.pool_os_calls, 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_executor_oom_paths_clean_up(void **state)
{
    (void)state;
    af_graph_t *g = chain_graph();
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    int succeeded = 0;
    for (long n = 0; n < 400 && !succeeded; n++) {
        heap_calls = 0;
        fail_at = n;
        af_replace_allocator(count_malloc, count_realloc, count_calloc, NULL);
        af_executor_opts_t o;
        af_executor_opts_init(&o);
        o.threads = 1;
        af_executor_t *ex = NULL;
        af_session_t *s = NULL;
        int rc = af_executor_create(&o, &ex, NULL);
        if (rc == 0)
            rc = af_session_create(ex, p, NULL, &s, NULL);
        if (rc == 0)
            rc = af_session_run(s, NULL, NULL, NULL);
        fail_at = -1;
        af_session_destroy(s);
        af_executor_destroy(ex);
        af_reset_allocator();
        if (rc == 0)
            succeeded = 1;
        else
            assert_true(rc == AF_ENOMEM || rc < 0);
    }
    assert_true(succeeded);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_executor_opts_table(void **state)
{
    (void)state;
    af_executor_opts_t o;
    af_executor_opts_init(&o); /* the defaults the table's rows spell, as documented */
    assert_true(o.threads == 0 && o.max_inflight == 4 && o.replan_after_warmup == 0);
    assert_true(o.dynamic_default_bytes == 4096 && o.history == 0 && o.verify == -1);
    assert_string_equal(o.kernels, "verify");
    assert_null(o.pool);
    int nkeys = 0;
    for (const char *const *k = af_executor_opts_keys(); *k; k++)
        nkeys++;
    assert_int_equal(nkeys, 9);
    assert_int_equal(o.inline_rounds, -1); /* auto */
    af_error_t err;
    assert_int_equal(af_executor_opts_set(&o, "dynamic_default_bytes", "1GiB", &err), 0);
    assert_int_equal(o.dynamic_default_bytes, 1u << 30); /* the one size grammar: G was refused */
    assert_int_equal(af_executor_opts_set(&o, "threads", "3", &err), 0);
    assert_int_equal(o.threads, 3);
    assert_int_equal(af_executor_opts_set(&o, "kernels", "empty", &err), 0);
    assert_string_equal(o.kernels, "empty");
    assert_int_equal(af_executor_opts_set(&o, "dynamic_default_bytes", "8K", &err), 0);
    assert_int_equal(o.dynamic_default_bytes, 8192);
    assert_int_equal(af_executor_opts_set(&o, "verify", "true", &err), 0);
    assert_int_equal(o.verify, 1);
    assert_int_equal(af_executor_opts_set(&o, "history", "on", &err), 0);
    assert_int_equal(o.history, 1);
    assert_int_equal(af_executor_opts_set(&o, "threads", "-1", &err), AF_EINVAL);
    assert_non_null(strstr(err.msg, "threads"));
    assert_int_equal(af_executor_opts_set(&o, "kernels", "fast", &err), AF_EINVAL);
    assert_int_equal(af_executor_opts_set(&o, "nope", "1", &err), AF_EINVAL);
    assert_int_equal(af_executor_opts_set(&o, "intra_op_threads", "2", &err), 0);
    assert_int_equal(o.intra_op_threads, 2);
    assert_int_equal(af_executor_opts_set(&o, "intra_op_threads", "0", &err), 0);
    assert_int_equal(o.intra_op_threads, 0); /* 0 = chosen per graph */
    assert_int_equal(af_executor_opts_set(&o, "intra_op_threads", "auto", &err), AF_EINVAL);
    int n = 0;
    for (const char *const *k = af_executor_opts_keys(); *k; k++)
        n++;
    assert_int_equal(n, 9);
    assert_int_equal(af_executor_opts_set(&o, "inline_rounds", "false", &err), 0);
    assert_int_equal(o.inline_rounds, 0);
    assert_int_equal(af_executor_opts_set(&o, "inline_rounds", "auto", &err), 0);
    assert_int_equal(o.inline_rounds, -1);
    assert_int_equal(af_executor_opts_set(&o, "inline_rounds", "sometimes", &err), AF_EINVAL);
}

static void test_executor_critical_path(void **state)
{
    (void)state;
    af_graph_t *g = reuse_graph();
    af_plan_t *fence = make_plan(g, AF_REUSE_FENCE, 0);
    af_plan_t *strict = make_plan(g, AF_REUSE_STRICT, 0);
    double cf = 0, cs = 0;
    int32_t nf = 0, ns = 0;
    assert_int_equal(af_executor_critical_path(fence, &cf, &nf), 0);
    assert_int_equal(af_executor_critical_path(strict, &cs, &ns), 0);
    /* strict has only data edges: longest chain is 2 nodes (cost 1 each: no costs given) */
    assert_int_equal(ns, 2);
    assert_true(cs == 2.0);
    /* fence adds a reuse edge between the branches: the path gets longer */
    assert_true(nf > ns);
    assert_true(af_plan_arena_bytes(fence) < af_plan_arena_bytes(strict));
    af_plan_destroy(fence);
    af_plan_destroy(strict);
    af_graph_destroy(g);
}

/* ---- inline rounds ------------------------------------------------------------------------ */

/* The contexts the kernels of a session ran in (a->worker), seen by its observe hook. */
typedef struct seen_ctx {
    atomic_int lo, hi;
} seen_ctx_t;

static int observe_ctx(void *user, const af_kernel_args_t *a)
{
    seen_ctx_t *c = user;
    int v = atomic_load(&c->lo);
    while (a->worker < v && !atomic_compare_exchange_weak(&c->lo, &v, a->worker))
        ;
    v = atomic_load(&c->hi);
    while (a->worker > v && !atomic_compare_exchange_weak(&c->hi, &v, a->worker))
        ;
    return 0;
}

/* Runs `rounds` rounds of p (from `callers` threads at once) with the observe hook; *seen gets
 * the lowest and highest context of any kernel call. Every round must be clean. */
static void run_seen(af_executor_t *ex, const af_plan_t *p, int callers, int rounds,
                     seen_ctx_t *seen)
{
    atomic_init(&seen->lo, 1 << 30);
    atomic_init(&seen->hi, -1);
    af_session_opts_t so = {.observe = observe_ctx, .observe_user = seen};
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
    uv_thread_t th[8];
    mt_ctx_t c[8];
    for (int i = 0; i < callers; i++) {
        c[i] = (mt_ctx_t){s, rounds, 0};
        assert_int_equal(uv_thread_create(&th[i], mt_main, &c[i]), 0);
    }
    for (int i = 0; i < callers; i++) {
        uv_thread_join(&th[i]);
        assert_int_equal(c[i].failed, 0);
    }
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.rounds, (uint64_t)callers * (uint64_t)rounds);
    assert_int_equal(st.failed_rounds, 0);
    assert_int_equal(st.corrupted_tensors, 0);
    af_session_destroy(s);
}

/* inline_rounds = 1: af_session_run's rounds run on the caller's thread, in the contexts after
 * the workers' (ids threads + slot), every node once and in order (the verify kernels check
 * every input against its producer); 0 and auto with the verify set: on the workers. */
static void test_executor_inline_rounds_on_caller(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(91, 40);
    assert_non_null(g);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    int32_t nodes = af_graph_node_count(g);
    seen_ctx_t seen;
    af_executor_t *ex = make_exec_inline(2, "verify", 1);
    uint64_t t0 = 0, t1 = 0, steals = 0;
    af_executor_counters(ex, &t0, NULL);
    run_seen(ex, p, 1, 30, &seen);
    af_executor_counters(ex, &t1, &steals);
    assert_true(atomic_load(&seen.lo) >= 2 && atomic_load(&seen.hi) < 2 + 4);
    assert_int_equal(t1 - t0, 30u * (uint64_t)nodes); /* inline nodes are counted as tasks */
    assert_int_equal(steals, 0);
    /* callers beyond `threads` inline rounds at once go to the workers: all still clean */
    run_seen(ex, p, 6, 20, &seen);
    assert_true(atomic_load(&seen.hi) < 2 + 4);
    af_executor_destroy(ex);
    for (int mode = -1; mode <= 0; mode++) {
        ex = make_exec_inline(2, "verify", mode);
        run_seen(ex, p, 1, 10, &seen);
        assert_true(atomic_load(&seen.lo) >= 0 && atomic_load(&seen.hi) < 2);
        af_executor_destroy(ex);
    }
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static int noop_kernel(const af_kernel_args_t *a)
{
    (void)a;
    return 0;
}

/* A session whose plan has a registered kernel never runs inline (the kernel may keep state per
 * worker), even with inline_rounds = 1. */
static void test_executor_inline_rounds_not_with_registered(void **state)
{
    (void)state;
    af_graph_t *g = chain_graph();
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec_inline(2, "verify", 1);
    assert_int_equal(af_executor_register_kernel(ex, "Op", noop_kernel, NULL), 0);
    seen_ctx_t seen;
    run_seen(ex, p, 1, 10, &seen);
    assert_true(atomic_load(&seen.hi) < 2);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* auto with real kernels: a small plan runs inline and answers what the workers answer, byte
 * for byte; rounds from several threads at once too. */
static void test_executor_inline_rounds_real_same_answer(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t s43[] = {4, 3}, s32[] = {3, 2}, s42[] = {4, 2};
    add_shaped(g, "x", 2, s43, AF_TENSOR_INPUT);
    add_shaped(g, "W", 2, s32, AF_TENSOR_INPUT);
    add_shaped(g, "h", 2, s42, AF_TENSOR_INTERMEDIATE);
    add_shaped(g, "r", 2, s42, AF_TENSOR_INTERMEDIATE);
    add_shaped(g, "y", 2, s42, AF_TENSOR_OUTPUT);
    add_n(g, "mm", "MatMul", "x", "W", "h");
    add_n(g, "relu", "Relu", "h", NULL, "r");
    add_n(g, "sm", "Softmax", "r", NULL, "y");
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    float x[12], W[6] = {1, 0, 0.5f, 1, -1, 2}, y[2][8];
    for (int i = 0; i < 12; i++)
        x[i] = (float)(i % 5) - 2.0f;
    for (int mode = 0; mode <= 1; mode++) {
        af_executor_t *ex = make_exec_inline(2, "real", mode ? -1 : 0);
        seen_ctx_t seen = {0};
        atomic_init(&seen.lo, 1 << 30);
        atomic_init(&seen.hi, -1);
        af_session_opts_t so = {.observe = observe_ctx, .observe_user = &seen};
        af_session_t *s;
        af_error_t err;
        assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
        af_buffer_t in[2], out[1] = {{y[mode], sizeof y[mode]}};
        for (int32_t i = 0; i < 2; i++)
            in[i] = strcmp(af_graph_tensor(g, af_session_input_tensor(s, i))->name, "x") == 0
                        ? (af_buffer_t){x, sizeof x}
                        : (af_buffer_t){W, sizeof W};
        for (int i = 0; i < 20; i++)
            assert_int_equal(af_session_run(s, in, out, &err), 0);
        if (mode)
            assert_true(atomic_load(&seen.lo) >= 2); /* auto: small and real, inline */
        else
            assert_true(atomic_load(&seen.hi) < 2);
        af_session_destroy(s);
        if (mode)
            run_seen(ex, p, 4, 25, &seen); /* concurrent inline rounds: clean */
        af_executor_destroy(ex);
    }
    assert_memory_equal(y[0], y[1], sizeof y[0]);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* ---- batches of a chain ------------------------------------------------------------------ */

/* Kernels running at once, and the most seen at any time (slow_chain_kernel). */
static atomic_int chain_running, chain_most;

static int slow_chain_kernel(const af_kernel_args_t *a)
{
    (void)a;
    int now = atomic_fetch_add(&chain_running, 1) + 1, v = atomic_load(&chain_most);
    while (now > v && !atomic_compare_exchange_weak(&chain_most, &v, now))
        ;
    uv_sleep(3);
    atomic_fetch_sub(&chain_running, 1);
    return 0;
}

/* x -> c0 -> ... -> c{n-1} -> y, every node of modelled cost `cost`, op "Slow". */
static af_graph_t *costed_chain(int n, double cost)
{
    af_graph_t *g;
    char tn[16], prev[16] = "x", nn[16];
    assert_int_equal(af_graph_create(&g), 0);
    add_t(g, "x", 256, AF_TENSOR_INPUT);
    for (int i = 0; i < n; i++) {
        snprintf(tn, sizeof tn, "t%d", i);
        snprintf(nn, sizeof nn, "c%d", i);
        add_t(g, tn, 256, i == n - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE);
        const char *in = prev, *out = tn;
        af_node_desc_t d = {.name = nn,
                            .op = "Slow",
                            .inputs = &in,
                            .n_inputs = 1,
                            .outputs = &out,
                            .n_outputs = 1};
        d.cost = cost;
        assert_int_equal(af_graph_add_node(g, &d, NULL, NULL), 0);
        snprintf(prev, sizeof prev, "%s", tn);
    }
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

/* A batch of a small chain runs on one worker, round after round (the worker that finished a
 * round runs the next one's first node itself: it is never queued, so no other worker is woken
 * or can steal it); a chain of costly nodes keeps its rounds overlapping on both workers. */
static void test_executor_run_n_chain_on_one_worker(void **state)
{
    (void)state;
    af_graph_t *g = chain_graph();
    af_plan_t *p = make_plan(g, AF_REUSE_FENCE, 0);
    af_executor_t *ex = make_exec(2, "verify");
    seen_ctx_t seen;
    af_session_opts_t so = {.observe = observe_ctx, .observe_user = &seen};
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
    uint64_t st0, st1;
    for (int k = 0; k < 5; k++) {
        atomic_store(&seen.lo, 1 << 30);
        atomic_store(&seen.hi, -1);
        af_executor_counters(ex, NULL, &st0);
        assert_int_equal(af_session_run_n(s, 200, NULL, NULL, &err), 0);
        af_executor_counters(ex, NULL, &st1);
        assert_true(st1 - st0 <= 1); /* at most the first round's root, taken by the other */
        assert_int_equal(atomic_load(&seen.lo), atomic_load(&seen.hi)); /* one worker ran all */
    }
    af_session_stats_t st;
    af_session_stats(s, &st);
    assert_int_equal(st.rounds, 1000);
    assert_int_equal(st.corrupted_tensors, 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);

    int32_t cost_of[2] = {1, 1000000}; /* a round of 3 x 1 or 3 x 10^6: small, or not */
    for (int c = 0; c < 2; c++) {
        g = costed_chain(3, cost_of[c]);
        p = make_plan(g, AF_REUSE_FENCE, 0);
        ex = make_exec(2, "verify");
        assert_int_equal(af_executor_register_kernel(ex, "Slow", slow_chain_kernel, NULL), 0);
        assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
        atomic_store(&chain_most, 0);
        assert_int_equal(af_session_run_n(s, 16, NULL, NULL, &err), 0);
        if (c == 0)
            assert_int_equal(atomic_load(&chain_most), 1);
        else
            assert_int_equal(atomic_load(&chain_most), 2);
        af_session_destroy(s);
        af_executor_destroy(ex);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

/* Per round of a session (ids below 256): the worker of its first node, and how many of its
 * nodes ran in the plan's order so far (-1 once one ran out of it or on another worker). */
typedef struct whole_seen {
    const int32_t *order;
    int32_t worker[256];
    atomic_int next[256];
} whole_seen_t;

static int observe_whole(void *user, const af_kernel_args_t *a)
{
    whole_seen_t *c = user;
    int k = (int)(a->round % 256), i = atomic_load(&c->next[k]);
    if (i < 0)
        return 0;
    if (i == 0)
        c->worker[k] = a->worker;
    atomic_store(&c->next[k], c->order[i] == a->node && c->worker[k] == a->worker ? i + 1 : -1);
    return 0;
}

/* A batch of a small plan with parallel branches (a layered graph) runs each round as one task:
 * all its nodes on one worker, in the plan's order (no counter, no deque per node), while the
 * rounds still overlap on the workers. */
static void test_executor_run_n_small_rounds_whole(void **state)
{
    (void)state;
    af_graph_t *g = wide_graph(1, 40, 6);
    af_plan_t *p = make_plan(g, AF_REUSE_STRICT, 0);
    int32_t nodes = af_graph_node_count(g);
    for (int threads = 1; threads <= 2; threads++) {
        af_executor_t *ex = make_exec(threads, "verify");
        static whole_seen_t seen;
        seen.order = af_plan_order(p);
        for (int k = 0; k < 256; k++)
            atomic_init(&seen.next[k], 0);
        af_session_opts_t so = {.observe = observe_whole, .observe_user = &seen};
        af_session_t *s;
        af_error_t err;
        assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
        int rc = af_session_run_n(s, 200, NULL, NULL, &err);
        if (rc)
            fail_msg("%d threads: %s", threads, err.msg);
        for (int k = 0; k < 200; k++)
            assert_int_equal(atomic_load(&seen.next[k]), nodes);
        af_session_stats_t st;
        af_session_stats(s, &st);
        assert_int_equal(st.rounds, 200);
        assert_int_equal(st.nodes_run, 200 * (uint64_t)nodes);
        assert_int_equal(st.corrupted_tensors, 0);
        af_session_destroy(s);
        af_executor_destroy(ex);
    }
    af_plan_destroy(p);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_executor_chain_runs_clean),
        cmocka_unit_test(test_executor_overlapped_offsets_caught),
        cmocka_unit_test(test_executor_reuse_edges_required),
        cmocka_unit_test(test_executor_concurrent_callers),
        cmocka_unit_test(test_executor_real_kernels_mlp),
        cmocka_unit_test(test_executor_constant_weights),
        cmocka_unit_test(test_executor_real_conv_pool),
        cmocka_unit_test(test_executor_user_kernel_and_missing_op),
        cmocka_unit_test(test_executor_kernel_error_fails_round),
        cmocka_unit_test(test_executor_run_n_rounds_use_their_buffers),
        cmocka_unit_test(test_executor_run_n_random_dags_verified),
        cmocka_unit_test(test_executor_wide_graphs_run_each_node_once),
        cmocka_unit_test(test_executor_run_n_chain_on_one_worker),
        cmocka_unit_test(test_executor_run_n_small_rounds_whole),
        cmocka_unit_test(test_executor_replan_after_warmup),
        cmocka_unit_test(test_executor_dynamic_tensors_from_worker_caches),
        cmocka_unit_test(test_executor_no_heap_calls_per_round),
        cmocka_unit_test(test_executor_oom_paths_clean_up),
        cmocka_unit_test(test_executor_opts_table),
        cmocka_unit_test(test_executor_critical_path),
        cmocka_unit_test(test_executor_random_dags_verified),
        cmocka_unit_test(test_executor_shared_mode_verified),
        cmocka_unit_test(test_executor_inline_rounds_on_caller),
        cmocka_unit_test(test_executor_inline_rounds_not_with_registered),
        cmocka_unit_test(test_executor_inline_rounds_real_same_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
