/*
 * The verifiers. af_intervals_verify() (pack/verify.c: a sweep over steps with the live set in a
 * bitmap over offset ranks) against the definition: a packing is valid iff no two intervals that
 * overlap in time overlap in bytes — random packings, valid ones (built so) and broken ones (one
 * interval moved), with live sets from a few members to thousands, so every level of the bitmap
 * is used. af_plan_verify() by mutation: for each of its checks, a plan broken the way a buggy
 * planner would break it (af_plan_debug_break) must be refused by that check; a dropped reuse
 * edge must be refused exactly when no other data/reuse path orders its two nodes (an oracle in
 * this file decides). Fixed-seed PRNGs; the seed is printed on failure.
 */
#include "arenaflow/pack.h"
#include "arenaflow/plan.h"
#include "tests/randdag.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* First pair (i < j) overlapping in time and bytes, or -1. */
static int pairwise_conflict(const af_interval_t *iv, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (iv[i].size && iv[j].size && iv[i].lower < iv[j].upper &&
                iv[j].lower < iv[i].upper && iv[i].offset < iv[j].offset + iv[j].size &&
                iv[j].offset < iv[i].offset + iv[i].size)
                return 1;
    return 0;
}

/* A valid packing: intervals stacked in columns, each column reused only after its tenant
 * ended; `cols` columns of random widths. */
static void make_packing(af_interval_t *iv, size_t n, size_t cols, int64_t span)
{
    uint64_t *col_off = malloc(cols * sizeof(*col_off));
    int64_t *col_free = calloc(cols, sizeof(*col_free));
    uint64_t top = 0;
    for (size_t c = 0; c < cols; c++) {
        col_off[c] = top;
        top += 256 * (1 + next() % 8);
    }
    for (size_t i = 0; i < n; i++) {
        size_t c = next() % cols;
        int64_t lo = col_free[c] + (int64_t)(next() % 3);
        int64_t len = 1 + (int64_t)(next() % (uint64_t)span);
        uint64_t width = (c + 1 < cols ? col_off[c + 1] : top) - col_off[c];
        iv[i] = (af_interval_t){
            .lower = lo, .upper = lo + len, .size = 1 + next() % width, .offset = col_off[c]};
        col_free[c] = lo + len;
    }
    free(col_off);
    free(col_free);
}

static void test_verify_intervals_match_pairwise_check(void **state)
{
    (void)state;
    int conflicts = 0;
    for (int round = 0; round < 120; round++) {
        uint64_t seed = rng;
        size_t n = round < 100 ? 2 + next() % 200 : 2000 + next() % 3000;
        size_t cols = 1 + next() % (round >= 100 ? 6000 : round % 3 == 0 ? 4 : 400);
        af_interval_t *iv = malloc(n * sizeof(*iv));
        make_packing(iv, n, cols, 1 + (int64_t)(next() % 40));
        if (round % 2) { /* move one interval somewhere else: often a conflict */
            size_t k = next() % n, o = next() % n;
            iv[k].offset = iv[o].offset + (next() % 2 ? 0 : iv[o].size / 2);
        }
        uint64_t height = 0;
        for (size_t i = 0; i < n; i++)
            height = iv[i].offset + iv[i].size > height ? iv[i].offset + iv[i].size : height;
        int want = pairwise_conflict(iv, n);
        conflicts += want;
        int got = af_intervals_verify(iv, n, height, 1, NULL) == AF_EVERIFY;
        if (got != want) {
            print_error("seed %llx round %d n %zu: verify says %s, pairwise check says %s\n",
                        (unsigned long long)seed, round, n, got ? "conflict" : "valid",
                        want ? "conflict" : "valid");
            fail();
        }
        free(iv);
    }
    assert_true(conflicts >= 20 && conflicts <= 100); /* both answers are exercised */
}

/* ---- mutation tests of af_plan_verify --------------------------------------------------- */

static af_plan_t *plan_of(const af_graph_t *g)
{
    af_plan_t *p = NULL;
    af_error_t err;
    if (af_plan_create(g, NULL, &p, &err))
        fail_msg("planning failed: %s", err.msg);
    return p;
}

