/*
 * view.c -- what the viewer shows and how the user moves around in it.
 *
 * The lanes are grouped as the hardware is: a group per chip, in it a group per core (its
 * engines, its DMA queues as a subgroup, its counters, its semaphores as a subgroup folded by
 * default), then what the chip's cores share (NeuronLinks, HBM bandwidth). Groups fold to one
 * row that still shows their activity merged. The layout is a flat list of rows rebuilt after
 * each fold.
 *
 * Time is a window [t0, t1] in picoseconds kept as doubles (a 1 s trace at 1 ps resolution
 * still has 40 bits to spare); x and time convert linearly over the track area. Every input
 * the window receives is a function here, so tests drive the view as a user does.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_internal.h"

#define MIN_SPAN_PS 20.0

/* ---- geometry -------------------------------------------------------------------------------- */

void viz_view_geom(const viz_view_t *v, viz_geom_t *g)
{
    g->track_x = VIZ_LABEL_W;
    g->track_w = v->w - VIZ_LABEL_W - VIZ_SCROLLBAR_W;
    if (g->track_w < 16)
        g->track_w = 16;
    g->minimap_y = VIZ_TITLE_H;
    g->minimap_h = VIZ_MINIMAP_H;
    g->axis_y = g->minimap_y + g->minimap_h;
    g->lanes_y = g->axis_y + VIZ_AXIS_H;
    g->status_y = v->h - VIZ_STATUS_H;
    g->details_h = v->sel >= 0 ? VIZ_DETAILS_H : 0;
    g->details_y = g->status_y - g->details_h;
    g->lanes_h = g->details_y - g->lanes_y;
    if (g->lanes_h < 0)
        g->lanes_h = 0;
}

void viz_view_track_area(const viz_view_t *v, int *x0, int *width, int *y0, int *height)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    *x0 = g.track_x;
    *width = g.track_w;
    *y0 = g.lanes_y;
    *height = g.lanes_h;
}

double viz_view_x_of_time(const viz_view_t *v, double ps)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    return g.track_x + (ps - v->t0) * g.track_w / (v->t1 - v->t0);
}

double viz_view_time_of_x(const viz_view_t *v, double x)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    return v->t0 + (x - g.track_x) * (v->t1 - v->t0) / g.track_w;
}

int viz_row_screen_y(const viz_view_t *v, const viz_row_t *r)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    return g.lanes_y + r->y - v->scroll;
}

/* ---- the time window ------------------------------------------------------------------------- */

static void full_range(const viz_view_t *v, double *a, double *b)
{
    double lo = (double)v->t->t_min, hi = (double)v->t->t_max;
    double pad = (hi - lo) * 0.01;
    *a = lo - pad;
    *b = hi + pad;
}

/* Keep the window sensible after a zoom or pan: not narrower than MIN_SPAN_PS, not wider
 * than ten whole traces, and at least a tenth of it over the trace. */
static void clamp_window(viz_view_t *v)
{
    double a, b;
    full_range(v, &a, &b);
    double span = v->t1 - v->t0;
    if (!(span >= MIN_SPAN_PS)) {
        double mid = (v->t0 + v->t1) / 2;
        if (mid != mid)
            mid = (a + b) / 2;
        span = MIN_SPAN_PS;
        v->t0 = mid - span / 2;
        v->t1 = mid + span / 2;
    }
    if (span > 10 * (b - a)) {
        double mid = (v->t0 + v->t1) / 2;
        span = 10 * (b - a);
        v->t0 = mid - span / 2;
        v->t1 = mid + span / 2;
    }
    if (v->t1 < a + 0.1 * span) {
        v->t0 += a + 0.1 * span - v->t1;
        v->t1 = v->t0 + span;
    }
    if (v->t0 > b - 0.1 * span) {
        v->t0 -= v->t0 - (b - 0.1 * span);
        v->t1 = v->t0 + span;
    }
}

void viz_view_set_window(viz_view_t *v, double start_ps, double end_ps)
{
    if (!(end_ps > start_ps)) {
        double mid = start_ps;
        start_ps = mid - MIN_SPAN_PS / 2;
        end_ps = mid + MIN_SPAN_PS / 2;
    }
    v->t0 = start_ps;
    v->t1 = end_ps;
    clamp_window(v);
}

void viz_view_window(const viz_view_t *v, double *start_ps, double *end_ps)
{
    *start_ps = v->t0;
    *end_ps = v->t1;
}

void viz_view_fit(viz_view_t *v)
{
    full_range(v, &v->t0, &v->t1);
}

void viz_view_zoom(viz_view_t *v, double factor, int x)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (!(factor > 0))
        return;
    if (x < g.track_x || x >= g.track_x + g.track_w)
        x = g.track_x + g.track_w / 2;
    double anchor = viz_view_time_of_x(v, x);
    double span = (v->t1 - v->t0) / factor;
    if (span < MIN_SPAN_PS)
        span = MIN_SPAN_PS;
    double frac = (double)(x - g.track_x) / g.track_w;
    v->t0 = anchor - frac * span;
    v->t1 = v->t0 + span;
    clamp_window(v);
}

void viz_view_pan(viz_view_t *v, double dx_pixels)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    double dt = dx_pixels * (v->t1 - v->t0) / g.track_w;
    v->t0 += dt;
    v->t1 += dt;
    clamp_window(v);
}

static void clamp_scroll(viz_view_t *v)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    int max = v->content_h - g.lanes_h;
    if (v->scroll > max)
        v->scroll = max;
    if (v->scroll < 0)
        v->scroll = 0;
}

void viz_view_scroll(viz_view_t *v, int dy_pixels)
{
    v->scroll += dy_pixels;
    clamp_scroll(v);
}

/* ---- groups and rows ------------------------------------------------------------------------- */

static int new_group(viz_view_t *v, int parent, const char *name, const char *label)
{
    if (v->ngroups + 1 > v->cap_groups) {
        size_t cap = v->cap_groups ? v->cap_groups * 2 : 16;
        viz_group_t *g = realloc(v->groups, cap * sizeof *g);
        if (!g)
            return -1;
        v->groups = g;
        v->cap_groups = cap;
    }
    viz_group_t *g = &v->groups[v->ngroups];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->label, sizeof g->label, "%s", label);
    g->parent = parent;
    g->depth = parent >= 0 ? v->groups[parent].depth + 1 : 0;
    return (int)v->ngroups++;
}

