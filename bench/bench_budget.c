/*
 * bench_budget: fitting training graphs under a memory budget (issue #18).
 *
 * Graphs: the zoo's training graphs (resnet50-, bert-, vgg16-, vgg19-, mobilenetv2-,
 * unet-train, and two small ones an exact MILP can solve: resmlp-, convnet-train) and training
 * chains of 8..64 unit-cost layers (af_zoo_chain_train), at budgets 0.9, 0.8, ..., 0.3 x the
 * keep-everything peak (the arena of the best plan without a budget). In the same run, every
 * schedule placed and measured by the same planner (af_plan_from_steps):
 * - arenaflow: af_plan_create() with the budget (recomputation; the chain DP on chains);
 * - sqrt(n): Chen et al.'s sqrt(n) checkpointing (budget_baselines.h);
 * - greedy: an XLA-style rematerialiser, cheapest cost per byte freed until the peak fits;
 * - dp-ref: on chains, the chain DP written a second time (budget_baselines.h);
 * - checkmate: the Checkmate MILP solved by CBC within --cbc-time (budget_milp.h), on graphs of
 *   at most --cbc-max-nodes nodes; skipped when cbc is not installed.
 * Extra compute is in % of one plain round (sum of node costs). "over" = the schedule's placed
 * arena is above the budget (infeasible there), "-" = not run.
 *   arenaflow's extra compute is CBC's cutoff (--no-cbc-cutoff: none): it prunes every branch
 *   that cannot beat it, and "optimal, none below arenaflow" means CBC proved that no schedule
 *   of the MILP recomputes less than arenaflow's.
 * Then offload: modelled overhead of recompute alone vs recompute + offload at the same budget
 * (A: bandwidth --bandwidth, compute rate --compute-rate, default 10^12 cost units/s; B: this
 * machine, host link --host-bandwidth, default 2e9 B/s, compute --model-rate); the largest
 * batch that fits each graph's unbudgeted default-batch arena; planning CPU time of
 * bert20-train (1,001 nodes); then this machine's memcpy bandwidth (the host tier's link) and
 * the time model against executed rounds of offload plans (budget_model.h; compute rate
 * --model-rate, default 10^11). Checksum: sum of the arenas of every arenaflow plan.
 *
 * usage: bench_budget [--quick] [--cbc-time S] [--cbc-max-nodes N] [--no-cbc] [--no-cbc-cutoff]
 *                     [--bandwidth B] [--host-bandwidth B] [--compute-rate R] [--no-batch]
 * [--no-chains]
 *                     [--no-timing] [--no-model] [--model-rate R] [--graphs A,B]
 */
#include "arenaflow/plan.h"
#include "budget_baselines.h"
#include "budget_milp.h"
#include "budget_model.h"
#include "arenaflow/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const double ks[] = {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3};
#define NK ((int)(sizeof ks / sizeof ks[0]))

typedef struct cfg {
    int quick, cbc, batch, cbc_max_nodes, chains, timing, model, cbc_cutoff;
    const char *graphs; /* comma-separated training graphs to run, NULL = all */
    double cbc_time, bandwidth, rate, host_bw;
    char dir[256];
} cfg_t;

typedef struct col {
    int run, ok;  /* run: measured; ok: fits the budget */
    double extra; /* % of a plain round */
    uint64_t arena;
    double ms;
} col_t;

/* Acceptance tallies. */
static struct {
    int chain_cells, chain_equal;
    int cbc_opt, cbc_within5;
    int cmp, better, strictly;
    int off_cells, off_30, host_cells, host_30;
    uint64_t checksum;
} T;

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double base_cost(const af_graph_t *g)
{
    double b = 0;
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        double c = af_graph_node(g, v)->cost;
        b += c > 0 ? c : 1;
    }
    return b;
}

/* Places a schedule and judges it against the budget. */
static col_t measure(const af_graph_t *g, const steps_t *s, uint64_t budget)
{
    col_t c = {.run = 1};
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    af_plan_t *p = NULL;
    af_error_t err;
    if (af_plan_from_steps(g, &o, s->v, s->n, &p, &err)) {
        fprintf(stderr, "bench_budget: a baseline schedule was refused: %s\n", err.msg);
        c.run = 0;
        return c;
    }
    const af_plan_report_t *r = af_plan_report(p);
    c.arena = af_plan_arena_bytes(p);
    c.ok = c.arena <= budget;
    c.extra = 100 * r->extra_cost / r->base_cost;
    af_plan_destroy(p);
    return c;
}

