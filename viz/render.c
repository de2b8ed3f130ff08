/*
 * render.c -- drawing a view with an SDL renderer.
 *
 * A frame costs what is visible, not what the trace holds: each lane binary-searches the
 * first slice that ends inside the window, then walks slices until the window's end. A slice
 * at least three pixels wide is drawn as its own box (border, label); narrower ones are
 * merged per pixel column into one box coloured by the class that covers most of the column
 * and shaded by how much of the column is busy, so a million instructions fitted to the
 * window draw as at most one box per pixel column per lane. Runs of equal merged boxes are
 * drawn as one rectangle.
 *
 * Text is the project's bitmap font (raster/font.c) uploaded once per renderer as a white glyph
 * atlas and tinted by colour modulation, so headless renders are pixel-identical everywhere.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdl_dyn.h"

#include "viz_internal.h"

struct viz_gfx {
    SDL_Renderer *r;
    SDL_Texture *font;
};

/* Palette of the frame around the lanes. */
#define RGB_BG VIZ_RGB_BACKGROUND
#define RGB_PANEL 0x24262du
#define RGB_LANE_A 0x202228u
#define RGB_LANE_B 0x1c1e23u
#define RGB_GROUP 0x2a2d35u
#define RGB_GROUP_SUB 0x262930u
#define RGB_GRID 0x2f323au
#define RGB_LINE 0x3a3e48u
#define RGB_TEXT 0xd8dbe2u
#define RGB_TEXT_DIM 0x8b919du
#define RGB_TEXT_DARK 0x15171bu
#define RGB_ACCENT 0x6cb6ffu
#define RGB_MATCH 0xffd84du
#define RGB_FLOW_DMA 0x5fd3f3u
#define RGB_FLOW_OTHER 0xb8c0ccu
#define RGB_RANGE 0x6cb6ffu

viz_gfx_t *viz_gfx_create(SDL_Renderer *r)
{
    viz_gfx_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->r = r;
    int w = RST_GLYPH_COUNT * RST_FONT_W, h = RST_FONT_H;
    SDL_Surface *s = SDL_CreateRGBSurfaceWithFormat(0, w, h, 32, SDL_PIXELFORMAT_ARGB8888);
    if (!s) {
        free(g);
        return NULL;
    }
    SDL_LockSurface(s);
    for (int y = 0; y < h; y++)
        memset((uint8_t *)s->pixels + y * s->pitch, 0, (size_t)w * 4);
    for (unsigned c = 32; c < RST_GLYPH_COUNT; c++) {
        const uint8_t *rows = rst_font_glyph(c);
        for (int row = 0; row < RST_GLYPH_ROWS; row++)
            for (int col = 0; col < 5; col++)
                if (rows[row] >> (4 - col) & 1u) {
                    uint32_t *px = (uint32_t *)((uint8_t *)s->pixels +
                                                (row + RST_GLYPH_TOP) * s->pitch) +
                                   (int)c * RST_FONT_W + col;
                    *px = 0xffffffffu;
                }
    }
    SDL_UnlockSurface(s);
    g->font = SDL_CreateTextureFromSurface(r, s);
    SDL_FreeSurface(s);
    if (!g->font) {
        free(g);
        return NULL;
    }
    SDL_SetTextureBlendMode(g->font, SDL_BLENDMODE_BLEND);
    return g;
}

void viz_gfx_free(viz_gfx_t *g)
{
    if (!g)
        return;
    if (g->font)
        SDL_DestroyTexture(g->font);
    free(g);
}

/* ---- primitives ------------------------------------------------------------------------------ */

static uint8_t ch_r(uint32_t c)
{
    return (uint8_t)(c >> 16);
}
static uint8_t ch_g(uint32_t c)
{
    return (uint8_t)(c >> 8);
}
static uint8_t ch_b(uint32_t c)
{
    return (uint8_t)c;
}

static uint32_t mix(uint32_t a, uint32_t b, double f)
{
    if (f <= 0)
        return a;
    if (f >= 1)
        return b;
    double r = ch_r(a) + (ch_r(b) - ch_r(a)) * f;
    double g = ch_g(a) + (ch_g(b) - ch_g(a)) * f;
    double bl = ch_b(a) + (ch_b(b) - ch_b(a)) * f;
    return (uint32_t)(r + 0.5) << 16 | (uint32_t)(g + 0.5) << 8 | (uint32_t)(bl + 0.5);
}

static int luminance(uint32_t c)
{
    return (ch_r(c) * 299 + ch_g(c) * 587 + ch_b(c) * 114) / 1000;
}

static void fill(viz_gfx_t *g, int x, int y, int w, int h, uint32_t rgb)
{
    if (w <= 0 || h <= 0)
        return;
    SDL_SetRenderDrawColor(g->r, ch_r(rgb), ch_g(rgb), ch_b(rgb), 255);
    SDL_Rect rc = {x, y, w, h};
    SDL_RenderFillRect(g->r, &rc);
}

static void fill_alpha(viz_gfx_t *g, int x, int y, int w, int h, uint32_t rgb, uint8_t a)
{
    if (w <= 0 || h <= 0)
        return;
    SDL_SetRenderDrawBlendMode(g->r, SDL_BLENDMODE_BLEND);
    SDL_SetRenderDrawColor(g->r, ch_r(rgb), ch_g(rgb), ch_b(rgb), a);
    SDL_Rect rc = {x, y, w, h};
    SDL_RenderFillRect(g->r, &rc);
    SDL_SetRenderDrawBlendMode(g->r, SDL_BLENDMODE_NONE);
}

static void outline(viz_gfx_t *g, int x, int y, int w, int h, uint32_t rgb, int thick)
{
    for (int k = 0; k < thick; k++) {
        fill(g, x + k, y + k, w - 2 * k, 1, rgb);
        fill(g, x + k, y + h - 1 - k, w - 2 * k, 1, rgb);
        fill(g, x + k, y + k, 1, h - 2 * k, rgb);
        fill(g, x + w - 1 - k, y + k, 1, h - 2 * k, rgb);
    }
}

/* Draw UTF-8 text with its cell's top-left at (x, y); returns the width drawn. */
static int text(viz_gfx_t *g, int x, int y, const char *s, uint32_t rgb)
{
    SDL_SetTextureColorMod(g->font, ch_r(rgb), ch_g(rgb), ch_b(rgb));
    int x0 = x;
    while (*s) {
        unsigned c = rst_font_decode(&s);
        if (c != ' ') {
            SDL_Rect src = {(int)c * RST_FONT_W, 0, RST_FONT_W, RST_FONT_H};
            SDL_Rect dst = {x, y, RST_FONT_W, RST_FONT_H};
            SDL_RenderCopy(g->r, g->font, &src, &dst);
        }
        x += RST_FONT_W;
    }
    return x - x0;
}

static int text_bold(viz_gfx_t *g, int x, int y, const char *s, uint32_t rgb)
{
    text(g, x + 1, y, s, rgb);
    return text(g, x, y, s, rgb) + 1;
}

/* Text cut to `width` pixels, ending in ".." when cut; returns the width drawn. */
static int text_fit(viz_gfx_t *g, int x, int y, const char *s, int width, uint32_t rgb)
{
    if (width < RST_FONT_W)
        return 0;
    if (rst_font_width(s) <= width)
        return text(g, x, y, s, rgb);
    char buf[256];
    size_t n = rst_font_fit(s, width - 2 * RST_FONT_W);
    if (n > sizeof buf - 3)
        n = sizeof buf - 3;
    memcpy(buf, s, n);
    memcpy(buf + n, "..", 3);
    return text(g, x, y, buf, rgb);
}

static void clip(viz_gfx_t *g, int x, int y, int w, int h)
{
    SDL_Rect rc = {x, y, w > 0 ? w : 0, h > 0 ? h : 0};
    SDL_RenderSetClipRect(g->r, &rc);
}

static void unclip(viz_gfx_t *g)
{
    SDL_RenderSetClipRect(g->r, NULL);
}

static void triangle(viz_gfx_t *g, float x1, float y1, float x2, float y2, float x3, float y3,
                     uint32_t rgb)
{
    SDL_Color c = {ch_r(rgb), ch_g(rgb), ch_b(rgb), 255};
    SDL_Vertex vtx[3] = {{{x1, y1}, c, {0, 0}}, {{x2, y2}, c, {0, 0}}, {{x3, y3}, c, {0, 0}}};
    SDL_RenderGeometry(g->r, NULL, vtx, 3, NULL, 0);
}

/* ---- lanes ----------------------------------------------------------------------------------- */

