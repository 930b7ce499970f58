/*
 * Planner tests: property tests over random DAGs (every placement algorithm passes the
 * verifier, lifetimes equal a brute-force definition, the event table replays cleanly and
 * reproduces the peak), verifier mutation tests, and unit tests of the pieces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arenaflow/graph.h"
#include "arenaflow/pack.h"
#include "arenaflow/plan.h"
#include "arenaflow/zoo.h"
#include "tests/randdag.h"

#if defined(AF_ASAN_BUILD) || defined(AF_TSAN_BUILD)
#define N_DAGS 600 /* sanitizer builds are 5-20x slower; the full 2,000 run in the normal build */
#else
#define N_DAGS 2000
#endif
#define MAX_NODES 300

static const char *placers[] = {"naive", "firstfit-start", "color-end", "greedy-size", "portfolio"};

/* ---- property: every algorithm passes the verifier ---------------------------------------- */

static void test_plan_random_dags_verify_all_algorithms(void **state)
{
    (void)state;
    long plans = 0;
    for (uint64_t seed = 1; seed <= N_DAGS; seed++) {
        af_graph_t *g = rd_graph(seed, MAX_NODES);
        if (!g)
            fail_msg("seed %llu: random graph rejected", (unsigned long long)seed);
        for (size_t a = 0; a < sizeof(placers) / sizeof(placers[0]); a++) {
            for (int mode = 0; mode < 2; mode++) {
                if (mode == AF_MODE_SHARED && !strcmp(placers[a], "firstfit-start"))
                    continue;
                af_plan_opts_t o;
                af_plan_opts_init(&o);
                o.placer = placers[a];
                o.schedule = "input";
                o.mode = (af_place_mode_t)mode;
                o.alignment = (seed % 3 == 0) ? 1 : 256;
                o.verify = 1;
                af_error_t err;
                af_plan_t *p = NULL;
                int rc = af_plan_create(g, &o, &p, &err);
                if (rc)
                    fail_msg("seed %llu placer %s mode %d: %s", (unsigned long long)seed,
                             placers[a], mode, err.msg);
                const af_plan_report_t *r = af_plan_report(p);
                if (r->arena_bytes < r->lower_bound_bytes)
                    fail_msg("seed %llu placer %s: arena %llu below lower bound %llu",
                             (unsigned long long)seed, placers[a],
                             (unsigned long long)r->arena_bytes,
                             (unsigned long long)r->lower_bound_bytes);
                /* independent re-check, as a caller would */
                rc = af_plan_verify(p, &err);
                if (rc)
                    fail_msg("seed %llu: re-verify: %s", (unsigned long long)seed, err.msg);
                af_plan_destroy(p);
                plans++;
            }
        }
        af_graph_destroy(g);
    }
    print_message("verified %ld plans over %d random DAGs\n", plans, N_DAGS);
}

/* portfolio never worse than greedy-size (it contains it) */
static void test_plan_portfolio_never_worse_than_greedy(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= N_DAGS / 4; seed++) {
        af_graph_t *g = rd_graph(seed + 50000, MAX_NODES);
        assert_non_null(g);
        uint64_t h[2];
        for (int k = 0; k < 2; k++) {
            af_plan_opts_t o;
            af_plan_opts_init(&o);
            o.schedule = "input";
            o.placer = k ? "portfolio" : "greedy-size";
            af_plan_t *p;
            af_error_t err;
            if (af_plan_create(g, &o, &p, &err))
                fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
            h[k] = af_plan_arena_bytes(p);
            af_plan_destroy(p);
        }
        if (h[1] > h[0])
            fail_msg("seed %llu: portfolio %llu > greedy-size %llu", (unsigned long long)seed,
                     (unsigned long long)h[1], (unsigned long long)h[0]);
        af_graph_destroy(g);
    }
}

/* ---- property: lifetimes equal the brute-force definition -------------------------------- */

