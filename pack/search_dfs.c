/*
 * Depth-first branch and bound for one partition of the placement problem (does it fit under a
 * capacity?). The search space and the first three prunings are MiniMalloc's (Moffitt, ASPLOS
 * 2023); the rest is ours.
 *
 * Canonical solutions: in some optimal packing every buffer sits at 0 or on the top of a buffer
 * that overlaps it in time (push everything down), so a buffer is only ever placed at its
 * current minimum offset (the highest top among the placed buffers overlapping it, aligned up),
 * and buffers are placed in non-decreasing (offset, static rank) order, so each packing is
 * reached once.
 * Dominance: a candidate whose minimum offset is at or above some other unplaced buffer's
 * minimum offset + size would leave a gap that buffer fits in; the packing that places that
 * buffer first dominates, so the candidate is skipped.
 * Cross-section inference: in each section (time slot) every unplaced buffer lies above the
 * section's floor (the top of the placed buffers there, which all overlap it) and above the
 * offset just placed (monotone order), and they stack, so max(floor, offset) + unplaced total
 * must stay within the capacity; otherwise backtrack at once. The check goes further than
 * MiniMalloc's: the lowest unplaced buffer of a section must be able to start at or below
 * capacity - total, which its minimum offset and the canonical order may forbid (eff() below),
 * and the same limits filter the candidates before they are placed (push_candidates()).
 * Fixed buffers (a window re-placed around others, pack/repair.c), as MiniMalloc has them: a
 * fixed buffer starts at its offset as its minimum offset, is placed when the sequence reaches it,
 * and a placement that raises it fails; it fills no gap (not in the dominance test) and, like a
 * settled buffer, kills the node once the sequence passes it.
 * Hatless: a placement that raised no unplaced buffer's minimum offset (nothing overlapping it is
 * left) cannot be undone by any later candidate of the same frame, which would have to place it
 * again at the same offset after a higher one; so once it fails the frame fails.
 * Pieces (dynamic decomposition): once no unplaced buffer is live across a section boundary, the
 * unplaced buffers on each side only meet the placed ones, so the piece splits; its parts are
 * searched one after the other, and when one has no packing the search goes straight back to the
 * placement that split them (the other parts cannot help). Unlike MiniMalloc, a part keeps the
 * canonical order where the split left it (its buffers still follow the splitting placement), so
 * no packing is searched twice, and the inference and the candidate filter look at the part's
 * sections only.
 *
 * The recursion is an explicit stack of frames (one per placed buffer) and an undo log of every
 * word changed, so depth is not limited by the thread's stack. Invariants between iterations:
 * off[b] != UNPLACED exactly for the buffers placed by frames 0..depth; minoff, floor, total,
 * cut, nfirst, nov_left and the pieces' left counts are those implied by that partial packing;
 * the undo log holds, in order, the old values needed to unwind each frame; unplaced buffers
 * never cross a boundary of the piece they are in. No locks: the state belongs to one call.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <time.h>

typedef af__search_frame_t frame_t;
typedef af__search_piece_t piece_t;

double af__search_now(int cpu)
{
    struct timespec ts;
    clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Places buffer b at its minimum offset and propagates: floors and totals of its sections, the
 * cuts between them, the minimum offsets of the unplaced buffers overlapping it. Sets *hatless
 * when no unplaced buffer overlaps b. Returns 0 or AF_ENOMEM (undo log).
 */
