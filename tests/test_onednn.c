/*
 * The oneDNN kernel set against ONNX semantics: every kernel on random inputs over a grid of
 * shapes and attributes, compared with the naive oracle of tests/onednn_oracle.h (written from
 * the ONNX specification) and with the reference kernel set wherever it runs the op, within
 * rtol 1e-4 / atol 1e-5 (f32; bool outputs exactly). Each case is one node; the graph is lowered
 * (af_kernels_lower) and planned as a user would, the weights go in through
 * af_session_constant() (so the prepared state is rebuilt from them), and the test asserts which
 * kernel ran the node: oneDNN where it can express the node exactly, the reference kernel where
 * it cannot (those cases are in the grid too).
 *
 * Also: scratch tensors are planned, the scratchpad of a gemm-based convolution lands in the
 * arena, teams run on two threads, and concurrent rounds on several workers stay correct.
 * Fixed-seed PRNG; the seed and the case are printed on failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <oneapi/dnnl/dnnl.h>

#include "arenaflow/executor.h"
#include "tests/onednn_oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SEED 0x5eed17u
static uint32_t rng_state = SEED;

static float rnd(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return lo + (hi - lo) * (float)(rng_state >> 8) / (float)(1u << 24);
}

static int n_cases, n_onednn, n_fallback, n_ref_compared;
static int last_team; /* OpenMP team of the last case's node */

/* ---- building a case --------------------------------------------------------------------- */

static tc_t *tc_new(const char *op)
{
    tc_t *c = calloc(1, sizeof(*c));
    snprintf(c->op, sizeof c->op, "%s", op);
    c->out_dt = AF_DTYPE_F32;
    c->expect_onednn = 1;
    c->alpha = 1.0f;
    c->beta = 1.0f;
    c->group = 1;
    return c;
}

static void tc_in(tc_t *c, af_dtype_t dt, int rank, const int64_t *sh, int is_const, float lo,
                  float hi)
{
    tc_in_t *t = &c->in[c->n_in];
    snprintf(t->name, sizeof t->name, "in%d", c->n_in);
    t->dt = dt;
    t->rank = rank;
    if (rank)
        memcpy(t->sh, sh, (size_t)rank * sizeof(*sh));
    t->is_const = is_const;
    t->lo = lo;
    t->hi = hi;
    c->n_in++;
}

static void tc_out(tc_t *c, int rank, const int64_t *sh)
{
    c->out_rank = rank;
    memcpy(c->out_sh, sh, (size_t)rank * sizeof(*sh));
}