/* Does tensor t exist at step s? Inputs/constants always; produced tensors from their
 * producer's step; a view without producer while its base exists. */
static int bf_born(const af_graph_t *g, const int32_t *step, int32_t t, int32_t s)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    if (ti->kind == AF_TENSOR_INPUT || ti->kind == AF_TENSOR_CONSTANT)
        return 1;
    if (ti->producer >= 0)
        return step[ti->producer] <= s;
    return ti->alias_of >= 0 && bf_born(g, step, ti->alias_of, s);
}

/* Is tensor t in use at step s: it exists and is still needed (a reader at s or later, or it
 * is a graph output/constant, or it is being produced at s). */
static int bf_used_at(const af_graph_t *g, const int32_t *step, int32_t t, int32_t s)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    if (!bf_born(g, step, t, s))
        return 0;
    if (ti->kind == AF_TENSOR_OUTPUT || ti->kind == AF_TENSOR_CONSTANT)
        return 1;
    if (ti->producer >= 0 && step[ti->producer] == s)
        return 1;
    for (int32_t c = 0; c < ti->n_consumers; c++)
        if (step[ti->consumers[c]] >= s)
            return 1;
    return 0;
}

static void test_plan_lifetimes_match_brute_force(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= N_DAGS; seed++) {
        af_graph_t *g = rd_graph(seed + 7000, seed % 10 == 0 ? MAX_NODES : 60);
        assert_non_null(g);
        int32_t nn = af_graph_node_count(g), nt = af_graph_tensor_count(g);
        int32_t *order = malloc((size_t)nn * sizeof(int32_t));
        int32_t *step = malloc((size_t)nn * sizeof(int32_t));
        af_lifetime_t *lt = malloc((size_t)nt * sizeof(af_lifetime_t));
        rd_random_order(g, seed, order);
        for (int32_t s = 0; s < nn; s++)
            step[order[s]] = s;
        af_error_t err;
        if (af_lifetimes_compute(g, order, lt, &err))
            fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
        /* brute force, per tensor: own use steps; roots additionally cover their views */
        for (int32_t t = 0; t < nt; t++) {
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            if (ti->alias_of >= 0 && ti->producer < 0)
                continue; /* producer-less views: checked through their root */
            int32_t first = -1, last = -1;
            for (int32_t s = 0; s < nn; s++) {
                int used = bf_used_at(g, step, t, s);
                /* a root also lives while any view of it is in use */
                for (int32_t v = 0; v < nt && !used && ti->alias_of < 0; v++)
                    if (v != t && af_graph_alias_root(g, v) == t)
                        used = bf_used_at(g, step, v, s);
                if (used) {
                    if (first < 0)
                        first = s;
                    last = s;
                }
            }
            if (first < 0 && ti->kind == AF_TENSOR_INPUT)
                first = last = 0; /* an input nobody reads: defined live at step 0 */
            if (ti->kind == AF_TENSOR_INPUT && first > 0)
                first = 0; /* inputs live from the start even before their first reader */
            if (lt[t].first != first || lt[t].last != last)
                fail_msg("seed %llu tensor '%s': lifetime [%d,%d], brute force [%d,%d]",
                         (unsigned long long)seed, ti->name, lt[t].first, lt[t].last, first, last);
        }
        free(order);
        free(step);
        free(lt);
        af_graph_destroy(g);
    }
}

/* ---- mutation: the verifier catches an offset shifted into a live neighbour --------------- */

