/*
 * arenaflow diagnose GRAPH: the seed's pollution hunt (seed 1 §5.1). Runs the graph once with
 * reuse off (safe mode: every tensor its own bytes) and once as planned, records every input at
 * the moment each node reads it (the session's observe hook), and compares the two runs read by
 * read. The first read that differs names the polluted tensor; the tensor that shared its bytes
 * is the one placed over the same arena range whose producer ran between the polluted tensor's
 * producer and that read. --history prints what every arena range hosted.
 *
 * Kernels: "verify" (default) compares checksums of the reads, exactly. A real set (--kernels
 * onednn | reference | real) runs the graph lowered for it (af_kernels_lower: scratch tensors
 * planned too) on the same inputs and weights in both runs (f32 values uniform in [-1, 1),
 * fixed seed: the session's own pattern bits include NaNs, which never compare equal), keeps a
 * copy of every read and compares values within rtol 1e-4 / atol 1e-5 (f32; other dtypes
 * exactly), so kernels whose result depends on where the bytes are still compare.
 *
 * To see it work on a correct plan, --break A=B moves tensor A onto tensor B's offset (a
 * simulated planner bug) and --drop-reuse-edges schedules by data edges only.
 */
#include "tools/run_util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct diag_run {
    const af_graph_t *g;
    const char *set;
    int values;         /* 1: keep copies of the reads (real kernels), 0: checksums */
    int32_t *base;      /* node -> first slot in sums */
    uint64_t *sums;     /* per (node, input): checksum at read time */
    void **copy;        /* per (node, input): the bytes read (values = 1) */
    uint64_t *seq;      /* per node: execution sequence, from 1 */
    atomic_ullong next; /* sequence counter */
} diag_run_t;

/* Observe hook: every node's inputs as it is about to read them. Each node runs once per round,
 * so every slot is written by one worker. */
static int record_reads(void *user, const af_kernel_args_t *a)
{
    diag_run_t *d = user;
    d->seq[a->node] = atomic_fetch_add(&d->next, 1) + 1;
    for (int32_t i = 0; i < a->n_inputs; i++) {
        int32_t k = d->base[a->node] + i;
        size_t n = a->inputs[i] ? (size_t)a->input_bytes[i] : 0;
        d->sums[k] = n ? XXH3_64bits(a->inputs[i], n) : 0;
        if (!d->values || !n)
            continue;
        if (!d->copy[k] && !(d->copy[k] = malloc(n)))
            return AF_ENOMEM;
        memcpy(d->copy[k], a->inputs[i], n);
    }
    return 0;
}

static int diag_init(diag_run_t *d, const af_graph_t *g, const char *set)
{
    int32_t nn = af_graph_node_count(g), slots = 0;
    memset(d, 0, sizeof(*d));
    d->g = g;
    d->set = set;
    d->values = strcmp(set, "verify") != 0;
    d->base = calloc((size_t)nn + 1, sizeof(int32_t));
    d->seq = calloc((size_t)nn + 1, sizeof(uint64_t));
    for (int32_t v = 0; d->base && v < nn; v++) {
        d->base[v] = slots;
        slots += af_graph_node(g, v)->n_inputs;
    }
    d->sums = calloc((size_t)slots + 1, sizeof(uint64_t));
    d->copy = calloc((size_t)slots + 1, sizeof(void *));
    return d->base && d->seq && d->sums && d->copy ? 0 : -1;
}

static void diag_free(diag_run_t *d)
{
    int32_t nn = d->g ? af_graph_node_count(d->g) : 0;
    int32_t slots = nn && d->base ? d->base[nn - 1] + af_graph_node(d->g, nn - 1)->n_inputs : 0;
    for (int32_t k = 0; d->copy && k < slots; k++)
        free(d->copy[k]);
    free(d->copy);
    free(d->base);
    free(d->sums);
    free(d->seq);
}

/* Deterministic f32 values in [-1, 1), the same in every run for a given tensor. */
static void fill_f32(float *p, uint64_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
    }
}

