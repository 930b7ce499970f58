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

/*
 * The items are the intervals of positive size, named by their position k in that list; the
 * sweep reads their times, offsets and sizes from the caller's intervals (no copy of them).
 */
typedef struct {
    const af_interval_t *iv;
    const int32_t *takes_over; /* or NULL */
    int32_t *idx;              /* item -> interval index */
    int32_t *rank;             /* item -> rank of its offset among the distinct offsets */
    size_t n;
} items_t;

static const af_interval_t *item(const items_t *it, int32_t k)
{
    return &it->iv[it->idx[k]];
}

/* Interval index item k takes over from (in-place), or -1. */
static int32_t handover_of(const items_t *it, int32_t k)
{
    return it->takes_over ? it->takes_over[it->idx[k]] : -1;
}

/*
 * Orders the items by first step, plain newcomers before in-place hand-overs at the same step
 * (the donor is still live), then index: ord[] gets them; by_last[] gets them by last step
 * (stable). kv, tmp: scratch of n entries each.
 */
static void sweep_order(const items_t *it, af__kv_t *kv, af__kv_t *tmp, int32_t *ord,
                        int32_t *by_last)
{
    size_t n = it->n;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int64_t f = item(it, (int32_t)i)->lower;
        lo = f < lo ? f : lo;
        hi = f > hi ? f : hi;
    }
    if (n && (uint64_t)hi - (uint64_t)lo < (UINT64_C(1) << 62)) {
        /* one key (first step, hand-over bit): one sort, none when they come in that order */
        for (size_t i = 0; i < n; i++)
            kv[i] = (af__kv_t){((uint64_t)item(it, (int32_t)i)->lower - (uint64_t)lo) << 1 |
                                   (handover_of(it, (int32_t)i) >= 0),
                               (int32_t)i};
        af__sort_kv(kv, n, tmp);
    } else {
        for (size_t i = 0; i < n; i++)
            kv[i] = (af__kv_t){handover_of(it, (int32_t)i) >= 0, (int32_t)i};
        af__sort_kv(kv, n, tmp);
        for (size_t i = 0; i < n; i++)
            kv[i].key = af__key_i64(item(it, kv[i].id)->lower);
        af__sort_kv(kv, n, tmp);
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = kv[i].id;
    for (size_t i = 0; i < n; i++) /* last step = upper - 1: the same order as by upper */
        kv[i] = (af__kv_t){af__key_i64(item(it, ord[i])->upper), ord[i]};
    af__sort_kv(kv, n, tmp);
    for (size_t i = 0; i < n; i++)
        by_last[i] = kv[i].id;
}

/*
 * The live set, by offset rank: live members hold bytes and do not overlap, so each sits alone
 * at its offset's rank. A three-level bitmap (ranks, non-empty words, non-empty words of that)
 * finds the nearest live rank below or at-or-above any rank in a few word operations.
 */
typedef struct {
    uint64_t *b[3];
    size_t words[3];
    int32_t *at; /* per rank: the live item there */
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

static void live_set(liveset_t *s, size_t r, int32_t k)
{
    s->at[r] = k;
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
static size_t rank_offsets(const items_t *it, af__kv_t *kv, af__kv_t *tmp)
{
    size_t n = it->n;
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){item(it, (int32_t)i)->offset, (int32_t)i};
    af__sort_kv(kv, n, tmp);
    size_t ranks = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && kv[i].key != kv[i - 1].key)
            ranks++;
        it->rank[kv[i].id] = (int32_t)ranks;
    }
    return n ? ranks + 1 : 0;
}

/* The live item at rank r is the donor x's hand-over names, dying where x starts. */
static int is_donor(const items_t *it, const liveset_t *ls, size_t r, int32_t x)
{
    int32_t d = ls->at[r];
    return it->idx[d] == handover_of(it, x) && item(it, d)->upper - 1 == item(it, x)->lower;
}

/* x meets the live neighbours of its rank: the conflicting item, or -1. */
static int32_t neighbour_overlap(const items_t *it, const liveset_t *ls, int32_t x)
{
    const af_interval_t *xv = item(it, x);
    size_t lo = live_pred(ls, (size_t)it->rank[x]), hi = live_succ(ls, (size_t)it->rank[x]);
    if (lo != SIZE_MAX && item(it, ls->at[lo])->offset + item(it, ls->at[lo])->size > xv->offset)
        return ls->at[lo];
    if (hi != SIZE_MAX && xv->offset + xv->size > item(it, ls->at[hi])->offset)
        return ls->at[hi];
    return -1;
}

/* Sweep over the items in start order with the live set; no two members overlap. Returns
 * AF_EVERIFY and the conflicting pair (interval indices) via ca/cb, or AF_ENOMEM. */
static int sweep(const items_t *it, int32_t *ca, int32_t *cb)
{
    size_t n = it->n;
    int32_t *by_last = af__malloc((n + 1) * sizeof(*by_last));
    af__kv_t *kv = NULL, *tmp = NULL;
    int32_t *ord = af__malloc((n + 1) * sizeof(*ord));
    liveset_t ls = {0};
    if (!by_last || !ord || af__kv_pair(n, &kv, &tmp) || live_init(&ls, n)) {
        af__free(by_last);
        af__free(kv);
        af__free(tmp);
        af__free(ord);
        live_free(&ls);
        return AF_ENOMEM;
    }
    sweep_order(it, kv, tmp, ord, by_last);
    rank_offsets(it, kv, tmp);
    af__free(kv);
    af__free(tmp);
    size_t e = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int32_t x = ord[i];
        int64_t first = item(it, x)->lower;
        /* retire everything whose last step (upper - 1) is before x's first */
        while (e < n && item(it, by_last[e])->upper - 1 < first) {
            int32_t d = by_last[e++];
            size_t r = (size_t)it->rank[d];
            if ((ls.b[0][r / 64] >> (r % 64) & 1) && ls.at[r] == d)
                live_clear(&ls, r);
        }
        if (handover_of(it, x) >= 0) {
            /* the donor hands its bytes over here: it leaves the live set (it sits at x's
             * offset when the hand-over is well formed; otherwise look everywhere) */
            size_t r = live_succ(&ls, (size_t)it->rank[x]);
            if (!(r != SIZE_MAX && is_donor(it, &ls, r, x)))
                for (r = live_succ(&ls, 0); r != SIZE_MAX; r = live_succ(&ls, r + 1))
                    if (is_donor(it, &ls, r, x))
                        break;
            if (r != SIZE_MAX)
                live_clear(&ls, r);
        }
        int32_t y = neighbour_overlap(it, &ls, x);
        if (y >= 0) {
            *ca = it->idx[y];
            *cb = it->idx[x];
            rc = AF_EVERIFY;
        } else {
            live_set(&ls, (size_t)it->rank[x], x);
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
    items_t it = {.iv = iv, .takes_over = takes_over};
    it.idx = af__malloc((n + 1) * sizeof(int32_t));
    it.rank = af__malloc((n + 1) * sizeof(int32_t));
    if (!it.idx || !it.rank) {
        af__free(it.idx);
        af__free(it.rank);
        return AF_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (iv[i].size > 0)
            it.idx[it.n++] = (int32_t)i;
    int32_t x = -1, y = -1;
    int rc = sweep(&it, &x, &y);
    af__free(it.idx);
    af__free(it.rank);
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