static void test_plan_verifier_catches_shifted_offset(void **state)
{
    (void)state;
    int caught = 0, tried = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        af_graph_t *g = rd_graph(seed + 900, 120);
        assert_non_null(g);
        af_plan_opts_t o;
        af_plan_opts_init(&o);
        o.schedule = "input";
        af_plan_t *p;
        af_error_t err;
        assert_int_equal(af_plan_create(g, &o, &p, &err), 0);
        int32_t nt = af_graph_tensor_count(g);
        /* find two arena tensors live at a common step that do not share bytes */
        int done = 0;
        for (int32_t a = 0; a < nt && !done; a++)
            for (int32_t b = 0; b < nt && !done; b++) {
                const af_tensor_plan_t *x = af_plan_tensor(p, a), *y = af_plan_tensor(p, b);
                if (a == b || x->where != AF_WHERE_ARENA || y->where != AF_WHERE_ARENA ||
                    !x->bytes || !y->bytes || x->first < 0 || y->first < 0 || x->inplace_of >= 0 ||
                    y->inplace_of >= 0)
                    continue;
                if (x->first > y->last || y->first > x->last)
                    continue;
                tried++;
                uint64_t keep = x->offset;
                af_plan_debug_set_offset(p, a, y->offset); /* shift a onto b */
                int rc = af_plan_verify(p, &err);
                if (rc == AF_EVERIFY && strstr(err.msg, af_graph_tensor(g, a)->name))
                    caught++;
                else
                    fail_msg("seed %llu: overlap of '%s' onto '%s' not caught (rc %d: %s)",
                             (unsigned long long)seed, af_graph_tensor(g, a)->name,
                             af_graph_tensor(g, b)->name, rc, err.msg);
                af_plan_debug_set_offset(p, a, keep);
                assert_int_equal(af_plan_verify(p, &err), 0);
                done = 1;
            }
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
    assert_true(tried > 200);
    print_message("verifier caught %d of %d injected overlaps\n", caught, tried);
}

/* ---- property: the event table replays cleanly and reproduces the peak -------------------- */

typedef struct {
    char name[64];
    uint64_t off, len;
} blk_t;

static int split_csv(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *c = line; *c && n < max; c++)
        if (*c == ',') {
            *c = '\0';
            f[n++] = c + 1;
        }
    return n;
}

