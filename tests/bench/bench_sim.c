/*
 * bench_sim.c -- simulator speed on real kernels (the .nca files of kernels/), through the library.
 *
 *   bench_sim [SOURCE_DIR]        (default: $NCSIM_SOURCE_DIR, else ".")
 *
 * Prints
 *   (a) timing-only speed: simulated instructions per host second of sim_run() (assembly
 *       excluded; the best of 3 runs): the four GEMM versions at M=4096, K=8192, N=8192
 *       (gemm_a_tiled has ~132,000 instructions, half of them DMAs), the other kernels at
 *       their full size, and gemm_d_blocked at N=16384 (~103,000 instructions). Aim: 5
 *       million per second or more on the kernels of more than 100,000 instructions.
 *   (b) functional GEMM time: sim_run() of gemm_c_blockfree (bf16 inputs, every output tile
 *       accumulated over K in PSUM) and of gemm_d_blocked at M=1024, K=2048, N=2048 with real
 *       arithmetic, as a ratio to one cblas_sgemm of the same shape (fp32, same process, same
 *       OpenBLAS and thread setting; the best of 5 runs of each, since other load on the
 *       machine slows the sgemm runs most). Aim: 1.5 or less.
 * The figures are recorded in kernels/README.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "arch.h"
#include "blas.h"
#include "diag.h"
#include "isa.h"
#include "load.h"
#include "sim.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *srcdir;

/* Read kernels/NAME.nca, replace the values of `.let KEY =` lines given as "KEY=VALUE"
 * (NULL-terminated list), write it to a temporary file; returns its path (static). */
static const char *prepare(const char *name, const char *const *sets)
{
    static char out[512];
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels/%s.nca", srcdir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(1);
    }
    snprintf(out, sizeof out, "/tmp/ncsim-bench-%d-%s.nca", (int)getpid(), name);
    FILE *o = fopen(out, "w");
    if (!o) {
        perror(out);
        exit(1);
    }
    char line[4096];
    int done[16] = {0};
    while (fgets(line, sizeof line, f)) {
        int replaced = 0;
        for (int i = 0; sets && sets[i]; i++) {
            const char *eq = strchr(sets[i], '=');
            size_t klen = (size_t)(eq - sets[i]);
            char want[128];
            snprintf(want, sizeof want, ".let %.*s =", (int)klen, sets[i]);
            if (!done[i] && strncmp(line, want, strlen(want)) == 0) {
                fprintf(o, ".let %.*s = %s\n", (int)klen, sets[i], eq + 1);
                done[i] = replaced = 1;
                break;
            }
        }
        if (!replaced)
            fputs(line, o);
    }
    fclose(f);
    fclose(o);
    return out;
}

typedef struct loaded {
    isa_program_t *prog;
    mdl_arch_t arch;
} loaded_t;

static void load(const char *path, loaded_t *L)
{
    char err[1024];
    if (mdl_arch_load("trn1", &L->arch, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "bench_sim: %s\n", err);
        exit(1);
    }
    isa_geometry_t g;
    mdl_arch_geometry(&L->arch, &g);
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    ncsim_status_t st = sim_load_program(path, &g, NULL, NULL, &L->prog, &diag);
    isa_diag_free(&diag);
    if (st != NCSIM_OK) {
        fprintf(stderr, "bench_sim: cannot load %s (%s)\n", path, ncsim_status_text(st));
        exit(1);
    }
}

/* One run; returns the host seconds of sim_run() and the statistics' instruction count. */
static double run_once(loaded_t *L, int timing_only, uint64_t *instrs, double *sim_ns)
{
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &L->arch;
    so.timing_only = timing_only;
    sim_t *s = NULL;
    char err[1024];
    if (sim_create(L->prog, &so, &s, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "bench_sim: %s\n", err);
        exit(1);
    }
    if (!timing_only) {
        /* seeded values in [-1, 1) for every input tensor */
        uint64_t x = 0x9e3779b97f4a7c15ull;
        for (uint32_t t = 0; t < L->prog->ntensors; t++) {
            const isa_tensor_t *T = &L->prog->tensors[t];
            if (T->space != ISA_SPACE_HBM || T->kind != ISA_TK_INPUT)
                continue;
            uint64_t n = sim_tensor_elems(L->prog, t);
            float *v = malloc(n * sizeof *v);
            for (uint64_t i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                v[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
            }
            sim_tensor_write_f32(s, t, v);
            free(v);
        }
    }
    double t0 = now_s();
    ncsim_status_t st = sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
    double dt = now_s() - t0;
    if (st != NCSIM_OK || !sim_finished(s)) {
        fprintf(stderr, "bench_sim: run failed: %s\n", sim_error(s));
        exit(1);
    }
    const sim_stats_t *stt = sim_stats(s);
    *instrs = stt->instructions;
    *sim_ns = (double)stt->total_ps / 1000.0;
    sim_destroy(s);
    return dt;
}

static double best_of(loaded_t *L, int timing_only, int reps, uint64_t *instrs, double *sim_ns)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = run_once(L, timing_only, instrs, sim_ns);
        if (t < best)
            best = t;
    }
    return best;
}

