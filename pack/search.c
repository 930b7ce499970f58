/*
 * Anytime placement search (algorithm "search"): the lowest arena height found for a set of
 * intervals within a time limit, or whether they fit under a given capacity.
 *
 * Story. Greedy placers stop 25-40% above the optimum on tightly packed instances; exact search
 * closes the gap. The problem is split at time points where nothing is live across (partitions
 * are independent: the arena height is the maximum of theirs; pack/search_build.c), and each
 * partition's "fits under capacity C?" question is answered by one of two complete branch and
 * bound engines: the canonical search after MiniMalloc (Moffitt, ASPLOS 2023; pack/search_dfs.c:
 * buffers in (offset, rank) order, each at its minimum offset) and a skyline search that fills
 * the lowest free point or leaves it empty (pack/search_sky.c). Both split the partition further
 * as the search goes (a piece whose buffers no longer cross a section boundary splits in two,
 * searched one after the other, re-ranked on its own cross-sections) and remember the pieces
 * that have no packing (pack/search_memo.c), so the same dead end is not searched twice. The
 * static order decides how the search sweeps: time sweeps (start first, end first, outward from
 * the largest cross-section) fill tight instances level by level from one side, MiniMalloc's
 * orders (largest cross-section, length, area) suit other shapes. Search times are heavy-tailed
 * (a run either dives to a packing with little backtracking or thrashes), so a partition is
 * solved by restarts with Luby-scaled node limits (24n x 1 1 2 1 1 2 4 ...), alternating the
 * static orders and randomised sweep orders (from a fixed seed) and, two restarts each, the two
 * engines; no order or engine can eat the whole budget. A run that ends below its node limit is
 * a proof either way (both engines are complete). In the anytime mode the skyline restarts try
 * the best-fitting buffer first and keep every valley's bottom row coverable (pack/search_sky.c;
 * generated tight instances at 10 s, seeds 1-6: see BENCHMARKS.md); the work-bounded mode keeps
 * the plain skyline search, so the default placer's packings do not change.
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
 * probes get the same shares of the nodes left as of the time left (the bound's half of them
 * with a budget of work units: see minimise()), and restarts are clipped to what their probe has
 * left. Restart seeds are fixed, so the same input gives the same packing
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
 * capacity is proven too small (below the lower bound or search space exhausted; what is left of
 * the limit then minimises the height, so the packing written is as low as without a capacity)
 * or AF_ETIMEDOUT when the limit ran out before an answer.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIME_LIMIT_S 10.0

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
    int half_at_bound;          /* work units (the default placer): the bound's probe gets half */
    int cpu;                    /* anytime mode: the limit is the thread's CPU time */
    uint64_t max_dive;          /* > 0: not run unless a dive costs at most this */
    uint64_t max_part;          /* buffers of the largest partition */
    uint64_t used;              /* nodes explored so far (work-bounded mode) */
    const uint8_t *fixed;       /* NULL, or per interval 1 when it keeps its offset */
    uint64_t *best;             /* n: best packing's offsets */
    af__search_pinfo_t *parts;
    int32_t nparts;
    uint64_t *scratch;      /* max partition size */
    af__search_key_t *keys; /* max partition size */
} search_ctx_t;

/* ---- independent checker ------------------------------------------------------------------ */

/* 0 when no two intervals overlap in both time and space and all offsets are aligned. */
static int packing_ok(const af_interval_t *iv, const uint64_t *off, size_t n, uint64_t a,
                      af__search_key_t *keys)
{
    for (size_t i = 0; i < n; i++)
        if (a > 1 && off[i] % a)
            return -1;
    size_t m = af__search_sort_positive(iv, n, keys);
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

/* ---- the height search -------------------------------------------------------------------- */

static uint64_t part_height(const search_ctx_t *c, const af__search_pinfo_t *pi)
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
    return c->work ? c->used >= l->node_end : af__search_now(c->cpu) > l->deadline;
}

/*
 * Does partition pi fit under cap within the limit? Restarts with Luby-scaled node limits,
 * alternating the static orders and randomised sweep orders. A run that ends without hitting its
 * node limit is a proof either way. Updates best[] and pi->best_h on success, pi->proven on a
 * proof. In the work-bounded mode a run's node limit is also clipped to what the limit leaves,
 * and every node explored is charged to c->used.
 */
