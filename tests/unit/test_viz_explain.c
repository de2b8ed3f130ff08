/*
 * test_viz_explain.c -- the viewer's part of "explain the time" (docs/explain.md), headless:
 * two traces on one time axis (ncsim viz A B), wait strips for slices too short to draw, and
 * the cost breakdown in the slice information.
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
    fprintf(stderr, "test_viz_explain: built without the viewer (no SDL2): skipped\n");
    return 77;
}
#else
#include "viz.h"

#define NS 1000ull /* ps */

static char dir[256];

/* `n` back-to-back bf16 matmuls of 183 ns on core 0. */
static void write_matmuls(const char *trace, int n)
{
    char prog[64], text[512];
    snprintf(prog, sizeof prog, "mm%d.nca", n);
    snprintf(text, sizeof text,
             ".core 0\n.sbuf w bf16 [128, 128]\n.sbuf x bf16 [128, 512]\n"
             ".psum acc fp32 [128, 512]\n.engine pe\n.loop i = 0, %d\n    matmul acc, w, x\n"
             ".endloop\n",
             n);
    assert_int_equal(tu_write_file(tu_join(dir, prog), text, strlen(text)), 0);
    assert_int_equal(
        tu_sh("cd %s && %s run %s --timing-only -q --trace %s", dir, tu_ncsim(), prog, trace), 0);
}

static int top_y(const viz_view_t *v, int lane)
{
    int y, h;
    assert_true(viz_view_lane_row(v, lane, &y, &h));
    return y + 4;
}

/* A with 10 matmuls, B with 30: one time axis, A's lanes above B's; where A has ended, B's pe
 * lane is still busy. */
