/*
 * Tests of the graph builder's large-graph paths (graph/names.c, graph/validate.c):
 *
 * - The derived tables (producer, consumers, preds, succs, input order) equal a brute-force
 *   reference computed from the nodes' input and output ids, whether the nodes come in
 *   data-flow order (finalize finds the preds in its first pass), in reverse (it needs a
 *   second pass), or before the tensors they name (late names): random DAGs with views.
 * - Big name maps (built in bulk at finalize or the first lookup): a duplicate of a name added
 *   long ago or just before is accepted by the add and refused by finalize, with the name and
 *   both ids in the message; lookups before finalize are right as the graph grows; every name
 *   is found after finalize; a graph whose finalize failed on a missing name finalizes once
 *   fixed, and one whose finalize failed late (it lends the maps' tags as scratch) rebuilds both
 *   tables right as it grows.
 * - Out of memory for the name table: finalize fails cleanly and works again, a lookup is still
 *   right.
 * - A node that reads its own output is reported after the name errors of later nodes.
 * - Constant data is refused on a view before finalize (views are kept in a sparse list).
 */
#include "tests/graph_testutil.h"

#include "arenaflow/zoo.h"

/* ---- brute-force reference of the derived tables ------------------------------------------ */

static int32_t ref_effective_producer(const af_graph_t *g, const int32_t *prod, int32_t t)
{
    while (prod[t] < 0 && af_graph_tensor(g, t)->alias_of >= 0)
        t = af_graph_tensor(g, t)->alias_of;
    return prod[t];
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0, n) and drops repeats; the new length. */
static int32_t sort_unique(int32_t *v, int32_t n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_i32);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

/* Asserts every derived table of g against the reference computed from inputs and outputs. */
static void check_tables(const af_graph_t *g)
{
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    int32_t *prod = malloc(((size_t)nt + 1) * sizeof(int32_t));
    int32_t *buf = malloc(((size_t)nn + 1) * sizeof(int32_t));
    int32_t *indeg = malloc(((size_t)nn + 1) * sizeof(int32_t));
    assert_non_null(prod);
    assert_non_null(buf);
    assert_non_null(indeg);
    for (int32_t t = 0; t < nt; t++)
        prod[t] = -1;
    for (int32_t v = 0; v < nn; v++)
        for (int32_t k = 0; k < af_graph_node(g, v)->n_outputs; k++)
            prod[af_graph_node(g, v)->outputs[k]] = v;
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        assert_int_equal(ti->producer, prod[t]);
        int32_t n = 0;
        for (int32_t v = 0; v < nn; v++)
            for (int32_t k = 0; k < af_graph_node(g, v)->n_inputs; k++)
                if (af_graph_node(g, v)->inputs[k] == t && (n == 0 || buf[n - 1] != v))
                    buf[n++] = v;
        assert_int_equal(ti->n_consumers, n);
        for (int32_t k = 0; k < n; k++)
            assert_int_equal(ti->consumers[k], buf[k]);
    }
    int sorted = 1;
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        int32_t n = 0;
        for (int32_t k = 0; k < nd->n_inputs; k++) {
            int32_t p = ref_effective_producer(g, prod, nd->inputs[k]);
            if (p >= 0)
                buf[n++] = p;
        }
        n = sort_unique(buf, n);
        assert_int_equal(nd->n_preds, n);
        for (int32_t k = 0; k < n; k++) {
            assert_int_equal(nd->preds[k], buf[k]);
            sorted &= buf[k] < v;
        }
        n = 0; /* succs: the nodes that list v among their preds, ascending */
        for (int32_t w = 0; w < nn; w++)
            for (int32_t k = 0; k < af_graph_node(g, w)->n_preds; k++)
                if (af_graph_node(g, w)->preds[k] == v)
                    buf[n++] = w;
        assert_int_equal(nd->n_succs, n);
        for (int32_t k = 0; k < n; k++)
            assert_int_equal(nd->succs[k], buf[k]);
        indeg[v] = nd->n_preds;
    }
    /* Input order: the ids when sorted, else Kahn's taking the lowest ready id (O(n^2) here). */
    const int32_t *order = af_graph_input_order(g);
    for (int32_t step = 0; step < nn; step++) {
        int32_t pick = -1;
        for (int32_t v = 0; v < nn && pick < 0; v++)
            if (indeg[v] == 0)
                pick = v;
        assert_true(pick >= 0);
        assert_int_equal(order[step], sorted ? step : pick);
        indeg[pick] = -1;
        for (int32_t k = 0; k < af_graph_node(g, pick)->n_succs; k++)
            indeg[af_graph_node(g, pick)->succs[k]]--;
    }
    free(prod);
    free(buf);
    free(indeg);
}

