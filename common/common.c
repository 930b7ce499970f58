/*
 * Error table, allocator hooks and the clock. The error table is generated from AF_ERRNO_MAP so
 * adding a code is one row. The allocator hooks are plain function pointers read on every
 * allocation; they are set before the library is used (not thread-safe by contract).
 */
#include "common/common_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

static struct {
    af_malloc_fn malloc_fn;
    af_realloc_fn realloc_fn;
    af_calloc_fn calloc_fn;
    af_free_fn free_fn;
} hooks = {malloc, realloc, calloc, free};

int af_replace_allocator(af_malloc_fn m, af_realloc_fn r, af_calloc_fn c, af_free_fn f)
{
    if (m)
        hooks.malloc_fn = m;
    if (r)
        hooks.realloc_fn = r;
    if (c)
        hooks.calloc_fn = c;
    if (f)
        hooks.free_fn = f;
    return 0;
}

void af_reset_allocator(void)
{
    hooks.malloc_fn = malloc;
    hooks.realloc_fn = realloc;
    hooks.calloc_fn = calloc;
    hooks.free_fn = free;
}

/*
 * No huge-page hint on big blocks: it was tried (madvise(MADV_HUGEPAGE) on the 2 MiB-aligned
 * interior of every block of 4 MiB or more) and measured worse on the VMs this project runs on,
 * whose memory balloon reports free 2 MiB blocks to the host: a huge page taken from such a
 * block is faulted in again by the host, 340-1100 ms per 250 MB at random against a steady
 * 108-130 ms with 4 KiB pages. bench_scale at 10^6 tensors, 7 alternating runs each: planning
 * 741-1303 ms with the hint, 770-981 ms without; graph build 241-739 ms vs 267-352 ms. Fewer
 * fresh bytes is the lever that works either way (the scratch scope below).
 */
#ifndef AF__SCRATCH_MIN
#define AF__SCRATCH_MIN ((size_t)1 << 20)
#endif

/*
 * Scratch scope (af__scratch_begin/end): while one is open on a thread, blocks of
 * AF__SCRATCH_MIN bytes or more that the library frees are kept (up to SCRATCH_KEEP of them), and
 * a later request takes back the smallest kept block that holds it, if that block is at most four
 * times its size, instead of going to the allocator. The request touches only its own bytes of
 * the block: the rest of it stays faulted in for the scope's end. One plan at 10^6 tensors
 * allocates ~600 MB in such blocks over its phases with ~200 MB live at once; without the scope
 * every one of them is fresh memory the kernel faults in and zeroes (with the scope: ~290 MB,
 * where a rule of at most half again as big and 16 kept blocks left ~390 MB). Kept blocks are
 * freed when the outermost scope closes. Tracking is a small
 * open-addressing table of the big blocks handed out in the scope (tombstones on free; when it
 * is full a block is simply not tracked and is freed as usual).
 */
#define SCRATCH_SLOTS 256 /* power of two */
#define SCRATCH_KEEP 64
#define SCRATCH_TOMB ((void *)1)

typedef struct {
    void *ptr;
    size_t size;
} scratch_block_t;

static _Thread_local struct {
    int depth, used; /* used: slots not empty (live or tombstone) */
    int n_kept;
    scratch_block_t slot[SCRATCH_SLOTS], kept[SCRATCH_KEEP];
} scratch;

static size_t scratch_hash(const void *p)
{
    return (size_t)(((uintptr_t)p >> 12) * 0x9e3779b97f4a7c15ull >> 56) & (SCRATCH_SLOTS - 1);
}

static void *scratch_track(void *p, size_t size)
{
    if (!p || scratch.used >= SCRATCH_SLOTS / 2)
        return p;
    size_t i = scratch_hash(p);
    while (scratch.slot[i].ptr && scratch.slot[i].ptr != SCRATCH_TOMB)
        i = (i + 1) & (SCRATCH_SLOTS - 1);
    if (!scratch.slot[i].ptr)
        scratch.used++;
    scratch.slot[i] = (scratch_block_t){p, size};
    return p;
}

