/*
 * Tests of the JSON graph format (graph/json.c, graph/json_write.c); docs/graph-format.md is
 * the reference.
 *
 * - Every field is read as documented.
 * - Round trip: parse -> write -> parse gives the same graph, and writing it again gives the same
 *   bytes, for the examples and for random builder graphs (fixed seeds, printed on failure).
 * - Saving is atomic; unreadable/unwritable paths give AF_EIO naming the path.
 * - Random corruptions of a valid file give a graph or a clean error, never a crash.
 * - Out-of-memory injection through af_replace_allocator: allocation n fails, for n = 0, 1, ...
 *   until the call succeeds; every failure must be AF_ENOMEM and leave no live allocation.
 *
 * AF_SOURCE_DIR (set by ctest) locates examples/ and tests/data/.
 */
#include "tests/graph_testutil.h"

/* ---- the format, field by field -------------------------------------------------------- */

static const char *all_fields =
    "{'format': 'arenaflow-graph', 'version': 1, 'name': 'every field', 'comment': 'c',"
    " 'tensors': ["
    "  {'name': 'in', 'kind': 'input', 'dtype': 'float32', 'shape': [2, 3, 4], 'comment': 'c'},"
    "  {'name': 'w', 'kind': 'constant', 'bytes': 100},"
    "  {'name': 'sym', 'dtype': 'f16', 'shape': ['batch', 8]},"
    "  {'name': 'dyn', 'dynamic': true},"
    "  {'name': 'pad', 'dtype': 'i8', 'shape': [10], 'bytes': 64},"
    "  {'name': 'view', 'alias_of': 'in', 'offset': 32, 'dtype': 'f32', 'shape': [4]},"
    "  {'name': 'scalar', 'dtype': 'f64', 'shape': []},"
    "  {'name': 'out', 'kind': 'output', 'bytes': 96}"
    " ],"
    " 'nodes': ["
    "  {'name': 'a', 'op': 'Conv', 'inputs': ['in', 'w'], 'outputs': ['sym', 'dyn'],"
    "   'cost': 1.5, 'comment': 'c',"
    "   'attrs': {'i': -7, 'f': 0.25, 's': 'same', 'is': [1, 2, 3], 'fs': [1, 2.5], 'b': true}},"
    "  {'op': 'Relu', 'inputs': ['sym'], 'outputs': ['pad'], 'inplace': [{'output': 0, 'input': "
    "0}]},"
    "  {'name': 'c', 'op': 'Add', 'inputs': ['pad', 'view', 'dyn'], 'outputs': ['scalar', 'out'],"
    "   'cost': 12}"
    " ]}";