/* Breaks a fresh plan of g one way and expects the verifier to refuse it with `phrase`. */
static void expect_caught(const af_graph_t *g, af_plan_break_t how, int32_t a, int32_t b,
                          const char *phrase, uint64_t seed)
{
    af_plan_t *p = plan_of(g);
    af_error_t err;
    assert_int_equal(af_plan_debug_break(p, how, a, b), 0);
    int rc = af_plan_verify(p, &err);
    if (rc != AF_EVERIFY || !strstr(err.msg, phrase))
        fail_msg("seed %llu, break %d (%d, %d): verifier said %d '%s', wanted '%s'",
                 (unsigned long long)seed, (int)how, a, b, rc, rc ? err.msg : "", phrase);
    af_plan_destroy(p);
}

/* True use range of tensor t in plan p (producer and consumer steps), as the verifier's own. */
static int32_t last_use(const af_graph_t *g, const af_plan_t *p, int32_t t)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    int32_t hi = ti->producer >= 0 ? af_plan_step_of(p, ti->producer) : -1;
    for (int32_t k = 0; k < ti->n_consumers; k++) {
        int32_t s = af_plan_step_of(p, ti->consumers[k]);
        hi = s > hi ? s : hi;
    }
    return ti->kind == AF_TENSOR_OUTPUT ? af_graph_node_count(g) - 1 : hi;
}

/* The breaks of one graph's plan that apply, each caught by its check. Counts what it did. */
static void break_one_graph(const af_graph_t *g, uint64_t seed, int *done)
{
    af_plan_t *p = plan_of(g);
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    char *has_view = calloc((size_t)nt, 1); /* a moved base would fail its views' check first */
    for (int32_t t = 0; t < nt; t++) {      /* ... and a moved donor its taker's hand-over */
        has_view[af_graph_alias_root(g, t)] |= af_graph_alias_root(g, t) != t;
        if (af_plan_tensor(p, t)->inplace_of >= 0)
            has_view[af_plan_tensor(p, t)->inplace_of] = 1;
    }
    for (int32_t v = 0; v < nn; v++)
        if (af_graph_node(g, v)->n_preds) { /* a node and its predecessor trade places */
            expect_caught(g, AF_PLAN_BREAK_ORDER, af_graph_node(g, v)->preds[0], v,
                          "runs before its predecessor", seed);
            done[AF_PLAN_BREAK_ORDER]++;
        }
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_plan_t *x = af_plan_tensor(p, t);
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (x->where == AF_WHERE_ALIAS &&
            af_plan_tensor(p, af_graph_alias_root(g, t))->where == AF_WHERE_ARENA) {
            expect_caught(g, AF_PLAN_BREAK_VIEW, t, 0, "is not inside its base", seed);
            done[AF_PLAN_BREAK_VIEW]++;
        }
        if (x->where != AF_WHERE_ARENA || x->bytes == 0 || x->first < 0 || ti->bytes <= 1)
            continue;
        expect_caught(g, AF_PLAN_BREAK_BYTES, t, 0, "reserves", seed);
        expect_caught(g, AF_PLAN_BREAK_ALIGN, t, 0, "-aligned", seed);
        expect_caught(g, AF_PLAN_BREAK_BOUNDS, t, 0, "outside the arena", seed);
        done[AF_PLAN_BREAK_BYTES]++, done[AF_PLAN_BREAK_ALIGN]++, done[AF_PLAN_BREAK_BOUNDS]++;
        if (x->last > x->first && x->last == last_use(g, p, t)) {
            expect_caught(g, AF_PLAN_BREAK_LIFETIME, t, 0, "planned live only", seed);
            done[AF_PLAN_BREAK_LIFETIME]++;
        }
        for (int32_t u = 0; u < nt && !has_view[t]; u++) { /* another tensor live with it */
            const af_tensor_plan_t *y = af_plan_tensor(p, u);
            if (u == t || y->where != AF_WHERE_ARENA || y->bytes < x->bytes || y->first < 0 ||
                y->offset == x->offset || y->first > x->last || x->first > y->last ||
                x->inplace_of >= 0 || y->inplace_of >= 0)
                continue;
            expect_caught(g, AF_PLAN_BREAK_OVERLAP, t, u, "share bytes", seed);
            expect_caught(g, AF_PLAN_BREAK_INPLACE, t, u, "claims an in-place hand-over", seed);
            done[AF_PLAN_BREAK_OVERLAP]++, done[AF_PLAN_BREAK_INPLACE]++;
            break;
        }
    }
    for (int32_t e = 0; e < af_plan_reuse_edge_count(p); e++) {
        expect_caught(g, AF_PLAN_BREAK_EDGE_DIR, e, 0, "runs against the order", seed);
        done[AF_PLAN_BREAK_EDGE_DIR]++;
    }
    free(has_view);
    af_plan_destroy(p);
}