static int add_item(viz_view_t *v, int group, int kind, int index)
{
    viz_group_t *g = &v->groups[group];
    if (g->nitems + 1 > g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        viz_item_t *it = realloc(g->items, cap * sizeof *it);
        if (!it)
            return -1;
        g->items = it;
        g->cap = cap;
    }
    g->items[g->nitems].kind = (uint8_t)kind;
    g->items[g->nitems].index = index;
    g->nitems++;
    if (kind == VIZ_ITEM_LANE)
        v->lane_group[index] = group;
    else if (kind == VIZ_ITEM_COUNTER)
        v->counter_group[index] = group;
    return 0;
}

static const viz_trace_t *sort_trace;

static int cmp_lane(const void *a, const void *b)
{
    const viz_lane_t *x = &sort_trace->lanes[*(const int *)a];
    const viz_lane_t *y = &sort_trace->lanes[*(const int *)b];
    if (x->sort != y->sort)
        return x->sort < y->sort ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int counter_rank(const viz_counter_t *c)
{
    switch (c->kind) {
    case VIZ_CTR_HBM: return 0;
    case VIZ_CTR_SBUF: return 1;
    case VIZ_CTR_PSUM: return 2;
    case VIZ_CTR_DMA_BW: return 3;
    case VIZ_CTR_DMA_INFLIGHT: return 4;
    case VIZ_CTR_LINK_BW: return 5;
    case VIZ_CTR_OTHER: return 6;
    default: return 7;
    }
}

static int cmp_counter(const void *a, const void *b)
{
    const viz_counter_t *x = &sort_trace->counters[*(const int *)a];
    const viz_counter_t *y = &sort_trace->counters[*(const int *)b];
    int rx = counter_rank(x), ry = counter_rank(y);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return strcmp(viz_str(sort_trace, x->name), viz_str(sort_trace, y->name));
}

static int cmp_process(const void *a, const void *b)
{
    const viz_process_t *x = &sort_trace->procs[*(const int *)a];
    const viz_process_t *y = &sort_trace->procs[*(const int *)b];
    if (x->chip != y->chip)
        return x->chip < y->chip ? -1 : 1;
    if (x->is_core != y->is_core)
        return x->is_core ? -1 : 1; /* a chip's cores before what they share */
    if (x->sort != y->sort)
        return x->sort < y->sort ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Lanes of kind `kind` (or every lane that is neither a DMA queue nor a link when
 * kind < 0) of process p, sorted; returns how many were put in `out`. */
static size_t process_lanes(const viz_trace_t *t, int p, int kind, int *out)
{
    size_t n = 0;
    for (size_t l = 0; l < t->nlanes; l++) {
        const viz_lane_t *lane = &t->lanes[l];
        if (lane->process != p)
            continue;
        int k = lane->kind;
        int match = kind >= 0 ? k == kind
                              : (k != TRC_TRACK_DMA_QUEUE && k != TRC_TRACK_LINK &&
                                 k != TRC_TRACK_COLLECTIVE);
        if (match)
            out[n++] = (int)l;
    }
    sort_trace = t;
    qsort(out, n, sizeof *out, cmp_lane);
    return n;
}

/* Add lanes as items of `group`, in a subgroup `sub` when there are more than `fold_over`. */
static int add_lane_block(viz_view_t *v, int group, const int *lanes, size_t n, const char *sub,
                          const char *sub_label, size_t fold_over)
{
    if (!n)
        return 0;
    int target = group;
    if (n > fold_over) {
        char name[256], label[64];
        snprintf(name, sizeof name, "%s/%s", v->groups[group].name, sub);
        snprintf(label, sizeof label, "%s (%zu)", sub_label, n);
        target = new_group(v, group, name, label);
        if (target < 0 || add_item(v, group, VIZ_ITEM_GROUP, target))
            return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (add_item(v, target, VIZ_ITEM_LANE, lanes[i]))
            return -1;
    return 0;
}

/* Everything of process p into `group`: engines, collective engines, DMA queues, links,
 * counters, semaphores. */
static int fill_process(viz_view_t *v, int group, int p, int *scratch)
{
    const viz_trace_t *t = v->t;
    size_t n = process_lanes(t, p, -1, scratch);
    if (add_lane_block(v, group, scratch, n, "engines", "engines", SIZE_MAX))
        return -1;
    n = process_lanes(t, p, TRC_TRACK_COLLECTIVE, scratch);
    if (add_lane_block(v, group, scratch, n, "collective engines", "collective engines", 4))
        return -1;
    n = process_lanes(t, p, TRC_TRACK_DMA_QUEUE, scratch);
    if (add_lane_block(v, group, scratch, n, "dma queues", "DMA queues", 1))
        return -1;
    n = process_lanes(t, p, TRC_TRACK_LINK, scratch);
    if (add_lane_block(v, group, scratch, n, "links", "NeuronLinks", 4))
        return -1;
    size_t nc = 0, nsem = 0;
    for (size_t c = 0; c < t->ncounters; c++)
        if (t->counters[c].process == p && t->counters[c].kind != VIZ_CTR_SEMAPHORE)
            scratch[nc++] = (int)c;
    sort_trace = t;
    qsort(scratch, nc, sizeof *scratch, cmp_counter);
    for (size_t i = 0; i < nc; i++)
        if (add_item(v, group, VIZ_ITEM_COUNTER, scratch[i]))
            return -1;
    for (size_t c = 0; c < t->ncounters; c++)
        if (t->counters[c].process == p && t->counters[c].kind == VIZ_CTR_SEMAPHORE)
            scratch[nsem++] = (int)c;
    if (nsem) {
        qsort(scratch, nsem, sizeof *scratch, cmp_counter);
        char name[256], label[64];
        snprintf(name, sizeof name, "%s/semaphores", v->groups[group].name);
        snprintf(label, sizeof label, "semaphores (%zu)", nsem);
        int sg = new_group(v, group, name, label);
        if (sg < 0 || add_item(v, group, VIZ_ITEM_GROUP, sg))
            return -1;
        v->groups[sg].collapsed = 1;
        for (size_t i = 0; i < nsem; i++)
            if (add_item(v, sg, VIZ_ITEM_COUNTER, scratch[i]))
                return -1;
    }
    return 0;
}

static int process_has_content(const viz_trace_t *t, int p)
{
    for (size_t l = 0; l < t->nlanes; l++)
        if (t->lanes[l].process == p)
            return 1;
    for (size_t c = 0; c < t->ncounters; c++)
        if (t->counters[c].process == p)
            return 1;
    return 0;
}

static int add_root(viz_view_t *v, int g)
{
    int *r = realloc(v->roots, (v->nroots + 1) * sizeof *r);
    if (!r)
        return -1;
    v->roots = r;
    v->roots[v->nroots++] = g;
    return 0;
}

/* The group tree: chips, their cores, then processes the trace does not place. */
static int build_groups(viz_view_t *v)
{
    const viz_trace_t *t = v->t;
    size_t np = t->nprocs;
    size_t nscratch = t->nlanes + t->ncounters + 1;
    int *order = malloc((np + 1) * sizeof *order);
    int *scratch = malloc(nscratch * sizeof *scratch);
    if (!order || !scratch) {
        free(order);
        free(scratch);
        return -1;
    }
    size_t n = 0;
    for (size_t p = 0; p < np; p++)
        if (process_has_content(t, (int)p))
            order[n++] = (int)p;
    sort_trace = t;
    qsort(order, n, sizeof *order, cmp_process);
    int rc = 0;
    int chip_group = -1, chip = -1;
    for (size_t i = 0; i < n && !rc; i++) {
        const viz_process_t *p = &t->procs[order[i]];
        const char *pname = viz_str(t, p->name);
        if (p->chip < 0) {
            int g = new_group(v, -1, pname, pname);
            rc = g < 0 || add_root(v, g) || fill_process(v, g, order[i], scratch);
            continue;
        }
        if (p->chip != chip) {
            char name[32];
            if (p->run)
                snprintf(name, sizeof name, "B \xc2\xb7 chip %d", p->chip - VIZ_RUN_B_CHIP);
            else if (t->runs == 2)
                snprintf(name, sizeof name, "A \xc2\xb7 chip %d", p->chip);
            else
                snprintf(name, sizeof name, "chip %d", p->chip);
            chip_group = new_group(v, -1, name, name);
            chip = p->chip;
            if (chip_group < 0 || add_root(v, chip_group)) {
                rc = -1;
                break;
            }
        }
        if (p->is_core) {
            int g = new_group(v, chip_group, pname, pname);
            rc = g < 0 || add_item(v, chip_group, VIZ_ITEM_GROUP, g) ||
                 fill_process(v, g, order[i], scratch);
        } else {
            rc = fill_process(v, chip_group, order[i], scratch);
        }
    }
    free(order);
    free(scratch);
    return rc ? -1 : 0;
}

static int push_row(viz_view_t *v, int kind, int index, int depth, int h, int *y)
{
    if (v->nrows + 1 > v->cap_rows) {
        size_t cap = v->cap_rows ? v->cap_rows * 2 : 64;
        viz_row_t *r = realloc(v->rows, cap * sizeof *r);
        if (!r)
            return -1;
        v->rows = r;
        v->cap_rows = cap;
    }
    viz_row_t *r = &v->rows[v->nrows];
    r->kind = (uint8_t)kind;
    r->index = index;
    r->depth = depth;
    r->y = *y;
    r->h = h;
    *y += h;
    return (int)v->nrows++;
}

/* Mark every lane under group g as shown by row `row` (a folded header). */
static void hide_under(viz_view_t *v, int g, int row)
{
    const viz_group_t *grp = &v->groups[g];
    for (size_t i = 0; i < grp->nitems; i++) {
        const viz_item_t *it = &grp->items[i];
        if (it->kind == VIZ_ITEM_GROUP)
            hide_under(v, it->index, row);
        else if (it->kind == VIZ_ITEM_LANE)
            v->lane_row[it->index] = row;
        else
            v->counter_row[it->index] = -1;
    }
}

static int lane_height(const viz_trace_t *t, int lane)
{
    int k = t->lanes[lane].kind;
    return k == TRC_TRACK_DMA_QUEUE || k == TRC_TRACK_LINK ? VIZ_ROW_QUEUE_H : VIZ_ROW_ENGINE_H;
}

static int emit_group(viz_view_t *v, int g, int *y)
{
    const viz_group_t *grp = &v->groups[g];
    int row = push_row(v, VIZ_ROW_GROUP, g, grp->depth, VIZ_ROW_GROUP_H, y);
    if (row < 0)
        return -1;
    if (grp->collapsed) {
        hide_under(v, g, row);
        return 0;
    }
    for (size_t i = 0; i < grp->nitems; i++) {
        const viz_item_t *it = &v->groups[g].items[i];
        int r;
        if (it->kind == VIZ_ITEM_GROUP) {
            if (emit_group(v, it->index, y))
                return -1;
            continue;
        }
        if (it->kind == VIZ_ITEM_LANE) {
            r = push_row(v, VIZ_ROW_LANE, it->index, grp->depth + 1,
                         lane_height(v->t, it->index), y);
            if (r < 0)
                return -1;
            v->lane_row[it->index] = r;
        } else {
            r = push_row(v, VIZ_ROW_COUNTER, it->index, grp->depth + 1, VIZ_ROW_COUNTER_H, y);
            if (r < 0)
                return -1;
            v->counter_row[it->index] = r;
        }
    }
    return 0;
}

void viz_view_layout(viz_view_t *v)
{
    v->nrows = 0;
    int y = 0;
    for (size_t l = 0; l < v->t->nlanes; l++)
        v->lane_row[l] = -1;
    for (size_t c = 0; c < v->t->ncounters; c++)
        v->counter_row[c] = -1;
    for (size_t i = 0; i < v->nroots; i++)
        if (emit_group(v, v->roots[i], &y))
            break; /* out of memory: show what fits */
    v->content_h = y;
    clamp_scroll(v);
}

static int group_by_name(const viz_view_t *v, const char *name)
{
    for (size_t g = 0; g < v->ngroups; g++)
        if (strcmp(v->groups[g].name, name) == 0)
            return (int)g;
    return -1;
}

int viz_view_set_collapsed(viz_view_t *v, const char *name, int collapsed)
{
    int g = group_by_name(v, name);
    if (g < 0)
        return -1;
    v->groups[g].collapsed = collapsed != 0;
    viz_view_layout(v);
    return 0;
}

int viz_view_collapsed(const viz_view_t *v, const char *name)
{
    int g = group_by_name(v, name);
    return g < 0 ? -1 : v->groups[g].collapsed;
}

static int is_subgroup(const viz_view_t *v, int g, const char *suffix)
{
    const char *s = strrchr(v->groups[g].name, '/');
    return s && strcmp(s + 1, suffix) == 0;
}

static int root_of(const viz_view_t *v, int g)
{
    while (v->groups[g].parent >= 0)
        g = v->groups[g].parent;
    for (size_t i = 0; i < v->nroots; i++)
        if (v->roots[i] == g)
            return (int)i;
    return 0;
}

static const viz_view_t *fold_view;

/* Unfolding priority: the first chip's cores, then its DMA queues and links, then the other
 * chips, their cores, their queues. */
/* A pair of traces (viz_trace_load_pair): the root of B's first chip, whose cores unfold
 * alongside A's first chip's; -1 for one trace. */
static int b_first_root(const viz_view_t *v)
{
    if (v->t->runs != 2)
        return -1;
    for (size_t i = 0; i < v->nroots; i++)
        if (strncmp(v->groups[v->roots[i]].name, "B \xc2\xb7 chip", 9) == 0)
            return (int)i;
    return -1;
}

/* Position of group g among its parent's items (0 for a root). */
static int sibling_pos(const viz_view_t *v, int g)
{
    int p = v->groups[g].parent;
    if (p < 0)
        return 0;
    for (size_t i = 0; i < v->groups[p].nitems; i++)
        if (v->groups[p].items[i].kind == VIZ_ITEM_GROUP && v->groups[p].items[i].index == g)
            return (int)i;
    return 0;
}

static int cmp_unfold(const void *a, const void *b)
{
    const viz_view_t *v = fold_view;
    int x = *(const int *)a, y = *(const int *)b;
    int bf = b_first_root(v);
    int ox = root_of(v, x), oy = root_of(v, y);
    int rx = ox > 0 && ox != bf, ry = oy > 0 && oy != bf;
    if (rx != ry)
        return rx - ry;
    int dx = v->groups[x].depth, dy = v->groups[y].depth;
    if (dx != dy)
        return dx - dy;
    if (bf >= 0) { /* a pair: one core of each run before the second core of either */
        int px = sibling_pos(v, x), py = sibling_pos(v, y);
        if (px != py)
            return px - py;
    }
    return x - y;
}

/* The first layout: the semaphores folded; then as much open as fits the lane area, opened
 * greedily in the order of cmp_unfold (a trace that fits shows everything). */
static void initial_folding(viz_view_t *v)
{
    viz_geom_t geo;
    viz_view_layout(v);
    viz_view_geom(v, &geo);
    if (v->content_h <= geo.lanes_h)
        return;
    int *cand = malloc((v->ngroups + 1) * sizeof *cand);
    if (!cand)
        return;
    size_t n = 0;
    for (size_t g = 0; g < v->ngroups; g++) {
        if (is_subgroup(v, (int)g, "semaphores") ||
            (v->groups[g].depth == 0 &&
             (root_of(v, (int)g) == 0 || root_of(v, (int)g) == b_first_root(v))))
            continue;
        v->groups[g].collapsed = 1;
        cand[n++] = (int)g;
    }
    fold_view = v;
    qsort(cand, n, sizeof *cand, cmp_unfold);
    fold_view = NULL;
    viz_view_layout(v);
    for (size_t i = 0; i < n; i++) {
        v->groups[cand[i]].collapsed = 0;
        viz_view_layout(v);
        if (v->content_h > geo.lanes_h) {
            v->groups[cand[i]].collapsed = 1;
            viz_view_layout(v);
        }
    }
    free(cand);
}

void viz_group_lanes(const viz_view_t *v, int g, void (*fn)(void *ctx, int lane), void *ctx)
{
    const viz_group_t *grp = &v->groups[g];
    for (size_t i = 0; i < grp->nitems; i++) {
        const viz_item_t *it = &grp->items[i];
        if (it->kind == VIZ_ITEM_GROUP)
            viz_group_lanes(v, it->index, fn, ctx);
        else if (it->kind == VIZ_ITEM_LANE)
            fn(ctx, it->index);
    }
}

/* ---- creation -------------------------------------------------------------------------------- */

viz_view_t *viz_view_create(const viz_trace_t *t, int width, int height)
{
    viz_view_t *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->t = t;
    v->w = width > 64 ? width : 64;
    v->h = height > 200 ? height : 200;
    v->sel = -1;
    v->hover_lane = -1;
    v->hover_slice = -1;
    v->hover_counter = -1;
    v->hover_row = -1;
    v->mouse_x = v->mouse_y = -1;
    v->lane_row = malloc((t->nlanes + 1) * sizeof *v->lane_row);
    v->counter_row = malloc((t->ncounters + 1) * sizeof *v->counter_row);
    v->lane_group = malloc((t->nlanes + 1) * sizeof *v->lane_group);
    v->counter_group = malloc((t->ncounters + 1) * sizeof *v->counter_group);
    if (!v->lane_row || !v->counter_row || !v->lane_group || !v->counter_group ||
        build_groups(v)) {
        viz_view_free(v);
        return NULL;
    }
    viz_view_fit(v);
    initial_folding(v);
    return v;
}

void viz_view_free(viz_view_t *v)
{
    if (!v)
        return;
    for (size_t g = 0; g < v->ngroups; g++)
        free(v->groups[g].items);
    free(v->groups);
    free(v->roots);
    free(v->rows);
    free(v->lane_row);
    free(v->counter_row);
    free(v->lane_group);
    free(v->counter_group);
    free(v->matches);
    free(v->is_match);
    free(v);
}

void viz_view_resize(viz_view_t *v, int width, int height)
{
    v->w = width > 64 ? width : 64;
    v->h = height > 200 ? height : 200;
    clamp_scroll(v);
}

void viz_view_size(const viz_view_t *v, int *width, int *height)
{
    *width = v->w;
    *height = v->h;
}

void viz_view_set_colour_mode(viz_view_t *v, viz_colour_mode_t m)
{
    v->mode = m < VIZ_COLOUR_MODE_COUNT ? m : VIZ_COLOUR_ENGINE;
}

viz_colour_mode_t viz_view_colour_mode(const viz_view_t *v)
{
    return v->mode;
}

uint32_t viz_view_slice_colour(const viz_view_t *v, int lane, const char *name,
                               const char *stall_cause, viz_colour_mode_t m)
{
    if (lane < 0 || (size_t)lane >= v->t->nlanes)
        return 0;
    if (m == VIZ_COLOUR_STALL) {
        if (v->t->lanes[lane].kind == TRC_TRACK_DMA_QUEUE ||
            v->t->lanes[lane].kind == TRC_TRACK_LINK)
            return viz_class_rgb(VIZ_CLASS_CAUSE + VIZ_CAUSE_TRANSFER);
        return viz_class_rgb(VIZ_CLASS_CAUSE + viz_cause_of_stall(stall_cause));
    }
    return viz_class_rgb(v->t->lanes[lane].cat * VIZ_SHADES + viz_name_shade(name));
}

/* ---- finding things -------------------------------------------------------------------------- */

static int find_process_lane(const viz_view_t *v, const char *group, const char *name,
                             int counters)
{
    const viz_trace_t *t = v->t;
    size_t n = counters ? t->ncounters : t->nlanes;
    for (size_t i = 0; i < n; i++) {
        int p = counters ? t->counters[i].process : t->lanes[i].process;
        uint32_t nm = counters ? t->counters[i].name : t->lanes[i].name;
        if (strcmp(viz_str(t, t->procs[p].name), group) == 0 && strcmp(viz_str(t, nm), name) == 0)
            return (int)i;
    }
    return -1;
}

int viz_view_find_lane(const viz_view_t *v, const char *group, const char *lane)
{
    return find_process_lane(v, group, lane, 0);
}

int viz_view_find_counter(const viz_view_t *v, const char *group, const char *counter)
{
    return find_process_lane(v, group, counter, 1);
}

static int row_visible(const viz_view_t *v, int row, int *y, int *height)
{
    if (row < 0 || (size_t)row >= v->nrows)
        return 0;
    viz_geom_t g;
    viz_view_geom(v, &g);
    const viz_row_t *r = &v->rows[row];
    int sy = viz_row_screen_y(v, r);
    if (sy + r->h <= g.lanes_y || sy >= g.lanes_y + g.lanes_h)
        return 0;
    *y = sy;
    *height = r->h;
    return 1;
}

int viz_view_lane_row(const viz_view_t *v, int lane, int *y, int *height)
{
    if (lane < 0 || (size_t)lane >= v->t->nlanes)
        return 0;
    int row = v->lane_row[lane];
    if (row < 0 || v->rows[row].kind != VIZ_ROW_LANE)
        return 0;
    return row_visible(v, row, y, height);
}

int viz_view_counter_row(const viz_view_t *v, int counter, int *y, int *height)
{
    if (counter < 0 || (size_t)counter >= v->t->ncounters)
        return 0;
    return row_visible(v, v->counter_row[counter], y, height);
}

/* The row at screen y in the lane area, -1 when none. */
static int row_at(const viz_view_t *v, int y)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (y < g.lanes_y || y >= g.lanes_y + g.lanes_h)
        return -1;
    int cy = y - g.lanes_y + v->scroll;
    size_t lo = 0, hi = v->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->rows[mid].y + v->rows[mid].h <= cy)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < v->nrows && v->rows[lo].y <= cy)
        return (int)lo;
    return -1;
}

