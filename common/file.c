/*
 * Files: the library's one durable-write path and its whole-file reader.
 *
 * Durable replace (af_file_write_durable): write a temp file beside the target, fsync it,
 * rename it over the target, fsync the directory. rename(2) within one directory is atomic, so
 * a reader (or a restart after a crash) finds the complete old file or the complete new one; the
 * directory fsync makes the new name itself durable. The temp name carries the process id, a
 * per-thread id and a process-wide counter and is created with O_EXCL, so no two writers — two
 * threads persisting the same plan, a CLI run beside a daemon on one state directory — ever
 * write into the same temp file.
 *
 * Lock rule: none; the counter is one atomic.
 */
#include "common/common_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

static atomic_ullong tmp_counter;

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The directory part of path ("." when there is none) into dir. */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

int af_file_write_durable_fn(const char *path, af_file_fill_fn fill, void *ctx, af_error_t *err)
{
    if (!path || !*path || !fill)
        return af__err(err, AF_EINVAL, "durable write: no path or no writer");
    size_t n = strlen(path) + 80;
    char *tmp = af__malloc(n), *dir = af__malloc(n);
    if (!tmp || !dir) {
        af__free(tmp);
        af__free(dir);
        return af__err(err, AF_ENOMEM, "out of memory writing %s", path);
    }
    unsigned long long seq = atomic_fetch_add(&tmp_counter, 1);
    snprintf(tmp, n, "%s.%ld.%llu.%llu.tmp", path, (long)getpid(),
             (unsigned long long)(uintptr_t)uv_thread_self(), seq);
    dir_of(path, dir, n);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int ok = fd >= 0 && fill(fd, ctx) == 0 && fsync(fd) == 0;
    int saved = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (ok) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) != 0) {
            ok = 0; /* renamed, but the new name may not survive a crash: say so */
            saved = errno;
        }
        if (dfd >= 0)
            close(dfd);
    } else if (fd >= 0) {
        unlink(tmp);
    }
    int rc = ok ? 0
                : af__err(err, AF_EIO, "cannot write %s durably: %s", path,
                          strerror(saved ? saved : EIO));
    af__free(tmp);
    af__free(dir);
    return rc;
}

int af_file_write_all(int fd, const void *data, size_t len)
{
    return write_all(fd, data, len);
}

typedef struct buf_ctx {
    const void *data;
    size_t len;
} buf_ctx_t;

static int fill_buf(int fd, void *ctx)
{
    const buf_ctx_t *b = ctx;
    return write_all(fd, b->data, b->len);
}

int af_file_write_durable(const char *path, const void *data, size_t len, af_error_t *err)
{
    if (!data && len)
        return af__err(err, AF_EINVAL, "durable write: no data");
    buf_ctx_t b = {data, len};
    return af_file_write_durable_fn(path, fill_buf, &b, err);
}

int af_file_read(const char *path, size_t max_bytes, char **out, size_t *len, af_error_t *err)
{
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return af__err(err, AF_EIO, "cannot open %s: %s", path ? path : "(null)",
                       strerror(path ? errno : EINVAL));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return af__err(err, AF_EIO, "cannot read %s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return af__err(err, AF_EIO, "cannot read %s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        close(fd);
        return af__err(err, AF_ESIZE, "%s: %lld bytes, more than the %zu allowed", path,
                       (long long)sb.st_size, max_bytes);
    }
    char *buf = af__malloc((size_t)sb.st_size + 1);
    if (!buf) {
        close(fd);
        return af__err(err, AF_ENOMEM, "out of memory reading %s", path);
    }
    size_t got = 0;
    int rc = 0;
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = af__err(err, AF_EIO, "cannot read %s: %s", path, strerror(errno));
        if (r <= 0)
            break; /* a file that shrank while read: what was there */
        got += (size_t)r;
    }
    close(fd);
    if (rc) {
        af__free(buf);
        return rc;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}
