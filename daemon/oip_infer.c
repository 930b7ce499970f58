/*
 * arenaflowd OIP inference: POST /v2/models/{m}[/versions/{v}]/infer.
 *
 * The request is a JSON header, optionally followed by binary tensor data (the binary tensor
 * data extension): when the Inference-Header-Content-Length header is present, the first that
 * many bytes of the body are the JSON header and the rest holds, back to back in the order of
 * the header's inputs, the data of every input whose parameters carry "binary_data_size". An
 * input without it carries "data" in JSON (flat or nested). Every model input must be given
 * once, with the model's datatype and exact shape (plans are static: a model with symbolic
 * dims has them fixed by its config.json); unknown inputs, a wrong datatype or shape, data of
 * the wrong length, binary data left over or missing are 400 with {"error": "..."}.
 *
 * Outputs: all of the model's outputs unless "outputs" names some; an output is sent as binary
 * data when its parameters say "binary_data": true, or the request's parameters say
 * "binary_data_output": true (an output's own false wins). With any binary output the answer
 * is application/octet-stream: the JSON header (its length in Inference-Header-Content-Length)
 * then the binary outputs in the order the header lists them, each output's "parameters"
 * carrying its "binary_data_size".
 *
 * Everything but admission runs off the loop: the body is copied at admission (a client that
 * goes away frees h2o's copy), then parsing, binding, the round (af_session_run on the model's
 * thread-safe session, each request in its own arena instance: concurrent requests are rounds
 * in flight) and the encoding run on libuv's threadpool; the after-work callback answers and
 * updates the model's statistics.
 */
#include "daemon/oip_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

#define DYNAMIC_OUTPUT_CAP (16u << 20) /* bytes kept of an output whose size is dynamic */

int af__ijob_fail(af__ijob_t *j, af__derr_t kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->msg, sizeof(j->msg), fmt, ap);
    va_end(ap);
    j->kind = kind;
    j->failed = 1;
    return -1;
}

/* "shape" as dims; the count in *rank. 0 or -1. */
static int read_shape(const json_t *a, int64_t *dims, int32_t *rank)
{
    if (!json_is_array(a) || json_array_size(a) > AF_MAX_RANK)
        return -1;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return -1;
        dims[i] = (int64_t)json_integer_value(v);
    }
    *rank = (int32_t)json_array_size(a);
    return 0;
}

/* The request's dims against the model's: rank, every fixed dim; with rows > 0 axis 0 must be
 * rows and the model's (the batch's) axis 0 is not compared. */
static int shape_matches(const af_io_info_t *io, const int64_t *dims, int32_t rank, int64_t rows)
{
    if (io->rank != rank || (rows > 0 && (rank < 1 || dims[0] != rows)))
        return 0;
    for (int32_t k = rows > 0 ? 1 : 0; k < rank; k++)
        if (io->shape[k] >= 0 && io->shape[k] != dims[k])
            return 0;
    return 1;
}

/* The data of input `name` (bytes of dt, numel elements) into dst: from the binary data at
 * *bin_at when params carry binary_data_size, else from JSON `data`. 0 or -1. */
