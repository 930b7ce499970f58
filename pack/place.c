/*
 * Placement: give every interval [lower, upper) x size an offset so that no two intervals that
 * overlap in time overlap in space, with the arena height (max offset + size) as small as
 * possible. This is the dynamic storage allocation problem (NP-hard); the lower bound is the
 * largest cross-section (total size live at one time).
 *
 * Algorithms (one table below, each selectable by name):
 *   naive          every interval its own bytes (offsets are prefix sums).
 *   firstfit-start seed 2's demo: walk by start time, free what ended, take the first free block
 *                  that fits (splitting it, no coalescing), else grow the top.
 *   color-end      seed 1: sort by end, give each the smallest colour (shared object) whose
 *                  tenants all ended before it starts; object size = max tenant; objects are
 *                  stacked to get offsets (pack/shared.c).
 *   greedy-size    TFLite/XLA: by decreasing size, put each in the smallest gap between the
 *                  already placed intervals that overlap it in time (best fit), else on top.
 *   portfolio      the default (pack/portfolio.c): a time sweep, several orders through the
 *                  engine below, a peak repair and a work-bounded search; keeps the lowest.
 *   search         anytime branch-and-bound (pack/search.c), seeded by the portfolio.
 *
 * The ordered-greedy engine finds the placed intervals overlapping a new one with a segment tree
 * over intervals sorted by start that keeps the max end of placed leaves: a query visits only
 * subtrees holding an overlapping interval, O((k + 1) log n) for k overlaps. The gap scan sorts
 * those k by offset. All offsets and sizes are multiples of the alignment.
 */
#include "pack/pack_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------------------------- */

typedef struct {
    const af_interval_t *iv;
    const uint64_t *sz;
    const uint64_t *key;
} sort_ctx_t;

static int cmp_by_start(const void *a, const void *b, void *arg)
{
    const sort_ctx_t *c = arg;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (c->iv[x].lower != c->iv[y].lower)
        return c->iv[x].lower < c->iv[y].lower ? -1 : 1;
    if (c->sz[x] != c->sz[y])
        return c->sz[x] > c->sz[y] ? -1 : 1;
    return x < y ? -1 : (x > y);
}

static int cmp_by_end(const void *a, const void *b, void *arg)
{
    const sort_ctx_t *c = arg;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (c->iv[x].upper != c->iv[y].upper)
        return c->iv[x].upper < c->iv[y].upper ? -1 : 1;
    if (c->iv[x].lower != c->iv[y].lower)
        return c->iv[x].lower < c->iv[y].lower ? -1 : 1;
    return x < y ? -1 : (x > y);
}

int af__pack_check(const af_interval_t *iv, size_t n, af_error_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (iv[i].lower >= iv[i].upper)
            return af__err(err, AF_EINVAL, "interval %zu: lower %lld >= upper %lld", i,
                           (long long)iv[i].lower, (long long)iv[i].upper);
    if (n > INT32_MAX / 4)
        return af__err(err, AF_EINVAL, "too many intervals (%zu)", n);
    return 0;
}

uint64_t *af__pack_sizes(const af_interval_t *iv, size_t n, uint64_t a)
{
    uint64_t *sz = af__malloc((n + 1) * sizeof(*sz));
    if (sz)
        for (size_t i = 0; i < n; i++)
            sz[i] = af__align_up(iv[i].size, a);
    return sz;
}

/* ---- lower bound ------------------------------------------------------------------------- */

/*
 * Live bytes change only where intervals start or end, and the largest total is reached after
 * all the changes at one time point (frees first, then allocations, is the worst order within
 * a time point). So the bound is the maximum of the running total taken after each time point:
 * over an array of time points when the time range is short (plans: steps), else over the
 * starts and ends each sorted by time.
 */