static void replay(const af_graph_t *g, const af_plan_t *p, uint64_t seed)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    af_error_t err;
    assert_int_equal(af_plan_write_events_csv(p, f, &err), 0);
    fclose(f);
    blk_t *live = calloc(4096 + (size_t)af_graph_tensor_count(g), sizeof(blk_t));
    int nl = 0;
    uint64_t cur = 0, peak = 0;
    char *save = NULL;
    char *line = strtok_r(buf, "\n", &save); /* header */
    /* The records (af_plan_events) are the rows of the CSV, one for one. */
    af_event_t *ev = NULL;
    size_t nev = 0, row = 0;
    assert_int_equal(af_plan_events(p, &ev, &nev, &err), 0);
    for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *fld[8];
        assert_int_equal(split_csv(line, fld, 8), 7);
        const char *type = fld[1], *name = fld[2];
        assert_true(row < nev);
        const af_event_t *e = &ev[row++];
        assert_string_equal(af_event_type_name(e->type), type);
        assert_int_equal(strtol(fld[0], NULL, 10), (long)row);
        if (e->type == AF_EVENT_EXEC) {
            assert_int_equal(e->node, af_graph_find_node(g, name));
            assert_int_equal(e->node, af_plan_order(p)[e->step]);
        } else {
            assert_string_equal(af_graph_tensor(g, e->tensor)->name, name);
            if (e->type != AF_EVENT_FENCE && strcmp(fld[5], "dyn"))
                assert_true(e->offset == strtoull(fld[5], NULL, 10) &&
                            e->bytes == strtoull(fld[6], NULL, 10));
        }
        if (!strcmp(type, "ALLOC") && strcmp(fld[5], "dyn")) {
            uint64_t off = strtoull(fld[5], NULL, 10), n = strtoull(fld[6], NULL, 10);
            for (int k = 0; k < nl; k++)
                if (off < live[k].off + live[k].len && live[k].off < off + n)
                    fail_msg("seed %llu: ALLOC '%s' [%llu,+%llu) over live '%s'",
                             (unsigned long long)seed, name, (unsigned long long)off,
                             (unsigned long long)n, live[k].name);
            snprintf(live[nl].name, sizeof live[nl].name, "%s", name);
            live[nl].off = off;
            live[nl].len = n;
            nl++;
            cur += n;
            if (cur > peak)
                peak = cur;
        } else if (!strcmp(type, "INPLACE")) {
            uint64_t off = strtoull(fld[5], NULL, 10), n = strtoull(fld[6], NULL, 10);
            int inside = 0;
            for (int k = 0; k < nl && !inside; k++)
                inside = off >= live[k].off && off + n <= live[k].off + live[k].len;
            if (!inside)
                fail_msg("seed %llu: INPLACE '%s' outside any live block", (unsigned long long)seed,
                         name);
        } else if (!strcmp(type, "FREE") && strcmp(fld[5], "dyn")) {
            uint64_t off = strtoull(fld[5], NULL, 10), n = strtoull(fld[6], NULL, 10);
            int k = 0;
            while (k < nl && strcmp(live[k].name, name))
                k++;
            if (k == nl || live[k].off != off || live[k].len != n)
                fail_msg("seed %llu: FREE of '%s' that is not live as allocated",
                         (unsigned long long)seed, name);
            cur -= n;
            live[k] = live[--nl];
        } else if (!strcmp(type, "EXEC")) {
            /* every arena output of the node must be inside a live block */
            const af_node_info_t *nd = af_graph_node(g, af_graph_find_node(g, name));
            assert_non_null(nd);
            for (int32_t j = 0; j < nd->n_outputs + nd->n_inputs; j++) {
                int32_t t = j < nd->n_outputs ? nd->outputs[j] : nd->inputs[j - nd->n_outputs];
                const af_tensor_plan_t *x = af_plan_tensor(p, t);
                uint64_t n = (uint64_t)af_graph_tensor(g, t)->bytes;
                if ((x->where != AF_WHERE_ARENA && x->where != AF_WHERE_ALIAS) || n == 0)
                    continue;
                if (x->where == AF_WHERE_ALIAS &&
                    af_plan_tensor(p, af_graph_alias_root(g, t))->where != AF_WHERE_ARENA)
                    continue;
                int inside = 0;
                for (int k = 0; k < nl && !inside; k++)
                    inside = x->offset >= live[k].off && x->offset + n <= live[k].off + live[k].len;
                if (!inside)
                    fail_msg("seed %llu: node '%s' touches '%s' outside live memory",
                             (unsigned long long)seed, name, af_graph_tensor(g, t)->name);
            }
        }
    }
    assert_int_equal(nl, 0); /* everything freed by the end */
    if (peak != af_plan_report(p)->lower_bound_bytes)
        fail_msg("seed %llu: replay peak %llu != reported %llu", (unsigned long long)seed,
                 (unsigned long long)peak,
                 (unsigned long long)af_plan_report(p)->lower_bound_bytes);
    assert_int_equal(row, nev);
    af_plan_events_free(ev);
    free(live);
    free(buf);
}

