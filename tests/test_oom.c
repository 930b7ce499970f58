/*
 * Out-of-memory injection (issue #10, item 3) through the allocator hooks (af_replace_allocator):
 * for every constructor below, allocation n fails, for n = 0, 1, 2, ... until the call runs to
 * completion without reaching allocation n. Every failing call must
 *   - return AF_ENOMEM (never another code, never a crash: ASan/UBSan builds check the rest),
 *   - leave *out untouched (it holds a sentinel that must survive: no half-built object),
 *   - free everything it allocated (allocations outstanding through the hooks are counted; LSan
 *     in the ASan build sees the rest),
 * and the clean run at the end must succeed (plans are then verified with af_plan_verify()).
 * A call that absorbs a failure by design and succeeds anyway is allowed (its result is checked
 * the same way, and it must not leak); those points are counted as "absorbed". Every test also
 * checks that the allocations outstanding at its end equal those at its start.
 * Each test prints how many injection points ran per constructor.
 *
 * Covered: graph construction through the API and the MiniMalloc CSV reader (JSON file loading
 * is covered the same way in tests/test_graph_json.c and ONNX loading in tests/test_onnx.c),
 * af_plan_create with the default options and with every placer (and the shared mode and safe
 * mode), af_pool_create / af_pool_cache_create, af_executor_create, and
 * af_session_create followed by a first round.
 *
 * The hooks are installed once for the whole program (so every pointer is allocated and freed by
 * the same functions) and count atomically, because executor workers allocate on their threads.
 * Objects the call under test needs (graph, plan, executor) are made beforehand with no failure
 * armed; the leak check compares the outstanding count before and after each attempt.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/executor.h"
#include "arenaflow/graph.h"
#include "arenaflow/pack.h"
#include "arenaflow/plan.h"
#include "arenaflow/pool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- counting, failing allocator hooks ---------------------------------------------------- */

static atomic_long fail_at = -1; /* index of the allocation to fail; -1: none */
static atomic_long n_allocs;     /* allocations attempted since the last arm() */
static atomic_long live_allocs;  /* allocations outstanding through the hooks */

static int should_fail(void)
{
    return atomic_fetch_add(&n_allocs, 1) == atomic_load(&fail_at);
}

static void *oom_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = malloc(n);
    if (p)
        atomic_fetch_add(&live_allocs, 1);
    return p;
}

static void *oom_calloc(size_t c, size_t n)
{
    if (should_fail())
        return NULL;
    void *p = calloc(c, n);
    if (p)
        atomic_fetch_add(&live_allocs, 1);
    return p;
}

static void *oom_realloc(void *old, size_t n)
{
    if (should_fail())
        return NULL;
    void *p = realloc(old, n);
    if (p && !old)
        atomic_fetch_add(&live_allocs, 1);
    return p;
}

static void oom_free(void *p)
{
    if (p)
        atomic_fetch_sub(&live_allocs, 1);
    free(p);
}

/* ---- the injection loop ------------------------------------------------------------------- */

/* Value every out-pointer holds before a call: a failing call must leave it there. */
static char sentinel_storage;
#define SENTINEL ((void *)&sentinel_storage)

/* One attempt: returns the code of the call under test. It must destroy what it made. */
typedef int (*oom_op_fn)(void *ctx);

#define OOM_MAX_POINTS 2000000L

/*
 * Runs op with allocation n failing, n = 0, 1, ..., until a run does not reach allocation n.
 * Returns the number of injection points (runs where the failure was reached). A call may also
 * absorb a failure by design (a tie-breaker or a cache skipped, a retried push) and succeed: then
 * its result was still checked by op (plans are verified) and nothing may leak; such points are
 * counted and printed as "absorbed". min_points guards against a path that stops allocating
 * (the test would then check nothing).
 */
