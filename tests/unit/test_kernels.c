/*
 * test_kernels.c -- the kernels of kernels/ against NumPy, at small sizes (functional) and at
 * full size (timing-only), and the golden end-to-end cases of tests/golden/.
 *
 * The work is done by two scripts run with /usr/bin/python3:
 *   kernels/ref.py check KERNEL SIZES --rtol R --atol A [-- NCSIM OPTIONS]
 *     resizes the kernel (its top-level .let constants), makes seeded inputs, runs ncsim,
 *     and compares every output element with a float64 NumPy reference computed from the
 *     inputs as the kernel sees them (bf16 inputs rounded to bf16, RNE, as ncsim does):
 *     |out - ref| <= atol + rtol |ref|. Exit 0 when all elements pass.
 *   tests/golden/run_golden.py CASE --ncsim BIN
 *     runs a frozen program, checks its outputs the same way and its statistics against
 *     the stored ones (instruction and DMA counts exactly, total_ns within a stated band).
 * The tolerances are chosen here, each with the reason it is what it is.
 *
 * Every small case also runs under perturbed timing (slow vector engine and slow HBM; slow
 * tensor engine): the results must not change. A missing semaphore is a race that the nominal
 * timing may happen to hide; changing which engine is late exposes it as wrong numbers. And
 * every kernel must pass `ncsim check` (races, uninitialised reads, NaN, PSUM, semaphores).
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

#define PY "/usr/bin/python3"

static const char *const PERTURB[] = {
    "",
    "-- --set dve.clock_ghz=0.2 --set hbm.bandwidth_gbps=40",
    "-- --set pe.clock_ghz=0.3 --set act.clock_ghz=0.3",
};
#define NPERTURB (sizeof PERTURB / sizeof PERTURB[0])

/* Run kernels/ref.py check; returns its exit status, prints its report on failure. */
static int check_kernel(const char *kernel, const char *sizes, double rtol, double atol,
                        const char *extra)
{
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s check %s %s --ncsim %s --rtol %.17g --atol %.17g %s", PY,
             tu_source_path("kernels/ref.py"), kernel, sizes, tu_ncsim(), rtol, atol,
             extra ? extra : "");
    int st = tu_run(cmd, &out);
    if (st != 0)
        fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
    free(out);
    return st;
}

static void check_all_timings(const char *kernel, const char *sizes, double rtol, double atol)
{
    for (size_t i = 0; i < NPERTURB; i++)
        assert_int_equal(check_kernel(kernel, sizes, rtol, atol, PERTURB[i]), 0);
}

/* ---- small sizes against NumPy --------------------------------------------------------------- */

/*
 * GEMM, bf16 in, fp32 PSUM accumulation, bf16 out. The reference is the exact product of the
 * bf16-rounded inputs. Products of two bf16 values are exact in fp32; the K fp32 additions
 * (K <= 2048 here, |terms| <= 1) differ from the exact sum by about sqrt(K) * 2^-24 * sqrt(K/9)
 * ~ 1e-4 at most in practice. The result is rounded to bf16: at most half an ulp, which is
 * 2^-8 of the value at the bottom of a binade. So rtol = 2^-8 (output rounding) and
 * atol = 1e-3 (accumulation order, and outputs near zero), 10x the expected accumulation error.
 * The sizes give each core several output tiles, wrap every ring buffer, and (b) exercises the
 * lhsT prefetch of row m+2, (c) two block rows, (d) two M blocks and four K blocks.
 */
#define GEMM_RTOL (1.0 / 256.0)
#define GEMM_ATOL 1e-3

static void test_gemm_a_tiled(void **state)
{
    (void)state;
    check_all_timings("gemm_a_tiled", "M=512 K=1024 N=1024", GEMM_RTOL, GEMM_ATOL);
}

static void test_gemm_b_hoisted(void **state)
{
    (void)state;
    check_all_timings("gemm_b_hoisted", "M=768 K=2048 N=1024 KG=4", GEMM_RTOL, GEMM_ATOL);
}

static void test_gemm_c_blockfree(void **state)
{
    (void)state;
    check_all_timings("gemm_c_blockfree", "M=1024 K=1024 N=2048 KG=2", GEMM_RTOL, GEMM_ATOL);
}

