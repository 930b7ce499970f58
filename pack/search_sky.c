/*
 * Skyline branch and bound for one partition of the placement problem (does it fit under a
 * capacity?): the search's second engine, beside the canonical search of pack/search_dfs.c.
 *
 * Story. The canonical search places buffers in (offset, rank) order, each at its minimum offset;
 * a buffer may then rest on a tall neighbour and leave dead space under it in its other
 * sections, and on instances with slack (most time points not full) that freedom multiplies the
 * branches. The skyline search fills the lowest free point instead: the floor of each section is
 * the level up to which it is filled or known to stay empty; at the lowest floor L (leftmost
 * section s of its valley [s, t], the run of sections at L) either some buffer starting in s
 * lies exactly at L - it then has the floor L in all its sections, so it starts in s and ends in
 * the valley - or the point (s, L) stays empty in the packing. In that case ("waste") the next
 * buffer c above the point in s starts no lower than the level the floor of s rises to: the
 * floor of s - 1 when c is also live there (some unplaced buffer crosses into s), the floor of
 * t + 1 when c starts in s and reaches past the valley, or, when c starts in s and ends in the
 * valley and could not be lowered to L, the top of a buffer under it that starts after s and
 * before c's end, at least L plus the smallest such buffer (only the buffers starting under the
 * longest candidate of s count). Every packing is reached by a sequence of these choices (one
 * whose buffers starting in a waste column are lowered as far as they go), so the search is
 * complete; the candidates at a point are few (they must fit the valley), and any order of
 * trying them is allowed (here the restart's static rank, so restarts differ).
 *
 * Branching point. The case split holds at the bottom of any valley that is a local minimum of
 * the skyline (both neighbours higher, done or outside the piece), not only the lowest: a buffer
 * at its floor can neither come from a neighbour nor reach one. Every other pair of restarts
 * (sky_ff) branches at the most constrained such point instead of the lowest: the one with the
 * fewest choices, those with at most three counted after applying each and running the check
 * (forward checking), so a point with no viable choice fails the node at once and a forced one
 * is taken before any branching. On the zero-slack sweep instance of 1,000 buffers the lowest
 * point dives 30 placements deep before every restart backtracks, the constrained point 73.
 *
 * Anytime restarts (sky_fit, sky_rows; the work-bounded mode of the default placer keeps the
 * plain search). Value order: a perfect packing is made of fits, so the buffers at a point are
 * tried best fit first - one that fills the valley's width, then one whose top is flush with a
 * neighbour's floor or the capacity - then in the restart's rank. Row test: the bottom row of
 * every local-minimum valley must stay coverable (row_fits()); on jittered instances a valley
 * that no chain of buffers and slack can cover is otherwise found only when the search reaches
 * its level, after every combination of the choices made since.
 *
 * Inference: in every section the unplaced buffers stack above the floor and above the lowest
 * minimum offset among them (the highest floor over a buffer's sections), so that level plus
 * their total must fit under the capacity. A placement on a flat valley adds no dead space, so
 * only the sections of the buffers it raised need the test; a waste step tests the sections of
 * the buffers live in s. Buffers with the same lifetime and size are interchangeable: only one of
 * them is tried at a point. Pieces (dynamic decomposition) are as in pack/search_dfs.c: once no
 * unplaced buffer crosses a section boundary, the two sides are searched one after the other,
 * and a side that has no packing sends the search straight back to the placement that split them.
 *
 * Same frames, undo log, pieces and limits as pack/search_dfs.c; the state belongs to one call.
 */
#include "pack/pack_int.h"

typedef af__search_frame_t frame_t;
typedef af__search_piece_t piece_t;

#define WASTE INT32_MIN /* candidate entry: the lowest point stays empty */

/* The lowest point of piece pc: the leftmost section s of least floor among those with unplaced
 * buffers, and the last section t of its valley. 0 when the piece has no unplaced buffer. */
