/*
 * The portfolio placer, the default (registered in pack/place.c).
 *
 * Member 0 is a time sweep through a coalescing best-fit allocator (pack/sweep.c, O(n log n)),
 * except on long thin instances (a graph's tensors, a few live at a time) where the first engine
 * member is better and costs about as much. Then several orders (size, conflict count, size x
 * length, lifetime length, start; on long thin instances first "long ones first, then by start")
 * x {best fit, first fit} through the ordered greedy engine (pack/place.c); the lowest packing is
 * kept and the members stop as soon as one equals the lower bound. The engine members run within
 * a budget of comparisons (their cost grows with the overlap), so dense instances run fewer of
 * them. A packing still above the bound is handed to the peak repair (pack/repair.c), which
 * re-places small time windows around its highest places. Last, when still above the bound on a
 * moderate instance, the search (pack/search.c) in its work-bounded mode (search_work units, by
 * default 0.2-0.4 s of search; or search_effort x n / 100 nodes) seeded with that packing,
 * which it keeps unless it finds a lower one. Nothing reads the clock: the result is
 * deterministic.
 *
 * Lock rule: none; everything is per call.
 */
#include "pack/pack_int.h"

#include <math.h>
#include <string.h>

enum { KEY_SIZE, KEY_LENGTH, KEY_AREA, KEY_START, KEY_CONFLICTS, KEY_LONG_FIRST, KEY_COUNT_ };

static size_t count_below(const int64_t *v, size_t n, int64_t x, int inclusive)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < x || (inclusive && v[mid] == x))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int conflict_counts(const af_interval_t *iv, size_t n, uint64_t *key)
{
    int64_t *lo = af__malloc((n + 1) * sizeof(int64_t));
    int64_t *up = af__malloc((n + 1) * sizeof(int64_t));
    af__kv_t *kv = NULL, *tmp = NULL;
    if (!lo || !up || af__kv_pair(n, &kv, &tmp)) {
        af__free(lo);
        af__free(up);
        return AF_ENOMEM;
    }
    for (int pass = 0; pass < 2; pass++) {
        int64_t *out = pass ? up : lo;
        for (size_t i = 0; i < n; i++)
            kv[i] = (af__kv_t){af__key_i64(pass ? iv[i].upper : iv[i].lower), (int32_t)i};
        af__sort_kv(kv, n, tmp);
        for (size_t i = 0; i < n; i++)
            out[i] = (int64_t)(kv[i].key ^ (1ull << 63));
    }
    af__free(kv);
    af__free(tmp);
    for (size_t i = 0; i < n; i++) {
        /* intervals with lower < upper_i minus those with upper <= lower_i, minus itself */
        size_t started = count_below(lo, n, iv[i].upper, 0);
        size_t ended = count_below(up, n, iv[i].lower, 1);
        key[i] = (uint64_t)(started - ended - 1);
    }
    af__free(lo);
    af__free(up);
    return 0;
}

/* Engine members in the order they run: TFLite's size order with best fit first (so the
 * portfolio is never worse than greedy-size), then the other orders and fits. */
static const struct {
    int key, best_fit;
} members[] = {
    {KEY_SIZE, 1}, {KEY_CONFLICTS, 1}, {KEY_AREA, 1}, {KEY_LENGTH, 1}, {KEY_START, 1},
    {KEY_SIZE, 0}, {KEY_CONFLICTS, 0}, {KEY_AREA, 0}, {KEY_LENGTH, 0}, {KEY_START, 0},
};

/*
 * The last member: the work-bounded search (pack/search.c) from the packing of the others,
 * when that packing is above the lower bound by more than 1/1024 (below that it cannot gain
 * anything worth its cost). A search node scans the buffers and time sections of its piece, so a
 * dive costs about n x (n + sections). With search_work (the default of af_place_intervals and
 * the CLI) the budget is that many work units, search_work / (n + sections) nodes, for up to
 * AF__SEARCH_MEMBER_WORK_MAX intervals and when one dive fits: on the hard instances it reaches
 * what the search with the capacity reaches within 0.3 s (MiniMalloc's D: 1.045 x the bound,
 * below the capacity). With search_effort (the planner's) it is
 * effort/100 dives (effort x n / 100 nodes), when a dive is at most AF__SEARCH_MEMBER_DIVE
 * (about 3 ms) and n at most AF__SEARCH_MEMBER_MAX: on tight instances the first dive at the
 * lower bound usually succeeds. Deterministic (no clock), and optional: when it cannot allocate
 * it is skipped and the packing of the others stands.
 */
