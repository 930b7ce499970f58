/*
 * Write-after-read reuse edges for parallel execution (DESIGN.md planner step 5; the seed's
 * "fence" between a FREE and an ALLOC on different threads).
 *
 * When group B takes bytes that group A held, B's producer must not start before every node
 * that touches A (its producer and all readers of A's members and views) has finished. Walking
 * the groups by first step, an address-range map remembers the last tenant of every byte; B
 * gets edges only from the tenants it directly replaces. That is enough: an earlier tenant C of
 * the same bytes was itself replaced by A, whose producer waited for C's touchers, and A's
 * touchers run after A's producer. An edge r -> p(B) is left out when data dependencies already
 * order r before p(B) (r is p(B) itself, an ancestor within 256 steps, or found by a short
 * backward search bounded to AF__REUSE_DFS_LIMIT visits); the verifier re-proves every pair.
 *
 * Speed: a 256-step window of exact data ancestry (bitsets built in one pass in step order)
 * answers for r within 256 steps of p(B); only farther ones take the bounded search, which runs
 * in step space over a CSR of pred steps and is skipped where a failed search for the same
 * target already made the very same moves (see af__dsearch_ordered). The verifier re-derives
 * every pair with code of its own (planner/verify_reuse.c) and shares none of these helpers.
 *
 * Lock rule: none; everything is per call (the search state lives in the caller's struct).
 */
#include "planner/planner_int.h"

#include <stdlib.h>
#include <string.h>

void af__segmap_free(af__segmap_t *m)
{
    af__free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

int af__segmap_assign(af__segmap_t *m, uint64_t start, uint64_t end, int32_t owner, int32_t **prev,
                      size_t *n_prev, size_t *cap_prev)
{
    if (start >= end)
        return 0;
    /* first segment with end > start */
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->v[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo, j = lo;
    af__seg_t left = {0, 0, -1}, right = {0, 0, -1};
    while (j < m->n && m->v[j].start < end) {
        int32_t o = m->v[j].owner;
        int seen = 0;
        for (size_t k = 0; k < *n_prev && !seen; k++)
            seen = (*prev)[k] == o;
        if (!seen) {
            if (*n_prev == *cap_prev &&
                af__grow((void **)prev, cap_prev, *n_prev + 1, sizeof(int32_t)))
                return AF_ENOMEM;
            (*prev)[(*n_prev)++] = o;
        }
        if (m->v[j].start < start)
            left = (af__seg_t){m->v[j].start, start, o};
        if (m->v[j].end > end)
            right = (af__seg_t){end, m->v[j].end, o};
        j++;
    }
    size_t repl = (size_t)(left.owner >= 0) + 1 + (size_t)(right.owner >= 0);
    size_t newn = m->n - (j - i) + repl;
    if (newn > m->cap && af__grow((void **)&m->v, &m->cap, newn, sizeof(af__seg_t)))
        return AF_ENOMEM;
    if (i + repl != j) /* the tail moves only when the segment count changes */
        memmove(&m->v[i + repl], &m->v[j], (m->n - j) * sizeof(af__seg_t));
    size_t k = i;
    if (left.owner >= 0)
        m->v[k++] = left;
    m->v[k++] = (af__seg_t){start, end, owner};
    if (right.owner >= 0)
        m->v[k++] = right;
    m->n = newn;
    return 0;
}

int af__group_touchers(const af_plan_t *p, int32_t **off_out, int32_t **nodes_out)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g);
    int32_t *off = af__calloc((size_t)nt + 2, sizeof(int32_t));
    if (!off)
        return AF_ENOMEM;
        /* lead of the group a tensor's bytes belong to (views count for their root's group) */
#define LEAD_OF(t) (p->group[af_graph_alias_root(g, (t))])
    for (int32_t t = 0; t < nt; t++) {
        int32_t lead = LEAD_OF(t);
        if (lead < 0)
            continue;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        off[lead + 1] += ti->n_consumers + (ti->producer >= 0);
    }
    for (int32_t t = 0; t < nt; t++)
        off[t + 1] += off[t];
    int32_t *nodes = af__malloc((size_t)off[nt] * sizeof(int32_t) + sizeof(int32_t));
    int32_t *fill = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    if (!nodes || !fill) {
        af__free(off);
        af__free(nodes);
        af__free(fill);
        return AF_ENOMEM;
    }
    memcpy(fill, off, (size_t)nt * sizeof(int32_t));
    for (int32_t t = 0; t < nt; t++) {
        int32_t lead = LEAD_OF(t);
        if (lead < 0)
            continue;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->producer >= 0)
            nodes[fill[lead]++] = ti->producer;
        for (int32_t k = 0; k < ti->n_consumers; k++)
            nodes[fill[lead]++] = ti->consumers[k];
    }
