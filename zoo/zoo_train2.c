/*
 * More training graphs for the budget benchmarks: VGG-16 and VGG-19 (torchvision layer lists,
 * 224x224, classifier without dropout), MobileNetV2 and UNet, each forward pass recorded and
 * followed by its backward pass (zb_backward, zoo_train.c) from a cross-entropy loss. Defaults:
 * batch 8, UNet batch 2 (its 256x256 activations at 64 channels are 16 MiB per image).
 */
#include "zoo/zoo_int.h"

/* 0 = pool, else conv width */
static const int vgg16_cfg[] = {64,  64,  0,   128, 128, 0,   256, 256, 256, 0,
                                512, 512, 512, 0,   512, 512, 512, 0,   -1};
static const int vgg19_cfg[] = {64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
                                512, 512, 512, 512, 0,   512, 512, 512, 512, 0,   -1};

static int64_t train_batch(const af_zoo_opts_t *o, int64_t def)
{
    return o->batch > 0 ? o->batch : def;
}

static zt vgg_body(zb_t *z, const int *cfg, int64_t batch)
{
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(batch, 3, 224, 224));
    for (int i = 0; cfg[i] >= 0; i++) {
        zb_scope(z, "features.%d", i);
        if (cfg[i] == 0) {
            x = L_maxpool(z, x, 2, 2, 0);
            continue;
        }
        x = L_act(z, "Relu", L_conv(z, x, cfg[i], 3, 1, 1, 1, 1, 1));
    }
    zb_scope(z, "classifier");
    const zshape_t *s = zb_shape(z, x);
    x = L_reshape(z, x, zs2(s->d[0], s->d[1] * s->d[2] * s->d[3]));
    x = L_act(z, "Relu", L_linear(z, x, 4096, 1));
    x = L_act(z, "Relu", L_linear(z, x, 4096, 1));
    return L_linear(z, x, 1000, 1);
}

/* logits [N, classes, ...] against labels [N, ...]: loss, backward, the loss as output. */
static int train(zb_t *z, zt logits)
{
    const zshape_t *s = zb_shape(z, logits);
    zshape_t ls = *s;
    ls.rank = s->rank - 1;
    for (int i = 1; i < ls.rank; i++)
        ls.d[i] = s->d[i + 1];
    zt labels = zb_input(z, "labels", AF_DTYPE_I64, ls);
    zt loss = zb_xent(z, logits, labels);
    zb_backward(z, loss);
    zb_output(z, loss, "loss");
    return z->rc;
}

int zoo_vgg16_train(zb_t *z, const af_zoo_opts_t *o)
{
    z->record = 1;
    return train(z, vgg_body(z, vgg16_cfg, train_batch(o, 8)));
}

int zoo_vgg19_train(zb_t *z, const af_zoo_opts_t *o)
{
    z->record = 1;
    return train(z, vgg_body(z, vgg19_cfg, train_batch(o, 8)));
}

int zoo_mobilenetv2_train(zb_t *z, const af_zoo_opts_t *o)
{
    z->record = 1;
    return train(z, zoo_mobilenetv2_body(z, train_batch(o, 8)));
}

int zoo_unet_train(zb_t *z, const af_zoo_opts_t *o)
{
    z->record = 1;
    return train(z, zoo_unet_body(z, train_batch(o, 2)));
}

/* BERT-base width with 20 layers: a training graph of about 1,000 nodes. */
int zoo_bert20_train(zb_t *z, const af_zoo_opts_t *o)
{
    int64_t batch = train_batch(o, 8), seq = o->seq > 0 ? o->seq : 128;
    z->record = 1;
    zt h = zoo_bert_body(z, batch, seq, 20);
    zb_scope(z, "cls.predictions");
    h = L_layernorm(z, L_act(z, "Gelu", L_linear(z, h, 768, 1)));
    zt logits = L_linear(z, h, 30522, 1);
    return train(z, logits);
}

/* A residual MLP, 3 blocks of Linear -> Gelu (+ the block input), hidden 256, batch 512 (saved
 * activations, not weights, dominate): a small training DAG (skip connections) that an exact
 * MILP can still solve. */
int zoo_resmlp_train(zb_t *z, const af_zoo_opts_t *o)
{
    z->record = 1;
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs2(train_batch(o, 512), 256));
    for (int i = 0; i < 3; i++) {
        zb_scope(z, "block%d", i);
        x = L_add(z, L_act(z, "Gelu", L_linear(z, x, 256, 1)), x);
    }
    zb_scope(z, "head");
    return train(z, L_linear(z, x, 10, 1));
}

/* A small CNN on 32x32 images: 3 stages of two Conv-BN-Relu and a max pool, then a linear
 * classifier; batch 32. */
int zoo_convnet_train(zb_t *z, const af_zoo_opts_t *o)
{
    z->record = 1;
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(train_batch(o, 32), 3, 32, 32));
    for (int st = 0; st < 3; st++) {
        zb_scope(z, "stage%d", st);
        x = L_conv_bn_act(z, x, 32LL << st, 3, 1, 1, "Relu");
        x = L_conv_bn_act(z, x, 32LL << st, 3, 1, 1, "Relu");
        x = L_maxpool(z, x, 2, 2, 0);
    }
    zb_scope(z, "head");
    const zshape_t *s = zb_shape(z, x);
    x = L_reshape(z, x, zs2(s->d[0], s->d[1] * s->d[2] * s->d[3]));
    return train(z, L_linear(z, x, 10, 1));
}
