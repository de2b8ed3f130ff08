/*
 * test_viz_errors.c -- the viewer on files that are not good traces: missing, empty, not a
 * trace, truncated at many points and with bytes flipped, in each format. Loading gives a
 * clear error (NCSIM_IO or NCSIM_FORMAT, a message naming the file) and never crashes
 * (run this under ASan to mean it); `ncsim viz` exits 3 with the message and writes no PNG.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "trace.h"

#ifndef NCSIM_HAVE_VIZ
int main(void)
{
    fprintf(stderr, "test_viz_errors: built without the viewer (no SDL2): skipped\n");
    return 77;
}
#else
#include "viz.h"

static char dir[256];

/* A small but complete trace: two cores, engines, a DMA queue, counters, flows. */
static void write_trace(const char *path)
{
    trc_writer_t *w = NULL;
    char err[256];
    assert_int_equal(trc_writer_open(path, trc_format_for_path(path), &w, err, sizeof err),
                     NCSIM_OK);
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_RUN;
    r.u.run.generator = "test_viz_errors";
    r.u.run.program = "p.nca";
    r.u.run.arch = "trn1";
    r.u.run.chips = 1;
    r.u.run.cores = 2;
    assert_int_equal(trc_write(w, &r), NCSIM_OK);
    uint64_t flow = 1;
    for (uint32_t core = 0; core < 2; core++) {
        uint32_t pid = trc_pid_core(core);
        char name[32];
        snprintf(name, sizeof name, "chip 0 core %u", core);
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_PROCESS;
        r.u.process.pid = pid;
        r.u.process.name = name;
        assert_int_equal(trc_write(w, &r), NCSIM_OK);
        static const char *const tracks[] = {"pe",     "act",    "dve",   "dma q0",
                                             "dma q1", "dma q2", "dma q3"};
        for (uint32_t k = 0; k < 7; k++) {
            memset(&r, 0, sizeof r);
            r.kind = TRC_REC_TRACK;
            r.u.track.pid = pid;
            r.u.track.tid = k < 3 ? trc_tid(pid, TRC_TRACK_ENGINE, k)
                                  : trc_tid(pid, TRC_TRACK_DMA_QUEUE, k - 3);
            r.u.track.name = tracks[k];
            r.u.track.sort_index = (int32_t)k;
            assert_int_equal(trc_write(w, &r), NCSIM_OK);
        }
        for (uint32_t i = 0; i < 200; i++) {
            uint32_t e = i % 3;
            memset(&r, 0, sizeof r);
            r.kind = TRC_REC_SLICE;
            r.u.slice.kind = TRC_SLICE_INSTR;
            r.u.slice.pid = pid;
            r.u.slice.tid = trc_tid(pid, TRC_TRACK_ENGINE, e);
            r.u.slice.ts_ps = (uint64_t)i * 50000;
            r.u.slice.dur_ps = 30000;
            r.u.slice.name = e == 0 ? "matmul" : e == 1 ? "activate" : "tensor_tensor";
            r.u.slice.a.instr.index = i / 3;
            r.u.slice.a.instr.line = 7 + i % 5;
            r.u.slice.a.instr.operands = "a, b, c | wait s >= 1";
            r.u.slice.a.instr.ii = 30000;
            r.u.slice.a.instr.latency = 60000;
            r.u.slice.a.instr.wait = i % 4 ? 0 : 1000;
            r.u.slice.a.instr.stall = i % 4 ? NULL : "semaphore s";
            assert_int_equal(trc_write(w, &r), NCSIM_OK);
            if (i % 10 == 0) {
                memset(&r, 0, sizeof r);
                r.kind = TRC_REC_SLICE;
                r.u.slice.kind = TRC_SLICE_DMA;
                r.u.slice.pid = pid;
                r.u.slice.tid = trc_tid(pid, TRC_TRACK_DMA_QUEUE, i % 4);
                r.u.slice.ts_ps = (uint64_t)i * 50000 + 10000;
                r.u.slice.dur_ps = 100000;
                r.u.slice.name = "hbm->sbuf";
                r.u.slice.a.dma.issuer = "sp";
                r.u.slice.a.dma.bytes = 4096;
                r.u.slice.a.dma.src = "hbm";
                r.u.slice.a.dma.dst = "sbuf";
                assert_int_equal(trc_write(w, &r), NCSIM_OK);
                memset(&r, 0, sizeof r);
                r.kind = TRC_REC_COUNTER;
                r.u.counter.pid = pid;
                r.u.counter.name = "SBUF in use";
                r.u.counter.unit = "bytes";
                r.u.counter.ts_ps = (uint64_t)i * 50000;
                r.u.counter.value = i * 1024.0;
                assert_int_equal(trc_write(w, &r), NCSIM_OK);
            }
            if (i % 3 == 0 && i + 1 < 200) {
                memset(&r, 0, sizeof r);
                r.kind = TRC_REC_FLOW;
                r.u.flow.id = flow++;
                r.u.flow.cat = "semaphore";
                r.u.flow.name = "s";
                r.u.flow.from_pid = r.u.flow.to_pid = pid;
                r.u.flow.from_tid = trc_tid(pid, TRC_TRACK_ENGINE, 0);
                r.u.flow.to_tid = trc_tid(pid, TRC_TRACK_ENGINE, 1);
                r.u.flow.from_ts_ps = (uint64_t)i * 50000;
                r.u.flow.to_ts_ps = (uint64_t)(i + 1) * 50000;
                assert_int_equal(trc_write(w, &r), NCSIM_OK);
            }
        }
    }
    assert_int_equal(trc_writer_close(w, err, sizeof err), NCSIM_OK);
}

