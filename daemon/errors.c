/*
 * arenaflowd's one error-to-status table.
 *
 * Every error answer of the API is one of the kinds of AF__DERR_MAP (daemon_int.h): a kind has
 * its HTTP status, its "code" string (the JSON error's machine-readable name) and whether the
 * client should retry (Retry-After). Library results (AF_E* codes, negative errno values from
 * the file system) reach a kind through lib_rows[] below, so an endpoint never picks a status
 * itself: it names the kind of what went wrong, or hands over the library's code. The reason
 * phrases of the status line come from the same place (reasons[]).
 *
 * Thread-safe (tables only).
 */
#include "daemon/daemon_int.h"

#include <errno.h>

static const struct {
    int status;
    const char *code;
    int retry; /* 1: the answer says Retry-After (the condition is temporary) */
} kinds[] = {
#define AF__DERR_ROW(name, status, code, retry) {status, code, retry},
    AF__DERR_MAP(AF__DERR_ROW)
#undef AF__DERR_ROW
};

int af__derr_status(af__derr_t k)
{
    return kinds[k].status;
}

const char *af__derr_code(af__derr_t k)
{
    return kinds[k].code;
}

int af__derr_retry(af__derr_t k)
{
    return kinds[k].retry;
}

/* Library results, by code. Codes not listed are internal errors. */
static const struct {
    int rc;
    af__derr_t kind;
} lib_rows[] = {
    {AF_ENOMEM, AF__DERR_BUSY}, /* transient: memory is back when others finish */
    {AF_EINVAL, AF__DERR_BAD_REQUEST},
    {AF_EPARSE, AF__DERR_BAD_REQUEST},
    {AF_ECYCLE, AF__DERR_BAD_REQUEST},
    {AF_EDUP, AF__DERR_BAD_REQUEST},
    {AF_ENOENT, AF__DERR_BAD_REQUEST},
    {AF_EPRODUCED, AF__DERR_BAD_REQUEST},
    {AF_ENOPRODUCER, AF__DERR_BAD_REQUEST},
    {AF_ESIZE, AF__DERR_BAD_REQUEST},
    {AF_ESHAPE, AF__DERR_BAD_REQUEST},
    {AF_ENOTSUP, AF__DERR_BAD_REQUEST},
    {AF_EBUDGET, AF__DERR_UNPLANNABLE},
    {AF_ETIMEDOUT, AF__DERR_PLAN_TIMEOUT},
    {AF_ECANCELED, AF__DERR_DRAINING},
    {AF_EBUSY, AF__DERR_TOO_MANY},
    {AF_EIO, AF__DERR_STORAGE},
    {-ENOSPC, AF__DERR_STORAGE},
    {-EDQUOT, AF__DERR_STORAGE},
    {-EFBIG, AF__DERR_STORAGE},
    {-EIO, AF__DERR_STORAGE},
    {-EROFS, AF__DERR_STORAGE},
    {-EACCES, AF__DERR_STORAGE},
    {-EPERM, AF__DERR_STORAGE},
};

af__derr_t af__derr_of(int rc)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(lib_rows); i++)
        if (lib_rows[i].rc == rc)
            return lib_rows[i].kind;
    return AF__DERR_INTERNAL;
}

static const struct {
    int status;
    const char *reason;
} reasons[] = {
    {200, "OK"},
    {201, "Created"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {413, "Payload Too Large"},
    {422, "Unprocessable Content"},
    {429, "Too Many Requests"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {503, "Service Unavailable"},
    {507, "Insufficient Storage"},
};

const char *af__http_reason(int status)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(reasons); i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Unknown";
}
