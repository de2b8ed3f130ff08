/*
 * sweep_plot.c -- Y against X from a sweep CSV, as a PNG: axes with "nice" ticks (1, 2, 5 x
 * 10^k), a light grid, one coloured line with markers per series, a legend, labels in the
 * project's bitmap font drawn at twice its size (raster/: the viewer's font and PNG writer).
 * No graphics library is involved, so the picture is the same on every machine.
 */
#include "sweep_plot.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raster.h"
#include "util.h"

/* Text: the project's bitmap font (raster/font.c) drawn at twice its size. */
enum { GLYPH_H = 7, CELL_H = RST_GLYPH_ROWS, ADVANCE = RST_FONT_W, SCALE = 2 };

typedef rst_rgb_t rgb_t;

static int text_width(const char *s)
{
    return rst_text_width(s, SCALE);
}

static void draw_text(rst_image_t *c, int x, int y, const char *s, rgb_t col, int vertical)
{
    rst_text(c, x, y, s, col, SCALE, vertical);
}

/* ---- CSV ---------------------------------------------------------------------------------- */

typedef struct csv {
    size_t ncols, nrows;
    char **cells; /* (nrows + 1) x ncols, row 0 the header */
} csv_t;

static void csv_free(csv_t *t)
{
    for (size_t i = 0; i < (t->nrows + 1) * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
}

/* RFC 4180: fields separated by commas, optionally in double quotes ("" is a quote). */
static ncsim_status_t csv_parse(const char *text, const char *name, csv_t *t, char *err,
                                size_t errlen)
{
    memset(t, 0, sizeof *t);
    size_t cap = 0, n = 0, row_fields = 0, line = 1;
    const char *p = text;
    char *field = NULL;
    size_t flen = 0, fcap = 0;
    while (*p) {
        int quoted = 0;
        flen = 0;
        if (*p == '"') {
            quoted = 1;
            p++;
        }
        for (;;) {
            char ch = *p;
            if (quoted) {
                if (!ch) {
                    xp_errf(err, errlen, "%s:%zu: unterminated quoted field", name, line);
                    goto bad;
                }
                if (ch == '"' && p[1] == '"') {
                    p += 2;
                } else if (ch == '"') {
                    p++;
                    quoted = 0;
                    continue;
                } else {
                    p++;
                }
                if (ch == '\n')
                    line++;
            } else {
                if (!ch || ch == ',' || ch == '\n' || ch == '\r')
                    break;
                p++;
            }
            if (flen + 2 > fcap) {
                fcap = fcap ? fcap * 2 : 64;
                char *f = realloc(field, fcap);
                if (!f)
                    goto nomem;
                field = f;
            }
            field[flen++] = ch;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **cells = realloc(t->cells, cap * sizeof *cells);
            if (!cells)
                goto nomem;
            t->cells = cells;
        }
        char *cell = malloc(flen + 1);
        if (!cell)
            goto nomem;
        if (flen)
            memcpy(cell, field, flen);
        cell[flen] = 0;
        t->cells[n++] = cell;
        row_fields++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '\r')
            p++;
        if (*p == '\n')
            p++;
        /* end of a row */
        if (!t->ncols)
            t->ncols = row_fields;
        else if (row_fields != t->ncols) {
            xp_errf(err, errlen, "%s:%zu: %zu fields, the header has %zu", name, line, row_fields,
                     t->ncols);
            goto bad;
        } else
            t->nrows++;
        row_fields = 0;
        line++;
    }
    if (row_fields) {
        xp_errf(err, errlen, "%s: incomplete last row", name);
        goto bad;
    }
    free(field);
    if (!t->ncols) {
        xp_errf(err, errlen, "%s: empty CSV", name);
        csv_free(t);
        return NCSIM_USAGE;
    }
    return NCSIM_OK;
nomem:
    free(field);
    t->nrows = 0;
    for (size_t i = 0; i < n; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
    xp_errf(err, errlen, "out of memory");
    return NCSIM_NOMEM;
bad:
    free(field);
    for (size_t i = 0; i < n; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
    return NCSIM_USAGE;
}

static const char *cell(const csv_t *t, size_t row, size_t col)
{
    return t->cells[row * t->ncols + col];
}

static long find_col(const csv_t *t, const char *name)
{
    for (size_t c = 0; c < t->ncols; c++)
        if (strcmp(cell(t, 0, c), name) == 0)
            return (long)c;
    return -1;
}

/* ---- axes --------------------------------------------------------------------------------- */

typedef struct axis {
    int log;
    double lo, hi;        /* data range shown (log axes: log10 of it) */
    double ticks[64];
    int nticks;
    double step;          /* linear tick step */
    int exp3;             /* labels are value / 10^exp3 (0: none) */
} axis_t;

/* 1, 2 or 5 x 10^k, the smallest not below x. */
static double nice_step(double x)
{
    double e = pow(10.0, floor(log10(x)));
    double f = x / e;
    return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * e;
}

static void axis_fit(axis_t *a, double mn, double mx, int want)
{
    a->nticks = 0;
    a->exp3 = 0;
    if (a->log) {
        double l0 = log10(mn), l1 = log10(mx);
        if (l1 - l0 < 1e-9) {
            l0 -= 0.5;
            l1 += 0.5;
        }
        double pad = (l1 - l0) * 0.05;
        a->lo = l0 - pad;
        a->hi = l1 + pad;
        /* ticks at 1..9 x 10^k within about a decade, 1, 2, 5 x 10^k within a few, else at
         * powers of ten (labels that would overlap are left out when drawing) */
        static const double all[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, some[] = {1, 2, 5};
        double span = a->hi - a->lo;
        const double *mant = span < 1.3 ? all : some;
        int nm = span < 1.3 ? 9 : span < 2.5 ? 3 : 1;
        for (int k = (int)floor(a->lo); k <= (int)ceil(a->hi) && a->nticks < 64; k++) {
            for (int m = 0; m < nm && a->nticks < 64; m++) {
                double v = mant[m] * pow(10.0, k);
                double lv = log10(v);
                if (lv >= a->lo - 1e-12 && lv <= a->hi + 1e-12)
                    a->ticks[a->nticks++] = v;
            }
        }
        return;
    }
    if (mx - mn < 1e-12 * (fabs(mx) + 1.0)) {
        double d = fabs(mx) > 0 ? fabs(mx) * 0.1 : 1.0;
        mn -= d;
        mx += d;
    }
    a->step = nice_step((mx - mn) / want);
    a->lo = floor(mn / a->step) * a->step;
    a->hi = ceil(mx / a->step) * a->step;
    for (double v = a->lo; v <= a->hi + a->step * 0.5 && a->nticks < 64; v += a->step)
        a->ticks[a->nticks++] = fabs(v) < a->step * 1e-9 ? 0.0 : v;
    double big = fmax(fabs(a->lo), fabs(a->hi));
    if (big >= 1e5)
        a->exp3 = (int)floor(log10(big) / 3.0) * 3;
}

static double axis_pos(const axis_t *a, double v)
{
    double t = a->log ? log10(v) : v;
    return (t - a->lo) / (a->hi - a->lo);
}

static void tick_label(const axis_t *a, double v, char *buf, size_t len)
{
    if (a->log) {
        snprintf(buf, len, "%g", v);
        return;
    }
    double scale = pow(10.0, a->exp3);
    double s = a->step / scale;
    int dec = s >= 1.0 ? 0 : (int)ceil(-log10(s) - 1e-9);
    if (dec > 9)
        dec = 9;
    snprintf(buf, len, "%.*f", dec, v / scale);
}

/* ---- the plot ----------------------------------------------------------------------------- */

typedef struct series {
    char *label;
    size_t n, cap;
    double *x; /* pairs (x, y) */
} series_t;

static const rgb_t palette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                {188, 189, 34},  {23, 190, 207}};

static int cmp_x(const void *a, const void *b)
{
    const double *p = a, *q = b;
    return (p[0] > q[0]) - (p[0] < q[0]);
}

ncsim_status_t sim_plot_parse(char *text, sim_plot_options_t *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ",")) {
        if (strncmp(tok, "X=", 2) == 0 || strncmp(tok, "x=", 2) == 0)
            o->x = tok + 2;
        else if (strncmp(tok, "Y=", 2) == 0 || strncmp(tok, "y=", 2) == 0)
            o->y = tok + 2;
        else if (strcmp(tok, "logx") == 0)
            o->log_x = 1;
        else if (strcmp(tok, "logy") == 0)
            o->log_y = 1;
        else {
            xp_errf(err, errlen, "unknown part '%s' (want X=KEY,Y=COLUMN[,logx][,logy])", tok);
            return NCSIM_USAGE;
        }
    }
    if (!o->x || !o->y || !*o->x || !*o->y) {
        xp_errf(err, errlen, "want X=KEY,Y=COLUMN[,logx][,logy]");
        return NCSIM_USAGE;
    }
    return NCSIM_OK;
}

