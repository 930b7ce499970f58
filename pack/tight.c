/*
 * Tight placement instances with a known optimum (include/arenaflow/pack.h).
 *
 * Every shape tiles the rectangle [0, horizon) x [0, capacity) with pieces; every piece becomes
 * one interval [t0, t1) of y1 - y0 bytes at offset y0.
 *   guillotine: start from one piece; until there are enough, pick a piece (the largest of three
 *     drawn at random, in normalised area, so the pieces stay comparable without an O(n) scan)
 *     and cut it across its time span or its byte range, the direction in proportion to its
 *     normalised extents, the cut point in the middle 60% (no slivers).
 *   sweep: about sqrt(n) pieces start at 0; at each event one live piece (sometimes with its
 *     neighbour above) ends, and the gap is refilled by one to three new pieces; the live
 *     pieces end at the horizon.
 *   staircase: about sqrt(n / 4) bands of random heights, each cut into pieces of one length,
 *     band j's joints shifted by j / bands of a length against band 0's.
 *   equal: about sqrt(n) lanes of capacity / lanes bytes, each cut at random distinct times.
 *   giants: one to three long pieces carved out of the largest remaining piece (10-30% of the
 *     capacity, 60-90% of its span; the four rectangles around each stay pieces), then the
 *     guillotine cuts on everything else.
 *
 * Invariants that make the optimum provable: the pieces always tile the rectangle, so the live
 * total at every time is exactly the capacity (lower bound = capacity) and the offsets are a
 * packing of height capacity. Jitter only shrinks pieces (size or lifetime, keeping the offset)
 * that are not live at one witness time: shrinking keeps the packing valid, and the full cross-
 * section at the witness keeps the lower bound, so the optimum stays the capacity. The "equal"
 * shape shrinks lifetimes only, so its sizes stay equal.
 *
 * The PRNG is splitmix64 on a local state: same options, same instance, on every platform.
 * No global state; reentrant.
 */
#include "pack/pack_int.h"

#include <string.h>

typedef struct piece {
    int64_t t0, t1;
    uint64_t y0, y1;
    int fixed; /* a giant: not cut further */
} piece_t;

static const char *const shape_names[] = {"guillotine", "sweep",  "staircase",
                                          "equal",      "giants", NULL};
_Static_assert(sizeof shape_names / sizeof shape_names[0] == AF_TIGHT_N_SHAPES + 1,
               "shape_names out of step with af_tight_shape_t");

const char *const *af_tight_shape_names(void)
{
    return shape_names;
}

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double next_unit(uint64_t *s)
{
    return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, bound), bound >= 1. */
static uint64_t next_below(uint64_t *s, uint64_t bound)
{
    return next_u64(s) % bound;
}

void af_tight_opts_init(af_tight_opts_t *o)
{
    o->buffers = 200;
    o->seed = 1;
    o->capacity = 1048576;
    o->horizon = 0;
    o->jitter = 0.0;
    o->shape = AF_TIGHT_GUILLOTINE;
}

/* A cut point strictly inside (0, len), in the middle 60% when len allows it. */
static uint64_t cut_point(uint64_t *s, uint64_t len)
{
    uint64_t p = (uint64_t)((double)len * (0.2 + 0.6 * next_unit(s)));
    if (p < 1)
        p = 1;
    if (p > len - 1)
        p = len - 1;
    return p;
}

static double norm_area(const piece_t *p, double horizon, double capacity)
{
    return (double)(p->t1 - p->t0) / horizon * ((double)(p->y1 - p->y0) / capacity);
}

/* Cuts pieces (n of them so far) until there are `want` or none can be cut; returns the count. */
static size_t cut_pieces(piece_t *pc, size_t n, size_t want, uint64_t *s, double T, double C)
{
    size_t misses = 0;
    while (n < want && misses < 64) {
        size_t pick = next_below(s, n);
        for (int k = 0; k < 2; k++) {
            size_t q = next_below(s, n);
            if (pc[pick].fixed || norm_area(&pc[q], T, C) > norm_area(&pc[pick], T, C))
                pick = q;
        }
        piece_t *p = &pc[pick];
        uint64_t w = (uint64_t)(p->t1 - p->t0), h = p->y1 - p->y0;
        if (p->fixed || (w < 2 && h < 2)) {
            misses++;
            continue;
        }
        misses = 0;
        double tw = (double)w / T, yh = (double)h / C;
        int vertical = h < 2 || (w >= 2 && next_unit(s) * (tw + yh) < tw);
        piece_t q = *p;
        if (vertical) {
            int64_t at = p->t0 + (int64_t)cut_point(s, w);
            p->t1 = at;
            q.t0 = at;
        } else {
            uint64_t at = p->y0 + cut_point(s, h);
            p->y1 = at;
            q.y0 = at;
        }
        pc[n++] = q;
    }
    return n;
}

