/*
 * Exact checkpointing of a training chain: the dynamic programme (Griewank's revolve, with
 * the heterogeneous costs and sizes of Beaumont et al.'s chain DP) in this planner's memory
 * model.
 *
 * A training chain is x0 -f1-> x1 -f2-> ... -fn-> xn -loss-> gn, then bn: (gn, x(n-1)) -> g(n-1),
 * ..., b1: (g1, x0) -> g0 (a graph output); x0 is a graph input; no views; constants may be
 * read anywhere. A node's inputs and outputs are live during its step, a copy lives from its
 * producer to its last reader.
 *
 * Schedules: the first forward sweep (free: each f runs once there) keeps checkpoints
 * c0 = 0 < c1 < ... and drops the rest; after the loss, the backward of each segment
 * (c, next] is solved by S(i, j, m): with x_i and g_j held and m bytes for the segment (x_i and
 * g_j included), either j = i + 1 and b_j runs, or the forward from x_i to some x_k is
 * recomputed keeping only x_k, S(k, j, m - |x_i|) runs, then S(i, k, m). So
 *   OPT(i, i+1, m) = 0                       if |x_i| + |g_i+1| + |g_i| <= m
 *   OPT(i, j, m)   = min_k  cost(f_i+1..f_k) + OPT(k, j, m - |x_i|) + OPT(i, k, m)
 *                   over k in (i, j) whose recomputed sweep fits m beside g_j,
 * and the top level G(c, U) (checkpoint c, U bytes of lower checkpoints held) either sweeps to
 * the end and runs the loss, then OPT(c, n, T - U), or sweeps to a next checkpoint k:
 * G(k, U + |x_c|) + OPT(c, k, T - U). Memory is counted in units of the gcd of the sizes, so
 * the DP is exact; it is skipped (return 1) when its table would pass DP_MAX_ENTRIES.
 */
#include "planner/budget_int.h"

#include <math.h>
#include <string.h>

#define DP_MAX_ENTRIES 3000000

typedef struct chain {
    int32_t n;
    int32_t *f, loss, *b; /* f[1..n], b[1..n] node ids */
    uint64_t *sx, *sg;    /* sizes in units, x[0..n], g[0..n] */
    double *cf;           /* cost of f[l] */
    int32_t M;            /* target in units */
    double *opt;          /* [(i * (n+1) + j) * (M+1) + m] */
    int32_t *kopt;
    double *top; /* [c * (M+1) + U] */
    int32_t *ktop;
    af_step_t *steps;
    size_t n_steps;
} chain_t;

static int32_t arena_inputs(const af_graph_t *g, int32_t v, int32_t *a, int32_t *b)
{
    const af_node_info_t *nd = af_graph_node(g, v);
    int32_t n = 0;
    for (int32_t k = 0; k < nd->n_inputs; k++) {
        int32_t t = nd->inputs[k];
        if (!af__is_arena_root(g, t) || (n >= 1 && *a == t) || (n >= 2 && *b == t))
            continue;
        if (n == 0)
            *a = t;
        else if (n == 1)
            *b = t;
        n++;
    }
    return n;
}

/* The single arena output of v, or -1. */
static int32_t arena_output(const af_graph_t *g, int32_t v)
{
    const af_node_info_t *nd = af_graph_node(g, v);
    int32_t out = -1;
    for (int32_t k = 0; k < nd->n_outputs; k++) {
        if (!af__is_arena_root(g, nd->outputs[k]) || out >= 0)
            return -1;
        out = nd->outputs[k];
    }
    return out;
}

