/*
 * bench_speed.c -- speed end to end, in one run (issue 17):
 *
 *   (a) text to statistics: instructions per host second of `ncsim run prog.nca --timing-only`
 *       (assembly + simulation) and of the same from the .ncx, at 1M and 8M instructions, on
 *       two programs: a DMA-heavy stream and the GEMM kernel kernels/gemm_c_blockfree;
 *       assembly in ns per instruction; .ncx load against assembly; bytes per instruction on
 *       disk and in memory (the program's arrays, after assembly and after loading);
 *   (b) tracing: the slowdown of a traced run against the untraced one, per format;
 *   (c) functional GEMM (kernels/gemm_c_blockfree) against one cblas_sgemm of the same shape.
 *
 *   bench_speed [small]     ("small": a few thousand instructions and a small GEMM, to check in
 *                            CI that the benchmark runs and prints; the figures mean nothing)
 *   bench_speed trace       (b) alone, at full size
 *   bench_speed functional [M K N]  (c) alone, at full size (1024 2048 2048) or M x K x N
 *
 * The stream of (a) and (b) is bench_asm's software-pipelined load / matmul / gelu / store
 * stream on one core (4 instructions per iteration, half of them DMAs: the hardest case for
 * the bandwidth model). Times are process CPU seconds (the
 * steadier figure on a shared machine; a trace writer thread counts too), best of REPEAT runs;
 * wall-clock seconds are printed next to them. Kernels are read from $NCSIM_SOURCE_DIR.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "arch.h"
#include "blas.h"
#include "diag.h"
#include "isa.h"
#include "load.h"
#include "ncx.h"
#include "sim.h"
#include "trace_sink.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct stamp {
    double wall, cpu;
} stamp_t;

static stamp_t stamp(void)
{
    return (stamp_t){clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_PROCESS_CPUTIME_ID)};
}

static stamp_t since(stamp_t a)
{
    stamp_t b = stamp();
    return (stamp_t){b.wall - a.wall, b.cpu - a.cpu};
}

static void keep_best(stamp_t *best, stamp_t t, int first)
{
    if (first || t.cpu < best->cpu)
        *best = t;
}

static mdl_arch_t arch;
static isa_geometry_t geo;
static char tmpdir[256] = "/tmp";

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_speed: %s: %s\n", what, msg ? msg : "failed");
    exit(1);
}

static void write_loop_program(const char *path, long iters)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die(path, "cannot write");
    fprintf(f,
            "; bench_speed: %ld iterations of load / matmul / gelu / store\n"
            ".hbm x bf16 [8192, 512] input\n.hbm w bf16 [128, 128] input\n"
            ".hbm y fp32 [8192, 512] output\n.core 0\n.sbuf ws bf16 [128, 128]\n"
            ".sbuf xs bf16 [128, 4, 512]\n.sbuf ys fp32 [128, 4, 512]\n"
            ".psum acc fp32 [128, 4, 512]\n"
            ".sem wl\n.sem loaded\n.sem mm\n.sem act_done\n.sem stored\n.sem done\n"
            ".let T = %ld\n.engine sp\ndma ws, w, queue=15 | post wl\n"
            ".loop i = 0, T + 2\n"
            "    .if i < T\n"
            "        .let r = (i %% 64) * 128\n"
            "        dma xs[:, i %% 4, :], x[r:r + 128, :], queue=i %% 8 | wait act_done >= i - 3 "
            "| post loaded\n"
            "    .endif\n"
            "    .if i >= 2\n"
            "        .let j = i - 2\n"
            "        dma y[(j %% 64) * 128:(j %% 64 + 1) * 128, :], ys[:, j %% 4, :], "
            "queue=8 + j %% 8 | wait act_done >= j + 1 | post stored\n"
            "    .endif\n"
            ".endloop\n"
            "nop | wait stored >= T | post done\n.engine pe\nldweights ws | wait wl >= 1\n"
            ".loop i = 0, T\n"
            "    matmul acc[:, i %% 4, :], xs[:, i %% 4, :] | wait loaded >= i + 1 "
            "| wait act_done >= i - 3 | post mm\n"
            ".endloop\n"
            "nop | wait done >= 1\n.engine act\n"
            ".loop i = 0, T\n"
            "    activate ys[:, i %% 4, :], acc[:, i %% 4, :], gelu, scale=0.125 "
            "| wait mm >= i + 1 | wait stored >= i - 3 | post act_done\n"
            ".endloop\n",
            iters, iters);
    if (fclose(f))
        die(path, "cannot write");
}

static isa_program_t *load(const char *path)
{
    isa_diag_t d;
    isa_diag_init(&d, 5);
    isa_program_t *p = NULL;
    if (sim_load_program(path, &geo, NULL, NULL, &p, &d) != NCSIM_OK)
        die(path, d.text);
    isa_diag_free(&d);
    return p;
}

static uint64_t last_events; /* events of the last simulate() */