#undef LEAD_OF
    af__free(fill);
    *off_out = off;
    *nodes_out = nodes;
    return 0;
}

void af__dsearch_free(af__dsearch_t *d)
{
    af__free(d->off);
    af__free(d->pred);
    af__free(d->mark);
    memset(d, 0, sizeof(*d));
}

int af__dsearch_init(af__dsearch_t *d, const af_graph_t *g, const int32_t *step)
{
    int32_t nn = af_graph_node_count(g);
    memset(d, 0, sizeof(*d));
    d->off = af__calloc((size_t)nn + 2, sizeof(int32_t));
    d->mark = af__malloc(((size_t)nn + 1) * sizeof(int32_t));
    if (!d->off || !d->mark) {
        af__dsearch_free(d);
        return AF_ENOMEM;
    }
    for (int32_t v = 0; v < nn; v++)
        d->off[step[v] + 1] = af_graph_node(g, v)->n_preds;
    for (int32_t s = 0; s < nn; s++)
        d->off[s + 1] += d->off[s];
    if (!(d->pred = af__malloc(((size_t)d->off[nn] + 1) * sizeof(int32_t)))) {
        af__dsearch_free(d);
        return AF_ENOMEM;
    }
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        int32_t *out = d->pred + d->off[step[v]];
        for (int32_t k = 0; k < nd->n_preds; k++)
            out[k] = step[nd->preds[k]];
    }
    memset(d->mark, 0xff, ((size_t)nn + 1) * sizeof(int32_t));
    d->memo_vs = -1;
    return 0;
}

void af__window_free(af__window_t *w)
{
    af__free(w->bits);
    w->bits = NULL;
}

/* acc |= a << d over AF__WINDOW bits (bits shifted past the window are dropped). */
static void or_shifted(uint64_t *acc, const uint64_t *a, int32_t d)
{
    enum { W = AF__WINDOW / 64 };
    int32_t q = d / 64, r = d % 64;
    if (q >= W)
        return;
    if (!r) {
        for (int32_t k = q; k < W; k++)
            acc[k] |= a[k - q];
        return;
    }
    acc[q] |= a[0] << r; /* word q takes no carry from below */
    for (int32_t k = q + 1; k < W; k++)
        acc[k] |= a[k - q] << r | a[k - q - 1] >> (64 - r);
}

static void window_add(uint64_t *acc, const uint64_t *bits, int32_t s, int32_t u)
{
    enum { W = AF__WINDOW / 64 };
    int32_t d = s - u; /* >= 1 */
    if (d < 1 || d > AF__WINDOW)
        return;
    acc[(d - 1) / 64] |= 1ull << ((d - 1) % 64);
    if (d < AF__WINDOW)
        or_shifted(acc, bits + (size_t)u * W, d);
}

int af__window_init(af__window_t *w, int32_t nn, const af__dsearch_t *d)
{
    enum { W = AF__WINDOW / 64 };
    w->bits = af__calloc((size_t)nn * W + 1, sizeof(uint64_t));
    if (!w->bits)
        return AF_ENOMEM;
    for (int32_t s = 0; s < nn; s++) {
        uint64_t *acc = w->bits + (size_t)s * W;
        for (int32_t k = d->off[s]; k < d->off[s + 1]; k++)
            window_add(acc, w->bits, s, d->pred[k]);
    }
    return 0;
}

