/*
 * Pictures of a plan: the memory map as a standalone SVG, or inside a self-contained HTML page.
 *
 * Layout: one panel per plan (two when comparing), each a map (time x offset) above a strip
 * with the live-bytes curve on the same time axis. The map and the strip are nested <svg>
 * elements whose viewBox is in plan units — steps across, bytes down — so every tensor
 * rectangle carries the plan's own numbers (x = first, width = last + 1 - first, y = offset,
 * height = bytes) and zooming is a viewBox change. Tick labels and captions live in the outer
 * pixel coordinates. Both panels share one byte scale so heights compare at a glance.
 *
 * Detail cap: a rectangle covering less than min_area_px square pixels, or beyond the max_rects
 * largest of its panel, is summed into a cell_px grid (by its top-left corner) and each
 * non-empty cell becomes one "agg" rectangle. Output size is therefore O(max_rects + cells +
 * steps) whatever the graph; the live curve is reduced to one max per pixel column when there
 * are more than 4 steps per pixel.
 *
 * Under a budget, the copies a rewrite made are marked: recomputed tensors with a red dashed
 * outline (class "rc"), tensors swapped back in from the host tier with a blue one ("sw"), the
 * title naming the source tensor; the caption counts them and the host-tier bytes.
 *
 * Invariants: only AF_WHERE_ARENA tensors with bytes > 0 and a lifetime are drawn (aliases,
 * constants, dynamic and host-tier tensors take no arena bytes of their own); every such tensor is
 * either one "t" rectangle or counted in exactly one "agg" cell. Text from the graph is XML-escaped
 * and invalid UTF-8 is replaced, so the document is well-formed for any names.
 *
 * No locks: plans are immutable; all state is on the stack or in per-call heap buffers.
 */
#include "arenaflow/render.h"

#include "common/common_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MARGIN_L = 84, MARGIN_R = 36, MARGIN_T = 78, GAP = 30, MARGIN_B = 44 };

/* Colour per producing op (hash of the op name), inputs grey. */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                      "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                      "#9c755f", "#86bcb6", "#d37295", "#8cd17d"};

typedef struct panel {
    const af_plan_t *p;
    const af_graph_t *g;
    const char *label;
    char label_buf[160];
    int32_t steps;
    uint64_t *live; /* live bytes per step */
    uint64_t live_max;
    int ox, oy; /* pixel origin of the map */
} panel_t;

typedef struct layout {
    int w, h, lh, cell, n;
    double sx, sy; /* pixels per step (per panel) and per byte (shared) */
    uint64_t ymax;
    uint64_t unit; /* bytes per viewBox unit: a power of two keeping coordinates < 2^24 */
    double min_area;
    int32_t max_rects;
} layout_t;

void af_render_opts_init(af_render_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->width = 0; /* resolved per call: 900, or 560 per panel when comparing */
    o->height = 460;
    o->live_height = 110;
    o->min_area_px = 0.5;
    o->max_rects = 12000;
    o->cell_px = 4;
}

/* Writes s XML-escaped; control characters and invalid UTF-8 become '?'. */
static void put_esc(FILE *f, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    while (*u) {
        unsigned c = *u;
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len > 0;
        for (int k = 1; ok && k < len; k++)
            ok = (u[k] & 0xC0) == 0x80;
        if (!ok || (len == 1 && c < 0x20 && c != '\t')) {
            fputc('?', f);
            u++;
            continue;
        }
        if (len > 1) {
            fwrite(u, 1, (size_t)len, f);
            u += len;
            continue;
        }
        switch (c) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            fputc((int)c, f);
        }
        u++;
    }
}

static void human(char *out, size_t n, double b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (b >= 1024 && i < 4) {
        b /= 1024;
        i++;
    }
    snprintf(out, n, i ? "%.3g %s" : "%.0f %s", b, unit[i]);
}

static const char *op_color(const char *op)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)op; c && *c; c++)
        h = (h ^ *c) * 16777619u;
    return op ? palette[h % AF_ARRAY_SIZE(palette)] : "#bab0ac";
}

