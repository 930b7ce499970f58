/*
 * Integer-key sorting shared by the planner files (planner/sort.c): a stable LSD radix sort of
 * (key, id) pairs, used instead of qsort with comparator callbacks.
 */
#ifndef ARENAFLOW_SORT_INT_H
#define ARENAFLOW_SORT_INT_H

#include "arenaflow/plan.h"
#include "common/common_int.h"

typedef struct af__kv {
    uint64_t key;
    int32_t id;
} af__kv_t;

/* Order-preserving maps of signed and descending keys onto unsigned ascending ones. */
static inline uint64_t af__key_i64(int64_t x)
{
    return (uint64_t)x ^ (1ull << 63);
}
static inline uint64_t af__key_desc(uint64_t x)
{
    return ~x;
}

/*
 * Stable sort of v[0..n) by key, ascending (LSD radix). tmp: scratch of n entries, or NULL to
 * allocate it. Returns 0 or AF_ENOMEM (only when tmp is NULL). Several keys: sort by the least
 * significant first.
 */
int af__sort_kv(af__kv_t *v, size_t n, af__kv_t *tmp);
/* Stable sort of ids[0..n) by key[id], ascending; kv and tmp: scratch of n entries each, or
 * NULL to allocate. Returns 0 or AF_ENOMEM. */
int af__sort_ids(int32_t *ids, size_t n, const uint64_t *key, af__kv_t *kv, af__kv_t *tmp);

/* Stable counting sort of ids[0..n) by key[i] (the key of ids[i]), keys in [0, range): returns
 * AF_EINVAL with ids untouched when a key is outside, AF_ENOMEM when out of memory, else 0. */
int af__sort_counting(int32_t *ids, const int32_t *key, size_t n, int32_t range);

/* Interval ids 0..n-1 by (lower ascending, sz descending, id): the placers' start order. */
int af__sort_by_start(const af_interval_t *iv, const uint64_t *sz, size_t n, int32_t *ids);
/* Interval ids 0..n-1 by (upper, id), or (upper, lower, id) when then_lower. 0 or AF_ENOMEM. */
int af__sort_by_end(const af_interval_t *iv, size_t n, int then_lower, int32_t *ids);

#endif