uint64_t af_intervals_lower_bound(const af_interval_t *iv, size_t n, uint64_t alignment)
{
    uint64_t a = alignment ? alignment : 1;
    if (n == 0)
        return 0;
    int64_t tmin = INT64_MAX, tmax = INT64_MIN, cur = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t lo = iv[i].lower < iv[i].upper ? iv[i].lower : iv[i].upper;
        int64_t hi = iv[i].lower < iv[i].upper ? iv[i].upper : iv[i].lower;
        tmin = lo < tmin ? lo : tmin;
        tmax = hi > tmax ? hi : tmax;
    }
    uint64_t span = (uint64_t)tmax - (uint64_t)tmin;
    if (span <= 4 * (uint64_t)n + 1024) {
        int64_t *d = af__calloc(span + 2, sizeof(int64_t));
        if (!d)
            return 0;
        for (size_t i = 0; i < n; i++) {
            int64_t s = (int64_t)af__align_up(iv[i].size, a);
            d[(uint64_t)iv[i].lower - (uint64_t)tmin] += s;
            d[(uint64_t)iv[i].upper - (uint64_t)tmin] -= s;
        }
        for (uint64_t t = 0; t <= span; t++) {
            cur += d[t];
            best = cur > best ? cur : best;
        }
        af__free(d);
        return (uint64_t)best;
    }
    af__kv_t *kv = af__malloc((3 * n + 1) * sizeof(*kv));
    if (!kv)
        return 0;
    af__kv_t *st = kv, *en = kv + n;
    for (size_t i = 0; i < n; i++) {
        st[i] = (af__kv_t){af__key_i64(iv[i].lower), (int32_t)i};
        en[i] = (af__kv_t){af__key_i64(iv[i].upper), (int32_t)i};
    }
    af__sort_kv(st, n, kv + 2 * n);
    af__sort_kv(en, n, kv + 2 * n);
    for (size_t i = 0, j = 0; i < n || j < n;) {
        uint64_t t = i < n && (j >= n || st[i].key <= en[j].key) ? st[i].key : en[j].key;
        for (; i < n && st[i].key == t; i++)
            cur += (int64_t)af__align_up(iv[st[i].id].size, a);
        for (; j < n && en[j].key == t; j++)
            cur -= (int64_t)af__align_up(iv[en[j].id].size, a);
        best = cur > best ? cur : best;
    }
    af__free(kv);
    return (uint64_t)best;
}

/* ---- naive ------------------------------------------------------------------------------- */

static int place_naive(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                       af_error_t *err)
{
    uint64_t a = af__align_of(o), top = 0;
    for (size_t i = 0; i < n; i++) {
        iv[i].offset = top;
        top += af__align_up(iv[i].size, a);
    }
    *height = top;
    return 0;
}

/* ---- firstfit-start (seed 2) ------------------------------------------------------------- */

typedef struct {
    uint64_t addr, size;
} blk_t;

static int place_firstfit_start(af_interval_t *iv, size_t n, const af_place_opts_t *o,
                                uint64_t *height, af_error_t *err)
{
    uint64_t a = af__align_of(o);
    uint64_t *sz = af__pack_sizes(iv, n, a);
    int32_t *by_start = af__malloc((n + 1) * sizeof(int32_t));
    int32_t *by_end = af__malloc((n + 1) * sizeof(int32_t));
    blk_t *free_blocks = af__malloc((2 * n + 1) * sizeof(blk_t));
    if (!sz || !by_start || !by_end || !free_blocks) {
        af__free(sz);
        af__free(by_start);
        af__free(by_end);
        af__free(free_blocks);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        by_start[i] = by_end[i] = (int32_t)i;
    sort_ctx_t c = {iv, sz, NULL};
    qsort_r(by_start, n, sizeof(int32_t), cmp_by_start, &c);
    qsort_r(by_end, n, sizeof(int32_t), cmp_by_end, &c);
    size_t nfree = 0, e = 0;
    uint64_t top = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t t = by_start[k];
        /* release everything that ended at or before this start */
        while (e < n && iv[by_end[e]].upper <= iv[t].lower) {
            int32_t d = by_end[e++];
            if (sz[d])
                free_blocks[nfree++] = (blk_t){iv[d].offset, sz[d]};
        }
        size_t hit = nfree;
        for (size_t j = 0; j < nfree; j++)
            if (free_blocks[j].size >= sz[t]) {
                hit = j;
                break;
            }
        if (sz[t] == 0) {
            iv[t].offset = 0;
        } else if (hit == nfree) {
            iv[t].offset = top;
            top += sz[t];
        } else {
            blk_t b = free_blocks[hit];
            memmove(&free_blocks[hit], &free_blocks[hit + 1], (nfree - hit - 1) * sizeof(blk_t));
            nfree--;
            iv[t].offset = b.addr;
            if (b.size > sz[t])
                free_blocks[nfree++] = (blk_t){b.addr + sz[t], b.size - sz[t]};
        }
    }
    /* A block is freed only once its interval ended at or before the current start, so it
     * began earlier and was already placed (by_start order). */
    *height = top;
    af__free(sz);
    af__free(by_start);
    af__free(by_end);
    af__free(free_blocks);
    return 0;
}