static void test_gemm_d_blocked(void **state)
{
    (void)state;
    check_all_timings("gemm_d_blocked", "M=1024 K=1024 N=2048 TBM=2 TBK=2", GEMM_RTOL,
                      GEMM_ATOL);
    /* the degenerate blocking: one tile per block, one K block */
    assert_int_equal(check_kernel("gemm_d_blocked", "M=256 K=128 N=512 TBM=1 TBN=1 TBK=1",
                                  GEMM_RTOL, GEMM_ATOL, NULL), 0);
}

/*
 * Softmax, fp32 (x uniform in [-8, 8)). expf is within 2 ulp; the row sum adds C = 640
 * positive terms sequentially in fp32: relative error at most (C-1) 2^-24 = 3.8e-5; the
 * reciprocal and the scaling add two roundings. rtol = 1e-4 bounds it; atol only guards
 * against denormal flushing of the smallest probabilities (~e^-16 / C).
 */
static void test_softmax(void **state)
{
    (void)state;
    check_all_timings("softmax", "R=1536 C=640", 1e-4, 1e-12);
}

/*
 * LayerNorm, fp32 (x in [-2, 3), gamma in [0.5, 1.5), beta in [-0.5, 0.5)). bn_stats sums
 * 512-element chunks in fp32 (relative error <= 512 2^-24 = 3e-5 on mean and m2), bn_aggr
 * combines them; rstd inherits half of that. xn = x rstd - mean rstd cancels: its absolute
 * error is at most |x| rstd 2^-23 ~ 5e-7. With |xn| <= 2 and gamma < 1.5 the output error is
 * below 1e-4 relative + 1e-4 absolute in the worst case; we allow twice the absolute part.
 */
static void test_layernorm(void **state)
{
    (void)state;
    check_all_timings("layernorm", "R=1536 D=1024", 1e-4, 2e-4);
}

/*
 * RMSNorm, fp32 (x in [-2, 2)). The sum of squares adds D = 768 positive terms in fp32:
 * relative error <= D 2^-24 = 4.6e-5; rstd = (ss/D + eps)^-0.5 halves it; two more
 * roundings for x rstd gamma. rtol = 1e-4; atol for outputs near zero only.
 */
static void test_rmsnorm(void **state)
{
    (void)state;
    check_all_timings("rmsnorm", "R=1536 D=768", 1e-4, 1e-7);
}

/*
 * MLP, bf16 activations and weights (w scaled by 1/sqrt(fan-in)), bf16 hidden activations
 * and output. The reference rounds the hidden activations to bf16 as the kernel stores them.
 * Output rounding is at most 2^-8 relative (rtol). A hidden value whose fp32 pre-activation
 * or erff-based gelu lands on the other side of a bf16 rounding boundary than float64 differs
 * by one bf16 ulp (<= 2^-8 |h|, |h| < 1): with |w2| <= 1/sqrt(F) that moves an output by at
 * most 2^-8 / 32 = 1.2e-4 per flip (F = 1024), and flips are rare; the fp32 accumulations add
 * ~1e-6. atol = 5e-4 covers a few flips on the same output.
 */
static void test_mlp(void **state)
{
    (void)state;
    check_all_timings("mlp", "D=256 F=1024 T=3072", 1.0 / 256.0, 5e-4);
}

/*
 * Causal flash attention, one head, bf16 q, k, v in [-2, 2), [-2, 2), [-1, 1). The kernel
 * rounds P = exp(s - m) to bf16 before P.v (and sums the rounded values for l, consistently);
 * the reference does not round. Each weight P/l then has a relative error <= 2 2^-8, so the
 * convex combination o = sum (P/l) v moves by at most 2^-7 max|v| = 2^-7 (atol); the output is
 * rounded to bf16 (rtol = 2^-8). The running max, rescaling and fp32 sums add ~1e-6.
 */
static void test_flash_attention(void **state)
{
    (void)state;
    check_all_timings("flash_attention", "S=1024", 1.0 / 256.0, 1.0 / 128.0);
    assert_int_equal(check_kernel("flash_attention", "S=512", 1.0 / 256.0, 1.0 / 128.0, NULL),
                     0);
}

/*
 * Selective scan, fp32 except B, C (bf16, rounded identically in the reference). Each scan
 * step rounds twice (2^-24 each) and the recurrence contracts (dA = exp(delta A) <= e^-0.005),
 * so the error in h stays below 2 2^-24 / (1 - e^-0.005) = 2.4e-5 relative to |h|max; the sum
 * over NS = 4 states (fp32 identity matmuls) and the skip term add a few roundings. With
 * |C| <= 1, atol = rtol = 1e-4 bounds the result.
 */