typedef struct lane_draw {
    viz_gfx_t *g;
    const viz_view_t *v;
    const viz_geom_t *geo;
    int y, h;      /* the box band */
    int labels;    /* draw names in wide boxes */
    int summary;   /* a folded group's row: several lanes overdraw one band */
    uint32_t bg;
    double busy_ps; /* time of the window covered by slices (own lanes only) */
    /* the pixel column being merged */
    int col;
    double cover[VIZ_CLASS_COUNT];
    double cover_sum;
    int col_match;
    /* the run of equal merged boxes being extended */
    int run_x0, run_x1;
    uint32_t run_rgb;
    int run_on;
    int mrun_x0, mrun_x1, mrun_on; /* the run of search-hit marks */
} lane_draw_t;

static void run_flush(lane_draw_t *d)
{
    if (!d->run_on)
        return;
    fill(d->g, d->geo->track_x + d->run_x0, d->y, d->run_x1 - d->run_x0, d->h, d->run_rgb);
    d->run_on = 0;
}

static void match_flush(lane_draw_t *d)
{
    if (!d->mrun_on)
        return;
    fill(d->g, d->geo->track_x + d->mrun_x0, d->y - 2, d->mrun_x1 - d->mrun_x0, 2, RGB_MATCH);
    d->mrun_on = 0;
}

static void run_add(lane_draw_t *d, int x0, int x1, uint32_t rgb)
{
    if (d->run_on && d->run_rgb == rgb && d->run_x1 >= x0) {
        if (x1 > d->run_x1)
            d->run_x1 = x1;
        return;
    }
    run_flush(d);
    d->run_on = 1;
    d->run_x0 = x0;
    d->run_x1 = x1;
    d->run_rgb = rgb;
}

/* Close the pixel column being merged: one box, the dominant class's colour faded toward
 * the background where the column is mostly idle (quantised so that runs merge). */
static void col_flush(lane_draw_t *d)
{
    if (d->col == INT32_MIN)
        return;
    unsigned best = 0;
    for (unsigned c = 1; c < VIZ_CLASS_COUNT; c++)
        if (d->cover[c] > d->cover[best])
            best = c;
    double density = d->cover_sum > 1 ? 1 : d->cover_sum;
    double q = ceil(density * 4 - 1e-6) / 4; /* 0.25, 0.5, 0.75, 1 */
    if (q < 0.25)
        q = 0.25;
    uint32_t rgb = mix(d->bg, viz_class_rgb(best), 0.45 + 0.55 * q);
    run_add(d, d->col, d->col + 1, rgb);
    if (d->col_match) { /* search hits: a mark above, merged into runs like the boxes */
        if (d->mrun_on && d->mrun_x1 == d->col) {
            d->mrun_x1++;
        } else {
            match_flush(d);
            d->mrun_on = 1;
            d->mrun_x0 = d->col;
            d->mrun_x1 = d->col + 1;
        }
    }
    memset(d->cover, 0, sizeof d->cover);
    d->cover_sum = 0;
    d->col_match = 0;
    d->col = INT32_MIN;
}

/* Account a narrow slice [xa, xb) (pixels from the track's left edge) to the columns it
 * touches, closing each column as the slices move past it. */
static void col_add(lane_draw_t *d, unsigned cls, double xa, double xb, int match)
{
    int tw = d->geo->track_w;
    if (xa < 0)
        xa = 0;
    if (xb > tw)
        xb = tw;
    if (xb <= xa)
        xb = xa + 0.05; /* zero-length slices still show */
    int c = (int)floor(xa);
    if (c >= tw)
        return;
    for (;;) {
        if (c != d->col) {
            col_flush(d);
            d->col = c;
        }
        double seg_end = xb < c + 1 ? xb : c + 1;
        double len = seg_end - (xa > c ? xa : c);
        d->cover[cls] += len;
        d->cover_sum += len;
        d->col_match |= match;
        if (xb <= c + 1 || c + 1 >= tw)
            break;
        c++;
    }
}

/*
 * Stall mode: how long slice s (starting at xa) waited, as a strip along the bottom of the
 * lane ending where it starts, in the colour of the cause, with a solid mark where the wait
 * began. Drawn for every slice whose wait spans 2 pixels, boxes and slices too short to
 * draw alike: zoomed out, a long wait before a tiny instruction still shows.
 */
static int draw_wait(lane_draw_t *d, size_t s, double xa)
{
    const viz_view_t *v = d->v;
    const viz_detail_t *det = &v->t->detail[s];
    if (v->mode != VIZ_COLOUR_STALL || !det->wait_ps || d->summary)
        return 0;
    int tw = d->geo->track_w;
    double px_ps = tw / (v->t1 - v->t0);
    double wa = xa - (double)det->wait_ps * px_ps;
    if (xa - wa < 2 || xa < 0 || wa > tw)
        return 0;
    int a = (int)floor(wa < -2 ? -2 : wa), b = (int)floor(xa > tw ? tw : xa);
    if (b <= a)
        return 0;
    uint32_t wc = viz_class_rgb(VIZ_CLASS_CAUSE + det->cause);
    fill(d->g, d->geo->track_x + a, d->y + d->h - 3, b - a, 3, mix(d->bg, wc, 0.7));
    fill(d->g, d->geo->track_x + a, d->y + d->h - 3, 1, 3, wc);
    return 1;
}

/* A slice wide enough to be its own box. */
static void draw_box(lane_draw_t *d, size_t s, double xa, double xb)
{
    const viz_view_t *v = d->v;
    const viz_trace_t *t = v->t;
    int tw = d->geo->track_w;
    double ca = xa < -2 ? -2 : xa, cb = xb > tw + 2 ? tw + 2 : xb;
    int x0 = (int)floor(ca), x1 = (int)floor(cb);
    if (x1 <= x0)
        x1 = x0 + 1;
    uint32_t rgb = viz_class_rgb(t->cls[v->mode][s]);
    int X = d->geo->track_x + x0, W = x1 - x0;
    fill(d->g, X, d->y, W, d->h, rgb);
    if (W >= 5) /* a darker edge tells back-to-back slices apart */
        fill(d->g, X, d->y, 1, d->h, mix(rgb, 0, 0.45));
    if (v->is_match && v->is_match[s])
        fill(d->g, X, d->y - 2, W, 2, RGB_MATCH);
    /* stall mode: how long it waited, as a strip before it */
    const viz_detail_t *det = &t->detail[s];
    draw_wait(d, s, xa);
    if (d->labels && W >= 4 * RST_FONT_W && d->h >= RST_FONT_H) {
        int vx0 = X < d->geo->track_x ? d->geo->track_x : X;
        int vx1 = X + W > d->geo->track_x + tw ? d->geo->track_x + tw : X + W;
        int room = vx1 - vx0 - 6;
        const char *name = viz_str(t, det->name);
        int nw = rst_font_width(name);
        /* a name cut to one letter says nothing: show it whole, or cut to at least four */
        if (room >= nw || room >= 6 * RST_FONT_W) {
            uint32_t tc = luminance(rgb) > 120 ? RGB_TEXT_DARK : RGB_TEXT;
            char buf[160];
            const char *label = name;
            if (room > nw + 10 * RST_FONT_W && det->operands) {
                snprintf(buf, sizeof buf, "%s %s", name, viz_str(t, det->operands));
                label = buf;
            }
            int lw = rst_font_width(label);
            int tx = vx0 + 3;
            if (lw < room) /* centred in the visible part, as profilers do */
                tx = vx0 + 3 + (room - lw) / 2;
            text_fit(d->g, tx, d->y + (d->h - RST_FONT_H) / 2, label, room, tc);
        }
    }
}

