/*
 * The evict-on-demand simulator: a rematerialisation schedule for any DAG under a byte target.
 *
 * The base order is walked node by node, keeping the planner's memory model (arena roots at
 * their aligned size; a view keeps its root; a node's inputs and outputs are live during its
 * step; graph outputs stay to the end; graph inputs are kept throughout, which over-counts and
 * is safe). Before a node runs, every input that has no valid copy is brought back — swapped in
 * from its host copy, or recomputed by running its producer again, whose own missing inputs are
 * brought back first (an explicit stack: chains of any depth). When the live bytes of a step
 * would pass the target, a resident tensor that the running nodes do not need is evicted: the
 * one with the lowest
 *         score = regen cost / (bytes x (steps until its next use + 1)^beta)
 * (the regen cost counts inputs that would have to come back too, DTR's "evicted neighbourhood";
 * offload prices a swap at swap_weight x its transfer time, plus, with cfg.stall, the compute a
 * swap-out stalls when the bytes are needed before the copy link can have drained them), so the
 * bytes freed longest for the least work go first. The next-use distance comes from the base order:
 * the simulator knows the future, as an offline planner does.
 *
 * Freed bytes are freed in the past too. An evicted copy dies at its last reader, so the live
 * bytes of every step since then are lowered when it is evicted (the profile of the steps
 * already emitted is kept). A swap-in is placed back in time as far as there is headroom under
 * the target, until the compute before its reader covers the transfer (prefetch), and its
 * SwapOut right after the copy's last reader, so transfers overlap compute. The emitted steps
 * are therefore: the main steps in order, each with the swap-ins attached before it and the
 * swap-outs attached after it.
 *
 * Graph outputs stay resident, except with cfg.swap_outputs: then an output (a root with no
 * views: a weight gradient, made early in the backward pass and held to the end) is a swap-only
 * victim whose next use is the end, and every output swapped out is swapped back in, prefetched
 * like any swap-in, after the last node (budget_steps.c gives that SwapIn the output's id).
 *
 * Invariants: the live bytes of every emitted step stay within the target (so the schedule's
 * true peak, which frees inputs after their last use, is at most the simulated one); a tensor
 * pinned by a running node is never evicted; a node whose outputs include a graph output is
 * never recomputed (its output must stay the one the caller reads).
 */
#include "planner/budget_evict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- run state ---------------------------------------------------------------------------- */

/* 1 when x is a graph output this run may swap out and back (cfg.swap_outputs). */
static int out_swap(const af__remat_t *r, int32_t x)
{
    return (r->flag[x] & F_OUTSW) && r->offload && r->cfg->swap_outputs;
}

/* 1 when x never leaves: a graph input, or a graph output this run keeps. */
static int held(const af__remat_t *r, int32_t x)
{
    return (r->flag[x] & F_PINNED) && !out_swap(r, x);
}

static int32_t next_use(af__remat_t *r, int32_t x)
{
    int32_t at = r->cur + r->sigma_done;
    while (r->nu[x] < r->use_off[x + 1] && r->uses[r->nu[x]] < at)
        r->nu[x]++;
    if (r->nu[x] < r->use_off[x + 1])
        return r->uses[r->nu[x]];
    return out_swap(r, x) ? r->nn : NO_USE; /* a swapped output is read back at the end */
}

/* The resident list holds the tensors eviction may consider (pinned ones never leave). */
static void res_add(af__remat_t *r, int32_t x)
{
    if (held(r, x))
        return;
    r->res_pos[x] = r->n_res;
    r->res[r->n_res++] = x;
}

static void res_del(af__remat_t *r, int32_t x)
{
    if (held(r, x))
        return;
    int32_t i = r->res_pos[x], y = r->res[--r->n_res];
    r->res[i] = y;
    r->res_pos[y] = i;
}

static void pin(af__remat_t *r, int32_t x, int d)
{
    r->pin[r->root[x]] += d;
    if (r->root[x] != x)
        r->pinv[r->root[x]] += d;
}

