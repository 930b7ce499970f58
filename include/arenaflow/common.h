/*
 * arenaflow — errors and allocator hooks shared by every module.
 *
 * Every public function returns int: 0 on success, a negative AF_E* code on failure. The codes
 * come from one X-macro (AF_ERRNO_MAP) that also gives af_strerror() and af_err_name(), as
 * libuv's UV_ERRNO_MAP does. libuv error codes (negative errno values) pass through unchanged;
 * arenaflow's own codes live below -4000 so they never collide with errno values.
 *
 * The library never prints and never aborts. A detailed message for the user goes into an
 * af_error_t the caller passes (may be NULL when the caller does not want the text).
 */
#ifndef ARENAFLOW_COMMON_H
#define ARENAFLOW_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* name, value, message */
#define AF_ERRNO_MAP(X)                                                                            \
    X(ENOMEM, -4001, "out of memory")                                                              \
    X(EINVAL, -4002, "invalid argument")                                                           \
    X(EPARSE, -4003, "malformed input")                                                            \
    X(ECYCLE, -4004, "graph has a cycle")                                                          \
    X(EDUP, -4005, "duplicate name")                                                               \
    X(ENOENT, -4006, "unknown name")                                                               \
    X(EPRODUCED, -4007, "tensor produced more than once")                                          \
    X(ENOPRODUCER, -4008, "tensor read but never produced")                                        \
    X(ESIZE, -4009, "invalid or overflowing size")                                                 \
    X(EIO, -4010, "input/output error")                                                            \
    X(EVERIFY, -4011, "plan verification failed")                                                  \
    X(EBUDGET, -4012, "memory budget exceeded")                                                    \
    X(ENOTSUP, -4013, "operation not supported")                                                   \
    X(ETIMEDOUT, -4014, "time limit reached")                                                      \
    X(ECORRUPT, -4015, "data corrupted")                                                           \
    X(EBUSY, -4016, "resource busy")                                                               \
    X(EDOUBLEFREE, -4017, "double free")                                                           \
    X(EFOREIGN, -4018, "pointer not owned by this pool")                                           \
    X(ESHAPE, -4019, "shape inference failed")                                                     \
    X(ECANCELED, -4020, "operation canceled")

typedef enum {
#define AF__ERR_ENUM(name, val, msg) AF_##name = (val),
    AF_ERRNO_MAP(AF__ERR_ENUM)
#undef AF__ERR_ENUM
        AF_ERRNO_MAX_ = -4999
} af_errno_t;

/* Message for an error code (arenaflow's or a negative errno/libuv value). Never NULL. Thread-safe.
 */
const char *af_strerror(int err);
/* Symbolic name ("AF_ENOMEM", "EINVAL"...) of an error code. Never NULL. Thread-safe. */
const char *af_err_name(int err);

#define AF_ERROR_MSG_MAX 512

/* Error detail filled by functions that take an `af_error_t *err` (which may be NULL). */
typedef struct af_error {
    int code;                   /* same value the function returned; 0 = no error */
    char msg[AF_ERROR_MSG_MAX]; /* full sentence naming the culprit, NUL-terminated */
} af_error_t;

/* Resets *err to "no error". err may be NULL. */
void af_error_clear(af_error_t *err);

/*
 * Allocator hooks. All heap use of the library goes through these (like uv_replace_allocator):
 * tests replace them to fail the n-th allocation. Must be called before any other arenaflow
 * call, or while no arenaflow object exists. Any pointer may be NULL to keep the current one.
 * Returns 0, or AF_EINVAL when the hooks are inconsistent. Not thread-safe. Inside one
 * af_plan_create call, blocks of 1 MiB or more that the planner frees are kept for its later
 * requests and reach free_fn when the call returns.
 */
typedef void *(*af_malloc_fn)(size_t size);
typedef void *(*af_realloc_fn)(void *ptr, size_t size);
typedef void *(*af_calloc_fn)(size_t count, size_t size);
typedef void (*af_free_fn)(void *ptr);
int af_replace_allocator(af_malloc_fn malloc_fn, af_realloc_fn realloc_fn, af_calloc_fn calloc_fn,
                         af_free_fn free_fn);
/* Restores the system allocator. Not thread-safe. */
void af_reset_allocator(void);

/* Frees memory the library handed to the caller (strings from af_graph_to_json...). NULL ok. */
void af_free(void *p);

/* Monotonic clock in nanoseconds (for reports and benchmarks). Thread-safe. */
uint64_t af_now_ns(void);

/* Library version string, e.g. "0.1.0". */
const char *af_version(void);

/* ---- files (common/file.c) ---------------------------------------------------------------- */

/*
 * Replaces the file at path with data[0, len) durably: the bytes go to a temp file in the same
 * directory whose name is unique per writer (<path>.<pid>.<thread>.<counter>.tmp, created with
 * O_EXCL, so two writers of one path, in one process or in two, never share a temp file), which
 * is fsync'd, renamed over path (atomic: a reader sees the whole old file or the whole new one),
 * and the directory is fsync'd so the rename survives a crash. On failure the temp file is
 * removed and path is untouched. Concurrent writers of one path: the last rename wins, each
 * file complete. Returns 0 or AF_EIO (err names the path and the system error), AF_EINVAL (NULL
 * path), AF_ENOMEM. Thread-safe. A leftover temp file (a crash between create and rename) ends
 * in ".tmp": owners of a directory may remove those at start.
 */
