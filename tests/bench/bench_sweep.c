/*
 * bench_sweep.c -- the speed of architecture exploration (issue 9, docs/exploration.md).
 *
 *   bench_sweep [--source DIR] [--points N] [--jobs J] [--repeat R] [--skip-sweep]
 *               [--only gemm_d|gemm_a|collective|sweep]
 *
 * Prints
 *   (1) timing-only simulation speed, single-threaded: simulated instructions (and events)
 *       per host second of sim_run() on GEMM (d) and GEMM (a) at full size (M=4096, K=8192,
 *       N=8192), assembly excluded, the best of R runs (default 3). Aim: 10 million/s.
 *   (2) memory per instruction: the assembled program's instruction and operand arrays, and
 *       the heap the simulator holds after the run (glibc mallinfo2), per instruction.
 *   (3) the same speed on a 16-chip (32-core) collective workload (all_reduce in a ring of
 *       all cores), or why it cannot run yet.
 *   (4) wall time of a sweep of N points (default 1000) of GEMM (a) at full size with J
 *       workers (default 2), through the library exactly as `ncsim sweep --jobs J` runs it:
 *       assemble once, fork, run, write the point files, merge the CSV. Aim: minutes.
 * --only runs one part (for profiling: `perf record bench_sweep --only gemm_a --repeat 20`).
 * DIR defaults to $NCSIM_SOURCE_DIR, else ".". The sweep runs in a fresh directory under /tmp
 * (left there: its CSV is the evidence).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "asm.h"
#include "diag.h"
#include "isa.h"
#include "load.h"
#include "sim.h"
#include "sweep.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static isa_program_t *assemble_text(const char *name, const char *text, const mdl_arch_t *arch)
{
    isa_geometry_t g;
    mdl_arch_geometry(arch, &g);
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = name;
    opt.geometry = g;
    isa_diag_t diag;
    isa_diag_init(&diag, 5);
    isa_program_t *prog = NULL;
    if (isa_assemble(text, strlen(text), &opt, &prog, &diag) != NCSIM_OK) {
        fprintf(stderr, "bench_sweep: %s:\n%s", name, diag.text ? diag.text : "");
        prog = NULL;
    }
    isa_diag_free(&diag);
    return prog;
}

static isa_program_t *assemble_file(const char *path, const mdl_arch_t *arch)
{
    isa_geometry_t g;
    mdl_arch_geometry(arch, &g);
    isa_diag_t diag;
    isa_diag_init(&diag, 5);
    isa_program_t *prog = NULL;
    if (sim_load_program(path, &g, NULL, NULL, &prog, &diag) != NCSIM_OK) {
        fprintf(stderr, "bench_sweep: %s:\n%s", path, diag.text ? diag.text : "");
        prog = NULL;
    }
    isa_diag_free(&diag);
    return prog;
}

/* Best-of-R timing-only speed; also the simulator's heap after the run. 0 on success. */
static int speed(const char *label, const isa_program_t *prog, const mdl_arch_t *arch, int repeat)
{
    double best = 1e30;
    uint64_t instrs = 0, events = 0, total_ps = 0;
    size_t sim_heap = 0;
    for (int r = 0; r < repeat; r++) {
        sim_options_t so;
        memset(&so, 0, sizeof so);
        so.arch = arch;
        so.timing_only = 1;
        char err[4096];
        size_t h0 = heap_in_use();
        sim_t *s = NULL;
        if (sim_create(prog, &so, &s, err, sizeof err) != NCSIM_OK) {
            printf("%-34s cannot run: %s\n", label, err);
            return -1;
        }
        double t0 = now_seconds();
        ncsim_status_t st = sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
        double t = now_seconds() - t0;
        if (st != NCSIM_OK) {
            const char *e = sim_error(s);
            const char *nl = strchr(e, '\n');
            printf("%-34s does not run yet: %.*s\n", label, nl ? (int)(nl - e) : (int)strlen(e),
                   e);
            sim_destroy(s);
            return -1;
        }
        const sim_stats_t *ss = sim_stats(s);
        instrs = ss->instructions;
        events = ss->events;
        total_ps = ss->total_ps;
        sim_heap = heap_in_use() - h0;
        sim_destroy(s);
        if (t < best)
            best = t;
    }
    size_t prog_bytes = (size_t)prog->ninstrs * sizeof(isa_instr_t) +
                        (size_t)prog->nargs * sizeof(isa_arg_t);
    printf("%-34s %9" PRIu64 " instructions %9" PRIu64 " events  %8.2f ms  %6.2f M instr/s  "
           "%6.2f M events/s  (simulated %.3f ms)\n",
           label, instrs, events, best * 1e3, (double)instrs / best / 1e6,
           (double)events / best / 1e6, (double)total_ps * 1e-9);
    printf("%-34s memory per instruction: program %.1f B (instructions + operands), simulator "
           "%.1f B (heap after the run)\n",
           "", (double)prog_bytes / (double)(prog->ninstrs ? prog->ninstrs : 1),
           (double)sim_heap / (double)(instrs ? instrs : 1));
    return 0;
}

