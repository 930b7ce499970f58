/*
 * The interval orders the placers share: by start (lower ascending, size descending, id), by a
 * key descending (key, size descending, lower, id) and by end (upper, id; or upper, lower, id),
 * each a sequence of stable radix sorts from the least significant key up (common/sort.c), so ties
 * fall back to the interval index as the qsort comparators they replaced did.
 *
 * Lock rule: none; reentrant.
 */
#include "pack/pack_int.h"

int af__kv_pair(size_t n, af__kv_t **kv, af__kv_t **tmp)
{
    *kv = af__malloc((n + 1) * sizeof(**kv));
    *tmp = af__malloc((n + 1) * sizeof(**tmp));
    if (*kv && *tmp)
        return 0;
    af__free(*kv);
    af__free(*tmp);
    *kv = *tmp = NULL;
    return AF_ENOMEM;
}

/* Ids 0..n-1 into kv (keys set by the caller), sorted, then copied out. */
static void ids_out(const af__kv_t *kv, size_t n, int32_t *ids)
{
    for (size_t i = 0; i < n; i++)
        ids[i] = kv[i].id;
}

int af__sort_by_start(const af_interval_t *iv, const uint64_t *sz, size_t n, int32_t *ids)
{
    af__kv_t *kv, *tmp;
    if (af__kv_pair(n, &kv, &tmp))
        return AF_ENOMEM;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    uint64_t most = 0;
    for (size_t i = 0; i < n; i++) {
        lo = iv[i].lower < lo ? iv[i].lower : lo;
        hi = iv[i].lower > hi ? iv[i].lower : hi;
        most = sz[i] > most ? sz[i] : most;
    }
    int lbits = n && hi > lo ? 64 - __builtin_clzll((uint64_t)hi - (uint64_t)lo) : 0;
    int sbits = most ? 64 - __builtin_clzll(most) : 0;
    if (lbits + sbits <= 64) {
        /* (lower, size descending) in one key: one sort, none when the ids come in that order */
        for (size_t i = 0; i < n; i++) {
            uint64_t l = (uint64_t)iv[i].lower - (uint64_t)lo;
            kv[i] = (af__kv_t){(sbits == 64 ? 0 : l << sbits) | (most - sz[i]), (int32_t)i};
        }
        af__sort_kv(kv, n, tmp);
    } else {
        for (size_t i = 0; i < n; i++)
            kv[i] = (af__kv_t){af__key_desc(sz[i]), (int32_t)i};
        af__sort_kv(kv, n, tmp);
        for (size_t i = 0; i < n; i++)
            kv[i].key = af__key_i64(iv[kv[i].id].lower);
        af__sort_kv(kv, n, tmp);
    }
    ids_out(kv, n, ids);
    af__free(kv);
    af__free(tmp);
    return 0;
}

int af__sort_by_key_desc(const af_interval_t *iv, const uint64_t *sz, const uint64_t *key, size_t n,
                         int32_t *ids)
{
    af__kv_t *kv, *tmp;
    if (af__kv_pair(n, &kv, &tmp))
        return AF_ENOMEM;
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){af__key_i64(iv[i].lower), (int32_t)i};
    af__sort_kv(kv, n, tmp);
    for (size_t i = 0; i < n; i++)
        kv[i].key = af__key_desc(sz[kv[i].id]);
    af__sort_kv(kv, n, tmp);
    if (key) {
        for (size_t i = 0; i < n; i++)
            kv[i].key = af__key_desc(key[kv[i].id]);
        af__sort_kv(kv, n, tmp);
    }
    ids_out(kv, n, ids);
    af__free(kv);
    af__free(tmp);
    return 0;
}

int af__sort_by_end(const af_interval_t *iv, size_t n, int then_lower, int32_t *ids)
{
    af__kv_t *kv, *tmp;
    if (af__kv_pair(n, &kv, &tmp))
        return AF_ENOMEM;
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){af__key_i64(then_lower ? iv[i].lower : iv[i].upper), (int32_t)i};
    af__sort_kv(kv, n, tmp);
    if (then_lower) {
        for (size_t i = 0; i < n; i++)
            kv[i].key = af__key_i64(iv[kv[i].id].upper);
        af__sort_kv(kv, n, tmp);
    }
    ids_out(kv, n, ids);
    af__free(kv);
    af__free(tmp);
    return 0;
}
