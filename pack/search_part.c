/*
 * The search's partition storage (af__search_part_t, pack/pack_int.h): the arrays that depend
 * only on a partition's counts, the section CSR, and freeing it all. pack/search.c fills the
 * partition from the intervals (endpoints, overlaps, features, orders); pack/search_dfs.c
 * searches it.
 *
 * Lock rule: none; a partition belongs to one search.
 */
#include "pack/pack_int.h"

/* The partition's arrays that depend only on its counts (un buffers, us sections). */
int af__search_part_alloc(af__search_part_t *sp, size_t un, size_t us)
{
    sp->size = af__malloc(un * sizeof *sp->size);
    sp->sec_lo = af__malloc(un * sizeof(int32_t));
    sp->sec_hi = af__malloc(un * sizeof(int32_t));
    sp->ov_start = af__calloc(un + 1, sizeof(int32_t));
    sp->rank = af__malloc(un * sizeof(int32_t));
    sp->unext = af__malloc((un + 1) * sizeof(int32_t));
    sp->uprev = af__malloc((un + 1) * sizeof(int32_t));
    sp->minoff = af__malloc(un * sizeof(uint64_t));
    sp->off = af__malloc(un * sizeof(uint64_t));
    sp->floor = af__malloc(us * sizeof(uint64_t));
    sp->total = af__malloc(us * sizeof(uint64_t));
    sp->sec_init = af__calloc(us, sizeof(uint64_t));
    sp->lim = af__malloc(2 * (us + 1) * sizeof(uint64_t));
    sp->wit = af__malloc((us + 1) * sizeof(int32_t));
    sp->frames = af__malloc((un + 1) * sizeof *sp->frames);
    int ok = sp->size && sp->sec_lo && sp->sec_hi && sp->ov_start && sp->rank && sp->unext &&
             sp->uprev && sp->minoff && sp->off && sp->floor && sp->total && sp->sec_init &&
             sp->lim && sp->wit && sp->frames;
    for (int h = 0; h <= AF__SEARCH_N_ORDERS; h++)
        ok = ok && (sp->order[h] = af__malloc(un * sizeof(int32_t))) != NULL;
    for (int f = 0; f < AF__SEARCH_N_FEATURES; f++)
        ok = ok && (sp->feat[f] = af__malloc(un * sizeof(uint64_t))) != NULL;
    return ok ? 0 : AF_ENOMEM;
}

/* Buffers live in each section (CSR). */
int af__search_part_sections(af__search_part_t *sp)
{
    size_t us = (size_t)sp->nsec;
    sp->sec_start = af__calloc(us + 1, sizeof(int32_t));
    if (!sp->sec_start)
        return AF_ENOMEM;
    for (int32_t b = 0; b < sp->n; b++)
        for (int32_t s = sp->sec_lo[b]; s < sp->sec_hi[b]; s++)
            sp->sec_start[s + 1]++;
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->sec_start[s + 1] += sp->sec_start[s];
    sp->sec_buf = af__malloc(((size_t)sp->sec_start[sp->nsec] + 1) * sizeof(int32_t));
    if (!sp->sec_buf)
        return AF_ENOMEM;
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->floor[s] = (uint64_t)sp->sec_start[s]; /* fill cursors */
    for (int32_t b = 0; b < sp->n; b++)
        for (int32_t s = sp->sec_lo[b]; s < sp->sec_hi[b]; s++)
            sp->sec_buf[sp->floor[s]++] = b;
    for (int32_t s = 0; s < sp->nsec; s++)
        sp->wit[s] = sp->sec_start[s]; /* every section has a live buffer */
    return 0;
}

void af__search_part_free(af__search_part_t *sp)
{
    af__free(sp->size);
    af__free(sp->sec_lo);
    af__free(sp->sec_hi);
    af__free(sp->ov_start);
    af__free(sp->ov);
    af__free(sp->ovr_lo);
    af__free(sp->ovr_hi);
    af__free(sp->sec_start);
    af__free(sp->sec_buf);
    for (int h = 0; h <= AF__SEARCH_N_ORDERS; h++)
        af__free(sp->order[h]);
    for (int f = 0; f < AF__SEARCH_N_FEATURES; f++)
        af__free(sp->feat[f]);
    af__free(sp->rank);
    af__free(sp->unext);
    af__free(sp->uprev);
    af__free(sp->minoff);
    af__free(sp->off);
    af__free(sp->floor);
    af__free(sp->total);
    af__free(sp->sec_init);
    af__free(sp->lim);
    af__free(sp->wit);
    af__free(sp->log);
    af__free(sp->cand);
    af__free(sp->frames);
}
