/*
 * Reference kernels — matrix products: MatMul (numpy semantics: 1-D operands promoted and the
 * promoted dim dropped, batch dims broadcast), Gemm (transA/transB, alpha, beta, C broadcast
 * to [M, N]; an A of rank > 2 from a framework Linear layer is read as rows), Einsum (any
 * equation with explicit or implicit output and "..." for broadcast dims), Det.
 *
 * f32 products accumulate in the output in i-p-j order (rows of B stream); other dtypes
 * accumulate each element in double (int64 in int64). Pure functions; Det eliminates in a
 * bounded stack copy (n <= 64).
 */
#include "executor/kernels_ref.h"

/* ---- MatMul ------------------------------------------------------------------------------- */

int af__kr_mm_geom(const af_graph_t *g, int32_t node, int32_t a_pos, int32_t b_pos, af__kr_mm_t *mm,
                   af_error_t *err)
{
    kr_shape_t sa, sb, sy;
    if (kr_shape_of(g, kr_in_tensor(g, node, a_pos), &sa) ||
        kr_shape_of(g, kr_in_tensor(g, node, b_pos), &sb) ||
        kr_shape_of(g, kr_out_tensor(g, node, 0), &sy))
        return kr_unsup(err, "missing input or dynamic shape");
    if (sa.rank < 1 || sb.rank < 1)
        return kr_unsup(err, "scalar operands");
    int a1 = sa.rank == 1, b1 = sb.rank == 1;
    mm->m = a1 ? 1 : sa.d[sa.rank - 2];
    mm->k = sa.d[sa.rank - 1];
    mm->n = b1 ? 1 : sb.d[sb.rank - 1];
    if ((b1 ? sb.d[0] : sb.d[sb.rank - 2]) != mm->k)
        return kr_unsup(err, "inner dims %lld and %lld differ", (long long)mm->k,
                        (long long)(b1 ? sb.d[0] : sb.d[sb.rank - 2]));
    mm->ba.rank = a1 ? 0 : sa.rank - 2;
    mm->bb.rank = b1 ? 0 : sb.rank - 2;
    memcpy(mm->ba.d, sa.d, sizeof(int64_t) * (size_t)mm->ba.rank);
    memcpy(mm->bb.d, sb.d, sizeof(int64_t) * (size_t)mm->bb.rank);
    if (kr_broadcast(&mm->ba, &mm->bb, &mm->bo))
        return kr_unsup(err, "batch dims that do not broadcast");
    if (kr_numel(&mm->bo) * mm->m * mm->n != kr_numel(&sy))
        return kr_unsup(err, "output shape does not match the product");
    return 0;
}

/* C[m,n] += A[m,k] B[k,n] in f32, C zeroed by the caller. */
static void gemm_f32(int64_t m, int64_t n, int64_t k, const float *A, int ta, const float *B,
                     int tb, float alpha, float *C)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            float av = alpha * (ta ? A[p * m + i] : A[i * k + p]);
            float *c = C + i * n;
            if (tb)
                for (int64_t j = 0; j < n; j++)
                    c[j] += av * B[j * k + p];
            else
                for (int64_t j = 0; j < n; j++)
                    c[j] += av * B[p * n + j];
        }
}