static void test_two_traces(void **state)
{
    (void)state;
    write_matmuls("a.json", 10);
    write_matmuls("b.pftrace", 30);
    viz_trace_t *a = NULL, *t = NULL;
    char err[512];
    assert_int_equal(viz_trace_load(tu_join(dir, "a.json"), &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(
        viz_trace_load_pair(tu_join(dir, "a.json"), tu_join(dir, "b.pftrace"), &t, err, sizeof err),
        NCSIM_OK);
    assert_int_equal(viz_trace_runs(t), 2);
    assert_int_equal(viz_trace_runs(a), 1);
    /* each matmul D, STAT, MOV is an ldweights and a matmul: 20 slices in A, 60 in B */
    assert_int_equal(viz_trace_slice_count(t), 4 * viz_trace_slice_count(a));
    assert_int_equal(viz_trace_lane_count(t), 2 * viz_trace_lane_count(a));
    viz_view_t *v = viz_view_create(t, 1000, 700);
    assert_non_null(v);
    int pa = viz_view_find_lane(v, "A \xc2\xb7 chip 0 core 0", "pe");
    int pb = viz_view_find_lane(v, "B \xc2\xb7 chip 0 core 0", "pe");
    assert_true(pa >= 0 && pb >= 0);
    assert_int_equal(viz_view_find_lane(v, "chip 0 core 0", "pe"), -1);
    assert_true(viz_view_collapsed(v, "A \xc2\xb7 chip 0") >= 0);
    assert_true(viz_view_collapsed(v, "B \xc2\xb7 chip 0") >= 0);
    viz_view_set_window(v, 0, 6000.0 * NS);
    viz_canvas_t *c = NULL;
    assert_int_equal(viz_canvas_create(1000, 700, &c, err, sizeof err), NCSIM_OK);
    viz_canvas_render(c, v);
    int ya = top_y(v, pa), yb = top_y(v, pb);
    assert_true(yb > ya); /* A above B */
    uint32_t mm = viz_view_slice_colour(v, pb, "matmul", NULL, VIZ_COLOUR_ENGINE);
    /* at 1000 ns both run matmuls; at 4000 ns (A ended near 1.9 us) only B */
    int x1 = (int)viz_view_x_of_time(v, 1000.0 * NS), x4 = (int)viz_view_x_of_time(v, 4000.0 * NS);
    assert_int_equal(viz_canvas_pixel(c, x1, ya), mm);
    assert_int_equal(viz_canvas_pixel(c, x1, yb), mm);
    assert_int_not_equal(viz_canvas_pixel(c, x4, ya), mm);
    assert_int_equal(viz_canvas_pixel(c, x4, yb), mm);
    /* the two pe lanes agree on where a time is: B's slice at 1000 ns starts where A's does */
    viz_canvas_free(c);
    viz_view_free(v);
    viz_trace_free(t);
    viz_trace_free(a);
    /* the command line takes two traces; a missing second one is an I/O error */
    assert_int_equal(tu_sh("cd %s && %s viz a.json b.pftrace --png pair.png", dir, tu_ncsim()), 0);
    assert_int_equal(
        tu_sh("cd %s && %s viz a.json nothere.json --png x.png 2>/dev/null", dir, tu_ncsim()), 3);
    assert_int_equal(
        tu_sh("cd %s && %s viz a.json b.pftrace a.json --png x.png 2>/dev/null", dir, tu_ncsim()),
        2);
}

/* ---- wait strips for slices too short to draw ---------------------------------------------- */

static void w_put(trc_writer_t *w, const trc_record_t *r)
{
    assert_int_equal(trc_write(w, r), NCSIM_OK);
}

/* Lane "act" of core 0: 1 ns slices every 1000 ns; the ones at 3000 and 7000 ns waited 400 ns
 * on a semaphore, the others not at all. At 10 us across ~900 pixels a slice is a tenth of a
 * pixel (merged into columns), the 400 ns waits 36 pixels. */
static void write_short_waits(const char *path)
{
    trc_writer_t *w = NULL;
    char err[256];
    assert_int_equal(trc_writer_open(path, trc_format_for_path(path), &w, err, sizeof err),
                     NCSIM_OK);
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_RUN;
    r.u.run.program = "waits.nca";
    r.u.run.arch = "trn1";
    r.u.run.chips = 1;
    r.u.run.cores = 1;
    w_put(w, &r);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_PROCESS;
    r.u.process.pid = trc_pid_core(0);
    r.u.process.name = "chip 0 core 0";
    w_put(w, &r);
    uint32_t tid = trc_tid(trc_pid_core(0), TRC_TRACK_ENGINE, 1);
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_TRACK;
    r.u.track.pid = trc_pid_core(0);
    r.u.track.tid = tid;
    r.u.track.name = "act";
    w_put(w, &r);
    for (int i = 0; i < 10; i++) {
        int waited = i == 3 || i == 7;
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_SLICE;
        r.u.slice.kind = TRC_SLICE_INSTR;
        r.u.slice.pid = trc_pid_core(0);
        r.u.slice.tid = tid;
        r.u.slice.ts_ps = (uint64_t)i * 1000 * NS;
        r.u.slice.dur_ps = 1 * NS;
        r.u.slice.name = "activate";
        r.u.slice.a.instr.ii = 1 * NS;
        r.u.slice.a.instr.latency = 1 * NS;
        r.u.slice.a.instr.wait = waited ? 400 * NS : 0;
        r.u.slice.a.instr.wait_semaphore = waited ? 400 * NS : 0;
        r.u.slice.a.instr.stall = waited ? "semaphore s" : NULL;
        r.u.slice.a.instr.cost = "II = max(MIN_II=64, N=4 x s=1) = 64 cycles = 45.714 ns";
        w_put(w, &r);
    }
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
}

static int reddish(uint32_t rgb)
{
    int rr = (int)(rgb >> 16 & 0xff), g = (int)(rgb >> 8 & 0xff), b = (int)(rgb & 0xff);
    return rr > g + 40 && rr > b + 40;
}

static void test_short_slice_waits(void **state)
{
    (void)state;
    const char *path = tu_join(dir, "waits.json");
    write_short_waits(path);
    viz_trace_t *t = NULL;
    char err[512];
    assert_int_equal(viz_trace_load(path, &t, err, sizeof err), NCSIM_OK);
    viz_view_t *v = viz_view_create(t, 1000, 300);
    assert_non_null(v);
    viz_view_set_window(v, 0, 10000.0 * NS);
    int lane = viz_view_find_lane(v, "chip 0 core 0", "act");
    assert_true(lane >= 0);
    int y, h;
    assert_true(viz_view_lane_row(v, lane, &y, &h));
    int xw = (int)viz_view_x_of_time(v, 2800.0 * NS);  /* inside the wait before 3000 ns */
    int xw7 = (int)viz_view_x_of_time(v, 6700.0 * NS); /* before 7000 ns */
    int xn = (int)viz_view_x_of_time(v, 4800.0 * NS);  /* before 5000 ns: no wait */
    viz_canvas_t *c = NULL;
    assert_int_equal(viz_canvas_create(1000, 300, &c, err, sizeof err), NCSIM_OK);
    /* a slice is a fraction of a pixel here */
    assert_true(viz_view_x_of_time(v, 1.0 * NS) - viz_view_x_of_time(v, 0) < 0.5);
    viz_view_set_colour_mode(v, VIZ_COLOUR_STALL);
    viz_canvas_render(c, v);
    /* a thin strip in the semaphore colour in the lower part of the lane */
    int rows = 0, rows7 = 0, rows_none = 0, lowest = -1;
    for (int yy = y; yy < y + h; yy++) {
        if (reddish(viz_canvas_pixel(c, xw, yy))) {
            rows++;
            lowest = yy;
        }
        rows7 += reddish(viz_canvas_pixel(c, xw7, yy));
        rows_none += reddish(viz_canvas_pixel(c, xn, yy));
    }
    assert_true(rows >= 2 && rows <= 4);
    assert_true(rows7 >= 2 && rows7 <= 4);
    assert_int_equal(rows_none, 0);
    assert_true(lowest > y + h / 2);
    /* engine colours: no strips */
    viz_view_set_colour_mode(v, VIZ_COLOUR_ENGINE);
    viz_canvas_render(c, v);
    assert_int_equal(viz_canvas_pixel(c, xw, lowest), viz_canvas_pixel(c, xn, lowest));
    /* the slice information carries the cost breakdown */
    viz_view_select(v, lane, 3);
    viz_slice_info_t info;
    assert_true(viz_view_selected(v, &info));
    assert_string_equal(info.cost, "II = max(MIN_II=64, N=4 x s=1) = 64 cycles = 45.714 ns");
    assert_int_equal(info.wait_ps, 400 * NS);
    viz_canvas_free(c);
    viz_view_free(v);
    viz_trace_free(t);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_traces),
        cmocka_unit_test(test_short_slice_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