long viz_view_slice_at(const viz_view_t *v, int lane, double t, double tol_ps)
{
    const viz_trace_t *tr = v->t;
    const viz_lane_t *l = &tr->lanes[lane];
    size_t i = viz_lane_first_ending_after(tr, l, t - tol_ps);
    long best = -1;
    double best_d = 0;
    for (size_t k = 0; i < l->count && k < 512; i++, k++) {
        size_t s = l->first + i;
        double a = (double)tr->start[s], b = (double)tr->end[s];
        if (a > t + tol_ps)
            break;
        double d = t < a ? a - t : t > b ? t - b : 0.0;
        if (d > tol_ps)
            continue;
        /* inside beats near; among those inside, the shortest (the most specific) */
        if (best < 0 || d < best_d ||
            (d == best_d && b - a < (double)(tr->end[best] - tr->start[best]))) {
            best = (long)s;
            best_d = d;
        }
    }
    return best;
}

typedef struct nearest_ctx {
    const viz_view_t *v;
    double t, tol;
    long best;
    double best_d;
} nearest_ctx_t;

static void nearest_in_lane(void *ctx, int lane)
{
    nearest_ctx_t *c = ctx;
    long s = viz_view_slice_at(c->v, lane, c->t, c->tol);
    if (s < 0)
        return;
    const viz_trace_t *t = c->v->t;
    double a = (double)t->start[s], b = (double)t->end[s];
    double d = c->t < a ? a - c->t : c->t > b ? c->t - b : 0.0;
    if (c->best < 0 || d < c->best_d) {
        c->best = s;
        c->best_d = d;
    }
}

