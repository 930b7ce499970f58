/*
 * Baselines for bench_budget (header-only, bench code): rematerialisation schedules built the
 * way other systems build them, as af_step_t lists, so that every column is placed and
 * measured by the same planner (af_plan_from_steps).
 *
 * - Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost": the forward pass is cut
 *   at articulation points (a tensor that is the only forward value crossing that point) into
 *   segments of about sqrt(n) forward nodes; only the cut tensors are kept; in the backward
 *   pass each segment is recomputed once, from its checkpoint, right before the first backward
 *   node that reads one of its tensors (the last segment is kept as computed).
 * - A greedy rematerialiser in the style of XLA's HloRematerialization: while the simulated
 *   peak is over the target, among the tensors live across the peak step and not read there,
 *   recompute (just before its next reader) the one with the lowest cost per byte of net
 *   memory freed (its bytes minus those of the producer's inputs whose lives it extends).
 * - The chain dynamic programme, written here a second time from its recurrence (top-down,
 *   memoised) as the reference for training chains of unit-size, unit-cost layers.
 */
#ifndef ARENAFLOW_BENCH_BUDGET_BASELINES_H
#define ARENAFLOW_BENCH_BUDGET_BASELINES_H

#include "arenaflow/plan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct steps {
    af_step_t *v;
    size_t n, cap;
} steps_t;

static void steps_push(steps_t *s, af_step_kind_t kind, int32_t id)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        if (!s->v)
            abort();
    }
    s->v[s->n++] = (af_step_t){kind, id};
}

static uint64_t bl_size(const af_graph_t *g, int32_t t)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    if (ti->alias_of >= 0 || ti->kind == AF_TENSOR_CONSTANT || ti->bytes <= 0)
        return 0;
    return ((uint64_t)ti->bytes + 255) / 256 * 256;
}

/* Forward nodes: ancestors (inclusive) of the producer of tensor "loss", else of node "loss". */
static uint8_t *bl_forward(const af_graph_t *g)
{
    int32_t nn = af_graph_node_count(g), t = af_graph_find_tensor(g, "loss");
    int32_t start = t >= 0 ? af_graph_tensor(g, t)->producer : af_graph_find_node(g, "loss");
    uint8_t *fw = calloc((size_t)nn + 1, 1);
    int32_t *stack = malloc(((size_t)nn + 1) * sizeof(int32_t)), sp = 0;
    if (start >= 0)
        fw[start] = 1, stack[sp++] = start;
    while (sp > 0) {
        const af_node_info_t *nd = af_graph_node(g, stack[--sp]);
        for (int32_t k = 0; k < nd->n_preds; k++)
            if (!fw[nd->preds[k]])
                fw[nd->preds[k]] = 1, stack[sp++] = nd->preds[k];
    }
    free(stack);
    return fw;
}

/*
 * Chen's sqrt(n) checkpointing. seg_len <= 0: sqrt(forward nodes). Returns the steps (the
 * caller frees s->v).
 */
