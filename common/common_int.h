/*
 * Internal helpers shared by all modules: allocation through the replaceable hooks, error
 * formatting, checked arithmetic. Every module may include this one small header; it is the
 * only cross-module private header, and it holds no module state.
 */
#ifndef ARENAFLOW_COMMON_INT_H
#define ARENAFLOW_COMMON_INT_H

#include "arenaflow/common.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *af__malloc(size_t size);
void *af__calloc(size_t count, size_t size);
void *af__realloc(void *ptr, size_t size);
void af__free(void *ptr);
/* Opens / closes a scratch scope on this thread (nests): big blocks freed inside are kept for
 * the next request of about their size and freed when the outermost scope closes. */
void af__scratch_begin(void);
void af__scratch_end(void);
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

/* ---- option tables built once (common/options.c) ----
 * A component's defaults struct and NULL-terminated key list, made from its table the first time
 * af__opts_ready() is called (by any thread; concurrent first callers wait), read-only after. */
typedef struct af__opts_cache {
    const af_opt_t *table;
    size_t n;
    void *defaults;    /* the component's options struct (static storage) */
    const char **keys; /* n + 1 entries (static storage) */
    atomic_int state;  /* 0 not built, 1 building, 2 ready */
} af__opts_cache_t;
const af__opts_cache_t *af__opts_ready(af__opts_cache_t *c);

/*
 * ---- lock ranks: every mutex of the library, in the one order they may nest ----
 * A thread holding a lock may take only locks of a higher rank (jemalloc's witness ranks are the
 * model; the list is the documentation each lock's declaration points to). Kernels run with no
 * lock held; the library never calls back into user code while holding one.
 */
enum af__lock_rank {
    AF__RANK_PLAN_CACHE = 10,  /* af_plan_cache.mu (executor/plan_cache.c): held while planning,
                                  which takes no lock; no executor lock is taken under it */
    AF__RANK_SESSION = 20,     /* af_session.mu (executor/executor_int.h): slots, stats, program */
    AF__RANK_KERNELS = 30,     /* af_executor.kmu: the kernel registry */
    AF__RANK_ODN_BUILD = 35,   /* build_mu (executor/onednn.c): one oneDNN node built at a time
                                  in the process; only allocation happens under it */
    AF__RANK_DEQUE = 40,       /* af__deque.mu: one worker deque, never two at once */
    AF__RANK_SLEEP = 50,       /* af_executor.mu: sleeping and waking workers */
    AF__RANK_CORES = 55,       /* af_executor.tmu: waiting for cores (OpenMP teams); never held
                                  while a kernel runs */
    AF__RANK_POOL_GLOBAL = 60, /* af_pool.glock: address space, chunks, borrowing, huge, trim */
    AF__RANK_POOL_CLASS = 70,  /* af__pool_class.lock: one class's central free list */
};

/* ---- integer-key sorting (common/sort.c): a stable LSD radix sort of (key, id) pairs ---- */

typedef struct af__kv {
    uint64_t key;
    int32_t id;
} af__kv_t;

/* Order-preserving maps of signed and descending keys onto unsigned ascending ones. */
static inline uint64_t af__key_i64(int64_t x)
{
    return (uint64_t)x ^ (1ull << 63);
}
static inline uint64_t af__key_desc(uint64_t x)
{
    return ~x;
}

/*
 * Stable sort of v[0..n) by key, ascending (LSD radix). tmp: scratch of n entries, or NULL to
 * allocate it. Returns 0 or AF_ENOMEM (only when tmp is NULL). Several keys: sort by the least
 * significant first.
 */
int af__sort_kv(af__kv_t *v, size_t n, af__kv_t *tmp);
/* Stable sort of ids[0..n) by key[id], ascending; kv and tmp: scratch of n entries each, or
 * NULL to allocate. Returns 0 or AF_ENOMEM. */
int af__sort_ids(int32_t *ids, size_t n, const uint64_t *key, af__kv_t *kv, af__kv_t *tmp);

/* Stable counting sort of ids[0..n) by key[i] (the key of ids[i]), keys in [0, range): returns
 * AF_EINVAL with ids untouched when a key is outside, AF_ENOMEM when out of memory, else 0.
 * Keys already in order cost the one pass that checks them. */
int af__sort_counting(int32_t *ids, const int32_t *key, size_t n, int32_t range);

/* BatchNormalization (inference) as a per-channel affine y = x * s + t, the one definition the
 * fusion pass (planner/fuse.c) and the BatchNormalization kernels share so a Conv with the
 * folded affine computes the unfused plan's floats: k = scale / sqrt(var + eps) and
 * bias - mean * k in double, each rounded to f32 once (*s, *t). The kernels then compute
 * (float)(x * s) + t: two f32 operations, never contracted (the build passes -ffp-contract=off). */
void af__bn_affine(double scale, double bias, double mean, double var, double eps, float *s,
                   float *t);

#endif