static int k_MatMul(const af_kernel_args_t *a)
{
    af__kr_mm_t mm;
    if (af__kr_mm_geom(a->graph, a->node, 0, 1, &mm, NULL) || kr_in_ok(a, 0) || kr_in_ok(a, 1) ||
        kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    int64_t m = mm.m, k = mm.k, n = mm.n, nb = kr_numel(&mm.bo);
    kr_shape_t ops[2] = {mm.ba, mm.bb};
    kr_bcast_t b;
    kr_bcast_init(&b, &mm.bo, ops, 2);
    for (int64_t bi = 0; bi < nb; bi++, kr_bcast_next(&b)) {
        int64_t oa = b.off[0] * m * k, ob = b.off[1] * k * n, oy = bi * m * n;
        if (dt == AF_DTYPE_F32) {
            float *y = (float *)a->outputs[0] + oy;
            memset(y, 0, (size_t)(m * n) * sizeof(float));
            gemm_f32(m, n, k, (const float *)a->inputs[0] + oa, 0, (const float *)a->inputs[1] + ob,
                     0, 1.0f, y);
            continue;
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                if (kr_is_int(dt)) {
                    uint64_t acc = 0;
                    for (int64_t p = 0; p < k; p++)
                        acc += (uint64_t)af__elem_load_i(dt, a->inputs[0], oa + i * k + p) *
                               (uint64_t)af__elem_load_i(dt, a->inputs[1], ob + p * n + j);
                    af__elem_store_i(dt, a->outputs[0], oy + i * n + j, (int64_t)acc);
                    continue;
                }
                double acc = 0;
                for (int64_t p = 0; p < k; p++)
                    acc += af__elem_load(dt, a->inputs[0], oa + i * k + p) *
                           af__elem_load(dt, a->inputs[1], ob + p * n + j);
                af__elem_store(dt, a->outputs[0], oy + i * n + j, acc);
            }
    }
    return 0;
}

static int c_MatMul(const af_graph_t *g, int32_t node, af_error_t *err)
{
    af__kr_mm_t mm;
    int rc = kr_check_same(g, node, 2,
                           KR_FLOATS | KR_DT(I32) | KR_DT(I64) | KR_DT(U32) | KR_DT(U64), err);
    return rc ? rc : af__kr_mm_geom(g, node, 0, 1, &mm, err);
}

/* ---- Gemm --------------------------------------------------------------------------------- */

typedef struct gm {
    int64_t m, k, n, cm, cn; /* C broadcast as [cm, cn] (each 1 or the full size), cm = 0: no C */
    int ta, tb;
} gm_t;

static int gemm_geom(const af_graph_t *g, int32_t node, gm_t *q, af_error_t *err)
{
    kr_shape_t sa, sb, sc;
    int32_t tc = kr_in_tensor(g, node, 2);
    if (kr_shape_of(g, kr_in_tensor(g, node, 0), &sa) ||
        kr_shape_of(g, kr_in_tensor(g, node, 1), &sb))
        return kr_unsup(err, "missing input or dynamic shape");
    q->ta = (int)kr_attr_i(g, node, "transA", 0);
    q->tb = (int)kr_attr_i(g, node, "transB", 0);
    if (sa.rank < 2 || sb.rank != 2 || (sa.rank > 2 && q->ta))
        return kr_unsup(err, "A of rank %d, B of rank %d", (int)sa.rank, (int)sb.rank);
    int64_t last = sa.d[sa.rank - 1];
    q->m = q->ta ? sa.d[1] : (last ? kr_numel(&sa) / last : 0);
    q->k = q->ta ? sa.d[0] : last;
    q->n = q->tb ? sb.d[0] : sb.d[1];
    if ((q->tb ? sb.d[1] : sb.d[0]) != q->k)
        return kr_unsup(err, "inner dims of A and B differ");
    q->cm = q->cn = 0;
    if (tc >= 0 && !kr_shape_of(g, tc, &sc)) {
        if (sc.rank > 2)
            return kr_unsup(err, "C of rank %d", (int)sc.rank);
        q->cm = sc.rank == 2 ? sc.d[0] : 1;
        q->cn = sc.rank >= 1 ? sc.d[sc.rank - 1] : 1;
        if ((q->cm != 1 && q->cm != q->m) || (q->cn != 1 && q->cn != q->n))
            return kr_unsup(err, "C does not broadcast to [%lld, %lld]", (long long)q->m,
                            (long long)q->n);
    }
    return 0;
}

static int k_Gemm(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    gm_t q;
    if (gemm_geom(g, a->node, &q, NULL) || kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_out_ok(a, 0) ||
        a->output_bytes[0] <
            (uint64_t)(q.m * q.n) * af_dtype_size(kr_dtype(g, a->info->outputs[0])))
        return AF_ESHAPE;
    double alpha = kr_attr_f(g, a->node, "alpha", 1.0), beta = kr_attr_f(g, a->node, "beta", 1.0);
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]);
    const void *c = q.cm ? kr_in(a, 2, NULL, NULL) : NULL;
    const void *A = a->inputs[0], *B = a->inputs[1];
    for (int64_t i = 0; i < q.m; i++)
        for (int64_t j = 0; j < q.n; j++) {
            double cv =
                c ? beta * af__elem_load(dt, c, (q.cm == 1 ? 0 : i) * q.cn + (q.cn == 1 ? 0 : j))
                  : 0;
            if (dt == AF_DTYPE_F32) {
                ((float *)a->outputs[0])[i * q.n + j] = (float)cv;
                continue;
            }
            double acc = 0;
            for (int64_t p = 0; p < q.k; p++)
                acc += af__elem_load(dt, A, q.ta ? p * q.m + i : i * q.k + p) *
                       af__elem_load(dt, B, q.tb ? j * q.k + p : p * q.n + j);
            af__elem_store(dt, a->outputs[0], i * q.n + j, alpha * acc + cv);
        }
    if (dt == AF_DTYPE_F32)
        gemm_f32(q.m, q.n, q.k, A, q.ta, B, q.tb, (float)alpha, a->outputs[0]);
    return 0;
}