/* The current copy of root x dies at its last reader: its bytes leave every later step. */
static void retire(af__remat_t *r, int32_t x)
{
    for (size_t s = (size_t)r->last[x] + 1; s < r->n_slots; s++)
        r->mem[s] -= r->size[x];
    r->valid[x] = 0;
    r->live -= r->size[x];
    res_del(r, x);
    for (int32_t k = r->view_off[x]; k < r->view_off[x + 1]; k++)
        r->valid[r->views[k]] = 0;
}

static int push_rec(af__remat_t *r, int32_t slot, int where, af_step_kind_t kind, int32_t id,
                    int32_t aux)
{
    if (af__grow((void **)&r->rec, &r->cap_rec, r->n_rec + 1, sizeof(rec_t)))
        return AF_ENOMEM;
    r->rec[r->n_rec] = (rec_t){slot, (int32_t)r->n_rec, aux, (uint8_t)where, {kind, id}};
    r->n_rec++;
    return 0;
}

/* Cost to bring tensor x back now (0 when valid): swap-in when a host copy exists, else its
 * producer plus (recursive) its missing inputs. Memoised per eviction round. */
static double regen(af__remat_t *r, int32_t x, int depth)
{
    int32_t rt = r->root[x];
    if (r->valid[x] && depth > 0)
        return 0;
    if (r->memo_at[x] == r->stamp && depth > 0)
        return r->memo[x];
    double c = HUGE_VAL;
    if (rt == x && r->offload && r->host[x])
        c = r->cfg->swap_weight * (double)r->size[x] * r->swap_unit;
    int32_t p = af_graph_tensor(r->g, x)->producer;
    if (p >= 0 && r->recompute && ((r->flag[rt] & F_DROP) || rt != x)) {
        double rc = r->cost[p];
        const af_node_info_t *nd = af_graph_node(r->g, p);
        for (int32_t k = 0; k < nd->n_inputs && r->cfg->recursive && depth < REGEN_DEPTH; k++)
            rc += regen(r, nd->inputs[k], depth + 1);
        c = rc < c ? rc : c;
    }
    if (depth > 0) {
        r->memo_at[x] = r->stamp;
        r->memo[x] = c;
    }
    return c;
}

static double rand01(af__remat_t *r)
{
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return (double)(r->rng >> 11) / 9007199254740992.0;
}

/* d^beta, with the portfolio's exponents (0, 0.5, 1, 2) without a call to pow(). */
static double dist_pow(double d, double beta)
{
    if (beta == 0)
        return 1;
    if (beta == 1)
        return d;
    if (beta == 2)
        return d * d;
    if (beta == 0.5)
        return sqrt(d);
    return pow(d, beta);
}

/* Compute time lost when x is swapped out now: its bytes are needed now, and the copy stream
 * (busy with the transfers issued before) finishes the SwapOut later; the step that takes the
 * bytes waits for it (the reuse edge placement adds). 0 when x has a host copy already. */
static double out_stall(const af__remat_t *r, int32_t x)
{
    if (r->host[x])
        return 0;
    double t0 = r->at[r->last[x] + 1] > r->copy_free ? r->at[r->last[x] + 1] : r->copy_free;
    double end = t0 + (double)r->size[x] * r->swap_unit, now = r->at[r->n_slots];
    return end > now ? end - now : 0;
}