static int place(af__search_part_t *p, int32_t b, int *hatless)
{
    size_t need = p->nlog + 2 * (size_t)(p->sec_hi[b] - p->sec_lo[b]) +
                  (size_t)(p->ov_start[b + 1] - p->ov_start[b]);
    if (af__grow((void **)&p->log, &p->caplog, need, sizeof *p->log))
        return AF_ENOMEM;
    uint64_t o = p->minoff[b], top = o + p->size[b];
    p->off[b] = o;
    p->fixed_fail = 0;
    p->nfirst[p->sec_lo[b]]--;
    for (int32_t s = p->sec_lo[b]; s < p->sec_hi[b]; s++) {
        if (p->floor[s] < top)
            af__search_set_word(p, &p->floor[s], top);
        af__search_set_word(p, &p->total[s], p->total[s] - p->size[b]);
    }
    for (int32_t s = p->sec_lo[b]; s + 1 < p->sec_hi[b]; s++)
        p->cut[s]--;
    uint64_t raised = af__align_up(top, p->alignment);
    int none = 1;
    for (int32_t k = p->ov_start[b]; k < p->ov_start[b + 1]; k++) {
        int32_t c = p->ov[k];
        if (p->off[c] != AF__SEARCH_UNPLACED)
            continue;
        none = 0;
        p->nov_left[c]--;
        if (p->minoff[c] < raised) {
            af__search_set_word(p, &p->minoff[c], raised);
            p->fixed_fail |= p->fixed && p->fixed[c] != AF__SEARCH_UNPLACED;
        }
    }
    *hatless = none;
    return 0;
}

/* Undoes place(b) after its words were restored from the undo log (placements are undone in
 * reverse order, so the unplaced buffers overlapping b are the ones place() saw). */
static void unplace(af__search_part_t *p, int32_t b)
{
    p->off[b] = AF__SEARCH_UNPLACED;
    p->nfirst[p->sec_lo[b]]++;
    for (int32_t s = p->sec_lo[b]; s + 1 < p->sec_hi[b]; s++)
        p->cut[s]++;
    for (int32_t k = p->ov_start[b]; k < p->ov_start[b + 1]; k++)
        if (p->off[p->ov[k]] == AF__SEARCH_UNPLACED)
            p->nov_left[p->ov[k]]++;
}

/*
 * Cross-section inference after placing at (o, rank last). Every unplaced buffer c will sit at
 * or above eff(c): its minimum offset, raised to o (placements never go down), and above o when
 * the canonical order forbids placing it at o (its rank is below last at that offset). In each
 * section the unplaced buffers stack above the lowest eff and above the placed tops, so that
 * level + their total must fit under cap.
 */
static uint64_t eff(const af__search_part_t *p, int32_t c, uint64_t o, int32_t last)
{
    uint64_t e = p->minoff[c];
    if (e < o || (e == o && p->rank[c] < last)) {
        if (p->nov_left[c] == 0 || (p->fixed && p->fixed[c] != AF__SEARCH_UNPLACED))
            return UINT64_MAX; /* settled below the sequence: it can never be placed */
        e = p->rank[c] > last ? o : o + 1;
    }
    return e;
}

static int check(af__search_part_t *p, const piece_t *pc, int32_t b, uint64_t o, int32_t last,
                 uint64_t cap, int full, int inside)
{
    /*
     * Outside [lo, hi) (the sections of b and of every buffer overlapping it) nothing changed
     * since the piece's previous placement passed this check, except o and last. There a
     * section's lowest unplaced buffer had eff <= lim, and eff grew to at most max(its old eff,
     * o + 1), so the section still passes while o < lim: only the O(1) test is needed. When the
     * candidate filter already showed o < lim in every section outside b's own (inside), those
     * sections are not visited at all. The first placement of the search has no previous check:
     * full. Sections outside the piece belong to other pieces, which this placement cannot
     * affect.
     */
    if (p->fixed_fail)
        return 0; /* a fixed buffer was raised above its offset */
    int32_t lo = full ? pc->slo : p->ovr_lo[b], hi = full ? pc->shi : p->ovr_hi[b];
    lo = lo < pc->slo ? pc->slo : lo;
    hi = hi > pc->shi ? pc->shi : hi;
    int32_t s0 = inside ? lo : pc->slo, s1 = inside ? hi : pc->shi;
    for (int32_t s = s0; s < s1; s++) {
        uint64_t f = p->floor[s], t = p->total[s];
        if (f > cap)
            return 0;
        if (t == 0)
            continue;
        uint64_t lim = cap - t;
        if ((s < lo || s >= hi) && o < lim)
            continue;
        /* Every eff is >= o; the section is fine once one eff is <= lim (the highest start of
         * its lowest unplaced buffer that still lets the rest fit). wit[s] remembers where the
         * last buffer that showed it is: usually it still does, and the scan is skipped; else
         * the scan goes on from there (cyclically), past the buffers placed since. */
        if (f > lim || o > lim)
            return 0;
        int32_t k = p->wit[s], begin = p->sec_start[s], end = p->sec_start[s + 1];
        int32_t left = end - begin;
        while (left-- > 0) {
            int32_t c = p->sec_buf[k];
            if (p->off[c] == AF__SEARCH_UNPLACED && eff(p, c, o, last) <= lim)
                break;
            if (++k == end)
                k = begin;
        }
        if (left < 0)
            return 0;
        p->wit[s] = k;
    }
    return 1;
}

