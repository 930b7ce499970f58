/*
 * Peak repair: the portfolio member that lowers a packing's few highest places (pack/place.c).
 *
 * Story. On long instances (a graph of 10^5..10^6 tensors, a few of them live at a time) every
 * placer leaves the arena height to a handful of bad spots: at 10^5 tensors of bench_scale's
 * layered graphs the packing is above 1.02 x the lower bound on 26 of 66,665 time steps, and
 * 1.13 x at the worst. Those spots are local: re-placing the few intervals around one, with
 * everything else fixed, removes it. So: for a target level L, every interval whose top is above
 * L is a violation; the intervals live in a small time window around it (it and its time
 * neighbours, the window widened twice if needed) are re-placed one by one into the gaps that
 * the fixed intervals overlapping them and the ones re-placed before leave under L (best fit),
 * in a few orders (size, area, start, then shuffles from a fixed seed); the first order under L
 * wins, else the window keeps its packing. L climbs a ladder from the lower bound (1, 1.0025,
 * 1.005, 1.01, 1.02, 1.04, 1.08 x) until no violation is left or the levels reach the height;
 * each pass starts from the packing the last one left. The result is never higher than the
 * packing given, and all of it is deterministic: the budget is a count of overlap tests, not
 * time.
 *
 * Intervals are found by time with an index sorted by lower; intervals longer than a bound
 * (a few times the mean length) are kept apart and scanned (there are few of them on the
 * instances this is for; with many long ones the member does not run).
 *
 * Lock rule: none; everything is per call.
 */
#include "pack/pack_int.h"

#include <string.h>

#define TRIES 32         /* orders x {best fit, first fit} per window */
#define EXACT_NODES 2048 /* search nodes for a window the orders do not fit, plus 32 each */

typedef struct repair {
    const af_interval_t *iv;
    uint64_t *off; /* the packing being repaired */
    const uint64_t *sz;
    size_t n;
    int32_t *by_lo; /* short intervals by lower */
    int64_t *lows;  /* their lowers */
    int64_t *ups;   /* their uppers (a scan reads lows and ups in order, not iv) */
    size_t nshort;
    int32_t *longs; /* the long ones */
    size_t nlong;
    int64_t reach; /* the longest short interval */
    uint64_t work, budget;
    int32_t *win, *loc; /* scratch: the window's intervals, the local set (window + fixed) */
    size_t cap;
    af__kv_t *ranges, *tmp;
    af_interval_t *sub; /* the window as its own problem (exact()) */
    uint8_t *subfix;
    uint8_t *in_win;
    uint64_t seed;
} repair_t;