/* Picks the resident tensor to evict (-1: none); *swap = 1 when swapping is the cheaper way. */
static int32_t pick_victim(af__remat_t *r, int *swap)
{
    const af__remat_cfg_t *c = r->cfg;
    r->stamp++;
    for (int pass = 0; pass < 2; pass++) {
        int32_t best = -1;
        double bh = HUGE_VAL;
        for (int32_t i = 0; i < r->n_res; i++) {
            int32_t x = r->res[i];
            int can_rc = r->recompute && (r->flag[x] & F_DROP);
            int can_sw = r->offload && ((r->flag[x] & F_SWAP) || out_swap(r, x));
            if (r->pin[x] || held(r, x) || (!can_rc && !can_sw) ||
                (!pass && c->protect && c->protect[x]))
                continue;
            int32_t nu = next_use(r, x);
            double sc =
                can_sw ? c->swap_weight * (double)r->size[x] * r->swap_unit * (r->host[x] ? 1 : 2) +
                             (c->stall ? out_stall(r, x) : 0)
                       : HUGE_VAL;
            double denom = nu == NO_USE
                               ? 1
                               : (double)r->size[x] * dist_pow((double)(nu - r->cur) + 1, c->beta);
            /* the producer's own cost bounds the regen cost from below: skip hopeless ones */
            double lb = can_rc ? r->cost[af_graph_tensor(r->g, x)->producer] : HUGE_VAL;
            if (nu != NO_USE && ((lb < sc ? lb : sc) + 1e-9) / denom >= bh)
                continue;
            double rc = can_rc ? regen(r, x, 0) : HUGE_VAL;
            double cost = rc < sc ? rc : sc, h;
            if (nu == NO_USE) {
                h = -1; /* dead already: free */
            } else {
                h = (cost + 1e-9) / denom;
                if (c->noise)
                    h *= 1 + 0.25 * rand01(r);
            }
            if (h < bh) {
                int m = c->mode ? c->mode[x] : AF__REMAT_ANY;
                bh = h;
                best = x;
                *swap = nu != NO_USE && sc < rc;
                if (nu != NO_USE && m == AF__REMAT_SWAP && can_sw)
                    *swap = 1;
                else if (m == AF__REMAT_RECOMPUTE && can_rc)
                    *swap = 0;
            }
        }
        if (best >= 0)
            return best;
    }
    return -1;
}

/* Evicts until `need` more bytes fit under the target. 0, 1 (cannot), AF_ENOMEM. */
static int make_room(af__remat_t *r, uint64_t need)
{
    while (r->live + need > r->cfg->target) {
        int swap = 0;
        int32_t x = pick_victim(r, &swap);
        if (x < 0)
            return 1;
        if (swap && !r->host[x]) {
            /* The SwapOut goes after the step by which the copy stream will have finished it,
             * so the bytes are not handed on while the transfer still reads them. */
            size_t q = (size_t)r->last[x];
            double t0 = r->at[q + 1] > r->copy_free ? r->at[q + 1] : r->copy_free;
            r->copy_free = t0 + (double)r->size[x] * r->swap_unit;
            while (q + 1 < r->n_slots && r->at[q + 1] < r->copy_free)
                q++;
            if (push_rec(r, (int32_t)q, POST, AF_STEP_SWAP_OUT, x, (int32_t)q + 1))
                return AF_ENOMEM;
            r->host[x] = 1;
            r->last[x] = r->out_slot[x] = (int32_t)q;
            r->swapped += r->size[x];
        }
        if (next_use(r, x) != NO_USE)
            r->ever[x] = 1;
        retire(r, x);
    }
    return 0;
}

/* The earliest slot a swap-in of root x (sz bytes, d cost units of transfer) can start at:
 * back from now while there is headroom under the target, until the compute before now covers
 * the transfer; not before the last step of the previous copy (it was current). */
static size_t prefetch_slot(const af__remat_t *r, int32_t x, uint64_t sz, double d)
{
    double now = r->at[r->n_slots];
    size_t p = r->n_slots;
    while (p > (size_t)r->last[x] + 1 &&
           now - (r->at[p] > r->copy_free ? r->at[p] : r->copy_free) < d &&
           r->mem[p - 1] + sz <= r->cfg->target)
        p--;
    return p;
}

/* Room for a prefetch: the resident copy, last read before slot q, that recomputation brings
 * back for the least cost per byte, below `gain` cost units: dropping it frees its bytes from
 * the step after its last read on. -1 when none. */
static int32_t room_victim(af__remat_t *r, int32_t x, size_t q, double gain)
{
    int32_t best = -1;
    double bh = HUGE_VAL;
    r->stamp++;
    for (int32_t i = 0; i < r->n_res; i++) {
        int32_t y = r->res[i];
        if (y == x || r->pin[y] || held(r, y) || !(r->flag[y] & F_DROP) || r->last[y] < 0 ||
            (size_t)r->last[y] >= q)
            continue;
        double c = next_use(r, y) == NO_USE ? 0 : regen(r, y, 0), h = c / (double)r->size[y];
        if (c < gain && h < bh)
            bh = h, best = y;
    }
    return best;
}

/* Brings root x back from its host copy, as early as headroom and the transfer time allow. With
 * cfg.prefetch, when it is headroom (not the link) that leaves the transfer exposed, copies read
 * before the step that blocks it are dropped, to be recomputed later, while each costs less
 * than the exposure left. */