/* The slice under a screen point (in a lane row, or a folded group's row), -1 when none. */
static long slice_under(const viz_view_t *v, int x, int y, int row)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (row < 0 || x < g.track_x || x >= g.track_x + g.track_w)
        return -1;
    const viz_row_t *r = &v->rows[row];
    double t = viz_view_time_of_x(v, x);
    double tol = 3.0 * (v->t1 - v->t0) / g.track_w;
    (void)y;
    if (r->kind == VIZ_ROW_LANE)
        return viz_view_slice_at(v, r->index, t, tol);
    if (r->kind == VIZ_ROW_GROUP && v->groups[r->index].collapsed) {
        nearest_ctx_t c = {v, t, tol, -1, 0};
        viz_group_lanes(v, r->index, nearest_in_lane, &c);
        return c.best;
    }
    return -1;
}

/* ---- selection ------------------------------------------------------------------------------- */

static void expand_to_lane(viz_view_t *v, int lane)
{
    int changed = 0;
    for (int g = v->lane_group[lane]; g >= 0; g = v->groups[g].parent)
        if (v->groups[g].collapsed) {
            v->groups[g].collapsed = 0;
            changed = 1;
        }
    if (changed)
        viz_view_layout(v);
}

static void scroll_to_lane(viz_view_t *v, int lane)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    int row = v->lane_row[lane];
    if (row < 0)
        return;
    const viz_row_t *r = &v->rows[row];
    if (r->y < v->scroll)
        v->scroll = r->y - VIZ_ROW_GROUP_H;
    else if (r->y + r->h > v->scroll + g.lanes_h)
        v->scroll = r->y + r->h - g.lanes_h + VIZ_ROW_GROUP_H;
    clamp_scroll(v);
}