/* 16 chips x 2 cores: every core's cc engine all-reduces its half of its chip's buffer with
 * every other core, `rounds` times. */
static char *collective_program(unsigned rounds, unsigned elems)
{
    size_t cap = 1 << 20, n = 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
#define ADD(...)                                                                                  \
    do {                                                                                          \
        int k_ = snprintf(t + n, cap - n, __VA_ARGS__);                                           \
        if (k_ < 0 || (size_t)k_ >= cap - n) {                                                    \
            free(t);                                                                              \
            return NULL;                                                                          \
        }                                                                                         \
        n += (size_t)k_;                                                                          \
    } while (0)
    ADD(".arch trn1\n.chips 16\n");
    for (unsigned c = 0; c < 16; c++)
        ADD(".hbm buf%u fp32 [2, %u, 128] scratch chip=%u\n", c, elems / 128, c);
    ADD(".group all = ");
    for (unsigned c = 0; c < 32; c++)
        ADD("%u%s", c, c == 31 ? "\n" : ", ");
    for (unsigned c = 0; c < 32; c++) {
        ADD(".core %u\n.engine cc\n.loop r = 0, %u\n", c, rounds);
        ADD("    all_reduce buf%u[%u, :, :], buf%u[%u, :, :], op=add, group=all\n", c / 2, c % 2, c / 2,
            c % 2);
        ADD(".endloop\n");
    }
#undef ADD
    return t;
}

