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

/* OIP datatype names. BYTES has no arenaflow dtype: it parses but binds to no model input. */
#define AF__OIP_BYTES AF_DTYPE_COUNT_

/* "FP32" -> AF_DTYPE_F32 ... "BYTES" -> AF__OIP_BYTES. 0, or -1 for an unknown name. */
int af__oip_dtype_parse(const char *name, int *dt);
/* The OIP name of a dtype (dt may be AF__OIP_BYTES), or NULL when it has none. */
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
uint16_t af__oip_f32_to_f16(float f);
float af__oip_f16_to_f32(uint16_t h);

/* ---- the repository (oip_repo.c) --------------------------------------------------------- */

/* One concrete shape of a model with symbolic input dims: imported with the request's dims,
 * planned and bound once, kept while the model lives (at most [models] max_shapes per model,
 * least recently used ones evicted when idle). */
typedef struct af__variant {
    char key[512]; /* "NAME=d0,d1;NAME=..." of every input, sorted by name */
    af_graph_t *graph;
    af_plan_t *plan;
    af_session_t *sess;
    int refs;   /* 1 while kept by the model + 1 per request using it */
    int listed; /* 0 once evicted */
    uint64_t last_use;
    struct af__variant *next;
} af__variant_t;

#define AF__OIP_MAX_SPECS 32

typedef struct af__model {
    char name[AF__OIP_NAME_MAX];
    int64_t version;
    char platform[32]; /* "onnx" or "arenaflow_graph" */
    af_graph_t *graph;
    af_plan_t *plan;
    af_session_t *sess;   /* synchronous session (af_session_run from the threadpool); NULL for a
                             model with symbolic dims (poly): its variants have one each */
    int poly;             /* input dims are symbolic: one variant per concrete shape */
    int64_t max_inflight; /* config.json: requests in flight for this model; 0 = no own bound */
    int64_t inflight;
    char file[AF__DCFG_STR * 2 + 64]; /* poly: the model file, imported again per shape */
    char *specs[AF__OIP_MAX_SPECS];   /* poly: config.json's dims specs */
    int n_specs;
    af__variant_t *variants; /* poly: the shapes planned so far */
    int n_variants;
    uint64_t uses;
    int refs; /* 1 while listed + 1 per request in flight */
    int listed;
    /* statistics (loop thread) */
    uint64_t ok, failed, ns_ok, ns_compute, last_unix_ms;
    struct af__model *next;
} af__model_t;

typedef struct af__oip {
    af_executor_t *ex;      /* the executor of every model, [models] kernels */
    af__model_t *models;    /* listed models, every version */
    int loading;            /* repository loads in flight */
    int loaded;             /* the start-up scan finished (ready needs it) */
    int64_t inflight;       /* inference requests off the loop */
    int64_t variant_builds; /* poly models: shapes planned since start */
    char load_error[256];   /* the last failure of the start-up scan, "" none */
} af__oip_t;

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
                                 atomic_int *cancel, af_error_t *err);
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

/* ---- answers and inference (oip.c, oip_infer.c) ------------------------------------------ */

/* POST /v2/models/{m}[/versions/{v}]/infer on model m (referenced by the caller for the call). */
void af__oip_infer(af__daemon_t *d, af__model_t *m, const af__dreq_t *req, af__reply_t *r);
/* The /v2 routes: called by af__daemon_handle for paths under /v2. */
void af__oip_handle(af__daemon_t *d, const af__dreq_t *req, af__reply_t *r);

#endif
