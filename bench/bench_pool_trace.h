/*
 * bench_pool_trace.h — the trace model of bench_pool and its loading; included only by
 * bench/bench_pool.c (static functions, no CMake target: bench/ builds only bench_*.c).
 *
 * A trace is a flat list of ops (alloc: slot + size, free: slot) over tensor slots 0..nslots-1.
 * load_trace reads the planner's event table CSV (`arenaflow plan G --events F.csv`): columns
 * found by name in the header (event_type, tensor_name, bytes), no quoting; ALLOC rows with
 * bytes > 0 of a slot not live become allocs, FREE rows of a live slot become frees, tensor
 * names map to dense slots through a linear-probe hash table. synthetic() builds the built-in
 * trace (fixed seed 42, xorshift64*: log-uniform 256 B – 64 MiB, each tensor dies 1–4 steps
 * after it is made, one in ten lives 10–200 steps like a skip connection).
 *
 * Invariants after finish_trace: every alloc of a slot is followed by exactly one free of it
 * before the slot is allocated again or the trace ends (slots still live get a trailing free),
 * so a trace replays as one self-contained round; npairs, peak_live and the size range are
 * computed over that sequence. ladder_bounds() computes what any pool with a given ladder could
 * reserve on a trace (with and without re-cutting blocks between classes). Benchmark-only code:
 * out of memory exits the program.
 */
#ifndef AF_BENCH_POOL_TRACE_H
#define AF_BENCH_POOL_TRACE_H

#include "arenaflow/pool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t slot;  /* tensor slot */
    uint32_t alloc; /* 1 = alloc, 0 = free */
    uint64_t size;
} op_t;

typedef struct {
    const char *name;
    op_t *ops;
    size_t nops, npairs;
    uint32_t nslots;
    uint64_t peak_live, min_size, max_size;
} trace_t;

static uint64_t rng(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void push(trace_t *t, size_t *cap, uint32_t slot, int alloc, uint64_t size)
{
    if (t->nops == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        t->ops = realloc(t->ops, *cap * sizeof(op_t));
        if (!t->ops) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    t->ops[t->nops++] = (op_t){slot, (uint32_t)alloc, size};
}

/* Adds FREE ops for every slot still live, and computes pairs, peak live, size range. */
static void finish_trace(trace_t *t, size_t *cap)
{
    uint64_t *live = calloc(t->nslots + 1, sizeof(uint64_t));
    uint64_t cur = 0;
    t->min_size = UINT64_MAX;
    for (size_t i = 0; i < t->nops; i++) {
        op_t *o = &t->ops[i];
        if (o->alloc) {
            live[o->slot] = o->size;
            cur += o->size;
            t->npairs++;
            t->min_size = o->size < t->min_size ? o->size : t->min_size;
            t->max_size = o->size > t->max_size ? o->size : t->max_size;
            t->peak_live = cur > t->peak_live ? cur : t->peak_live;
        } else {
            cur -= live[o->slot];
            live[o->slot] = 0;
        }
    }
    for (uint32_t s = 0; s < t->nslots; s++)
        if (live[s])
            push(t, cap, s, 0, 0);
    free(live);
}

static trace_t synthetic(void)
{
    trace_t t = {.name = "synthetic(seed 42)"};
    size_t cap = 0;
    enum { STEPS = 1500, MAXLIVE = 4096 };
    uint64_t seed = 42;
    int32_t death[MAXLIVE];
    for (int i = 0; i < MAXLIVE; i++)
        death[i] = -1;
    uint32_t top = 0;
    for (int step = 0; step < STEPS; step++) {
        for (uint32_t s = 0; s < top; s++)
            if (death[s] == step) {
                push(&t, &cap, s, 0, 0);
                death[s] = -1;
            }
        int outs = 1 + (rng(&seed) % 4 == 0);
        for (int k = 0; k < outs; k++) {
            uint32_t s = 0;
            while (s < top && death[s] >= 0)
                s++;
            if (s == top)
                top++;
            double u = (double)(rng(&seed) >> 11) / 9007199254740992.0;
            uint64_t size = (uint64_t)(256.0 * __builtin_exp(u * __builtin_log(262144.0)));
            uint64_t r = rng(&seed);
            int life = r % 10 == 0 ? 10 + (int)((r >> 8) % 191) : 1 + (int)((r >> 8) % 4);
            death[s] = step + life;
            push(&t, &cap, s, 1, size);
        }
    }
    t.nslots = top;
    finish_trace(&t, &cap);
    return t;
}

typedef struct {
    char *name;
    uint32_t slot;
} name_t;

static uint32_t slot_of(name_t **tab, size_t *ntab, size_t *captab, const char *name)
{
    /* small traces (thousands of tensors): a linear probe hash table */
    if (*ntab * 2 >= *captab) {
        size_t nc = *captab ? *captab * 2 : 1024;
        name_t *nt = calloc(nc, sizeof(name_t));
        for (size_t i = 0; i < *captab; i++)
            if ((*tab)[i].name) {
                size_t h = 0;
                for (const char *c = (*tab)[i].name; *c; c++)
                    h = h * 131 + (unsigned char)*c;
                while (nt[h & (nc - 1)].name)
                    h++;
                nt[h & (nc - 1)] = (*tab)[i];
            }
        free(*tab);
        *tab = nt;
        *captab = nc;
    }
    size_t h = 0;
    for (const char *c = name; *c; c++)
        h = h * 131 + (unsigned char)*c;
    while ((*tab)[h & (*captab - 1)].name) {
        if (!strcmp((*tab)[h & (*captab - 1)].name, name))
            return (*tab)[h & (*captab - 1)].slot;
        h++;
    }
    (*tab)[h & (*captab - 1)] = (name_t){strdup(name), (uint32_t)*ntab};
    return (uint32_t)(*ntab)++;
}

/* Splits a CSV line in place (no quoting in the event table). */
static int split(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *c = line; *c && n < max; c++)
        if (*c == ',') {
            *c = 0;
            f[n++] = c + 1;
        } else if (*c == '\n' || *c == '\r') {
            *c = 0;
        }
    return n;
}

static int load_trace(const char *path, trace_t *t)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    memset(t, 0, sizeof(*t));
    t->name = path;
    char line[4096], *f[16];
    int ctype = -1, cname = -1, cbytes = -1;
    if (!fgets(line, sizeof(line), fp)) {
        fclose(fp);
        return -1;
    }
    int n = split(line, f, 16);
    for (int i = 0; i < n; i++) {
        if (!strcmp(f[i], "event_type"))
            ctype = i;
        if (!strcmp(f[i], "tensor_name"))
            cname = i;
        if (!strcmp(f[i], "bytes"))
            cbytes = i;
    }
    if (ctype < 0 || cname < 0 || cbytes < 0) {
        fprintf(stderr, "%s: header lacks event_type/tensor_name/bytes\n", path);
        fclose(fp);
        return -1;
    }
    name_t *tab = NULL;
    size_t ntab = 0, captab = 0, cap = 0;
    uint8_t *live = NULL;
    size_t live_cap = 0;
    while (fgets(line, sizeof(line), fp)) {
        n = split(line, f, 16);
        if (n <= cbytes)
            continue;
        int is_alloc = !strcmp(f[ctype], "ALLOC"), is_free = !strcmp(f[ctype], "FREE");
        if (!is_alloc && !is_free)
            continue;
        uint32_t s = slot_of(&tab, &ntab, &captab, f[cname]);
        if (s >= live_cap) {
            live_cap = (s + 1) * 2;
            live = realloc(live, live_cap);
            memset(live + s, 0, live_cap - s);
        }
        uint64_t bytes = strtoull(f[cbytes], NULL, 10);
        if (is_alloc && bytes > 0 && !live[s]) {
            push(t, &cap, s, 1, bytes);
            live[s] = 1;
        } else if (is_free && live[s]) {
            push(t, &cap, s, 0, 0);
            live[s] = 0;
        }
    }
    fclose(fp);
    for (size_t i = 0; i < captab; i++)
        free(tab[i].name);
    free(tab);
    free(live);
    t->nslots = (uint32_t)ntab;
    finish_trace(t, &cap);
    return t->npairs ? 0 : -1;
}

