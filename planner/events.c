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
 *
 * The rows are built once, as af_event_t records (af_plan_events gives the whole table to the
 * executor, tests and the daemon); the CSV writer formats the same records one step at a time,
 * so a large plan's table streams without being held whole.
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

/* The events of step s (FENCEs, ALLOCs, INPLACEs, the EXEC, FREEs) into ev; returns how many. */
static size_t step_events(const af_plan_t *p, const buckets_t *b, int32_t s, af_event_t *ev)
{
    size_t n = 0;
    int32_t node = p->order[s];
    for (int32_t k = b->eo[s]; k < b->eo[s + 1]; k++) {
        const af_reuse_edge_t *e = &p->edges[b->eb[k]];
        ev[n++] = (af_event_t){AF_EVENT_FENCE, s, e->from, e->tensor_new, -1, 0, 0, 0};
    }
    for (int pass = 0; pass < 2; pass++) /* ALLOC rows, then INPLACE rows */
        for (int32_t k = b->fo[s]; k < b->fo[s + 1]; k++) {
            int32_t t = b->fb[k];
            const af_tensor_plan_t *x = &p->tp[t];
            int inpl = !is_block(p, t);
            if (inpl != pass)
                continue;
            int dyn = x->where == AF_WHERE_DYNAMIC;
            uint64_t bytes = inpl ? (uint64_t)af_graph_tensor(p->g, t)->bytes : x->bytes;
            ev[n++] = (af_event_t){inpl ? AF_EVENT_INPLACE : AF_EVENT_ALLOC,
                                   s,
                                   node,
                                   t,
                                   x->buffer,
                                   dyn,
                                   dyn ? 0 : x->offset,
                                   dyn ? 0 : bytes};
        }
    /* EXEC, or RECOMPUTE / SWAP_OUT / SWAP_IN for the nodes a budget rewrite added */
    static const af_event_type_t by_role[] = {AF_EVENT_EXEC, AF_EVENT_RECOMPUTE, AF_EVENT_SWAP_OUT,
                                              AF_EVENT_SWAP_IN};
    af_node_role_t role = af_plan_node_role(p, node);
    ev[n++] =
        (af_event_t){(unsigned)role < 4 ? by_role[role] : AF_EVENT_EXEC, s, node, -1, -1, 0, 0, 0};
    for (int32_t k = b->lo[s]; k < b->lo[s + 1]; k++) {
        int32_t t = b->lb[k];
        const af_tensor_plan_t *x = &p->tp[t];
        int dyn = x->where == AF_WHERE_DYNAMIC;
        ev[n++] = (af_event_t){AF_EVENT_FREE,     s, node, t, x->buffer, dyn, dyn ? 0 : x->offset,
                               dyn ? 0 : x->bytes};
    }
    return n;
}

static size_t step_count(const buckets_t *b, int32_t s)
{
    return (size_t)(b->eo[s + 1] - b->eo[s]) + (size_t)(b->fo[s + 1] - b->fo[s]) + 1 +
           (size_t)(b->lo[s + 1] - b->lo[s]);
}

const char *af_event_type_name(af_event_type_t t)
{
    static const char *const names[] = {"ALLOC", "INPLACE",   "EXEC",     "FREE",
                                        "FENCE", "RECOMPUTE", "SWAP_OUT", "SWAP_IN"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

int af_plan_events(const af_plan_t *p, af_event_t **out, size_t *n, af_error_t *err)
{
    if (!p || !out || !n)
        return af__err(err, AF_EINVAL, "af_plan_events: NULL argument");
    *out = NULL;
    *n = 0;
    buckets_t b = {0};
    int32_t nn = af_graph_node_count(p->g);
    size_t total = 0;
    af_event_t *ev = NULL;
    if (buckets_build(p, &b) == 0) {
        for (int32_t s = 0; s < nn; s++)
            total += step_count(&b, s);
        ev = af__malloc((total ? total : 1) * sizeof(*ev));
    }
    if (!ev) {
        buckets_free(&b);
        return af__err(err, AF_ENOMEM, "out of memory building the event table");
    }
    size_t k = 0;
    for (int32_t s = 0; s < nn; s++)
        k += step_events(p, &b, s, ev + k);
    buckets_free(&b);
    *out = ev;
    *n = k;
    return 0;
}

void af_plan_events_free(af_event_t *ev)
{
    af__free(ev);
}

/* One row: tensor_name is the node's name on EXEC rows, op_id the op type there and the node's
 * name elsewhere (for FENCE, the node that must have finished). */
static void write_row(const af_plan_t *p, const af_event_t *e, long id, FILE *f)
{
    const af_graph_t *g = p->g;
    const af_node_info_t *nd = af_graph_node(g, e->node);
    int exec = e->type == AF_EVENT_EXEC || e->type >= AF_EVENT_RECOMPUTE,
        fence = e->type == AF_EVENT_FENCE;
    char bf[24];
    buf_field(bf, sizeof(bf), e->buffer);
    fprintf(f, "%ld,%s,", id, af_event_type_name(e->type));
    put_name(f, exec ? nd->name : af_graph_tensor(g, e->tensor)->name);
    fprintf(f, ",%s,", exec || fence ? "-" : bf);
    put_name(f, exec ? nd->op : nd->name);
    if (exec || fence)
        fputs(",-,-\n", f);
    else if (e->dynamic)
        fputs(",dyn,-\n", f);
    else
        fprintf(f, ",%" PRIu64 ",%" PRIu64 "\n", e->offset, e->bytes);
}

int af_plan_write_events_csv(const af_plan_t *p, FILE *f, af_error_t *err)
{
    buckets_t b = {0};
    int32_t nn = af_graph_node_count(p->g);
    size_t most = 1;
    af_event_t *ev = NULL;
    if (buckets_build(p, &b) == 0) {
        for (int32_t s = 0; s < nn; s++)
            if (step_count(&b, s) > most)
                most = step_count(&b, s);
        ev = af__malloc(most * sizeof(*ev)); /* one step at a time: the CSV streams */
    }
    if (!ev) {
        buckets_free(&b);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    long id = 1;
    fprintf(f, "event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes\n");
    for (int32_t s = 0; s < nn; s++) {
        size_t k = step_events(p, &b, s, ev);
        for (size_t i = 0; i < k; i++)
            write_row(p, &ev[i], id++, f);
    }
    af__free(ev);
    buckets_free(&b);
    if (ferror(f))
        return af__err(err, AF_EIO, "write error on the event table");
    return 0;
}