static uint64_t sec_limit(const af__search_part_t *p, int32_t s, uint64_t cap)
{
    return p->total[s] ? cap - p->total[s] : UINT64_MAX;
}

/*
 * The limit arrays of piece pc (see push_candidates()): pre[s + 1] = min of the limits of the
 * sections [slo, s], suf[s] = min over [s, shi). When `changed` >= 0 they hold the state before
 * buffer `changed` was placed in the same piece and nothing else changed since: only its
 * sections' limits went up, so pre is recomputed from its first section on and suf from its last
 * one down, each until it stops changing past the buffer's sections. Otherwise the piece's
 * sections are recomputed.
 */
static void update_limits(af__search_part_t *p, const piece_t *pc, uint64_t cap, int32_t changed)
{
    uint64_t *pre = p->lim, *suf = p->lim + p->nsec + 1;
    int32_t lo = changed >= 0 ? p->sec_lo[changed] : pc->slo;
    int32_t hi = changed >= 0 ? p->sec_hi[changed] : pc->shi;
    pre[pc->slo] = UINT64_MAX;
    for (int32_t s = lo; s < pc->shi; s++) {
        uint64_t u = sec_limit(p, s, cap), v = u < pre[s] ? u : pre[s];
        if (changed >= 0 && s >= hi && pre[s + 1] == v)
            break;
        pre[s + 1] = v;
    }
    suf[pc->shi] = UINT64_MAX;
    for (int32_t s = hi - 1; s >= pc->slo; s--) {
        uint64_t u = sec_limit(p, s, cap), v = u < suf[s + 1] ? u : suf[s + 1];
        if (changed >= 0 && s < lo && suf[s] == v)
            break;
        suf[s] = v;
    }
    p->lim_id++;
}

/*
 * A section of the piece whose limit is exactly last_off must get its lowest unplaced buffer at
 * last_off, from a buffer with minimum offset <= last_off and a rank above the next placement's
 * (the check's eff). So when such sections exist, only candidates at last_off with rank <= the
 * returned rank, the smallest over them of the highest rank able to do that, can pass: a
 * higher-ranked one is not live in the section (else it would count), and one above last_off
 * leaves a gap there. INT32_MAX when no section is at its limit.
 */
static int32_t limit_rank(const af__search_part_t *p, const piece_t *pc, uint64_t last_off,
                          uint64_t cap)
{
    int32_t max_rank = INT32_MAX;
    for (int32_t s = pc->slo; s < pc->shi; s++) {
        if (p->total[s] == 0 || cap - p->total[s] != last_off)
            continue;
        int32_t r = -1;
        for (int32_t k = p->sec_start[s]; k < p->sec_start[s + 1]; k++) {
            int32_t c = p->sec_buf[k];
            if (p->off[c] == AF__SEARCH_UNPLACED && p->minoff[c] <= last_off && p->rank[c] > r)
                r = p->rank[c];
        }
        if (r < max_rank)
            max_rank = r;
    }
    return max_rank;
}

/*
 * Pushes the candidates that may follow a placement at (f->last_off, f->last_rank) in f's piece
 * onto the candidate stack. They are tried in (minimum offset, rank) order, picked one at a time
 * (pick()): a dive that does not backtrack tries one candidate per frame, so sorting them all
 * would be wasted.
 */
