/*
 * Training graphs: the forward pass is built with op recording on, then zb_backward() appends
 * what reverse-mode autodiff (PyTorch autograd) would run, in autograd's order: recorded ops in
 * reverse, one "<Op>Grad" node per forward op reading the output gradients plus the tensors that
 * op saved for backward (the table below), producing the gradients of its float inputs.
 * Gradients of a tensor with several consumers are summed as they arrive (Add). Weight
 * gradients are graph outputs (what the optimizer step reads); saved activations therefore live
 * from their forward producer to their backward reader, which is what makes training peaks high.
 */
#include "zoo/zoo_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SAVE_IN = 1, SAVE_OUT = 2, PASS = 4, VIEW = 8, SPLIT = 16, JOIN = 32 };

static const struct {
    const char *op;
    int rule;
} save_table[] = {
    {"Conv", SAVE_IN},
    {"ConvTranspose", SAVE_IN},
    {"Gemm", SAVE_IN},
    {"MatMul", SAVE_IN},
    {"BatchNormalization", SAVE_IN},
    {"LayerNormalization", SAVE_IN},
    {"Gelu", SAVE_IN},
    {"Mul", SAVE_IN},
    {"Gather", SAVE_IN},
    {"SoftmaxCrossEntropyLoss", SAVE_IN},
    {"Relu", SAVE_OUT},
    {"Relu6", SAVE_OUT},
    {"Softmax", SAVE_OUT},
    {"Sigmoid", SAVE_OUT},
    {"Tanh", SAVE_OUT},
    {"MaxPool", SAVE_IN | SAVE_OUT},
    {"Add", PASS},
    {"Sum", PASS},
    {"Identity", PASS},
    {"Reshape", VIEW},
    {"Concat", SPLIT},
    {"Split", JOIN},
    {"AveragePool", 0},
    {"GlobalAveragePool", 0},
    {"Transpose", 0},
    {"Mean", 0},
};

static int rule_of(const char *op)
{
    for (size_t i = 0; i < sizeof(save_table) / sizeof(save_table[0]); i++)
        if (strcmp(save_table[i].op, op) == 0)
            return save_table[i].rule;
    return SAVE_IN;
}

typedef struct {
    zt *grad;     /* accumulated gradient per forward tensor, -1 = none yet */
    int32_t *cnt; /* contributions still to come */
    size_t n;
} bw_t;

static int wants_grad(const zb_t *z, zt t)
{
    return z->t[t].kind != AF_TENSOR_INPUT && z->t[t].dt == AF_DTYPE_F32;
}

/* Kind of the tensor that will carry t's gradient after the next contribution. */
static af_tensor_kind_t next_kind(const zb_t *z, const bw_t *b, zt t)
{
    return (z->t[t].kind == AF_TENSOR_CONSTANT && b->cnt[t] == 1) ? AF_TENSOR_OUTPUT
                                                                  : AF_TENSOR_INTERMEDIATE;
}

static void contribute(zb_t *z, bw_t *b, zt t, zt g)
{
    if (b->grad[t] < 0) {
        b->grad[t] = g;
    } else {
        z->out_kind[0] = next_kind(z, b, t);
        z->use_out_kind = 1;
        b->grad[t] = L_add(z, b->grad[t], g);
    }
    b->cnt[t]--;
}