/* Draw the visible slices of one lane into the band [y, y + h). */
static void draw_lane_slices(lane_draw_t *d, int lane)
{
    const viz_view_t *v = d->v;
    const viz_trace_t *t = v->t;
    const viz_lane_t *l = &t->lanes[lane];
    double span = v->t1 - v->t0;
    double px_ps = d->geo->track_w / span; /* pixels per ps */
    const uint8_t *cls = t->cls[v->mode];
    size_t i = viz_lane_first_ending_after(t, l, v->t0);
    d->col = INT32_MIN;
    d->cover_sum = 0;
    d->col_match = 0;
    memset(d->cover, 0, sizeof d->cover);
    d->run_on = 0;
    d->mrun_on = 0;
    for (; i < l->count; i++) {
        size_t s = l->first + i;
        double a = (double)t->start[s], b = (double)t->end[s];
        if (a > v->t1)
            break;
        double ca = a < v->t0 ? v->t0 : a, cb = b > v->t1 ? v->t1 : b;
        if (cb > ca)
            d->busy_ps += cb - ca;
        double xa = (a - v->t0) * px_ps, xb = (b - v->t0) * px_ps;
        if (xb - xa >= 3.0) {
            col_flush(d);
            run_flush(d);
            draw_box(d, s, xa, xb);
            continue;
        }
        if (v->mode == VIZ_COLOUR_STALL && t->detail[s].wait_ps && !d->summary &&
            (double)t->detail[s].wait_ps * px_ps >= 2) {
            /* its wait shows though the slice is too short to draw: close what is merged
             * so far (it ended before the wait began), then the strip */
            col_flush(d);
            run_flush(d);
            draw_wait(d, s, xa);
        }
        col_add(d, cls[s], xa, xb, v->is_match && v->is_match[s]);
    }
    col_flush(d);
    run_flush(d);
    match_flush(d);
}

/* A folded group's row: its lanes drawn over each other, last to first, so that engines
 * (listed first) stay on top of DMA queues and counters' groups. */
static void draw_summary(lane_draw_t *d, int g)
{
    const viz_group_t *grp = &d->v->groups[g];
    for (size_t i = grp->nitems; i-- > 0;) {
        const viz_item_t *it = &grp->items[i];
        if (it->kind == VIZ_ITEM_GROUP)
            draw_summary(d, it->index);
        else if (it->kind == VIZ_ITEM_LANE)
            draw_lane_slices(d, it->index);
    }
}

/* ---- counters -------------------------------------------------------------------------------- */

static uint32_t counter_rgb(const viz_counter_t *c)
{
    switch (c->kind) {
    case VIZ_CTR_HBM: return 0xe0679bu;
    case VIZ_CTR_SBUF: return 0x6cc070u;
    case VIZ_CTR_PSUM: return 0xe8c547u;
    case VIZ_CTR_DMA_BW: return 0x7aa2e3u;
    case VIZ_CTR_DMA_INFLIGHT: return 0x59b5c9u;
    case VIZ_CTR_LINK_BW: return 0xd4b84au;
    case VIZ_CTR_SEMAPHORE: return 0xa48de0u;
    default: return 0x9aa0a6u;
    }
}

/* Index of the last sample at or before t, -1 when none. */
static long counter_at(const viz_counter_t *c, double t)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((double)c->ts[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (long)lo - 1;
}

/* A step graph of the counter: per pixel column, the highest value the column saw (a peak
 * narrower than a pixel still shows), scaled to the counter's maximum over the run. */
static void draw_counter(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo, int ci, int y,
                         int h, uint32_t bg)
{
    const viz_trace_t *t = v->t;
    const viz_counter_t *c = &t->counters[ci];
    if (!c->n)
        return;
    uint32_t rgb = counter_rgb(c), fillc = mix(bg, rgb, 0.45);
    int top = y + 4, gh = h - 7, base = y + h - 3;
    double mx = c->max > 0 ? c->max : 1.0;
    double span = v->t1 - v->t0, ps_px = span / geo->track_w;
    long i = counter_at(c, v->t0);
    double last_t = (double)t->t_max;
    int run_x = 0, run_h = -1, prev_h = -1;
    for (int col = 0; col <= geo->track_w; col++) {
        int hh = -1;
        if (col < geo->track_w) {
            double ta = v->t0 + col * ps_px, tb = ta + ps_px;
            if (ta <= last_t && (i >= 0 || (c->n && (double)c->ts[0] < tb))) {
                double vmax = i >= 0 ? c->val[i] : 0.0;
                int any = i >= 0;
                while ((size_t)(i + 1) < c->n && (double)c->ts[i + 1] < tb) {
                    i++;
                    if (!any || c->val[i] > vmax)
                        vmax = c->val[i];
                    any = 1;
                }
                if (any) {
                    double f = vmax / mx;
                    if (f < 0)
                        f = 0;
                    hh = (int)floor(f * gh + 0.5);
                    if (vmax > 0 && hh < 1)
                        hh = 1;
                }
            }
        }
        if (hh != run_h || col == geo->track_w) {
            if (run_h >= 0 && col > run_x) {
                int X = geo->track_x + run_x;
                fill(g, X, base - run_h, col - run_x, run_h, fillc);
                fill(g, X, base - run_h, col - run_x, 1, rgb);
                if (prev_h >= 0 && prev_h != run_h) {
                    int a = base - (prev_h > run_h ? prev_h : run_h);
                    int b = base - (prev_h > run_h ? run_h : prev_h);
                    fill(g, X, a, 1, b - a + 1, rgb);
                }
            }
            prev_h = run_h;
            run_h = hh;
            run_x = col;
        }
    }
    (void)top;
}

/* ---- labels ---------------------------------------------------------------------------------- */

static const char *lane_label(const viz_trace_t *t, int lane)
{
    return viz_str(t, t->lanes[lane].name);
}

static void draw_row_label(viz_gfx_t *g, const viz_view_t *v, const viz_row_t *r, int y,
                           double busy_ps)
{
    const viz_trace_t *t = v->t;
    int x = 6 + r->depth * VIZ_INDENT;
    int ty = y + (r->h - RST_FONT_H) / 2;
    char buf[96];
    switch (r->kind) {
    case VIZ_ROW_GROUP: {
        const viz_group_t *grp = &v->groups[r->index];
        const char *tri = grp->collapsed ? "\xe2\x96\xb6" : "\xe2\x96\xbc";
        text(g, x, ty, tri, RGB_TEXT_DIM);
        if (grp->depth == 0)
            text_bold(g, x + 10, ty, grp->label, RGB_TEXT);
        else
            text_fit(g, x + 10, ty, grp->label, VIZ_LABEL_W - x - 14, RGB_TEXT);
        break;
    }
    case VIZ_ROW_LANE: {
        const viz_lane_t *l = &t->lanes[r->index];
        fill(g, x, y + 3, 3, r->h - 6, viz_cat_rgb(l->cat));
        int room = VIZ_LABEL_W - x - 10;
        int used = text_fit(g, x + 8, ty, lane_label(t, r->index), room, RGB_TEXT);
        if (busy_ps >= 0 && v->t1 > v->t0) {
            snprintf(buf, sizeof buf, "%.0f%%", 100.0 * busy_ps / (v->t1 - v->t0));
            int bw = rst_font_width(buf);
            if (x + 8 + used + RST_FONT_W + bw <= VIZ_LABEL_W - 6)
                text(g, VIZ_LABEL_W - 6 - bw, ty, buf, RGB_TEXT_DIM);
        }
        break;
    }
    case VIZ_ROW_COUNTER: {
        const viz_counter_t *c = &t->counters[r->index];
        fill(g, x, y + 4, 3, r->h - 8, counter_rgb(c));
        const char *name = viz_str(t, c->name);
        text_fit(g, x + 8, y + 4, name, VIZ_LABEL_W - x - 12, RGB_TEXT);
        char val[64];
        viz_fmt_value(val, sizeof val, c->max, viz_str(t, c->unit));
        snprintf(buf, sizeof buf, "max %s", val);
        text_fit(g, x + 8, y + 4 + RST_FONT_H + 2, buf, VIZ_LABEL_W - x - 12, RGB_TEXT_DIM);
        break;
    }
    default: break;
    }
}

/* ---- the lane area --------------------------------------------------------------------------- */

static void draw_grid(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo, int y, int h)
{
    double span = v->t1 - v->t0;
    double step = viz_axis_step(span, geo->track_w, 110);
    double first = ceil(v->t0 / step) * step;
    int k = 0; /* the bound keeps a degenerate window (step lost in rounding) finite */
    for (double tt = first; tt <= v->t1 && k < 4096; tt += step, k++) {
        int x = (int)floor(viz_view_x_of_time(v, tt));
        fill(g, x, y, 1, h, RGB_GRID);
    }
}

static void draw_lanes(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    const viz_trace_t *t = v->t;
    clip(g, 0, geo->lanes_y, v->w, geo->lanes_h);
    int vis0 = v->scroll, vis1 = v->scroll + geo->lanes_h;
    size_t first = 0;
    {
        size_t lo = 0, hi = v->nrows;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (v->rows[mid].y + v->rows[mid].h <= vis0)
                lo = mid + 1;
            else
                hi = mid;
        }
        first = lo;
    }
    for (size_t ri = first; ri < v->nrows && v->rows[ri].y < vis1; ri++) {
        const viz_row_t *r = &v->rows[ri];
        int y = geo->lanes_y + r->y - v->scroll;
        uint32_t bg;
        if (r->kind == VIZ_ROW_GROUP)
            bg = r->depth == 0 ? RGB_GROUP : RGB_GROUP_SUB;
        else
            bg = (ri & 1) ? RGB_LANE_A : RGB_LANE_B;
        fill(g, 0, y, geo->track_x + geo->track_w, r->h, bg);
        if ((int)ri == v->hover_row && r->kind != VIZ_ROW_GROUP)
            fill(g, 0, y, geo->track_x, r->h, mix(bg, 0xffffffu, 0.05));
        clip(g, geo->track_x, geo->lanes_y, geo->track_w, geo->lanes_h);
        if (!(r->kind == VIZ_ROW_GROUP && !v->groups[r->index].collapsed))
            draw_grid(g, v, geo, y, r->h);
        double busy = -1;
        lane_draw_t d;
        memset(&d, 0, sizeof d);
        d.g = g;
        d.v = v;
        d.geo = geo;
        d.bg = bg;
        if (r->kind == VIZ_ROW_LANE) {
            d.y = y + 3;
            d.h = r->h - 5;
            d.labels = 1;
            draw_lane_slices(&d, r->index);
            busy = d.busy_ps;
        } else if (r->kind == VIZ_ROW_GROUP && v->groups[r->index].collapsed) {
            d.y = y + 4;
            d.h = r->h - 7;
            d.summary = 1;
            draw_summary(&d, r->index);
        } else if (r->kind == VIZ_ROW_COUNTER) {
            draw_counter(g, v, geo, r->index, y, r->h, bg);
        }
        clip(g, 0, geo->lanes_y, v->w, geo->lanes_h);
        fill(g, 0, y + r->h - 1, geo->track_x + geo->track_w, 1,
             r->kind == VIZ_ROW_GROUP ? RGB_LINE : mix(bg, RGB_LINE, 0.5));
        clip(g, 0, geo->lanes_y, geo->track_x, geo->lanes_h);
        draw_row_label(g, v, r, y, busy);
        clip(g, 0, geo->lanes_y, v->w, geo->lanes_h);
    }
    /* the label column's edge */
    fill(g, geo->track_x - 1, geo->lanes_y, 1, geo->lanes_h, RGB_LINE);
    if (v->content_h < geo->lanes_h)
        fill(g, 0, geo->lanes_y + v->content_h - v->scroll, geo->track_x + geo->track_w,
             geo->lanes_h - v->content_h, RGB_BG);
    unclip(g);
    (void)t;
}

