/*
 * Integer-key sorting shared by the planner files (planner/sort.c): a stable LSD radix sort of
 * (key, id) pairs, used instead of qsort with comparator callbacks.
 */
#ifndef ARENAFLOW_SORT_INT_H
#define ARENAFLOW_SORT_INT_H

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

#endif