static int lowest(const af__search_part_t *p, const piece_t *pc, int32_t *s_out, int32_t *t_out)
{
    int32_t s = -1;
    for (int32_t q = pc->slo; q < pc->shi; q++)
        if (p->total[q] && (s < 0 || p->floor[q] < p->floor[s]))
            s = q;
    if (s < 0)
        return 0;
    int32_t t = s;
    while (t + 1 < pc->shi && p->total[t + 1] && p->floor[t + 1] == p->floor[s])
        t++;
    *s_out = s;
    *t_out = t;
    return 1;
}

/* The level the floor of s rises to when (s, floor[s]) stays empty (see the file comment), or
 * UINT64_MAX when nothing live in s could ever start higher. */
static uint64_t waste_level(af__search_part_t *p, const piece_t *pc, int32_t s, int32_t t)
{
    uint64_t lv = UINT64_MAX, l = p->floor[s];
    /* the next buffer above the empty point comes from the left (live in s - 1 too) ... */
    if (s > pc->slo && p->cut[s - 1])
        lv = p->floor[s - 1];
    /* ... or starts in s and reaches past the valley, or ends in it and rests on a buffer that
     * starts under it, after s */
    int32_t far = s;
    for (int32_t j = p->first_start[s]; p->nfirst[s] && j < p->first_start[s + 1]; j++) {
        int32_t c = p->first_buf[j];
        if (p->off[c] != AF__SEARCH_UNPLACED)
            continue;
        if (p->sec_hi[c] > t + 1) {
            if (p->floor[t + 1] < lv)
                lv = p->floor[t + 1];
        } else if (p->sec_hi[c] - 1 > far) {
            far = p->sec_hi[c] - 1;
        }
    }
    for (int32_t q = s + 1; q <= far; q++)
        for (int32_t j = p->first_start[q]; p->nfirst[q] && j < p->first_start[q + 1]; j++) {
            int32_t d = p->first_buf[j];
            if (p->off[d] == AF__SEARCH_UNPLACED && l + p->size[d] < lv)
                lv = l + p->size[d];
        }
    return lv;
}

static int place(af__search_part_t *p, int32_t c, int32_t *lo, int32_t *hi);
static void unplace(af__search_part_t *p, int32_t c);
static int check(af__search_part_t *p, const piece_t *pc, int32_t lo, int32_t hi, uint64_t cap);
static int raise_all(af__search_part_t *p, const int32_t *list, int32_t count, uint64_t lv,
                     int32_t *lo, int32_t *hi);

/* Whether choice c (a buffer, or WASTE raising section s to w) passes the check: applied,
 * checked and undone (out of memory counts as passing: the search itself then reports it). */
static int viable(af__search_part_t *p, const piece_t *pc, int32_t c, int32_t s, uint64_t w,
                  uint64_t cap)
{
    size_t mark = p->nlog;
    int32_t lo = s, hi = s + 1;
    int rc;
    if (c == WASTE) {
        if (af__grow((void **)&p->log, &p->caplog, p->nlog + 1, sizeof *p->log))
            return 1;
        af__search_set_word(p, &p->floor[s], w);
        rc = raise_all(p, p->sec_buf + p->sec_start[s], p->sec_start[s + 1] - p->sec_start[s], w,
                       &lo, &hi);
        hi = hi > s + 1 ? hi : s + 1;
    } else {
        rc = place(p, c, &lo, &hi);
    }
    int ok = rc || check(p, pc, lo, hi, cap);
    af__search_undo_to(p, mark);
    if (c != WASTE && p->off[c] != AF__SEARCH_UNPLACED)
        unplace(p, c);
    return ok;
}

/* The choices at the bottom (s, floor[s]) of valley [s, t]: buffers starting in s that fit
 * the valley under cap (twins counted apart), plus one when it may stay empty (*w: the level a
 * waste step raises it to). */
