/*
 * Interval verifier, independent of the placers: no two intervals that share a time point share
 * a byte, every interval lies under the height and is aligned. One sweep in start order keeps
 * the live set by offset rank (a three-level bitmap over the ranks of the distinct offsets): a
 * newcomer only has to be checked against its two neighbours in the live set, since the live
 * members never overlap each other. An interval may be declared to take over the bytes of one
 * that ends where it starts (an in-place hand-over, af_intervals_find_overlap's takes_over): the
 * donor leaves the live set as the newcomer arrives. The plan verifier (planner/verify.c) runs
 * its overlap check through this sweep. Sorting is the library's radix sort (common/sort.c).
 *
 * Lock rule: none; everything is per call.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t first, last; /* inclusive */
    uint64_t off, len;
    int32_t id;
    int32_t handover; /* id it takes over from (in-place), or -1 */
    int32_t rank;     /* rank of off among the items' distinct offsets (set by the sweep) */
} item_t;

typedef struct {
    const item_t *it;
    size_t n;
} sweep_t;

/*
 * Orders the items (given in increasing id order) by first step, plain newcomers before in-place
 * hand-overs at the same step (the donor is still live), then id: ord[] gets their indices;
 * by_last[] gets them by last step (stable). kv: scratch of 2n entries.
 */
static void sweep_order(item_t *it, size_t n, af__kv_t *kv, int32_t *ord, item_t **by_last)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        lo = it[i].first < lo ? it[i].first : lo;
        hi = it[i].first > hi ? it[i].first : hi;
    }
    if (n && (uint64_t)hi - (uint64_t)lo < (UINT64_C(1) << 62)) {
        /* one key (first step, hand-over bit): one sort, none when they come in that order */
        for (size_t i = 0; i < n; i++)
            kv[i] = (af__kv_t){((uint64_t)it[i].first - (uint64_t)lo) << 1 | (it[i].handover >= 0),
                               (int32_t)i};
        af__sort_kv(kv, n, kv + n);
    } else {
        for (size_t i = 0; i < n; i++)
            kv[i] = (af__kv_t){it[i].handover >= 0, (int32_t)i};
        af__sort_kv(kv, n, kv + n);
        for (size_t i = 0; i < n; i++)
            kv[i].key = af__key_i64(it[kv[i].id].first);
        af__sort_kv(kv, n, kv + n);
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = kv[i].id;
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){af__key_i64(it[ord[i]].last), ord[i]};
    af__sort_kv(kv, n, kv + n);
    for (size_t i = 0; i < n; i++)
        by_last[i] = &it[kv[i].id];
}

/*
 * The live set, by offset rank: live members hold bytes and do not overlap, so each sits alone
 * at its offset's rank. A three-level bitmap (ranks, non-empty words, non-empty words of that)
 * finds the nearest live rank below or at-or-above any rank in a few word operations.
 */
typedef struct {
    uint64_t *b[3];
    size_t words[3];
    item_t **at; /* per rank: the live member there */
} liveset_t;

static int live_init(liveset_t *s, size_t n)
{
    size_t bits = n + 1;
    for (int l = 0; l < 3; l++) {
        s->words[l] = (bits + 63) / 64;
        s->b[l] = af__calloc(s->words[l], sizeof(uint64_t));
        bits = s->words[l];
    }
    s->at = af__malloc((n + 1) * sizeof(*s->at));
    return s->b[0] && s->b[1] && s->b[2] && s->at ? 0 : AF_ENOMEM;
}

static void live_free(liveset_t *s)
{
    for (int l = 0; l < 3; l++)
        af__free(s->b[l]);
    af__free(s->at);
}

static void live_set(liveset_t *s, item_t *x)
{
    size_t r = (size_t)x->rank;
    s->at[r] = x;
    for (int l = 0; l < 3; l++, r /= 64)
        s->b[l][r / 64] |= 1ull << (r % 64);
}

