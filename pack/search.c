/*
 * Anytime placement search (algorithm "search"): the lowest arena height found for a set of
 * intervals within a time limit, or whether they fit under a given capacity.
 *
 * Story. Greedy placers stop 25-40% above the optimum on tightly packed instances; exact search
 * closes the gap. We follow MiniMalloc (Moffitt, ASPLOS 2023): the problem is split at time
 * points where nothing is live across (partitions are independent: the arena height is the
 * maximum of theirs), and each partition's "fits under capacity C?" question is answered by a
 * depth-first branch and bound over canonical packings (pack/search_dfs.c). The static
 * order that breaks ties between buffers at the same offset decides how the search sweeps:
 * time sweeps (start first, end first, outward from the largest cross-section) fill tight
 * instances level by level from one side and backtrack locally, MiniMalloc's orders (largest
 * cross-section, length, area) suit other shapes. Search times are heavy-tailed (a run either
 * dives to a packing with little backtracking or thrashes), so a partition is solved by
 * restarts with Luby-scaled node limits (24n x 1 1 2 1 1 2 4 ...), alternating the static orders
 * and randomised sweep orders (from a fixed seed); no order can eat the whole budget. A run that
 * ends below its node limit is a proof either way (the canonical search is complete).
 *
 * Height search. The portfolio placer gives the incumbent (its packing per partition). Probes
 * then ask for capacity = the best lower bound first (the max cross-section: often optimal on
 * tight instances), then bisect between the lower bound and the incumbent - 1. A probe that
 * exhausts a partition's search space proves that capacity infeasible and raises the bound; a
 * probe that runs out of its share of the time is abandoned upwards (not a proof). Every probe
 * that fits improves the incumbent, so stopping at any time returns the best packing so far.
 *
 * Work-bounded mode (o->search_nodes > 0): the same search, bounded by a count of search nodes
 * (DFS placements, summed over restarts and probes) instead of the clock, which it never reads;
 * probes get the same shares of the nodes left as of the time left, and restarts are clipped to
 * what their probe has left. Restart seeds are fixed, so the same input gives the same packing
 * on any machine and under any load, and a run that ends within its budget is still a proof.
 * The default placer runs it as the portfolio's last member (af__search_improve(), seeded with
 * the portfolio's packing instead of placing it again).
 *
 * Sizes are aligned up first (an interval's footprint), as in every placer, so the height is the
 * highest offset + aligned size and offsets stay aligned.
 *
 * Invariants: best[] always holds a valid packing (checked at the end by an independent sweep;
 * if that ever failed we would return the portfolio's packing instead, never an invalid one).
 * Zero-size intervals take offset 0 and do not enter the search. Reentrant, no global state.
 *
 * With o->capacity != 0: returns 0 as soon as a packing of height <= capacity is known. Otherwise
 * iv holds the best packing found, *height its height, and the result is AF_EBUDGET when the
 * capacity is proven too small (below the lower bound or search space exhausted) or
 * AF_ETIMEDOUT when the time limit ran out before an answer.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIME_LIMIT_S 10.0

typedef struct part_info {
    af__search_part_t sp;
    uint8_t sorted[AF__SEARCH_N_ORDERS]; /* static order h is built (sorted on first use) */
    int32_t *gidx;                       /* local -> global index */
    uint64_t lb;                         /* max cross-section of the partition */
    uint64_t best_h;                     /* height of the partition's packing in best[] */
    uint64_t proven;                     /* smallest capacity not proven infeasible */
} part_info_t;

typedef struct sort_key {
    uint64_t k[3];
    int32_t idx;
} sort_key_t;

/* Where a probe stops: at a deadline (anytime mode), or once the search has explored node_end
 * nodes in total (work-bounded mode). */
typedef struct limit {
    double deadline;
    uint64_t node_end;
} limit_t;