static int read_data(af__ijob_t *j, size_t index, const char *name, const json_t *params,
                     const json_t *data, int dt, int64_t numel, uint64_t bytes, void *dst,
                     uint64_t *bin_at)
{
    size_t hl = j->header_len < 0 ? j->body_len : (size_t)j->header_len;
    const uint8_t *binp = (const uint8_t *)j->body + hl;
    uint64_t bin_len = j->body_len - hl;
    const json_t *bds = params ? json_object_get(params, "binary_data_size") : NULL;
    char why[256];
    if (bds && dt == AF_DTYPE_STRING) { /* length-prefixed elements, binary_data_size in all */
        uint64_t n = json_is_integer(bds) && json_integer_value(bds) >= 0
                         ? (uint64_t)json_integer_value(bds)
                         : UINT64_MAX;
        if (n == UINT64_MAX || n > bin_len - *bin_at)
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                                 "input '%s': binary_data_size must be an integer >= 0 within "
                                 "the %" PRIu64 " bytes of binary data left",
                                 name, bin_len - *bin_at);
        if (af__oip_bytes_read(binp + *bin_at, n, (uint64_t)numel, dst, why, sizeof(why)) != 0)
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "input '%s': %s", name, why);
        *bin_at += n;
        return 0;
    }
    if (bds) {
        if (!json_is_integer(bds) || (uint64_t)json_integer_value(bds) != bytes)
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                                 "input '%s': binary_data_size must be %" PRIu64
                                 " (the shape's bytes)",
                                 name, bytes);
        if (bin_len - *bin_at < bytes)
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                                 "input '%s': %" PRIu64 " bytes of binary data expected, %" PRIu64
                                 " left",
                                 name, bytes, bin_len - *bin_at);
        memcpy(dst, binp + *bin_at, bytes);
        *bin_at += bytes;
        return 0;
    }
    if (!data)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "input '%s' has neither data nor binary_data_size", name);
    const af__span_t *sp = NULL;
    for (int k = 0; json_is_integer(data) && k < j->n_spans; k++)
        if (j->spans[k].input == (long)index)
            sp = &j->spans[k]; /* the last "data" of the input, as jansson keeps it */
    if (sp ? af__oip_text_read(j->body + sp->start, sp->end - sp->start, dt, (uint64_t)numel, dst,
                               why, sizeof(why)) != 0
           : af__oip_json_read(data, dt, (uint64_t)numel, dst, why, sizeof(why)) != 0)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "input '%s': %s", name, why);
    return 0;
}

/* 1 when o's string member key holds a NUL (the header is parsed with JSON_ALLOW_NUL). */
static int has_nul(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v);
}

/* One entry of "inputs": checked against the session's input of its name and written into its
 * own buffer, or into slices[k] (a batch's rows) when slices is given. 0 or -1. */
static int read_input(af__ijob_t *j, size_t index, const json_t *in, const af_buffer_t *slices,
                      uint64_t *bin_at)
{
    const char *name = NULL, *dts = NULL;
    json_t *shape = NULL, *params = NULL, *data = NULL;
    json_error_t je;
    if (json_unpack_ex((json_t *)in, &je, 0, "{s:s, s:o, s:s, s?o, s?o}", "name", &name, "shape",
                       &shape, "datatype", &dts, "parameters", &params, "data", &data) != 0)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "bad input: %s (want name, shape, datatype, data)", je.text);
    if (has_nul(in, "name") || has_nul(in, "datatype"))
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "input '%s': NUL in name or datatype", name);
    int32_t i = af_session_find_input(j->sess, name);
    af_io_info_t io;
    if (i < 0 || af_session_io_info(j->sess, 0, i, &io) != 0)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "unexpected inference input '%s' for model '%s'", name, j->m->name);
    if (j->in[i].data)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "input '%s' is given twice", name);
    int dt;
    if (af__oip_dtype_parse(dts, &dt) != 0)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "input '%s': unknown datatype '%s'", name,
                             dts);
    if (dt != (int)io.dtype)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "input '%s': datatype %s, the model expects %s", name, dts,
                             af__oip_dtype_name(io.dtype) ? af__oip_dtype_name(io.dtype) : "?");
    int64_t dims[AF_MAX_RANK];
    int32_t rank;
    if (read_shape(shape, dims, &rank) != 0)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "input '%s': shape must be an array of dims >= 0", name);
    int64_t numel = af__oip_numel(dims, rank);
    uint64_t size = af_dtype_size(io.dtype);
    void *dst = slices ? slices[i].data : NULL;
    uint64_t want = slices ? slices[i].bytes : io.bytes;
    uint64_t bytes = numel >= 0 && (uint64_t)numel <= want / (size ? size : 1)
                         ? (uint64_t)numel * size
                         : UINT64_MAX;
    if (!shape_matches(&io, dims, rank, j->rows) || io.dynamic || bytes != want)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "input '%s': shape does not match the model's (see "
                             "GET /v2/models/%s)",
                             name, j->m->name);
    void *buf = dst ? dst : malloc(bytes ? bytes : 1);
    if (!buf)
        return af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
    j->in[i] = (af_buffer_t){buf, bytes};
    return read_data(j, index, name, params, data, dt, numel, bytes, buf, bin_at);
}

static int want_binary(const json_t *params, int dflt)
{
    const json_t *b = params ? json_object_get(params, "binary_data") : NULL;
    return json_is_boolean(b) ? json_is_true(b) : dflt;
}