static int push_candidates(af__search_part_t *p, frame_t *f, uint64_t cap, int32_t changed)
{
    const piece_t *pc = &p->pieces[f->piece];
    uint64_t last_off = f->last_off;
    int32_t last_rank = f->last_rank;
    /*
     * A placement at offset m fails the cross-section check in any section s of the piece it
     * does not touch once m > cap - total[s] (the lowest unplaced buffer there would start above
     * m). pre[s] and suf[s] are the minima of that limit over the piece's sections < s and
     * >= s, so a candidate's limit outside its own sections is min(pre[lo], suf[hi]); candidates
     * above it are not tried.
     */
    update_limits(p, pc, cap, changed);
    f->lim_id = p->lim_id;
    uint64_t *pre = p->lim, *suf = p->lim + p->nsec + 1;
    /* Every limit is >= last_off here (the check of the placement at last_off passed, and the
     * root has last_off 0), so some section is at its limit when the smallest limit equals it. */
    int32_t max_rank = pre[pc->shi] == last_off ? limit_rank(p, pc, last_off, cap) : INT32_MAX;
    /* At most every unplaced buffer of the piece is a candidate. One pass collects those that
     * pass the tests below and the lowest top of an unplaced buffer (min_height); then those at
     * or above it are dropped (dominance, see the file comment). */
    if (af__grow((void **)&p->cand, &p->capcand, p->ncand + (size_t)pc->left, sizeof *p->cand))
        return AF_ENOMEM;
    f->cand_begin = p->ncand;
    uint64_t min_height = UINT64_MAX;
    size_t k = p->ncand;
    int dead = 0;
    for (int32_t s = pc->slo; s < pc->shi; s++) {
        if (p->nfirst[s] == 0)
            continue;
        for (int32_t j = p->first_start[s]; j < p->first_start[s + 1]; j++) {
            int32_t b = p->first_buf[j];
            if (p->off[b] != AF__SEARCH_UNPLACED)
                continue;
            uint64_t m = p->minoff[b];
            int32_t i = p->rank[b];
            int fixed = p->fixed && p->fixed[b] != AF__SEARCH_UNPLACED;
            if (m + p->size[b] < min_height && !fixed)
                min_height = m + p->size[b];
            /* A settled buffer (nothing left to raise it) or a fixed one that the sequence has
             * passed can never be placed: the node is dead (no candidate is kept). */
            if ((p->nov_left[b] == 0 || fixed) &&
                (m < last_off || (m == last_off && i < last_rank)))
                dead = 1;
            /* m >= min_height so far: dropped below anyway (min_height only decreases) */
            if (m < last_off || (m == last_off && i < last_rank) || (m >= min_height && !fixed))
                continue;
            if (m > pre[p->sec_lo[b]] || m > suf[p->sec_hi[b]])
                continue;
            if (max_rank != INT32_MAX && (m != last_off || i > max_rank))
                continue;
            /* ~b marks a candidate not strictly below every limit outside its sections */
            p->cand[k++] = m < pre[p->sec_lo[b]] && m < suf[p->sec_hi[b]] ? b : ~b;
        }
    }
    for (size_t j = f->cand_begin; j < k && !dead; j++) {
        int32_t b = p->cand[j] < 0 ? ~p->cand[j] : p->cand[j];
        if (p->minoff[b] < min_height || (p->fixed && p->fixed[b] != AF__SEARCH_UNPLACED))
            p->cand[p->ncand++] = p->cand[j]; /* a fixed buffer cannot be moved into a gap */
    }
    f->cand_end = p->ncand;
    f->next = f->cand_begin;
    f->placed = -1;
    f->log_mark = p->nlog;
    return 0;
}

/*
 * The frame's next candidate in (minimum offset, rank) order: moved to position f->next. The
 * minimum offsets are those of the frame's own state (its children were undone), so the order
 * is the one a full sort at push time would give.
 */
