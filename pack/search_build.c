/*
 * The placement search's problem (pack/search.c): partitions, sections, overlaps, features and
 * the static orders the restarts cycle through.
 *
 * Intervals of positive size are split at time points nothing is live across: the partitions
 * are independent (the arena height is the maximum of theirs). For each partition the sections
 * are the time slots between consecutive distinct endpoints; per buffer the sections it is live
 * in, the buffers it overlaps (CSR), the sections of all of them, and per section the buffers
 * live in it and those starting in it (CSR). The static orders sort the buffers by three of
 * seven features, each order built on first use.
 *
 * Lock rule: none; everything is per call.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

static int cmp_desc(const void *a, const void *b)
{
    const af__search_key_t *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] > y->k[i] ? -1 : 1;
    return x->idx - y->idx;
}

int af__search_cmp_lower(const void *a, const void *b)
{
    const af__search_key_t *x = a, *y = b;
    if (x->k[0] != y->k[0])
        return x->k[0] < y->k[0] ? -1 : 1;
    return x->idx - y->idx;
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
        sp->feat[4][b] = ~af__ord64(v->lower);
        sp->feat[5][b] = af__ord64(v->upper);
        int32_t dist = crit < sp->sec_lo[b]    ? sp->sec_lo[b] - crit
                       : crit >= sp->sec_hi[b] ? crit - sp->sec_hi[b] + 1
                                               : 0;
        sp->feat[6][b] = ~(uint64_t)dist;
    }
}

/* Sorts into order[h] by the features spec[0..2], ties by tie[b] then index. */
static void sort_order(af__search_part_t *sp, int h, const int8_t *spec, const uint64_t *tie,
                       af__search_key_t *keys)
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
const int8_t af__search_order_spec[AF__SEARCH_N_ORDERS][3] = {
    {4, 3, 1}, {5, 3, 1}, {6, 3, 1}, {4, 1, 3}, {5, 1, 3}, {6, 1, 3},
    {0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {2, 0, 1}, {3, 1, 0},
};

/* Order h of partition pi, sorted on first use: a search that ends in its first dives (the
 * common case when the lower bound is reached) sorts one or two orders, not all of them. */
const int32_t *af__search_static_order(af__search_pinfo_t *pi, int h, af__search_key_t *keys)
{
    if (!pi->sorted[h]) {
        sort_order(&pi->sp, h, af__search_order_spec[h], NULL, keys);
        pi->sorted[h] = 1;
    }
    return pi->sp.order[h];
}

/* A randomised order for restart number k: two random features, then random ties (sp->tie);
 * its features go to spec. */
void af__search_random_order(af__search_part_t *sp, uint64_t k, af__search_key_t *keys,
                             int8_t *spec)
{
    uint64_t st = k * UINT64_C(0x9E3779B97F4A7C15) + (uint64_t)sp->n;
    for (int32_t b = 0; b < sp->n; b++) {
        st = st * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        sp->tie[b] = st >> 17;
    }
    spec[0] = (int8_t)(4 + ((st >> 33) & 1)); /* sweeps: start first or end first */
    spec[1] = (int8_t)((st >> 41) % AF__SEARCH_N_FEATURES);
    spec[2] = -1;
    sort_order(sp, AF__SEARCH_RANDOM_ORDER, spec, sp->tie, keys);
}

void af__search_free_part(af__search_pinfo_t *pi)
{
    af__search_part_t *sp = &pi->sp;
    af__free(pi->gidx);
    af__free(sp->size);
    af__free(sp->sec_lo);
    af__free(sp->sec_hi);
    af__free(sp->ov_start);
    af__free(sp->ov);
    af__free(sp->ovr_lo);
    af__free(sp->ovr_hi);
    af__free(sp->sec_start);
    af__free(sp->sec_buf);
    for (int h = 0; h <= AF__SEARCH_N_ORDERS; h++)
        af__free(sp->order[h]);
    for (int f = 0; f < AF__SEARCH_N_FEATURES; f++)
        af__free(sp->feat[f]);
    af__free(sp->rank);
    af__free(sp->first_start);
    af__free(sp->first_buf);
    af__free(sp->nov_left);
    af__free(sp->cut);
    af__free(sp->nfirst);
    af__free(sp->pieces);
    af__free(sp->pend);
    af__free(sp->rkey);
    af__free(sp->tie);
    af__free(sp->rlog);
    af__free(sp->fixed);
    af__free(sp->memo);
    af__free(sp->minoff);
    af__free(sp->off);
    af__free(sp->floor);
    af__free(sp->total);
    af__free(sp->sec_init);
    af__free(sp->lim);
    af__free(sp->wit);
    af__free(sp->log);
    af__free(sp->cand);
    af__free(sp->frames);
}

/* The partition's arrays that depend only on its counts (un buffers, us sections); 0 or
 * AF_ENOMEM (what was allocated is freed by af__search_free_part). */
static int part_alloc(af__search_part_t *sp, size_t un, size_t us)
{
    sp->size = af__malloc(un * sizeof *sp->size);
    sp->sec_lo = af__malloc(un * sizeof(int32_t));
    sp->sec_hi = af__malloc(un * sizeof(int32_t));
    sp->ov_start = af__calloc(un + 1, sizeof(int32_t));
    sp->rank = af__malloc(un * sizeof(int32_t));
    sp->first_start = af__calloc(us + 1, sizeof(int32_t));
    sp->first_buf = af__malloc(un * sizeof(int32_t));
    sp->nov_left = af__malloc(un * sizeof(int32_t));
    sp->cut = af__malloc(us * sizeof(int32_t));
    sp->nfirst = af__malloc(us * sizeof(int32_t));
    sp->pieces = af__malloc((2 * un + 1) * sizeof *sp->pieces);
    sp->pend = af__malloc((un + 1) * sizeof(int32_t));
    sp->rkey = af__malloc(un * sizeof *sp->rkey);
    sp->tie = af__malloc(un * sizeof *sp->tie);
    sp->minoff = af__malloc(un * sizeof(uint64_t));
    sp->off = af__malloc(un * sizeof(uint64_t));
    sp->floor = af__malloc(us * sizeof(uint64_t));
    sp->total = af__malloc(us * sizeof(uint64_t));
    sp->sec_init = af__calloc(us, sizeof(uint64_t));
    sp->lim = af__malloc(2 * (us + 1) * sizeof(uint64_t));
    sp->wit = af__malloc((us + 1) * sizeof(int32_t));
    sp->frames = af__malloc((un + 1) * sizeof *sp->frames);
    sp->capframes = un + 1;
    int ok = sp->size && sp->sec_lo && sp->sec_hi && sp->ov_start && sp->rank && sp->first_start &&
             sp->first_buf && sp->nov_left && sp->cut && sp->nfirst && sp->pieces && sp->pend &&
             sp->rkey && sp->tie && sp->minoff && sp->off && sp->floor && sp->total &&
             sp->sec_init && sp->lim && sp->wit && sp->frames;
    for (int h = 0; h <= AF__SEARCH_N_ORDERS; h++)
        ok = ok && (sp->order[h] = af__malloc(un * sizeof(int32_t))) != NULL;
    for (int f = 0; f < AF__SEARCH_N_FEATURES; f++)
        ok = ok && (sp->feat[f] = af__malloc(un * sizeof(uint64_t))) != NULL;
    return ok ? 0 : AF_ENOMEM;
}

/* Overlaps (CSR) and the sections each buffer and the ones overlapping it span. */
static int part_overlaps(af__search_pinfo_t *pi, const af_interval_t *iv)
{
    af__search_part_t *sp = &pi->sp;
    int32_t n = sp->n;
    /* Overlaps: buffers are sorted by lower, so j > i overlaps i iff lower_j < upper_i. */
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

/* Buffers live in each section, and buffers by first section (CSRs). 0 or AF_ENOMEM. */
static int part_csr(af__search_part_t *sp)
{
    int32_t n = sp->n;
    size_t us = (size_t)sp->nsec;
    /* Buffers live in each section (CSR). */
    sp->sec_start = af__calloc(us + 1, sizeof(int32_t));
    if (!sp->sec_start)
        return AF_ENOMEM;
    for (int32_t b = 0; b < n; b++)
        for (int32_t s = sp->sec_lo[b]; s < sp->sec_hi[b]; s++)
            sp->sec_start[s + 1]++;
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->sec_start[s + 1] += sp->sec_start[s];
    sp->sec_buf = af__malloc(((size_t)sp->sec_start[sp->nsec] + 1) * sizeof(int32_t));
    if (!sp->sec_buf)
        return AF_ENOMEM;
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->floor[s] = (uint64_t)sp->sec_start[s]; /* fill cursors */
    for (int32_t b = 0; b < n; b++)
        for (int32_t s = sp->sec_lo[b]; s < sp->sec_hi[b]; s++)
            sp->sec_buf[sp->floor[s]++] = b;
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->wit[s] = sp->sec_start[s]; /* every section has a live buffer */
    /* Buffers by first section (CSR): the candidates of a piece. */
    for (int32_t b = 0; b < n; b++)
        sp->first_start[sp->sec_lo[b] + 1]++;
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->first_start[s + 1] += sp->first_start[s];
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->nfirst[s] = sp->first_start[s]; /* fill cursors */
    for (int32_t b = 0; b < n; b++)
        sp->first_buf[sp->nfirst[sp->sec_lo[b]]++] = b;
    return 0;
}

/* Sections and overlaps of one partition; gidx is sorted by lower. */
static int build_part(af__search_pinfo_t *pi, const af_interval_t *iv, uint64_t a,
                      af__search_key_t *keys, int64_t *times)
{
    af__search_part_t *sp = &pi->sp;
    int32_t n = sp->n;
    size_t nt = 0;
    for (int32_t b = 0; b < n; b++) {
        times[nt++] = iv[pi->gidx[b]].lower;
        times[nt++] = iv[pi->gidx[b]].upper;
    }
    for (size_t i = 0; i < nt; i++)
        keys[i].k[0] = af__ord64(times[i]), keys[i].idx = 0;
    qsort(keys, nt, sizeof *keys, af__search_cmp_lower);
    size_t nu = 0;
    for (size_t i = 0; i < nt; i++)
        if (nu == 0 || keys[i].k[0] != keys[nu - 1].k[0])
            keys[nu++].k[0] = keys[i].k[0];
    sp->nsec = (int32_t)nu - 1;
    sp->alignment = a;
    size_t un = (size_t)n, us = (size_t)sp->nsec;
    if (part_alloc(sp, un, us))
        return AF_ENOMEM;
    for (int32_t b = 0; b < n; b++) {
        const af_interval_t *v = &iv[pi->gidx[b]];
        sp->size[b] = v->size;
        /* Binary search of the endpoints among the nu distinct times. */
        for (int e = 0; e < 2; e++) {
            uint64_t t = af__ord64(e ? v->upper : v->lower);
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
    if (part_overlaps(pi, iv) || part_csr(sp))
        return AF_ENOMEM;
    build_features(sp, iv, pi->gidx);
    af__search_static_order(pi, 0, keys); /* the skyline fallback uses order 0 */
    return 0;
}

/* Splits the positive-size intervals at time points nothing is live across. */
/* The fixed offsets of the partition's buffers, when it has a fixed one. 0 or AF_ENOMEM. */
static int fixed_offsets(af__search_pinfo_t *pi, const af_interval_t *iv, const uint8_t *fixed)
{
    int any = 0;
    for (int32_t b = 0; b < pi->sp.n; b++)
        any |= fixed[pi->gidx[b]];
    if (!any)
        return 0;
    pi->sp.fixed = af__malloc((size_t)pi->sp.n * sizeof(uint64_t));
    if (!pi->sp.fixed)
        return AF_ENOMEM;
    for (int32_t b = 0; b < pi->sp.n; b++)
        pi->sp.fixed[b] = fixed[pi->gidx[b]] ? iv[pi->gidx[b]].offset : AF__SEARCH_UNPLACED;
    return 0;
}

size_t af__search_sort_positive(const af_interval_t *iv, size_t n, af__search_key_t *keys)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (iv[i].size == 0)
            continue;
        keys[m].k[0] = af__ord64(iv[i].lower);
        keys[m].idx = (int32_t)i;
        m++;
    }
    qsort(keys, m, sizeof *keys, af__search_cmp_lower);
    return m;
}

int af__search_build_parts(const af_interval_t *iv, size_t n, uint64_t a, const uint8_t *fixed,
                           af__search_pinfo_t **parts, int32_t *nparts, size_t *maxn_out,
                           af__search_key_t *keys, int64_t *times)
{
    size_t m = af__search_sort_positive(iv, n, keys);
    int32_t *sorted = af__malloc((m ? m : 1) * sizeof *sorted);
    if (!sorted)
        return AF_ENOMEM;
    for (size_t i = 0; i < m; i++)
        sorted[i] = keys[i].idx;
    int rc = 0;
    size_t cap = 0, maxn = 0;
    for (size_t i = 0; i < m && rc == 0;) {
        size_t start = i;
        int64_t reach = iv[sorted[i++]].upper;
        while (i < m && iv[sorted[i]].lower < reach) {
            if (iv[sorted[i]].upper > reach)
                reach = iv[sorted[i]].upper;
            i++;
        }
        rc = af__grow((void **)parts, &cap, (size_t)*nparts + 1, sizeof **parts);
        if (rc)
            break;
        af__search_pinfo_t *pi = &(*parts)[(*nparts)++];
        memset(pi, 0, sizeof *pi);
        pi->sp.n = (int32_t)(i - start);
        pi->gidx = af__malloc((i - start) * sizeof(int32_t));
        if (!pi->gidx) {
            rc = AF_ENOMEM;
            break;
        }
        memcpy(pi->gidx, sorted + start, (i - start) * sizeof(int32_t));
        rc = build_part(pi, iv, a, keys, times);
        if (rc == 0 && fixed)
            rc = fixed_offsets(pi, iv, fixed);
        if (i - start > maxn)
            maxn = i - start;
    }
    af__free(sorted);
    *maxn_out = maxn;
    return rc;
}
