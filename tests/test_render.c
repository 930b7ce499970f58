/*
 * Tests of the plan renderer (planner/render.c): the SVG is well-formed XML, every placed tensor
 * is exactly one rectangle at the plan's position (or counted in an aggregation cell when the
 * detail cap applies), the comparison draws both plans, names are escaped, the HTML page needs
 * no network, and out-of-memory paths clean up.
 *
 * Well-formedness is checked by a small XML checker written here (no extra package): one root
 * element, matching tags, quoted and unique attributes, valid entity and character references,
 * no raw '<' or '&' in text or values, valid UTF-8. A test feeds it broken documents so it
 * cannot pass everything.
 */
#include "arenaflow/graph.h"
#include "arenaflow/plan.h"
#include "arenaflow/render.h"
#include "tests/randdag.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- a small XML well-formedness checker ------------------------------------------------- */

#define MAX_DEPTH 64
#define MAX_ATTRS 16

typedef struct rect_info {
    int plan;  /* panel index */
    int32_t t; /* data-t */
    double x, y, w, h;
    unsigned n; /* data-n for aggregation cells */
    int agg;
} rect_info_t;

typedef struct xml_doc {
    rect_info_t *rects;
    size_t n_rects, cap;
    int panel;      /* current <g class="panel" data-plan> */
    double unit[2]; /* data-unit of each panel's map */
    double lb_y[2]; /* y1 of the map's lower-bound line */
    int in_map;
} xml_doc_t;

typedef struct attr {
    const char *name, *val;
    size_t nlen, vlen;
} attr_t;

static int utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        if (len == 1 && c < 0x20 && c != '\n' && c != '\t' && c != '\r')
            return 0;
        i += len;
    }
    return 1;
}

/* Checks character data between p and e: no '<', every '&' starts a valid reference. */
static int chars_ok(const char *p, const char *e)
{
    static const char *const ents[] = {"amp;", "lt;", "gt;", "quot;", "apos;"};
    for (; p < e; p++) {
        if (*p == '<')
            return 0;
        if (*p != '&')
            continue;
        int ok = 0;
        for (size_t k = 0; k < sizeof ents / sizeof ents[0] && !ok; k++)
            ok =
                (size_t)(e - p - 1) >= strlen(ents[k]) && !strncmp(p + 1, ents[k], strlen(ents[k]));
        if (!ok && p + 2 < e && p[1] == '#') {
            const char *q = p + 2;
            int hex = *q == 'x';
            q += hex;
            const char *d = q;
            while (q < e && (hex ? strchr("0123456789abcdefABCDEF", *q) : strchr("0123456789", *q)))
                q++;
            ok = q > d && q < e && *q == ';';
        }
        if (!ok)
            return 0;
    }
    return 1;
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == ':' || c == '.';
}

static const char *attr_get(const attr_t *a, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (a[i].nlen == strlen(name) && !strncmp(a[i].name, name, a[i].nlen))
            return a[i].val;
    return NULL;
}

static int attr_is(const attr_t *a, int n, const char *name, const char *val)
{
    const char *v = attr_get(a, n, name);
    return v && !strncmp(v, val, strlen(val)) && v[strlen(val)] == '"';
}

/* Records what the tests look at: rectangles, panels, map units and lower-bound lines. */
static void visit(xml_doc_t *d, const char *name, size_t nlen, const attr_t *a, int na)
{
    if (!d)
        return;
    if (nlen == 1 && name[0] == 'g' && attr_is(a, na, "class", "panel"))
        d->panel = atoi(attr_get(a, na, "data-plan"));
    if (nlen == 3 && !strncmp(name, "svg", 3) && attr_is(a, na, "class", "map") && d->panel < 2) {
        d->unit[d->panel] = strtod(attr_get(a, na, "data-unit"), NULL);
        d->in_map = 1;
    }
    if (nlen == 4 && !strncmp(name, "line", 4) && d->in_map && attr_is(a, na, "class", "lb"))
        d->lb_y[d->panel] = strtod(attr_get(a, na, "y1"), NULL);
    if (nlen != 4 || strncmp(name, "rect", 4))
        return;
    int t = attr_is(a, na, "class", "t"), agg = attr_is(a, na, "class", "agg");
    if (!t && !agg)
        return;
    if (d->n_rects == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 256;
        d->rects = realloc(d->rects, d->cap * sizeof *d->rects);
        assert_non_null(d->rects);
    }
    rect_info_t *r = &d->rects[d->n_rects++];
    r->plan = d->panel;
    r->agg = agg;
    r->t = t ? atoi(attr_get(a, na, "data-t")) : -1;
    r->n = agg ? (unsigned)atoi(attr_get(a, na, "data-n")) : 0;
    r->x = strtod(attr_get(a, na, "x"), NULL);
    r->y = strtod(attr_get(a, na, "y"), NULL);
    r->w = strtod(attr_get(a, na, "width"), NULL);
    r->h = strtod(attr_get(a, na, "height"), NULL);
}

