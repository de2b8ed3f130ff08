/*
 * test_viz.c -- the trace viewer, headless (SDL dummy video driver, software renderer):
 * loading, the lane layout, the colour of known slices at known x in both colour modes,
 * merged slices coloured by the dominant kind, a tooltip drawn at a hover position, zoom and
 * pan arithmetic and keys, selection with its semaphore flows, folding groups, search, the
 * help overlay, and `ncsim viz --png` end to end.
 *
 * The traces are written here with the traces/ writer, so every slice's time is known.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "trace.h"

#ifndef NCSIM_HAVE_VIZ
int main(void)
{
    fprintf(stderr, "test_viz: built without the viewer (no SDL2): skipped\n");
    return 77;
}
#else
#include "viz.h"

#define NS 1000ull /* ps */

static char dir[256];

/* ---- writing small traces -------------------------------------------------------------------- */

static void w_put(trc_writer_t *w, const trc_record_t *r)
{
    assert_int_equal(trc_write(w, r), NCSIM_OK);
}

static void w_process(trc_writer_t *w, uint32_t pid, const char *name, int sort)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_PROCESS;
    r.u.process.pid = pid;
    r.u.process.name = name;
    r.u.process.sort_index = sort;
    w_put(w, &r);
}

static void w_track(trc_writer_t *w, uint32_t pid, uint32_t tid, const char *name, int sort)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_TRACK;
    r.u.track.pid = pid;
    r.u.track.tid = tid;
    r.u.track.name = name;
    r.u.track.sort_index = sort;
    w_put(w, &r);
}

static void w_instr(trc_writer_t *w, uint32_t pid, uint32_t tid, const char *name, uint64_t ts,
                    uint64_t dur, uint64_t line, const char *operands, uint64_t wait,
                    const char *stall)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_SLICE;
    r.u.slice.kind = TRC_SLICE_INSTR;
    r.u.slice.pid = pid;
    r.u.slice.tid = tid;
    r.u.slice.ts_ps = ts;
    r.u.slice.dur_ps = dur;
    r.u.slice.name = name;
    r.u.slice.a.instr.line = line;
    r.u.slice.a.instr.operands = operands;
    r.u.slice.a.instr.ii = dur;
    r.u.slice.a.instr.latency = dur + 100 * NS;
    r.u.slice.a.instr.wait = wait;
    r.u.slice.a.instr.wait_semaphore = wait;
    r.u.slice.a.instr.stall = stall;
    w_put(w, &r);
}

static void w_dma(trc_writer_t *w, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_SLICE;
    r.u.slice.kind = TRC_SLICE_DMA;
    r.u.slice.pid = pid;
    r.u.slice.tid = tid;
    r.u.slice.ts_ps = ts;
    r.u.slice.dur_ps = dur;
    r.u.slice.name = "hbm->sbuf";
    r.u.slice.a.dma.issuer = "sp";
    r.u.slice.a.dma.bytes = 65536;
    r.u.slice.a.dma.src = "hbm";
    r.u.slice.a.dma.dst = "sbuf";
    r.u.slice.a.dma.gbps = 81.92;
    w_put(w, &r);
}

static void w_counter(trc_writer_t *w, uint32_t pid, const char *name, const char *unit,
                      uint64_t ts, double value)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_COUNTER;
    r.u.counter.pid = pid;
    r.u.counter.name = name;
    r.u.counter.unit = unit;
    r.u.counter.ts_ps = ts;
    r.u.counter.value = value;
    w_put(w, &r);
}

static void w_flow(trc_writer_t *w, uint64_t id, const char *cat, const char *name, uint32_t fp,
                   uint32_t ft, uint64_t fts, uint32_t tp, uint32_t tt, uint64_t tts)
{
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_FLOW;
    r.u.flow.id = id;
    r.u.flow.cat = cat;
    r.u.flow.name = name;
    r.u.flow.from_pid = fp;
    r.u.flow.from_tid = ft;
    r.u.flow.from_ts_ps = fts;
    r.u.flow.to_pid = tp;
    r.u.flow.to_tid = tt;
    r.u.flow.to_ts_ps = tts;
    w_put(w, &r);
}

/*
 * The reference trace, 0 to 4000 ns:
 *   chip 0 core 0: pe    ldweights [0, 500) line 10, matmul [1000, 2000) line 11
 *                  act   activate [2500, 3000) line 12, waited 500 ns on semaphore done
 *                  dma q0 hbm->sbuf [100, 900)
 *                  SBUF in use: 0 from 0, 1 MiB from 1000 ns
 *   chip 0 core 1: pe    matmul [0, 4000) line 11
 *   chip 0:        HBM bandwidth 400 GB/s from 100 to 900 ns
 *   flows: semaphore "done" pe matmul -> act activate; dma issue sp? (none: no sp lane)
 */
