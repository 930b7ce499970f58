/*
 * The "reference" kernel set: naive C kernels for every op and dtype the project supports, the
 * oracle other backends are tested against. One table per op family:
 *   kernels_ref_unary.c   unary math, activations, IsNaN/IsInf/Not
 *   kernels_ref_elem.c    binary arithmetic and comparisons with broadcasting, logic, bit
 *                         shifts, variadic Max/Min/Sum/Mean, Where, Clip, Cast/CastLike, PRelu,
 *                         Dropout
 *   kernels_ref_nn.c      MatMul, Gemm, Einsum, Det
 *   kernels_ref_conv.c    Conv, ConvTranspose, pooling (window geometry shared with quant)
 *   kernels_ref_data.c    views, Transpose, Concat, Split, Slice, Pad, Tile, Expand,
 *                         DepthToSpace/SpaceToDepth, Trilu, Shape, Size, EyeLike, Range, OneHot
 *   kernels_ref_norm.c    Softmax family, Batch/Layer/Instance normalisation, LRN, MVN, losses
 *   kernels_ref_reduce.c  Reduce*, ArgMax/ArgMin, CumSum
 *   kernels_ref_gather.c  Gather*, Scatter*, TopK, ReverseSequence; data-dependent refusals
 *   kernels_ref_quant.c   QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 *                         MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
 *   kernels_ref_resize.c  Resize, Upsample, GridSample
 *   kernels_ref_rnn.c     RNN, GRU, LSTM
 *   kernels_ref_signal.c  DFT, STFT, windows; training optimisers
 * with the shared helpers in kernels_ref_util.c (kernels_ref.h). Looking an op up walks the
 * tables (bind time only, never per round).
 */
#include "executor/kernels_ref.h"

static const af__kernel_entry_t *const families[] = {
    af__kref_unary, af__kref_elem,   af__kref_nn,     af__kref_conv,
    af__kref_data,  af__kref_norm,   af__kref_reduce, af__kref_gather,
    af__kref_quant, af__kref_resize, af__kref_rnn,    af__kref_signal,
};

const af__kernel_entry_t *af__kref_find(const char *op)
{
    if (!op)
        return NULL;
    for (size_t f = 0; f < AF_ARRAY_SIZE(families); f++)
        for (const af__kernel_entry_t *e = families[f]; e->op; e++)
            if (strcmp(e->op, op) == 0)
                return e;
    return NULL;
}
