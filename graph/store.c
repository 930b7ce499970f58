/*
 * Storage of constant data (weights) and the graph calls that attach it to tensors.
 *
 * A store is one block of bytes several graphs may point into: a heap block (copies made by
 * af_graph_set_data or by an importer) or a read-only mapping of a file (an .onnx model, its
 * external data files, a JSON graph's weights file). Each tensor that points into a store holds
 * one reference; the store is freed (unmapped) when the last reference goes, so a graph copy
 * that shares a tensor's data (af_graph_share_data) keeps the bytes alive after the original
 * is destroyed. Borrowed data (AF_DATA_BORROW) has no store: the caller keeps it alive.
 *
 * Invariant: a tensor's data pointer lies inside its store (or is the caller's, when borrowed)
 * and covers exactly the tensor's bytes. Threading: reference counts are atomic, so graphs that
 * share stores may be destroyed from different threads; everything else is a builder call.
 */
#include "graph/graph_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { STORE_HEAP = 0, STORE_MAP = 1 };

int af__store_heap(size_t bytes, af__store_t **out)
{
    af__store_t *s = af__calloc(1, sizeof(*s));
    void *mem = bytes < SIZE_MAX - 64 ? af__malloc(bytes + 64) : NULL;
    if (!s || !mem) {
        af__free(s);
        af__free(mem);
        return AF_ENOMEM;
    }
    s->kind = STORE_HEAP;
    s->mem = mem;
    s->len = bytes;
    s->base = (uint8_t *)af__align_up((uintptr_t)mem, 64);
    atomic_init(&s->refs, 1);
    *out = s;
    return 0;
}

int af__store_map(const char *path, af__store_t **out, af_error_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return af__err(err, AF_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return af__err(err, AF_EIO, "'%s' is not a regular file%s%s", path, e ? ": " : "",
                       e ? strerror(e) : "");
    }
    if ((uint64_t)st.st_size > SIZE_MAX / 2) {
        close(fd);
        return af__err(err, AF_ESIZE, "'%s' is too large to map", path);
    }
    size_t len = (size_t)st.st_size;
    void *m = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return af__err(err, AF_EIO, "cannot map '%s': %s", path, strerror(e));
    af__store_t *s = af__calloc(1, sizeof(*s));
    if (!s) {
        if (m)
            munmap(m, len);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    s->kind = STORE_MAP;
    s->mem = m;
    s->len = len;
    s->base = m;
    atomic_init(&s->refs, 1);
    *out = s;
    return 0;
}

char *af__path_dir(const char *path)
{
    char *dir = af__strdup(path);
    if (!dir)
        return NULL;
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0'; /* "/m.onnx" -> "/" */
    else
        strcpy(dir, ".");
    return dir;
}

/* Lexical rule for a file named by a model or graph: relative, not empty, no ".." component. */
static int name_ok(const char *name)
{
    if (!name[0] || name[0] == '/')
        return 0;
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 0;
        p += n + (e != NULL);
    }
    return 1;
}

int af__store_resolve(const char *dir, const char *name, char **out, af_error_t *err)
{
    if (!name_ok(name))
        return af__err(err, AF_EINVAL,
                       "'%s' is not a relative path inside the directory '%s' (no '..', not "
                       "absolute)",
                       name, dir);
    char rdir[PATH_MAX], rfile[PATH_MAX], joined[PATH_MAX];
    if (snprintf(joined, sizeof(joined), "%s/%s", dir, name) >= (int)sizeof(joined))
        return af__err(err, AF_EINVAL, "path '%s/%s' is too long", dir, name);
    if (!realpath(dir, rdir) || !realpath(joined, rfile))
        return af__err(err, AF_EIO, "%s: %s", joined, strerror(errno));
    size_t dl = strlen(rdir);
    int inside = !strncmp(rfile, rdir, dl) && (rfile[dl] == '/' || (dl == 1 && rdir[0] == '/'));
    if (!inside) /* a symlink that leads out of the directory */
        return af__err(err, AF_EINVAL, "'%s' resolves to '%s', outside the directory '%s'", name,
                       rfile, rdir);
    if (!(*out = af__strdup(rfile)))
        return af__err(err, AF_ENOMEM, "out of memory");
    return 0;
}