static void live_clear(liveset_t *s, size_t r)
{
    for (int l = 0; l < 3; l++, r /= 64) {
        s->b[l][r / 64] &= ~(1ull << (r % 64));
        if (s->b[l][r / 64])
            break;
    }
}

/* Lowest live rank >= r, or SIZE_MAX. */
static size_t live_succ(const liveset_t *s, size_t r)
{
    int l = 0;
    for (;; l++, r = r / 64 + 1) { /* climb while nothing at or after r in r's word */
        if (l == 3 || r / 64 >= s->words[l])
            break;
        uint64_t w = s->b[l][r / 64] & (~0ull << (r % 64));
        if (w) {
            r = r / 64 * 64 + (size_t)__builtin_ctzll(w);
            break;
        }
    }
    if (l == 3 || r / 64 >= s->words[l]) { /* scan the top level */
        if (l < 3)
            return SIZE_MAX;
        l = 2;
        for (r = r * 64;; r += 64) {
            if (r / 64 >= s->words[2])
                return SIZE_MAX;
            if (s->b[2][r / 64]) {
                r += (size_t)__builtin_ctzll(s->b[2][r / 64]);
                break;
            }
        }
    }
    for (; l > 0; l--) /* descend to the lowest set bit */
        r = r * 64 + (size_t)__builtin_ctzll(s->b[l - 1][r]);
    return r;
}

/* Highest live rank < r, or SIZE_MAX. */
static size_t live_pred(const liveset_t *s, size_t r)
{
    int l = 0;
    for (;; l++) {
        if (r == 0)
            return SIZE_MAX;
        r--; /* now: highest set bit <= r at level l */
        if (l == 3)
            break;
        uint64_t w = s->b[l][r / 64] & (~0ull >> (63 - r % 64));
        if (w) {
            r = r / 64 * 64 + (size_t)(63 - __builtin_clzll(w));
            break;
        }
        r /= 64; /* climb: strictly below r's word */
    }
    if (l == 3) { /* scan the top level down from word r */
        for (;; r--) {
            if (s->b[2][r]) {
                r = r * 64 + (size_t)(63 - __builtin_clzll(s->b[2][r]));
                break;
            }
            if (r == 0)
                return SIZE_MAX;
        }
        l = 2;
    }
    for (; l > 0; l--) /* descend to the highest set bit */
        r = r * 64 + (size_t)(63 - __builtin_clzll(s->b[l - 1][r]));
    return r;
}

/* Ranks the items' offsets (equal offsets, equal rank); returns the number of ranks. */
static size_t rank_offsets(item_t *it, size_t n, af__kv_t *kv)
{
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){it[i].off, (int32_t)i};
    af__sort_kv(kv, n, kv + n);
    size_t ranks = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && kv[i].key != kv[i - 1].key)
            ranks++;
        it[kv[i].id].rank = (int32_t)ranks;
    }
    return n ? ranks + 1 : 0;
}

/* Sweep over the items (increasing ids) in start order with the live set; no two members
 * overlap. Returns AF_EVERIFY and the conflicting pair via a/b, or AF_ENOMEM. */
