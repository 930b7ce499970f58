/*
 * Private to the pack module (the files in pack/): the placer registry, the helpers the placers
 * share, the interval orders (pack/order.c), the time sweep (pack/sweep.c), and the
 * branch-and-bound engine of the search (pack/search.c drives the height search,
 * pack/search_build.c builds the problem: partitions, sections, orders; pack/search_dfs.c is the
 * depth-first search, pack/search_sky.c the skyline one, pack/search_memo.c the nogoods of
 * pieces with no packing).
 * Other modules use arenaflow/pack.h only.
 */
#ifndef ARENAFLOW_PACK_INT_H
#define ARENAFLOW_PACK_INT_H

#include "arenaflow/pack.h"
#include "common/common_int.h"

/* ---- the placer registry (pack/place.c) ------------------------------------------------ */

typedef int (*af__place_fn)(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                            af_error_t *err);

typedef struct af__place_entry {
    const char *name;
    af__place_fn fn;
    const char *help;
} af__place_entry_t;

const af__place_entry_t *af__place_find(const char *name);

/* Anytime search (pack/search.c): seeded with the portfolio's result. */
int af__place_search(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                     af_error_t *err);
/*
 * Work-bounded search from a given packing (the portfolio's last member, pack/search.c):
 * iv[i].offset must hold a valid packing (sizes aligned up to alignment). Explores at most
 * `nodes` search nodes - or, when work > 0, work / (m + sections) of them (a node scans its
 * piece's buffers and sections: that many nodes cost about `work`) - without reading the clock,
 * then writes the best packing found (never higher than the given one) and its height, and
 * returns 0. Returns 1 without searching when one dive would cost more than max_dive (> 0) or
 * than work (m x (m + distinct interval ends) for m intervals of positive size), an error
 * otherwise; iv is untouched unless 0 is returned.
 */
int af__search_improve(af_interval_t *iv, size_t n, uint64_t alignment, uint64_t nodes,
                       uint64_t work, uint64_t max_dive, uint64_t *height, af_error_t *err);

/* AF_EINVAL (message in err) unless every interval has lower < upper and n fits the placers'
 * 32-bit ids (pack/place.c). */
int af__pack_check(const af_interval_t *iv, size_t n, af_error_t *err);
/* sizes aligned up to a, n + 1 entries (af__free); NULL when out of memory (pack/place.c). */
uint64_t *af__pack_sizes(const af_interval_t *iv, size_t n, uint64_t a);
/* Offset-mode colour-end placement: shared objects by seed 1's colouring, stacked
 * (pack/shared.c). */
int af__place_color_end(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                        af_error_t *err);

/* ---- interval orders (pack/order.c) ---------------------------------------------------- */

/* A radix sort's n entries and its scratch (af__sort_kv's tmp) as two blocks of n + 1 entries,
 * not one of 2n: in a plan's scratch scope a freed block of that size is about twice as likely
 * to be there for them (common.c). 0, or AF_ENOMEM with neither allocated
 * (both pointers NULL). */
int af__kv_pair(size_t n, af__kv_t **kv, af__kv_t **tmp);
/* Interval ids 0..n-1 by (lower ascending, sz descending, id): the placers' start order. */
int af__sort_by_start(const af_interval_t *iv, const uint64_t *sz, size_t n, int32_t *ids);
/* Interval ids 0..n-1 by (key descending, sz descending, lower ascending, id); key NULL: by
 * (sz descending, lower ascending, id). 0 or AF_ENOMEM. */
int af__sort_by_key_desc(const af_interval_t *iv, const uint64_t *sz, const uint64_t *key, size_t n,
                         int32_t *ids);
/* Interval ids 0..n-1 by (upper, id), or (upper, lower, id) when then_lower. 0 or AF_ENOMEM. */
int af__sort_by_end(const af_interval_t *iv, size_t n, int then_lower, int32_t *ids);

/* ---- time sweep, portfolio ------------------------------------------------------------ */

/* Time-sweep placement through a coalescing best-fit allocator (pack/sweep.c): writes
 * off[i] for sizes sz[i] (already aligned) and *pairs (may be NULL) = the number of overlapping
 * pairs; returns the height, UINT64_MAX when out of memory. */
uint64_t af__place_sweep(const af_interval_t *iv, size_t n, const uint64_t *sz, uint64_t *off,
                         uint64_t *pairs);