/* Real kernels: f32 weights and inputs get sane values (the same in both runs); returns the
 * input buffers (NULL entries keep the session's pattern), freed by free_data. */
static af_buffer_t *real_data(af_session_t *s, const af_graph_t *g)
{
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        uint64_t n = 0;
        void *c =
            af_graph_tensor(g, t)->dtype == AF_DTYPE_F32 ? af_session_constant(s, t, &n) : NULL;
        if (c)
            fill_f32(c, n / 4, (uint32_t)t);
    }
    int32_t ni = af_session_input_count(s);
    af_buffer_t *in = calloc((size_t)ni + 1, sizeof(*in));
    for (int32_t i = 0; in && i < ni; i++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, af_session_input_tensor(s, i));
        if (ti->dtype != AF_DTYPE_F32 || ti->bytes <= 0 ||
            !(in[i].data = malloc((size_t)ti->bytes)))
            continue;
        in[i].bytes = (uint64_t)ti->bytes;
        fill_f32(in[i].data, in[i].bytes / 4, 0x1000u + (uint32_t)i);
    }
    return in;
}

static void free_data(af_session_t *s, af_buffer_t *in)
{
    for (int32_t i = 0; in && i < af_session_input_count(s); i++)
        free(in[i].data);
    free(in);
}

/* One round of plan p, every read recorded by record_reads. */
static int diag_execute(const af_plan_t *p, diag_run_t *d, int threads, int drop_edges, int history,
                        af_session_stats_t *st, af_history_entry_t **hist, int *n_hist)
{
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.threads = threads;
    eo.kernels = d->set;
    eo.verify = !d->values; /* real kernels: values compared, not checksums */
    eo.history = history;
    eo.debug_ignore_reuse_edges = drop_edges;
    af_executor_t *ex = NULL;
    af_session_t *s = NULL;
    af_error_t err;
    af_error_clear(&err);
    af_session_opts_t so = {.observe = record_reads, .observe_user = d};
    int rc = af_executor_create(&eo, &ex, &err);
    const af_graph_t *g = d->g;
    if (!rc)
        rc = af_session_create(ex, p, &so, &s, &err);
    if (rc) {
        cli_error("diagnose: %s", err.msg[0] ? err.msg : af_strerror(rc));
        af_executor_destroy(ex);
        return -1;
    }
    af_buffer_t *in = d->values ? real_data(s, g) : NULL;
    rc = af_session_run(s, in, NULL, &err);
    free_data(s, in);
    af_session_stats(s, st);
    if (rc && rc != AF_ECORRUPT)
        cli_error("diagnose: round failed: %s", err.msg);
    if (history) {
        int32_t max = af_graph_tensor_count(g) + 1;
        *hist = calloc((size_t)max, sizeof(**hist));
        *n_hist = *hist ? af_session_history(s, *hist, max) : 0;
    }
    af_session_destroy(s);
    af_executor_destroy(ex);
    return rc && rc != AF_ECORRUPT ? -1 : 0;
}

/* Arena range of a tensor in plan p (views through their root); 0 if none. */
static int range_of(const af_plan_t *p, int32_t t, uint64_t *lo, uint64_t *hi)
{
    const af_graph_t *g = af_plan_graph(p);
    int32_t r = af_graph_alias_root(g, t);
    const af_tensor_plan_t *tp = af_plan_tensor(p, r);
    int64_t b = af_graph_tensor(g, t)->bytes;
    if (tp->where != AF_WHERE_ARENA || b <= 0)
        return 0;
    *lo = tp->offset + (uint64_t)af_graph_alias_root_offset(g, t);
    *hi = *lo + (uint64_t)b;
    return 1;
}

