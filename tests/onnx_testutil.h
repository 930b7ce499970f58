/*
 * Test helpers that write small ONNX models in memory: a minimal protobuf encoder (field numbers
 * from onnx.proto) and builders for the ONNX messages the importer tests need (value infos,
 * initializers, nodes with attributes, the model wrapper), plus loading and lookup helpers.
 * Shared by tests/test_onnx.c and tests/test_onnx_data.c. Every helper is static inline so a
 * test that does not use one does not warn.
 */
#ifndef ARENAFLOW_TESTS_ONNX_TESTUTIL_H
#define ARENAFLOW_TESTS_ONNX_TESTUTIL_H

#include "arenaflow/onnx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- a minimal protobuf writer ---------------------------------------------------------- */

typedef struct pb {
    uint8_t *b;
    size_t n, cap;
} pb_t;

static inline void pb_put(pb_t *p, const void *d, size_t n)
{
    if (n == 0)
        return; /* an empty sub-message has no buffer */
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2 + 64;
        p->b = realloc(p->b, p->cap);
        assert_non_null(p->b);
    }
    memcpy(p->b + p->n, d, n);
    p->n += n;
}

static inline void pb_varint(pb_t *p, uint64_t v)
{
    uint8_t c;
    while (v >= 0x80) {
        c = (uint8_t)(v | 0x80);
        pb_put(p, &c, 1);
        v >>= 7;
    }
    c = (uint8_t)v;
    pb_put(p, &c, 1);
}

static inline void pb_int(pb_t *p, int field, int64_t v)
{
    pb_varint(p, (uint64_t)field << 3);
    pb_varint(p, (uint64_t)v);
}

static inline void pb_bytes(pb_t *p, int field, const void *d, size_t n)
{
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, n);
    pb_put(p, d, n);
}

static inline void pb_str(pb_t *p, int field, const char *s)
{
    pb_bytes(p, field, s, strlen(s));
}

/* Appends sub as a nested message and frees it. */
static inline void pb_msg(pb_t *p, int field, pb_t *sub)
{
    pb_bytes(p, field, sub->b, sub->n);
    free(sub->b);
    *sub = (pb_t){0};
}

/* ---- ONNX message builders ---------------------------------------------------------------- */

enum { F32 = 1, I64 = 7, BOOL = 9 };

/* ValueInfoProto; dims < 0 become the symbolic dim `param`. */
static inline void add_value_info(pb_t *g, int field, const char *name, int elem, int rank,
                                  const int64_t *dims, const char *param)
{
    pb_t vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (int i = 0; i < rank; i++) {
        pb_t d = {0};
        if (dims[i] >= 0)
            pb_int(&d, 1, dims[i]);
        else
            pb_str(&d, 2, param ? param : "?");
        pb_msg(&sh, 1, &d);
    }
    pb_int(&tt, 1, elem);
    if (rank >= 0)
        pb_msg(&tt, 2, &sh);
    pb_msg(&tp, 1, &tt);
    pb_str(&vi, 1, name);
    pb_msg(&vi, 2, &tp);
    pb_msg(g, field, &vi);
}

static inline void add_input(pb_t *g, const char *name, int elem, int rank, const int64_t *dims,
                             const char *param)
{
    add_value_info(g, 11, name, elem, rank, dims, param);
}

static inline void add_output(pb_t *g, const char *name, int elem)
{
    add_value_info(g, 12, name, elem, -1, NULL, NULL);
}

/* TensorProto with int64 values (1-D, or a scalar when scalar != 0). */
static inline pb_t tensor_i64(const char *name, int n, const int64_t *v, int scalar)
{
    pb_t t = {0};
    if (!scalar)
        pb_int(&t, 1, n);
    pb_int(&t, 2, I64);
    for (int i = 0; i < n; i++)
        pb_int(&t, 7, v[i]);
    if (name)
        pb_str(&t, 8, name);
    return t;
}

/* f32 initializer of zeros. */
static inline void add_weight(pb_t *g, const char *name, int rank, const int64_t *dims)
{
    pb_t t = {0};
    size_t n = 1;
    for (int i = 0; i < rank; i++) {
        pb_int(&t, 1, dims[i]);
        n *= (size_t)dims[i];
    }
    pb_int(&t, 2, F32);
    pb_str(&t, 8, name);
    void *zeros = calloc(n, 4);
    pb_bytes(&t, 9, zeros, n * 4);
    free(zeros);
    pb_msg(g, 5, &t);
}

static inline void add_i64_init(pb_t *g, const char *name, int n, const int64_t *v)
{
    pb_t t = tensor_i64(name, n, v, 0);
    pb_msg(g, 5, &t);
}

/* Attributes for add_node: kinds 'i' (int), 'I' (ints), 's' (string), 't' (tensor), 'g'
 * (graph). */
typedef struct attr {
    char kind;
    const char *name;
    int64_t i;
    const int64_t *ints;
    int n;
    pb_t *sub;       /* tensor or graph message, consumed */
    const char *str; /* 's' */
} attr_t;