/* Screen rectangle of slice s: its row band and pixel extent (at least 3 pixels wide);
 * 0 when its lane has no row on screen. */
static int slice_rect(const viz_view_t *v, const viz_geom_t *geo, size_t s, SDL_Rect *rc,
                      int *clamped)
{
    const viz_trace_t *t = v->t;
    int row = v->lane_row[t->lane_of[s]];
    if (row < 0)
        return 0;
    const viz_row_t *r = &v->rows[row];
    int y = geo->lanes_y + r->y - v->scroll;
    *clamped = 0;
    if (y + r->h <= geo->lanes_y) {
        y = geo->lanes_y - r->h + 4;
        *clamped = 1;
    } else if (y >= geo->lanes_y + geo->lanes_h) {
        y = geo->lanes_y + geo->lanes_h - 4;
        *clamped = 1;
    }
    double xa = viz_view_x_of_time(v, (double)t->start[s]);
    double xb = viz_view_x_of_time(v, (double)t->end[s]);
    double lo = geo->track_x - 10.0, hi = geo->track_x + geo->track_w + 10.0;
    xa = xa < lo ? lo : xa > hi ? hi : xa;
    xb = xb < lo ? lo : xb > hi ? hi : xb;
    int x0 = (int)floor(xa), x1 = (int)floor(xb);
    if (x1 - x0 < 3) {
        int mid = (x0 + x1) / 2;
        x0 = mid - 1;
        x1 = mid + 2;
    }
    int inset = r->kind == VIZ_ROW_GROUP ? 4 : 3;
    rc->x = x0;
    rc->y = y + inset;
    rc->w = x1 - x0;
    rc->h = r->h - inset - 2;
    return 1;
}

/* ---- selection, flows, range, hover ---------------------------------------------------------- */

static void draw_flow(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo, const viz_flow_t *f)
{
    const viz_trace_t *t = v->t;
    SDL_Rect a, b;
    int ca, cb;
    if (!slice_rect(v, geo, f->from, &a, &ca) || !slice_rect(v, geo, f->to, &b, &cb))
        return;
    uint32_t rgb = f->cat == VIZ_FLOW_SEMAPHORE ? VIZ_RGB_FLOW_SEMAPHORE
                   : f->cat == VIZ_FLOW_DMA     ? RGB_FLOW_DMA
                                                : RGB_FLOW_OTHER;
    double x1 = viz_view_x_of_time(v, viz_flow_source_time(t, f->from));
    double x2 = b.x;
    double lo = geo->track_x - 40.0, hi = geo->track_x + geo->track_w + 40.0;
    x1 = x1 < lo ? lo : x1 > hi ? hi : x1;
    x2 = x2 < lo ? lo : x2 > hi ? hi : x2;
    double y1 = a.y + a.h / 2.0, y2 = b.y + b.h / 2.0;
    /* the other end's box, outlined in the flow's colour */
    size_t other = (long)f->from == v->sel ? f->to : f->from;
    SDL_Rect o;
    int co;
    if (slice_rect(v, geo, other, &o, &co) && !co)
        outline(g, o.x - 1, o.y - 1, o.w + 2, o.h + 2, rgb, 1);
    /* a cubic from the source's completion to the destination's start */
    double dx = fabs(x2 - x1) * 0.5 + 20;
    double cx1 = x1 + dx, cx2 = x2 - dx;
    if (fabs(y2 - y1) < 2) {
        cx1 = x1 + dx * 0.3;
        cx2 = x2 - dx * 0.3;
        y1 -= 0;
    }
    SDL_FPoint pts[33];
    for (int k = 0; k <= 32; k++) {
        double u = k / 32.0, w0 = (1 - u) * (1 - u) * (1 - u), w1 = 3 * (1 - u) * (1 - u) * u,
               w2 = 3 * (1 - u) * u * u, w3 = u * u * u;
        double bump = fabs(y2 - y1) < 2 ? -14 * 4 * u * (1 - u) : 0; /* same row: arch over */
        pts[k].x = (float)(w0 * x1 + w1 * cx1 + w2 * cx2 + w3 * x2);
        pts[k].y = (float)(w0 * y1 + w1 * y1 + w2 * y2 + w3 * y2 + bump);
    }
    SDL_SetRenderDrawColor(g->r, ch_r(rgb), ch_g(rgb), ch_b(rgb), 255);
    SDL_RenderDrawLinesF(g->r, pts, 33);
    for (int k = 0; k <= 32; k++)
        pts[k].y += 1;
    SDL_RenderDrawLinesF(g->r, pts, 33);
    /* arrowhead into the destination */
    float ex = (float)x2, ey = (float)y2;
    float px = pts[30].x, py = pts[30].y - 1;
    float ux = ex - px, uy = ey - py, len = sqrtf(ux * ux + uy * uy);
    if (len > 0.01f) {
        ux /= len;
        uy /= len;
        triangle(g, ex, ey, ex - 8 * ux - 4 * uy, ey - 8 * uy + 4 * ux, ex - 8 * ux + 4 * uy,
                 ey - 8 * uy - 4 * ux, rgb);
    }
    /* the semaphore's name by the arrowhead (flows leaving one slice for several rows
     * end on different rows, so their names do not collide) */
    const char *name = viz_str(t, f->name);
    if (*name) {
        int tw = rst_font_width(name);
        int mx = (int)ex - tw - 10, my = (int)ey - RST_FONT_H - 3;
        if (mx < geo->track_x + 2)
            mx = (int)ex + 6;
        fill_alpha(g, mx - 2, my, tw + 4, RST_FONT_H, 0x101216u, 210);
        text(g, mx, my, name, rgb);
    }
}