/* "outputs" and the request's "parameters": which outputs go back, and how. */
static int select_outputs(af__ijob_t *j, const json_t *outs, const json_t *params)
{
    int32_t n = af_session_output_count(j->sess);
    const json_t *bo = params ? json_object_get(params, "binary_data_output") : NULL;
    int dflt = json_is_true(bo);
    if (!outs) {
        for (int32_t k = 0; k < n; k++)
            j->want[k] = 1, j->binary[k] = (uint8_t)dflt;
        return 0;
    }
    if (!json_is_array(outs))
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "\"outputs\" must be an array");
    size_t i;
    const json_t *o;
    json_array_foreach(outs, i, o)
    {
        const char *name = json_string_value(json_object_get(o, "name"));
        int32_t k = name && !has_nul(o, "name") ? af_session_find_output(j->sess, name) : -1;
        if (k < 0)
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                                 "unexpected inference output '%s' for model '%s'",
                                 name ? name : "(no name)", j->m->name);
        j->want[k] = 1;
        j->binary[k] = (uint8_t)want_binary(json_object_get(o, "parameters"), dflt);
    }
    return 0;
}

/* The JSON header: parsed, "inputs" an array, "id" a string. 0 or -1 (j->hdr set when parsed). */
static int parse_header(af__ijob_t *j)
{
    size_t hl = j->header_len < 0 ? j->body_len : (size_t)j->header_len;
    if (j->header_len >= 0 && (uint64_t)j->header_len > j->body_len)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "Inference-Header-Content-Length %" PRId64
                             " exceeds the body (%zu bytes)",
                             j->header_len, j->body_len);
    /* the JSON DOM takes several times the text: reserved from the daemon's parse budget
     * (max_parse_bytes, shared with /v1 submissions) until the request is answered */
    uint64_t need = af__json_cost(j->body, hl);
    if (need > j->lim.max_parse_bytes)
        return af__ijob_fail(j, AF__DERR_TOO_LARGE,
                             "parsing this %zu-byte header would take about %" PRIu64
                             " MiB; max_parse_bytes is %" PRIu64
                             " MiB (send tensors as binary data)",
                             hl, need >> 20, j->lim.max_parse_bytes >> 20);
    uint_fast64_t used = atomic_load(&j->d->parse_used);
    do {
        if (used + need > j->lim.max_parse_bytes)
            return af__ijob_fail(j, AF__DERR_BUSY,
                                 "other requests are being parsed (max_parse_bytes); retry");
    } while (!atomic_compare_exchange_weak(&j->d->parse_used, &used, used + need));
    j->parse_reserved = need;
    json_error_t je;
    char *lean = NULL;
    size_t lean_n = 0;
    if (af__oip_fast_split(j->body, hl, &lean, &lean_n, j->spans, AF__OIP_MAX_SPECS, &j->n_spans))
        return af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
    /* JSON_ALLOW_NUL: a BYTES element may hold NULs ("\u0000"); names are checked for them */
    json_t *h = json_loadb(lean ? lean : j->body, lean ? lean_n : hl, JSON_ALLOW_NUL, &je),
           *ins = NULL, *outs = NULL, *params = NULL;
    free(lean);
    if (!h && lean) /* the error's line and column in the text as sent */
        json_decref(json_loadb(j->body, hl, JSON_ALLOW_NUL, &je));
    j->hdr = h;
    if (!h)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "malformed JSON at line %d column %d: %s",
                             je.line, je.column, je.text);
    if (json_unpack_ex(h, &je, 0, "{s:o, s?o, s?o}", "inputs", &ins, "outputs", &outs, "parameters",
                       &params) != 0 ||
        !json_is_array(ins))
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "an inference request needs \"inputs\": [...]");
    const json_t *id = json_object_get(h, "id");
    if (id && !json_is_string(id))
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "\"id\" must be a string");
    return 0;
}

/* Checks the inputs left unbound and the binary data left over; then selects the outputs. */
static int bind_rest(af__ijob_t *j, uint64_t at)
{
    size_t hl = j->header_len < 0 ? j->body_len : (size_t)j->header_len;
    uint64_t bin_len = j->body_len - hl;
    for (int32_t k = 0; k < af_session_input_count(j->sess); k++) {
        af_io_info_t io;
        af_session_io_info(j->sess, 0, k, &io);
        if (!j->in[k].data)
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST, "input '%s' of model '%s' is missing",
                                 io.name, j->m->name);
    }
    if (at != bin_len)
        return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                             "%" PRIu64 " bytes of binary data follow the header that no input "
                             "claims",
                             bin_len - at);
    return 0;
}

