/*
 * sweep_plot.h -- a PNG plot of one column of a sweep's CSV against another, drawn by our own
 * code (libpng for the file, a built-in 5x7 bitmap font for the labels): no Python needed.
 */
#ifndef NCSIM_SIM_SWEEP_PLOT_H
#define NCSIM_SIM_SWEEP_PLOT_H

#include <stddef.h>

#include "isa.h"

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

#endif
