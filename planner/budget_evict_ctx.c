/*
 * The evict-on-demand simulator's context for one graph and base order (budget_evict.c runs
 * it): per tensor its arena root, aligned size and flags (what may be recomputed, swapped, or
 * must stay), per root the base-order steps of its readers and its views, and the bound no
 * schedule beats.
 */
#include "planner/budget_evict.h"

#include <string.h>

void af__remat_destroy(af__remat_t *r)
{
    if (!r)
        return;
    void *bufs[] = {r->order,   r->step,     r->cost,  r->size,     r->root,    r->flag, r->use_off,
                    r->uses,    r->view_off, r->views, r->valid,    r->host,    r->ever, r->pin,
                    r->pinv,    r->last,     r->nu,    r->out_slot, r->res_pos, r->res,  r->memo,
                    r->memo_at, r->mem,      r->at,    r->rec,      r->stack};
    for (size_t i = 0; i < AF_ARRAY_SIZE(bufs); i++)
        af__free(bufs[i]);
    af__free(r);
}

/* Flags of every tensor: what may be dropped, what must stay. */
static void set_flags(af__remat_t *r, uint64_t alignment)
{
    const af_graph_t *g = r->g;
    for (int32_t t = 0; t < r->nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        r->root[t] = af_graph_alias_root(g, t);
        if (af__is_arena_root(g, t)) {
            r->size[t] = af__align_up((uint64_t)ti->bytes, alignment);
            r->flag[t] = F_ROOT;
        }
    }
    for (int32_t t = 0; t < r->nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->kind == AF_TENSOR_OUTPUT || ti->kind == AF_TENSOR_INPUT || ti->producer < 0)
            r->flag[r->root[t]] |= F_PINNED;
    }
    for (int32_t t = 0; t < r->nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if ((r->flag[t] & (F_ROOT | F_PINNED)) != F_ROOT || ti->kind != AF_TENSOR_INTERMEDIATE)
            continue;
        r->flag[t] |= F_SWAP;
        const af_node_info_t *nd = af_graph_node(g, ti->producer);
        int ok = strcmp(nd->op, AF_OP_SWAP_OUT) != 0;
        for (int32_t k = 0; k < nd->n_outputs && ok; k++)
            ok = !(r->flag[r->root[nd->outputs[k]]] & F_PINNED);
        if (ok)
            r->flag[t] |= F_DROP;
    }
    for (int32_t t = 0; t < r->nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if ((r->flag[t] & F_ROOT) && r->root[t] == t && ti->kind == AF_TENSOR_OUTPUT &&
            ti->producer >= 0 && strcmp(af_graph_node(g, ti->producer)->op, AF_OP_SWAP_IN) != 0)
            r->flag[t] |= F_OUTSW;
    }
    for (int32_t t = 0; t < r->nt; t++) /* an output with a view stays (its copy is the view's) */
        if (r->root[t] != t)
            r->flag[r->root[t]] &= (uint8_t)~F_OUTSW;
}

/* Per root: the base-order steps of its readers, and its views (both CSR). */
static int build_lists(af__remat_t *r)
{
    const af_graph_t *g = r->g;
    int32_t *seen = af__malloc(((size_t)r->nt + 1) * sizeof(int32_t));
    if (!seen)
        return AF_ENOMEM;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t t = 0; t < r->nt; t++)
            seen[t] = -1;
        for (int32_t s = 0; s < r->nn; s++) {
            const af_node_info_t *nd = af_graph_node(g, r->order[s]);
            for (int32_t k = 0; k < nd->n_inputs; k++) {
                int32_t x = r->root[nd->inputs[k]];
                if (!r->size[x] || seen[x] == s)
                    continue;
                seen[x] = s;
                if (pass)
                    r->uses[r->use_off[x]++] = s;
                else
                    r->use_off[x + 1]++;
            }
        }
        for (int32_t t = 0; t < r->nt; t++) {
            int32_t x = r->root[t];
            if (x == t)
                continue;
            if (pass)
                r->views[r->view_off[x]++] = t;
            else
                r->view_off[x + 1]++;
        }
        if (pass)
            break;
        for (int32_t t = 0; t < r->nt; t++) {
            r->use_off[t + 1] += r->use_off[t];
            r->view_off[t + 1] += r->view_off[t];
        }
        r->uses = af__malloc(((size_t)r->use_off[r->nt] + 1) * sizeof(int32_t));
        r->views = af__malloc(((size_t)r->view_off[r->nt] + 1) * sizeof(int32_t));
        if (!r->uses || !r->views) {
            af__free(seen);
            return AF_ENOMEM;
        }
    }
    for (int32_t t = r->nt; t > 0; t--) { /* the fill advanced each start to the next one's */
        r->use_off[t] = r->use_off[t - 1];
        r->view_off[t] = r->view_off[t - 1];
    }
    r->use_off[0] = r->view_off[0] = 0;
    af__free(seen);
    return 0;
}