int af__ijob_bind(af__ijob_t *j, const af_buffer_t *slices)
{
    uint64_t at = 0;
    size_t i;
    const json_t *in, *ins = json_object_get(j->hdr, "inputs");
    json_array_foreach(ins, i, in) if (read_input(j, i, in, slices, &at) != 0) return -1;
    return bind_rest(j, at);
}

/* ---- the answer -------------------------------------------------------------------------- */

static int put_str(af__ijob_t *j, const char *s)
{
    json_t *v = json_string(s);
    char *t = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    json_decref(v);
    int rc = af__buf_printf(&j->res, &j->res_len, &j->res_cap, "%s", t ? t : "\"?\"");
    free(t);
    return rc;
}

/* The shape of output k as the round produced it. */
static int32_t out_shape(const af_io_info_t *io, uint64_t bytes, int64_t *dims)
{
    uint64_t numel = bytes / (af_dtype_size(io->dtype) ? af_dtype_size(io->dtype) : 1);
    int32_t unknown = -1, rank = io->rank < 0 ? 1 : io->rank;
    uint64_t known = 1;
    for (int32_t d = 0; io->rank > 0 && d < io->rank; d++) {
        dims[d] = io->shape[d];
        if (dims[d] < 0 && unknown < 0)
            unknown = d;
        else if (dims[d] >= 0)
            known *= (uint64_t)dims[d];
    }
    if (io->rank < 0 || (unknown >= 0 && known == 0)) {
        dims[0] = (int64_t)numel;
        return 1;
    }
    if (unknown >= 0)
        dims[unknown] = (int64_t)(numel / known);
    return rank;
}

static int put_output(af__ijob_t *j, int32_t k, int first)
{
    af_io_info_t io;
    af_session_io_info(j->sess, 1, k, &io);
    int64_t dims[AF_MAX_RANK];
    int32_t rank = out_shape(&io, j->out[k].bytes, dims);
    if (j->rows > 0 && rank > 0) /* a batch's rows of it: axis 0 is the request's */
        dims[0] = j->rows;
    const char *dt = af__oip_dtype_name(io.dtype);
    char **b = &j->res;
    size_t *l = &j->res_len, *c = &j->res_cap;
    if (af__buf_printf(b, l, c, "%s{\"name\":", first ? "" : ",") || put_str(j, io.name) ||
        af__buf_printf(b, l, c, ",\"datatype\":\"%s\",\"shape\":[", dt ? dt : "?"))
        return -1;
    for (int32_t d = 0; d < rank; d++)
        if (af__buf_printf(b, l, c, "%s%" PRId64, d ? "," : "", dims[d]))
            return -1;
    uint64_t numel = j->out[k].bytes / (af_dtype_size(io.dtype) ? af_dtype_size(io.dtype) : 1);
    if (j->binary[k])
        return af__buf_printf(b, l, c, "],\"parameters\":{\"binary_data_size\":%" PRIu64 "}}",
                              io.dtype == AF_DTYPE_STRING
                                  ? af__oip_bytes_size(j->out[k].data, numel)
                                  : j->out[k].bytes);
    return af__buf_printf(b, l, c, "],\"data\":") ||
           af__oip_json_write(b, l, c, j->out[k].data, io.dtype, numel) ||
           af__buf_printf(b, l, c, "}");
}

