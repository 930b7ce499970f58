/*
 * Guarded nodes: the nodes of an If branch whose condition is known only at run time.
 *
 * The ONNX importer keeps both branches of such an If and marks each branch node with the
 * condition tensor and its branch (attributes arenaflow.if_cond, arenaflow.if_branch); the
 * outer values a branch reads pass through a gate node that also reads the condition
 * (graph/onnx_gate.c), so the branch's nodes depend on the condition by data edges. The plan
 * reserves memory for both branches; a round runs only the taken branch's nodes and the If node
 * copies that branch's outputs (session.c skips the others before their kernel is called).
 *
 * A guard is honoured only when reading the condition is safe and its value is final whenever
 * the node starts, in every order the workers may pick:
 *   - the condition is a static bool tensor (not dynamic, so it has a place every round);
 *   - the node comes after the condition's producer by a data path (a branch node that reads
 *     only constants does not: it always runs), or the condition has no producer (an input);
 *   - the node comes before a reader of the condition (the If node): the plan keeps the
 *     condition's bytes live until its last reader has run, so until after the node.
 * A dropped guard costs time, never correctness: the If node still selects the taken branch.
 * A guarded node no graph output depends on (a branch node whose result the If never reads;
 * converters leave such nodes) is always skipped: it may read outputs of skipped nodes, which
 * have no value (session.c passes NULL for them).
 */
#include "executor/executor_int.h"

#include <string.h>

/* The condition tensor of node v's guard and its branch (1 then, 0 else); -1 when none. */
static int32_t guard_of(const af__prog_t *p, int32_t v, uint8_t *branch)
{
    const af_attr_t *c = af_graph_node_attr(p->g, v, "arenaflow.if_cond");
    const af_attr_t *b = af_graph_node_attr(p->g, v, "arenaflow.if_branch");
    if (!c || c->type != AF_ATTR_STRING || !c->s || !b || b->type != AF_ATTR_INT)
        return -1;
    int32_t t = af_graph_find_tensor(p->g, c->s);
    if (t < 0)
        return -1;
    const af_tensor_info_t *ti = af_graph_tensor(p->g, t);
    if (ti->dtype != AF_DTYPE_BOOL || ti->bytes < 1 || p->loc[t] == AF__LOC_NONE ||
        p->loc[t] == AF__LOC_DYN || p->loc[t] == AF__LOC_ALIAS_DYN)
        return -1;
    *branch = b->i != 0;
    return t;
}

/*
 * For condition c: drops the guards the rules above refuse and marks the dead guarded nodes
 * (no graph output depends on them: always skipped). after/tocons are per node scratch:
 * after[v], v is the producer of c or runs after it (a data path from it); tocons[v], v runs
 * before some reader of c (any program path to it).
 */
static void settle_cond(af__prog_t *p, int32_t c, const uint8_t *live, uint8_t *after,
                        uint8_t *tocons)
{
    const af_tensor_info_t *ti = af_graph_tensor(p->g, c);
    const int32_t *order = af_plan_order(p->plan);
    int32_t prod = ti->producer, n = p->n_nodes;
    memset(tocons, 0, (size_t)n);
    for (int32_t j = 0; j < ti->n_consumers; j++)
        tocons[ti->consumers[j]] = 1;
    /* the plan order respects every program edge: one pass each way gives reachability */
    for (int32_t i = n - 1; i >= 0; i--)
        for (int32_t v = order[i], j = p->succ_off[v]; j < p->succ_off[v + 1]; j++)
            tocons[v] |= tocons[p->succ[j]];
    for (int32_t i = 0; i < n; i++) {
        int32_t v = order[i];
        const af_node_info_t *ni = af_graph_node(p->g, v);
        after[v] = prod < 0 || v == prod;
        for (int32_t j = 0; j < ni->n_preds && !after[v]; j++)
            after[v] = after[ni->preds[j]];
    }
    for (int32_t v = 0; v < n; v++) {
        if (p->guard_t[v] != c)
            continue;
        if (!live[v])
            p->guard_br[v] = AF__GUARD_DEAD;
        else if (!tocons[v] || !after[v] || v == prod)
            p->guard_t[v] = -1;
    }
}

/* live[v]: some graph output depends on node v (it produces one, or a data path leads to one). */
static void find_live(const af__prog_t *p, uint8_t *live)
{
    const int32_t *order = af_plan_order(p->plan);
    for (int32_t i = p->n_nodes - 1; i >= 0; i--) {
        int32_t v = order[i];
        const af_node_info_t *ni = af_graph_node(p->g, v);
        live[v] = 0;
        for (int32_t k = 0; k < ni->n_outputs && !live[v]; k++)
            live[v] = af_graph_tensor(p->g, ni->outputs[k])->kind == AF_TENSOR_OUTPUT;
        for (int32_t j = 0; j < ni->n_succs && !live[v]; j++)
            live[v] = live[ni->succs[j]];
    }
}

int af__prog_guards(af__prog_t *p, af_error_t *err)
{
    int32_t n = p->n_nodes, any = 0;
    p->guard_t = af__malloc(((size_t)n + 1) * sizeof(int32_t));
    p->guard_br = af__calloc((size_t)n + 1, 1);
    if (!p->guard_t || !p->guard_br)
        return af__err(err, AF_ENOMEM, "out of memory compiling the plan");
    for (int32_t v = 0; v < n; v++)
        any |= (p->guard_t[v] = guard_of(p, v, &p->guard_br[v])) >= 0;
    if (!any) {
        af__free(p->guard_t);
        af__free(p->guard_br);
        p->guard_t = NULL;
        p->guard_br = NULL;
        return 0;
    }
    uint8_t *after = af__malloc((size_t)n + 1), *tocons = af__malloc((size_t)n + 1);
    uint8_t *live = af__malloc((size_t)n + 1);
    uint8_t *done = af__calloc((size_t)p->n_tensors + 1, 1);
    int rc = after && tocons && live && done ? 0 : AF_ENOMEM;
    if (!rc)
        find_live(p, live);
    for (int32_t v = 0; !rc && v < n; v++) {
        int32_t c = p->guard_t[v];
        if (c >= 0 && !done[c]) {
            done[c] = 1;
            settle_cond(p, c, live, after, tocons);
        }
    }
    af__free(after);
    af__free(tocons);
    af__free(live);
    af__free(done);
    return rc ? af__err(err, rc, "out of memory compiling the plan") : 0;
}