static void write_reference(const char *path)
{
    trc_writer_t *w = NULL;
    char err[256];
    assert_int_equal(trc_writer_open(path, trc_format_for_path(path), &w, err, sizeof err),
                     NCSIM_OK);
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_RUN;
    r.u.run.generator = "test_viz";
    r.u.run.program = "reference.nca";
    r.u.run.arch = "trn1";
    r.u.run.chips = 1;
    r.u.run.cores = 2;
    w_put(w, &r);
    uint32_t p0 = trc_pid_core(0), p1 = trc_pid_core(1), chip = trc_pid_chip(0);
    uint32_t pe0 = trc_tid(p0, TRC_TRACK_ENGINE, 0), act0 = trc_tid(p0, TRC_TRACK_ENGINE, 1);
    uint32_t q0 = trc_tid(p0, TRC_TRACK_DMA_QUEUE, 0), pe1 = trc_tid(p1, TRC_TRACK_ENGINE, 0);
    w_process(w, p0, "chip 0 core 0", 0);
    w_track(w, p0, pe0, "pe", 0);
    w_track(w, p0, act0, "act", 1);
    w_track(w, p0, q0, "dma q0", 100);
    w_process(w, p1, "chip 0 core 1", 1);
    w_track(w, p1, pe1, "pe", 0);
    w_process(w, chip, "chip 0", 2);
    w_counter(w, p0, "SBUF in use", "bytes", 0, 0);
    w_counter(w, chip, "HBM bandwidth", "GB/s", 0, 0);
    w_instr(w, p0, pe0, "ldweights", 0, 500 * NS, 10, "a[:, 0]", 0, NULL);
    w_instr(w, p1, pe1, "matmul", 0, 4000 * NS, 11, "ps[0], a, b", 0, NULL);
    w_dma(w, p0, q0, 100 * NS, 800 * NS);
    w_counter(w, chip, "HBM bandwidth", "GB/s", 100 * NS, 400);
    w_counter(w, chip, "HBM bandwidth", "GB/s", 900 * NS, 0);
    w_instr(w, p0, pe0, "matmul", 1000 * NS, 1000 * NS, 11, "ps[0], a, b | post done", 0, NULL);
    w_counter(w, p0, "SBUF in use", "bytes", 1000 * NS, 1048576);
    w_flow(w, 1, "semaphore", "done", p0, pe0, 1000 * NS, p0, act0, 2500 * NS);
    w_instr(w, p0, act0, "activate", 2500 * NS, 500 * NS, 12, "y, ps[0], gelu | wait done >= 1",
            500 * NS, "semaphore done");
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
}

static viz_trace_t *load(const char *path)
{
    viz_trace_t *t = NULL;
    char err[512];
    ncsim_status_t st = viz_trace_load(path, &t, err, sizeof err);
    if (st != NCSIM_OK)
        fprintf(stderr, "load %s: %s\n", path, err);
    assert_int_equal(st, NCSIM_OK);
    return t;
}

typedef struct fixture {
    viz_trace_t *t;
    viz_view_t *v;
    viz_canvas_t *c;
    int pe0, act0, q0, pe1;
} fixture_t;

#define W 1000
#define H 640

static int setup_reference(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    const char *path = tu_join(dir, "reference.json");
    write_reference(path);
    f->t = load(path);
    f->v = viz_view_create(f->t, W, H);
    assert_non_null(f->v);
    char err[256];
    assert_int_equal(viz_canvas_create(W, H, &f->c, err, sizeof err), NCSIM_OK);
    viz_view_set_window(f->v, 0, 4000.0 * NS);
    f->pe0 = viz_view_find_lane(f->v, "chip 0 core 0", "pe");
    f->act0 = viz_view_find_lane(f->v, "chip 0 core 0", "act");
    f->q0 = viz_view_find_lane(f->v, "chip 0 core 0", "dma q0");
    f->pe1 = viz_view_find_lane(f->v, "chip 0 core 1", "pe");
    *state = f;
    return 0;
}

static int teardown_reference(void **state)
{
    fixture_t *f = *state;
    viz_canvas_free(f->c);
    viz_view_free(f->v);
    viz_trace_free(f->t);
    free(f);
    return 0;
}