/* Shrinks some pieces not live at the witness time (see the file comment); sizes only when
 * sizes may change. */
static void jitter(piece_t *pc, size_t n, uint64_t *s, int64_t witness, double frac, int sizes)
{
    for (size_t i = 0; i < n; i++) {
        piece_t *p = &pc[i];
        if (p->t0 <= witness && witness < p->t1)
            continue;
        if (next_unit(s) >= frac)
            continue;
        uint64_t w = (uint64_t)(p->t1 - p->t0), h = p->y1 - p->y0;
        int what = (int)next_below(s, 3);
        if (!sizes && what == 0)
            what = 1 + (int)next_below(s, 2);
        if (what == 0 && h >= 2) {
            p->y1 -= 1 + next_below(s, h / 2);
        } else if (what == 1 && w >= 2) {
            p->t0 += (int64_t)next_below(s, w / 3 + 1);
        } else if (w >= 2) {
            p->t1 -= (int64_t)next_below(s, w / 3 + 1);
        }
    }
}

/* Splits [a, b) into k parts of at least one each at random points (k <= b - a), in order:
 * cuts[0..k] with cuts[0] = a, cuts[k] = b. */
static void random_split(uint64_t *st, uint64_t a, uint64_t b, size_t k, uint64_t *cuts)
{
    cuts[0] = a;
    for (size_t i = 1; i < k; i++) { /* k - 1 distinct points in (a, b), by insertion */
        uint64_t v;
        int dup;
        do {
            v = a + 1 + next_below(st, b - a - 1);
            dup = 0;
            for (size_t j = 1; j < i; j++)
                dup |= cuts[j] == v;
        } while (dup);
        size_t j = i;
        while (j > 1 && cuts[j - 1] > v) {
            cuts[j] = cuts[j - 1];
            j--;
        }
        cuts[j] = v;
    }
    cuts[k] = b;
}

/* sqrt(n) rounded down, at least 1. */
static size_t isqrt(size_t n)
{
    size_t r = 1;
    while ((r + 1) * (r + 1) <= n)
        r++;
    return r;
}

/* Sweep: live[] holds the live pieces' indices by offset; see the file comment. */
static size_t sweep_pieces(piece_t *pc, size_t want, uint64_t *st, int64_t T, uint64_t C,
                           size_t *live, uint64_t *cuts)
{
    size_t k = isqrt(want) > C ? (size_t)C : isqrt(want), nl = k, n = 0;
    if (k > want)
        k = want;
    random_split(st, 0, C, k, cuts);
    for (size_t i = 0; i < k; i++) {
        pc[n] = (piece_t){0, T, cuts[i], cuts[i + 1], 0};
        live[i] = n++;
    }
    nl = k;
    /* each event adds about 1.7 pieces: spread the events over 80% of the horizon */
    int64_t t = 0, events = (int64_t)((want - k) * 6 / 10) + 1, step = T * 8 / 10 / events;
    step = step < 1 ? 1 : step;
    while (n < want) {
        int64_t prev = t;
        t += 1 + (int64_t)next_below(st, (uint64_t)(2 * step - 1));
        t = t > T - 2 ? prev + 1 : t; /* near the horizon: one step at a time */
        if (t > T - 2)
            break;
        size_t j = next_below(st, nl), e = j + 1 < nl && next_below(st, 2) ? j + 2 : j + 1;
        uint64_t y0 = pc[live[j]].y0, y1 = pc[live[e - 1]].y1;
        for (size_t i = j; i < e; i++)
            pc[live[i]].t1 = t;
        size_t r = e - j + next_below(st, 3); /* as many as ended, give or take one */
        r = r > 1 ? r - 1 : 1;
        r = r > want - n ? want - n : r;
        r = r > y1 - y0 ? (size_t)(y1 - y0) : r;
        random_split(st, y0, y1, r, cuts);
        /* replace live[j, e) by the r new pieces */
        memmove(live + j + r, live + e, (nl - e) * sizeof *live);
        nl = nl - (e - j) + r;
        for (size_t i = 0; i < r; i++) {
            pc[n] = (piece_t){t, T, cuts[i], cuts[i + 1], 0};
            live[j + i] = n++;
        }
    }
    return n;
}

