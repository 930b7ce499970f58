/*
 * ONNX importer — folding of the data-movement ops (Gather, Concat, Slice, Transpose).
 *
 * One mover per op copies whole elements of `sz` bytes from its data inputs into the output.
 * The same movers serve both folds: the small one over v->vals (doubles, sz = 8, any element
 * type, some elements possibly unknown) and the byte one over the constant bytes of tensors of
 * any size (af__onnx_fold_bytes), so a model that assembles its weights from pieces (silero
 * VAD v5 slices and concatenates its LSTM weights) gets the assembled weights as one constant
 * at import instead of copying them every run.
 *
 * Byte fold bounds: an output is folded only when it is no larger than its data inputs together
 * (no op here can blow a model up: Gather repeating rows is left to run time) — except a Cast
 * of float16/bfloat16 constants to float, which doubles them (fp16-weight models cast every
 * weight so; folded, their convolutions see constant weights) — and while the
 * import's folded bytes stay under AF__ONNX_FOLD_BYTES_MAX. The folded bytes are little-endian
 * like raw_data; on a big-endian host the byte fold is off. Threading: importer state only.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <string.h>

static const int big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

/* Element-wise index decomposition: output element e of o read at flat index of x, with x's
 * element at coordinate (start[d] + i * step[d]) for output coordinate i along output dim d,
 * and xs[d] the stride of x's dim map[d]. */
static int64_t strided_src(const af__onnx_val_t *o, const int64_t *start, const int64_t *step,
                           const int64_t *xs, int64_t e)
{
    int64_t src = 0;
    for (int d = o->rank - 1; d >= 0; d--) {
        src += (start[d] + (e % o->dims[d]) * step[d]) * xs[d];
        e /= o->dims[d];
    }
    return src;
}

static void strides(const af__onnx_val_t *x, int64_t *xs)
{
    int64_t acc = 1;
    for (int d = x->rank - 1; d >= 0; d--)
        xs[d] = acc, acc *= x->dims[d];
}

static int move_slice(af__onnx_ctx_t *c, const af__onnx_val_t *o, const uint8_t *src, uint8_t *dst,
                      size_t sz)
{
    const af__onnx_val_t *x = c->in[0];
    int64_t st[AF__ONNX_RANK_MAX], en[AF__ONNX_RANK_MAX], ax[AF__ONNX_RANK_MAX],
        sp[AF__ONNX_RANK_MAX];
    int ns = af__onnx_int_list(c, "starts", 1, st, AF__ONNX_RANK_MAX);
    int ne = af__onnx_int_list(c, "ends", 2, en, AF__ONNX_RANK_MAX);
    int na = af__onnx_int_list(c, "axes", 3, ax, AF__ONNX_RANK_MAX);
    int np = af__onnx_int_list(c, "steps", 4, sp, AF__ONNX_RANK_MAX);
    if (x->rank < 1 || o->rank != x->rank || ns < 0 || ne != ns || na == -2 || np == -2)
        return 1;
    int64_t start[AF__ONNX_RANK_MAX], step[AF__ONNX_RANK_MAX], xs[AF__ONNX_RANK_MAX];
    for (int d = 0; d < x->rank; d++)
        start[d] = 0, step[d] = 1;
    for (int i = 0; i < ns; i++) {
        int a;
        if (af__onnx_norm_axis(c, na >= 0 ? ax[i] : i, x->rank, &a))
            return 1;
        step[a] = np >= 0 ? sp[i] : 1;
        start[a] = st[i];
        af__onnx_slice_len(x->dims[a], &start[a], en[i], step[a]);
    }
    strides(x, xs);
    int64_t n = af__onnx_numel(o);
    for (int64_t e = 0; e < n; e++)
        memcpy(dst + (size_t)e * sz, src + (size_t)strided_src(o, start, step, xs, e) * sz, sz);
    return 0;
}

