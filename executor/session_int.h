/*
 * The session structure, shared by session.c (rounds), session_api.c (public calls) and
 * replan.c (re-planning after warm-up). Lock rule: s->mu (AF__RANK_SESSION) guards every field
 * below marked [mu]; fields without a mark are set at creation and read-only afterwards.
 */
#ifndef ARENAFLOW_SESSION_INT_H
#define ARENAFLOW_SESSION_INT_H

#include "executor/executor_int.h"

struct af_session {
    uv_async_t async; /* first member: the close callback finds the session from the handle */
    int has_async;
    af_executor_t *ex;
    af_session_opts_t opts;
    af_plan_opts_t replan_opts;
    int verify, history;
    int32_t max_in, max_out; /* kernel arity bounds (scratch size) */
    void **sc_ptr;           /* per worker: max_in + max_out pointers */
    uint64_t *sc_bytes;
    uint8_t *sc_flags; /* per worker: input passed its first check */
    uint8_t *consts;   /* constant tensors (weights), filled once */
    uint64_t *const_sum;
    int consts_dirty; /* [mu] the caller may have written constants: re-take their checksums */
    uv_mutex_t mu;
    uv_cond_t cv;
    af__prog_t *prog; /* [mu] program new rounds start with */
    af__round_t *slots;
    int32_t n_slots;
    int32_t *free_slots;                /* [mu] */
    int32_t n_free;                     /* [mu] */
    int32_t running;                    /* [mu] rounds started and not yet completed by a worker */
    uint64_t next_round;                /* [mu] */
    af__round_t *done_head, *done_tail; /* [mu] completed submitted rounds, for the loop */
    /* stats [mu] */
    uint64_t rounds, failed_rounds, corrupted, nodes_run, plan_swaps;
    int32_t first_corrupt_tensor, first_corrupt_node, first_failed_node;
    int first_failed_status;
    atomic_ullong dyn_allocs;
    uint64_t pool_os0;
    uint64_t *last_sum; /* [mu] per tensor, last completed round */
    uint64_t *last_seq; /* [mu] per node, last completed round (history) */
    int have_last;      /* [mu] */
    /* re-planning [mu] */
    uint64_t *dyn_max;
    uint64_t warm_rounds;
    int replan_state; /* 0 waiting, 1 in progress, 2 done, 3 failed */
};

/* Fills the round's pointers, inputs and counters (caller thread). */
int af__round_start(af__round_t *r, const af_buffer_t *inputs, af_buffer_t *outputs,
                    af_error_t *err);
/* Returns the round's arena and dynamic tensors. */
void af__round_release(af__round_t *r);
/* Worker side: bookkeeping and hand-over once a round completed (session_api.c). */
void af__session_round_done(af_session_t *s, af__round_t *r);
/* Records warm-up sizes of a completed round; called with s->mu held (replan.c). */
void af__replan_observe(af_session_t *s, const af__round_t *r);
/* Re-plans and swaps the program if warm-up is over; called with s->mu held, may drop it. */
void af__replan_maybe(af_session_t *s);

#endif
