/*
 * viz_internal.h -- the viewer's data structures, shared by its files: the loaded trace
 * (model.c), the view state and layout (view.c), drawing (render.c) with the font of raster/,
 * number formatting (format.c), the headless canvas (canvas.c) and the window (app.c).
 */
#ifndef NCSIM_VIZ_INTERNAL_H
#define NCSIM_VIZ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "raster.h"
#include "trace.h"
#include "viz.h"

/* ---- font: the project's bitmap font, raster/font.c (RST_FONT_W, rst_font_glyph ...) ------ */

/* ---- formatting ------------------------------------------------------------------------------ */

/* "12.345 ns", "1.2 µs", "3 ms": a duration or time with `sig` significant digits at most,
 * in the largest unit that keeps the number at least 1. */
void viz_fmt_time(char *buf, size_t n, double ps);
/* A time with exactly the decimals a tick step needs: unit and decimals from viz_axis_unit. */
void viz_fmt_time_fixed(char *buf, size_t n, double ps, double unit_ps, int decimals,
                        const char *unit_name);
/* Choose the unit for axis labels with step `step_ps`: largest of ps..s with step >= unit/10;
 * gives the unit in ps, its name and the decimals the step needs. */
void viz_axis_unit(double step_ps, double *unit_ps, const char **name, int *decimals);
/* Tick step for a span drawn over `width` pixels with labels at least `min_px` apart:
 * 1, 2 or 5 times a power of ten picoseconds. */
double viz_axis_step(double span_ps, double width, double min_px);
/* "1.5 MiB", "820 GB/s", "3": a counter value with its unit. */
void viz_fmt_value(char *buf, size_t n, double v, const char *unit);
/* "1,234,567" */
void viz_fmt_count(char *buf, size_t n, uint64_t v);

/* ---- the loaded trace ------------------------------------------------------------------------ */

/* Interned strings: an id is the byte offset in `buf`; 0 is "". */
typedef struct viz_strings {
    char *buf;
    size_t len, cap;
    uint64_t *slots; /* open addressing: hash << 32 | (id + 1), 0 empty */
    size_t nslots, count;
} viz_strings_t;

/* What a lane shows, for colours and the minimap: the six engines, then the other tracks. */
#define VIZ_CAT_MAP(XX)                                                                        \
    XX(PE, "pe", 0x4c9be8)                                                                     \
    XX(ACT, "act", 0xe8a33c)                                                                   \
    XX(DVE, "dve", 0x5dbb63)                                                                   \
    XX(POOL, "pool", 0xb07cd8)                                                                 \
    XX(SP, "sp", 0xe06c75)                                                                     \
    XX(CC, "cc", 0x3fbfb0)                                                                     \
    XX(DMA, "dma", 0x8fa3bf)                                                                   \
    XX(LINK, "link", 0xd4b84a)                                                                 \
    XX(COLL, "coll", 0x4fb3d9)                                                                 \
    XX(OTHER, "other", 0x9aa0a6)

typedef enum viz_cat {
#define XX(id, name, rgb) VIZ_CAT_##id,
    VIZ_CAT_MAP(XX)
#undef XX
        VIZ_CAT_COUNT
} viz_cat_t;

/* Why an instruction waited before it started (the trace's "stall" argument). */
#define VIZ_CAUSE_MAP(XX)                                                                      \
    XX(NONE, "did not wait", VIZ_RGB_STALL_NONE)                                               \
    XX(SEMAPHORE, "semaphore", VIZ_RGB_STALL_SEMAPHORE)                                        \
    XX(PORT, "port", VIZ_RGB_STALL_PORT)                                                       \
    XX(INTERLOCK, "interlock", VIZ_RGB_STALL_INTERLOCK)                                        \
    XX(COLLECTIVE, "collective", VIZ_RGB_STALL_COLLECTIVE)                                     \
    XX(OTHER, "other", 0xd19a66u)                                                              \
    XX(TRANSFER, "transfer", 0x4d5a6bu)

typedef enum viz_cause {
#define XX(id, text, rgb) VIZ_CAUSE_##id,
    VIZ_CAUSE_MAP(XX)
#undef XX
        VIZ_CAUSE_COUNT
} viz_cause_t;

/* Colour classes: engine mode uses cat * VIZ_SHADES + shade (shade from the mnemonic), stall
 * mode VIZ_CLASS_CAUSE + cause. */
#define VIZ_SHADES 6
#define VIZ_CLASS_CAUSE 64
#define VIZ_CLASS_COUNT (VIZ_CLASS_CAUSE + VIZ_CAUSE_COUNT)

typedef struct viz_process {
    uint32_t pid;
    uint32_t name; /* string id */
    int32_t sort;
    int chip;      /* -1: unknown; B's chips (viz_trace_load_pair) are VIZ_RUN_B_CHIP + chip */
    int is_core;   /* a core process (else a chip's shared tracks, or unknown) */
    int run;       /* 0: the trace (or A), 1: B of a pair */
} viz_process_t;

