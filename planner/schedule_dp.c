/*
 * Exact scheduling by dynamic programming over scheduled sets (Serenity, Ahn et al. 2020).
 *
 * For a window W of consecutive steps of a topological order, everything before the window is
 * already run and everything after runs later, so any topological order of W can be spliced in.
 * The live bytes after running a subset S of W depend on S only (a root is live if some toucher
 * has run and some has not, or it is an input/output), so the search is a DP over subsets:
 * peak(S + u) = min over last units u of max(peak(S), peak of running u after S). States are
 * expanded layer by layer (|S| = 0, 1, ...); each layer is a hash table keyed by S keeping the
 * lowest peak (first found on ties, so results are deterministic). A transition whose step
 * reaches `bound` (the best peak known, from the heuristics) is pruned, which is what keeps the
 * reachable state count small. The number of states is capped; hitting the cap abandons the
 * window (no partial result is used) and reports the search incomplete.
 *
 * Units: with `contract` set, chains inside the window (u -> v where u's only successor is v
 * and v's only predecessor is u) are contracted into one unit that runs without interruption,
 * so a 64-bit set covers windows of up to 64 chains (a RandWire node is one 5-op chain). This
 * restricts the orders searched (an exact result is then exact for chain-atomic orders only);
 * without `contract` every node is a unit and a complete search is a proof of optimality.
 *
 * Memory: 32 bytes per state; time O(states * units * touches per unit).
 */
#include "planner/planner_int.h"

#include <string.h>

typedef struct dp_state {
    uint64_t mask, peak, mem;
    int32_t parent;
    int32_t node; /* unit index of the last unit */
} dp_state_t;

enum { EV_ALLOC = 0, EV_STEP = 1, EV_FREE = 2 };

typedef struct win {
    int32_t len, k;        /* window nodes, units (k <= 64) */
    int32_t *unit_of;      /* window node -> unit */
    int32_t *uoff, *unode; /* unit -> its window nodes, in chain order */
    uint64_t pmask[64];    /* predecessor units inside the window */
    int32_t nroot;
    int32_t *gid;              /* local root -> model root */
    uint64_t *rsize, *rmask;   /* size, units touching it */
    uint8_t *rbefore, *rafter; /* allocated before the window / live after it */
    int32_t *eoff, *ex;        /* unit -> events: root (or -1 for a step boundary) */
    uint8_t *ekind;
    int32_t *first, *last, *stamp; /* per local root, scratch for building events */
} win_t;

static void win_free(win_t *w)
{
    af__free(w->unit_of);
    af__free(w->uoff);
    af__free(w->unode);
    af__free(w->gid);
    af__free(w->rsize);
    af__free(w->rmask);
    af__free(w->rbefore);
    af__free(w->rafter);
    af__free(w->eoff);
    af__free(w->ex);
    af__free(w->ekind);
    af__free(w->first);
    af__free(w->last);
    af__free(w->stamp);
}

/* Merges window node i into its predecessor's unit when the edge between them is a chain link. */
static int32_t chain_pred(const af_graph_t *g, const int32_t *step, int32_t v, int32_t lo,
                          int32_t hi)
{
    const af_node_info_t *nd = af_graph_node(g, v);
    if (nd->n_preds != 1)
        return -1;
    int32_t p = nd->preds[0], s = step[p];
    if (s < lo || s >= hi || af_graph_node(g, p)->n_succs != 1)
        return -1;
    return s - lo;
}

int32_t af__dp_units(const af__smodel_t *m, const int32_t *step, const int32_t *order, int32_t lo,
                     int32_t hi, int contract)
{
    int32_t k = 0;
    for (int32_t i = lo; i < hi; i++)
        k += !contract || chain_pred(m->g, step, order[i], lo, hi) < 0;
    return k;
}

static int32_t local_root(win_t *w, const af__smodel_t *m, int32_t r, int32_t *map)
{
    if (map[r] >= 0 && map[r] < w->nroot && w->gid[map[r]] == r)
        return map[r];
    int32_t x = w->nroot++;
    w->gid[x] = r;
    w->rsize[x] = m->size[r];
    w->rmask[x] = 0;
    w->stamp[x] = -1;
    map[r] = x;
    return x;
}

