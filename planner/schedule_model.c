/*
 * The scheduler memory model (see planner_int.h) and its exact simulation.
 *
 * Construction is O(tensors + node inputs + node outputs): every node's inputs and outputs are
 * mapped to their alias roots and de-duplicated with a per-root stamp, giving the node -> roots
 * touch lists; the root -> nodes lists are the transpose. Simulation is O(touches).
 * No locks: a model is built and used by one scheduling call.
 */
#include "planner/planner_int.h"

#include <string.h>

void af__smodel_free(af__smodel_t *m)
{
    af__free(m->size);
    af__free(m->flags);
    af__free(m->touch_n);
    af__free(m->t_off);
    af__free(m->t_root);
    af__free(m->r_off);
    af__free(m->r_node);
    af__free(m->def);
    af__free(m->pos);
    memset(m, 0, sizeof(*m));
}

/* root id per tensor (-1 when the tensor's root is not an arena root); fills sizes and flags.
 * One pass over the tensor records for the roots, then one over the views (found from the alias
 * root table, far smaller than the records). */
static void map_roots(af__smodel_t *m, int32_t *rid, uint64_t alignment)
{
    const af_graph_t *g = m->g;
    int32_t nt = af_graph_tensor_count(g);
    m->nr = 0;
    int host = af__graph_has_host_tier(g);
    for (int32_t t = 0; t < nt; t++) {
        rid[t] = -1;
        if (!af__is_arena_root_in(g, t, host))
            continue;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        int32_t r = rid[t] = m->nr++;
        m->size[r] = af__align_up((uint64_t)ti->bytes, alignment);
        if (m->size[r] > m->max_size)
            m->max_size = m->size[r];
        if (ti->kind == AF_TENSOR_INPUT)
            m->flags[r] |= SM_INPUT;
        if (ti->kind == AF_TENSOR_OUTPUT)
            m->flags[r] |= SM_PINNED;
    }
    for (int32_t t = 0; t < nt; t++) {
        int32_t root = af_graph_alias_root(g, t);
        if (root == t || (rid[t] = rid[root]) < 0)
            continue;
        if (af_graph_tensor(g, t)->kind == AF_TENSOR_OUTPUT)
            m->flags[rid[t]] |= SM_PINNED;
    }
}

static int build_touches(af__smodel_t *m, const int32_t *rid, int32_t *stamp)
{
    const af_graph_t *g = m->g;
    size_t total = 0;
    for (int32_t v = 0; v < m->n; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        total += (size_t)nd->n_inputs + (size_t)nd->n_outputs;
    }
    m->t_root = af__malloc((total ? total : 1) * sizeof(int32_t));
    if (!m->t_root)
        return AF_ENOMEM;
    for (int32_t r = 0; r < m->nr; r++)
        stamp[r] = -1;
    size_t k = 0;
    for (int32_t v = 0; v < m->n; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        m->t_off[v] = (int32_t)k;
        for (int32_t j = 0; j < nd->n_inputs + nd->n_outputs; j++) {
            int32_t t = j < nd->n_inputs ? nd->inputs[j] : nd->outputs[j - nd->n_inputs];
            int32_t r = rid[t];
            if (r < 0 || stamp[r] == v)
                continue;
            stamp[r] = v;
            m->t_root[k++] = r;
            m->touch_n[r]++;
            if (j >= nd->n_inputs && af_graph_alias_root(g, t) == t) /* not a view */
                m->def[v] += m->size[r];
        }
    }
    m->t_off[m->n] = (int32_t)k;
    /* transpose */
    m->r_node = af__malloc((k ? k : 1) * sizeof(int32_t));
    if (!m->r_node)
        return AF_ENOMEM;
    m->r_off[0] = 0;
    for (int32_t r = 0; r < m->nr; r++)
        m->r_off[r + 1] = m->r_off[r] + m->touch_n[r];
    for (int32_t r = 0; r < m->nr; r++)
        stamp[r] = m->r_off[r];
    for (int32_t v = 0; v < m->n; v++)
        for (int32_t i = m->t_off[v]; i < m->t_off[v + 1]; i++)
            m->r_node[stamp[m->t_root[i]]++] = v;
    return 0;
}

int af__smodel_init(af__smodel_t *m, const af_graph_t *g, uint64_t alignment, af_error_t *err)
{
    memset(m, 0, sizeof(*m));
    m->g = g;
    m->n = af_graph_node_count(g);
    int32_t nt = af_graph_tensor_count(g);
    size_t n1 = (size_t)m->n + 1, t1 = (size_t)nt + 1;
    int32_t *rid = af__malloc(t1 * sizeof(int32_t));
    int32_t *stamp = af__malloc(t1 * sizeof(int32_t));
    m->size = af__calloc(t1, sizeof(uint64_t));
    m->flags = af__calloc(t1, 1);
    m->touch_n = af__calloc(t1, sizeof(int32_t));
    m->r_off = af__calloc(t1 + 1, sizeof(int32_t));
    m->t_off = af__calloc(n1, sizeof(int32_t));
    m->def = af__calloc(n1, sizeof(uint64_t));
    m->pos = af__calloc(n1, sizeof(int32_t));
    int rc = AF_ENOMEM;
    if (!rid || !stamp || !m->size || !m->flags || !m->touch_n || !m->r_off || !m->t_off ||
        !m->def || !m->pos)
        goto fail;
    map_roots(m, rid, alignment ? alignment : 1);
    if ((rc = build_touches(m, rid, stamp)))
        goto fail;
    const int32_t *io = af_graph_input_order(g);
    for (int32_t s = 0; s < m->n; s++)
        m->pos[io[s]] = s;
    for (int32_t r = 0; r < m->nr; r++) {
        if (!(m->flags[r] & SM_INPUT))
            continue;
        if (m->touch_n[r] > 0 || (m->flags[r] & SM_PINNED))
            m->base += m->size[r];
        else
            m->extra0 += m->size[r];
    }
    af__free(rid);
    af__free(stamp);
    return 0;
fail:
    af__free(rid);
    af__free(stamp);
    af__smodel_free(m);
    return af__err(err, rc, "out of memory building the scheduling model");
}

