/*
 * Plan verifier, independent of the placer: it recomputes every tensor's true use range from
 * the graph and the order (its own loop, not lifetime.c), then checks
 *   0. the order is a permutation of the nodes that runs every node after its predecessors;
 *   1. each arena tensor's planned lifetime covers its true uses (incl. readers of its views);
 *   2. alignment, arena bounds, views inside their root;
 *   3. no two tensors live at the same step share a byte (sweep over steps with the live set
 *      kept by offset, a bitmap over the ranks of the offsets: a newcomer is checked against its
 *      two neighbours). The only allowed sharing is a declared in-place hand-over: B over A at
 *      the node where A dies;
 *   4. (reuse on) for every byte range handed from tenant A to tenant B, each node touching A
 *      is ordered before B's producer by data edges plus the plan's reuse edges, and every
 *      other reader of an in-place donor is ordered before the node that overwrites it.
 * af_intervals_verify() does check 3 for raw intervals. Check 4 proves each pair by the first
 * of: a data path within 256 steps (exact window bitsets built here from the graph), a direct
 * data edge, an explicit reuse edge, the planner's bounded search, an exhaustive search over
 * data and reuse edges. Sorting is the shared radix sort (planner/sort.c).
 *
 * Lock rule: none; everything is per call.
 */
#include "planner/budget_int.h"
#include "planner/plan_int.h"
#include "planner/sort_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- live-set sweep (shared by raw intervals and plans) ----------------------------------- */

typedef struct {
    int64_t first, last; /* inclusive */
    uint64_t off, len;
    int32_t id;
    int32_t handover; /* id it takes over from (in-place), or -1 */
    int32_t rank;     /* rank of off among the items' distinct offsets (set by the sweep) */
} item_t;

typedef struct {
    const item_t *it;
    size_t n;
} sweep_t;

/*
 * Orders the items (given in increasing id order) by first step, plain newcomers before in-place
 * hand-overs at the same step (the donor is still live), then id: ord[] gets their indices;
 * by_last[] gets them by last step (stable). kv: scratch of 2n entries.
 */
static void sweep_order(item_t *it, size_t n, af__kv_t *kv, int32_t *ord, item_t **by_last)
{
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){it[i].handover >= 0, (int32_t)i};
    af__sort_kv(kv, n, kv + n);
    for (size_t i = 0; i < n; i++)
        kv[i].key = af__key_i64(it[kv[i].id].first);
    af__sort_kv(kv, n, kv + n);
    for (size_t i = 0; i < n; i++)
        ord[i] = kv[i].id;
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){af__key_i64(it[ord[i]].last), ord[i]};
    af__sort_kv(kv, n, kv + n);
    for (size_t i = 0; i < n; i++)
        by_last[i] = &it[kv[i].id];
}

/*
 * The live set, by offset rank: live members hold bytes and do not overlap, so each sits alone
 * at its offset's rank. A three-level bitmap (ranks, non-empty words, non-empty words of that)
 * finds the nearest live rank below or at-or-above any rank in a few word operations.
 */
typedef struct {
    uint64_t *b[3];
    size_t words[3];
    item_t **at; /* per rank: the live member there */
} liveset_t;

static int live_init(liveset_t *s, size_t n)
{
    size_t bits = n + 1;
    for (int l = 0; l < 3; l++) {
        s->words[l] = (bits + 63) / 64;
        s->b[l] = af__calloc(s->words[l], sizeof(uint64_t));
        bits = s->words[l];
    }
    s->at = af__malloc((n + 1) * sizeof(*s->at));
    return s->b[0] && s->b[1] && s->b[2] && s->at ? 0 : AF_ENOMEM;
}

static void live_free(liveset_t *s)
{
    for (int l = 0; l < 3; l++)
        af__free(s->b[l]);
    af__free(s->at);
}

static void live_set(liveset_t *s, item_t *x)
{
    size_t r = (size_t)x->rank;
    s->at[r] = x;
    for (int l = 0; l < 3; l++, r /= 64)
        s->b[l][r / 64] |= 1ull << (r % 64);
}

static void live_clear(liveset_t *s, size_t r)
{
    for (int l = 0; l < 3; l++, r /= 64) {
        s->b[l][r / 64] &= ~(1ull << (r % 64));
        if (s->b[l][r / 64])
            break;
    }
}