#define AF__SEARCH_MEMBER_MAX 1024
#define AF__SEARCH_MEMBER_WORK_MAX 4096
#define AF__SEARCH_MEMBER_DIVE 1000000
static void search_member(af_interval_t *iv, size_t n, uint64_t a, const af_place_opts_t *o,
                          uint64_t lb, uint64_t *best)
{
    uint64_t most = o->search_work ? AF__SEARCH_MEMBER_WORK_MAX : AF__SEARCH_MEMBER_MAX;
    uint64_t m = 0; /* intervals the search places (positive size), counted up to the cap */
    for (size_t i = 0; i < n && m <= most; i++)
        m += iv[i].size != 0;
    if (m == 0 || m > most || *best - lb <= lb / 1024)
        return;
    uint64_t h = *best, effort = o->search_effort;
    uint64_t nodes = effort > UINT64_MAX / m ? UINT64_MAX : effort * m / 100;
    int rc = o->search_work
                 ? af__search_improve(iv, n, a, 0, o->search_work, 0, &h, NULL)
                 : af__search_improve(iv, n, a, nodes, 0, AF__SEARCH_MEMBER_DIVE, &h, NULL);
    if (rc == 0 && h < *best)
        *best = h;
}

#define AF__ENGINE_BUDGET 30000000.0
/* Overlap tests of the peak repair: 256 per interval plus 65536, at most 2^24 plus 64 per
 * interval (small instances spend little; graphs of 10^5..10^6 tensors get what they need). */
#define AF__REPAIR_BUDGET (UINT64_C(1) << 24)
static uint64_t repair_budget(size_t n)
{
    uint64_t most = AF__REPAIR_BUDGET + 64 * (uint64_t)n, want = 65536 + 256 * (uint64_t)n;
    return want < most ? want : most;
}

/* The key member k sorts by (descending; ties by size descending, lower, index). */
static uint64_t member_key(const af_interval_t *v, uint64_t sz, uint64_t conf, int k, uint64_t a)
{
    uint64_t len = (uint64_t)(v->upper - v->lower);
    return k == KEY_SIZE        ? sz
           : k == KEY_LENGTH    ? len
           : k == KEY_AREA      ? (sz / a) * len
           : k == KEY_CONFLICTS ? conf
                                : 0;
}

/* The state the members share. */
typedef struct folio {
    af_interval_t *iv, *tmp;
    size_t n;
    uint64_t a, lb, best, longlen;
    uint64_t *sz, *key, *conf;
    int32_t *ord;
    af__kv_t *kv, *kvt; /* sort entries and their scratch */
    af__engine_t e;
    int eng;       /* 0 once the engine is set up */
    int have_conf; /* conf holds the conflict counts */
} folio_t;

/* Runs engine member m (orders by radix sorts, least significant key first: the comparator
 * order with the index as the last tie); keeps its packing when lower. 0 or AF_ENOMEM. */
static int run_member(folio_t *f, int k, int best_fit)
{
    size_t n = f->n;
    if (k == KEY_START) {
        memcpy(f->ord, f->e.by_start, n * sizeof(int32_t));
    } else if (k == KEY_LONG_FIRST) {
        /* the long ones by size (few), then the rest in the engine's start order */
        size_t nl = 0, j = 0;
        for (size_t i = 0; i < n; i++)
            if ((uint64_t)(f->iv[i].upper - f->iv[i].lower) > f->longlen)
                f->ord[nl++] = (int32_t)i;
        if (nl) {
            for (size_t i = 0; i < nl; i++)
                f->key[f->ord[i]] = af__key_i64(f->iv[f->ord[i]].lower);
            af__sort_ids(f->ord, nl, f->key, f->kv, f->kvt);
            for (size_t i = 0; i < nl; i++)
                f->key[f->ord[i]] = af__key_desc(f->sz[f->ord[i]]);
            af__sort_ids(f->ord, nl, f->key, f->kv, f->kvt);
        }
        for (size_t i = 0; i < n; i++) {
            int32_t id = f->e.by_start[i];
            if ((uint64_t)(f->iv[id].upper - f->iv[id].lower) <= f->longlen)
                f->ord[nl + j++] = id;
        }
    } else {
        if (k == KEY_CONFLICTS && !f->have_conf) {
            if (conflict_counts(f->iv, n, f->conf))
                return AF_ENOMEM;
            f->have_conf = 1;
        }
        for (size_t i = 0; i < n; i++)
            f->ord[i] = (int32_t)i;
        for (size_t i = 0; i < n; i++)
            f->key[i] = af__key_i64(f->iv[i].lower);
        af__sort_ids(f->ord, n, f->key, f->kv, f->kvt);
        for (size_t i = 0; i < n; i++)
            f->key[i] = af__key_desc(f->sz[i]);
        af__sort_ids(f->ord, n, f->key, f->kv, f->kvt);
        for (size_t i = 0; i < n; i++)
            f->key[i] = af__key_desc(member_key(&f->iv[i], f->sz[i], f->conf[i], k, f->a));
        af__sort_ids(f->ord, n, f->key, f->kv, f->kvt);
    }
    uint64_t h = af__engine_place(&f->e, f->tmp, f->ord, best_fit, f->best);
    if (h < f->best) {
        f->best = h;
        for (size_t i = 0; i < n; i++)
            f->iv[i].offset = f->tmp[i].offset;
    }
    return 0;
}

