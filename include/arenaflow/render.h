/*
 * arenaflow — pictures of a plan: the memory map as SVG, or as a self-contained HTML page.
 *
 * The memory map puts time (steps of the order) on the x axis and the arena offset on the y axis
 * (offset 0 at the top). Every tensor placed in the arena is one rectangle: x = first ..
 * last + 1, y = offset .. offset + bytes, coloured by its producing op, with a hover title
 * (tensor, op, bytes, offset, lifetime). The peak step is marked, the lower bound (max live
 * bytes of the order) and the arena height are drawn as lines, and a strip under the map shows
 * the live-bytes curve on the same time axis. Given a second plan, both are drawn side by side
 * on the same byte scale.
 *
 * Each panel is a nested <svg> whose viewBox is in plan units (steps x bytes), so a rectangle's
 * x/y/width/height attributes are exactly the plan's first/offset/lifetime/bytes, and the HTML
 * page zooms by changing the viewBox. Rectangles are class "t" with data-t = the tensor id.
 *
 * Large graphs: rectangles smaller than opts.min_area_px square pixels, and everything beyond
 * the opts.max_rects largest ones, are not drawn one by one: they are summed into a grid of
 * opts.cell_px-pixel cells, one rectangle of class "agg" per non-empty cell (data-n = number
 * of tensors, fill opacity = share of the cell they cover, title = count and bytes). So the
 * file size is bounded by max_rects plus the cell count, whatever the graph size.
 *
 * Threading: reads immutable plans only; reentrant. No network resources are referenced.
 */
#ifndef ARENAFLOW_RENDER_H
#define ARENAFLOW_RENDER_H

#include "arenaflow/common.h"
#include "arenaflow/plan.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_render_opts {
    int width;          /* pixels of one panel's map; default 900 (560 when comparing) */
    int height;         /* pixels of the map; default 460 */
    int live_height;    /* pixels of the live-bytes strip; default 110 */
    double min_area_px; /* smaller rectangles are aggregated; default 0.5; 0 = never */
    int32_t max_rects;  /* at most this many individual rectangles per panel; default 12000;
                           0 = no cap */
    int cell_px;        /* aggregation cell size in pixels; default 4 */
    const char *title;  /* heading; default: the graph's name */
    const char *label;  /* panel labels; default: "schedule S, placer P" of each plan */
    const char *compare_label;
} af_render_opts_t;

/* Fills *o with the defaults above. */
void af_render_opts_init(af_render_opts_t *o);

/*
 * Writes the memory map of p (and of compare beside it, when not NULL) as one standalone SVG
 * document to f. opts may be NULL (defaults). Returns 0, AF_EINVAL (NULL plan or file, bad
 * option), AF_ENOMEM, or AF_EIO when writing failed. The caller keeps ownership of everything.
 */
int af_plan_render_svg(const af_plan_t *p, const af_plan_t *compare, const af_render_opts_t *opts,
                       FILE *f, af_error_t *err);

/*
 * Same picture inside a self-contained HTML page (inline CSS and JS, no network resources): the
 * report figures of each plan in a table, hover details in an info line, mouse-wheel zoom, drag
 * to pan, double-click to reset. Same errors as af_plan_render_svg().
 */
int af_plan_render_html(const af_plan_t *p, const af_plan_t *compare, const af_render_opts_t *opts,
                        FILE *f, af_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_RENDER_H */