static void bl_chen(const af_graph_t *g, const int32_t *order, int32_t seg_len, steps_t *s)
{
    int32_t nn = af_graph_node_count(g), nt = af_graph_tensor_count(g);
    uint8_t *fw = bl_forward(g);
    int32_t *pos = malloc(((size_t)nn + 1) * sizeof(int32_t)), nf = 0;
    int32_t *fwd = malloc(((size_t)nn + 1) * sizeof(int32_t));
    for (int32_t i = 0; i < nn; i++)
        if (fw[order[i]])
            pos[order[i]] = nf, fwd[nf++] = order[i];
    /* last forward reader position of every forward root: crossing counts per position */
    int32_t *lastf = malloc(((size_t)nt + 1) * sizeof(int32_t));
    int32_t *cross = calloc((size_t)nf + 2, sizeof(int32_t)), *seg = malloc(((size_t)nf + 1) * 4);
    for (int32_t t = 0; t < nt; t++) {
        lastf[t] = -1;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        int32_t r = af_graph_alias_root(g, t);
        if (ti->producer < 0 || !fw[ti->producer] || !bl_size(g, r))
            continue;
        for (int32_t k = 0; k < ti->n_consumers; k++)
            if (fw[ti->consumers[k]] && pos[ti->consumers[k]] > lastf[t])
                lastf[t] = pos[ti->consumers[k]];
    }
    for (int32_t t = 0; t < nt; t++)
        if (lastf[t] >= 0)
            for (int32_t p = pos[af_graph_tensor(g, t)->producer]; p < lastf[t]; p++)
                cross[p]++;
    if (seg_len <= 0)
        seg_len = (int32_t)ceil(sqrt((double)nf));
    int32_t cur = 0, since = 0;
    for (int32_t p = 0; p < nf;
         p++) { /* cut after p when one value crosses and the segment is long */
        seg[p] = cur;
        if (++since >= seg_len && cross[p] == 1 && p + 1 < nf)
            cur++, since = 0;
    }
    int32_t last_seg = nf ? seg[nf - 1] : 0;
    uint8_t *done = calloc((size_t)cur + 2, 1);
    for (int32_t i = 0; i < nn; i++)
        if (fw[order[i]])
            steps_push(s, AF_STEP_RUN, order[i]);
    for (int32_t i = 0; i < nn; i++) {
        int32_t v = order[i];
        if (fw[v])
            continue;
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t k = 0; k < nd->n_inputs; k++) { /* recompute the segments it reads */
            int32_t pr = af_graph_tensor(g, nd->inputs[k])->producer;
            if (pr < 0 || !fw[pr] || seg[pos[pr]] == last_seg || done[seg[pos[pr]]])
                continue;
            int32_t sg = seg[pos[pr]];
            done[sg] = 1;
            for (int32_t p = 0; p < nf; p++)
                if (seg[p] == sg)
                    steps_push(s, AF_STEP_RUN, fwd[p]);
        }
        steps_push(s, AF_STEP_RUN, v);
    }
    free(fw), free(pos), free(fwd), free(lastf), free(cross), free(seg), free(done);
}

/* ---- greedy rematerialiser (XLA style) ------------------------------------------------- */

typedef struct bl_sim {
    int32_t nt;
    int32_t *cur;                    /* per tensor: current copy */
    int32_t *c_t, *c_birth, *c_last; /* per copy: tensor, birth step, last reading step */
    size_t nc, cap;
    uint64_t *live; /* per step */
} bl_sim_t;

/* Replays steps with "read the most recent copy" and fills copies and the live profile. */
static void bl_simulate(const af_graph_t *g, const steps_t *s, bl_sim_t *m)
{
    m->nc = 0;
    for (int32_t t = 0; t < m->nt; t++)
        m->cur[t] = -1;
    for (size_t i = 0; i <= s->n; i++) {
        for (int32_t t = 0; t < m->nt && i == 0; t++)
            if (af_graph_tensor(g, t)->producer < 0) { /* inputs: one copy from step 0 */
                if (m->nc == m->cap) {
                    m->cap = m->cap ? 2 * m->cap : 1024;
                    m->c_t = realloc(m->c_t, m->cap * 4);
                    m->c_birth = realloc(m->c_birth, m->cap * 4);
                    m->c_last = realloc(m->c_last, m->cap * 4);
                }
                m->c_t[m->nc] = t, m->c_birth[m->nc] = 0, m->c_last[m->nc] = 0;
                m->cur[t] = (int32_t)m->nc++;
            }
        if (i == s->n)
            break;
        const af_node_info_t *nd = af_graph_node(g, s->v[i].id);
        for (int32_t k = 0; k < nd->n_inputs; k++) {
            int32_t x = nd->inputs[k];
            int32_t c = m->cur[af_graph_alias_root(g, x)] >= 0 ? m->cur[af_graph_alias_root(g, x)]
                                                               : m->cur[x];
            if (c >= 0)
                m->c_last[c] = (int32_t)i;
        }
        for (int32_t k = 0; k < nd->n_outputs; k++) {
            int32_t o = nd->outputs[k];
            if (af_graph_alias_root(g, o) != o)
                continue; /* a view: its reads count for its root's copy */
            if (m->nc == m->cap) {
                m->cap = m->cap ? 2 * m->cap : 1024;
                m->c_t = realloc(m->c_t, m->cap * 4);
                m->c_birth = realloc(m->c_birth, m->cap * 4);
                m->c_last = realloc(m->c_last, m->cap * 4);
            }
            m->c_t[m->nc] = o, m->c_birth[m->nc] = (int32_t)i, m->c_last[m->nc] = (int32_t)i;
            m->cur[o] = (int32_t)m->nc++;
        }
    }
    memset(m->live, 0, (s->n + 1) * sizeof(uint64_t));
    for (size_t c = 0; c < m->nc; c++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, m->c_t[c]);
        int32_t end = ti->kind == AF_TENSOR_OUTPUT ? (int32_t)s->n - 1 : m->c_last[c];
        for (int32_t st = m->c_birth[c]; st <= end; st++)
            m->live[st] += bl_size(g, m->c_t[c]);
    }
}