/* The top band of a lane's boxes (clear of the centred labels). */
static int lane_box_y(const viz_view_t *v, int lane)
{
    int y, h;
    assert_true(viz_view_lane_row(v, lane, &y, &h));
    return y + 4;
}

static int x_at(const viz_view_t *v, double ns)
{
    return (int)viz_view_x_of_time(v, ns * NS);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_load_counts(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(viz_trace_slice_count(f->t), 5);
    assert_int_equal(viz_trace_lane_count(f->t), 4);
    assert_int_equal(viz_trace_counter_count(f->t), 2);
    assert_int_equal(viz_trace_flow_count(f->t), 1);
    assert_int_equal(viz_trace_start_ps(f->t), 0);
    assert_int_equal(viz_trace_end_ps(f->t), 4000 * NS);
    assert_true(f->pe0 >= 0 && f->act0 >= 0 && f->q0 >= 0 && f->pe1 >= 0);
    assert_int_equal(viz_view_find_lane(f->v, "chip 0 core 0", "pool"), -1);
    assert_true(viz_view_find_counter(f->v, "chip 0", "HBM bandwidth") >= 0);
}

/* Lanes are stacked in order: core 0's pe, act, its DMA queue, its counters, core 1's pe,
 * then the chip's HBM bandwidth; every one is inside the lane area. */
static void test_lane_positions(void **state)
{
    fixture_t *f = *state;
    int x0, tw, y0, th;
    viz_view_track_area(f->v, &x0, &tw, &y0, &th);
    int y[4], h[4];
    int lanes[4] = {f->pe0, f->act0, f->q0, f->pe1};
    for (int i = 0; i < 4; i++) {
        assert_true(viz_view_lane_row(f->v, lanes[i], &y[i], &h[i]));
        assert_true(y[i] >= y0 && y[i] + h[i] <= y0 + th);
        if (i)
            assert_true(y[i] >= y[i - 1] + h[i - 1]);
    }
    int sbuf = viz_view_find_counter(f->v, "chip 0 core 0", "SBUF in use");
    int hbm = viz_view_find_counter(f->v, "chip 0", "HBM bandwidth");
    int cy, ch, hy, hh;
    assert_true(viz_view_counter_row(f->v, sbuf, &cy, &ch));
    assert_true(viz_view_counter_row(f->v, hbm, &hy, &hh));
    assert_true(cy > y[2] && cy < y[3]); /* core 0's counter under its lanes */
    assert_true(hy > y[3]);              /* the chip's under its cores */
    /* the window maps 0..4000 ns onto the whole track width */
    assert_int_equal(x_at(f->v, 0), x0);
    assert_int_equal(x_at(f->v, 2000), x0 + tw / 2);
}

/* Known slices have their colour at known x; gaps have none. */
static void test_slice_colours(void **state)
{
    fixture_t *f = *state;
    viz_canvas_render(f->c, f->v);
    uint32_t matmul = viz_view_slice_colour(f->v, f->pe0, "matmul", NULL, VIZ_COLOUR_ENGINE);
    uint32_t ldw = viz_view_slice_colour(f->v, f->pe0, "ldweights", NULL, VIZ_COLOUR_ENGINE);
    uint32_t act = viz_view_slice_colour(f->v, f->act0, "activate", NULL, VIZ_COLOUR_ENGINE);
    assert_int_not_equal(matmul, act);
    int ype = lane_box_y(f->v, f->pe0), yact = lane_box_y(f->v, f->act0);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 1500), ype), matmul);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 1100), ype), matmul);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 250), ype), ldw);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 2750), yact), act);
    /* nothing on pe between 2000 and 4000 ns, nothing on act at 1500 ns */
    uint32_t gap = viz_canvas_pixel(f->c, x_at(f->v, 2750), ype);
    assert_int_not_equal(gap, matmul);
    assert_int_not_equal(gap, ldw);
    assert_int_not_equal(viz_canvas_pixel(f->c, x_at(f->v, 1500), yact), act);
    /* core 1's matmul covers its whole lane */
    int ype1 = lane_box_y(f->v, f->pe1);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 3900), ype1), matmul);
    /* the DMA transfer, in the DMA colour family */
    uint32_t dma = viz_view_slice_colour(f->v, f->q0, "hbm->sbuf", NULL, VIZ_COLOUR_ENGINE);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 500), lane_box_y(f->v, f->q0)), dma);

    /* by stall cause: the activate waited on a semaphore, the matmul did not */
    viz_view_set_colour_mode(f->v, VIZ_COLOUR_STALL);
    viz_canvas_render(f->c, f->v);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 2750), yact), VIZ_RGB_STALL_SEMAPHORE);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 1500), ype), VIZ_RGB_STALL_NONE);
    /* 'c' switches back */
    assert_true(viz_view_key(f->v, VIZ_KEY_CHAR, 'c', 0));
    assert_int_equal(viz_view_colour_mode(f->v), VIZ_COLOUR_ENGINE);
    viz_canvas_render(f->c, f->v);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(f->v, 2750), yact), act);
}