static int encode(af__ijob_t *j, const json_t *hdr)
{
    char **b = &j->res;
    size_t *l = &j->res_len, *c = &j->res_cap;
    const char *id = json_string_value(json_object_get(hdr, "id"));
    if (af__buf_printf(b, l, c, "{\"model_name\":") || put_str(j, j->m->name) ||
        af__buf_printf(b, l, c, ",\"model_version\":\"%" PRId64 "\"", j->m->version) ||
        (id && (af__buf_printf(b, l, c, ",\"id\":") || put_str(j, id))) ||
        af__buf_printf(b, l, c, ",\"outputs\":["))
        return -1;
    int32_t n = af_session_output_count(j->sess), first = 1, any_binary = 0;
    for (int32_t k = 0; k < n; k++)
        if (j->want[k]) {
            if (put_output(j, k, first))
                return -1;
            first = 0;
            any_binary |= j->binary[k];
        }
    if (af__buf_printf(b, l, c, "]}"))
        return -1;
    j->res_header_len = any_binary ? (int64_t)j->res_len : -1;
    for (int32_t k = 0; any_binary && k < n; k++) {
        if (!j->want[k] || !j->binary[k] || j->out[k].bytes == 0)
            continue;
        af_io_info_t io;
        af_session_io_info(j->sess, 1, k, &io);
        if (io.dtype == AF_DTYPE_STRING) { /* the strings, length-prefixed, not the handles */
            if (af__oip_bytes_write(b, l, c, j->out[k].data, j->out[k].bytes / sizeof(af_string_t)))
                return -1;
            continue;
        }
        if (j->res_len + j->out[k].bytes + 1 > j->res_cap) {
            size_t nc = j->res_len + (size_t)j->out[k].bytes + 1;
            char *nb = realloc(j->res, nc);
            if (!nb)
                return -1;
            j->res = nb;
            j->res_cap = nc;
        }
        memcpy(j->res + j->res_len, j->out[k].data, (size_t)j->out[k].bytes);
        j->res_len += (size_t)j->out[k].bytes;
    }
    return 0;
}

/* BYTES outputs the answer cannot carry: JSON strings are UTF-8, a binary element's length
 * prefix 4 bytes. 0, or -1 (400: the client asks for binary data, or gets a smaller string). */
static int check_strings(af__ijob_t *j)
{
    for (int32_t k = 0; k < af_session_output_count(j->sess); k++) {
        af_io_info_t io;
        af_session_io_info(j->sess, 1, k, &io);
        if (!j->want[k] || io.dtype != AF_DTYPE_STRING)
            continue;
        uint64_t numel = j->out[k].bytes / sizeof(af_string_t);
        const af_string_t *h = j->out[k].data;
        int64_t bad = j->binary[k] ? -1 : af__oip_strings_utf8(h, numel);
        for (uint64_t e = 0; bad < 0 && e < numel; e++)
            bad = h[e].len > UINT32_MAX ? (int64_t)e : -1;
        if (bad >= 0)
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                                 j->binary[k] ? "output '%s': element %" PRId64
                                                " holds 4 GiB or more, which a BYTES length "
                                                "prefix cannot say"
                                              : "output '%s': element %" PRId64
                                                " is not UTF-8, which a JSON string cannot "
                                                "carry: ask for it as binary data "
                                                "(\"binary_data\": true)",
                                 io.name, bad);
    }
    return 0;
}

int af__ijob_answer(af__ijob_t *j)
{
    if (select_outputs(j, json_object_get(j->hdr, "outputs"),
                       json_object_get(j->hdr, "parameters")) != 0 ||
        check_strings(j) != 0)
        return -1;
    if (encode(j, j->hdr) != 0)
        return af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
    return 0;
}

/* ---- off the loop -------------------------------------------------------------------------- */

static int alloc_outputs(af__ijob_t *j)
{
    int32_t n = af_session_output_count(j->sess);
    for (int32_t k = 0; k < n; k++) {
        af_io_info_t io;
        af_session_io_info(j->sess, 1, k, &io);
        uint64_t cap = io.dynamic ? DYNAMIC_OUTPUT_CAP : io.bytes;
        j->out[k] = (af_buffer_t){malloc(cap ? cap : 1), cap};
        if (!j->out[k].data)
            return af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
        j->out[k].bytes = cap;
    }
    return 0;
}

