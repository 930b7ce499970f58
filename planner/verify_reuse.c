/*
 * The verifier's reuse check (check 4 of planner/verify.c), derived from the plan's offsets,
 * lifetimes and edges alone: it shares no code with the generator of the reuse edges
 * (planner/reuse.c), so a bug in one cannot hide in the other.
 *
 * What must hold. Bytes pass from tenant to tenant: a block is an in-place chain of tensors (each
 * taking over its donor's bytes, planned at the donor's offset) with the views of its members;
 * its first member's producer writes it first. When block B's bytes overlap block A's and A's
 * lifetime ended before B's began, every node touching A (the producer and every reader of its
 * members and their views) must be ordered before B's first writer by data edges and reuse
 * edges: then no parallel execution respecting those edges lets B's writer overwrite bytes A's
 * nodes still use. Checking only each byte's previous tenant suffices: the previous tenant's own
 * first writer was ordered after the tenant before it, and the orders chain. Every reuse edge
 * must also run forward in the order (a backward edge closes a cycle with the data edges the
 * order respects: the executor would wait forever). And an in-place writer must come after
 * every other reader of the donor it overwrites.
 *
 * How. Blocks in order of their first step; a list of byte ranges, each with the block that
 * last held it, sorted by address, gives each block its previous tenants. "r is ordered before
 * v" is answered within ANC_STEPS steps by the ancestry bits of v's step (bit j: the node j + 1
 * steps earlier reaches v over data or reuse edges, direct ones included; exact, built in one
 * pass in step order), farther by an edge r -> v (data or reuse), else by a depth-first search
 * backward from v over data and reuse edges that stops when it meets r and never goes below r's
 * step (every edge runs forward, so the search is exact).
 *
 * Lock rule: none; everything is per call.
 */
#include "planner/planner_int.h"

#include <string.h>

#define ANC_WORDS 4 /* ancestry bits per step: ANC_STEPS = 64 x ANC_WORDS steps back */
#define ANC_STEPS (64 * ANC_WORDS)

/* A byte range [lo, hi) and the block that last held it. */
typedef struct {
    uint64_t lo, hi;
    int32_t block;
} tenancy_t;

typedef struct {
    const af_plan_t *p;
    const af_graph_t *g;
    int32_t nt, nn;
    int32_t *block_of; /* tensor -> block (its chain root's id), -1 when it holds no bytes */
    int32_t *first_t;  /* block -> first member of its tensor list, -1 */
    int32_t *next_t;   /* tensor -> next tensor of the same block, -1 */
    int32_t *first_v;  /* tensor -> first tensor whose alias root it is (itself first), -1 */
    int32_t *next_v;   /* tensor -> next tensor of the same alias root, -1 */
    int32_t *rin_off;  /* node -> its incoming reuse edges' sources: rin[rin_off[v] ..] */
    int32_t *rin;      /* ... */
    uint64_t *anc;     /* step -> ANC_WORDS ancestry words */
    int32_t *mark;     /* node -> stamp of the last search that reached it */
    int32_t *stack;    /* search stack */
    int32_t stamp;
    tenancy_t *ten; /* sorted by lo, disjoint */
    size_t nten, capten;
    int32_t *prev; /* previous tenants of the block being checked */
    size_t nprev, capprev;
} rv_t;

static void rv_free(rv_t *v)
{
    af__free(v->block_of);
    af__free(v->first_t);
    af__free(v->next_t);
    af__free(v->first_v);
    af__free(v->next_v);
    af__free(v->rin_off);
    af__free(v->rin);
    af__free(v->anc);
    af__free(v->mark);
    af__free(v->stack);
    af__free(v->ten);
    af__free(v->prev);
}

/* anc(to) |= anc(from) moved d steps later, plus the bit of `from` itself (d >= 1). */
static void anc_merge(uint64_t *to, const uint64_t *from, int32_t d)
{
    if (d > ANC_STEPS)
        return;
    to[(d - 1) / 64] |= 1ull << ((d - 1) % 64);
    int32_t words = d / 64, bits = d % 64; /* bit j of from lands on bit j + d of to */
    if (words >= ANC_WORDS)
        return;
    if (!bits) {
        for (int32_t k = words; k < ANC_WORDS; k++)
            to[k] |= from[k - words];
        return;
    }
    to[words] |= from[0] << bits; /* the lowest word has no carry from below */
    for (int32_t k = words + 1; k < ANC_WORDS; k++)
        to[k] |= from[k - words] << bits | from[k - words - 1] >> (64 - bits);
}

