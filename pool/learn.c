/*
 * Learned rounds, the recording side (pool/round.c has the replay): a round is recorded, then
 * placed as one arena.
 *
 * Recording (k->learn): every call of the cache takes the general path (fast_max = 0 for allocs,
 * owned = no tag for frees) and notes its event: alloc i at position lo[i], its free at hi[i]
 * (positions count the recorded allocs and frees). A pointer -> latest alloc index hash finds the
 * alloc a free ends (a pointer freed and handed out again maps to its newest alloc). Blocks freed
 * elsewhere (another thread) leave their alloc open: that round cannot be learned. Requests of
 * AF__POOL_DIRECT_MIN bytes or more get a mapping of their own while recording, unmapped when
 * freed (pool->direct, glock), so the recorded round reserves about what it has live.
 *
 * Learning (af__pool_learn_plan, at the round's end): intervals [lo, hi) of the aligned sizes are
 * placed by af_place_intervals ("portfolio", 256-byte offsets) and verified; for every block i the
 * earlier blocks of the round that share bytes with it are listed (pred, a cover first); a hash
 * maps each offset to the run of blocks placed there (byoff); the free order of the round is kept
 * (fo) for the replay's inline free.
 *
 * Lock rule: the recording belongs to the cache's thread; the direct mappings' table to glock.
 */
#include "pool/pool_int.h"

#include "arenaflow/pack.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct af__pool_learn {
    uint64_t *size;
    int64_t *lo, *hi; /* event positions of alloc and free (-1: not freed) */
    size_t n, cap;
    int64_t ev;
    uintptr_t *hk; /* pointer -> newest alloc index (open addressing, no deletions) */
    uint32_t *hv;
    size_t hcap, hn;
    int broken; /* too many allocs, a size >= 4 GiB, or out of memory: not learnable */
};