/*
 * Peak repair (pack/repair.c): lowers the highest places of the packing in iv[].offset (sizes
 * aligned: sz, alignment a, lower bound lb, *height its height) by re-placing small time windows
 * around them under a ladder of levels, within `budget` overlap tests; by_start: the intervals in
 * af__sort_by_start order, or NULL to sort them here. Writes a lower packing and
 * height when it finds one. 0 (also when it had nothing to do) or AF_ENOMEM (iv untouched).
 */
int af__place_repair(af_interval_t *iv, size_t n, const uint64_t *sz, const int32_t *by_start,
                     uint64_t lb, uint64_t a, uint64_t budget, uint64_t *height);

/*
 * Does the window fit under cap? iv[i].offset holds a valid packing; the intervals with fixed[i]
 * keep their offsets, the others are re-placed by the canonical search within `nodes` search
 * nodes (no clock). Returns 0 with the new offsets in iv when a packing of height <= cap was
 * found, 1 when not (iv untouched), AF_ENOMEM (pack/search.c).
 */
int af__search_window(af_interval_t *iv, size_t n, const uint8_t *fixed, uint64_t a, uint64_t cap,
                      uint64_t nodes);

/* ---- the ordered greedy engine (pack/place.c; the portfolio's members, pack/portfolio.c) ---- */

typedef struct af__engine {
    size_t n;
    const af_interval_t *iv;
    const uint64_t *sz;
    int32_t *by_start; /* interval ids sorted by lower */
    int32_t *pos;      /* position of an id in by_start */
    int64_t *lowers;   /* lowers in by_start order, for binary search */
    size_t leaves;     /* power of two >= n */
    int64_t *tree;     /* max upper of placed leaves; INT64_MIN when none */
    int32_t *hits;     /* scratch: overlapping placed ids */
    size_t *stack;
    af__kv_t *spans, *spans_tmp; /* scratch: overlapping placed ids keyed by offset */
    /* The length-class index (used instead of the tree when its scans are short): intervals by
     * class c = floor(log2(length)), each class by lower; a query scans, per class, the lowers
     * in (l - 2^(c+1), u). */
    int use_classes;
    double scan; /* expected intervals a class query looks at */
    uint8_t *placed;
    int32_t cls_start[65];
    int32_t *cls_id;
    int64_t *cls_lower, *cls_upper; /* per entry of cls_id: its interval's lower and upper */
    /* The non-empty classes, and per class where its last query's scan began: queries in start
     * order (most members) move it forward a little, so it is found by galloping from there. */
    int n_cls;
    int8_t cls_list[64];
    int32_t cls_hint[64];
} af__engine_t;

/* Long thin instances: a class query looks at this many intervals at most. */
#define AF__CLASS_SCAN_MAX 64

/* Sets up the engine over iv's n intervals with aligned sizes sz (both borrowed). 0 or
 * AF_ENOMEM (nothing to free then). */
int af__engine_init(af__engine_t *e, const af_interval_t *iv, size_t n, const uint64_t *sz);
void af__engine_free(af__engine_t *e);

/* Places the intervals in `order` into out[].offset, best_fit: the smallest fitting gap, else
 * the first; returns the height, or UINT64_MAX as soon as it exceeds give_up_above. */
uint64_t af__engine_place(af__engine_t *e, af_interval_t *out, const int32_t *order, int best_fit,
                          uint64_t give_up_above);

/* The intervals a length-class query would scan (count[65]: zeroed, gets the class counts);
 * 1e300 below 4,096 intervals (the tree serves those). */
double af__class_scan(const af_interval_t *iv, size_t n, size_t *count);

/* The alignment of the options: 1 when none or 0. */
static inline uint64_t af__align_of(const af_place_opts_t *o)
{
    return o && o->alignment > 1 ? o->alignment : 1;
}

/* Portfolio placement (pack/portfolio.c), for the search's incumbent. */
int af__place_portfolio(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                        af_error_t *err);

/* ---- the search's branch-and-bound engine (pack/search.c, pack/search_dfs.c) ----------- */

enum {
    AF__SEARCH_FOUND = 0,      /* a packing within capacity, written to the offsets */
    AF__SEARCH_INFEASIBLE = 1, /* the search space was exhausted: nothing fits */
    AF__SEARCH_ABORTED = 2,    /* the node limit was reached */
    AF__SEARCH_TIMEOUT = 3,    /* the deadline passed, or the work budget ran out */
};