/* A bound no schedule beats: the most bytes one node needs at once (the distinct roots it reads
 * and writes; with in-place hints honoured, an output that may take an input's bytes counts
 * only what it adds to them: a fused residual's output shares its addend's), and the graph
 * outputs, which are all live at the end. */
static uint64_t node_floor(const af__remat_t *r, int inplace)
{
    uint64_t best = 0, outs = 0;
    for (int32_t t = 0; t < r->nt; t++)
        if (r->size[t] && af_graph_tensor(r->g, t)->kind == AF_TENSOR_OUTPUT)
            outs += r->size[t];
    for (int32_t v = 0; v < r->nn; v++) {
        const af_node_info_t *nd = af_graph_node(r->g, v);
        uint64_t sum = 0;
        for (int32_t io = 0; io < nd->n_inputs + nd->n_outputs; io++) {
            int32_t x =
                r->root[io < nd->n_inputs ? nd->inputs[io] : nd->outputs[io - nd->n_inputs]];
            int dup = 0;
            for (int32_t j = 0; j < io && !dup; j++)
                dup =
                    r->root[j < nd->n_inputs ? nd->inputs[j] : nd->outputs[j - nd->n_inputs]] == x;
            sum += dup ? 0 : r->size[x];
        }
        for (int32_t k = 0; inplace && k < nd->n_outputs; k++) { /* one input per output */
            uint64_t shared = 0;
            for (int32_t h = 0; h < nd->n_inplace; h++) {
                int32_t o = r->root[nd->outputs[k]], i = r->root[nd->inputs[nd->inplace[h].input]];
                uint64_t m = r->size[o] < r->size[i] ? r->size[o] : r->size[i];
                shared = nd->inplace[h].output == k && o != i && m > shared ? m : shared;
            }
            sum -= shared <= sum ? shared : sum;
        }
        best = sum > best ? sum : best;
    }
    return best > outs ? best : outs;
}

int af__remat_create(const af_graph_t *g, const int32_t *order, const af_plan_opts_t *o,
                     af__remat_t **out)
{
    af__remat_t *r = af__calloc(1, sizeof(*r));
    if (!r)
        return AF_ENOMEM;
    r->g = g;
    r->nn = af_graph_node_count(g);
    r->nt = af_graph_tensor_count(g);
    size_t nt = (size_t)r->nt + 1, nn = (size_t)r->nn + 1;
    r->order = af__malloc(nn * sizeof(int32_t));
    r->step = af__malloc(nn * sizeof(int32_t));
    r->cost = af__malloc(nn * sizeof(double));
    r->size = af__calloc(nt, sizeof(uint64_t));
    r->root = af__malloc(nt * sizeof(int32_t));
    r->flag = af__calloc(nt, 1);
    r->use_off = af__calloc(nt + 1, sizeof(int32_t));
    r->view_off = af__calloc(nt + 1, sizeof(int32_t));
    r->valid = af__malloc(nt), r->host = af__malloc(nt), r->ever = af__malloc(nt);
    r->pin = af__malloc(nt * 4), r->pinv = af__malloc(nt * 4), r->last = af__malloc(nt * 4);
    r->nu = af__malloc(nt * 4), r->out_slot = af__malloc(nt * 4), r->res_pos = af__malloc(nt * 4);
    r->res = af__malloc(nt * 4), r->memo = af__malloc(nt * sizeof(double));
    r->memo_at = af__calloc(nt, 4);
    r->stack = af__malloc(nn * sizeof(frame_t));
    if (!r->order || !r->step || !r->cost || !r->size || !r->root || !r->flag || !r->use_off ||
        !r->view_off || !r->valid || !r->host || !r->ever || !r->pin || !r->pinv || !r->last ||
        !r->nu || !r->out_slot || !r->res_pos || !r->res || !r->memo || !r->memo_at || !r->stack)
        goto oom;
    memcpy(r->order, order, (size_t)r->nn * sizeof(int32_t));
    for (int32_t s = 0; s < r->nn; s++) {
        r->step[order[s]] = s;
        r->cost[order[s]] = af__node_cost(g, order[s]);
    }
    set_flags(r, o->alignment ? o->alignment : 1);
    if (build_lists(r))
        goto oom;
    r->recompute = o->recompute;
    r->offload = o->offload;
    double bw = o->bandwidth > 0 ? o->bandwidth : AF_PLAN_BANDWIDTH;
    r->swap_unit = (o->compute_rate > 0 ? o->compute_rate : AF_PLAN_COMPUTE_RATE) / bw;
    r->floor = node_floor(r, o->inplace);
    *out = r;
    return 0;
oom:
    af__remat_destroy(r);
    return AF_ENOMEM;
}

uint64_t af__remat_floor(const af__remat_t *r)
{
    return r->floor;
}