/* The tensor that overwrote t's bytes before node `reader` read them in run d. */
static int32_t find_culprit(const af_plan_t *p, const diag_run_t *d, int32_t t, int32_t reader)
{
    const af_graph_t *g = af_plan_graph(p);
    uint64_t lo, hi, olo, ohi;
    if (!range_of(p, t, &lo, &hi))
        return -1;
    int32_t prod = af_graph_tensor(g, t)->producer;
    uint64_t from = prod >= 0 ? d->seq[prod] : 0, to = d->seq[reader];
    int32_t best = -1;
    uint64_t best_seq = 0;
    for (int32_t o = 0; o < af_graph_tensor_count(g); o++) {
        int32_t op = af_graph_tensor(g, o)->producer;
        if (o == t || op < 0 || !range_of(p, o, &olo, &ohi) || ohi <= lo || olo >= hi)
            continue;
        if (af_graph_alias_root(g, o) == af_graph_alias_root(g, t))
            continue; /* a view of the same bytes is not a culprit */
        uint64_t s = d->seq[op];
        if (s > from && s < to && s > best_seq)
            best = o, best_seq = s;
    }
    return best;
}

static void print_history(const af_plan_t *p, const af_history_entry_t *h, int n)
{
    const af_graph_t *g = af_plan_graph(p);
    printf("per-buffer history (arena ranges, in write order):\n");
    for (int i = 0; i < n; i++) {
        uint64_t lo, hi;
        if (!range_of(p, h[i].tensor, &lo, &hi))
            continue;
        printf("  [%10llu, %10llu)  #%-5llu %-24s written by %s\n", (unsigned long long)lo,
               (unsigned long long)hi, (unsigned long long)h[i].seq,
               af_graph_tensor(g, h[i].tensor)->name, af_graph_node(g, h[i].node)->name);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: arenaflow diagnose [GRAPH] [options]\n\n"
            "Runs GRAPH (JSON, ONNX or zoo:NAME; default " RUN_DEFAULT_GRAPH
            ") in safe mode and as planned,\n"
            "compares every read, and names the first polluted tensor and the tensor that\n"
            "shared its bytes.\n\n"
            "options:\n"
            "  --kernels SET        verify (default: checksums compared exactly), or a real set\n"
            "                       (onednn, reference, real: values compared within rtol 1e-4\n"
            "                       / atol 1e-5, on the graph lowered for the set)\n"
            "  --input NAME=DIMS    ONNX: dims of a symbolic input (repeatable)\n"
            "  --threads N          worker threads (default 1: a reproducible order)\n"
            "  --history            print what every arena range hosted, in write order\n"
            "  --break A=B          put tensor A at tensor B's offset (simulated planner bug)\n"
            "  --drop-reuse-edges   schedule by data edges only (unsafe; use --threads 2+)\n"
            "  --config FILE        planner options ([planner] section)\n"
            "  -h, --help           this help\n\n"
            "exit status: 0 no pollution, 1 polluted tensor found or failure, 2 usage\n");
}

static int apply_break(af_plan_t *p, const char *spec)
{
    const af_graph_t *g = af_plan_graph(p);
    char a[256];
    const char *eq = strchr(spec, '=');
    if (!eq || (size_t)(eq - spec) >= sizeof a) {
        cli_error("diagnose: --break wants A=B");
        return -1;
    }
    memcpy(a, spec, (size_t)(eq - spec));
    a[eq - spec] = 0;
    int32_t ta = af_graph_find_tensor(g, a), tb = af_graph_find_tensor(g, eq + 1);
    if (ta < 0 || tb < 0 || af_plan_tensor(p, tb)->where != AF_WHERE_ARENA) {
        cli_error("diagnose: --break %s: unknown tensor or not in the arena", spec);
        return -1;
    }
    return af_plan_debug_set_offset(p, ta, af_plan_tensor(p, tb)->offset) ? -1 : 0;
}

/* Whether read k (of tensor t) saw the same value in both runs. */
static int same_read(const af_graph_t *g, int32_t t, const diag_run_t *a, const diag_run_t *b,
                     int32_t k)
{
    if (a->sums[k] == b->sums[k])
        return 1;
    if (!a->values || !a->copy[k] || !b->copy[k])
        return 0;
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    if (ti->dtype != AF_DTYPE_F32 || ti->bytes <= 0)
        return 0; /* integers and the like: exactly, and the checksums differ */
    const float *x = a->copy[k], *y = b->copy[k];
    for (int64_t i = 0; i < ti->bytes / 4; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= 1e-5 + 1e-4 * fabs((double)x[i])))
            return 0;
    }
    return 1;
}