/* The chain root of an arena tensor (following inplace_of), or -1 when it holds no bytes. */
static int32_t chain_root(const af_plan_t *p, int32_t t, int32_t nt)
{
    const af_tensor_plan_t *x = &p->tp[t];
    if (x->where != AF_WHERE_ARENA || x->bytes == 0 || x->first < 0)
        return -1;
    for (int32_t hops = 0; p->tp[t].inplace_of >= 0 && hops < nt; hops++)
        t = p->tp[t].inplace_of;
    return t;
}

/* Blocks and their tensor lists (views included, through their alias root), and the tensors
 * of each alias root. */
static void build_blocks(rv_t *v)
{
    for (int32_t t = 0; t < v->nt; t++) {
        v->first_t[t] = v->next_t[t] = v->first_v[t] = v->next_v[t] = -1;
        int32_t r = af_graph_alias_root(v->g, t);
        v->block_of[t] = r >= 0 ? chain_root(v->p, r, v->nt) : -1;
    }
    for (int32_t t = v->nt; t-- > 0;) { /* prepend: each list ends up in increasing id order */
        int32_t b = v->block_of[t], r = af_graph_alias_root(v->g, t);
        if (b >= 0) {
            v->next_t[t] = v->first_t[b];
            v->first_t[b] = t;
        }
        if (r >= 0) {
            v->next_v[t] = v->first_v[r];
            v->first_v[r] = t;
        }
    }
}

/* Reuse edges by target (CSR) and the per-step ancestry words. AF_EVERIFY for a backward or
 * out-of-range edge. */
static int build_edges(rv_t *v, af_error_t *err)
{
    const af_plan_t *p = v->p;
    for (int32_t e = 0; e < p->n_edges; e++) {
        const af_reuse_edge_t *x = &p->edges[e];
        if (x->from < 0 || x->from >= v->nn || x->to < 0 || x->to >= v->nn)
            return af__err(err, AF_EVERIFY, "reuse edge %d names a node that does not exist", e);
        if (p->step[x->from] >= p->step[x->to])
            return af__err(err, AF_EVERIFY,
                           "reuse edge '%s' -> '%s' runs against the order (a cycle: execution "
                           "would never finish)",
                           af_graph_node(v->g, x->from)->name, af_graph_node(v->g, x->to)->name);
        v->rin_off[x->to + 1]++;
    }
    for (int32_t n = 0; n < v->nn; n++)
        v->rin_off[n + 1] += v->rin_off[n];
    int32_t *at = v->stack; /* scratch */
    memcpy(at, v->rin_off, (size_t)v->nn * sizeof(int32_t));
    for (int32_t e = 0; e < p->n_edges; e++)
        v->rin[at[p->edges[e].to]++] = p->edges[e].from;
    for (int32_t s = 0; s < v->nn; s++) {
        int32_t n = p->order[s];
        const af_node_info_t *nd = af_graph_node(v->g, n);
        uint64_t *w = v->anc + (size_t)s * ANC_WORDS;
        for (int32_t pass = 0; pass < 2; pass++) {
            int32_t cnt = pass ? v->rin_off[n + 1] - v->rin_off[n] : nd->n_preds;
            const int32_t *src = pass ? v->rin + v->rin_off[n] : nd->preds;
            for (int32_t k = 0; k < cnt; k++) {
                int32_t u = p->step[src[k]]; /* below s: every edge runs forward */
                anc_merge(w, v->anc + (size_t)u * ANC_WORDS, s - u);
            }
        }
    }
    return 0;
}

/* 1 when r is ordered before `to` by data and reuse edges. */
static int ordered(rv_t *v, int32_t r, int32_t to)
{
    const af_plan_t *p = v->p;
    int32_t d = p->step[to] - p->step[r];
    if (r == to)
        return 1;
    if (d <= 0)
        return 0;       /* r runs at or after `to`: no forward path */
    if (d <= ANC_STEPS) /* exact within the window (direct edges included) */
        return (int)(v->anc[(size_t)p->step[to] * ANC_WORDS + (size_t)(d - 1) / 64] >>
                         ((d - 1) % 64) &
                     1);
    const af_node_info_t *nd = af_graph_node(v->g, to);
    for (int32_t k = 0; k < nd->n_preds; k++) /* an edge r -> to */
        if (nd->preds[k] == r)
            return 1;
    for (int32_t k = v->rin_off[to]; k < v->rin_off[to + 1]; k++)
        if (v->rin[k] == r)
            return 1;
    int32_t sp = 0, floor = p->step[r];
    v->stamp++;
    v->stack[sp++] = to;
    v->mark[to] = v->stamp;
    while (sp) {
        int32_t u = v->stack[--sp];
        const af_node_info_t *un = af_graph_node(v->g, u);
        for (int32_t pass = 0; pass < 2; pass++) {
            int32_t cnt = pass ? v->rin_off[u + 1] - v->rin_off[u] : un->n_preds;
            const int32_t *src = pass ? v->rin + v->rin_off[u] : un->preds;
            for (int32_t k = 0; k < cnt; k++) {
                int32_t w = src[k];
                if (w == r)
                    return 1;
                if (v->mark[w] != v->stamp && p->step[w] > floor) {
                    v->mark[w] = v->stamp;
                    v->stack[sp++] = w;
                }
            }
        }
    }
    return 0;
}