/* Hovering a slice draws a tooltip box next to the pointer with text in it; moving away
 * removes it. */
static void test_tooltip(void **state)
{
    fixture_t *f = *state;
    int x = x_at(f->v, 1500), y = lane_box_y(f->v, f->pe0) + 4;
    int bx = x + 16 + 4, by = y + 18 + 4; /* inside the box, left of its text */
    viz_view_hover(f->v, -1, -1);
    viz_canvas_render(f->c, f->v);
    assert_int_not_equal(viz_canvas_pixel(f->c, bx, by), VIZ_RGB_TOOLTIP);
    viz_view_hover(f->v, x, y);
    viz_slice_info_t info;
    assert_true(viz_view_hovered(f->v, &info));
    assert_string_equal(info.name, "matmul");
    assert_int_equal(info.line, 11);
    assert_int_equal(info.start_ps, 1000 * NS);
    assert_int_equal(info.dur_ps, 1000 * NS);
    viz_canvas_render(f->c, f->v);
    assert_int_equal(viz_canvas_pixel(f->c, bx, by), VIZ_RGB_TOOLTIP);
    /* its first line holds text: some pixel differs from the box colour */
    int ink = 0;
    for (int yy = by + 3; yy < by + 14 && !ink; yy++)
        for (int xx = bx + 4; xx < bx + 60 && !ink; xx++)
            ink = viz_canvas_pixel(f->c, xx, yy) != VIZ_RGB_TOOLTIP;
    assert_true(ink);
    /* the stalled activate's tooltip; then the mouse leaves */
    viz_view_hover(f->v, x_at(f->v, 2750), lane_box_y(f->v, f->act0) + 4);
    assert_true(viz_view_hovered(f->v, &info));
    assert_string_equal(info.name, "activate");
    assert_string_equal(info.stall, "semaphore done");
    assert_int_equal(info.wait_ps, 500 * NS);
    viz_view_hover(f->v, -1, -1);
    assert_false(viz_view_hovered(f->v, &info));
    viz_canvas_render(f->c, f->v);
    assert_int_not_equal(viz_canvas_pixel(f->c, bx, by), VIZ_RGB_TOOLTIP);
}

static void assert_near(double a, double b, double tol)
{
    if (a < b - tol || a > b + tol) {
        fprintf(stderr, "%.6f is not %.6f +- %g\n", a, b, tol);
        fail();
    }
}