/* Bring slice s into the window: centre it when it is outside, zoom out when it is wider
 * than the window, zoom in when it would be narrower than a pixel. */
static void reveal_slice(viz_view_t *v, size_t s)
{
    const viz_trace_t *t = v->t;
    double a = (double)t->start[s], b = (double)t->end[s];
    double span = v->t1 - v->t0;
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (b - a > span * 0.9) {
        double pad = (b - a) * 0.1 + MIN_SPAN_PS;
        viz_view_set_window(v, a - pad, b + pad);
        return;
    }
    if (a < v->t0 || b > v->t1) {
        double mid = (a + b) / 2;
        v->t0 = mid - span / 2;
        v->t1 = mid + span / 2;
        clamp_window(v);
    }
}

void viz_view_select(viz_view_t *v, int lane, long slice)
{
    if (lane < 0 || slice < 0 || (size_t)lane >= v->t->nlanes ||
        (size_t)slice >= v->t->lanes[lane].count) {
        v->sel = -1;
        return;
    }
    v->sel = (long)(v->t->lanes[lane].first + (size_t)slice);
    expand_to_lane(v, lane);
    scroll_to_lane(v, lane);
    reveal_slice(v, (size_t)v->sel);
}

int viz_view_selected(const viz_view_t *v, viz_slice_info_t *info)
{
    if (v->sel < 0)
        return 0;
    viz_slice_info(v->t, (size_t)v->sel, info);
    return 1;
}

