/*
 * Integer-key sorting for the library: one stable LSD radix sort of (key, id) pairs that the
 * planner and the packer use instead of qsort with a comparator callback on integer keys.
 *
 * Algorithm. The keys' bits that differ between at least two keys are found first (OR ^ AND of
 * all keys); only that bit range is sorted, in passes of d bits, least significant digit
 * first, each a counting pass plus a stable scatter into the other buffer. d grows with n (small
 * arrays would pay for clearing big histograms) and never exceeds 11 bits (2,048 counters stay
 * in L1). Short arrays use a stable insertion sort; keys already in order (the planner's
 * intervals often come in start order) are found in the first pass and left as they are.
 *
 * Invariants: stable (equal keys keep their input order), so a sort on several keys is a
 * sequence of sorts from the least significant key to the most significant, and a comparator
 * ending in "then by id" is reproduced by starting from ids in increasing order. The result is
 * therefore the same total order the qsort comparators it replaces defined, element for
 * element.
 *
 * Lock rule: none; reentrant (no global state).
 */
#include "common/common_int.h"

#include <string.h>

#define INSERTION_MAX 32
#define MAX_DIGIT_BITS 11

static void insertion(af__kv_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        af__kv_t x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1].key > x.key) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

int af__sort_kv(af__kv_t *v, size_t n, af__kv_t *tmp)
{
    if (n <= INSERTION_MAX) {
        insertion(v, n);
        return 0;
    }
    uint64_t any = 0, all = ~0ull;
    size_t descents = 0; /* keys already in order (a stable sort leaves them) cost this pass only */
    for (size_t i = 0; i < n; i++) {
        any |= v[i].key;
        all &= v[i].key;
        descents += i > 0 && v[i - 1].key > v[i].key;
    }
    uint64_t diff = any ^ all;
    if (!diff || !descents)
        return 0;
    int lo = __builtin_ctzll(diff), bits = 64 - __builtin_clzll(diff) - lo;
    int dmax = 4;
    while (dmax < MAX_DIGIT_BITS && ((size_t)1 << (dmax + 1)) <= n)
        dmax++;
    int passes = (bits + dmax - 1) / dmax, d = (bits + passes - 1) / passes;
    size_t nb = (size_t)1 << d, mask = nb - 1;
    af__kv_t *own = NULL;
    if (!tmp && !(tmp = own = af__malloc(n * sizeof(*tmp))))
        return AF_ENOMEM;
    size_t cnt[(size_t)1 << MAX_DIGIT_BITS];
    af__kv_t *src = v, *dst = tmp;
    for (int p = 0; p < passes; p++) {
        int shift = lo + p * d;
        memset(cnt, 0, nb * sizeof(cnt[0]));
        for (size_t i = 0; i < n; i++)
            cnt[(src[i].key >> shift) & mask]++;
        size_t sum = 0;
        for (size_t b = 0; b < nb; b++) {
            size_t c = cnt[b];
            cnt[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[cnt[(src[i].key >> shift) & mask]++] = src[i];
        af__kv_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof(*v));
    af__free(own);
    return 0;
}

int af__sort_ids(int32_t *ids, size_t n, const uint64_t *key, af__kv_t *kv, af__kv_t *tmp)
{
    af__kv_t *own = NULL;
    if (!kv && !(kv = own = af__malloc((n + 1) * sizeof(*kv))))
        return AF_ENOMEM;
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){key[ids[i]], ids[i]};
    int rc = af__sort_kv(kv, n, tmp);
    if (!rc)
        for (size_t i = 0; i < n; i++)
            ids[i] = kv[i].id;
    af__free(own);
    return rc;
}

int af__sort_counting(int32_t *ids, const int32_t *key, size_t n, int32_t range)
{
    size_t descents = 0; /* keys already in order: the stable order is the given one */
    for (size_t i = 0; i < n; i++) {
        if (key[i] < 0 || key[i] >= range)
            return AF_EINVAL;
        descents += i > 0 && key[i - 1] > key[i];
    }
    if (!descents)
        return 0;
    uint32_t *cnt = af__calloc((size_t)range + 1, sizeof(uint32_t)); /* n < 2^31: int32 ids */
    int32_t *out = af__malloc((n + 1) * sizeof(int32_t));
    if (!cnt || !out) {
        af__free(cnt);
        af__free(out);
        return AF_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        cnt[key[i] + 1]++;
    for (int32_t k = 0; k < range; k++)
        cnt[k + 1] += cnt[k];
    for (size_t i = 0; i < n; i++)
        out[cnt[key[i]]++] = ids[i];
    memcpy(ids, out, n * sizeof(int32_t));
    af__free(cnt);
    af__free(out);
    return 0;
}
