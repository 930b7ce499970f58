/*
 * Binding kernels to the nodes of a program at session creation, with one error for all that
 * cannot run.
 *
 * For every node: the registered kernel of its op, else the built-in set's row (p->kent: the
 * set's own row, e.g. oneDNN's, where it has one, else the reference row); a built-in row's
 * check (dtype, attribute and shape combinations the kernel implements) runs too. A row that
 * prepares a state may still refuse its node at preparation (prepare.c), where the reference
 * row's check decides again. A model with
 * several missing ops, or several unsupported combinations, is refused once with all of them
 * listed — "no kernel for: Foo (3 nodes), Bar; not implemented: node 'c' (Conv): int8 input" —
 * so a user learns the whole gap from one run, not one op per attempt. The message is cut at
 * AF_ERROR_MSG_MAX with a count of what did not fit.
 *
 * Runs once per program (session creation, re-plan); allocates one scratch array.
 */
#include "executor/executor_int.h"

#include <stdio.h>
#include <string.h>

/* A node whose every output has no elements (a batch of 0) has nothing to compute: the real
 * kernel sets bind it to this row, which does nothing; no kernel sees pointers to no bytes. */
static int no_elements(const af_kernel_args_t *a)
{
    (void)a;
    return 0;
}

const af__kernel_entry_t af__kernel_no_elements = {.op = "(no elements)", .fn = no_elements};

static int outputs_empty(const af_graph_t *g, int32_t v)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    int32_t n = 0;
    for (int32_t k = 0; k < ni->n_outputs; k++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, ni->outputs[k]);
        if (ti->kind == AF_TENSOR_SCRATCH)
            continue;
        if (ti->bytes != 0)
            return 0;
        n++;
    }
    return n > 0;
}

typedef struct msg {
    char buf[AF_ERROR_MSG_MAX];
    size_t len;
    int32_t dropped; /* items that did not fit */
} msg_t;

/* Room left for the head ("kernel set 'x' cannot run N of M nodes: ") and the tail. */
#define MSG_BUDGET (AF_ERROR_MSG_MAX - 112)

static void msg_add(msg_t *m, const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c);
    if (m->len + n >= MSG_BUDGET) {
        m->dropped++;
        return;
    }
    m->len += (size_t)snprintf(m->buf + m->len, sizeof(m->buf) - m->len, "%s%s%s", a, b, c);
}

/* Appends "no kernel for 2 ops: A (n nodes), B" over the nodes whose miss[] is set. */
static void list_missing(msg_t *m, const af__prog_t *p, const uint8_t *miss, int32_t n_ops)
{
    const af_graph_t *g = p->g;
    char head[64];
    snprintf(head, sizeof(head), "no kernel for %d op%s:", (int)n_ops, n_ops > 1 ? "s" : "");
    msg_add(m, head, "", "");
    int first = 1;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        if (miss[v] != 1)
            continue;
        const char *op = af_graph_node(g, v)->op;
        int32_t count = 0;
        for (int32_t u = v; u < p->n_nodes; u++)
            if (miss[u] && !strcmp(af_graph_node(g, u)->op, op))
                count++;
        char cnt[32] = "";
        if (count > 1)
            snprintf(cnt, sizeof(cnt), " (%d nodes)", (int)count);
        msg_add(m, first ? " " : ", ", op, cnt);
        first = 0;
    }
}

/* The first string tensor node v reads or writes, or -1. */
static int32_t string_tensor(const af_graph_t *g, int32_t v)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    for (int32_t k = 0; k < ni->n_inputs + ni->n_outputs; k++) {
        int32_t t = k < ni->n_inputs ? ni->inputs[k] : ni->outputs[k - ni->n_inputs];
        if (t >= 0 && af_graph_tensor(g, t)->dtype == AF_DTYPE_STRING)
            return t;
    }
    return -1;
}

/* Strings on a built-in row: only the ops whose reference kernel moves elements as bytes take
 * them (their handles are copied unchanged; an op that would make new strings or read them as
 * numbers has no kernel for them). 0, or AF_ENOTSUP with the reason in ce. */
