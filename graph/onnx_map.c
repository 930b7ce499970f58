/*
 * ONNX importer — zero-copy location of tensor data in the serialized model.
 *
 * protobuf-c copies every bytes field while it unpacks, so decoding a model the usual way holds
 * its weights twice (the file and the copy). Instead, before unpacking, this file walks the
 * protobuf wire format of the ModelProto and writes a *stripped* copy of it: every TensorProto
 * reachable as ModelProto.graph(7) → GraphProto.initializer(5), or GraphProto.node(1) →
 * NodeProto.attribute(5) → AttributeProto.t(5) / tensors(10), recursively through subgraphs
 * (AttributeProto.g(6) / graphs(11)), loses its raw_data(9) payload when that is larger than
 * MIN_STRIP bytes. In its place goes a varint in field LOC_FIELD (unknown to ONNX, so protobuf-c
 * keeps it among the message's unknown fields): the index of a (offset, length) entry that
 * points into the original bytes. Only metadata is copied; payloads are skipped, never read,
 * so a mapped model's weight pages are not even touched. The importer then unpacks the stripped
 * copy, frees it, and reads each tensor's bytes through af__onnx_map_get().
 *
 * Two passes per rewritten message: its new size is measured first (for the length prefix),
 * then it is written. Cost O(metadata bytes x nesting depth). A LOC_FIELD already in the input
 * is dropped, so every marker the importer sees is one of ours. Anything unexpected (a group
 * wire type, a truncated field, nesting deeper than MAX_NEST) makes the walk give up: the caller
 * then unpacks the original bytes, and protobuf-c reports whatever is wrong with them.
 * Threading: no state; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <string.h>

#define LOC_FIELD 536870911u /* the largest field number protobuf allows */
#define MIN_STRIP 16         /* smaller payloads stay inline: a marker is not shorter */
#define MAX_NEST 96          /* messages nested inside one another */

enum { M_MODEL, M_GRAPH, M_NODE, M_ATTR, M_TENSOR, M_NONE };

/* Which fields of a message are messages we rewrite (type of the child, or M_NONE). */
static int child_type(int type, uint64_t field)
{
    switch (type) {
    case M_MODEL:
        return field == 7 ? M_GRAPH : M_NONE;
    case M_GRAPH:
        return field == 1 ? M_NODE : field == 5 ? M_TENSOR : M_NONE;
    case M_NODE:
        return field == 5 ? M_ATTR : M_NONE;
    case M_ATTR:
        return field == 5 || field == 10 ? M_TENSOR : field == 6 || field == 11 ? M_GRAPH : M_NONE;
    default:
        return M_NONE;
    }
}

typedef struct walk {
    const uint8_t *base; /* original bytes */
    af__onnx_loc_t *locs;
    size_t n_locs, cap_locs;
    int oom;
} walk_t;

