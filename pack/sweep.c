/*
 * Sweep placement: replay the intervals in time order through a simulated allocator whose
 * memory map is the arena itself, so the result is an offline placement computed in
 * O(n log n) whatever the overlap — the portfolio member that keeps million-tensor graphs fast.
 *
 * The map is a doubly linked list of segments covering [0, top), each free or held by one
 * interval. Free segments are also kept in segregated size buckets (two levels: power of two,
 * then 8 linear steps, as TLSF does) with a bitmap of non-empty buckets. Placing takes the
 * best-fitting free segment of the request's bucket (scanning at most a few entries) or any
 * segment of the next non-empty larger bucket, splits it, and grows the top when nothing fits
 * (extending a free tail segment first). An interval ending frees its segment and coalesces it
 * with free neighbours, so the map never holds two adjacent free segments.
 *
 * Intervals starting at the same time are placed largest first; sizes are already aligned, so
 * every split keeps offsets aligned. Segment slots of absorbed segments are reused, so the map
 * needs at most twice the peak number of live intervals plus one slots.
 *
 * Lock rule: none; everything is per call.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <string.h>

#define SUB 8
#define NBUCKETS (64 * SUB)
#define SCAN_LIMIT 16

typedef struct {
    uint64_t off, size;
    int32_t prev, next;   /* address order */
    int32_t bprev, bnext; /* bucket list (free segments only) */
    int32_t free;
} seg_t;

typedef struct {
    seg_t *s;
    int32_t n, tail;
    int32_t dead; /* slots of absorbed segments, chained through .next; -1 when none */
    int32_t head[NBUCKETS];
    uint64_t bitmap[NBUCKETS / 64];
    uint64_t top;
} map_t;

static int bucket_of(uint64_t size)
{
    int lg = 63 - __builtin_clzll(size | 1);
    int sub = lg >= 3 ? (int)((size >> (lg - 3)) & (SUB - 1)) : 0;
    return lg * SUB + sub;
}

static void bucket_add(map_t *m, int32_t i)
{
    int b = bucket_of(m->s[i].size);
    m->s[i].bprev = -1;
    m->s[i].bnext = m->head[b];
    if (m->head[b] >= 0)
        m->s[m->head[b]].bprev = i;
    m->head[b] = i;
    m->bitmap[b / 64] |= 1ull << (b % 64);
}

static void bucket_del(map_t *m, int32_t i)
{
    int b = bucket_of(m->s[i].size);
    if (m->s[i].bprev >= 0)
        m->s[m->s[i].bprev].bnext = m->s[i].bnext;
    else
        m->head[b] = m->s[i].bnext;
    if (m->s[i].bnext >= 0)
        m->s[m->s[i].bnext].bprev = m->s[i].bprev;
    if (m->head[b] < 0)
        m->bitmap[b / 64] &= ~(1ull << (b % 64));
}

/* First non-empty bucket >= b, or -1. */
static int next_bucket(const map_t *m, int b)
{
    for (int w = b / 64; w < NBUCKETS / 64; w++) {
        uint64_t bits = m->bitmap[w];
        if (w == b / 64)
            bits &= ~0ull << (b % 64);
        if (bits)
            return w * 64 + __builtin_ctzll(bits);
    }
    return -1;
}

static int32_t find_fit(const map_t *m, uint64_t need)
{
    int b = bucket_of(need);
    /* the request's own bucket may hold smaller segments: best fit among a few */
    int32_t best = -1, scanned = 0;
    for (int32_t i = m->head[b]; i >= 0 && scanned < SCAN_LIMIT; i = m->s[i].bnext, scanned++)
        if (m->s[i].size >= need && (best < 0 || m->s[i].size < m->s[best].size))
            best = i;
    if (best >= 0)
        return best;
    int nb = next_bucket(m, b + 1);
    return nb < 0 ? -1 : m->head[nb];
}

static int32_t new_seg(map_t *m, uint64_t off, uint64_t size, int free)
{
    int32_t i = m->dead;
    if (i >= 0)
        m->dead = m->s[i].next;
    else
        i = m->n++;
    m->s[i] = (seg_t){off, size, -1, -1, -1, -1, free};
    return i;
}