static void test_graph_json_reads_every_field(void **state)
{
    (void)state;
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = parse_q(all_fields, &g, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(af_graph_name(g), "every field");
    const af_tensor_info_t *t = af_graph_tensor(g, tensor_id(g, "in"));
    assert_int_equal(t->kind, AF_TENSOR_INPUT);
    assert_int_equal(t->dtype, AF_DTYPE_F32);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->shape[2], 4);
    assert_int_equal(t->bytes, 2 * 3 * 4 * 4);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "w"))->kind, AF_TENSOR_CONSTANT);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "w"))->bytes, 100);
    t = af_graph_tensor(g, tensor_id(g, "sym"));
    assert_int_equal(t->bytes, AF_BYTES_DYNAMIC); /* symbolic dim: unknown until run time */
    assert_int_equal(t->shape[0], -1);
    assert_int_equal(t->shape[1], 8);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "dyn"))->bytes, AF_BYTES_DYNAMIC);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "pad"))->bytes, 64); /* bytes wins */
    t = af_graph_tensor(g, tensor_id(g, "view"));
    assert_int_equal(t->alias_of, tensor_id(g, "in"));
    assert_int_equal(t->alias_offset, 32);
    assert_int_equal(t->bytes, 16);
    t = af_graph_tensor(g, tensor_id(g, "scalar"));
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->bytes, 8);
    assert_int_equal(af_graph_tensor(g, tensor_id(g, "out"))->kind, AF_TENSOR_OUTPUT);

    int32_t a = node_id(g, "a");
    const af_node_info_t *n = af_graph_node(g, a);
    assert_string_equal(n->op, "Conv");
    assert_true(n->cost == 1.5);
    assert_int_equal(n->n_attrs, 6);
    assert_int_equal(af_graph_node_attr(g, a, "i")->type, AF_ATTR_INT);
    assert_int_equal(af_graph_node_attr(g, a, "i")->i, -7);
    assert_true(af_graph_node_attr(g, a, "f")->f == 0.25);
    assert_string_equal(af_graph_node_attr(g, a, "s")->s, "same");
    const af_attr_t *is = af_graph_node_attr(g, a, "is");
    assert_int_equal(is->type, AF_ATTR_INTS);
    assert_int_equal(is->n, 3);
    assert_int_equal(is->ints[2], 3);
    const af_attr_t *fs = af_graph_node_attr(g, a, "fs");
    assert_int_equal(fs->type, AF_ATTR_FLOATS); /* one real makes the whole list floats */
    assert_true(fs->floats[0] == 1.0 && fs->floats[1] == 2.5);
    assert_int_equal(af_graph_node_attr(g, a, "b")->i, 1);
    n = af_graph_node(g, node_id(g, "node1")); /* unnamed node gets node<index> */
    assert_string_equal(n->op, "Relu");
    assert_int_equal(n->n_inplace, 1);
    assert_true(af_graph_node(g, node_id(g, "c"))->cost == 12.0);
    /* The view reads 'in' (an input): no extra edge; 'c' depends on 'a' and node1. */
    assert_int_equal(af_graph_node(g, node_id(g, "c"))->n_preds, 2);
    check_roundtrip(g, "every field");
    af_graph_destroy(g);
}

static void test_graph_json_roundtrip_examples(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        af_graph_t *g = load_example(examples[i]);
        check_roundtrip(g, examples[i]);
        af_graph_destroy(g);
    }
    /* The empty graph is a graph too. */
    af_graph_t *g = NULL;
    af_error_t err;
    assert_int_equal(parse_q(GRAPH("", ""), &g, &err), 0);
    assert_int_equal(af_graph_tensor_count(g), 0);
    check_roundtrip(g, "empty graph");
    af_graph_destroy(g);
}

/* ---- random graphs through the builder -------------------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t rnd_below(int64_t n)
{
    return (int64_t)(rnd() % (uint64_t)n);
}

static double rnd_double(void)
{
    /* A finite double with a random mantissa and a wide exponent range. */
    double m = (double)(rnd() >> 11) / 9007199254740992.0;
    return ldexp(rnd() & 1 ? -m : m, (int)rnd_below(200) - 100);
}

static void rnd_name(char *buf, size_t n, const char *prefix, int i)
{
    static const char *const odd[] = {"", " spaced", "\\\"q\"", "\xc3\xa9t\xc3\xa9", "/x:0"};
    snprintf(buf, n, "%s%d%s", prefix, i, rnd_below(4) == 0 ? odd[rnd_below(5)] : "");
}

static void add_random_tensor(af_graph_t *g, const char *name, af_tensor_kind_t kind,
                              const char *alias_of, int64_t base_bytes)
{
    af_tensor_desc_t d = {0};
    int64_t shape[4];
    d.name = name;
    d.kind = kind;
    d.rank = -1;
    d.shape = shape;
    int style = (int)rnd_below(4);
    if (style == 0) {
        d.bytes = rnd_below(1 << 20);
    } else if (style == 1 && !alias_of) {
        d.bytes = AF_BYTES_DYNAMIC;
        d.rank = (int)rnd_below(3);
        for (int i = 0; i < d.rank; i++)
            shape[i] = rnd_below(3) ? rnd_below(9) : -1;
    } else {
        d.dtype = (af_dtype_t)(1 + rnd_below(AF_DTYPE_COUNT_ - 1));
        d.rank = (int)rnd_below(5);
        for (int i = 0; i < d.rank; i++)
            shape[i] = 1 + rnd_below(6);
        d.bytes = rnd_below(3) ? AF_BYTES_FROM_SHAPE : 100000 + rnd_below(1000); /* padded */
    }
    if (alias_of) { /* a view: fixed size inside the base */
        d.dtype = AF_DTYPE_UNKNOWN;
        d.rank = -1;
        d.bytes = rnd_below(base_bytes + 1);
        d.alias_of = alias_of;
        d.alias_offset = rnd_below(base_bytes - d.bytes + 1);
    }
    af_error_t err;
    int rc = af_graph_add_tensor(g, &d, NULL, &err);
    if (rc)
        print_error("add_tensor %s: %s\n", name, err.msg);
    assert_int_equal(rc, 0);
}

