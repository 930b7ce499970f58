/*
 * Tight placement instances with a known optimum (include/arenaflow/pack.h).
 *
 * Algorithm: start from one piece, the rectangle [0, horizon) x [0, capacity). Until there are
 * enough pieces, pick a piece (the largest of three drawn at random, in normalised area, so the
 * pieces stay comparable without an O(n) scan) and cut it across its time span or its byte
 * range, choosing the direction in proportion to its normalised extents and the cut point in the
 * middle 60% (no slivers). Every piece becomes one interval [t0, t1) of y1 - y0 bytes at offset
 * y0.
 *
 * Invariants that make the optimum provable: the pieces always tile the rectangle, so the live
 * total at every time is exactly the capacity (lower bound = capacity) and the offsets are a
 * packing of height capacity. Jitter only shrinks pieces (size or lifetime, keeping the offset)
 * that are not live at one witness time: shrinking keeps the packing valid, and the full cross-
 * section at the witness keeps the lower bound, so the optimum stays the capacity.
 *
 * The PRNG is splitmix64 on a local state: same options, same instance, on every platform.
 * No global state; reentrant.
 */
#include "pack/pack_int.h"

typedef struct piece {
    int64_t t0, t1;
    uint64_t y0, y1;
} piece_t;

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

/* Cuts pieces until there are `want` of them or none can be cut; returns the count. */
static size_t cut_pieces(piece_t *pc, size_t want, uint64_t *s, double T, double C)
{
    size_t n = 1, misses = 0;
    while (n < want && misses < 64) {
        size_t pick = next_below(s, n);
        for (int k = 0; k < 2; k++) {
            size_t q = next_below(s, n);
            if (norm_area(&pc[q], T, C) > norm_area(&pc[pick], T, C))
                pick = q;
        }
        piece_t *p = &pc[pick];
        uint64_t w = (uint64_t)(p->t1 - p->t0), h = p->y1 - p->y0;
        if (w < 2 && h < 2) {
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

/* Shrinks some pieces not live at the witness time (see the file comment). */
static void jitter(piece_t *pc, size_t n, uint64_t *s, int64_t witness, double frac)
{
    for (size_t i = 0; i < n; i++) {
        piece_t *p = &pc[i];
        if (p->t0 <= witness && witness < p->t1)
            continue;
        if (next_unit(s) >= frac)
            continue;
        uint64_t w = (uint64_t)(p->t1 - p->t0), h = p->y1 - p->y0;
        int what = (int)next_below(s, 3);
        if (what == 0 && h >= 2) {
            p->y1 -= 1 + next_below(s, h / 2);
        } else if (what == 1 && w >= 2) {
            p->t0 += (int64_t)next_below(s, w / 3 + 1);
        } else if (w >= 2) {
            p->t1 -= (int64_t)next_below(s, w / 3 + 1);
        }
    }
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
    int64_t horizon = o->horizon ? o->horizon : 4 * (int64_t)o->buffers;
    piece_t *pc = af__malloc(o->buffers * sizeof *pc);
    if (!pc)
        return af__err(err, AF_ENOMEM, "out of memory generating a tight instance");
    uint64_t s = o->seed;
    pc[0] = (piece_t){0, horizon, 0, o->capacity};
    size_t m = cut_pieces(pc, o->buffers, &s, (double)horizon, (double)o->capacity);
    int64_t witness = (int64_t)next_below(&s, (uint64_t)horizon);
    double frac = o->jitter < 0 ? 0 : o->jitter > 1 ? 1 : o->jitter;
    jitter(pc, m, &s, witness, frac);
    af_interval_t *iv = af__malloc(m * sizeof *iv);
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
    *optimum = o->capacity;
    return 0;
}

void af_tight_free(af_interval_t *iv)
{
    af__free(iv);
}
