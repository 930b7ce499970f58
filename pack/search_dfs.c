/*
 * Depth-first branch and bound for one partition of the placement problem (does it fit under a
 * capacity?), after MiniMalloc (Moffitt, ASPLOS 2023).
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
 * must stay within the capacity; otherwise backtrack at once.
 *
 * The recursion is an explicit stack of frames (one per placed buffer) and an undo log of every
 * word changed, so depth is not limited by the thread's stack. Invariants between iterations:
 * off[b] != UNPLACED exactly for the buffers placed by frames 0..depth; minoff, floor and total
 * are those implied by that partial packing; the undo log holds, in order, the old values needed
 * to unwind each frame. No locks: the state belongs to one call.
 */
#include "pack/pack_int.h"

#include <stdlib.h>
#include <time.h>

typedef af__search_frame_t frame_t;

double af__search_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void set_word(af__search_part_t *p, uint64_t *w, uint64_t v)
{
    p->log[p->nlog].p = w;
    p->log[p->nlog].old = *w;
    p->nlog++;
    *w = v;
}

static void undo_to(af__search_part_t *p, size_t mark)
{
    while (p->nlog > mark) {
        p->nlog--;
        *p->log[p->nlog].p = p->log[p->nlog].old;
    }
}

/*
 * Places buffer b at its minimum offset and propagates: floors and totals of its sections, the
 * minimum offsets of the unplaced buffers overlapping it, and then the floors of the sections
 * those buffers live in (no unplaced buffer of a section can go below the lowest minimum offset
 * among them). Returns 0 or AF_ENOMEM (undo log).
 */
static int place(af__search_part_t *p, int32_t b)
{
    size_t need = p->nlog + 2 * (size_t)(p->sec_hi[b] - p->sec_lo[b]) +
                  (size_t)(p->ov_start[b + 1] - p->ov_start[b]);
    if (af__grow((void **)&p->log, &p->caplog, need, sizeof *p->log))
        return AF_ENOMEM;
    uint64_t o = p->minoff[b], top = o + p->size[b];
    p->off[b] = o;
    int32_t r = p->rank[b]; /* out of the unplaced list (restored by unplace(), LIFO) */
    p->unext[p->uprev[r]] = p->unext[r];
    p->uprev[p->unext[r]] = p->uprev[r];
    for (int32_t s = p->sec_lo[b]; s < p->sec_hi[b]; s++) {
        if (p->floor[s] < top)
            set_word(p, &p->floor[s], top);
        set_word(p, &p->total[s], p->total[s] - p->size[b]);
    }
    uint64_t raised = af__align_up(top, p->alignment);
    for (int32_t k = p->ov_start[b]; k < p->ov_start[b + 1]; k++) {
        int32_t c = p->ov[k];
        if (p->off[c] == AF__SEARCH_UNPLACED && p->minoff[c] < raised)
            set_word(p, &p->minoff[c], raised);
    }
    return 0;
}

/* Undoes place(b) after its words were restored from the undo log (placements are undone in
 * reverse order, so b's neighbours in the unplaced list are the ones it left). */
static void unplace(af__search_part_t *p, int32_t b)
{
    int32_t r = p->rank[b];
    p->unext[p->uprev[r]] = r;
    p->uprev[p->unext[r]] = r;
    p->off[b] = AF__SEARCH_UNPLACED;
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
    if (e < o || (e == o && p->rank[c] < last))
        e = p->rank[c] > last ? o : o + 1;
    return e;
}

