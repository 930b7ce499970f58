/*
 * Address space, chunks, central free lists, huge chunks and trimming.
 *
 * The pool reserves one PROT_NONE range at creation. Chunks are whole 16 KiB granules of it,
 * taken first-fit from a sorted list of released ranges or from a bump pointer, and made usable
 * with mmap(MAP_FIXED, RW); releasing maps PROT_NONE over them again (the pages and their commit
 * charge go back to the OS) and gives the range back. A granule table maps every granule to its
 * chunk, so free() finds a block of a small class with two loads and one multiply (offset x
 * ceil(2^32/bs) >> 32 is exact for offsets that are multiples of bs below 2^32; any other pointer
 * fails the check). Blocks of a granule or more (and huge chunks) keep their descriptors in the
 * granule-indexed descriptor table instead, at the granule each starts in (at most one per
 * granule): free() reads it with one load. A chunk leaving service clears those addresses.
 *
 * A class's chunks grow by doubling from chunk_min to chunk_max (classes above chunk_max map one
 * block per chunk), so a class never holds more than about one chunk of never-used blocks.
 * Each class keeps its free blocks on a doubly-linked central list (LIFO at the head): doubly
 * linked so trim can take out every block of an idle chunk in O(blocks).
 *
 * Borrowing across classes under the global mutex is pool/borrow.c; it calls af__pool_grow
 * here when nothing can be borrowed.
 *
 * Invariants: a block is in exactly one place — a central list, a cache bin, or a user's hands
 * (state INUSE/BORROWED); a chunk's nfree counts its blocks on the central list; a chunk is
 * released only when nfree == nblocks (no cache and no user holds any of its blocks).
 * Lock rule: glock, then class locks (pool_int.h). Everything here runs under glock except
 * central push/pop (class lock only) and af__pool_idle_tick (takes glock with trylock).
 */
#include "pool/pool_int.h"

#include <string.h>
#include <sys/mman.h>

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

/* ---- address space (glock) ------------------------------------------------------------- */

/* Takes `n` granules from a sorted range list, first fit. */
static int rl_take(af__pool_range_t *v, size_t *nv, uint64_t n, uint64_t *start)
{
    size_t pick = SIZE_MAX;
    for (size_t i = 0; i < *nv && pick == SIZE_MAX; i++)
        if (v[i].len >= n)
            pick = i;
    if (pick == SIZE_MAX)
        return AF_ENOMEM;
    *start = v[pick].start;
    v[pick].start += n;
    v[pick].len -= n;
    if (v[pick].len == 0) {
        memmove(&v[pick], &v[pick + 1], (*nv - pick - 1) * sizeof(*v));
        (*nv)--;
    }
    return 0;
}

/* Gives a range back to a sorted list, merging with its neighbours. Returns AF_ENOMEM when the
 * list cannot grow (the range is then lost to the pool, nothing else breaks). */
int af__pool_rl_give(af__pool_range_t **v, size_t *nv, size_t *cap, uint64_t start, uint64_t n)
{
    size_t i = 0;
    while (i < *nv && (*v)[i].start < start)
        i++;
    int merge_prev = i > 0 && (*v)[i - 1].start + (*v)[i - 1].len == start;
    int merge_next = i < *nv && start + n == (*v)[i].start;
    if (merge_prev) {
        (*v)[i - 1].len += n;
        if (merge_next) {
            (*v)[i - 1].len += (*v)[i].len;
            memmove(&(*v)[i], &(*v)[i + 1], (*nv - i - 1) * sizeof(**v));
            (*nv)--;
        }
        return 0;
    }
    if (merge_next) {
        (*v)[i].start = start;
        (*v)[i].len += n;
        return 0;
    }
    if (af__grow((void **)v, cap, *nv + 1, sizeof(**v)))
        return AF_ENOMEM;
    memmove(&(*v)[i + 1], &(*v)[i], (*nv - i) * sizeof(**v));
    (*v)[i] = (af__pool_range_t){start, n};
    (*nv)++;
    return 0;
}

static int va_take(af_pool_t *p, uint64_t n, uint64_t *start)
{
    if (rl_take(p->vfree, &p->nvfree, n, start) == 0)
        return 0;
    if (p->va_bump + n > p->hp_low) /* the heaps' spans grow down from the top */
        return AF_ENOMEM;
    *start = p->va_bump;
    p->va_bump += n;
    return 0;
}

static void va_give(af_pool_t *p, uint64_t start, uint64_t n)
{
    af__pool_rl_give(&p->vfree, &p->nvfree, &p->cap_vfree, start, n);
    /* A free range that reaches the bump pointer folds back into it. */
    if (p->nvfree && p->vfree[p->nvfree - 1].start + p->vfree[p->nvfree - 1].len == p->va_bump) {
        p->va_bump = p->vfree[p->nvfree - 1].start;
        p->nvfree--;
    }
}