/* arenaflow at a budget: extra compute %, or with offload the modelled overhead %. */
static double compute_rate = AF_PLAN_COMPUTE_RATE; /* --compute-rate */

static col_t arenaflow(const af_graph_t *g, uint64_t budget, int offload, double bw,
                       double *overhead)
{
    col_t c = {.run = 1};
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.budget = budget;
    o.offload = offload;
    o.bandwidth = bw;
    o.compute_rate = compute_rate;
    af_plan_t *p = NULL;
    double t0 = cpu_ms();
    int rc = af_plan_create(g, &o, &p, NULL);
    c.ms = cpu_ms() - t0;
    if (rc)
        return c;
    const af_plan_report_t *r = af_plan_report(p);
    c.ok = 1;
    c.arena = af_plan_arena_bytes(p);
    c.extra = r->budget_method ? 100 * r->extra_cost / r->base_cost : 0;
    if (overhead)
        *overhead = r->budget_method ? 100 * (r->modelled_s / r->plain_modelled_s - 1) : 0;
    T.checksum += c.arena;
    af_plan_destroy(p);
    return c;
}

static void cell(char *out, size_t n, const col_t *c)
{
    if (!c->run)
        snprintf(out, n, "-");
    else if (!c->ok)
        snprintf(out, n, "over (%.0f MiB)", (double)c->arena / 1048576);
    else
        snprintf(out, n, "%.2f", c->extra);
}

/* The four result cells of a table row (48, 48, 48 and 64 bytes). */
static void row_cells(const col_t *a, const col_t *chen, const col_t *greedy, const col_t *cm,
                      const char *st, char *ca, char *cb, char *cc, char *cd)
{
    cell(ca, 48, a);
    cell(cb, 48, chen);
    cell(cc, 48, greedy);
    if (cm->run)
        snprintf(cd, 64, "%.2f (%s%s)", cm->extra, st, cm->ok ? "" : ", placed over");
    else
        snprintf(cd, 64, "%s", st);
    if (!a->ok)
        snprintf(ca, 48, "refused");
}

/* Cells where arenaflow needs more extra compute than a baseline that fits, or does not fit
 * where it does: listed after the summary. */
static char worse_list[4096];

/* Compares arenaflow with a baseline column (name) in row `row` at budget factor k:
 * better-or-equal wherever the baseline fits. */
static void tally(const col_t *a, const col_t *b, const char *name, const char *row, double k)
{
    if (!b->run || !b->ok)
        return;
    T.cmp++;
    if (a->ok && a->extra <= b->extra + 1e-9)
        T.better++;
    if (a->ok && a->extra < b->extra - 1e-9)
        T.strictly++;
    if (!a->ok || a->extra > b->extra + 1e-9) {
        size_t at = strlen(worse_list);
        snprintf(worse_list + at, sizeof worse_list - at,
                 "  %s at %.1f: arenaflow %s%.4f, %s %.4f\n", row, k, a->ok ? "" : "refused, ",
                 a->extra, name, b->extra);
    }
}

/* CBC on the Checkmate MILP; unless --no-cbc-cutoff, arenaflow's plan (a, when it fits) is the
 * cutoff a solution must beat. */
static col_t checkmate(const cfg_t *c, const af_graph_t *g, const int32_t *order, uint64_t budget,
                       const col_t *a, const char **status)
{
    col_t r = {0};
    *status = "-";
    if (!c->cbc || af_graph_node_count(g) > c->cbc_max_nodes)
        return r;
    milp_res_t m;
    double cut = c->cbc_cutoff && a->ok ? a->extra / 100 * base_cost(g) : -1;
    milp_solve(g, order, budget, c->cbc_time, cut, c->dir, &m);
    static const char *const names[] = {"optimal", "time limit", "infeasible", "no answer",
                                        "optimal, none below arenaflow"};
    *status = names[m.status];
    if (m.status == 4) { /* proven: the optimum is arenaflow's value (or above it) */
        r.run = r.ok = 1;
        r.extra = a->extra;
        r.arena = a->arena;
        return r;
    }
    if (m.status <= 1) {
        r.run = 1;
        r.ok = 1;
        r.extra = 100 * m.extra / base_cost(g);
        col_t placed = measure(g, &m.steps, budget);
        r.arena = placed.arena;
        r.ok = placed.run && placed.ok; /* its schedule, placed by the planner, fits */
    }
    free(m.steps.v);
    return r;
}