/* Load `path`: OK (then the trace must be usable: a view and a render), or an error status
 * with a message that names the file. Returns the status. */
static ncsim_status_t try_load(const char *path, viz_canvas_t *c)
{
    viz_trace_t *t = NULL;
    char err[1024] = "";
    ncsim_status_t st = viz_trace_load(path, &t, err, sizeof err);
    if (st == NCSIM_OK) {
        assert_non_null(t);
        viz_view_t *v = viz_view_create(t, 800, 400);
        assert_non_null(v);
        viz_canvas_render(c, v);
        viz_view_hover(v, 400, 150);
        viz_view_key(v, VIZ_KEY_CHAR, '0', 0);
        viz_canvas_render(c, v);
        viz_view_free(v);
        viz_trace_free(t);
        return st;
    }
    assert_null(t);
    if (st != NCSIM_IO && st != NCSIM_FORMAT)
        fprintf(stderr, "%s: status %d: %s\n", path, (int)st, err);
    assert_true(st == NCSIM_IO || st == NCSIM_FORMAT);
    assert_true(strlen(err) > 10);
    assert_non_null(strstr(err, path));
    return st;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    assert_int_equal(tu_write_file(path, data, n), 0);
}

static void test_not_traces(void **state)
{
    viz_canvas_t *c = *state;
    assert_int_equal(try_load(tu_join(dir, "does-not-exist.json"), c), NCSIM_IO);
    assert_int_equal(try_load(dir, c) != NCSIM_OK, 1); /* a directory */
    write_bytes(tu_join(dir, "empty.json"), "", 0);
    assert_int_equal(try_load(tu_join(dir, "empty.json"), c), NCSIM_FORMAT);
    const char *text = "hello, this is not a trace\n";
    write_bytes(tu_join(dir, "text.json"), text, strlen(text));
    assert_int_equal(try_load(tu_join(dir, "text.json"), c), NCSIM_FORMAT);
    const char *other = "{\"a\": [1, 2, 3], \"b\": {\"c\": null}}";
    write_bytes(tu_join(dir, "other.json"), other, strlen(other));
    assert_int_equal(try_load(tu_join(dir, "other.json"), c), NCSIM_FORMAT);
    const char *events = "{\"traceEvents\": []}";
    write_bytes(tu_join(dir, "noevents.json"), events, strlen(events));
    assert_int_equal(try_load(tu_join(dir, "noevents.json"), c), NCSIM_FORMAT);
    unsigned char noise[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof noise; i++) {
        x = x * 1103515245u + 12345u;
        noise[i] = (unsigned char)(x >> 16);
    }
    noise[0] = 0x0a; /* looks like a protobuf packet tag */
    write_bytes(tu_join(dir, "noise.pftrace"), noise, sizeof noise);
    assert_int_not_equal(try_load(tu_join(dir, "noise.pftrace"), c), NCSIM_OK);
}

/* Cut each format at many points: JSON and gzip must say so (a gzip stream missing even
 * its trailer is truncated); a .pftrace cut exactly between packets is a shorter valid
 * trace, anything else an error. */
static void test_truncated(void **state)
{
    viz_canvas_t *c = *state;
    static const char *const names[] = {"full.json", "full.json.gz", "full.pftrace"};
    for (int f = 0; f < 3; f++) {
        const char *path = tu_join(dir, names[f]);
        write_trace(path);
        assert_int_equal(try_load(path, c), NCSIM_OK);
        size_t len = 0;
        char *data = tu_read_file(path, &len);
        assert_non_null(data);
        assert_true(len > 1000);
        if (f == 0) /* a JSON file without its final newline is still whole */
            while (len && (data[len - 1] == '\n' || data[len - 1] == ' '))
                len--;
        size_t cuts[] = {1,        2,       7,       16,          100,          len / 10,
                         len / 4,  len / 3, len / 2, 2 * len / 3, len * 9 / 10, len - 100,
                         len - 10, len - 2, len - 1};
        int errors = 0, n = (int)(sizeof cuts / sizeof cuts[0]);
        for (int k = 0; k < n; k++) {
            char name[64];
            snprintf(name, sizeof name, "cut%d_%s", k, names[f]);
            const char *cut = tu_join(dir, name);
            write_bytes(cut, data, cuts[k]);
            ncsim_status_t st = try_load(cut, c);
            int must_fail = f == 0 || f == 1;
            if (must_fail && st == NCSIM_OK)
                fprintf(stderr, "%s cut at %zu of %zu bytes loaded without error\n", names[f],
                        cuts[k], len);
            if (must_fail)
                assert_int_not_equal(st, NCSIM_OK);
            errors += st != NCSIM_OK;
        }
        assert_true(errors >= n - 3);
        free(data);
    }
}