/* Walks the forward chain from the only arena input; fills c->f, loss, b. 0 or 1 (no chain). */
static int recognise(const af_graph_t *g, chain_t *c, int32_t *xs, int32_t *gs)
{
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g), x0 = -1, len = 0;
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->alias_of >= 0 || ti->bytes < 0)
            return 1;
        if (ti->kind == AF_TENSOR_INPUT && af__is_arena_root(g, t)) {
            if (x0 >= 0)
                return 1;
            x0 = t;
        }
    }
    if (x0 < 0 || nn < 3 || nn % 2 == 0)
        return 1;
    int32_t n = (nn - 1) / 2;
    xs[0] = x0;
    for (int32_t cur = x0; len <= n;) { /* x0 .. xn, then gn */
        const af_tensor_info_t *ti = af_graph_tensor(g, cur);
        int32_t next = -1, a, b;
        for (int32_t k = 0; k < ti->n_consumers; k++)
            if (arena_inputs(g, ti->consumers[k], &a, &b) == 1)
                next = next < 0 ? ti->consumers[k] : -2;
        if (next < 0 || (cur = arena_output(g, next)) < 0)
            return 1;
        if (len < n)
            c->f[len + 1] = next;
        else
            c->loss = next;
        len++;
        if (len <= n)
            xs[len] = cur;
        else
            gs[n] = cur;
    }
    for (int32_t j = n; j >= 1; j--) { /* bj: (gj, x(j-1)) -> g(j-1) */
        const af_tensor_info_t *ti = af_graph_tensor(g, gs[j]);
        int32_t a, b, v = ti->n_consumers == 1 ? ti->consumers[0] : -1;
        if (v < 0 || arena_inputs(g, v, &a, &b) != 2 || (a != xs[j - 1] && b != xs[j - 1]) ||
            (gs[j - 1] = arena_output(g, v)) < 0)
            return 1;
        c->b[j] = v;
    }
    for (int32_t i = 0; i < n; i++) /* x_i read by f(i+1) and b(i+1) only */
        if (af_graph_tensor(g, xs[i])->n_consumers != 2)
            return 1;
    const af_tensor_info_t *g0 = af_graph_tensor(g, gs[0]);
    if (g0->kind != AF_TENSOR_OUTPUT || g0->n_consumers ||
        af_graph_tensor(g, xs[n])->n_consumers != 1)
        return 1;
    for (int32_t t = 0; t < nt; t++) /* nothing else lives in the arena */
        if (af__is_arena_root(g, t) && t != gs[0] &&
            af_graph_tensor(g, t)->kind == AF_TENSOR_OUTPUT)
            return 1;
    c->n = n;
    return 0;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

#define OPT(c, i, j, m) (c)->opt[((size_t)(i) * ((c)->n + 1) + (size_t)(j)) * ((c)->M + 1) + (m)]
#define KOPT(c, i, j, m) (c)->kopt[((size_t)(i) * ((c)->n + 1) + (size_t)(j)) * ((c)->M + 1) + (m)]

/* Most units the sweep f(i+1)..f(k) from checkpoint x_i needs (x_i, the previous x, the new). */
static uint64_t sweep_need(const chain_t *c, int32_t i, int32_t k)
{
    uint64_t need = 0;
    for (int32_t l = i + 1; l <= k; l++) {
        uint64_t s = c->sx[i] + (l - 1 > i ? c->sx[l - 1] : 0) + c->sx[l];
        need = s > need ? s : need;
    }
    return need;
}

static void solve_segments(chain_t *c)
{
    int32_t n = c->n, M = c->M;
    for (int32_t d = 1; d <= n; d++)
        for (int32_t i = 0; i + d <= n; i++) {
            int32_t j = i + d;
            for (int32_t m = 0; m <= M; m++) {
                double best = HUGE_VAL;
                int32_t bk = -1;
                if (d == 1) {
                    if (c->sx[i] + c->sg[j] + c->sg[i] <= (uint64_t)m)
                        best = 0;
                } else if ((uint64_t)m >= c->sx[i]) {
                    double fc = 0;
                    for (int32_t k = i + 1; k < j; k++) {
                        fc += c->cf[k];
                        if (sweep_need(c, i, k) + c->sg[j] > (uint64_t)m)
                            break; /* longer sweeps need at least as much */
                        double v = fc + OPT(c, k, j, m - (int32_t)c->sx[i]) + OPT(c, i, k, m);
                        if (v < best)
                            best = v, bk = k;
                    }
                }
                OPT(c, i, j, m) = best;
                KOPT(c, i, j, m) = bk;
            }
        }
}

static void solve_top(chain_t *c)
{
    int32_t n = c->n, M = c->M;
    for (int32_t ck = n - 1; ck >= 0; ck--)
        for (int32_t U = 0; U <= M; U++) {
            double best = HUGE_VAL;
            int32_t bk = -1;
            uint64_t T = (uint64_t)M, u = (uint64_t)U;
            if (u + sweep_need(c, ck, n) <= T && u + c->sx[ck] + c->sx[n] + c->sg[n] <= T) {
                best = OPT(c, ck, n, M - U);
                bk = n;
            }
            for (int32_t k = ck + 1; k < n && u + c->sx[ck] <= T; k++) {
                if (u + sweep_need(c, ck, k) > T)
                    break;
                double v = c->top[(size_t)k * (M + 1) + (size_t)(U + (int32_t)c->sx[ck])] +
                           OPT(c, ck, k, M - U);
                if (v < best)
                    best = v, bk = k;
            }
            c->top[(size_t)ck * (M + 1) + U] = best;
            c->ktop[(size_t)ck * (M + 1) + U] = bk;
        }
}

