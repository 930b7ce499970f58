/*
 * The value grammar (sizes, booleans) and the option-table mechanism every component uses
 * (planner/opts.c, executor/workers.c, and the CLI and daemon through the public header).
 *
 * A table is an array of af_opt_t rows: key, type, field offset, default spelt as in a config
 * file, range or name list, help. Defaults go through the same parser as configured values, so
 * a default that does not parse is caught by the tests that initialise every table, and the
 * canonical format (af_opts_format) reads back to the same struct.
 *
 * Lock rule: none; the functions touch only the caller's struct.
 */
#include "common/common_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

int af_parse_size(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return AF_EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return AF_EINVAL;
    unsigned shift = 0;
    if (*end) {
        const char *units = "KMGT", *hit = strchr(units, *end >= 'a' ? *end - 32 : *end);
        if (!hit || !*hit)
            return AF_EINVAL;
        shift = 10u * (unsigned)(hit - units + 1);
        end++;
        if (*end == 'i')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return AF_EINVAL;
    *out = (uint64_t)v << shift;
    return 0;
}

int af_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no",
                                                                                "off"};
    for (size_t i = 0; s && i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(s, no[i]) == 0)
            return *out = 0, 0;
    }
    return AF_EINVAL;
}

void af_format_bytes(char *out, size_t n, uint64_t b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(out, n, i ? "%.2f %s" : "%.0f %s", v, unit[i]);
}