/* Appends to loc[] every interval overlapping [t0, t1) (once: in_win marks 2 for listed). */
static size_t overlapping(repair_t *r, int64_t t0, int64_t t1, int32_t *out, size_t k, int mark,
                          int with_long)
{
    size_t lo = 0, hi = r->nshort;
    int64_t from = t0 - r->reach;
    while (lo < hi) { /* first short interval with lower >= t0 - reach */
        size_t mid = (lo + hi) / 2;
        if (r->lows[mid] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;
    for (; i < r->nshort && r->lows[i] < t1 && k < r->cap; i++) {
        int32_t b = r->by_lo[i];
        if (r->ups[i] > t0 && !(r->in_win[b] & mark)) {
            r->in_win[b] |= (uint8_t)mark;
            out[k++] = b;
        }
    }
    r->work += 16 + (i - lo) + r->nlong;
    for (i = 0; with_long && i < r->nlong && k < r->cap; i++) {
        int32_t b = r->longs[i];
        if (r->iv[b].lower < t1 && r->iv[b].upper > t0 && !(r->in_win[b] & mark)) {
            r->in_win[b] |= (uint8_t)mark;
            out[k++] = b;
        }
    }
    return k;
}

/* The lowest-waste offset for b under level lv among loc[0..nl) (placed ones: in_win & 4 or not
 * in the window), or UINT64_MAX. */
static uint64_t best_gap(repair_t *r, int32_t b, const int32_t *loc, size_t nl, uint64_t lv,
                         int first)
{
    size_t m = 0;
    const af_interval_t *v = &r->iv[b];
    for (size_t i = 0; i < nl; i++) {
        int32_t c = loc[i];
        if (c == b || (r->in_win[c] & 1 && !(r->in_win[c] & 4)) || !r->sz[c])
            continue;
        if (r->iv[c].lower < v->upper && v->lower < r->iv[c].upper)
            r->ranges[m++] = (af__kv_t){r->off[c], c};
    }
    r->work += nl + m * 4;
    af__sort_kv(r->ranges, m, r->tmp);
    uint64_t prev = 0, best = UINT64_MAX, best_gap = UINT64_MAX, need = r->sz[b];
    for (size_t j = 0; j <= m; j++) {
        uint64_t start = j < m ? r->ranges[j].key : UINT64_MAX;
        if (start > prev && prev + need <= lv) {
            uint64_t gap = (start > lv ? lv : start) - prev;
            if (gap >= need && gap < best_gap) {
                best_gap = gap;
                best = prev;
                if (first)
                    break;
            }
        }
        if (j < m && start + r->sz[r->ranges[j].id] > prev)
            prev = start + r->sz[r->ranges[j].id];
    }
    return best;
}

/* Re-places win[0..nw) in order `ord` under lv; keeps the result when all fit (returns 1). */
static int try_order(repair_t *r, const int32_t *ord, size_t nw, size_t nl, uint64_t lv, int first,
                     uint64_t *saved)
{
    for (size_t i = 0; i < nw; i++)
        saved[i] = r->off[r->win[i]];
    int ok = 1;
    for (size_t i = 0; i < nw && ok; i++) {
        int32_t b = r->win[ord[i]];
        uint64_t o = r->sz[b] ? best_gap(r, b, r->loc, nl, lv, first) : 0;
        ok = o != UINT64_MAX;
        r->off[b] = ok ? o : r->off[b];
        r->in_win[b] |= 4;
    }
    for (size_t i = 0; i < nw; i++)
        r->in_win[r->win[i]] &= (uint8_t)~4;
    if (!ok)
        for (size_t i = 0; i < nw; i++)
            r->off[r->win[i]] = saved[i];
    return ok;
}

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    return z ^ (z >> 27);
}

/* The window orders: size, area, start, then shuffles. ord gets order k of win[0..nw). */
static void window_order(repair_t *r, int k, size_t nw, int32_t *ord)
{
    for (size_t i = 0; i < nw; i++) {
        const af_interval_t *v = &r->iv[r->win[i]];
        uint64_t len = (uint64_t)(v->upper - v->lower), key;
        key = k == 0 ? r->sz[r->win[i]] : k == 1 ? r->sz[r->win[i]] / 64 * len : 0;
        if (k == 2)
            key = ~af__key_i64(v->lower);
        if (k > 2)
            key = next_rand(&r->seed);
        r->ranges[i] = (af__kv_t){~key, (int32_t)i};
    }
    af__sort_kv(r->ranges, nw, r->tmp);
    for (size_t i = 0; i < nw; i++)
        ord[i] = r->ranges[i].id;
}

/*
 * The window by the canonical search (pack/search.c), with the intervals around it fixed: what
 * the greedy orders miss is often a small combinatorial knot. Returns 0 with the window re-placed
 * under lv, 1 when not found in its nodes, AF_ENOMEM.
 */
static int exact(repair_t *r, size_t nw, size_t nl, uint64_t lv)
{
    if (!r->sub && !(r->sub = af__malloc(r->cap * sizeof *r->sub)))
        return AF_ENOMEM;
    if (!r->subfix && !(r->subfix = af__malloc(r->cap)))
        return AF_ENOMEM;
    for (size_t i = 0; i < nl; i++) {
        int32_t c = r->loc[i];
        r->sub[i] = r->iv[c];
        r->sub[i].size = r->sz[c];
        r->sub[i].offset = r->off[c];
        r->subfix[i] = i >= nw; /* loc[] holds the window first, then the fixed */
    }
    uint64_t nodes = EXACT_NODES + 32 * (uint64_t)nw;
    r->work += nodes * (nl + 8);
    int rc = af__search_window(r->sub, nl, r->subfix, 1, lv, nodes);
    if (rc == 0)
        for (size_t i = 0; i < nw; i++)
            r->off[r->loc[i]] = r->sub[i].offset;
    return rc;
}

/* Repairs the violation v under level lv; returns 1 when its window now fits under lv. */
static int repair_one(repair_t *r, int32_t v, uint64_t lv, int32_t *ord, uint64_t *saved)
{
    int64_t span = r->iv[v].upper - r->iv[v].lower, pad = r->reach;
    pad = pad < 2 ? 2 : pad;
    for (int grow = 0; grow < 3; grow++, pad *= 2) {
        int64_t t0 = r->iv[v].lower - pad, t1 = r->iv[v].upper + pad;
        if (span > r->reach) /* a long violation: everything along it */
            t0 = r->iv[v].lower, t1 = r->iv[v].upper;
        /* long intervals stay where they are unless one is the violation: moving one means
         * re-placing everything along it */
        int is_long = span > r->reach;
        size_t nw = overlapping(r, t0, t1, r->win, 0, 1, is_long);
        int64_t lo = t0, hi = t1;
        for (size_t i = 0; i < nw; i++) {
            lo = r->iv[r->win[i]].lower < lo ? r->iv[r->win[i]].lower : lo;
            hi = r->iv[r->win[i]].upper > hi ? r->iv[r->win[i]].upper : hi;
        }
        for (size_t i = 0; i < nw; i++)
            r->loc[i] = r->win[i], r->in_win[r->win[i]] |= 2;
        size_t nl = overlapping(r, lo, hi, r->loc, nw, 2, 1);
        int ok = 0;
        for (int k = 0; k < TRIES && !ok && r->work < r->budget && nl < r->cap; k++) {
            window_order(r, k / 2, nw, ord);
            ok = try_order(r, ord, nw, nl, lv, k % 2, saved);
        }
        if (!ok && r->work < r->budget && nl < r->cap && exact(r, nw, nl, lv) == 0)
            ok = 1;
        for (size_t i = 0; i < nl; i++)
            r->in_win[r->loc[i]] = 0;
        if (ok || r->work >= r->budget || nl >= r->cap)
            return ok;
    }
    return 0;
}

static int repair_init(repair_t *r, const af_interval_t *iv, size_t n, const uint64_t *sz,
                       const int32_t *by_start)
{
    memset(r, 0, sizeof *r);
    r->iv = iv;
    r->sz = sz;
    r->n = n;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += (uint64_t)(iv[i].upper - iv[i].lower);
    r->reach = (int64_t)(4 * (total / (n ? n : 1)) + 4);
    r->cap = 4096;
    r->by_lo = af__malloc((n + 1) * sizeof(int32_t));
    r->lows = af__malloc((n + 1) * sizeof(int64_t));
    r->ups = af__malloc((n + 1) * sizeof(int64_t));
    r->longs = af__malloc((n + 1) * sizeof(int32_t));
    r->in_win = af__calloc(n + 1, 1);
    r->win = af__malloc(2 * r->cap * sizeof(int32_t));
    r->ranges = af__malloc((r->cap + 1) * sizeof(af__kv_t));
    r->tmp = af__malloc((r->cap + 1) * sizeof(af__kv_t));
    if (!r->by_lo || !r->lows || !r->ups || !r->longs || !r->in_win || !r->win || !r->ranges ||
        !r->tmp)
        return AF_ENOMEM;
    if (by_start)
        memcpy(r->by_lo, by_start, n * sizeof(int32_t));
    else if (af__sort_by_start(iv, sz, n, r->by_lo))
        return AF_ENOMEM;
    r->loc = r->win + r->cap;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t b = r->by_lo[i];
        if (iv[b].upper - iv[b].lower > r->reach)
            r->longs[r->nlong++] = b;
        else
            r->by_lo[k++] = b, r->lows[k - 1] = iv[b].lower, r->ups[k - 1] = iv[b].upper;
    }
    r->nshort = k;
    return 0;
}