/* Nice tick spacing (1, 2 or 5 times a power of ten) for about n ticks over range. */
static double nice_step(double range, int n)
{
    if (range <= 0)
        return 1;
    double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/*
 * A byte count in viewBox units. Browsers clamp coordinates near 2^25 (Blink's LayoutUnit), so
 * big arenas are drawn in units of a power of two; %.17g of b / unit parses back to the same
 * double, whose product with unit is b exactly (b < 2^53).
 */
static const char *yb(char *buf, const layout_t *L, uint64_t b)
{
    if (L->unit <= 1)
        snprintf(buf, 32, "%" PRIu64, b);
    else
        snprintf(buf, 32, "%.17g", (double)b / (double)L->unit);
    return buf;
}

static int drawn(const af_tensor_plan_t *tp)
{
    return tp->where == AF_WHERE_ARENA && tp->bytes > 0 && tp->first >= 0 && tp->last >= tp->first;
}

/* Live bytes per step; a tensor taken over in place is not counted twice at the hand-over. */
static int panel_init(panel_t *pn, const af_plan_t *p, const char *label, af_error_t *err)
{
    memset(pn, 0, sizeof *pn);
    pn->p = p;
    pn->g = af_plan_graph(p);
    int32_t nn = af_graph_node_count(pn->g), nt = af_graph_tensor_count(pn->g);
    pn->steps = nn > 0 ? nn : 1;
    int64_t *diff = af__calloc((size_t)pn->steps + 1, sizeof *diff);
    pn->live = af__calloc((size_t)pn->steps, sizeof *pn->live);
    if (!diff || !pn->live) {
        af__free(diff);
        af__free(pn->live);
        pn->live = NULL;
        return af__err(err, AF_ENOMEM, "out of memory rendering the plan");
    }
    for (int32_t i = 0; i < nt; i++) {
        const af_tensor_plan_t *tp = af_plan_tensor(p, i);
        if (!drawn(tp) || tp->last >= pn->steps)
            continue;
        diff[tp->first] += (int64_t)tp->bytes;
        diff[tp->last + 1] -= (int64_t)tp->bytes;
        const af_tensor_plan_t *old = tp->inplace_of >= 0 ? af_plan_tensor(p, tp->inplace_of) : 0;
        if (old && drawn(old) && old->last == tp->first) {
            int64_t both = (int64_t)(old->bytes < tp->bytes ? old->bytes : tp->bytes);
            diff[tp->first] -= both;
            diff[tp->first + 1] += both;
        }
    }
    int64_t cur = 0;
    for (int32_t s = 0; s < pn->steps; s++) {
        cur += diff[s];
        pn->live[s] = cur > 0 ? (uint64_t)cur : 0;
        if (pn->live[s] > pn->live_max)
            pn->live_max = pn->live[s];
    }
    af__free(diff);
    const af_plan_report_t *r = af_plan_report(p);
    if (label) {
        pn->label = label;
    } else {
        snprintf(pn->label_buf, sizeof pn->label_buf, "schedule %s, placer %s",
                 r->schedule ? r->schedule : "?", r->placer ? r->placer : "?");
        pn->label = pn->label_buf;
    }
    return 0;
}

static double rect_area(const layout_t *L, const af_tensor_plan_t *tp)
{
    return (double)(tp->last + 1 - tp->first) * L->sx * (double)tp->bytes * L->sy;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/*
 * Area threshold of the detail cap: rectangles with area > *thr are drawn, and those equal to it
 * while *quota lasts. Returns 0 or AF_ENOMEM.
 */
static int detail_threshold(const layout_t *L, const panel_t *pn, double *thr, int32_t *quota)
{
    int32_t nt = af_graph_tensor_count(pn->g), n = 0;
    *thr = L->min_area;
    *quota = INT32_MAX;
    if (L->max_rects <= 0)
        return 0;
    double *a = af__malloc(((size_t)nt + 1) * sizeof *a);
    if (!a)
        return AF_ENOMEM;
    for (int32_t i = 0; i < nt; i++) {
        const af_tensor_plan_t *tp = af_plan_tensor(pn->p, i);
        double ar;
        if (drawn(tp) && (ar = rect_area(L, tp)) >= L->min_area)
            a[n++] = ar;
    }
    if (n > L->max_rects) {
        qsort(a, (size_t)n, sizeof *a, cmp_desc);
        *thr = a[L->max_rects - 1];
        int32_t gt = 0;
        while (gt < n && a[gt] > *thr)
            gt++;
        *quota = L->max_rects - gt;
    }
    af__free(a);
    return 0;
}

static void put_tensor(FILE *f, const layout_t *L, const panel_t *pn, int32_t i,
                       const af_tensor_plan_t *tp)
{
    char y[32], h[32];
    const af_tensor_info_t *ti = af_graph_tensor(pn->g, i);
    const af_node_info_t *nd = ti->producer >= 0 ? af_graph_node(pn->g, ti->producer) : NULL;
    char hb[32];
    human(hb, sizeof hb, (double)tp->bytes);
    /* a budget rewrite's copies: recomputed (class rc) or swapped back in (class sw) */
    af_node_role_t role = ti->producer >= 0 ? af_plan_node_role(pn->p, ti->producer) : AF_ROLE_RUN;
    const char *cls = role == AF_ROLE_RECOMPUTE ? "t rc" : role == AF_ROLE_SWAP_IN ? "t sw" : "t";
    fprintf(f,
            "<rect class=\"%s\" data-t=\"%" PRId32 "\" x=\"%" PRId32 "\" y=\"%s\" width=\"%" PRId32
            "\" height=\"%s\" fill=\"%s\"><title>",
            cls, i, tp->first, yb(y, L, tp->offset), tp->last + 1 - tp->first, yb(h, L, tp->bytes),
            op_color(nd ? nd->op : NULL));
    put_esc(f, ti->name);
    if (role == AF_ROLE_RECOMPUTE || role == AF_ROLE_SWAP_IN) {
        fputs(role == AF_ROLE_RECOMPUTE ? "\nrecomputed copy of " : "\nswapped back in: copy of ",
              f);
        put_esc(
            f, af_graph_tensor(af_plan_source_graph(pn->p), af_plan_tensor_origin(pn->p, i))->name);
    }
    fputs("\nop: ", f);
    if (nd) {
        put_esc(f, nd->op);
        fputs(" (", f);
        put_esc(f, nd->name);
        fputs(")", f);
    } else {
        fputs(ti->kind == AF_TENSOR_INPUT ? "graph input" : "none", f);
    }
    fprintf(f,
            "\nbytes: %" PRIu64 " (%s)\noffset: %" PRIu64 "\nlifetime: steps %" PRId32 "..%" PRId32
            " (%" PRId32 " steps)%s</title></rect>\n",
            tp->bytes, hb, tp->offset, tp->first, tp->last, tp->last + 1 - tp->first,
            tp->inplace_of >= 0 ? "\nin place of an input" : "");
}

typedef struct cell {
    uint32_t n;
    double area;
    uint64_t bytes;
} cell_t;

/* The map: tensor rectangles, aggregated cells, peak band, lower-bound and arena lines. */
static int put_map(FILE *f, const layout_t *L, const panel_t *pn, int32_t *n_drawn, int32_t *n_agg,
                   int32_t *n_cells)
{
    double thr;
    int32_t quota;
    if (detail_threshold(L, pn, &thr, &quota))
        return AF_ENOMEM;
    int gw = (L->w + L->cell - 1) / L->cell, gh = (L->h + L->cell - 1) / L->cell;
    cell_t *cells = af__calloc((size_t)gw * (size_t)gh, sizeof *cells);
    if (!cells)
        return AF_ENOMEM;
    const af_plan_report_t *r = af_plan_report(pn->p);
    char ym[32], y1[32];
    yb(ym, L, L->ymax);
    fprintf(f,
            "<svg class=\"map\" data-unit=\"%" PRIu64 "\" x=\"%d\" y=\"%d\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %" PRId32 " %s\" preserveAspectRatio=\"none\">\n"
            "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%" PRId32 "\" height=\"%s\"/>\n",
            L->unit, pn->ox, pn->oy, L->w, L->h, pn->steps, ym, pn->steps, ym);
    int32_t nt = af_graph_tensor_count(pn->g);
    *n_drawn = *n_agg = *n_cells = 0;
    for (int32_t i = 0; i < nt; i++) {
        const af_tensor_plan_t *tp = af_plan_tensor(pn->p, i);
        if (!drawn(tp))
            continue;
        double a = rect_area(L, tp);
        if (a > thr || (a == thr && a >= L->min_area && quota-- > 0)) {
            put_tensor(f, L, pn, i, tp);
            ++*n_drawn;
            continue;
        }
        int cx = (int)((double)tp->first * L->sx / L->cell);
        int cy = (int)((double)tp->offset * L->sy / L->cell);
        cx = cx < gw ? cx : gw - 1;
        cy = cy < gh ? cy : gh - 1;
        cell_t *c = &cells[(size_t)cx * (size_t)gh + (size_t)cy];
        *n_cells += c->n == 0;
        c->n++;
        c->area += a;
        c->bytes += tp->bytes;
        ++*n_agg;
    }
    double cw = L->cell / L->sx, ch = L->cell / L->sy / (double)L->unit;
    for (int cx = 0; cx < gw; cx++)
        for (int cy = 0; cy < gh; cy++) {
            const cell_t *c = &cells[(size_t)cx * (size_t)gh + (size_t)cy];
            if (!c->n)
                continue;
            double op = c->area / (double)(L->cell * L->cell);
            op = op < 0.15 ? 0.15 : op > 1 ? 1 : op;
            fprintf(f,
                    "<rect class=\"agg\" data-n=\"%u\" x=\"%.6g\" y=\"%.10g\" width=\"%.6g\" "
                    "height=\"%.10g\" fill-opacity=\"%.2f\"><title>%u small tensors aggregated, "
                    "%" PRIu64 " bytes</title></rect>\n",
                    c->n, cx * cw, cy * ch, cw, ch, op, c->n, c->bytes);
        }
    af__free(cells);
    /* Drawn last, on top of the tensors; CSS makes them transparent to the mouse. */
    fprintf(f, "<rect class=\"peak\" x=\"%" PRId32 "\" y=\"0\" width=\"1\" height=\"%s\"/>\n",
            r->peak_step, ym);
    yb(y1, L, r->lower_bound_bytes);
    fprintf(f, "<line class=\"lb\" x1=\"0\" x2=\"%" PRId32 "\" y1=\"%s\" y2=\"%s\"/>\n", pn->steps,
            y1, y1);
    yb(y1, L, r->arena_bytes);
    fprintf(f, "<line class=\"arena\" x1=\"0\" x2=\"%" PRId32 "\" y1=\"%s\" y2=\"%s\"/>\n</svg>\n",
            pn->steps, y1, y1);
    return 0;
}

/* The live-bytes strip: a step curve (max per pixel column when steps are dense). */
static void put_live(FILE *f, const layout_t *L, const panel_t *pn)
{
    const af_plan_report_t *r = af_plan_report(pn->p);
    int y0 = pn->oy + L->h + GAP;
    char ym[32], y1[32];
    yb(ym, L, L->ymax);
    fprintf(f,
            "<svg class=\"live\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" viewBox=\"0 0 "
            "%" PRId32 " %s\" preserveAspectRatio=\"none\">\n<rect class=\"bg\" x=\"0\" y=\"0\" "
            "width=\"%" PRId32 "\" height=\"%s\"/>\n<path class=\"livec\" d=\"M0 %s",
            pn->ox, y0, L->w, L->lh, pn->steps, ym, pn->steps, ym, ym);
    int64_t cols = pn->steps > 4 * (int64_t)L->w ? L->w : pn->steps;
    for (int64_t c = 0; c < cols; c++) {
        int32_t a = (int32_t)(c * pn->steps / cols), b = (int32_t)((c + 1) * pn->steps / cols);
        uint64_t m = 0;
        for (int32_t s = a; s < b; s++)
            m = pn->live[s] > m ? pn->live[s] : m;
        fprintf(f, "V%sH%" PRId32, yb(y1, L, L->ymax - m), b);
    }
    fprintf(f, "V%sZ\"/>\n", ym);
    fprintf(f, "<rect class=\"peak\" x=\"%" PRId32 "\" y=\"0\" width=\"1\" height=\"%s\"/>\n",
            r->peak_step, ym);
    yb(y1, L, L->ymax - r->lower_bound_bytes);
    fprintf(f, "<line class=\"lb\" x1=\"0\" x2=\"%" PRId32 "\" y1=\"%s\" y2=\"%s\"/>\n</svg>\n",
            pn->steps, y1, y1);
}

/* Axes, tick labels and captions in outer pixel coordinates. */
static void put_axes(FILE *f, const layout_t *L, const panel_t *pn)
{
    char hb[32];
    double sx = (double)L->w / pn->steps;
    double bu = 1; /* tick in round binary units: 1, 2, 5 x 10^k B, KiB, MiB... */
    while ((double)L->ymax / bu >= 1024 * 4)
        bu *= 1024;
    double xs = nice_step(pn->steps, 8), ys = nice_step((double)L->ymax / bu, 8) * bu;
    int ly = pn->oy + L->h + GAP;
    fputs("<g class=\"axis\">\n", f);
    for (double v = 0; v <= pn->steps; v += xs) {
        double x = pn->ox + v * sx;
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/><text x=\"%.1f\" y=\"%d\" "
                "text-anchor=\"middle\">%.0f</text>\n",
                x, x, ly + L->lh, ly + L->lh + 4, x, ly + L->lh + 16, v);
    }
    for (double v = 0; v <= (double)L->ymax; v += ys) {
        double y = pn->oy + v * L->sy;
        human(hb, sizeof hb, v);
        fprintf(f,
                "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\">%s</text>\n",
                pn->ox - 4, pn->ox, y, y, pn->ox - 6, y + 4, hb);
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step (order position)</text>\n"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">offset &#8595;</text>\n"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">live &#8593;</text>\n</g>\n",
            pn->ox + L->w / 2, ly + L->lh + 32, pn->ox - 6, pn->oy - 6, pn->ox - 6, ly + 12);
    const af_plan_report_t *r = af_plan_report(pn->p);
    human(hb, sizeof hb, (double)r->lower_bound_bytes);
    double lby = pn->oy + (double)r->lower_bound_bytes * L->sy;
    fprintf(f, "<text class=\"lbl\" x=\"%d\" y=\"%.1f\">lower bound %s</text>\n", pn->ox + 4,
            lby > pn->oy + 14 ? lby - 3 : lby + 12, hb);
    human(hb, sizeof hb, (double)r->arena_bytes);
    double ay = pn->oy + (double)r->arena_bytes * L->sy;
    fprintf(f, "<text class=\"arl\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">arena %s</text>\n",
            pn->ox + L->w - 4, ay + 12 < pn->oy + L->h ? ay + 12 : ay - 3, hb);
    fprintf(f,
            "<text class=\"pk\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">peak %" PRId32
            "</text>\n",
            pn->ox + (r->peak_step + 0.5) * sx, pn->oy - 6, r->peak_step);
}

static void put_caption(FILE *f, const panel_t *pn, int32_t n_drawn, int32_t n_agg, int32_t n_cells)
{
    const af_plan_report_t *r = af_plan_report(pn->p);
    char a[32], lb[32];
    human(a, sizeof a, (double)r->arena_bytes);
    human(lb, sizeof lb, (double)r->lower_bound_bytes);
    fprintf(f, "<text class=\"plabel\" x=\"%d\" y=\"%d\">", pn->ox, pn->oy - 40);
    put_esc(f, pn->label);
    fprintf(f,
            "</text>\n<text class=\"cap\" x=\"%d\" y=\"%d\">arena %s = %.3f &#215; lower bound "
            "(%s), %.3f &#215; naive; peak step %" PRId32 "</text>\n",
            pn->ox, pn->oy - 26, a,
            r->lower_bound_bytes ? (double)r->arena_bytes / (double)r->lower_bound_bytes : 1.0, lb,
            r->naive_bytes ? (double)r->arena_bytes / (double)r->naive_bytes : 1.0, r->peak_step);
    fprintf(f,
            "<text class=\"cap\" x=\"%d\" y=\"%d\">%" PRId32 " tensors drawn, %" PRId32
            " small ones aggregated into %" PRId32 " cells",
            pn->ox, pn->oy - 13, n_drawn, n_agg, n_cells);
    if (r->budget_method) {
        char hb[32];
        human(hb, sizeof hb, (double)r->host_bytes);
        fprintf(f,
                "; under the budget: %" PRId32 " recomputed nodes (red dashed outline), %" PRId32
                " swap nodes (blue outline: swapped back in), %s on the host tier",
                r->recomputed_nodes, r->swap_nodes, hb);
    }
    fputs("</text>\n", f);
}

static const char svg_style[] =
    "<style>\n"
    "text{fill:#222}.axis line{stroke:#555}.bg{fill:#f7f7f7}.zoomcap{fill:#1f5fa8}\n"
    ".zoomed .axis,.zoomed .lbl,.zoomed .arl,.zoomed .pk{display:none}\n"
    ".t{stroke:#fff;stroke-width:0.5;vector-effect:non-scaling-stroke}\n"
    ".t:hover{stroke:#000;stroke-width:2}.agg{fill:#555}\n"
    ".rc{stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 "
    "2}.sw{stroke:#1f5fa8;stroke-width:1.5}\n"
    ".peak{fill:#d62728;fill-opacity:0.15;stroke:#d62728;stroke-width:1;"
    "vector-effect:non-scaling-stroke}.pk{fill:#d62728}.peak,line{pointer-events:none}\n"
    ".lb{stroke:#d62728;stroke-width:1.5;stroke-dasharray:6 3;vector-effect:non-scaling-stroke}\n"
    ".arena{stroke:#222;stroke-width:1;vector-effect:non-scaling-stroke}\n"
    ".livec{fill:#4e79a7;fill-opacity:0.6;stroke:#4e79a7;vector-effect:non-scaling-stroke}\n"
    ".lbl{fill:#d62728}.plabel{font-weight:bold;font-size:14px}.cap{fill:#444}\n"
    "</style>\n";

static int render(const af_plan_t *p, const af_plan_t *cmp, const af_render_opts_t *user, FILE *f,
                  int html, af_error_t *err);

int af_plan_render_svg(const af_plan_t *p, const af_plan_t *compare, const af_render_opts_t *opts,
                       FILE *f, af_error_t *err)
{
    return render(p, compare, opts, f, 0, err);
}

int af_plan_render_html(const af_plan_t *p, const af_plan_t *compare, const af_render_opts_t *opts,
                        FILE *f, af_error_t *err)
{
    return render(p, compare, opts, f, 1, err);
}

static int put_svg(FILE *f, const af_render_opts_t *o, layout_t *L, panel_t *pn, af_error_t *err)
{
    const af_graph_t *g = pn[0].g;
    int pw = MARGIN_L + L->w + MARGIN_R;
    int W = L->n * pw, H = MARGIN_T + L->h + GAP + L->lh + MARGIN_B;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 "
            "%d %d\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n%s"
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n"
            "<text class=\"plabel\" x=\"10\" y=\"18\">",
            W, H, W, H, svg_style, W, H);
    put_esc(f, o->title ? o->title : af_graph_name(g)[0] ? af_graph_name(g) : "arenaflow plan");
    fprintf(f, " &#8212; memory map (%" PRId32 " tensors, %" PRId32 " steps)</text>\n",
            af_graph_tensor_count(g), pn[0].steps);
    for (int k = 0; k < L->n; k++) {
        int32_t nd, na, nc;
        pn[k].ox = k * pw + MARGIN_L;
        pn[k].oy = MARGIN_T;
        L->sx = (double)L->w / pn[k].steps;
        fprintf(f, "<g class=\"panel\" data-plan=\"%d\">\n", k);
        if (put_map(f, L, &pn[k], &nd, &na, &nc))
            return af__err(err, AF_ENOMEM, "out of memory rendering the plan");
        put_live(f, L, &pn[k]);
        put_axes(f, L, &pn[k]);
        put_caption(f, &pn[k], nd, na, nc);
        /* Filled by the HTML page's script while zoomed (the static axes are hidden then). */
        fprintf(f, "<text class=\"zoomcap\" x=\"%d\" y=\"%d\"></text>\n</g>\n", pn[k].ox,
                pn[k].oy + L->h + 18);
    }
    fputs("</svg>\n", f);
    return 0;
}