/* Zoom keeps the time under the anchor; pan moves by pixels; keys do the same. */
static void test_zoom_pan(void **state)
{
    fixture_t *f = *state;
    viz_view_t *v = f->v;
    int x0, tw, y0, th;
    viz_view_track_area(v, &x0, &tw, &y0, &th);
    double a, b;
    viz_view_set_window(v, 0, 4000.0 * NS);
    int ax = x_at(v, 1000);
    double at = viz_view_time_of_x(v, ax);
    viz_view_zoom(v, 2.0, ax);
    viz_view_window(v, &a, &b);
    assert_near(b - a, 2000.0 * NS, 1);
    assert_near(viz_view_time_of_x(v, ax), at, 1);
    /* x and time are inverse */
    assert_near(viz_view_x_of_time(v, viz_view_time_of_x(v, x0 + 123)), x0 + 123, 1e-6);
    /* pan a quarter of the width: a quarter of the span later */
    double a0 = a;
    viz_view_pan(v, tw / 4.0);
    viz_view_window(v, &a, &b);
    assert_near(a - a0, 500.0 * NS, 1);
    /* keys: + zooms in 1.5x about the middle, - undoes it, Right pans 10%, 0 fits */
    double span = b - a, mid = (a + b) / 2;
    assert_true(viz_view_key(v, VIZ_KEY_CHAR, '+', 0));
    viz_view_window(v, &a, &b);
    assert_near(b - a, span / 1.5, 1);
    assert_near((a + b) / 2, mid, span * 0.01);
    assert_true(viz_view_key(v, VIZ_KEY_CHAR, '-', 0));
    viz_view_window(v, &a, &b);
    assert_near(b - a, span, 1);
    double before = a;
    assert_true(viz_view_key(v, VIZ_KEY_RIGHT, 0, 0));
    viz_view_window(v, &a, &b);
    assert_near(a - before, span * 0.1, span * 0.01);
    assert_true(viz_view_key(v, VIZ_KEY_CHAR, '0', 0));
    viz_view_window(v, &a, &b);
    assert_true(a <= 0 && b >= 4000.0 * NS && b - a < 4200.0 * NS);
    /* the wheel zooms about the pointer */
    int wx = x0 + tw / 4;
    at = viz_view_time_of_x(v, wx);
    span = b - a;
    assert_true(viz_view_wheel(v, wx, y0 + 10, 0, 2, 0));
    viz_view_window(v, &a, &b);
    assert_near(b - a, span / 1.5625, 1);
    assert_near(viz_view_time_of_x(v, wx), at, 1);
    /* dragging pans: 100 px to the right shows earlier times */
    viz_view_set_window(v, 1000.0 * NS, 3000.0 * NS);
    int my = lane_box_y(v, f->act0);
    viz_view_mouse_down(v, x0 + 300, my, VIZ_BUTTON_LEFT, 0);
    viz_view_mouse_move(v, x0 + 400, my, 0);
    viz_view_mouse_up(v, x0 + 400, my, VIZ_BUTTON_LEFT, 0);
    viz_view_window(v, &a, &b);
    assert_near(a, 1000.0 * NS - 100.0 * 2000.0 * NS / tw, 1);
    /* a range swept with shift, then f zooms to it */
    viz_view_mouse_down(v, x0 + 100, my, VIZ_BUTTON_LEFT, VIZ_MOD_SHIFT);
    viz_view_mouse_move(v, x0 + 300, my, VIZ_MOD_SHIFT);
    viz_view_mouse_up(v, x0 + 300, my, VIZ_BUTTON_LEFT, VIZ_MOD_SHIFT);
    double ra = viz_view_time_of_x(v, x0 + 100), rb = viz_view_time_of_x(v, x0 + 300);
    assert_true(viz_view_key(v, VIZ_KEY_CHAR, 'f', 0));
    viz_view_window(v, &a, &b);
    assert_near(a, ra, 1);
    assert_near(b, rb, 1);
    /* no narrower than 20 ps however far one zooms */
    for (int i = 0; i < 200; i++)
        viz_view_zoom(v, 10, -1);
    viz_view_window(v, &a, &b);
    assert_true(b - a >= 19.99);
    viz_view_set_window(v, 0, 4000.0 * NS);
}

/* Clicking the matmul selects it and draws its semaphore flow to the activate. */
static void test_select_flows(void **state)
{
    fixture_t *f = *state;
    viz_view_t *v = f->v;
    viz_view_set_window(v, 0, 4000.0 * NS);
    int ype = lane_box_y(v, f->pe0);
    viz_canvas_render(f->c, v);
    /* no flow colour anywhere before */
    int x1 = x_at(v, 1000), x2 = x_at(v, 2600);
    int yact = lane_box_y(v, f->act0);
    int seen = 0;
    for (int y = ype - 20; y < yact + 20; y++)
        for (int x = x1; x < x2; x++)
            seen += viz_canvas_pixel(f->c, x, y) == VIZ_RGB_FLOW_SEMAPHORE;
    assert_int_equal(seen, 0);
    assert_true(viz_view_click(v, x_at(v, 1500), ype + 3, 0));
    viz_slice_info_t info;
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "matmul");
    assert_int_equal(info.lane, f->pe0);
    assert_int_equal(viz_view_selected_flow_count(v), 1);
    viz_canvas_render(f->c, v);
    for (int y = ype - 20; y < yact + 20; y++)
        for (int x = x1; x < x2; x++)
            seen += viz_canvas_pixel(f->c, x, y) == VIZ_RGB_FLOW_SEMAPHORE;
    assert_true(seen > 20);
    /* the selection outline is drawn around the box */
    int found = 0;
    for (int y = ype - 6; y < ype + 2 && !found; y++)
        found = viz_canvas_pixel(f->c, x_at(v, 1500), y) == VIZ_RGB_SELECTION;
    assert_true(found);
    /* the activate has the same flow, coming in */
    assert_true(viz_view_click(v, x_at(v, 2750), yact + 3, 0));
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "activate");
    assert_int_equal(viz_view_selected_flow_count(v), 1);
    /* '.' and ',' walk the lane; Escape clears */
    assert_true(viz_view_click(v, x_at(v, 250), ype + 3, 0));
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "ldweights");
    viz_view_key(v, VIZ_KEY_CHAR, '.', 0);
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "matmul");
    viz_view_key(v, VIZ_KEY_ESCAPE, 0, 0);
    assert_false(viz_view_selected(v, &info));
    assert_false(viz_view_quit_requested(v));
    viz_view_set_window(v, 0, 4000.0 * NS);
}