static void draw_selection(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    const viz_trace_t *t = v->t;
    clip(g, geo->track_x, geo->lanes_y, geo->track_w, geo->lanes_h);
    if (v->hover_slice >= 0 && v->hover_slice != v->sel) {
        SDL_Rect rc;
        int cl;
        if (slice_rect(v, geo, (size_t)v->hover_slice, &rc, &cl) && !cl)
            outline(g, rc.x, rc.y, rc.w, rc.h, 0xe8eaedu, 1);
    }
    if (v->sel >= 0) {
        size_t first, n = viz_trace_flows_of(t, (uint32_t)v->sel, 0, &first);
        for (size_t k = 0; k < n; k++)
            draw_flow(g, v, geo, &t->flows[t->flows_by_to[first + k]]);
        n = viz_trace_flows_of(t, (uint32_t)v->sel, 1, &first);
        for (size_t k = 0; k < n; k++)
            draw_flow(g, v, geo, &t->flows[t->flows_by_from[first + k]]);
        SDL_Rect rc;
        int cl;
        if (slice_rect(v, geo, (size_t)v->sel, &rc, &cl) && !cl) {
            outline(g, rc.x - 2, rc.y - 2, rc.w + 4, rc.h + 4, RGB_TEXT_DARK, 1);
            outline(g, rc.x - 1, rc.y - 1, rc.w + 2, rc.h + 2, VIZ_RGB_SELECTION, 2);
        }
    }
    unclip(g);
}

static void draw_range(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    if (!v->range_on)
        return;
    double a = v->range_a < v->range_b ? v->range_a : v->range_b;
    double b = v->range_a < v->range_b ? v->range_b : v->range_a;
    double xa = viz_view_x_of_time(v, a), xb = viz_view_x_of_time(v, b);
    double lo = geo->track_x, hi = geo->track_x + geo->track_w;
    xa = xa < lo ? lo : xa > hi ? hi : xa;
    xb = xb < lo ? lo : xb > hi ? hi : xb;
    int x0 = (int)floor(xa), x1 = (int)floor(xb);
    int y0 = geo->lanes_y, y1 = geo->lanes_y + geo->lanes_h;
    fill_alpha(g, x0, y0, x1 - x0, y1 - y0, RGB_RANGE, 40);
    fill(g, x0, y0, 1, y1 - y0, RGB_RANGE);
    fill(g, x1, y0, 1, y1 - y0, RGB_RANGE);
}

static void draw_cursor(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    if (!v->mouse_in || v->help || v->mouse_x < geo->track_x ||
        v->mouse_x >= geo->track_x + geo->track_w || v->mouse_y < geo->axis_y ||
        v->mouse_y >= geo->lanes_y + geo->lanes_h)
        return;
    fill_alpha(g, v->mouse_x, geo->axis_y, 1, geo->lanes_y + geo->lanes_h - geo->axis_y,
               0xffffffu, 70);
}

/* ---- axis, minimap, title, status ------------------------------------------------------------ */

/* The box on the axis that names a time: the pointer's, or a range's duration. Tick labels
 * under it are left out rather than drawn half-covered. */
typedef struct axis_box {
    int on, x, w;
    char text[64];
    uint32_t bg;
} axis_box_t;

static void axis_boxes(const viz_view_t *v, const viz_geom_t *geo, axis_box_t box[2])
{
    memset(box, 0, 2 * sizeof *box);
    if (v->mouse_in && !v->help && v->mouse_x >= geo->track_x &&
        v->mouse_x < geo->track_x + geo->track_w && v->mouse_y >= geo->axis_y &&
        v->mouse_y < geo->lanes_y + geo->lanes_h && !v->range_on) {
        viz_fmt_time(box[0].text, sizeof box[0].text, viz_view_time_of_x(v, v->mouse_x));
        box[0].w = rst_font_width(box[0].text) + 8;
        box[0].x = v->mouse_x - box[0].w / 2;
        box[0].bg = 0xe8eaedu;
        box[0].on = 1;
    }
    if (v->range_on) {
        double a = v->range_a < v->range_b ? v->range_a : v->range_b;
        double b = v->range_a < v->range_b ? v->range_b : v->range_a;
        char dur[48];
        viz_fmt_time(dur, sizeof dur, b - a);
        snprintf(box[1].text, sizeof box[1].text, "\xce\x94 %s", dur);
        double xa = viz_view_x_of_time(v, a), xb = viz_view_x_of_time(v, b);
        double lo = geo->track_x, hi = geo->track_x + geo->track_w;
        xa = xa < lo ? lo : xa > hi ? hi : xa;
        xb = xb < lo ? lo : xb > hi ? hi : xb;
        box[1].w = rst_font_width(box[1].text) + 8;
        box[1].x = (int)((xa + xb) / 2) - box[1].w / 2;
        box[1].bg = RGB_RANGE;
        box[1].on = 1;
    }
    for (int k = 0; k < 2; k++) {
        if (box[k].x < geo->track_x)
            box[k].x = geo->track_x;
        if (box[k].x + box[k].w > geo->track_x + geo->track_w)
            box[k].x = geo->track_x + geo->track_w - box[k].w;
    }
}

static void draw_axis(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    int y = geo->axis_y;
    fill(g, 0, y, v->w, VIZ_AXIS_H, RGB_PANEL);
    fill(g, 0, y + VIZ_AXIS_H - 1, v->w, 1, RGB_LINE);
    double span = v->t1 - v->t0;
    double step = viz_axis_step(span, geo->track_w, 110);
    double unit;
    const char *uname;
    int dec;
    viz_axis_unit(step, &unit, &uname, &dec);
    axis_box_t box[2];
    axis_boxes(v, geo, box);
    clip(g, geo->track_x, y, geo->track_w, VIZ_AXIS_H);
    double minor = step / 5;
    int nt = 0; /* bounded: a degenerate window must not loop forever */
    for (double tt = floor(v->t0 / minor) * minor; tt <= v->t1 && nt < 4096; tt += minor, nt++) {
        int x = (int)floor(viz_view_x_of_time(v, tt));
        fill(g, x, y + VIZ_AXIS_H - 4, 1, 3, RGB_TEXT_DIM);
    }
    nt = 0;
    for (double tt = floor(v->t0 / step) * step; tt <= v->t1 && nt < 4096; tt += step, nt++) {
        int x = (int)floor(viz_view_x_of_time(v, tt));
        fill(g, x, y + 3, 1, VIZ_AXIS_H - 4, RGB_TEXT_DIM);
        char buf[48];
        viz_fmt_time_fixed(buf, sizeof buf, tt, unit, dec, uname);
        int lx = x + 4, lw = rst_font_width(buf), covered = 0;
        for (int k = 0; k < 2; k++)
            covered |= box[k].on && lx < box[k].x + box[k].w + 4 && lx + lw > box[k].x - 4;
        if (!covered)
            text(g, lx, y + 3, buf, RGB_TEXT);
    }
    unclip(g);
    /* left of the axis: the window's span */
    char sp[48], buf[64];
    viz_fmt_time(sp, sizeof sp, span);
    snprintf(buf, sizeof buf, "span %s", sp);
    text_fit(g, 6, y + 5, buf, geo->track_x - 10, RGB_TEXT_DIM);
    for (int k = 0; k < 2; k++) {
        if (!box[k].on)
            continue;
        fill(g, box[k].x, y + 2, box[k].w, VIZ_AXIS_H - 4, box[k].bg);
        text(g, box[k].x + 4, y + (VIZ_AXIS_H - RST_FONT_H) / 2, box[k].text, RGB_TEXT_DARK);
    }
}

