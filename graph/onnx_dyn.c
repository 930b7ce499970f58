/*
 * ONNX importer — why a tensor stays dynamic.
 *
 * Nothing becomes dynamic silently: when a node's output still has an unknown size after its
 * shape rule and the declared shapes, the importer records a reason naming the op, the node and
 * the cause, most specific first: what the rule itself said (af__onnx_why: "the values of input
 * 'shape' are only known at run time", "the output size depends on the input's values"); an
 * input whose size is unknown (the cause is upstream, and that tensor has its own reason); a
 * string or unknown element type; an op without a shape rule (custom domains included). The
 * graph exposes the text through af_graph_dynamic_reason(). Reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <stdio.h>
#include <string.h>

void af__onnx_why(af__onnx_ctx_t *c, const char *fmt, ...)
{
    if (c->why[0])
        return; /* the first cause found is the one reported */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
}

static const char *label(const Onnx__NodeProto *n)
{
    if (n->name && n->name[0])
        return n->name;
    return n->n_output && n->output[0][0] ? n->output[0] : "(unnamed)";
}

int af__onnx_note_dynamic(af__onnx_ctx_t *c, af__onnx_val_t *v, int is_default)
{
    int64_t n = af__onnx_numel(v);
    if (v->why || (n >= 0 && af__onnx_elem_size(v->elem) > 0))
        return 0;
    char cause[200];
    const af__onnx_val_t *dyn_in = NULL;
    for (int i = 0; i < c->n_in && !dyn_in; i++)
        if (c->in[i] && (af__onnx_numel(c->in[i]) < 0 || !af__onnx_elem_size(c->in[i]->elem)))
            dyn_in = c->in[i];
    if (c->why[0])
        snprintf(cause, sizeof(cause), "%s", c->why);
    else if (!af__onnx_has_rule(c->node) && !is_default)
        snprintf(cause, sizeof(cause), "no shape rule for ops of domain '%s'", c->node->domain);
    else if (!af__onnx_has_rule(c->node))
        snprintf(cause, sizeof(cause), "no static shape rule for this op");
    else if (dyn_in)
        snprintf(cause, sizeof(cause), "its input '%s' has an unknown size", dyn_in->name);
    else if (n >= 0)
        snprintf(cause, sizeof(cause), "its element type is not known");
    else
        snprintf(cause, sizeof(cause), "the shape rule cannot tell the output's dims");
    size_t len = strlen(cause) + strlen(c->node->op_type) + strlen(label(c->node)) + 32;
    if (!(v->why = af__malloc(len)))
        return AF_ENOMEM;
    snprintf(v->why, len, "op %s, node '%s': %s", c->node->op_type, label(c->node), cause);
    return 0;
}

#endif /* AF_HAVE_ONNX */