static int get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *pos < len; shift += 7) {
        uint8_t b = p[(*pos)++];
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_varint(uint8_t *out, size_t *n, uint64_t v)
{
    while (v >= 0x80) {
        out[(*n)++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[(*n)++] = (uint8_t)v;
}

/* Size of a field's payload after its tag (for wire types other than 2). -1: not supported. */
static int64_t fixed_payload(int wt, const uint8_t *p, size_t len, size_t pos)
{
    uint64_t v;
    size_t q = pos;
    switch (wt) {
    case 0:
        return get_varint(p, len, &q, &v) ? -1 : (int64_t)(q - pos);
    case 1:
        return 8;
    case 5:
        return 4;
    default:
        return -1; /* groups (3, 4) and reserved types */
    }
}

/*
 * Rewrites message [p, p+len) of the given type into out (NULL: measure only) and returns its
 * new size in *size. -1 on malformed input or nesting past MAX_NEST.
 */
static int rewrite(walk_t *w, const uint8_t *p, size_t len, int type, int depth, uint8_t *out,
                   size_t *size)
{
    if (depth > MAX_NEST)
        return -1;
    size_t pos = 0, n = 0;
    while (pos < len) {
        size_t start = pos;
        uint64_t tag, plen;
        if (get_varint(p, len, &pos, &tag))
            return -1;
        int wt = (int)(tag & 7);
        uint64_t field = tag >> 3;
        if (wt != 2) {
            int64_t fl = fixed_payload(wt, p, len, pos);
            if (fl < 0 || (uint64_t)fl > len - pos)
                return -1;
            pos += (size_t)fl;
            if (type == M_TENSOR && field == LOC_FIELD)
                continue; /* not ours: dropped so markers cannot be forged */
            if (out)
                memcpy(out + n, p + start, pos - start);
            n += pos - start;
            continue;
        }
        if (get_varint(p, len, &pos, &plen) || plen > len - pos)
            return -1;
        const uint8_t *pay = p + pos;
        pos += (size_t)plen;
        int ct = child_type(type, field);
        if (type == M_TENSOR && field == 9 && plen > MIN_STRIP) {
            size_t idx = w->n_locs;
            if (out) {
                put_varint(out, &n, (uint64_t)LOC_FIELD << 3);
                put_varint(out, &n, idx);
            } else {
                n += varint_len((uint64_t)LOC_FIELD << 3) + varint_len(idx);
            }
            if (out && !w->oom) { /* locations are recorded in the writing pass only */
                if (af__grow((void **)&w->locs, &w->cap_locs, idx + 1, sizeof(*w->locs)))
                    w->oom = 1;
                else
                    w->locs[w->n_locs++] = (af__onnx_loc_t){(size_t)(pay - w->base), plen};
            } else if (!out) {
                w->n_locs++; /* measuring numbers the markers the same way */
            }
        } else if (ct != M_NONE) {
            size_t csize;
            size_t save = w->n_locs;
            if (rewrite(w, pay, (size_t)plen, ct, depth + 1, NULL, &csize))
                return -1;
            if (out) {
                w->n_locs = save;
                put_varint(out, &n, tag);
                put_varint(out, &n, csize);
                size_t wrote;
                if (rewrite(w, pay, (size_t)plen, ct, depth + 1, out + n, &wrote) || wrote != csize)
                    return -1;
                n += csize;
            } else {
                n += varint_len(tag) + varint_len(csize) + csize;
            }
        } else {
            if (out)
                memcpy(out + n, p + start, pos - start);
            n += pos - start;
        }
    }
    *size = n;
    return 0;
}

int af__onnx_map_strip(const uint8_t *data, size_t len, af__onnx_map_t *m)
{
    memset(m, 0, sizeof(*m));
    m->base = data;
    walk_t w = {.base = data};
    size_t size;
    if (rewrite(&w, data, len, M_MODEL, 0, NULL, &size) || w.n_locs == 0)
        return 0; /* nothing to strip, or unusual input: unpack the original */
    uint8_t *out = af__malloc(size ? size : 1);
    if (!out)
        return AF_ENOMEM;
    w.n_locs = 0;
    size_t wrote;
    if (rewrite(&w, data, len, M_MODEL, 0, out, &wrote) || wrote != size || w.oom) {
        af__free(out);
        af__free(w.locs);
        return w.oom ? AF_ENOMEM : 0;
    }
    m->stripped = out;
    m->stripped_len = size;
    m->locs = w.locs;
    m->n_locs = w.n_locs;
    return 0;
}

void af__onnx_map_release_stripped(af__onnx_map_t *m)
{
    af__free(m->stripped);
    m->stripped = NULL;
    m->stripped_len = 0;
}

void af__onnx_map_free(af__onnx_map_t *m)
{
    af__onnx_map_release_stripped(m);
    af__free(m->locs);
    m->locs = NULL;
    m->n_locs = 0;
}

int af__onnx_map_get(const af__onnx_map_t *m, const Onnx__TensorProto *t, const uint8_t **p,
                     size_t *len)
{
    if (!m || !m->n_locs)
        return 0;
    for (size_t i = t->base.n_unknown_fields; i-- > 0;) { /* the last one wins, as protobuf's */
        const ProtobufCMessageUnknownField *u = &t->base.unknown_fields[i];
        if (u->tag != LOC_FIELD || u->wire_type != PROTOBUF_C_WIRE_TYPE_VARINT)
            continue;
        size_t pos = 0;
        uint64_t idx;
        if (get_varint(u->data, u->len, &pos, &idx) || idx >= m->n_locs)
            return 0;
        *p = m->base + m->locs[idx].off;
        *len = m->locs[idx].len;
        return 1;
    }
    return 0;
}

#endif /* AF_HAVE_ONNX */
