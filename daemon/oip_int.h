/*
 * arenaflowd — private interfaces of the Open Inference Protocol (KServe / Triton "v2" REST)
 * side of the daemon.
 *
 *   oip.c         /v2 routing, health, server and model metadata, readiness, config,
 *                 statistics, repository index / load / unload, the {"error": "..."} answers
 *   oip_repo.c    the model repository: DIR/<name>/<version>/model.onnx (or model.json), an
 *                 optional DIR/<name>/config.json, loading off the loop, the model registry
 *   oip_infer.c   POST .../infer: request header and binary tensor data, binding, the round,
 *                 the response (JSON or binary outputs); all of it off the loop
 *   oip_tensor.c  datatypes (OIP names <-> af_dtype_t), tensor data in JSON (nested or flat)
 *                 and back, FP16 conversion
 *
 * Lock rule as for the rest of the daemon (daemon_int.h): the loop thread owns the registry;
 * a model is immutable once listed (graph, plan, session), its counters change on the loop
 * thread only; work callbacks hold a reference and touch only their job and the model's
 * thread-safe session.
 */
#ifndef ARENAFLOW_DAEMON_OIP_INT_H
#define ARENAFLOW_DAEMON_OIP_INT_H

#include "daemon/daemon_int.h"

#include <stdatomic.h>
#include <stdint.h>

#define AF__OIP_NAME_MAX 128
#define AF__OIP_MAX_VERSIONS 16

/* ---- datatypes and tensor data (oip_tensor.c) -------------------------------------------- */

/* "FP32" -> AF_DTYPE_F32 ... "BYTES" -> AF_DTYPE_STRING. 0, or -1 for an unknown name. */
int af__oip_dtype_parse(const char *name, int *dt);
/* The OIP name of a dtype, or NULL when it has none. */
const char *af__oip_dtype_name(int dt);
/* Elements of a shape; -1 with a message when a dim is negative or the product overflows. */
int64_t af__oip_numel(const int64_t *shape, int32_t rank);
/*
 * Writes the elements of a JSON "data" value (a flat or nested array, or a scalar for rank 0)
 * into dst as numel elements of dt, little-endian. Integers must be integers in range, floats
 * numbers (or "nan", "inf", "-inf"), BOOL true/false. 0, or -1 with a message.
 */
int af__oip_json_read(const json_t *data, int dt, uint64_t numel, void *dst, char *msg, size_t len);
/* Appends numel elements of dt at src as a JSON array ("[1,2]"): floats with the digits that
 * read back to the same value (FP16 5, FP32 9, FP64 17), non-finite as "nan"/"inf"/"-inf".
 * 0 or -1 on OOM. */
int af__oip_json_write(char **buf, size_t *len, size_t *cap, const void *src, int dt,
                       uint64_t numel);
/* x as "%.*g" with P (1..9) digits prints it (glibc: the exact value rounded half to even),
 * without printf, into out (>= 24 bytes, not terminated): its length, or 0 for a value this
 * does not do (NaN, infinities, exact values past 128 bits: tiny and huge magnitudes). */
int af__oip_fmt_float(float x, int P, char *out);
uint16_t af__oip_f32_to_f16(float f);
/* af__oip_json_read for the text of a JSON array s[0..n) made of numbers, true/false,
 * brackets, commas and white space (a span af__oip_fast_split found): the same element rules
 * and messages. 0, or -1 with a message. */
int af__oip_text_read(const char *s, size_t n, int dt, uint64_t numel, void *dst, char *msg,
                      size_t len);

/* BYTES (AF_DTYPE_STRING, af_string_t handles) in the binary tensor data extension: numel
 * elements, each a 4-byte little-endian length then its bytes, filling p[0..n) exactly; the
 * handles written to dst point into p. 0, or -1 with a message (a prefix cut short, a length past
 * n, bytes left over). */
int af__oip_bytes_read(const uint8_t *p, uint64_t n, uint64_t numel, void *dst, char *msg,
                       size_t len);
/* Bytes af__oip_bytes_write appends for numel handles at src. */
uint64_t af__oip_bytes_size(const void *src, uint64_t numel);
/* Appends numel handles' strings in the binary form. 0, or -1 on OOM or a string of 4 GiB or
 * more (the prefix cannot say it). */
int af__oip_bytes_write(char **buf, size_t *len, size_t *cap, const void *src, uint64_t numel);
/* Index of the first of numel handles whose bytes are not UTF-8 (JSON strings cannot carry
 * them), or -1 when all are. */
int64_t af__oip_strings_utf8(const void *src, uint64_t numel);

