/*
 * bench_pool_bare.h — the "bare cls" column of bench_pool; included only by bench/bench_pool.c
 * (static functions, no CMake target: bench/ builds only bench_*.c). Needs trace_t
 * (bench_pool_trace.h). Benchmark-only code: out of memory exits the program.
 *
 * bare classes: a bound, not an allocator to use. What a size-class allocator's alloc+free costs
 * in this loop with nothing but the classes: the pool's default ladder (the class of every size,
 * read from af_pool_class_of into a table under the same branch-free key as the pool's), one LIFO
 * stack of free blocks per class, a block's class from its address (each class is cut from its
 * own 4 GiB of address space, mapped without reserve). Nothing else: no state word (so no
 * double-free or foreign-pointer check), no counter, no lending between classes, no huge blocks
 * kept (sizes above 64 MiB go to malloc). af classes does all of that on top of this: the gap
 * between the two columns is their cost, and this column is the least the size-class path can
 * cost with any of them removed.
 */
#ifndef AF_BENCH_POOL_BARE_H
#define AF_BENCH_POOL_BARE_H

#include "arenaflow/pool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BARE_SHIFT 32 /* each class: 4 GiB of address space */
typedef struct {
    char *base;
    uint64_t max;                      /* largest class */
    uint32_t nclasses;                 /* <= AF_POOL_MAX_CLASSES */
    uint8_t key_class[512];            /* key of (units - 1) -> class */
    char *bump[AF_POOL_MAX_CLASSES];   /* next uncut block of the class */
    uint64_t bs[AF_POOL_MAX_CLASSES];  /* block size */
    uint32_t top[AF_POOL_MAX_CLASSES]; /* free blocks on the class's stack */
    void **stk[AF_POOL_MAX_CLASSES];
} bare_t;
static uint32_t bare_key(uint64_t v)
{
    unsigned sh = 60u - (unsigned)__builtin_clzll(v | 8u);
    return (uint32_t)((sh << 3) + (v >> sh));
}
static void *bare_make(void *ctx)
{
    const trace_t *t = ctx;
    bare_t *b = calloc(1, sizeof(*b));
    af_pool_t *p;
    if (!b || af_pool_create(NULL, &p, NULL))
        exit(1);
    b->nclasses = af_pool_nclasses(p);
    b->max = af_pool_class_size(p, b->nclasses - 1);
    memset(b->key_class, 0xff, sizeof b->key_class);
    for (uint64_t u = 1; u <= b->max >> 8; u++) { /* the table must be exact for the ladder */
        uint32_t k = bare_key(u - 1), c = (uint32_t)af_pool_class_of(p, u << 8);
        if (k >= sizeof b->key_class || (b->key_class[k] != 0xff && b->key_class[k] != c)) {
            fprintf(stderr, "bare classes: the default ladder is not exact under the key\n");
            exit(1);
        }
        b->key_class[k] = (uint8_t)c;
    }
    for (uint32_t c = 0; c < b->nclasses; c++)
        b->bs[c] = af_pool_class_size(p, c);
    af_pool_destroy(p);
    b->base = mmap(NULL, (size_t)b->nclasses << BARE_SHIFT, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (b->base == MAP_FAILED)
        exit(1);
    for (uint32_t c = 0; c < b->nclasses; c++) {
        b->bump[c] = b->base + ((size_t)c << BARE_SHIFT);
        b->stk[c] = malloc((t->nslots + 1) * sizeof(void *));
        if (!b->stk[c])
            exit(1);
    }
    return b;
}
static void bare_unmake(void *ts)
{
    bare_t *b = ts;
    for (uint32_t c = 0; c < b->nclasses; c++)
        free(b->stk[c]);
    munmap(b->base, (size_t)b->nclasses << BARE_SHIFT);
    free(b);
}
static void *bare_alloc(void *ts, size_t n)
{
    bare_t *b = ts;
    if (n - 1 >= b->max)
        return malloc(n);
    uint32_t c = b->key_class[bare_key((n - 1) >> 8)];
    if (b->top[c])
        return b->stk[c][--b->top[c]];
    char *q = b->bump[c];
    if ((uint64_t)(q + b->bs[c] - b->base) > ((uint64_t)(c + 1) << BARE_SHIFT))
        return NULL; /* the class's 4 GiB are cut: the replay counts an error */
    b->bump[c] = q + b->bs[c];
    return q;
}
static void bare_free(void *ts, void *p)
{
    bare_t *b = ts;
    uint64_t c = (uint64_t)((char *)p - b->base) >> BARE_SHIFT;
    if (c >= b->nclasses) {
        free(p);
        return;
    }
    b->stk[c][b->top[c]++] = p;
}

#endif