/* Peak repair: a packing above the bound by more than 1/1024 is usually high in a few places
 * only (pack/repair.c); a failure to allocate leaves the packing as it is. */
static void repair(folio_t *f)
{
    if (f->n && f->best - f->lb > f->lb / 1024)
        af__place_repair(f->iv, f->n, f->sz, f->eng ? NULL : f->e.by_start, f->lb, f->a,
                         repair_budget(f->n), &f->best);
}

/*
 * The members after the sweep, within the budget of comparisons. An engine member costs about
 * sum over intervals of k log k (k = placed intervals overlapping it) with the tree, or n x
 * (scan + log k) with the length-class index of a long thin instance, where one member first
 * places the long intervals and then the rest in time order (KEY_LONG_FIRST) and the peak
 * repair follows it at once: on such instances that alone reaches the bound. The portfolio runs
 * as many members as fit in the budget (at least one when the instance is only moderately
 * dense); the sweep alone is O(n log n) whatever the overlap, so dense million-interval
 * instances stay fast.
 */
static int run_members(folio_t *f, uint64_t pairs)
{
    size_t n = f->n;
    double overlaps = 2.0 * (double)pairs, avg = n ? overlaps / (double)n : 0;
    double cost = overlaps * (1.0 + log2(1.0 + avg)) + (double)n * log2(2.0 + (double)n);
    if ((f->eng = af__engine_init(&f->e, f->iv, n, f->sz)))
        return AF_ENOMEM;
    size_t first = 0;
    if (f->e.use_classes) {
        cost = (double)n * (f->e.scan + 16 + log2(2.0 + (double)n));
        if (run_member(f, KEY_LONG_FIRST, 1))
            return AF_ENOMEM;
        repair(f);
        first = 1;
    }
    size_t runs = (size_t)(AF__ENGINE_BUDGET / (cost > 1 ? cost : 1));
    if (runs == 0 && cost <= 4 * AF__ENGINE_BUDGET && !first)
        runs = 1;
    runs = runs > first ? runs - first : 0; /* the long-first member counts */
    uint64_t before = f->best;
    for (size_t m = 0; m < runs && m < AF_ARRAY_SIZE(members) && f->best > f->lb; m++)
        if (run_member(f, members[m].key, members[m].best_fit))
            return AF_ENOMEM;
    if (f->best < before || !first)
        repair(f);
    return 0;
}

int af__place_portfolio(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                        af_error_t *err)
{
    folio_t f = {.iv = iv, .n = n, .a = af__align_of(o), .eng = -1};
    f.sz = af__pack_sizes(iv, n, f.a);
    f.key = af__malloc((n + 1) * sizeof(uint64_t));
    f.conf = af__malloc((n + 1) * sizeof(uint64_t));
    f.ord = af__malloc((n + 1) * sizeof(int32_t));
    f.tmp = af__malloc((n + 1) * sizeof(af_interval_t));
    int rc = 0;
    if (!f.sz || !f.key || !f.conf || !f.ord || !f.tmp || af__kv_pair(n, &f.kv, &f.kvt)) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    if (n) /* iv may be NULL when there is nothing to place */
        memcpy(f.tmp, iv, n * sizeof(*iv));
    f.lb = af_intervals_lower_bound(iv, n, f.a);
    for (size_t i = 0; i < n; i++)
        f.longlen += (uint64_t)(iv[i].upper - iv[i].lower);
    f.longlen = 4 * (f.longlen / (n ? n : 1)) + 4;
    /* member 0: the time sweep, except on long thin instances (the first engine member there
     * is better and costs about as much) */
    size_t count[65] = {0};
    uint64_t pairs = 0;
    f.best = UINT64_MAX - 1;
    if (af__class_scan(iv, n, count) > AF__CLASS_SCAN_MAX) {
        f.best = af__place_sweep(iv, n, f.sz, f.key, &pairs);
        if (f.best == UINT64_MAX) {
            rc = af__err(err, AF_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            iv[i].offset = f.key[i];
    }
    if (f.best > f.lb && run_members(&f, pairs)) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    if (o && (o->search_effort || o->search_work) && n && f.best > f.lb)
        search_member(iv, n, f.a, o, f.lb, &f.best);
    *height = n ? f.best : 0;
out:
    if (!f.eng)
        af__engine_free(&f.e);
    af__free(f.sz);
    af__free(f.key);
    af__free(f.conf);
    af__free(f.ord);
    af__free(f.tmp);
    af__free(f.kv);
    af__free(f.kvt);
    return rc;
}