int viz_view_hovered(const viz_view_t *v, viz_slice_info_t *info)
{
    if (v->hover_slice < 0)
        return 0;
    viz_slice_info(v->t, (size_t)v->hover_slice, info);
    return 1;
}

size_t viz_view_selected_flow_count(const viz_view_t *v)
{
    if (v->sel < 0)
        return 0;
    size_t f;
    return viz_trace_flows_of(v->t, (uint32_t)v->sel, 1, &f) +
           viz_trace_flows_of(v->t, (uint32_t)v->sel, 0, &f);
}

int viz_view_help_shown(const viz_view_t *v)
{
    return v->help;
}

int viz_view_quit_requested(const viz_view_t *v)
{
    return v->quit;
}

/* ---- search ---------------------------------------------------------------------------------- */

static int icontains(const char *hay, const char *needle, size_t nlen)
{
    if (!nlen)
        return 0;
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < nlen && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == nlen)
            return 1;
    }
    return 0;
}

/* "42", ":42", "line 42", "l42": a source line; 0 when the text is not one. */
static uint32_t parse_line_query(const char *q)
{
    while (*q == ' ')
        q++;
    if (strncmp(q, "line", 4) == 0)
        q += 4;
    else if (*q == ':' || *q == 'L' || *q == 'l')
        q++;
    while (*q == ' ')
        q++;
    if (!isdigit((unsigned char)*q))
        return 0;
    char *end;
    unsigned long n = strtoul(q, &end, 10);
    while (*end == ' ')
        end++;
    return *end || n == 0 || n > UINT32_MAX ? 0 : (uint32_t)n;
}

static const viz_trace_t *match_trace;

static int cmp_match(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint64_t sx = match_trace->start[x], sy = match_trace->start[y];
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void goto_match(viz_view_t *v, size_t k)
{
    if (!v->nmatches)
        return;
    v->cur_match = k % v->nmatches;
    uint32_t s = v->matches[v->cur_match];
    const viz_trace_t *t = v->t;
    int lane = (int)t->lane_of[s];
    viz_view_select(v, lane, (long)(s - t->lanes[lane].first));
    snprintf(v->message, sizeof v->message, "match %zu of %zu for \"%s\"  (n: next, N: previous)",
             v->cur_match + 1, v->nmatches, v->last_query);
}


size_t viz_view_search(viz_view_t *v, const char *text)
{
    const viz_trace_t *t = v->t;
    while (*text == ' ')
        text++;
    snprintf(v->last_query, sizeof v->last_query, "%s", text);
    size_t qlen = strlen(v->last_query);
    while (qlen && v->last_query[qlen - 1] == ' ')
        v->last_query[--qlen] = 0;
    free(v->matches);
    v->matches = NULL;
    v->nmatches = 0;
    v->cur_match = 0;
    if (!qlen) {
        free(v->is_match);
        v->is_match = NULL;
        v->message[0] = 0;
        return 0;
    }
    if (!v->is_match)
        v->is_match = malloc(t->nslices ? t->nslices : 1);
    uint32_t line = parse_line_query(v->last_query);
    /* which interned strings match, once; then each slice is three bit tests */
    size_t nbits = t->str.len;
    uint8_t *bits = line ? NULL : calloc(nbits / 8 + 1, 1);
    if (!v->is_match || (!line && !bits)) {
        free(bits);
        snprintf(v->message, sizeof v->message, "search: out of memory");
        return 0;
    }
    if (bits) {
        for (size_t off = 1; off < t->str.len;) {
            const char *s = t->str.buf + off;
            size_t n = strlen(s);
            if (icontains(s, v->last_query, qlen))
                bits[off / 8] |= (uint8_t)(1u << (off % 8));
            off += n + 1;
        }
    }
#define HIT(id) ((id) && (bits[(id) / 8] >> ((id) % 8) & 1u))
    size_t n = 0;
    for (size_t s = 0; s < t->nslices; s++) {
        const viz_detail_t *d = &t->detail[s];
        int hit = line ? d->line == line : HIT(d->name) || HIT(d->operands) || HIT(d->stall);
        v->is_match[s] = (uint8_t)hit;
        n += (size_t)hit;
    }
#undef HIT
    free(bits);
    if (n) {
        v->matches = malloc(n * sizeof *v->matches);
        if (!v->matches) {
            snprintf(v->message, sizeof v->message, "search: out of memory");
            return 0;
        }
        for (size_t s = 0; s < t->nslices; s++)
            if (v->is_match[s])
                v->matches[v->nmatches++] = (uint32_t)s;
        match_trace = t;
        qsort(v->matches, v->nmatches, sizeof *v->matches, cmp_match);
        match_trace = NULL;
        /* the first match at or after the middle of the window */
        double mid = (v->t0 + v->t1) / 2;
        size_t k = 0;
        while (k < v->nmatches && (double)t->start[v->matches[k]] < mid)
            k++;
        goto_match(v, k < v->nmatches ? k : 0);
    } else {
        snprintf(v->message, sizeof v->message, "no match for \"%s\"", v->last_query);
    }
    return v->nmatches;
}

/* ---- input ----------------------------------------------------------------------------------- */

static void set_range_window(viz_view_t *v, double a, double b)
{
    if (a > b) {
        double x = a;
        a = b;
        b = x;
    }
    viz_view_set_window(v, a, b);
}

/* f / z: the range when there is one, else the selected slice, else everything. */
static void zoom_to_selection(viz_view_t *v)
{
    if (v->range_on && v->range_a != v->range_b) {
        set_range_window(v, v->range_a, v->range_b);
        return;
    }
    if (v->sel >= 0) {
        double a = (double)v->t->start[v->sel], b = (double)v->t->end[v->sel];
        double pad = (b - a) * 0.25 + MIN_SPAN_PS;
        viz_view_set_window(v, a - pad, b + pad);
        return;
    }
    viz_view_fit(v);
}

static void fold_all(viz_view_t *v, int collapsed)
{
    for (size_t g = 0; g < v->ngroups; g++) {
        if (is_subgroup(v, (int)g, "semaphores") && !collapsed)
            continue; /* semaphores stay folded unless opened one by one */
        if (v->groups[g].depth > 0 || !collapsed)
            v->groups[g].collapsed = collapsed;
    }
    viz_view_layout(v);
}

/* Update what is under the pointer. */
int viz_view_hover(viz_view_t *v, int x, int y)
{
    long old_slice = v->hover_slice;
    int old_counter = v->hover_counter, old_x = v->mouse_x, old_y = v->mouse_y;
    v->mouse_x = x;
    v->mouse_y = y;
    v->mouse_in = x >= 0 && y >= 0 && x < v->w && y < v->h;
    v->hover_slice = -1;
    v->hover_counter = -1;
    v->hover_row = -1;
    v->hover_lane = -1;
    if (v->mouse_in && !v->help) {
        int row = row_at(v, y);
        v->hover_row = row;
        if (row >= 0) {
            const viz_row_t *r = &v->rows[row];
            if (r->kind == VIZ_ROW_COUNTER) {
                viz_geom_t g;
                viz_view_geom(v, &g);
                if (x >= g.track_x && x < g.track_x + g.track_w)
                    v->hover_counter = r->index;
            } else {
                v->hover_slice = slice_under(v, x, y, row);
                if (v->hover_slice >= 0)
                    v->hover_lane = (int)v->t->lane_of[v->hover_slice];
            }
        }
    }
    return old_slice != v->hover_slice || old_counter != v->hover_counter || old_x != x ||
           old_y != y;
}

static int in_minimap(const viz_view_t *v, int x, int y)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    return y >= g.minimap_y && y < g.minimap_y + g.minimap_h && x >= g.track_x &&
           x < g.track_x + g.track_w;
}

