/*
 * Synthetic graphs for property tests and benchmarks (include/arenaflow/zoo.h): random DAGs with
 * views, in-place hints, several consumers per tensor and long lifetimes; a residual chain of any
 * size; random topological orders. Everything is drawn from the seed with a xorshift PRNG, so a
 * seed names one graph on every machine (tests print the seed on failure).
 *
 * Errors while adding tensors and nodes are not checked one by one: the generator draws names
 * and sizes that the graph accepts, out of memory is remembered, and af_graph_finalize() judges
 * the result (a rejected graph is AF_EINVAL with its message).
 *
 * Lock rule: none; reentrant.
 */
#include "zoo/zoo_int.h"

#include <stdio.h>
#include <string.h>

/* Finalizes g into *out, or destroys it: AF_ENOMEM when an add ran out of memory. */
static int finish(af_graph_t *g, int oom, const char *what, af_graph_t **out, af_error_t *err)
{
    af_error_t e;
    af_error_clear(&e);
    int rc = oom ? AF_ENOMEM : af_graph_finalize(g, &e);
    if (rc) {
        af_graph_destroy(g);
        return af__err(err, rc, "%s: %s", what, oom ? "out of memory" : e.msg);
    }
    *out = g;
    return 0;
}

int af_zoo_random_dag(uint64_t seed, int32_t max_nodes, af_graph_t **out, af_error_t *err)
{
    if (max_nodes < 2)
        return af__err(err, AF_EINVAL, "random DAG: max_nodes %d < 2", max_nodes);
    af_zoo_rng_t r = {seed * 2654435761ull + 12345};
    af_graph_t *g;
    if (af_graph_create(&g))
        return af__err(err, AF_ENOMEM, "out of memory");
    int nn = 2 + (int)af_zoo_rng_below(&r, (uint64_t)(max_nodes - 1));
    int cap = 4 + 3 * nn;
    int64_t *sizes = af__calloc((size_t)cap, sizeof(int64_t));
    if (!sizes) {
        af_graph_destroy(g);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    int nt = 0, oom = 0, n_in = 1 + (int)af_zoo_rng_below(&r, 3);
    char name[32], name2[32];
    for (int i = 0; i < n_in; i++) {
        snprintf(name, sizeof name, "in%d", i);
        af_tensor_desc_t d = {0};
        d.name = name;
        d.bytes = af_zoo_rng_size(&r);
        d.rank = -1;
        d.kind = (i == 0 || af_zoo_rng_below(&r, 4)) ? AF_TENSOR_INPUT : AF_TENSOR_CONSTANT;
        oom |= af_graph_add_tensor(g, &d, NULL, NULL) == AF_ENOMEM;
        sizes[nt++] = d.bytes;
    }
    for (int v = 0; v < nn; v++) {
        const char *ins[4];
        char inbuf[4][32];
        int fan = 1 + (int)af_zoo_rng_below(&r, 4);
        /* prefer recent tensors so chains form, but reach back sometimes (long lifetimes) */
        for (int k = 0; k < fan; k++) {
            int t = af_zoo_rng_below(&r, 3)
                        ? nt - 1 - (int)af_zoo_rng_below(&r, (uint64_t)(nt < 6 ? nt : 6))
                        : (int)af_zoo_rng_below(&r, (uint64_t)nt);
            snprintf(inbuf[k], sizeof inbuf[k], "t%d", t);
            if (t < n_in)
                snprintf(inbuf[k], sizeof inbuf[k], "in%d", t);
            ins[k] = inbuf[k];
        }
        int kind = (int)af_zoo_rng_below(&r, 10); /* 0: view, 1-2: in-place unary, else plain */
        int nout = kind >= 3 && af_zoo_rng_below(&r, 4) == 0 ? 2 : 1;
        const char *outs[2];
        char outbuf[2][32];
        af_inplace_t hint = {0, 0};
        for (int o = 0; o < nout; o++) {
            snprintf(outbuf[o], sizeof outbuf[o], "t%d", nt);
            af_tensor_desc_t d = {0};
            d.name = outbuf[o];
            d.rank = -1;
            d.bytes = af_zoo_rng_size(&r);
            d.kind = af_zoo_rng_below(&r, 12) == 0 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE;
            if (kind == 0) {
                /* a view of the first input at offset 0, no larger than it */
                d.alias_of = ins[0];
                int base = -1;
                if (sscanf(ins[0], "t%d", &base) != 1) {
                    sscanf(ins[0], "in%d", &base);
                }
                d.bytes = 1 + (int64_t)af_zoo_rng_below(&r, (uint64_t)sizes[base]);
                d.alias_offset =
                    (int64_t)af_zoo_rng_below(&r, (uint64_t)(sizes[base] - d.bytes + 1));
                d.kind = AF_TENSOR_INTERMEDIATE;
            } else if (kind <= 2) {
                int base = -1;
                if (sscanf(ins[0], "t%d", &base) != 1)
                    sscanf(ins[0], "in%d", &base);
                d.bytes = 1 + (int64_t)af_zoo_rng_below(&r, (uint64_t)sizes[base]);
            }
            oom |= af_graph_add_tensor(g, &d, NULL, NULL) == AF_ENOMEM;
            sizes[nt++] = d.bytes;
            outs[o] = outbuf[o];
        }
        snprintf(name2, sizeof name2, "n%d", v);
        af_node_desc_t nd = {0};
        nd.name = name2;
        nd.op = kind == 0 ? "Reshape" : (kind <= 2 ? "Relu" : "Op");
        nd.inputs = ins;
        nd.n_inputs = fan;
        nd.outputs = outs;
        nd.n_outputs = nout;
        nd.cost = (double)(1 + af_zoo_rng_below(&r, 1000));
        if (kind >= 1 && kind <= 2) {
            nd.inplace = &hint;
            nd.n_inplace = 1;
        }
        oom |= af_graph_add_node(g, &nd, NULL, NULL) == AF_ENOMEM;
    }
    af__free(sizes);
    return finish(g, oom, "random DAG", out, err);
}

/* k in decimal with its NUL into digits (12 bytes); the length without the NUL. */
static size_t put_digits(char *digits, int k)
{
    char rev[12];
    size_t n = 0, len = 0;
    do {
        rev[n++] = (char)('0' + k % 10);
        k /= 10;
    } while (k > 0);
    while (n > 0)
        digits[len++] = rev[--n];
    digits[len] = '\0';
    return len;
}

/* prefix (plen bytes) followed by digits (dlen bytes and a NUL) into buf (32 bytes): the
 * residual chain names 10^6 tensors, and snprintf would cost as much as adding them to the
 * graph; one block's ten names share its number, formatted once. */
static void put_name(char *buf, const char *prefix, size_t plen, const char *digits, size_t dlen)
{
    memcpy(buf, prefix, plen);
    memcpy(buf + plen, digits, dlen + 1);
}

int af_zoo_residual_chain(uint64_t seed, int32_t n_tensors, af_graph_t **out, af_error_t *err)
{
    af_zoo_rng_t r = {seed * 11400714819323198485ull + 7};
    af_graph_t *g;
    int oom = 0;
    if (af_graph_create(&g))
        return af__err(err, AF_ENOMEM, "out of memory");
    int blocks = n_tensors / 6 > 1 ? n_tensors / 6 : 1;
    oom |= af_graph_reserve(g, 1 + 6 * blocks, 4 * blocks) == AF_ENOMEM;
    char x[32], a[32], b[32], c[32], y[32], w1[32], w2[32], nm[32], skip[32];
    af_tensor_desc_t d = {0};
    d.rank = -1;
    d.name = "x0";
    d.bytes = 1 << 20;
    d.kind = AF_TENSOR_INPUT;
    oom |= af_graph_add_tensor(g, &d, NULL, NULL) == AF_ENOMEM;
    snprintf(x, sizeof x, "x0");
    skip[0] = '\0';
    for (int k = 0; k < blocks; k++) {
        int64_t sz = (int64_t)(4096 + af_zoo_rng_below(&r, 4u << 20));
        char dk[12], dk1[12];
        size_t lk = put_digits(dk, k), lk1 = put_digits(dk1, k + 1);
        put_name(a, "a", 1, dk, lk);
        put_name(b, "b", 1, dk, lk);
        put_name(c, "c", 1, dk, lk);
        put_name(y, "x", 1, dk1, lk1);
        put_name(w1, "w1_", 3, dk, lk);
        put_name(w2, "w2_", 3, dk, lk);
        const char *names[] = {a, b, c, y, w1, w2};
        for (int i = 0; i < 6; i++) {
            d.name = names[i];
            d.bytes = i >= 4 ? 4096 : sz;
            d.kind = i >= 4
                         ? AF_TENSOR_CONSTANT
                         : (k == blocks - 1 && i == 3 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE);
            oom |= af_graph_add_tensor(g, &d, NULL, NULL) == AF_ENOMEM;
        }
        af_inplace_t hint = {0, 0};
        const char *i1[] = {x, w1}, *o1[] = {a};
        const char *i2[] = {a}, *o2[] = {b};
        const char *i3[] = {b, w2}, *o3[] = {c};
        const char *i4[] = {c, x, skip}, *o4[] = {y};
        af_node_desc_t nd = {0};
        put_name(nm, "conv1_", 6, dk, lk);
        nd = (af_node_desc_t){nm, "Conv", i1, 2, o1, 1, 100.0, NULL, 0};
        oom |= af_graph_add_node(g, &nd, NULL, NULL) == AF_ENOMEM;
        put_name(nm, "relu_", 5, dk, lk);
        nd = (af_node_desc_t){nm, "Relu", i2, 1, o2, 1, 10.0, &hint, 1};
        oom |= af_graph_add_node(g, &nd, NULL, NULL) == AF_ENOMEM;
        put_name(nm, "conv2_", 6, dk, lk);
        nd = (af_node_desc_t){nm, "Conv", i3, 2, o3, 1, 100.0, NULL, 0};
        oom |= af_graph_add_node(g, &nd, NULL, NULL) == AF_ENOMEM;
        put_name(nm, "add_", 4, dk, lk);
        nd = (af_node_desc_t){nm, "Add", i4, skip[0] && k % 64 == 63 ? 3 : 2, o4, 1, 10.0, NULL, 0};
        oom |= af_graph_add_node(g, &nd, NULL, NULL) == AF_ENOMEM;
        if (k % 64 == 0)
            memcpy(skip, y, sizeof skip);
        memcpy(x, y, sizeof x);
    }
    return finish(g, oom, "residual chain", out, err);
}

int af_zoo_random_order(const af_graph_t *g, uint64_t seed, int32_t *order)
{
    af_zoo_rng_t r = {seed ^ 0x5555aaaa5555aaaaull};
    int32_t nn = af_graph_node_count(g);
    int32_t *indeg = af__calloc((size_t)nn + 1, sizeof(int32_t));
    int32_t *ready = af__calloc((size_t)nn + 1, sizeof(int32_t));
    int32_t nr = 0, out = 0;
    if (!indeg || !ready) {
        af__free(indeg);
        af__free(ready);
        return AF_ENOMEM;
    }
    for (int32_t v = 0; v < nn; v++) {
        indeg[v] = af_graph_node(g, v)->n_preds;
        if (!indeg[v])
            ready[nr++] = v;
    }
    while (nr) {
        int32_t k = (int32_t)af_zoo_rng_below(&r, (uint64_t)nr);
        int32_t v = ready[k];
        ready[k] = ready[--nr];
        order[out++] = v;
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t j = 0; j < nd->n_succs; j++)
            if (--indeg[nd->succs[j]] == 0)
                ready[nr++] = nd->succs[j];
    }
    af__free(indeg);
    af__free(ready);
    return 0;
}