static void test_selective_scan(void **state)
{
    (void)state;
    check_all_timings("selective_scan", "D=512 L=1024 NS=4", 1e-4, 1e-4);
}

/* ---- ncsim check: races, uninitialised reads, NaN, PSUM and semaphore misuse --------------- */

/*
 * `ncsim check` proves what the perturbed runs above only sample: that every pair of
 * conflicting accesses (engines, DMA queues) is ordered by a semaphore chain, that nothing
 * reads memory no one wrote, that no PSUM accumulation group is read while open, and that
 * every wait can hold. Each kernel must come out clean at a size that wraps every buffer ring.
 */
static void test_ncsim_check_clean(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"gemm_a_tiled", "M=512 K=512 N=1024"},
        {"gemm_b_hoisted", "M=768 K=2048 N=1024 KG=4"},
        {"gemm_c_blockfree", "M=1024 K=1024 N=2048 KG=2"},
        {"gemm_d_blocked", "M=1024 K=1024 N=2048 TBM=2 TBK=2"},
        {"softmax", "R=1536 C=640"},
        {"layernorm", "R=1536 D=1024"},
        {"rmsnorm", "R=1536 D=768"},
        {"mlp", "D=256 F=1024 T=3072"},
        {"flash_attention", "S=1024"},
        {"selective_scan", "D=512 L=1024 NS=4"},
    };
    char *out = NULL;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s check --help", tu_ncsim());
    if (tu_run(cmd, &out) != 0 || !out || strstr(out, "not yet")) {
        free(out);
        printf("  ncsim check is not available in this build: skipped\n");
        return;
    }
    free(out);
    const char *dir = tu_tmpdir();
    char resize[1024];
    snprintf(resize, sizeof resize, "%s", tu_source_path("kernels/gen/resize.py"));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "kernels/%s.nca", cases[i][0]);
        snprintf(cmd, sizeof cmd,
                 "%s %s %s %s -o %s/%s.nca && %s check %s/%s.nca --random-inputs 1 --max 5", PY,
                 resize, tu_source_path(rel), cases[i][1], dir, cases[i][0], tu_ncsim(), dir,
                 cases[i][0]);
        int st = tu_run(cmd, &out);
        if (st != 0)
            fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
        free(out);
        out = NULL;
        assert_int_equal(st, 0);
    }
}

/* ---- full sizes, timing only ----------------------------------------------------------------- */

/* Run `ncsim run KERNEL --timing-only --random-inputs 1 --stats` on the kernel as written
 * (its full size); the statistics file goes to `stats`. */
static void run_full(const char *kernel, char *stats, size_t len)
{
    static const char *dir;
    if (!dir) {
        static char keep[256];
        snprintf(keep, sizeof keep, "%s", tu_tmpdir());
        dir = keep;
    }
    snprintf(stats, len, "%s/%s.json", dir, kernel);
    char cmd[4096], rel[256];
    snprintf(rel, sizeof rel, "kernels/%s.nca", kernel);
    snprintf(cmd, sizeof cmd, "%s run %s --timing-only --random-inputs 1 -q --stats %s",
             tu_ncsim(), tu_source_path(rel), stats);
    char *out = NULL;
    int st = tu_run(cmd, &out);
    if (st != 0)
        fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
    free(out);
    assert_int_equal(st, 0);
}

/* Evaluate a Python expression over the statistics `s` (loaded JSON); returns it as double. */
static double stat(const char *stats, const char *expr)
{
    char code[1024];
    snprintf(code, sizeof code,
             "import json, sys\ns = json.load(open(sys.argv[1]))\nprint(repr(float(%s)))\n",
             expr);
    char *out = NULL;
    int st = tu_python(code, stats, &out);
    assert_int_equal(st, 0);
    assert_non_null(out);
    double v = strtod(out, NULL);
    free(out);
    return v;
}

static void test_full_size_smoke(void **state)
{
    (void)state;
    static const char *const kernels[] = {"softmax", "layernorm", "rmsnorm", "mlp",
                                          "flash_attention", "selective_scan"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        char stats[512];
        run_full(kernels[i], stats, sizeof stats);
        double t = stat(stats, "s['total_ns']");
        double used = stat(stats, "sum(1 for c in s['cores'] if sum(e['instructions'] for e in "
                                  "c['engines'].values()) > 0)");
        printf("  %-16s total %.1f us, MFU %.1f%%\n", kernels[i], t / 1000.0,
               100.0 * stat(stats, "s['mfu']"));
        assert_true(t > 0.0);
        assert_true(used == 2.0); /* SPMD over both cores */
    }
}