static void add_random_attrs(af_graph_t *g, int32_t node)
{
    int na = (int)rnd_below(4);
    for (int k = 0; k < na; k++) {
        char name[16];
        int64_t ints[4];
        double floats[4];
        snprintf(name, sizeof(name), "a%d", k);
        af_attr_t a = {0};
        a.name = name;
        a.type = (af_attr_type_t)rnd_below(5);
        a.i = (int64_t)rnd();
        a.f = rnd_double();
        a.s = rnd_below(2) ? "tab\there \"quoted\" \\ \xe2\x9c\x93" : "";
        a.n = 1 + (int32_t)rnd_below(4); /* an empty list reads back as ints (documented) */
        for (int i = 0; i < 4; i++) {
            ints[i] = (int64_t)rnd();
            floats[i] = rnd_below(2) ? rnd_double() : (double)rnd_below(5);
        }
        a.ints = ints;
        a.floats = floats;
        assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
    }
}

/* A random valid DAG using every feature the format has. */
static af_graph_t *random_graph(void)
{
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    assert_int_equal(af_graph_set_name(g, rnd_below(2) ? "random \"graph\"" : ""), 0);
    char names[64][48];
    int64_t sizes[64];
    int nt = 0;
    int ninputs = 1 + (int)rnd_below(3);
    for (int i = 0; i < ninputs; i++, nt++) {
        rnd_name(names[nt], sizeof(names[nt]), rnd_below(3) ? "in" : "w", nt);
        add_random_tensor(g, names[nt], rnd_below(3) ? AF_TENSOR_INPUT : AF_TENSOR_CONSTANT, NULL,
                          0);
        sizes[nt] = af_graph_tensor(g, nt)->bytes;
    }
    int nn = 1 + (int)rnd_below(20);
    for (int v = 0; v < nn && nt < 60; v++) {
        const char *ins[3], *outs[2];
        int ni = 1 + (int)rnd_below(3), no = 1 + (int)rnd_below(2);
        for (int k = 0; k < ni; k++)
            ins[k] = names[rnd_below(nt)];
        for (int k = 0; k < no; k++, nt++) {
            rnd_name(names[nt], sizeof(names[nt]), "t", nt);
            int32_t base = af_graph_find_tensor(g, ins[0]);
            int alias = rnd_below(5) == 0 && sizes[base] >= 0;
            add_random_tensor(g, names[nt], v == nn - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE,
                              alias ? ins[0] : NULL, alias ? sizes[base] : 0);
            sizes[nt] = af_graph_tensor(g, nt)->bytes;
            outs[k] = names[nt];
        }
        af_inplace_t ip[2] = {{0, (int32_t)rnd_below(ni)}, {(int32_t)rnd_below(no), 0}};
        char nname[48];
        rnd_name(nname, sizeof(nname), "n", v);
        af_node_desc_t d = {nname,
                            rnd_below(2) ? "Conv" : "Op \"x\"",
                            ins,
                            ni,
                            outs,
                            no,
                            0,
                            ip,
                            (int32_t)rnd_below(3)};
        int c = (int)rnd_below(3);
        d.cost = c == 0 ? 0 : c == 1 ? (double)rnd_below(1000000) : fabs(rnd_double());
        int32_t id;
        af_error_t err;
        int rc = af_graph_add_node(g, &d, &id, &err);
        if (rc)
            print_error("add_node: %s\n", err.msg);
        assert_int_equal(rc, 0);
        add_random_attrs(g, id);
    }
    af_error_t err;
    int rc = af_graph_finalize(g, &err);
    if (rc)
        print_error("finalize: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return g;
}

static void test_graph_json_roundtrip_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        rng = seed * 0x9e3779b97f4a7c15ull;
        char label[64];
        snprintf(label, sizeof(label), "random graph, seed %llu", (unsigned long long)seed);
        af_graph_t *g = random_graph();
        check_roundtrip(g, label); /* prints the label (the seed) on failure */
        af_graph_destroy(g);
    }
}

