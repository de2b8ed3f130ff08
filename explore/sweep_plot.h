/*
 * sweep_plot.h -- a PNG plot of one column of a sweep's CSV against another, drawn by our own
 * code (libpng for the file, a built-in 5x7 bitmap font for the labels): no Python needed.
 */
#ifndef NCSIM_SIM_SWEEP_PLOT_H
#define NCSIM_SIM_SWEEP_PLOT_H

#include <stddef.h>

#include "ncsim.h"

typedef struct sim_plot_options {
    const char *x;        /* column for the horizontal axis (usually a swept key) */
    const char *y;        /* column for the vertical axis (total_ns, mfu, ...) */
    int log_x, log_y;     /* logarithmic axes (positive values only) */
    unsigned width, height; /* pixels; 0: 960 x 600 */
    const char *title;    /* NULL: "Y vs X" */
} sim_plot_options_t;

/* Parse "X=KEY,Y=COLUMN[,logx][,logy]" into o (x and y point into `text`, which is edited). */
ncsim_status_t sim_plot_parse(char *text, sim_plot_options_t *o, char *err, size_t errlen);

/*
 * Read a sweep CSV (sim_sweep_merge's format; any CSV with a header works) and draw Y against
 * X as lines with markers. Rows whose "status" column is not "ok" are left out. When other
 * columns before "total_ns" (the other swept keys) vary, each of their combinations is its
 * own series, with its own colour and a legend entry. NCSIM_USAGE when a column is missing
 * or not numeric, NCSIM_IO when a file cannot be read or written.
 */
ncsim_status_t sim_plot_csv(const char *csv_path, const sim_plot_options_t *o,
                            const char *png_path, char *err, size_t errlen);

/* A point of a scatter plot: `good` points are drawn green, the others red. */
typedef struct sim_scatter_point {
    double x, y;
    const char *label;    /* drawn next to the point (NULL: none) */
    int good;
} sim_scatter_point_t;

typedef struct sim_scatter_options {
    const char *title, *xlabel, *ylabel;
    double band;          /* > 0: also the lines y = x (1 +- band) */
    unsigned width, height; /* pixels; 0: 960 x 860 */
} sim_scatter_options_t;

/*
 * A log-log scatter of y against x with the same scale on both axes and the line y = x (for
 * simulated against measured figures), each point labelled. Values must be positive.
 * NCSIM_USAGE for no points or a value <= 0, NCSIM_IO when the file cannot be written.
 */
ncsim_status_t sim_plot_scatter(const sim_scatter_point_t *pts, size_t n,
                                const sim_scatter_options_t *o, const char *png_path,
                                char *err, size_t errlen);

#endif