/*
 * The four GEMM versions at the tutorial's size M=4096, K=8192, N=8192: (a) slowest, (d)
 * fastest, and (d) compute-bound: the tensor engine busy >= 90% of the run on both cores.
 */
static void test_gemm_versions_full_size(void **state)
{
    (void)state;
    static const char *const v[] = {"gemm_a_tiled", "gemm_b_hoisted", "gemm_c_blockfree",
                                    "gemm_d_blocked"};
    double t[4];
    char stats[4][512];
    for (int i = 0; i < 4; i++) {
        run_full(v[i], stats[i], sizeof stats[i]);
        t[i] = stat(stats[i], "s['total_ns']");
        printf("  %-16s total %.1f us, MFU %.1f%%\n", v[i], t[i] / 1000.0,
               100.0 * stat(stats[i], "s['mfu']"));
        /* every version does the same tensor work */
        assert_true(stat(stats[i], "s['tensor_flops']") == 2.0 * 4096 * 8192 * 8192);
    }
    assert_true(t[0] > t[1]);
    assert_true(t[1] > t[2]);
    assert_true(t[2] > t[3]);
    double busy = stat(stats[3], "min(c['engines']['pe']['busy_ns'] for c in s['cores']) / "
                                 "s['total_ns']");
    printf("  gemm_d_blocked: pe busy %.1f%% of the run (min over cores)\n", 100.0 * busy);
    assert_true(busy >= 0.90);
}

/* ---- tensor-parallel decoder layer ---------------------------------------------------------- */

/*
 * Tensor-parallel transformer decoder layer (kernels/gen/tp_decoder.py writes the program for a
 * core count; kernels/tp_decoder_ref.py holds the NumPy reference and runs it), on 2 cores of
 * one chip (trn1) and on 8 and 16 cores (4 and 8 chips of trn1-32xl). Every chip's output y^T is
 * compared with the reference, element by element:
 *     |out - ref| <= atol + rtol |ref| + ulps * U.
 * The reference is float64 but rounds to bf16 wherever the kernel stores bf16 (x*g and x^2 for
 * the norms, q, k, v, the softmax shift, P, o, the MLP activation, each core's partial sums and
 * the all_reduce results, reduced in fp32 in group order as ncsim does). What is left:
 *  - fp32 arithmetic instead of float64 (sums of at most max(H, F, S) products, libm exp and
 *    silu): about 1e-6 relative, below 1e-4 absolute on |y| <= 5.2;
 *  - bf16 rounding flips: an intermediate whose fp32 value lands on the other side of a bf16
 *    rounding boundary than in float64 differs by one bf16 ulp. At the two all_reduces a flip
 *    moves the output element directly: U (computed by the reference per element) is one bf16
 *    ulp of each core's partial and of the result, summed over both all_reduces, and ulps = 1
 *    covers one flip at each of those roundings;
 *  - the indirect part: flips upstream (q, k, v, P, o, a) and flips of the first all_reduce
 *    that reach the MLP through h move a partial sum by a fraction of its ulp each, and these add
 *    up over a row: at most 0.0055 beyond U at these sizes (measured, 2-core cases; below U at 8
 *    and 16 cores, where U is larger). atol = 2^-7 = 0.0078 covers it with 40% margin.
 * rtol = 1e-6 is the fp32 residual additions. A real error is far larger: the causal mask
 * shifted by one key moves outputs by up to 3.0 and 23% of them by more than 0.004. (Against the
 * unrounded float64 layer, `tp_decoder_ref.py check --exact`, the kernel is within 0.024: the
 * precision of a bf16 pipeline.) The results are bit-identical under every timing below.
 * Sizes: the smallest that give each core one or more heads (H = 128 NC at 16 cores), two token
 * blocks (the all_reduce of block 0 overlaps block 1), both buffering modes of the normalised
 * activations (NXG, chosen by the generator; forced for coverage), a single block, TB = 256.
 */
#define TP_RTOL 1e-6
#define TP_ATOL (1.0 / 128.0)
#define TP_ULPS 1.0