static void emit(chain_t *c, int32_t node)
{
    c->steps[c->n_steps++] = (af_step_t){AF_STEP_RUN, node};
}

static void emit_segment(chain_t *c, int32_t i, int32_t j, int32_t m)
{
    if (j == i + 1) {
        emit(c, c->b[j]);
        return;
    }
    int32_t k = KOPT(c, i, j, m);
    for (int32_t l = i + 1; l <= k; l++)
        emit(c, c->f[l]);
    emit_segment(c, k, j, m - (int32_t)c->sx[i]);
    emit_segment(c, i, k, m);
}

static void emit_top(chain_t *c, int32_t ck, int32_t U)
{
    int32_t k = c->ktop[(size_t)ck * (c->M + 1) + U];
    for (int32_t l = ck + 1; l <= k; l++)
        emit(c, c->f[l]);
    if (k == c->n) {
        emit(c, c->loss);
        emit_segment(c, ck, c->n, c->M - U);
        return;
    }
    emit_top(c, k, U + (int32_t)c->sx[ck]);
    emit_segment(c, ck, k, c->M - U);
}

/* Sizes in units; the DP tables. 0, 1 (too large), AF_ENOMEM. */
static int setup(chain_t *c, const af_graph_t *g, uint64_t alignment, uint64_t target,
                 const int32_t *xs, const int32_t *gs)
{
    int32_t n = c->n;
    uint64_t u = 0;
    for (int32_t i = 0; i <= n; i++) {
        c->sx[i] = af__align_up((uint64_t)af_graph_tensor(g, xs[i])->bytes, alignment);
        c->sg[i] = af__align_up((uint64_t)af_graph_tensor(g, gs[i])->bytes, alignment);
        u = gcd64(gcd64(u, c->sx[i]), c->sg[i]);
    }
    if (!u || target / u > INT32_MAX / 2)
        return 1;
    for (int32_t i = 0; i <= n; i++) {
        c->sx[i] /= u;
        c->sg[i] /= u;
    }
    for (int32_t l = 1; l <= n; l++)
        c->cf[l] = af__node_cost(g, c->f[l]);
    c->M = (int32_t)(target / u);
    double cells = (double)(n + 1) * (n + 1) * ((double)c->M + 1);
    if (cells > DP_MAX_ENTRIES)
        return 1;
    size_t nc = (size_t)cells, nt = (size_t)(n + 1) * ((size_t)c->M + 1);
    c->opt = af__malloc(nc * sizeof(double));
    c->kopt = af__malloc(nc * sizeof(int32_t));
    c->top = af__malloc(nt * sizeof(double));
    c->ktop = af__malloc(nt * sizeof(int32_t));
    c->steps = af__malloc(((size_t)n * (n + 3) + 8) * sizeof(af_step_t));
    return c->opt && c->kopt && c->top && c->ktop && c->steps ? 0 : AF_ENOMEM;
}

int af__chain_plan(const af_graph_t *g, uint64_t alignment, uint64_t target, af_step_t **steps,
                   size_t *n_steps, double *extra)
{
    int32_t nn = af_graph_node_count(g), half = nn / 2 + 2;
    chain_t c = {0};
    c.f = af__calloc((size_t)half, sizeof(int32_t));
    c.b = af__calloc((size_t)half, sizeof(int32_t));
    c.sx = af__calloc((size_t)half, sizeof(uint64_t));
    c.sg = af__calloc((size_t)half, sizeof(uint64_t));
    c.cf = af__calloc((size_t)half, sizeof(double));
    int32_t *xs = af__calloc((size_t)half, sizeof(int32_t));
    int32_t *gs = af__calloc((size_t)half, sizeof(int32_t));
    int rc = c.f && c.b && c.sx && c.sg && c.cf && xs && gs ? 0 : AF_ENOMEM;
    if (!rc)
        rc = recognise(g, &c, xs, gs);
    if (!rc)
        rc = setup(&c, g, alignment ? alignment : 1, target, xs, gs);
    if (!rc) {
        solve_segments(&c);
        solve_top(&c);
        if (c.top[0] == HUGE_VAL) {
            rc = 2;
        } else {
            emit_top(&c, 0, 0);
            *extra = c.top[0];
            *steps = c.steps;
            *n_steps = c.n_steps;
            c.steps = NULL;
        }
    }
    af__free(c.f), af__free(c.b), af__free(c.sx), af__free(c.sg), af__free(c.cf);
    af__free(c.opt), af__free(c.kopt), af__free(c.top), af__free(c.ktop), af__free(c.steps);
    af__free(xs), af__free(gs);
    return rc;
}
