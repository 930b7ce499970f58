/*
 * Convolutional zoo models, following the torchvision definitions layer by layer: ResNet-50
 * (v1.5: stride on the 3x3 conv), MobileNetV2 1.0, Inception-v3 (299x299) and the original UNet
 * (same-padding variant, 256x256). Conv, BatchNormalization and activations are separate nodes
 * as an unfused ONNX export has them. Node order = forward() order.
 */
#include "zoo/zoo_int.h"

static int64_t batch_of(const af_zoo_opts_t *o, int64_t def)
{
    return o->batch > 0 ? o->batch : def;
}

static zt classifier(zb_t *z, zt x, int64_t classes)
{
    zb_scope(z, "head");
    zt p = L_gap(z, x);
    const zshape_t *s = zb_shape(z, p);
    zt f = L_reshape(z, p, zs2(s->d[0], s->d[1]));
    return L_linear(z, f, classes, 1);
}

/* ---- ResNet-50 ---------------------------------------------------------------------------- */

static zt bottleneck(zb_t *z, zt x, int64_t width, int stride, int downsample)
{
    zt y = L_conv_bn_act(z, x, width, 1, 1, 0, "Relu");
    y = L_conv_bn_act(z, y, width, 3, stride, 1, "Relu");
    y = L_conv_bn_act(z, y, width * 4, 1, 1, 0, NULL);
    zt id = downsample ? L_conv_bn_act(z, x, width * 4, 1, stride, 0, NULL) : x;
    return L_act(z, "Relu", L_add(z, y, id));
}

zt zoo_resnet50_body(zb_t *z, int64_t batch)
{
    static const int blocks[4] = {3, 4, 6, 3};
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(batch, 3, 224, 224));
    zb_scope(z, "stem");
    x = L_conv_bn_act(z, x, 64, 7, 2, 3, "Relu");
    x = L_maxpool(z, x, 3, 2, 1);
    for (int st = 0; st < 4; st++) {
        int64_t width = 64LL << st;
        for (int b = 0; b < blocks[st]; b++) {
            zb_scope(z, "layer%d.%d", st + 1, b);
            x = bottleneck(z, x, width, (b == 0 && st > 0) ? 2 : 1, b == 0);
        }
    }
    return classifier(z, x, 1000);
}

int zoo_resnet50(zb_t *z, const af_zoo_opts_t *o)
{
    zt logits = zoo_resnet50_body(z, batch_of(o, 1));
    zb_output(z, logits, "logits");
    return z->rc;
}

/* ---- MobileNetV2 -------------------------------------------------------------------------- */

zt zoo_mobilenetv2_body(zb_t *z, int64_t batch)
{
    static const int cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(batch, 3, 224, 224));
    zb_scope(z, "features.0");
    x = L_conv_bn_act(z, x, 32, 3, 2, 1, "Relu6");
    int idx = 1;
    for (int i = 0; i < 7; i++) {
        for (int r = 0; r < cfg[i][2]; r++, idx++) {
            zb_scope(z, "features.%d", idx);
            int64_t cin = zb_shape(z, x)->d[1], hidden = cin * cfg[i][0], cout = cfg[i][1];
            int stride = r == 0 ? cfg[i][3] : 1;
            zt y = x;
            if (cfg[i][0] != 1)
                y = L_conv_bn_act(z, y, hidden, 1, 1, 0, "Relu6");
            y = L_act(z, "Relu6", L_bn(z, L_conv(z, y, hidden, 3, stride, 1, 1, (int)hidden, 0)));
            y = L_conv_bn_act(z, y, cout, 1, 1, 0, NULL);
            x = (stride == 1 && cin == cout) ? L_add(z, y, x) : y;
        }
    }
    zb_scope(z, "features.%d", idx);
    x = L_conv_bn_act(z, x, 1280, 1, 1, 0, "Relu6");
    return classifier(z, x, 1000);
}

int zoo_mobilenetv2(zb_t *z, const af_zoo_opts_t *o)
{
    zb_output(z, zoo_mobilenetv2_body(z, batch_of(o, 1)), "logits");
    return z->rc;
}

/* ---- Inception-v3 ------------------------------------------------------------------------- */

static zt bc(zb_t *z, zt x, int64_t cout, int k, int stride, int pad)
{
    return L_conv_bn_act(z, x, cout, k, stride, pad, "Relu");
}

static zt bc2(zb_t *z, zt x, int64_t cout, int kh, int kw)
{
    return L_act(z, "Relu", L_bn(z, L_conv2(z, x, cout, kh, kw, 1, kh / 2, kw / 2)));
}

static zt inc_a(zb_t *z, zt x, int64_t pool_features)
{
    zt b[4];
    b[0] = bc(z, x, 64, 1, 1, 0);
    b[1] = bc(z, bc(z, x, 48, 1, 1, 0), 64, 5, 1, 2);
    b[2] = bc(z, bc(z, bc(z, x, 64, 1, 1, 0), 96, 3, 1, 1), 96, 3, 1, 1);
    b[3] = bc(z, L_avgpool(z, x, 3, 1, 1), pool_features, 1, 1, 0);
    return L_concat(z, b, 4, 1);
}