static af_attr_t *tc_attr(tc_t *c, const char *name, af_attr_type_t type)
{
    af_attr_t *a = &c->attr[c->n_attr++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = type;
    return a;
}

static void tc_ai(tc_t *c, const char *name, int64_t v)
{
    tc_attr(c, name, AF_ATTR_INT)->i = v;
}

static void tc_af(tc_t *c, const char *name, double v)
{
    tc_attr(c, name, AF_ATTR_FLOAT)->f = v;
}

static void tc_as(tc_t *c, const char *name, const char *v)
{
    int k = c->n_attr;
    snprintf(c->strs[k], sizeof c->strs[k], "%s", v);
    tc_attr(c, name, AF_ATTR_STRING)->s = c->strs[k];
}

static void tc_aints(tc_t *c, const char *name, int n, const int64_t *v)
{
    int k = c->n_attr;
    memcpy(c->ints[k], v, (size_t)n * sizeof(*v));
    af_attr_t *a = tc_attr(c, name, AF_ATTR_INTS);
    a->ints = c->ints[k];
    a->n = n;
}

static af_graph_t *tc_graph(const tc_t *c)
{
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    const char *ins[TC_MAX_IN];
    for (int i = 0; i < c->n_in; i++) {
        const tc_in_t *t = &c->in[i];
        af_tensor_desc_t d = {.name = t->name,
                              .bytes = AF_BYTES_FROM_SHAPE,
                              .dtype = t->dt,
                              .rank = t->rank,
                              .shape = t->sh,
                              .kind = t->is_const ? AF_TENSOR_CONSTANT : AF_TENSOR_INPUT};
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
        ins[i] = t->name;
    }
    af_tensor_desc_t d = {.name = "out",
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .dtype = c->out_dt,
                          .rank = c->out_rank,
                          .shape = c->out_sh,
                          .kind = AF_TENSOR_OUTPUT};
    assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
    const char *outs[] = {"out"};
    af_node_desc_t nd = {.name = "node",
                         .op = c->op,
                         .inputs = ins,
                         .n_inputs = c->n_in,
                         .outputs = outs,
                         .n_outputs = 1,
                         .cost = c->cost};
    int32_t id;
    assert_int_equal(af_graph_add_node(g, &nd, &id, NULL), 0);
    for (int i = 0; i < c->n_attr; i++)
        assert_int_equal(af_graph_node_set_attr(g, id, &c->attr[i], NULL), 0);
    af_error_t err;
    af_error_clear(&err);
    if (af_graph_finalize(g, &err))
        print_error("finalize: %s\n", err.msg);
    assert_int_equal(err.code, 0);
    return g;
}

static void tc_fill(tc_t *c)
{
    for (int i = 0; i < c->n_in; i++) {
        tc_in_t *t = &c->in[i];
        int64_t n = tc_numel(t->rank, t->sh);
        t->bytes = (size_t)n * af_dtype_size(t->dt);
        t->data = malloc(t->bytes ? t->bytes : 1);
        for (int64_t j = 0; j < n; j++) {
            float v = rnd(t->lo, t->hi);
            if (t->round)
                v = roundf(v);
            if (j < t->n_fixed)
                v = (float)t->fixed[j];
            if (t->dt == AF_DTYPE_F32)
                ((float *)t->data)[j] = v;
            else if (t->dt == AF_DTYPE_I32)
                ((int32_t *)t->data)[j] = (int32_t)v;
            else if (t->dt == AF_DTYPE_I64)
                ((int64_t *)t->data)[j] = (int64_t)v;
            else
                ((uint8_t *)t->data)[j] = (uint8_t)v;
        }
    }
}

/* ---- running a case ---------------------------------------------------------------------- */

typedef struct run_out {
    int rc;
    char kernel[320];
    int32_t team;
    af_session_stats_t st;
    uint64_t scratch_report;
} run_out_t;

/* Lowers, plans and runs c's graph once with kernel set `set`; the output goes to out. */
static void run_case(const tc_t *c, af_graph_t *g, const char *set, int threads, void *out,
                     size_t out_bytes, run_out_t *r)
{
    memset(r, 0, sizeof *r);
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = set;
    eo.threads = threads;
    eo.verify = 0;
    af_error_t err;
    af_error_clear(&err);
    af_graph_t *lg = NULL;
    assert_int_equal(af_kernels_lower(&eo, g, &lg, &err), 0);
    af_plan_t *p = NULL;
    assert_int_equal(af_plan_create(lg, NULL, &p, &err), 0);
    r->scratch_report = af_plan_report(p)->scratch_bytes;
    af_executor_t *ex = NULL;
    assert_int_equal(af_executor_create(&eo, &ex, &err), 0);
    af_session_t *s = NULL;
    r->rc = af_session_create(ex, p, NULL, &s, &err);
    if (r->rc == 0) {
        for (int i = 0; i < c->n_in; i++) {
            if (!c->in[i].is_const)
                continue;
            uint64_t n = 0;
            void *q = af_session_constant(s, af_graph_find_tensor(lg, c->in[i].name), &n);
            assert_non_null(q);
            assert_int_equal(n, c->in[i].bytes);
            memcpy(q, c->in[i].data, c->in[i].bytes);
        }
        af_buffer_t in[TC_MAX_IN], ob = {out, out_bytes};
        int32_t ni = af_session_input_count(s);
        for (int32_t i = 0; i < ni; i++) {
            const char *name = af_graph_tensor(lg, af_session_input_tensor(s, i))->name;
            int k = atoi(name + 2);
            in[i] = (af_buffer_t){c->in[k].data, c->in[k].bytes};
        }
        r->rc = af_session_run(s, in, &ob, &err);
        const char *kn = af_session_node_kernel(s, 0, &r->team);
        snprintf(r->kernel, sizeof r->kernel, "%s", kn ? kn : "?");
        af_session_stats(s, &r->st);
        af_session_destroy(s);
    }
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(lg);
}

static void describe(const tc_t *c)
{
    fprintf(stderr, "case %s (seed %#x):", c->op, SEED);
    for (int i = 0; i < c->n_in; i++) {
        fprintf(stderr, " in%d[", i);
        for (int k = 0; k < c->in[i].rank; k++)
            fprintf(stderr, "%s%lld", k ? "," : "", (long long)c->in[i].sh[k]);
        fprintf(stderr, "]%s", c->in[i].is_const ? "c" : "");
    }
    for (int i = 0; i < c->n_attr; i++) {
        const af_attr_t *a = &c->attr[i];
        fprintf(stderr, " %s=", a->name);
        if (a->type == AF_ATTR_INT)
            fprintf(stderr, "%lld", (long long)a->i);
        else if (a->type == AF_ATTR_FLOAT)
            fprintf(stderr, "%g", a->f);
        else if (a->type == AF_ATTR_STRING)
            fprintf(stderr, "%s", a->s);
        else
            for (int k = 0; k < a->n; k++)
                fprintf(stderr, "%s%lld", k ? "," : "", (long long)a->ints[k]);
    }
    fprintf(stderr, "\n");
}

/* Number of elements that differ beyond the tolerance (bool outputs: exactly). */
static int64_t mismatches(const tc_t *c, const void *got, const void *want, const char *what)
{
    int64_t n = tc_numel(c->out_rank, c->out_sh), bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double a, b;
        if (c->out_dt == AF_DTYPE_F32)
            a = ((const float *)got)[i], b = ((const float *)want)[i];
        else
            a = ((const uint8_t *)got)[i], b = ((const uint8_t *)want)[i];
        int ok = c->out_dt == AF_DTYPE_F32 ? fabs(a - b) <= 1e-5 + 1e-4 * fabs(b) : a == b;
        if (!ok && bad++ < 3) {
            describe(c);
            fprintf(stderr, "  vs %s: element %lld: got %.8g, want %.8g\n", what, (long long)i, a,
                    b);
        }
    }
    return bad;
}

