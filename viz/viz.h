/*
 * viz.h -- ncsim viz: a trace viewer that knows what a NeuronCore is.
 *
 * Three layers, each usable on its own (tests drive all three without a display):
 *
 *   viz_trace_t   a trace loaded through traces/ into per-lane sorted arrays: slices
 *                 (instructions, DMA transfers, link transfers, collective steps), counters,
 *                 flows resolved to the slices they join, an overview for the minimap.
 *   viz_view_t    what is on screen and how the user moves around: the visible time window,
 *                 the lane layout (groups by chip and core, collapsed or not), hover, selection,
 *                 range, search, colour mode. Every interaction of the window is a function
 *                 here (viz_view_key, viz_view_mouse_*, viz_view_wheel), so a test can do what a
 *                 user does and then look at the pixels.
 *   viz_canvas_t  a headless SDL software renderer that draws a view into memory: pixel reads
 *                 for tests, PNG for `ncsim viz --png`.
 *
 * Nothing outside viz/ includes SDL.h; this header does not either. Times are picoseconds,
 * colours 0xRRGGBB, coordinates pixels from the top-left corner of the view.
 */
#ifndef NCSIM_VIZ_H
#define NCSIM_VIZ_H

#include <stddef.h>
#include <stdint.h>

#include "ncsim.h"

/* ---- the trace ------------------------------------------------------------------------------- */

typedef struct viz_trace viz_trace_t;

/* Load a .json, .json.gz or .pftrace trace. NCSIM_IO when it cannot be read, NCSIM_FORMAT
 * (message names the file and where) when it is corrupt, truncated or holds no tracks,
 * NCSIM_NOMEM. */
ncsim_status_t viz_trace_load(const char *path, viz_trace_t **out, char *err, size_t errlen);
/* Two traces on one time axis, to compare them: A's groups ("A · chip 0", ...) above B's
 * ("B · chip 0", ...). Errors as viz_trace_load, naming the file. */
ncsim_status_t viz_trace_load_pair(const char *path_a, const char *path_b, viz_trace_t **out,
                                   char *err, size_t errlen);
/* 2 for a pair, 1 otherwise. */
int viz_trace_runs(const viz_trace_t *t);
void viz_trace_free(viz_trace_t *t);

size_t viz_trace_slice_count(const viz_trace_t *t);
size_t viz_trace_lane_count(const viz_trace_t *t);
size_t viz_trace_counter_count(const viz_trace_t *t);
size_t viz_trace_flow_count(const viz_trace_t *t);
/* First slice or counter start, and last slice end (ps). */
uint64_t viz_trace_start_ps(const viz_trace_t *t);
uint64_t viz_trace_end_ps(const viz_trace_t *t);

/* ---- the view -------------------------------------------------------------------------------- */

typedef struct viz_view viz_view_t;

/* Colour slices by the kind of engine that ran them (shaded by mnemonic), or by why they
 * waited before starting. */
typedef enum viz_colour_mode {
    VIZ_COLOUR_ENGINE,
    VIZ_COLOUR_STALL,
    VIZ_COLOUR_MODE_COUNT
} viz_colour_mode_t;

/* Keys the view understands (the window maps SDL keys onto these). */
typedef enum viz_key {
    VIZ_KEY_NONE,
    VIZ_KEY_CHAR,      /* a printable character: see viz_view_key's `ch` */
    VIZ_KEY_LEFT,
    VIZ_KEY_RIGHT,
    VIZ_KEY_UP,
    VIZ_KEY_DOWN,
    VIZ_KEY_PAGE_UP,
    VIZ_KEY_PAGE_DOWN,
    VIZ_KEY_HOME,
    VIZ_KEY_END,
    VIZ_KEY_ENTER,
    VIZ_KEY_ESCAPE,
    VIZ_KEY_BACKSPACE,
    VIZ_KEY_TAB,
    VIZ_KEY_F1
} viz_key_t;

/* Modifier bits for keys and mouse events. */
#define VIZ_MOD_SHIFT 1u
#define VIZ_MOD_CTRL 2u
#define VIZ_MOD_ALT 4u

