/*
 * bench_viz.c -- the viewer on a big trace: load time per format, then frame times of
 * headless renders at several zoom levels while panning, a search and a hover.
 *
 *   bench_viz [INSTRUCTIONS [OUTDIR [WIDTHxHEIGHT]]]
 *
 * The trace is generated (traces/ writer, no simulation): one chip of two cores, each with
 * pe, act, dve, pool and sp streams of back-to-back instructions with small stalls, a DMA
 * transfer on one of 16 queues for every sp instruction, HBM and SBUF counters, a semaphore
 * flow every fourth dve instruction and a "dma issue" flow per transfer. INSTRUCTIONS
 * (default 1,000,000) counts engine instructions over both cores; DMA transfers come on
 * top. The same trace is written as .pftrace, .json.gz and .json in OUTDIR (default /tmp)
 * and deleted afterwards (kept when BENCH_VIZ_KEEP is set, to open them in the window). Frames are
 * drawn at WIDTHxHEIGHT (default 1600x1000) with SDL's software renderer; a frame is everything
 * drawn (lanes, counters, axis, minimap, labels) without the copy back to memory a PNG needs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trace.h"

#ifndef NCSIM_HAVE_VIZ
int main(void)
{
    puts("bench_viz: built without the viewer (SDL2 not found), nothing to measure");
    return 0;
}
#else
#include "viz.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rng_state >> 33) % n);
}

static int put(trc_writer_t *w, const trc_record_t *r)
{
    return trc_write(w, r) == NCSIM_OK ? 0 : -1;
}

typedef struct engine_gen {
    const char *name;
    const char *const *mnemonics;
    unsigned nmn;
    uint64_t ii_ps[3];
    unsigned share; /* percent of the instructions */
} engine_gen_t;

static const char *const pe_mn[] = {"ldweights", "matmul", "matmul"};
static const char *const act_mn[] = {"activate", "activate", "activate"};
static const char *const dve_mn[] = {"tensor_scalar", "tensor_tensor", "tensor_reduce"};
static const char *const pool_mn[] = {"tensor_copy", "iota", "tensor_copy"};
static const char *const sp_mn[] = {"dma", "dma", "dma"};

static const engine_gen_t engines[5] = {
    {"pe", pe_mn, 3, {11429, 182857, 182857}, 30}, {"act", act_mn, 3, {60000, 60000, 60000}, 15},
    {"dve", dve_mn, 3, {40000, 45000, 52000}, 25}, {"pool", pool_mn, 3, {45000, 30000, 45000}, 15},
    {"sp", sp_mn, 3, {45714, 45714, 45714}, 15},
};