static size_t ptr_slot(uintptr_t p, size_t cap)
{
    return (size_t)(((uint64_t)p * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int hash_put(struct af__pool_learn *l, uintptr_t key, uint32_t v)
{
    if ((l->hn + 1) * 2 > l->hcap) {
        size_t nc = l->hcap ? l->hcap * 2 : 1024;
        uintptr_t *nk = af__calloc(nc, sizeof(*nk));
        uint32_t *nv = af__malloc(nc * sizeof(*nv));
        if (!nk || !nv) {
            af__free(nk);
            af__free(nv);
            return AF_ENOMEM;
        }
        for (size_t i = 0; i < l->hcap; i++)
            if (l->hk[i]) {
                size_t s = ptr_slot(l->hk[i], nc);
                while (nk[s])
                    s = (s + 1) & (nc - 1);
                nk[s] = l->hk[i];
                nv[s] = l->hv[i];
            }
        af__free(l->hk);
        af__free(l->hv);
        l->hk = nk;
        l->hv = nv;
        l->hcap = nc;
    }
    size_t s = ptr_slot(key, l->hcap);
    while (l->hk[s] && l->hk[s] != key)
        s = (s + 1) & (l->hcap - 1);
    if (!l->hk[s])
        l->hn++;
    l->hk[s] = key;
    l->hv[s] = v;
    return 0;
}

static int64_t hash_get(const struct af__pool_learn *l, uintptr_t key)
{
    if (!l->hcap)
        return -1;
    for (size_t s = ptr_slot(key, l->hcap); l->hk[s]; s = (s + 1) & (l->hcap - 1))
        if (l->hk[s] == key)
            return l->hv[s];
    return -1;
}

void af__pool_learn_reset(af_pool_cache_t *k)
{
    struct af__pool_learn *l = k->learn;
    l->n = 0;
    l->ev = 0;
    l->broken = 0;
    l->hn = 0;
    if (l->hcap)
        memset(l->hk, 0, l->hcap * sizeof(*l->hk));
}

void af__pool_learn_drop(af_pool_cache_t *k)
{
    struct af__pool_learn *l = k->learn;
    if (!l)
        return;
    af__free(l->size);
    af__free(l->lo);
    af__free(l->hi);
    af__free(l->hk);
    af__free(l->hv);
    af__free(l);
    k->learn = NULL;
}

int af__pool_learn_start(af_pool_cache_t *k)
{
    k->learn = af__calloc(1, sizeof(*k->learn));
    return k->learn ? 0 : AF_ENOMEM;
}

int af__pool_learn_empty(const af_pool_cache_t *k)
{
    return !k->learn->n && !k->learn->broken;
}

void af__pool_learn_alloc(af_pool_cache_t *k, void *ptr, uint64_t size)
{
    struct af__pool_learn *l = k->learn;
    if (l->broken)
        return;
    if (l->n >= k->pool->opts.round_max || size >= (1ull << 32) - AF_POOL_ALIGN) {
        l->broken = 1;
        return;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        uint64_t *s = af__realloc(l->size, nc * sizeof(*s));
        if (s)
            l->size = s;
        int64_t *lo = s ? af__realloc(l->lo, nc * sizeof(*lo)) : NULL;
        if (lo)
            l->lo = lo;
        int64_t *hi = lo ? af__realloc(l->hi, nc * sizeof(*hi)) : NULL;
        if (!hi) {
            l->broken = 1;
            return;
        }
        l->hi = hi;
        l->cap = nc;
    }
    if (hash_put(l, (uintptr_t)ptr, (uint32_t)l->n)) {
        l->broken = 1;
        return;
    }
    l->size[l->n] = size;
    l->lo[l->n] = l->ev++;
    l->hi[l->n] = -1;
    l->n++;
}

void af__pool_learn_free(af_pool_cache_t *k, void *ptr)
{
    struct af__pool_learn *l = k->learn;
    int64_t i = l->broken ? -1 : hash_get(l, (uintptr_t)ptr);
    if (i >= 0 && l->hi[i] < 0)
        l->hi[i] = l->ev++;
}

void af__pool_arena_free_mem(af__pool_arena_t *a)
{
    af__free(a->e);
    af__free(a->pred);
    af__free(a->fo);
    af__free(a->byoff);
    af__free(a->hash);
    af__free(a);
}

/* Lists, for every block, the earlier blocks sharing bytes with it (O(n^2): n <= round_max),
 * a cover first: taken from the latest down, a block joins the cover unless it shares bytes with
 * a block already in it (then that block's own list has it). */
static int build_pred(af__pool_arena_t *a)
{
    size_t total = 0, cap = (size_t)a->n * 4 + 16;
    uint32_t *pred = af__malloc(cap * sizeof(*pred)), *tmp = af__malloc(a->n * sizeof(*tmp)),
             *stamp = af__calloc(a->n, sizeof(*stamp));
    if (!pred || !tmp || !stamp)
        goto nomem;
    for (uint32_t i = 0; i < a->n; i++) {
        af__pool_rent_t *e = &a->e[i];
        uint32_t np = 0;
        for (uint32_t j = 0; j < i; j++) {
            const af__pool_rent_t *f = &a->e[j];
            if (f->off < e->off + e->units && e->off < f->off + f->units)
                tmp[np++] = j;
        }
        if (af__grow((void **)&pred, &cap, total + np, sizeof(*pred)))
            goto nomem;
        e->pb = (uint32_t)total;
        e->pn = np;
        uint32_t nd = 0, nr = np; /* cover at the front, the rest at the back */
        for (uint32_t q = np; q-- > 0;) {
            uint32_t j = tmp[q];
            if (stamp[j] == i + 1) {
                pred[total + --nr] = j;
                continue;
            }
            pred[total + nd++] = j;
            for (uint32_t x = a->e[j].pb; x < a->e[j].pb + a->e[j].pn; x++)
                stamp[pred[x]] = i + 1;
        }
        e->dn = nd;
        total += np;
    }
    af__free(tmp);
    af__free(stamp);
    a->pred = pred;
    return 0;
nomem:
    af__free(pred);
    af__free(tmp);
    af__free(stamp);
    return AF_ENOMEM;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Blocks by offset, and a hash from each offset to its run in that list. */
static int build_hash(af__pool_arena_t *a)
{
    uint32_t bits = 4;
    while ((1u << bits) < 2 * a->n)
        bits++;
    a->hbits = bits;
    a->hash = af__calloc((size_t)1 << bits, sizeof(*a->hash));
    a->byoff = af__malloc(a->n * sizeof(*a->byoff));
    if (!a->hash || !a->byoff)
        return AF_ENOMEM;
    uint64_t *ord = af__malloc(a->n * sizeof(*ord)); /* offset << 32 | block */
    if (!ord)
        return AF_ENOMEM;
    for (uint32_t i = 0; i < a->n; i++)
        ord[i] = (uint64_t)a->e[i].off << 32 | i;
    qsort(ord, a->n, sizeof(*ord), cmp_u64);
    for (uint32_t i = 0; i < a->n; i++)
        a->byoff[i] = (uint32_t)ord[i];
    af__free(ord);
    uint32_t mask = (1u << bits) - 1;
    for (uint32_t x = 0; x < a->n; x++) {
        uint32_t key = a->e[a->byoff[x]].off + 1, s = af__pool_rp_hslot(key, bits);
        if (x && a->e[a->byoff[x - 1]].off + 1 == key)
            continue; /* the run's first block holds the slot */
        while (a->hash[s].key)
            s = (s + 1) & mask;
        a->hash[s] = (af__pool_hslot_t){key, x};
    }
    return 0;
}

/* Places the recorded round; NULL when it cannot be learned. */
af__pool_arena_t *af__pool_learn_plan(af_pool_cache_t *k)
{
    const struct af__pool_learn *l = k->learn;
    if (l->broken || !l->n)
        return NULL;
    for (size_t i = 0; i < l->n; i++)
        if (l->hi[i] < 0)
            return NULL; /* a block outlived the round or was freed elsewhere */
    af_interval_t *iv = af__malloc(l->n * sizeof(*iv));
    uint32_t *at = NULL; /* event position -> alloc index + 1 of the free there (0: an alloc) */
    af__pool_arena_t *a = af__calloc(1, sizeof(*a));
    if (!iv || !a)
        goto fail;
    for (size_t i = 0; i < l->n; i++)
        iv[i] = (af_interval_t){l->lo[i], l->hi[i], af__align_up(l->size[i], AF_POOL_ALIGN), 0};
    af_place_opts_t po = {.alignment = AF_POOL_ALIGN, .search_effort = 150};
    uint64_t height = 0;
    if (af_place_intervals(iv, l->n, "portfolio", &po, &height, NULL) ||
        af_intervals_verify(iv, l->n, height, AF_POOL_ALIGN, NULL) || !height ||
        height / AF_POOL_ALIGN >= UINT32_MAX)
        goto fail;
    a->n = (uint32_t)l->n;
    a->bytes = af__align_up(height, 4096);
    a->e = af__calloc(l->n + 1, sizeof(*a->e)); /* + the inline paths' sentinel */
    a->fo = af__malloc((l->n + 1) * sizeof(*a->fo));
    at = af__calloc((size_t)l->ev, sizeof(*at));
    if (!a->e || !a->fo || !at)
        goto fail;
    for (size_t i = 0; i < l->n; i++) {
        a->e[i].off = (uint32_t)(iv[i].offset / AF_POOL_ALIGN);
        a->e[i].units = (uint32_t)(iv[i].size / AF_POOL_ALIGN);
        at[l->hi[i]] = (uint32_t)i + 1;
    }
    a->e[l->n].gpos = UINT32_MAX; /* sentinel: size 0, never in use */
    a->fo[l->n] = (af__pool_fslot_t){0, (uint32_t)l->n};
    uint32_t nf = 0; /* the frees in the order they came */
    for (int64_t t = 0; t < l->ev; t++)
        if (at[t]) {
            a->e[at[t] - 1].fpos = nf;
            a->fo[nf++] = (af__pool_fslot_t){a->e[at[t] - 1].off, at[t] - 1};
        }
    if (build_pred(a) || build_hash(a))
        goto fail;
    for (size_t i = 0; i < l->n; i++) { /* the inline alloc's check (pool_int.h) */
        af__pool_rent_t *e = &a->e[i];
        e->gpos = e->dn == 0 ? 0 : e->dn == 1 ? a->e[a->pred[e->pb]].fpos + 1 : UINT32_MAX;
    }
    af__free(iv);
    af__free(at);
    return a;
fail:
    af__free(iv);
    af__free(at);
    if (a)
        af__pool_arena_free_mem(a);
    return NULL;
}

/* ---- a recorded round's own mappings (glock) --------------------------------------------- */

/* One block mapped for a recorded round; entries stay (live 0) once unmapped, so a second free is
 * reported as a double free; a later mapping at the same address takes the entry over. */
struct af__pool_direct {
    uintptr_t ptr; /* 0: empty slot */
    uint64_t bytes, req;
    int live;
};

static size_t direct_slot(uintptr_t ptr, size_t cap)
{
    return (size_t)((((uint64_t)ptr >> 12) * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static struct af__pool_direct *direct_find(af_pool_t *p, uintptr_t ptr)
{
    if (!p->cap_direct)
        return NULL;
    for (size_t s = direct_slot(ptr, p->cap_direct); p->direct[s].ptr;
         s = (s + 1) & (p->cap_direct - 1))
        if (p->direct[s].ptr == ptr)
            return &p->direct[s];
    return NULL;
}

static struct af__pool_direct *direct_put(af_pool_t *p, uintptr_t ptr)
{
    struct af__pool_direct *d = direct_find(p, ptr);
    if (d)
        return d;
    if ((p->ndirect + 1) * 2 > p->cap_direct) {
        size_t nc = p->cap_direct ? p->cap_direct * 2 : 256;
        struct af__pool_direct *nd = af__calloc(nc, sizeof(*nd));
        if (!nd)
            return NULL;
        for (size_t i = 0; i < p->cap_direct; i++)
            if (p->direct[i].ptr) {
                size_t s = direct_slot(p->direct[i].ptr, nc);
                while (nd[s].ptr)
                    s = (s + 1) & (nc - 1);
                nd[s] = p->direct[i];
            }
        AF__ADD(&p->metadata, (nc - p->cap_direct) * sizeof(*nd));
        af__free(p->direct);
        p->direct = nd;
        p->cap_direct = nc;
    }
    size_t s = direct_slot(ptr, p->cap_direct);
    while (p->direct[s].ptr)
        s = (s + 1) & (p->cap_direct - 1);
    p->ndirect++;
    p->direct[s].ptr = ptr;
    return &p->direct[s];
}

int af__pool_direct_alloc(af_pool_cache_t *k, size_t size, void **out)
{
    af_pool_t *p = k->pool;
    if (size < AF__POOL_DIRECT_MIN || k->learn->broken)
        return 1;
    uint64_t bytes = af__align_up(size, 4096);
    if (bytes < size)
        return AF_ESIZE;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1; /* the classes may still have room */
    af__pool_glock(p);
    struct af__pool_direct *d = direct_put(p, (uintptr_t)m);
    if (d) {
        d->bytes = bytes;
        d->req = size;
        d->live = 1;
        AF__ADD(&p->direct_allocs, 1);
        AF__ADD(&p->os_maps, 1);
        AF__ADD(&p->reserved, bytes);
        af__pool_note_reserved(p);
    }
    af__pool_gunlock(p);
    if (!d) {
        munmap(m, bytes);
        return 1;
    }
    af__pool_exact_live(p, (int64_t)size);
    af__pool_on_alloc(p, m, size);
    *out = m;
    return 0;
}

int af__pool_direct_free(af_pool_t *p, void *ptr)
{
    af__pool_glock(p);
    struct af__pool_direct *d = direct_find(p, (uintptr_t)ptr);
    int rc = !d ? AF_EFOREIGN : !d->live ? AF_EDOUBLEFREE : 0;
    if (rc == AF_EDOUBLEFREE)
        AF__ADD(&p->double_frees, 1);
    if (rc == 0) {
        d->live = 0;
        AF__ADD(&p->direct_frees, 1);
        af__pool_exact_live(p, -(int64_t)d->req);
        munmap(ptr, d->bytes);
        AF__ADD(&p->os_unmaps, 1);
        AF__SUB(&p->reserved, d->bytes);
    }
    af__pool_gunlock(p);
    return rc;
}

int af__pool_direct_info(af_pool_t *p, const void *ptr, af_pool_block_info_t *info)
{
    pthread_mutex_lock(&p->glock); /* statistics: not counted */
    struct af__pool_direct *d = direct_find(p, (uintptr_t)ptr);
    if (d) {
        info->state = d->live ? AF_BLOCK_INUSE : AF_BLOCK_FREE;
        info->owner_class = info->borrower_class = -1;
        info->block_size = d->bytes;
    }
    pthread_mutex_unlock(&p->glock);
    return d ? 0 : AF_EFOREIGN;
}

void af__pool_direct_live(af_pool_t *p, int64_t *req, uint64_t *blocks)
{
    for (size_t i = 0; i < p->cap_direct; i++)
        if (p->direct[i].ptr && p->direct[i].live) {
            if (req)
                *req += (int64_t)p->direct[i].req;
            if (blocks)
                *blocks += p->direct[i].bytes;
        }
}

void af__pool_direct_unmap_all(af_pool_t *p)
{
    for (size_t i = 0; i < p->cap_direct; i++)
        if (p->direct[i].ptr && p->direct[i].live)
            munmap((void *)p->direct[i].ptr, p->direct[i].bytes);
    af__free(p->direct);
    p->direct = NULL;
    p->cap_direct = p->ndirect = 0;
}