/* Keep-everything plan: its arena and order. */
static uint64_t unbudgeted(const af_graph_t *g, int32_t **order)
{
    af_plan_t *p = NULL;
    if (af_plan_create(g, NULL, &p, NULL))
        abort();
    uint64_t a = af_plan_arena_bytes(p);
    int32_t n = af_graph_node_count(g);
    *order = malloc((size_t)n * sizeof(int32_t));
    memcpy(*order, af_plan_order(p), (size_t)n * sizeof(int32_t));
    af_plan_destroy(p);
    return a;
}

/* ---- 1. chains ---------------------------------------------------------------------------- */

static void chains(const cfg_t *c)
{
    static const int ns[] = {8, 16, 32, 64};
    const int64_t elems = 16384; /* 64 KiB per activation and gradient */
    const uint64_t unit = (uint64_t)elems * 4;
    printf("== 1. training chains (unit-cost layers, %llu KiB tensors): extra compute, %% of a "
           "plain round\n\n",
           (unsigned long long)unit / 1024);
    printf("| layers | budget | units | dp-ref | arenaflow | sqrt(n) | greedy | checkmate (CBC) |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (size_t q = 0; q < sizeof ns / sizeof ns[0] && (!c->quick || ns[q] <= 16); q++) {
        int n = ns[q];
        af_graph_t *g = NULL;
        if (af_zoo_chain_train(n, elems, &g, NULL))
            abort();
        int32_t *order;
        uint64_t peak = unbudgeted(g, &order);
        double base = base_cost(g);
        for (int k = 0; k < NK; k++) {
            uint64_t units = (uint64_t)(ks[k] * (double)(peak / unit)), budget = units * unit;
            int ref = bl_chain_opt(n, (int)units);
            col_t a = arenaflow(g, budget, 0, c->bandwidth, NULL);
            steps_t s1 = {0}, s2 = {0};
            bl_chen(g, order, 0, &s1);
            col_t chen = measure(g, &s1, budget);
            bl_greedy(g, order, budget, &s2);
            col_t greedy = measure(g, &s2, budget);
            const char *st;
            col_t cm = checkmate(c, g, order, budget, &a, &st);
            char ca[48], cb[48], cc[48], cd[64], cr[32];
            row_cells(&a, &chen, &greedy, &cm, st, ca, cb, cc, cd);
            if (ref >= 0)
                snprintf(cr, sizeof cr, "%.2f", 100.0 * ref / base);
            else
                snprintf(cr, sizeof cr, "infeasible");
            printf("| %d | %.1f | %llu | %s | %s | %s | %s | %s |\n", n, ks[k],
                   (unsigned long long)units, cr, ca, cb, cc, cd);
            T.chain_cells++;
            T.chain_equal += (ref < 0 && !a.ok) ||
                             (ref >= 0 && a.ok && (int)(a.extra * base / 100 + 0.5) == ref);
            if (cm.run && !strncmp(st, "optimal", 7)) {
                T.cbc_opt++;
                T.cbc_within5 += a.ok && a.extra <= cm.extra * 1.05 + 1e-9;
            }
            char row[32];
            snprintf(row, sizeof row, "chain %d", n);
            tally(&a, &chen, "sqrt(n)", row, ks[k]);
            tally(&a, &greedy, "greedy", row, ks[k]);
            free(s1.v), free(s2.v);
        }
        free(order);
        af_graph_destroy(g);
    }
    printf("\n");
}

/* ---- 2 + 3. training graphs: recompute vs baselines, offload vs recompute ------------------ */

static const char *const train_graphs[] = {"resnet50-train", "bert-train",        "vgg16-train",
                                           "vgg19-train",    "mobilenetv2-train", "unet-train",
                                           "resmlp-train",   "convnet-train"};
