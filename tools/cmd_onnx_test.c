/*
 * arenaflow onnx-test DIR...: runs ONNX backend test directories — model.onnx plus
 * test_data_set_N/input_K.pb -> output_K.pb, the layout of the onnx package's test data
 * (Debian libonnx-testdata) — through import, planning and a kernel set, and compares every
 * output the way the ONNX backend runner does (numpy.testing.assert_allclose, rtol 1e-3,
 * atol 1e-7, NaN equal to NaN, dtype and shape equal).
 *
 * Per test: "succeeded", "not implemented (reason)" — the model cannot be imported, a tensor
 * file cannot be read (sequences, strings), or the kernel set refuses a node at bind time — or
 * "failed (reason)": a round failed or an output is off (max abs error, which output, the
 * first element out of tolerance); a round a kernel refuses with AF_ENOTSUP (a case only the
 * input values reveal) is "not implemented". A summary line "N passed, N failed, N skipped" ends
 * the run. Inputs are bound by the names in the .pb files (by position when a file has none); the
 * input shapes come from the files of test_data_set_0 and are given to the importer as input
 * dims, so every shape the model leaves symbolic is fixed. A data set whose input shapes
 * differ from the previous one gets its own import and plan. NumPy has no bfloat16, so ONNX's
 * data stores bf16 tensors as uint16 bit patterns: those bind to bf16 inputs and compare with
 * bf16 outputs bit for bit.
 *
 * Exit status: 0 when no test failed, 1 when one did, 2 usage.
 */
#include "arenaflow/onnx.h"
#include "arenaflow/plan.h"
#include "tools/cli.h"
#include "tools/run_data.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_INPUTS 64

typedef struct ot_args {
    char **dirs;
    int n_dirs;
    const char *kernels, *match;
    long threads;
    double rtol, atol;
    int json, quiet, verify;
} ot_args_t;

enum { OT_PASS = 0, OT_FAIL = 1, OT_SKIP = 2 };
static const char *const status_name[] = {"succeeded", "failed", "not implemented"};

typedef struct ot_result {
    int status;
    char reason[AF_ERROR_MSG_MAX + 256];
    double max_abs;
    char output[128];
} ot_result_t;

typedef struct ot_ctx {
    const ot_args_t *a;
    af_executor_t *ex;
    long counts[3];
    json_t *tests; /* --json */
} ot_ctx_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: arenaflow onnx-test DIR... [options]\n\n"
               "Runs ONNX backend test directories: DIR/model.onnx with DIR/test_data_set_N/\n"
               "input_K.pb -> output_K.pb (the format of the onnx test data, e.g. Debian's\n"
               "/usr/share/libonnx-testdata/data/node). A DIR without model.onnx is a folder of\n"
               "such tests, run in name order. Each test prints\n"
               "  succeeded | not implemented (reason) | failed (reason)\n"
               "and the run ends with 'N passed, N failed, N skipped'. Outputs match when\n"
               "|got - want| <= atol + rtol * |want| everywhere (NaN equals NaN), with equal\n"
               "dtype and shape, as the ONNX backend runner checks.\n\n"
               "options:\n"
               "  --kernels SET   kernel set: real (default; the fastest real backend),\n"
               "                  onednn (oneDNN, the reference kernel where it cannot)\n"
               "                  or reference (the naive C kernels)\n"
               "  --threads N     worker threads (default 1)\n"
               "  --rtol X        relative tolerance (default 1e-3)\n"
               "  --atol X        absolute tolerance (default 1e-7)\n"
               "  --match TEXT    only tests whose name contains TEXT\n"
               "  --verify        checksums around every kernel (catches plan corruption)\n"
               "  --quiet         print only tests that did not succeed, and the summary\n"
               "  --json          one JSON object: every test and the counts\n"
               "  -h, --help      this help\n\n"
               "exit status: 0 no test failed, 1 a test failed, 2 usage\n");
}

static int parse_double(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end == s || *end || *out < 0 ? -1 : 0;
}