/* Two traces in one view (viz_trace_load_pair): B's pids are offset by VIZ_RUN_B_PID (its
 * tids follow, tid = pid x 1000 + n) and its chips by VIZ_RUN_B_CHIP, so its groups come
 * after A's on the same time axis. */
#define VIZ_RUN_B_PID 100000u
#define VIZ_RUN_B_CHIP 100000

typedef struct viz_lane {
    uint32_t pid, tid;
    uint32_t name;       /* string id */
    int32_t sort;
    uint8_t kind;        /* trc_track_kind_t; TRC_TRACK_KIND_COUNT when the tid says nothing */
    uint8_t cat;         /* viz_cat_t */
    uint32_t n;          /* engine, queue, link or collective number within its kind */
    int process;         /* index in viz_trace.procs */
    size_t first, count; /* its slices: [first, first + count) of the slice arrays */
    uint64_t *endmax;    /* running maximum of the ends when they are not already sorted */
} viz_lane_t;

/* Everything about a slice the tooltip and the details show (the hot fields for drawing,
 * start, end and colour class, live in separate arrays). */
typedef struct viz_detail {
    uint64_t index;      /* position in its engine's stream */
    uint64_t aux_ps;     /* instr: latency (start to completion); dma: queued (issue to start) */
    uint64_t wait_ps;    /* instr: ready but held before starting */
    uint64_t bytes;
    uint64_t flops;      /* instr: useful tensor FLOPs; link: src_chip << 32 | dst_chip */
    uint32_t name;       /* mnemonic, DMA direction */
    uint32_t operands;
    uint32_t stall;      /* instr: the main cause text; 0 when it did not wait */
    uint32_t extra;      /* dma: issuing engine; link: collective; collective: group */
    uint32_t line;
    uint32_t cost;       /* instr, dma: the cost breakdown text (0: none in the trace) */
    float gbps;          /* dma, link: average rate */
    uint8_t kind;        /* trc_slice_kind_t */
    uint8_t cause;       /* viz_cause_t */
} viz_detail_t;

typedef enum viz_counter_kind {
    VIZ_CTR_HBM,
    VIZ_CTR_SBUF,
    VIZ_CTR_PSUM,
    VIZ_CTR_DMA_BW,
    VIZ_CTR_DMA_INFLIGHT,
    VIZ_CTR_LINK_BW,
    VIZ_CTR_SEMAPHORE,
    VIZ_CTR_OTHER
} viz_counter_kind_t;

typedef struct viz_counter {
    uint32_t pid;
    uint32_t name, unit; /* string ids */
    int process;
    uint8_t kind;        /* viz_counter_kind_t */
    uint64_t *ts;        /* sorted */
    double *val;
    size_t n, cap;
    double max;
} viz_counter_t;

/* Flow categories drawn differently. */
enum { VIZ_FLOW_SEMAPHORE, VIZ_FLOW_DMA, VIZ_FLOW_OTHER };

typedef struct viz_flow {
    uint32_t from, to; /* global slice indices */
    uint32_t name;     /* semaphore name, "dma issue" */
    uint8_t cat;
} viz_flow_t;

/* Buckets of the whole-trace overview (minimap). */
#define VIZ_OVERVIEW_BUCKETS 2048

struct viz_trace {
    char path[512];
    char path_b[512];  /* the second trace of a pair ("" when one) */
    int runs;          /* 1, or 2 for a pair */
    viz_strings_t str;
    uint32_t program, arch; /* string ids */
    uint64_t chips, cores, timing_only;
    viz_process_t *procs;
    size_t nprocs;
    viz_lane_t *lanes;
    size_t nlanes;
    /* slices, grouped by lane, each lane sorted by start */
    size_t nslices;
    uint64_t *start, *end;
    uint8_t *cls[VIZ_COLOUR_MODE_COUNT];
    uint32_t *lane_of;
    viz_detail_t *detail;
    viz_counter_t *counters;
    size_t ncounters;
    viz_flow_t *flows;
    size_t nflows;
    uint32_t *flows_by_from, *flows_by_to; /* flow indices sorted by slice */
    uint64_t t_min, t_max;
    /* overview: per category, busy fraction of each bucket (0..1, across the category's
     * lanes) */
    double bucket_ps;
    float *overview[VIZ_CAT_COUNT];
    unsigned cat_lanes[VIZ_CAT_COUNT];
};

static inline const char *viz_str(const viz_trace_t *t, uint32_t id)
{
    return t->str.buf + id;
}

/* First slice of a lane that ends after t (the lane's count when none). */
size_t viz_lane_first_ending_after(const viz_trace_t *t, const viz_lane_t *l, double t_ps);
/* Flows whose source (out) or destination (!out) is slice `s`: [*first, *first + return). */
size_t viz_trace_flows_of(const viz_trace_t *t, uint32_t s, int out, size_t *first);
/* Colour of a class (0xRRGGBB). */
uint32_t viz_class_rgb(unsigned cls);
/* Shade of a mnemonic (stable across traces: a hash of the text). */
unsigned viz_name_shade(const char *name);
uint32_t viz_cat_rgb(unsigned cat);
const char *viz_cat_name(unsigned cat);
const char *viz_cause_text(unsigned cause);
viz_cause_t viz_cause_of_stall(const char *stall);