static const char html_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<style>\nbody{font-family:'DejaVu Sans',sans-serif;margin:12px;color:#222}\n"
    "#info{font-family:monospace;white-space:pre;background:#f4f4f4;padding:4px 8px;"
    "min-height:1.2em;border:1px solid #ddd}\n"
    "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:2px 8px;"
    "text-align:right}\n.hint{color:#666;font-size:12px;margin:4px 0}svg .map{cursor:grab}\n"
    "</style>\n";

static const char html_js[] =
    "<script>\n(function(){\n"
    "var info=document.getElementById('info');\n"
    "document.addEventListener('mouseover',function(e){var t=e.target;\n"
    " if(t.classList&&(t.classList.contains('t')||t.classList.contains('agg'))){\n"
    "  var ti=t.querySelector('title');if(ti)info.textContent=ti.textContent.replace(/\\n/g,"
    "'  |  ');}});\n"
    "document.querySelectorAll('g.panel').forEach(function(pg){\n"
    " var map=pg.querySelector('svg.map'),live=pg.querySelector('svg.live');\n"
    " var v0=map.getAttribute('viewBox').split(' ').map(Number),"
    "l0=live.getAttribute('viewBox').split(' ').map(Number),v=v0.slice(),drag=null;\n"
    " function clamp(){v[2]=Math.min(v[2],v0[2]);v[3]=Math.min(v[3],v0[3]);\n"
    "  v[0]=Math.max(0,Math.min(v[0],v0[2]-v[2]));v[1]=Math.max(0,Math.min(v[1],v0[3]-v[3]));}\n"
    " var zc=pg.querySelector('text.zoomcap'),u=Number(map.getAttribute('data-unit'))||1;\n"
    " function apply(){clamp();map.setAttribute('viewBox',v.join(' '));\n"
    "  live.setAttribute('viewBox',[v[0],l0[1],v[2],l0[3]].join(' '));\n"
    "  var z=v[2]<v0[2]||v[3]<v0[3];pg.classList.toggle('zoomed',z);\n"
    "  zc.textContent=z?'zoomed: steps '+v[0].toFixed(1)+' .. '+(v[0]+v[2]).toFixed(1)+"
    "', offsets '+Math.round(v[1]*u)+' .. '+Math.round((v[1]+v[3])*u)+"
    "' bytes (double-click resets)':'';}\n"
    " map.addEventListener('wheel',function(e){e.preventDefault();\n"
    "  var r=map.getBoundingClientRect(),fx=(e.clientX-r.left)/r.width,"
    "fy=(e.clientY-r.top)/r.height,k=e.deltaY<0?0.8:1.25;\n"
    "  var nw=v[2]*k,nh=v[3]*k;v[0]+=(v[2]-Math.min(nw,v0[2]))*fx;"
    "v[1]+=(v[3]-Math.min(nh,v0[3]))*fy;v[2]=nw;v[3]=nh;apply();},{passive:false});\n"
    " map.addEventListener('mousedown',function(e){drag={x:e.clientX,y:e.clientY,v:v.slice()};"
    "e.preventDefault();});\n"
    " window.addEventListener('mousemove',function(e){if(!drag)return;"
    "var r=map.getBoundingClientRect();\n"
    "  v[0]=drag.v[0]-(e.clientX-drag.x)/r.width*v[2];"
    "v[1]=drag.v[1]-(e.clientY-drag.y)/r.height*v[3];apply();});\n"
    " window.addEventListener('mouseup',function(){drag=null;});\n"
    " map.addEventListener('dblclick',function(){v=v0.slice();apply();});\n"
    "});\n})();\n</script>\n";

static void put_report_table(FILE *f, const panel_t *pn, int n)
{
    static const char *const rows[] = {"arena bytes",         "lower bound (max live)",
                                       "naive bytes",         "input order bytes",
                                       "arena / lower bound", "peak step",
                                       "arena tensors",       "planning ms"};
    fputs("<table><tr><th></th>", f);
    for (int k = 0; k < n; k++) {
        fputs("<th>", f);
        put_esc(f, pn[k].label);
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    for (size_t i = 0; i < AF_ARRAY_SIZE(rows); i++) {
        fprintf(f, "<tr><th>%s</th>", rows[i]);
        for (int k = 0; k < n; k++) {
            const af_plan_report_t *r = af_plan_report(pn[k].p);
            double v[] = {
                (double)r->arena_bytes,
                (double)r->lower_bound_bytes,
                (double)r->naive_bytes,
                (double)r->input_order_bytes,
                r->lower_bound_bytes ? (double)r->arena_bytes / (double)r->lower_bound_bytes : 1.0,
                r->peak_step,
                r->arena_tensors,
                r->total_ms + r->verify_ms};
            fprintf(f, i == 4 || i == 7 ? "<td>%.3f</td>" : "<td>%.0f</td>", v[i]);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static int render(const af_plan_t *p, const af_plan_t *cmp, const af_render_opts_t *user, FILE *f,
                  int html, af_error_t *err)
{
    if (!p || !f)
        return af__err(err, AF_EINVAL, "render: no plan or no output file");
    af_render_opts_t o;
    af_render_opts_init(&o);
    if (user)
        o = *user;
    layout_t L = {0};
    L.n = cmp ? 2 : 1;
    L.w = o.width > 0 ? o.width : cmp ? 560 : 900;
    L.h = o.height > 0 ? o.height : 460;
    L.lh = o.live_height > 0 ? o.live_height : 110;
    L.cell = o.cell_px > 0 ? o.cell_px : 4;
    L.min_area = o.min_area_px;
    L.max_rects = o.max_rects;
    if (L.w > 20000 || L.h > 20000 || L.lh > 20000 || L.cell > 1000 || !(L.min_area >= 0) ||
        L.max_rects < 0)
        return af__err(err, AF_EINVAL,
                       "render: bad option (sizes up to 20000 px, cell <= 1000, "
                       "min_area_px >= 0, max_rects >= 0)");
    panel_t pn[2];
    int rc = panel_init(&pn[0], p, o.label, err);
    if (rc)
        return rc;
    if (cmp && (rc = panel_init(&pn[1], cmp, o.compare_label, err))) {
        af__free(pn[0].live);
        return rc;
    }
    for (int k = 0; k < L.n; k++) {
        const af_plan_report_t *r = af_plan_report(pn[k].p);
        uint64_t m = r->arena_bytes > r->lower_bound_bytes ? r->arena_bytes : r->lower_bound_bytes;
        m = m > pn[k].live_max ? m : pn[k].live_max;
        L.ymax = m > L.ymax ? m : L.ymax;
    }
    L.ymax = L.ymax ? L.ymax : 1;
    L.unit = 1;
    while (L.ymax / L.unit > ((uint64_t)1 << 24))
        L.unit *= 2;
    L.sy = (double)L.h / (double)L.ymax;
    if (html) {
        fputs(html_head, f);
        fputs("<title>", f);
        put_esc(f, o.title ? o.title : af_graph_name(pn[0].g));
        fputs(" memory map</title></head><body>\n", f);
        fputs("<p class=\"hint\">Hover a rectangle for its tensor; mouse wheel zooms a map, drag "
              "pans, double-click resets.</p>\n<div id=\"info\"> </div>\n",
              f);
    } else {
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    }
    rc = put_svg(f, &o, &L, pn, err);
    if (!rc && html) {
        put_report_table(f, pn, L.n);
        fputs(html_js, f);
        fputs("</body></html>\n", f);
    }
    for (int k = 0; k < L.n; k++)
        af__free(pn[k].live);
    if (!rc && (fflush(f) || ferror(f)))
        rc = af__err(err, AF_EIO, "render: write failed");
    return rc;
}
