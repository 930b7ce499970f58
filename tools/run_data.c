/*
 * Real data in and out of a session (run_data.h): used by `arenaflow run --input` and
 * `arenaflow onnx-test`.
 */
#include "tools/run_data.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

static int is_dims(const char *s)
{
    for (; *s; s++)
        if (!(*s >= '0' && *s <= '9') && *s != ',')
            return 0;
    return 1;
}

int data_parse_arg(const char *arg, data_arg_t *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    for (const char *eq = strchr(arg, '='); eq; eq = strchr(eq + 1, '=')) {
        size_t n = (size_t)(eq - arg);
        if (n == 0 || n >= sizeof(out->name))
            continue;
        struct stat st;
        int file = stat(eq + 1, &st) == 0 && S_ISREG(st.st_mode);
        if (!file && !is_dims(eq + 1))
            continue;
        memcpy(out->name, arg, n);
        out->name[n] = 0;
        out->file = file ? eq + 1 : NULL;
        return 0;
    }
    const char *eq = strchr(arg, '=');
    if (!eq)
        snprintf(why, cap, "--input '%s': expected NAME=FILE.npy, NAME=FILE.pb or NAME=d0,d1,...",
                 arg);
    else
        snprintf(why, cap, "--input '%s': no such file '%s' (and not dims d0,d1,...)", arg, eq + 1);
    return -1;
}

void data_dims_spec(const char *name, const af_tensor_t *t, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s=", name);
    for (int32_t i = 0; i < t->rank && n > 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, "%s%lld", i ? "," : "", (long long)t->shape[i]);
}

static void shape_str(char *out, size_t cap, int32_t rank, const int64_t *shape)
{
    int n = snprintf(out, cap, "[");
    for (int32_t i = 0; i < rank && n > 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n > 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, "]");
}

int data_bind(const af_session_t *s, const data_in_t *ins, int n, af_buffer_t *bufs, char *why,
              size_t cap)
{
    int32_t ni = af_session_input_count(s);
    for (int32_t i = 0; i < ni; i++)
        bufs[i] = (af_buffer_t){NULL, 0};
    for (int k = 0; k < n; k++) {
        int32_t i = ins[k].name && ins[k].name[0] ? af_session_find_input(s, ins[k].name) : k;
        af_io_info_t io;
        if (i < 0 || af_session_io_info(s, 0, i, &io)) {
            snprintf(why, cap, "the graph has no input '%s'%s",
                     ins[k].name ? ins[k].name : "(by position)",
                     ins[k].name ? "" : " at that position");
            return -1;
        }
        const af_tensor_t *t = &ins[k].t;
        /* NumPy has no bfloat16: ONNX's own test data stores bf16 tensors as their uint16 bit
         * patterns, so a u16 tensor binds to a bf16 input bit for bit */
        int bf16_bits = io.dtype == AF_DTYPE_BF16 && t->dtype == AF_DTYPE_U16;
        if (io.dtype != AF_DTYPE_UNKNOWN && io.dtype != t->dtype && !bf16_bits) {
            snprintf(why, cap, "input '%s' is %s, the data is %s", io.name, af_dtype_name(io.dtype),
                     af_dtype_name(t->dtype));
            return -1;
        }
        if (!io.dynamic && io.bytes != t->bytes) {
            char a[128], b[128];
            shape_str(a, sizeof a, io.rank, io.shape);
            shape_str(b, sizeof b, t->rank, t->shape);
            snprintf(why, cap, "input '%s' has shape %s (%llu bytes), the data %s (%llu bytes)",
                     io.name, a, (unsigned long long)io.bytes, b, (unsigned long long)t->bytes);
            return -1;
        }
        bufs[i] = (af_buffer_t){t->data, t->bytes};
    }
    return 0;
}