static int check(af__search_part_t *p, int32_t b, uint64_t o, int32_t last, uint64_t cap, int full,
                 int inside)
{
    /*
     * Outside [lo, hi) (the sections of b and of every buffer overlapping it) nothing changed
     * since the parent node passed this check, except o and last. There a section's lowest
     * unplaced buffer had eff <= lim, and eff grew to at most max(its old eff, o + 1), so the
     * section still passes while o < lim: only the O(1) test is needed. When the candidate
     * filter already showed o < lim in every section outside b's own (inside), those sections
     * are not visited at all. The root has no parent check: full.
     */
    int32_t lo = full ? 0 : p->ovr_lo[b], hi = full ? p->nsec : p->ovr_hi[b];
    int32_t s0 = inside ? lo : 0, s1 = inside ? hi : p->nsec;
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

/*
 * Pushes the candidates that may follow a placement at (last_off, last_rank) onto the candidate
 * stack, in rank order; fills *f. They are tried in (minimum offset, rank) order, picked one at
 * a time (pick()): a dive that does not backtrack tries one candidate per frame, so sorting
 * them all would be wasted.
 */
static uint64_t sec_limit(const af__search_part_t *p, int32_t s, uint64_t cap)
{
    return p->total[s] ? cap - p->total[s] : UINT64_MAX;
}

/*
 * The limit arrays (see push_candidates()). When `changed` >= 0 they hold the state before
 * buffer `changed` was placed and nothing else changed since: only its sections' limits went
 * up, so pre is recomputed from its first section on and suf from its last one down, each until
 * it stops changing past the buffer's sections. Otherwise everything is recomputed.
 */
static void update_limits(af__search_part_t *p, uint64_t cap, int32_t changed)
{
    uint64_t *pre = p->lim, *suf = p->lim + p->nsec + 1;
    int32_t lo = changed >= 0 ? p->sec_lo[changed] : 0;
    int32_t hi = changed >= 0 ? p->sec_hi[changed] : p->nsec;
    pre[0] = UINT64_MAX;
    for (int32_t s = lo; s < p->nsec; s++) {
        uint64_t u = sec_limit(p, s, cap), v = u < pre[s] ? u : pre[s];
        if (changed >= 0 && s >= hi && pre[s + 1] == v)
            break;
        pre[s + 1] = v;
    }
    suf[p->nsec] = UINT64_MAX;
    for (int32_t s = hi - 1; s >= 0; s--) {
        uint64_t u = sec_limit(p, s, cap), v = u < suf[s + 1] ? u : suf[s + 1];
        if (changed >= 0 && s < lo && suf[s] == v)
            break;
        suf[s] = v;
    }
    p->lim_id++;
}

static int push_candidates(af__search_part_t *p, const int32_t *ord, uint64_t last_off,
                           int32_t last_rank, uint64_t cap, frame_t *f, int32_t changed)
{
    /*
     * A placement at offset m fails the cross-section check in any section s it does not touch
     * once m > cap - total[s] (the lowest unplaced buffer there would start above m). pre[s] and
     * suf[s] are the minima of that limit over sections < s and >= s, so a candidate's limit
     * outside its own sections is min(pre[lo], suf[hi]); candidates above it are not tried.
     */
    update_limits(p, cap, changed);
    f->lim_id = p->lim_id;
    uint64_t *pre = p->lim, *suf = p->lim + p->nsec + 1;
    /* Some section's limit is last_off (see below). Every limit is >= last_off here (the check
     * of the placement at last_off passed, and the root has last_off 0), so that is when the
     * smallest limit, pre[nsec], equals it. */
    int at_limit = pre[p->nsec] == last_off;
    /*
     * A section whose limit is exactly last_off must get its lowest unplaced buffer at
     * last_off, from a buffer with minimum offset <= last_off and a rank above the next
     * placement's (the check's eff). So when such sections exist, only candidates at last_off
     * with rank <= max_rank, the smallest over them of the highest rank able to do that, can
     * pass: a higher-ranked one is not live in the section (else it would count), and one above
     * last_off leaves a gap there.
     */
    int32_t max_rank = INT32_MAX;
    for (int32_t s = 0; at_limit && s < p->nsec; s++) {
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
    /* At most every unplaced buffer is a candidate. One pass collects those that pass the tests
     * below and the lowest top of an unplaced buffer (min_height); then those at or above it are
     * dropped (dominance, see the file comment). */
    if (af__grow((void **)&p->cand, &p->capcand, p->ncand + (size_t)p->n, sizeof *p->cand))
        return AF_ENOMEM;
    f->cand_begin = p->ncand;
    uint64_t min_height = UINT64_MAX;
    size_t k = p->ncand;
    for (int32_t i = p->unext[p->n]; i != p->n; i = p->unext[i]) {
        int32_t b = ord[i];
        uint64_t m = p->minoff[b];
        if (m + p->size[b] < min_height)
            min_height = m + p->size[b];
        /* m >= min_height so far: dropped below anyway (min_height only decreases) */
        if (m < last_off || (m == last_off && i < last_rank) || m >= min_height)
            continue;
        if (m > pre[p->sec_lo[b]] || m > suf[p->sec_hi[b]])
            continue;
        if (max_rank != INT32_MAX && (m != last_off || i > max_rank))
            continue;
        /* ~b marks a candidate not strictly below every limit outside its sections */
        p->cand[k++] = m < pre[p->sec_lo[b]] && m < suf[p->sec_hi[b]] ? b : ~b;
    }
    for (size_t j = f->cand_begin; j < k; j++) {
        int32_t b = p->cand[j] < 0 ? ~p->cand[j] : p->cand[j];
        if (p->minoff[b] < min_height)
            p->cand[p->ncand++] = p->cand[j];
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

static void reset_state(af__search_part_t *p, const int32_t *ord)
{
    for (int32_t i = 0; i < p->n; i++) {
        p->minoff[i] = 0;
        p->off[i] = AF__SEARCH_UNPLACED;
        p->rank[ord[i]] = i;
    }
    for (int32_t i = 0; i <= p->n; i++) {
        p->unext[i] = i == p->n ? 0 : i + 1;
        p->uprev[i] = i == 0 ? p->n : i - 1;
    }
    for (int32_t s = 0; s < p->nsec; s++) {
        p->floor[s] = 0;
        p->total[s] = p->sec_init[s];
    }
    p->nlog = 0;
    p->ncand = 0;
}

int af__search_dfs(af__search_part_t *p, int order_idx, uint64_t cap, uint64_t *out)
{
    const int32_t *ord = p->order[order_idx];
    reset_state(p, ord);
    for (int32_t s = 0; s < p->nsec; s++)
        if (p->sec_init[s] > cap)
            return AF__SEARCH_INFEASIBLE;
    frame_t *fr = p->frames;
    int32_t depth = 0, placed = 0;
    int rc = push_candidates(p, ord, 0, -1, cap, &fr[0], -1);
    while (rc == 0) {
        frame_t *f = &fr[depth];
        if (f->placed >= 0) {
            undo_to(p, f->log_mark);
            unplace(p, f->placed);
            f->placed = -1;
            placed--;
        }
        if (f->next == f->cand_end) {
            p->ncand = f->cand_begin;
            if (depth == 0) {
                rc = AF__SEARCH_INFEASIBLE;
                break;
            }
            depth--;
            continue;
        }
        int strict;
        int32_t b = pick(p, f, &strict);
        uint64_t o = p->minoff[b];
        f->log_mark = p->nlog;
        if (place(p, b)) {
            rc = AF_ENOMEM;
            break;
        }
        f->placed = b;
        placed++;
        p->nodes++;
        if (p->node_limit && p->nodes >= p->node_limit) {
            rc = AF__SEARCH_ABORTED;
            break;
        }
        if (p->use_clock && (p->nodes & 255) == 0 && af__search_now() > p->deadline) {
            rc = AF__SEARCH_TIMEOUT;
            break;
        }
        if (!check(p, b, o, p->rank[b], cap, depth == 0, depth > 0 && strict))
            continue;
        if (placed == p->n) {
            for (int32_t i = 0; i < p->n; i++)
                out[i] = p->off[i];
            rc = AF__SEARCH_FOUND;
            break;
        }
        /* the limits are incremental when they still hold this frame's state (nothing deeper
         * recomputed them since): placing b is then the only change */
        int32_t changed = p->lim_id == f->lim_id ? b : -1;
        depth++;
        rc = push_candidates(p, ord, o, p->rank[b], cap, &fr[depth], changed);
    }
    return rc;
}