#define N_TRAIN ((int)(sizeof train_graphs / sizeof train_graphs[0]))

/* 1 when training graph gi is to run (--graphs, --quick). */
static int wanted(const cfg_t *c, int gi)
{
    if (c->graphs) {
        size_t n = strlen(train_graphs[gi]);
        for (const char *p = c->graphs; (p = strstr(p, train_graphs[gi])); p += n)
            if ((p == c->graphs || p[-1] == ',') && (p[n] == ',' || !p[n]))
                return 1;
        return 0;
    }
    return !c->quick || gi <= 1;
}

static af_graph_t *zoo(const char *name, int32_t batch)
{
    af_zoo_opts_t zo;
    af_zoo_opts_init(&zo);
    zo.batch = batch;
    af_graph_t *g = NULL;
    af_error_t err;
    if (af_zoo_build(name, &zo, &g, &err)) {
        fprintf(stderr, "bench_budget: %s: %s\n", name, err.msg);
        exit(1);
    }
    return g;
}

typedef struct offrow {
    double rec, off, host; /* modelled overhead % (host: this machine's link and rate) */
    int rec_ok, off_ok, host_ok;
} offrow_t;

static void training(const cfg_t *c, offrow_t off[N_TRAIN][NK])
{
    printf("== 2. training graphs: extra compute, %% of a plain round (arenaflow: planning CPU "
           "ms)\n\n");
    printf("| graph | nodes | budget | MiB | arenaflow | ms | sqrt(n) | greedy | checkmate (CBC) "
           "|\n|---|---|---|---|---|---|---|---|---|\n");
    for (int gi = 0; gi < N_TRAIN; gi++) {
        if (!wanted(c, gi))
            continue;
        af_graph_t *g = zoo(train_graphs[gi], 0);
        int32_t *order;
        uint64_t peak = unbudgeted(g, &order);
        steps_t s1 = {0};
        bl_chen(g, order, 0, &s1);
        for (int k = 0; k < NK; k++) {
            uint64_t budget = (uint64_t)(ks[k] * (double)peak);
            double ovr = 0, ovo = 0;
            col_t a = arenaflow(g, budget, 0, c->bandwidth, &ovr);
            col_t ao = arenaflow(g, budget, 1, c->bandwidth, &ovo);
            double ovh = 0, rate = compute_rate;
            compute_rate = c->rate;
            col_t ah = arenaflow(g, budget, 1, c->host_bw, &ovh);
            compute_rate = rate;
            off[gi][k] = (offrow_t){ovr, ovo, ovh, a.ok, ao.ok, ah.ok};
            col_t chen = measure(g, &s1, budget);
            steps_t s2 = {0};
            bl_greedy(g, order, budget, &s2);
            col_t greedy = measure(g, &s2, budget);
            const char *st;
            col_t cm = checkmate(c, g, order, budget, &a, &st);
            char ca[48], cb[48], cc[48], cd[64];
            row_cells(&a, &chen, &greedy, &cm, st, ca, cb, cc, cd);
            printf("| %s | %d | %.1f | %.0f | %s | %.0f | %s | %s | %s |\n", train_graphs[gi],
                   af_graph_node_count(g), ks[k], (double)budget / 1048576, ca, a.ms, cb, cc, cd);
            if (cm.run && !strncmp(st, "optimal", 7)) {
                T.cbc_opt++;
                T.cbc_within5 += a.ok && a.extra <= cm.extra * 1.05 + 1e-9;
            }
            tally(&a, &chen, "sqrt(n)", train_graphs[gi], ks[k]);
            tally(&a, &greedy, "greedy", train_graphs[gi], ks[k]);
            free(s2.v);
        }
        free(s1.v);
        free(order);
        af_graph_destroy(g);
    }
    printf("\n");
}

/* "reduction" cell of recompute-only overhead rec against offload's off (tallied in *n, *n30). */
static void reduction(const offrow_t *r, double off, int off_ok, char *d, size_t n, int *cells,
                      int *c30)
{
    snprintf(d, n, "-");
    if (r->rec_ok && off_ok && r->rec > 0) {
        snprintf(d, n, "%.0f%%", 100 * (1 - off / r->rec));
        ++*cells;
        *c30 += off <= 0.7 * r->rec;
    }
}