static int win_alloc(win_t *w, size_t nt)
{
    size_t n1 = (size_t)w->len + 1;
    w->unit_of = af__malloc(n1 * sizeof(int32_t));
    w->uoff = af__malloc(66 * sizeof(int32_t));
    w->unode = af__malloc(n1 * sizeof(int32_t));
    w->gid = af__malloc((nt + 1) * sizeof(int32_t));
    w->rsize = af__malloc((nt + 1) * sizeof(uint64_t));
    w->rmask = af__malloc((nt + 1) * sizeof(uint64_t));
    w->rbefore = af__malloc(nt + 1);
    w->rafter = af__malloc(nt + 1);
    w->eoff = af__malloc(66 * sizeof(int32_t));
    w->ex = af__malloc((2 * nt + n1) * sizeof(int32_t));
    w->ekind = af__malloc(2 * nt + n1);
    w->first = af__malloc((nt + 1) * sizeof(int32_t));
    w->last = af__malloc((nt + 1) * sizeof(int32_t));
    w->stamp = af__malloc((nt + 1) * sizeof(int32_t));
    return (w->unit_of && w->uoff && w->unode && w->gid && w->rsize && w->rmask && w->rbefore &&
            w->rafter && w->eoff && w->ex && w->ekind && w->first && w->last && w->stamp)
               ? 0
               : AF_ENOMEM;
}

/* Units, their predecessor masks and member lists. Returns 1 when there are more than 64. */
static int build_units(const af__smodel_t *m, const int32_t *order, const int32_t *step, int32_t lo,
                       int32_t hi, int contract, win_t *w)
{
    const af_graph_t *g = m->g;
    int32_t cnt[65] = {0};
    w->k = 0;
    for (int32_t i = 0; i < w->len; i++) {
        int32_t p = contract ? chain_pred(g, step, order[lo + i], lo, hi) : -1;
        if (p >= 0) {
            w->unit_of[i] = w->unit_of[p];
        } else {
            if (w->k == 64)
                return 1;
            w->unit_of[i] = w->k++;
        }
        cnt[w->unit_of[i]]++;
    }
    w->uoff[0] = 0;
    for (int32_t u = 0; u < w->k; u++)
        w->uoff[u + 1] = w->uoff[u] + cnt[u];
    memset(cnt, 0, sizeof(cnt));
    for (int32_t i = 0; i < w->len; i++) {
        int32_t u = w->unit_of[i];
        w->unode[w->uoff[u] + cnt[u]++] = i;
    }
    for (int32_t u = 0; u < w->k; u++)
        w->pmask[u] = 0;
    for (int32_t i = 0; i < w->len; i++) {
        const af_node_info_t *nd = af_graph_node(g, order[lo + i]);
        for (int32_t j = 0; j < nd->n_preds; j++) {
            int32_t s = step[nd->preds[j]];
            if (s >= lo && s < hi && w->unit_of[s - lo] != w->unit_of[i])
                w->pmask[w->unit_of[i]] |= 1ull << w->unit_of[s - lo];
        }
    }
    return 0;
}

/* Per unit: at each of its steps the roots first touched (alloc), a step mark, then the roots
 * last touched (free candidates); plus each root's before/after status. */
static void build_events(const af__smodel_t *m, const int32_t *order, const int32_t *step,
                         int32_t lo, int32_t hi, win_t *w, int32_t *map)
{
    int32_t ne = 0;
    for (int32_t u = 0; u < w->k; u++) {
        w->eoff[u] = ne;
        for (int32_t q = w->uoff[u]; q < w->uoff[u + 1]; q++) {
            int32_t v = order[lo + w->unode[q]];
            for (int32_t t = m->t_off[v]; t < m->t_off[v + 1]; t++) {
                int32_t x = local_root(w, m, m->t_root[t], map);
                w->rmask[x] |= 1ull << u;
                if (w->stamp[x] != u) {
                    w->stamp[x] = u;
                    w->first[x] = q;
                }
                w->last[x] = q;
            }
        }
        for (int32_t q = w->uoff[u]; q < w->uoff[u + 1]; q++) {
            int32_t v = order[lo + w->unode[q]];
            for (int32_t t = m->t_off[v]; t < m->t_off[v + 1]; t++) {
                int32_t x = map[m->t_root[t]];
                if (w->first[x] == q) {
                    w->ex[ne] = x;
                    w->ekind[ne++] = EV_ALLOC;
                }
            }
            w->ex[ne] = -1;
            w->ekind[ne++] = EV_STEP;
            for (int32_t t = m->t_off[v]; t < m->t_off[v + 1]; t++) {
                int32_t x = map[m->t_root[t]];
                if (w->last[x] == q) {
                    w->ex[ne] = x;
                    w->ekind[ne++] = EV_FREE;
                }
            }
        }
    }
    w->eoff[w->k] = ne;
    for (int32_t x = 0; x < w->nroot; x++) {
        int32_t r = w->gid[x];
        w->rbefore[x] = (m->flags[r] & SM_INPUT) != 0;
        w->rafter[x] = (m->flags[r] & SM_PINNED) != 0;
        for (int32_t i = m->r_off[r]; i < m->r_off[r + 1]; i++) {
            int32_t s = step[m->r_node[i]];
            if (s < lo)
                w->rbefore[x] = 1;
            else if (s >= hi)
                w->rafter[x] = 1;
        }
    }
}

