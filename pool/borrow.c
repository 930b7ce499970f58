/*
 * Borrowing: a request whose class has no free block takes one of a larger class (seed 1 §4.2,
 * §4.3: "the second level is the cross-block global mutex, only for borrowing").
 *
 * Two places borrow. In a cache (pool/cache.c, cache_lend): with no lock, from the cache's own
 * stack of the nearest larger non-empty class within cache_borrow_ratio. Here, on the slow path
 * (af__pool_alloc_slow, under the global mutex): from the central free list of the nearest
 * larger class within borrow_max_ratio that has a free block; only when none has one is a chunk
 * mapped for the class (af__pool_grow, pool/chunk.c). Either way the block's state word records
 * BORROWED, the owner class and the borrower class, and when freed the block goes back to its
 * owner class (seed §5.3: a block returned to the borrower's class slowly drains the large
 * classes; tests/test_pool.c has the regression test).
 *
 * Lock rule: glock held for the whole slow path; class locks taken under it one at a time
 * (AF__RANK_POOL_GLOBAL before AF__RANK_POOL_CLASS).
 */
#include "pool/pool_int.h"

int af__pool_alloc_slow(af_pool_t *p, uint32_t c, uint64_t want, af__pool_block_t **blk)
{
    af__pool_block_t *b = NULL;
    int rc = 0;
    af__pool_glock(p);
    for (uint32_t d = c + 1; d <= p->cls[c].borrow_last && !b; d++) {
        if (!AF__LD(&p->cls[d].nfree)) /* peek; rechecked under the lock */
            continue;
        af__pool_clock(p, d);
        b = af__pool_central_pop(p, d);
        af__pool_cunlock(p, d);
        if (b) {
            atomic_store_explicit(&b->state, af__blk_state(AF_BLOCK_BORROWED, d, c),
                                  memory_order_relaxed);
            AF__ADD(&p->cls[d].lent_total, 1);
            AF__ADD(&p->borrows, 1);
        }
    }
    while (!b) {
        af__pool_clock(p, c); /* a free may have refilled our own class meanwhile */
        b = af__pool_central_pop(p, c);
        af__pool_cunlock(p, c);
        if (b) {
            atomic_store_explicit(&b->state, af__blk_state(AF_BLOCK_INUSE, c, 0),
                                  memory_order_relaxed);
            break;
        }
        int64_t live = af__pool_live_req(p) + (int64_t)want; /* the peak matters as we grow */
        af__pool_note_peak(p, live > 0 ? (uint64_t)live : 0);
        if ((rc = af__pool_grow(p, c)))
            break;
    }
    af__pool_gunlock(p);
    if (b)
        AF__ST(&b->req, (uint32_t)want);
    *blk = b;
    return rc;
}