/* Lowest live rank >= r, or SIZE_MAX. */
static size_t live_succ(const liveset_t *s, size_t r)
{
    int l = 0;
    for (;; l++, r = r / 64 + 1) { /* climb while nothing at or after r in r's word */
        if (l == 3 || r / 64 >= s->words[l])
            break;
        uint64_t w = s->b[l][r / 64] & (~0ull << (r % 64));
        if (w) {
            r = r / 64 * 64 + (size_t)__builtin_ctzll(w);
            break;
        }
    }
    if (l == 3 || r / 64 >= s->words[l]) { /* scan the top level */
        if (l < 3)
            return SIZE_MAX;
        l = 2;
        for (r = r * 64;; r += 64) {
            if (r / 64 >= s->words[2])
                return SIZE_MAX;
            if (s->b[2][r / 64]) {
                r += (size_t)__builtin_ctzll(s->b[2][r / 64]);
                break;
            }
        }
    }
    for (; l > 0; l--) /* descend to the lowest set bit */
        r = r * 64 + (size_t)__builtin_ctzll(s->b[l - 1][r]);
    return r;
}

/* Highest live rank < r, or SIZE_MAX. */
static size_t live_pred(const liveset_t *s, size_t r)
{
    int l = 0;
    for (;; l++) {
        if (r == 0)
            return SIZE_MAX;
        r--; /* now: highest set bit <= r at level l */
        if (l == 3)
            break;
        uint64_t w = s->b[l][r / 64] & (~0ull >> (63 - r % 64));
        if (w) {
            r = r / 64 * 64 + (size_t)(63 - __builtin_clzll(w));
            break;
        }
        r /= 64; /* climb: strictly below r's word */
    }
    if (l == 3) { /* scan the top level down from word r */
        for (;; r--) {
            if (s->b[2][r]) {
                r = r * 64 + (size_t)(63 - __builtin_clzll(s->b[2][r]));
                break;
            }
            if (r == 0)
                return SIZE_MAX;
        }
        l = 2;
    }
    for (; l > 0; l--) /* descend to the highest set bit */
        r = r * 64 + (size_t)(63 - __builtin_clzll(s->b[l - 1][r]));
    return r;
}

/* Ranks the items' offsets (equal offsets, equal rank); returns the number of ranks. */
static size_t rank_offsets(item_t *it, size_t n, af__kv_t *kv)
{
    for (size_t i = 0; i < n; i++)
        kv[i] = (af__kv_t){it[i].off, (int32_t)i};
    af__sort_kv(kv, n, kv + n);
    size_t ranks = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && kv[i].key != kv[i - 1].key)
            ranks++;
        it[kv[i].id].rank = (int32_t)ranks;
    }
    return n ? ranks + 1 : 0;
}

/* Sweep over the items (increasing ids) in start order with the live set; no two members
 * overlap. Returns AF_EVERIFY and the conflicting pair via a/b, or AF_ENOMEM. */
static int sweep(item_t *it, size_t n, int32_t *ca, int32_t *cb)
{
    item_t **by_last = af__malloc((n + 1) * sizeof(*by_last));
    af__kv_t *kv = af__malloc((2 * n + 1) * sizeof(*kv));
    int32_t *ord = af__malloc((n + 1) * sizeof(*ord));
    liveset_t ls = {0};
    if (!by_last || !kv || !ord || live_init(&ls, n)) {
        af__free(by_last);
        af__free(kv);
        af__free(ord);
        live_free(&ls);
        return AF_ENOMEM;
    }
    sweep_order(it, n, kv, ord, by_last);
    rank_offsets(it, n, kv);
    af__free(kv);
    size_t e = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        item_t *x = &it[ord[i]];
        /* retire everything whose last step is before x's first */
        while (e < n && by_last[e]->last < x->first) {
            item_t *d = by_last[e++];
            size_t r = (size_t)d->rank;
            if ((ls.b[0][r / 64] >> (r % 64) & 1) && ls.at[r] == d)
                live_clear(&ls, r);
        }
        if (x->handover >= 0) {
            /* the donor hands its bytes over here: it leaves the live set (it sits at x's
             * offset when the hand-over is well formed; otherwise look everywhere) */
            size_t r = live_succ(&ls, (size_t)x->rank);
            if (!(r != SIZE_MAX && ls.at[r]->id == x->handover && ls.at[r]->last == x->first))
                for (r = live_succ(&ls, 0); r != SIZE_MAX; r = live_succ(&ls, r + 1))
                    if (ls.at[r]->id == x->handover && ls.at[r]->last == x->first)
                        break;
            if (r != SIZE_MAX)
                live_clear(&ls, r);
        }
        size_t lo = live_pred(&ls, (size_t)x->rank), hi = live_succ(&ls, (size_t)x->rank);
        if (lo != SIZE_MAX && ls.at[lo]->off + ls.at[lo]->len > x->off) {
            *ca = ls.at[lo]->id;
            *cb = x->id;
            rc = AF_EVERIFY;
        } else if (hi != SIZE_MAX && x->off + x->len > ls.at[hi]->off) {
            *ca = ls.at[hi]->id;
            *cb = x->id;
            rc = AF_EVERIFY;
        } else {
            live_set(&ls, x);
        }
    }
    af__free(by_last);
    af__free(ord);
    live_free(&ls);
    return rc;
}

