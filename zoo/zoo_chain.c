/*
 * Training chains for the checkpointing benchmarks and tests (arenaflow/zoo.h, af_zoo_chain_train):
 * the textbook case of recomputation, where the optimum is known from the chain dynamic programme.
 * Built straight on the graph API so the structure is exactly the documented one.
 */
#include "arenaflow/zoo.h"

#include <stdio.h>

static int tensor(af_graph_t *g, const char *name, int64_t elems, af_tensor_kind_t kind,
                  af_error_t *err)
{
    int64_t shape[1] = {elems};
    af_tensor_desc_t d = {.name = name,
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .dtype = AF_DTYPE_F32,
                          .rank = 1,
                          .shape = shape,
                          .kind = kind};
    return af_graph_add_tensor(g, &d, NULL, err);
}

static int node(af_graph_t *g, const char *name, const char *op, const char *a, const char *b,
                const char *out, af_error_t *err)
{
    const char *in[2] = {a, b};
    af_node_desc_t d = {.name = name,
                        .op = op,
                        .inputs = in,
                        .n_inputs = b ? 2 : 1,
                        .outputs = &out,
                        .n_outputs = 1,
                        .cost = 1};
    return af_graph_add_node(g, &d, NULL, err);
}

int af_zoo_chain_train(int32_t layers, int64_t elems, af_graph_t **out, af_error_t *err)
{
    if (layers < 1 || layers > 100000 || elems < 1 || !out) {
        if (err) {
            err->code = AF_EINVAL;
            snprintf(err->msg, sizeof err->msg, "chain: layers must be 1..100000, elems >= 1");
        }
        return AF_EINVAL;
    }
    af_graph_t *g;
    int rc = af_graph_create(&g);
    if (rc)
        return rc;
    char name[64], x[32], y[32], gi[32], go[32];
    snprintf(name, sizeof name, "chain%d-train", layers);
    rc = af_graph_set_name(g, name);
    for (int32_t i = 0; i <= layers && !rc; i++) {
        snprintf(x, sizeof x, "x%d", i);
        snprintf(gi, sizeof gi, "g%d", i);
        rc = tensor(g, x, elems, i ? AF_TENSOR_INTERMEDIATE : AF_TENSOR_INPUT, err);
        if (!rc)
            rc = tensor(g, gi, elems, i ? AF_TENSOR_INTERMEDIATE : AF_TENSOR_OUTPUT, err);
    }
    for (int32_t i = 1; i <= layers && !rc; i++) {
        snprintf(name, sizeof name, "f%d", i);
        snprintf(x, sizeof x, "x%d", i - 1);
        snprintf(y, sizeof y, "x%d", i);
        rc = node(g, name, "Tanh", x, NULL, y, err);
    }
    snprintf(x, sizeof x, "x%d", layers);
    snprintf(gi, sizeof gi, "g%d", layers);
    if (!rc)
        rc = node(g, "loss", "Sigmoid", x, NULL, gi, err);
    for (int32_t i = layers; i >= 1 && !rc; i--) {
        snprintf(name, sizeof name, "b%d", i);
        snprintf(gi, sizeof gi, "g%d", i);
        snprintf(go, sizeof go, "g%d", i - 1);
        snprintf(x, sizeof x, "x%d", i - 1);
        rc = node(g, name, "Mul", gi, x, go, err);
    }
    if (!rc)
        rc = af_graph_finalize(g, err);
    if (rc) {
        af_graph_destroy(g);
        return rc;
    }
    *out = g;
    return 0;
}