/* Takes `need` bytes at the low end of free segment i; the rest stays free after it. */
static int32_t take(map_t *m, int32_t i, uint64_t need)
{
    bucket_del(m, i);
    m->s[i].free = 0;
    if (m->s[i].size > need) {
        int32_t r = new_seg(m, m->s[i].off + need, m->s[i].size - need, 1);
        m->s[r].prev = i;
        m->s[r].next = m->s[i].next;
        if (m->s[i].next >= 0)
            m->s[m->s[i].next].prev = r;
        else
            m->tail = r;
        m->s[i].next = r;
        m->s[i].size = need;
        bucket_add(m, r);
    }
    return i;
}

static int32_t alloc_top(map_t *m, uint64_t need)
{
    int32_t t = m->tail;
    if (t >= 0 && m->s[t].free) { /* grow the free tail to fit */
        bucket_del(m, t);
        m->top += need - m->s[t].size;
        m->s[t].size = need;
        m->s[t].free = 0;
        return t;
    }
    int32_t i = new_seg(m, m->top, need, 0);
    m->s[i].prev = t;
    if (t >= 0)
        m->s[t].next = i;
    m->tail = i;
    m->top += need;
    return i;
}

static void release(map_t *m, int32_t i)
{
    m->s[i].free = 1;
    int32_t p = m->s[i].prev, q = m->s[i].next;
    if (q >= 0 && m->s[q].free) { /* absorb the next segment */
        bucket_del(m, q);
        m->s[i].size += m->s[q].size;
        m->s[i].next = m->s[q].next;
        if (m->s[q].next >= 0)
            m->s[m->s[q].next].prev = i;
        else
            m->tail = i;
        m->s[q].next = m->dead;
        m->dead = q;
    }
    if (p >= 0 && m->s[p].free) { /* fold into the previous segment */
        bucket_del(m, p);
        m->s[p].size += m->s[i].size;
        m->s[p].next = m->s[i].next;
        if (m->s[i].next >= 0)
            m->s[m->s[i].next].prev = p;
        else
            m->tail = p;
        m->s[i].next = m->dead;
        m->dead = i;
        i = p;
    }
    bucket_add(m, i);
}

uint64_t af__place_sweep(const af_interval_t *iv, size_t n, const uint64_t *sz, uint64_t *off,
                         uint64_t *pairs)
{
    uint64_t live = 0, seen = 0;
    map_t m;
    memset(&m, 0, sizeof(m));
    memset(m.head, 0xff, sizeof(m.head));
    m.tail = m.dead = -1;
    int32_t *by_s = af__malloc((n + 1) * sizeof(int32_t));
    int32_t *by_e = af__malloc((n + 1) * sizeof(int32_t));
    int32_t *seg_of = af__malloc((n + 1) * sizeof(int32_t));
    uint64_t height = UINT64_MAX;
    if (!by_s || !by_e || !seg_of || af__sort_by_start(iv, sz, n, by_s) ||
        af__sort_by_end(iv, n, 0, by_e))
        goto out;
    /* Segments in use never exceed twice the intervals live at once plus one (each holds one,
     * and no two free segments are adjacent); absorbed slots are reused. */
    size_t most = 0;
    for (size_t k = 0, e = 0, now = 0; k < n; k++) {
        while (e < n && iv[by_e[e]].upper <= iv[by_s[k]].lower)
            e++, now--;
        now++;
        most = now > most ? now : most;
    }
    if (!(m.s = af__malloc((2 * most + 2) * sizeof(seg_t))))
        goto out;
    size_t e = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t t = by_s[k];
        while (e < n && iv[by_e[e]].upper <= iv[t].lower) {
            int32_t d = by_e[e++];
            live--;
            if (sz[d])
                release(&m, seg_of[d]);
        }
        seen += live++; /* every interval still live overlaps t: each pair counted once */
        if (sz[t] == 0) {
            off[t] = 0;
            continue;
        }
        int32_t f = find_fit(&m, sz[t]);
        int32_t s = f >= 0 ? take(&m, f, sz[t]) : alloc_top(&m, sz[t]);
        seg_of[t] = s;
        off[t] = m.s[s].off;
    }
    height = m.top;
    if (pairs)
        *pairs = seen;
out:
    af__free(m.s);
    af__free(by_s);
    af__free(by_e);
    af__free(seg_of);
    return height;
}