static int parse_i64(const char *s, int64_t *out)
{
    if (!s || !((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
        return AF_EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return AF_EINVAL;
    *out = v;
    return 0;
}

/* What a value of the row must look like, for the error message. */
static void expect(const af_opt_t *o, char *buf, size_t n)
{
    size_t at = 0;
    switch (o->type) {
    case AF_OPT_BOOL:
        snprintf(buf, n, "a boolean (true/false, yes/no, on/off, 1/0)");
        return;
    case AF_OPT_AUTO_BOOL:
        snprintf(buf, n, "auto or a boolean (true/false, yes/no, on/off, 1/0)");
        return;
    case AF_OPT_SIZE:
        if (o->max)
            snprintf(buf, n, "a size in %lld..%lld (e.g. 256, 64K, 2G)", (long long)o->min,
                     (long long)o->max);
        else
            snprintf(buf, n, "a size (e.g. 256, 64K, 2G)%s",
                     o->flags & AF_OPT_POW2 ? ", a power of two" : "");
        return;
    case AF_OPT_UINT:
    case AF_OPT_INT:
    case AF_OPT_INT64:
        snprintf(buf, n, "an integer in %lld..%lld", (long long)o->min, (long long)o->max);
        return;
    case AF_OPT_DOUBLE:
        snprintf(buf, n,
                 o->flags & AF_OPT_RATE ? "a positive rate (e.g. 16e9, 16G)"
                                        : "a non-negative number");
        return;
    case AF_OPT_NAME:
    case AF_OPT_ENUM:
        at = (size_t)snprintf(buf, n, "one of:");
        for (const char *const *nm = o->names(); *nm && at < n; nm++)
            at += (size_t)snprintf(buf + at, n - at, " %s", *nm);
        return;
    case AF_OPT_STRING:
        snprintf(buf, n, "a text of at most %zu bytes", o->size ? o->size - 1 : 0);
        return;
    }
}

/* Parses value for row o into *field; AF_EINVAL when it does not fit the row. */
static int parse_into(const af_opt_t *o, const char *value, void *field)
{
    uint64_t u;
    int64_t i;
    int b;
    switch (o->type) {
    case AF_OPT_BOOL:
        return af_parse_bool(value, (int *)field) ? AF_EINVAL : 0;
    case AF_OPT_AUTO_BOOL:
        if (strcmp(value, "auto") == 0)
            return *(int *)field = -1, 0;
        return af_parse_bool(value, (int *)field) ? AF_EINVAL : 0;
    case AF_OPT_SIZE:
        if (af_parse_size(value, &u) || u < (uint64_t)o->min || (o->max && u > (uint64_t)o->max) ||
            ((o->flags & AF_OPT_POW2) && (u == 0 || (u & (u - 1)))))
            return AF_EINVAL;
        return *(uint64_t *)field = u, 0;
    case AF_OPT_UINT:
    case AF_OPT_INT:
    case AF_OPT_INT64:
        if (parse_i64(value, &i) || i < o->min || i > o->max)
            return AF_EINVAL;
        if (o->type == AF_OPT_UINT)
            *(uint64_t *)field = (uint64_t)i;
        else if (o->type == AF_OPT_INT)
            *(int32_t *)field = (int32_t)i;
        else
            *(int64_t *)field = i;
        return 0;
    case AF_OPT_DOUBLE: {
        char *end;
        errno = 0;
        double d = strtod(value, &end);
        const char *si = "KMGT", *hit = (o->flags & AF_OPT_RATE) && *end ? strchr(si, *end) : NULL;
        for (long k = hit ? hit - si : -1; k >= 0; k--)
            d *= 1000;
        end += hit != NULL;
        if (errno || end == value || *end || !isfinite(d) || d < 0 ||
            ((o->flags & AF_OPT_RATE) && d <= 0))
            return AF_EINVAL;
        return *(double *)field = d, 0;
    }
    case AF_OPT_NAME:
    case AF_OPT_ENUM:
        b = 0;
        for (const char *const *nm = o->names(); *nm; nm++, b++)
            if (strcmp(*nm, value) == 0) {
                if (o->type == AF_OPT_NAME)
                    *(const char **)field = *nm;
                else
                    *(int *)field = b;
                return 0;
            }
        return AF_EINVAL;
    case AF_OPT_STRING:
        if (strlen(value) >= o->size)
            return AF_EINVAL;
        memcpy(field, value, strlen(value) + 1);
        return 0;
    }
    return AF_EINVAL;
}

const af_opt_t *af_opts_find(const af_opt_t *t, size_t n, const char *key)
{
    for (size_t i = 0; key && i < n; i++)
        if (strcmp(t[i].key, key) == 0)
            return &t[i];
    return NULL;
}

int af_opts_defaults(const af_opt_t *t, size_t n, void *opts, af_error_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (parse_into(&t[i], t[i].def, (char *)opts + t[i].offset))
            return af__err(err, AF_EINVAL, "option table: the default '%s' of %s does not parse",
                           t[i].def, t[i].key);
    return 0;
}

int af_opts_set(const af_opt_t *t, size_t n, void *opts, const char *scope, const char *key,
                const char *value, af_error_t *err)
{
    const af_opt_t *o = af_opts_find(t, n, key);
    if (!o)
        return af__err(err, AF_EINVAL, "unknown %s option '%s'", scope, key ? key : "(null)");
    if (!value || parse_into(o, value, (char *)opts + o->offset)) {
        char want[300];
        expect(o, want, sizeof want);
        return af__err(err, AF_EINVAL, "%s option %s: '%s' is not %s", scope, key,
                       value ? value : "(null)", want);
    }
    return 0;
}

int af_opts_format(const af_opt_t *t, size_t n, const void *opts, char *buf, size_t len)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const void *f = (const char *)opts + t[i].offset;
        char v[96];
        switch (t[i].type) {
        case AF_OPT_BOOL:
            snprintf(v, sizeof v, "%d", *(const int *)f ? 1 : 0);
            break;
        case AF_OPT_AUTO_BOOL:
            snprintf(v, sizeof v, "%s", *(const int *)f < 0 ? "auto" : *(const int *)f ? "1" : "0");
            break;
        case AF_OPT_SIZE:
        case AF_OPT_UINT:
            snprintf(v, sizeof v, "%llu", (unsigned long long)*(const uint64_t *)f);
            break;
        case AF_OPT_INT:
            snprintf(v, sizeof v, "%d", (int)*(const int32_t *)f);
            break;
        case AF_OPT_INT64:
            snprintf(v, sizeof v, "%lld", (long long)*(const int64_t *)f);
            break;
        case AF_OPT_DOUBLE:
            snprintf(v, sizeof v, "%.17g", *(const double *)f);
            break;
        case AF_OPT_NAME: {
            const char *nm = *(const char *const *)f;
            snprintf(v, sizeof v, "%s", nm ? nm : t[i].def);
            break;
        }
        case AF_OPT_ENUM: {
            int k = *(const int *)f, j = 0;
            const char *const *nm = t[i].names();
            while (nm[j] && j < k)
                j++;
            snprintf(v, sizeof v, "%s", nm[j] ? nm[j] : "?");
            break;
        }
        case AF_OPT_STRING:
            snprintf(v, sizeof v, "%s", (const char *)f);
            break;
        }
        size_t room = len > at ? len - at : 0;
        int w = snprintf(buf ? buf + at : NULL, room, "%s%s=%s", i ? ";" : "", t[i].key, v);
        if (w < 0 || (size_t)w >= room)
            return AF_ESIZE;
        at += (size_t)w;
    }
    return 0;
}

const af__opts_cache_t *af__opts_ready(af__opts_cache_t *c)
{
    int st = atomic_load_explicit(&c->state, memory_order_acquire);
    if (st == 2)
        return c;
    int zero = 0;
    if (atomic_compare_exchange_strong(&c->state, &zero, 1)) {
        (void)af_opts_defaults(c->table, c->n, c->defaults, NULL); /* tests check the tables */
        for (size_t i = 0; i < c->n; i++)
            c->keys[i] = c->table[i].key;
        c->keys[c->n] = NULL;
        atomic_store_explicit(&c->state, 2, memory_order_release);
        return c;
    }
    while (atomic_load_explicit(&c->state, memory_order_acquire) != 2)
        uv_sleep(0); /* another thread is building it: microseconds */
    return c;
}