static long run_oom(const char *label, oom_op_fn op, void *ctx, long min_points)
{
    long n, absorbed = 0;
    for (n = 0; n < OOM_MAX_POINTS; n++) {
        long live0 = atomic_load(&live_allocs);
        atomic_store(&n_allocs, 0);
        atomic_store(&fail_at, n);
        int rc = op(ctx);
        atomic_store(&fail_at, -1);
        long leaked = atomic_load(&live_allocs) - live0;
        if (leaked != 0)
            print_error("%s: allocation %ld failed -> %s, %ld allocations leaked\n", label, n,
                        af_err_name(rc), leaked);
        assert_int_equal(leaked, 0);
        if (atomic_load(&n_allocs) <= n) { /* never reached the failure: a clean run */
            if (rc != 0)
                print_error("%s: clean run returned %s\n", label, af_err_name(rc));
            assert_int_equal(rc, 0);
            break;
        }
        if (rc == 0) {
            absorbed++;
            continue;
        }
        if (rc != AF_ENOMEM)
            print_error("%s: allocation %ld failed -> %s, expected AF_ENOMEM\n", label, n,
                        af_err_name(rc));
        assert_int_equal(rc, AF_ENOMEM);
    }
    assert_true(n < OOM_MAX_POINTS);
    print_message("oom %-44s %6ld injection points (%ld absorbed), no leak\n", label, n, absorbed);
    assert_true(n >= min_points);
    return n;
}

/* Checks the out-pointer rule after an attempt (a separate statement from the call: argument
 * evaluation order is unspecified): set on success, untouched on failure. */
static int check_out(int rc, void *out)
{
    if (rc != 0 && out != SENTINEL) {
        print_error("failed call (%s) changed *out\n", af_err_name(rc));
        return 12345; /* not AF_ENOMEM: run_oom reports it */
    }
    if (rc == 0 && (out == SENTINEL || out == NULL))
        return 12346;
    return rc;
}

static char *read_source_file(const char *rel, size_t *len)
{
    const char *src = getenv("AF_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", src && src[0] ? src : ".", rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Loads an example graph with no failure armed. */
static af_graph_t *load_example(const char *rel)
{
    size_t len;
    char *text = read_source_file(rel, &len);
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_graph_parse_json(text, len, &g, &err);
    if (rc)
        print_error("%s: %s\n", rel, err.msg);
    assert_int_equal(rc, 0);
    free(text);
    return g;
}

/* ---- graph construction and the CSV reader ------------------------------------------------ */

static int op_graph_build(void *ctx)
{
    (void)ctx;
    af_graph_t *g = SENTINEL;
    int rc = af_graph_create(&g);
    rc = check_out(rc, g);
    if (rc)
        return rc;
    af_error_t err;
    static const int64_t shape[] = {2, 3, 4};
    const af_tensor_desc_t tensors[] = {
        {.name = "x",
         .bytes = AF_BYTES_FROM_SHAPE,
         .dtype = AF_DTYPE_F32,
         .rank = 3,
         .shape = shape,
         .kind = AF_TENSOR_INPUT},
        {.name = "a", .bytes = 4096, .rank = -1},
        {.name = "v", .bytes = 1024, .rank = -1, .alias_of = "a", .alias_offset = 1024},
        {.name = "b", .bytes = AF_BYTES_DYNAMIC, .rank = -1},
        {.name = "y", .bytes = 96, .rank = -1, .kind = AF_TENSOR_OUTPUT},
    };
    for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]) && rc == 0; i++)
        rc = af_graph_add_tensor(g, &tensors[i], NULL, &err);
    const char *in_x[] = {"x"}, *out_a[] = {"a"}, *in_v[] = {"v"}, *out_b[] = {"b"};
    const char *in_ab[] = {"a", "b"}, *out_y[] = {"y"};
    const af_inplace_t ip = {0, 0};
    const af_node_desc_t nodes[] = {
        {.name = "make",
         .op = "Conv",
         .inputs = in_x,
         .n_inputs = 1,
         .outputs = out_a,
         .n_outputs = 1,
         .cost = 10},
        {.name = "grow",
         .op = "Relu",
         .inputs = in_v,
         .n_inputs = 1,
         .outputs = out_b,
         .n_outputs = 1,
         .inplace = &ip,
         .n_inplace = 1},
        {.op = "Add", .inputs = in_ab, .n_inputs = 2, .outputs = out_y, .n_outputs = 1},
    };
    int32_t id = -1;
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]) && rc == 0; i++)
        rc = af_graph_add_node(g, &nodes[i], &id, &err);
    static const int64_t ints[] = {1, 2, 3};
    const af_attr_t attr = {.name = "pads", .type = AF_ATTR_INTS, .ints = ints, .n = 3};
    if (rc == 0)
        rc = af_graph_node_set_attr(g, id, &attr, &err);
    if (rc == 0)
        rc = af_graph_set_name(g, "built");
    if (rc == 0)
        rc = af_graph_finalize(g, &err);
    af_graph_destroy(g);
    return rc;
}

