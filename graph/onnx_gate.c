/*
 * ONNX importer — If: inlined when its condition is known at import, else both branches kept
 * (af__onnx_import_both, below) with gates in front of them.
 *
 * Both branches of such an If are kept and their nodes carry a guard: the
 * executor skips the nodes of the branch the condition does not take. It can only do so once the
 * condition is computed, so every branch node must come after the condition's producer. A branch
 * reads outer values (the model's inputs, tensors computed before the If); each outer value a
 * branch reads is passed through one gate node per branch, op "arenaflow.IfGate", inputs (value,
 * condition), output a view of the value (an alias at offset 0: no copy), and the branch nodes
 * read the view instead. Every branch node that reads anything computed then depends on the
 * condition through a data edge, so every schedule runs it after the condition is known; the
 * planner keeps the condition and the value alive as for any other reader.
 *
 * Constants are not gated (nothing is computed). The gate's output has the value's element type
 * and shape. Gate nodes and the names of their outputs are owned by the importer (im->synth).
 */
#ifdef AF_HAVE_ONNX
#include "graph/onnx_int.h"

#include <stdio.h>
#include <string.h>

typedef af__onnx_imp_t imp_t;

/* A gate for outer value v read by branch `branch` of an If: its output value id, or -1
 * (out of memory). */
static int32_t make_gate(af__onnx_imp_t *im, int32_t v, int32_t cond, int branch)
{
    const char *vn = im->vals[v].name, *cn = im->vals[cond].name;
    size_t len = strlen(vn) + 32;
    if (af__grow((void **)&im->synth, &im->cap_synth, im->n_synth + 1, sizeof(*im->synth)))
        return -1;
    Onnx__NodeProto *g = af__calloc(1, sizeof(*g) + 3 * sizeof(char *) + len);
    if (!g)
        return -1;
    im->synth[im->n_synth++] = g;
    onnx__node_proto__init(g);
    char **io = (char **)(g + 1), *name = (char *)(io + 3);
    snprintf(name, len, "%s/if_%s", vn, branch ? "then" : "else");
    for (int k = 2; af__onnx_val_find(im, name) >= 0 && k < 1000; k++) /* a model's own name */
        snprintf(name, len, "%s/if_%s#%d", vn, branch ? "then" : "else", k);
    io[0] = (char *)vn;
    io[1] = (char *)cn;
    io[2] = name;
    g->n_input = 2;
    g->n_output = 1;
    g->input = io;
    g->output = io + 2;
    g->op_type = "arenaflow.IfGate";
    g->name = name; /* the If keeps its own name */
    int32_t out = af__onnx_val_get(im, name);
    if (out < 0)
        return -1;
    af__onnx_val_t *o = &im->vals[out];
    const af__onnx_val_t *src = &im->vals[v];
    o->elem = src->elem;
    af__onnx_copy_shape(o, src);
    o->alias_of = v; /* a view: emitted as an alias, planned with its base */
    int32_t kio[3] = {v, cond, out};
    return af__onnx_keep_node(im, g, kio, 2, 1) ? -1 : out;
}

int af__onnx_gate_branch(af__onnx_imp_t *im, const Onnx__NodeProto *n, size_t first, size_t end,
                         int32_t cond, int branch)
{
    int32_t from[64], to[64];
    int ng = 0;
    for (size_t j = first; j < end; j++) {
        af__onnx_knode_t *k = &im->nodes[j];
        for (int i = 0; i < k->n_in; i++) {
            int32_t v = k->io[i];
            if (v < 0 || v == cond || (im->vals[v].is_const && im->vals[v].producer < 0) ||
                im->vals[v].producer >= (int)first)
                continue; /* absent, constant, or computed inside this branch */
            int g = 0;
            while (g < ng && from[g] != v)
                g++;
            if (g == ng) {
                if (ng == 64)
                    return af__err(im->err, AF_ENOTSUP,
                                   "op If, node '%s': a branch reads more than 64 outer values",
                                   n->name ? n->name : "");
                from[ng] = v;
                if ((to[ng++] = make_gate(im, v, cond, branch)) < 0)
                    return af__err(im->err, AF_ENOMEM, "out of memory");
                k = &im->nodes[j]; /* the node table may have moved */
            }
            k->io[i] = to[g];
        }
    }
    return 0;
}