int af_file_write_durable(const char *path, const void *data, size_t len, af_error_t *err);

/*
 * The same durable replace with the content streamed by a writer: fill(fd, ctx) writes the temp
 * file (af_file_write_all helps) and returns 0, or -1 with errno set. For content too large to
 * build in memory first (a graph's weights file).
 */
typedef int (*af_file_fill_fn)(int fd, void *ctx);
int af_file_write_durable_fn(const char *path, af_file_fill_fn fill, void *ctx, af_error_t *err);
/* Writes all of data to fd, retrying short writes and EINTR. 0, or -1 with errno set. */
int af_file_write_all(int fd, const void *data, size_t len);

/*
 * Reads a whole regular file of at most max_bytes. On success *out (NUL-terminated, release with
 * af_free) holds *len bytes. Errors: AF_EIO (cannot open or read: err names the path and the
 * system error; a file of more than max_bytes is AF_ESIZE), AF_ENOMEM. Thread-safe.
 */
int af_file_read(const char *path, size_t max_bytes, char **out, size_t *len, af_error_t *err);

/* ---- value grammar and option tables (common/options.c) ------------------------------------ */

/*
 * The one size grammar of the library, the CLI and config files: decimal digits, then optionally
 * K, M, G or T (binary multiples, any case), optionally followed by "i" and "B" ("64K", "64KiB",
 * "64kb", "2G", "4096"). No sign, no spaces, no overflow. Returns 0 or AF_EINVAL.
 */
int af_parse_size(const char *s, uint64_t *out);
/* The one bool grammar: 1, true, yes, on / 0, false, no, off (any case). 0 or AF_EINVAL. */
int af_parse_bool(const char *s, int *out);
/* Writes a byte count for people: "512 B", "1.50 KiB", "3.25 GiB" (binary units). */
void af_format_bytes(char *out, size_t n, uint64_t bytes);

/* Option types: how the value is spelt and where it goes. */
typedef enum {
    AF_OPT_BOOL,      /* int: af_parse_bool */
    AF_OPT_AUTO_BOOL, /* int: "auto" -> -1, else af_parse_bool */
    AF_OPT_SIZE,      /* uint64_t: af_parse_size, within [min, max] */
    AF_OPT_UINT,      /* uint64_t: plain decimal, within [min, max] */
    AF_OPT_INT,       /* int32_t: plain decimal, within [min, max] */
    AF_OPT_INT64,     /* int64_t: plain decimal, within [min, max] */
    AF_OPT_DOUBLE,    /* double: finite, >= 0 */
    AF_OPT_NAME,      /* const char *: one of names(), stored as the list's own (static) string */
    AF_OPT_ENUM,      /* int: the index of the value in names() */
    AF_OPT_STRING,    /* char[size]: copied, shorter than size */
} af_opt_type_t;

#define AF_OPT_POW2 1u /* flags: a size that must be a power of two */
#define AF_OPT_RATE 2u /* flags: a double that must be > 0, optional K/M/G/T suffix (x1000) */

/*
 * One option: a row of a component's table (Redis's static_configs[] is the model). The
 * default sits in the row, spelt as in a config file, and goes through the same parser, so
 * what --help prints, what a config file may say and what a fresh struct holds cannot drift.
 */
typedef struct af_opt {
    const char *key;
    af_opt_type_t type;
    size_t offset;                     /* of the field in the options struct */
    const char *def;                   /* default value, in the option's own spelling */
    int64_t min, max;                  /* integer types (min <= max) and sizes (max 0: any) */
    const char *const *(*names)(void); /* AF_OPT_NAME / AF_OPT_ENUM: NULL-terminated */
    size_t size;                       /* AF_OPT_STRING: bytes of the buffer */
    unsigned flags;                    /* AF_OPT_POW2, AF_OPT_RATE */
    const char *help;
} af_opt_t;

/* Sets every field of a table to its row's default. Returns 0, or AF_EINVAL when a row's
 * default does not parse (a bug in the table: tests call this for every table). */
int af_opts_defaults(const af_opt_t *table, size_t n, void *opts, af_error_t *err);
/*
 * Sets option `key` from its text. Errors: AF_EINVAL with a message naming `scope` (e.g.
 * "planner"), the key, the value and what it should be; opts is untouched then. Thread-safe
 * for distinct opts.
 */
int af_opts_set(const af_opt_t *table, size_t n, void *opts, const char *scope, const char *key,
                const char *value, af_error_t *err);
/* The row for a key, or NULL. */
const af_opt_t *af_opts_find(const af_opt_t *table, size_t n, const char *key);
/*
 * Canonical spelling of every option in table order, "key=value" joined by ';', each value as
 * af_opts_set reads it back (doubles with 17 significant digits). 0, or AF_ESIZE when buf is too
 * small.
 */
int af_opts_format(const af_opt_t *table, size_t n, const void *opts, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_COMMON_H */
