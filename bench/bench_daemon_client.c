/*
 * bench_daemon_client — a load generator for arenaflowd that mixes graph submissions and runs.
 *
 *   bench_daemon_client [--addr 127.0.0.1:PORT] [--duration S] [--warmup S] [--connections N]
 *                       [--rate R] [--submit-pct P] [--health-pct P] [--graphs K] [--rounds N]
 *                       [--seed X]
 *
 * Every connection is one thread with one keep-alive HTTP/1.1 connection. Requests are paced at
 * a fixed total rate R (each connection sends at R/N on a fixed schedule) and latency is measured
 * from the *scheduled* send time, so a stall of the server shows up in the tail instead of
 * silently lowering the rate (coordinated omission). Each request is, by a fixed-seed PRNG:
 *   - submit (P%): POST /v1/graphs with one of K random DAGs generated from the seed — the first
 *     submission of a graph is planned (201), later ones are plan-cache hits (200);
 *   - healthz (Q%): GET /healthz, the reference: the cost of HTTP alone on this machine;
 *   - run (the rest): POST /v1/graphs/{id}/run {"rounds": N} on a graph already submitted.
 * The first W seconds are warm-up and not recorded. It prints, per kind and overall: requests/s,
 * p50/p99/p99.9 and max latency, errors (any status other than 200/201, or an I/O error), and a
 * checksum of the graph ids the daemon returned (fingerprints: the same seed gives the same
 * checksum, so a daemon that answers fast but wrong is visible).
 *
 * The client reads responses with a minimal reader (status line, Content-Length — the daemon
 * always sends it); it is a load generator for this daemon, not a general HTTP client.
 */
#include "bench/bench_http.h"

#include <inttypes.h>
#include <pthread.h>

enum { K_SUBMIT = 0, K_RUN, K_HEALTH, K_COUNT };
static const char *const kind_names[K_COUNT] = {"submit", "run", "healthz (ref)"};

typedef struct cfg {
    char host[64];
    int port;
    double duration, warmup, rate;
    int conns, submit_pct, health_pct, graphs, rounds;
    uint64_t seed;
} cfg_t;

typedef struct worker {
    pthread_t th;
    int idx;
    const cfg_t *c;
    bh_lat_t lat[K_COUNT];
    uint64_t errors[K_COUNT], hits, misses;
    char **ids; /* graph ids this worker learned, by graph index */
} worker_t;