static void infer_work(uv_work_t *w)
{
    af__ijob_t *j = w->data;
    uint64_t t0 = af_now_ns();
    if ((j->hdr || parse_header(j) == 0) && af__ijob_bind(j, NULL) == 0 && alloc_outputs(j) == 0) {
        af_error_t err;
        af_error_clear(&err);
        uint64_t t1 = af_now_ns();
        int rc = af_session_run(j->sess, j->in, j->out, &err);
        j->ns_compute = af_now_ns() - t1;
        if (rc != 0)
            af__ijob_fail(j, af__derr_of(rc), "inference failed (%s): %s", af_err_name(rc),
                          err.msg[0] ? err.msg : af_strerror(rc));
        for (int32_t k = 0; rc == 0 && k < af_session_output_count(j->sess); k++) {
            af_io_info_t io;
            af_session_io_info(j->sess, 1, k, &io);
            if (io.dynamic && j->out[k].bytes > DYNAMIC_OUTPUT_CAP)
                rc = af__ijob_fail(j, AF__DERR_LIMIT,
                                   "output '%s' (%" PRIu64 " bytes) exceeds %u bytes", io.name,
                                   j->out[k].bytes, DYNAMIC_OUTPUT_CAP);
        }
        if (rc == 0)
            af__ijob_answer(j);
    }
    j->ns_total = af_now_ns() - t0;
}

static void job_free(af__ijob_t *j)
{
    for (int32_t k = 0; j->in && !j->rows && k < af_session_input_count(j->sess); k++)
        free(j->in[k].data); /* a batch member's are rows of the batch's */
    for (int32_t k = 0; j->out && k < af_session_output_count(j->sess); k++)
        free(j->out[k].data);
    free(j->in);
    free(j->out);
    free(j->want);
    free(j->binary);
    free(j->body);
    free(j->res);
    json_decref(j->hdr);
    atomic_fetch_sub(&j->d->parse_used, j->parse_reserved);
    af__variant_unref(j->v);
    af__model_unref(j->m);
    free(j);
}

static uint64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void af__ijob_finish(af__ijob_t *j, int status)
{
    af__daemon_t *d = j->d;
    af__oip_t *o = d->oip;
    o->inflight--;
    j->m->inflight--;
    if (j->picked) {
        j->m->inst_inflight[j->inst]--;
        j->m->inst_rounds[j->inst]++;
    }
    if (status != 0 && !j->failed)
        af__ijob_fail(j, AF__DERR_DRAINING, "the inference was canceled");
    af__model_t *m = j->m;
    m->last_unix_ms = unix_ms();
    if (j->failed) {
        m->failed++;
        af__reply_error(d, &j->r, j->kind, "%s", j->msg);
    } else {
        m->ok++;
        m->executions += j->rows == 0; /* a batch counts its execution once */
        m->ns_ok += j->ns_total;
        m->ns_compute += j->ns_compute;
        j->r.res->has_infer_header = j->res_header_len >= 0;
        j->r.res->infer_header_len = (uint64_t)(j->res_header_len >= 0 ? j->res_header_len : 0);
        af__reply_text(d, &j->r, 200,
                       j->res_header_len >= 0 ? "application/octet-stream" : "application/json",
                       j->res, j->res_len);
        j->res = NULL; /* the answer owns it */
    }
    job_free(j);
}

static void infer_after(uv_work_t *w, int status)
{
    af__ijob_finish(w->data, status);
}

/* ---- the steps of a request ------------------------------------------------------------ */

static void queue(af__ijob_t *j, uv_work_cb work, uv_after_work_cb after)
{
    int rc = uv_queue_work(j->d->loop, &j->w, work, after);
    if (rc != 0) {
        af__ijob_fail(j, AF__DERR_INTERNAL, "cannot queue the inference: %s", uv_strerror(rc));
        infer_after(&j->w, 0);
    }
}