/* ---- rebuilding a graph in another order ---------------------------------------------------- */

enum { NODES_IN_ORDER, NODES_REVERSED, TENSORS_LAST };

static void add_tensors(af_graph_t *dst, const af_graph_t *src)
{
    for (int32_t t = 0; t < af_graph_tensor_count(src); t++) {
        af_tensor_desc_t d = af_graph_tensor_desc(src, t);
        assert_int_equal(af_graph_add_tensor(dst, &d, NULL, NULL), 0);
    }
}

static void add_node_like(af_graph_t *dst, const af_graph_t *src, int32_t v)
{
    const af_node_info_t *n = af_graph_node(src, v);
    const char *ins[16], *outs[16];
    assert_true(n->n_inputs <= 16 && n->n_outputs <= 16);
    for (int32_t k = 0; k < n->n_inputs; k++)
        ins[k] = af_graph_tensor(src, n->inputs[k])->name;
    for (int32_t k = 0; k < n->n_outputs; k++)
        outs[k] = af_graph_tensor(src, n->outputs[k])->name;
    af_node_desc_t d = {n->name,      n->op,   ins,        n->n_inputs, outs,
                        n->n_outputs, n->cost, n->inplace, n->n_inplace};
    assert_int_equal(af_graph_add_node(dst, &d, NULL, NULL), 0);
}

/* src's tensors and nodes added to a new graph in the given order, finalized. */
static af_graph_t *rebuild(const af_graph_t *src, int how)
{
    af_graph_t *g;
    af_error_t err;
    assert_int_equal(af_graph_create(&g), 0);
    int32_t nn = af_graph_node_count(src);
    if (how != TENSORS_LAST)
        add_tensors(g, src);
    for (int32_t i = 0; i < nn; i++)
        add_node_like(g, src, how == NODES_REVERSED ? nn - 1 - i : i);
    if (how == TENSORS_LAST)
        add_tensors(g, src);
    int rc = af_graph_finalize(g, &err);
    if (rc)
        fail_msg("finalize: %s", err.msg);
    return g;
}

static void test_graph_scale_tables_match_reference_in_any_order(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        af_graph_t *g;
        assert_int_equal(af_zoo_random_dag(seed, 120, &g, NULL), 0);
        for (int how = NODES_IN_ORDER; how <= TENSORS_LAST; how++) {
            af_graph_t *r = rebuild(g, how);
            check_tables(r);
            int32_t nn = af_graph_node_count(g);
            for (int32_t v = 0; v < nn; v++) /* the same node, whatever its id */
                assert_int_equal(af_graph_node(r, how == NODES_REVERSED ? nn - 1 - v : v)->n_preds,
                                 af_graph_node(g, v)->n_preds);
            for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
                assert_int_equal(af_graph_alias_root(r, t), af_graph_alias_root(g, t));
                assert_int_equal(af_graph_alias_root_offset(r, t),
                                 af_graph_alias_root_offset(g, t));
            }
            af_graph_destroy(r);
        }
        af_graph_destroy(g);
    }
    af_graph_t *g; /* the generator's own graph, views included, and a residual chain */
    assert_int_equal(af_zoo_random_dag(77, 300, &g, NULL), 0);
    check_tables(g);
    af_graph_destroy(g);
    assert_int_equal(af_zoo_residual_chain(5, 600, &g, NULL), 0);
    check_tables(g);
    assert_int_equal(af_graph_alias_root(g, 3), 3); /* no view: every tensor is its own root */
    assert_int_equal(af_graph_alias_root_offset(g, 3), 0);
    af_graph_destroy(g);
}