static int op_csv_parse(void *ctx)
{
    const char *text = ctx;
    af_interval_t *iv = SENTINEL;
    char **ids = SENTINEL;
    size_t n = 0;
    af_error_t err;
    int rc = af_intervals_parse_csv(text, strlen(text), &iv, &ids, &n, &err);
    if (rc == 0 && n != 40)
        rc = 12347;
    if (rc == 0) {
        af_free(iv);
        af_free(ids);
    } else if (iv != SENTINEL || ids != SENTINEL) {
        return 12345;
    }
    return rc;
}

static void test_oom_graph_build_and_csv(void **state)
{
    (void)state;
    run_oom("af_graph_create+add+finalize", op_graph_build, NULL, 10);
    char csv[4096];
    int len = snprintf(csv, sizeof(csv), "id,lower,upper,size\n");
    for (int i = 0; i < 40; i++)
        len += snprintf(csv + len, sizeof(csv) - (size_t)len, "%d,%d,%d,%d\n", i, i % 7,
                        i % 7 + 1 + i % 5, 64 * (i % 9 + 1));
    run_oom("af_intervals_parse_csv (40 rows)", op_csv_parse, csv, 2);
}

/* ---- planning ----------------------------------------------------------------------------- */

typedef struct plan_ctx {
    const af_graph_t *g;
    af_plan_opts_t opts;
} plan_ctx_t;

static int op_plan(void *ctx)
{
    plan_ctx_t *c = ctx;
    af_plan_t *p = SENTINEL;
    af_error_t err;
    int rc = af_plan_create(c->g, &c->opts, &p, &err);
    rc = check_out(rc, p);
    if (rc == 0) {
        rc = af_plan_verify(p, &err); /* may itself run out of memory: then AF_ENOMEM */
        af_plan_destroy(p);
    }
    return rc;
}

static void test_oom_plan_default_options(void **state)
{
    (void)state;
    static const char *const examples[] = {"examples/diamond.json", "examples/mlp.json",
                                           "examples/seed2_hotel.json", "examples/default.json"};
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        plan_ctx_t c;
        af_graph_t *g = load_example(examples[i]);
        c.g = g;
        af_plan_opts_init(&c.opts);
        char label[128];
        snprintf(label, sizeof(label), "af_plan_create default %s", examples[i] + 9);
        run_oom(label, op_plan, &c, 10);
        af_graph_destroy(g);
    }
}