int af__ijob_attach(af__ijob_t *j, af_session_t *s)
{
    size_t ni = (size_t)af_session_input_count(s), no = (size_t)af_session_output_count(s);
    j->sess = s;
    j->in = calloc(ni + 1, sizeof(*j->in));
    j->out = calloc(no + 1, sizeof(*j->out));
    j->want = calloc(no + 1, 1);
    j->binary = calloc(no + 1, 1);
    return j->in && j->out && j->want && j->binary ? 0 : -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Poly models: "NAME=d0,d1;..." of the request's inputs, sorted by name, into j->key. */
static int make_key(af__ijob_t *j)
{
    const json_t *in, *ins = json_object_get(j->hdr, "inputs");
    char *parts[AF__OIP_MAX_SPECS];
    int n = 0, rc = 0;
    size_t i, at = 0;
    json_array_foreach(ins, i, in)
    {
        const char *name = json_string_value(json_object_get(in, "name"));
        int32_t t = name ? af_graph_find_tensor(j->m->graph, name) : -1, rank;
        int64_t dims[AF_MAX_RANK];
        if (t < 0 || af_graph_tensor(j->m->graph, t)->kind != AF_TENSOR_INPUT ||
            strpbrk(name, "=;"))
            rc = af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                               "unexpected inference input '%s' for model '%s'",
                               name ? name : "(no name)", j->m->name);
        else if (read_shape(json_object_get(in, "shape"), dims, &rank) != 0 ||
                 rank != af_graph_tensor(j->m->graph, t)->rank)
            rc = af__ijob_fail(j, AF__DERR_BAD_REQUEST, "input '%s': shape must be %d dims >= 0",
                               name, (int)af_graph_tensor(j->m->graph, t)->rank);
        else if (n == AF__OIP_MAX_SPECS)
            rc = af__ijob_fail(j, AF__DERR_BAD_REQUEST, "more than %d inputs", AF__OIP_MAX_SPECS);
        if (rc != 0)
            break;
        char b[400];
        int k = snprintf(b, sizeof(b), "%.200s=", name);
        for (int32_t d = 0; d < rank; d++)
            k += snprintf(b + k, sizeof(b) - (size_t)k, "%s%" PRId64, d ? "," : "", dims[d]);
        parts[n++] = strdup(b);
    }
    qsort(parts, (size_t)n, sizeof(char *), cmp_str);
    for (int k = 0; k < n; k++) {
        size_t l = strlen(parts[k]);
        if (rc == 0 && at + l + 2 > sizeof(j->key))
            rc = af__ijob_fail(j, AF__DERR_BAD_REQUEST, "the input names and dims are too long");
        if (rc == 0)
            at +=
                (size_t)snprintf(j->key + at, sizeof(j->key) - at, "%s%s", k ? ";" : "", parts[k]);
        free(parts[k]);
    }
    return rc;
}

/* Batching models: j->rows (axis 0 of every input, 1..max_batch_size) and j->rest (the key
 * without axis 0: what the requests of one batch share). 0 or -1. */
static int split_rows(af__ijob_t *j)
{
    char buf[sizeof(j->key)], *save = NULL;
    size_t at = 0;
    snprintf(buf, sizeof(buf), "%s", j->key);
    for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(t, '='), *end;
        long long r = eq ? strtoll(eq + 1, &end, 10) : -1;
        if (r < 1 || r > j->m->cfg.max_batch || (j->rows && r != j->rows))
            return af__ijob_fail(j, AF__DERR_BAD_REQUEST,
                                 "model '%s' batches along axis 0: every input needs the same "
                                 "axis 0 of 1..%" PRId64 " (its max_batch_size)",
                                 j->m->name, j->m->cfg.max_batch);
        j->rows = r;
        *eq = 0;
        at += (size_t)snprintf(j->rest + at, sizeof(j->rest) - at, "%s%s=%s", at ? ";" : "", t,
                               *end == ',' ? end + 1 : end);
    }
    return 0;
}

static void shape_work(uv_work_t *w)
{
    af__ijob_t *j = w->data;
    if (parse_header(j) == 0 && make_key(j) == 0 && j->m->cfg.batching)
        split_rows(j);
}

static void build_work(uv_work_t *w)
{
    af__ijob_t *j = w->data;
    af_error_t err;
    af_error_clear(&err);
    j->v = af__variant_build(j->m, j->key, j->ex, &j->plan_opts, &j->lim, &j->pd,
                             &j->d->cancel_plans, &err);
    if (!j->v)
        af__ijob_fail(j, af__derr_of(err.code), "cannot plan model '%s' for %s: %s", j->m->name,
                      j->key, err.msg[0] ? err.msg : af_strerror(err.code));
}

static void run_on(af__ijob_t *j, af__variant_t *v)
{
    if (j->batch)
        return af__batch_run(j->batch, v);
    v->refs++;
    j->v = v;
    j->inst = af__model_pick(j->m);
    j->picked = 1;
    if (af__ijob_attach(j, v->inst[j->inst]) != 0) {
        af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
        return infer_after(&j->w, 0);
    }
    queue(j, infer_work, infer_after);
}

