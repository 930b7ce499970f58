/*
 * MiniMalloc CSV reader: one buffer per line, lifetimes [lower, upper).
 *
 * The first line that is not blank or a '#' comment is the header when every one of its fields
 * is a column name (so a data row can never be taken for a header): "id" (or "buffer",
 * "buffer_id"), "lower" (or "begin"), "upper", or "end" (inclusive: upper = end + 1), "size", and
 * "offset" or "hint" (read, not used: offsets are what the placer computes). Columns may come in
 * any order; lower, upper and size are required, and without an id column a buffer's id is its
 * row number (0 first). Without a header the columns are id,lower,upper,size with an optional
 * offset fifth, as MiniMalloc writes them. MiniMalloc's "alignment" and "gaps" columns are
 * refused by name (the placer takes one alignment for all buffers and has no gaps).
 *
 * Ids are kept as written (trimmed of spaces), any text without a comma: "b1" or "17". Every
 * other line is a buffer: a wrong field count, a number that is not a plain decimal integer, a
 * negative size or time, or lower >= upper is an error naming the line, never a skipped row.
 *
 * Lock rule: none; reentrant.
 */
#include "pack/pack_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { COL_ID, COL_LOWER, COL_UPPER, COL_END, COL_SIZE, COL_IGNORED, COL_REFUSED, COL_MAX = 16 };

static const struct {
    const char *name;
    int col;
} col_names[] = {
    {"id", COL_ID},        {"buffer", COL_ID},         {"buffer_id", COL_ID},
    {"lower", COL_LOWER},  {"begin", COL_LOWER},       {"upper", COL_UPPER},
    {"end", COL_END},      {"size", COL_SIZE},         {"offset", COL_IGNORED},
    {"hint", COL_IGNORED}, {"alignment", COL_REFUSED}, {"gaps", COL_REFUSED},
};

typedef struct field {
    const char *p;
    size_t len;
} field_t;

/* Splits line q (length ll) at commas into at most COL_MAX + 1 trimmed fields. */
static int split(const char *q, size_t ll, field_t *f)
{
    int nf = 0;
    size_t start = 0;
    for (size_t i = 0; i <= ll && nf <= COL_MAX; i++) {
        if (i < ll && q[i] != ',')
            continue;
        size_t a = start, b = i;
        while (a < b && isspace((unsigned char)q[a]))
            a++;
        while (b > a && isspace((unsigned char)q[b - 1]))
            b--;
        f[nf++] = (field_t){q + a, b - a};
        start = i + 1;
    }
    return nf;
}

static int parse_i64(field_t f, int64_t *out)
{
    char buf[32];
    if (f.len == 0 || f.len >= sizeof(buf))
        return -1;
    memcpy(buf, f.p, f.len);
    buf[f.len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end || !(isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '+'))
        return -1;
    *out = v;
    return 0;
}

/* The column a header field names, or -1. */
static int column_of(field_t f)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(col_names); i++)
        if (strlen(col_names[i].name) == f.len && strncasecmp(col_names[i].name, f.p, f.len) == 0)
            return col_names[i].col;
    return -1;
}

typedef struct layout {
    int ncols;
    int col[COL_MAX + 1]; /* what each field holds */
    int has_id;
} layout_t;

/* A header: every field a column name. Returns 1 (and fills *lay), 0 when the line is not a
 * header, or an error. */
static int read_header(const field_t *f, int nf, size_t line, layout_t *lay, af_error_t *err)
{
    int known = 0, unknown = -1;
    for (int i = 0; i < nf; i++) {
        if (column_of(f[i]) >= 0)
            known++;
        else if (unknown < 0)
            unknown = i;
    }
    if (unknown >= 0 && known > 0 && known >= nf / 2)
        return af__err(err, AF_EPARSE, "line %zu: unknown column '%.*s' in the header", line,
                       (int)(f[unknown].len > 40 ? 40 : f[unknown].len), f[unknown].p);
    if (unknown >= 0)
        return 0;
    if (nf > COL_MAX)
        return af__err(err, AF_EPARSE, "line %zu: too many columns", line);
    int seen[COL_MAX] = {0};
    lay->ncols = nf;
    for (int i = 0; i < nf; i++) {
        int c = column_of(f[i]);
        if (c == COL_REFUSED)
            return af__err(err, AF_EPARSE,
                           "line %zu: column '%.*s' is not supported (one alignment for all "
                           "buffers: --alignment; no gaps)",
                           line, (int)f[i].len, f[i].p);
        if (c != COL_IGNORED && seen[c == COL_END ? COL_UPPER : c]++)
            return af__err(err, AF_EPARSE, "line %zu: column '%.*s' given twice", line,
                           (int)f[i].len, f[i].p);
        lay->col[i] = c;
    }
    static const char *const need[] = {
        [COL_LOWER] = "lower", [COL_UPPER] = "upper", [COL_SIZE] = "size"};
    for (int c = COL_LOWER; c <= COL_SIZE; c++)
        if (need[c] && !seen[c])
            return af__err(err, AF_EPARSE, "line %zu: the header has no '%s' column", line,
                           need[c]);
    lay->has_id = seen[COL_ID] > 0;
    return 1;
}

/* The growing result. */
typedef struct out {
    af_interval_t *iv;
    size_t n, cap_iv;
    size_t *id_at; /* offset of each id in text */
    size_t cap_at;
    char *text;
    size_t ntext, cap_text;
} out_t;