/* A synthetic Identity connecting an inlined branch output to the If output. */
static int synth_identity(imp_t *im, const Onnx__NodeProto *parent, char *in, char *out,
                          const Onnx__NodeProto **made)
{
    if (af__grow((void **)&im->synth, &im->cap_synth, im->n_synth + 1, sizeof(*im->synth)))
        return AF_ENOMEM;
    Onnx__NodeProto *n = af__calloc(1, sizeof(*n) + 2 * sizeof(char *));
    if (!n)
        return AF_ENOMEM;
    onnx__node_proto__init(n);
    char **io = (char **)(n + 1);
    io[0] = in;
    io[1] = out;
    n->n_input = n->n_output = 1;
    n->input = io;
    n->output = io + 1;
    n->op_type = "Identity";
    n->name = parent->name;
    im->synth[im->n_synth++] = n;
    *made = n;
    return 0;
}

int af__onnx_inline_if(imp_t *im, const Onnx__NodeProto *n, const af__onnx_val_t *cond, int depth)
{
    int taken = cond->vals[0] != 0;
    const Onnx__AttributeProto *a = af__onnx_attr(n, taken ? "then_branch" : "else_branch");
    if (!a || !a->g)
        return af__err(im->err, AF_EPARSE, "op If, node '%s': no %s", af__onnx_node_label(n),
                       taken ? "then_branch" : "else_branch");
    const Onnx__GraphProto *b = a->g;
    if (b->n_output != n->n_output)
        return af__err(im->err, AF_EPARSE, "op If, node '%s': branch has %zu outputs, node %zu",
                       af__onnx_node_label(n), b->n_output, n->n_output);
    int rc = af__onnx_run_graph(im, b, depth + 1);
    for (size_t i = 0; !rc && i < b->n_output; i++) {
        const Onnx__NodeProto *id;
        if (!b->output[i]->name || !n->output[i][0])
            continue;
        if ((rc = synth_identity(im, n, b->output[i]->name, n->output[i], &id)))
            break;
        int32_t v = af__onnx_val_get(im, b->output[i]->name);
        if (v < 0)
            return AF_ENOMEM;
        im->vals[v].declared =
            im->vals[v].declared ? im->vals[v].declared : af__onnx_tensor_type(b->output[i]);
        rc = af__onnx_run_graph(
            im, &(Onnx__GraphProto){.n_node = 1, .node = (Onnx__NodeProto **)&id}, depth + 1);
    }
    return rc == AF_ENOMEM ? af__err(im->err, rc, "out of memory") : rc;
}

/* The branch of If node n found unable to run for the given shapes (1 then, 0 else), or -1. */
static int dead_branch(const imp_t *im, const Onnx__NodeProto *n)
{
    for (int i = 0; i < im->n_dead; i++)
        if (im->dead[i].node == n)
            return im->dead[i].branch;
    return -1;
}

/*
 * If with a condition not known at load time: both branches are imported, and the If node
 * reads the condition and both branches' outputs and produces its own. Planning then reserves
 * memory for both branches (a conservative superset: never less than either branch needs). Each
 * branch's nodes carry a guard (the condition and the branch): at run time the executor runs
 * only the taken branch's nodes, and the If node copies out that branch's outputs. An output
 * has a static shape when both branches agree on it; otherwise it is dynamic.
 *
 * A branch whose shape inference fails for the given input shapes (silero VAD v5 at 16 kHz:
 * its 8 kHz branch cannot take 512 samples) can never run with them: it is recorded as dead and
 * the import starts again (load_bytes), keeping only the other branch. The If node then reads
 * [cond, live outputs...] and carries arenaflow.if_live (the branch kept) and
 * arenaflow.if_dead (why the other cannot run); a round whose condition takes the dead branch
 * fails. When the kept branch fails too, its error is the import's.
 */