/* ---- the view -------------------------------------------------------------------------------- */

enum { VIZ_ITEM_GROUP, VIZ_ITEM_LANE, VIZ_ITEM_COUNTER };

typedef struct viz_item {
    uint8_t kind;
    int index;
} viz_item_t;

typedef struct viz_group {
    char name[96];  /* unique path: "chip 0", "chip 0 core 1", "chip 0 core 1/dma queues" */
    char label[64]; /* what the header shows */
    int parent, depth;
    int collapsed;
    viz_item_t *items; /* members in display order */
    size_t nitems, cap;
} viz_group_t;

enum { VIZ_ROW_GROUP, VIZ_ROW_LANE, VIZ_ROW_COUNTER };

typedef struct viz_row {
    uint8_t kind;
    int index; /* group, lane or counter */
    int depth;
    int y, h;  /* in content coordinates (0 = top of the lane area before scrolling) */
} viz_row_t;

enum { VIZ_DRAG_NONE, VIZ_DRAG_PAN, VIZ_DRAG_RANGE, VIZ_DRAG_MINIMAP, VIZ_DRAG_SCROLLBAR };

/* Screen layout (pixels). */
#define VIZ_TITLE_H 22
#define VIZ_MINIMAP_H 46
#define VIZ_AXIS_H 22
#define VIZ_STATUS_H 20
#define VIZ_DETAILS_H 136 /* eight lines: the cost breakdown fits under the rest */
#define VIZ_LABEL_W 168
#define VIZ_SCROLLBAR_W 10
#define VIZ_ROW_GROUP_H 20
#define VIZ_ROW_ENGINE_H 22
#define VIZ_ROW_QUEUE_H 16
#define VIZ_ROW_COUNTER_H 36
#define VIZ_INDENT 12

struct viz_view {
    const viz_trace_t *t;
    int w, h;
    double t0, t1; /* visible window (ps) */
    int scroll;    /* lane area scroll (pixels) */
    viz_colour_mode_t mode;
    /* layout */
    viz_group_t *groups;
    size_t ngroups, cap_groups;
    int *roots; /* top-level group indices */
    size_t nroots;
    int *lane_group;    /* per lane: the group that holds it */
    int *counter_group; /* per counter */
    viz_row_t *rows;
    size_t nrows, cap_rows;
    int content_h;
    int *lane_row;    /* per lane: the row that shows it (its own, or a collapsed header) */
    int *counter_row; /* per counter: its row, -1 when hidden */
    /* pointer */
    int mouse_x, mouse_y, mouse_in;
    int hover_lane;
    long hover_slice;  /* global index, -1 */
    int hover_counter;
    int hover_row;
    int drag, drag_button;
    int down_x, down_y, moved;
    unsigned down_mods;
    double drag_t0, drag_t1;
    int drag_scroll;
    /* selection */
    long sel;          /* global slice index, -1 */
    int range_on;
    double range_a, range_b;
    /* search */
    int typing;
    char query[128];
    size_t qlen;
    char last_query[128];
    uint32_t *matches; /* global slice indices sorted by start */
    size_t nmatches, cur_match;
    uint8_t *is_match; /* per slice */
    int help;
    int quit;
    char message[256]; /* transient status line text */
};

/* Recompute rows after a collapse, expand or resize. */
void viz_view_layout(viz_view_t *v);
/* Pixel geometry of the screen parts. */
typedef struct viz_geom {
    int track_x, track_w;   /* time area */
    int minimap_y, minimap_h;
    int axis_y;
    int lanes_y, lanes_h;   /* lane area */
    int details_y, details_h;
    int status_y;
} viz_geom_t;
void viz_view_geom(const viz_view_t *v, viz_geom_t *g);
/* Screen y of a row (content y minus the scroll, plus the lane area top). */
int viz_row_screen_y(const viz_view_t *v, const viz_row_t *r);
/* Every lane of group g and its subgroups: calls fn(ctx, lane). */
void viz_group_lanes(const viz_view_t *v, int g, void (*fn)(void *ctx, int lane), void *ctx);
/* The slice on `lane` nearest time t within `tol_ps` (-1 when none). */
long viz_view_slice_at(const viz_view_t *v, int lane, double t, double tol_ps);
void viz_slice_info(const viz_trace_t *t, size_t s, viz_slice_info_t *info);
/* Time at which the source of a flow fires (its completion when known). */
double viz_flow_source_time(const viz_trace_t *t, uint32_t s);

/* ---- drawing (render.c): defined with SDL types there ---------------------------------------- */

struct SDL_Renderer;
typedef struct viz_gfx viz_gfx_t;
viz_gfx_t *viz_gfx_create(struct SDL_Renderer *r);
void viz_gfx_free(viz_gfx_t *g);
void viz_render(viz_gfx_t *g, const viz_view_t *v);

#endif