/* Write the synthetic trace; returns the number of slices, 0 on error. */
static size_t write_trace(const char *path, size_t ninstr)
{
    trc_format_t fmt = trc_format_for_path(path);
    trc_writer_t *w = NULL;
    char err[512];
    if (trc_writer_open(path, fmt, &w, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "bench_viz: %s\n", err);
        return 0;
    }
    rng_state = 0x9e3779b97f4a7c15ull;
    trc_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_RUN;
    r.u.run.generator = "bench_viz";
    r.u.run.program = "synthetic.nca";
    r.u.run.arch = "trn1";
    r.u.run.chips = 1;
    r.u.run.cores = 2;
    r.u.run.timing_only = 1;
    r.u.run.peak_flops_per_core = 91.75e12;
    r.u.run.hbm_peak_gbps = 820;
    r.u.run.dma_peak_gbps = 435.2;
    int bad = put(w, &r);
    size_t nslices = 0;
    uint64_t flow_id = 1;
    for (uint32_t core = 0; core < 2 && !bad; core++) {
        uint32_t pid = trc_pid_core(core);
        char pname[32];
        snprintf(pname, sizeof pname, "chip 0 core %u", core);
        memset(&r, 0, sizeof r);
        r.kind = TRC_REC_PROCESS;
        r.u.process.pid = pid;
        r.u.process.name = pname;
        r.u.process.sort_index = (int32_t)core;
        bad |= put(w, &r);
        for (uint32_t e = 0; e < 5; e++) {
            memset(&r, 0, sizeof r);
            r.kind = TRC_REC_TRACK;
            r.u.track.pid = pid;
            r.u.track.tid = trc_tid(pid, TRC_TRACK_ENGINE, e);
            r.u.track.name = engines[e].name;
            r.u.track.sort_index = (int32_t)e;
            bad |= put(w, &r);
        }
        for (uint32_t q = 0; q < 16; q++) {
            char qn[16];
            snprintf(qn, sizeof qn, "dma q%u", q);
            memset(&r, 0, sizeof r);
            r.kind = TRC_REC_TRACK;
            r.u.track.pid = pid;
            r.u.track.tid = trc_tid(pid, TRC_TRACK_DMA_QUEUE, q);
            r.u.track.name = qn;
            r.u.track.sort_index = (int32_t)(100 + q);
            bad |= put(w, &r);
        }
        uint64_t queue_free[16] = {0};
        uint64_t sbuf = 0;
        /* the five streams advance together in time order, as the simulator writes them:
         * a flow must reach the writer before the slice it ends on */
        uint64_t t[5] = {0}, ndone[5] = {0}, nwant[5];
        for (int e = 0; e < 5; e++)
            nwant[e] = ninstr / 2 * engines[e].share / 100;
        uint64_t posts[64]; /* dve posts (their start times) act has not consumed yet */
        unsigned nposts = 0, post_head = 0;
        char ops[96];
        for (;;) {
            int e = -1;
            for (int k = 0; k < 5; k++)
                if (ndone[k] < nwant[k] && (e < 0 || t[k] < t[e]))
                    e = k;
            if (e < 0 || bad)
                break;
            const engine_gen_t *g = &engines[e];
            uint64_t i = ndone[e]++;
            uint32_t tid = trc_tid(pid, TRC_TRACK_ENGINE, (uint32_t)e);
            unsigned k = rnd(g->nmn);
            uint64_t wait = rnd(4) == 0 ? (uint64_t)rnd(200) * 1000 : 0;
            if (e == 1 && nposts) { /* act waits for the oldest dve post */
                uint64_t ready = posts[post_head] + 80000;
                if (ready > t[e]) {
                    wait = ready - t[e];
                    t[e] = ready;
                } else {
                    wait = 0;
                }
                memset(&r, 0, sizeof r);
                r.kind = TRC_REC_FLOW;
                r.u.flow.id = flow_id++;
                r.u.flow.cat = "semaphore";
                r.u.flow.name = "s";
                r.u.flow.from_pid = pid;
                r.u.flow.from_tid = trc_tid(pid, TRC_TRACK_ENGINE, 2);
                r.u.flow.from_ts_ps = posts[post_head];
                r.u.flow.to_pid = pid;
                r.u.flow.to_tid = tid;
                r.u.flow.to_ts_ps = t[e];
                bad |= put(w, &r);
                post_head = (post_head + 1) % 64;
                nposts--;
            } else {
                t[e] += wait;
            }
            memset(&r, 0, sizeof r);
            r.kind = TRC_REC_SLICE;
            trc_slice_t *s = &r.u.slice;
            s->kind = TRC_SLICE_INSTR;
            s->pid = pid;
            s->tid = tid;
            s->ts_ps = t[e];
            s->dur_ps = g->ii_ps[k];
            s->name = g->mnemonics[k];
            snprintf(ops, sizeof ops, "t%llu[:, %llu], t%llu | wait s%d >= %llu",
                     (unsigned long long)(i % 7), (unsigned long long)(i % 512),
                     (unsigned long long)((i + 3) % 7), e, (unsigned long long)(i / 4));
            s->a.instr.index = i;
            s->a.instr.line = 10 + i % 200;
            s->a.instr.operands = ops;
            s->a.instr.ii = g->ii_ps[k];
            s->a.instr.latency = g->ii_ps[k] * 2;
            s->a.instr.bytes = 65536;
            s->a.instr.wait = wait;
            s->a.instr.wait_semaphore = wait;
            s->a.instr.stall = wait ? "semaphore s" : NULL;
            bad |= put(w, &r);
            nslices++;
            if (e == 2 && i % 4 == 3 && nposts < 64) { /* dve posts */
                posts[(post_head + nposts) % 64] = t[e];
                nposts++;
            }
            if (e == 4) { /* the transfer this dma instruction issues */
                uint32_t q = (uint32_t)(i % 16);
                uint64_t a = t[e] + 700000;
                if (a < queue_free[q])
                    a = queue_free[q];
                uint64_t d = 400000 + (uint64_t)rnd(1600) * 1000;
                queue_free[q] = a + d;
                memset(&r, 0, sizeof r);
                r.kind = TRC_REC_FLOW;
                r.u.flow.id = flow_id++;
                r.u.flow.cat = "dma";
                r.u.flow.name = "dma issue";
                r.u.flow.from_pid = pid;
                r.u.flow.from_tid = tid;
                r.u.flow.from_ts_ps = t[e];
                r.u.flow.to_pid = pid;
                r.u.flow.to_tid = trc_tid(pid, TRC_TRACK_DMA_QUEUE, q);
                r.u.flow.to_ts_ps = a;
                bad |= put(w, &r);
                memset(&r, 0, sizeof r);
                r.kind = TRC_REC_SLICE;
                s->kind = TRC_SLICE_DMA;
                s->pid = pid;
                s->tid = trc_tid(pid, TRC_TRACK_DMA_QUEUE, q);
                s->ts_ps = a;
                s->dur_ps = d;
                s->name = i % 3 ? "hbm->sbuf" : "sbuf->hbm";
                s->a.dma.index = i;
                s->a.dma.issuer = "sp";
                s->a.dma.line = 40;
                s->a.dma.operands = ops;
                s->a.dma.bytes = 65536;
                s->a.dma.src = i % 3 ? "hbm" : "sbuf";
                s->a.dma.dst = i % 3 ? "sbuf" : "hbm";
                s->a.dma.queued = a - t[e];
                s->a.dma.gbps = 65536.0 / ((double)d / 1000.0);
                bad |= put(w, &r);
                nslices++;
                memset(&r, 0, sizeof r);
                r.kind = TRC_REC_COUNTER;
                r.u.counter.pid = TRC_PID_CHIP_BASE;
                r.u.counter.name = "HBM bandwidth";
                r.u.counter.unit = "GB/s";
                r.u.counter.ts_ps = a;
                r.u.counter.value = 200.0 + rnd(600);
                bad |= put(w, &r);
                if (i % 64 == 0) {
                    sbuf = (sbuf + 65536) % (24u << 20);
                    r.u.counter.pid = pid;
                    r.u.counter.name = "SBUF in use";
                    r.u.counter.unit = "bytes";
                    r.u.counter.value = (double)sbuf;
                    bad |= put(w, &r);
                }
            }
            t[e] += g->ii_ps[k];
        }
    }
    memset(&r, 0, sizeof r);
    r.kind = TRC_REC_PROCESS;
    r.u.process.pid = TRC_PID_CHIP_BASE;
    r.u.process.name = "chip 0";
    r.u.process.sort_index = 2;
    bad |= put(w, &r);
    if (trc_writer_close(w, err, sizeof err) != NCSIM_OK || bad) {
        fprintf(stderr, "bench_viz: cannot write %s: %s\n", path, err);
        return 0;
    }
    return nslices;
}

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) ? -1 : (long)st.st_size;
}

