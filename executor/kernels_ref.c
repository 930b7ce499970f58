/*
 * The "reference" kernel set: naive C kernels for every op and dtype the project supports, the
 * oracle other backends are tested against. One table per op family:
 *   kernels_ref_elem.c    unary math, binary arithmetic with broadcasting, comparisons, logic,
 *                         Where, Clip, variadic Max/Min/Sum/Mean, Cast/CastLike
 *   kernels_ref_nn.c      MatMul, Gemm, Conv, ConvTranspose, pooling
 *   ...
 * Looking an op up walks the tables (bind time only, never per round).
 */
#include "executor/kernels_ref.h"

static const af__kernel_entry_t *const families[] = {
    af__kref_nn,
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