static int32_t count_choices(af__search_part_t *p, const piece_t *pc, int32_t s, int32_t t,
                             uint64_t cap, uint64_t *w)
{
    uint64_t l = p->floor[s];
    int32_t k = 0;
    for (int32_t j = p->first_start[s]; p->nfirst[s] && j < p->first_start[s + 1]; j++) {
        int32_t c = p->first_buf[j];
        k += p->off[c] == AF__SEARCH_UNPLACED && p->sec_hi[c] <= t + 1 && l + p->size[c] <= cap;
    }
    *w = waste_level(p, pc, s, t);
    k += *w != UINT64_MAX && *w <= cap && *w + p->total[s] <= cap;
    if (k > 3)
        return k;
    /* few choices: count those that pass the check (forward checking) */
    int32_t v = 0;
    for (int32_t j = p->first_start[s]; p->nfirst[s] && j < p->first_start[s + 1]; j++) {
        int32_t c = p->first_buf[j];
        if (p->off[c] == AF__SEARCH_UNPLACED && p->sec_hi[c] <= t + 1 && l + p->size[c] <= cap)
            v += viable(p, pc, c, s, 0, cap);
    }
    if (*w != UINT64_MAX && *w <= cap && *w + p->total[s] <= cap)
        v += viable(p, pc, WASTE, s, *w, cap);
    return v;
}

/* The last section of the valley starting at q (a run of sections with unplaced buffers at
 * floor[q]); *local_min: both its neighbours are higher, done or outside the piece. */
static int32_t valley_end(const af__search_part_t *p, const piece_t *pc, int32_t q, int *local_min)
{
    uint64_t l = p->floor[q];
    int32_t r = q;
    while (r + 1 < pc->shi && p->total[r + 1] && p->floor[r + 1] == l)
        r++;
    int left_ok = q == pc->slo || !p->total[q - 1] || p->floor[q - 1] > l;
    int right_ok = r + 1 == pc->shi || !p->total[r + 1] || p->floor[r + 1] > l;
    *local_min = left_ok && right_ok;
    return r;
}

/*
 * The most constrained point of piece pc (fail first): the bottom of a valley that is a local
 * minimum of the skyline (both neighbours higher, done or outside the piece) with the fewest
 * choices, the lowest then leftmost among equals. The case split of the file comment holds at
 * any such point - a buffer at its floor cannot come from a higher neighbour, nor reach one -
 * so the search stays complete; a point with no choice fails the node at once, and one with a
 * single choice is taken before any branching. 0 when the piece has no unplaced buffer.
 */
static int constrained(af__search_part_t *p, const piece_t *pc, uint64_t cap, int32_t *s_out,
                       int32_t *t_out)
{
    int32_t best = INT32_MAX;
    uint64_t best_l = 0, w;
    for (int32_t q = pc->slo; q < pc->shi; q++) {
        if (!p->total[q])
            continue;
        uint64_t l = p->floor[q];
        int local_min;
        int32_t r = valley_end(p, pc, q, &local_min);
        if (local_min) {
            int32_t k = count_choices(p, pc, q, r, cap, &w);
            if (k < best || (k == best && l < best_l)) {
                best = k;
                best_l = l;
                *s_out = q;
                *t_out = r;
                if (k <= 1)
                    break;
            }
        }
        q = r;
    }
    return best != INT32_MAX;
}

/* How well buffer c fits at the bottom of valley [s, t] (a perfect packing is made of fits): 2
 * when it fills the valley's width, plus 1 when its top is flush with a neighbour's floor or
 * the capacity. */
static int fit_score(const af__search_part_t *p, const piece_t *pc, int32_t c, int32_t s, int32_t t,
                     uint64_t cap)
{
    uint64_t top = p->floor[s] + p->size[c];
    int flush = top == cap || (s > pc->slo && p->total[s - 1] && p->floor[s - 1] == top) ||
                (t + 1 < pc->shi && p->total[t + 1] && p->floor[t + 1] == top);
    return 2 * (p->sec_hi[c] == t + 1) + flush;
}

/* Sorts the candidates cand[b, e) by fit (best first), then rank (stable insertion sort). */
static void order_by_fit(af__search_part_t *p, const piece_t *pc, size_t b, size_t e, int32_t s,
                         int32_t t, uint64_t cap)
{
    for (size_t i = b + 1; i < e; i++) {
        int32_t c = p->cand[i];
        int sc = fit_score(p, pc, c, s, t, cap);
        size_t j = i;
        for (; j > b; j--) {
            int32_t d = p->cand[j - 1];
            int sd = fit_score(p, pc, d, s, t, cap);
            if (sd > sc || (sd == sc && p->rank[d] < p->rank[c]))
                break;
            p->cand[j] = d;
        }
        p->cand[j] = c;
    }
}