static void test_oom_plan_each_placer(void **state)
{
    (void)state;
    static const char *const examples[] = {"examples/diamond.json", "examples/mlp.json"};
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        af_graph_t *g = load_example(examples[i]);
        char label[128];
        for (const char *const *pl = af_place_names(); *pl; pl++) {
            plan_ctx_t c;
            c.g = g;
            af_plan_opts_init(&c.opts);
            c.opts.placer = *pl;
            c.opts.time_limit_s = 0.2; /* search: small graphs close at the lower bound */
            snprintf(label, sizeof(label), "af_plan_create placer=%s %s", *pl, examples[i] + 9);
            run_oom(label, op_plan, &c, 10);
        }
        plan_ctx_t c;
        c.g = g;
        af_plan_opts_init(&c.opts);
        c.opts.mode = AF_MODE_SHARED;
        snprintf(label, sizeof(label), "af_plan_create mode=shared %s", examples[i] + 9);
        run_oom(label, op_plan, &c, 10);
        af_plan_opts_init(&c.opts);
        c.opts.safe_mode = 1;
        snprintf(label, sizeof(label), "af_plan_create safe_mode %s", examples[i] + 9);
        run_oom(label, op_plan, &c, 10);
        af_graph_destroy(g);
    }
}

/* Operator fusion (fuse = on): the fused graph, its plan and the unfused figure. */
static void test_oom_plan_fused(void **state)
{
    (void)state;
    static const char *const examples[] = {"examples/mlp.json", "examples/default.json"};
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        plan_ctx_t c;
        af_graph_t *g = load_example(examples[i]);
        c.g = g;
        af_plan_opts_init(&c.opts);
        c.opts.fuse = AF_FUSE_ON;
        char label[128];
        snprintf(label, sizeof(label), "af_plan_create fuse=on %s", examples[i] + 9);
        run_oom(label, op_plan, &c, 10);
        af_graph_destroy(g);
    }
}

/* ---- pool --------------------------------------------------------------------------------- */

static int op_pool(void *ctx)
{
    const af_pool_opts_t *o = ctx;
    af_pool_t *pool = SENTINEL;
    af_error_t err;
    int rc = af_pool_create(o, &pool, &err);
    rc = check_out(rc, pool);
    if (rc)
        return rc;
    af_pool_cache_t *cache = SENTINEL;
    rc = af_pool_cache_create(pool, &cache);
    rc = check_out(rc, cache);
    void *a = NULL;
    if (rc == 0) {
        /* the first block maps a chunk: its metadata may allocate too */
        rc = af_pool_cache_alloc(cache, 3000, &a);
        if (rc == 0 && af_pool_cache_free(cache, a) != 0)
            rc = 12348;
        af_pool_cache_destroy(cache);
    }
    af_pool_destroy(pool);
    return rc;
}

static void test_oom_pool_create(void **state)
{
    (void)state;
    af_pool_opts_t o;
    af_pool_opts_init(&o);
    run_oom("af_pool_create+cache default ladder", op_pool, &o, 1);
    af_pool_opts_init(&o);
    o.ladder = AF_POOL_LADDER_SEED;
    run_oom("af_pool_create+cache seed ladder", op_pool, &o, 1);
    static const uint64_t classes[] = {256, 1024, 65536};
    af_pool_opts_init(&o);
    o.ladder = AF_POOL_LADDER_CUSTOM;
    o.classes = classes;
    o.nclasses = 3;
    run_oom("af_pool_create+cache custom", op_pool, &o, 1);
}

/* ---- executor and session ------------------------------------------------------------------ */

typedef struct exec_ctx {
    af_executor_opts_t opts;
    af_executor_t *ex;
    const af_plan_t *plan;
    int run_round;
} exec_ctx_t;

static int op_executor(void *ctx)
{
    exec_ctx_t *c = ctx;
    af_executor_t *ex = SENTINEL;
    af_error_t err;
    int rc = af_executor_create(&c->opts, &ex, &err);
    rc = check_out(rc, ex);
    if (rc == 0)
        af_executor_destroy(ex);
    return rc;
}