/* ---- big name maps ----------------------------------------------------------------------- */

#define BIG 200000 /* names: tables of 2^18 slots, far past the caches of the builder */

static int add_t(af_graph_t *g, const char *name, af_error_t *err)
{
    af_tensor_desc_t d = {0};
    d.name = name;
    d.bytes = 64;
    d.rank = -1;
    d.kind = name[0] == 'i' ? AF_TENSOR_INPUT : AF_TENSOR_INTERMEDIATE;
    return af_graph_add_tensor(g, &d, NULL, err);
}

static int add_n(af_graph_t *g, int i, af_error_t *err)
{
    char name[32], in[32], out[32];
    snprintf(name, sizeof name, "n%d", i);
    snprintf(in, sizeof in, i == 1 ? "i0" : "t%d", i - 1);
    snprintf(out, sizeof out, "t%d", i);
    const char *ins[] = {in}, *outs[] = {out};
    af_node_desc_t d = {name, "Op", ins, 1, outs, 1, 1.0, NULL, 0};
    return af_graph_add_node(g, &d, NULL, err);
}

/* A chain i0 -> n1 -> t1 -> ... -> t(BIG-1), built without af_graph_reserve (the tag arrays
 * grow as they go). */
static af_graph_t *big_chain(void)
{
    af_graph_t *g;
    char name[32];
    assert_int_equal(af_graph_create(&g), 0);
    assert_int_equal(add_t(g, "i0", NULL), 0);
    for (int i = 1; i < BIG; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(add_t(g, name, NULL), 0);
        assert_int_equal(add_n(g, i, NULL), 0);
    }
    return g;
}

/* finalize fails with AF_EDUP, naming `name` and the ids "<what>s <a> and <b>". */
static void expect_dup(af_graph_t *g, const char *name, const char *what, int a, int b)
{
    af_error_t err;
    assert_int_equal(af_graph_finalize(g, &err), AF_EDUP);
    assert_false(af_graph_is_finalized(g));
    char want[64];
    snprintf(want, sizeof want, "'%s'", name);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' does not name %s", err.msg, want);
    snprintf(want, sizeof want, "%ss %d and %d", what, a, b);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' does not say '%s'", err.msg, want);
}

/* Adds accept a duplicate name (they do not look names up); finalize refuses it, naming it and
 * both ids, whether the first copy came first, long ago or just before; with two duplicates
 * the one added first is named. */
static void test_graph_scale_finalize_refuses_duplicates(void **state)
{
    (void)state;
    const int old[] = {1, 65536, BIG - 1};
    char name[32];
    for (size_t k = 0; k < sizeof old / sizeof old[0]; k++) {
        af_graph_t *g = big_chain();
        snprintf(name, sizeof name, "t%d", old[k]);
        assert_int_equal(add_t(g, name, NULL), 0);
        expect_dup(g, name, "tensor", old[k], BIG);
        af_graph_destroy(g);
        g = big_chain();
        snprintf(name, sizeof name, "n%d", old[k]);
        assert_int_equal(add_n(g, old[k], NULL), 0); /* also a second producer: names first */
        expect_dup(g, name, "node", old[k] - 1, BIG - 1);
        af_graph_destroy(g);
    }
    af_graph_t *g = big_chain();
    assert_int_equal(add_t(g, "t7", NULL), 0);
    assert_int_equal(add_t(g, "i0", NULL), 0);
    expect_dup(g, "t7", "tensor", 7, BIG);
    af_graph_destroy(g);
}

/* Lookups before finalize build the map and then catch up with the adds made since (also a
 * duplicate added after a lookup is refused by finalize); after finalize every name is found. */
