/*
 * Helpers shared by the pool tests (test_pool*.c): a fixed-seed PRNG, log-uniform sizes, a
 * content pattern written into blocks and checked later, pool creation that fails the test with
 * the pool's message, and the resident set size. Include after <cmocka.h>.
 */
#ifndef ARENAFLOW_TESTS_POOL_TESTUTIL_H
#define ARENAFLOW_TESTS_POOL_TESTUTIL_H

#include "arenaflow/pool.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Sanitizer builds run fewer operations: each is several times slower. */
#if defined(AF_ASAN_BUILD) || defined(AF_TSAN_BUILD)
#define SCALE 4
#else
#define SCALE 1
#endif

/* xorshift64*: fixed seeds, so a failing case is reproducible from its printed seed. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Log-uniform size in [lo, hi]. */
static inline size_t rng_size(uint64_t *s, size_t lo, size_t hi)
{
    double a = __builtin_log((double)lo), b = __builtin_log((double)hi);
    double u = (double)(rng_next(s) >> 11) / 9007199254740992.0;
    size_t v = (size_t)__builtin_exp(a + (b - a) * u);
    return v < lo ? lo : v > hi ? hi : v;
}

/* Pattern: one word per 4 KiB page plus the last word (bytes below 8: every byte). */
static inline void fill(void *p, size_t size, uint64_t id)
{
    unsigned char *c = p;
    for (size_t off = 0; off + 8 <= size; off += 4096)
        memcpy(c + off, &(uint64_t){id * 0x9E3779B97F4A7C15ull + off}, 8);
    if (size >= 8)
        memcpy(c + size - 8, &(uint64_t){~id}, 8);
    else
        memset(c, (int)(id & 0xff), size);
}

/* 1 when the block still holds fill(p, size, id)'s pattern. */
static inline int check(const void *p, size_t size, uint64_t id)
{
    const unsigned char *c = p;
    uint64_t w;
    if (size < 8) {
        for (size_t i = 0; i < size; i++)
            if (c[i] != (unsigned char)(id & 0xff))
                return 0;
        return 1;
    }
    for (size_t off = 0; off + 8 <= size - 8; off += 4096) {
        memcpy(&w, c + off, 8);
        if (w != id * 0x9E3779B97F4A7C15ull + off)
            return 0;
    }
    memcpy(&w, c + size - 8, 8);
    return w == ~id;
}

static inline af_pool_t *make_pool(const af_pool_opts_t *o)
{
    af_pool_t *p = NULL;
    af_error_t err = {0};
    int rc = af_pool_create(o, &p, &err);
    if (rc)
        fprintf(stderr, "af_pool_create: %s (%s)\n", af_strerror(rc), err.msg);
    assert_int_equal(rc, 0);
    return p;
}

/* Resident pages of this process (/proc/self/statm), 0 if unreadable. */
static inline long rss_pages(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res;
}

#endif