/* The "data" of input `input` (its index in "inputs") at text[start..end). */
typedef struct af__span {
    long input;
    size_t start, end;
} af__span_t;
/* Finds the numeric "data" arrays of a request header's inputs (oip_fastjson.c): *out (malloc,
 * NUL-terminated, *out_n bytes) is the text with each replaced by 0, spans[0..*n_spans) where
 * they were; *out NULL when none was found (parse s itself). 0, or -1 on OOM. Any thread. */
int af__oip_fast_split(const char *s, size_t n, char **out, size_t *out_n, af__span_t *spans,
                       int max, int *n_spans);
float af__oip_f16_to_f32(uint16_t h);

/* ---- plans, persisted (oip_plans.c) ------------------------------------------------------ */

/* Where model plans are kept: <state_dir>/model_plans ("" = not kept), at most max_files. */
typedef struct af__plan_dir {
    char dir[AF__DCFG_STR + 16];
    int64_t max_files;
} af__plan_dir_t;

/* Plans g under lim (max_plan_ms, max_arena_bytes; cancel stops it): restored from pd's file for
 * g when there is a valid one (*restored = 1), else planned and stored there. A file that could
 * not be used or written leaves a line in note ("" none). Off the loop. 0 or an AF_E* code. */
int af__oip_plan(const af_graph_t *g, const af_plan_opts_t *po, const af__limits_t *lim,
                 atomic_int *cancel, const af__plan_dir_t *pd, af_plan_t **out, int *restored,
                 char *note, size_t note_len, af_error_t *err);

/* Removes the least recently used plan files of pd->dir past pd->max_files. Off the loop. */
void af__oip_plans_prune(const af__plan_dir_t *pd);

/* ---- the repository (oip_repo.c) --------------------------------------------------------- */

#define AF__OIP_MAX_INSTANCES 16
#define AF__OIP_MAX_PREFERRED 8

/* DIR/<name>/config.json beyond the dims: Triton's spelling where Triton has one. */
typedef struct af__mcfg {
    int64_t max_inflight; /* "max_inflight": requests in flight for this model; 0 = no own bound */
    int64_t instances;    /* "instance_count" or "instance_group": [{"count": N}]; default 1 */
    int64_t max_batch;    /* "max_batch_size": rows of a batched round; 0 = no batching */
    int64_t delay_us;     /* dynamic_batching.max_queue_delay_microseconds */
    int64_t preferred[AF__OIP_MAX_PREFERRED]; /* dynamic_batching.preferred_batch_size */
    int n_preferred;
    int batching; /* "dynamic_batching" given (needs max_batch_size > 0) */
} af__mcfg_t;

/* One concrete shape of a model with symbolic input dims: imported with the request's dims,
 * planned and bound once, kept while the model lives (at most [models] max_shapes per model,
 * least recently used ones evicted when idle). */
typedef struct af__variant {
    char key[512]; /* "NAME=d0,d1;NAME=..." of every input, sorted by name */
    af_graph_t *graph;
    af_plan_t *plan;
    af_session_t *sess;                        /* inst[0] */
    af_session_t *inst[AF__OIP_MAX_INSTANCES]; /* the model's instance count of sessions */
    int restored;                              /* the plan came from <state_dir>/model_plans */
    char note[AF_ERROR_MSG_MAX];               /* a plan file not used or not written */
    int refs;   /* 1 while kept by the model + 1 per request using it */
    int listed; /* 0 once evicted */
    uint64_t last_use;
    struct af__variant *next;
} af__variant_t;

#define AF__OIP_MAX_SPECS 32
#define AF__OIP_MAX_BATCH_STATS 64 /* batch_stats rows: batch sizes 1..63, larger in the last */

typedef struct af__model {
    char name[AF__OIP_NAME_MAX];
    int64_t version;
    char platform[32]; /* "onnx" or "arenaflow_graph" */
    af_graph_t *graph;
    af_plan_t *plan;
    af_session_t *sess; /* synchronous session (af_session_run from the threadpool); NULL for a
                           model with symbolic dims (poly): its variants have their own */
    af_session_t *inst[AF__OIP_MAX_INSTANCES]; /* cfg.instances sessions, inst[0] == sess; each
                                                  has its own arena instances */
    int poly;                                  /* input dims are symbolic: one variant per shape */
    int restored;                              /* the plan came from <state_dir>/model_plans */
    af__mcfg_t cfg;
    int64_t inflight;
    int64_t inst_inflight[AF__OIP_MAX_INSTANCES]; /* requests on each instance (loop thread) */
    uint64_t inst_rounds[AF__OIP_MAX_INSTANCES];  /* rounds each instance ran */
    uint64_t picks;                               /* instances picked (the turn of ties) */
    struct af__batchq *bq;                        /* dynamic batching: the requests waiting */
    char file[AF__DCFG_STR * 2 + 64]; /* poly: the model file, imported again per shape */
    char *specs[AF__OIP_MAX_SPECS];   /* poly: config.json's dims specs */
    int n_specs;
    af__variant_t *variants; /* poly: the shapes planned so far */
    int n_variants;
    uint64_t uses;
    int refs; /* 1 while listed + 1 per request in flight */
    int listed;
    /* statistics (loop thread) */
    uint64_t ok, failed, ns_ok, ns_compute, last_unix_ms, executions;
    uint64_t batch_count[AF__OIP_MAX_BATCH_STATS], batch_ns[AF__OIP_MAX_BATCH_STATS]; /* by rows */
    struct af__model *next;
} af__model_t;