static int win_build(const af__smodel_t *m, const int32_t *order, const int32_t *step, int32_t lo,
                     int32_t hi, int contract, win_t *w, int32_t *map)
{
    memset(w, 0, sizeof(*w));
    w->len = hi - lo;
    size_t nt = 0;
    for (int32_t i = lo; i < hi; i++)
        nt += (size_t)(m->t_off[order[i] + 1] - m->t_off[order[i]]);
    if (win_alloc(w, nt))
        return AF_ENOMEM;
    if (build_units(m, order, step, lo, hi, contract, w))
        return 1;
    build_events(m, order, step, lo, hi, w, map);
    return 0;
}

/* ---- layered search ----------------------------------------------------------------------- */

typedef struct dp {
    dp_state_t *st;
    size_t n, cap;
    int32_t *tab; /* open addressing: state index or -1 */
    size_t tab_cap;
} dp_t;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int tab_reset(dp_t *d, size_t want)
{
    size_t cap = 64;
    while (cap < 2 * want)
        cap *= 2;
    if (cap > d->tab_cap) {
        af__free(d->tab);
        d->tab = af__malloc(cap * sizeof(int32_t));
        if (!d->tab)
            return AF_ENOMEM;
        d->tab_cap = cap;
    }
    memset(d->tab, 0xff, d->tab_cap * sizeof(int32_t));
    return 0;
}

/* Rebuilds the table from the states of the current layer [from, n). */
static int tab_grow(dp_t *d, size_t from)
{
    if (tab_reset(d, 2 * (d->n - from) + 64))
        return AF_ENOMEM;
    for (size_t i = from; i < d->n; i++) {
        size_t h = mix(d->st[i].mask) & (d->tab_cap - 1);
        while (d->tab[h] >= 0)
            h = (h + 1) & (d->tab_cap - 1);
        d->tab[h] = (int32_t)i;
    }
    return 0;
}

/* Adds or improves state `s` in the layer starting at `from`. */
static int dp_offer(dp_t *d, size_t from, const dp_state_t *s)
{
    if (2 * (d->n - from + 1) > d->tab_cap && tab_grow(d, from))
        return AF_ENOMEM;
    size_t h = mix(s->mask) & (d->tab_cap - 1);
    while (d->tab[h] >= 0) {
        dp_state_t *o = &d->st[d->tab[h]];
        if (o->mask == s->mask) {
            if (s->peak < o->peak)
                *o = *s;
            return 0;
        }
        h = (h + 1) & (d->tab_cap - 1);
    }
    if (af__grow((void **)&d->st, &d->cap, d->n + 1, sizeof(dp_state_t)))
        return AF_ENOMEM;
    d->tab[h] = (int32_t)d->n;
    d->st[d->n++] = *s;
    return 0;
}

/* Runs unit u after set s: the unit's peak (*step_peak, UINT64_MAX if it reaches the bound) and
 * the live bytes after it. */
static void expand(const win_t *w, const dp_state_t *s, int32_t u, uint64_t extra, uint64_t bound,
                   uint64_t *step_peak, uint64_t *mem_after)
{
    uint64_t after = s->mask | (1ull << u), mem = s->mem, pk = 0;
    for (int32_t e = w->eoff[u]; e < w->eoff[u + 1]; e++) {
        int32_t x = w->ex[e];
        switch (w->ekind[e]) {
        case EV_ALLOC:
            if (!w->rbefore[x] && !(w->rmask[x] & s->mask))
                mem += w->rsize[x];
            break;
        case EV_STEP:
            if (mem + extra > pk)
                pk = mem + extra;
            extra = 0; /* the step-0-only inputs count at the very first step */
            if (pk >= bound) {
                *step_peak = UINT64_MAX;
                return;
            }
            break;
        default:
            if (!w->rafter[x] && !(w->rmask[x] & ~after))
                mem -= w->rsize[x];
        }
    }
    *step_peak = pk;
    *mem_after = mem;
}