static int32_t pick(af__search_part_t *p, frame_t *f, int *strict)
{
    size_t at = f->next;
    int32_t b = p->cand[at] < 0 ? ~p->cand[at] : p->cand[at];
    for (size_t j = f->next + 1; j < f->cand_end; j++) {
        int32_t c = p->cand[j] < 0 ? ~p->cand[j] : p->cand[j];
        if (p->minoff[c] < p->minoff[b] ||
            (p->minoff[c] == p->minoff[b] && p->rank[c] < p->rank[b])) {
            at = j;
            b = c;
        }
    }
    int32_t e = p->cand[at];
    *strict = e >= 0;
    p->cand[at] = p->cand[f->next];
    p->cand[f->next++] = e;
    return b;
}

/*
 * After frame `frame` placed b at o in its piece (the pieces it makes remember o and rank): when
 * the placement left zero-cut boundaries inside b's sections, splits the piece into its parts that
 * still hold unplaced buffers (when there are two or more), makes the first the current one and
 * pushes the others (searched later, left to right); when the piece is complete, takes the next
 * pending piece. Returns the piece the next frame places in, -1 when nothing is left (a packing),
 * or -2 when the pieces array is full (cannot happen: at most 2n - 1 pieces are alive).
 */
int32_t af__search_next_piece(af__search_part_t *p, int32_t piece, int32_t frame, int32_t b,
                              uint64_t o, int32_t rank)
{
    piece_t *pc = &p->pieces[piece];
    int split = 0;
    for (int32_t s = b >= 0 ? p->sec_lo[b] : 0;
         b >= 0 && pc->left > 1 && !split && s + 1 < p->sec_hi[b]; s++)
        split = p->cut[s] == 0;
    if (split) {
        int32_t at = p->npieces, start = pc->slo, count = 0;
        for (int32_t s = pc->slo; s < pc->shi; s++) {
            count += p->nfirst[s];
            if (s + 1 < pc->shi && (s < p->sec_lo[b] || s + 1 >= p->sec_hi[b] || p->cut[s]))
                continue; /* not a boundary of a part */
            if (count) {
                if (p->npieces >= 2 * p->n + 1)
                    return -2;
                p->pieces[p->npieces++] = (piece_t){start, s + 1, count, frame, o, rank};
            }
            start = s + 1;
            count = 0;
        }
        if (p->npieces - at >= 2) {
            for (int32_t k = p->npieces - 1; k > at; k--)
                p->pend[p->npend++] = k;
            return at;
        }
        p->npieces = at; /* one part: the piece goes on as it is */
    }
    if (pc->left > 0)
        return piece;
    return p->npend ? p->pend[--p->npend] : -1;
}

void af__search_reset(af__search_part_t *p, const int32_t *ord)
{
    for (int32_t i = 0; i < p->n; i++) {
        p->minoff[i] = p->fixed && p->fixed[i] != AF__SEARCH_UNPLACED ? p->fixed[i] : 0;
        p->off[i] = AF__SEARCH_UNPLACED;
        p->rank[ord[i]] = i;
        p->nov_left[i] = p->ov_start[i + 1] - p->ov_start[i];
    }
    for (int32_t s = 0; s < p->nsec; s++) {
        p->floor[s] = 0;
        p->total[s] = p->sec_init[s];
        p->cut[s] = 0;
        p->nfirst[s] = p->first_start[s + 1] - p->first_start[s];
    }
    for (int32_t b = 0; b < p->n; b++)
        for (int32_t s = p->sec_lo[b]; s + 1 < p->sec_hi[b]; s++)
            p->cut[s]++;
    p->nlog = 0;
    p->ncand = 0;
    p->pieces[0] = (piece_t){0, p->nsec, p->n, -1, 0, -1};
    p->npieces = 1;
    p->npend = 0;
    p->nrlog = 0;
}

/* Undoes the placement of frame f (its words, its piece count, the pieces it made). */
static void undo_frame(af__search_part_t *p, frame_t *f)
{
    af__search_undo_to(p, f->log_mark);
    while (p->nrlog > f->rlog_mark) {
        p->nrlog--;
        p->rank[p->rlog[p->nrlog].b] = p->rlog[p->nrlog].old;
    }
    unplace(p, f->placed);
    p->pieces[f->piece].left++;
    p->npieces = f->npieces;
    p->npend = f->npend;
    f->placed = -1;
}

