/*
 * Internal helpers shared by all modules: allocation through the replaceable hooks, error
 * formatting, checked arithmetic. Every module may include this one small header; it is the
 * only cross-module private header, and it holds no module state.
 */
#ifndef ARENAFLOW_COMMON_INT_H
#define ARENAFLOW_COMMON_INT_H

#include "arenaflow/common.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *af__malloc(size_t size);
void *af__calloc(size_t count, size_t size);
void *af__realloc(void *ptr, size_t size);
void af__free(void *ptr);
char *af__strdup(const char *s);
/* Grows *arr (element size elem) so it holds at least need elements; doubles capacity. */
int af__grow(void **arr, size_t *cap, size_t need, size_t elem);

/* Fills err (if not NULL) with code and a printf-style message; returns code. */
int af__err(af_error_t *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Overflow-checked arithmetic: return false on overflow. */
static inline bool af__mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool af__add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline uint64_t af__align_up(uint64_t v, uint64_t a)
{
    return a <= 1 ? v : (v + a - 1) / a * a;
}

#define AF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