static int swap_in(af__remat_t *r, int32_t x)
{
    uint64_t sz = r->size[x];
    double d = (double)sz * r->swap_unit, now = r->at[r->n_slots];
    size_t p = prefetch_slot(r, x, sz, d);
    for (int i = 0;
         r->cfg->prefetch && r->recompute && i < PREFETCH_DROPS && p > (size_t)r->last[x] + 1;
         i++) {
        double t0 = r->at[p] > r->copy_free ? r->at[p] : r->copy_free;
        if (r->copy_free >= r->at[p] || now - t0 >= d)
            break; /* covered, or the link is what makes it late */
        int32_t y = room_victim(r, x, p - 1, d - (now - t0));
        if (y < 0)
            break;
        if (next_use(r, y) != NO_USE)
            r->ever[y] = 1;
        retire(r, y);
        p = prefetch_slot(r, x, sz, d);
    }
    double t0 = r->at[p] > r->copy_free ? r->at[p] : r->copy_free;
    r->copy_free = t0 + d;
    if (p == r->n_slots) {
        int rc = make_room(r, sz);
        if (rc)
            return rc;
    }
    for (size_t s = p; s < r->n_slots; s++)
        r->mem[s] += sz;
    if (push_rec(r, (int32_t)p, PRE, AF_STEP_SWAP_IN, x, 0))
        return AF_ENOMEM;
    r->valid[x] = 1;
    r->live += sz;
    r->last[x] = (int32_t)p;
    res_add(r, x);
    return 0;
}

/* Runs node u (its inputs valid and pinned): room for its outputs, one main step. */
static int exec(af__remat_t *r, int32_t u, int orig)
{
    const af_node_info_t *nd = af_graph_node(r->g, u);
    uint64_t need = 0;
    for (int32_t k = 0; k < nd->n_outputs; k++) {
        int32_t o = nd->outputs[k];
        if (!orig && (r->flag[r->root[o]] & F_PINNED))
            return 1; /* a graph output stays the copy its first run made */
        if (!orig && r->valid[o] && r->size[o]) {
            if (r->pinv[o])
                return 1; /* a running node reads a view of the copy this would replace */
            retire(r, o);
        }
        r->valid[o] = 0;
        need += r->size[o];
    }
    int rc = make_room(r, need);
    if (rc)
        return rc;
    if (r->n_slots >= MAX_SLOTS_PER_NODE * (size_t)r->nn + 1024)
        return 1; /* thrashing: recomputing the same work over and over is no schedule to keep */
    if (af__grow((void **)&r->mem, &r->cap_slots, r->n_slots + 1, sizeof(uint64_t)))
        return AF_ENOMEM;
    if (af__grow((void **)&r->at, &r->cap_at, r->n_slots + 2, sizeof(double)))
        return AF_ENOMEM;
    int32_t slot = (int32_t)r->n_slots++;
    r->mem[slot] = r->live + need;
    r->at[slot + 1] = r->at[slot] + r->cost[u];
    if (!orig)
        r->extra += r->cost[u];
    if (push_rec(r, slot, MAIN, AF_STEP_RUN, u, 0))
        return AF_ENOMEM;
    for (int32_t k = 0; k < nd->n_inputs; k++)
        if (r->size[r->root[nd->inputs[k]]])
            r->last[r->root[nd->inputs[k]]] = slot;
    for (int32_t k = 0; k < nd->n_outputs; k++) {
        int32_t o = nd->outputs[k];
        r->valid[o] = r->root[o] == o || r->valid[r->root[o]];
        if (r->size[o]) {
            r->live += r->size[o];
            r->last[o] = slot;
            res_add(r, o);
        }
    }
    if (orig)
        r->sigma_done = 1;
    return 0;
}

/* Drops what node u touched and nobody needs any more. */
static void free_dead(af__remat_t *r, int32_t u)
{
    const af_node_info_t *nd = af_graph_node(r->g, u);
    for (int32_t io = 0; io < nd->n_inputs + nd->n_outputs; io++) {
        int32_t x = r->root[io < nd->n_inputs ? nd->inputs[io] : nd->outputs[io - nd->n_inputs]];
        if (r->size[x] && r->valid[x] && !r->pin[x] && !held(r, x) && next_use(r, x) == NO_USE)
            retire(r, x);
    }
}