/* Appends x to a growable int32 array. */
static int push(int32_t **a, size_t *n, size_t *cap, int32_t x)
{
    if (*n == *cap && af__grow((void **)a, cap, *n + 1, sizeof(int32_t)))
        return AF_ENOMEM;
    (*a)[(*n)++] = x;
    return 0;
}

/* Block b now holds [lo, hi): the distinct blocks that held any of it go to v->prev. */
static int take_range(rv_t *v, uint64_t lo, uint64_t hi, int32_t b)
{
    v->nprev = 0;
    size_t a = 0, z = v->nten; /* first range ending after lo */
    while (a < z) {
        size_t m = a + (z - a) / 2;
        if (v->ten[m].hi <= lo)
            a = m + 1;
        else
            z = m;
    }
    size_t e = a; /* ranges [a, e) meet [lo, hi) */
    tenancy_t head = {0, 0, -1}, tail = {0, 0, -1};
    for (; e < v->nten && v->ten[e].lo < hi; e++) {
        int32_t o = v->ten[e].block, dup = 0;
        for (size_t k = 0; k < v->nprev && !dup; k++)
            dup = v->prev[k] == o;
        if (!dup && push(&v->prev, &v->nprev, &v->capprev, o))
            return AF_ENOMEM;
        if (v->ten[e].lo < lo)
            head = (tenancy_t){v->ten[e].lo, lo, o};
        if (v->ten[e].hi > hi)
            tail = (tenancy_t){hi, v->ten[e].hi, o};
    }
    size_t put = 1 + (head.block >= 0) + (tail.block >= 0), n = v->nten - (e - a) + put;
    if (n > v->capten && af__grow((void **)&v->ten, &v->capten, n, sizeof(tenancy_t)))
        return AF_ENOMEM;
    memmove(&v->ten[a + put], &v->ten[e], (v->nten - e) * sizeof(tenancy_t));
    if (head.block >= 0)
        v->ten[a++] = head;
    v->ten[a++] = (tenancy_t){lo, hi, b};
    if (tail.block >= 0)
        v->ten[a] = tail;
    v->nten = n;
    return 0;
}

static int missing_edge(const rv_t *v, int32_t b, int32_t a, int32_t r, int32_t pb, af_error_t *err)
{
    const af_graph_t *g = v->g;
    return af__err(err, AF_EVERIFY,
                   "'%s' reuses the bytes of '%s' but its producer %s%s%s may run before '%s', "
                   "which uses '%s' (missing reuse edge)",
                   af_graph_tensor(g, b)->name, af_graph_tensor(g, a)->name,
                   pb < 0 ? "(none: it is a graph input)" : "'",
                   pb < 0 ? "" : af_graph_node(g, pb)->name, pb < 0 ? "" : "'",
                   af_graph_node(g, r)->name, af_graph_tensor(g, a)->name);
}

/* Every toucher of block b's previous tenants is ordered before b's first writer. */
static int check_block(rv_t *v, int32_t b, af_error_t *err)
{
    int32_t pb = af_graph_tensor(v->g, b)->producer;
    for (size_t q = 0; q < v->nprev; q++)
        for (int32_t t = v->first_t[v->prev[q]]; t >= 0; t = v->next_t[t]) {
            const af_tensor_info_t *ti = af_graph_tensor(v->g, t);
            for (int32_t k = -1; k < ti->n_consumers; k++) {
                int32_t r = k < 0 ? ti->producer : ti->consumers[k];
                if (r >= 0 && (pb < 0 || !ordered(v, r, pb)))
                    return missing_edge(v, b, v->prev[q], r, pb, err);
            }
        }
    return 0;
}