static int check_tp(int cores, const char *sizes, const char *extra)
{
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s %s check --cores %d %s --ncsim %s --rtol %.17g --atol %.17g --ulps %.17g %s", PY,
             tu_source_path("kernels/tp_decoder_ref.py"), cores, sizes, tu_ncsim(), TP_RTOL,
             TP_ATOL, TP_ULPS, extra ? extra : "");
    int st = tu_run(cmd, &out);
    if (st != 0)
        fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
    free(out);
    return st;
}

static void test_tp_decoder_2cores(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPERTURB; i++)
        assert_int_equal(check_tp(2, "H=512 S=1024 F=1024", PERTURB[i]), 0);
    /* 4 heads per core: the norm of the next block runs behind the output projections */
    assert_int_equal(check_tp(2, "H=1024 S=1024 F=1024", NULL), 0);
    assert_int_equal(check_tp(2, "H=512 S=512 F=1024", NULL), 0);          /* one token block */
    assert_int_equal(check_tp(2, "H=512 S=1024 F=1024 TB=256", NULL), 0);  /* blocks of 256 */
}

static void test_tp_decoder_8cores(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPERTURB; i++)
        assert_int_equal(check_tp(8, "H=1024 S=1024 F=1024", PERTURB[i]), 0);
    assert_int_equal(check_tp(8, "H=1024 S=1024 F=2048 NXG=1", NULL), 0);
    /* slow NeuronLink: the collectives finish long after the compute */
    assert_int_equal(check_tp(8, "H=1024 S=1024 F=1024", "-- --set link.bandwidth_gbps=5"), 0);
}

static void test_tp_decoder_16cores(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPERTURB; i++)
        assert_int_equal(check_tp(16, "H=2048 S=1024 F=2048", PERTURB[i]), 0);
    assert_int_equal(check_tp(16, "H=2048 S=512 F=2048 NXG=1", NULL), 0);
}

/* ncsim check on each variant (small sizes, as above), and the race, PSUM and semaphore checks
 * of a timing-only run of the 2-core layer at full size (its schedule has other shapes: four
 * token blocks, single-buffered normalised activations, 16 heads per core). */
static void test_tp_decoder_check_clean(void **state)
{
    (void)state;
    static const struct {
        int cores;
        const char *sizes;
        const char *mode;
    } cases[] = {
        {2, "H=512 S=1024 F=1024", "check"},
        {2, "H=1024 S=1024 F=1024", "check"},
        {8, "H=1024 S=1024 F=1024", "check"},
        {8, "H=1024 S=1024 F=2048 NXG=1", "check"},
        {16, "H=2048 S=512 F=2048", "check"},
        {2, "", "run --timing-only -q --check races,uninit,psum,sems"},
    };
    char *out = NULL;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s check --help", tu_ncsim());
    if (tu_run(cmd, &out) != 0 || !out || strstr(out, "not yet")) {
        free(out);
        printf("  ncsim check is not available in this build: skipped\n");
        return;
    }
    free(out);
    const char *dir = tu_tmpdir();
    char gen[1024];
    snprintf(gen, sizeof gen, "%s", tu_source_path("kernels/gen/tp_decoder.py"));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s %s --cores %d %s -o %s/tp_check%zu.nca && %s %s %s/tp_check%zu.nca --arch %s "
                 "--random-inputs 1%s",
                 PY, gen, cases[i].cores, cases[i].sizes, dir, i, tu_ncsim(), cases[i].mode, dir,
                 i, cases[i].cores > 2 ? "trn1-32xl" : "trn1",
                 strcmp(cases[i].mode, "check") == 0 ? " --max 5" : "");
        int st = tu_run(cmd, &out);
        if (st != 0 || (out && strstr(out, "race")))
            fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
        assert_int_equal(st, 0);
        assert_null(out ? strstr(out, "race") : NULL);
        free(out);
        out = NULL;
    }
}

/*
 * The layer at full size (H=4096: 32 heads, S=2048, F=14336), timing only, on 2, 8 and 16
 * cores: every core works and spends time in all_reduce; 8 cores are faster than 2, 16 no
 * faster than 8; the share of the run spent in all_reduce grows with the core count; 2 cores are
 * compute-bound (tensor engine busy >= 85%). The times, MFU and all_reduce shares are those of
 * kernels/README.md.
 */