/* sim_create + sim_run (+ the trace when `trace` is set); returns the instructions run. */
static uint64_t simulate(const isa_program_t *p, int timing_only, const char *trace)
{
    char err[1024];
    sim_trace_file_t *tf = NULL;
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &arch;
    so.timing_only = timing_only;
    if (trace) {
        sim_trace_options_t to;
        memset(&to, 0, sizeof to);
        to.path = trace;
        to.program = "bench_speed";
        to.timing_only = timing_only;
        if (sim_trace_open(&to, p, &arch, &tf, err, sizeof err) != NCSIM_OK)
            die(trace, err);
        so.trace = sim_trace_sink(tf);
    }
    sim_t *s;
    if (sim_create(p, &so, &s, err, sizeof err) != NCSIM_OK)
        die("sim_create", err);
    if (sim_run(s, SIM_RUN_UNTIL_IDLE, 0) != NCSIM_OK || !sim_finished(s))
        die("sim_run", sim_error(s));
    uint64_t n = sim_stats(s)->instructions;
    last_events = sim_stats(s)->events;
    sim_destroy(s);
    if (tf && sim_trace_close(tf, NULL, err, sizeof err) != NCSIM_OK)
        die(trace, err);
    return n;
}

/* Bytes of the program's arrays per instruction (what a loaded program holds). */
static double mem_per_instr(const isa_program_t *p)
{
    double b = (double)p->ninstrs * sizeof *p->instrs + (double)p->nviews * sizeof *p->views +
               (double)p->nargs * sizeof *p->args + (double)p->nints * sizeof *p->ints +
               (double)p->ntensors * sizeof *p->tensors;
    return b / (double)(p->ninstrs ? p->ninstrs : 1);
}

static double file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_size : 0.0;
}

/* (a) at one size; returns the untraced simulation's CPU seconds (for (b)). */
static void end_to_end(const char *nca, int repeat)
{
    char ncx[600];
    snprintf(ncx, sizeof ncx, "%s.ncx", nca);
    stamp_t asm_t = {0}, simt = {0}, ncx_t = {0}, e2e = {0}, e2e_ncx = {0};
    uint64_t n = 0;
    double mem_asm = 0, mem_ncx = 0;
    for (int r = 0; r < repeat; r++) {
        stamp_t t0 = stamp();
        isa_program_t *p = load(nca);
        stamp_t ta = since(t0);
        stamp_t t1 = stamp();
        n = simulate(p, 1, NULL);
        stamp_t ts = since(t1);
        stamp_t te = since(t0);
        keep_best(&asm_t, ta, r == 0);
        keep_best(&simt, ts, r == 0);
        keep_best(&e2e, te, r == 0);
        mem_asm = mem_per_instr(p);
        if (r == 0) {
            uint8_t *buf;
            size_t len;
            if (isa_ncx_write(p, &buf, &len) != NCSIM_OK || sim_write_file(ncx, buf, len))
                die(ncx, "cannot write");
            free(buf);
        }
        isa_program_free(p);
        t0 = stamp();
        p = load(ncx);
        stamp_t tl = since(t0);
        simulate(p, 1, NULL);
        stamp_t tn = since(t0);
        keep_best(&ncx_t, tl, r == 0);
        keep_best(&e2e_ncx, tn, r == 0);
        mem_ncx = mem_per_instr(p);
        isa_program_free(p);
    }
    double disk = file_size(ncx) / (double)n;
    printf("  %9llu instructions: .nca -> statistics %.3f s CPU (%.3f wall) = %5.2f M instr/s; "
           ".ncx -> statistics %.3f s CPU (%.3f wall) = %5.2f M instr/s\n",
           (unsigned long long)n, e2e.cpu, e2e.wall, (double)n / e2e.cpu / 1e6, e2e_ncx.cpu,
           e2e_ncx.wall, (double)n / e2e_ncx.cpu / 1e6);
    printf("  %9s  assembly %.0f ns/instr, .ncx load %.0f ns/instr (%.1fx faster than "
           "assembly), simulation %.2f M instr/s (%.0f ns/instr, %.2f events/instr)\n",
           "", asm_t.cpu / (double)n * 1e9, ncx_t.cpu / (double)n * 1e9, asm_t.cpu / ncx_t.cpu,
           (double)n / simt.cpu / 1e6, simt.cpu / (double)n * 1e9,
           (double)last_events / (double)n);
    printf("  %9s  bytes per instruction: %.1f on disk (.ncx), %.1f in memory assembled, %.1f "
           "loaded\n",
           "", disk, mem_asm, mem_ncx);
    unlink(ncx);
    unlink(nca);
}