/* Staircase: bands of random heights, band j's joints shifted by j / bands of a piece length. */
static size_t staircase_pieces(piece_t *pc, size_t want, uint64_t *st, int64_t T, uint64_t C,
                               uint64_t *cuts)
{
    size_t bands = isqrt(want / 4 ? want / 4 : 1);
    bands = bands > C ? (size_t)C : bands;
    random_split(st, 0, C, bands, cuts);
    size_t n = 0;
    for (size_t j = 0; j < bands; j++) {
        size_t m = want / bands + (j < want % bands);
        if (m > (size_t)T)
            m = (size_t)T;
        double len = (double)T / (double)m, shift = len * (double)j / (double)bands;
        int64_t prev = 0;
        for (size_t k = 0; k < m; k++) {
            int64_t end = k + 1 == m ? T : (int64_t)(shift + len * (double)(k + 1));
            if (end <= prev)
                end = prev + 1;
            if (end > T - (int64_t)(m - k - 1))
                end = T - (int64_t)(m - k - 1);
            pc[n++] = (piece_t){prev, end, cuts[j], cuts[j + 1], 0};
            prev = end;
        }
    }
    return n;
}

/* Equal: lanes of C / lanes bytes, each cut at random distinct times; *height the lanes' top. */
static size_t equal_pieces(piece_t *pc, size_t want, uint64_t *st, int64_t T, uint64_t C,
                           uint64_t *cuts, uint64_t *height)
{
    size_t lanes = isqrt(want);
    lanes = lanes > C ? (size_t)C : lanes;
    uint64_t sz = C / lanes;
    size_t n = 0;
    for (size_t j = 0; j < lanes; j++) {
        size_t m = want / lanes + (j < want % lanes);
        m = m > (size_t)T ? (size_t)T : m;
        random_split(st, 0, (uint64_t)T, m, cuts);
        for (size_t k = 0; k < m; k++)
            pc[n++] = (piece_t){(int64_t)cuts[k], (int64_t)cuts[k + 1], j * sz, (j + 1) * sz, 0};
    }
    *height = lanes * sz;
    return n;
}

/* Giants carved out of the largest pieces, then guillotine cuts on the rest. */
static size_t giant_pieces(piece_t *pc, size_t want, uint64_t *st, int64_t T, uint64_t C)
{
    size_t n = 1, giants = 1 + next_below(st, 3);
    pc[0] = (piece_t){0, T, 0, C, 0};
    for (size_t g = 0; g < giants && n + 4 <= want; g++) {
        size_t pick = 0;
        for (size_t i = 1; i < n; i++)
            if (!pc[i].fixed && (pc[pick].fixed || norm_area(&pc[i], (double)T, (double)C) >
                                                       norm_area(&pc[pick], (double)T, (double)C)))
                pick = i;
        piece_t p = pc[pick];
        uint64_t w = (uint64_t)(p.t1 - p.t0), h = p.y1 - p.y0;
        uint64_t gw = (uint64_t)((double)w * (0.6 + 0.3 * next_unit(st)));
        uint64_t gh = (uint64_t)((double)C * (0.1 + 0.2 * next_unit(st)));
        gh = gh > h / 2 ? h / 2 : gh;
        if (p.fixed || gw < 1 || gh < 1 || gw >= w)
            break;
        int64_t t0 = p.t0 + (int64_t)next_below(st, w - gw + 1), t1 = t0 + (int64_t)gw;
        uint64_t y0 = p.y0 + next_below(st, h - gh + 1), y1 = y0 + gh;
        piece_t around[4] = {{p.t0, t0, p.y0, p.y1, 0},
                             {t1, p.t1, p.y0, p.y1, 0},
                             {t0, t1, p.y0, y0, 0},
                             {t0, t1, y1, p.y1, 0}};
        pc[pick] = (piece_t){t0, t1, y0, y1, 1};
        for (int k = 0; k < 4; k++)
            if (around[k].t1 > around[k].t0 && around[k].y1 > around[k].y0)
                pc[n++] = around[k];
    }
    return cut_pieces(pc, n, want, st, (double)T, (double)C);
}