/* Transpose by `perm` (default: reversed dims). */
static int move_transpose(af__onnx_ctx_t *c, const af__onnx_val_t *o, const uint8_t *src,
                          uint8_t *dst, size_t sz)
{
    const af__onnx_val_t *x = c->in[0];
    int64_t perm[AF__ONNX_RANK_MAX], xs[AF__ONNX_RANK_MAX], ps[AF__ONNX_RANK_MAX];
    int64_t zero[AF__ONNX_RANK_MAX] = {0}, one[AF__ONNX_RANK_MAX];
    if (x->rank < 1 || o->rank != x->rank)
        return 1;
    int np = af__onnx_int_list(c, "perm", -1, perm, AF__ONNX_RANK_MAX);
    if (np == -2 || (np >= 0 && np != x->rank))
        return 1;
    strides(x, xs);
    for (int d = 0; d < x->rank; d++) {
        int64_t p = np < 0 ? x->rank - 1 - d : perm[d];
        if (p < 0 || p >= x->rank)
            return 1;
        ps[d] = xs[p], one[d] = 1;
    }
    int64_t n = af__onnx_numel(o);
    for (int64_t e = 0; e < n; e++)
        memcpy(dst + (size_t)e * sz, src + (size_t)strided_src(o, zero, one, ps, e) * sz, sz);
    return 0;
}