static void draw_minimap(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    const viz_trace_t *t = v->t;
    int y = geo->minimap_y, h = geo->minimap_h;
    fill(g, 0, y, v->w, h, 0x16181cu);
    fill(g, 0, y + h - 1, v->w, 1, RGB_LINE);
    unsigned cats[VIZ_CAT_COUNT], nc = 0;
    for (unsigned c = 0; c < VIZ_CAT_COUNT; c++)
        if (t->cat_lanes[c])
            cats[nc++] = c;
    text(g, 6, y + 4, "overview", RGB_TEXT_DIM);
    /* legend of the bands in the label column, two names a line */
    if (nc) {
        int band = (h - 6) / (int)nc;
        if (band > 10)
            band = 10;
        int y0 = y + 3 + (h - 6 - band * (int)nc) / 2;
        for (unsigned k = 0; k < nc; k++) {
            unsigned c = cats[k];
            const float *ov = t->overview[c];
            int prev_x = 0;
            uint32_t prev = 0xffffffffu;
            for (int col = 0; col <= geo->track_w; col++) {
                uint32_t rgb = prev;
                if (col < geo->track_w) {
                    size_t b0 = (size_t)col * VIZ_OVERVIEW_BUCKETS / (size_t)geo->track_w;
                    size_t b1 = (size_t)(col + 1) * VIZ_OVERVIEW_BUCKETS / (size_t)geo->track_w;
                    if (b1 <= b0)
                        b1 = b0 + 1;
                    double sum = 0;
                    for (size_t b = b0; b < b1 && b < VIZ_OVERVIEW_BUCKETS; b++)
                        sum += ov[b];
                    /* square root: a lightly used engine still shows */
                    double f = sqrt(sum / (double)(b1 - b0));
                    double q = floor(f * 8 + 0.5) / 8;
                    rgb = mix(0x16181cu, viz_cat_rgb(c), q == 0 && f > 0 ? 0.12 : q);
                }
                if (rgb != prev || col == geo->track_w) {
                    if (col > prev_x && prev != 0xffffffffu)
                        fill(g, geo->track_x + prev_x, y0 + (int)k * band, col - prev_x,
                             band - 1, prev);
                    prev = rgb;
                    prev_x = col;
                }
            }
        }
        /* band names */
        int lx = 6, ly = y + 4 + RST_FONT_H + 2;
        for (unsigned k = 0; k < nc; k++) {
            const char *name = viz_cat_name(cats[k]);
            int w = rst_font_width(name);
            if (lx + w > geo->track_x - 8) {
                lx = 6;
                ly += RST_FONT_H;
            }
            if (ly + RST_FONT_H > y + h)
                break;
            lx += text(g, lx, ly, name, viz_cat_rgb(cats[k])) + RST_FONT_W;
        }
    }
    /* search matches and the selection as ticks */
    double a = (double)t->t_min, b = (double)t->t_max;
    double ps_col = (b - a) / geo->track_w;
    if (v->nmatches) {
        size_t k = 0;
        for (int col = 0; col < geo->track_w && k < v->nmatches; col++) {
            double tb = a + (col + 1) * ps_col;
            if ((double)t->start[v->matches[k]] < tb) {
                fill(g, geo->track_x + col, y, 1, 4, RGB_MATCH);
                /* skip the rest of this column's matches */
                size_t lo = k, hi = v->nmatches;
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if ((double)t->start[v->matches[mid]] < tb)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                k = lo;
            }
        }
    }
    /* the visible window: the rest dimmed */
    double xa = geo->track_x + (v->t0 - a) / ps_col, xb = geo->track_x + (v->t1 - a) / ps_col;
    double lo = geo->track_x, hi = geo->track_x + geo->track_w;
    xa = xa < lo ? lo : xa > hi ? hi : xa;
    xb = xb < lo ? lo : xb > hi ? hi : xb;
    int x0 = (int)floor(xa), x1 = (int)ceil(xb);
    if (x1 - x0 < 2)
        x1 = x0 + 2;
    fill_alpha(g, geo->track_x, y, x0 - geo->track_x, h - 1, 0x000000u, 140);
    fill_alpha(g, x1, y, geo->track_x + geo->track_w - x1, h - 1, 0x000000u, 140);
    outline(g, x0, y, x1 - x0, h - 1, 0xc8ccd4u, 1);
    if (v->sel >= 0) {
        int sx = geo->track_x + (int)floor(((double)t->start[v->sel] - a) / ps_col);
        fill(g, sx, y, 1, h - 1, VIZ_RGB_SELECTION);
    }
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void draw_title(viz_gfx_t *g, const viz_view_t *v)
{
    const viz_trace_t *t = v->t;
    fill(g, 0, 0, v->w, VIZ_TITLE_H, RGB_PANEL);
    fill(g, 0, VIZ_TITLE_H - 1, v->w, 1, RGB_LINE);
    int x = 8, y = (VIZ_TITLE_H - RST_FONT_H) / 2;
    x += text_bold(g, x, y, "ncsim viz", RGB_ACCENT) + 2 * RST_FONT_W;
    char buf[512], n[32];
    const char *prog = viz_str(t, t->program);
    viz_fmt_count(n, sizeof n, t->nslices);
    if (t->runs == 2)
        snprintf(buf, sizeof buf, "A: %.200s  vs  B: %.200s", base_name(t->path),
                 base_name(t->path_b));
    else
        snprintf(buf, sizeof buf, "%s", *prog ? base_name(prog) : base_name(t->path));
    x += text_bold(g, x, y, buf, RGB_TEXT) + 2 * RST_FONT_W;
    int used = snprintf(buf, sizeof buf, "%s", *viz_str(t, t->arch) ? viz_str(t, t->arch) : "");
    if (t->chips)
        used += snprintf(buf + used, sizeof buf - (size_t)used, "%s%llu chip%s, %llu core%s",
                         used ? " \xc2\xb7 " : "", (unsigned long long)t->chips,
                         t->chips == 1 ? "" : "s", (unsigned long long)t->cores,
                         t->cores == 1 ? "" : "s");
    if (t->timing_only)
        used += snprintf(buf + used, sizeof buf - (size_t)used, " \xc2\xb7 timing-only");
    snprintf(buf + used, sizeof buf - (size_t)used, "%s%s slices", used ? " \xc2\xb7 " : "", n);
    /* the legend on the right; the description gets what is left */
    int lx = v->w - 8;
    char leg[VIZ_CAT_COUNT + VIZ_CAUSE_COUNT][40];
    uint32_t legc[VIZ_CAT_COUNT + VIZ_CAUSE_COUNT];
    int nl = 0;
    if (v->mode == VIZ_COLOUR_ENGINE) {
        for (unsigned c = 0; c < VIZ_CAT_COUNT; c++)
            if (t->cat_lanes[c]) {
                snprintf(leg[nl], sizeof leg[nl], "%s", viz_cat_name(c));
                legc[nl++] = viz_cat_rgb(c);
            }
    } else {
        for (unsigned c = 0; c < VIZ_CAUSE_COUNT; c++) {
            if (c == VIZ_CAUSE_OTHER)
                continue;
            snprintf(leg[nl], sizeof leg[nl], "%s", viz_cause_text(c));
            legc[nl++] = viz_class_rgb(VIZ_CLASS_CAUSE + c);
        }
    }
    int legw = 0;
    for (int k = 0; k < nl; k++)
        legw += 12 + rst_font_width(leg[k]) + 10;
    const char *mode = v->mode == VIZ_COLOUR_ENGINE ? "colour: engine (c)" : "colour: stall (c)";
    legw += rst_font_width(mode) + 12;
    lx -= legw;
    if (lx < x + 120) { /* narrow window: legend only if it fits after the title */
        text_fit(g, x, y, buf, v->w - x - 8, RGB_TEXT_DIM);
        return;
    }
    text_fit(g, x, y, buf, lx - x - 16, RGB_TEXT_DIM);
    lx += text(g, lx, y, mode, RGB_TEXT_DIM) + 12;
    for (int k = 0; k < nl; k++) {
        fill(g, lx, y + 2, 9, 8, legc[k]);
        lx += 12;
        lx += text(g, lx, y, leg[k], RGB_TEXT) + 10;
    }
}

static void draw_status(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    int y = geo->status_y;
    fill(g, 0, y, v->w, VIZ_STATUS_H, RGB_PANEL);
    fill(g, 0, y, v->w, 1, RGB_LINE);
    int ty = y + (VIZ_STATUS_H - RST_FONT_H) / 2 + 1;
    char right[160], a[48], b[48];
    viz_fmt_time(a, sizeof a, v->t0 < 0 ? 0 : v->t0);
    viz_fmt_time(b, sizeof b, v->t1);
    snprintf(right, sizeof right, "%s \xe2\x80\x93 %s    ? help", a, b);
    int rw = rst_font_width(right);
    text(g, v->w - rw - 8, ty, right, RGB_TEXT_DIM);
    int room = v->w - rw - 24;
    if (v->typing) {
        char q[160];
        snprintf(q, sizeof q, "/%s", v->query);
        int w = text(g, 8, ty, q, RGB_TEXT);
        fill(g, 8 + w + 1, ty + 1, 2, RST_FONT_H - 2, RGB_ACCENT);
        text_fit(g, 8 + w + 12, ty,
                 "mnemonic, operand text, stall cause or line number; Enter to find",
                 room - w - 12, RGB_TEXT_DIM);
    } else if (v->range_on && v->range_a != v->range_b) {
        char d[48], buf[160];
        viz_fmt_time(d, sizeof d, fabs(v->range_b - v->range_a));
        snprintf(buf, sizeof buf, "range %s  (f or Enter: zoom to it, Esc: clear)", d);
        text_fit(g, 8, ty, buf, room, RGB_RANGE);
    } else if (v->message[0]) {
        text_fit(g, 8, ty, v->message, room, RGB_MATCH);
    } else {
        text_fit(g, 8, ty,
                 "wheel/+/-: zoom   drag/arrows: pan   shift-drag: range   click: select   "
                 "/: search",
                 room, RGB_TEXT_DIM);
    }
}

static void draw_scrollbar(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    int x = geo->track_x + geo->track_w;
    fill(g, x, geo->lanes_y, VIZ_SCROLLBAR_W, geo->lanes_h, 0x191b1fu);
    if (v->content_h <= geo->lanes_h || geo->lanes_h <= 0)
        return;
    int th = (int)((double)geo->lanes_h * geo->lanes_h / v->content_h);
    if (th < 16)
        th = 16;
    int ty = geo->lanes_y + (int)((double)v->scroll * (geo->lanes_h - th) /
                                  (v->content_h - geo->lanes_h));
    fill(g, x + 2, ty, VIZ_SCROLLBAR_W - 4, th, 0x4a4f5au);
}

/* ---- tooltip and details --------------------------------------------------------------------- */

#define MAX_LINES 18

typedef struct lines {
    char text[MAX_LINES][200];
    uint32_t rgb[MAX_LINES];
    int bold[MAX_LINES];
    int n;
} lines_t;

static void add_line(lines_t *L, uint32_t rgb, int bold, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_line(lines_t *L, uint32_t rgb, int bold, const char *fmt, ...)
{
    if (L->n >= MAX_LINES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->text[L->n], sizeof L->text[L->n], fmt, ap);
    va_end(ap);
    L->rgb[L->n] = rgb;
    L->bold[L->n] = bold;
    L->n++;
}

/* A cost breakdown in lines of at most `width` characters: a new line at each "; " (the
 * formula's parts), then at spaces. */
static void add_wrapped(lines_t *L, uint32_t rgb, const char *text, size_t width)
{
    if (width >= sizeof L->text[0])
        width = sizeof L->text[0] - 1;
    const char *p = text;
    int first = 1;
    while (*p && L->n < MAX_LINES) {
        const char *part_end = strstr(p, "; ");
        size_t part = part_end ? (size_t)(part_end - p) : strlen(p);
        size_t take = part;
        if (take > width) {
            take = width;
            while (take > width / 2 && p[take] != ' ')
                take--;
            if (p[take] != ' ')
                take = width;
        }
        add_line(L, rgb, 0, "%s%.*s", first ? "cost: " : "  ", (int)take, p);
        first = 0;
        p += take;
        if (p == part_end)
            p += 2;
        while (*p == ' ')
            p++;
    }
}

static const char *lane_path(const viz_trace_t *t, int lane, char *buf, size_t n)
{
    const viz_lane_t *l = &t->lanes[lane];
    snprintf(buf, n, "%s \xc2\xb7 %s", viz_str(t, t->procs[l->process].name),
             viz_str(t, l->name));
    return buf;
}

/* What a slice is, in lines: used by the tooltip and the details panel. */
static void describe_slice(const viz_view_t *v, size_t s, lines_t *L, int details)
{
    const viz_trace_t *t = v->t;
    const viz_detail_t *d = &t->detail[s];
    char path[160], a[48], b[48], c[48];
    lane_path(t, (int)t->lane_of[s], path, sizeof path);
    const char *name = viz_str(t, d->name);
    uint32_t rgb = viz_class_rgb(t->cls[VIZ_COLOUR_ENGINE][s]);
    add_line(L, mix(rgb, 0xffffffu, 0.25), 1, "%s   %s", name, path);
    if (d->operands)
        add_line(L, RGB_TEXT, 0, "%s", viz_str(t, d->operands));
    viz_fmt_time(a, sizeof a, (double)t->start[s]);
    viz_fmt_time(b, sizeof b, (double)(t->end[s] - t->start[s]));
    char where[96] = "";
    if (d->line && d->kind != TRC_SLICE_LINK)
        snprintf(where, sizeof where, "line %u \xc2\xb7 #%llu \xc2\xb7 ", d->line,
                 (unsigned long long)d->index);
    else if (d->kind != TRC_SLICE_LINK)
        snprintf(where, sizeof where, "#%llu \xc2\xb7 ", (unsigned long long)d->index);
    add_line(L, RGB_TEXT, 0, "%sstart %s \xc2\xb7 duration %s", where, a, b);
    switch (d->kind) {
    case TRC_SLICE_INSTR:
        if (d->aux_ps) {
            viz_fmt_time(c, sizeof c, (double)d->aux_ps);
            viz_fmt_time(a, sizeof a, (double)(t->start[s] + d->aux_ps));
            add_line(L, RGB_TEXT_DIM, 0, "latency %s (results and posts at %s)", c, a);
        }
        if (d->wait_ps) {
            viz_fmt_time(c, sizeof c, (double)d->wait_ps);
            add_line(L, viz_class_rgb(VIZ_CLASS_CAUSE + d->cause), 0, "stalled %s before start: %s",
                     c, d->stall ? viz_str(t, d->stall) : viz_cause_text(d->cause));
        } else {
            add_line(L, RGB_TEXT_DIM, 0, "no stall: it started as soon as it was ready");
        }
        if (d->flops || d->bytes) {
            char f[40] = "", by[48] = "";
            if (d->flops)
                viz_fmt_count(f, sizeof f, d->flops);
            if (d->bytes)
                viz_fmt_value(by, sizeof by, (double)d->bytes, "bytes");
            add_line(L, RGB_TEXT_DIM, 0, "%s%s%s%s", d->flops ? f : "", d->flops ? " FLOPs" : "",
                     d->flops && d->bytes ? " \xc2\xb7 " : "", d->bytes ? by : "");
        }
        break;
    case TRC_SLICE_DMA: {
        viz_fmt_value(a, sizeof a, (double)d->bytes, "bytes");
        viz_fmt_time(c, sizeof c, (double)d->aux_ps);
        add_line(L, RGB_TEXT_DIM, 0, "%s at %.1f GB/s \xc2\xb7 queued %s \xc2\xb7 issued by %s", a,
                 (double)d->gbps, c, d->extra ? viz_str(t, d->extra) : "?");
        break;
    }
    case TRC_SLICE_LINK:
        viz_fmt_value(a, sizeof a, (double)d->bytes, "bytes");
        add_line(L, RGB_TEXT_DIM, 0, "%s chip %llu -> chip %llu at %.1f GB/s%s%s", a,
                 (unsigned long long)(d->flops >> 32), (unsigned long long)(d->flops & 0xffffffffu),
                 (double)d->gbps, d->extra ? " \xc2\xb7 " : "",
                 d->extra ? viz_str(t, d->extra) : "");
        break;
    case TRC_SLICE_COLLECTIVE:
        viz_fmt_value(a, sizeof a, (double)d->bytes, "bytes");
        add_line(L, RGB_TEXT_DIM, 0, "step %llu \xc2\xb7 %s%s%s", (unsigned long long)d->aux_ps, a,
                 d->extra ? " \xc2\xb7 group " : "", d->extra ? viz_str(t, d->extra) : "");
        break;
    default: break;
    }
    if (d->cost)
        add_wrapped(L, RGB_TEXT_DIM, viz_str(t, d->cost), details ? 120 : 80);
    /* flows: who released it, whom it releases */
    size_t first, n = viz_trace_flows_of(t, (uint32_t)s, 0, &first);
    size_t shown = 0, limit = details ? 2 : 3;
    for (size_t k = 0; k < n && shown < limit; k++, shown++) {
        const viz_flow_t *f = &t->flows[t->flows_by_to[first + k]];
        const viz_detail_t *o = &t->detail[f->from];
        viz_fmt_time(a, sizeof a, viz_flow_source_time(t, f->from));
        add_line(L, f->cat == VIZ_FLOW_SEMAPHORE ? VIZ_RGB_FLOW_SEMAPHORE : RGB_FLOW_DMA, 0,
                 "<- %s from %s %s (line %u) at %s", viz_str(t, f->name),
                 lane_path(t, (int)t->lane_of[f->from], path, sizeof path), viz_str(t, o->name),
                 o->line, a);
    }
    size_t n_out = viz_trace_flows_of(t, (uint32_t)s, 1, &first);
    for (size_t k = 0; k < n_out && shown < limit + 1; k++, shown++) {
        const viz_flow_t *f = &t->flows[t->flows_by_from[first + k]];
        const viz_detail_t *o = &t->detail[f->to];
        add_line(L, f->cat == VIZ_FLOW_SEMAPHORE ? VIZ_RGB_FLOW_SEMAPHORE : RGB_FLOW_DMA, 0,
                 "-> %s to %s %s (line %u)", viz_str(t, f->name),
                 lane_path(t, (int)t->lane_of[f->to], path, sizeof path), viz_str(t, o->name),
                 o->line);
    }
    if (n + n_out > shown)
        add_line(L, RGB_TEXT_DIM, 0, "(%zu more flows)", n + n_out - shown);
}

static void draw_box_lines(viz_gfx_t *g, int x, int y, int w, const lines_t *L)
{
    for (int k = 0; k < L->n; k++) {
        int ly = y + k * (RST_FONT_H + 2);
        if (L->bold[k])
            text_bold(g, x, ly, L->text[k], L->rgb[k]);
        else
            text_fit(g, x, ly, L->text[k], w, L->rgb[k]);
    }
}

static void draw_tooltip(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    if (!v->mouse_in || v->help || v->drag == VIZ_DRAG_PAN)
        return;
    const viz_trace_t *t = v->t;
    lines_t L;
    memset(&L, 0, sizeof L);
    if (v->hover_slice >= 0) {
        describe_slice(v, (size_t)v->hover_slice, &L, 0);
        /* how many slices share this pixel on the lane */
        double ps_px = (v->t1 - v->t0) / geo->track_w;
        double tm = viz_view_time_of_x(v, v->mouse_x);
        const viz_lane_t *l = &t->lanes[t->lane_of[v->hover_slice]];
        size_t a = viz_lane_first_ending_after(t, l, tm - ps_px / 2), b = a;
        while (b < l->count && (double)t->start[l->first + b] <= tm + ps_px / 2 && b - a < 100000)
            b++;
        if (b - a > 1) {
            char n[32];
            viz_fmt_count(n, sizeof n, b - a);
            add_line(&L, RGB_TEXT_DIM, 0, "%s slices share this pixel: zoom in to see each", n);
        }
    } else if (v->hover_counter >= 0) {
        const viz_counter_t *c = &t->counters[v->hover_counter];
        double tm = viz_view_time_of_x(v, v->mouse_x);
        long i = counter_at(c, tm);
        char val[64], at[48];
        viz_fmt_value(val, sizeof val, i >= 0 ? c->val[i] : 0.0, viz_str(t, c->unit));
        viz_fmt_time(at, sizeof at, tm);
        add_line(&L, counter_rgb(c), 1, "%s   %s", viz_str(t, c->name),
                 viz_str(t, t->procs[c->process].name));
        add_line(&L, RGB_TEXT, 0, "%s at %s", val, at);
        viz_fmt_value(val, sizeof val, c->max, viz_str(t, c->unit));
        add_line(&L, RGB_TEXT_DIM, 0, "maximum over the run %s", val);
    } else {
        return;
    }
    int w = 0;
    for (int k = 0; k < L.n; k++) {
        int lw = rst_font_width(L.text[k]) + (L.bold[k] ? 1 : 0);
        if (lw > w)
            w = lw;
    }
    int maxw = v->w - 40 < 560 ? v->w - 40 : 560;
    if (w > maxw)
        w = maxw;
    int bw = w + 16, bh = L.n * (RST_FONT_H + 2) + 12;
    int x = v->mouse_x + 16, y = v->mouse_y + 18;
    if (x + bw > v->w - 4)
        x = v->mouse_x - 12 - bw;
    if (x < 4)
        x = 4;
    if (y + bh > v->h - 4)
        y = v->mouse_y - 12 - bh;
    if (y < 4)
        y = 4;
    fill(g, x + 3, y + 3, bw, bh, 0x0c0d10u);
    fill(g, x, y, bw, bh, VIZ_RGB_TOOLTIP);
    outline(g, x, y, bw, bh, 0x4a4f5au, 1);
    draw_box_lines(g, x + 8, y + 7, w, &L);
}

static void draw_details(viz_gfx_t *g, const viz_view_t *v, const viz_geom_t *geo)
{
    if (v->sel < 0 || geo->details_h <= 0)
        return;
    int y = geo->details_y;
    fill(g, 0, y, v->w, geo->details_h, RGB_PANEL);
    fill(g, 0, y, v->w, 1, RGB_LINE);
    lines_t L;
    memset(&L, 0, sizeof L);
    describe_slice(v, (size_t)v->sel, &L, 1);
    int maxl = (geo->details_h - 8) / (RST_FONT_H + 2);
    if (L.n > maxl)
        L.n = maxl;
    text(g, 8, y + 6, "selected", RGB_TEXT_DIM);
    text(g, 8, y + 6 + RST_FONT_H + 2, "Esc: clear", RGB_TEXT_DIM);
    text(g, 8, y + 6 + 2 * (RST_FONT_H + 2), "f: zoom to it", RGB_TEXT_DIM);
    text(g, 8, y + 6 + 3 * (RST_FONT_H + 2), ", .: prev/next", RGB_TEXT_DIM);
    draw_box_lines(g, geo->track_x + 4, y + 6, v->w - geo->track_x - 12, &L);
}

/* ---- help ------------------------------------------------------------------------------------ */

static const char *const help_keys[][2] = {
    {"wheel, + / -, w / s", "zoom in / out about the pointer (W / S: faster)"},
    {"drag, arrows, a / d", "pan (shift: half a screen); up / down scroll lanes"},
    {"shift-wheel, PgUp/PgDn", "scroll the lanes"},
    {"0", "fit the whole trace"},
    {"shift-drag", "select a time range (shows its duration)"},
    {"right-drag", "zoom straight to the range swept"},
    {"f, z, Enter", "zoom to the range, else to the selected slice"},
    {"Home / End", "go to the start / end of the trace"},
    {"click", "select a slice: details, semaphore flows in and out"},
    {", / .", "previous / next slice on the selected lane"},
    {"click a group name", "fold / unfold a chip, core, DMA queues, semaphores"},
    {"[ / ]", "fold all / unfold all"},
    {"c", "colour by engine kind / by stall cause"},
    {"/ text Enter", "search mnemonic, operands, stall cause, or line N"},
    {"n / N", "next / previous match"},
    {"click the overview", "jump there"},
    {"Esc", "close help, clear range, selection, search; then quit"},
    {"q", "quit"},
    {"? or F1", "this help"},
};

static void draw_help(viz_gfx_t *g, const viz_view_t *v)
{
    if (!v->help)
        return;
    fill_alpha(g, 0, 0, v->w, v->h, 0x000000u, 150);
    size_t n = sizeof help_keys / sizeof help_keys[0];
    int kw = 0, dw = 0;
    for (size_t i = 0; i < n; i++) {
        int a = rst_font_width(help_keys[i][0]), b = rst_font_width(help_keys[i][1]);
        if (a > kw)
            kw = a;
        if (b > dw)
            dw = b;
    }
    int lh = RST_FONT_H + 4;
    int bw = kw + dw + 24 + 32, bh = (int)n * lh + 52;
    int x = (v->w - bw) / 2, y = (v->h - bh) / 2;
    if (x < 4)
        x = 4;
    if (y < 4)
        y = 4;
    fill(g, x, y, bw, bh, VIZ_RGB_TOOLTIP);
    outline(g, x, y, bw, bh, RGB_ACCENT, 1);
    text_bold(g, x + 16, y + 10, "ncsim viz: keys and mouse", RGB_ACCENT);
    text(g, x + bw - 16 - rst_font_width("any key closes"), y + 10, "any key closes",
         RGB_TEXT_DIM);
    for (size_t i = 0; i < n; i++) {
        int ly = y + 34 + (int)i * lh;
        text(g, x + 16, ly, help_keys[i][0], RGB_MATCH);
        text(g, x + 16 + kw + 24, ly, help_keys[i][1], RGB_TEXT);
    }
}

/* ---- the frame ------------------------------------------------------------------------------- */

void viz_render(viz_gfx_t *g, const viz_view_t *v)
{
    viz_geom_t geo;
    viz_view_geom(v, &geo);
    SDL_SetRenderDrawBlendMode(g->r, SDL_BLENDMODE_NONE);
    unclip(g);
    SDL_SetRenderDrawColor(g->r, ch_r(RGB_BG), ch_g(RGB_BG), ch_b(RGB_BG), 255);
    SDL_RenderClear(g->r);
    draw_lanes(g, v, &geo);
    draw_selection(g, v, &geo);
    draw_cursor(g, v, &geo);
    draw_range(g, v, &geo);
    draw_axis(g, v, &geo);
    draw_minimap(g, v, &geo);
    draw_title(g, v);
    draw_scrollbar(g, v, &geo);
    draw_details(g, v, &geo);
    draw_status(g, v, &geo);
    draw_tooltip(g, v, &geo);
    draw_help(g, v);
}