/* Parses one tag's attributes from *pp; returns the count or -1. */
static int parse_attrs(const char **pp, const char *e, attr_t *a)
{
    const char *p = *pp;
    int na = 0;
    for (;;) {
        const char *s = p;
        while (p < e && strchr(" \t\r\n", *p))
            p++;
        if (p >= e || *p == '>' || *p == '/' || *p == '?')
            break;
        if (p == s || !is_name_char(*p) || na == MAX_ATTRS)
            return -1; /* attributes need white space before them */
        a[na].name = p;
        while (p < e && is_name_char(*p))
            p++;
        a[na].nlen = (size_t)(p - a[na].name);
        if (p + 1 >= e || *p != '=' || (p[1] != '"' && p[1] != '\''))
            return -1;
        char q = p[1];
        a[na].val = p + 2;
        const char *end = memchr(p + 2, q, (size_t)(e - p - 2));
        if (!end || !chars_ok(p + 2, end))
            return -1;
        a[na].vlen = (size_t)(end - a[na].val);
        for (int k = 0; k < na; k++)
            if (a[k].nlen == a[na].nlen && !strncmp(a[k].name, a[na].name, a[na].nlen))
                return -1;
        na++;
        p = end + 1;
    }
    *pp = p;
    return na;
}

/* Returns 1 when text[0..n) is a well-formed XML document (no DTD), recording into d. */
static int xml_check(const char *text, size_t n, xml_doc_t *d)
{
    const char *p = text, *e = text + n;
    const char *stack[MAX_DEPTH];
    size_t slen[MAX_DEPTH];
    int depth = 0, roots = 0;
    if (!utf8_ok((const unsigned char *)text, n))
        return 0;
    if (n >= 5 && !strncmp(p, "<?xml", 5)) {
        const char *q = strstr(p, "?>");
        if (!q)
            return 0;
        p = q + 2;
    }
    while (p < e) {
        const char *lt = memchr(p, '<', (size_t)(e - p));
        const char *stop = lt ? lt : e;
        if (!chars_ok(p, stop))
            return 0;
        if (depth == 0)
            for (const char *q = p; q < stop; q++)
                if (!strchr(" \t\r\n", *q))
                    return 0; /* text outside the root element */
        if (!lt)
            break;
        p = lt + 1;
        if (p < e && *p == '!') {
            if (strncmp(p, "!--", 3))
                return 0;
            const char *q = strstr(p + 3, "-->");
            if (!q)
                return 0;
            p = q + 3;
            continue;
        }
        int closing = p < e && *p == '/';
        p += closing;
        const char *name = p;
        while (p < e && is_name_char(*p))
            p++;
        size_t nlen = (size_t)(p - name);
        if (!nlen)
            return 0;
        if (closing) {
            while (p < e && strchr(" \t\r\n", *p))
                p++;
            if (p >= e || *p != '>' || depth == 0 || slen[depth - 1] != nlen ||
                strncmp(stack[depth - 1], name, nlen))
                return 0;
            depth--;
            if (!strncmp(name, "svg", 3) && d)
                d->in_map = 0;
            p++;
            continue;
        }
        attr_t a[MAX_ATTRS];
        int na = parse_attrs(&p, e, a);
        if (na < 0 || p >= e)
            return 0;
        int empty = *p == '/';
        if (empty && (p + 1 >= e || p[1] != '>'))
            return 0;
        if (!empty && *p != '>')
            return 0;
        p += empty ? 2 : 1;
        if (depth == 0 && roots++)
            return 0;
        visit(d, name, nlen, a, na);
        if (!empty) {
            if (depth == MAX_DEPTH)
                return 0;
            stack[depth] = name;
            slen[depth++] = nlen;
        }
    }
    return depth == 0 && roots == 1;
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* noinline: GCC 12 at -O2 takes the returned buffer for a pointer to the local `buf` (a false
 * -Wdangling-pointer once inlined). */
__attribute__((noinline)) static char *render_mem(const af_plan_t *p, const af_plan_t *q,
                                                  const af_render_opts_t *o, int html, size_t *len,
                                                  int *rc)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    af_error_t err;
    *rc = (html ? af_plan_render_html : af_plan_render_svg)(p, q, o, f, &err);
    fclose(f);
    return buf;
}