static int run_sweep(const char *src, uint64_t points, unsigned jobs)
{
    char dir[] = "/tmp/ncsim-bench-sweep-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    char spec[256], out[256], csv[300];
    snprintf(spec, sizeof spec, "%s/gemm_a_hbm.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(csv, sizeof csv, "%s/results.csv", dir);
    FILE *f = fopen(spec, "w");
    if (!f) {
        perror(spec);
        return -1;
    }
    /* HBM bandwidth from 100 GB/s in steps of 4 GB/s: GEMM (a) at full size at every point */
    fprintf(f, "{ \"program\": \"%s/kernels/gemm_a_tiled.nca\", \"arch\": \"trn1\",\n"
               "  \"timing_only\": true,\n  \"grid\": { \"hbm.bandwidth_gbps\": [",
            src);
    for (uint64_t i = 0; i < points; i++)
        fprintf(f, "%s%" PRIu64, i ? ", " : "", 100 + 4 * i);
    fprintf(f, "] } }\n");
    fclose(f);
    double t0 = now_seconds();
    char err[8192];
    sim_sweep_t *sw = NULL;
    if (sim_sweep_load(spec, &sw, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "bench_sweep: %s\n", err);
        return -1;
    }
    double t_load = now_seconds() - t0;
    sim_sweep_run_options_t o = {out, jobs, 0, SIM_SWEEP_PROGRESS_AUTO};
    sim_sweep_summary_t sum;
    ncsim_status_t st = sim_sweep_run(sw, 0, points - 1, &o, &sum, err, sizeof err);
    double t_run = now_seconds() - t0;
    if (st != NCSIM_OK) {
        fprintf(stderr, "bench_sweep: %s\n", err);
        sim_sweep_free(sw);
        return -1;
    }
    sim_sweep_merge_summary_t ms;
    st = sim_sweep_merge(sw, out, csv, &ms, err, sizeof err);
    double t_all = now_seconds() - t0;
    sim_sweep_free(sw);
    if (st != NCSIM_OK) {
        fprintf(stderr, "bench_sweep: %s\n", err);
        return -1;
    }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double child_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    printf("sweep of %" PRIu64 " points of GEMM (a) at full size, %u workers: %.1f s wall "
           "(spec %.2f s, assembly and points %.1f s, merge %.2f s), %.1f points/s, workers' "
           "CPU %.1f s; %" PRIu64 " ok, %" PRIu64 " failed\n",
           points, jobs, t_all, t_load, t_run - t_load, t_all - t_run,
           (double)points / t_all, child_cpu, ms.ok, ms.failed);
    printf("  results: %s\n", csv);
    return ms.ok == points ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *src = getenv("NCSIM_SOURCE_DIR");
    if (!src)
        src = ".";
    uint64_t points = 1000;
    unsigned jobs = 2;
    int repeat = 3, skip_sweep = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--source") == 0 && i + 1 < argc)
            src = argv[++i];
        else if (strcmp(argv[i], "--points") == 0 && i + 1 < argc)
            points = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
            jobs = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--skip-sweep") == 0)
            skip_sweep = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: bench_sweep [--source DIR] [--points N] [--jobs J] "
                            "[--repeat R] [--skip-sweep] "
                            "[--only gemm_d|gemm_a|collective|sweep]\n");
            return 2;
        }
    }
    if (points == 0 || jobs == 0 || repeat < 1) {
        fputs("bench_sweep: --points, --jobs and --repeat must be positive\n", stderr);
        return 2;
    }
    mdl_arch_t trn1, trn1_32;
    char err[1024];
    if (mdl_arch_load("trn1", &trn1, err, sizeof err) != NCSIM_OK ||
        mdl_arch_load("trn1-32xl", &trn1_32, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "bench_sweep: %s\n", err);
        return 1;
    }
    int rc = 0;
    printf("== timing-only speed (single thread, best of %d)\n", repeat);
    static const char *const kernels[] = {"gemm_d_blocked", "gemm_a_tiled"};
    for (int k = 0; k < 2; k++) {
        char path[4096], label[64];
        if (only && strncmp(only, kernels[k], strlen(only)) != 0)
            continue;
        snprintf(path, sizeof path, "%s/kernels/%s.nca", src, kernels[k]);
        double t0 = now_seconds();
        isa_program_t *prog = assemble_file(path, &trn1);
        double t_asm = now_seconds() - t0;
        if (!prog)
            return 1;
        snprintf(label, sizeof label, "%s (full size)", kernels[k]);
        rc |= speed(label, prog, &trn1, repeat);
        printf("%-34s assembly: %.1f ms (%.2f M instr/s)\n", "", t_asm * 1e3,
               (double)prog->ninstrs / t_asm / 1e6);
        isa_program_free(prog);
    }
    if (only && strcmp(only, "collective") != 0)
        goto sweep;
    printf("== 16-chip collective workload (trn1-32xl, 32 cores, all_reduce of 256 KiB)\n");
    char *text = collective_program(64, 65536);
    isa_program_t *cprog = text ? assemble_text("collective16.nca", text, &trn1_32) : NULL;
    free(text);
    if (cprog) {
        speed("all_reduce x 64, 32 cores", cprog, &trn1_32, repeat); /* may not run yet */
        isa_program_free(cprog);
    } else {
        printf("cannot build the collective workload\n");
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak resident memory of this process so far: %.1f MB\n", (double)ru.ru_maxrss / 1024);
sweep:
    if (!skip_sweep && (!only || strcmp(only, "sweep") == 0)) {
        printf("== sweep\n");
        fflush(stdout);
        if (run_sweep(src, points, jobs))
            rc = 1;
    }
    return rc ? 1 : 0;
}