/*
 * What any pool with this ladder could reach on the trace (block sizes = class sizes, huge
 * requests on chunks of their own, counted at their own peak): `recut` = the peak of the sum of
 * live class-rounded sizes (memory re-cut freely between classes whenever needed); `norecut` =
 * the least reserved when blocks are never re-cut but any larger block may serve a request
 * (unlimited borrowing): N_c = max over time of the live requests of class >= c; at least N_c
 * blocks of class >= c must exist, so reserved >= sum_c size_c * (N_c - N_c+1).
 */
static void ladder_bounds(const trace_t *t, af_pool_t *p, double *recut, double *norecut)
{
    uint32_t nc = af_pool_nclasses(p);
    int64_t cnt[AF_POOL_MAX_CLASSES] = {0}, need[AF_POOL_MAX_CLASSES] = {0};
    uint64_t *live = calloc(t->nslots + 1, sizeof(uint64_t));
    uint64_t rounded = 0, rounded_pk = 0, huge = 0, huge_pk = 0;
    for (size_t i = 0; i < t->nops; i++) {
        const op_t *o = &t->ops[i];
        uint64_t sz = o->alloc ? o->size : live[o->slot];
        live[o->slot] = o->alloc ? o->size : 0;
        int c = af_pool_class_of(p, sz);
        uint64_t rs = c < 0 ? (sz + 16383) / 16384 * 16384 : af_pool_class_size(p, (uint32_t)c);
        int64_t d = o->alloc ? 1 : -1;
        rounded += (uint64_t)d * rs;
        rounded_pk = rounded > rounded_pk ? rounded : rounded_pk;
        if (c < 0) {
            huge += (uint64_t)d * rs;
            huge_pk = huge > huge_pk ? huge : huge_pk;
            continue;
        }
        cnt[c] += d;
        int64_t suffix = 0;
        for (int k = (int)nc - 1; k >= 0; k--) {
            suffix += cnt[k];
            need[k] = suffix > need[k] ? suffix : need[k];
        }
    }
    double sum = (double)huge_pk;
    int64_t prev = 0;
    for (int k = (int)nc - 1; k >= 0; k--) {
        int64_t n = need[k] > prev ? need[k] : prev;
        sum += (double)af_pool_class_size(p, (uint32_t)k) * (double)(n - prev);
        prev = n;
    }
    free(live);
    *recut = (double)rounded_pk / (double)t->peak_live;
    *norecut = sum / (double)t->peak_live;
}

#endif /* AF_BENCH_POOL_TRACE_H */
