/*
 * The greedy rematerialiser (XLA's HloRematerialization style), run by the budget search as the
 * bar it must beat: the answer is never worse than the greedy's at the same budget.
 *
 * The schedule starts as the base order. While its simulated peak is over the target, among
 * the copies live across the peak step and not read there, the one with the lowest cost per
 * byte of net memory freed (its bytes minus those of the producer's inputs whose lives it
 * extends) is recomputed right before its next reader after the peak, followed by the nodes
 * that make views of it, so later view readers see views of the new copy. Every read takes the
 * most recent copy of its tensor (af_plan_from_steps' rule), so a copy lives from its step to
 * its last reader; graph outputs live to the end. The memory model is the planner's: arena roots
 * at their aligned size, a view counts for its root.
 *
 * Local improvement: once the target is met, recomputations are taken out one at a time (the
 * latest first) while the peak stays within the target.
 *
 * Each round resimulates the whole schedule: O(steps x degree) per recomputation.
 */
#include "planner/budget_int.h"

#include <math.h>
#include <string.h>

#define MAX_VIEWS 64    /* view makers re-run after one recomputation */
#define PRUNE_TRIES 256 /* local improvement: recomputations tried for removal */
#define ROUNDS_PER_NODE 20

typedef struct gsim {
    const af_graph_t *g;
    int32_t nn, nt;
    uint64_t *size; /* per tensor: arena bytes when an arena root, else 0 */
    int32_t *root;
    double *cost; /* per node */
    uint8_t *ok;  /* per node: may be recomputed (no graph output, no views among its outputs) */
    int32_t *cur; /* per tensor: its current copy */
    int32_t *c_t, *c_birth, *c_last; /* per copy */
    size_t nc, cap;
    af_step_t *st; /* the schedule */
    size_t n, st_cap;
    uint64_t *live;           /* per step */
    int32_t *nxt, *nxt_stamp; /* per root: first reader after the peak */
} gsim_t;

static void gsim_free(gsim_t *m)
{
    void *bufs[] = {m->size,    m->root,   m->cost, m->ok,  m->cur,      m->c_t,
                    m->c_birth, m->c_last, m->live, m->nxt, m->nxt_stamp};
    for (size_t i = 0; i < AF_ARRAY_SIZE(bufs); i++)
        af__free(bufs[i]);
    af__free(m->st);
}

static int gsim_init(gsim_t *m, const af_graph_t *g, const int32_t *order, uint64_t alignment)
{
    *m = (gsim_t){.g = g, .nn = af_graph_node_count(g), .nt = af_graph_tensor_count(g)};
    size_t nt = (size_t)m->nt + 1, nn = (size_t)m->nn + 1;
    m->size = af__calloc(nt, sizeof(uint64_t));
    m->root = af__malloc(nt * sizeof(int32_t));
    m->cur = af__malloc(nt * sizeof(int32_t));
    m->nxt = af__malloc(nt * sizeof(int32_t));
    m->nxt_stamp = af__malloc(nt * sizeof(int32_t));
    m->cost = af__malloc(nn * sizeof(double));
    m->ok = af__malloc(nn);
    m->st_cap = nn * 2;
    m->st = af__malloc(m->st_cap * sizeof(af_step_t));
    if (!m->size || !m->root || !m->cur || !m->nxt || !m->nxt_stamp || !m->cost || !m->ok || !m->st)
        return AF_ENOMEM;
    for (int32_t t = 0; t < m->nt; t++) {
        m->root[t] = af_graph_alias_root(g, t);
        m->nxt_stamp[t] = -1;
        if (af__is_arena_root(g, t))
            m->size[t] = af__align_up((uint64_t)af_graph_tensor(g, t)->bytes, alignment);
    }
    for (int32_t v = 0; v < m->nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        m->cost[v] = af__node_cost(g, v);
        m->ok[v] = 1;
        for (int32_t k = 0; k < nd->n_outputs; k++)
            if (af_graph_tensor(g, nd->outputs[k])->kind == AF_TENSOR_OUTPUT ||
                m->root[nd->outputs[k]] != nd->outputs[k])
                m->ok[v] = 0;
        m->st[v] = (af_step_t){AF_STEP_RUN, order[v]};
    }
    m->n = (size_t)m->nn;
    return 0;
}