static inline void add_node(pb_t *g, const char *op, const char *name, const char *ins,
                            const char *outs, const attr_t *attrs, int n_attrs, const char *domain)
{
    pb_t nd = {0};
    char buf[256], *save, *tok;
    snprintf(buf, sizeof(buf), "%s", ins);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        pb_str(&nd, 1, strcmp(tok, "-") ? tok : "");
    snprintf(buf, sizeof(buf), "%s", outs);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        pb_str(&nd, 2, tok);
    pb_str(&nd, 3, name);
    pb_str(&nd, 4, op);
    for (int a = 0; a < n_attrs; a++) {
        pb_t at = {0};
        pb_str(&at, 1, attrs[a].name);
        switch (attrs[a].kind) {
        case 'i':
            pb_int(&at, 3, attrs[a].i);
            pb_int(&at, 20, 2);
            break;
        case 's':
            pb_str(&at, 4, attrs[a].str);
            pb_int(&at, 20, 3);
            break;
        case 'I':
            for (int k = 0; k < attrs[a].n; k++)
                pb_int(&at, 8, attrs[a].ints[k]);
            pb_int(&at, 20, 7);
            break;
        case 't':
            pb_msg(&at, 5, attrs[a].sub);
            pb_int(&at, 20, 4);
            break;
        case 'g':
            pb_msg(&at, 6, attrs[a].sub);
            pb_int(&at, 20, 5);
            break;
        }
        pb_msg(&nd, 5, &at);
    }
    if (domain)
        pb_str(&nd, 7, domain);
    pb_msg(g, 1, &nd);
}

/* Wraps a graph into a ModelProto (IR 8, default opset 13); consumes g. */
static inline pb_t make_model_opset(pb_t *g, int opset)
{
    pb_t m = {0}, op = {0};
    pb_int(&m, 1, 8);
    pb_str(&op, 1, "");
    pb_int(&op, 2, opset);
    pb_msg(&m, 8, &op);
    pb_msg(&m, 7, g);
    return m;
}

static inline pb_t make_model(pb_t *g)
{
    return make_model_opset(g, 13);
}

static inline int load(pb_t *m, const char *const *inputs, int n_inputs, af_graph_t **g,
                       af_error_t *err)
{
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.inputs = inputs;
    o.n_inputs = n_inputs;
    af_error_clear(err);
    *g = NULL;
    return af_onnx_load_mem(m->b, m->n, &o, g, err);
}

static inline const af_tensor_info_t *tensor(const af_graph_t *g, const char *name)
{
    int32_t id = af_graph_find_tensor(g, name);
    if (id < 0)
        print_error("tensor '%s' not in the graph\n", name);
    assert_true(id >= 0);
    return af_graph_tensor(g, id);
}

static inline void assert_shape(const af_tensor_info_t *t, int rank, ...)
{
    va_list ap;
    va_start(ap, rank);
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(t->shape[i], va_arg(ap, int64_t));
    va_end(ap);
}

/* Allocation hooks for OOM tests: allocation number fail_at fails; live_allocs counts leaks. */
static long fail_at = -1, n_allocs, live_allocs;

static inline void *oom_malloc(size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = malloc(n);
    live_allocs += p != NULL;
    return p;
}

static inline void *oom_calloc(size_t c, size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = calloc(c, n);
    live_allocs += p != NULL;
    return p;
}

static inline void *oom_realloc(void *old, size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = realloc(old, n);
    live_allocs += p && !old;
    return p;
}

static inline void oom_free(void *p)
{
    live_allocs -= p != NULL;
    free(p);
}

/*
 * Fails allocation n = 0, 1, ... of one import (of `path` when not NULL, else of the len bytes
 * at data): every failure is AF_ENOMEM, nothing leaks. Returns the number of failure points.
 */
static inline long oom_run(const char *label, const void *data, size_t len, const char *path,
                           const char *const *in, int n_in)
{
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.inputs = in;
    o.n_inputs = n_in;
    long n;
    for (n = 0; n < 200000; n++) {
        fail_at = n;
        n_allocs = live_allocs = 0;
        af_replace_allocator(oom_malloc, oom_realloc, oom_calloc, oom_free);
        af_graph_t *g = NULL;
        af_error_t err;
        af_error_clear(&err);
        int rc =
            path ? af_onnx_load(path, &o, &g, &err) : af_onnx_load_mem(data, len, &o, &g, &err);
        if (rc == 0)
            af_graph_destroy(g);
        af_reset_allocator();
        if (live_allocs)
            print_error("%s: allocation %ld failed: rc %s, %ld allocations leaked\n", label, n,
                        af_err_name(rc), live_allocs);
        assert_int_equal(live_allocs, 0);
        if (n_allocs <= n) {
            assert_int_equal(rc, 0);
            break;
        }
        if (rc != AF_ENOMEM)
            print_error("%s: allocation %ld failed: %s (%s)\n", label, n, af_err_name(rc), err.msg);
        assert_int_equal(rc, AF_ENOMEM);
    }
    print_message("oom %s: %ld failure points, all clean\n", label, n);
    return n;
}

#endif
