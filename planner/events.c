/*
 * The event table (seed 1 §4.1) as CSV: what the runtime does, step by step.
 *
 *   event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes
 *
 * Per step, in this order: FENCE rows (the reuse edges into this step's node: tensor_name is
 * the tensor about to be written, op_id the node that must have finished), ALLOC rows for the
 * blocks whose first step this is (op_id = the producer about to run), INPLACE rows (the output
 * takes over the block of an input dying here), the EXEC row (tensor_name = node name, op_id =
 * op type), then FREE rows for blocks whose last step this is (op_id = the last user). A block
 * is an in-place group: its ALLOC and its FREE both name the group's first tensor.
 * Dynamic tensors have offset "dyn"; buffer_index is the shared-object buffer or "-".
 */
#include "planner/planner_int.h"

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

/* Tensors by first step (ALLOC / INPLACE rows), blocks by last step (FREE rows) and reuse edges
 * by the step of the node they guard (FENCE rows): three counting sorts. */
typedef struct {
    int32_t *fo, *fb; /* tensors starting at step s: fb[fo[s] .. fo[s + 1]) */
    int32_t *lo, *lb; /* blocks freed after step s */
    int32_t *eo, *eb; /* reuse edges into the node at step s */
} buckets_t;

static void buckets_free(buckets_t *b)
{
    af__free(b->fo), af__free(b->lo), af__free(b->fb), af__free(b->lb), af__free(b->eo);
    af__free(b->eb);
}

/* A tensor that owns its bytes in the table (a group leader, or a dynamic non-view): it gets
 * ALLOC and FREE rows; other group members get an INPLACE row. */
static int is_block(const af_plan_t *p, int32_t t)
{
    return p->group[t] == t ||
           (p->tp[t].where == AF_WHERE_DYNAMIC && af_graph_tensor(p->g, t)->alias_of < 0);
}

static int32_t free_step(const af_plan_t *p, int32_t t)
{
    return p->group[t] == t ? p->glast[t] : p->tp[t].last;
}

static int buckets_build(const af_plan_t *p, buckets_t *b)
{
    int32_t nt = af_graph_tensor_count(p->g), nn = af_graph_node_count(p->g);
    b->fo = af__calloc((size_t)nn + 2, sizeof(int32_t));
    b->lo = af__calloc((size_t)nn + 2, sizeof(int32_t));
    b->eo = af__calloc((size_t)nn + 2, sizeof(int32_t));
    b->fb = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    b->lb = af__malloc((size_t)(nt + 1) * sizeof(int32_t));
    b->eb = af__malloc((size_t)(p->n_edges + 1) * sizeof(int32_t));
    int32_t *cf = af__malloc((size_t)(nn + 1) * 3 * sizeof(int32_t));
    if (!b->fo || !b->lo || !b->fb || !b->lb || !b->eo || !b->eb || !cf) {
        af__free(cf);
        return AF_ENOMEM;
    }
    for (int32_t t = 0; t < nt; t++) {
        if (p->tp[t].first < 0)
            continue;
        if (is_block(p, t) || p->group[t] >= 0)
            b->fo[p->tp[t].first + 1]++;
        if (is_block(p, t))
            b->lo[free_step(p, t) + 1]++;
    }
    for (int32_t e = 0; e < p->n_edges; e++)
        b->eo[p->step[p->edges[e].to] + 1]++;
    for (int32_t s = 0; s < nn; s++) {
        b->fo[s + 1] += b->fo[s];
        b->lo[s + 1] += b->lo[s];
        b->eo[s + 1] += b->eo[s];
    }
    int32_t *cl = cf + nn + 1, *ce = cl + nn + 1;
    for (int32_t s = 0; s <= nn; s++) {
        cf[s] = b->fo[s];
        cl[s] = b->lo[s];
        ce[s] = b->eo[s];
    }
    for (int32_t t = 0; t < nt; t++) {
        if (p->tp[t].first < 0)
            continue;
        if (is_block(p, t) || p->group[t] >= 0)
            b->fb[cf[p->tp[t].first]++] = t;
        if (is_block(p, t))
            b->lb[cl[free_step(p, t)]++] = t;
    }
    for (int32_t e = 0; e < p->n_edges; e++)
        b->eb[ce[p->step[p->edges[e].to]]++] = e;
    af__free(cf);
    return 0;
}

/* The rows of one step: FENCEs, ALLOCs, INPLACEs, the EXEC, FREEs. */
static void write_step(const af_plan_t *p, const buckets_t *b, int32_t s, long *id, FILE *f)
{
    const af_graph_t *g = p->g;
    const af_node_info_t *nd = af_graph_node(g, p->order[s]);
    char bf[24];
    for (int32_t k = b->eo[s]; k < b->eo[s + 1]; k++) {
        const af_reuse_edge_t *e = &p->edges[b->eb[k]];
        fprintf(f, "%ld,FENCE,", (*id)++);
        put_name(f, af_graph_tensor(g, e->tensor_new)->name);
        fputs(",-,", f);
        put_name(f, af_graph_node(g, e->from)->name);
        fputs(",-,-\n", f);
    }
    for (int pass = 0; pass < 2; pass++) /* ALLOC rows, then INPLACE rows */
        for (int32_t k = b->fo[s]; k < b->fo[s + 1]; k++) {
            int32_t t = b->fb[k];
            const af_tensor_plan_t *x = &p->tp[t];
            int inpl = !is_block(p, t);
            if (inpl != pass)
                continue;
            buf_field(bf, sizeof(bf), x->buffer);
            fprintf(f, "%ld,%s,", (*id)++, inpl ? "INPLACE" : "ALLOC");
            put_name(f, af_graph_tensor(g, t)->name);
            fprintf(f, ",%s,", bf);
            put_name(f, nd->name);
            if (x->where == AF_WHERE_DYNAMIC)
                fprintf(f, ",dyn,-\n");
            else
                fprintf(f, ",%" PRIu64 ",%" PRIu64 "\n", x->offset,
                        inpl ? (uint64_t)af_graph_tensor(g, t)->bytes : x->bytes);
        }
    fprintf(f, "%ld,EXEC,", (*id)++);
    put_name(f, nd->name);
    fputs(",-,", f);
    put_name(f, nd->op);
    fputs(",-,-\n", f);
    for (int32_t k = b->lo[s]; k < b->lo[s + 1]; k++) {
        const af_tensor_plan_t *x = &p->tp[b->lb[k]];
        buf_field(bf, sizeof(bf), x->buffer);
        fprintf(f, "%ld,FREE,", (*id)++);
        put_name(f, af_graph_tensor(g, b->lb[k])->name);
        fprintf(f, ",%s,", bf);
        put_name(f, nd->name);
        if (x->where == AF_WHERE_DYNAMIC)
            fprintf(f, ",dyn,-\n");
        else
            fprintf(f, ",%" PRIu64 ",%" PRIu64 "\n", x->offset, x->bytes);
    }
}

int af_plan_write_events_csv(const af_plan_t *p, FILE *f, af_error_t *err)
{
    buckets_t b = {0};
    if (buckets_build(p, &b)) {
        buckets_free(&b);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    long id = 1;
    fprintf(f, "event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes\n");
    for (int32_t s = 0; s < af_graph_node_count(p->g); s++)
        write_step(p, &b, s, &id, f);
    buckets_free(&b);
    if (ferror(f))
        return af__err(err, AF_EIO, "write error on the event table");
    return 0;
}