/* The value of feature `ft` of buffer b for the re-ranking of piece pc, whose largest current
 * cross-section is section crit: tot and the distance from the largest cross-section are
 * recomputed on the piece's unplaced buffers, the others do not change. */
static uint64_t feature(const af__search_part_t *p, int ft, int32_t b, int32_t crit)
{
    if (ft < 0)
        return p->tie[b];
    if (ft == 0) {
        uint64_t tot = 0;
        for (int32_t s = p->sec_lo[b]; s < p->sec_hi[b]; s++)
            tot = p->total[s] > tot ? p->total[s] : tot;
        return tot;
    }
    if (ft == 6) {
        int32_t d = crit < p->sec_lo[b]    ? p->sec_lo[b] - crit
                    : crit >= p->sec_hi[b] ? crit - p->sec_hi[b] + 1
                                           : 0;
        return ~(uint64_t)d;
    }
    return p->feat[ft][b];
}

static int cmp_rkey(const void *a, const void *b)
{
    const af__search_rkey_t *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] > y->k[i] ? -1 : 1;
    return x->rank - y->rank;
}

static int cmp_i32(const void *a, const void *b)
{
    return *(const int32_t *)a - *(const int32_t *)b;
}

/*
 * Re-ranks the unplaced buffers of a piece just split off by the order's features computed on
 * the piece alone (MiniMalloc sorts each sub-partition again; the largest cross-section a buffer
 * takes part in is the feature that changes most once its neighbours are placed): the piece's
 * buffers take the same set of ranks, in the new order (ties keep the old one), so ranks stay
 * distinct across pieces. Changes go to the rank log. Returns 0 or AF_ENOMEM.
 */
static int rerank(af__search_part_t *p, const piece_t *pc)
{
    int dyn = 0;
    for (int i = 0; i < 3; i++)
        dyn |= p->spec[i] == 0 || p->spec[i] == 6;
    if (!dyn)
        return 0;
    int32_t crit = pc->slo, m = 0;
    for (int32_t s = pc->slo; s < pc->shi; s++)
        crit = p->total[s] > p->total[crit] ? s : crit;
    af__search_rkey_t *rk = p->rkey;
    for (int32_t s = pc->slo; s < pc->shi; s++)
        for (int32_t j = p->first_start[s]; p->nfirst[s] && j < p->first_start[s + 1]; j++) {
            int32_t b = p->first_buf[j];
            if (p->off[b] != AF__SEARCH_UNPLACED)
                continue;
            for (int i = 0; i < 3; i++)
                rk[m].k[i] = feature(p, p->spec[i], b, crit);
            rk[m].rank = p->rank[b];
            rk[m++].b = b;
        }
    if (af__grow((void **)&p->rlog, &p->caprlog, p->nrlog + (size_t)m, sizeof *p->rlog))
        return AF_ENOMEM;
    /* The new order, then the old ranks in increasing order handed out along it. */
    qsort(rk, (size_t)m, sizeof *rk, cmp_rkey);
    int32_t *ranks = p->cand + p->ncand; /* scratch: room for the piece's candidates */
    for (int32_t i = 0; i < m; i++)
        ranks[i] = rk[i].rank;
    qsort(ranks, (size_t)m, sizeof *ranks, cmp_i32);
    for (int32_t i = 0; i < m; i++) {
        int32_t b = rk[i].b;
        if (p->rank[b] == ranks[i])
            continue;
        p->rlog[p->nrlog++] = (af__search_rundo_t){b, p->rank[b]};
        p->rank[b] = ranks[i];
    }
    return 0;
}

/* Sets up frame f to place in piece pc after (last_off, last_rank), or at the start of the
 * piece when first, and pushes its candidates. A piece split off is re-ranked first; its
 * canonical sequence then starts at any rank at the splitting placement's offset. */