int af_intervals_verify(const af_interval_t *iv, size_t n, uint64_t height, uint64_t alignment,
                        af_error_t *err)
{
    uint64_t a = alignment > 1 ? alignment : 1;
    item_t *it = af__malloc((n + 1) * sizeof(*it));
    if (!it)
        return af__err(err, AF_ENOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (iv[i].lower >= iv[i].upper) {
            af__free(it);
            return af__err(err, AF_EVERIFY, "interval %zu is empty or reversed", i);
        }
        if (iv[i].offset % a) {
            af__free(it);
            return af__err(err, AF_EVERIFY, "interval %zu: offset %llu not aligned to %llu", i,
                           (unsigned long long)iv[i].offset, (unsigned long long)a);
        }
        if (iv[i].size > height || iv[i].offset > height - iv[i].size) {
            af__free(it);
            return af__err(err, AF_EVERIFY, "interval %zu ends at %llu, above the height %llu", i,
                           (unsigned long long)(iv[i].offset + iv[i].size),
                           (unsigned long long)height);
        }
        if (iv[i].size == 0)
            continue;
        it[m++] =
            (item_t){iv[i].lower, iv[i].upper - 1, iv[i].offset, iv[i].size, (int32_t)i, -1, 0};
    }
    int32_t x = -1, y = -1;
    int rc = sweep(it, m, &x, &y);
    af__free(it);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory");
    if (rc)
        return af__err(err, AF_EVERIFY,
                       "intervals %d [%lld,%lld) @%llu+%llu and %d [%lld,%lld) @%llu+%llu overlap",
                       x, (long long)iv[x].lower, (long long)iv[x].upper,
                       (unsigned long long)iv[x].offset, (unsigned long long)iv[x].size, y,
                       (long long)iv[y].lower, (long long)iv[y].upper,
                       (unsigned long long)iv[y].offset, (unsigned long long)iv[y].size);
    return 0;
}

/* ---- plan checks ---------------------------------------------------------------------------- */

/* True use range of every tensor's root bytes, from the graph and the order alone. */
static int true_ranges(const af_plan_t *p, int32_t *tf, int32_t *tl)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    for (int32_t t = 0; t < nt; t++) {
        tf[t] = INT32_MAX;
        tl[t] = -1;
    }
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        int32_t r = af_graph_alias_root(g, t);
        int32_t lo = INT32_MAX, hi = -1;
        if (ti->producer >= 0)
            lo = hi = p->step[ti->producer];
        if (ti->kind == AF_TENSOR_INPUT)
            lo = 0;
        for (int32_t k = 0; k < ti->n_consumers; k++) {
            int32_t s = p->step[ti->consumers[k]];
            lo = s < lo ? s : lo;
            hi = s > hi ? s : hi;
        }
        if (ti->kind == AF_TENSOR_OUTPUT)
            hi = nn - 1;
        if (hi < 0)
            continue;
        if (lo < tf[r])
            tf[r] = lo;
        if (hi > tl[r])
            tl[r] = hi;
    }
    return 0;
}

