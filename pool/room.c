/*
 * Reserve budget: what keeps reserved ÷ peak live low on a workload whose classes change over
 * a round (a training step allocates big activations first, then gradients of other sizes).
 *
 * Blocks are never re-cut in place; a pool that only maps when nothing free fits ends a round
 * holding the union of what each phase needed. So before the pool maps memory for class c (or a
 * huge request), it checks reserved + the new chunk against opts.reserve_ratio x the peak of
 * requested bytes in use (including this request). Over budget, it returns idle memory that could
 * not have served the request to the OS, one chunk at a time: the smallest idle chunk that covers
 * the excess alone, else the largest, until the new chunk fits or nothing idle is left. Idle means:
 * a cached free huge chunk (the pool's list or the calling cache's), a chunk of another class whose
 * blocks are all on its central list, or a single-block chunk of another class in the calling
 * cache's bins (the caller owns that cache; other threads' caches are not touched). Its address
 * range goes back to the reservation, so the new chunk is mapped wherever it fits: no contiguity is
 * needed, which is what makes this a re-cut of memory between classes.
 *
 * The price is OS calls (munmap, mmap, page faults) when the working set really moves between
 * classes; when a round's blocks fit the budget (the usual steady state: the same plan every
 * round) no memory moves and the fast path is unchanged. reserve_ratio = 0 turns this off.
 *
 * Invariants: only FREE blocks are released, and only whole chunks; counts (class blocks and
 * chunks, huge bytes, huge cache bytes, bin counters) follow each release.
 * Lock rule: runs with glock held (from the slow allocation paths); takes class locks inside
 * (rank glock > class, pool_int.h). The calling cache is single-threaded: its bins are ours.
 */
#include "pool/pool_int.h"

enum { FROM_HUGE_LIST, FROM_CACHE_HUGE, FROM_CENTRAL, FROM_BIN };

typedef struct {
    af__pool_chunk_t *ch;
    int from;
    uint32_t idx; /* cache huge slot, or bin class and slot (class << 16 | slot) */
} cand_t;

/* Keeps `best` the chunk to release for an excess of `need` bytes: the smallest one of at least
 * `need`, else the largest. */
static int better(const cand_t *best, const af__pool_chunk_t *ch, uint64_t need)
{
    if (!best->ch)
        return 1;
    uint64_t b = best->ch->bytes, x = ch->bytes;
    return b >= need ? (x >= need && x < b) : x > b;
}

static void consider(cand_t *best, af__pool_chunk_t *ch, int from, uint32_t idx, uint64_t need)
{
    if (better(best, ch, need))
        *best = (cand_t){ch, from, idx};
}

static int central_idle(af_pool_t *p, af__pool_chunk_t *ch)
{
    uint32_t d = (uint32_t)ch->cls;
    if (AF__LD(&p->cls[d].nfree) < ch->nblocks) /* peek; rechecked under the lock */
        return 0;
    af__pool_clock(p, d);
    int idle = ch->nfree == ch->nblocks;
    af__pool_cunlock(p, d);
    return idle;
}

static cand_t pick(af_pool_t *p, int32_t c, uint64_t need, af_pool_cache_t *k)
{
    cand_t best = {0};
    for (af__pool_chunk_t *ch = p->huge_free; ch; ch = ch->hnext)
        consider(&best, ch, FROM_HUGE_LIST, 0, need);
    for (uint32_t i = 0; k && i < AF__POOL_CACHE_HUGE; i++)
        if (k->huge[i])
            consider(&best, k->huge[i], FROM_CACHE_HUGE, i, need);
    for (size_t i = 0; i < p->nchunks; i++) {
        af__pool_chunk_t *ch = p->chunks[i];
        if (ch->mapped && ch->cls >= 0 && ch->cls != c && better(&best, ch, need) &&
            central_idle(p, ch)) /* the lock only for a chunk that would be chosen */
            best = (cand_t){ch, FROM_CENTRAL, 0};
    }
    for (uint32_t d = 0; k && d < p->nclasses; d++) {
        af__pool_bin_t *bin = &k->bins[d];
        uint32_t n = AF__LD(&bin->n);
        for (uint32_t i = 0; i < n && (int32_t)d != c; i++) {
            af__pool_chunk_t *ch = af__pool_chunk_of(p, bin->slots[i].b);
            if (ch->nblocks == 1)
                consider(&best, ch, FROM_BIN, d << 16 | i, need);
        }
    }
    return best;
}

/* Takes the chunk out of its class's counts (and central list) and unmaps it. */
static void release_class_chunk(af_pool_t *p, af__pool_chunk_t *ch, int central)
{
    uint32_t d = (uint32_t)ch->cls;
    af__pool_clock(p, d);
    if (central)
        for (uint32_t j = 0; j < ch->nblocks; j++)
            af__pool_central_unlink(p, d, af__pool_blk(p, ch, j));
    ch->nfree = 0;
    p->cls[d].nblocks -= ch->nblocks;
    p->cls[d].nchunks--;
    af__pool_cunlock(p, d);
    af__pool_chunk_release(p, ch);
}

static void release(af_pool_t *p, const cand_t *w, af_pool_cache_t *k)
{
    af__pool_chunk_t *ch = w->ch;
    switch (w->from) {
    case FROM_HUGE_LIST:
        for (af__pool_chunk_t **pp = &p->huge_free; *pp; pp = &(*pp)->hnext)
            if (*pp == ch) {
                *pp = ch->hnext;
                break;
            }
        p->huge_free_bytes -= ch->bytes;
        AF__SUB(&p->huge_bytes, ch->bytes);
        af__pool_chunk_release(p, ch);
        break;
    case FROM_CACHE_HUGE:
        k->huge[w->idx] = NULL;
        AF__SUB(&p->huge_bytes, ch->bytes);
        af__pool_chunk_release(p, ch);
        break;
    case FROM_CENTRAL:
        release_class_chunk(p, ch, 1);
        break;
    default: { /* FROM_BIN: take the slot out of the bin (the last one moves into its place) */
        uint32_t d = w->idx >> 16, i = w->idx & 0xffff;
        af__pool_bin_t *bin = &k->bins[d];
        uint32_t n = AF__LD(&bin->n);
        bin->slots[i] = bin->slots[n - 1];
        AF__ST(&bin->n, n - 1);
        AF__ST(&bin->moved, AF__LD(&bin->moved) - 1);
        if (n == 1)
            k->full[d >> 6] &= ~(1ull << (d & 63));
        release_class_chunk(p, ch, 0);
    }
    }
}

void af__pool_make_room(af_pool_t *p, int32_t c, uint64_t bytes, uint64_t live, af_pool_cache_t *k)
{
    if (p->opts.reserve_ratio <= 0)
        return;
    /* Against the peak so far, not the bytes in use now: early in a round little is live, and
     * idle memory the rest of the round needs again would go back and forth every round. */
    uint64_t pk = AF__LD(&p->peak_req);
    double budget = p->opts.reserve_ratio * (double)(live > pk ? live : pk);
    for (;;) {
        double over = (double)(AF__LD(&p->reserved) + bytes) - budget;
        if (over <= 0)
            return;
        cand_t w = pick(p, c, (uint64_t)over, k);
        if (!w.ch)
            return;
        release(p, &w, k);
    }
}