static int build_shape(const af_tight_opts_t *o, int64_t horizon, piece_t *pc, uint64_t *st,
                       size_t *m, uint64_t *height)
{
    size_t want = o->buffers;
    uint64_t C = o->capacity;
    *height = C;
    if (o->shape == AF_TIGHT_GUILLOTINE || o->shape == AF_TIGHT_GIANTS) {
        if (o->shape == AF_TIGHT_GIANTS) {
            *m = giant_pieces(pc, want, st, horizon, C);
        } else {
            pc[0] = (piece_t){0, horizon, 0, C, 0};
            *m = cut_pieces(pc, 1, want, st, (double)horizon, (double)C);
        }
        return 0;
    }
    size_t k = isqrt(want) + want / 4 + 3;
    size_t *live = af__malloc((want + 1) * sizeof *live);
    uint64_t *cuts = af__malloc((want > k ? want : k) * sizeof *cuts + sizeof *cuts);
    if (!live || !cuts) {
        af__free(live);
        af__free(cuts);
        return AF_ENOMEM;
    }
    if (o->shape == AF_TIGHT_SWEEP)
        *m = sweep_pieces(pc, want, st, horizon, C, live, cuts);
    else if (o->shape == AF_TIGHT_STAIRCASE)
        *m = staircase_pieces(pc, want, st, horizon, C, cuts);
    else
        *m = equal_pieces(pc, want, st, horizon, C, cuts, height);
    af__free(live);
    af__free(cuts);
    return 0;
}

int af_tight_generate(const af_tight_opts_t *o, af_interval_t **out, size_t *n, uint64_t *optimum,
                      af_error_t *err)
{
    af_tight_opts_t d;
    af_tight_opts_init(&d);
    if (!o)
        o = &d;
    if (o->buffers == 0 || o->capacity == 0 || o->horizon < 0 || o->capacity > (UINT64_MAX >> 2))
        return af__err(err, AF_EINVAL,
                       "tight instance: buffers (%zu) and capacity (%llu) must be positive, "
                       "horizon (%lld) not negative",
                       o->buffers, (unsigned long long)o->capacity, (long long)o->horizon);
    if (o->buffers > ((size_t)1 << 26))
        return af__err(err, AF_EINVAL, "tight instance: too many buffers (%zu)", o->buffers);
    if ((unsigned)o->shape >= AF_TIGHT_N_SHAPES)
        return af__err(err, AF_EINVAL, "tight instance: unknown shape %d", (int)o->shape);
    int64_t horizon = o->horizon ? o->horizon : 4 * (int64_t)o->buffers;
    piece_t *pc = af__malloc(o->buffers * sizeof *pc);
    if (!pc)
        return af__err(err, AF_ENOMEM, "out of memory generating a tight instance");
    uint64_t s = o->seed, height = o->capacity;
    size_t m = 0;
    if (build_shape(o, horizon, pc, &s, &m, &height)) {
        af__free(pc);
        return af__err(err, AF_ENOMEM, "out of memory generating a tight instance");
    }
    int64_t witness = (int64_t)next_below(&s, (uint64_t)horizon);
    double frac = o->jitter < 0 ? 0 : o->jitter > 1 ? 1 : o->jitter;
    jitter(pc, m, &s, witness, frac, o->shape != AF_TIGHT_EQUAL);
    af_interval_t *iv = af__malloc((m ? m : 1) * sizeof *iv);
    if (!iv) {
        af__free(pc);
        return af__err(err, AF_ENOMEM, "out of memory generating a tight instance");
    }
    for (size_t i = m; i > 1; i--) { /* Fisher-Yates: hide the construction order */
        size_t j = next_below(&s, i);
        piece_t t = pc[i - 1];
        pc[i - 1] = pc[j];
        pc[j] = t;
    }
    for (size_t i = 0; i < m; i++)
        iv[i] = (af_interval_t){pc[i].t0, pc[i].t1, pc[i].y1 - pc[i].y0, pc[i].y0};
    af__free(pc);
    *out = iv;
    *n = m;
    *optimum = height;
    return 0;
}

void af_tight_free(af_interval_t *iv)
{
    af__free(iv);
}
