/*
 * ONNX importer: the wire-format check that runs before protobuf-c's unpack.
 *
 * protobuf-c decodes embedded messages by recursion, one C stack frame chain per level, and
 * allocates a struct for every message, however small its encoding: a 31 KB model nesting
 * AttributeProto.g -> GraphProto.node -> NodeProto.attribute 3,000 levels deep overflows the
 * stack, and 16 MB of empty AttributeProto entries (2 bytes each on the wire, 248 bytes
 * decoded) would take 2 GB. Real models decode to 1 (weights) to 32 (the ONNX test data's
 * shape-only models: many small messages) times their size. The importer's own depth check runs on
 * the decoded model, too late for both, so af_onnx_load_mem() calls af__onnx_wire_check() first.
 *
 * The walk reads the wire format with the schema protobuf-c generated (its message
 * descriptors say which field numbers are embedded messages), with an explicit stack of
 * frames, one per open message:
 *   - tag varint: field number and wire type (0 varint, 1 fixed64, 2 length-delimited,
 *     5 fixed32; groups and unknown wire types are malformed, as protobuf-c treats them);
 *   - a length-delimited field that the descriptor declares a message opens a frame (depth
 *     checked against AF__ONNX_WIRE_MAX_DEPTH); its length must fit in the enclosing frame;
 *   - every item adds what protobuf-c will allocate for it to an estimate: the message struct
 *     (descriptor->sizeof_message) plus a pointer slot, a string's or bytes field's length, 8
 *     bytes per element of a packed or unpacked repeated scalar, an unknown field's record and
 *     copy, each rounded up by an allocator overhead; the estimate is checked against
 *     AF__ONNX_WIRE_MAX_RATIO x len + 1 MiB as it grows, so the walk stops early.
 * A model that passes may still be rejected by the unpack or the importer; this check only
 * guarantees that decoding it neither recurses too deep nor allocates without bound.
 *
 * Threading: no state; reentrant.
 */
#include "graph/onnx_wire.h"

#include "common/common_int.h"

#ifdef AF_HAVE_ONNX
#include "onnx.pb-c.h"

#define ALLOC_OVERHEAD 16

typedef struct frame {
    const ProtobufCMessageDescriptor *desc;
    size_t end; /* offset just past this message */
} frame_t;

/* Reads a varint at *pos (< end). 0, or -1 when it is cut or longer than 10 bytes. */
static int read_varint(const uint8_t *p, size_t *pos, size_t end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= end)
            return -1;
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Skips one field's value of a given wire type; adds what decoding it costs. 0 or -1. */
static int skip_value(const uint8_t *p, size_t *pos, size_t end, unsigned wire,
                      const ProtobufCFieldDescriptor *f, uint64_t *cost)
{
    uint64_t v;
    size_t width = wire == 1 ? 8 : 4;
    switch (wire) {
    case 0:
        if (read_varint(p, pos, end, &v))
            return -1;
        break;
    case 1:
    case 5:
        if (end - *pos < width)
            return -1;
        *pos += width;
        break;
    default:
        return -1;
    }
    /* a repeated scalar is an array slot; a singular one lives in its message; an unknown
     * field is a record plus a copy of its bytes */
    if (!f)
        *cost += 32 + 8 + ALLOC_OVERHEAD;
    else if (f->label == PROTOBUF_C_LABEL_REPEATED)
        *cost += 8;
    return 0;
}

int af__onnx_wire_check(const void *data, size_t len, af_error_t *err)
{
    const uint8_t *p = data;
    const uint64_t budget = (uint64_t)len * AF__ONNX_WIRE_MAX_RATIO + (1u << 20);
    frame_t st[AF__ONNX_WIRE_MAX_DEPTH + 1];
    int depth = 0;
    st[0].desc = &onnx__model_proto__descriptor;
    st[0].end = len;
    uint64_t cost = onnx__model_proto__descriptor.sizeof_message + ALLOC_OVERHEAD;
    size_t pos = 0;
    while (depth >= 0) {
        if (cost > budget)
            return af__err(err, AF_ESIZE,
                           "ONNX model of %zu bytes would take more than %llu bytes to decode "
                           "(more than %d times its size): refused before decoding",
                           len, (unsigned long long)budget, AF__ONNX_WIRE_MAX_RATIO);
        if (pos == st[depth].end) {
            depth--;
            continue;
        }
        uint64_t tag, n;
        if (read_varint(p, &pos, st[depth].end, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
            return af__err(err, AF_EPARSE,
                           "not a valid ONNX model: malformed protobuf tag at byte %zu", pos);
        unsigned wire = (unsigned)(tag & 7);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(st[depth].desc, (unsigned)(tag >> 3));
        if (wire != 2) {
            if (skip_value(p, &pos, st[depth].end, wire, f, &cost))
                return af__err(err, AF_EPARSE,
                               "not a valid ONNX model: malformed protobuf field at byte %zu", pos);
        } else {
            if (read_varint(p, &pos, st[depth].end, &n) || n > st[depth].end - pos)
                return af__err(err, AF_EPARSE,
                               "not a valid ONNX model: a length at byte %zu runs past its "
                               "message (truncated or corrupt file)",
                               pos);
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth == AF__ONNX_WIRE_MAX_DEPTH)
                    return af__err(err, AF_EPARSE,
                                   "ONNX model nests messages more than %d deep (at byte %zu, "
                                   "in %s): refused before decoding",
                                   AF__ONNX_WIRE_MAX_DEPTH, pos, st[depth].desc->short_name);
                const ProtobufCMessageDescriptor *sub = f->descriptor;
                cost += sub->sizeof_message + 8 + ALLOC_OVERHEAD;
                depth++;
                st[depth].desc = sub;
                st[depth].end = pos + (size_t)n;
                continue;
            }
            /* strings and bytes are copied; a packed repeated scalar has <= 8 bytes per byte
             * on the wire; an unknown field keeps a record and a copy */
            if (!f)
                cost += 32 + n + ALLOC_OVERHEAD;
            else if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES)
                cost += n + 1 + ALLOC_OVERHEAD + (f->label == PROTOBUF_C_LABEL_REPEATED ? 8 : 0);
            else
                cost += 8 * n + ALLOC_OVERHEAD;
            pos += (size_t)n;
        }
    }
    return cost > budget ? af__err(err, AF_ESIZE,
                                   "ONNX model of %zu bytes would take more than %llu bytes to "
                                   "decode (more than %d times its size): refused before decoding",
                                   len, (unsigned long long)budget, AF__ONNX_WIRE_MAX_RATIO)
                         : 0;
}

#else /* !AF_HAVE_ONNX */

int af__onnx_wire_check(const void *data, size_t len, af_error_t *err)
{
    (void)data;
    (void)len;
    return af__err(err, AF_ENOTSUP, "ONNX support is not built into this arenaflow");
}

#endif