/* ---- ordered greedy engine ----------------------------------------------------------------- */

void af__engine_free(af__engine_t *e)
{
    af__free(e->by_start);
    af__free(e->pos);
    af__free(e->lowers);
    af__free(e->tree);
    af__free(e->hits);
    af__free(e->stack);
    af__free(e->spans);
    af__free(e->spans_tmp);
    af__free(e->placed);
    af__free(e->cls_id);
    af__free(e->cls_lower);
    af__free(e->cls_upper);
}

static int length_class(const af_interval_t *v)
{
    return 63 - __builtin_clzll((uint64_t)(v->upper - v->lower) | 1);
}

/*
 * Builds the length-class index when a query would scan few intervals: per class c, about
 * n_c x 2^(c+1) / span entries fall in a query's window. Chosen when their sum is at most 64
 * (AF__CLASS_SCAN_MAX; long thin instances: a graph's tensors, a few live at a time); dense
 * instances keep the tree,
 * which skips the unplaced. Returns 0 or AF_ENOMEM.
 */
double af__class_scan(const af_interval_t *iv, size_t n, size_t *count)
{
    if (n < 4096)
        return 1e300;
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        count[length_class(&iv[i])]++;
        tmin = iv[i].lower < tmin ? iv[i].lower : tmin;
        tmax = iv[i].upper > tmax ? iv[i].upper : tmax;
    }
    double span = (double)tmax - (double)tmin + 1, scan = 0;
    for (int c = 0; c < 64; c++)
        scan += (double)count[c] * (double)(UINT64_C(2) << c) / span;
    return scan;
}

static int engine_classes(af__engine_t *e)
{
    size_t n = e->n, count[65] = {0};
    double scan = af__class_scan(e->iv, n, count);
    e->scan = scan;
    if (scan > AF__CLASS_SCAN_MAX)
        return 0;
    e->placed = af__calloc(n + 1, 1);
    e->cls_id = af__malloc((n + 1) * sizeof(int32_t));
    e->cls_lower = af__malloc((n + 1) * sizeof(int64_t));
    e->cls_upper = af__malloc((n + 1) * sizeof(int64_t));
    if (!e->placed || !e->cls_id || !e->cls_lower || !e->cls_upper)
        return AF_ENOMEM;
    e->cls_start[0] = 0;
    e->n_cls = 0;
    for (int c = 0; c < 64; c++) {
        e->cls_start[c + 1] = e->cls_start[c] + (int32_t)count[c];
        if (count[c])
            e->cls_list[e->n_cls++] = (int8_t)c;
    }
    int32_t fill[64];
    memcpy(fill, e->cls_start, sizeof fill);
    for (size_t i = 0; i < n; i++) { /* by_start order: each class stays sorted by lower */
        int32_t id = e->by_start[i];
        int32_t at = fill[length_class(&e->iv[id])]++;
        e->cls_id[at] = id;
        e->cls_lower[at] = e->iv[id].lower;
        e->cls_upper[at] = e->iv[id].upper;
    }
    e->use_classes = 1;
    return 0;
}

int af__engine_init(af__engine_t *e, const af_interval_t *iv, size_t n, const uint64_t *sz)
{
    memset(e, 0, sizeof(*e));
    e->n = n;
    e->iv = iv;
    e->sz = sz;
    e->leaves = 1;
    while (e->leaves < n)
        e->leaves *= 2;
    e->by_start = af__malloc((n + 1) * sizeof(int32_t));
    e->pos = af__malloc((n + 1) * sizeof(int32_t));
    e->lowers = af__malloc((n + 1) * sizeof(int64_t));
    e->tree = af__malloc(2 * e->leaves * sizeof(int64_t));
    e->hits = af__malloc((n + 1) * sizeof(int32_t));
    e->stack = af__malloc(3 * 2 * 64 * sizeof(size_t));
    e->spans = af__malloc((n + 1) * sizeof(af__kv_t));
    e->spans_tmp = af__malloc((n + 1) * sizeof(af__kv_t));
    if (!e->by_start || !e->pos || !e->lowers || !e->tree || !e->hits || !e->stack || !e->spans ||
        !e->spans_tmp) {
        af__engine_free(e);
        return AF_ENOMEM;
    }
    if (af__sort_by_start(iv, sz, n, e->by_start)) {
        af__engine_free(e);
        return AF_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        e->pos[e->by_start[i]] = (int32_t)i;
        e->lowers[i] = iv[e->by_start[i]].lower;
    }
    if (engine_classes(e)) {
        af__engine_free(e);
        return AF_ENOMEM;
    }
    return 0;
}