static int check_tensors(const af_plan_t *p, const int32_t *tf, const int32_t *tl, af_error_t *err)
{
    const af_graph_t *g = p->g;
    uint64_t a = p->opts.alignment;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        const af_tensor_plan_t *x = &p->tp[t];
        if (x->where == AF_WHERE_ALIAS) {
            int32_t r = af_graph_alias_root(g, t);
            uint64_t want = p->tp[r].offset + (uint64_t)af_graph_alias_root_offset(g, t);
            if (x->offset != want ||
                (p->tp[r].where == AF_WHERE_ARENA &&
                 x->offset + (uint64_t)ti->bytes > p->tp[r].offset + p->tp[r].bytes))
                return af__err(err, AF_EVERIFY, "view '%s' is not inside its base '%s'", ti->name,
                               af_graph_tensor(g, r)->name);
            continue;
        }
        if (x->where != AF_WHERE_ARENA || ti->bytes <= 0)
            continue;
        if (tl[t] < 0 && x->bytes == 0)
            continue; /* no step produces or reads it (a dead tensor): it needs no bytes */
        if (x->bytes < (uint64_t)ti->bytes)
            return af__err(err, AF_EVERIFY, "tensor '%s' reserves %llu bytes, needs %lld", ti->name,
                           (unsigned long long)x->bytes, (long long)ti->bytes);
        if (x->offset % a)
            return af__err(err, AF_EVERIFY, "tensor '%s' at offset %llu is not %llu-aligned",
                           ti->name, (unsigned long long)x->offset, (unsigned long long)a);
        if (x->offset + x->bytes > p->arena)
            return af__err(err, AF_EVERIFY, "tensor '%s' [%llu, %llu) is outside the arena (%llu)",
                           ti->name, (unsigned long long)x->offset,
                           (unsigned long long)(x->offset + x->bytes),
                           (unsigned long long)p->arena);
        if (tl[t] >= 0 && (x->first > tf[t] || x->last < tl[t]))
            return af__err(err, AF_EVERIFY,
                           "tensor '%s' is used in steps [%d, %d] but planned live only in "
                           "[%d, %d]",
                           ti->name, tf[t], tl[t], x->first, x->last);
    }
    return 0;
}

static int check_overlaps(const af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g);
    item_t *it = af__malloc((size_t)(nt + 1) * sizeof(*it));
    if (!it)
        return af__err(err, AF_ENOMEM, "out of memory");
    size_t m = 0;
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_plan_t *x = &p->tp[t];
        if (x->where != AF_WHERE_ARENA || x->bytes == 0 || x->first < 0)
            continue;
        int32_t h = -1;
        if (x->inplace_of >= 0) {
            /* a declared hand-over: the donor dies at the step its successor is produced by a
             * node carrying the matching hint; the block is the first tenant's (chain root) */
            int32_t root = x->inplace_of;
            for (int32_t hops = 0; p->tp[root].inplace_of >= 0 && hops < nt; hops++)
                root = p->tp[root].inplace_of;
            const af_node_info_t *nd = af_graph_node(g, p->order[x->first]);
            for (int32_t k = 0; k < nd->n_inplace && h < 0; k++)
                if (nd->outputs[nd->inplace[k].output] == t &&
                    nd->inputs[nd->inplace[k].input] == x->inplace_of &&
                    p->tp[x->inplace_of].last == x->first && x->bytes <= p->tp[root].bytes &&
                    x->offset == p->tp[x->inplace_of].offset)
                    h = x->inplace_of;
            if (h < 0) {
                af__free(it);
                return af__err(err, AF_EVERIFY,
                               "tensor '%s' claims an in-place hand-over from "
                               "'%s' that the graph does not allow here",
                               af_graph_tensor(g, t)->name,
                               af_graph_tensor(g, x->inplace_of)->name);
            }
        }
        it[m++] = (item_t){x->first, x->last, x->offset, x->bytes, t, h, 0};
    }
    int32_t a = -1, b = -1;
    int rc = sweep(it, m, &a, &b);
    af__free(it);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory");
    if (rc) {
        const af_tensor_plan_t *x = &p->tp[a], *y = &p->tp[b];
        return af__err(err, AF_EVERIFY,
                       "tensors '%s' (steps %d-%d, bytes [%llu, %llu)) and '%s' (steps %d-%d, "
                       "bytes [%llu, %llu)) are live at the same time and share bytes",
                       af_graph_tensor(g, a)->name, x->first, x->last,
                       (unsigned long long)x->offset, (unsigned long long)(x->offset + x->bytes),
                       af_graph_tensor(g, b)->name, y->first, y->last,
                       (unsigned long long)y->offset, (unsigned long long)(y->offset + y->bytes));
    }
    return 0;
}