static int c_Gemm(const af_graph_t *g, int32_t node, af_error_t *err)
{
    gm_t q;
    int rc = kr_check_same(g, node, 3, KR_FLOATS, err);
    return rc ? rc : gemm_geom(g, node, &q, err);
}

/* ---- Einsum ------------------------------------------------------------------------------- */

/* Index ids: 'a'..'z' -> 0..25, 'A'..'Z' -> 26..51, the k-th "..." dim -> 52 + k. */
#define EIN_IDS (52 + AF_MAX_RANK)

typedef struct ein {
    int32_t n_ops, n_out, n_sum;
    int32_t rank[KR_BCAST_MAX];
    int32_t sub[KR_BCAST_MAX][AF_MAX_RANK]; /* id of each operand dim */
    int64_t opd[KR_BCAST_MAX][AF_MAX_RANK]; /* the operand's dims */
    int32_t out[AF_MAX_RANK], sum[EIN_IDS]; /* output ids, contracted ids */
    int64_t dim[EIN_IDS];
} ein_t;

static int letter_id(char c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + c - 'A' : -1;
}

/* Parses one term (up to ',', '-' or the end) into ids; "..." expands to n_ell ids,
 * right-aligned against max_ell (so shorter ellipses broadcast). Returns the count or -1. */
static int32_t ein_term(const char **pp, int32_t rank, int32_t max_ell, int32_t *ids)
{
    const char *p = *pp, *start = p;
    int32_t letters = 0, has_ell = 0, k = 0;
    for (; *p && *p != ',' && *p != '-'; p++) {
        if (*p == '.')
            has_ell = 1;
        else if (letter_id(*p) >= 0)
            letters++;
        else if (*p != ' ')
            return -1;
    }
    int32_t n_ell = has_ell ? (rank < 0 ? max_ell : rank - letters) : 0;
    if (n_ell < 0 || (rank >= 0 && !has_ell && letters != rank) || letters + n_ell > AF_MAX_RANK)
        return -1;
    for (p = start; *p && *p != ',' && *p != '-'; p++) {
        if (*p == '.') {
            if (strncmp(p, "...", 3))
                return -1;
            for (int32_t e = 0; e < n_ell; e++)
                ids[k++] = 52 + (max_ell - n_ell) + e;
            p += 2;
        } else if (*p != ' ') {
            ids[k++] = letter_id(*p);
        }
    }
    *pp = p;
    return k;
}