static void test_graph_scale_lookups_before_and_after_finalize(void **state)
{
    (void)state;
    af_graph_t *g;
    char name[32];
    assert_int_equal(af_graph_create(&g), 0);
    assert_int_equal(add_t(g, "i0", NULL), 0);
    assert_int_equal(af_graph_find_tensor(g, "i0"), 0);
    for (int i = 1; i < BIG; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(add_t(g, name, NULL), 0);
        assert_int_equal(add_n(g, i, NULL), 0);
        if (i % 9973 == 0 || i < 40) { /* first build, small catch-ups, rebuilds on growth */
            assert_int_equal(af_graph_find_tensor(g, name), i);
            snprintf(name, sizeof name, "n%d", i);
            assert_int_equal(af_graph_find_node(g, name), i - 1);
            snprintf(name, sizeof name, "t%d", i + 1);
            assert_int_equal(af_graph_find_tensor(g, name), -1); /* not yet */
            assert_int_equal(af_graph_find_tensor(g, "t1"), 1);
        }
    }
    af_error_t err;
    assert_int_equal(af_graph_finalize(g, &err), 0);
    for (int i = 1; i < BIG; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(af_graph_find_tensor(g, name), i); /* i0 is tensor 0 */
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(af_graph_find_node(g, name), i - 1);
    }
    assert_int_equal(af_graph_find_tensor(g, "i0"), 0);
    assert_int_equal(af_graph_find_tensor(g, "t0"), -1);
    assert_int_equal(af_graph_find_tensor(g, "tx"), -1);
    assert_int_equal(af_graph_find_node(g, "n0"), -1);
    for (int i = 1; i < BIG; i++) { /* the chain: t(i) made by n(i), read by n(i+1) */
        const af_tensor_info_t *t = af_graph_tensor(g, i);
        assert_int_equal(t->producer, i - 1);
        assert_int_equal(t->n_consumers, i < BIG - 1);
        assert_int_equal(af_graph_node(g, i - 1)->n_preds, i > 1);
    }
    af_graph_destroy(g);
    g = big_chain();
    assert_int_equal(af_graph_find_tensor(g, "t5"), 5);
    assert_int_equal(add_t(g, "t5", NULL), 0); /* after the map was built: caught up later */
    assert_int_equal(af_graph_find_tensor(g, "t5"), 5); /* the first copy */
    expect_dup(g, "t5", "tensor", 5, BIG);
    af_graph_destroy(g);
}

static void test_graph_scale_failed_finalize_keeps_the_names(void **state)
{
    (void)state;
    af_graph_t *g = big_chain();
    af_error_t err;
    assert_int_equal(add_n(g, BIG, &err), 0); /* reads t(BIG-1), writes t(BIG): undeclared */
    assert_int_equal(af_graph_finalize(g, &err), AF_ENOENT);
    assert_non_null(strstr(err.msg, "'t200000'"));
    assert_int_equal(af_graph_find_tensor(g, "t7"), 7);
    assert_int_equal(add_t(g, "t200000", &err), 0);
    assert_int_equal(af_graph_finalize(g, &err), 0);
    assert_int_equal(af_graph_find_tensor(g, "t200000"), BIG);
    assert_int_equal(af_graph_find_tensor(g, "t7"), 7);
    assert_int_equal(af_graph_tensor(g, BIG)->producer, BIG - 1);
    assert_int_equal(af_graph_input_order(g)[BIG - 1], BIG - 1);
    af_graph_destroy(g);
}

/* Finalize borrows the name maps' tags as scratch: after a late failure (a tensor read but never
 * produced, found once the nodes are resolved) the graph takes enough new tensors and nodes to
 * rebuild both tables from their tags, and every name is then found under its own id. */