static void engine_reset(af__engine_t *e)
{
    if (e->use_classes) {
        memset(e->placed, 0, e->n);
        memcpy(e->cls_hint, e->cls_start, sizeof e->cls_hint);
        return;
    }
    for (size_t i = 0; i < 2 * e->leaves; i++)
        e->tree[i] = INT64_MIN;
}

static void engine_mark_placed(af__engine_t *e, int32_t id)
{
    if (e->use_classes) {
        e->placed[id] = 1;
        return;
    }
    size_t i = e->leaves + (size_t)e->pos[id];
    e->tree[i] = e->iv[id].upper;
    for (i /= 2; i >= 1; i /= 2) {
        int64_t m = e->tree[2 * i] > e->tree[2 * i + 1] ? e->tree[2 * i] : e->tree[2 * i + 1];
        if (e->tree[i] == m)
            break;
        e->tree[i] = m;
    }
}

/* First index in [lo, hi) of the sorted v whose value exceeds x (hi when none), galloping from
 * hint: O(log d) for a result d entries away from it. */
static int32_t first_above(const int64_t *v, int32_t lo, int32_t hi, int32_t hint, int64_t x)
{
    int32_t a = lo, b = hi, step = 1;
    if (hint > lo && hint <= hi && v[hint - 1] > x) { /* the answer is below hint */
        b = hint - 1;
        while (b - step > lo && v[b - step] > x) {
            b -= step;
            step *= 2;
        }
        a = b - step > lo ? b - step : lo;
    } else if (hint > lo && hint <= hi) { /* v[hint - 1] <= x: at or above hint */
        a = hint;
        while (a + step < hi && v[a + step] <= x) {
            a += step;
            step *= 2;
        }
        b = a + step < hi ? a + step : hi;
    }
    while (a < b) {
        int32_t mid = a + (b - a) / 2;
        if (v[mid] <= x)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* Placed intervals overlapping [l, u): lower < u and upper > l. Returns their count in hits. */
static size_t class_overlaps(af__engine_t *e, int64_t l, int64_t u)
{
    size_t k = 0;
    for (int j = 0; j < e->n_cls; j++) {
        int c = e->cls_list[j];
        int32_t hi = e->cls_start[c + 1];
        int64_t from = l - (int64_t)(UINT64_C(2) << c); /* lower > from, or it ends before l */
        int32_t i = first_above(e->cls_lower, e->cls_start[c], hi, e->cls_hint[c], from);
        e->cls_hint[c] = i;
        for (; i < hi && e->cls_lower[i] < u; i++)
            if (e->cls_upper[i] > l && e->placed[e->cls_id[i]])
                e->hits[k++] = e->cls_id[i];
    }
    return k;
}

static size_t engine_overlaps(af__engine_t *e, int64_t l, int64_t u)
{
    if (e->use_classes)
        return class_overlaps(e, l, u);
    /* hi = number of intervals with lower < u */
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (e->lowers[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t limit = lo, k = 0, sp = 0;
    if (limit == 0)
        return 0;
    /* DFS over nodes covering leaf range [0, limit) whose max upper > l; each stack entry
     * carries its node, first leaf and width so no level arithmetic is needed. */
    size_t *st = e->stack;
    st[sp++] = 1;
    st[sp++] = 0;
    st[sp++] = e->leaves;
    while (sp) {
        size_t width = st[--sp], first = st[--sp], node = st[--sp];
        if (e->tree[node] <= l || first >= limit)
            continue;
        if (width == 1) {
            e->hits[k++] = e->by_start[first];
            continue;
        }
        size_t half = width / 2;
        st[sp++] = 2 * node + 1;
        st[sp++] = first + half;
        st[sp++] = half;
        st[sp++] = 2 * node;
        st[sp++] = first;
        st[sp++] = half;
    }
    return k;
}

/* Places intervals in the given order; best_fit chooses the smallest fitting gap, else first. */
uint64_t af__engine_place(af__engine_t *e, af_interval_t *out, const int32_t *order, int best_fit,
                          uint64_t give_up_above)
{
    engine_reset(e);
    uint64_t height = 0;
    for (size_t k = 0; k < e->n; k++) {
        int32_t t = order[k];
        uint64_t need = e->sz[t];
        if (need == 0) {
            out[t].offset = 0;
            continue;
        }
        size_t m = engine_overlaps(e, e->iv[t].lower, e->iv[t].upper);
        /* the overlapping placed ranges by offset (the order among equal offsets does not
         * change the gaps) */
        af__kv_t *sp = e->spans;
        for (size_t j = 0; j < m; j++)
            sp[j] = (af__kv_t){out[e->hits[j]].offset, e->hits[j]};
        af__sort_kv(sp, m, e->spans_tmp);
        uint64_t prev_end = 0, best_off = UINT64_MAX, best_gap = UINT64_MAX;
        for (size_t j = 0; j < m; j++) {
            uint64_t off = sp[j].key, end = off + e->sz[sp[j].id];
            if (off > prev_end) {
                uint64_t gap = off - prev_end;
                if (gap >= need && gap < best_gap) {
                    best_gap = gap;
                    best_off = prev_end;
                    if (!best_fit || gap == need)
                        break;
                }
            }
            if (end > prev_end)
                prev_end = end;
        }
        if (best_off == UINT64_MAX)
            best_off = prev_end;
        out[t].offset = best_off;
        engine_mark_placed(e, t);
        if (best_off + need > height) {
            height = best_off + need;
            if (height > give_up_above)
                return UINT64_MAX; /* already worse than the incumbent */
        }
    }
    return height;
}

static int place_greedy_size(af_interval_t *iv, size_t n, const af_place_opts_t *o,
                             uint64_t *height, af_error_t *err)
{
    uint64_t *sz = af__pack_sizes(iv, n, af__align_of(o));
    int32_t *ord = af__malloc((n + 1) * sizeof(int32_t));
    af__engine_t e;
    if (!sz || !ord || af__engine_init(&e, iv, n, sz)) {
        af__free(sz);
        af__free(ord);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    if (af__sort_by_key_desc(iv, sz, NULL, n, ord)) {
        af__engine_free(&e);
        af__free(sz);
        af__free(ord);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    *height = af__engine_place(&e, iv, ord, 1, UINT64_MAX);
    af__engine_free(&e);
    af__free(sz);
    af__free(ord);
    return 0;
}

/* ---- registry ------------------------------------------------------------------------------ */

static const af__place_entry_t place_table[] = {
    {"naive", place_naive, "every tensor its own bytes"},
    {"firstfit-start", place_firstfit_start, "seed 2: by start time, first free block that fits"},
    {"color-end", af__place_color_end, "seed 1: interval colouring by end, smallest free colour"},
    {"greedy-size", place_greedy_size, "TFLite/XLA: by decreasing size, best-fitting gap"},
    {"portfolio", af__place_portfolio, "several orders x best/first fit, keeps the lowest"},
    {"search", af__place_search, "anytime branch-and-bound seeded by the portfolio"},
};

/* The names, in table order: a constant list (no array rebuilt on each call, so any thread may
 * read it while another plans). */
static const char *const place_names[] = {"naive",     "firstfit-start", "color-end", "greedy-size",
                                          "portfolio", "search",         NULL};
_Static_assert(AF_ARRAY_SIZE(place_names) == AF_ARRAY_SIZE(place_table) + 1,
               "place_names out of step with place_table");

const char *const *af_place_names(void)
{
    return place_names;
}

const af__place_entry_t *af__place_find(const char *name)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(place_table); i++)
        if (strcmp(place_table[i].name, name) == 0)
            return &place_table[i];
    return NULL;
}

int af_place_intervals(af_interval_t *iv, size_t n, const char *algo, const af_place_opts_t *opts,
                       uint64_t *height, af_error_t *err)
{
    const af__place_entry_t *e = af__place_find(algo ? algo : "portfolio");
    if (!e)
        return af__err(err, AF_EINVAL, "unknown placement algorithm '%s'", algo);
    int rc = af__pack_check(iv, n, err);
    if (rc)
        return rc;
    af_place_opts_t o = {.alignment = 1, .time_limit_s = 10.0, .search_work = AF_PLACE_SEARCH_WORK};
    if (opts)
        o = *opts;
    if (o.alignment == 0)
        o.alignment = 1;
    if (o.alignment & (o.alignment - 1))
        return af__err(err, AF_EINVAL, "alignment %llu is not a power of two",
                       (unsigned long long)o.alignment);
    return e->fn(iv, n, &o, height, err);
}