/* Runs c on oneDNN (threads workers) and checks it against the oracle and the reference set. */
static void tc_check_threads(tc_t *c, int threads)
{
    tc_fill(c);
    af_graph_t *g = tc_graph(c);
    size_t ob = (size_t)tc_numel(c->out_rank, c->out_sh) * af_dtype_size(c->out_dt);
    void *got = calloc(1, ob + 1), *want = calloc(1, ob + 1), *ref = calloc(1, ob + 1);
    run_out_t r, rr;
    run_case(c, g, "onednn", threads, got, ob, &r);
    if (r.rc)
        describe(c);
    assert_int_equal(r.rc, 0);
    int on = !strncmp(r.kernel, "onednn", 6);
    if (on != c->expect_onednn) {
        describe(c);
        fprintf(stderr, "  ran on '%s', expected %s\n", r.kernel,
                c->expect_onednn ? "oneDNN" : "the reference fallback");
    }
    assert_int_equal(on, c->expect_onednn);
    /* a fallback's report names the reference kernel and why oneDNN does not run the node */
    if (!on && (strncasecmp(r.kernel, "reference (onednn: ", 19) ||
                (c->why && !strstr(r.kernel, c->why)))) {
        describe(c);
        fail_msg("fallback reported as '%s' (want 'reference (onednn: ...%s...)')", r.kernel,
                 c->why ? c->why : "");
    }
    if (c->fast && (strstr(r.kernel, "ref") || strstr(r.kernel, "gemm"))) {
        describe(c);
        fail_msg("ran on '%s', not a direct oneDNN kernel", r.kernel);
    }
    last_team = r.team;
    n_cases++;
    *(on ? &n_onednn : &n_fallback) += 1;
    int compared = 0;
    if (c->oracle) {
        c->oracle(c, want);
        assert_int_equal(mismatches(c, got, want, "oracle"), 0);
        compared = 1;
    }
    run_case(c, g, "reference", 1, ref, ob, &rr);
    if (rr.rc == 0 && !c->ref_skip) {
        assert_int_equal(mismatches(c, got, ref, "reference kernel"), 0);
        n_ref_compared++;
        compared = 1;
    }
    if (!compared && c->expect_onednn)
        describe(c);
    assert_true(compared || !c->expect_onednn); /* every oneDNN case has an expected value */
    af_graph_destroy(g);
    free(got);
    free(want);
    free(ref);
    for (int i = 0; i < c->n_in; i++)
        free(c->in[i].data);
    free(c);
}

static void tc_check(tc_t *c)
{
    tc_check_threads(c, 1);
}

#include "tests/onednn_cases.h"

/* ---- tests ------------------------------------------------------------------------------- */

