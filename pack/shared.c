/*
 * Shared-object placement (seed 1, §3.2): every interval gets a buffer (an "object", a colour);
 * intervals sharing a buffer never overlap in time, a buffer is as large as its largest tenant,
 * and the buffers are stacked in index order to give offsets. Three ways to colour:
 *   color-end    seed 1's greedy: by end, the smallest colour whose tenants all ended before the
 *                interval starts;
 *   greedy-size  TFLite's shared objects: by decreasing size, the free object whose size is
 *                closest (growing it if needed), else a new one;
 *   naive        every interval its own buffer.
 * The planner's shared-object mode calls af_place_shared(); the offset-mode placer "color-end"
 * is the same colouring, stacked.
 *
 * Lock rule: none; reentrant.
 */
#include "pack/pack_int.h"

#include <string.h>

static int shared_color_end(const af_interval_t *iv, size_t n, const uint64_t *sz, int32_t *buf,
                            int32_t *nb, uint64_t *bsize, af_error_t *err)
{
    int32_t *ord = af__malloc((n + 1) * sizeof(int32_t));
    int64_t *maxend = af__malloc((n + 1) * sizeof(int64_t));
    if (!ord || !maxend) {
        af__free(ord);
        af__free(maxend);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    if (af__sort_by_end(iv, n, 1, ord)) {
        af__free(ord);
        af__free(maxend);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    int32_t colors = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t t = ord[k];
        /* Processing by end: a colour is free iff all its tenants ended by this start. */
        int32_t col = 0;
        while (col < colors && maxend[col] > iv[t].lower)
            col++;
        if (col == colors) {
            maxend[colors] = 0;
            bsize[colors] = 0;
            colors++;
        }
        buf[t] = col;
        maxend[col] = iv[t].upper;
        if (sz[t] > bsize[col])
            bsize[col] = sz[t];
    }
    *nb = colors;
    af__free(ord);
    af__free(maxend);
    return 0;
}

/* TFLite-style shared objects: by decreasing size, join the free object whose size is closest
 * to the tensor's (growing it if needed), else open a new object. */
static int shared_greedy_size(const af_interval_t *iv, size_t n, const uint64_t *sz, int32_t *buf,
                              int32_t *nb, uint64_t *bsize, af_error_t *err)
{
    int32_t *ord = af__malloc((n + 1) * sizeof(int32_t));
    int32_t *tenants_head = af__malloc((n + 1) * sizeof(int32_t));
    int32_t *next = af__malloc((n + 1) * sizeof(int32_t));
    if (!ord || !tenants_head || !next) {
        af__free(ord);
        af__free(tenants_head);
        af__free(next);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    if (af__sort_by_key_desc(iv, sz, NULL, n, ord)) {
        af__free(ord);
        af__free(tenants_head);
        af__free(next);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    int32_t objs = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t t = ord[k], best = -1;
        uint64_t best_diff = UINT64_MAX;
        for (int32_t b = 0; b < objs; b++) {
            int ok = 1;
            for (int32_t u = tenants_head[b]; u >= 0 && ok; u = next[u])
                if (iv[u].lower < iv[t].upper && iv[t].lower < iv[u].upper)
                    ok = 0;
            if (!ok)
                continue;
            uint64_t d = bsize[b] > sz[t] ? bsize[b] - sz[t] : sz[t] - bsize[b];
            if (d < best_diff) {
                best_diff = d;
                best = b;
            }
        }
        if (best < 0) {
            best = objs++;
            tenants_head[best] = -1;
            bsize[best] = 0;
        }
        buf[t] = best;
        next[t] = tenants_head[best];
        tenants_head[best] = t;
        if (sz[t] > bsize[best])
            bsize[best] = sz[t];
    }
    *nb = objs;
    af__free(ord);
    af__free(tenants_head);
    af__free(next);
    return 0;
}

int af_place_shared(af_interval_t *iv, size_t n, const char *algo, uint64_t alignment, int32_t *buf,
                    int32_t *n_bufs, uint64_t *total, af_error_t *err)
{
    int rc = af__pack_check(iv, n, err);
    if (rc)
        return rc;
    uint64_t a = alignment > 1 ? alignment : 1;
    uint64_t *sz = af__pack_sizes(iv, n, a);
    uint64_t *bsize = af__malloc((n + 1) * sizeof(uint64_t));
    if (!sz || !bsize) {
        af__free(sz);
        af__free(bsize);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    int32_t nb = 0;
    if (strcmp(algo, "naive") == 0) {
        for (size_t i = 0; i < n; i++) {
            buf[i] = (int32_t)i;
            bsize[i] = sz[i];
        }
        nb = (int32_t)n;
    } else if (strcmp(algo, "greedy-size") == 0) {
        rc = shared_greedy_size(iv, n, sz, buf, &nb, bsize, err);
    } else if (strcmp(algo, "color-end") == 0) {
        rc = shared_color_end(iv, n, sz, buf, &nb, bsize, err);
    } else {
        rc = af__err(err, AF_EINVAL,
                     "'%s' is not a shared-object algorithm (naive, color-end, greedy-size)", algo);
    }
    if (!rc) {
        /* Offsets: objects stacked in index order. */
        uint64_t *base = af__malloc(((size_t)nb + 1) * sizeof(uint64_t));
        if (!base) {
            rc = af__err(err, AF_ENOMEM, "out of memory");
        } else {
            uint64_t top = 0;
            for (int32_t b = 0; b < nb; b++) {
                base[b] = top;
                top += bsize[b];
            }
            for (size_t i = 0; i < n; i++)
                iv[i].offset = base[buf[i]];
            *total = top;
            *n_bufs = nb;
            af__free(base);
        }
    }
    af__free(sz);
    af__free(bsize);
    return rc;
}

int af__place_color_end(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                        af_error_t *err)
{
    int32_t *buf = af__malloc((n + 1) * sizeof(int32_t));
    if (!buf)
        return af__err(err, AF_ENOMEM, "out of memory");
    int32_t nb;
    int rc = af_place_shared(iv, n, "color-end", o && o->alignment > 1 ? o->alignment : 1, buf, &nb,
                             height, err);
    af__free(buf);
    return rc;
}