/* In place: the writer comes after every other reader of the donor and its views. */
static int check_inplace(rv_t *v, af_error_t *err)
{
    const af_graph_t *g = v->g;
    for (int32_t b = 0; b < v->nt; b++) {
        int32_t a = v->p->tp[b].inplace_of;
        if (a < 0)
            continue;
        int32_t w = af_graph_tensor(g, b)->producer;
        for (int32_t t = v->first_v[a]; t >= 0; t = v->next_v[t]) {
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            for (int32_t k = 0; k < ti->n_consumers; k++) {
                int32_t r = ti->consumers[k];
                if (r == w || (w >= 0 && ordered(v, r, w)))
                    continue;
                return af__err(err, AF_EVERIFY,
                               "'%s' overwrites '%s' in place at node '%s' while node '%s' may "
                               "still be reading it (missing reuse edge)",
                               af_graph_tensor(g, b)->name, af_graph_tensor(g, a)->name,
                               w >= 0 ? af_graph_node(g, w)->name : "(none)",
                               af_graph_node(g, r)->name);
            }
        }
    }
    return 0;
}

/* Blocks by (first step, id): a counting sort over the steps (common/sort.c) of the blocks in
 * increasing id order; a first step outside [0, nodes] (a graph without nodes has its inputs
 * at step 0) goes through the radix sort instead. NULL when out of memory. */
static int32_t *blocks_in_order(const rv_t *v, size_t *n)
{
    int32_t *ids = af__malloc(((size_t)v->nt + 1) * sizeof(int32_t));
    int32_t *key = af__malloc(((size_t)v->nt + 1) * sizeof(int32_t));
    *n = 0;
    if (ids && key)
        for (int32_t t = 0; t < v->nt; t++)
            if (v->block_of[t] == t) {
                key[*n] = v->p->tp[t].first;
                ids[(*n)++] = t;
            }
    int rc = !ids || !key ? AF_ENOMEM : af__sort_counting(ids, key, *n, v->nn + 1);
    if (rc == AF_EINVAL) {
        uint64_t *k64 = af__malloc(((size_t)v->nt + 1) * sizeof(uint64_t));
        rc = AF_ENOMEM;
        if (k64) {
            for (size_t i = 0; i < *n; i++)
                k64[ids[i]] = (uint64_t)(uint32_t)key[i];
            rc = af__sort_ids(ids, *n, k64, NULL, NULL);
        }
        af__free(k64);
    }
    af__free(key);
    if (rc) {
        af__free(ids);
        ids = NULL;
    }
    return ids;
}

int af__verify_reuse(const af_plan_t *p, af_error_t *err)
{
    rv_t v = {.p = p, .g = p->g};
    v.nt = af_graph_tensor_count(p->g);
    v.nn = af_graph_node_count(p->g);
    size_t nt1 = (size_t)v.nt + 1, nn1 = (size_t)v.nn + 1;
    v.block_of = af__malloc(nt1 * sizeof(int32_t));
    v.first_t = af__malloc(nt1 * sizeof(int32_t));
    v.next_t = af__malloc(nt1 * sizeof(int32_t));
    v.first_v = af__malloc(nt1 * sizeof(int32_t));
    v.next_v = af__malloc(nt1 * sizeof(int32_t));
    v.rin_off = af__calloc(nn1 + 1, sizeof(int32_t));
    v.rin = af__malloc(((size_t)p->n_edges + 1) * sizeof(int32_t));
    v.anc = af__calloc(nn1 * ANC_WORDS, sizeof(uint64_t));
    v.mark = af__calloc(nn1, sizeof(int32_t));
    v.stack = af__malloc(nn1 * sizeof(int32_t));
    int rc = 0;
    int32_t *order = NULL;
    size_t nb = 0;
    if (!v.block_of || !v.first_t || !v.next_t || !v.first_v || !v.next_v || !v.rin_off || !v.rin ||
        !v.anc || !v.mark || !v.stack) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    build_blocks(&v);
    if ((rc = build_edges(&v, err)))
        goto out;
    if (!(order = blocks_in_order(&v, &nb))) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nb && !rc; i++) {
        int32_t b = order[i];
        uint64_t lo = p->tp[b].offset;
        if (take_range(&v, lo, lo + p->tp[b].bytes, b))
            rc = af__err(err, AF_ENOMEM, "out of memory");
        else
            rc = check_block(&v, b, err);
    }
    if (!rc)
        rc = check_inplace(&v, err);
out:
    af__free(order);
    rv_free(&v);
    return rc;
}
