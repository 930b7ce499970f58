/*
 * Error table, allocator hooks and the clock. The error table is generated from AF_ERRNO_MAP so
 * adding a code is one row. The allocator hooks are plain function pointers read on every
 * allocation; they are set before the library is used (not thread-safe by contract).
 */
#include "common/common_int.h"

#include <errno.h>
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

void *af__malloc(size_t size)
{
    return hooks.malloc_fn(size ? size : 1);
}

void *af__calloc(size_t count, size_t size)
{
    if (count == 0 || size == 0)
        count = size = 1;
    return hooks.calloc_fn(count, size);
}

void *af__realloc(void *ptr, size_t size)
{
    return hooks.realloc_fn(ptr, size ? size : 1);
}

void af__free(void *ptr)
{
    if (ptr)
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