static long rss_mb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * sysconf(_SC_PAGESIZE) / (1024 * 1024);
}

int main(int argc, char **argv)
{
    size_t ninstr = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1000000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    int W = 1600, H = 1000;
    if (argc > 3 && sscanf(argv[3], "%dx%d", &W, &H) != 2) {
        fprintf(stderr, "usage: bench_viz [INSTRUCTIONS [OUTDIR [WIDTHxHEIGHT]]]\n");
        return 2;
    }
    static const char *const exts[] = {".pftrace", ".json.gz", ".json"};
    char paths[3][512];
    size_t nslices = 0;
    printf("bench_viz: %zu engine instructions on 2 cores, %dx%d frames\n\n", ninstr, W, H);
    printf("%-10s %10s %12s %10s %10s %10s\n", "format", "file (MB)", "slices", "write (s)",
           "load (s)", "RSS (MB)");
    viz_trace_t *keep = NULL;
    for (int f = 0; f < 3; f++) {
        snprintf(paths[f], sizeof paths[f], "%s/bench_viz_%d%s", dir, (int)getpid(), exts[f]);
        double tw0 = now();
        nslices = write_trace(paths[f], ninstr);
        if (!nslices)
            return 1;
        double tw = now() - tw0;
        viz_trace_t *t = NULL;
        char err[512];
        viz_trace_free(keep); /* one trace in memory at a time: RSS is this one's */
        keep = NULL;
        double t0 = now();
        if (viz_trace_load(paths[f], &t, err, sizeof err) != NCSIM_OK) {
            fprintf(stderr, "bench_viz: %s\n", err);
            return 1;
        }
        double dt = now() - t0;
        printf("%-10s %10.1f %12zu %10.2f %10.2f %10ld\n", exts[f],
               (double)file_size(paths[f]) / 1e6, viz_trace_slice_count(t), tw, dt, rss_mb());
        fflush(stdout);
        if (!getenv("BENCH_VIZ_KEEP"))
            unlink(paths[f]);
        keep = t;
    }
    viz_trace_t *t = keep;
    viz_view_t *v = viz_view_create(t, W, H);
    viz_canvas_t *c = NULL;
    char err[512];
    if (!v || viz_canvas_create(W, H, &c, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "bench_viz: %s\n", v ? err : "out of memory");
        return 1;
    }
    viz_view_set_collapsed(v, "chip 0 core 0/dma queues", 0);
    viz_view_set_collapsed(v, "chip 0 core 1", 0);
    printf("\nframes (software renderer, %d frames each, panning 25 px between frames)\n", 30);
    printf("%-12s %14s %10s %10s\n", "zoom", "window", "mean (ms)", "max (ms)");
    double full0 = (double)viz_trace_start_ps(t), full1 = (double)viz_trace_end_ps(t);
    static const double zooms[] = {1, 10, 100, 1000, 100000};
    for (size_t z = 0; z < sizeof zooms / sizeof zooms[0]; z++) {
        double span = (full1 - full0) / zooms[z];
        double mid = (full0 + full1) / 2;
        viz_view_set_window(v, mid - span / 2 - (zooms[z] == 1 ? span * 0.01 : 0), mid + span / 2);
        double total = 0, mx = 0;
        int n = 30;
        for (int k = 0; k < n; k++) {
            double t0 = now();
            viz_canvas_render(c, v);
            double dt = now() - t0;
            total += dt;
            if (dt > mx)
                mx = dt;
            viz_view_pan(v, k < n / 2 ? 25 : -25);
        }
        char win[48];
        double a, b;
        viz_view_window(v, &a, &b);
        if (b - a >= 1e9)
            snprintf(win, sizeof win, "%.2f ms", (b - a) / 1e9);
        else if (b - a >= 1e6)
            snprintf(win, sizeof win, "%.2f us", (b - a) / 1e6);
        else
            snprintf(win, sizeof win, "%.2f ns", (b - a) / 1e3);
        char zl[32];
        snprintf(zl, sizeof zl, "%gx", zooms[z]);
        printf("%-12s %14s %10.2f %10.2f\n", zl, win, total / n * 1e3, mx * 1e3);
    }
    viz_view_fit(v);
    double t0 = now();
    size_t m = viz_view_search(v, "matmul");
    double ds = now() - t0;
    t0 = now();
    viz_canvas_render(c, v);
    double dr = now() - t0;
    printf(
        "\nsearch \"matmul\": %zu matches in %.1f ms; frame with matches and selection: %.2f ms\n",
        m, ds * 1e3, dr * 1e3);
    int x0, tw, y0, th;
    viz_view_track_area(v, &x0, &tw, &y0, &th);
    /* with the whole trace in the window, three pixels of tolerance hold hundreds of slices
     * of a lane (the test compares up to 512); zoomed in, a few */
    static const double hover_zooms[] = {1, 1000};
    for (size_t z = 0; z < 2; z++) {
        double span = (full1 - full0) / hover_zooms[z], mid = (full0 + full1) / 2;
        viz_view_set_window(v, mid - span / 2, mid + span / 2);
        t0 = now();
        for (int k = 0; k < 100; k++)
            viz_view_hover(v, x0 + k * tw / 100, y0 + 60);
        printf("hover hit test at %gx: %.0f ns each (mean of 100)\n", hover_zooms[z],
               (now() - t0) * 1e9 / 100);
    }
    viz_canvas_free(c);
    viz_view_free(v);
    viz_trace_free(t);
    return 0;
}
#endif