static int op_session(void *ctx)
{
    exec_ctx_t *c = ctx;
    af_session_t *s = SENTINEL;
    af_error_t err;
    int rc = af_session_create(c->ex, c->plan, NULL, &s, &err);
    rc = check_out(rc, s);
    if (rc)
        return rc;
    if (c->run_round) {
        rc = af_session_run(s, NULL, NULL, &err);
        if (rc == AF_ENOMEM) {
            /* the session must stay usable: the next round, with memory, succeeds */
            long armed = atomic_exchange(&fail_at, -1);
            int again = af_session_run(s, NULL, NULL, &err);
            atomic_store(&fail_at, armed);
            if (again != 0) {
                print_error("round after a failed one: %s (%s)\n", af_err_name(again), err.msg);
                rc = 12349;
            }
        }
    }
    af_session_destroy(s);
    return rc;
}

static void test_oom_executor_create(void **state)
{
    (void)state;
    exec_ctx_t c;
    memset(&c, 0, sizeof(c));
    af_executor_opts_init(&c.opts);
    c.opts.threads = 2;
    run_oom("af_executor_create threads=2", op_executor, &c, 1);
    af_executor_opts_init(&c.opts);
    c.opts.threads = 1;
    c.opts.kernels = "real";
    c.opts.history = 1;
    run_oom("af_executor_create real kernels, history", op_executor, &c, 1);
}

static void test_oom_session_create(void **state)
{
    (void)state;
    static const char *const examples[] = {"examples/diamond.json", "examples/mlp.json"};
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        af_graph_t *g = load_example(examples[i]);
        af_plan_opts_t po;
        af_plan_opts_init(&po);
        af_plan_t *p = NULL;
        af_error_t err;
        assert_int_equal(af_plan_create(g, &po, &p, &err), 0);
        assert_int_equal(af_plan_verify(p, &err), 0);
        exec_ctx_t c;
        memset(&c, 0, sizeof(c));
        af_executor_opts_init(&c.opts);
        c.opts.threads = 2;
        assert_int_equal(af_executor_create(&c.opts, &c.ex, &err), 0);
        c.plan = p;
        /* Clean sessions and rounds first, so executor state that grows once (the workers'
         * task deques, reached round-robin) is not counted as a session leak. */
        c.run_round = 1;
        for (int k = 0; k < 8; k++)
            assert_int_equal(op_session(&c), 0);
        char label[128];
        c.run_round = 0;
        snprintf(label, sizeof(label), "af_session_create %s", examples[i] + 9);
        run_oom(label, op_session, &c, 1);
        c.run_round = 1;
        snprintf(label, sizeof(label), "af_session_create+first round %s", examples[i] + 9);
        run_oom(label, op_session, &c, 1);
        af_executor_destroy(c.ex);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

static long live_at_start;

static int mark_live(void **state)
{
    (void)state;
    live_at_start = atomic_load(&live_allocs);
    return 0;
}

/* Teardown: everything the test made (graphs, plans, executors) is gone again. */
static int check_live(void **state)
{
    (void)state;
    long d = atomic_load(&live_allocs) - live_at_start;
    if (d != 0)
        print_error("%ld allocations outstanding at the end of the test\n", d);
    return d != 0;
}

static int install_hooks(void **state)
{
    (void)state;
    return af_replace_allocator(oom_malloc, oom_realloc, oom_calloc, oom_free);
}

static int remove_hooks(void **state)
{
    (void)state;
    af_reset_allocator();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_oom_graph_build_and_csv, mark_live, check_live),
        cmocka_unit_test_setup_teardown(test_oom_plan_default_options, mark_live, check_live),
        cmocka_unit_test_setup_teardown(test_oom_plan_each_placer, mark_live, check_live),
        cmocka_unit_test_setup_teardown(test_oom_plan_fused, mark_live, check_live),
        cmocka_unit_test_setup_teardown(test_oom_pool_create, mark_live, check_live),
        cmocka_unit_test_setup_teardown(test_oom_executor_create, mark_live, check_live),
        cmocka_unit_test_setup_teardown(test_oom_session_create, mark_live, check_live),
    };
    return cmocka_run_group_tests(tests, install_hooks, remove_hooks);
}
