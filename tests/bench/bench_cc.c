/*
 * bench_cc.c -- all-reduce time and bus bandwidth from 1 KiB to 1 GiB, on the 2 cores of one
 * trn1 chip and on the 32 cores of trn1-32xl, and the host time it takes to simulate each
 * (timing only).
 *
 * Bus bandwidth follows the usual convention for all-reduce: 2 (n-1)/n x bytes / time, the
 * bandwidth each member's links would need for the ring to reach that time.
 *
 *   ./build/tests/bench_cc [--alg auto|ring|mesh|kangaring|rdh]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch.h"
#include "asm.h"
#include "sim.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Program: every core all-reduces its own [bytes] tensor on its chip. */
static char *program(unsigned cores, unsigned long long bytes)
{
    unsigned long long rows = bytes / 4096 ? bytes / 4096 : 1;
    unsigned long long cols = bytes / 4096 ? 1024 : bytes / 4;
    /* [outer, 4096, 1024] keeps every dimension under 65,536 */
    unsigned long long outer = rows > 4096 ? rows / 4096 : 1, inner = rows > 4096 ? 4096 : rows;
    size_t cap = 1 << 16, at = 0;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    unsigned chips = (cores + 1) / 2;
    at += (size_t)snprintf(p + at, cap - at, ".chips %u\n.group all = 0..%u\n", chips, cores - 1);
    for (unsigned c = 0; c < chips; c++)
        at += (size_t)snprintf(p + at, cap - at, ".hbm x%u fp32 [%llu, %llu, %llu] scratch chip=%u\n",
                               c, outer, inner, cols, c);
    for (unsigned k = 0; k < cores; k++)
        at += (size_t)snprintf(p + at, cap - at,
                               ".core %u\n.engine cc\nall_reduce x%u, x%u, op=add, group=all\n", k,
                               k / 2, k / 2);
    return p;
}

static int run(const char *preset, const char *alg, unsigned cores)
{
    mdl_arch_t a;
    char err[512];
    if (mdl_arch_load(preset, &a, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    char set[64];
    snprintf(set, sizeof set, "cc.algorithm=%s", alg);
    if (mdl_arch_set(&a, set, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    printf("\nall_reduce on %u cores of %s (%s)\n", cores, preset, alg);
    printf("%12s %14s %14s %12s\n", "bytes", "time (us)", "busbw (GB/s)", "host (s)");
    for (unsigned long long bytes = 1024; bytes <= (1ull << 30); bytes *= 4) {
        char *text = program(cores, bytes);
        isa_asm_options_t opt;
        isa_asm_options_default(&opt);
        isa_diag_t d;
        isa_diag_init(&d, 0);
        isa_program_t *prog = NULL;
        if (isa_assemble(text, strlen(text), &opt, &prog, &d) != NCSIM_OK) {
            fprintf(stderr, "%s", d.text ? d.text : "");
            free(text);
            isa_diag_free(&d);
            return -1;
        }
        free(text);
        isa_diag_free(&d);
        sim_options_t o;
        memset(&o, 0, sizeof o);
        o.arch = &a;
        o.timing_only = 1;
        sim_t *s;
        if (sim_create(prog, &o, &s, err, sizeof err) != NCSIM_OK) {
            fprintf(stderr, "%s\n", err);
            isa_program_free(prog);
            return -1;
        }
        double t0 = now_s();
        ncsim_status_t st = sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
        double host = now_s() - t0;
        if (st != NCSIM_OK)
            fprintf(stderr, "%s", sim_error(s));
        double us = (double)sim_stats(s)->total_ps / 1e6;
        double busbw = 2.0 * (cores - 1) / cores * (double)bytes / (us * 1e-6) / 1e9;
        printf("%12llu %14.3f %14.2f %12.4f\n", bytes, us, busbw, host);
        sim_destroy(s);
        isa_program_free(prog);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *alg = "ring";
    if (argc == 3 && strcmp(argv[1], "--alg") == 0)
        alg = argv[2];
    if (run("trn1", alg, 2) || run("trn1-32xl", alg, 32))
        return 1;
    return 0;
}
