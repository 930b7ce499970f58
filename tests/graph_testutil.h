/*
 * Helpers shared by the graph tests (tests/test_graph.c, tests/test_graph_json.c): locating
 * examples and fixtures (AF_SOURCE_DIR), parsing single-quoted JSON, asserting a rejection
 * (code + culprits in the message), and comparing two graphs field by field.
 */
#ifndef ARENAFLOW_TESTS_GRAPH_TESTUTIL_H
#define ARENAFLOW_TESTS_GRAPH_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/graph.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ---------------------------------------------------------------------------- */

static inline const char *source_dir(void)
{
    const char *s = getenv("AF_SOURCE_DIR");
    return s && s[0] ? s : ".";
}

static inline void src_path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", source_dir(), rel);
}

/*
 * Test graphs are written with single quotes for readability; this turns them into JSON.
 * GRAPH(t, n) wraps tensor and node lists in the top-level object.
 */
#define GRAPH(tensors, nodes)                                                                      \
    "{'format': 'arenaflow-graph', 'version': 1, 'tensors': [" tensors "], 'nodes': [" nodes "]}"

static inline char *dq(const char *s)
{
    char *d = strdup(s);
    assert_non_null(d);
    for (char *p = d; *p; p++)
        if (*p == '\'')
            *p = '"';
    return d;
}

static inline int parse_q(const char *quoted, af_graph_t **g, af_error_t *err)
{
    char *text = dq(quoted);
    af_error_clear(err);
    int rc = af_graph_parse_json(text, strlen(text), g, err);
    free(text);
    return rc;
}

/* Parses `quoted`; asserts failure with `code` and a message containing each culprit. */
static inline void expect_reject_v(const char *quoted, int code, va_list ap)
{
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = parse_q(quoted, &g, &err);
    if (rc != code)
        print_error("expected %s, got %s: %s\n", af_err_name(code), af_err_name(rc), err.msg);
    assert_int_equal(rc, code);
    assert_null(g);
    assert_int_equal(err.code, code);
    const char *c;
    while ((c = va_arg(ap, const char *))) {
        if (!strstr(err.msg, c))
            print_error("message \"%s\" does not name '%s'\n", err.msg, c);
        assert_non_null(strstr(err.msg, c));
    }
}

static inline void expect_reject(const char *quoted, int code, ...)
{
    va_list ap;
    va_start(ap, code);
    expect_reject_v(quoted, code, ap);
    va_end(ap);
}

static inline af_graph_t *load_example(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/examples/%s", source_dir(), name);
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    int rc = af_graph_load_json(path, &g, &err);
    if (rc)
        print_error("%s: %s\n", path, err.msg);
    assert_int_equal(rc, 0);
    assert_non_null(g);
    assert_true(af_graph_is_finalized(g));
    return g;
}

static inline int32_t tensor_id(const af_graph_t *g, const char *name)
{
    int32_t id = af_graph_find_tensor(g, name);
    if (id < 0)
        print_error("no tensor '%s'\n", name);
    assert_true(id >= 0);
    return id;
}

static inline int32_t node_id(const af_graph_t *g, const char *name)
{
    int32_t id = af_graph_find_node(g, name);
    if (id < 0)
        print_error("no node '%s'\n", name);
    assert_true(id >= 0);
    return id;
}

/* ---- deep comparison -------------------------------------------------------------------- */

static inline int attr_equal(const af_attr_t *a, const af_attr_t *b)
{
    if (strcmp(a->name, b->name) || a->type != b->type)
        return 0;
    switch (a->type) {
    case AF_ATTR_INT:
        return a->i == b->i;
    case AF_ATTR_FLOAT:
        return memcmp(&a->f, &b->f, sizeof(double)) == 0;
    case AF_ATTR_STRING:
        return strcmp(a->s, b->s) == 0;
    case AF_ATTR_INTS:
        return a->n == b->n && (a->n == 0 || !memcmp(a->ints, b->ints, (size_t)a->n * 8));
    case AF_ATTR_FLOATS:
        return a->n == b->n && (a->n == 0 || !memcmp(a->floats, b->floats, (size_t)a->n * 8));
    }
    return 0;
}

#define DIFF(...)                                                                                  \
    do {                                                                                           \
        print_error(__VA_ARGS__);                                                                  \
        return 0;                                                                                  \
    } while (0)