static void timing_only_speed(const char *name, const char *const *sets)
{
    loaded_t L;
    double t0 = now_s();
    load(prepare(name, sets), &L);
    double asm_s = now_s() - t0;
    uint64_t n = 0;
    double sim_ns = 0;
    double t = best_of(&L, 1, 3, &n, &sim_ns);
    printf("  %-18s %9llu instructions  %8.1f us simulated  %7.3f s host  %6.2f M instr/s"
           "  (assembly %.3f s)\n",
           name, (unsigned long long)n, sim_ns / 1000.0, t, (double)n / t / 1e6, asm_s);
    isa_program_free(L.prog);
}

static double sgemm_seconds(int m, int n, int k)
{
    float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b),
          *c = malloc((size_t)m * n * sizeof *c);
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = (float)((i * 40503u) % 1000) / 500.0f - 1.0f;
    const mdl_sgemm_fn sgemm = mdl_blas_sgemm(NULL);
    if (!sgemm) {
        fprintf(stderr, "bench_sim: cannot load OpenBLAS\n");
        exit(1);
    }
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        /* result[M, N] = lhsT[K, M]^T . rhs[K, N], as the kernels compute it */
        sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n);
        double t = now_s() - t0;
        if (t < best)
            best = t;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

static void functional_gemm(const char *name, int m, int k, int n, const char *const *extra)
{
    char sm[32], sk[32], sn[32];
    snprintf(sm, sizeof sm, "M=%d", m);
    snprintf(sk, sizeof sk, "K=%d", k);
    snprintf(sn, sizeof sn, "N=%d", n);
    const char *sets[8] = {sm, sk, sn};
    int ns = 3;
    for (int i = 0; extra && extra[i] && ns < 7; i++)
        sets[ns++] = extra[i];
    sets[ns] = NULL;
    loaded_t L;
    load(prepare(name, sets), &L);
    uint64_t instrs = 0;
    double sim_ns = 0;
    double t_sim = best_of(&L, 0, 5, &instrs, &sim_ns);
    double t_blas = sgemm_seconds(m, n, k);
    printf("  %-18s M=%d K=%d N=%d: sim_run %.3f s, cblas_sgemm %.3f s (%.1f GFLOP/s): "
           "ratio %.2f\n",
           name, m, k, n, t_sim, t_blas, 2.0 * m * n * k / t_blas / 1e9, t_sim / t_blas);
    isa_program_free(L.prog);
}

int main(int argc, char **argv)
{
    srcdir = argc > 1 ? argv[1] : getenv("NCSIM_SOURCE_DIR");
    if (!srcdir)
        srcdir = ".";
    const char *thr = getenv("OPENBLAS_NUM_THREADS");
    printf("bench_sim: kernels from %s/kernels, trn1, OPENBLAS_NUM_THREADS=%s\n", srcdir,
           thr ? thr : "(unset)");

    printf("(a) timing-only speed (sim_run only, best of 3)\n");
    static const char *const full[] = {"gemm_a_tiled", "gemm_b_hoisted", "gemm_c_blockfree",
                                       "gemm_d_blocked", "flash_attention", "selective_scan",
                                       "mlp", "softmax"};
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        timing_only_speed(full[i], NULL);
    /* (d) with N doubled: 103,000 instructions */
    static const char *const dbig[] = {"N=16384", NULL};
    printf("  N=16384:\n");
    timing_only_speed("gemm_d_blocked", dbig);

    printf("(b) functional GEMM vs cblas_sgemm on the same shape (best of 5 each)\n");
    functional_gemm("gemm_c_blockfree", 1024, 2048, 2048, NULL);
    static const char *const dsmall[] = {"TBM=4", NULL};
    functional_gemm("gemm_d_blocked", 1024, 2048, 2048, dsmall);
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "/tmp/ncsim-bench-%d-%s.nca", (int)getpid(), full[i]);
        unlink(p);
    }
    return 0;
}