static int check_strings(const af__prog_t *p, int32_t v, af_error_t *ce)
{
    int32_t t = string_tensor(p->g, v);
    const af__kernel_entry_t *r = t < 0 ? NULL : af__kref_find(af_graph_node(p->g, v)->op);
    if (t < 0 || (r && r->strings))
        return 0;
    return af__err(ce, AF_ENOTSUP,
                   "tensor '%.60s' has dtype string, and no %.40s kernel takes strings (only "
                   "ops that move elements do: views, Transpose, Concat, Split, Slice, Gather*, "
                   "Expand, Tile, Where, If...; and Equal)",
                   af_graph_tensor(p->g, t)->name, af_graph_node(p->g, v)->op);
}

/* Runs the built-in checks of the bound nodes; appends each refusal to m. Returns the count. */
static int32_t run_checks(const af_executor_t *ex, const af__prog_t *p, const uint8_t *miss,
                          msg_t *m, int lead)
{
    int32_t n = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const af_node_info_t *ni = af_graph_node(p->g, v);
        const af__kernel_entry_t *e = miss[v] ? NULL : p->kent[v];
        af_error_t ce;
        af_error_clear(&ce);
        if (!e || (check_strings(p, v, &ce) == 0 && (!e->check || !e->check(p->g, v, &ce))))
            continue;
        char what[160];
        snprintf(what, sizeof(what), "%snode '%.60s' (%.40s): ",
                 n      ? "; "
                 : lead ? "; not implemented: "
                        : "not implemented: ",
                 ni->name, ni->op);
        msg_add(m, what, ce.msg[0] ? ce.msg : "not implemented", "");
        n++;
    }
    return n;
}

/* Fused unary post-ops (af_plan_fuse) run after every real kernel; the verify and empty
 * kernels stand for the whole fused node. Malformed attributes are refused here. */
static int bind_post(const af_executor_t *ex, af__prog_t *p, af_error_t *err)
{
    for (int32_t v = 0; v < p->n_nodes; v++) {
        af__post_t pp;
        int rc = af__post_parse(p->g, v, &pp, err);
        if (rc)
            return rc;
        p->post[v] = af__post_any(&pp) && !(ex->set->all && p->kfn[v] == ex->set->all) &&
                             p->kent[v] != &af__kernel_no_elements
                         ? AF__POST_LOOP
                         : AF__POST_NONE;
    }
    return 0;
}

int af__prog_bind_kernels(af_executor_t *ex, af__prog_t *p, af_error_t *err)
{
    const af_graph_t *g = p->g;
    /* miss[v]: 0 ok, 1 first node of a missing op, 2 another node of a missing op */
    uint8_t *miss = af__calloc((size_t)p->n_nodes + 1, 1);
    if (!miss)
        return af__err(err, AF_ENOMEM, "out of memory binding kernels");
    int32_t n_ops = 0, n_missing = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        if (af__exec_registered(ex, ni->op, &p->kfn[v], &p->kuser[v]) == 0)
            continue;
        if ((p->kfn[v] = af__kernel_swap(ni->op))) /* offload copies: memcpy in every set */
            continue;
        if (ex->set->all) {
            p->kfn[v] = ex->set->all;
            continue;
        }
        if (outputs_empty(g, v)) {
            p->kent[v] = &af__kernel_no_elements;
            p->kfn[v] = no_elements;
            continue;
        }
        if ((p->kent[v] = af__kernel_entry(ex->opts.kernels, ni->op))) {
            p->kfn[v] = p->kent[v]->fn;
            continue;
        }
        n_missing++;
        miss[v] = 2;
        int seen = 0;
        for (int32_t u = 0; u < v && !seen; u++)
            seen = miss[u] && !strcmp(af_graph_node(g, u)->op, ni->op);
        if (!seen) {
            miss[v] = 1;
            n_ops++;
        }
    }
    msg_t m = {.len = 0};
    if (n_missing)
        list_missing(&m, p, miss, n_ops);
    int32_t n_unsup = run_checks(ex, p, miss, &m, n_missing > 0);
    af__free(miss);
    if (!n_missing && !n_unsup)
        return bind_post(ex, p, err);
    char tail[96] = "";
    if (m.dropped)
        snprintf(tail, sizeof(tail), " (+%d more)", (int)m.dropped);
    else if (n_missing)
        snprintf(tail, sizeof(tail), "; register kernels with af_executor_register_kernel()");
    return af__err(err, AF_ENOTSUP, "kernel set '%.20s' cannot run %d of %d nodes: %s%s",
                   ex->opts.kernels, (int)(n_missing + n_unsup), (int)p->n_nodes, m.buf, tail);
}