typedef struct search_ctx {
    const af_interval_t *iv;
    size_t n;
    uint64_t alignment;
    const af_interval_t *given; /* the incumbent's offsets, or NULL: place the portfolio */
    uint64_t work;              /* node budget of the work-bounded mode; 0 = anytime mode */
    uint64_t max_dive;          /* > 0: not run unless a dive costs at most this */
    uint64_t max_part;          /* buffers of the largest partition */
    uint64_t used;              /* nodes explored so far (work-bounded mode) */
    uint64_t *best;             /* n: best packing's offsets */
    part_info_t *parts;
    int32_t nparts;
    uint64_t *scratch; /* max partition size */
    sort_key_t *keys;  /* max partition size */
} search_ctx_t;

static int cmp_desc(const void *a, const void *b)
{
    const sort_key_t *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] > y->k[i] ? -1 : 1;
    return x->idx - y->idx;
}

static int cmp_lower(const void *a, const void *b)
{
    const sort_key_t *x = a, *y = b;
    if (x->k[0] != y->k[0])
        return x->k[0] < y->k[0] ? -1 : 1;
    return x->idx - y->idx;
}

/* int64 -> uint64 preserving order. */
static uint64_t ord64(int64_t v)
{
    return (uint64_t)v ^ (UINT64_C(1) << 63);
}

/* ---- independent checker ------------------------------------------------------------------ */

/* 0 when no two intervals overlap in both time and space and all offsets are aligned. */
static int packing_ok(const af_interval_t *iv, const uint64_t *off, size_t n, uint64_t a,
                      sort_key_t *keys)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (a > 1 && off[i] % a)
            return -1;
        if (iv[i].size == 0)
            continue;
        keys[m].k[0] = ord64(iv[i].lower);
        keys[m].idx = (int32_t)i;
        m++;
    }
    qsort(keys, m, sizeof *keys, cmp_lower);
    for (size_t x = 0; x < m; x++) {
        const af_interval_t *p = &iv[keys[x].idx];
        uint64_t po = off[keys[x].idx];
        for (size_t y = x + 1; y < m && iv[keys[y].idx].lower < p->upper; y++) {
            uint64_t qo = off[keys[y].idx];
            if (po < qo + iv[keys[y].idx].size && qo < po + p->size)
                return -1;
        }
    }
    return 0;
}

/* ---- building the partitions -------------------------------------------------------------- */

/*
 * Per-buffer features the static orders sort by (descending): 0 the largest cross-section the
 * buffer takes part in (tot), 1 its lifetime length (width), 2 size x width (area), 3 size,
 * 4 start time (earliest first, stored complemented), 5 end time (latest first), 6 distance in
 * sections from the largest cross-section (nearest first, complemented).
 */
static void build_features(af__search_part_t *sp, const af_interval_t *iv, const int32_t *gidx)
{
    int32_t crit = 0; /* the (first) section with the largest cross-section */
    for (int32_t s = 1; s < sp->nsec; s++)
        if (sp->sec_init[s] > sp->sec_init[crit])
            crit = s;
    for (int32_t b = 0; b < sp->n; b++) {
        const af_interval_t *v = &iv[gidx[b]];
        uint64_t tot = 0, width = (uint64_t)(v->upper - v->lower), area;
        for (int32_t s = sp->sec_lo[b]; s < sp->sec_hi[b]; s++)
            if (sp->sec_init[s] > tot)
                tot = sp->sec_init[s];
        if (!af__mul_u64(width, v->size, &area))
            area = UINT64_MAX;
        sp->feat[0][b] = tot;
        sp->feat[1][b] = width;
        sp->feat[2][b] = area;
        sp->feat[3][b] = v->size;
        sp->feat[4][b] = ~ord64(v->lower);
        sp->feat[5][b] = ord64(v->upper);
        int32_t dist = crit < sp->sec_lo[b]    ? sp->sec_lo[b] - crit
                       : crit >= sp->sec_hi[b] ? crit - sp->sec_hi[b] + 1
                                               : 0;
        sp->feat[6][b] = ~(uint64_t)dist;
    }
}