/* 1 when a and b describe the same graph (names, sizes, kinds, edges, attrs...); else prints. */
static inline int graph_equal(const af_graph_t *a, const af_graph_t *b)
{
    if (strcmp(af_graph_name(a), af_graph_name(b)))
        DIFF("graph name '%s' vs '%s'\n", af_graph_name(a), af_graph_name(b));
    if (af_graph_tensor_count(a) != af_graph_tensor_count(b) ||
        af_graph_node_count(a) != af_graph_node_count(b))
        DIFF("counts differ\n");
    for (int32_t i = 0; i < af_graph_tensor_count(a); i++) {
        const af_tensor_info_t *x = af_graph_tensor(a, i), *y = af_graph_tensor(b, i);
        if (strcmp(x->name, y->name) || x->bytes != y->bytes || x->dtype != y->dtype ||
            x->rank != y->rank || x->kind != y->kind || x->alias_of != y->alias_of ||
            x->alias_offset != y->alias_offset || x->producer != y->producer ||
            x->n_consumers != y->n_consumers)
            DIFF("tensor %d ('%s' vs '%s') differs\n", i, x->name, y->name);
        for (int32_t k = 0; k < x->rank; k++)
            if (x->shape[k] != y->shape[k])
                DIFF("tensor '%s' shape[%d] differs\n", x->name, k);
        if ((x->dynamic_reason == NULL) != (y->dynamic_reason == NULL) ||
            (x->dynamic_reason && strcmp(x->dynamic_reason, y->dynamic_reason)))
            DIFF("tensor '%s' dynamic reason differs\n", x->name);
        for (int32_t k = 0; k < x->n_consumers; k++)
            if (x->consumers[k] != y->consumers[k])
                DIFF("tensor '%s' consumers differ\n", x->name);
    }
    for (int32_t i = 0; i < af_graph_node_count(a); i++) {
        const af_node_info_t *x = af_graph_node(a, i), *y = af_graph_node(b, i);
        if (strcmp(x->name, y->name) || strcmp(x->op, y->op) || x->n_inputs != y->n_inputs ||
            x->n_outputs != y->n_outputs || memcmp(&x->cost, &y->cost, sizeof(double)) ||
            x->n_inplace != y->n_inplace || x->n_attrs != y->n_attrs)
            DIFF("node %d ('%s' vs '%s') differs\n", i, x->name, y->name);
        for (int32_t k = 0; k < x->n_inputs; k++)
            if (x->inputs[k] != y->inputs[k])
                DIFF("node '%s' input %d differs\n", x->name, k);
        for (int32_t k = 0; k < x->n_outputs; k++)
            if (x->outputs[k] != y->outputs[k])
                DIFF("node '%s' output %d differs\n", x->name, k);
        for (int32_t k = 0; k < x->n_inplace; k++)
            if (x->inplace[k].input != y->inplace[k].input ||
                x->inplace[k].output != y->inplace[k].output)
                DIFF("node '%s' in-place hint %d differs\n", x->name, k);
        for (int32_t k = 0; k < x->n_attrs; k++)
            if (!attr_equal(&x->attrs[k], &y->attrs[k]))
                DIFF("node '%s' attribute '%s' differs\n", x->name, x->attrs[k].name);
    }
    return 1;
}

/* Writes g, parses the text back, compares, writes again and compares the two texts. */
static inline void check_roundtrip(const af_graph_t *g, const char *label)
{
    af_error_t err;
    af_error_clear(&err);
    char *t1 = NULL, *t2 = NULL;
    int rc = af_graph_to_json(g, &t1, &err);
    if (rc)
        print_error("%s: write: %s\n", label, err.msg);
    assert_int_equal(rc, 0);
    af_graph_t *g2 = NULL;
    rc = af_graph_parse_json(t1, strlen(t1), &g2, &err);
    if (rc)
        print_error("%s: re-read: %s\n%s\n", label, err.msg, t1);
    assert_int_equal(rc, 0);
    int same = graph_equal(g, g2);
    if (!same)
        print_error("%s: graph changed in the round trip\n", label);
    assert_true(same);
    assert_int_equal(af_graph_to_json(g2, &t2, &err), 0);
    if (strcmp(t1, t2))
        print_error("%s: second write differs\n", label);
    assert_string_equal(t1, t2);
    af_free(t1);
    af_free(t2);
    af_graph_destroy(g2);
}

static const char *const examples[] = {"diamond.json", "seed2_hotel.json", "mlp.json",
                                       "default.json"};

#endif