static int in_scrollbar(const viz_view_t *v, int x, int y)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    return x >= g.track_x + g.track_w && y >= g.lanes_y && y < g.lanes_y + g.lanes_h;
}

/* Centre the window on the time at minimap x. */
static void minimap_jump(viz_view_t *v, int x)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    double a = (double)v->t->t_min, b = (double)v->t->t_max;
    double at = a + (double)(x - g.track_x) * (b - a) / g.track_w;
    double span = v->t1 - v->t0;
    v->t0 = at - span / 2;
    v->t1 = at + span / 2;
    clamp_window(v);
}

static void scrollbar_jump(viz_view_t *v, int y)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (v->content_h <= g.lanes_h || g.lanes_h <= 0)
        return;
    v->scroll = (int)((double)(y - g.lanes_y) * v->content_h / g.lanes_h - g.lanes_h / 2.0);
    clamp_scroll(v);
}

int viz_view_mouse_down(viz_view_t *v, int x, int y, int button, unsigned mods)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    v->down_x = x;
    v->down_y = y;
    v->moved = 0;
    v->down_mods = mods;
    v->drag_button = button;
    v->drag_t0 = v->t0;
    v->drag_t1 = v->t1;
    v->drag_scroll = v->scroll;
    v->drag = VIZ_DRAG_NONE;
    if (v->help)
        return 0;
    if (in_minimap(v, x, y) && button == VIZ_BUTTON_LEFT) {
        v->drag = VIZ_DRAG_MINIMAP;
        minimap_jump(v, x);
        return 1;
    }
    if (in_scrollbar(v, x, y)) {
        v->drag = VIZ_DRAG_SCROLLBAR;
        scrollbar_jump(v, y);
        return 1;
    }
    int in_track = x >= g.track_x && x < g.track_x + g.track_w && y >= g.axis_y &&
                   y < g.lanes_y + g.lanes_h;
    if (!in_track)
        return 0;
    if (button == VIZ_BUTTON_RIGHT || (button == VIZ_BUTTON_LEFT && (mods & VIZ_MOD_SHIFT))) {
        v->drag = VIZ_DRAG_RANGE;
        v->range_on = 1;
        v->range_a = v->range_b = viz_view_time_of_x(v, x);
        return 1;
    }
    if (button == VIZ_BUTTON_LEFT || button == VIZ_BUTTON_MIDDLE)
        v->drag = VIZ_DRAG_PAN;
    return 0;
}

int viz_view_mouse_move(viz_view_t *v, int x, int y, unsigned mods)
{
    (void)mods;
    int changed = viz_view_hover(v, x, y);
    if (v->drag == VIZ_DRAG_NONE)
        return changed;
    if (abs(x - v->down_x) + abs(y - v->down_y) > 3)
        v->moved = 1;
    viz_geom_t g;
    viz_view_geom(v, &g);
    switch (v->drag) {
    case VIZ_DRAG_PAN: {
        double dt = (double)(x - v->down_x) * (v->drag_t1 - v->drag_t0) / g.track_w;
        v->t0 = v->drag_t0 - dt;
        v->t1 = v->drag_t1 - dt;
        clamp_window(v);
        v->scroll = v->drag_scroll - (y - v->down_y);
        clamp_scroll(v);
        break;
    }
    case VIZ_DRAG_RANGE: {
        int cx = x < g.track_x ? g.track_x : x > g.track_x + g.track_w ? g.track_x + g.track_w : x;
        v->range_b = viz_view_time_of_x(v, cx);
        break;
    }
    case VIZ_DRAG_MINIMAP: minimap_jump(v, x); break;
    case VIZ_DRAG_SCROLLBAR: scrollbar_jump(v, y); break;
    default: break;
    }
    return 1;
}

int viz_view_mouse_up(viz_view_t *v, int x, int y, int button, unsigned mods)
{
    int drag = v->drag;
    v->drag = VIZ_DRAG_NONE;
    if (v->help) {
        v->help = 0;
        return 1;
    }
    if (drag == VIZ_DRAG_RANGE) {
        if (!v->moved) {
            v->range_on = 0;
            return 1;
        }
        if (v->range_a > v->range_b) {
            double a = v->range_a;
            v->range_a = v->range_b;
            v->range_b = a;
        }
        if (button == VIZ_BUTTON_RIGHT) {
            /* right-drag: zoom straight to what was swept */
            set_range_window(v, v->range_a, v->range_b);
            v->range_on = 0;
        }
        return 1;
    }
    if ((drag == VIZ_DRAG_PAN || drag == VIZ_DRAG_NONE) && !v->moved &&
        button == VIZ_BUTTON_LEFT)
        return viz_view_click(v, x, y, mods);
    return drag != VIZ_DRAG_NONE;
}

int viz_view_click(viz_view_t *v, int x, int y, unsigned mods)
{
    (void)mods;
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (v->help) {
        v->help = 0;
        return 1;
    }
    if (in_minimap(v, x, y)) {
        minimap_jump(v, x);
        return 1;
    }
    int row = row_at(v, y);
    if (row < 0)
        return 0;
    const viz_row_t *r = &v->rows[row];
    if (r->kind == VIZ_ROW_GROUP && (x < g.track_x || !v->groups[r->index].collapsed)) {
        v->groups[r->index].collapsed = !v->groups[r->index].collapsed;
        viz_view_layout(v);
        viz_view_hover(v, x, y);
        return 1;
    }
    if (x < g.track_x)
        return 0;
    long s = slice_under(v, x, y, row);
    long old = v->sel;
    v->sel = s;
    if (s < 0)
        v->range_on = 0;
    viz_view_hover(v, x, y);
    return old != s || s < 0;
}


