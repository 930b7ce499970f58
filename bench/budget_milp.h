/*
 * The Checkmate mixed-integer formulation (Jain et al., MLSys 2020, "Checkmate: Breaking the
 * Memory Wall with Optimal Tensor Rematerialization") for bench_budget, solved with CBC (Debian
 * coinor-cbc, the `cbc` binary): a reference of the benchmark only, never used by the library.
 *
 * Stages t = 0..n-1 follow the base order; in stage t node t is computed (R[t][t] = 1) and any
 * earlier node may be recomputed (R[t][i]); S[t][i] = node i's outputs are kept from stage t-1
 * into t. Constraints: S[t+1][i] <= S[t][i] + R[t][i]; R[t][k] <= R[t][i] + S[t][i] for every
 * dependency i of k; memory U[t][k] after computing k in stage t:
 *   U[t][0] = static(t) + sum_i m_i S[t][i] + m_0 R[t][0],
 *   U[t][k] = U[t][k-1] - freed(t, k-1) + m_k R[t][k],  freed(t, k) = sum m_i FREE[t][i][k]
 * over i in deps(k) and k itself, FREE[t][i][k] = R[t][k] (1 - S[t+1][i]) prod over later
 * users j of i (1 - R[t][j]), linearised as in the paper (1 - FREE <= hazards <= max (1 - FREE));
 * U[t][k] <= budget. Objective: sum of c_i R[t][i].
 *
 * Mapping to this planner's graphs: m_i = arena bytes of node i's outputs that are not graph
 * outputs; graph outputs are static from the stage that makes them, graph inputs static always;
 * a reader of a view depends on the node making the view and on the producer of its root. On
 * single-output graphs (the chains) this is exactly the planner's memory model; where a node has
 * several outputs Checkmate frees them together (later than the planner may), so its optimum can
 * then be slightly above the planner's true optimum.
 */
#ifndef ARENAFLOW_BENCH_BUDGET_MILP_H
#define ARENAFLOW_BENCH_BUDGET_MILP_H

#include "arenaflow/plan.h"
#include "budget_baselines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct milp_res {
    int status;    /* 0 optimal, 1 feasible (stopped on time), 2 infeasible, 3 no answer,
                      4 nothing beats the cutoff (proven) */
    double extra;  /* objective minus one plain round, in cost units */
    steps_t steps; /* the schedule of the solution (status 0 or 1) */
    double secs;
} milp_res_t;

typedef struct milp_graph {
    int n;
    double *m;          /* memory per stage node, in units */
    double *c;          /* cost */
    double *stat;       /* static memory of stage t */
    int *dep_off, *dep; /* deps of k (stage indices < k) */
    int *use_off, *use; /* users of i (stage indices > i) */
} milp_graph_t;