/* Compares the runs read by read, in the planned run's execution order. */
static int report(const af_plan_t *p, const diag_run_t *safe, const diag_run_t *plan)
{
    const af_graph_t *g = af_plan_graph(p);
    int32_t nn = af_graph_node_count(g), first_node = -1, first_in = -1, bad = 0;
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        for (int32_t i = 0; i < ni->n_inputs; i++) {
            int32_t k = plan->base[v] + i;
            if (same_read(g, ni->inputs[i], safe, plan, k))
                continue;
            bad++;
            if (first_node < 0 || plan->seq[v] < plan->seq[first_node])
                first_node = v, first_in = i;
        }
    }
    int32_t checked = nn ? plan->base[nn - 1] + af_graph_node(g, nn - 1)->n_inputs : 0;
    printf("reads compared  %d (safe run vs planned run)\n", checked);
    if (first_node < 0) {
        printf("no polluted tensor: every read saw the bytes the safe run saw\n");
        return CLI_OK;
    }
    int32_t t = af_graph_node(g, first_node)->inputs[first_in];
    uint64_t lo = 0, hi = 0;
    range_of(p, t, &lo, &hi);
    printf("polluted reads  %d\n", bad);
    printf("first polluted tensor '%s' (arena [%llu, %llu)), read by node '%s'\n",
           af_graph_tensor(g, t)->name, (unsigned long long)lo, (unsigned long long)hi,
           af_graph_node(g, first_node)->name);
    int32_t c = find_culprit(p, plan, t, first_node);
    if (c >= 0) {
        uint64_t clo = 0, chi = 0;
        range_of(p, c, &clo, &chi);
        printf("shared its bytes with '%s' (arena [%llu, %llu)), written by node '%s' before "
               "the read\n",
               af_graph_tensor(g, c)->name, (unsigned long long)clo, (unsigned long long)chi,
               af_graph_node(g, af_graph_tensor(g, c)->producer)->name);
    } else {
        printf("no tensor placed over it was written before the read (the writer is outside "
               "the arena plan)\n");
    }
    return CLI_FAIL;
}

typedef struct diag_args {
    const char *path, *brk, *config, *kernels;
    char *inputs[32];
    int n_inputs;
    long threads;
    int history, drop;
} diag_args_t;