int viz_view_wheel(viz_view_t *v, int x, int y, double dx, double dy, unsigned mods)
{
    if (v->help)
        return 0;
    int changed = 0;
    if (dy != 0) {
        if (mods & (VIZ_MOD_SHIFT | VIZ_MOD_CTRL)) {
            viz_view_scroll(v, (int)(-dy * 48));
        } else {
            viz_view_zoom(v, pow(1.25, dy), x);
        }
        changed = 1;
    }
    if (dx != 0) {
        viz_view_pan(v, dx * 40);
        changed = 1;
    }
    if (changed)
        viz_view_hover(v, x, y);
    return changed;
}

/* The next (dir > 0) or previous slice on the selected slice's lane. */
static void step_selection(viz_view_t *v, int dir)
{
    if (v->sel < 0)
        return;
    const viz_trace_t *t = v->t;
    int lane = (int)t->lane_of[v->sel];
    long k = v->sel - (long)t->lanes[lane].first + dir;
    if (k >= 0 && (size_t)k < t->lanes[lane].count)
        viz_view_select(v, lane, k);
}

static int key_typing(viz_view_t *v, viz_key_t key, int ch)
{
    switch (key) {
    case VIZ_KEY_ESCAPE:
        v->typing = 0;
        v->message[0] = 0;
        return 1;
    case VIZ_KEY_ENTER:
        v->typing = 0;
        v->query[v->qlen] = 0;
        viz_view_search(v, v->query);
        return 1;
    case VIZ_KEY_BACKSPACE:
        if (v->qlen)
            v->query[--v->qlen] = 0;
        else
            v->typing = 0;
        return 1;
    case VIZ_KEY_CHAR:
        if (ch >= 32 && ch < 127 && v->qlen + 1 < sizeof v->query) {
            v->query[v->qlen++] = (char)ch;
            v->query[v->qlen] = 0;
        }
        return 1;
    default: return 0;
    }
}

/* Zoom about the pointer when it is over the lanes, else about the middle. */
static int zoom_anchor(const viz_view_t *v)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (v->mouse_in && v->mouse_x >= g.track_x && v->mouse_x < g.track_x + g.track_w &&
        v->mouse_y >= g.minimap_y && v->mouse_y < g.status_y)
        return v->mouse_x;
    return -1;
}

int viz_view_key(viz_view_t *v, viz_key_t key, int ch, unsigned mods)
{
    viz_geom_t g;
    viz_view_geom(v, &g);
    if (v->typing)
        return key_typing(v, key, ch);
    double pan = mods & VIZ_MOD_SHIFT ? 0.5 : 0.1;
    int handled = 1;
    switch (key) {
    case VIZ_KEY_ESCAPE:
        if (v->help)
            v->help = 0;
        else if (v->range_on)
            v->range_on = 0;
        else if (v->sel >= 0)
            v->sel = -1;
        else if (v->nmatches) {
            free(v->matches);
            v->matches = NULL;
            v->nmatches = 0;
            free(v->is_match);
            v->is_match = NULL;
            v->message[0] = 0;
        } else
            v->quit = 1;
        break;
    case VIZ_KEY_F1: v->help = !v->help; break;
    case VIZ_KEY_LEFT: viz_view_pan(v, -pan * g.track_w); break;
    case VIZ_KEY_RIGHT: viz_view_pan(v, pan * g.track_w); break;
    case VIZ_KEY_UP: viz_view_scroll(v, -(mods & VIZ_MOD_SHIFT ? g.lanes_h / 2 : 40)); break;
    case VIZ_KEY_DOWN: viz_view_scroll(v, mods & VIZ_MOD_SHIFT ? g.lanes_h / 2 : 40); break;
    case VIZ_KEY_PAGE_UP: viz_view_scroll(v, -(g.lanes_h - 40)); break;
    case VIZ_KEY_PAGE_DOWN: viz_view_scroll(v, g.lanes_h - 40); break;
    case VIZ_KEY_HOME: {
        double span = v->t1 - v->t0, a, b;
        full_range(v, &a, &b);
        viz_view_set_window(v, a, a + span);
        break;
    }
    case VIZ_KEY_END: {
        double span = v->t1 - v->t0, a, b;
        full_range(v, &a, &b);
        viz_view_set_window(v, b - span, b);
        break;
    }
    case VIZ_KEY_ENTER:
        if (v->range_on)
            zoom_to_selection(v);
        else
            handled = 0;
        break;
    case VIZ_KEY_CHAR:
        switch (ch) {
        case 'q': v->quit = 1; break;
        case '?':
        case 'h': v->help = !v->help; break;
        case '+':
        case '=':
        case 'w':
        case 'W': viz_view_zoom(v, ch == 'W' ? 4.0 : 1.5, zoom_anchor(v)); break;
        case '-':
        case '_':
        case 's':
        case 'S': viz_view_zoom(v, 1 / (ch == 'S' ? 4.0 : 1.5), zoom_anchor(v)); break;
        case 'a': viz_view_pan(v, -pan * g.track_w); break;
        case 'd': viz_view_pan(v, pan * g.track_w); break;
        case 'A': viz_view_pan(v, -0.5 * g.track_w); break;
        case 'D': viz_view_pan(v, 0.5 * g.track_w); break;
        case '0': viz_view_fit(v); break;
        case 'f':
        case 'z': zoom_to_selection(v); break;
        case 'c':
            v->mode = (viz_colour_mode_t)((v->mode + 1) % VIZ_COLOUR_MODE_COUNT);
            snprintf(v->message, sizeof v->message, "colour by %s",
                     v->mode == VIZ_COLOUR_ENGINE ? "engine" : "stall cause");
            break;
        case '/':
            v->typing = 1;
            v->qlen = 0;
            v->query[0] = 0;
            break;
        case 'n':
            if (v->nmatches)
                goto_match(v, v->cur_match + 1);
            break;
        case 'N':
            if (v->nmatches)
                goto_match(v, v->cur_match + v->nmatches - 1);
            break;
        case '[': fold_all(v, 1); break;
        case ']': fold_all(v, 0); break;
        case '.': step_selection(v, 1); break;
        case ',': step_selection(v, -1); break;
        default: handled = 0; break;
        }
        break;
    default: handled = 0; break;
    }
    if (handled && v->mouse_in)
        viz_view_hover(v, v->mouse_x, v->mouse_y);
    return handled;
}