static int solve_part(search_ctx_t *c, af__search_pinfo_t *pi, uint64_t cap, const limit_t *lim)
{
    if (pi->best_h <= cap)
        return AF__SEARCH_FOUND;
    if (pi->proven > cap)
        return AF__SEARCH_INFEASIBLE;
    af__search_part_t *sp = &pi->sp;
    sp->deadline = lim->deadline;
    sp->use_clock = c->work ? 0 : c->cpu ? 2 : 1;
    uint64_t base = 24 * (uint64_t)sp->n + 64;
    for (uint64_t i = 1;; i++) {
        if (i > 1 && out_of_work(c, lim))
            return AF__SEARCH_TIMEOUT;
        int slot = (int)((i - 1) / 2 % AF__SEARCH_N_ORDERS);
        int8_t spec[3];
        if (i % 2) {
            af__search_static_order(pi, slot, c->keys);
            memcpy(spec, af__search_order_spec[slot], sizeof spec);
        } else {
            af__search_random_order(sp, i, c->keys, spec);
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
        sp->sky_ff = (int)((i / 4) % 2); /* every other pair of skyline restarts */
        /* anytime mode: the skyline restarts try the best-fitting buffers first and test every
         * valley's bottom row (the work-bounded mode, the default placer's, keeps its search) */
        sp->sky_fit = sp->sky_rows = !c->work;
        int r = (i / 2) % 2 && !sp->fixed ? af__search_sky(sp, slot, cap, c->scratch)
                                          : af__search_dfs(sp, slot, spec, cap, c->scratch);
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
 * share of what is left (of the time, or of the nodes in the work-bounded mode): 0.8 to the
 * bound's probe, then 0.5 - except with a budget of work units (the default placer's), where
 * the bound gets half: that budget is large enough for the bound when it is optimal (MiniMalloc's
 * H needs 0.4 of AF_PLACE_SEARCH_WORK there), while an instance whose optimum is well above the
 * bound needs the rest for the probes above it (D, 6% above: 0.8 at the bound left it at 1.071 x
 * the bound, half reaches 1.045). The planner's node budgets (search_effort) are small and its
 * graphs' bound is usually optimal: they keep 0.8 (half of it loses the zoo's randwire).
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
            left -= first && !c->half_at_bound ? left / 5 : left / 2;
            if (left < c->max_part)
                break;
            pl.node_end = c->used + left;
        } else {
            double now = af__search_now(c->cpu);
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

/*
 * Incumbent: the given packing or the default placer's (the portfolio with its work-bounded
 * search member, whose budget shrinks with a time limit under 1 s: the search never writes a
 * packing above the default's), or a skyline fallback if it is unavailable.
 */
static int seed_incumbent(search_ctx_t *c, af__search_key_t *keys, double limit, af_error_t *err)
{
    af_interval_t *copy = af__malloc((c->n ? c->n : 1) * sizeof *copy);
    if (!copy)
        return AF_ENOMEM;
    memcpy(copy, c->given ? c->given : c->iv, c->n * sizeof *copy);
    uint64_t work = AF_PLACE_SEARCH_WORK;
    if (!c->work && limit < 1.0)
        work = (uint64_t)((double)work * limit);
    af_place_opts_t po = {.alignment = c->alignment, .search_work = work ? work : 1};
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
    af__search_key_t *keys = af__malloc(3 * (c->n ? c->n : 1) * sizeof *keys);
    int64_t *times = af__malloc(2 * (c->n ? c->n : 1) * sizeof *times);
    c->best = af__calloc(c->n ? c->n : 1, sizeof *c->best);
    int rc = keys && times && c->best ? 0 : AF_ENOMEM;
    size_t maxn = 0;
    /* the limit counts from here: building and the incumbent are part of it */
    double limit = o && o->time_limit_s > 0 ? o->time_limit_s : DEFAULT_TIME_LIMIT_S;
    double start = c->work ? 0 : af__search_now(c->cpu);
    if (rc == 0)
        rc = af__search_build_parts(c->iv, c->n, c->alignment, c->fixed, &c->parts, &c->nparts,
                                    &maxn, keys, times);
    if (rc == 0) {
        c->scratch = af__malloc((maxn ? maxn : 1) * sizeof(uint64_t));
        c->keys = af__malloc((maxn ? maxn : 1) * sizeof *c->keys);
        if (!c->scratch || !c->keys)
            rc = AF_ENOMEM;
    }
    for (int32_t k = 0; rc == 0 && k < c->nparts; k++)
        if ((uint64_t)c->parts[k].sp.n > c->max_part)
            c->max_part = (uint64_t)c->parts[k].sp.n;
    if (rc == 0)
        rc = seed_incumbent(c, keys, limit, err);
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
    limit_t lim = {0, c->work};
    if (!c->work)
        lim.deadline = start + limit;
    uint64_t cap = o ? o->capacity : 0;
    int r = cap ? probe(c, cap, &lim) : minimise(c, &lim);
    /* A capacity proven out of reach: the rest of the limit lowers the packing that is written. */
    if (cap && r == AF__SEARCH_INFEASIBLE && !c->fixed)
        r = minimise(c, &lim);
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
                       "proven: no packing fits in %llu bytes, at least %llu are needed (best "
                       "packing found: %llu)",
                       (unsigned long long)cap, (unsigned long long)proven, (unsigned long long)h);
    if (c->work)
        return af__err(err, AF_ETIMEDOUT,
                       "not proven: no packing within %llu bytes found in %llu search nodes (best "
                       "packing found: %llu)",
                       (unsigned long long)cap, (unsigned long long)c->work, (unsigned long long)h);
    return af__err(err, AF_ETIMEDOUT,
                   "not proven: no packing within %llu bytes found in %.3g s (best packing found: "
                   "%llu)",
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
static uint64_t dive_cost(const af_interval_t *iv, size_t n, uint64_t *per_node)
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
    *per_node = (uint64_t)(m + (d ? d - 1 : 0));
    return (uint64_t)m * *per_node;
}

/* given: the incumbent's offsets are iv's (a valid packing), else the portfolio places one.
 * max_dive > 0: returns 1 at once when a dive would cost more (see dive_cost()). */
static int search_main(af_interval_t *iv, size_t n, const af_place_opts_t *o, int given,
                       uint64_t max_dive, uint64_t work_units, const uint8_t *fixed,
                       uint64_t *height, af_error_t *err)
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
    /* A dive too costly for the caller, or a work budget that does not pay for one dive: skipped
     * before anything is built. */
    uint64_t per_node = 1, cost = max_dive || work_units ? dive_cost(iv, n, &per_node) : 0;
    if (cost == UINT64_MAX)
        return af__err(err, AF_ENOMEM, "out of memory in placement search");
    if ((max_dive && cost > max_dive) || (work_units && cost > work_units))
        return 1;
    af_place_opts_t wo;
    if (work_units) {
        wo = *o;
        wo.search_nodes = work_units / (per_node ? per_node : 1);
        o = &wo;
    }
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
                      .max_dive = max_dive,
                      .half_at_bound = work_units != 0,
                      .cpu = o && o->cpu_time,
                      .fixed = fixed};
    int rc = run(&c, iv, o, height, err);
    for (int32_t k = 0; k < c.nparts; k++)
        af__search_free_part(&c.parts[k]);
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
    return search_main(iv, n, o, 0, 0, 0, NULL, height, err);
}

int af__search_improve(af_interval_t *iv, size_t n, uint64_t alignment, uint64_t nodes,
                       uint64_t work, uint64_t max_dive, uint64_t *height, af_error_t *err)
{
    af_place_opts_t o = {.alignment = alignment ? alignment : 1, .search_nodes = nodes ? nodes : 1};
    return search_main(iv, n, &o, 1, max_dive, work, NULL, height, err);
}

int af__search_window(af_interval_t *iv, size_t n, const uint8_t *fixed, uint64_t a, uint64_t cap,
                      uint64_t nodes)
{
    af_place_opts_t o = {
        .alignment = a ? a : 1, .capacity = cap, .search_nodes = nodes ? nodes : 1};
    uint64_t h = 0;
    int rc = search_main(iv, n, &o, 1, 0, 0, fixed, &h, NULL);
    return rc == AF_ENOMEM ? rc : rc == 0 && h <= cap ? 0 : 1;
}