/* Returns 0, CLI_OK after --help, or CLI_USAGE. */
static int parse_args(int argc, char **argv, diag_args_t *d)
{
    *d = (diag_args_t){.threads = 1, .kernels = "verify"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int wv = !strcmp(a, "--threads") || !strcmp(a, "--break") || !strcmp(a, "--config") ||
                 !strcmp(a, "--kernels") || !strcmp(a, "--input");
        if (cli_is_help(a)) {
            usage(stdout);
            return CLI_OK;
        }
        if (wv && i + 1 >= argc) {
            cli_error("diagnose: %s needs a value", a);
            return CLI_USAGE;
        }
        if (!strcmp(a, "--threads")) {
            if (cli_parse_long(argv[++i], &d->threads) || d->threads > 1024) {
                cli_error("diagnose: bad --threads");
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--break")) {
            d->brk = argv[++i];
        } else if (!strcmp(a, "--config")) {
            d->config = argv[++i];
        } else if (!strcmp(a, "--kernels")) {
            d->kernels = argv[++i];
        } else if (!strcmp(a, "--input") && d->n_inputs < 32) {
            d->inputs[d->n_inputs++] = argv[++i];
        } else if (!strcmp(a, "--history")) {
            d->history = 1;
        } else if (!strcmp(a, "--drop-reuse-edges")) {
            d->drop = 1;
        } else if (a[0] == '-' && a[1]) {
            cli_error("diagnose: unknown option '%s' (see 'arenaflow diagnose --help')", a);
            return CLI_USAGE;
        } else if (!d->path) {
            d->path = a;
        } else {
            cli_error("diagnose: more than one graph given");
            return CLI_USAGE;
        }
    }
    if (!af_kernel_set_resolve(d->kernels)) {
        cli_error("diagnose: unknown kernel set '%s'", d->kernels);
        return CLI_USAGE;
    }
    return 0;
}

/* The graph as the runs see it: loaded, and lowered for a real kernel set. */
static af_graph_t *diag_graph(const diag_args_t *d)
{
    const char *path = d->path ? d->path : RUN_DEFAULT_GRAPH;
    af_graph_t *g = d->n_inputs ? cli_load_graph(path, (char **)d->inputs, d->n_inputs)
                                : run_load_graph(path, 0);
    return g && strcmp(d->kernels, "verify") ? run_lower_graph(g, d->kernels, (int32_t)d->threads)
                                             : g;
}

af_graph_t *run_lower_graph(af_graph_t *g, const char *set, int32_t threads)
{
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = set;
    eo.threads = threads;
    af_graph_t *lg = NULL;
    af_error_t err;
    af_error_clear(&err);
    if (af_kernels_lower(&eo, g, &lg, &err))
        cli_error("%s", err.msg);
    af_graph_destroy(g);
    return lg;
}

int cmd_diagnose(int argc, char **argv)
{
    diag_args_t d;
    int rc = parse_args(argc, argv, &d);
    if (rc)
        return rc;
    af_plan_opts_t po;
    af_plan_opts_init(&po);
    if (d.config && cli_load_config(d.config, &po))
        return CLI_FAIL;
    af_graph_t *g = diag_graph(&d);
    if (!g)
        return CLI_FAIL;
    af_plan_opts_t so = po;
    so.safe_mode = 1;
    af_plan_t *ps = NULL, *pp = NULL;
    af_error_t err;
    af_error_clear(&err);
    rc = CLI_FAIL;
    diag_run_t ds, dp;
    memset(&ds, 0, sizeof ds);
    memset(&dp, 0, sizeof dp);
    af_history_entry_t *hs = NULL, *hp = NULL;
    int nhs = 0, nhp = 0;
    af_session_stats_t sts, stp;
    if (af_plan_create(g, &so, &ps, &err) || af_plan_create(g, &po, &pp, &err)) {
        cli_error("diagnose: %s", err.msg);
        goto out;
    }
    if (d.brk && apply_break(pp, d.brk))
        goto out;
    if (af_plan_verify(pp, &err))
        printf("verifier        %s\n", err.msg);
    else
        printf("verifier        plan is valid\n");
    if (diag_init(&ds, g, d.kernels) || diag_init(&dp, g, d.kernels) ||
        diag_execute(ps, &ds, 1, 0, 0, &sts, &hs, &nhs) ||
        diag_execute(pp, &dp, (int)d.threads, d.drop, d.history, &stp, &hp, &nhp))
        goto out;
    printf("kernels         %s%s\n", d.kernels,
           ds.values ? " (values compared within rtol 1e-4 / atol 1e-5)" : " (checksums)");
    printf("safe run        %llu corrupted tensors (arena %llu bytes)\n",
           (unsigned long long)sts.corrupted_tensors, (unsigned long long)af_plan_arena_bytes(ps));
    printf("planned run     %llu corrupted tensors (arena %llu bytes)\n",
           (unsigned long long)stp.corrupted_tensors, (unsigned long long)af_plan_arena_bytes(pp));
    rc = report(pp, &ds, &dp);
    if (d.history)
        print_history(pp, hp, nhp);
out:
    free(hs);
    free(hp);
    diag_free(&ds);
    diag_free(&dp);
    af_plan_destroy(ps);
    af_plan_destroy(pp);
    af_graph_destroy(g);
    return rc;
}