static int parse_number(const char *s, double *v)
{
    char *end;
    if (!*s)
        return -1;
    *v = strtod(s, &end);
    return *end || !isfinite(*v) ? -1 : 0;
}


ncsim_status_t sim_plot_csv(const char *csv_path, const sim_plot_options_t *o,
                            const char *png_path, char *err, size_t errlen)
{
    size_t len;
    char *text = xp_read_file(csv_path, &len);
    if (!text) {
        xp_errf(err, errlen, "%s: %s", csv_path, strerror(errno));
        return NCSIM_IO;
    }
    csv_t t;
    ncsim_status_t st = csv_parse(text, csv_path, &t, err, errlen);
    free(text);
    if (st != NCSIM_OK)
        return st;
    long xc = find_col(&t, o->x), yc = find_col(&t, o->y), sc = find_col(&t, "status");
    long first_result = find_col(&t, "total_ns");
    series_t *ser = NULL;
    size_t nser = 0;
    rst_image_t cv = {0, 0, NULL};
    if (xc < 0 || yc < 0) {
        xp_errf(err, errlen, "%s has no column '%s'", csv_path, xc < 0 ? o->x : o->y);
        st = NCSIM_USAGE;
        goto out;
    }
    /* rows -> series keyed by the other swept keys (the columns before total_ns) */
    ser = calloc(t.nrows + 1, sizeof *ser);
    if (!ser)
        goto nomem;
    for (size_t r = 1; r <= t.nrows; r++) {
        if (sc >= 0 && strcmp(cell(&t, r, (size_t)sc), "ok") != 0)
            continue;
        double x, y;
        if (parse_number(cell(&t, r, (size_t)xc), &x) ||
            parse_number(cell(&t, r, (size_t)yc), &y)) {
            xp_errf(err, errlen, "%s: row %zu: '%s' or '%s' is not a number ('%s', '%s')",
                     csv_path, r, o->x, o->y, cell(&t, r, (size_t)xc), cell(&t, r, (size_t)yc));
            st = NCSIM_USAGE;
            goto out;
        }
        if ((o->log_x && x <= 0) || (o->log_y && y <= 0)) {
            xp_errf(err, errlen, "%s: row %zu: a logarithmic axis needs positive values", csv_path,
                     r);
            st = NCSIM_USAGE;
            goto out;
        }
        char label[512] = "";
        size_t l = 0;
        for (long c = 0; first_result > 0 && c < first_result; c++) {
            if (c == xc || c == yc)
                continue;
            int k = snprintf(label + l, sizeof label - l, "%s%s", l ? ", " : "",
                             cell(&t, r, (size_t)c));
            if (k < 0 || (size_t)k >= sizeof label - l)
                break;
            l += (size_t)k;
        }
        size_t s = 0;
        while (s < nser && strcmp(ser[s].label, label) != 0)
            s++;
        if (s == nser) {
            if (!(ser[s].label = malloc(strlen(label) + 1)))
                goto nomem;
            strcpy(ser[s].label, label);
            nser++;
        }
        series_t *S = &ser[s];
        if (S->n == S->cap) {
            S->cap = S->cap ? S->cap * 2 : 16;
            double *nx = realloc(S->x, S->cap * 2 * sizeof *nx);
            if (!nx)
                goto nomem;
            S->x = nx; /* pairs (x, y) interleaved, sorted by x below */
        }
        S->x[2 * S->n] = x;
        S->x[2 * S->n + 1] = y;
        S->n++;
    }
    if (!nser) {
        xp_errf(err, errlen, "%s: no row with status ok to plot", csv_path);
        st = NCSIM_USAGE;
        goto out;
    }
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (size_t s = 0; s < nser; s++) {
        qsort(ser[s].x, ser[s].n, 2 * sizeof(double), cmp_x);
        for (size_t i = 0; i < ser[s].n; i++) {
            xmin = fmin(xmin, ser[s].x[2 * i]);
            xmax = fmax(xmax, ser[s].x[2 * i]);
            ymin = fmin(ymin, ser[s].x[2 * i + 1]);
            ymax = fmax(ymax, ser[s].x[2 * i + 1]);
        }
    }
    /* a linear y axis over values spanning more than a factor 2 starts at 0, so that ratios
     * read off the plot are true; a narrower range is shown zoomed in */
    if (!o->log_y && ymin >= 0 && ymin <= ymax / 2)
        ymin = 0;

    /* the legend: a heading naming the series keys, then one entry of values per series */
    int legend = nser > 1;
    int W = o->width ? (int)o->width : 960, H = o->height ? (int)o->height : 600;
    int line_h = (CELL_H + 2) * SCALE;
    int legend_w = 0;
    char heading[512] = "";
    if (legend) {
        size_t l = 0;
        for (long c = 0; first_result > 0 && c < first_result; c++) {
            if (c == xc || c == yc)
                continue;
            int k = snprintf(heading + l, sizeof heading - l, "%s%s", l ? ", " : "",
                             cell(&t, 0, (size_t)c));
            if (k < 0 || (size_t)k >= sizeof heading - l)
                break;
            l += (size_t)k;
        }
        legend_w = text_width(heading);
        for (size_t s = 0; s < nser; s++) {
            int w = text_width(ser[s].label) + 32;
            legend_w = w > legend_w ? w : legend_w;
        }
        legend_w += 30;
        if (legend_w > W * 2 / 5)
            legend_w = W * 2 / 5;
    }
    if (rst_image_init(&cv, W, H, (rgb_t){255, 255, 255}))
        goto nomem;
    const rgb_t black = {0, 0, 0}, grid = {225, 225, 225}, dark = {60, 60, 60};
    int left = 40 + 9 * ADVANCE * SCALE, right = W - 30 - legend_w;
    int top = 20 + 2 * line_h, bottom = H - (20 + 3 * line_h);
    if (right - left < 100 || bottom - top < 100) {
        xp_errf(err, errlen, "the picture is too small for the plot");
        st = NCSIM_USAGE;
        goto out;
    }
    axis_t ax = {0}, ay = {0};
    ax.log = o->log_x;
    ay.log = o->log_y;
    /* about one labelled tick per 90 pixels across and 60 pixels up */
    axis_fit(&ax, xmin, xmax, (right - left) / 90 > 2 ? (right - left) / 90 : 2);
    axis_fit(&ay, ymin, ymax, (bottom - top) / 60 > 2 ? (bottom - top) / 60 : 2);

    /* grid, ticks and tick labels */
    char buf[64];
    int label_end = INT32_MIN; /* right edge of the last x label drawn */
    for (int i = 0; i < ax.nticks; i++) {
        int px = left + (int)lround(axis_pos(&ax, ax.ticks[i]) * (right - left));
        rst_line(&cv, px, top, px, bottom, 1, grid);
        rst_line(&cv, px, bottom, px, bottom + 6, 1, black);
        tick_label(&ax, ax.ticks[i], buf, sizeof buf);
        int lx = px - text_width(buf) / 2;
        if (lx > label_end + ADVANCE * SCALE) {
            draw_text(&cv, lx, bottom + 10, buf, dark, 0);
            label_end = lx + text_width(buf);
        }
    }
    int label_top = INT32_MAX; /* top edge of the last y label drawn */
    for (int i = 0; i < ay.nticks; i++) {
        int py = bottom - (int)lround(axis_pos(&ay, ay.ticks[i]) * (bottom - top));
        rst_line(&cv, left, py, right, py, 1, grid);
        rst_line(&cv, left - 6, py, left, py, 1, black);
        tick_label(&ay, ay.ticks[i], buf, sizeof buf);
        int ly = py - GLYPH_H * SCALE / 2;
        if (ly + CELL_H * SCALE < label_top) {
            draw_text(&cv, left - 10 - text_width(buf), ly, buf, dark, 0);
            label_top = ly;
        }
    }
    rst_line(&cv, left, top, left, bottom, 2, black);
    rst_line(&cv, left, bottom, right, bottom, 2, black);
    rst_line(&cv, left, top, right, top, 1, dark);
    rst_line(&cv, right, top, right, bottom, 1, dark);

    /* axis labels and title */
    char label[256];
    snprintf(label, sizeof label, "%s%s", o->x, ax.log ? " (log scale)" : "");
    if (ax.exp3)
        snprintf(label + strlen(label), sizeof label - strlen(label), " (x 1e%d)", ax.exp3);
    draw_text(&cv, (left + right - text_width(label)) / 2, bottom + 10 + line_h + 8, label, black, 0);
    snprintf(label, sizeof label, "%s%s", o->y, ay.log ? " (log scale)" : "");
    if (ay.exp3)
        snprintf(label + strlen(label), sizeof label - strlen(label), " (x 1e%d)", ay.exp3);
    draw_text(&cv, 14, (top + bottom + text_width(label)) / 2, label, black, 1);
    char title[512];
    if (o->title)
        snprintf(title, sizeof title, "%s", o->title);
    else
        snprintf(title, sizeof title, "%s vs %s", o->y, o->x);
    draw_text(&cv, (left + right - text_width(title)) / 2, 16, title, black, 0);

    /* the series */
    for (size_t s = 0; s < nser; s++) {
        rgb_t col = palette[s % (sizeof palette / sizeof *palette)];
        int px0 = 0, py0 = 0;
        for (size_t i = 0; i < ser[s].n; i++) {
            int px = left + (int)lround(axis_pos(&ax, ser[s].x[2 * i]) * (right - left));
            int py = bottom - (int)lround(axis_pos(&ay, ser[s].x[2 * i + 1]) * (bottom - top));
            if (i)
                rst_line(&cv, px0, py0, px, py, 2, col);
            px0 = px;
            py0 = py;
        }
        for (size_t i = 0; i < ser[s].n; i++) {
            int px = left + (int)lround(axis_pos(&ax, ser[s].x[2 * i]) * (right - left));
            int py = bottom - (int)lround(axis_pos(&ay, ser[s].x[2 * i + 1]) * (bottom - top));
            rst_disc(&cv, px, py, 4, col);
        }
        if (legend) {
            int ly = top + 10 + (int)(s + 1) * line_h;
            if (ly + line_h > bottom)
                continue;
            int lx = right + 20;
            rst_line(&cv, lx, ly + GLYPH_H, lx + 24, ly + GLYPH_H, 2, col);
            rst_disc(&cv, lx + 12, ly + GLYPH_H, 4, col);
            char lab[128];
            int maxc = (legend_w - 52) / (ADVANCE * SCALE);
            snprintf(lab, sizeof lab, "%.*s", maxc > 0 && maxc < 127 ? maxc : 127, ser[s].label);
            draw_text(&cv, lx + 32, ly, lab, black, 0);
        }
    }
    if (legend) {
        char lab[128];
        int maxc = (legend_w - 20) / (ADVANCE * SCALE);
        snprintf(lab, sizeof lab, "%.*s", maxc > 0 && maxc < 127 ? maxc : 127, heading);
        draw_text(&cv, right + 20, top + 10, lab, black, 0);
    }
    st = rst_write_png(&cv, png_path, err, errlen);
    goto out;
nomem:
    xp_errf(err, errlen, "out of memory");
    st = NCSIM_NOMEM;
out:
    for (size_t s = 0; ser && s < nser; s++) {
        free(ser[s].label);
        free(ser[s].x);
    }
    free(ser);
    rst_image_free(&cv);
    csv_free(&t);
    return st;
}