/* A convolution whose plain-layout primitive is oneDNN's gemm path reorders through working
 * memory: lowered, that memory is a planned scratch tensor; not lowered, the session keeps it
 * outside the arena and says so. Both give the oracle's result. */
static void test_onednn_scratch(void **state)
{
    (void)state;
    tc_t *c = tc_new("Conv");
    c->sp = 2;
    for (int i = 0; i < 2; i++)
        c->k[i] = 3, c->s[i] = 1, c->d[i] = 1, c->pl[i] = 1, c->pr[i] = 1;
    tc_in(c, F32, NSH(1, 8, 20, 20), 0, -1, 1);
    tc_in(c, F32, NSH(8, 8, 3, 3), 1, -1, 1);
    tc_out(c, NSH(1, 8, 20, 20));
    tc_aints(c, "pads", 4, SH(1, 1, 1, 1));
    tc_fill(c);
    af_graph_t *g = tc_graph(c);
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = "onednn";
    eo.threads = 1;
    af_graph_t *lg = NULL, *rg = NULL;
    assert_int_equal(af_kernels_lower(&eo, g, &lg, NULL), 0);
    int32_t st = af_graph_find_tensor(lg, "node#scratch");
    assert_true(st >= 0);
    const af_tensor_info_t *ti = af_graph_tensor(lg, st);
    assert_int_equal(ti->kind, AF_TENSOR_SCRATCH);
    assert_true(ti->bytes > 0);
    assert_int_equal(ti->producer, 0);
    assert_int_equal(ti->n_consumers, 0);
    eo.kernels = "reference";
    assert_int_equal(af_kernels_lower(&eo, g, &rg, NULL), 0);
    assert_int_equal(af_graph_tensor_count(rg), af_graph_tensor_count(g)); /* nothing to add */
    af_graph_destroy(rg);
    size_t ob = 8 * 20 * 20 * sizeof(float);
    float *want = malloc(ob), *a = malloc(ob), *b = malloc(ob);
    or_conv(c, want);
    run_out_t r;
    run_case(c, g, "onednn", 1, a, ob, &r); /* run_case lowers: planned scratch */
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.st.scratch_bytes, (uint64_t)ti->bytes);
    assert_int_equal(r.st.unplanned_scratch_bytes, 0);
    assert_true(r.scratch_report >= (uint64_t)ti->bytes);
    assert_int_equal(mismatches(c, a, want, "oracle (planned scratch)"), 0);
    /* not lowered: the same result, the working memory outside the arena and reported */
    af_plan_t *p = NULL;
    assert_int_equal(af_plan_create(g, NULL, &p, NULL), 0);
    assert_int_equal(af_plan_report(p)->scratch_tensors, 0);
    eo.kernels = "onednn";
    af_executor_t *ex;
    af_session_t *s;
    assert_int_equal(af_executor_create(&eo, &ex, NULL), 0);
    assert_int_equal(af_session_create(ex, p, NULL, &s, NULL), 0);
    memcpy(af_session_constant(s, 1, NULL), c->in[1].data, c->in[1].bytes);
    af_buffer_t in = {c->in[0].data, c->in[0].bytes}, out = {b, ob};
    assert_int_equal(af_session_run(s, &in, &out, NULL), 0);
    af_session_stats_t ss;
    af_session_stats(s, &ss);
    assert_true(ss.unplanned_scratch_bytes >= (uint64_t)ti->bytes);
    assert_int_equal(ss.scratch_bytes, 0);
    assert_true(ss.prepacked_bytes > 0);
    assert_int_equal(mismatches(c, b, want, "oracle (unplanned scratch)"), 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(lg);
    af_graph_destroy(g);
    free(want);
    free(a);
    free(b);
    free(c->in[0].data);
    free(c->in[1].data);
    free(c);
}

static void test_onednn_elementwise(void **state)
{
    (void)state;
    cases_unary();
    cases_binary();
}

static void test_onednn_conv(void **state)
{
    (void)state;
    cases_conv();
    cases_deconv();
}

static void test_onednn_matmul(void **state)
{
    (void)state;
    cases_matmul();
}

static void test_onednn_pool_norm(void **state)
{
    (void)state;
    cases_pool();
    cases_norm();
}

static void test_onednn_data(void **state)
{
    (void)state;
    cases_data();
    cases_resize();
}

static void test_onednn_teams(void **state)
{
    (void)state;
    cases_teams();
}