static int parse_args(int argc, char **argv, ot_args_t *a)
{
    *a = (ot_args_t){.kernels = "real", .threads = 1, .rtol = 1e-3, .atol = 1e-7};
    a->dirs = calloc((size_t)argc, sizeof(char *));
    if (!a->dirs)
        return CLI_FAIL;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int wv = !strcmp(s, "--kernels") || !strcmp(s, "--threads") || !strcmp(s, "--rtol") ||
                 !strcmp(s, "--atol") || !strcmp(s, "--match");
        if (cli_is_help(s)) {
            usage(stdout);
            return 1;
        }
        if (wv && i + 1 >= argc) {
            cli_error("onnx-test: %s needs a value", s);
            return CLI_USAGE;
        }
        const char *v = wv ? argv[++i] : NULL;
        int bad = 0;
        if (!strcmp(s, "--kernels"))
            a->kernels = v;
        else if (!strcmp(s, "--match"))
            a->match = v;
        else if (!strcmp(s, "--threads"))
            bad = cli_parse_long(v, &a->threads) || a->threads < 1 || a->threads > 1024;
        else if (!strcmp(s, "--rtol"))
            bad = parse_double(v, &a->rtol);
        else if (!strcmp(s, "--atol"))
            bad = parse_double(v, &a->atol);
        else if (!strcmp(s, "--json"))
            a->json = 1;
        else if (!strcmp(s, "--quiet"))
            a->quiet = 1;
        else if (!strcmp(s, "--verify"))
            a->verify = 1;
        else if (s[0] == '-' && s[1]) {
            cli_error("onnx-test: unknown option '%s' (see 'arenaflow onnx-test --help')", s);
            return CLI_USAGE;
        } else
            a->dirs[a->n_dirs++] = argv[i];
        if (bad) {
            cli_error("onnx-test: bad value '%s' for %s", v, s);
            return CLI_USAGE;
        }
    }
    if (!a->n_dirs) {
        cli_error("onnx-test: no test directory given (see 'arenaflow onnx-test --help')");
        return CLI_USAGE;
    }
    return 0;
}

/* ---- files -------------------------------------------------------------------------------- */

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Sorted entries of dir that are directories starting with prefix (NULL: any). Caller frees. */
static int list_dirs(const char *dir, const char *prefix, char ***out)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **v = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || (prefix && strncmp(e->d_name, prefix, strlen(prefix))))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!is_dir(path))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof(char *));
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(v, (size_t)n, sizeof(char *), by_name);
    *out = v;
    return n;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Loads DIR/<kind>_0.pb, _1.pb... into ins; returns the count or -1 with the reason. */
static int load_set(const char *set, const char *kind, data_in_t *ins, char *why, size_t cap)
{
    int n = 0;
    for (; n < MAX_INPUTS; n++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_%d.pb", set, kind, n);
        if (!is_file(path))
            break;
        af_error_t err;
        af_error_clear(&err);
        if (af_tensor_load(path, &ins[n].t, &err)) {
            snprintf(why, cap, "%s", err.msg);
            for (int k = 0; k < n; k++)
                af_tensor_clear(&ins[k].t);
            return -1;
        }
        ins[n].name = ins[n].t.name;
    }
    return n;
}

static void clear_set(data_in_t *ins, int n)
{
    for (int k = 0; k < n; k++)
        af_tensor_clear(&ins[k].t);
}

/* ---- one test ----------------------------------------------------------------------------- */

typedef struct ot_model {
    af_graph_t *g;
    af_plan_t *p;
    af_session_t *s;
} ot_model_t;

static void model_free(ot_model_t *m)
{
    af_session_destroy(m->s);
    af_plan_destroy(m->p);
    af_graph_destroy(m->g);
    memset(m, 0, sizeof(*m));
}

/* Imports, plans and binds the model with the input dims of ins. Sets r on failure. */
static int model_open(ot_ctx_t *c, const char *dir, const data_in_t *ins, int n, ot_model_t *m,
                      ot_result_t *r)
{
    char specs[MAX_INPUTS][512];
    const char *spec_p[MAX_INPUTS];
    int ns = 0;
    for (int k = 0; k < n; k++)
        if (ins[k].name && ins[k].name[0]) {
            data_dims_spec(ins[k].name, &ins[k].t, specs[ns], sizeof specs[ns]);
            spec_p[ns] = specs[ns];
            ns++;
        }
    af_onnx_opts_t oo;
    af_onnx_opts_init(&oo);
    oo.inputs = spec_p;
    oo.n_inputs = ns;
    oo.allow_dynamic = ns < n; /* an unnamed input keeps the dims the model declares */
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    af_error_t err;
    af_error_clear(&err);
    int rc = af_onnx_load(path, &oo, &m->g, &err);
    if (rc) {
        r->status = OT_SKIP;
        snprintf(r->reason, sizeof r->reason, "import: %s", err.msg);
        return -1;
    }
    af_plan_opts_t po;
    af_plan_opts_init(&po);
    if ((rc = af_plan_create(m->g, &po, &m->p, &err))) {
        r->status = OT_FAIL;
        snprintf(r->reason, sizeof r->reason, "plan: %s", err.msg);
        return -1;
    }
    af_session_opts_t so = {.keep_outputs = 1};
    if ((rc = af_session_create(c->ex, m->p, &so, &m->s, &err))) {
        r->status = rc == AF_ENOTSUP ? OT_SKIP : OT_FAIL;
        snprintf(r->reason, sizeof r->reason, "%s", err.msg);
        return -1;
    }
    return 0;
}