int data_output(const af_session_t *s, int32_t i, af_tensor_t *view, char *why, size_t cap)
{
    af_io_info_t io;
    memset(view, 0, sizeof(*view));
    if (af_session_io_info(s, 1, i, &io)) {
        snprintf(why, cap, "no output %d", (int)i);
        return -1;
    }
    uint64_t bytes = 0;
    const void *d = af_session_output_data(s, i, &bytes);
    if (!d || io.rank < 0 || io.rank > AF_MAX_RANK) {
        snprintf(why, cap, "output '%s' was not produced%s", io.name,
                 io.rank < 0 ? " (unknown rank)" : "");
        return -1;
    }
    view->dtype = io.dtype;
    view->rank = io.rank;
    for (int32_t k = 0; k < io.rank; k++)
        view->shape[k] = io.shape[k];
    view->data = (void *)d;
    view->bytes = bytes;
    if (af_tensor_numel(view) * af_dtype_size(view->dtype) != bytes) {
        snprintf(why, cap, "output '%s': %llu bytes do not match its shape", io.name,
                 (unsigned long long)bytes);
        return -1;
    }
    return 0;
}

typedef struct stats {
    double min, max, sum;
    uint64_t n, nan;
} stats_t;

static void stats(const af_tensor_t *t, stats_t *st)
{
    *st = (stats_t){.min = INFINITY, .max = -INFINITY};
    uint64_t n = af_tensor_numel(t);
    for (uint64_t i = 0; i < n; i++) {
        double v = af_tensor_get(t, i);
        if (isnan(v)) {
            st->nan++;
            continue;
        }
        st->min = v < st->min ? v : st->min;
        st->max = v > st->max ? v : st->max;
        st->sum += v;
        st->n++;
    }
}

/* The first strings of a string tensor, quoted (bytes outside printable ASCII as \xNN). */
static void print_strings(FILE *f, const af_tensor_t *t)
{
    const af_string_t *h = t->data;
    uint64_t n = af_tensor_numel(t);
    fprintf(f, "  [");
    for (uint64_t i = 0; i < n && i < 6; i++) {
        fprintf(f, "%s\"", i ? ", " : "");
        for (uint64_t k = 0; k < h[i].len && k < 40; k++) {
            unsigned char ch = (unsigned char)h[i].data[k];
            if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
                fputc(ch, f);
            else
                fprintf(f, "\\x%02x", ch);
        }
        fprintf(f, "%s\"", h[i].len > 40 ? "..." : "");
    }
    fprintf(f, "%s]\n", n > 6 ? ", ..." : "");
}

void data_print_summary(FILE *f, const char *name, const af_tensor_t *t)
{
    char sh[160];
    shape_str(sh, sizeof sh, t->rank, t->shape);
    if (t->dtype == AF_DTYPE_STRING) {
        fprintf(f, "  %-20s %-5s %-18s", name, af_dtype_name(t->dtype), sh);
        print_strings(f, t);
        return;
    }
    stats_t st;
    stats(t, &st);
    fprintf(f, "  %-20s %-5s %-18s", name, af_dtype_name(t->dtype), sh);
    if (st.n)
        fprintf(f, " min %.6g max %.6g mean %.6g", st.min, st.max, st.sum / (double)st.n);
    if (st.nan)
        fprintf(f, " (%llu NaN)", (unsigned long long)st.nan);
    uint64_t n = af_tensor_numel(t);
    fprintf(f, "  [");
    for (uint64_t i = 0; i < n && i < 6; i++)
        fprintf(f, "%s%.6g", i ? ", " : "", af_tensor_get(t, i));
    fprintf(f, "%s]\n", n > 6 ? ", ..." : "");
}

