/*
 * The copy kernels of offload: SwapOut (arena -> host tier) and SwapIn (host tier -> arena)
 * are a memcpy of their one input into their one output, whatever the kernel set, so swapped
 * plans run unchanged under "verify", "real", "empty" and any set that asks here first. They
 * run on a worker like any node; the plan's data and reuse edges order them against compute,
 * which is where the overlap comes from.
 *
 * Pure functions of their arguments: no state, no locks.
 */
#include "executor/executor_int.h"

#include <string.h>

static int k_swap(const af_kernel_args_t *a)
{
    if (a->n_inputs != 1 || a->n_outputs != 1)
        return AF_EINVAL;
    uint64_t n = a->output_bytes[0] < a->input_bytes[0] ? a->output_bytes[0] : a->input_bytes[0];
    if (a->outputs[0] && a->inputs[0] && a->outputs[0] != a->inputs[0])
        memcpy(a->outputs[0], a->inputs[0], (size_t)n);
    return 0;
}

af_kernel_fn af__kernel_swap(const char *op)
{
    return op && (!strcmp(op, AF_OP_SWAP_OUT) || !strcmp(op, AF_OP_SWAP_IN)) ? k_swap : NULL;
}