static af_plan_t *plan_of(const af_graph_t *g, const char *schedule, const char *placer)
{
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (schedule)
        o.schedule = schedule;
    if (placer)
        o.placer = placer;
    af_plan_t *p = NULL;
    af_error_t err;
    assert_int_equal(af_plan_create(g, &o, &p, &err), 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    return p;
}

static int placed(const af_tensor_plan_t *tp)
{
    return tp->where == AF_WHERE_ARENA && tp->bytes > 0 && tp->first >= 0;
}

/*
 * Checks panel k of doc against plan p: every placed tensor is one "t" rectangle at the plan's
 * position or counted in an "agg" cell, nothing else is drawn. Returns the individual count.
 */
static int32_t check_panel(const xml_doc_t *doc, int k, const af_plan_t *p, uint64_t seed)
{
    const af_graph_t *g = af_plan_graph(p);
    int32_t nt = af_graph_tensor_count(g), n_placed = 0, n_t = 0;
    unsigned n_agg = 0;
    char *seen = calloc((size_t)nt + 1, 1);
    double unit = doc->unit[k];
    assert_true(unit >= 1);
    for (size_t i = 0; i < doc->n_rects; i++) {
        const rect_info_t *r = &doc->rects[i];
        if (r->plan != k)
            continue;
        if (r->agg) {
            n_agg += r->n;
            continue;
        }
        if (r->t < 0 || r->t >= nt || seen[r->t]) {
            fprintf(stderr, "seed %llu: bad or repeated data-t %d\n", (unsigned long long)seed,
                    r->t);
            fail();
        }
        seen[r->t] = 1;
        n_t++;
        const af_tensor_plan_t *tp = af_plan_tensor(p, r->t);
        assert_true(placed(tp));
        if (r->x != tp->first || r->w != tp->last + 1 - tp->first ||
            r->y * unit != (double)tp->offset || r->h * unit != (double)tp->bytes) {
            fprintf(stderr,
                    "seed %llu: tensor %d drawn at x=%g w=%g y=%g h=%g (unit %g), plan says "
                    "first=%d last=%d offset=%llu bytes=%llu\n",
                    (unsigned long long)seed, r->t, r->x, r->w, r->y, r->h, unit, tp->first,
                    tp->last, (unsigned long long)tp->offset, (unsigned long long)tp->bytes);
            fail();
        }
    }
    for (int32_t i = 0; i < nt; i++)
        n_placed += placed(af_plan_tensor(p, i));
    free(seen);
    if ((int32_t)n_agg + n_t != n_placed) {
        fprintf(stderr, "seed %llu: %d rectangles + %u aggregated != %d placed tensors\n",
                (unsigned long long)seed, n_t, n_agg, n_placed);
        fail();
    }
    const af_plan_report_t *rep = af_plan_report(p);
    assert_true(doc->lb_y[k] * unit == (double)rep->lower_bound_bytes);
    return n_t;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_render_example_graph_rectangles_match_plan(void **state)
{
    (void)state;
    static const char *const examples[] = {"diamond.json", "mlp.json", "seed2_hotel.json"};
    const char *src = getenv("AF_SOURCE_DIR");
    for (size_t e = 0; e < sizeof examples / sizeof examples[0]; e++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/%s", src ? src : ".", examples[e]);
        af_graph_t *g = NULL;
        af_error_t err;
        assert_int_equal(af_graph_load_json(path, &g, &err), 0);
        af_plan_t *p = plan_of(g, NULL, NULL);
        size_t len;
        int rc;
        char *svg = render_mem(p, NULL, NULL, 0, &len, &rc);
        assert_int_equal(rc, 0);
        xml_doc_t doc = {0};
        assert_true(xml_check(svg, len, &doc));
        int32_t n = check_panel(&doc, 0, p, e);
        /* Small examples are drawn in full: one rectangle per arena tensor. */
        assert_int_equal(n, af_plan_report(p)->arena_tensors);
        free(doc.rects);
        free(svg);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

static void test_render_random_graphs_rectangles_match_plan(void **state)
{
    (void)state;
    af_render_opts_t o;
    af_render_opts_init(&o);
    o.min_area_px = 0; /* no aggregation: every placed tensor is its own rectangle */
    o.max_rects = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        af_graph_t *g = rd_graph(seed, 60);
        assert_non_null(g);
        af_plan_t *p = plan_of(g, NULL, NULL);
        size_t len;
        int rc;
        char *svg = render_mem(p, NULL, &o, 0, &len, &rc);
        assert_int_equal(rc, 0);
        xml_doc_t doc = {0};
        if (!xml_check(svg, len, &doc)) {
            fprintf(stderr, "seed %llu: SVG not well-formed\n", (unsigned long long)seed);
            fail();
        }
        int32_t n_placed = 0;
        for (int32_t i = 0; i < af_graph_tensor_count(g); i++)
            n_placed += placed(af_plan_tensor(p, i));
        assert_int_equal(check_panel(&doc, 0, p, seed), n_placed);
        free(doc.rects);
        free(svg);
        af_plan_destroy(p);
        af_graph_destroy(g);
    }
}

static void test_render_compare_draws_both_plans(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(7, 80);
    af_plan_t *p = plan_of(g, NULL, NULL), *q = plan_of(g, "input", "naive");
    af_render_opts_t o;
    af_render_opts_init(&o);
    o.min_area_px = 0;
    size_t len;
    int rc;
    char *svg = render_mem(p, q, &o, 0, &len, &rc);
    assert_int_equal(rc, 0);
    xml_doc_t doc = {0};
    assert_true(xml_check(svg, len, &doc));
    check_panel(&doc, 0, p, 7);
    check_panel(&doc, 1, q, 7);
    assert_non_null(strstr(svg, "placer naive"));
    free(doc.rects);
    free(svg);
    af_plan_destroy(q);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_render_large_graph_aggregates_and_stays_small(void **state)
{
    (void)state;
    af_graph_t *g = rd_layered_graph(3, 10000);
    assert_non_null(g);
    assert_true(af_graph_tensor_count(g) >= 9000);
    af_plan_t *p = plan_of(g, "input", NULL);
    size_t len;
    int rc;
    char *svg = render_mem(p, NULL, NULL, 0, &len, &rc);
    assert_int_equal(rc, 0);
    xml_doc_t doc = {0};
    assert_true(xml_check(svg, len, &doc));
    int32_t n = check_panel(&doc, 0, p, 3);
    af_render_opts_t o;
    af_render_opts_init(&o);
    assert_true(n <= o.max_rects);
    assert_true(len <= 4u << 20);
    /* With a tight cap the aggregation must take over and the file shrink. */
    o.max_rects = 100;
    size_t len2;
    char *svg2 = render_mem(p, NULL, &o, 0, &len2, &rc);
    assert_int_equal(rc, 0);
    xml_doc_t doc2 = {0};
    assert_true(xml_check(svg2, len2, &doc2));
    assert_int_equal(check_panel(&doc2, 0, p, 3), 100);
    assert_true(len2 < len);
    free(doc.rects);
    free(doc2.rects);
    free(svg);
    free(svg2);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_render_escapes_names(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    assert_int_equal(af_graph_set_name(g, "a<b>&\"c'"), 0);
    const char *names[] = {"in<&>", "mid\"'\xff\xfe", "out]]>"};
    for (int i = 0; i < 3; i++) {
        af_tensor_desc_t d = {0};
        d.name = names[i];
        d.bytes = 1000 * (i + 1);
        d.rank = -1;
        d.kind = i == 0 ? AF_TENSOR_INPUT : i == 2 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE;
        assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
    }
    for (int i = 0; i < 2; i++) {
        af_node_desc_t n = {0};
        n.name = i ? "n&2" : "n<1";
        n.op = "Op<\x01>";
        n.inputs = &names[i];
        n.n_inputs = 1;
        n.outputs = &names[i + 1];
        n.n_outputs = 1;
        assert_int_equal(af_graph_add_node(g, &n, NULL, NULL), 0);
    }
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p = plan_of(g, NULL, NULL);
    for (int html = 0; html < 2; html++) {
        size_t len;
        int rc;
        char *out = render_mem(p, NULL, NULL, html, &len, &rc);
        assert_int_equal(rc, 0);
        const char *s = html ? strstr(out, "<svg") : out;
        const char *e = html ? strstr(out, "</svg>\n<table") : out + len;
        assert_non_null(s);
        assert_non_null(e);
        xml_doc_t doc = {0};
        assert_true(xml_check(s, (size_t)(e - s) + (html ? 6 : 0), &doc));
        check_panel(&doc, 0, p, 0);
        assert_non_null(strstr(out, "in&lt;&amp;&gt;"));
        free(doc.rects);
        free(out);
    }
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_render_html_is_self_contained(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(11, 40);
    af_plan_t *p = plan_of(g, NULL, NULL), *q = plan_of(g, "input", NULL);
    size_t len;
    int rc;
    char *html = render_mem(p, q, NULL, 1, &len, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(strncmp(html, "<!DOCTYPE html>", 15), 0);
    assert_non_null(strstr(html, "<script>"));
    assert_non_null(strstr(html, "</html>"));
    /* The only URL is the SVG namespace name, which browsers never fetch. */
    const char *ns = "http://www.w3.org/2000/svg";
    for (const char *s = html; (s = strstr(s, "http")) != NULL; s++)
        assert_int_equal(strncmp(s, ns, strlen(ns)), 0);
    assert_null(strstr(html, " src="));
    assert_null(strstr(html, " href="));
    const char *s = strstr(html, "<svg"), *e = strstr(html, "</svg>\n<table");
    assert_non_null(s);
    assert_non_null(e);
    xml_doc_t doc = {0};
    assert_true(xml_check(s, (size_t)(e - s) + 6, &doc));
    check_panel(&doc, 0, p, 11);
    check_panel(&doc, 1, q, 11);
    free(doc.rects);
    free(html);
    af_plan_destroy(q);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

static void test_render_checker_rejects_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "<a><b></a></b>",
        "<a x=\"1\" x=\"2\"/>",
        "<a x=1/>",
        "<a>&foo;</a>",
        "<a>1 < 2</a>",
        "<a/><b/>",
        "<a>",
        "text<a/>",
        "<a x=\"<\"/>",
        "<a>\xff</a>",
        "<a x=\"1\"y=\"2\"/>",
        "<a>&#;</a>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (xml_check(bad[i], strlen(bad[i]), NULL)) {
            fprintf(stderr, "checker accepted: %s\n", bad[i]);
            fail();
        }
    const char *good = "<?xml version=\"1.0\"?>\n<a x='1' y=\"&amp;&#8595;\"><!-- c --><b/>t</a>\n";
    assert_true(xml_check(good, strlen(good), NULL));
}

static void test_render_bad_arguments(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(5, 10);
    af_plan_t *p = plan_of(g, NULL, NULL);
    af_error_t err;
    assert_int_equal(af_plan_render_svg(NULL, NULL, NULL, stdout, &err), AF_EINVAL);
    assert_int_equal(af_plan_render_svg(p, NULL, NULL, NULL, &err), AF_EINVAL);
    af_render_opts_t o;
    af_render_opts_init(&o);
    o.max_rects = -1;
    size_t len;
    int rc;
    char *out = render_mem(p, NULL, &o, 0, &len, &rc);
    assert_int_equal(rc, AF_EINVAL);
    free(out);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

/* Allocation n fails: every n until success must return AF_ENOMEM and leak nothing. */
static long fail_at = -1, n_allocs, n_live;

static void *h_malloc(size_t s)
{
    if (fail_at >= 0 && n_allocs++ == fail_at)
        return NULL;
    void *p = malloc(s);
    n_live += p != NULL;
    return p;
}

static void *h_calloc(size_t c, size_t s)
{
    if (fail_at >= 0 && n_allocs++ == fail_at)
        return NULL;
    void *p = calloc(c, s);
    n_live += p != NULL;
    return p;
}

static void *h_realloc(void *q, size_t s)
{
    if (fail_at >= 0 && n_allocs++ == fail_at)
        return NULL;
    void *p = realloc(q, s);
    n_live += q == NULL && p != NULL;
    return p;
}

static void h_free(void *p)
{
    n_live -= p != NULL;
    free(p);
}

static void test_render_out_of_memory_cleans_up(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(9, 30);
    af_plan_t *p = plan_of(g, NULL, NULL);
    af_render_opts_t o;
    af_render_opts_init(&o);
    o.max_rects = 5; /* exercise the detail-cap allocation too */
    int done = 0;
    for (long n = 0; n < 50 && !done; n++) {
        assert_int_equal(af_replace_allocator(h_malloc, h_realloc, h_calloc, h_free), 0);
        fail_at = n;
        n_allocs = n_live = 0;
        size_t len;
        int rc;
        char *out = render_mem(p, p, &o, n % 2, &len, &rc);
        long live = n_live;
        fail_at = -1;
        af_reset_allocator();
        free(out);
        assert_int_equal(live, 0);
        if (rc == 0)
            done = 1;
        else
            assert_int_equal(rc, AF_ENOMEM);
    }
    assert_true(done);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_checker_rejects_malformed),
        cmocka_unit_test(test_render_example_graph_rectangles_match_plan),
        cmocka_unit_test(test_render_random_graphs_rectangles_match_plan),
        cmocka_unit_test(test_render_compare_draws_both_plans),
        cmocka_unit_test(test_render_large_graph_aggregates_and_stays_small),
        cmocka_unit_test(test_render_escapes_names),
        cmocka_unit_test(test_render_html_is_self_contained),
        cmocka_unit_test(test_render_bad_arguments),
        cmocka_unit_test(test_render_out_of_memory_cleans_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