/*
 * Depth-first from vs over preds at steps >= rs, at most AF__REUSE_DFS_LIMIT visits, a stack
 * of that many entries (preds found when it is full are dropped).
 *
 * Memo: the planner asks about several rs for one vs in a row. A failed search's moves depend
 * on rs only through which preds it cut (below rs) and pushed (above rs): with lo = the highest
 * pred it cut and hi = the lowest pred it pushed, a search for any rs strictly between them
 * cuts and pushes the same preds, never meets rs among them, and fails the same way.
 */
int af__dsearch_ordered(af__dsearch_t *d, int32_t rs, int32_t vs)
{
    if (rs == vs)
        return 1;
    if (d->memo_vs != vs) {
        d->memo_vs = vs;
        d->n_memo = d->next_memo = 0;
    }
    for (int32_t i = 0; i < d->n_memo; i++)
        if (d->memo[i].lo < rs && rs < d->memo[i].hi)
            return 0;
    int32_t stamp = d->stamp++, sp = 0, visits = 0, lo = INT32_MIN, hi = INT32_MAX;
    int32_t *mark = d->mark, *stack = d->stack;
    const int32_t *off = d->off, *pred = d->pred;
    stack[sp++] = vs;
    mark[vs] = stamp;
    while (sp && visits < AF__REUSE_DFS_LIMIT) {
        int32_t s = stack[--sp];
        visits++;
        for (int32_t k = off[s]; k < off[s + 1]; k++) {
            int32_t u = pred[k];
            if (u == rs)
                return 1;
            if (u < rs) {
                lo = u > lo ? u : lo;
                continue;
            }
            if (mark[u] == stamp)
                continue;
            mark[u] = stamp;
            hi = u < hi ? u : hi;
            if (sp < AF__REUSE_DFS_LIMIT)
                stack[sp++] = u;
        }
    }
    d->memo[d->next_memo].lo = lo;
    d->memo[d->next_memo].hi = hi;
    d->next_memo = (d->next_memo + 1) % AF__DSEARCH_MEMO;
    d->n_memo += d->n_memo < AF__DSEARCH_MEMO;
    return 0;
}

/* Whether data edges order step rs before step vs: within the window its exact answer, beyond
 * it the bounded search's (a miss there only costs a redundant edge). */
static int data_ordered(af__dsearch_t *ds, const af__window_t *win, int32_t rs, int32_t vs)
{
    int w = af__window_reaches(win, rs, vs);
    return w >= 0 ? w : af__dsearch_ordered(ds, rs, vs);
}

int af__plan_sort_leads(const af_plan_t *p, int32_t *leads, size_t n)
{
    /* first steps are in [0, nodes): a counting sort, stable over the increasing ids */
    int32_t *key = af__malloc((n + 1) * sizeof(int32_t));
    if (!key)
        return AF_ENOMEM;
    for (size_t i = 0; i < n; i++)
        key[i] = p->tp[leads[i]].first;
    int rc = af__sort_counting(leads, key, n, af_graph_node_count(p->g));
    af__free(key);
    if (rc != AF_EINVAL)
        return rc;
    af__kv_t *kv = af__malloc((2 * n + 1) * sizeof(*kv));
    if (!kv)
        return AF_ENOMEM;
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){af__key_i64(p->tp[leads[i]].first), leads[i]};
    af__sort_kv(kv, n, kv + n);
    for (size_t i = 0; i < n; i++)
        leads[i] = kv[i].id;
    af__free(kv);
    return 0;
}

/* Appends edge r -> to (tenants a, b). 0 or AF_ENOMEM. */
static int add_edge(af_plan_t *p, size_t *cap, int32_t r, int32_t to, int32_t a, int32_t b)
{
    if ((size_t)p->n_edges == *cap &&
        af__grow((void **)&p->edges, cap, (size_t)p->n_edges + 1, sizeof(af_reuse_edge_t)))
        return AF_ENOMEM;
    p->edges[p->n_edges++] = (af_reuse_edge_t){r, to, a, b};
    return 0;
}

/* In-place hand-overs: the node writing b over a must wait for every other reader of a (and of
 * a's views) that data dependencies do not already order before it. */
