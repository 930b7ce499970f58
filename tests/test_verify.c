/*
 * af_intervals_verify() (planner/verify.c: a sweep over steps with the live set in a bitmap
 * over offset ranks) against the definition: a packing is valid iff no two intervals that
 * overlap in time overlap in bytes. Random packings, valid ones (built so) and broken ones (one
 * interval moved), with live sets from a few members to thousands, so every level of the bitmap
 * is used. Fixed-seed PRNG; the seed is printed on failure.
 */
#include "arenaflow/pack.h"
#include "arenaflow/plan.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_intervals_match_pairwise_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