static void test_graph_scale_late_failure_keeps_the_tags(void **state)
{
    (void)state;
    af_graph_t *g;
    af_error_t err;
    char name[32], out[32];
    assert_int_equal(af_graph_create(&g), 0);
    const char *kinds[] = {"x", "orphan", "y"};
    for (int i = 0; i < 3; i++) {
        af_tensor_desc_t d = {.name = kinds[i], .bytes = 4, .rank = -1};
        d.kind = i == 0 ? AF_TENSOR_INPUT : i == 2 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE;
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
    }
    const char *in[] = {"x", "orphan"}, *o[] = {"y"};
    af_node_desc_t reader = {"reader", "Add", in, 2, o, 1, 1.0, NULL, 0};
    assert_int_equal(af_graph_add_node(g, &reader, NULL, NULL), 0);
    assert_int_equal(af_graph_finalize(g, &err), AF_ENOPRODUCER);
    assert_non_null(strstr(err.msg, "'orphan'"));
    assert_non_null(strstr(err.msg, "'reader'"));
    const char *mi[] = {"x"}, *mo[] = {"orphan"};
    af_node_desc_t maker = {"maker", "Relu", mi, 1, mo, 1, 1.0, NULL, 0}; /* after its reader */
    assert_int_equal(af_graph_add_node(g, &maker, NULL, NULL), 0);
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "p%d", i);
        snprintf(out, sizeof out, "n%d", i);
        af_tensor_desc_t d = {.name = name, .bytes = 4, .rank = -1, .kind = AF_TENSOR_OUTPUT};
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
        const char *oi[] = {"orphan"}, *oo[] = {name};
        af_node_desc_t n = {out, "Neg", oi, 1, oo, 1, 1.0, NULL, 0};
        assert_int_equal(af_graph_add_node(g, &n, NULL, NULL), 0);
    }
    assert_int_equal(af_graph_finalize(g, &err), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(af_graph_find_tensor(g, kinds[i]), i);
    assert_int_equal(af_graph_find_node(g, "reader"), 0);
    assert_int_equal(af_graph_find_node(g, "maker"), 1);
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "p%d", i);
        snprintf(out, sizeof out, "n%d", i);
        assert_int_equal(af_graph_find_tensor(g, name), 3 + i);
        assert_int_equal(af_graph_find_node(g, out), 2 + i);
    }
    const af_tensor_info_t *orphan = af_graph_tensor(g, 1);
    assert_int_equal(orphan->producer, 1);
    assert_int_equal(orphan->n_consumers, 3001); /* reader, then the 3000 readers added later */
    assert_int_equal(orphan->consumers[0], 0);
    assert_int_equal(orphan->consumers[3000], 3001);
    const af_node_info_t *m = af_graph_node(g, 1);
    assert_int_equal(m->n_succs, 3001);
    assert_int_equal(m->succs[0], 0);
    assert_int_equal(af_graph_input_order(g)[0], 1); /* maker before its reader */
    af_graph_destroy(g);
}

/* Allocations of [fail_lo, fail_hi) bytes fail, others go to the system allocator. */
static size_t fail_lo, fail_hi;

static void *picky_malloc(size_t n)
{
    return n >= fail_lo && n < fail_hi ? NULL : malloc(n);
}

static void *picky_realloc(void *p, size_t n)
{
    return n >= fail_lo && n < fail_hi ? NULL : realloc(p, n);
}

static void *picky_calloc(size_t c, size_t n)
{
    return c * n >= fail_lo && c * n < fail_hi ? NULL : calloc(c, n);
}

/* 70000 tensor names take a table of 2^17 slots (1 MiB), built at the first lookup or at
 * finalize. When it cannot be allocated, finalize fails with AF_ENOMEM and a lookup still gives
 * the right answer (by a scan); once memory is back, finalize works. */