/* Pushes the choices at the lowest point of f's piece: the buffers that fit there (one of each
 * lifetime and size), then waste when the section has room for it. */
static int push_choices(af__search_part_t *p, frame_t *f, uint64_t cap)
{
    const piece_t *pc = &p->pieces[f->piece];
    int32_t s, t;
    if (af__grow((void **)&p->cand, &p->capcand, p->ncand + (size_t)pc->left + 1, sizeof *p->cand))
        return AF_ENOMEM;
    f->cand_begin = f->next = f->cand_end = p->ncand;
    f->placed = -1;
    f->log_mark = p->nlog;
    if (!(p->sky_ff ? constrained(p, pc, cap, &s, &t) : lowest(p, pc, &s, &t)))
        return 0; /* cannot happen: a piece with unplaced buffers has a section holding them */
    uint64_t l = p->floor[s];
    size_t k = p->ncand;
    for (int32_t j = p->first_start[s]; j < p->first_start[s + 1]; j++) {
        int32_t c = p->first_buf[j];
        if (p->off[c] != AF__SEARCH_UNPLACED || p->sec_hi[c] > t + 1 || l + p->size[c] > cap)
            continue;
        size_t d = p->ncand;
        while (d < k &&
               !(p->sec_hi[p->cand[d]] == p->sec_hi[c] && p->size[p->cand[d]] == p->size[c]))
            d++;
        if (d == k)
            p->cand[k++] = c;
        else if (p->rank[c] < p->rank[p->cand[d]])
            p->cand[d] = c; /* a twin: keep the one the order prefers */
    }
    if (p->sky_fit)
        order_by_fit(p, pc, p->ncand, k, s, t, cap);
    uint64_t w = waste_level(p, pc, s, t);
    if (w != UINT64_MAX && w <= cap && w + p->total[s] <= cap)
        p->cand[k++] = WASTE;
    p->ncand = k;
    f->cand_end = k;
    f->waste_sec = s;
    f->waste_level = w;
    return 0;
}

/* The next choice in rank order (waste last), moved to position f->next. */
static int32_t pick(af__search_part_t *p, frame_t *f)
{
    if (p->sky_fit)
        return p->cand[f->next++]; /* ordered by push_choices(), waste last */
    size_t at = f->next;
    for (size_t j = f->next + 1; j < f->cand_end; j++) {
        int32_t c = p->cand[j], b = p->cand[at];
        if (c != WASTE && (b == WASTE || p->rank[c] < p->rank[b]))
            at = j;
    }
    int32_t e = p->cand[at];
    p->cand[at] = p->cand[f->next];
    p->cand[f->next++] = e;
    return e;
}

/* Raises the minimum offset of every unplaced buffer in ov (or live in section s when ov is NULL)
 * to lv; widens [*lo, *hi) to their sections. Returns 0 or AF_ENOMEM. */
static int raise_all(af__search_part_t *p, const int32_t *list, int32_t count, uint64_t lv,
                     int32_t *lo, int32_t *hi)
{
    if (af__grow((void **)&p->log, &p->caplog, p->nlog + (size_t)count + 2, sizeof *p->log))
        return AF_ENOMEM;
    for (int32_t k = 0; k < count; k++) {
        int32_t c = list[k];
        if (p->off[c] != AF__SEARCH_UNPLACED)
            continue;
        if (p->minoff[c] < lv)
            af__search_set_word(p, &p->minoff[c], lv);
        *lo = p->sec_lo[c] < *lo ? p->sec_lo[c] : *lo;
        *hi = p->sec_hi[c] > *hi ? p->sec_hi[c] : *hi;
    }
    return 0;
}