static void offload_table(const cfg_t *c, offrow_t off[N_TRAIN][NK])
{
    printf("== 3. offload: modelled overhead of one round, %% over a plain round (A: bandwidth "
           "%.3g B/s, compute %.3g cost units/s; B, this machine: host link %.3g B/s (memcpy: "
           "section 6), compute %.3g cost units/s)\n\n",
           c->bandwidth, compute_rate, c->host_bw, c->rate);
    printf(
        "| graph | budget | recompute only | A: recompute + offload | reduction | B: recompute + "
        "offload | reduction |\n|---|---|---|---|---|---|---|\n");
    for (int gi = 0; gi < N_TRAIN; gi++)
        for (int k = 0; k < NK && wanted(c, gi); k++) {
            const offrow_t *r = &off[gi][k];
            char a[32], b[32], h[32], d[32], d2[32];
            snprintf(a, sizeof a, r->rec_ok ? "%.3f" : "refused", r->rec);
            snprintf(b, sizeof b, r->off_ok ? "%.3f" : "refused", r->off);
            snprintf(h, sizeof h, r->host_ok ? "%.3f" : "refused", r->host);
            reduction(r, r->off, r->off_ok, d, sizeof d, &T.off_cells, &T.off_30);
            reduction(r, r->host, r->host_ok, d2, sizeof d2, &T.host_cells, &T.host_30);
            printf("| %s | %.1f | %s | %s | %s | %s | %s |\n", train_graphs[gi], ks[k], a, b, d, h,
                   d2);
        }
    printf("\n");
}

/* ---- 4. largest batch under a fixed budget -------------------------------------------------- */

/* 1 when graph `name` at `batch` plans within budget with the given passes. */
static int fits(const char *name, int32_t batch, uint64_t budget, int recompute, int offload)
{
    af_graph_t *g = zoo(name, batch);
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.budget = budget;
    o.recompute = recompute;
    o.offload = offload;
    af_plan_t *p = NULL;
    int ok = af_plan_create(g, &o, &p, NULL) == 0;
    af_plan_destroy(p);
    af_graph_destroy(g);
    return ok;
}