/* How to bring back input x of a running node: 0 swapped in now, 1 push its producer, else
 * the failure (2: impossible, AF_ENOMEM). */
static int regen_plan(af__remat_t *r, int32_t x)
{
    int32_t rt = r->root[x];
    int32_t p = af_graph_tensor(r->g, x)->producer;
    int can_rc = p >= 0 && r->recompute && ((r->flag[rt] & F_DROP) || (rt != x && r->valid[rt]));
    int m = r->cfg->mode ? r->cfg->mode[rt] : AF__REMAT_ANY;
    if (rt == x && r->host[x] && r->offload && (m != AF__REMAT_RECOMPUTE || !can_rc)) {
        if (m == AF__REMAT_SWAP)
            return swap_in(r, x) ? 2 : 0;
        r->stamp++;
        double sc = r->cfg->swap_weight * (double)r->size[x] * r->swap_unit;
        if (!can_rc || sc <= regen(r, x, 0))
            return swap_in(r, x) ? 2 : 0;
    }
    if (rt != x && !r->valid[rt] && p >= 0)
        return 1; /* a view: its producer's input (the base) comes back first */
    return can_rc ? 1 : 2;
}

/* Runs base-order node v, bringing back whatever it (transitively) needs. 0, 1, AF_ENOMEM. */
static int run_node(af__remat_t *r, int32_t v)
{
    int32_t sp = 0;
    r->stack[sp++] = (frame_t){v, 0, -1, 1};
    while (sp > 0) {
        frame_t *f = &r->stack[sp - 1];
        const af_node_info_t *nd = af_graph_node(r->g, f->u);
        if (f->k < nd->n_inputs) {
            int32_t x = nd->inputs[f->k];
            if (r->valid[x]) {
                pin(r, x, 1);
                f->k++;
                continue;
            }
            int how = regen_plan(r, x);
            if (how == 1 && sp < r->nn)
                r->stack[sp++] = (frame_t){af_graph_tensor(r->g, x)->producer, 0, x, 0};
            else if (how)
                return how == AF_ENOMEM ? AF_ENOMEM : 1;
            continue;
        }
        int rc = exec(r, f->u, f->orig);
        if (rc)
            return rc;
        int32_t u = f->u, want = f->want;
        sp--;
        if (want >= 0) {
            if (!r->valid[want])
                return 1; /* a view whose producer does not read its base */
            pin(r, want, 1);
            r->stack[sp - 1].k++;
        }
        for (int32_t k = 0; k < nd->n_inputs; k++)
            pin(r, nd->inputs[k], -1);
        free_dead(r, u);
    }
    return 0;
}

/* ---- a run ---------------------------------------------------------------------------------- */

static void reset(af__remat_t *r, const af__remat_cfg_t *cfg)
{
    r->cfg = cfg;
    r->n_res = 0;
    r->live = r->swapped = 0;
    r->extra = 0;
    r->n_slots = r->n_rec = 0;
    r->cur = r->sigma_done = 0;
    r->copy_free = 0;
    r->rng = (cfg->noise * 0x9E3779B97F4A7C15ull) | 1;
    for (int32_t t = 0; t < r->nt; t++) {
        r->valid[t] = af_graph_tensor(r->g, t)->producer < 0;
        r->host[t] = r->ever[t] = 0;
        r->pin[t] = r->pinv[t] = 0;
        r->last[t] = r->out_slot[t] = -1;
        r->nu[t] = r->use_off[t];
        if (r->valid[t] && r->size[t]) {
            r->live += r->size[t];
            res_add(r, t);
        }
    }
}

/* With cfg.swap_outputs: the graph outputs swapped out come back before the end (prefetched
 * like any swap-in); those resident stay. 0, 1 (no room), AF_ENOMEM. */