/* Places c at the floor of its (flat) sections. */
static int place(af__search_part_t *p, int32_t c, int32_t *lo, int32_t *hi)
{
    if (af__grow((void **)&p->log, &p->caplog, p->nlog + 2 * (size_t)(p->sec_hi[c] - p->sec_lo[c]),
                 sizeof *p->log))
        return AF_ENOMEM;
    uint64_t o = p->floor[p->sec_lo[c]], top = o + p->size[c];
    p->off[c] = o;
    p->nfirst[p->sec_lo[c]]--;
    for (int32_t s = p->sec_lo[c]; s < p->sec_hi[c]; s++) {
        af__search_set_word(p, &p->floor[s], top);
        af__search_set_word(p, &p->total[s], p->total[s] - p->size[c]);
    }
    for (int32_t s = p->sec_lo[c]; s + 1 < p->sec_hi[c]; s++)
        p->cut[s]--;
    *lo = p->sec_lo[c];
    *hi = p->sec_hi[c];
    return raise_all(p, p->ov + p->ov_start[c], p->ov_start[c + 1] - p->ov_start[c],
                     af__align_up(top, p->alignment), lo, hi);
}

static void unplace(af__search_part_t *p, int32_t c)
{
    p->off[c] = AF__SEARCH_UNPLACED;
    p->nfirst[p->sec_lo[c]]++;
    for (int32_t s = p->sec_lo[c]; s + 1 < p->sec_hi[c]; s++)
        p->cut[s]++;
}

/*
 * Whether the bottom row of valley [s, t] (a local minimum at level L = floor[s]) can be covered:
 * nothing from outside can reach it (the walls are higher, done or the piece's edge), so its
 * points (q, L) are covered left to right, each by a buffer starting in q that lies at L and ends
 * in the valley, or left empty, which wastes space in q and needs slack there. A chain of such
 * steps must reach t + 1 (reach[] in the lim scratch, unused by this engine). A valley that
 * cannot be filled fails the node now instead of when the search reaches its level.
 */
static int row_fits(af__search_part_t *p, int32_t s, int32_t t, uint64_t cap)
{
    uint64_t l = p->floor[s], *reach = p->lim;
    for (int32_t q = s; q <= t + 1; q++)
        reach[q] = q == s;
    for (int32_t q = s; q <= t; q++) {
        if (!reach[q])
            continue;
        if (p->floor[q] + p->total[q] + p->alignment <= cap)
            reach[q + 1] = 1; /* (q, L) empty: at least one aligned unit of dead space */
        for (int32_t j = p->first_start[q]; p->nfirst[q] && j < p->first_start[q + 1]; j++) {
            int32_t c = p->first_buf[j];
            if (p->off[c] == AF__SEARCH_UNPLACED && p->sec_hi[c] <= t + 1 && p->minoff[c] <= l &&
                l + p->size[c] <= cap)
                reach[p->sec_hi[c]] = 1;
        }
        if (reach[t + 1])
            return 1;
    }
    return reach[t + 1] != 0;
}

/* row_fits() on every local-minimum valley of the piece that meets [lo, hi). */
static int rows_fit(af__search_part_t *p, const piece_t *pc, int32_t lo, int32_t hi, uint64_t cap)
{
    int32_t q = lo > pc->slo ? lo - 1 : pc->slo;
    while (q > pc->slo && p->total[q] && p->total[q - 1] && p->floor[q - 1] == p->floor[q])
        q--; /* back to the start of the valley q is in */
    for (; q < pc->shi && q <= hi; q++) {
        if (!p->total[q])
            continue;
        int local_min;
        int32_t r = valley_end(p, pc, q, &local_min);
        if (local_min && !row_fits(p, q, r, cap))
            return 0;
        q = r;
    }
    return 1;
}

/* Every section of [lo, hi) in the piece: the lowest unplaced buffer plus the total fits. */
static int check(af__search_part_t *p, const piece_t *pc, int32_t lo, int32_t hi, uint64_t cap)
{
    lo = lo < pc->slo ? pc->slo : lo;
    hi = hi > pc->shi ? pc->shi : hi;
    for (int32_t s = lo; s < hi; s++) {
        uint64_t t = p->total[s];
        if (t == 0)
            continue;
        uint64_t lim = cap - t;
        if (p->floor[s] > lim)
            return 0;
        int32_t k = p->wit[s], begin = p->sec_start[s], end = p->sec_start[s + 1];
        int32_t left = end - begin;
        while (left-- > 0) {
            int32_t c = p->sec_buf[k];
            if (p->off[c] == AF__SEARCH_UNPLACED && p->minoff[c] <= lim)
                break;
            if (++k == end)
                k = begin;
        }
        if (left < 0)
            return 0;
        p->wit[s] = k;
    }
    return !p->sky_rows || rows_fit(p, pc, lo, hi, cap);
}