static void test_graph_scale_out_of_memory_for_the_name_table(void **state)
{
    (void)state;
    af_graph_t *g;
    af_error_t err;
    char name[32];
    assert_int_equal(af_graph_create(&g), 0);
    assert_int_equal(add_t(g, "i0", NULL), 0);
    for (int i = 1; i < 70000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(add_t(g, name, NULL), 0);
    }
    fail_lo = 1 << 20;
    fail_hi = (1 << 20) + 1;
    assert_int_equal(af_replace_allocator(picky_malloc, picky_realloc, picky_calloc, free), 0);
    int rc = af_graph_finalize(g, &err);
    int32_t found = af_graph_find_tensor(g, "t69998"), missing = af_graph_find_tensor(g, "t70000");
    af_reset_allocator();
    assert_int_equal(rc, AF_ENOMEM);
    assert_int_equal(found, 69998);
    assert_int_equal(missing, -1);
    assert_int_equal(af_graph_finalize(g, &err), 0);
    for (int i = 1; i < 70000; i += 997) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(af_graph_find_tensor(g, name), i);
    }
    af_graph_destroy(g);
}

/* ---- error precedence and views ----------------------------------------------------------- */

static void test_graph_scale_self_read_reported_after_name_errors(void **state)
{
    (void)state;
    /* n1 reads its own output; n2 names an unknown tensor: the name error comes first, as
     * it did when the checks were separate passes. */
    expect_reject(GRAPH("{'name': 'x', 'bytes': 4, 'kind': 'input'}, {'name': 'y', 'bytes': 4}, "
                        "{'name': 'z', 'bytes': 4}",
                        "{'name': 'n1', 'op': 'Op', 'inputs': ['x', 'y'], 'outputs': ['y']}, "
                        "{'name': 'n2', 'op': 'Op', 'inputs': ['nope'], 'outputs': ['z']}"),
                  AF_ENOENT, "n2", "nope", NULL);
    expect_reject(GRAPH("{'name': 'x', 'bytes': 4, 'kind': 'input'}, {'name': 'y', 'bytes': 4}",
                        "{'name': 'n1', 'op': 'Op', 'inputs': ['x', 'y'], 'outputs': ['y']}"),
                  AF_ECYCLE, "n1", "y", NULL);
}

static void test_graph_scale_no_data_on_a_view(void **state)
{
    (void)state;
    af_graph_t *g;
    af_error_t err;
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t d = {0};
    d.bytes = 16;
    d.rank = -1;
    d.kind = AF_TENSOR_CONSTANT;
    const char *names[] = {"w0", "w1", "v", "w2"};
    int32_t ids[4];
    for (int i = 0; i < 4; i++) {
        d.name = names[i];
        d.alias_of = i == 2 ? "w1" : NULL;
        d.bytes = i == 2 ? 8 : 16;
        assert_int_equal(af_graph_add_tensor(g, &d, &ids[i], NULL), 0);
    }
    float bytes[4] = {1, 2, 3, 4};
    assert_int_equal(af_graph_set_data(g, ids[2], bytes, 8, AF_DATA_COPY, &err), AF_EINVAL);
    assert_non_null(strstr(err.msg, "'v'"));
    for (int i = 0; i < 4; i++)
        if (i != 2)
            assert_int_equal(af_graph_set_data(g, ids[i], bytes, 16, AF_DATA_COPY, &err), 0);
    assert_int_equal(af_graph_finalize(g, &err), 0);
    assert_int_equal(af_graph_tensor(g, ids[2])->alias_of, ids[1]);
    assert_int_equal(af_graph_alias_root(g, ids[2]), ids[1]);
    assert_int_equal(af_graph_alias_root(g, ids[3]), ids[3]);
    assert_null(af_graph_tensor(g, ids[2])->data);
    assert_non_null(af_graph_tensor(g, ids[3])->data);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_scale_tables_match_reference_in_any_order),
        cmocka_unit_test(test_graph_scale_finalize_refuses_duplicates),
        cmocka_unit_test(test_graph_scale_lookups_before_and_after_finalize),
        cmocka_unit_test(test_graph_scale_failed_finalize_keeps_the_names),
        cmocka_unit_test(test_graph_scale_late_failure_keeps_the_tags),
        cmocka_unit_test(test_graph_scale_out_of_memory_for_the_name_table),
        cmocka_unit_test(test_graph_scale_self_read_reported_after_name_errors),
        cmocka_unit_test(test_graph_scale_no_data_on_a_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
