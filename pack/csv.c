/*
 * MiniMalloc CSV reader: "id,lower,upper,size" per line, a header line first (recognised by a
 * non-numeric first field), blank lines and '#' comments skipped, an optional fifth column
 * (offset, as this tool writes) ignored. Every number must be a plain decimal integer; sizes
 * and times must be non-negative and lower < upper.
 */
#include "pack/pack_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int parse_i64(const char *s, size_t len, int64_t *out)
{
    char buf[32];
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* A header: the first field starts with a letter (e.g. "id"). */
static int line_is_header(const char *q, size_t ll)
{
    size_t k = 0;
    while (k < ll && isspace((unsigned char)q[k]))
        k++;
    return k < ll && isalpha((unsigned char)q[k]);
}

int af_intervals_parse_csv(const char *text, size_t len, af_interval_t **iv_out, int64_t **ids_out,
                           size_t *n_out, af_error_t *err)
{
    af_interval_t *iv = NULL;
    int64_t *ids = NULL;
    size_t n = 0, cap_iv = 0, cap_ids = 0, line = 0;
    const char *p = text, *end = text + len;
    static const char *names[] = {"id", "lower", "upper", "size", "offset"};
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        line++;
        const char *q = p;
        size_t ll = (size_t)(eol - p);
        p = eol + 1;
        if (ll && q[ll - 1] == '\r')
            ll--;
        size_t k = 0;
        while (k < ll && isspace((unsigned char)q[k]))
            k++;
        if (k == ll || q[k] == '#')
            continue;
        int64_t f[5];
        int nf = 0;
        const char *fs = q;
        int bad = -1;
        for (size_t i = 0; i <= ll; i++) {
            if (i < ll && q[i] != ',')
                continue;
            if (nf >= 5) {
                bad = 5;
                break;
            }
            if (parse_i64(fs, (size_t)(q + i - fs), &f[nf])) {
                bad = nf;
                break;
            }
            nf++;
            fs = q + i + 1;
        }
        if (bad == 0 && n == 0 && line_is_header(q, ll))
            continue;
        if (bad >= 5 || (bad < 0 && nf < 4)) {
            af__free(iv);
            af__free(ids);
            return af__err(err, AF_EPARSE, "line %zu: expected 4 fields id,lower,upper,size", line);
        }
        if (bad >= 0) {
            af__free(iv);
            af__free(ids);
            return af__err(err, AF_EPARSE, "line %zu: field '%s' is not an integer", line,
                           names[bad]);
        }
        if (f[1] < 0 || f[2] <= f[1] || f[3] < 0) {
            af__free(iv);
            af__free(ids);
            return af__err(err, AF_EPARSE,
                           "line %zu: need 0 <= lower < upper and size >= 0 (got %lld, %lld, %lld)",
                           line, (long long)f[1], (long long)f[2], (long long)f[3]);
        }
        if (af__grow((void **)&iv, &cap_iv, n + 1, sizeof(*iv)) ||
            af__grow((void **)&ids, &cap_ids, n + 1, sizeof(*ids))) {
            af__free(iv);
            af__free(ids);
            return af__err(err, AF_ENOMEM, "out of memory");
        }
        iv[n] = (af_interval_t){f[1], f[2], (uint64_t)f[3], 0};
        ids[n] = f[0];
        n++;
    }
    *iv_out = iv;
    *ids_out = ids;
    *n_out = n;
    return 0;
}