static int32_t largest_batch(const char *name, uint64_t budget, int recompute, int offload)
{
    int32_t lo = 0, hi = 1;
    while (hi <= 1024 && fits(name, hi, budget, recompute, offload))
        lo = hi, hi *= 2;
    while (hi - lo > 1) {
        int32_t mid = lo + (hi - lo) / 2;
        if (fits(name, mid, budget, recompute, offload))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void batches(const cfg_t *c)
{
    printf("== 4. largest batch that fits a fixed budget (the graph's unbudgeted arena at its "
           "default batch)\n\n");
    printf("| graph | default batch | budget MiB | no rewrite | recompute | recompute + "
           "offload |\n|---|---|---|---|---|---|\n");
    for (int gi = 0; gi < N_TRAIN; gi++) {
        if (!wanted(c, gi) || (c->quick && gi))
            continue;
        af_graph_t *g = zoo(train_graphs[gi], 0);
        int32_t *order;
        uint64_t budget = unbudgeted(g, &order);
        int32_t def = af_graph_tensor(g, af_graph_find_tensor(g, "image") >= 0
                                             ? af_graph_find_tensor(g, "image")
                                             : 0)
                          ->shape[0];
        free(order);
        af_graph_destroy(g);
        printf("| %s | %d | %.0f | %d | %d | %d |\n", train_graphs[gi], def,
               (double)budget / 1048576, largest_batch(train_graphs[gi], budget, 0, 0),
               largest_batch(train_graphs[gi], budget, 1, 0),
               largest_batch(train_graphs[gi], budget, 1, 1));
        fflush(stdout);
    }
    printf("\n");
}

/* ---- 5. planning time of a 1,000-node training graph -------------------------------------- */

static double timing(const cfg_t *c)
{
    af_graph_t *g = zoo("bert20-train", 0);
    int32_t *order;
    uint64_t peak = unbudgeted(g, &order);
    free(order);
    printf("== 5. planning time, bert20-train (%d nodes), CPU ms (median of 3)\n\n",
           af_graph_node_count(g));
    printf("| budget | MiB | result | recompute ms | + offload ms |\n|---|---|---|---|---|\n");
    double worst = 0;
    for (int k = 0; k < NK; k++) {
        uint64_t budget = (uint64_t)(ks[k] * (double)peak);
        double ms[2][3];
        int ok = 0;
        for (int off = 0; off < 2; off++)
            for (int r = 0; r < 3; r++) {
                col_t a = arenaflow(g, budget, off, c->bandwidth, NULL);
                ms[off][r] = a.ms;
                ok = a.ok;
            }
        for (int off = 0; off < 2; off++) /* median of 3 */
            for (int i = 0; i < 3; i++)
                for (int j = i + 1; j < 3; j++)
                    if (ms[off][j] < ms[off][i]) {
                        double t = ms[off][i];
                        ms[off][i] = ms[off][j];
                        ms[off][j] = t;
                    }
        worst = ms[0][1] > worst ? ms[0][1] : worst;
        worst = ms[1][1] > worst ? ms[1][1] : worst;
        printf("| %.1f | %.0f | %s | %.0f | %.0f |\n", ks[k], (double)budget / 1048576,
               ok ? "planned" : "refused (smallest budget named)", ms[0][1], ms[1][1]);
    }
    printf("\n");
    af_graph_destroy(g);
    return worst;
}

/* ---- 6. the time model against executed rounds -------------------------------------------- */

static void model_check(const cfg_t *c)
{
    static const struct {
        const char *graph;
        double k;
    } cells[] = {{"convnet-train", 0.8},
                 {"resnet50-train", 0.5},
                 {"unet-train", 0.6},
                 {"mobilenetv2-train", 0.5}};
    double bw = bm_memcpy_bandwidth((size_t)64 << 20, 9);
    printf("== 6. the host link and the time model on this machine: memcpy of 64 MiB (the swap "
           "kernels' copy), median of 9: %.2f GB/s; "
           "offload plans made at that bandwidth and compute %.3g cost units/s, executed: "
           "compute nodes hold one compute stream for cost / rate seconds (asleep), SwapOut/SwapIn "
           "run the memcpy kernels on the other workers (8 threads, mostly asleep); median of 5 "
           "rounds\n\n",
           bw / 1e9, c->rate);
    printf(
        "| graph | budget | swapped MiB | swap kernel GB/s | plain modelled s | plain measured s "
        "| modelled s | measured s | measured / modelled, over the plain plan's |\n"
        "|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        if (c->graphs && !strstr(c->graphs, cells[i].graph))
            continue;
        af_graph_t *g = zoo(cells[i].graph, 0);
        int32_t *order;
        uint64_t peak = unbudgeted(g, &order);
        free(order);
        af_plan_opts_t o;
        af_plan_opts_init(&o);
        o.compute_rate = c->rate;
        o.bandwidth = bw;
        af_plan_t *p0 = NULL, *p = NULL;
        if (af_plan_create(g, &o, &p0, NULL))
            abort();
        o.budget = (uint64_t)(cells[i].k * (double)peak);
        o.offload = 1;
        if (af_plan_create(g, &o, &p, NULL)) {
            printf("| %s | %.1f | refused | | | | | |\n", cells[i].graph, cells[i].k);
        } else {
            const af_plan_report_t *r = af_plan_report(p);
            double bw0, bw1, m0 = bm_measure_round(p0, c->rate, 5, &bw0);
            double m = bm_measure_round(p, c->rate, 5, &bw1);
            printf("| %s | %.1f | %.1f | %.2f | %.4f | %.4f | %.4f | %.4f | %.3f |\n",
                   cells[i].graph, cells[i].k, (double)r->swapped_bytes / 1048576, bw1 / 1e9,
                   r->plain_modelled_s, m0, r->modelled_s, m,
                   (m / r->modelled_s) / (m0 / r->plain_modelled_s));
            T.checksum += af_plan_arena_bytes(p);
        }
        af_plan_destroy(p);
        af_plan_destroy(p0);
        af_graph_destroy(g);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    cfg_t c = {.cbc = 1,
               .batch = 1,
               .cbc_max_nodes = 150,
               .cbc_time = 30,
               .chains = 1,
               .timing = 1,
               .model = 1,
               .rate = 1e11,
               .host_bw = 2e9,
               .cbc_cutoff = 1,
               .bandwidth = AF_PLAN_BANDWIDTH};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            c.quick = 1, c.cbc_time = 5;
        else if (!strcmp(argv[i], "--no-cbc"))
            c.cbc = 0;
        else if (!strcmp(argv[i], "--no-batch"))
            c.batch = 0;
        else if (!strcmp(argv[i], "--no-chains"))
            c.chains = 0;
        else if (!strcmp(argv[i], "--no-timing"))
            c.timing = 0;
        else if (!strcmp(argv[i], "--no-cbc-cutoff"))
            c.cbc_cutoff = 0;
        else if (!strcmp(argv[i], "--host-bandwidth") && i + 1 < argc)
            c.host_bw = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-model"))
            c.model = 0;
        else if (!strcmp(argv[i], "--compute-rate") && i + 1 < argc)
            compute_rate = atof(argv[++i]);
        else if (!strcmp(argv[i], "--model-rate") && i + 1 < argc)
            c.rate = atof(argv[++i]);
        else if (!strcmp(argv[i], "--graphs") && i + 1 < argc)
            c.graphs = argv[++i];
        else if (!strcmp(argv[i], "--cbc-time") && i + 1 < argc)
            c.cbc_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--cbc-max-nodes") && i + 1 < argc)
            c.cbc_max_nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bandwidth") && i + 1 < argc)
            c.bandwidth = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_budget [--quick] [--cbc-time S] [--cbc-max-nodes N] "
                            "[--no-cbc] [--no-cbc-cutoff] [--bandwidth B] [--host-bandwidth B] "
                            "[--compute-rate R] [--no-batch] "
                            "[--no-chains] [--no-timing] [--no-model] [--model-rate R] "
                            "[--graphs A,B]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* a long run shows its rows as they come */
    if (c.cbc && !milp_have_cbc()) {
        printf("cbc not found: the checkmate column is skipped (Debian package coinor-cbc)\n\n");
        c.cbc = 0;
    }
    snprintf(c.dir, sizeof c.dir, "/tmp/bench_budget.%d", (int)getpid());
    char mk[300];
    snprintf(mk, sizeof mk, "mkdir -p %s", c.dir);
    if (c.cbc && system(mk) != 0)
        c.cbc = 0;
    printf("bench_budget: budgets %s x the keep-everything peak; checkmate: CBC, %.0f s limit, "
           "graphs up to %d nodes\n\n",
           "0.9 .. 0.3", c.cbc_time, c.cbc_max_nodes);
    static offrow_t off[N_TRAIN][NK];
    if (c.chains)
        chains(&c);
    training(&c, off);
    fflush(stdout);
    offload_table(&c, off);
    fflush(stdout);
    if (c.batch)
        batches(&c);
    double worst = c.timing ? timing(&c) : 0;
    if (c.model)
        model_check(&c);
    printf("summary: chains %d/%d cells equal to the DP reference; CBC proved the optimum in %d "
           "cells, arenaflow within 5%% in %d; against sqrt(n) and greedy, %d cells where the "
           "baseline fits: arenaflow fits and needs no more extra compute in %d (less in %d, "
           "equal in %d; worse or refused in %d); "
           "offload at least 30%% below recompute alone in %d of %d cells (A), %d of %d (B, this "
           "machine); planning a 1,001-node "
           "training graph: at most %.0f CPU ms\n",
           T.chain_equal, T.chain_cells, T.cbc_opt, T.cbc_within5, T.cmp, T.better, T.strictly,
           T.better - T.strictly, T.cmp - T.better, T.off_30, T.off_cells, T.host_30, T.host_cells,
           worst);
    if (worse_list[0])
        printf("cells where arenaflow is worse than a baseline that fits:\n%s", worse_list);
    printf("checksum %llu\n", (unsigned long long)T.checksum);
    snprintf(mk, sizeof mk, "rm -rf %s", c.dir);
    if (system(mk) != 0)
        return 1;
    return 0;
}