/* Sorts into order[h] by the features spec[0..2], ties by tie[b] then index. */
static void sort_order(af__search_part_t *sp, int h, const int8_t *spec, const uint64_t *tie,
                       sort_key_t *keys)
{
    for (int32_t b = 0; b < sp->n; b++) {
        for (int i = 0; i < 3; i++)
            keys[b].k[i] = spec[i] < 0 ? (tie ? tie[b] : 0) : sp->feat[spec[i]][b];
        keys[b].idx = b;
    }
    qsort(keys, (size_t)sp->n, sizeof *keys, cmp_desc);
    for (int32_t b = 0; b < sp->n; b++)
        sp->order[h][b] = keys[b].idx;
}

/*
 * The static orders: time sweeps first (start first, end first, outward from the largest
 * cross-section: they solve guillotine-like tight instances), then MiniMalloc's preorders
 * (total, width, area) and size first.
 */
static const int8_t order_spec[AF__SEARCH_N_ORDERS][3] = {
    {4, 3, 1}, {5, 3, 1}, {6, 3, 1}, {4, 1, 3}, {5, 1, 3}, {6, 1, 3},
    {0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {2, 0, 1}, {3, 1, 0},
};

/* Order h of partition pi, sorted on first use: a search that ends in its first dives (the
 * common case when the lower bound is reached) sorts one or two orders, not all of them. */
static const int32_t *static_order(part_info_t *pi, int h, sort_key_t *keys)
{
    if (!pi->sorted[h]) {
        sort_order(&pi->sp, h, order_spec[h], NULL, keys);
        pi->sorted[h] = 1;
    }
    return pi->sp.order[h];
}

/* A randomised order for restart number k: two random features, then random ties. */
static void random_order(af__search_part_t *sp, uint64_t k, sort_key_t *keys, uint64_t *tie)
{
    uint64_t st = k * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)sp->n;
    for (int32_t b = 0; b < sp->n; b++) {
        st = st * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        tie[b] = st >> 17;
    }
    int8_t spec[3];
    spec[0] = (int8_t)(4 + ((st >> 33) & 1)); /* sweeps: start first or end first */
    spec[1] = (int8_t)((st >> 41) % AF__SEARCH_N_FEATURES);
    spec[2] = -1;
    sort_order(sp, AF__SEARCH_RANDOM_ORDER, spec, tie, keys);
}

static void free_part(part_info_t *pi)
{
    af__free(pi->gidx);
    af__search_part_free(&pi->sp);
}

/* Overlaps (CSR): buffers are sorted by lower, so j > i overlaps i iff lower_j < upper_i; then
 * the sections each buffer and its overlapping ones span. */
static int part_overlaps(part_info_t *pi, const af_interval_t *iv)
{
    af__search_part_t *sp = &pi->sp;
    int32_t n = sp->n;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t i = 0; i < n; i++) {
            for (int32_t j = i + 1; j < n && iv[pi->gidx[j]].lower < iv[pi->gidx[i]].upper; j++) {
                if (pass == 0) {
                    sp->ov_start[i + 1]++, sp->ov_start[j + 1]++;
                } else {
                    sp->ov[sp->rank[i]++] = j;
                    sp->ov[sp->rank[j]++] = i;
                }
            }
        }
        if (pass == 0) {
            for (int32_t i = 0; i < n; i++)
                sp->ov_start[i + 1] += sp->ov_start[i];
            size_t nov = (size_t)sp->ov_start[n];
            sp->ov = af__malloc((nov ? nov : 1) * sizeof(int32_t));
            if (!sp->ov)
                return AF_ENOMEM;
            for (int32_t i = 0; i < n; i++)
                sp->rank[i] = sp->ov_start[i]; /* fill cursors */
        }
    }
    sp->ovr_lo = af__malloc((size_t)n * sizeof(int32_t));
    sp->ovr_hi = af__malloc((size_t)n * sizeof(int32_t));
    if (!sp->ovr_lo || !sp->ovr_hi)
        return AF_ENOMEM;
    for (int32_t b = 0; b < n; b++) {
        sp->ovr_lo[b] = sp->sec_lo[b];
        sp->ovr_hi[b] = sp->sec_hi[b];
        for (int32_t k = sp->ov_start[b]; k < sp->ov_start[b + 1]; k++) {
            int32_t c = sp->ov[k];
            sp->ovr_lo[b] = sp->sec_lo[c] < sp->ovr_lo[b] ? sp->sec_lo[c] : sp->ovr_lo[b];
            sp->ovr_hi[b] = sp->sec_hi[c] > sp->ovr_hi[b] ? sp->sec_hi[c] : sp->ovr_hi[b];
        }
    }
    return 0;
}