static int bring_outputs_back(af__remat_t *r)
{
    if (!r->offload || !r->cfg->swap_outputs)
        return 0;
    r->cur = r->nn;
    r->sigma_done = 0;
    for (int32_t t = 0; t < r->nt; t++)
        if (out_swap(r, t) && r->valid[t])
            pin(r, t, 1);
    for (int32_t t = 0; t < r->nt; t++) {
        if (!out_swap(r, t) || r->valid[t])
            continue;
        if (!r->host[t])
            return 1; /* cannot happen: an output leaves only by a swap */
        int rc = swap_in(r, t);
        if (rc)
            return rc;
        pin(r, t, 1);
    }
    return 0;
}

static int cmp_rec(const void *a, const void *b)
{
    const rec_t *x = a, *y = b;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    if (x->where != y->where)
        return x->where < y->where ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Two-stream estimate of the sorted records, in cost units (data edges, and each SwapOut
 * before the allocation that needed its bytes). */
static int estimate(af__remat_t *r, double *out)
{
    double *cur = af__calloc((size_t)r->nt + 1, sizeof(double));
    double *host = af__calloc((size_t)r->nt + 1, sizeof(double));
    double *war = af__calloc(r->n_slots + 1, sizeof(double));
    if (!cur || !host || !war) {
        af__free(cur), af__free(host), af__free(war);
        return AF_ENOMEM;
    }
    double st[2] = {0, 0};
    for (size_t i = 0; i < r->n_rec; i++) {
        const rec_t *e = &r->rec[i];
        int32_t x = e->step.id;
        if (e->step.kind == AF_STEP_RUN) {
            const af_node_info_t *nd = af_graph_node(r->g, x);
            double t0 = st[0] > war[e->slot] ? st[0] : war[e->slot];
            for (int32_t k = 0; k < nd->n_inputs; k++)
                t0 = cur[nd->inputs[k]] > t0 ? cur[nd->inputs[k]] : t0;
            st[0] = t0 + r->cost[x];
            for (int32_t k = 0; k < nd->n_outputs; k++)
                cur[nd->outputs[k]] = st[0];
            continue;
        }
        int is_out = e->step.kind == AF_STEP_SWAP_OUT;
        double ready = is_out ? cur[x] : host[x];
        double t0 = st[1] > ready ? st[1] : ready;
        st[1] = t0 + (double)r->size[x] * r->swap_unit;
        if (is_out) {
            host[x] = st[1];
            if (st[1] > war[e->aux])
                war[e->aux] = st[1];
        } else {
            cur[x] = st[1];
        }
    }
    *out = st[0] > st[1] ? st[0] : st[1];
    af__free(cur), af__free(host), af__free(war);
    return 0;
}

int af__remat_run(af__remat_t *r, const af__remat_cfg_t *cfg, af__remat_result_t *res)
{
    memset(res, 0, sizeof(*res));
    if (af__grow((void **)&r->at, &r->cap_at, 2, sizeof(double)))
        return AF_ENOMEM;
    reset(r, cfg);
    r->at[0] = 0;
    for (int32_t s = 0; s < r->nn; s++) {
        r->cur = s;
        r->sigma_done = 0;
        int rc = run_node(r, r->order[s]);
        if (rc)
            return rc;
    }
    int rc = bring_outputs_back(r);
    if (rc)
        return rc;
    qsort(r->rec, r->n_rec, sizeof(rec_t), cmp_rec);
    res->steps = af__malloc((r->n_rec + 1) * sizeof(af_step_t));
    res->evicted = af__malloc(((size_t)r->nt + 1) * sizeof(int32_t));
    if (!res->steps || !res->evicted || estimate(r, &res->est_time)) {
        af__remat_result_free(res);
        return AF_ENOMEM;
    }
    for (size_t i = 0; i < r->n_rec; i++)
        res->steps[i] = r->rec[i].step;
    res->n_steps = r->n_rec;
    for (size_t s = 0; s < r->n_slots; s++)
        res->peak = r->mem[s] > res->peak ? r->mem[s] : res->peak;
    for (int32_t t = 0; t < r->nt; t++)
        if (r->ever[t])
            res->evicted[res->n_evicted++] = t;
    res->extra_cost = r->extra;
    res->swapped = r->swapped;
    return 0;
}

void af__remat_result_free(af__remat_result_t *res)
{
    af__free(res->steps);
    af__free(res->evicted);
    memset(res, 0, sizeof(*res));
}