static void backward_op(zb_t *z, bw_t *b, const zb_op_t *op)
{
    int rule = rule_of(op->op);
    zt in[2 * ZB_MAX_IO + 2];
    int n_in = 0;
    for (int i = 0; i < op->n_out; i++)
        if (b->grad[op->out[i]] >= 0)
            in[n_in++] = b->grad[op->out[i]];
    if (!n_in)
        return;
    if (rule & PASS) {
        for (int i = 0; i < op->n_in; i++)
            if (b->cnt[op->in[i]] > 0 && wants_grad(z, op->in[i]))
                contribute(z, b, op->in[i], in[0]);
        return;
    }
    if (rule & VIEW) {
        if (wants_grad(z, op->in[0]))
            contribute(z, b, op->in[0], L_reshape(z, in[0], *zb_shape(z, op->in[0])));
        return;
    }
    if (rule & SAVE_IN)
        for (int i = 0; i < op->n_in; i++)
            in[n_in++] = op->in[i];
    if (rule & SAVE_OUT)
        for (int i = 0; i < op->n_out; i++)
            in[n_in++] = op->out[i];
    zt gin[ZB_MAX_IO];
    zshape_t gs[ZB_MAX_IO];
    int n_g = 0;
    for (int i = 0; i < op->n_in; i++)
        if (wants_grad(z, op->in[i]) && b->cnt[op->in[i]] > 0) {
            z->out_kind[n_g] = next_kind(z, b, op->in[i]);
            gin[n_g] = op->in[i];
            gs[n_g++] = *zb_shape(z, op->in[i]);
        }
    if (!n_g)
        return;
    char name[64];
    snprintf(name, sizeof(name), "%sGrad", op->op);
    /* Op names must be static strings for the recorded list; the graph copies them anyway. */
    zt outs[ZB_MAX_IO];
    z->use_out_kind = 1;
    zb_op(z,
          (rule & SPLIT)  ? "Split"
          : (rule & JOIN) ? "Concat"
                          : name,
          in, n_in, gs, n_g, AF_DTYPE_F32, 2 * op->flops, -1, outs);
    if (z->rc)
        return;
    for (int i = 0; i < n_g; i++)
        contribute(z, b, gin[i], outs[i]);
}

void zb_backward(zb_t *z, zt loss)
{
    if (z->rc)
        return;
    z->record = 0;
    bw_t b = {.n = z->n_t};
    b.grad = af__malloc(b.n * sizeof(*b.grad));
    b.cnt = af__calloc(b.n, sizeof(*b.cnt));
    unsigned char *live = af__calloc(b.n, 1);
    unsigned char *op_live = af__calloc(z->n_ops ? z->n_ops : 1, 1);
    if (!b.grad || !b.cnt || !live || !op_live) {
        z->rc = AF_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < b.n; i++)
        b.grad[i] = -1;
    /* Ops on a path to the loss, and how many gradient contributions each tensor receives. */
    live[loss] = 1;
    for (size_t k = z->n_ops; k-- > 0;) {
        const zb_op_t *op = &z->ops[k];
        for (int i = 0; i < op->n_out; i++)
            op_live[k] |= live[op->out[i]];
        if (!op_live[k])
            continue;
        for (int i = 0; i < op->n_in; i++) {
            live[op->in[i]] = 1;
            if (wants_grad(z, op->in[i]))
                b.cnt[op->in[i]]++;
        }
    }
    zb_scope(z, "backward");
    b.grad[loss] = zb_input(z, "loss_grad", AF_DTYPE_F32, *zb_shape(z, loss));
    for (size_t k = z->n_ops; k-- > 0 && !z->rc;)
        if (op_live[k])
            backward_op(z, &b, &z->ops[k]);
out:
    af__free(b.grad);
    af__free(b.cnt);
    af__free(live);
    af__free(op_live);
}

zt zb_xent(zb_t *z, zt logits, zt labels)
{
    zt in[2] = {logits, labels};
    zshape_t s = zs1(1);
    return zb_op(z, "SoftmaxCrossEntropyLoss", in, 2, &s, 1, AF_DTYPE_F32,
                 4.0 * (double)zs_numel(zb_shape(z, logits)), -1, NULL);
}

int zoo_resnet50_train(zb_t *z, const af_zoo_opts_t *o)
{
    int64_t batch = o->batch > 0 ? o->batch : 8;
    z->record = 1;
    zt logits = zoo_resnet50_body(z, batch);
    zt labels = zb_input(z, "labels", AF_DTYPE_I64, zs1(batch));
    zt loss = zb_xent(z, logits, labels);
    zb_backward(z, loss);
    zb_output(z, loss, "loss");
    return z->rc;
}

int zoo_bert_train(zb_t *z, const af_zoo_opts_t *o)
{
    int64_t batch = o->batch > 0 ? o->batch : 8, seq = o->seq > 0 ? o->seq : 128;
    z->record = 1;
    zt h = zoo_bert_body(z, batch, seq, 12);
    zb_scope(z, "cls.predictions");
    h = L_layernorm(z, L_act(z, "Gelu", L_linear(z, h, 768, 1)));
    zt logits = L_linear(z, h, 30522, 1);
    zt labels = zb_input(z, "mlm_labels", AF_DTYPE_I64, zs2(batch, seq));
    zt loss = zb_xent(z, logits, labels);
    zb_backward(z, loss);
    zb_output(z, loss, "loss");
    return z->rc;
}