/* Sections and overlaps of one partition; gidx is sorted by lower. */
static int build_part(part_info_t *pi, const af_interval_t *iv, uint64_t a, sort_key_t *keys,
                      int64_t *times)
{
    af__search_part_t *sp = &pi->sp;
    int32_t n = sp->n;
    size_t nt = 0;
    for (int32_t b = 0; b < n; b++) {
        times[nt++] = iv[pi->gidx[b]].lower;
        times[nt++] = iv[pi->gidx[b]].upper;
    }
    for (size_t i = 0; i < nt; i++)
        keys[i].k[0] = ord64(times[i]), keys[i].idx = 0;
    qsort(keys, nt, sizeof *keys, cmp_lower);
    size_t nu = 0;
    for (size_t i = 0; i < nt; i++)
        if (nu == 0 || keys[i].k[0] != keys[nu - 1].k[0])
            keys[nu++].k[0] = keys[i].k[0];
    sp->nsec = (int32_t)nu - 1;
    sp->alignment = a;
    if (af__search_part_alloc(sp, (size_t)n, (size_t)sp->nsec))
        return AF_ENOMEM;
    for (int32_t b = 0; b < n; b++) {
        const af_interval_t *v = &iv[pi->gidx[b]];
        sp->size[b] = v->size;
        /* Binary search of the endpoints among the nu distinct times. */
        for (int e = 0; e < 2; e++) {
            uint64_t t = ord64(e ? v->upper : v->lower);
            size_t lo = 0, hi = nu - 1;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (keys[mid].k[0] < t)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            (e ? sp->sec_hi : sp->sec_lo)[b] = (int32_t)lo;
        }
        for (int32_t s = sp->sec_lo[b]; s < sp->sec_hi[b]; s++)
            sp->sec_init[s] += v->size; /* no overflow: total size was checked */
    }
    pi->lb = 0;
    for (int32_t s = 0; s < sp->nsec; s++)
        if (sp->sec_init[s] > pi->lb)
            pi->lb = sp->sec_init[s];
    if (part_overlaps(pi, iv) || af__search_part_sections(sp))
        return AF_ENOMEM;
    build_features(sp, iv, pi->gidx);
    static_order(pi, 0, keys); /* the skyline fallback uses order 0 */
    return 0;
}

/* Splits the positive-size intervals at time points nothing is live across. */
static int build_parts(search_ctx_t *c, sort_key_t *keys, int64_t *times)
{
    size_t m = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->iv[i].size == 0)
            continue;
        keys[m].k[0] = ord64(c->iv[i].lower);
        keys[m].idx = (int32_t)i;
        m++;
    }
    qsort(keys, m, sizeof *keys, cmp_lower);
    int32_t *sorted = af__malloc((m ? m : 1) * sizeof *sorted);
    if (!sorted)
        return AF_ENOMEM;
    for (size_t i = 0; i < m; i++)
        sorted[i] = keys[i].idx;
    int rc = 0;
    size_t cap = 0, maxn = 0;
    for (size_t i = 0; i < m && rc == 0;) {
        size_t start = i;
        int64_t reach = c->iv[sorted[i++]].upper;
        while (i < m && c->iv[sorted[i]].lower < reach) {
            if (c->iv[sorted[i]].upper > reach)
                reach = c->iv[sorted[i]].upper;
            i++;
        }
        rc = af__grow((void **)&c->parts, &cap, (size_t)c->nparts + 1, sizeof *c->parts);
        if (rc)
            break;
        part_info_t *pi = &c->parts[c->nparts++];
        memset(pi, 0, sizeof *pi);
        pi->sp.n = (int32_t)(i - start);
        pi->gidx = af__malloc((i - start) * sizeof(int32_t));
        if (!pi->gidx) {
            rc = AF_ENOMEM;
            break;
        }
        memcpy(pi->gidx, sorted + start, (i - start) * sizeof(int32_t));
        rc = build_part(pi, c->iv, c->alignment, keys, times);
        if (i - start > maxn)
            maxn = i - start;
    }
    af__free(sorted);
    if (rc == 0) {
        c->scratch = af__malloc((maxn ? maxn : 1) * sizeof(uint64_t));
        c->keys = af__malloc((maxn ? maxn : 1) * sizeof *c->keys);
        if (!c->scratch || !c->keys)
            rc = AF_ENOMEM;
    }
    return rc;
}

