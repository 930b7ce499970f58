/*
 * Exact scheduling by dynamic programming over scheduled sets (Serenity, Ahn et al. 2020).
 *
 * For a window W of k <= 64 consecutive nodes of a topological order, everything before the
 * window is already run and everything after runs later, so any topological order of W can be
 * spliced in. The live bytes after running a subset S of W depend on S only (a root is live if
 * some toucher has run and some has not, or it is an input/output), so the search is a DP over
 * subsets: peak(S + v) = min over last nodes v of max(peak(S), mem(S) + alloc(v, S)). States are
 * expanded layer by layer (|S| = 0, 1, ...); each layer is a hash table keyed by S keeping the
 * lowest peak (first found on ties, so results are deterministic). A transition whose step
 * reaches `bound` (the best peak known, from the heuristics) is pruned, which is what keeps the
 * reachable state count small. The number of states is capped; hitting the cap abandons the
 * window (no partial result is used) and reports the search incomplete.
 *
 * Memory: 32 bytes per state; time O(states * k * touches per node).
 */
#include "planner/schedule_int.h"

#include <string.h>

typedef struct dp_state {
    uint64_t mask, peak, mem;
    int32_t parent;
    int32_t node; /* window index of the last node */
} dp_state_t;

typedef struct win {
    int32_t k;
    uint64_t pmask[64]; /* predecessors inside the window */
    int32_t nroot;
    int32_t *gid;              /* local root -> model root */
    uint64_t *rsize, *rmask;   /* size, window nodes touching it */
    uint8_t *rbefore, *rafter; /* allocated before the window / live after it */
    int32_t *toff, *troot;     /* window node -> local roots */
} win_t;

static void win_free(win_t *w)
{
    af__free(w->gid);
    af__free(w->rsize);
    af__free(w->rmask);
    af__free(w->rbefore);
    af__free(w->rafter);
    af__free(w->toff);
    af__free(w->troot);
}

static int32_t local_root(win_t *w, const af__smodel_t *m, int32_t r)
{
    for (int32_t x = 0; x < w->nroot; x++) /* windows touch a few hundred roots at most */
        if (w->gid[x] == r)
            return x;
    int32_t x = w->nroot++;
    w->gid[x] = r;
    w->rsize[x] = m->size[r];
    w->rmask[x] = 0;
    return x;
}

/* Collects the roots the window touches and their before/inside/after status. */
static int win_build(const af__smodel_t *m, const int32_t *order, const int32_t *step, int32_t lo,
                     int32_t hi, win_t *w)
{
    const af_graph_t *g = m->g;
    memset(w, 0, sizeof(*w));
    w->k = hi - lo;
    size_t nt = 0;
    for (int32_t i = lo; i < hi; i++)
        nt += (size_t)(m->t_off[order[i] + 1] - m->t_off[order[i]]);
    w->gid = af__malloc((nt + 1) * sizeof(int32_t));
    w->rsize = af__malloc((nt + 1) * sizeof(uint64_t));
    w->rmask = af__malloc((nt + 1) * sizeof(uint64_t));
    w->rbefore = af__malloc(nt + 1);
    w->rafter = af__malloc(nt + 1);
    w->toff = af__malloc(((size_t)w->k + 1) * sizeof(int32_t));
    w->troot = af__malloc((nt + 1) * sizeof(int32_t));
    if (!w->gid || !w->rsize || !w->rmask || !w->rbefore || !w->rafter || !w->toff || !w->troot)
        return AF_ENOMEM;
    int32_t nk = 0;
    for (int32_t i = 0; i < w->k; i++) {
        int32_t v = order[lo + i];
        const af_node_info_t *nd = af_graph_node(g, v);
        w->pmask[i] = 0;
        for (int32_t j = 0; j < nd->n_preds; j++) {
            int32_t s = step[nd->preds[j]];
            if (s >= lo && s < hi)
                w->pmask[i] |= 1ull << (s - lo);
        }
        w->toff[i] = nk;
        for (int32_t t = m->t_off[v]; t < m->t_off[v + 1]; t++) {
            int32_t x = local_root(w, m, m->t_root[t]);
            w->rmask[x] |= 1ull << i;
            w->troot[nk++] = x;
        }
    }
    w->toff[w->k] = nk;
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

static void expand(const win_t *w, const dp_state_t *s, int32_t j, uint64_t extra,
                   uint64_t *step_peak, uint64_t *mem_after)
{
    uint64_t bit = 1ull << j, after = s->mask | bit, alloc = 0, freed = 0;
    for (int32_t t = w->toff[j]; t < w->toff[j + 1]; t++) {
        int32_t x = w->troot[t];
        if (!w->rbefore[x] && !(w->rmask[x] & s->mask))
            alloc += w->rsize[x];
        if (!w->rafter[x] && !(w->rmask[x] & ~after))
            freed += w->rsize[x];
    }
    *step_peak = s->mem + alloc + extra;
    *mem_after = s->mem + alloc - freed;
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
                expand(w, &s, j, (p->lo == 0 && layer == 0) ? m->extra0 : 0, &sp, &mem);
                uint64_t pk = sp > s.peak ? sp : s.peak;
                if (pk >= p->bound)
                    continue;
                dp_state_t nsx = {s.mask | (1ull << j), pk, mem, (int32_t)i, j};
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

int af__sched_dp_window(const af__smodel_t *m, int32_t *order, int32_t *step, af__dp_window_t *p)
{
    p->improved = 0;
    p->complete = 0;
    if (p->hi - p->lo > 64 || p->hi <= p->lo)
        return 0;
    win_t w;
    dp_t d;
    memset(&d, 0, sizeof(d));
    int rc = win_build(m, order, step, p->lo, p->hi, &w);
    if (!rc)
        rc = search(m, &w, p, &d);
    if (!rc && p->improved) {
        int32_t node[64];
        size_t last = d.n - 1;
        while (d.st[last].mask != (w.k == 64 ? ~0ull : (1ull << w.k) - 1))
            last--;
        int32_t orig[64];
        memcpy(orig, order + p->lo, (size_t)w.k * sizeof(int32_t));
        int32_t i = w.k;
        for (int32_t s = (int32_t)last; s > 0; s = d.st[s].parent)
            node[--i] = d.st[s].node;
        for (int32_t k = 0; k < w.k; k++) {
            order[p->lo + k] = orig[node[k]];
            step[orig[node[k]]] = p->lo + k;
        }
    }
    win_free(&w);
    af__free(d.st);
    af__free(d.tab);
    return rc;
}
