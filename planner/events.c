/*
 * The event table (seed 1 §4.1) as CSV: what the runtime does, step by step.
 *
 *   event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes
 *
 * Per step, in this order: FENCE rows (the reuse edges into this step's node: tensor_name is
 * the tensor about to be written, op_id the node that must have finished), ALLOC rows for the
 * blocks whose first step this is (op_id = the producer about to run), INPLACE rows (the output
 * takes over the block of an input dying here), the EXEC row (tensor_name = node name, op_id =
 * op type; RECOMPUTE, SWAP_OUT or SWAP_IN instead for the nodes a budget rewrite added), then
 * FREE rows for blocks whose last step this is (op_id = the last user). A block
 * is an in-place group: its ALLOC and its FREE both name the group's first tensor.
 * Dynamic tensors have offset "dyn"; buffer_index is the shared-object buffer or "-".
 */
#include "planner/budget_int.h"
#include "planner/plan_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static void buf_field(char *out, size_t n, int32_t b)
{
    if (b >= 0)
        snprintf(out, n, "%d", b);
    else
        snprintf(out, n, "-");
}

/* Names may contain commas or quotes: quote them CSV-style when needed. */
static void put_name(FILE *f, const char *s)
{
    int q = 0;
    for (const char *c = s; *c; c++)
        q |= *c == ',' || *c == '"' || *c == '\n';
    if (!q) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *c = s; *c; c++) {
        if (*c == '"')
            fputc('"', f);
        fputc(*c, f);
    }
    fputc('"', f);
}

int af_plan_write_events_csv(const af_plan_t *p, FILE *f, af_error_t *err)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    /* bucket tensors by first and by last step (counting sort) */
    int32_t *fo = af__calloc((size_t)nn + 2, sizeof(int32_t));
    int32_t *lo = af__calloc((size_t)nn + 2, sizeof(int32_t));
    int32_t *fb = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int32_t *lb = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    int32_t *eo = af__calloc((size_t)nn + 2, sizeof(int32_t));
    int32_t *eb = af__malloc((size_t)(p->n_edges + 1) * sizeof(int32_t));
    if (!fo || !lo || !fb || !lb || !eo || !eb) {
        af__free(fo), af__free(lo), af__free(fb), af__free(lb), af__free(eo), af__free(eb);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
#define IS_BLOCK(t)                                                                                \
    (p->group[t] == (t) ||                                                                         \
     (p->tp[t].where == AF_WHERE_DYNAMIC && af_graph_tensor(g, t)->alias_of < 0))
    for (int32_t t = 0; t < nt; t++) {
        if (p->tp[t].first < 0)
            continue;
        if (IS_BLOCK(t) || p->group[t] >= 0)
            fo[p->tp[t].first + 1]++;
        if (IS_BLOCK(t))
            lo[(p->group[t] == t ? p->glast[t] : p->tp[t].last) + 1]++;
    }
    for (int32_t e = 0; e < p->n_edges; e++)
        eo[p->step[p->edges[e].to] + 1]++;
    for (int32_t s = 0; s < nn; s++) {
        fo[s + 1] += fo[s];
        lo[s + 1] += lo[s];
        eo[s + 1] += eo[s];
    }
    {
        int32_t *cf = af__malloc((size_t)(nn + 1) * 3 * sizeof(int32_t));
        if (!cf) {
            af__free(fo), af__free(lo), af__free(fb), af__free(lb), af__free(eo), af__free(eb);
            return af__err(err, AF_ENOMEM, "out of memory");
        }
        int32_t *cl = cf + nn + 1, *ce = cl + nn + 1;
        for (int32_t s = 0; s <= nn; s++) {
            cf[s] = fo[s];
            cl[s] = lo[s];
            ce[s] = eo[s];
        }
        for (int32_t t = 0; t < nt; t++) {
            if (p->tp[t].first < 0)
                continue;
            if (IS_BLOCK(t) || p->group[t] >= 0)
                fb[cf[p->tp[t].first]++] = t;
            if (IS_BLOCK(t))
                lb[cl[p->group[t] == t ? p->glast[t] : p->tp[t].last]++] = t;
        }
        for (int32_t e = 0; e < p->n_edges; e++)
            eb[ce[p->step[p->edges[e].to]]++] = e;
        af__free(cf);
    }
    long id = 1;
    char bf[24];
    fprintf(f, "event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes\n");
    for (int32_t s = 0; s < nn; s++) {
        const af_node_info_t *nd = af_graph_node(g, p->order[s]);
        for (int32_t k = eo[s]; k < eo[s + 1]; k++) {
            const af_reuse_edge_t *e = &p->edges[eb[k]];
            fprintf(f, "%ld,FENCE,", id++);
            put_name(f, af_graph_tensor(g, e->tensor_new)->name);
            fputs(",-,", f);
            put_name(f, af_graph_node(g, e->from)->name);
            fputs(",-,-\n", f);
        }
        for (int pass = 0; pass < 2; pass++) /* ALLOC rows, then INPLACE rows */
            for (int32_t k = fo[s]; k < fo[s + 1]; k++) {
                int32_t t = fb[k];
                const af_tensor_plan_t *x = &p->tp[t];
                int inpl = !IS_BLOCK(t);
                if (inpl != pass)
                    continue;
                buf_field(bf, sizeof(bf), x->buffer);
                fprintf(f, "%ld,%s,", id++, inpl ? "INPLACE" : "ALLOC");
                put_name(f, af_graph_tensor(g, t)->name);
                fprintf(f, ",%s,", bf);
                put_name(f, nd->name);
                if (x->where == AF_WHERE_DYNAMIC)
                    fprintf(f, ",dyn,-\n");
                else
                    fprintf(f, ",%" PRIu64 ",%" PRIu64 "\n", x->offset,
                            inpl ? (uint64_t)af_graph_tensor(g, t)->bytes : x->bytes);
            }
        /* EXEC, or RECOMPUTE / SWAP_OUT / SWAP_IN for the nodes a budget rewrite added */
        fprintf(f, "%ld,%s,", id++, af__budget_event_type(p, p->order[s]));
        put_name(f, nd->name);
        fputs(",-,", f);
        put_name(f, nd->op);
        fputs(",-,-\n", f);
        for (int32_t k = lo[s]; k < lo[s + 1]; k++) {
            int32_t t = lb[k];
            const af_tensor_plan_t *x = &p->tp[t];
            buf_field(bf, sizeof(bf), x->buffer);
            fprintf(f, "%ld,FREE,", id++);
            put_name(f, af_graph_tensor(g, t)->name);
            fprintf(f, ",%s,", bf);
            put_name(f, nd->name);
            if (x->where == AF_WHERE_DYNAMIC)
                fprintf(f, ",dyn,-\n");
            else
                fprintf(f, ",%" PRIu64 ",%" PRIu64 "\n", x->offset, x->bytes);
        }
    }
#undef IS_BLOCK
    af__free(fo), af__free(lo), af__free(fb), af__free(lb), af__free(eo), af__free(eb);
    if (ferror(f))
        return af__err(err, AF_EIO, "write error on the event table");
    return 0;
}