static void test_plan_event_table_replays(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= N_DAGS / 2; seed++) {
        af_graph_t *g = rd_graph(seed + 3000, 150);
        assert_non_null(g);
        af_plan_opts_t o;
        af_plan_opts_init(&o);
        o.schedule = "input";
        af_plan_t *p;
        af_error_t err;
        if (af_plan_create(g, &o, &p, &err))
            fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
        replay(g, p, seed);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

/* ---- unit tests ---------------------------------------------------------------------------- */

static af_graph_t *load_example(const char *name)
{
    char path[512];
    const char *src = getenv("AF_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/examples/%s", src ? src : ".", name);
    af_graph_t *g = NULL;
    af_error_t err;
    if (af_graph_load_json(path, &g, &err))
        fail_msg("%s: %s", path, err.msg);
    return g;
}

static void test_plan_seed2_lifetimes_and_peak(void **state)
{
    (void)state;
    af_graph_t *g = load_example("seed2_hotel.json");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.schedule = "input";
    o.alignment = 1;
    o.inplace = 0;
    af_plan_t *p;
    af_error_t err;
    assert_int_equal(af_plan_create(g, &o, &p, &err), 0);
    /* seed 2: w1 512 [0,3], a1 128 [0,1], w2 256 [1,4], a2 128 [2,3], out 64 [3,4] */
    const char *names[] = {"w1", "a1", "w2", "a2", "out"};
    for (int i = 0; i < 5; i++)
        assert_true(af_graph_find_tensor(g, names[i]) >= 0);
    const af_plan_report_t *r = af_plan_report(p);
    assert_true(r->arena_bytes >= r->lower_bound_bytes);
    assert_true(r->arena_bytes < r->naive_bytes);
    assert_int_equal(af_plan_verify(p, &err), 0);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_plan_budget_error_names_step_and_tensors(void **state)
{
    (void)state;
    af_graph_t *g = load_example("diamond.json");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.budget = 1;
    af_plan_t *p = NULL;
    af_error_t err;
    assert_int_equal(af_plan_create(g, &o, &p, &err), AF_EBUDGET);
    assert_null(p);
    assert_non_null(strstr(err.msg, "budget"));
    assert_non_null(strstr(err.msg, "step"));
    assert_non_null(strstr(err.msg, "live"));
    af_graph_destroy(g);
}

static void test_plan_opts_reject_bad_values(void **state)
{
    (void)state;
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    af_error_t err;
    assert_int_equal(af_plan_opts_set(&o, "alignment", "300", &err), AF_EINVAL);
    assert_int_equal(af_plan_opts_set(&o, "placer", "nope", &err), AF_EINVAL);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(af_plan_opts_set(&o, "colour", "1", &err), AF_EINVAL);
    assert_int_equal(af_plan_opts_set(&o, "budget", "-5", &err), AF_EINVAL);
    assert_int_equal(af_plan_opts_set(&o, "budget", "64M", &err), 0);
    assert_int_equal(o.budget, 64ull << 20);
    assert_int_equal(af_plan_opts_set(&o, "alpha", "0.5", &err), 0);
    assert_true(o.alpha == 0.5);
}

static void test_plan_intervals_verify_catches_overlap(void **state)
{
    (void)state;
    af_interval_t iv[3] = {{0, 4, 10, 0}, {2, 6, 10, 5}, {6, 8, 30, 0}};
    af_error_t err;
    assert_int_equal(af_intervals_verify(iv, 3, 30, 1, &err), AF_EVERIFY);
    iv[1].offset = 10;
    assert_int_equal(af_intervals_verify(iv, 3, 30, 1, &err), 0);
    assert_int_equal(af_intervals_verify(iv, 3, 29, 1, &err), AF_EVERIFY); /* above height */
    assert_int_equal(af_intervals_lower_bound(iv, 3, 1), 30);
}

static void test_plan_place_known_optimum(void **state)
{
    (void)state;
    /* a staircase whose optimum equals the lower bound */
    af_interval_t iv[4] = {{0, 2, 4, 0}, {0, 4, 4, 0}, {2, 6, 4, 0}, {4, 6, 4, 0}};
    for (const char *const *a = af_place_names(); *a; a++) {
        if (!strcmp(*a, "search"))
            continue;
        uint64_t h;
        af_error_t err;
        assert_int_equal(af_place_intervals(iv, 4, *a, NULL, &h, &err), 0);
        assert_int_equal(af_intervals_verify(iv, 4, h, 1, &err), 0);
        if (!strcmp(*a, "portfolio") || !strcmp(*a, "greedy-size"))
            assert_int_equal(h, 8);
    }
}

static void test_plan_csv_parse_errors(void **state)
{
    (void)state;
    af_interval_t *iv;
    char **ids;
    size_t n;
    af_error_t err;
    const char *good = "id,lower,upper,size\n0,0,4,16\n1,2,5,8\n";
    assert_int_equal(af_intervals_parse_csv(good, strlen(good), &iv, &ids, &n, &err), 0);
    assert_int_equal(n, 2);
    af_free(iv);
    af_free(ids);
    const char *bad[] = {"id,lower,upper,size\n0,0,4\n", "id,lower,upper,size\n0,5,4,1\n",
                         "0,0,x,1\n", "0,0,4,-1\n", "0,0,4,1,2,3\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(af_intervals_parse_csv(bad[i], strlen(bad[i]), &iv, &ids, &n, &err),
                         AF_EPARSE);
        assert_non_null(strstr(err.msg, "line"));
    }
}

static void test_plan_safe_mode_has_no_reuse(void **state)
{
    (void)state;
    af_graph_t *g = load_example("diamond.json");
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.safe_mode = 1;
    af_plan_t *p;
    af_error_t err;
    assert_int_equal(af_plan_create(g, &o, &p, &err), 0);
    assert_int_equal(af_plan_report(p)->arena_bytes, af_plan_report(p)->naive_bytes);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_plan_strict_reuse_needs_no_edges(void **state)
{
    (void)state;
    double sum[2] = {0, 0};
    for (uint64_t seed = 1; seed <= N_DAGS / 4; seed++) {
        af_graph_t *g = rd_graph(seed + 11000, 200);
        assert_non_null(g);
        uint64_t arena[2];
        for (int strict = 0; strict < 2; strict++) {
            af_plan_opts_t o;
            af_plan_opts_init(&o);
            o.schedule = "input";
            o.parallel_reuse = strict ? AF_REUSE_STRICT : AF_REUSE_FENCE;
            af_plan_t *p;
            af_error_t err;
            if (af_plan_create(g, &o, &p, &err)) /* verify on: proves every reuse is ordered */
                fail_msg("seed %llu strict %d: %s", (unsigned long long)seed, strict, err.msg);
            if (strict)
                assert_int_equal(af_plan_reuse_edge_count(p), 0);
            arena[strict] = af_plan_arena_bytes(p);
            af_plan_destroy(p);
        }
        sum[0] += (double)arena[0];
        sum[1] += (double)arena[1];
        af_graph_destroy(g);
    }
    print_message("strict arena / fence arena over %d DAGs: %.3f\n", N_DAGS / 4, sum[1] / sum[0]);
}

/* x -> P -> a; a is read by N1 (-> c) and by N2, which writes b over a in place. N1 and N2 are
 * not ordered by data, so in fence mode N2 must wait for N1 (a reuse edge); in strict mode
 * the hand-over is not taken at all. */
static void test_plan_inplace_waits_for_other_readers(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    const char *names[] = {"x", "a", "b", "c"};
    for (int i = 0; i < 4; i++) {
        af_tensor_desc_t d = {0};
        d.name = names[i];
        d.bytes = 1024;
        d.rank = -1;
        d.kind = i == 0 ? AF_TENSOR_INPUT : (i >= 2 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE);
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
    }
    const char *px[] = {"x"}, *pa[] = {"a"}, *pb[] = {"b"}, *pc[] = {"c"};
    af_inplace_t hint = {0, 0};
    af_node_desc_t n0 = {"P", "Op", px, 1, pa, 1, 1, NULL, 0};
    af_node_desc_t n1 = {"N1", "Op", pa, 1, pc, 1, 1, NULL, 0};
    af_node_desc_t n2 = {"N2", "Relu", pa, 1, pb, 1, 1, &hint, 1};
    assert_int_equal(af_graph_add_node(g, &n0, NULL, NULL), 0);
    assert_int_equal(af_graph_add_node(g, &n1, NULL, NULL), 0);
    assert_int_equal(af_graph_add_node(g, &n2, NULL, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    int32_t b = af_graph_find_tensor(g, "b"), v1 = af_graph_find_node(g, "N1"),
            v2 = af_graph_find_node(g, "N2");
    for (int strict = 0; strict < 2; strict++) {
        af_plan_opts_t o;
        af_plan_opts_init(&o);
        o.schedule = "input";
        o.parallel_reuse = strict ? AF_REUSE_STRICT : AF_REUSE_FENCE;
        af_plan_t *p;
        af_error_t err;
        assert_int_equal(af_plan_create(g, &o, &p, &err), 0);
        if (!strict) {
            assert_int_equal(af_plan_tensor(p, b)->inplace_of, af_graph_find_tensor(g, "a"));
            int found = 0;
            for (int32_t e = 0; e < af_plan_reuse_edge_count(p); e++)
                found |= af_plan_reuse_edges(p)[e].from == v1 && af_plan_reuse_edges(p)[e].to == v2;
            assert_true(found);
        } else {
            assert_int_equal(af_plan_tensor(p, b)->inplace_of, -1);
        }
        af_plan_destroy(p);
    }
    af_graph_destroy(g);
}

static void test_plan_restore_round_trip_and_rejects_bad_offsets(void **state)
{
    (void)state;
    int rejected = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        af_graph_t *g = rd_graph(seed + 31000, 150);
        assert_non_null(g);
        af_plan_opts_t o;
        af_plan_opts_init(&o);
        af_plan_t *p, *q = NULL;
        af_error_t err;
        assert_int_equal(af_plan_create(g, &o, &p, &err), 0);
        int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
        uint64_t *off = malloc((size_t)nt * sizeof(uint64_t) + 8);
        for (int32_t t = 0; t < nt; t++)
            off[t] = af_plan_tensor(p, t)->offset;
        if (af_plan_restore(g, &o, af_plan_order(p), off, &q, &err))
            fail_msg("seed %llu: restore: %s", (unsigned long long)seed, err.msg);
        assert_int_equal(af_plan_arena_bytes(q), af_plan_arena_bytes(p));
        for (int32_t t = 0; t < nt; t++)
            assert_int_equal(af_plan_tensor(q, t)->offset, off[t]);
        assert_int_equal(af_plan_reuse_edge_count(q), af_plan_reuse_edge_count(p));
        af_plan_destroy(q);
        /* move one arena tensor onto another one live at the same time: must be refused */
        for (int32_t a = 0; a < nt; a++) {
            const af_tensor_plan_t *x = af_plan_tensor(p, a);
            int32_t b = -1;
            for (int32_t c = 0; c < nt && b < 0 && x->where == AF_WHERE_ARENA && x->bytes; c++) {
                const af_tensor_plan_t *y = af_plan_tensor(p, c);
                if (c != a && y->where == AF_WHERE_ARENA && y->bytes && x->inplace_of < 0 &&
                    y->inplace_of < 0 && x->first <= y->last && y->first <= x->last &&
                    af_plan_tensor(p, c)->offset != x->offset)
                    b = c;
            }
            if (b < 0)
                continue;
            uint64_t keep = off[a];
            off[a] = off[b];
            q = NULL;
            assert_int_not_equal(af_plan_restore(g, &o, af_plan_order(p), off, &q, &err), 0);
            assert_null(q);
            off[a] = keep;
            rejected++;
            break;
        }
        /* an order that is not topological is refused */
        if (nn >= 2) {
            int32_t *bad = malloc((size_t)nn * sizeof(int32_t));
            for (int32_t s = 0; s < nn; s++)
                bad[s] = af_plan_order(p)[nn - 1 - s];
            if (af_graph_node(g, bad[0])->n_preds > 0)
                assert_int_equal(af_plan_restore(g, &o, bad, off, &q, &err), AF_EINVAL);
            free(bad);
        }
        free(off);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
    assert_true(rejected > 100);
}

/* Hooks that keep a byte count of live blocks (a size header in front of each) and fill every
 * block with garbage when handed out and again when freed: a plan that reads memory it did not
 * write, or a block handed back to two owners, shows as a different or failing plan. */
static size_t poison_live, poison_big;

static void *poison_malloc(size_t n)
{
    unsigned char *b = malloc(n + 16);
    if (!b)
        return NULL;
    memcpy(b, &n, sizeof n);
    memset(b + 16, 0xa5, n);
    poison_live += n;
    poison_big += n >= ((size_t)1 << 20);
    return b + 16;
}

static void poison_free(void *p)
{
    if (!p)
        return;
    unsigned char *b = (unsigned char *)p - 16;
    size_t n;
    memcpy(&n, b, sizeof n);
    memset(p, 0x5a, n);
    poison_live -= n;
    free(b);
}

static void *poison_calloc(size_t c, size_t n)
{
    void *p = poison_malloc(c * n);
    return p ? memset(p, 0, c * n) : NULL;
}

static void *poison_realloc(void *p, size_t n)
{
    void *q = poison_malloc(n);
    if (q && p) {
        size_t old;
        memcpy(&old, (unsigned char *)p - 16, sizeof old);
        memcpy(q, p, old < n ? old : n);
        poison_free(p);
    }
    return q;
}

/* One plan is a scratch scope (big blocks a phase frees serve the next phase): with hooks that
 * poison every block, plans of a graph with many-MiB tables are the plans of the default
 * allocator, verify, and give every byte back at destroy (kept blocks too). */
static void test_plan_scratch_scope_gives_everything_back(void **state)
{
    (void)state;
    af_graph_t *g = NULL;
    af_error_t err;
    assert_int_equal(af_zoo_residual_chain(7, 60000, &g, &err), 0);
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    af_plan_t *ref = NULL;
    assert_int_equal(af_plan_create(g, &o, &ref, &err), 0);
    af_replace_allocator(poison_malloc, poison_realloc, poison_calloc, poison_free);
    for (int round = 0; round < 2; round++) {
        o.schedule = round ? "input" : "best";
        af_plan_t *p = NULL;
        poison_big = 0;
        int rc = af_plan_create(g, &o, &p, &err);
        assert_int_equal(rc, 0);
        assert_true(poison_big > 0); /* the graph is big enough to use the scope */
        if (round == 0) {
            assert_int_equal(af_plan_arena_bytes(p), af_plan_arena_bytes(ref));
            for (int32_t t = 0; t < af_graph_tensor_count(g); t++)
                assert_int_equal(af_plan_tensor(p, t)->offset, af_plan_tensor(ref, t)->offset);
        }
        assert_int_equal(af_plan_verify(p, &err), 0);
        af_plan_destroy(p);
        assert_int_equal(poison_live, 0);
    }
    af_reset_allocator();
    af_plan_destroy(ref);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_opts_reject_bad_values),
        cmocka_unit_test(test_plan_intervals_verify_catches_overlap),
        cmocka_unit_test(test_plan_place_known_optimum),
        cmocka_unit_test(test_plan_csv_parse_errors),
        cmocka_unit_test(test_plan_seed2_lifetimes_and_peak),
        cmocka_unit_test(test_plan_budget_error_names_step_and_tensors),
        cmocka_unit_test(test_plan_safe_mode_has_no_reuse),
        cmocka_unit_test(test_plan_verifier_catches_shifted_offset),
        cmocka_unit_test(test_plan_lifetimes_match_brute_force),
        cmocka_unit_test(test_plan_event_table_replays),
        cmocka_unit_test(test_plan_portfolio_never_worse_than_greedy),
        cmocka_unit_test(test_plan_strict_reuse_needs_no_edges),
        cmocka_unit_test(test_plan_inplace_waits_for_other_readers),
        cmocka_unit_test(test_plan_restore_round_trip_and_rejects_bad_offsets),
        cmocka_unit_test(test_plan_random_dags_verify_all_algorithms),
        cmocka_unit_test(test_plan_scratch_scope_gives_everything_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
