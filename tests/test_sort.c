/*
 * common/sort.c (and the interval orders of pack/order.c) and the lower bound built on it: the
 * radix sort must give exactly the order of the comparator sorts it replaced (key, then input
 * position), on keys of every shape, and af_intervals_lower_bound() must equal the max
 * cross-section computed the slow way; the packing engine's length-class index finds what its
 * segment tree finds. Property tests over a fixed-seed PRNG; the seed and case are
 * printed on failure.
 */
#include "pack/pack_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef struct {
    uint64_t key;
    int32_t pos;
} ref_t;

static int cmp_ref(const void *a, const void *b)
{
    const ref_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* A key of one of several shapes: tiny range, aligned sizes, steps, full 64-bit, constant. */
static uint64_t draw_key(int shape)
{
    switch (shape) {
    case 0:
        return next() % 4;
    case 1:
        return (next() % 4096) * 256;
    case 2:
        return next() % 1000003;
    case 3:
        return next();
    case 4:
        return 42;
    default:
        return af__key_i64((int64_t)(next() % 2001) - 1000);
    }
}

static void test_sort_kv_matches_comparator_sort(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 5, 31, 32, 33, 100, 257, 1000, 4097, 70000};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (int shape = 0; shape < 8; shape++) {
            uint64_t seed = rng;
            size_t n = sizes[si];
            af__kv_t *kv = malloc((n + 1) * sizeof(*kv));
            ref_t *ref = malloc((n + 1) * sizeof(*ref));
            for (size_t i = 0; i < n; i++) {
                /* ids in a scrambled order: stability is about input position, not id; shapes
                 * 6 and 7 come already in order (with repeats), 7 with one key out of place */
                uint64_t key = shape < 6 ? draw_key(shape) : (uint64_t)i / 3 * 1000;
                if (shape == 7 && i == n / 2)
                    key = next() % 1000;
                kv[i] = (af__kv_t){key, (int32_t)((i * 7919) % (n ? n : 1))};
                ref[i] = (ref_t){kv[i].key, (int32_t)i};
            }
            af__kv_t *orig = malloc((n + 1) * sizeof(*orig));
            memcpy(orig, kv, n * sizeof(*kv));
            assert_int_equal(af__sort_kv(kv, n, NULL), 0);
            qsort(ref, n, sizeof(*ref), cmp_ref);
            for (size_t i = 0; i < n; i++) {
                if (kv[i].key != ref[i].key || kv[i].id != orig[ref[i].pos].id) {
                    print_error("seed %llx n %zu shape %d: position %zu differs\n",
                                (unsigned long long)seed, n, shape, i);
                    fail();
                }
            }
            free(kv);
            free(ref);
            free(orig);
        }
    }
}

static void test_sort_counting_matches_comparator_sort(void **state)
{
    (void)state;
    for (int round = 0; round < 50; round++) {
        uint64_t seed = rng;
        size_t n = next() % 3000;
        int32_t range = 1 + (int32_t)(next() % (round % 2 ? 10 : 5000));
        int32_t *ids = malloc((n + 1) * sizeof(*ids)), *key = malloc((n + 1) * sizeof(*key));
        ref_t *ref = malloc((n + 1) * sizeof(*ref));
        for (size_t i = 0; i < n; i++) {
            ids[i] = (int32_t)(next() % 100000);
            key[i] = (int32_t)(next() % (uint64_t)range);
            if (round % 3 == 2) /* keys already in order (the sort leaves the ids as they are) */
                key[i] = (int32_t)((uint64_t)range * i / (n ? n : 1));
            ref[i] = (ref_t){(uint64_t)key[i], (int32_t)i};
        }
        int32_t *orig = malloc((n + 1) * sizeof(*orig));
        memcpy(orig, ids, n * sizeof(*ids));
        assert_int_equal(af__sort_counting(ids, key, n, range), 0);
        qsort(ref, n, sizeof(*ref), cmp_ref);
        for (size_t i = 0; i < n; i++)
            if (ids[i] != orig[ref[i].pos]) {
                print_error("seed %llx n %zu range %d: position %zu differs\n",
                            (unsigned long long)seed, n, range, i);
                fail();
            }
        if (n) { /* a key out of range: refused, ids untouched */
            memcpy(ids, orig, n * sizeof(*ids));
            key[n / 2] = range;
            assert_int_equal(af__sort_counting(ids, key, n, range), AF_EINVAL);
            assert_memory_equal(ids, orig, n * sizeof(*ids));
        }
        free(ids);
        free(key);
        free(ref);
        free(orig);
    }
}

typedef struct {
    const af_interval_t *iv;
    const uint64_t *sz;
    int by_end, then_lower;
} ictx_t;

static const ictx_t *ictx;

static int cmp_iv(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const af_interval_t *iv = ictx->iv;
    if (ictx->by_end) {
        if (iv[x].upper != iv[y].upper)
            return iv[x].upper < iv[y].upper ? -1 : 1;
        if (ictx->then_lower && iv[x].lower != iv[y].lower)
            return iv[x].lower < iv[y].lower ? -1 : 1;
    } else {
        if (iv[x].lower != iv[y].lower)
            return iv[x].lower < iv[y].lower ? -1 : 1;
        if (ictx->sz[x] != ictx->sz[y])
            return ictx->sz[x] > ictx->sz[y] ? -1 : 1;
    }
    return (x > y) - (x < y);
}

