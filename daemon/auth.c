/*
 * arenaflowd bearer tokens ([auth] tokens_file).
 *
 * The file has one token per line, "admin TOKEN" or "read TOKEN" ('#' starts a comment, blank
 * lines are ignored). A token is 16 to 256 characters of [A-Za-z0-9._~+/=-] (RFC 6750's
 * token68); a shorter one is refused, so a guessable token cannot be configured by mistake.
 * Requests send "Authorization: Bearer TOKEN". Reads (GET of graphs, events, pictures, and
 * /metrics) need any token; submit, delete and run need an admin token; /healthz and /readyz
 * are always open. The comparison of a candidate against every configured token takes time
 * proportional to the candidate's length only, so timing does not reveal a token's prefix.
 *
 * The file is read at start and at every SIGHUP (a bad file keeps the old tokens). A file that
 * others may read is accepted with a warning in the log. Loop thread only.
 */
#include "daemon/daemon_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define TOKEN_MIN 16
#define TOKEN_MAX 256

typedef struct token {
    af__role_t role;
    size_t len;
    char text[TOKEN_MAX + 1];
} token_t;

struct af__tokens {
    token_t *v;
    size_t n;
};

void af__tokens_free(af__tokens_t *t)
{
    if (!t)
        return;
    free(t->v);
    free(t);
}

static int token_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           strchr("._~+/=-", c) != NULL;
}

/* Parses one line into *tok. 1 = a token, 0 = blank/comment, -1 = error (message in err). */
static int parse_line(char *line, token_t *tok, char *err, size_t errlen)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *save = NULL, *role = strtok_r(line, " \t\r\n", &save);
    if (!role)
        return 0;
    char *text = strtok_r(NULL, " \t\r\n", &save);
    if (strcmp(role, "admin") == 0)
        tok->role = AF__ROLE_ADMIN;
    else if (strcmp(role, "read") == 0)
        tok->role = AF__ROLE_READ;
    else {
        snprintf(err, errlen, "role '%.32s' is not admin or read", role);
        return -1;
    }
    if (!text || strtok_r(NULL, " \t\r\n", &save)) {
        snprintf(err, errlen, "want \"%s TOKEN\"", role);
        return -1;
    }
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++)
        if (!token_char(text[i])) {
            snprintf(err, errlen, "token has a character outside [A-Za-z0-9._~+/=-]");
            return -1;
        }
    if (n < TOKEN_MIN || n > TOKEN_MAX) {
        snprintf(err, errlen, "token of %zu characters (want %d to %d)", n, TOKEN_MIN, TOKEN_MAX);
        return -1;
    }
    tok->len = n;
    memcpy(tok->text, text, n + 1);
    return 1;
}

int af__tokens_load(const char *path, af__tokens_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!path || !path[0])
        return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "[auth] tokens_file %s: %s", path, strerror(errno));
        return -1;
    }
    af__tokens_t *t = calloc(1, sizeof(*t));
    char line[1024], msg[256];
    size_t cap = 0;
    int lineno = 0, rc = t ? 0 : -1;
    if (!t)
        snprintf(err, errlen, "out of memory");
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        token_t tok;
        int got = parse_line(line, &tok, msg, sizeof(msg));
        if (got < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
            rc = -1;
        } else if (got > 0) {
            if (t->n == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                token_t *nv = realloc(t->v, ncap * sizeof(*nv));
                if (!nv) {
                    snprintf(err, errlen, "out of memory");
                    rc = -1;
                    break;
                }
                t->v = nv;
                cap = ncap;
            }
            t->v[t->n++] = tok;
        }
    }
    fclose(f);
    if (rc == 0 && t->n == 0) {
        snprintf(err, errlen, "%s: no tokens (an empty file would lock everyone out)", path);
        rc = -1;
    }
    if (rc != 0) {
        af__tokens_free(t);
        return -1;
    }
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        af__dlog(AF__LOG_WARN, "[auth] %s can be read by other users (mode %o); chmod 600 it", path,
                 (unsigned)(st.st_mode & 0777));
    *out = t;
    return 0;
}

af__role_t af__tokens_role(const af__tokens_t *t, const char *value, size_t len)
{
    static const char scheme[] = "Bearer ";
    if (!t || !value || len <= sizeof(scheme) - 1 || len - (sizeof(scheme) - 1) > TOKEN_MAX ||
        strncasecmp(value, scheme, sizeof(scheme) - 1) != 0)
        return AF__ROLE_NONE;
    const char *cand = value + sizeof(scheme) - 1;
    size_t n = len - (sizeof(scheme) - 1);
    af__role_t best = AF__ROLE_NONE;
    for (size_t k = 0; k < t->n; k++) {
        /* every byte of the candidate is compared, whatever matched before */
        unsigned diff = (unsigned)(t->v[k].len ^ n);
        for (size_t i = 0; i < n; i++)
            diff |= (unsigned char)cand[i] ^ (unsigned char)t->v[k].text[i < t->v[k].len ? i : 0];
        if (diff == 0 && t->v[k].role > best)
            best = t->v[k].role;
    }
    return best;
}

size_t af__tokens_count(const af__tokens_t *t, af__role_t role)
{
    size_t n = 0;
    for (size_t k = 0; t && k < t->n; k++)
        n += t->v[k].role == role;
    return n;
}