/* ---- chunks (glock) -------------------------------------------------------------------- */

static void note_reserved(af_pool_t *p)
{
    uint64_t r = AF__LD(&p->reserved);
    if (r > AF__LD(&p->peak_reserved))
        AF__ST(&p->peak_reserved, r);
}

/* Points the chunk's granules at val (the chunk, or NULL when it leaves service); for a chunk
 * whose descriptors live in dtab, leaving service also clears their addresses there, so a later
 * free of a stale pointer is not mistaken for a block start. */
static void publish(af_pool_t *p, af__pool_chunk_t *ch, af__pool_chunk_t *val)
{
    uint64_t g0 = (uint64_t)(ch->base - p->va_base) >> AF__POOL_GRANULE_SHIFT;
    uint64_t ng = ch->bytes >> AF__POOL_GRANULE_SHIFT;
    for (uint64_t g = g0; g < g0 + ng; g++)
        atomic_store_explicit(&p->gtab[g], val, memory_order_release);
    if (!val && ch->dt)
        for (uint32_t i = 0; i < ch->nblocks; i++)
            af__pool_blk(p, ch, i)->addr = NULL;
}

/* A chunk descriptor: a released one, or a new one recorded in p->chunks. NULL: no memory. */
static af__pool_chunk_t *desc_get(af_pool_t *p)
{
    af__pool_chunk_t *ch = p->spare;
    if (ch) {
        p->spare = ch->hnext;
        return ch;
    }
    if (af__grow((void **)&p->chunks, &p->cap_chunks, p->nchunks + 1, sizeof(p->chunks[0])))
        return NULL;
    ch = af__calloc(1, sizeof(*ch));
    if (!ch)
        return NULL;
    p->chunks[p->nchunks++] = ch;
    AF__ADD(&p->metadata, sizeof(*ch));
    return ch;
}