/* ---- incremental state ------------------------------------------------------------------- */

int af__sstate_init(af__sstate_t *s, const af__smodel_t *m)
{
    memset(s, 0, sizeof(*s));
    s->m = m;
    size_t r1 = (size_t)m->nr + 1;
    s->rem = af__malloc(r1 * sizeof(int32_t));
    s->alloc = af__malloc(r1);
    if (!s->rem || !s->alloc) {
        af__sstate_free(s);
        return AF_ENOMEM;
    }
    for (int32_t r = 0; r < m->nr; r++) {
        s->rem[r] = m->touch_n[r];
        s->alloc[r] = (m->flags[r] & SM_INPUT) != 0;
    }
    s->live = m->base;
    s->peak = m->base + m->extra0;
    return 0;
}

void af__sstate_free(af__sstate_t *s)
{
    af__free(s->rem);
    af__free(s->alloc);
    s->rem = NULL;
    s->alloc = NULL;
}

uint64_t af__sstate_alloc(const af__sstate_t *s, int32_t v)
{
    const af__smodel_t *m = s->m;
    uint64_t b = 0;
    for (int32_t i = m->t_off[v]; i < m->t_off[v + 1]; i++)
        if (!s->alloc[m->t_root[i]])
            b += m->size[m->t_root[i]];
    return b;
}

uint64_t af__sstate_freed(const af__sstate_t *s, int32_t v)
{
    const af__smodel_t *m = s->m;
    uint64_t b = 0;
    for (int32_t i = m->t_off[v]; i < m->t_off[v + 1]; i++) {
        int32_t r = m->t_root[i];
        if (s->rem[r] == 1 && !(m->flags[r] & SM_PINNED))
            b += m->size[r];
    }
    return b;
}

void af__sstate_run(af__sstate_t *s, int32_t v, void (*on_last)(void *ctx, int32_t r), void *ctx)
{
    const af__smodel_t *m = s->m;
    for (int32_t i = m->t_off[v]; i < m->t_off[v + 1]; i++) {
        int32_t r = m->t_root[i];
        if (!s->alloc[r]) {
            s->alloc[r] = 1;
            s->live += m->size[r];
        }
    }
    uint64_t during = s->live + (s->steps == 0 ? m->extra0 : 0);
    if (during > s->peak)
        s->peak = during;
    s->area += during;
    for (int32_t i = m->t_off[v]; i < m->t_off[v + 1]; i++) {
        int32_t r = m->t_root[i];
        if (--s->rem[r] == 0 && !(m->flags[r] & SM_PINNED))
            s->live -= m->size[r];
        else if (s->rem[r] == 1 && on_last)
            on_last(ctx, r);
    }
    s->steps++;
}

int32_t af__sstate_last_toucher(const af__sstate_t *s, int32_t r, const uint8_t *done)
{
    const af__smodel_t *m = s->m;
    for (int32_t i = m->r_off[r]; i < m->r_off[r + 1]; i++)
        if (!done[m->r_node[i]])
            return m->r_node[i];
    return -1;
}

/* ---- whole-order simulation -------------------------------------------------------------- */

int af__smodel_profile(const af__smodel_t *m, const int32_t *order, uint64_t *during,
                       uint64_t *live_after)
{
    af__sstate_t s;
    if (af__sstate_init(&s, m))
        return AF_ENOMEM;
    for (int32_t k = 0; k < m->n; k++) {
        int32_t v = order[k];
        uint64_t before = s.peak;
        s.peak = 0;
        af__sstate_run(&s, v, NULL, NULL);
        if (during)
            during[k] = s.peak;
        s.peak = before > s.peak ? before : s.peak;
        if (live_after)
            live_after[k] = s.live;
    }
    af__sstate_free(&s);
    return 0;
}

int af__smodel_peak(const af__smodel_t *m, const int32_t *order, uint64_t *peak, int32_t *step,
                    uint64_t *area)
{
    af__sstate_t s;
    if (af__sstate_init(&s, m))
        return AF_ENOMEM;
    uint64_t best = 0, sum = 0;
    int32_t best_s = 0;
    for (int32_t k = 0; k < m->n; k++) {
        s.peak = 0;
        af__sstate_run(&s, order[k], NULL, NULL);
        sum += s.peak;
        if (s.peak > best) {
            best = s.peak;
            best_s = k;
        }
    }
    af__sstate_free(&s);
    *peak = best;
    if (step)
        *step = best_s;
    if (area)
        *area = sum;
    return 0;
}