static int new_copy(gsim_t *m, int32_t t, int32_t at)
{
    if (m->nc == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 1024;
        int32_t *a = af__realloc(m->c_t, cap * sizeof(int32_t));
        if (a)
            m->c_t = a;
        int32_t *b = a ? af__realloc(m->c_birth, cap * sizeof(int32_t)) : NULL;
        if (b)
            m->c_birth = b;
        int32_t *c = b ? af__realloc(m->c_last, cap * sizeof(int32_t)) : NULL;
        if (!c)
            return AF_ENOMEM;
        m->c_last = c;
        m->cap = cap;
    }
    m->c_t[m->nc] = t, m->c_birth[m->nc] = at, m->c_last[m->nc] = at;
    m->cur[t] = (int32_t)m->nc++;
    return 0;
}

/* Replays the schedule: copies, their last readers, the live bytes of every step and the peak
 * step (the first of the highest). 0 or AF_ENOMEM. */
static int simulate(gsim_t *m, size_t *peak_step)
{
    const af_graph_t *g = m->g;
    m->nc = 0;
    for (int32_t t = 0; t < m->nt; t++)
        m->cur[t] = -1;
    for (int32_t t = 0; t < m->nt; t++)
        if (af_graph_tensor(g, t)->producer < 0 && new_copy(m, t, 0))
            return AF_ENOMEM;
    for (size_t i = 0; i < m->n; i++) {
        const af_node_info_t *nd = af_graph_node(g, m->st[i].id);
        for (int32_t k = 0; k < nd->n_inputs; k++) {
            int32_t x = nd->inputs[k], c = m->cur[m->root[x]] >= 0 ? m->cur[m->root[x]] : m->cur[x];
            if (c >= 0)
                m->c_last[c] = (int32_t)i;
        }
        for (int32_t k = 0; k < nd->n_outputs; k++)
            if (m->root[nd->outputs[k]] == nd->outputs[k] &&
                new_copy(m, nd->outputs[k], (int32_t)i))
                return AF_ENOMEM;
    }
    uint64_t *lv = af__realloc(m->live, (m->n + 2) * sizeof(uint64_t));
    if (!lv)
        return AF_ENOMEM;
    m->live = lv;
    memset(lv, 0, (m->n + 2) * sizeof(uint64_t));
    for (size_t c = 0; c < m->nc; c++) { /* differences, then a prefix sum */
        int32_t t = m->c_t[c];
        size_t end =
            af_graph_tensor(g, t)->kind == AF_TENSOR_OUTPUT ? m->n - 1 : (size_t)m->c_last[c];
        lv[m->c_birth[c]] += m->size[t];
        lv[end + 1] -= m->size[t];
    }
    *peak_step = 0;
    for (size_t i = 1; i < m->n; i++) {
        lv[i] += lv[i - 1];
        *peak_step = lv[i] > lv[*peak_step] ? i : *peak_step;
    }
    return 0;
}

/* The copy to recompute for peak step ps and where (its next reader): 0, or 1 when none. */
static int pick(gsim_t *m, size_t ps, int32_t stamp, size_t *copy, size_t *at)
{
    const af_graph_t *g = m->g;
    for (size_t i = ps + 1; i < m->n; i++) {
        const af_node_info_t *nd = af_graph_node(g, m->st[i].id);
        for (int32_t k = 0; k < nd->n_inputs; k++) {
            int32_t r = m->root[nd->inputs[k]];
            if (m->nxt_stamp[r] != stamp)
                m->nxt_stamp[r] = stamp, m->nxt[r] = (int32_t)i;
        }
    }
    double best = HUGE_VAL;
    for (size_t c = 0; c < m->nc; c++) {
        int32_t t = m->c_t[c];
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (m->c_birth[c] >= (int32_t)ps || m->c_last[c] <= (int32_t)ps || !m->size[t] ||
            ti->kind != AF_TENSOR_INTERMEDIATE || ti->producer < 0 || !m->ok[ti->producer] ||
            m->nxt_stamp[t] != stamp)
            continue;
        const af_node_info_t *pd = af_graph_node(g, ti->producer);
        int32_t when = m->nxt[t];
        int64_t net = (int64_t)m->size[t];
        for (int32_t k = 0; k < pd->n_inputs; k++) { /* inputs whose lives it extends */
            int32_t x = m->root[pd->inputs[k]], cx = m->cur[x];
            if (cx >= 0 && m->c_last[cx] < when && af_graph_tensor(g, x)->kind != AF_TENSOR_OUTPUT)
                net -= (int64_t)m->size[x];
        }
        if (net > 0 && m->cost[ti->producer] / (double)net < best)
            best = m->cost[ti->producer] / (double)net, *copy = c, *at = (size_t)when;
    }
    return best == HUGE_VAL;
}