static void out_free(out_t *o)
{
    af__free(o->iv);
    af__free(o->id_at);
    af__free(o->text);
}

static int add_row(out_t *o, af_interval_t v, const char *id, size_t idlen)
{
    if (af__grow((void **)&o->iv, &o->cap_iv, o->n + 1, sizeof *o->iv) ||
        af__grow((void **)&o->id_at, &o->cap_at, o->n + 1, sizeof *o->id_at) ||
        af__grow((void **)&o->text, &o->cap_text, o->ntext + idlen + 1, 1))
        return AF_ENOMEM;
    o->iv[o->n] = v;
    o->id_at[o->n] = o->ntext;
    memcpy(o->text + o->ntext, id, idlen);
    o->text[o->ntext + idlen] = '\0';
    o->ntext += idlen + 1;
    o->n++;
    return 0;
}

/* One data row under layout lay. */
static int read_row(out_t *o, const layout_t *lay, const field_t *f, int nf, size_t line,
                    af_error_t *err)
{
    static const char *const what[] = {"id", "lower", "upper", "end", "size"};
    if (nf != lay->ncols)
        return af__err(err, AF_EPARSE, "line %zu: %d fields, expected %d", line, nf, lay->ncols);
    int64_t v[COL_SIZE + 1] = {0};
    field_t id = {NULL, 0};
    for (int i = 0; i < nf; i++) {
        int c = lay->col[i];
        if (c == COL_IGNORED)
            continue;
        if (c == COL_ID) {
            id = f[i];
            if (id.len == 0)
                return af__err(err, AF_EPARSE, "line %zu: empty id", line);
        } else if (parse_i64(f[i], &v[c])) {
            return af__err(err, AF_EPARSE, "line %zu: field '%s' is not an integer: '%.*s'", line,
                           what[c], (int)(f[i].len > 40 ? 40 : f[i].len), f[i].p);
        }
    }
    int64_t lower = v[COL_LOWER], upper = v[COL_UPPER], size = v[COL_SIZE];
    for (int i = 0; i < nf; i++)
        if (lay->col[i] == COL_END) {
            if (v[COL_END] == INT64_MAX)
                return af__err(err, AF_EPARSE, "line %zu: 'end' too large", line);
            upper = v[COL_END] + 1;
        }
    if (lower < 0 || upper <= lower || size < 0)
        return af__err(err, AF_EPARSE,
                       "line %zu: need 0 <= lower < upper and size >= 0 (got %lld, %lld, %lld)",
                       line, (long long)lower, (long long)upper, (long long)size);
    char num[24];
    if (!id.p) { /* no id column: the row number */
        int len = snprintf(num, sizeof num, "%zu", o->n);
        id = (field_t){num, (size_t)len};
    }
    if (add_row(o, (af_interval_t){lower, upper, (uint64_t)size, 0}, id.p, id.len))
        return af__err(err, AF_ENOMEM, "out of memory");
    return 0;
}

/* Hands the rows out: ids as one block of n pointers followed by the strings. */
static int finish(out_t *o, af_interval_t **iv_out, char ***ids_out, size_t *n_out, af_error_t *err)
{
    size_t head = (o->n + 1) * sizeof(char *);
    char **ids = af__malloc(head + o->ntext + 1);
    if (!ids)
        return af__err(err, AF_ENOMEM, "out of memory");
    char *strs = (char *)ids + head;
    if (o->ntext)
        memcpy(strs, o->text, o->ntext);
    for (size_t i = 0; i < o->n; i++)
        ids[i] = strs + o->id_at[i];
    ids[o->n] = NULL;
    *iv_out = o->iv;
    *ids_out = ids;
    *n_out = o->n;
    o->iv = NULL;
    return 0;
}

int af_intervals_parse_csv(const char *text, size_t len, af_interval_t **iv_out, char ***ids_out,
                           size_t *n_out, af_error_t *err)
{
    out_t o = {0};
    layout_t lay = {4, {COL_ID, COL_LOWER, COL_UPPER, COL_SIZE}, 1};
    int first = 1, rc = 0;
    size_t line = 0;
    field_t f[COL_MAX + 1];
    for (const char *p = text, *end = text + len; p < end && rc == 0;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *q = p;
        size_t ll = (size_t)(eol - p);
        p = eol + 1;
        line++;
        if (ll && q[ll - 1] == '\r')
            ll--;
        size_t k = 0;
        while (k < ll && isspace((unsigned char)q[k]))
            k++;
        if (k == ll || q[k] == '#')
            continue;
        int nf = split(q, ll, f);
        if (nf > COL_MAX) {
            rc = af__err(err, AF_EPARSE, "line %zu: too many fields", line);
            break;
        }
        if (first) {
            first = 0;
            rc = read_header(f, nf, line, &lay, err);
            if (rc == 1) {
                rc = 0;
                continue;
            }
            if (rc)
                break;
            if (nf == 5)
                lay = (layout_t){5, {COL_ID, COL_LOWER, COL_UPPER, COL_SIZE, COL_IGNORED}, 1};
        }
        rc = read_row(&o, &lay, f, nf, line, err);
    }
    if (rc == 0)
        rc = finish(&o, iv_out, ids_out, n_out, err);
    out_free(&o);
    return rc;
}