static int sweep(item_t *it, size_t n, int32_t *ca, int32_t *cb)
{
    item_t **by_last = af__malloc((n + 1) * sizeof(*by_last));
    af__kv_t *kv = af__malloc((2 * n + 1) * sizeof(*kv));
    int32_t *ord = af__malloc((n + 1) * sizeof(*ord));
    liveset_t ls = {0};
    if (!by_last || !kv || !ord || live_init(&ls, n)) {
        af__free(by_last);
        af__free(kv);
        af__free(ord);
        live_free(&ls);
        return AF_ENOMEM;
    }
    sweep_order(it, n, kv, ord, by_last);
    rank_offsets(it, n, kv);
    af__free(kv);
    size_t e = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        item_t *x = &it[ord[i]];
        /* retire everything whose last step is before x's first */
        while (e < n && by_last[e]->last < x->first) {
            item_t *d = by_last[e++];
            size_t r = (size_t)d->rank;
            if ((ls.b[0][r / 64] >> (r % 64) & 1) && ls.at[r] == d)
                live_clear(&ls, r);
        }
        if (x->handover >= 0) {
            /* the donor hands its bytes over here: it leaves the live set (it sits at x's
             * offset when the hand-over is well formed; otherwise look everywhere) */
            size_t r = live_succ(&ls, (size_t)x->rank);
            if (!(r != SIZE_MAX && ls.at[r]->id == x->handover && ls.at[r]->last == x->first))
                for (r = live_succ(&ls, 0); r != SIZE_MAX; r = live_succ(&ls, r + 1))
                    if (ls.at[r]->id == x->handover && ls.at[r]->last == x->first)
                        break;
            if (r != SIZE_MAX)
                live_clear(&ls, r);
        }
        size_t lo = live_pred(&ls, (size_t)x->rank), hi = live_succ(&ls, (size_t)x->rank);
        if (lo != SIZE_MAX && ls.at[lo]->off + ls.at[lo]->len > x->off) {
            *ca = ls.at[lo]->id;
            *cb = x->id;
            rc = AF_EVERIFY;
        } else if (hi != SIZE_MAX && x->off + x->len > ls.at[hi]->off) {
            *ca = ls.at[hi]->id;
            *cb = x->id;
            rc = AF_EVERIFY;
        } else {
            live_set(&ls, x);
        }
    }
    af__free(by_last);
    af__free(ord);
    live_free(&ls);
    return rc;
}

int af_intervals_find_overlap(const af_interval_t *iv, size_t n, const int32_t *takes_over,
                              size_t *a, size_t *b)
{
    item_t *it = af__malloc((n + 1) * sizeof(*it));
    if (!it)
        return AF_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].size > 0)
            it[m++] = (item_t){iv[i].lower,
                               iv[i].upper - 1,
                               iv[i].offset,
                               iv[i].size,
                               (int32_t)i,
                               takes_over ? takes_over[i] : -1,
                               0};
    int32_t x = -1, y = -1;
    int rc = sweep(it, m, &x, &y);
    af__free(it);
    if (rc == AF_EVERIFY) {
        *a = (size_t)x;
        *b = (size_t)y;
    }
    return rc;
}

int af_intervals_verify(const af_interval_t *iv, size_t n, uint64_t height, uint64_t alignment,
                        af_error_t *err)
{
    uint64_t a = alignment > 1 ? alignment : 1;
    for (size_t i = 0; i < n; i++) {
        if (iv[i].lower >= iv[i].upper)
            return af__err(err, AF_EVERIFY, "interval %zu is empty or reversed", i);
        if (iv[i].offset % a)
            return af__err(err, AF_EVERIFY, "interval %zu: offset %llu not aligned to %llu", i,
                           (unsigned long long)iv[i].offset, (unsigned long long)a);
        if (iv[i].size > height || iv[i].offset > height - iv[i].size)
            return af__err(err, AF_EVERIFY, "interval %zu ends at %llu, above the height %llu", i,
                           (unsigned long long)(iv[i].offset + iv[i].size),
                           (unsigned long long)height);
    }
    size_t x = 0, y = 0;
    int rc = af_intervals_find_overlap(iv, n, NULL, &x, &y);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory");
    if (rc)
        return af__err(
            err, AF_EVERIFY,
            "intervals %zu [%lld,%lld) @%llu+%llu and %zu [%lld,%lld) @%llu+%llu overlap", x,
            (long long)iv[x].lower, (long long)iv[x].upper, (unsigned long long)iv[x].offset,
            (unsigned long long)iv[x].size, y, (long long)iv[y].lower, (long long)iv[y].upper,
            (unsigned long long)iv[y].offset, (unsigned long long)iv[y].size);
    return 0;
}
