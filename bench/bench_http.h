/*
 * The load generators' HTTP/1.1 client (bench_daemon_client, bench_oip): one blocking keep-alive
 * connection per thread, a minimal reader (status line, Content-Length — arenaflowd always sends
 * it — and one chosen response header), latency samples and percentiles, and a sleep to an
 * absolute time for constant-rate schedules. A load generator for arenaflowd, not a general
 * HTTP client. Header-only (static functions), included by each bench program.
 */
#ifndef ARENAFLOW_BENCH_HTTP_H
#define ARENAFLOW_BENCH_HTTP_H

#include "arenaflow/common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct bh_lat {
    double *v;
    size_t n, cap;
} bh_lat_t;

static inline void bh_lat_push(bh_lat_t *l, double v)
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

static inline int bh_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static inline double bh_pct(const bh_lat_t *l, double p)
{
    if (!l->n)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)l->n + 0.999999);
    return l->v[(k ? k : 1) - 1];
}

static inline void bh_sleep_until(uint64_t t_ns)
{
    uint64_t now = af_now_ns();
    if (t_ns <= now)
        return;
    struct timespec ts = {(time_t)((t_ns - now) / 1000000000u), (long)((t_ns - now) % 1000000000u)};
    nanosleep(&ts, NULL);
}

/* "HOST:PORT" -> host and port. 0 or -1. */
static inline int bh_parse_addr(const char *v, char *host, size_t cap, int *port)
{
    const char *colon = strrchr(v, ':');
    if (!colon)
        return -1;
    snprintf(host, cap, "%.*s", (int)(colon - v), v);
    *port = atoi(colon + 1);
    return *port > 0 ? 0 : -1;
}

static inline int bh_dial(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
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

/* A response: its body (moved to the start of buf) and one header's value. */
typedef struct bh_resp {
    char *buf;
    size_t cap, len;
    long long header; /* value of the header asked for (a number), -1 when absent */
} bh_resp_t;

static inline int bh_send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/*
 * Sends one request (extra: more header lines, each ending in \r\n, or NULL) and reads the
 * answer. want: a lowercase header name whose numeric value goes to r->header (or NULL).
 * Returns the status, or -1 on an I/O or framing error.
 */
static inline int bh_exchange(int fd, const char *method, const char *path, const char *extra,
                              const char *body, size_t blen, const char *want, bh_resp_t *r)
{
    char head[1024];
    int hl = snprintf(head, sizeof(head),
                      "%s %s HTTP/1.1\r\nHost: bench\r\nContent-Length: %zu\r\n"
                      "Content-Type: application/json\r\n%s\r\n",
                      method, path, blen, extra ? extra : "");
    if (bh_send_all(fd, head, (size_t)hl) != 0 || (blen && bh_send_all(fd, body, blen) != 0))
        return -1;
    size_t got = 0, need = SIZE_MAX, hdr_end = 0;
    r->header = -1;
    for (;;) {
        if (got + 4096 > r->cap) {
            r->cap = (got + 4096) * 2;
            r->buf = realloc(r->buf, r->cap);
        }
        ssize_t n = recv(fd, r->buf + got, r->cap - got - 1, 0);
        if (n <= 0)
            return -1;
        got += (size_t)n;
        r->buf[got] = '\0';
        if (!hdr_end) {
            char *e = strstr(r->buf, "\r\n\r\n");
            if (!e)
                continue;
            hdr_end = (size_t)(e - r->buf) + 4;
            char *cl = strcasestr(r->buf, "\r\ncontent-length:");
            if (!cl || cl > e)
                return -1;
            need = hdr_end + strtoull(cl + 17, NULL, 10);
            char pat[128];
            snprintf(pat, sizeof(pat), "\r\n%s:", want ? want : "");
            char *h = want ? strcasestr(r->buf, pat) : NULL;
            if (h && h < e)
                r->header = strtoll(h + strlen(pat), NULL, 10);
        }
        if (got >= need)
            break;
    }
    int status = 0;
    if (sscanf(r->buf, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    r->len = got - hdr_end;
    memmove(r->buf, r->buf + hdr_end, r->len + 1);
    return status;
}

#endif