int af__onnx_import_both(imp_t *im, const Onnx__NodeProto *n, int32_t *io, int ni, int no,
                         int depth)
{
    const char *nname = af__onnx_node_label(n);
    const Onnx__AttributeProto *ta = af__onnx_attr(n, "then_branch");
    const Onnx__AttributeProto *ea = af__onnx_attr(n, "else_branch");
    if (!ta || !ta->g || !ea || !ea->g)
        return af__err(im->err, AF_EPARSE, "op If, node '%s': a branch is missing", nname);
    const Onnx__GraphProto *b[2] = {ta->g, ea->g};
    if (b[0]->n_output != (size_t)no || b[1]->n_output != (size_t)no)
        return af__err(im->err, AF_EPARSE,
                       "op If, node '%s': branches have %zu and %zu outputs, "
                       "the node %d",
                       nname, b[0]->n_output, b[1]->n_output, no);
    if (1 + 2 * no > 32)
        return af__err(im->err, AF_ENOTSUP, "op If, node '%s': more than 15 outputs", nname);
    int dead = dead_branch(im, n), nb = 0; /* nb: branches kept */
    int32_t kio[64];
    kio[0] = io[0];
    int rc;
    for (int k = 0; k < 2; k++) {
        int br = k == 0; /* 1 then, 0 else */
        if (br == dead)
            continue;
        size_t first = im->n_nodes, end;
        if ((rc = af__onnx_run_graph(im, b[k], depth + 1))) {
            if (rc == AF_ESHAPE && dead < 0 && !im->restart && im->n_dead < AF__ONNX_MAX_DEAD) {
                af__onnx_dead_t *d = &im->dead[im->n_dead++];
                d->node = n;
                d->branch = br;
                snprintf(d->why, sizeof(d->why), "%.159s", im->err ? im->err->msg : "");
                im->restart = 1;
            } else if (rc == AF_ESHAPE && dead >= 0 && im->err) {
                char now[AF_ERROR_MSG_MAX];
                snprintf(now, sizeof(now), "%s", im->err->msg);
                for (int i = 0; i < im->n_dead; i++)
                    if (im->dead[i].node == n)
                        af__err(im->err, rc,
                                "op If, node '%.60s': neither branch can run for these input "
                                "shapes: then: %.200s; else: %.200s",
                                nname, dead ? im->dead[i].why : now, dead ? now : im->dead[i].why);
            }
            return rc;
        }
        if ((rc = af__onnx_gate_branch(im, n, first, end = im->n_nodes, io[0], br)))
            return rc;
        /* nodes of a nested If keep their inner guard: when this branch is not taken they
         * may run on a stale inner condition, which is safe (the plan holds both branches) */
        for (size_t j = first; j < end; j++)
            if (im->nodes[j].guard < 0)
                im->nodes[j].guard = io[0], im->nodes[j].branch = br;
        for (int i = 0; i < no; i++) {
            const char *nm = b[k]->output[i]->name;
            if (!nm || !nm[0])
                return af__err(im->err, AF_EPARSE, "op If, node '%s': unnamed branch output",
                               nname);
            if ((kio[1 + nb * no + i] = af__onnx_val_get(im, nm)) < 0)
                return af__err(im->err, AF_ENOMEM, "out of memory");
        }
        nb++;
    }
    for (int i = 0; i < no; i++) {
        kio[1 + nb * no + i] = io[ni + i];
        if (io[ni + i] < 0)
            continue;
        const af__onnx_val_t *t = &im->vals[kio[1 + i]];
        const af__onnx_val_t *e = &im->vals[kio[1 + (nb - 1) * no + i]];
        af__onnx_val_t *o = &im->vals[io[ni + i]];
        o->elem = t->elem == e->elem ? t->elem : 0;
        if (t->rank >= 0 && t->rank == e->rank) {
            af__onnx_copy_shape(o, t);
            for (int d = 0; d < t->rank; d++)
                if (t->dims[d] != e->dims[d])
                    o->dims[d] = -1;
        }
        if (im->opts->use_declared && (rc = af__onnx_merge_declared(im, o, "")))
            return rc;
        if ((rc = af__onnx_note_why(
                 im, n, o,
                 "If with a condition known only at run time: its branches do not "
                 "give this output one known shape and type")))
            return rc;
    }
    if (af__onnx_keep_node(im, n, kio, 1 + nb * no, no))
        return af__err(im->err, AF_ENOMEM, "out of memory");
    if (dead >= 0)
        im->nodes[im->n_nodes - 1].live = !dead;
    return 0;
}
#endif