static void build_after(uv_work_t *w, int status)
{
    af__ijob_t *j = w->data;
    if (status != 0 && !j->failed)
        af__ijob_fail(j, AF__DERR_DRAINING, "the inference was canceled");
    if (j->failed)
        return j->batch ? af__batch_run(j->batch, NULL) : infer_after(w, status);
    af__variant_t *built = j->v;
    af__oip_t *o = j->d->oip;
    j->v = NULL;
    o->variant_builds++;
    *(built->restored ? &o->plans_restored : &o->plans_made) += 1;
    run_on(j, af__variant_add(j->m, built, j->d->cfg.max_shapes));
}

void af__ijob_variant(af__ijob_t *j)
{
    af__variant_t *v = af__variant_find(j->m, j->key);
    if (v)
        return run_on(j, v);
    int rc = uv_queue_work(j->d->loop, &j->w, build_work, build_after);
    if (rc != 0) {
        af__ijob_fail(j, AF__DERR_INTERNAL, "cannot queue the planning: %s", uv_strerror(rc));
        build_after(&j->w, 0);
    }
}

static void shape_after(uv_work_t *w, int status)
{
    af__ijob_t *j = w->data;
    if (status != 0 || j->failed)
        return infer_after(w, status);
    if (j->m->cfg.batching)
        return af__batch_add(j);
    af__ijob_variant(j);
}

/* Inference-Header-Content-Length: -1 absent, else the byte count; -2 malformed. */
static int64_t header_len(const af__dreq_t *req)
{
    if (!req->infer_header)
        return -1;
    int64_t hl = 0;
    for (size_t i = 0; i < req->infer_header_len; i++) {
        char ch = req->infer_header[i];
        if (ch < '0' || ch > '9' || hl > INT64_MAX / 10 - 10)
            return -2;
        hl = hl * 10 + (ch - '0');
    }
    return req->infer_header_len ? hl : -2;
}

void af__oip_infer(af__daemon_t *d, af__model_t *m, const af__dreq_t *req, af__reply_t *r)
{
    af__oip_t *o = d->oip;
    if (d->draining)
        return af__reply_error(d, r, AF__DERR_DRAINING, "shutting down: not starting inferences");
    if (o->inflight >= d->cfg.max_infers)
        return af__reply_error(d, r, AF__DERR_TOO_MANY,
                               "%" PRId64 " inferences in flight ([models] max_inflight); retry",
                               o->inflight);
    if (m->cfg.max_inflight && m->inflight >= m->cfg.max_inflight)
        return af__reply_error(d, r, AF__DERR_TOO_MANY,
                               "model '%s' has %" PRId64 " inferences in flight (its config.json "
                               "max_inflight); retry",
                               m->name, m->inflight);
    int64_t hl = header_len(req);
    if (hl == -2)
        return af__reply_error(d, r, AF__DERR_BAD_REQUEST,
                               "Inference-Header-Content-Length is not a byte count");
    af__ijob_t *j = calloc(1, sizeof(*j));
    if (j && !(j->body = malloc(req->body_len + 1)))
        free(j), j = NULL;
    if (!j)
        return af__reply_error(d, r, AF__DERR_BUSY, "out of memory");
    memcpy(j->body, req->body, req->body_len);
    j->body[req->body_len] = 0;
    *j = (af__ijob_t){.d = d,
                      .m = m,
                      .r = *r,
                      .body = j->body,
                      .body_len = req->body_len,
                      .header_len = hl,
                      .ex = o->ex,
                      .plan_opts = d->cfg.plan_opts,
                      .lim = d->cfg.lim,
                      .pd = o->pd};
    j->pd.max_files = d->cfg.max_plan_files;
    af_plan_opts_resolve(&j->plan_opts, d->cfg.model_kernels); /* as the model's load did */
    j->w.data = j;
    af__model_ref(m);
    o->inflight++;
    m->inflight++;
    if (m->poly)
        return queue(j, shape_work, shape_after);
    j->inst = af__model_pick(m);
    j->picked = 1;
    if (af__ijob_attach(j, m->inst[j->inst]) != 0) {
        af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
        return infer_after(&j->w, 0);
    }
    if (af__oip_on_loop(d, m, req)) { /* no threadpool trip: parsed, run and answered right here */
        infer_work(&j->w);
        o->loop_win_busy += j->ns_total;
        o->loop_requests++;
        return infer_after(&j->w, 0);
    }
    queue(j, infer_work, infer_after);
}