/* ---- save / load files ----------------------------------------------------------------- */

static void test_graph_save_json_is_atomic_and_reloads(void **state)
{
    (void)state;
    char dir[] = "/tmp/af_test_graph_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/g.json", dir);
    af_error_t err;
    af_graph_t *g = load_example("mlp.json"), *h = load_example("diamond.json");
    assert_int_equal(af_graph_save_json(h, path, &err), 0);
    assert_int_equal(af_graph_save_json(g, path, &err), 0); /* replaces the old file */
    af_graph_t *back = NULL;
    assert_int_equal(af_graph_load_json(path, &back, &err), 0);
    assert_true(graph_equal(g, back));
    /* Nothing but the target is left in the directory (the temp file was renamed). */
    DIR *d = opendir(dir);
    assert_non_null(d);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            entries++;
    closedir(d);
    assert_int_equal(entries, 1);
    /* Unwritable target: AF_EIO naming the path, the old file untouched. */
    char bad[300];
    snprintf(bad, sizeof(bad), "%s/no/such/dir/g.json", dir);
    assert_int_equal(af_graph_save_json(g, bad, &err), AF_EIO);
    assert_non_null(strstr(err.msg, "no/such/dir"));
    /* Missing file on load: AF_EIO naming it. */
    af_graph_t *none = NULL;
    assert_int_equal(af_graph_load_json(bad, &none, &err), AF_EIO);
    assert_null(none);
    assert_non_null(strstr(err.msg, "no/such/dir"));
    unlink(path);
    rmdir(dir);
    af_graph_destroy(back);
    af_graph_destroy(g);
    af_graph_destroy(h);
}

static void test_graph_survives_corrupted_input(void **state)
{
    (void)state;
    char path[1024];
    src_path(path, sizeof(path), "examples/mlp.json");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char orig[16384], buf[16384];
    size_t n = fread(orig, 1, sizeof(orig), f);
    fclose(f);
    static const char junk[] = "{}[]\",:0-9e.ntf \\\x01\xff";
    const uint64_t seed = 20261129;
    rng = seed;
    int ok = 0, rejected = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, orig, n);
        int edits = 1 + (int)rnd_below(3);
        for (int k = 0; k < edits; k++)
            buf[rnd_below((int64_t)n)] = junk[rnd_below(sizeof(junk) - 1)];
        size_t len = rnd_below(8) ? n : (size_t)rnd_below((int64_t)n); /* sometimes truncated */
        af_graph_t *g = NULL;
        af_error_t err;
        af_error_clear(&err);
        int rc = af_graph_parse_json(buf, len, &g, &err);
        if (rc == 0) {
            ok++;
            af_graph_destroy(g);
            continue;
        }
        if (rc > 0 || g != NULL || err.msg[0] == '\0' || err.code != rc)
            print_error("seed %llu iteration %d: rc %d, message \"%s\"\n", (unsigned long long)seed,
                        it, rc, err.msg);
        assert_true(rc < 0 && g == NULL && err.msg[0] && err.code == rc);
        rejected++;
    }
    print_message("corrupted inputs: %d rejected cleanly, %d still valid\n", rejected, ok);
    assert_true(rejected > 0);
}