/* Mouse buttons. */
#define VIZ_BUTTON_LEFT 1
#define VIZ_BUTTON_MIDDLE 2
#define VIZ_BUTTON_RIGHT 3

/* A view of `t` (which must outlive it) for a width x height pixel window, fitted to the
 * whole trace. NULL when out of memory. */
viz_view_t *viz_view_create(const viz_trace_t *t, int width, int height);
void viz_view_free(viz_view_t *v);
void viz_view_resize(viz_view_t *v, int width, int height);
void viz_view_size(const viz_view_t *v, int *width, int *height);

/* The visible time window. set_window clamps to a sensible range (at least 10 ps wide). */
void viz_view_set_window(viz_view_t *v, double start_ps, double end_ps);
void viz_view_window(const viz_view_t *v, double *start_ps, double *end_ps);
/* The whole trace with a small margin. */
void viz_view_fit(viz_view_t *v);
/* Zoom by `factor` (>1 in) keeping the time under x fixed (x < 0: the middle). */
void viz_view_zoom(viz_view_t *v, double factor, int x);
/* Pan by a number of pixels (positive: later times come into view). */
void viz_view_pan(viz_view_t *v, double dx_pixels);
/* Vertical scroll of the lanes, in pixels (clamped). */
void viz_view_scroll(viz_view_t *v, int dy_pixels);

/* The lane area: x of the first time pixel and its width. */
void viz_view_track_area(const viz_view_t *v, int *x0, int *width, int *y0, int *height);
double viz_view_x_of_time(const viz_view_t *v, double ps);
double viz_view_time_of_x(const viz_view_t *v, double x);

/* Lanes by name: `group` is the process name ("chip 0 core 1", "chip 0"), `lane` the track
 * name ("pe", "dma q3") or a counter's name ("HBM bandwidth"). -1 when there is none. */
int viz_view_find_lane(const viz_view_t *v, const char *group, const char *lane);
int viz_view_find_counter(const viz_view_t *v, const char *group, const char *counter);
/* Where a lane's (or counter's) row is drawn: 1 with y and height, 0 when it is hidden
 * (collapsed group, or scrolled out of the lane area). */
int viz_view_lane_row(const viz_view_t *v, int lane, int *y, int *height);
int viz_view_counter_row(const viz_view_t *v, int counter, int *y, int *height);
/* Collapse or expand the group called `name` ("chip 0 core 0", "dma queues" of a core is
 * "chip 0 core 0/dma queues"). Returns 0, or -1 when there is no such group. */
int viz_view_set_collapsed(viz_view_t *v, const char *name, int collapsed);

void viz_view_set_colour_mode(viz_view_t *v, viz_colour_mode_t m);
viz_colour_mode_t viz_view_colour_mode(const viz_view_t *v);
/* Colour a slice of `lane` named `name` gets in mode `m` when drawn on its own (not merged):
 * what a pixel test expects. `stall_cause` is the slice's "stall" text (NULL: none). */
uint32_t viz_view_slice_colour(const viz_view_t *v, int lane, const char *name,
                               const char *stall_cause, viz_colour_mode_t m);

/* What a user does. Each returns nonzero when the view changed (needs a redraw). */
int viz_view_hover(viz_view_t *v, int x, int y); /* x < 0: the mouse left */
int viz_view_mouse_down(viz_view_t *v, int x, int y, int button, unsigned mods);
int viz_view_mouse_move(viz_view_t *v, int x, int y, unsigned mods);
int viz_view_mouse_up(viz_view_t *v, int x, int y, int button, unsigned mods);
/* Press and release without moving: select the slice under (x, y), toggle a group header. */
int viz_view_click(viz_view_t *v, int x, int y, unsigned mods);
/* Wheel: dy > 0 away from the user (zoom in), dx horizontal (pan). Shift or ctrl with dy
 * scroll the lanes instead. */