static int same_dims(const data_in_t *a, const data_in_t *b, int n)
{
    for (int k = 0; k < n; k++)
        if (a[k].t.rank != b[k].t.rank ||
            memcmp(a[k].t.shape, b[k].t.shape, sizeof(int64_t) * (size_t)a[k].t.rank))
            return 0;
    return 1;
}

/* Compares the outputs of the last round with the set's output_K.pb files. */
static void check_outputs(ot_ctx_t *c, const ot_model_t *m, const char *set, ot_result_t *r)
{
    data_in_t want[MAX_INPUTS];
    char why[AF_ERROR_MSG_MAX + 64];
    int n = load_set(set, "output", want, why, sizeof why);
    if (n < 0) {
        r->status = OT_SKIP;
        snprintf(r->reason, sizeof r->reason, "%s", why);
        return;
    }
    for (int k = 0; k < n && r->status == OT_PASS; k++) {
        const char *nm = want[k].name;
        int32_t i = nm && nm[0] ? af_session_find_output(m->s, nm) : k;
        af_tensor_t got;
        if (i < 0 || data_output(m->s, i, &got, why, sizeof why)) {
            r->status = OT_FAIL;
            snprintf(r->reason, sizeof r->reason, "output %d ('%s'): %s", k, nm ? nm : "",
                     i < 0 ? "not a graph output" : why);
            break;
        }
        data_cmp_t cmp;
        data_compare(&got, &want[k].t, c->a->rtol, c->a->atol, &cmp);
        if (cmp.max_abs > r->max_abs) {
            r->max_abs = cmp.max_abs;
            snprintf(r->output, sizeof r->output, "%s", nm ? nm : "");
        }
        if (!cmp.ok) {
            r->status = OT_FAIL;
            if (cmp.why[0])
                snprintf(r->reason, sizeof r->reason, "output '%s': %s", nm ? nm : "", cmp.why);
            else
                snprintf(r->reason, sizeof r->reason,
                         "max abs err %.4g at output '%s'; element %llu is %.9g, expected %.9g",
                         cmp.max_abs, nm ? nm : "", (unsigned long long)cmp.worst, cmp.got,
                         cmp.want);
        }
    }
    clear_set(want, n);
}

static void run_test(ot_ctx_t *c, const char *dir, ot_result_t *r)
{
    memset(r, 0, sizeof(*r));
    char **sets = NULL;
    int n_sets = list_dirs(dir, "test_data_set_", &sets);
    if (n_sets <= 0) {
        r->status = OT_SKIP;
        snprintf(r->reason, sizeof r->reason, "no test_data_set_* directory");
        free_list(sets, n_sets > 0 ? n_sets : 0);
        return;
    }
    ot_model_t m = {0};
    data_in_t ins[MAX_INPUTS], prev[MAX_INPUTS];
    int n_prev = -1;
    for (int k = 0; k < n_sets && r->status == OT_PASS; k++) {
        char set[4096], why[AF_ERROR_MSG_MAX + 64];
        snprintf(set, sizeof set, "%s/%s", dir, sets[k]);
        int n = load_set(set, "input", ins, why, sizeof why);
        if (n < 0) {
            r->status = OT_SKIP;
            snprintf(r->reason, sizeof r->reason, "%s: %s", sets[k], why);
            break;
        }
        if (n_prev != n || !same_dims(ins, prev, n)) {
            model_free(&m);
            if (model_open(c, dir, ins, n, &m, r)) {
                clear_set(ins, n);
                break;
            }
        }
        af_buffer_t bufs[MAX_INPUTS * 2];
        af_error_t err;
        af_error_clear(&err);
        if (af_session_input_count(m.s) > MAX_INPUTS * 2 ||
            data_bind(m.s, ins, n, bufs, why, sizeof why)) {
            r->status = OT_FAIL;
            snprintf(r->reason, sizeof r->reason, "%s: %s", sets[k], why);
        } else if (af_session_run(m.s, bufs, NULL, &err)) {
            /* a kernel that meets an unsupported case only visible in the data (Dropout in
             * training mode with a random mask) refuses the round with AF_ENOTSUP */
            r->status = err.code == AF_ENOTSUP ? OT_SKIP : OT_FAIL;
            snprintf(r->reason, sizeof r->reason, "%s: %s", sets[k], err.msg);
        } else {
            check_outputs(c, &m, set, r);
        }
        if (n_prev >= 0)
            clear_set(prev, n_prev);
        memcpy(prev, ins, sizeof(ins[0]) * (size_t)n);
        n_prev = n;
    }
    if (n_prev >= 0)
        clear_set(prev, n_prev);
    model_free(&m);
    free_list(sets, n_sets);
}

