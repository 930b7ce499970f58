/*
 * Nogoods of the placement search: pieces known to have no packing (pack/search_dfs.c,
 * pack/search_sky.c).
 *
 * A piece split off during the search is its own problem, fully given by its unplaced buffers
 * and their minimum offsets (each must lie at or above its own: the placed buffers it overlaps
 * are below it, and nothing else constrains it), the capacity, and for the canonical search the
 * offset its canonical sequence starts at. When a piece has no packing, the same piece often
 * forms again: the search backtracks into choices on the other side of the split, which do not
 * change it, and makes the same split again. The table remembers failed pieces by a 128-bit
 * signature of (buffer, minimum offset) over its unplaced buffers: a piece whose signature failed
 * under a capacity at least as large and a start at most as high fails at once. Such a failure
 * holds whatever the order the search tries buffers in, so the table lives as long as the
 * partition's search and serves every restart and both engines (the skyline search starts every
 * piece at 0, which is the canonical search with no start constraint).
 *
 * The table is a cache: a fixed number of slots (grown with the partition, allocated on first
 * use), each new failure overwriting what was in its slot. A collision of two different pieces
 * on all 128 bits would wrongly prune; its probability is negligible next to the search's own
 * limits. Not thread-safe; one per partition search.
 */
#include "pack/pack_int.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2);
    h *= UINT64_C(0xBF58476D1CE4E5B9);
    return h ^ (h >> 31);
}

void af__search_piece_sig(const af__search_part_t *p, const af__search_piece_t *pc, uint64_t *h1,
                          uint64_t *h2)
{
    uint64_t a = UINT64_C(0x6A09E667F3BCC908), b = UINT64_C(0xBB67AE8584CAA73B);
    for (int32_t s = pc->slo; s < pc->shi; s++)
        for (int32_t j = p->first_start[s]; p->nfirst[s] && j < p->first_start[s + 1]; j++) {
            int32_t c = p->first_buf[j];
            if (p->off[c] != AF__SEARCH_UNPLACED)
                continue;
            a = mix(a, ((uint64_t)(uint32_t)c << 32) ^ p->minoff[c]);
            b = mix(b ^ p->minoff[c], (uint64_t)(uint32_t)c * UINT64_C(0x94D049BB133111EB));
        }
    *h1 = a;
    *h2 = b | 1; /* 0 marks an empty slot */
}

static af__search_memo_t *slot_of(const af__search_part_t *p, uint64_t h1)
{
    return &p->memo[h1 & (p->memo_size - 1)];
}

int af__search_memo_failed(const af__search_part_t *p, uint64_t h1, uint64_t h2, uint64_t cap,
                           uint64_t start)
{
    if (!p->memo)
        return 0;
    const af__search_memo_t *e = slot_of(p, h1);
    return e->h2 == h2 && e->h1 == h1 && e->cap >= cap && e->start <= start;
}

void af__search_memo_add(af__search_part_t *p, uint64_t h1, uint64_t h2, uint64_t cap,
                         uint64_t start)
{
    if (!p->memo) {
        size_t want = 1024;
        while (want < 16 * (size_t)p->n && want < ((size_t)1 << 18))
            want *= 2;
        p->memo = af__calloc(want, sizeof *p->memo);
        if (!p->memo)
            return; /* the table only saves work: without it the search is still complete */
        p->memo_size = want;
    }
    af__search_memo_t *e = slot_of(p, h1);
    if (e->h1 == h1 && e->h2 == h2 && e->cap >= cap && e->start <= start)
        return; /* already known, under a stronger statement */
    *e = (af__search_memo_t){h1, h2, cap, start};
}