static int ran_before(const gsim_t *m, int32_t v, size_t at)
{
    for (size_t i = 0; i < at; i++)
        if (m->st[i].id == v)
            return 1;
    return 0;
}

/* Inserts the producer of copy c's tensor and its view makers before step `at` (those that
 * already ran: a first run must keep its place, after all its inputs). */
static int insert(gsim_t *m, size_t c, size_t at)
{
    const af_tensor_info_t *ti = af_graph_tensor(m->g, m->c_t[c]);
    int32_t ins[MAX_VIEWS + 1], n_ins = 0;
    ins[n_ins++] = ti->producer;
    for (int32_t k = 0; k < ti->n_consumers && n_ins <= MAX_VIEWS; k++) {
        const af_node_info_t *cd = af_graph_node(m->g, ti->consumers[k]);
        if (!ran_before(m, ti->consumers[k], at))
            continue;
        for (int32_t o = 0; o < cd->n_outputs; o++)
            if (af_graph_tensor(m->g, cd->outputs[o])->alias_of == m->c_t[c]) {
                ins[n_ins++] = ti->consumers[k];
                break;
            }
    }
    if (m->n + (size_t)n_ins > m->st_cap) {
        size_t cap = 2 * m->st_cap + (size_t)n_ins;
        af_step_t *s = af__realloc(m->st, cap * sizeof(af_step_t));
        if (!s)
            return AF_ENOMEM;
        m->st = s, m->st_cap = cap;
    }
    memmove(&m->st[at + (size_t)n_ins], &m->st[at], (m->n - at) * sizeof(af_step_t));
    for (int32_t k = 0; k < n_ins; k++)
        m->st[at + (size_t)k] = (af_step_t){AF_STEP_RUN, ins[k]};
    m->n += (size_t)n_ins;
    return 0;
}

/* Takes recomputations out, the latest first, while the peak stays within target. */
static int prune(gsim_t *m, uint64_t target)
{
    uint8_t *seen = af__calloc((size_t)m->nn + 1, 1);
    size_t *rec = af__malloc((m->n + 1) * sizeof(size_t)), nr = 0, ps;
    int rc = seen && rec ? 0 : AF_ENOMEM;
    for (size_t i = 0; !rc && i < m->n; i++) {
        if (seen[m->st[i].id])
            rec[nr++] = i;
        seen[m->st[i].id] = 1;
    }
    for (size_t j = nr; !rc && j-- > 0 && nr - j <= PRUNE_TRIES;) {
        size_t at = rec[j];
        af_step_t s = m->st[at];
        memmove(&m->st[at], &m->st[at + 1], (m->n - at - 1) * sizeof(af_step_t));
        m->n--;
        if ((rc = simulate(m, &ps)) || m->live[ps] <= target)
            continue;
        memmove(&m->st[at + 1], &m->st[at], (m->n - at) * sizeof(af_step_t));
        m->st[at] = s;
        m->n++;
    }
    af__free(seen);
    af__free(rec);
    return rc;
}

int af__greedy_plan(const af_graph_t *g, const int32_t *order, uint64_t alignment, uint64_t target,
                    int improve, af_step_t **steps, size_t *n_steps, uint64_t *peak)
{
    gsim_t m;
    int rc = gsim_init(&m, g, order, alignment), met = 0;
    size_t ps = 0, c = 0, at = 0;
    for (int32_t round = 0; !rc && round <= ROUNDS_PER_NODE * m.nn; round++) {
        if ((rc = simulate(&m, &ps)))
            break;
        if ((met = m.live[ps] <= target) || pick(&m, ps, round, &c, &at))
            break;
        rc = insert(&m, c, at);
    }
    if (!rc && met && improve)
        rc = prune(&m, target);
    if (!rc && met && !(rc = simulate(&m, &ps))) {
        *peak = m.live[ps];
        *steps = m.st, *n_steps = m.n;
        m.st = NULL;
    }
    gsim_free(&m);
    return rc ? rc : !met;
}