/* Removes p from the table; its size, or 0 when p is not tracked. */
static size_t scratch_untrack(void *p)
{
    for (size_t i = scratch_hash(p); scratch.slot[i].ptr; i = (i + 1) & (SCRATCH_SLOTS - 1))
        if (scratch.slot[i].ptr == p) {
            scratch.slot[i].ptr = SCRATCH_TOMB;
            return scratch.slot[i].size;
        }
    return 0;
}

/* The smallest kept block of size..4*size bytes, or NULL. */
static void *scratch_take(size_t size)
{
    int best = -1;
    for (int k = 0; k < scratch.n_kept; k++) {
        size_t have = scratch.kept[k].size;
        if (have >= size && have / 4 <= size && (best < 0 || have < scratch.kept[best].size))
            best = k;
    }
    if (best < 0)
        return NULL;
    scratch_block_t b = scratch.kept[best];
    scratch.kept[best] = scratch.kept[--scratch.n_kept];
    return scratch_track(b.ptr, b.size);
}

void af__scratch_begin(void)
{
    scratch.depth++;
}

void af__scratch_end(void)
{
    if (scratch.depth <= 0 || --scratch.depth > 0)
        return;
    for (int k = 0; k < scratch.n_kept; k++)
        hooks.free_fn(scratch.kept[k].ptr);
    scratch.n_kept = 0;
    scratch.used = 0;
    memset(scratch.slot, 0, sizeof(scratch.slot));
}

void *af__malloc(size_t size)
{
    if (!scratch.depth || size < AF__SCRATCH_MIN)
        return hooks.malloc_fn(size ? size : 1);
    void *p = scratch_take(size);
    return p ? p : scratch_track(hooks.malloc_fn(size), size);
}

void *af__calloc(size_t count, size_t size)
{
    if (count == 0 || size == 0)
        count = size = 1;
    size_t bytes = count <= SIZE_MAX / size ? count * size : 0;
    if (!scratch.depth || bytes < AF__SCRATCH_MIN)
        return hooks.calloc_fn(count, size);
    void *p = scratch_take(bytes);
    if (p)
        return memset(p, 0, bytes);
    return scratch_track(hooks.calloc_fn(count, size), bytes);
}

void *af__realloc(void *ptr, size_t size)
{
    if (scratch.depth && ptr)
        (void)scratch_untrack(ptr);
    void *p = hooks.realloc_fn(ptr, size ? size : 1);
    if (p && scratch.depth && size >= AF__SCRATCH_MIN)
        (void)scratch_track(p, size);
    return p; /* on failure ptr stays live, untracked: freed as usual */
}

void af__free(void *ptr)
{
    if (!ptr)
        return;
    size_t size = scratch.depth ? scratch_untrack(ptr) : 0;
    if (size && scratch.n_kept < SCRATCH_KEEP) {
        scratch.kept[scratch.n_kept++] = (scratch_block_t){ptr, size};
        return;
    }
    hooks.free_fn(ptr);
}

char *af__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = af__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int af__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return AF_ENOMEM;
        ncap *= 2;
    }
    void *p = af__realloc(*arr, ncap * elem);
    if (!p)
        return AF_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

int af__err(af_error_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void af_error_clear(af_error_t *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

const char *af_strerror(int err)
{
    switch (err) {
#define AF__ERR_MSG(name, val, msg)                                                                \
    case val:                                                                                      \
        return msg;
        AF_ERRNO_MAP(AF__ERR_MSG)
#undef AF__ERR_MSG
    case 0:
        return "success";
    default:
        return err < 0 ? uv_strerror(err) : "unknown error";
    }
}

const char *af_err_name(int err)
{
    switch (err) {
#define AF__ERR_NAME(name, val, msg)                                                               \
    case val:                                                                                      \
        return "AF_" #name;
        AF_ERRNO_MAP(AF__ERR_NAME)
#undef AF__ERR_NAME
    case 0:
        return "OK";
    default:
        return err < 0 ? uv_err_name(err) : "UNKNOWN";
    }
}

uint64_t af_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *af_version(void)
{
    return "0.1.0";
}

void af_free(void *p)
{
    af__free(p);
}

void af__bn_affine(double scale, double bias, double mean, double var, double eps, float *s,
                   float *t)
{
    double k = scale / sqrt(var + eps);
    *s = (float)k;
    *t = (float)(bias - mean * k);
}