static int milp_has(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

static void milp_build(const af_graph_t *g, const int32_t *order, double unit, milp_graph_t *G)
{
    int n = af_graph_node_count(g), nt = af_graph_tensor_count(g);
    int *st = malloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        st[order[i]] = i;
    G->n = n;
    G->m = calloc((size_t)n + 1, sizeof(double));
    G->c = calloc((size_t)n + 1, sizeof(double));
    G->stat = calloc((size_t)n + 1, sizeof(double));
    double inputs = 0, *pinned = calloc((size_t)n + 1, sizeof(double));
    for (int t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        double b = (double)bl_size(g, t) / unit;
        if (ti->producer < 0)
            inputs += b;
        else if (ti->kind == AF_TENSOR_OUTPUT)
            pinned[st[ti->producer]] += b;
        else
            G->m[st[ti->producer]] += b;
    }
    double pin = 0;
    for (int i = 0; i < n; i++) {
        pin += pinned[i];
        G->stat[i] = inputs + pin;
        const af_node_info_t *nd = af_graph_node(g, order[i]);
        G->c[i] = nd->cost > 0 ? nd->cost : 1;
    }
    int *tmp = malloc(sizeof(int) * (size_t)(4 * (nt + n) + 8)), nd_tot = 0;
    G->dep_off = calloc((size_t)n + 2, sizeof(int));
    int cap = 1024;
    G->dep = malloc(sizeof(int) * (size_t)cap);
    for (int k = 0; k < n; k++) {
        const af_node_info_t *nd = af_graph_node(g, order[k]);
        int cnt = 0;
        for (int j = 0; j < nd->n_inputs; j++) {
            int32_t x = nd->inputs[j], r = af_graph_alias_root(g, x);
            int32_t ps[2] = {af_graph_tensor(g, x)->producer, af_graph_tensor(g, r)->producer};
            for (int q = 0; q < 2; q++)
                if (ps[q] >= 0 && !milp_has(tmp, cnt, st[ps[q]]))
                    tmp[cnt++] = st[ps[q]];
        }
        if (nd_tot + cnt > cap) {
            cap = 2 * (nd_tot + cnt);
            G->dep = realloc(G->dep, sizeof(int) * (size_t)cap);
        }
        memcpy(G->dep + nd_tot, tmp, sizeof(int) * (size_t)cnt);
        nd_tot += cnt;
        G->dep_off[k + 1] = nd_tot;
    }
    G->use_off = calloc((size_t)n + 2, sizeof(int));
    G->use = malloc(sizeof(int) * (size_t)(nd_tot + 1));
    for (int e = 0; e < nd_tot; e++)
        G->use_off[G->dep[e] + 1]++;
    for (int i = 0; i < n; i++)
        G->use_off[i + 1] += G->use_off[i];
    int *fill = calloc((size_t)n + 1, sizeof(int));
    for (int k = 0; k < n; k++)
        for (int e = G->dep_off[k]; e < G->dep_off[k + 1]; e++) {
            int i = G->dep[e];
            G->use[G->use_off[i] + fill[i]++] = k;
        }
    free(fill), free(tmp), free(st), free(pinned);
}

static void milp_free(milp_graph_t *G)
{
    free(G->m), free(G->c), free(G->stat), free(G->dep_off), free(G->dep), free(G->use_off);
    free(G->use);
}

/* The FREE linearisation rows of (t, i, k): hazards = (1 - R[t][k]) + S[t+1][i] + later users. */
static void milp_free_rows(const milp_graph_t *G, int t, int i, int k, FILE *f)
{
    int n = G->n, later = 0;
    for (int pass = 0; pass < 2; pass++) {
        fprintf(f, " h%d_%d_%d_%d: - R_%d_%d", pass, t, i, k, t, k);
        if (t + 1 < n)
            fprintf(f, " + S_%d_%d", t + 1, i);
        later = 0;
        for (int u = G->use_off[i]; u < G->use_off[i + 1]; u++)
            if (G->use[u] > k && G->use[u] <= t)
                fprintf(f, " + R_%d_%d", t, G->use[u]), later++;
        int maxh = 1 + (t + 1 < n) + later;
        if (pass == 0) /* 1 - FREE <= hazards */
            fprintf(f, " + F_%d_%d_%d >= 0\n", t, i, k);
        else /* hazards <= max (1 - FREE) */
            fprintf(f, " + %d F_%d_%d_%d <= %d\n", maxh, t, i, k, maxh - 1);
    }
}

/* Node k's dependency e of [dep_off[k], dep_off[k+1]], the last one being k itself. */
static int milp_dep(const milp_graph_t *G, int k, int e)
{
    return e < G->dep_off[k + 1] ? G->dep[e] : k;
}

/* Stage t's rows. */
static void milp_stage(const milp_graph_t *G, int t, double budget, FILE *f)
{
    fprintf(f, " d%d: R_%d_%d = 1\n", t, t, t);
    for (int i = 0; i < t; i++) { /* S[t][i] <= S[t-1][i] + R[t-1][i] */
        fprintf(f, " s%d_%d: S_%d_%d - R_%d_%d", t, i, t, i, t - 1, i);
        if (i < t - 1)
            fprintf(f, " - S_%d_%d", t - 1, i);
        fprintf(f, " <= 0\n");
    }
    for (int k = 0; k <= t; k++)
        for (int e = G->dep_off[k]; e < G->dep_off[k + 1]; e++)
            fprintf(f, " p%d_%d_%d: R_%d_%d - R_%d_%d - S_%d_%d <= 0\n", t, k, G->dep[e], t, k, t,
                    G->dep[e], t, G->dep[e]);
    fprintf(f, " u%d_0: U_%d_0", t, t);
    for (int i = 0; i < t; i++)
        fprintf(f, " - %.9g S_%d_%d", G->m[i], t, i);
    fprintf(f, " - %.9g R_%d_0 = %.9g\n", G->m[0], t, G->stat[t]);
    for (int k = 1; k <= t; k++) {
        fprintf(f, " u%d_%d: U_%d_%d - U_%d_%d - %.9g R_%d_%d", t, k, t, k, t, k - 1, G->m[k], t,
                k);
        for (int e = G->dep_off[k - 1]; e <= G->dep_off[k]; e++)
            fprintf(f, " + %.9g F_%d_%d_%d", G->m[milp_dep(G, k - 1, e)], t, milp_dep(G, k - 1, e),
                    k - 1);
        fprintf(f, " = 0\n");
    }
    for (int k = 0; k <= t; k++) {
        for (int e = G->dep_off[k]; e <= G->dep_off[k + 1]; e++)
            milp_free_rows(G, t, milp_dep(G, k, e), k, f);
        fprintf(f, " b%d_%d: U_%d_%d <= %.9g\n", t, k, t, k, budget);
    }
}

/* Writes the model in CPLEX LP format (costs scaled by cscale). */
static void milp_write(const milp_graph_t *G, double budget, double cscale, FILE *f)
{
    int n = G->n;
    fprintf(f, "Minimize\n obj:");
    for (int t = 0; t < n; t++)
        for (int i = 0; i <= t; i++)
            fprintf(f, " + %.9g R_%d_%d%s", G->c[i] * cscale, t, i, (i % 8 == 7) ? "\n" : "");
    fprintf(f, "\nSubject To\n");
    for (int t = 0; t < n; t++)
        milp_stage(G, t, budget, f);
    fprintf(f, "Bounds\n");
    for (int t = 0; t < n; t++)
        for (int k = 0; k <= t; k++)
            fprintf(f, " U_%d_%d >= 0\n", t, k);
    fprintf(f, "Binaries\n");
    for (int t = 0; t < n; t++) {
        for (int i = 0; i <= t; i++)
            fprintf(f, " R_%d_%d", t, i);
        for (int i = 0; i < t; i++)
            fprintf(f, " S_%d_%d", t, i);
        for (int k = 0; k <= t; k++)
            for (int e = G->dep_off[k]; e <= G->dep_off[k + 1]; e++)
                fprintf(f, " F_%d_%d_%d", t, milp_dep(G, k, e), k);
        fprintf(f, "\n");
    }
    fprintf(f, "End\n");
}

/* 1 when the cbc binary is on PATH. */
static int milp_have_cbc(void)
{
    return system("command -v cbc >/dev/null 2>&1") == 0;
}

/*
 * Solves the model for (graph, base order, budget bytes) with a time limit; fills *r. The
 * schedule of the solution (stage by stage, nodes in order) is in r->steps. cutoff >= 0: extra
 * cost (cost units) a solution must beat — arenaflow's, so CBC prunes every branch that cannot
 * (status 4 when it proves that none can: the optimum is at least the cutoff).
 */
static void milp_solve(const af_graph_t *g, const int32_t *order, uint64_t budget,
                       double time_limit, double cutoff, const char *dir, milp_res_t *r)
{
    memset(r, 0, sizeof(*r));
    r->status = 3;
    milp_graph_t G;
    double unit = 1 << 20; /* MiB: keeps the coefficients of big graphs near 1 */
    milp_build(g, order, unit, &G);
    double base = 0;
    for (int i = 0; i < G.n; i++)
        base += G.c[i];
    double cscale = 1e6 / base; /* objective around 10^6 */
    char lp[512], sol[512], cmd[1400], cut[64] = "";
    if (cutoff >= 0) /* a hair above arenaflow's: its own value is no improvement to find */
        snprintf(cut, sizeof cut, "cutoff %.12g", (base + cutoff * (1 + 1e-6)) * cscale + 1e-4);
    snprintf(lp, sizeof lp, "%s/checkmate.lp", dir);
    snprintf(sol, sizeof sol, "%s/checkmate.sol", dir);
    FILE *f = fopen(lp, "w");
    if (!f) {
        milp_free(&G);
        return;
    }
    milp_write(&G, (double)budget / unit, cscale, f);
    fclose(f);
    unlink(sol);
    /* CBC checks its time limit during branch-and-bound only: a hard wall-clock stop as well */
    snprintf(cmd, sizeof cmd,
             "timeout -s KILL %.0f cbc %s sec %g threads 1 %s solve solu %s >%s/cbc.log 2>&1",
             4 * time_limit + 30, lp, time_limit, cut, sol, dir);
    uint64_t t0 = af_now_ns();
    int rc = system(cmd);
    r->secs = (double)(af_now_ns() - t0) / 1e9;
    FILE *in = rc == -1 ? NULL : fopen(sol, "r");
    char line[512];
    if (in && fgets(line, sizeof line, in)) {
        const char *ov = strstr(line, "objective value");
        double obj = ov ? atof(ov + 15) : 0;
        if (strstr(line, "no integer solution"))
            r->status = 3; /* only the relaxation: no schedule */
        else if (!strncmp(line, "Optimal", 7))
            r->status = 0;
        else if (strstr(line, "nfeasible"))
            r->status = cutoff >= 0 ? 4 : 2;
        else if (ov && strstr(line, "Stopped"))
            r->status = 1;
        r->extra = obj / cscale - base;
        int t, i;
        double v;
        char name[128];
        uint8_t *run = calloc((size_t)G.n * (size_t)G.n + 1, 1);
        while (r->status <= 1 && fgets(line, sizeof line, in))
            if (sscanf(line, "%*d %127s %lf", name, &v) == 2 && v > 0.5 &&
                sscanf(name, "R_%d_%d", &t, &i) == 2)
                run[(size_t)t * (size_t)G.n + (size_t)i] = 1;
        for (t = 0; t < G.n && r->status <= 1; t++)
            for (i = 0; i <= t; i++)
                if (run[(size_t)t * (size_t)G.n + (size_t)i])
                    steps_push(&r->steps, AF_STEP_RUN, order[i]);
        free(run);
    }
    if (in)
        fclose(in);
    milp_free(&G);
}

#endif