/* Is r ordered before v by data edges + reuse edges? Exhaustive backward search from v over
 * nodes at steps > step(r) (every edge goes forward in the order, so this terminates). */
static int ordered(const af_plan_t *p, const int32_t *roff, const int32_t *rsrc, af__dsearch_t *ds,
                   const af__window_t *win, int32_t r, int32_t v, int32_t *stack, int32_t *mark,
                   int32_t stamp)
{
    if (r == v)
        return 1;
    const af_graph_t *g = p->g;
    /* the common cases first: a data path over a short distance (exact, one bit), a direct data
     * edge (preds are sorted) or an explicit reuse edge */
    if (af__window_reaches(win, p->step[r], p->step[v]) == 1)
        return 1;
    const af_node_info_t *vn = af_graph_node(g, v);
    int32_t lo = 0, hi = vn->n_preds;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (vn->preds[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < vn->n_preds && vn->preds[lo] == r)
        return 1;
    for (int32_t k = roff[v]; k < roff[v + 1]; k++)
        if (rsrc[k] == r)
            return 1;
    /* the planner left the edge out only when a short data path exists: look for it first (a
     * pure reachability search with the planner's bound), then search exhaustively */
    if (af__dsearch_ordered(ds, p->step[r], p->step[v]))
        return 1;
    int32_t sp = 0, rs = p->step[r];
    stack[sp++] = v;
    mark[v] = stamp;
    while (sp) {
        int32_t u = stack[--sp];
        const af_node_info_t *nd = af_graph_node(g, u);
        for (int pass = 0; pass < 2; pass++) {
            int32_t cnt = pass ? roff[u + 1] - roff[u] : nd->n_preds;
            const int32_t *src = pass ? rsrc + roff[u] : nd->preds;
            for (int32_t k = 0; k < cnt; k++) {
                int32_t w = src[k];
                if (w == r)
                    return 1;
                if (mark[w] == stamp || p->step[w] < rs)
                    continue;
                mark[w] = stamp;
                stack[sp++] = w;
            }
        }
    }
    return 0;
}

static int check_reuse(const af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    int32_t *off = NULL, *nodes = NULL, *prev = NULL;
    int32_t *roff = af__calloc((size_t)nn + 2, sizeof(int32_t));
    int32_t *rsrc = af__malloc((size_t)(p->n_edges + 1) * sizeof(int32_t));
    int32_t *leads = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int32_t *stack = af__malloc((size_t)(nn + 1) * sizeof(int32_t));
    int32_t *mark = af__malloc((size_t)(nn + 1) * sizeof(int32_t));
    size_t n_prev = 0, cap_prev = 0, nl = 0;
    af__segmap_t sm = {0};
    af__dsearch_t ds = {0};
    af__window_t win = {0};
    int rc = 0;
    if (!roff || !rsrc || !leads || !stack || !mark || af__group_touchers(p, &off, &nodes) ||
        af__dsearch_init(&ds, g, p->step) || af__window_init(&win, nn, &ds)) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    for (int32_t e = 0; e < p->n_edges; e++)
        roff[p->edges[e].to + 1]++;
    for (int32_t v = 0; v < nn; v++)
        roff[v + 1] += roff[v];
    {
        int32_t *fill = stack; /* borrowed as scratch */
        memcpy(fill, roff, (size_t)nn * sizeof(int32_t));
        for (int32_t e = 0; e < p->n_edges; e++)
            rsrc[fill[p->edges[e].to]++] = p->edges[e].from;
    }
    memset(mark, 0xff, (size_t)(nn + 1) * sizeof(int32_t));
    for (int32_t t = 0; t < nt; t++)
        if (p->group[t] == t)
            leads[nl++] = t;
    if (af__plan_sort_leads(p, leads, nl)) {
        rc = af__err(err, AF_ENOMEM, "out of memory");
        goto out;
    }
    int32_t stamp = 0;
    for (size_t k = 0; k < nl && !rc; k++) {
        int32_t b = leads[k];
        n_prev = 0;
        if (af__segmap_assign(&sm, p->tp[b].offset, p->tp[b].offset + p->tp[b].bytes, b, &prev,
                              &n_prev, &cap_prev)) {
            rc = af__err(err, AF_ENOMEM, "out of memory");
            break;
        }
        int32_t pb = af_graph_tensor(g, b)->producer;
        for (size_t q = 0; q < n_prev && !rc; q++) {
            int32_t a = prev[q];
            for (int32_t x = off[a]; x < off[a + 1]; x++) {
                int32_t r = nodes[x];
                if (pb < 0 || !ordered(p, roff, rsrc, &ds, &win, r, pb, stack, mark, stamp++)) {
                    rc = af__err(err, AF_EVERIFY,
                                 "'%s' reuses the bytes of '%s' but its producer %s%s%s may run "
                                 "before '%s', which uses '%s' (missing reuse edge)",
                                 af_graph_tensor(g, b)->name, af_graph_tensor(g, a)->name,
                                 pb < 0 ? "(none: it is a graph input)" : "'",
                                 pb < 0 ? "" : af_graph_node(g, pb)->name, pb < 0 ? "" : "'",
                                 af_graph_node(g, r)->name, af_graph_tensor(g, a)->name);
                    break;
                }
            }
        }
    }
    /* in-place hand-overs: the writer must come after every other reader of the donor */
    for (int32_t b = 0; b < nt && !rc; b++) {
        int32_t a = p->tp[b].inplace_of;
        if (a < 0)
            continue;
        int32_t v = af_graph_tensor(g, b)->producer;
        for (int32_t t = a; t >= 0 && !rc; t = t == a ? p->views[a] : p->view_next[t]) {
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            for (int32_t k = 0; k < ti->n_consumers; k++) {
                int32_t r = ti->consumers[k];
                if (r == v || ordered(p, roff, rsrc, &ds, &win, r, v, stack, mark, stamp++))
                    continue;
                rc = af__err(err, AF_EVERIFY,
                             "'%s' overwrites '%s' in place at node '%s' while node '%s' may "
                             "still be reading it (missing reuse edge)",
                             af_graph_tensor(g, b)->name, af_graph_tensor(g, a)->name,
                             af_graph_node(g, v)->name, af_graph_node(g, r)->name);
                break;
            }
        }
    }
out:
    af__segmap_free(&sm);
    af__free(off);
    af__free(nodes);
    af__free(prev);
    af__free(roff);
    af__free(rsrc);
    af__free(leads);
    af__free(stack);
    af__free(mark);
    af__dsearch_free(&ds);
    af__window_free(&win);
    return rc;
}

/* The order: a permutation of the nodes (order[] and step[] agree) in which every node comes
 * after its predecessors. */
static int check_order(const af_plan_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nn = af_graph_node_count(g);
    for (int32_t v = 0; v < nn; v++) {
        int32_t s = p->step[v];
        if (s < 0 || s >= nn || p->order[s] != v)
            return af__err(err, AF_EVERIFY, "node '%s' has no consistent step in the order",
                           af_graph_node(g, v)->name);
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t k = 0; k < nd->n_preds; k++)
            if (p->step[nd->preds[k]] >= s)
                return af__err(err, AF_EVERIFY, "node '%s' runs before its predecessor '%s'",
                               nd->name, af_graph_node(g, nd->preds[k])->name);
    }
    return 0;
}

int af_plan_verify(const af_plan_t *p, af_error_t *err)
{
    if (!p)
        return af__err(err, AF_EINVAL, "NULL plan");
    int32_t nt = af_graph_tensor_count(p->g);
    int32_t *tf = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int32_t *tl = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int rc;
    if (!tf || !tl)
        rc = af__err(err, AF_ENOMEM, "out of memory");
    else if (!(rc = check_order(p, err)) && !(rc = true_ranges(p, tf, tl)) &&
             !(rc = check_tensors(p, tf, tl, err)) && !(rc = check_overlaps(p, err)) &&
             !(rc = af__budget_verify(p, err)) && !p->opts.safe_mode)
        rc = check_reuse(p, err);
    af__free(tf);
    af__free(tl);
    return rc;
}