static int search(const af__smodel_t *m, const win_t *w, af__dp_window_t *p, dp_t *d)
{
    uint64_t full = w->k == 64 ? ~0ull : (1ull << w->k) - 1;
    dp_state_t s0 = {0, 0, p->live_before, -1, -1};
    if (tab_reset(d, 64) || dp_offer(d, 0, &s0))
        return AF_ENOMEM;
    size_t from = 0;
    for (int32_t layer = 0; layer < w->k; layer++) {
        size_t to = d->n;
        if (tab_reset(d, 64))
            return AF_ENOMEM;
        for (size_t i = from; i < to; i++) {
            for (int32_t j = 0; j < w->k; j++) {
                dp_state_t s = d->st[i]; /* copy: dp_offer may move the array */
                if ((s.mask >> j) & 1 || (w->pmask[j] & ~s.mask))
                    continue;
                uint64_t sp, mem;
                expand(w, &s, j, (p->lo == 0 && layer == 0) ? m->extra0 : 0, p->bound, &sp, &mem);
                if (sp == UINT64_MAX)
                    continue;
                dp_state_t nsx = {s.mask | (1ull << j), sp > s.peak ? sp : s.peak, mem, (int32_t)i,
                                  j};
                if (dp_offer(d, to, &nsx))
                    return AF_ENOMEM;
                if (d->n > p->max_states) {
                    p->states_used += d->n;
                    return 0; /* incomplete */
                }
            }
        }
        from = to;
        if (from == d->n)
            break; /* every extension reached the bound */
    }
    p->states_used += d->n;
    p->complete = 1;
    if (from < d->n && d->st[from].mask == full) {
        p->improved = 1;
        p->peak = d->st[from].peak;
    }
    return 0;
}

/* Rewrites order[lo..hi) (and step) from the DP's best full state. */
static int splice(const win_t *w, const dp_t *d, int32_t *order, int32_t *step, int32_t lo)
{
    uint64_t full = w->k == 64 ? ~0ull : (1ull << w->k) - 1;
    int32_t units[64], *orig = af__malloc((size_t)w->len * sizeof(int32_t));
    if (!orig)
        return AF_ENOMEM;
    memcpy(orig, order + lo, (size_t)w->len * sizeof(int32_t));
    size_t last = d->n - 1;
    while (d->st[last].mask != full)
        last--;
    int32_t i = w->k;
    for (int32_t s = (int32_t)last; s > 0; s = d->st[s].parent)
        units[--i] = d->st[s].node;
    int32_t pos = lo;
    for (int32_t k = 0; k < w->k; k++)
        for (int32_t q = w->uoff[units[k]]; q < w->uoff[units[k] + 1]; q++) {
            int32_t v = orig[w->unode[q]];
            order[pos] = v;
            step[v] = pos++;
        }
    af__free(orig);
    return 0;
}

int af__sched_dp_window(const af__smodel_t *m, int32_t *order, int32_t *step, af__dp_window_t *p)
{
    p->improved = 0;
    p->complete = 0;
    if (p->hi <= p->lo)
        return 0;
    win_t w;
    dp_t d;
    memset(&d, 0, sizeof(d));
    int32_t *map = af__malloc(((size_t)m->nr + 1) * sizeof(int32_t));
    int rc = map ? 0 : AF_ENOMEM;
    memset(&w, 0, sizeof(w));
    if (!rc) {
        memset(map, 0xff, ((size_t)m->nr + 1) * sizeof(int32_t));
        rc = win_build(m, order, step, p->lo, p->hi, p->contract, &w, map);
    }
    if (rc == 1)
        rc = 0; /* more than 64 units: nothing to do */
    else if (!rc && !(rc = search(m, &w, p, &d)) && p->improved)
        rc = splice(&w, &d, order, step, p->lo);
    win_free(&w);
    af__free(map);
    af__free(d.st);
    af__free(d.tab);
    return rc;
}
