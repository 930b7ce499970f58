/*
 * Real data in and out of a session, shared by `arenaflow run --input` and `arenaflow
 * onnx-test`: importer dims from tensor files, binding host tensors to session inputs, outputs
 * as host tensors, value summaries, NumPy-style comparison, file names for outputs.
 */
#ifndef ARENAFLOW_TOOLS_RUN_DATA_H
#define ARENAFLOW_TOOLS_RUN_DATA_H

#include "arenaflow/executor.h"
#include "arenaflow/tensor.h"

#include <jansson.h>
#include <stdio.h>

/* A tensor meant for the graph input called name (name NULL: bound by position). */
typedef struct data_in {
    const char *name;
    af_tensor_t t;
} data_in_t;

/*
 * One `--input` argument: "NAME=d0,d1,..." (digits and commas only, or empty for a scalar)
 * fixes the dims of input NAME (or a symbolic dim NAME) for the importer; "NAME=FILE" (a .npy
 * or .pb file) binds the file's tensor to input NAME and fixes its dims from the file. The
 * name ends at the first '=' after which the rest is dims or an existing file.
 */
typedef struct data_arg {
    char name[256];
    const char *file; /* points into the argument; NULL for a dims spec */
} data_arg_t;
/* 0, or -1 with the reason in why (no '=', no such file). */
int data_parse_arg(const char *arg, data_arg_t *out, char *why, size_t cap);

/* The importer's dims spec for a tensor: "NAME=d0,d1,..." ("NAME=" for a scalar). */
void data_dims_spec(const char *name, const af_tensor_t *t, char *out, size_t cap);

/*
 * Fills bufs (one per session input, af_session_run order) from ins: by name, or by position
 * for tensors without one. Inputs not given keep data NULL (the session fills a pattern, empty
 * strings for a string input). Checks dtype and byte size against the graph. Returns 0, or -1
 * with the reason in why.
 */
int data_bind(const af_session_t *s, const data_in_t *ins, int n, af_buffer_t *bufs, char *why,
              size_t cap);

/* Output i of the last round as a host tensor view (data points into the session's kept
 * storage: valid until the next round completes; do not clear it). 0 or -1 with why. */
int data_output(const af_session_t *s, int32_t i, af_tensor_t *view, char *why, size_t cap);

/* One line per tensor: name, dtype, shape, min/max/mean (NaN count) and the first values. */
void data_print_summary(FILE *f, const char *name, const af_tensor_t *t);
/* The same as a JSON object (new reference, NULL on OOM). */
json_t *data_summary_json(const char *name, const af_tensor_t *t);

/*
 * File name for an output: the name with every byte outside [A-Za-z0-9._-] replaced by '_', a
 * leading '.' replaced too (no hidden files, no "..": the name never leaves DIR), at most 200
 * bytes; an empty result becomes "output_<idx>". Writes "<name>.npy" into out.
 */
void data_file_name(const char *name, int idx, char *out, size_t cap);

/* mkdir -p: every missing component of dir is created (0755). 0, or -1 with errno set. */
int data_make_dirs(const char *dir);

/* Result of comparing an output with a reference the way numpy.testing.assert_allclose does:
 * |got - want| <= atol + rtol * |want|, NaN equal to NaN, infinities equal when same sign. */
typedef struct data_cmp {
    int ok;
    double max_abs;   /* largest |got - want| over the elements (NaN/inf mismatches: inf) */
    uint64_t worst;   /* element index of the first element out of tolerance (or of max_abs) */
    double got, want; /* values there */
    char why[200];    /* dtype or shape mismatch, empty otherwise */
} data_cmp_t;

void data_compare(const af_tensor_t *got, const af_tensor_t *want, double rtol, double atol,
                  data_cmp_t *c);

#endif