static zt inc_b(zb_t *z, zt x)
{
    zt b[3];
    b[0] = bc(z, x, 384, 3, 2, 0);
    b[1] = bc(z, bc(z, bc(z, x, 64, 1, 1, 0), 96, 3, 1, 1), 96, 3, 2, 0);
    b[2] = L_maxpool(z, x, 3, 2, 0);
    return L_concat(z, b, 3, 1);
}

static zt inc_c(zb_t *z, zt x, int64_t c7)
{
    zt b[4];
    b[0] = bc(z, x, 192, 1, 1, 0);
    b[1] = bc2(z, bc2(z, bc(z, x, c7, 1, 1, 0), c7, 1, 7), 192, 7, 1);
    zt d = bc(z, x, c7, 1, 1, 0);
    d = bc2(z, bc2(z, bc2(z, bc2(z, d, c7, 7, 1), c7, 1, 7), c7, 7, 1), 192, 1, 7);
    b[2] = d;
    b[3] = bc(z, L_avgpool(z, x, 3, 1, 1), 192, 1, 1, 0);
    return L_concat(z, b, 4, 1);
}

static zt inc_d(zb_t *z, zt x)
{
    zt b[3];
    b[0] = bc(z, bc(z, x, 192, 1, 1, 0), 320, 3, 2, 0);
    zt d = bc2(z, bc2(z, bc(z, x, 192, 1, 1, 0), 192, 1, 7), 192, 7, 1);
    b[1] = bc(z, d, 192, 3, 2, 0);
    b[2] = L_maxpool(z, x, 3, 2, 0);
    return L_concat(z, b, 3, 1);
}

static zt inc_e(zb_t *z, zt x)
{
    zt b[4], p[2];
    b[0] = bc(z, x, 320, 1, 1, 0);
    zt t = bc(z, x, 384, 1, 1, 0);
    p[0] = bc2(z, t, 384, 1, 3);
    p[1] = bc2(z, t, 384, 3, 1);
    b[1] = L_concat(z, p, 2, 1);
    t = bc(z, bc(z, x, 448, 1, 1, 0), 384, 3, 1, 1);
    p[0] = bc2(z, t, 384, 1, 3);
    p[1] = bc2(z, t, 384, 3, 1);
    b[2] = L_concat(z, p, 2, 1);
    b[3] = bc(z, L_avgpool(z, x, 3, 1, 1), 192, 1, 1, 0);
    return L_concat(z, b, 4, 1);
}

int zoo_inception3(zb_t *z, const af_zoo_opts_t *o)
{
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(batch_of(o, 1), 3, 299, 299));
    zb_scope(z, "stem");
    x = bc(z, x, 32, 3, 2, 0);
    x = bc(z, x, 32, 3, 1, 0);
    x = bc(z, x, 64, 3, 1, 1);
    x = L_maxpool(z, x, 3, 2, 0);
    x = bc(z, x, 80, 1, 1, 0);
    x = bc(z, x, 192, 3, 1, 0);
    x = L_maxpool(z, x, 3, 2, 0);
    static const int64_t pf[3] = {32, 64, 64};
    for (int i = 0; i < 3; i++) {
        zb_scope(z, "Mixed_5%c", 'b' + i);
        x = inc_a(z, x, pf[i]);
    }
    zb_scope(z, "Mixed_6a");
    x = inc_b(z, x);
    static const int64_t c7[4] = {128, 160, 160, 192};
    for (int i = 0; i < 4; i++) {
        zb_scope(z, "Mixed_6%c", 'b' + i);
        x = inc_c(z, x, c7[i]);
    }
    zb_scope(z, "Mixed_7a");
    x = inc_d(z, x);
    for (int i = 0; i < 2; i++) {
        zb_scope(z, "Mixed_7%c", 'b' + i);
        x = inc_e(z, x);
    }
    zb_output(z, classifier(z, x, 1000), "logits");
    return z->rc;
}

/* ---- UNet --------------------------------------------------------------------------------- */

static zt double_conv(zb_t *z, zt x, int64_t c)
{
    return L_conv_bn_act(z, L_conv_bn_act(z, x, c, 3, 1, 1, "Relu"), c, 3, 1, 1, "Relu");
}

zt zoo_unet_body(zb_t *z, int64_t batch)
{
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(batch, 3, 256, 256));
    zt skip[4];
    for (int i = 0; i < 4; i++) {
        zb_scope(z, "down%d", i);
        skip[i] = double_conv(z, x, 64LL << i);
        x = L_maxpool(z, skip[i], 2, 2, 0);
    }
    zb_scope(z, "bottom");
    x = double_conv(z, x, 1024);
    for (int i = 3; i >= 0; i--) {
        zb_scope(z, "up%d", i);
        zt u[2] = {skip[i], L_convT(z, x, 64LL << i, 2, 2)};
        x = double_conv(z, L_concat(z, u, 2, 1), 64LL << i);
    }
    zb_scope(z, "outc");
    return L_conv(z, x, 2, 1, 1, 0, 1, 1, 1);
}

int zoo_unet(zb_t *z, const af_zoo_opts_t *o)
{
    zb_output(z, zoo_unet_body(z, batch_of(o, 1)), "mask");
    return z->rc;
}