/* ---- whole graphs: a wrong plan is caught, concurrent rounds -------------------------------- */

static void fill_seeded(float *p, uint64_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
    }
}

static af_graph_t *branches_graph(void)
{
    char path[1024];
    const char *src = getenv("AF_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/conv_branches.json", src ? src : ".");
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    if (af_graph_load_json(path, &g, &err))
        print_error("%s: %s\n", path, err.msg);
    assert_non_null(g);
    return g;
}

/* A session of plan p on kernel set `set`, weights filled from their tensor ids. */
static af_session_t *graph_session(const af_plan_t *p, const char *set, int threads, int inflight,
                                   af_executor_t **ex)
{
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = set;
    eo.threads = threads;
    eo.max_inflight = inflight;
    eo.verify = 0;
    af_error_t err;
    af_error_clear(&err);
    assert_int_equal(af_executor_create(&eo, ex, &err), 0);
    af_session_t *s = NULL;
    if (af_session_create(*ex, p, NULL, &s, &err))
        print_error("%s\n", err.msg);
    assert_non_null(s);
    const af_graph_t *g = af_plan_graph(p);
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        uint64_t n = 0;
        float *w = af_session_constant(s, t, &n);
        if (w)
            fill_seeded(w, n / 4, (uint32_t)t);
    }
    return s;
}

/* x [1, 8, 12, 12] in, y [1, 8, 12, 12] out */
#define BR_ELEMS (8 * 12 * 12)