/* Greedy rematerialisation of the base order until the simulated peak is within target.
 * Returns 0 when it got there, 1 when it ran out of candidates (s holds the last schedule). */
static int bl_greedy(const af_graph_t *g, const int32_t *order, uint64_t target, steps_t *s)
{
    int32_t nn = af_graph_node_count(g);
    for (int32_t i = 0; i < nn; i++)
        steps_push(s, AF_STEP_RUN, order[i]);
    bl_sim_t m = {.nt = af_graph_tensor_count(g)};
    m.cur = malloc(((size_t)m.nt + 1) * sizeof(int32_t));
    for (int iter = 0; iter < 20 * nn; iter++) {
        m.live = realloc(m.live, (s->n + 1) * sizeof(uint64_t));
        bl_simulate(g, s, &m);
        size_t ps = 0;
        for (size_t i = 0; i < s->n; i++)
            ps = m.live[i] > m.live[ps] ? i : ps;
        if (m.live[ps] <= target) {
            free(m.cur), free(m.c_t), free(m.c_birth), free(m.c_last), free(m.live);
            return 0;
        }
        double best = HUGE_VAL;
        size_t best_c = 0, best_at = 0;
        for (size_t c = 0; c < m.nc; c++) {
            int32_t t = m.c_t[c];
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            if (m.c_birth[c] >= (int32_t)ps || m.c_last[c] <= (int32_t)ps || !bl_size(g, t) ||
                ti->kind != AF_TENSOR_INTERMEDIATE || ti->producer < 0)
                continue;
            const af_node_info_t *pd = af_graph_node(g, ti->producer);
            int ok = 1;
            for (int32_t k = 0; k < pd->n_outputs && ok; k++)
                ok = af_graph_tensor(g, pd->outputs[k])->kind != AF_TENSOR_OUTPUT &&
                     af_graph_alias_root(g, pd->outputs[k]) == pd->outputs[k];
            /* its next reader after the peak: the first step > ps reading this copy */
            size_t at = 0;
            for (size_t i = ps + 1; i < s->n && !at && ok; i++) {
                const af_node_info_t *nd = af_graph_node(g, s->v[i].id);
                for (int32_t k = 0; k < nd->n_inputs; k++)
                    at = af_graph_alias_root(g, nd->inputs[k]) == t ? i : at;
            }
            if (!ok || !at)
                continue;
            int64_t net = (int64_t)bl_size(g, t);
            for (int32_t k = 0; k < pd->n_inputs; k++) { /* inputs whose lives it extends */
                int32_t x = af_graph_alias_root(g, pd->inputs[k]), cx = m.cur[x];
                if (cx >= 0 && m.c_last[cx] < (int32_t)at &&
                    af_graph_tensor(g, x)->kind != AF_TENSOR_OUTPUT)
                    net -= (int64_t)bl_size(g, x);
            }
            double cost = pd->cost > 0 ? pd->cost : 1;
            if (net > 0 && cost / (double)net < best)
                best = cost / (double)net, best_c = c, best_at = at;
        }
        if (best == HUGE_VAL)
            break;
        /* insert RUN producer right before the next reader, then the nodes making views of
         * it (so later view readers see views of the new copy) */
        int32_t t = m.c_t[best_c];
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        int32_t ins[64], n_ins = 0;
        ins[n_ins++] = ti->producer;
        for (int32_t k = 0; k < ti->n_consumers && n_ins < 64; k++) {
            const af_node_info_t *cd = af_graph_node(g, ti->consumers[k]);
            for (int32_t o = 0; o < cd->n_outputs; o++)
                if (af_graph_tensor(g, cd->outputs[o])->alias_of == t) {
                    ins[n_ins++] = ti->consumers[k];
                    break;
                }
        }
        for (int32_t k = 0; k < n_ins; k++)
            steps_push(s, AF_STEP_RUN, 0);
        memmove(&s->v[best_at + (size_t)n_ins], &s->v[best_at],
                (s->n - (size_t)n_ins - best_at) * sizeof(af_step_t));
        for (int32_t k = 0; k < n_ins; k++)
            s->v[best_at + (size_t)k] = (af_step_t){AF_STEP_RUN, ins[k]};
    }
    free(m.cur), free(m.c_t), free(m.c_birth), free(m.c_last), free(m.live);
    return 1;
}