static char **graph_json; /* generated graphs */
static uint64_t t_start_ns;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random DAG: n nodes, each reading one or two earlier tensors, as a JSON graph. */
static char *make_graph(int k, uint64_t seed)
{
    uint64_t s = seed * 1000003u + (uint64_t)k;
    int n = 8 + (int)(rng_next(&s) % 40);
    size_t cap = 256 + (size_t)n * 200, len = 0;
    char *b = malloc(cap);
    len += (size_t)snprintf(b + len, cap - len,
                            "{\"format\":\"arenaflow-graph\",\"version\":1,\"name\":\"bench%d\","
                            "\"tensors\":[{\"name\":\"t0\",\"kind\":\"input\",\"bytes\":4096}",
                            k);
    for (int i = 1; i <= n; i++)
        len += (size_t)snprintf(b + len, cap - len, ",{\"name\":\"t%d\",%s\"bytes\":%" PRIu64 "}",
                                i, i == n ? "\"kind\":\"output\"," : "",
                                (uint64_t)1024 * (1 + rng_next(&s) % 256));
    len += (size_t)snprintf(b + len, cap - len, "],\"nodes\":[");
    for (int i = 1; i <= n; i++) {
        int a = (int)(rng_next(&s) % (uint64_t)i), c = (int)(rng_next(&s) % (uint64_t)i);
        if (a == c)
            len +=
                (size_t)snprintf(b + len, cap - len,
                                 "%s{\"op\":\"Relu\",\"inputs\":[\"t%d\"],\"outputs\":[\"t%d\"]}",
                                 i > 1 ? "," : "", a, i);
        else
            len += (size_t)snprintf(
                b + len, cap - len,
                "%s{\"op\":\"Add\",\"inputs\":[\"t%d\",\"t%d\"],\"outputs\":[\"t%d\"]}",
                i > 1 ? "," : "", a, c, i);
    }
    snprintf(b + len, cap - len, "]}");
    return b;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    const cfg_t *c = w->c;
    uint64_t s = c->seed * 7919u + (uint64_t)w->idx;
    double interval_ns = 1e9 * c->conns / c->rate;
    uint64_t end = t_start_ns + (uint64_t)((c->warmup + c->duration) * 1e9);
    uint64_t rec_from = t_start_ns + (uint64_t)(c->warmup * 1e9);
    bh_resp_t resp = {0};
    int fd = bh_dial(c->host, c->port);
    for (uint64_t i = 0;; i++) {
        uint64_t when =
            t_start_ns + (uint64_t)((double)i * interval_ns + interval_ns * w->idx / c->conns);
        if (when >= end)
            break;
        bh_sleep_until(when);
        int pick = (int)(rng_next(&s) % 100);
        int g = (int)(rng_next(&s) % (uint64_t)c->graphs);
        int kind = pick < c->submit_pct                   ? K_SUBMIT
                   : pick < c->submit_pct + c->health_pct ? K_HEALTH
                                                          : K_RUN;
        if (kind == K_RUN && !w->ids[g])
            kind = K_SUBMIT; /* learn the id first */
        char path[128], body[64];
        int status = -1;
        if (fd < 0)
            fd = bh_dial(c->host, c->port);
        if (fd >= 0) {
            if (kind == K_SUBMIT) {
                status = bh_exchange(fd, "POST", "/v1/graphs", NULL, graph_json[g],
                                     strlen(graph_json[g]), NULL, &resp);
            } else if (kind == K_HEALTH) {
                status = bh_exchange(fd, "GET", "/healthz", NULL, NULL, 0, NULL, &resp);
            } else {
                snprintf(path, sizeof(path), "/v1/graphs/%s/run", w->ids[g]);
                snprintf(body, sizeof(body), "{\"rounds\": %d}", c->rounds);
                status = bh_exchange(fd, "POST", path, NULL, body, strlen(body), NULL, &resp);
            }
        }
        uint64_t done = af_now_ns();
        if (status < 0 && fd >= 0) {
            close(fd);
            fd = -1;
        }
        if (kind == K_SUBMIT && (status == 200 || status == 201)) {
            char *p = strstr(resp.buf, "\"id\":\"");
            if (p && !w->ids[g])
                w->ids[g] = strndup(p + 6, 32);
            if (done >= rec_from)
                (status == 200 ? w->hits++ : w->misses++);
        }
        if (done < rec_from)
            continue;
        if (status != 200 && status != 201)
            w->errors[kind]++;
        bh_lat_push(&w->lat[kind], (double)(done - when) / 1e3);
    }
    if (fd >= 0)
        close(fd);
    free(resp.buf);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_daemon_client --addr HOST:PORT [--duration S] [--warmup S] "
                    "[--connections N] [--rate R] [--submit-pct P] [--health-pct P] [--graphs K] "
                    "[--rounds N] [--seed X]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    cfg_t c = {"127.0.0.1", 0, 10, 2, 200, 2, 10, 10, 16, 1, 42};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--addr")) {
            if (bh_parse_addr(v, c.host, sizeof(c.host), &c.port) != 0)
                usage();
        } else if (!strcmp(a, "--duration"))
            c.duration = atof(v);
        else if (!strcmp(a, "--warmup"))
            c.warmup = atof(v);
        else if (!strcmp(a, "--connections"))
            c.conns = atoi(v);
        else if (!strcmp(a, "--rate"))
            c.rate = atof(v);
        else if (!strcmp(a, "--submit-pct"))
            c.submit_pct = atoi(v);
        else if (!strcmp(a, "--health-pct"))
            c.health_pct = atoi(v);
        else if (!strcmp(a, "--graphs"))
            c.graphs = atoi(v);
        else if (!strcmp(a, "--rounds"))
            c.rounds = atoi(v);
        else if (!strcmp(a, "--seed"))
            c.seed = strtoull(v, NULL, 10);
        else
            usage();
    }
    if (!c.port || c.conns < 1 || c.conns > 256 || c.rate <= 0 || c.graphs < 1 ||
        c.submit_pct + c.health_pct > 100 || c.duration <= 0 || c.duration > 3600)
        usage();
    graph_json = calloc((size_t)c.graphs, sizeof(char *));
    for (int k = 0; k < c.graphs; k++)
        graph_json[k] = make_graph(k, c.seed);
    worker_t *ws = calloc((size_t)c.conns, sizeof(worker_t));
    t_start_ns = af_now_ns() + 10000000u;
    for (int i = 0; i < c.conns; i++) {
        ws[i].idx = i;
        ws[i].c = &c;
        ws[i].ids = calloc((size_t)c.graphs, sizeof(char *));
        pthread_create(&ws[i].th, NULL, worker_main, &ws[i]);
    }
    bh_lat_t all[K_COUNT + 1] = {{0}};
    uint64_t errors[K_COUNT + 1] = {0}, hits = 0, misses = 0, idh = 0;
    for (int i = 0; i < c.conns; i++) {
        pthread_join(ws[i].th, NULL);
        for (int k = 0; k < K_COUNT; k++) {
            for (size_t j = 0; j < ws[i].lat[k].n; j++) {
                bh_lat_push(&all[k], ws[i].lat[k].v[j]);
                bh_lat_push(&all[K_COUNT], ws[i].lat[k].v[j]);
            }
            errors[k] += ws[i].errors[k];
            errors[K_COUNT] += ws[i].errors[k];
            free(ws[i].lat[k].v);
        }
        hits += ws[i].hits;
        misses += ws[i].misses;
    }
    /* Checksum over distinct graphs: each graph's id (from whichever connection learned it). */
    for (int g = 0; g < c.graphs; g++) {
        for (int i = 0; i < c.conns; i++)
            if (ws[i].ids[g]) {
                idh += fnv(ws[i].ids[g]) * (uint64_t)(g + 1);
                break;
            }
        for (int i = 0; i < c.conns; i++)
            free(ws[i].ids[g]);
    }
    for (int i = 0; i < c.conns; i++)
        free(ws[i].ids);
    printf("bench_daemon_client: %d connections, target %.0f req/s, %.0f s (+%.0f s warm-up), "
           "seed %" PRIu64 ", %d graphs, %d round(s) per run\n",
           c.conns, c.rate, c.duration, c.warmup, c.seed, c.graphs, c.rounds);
    printf("%-14s %10s %9s %9s %9s %9s %9s %7s\n", "kind", "requests", "req/s", "p50_us", "p99_us",
           "p99.9_us", "max_us", "errors");
    for (int k = 0; k <= K_COUNT; k++) {
        bh_lat_t *l = &all[k];
        qsort(l->v, l->n, sizeof(double), bh_cmp_d);
        printf("%-14s %10zu %9.1f %9.0f %9.0f %9.0f %9.0f %7" PRIu64 "\n",
               k == K_COUNT ? "all" : kind_names[k], l->n, (double)l->n / c.duration, bh_pct(l, 50),
               bh_pct(l, 99), bh_pct(l, 99.9), l->n ? l->v[l->n - 1] : 0.0, errors[k]);
    }
    bh_lat_t *run = &all[K_RUN], *ref = &all[K_HEALTH];
    if (run->n && ref->n)
        printf("run / healthz p50 ratio: %.2f (HTTP alone is the reference)\n",
               bh_pct(run, 50) / (bh_pct(ref, 50) > 0 ? bh_pct(ref, 50) : 1));
    printf("submissions: %" PRIu64 " cache hits, %" PRIu64 " misses; id checksum %016" PRIx64 "\n",
           hits, misses, idh);
    for (int k = 0; k <= K_COUNT; k++)
        free(all[k].v);
    for (int k = 0; k < c.graphs; k++)
        free(graph_json[k]);
    free(graph_json);
    free(ws);
    return errors[K_COUNT] ? 1 : 0;
}
