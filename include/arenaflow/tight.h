/*
 * arenaflow — tight placement instances with a known optimum (for tests and benchmarks).
 *
 * A full rectangle (time horizon x capacity) is cut into pieces by guillotine cuts; each piece
 * is an interval [lower, upper) of `size` bytes. The pieces tile the rectangle, so the total
 * size live at every time point equals the capacity: the lower bound (max cross-section) is the
 * capacity and the cut itself is a packing of that height, hence the optimum equals the
 * capacity. Jitter then shrinks the size or lifetime of some pieces that are not live at one
 * chosen witness time: the packing stays valid and the cross-section at the witness stays full,
 * so the optimum is still provably the capacity.
 */
#ifndef ARENAFLOW_TIGHT_H
#define ARENAFLOW_TIGHT_H

#include "arenaflow/common.h"
#include "arenaflow/plan.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_tight_opts {
    size_t buffers;    /* number of intervals, >= 1; default 200 */
    uint64_t seed;     /* PRNG seed; default 1 */
    uint64_t capacity; /* the optimum; default 1048576; must be >= 1 */
    int64_t horizon;   /* time span [0, horizon); default 4 * buffers */
    double jitter;     /* fraction of eligible pieces shrunk, 0..1; default 0 (every time point
                          full: the tightest instances) */
} af_tight_opts_t;

/* Fills *o with the defaults above. */
void af_tight_opts_init(af_tight_opts_t *o);

/*
 * Generates an instance. On success *out (owned by the caller, release with af_tight_free) holds
 * *n intervals in shuffled order whose offsets are a packing of height *optimum, and *optimum is
 * the optimal arena height (= the lower bound). Fewer than o->buffers pieces result only when the
 * rectangle cannot be cut further (horizon x capacity too small). Errors: AF_EINVAL (zero
 * buffers, capacity or horizon), AF_ENOMEM; *out untouched on error. Reentrant.
 */
int af_tight_generate(const af_tight_opts_t *o, af_interval_t **out, size_t *n, uint64_t *optimum,
                      af_error_t *err);

/* Releases an array from af_tight_generate. NULL is a no-op. */
void af_tight_free(af_interval_t *iv);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_TIGHT_H */