static int inplace_edges(af_plan_t *p, af__dsearch_t *ds, const af__window_t *win, int32_t *emitted,
                         size_t *cap)
{
    const af_graph_t *g = p->g;
    for (int32_t b = 0; b < af_graph_tensor_count(g); b++) {
        int32_t a = p->tp[b].inplace_of;
        if (a < 0)
            continue;
        int32_t v = af_graph_tensor(g, b)->producer;
        for (int32_t t = a; t >= 0; t = t == a ? p->views[a] : p->view_next[t]) {
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            for (int32_t k = -1; k < ti->n_consumers; k++) {
                int32_t r = k < 0 ? ti->producer : ti->consumers[k];
                if (r < 0 || r == v || emitted[r] == v)
                    continue;
                emitted[r] = v;
                if (!data_ordered(ds, win, p->step[r], p->step[v]) && add_edge(p, cap, r, v, a, b))
                    return AF_ENOMEM;
            }
        }
    }
    return 0;
}

int af__plan_reuse_edges(af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    int32_t *off = NULL, *nodes = NULL, *leads = NULL, *prev = NULL, *emitted = NULL;
    size_t n_prev = 0, cap_prev = 0, cap_edges = 0, nl = 0;
    af__segmap_t sm = {0};
    af__dsearch_t ds;
    af__window_t win = {0};
    int rc = af__group_touchers(p, &off, &nodes);
    if (rc)
        return af__err(err, rc, "out of memory");
    if (af__dsearch_init(&ds, g, p->step)) {
        af__free(off);
        af__free(nodes);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    leads = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    emitted = af__malloc((size_t)(nn + 1) * sizeof(int32_t));
    rc = AF_ENOMEM;
    if (af__window_init(&win, nn, &ds) || !leads || !emitted)
        goto out;
    memset(emitted, 0xff, (size_t)(nn + 1) * sizeof(int32_t));
    for (int32_t t = 0; t < nt; t++)
        if (p->group[t] == t)
            leads[nl++] = t;
    /* Room for a few edges per group up front (pages never written cost nothing), so large
     * plans do not copy the array while it doubles; trimmed to size at the end. */
    if (af__plan_sort_leads(p, leads, nl) ||
        af__grow((void **)&p->edges, &cap_edges, 4 * nl + 16, sizeof(af_reuse_edge_t)))
        goto out;
    for (size_t k = 0; k < nl; k++) {
        int32_t b = leads[k];
        n_prev = 0;
        if (af__segmap_assign(&sm, p->tp[b].offset, p->tp[b].offset + p->tp[b].bytes, b, &prev,
                              &n_prev, &cap_prev))
            goto out;
        int32_t pb = af_graph_tensor(g, b)->producer;
        if (pb < 0)
            continue;
        for (size_t q = 0; q < n_prev; q++)
            for (int32_t x = off[prev[q]]; x < off[prev[q] + 1]; x++) {
                int32_t r = nodes[x];
                if (af__plan_poll(p)) { /* per toucher: a fan-out's tenant has thousands */
                    rc = af__plan_stopped_err(err);
                    goto out;
                }
                if (emitted[r] == pb)
                    continue;
                emitted[r] = pb;
                if (!data_ordered(&ds, &win, p->step[r], p->step[pb]) &&
                    add_edge(p, &cap_edges, r, pb, prev[q], b))
                    goto out;
            }
    }
    if (inplace_edges(p, &ds, &win, emitted, &cap_edges))
        goto out;
    rc = 0;
    if (p->n_edges == 0) {
        af__free(p->edges);
        p->edges = NULL;
    } else if ((size_t)p->n_edges < cap_edges / 2) {
        af_reuse_edge_t *fit = af__realloc(p->edges, (size_t)p->n_edges * sizeof(*fit));
        if (fit) /* else the larger block stays: still valid */
            p->edges = fit;
    }
out:
    if (rc == AF_ENOMEM) /* an interruption keeps its own message */
        af__err(err, rc, "out of memory");
    af__segmap_free(&sm);
    af__free(off);
    af__free(nodes);
    af__free(leads);
    af__free(prev);
    af__free(emitted);
    af__dsearch_free(&ds);
    af__window_free(&win);
    return rc;
}