/* Folding a core hides its lanes; its header row then shows their slices merged. Clicking
 * the header's name unfolds it. */
static void test_fold(void **state)
{
    fixture_t *f = *state;
    viz_view_t *v = f->v;
    int ype, h;
    assert_true(viz_view_lane_row(v, f->pe0, &ype, &h));
    assert_int_equal(viz_view_collapsed(v, "chip 0 core 0"), 0);
    assert_int_equal(viz_view_set_collapsed(v, "chip 0 core 0", 1), 0);
    assert_int_equal(viz_view_set_collapsed(v, "no such group", 1), -1);
    int y, hh;
    assert_false(viz_view_lane_row(v, f->pe0, &y, &hh));
    assert_false(viz_view_lane_row(v, f->act0, &y, &hh));
    /* core 1 moved up */
    int ype1;
    assert_true(viz_view_lane_row(v, f->pe1, &ype1, &hh));
    assert_true(ype1 < ype + 60);
    viz_canvas_render(f->c, v);
    /* the folded header is the row just above the pe lane was: a matmul at 1500 ns there */
    int hy = ype - 20 + 10; /* header rows are 20 px, pe was right under it */
    uint32_t matmul = viz_view_slice_colour(v, f->pe0, "matmul", NULL, VIZ_COLOUR_ENGINE);
    assert_int_equal(viz_canvas_pixel(f->c, x_at(v, 1500), hy - 4), matmul);
    /* click its name: unfolded */
    assert_true(viz_view_click(v, 30, hy, 0));
    assert_int_equal(viz_view_collapsed(v, "chip 0 core 0"), 0);
    assert_true(viz_view_lane_row(v, f->pe0, &y, &hh));
    assert_int_equal(y, ype);
    /* [ folds all, ] opens all */
    viz_view_key(v, VIZ_KEY_CHAR, '[', 0);
    assert_int_equal(viz_view_collapsed(v, "chip 0 core 1"), 1);
    viz_view_key(v, VIZ_KEY_CHAR, ']', 0);
    assert_int_equal(viz_view_collapsed(v, "chip 0 core 1"), 0);
    assert_true(viz_view_lane_row(v, f->pe0, &y, &hh));
}

static void type_text(viz_view_t *v, const char *s)
{
    for (; *s; s++)
        viz_view_key(v, VIZ_KEY_CHAR, *s, 0);
}

/* "/" text Enter finds and selects; n and N go round; line numbers work. */
static void test_search(void **state)
{
    fixture_t *f = *state;
    viz_view_t *v = f->v;
    viz_view_set_window(v, 0, 4000.0 * NS);
    viz_view_key(v, VIZ_KEY_CHAR, '/', 0);
    type_text(v, "matmx");
    viz_view_key(v, VIZ_KEY_BACKSPACE, 0, 0);
    type_text(v, "ul");
    viz_view_key(v, VIZ_KEY_ENTER, 0, 0);
    viz_slice_info_t info;
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "matmul");
    uint64_t first = info.start_ps;
    viz_view_key(v, VIZ_KEY_CHAR, 'n', 0);
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "matmul");
    assert_true(info.start_ps != first || info.lane != f->pe0);
    viz_view_key(v, VIZ_KEY_CHAR, 'N', 0);
    assert_true(viz_view_selected(v, &info));
    assert_int_equal(info.start_ps, first);
    assert_int_equal(viz_view_search(v, "MATMUL"), 2); /* case does not matter */
    assert_int_equal(viz_view_search(v, "gelu"), 1);   /* operands */
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "activate");
    assert_int_equal(viz_view_search(v, "semaphore done"), 1); /* stall cause */
    assert_int_equal(viz_view_search(v, "line 10"), 1);
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.name, "ldweights");
    assert_int_equal(viz_view_search(v, ":11"), 2);
    assert_int_equal(viz_view_search(v, "nothing like this"), 0);
    /* Escape while typing cancels without searching */
    viz_view_key(v, VIZ_KEY_CHAR, '/', 0);
    type_text(v, "act");
    viz_view_key(v, VIZ_KEY_ESCAPE, 0, 0);
    assert_false(viz_view_quit_requested(v));
    viz_view_select(v, -1, -1);
}