/* ---- the height search -------------------------------------------------------------------- */

static uint64_t part_height(const search_ctx_t *c, const part_info_t *pi)
{
    uint64_t h = 0;
    for (int32_t b = 0; b < pi->sp.n; b++) {
        int32_t g = pi->gidx[b];
        if (c->best[g] + c->iv[g].size > h)
            h = c->best[g] + c->iv[g].size;
    }
    return h;
}

/* The Luby sequence 1 1 2 1 1 2 4 1 1 2 ... (i >= 1): restart lengths that waste at most a log
 * factor against the best fixed cutoff when run times are unknown and heavy-tailed. */
static uint64_t luby(uint64_t i)
{
    for (;;) {
        int k = 1;
        while (((UINT64_C(1) << k) - 1) < i)
            k++;
        if (i == (UINT64_C(1) << k) - 1)
            return UINT64_C(1) << (k - 1);
        i -= (UINT64_C(1) << (k - 1)) - 1;
    }
}

static int out_of_work(const search_ctx_t *c, const limit_t *l)
{
    return c->work ? c->used >= l->node_end : af__search_now() > l->deadline;
}

/*
 * Does partition pi fit under cap within the limit? Restarts with Luby-scaled node limits,
 * alternating the static orders and randomised sweep orders. A run that ends without hitting its
 * node limit is a proof either way. Updates best[] and pi->best_h on success, pi->proven on a
 * proof. In the work-bounded mode a run's node limit is also clipped to what the limit leaves,
 * and every node explored is charged to c->used.
 */
static int solve_part(search_ctx_t *c, part_info_t *pi, uint64_t cap, const limit_t *lim)
{
    if (pi->best_h <= cap)
        return AF__SEARCH_FOUND;
    if (pi->proven > cap)
        return AF__SEARCH_INFEASIBLE;
    af__search_part_t *sp = &pi->sp;
    sp->deadline = lim->deadline;
    sp->use_clock = c->work == 0;
    uint64_t base = 24 * (uint64_t)sp->n + 64;
    for (uint64_t i = 1;; i++) {
        if (i > 1 && out_of_work(c, lim))
            return AF__SEARCH_TIMEOUT;
        int slot = (int)((i - 1) / 2 % AF__SEARCH_N_ORDERS);
        if (i % 2)
            static_order(pi, slot, c->keys);
        else {
            random_order(sp, i, c->keys, c->scratch);
            slot = AF__SEARCH_RANDOM_ORDER;
        }
        uint64_t l = luby(i);
        sp->nodes = 0;
        sp->node_limit = l > (UINT64_MAX >> 8) / base ? 0 : base * l;
        if (c->work) {
            uint64_t left = lim->node_end > c->used ? lim->node_end - c->used : 1;
            if (sp->node_limit == 0 || sp->node_limit > left)
                sp->node_limit = left;
        }
        int r = af__search_dfs(sp, slot, cap, c->scratch);
        c->used += sp->nodes;
        if (r == AF__SEARCH_ABORTED)
            continue;
        if (r == AF__SEARCH_FOUND) {
            for (int32_t b = 0; b < sp->n; b++)
                c->best[pi->gidx[b]] = c->scratch[b];
            pi->best_h = part_height(c, pi);
        } else if (r == AF__SEARCH_INFEASIBLE) {
            pi->proven = cap + 1;
        }
        return r;
    }
}

