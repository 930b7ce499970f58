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
#include "arenaflow/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { K_SUBMIT = 0, K_RUN, K_HEALTH, K_COUNT };
static const char *const kind_names[K_COUNT] = {"submit", "run", "healthz (ref)"};

typedef struct cfg {
    char host[64];
    int port;
    double duration, warmup, rate;
    int conns, submit_pct, health_pct, graphs, rounds;
    uint64_t seed;
} cfg_t;

typedef struct lat {
    double *v;
    size_t n, cap;
} lat_t;

typedef struct worker {
    pthread_t th;
    int idx;
    const cfg_t *c;
    lat_t lat[K_COUNT];
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

static void lat_push(lat_t *l, double v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->v = realloc(l->v, l->cap * sizeof(double));
        if (!l->v) {
            perror("realloc");
            exit(1);
        }
    }
    l->v[l->n++] = v;
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

static int dial(const cfg_t *c)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
    inet_pton(AF_INET, c->host, &a.sin_addr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends one request and reads the answer; returns the status (or -1) and the body in *body. */
static int exchange(int fd, const char *method, const char *path, const char *body, char **resp,
                    size_t *cap)
{
    char head[512];
    size_t blen = body ? strlen(body) : 0;
    int hl = snprintf(head, sizeof(head),
                      "%s %s HTTP/1.1\r\nHost: bench\r\nContent-Length: %zu\r\n"
                      "Content-Type: application/json\r\n\r\n",
                      method, path, blen);
    if (send(fd, head, (size_t)hl, MSG_NOSIGNAL) != hl)
        return -1;
    if (blen && send(fd, body, blen, MSG_NOSIGNAL) != (ssize_t)blen)
        return -1;
    size_t got = 0, need = SIZE_MAX, hdr_end = 0;
    for (;;) {
        if (got + 4096 > *cap) {
            *cap = (got + 4096) * 2;
            *resp = realloc(*resp, *cap);
        }
        ssize_t r = recv(fd, *resp + got, *cap - got - 1, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
        (*resp)[got] = '\0';
        if (!hdr_end) {
            char *e = strstr(*resp, "\r\n\r\n");
            if (!e)
                continue;
            hdr_end = (size_t)(e - *resp) + 4;
            char *cl = strcasestr(*resp, "\r\ncontent-length:");
            if (!cl || cl > e)
                return -1; /* the daemon always sends Content-Length */
            need = hdr_end + strtoull(cl + 17, NULL, 10);
        }
        if (got >= need)
            break;
    }
    int status = 0;
    if (sscanf(*resp, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    memmove(*resp, *resp + hdr_end, got - hdr_end + 1);
    return status;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void sleep_until(uint64_t t_ns)
{
    uint64_t now = af_now_ns();
    if (t_ns <= now)
        return;
    struct timespec ts = {(time_t)((t_ns - now) / 1000000000u), (long)((t_ns - now) % 1000000000u)};
    nanosleep(&ts, NULL);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    const cfg_t *c = w->c;
    uint64_t s = c->seed * 7919u + (uint64_t)w->idx;
    double interval_ns = 1e9 * c->conns / c->rate;
    uint64_t end = t_start_ns + (uint64_t)((c->warmup + c->duration) * 1e9);
    uint64_t rec_from = t_start_ns + (uint64_t)(c->warmup * 1e9);
    char *resp = NULL;
    size_t cap = 0;
    int fd = dial(c);
    for (uint64_t i = 0;; i++) {
        uint64_t when =
            t_start_ns + (uint64_t)((double)i * interval_ns + interval_ns * w->idx / c->conns);
        if (when >= end)
            break;
        sleep_until(when);
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
            fd = dial(c);
        if (fd >= 0) {
            if (kind == K_SUBMIT) {
                status = exchange(fd, "POST", "/v1/graphs", graph_json[g], &resp, &cap);
            } else if (kind == K_HEALTH) {
                status = exchange(fd, "GET", "/healthz", NULL, &resp, &cap);
            } else {
                snprintf(path, sizeof(path), "/v1/graphs/%s/run", w->ids[g]);
                snprintf(body, sizeof(body), "{\"rounds\": %d}", c->rounds);
                status = exchange(fd, "POST", path, body, &resp, &cap);
            }
        }
        uint64_t done = af_now_ns();
        if (status < 0 && fd >= 0) {
            close(fd);
            fd = -1;
        }
        if (kind == K_SUBMIT && (status == 200 || status == 201)) {
            char *p = strstr(resp, "\"id\":\"");
            if (p && !w->ids[g])
                w->ids[g] = strndup(p + 6, 32);
            if (done >= rec_from)
                (status == 200 ? w->hits++ : w->misses++);
        }
        if (done < rec_from)
            continue;
        if (status != 200 && status != 201)
            w->errors[kind]++;
        lat_push(&w->lat[kind], (double)(done - when) / 1e3);
    }
    if (fd >= 0)
        close(fd);
    free(resp);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const lat_t *l, double p)
{
    if (!l->n)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)l->n + 0.999999);
    return l->v[(k ? k : 1) - 1];
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
            const char *colon = strrchr(v, ':');
            if (!colon)
                usage();
            snprintf(c.host, sizeof(c.host), "%.*s", (int)(colon - v), v);
            c.port = atoi(colon + 1);
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
    lat_t all[K_COUNT + 1] = {{0}};
    uint64_t errors[K_COUNT + 1] = {0}, hits = 0, misses = 0, idh = 0;
    for (int i = 0; i < c.conns; i++) {
        pthread_join(ws[i].th, NULL);
        for (int k = 0; k < K_COUNT; k++) {
            for (size_t j = 0; j < ws[i].lat[k].n; j++) {
                lat_push(&all[k], ws[i].lat[k].v[j]);
                lat_push(&all[K_COUNT], ws[i].lat[k].v[j]);
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
        lat_t *l = &all[k];
        qsort(l->v, l->n, sizeof(double), cmp_d);
        printf("%-14s %10zu %9.1f %9.0f %9.0f %9.0f %9.0f %7" PRIu64 "\n",
               k == K_COUNT ? "all" : kind_names[k], l->n, (double)l->n / c.duration, pct(l, 50),
               pct(l, 99), pct(l, 99.9), l->n ? l->v[l->n - 1] : 0.0, errors[k]);
    }
    lat_t *run = &all[K_RUN], *ref = &all[K_HEALTH];
    if (run->n && ref->n)
        printf("run / healthz p50 ratio: %.2f (HTTP alone is the reference)\n",
               pct(run, 50) / (pct(ref, 50) > 0 ? pct(ref, 50) : 1));
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