/* Static orders the restarts cycle through (ties broken by index). */
enum { AF__SEARCH_N_ORDERS = 11 };
/* Slot of the randomised order (regenerated before each randomised restart). */
enum { AF__SEARCH_RANDOM_ORDER = AF__SEARCH_N_ORDERS, AF__SEARCH_N_FEATURES = 7 };

/* Undo-log entry: a word the search changed and its previous value. */
typedef struct af__search_undo {
    uint64_t *p;
    uint64_t old;
} af__search_undo_t;

/*
 * A piece of a partition (pack/search_dfs.c): the sections [slo, shi) and the unplaced buffers
 * that lie in them. Once a placement leaves no unplaced buffer live across a section boundary,
 * the unplaced buffers on either side no longer interact: the piece splits and its parts are
 * searched one after the other, each as its own problem.
 */
typedef struct af__search_piece {
    int32_t slo, shi; /* its sections */
    int32_t left;     /* unplaced buffers in it */
    int32_t origin;   /* depth of the frame whose placement split it off; -1: the whole partition */
    uint64_t last_off; /* its canonical sequence starts after (last_off, last_rank): the origin's */
    int32_t last_rank; /* placement */
} af__search_piece_t;

/* One level of the depth-first search (pack/search_dfs.c). */
typedef struct af__search_frame {
    size_t cand_begin, cand_end, next; /* this frame's slice of the candidate stack */
    size_t log_mark;                   /* undo-log length before the current placement */
    int32_t placed;                    /* buffer placed by this frame, or -1 */
    int32_t piece;                     /* the piece it places in */
    int32_t npieces, npend;            /* piece array and pending-piece stack before it split or
                                          finished its piece (restored when it is undone) */
    uint8_t first;                     /* the first frame of its piece */
    uint8_t hatless;                   /* its placement raised no unplaced buffer: once it fails,
                                          every later candidate of the frame fails too */
    uint64_t last_off;                 /* the canonical start: placements follow (last_off, */
    int32_t last_rank;                 /* last_rank) */
    uint64_t lim_id;                   /* the limit arrays' version computed for this frame */
    size_t rlog_mark;                  /* rank-log length before its placement */
    uint8_t done;                      /* skyline search: its choice is applied */
    int32_t waste_sec;                 /* skyline search: the section of its lowest point and */
    uint64_t waste_level;              /* the level a waste step raises it to */
    uint64_t sig1, sig2;               /* first frame of a split-off piece: its signature */
} af__search_frame_t;

/* Sort key of a buffer when a piece is re-ranked; a rank the re-ranking changed. */
typedef struct af__search_rkey {
    uint64_t k[3];
    int32_t rank, b;
} af__search_rkey_t;

/* A piece known to have no packing under capacity cap with its sequence starting at start
 * (pack/search_memo.c). */
typedef struct af__search_memo {
    uint64_t h1, h2; /* its signature; h2 == 0: an empty slot */
    uint64_t cap, start;
} af__search_memo_t;

typedef struct af__search_rundo {
    int32_t b, old;
} af__search_rundo_t;

/*
 * One partition's problem and search state. Buffer indices are local (0..n-1); sections are the
 * time slots between consecutive distinct interval endpoints of the partition.
 */