/* One probe: every partition under cap. Returns the worst outcome (or AF_ENOMEM). */
static int probe(search_ctx_t *c, uint64_t cap, const limit_t *lim)
{
    int worst = AF__SEARCH_FOUND;
    for (int32_t k = 0; k < c->nparts; k++) {
        int r = solve_part(c, &c->parts[k], cap, lim);
        if (r < 0)
            return r;
        if (r == AF__SEARCH_INFEASIBLE)
            return r; /* the whole probe fails; other partitions are irrelevant */
        if (r > worst)
            worst = r;
        if (r == AF__SEARCH_TIMEOUT)
            return r;
    }
    return worst;
}

static uint64_t global_height(const search_ctx_t *c, uint64_t *proven)
{
    uint64_t h = 0, lb = 0;
    for (int32_t k = 0; k < c->nparts; k++) {
        if (c->parts[k].best_h > h)
            h = c->parts[k].best_h;
        if (c->parts[k].proven > lb)
            lb = c->parts[k].proven;
    }
    *proven = lb;
    return h;
}

/*
 * Minimises the height within the limit: lower bound first, then bisection. Each probe gets a
 * share of what is left (of the time, or of the nodes in the work-bounded mode).
 */
static int minimise(search_ctx_t *c, const limit_t *total)
{
    uint64_t proven, h = global_height(c, &proven);
    uint64_t lo = proven; /* probes below lo are proven or abandoned */
    int first = 1;
    while (h > lo) {
        limit_t pl = {0, 0};
        double share = first ? 0.8 : 0.5; /* the bound is often optimal: give it most */
        if (c->work) {
            /* A probe that cannot dive through the largest partition once cannot find a
             * packing: its nodes would be wasted. */
            uint64_t left = c->used < total->node_end ? total->node_end - c->used : 0;
            left = first ? left - left / 5 : left - left / 2;
            if (left < c->max_part)
                break;
            pl.node_end = c->used + left;
        } else {
            double now = af__search_now();
            if (now >= total->deadline)
                break;
            pl.deadline = now + share * (total->deadline - now);
        }
        uint64_t cap = first ? lo : lo + (h - 1 - lo) / 2;
        first = 0;
        int r = probe(c, cap, &pl);
        if (r < 0)
            return r;
        h = global_height(c, &proven);
        if (r != AF__SEARCH_FOUND)
            lo = cap + 1 > proven ? cap + 1 : proven;
    }
    return 0;
}

/* Incumbent: the given packing or the portfolio's, or a skyline fallback if it is unavailable. */
static int seed_incumbent(search_ctx_t *c, sort_key_t *keys, af_error_t *err)
{
    af_interval_t *copy = af__malloc((c->n ? c->n : 1) * sizeof *copy);
    if (!copy)
        return AF_ENOMEM;
    memcpy(copy, c->given ? c->given : c->iv, c->n * sizeof *copy);
    /* search_effort 0: the portfolio must not run the search it seeds */
    af_place_opts_t po = {.alignment = c->alignment};
    uint64_t h = 0;
    int rc = c->given ? 0 : af__place_portfolio(copy, c->n, &po, &h, NULL);
    if (rc == 0) {
        for (size_t i = 0; i < c->n; i++)
            c->best[i] = c->iv[i].size ? copy[i].offset : 0;
        if (packing_ok(c->iv, c->best, c->n, c->alignment, keys) != 0)
            rc = AF_EVERIFY;
    }
    af__free(copy);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory placing the incumbent");
    if (rc == 0)
        return 0;
    /* Skyline in the first static order: each buffer on top of its placed overlaps. */
    for (int32_t k = 0; k < c->nparts; k++) {
        af__search_part_t *sp = &c->parts[k].sp;
        for (int32_t i = 0; i < sp->n; i++)
            sp->off[i] = AF__SEARCH_UNPLACED;
        for (int32_t i = 0; i < sp->n; i++) {
            int32_t b = sp->order[0][i];
            uint64_t top = 0;
            for (int32_t e = sp->ov_start[b]; e < sp->ov_start[b + 1]; e++) {
                int32_t o = sp->ov[e];
                if (sp->off[o] != AF__SEARCH_UNPLACED && sp->off[o] + sp->size[o] > top)
                    top = sp->off[o] + sp->size[o];
            }
            sp->off[b] = af__align_up(top, c->alignment);
            c->best[c->parts[k].gidx[b]] = sp->off[b];
        }
    }
    return 0;
}

