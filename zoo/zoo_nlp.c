/*
 * Transformer zoo models, as the HuggingFace modules run them: BERT-base (post-LN encoder,
 * additive attention mask input) and GPT-2 small (pre-LN decoder, fused c_attn split into
 * q/k/v, causal mask constant, untied LM head). Head reshapes are views (aliases); the head
 * transposes are real copies, as an eager framework makes them.
 */
#include "zoo/zoo_int.h"

static zshape_t shp(int rank, int64_t a, int64_t b, int64_t c, int64_t d)
{
    zshape_t s = zs4(a, b, c, d);
    s.rank = rank;
    return s;
}

/* [B,S,H*D] -> [B,H,S,D] (or [B,H,D,S] when kt) */
static zt heads(zb_t *z, zt x, int64_t b, int64_t s, int64_t h, int kt)
{
    static const int perm_q[4] = {0, 2, 1, 3}, perm_k[4] = {0, 2, 3, 1};
    int64_t d = zb_shape(z, x)->d[2] / h;
    zt r = L_reshape(z, x, shp(4, b, s, h, d));
    return L_transpose(z, r, kt ? perm_k : perm_q);
}

static zt attention(zb_t *z, zt q, zt k, zt v, zt mask, int64_t b, int64_t s, int64_t h)
{
    static const int perm_back[4] = {0, 2, 1, 3};
    zt qh = heads(z, q, b, s, h, 0), kh = heads(z, k, b, s, h, 1), vh = heads(z, v, b, s, h, 0);
    zt sc = L_scale(z, L_matmul(z, qh, kh));
    sc = L_add(z, sc, mask);
    zt p = L_softmax(z, sc);
    zt ctx = L_transpose(z, L_matmul(z, p, vh), perm_back);
    return L_reshape(z, ctx, shp(3, b, s, zb_shape(z, q)->d[2], 0));
}

zt zoo_bert_body(zb_t *z, int64_t b, int64_t s, int layers)
{
    const int64_t hid = 768, heads_n = 12, ffn = 3072;
    zt ids = zb_input(z, "input_ids", AF_DTYPE_I64, zs2(b, s));
    zt types = zb_input(z, "token_type_ids", AF_DTYPE_I64, zs2(b, s));
    zt pos = zb_input(z, "position_ids", AF_DTYPE_I64, zs2(b, s));
    zt mask = zb_input(z, "attention_mask", AF_DTYPE_F32, zs4(b, 1, 1, s));
    zb_scope(z, "embeddings");
    zt e = L_add(z, L_embedding(z, ids, 30522, hid), L_embedding(z, types, 2, hid));
    e = L_add(z, e, L_embedding(z, pos, 512, hid));
    zt h = L_layernorm(z, e);
    for (int l = 0; l < layers; l++) {
        zb_scope(z, "encoder.layer.%d.attention", l);
        zt q = L_linear(z, h, hid, 1), k = L_linear(z, h, hid, 1), v = L_linear(z, h, hid, 1);
        zt a = L_linear(z, attention(z, q, k, v, mask, b, s, heads_n), hid, 1);
        h = L_layernorm(z, L_add(z, a, h));
        zb_scope(z, "encoder.layer.%d.ffn", l);
        zt f = L_linear(z, L_act(z, "Gelu", L_linear(z, h, ffn, 1)), hid, 1);
        h = L_layernorm(z, L_add(z, f, h));
    }
    return h;
}

static int64_t batch_of(const af_zoo_opts_t *o, int64_t def)
{
    return o->batch > 0 ? o->batch : def;
}

int zoo_bert(zb_t *z, const af_zoo_opts_t *o)
{
    zt h = zoo_bert_body(z, batch_of(o, 1), o->seq > 0 ? o->seq : 128, 12);
    zb_output(z, h, "last_hidden_state");
    return z->rc;
}

int zoo_gpt2(zb_t *z, const af_zoo_opts_t *o)
{
    const int64_t b = batch_of(o, 1), s = o->seq > 0 ? o->seq : 1024;
    const int64_t hid = 768, nh = 12, vocab = 50257;
    zt ids = zb_input(z, "input_ids", AF_DTYPE_I64, zs2(b, s));
    zt pos = zb_input(z, "position_ids", AF_DTYPE_I64, zs2(b, s));
    zb_scope(z, "transformer");
    zt mask = zb_const(z, "causal_mask", AF_DTYPE_F32, zs4(1, 1, s, s));
    zt h = L_add(z, L_embedding(z, ids, vocab, hid), L_embedding(z, pos, 1024, hid));
    for (int l = 0; l < 12; l++) {
        zb_scope(z, "transformer.h.%d.attn", l);
        zt x = L_layernorm(z, h);
        zt qkv = L_linear(z, x, 3 * hid, 1), parts[3];
        zshape_t ps[3];
        for (int i = 0; i < 3; i++)
            ps[i] = zs3(b, s, hid);
        zb_op(z, "Split", &qkv, 1, ps, 3, AF_DTYPE_UNKNOWN, (double)zs_numel(&ps[0]) * 3, -1,
              parts);
        zt a = attention(z, parts[0], parts[1], parts[2], mask, b, s, nh);
        h = L_add(z, L_linear(z, a, hid, 1), h);
        zb_scope(z, "transformer.h.%d.mlp", l);
        zt f = L_linear(z, L_act(z, "Gelu", L_linear(z, L_layernorm(z, h), 4 * hid, 1)), hid, 1);
        h = L_add(z, f, h);
    }
    zb_scope(z, "lm_head");
    zt logits = L_linear(z, L_layernorm(z, h), vocab, 0);
    zb_output(z, logits, "logits");
    return z->rc;
}
