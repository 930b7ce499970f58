/*
 * Model-zoo internals: a small graph-building layer over af_graph_add_* that tracks shapes, names
 * tensors and nodes from a scope string, computes FLOP costs, and records the forward ops so the
 * training generator can append their backward pass. Builder calls never fail loudly: the first
 * error is kept in zb_t.rc and every later call becomes a no-op returning handle 0, so a model
 * generator reads as straight-line code and checks once at the end.
 */
#ifndef ARENAFLOW_ZOO_INT_H
#define ARENAFLOW_ZOO_INT_H

#include "arenaflow/zoo.h"
#include "common/common_int.h"

#include <stddef.h>
#include <stdint.h>

#define ZB_MAX_RANK 5
#define ZB_MAX_IO 16

typedef int32_t zt; /* tensor handle: index into zb_t.t */

typedef struct zshape {
    int rank;
    int64_t d[ZB_MAX_RANK];
} zshape_t;

typedef struct zb_rec {
    char *name;
    zshape_t s;
    af_dtype_t dt;
    af_tensor_kind_t kind;
} zb_rec_t;

typedef struct zb_op {
    const char *op; /* static string */
    int n_in, n_out;
    zt in[ZB_MAX_IO], out[ZB_MAX_IO];
    double flops;
} zb_op_t;

typedef struct zb {
    af_graph_t *g;
    af_error_t *err;
    int rc;
    zb_rec_t *t;
    size_t n_t, cap_t;
    zb_op_t *ops; /* forward ops, recorded when `record` is set */
    size_t n_ops, cap_ops;
    int record;
    int use_out_kind; /* when set, zb_op() gives output i the kind out_kind[i] (then clears it) */
    af_tensor_kind_t out_kind[ZB_MAX_IO];
    int32_t counter;
    char scope[96];
    uint64_t rng; /* splitmix64 state for the random networks */
} zb_t;

int zb_init(zb_t *z, af_error_t *err);
/* Finalizes and hands over the graph (or returns the first error and frees everything). */
int zb_finish(zb_t *z, af_graph_t **out);
void zb_scope(zb_t *z, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

zshape_t zs1(int64_t a);
zshape_t zs2(int64_t a, int64_t b);
zshape_t zs3(int64_t a, int64_t b, int64_t c);
zshape_t zs4(int64_t a, int64_t b, int64_t c, int64_t d);
int64_t zs_numel(const zshape_t *s);
const zshape_t *zb_shape(const zb_t *z, zt t);

zt zb_input(zb_t *z, const char *name, af_dtype_t dt, zshape_t s);
zt zb_const(zb_t *z, const char *suffix, af_dtype_t dt, zshape_t s);
/*
 * Generic op: n_out outputs with the given shapes (dtype of input 0 unless out_dt != UNKNOWN).
 * inplace_in >= 0 adds the hint "output 0 may overwrite input inplace_in". Returns output 0;
 * outs (may be NULL) gets all outputs.
 */
zt zb_op(zb_t *z, const char *op, const zt *in, int n_in, const zshape_t *out_s, int n_out,
         af_dtype_t out_dt, double flops, int inplace_in, zt *outs);
zt zb_output(zb_t *z, zt t, const char *name); /* identity "Output" node into a graph output */
uint64_t zb_rand(zb_t *z);

/* ---- layers (zoo_layers.c) ---- */
zt L_conv(zb_t *z, zt x, int64_t cout, int k, int stride, int pad, int dil, int groups, int bias);
zt L_conv2(zb_t *z, zt x, int64_t cout, int kh, int kw, int stride, int ph, int pw);
zt L_convT(zb_t *z, zt x, int64_t cout, int k, int stride);
zt L_bn(zb_t *z, zt x);
zt L_act(zb_t *z, const char *op, zt x); /* Relu, Relu6, Gelu, Sigmoid, Tanh: in place */
zt L_add(zb_t *z, zt a, zt b);
zt L_mul(zb_t *z, zt a, zt b);
zt L_maxpool(zb_t *z, zt x, int k, int stride, int pad);
zt L_avgpool(zb_t *z, zt x, int k, int stride, int pad);
zt L_gap(zb_t *z, zt x); /* global average pool -> [N,C,1,1] */
zt L_concat(zb_t *z, const zt *xs, int n, int axis);
zt L_reshape(zb_t *z, zt x, zshape_t s); /* alias view */
zt L_transpose(zb_t *z, zt x, const int *perm);
zt L_linear(zb_t *z, zt x, int64_t nout, int bias); /* x[..., K] @ W[K, nout] (+ b) */
zt L_matmul(zb_t *z, zt a, zt b);                   /* batched, last two dims */
zt L_softmax(zb_t *z, zt x);
zt L_layernorm(zb_t *z, zt x);
zt L_scale(zb_t *z, zt x); /* multiply by a scalar constant (attention 1/sqrt(d)) */
zt L_embedding(zb_t *z, zt ids, int64_t vocab, int64_t dim);
zt L_conv_bn_act(zb_t *z, zt x, int64_t cout, int k, int stride, int pad, const char *act);

/* ---- generators ---- */
int zoo_resnet50(zb_t *z, const af_zoo_opts_t *o);
int zoo_mobilenetv2(zb_t *z, const af_zoo_opts_t *o);
int zoo_inception3(zb_t *z, const af_zoo_opts_t *o);
int zoo_unet(zb_t *z, const af_zoo_opts_t *o);
int zoo_bert(zb_t *z, const af_zoo_opts_t *o);
int zoo_gpt2(zb_t *z, const af_zoo_opts_t *o);
int zoo_randwire(zb_t *z, const af_zoo_opts_t *o);
int zoo_darts(zb_t *z, const af_zoo_opts_t *o);
int zoo_resnet50_train(zb_t *z, const af_zoo_opts_t *o);
int zoo_bert_train(zb_t *z, const af_zoo_opts_t *o);
/* zoo_train2.c */
int zoo_vgg16_train(zb_t *z, const af_zoo_opts_t *o);
int zoo_vgg19_train(zb_t *z, const af_zoo_opts_t *o);
int zoo_mobilenetv2_train(zb_t *z, const af_zoo_opts_t *o);
int zoo_unet_train(zb_t *z, const af_zoo_opts_t *o);
int zoo_bert20_train(zb_t *z, const af_zoo_opts_t *o);
int zoo_resmlp_train(zb_t *z, const af_zoo_opts_t *o);
int zoo_convnet_train(zb_t *z, const af_zoo_opts_t *o);

/* Model bodies shared by inference and training generators: return the head tensor. */
zt zoo_resnet50_body(zb_t *z, int64_t batch);
zt zoo_bert_body(zb_t *z, int64_t batch, int64_t seq, int layers);
zt zoo_mobilenetv2_body(zb_t *z, int64_t batch);
zt zoo_unet_body(zb_t *z, int64_t batch);
/* SoftmaxCrossEntropyLoss of logits against integer labels: the scalar loss. */
zt zb_xent(zb_t *z, zt logits, zt labels);
/* Appends the backward pass of every recorded op, seeded with d(loss) = 1. */
void zb_backward(zb_t *z, zt loss);

#endif