static void test_tp_decoder_full_size(void **state)
{
    (void)state;
    static const int cores[] = {2, 8, 16};
    const char *dir = tu_tmpdir();
    double t[3], share[3];
    for (int i = 0; i < 3; i++) {
        char cmd[4096], stats[512];
        snprintf(stats, sizeof stats, "%s/tp%d_full.json", dir, cores[i]);
        snprintf(cmd, sizeof cmd,
                 "%s %s --cores %d -o %s/tp%d_full.nca && %s run %s/tp%d_full.nca --arch %s "
                 "--timing-only --random-inputs 1 -q --stats %s",
                 PY, tu_source_path("kernels/gen/tp_decoder.py"), cores[i], dir, cores[i],
                 tu_ncsim(), dir, cores[i], cores[i] > 2 ? "trn1-32xl" : "trn1", stats);
        char *out = NULL;
        int st = tu_run(cmd, &out);
        if (st != 0)
            fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
        free(out);
        assert_int_equal(st, 0);
        t[i] = stat(stats, "s['total_ns']");
        double used = stat(stats, "sum(1 for c in s['cores'] if sum(e['instructions'] for e in "
                                  "c['engines'].values()) > 0)");
        double cc_min = stat(stats, "min(c['engines']['cc']['busy_ns'] for c in s['cores'] if "
                                    "sum(e['instructions'] for e in c['engines'].values()) > 0)");
        share[i] = stat(stats, "max(c['engines']['cc']['busy_ns'] for c in s['cores']) / "
                               "s['total_ns']");
        double mfu = stat(stats, "s['mfu']");
        printf("  tp_decoder %2d cores: total %.1f us, MFU %.1f%%, all_reduce %.1f%% of the run\n",
               cores[i], t[i] / 1000.0, 100.0 * mfu, 100.0 * share[i]);
        assert_true(used == (double)cores[i]);
        assert_true(cc_min > 0.0);
        assert_true(stat(stats, "s['collective_bytes']") > 0.0);
        if (cores[i] == 2)
            assert_true(stat(stats, "min(c['engines']['pe']['busy_ns'] for c in s['cores'][:2]) / "
                                    "s['total_ns']") >= 0.85);
    }
    /* 8 cores beat 2; at 16 the all_reduces (one per token block, each paying the calibrated
     * per-collective cost of the 2023 runtime: cc.fixed_ns, cc.min_latency_ns) take most of the
     * run, so 16 cores gain nothing over 8 */
    assert_true(t[0] > t[1]);
    assert_true(t[2] > 0.8 * t[1]);
    assert_true(share[0] < share[1] && share[1] < share[2]);
    assert_true(share[2] > 0.8);
}

/* ---- golden end-to-end cases ----------------------------------------------------------------- */

static void run_golden(const char *name)
{
    char cmd[4096], rel[256];
    snprintf(rel, sizeof rel, "tests/golden/%s", name);
    char casedir[1024];
    snprintf(casedir, sizeof casedir, "%s", tu_source_path(rel));
    snprintf(cmd, sizeof cmd, "%s %s %s --ncsim %s", PY,
             tu_source_path("tests/golden/run_golden.py"), casedir, tu_ncsim());
    char *out = NULL;
    int st = tu_run(cmd, &out);
    if (st != 0)
        fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
    free(out);
    assert_int_equal(st, 0);
}

static void test_golden_gemm_psum_k(void **state)
{
    (void)state;
    run_golden("gemm_psum_k");
}

static void test_golden_softmax(void **state)
{
    (void)state;
    run_golden("softmax");
}

static void test_golden_layernorm(void **state)
{
    (void)state;
    run_golden("layernorm");
}

int main(void)
{
    if (system(PY " -c 'import numpy' 2>/dev/null") != 0) {
        fprintf(stderr, "test_kernels: %s with NumPy is needed; skipped\n", PY);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_a_tiled),
        cmocka_unit_test(test_gemm_b_hoisted),
        cmocka_unit_test(test_gemm_c_blockfree),
        cmocka_unit_test(test_gemm_d_blocked),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_flash_attention),
        cmocka_unit_test(test_selective_scan),
        cmocka_unit_test(test_tp_decoder_2cores),
        cmocka_unit_test(test_tp_decoder_8cores),
        cmocka_unit_test(test_tp_decoder_16cores),
        cmocka_unit_test(test_tp_decoder_check_clean),
        cmocka_unit_test(test_tp_decoder_full_size),
        cmocka_unit_test(test_ncsim_check_clean),
        cmocka_unit_test(test_full_size_smoke),
        cmocka_unit_test(test_gemm_versions_full_size),
        cmocka_unit_test(test_golden_gemm_psum_k),
        cmocka_unit_test(test_golden_softmax),
        cmocka_unit_test(test_golden_layernorm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