typedef struct af__oip {
    af_executor_t *ex;                   /* the executor of every model, [models] kernels */
    af__model_t *models;                 /* listed models, every version */
    int loading;                         /* repository loads in flight */
    int loaded;                          /* the start-up scan finished (ready needs it) */
    int64_t inflight;                    /* inference requests off the loop */
    int64_t variant_builds;              /* poly models: shapes planned since start */
    uint64_t plans_made, plans_restored; /* model and shape plans: planned / from model_plans */
    uint64_t batches, batched_requests;  /* dynamic batching: rounds and the requests in them */
    af__plan_dir_t pd;                   /* <state_dir>/model_plans */
    uv_timer_t batch_timer;              /* fires at the earliest batch queue deadline */
    struct af__batchq *queues;           /* batch queues with requests waiting */
    int timer_open;
    char load_error[256]; /* the last failure of the start-up scan, "" none */
    /* small inferences served on the loop thread (oip_infer.c): this window's start and the
     * work done on the loop in it */
    uint64_t loop_win_t0, loop_win_busy;
    uint64_t loop_requests; /* inferences served on the loop thread */
} af__oip_t;

/* Reads DIR/<name>/config.json at path (absent: defaults): importer specs for "inputs" and
 * "dims" (strdup'd into specs, *n of them) and the rest into cfg. 0, or -1 with msg. */
int af__oip_read_config(const char *path, char **specs, int *n, af__mcfg_t *cfg, char *msg,
                        size_t len);

/* Creates the OIP state and, with a repository configured, starts loading it off the loop.
 * 0 or an AF_E* code. */
int af__oip_init(af__daemon_t *d);
void af__oip_fini(af__daemon_t *d);
/* 1 while repository loads or inferences are in flight (daemon destroy waits). */
int af__oip_busy(const af__daemon_t *d);
/* The listed model called name, version v (-1: the highest). NULL when there is none. */
af__model_t *af__oip_find(af__daemon_t *d, const char *name, int64_t v);
void af__model_ref(af__model_t *m);
void af__model_unref(af__model_t *m);
/* Loads (again) every version of one model of the repository off the loop; done(ok, msg) runs
 * on the loop when it is in. 0 or an AF_E* code (nothing queued). */
typedef void (*af__oip_done_fn)(af__daemon_t *d, void *arg, int rc, const char *msg);
int af__oip_load(af__daemon_t *d, const char *name, af__oip_done_fn done, void *arg);
/* Inputs (output = 0) or outputs of a model in session order, from its session or, for a poly
 * model, its graph (dims < 0 symbolic). */
int32_t af__model_io_count(const af__model_t *m, int output);
int af__model_io(const af__model_t *m, int output, int32_t i, af_io_info_t *out);
/* Poly models: the variant for a key, or NULL (loop thread). */
af__variant_t *af__variant_find(af__model_t *m, const char *key);
/* Poly models, off the loop: imports m's file with the dims of key (+ config specs), plans and
 * binds it. NULL with a message in err. */
af__variant_t *af__variant_build(const af__model_t *m, const char *key, af_executor_t *ex,
                                 const af_plan_opts_t *po, const af__limits_t *lim,
                                 const af__plan_dir_t *pd, atomic_int *cancel, af_error_t *err);
/* Loop: the instance a new request of m runs on (the one with the fewest in flight, ties to the
 * one after the last picked), counted in flight on it. */
int af__model_pick(af__model_t *m);
/* Loop: keeps v in m (evicting the least recently used idle variant above max); returns the
 * variant to use for key (v, or one another request listed first: then v is freed). */
af__variant_t *af__variant_add(af__model_t *m, af__variant_t *v, int64_t max);
void af__variant_unref(af__variant_t *v);
/* Unlists every version of a model. 0, or -1 when none is listed. */
int af__oip_unload(af__daemon_t *d, const char *name);
/* 1 when name is a valid model name: [A-Za-z0-9_.-], 1..127 bytes, not "." or "..". */
int af__oip_name_valid(const char *s, size_t n);
/* The repository's model directories as a JSON array of {name, version, state, reason}. */
json_t *af__oip_index(af__daemon_t *d);