static void repair_free(repair_t *r)
{
    af__free(r->by_lo);
    af__free(r->lows);
    af__free(r->ups);
    af__free(r->longs);
    af__free(r->in_win);
    af__free(r->win);
    af__free(r->ranges);
    af__free(r->tmp);
    af__free(r->sub);
    af__free(r->subfix);
}

int af__place_repair(af_interval_t *iv, size_t n, const uint64_t *sz, const int32_t *by_start,
                     uint64_t lb, uint64_t a, uint64_t budget, uint64_t *height)
{
    static const uint16_t ladder[] = {0, 10, 20, 41, 82, 164, 328}; /* x / 4096 above lb */
    repair_t r;
    int32_t *ord = af__malloc(4096 * sizeof(int32_t));
    uint64_t *saved = af__malloc(4096 * sizeof(uint64_t));
    uint64_t *off = af__malloc((n + 1) * sizeof(uint64_t));
    int rc = !ord || !saved || !off ? AF_ENOMEM : repair_init(&r, iv, n, sz, by_start);
    if (rc == 0 && r.nlong > n / 8 + 16)
        rc = 1; /* many long intervals: not the shape this is for */
    if (rc == 0) {
        r.off = off;
        r.budget = budget;
        r.seed = n;
        for (size_t i = 0; i < n; i++)
            off[i] = iv[i].offset;
        uint64_t h = *height;
        for (size_t l = 0; l < AF_ARRAY_SIZE(ladder) && r.work < r.budget; l++) {
            uint64_t lv = af__align_up(lb + lb / 4096 * ladder[l], a);
            if (lv >= h)
                break;
            int left = 0;
            for (size_t i = 0; i < r.nshort + r.nlong && r.work < r.budget; i++) {
                int32_t b = i < r.nshort ? r.by_lo[i] : r.longs[i - r.nshort];
                if (sz[b] && off[b] + sz[b] > lv)
                    left |= !repair_one(&r, b, lv, ord, saved);
            }
            h = 0;
            for (size_t i = 0; i < n; i++)
                h = sz[i] && off[i] + sz[i] > h ? off[i] + sz[i] : h;
            if (!left)
                break;
        }
        if (h < *height) {
            for (size_t i = 0; i < n; i++)
                iv[i].offset = off[i];
            *height = h;
        }
    }
    if (ord && saved && off)
        repair_free(&r);
    af__free(ord);
    af__free(saved);
    af__free(off);
    return rc < 0 ? rc : 0;
}