/* The string dtype: 16-byte handles, the name round-trips; a string constant with data has no
 * weights-file form, so saving it is refused instead of writing addresses. */
static void test_graph_json_string_dtype(void **state)
{
    (void)state;
    af_graph_t *g = NULL, *back = NULL;
    af_error_t err;
    assert_int_equal(
        parse_q("{'format': 'arenaflow-graph', 'version': 1, 'tensors': ["
                " {'name': 's', 'kind': 'input', 'dtype': 'string', 'shape': [2, 3]},"
                " {'name': 't', 'kind': 'output', 'dtype': 'string', 'shape': [2, 3]}],"
                " 'nodes': [{'op': 'Identity', 'inputs': ['s'], 'outputs': ['t']}]}",
                &g, &err),
        0);
    const af_tensor_info_t *t = af_graph_tensor(g, tensor_id(g, "s"));
    assert_int_equal(t->dtype, AF_DTYPE_STRING);
    assert_int_equal(t->bytes, 6 * 16);
    char *text = NULL;
    assert_int_equal(af_graph_to_json(g, &text, &err), 0);
    assert_non_null(strstr(text, "\"string\""));
    assert_int_equal(af_graph_parse_json(text, strlen(text), &back, &err), 0);
    assert_int_equal(af_graph_tensor(back, tensor_id(back, "t"))->dtype, AF_DTYPE_STRING);
    af_free(text);
    af_graph_destroy(back);
    af_graph_destroy(g);
    assert_int_equal(af_graph_create(&g), 0);
    int64_t dims[] = {1};
    af_tensor_desc_t d = {.name = "k",
                          .dtype = AF_DTYPE_STRING,
                          .rank = 1,
                          .shape = dims,
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .kind = AF_TENSOR_CONSTANT};
    int32_t id;
    assert_int_equal(af_graph_add_tensor(g, &d, &id, NULL), 0);
    static const af_string_t k = {"abc", 3};
    assert_int_equal(af_graph_set_data(g, id, &k, sizeof k, AF_DATA_BORROW, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    char path[] = "/tmp/af_test_strjson_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(af_graph_save_json(g, path, &err), AF_ENOTSUP);
    assert_non_null(strstr(err.msg, "string constant"));
    unlink(path);
    af_graph_destroy(g);
}

static void test_graph_writer_rejects_nan_attribute(void **state)
{
    (void)state;
    af_graph_t *g = NULL;
    assert_int_equal(af_graph_create(&g), 0);
    af_tensor_desc_t t = {0};
    t.name = "x";
    t.bytes = 4;
    t.rank = -1;
    t.kind = AF_TENSOR_INPUT;
    assert_int_equal(af_graph_add_tensor(g, &t, NULL, NULL), 0);
    const char *in[] = {"x"};
    af_node_desc_t n = {"B", "Norm", in, 1, NULL, 0, 0, NULL, 0};
    int32_t id;
    assert_int_equal(af_graph_add_node(g, &n, &id, NULL), 0);
    af_attr_t a = {0};
    a.name = "eps";
    a.type = AF_ATTR_FLOAT;
    a.f = NAN;
    assert_int_equal(af_graph_node_set_attr(g, id, &a, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    /* After finalize the graph is immutable (it may be shared between threads). */
    assert_int_equal(af_graph_node_set_attr(g, id, &a, NULL), AF_EINVAL);
    char *text = NULL;
    af_error_t err;
    assert_int_equal(af_graph_to_json(g, &text, &err), AF_EINVAL);
    assert_null(text);
    assert_non_null(strstr(err.msg, "'eps'"));
    assert_non_null(strstr(err.msg, "'B'"));
    af_graph_destroy(g);
}

/* ---- out-of-memory injection ------------------------------------------------------------ */

static long fail_at = -1, n_allocs, live_allocs;

static void *oom_malloc(size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = malloc(n);
    if (p)
        live_allocs++;
    return p;
}

static void *oom_calloc(size_t c, size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = calloc(c, n);
    if (p)
        live_allocs++;
    return p;
}

static void *oom_realloc(void *old, size_t n)
{
    if (n_allocs++ == fail_at)
        return NULL;
    void *p = realloc(old, n);
    if (p && !old)
        live_allocs++;
    return p;
}

static void oom_free(void *p)
{
    if (p)
        live_allocs--;
    free(p);
}

static int reset_allocator(void **state)
{
    (void)state;
    af_reset_allocator();
    return 0;
}

typedef int (*oom_op_fn)(const char *path);

/*
 * Runs op with allocation n failing, n = 0, 1, ... until it succeeds. Every failure must return
 * AF_ENOMEM (or one of `also_ok`) and leave no live allocation. Returns the injection points.
 */
static long run_oom(const char *label, const char *path, oom_op_fn op, int final_rc, int also_ok,
                    long min_points)
{
    long n;
    for (n = 0; n < 200000; n++) {
        fail_at = n;
        n_allocs = 0;
        live_allocs = 0;
        af_replace_allocator(oom_malloc, oom_realloc, oom_calloc, oom_free);
        int rc = op(path);
        af_reset_allocator();
        if (live_allocs != 0)
            print_error("%s: allocation %ld failed -> rc %s and %ld allocations leaked\n", label, n,
                        af_err_name(rc), live_allocs);
        assert_int_equal(live_allocs, 0);
        if (n_allocs <= n) { /* the failure point was never reached: the run was clean */
            if (rc != final_rc)
                print_error("%s: clean run returned %s\n", label, af_err_name(rc));
            assert_int_equal(rc, final_rc);
            break;
        }
        if (rc != AF_ENOMEM && rc != also_ok)
            print_error("%s: allocation %ld failed -> %s, expected AF_ENOMEM\n", label, n,
                        af_err_name(rc));
        assert_true(rc == AF_ENOMEM || rc == also_ok);
    }
    print_message("%s: %ld allocation-failure points injected, all clean\n", label, n);
    assert_true(n >= min_points); /* the loader really allocates along this path */
    return n;
}

static int op_load(const char *path)
{
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_graph_load_json(path, &g, &err);
    if (rc == 0)
        af_graph_destroy(g);
    else if (g)
        return 12345; /* *out must stay untouched on failure */
    return rc;
}

static int op_load_write(const char *path)
{
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_graph_load_json(path, &g, &err);
    if (rc)
        return rc;
    char *text = NULL;
    rc = af_graph_to_json(g, &text, &err);
    af_free(text);
    af_graph_destroy(g);
    return rc;
}

static void test_graph_load_json_survives_oom(void **state)
{
    (void)state;
    char path[1024];
    src_path(path, sizeof(path), "examples/default.json");
    run_oom("load default.json", path, op_load, 0, AF_ENOMEM, 300);
    src_path(path, sizeof(path), "examples/mlp.json");
    run_oom("load+write mlp.json", path, op_load_write, 0, AF_ENOMEM, 50);
    /* A rejected file cleans up too: the second pass (integer overflow) may give the syntax
     * error when it runs out of memory, never a crash or a leak. */
    src_path(path, sizeof(path), "tests/data/bad/huge_size.json");
    run_oom("load huge_size.json", path, op_load, AF_ESIZE, AF_EPARSE, 3);
    src_path(path, sizeof(path), "tests/data/bad/cycle.json");
    run_oom("load cycle.json", path, op_load, AF_ECYCLE, AF_ECYCLE, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_json_reads_every_field),
        cmocka_unit_test(test_graph_json_roundtrip_examples),
        cmocka_unit_test(test_graph_json_roundtrip_random),
        cmocka_unit_test(test_graph_save_json_is_atomic_and_reloads),
        cmocka_unit_test(test_graph_survives_corrupted_input),
        cmocka_unit_test(test_graph_writer_rejects_nan_attribute),
        cmocka_unit_test(test_graph_json_string_dtype),
        cmocka_unit_test_teardown(test_graph_load_json_survives_oom, reset_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