/* ---- scatter ------------------------------------------------------------------------------ */

typedef struct box {
    int x0, y0, x1, y1;
} box_t;

static int boxes_overlap(const box_t *a, const box_t *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* A line through the plot area of y = k x (log axes with the same range), clipped to it. */
static void ratio_line(rst_image_t *cv, const axis_t *ax, int left, int right, int top, int bottom,
                       double k, int thick, rgb_t col, int dashed)
{
    double lk = log10(k);
    /* in axis units t = log10(v): y = x + lk; clip x to [lo, hi] and y to [lo, hi] */
    double x0 = fmax(ax->lo, ax->lo - lk), x1 = fmin(ax->hi, ax->hi - lk);
    if (x1 <= x0)
        return;
    int steps = dashed ? 40 : 1;
    for (int i = 0; i < steps; i += dashed ? 2 : 1) {
        double a = x0 + (x1 - x0) * i / steps, b = x0 + (x1 - x0) * (i + 1) / steps;
        int px0 = left + (int)lround((a - ax->lo) / (ax->hi - ax->lo) * (right - left));
        int px1 = left + (int)lround((b - ax->lo) / (ax->hi - ax->lo) * (right - left));
        int py0 = bottom - (int)lround((a + lk - ax->lo) / (ax->hi - ax->lo) * (bottom - top));
        int py1 = bottom - (int)lround((b + lk - ax->lo) / (ax->hi - ax->lo) * (bottom - top));
        rst_line(cv, px0, py0, px1, py1, thick, col);
    }
}

ncsim_status_t sim_plot_scatter(const sim_scatter_point_t *pts, size_t n,
                                const sim_scatter_options_t *o, const char *png_path,
                                char *err, size_t errlen)
{
    if (!n) {
        xp_errf(err, errlen, "no points to plot");
        return NCSIM_USAGE;
    }
    double mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!(pts[i].x > 0) || !(pts[i].y > 0) || !isfinite(pts[i].x) || !isfinite(pts[i].y)) {
            xp_errf(err, errlen, "point '%s': a logarithmic plot needs positive values",
                     pts[i].label ? pts[i].label : "?");
            return NCSIM_USAGE;
        }
        mn = fmin(mn, fmin(pts[i].x, pts[i].y));
        mx = fmax(mx, fmax(pts[i].x, pts[i].y));
    }
    int W = o->width ? (int)o->width : 960, H = o->height ? (int)o->height : 860;
    int line_h = (CELL_H + 2) * SCALE;
    int left = 40 + 9 * ADVANCE * SCALE, right = W - 30;
    int top = 20 + 2 * line_h, bottom = H - (20 + 3 * line_h);
    if (right - left < 100 || bottom - top < 100) {
        xp_errf(err, errlen, "the picture is too small for the plot");
        return NCSIM_USAGE;
    }
    rst_image_t cv = {0, 0, NULL};
    int cv_bad = rst_image_init(&cv, W, H, (rgb_t){255, 255, 255});
    box_t *boxes = calloc(n + 8, sizeof *boxes);
    if (cv_bad || !boxes) {
        rst_image_free(&cv);
        free(boxes);
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    const rgb_t black = {0, 0, 0}, grid = {225, 225, 225}, dark = {60, 60, 60},
                band = {150, 150, 150}, good = {44, 160, 44}, bad = {214, 39, 40};
    axis_t ax = {0};
    ax.log = 1;
    axis_fit(&ax, mn, mx, 8);
    char buf[64];
    int label_end = INT32_MIN, label_top = INT32_MAX;
    for (int i = 0; i < ax.nticks; i++) {
        double t = axis_pos(&ax, ax.ticks[i]);
        int px = left + (int)lround(t * (right - left));
        int py = bottom - (int)lround(t * (bottom - top));
        rst_line(&cv, px, top, px, bottom, 1, grid);
        rst_line(&cv, left, py, right, py, 1, grid);
        rst_line(&cv, px, bottom, px, bottom + 6, 1, black);
        rst_line(&cv, left - 6, py, left, py, 1, black);
        tick_label(&ax, ax.ticks[i], buf, sizeof buf);
        int lx = px - text_width(buf) / 2;
        if (lx > label_end + ADVANCE * SCALE) {
            draw_text(&cv, lx, bottom + 10, buf, dark, 0);
            label_end = lx + text_width(buf);
        }
        int ly = py - GLYPH_H * SCALE / 2;
        if (ly + CELL_H * SCALE < label_top) {
            draw_text(&cv, left - 10 - text_width(buf), ly, buf, dark, 0);
            label_top = ly;
        }
    }
    rst_line(&cv, left, top, left, bottom, 2, black);
    rst_line(&cv, left, bottom, right, bottom, 2, black);
    rst_line(&cv, left, top, right, top, 1, dark);
    rst_line(&cv, right, top, right, bottom, 1, dark);
    ratio_line(&cv, &ax, left, right, top, bottom, 1.0, 2, black, 0);
    if (o->band > 0) {
        ratio_line(&cv, &ax, left, right, top, bottom, 1.0 + o->band, 1, band, 1);
        if (o->band < 1)
            ratio_line(&cv, &ax, left, right, top, bottom, 1.0 - o->band, 1, band, 1);
    }
    char label[256];
    snprintf(label, sizeof label, "%s (log scale)", o->xlabel ? o->xlabel : "x");
    draw_text(&cv, (left + right - text_width(label)) / 2, bottom + 10 + line_h + 8, label,
              black, 0);
    snprintf(label, sizeof label, "%s (log scale)", o->ylabel ? o->ylabel : "y");
    draw_text(&cv, 14, (top + bottom + text_width(label)) / 2, label, black, 1);
    if (o->title)
        draw_text(&cv, (left + right - text_width(o->title)) / 2, 16, o->title, black, 0);

    /* legend in the upper left corner, where y = x leaves room (points sit near the diagonal) */
    size_t nbox = 0;
    {
        int lx = left + 14, ly = top + 12;
        rst_line(&cv, lx, ly + GLYPH_H, lx + 24, ly + GLYPH_H, 2, black);
        draw_text(&cv, lx + 32, ly, "simulated = measured", black, 0);
        ly += line_h;
        if (o->band > 0) {
            for (int d = 0; d < 24; d += 6)
                rst_line(&cv, lx + d, ly + GLYPH_H, lx + d + 3, ly + GLYPH_H, 1, band);
            snprintf(label, sizeof label, "+-%.0f%% band", 100.0 * o->band);
            draw_text(&cv, lx + 32, ly, label, black, 0);
            ly += line_h;
        }
        rst_disc(&cv, lx + 12, ly + GLYPH_H, 4, good);
        draw_text(&cv, lx + 32, ly, "inside its band", black, 0);
        ly += line_h;
        rst_disc(&cv, lx + 12, ly + GLYPH_H, 4, bad);
        draw_text(&cv, lx + 32, ly, "outside its band", black, 0);
        ly += line_h;
        boxes[nbox++] = (box_t){lx - 4, top + 8, lx + 32 + text_width("simulated = measured") + 4,
                                ly};
    }
    /* points, then labels at the first free place: right, left, above, below */
    int *px = calloc(n, sizeof *px), *py = calloc(n, sizeof *py);
    box_t *pboxes = calloc(n, sizeof *pboxes);
    if (!px || !py || !pboxes) {
        free(px);
        free(py);
        free(pboxes);
        rst_image_free(&cv);
        free(boxes);
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        px[i] = left + (int)lround(axis_pos(&ax, pts[i].x) * (right - left));
        py[i] = bottom - (int)lround(axis_pos(&ax, pts[i].y) * (bottom - top));
        rst_disc(&cv, px[i], py[i], 5, pts[i].good ? good : bad);
        pboxes[i] = (box_t){px[i] - 5, py[i] - 5, px[i] + 6, py[i] + 6};
    }
    for (size_t i = 0; i < n; i++) {
        if (!pts[i].label)
            continue;
        int tw = rst_font_width(pts[i].label) - 1, th = CELL_H;
        int x = px[i], y = py[i];
        /* right, left, above, below, then the corners and further out */
        box_t cand[12] = {
            {x + 8, y - th / 2, x + 8 + tw, y - th / 2 + th},
            {x - 8 - tw, y - th / 2, x - 8, y - th / 2 + th},
            {x - tw / 2, y - 8 - th, x - tw / 2 + tw, y - 8},
            {x - tw / 2, y + 8, x - tw / 2 + tw, y + 8 + th},
            {x + 6, y - 6 - th, x + 6 + tw, y - 6},
            {x + 6, y + 6, x + 6 + tw, y + 6 + th},
            {x - 6 - tw, y - 6 - th, x - 6, y - 6},
            {x - 6 - tw, y + 6, x - 6, y + 6 + th},
            {x + 8, y - 8 - 2 * th, x + 8 + tw, y - 8 - th},
            {x + 8, y + 8 + th, x + 8 + tw, y + 8 + 2 * th},
            {x - 8 - tw, y - 8 - 2 * th, x - 8, y - 8 - th},
            {x - 8 - tw, y + 8 + th, x - 8, y + 8 + 2 * th}};
        /* the first place that clashes with nothing, else the one that clashes least */
        int pick = 0, best = INT32_MAX;
        for (int c = 0; c < 12; c++) {
            int clash = (cand[c].x0 < left || cand[c].x1 > right || cand[c].y0 < top ||
                         cand[c].y1 > bottom)
                            ? 1000
                            : 0;
            for (size_t b = 0; b < nbox; b++)
                clash += boxes_overlap(&cand[c], &boxes[b]);
            for (size_t b = 0; b < n; b++)
                clash += b != i && boxes_overlap(&cand[c], &pboxes[b]);
            if (clash < best) {
                best = clash;
                pick = c;
            }
            if (!clash)
                break;
        }
        rst_text(&cv, cand[pick].x0, cand[pick].y0, pts[i].label, dark, 1, 0);
        if (nbox < n + 8)
            boxes[nbox++] = cand[pick];
    }
    free(px);
    free(py);
    free(pboxes);
    ncsim_status_t st = rst_write_png(&cv, png_path, err, errlen);
    rst_image_free(&cv);
    free(boxes);
    return st;
}