/* Maps n granules at granule `start` (read-write) and counts them as reserved. */
static int space_map(af_pool_t *p, uint64_t start, uint64_t n)
{
    char *base = p->va_base + (start << AF__POOL_GRANULE_SHIFT);
    uint64_t bytes = n << AF__POOL_GRANULE_SHIFT;
    if (mmap(base, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        MAP_FAILED)
        return AF_ENOMEM;
    AF__ADD(&p->os_maps, 1);
    AF__ADD(&p->reserved, bytes);
    note_reserved(p);
    return 0;
}

int af__pool_span_new(af_pool_t *p, af__pool_heap_t *h, uint64_t low_start, uint64_t low_len,
                      uint64_t n, uint64_t *start, uint64_t *len)
{
    af__pool_chunk_t *ch = desc_get(p);
    if (!ch)
        return AF_ENOMEM;
    uint64_t s, m = n;
    int rc = 0;
    if (low_len && low_start == p->hp_low && p->hp_low - p->va_bump >= n - low_len)
        m = n - low_len; /* the heap's lowest extent grows down into the bump pointer */
    if (p->hp_low - p->va_bump >= m) {
        p->hp_low -= m;
        s = p->hp_low;
    } else {
        rc = va_take(p, m, &s);
    }
    if (rc == 0 && (rc = space_map(p, s, m)))
        va_give(p, s, m);
    if (rc) {
        ch->hnext = p->spare;
        p->spare = ch;
        return AF_ENOMEM;
    }
    ch->base = p->va_base + (s << AF__POOL_GRANULE_SHIFT);
    ch->bytes = m << AF__POOL_GRANULE_SHIFT;
    ch->bs = ch->bytes;
    ch->inv = 0;
    ch->nblocks = 0; /* its blocks' descriptors live in dtab; chunk scans skip spans */
    ch->cls = AF__POOL_SPAN;
    ch->nfree = 0;
    ch->mapped = 1;
    ch->dt = 1;
    ch->idle_since = 0;
    ch->hnext = NULL;
    ch->heap = h;
#ifdef AF_ASAN_BUILD
    ASAN_POISON_MEMORY_REGION(ch->base, ch->bytes);
#endif
    publish(p, ch, ch);
    AF__ADD(&h->spans_bytes, ch->bytes);
    *start = s;
    *len = m;
    return 0;
}

/* Makes a chunk: address space from the reservation, freshly mapped. */
static int chunk_new(af_pool_t *p, int32_t cls, uint64_t bs, uint32_t nb, uint64_t bytes,
                     af__pool_chunk_t **out)
{
    af__pool_chunk_t *ch = desc_get(p);
    if (!ch)
        return AF_ENOMEM;
    int rc = AF_ENOMEM;
    uint64_t start, ng = bytes >> AF__POOL_GRANULE_SHIFT;
    ch->dt = bs >= AF__POOL_GRANULE;
    if (!ch->dt && ch->cap_blocks < nb) {
        af__pool_block_t *nbk = af__calloc(nb, sizeof(af__pool_block_t));
        if (!nbk)
            goto fail;
        af__free(ch->blocks);
        AF__ADD(&p->metadata, (nb - ch->cap_blocks) * sizeof(af__pool_block_t));
        ch->blocks = nbk;
        ch->cap_blocks = nb;
    }
    if (va_take(p, ng, &start))
        goto fail;
    char *base = p->va_base + (start << AF__POOL_GRANULE_SHIFT);
    if (space_map(p, start, ng)) {
        va_give(p, start, ng);
        goto fail;
    }
#ifdef AF_ASAN_BUILD
    ASAN_POISON_MEMORY_REGION(base, bytes);
#endif
    ch->base = base;
    ch->bytes = bytes;
    ch->bs = bs;
    ch->inv = bs < (1ull << 32) ? ((1ull << 32) + bs - 1) / bs : 0;
    ch->nblocks = nb;
    ch->cls = cls;
    ch->nfree = 0;
    ch->mapped = 1;
    ch->idle_since = 0;
    AF__ST(&ch->req, 0);
    ch->hnext = NULL;
    ch->heap = NULL;
    uint32_t owner = cls < 0 ? AF__POOL_HUGE_CLASS : (uint32_t)cls;
    for (uint32_t i = 0; i < nb; i++) {
        af__pool_block_t *b = af__pool_blk(p, ch, i);
        b->addr = base + (uint64_t)i * bs;
        b->prev = b->next = NULL;
        atomic_store_explicit(&b->state, af__blk_state(AF_BLOCK_FREE, owner, 0),
                              memory_order_relaxed);
        atomic_store_explicit(&b->req, 0, memory_order_relaxed);
    }
    publish(p, ch, ch);
    *out = ch;
    return 0;

fail:
    ch->mapped = 0;
    ch->hnext = p->spare;
    p->spare = ch;
    return rc;
}

/* Unmaps a chunk none of whose blocks is on a list or in use. glock held. */
void af__pool_chunk_release(af_pool_t *p, af__pool_chunk_t *ch)
{
    publish(p, ch, NULL);
#ifdef AF_ASAN_BUILD
    ASAN_UNPOISON_MEMORY_REGION(ch->base, ch->bytes);
#endif
    mmap(ch->base, ch->bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
         -1, 0);
    AF__ADD(&p->os_unmaps, 1);
    va_give(p, (uint64_t)(ch->base - p->va_base) >> AF__POOL_GRANULE_SHIFT,
            ch->bytes >> AF__POOL_GRANULE_SHIFT);
    AF__SUB(&p->reserved, ch->bytes);
    AF__ADD(&p->trimmed, ch->bytes);
    ch->mapped = 0;
    ch->hnext = p->spare;
    p->spare = ch;
}

void af__pool_unmap_all(af_pool_t *p)
{
#ifdef AF_ASAN_BUILD
    for (size_t i = 0; i < p->nchunks; i++)
        if (p->chunks[i]->mapped)
            ASAN_UNPOISON_MEMORY_REGION(p->chunks[i]->base, p->chunks[i]->bytes);
#else
    (void)p;
#endif
}

/* ---- central lists (class lock) -------------------------------------------------------- */

void af__pool_central_push(af_pool_t *p, uint32_t c, af__pool_block_t *b)
{
    af__pool_class_t *k = &p->cls[c];
    b->prev = NULL;
    b->next = k->head;
    if (k->head)
        k->head->prev = b;
    k->head = b;
    AF__ST(&k->nfree, AF__LD(&k->nfree) + 1);
    af__pool_chunk_t *ch = af__pool_chunk_of(p, b);
    if (++ch->nfree == ch->nblocks && p->opts.idle_trim_ms)
        ch->idle_since = af_now_ns();
}

void af__pool_central_unlink(af_pool_t *p, uint32_t c, af__pool_block_t *b)
{
    af__pool_class_t *k = &p->cls[c];
    if (b->prev)
        b->prev->next = b->next;
    else
        k->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->prev = b->next = NULL;
    AF__ST(&k->nfree, AF__LD(&k->nfree) - 1);
}

af__pool_block_t *af__pool_central_pop(af_pool_t *p, uint32_t c)
{
    af__pool_block_t *b = p->cls[c].head;
    if (!b)
        return NULL;
    af__pool_central_unlink(p, c, b);
    af__pool_chunk_of(p, b)->nfree--;
    return b;
}

/* ---- growth and borrowing (glock) ------------------------------------------------------ */

/* Blocks in the next chunk of class c. */
static uint64_t cl_chunk_blocks(const af_pool_t *p, uint32_t c)
{
    const af__pool_class_t *cl = &p->cls[c];
    if (cl->bs > p->opts.chunk_max)
        return 1;
    uint64_t nb = cl->next_chunk / cl->bs;
    return nb ? nb : 1;
}

static uint64_t cl_chunk_bytes(const af_pool_t *p, uint32_t c)
{
    return af__align_up(cl_chunk_blocks(p, c) * p->cls[c].bs, AF__POOL_GRANULE);
}

int af__pool_grow(af_pool_t *p, uint32_t c)
{
    af__pool_class_t *cl = &p->cls[c];
    uint64_t nb = cl_chunk_blocks(p, c);
    uint64_t bytes = cl_chunk_bytes(p, c);
    af__pool_chunk_t *ch;
    int rc = chunk_new(p, (int32_t)c, cl->bs, (uint32_t)nb, bytes, &ch);
    if (rc)
        return rc;
    if (cl->next_chunk < p->opts.chunk_max)
        cl->next_chunk *= 2;
    af__pool_clock(p, c);
    for (uint32_t i = ch->nblocks; i-- > 0;)
        af__pool_central_push(p, c, af__pool_blk(p, ch, i));
    ch->idle_since = 0;
    cl->nblocks += ch->nblocks;
    cl->nchunks++;
    af__pool_cunlock(p, c);
    return 0;
}

/* ---- huge chunks (glock) --------------------------------------------------------------- */

int af__pool_huge_alloc(af_pool_t *p, uint64_t size, void **out)
{
    uint64_t bytes = af__align_up(size, AF__POOL_GRANULE);
    if (bytes < size)
        return AF_ESIZE;
    af__pool_glock(p);
    af__pool_chunk_t **best = NULL;
    for (af__pool_chunk_t **pp = &p->huge_free; *pp; pp = &(*pp)->hnext)
        if ((*pp)->bytes >= bytes && (*pp)->bytes - bytes <= bytes / 4 &&
            (!best || (*pp)->bytes < (*best)->bytes))
            best = pp;
    af__pool_chunk_t *ch = NULL;
    int rc = 0;
    if (best) {
        ch = *best;
        *best = ch->hnext;
        ch->hnext = NULL;
        p->huge_free_bytes -= ch->bytes;
    } else {
        if ((rc = chunk_new(p, -1, bytes, 1, bytes, &ch)) == 0)
            AF__ADD(&p->huge_bytes, bytes);
    }
    if (ch) {
        AF__ST(&ch->req, size);
        AF__ST(&af__pool_blk(p, ch, 0)->req, 0);
        atomic_store_explicit(&af__pool_blk(p, ch, 0)->state,
                              af__blk_state(AF_BLOCK_INUSE, AF__POOL_HUGE_CLASS, 0),
                              memory_order_relaxed);
        AF__ADD(&p->huge_allocs, 1);
        int64_t live = AF__ADD(&p->live_req, (int64_t)size) + (int64_t)size;
        if (!p->exact_peak)
            live = af__pool_live_req(p);
        af__pool_note_peak(p, live > 0 ? (uint64_t)live : 0);
    }
    af__pool_gunlock(p);
    if (rc)
        return rc;
    af__pool_on_alloc(p, ch->base, size);
    *out = ch->base;
    return 0;
}

/* The caller has already moved the block's state from INUSE to FREE. */
int af__pool_huge_free(af_pool_t *p, af__pool_chunk_t *ch)
{
    af__pool_on_free(p, ch->base, ch->bytes);
    AF__SUB(&p->live_req, (int64_t)AF__LD(&ch->req));
    AF__ADD(&p->huge_frees, 1);
    af__pool_huge_return(p, ch);
    return 0;
}

void af__pool_huge_return(af_pool_t *p, af__pool_chunk_t *ch)
{
    af__pool_glock(p);
    if (p->huge_free_bytes + ch->bytes <= p->opts.huge_cache_bytes) {
        ch->hnext = p->huge_free;
        p->huge_free = ch;
        p->huge_free_bytes += ch->bytes;
        ch->idle_since = af_now_ns();
    } else {
        AF__SUB(&p->huge_bytes, ch->bytes);
        af__pool_chunk_release(p, ch);
    }
    af__pool_gunlock(p);
}

/* ---- trim and the idle policy ---------------------------------------------------------- */

/* Releases idle chunks (all blocks on the central list) idle since before `before` ns (or all
 * idle ones when before == UINT64_MAX) and cached huge chunks alike. glock held. */
static uint64_t release_idle(af_pool_t *p, uint64_t before)
{
    uint64_t freed = 0;
    for (size_t i = 0; i < p->nchunks; i++) {
        af__pool_chunk_t *ch = p->chunks[i];
        if (!ch->mapped || ch->cls < 0)
            continue;
        uint32_t c = (uint32_t)ch->cls;
        af__pool_clock(p, c);
        int idle = ch->nfree == ch->nblocks &&
                   (before == UINT64_MAX || (ch->idle_since && ch->idle_since <= before));
        if (idle) {
            for (uint32_t j = 0; j < ch->nblocks; j++)
                af__pool_central_unlink(p, c, af__pool_blk(p, ch, j));
            p->cls[c].nblocks -= ch->nblocks;
            p->cls[c].nchunks--;
            ch->nfree = 0;
        }
        af__pool_cunlock(p, c);
        if (idle) {
            freed += ch->bytes;
            af__pool_chunk_release(p, ch);
        }
    }
    freed += af__pool_heap_trim(p);
    for (af__pool_chunk_t **pp = &p->huge_free; *pp;) {
        af__pool_chunk_t *ch = *pp;
        if (before != UINT64_MAX && ch->idle_since > before) {
            pp = &ch->hnext;
            continue;
        }
        *pp = ch->hnext;
        p->huge_free_bytes -= ch->bytes;
        AF__SUB(&p->huge_bytes, ch->bytes);
        freed += ch->bytes;
        af__pool_chunk_release(p, ch);
    }
    return freed;
}

static void purge_range(af_pool_t *p, char *a, uint64_t len, uint64_t *freed)
{
    uint64_t pg = 4096;
    uintptr_t lo = ((uintptr_t)a + pg - 1) & ~(uintptr_t)(pg - 1);
    uintptr_t hi = ((uintptr_t)a + len) & ~(uintptr_t)(pg - 1);
    if (hi <= lo)
        return;
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
    AF__ADD(&p->os_madvise, 1);
    *freed += hi - lo;
}

static uint64_t purge_free(af_pool_t *p)
{
    uint64_t freed = 0;
    for (uint32_t c = 0; c < p->nclasses; c++) {
        if (p->cls[c].bs < (64u << 10))
            continue;
        af__pool_clock(p, c);
        for (af__pool_block_t *b = p->cls[c].head; b; b = b->next)
            purge_range(p, b->addr, p->cls[c].bs, &freed);
        af__pool_cunlock(p, c);
    }
    for (af__pool_chunk_t *ch = p->huge_free; ch; ch = ch->hnext)
        purge_range(p, ch->base, ch->bytes, &freed);
    return freed;
}

int af_pool_trim(af_pool_t *p, unsigned flags, uint64_t *released)
{
    uint64_t freed = 0;
    if (!p)
        return AF_EINVAL;
    af__pool_glock(p);
    if (flags & AF_POOL_TRIM_RELEASE)
        freed += release_idle(p, UINT64_MAX);
    if (flags & AF_POOL_TRIM_PURGE) {
        uint64_t purged = purge_free(p);
        AF__ADD(&p->trimmed, purged);
        freed += purged;
    }
    af__pool_gunlock(p);
    if (released)
        *released = freed;
    return 0;
}

int af_pool_maintain(af_pool_t *p)
{
    if (!p)
        return AF_EINVAL;
    if (!p->opts.idle_trim_ms)
        return 0;
    uint64_t now = af_now_ns(), idle = (uint64_t)p->opts.idle_trim_ms * 1000000u;
    af__pool_glock(p);
    AF__ST(&p->last_idle_scan, now);
    release_idle(p, now > idle ? now - idle : 0);
    af__pool_gunlock(p);
    return 0;
}

void af__pool_idle_tick(af_pool_t *p)
{
    if (!p->opts.idle_trim_ms)
        return;
    uint64_t now = af_now_ns(), idle = (uint64_t)p->opts.idle_trim_ms * 1000000u;
    if (now - AF__LD(&p->last_idle_scan) < idle / 2)
        return;
    if (pthread_mutex_trylock(&p->glock))
        return; /* somebody else is in a slow path; the next tick will do */
    AF__ADD(&p->global_locks, 1);
    AF__ST(&p->last_idle_scan, now);
    release_idle(p, now > idle ? now - idle : 0);
    af__pool_gunlock(p);
}
