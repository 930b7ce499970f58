/*
 * A plan's identity and its serialised form.
 *
 * Identity (af_plan_key, af_plan_fingerprint): the graph's fingerprint (graph/fingerprint.c,
 * XXH3-128) salted with a format tag and every planner option in its canonical spelling
 * (af_plan_opts_format), so the same graph planned with the same options has one key everywhere
 * — the plan cache's file names, and any component that names plans by content.
 *
 * Record (af_plan_encode / af_plan_decode): what af_plan_restore() needs to rebuild a plan
 * without planning again — the order and every tensor's offset — plus the counts, the arena size
 * and the names of the scheduler and placer that made it. Native endianness; the version and a
 * byte-order mark reject foreign files:
 *   header  { magic "AFPLANC", version, bom 0x01020304, key, tensors, nodes, arena bytes,
 *             scheduler name[32], placer name[32] }
 *   order   int32 x nodes
 *   offsets uint64 x tensors
 *   trailer XXH3-64 of everything before it
 * A decoded record is never trusted: af_plan_restore() verifies the plan it rebuilds.
 *
 * Lock rule: none; reentrant.
 */
#include "planner/planner_int.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#define RECORD_MAGIC "AFPLANC"
/* 2: keys are af_plan_key()'s (graph fingerprint salted with the canonical options); version-1
 * files carry keys of the older field hash and are rejected as foreign. */
#define RECORD_VERSION 2u
#define RECORD_BOM 0x01020304u

typedef struct record_hdr {
    char magic[8];
    uint32_t version, bom;
    uint64_t key;
    int32_t nt, nn;
    uint64_t arena;
    char sched[AF_PLAN_NAME_MAX], placer[AF_PLAN_NAME_MAX];
} record_hdr_t;
_Static_assert(sizeof(record_hdr_t) == 104, "the record header has no padding");

int af_plan_key(const af_graph_t *g, const af_plan_opts_t *opts, af_fingerprint_t *out)
{
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    if (opts)
        o = *opts;
    char salt[1024];
    int n = snprintf(salt, sizeof salt, "arenaflow-plan-v2\n");
    int rc = af_plan_opts_format(&o, salt + n, sizeof salt - (size_t)n);
    if (rc)
        return rc;
    return af_graph_fingerprint(g, salt, strlen(salt), out);
}

uint64_t af_plan_fingerprint(const af_graph_t *g, const af_plan_opts_t *opts)
{
    af_fingerprint_t fp = {0, 0};
    if (af_plan_key(g, opts, &fp))
        return 0;
    return fp.lo;
}

int af_plan_encode(const af_plan_t *p, uint64_t key, void **out, size_t *len, af_error_t *err)
{
    if (!p || !out || !len)
        return af__err(err, AF_EINVAL, "af_plan_encode: NULL argument");
    const af_plan_report_t *r = af_plan_report(p);
    record_hdr_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, RECORD_MAGIC, 8);
    h.version = RECORD_VERSION;
    h.bom = RECORD_BOM;
    h.key = key;
    h.nt = af_graph_tensor_count(p->g);
    h.nn = af_graph_node_count(p->g);
    h.arena = af_plan_arena_bytes(p);
    snprintf(h.sched, sizeof h.sched, "%s", r->schedule ? r->schedule : "");
    snprintf(h.placer, sizeof h.placer, "%s", r->placer ? r->placer : "");
    size_t n = sizeof h + (size_t)h.nn * 4 + (size_t)h.nt * 8;
    uint8_t *buf = af__malloc(n + 8);
    if (!buf)
        return af__err(err, AF_ENOMEM, "out of memory encoding a plan");
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, p->order, (size_t)h.nn * 4);
    for (int32_t t = 0; t < h.nt; t++)
        memcpy(buf + sizeof h + (size_t)h.nn * 4 + (size_t)t * 8, &p->tp[t].offset, 8);
    uint64_t sum = XXH3_64bits(buf, n);
    memcpy(buf + n, &sum, 8);
    *out = buf;
    *len = n + 8;
    return 0;
}

/* The header's checks, in the order a reader would notice: AF_EPARSE with the reason. */
static int check_header(const uint8_t *buf, size_t len, record_hdr_t *h, af_error_t *err)
{
    if (len < sizeof *h + 8)
        return af__err(err, AF_EPARSE, "truncated");
    memcpy(h, buf, sizeof *h);
    if (memcmp(h->magic, RECORD_MAGIC, 8) != 0)
        return af__err(err, AF_EPARSE, "not a plan cache file (bad magic)");
    if (h->version != RECORD_VERSION || h->bom != RECORD_BOM)
        return af__err(err, AF_EPARSE, "foreign format version or byte order");
    if (h->nt < 0 || h->nn < 0 || h->nt > (1 << 28) || h->nn > (1 << 28) ||
        len != sizeof *h + (size_t)h->nn * 4 + (size_t)h->nt * 8 + 8)
        return af__err(err, AF_EPARSE, "size fields do not match the file length");
    uint64_t sum;
    memcpy(&sum, buf + len - 8, 8);
    if (XXH3_64bits(buf, len - 8) != sum)
        return af__err(err, AF_EPARSE, "checksum mismatch (corrupted)");
    if (!memchr(h->sched, 0, sizeof h->sched) || !memchr(h->placer, 0, sizeof h->placer))
        return af__err(err, AF_EPARSE, "scheduler or placer name is not terminated");
    return 0;
}

int af_plan_decode(const void *data, size_t len, af_plan_record_t *rec, af_error_t *err)
{
    if (!data || !rec)
        return af__err(err, AF_EINVAL, "af_plan_decode: NULL argument");
    const uint8_t *buf = data;
    record_hdr_t h;
    int rc = check_header(buf, len, &h, err);
    if (rc)
        return rc;
    int32_t *order = af__malloc((size_t)h.nn * 4 + 4);
    uint64_t *offsets = af__malloc((size_t)h.nt * 8 + 8);
    if (!order || !offsets) {
        af__free(order);
        af__free(offsets);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    memcpy(order, buf + sizeof h, (size_t)h.nn * 4);
    memcpy(offsets, buf + sizeof h + (size_t)h.nn * 4, (size_t)h.nt * 8);
    *rec = (af_plan_record_t){.key = h.key,
                              .tensors = h.nt,
                              .nodes = h.nn,
                              .arena_bytes = h.arena,
                              .order = order,
                              .offsets = offsets};
    memcpy(rec->schedule, h.sched, sizeof h.sched);
    memcpy(rec->placer, h.placer, sizeof h.placer);
    return 0;
}

void af_plan_record_free(af_plan_record_t *rec)
{
    if (!rec)
        return;
    af__free(rec->order);
    af__free(rec->offsets);
    rec->order = NULL;
    rec->offsets = NULL;
}