/* ? shows the help over everything (the screen darkens), any click or ? hides it; q quits. */
static void test_help_and_quit(void **state)
{
    fixture_t *f = *state;
    viz_view_t *v = f->v;
    viz_view_select(v, -1, -1);
    viz_canvas_render(f->c, v);
    uint32_t before = viz_canvas_pixel(f->c, 3, H - 3);
    assert_true(viz_view_key(v, VIZ_KEY_CHAR, '?', 0));
    assert_true(viz_view_help_shown(v));
    viz_canvas_render(f->c, v);
    uint32_t after = viz_canvas_pixel(f->c, 3, H - 3);
    assert_true((after & 0xff) < (before & 0xff) && (after >> 16) < (before >> 16));
    /* the help box in the middle */
    int box = 0;
    for (int x = W / 2 - 100; x < W / 2 + 100 && !box; x++)
        box = viz_canvas_pixel(f->c, x, H / 2) == VIZ_RGB_TOOLTIP;
    assert_true(box);
    viz_view_key(v, VIZ_KEY_F1, 0, 0);
    assert_false(viz_view_help_shown(v));
    viz_view_key(v, VIZ_KEY_CHAR, '?', 0);
    viz_view_key(v, VIZ_KEY_ESCAPE, 0, 0); /* Escape closes help first */
    assert_false(viz_view_help_shown(v));
    assert_false(viz_view_quit_requested(v));
    viz_view_key(v, VIZ_KEY_ESCAPE, 0, 0); /* nothing left to dismiss: quit */
    assert_true(viz_view_quit_requested(v));
}

/*
 * Thousands of slices in one pixel: merged into one box per pixel column, coloured by the
 * kind that covers most of it. A lane of back-to-back pairs "long" (3 ns) and "short"
 * (1 ns): at any zoom where a pixel holds many pairs, the pixel is "long"'s colour.
 */
static void test_aggregation(void **state)
{
    (void)state;
    const char *path = tu_join(dir, "dense.pftrace");
    trc_writer_t *w = NULL;
    char err[256];
    assert_int_equal(trc_writer_open(path, TRC_FORMAT_PFTRACE, &w, err, sizeof err), NCSIM_OK);
    uint32_t p = trc_pid_core(0), tid = trc_tid(p, TRC_TRACK_ENGINE, 2);
    w_process(w, p, "chip 0 core 0", 0);
    w_track(w, p, tid, "dve", 2);
    uint64_t t = 0;
    for (int i = 0; i < 50000; i++) {
        w_instr(w, p, tid, "long", t, 3 * NS, 20, NULL, 0, NULL);
        w_instr(w, p, tid, "short", t + 3 * NS, 1 * NS, 21, NULL, 0, NULL);
        t += 4 * NS;
    }
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
    viz_trace_t *tr = load(path);
    assert_int_equal(viz_trace_slice_count(tr), 100000);
    viz_view_t *v = viz_view_create(tr, W, H);
    viz_canvas_t *c = NULL;
    assert_int_equal(viz_canvas_create(W, H, &c, err, sizeof err), NCSIM_OK);
    int lane = viz_view_find_lane(v, "chip 0 core 0", "dve");
    uint32_t lc = viz_view_slice_colour(v, lane, "long", NULL, VIZ_COLOUR_ENGINE);
    uint32_t sc = viz_view_slice_colour(v, lane, "short", NULL, VIZ_COLOUR_ENGINE);
    if (lc == sc) /* same shade by chance: the test would prove nothing */
        skip();
    int y = lane_box_y(v, lane);
    static const double spans_ns[] = {200000, 20000, 2000};
    for (size_t k = 0; k < 3; k++) {
        viz_view_set_window(v, 1000.0 * NS, (1000.0 + spans_ns[k]) * NS);
        viz_canvas_render(c, v);
        int x0, tw, y0, th, longs = 0;
        viz_view_track_area(v, &x0, &tw, &y0, &th);
        for (int x = x0 + 10; x < x0 + tw - 10; x += 37)
            longs += viz_canvas_pixel(c, x, y) == lc;
        int n = (tw - 20 + 36) / 37;
        if (longs != n)
            fprintf(stderr,
                    "span %g ns: %d of %d pixels the dominant colour %06x (%06x at x0+10)\n",
                    spans_ns[k], longs, n, lc, viz_canvas_pixel(c, x0 + 10, y));
        assert_int_equal(longs, n);
    }
    /* zoomed in to 100 ns: each slice its own box, both colours */
    viz_view_set_window(v, 1000.0 * NS, 1100.0 * NS);
    viz_canvas_render(c, v);
    assert_int_equal(viz_canvas_pixel(c, x_at(v, 1001.5), y), lc);
    assert_int_equal(viz_canvas_pixel(c, x_at(v, 1003.5), y), sc);
    /* hovering a merged pixel still finds a real slice */
    viz_view_set_window(v, 0, 200000.0 * NS);
    viz_view_hover(v, x_at(v, 50000), y + 2);
    viz_slice_info_t info;
    assert_true(viz_view_hovered(v, &info));
    assert_true(strcmp(info.name, "long") == 0 || strcmp(info.name, "short") == 0);
    assert_true(info.start_ps <= 50000 * NS + 200 * NS && info.start_ps + 200 * NS >= 50000 * NS);
    viz_canvas_free(c);
    viz_view_free(v);
    viz_trace_free(tr);
}