/* ---- answers and inference (oip.c, oip_infer.c, oip_batch.c) ----------------------------- */

#define AF__OIP_MSG 512

/* One inference request, from admission to its answer. */
typedef struct af__ijob {
    uv_work_t w;
    af__daemon_t *d;
    af__model_t *m;
    af_session_t *sess; /* m's, or its variant's for the request's shape (poly models) */
    af__variant_t *v;
    int inst; /* the instance it runs on (picked: counted in m->inst_inflight) */
    int picked;
    json_t *hdr;              /* the parsed JSON header */
    char key[512];            /* poly: the request's input dims */
    char rest[512];           /* batching: the key without axis 0 (what a batch shares) */
    int64_t rows;             /* batching: axis 0 of the request's inputs; 0 = not batched */
    int64_t row_at;           /* batching: its first row in the batch */
    uint64_t parse_reserved;  /* bytes of the daemon's parse budget held for hdr */
    af_executor_t *ex;        /* poly: where a new shape's session goes */
    af_plan_opts_t plan_opts; /* poly: [planner] at admission */
    af__limits_t lim;         /* poly: [limits] at admission */
    af__plan_dir_t pd;        /* poly: where shape plans are kept */
    af__reply_t r;
    char *body;
    size_t body_len;
    int64_t header_len; /* -1: the whole body is JSON */
    /* inputs and outputs of the round, per session index */
    af_buffer_t *in, *out;
    uint8_t *want, *binary; /* per output: sent, and sent as binary */
    /* result */
    af__derr_t kind;
    int failed;
    char msg[AF__OIP_MSG];
    char *res;
    size_t res_len, res_cap;
    int64_t res_header_len; /* -1: no binary outputs */
    uint64_t ns_compute, ns_total;
    af__span_t spans[AF__OIP_MAX_SPECS]; /* inputs' "data" read from the text, not the DOM */
    int n_spans;
    struct af__ijob *next;   /* batching: the queue, then the batch */
    struct af__batch *batch; /* batching: the batch this job leads (its key is the batch's) */
} af__ijob_t;

/* Marks j failed with kind and a message; returns -1. */
int af__ijob_fail(af__ijob_t *j, af__derr_t kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Buffers for session s's inputs and outputs (j->sess = s). 0 or -1 (OOM). */
int af__ijob_attach(af__ijob_t *j, af_session_t *s);
/* Binds the inputs of j's header to j->sess's: name, datatype and shape checked (with j->rows
 * > 0, axis 0 must be rows and the others the session's), data from JSON or the binary data,
 * every input once, no binary data left over. Each input gets a buffer of its own, or with
 * slices its rows of a batch: slices[k] (not owned by j). 0 or -1 with j failed. */
int af__ijob_bind(af__ijob_t *j, const af_buffer_t *slices);
/* Selects j's outputs and encodes its answer from j->out (j->rows > 0: axis 0 is rows).
 * 0 or -1 with j failed. */
int af__ijob_answer(af__ijob_t *j);
/* Loop: answers j (its error, or its encoded result), counts it, frees it. */
void af__ijob_finish(af__ijob_t *j, int status);

/* Loop: runs j on the variant for j->key, planning it off the loop first when there is none
 * yet; a job leading a batch runs its batch instead (af__batch_run). */
void af__ijob_variant(af__ijob_t *j);

/* Batching (oip_batch.c), loop thread: queues j (parsed, j->rows and j->rest set) on its
 * model's batch queue; a batch runs when it reaches the preferred size or its oldest request
 * has waited max_queue_delay_microseconds. */
void af__batch_add(af__ijob_t *j);
/* The batch timer fired: runs every queue past its deadline. */
void af__batch_timer(uv_timer_t *t);
/* Loop: the variant of batch b is ready (NULL: its lead job failed, the batch fails with it):
 * concatenates, runs and splits off the loop, then answers every request of it. */
void af__batch_run(struct af__batch *b, af__variant_t *v);

/* 1 when the request just admitted (o->inflight counts it) is served on the loop thread:
 * alone in the daemon, small body, model's requests under [models] loop_max_us (oip_batch.c). */
int af__oip_on_loop(af__daemon_t *d, const af__model_t *m, const af__dreq_t *req);
/* POST /v2/models/{m}[/versions/{v}]/infer on model m (referenced by the caller for the call). */
void af__oip_infer(af__daemon_t *d, af__model_t *m, const af__dreq_t *req, af__reply_t *r);
/* The /v2 routes: called by af__daemon_handle for paths under /v2. */
void af__oip_handle(af__daemon_t *d, const af__dreq_t *req, af__reply_t *r);

#endif
