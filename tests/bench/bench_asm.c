/*
 * bench_asm.c -- assembler throughput on a million-instruction program.
 *
 * Two texts of the same program, generated in memory:
 *   loop  a software-pipelined GEMM + GELU stream (DMA in, matmul, activate, DMA out, with
 *         double-buffered slices that depend on the loop variable and semaphore waits and
 *         posts), written with .loop/.if/.let: about 40 lines;
 *   flat  the same program already unrolled: one line per instruction.
 * Each is assembled REPEAT times in a child process of its own (so the peak RSS reported by
 * getrusage is that case's alone, text included); the best wall-clock and process CPU times
 * are reported with instructions per second (CPU time is the steadier figure on a shared
 * machine). Run: build/tests/bench_asm
 *
 * Usage: bench_asm [ITERATIONS]   (default 249999: 4 instructions per iteration plus 4 more
 * make exactly 1,000,000)
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "asm.h"

#define REPEAT 3

typedef struct text {
    char *s;
    size_t len, cap;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            fprintf(stderr, "bench_asm: formatting failed\n");
            exit(1);
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap ? t->cap * 2 : 1 << 16;
        while (t->cap - t->len <= (size_t)n)
            t->cap *= 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s) {
            fprintf(stderr, "bench_asm: out of memory\n");
            exit(1);
        }
    }
}

/* Declarations shared by both texts: x [8192, 512] bf16 streamed through 4 SBUF buffers,
 * one 128x128 weight matrix, 4 PSUM banks, y [8192, 512] fp32 out. */
static void prologue(text_t *t, long iters)
{
    put(t, "; bench_asm: %ld iterations of load / matmul / gelu / store\n"
           ".hbm x bf16 [8192, 512] input\n"
           ".hbm w bf16 [128, 128] input\n"
           ".hbm y fp32 [8192, 512] output\n"
           ".core 0\n"
           ".sbuf ws bf16 [128, 128]\n"
           ".sbuf xs bf16 [128, 4, 512]\n"
           ".sbuf ys fp32 [128, 4, 512]\n"
           ".psum acc fp32 [128, 4, 512]\n"
           ".sem wl\n.sem loaded\n.sem mm\n.sem act_done\n.sem stored\n.sem done\n",
        iters);
}

static void gen_loop(text_t *t, long iters)
{
    prologue(t, iters);
    put(t, ".let T = %ld\n", iters);
    put(t, ".engine sp\n"
           "dma ws, w, queue=15 | post wl\n"
           "; load i while storing i - 2 (software pipeline over 4 buffers)\n"
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
           "nop | wait stored >= T | post done\n"
           ".engine pe\n"
           "ldweights ws | wait wl >= 1\n"
           ".loop i = 0, T\n"
           "    matmul acc[:, i %% 4, :], xs[:, i %% 4, :] | wait loaded >= i + 1 "
           "| wait act_done >= i - 3 | post mm\n"
           ".endloop\n"
           "nop | wait done >= 1\n"
           ".engine act\n"
           ".loop i = 0, T\n"
           "    activate ys[:, i %% 4, :], acc[:, i %% 4, :], gelu, scale=0.125 "
           "| wait mm >= i + 1 | wait stored >= i - 3 | post act_done\n"
           ".endloop\n");
}

static void gen_flat(text_t *t, long iters)
{
    prologue(t, iters);
    put(t, ".engine sp\ndma ws, w, queue=15 | post wl\n");
    for (long i = 0; i < iters + 2; i++) {
        if (i < iters)
            put(t, "dma xs[:, %ld, :], x[%ld:%ld, :], queue=%ld | wait act_done >= %ld | post "
                   "loaded\n", i % 4, (i % 64) * 128, (i % 64) * 128 + 128, i % 8, i - 3);
        if (i >= 2) {
            long j = i - 2;
            put(t, "dma y[%ld:%ld, :], ys[:, %ld, :], queue=%ld | wait act_done >= %ld | post "
                   "stored\n", (j % 64) * 128, (j % 64 + 1) * 128, j % 4, 8 + j % 8, j + 1);
        }
    }
    put(t, "nop | wait stored >= %ld | post done\n.engine pe\nldweights ws | wait wl >= 1\n",
        iters);
    for (long i = 0; i < iters; i++)
        put(t, "matmul acc[:, %ld, :], xs[:, %ld, :] | wait loaded >= %ld | wait act_done >= "
               "%ld | post mm\n", i % 4, i % 4, i + 1, i - 3);
    put(t, "nop | wait done >= 1\n.engine act\n");
    for (long i = 0; i < iters; i++)
        put(t, "activate ys[:, %ld, :], acc[:, %ld, :], gelu, scale=0.125 | wait mm >= %ld | "
               "wait stored >= %ld | post act_done\n", i % 4, i % 4, i + 1, i - 3);
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* Runs in a child: generate, assemble REPEAT times, print one line. Returns the exit code. */
static int run_case(const char *name, long iters, int flat)
{
    text_t t = {0};
    double g0 = now();
    if (flat)
        gen_flat(&t, iters);
    else
        gen_loop(&t, iters);
    double gen = now() - g0;
    size_t lines = 0;
    for (size_t i = 0; i < t.len; i++)
        lines += t.s[i] == '\n';
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = name;
    double best = 1e30, best_cpu = 1e30; /* wall and process CPU seconds */
    uint32_t ninstrs = 0;
    for (int r = 0; r < REPEAT; r++) {
        isa_diag_t diag;
        isa_diag_init(&diag, 0);
        isa_program_t *p = NULL;
        double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        ncsim_status_t st = isa_assemble(t.s, t.len, &opt, &p, &diag);
        double dt = now() - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (st != NCSIM_OK) {
            fprintf(stderr, "bench_asm: %s does not assemble:\n%s", name,
                    diag.text ? diag.text : "");
            return 1;
        }
        ninstrs = p->ninstrs;
        isa_program_free(p);
        isa_diag_free(&diag);
        if (dt < best)
            best = dt;
        if (dc < best_cpu)
            best_cpu = dc;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%-5s %9u instructions from %8zu lines (%5.1f MB of text, generated in %.2f s): "
           "best of %d: %.3f s wall = %4.2f M instr/s, %.3f s CPU = %4.2f M instr/s; "
           "peak RSS %ld MB\n",
           name, ninstrs, lines, (double)t.len / 1e6, gen, REPEAT, best,
           (double)ninstrs / best / 1e6, best_cpu, (double)ninstrs / best_cpu / 1e6,
           (long)(ru.ru_maxrss / 1024));
    fflush(stdout);
    free(t.s);
    if (iters == 249999 && ninstrs != 1000000) {
        fprintf(stderr, "bench_asm: expected 1,000,000 instructions\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 249999;
    if (iters < 1 || iters > 4000000) {
        fprintf(stderr, "usage: bench_asm [ITERATIONS 1..4000000]\n");
        return 2;
    }
    int status = 0;
    for (int flat = 0; flat <= 1; flat++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0)
            _exit(run_case(flat ? "flat" : "loop", iters, flat));
        int ws = 0;
        if (waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            status = 1;
    }
    return status;
}
