/* Placeholder: the anytime search (issue 4) replaces this file. */
#include "planner/planner_int.h"

int af__place_search(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                     af_error_t *err)
{
    (void)iv;
    (void)n;
    (void)o;
    (void)height;
    return af__err(err, AF_ENOTSUP, "placement search is not built yet");
}
