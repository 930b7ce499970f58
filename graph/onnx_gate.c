/*
 * ONNX importer — gates in front of the branches of an If known only at run time.
 *
 * Both branches of such an If are kept (onnx.c, import_both) and their nodes carry a guard: the
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
#endif