static void end_to_end_stream(long iters, int repeat)
{
    char nca[512];
    snprintf(nca, sizeof nca, "%s/bench_speed_%ld_%ld.nca", tmpdir, (long)getpid(), iters);
    write_loop_program(nca, iters);
    end_to_end(nca, repeat);
}

static const char *kernel_with(const char *name, const char *const *sets);

/* kernels/gemm_c_blockfree.nca at M x 8192 x N: a real kernel, the workload issue 17 was
 * measured on (M=16384, N=32768: 828,416 instructions, 8% DMAs; nested loops, .if/.elif
 * chains and .let lines in its loop bodies). */
static void end_to_end_gemm(int m, int n, int repeat)
{
    char sm[32], sn[32];
    snprintf(sm, sizeof sm, "M=%d", m);
    snprintf(sn, sizeof sn, "N=%d", n);
    const char *sets[] = {sm, sn, NULL};
    printf("  gemm_c_blockfree M=%d K=8192 N=%d:\n", m, n);
    end_to_end(kernel_with("gemm_c_blockfree", sets), repeat);
}

/* (b) traced against untraced, on the program of (a). */
static void trace_overhead(long iters, int repeat)
{
    char nca[512];
    snprintf(nca, sizeof nca, "%s/bench_speed_tr_%ld.nca", tmpdir, (long)getpid());
    write_loop_program(nca, iters);
    isa_program_t *p = load(nca);
    unlink(nca);
    stamp_t base = {0};
    uint64_t n = 0;
    for (int r = 0; r < repeat; r++) {
        stamp_t t0 = stamp();
        n = simulate(p, 1, NULL);
        keep_best(&base, since(t0), r == 0);
    }
    printf("  untraced: %llu instructions, %.3f s CPU (%.3f wall)\n", (unsigned long long)n,
           base.cpu, base.wall);
    static const char *const fmts[] = {"pftrace", "json", "json.gz"};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        char path[600];
        snprintf(path, sizeof path, "%s/bench_speed_%ld.%s", tmpdir, (long)getpid(), fmts[f]);
        stamp_t best = {0};
        for (int r = 0; r < repeat; r++) {
            stamp_t t0 = stamp();
            simulate(p, 1, path);
            keep_best(&best, since(t0), r == 0);
        }
        printf("  %-8s %.3f s CPU (%.3f wall): %.2fx the untraced run (wall %.2fx), %.1f bytes "
               "per instruction\n",
               fmts[f], best.cpu, best.wall, best.cpu / base.cpu, best.wall / base.wall,
               file_size(path) / (double)n);
        unlink(path);
    }
    isa_program_free(p);
}

/* kernels/NAME.nca with `.let KEY = VALUE` lines replaced; returns a temporary path. */
static const char *kernel_with(const char *name, const char *const *sets)
{
    static char out[600];
    const char *src = getenv("NCSIM_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels/%s.nca", src ? src : ".", name);
    FILE *f = fopen(path, "r");
    if (!f)
        die(path, "cannot read (set NCSIM_SOURCE_DIR to the source tree)");
    snprintf(out, sizeof out, "%s/bench_speed_%ld_%s.nca", tmpdir, (long)getpid(), name);
    FILE *o = fopen(out, "w");
    if (!o)
        die(out, "cannot write");
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        int done = 0;
        for (int i = 0; sets[i] && !done; i++) {
            const char *eq = strchr(sets[i], '=');
            char want[128];
            snprintf(want, sizeof want, ".let %.*s =", (int)(eq - sets[i]), sets[i]);
            if (strncmp(line, want, strlen(want)) == 0) {
                fprintf(o, ".let %.*s = %s\n", (int)(eq - sets[i]), sets[i], eq + 1);
                done = 1;
            }
        }
        if (!done)
            fputs(line, o);
    }
    fclose(f);
    fclose(o);
    return out;
}