static int run(search_ctx_t *c, af_interval_t *out, const af_place_opts_t *o, uint64_t *height,
               af_error_t *err)
{
    sort_key_t *keys = af__malloc(3 * (c->n ? c->n : 1) * sizeof *keys);
    int64_t *times = af__malloc(2 * (c->n ? c->n : 1) * sizeof *times);
    c->best = af__calloc(c->n ? c->n : 1, sizeof *c->best);
    int rc = keys && times && c->best ? 0 : AF_ENOMEM;
    if (rc == 0)
        rc = build_parts(c, keys, times);
    for (int32_t k = 0; rc == 0 && k < c->nparts; k++)
        if ((uint64_t)c->parts[k].sp.n > c->max_part)
            c->max_part = (uint64_t)c->parts[k].sp.n;
    if (rc == 0)
        rc = seed_incumbent(c, keys, err);
    af__free(times);
    if (rc) {
        af__free(keys);
        return rc == AF_ENOMEM ? af__err(err, rc, "out of memory in placement search") : rc;
    }
    uint64_t *incumbent = af__malloc((c->n ? c->n : 1) * sizeof *incumbent);
    if (!incumbent) {
        af__free(keys);
        return af__err(err, AF_ENOMEM, "out of memory in placement search");
    }
    memcpy(incumbent, c->best, c->n * sizeof *incumbent);
    for (int32_t k = 0; k < c->nparts; k++) {
        c->parts[k].best_h = part_height(c, &c->parts[k]);
        c->parts[k].proven = c->parts[k].lb;
    }
    double limit = o && o->time_limit_s > 0 ? o->time_limit_s : DEFAULT_TIME_LIMIT_S;
    limit_t lim = {0, c->work};
    if (!c->work)
        lim.deadline = af__search_now() + limit;
    uint64_t cap = o ? o->capacity : 0;
    int r = cap ? probe(c, cap, &lim) : minimise(c, &lim);
    if (r >= 0 && packing_ok(c->iv, c->best, c->n, c->alignment, keys) != 0)
        memcpy(c->best, incumbent, c->n * sizeof *incumbent); /* never return a bad packing */
    af__free(incumbent);
    af__free(keys);
    if (r < 0)
        return af__err(err, r, "out of memory in placement search");
    uint64_t h = 0, proven;
    for (size_t i = 0; i < c->n; i++) {
        out[i].offset = c->best[i];
        if (c->iv[i].size && c->best[i] + c->iv[i].size > h)
            h = c->best[i] + c->iv[i].size;
    }
    *height = h;
    global_height(c, &proven);
    if (!cap || h <= cap)
        return 0;
    if (proven > cap)
        return af__err(err, AF_EBUDGET,
                       "the intervals do not fit in %llu bytes: at least %llu are needed (best "
                       "packing found: %llu)",
                       (unsigned long long)cap, (unsigned long long)proven, (unsigned long long)h);
    if (c->work)
        return af__err(err, AF_ETIMEDOUT,
                       "no packing within %llu bytes found in %llu search nodes (best packing "
                       "found: %llu)",
                       (unsigned long long)cap, (unsigned long long)c->work, (unsigned long long)h);
    return af__err(err, AF_ETIMEDOUT,
                   "no packing within %llu bytes found in %.3g s (best packing found: %llu)",
                   (unsigned long long)cap, limit, (unsigned long long)h);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * What a dive costs, about: a search node scans its partition's buffers and time sections, so a
 * dive through m buffers costs m x (m + sections). Counted as one partition (an upper bound
 * when there are several). Returns UINT64_MAX when out of memory.
 */
static uint64_t dive_cost(const af_interval_t *iv, size_t n)
{
    int64_t *t = af__malloc(2 * (n ? n : 1) * sizeof *t);
    if (!t)
        return UINT64_MAX;
    size_t m = 0, k = 0, d = 0;
    for (size_t i = 0; i < n; i++)
        if (iv[i].size) {
            t[k++] = iv[i].lower, t[k++] = iv[i].upper;
            m++;
        }
    qsort(t, k, sizeof *t, cmp_i64);
    for (size_t i = 0; i < k; i++)
        d += i == 0 || t[i] != t[i - 1];
    af__free(t);
    return (uint64_t)m * (uint64_t)(m + (d ? d - 1 : 0));
}

/* given: the incumbent's offsets are iv's (a valid packing), else the portfolio places one.
 * max_dive > 0: returns 1 at once when a dive would cost more (see dive_cost()). */
static int search_main(af_interval_t *iv, size_t n, const af_place_opts_t *o, int given,
                       uint64_t max_dive, uint64_t *height, af_error_t *err)
{
    uint64_t a = o && o->alignment ? o->alignment : 1, sum = 0;
    if (n > (size_t)INT32_MAX / 4)
        return af__err(err, AF_EINVAL, "too many intervals for the search: %zu", n);
    for (size_t i = 0; i < n; i++) {
        if (iv[i].lower >= iv[i].upper)
            return af__err(err, AF_EINVAL, "interval %zu: lower %lld >= upper %lld", i,
                           (long long)iv[i].lower, (long long)iv[i].upper);
        if (!af__add_u64(sum, af__align_up(iv[i].size, a), &sum) || sum > (UINT64_MAX >> 2))
            return af__err(err, AF_ESIZE, "interval sizes overflow at interval %zu", i);
    }
    /* A dive too costly for the caller: skipped before anything is built. */
    uint64_t cost = max_dive ? dive_cost(iv, n) : 0;
    if (cost == UINT64_MAX)
        return af__err(err, AF_ENOMEM, "out of memory in placement search");
    if (cost > max_dive)
        return 1;
    /* The search works on aligned sizes (footprints), as every placer does. */
    af_interval_t *work = af__malloc((n ? n : 1) * sizeof *work);
    if (!work)
        return af__err(err, AF_ENOMEM, "out of memory in placement search");
    for (size_t i = 0; i < n; i++) {
        work[i] = iv[i];
        work[i].size = af__align_up(iv[i].size, a);
    }
    search_ctx_t c = {.iv = work,
                      .n = n,
                      .alignment = a,
                      .given = given ? iv : NULL,
                      .work = o ? o->search_nodes : 0,
                      .max_dive = max_dive};
    int rc = run(&c, iv, o, height, err);
    for (int32_t k = 0; k < c.nparts; k++)
        free_part(&c.parts[k]);
    af__free(c.parts);
    af__free(c.scratch);
    af__free(c.keys);
    af__free(c.best);
    af__free(work);
    return rc;
}

int af__place_search(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                     af_error_t *err)
{
    return search_main(iv, n, o, 0, 0, height, err);
}

int af__search_improve(af_interval_t *iv, size_t n, uint64_t alignment, uint64_t nodes,
                       uint64_t max_dive, uint64_t *height, af_error_t *err)
{
    af_place_opts_t o = {.alignment = alignment ? alignment : 1, .search_nodes = nodes ? nodes : 1};
    return search_main(iv, n, &o, 1, max_dive, height, err);
}