typedef struct af__search_part {
    int32_t n, nsec;
    uint64_t alignment;
    uint64_t *size;           /* n */
    int32_t *sec_lo;          /* n: first section the buffer is live in */
    int32_t *sec_hi;          /* n: one past its last section */
    int32_t *ov_start;        /* n+1: CSR of overlapping buffers */
    int32_t *ov;              /* ov_start[n] entries */
    int32_t *ovr_lo, *ovr_hi; /* n: sections of the buffer and all buffers overlapping it */
    int32_t *sec_start;       /* nsec+1: CSR of the buffers live in each section */
    int32_t *sec_buf;         /* sec_start[nsec] entries */
    int32_t *first_start;     /* nsec+1: CSR of the buffers by first section */
    int32_t *first_buf;       /* n entries */
    int32_t *order[AF__SEARCH_N_ORDERS + 1]; /* static orders + the random one */
    uint64_t *feat[AF__SEARCH_N_FEATURES];   /* n each: tot, width, area, size, ~lower */
    int32_t *rank;                           /* n: position of a buffer in the current order */
    uint64_t *tie;                           /* n: ties of the randomised order */
    int8_t spec[3]; /* the features of the order being searched (-1: tie), see af__search_dfs */
    af__search_rkey_t *rkey;  /* n: scratch of the re-ranking */
    af__search_rundo_t *rlog; /* ranks changed by re-rankings, to undo them */
    size_t nrlog, caprlog;
    /* search state */
    uint64_t *fixed;    /* n: the offset a buffer must take, or AF__SEARCH_UNPLACED; NULL when
                           no buffer is fixed (only the canonical search takes fixed ones) */
    int fixed_fail;     /* the last placement raised a fixed buffer above its offset */
    uint64_t *minoff;   /* n: lowest offset the buffer may take now */
    uint64_t *off;      /* n: offset, or AF__SEARCH_UNPLACED */
    int32_t *nov_left;  /* n: unplaced buffers overlapping the buffer */
    uint64_t *floor;    /* nsec: top of the placed buffers live in the section */
    uint64_t *total;    /* nsec: total size of the unplaced buffers live in the section */
    uint64_t *sec_init; /* nsec: total size of all buffers live in the section */
    int32_t *cut;       /* nsec: unplaced buffers live in both section s and s + 1 */
    int32_t *nfirst;    /* nsec: unplaced buffers whose first section is s */
    uint64_t *lim;      /* 2 * (nsec + 1): prefix / suffix limits of the candidate filter */
    uint64_t lim_id;    /* version of lim (one per computation) */
    int32_t *wit;       /* nsec: where in sec_buf the last buffer that kept the section
                           feasible is (a hint; the next scan starts there) */
    af__search_undo_t *log;
    size_t nlog, caplog;
    int32_t *cand; /* candidate stack, grows with depth */
    size_t ncand, capcand;
    af__search_frame_t *frames; /* n+1, grown by the skyline search (waste steps are frames) */
    size_t capframes;
    af__search_piece_t *pieces; /* 2n+1: the pieces of the current search path */
    int32_t npieces;
    int32_t *pend; /* n: pieces split off and not searched yet (a stack) */
    int32_t npend;
    af__search_memo_t *memo; /* failed pieces (pack/search_memo.c); NULL until the first */
    size_t memo_size;        /* slots, a power of two */
    /* limits */
    uint64_t nodes, node_limit;
    double deadline; /* seconds of af__search_now(use_clock == 2); only read when use_clock */
    int sky_ff;      /* skyline search: branch at the most constrained point, not the lowest */
    int sky_fit;     /* skyline search: try the buffers that fit the point best first */
    int sky_rows;    /* skyline search: every valley's bottom row must stay coverable */
    int use_clock;   /* 0 in the work-bounded mode (the clock is never read), 1 wall, 2 CPU */
} af__search_part_t;

#define AF__SEARCH_UNPLACED UINT64_MAX

/* The signature of piece pc's unplaced buffers and their minimum offsets. */
void af__search_piece_sig(const af__search_part_t *p, const af__search_piece_t *pc, uint64_t *h1,
                          uint64_t *h2);
/* 1 when a piece of this signature is known to have no packing under cap starting at start. */
int af__search_memo_failed(const af__search_part_t *p, uint64_t h1, uint64_t h2, uint64_t cap,
                           uint64_t start);
/* Records that it has none (allocates the table on first use; without memory, records nothing). */
void af__search_memo_add(af__search_part_t *p, uint64_t h1, uint64_t h2, uint64_t cap,
                         uint64_t start);

/* ---- the search's problem (pack/search_build.c) --------------------------------------------- */

/* A partition of the search: its problem and what the height search knows about it. */
typedef struct af__search_pinfo {
    af__search_part_t sp;
    uint8_t sorted[AF__SEARCH_N_ORDERS]; /* static order h is built (sorted on first use) */
    int32_t *gidx;                       /* local -> global index */
    uint64_t lb;                         /* max cross-section of the partition */
    uint64_t best_h;                     /* height of the partition's packing in the best one */
    uint64_t proven;                     /* smallest capacity not proven infeasible */
} af__search_pinfo_t;

/* A sort key: up to three words, compared in turn, then the index. */
typedef struct af__search_key {
    uint64_t k[3];
    int32_t idx;
} af__search_key_t;

/* int64 -> uint64 preserving order. */
static inline uint64_t af__ord64(int64_t v)
{
    return (uint64_t)v ^ (UINT64_C(1) << 63);
}