static int enter_frame(af__search_part_t *p, frame_t *f, int32_t pc, int first, uint64_t last_off,
                       int32_t last_rank, uint64_t cap, int32_t changed)
{
    f->piece = pc;
    f->first = (uint8_t)first;
    f->hatless = 0;
    f->last_off = first ? p->pieces[pc].last_off : last_off;
    f->last_rank = first ? p->pieces[pc].last_rank : last_rank;
    if (first && pc > 0) {
        af__search_piece_sig(p, &p->pieces[pc], &f->sig1, &f->sig2);
        if (af__search_memo_failed(p, f->sig1, f->sig2, cap, f->last_off)) {
            f->cand_begin = f->next = f->cand_end = p->ncand;
            f->placed = -1;
            f->log_mark = p->nlog;
            f->lim_id = 0;
            return 0;
        }
        if (af__grow((void **)&p->cand, &p->capcand, p->ncand + (size_t)p->pieces[pc].left,
                     sizeof *p->cand) ||
            rerank(p, &p->pieces[pc]))
            return AF_ENOMEM;
        f->last_rank = -1;
    }
    return push_candidates(p, f, cap, changed);
}

int af__search_dfs(af__search_part_t *p, int order_idx, const int8_t *spec, uint64_t cap,
                   uint64_t *out)
{
    const int32_t *ord = p->order[order_idx];
    for (int i = 0; i < 3; i++)
        p->spec[i] = spec[i];
    af__search_reset(p, ord);
    for (int32_t s = 0; s < p->nsec; s++)
        if (p->sec_init[s] > cap)
            return AF__SEARCH_INFEASIBLE;
    frame_t *fr = p->frames;
    int32_t depth = 0;
    int rc = enter_frame(p, &fr[0], 0, 1, 0, -1, cap, -1);
    while (rc == 0) {
        frame_t *f = &fr[depth];
        if (f->placed >= 0) {
            undo_frame(p, f);
            if (f->hatless)
                f->next = f->cand_end;
        }
        if (f->next == f->cand_end) {
            if (depth == 0) {
                rc = AF__SEARCH_INFEASIBLE;
                break;
            }
            /* The first frame of a piece failing means the piece has no packing: back to the
             * placement that split it off, past the parts searched since (they cannot help). */
            if (f->first)
                af__search_memo_add(p, f->sig1, f->sig2, cap, f->last_off);
            int32_t to = f->first ? p->pieces[f->piece].origin : depth - 1;
            for (int32_t d = depth - 1; d > to; d--)
                undo_frame(p, &fr[d]);
            p->ncand = fr[to + 1].cand_begin;
            depth = to;
            continue;
        }
        int strict, hatless;
        int32_t b = pick(p, f, &strict);
        uint64_t o = p->minoff[b];
        f->log_mark = p->nlog;
        f->npieces = p->npieces;
        f->npend = p->npend;
        f->rlog_mark = p->nrlog;
        if (place(p, b, &hatless)) {
            rc = AF_ENOMEM;
            break;
        }
        f->placed = b;
        f->hatless = (uint8_t)hatless;
        p->pieces[f->piece].left--;
        p->nodes++;
        if (p->node_limit && p->nodes >= p->node_limit) {
            rc = AF__SEARCH_ABORTED;
            break;
        }
        if (p->use_clock && (p->nodes & 255) == 0 &&
            af__search_now(p->use_clock == 2) > p->deadline) {
            rc = AF__SEARCH_TIMEOUT;
            break;
        }
        if (!check(p, &p->pieces[f->piece], b, o, p->rank[b], cap, depth == 0, depth > 0 && strict))
            continue;
        int32_t pc = af__search_next_piece(p, f->piece, (int32_t)(f - p->frames), b, o, p->rank[b]);
        if (pc == -2) {
            rc = AF_ENOMEM;
            break;
        }
        if (pc == -1) {
            for (int32_t i = 0; i < p->n; i++)
                out[i] = p->off[i];
            rc = AF__SEARCH_FOUND;
            break;
        }
        /* the limits are incremental when they still hold this frame's state in the same piece
         * (nothing deeper recomputed them since): placing b is then the only change */
        int same = pc == f->piece;
        int32_t changed = same && p->lim_id == f->lim_id ? b : -1;
        depth++;
        rc = enter_frame(p, &fr[depth], pc, !same, o, p->rank[b], cap, changed);
    }
    return rc;
}