/* Flip bytes inside each format: an error or a trace that still draws, never a crash. */
static void test_corrupt(void **state)
{
    viz_canvas_t *c = *state;
    static const char *const names[] = {"good.json", "good.json.gz", "good.pftrace"};
    for (int f = 0; f < 3; f++) {
        const char *path = tu_join(dir, names[f]);
        write_trace(path);
        size_t len = 0;
        char *data = tu_read_file(path, &len);
        assert_non_null(data);
        uint32_t x = 777u + (uint32_t)f;
        for (int k = 0; k < 24; k++) {
            char *bad = malloc(len);
            assert_non_null(bad);
            memcpy(bad, data, len);
            for (int j = 0; j < 1 + k % 4; j++) {
                x = x * 1103515245u + 12345u;
                size_t at = (x >> 8) % len;
                bad[at] = (char)(bad[at] ^ (char)(1 + (x >> 24) % 255));
            }
            char name[64];
            snprintf(name, sizeof name, "bad%d_%s", k, names[f]);
            write_bytes(tu_join(dir, name), bad, len);
            try_load(tu_join(dir, name), c);
            free(bad);
        }
        free(data);
    }
}

/* The command: exit 3, the message names the file, no PNG left behind. */
static void test_cli(void **state)
{
    (void)state;
    write_trace(tu_join(dir, "cli.json"));
    size_t len;
    char *data = tu_read_file(tu_join(dir, "cli.json"), &len);
    assert_non_null(data);
    write_bytes(tu_join(dir, "cli_cut.json"), data, len / 2);
    free(data);
    static const char *const inputs[] = {"cli_cut.json", "missing.pftrace", "empty.json"};
    write_bytes(tu_join(dir, "empty.json"), "", 0);
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        char cmd[2048];
        unlink(tu_join(dir, "out.png"));
        snprintf(cmd, sizeof cmd, "%s viz %s --png %s", tu_ncsim(), tu_join(dir, inputs[i]),
                 tu_join(dir, "out.png"));
        char *out = NULL;
        int rc = tu_run(cmd, &out);
        assert_non_null(out);
        if (rc != 3)
            fprintf(stderr, "%s: rc %d: %s\n", inputs[i], rc, out);
        assert_int_equal(rc, 3);
        assert_non_null(strstr(out, "ncsim viz: "));
        assert_non_null(strstr(out, inputs[i]));
        assert_int_equal(access(tu_join(dir, "out.png"), F_OK), -1);
        free(out);
    }
}

/* SDL2 is opened by the viewer when it starts (viz/sdl_dyn.c), not linked: the other commands
 * do not load it, and a viewer without it says what to install (exit 4) and writes nothing. */
static void test_sdl_on_demand(void **state)
{
    (void)state;
    char cmd[2048];
    char *out = NULL;
    /* glibc's loader names every library it opens */
    snprintf(cmd, sizeof cmd, "LD_DEBUG=files %s run %s --timing-only -q", tu_ncsim(),
             tu_source_path("kernels/tutorial/01_dma.nca"));
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(out);
    assert_non_null(strstr(out, "libjansson")); /* LD_DEBUG did report the libraries */
    assert_null(strstr(out, "libSDL2"));
    free(out);
    write_trace(tu_join(dir, "sdl.json"));
    unlink(tu_join(dir, "out.png"));
    snprintf(cmd, sizeof cmd, "NCSIM_SDL_LIBRARY=%s %s viz %s --png %s",
             tu_join(dir, "no-such-libSDL2.so"), tu_ncsim(), tu_join(dir, "sdl.json"),
             tu_join(dir, "out.png"));
    out = NULL;
    int rc = tu_run(cmd, &out);
    assert_non_null(out);
    if (rc != 4 || !strstr(out, "cannot load SDL2"))
        fprintf(stderr, "rc %d: %s\n", rc, out);
    assert_int_equal(rc, 4);
    assert_non_null(strstr(out, "cannot load SDL2"));
    assert_non_null(strstr(out, "NCSIM_SDL_LIBRARY"));
    assert_int_equal(access(tu_join(dir, "out.png"), F_OK), -1);
    free(out);
}

static int setup(void **state)
{
    viz_canvas_t *c = NULL;
    char err[256];
    if (viz_canvas_create(800, 400, &c, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    viz_canvas_free(*state);
    return 0;
}

int main(void)
{
    setenv("SDL_VIDEODRIVER", "dummy", 1);
    setenv("SDL_RENDER_DRIVER", "software", 1);
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_traces),    cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupt),       cmocka_unit_test(test_cli),
        cmocka_unit_test(test_sdl_on_demand),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