void af__store_release_pages(af__store_t *s, const void *p, size_t len)
{
    if (!s || s->kind != STORE_MAP || !len)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = af__align_up((uintptr_t)p, page), hi = ((uintptr_t)p + len) / page * page;
    if (hi >
        lo) /* clean file pages: dropped from this process, read again from the file if needed */
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void af__store_ref(af__store_t *s)
{
    if (s)
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void af__store_unref(af__store_t *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (s->kind == STORE_MAP && s->mem)
        munmap(s->mem, s->len);
    else if (s->kind == STORE_HEAP)
        af__free(s->mem);
    af__free(s);
}

/* ---- graph calls ------------------------------------------------------------------------- */

/* Per-tensor store table, grown to cover every tensor added so far (new entries NULL). */
static int ensure_stores(af_graph_t *g)
{
    if (g->cap_stores >= g->n_tensors)
        return 0;
    size_t old = g->cap_stores;
    if (af__grow((void **)&g->stores, &g->cap_stores, g->n_tensors, sizeof(*g->stores)))
        return AF_ENOMEM;
    memset(g->stores + old, 0, (g->cap_stores - old) * sizeof(*g->stores));
    return 0;
}

static int check_target(af_graph_t *g, int32_t tensor, int64_t bytes, af_error_t *err)
{
    if (g->finalized)
        return af__err(err, AF_EINVAL, "graph is finalized; constant data cannot be attached");
    if (tensor < 0 || (size_t)tensor >= g->n_tensors)
        return af__err(err, AF_EINVAL, "constant data for unknown tensor %d", tensor);
    const af_tensor_info_t *t = &g->tensors[tensor];
    if (t->kind != AF_TENSOR_CONSTANT || af__graph_alias_name(g, tensor))
        return af__err(err, AF_EINVAL, "tensor '%s': only constants that are not views carry data",
                       t->name);
    if (t->bytes < 0 || t->bytes != bytes)
        return af__err(err, AF_ESIZE, "tensor '%s': %lld bytes of data for a %s tensor", t->name,
                       (long long)bytes, t->bytes < 0 ? "dynamic" : "differently sized");
    return ensure_stores(g) ? af__err(err, AF_ENOMEM, "out of memory") : 0;
}

/* Points tensor at data inside store (NULL: borrowed), taking a reference on the store. */
int af__graph_attach(af_graph_t *g, int32_t tensor, af__store_t *store, const void *data,
                     af_error_t *err)
{
    if (tensor < 0 || (size_t)tensor >= g->n_tensors)
        return af__err(err, AF_EINVAL, "constant data for unknown tensor %d", tensor);
    int rc = check_target(g, tensor, g->tensors[tensor].bytes, err);
    if (rc)
        return rc;
    af__store_ref(store);
    af__store_unref(g->stores[tensor]);
    g->stores[tensor] = store;
    g->tensors[tensor].data = data;
    return 0;
}

int af_graph_set_data(af_graph_t *g, int32_t tensor, const void *data, int64_t bytes,
                      af_data_mode_t mode, af_error_t *err)
{
    if (!g || !data)
        return af__err(err, AF_EINVAL, "af_graph_set_data: NULL argument");
    int rc = check_target(g, tensor, bytes, err);
    if (rc)
        return rc;
    const af_tensor_info_t *t = &g->tensors[tensor];
    if (mode == AF_DATA_BORROW) {
        uint32_t es = af_dtype_size(t->dtype);
        if (es > 1 && ((uintptr_t)data & (es - 1)))
            return af__err(err, AF_EINVAL, "tensor '%s': borrowed data is not aligned to %u bytes",
                           t->name, es);
        return af__graph_attach(g, tensor, NULL, data, err);
    }
    if (mode != AF_DATA_COPY)
        return af__err(err, AF_EINVAL, "tensor '%s': unknown data mode %d", t->name, (int)mode);
    af__store_t *s;
    if (af__store_heap((size_t)bytes, &s))
        return af__err(err, AF_ENOMEM, "out of memory copying the data of '%s'", t->name);
    memcpy(s->base, data, (size_t)bytes);
    rc = af__graph_attach(g, tensor, s, s->base, err);
    af__store_unref(s);
    return rc;
}

int af_graph_share_data(af_graph_t *dst, int32_t dst_tensor, const af_graph_t *src,
                        int32_t src_tensor, af_error_t *err)
{
    if (!dst || !src)
        return af__err(err, AF_EINVAL, "af_graph_share_data: NULL argument");
    const af_tensor_info_t *st = af_graph_tensor(src, src_tensor);
    if (!st)
        return af__err(err, AF_EINVAL, "af_graph_share_data: unknown source tensor %d", src_tensor);
    if (!st->data)
        return 0;
    int rc = check_target(dst, dst_tensor, st->bytes, err);
    if (rc)
        return rc;
    af__store_t *s = (size_t)src_tensor < src->cap_stores ? src->stores[src_tensor] : NULL;
    return af__graph_attach(dst, dst_tensor, s, st->data, err);
}

int af_graph_set_dynamic_reason(af_graph_t *g, int32_t tensor, const char *reason, af_error_t *err)
{
    if (!g || !reason)
        return af__err(err, AF_EINVAL, "af_graph_set_dynamic_reason: NULL argument");
    if (g->finalized || tensor < 0 || (size_t)tensor >= g->n_tensors)
        return af__err(err, AF_EINVAL, "dynamic reason for unknown tensor %d (or finalized graph)",
                       tensor);
    char *s = af__strdup(reason);
    if (!s)
        return af__err(err, AF_ENOMEM, "out of memory");
    af__free((void *)g->tensors[tensor].dynamic_reason);
    g->tensors[tensor].dynamic_reason = s;
    g->any_dynamic_reason = 1;
    return 0;
}

const char *af_graph_dynamic_reason(const af_graph_t *g, int32_t tensor)
{
    const af_tensor_info_t *t = g ? af_graph_tensor(g, tensor) : NULL;
    if (!t || t->bytes >= 0)
        return NULL;
    if (t->dynamic_reason)
        return t->dynamic_reason;
    if (t->alias_of >= 0 && g->tensors[t->alias_of].bytes < 0)
        return "a view of a dynamic tensor (its base's size is unknown)";
    if (t->rank < 0 || t->dtype == AF_DTYPE_UNKNOWN)
        return "no size given, and no dtype and shape to compute it from";
    return "a dimension of its shape is unknown";
}

uint64_t af_graph_data_bytes(const af_graph_t *g)
{
    uint64_t n = 0;
    for (size_t i = 0; g && i < g->n_tensors; i++)
        if (g->tensors[i].data)
            n += (uint64_t)g->tensors[i].bytes;
    return n;
}

void af__graph_free_stores(af_graph_t *g)
{
    for (size_t i = 0; i < g->cap_stores && i < g->n_tensors; i++)
        af__store_unref(g->stores[i]);
    af__free(g->stores);
    g->stores = NULL;
    g->cap_stores = 0;
}