int viz_view_wheel(viz_view_t *v, int x, int y, double dx, double dy, unsigned mods);
/* A key; `ch` is the character for VIZ_KEY_CHAR (ASCII). */
int viz_view_key(viz_view_t *v, viz_key_t key, int ch, unsigned mods);
/* The window was asked to close: q, or Escape with nothing to dismiss. */
int viz_view_quit_requested(const viz_view_t *v);

/* Selection and search results, for tests and the command line. */
typedef struct viz_slice_info {
    int lane;
    size_t slice;           /* index within the lane */
    uint64_t start_ps, dur_ps;
    const char *name;       /* mnemonic, or the DMA direction */
    const char *operands;
    uint32_t line;
    uint64_t index;
    const char *stall;      /* main cause text, "" when it did not wait */
    uint64_t wait_ps;
    const char *cost;       /* the cost breakdown ("" when the trace has none) */
} viz_slice_info_t;

/* The selected slice: 1 and `info` filled, 0 when none. */
int viz_view_selected(const viz_view_t *v, viz_slice_info_t *info);
/* The hovered slice (what the tooltip shows). */
int viz_view_hovered(const viz_view_t *v, viz_slice_info_t *info);
/* Select slice `slice` of `lane` (and scroll it into view); -1, -1 clears. */
void viz_view_select(viz_view_t *v, int lane, long slice);
/* Search like typing "/text" then Enter: returns the number of matches and selects the first
 * one at or after the middle of the view. */
size_t viz_view_search(viz_view_t *v, const char *text);
/* Flows drawn for the selection: into and out of the selected slice. */
size_t viz_view_selected_flow_count(const viz_view_t *v);
/* The group collapsed state by name (-1: no such group). */
int viz_view_collapsed(const viz_view_t *v, const char *name);
int viz_view_help_shown(const viz_view_t *v);

/* Palette entries tests refer to. */
#define VIZ_RGB_BACKGROUND 0x1b1d22u
#define VIZ_RGB_STALL_NONE 0x7b8594u
#define VIZ_RGB_STALL_SEMAPHORE 0xe5534bu
#define VIZ_RGB_STALL_PORT 0xc678ddu
#define VIZ_RGB_STALL_INTERLOCK 0xe5c07bu
#define VIZ_RGB_STALL_COLLECTIVE 0x56b6c2u
#define VIZ_RGB_TOOLTIP 0x2d3039u
#define VIZ_RGB_SELECTION 0xffffffu
#define VIZ_RGB_FLOW_SEMAPHORE 0xffa657u

/* ---- headless rendering ---------------------------------------------------------------------- */

typedef struct viz_canvas viz_canvas_t;

/* An off-screen width x height canvas (SDL dummy video driver, software renderer). */
ncsim_status_t viz_canvas_create(int width, int height, viz_canvas_t **out, char *err,
                                 size_t errlen);
void viz_canvas_free(viz_canvas_t *c);
/* Draw the view (resized to the canvas first). */
void viz_canvas_render(viz_canvas_t *c, viz_view_t *v);
/* 0xRRGGBB of a pixel of the last render (0 outside). */
uint32_t viz_canvas_pixel(viz_canvas_t *c, int x, int y);
ncsim_status_t viz_canvas_write_png(viz_canvas_t *c, const char *path, char *err, size_t errlen);

/* ---- the command ----------------------------------------------------------------------------- */

/* What `ncsim viz` was asked (its options are parsed by cli/cmd_viz.c). */
typedef struct viz_options {
    const char *path, *path_b;   /* the trace, and a second one to compare (or NULL) */
    const char *png;             /* render headless to this PNG and exit (NULL: a window) */
    const char *search, *keys;   /* highlight text; keys pressed first (with png) */
    int width, height;           /* pixels */
    int hover_x, hover_y;        /* the tooltip's pointer (with png; -1: none) */
    int have_start, have_end;    /* the time window's edges given */
    double start_ns, end_ns;
    viz_colour_mode_t mode;
    int verbose;                 /* load time, frame times, the final window on stderr */
} viz_options_t;

/* Open the trace(s) of O in the viewer, or render them to O->png; messages start "ncsim viz:".
 * Returns the exit code (docs/cli.md). */
int viz_run(const viz_options_t *o);

#endif