static int ein_parse(const af_graph_t *g, int32_t node, ein_t *e, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    const char *eq = kr_attr_s(g, node, "equation", NULL), *p = eq;
    if (!eq || ni->n_inputs < 1 || ni->n_inputs > KR_BCAST_MAX)
        return kr_unsup(err, "no equation, or %d operands", (int)ni->n_inputs);
    memset(e, 0, sizeof(*e));
    e->n_ops = ni->n_inputs;
    int32_t max_ell = 0, count[EIN_IDS] = {0};
    kr_shape_t s[KR_BCAST_MAX];
    for (int32_t k = 0; k < e->n_ops; k++) {
        if (kr_shape_of(g, ni->inputs[k], &s[k]))
            return kr_unsup(err, "dynamic operand shape");
        int32_t letters = 0;
        for (const char *q = p; *q && *q != ',' && *q != '-'; q++)
            letters += letter_id(*q) >= 0;
        int32_t ell = s[k].rank - letters;
        max_ell = ell > max_ell ? ell : max_ell;
        while (*p && *p != ',' && *p != '-')
            p++;
        if (*p == ',')
            p++;
    }
    p = eq;
    for (int32_t k = 0; k < e->n_ops; k++) {
        e->rank[k] = ein_term(&p, s[k].rank, max_ell, e->sub[k]);
        if (e->rank[k] != s[k].rank)
            return kr_unsup(err, "equation '%s': term %d does not fit rank %d", eq, (int)k,
                            (int)s[k].rank);
        for (int32_t i = 0; i < s[k].rank; i++) {
            int32_t id = e->sub[k][i];
            int64_t d = s[k].d[i];
            e->opd[k][i] = d;
            if (e->dim[id] > 1 && d > 1 && e->dim[id] != d)
                return kr_unsup(err, "equation '%s': index sizes %lld and %lld", eq,
                                (long long)e->dim[id], (long long)d);
            if (!count[id] || d > e->dim[id])
                e->dim[id] = d;
            count[id]++;
        }
        if (*p == ',')
            p++;
    }
    int32_t in_out[EIN_IDS] = {0};
    if (p[0] == '-' && p[1] == '>') {
        p += 2;
        e->n_out = ein_term(&p, -1, max_ell, e->out);
        if (e->n_out < 0 || *p)
            return kr_unsup(err, "equation '%s': bad output term", eq);
    } else { /* implicit output: the "..." dims, then letters used once, in order */
        for (int32_t id = 52; id < 52 + max_ell; id++)
            e->out[e->n_out++] = id;
        for (int32_t id = 0; id < 52 && e->n_out < AF_MAX_RANK; id++)
            if (count[id] == 1)
                e->out[e->n_out++] = id;
    }
    for (int32_t i = 0; i < e->n_out; i++)
        in_out[e->out[i]] = 1;
    for (int32_t id = 0; id < EIN_IDS; id++)
        if (count[id] && !in_out[id])
            e->sum[e->n_sum++] = id;
    kr_shape_t sy;
    if (kr_shape_of(g, ni->outputs[0], &sy) || sy.rank != e->n_out)
        return kr_unsup(err, "equation '%s': output rank differs", eq);
    for (int32_t i = 0; i < e->n_out; i++)
        if (sy.d[i] != e->dim[e->out[i]])
            return kr_unsup(err, "equation '%s': output dim %d differs", eq, (int)i);
    return 0;
}

/* Flat offset of operand k at the index values idx[id] (broadcast dims of size 1 read 0). */
static int64_t ein_off(const ein_t *e, int32_t k, const int64_t *idx)
{
    int64_t off = 0;
    for (int32_t i = 0; i < e->rank[k]; i++)
        off = off * e->opd[k][i] + (e->opd[k][i] == 1 ? 0 : idx[e->sub[k][i]]);
    return off;
}

/* Advances an odometer over the ids in list (n of them); 0 when it wrapped around. */
static int ein_next(const ein_t *e, const int32_t *list, int32_t n, int64_t *idx)
{
    for (int32_t i = n - 1; i >= 0; i--) {
        if (++idx[list[i]] < e->dim[list[i]])
            return 1;
        idx[list[i]] = 0;
    }
    return 0;
}