static void graph_run(af_session_t *s, const float *x, float *y)
{
    af_buffer_t in = {(void *)(uintptr_t)x, BR_ELEMS * 4}, out = {y, BR_ELEMS * 4};
    af_error_t err;
    af_error_clear(&err);
    int rc = af_session_run(s, &in, &out, &err);
    if (rc)
        print_error("round: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

/* Elements of a that differ from b beyond float rounding of the sums that made them: relative
 * 1e-4, and an absolute floor that follows the tensor's scale (an output near zero left by
 * cancelling terms of magnitude ~60 keeps their rounding, ~1e-5, whatever the kernel's order). */
static int64_t count_diff(const float *a, const float *b)
{
    double scale = 0;
    for (int i = 0; i < BR_ELEMS; i++)
        scale = fmax(scale, fabs((double)b[i]));
    int64_t bad = 0;
    for (int i = 0; i < BR_ELEMS; i++)
        bad += !(fabs((double)a[i] - b[i]) <= 1e-5 + 2e-6 * scale + 1e-4 * fabs((double)b[i]));
    return bad;
}

/* The acceptance line "a wrong plan is still caught": with one tensor moved onto the bytes of a
 * tensor that is still to be read, the oneDNN run differs from the reference backend (and from
 * the same kernels on the planner's plan, which match the reference). `arenaflow diagnose
 * --kernels onednn` names the pair (tests/cli_onednn.sh). */
static void test_onednn_wrong_plan_caught(void **state)
{
    (void)state;
    af_graph_t *g = branches_graph(), *lg = NULL;
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = "onednn";
    eo.threads = 2;
    assert_int_equal(af_kernels_lower(&eo, g, &lg, NULL), 0);
    af_plan_t *pr = NULL, *pg = NULL, *pb = NULL;
    assert_int_equal(af_plan_create(g, NULL, &pr, NULL), 0);
    assert_int_equal(af_plan_create(lg, NULL, &pg, NULL), 0);
    assert_int_equal(af_plan_create(lg, NULL, &pb, NULL), 0);
    int32_t a = af_graph_find_tensor(lg, "c1_1"), b = af_graph_find_tensor(lg, "r0_2");
    assert_true(a >= 0 && b >= 0);
    assert_int_equal(af_plan_debug_set_offset(pb, a, af_plan_tensor(pb, b)->offset), 0);
    assert_int_not_equal(af_plan_verify(pb, NULL), 0); /* the verifier sees it too */
    float x[BR_ELEMS], yr[BR_ELEMS], yg[BR_ELEMS], yb[BR_ELEMS];
    fill_seeded(x, BR_ELEMS, 0x1000);
    af_executor_t *ex[3];
    af_session_t *s[3] = {graph_session(pr, "reference", 1, 1, &ex[0]),
                          graph_session(pg, "onednn", 2, 1, &ex[1]),
                          graph_session(pb, "onednn", 2, 1, &ex[2])};
    graph_run(s[0], x, yr);
    graph_run(s[1], x, yg);
    graph_run(s[2], x, yb);
    assert_int_equal(count_diff(yg, yr), 0);
    int64_t bad = count_diff(yb, yr);
    printf("wrong plan: %lld of %d output elements differ from the reference backend\n",
           (long long)bad, BR_ELEMS);
    assert_true(bad > 0);
    for (int i = 0; i < 3; i++) {
        af_session_destroy(s[i]);
        af_executor_destroy(ex[i]);
    }
    af_plan_destroy(pr);
    af_plan_destroy(pg);
    af_plan_destroy(pb);
    af_graph_destroy(lg);
    af_graph_destroy(g);
}

typedef struct conc {
    af_session_t *s;
    int id;
    const float *want; /* expected output of input `id` */
    int64_t bad;
} conc_t;

static void conc_main(void *arg)
{
    conc_t *c = arg;
    float x[BR_ELEMS], y[BR_ELEMS];
    fill_seeded(x, BR_ELEMS, 0x2000u + (uint32_t)c->id);
    for (int r = 0; r < 25; r++) {
        af_buffer_t in = {x, sizeof x}, out = {y, sizeof y};
        if (af_session_run(c->s, &in, &out, NULL)) {
            c->bad++;
            continue;
        }
        c->bad += count_diff(y, c->want);
    }
}

/* Four threads run rounds of one session at once (4 in flight, 2 workers with teams): every
 * round gives the result of its own input (no memory object or arena shared between rounds). */
static void test_onednn_concurrent_rounds(void **state)
{
    (void)state;
    af_graph_t *g = branches_graph(), *lg = NULL;
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = "onednn";
    eo.threads = 2;
    eo.intra_op_threads = 2;
    assert_int_equal(af_kernels_lower(&eo, g, &lg, NULL), 0);
    af_plan_t *p = NULL;
    assert_int_equal(af_plan_create(lg, NULL, &p, NULL), 0);
    af_executor_t *ex;
    af_session_t *s = graph_session(p, "onednn", 2, 4, &ex);
    static float want[4][BR_ELEMS];
    for (int i = 0; i < 4; i++) {
        float x[BR_ELEMS];
        fill_seeded(x, BR_ELEMS, 0x2000u + (uint32_t)i);
        graph_run(s, x, want[i]);
    }
    conc_t c[4];
    uv_thread_t th[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (conc_t){.s = s, .id = i, .want = want[i]};
        assert_int_equal(uv_thread_create(&th[i], conc_main, &c[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        uv_thread_join(&th[i]);
        assert_int_equal(c[i].bad, 0);
    }
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(lg);
    af_graph_destroy(g);
}

/* silero VAD's first layer: a 258-channel depthwise 1-D convolution reading a graph input (ONNX
 * order) and writing for a pointwise one (channels-last). oneDNN has only its ref kernel on that
 * mixed pair (about 530 us); the node runs a jit kernel on channels-last copies instead (a 2-D
 * one of height 1 below AVX-512), with the reference backend's result. */
static void test_onednn_depthwise_mixed_layout(void **state)
{
    (void)state;
    char path[1024];
    const char *src = getenv("AF_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/dw_mixed.json", src ? src : ".");
    af_graph_t *g = NULL, *lg[2] = {NULL, NULL};
    af_error_t err;
    af_error_clear(&err);
    if (af_graph_load_json(path, &g, &err))
        print_error("%s: %s\n", path, err.msg);
    assert_non_null(g);
    const char *sets[2] = {"onednn", "reference"};
    float x[258 * 8], y[2][16 * 8];
    fill_seeded(x, 258 * 8, 7);
    for (int k = 0; k < 2; k++) {
        af_executor_opts_t eo;
        af_executor_opts_init(&eo);
        eo.kernels = sets[k];
        eo.threads = 1;
        assert_int_equal(af_kernels_lower(&eo, g, &lg[k], NULL), 0);
        af_plan_t *p = NULL;
        assert_int_equal(af_plan_create(lg[k], NULL, &p, NULL), 0);
        af_executor_t *ex;
        af_session_t *s = graph_session(p, sets[k], 1, 1, &ex);
        af_buffer_t in = {x, sizeof x}, out = {y[k], sizeof y[k]};
        assert_int_equal(af_session_run(s, &in, &out, NULL), 0);
        if (k == 0) {
            const char *kn = af_session_node_kernel(s, af_graph_find_node(lg[k], "dw"), NULL);
            print_message("depthwise conv kernel: %s\n", kn);
            assert_non_null(strstr(kn, "onednn:"));
            /* below AVX-512 (an AVX2-only AMD EPYC) oneDNN has its jit depthwise kernel in 2-D
             * only (1-D: ref or gemm): the node runs as a 2-D convolution of height 1 */
            assert_null(strstr(kn, "ref"));
            assert_null(strstr(kn, "gemm"));
        }
        af_session_destroy(s);
        af_executor_destroy(ex);
        af_plan_destroy(p);
        af_graph_destroy(lg[k]);
    }
    int bad = 0;
    for (int i = 0; i < 16 * 8; i++)
        bad += !(fabs((double)y[0][i] - y[1][i]) <= 1e-5 + 1e-4 * fabs((double)y[1][i]));
    assert_int_equal(bad, 0);
    af_graph_destroy(g);
}

/* BlazeFace's channel padding: Conv -> MaxPool -> Concat with a constant of zeros -> Conv. The
 * zeros read the same in both layouts, so they do not keep the Concat's group in ONNX order: the
 * MaxPool reads and writes channels-last and runs a oneDNN jit kernel (with the group held back,
 * its input is channels-last and its output plain: a ref kernel here, simple_nchw on the model,
 * about 5x slower than jit there). A session that writes other values into that constant gets
 * plain layouts again and still the reference set's result. */
static af_graph_t *pad_graph(const float *zeros)
{
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    static const int64_t sx[] = {1, 8, 8, 8}, sw1[] = {8, 8, 1, 1}, sp[] = {1, 8, 4, 4},
                         sq[] = {1, 16, 4, 4}, sw2[] = {16, 16, 1, 1};
    struct {
        const char *name;
        const int64_t *sh;
        af_tensor_kind_t kind;
    } ts[] = {{"x", sx, AF_TENSOR_INPUT},         {"w1", sw1, AF_TENSOR_CONSTANT},
              {"t1", sx, AF_TENSOR_INTERMEDIATE}, {"p", sp, AF_TENSOR_INTERMEDIATE},
              {"z", sp, AF_TENSOR_CONSTANT},      {"q", sq, AF_TENSOR_INTERMEDIATE},
              {"w2", sw2, AF_TENSOR_CONSTANT},    {"y", sq, AF_TENSOR_OUTPUT}};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        af_tensor_desc_t d = {.name = ts[i].name,
                              .bytes = AF_BYTES_FROM_SHAPE,
                              .dtype = AF_DTYPE_F32,
                              .rank = 4,
                              .shape = ts[i].sh,
                              .kind = ts[i].kind};
        int32_t id;
        assert_int_equal(af_graph_add_tensor(g, &d, &id, NULL), 0);
        if (!strcmp(ts[i].name, "z"))
            assert_int_equal(af_graph_set_data(g, id, zeros, 8 * 16 * 4, AF_DATA_COPY, NULL), 0);
    }
    const char *i1[] = {"x", "w1"}, *o1[] = {"t1"}, *i2[] = {"t1"}, *o2[] = {"p"},
               *i3[] = {"p", "z"}, *o3[] = {"q"}, *i4[] = {"q", "w2"}, *o4[] = {"y"};
    af_node_desc_t nd[] = {{.name = "c1",
                            .op = "Conv",
                            .inputs = i1,
                            .n_inputs = 2,
                            .outputs = o1,
                            .n_outputs = 1,
                            .cost = 8192},
                           {.name = "pool",
                            .op = "MaxPool",
                            .inputs = i2,
                            .n_inputs = 1,
                            .outputs = o2,
                            .n_outputs = 1,
                            .cost = 512},
                           {.name = "pad",
                            .op = "Concat",
                            .inputs = i3,
                            .n_inputs = 2,
                            .outputs = o3,
                            .n_outputs = 1,
                            .cost = 256},
                           {.name = "c2",
                            .op = "Conv",
                            .inputs = i4,
                            .n_inputs = 2,
                            .outputs = o4,
                            .n_outputs = 1,
                            .cost = 8192}};
    int32_t id[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(af_graph_add_node(g, &nd[i], &id[i], NULL), 0);
    static const int64_t k1[] = {1, 1}, k2[] = {2, 2};
    af_attr_t a = {.name = "kernel_shape", .type = AF_ATTR_INTS, .ints = k1, .n = 2};
    assert_int_equal(af_graph_node_set_attr(g, id[0], &a, NULL), 0);
    assert_int_equal(af_graph_node_set_attr(g, id[3], &a, NULL), 0);
    a.ints = k2;
    assert_int_equal(af_graph_node_set_attr(g, id[1], &a, NULL), 0);
    a.name = "strides";
    assert_int_equal(af_graph_node_set_attr(g, id[1], &a, NULL), 0);
    af_attr_t ax = {.name = "axis", .type = AF_ATTR_INT, .i = 1};
    assert_int_equal(af_graph_node_set_attr(g, id[2], &ax, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    return g;
}

/* Runs the pad graph on set with weights from fill_seeded (and z = zeros, or seeded values when
 * zeros_too): y, and the MaxPool's kernel name into kn. */
static void pad_run(const af_graph_t *g, const char *set, int zeros_too, float *y, char *kn)
{
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = set;
    eo.threads = 1;
    af_graph_t *lg = NULL;
    assert_int_equal(af_kernels_lower(&eo, g, &lg, NULL), 0);
    af_plan_t *p = NULL;
    assert_int_equal(af_plan_create(lg, NULL, &p, NULL), 0);
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&eo, &ex, NULL), 0);
    af_session_t *s = NULL;
    assert_int_equal(af_session_create(ex, p, NULL, &s, NULL), 0);
    for (int32_t t = 0; t < af_graph_tensor_count(lg); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(lg, t);
        if (ti->kind != AF_TENSOR_CONSTANT || (!strcmp(ti->name, "z") && !zeros_too))
            continue;
        uint64_t n = 0;
        float *w = af_session_constant(s, t, &n);
        assert_non_null(w);
        fill_seeded(w, n / 4, (uint32_t)t);
    }
    float x[8 * 8 * 8];
    fill_seeded(x, 8 * 8 * 8, 3);
    af_buffer_t in = {x, sizeof x}, out = {y, 16 * 16 * sizeof(float)};
    assert_int_equal(af_session_run(s, &in, &out, NULL), 0);
    snprintf(kn, 64, "%s", af_session_node_kernel(s, af_graph_find_node(lg, "pool"), NULL));
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(lg);
}

static void test_onednn_pad_zeros_layout(void **state)
{
    (void)state;
    static float zeros[8 * 16];
    af_graph_t *g = pad_graph(zeros);
    for (int zeros_too = 0; zeros_too < 2; zeros_too++) {
        float y[2][16 * 16];
        char kn[2][64];
        pad_run(g, "onednn", zeros_too, y[0], kn[0]);
        pad_run(g, "reference", zeros_too, y[1], kn[1]);
        print_message("z %s: MaxPool kernel %s\n", zeros_too ? "seeded" : "zeros", kn[0]);
        assert_non_null(strstr(kn[0], "onednn:"));
        if (!zeros_too) /* channels-last in and out: not the ref kernel, not the plain one */
            assert_true(!strstr(kn[0], "ref") && !strstr(kn[0], "nchw"));
        int bad = 0;
        for (int i = 0; i < 16 * 16; i++)
            bad += !(fabs((double)y[0][i] - y[1][i]) <= 1e-5 + 1e-4 * fabs((double)y[1][i]));
        assert_int_equal(bad, 0);
    }
    af_graph_destroy(g);
}

static void test_onednn_summary(void **state)
{
    (void)state;
    printf("oneDNN vs oracle: %d cases, %d on oneDNN, %d on the reference fallback, %d also "
           "compared with the reference kernel\n",
           n_cases, n_onednn, n_fallback, n_ref_compared);
    assert_true(n_onednn > 100);
    assert_true(n_fallback > 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onednn_elementwise),
        cmocka_unit_test(test_onednn_conv),
        cmocka_unit_test(test_onednn_matmul),
        cmocka_unit_test(test_onednn_pool_norm),
        cmocka_unit_test(test_onednn_data),
        cmocka_unit_test(test_onednn_teams),
        cmocka_unit_test(test_onednn_scratch),
        cmocka_unit_test(test_onednn_wrong_plan_caught),
        cmocka_unit_test(test_onednn_concurrent_rounds),
        cmocka_unit_test(test_onednn_depthwise_mixed_layout),
        cmocka_unit_test(test_onednn_pad_zeros_layout),
        cmocka_unit_test(test_onednn_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