/* qsort comparator of af__search_key_t by k[0] ascending, then idx. */
int af__search_cmp_lower(const void *a, const void *b);

/* The static orders' features (indices into feat[]), in the order the restarts try them. */
extern const int8_t af__search_order_spec[AF__SEARCH_N_ORDERS][3];

/* The intervals of positive size into keys[] (idx, k[0] = ordered lower), sorted by lower;
 * returns their count. */
size_t af__search_sort_positive(const af_interval_t *iv, size_t n, af__search_key_t *keys);

/*
 * Splits the intervals of positive size (sizes already aligned to a) into partitions and builds
 * each one's problem (fixed: NULL, or per interval 1 when it must keep its offset): *parts (grown
 * with af__grow, *nparts entries; free each with af__search_free_part, then the array with
 * af__free), *maxn the largest partition. keys and times: scratch of 3n and 2n entries. 0 or
 * AF_ENOMEM (what was built is still in *parts).
 */
int af__search_build_parts(const af_interval_t *iv, size_t n, uint64_t a, const uint8_t *fixed,
                           af__search_pinfo_t **parts, int32_t *nparts, size_t *maxn,
                           af__search_key_t *keys, int64_t *times);
void af__search_free_part(af__search_pinfo_t *pi);
/* Static order h of the partition, sorted on first use (keys: scratch of its size). */
const int32_t *af__search_static_order(af__search_pinfo_t *pi, int h, af__search_key_t *keys);
/* The randomised order of restart k into the random slot; its features go to spec. */
void af__search_random_order(af__search_part_t *sp, uint64_t k, af__search_key_t *keys,
                             int8_t *spec);

/* The search state of a fresh run in order ord (every buffer unplaced, fixed ones at their
 * offsets as minimum, one piece; pack/search_dfs.c, shared by both engines). */
void af__search_reset(af__search_part_t *p, const int32_t *ord);

/* After frame `frame` placed b (the skyline engine: b < 0 when it left a gap) in `piece`: splits
 * the piece at the boundaries the placement freed, or moves to the next pending piece; the piece
 * the next frame places in, -1 when none is left, -2 when the piece array is full
 * (pack/search_dfs.c, shared by both engines). */
int32_t af__search_next_piece(af__search_part_t *p, int32_t piece, int32_t frame, int32_t b,
                              uint64_t o, int32_t rank);

/* The undo log of both engines: a word written, and the log unwound back to a mark. */
static inline void af__search_set_word(af__search_part_t *p, uint64_t *w, uint64_t v)
{
    p->log[p->nlog].p = w;
    p->log[p->nlog].old = *w;
    p->nlog++;
    *w = v;
}

static inline void af__search_undo_to(af__search_part_t *p, size_t mark)
{
    while (p->nlog > mark) {
        p->nlog--;
        *p->log[p->nlog].p = p->log[p->nlog].old;
    }
}

/* Monotonic clock in seconds, or with cpu the calling thread's CPU time. */
double af__search_now(int cpu);

/* Partition storage (pack/search_part.c): the arrays sized by the n buffers and us sections
 * (0 or AF_ENOMEM; free with af__search_part_free even on failure), the section CSR once every
 * buffer's sec_lo/sec_hi is set (0 or AF_ENOMEM), and freeing. */
int af__search_part_alloc(af__search_part_t *sp, size_t un, size_t us);
int af__search_part_sections(af__search_part_t *sp);
void af__search_part_free(af__search_part_t *sp);

/*
 * Decides whether the partition fits under cap with order `order_idx` (p->order[order_idx],
 * sorted by the features `spec`, -1 standing for p->tie: pieces split off during the search are
 * re-ranked by the same features on their own cross-sections), exploring at most p->node_limit
 * nodes (and, when p->use_clock, stopping at p->deadline). On AF__SEARCH_FOUND, out[i] gets
 * buffer i's offset. Returns an AF__SEARCH_* value, or AF_ENOMEM.
 */
int af__search_dfs(af__search_part_t *p, int order_idx, const int8_t *spec, uint64_t cap,
                   uint64_t *out);
/* The same question answered by the skyline search (pack/search_sky.c), trying the choices at a
 * point in the order of p->order[order_idx]. Same results. */
int af__search_sky(af__search_part_t *p, int order_idx, uint64_t cap, uint64_t *out);

#endif