json_t *data_summary_json(const char *name, const af_tensor_t *t)
{
    stats_t st;
    stats(t, &st);
    json_t *sh = json_array(), *first = json_array();
    for (int32_t i = 0; sh && i < t->rank; i++)
        json_array_append_new(sh, json_integer((json_int_t)t->shape[i]));
    uint64_t n = af_tensor_numel(t);
    for (uint64_t i = 0; first && i < n && i < 6; i++) {
        double v = af_tensor_get(t, i);
        json_array_append_new(first, isfinite(v) ? json_real(v)
                                                 : json_string(isnan(v) ? "nan"
                                                               : v > 0  ? "inf"
                                                                        : "-inf"));
    }
    json_t *o = json_pack("{s:s, s:s, s:o, s:I, s:I}", "name", name, "dtype",
                          af_dtype_name(t->dtype), "shape", sh ? sh : json_null(), "elements",
                          (json_int_t)n, "nan", (json_int_t)st.nan);
    if (!o) {
        json_decref(first);
        return NULL;
    }
    if (st.n) {
        json_object_set_new(o, "min", json_real(st.min));
        json_object_set_new(o, "max", json_real(st.max));
        json_object_set_new(o, "mean", json_real(st.sum / (double)st.n));
    }
    json_object_set_new(o, "first", first ? first : json_null());
    return o;
}

void data_file_name(const char *name, int idx, char *out, size_t cap)
{
    char b[201];
    size_t n = 0;
    for (const char *p = name ? name : ""; *p && n < sizeof(b) - 1; p++) {
        unsigned char c = (unsigned char)*p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || (c == '.' && n > 0);
        b[n++] = ok ? (char)c : '_';
    }
    b[n] = 0;
    if (n == 0)
        snprintf(out, cap, "output_%d.npy", idx);
    else
        snprintf(out, cap, "%s.npy", b);
}

void data_compare(const af_tensor_t *got, const af_tensor_t *want, double rtol, double atol,
                  data_cmp_t *c)
{
    memset(c, 0, sizeof(*c));
    af_tensor_t w16;
    if (got->dtype == AF_DTYPE_BF16 && want->dtype == AF_DTYPE_U16) { /* see data_bind */
        w16 = *want;
        w16.dtype = AF_DTYPE_BF16;
        want = &w16;
    }
    if (got->dtype != want->dtype) {
        snprintf(c->why, sizeof c->why, "dtype %s, expected %s", af_dtype_name(got->dtype),
                 af_dtype_name(want->dtype));
        return;
    }
    int same = got->rank == want->rank;
    for (int32_t i = 0; same && i < got->rank; i++)
        same = got->shape[i] == want->shape[i];
    if (!same) {
        char a[72], b[72];
        shape_str(a, sizeof a, got->rank, got->shape);
        shape_str(b, sizeof b, want->rank, want->shape);
        snprintf(c->why, sizeof c->why, "shape %s, expected %s", a, b);
        return;
    }
    uint64_t n = af_tensor_numel(want);
    c->ok = 1;
    if (got->dtype == AF_DTYPE_STRING) { /* the strings' bytes, exactly */
        const af_string_t *g = got->data, *w = want->data;
        for (uint64_t i = 0; c->ok && i < n; i++)
            if (g[i].len != w[i].len || (w[i].len && memcmp(g[i].data, w[i].data, w[i].len))) {
                c->ok = 0;
                c->worst = i;
                snprintf(c->why, sizeof c->why,
                         "string %llu has %llu bytes \"%.40s\", expected "
                         "%llu \"%.40s\"",
                         (unsigned long long)i, (unsigned long long)g[i].len,
                         g[i].len ? g[i].data : "", (unsigned long long)w[i].len,
                         w[i].len ? w[i].data : "");
            }
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        double g = af_tensor_get(got, i), w = af_tensor_get(want, i), d;
        if (isnan(g) || isnan(w))
            d = isnan(g) && isnan(w) ? 0 : INFINITY;
        else if (isinf(g) || isinf(w))
            d = g == w ? 0 : INFINITY;
        else
            d = fabs(g - w);
        if (d > c->max_abs)
            c->max_abs = d;
        if (c->ok && d > atol + rtol * fabs(w)) {
            c->ok = 0;
            c->worst = i;
            c->got = g;
            c->want = w;
        }
    }
}

/* mkdir -p: every missing component of dir is created (0755). 0, or -1 with errno set. */
int data_make_dirs(const char *dir)
{
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return -1;
        p[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}