static void test_sort_interval_orders_match_comparators(void **state)
{
    (void)state;
    for (int round = 0; round < 60; round++) {
        uint64_t seed = rng;
        size_t n = 1 + next() % (round < 50 ? 300 : 20000);
        int64_t span = round % 3 == 0 ? 8 : (round % 3 == 1 ? 1000 : INT64_MAX / 4);
        af_interval_t *iv = malloc(n * sizeof(*iv));
        uint64_t *sz = malloc(n * sizeof(*sz));
        int32_t *got = malloc(n * sizeof(*got)), *want = malloc(n * sizeof(*want));
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(next() % (uint64_t)span) - span / 2;
            iv[i] = (af_interval_t){.lower = lo, .upper = lo + 1 + (int64_t)(next() % 50)};
            sz[i] = (next() % 5) * 256;
        }
        for (int mode = 0; mode < 3; mode++) {
            ictx_t c = {iv, sz, mode > 0, mode == 2};
            ictx = &c;
            for (size_t i = 0; i < n; i++)
                want[i] = (int32_t)i;
            qsort(want, n, sizeof(*want), cmp_iv);
            int rc = mode == 0 ? af__sort_by_start(iv, sz, n, got)
                               : af__sort_by_end(iv, n, mode == 2, got);
            assert_int_equal(rc, 0);
            if (memcmp(got, want, n * sizeof(*got))) {
                print_error("seed %llx n %zu mode %d: orders differ\n", (unsigned long long)seed, n,
                            mode);
                fail();
            }
        }
        free(iv);
        free(sz);
        free(got);
        free(want);
    }
}

/* Max cross-section by brute force over every start point (intervals are [lower, upper)). */
static uint64_t slow_bound(const af_interval_t *iv, size_t n, uint64_t a)
{
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t sum = 0;
        for (size_t j = 0; j < n; j++)
            if (iv[j].lower <= iv[i].lower && iv[i].lower < iv[j].upper)
                sum += (iv[j].size + a - 1) / a * a;
        best = sum > best ? sum : best;
    }
    return best;
}

static void test_sort_lower_bound_equals_max_cross_section(void **state)
{
    (void)state;
    for (int round = 0; round < 400; round++) {
        uint64_t seed = rng;
        size_t n = next() % 120;
        /* short time ranges take the array path, huge ones the sorted path */
        int64_t span = round % 2 ? 50 : (int64_t)1 << 60;
        af_interval_t *iv = malloc((n + 1) * sizeof(*iv));
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(next() % (uint64_t)span) - span / 2;
            int64_t len = round % 2 ? 1 + (int64_t)(next() % 20) : 1 + (int64_t)(next() >> 5);
            iv[i] = (af_interval_t){.lower = lo, .upper = lo + len, .size = next() % 10000};
        }
        uint64_t a = round % 3 ? 256 : 1;
        uint64_t got = af_intervals_lower_bound(iv, n, a), want = slow_bound(iv, n, a);
        if (got != want) {
            print_error("seed %llx round %d n %zu: bound %llu, expected %llu\n",
                        (unsigned long long)seed, round, n, (unsigned long long)got,
                        (unsigned long long)want);
            fail();
        }
        free(iv);
    }
}

/* The engine's length-class index (long thin instances) must find the same overlapping placed
 * intervals as its segment tree, whatever the order of the queries (the class scan starts from
 * where the last one began): the two give the same offsets, and the packing is valid. */
static void test_engine_class_index_matches_tree(void **state)
{
    (void)state;
    for (int round = 0; round < 4; round++) {
        uint64_t seed = rng;
        size_t n = 20000;
        af_interval_t *iv = malloc(n * sizeof(*iv)), *a = malloc(n * sizeof(*a));
        af_interval_t *b = malloc(n * sizeof(*b));
        uint64_t *sz = malloc(n * sizeof(*sz));
        int32_t *ord = malloc(n * sizeof(*ord));
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(i / 2) + (int64_t)(next() % 3);
            int64_t len = i % 2000 == 7 ? 5000 : 1 + (int64_t)(next() % 8);
            iv[i] = (af_interval_t){.lower = lo, .upper = lo + len, .size = 1 + next() % 1000};
            sz[i] = iv[i].size;
        }
        af__engine_t e;
        assert_int_equal(af__engine_init(&e, iv, n, sz), 0);
        assert_true(e.use_classes);
        for (size_t i = 0; i < n; i++) /* by start, by start reversed, then scrambled */
            ord[i] = round == 0   ? e.by_start[i]
                     : round == 1 ? e.by_start[n - 1 - i]
                                  : (int32_t)((i * 7919 + (size_t)round) % n);
        memcpy(a, iv, n * sizeof(*iv));
        memcpy(b, iv, n * sizeof(*iv));
        uint64_t ha = af__engine_place(&e, a, ord, round % 2, UINT64_MAX);
        e.use_classes = 0;
        uint64_t hb = af__engine_place(&e, b, ord, round % 2, UINT64_MAX);
        e.use_classes = 1;
        af__engine_free(&e);
        for (size_t i = 0; i < n; i++)
            if (a[i].offset != b[i].offset) {
                print_error("seed %llx round %d: interval %zu at %llu (classes), %llu (tree)\n",
                            (unsigned long long)seed, round, i, (unsigned long long)a[i].offset,
                            (unsigned long long)b[i].offset);
                fail();
            }
        assert_int_equal(ha, hb);
        assert_int_equal(af_intervals_verify(a, n, ha, 1, NULL), 0);
        free(iv);
        free(a);
        free(b);
        free(sz);
        free(ord);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_kv_matches_comparator_sort),
        cmocka_unit_test(test_sort_counting_matches_comparator_sort),
        cmocka_unit_test(test_sort_interval_orders_match_comparators),
        cmocka_unit_test(test_sort_lower_bound_equals_max_cross_section),
        cmocka_unit_test(test_engine_class_index_matches_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