static int k_Einsum(const af_kernel_args_t *a)
{
    ein_t e;
    if (ein_parse(a->graph, a->node, &e, NULL) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    for (int32_t k = 0; k < e.n_ops; k++)
        if (kr_in_ok(a, k))
            return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    int64_t idx[EIN_IDS] = {0}, total = 1;
    for (int32_t i = 0; i < e.n_out; i++)
        total *= e.dim[e.out[i]];
    int64_t inner = 1;
    for (int32_t i = 0; i < e.n_sum; i++)
        inner *= e.dim[e.sum[i]];
    for (int64_t o = 0; o < total; o++) {
        double acc = 0;
        for (int32_t i = 0; i < e.n_sum; i++)
            idx[e.sum[i]] = 0;
        for (int64_t s = 0; s < inner && inner > 0; s++) {
            double prod = 1;
            for (int32_t k = 0; k < e.n_ops; k++)
                prod *= af__elem_load(dt, a->inputs[k], ein_off(&e, k, idx));
            acc += prod;
            ein_next(&e, e.sum, e.n_sum, idx);
        }
        af__elem_store(dt, a->outputs[0], o, acc);
        ein_next(&e, e.out, e.n_out, idx);
    }
    return 0;
}

static int c_Einsum(const af_graph_t *g, int32_t node, af_error_t *err)
{
    ein_t e;
    const af_node_info_t *ni = af_graph_node(g, node);
    int rc = kr_check_same(g, node, ni->n_inputs, KR_NUMERIC, err);
    return rc ? rc : ein_parse(g, node, &e, err);
}

/* ---- Det ---------------------------------------------------------------------------------- */

#define DET_MAX 64 /* n x n doubles on the stack: 32 KiB */

static int k_Det(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    if (kr_in_shape(a, 0, &sx) || sx.rank < 2 || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t n = sx.d[sx.rank - 1];
    if (n != sx.d[sx.rank - 2] || n > DET_MAX)
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    int64_t batch = n ? kr_numel(&sx) / (n * n) : 0;
    double m[DET_MAX * DET_MAX];
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < n * n; i++)
            m[i] = af__elem_load(dt, a->inputs[0], b * n * n + i);
        double det = 1;
        for (int64_t c = 0; c < n && det != 0; c++) { /* Gaussian elimination, partial pivot */
            int64_t piv = c;
            for (int64_t r = c + 1; r < n; r++)
                if (fabs(m[r * n + c]) > fabs(m[piv * n + c]))
                    piv = r;
            if (m[piv * n + c] == 0) {
                det = 0;
                break;
            }
            if (piv != c) {
                for (int64_t j = 0; j < n; j++) {
                    double t = m[c * n + j];
                    m[c * n + j] = m[piv * n + j];
                    m[piv * n + j] = t;
                }
                det = -det;
            }
            det *= m[c * n + c];
            for (int64_t r = c + 1; r < n; r++) {
                double f = m[r * n + c] / m[c * n + c];
                for (int64_t j = c; j < n; j++)
                    m[r * n + j] -= f * m[c * n + j];
            }
        }
        af__elem_store(dt, a->outputs[0], b, det);
    }
    return 0;
}

static int c_Det(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_FLOATS, err);
    kr_shape_t sx;
    if (rc || kr_shape_of(g, kr_in_tensor(g, node, 0), &sx))
        return rc;
    if (sx.rank < 2 || sx.d[sx.rank - 1] != sx.d[sx.rank - 2] || sx.d[sx.rank - 1] > DET_MAX)
        return kr_unsup(err, "matrices other than square up to %d x %d", DET_MAX, DET_MAX);
    return 0;
}

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }

const af__kernel_entry_t af__kref_nn[] = {
    ROW(MatMul), ROW(Gemm), ROW(Einsum), ROW(Det), {.op = NULL},
};