/* (c) functional GEMM against sgemm (same process, same OpenBLAS thread setting). */
static void functional_gemm(int m, int k, int n, int repeat)
{
    char sm[32], sk[32], sn[32];
    snprintf(sm, sizeof sm, "M=%d", m);
    snprintf(sk, sizeof sk, "K=%d", k);
    snprintf(sn, sizeof sn, "N=%d", n);
    const char *sets[] = {sm, sk, sn, NULL};
    const char *path = kernel_with("gemm_c_blockfree", sets);
    isa_program_t *p = load(path);
    unlink(path);
    int threads = mdl_blas_default_threads();
    const char *why = NULL;
    const mdl_sgemm_fn sgemm = mdl_blas_sgemm(&why);
    if (!sgemm)
        die("OpenBLAS", why);
    stamp_t sim = {0}, blas = {0}, first = {0};
    for (int r = 0; r < repeat; r++) {
        stamp_t t0 = stamp();
        simulate(p, 0, NULL);
        keep_best(&sim, since(t0), r == 0);
        if (r == 0)
            first = sim; /* cold: the later runs reuse its SBUF/PSUM pages */
    }
    float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b),
          *c = malloc((size_t)m * n * sizeof *c);
    if (!a || !b || !c)
        die("sgemm", "out of memory");
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = (float)(i % 1000) / 500.0f - 1.0f;
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = (float)(i % 997) / 500.0f - 1.0f;
    for (int r = 0; r < repeat; r++) {
        stamp_t t0 = stamp();
        sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n);
        keep_best(&blas, since(t0), r == 0);
    }
    printf("  gemm_c_blockfree M=%d K=%d N=%d, %d OpenBLAS thread%s: simulated %.3f s, sgemm "
           "%.3f s (wall; CPU %.3f and %.3f): ratio %.2f (CPU %.2f)\n",
           m, k, n, threads, threads == 1 ? "" : "s", sim.wall, blas.wall, sim.cpu, blas.cpu,
           sim.wall / blas.wall, sim.cpu / blas.cpu);
    printf("  the first simulation of the process (every page fresh, as in a one-off `ncsim "
           "run`): %.3f s CPU, ratio %.2f\n",
           first.cpu, first.cpu / blas.cpu);
    free(a);
    free(b);
    free(c);
    isa_program_free(p);
}

int main(int argc, char **argv)
{
    int small = argc > 1 && strcmp(argv[1], "small") == 0;
    int trace_only = argc > 1 && strcmp(argv[1], "trace") == 0;
    int gemm_only = argc > 1 && strcmp(argv[1], "functional") == 0;
    int gm = 1024, gk = 2048, gn = 2048;
    if (gemm_only && argc == 5) {
        gm = atoi(argv[2]);
        gk = atoi(argv[3]);
        gn = atoi(argv[4]);
        if (gm < 512 || gk < 512 || gn < 1024 || gm % 512 || gk % 512 || gn % 1024) {
            fputs("bench_speed functional M K N: M and K multiples of 512, N of 1024\n", stderr);
            return 2;
        }
    } else if (argc > 2 || (argc == 2 && !small && !trace_only && !gemm_only)) {
        fputs("usage: bench_speed [small | trace | functional [M K N]]\n", stderr);
        return 2;
    }
    const char *t = getenv("TMPDIR");
    if (t && *t)
        snprintf(tmpdir, sizeof tmpdir, "%s", t);
    char err[1024];
    if (mdl_arch_load("trn1", &arch, err, sizeof err) != NCSIM_OK)
        die("trn1", err);
    mdl_arch_geometry(&arch, &geo);
    printf("bench_speed%s: process CPU seconds, best of several runs\n",
           small ? " (small: checks that it runs; figures mean nothing)" : "");
    if (gemm_only) {
        printf("(c) functional GEMM against sgemm\n");
        functional_gemm(gm, gk, gn, 5);
        return 0;
    }
    if (trace_only) {
        printf("(b) tracing, timing-only\n");
        trace_overhead(249999, 2);
        return 0;
    }
    printf("(a) text to statistics, timing-only\n");
    printf("  load / matmul / gelu / store stream (half DMAs):\n");
    if (small) {
        end_to_end_stream(2499, 1);
    } else {
        end_to_end_stream(249999, 3);  /* 1,000,000 instructions */
        end_to_end_stream(1999999, 2); /* 8,000,000 */
    }
    if (small) {
        end_to_end_gemm(1024, 4096, 1);
    } else {
        end_to_end_gemm(16384, 32768, 3); /* 828,416 instructions */
        end_to_end_gemm(65536, 81920, 2); /* 8,278,016 */
    }
    printf("(b) tracing, timing-only\n");
    trace_overhead(small ? 2499 : 249999, small ? 1 : 2);
    printf("(c) functional GEMM against sgemm\n");
    if (small)
        functional_gemm(512, 512, 1024, 1); /* the smallest shape the kernel takes */
    else
        functional_gemm(1024, 2048, 2048, 3);
    return 0;
}