/* ---- the chain DP, again (reference) ------------------------------------------------------ */

/*
 * Unit chain: every x and g one unit, every forward layer cost 1. S(i, j, m): backward of
 * layers i+1..j with x_i and g_j held in m units. Top level T(c, u): last checkpoint c, u units
 * of checkpoints below it. Returns the least recompute count, or -1 when no schedule fits M.
 */
typedef struct bl_chain {
    int n, M;
    int *memo_s, *memo_t;
} bl_chain_t;

#define BL_INF (1 << 28)

static int bl_seg(bl_chain_t *c, int i, int j, int m)
{
    if (m < 0)
        return BL_INF;
    int *slot = &c->memo_s[((size_t)i * (c->n + 1) + (size_t)j) * (size_t)(c->M + 1) + (size_t)m];
    if (*slot >= 0)
        return *slot;
    int best = BL_INF;
    if (j == i + 1) {
        best = m >= 3 ? 0 : BL_INF; /* x_i, g_j, g_i */
    } else {
        for (int k = i + 1; k < j; k++) {
            /* the sweep x_i -> x_k beside g_j: x_i, the previous x, the new x, g_j */
            int need = 1 + (k - 1 > i ? 1 : 0) + 1 + 1;
            if (need > m)
                break;
            int v = (k - i) + bl_seg(c, k, j, m - 1) + bl_seg(c, i, k, m);
            best = v < best ? v : best;
        }
    }
    return *slot = best;
}

static int bl_top(bl_chain_t *c, int ck, int u)
{
    int M = c->M, n = c->n;
    int *slot = &c->memo_t[(size_t)ck * (size_t)(M + 1) + (size_t)u];
    if (*slot >= 0)
        return *slot;
    int best = BL_INF;
    /* sweep to the end: x_ck, previous, new (3 when n > ck + 1); the loss: x_ck, x_n, g_n */
    int sweep = u + 1 + (n - 1 > ck ? 1 : 0) + 1;
    if (sweep <= M && u + 3 <= M)
        best = bl_seg(c, ck, n, M - u);
    for (int k = ck + 1; k < n && u + 1 <= M; k++) {
        int need = u + 1 + (k - 1 > ck ? 1 : 0) + 1;
        if (need > M)
            break;
        int v = bl_top(c, k, u + 1) + bl_seg(c, ck, k, M - u);
        best = v < best ? v : best;
    }
    return *slot = best;
}

static int bl_chain_opt(int n, int units)
{
    bl_chain_t c = {n, units, NULL, NULL};
    size_t ns = (size_t)(n + 1) * (n + 1) * (size_t)(units + 1), nt = (size_t)(n + 1) * (units + 1);
    c.memo_s = malloc(ns * sizeof(int));
    c.memo_t = malloc(nt * sizeof(int));
    memset(c.memo_s, 0xff, ns * sizeof(int));
    memset(c.memo_t, 0xff, nt * sizeof(int));
    int r = bl_top(&c, 0, 0);
    free(c.memo_s);
    free(c.memo_t);
    return r >= BL_INF ? -1 : r;
}

#endif