/* Is `to` reachable from r over data edges and the plan's reuse edges but edge `skip`? */
static int reaches(const af_graph_t *g, const af_plan_t *p, int32_t r, int32_t to, int32_t skip)
{
    int32_t nn = af_graph_node_count(g), *seen = calloc((size_t)nn, sizeof(int32_t));
    int32_t *stack = malloc((size_t)nn * sizeof(int32_t)), sp = 0, found = 0;
    const af_reuse_edge_t *re = af_plan_reuse_edges(p);
    stack[sp++] = r;
    seen[r] = 1;
    while (sp && !found) {
        int32_t u = stack[--sp];
        found = u == to;
        const af_node_info_t *nd = af_graph_node(g, u);
        for (int32_t k = 0; k < nd->n_succs; k++)
            if (!seen[nd->succs[k]]++)
                stack[sp++] = nd->succs[k];
        for (int32_t e = 0; e < af_plan_reuse_edge_count(p); e++)
            if (e != skip && re[e].from == u && !seen[re[e].to]++)
                stack[sp++] = re[e].to;
    }
    free(seen);
    free(stack);
    return found;
}

static void test_verify_each_check_catches_its_break(void **state)
{
    (void)state;
    int done[AF_PLAN_BREAK_EDGE_DIR + 1] = {0}, dropped = 0, implied = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        af_graph_t *g = rd_graph(seed + 700, 40);
        assert_non_null(g);
        break_one_graph(g, seed, done);
        /* every reuse edge dropped in turn: refused unless another path still orders the pair */
        af_plan_t *p = plan_of(g);
        for (int32_t e = 0; e < af_plan_reuse_edge_count(p); e++) {
            af_reuse_edge_t x = af_plan_reuse_edges(p)[e];
            int need = !reaches(g, p, x.from, x.to, e);
            af_plan_t *q = plan_of(g);
            af_error_t err;
            assert_int_equal(af_plan_debug_break(q, AF_PLAN_BREAK_EDGE, e, 0), 0);
            int rc = af_plan_verify(q, &err);
            if (need && (rc != AF_EVERIFY || !strstr(err.msg, "missing reuse edge")))
                fail_msg("seed %llu: edge %d dropped, verifier said %d", (unsigned long long)seed,
                         e, rc);
            if (!need && rc)
                fail_msg("seed %llu: edge %d is implied by others, yet: %s",
                         (unsigned long long)seed, e, err.msg);
            dropped += need;
            implied += !need;
            af_plan_destroy(q);
        }
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
    printf("breaks caught: order %d, lifetime %d, bytes %d, align %d, bounds %d, view %d, "
           "overlap %d, in-place %d, edge direction %d; dropped edges refused %d (implied by "
           "others, accepted: %d)\n",
           done[0], done[1], done[2], done[3], done[4], done[5], done[6], done[7], done[9], dropped,
           implied);
    for (int k = 0; k <= AF_PLAN_BREAK_EDGE_DIR; k++)
        if (k != AF_PLAN_BREAK_EDGE && !done[k])
            fail_msg("no graph exercised break %d", k);
    assert_true(dropped > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_intervals_match_pairwise_check),
        cmocka_unit_test(test_verify_each_check_catches_its_break),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
