/*
 * Allocator hooks for out-of-memory tests (header-only): after `oom_countdown` successful
 * allocations every further one fails; -1 never fails. Install with
 *   af_replace_allocator(oom_malloc, oom_realloc, oom_calloc, free);
 */
#ifndef ARENAFLOW_TESTS_OOM_COUNTDOWN_H
#define ARENAFLOW_TESTS_OOM_COUNTDOWN_H

#include <stdlib.h>

static int oom_countdown = -1;

static int oom_take(void)
{
    if (oom_countdown == 0)
        return 0;
    if (oom_countdown > 0)
        oom_countdown--;
    return 1;
}

static void *oom_malloc(size_t n)
{
    return oom_take() ? malloc(n) : NULL;
}

static void *oom_realloc(void *p, size_t n)
{
    return oom_take() ? realloc(p, n) : NULL;
}

static void *oom_calloc(size_t c, size_t n)
{
    return oom_take() ? calloc(c, n) : NULL;
}

#endif