static void undo_frame(af__search_part_t *p, frame_t *f)
{
    af__search_undo_to(p, f->log_mark);
    if (f->placed >= 0) {
        unplace(p, f->placed);
        p->pieces[f->piece].left++;
    }
    p->npieces = f->npieces;
    p->npend = f->npend;
    f->placed = -1;
    f->done = 0;
}

static int enter(af__search_part_t *p, frame_t *f, int32_t pc, int first, uint64_t cap)
{
    f->piece = pc;
    f->first = (uint8_t)first;
    f->done = 0;
    if (first && pc > 0) {
        af__search_piece_sig(p, &p->pieces[pc], &f->sig1, &f->sig2);
        if (af__search_memo_failed(p, f->sig1, f->sig2, cap, 0)) {
            f->cand_begin = f->next = f->cand_end = p->ncand;
            f->placed = -1;
            f->log_mark = p->nlog;
            return 0;
        }
    }
    return push_choices(p, f, cap);
}

int af__search_sky(af__search_part_t *p, int order_idx, uint64_t cap, uint64_t *out)
{
    af__search_reset(p, p->order[order_idx]);
    for (int32_t s = 0; s < p->nsec; s++)
        if (p->sec_init[s] > cap)
            return AF__SEARCH_INFEASIBLE;
    frame_t *fr = p->frames;
    int32_t depth = 0;
    int rc = enter(p, &fr[0], 0, 1, cap);
    while (rc == 0) {
        frame_t *f = &fr[depth];
        if (f->done)
            undo_frame(p, f);
        if (f->next == f->cand_end) {
            if (depth == 0) {
                rc = AF__SEARCH_INFEASIBLE;
                break;
            }
            if (f->first)
                af__search_memo_add(p, f->sig1, f->sig2, cap, 0);
            int32_t to = f->first ? p->pieces[f->piece].origin : depth - 1;
            for (int32_t d = depth - 1; d > to; d--)
                undo_frame(p, &fr[d]);
            p->ncand = fr[to + 1].cand_begin;
            depth = to;
            continue;
        }
        int32_t c = pick(p, f);
        f->log_mark = p->nlog;
        f->npieces = p->npieces;
        f->npend = p->npend;
        f->done = 1;
        int32_t lo, hi;
        if (c == WASTE) {
            int32_t s = f->waste_sec;
            if (af__grow((void **)&p->log, &p->caplog, p->nlog + 1, sizeof *p->log)) {
                rc = AF_ENOMEM;
                break;
            }
            af__search_set_word(p, &p->floor[s], f->waste_level);
            lo = hi = s;
            rc = raise_all(p, p->sec_buf + p->sec_start[s], p->sec_start[s + 1] - p->sec_start[s],
                           f->waste_level, &lo, &hi);
            hi = hi > s + 1 ? hi : s + 1;
        } else {
            rc = place(p, c, &lo, &hi);
            f->placed = c;
            p->pieces[f->piece].left--;
        }
        if (rc)
            break;
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
        if (!check(p, &p->pieces[f->piece], lo, hi, cap))
            continue;
        int32_t pc = c == WASTE
                         ? f->piece
                         : af__search_next_piece(p, f->piece, (int32_t)(f - p->frames), c, 0, -1);
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
        if (af__grow((void **)&p->frames, &p->capframes, (size_t)depth + 2, sizeof *p->frames)) {
            rc = AF_ENOMEM;
            break;
        }
        fr = p->frames;
        f = &fr[depth];
        depth++;
        rc = enter(p, &fr[depth], pc, pc != f->piece, cap);
    }
    return rc;
}