static int move_concat(af__onnx_ctx_t *c, const af__onnx_val_t *o, const uint8_t *const *src,
                       uint8_t *dst, size_t sz)
{
    int axis;
    if (o->rank < 1 || af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", 0), o->rank, &axis))
        return 1;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= o->dims[i];
    for (int i = axis + 1; i < o->rank; i++)
        inner *= o->dims[i];
    for (int64_t a = 0; a < outer; a++)
        for (int i = 0; i < c->n_in; i++) {
            size_t chunk = (size_t)(c->in[i]->dims[axis] * inner) * sz;
            memcpy(dst, src[i] + (size_t)a * chunk, chunk);
            dst += chunk;
        }
    return 0;
}

/* Gather along `axis` with known indices; an unknown or out-of-range index leaves its slice
 * unwritten and makes the result 1 (partial). */
static int move_gather(af__onnx_ctx_t *c, const af__onnx_val_t *o, const uint8_t *src, uint8_t *dst,
                       size_t sz)
{
    const af__onnx_val_t *x = c->in[0], *idx = c->in[1];
    int axis;
    if (!idx->vals || x->rank < 1 ||
        af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", 0), x->rank, &axis))
        return 1;
    int64_t outer = 1, inner = 1, dim = x->dims[axis], ni = af__onnx_numel(idx);
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    int partial = 0;
    size_t row = (size_t)inner * sz;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < ni; j++) {
            double iv = idx->vals[j];
            int64_t k = isnan(iv) ? INT64_MIN : af__onnx_d2i(iv);
            k = k < 0 && k != INT64_MIN ? k + dim : k;
            if (k < 0 || k >= dim) {
                partial = 1;
                continue;
            }
            memcpy(dst + (size_t)(a * ni + j) * row, src + (size_t)(a * dim + k) * row, row);
        }
    return partial;
}

int af__onnx_move(af__onnx_ctx_t *c, const af__onnx_val_t *o, const uint8_t *const *src,
                  uint8_t *dst, size_t sz)
{
    const char *op = c->node->op_type;
    if (!strcmp(op, "Gather") && c->n_in >= 2 && c->in[1])
        return move_gather(c, o, src[0], dst, sz);
    if (!strcmp(op, "Concat"))
        return move_concat(c, o, src, dst, sz);
    if (!strcmp(op, "Slice"))
        return move_slice(c, o, src[0], dst, sz);
    if (!strcmp(op, "Transpose"))
        return move_transpose(c, o, src[0], dst, sz);
    return 1;
}

int af__onnx_is_move(const char *op)
{
    return !strcmp(op, "Gather") || !strcmp(op, "Concat") || !strcmp(op, "Slice") ||
           !strcmp(op, "Transpose");
}

/* ---- byte fold -------------------------------------------------------------------------- */

static void free_srcs(uint8_t **owned, int n)
{
    for (int i = 0; i < n; i++)
        af__free(owned[i]);
}

/* Output bytes of node c when its data inputs' bytes are known: 0 with *out set (NULL: not
 * folded), or AF_ENOMEM. */
static int fold_to_bytes(af__onnx_imp_t *im, af__onnx_ctx_t *c, uint64_t bytes, uint8_t **out)
{
    int nd = strcmp(c->node->op_type, "Concat") ? 1 : c->n_in, rc = 0;
    const uint8_t *src[32];
    uint8_t *owned[32] = {0};
    uint64_t in_bytes = 0;
    *out = NULL;
    for (int i = 0; i < nd; i++) {
        const af__onnx_val_t *x = c->in[i];
        uint64_t b;
        if (!x || !x->is_const || x->elem != c->out[0]->elem ||
            (rc = af__onnx_const_bytes(im, x, &src[i], &owned[i], &b)) ||
            !af__add_u64(in_bytes, b, &in_bytes)) {
            free_srcs(owned, i + 1);
            return rc < 0 ? AF_ENOMEM : 0;
        }
    }
    uint8_t *dst = bytes <= in_bytes ? af__malloc(bytes ? (size_t)bytes : 1) : NULL;
    rc = bytes > in_bytes ? 0 : !dst ? AF_ENOMEM : 0;
    if (dst && af__onnx_move(c, c->out[0], src, dst, (size_t)af__onnx_elem_size(c->out[0]->elem))) {
        af__free(dst);
        dst = NULL;
    }
    free_srcs(owned, nd);
    *out = dst;
    return rc;
}

/* Cast of a constant from a 16-bit float type to float (models that store their weights in
 * float16 and cast them at run time): each value converts exactly, so the output is what the
 * Cast would compute every round. 0 with *out set (NULL: not folded), or AF_ENOMEM. */
static int cast_to_bytes(af__onnx_imp_t *im, af__onnx_ctx_t *c, uint64_t bytes, uint8_t **out)
{
    const af__onnx_val_t *x = c->n_in >= 1 ? c->in[0] : NULL;
    const uint8_t *src;
    uint8_t *owned = NULL;
    uint64_t in_bytes;
    *out = NULL;
    if (!x || !x->is_const || c->out[0]->elem != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
        (x->elem != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
         x->elem != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16))
        return 0;
    int rc = af__onnx_const_bytes(im, x, &src, &owned, &in_bytes);
    if (rc || in_bytes * 2 != bytes) {
        af__free(owned);
        return rc < 0 ? AF_ENOMEM : 0;
    }
    float *dst = af__malloc(bytes ? (size_t)bytes : 1);
    if (dst)
        for (uint64_t i = 0; i < bytes / 4; i++)
            dst[i] = (float)af__onnx_raw_elem(src + 2 * i, x->elem);
    af__free(owned);
    *out = (uint8_t *)dst;
    return dst ? 0 : AF_ENOMEM;
}

int af__onnx_fold_bytes(af__onnx_ctx_t *c)
{
    af__onnx_imp_t *im = c->im;
    af__onnx_val_t *o = c->n_out == 1 ? c->out[0] : NULL;
    int cast = !strcmp(c->node->op_type, "Cast");
    if (big_endian || !im || !o || o->is_output || o->is_const || af__onnx_vals_known(o) ||
        (!cast && !af__onnx_is_move(c->node->op_type)))
        return 0;
    int64_t n = af__onnx_numel(o);
    int sz = af__onnx_elem_size(o->elem);
    if (n < 0 || sz == 0 || o->elem == ONNX__TENSOR_PROTO__DATA_TYPE__STRING ||
        (uint64_t)n > (AF__ONNX_FOLD_BYTES_MAX - im->folded_bytes) / (uint64_t)sz)
        return 0;
    uint64_t bytes = (uint64_t)n * (uint64_t)sz;
    uint8_t *buf;
    int rc = cast ? cast_to_bytes(im, c, bytes, &buf) : fold_to_bytes(im, c, bytes, &buf);
    if (rc || !buf)
        return rc;
    if (im->n_folded == im->cap_folded) {
        size_t cap = im->cap_folded ? 2 * im->cap_folded : 16;
        uint8_t **p = af__realloc(im->folded, cap * sizeof(*p));
        if (!p) {
            af__free(buf);
            return AF_ENOMEM;
        }
        im->folded = p, im->cap_folded = cap;
    }
    im->folded[im->n_folded++] = buf;
    im->folded_bytes += bytes;
    o->raw = buf, o->raw_len = (size_t)bytes, o->raw_store = NULL, o->tp = NULL;
    o->is_const = 1;
    if (af__onnx_dtype(o->elem) == AF_DTYPE_UNKNOWN || af__onnx_vals_alloc(o) > 0)
        return 0;
    if (!o->vals)
        return AF_ENOMEM;
    for (int64_t i = 0; i < n; i++) /* small: the values too, for the shape rules */
        o->vals[i] = af__onnx_raw_elem(buf + (size_t)i * (size_t)sz, o->elem);
    return 0;
}

#endif /* AF_HAVE_ONNX */