/* The three formats load to the same content. */
static void test_formats(void **state)
{
    (void)state;
    static const char *const names[] = {"same.json", "same.json.gz", "same.pftrace"};
    size_t slices = 0, flows = 0;
    uint64_t end = 0;
    for (int i = 0; i < 3; i++) {
        write_reference(tu_join(dir, names[i]));
        viz_trace_t *t = load(tu_join(dir, names[i]));
        if (i == 0) {
            slices = viz_trace_slice_count(t);
            flows = viz_trace_flow_count(t);
            end = viz_trace_end_ps(t);
        }
        assert_int_equal(viz_trace_slice_count(t), slices);
        assert_int_equal(viz_trace_flow_count(t), flows);
        assert_int_equal(viz_trace_end_ps(t), end);
        viz_trace_free(t);
    }
}

static int png_size(const char *path, unsigned *w, unsigned *h)
{
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(path, &len);
    if (!b || len < 24 || memcmp(b, "\x89PNG\r\n\x1a\n", 8) != 0 || memcmp(b + 12, "IHDR", 4)) {
        free(b);
        return -1;
    }
    *w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
    *h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
    free(b);
    return 0;
}

/* `ncsim run --trace` then `ncsim viz --png`, and the command's usage errors. */
static void test_cli_png(void **state)
{
    (void)state;
    char cmd[2048];
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "%s run %s --random-inputs 1 -q --trace %s", tu_ncsim(),
             tu_source_path("kernels/demo_gemm.nca"), tu_join(dir, "gemm.pftrace"));
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
    snprintf(cmd, sizeof cmd, "%s viz %s --png %s --width 900 --height 500 --start 1000 --end 9000",
             tu_ncsim(), tu_join(dir, "gemm.pftrace"), tu_join(dir, "gemm.png"));
    rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
    unsigned w = 0, h = 0;
    assert_int_equal(png_size(tu_join(dir, "gemm.png"), &w, &h), 0);
    assert_int_equal(w, 900);
    assert_int_equal(h, 500);
    /* same input, same pixels */
    snprintf(cmd, sizeof cmd,
             "%s viz %s --png %s --width 900 --height 500 --start 1000 --end 9000 && cmp %s %s",
             tu_ncsim(), tu_join(dir, "gemm.pftrace"), tu_join(dir, "gemm2.png"),
             tu_join(dir, "gemm.png"), tu_join(dir, "gemm2.png"));
    rc = tu_run(cmd, &out);
    free(out);
    assert_int_equal(rc, 0);
    /* usage errors: exit 2 with a message */
    static const char *const bad[] = {"", "--width abc", "--colour pink", "--start 5 --end 1",
                                      "--bogus"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s viz %s %s --png %s", tu_ncsim(),
                 i ? tu_join(dir, "gemm.pftrace") : "", bad[i], tu_join(dir, "bad.png"));
        rc = tu_run(cmd, &out);
        assert_non_null(out);
        if (rc != 2)
            fprintf(stderr, "'%s': rc %d: %s\n", bad[i], rc, out);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(out, "ncsim viz"));
        free(out);
    }
    /* help */
    snprintf(cmd, sizeof cmd, "%s viz --help", tu_ncsim());
    rc = tu_run(cmd, &out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "--png"));
    free(out);
}

int main(void)
{
    setenv("SDL_VIDEODRIVER", "dummy", 1);
    setenv("SDL_RENDER_DRIVER", "software", 1);
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_counts, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_lane_positions, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_slice_colours, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_tooltip, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_zoom_pan, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_select_flows, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_fold, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_search, setup_reference, teardown_reference),
        cmocka_unit_test_setup_teardown(test_help_and_quit, setup_reference, teardown_reference),
        cmocka_unit_test(test_aggregation),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_cli_png),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