/* ---- driver ------------------------------------------------------------------------------- */

static void report(ot_ctx_t *c, const char *dir, const char *name, const ot_result_t *r)
{
    c->counts[r->status]++;
    if (c->a->json) {
        json_t *o = json_pack("{s:s, s:s, s:s}", "name", name, "dir", dir, "status",
                              r->status == OT_PASS   ? "succeeded"
                              : r->status == OT_FAIL ? "failed"
                                                     : "not_implemented");
        if (o && r->reason[0])
            json_object_set_new(o, "reason", json_string(r->reason));
        if (o && r->output[0])
            json_object_set_new(o, "max_abs_err", json_real(r->max_abs));
        if (o)
            json_array_append_new(c->tests, o);
        return;
    }
    if (c->a->quiet && r->status == OT_PASS)
        return;
    printf("%s: %s%s%s%s\n", name, status_name[r->status], r->reason[0] ? " (" : "", r->reason,
           r->reason[0] ? ")" : "");
    fflush(stdout);
}

static void run_one(ot_ctx_t *c, const char *dir)
{
    const char *slash = strrchr(dir, '/');
    const char *name = slash && slash[1] ? slash + 1 : dir;
    if (c->a->match && !strstr(name, c->a->match))
        return;
    ot_result_t r;
    run_test(c, dir, &r);
    report(c, dir, name, &r);
}

/* DIR is a test (has model.onnx) or a folder of tests. 0, or -1 when it is neither. */
static int run_dir(ot_ctx_t *c, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (is_file(path)) {
        run_one(c, dir);
        return 0;
    }
    char **subs = NULL;
    int n = list_dirs(dir, NULL, &subs), found = 0;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, subs[i]);
        if (!is_file(path))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, subs[i]);
        run_one(c, path);
        found = 1;
    }
    free_list(subs, n > 0 ? n : 0);
    return found ? 0 : -1;
}

int cmd_onnx_test(int argc, char **argv)
{
    ot_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        free(a.dirs);
        return rc == 1 ? CLI_OK : rc;
    }
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    af_error_t err;
    af_error_clear(&err);
    eo.threads = (int32_t)a.threads;
    eo.verify = a.verify;
    eo.max_inflight = 1;
    ot_ctx_t c = {.a = &a};
    if (af_executor_opts_set(&eo, "kernels", a.kernels, &err) ||
        af_executor_create(&eo, &c.ex, &err)) {
        cli_error("onnx-test: %s", err.msg);
        free(a.dirs);
        return CLI_USAGE;
    }
    c.tests = a.json ? json_array() : NULL;
    rc = CLI_OK;
    for (int i = 0; i < a.n_dirs; i++)
        if (run_dir(&c, a.dirs[i])) {
            cli_error("onnx-test: '%s' is neither an ONNX test directory (model.onnx) nor a "
                      "folder of them",
                      a.dirs[i]);
            rc = CLI_USAGE;
        }
    af_executor_destroy(c.ex);
    if (a.json) {
        json_t *o =
            json_pack("{s:s, s:o, s:I, s:I, s:I}", "kernels", eo.kernels, "tests", c.tests,
                      "passed", (json_int_t)c.counts[OT_PASS], "failed",
                      (json_int_t)c.counts[OT_FAIL], "skipped", (json_int_t)c.counts[OT_SKIP]);
        char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    } else {
        printf("%ld passed, %ld failed, %ld skipped\n", c.counts[OT_PASS], c.counts[OT_FAIL],
               c.counts[OT_SKIP]);
    }
    free(a.dirs);
    if (rc)
        return rc;
    return c.counts[OT_FAIL] ? CLI_FAIL : CLI_OK;
}
