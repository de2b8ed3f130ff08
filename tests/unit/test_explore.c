/*
 * test_explore.c -- results follow the physics when architecture parameters change (issue 9):
 * a 64 x 64 systolic array has a quarter of the tensor engine's peak, in the MFU denominator
 * and in the time a GEMM's matmuls take; more HBM bandwidth speeds up a DMA-bound GEMM and
 * not a compute-bound one, and only while HBM, not the DMA engines, is the bottleneck; a
 * slower NeuronLink slows a collective across chips and not a GEMM on one chip.
 *
 * The kernels are kernels/gemm_a_tiled.nca (HBM/DMA-bound: every matmul reloads its tiles)
 * and kernels/gemm_d_blocked.nca (compute-bound: blocked reuse), at their full size
 * (M=4096, K=8192, N=8192), timing-only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "asm.h"
#include "load.h"
#include "sim.h"
#include "testutil.h"

typedef struct outcome {
    uint64_t total_ps;
    uint64_t pe_busy_ps;   /* summed over cores */
    uint64_t pe_instructions;
    double mfu;
    double peak_flops_per_core;
} outcome_t;

static isa_program_t *assemble_for(const mdl_arch_t *arch, const char *kernel, const char *text)
{
    isa_geometry_t g;
    mdl_arch_geometry(arch, &g);
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *prog = NULL;
    ncsim_status_t st;
    if (text) {
        isa_asm_options_t opt;
        isa_asm_options_default(&opt);
        opt.filename = kernel;
        opt.geometry = g;
        st = isa_assemble(text, strlen(text), &opt, &prog, &diag);
    } else {
        st = sim_load_program(tu_source_path(kernel), &g, NULL, NULL, &prog, &diag);
    }
    if (st != NCSIM_OK)
        fail_msg("%s: %s", kernel, diag.text ? diag.text : "cannot load");
    isa_diag_free(&diag);
    return prog;
}

/* Run a program (the file `kernel` in the source tree, or `text` when given) timing-only on
 * `preset` with `sets` ("key=value", NULL-terminated) applied. */
static outcome_t run_on(const char *preset, const char *kernel, const char *text,
                        const char *const *sets)
{
    char err[4096];
    mdl_arch_t arch;
    assert_int_equal(mdl_arch_load(preset, &arch, err, sizeof err), NCSIM_OK);
    for (int i = 0; sets && sets[i]; i++)
        if (mdl_arch_set(&arch, sets[i], err, sizeof err) != NCSIM_OK)
            fail_msg("--set %s: %s", sets[i], err);
    assert_int_equal(mdl_arch_validate(&arch, err, sizeof err), NCSIM_OK);
    isa_program_t *prog = assemble_for(&arch, kernel, text);
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &arch;
    so.timing_only = 1;
    sim_t *s = NULL;
    if (sim_create(prog, &so, &s, err, sizeof err) != NCSIM_OK)
        fail_msg("%s: %s", kernel, err);
    if (sim_run(s, SIM_RUN_UNTIL_IDLE, 0) != NCSIM_OK)
        fail_msg("%s: %s", kernel, sim_error(s));
    const sim_stats_t *ss = sim_stats(s);
    outcome_t o;
    memset(&o, 0, sizeof o);
    o.total_ps = ss->total_ps;
    o.mfu = ss->mfu;
    o.peak_flops_per_core = ss->peak_flops_per_core;
    for (uint32_t c = 0; c < ss->ncores; c++) {
        o.pe_busy_ps += ss->cores[c].engines[ISA_ENGINE_PE].busy_ps;
        o.pe_instructions += ss->cores[c].engines[ISA_ENGINE_PE].instructions;
    }
    sim_destroy(s);
    isa_program_free(prog);
    return o;
}

static outcome_t run_kernel(const char *kernel, const char *const *sets)
{
    return run_on("trn1", kernel, NULL, sets);
}

static double ratio(uint64_t a, uint64_t b)
{
    return (double)a / (double)b;
}

static const char *const small_array[] = {"pe.rows=64", "pe.cols=64", NULL};

/* Peak FLOP/s per core = rows x cols x 2 x clock: a 64 x 64 array has a quarter of it, and
 * MFU (FLOPs / (peak x time)) can then never exceed 1. */
static void test_small_array_quarters_peak(void **state)
{
    (void)state;
    outcome_t big = run_kernel("kernels/gemm_d_blocked.nca", NULL);
    outcome_t small = run_kernel("kernels/gemm_d_blocked.nca", small_array);
    assert_true(big.peak_flops_per_core == 128.0 * 128.0 * 2.0 * 2.8e9);
    assert_true(small.peak_flops_per_core == big.peak_flops_per_core / 4.0);
    if (!(big.mfu > 0.5 && big.mfu <= 1.0))
        fail_msg("gemm_d on 128 x 128: MFU %.3f (expected compute-bound, at most 1)", big.mfu);
    if (!(small.mfu > 0.0 && small.mfu <= 1.0))
        fail_msg("gemm_d on 64 x 64: MFU %.3f: more FLOPs than the array's peak allows; the "
                 "cost model must charge for the passes a 128 x 128 tile needs on it",
                 small.mfu);
}

/*
 * A matmul of a [128 K, 128 M] stationary tile needs ceil(K / rows) x ceil(M / cols) = 4
 * passes on a 64 x 64 array: the tensor engine's busy time quadruples, and a compute-bound
 * GEMM takes about 4x as long at about the same MFU.
 */
static void test_small_array_gemm_time(void **state)
{
    (void)state;
    outcome_t big = run_kernel("kernels/gemm_d_blocked.nca", NULL);
    outcome_t small = run_kernel("kernels/gemm_d_blocked.nca", small_array);
    assert_int_equal(small.pe_instructions, big.pe_instructions);
    double busy = ratio(small.pe_busy_ps, big.pe_busy_ps);
    double total = ratio(small.total_ps, big.total_ps);
    if (busy < 3.9 || busy > 4.1)
        fail_msg("pe busy time on 64 x 64 / 128 x 128 = %.3f, expected 4 (%.0f vs %.0f ns): "
                 "pe.rows/pe.cols do not reach the matmul cost",
                 busy, (double)small.pe_busy_ps / 1e3, (double)big.pe_busy_ps / 1e3);
    if (total < 3.5 || total > 4.1)
        fail_msg("gemm_d total time on 64 x 64 / 128 x 128 = %.3f, expected about 4", total);
    if (small.mfu < big.mfu - 0.05 || small.mfu > big.mfu + 0.05)
        fail_msg("MFU of compute-bound gemm_d: %.3f on 64 x 64, %.3f on 128 x 128", small.mfu,
                 big.mfu);
}

/* Doubling HBM bandwidth from 205 to 410 GB/s: GEMM (a) runs much faster once it is
 * HBM-bound (its descriptors cut to 10 ns, so that the bandwidth binds); GEMM (d)
 * (compute-bound) barely changes from 410 to 820 GB/s. */
static void test_hbm_bandwidth(void **state)
{
    (void)state;
    static const char *const slow[] = {"hbm.bandwidth_gbps=205", "dma.descriptor_ns=10", NULL};
    static const char *const fast[] = {"hbm.bandwidth_gbps=410", "dma.descriptor_ns=10", NULL};
    outcome_t a_slow = run_kernel("kernels/gemm_a_tiled.nca", slow);
    outcome_t a_fast = run_kernel("kernels/gemm_a_tiled.nca", fast);
    static const char *const d410[] = {"hbm.bandwidth_gbps=410", NULL};
    static const char *const d820[] = {"hbm.bandwidth_gbps=820", NULL};
    outcome_t d_slow = run_kernel("kernels/gemm_d_blocked.nca", d410);
    outcome_t d_fast = run_kernel("kernels/gemm_d_blocked.nca", d820);
    double ra = ratio(a_fast.total_ps, a_slow.total_ps);
    double rd = ratio(d_fast.total_ps, d_slow.total_ps);
    if (ra > 0.75)
        fail_msg("HBM-bound gemm_a: 410 / 205 GB/s time ratio %.3f, expected a clear speed-up",
                 ra);
    if (ra < 0.49)
        fail_msg("gemm_a: 410 / 205 GB/s time ratio %.3f: faster than the bandwidth ratio", ra);
    if (rd < 0.97 || rd > 1.0)
        fail_msg("compute-bound gemm_d: 820 / 410 GB/s time ratio %.3f, expected about 1", rd);
    /* the pe does the same work either way */
    assert_int_equal(d_fast.pe_busy_ps, d_slow.pe_busy_ps);
}

/*
 * GEMM (a) moves 33K transfers of 128 descriptors per core: with the calibrated 140 ns per
 * descriptor (1120 ns per transfer on the engines, whatever the queue) it is bound by the
 * descriptors, and neither more HBM nor faster engines help; cheaper descriptors do. With
 * 10 ns descriptors it is bound by the DMA engines' bandwidth (16 x 18.7 GB/s per core): more
 * HBM does not help; with four times the engine bandwidth it does again. The bottleneck
 * moves, as it should.
 */
static void test_bottleneck_moves(void **state)
{
    (void)state;
    static const char *const dflt[] = {NULL};
    static const char *const hbm1640[] = {"hbm.bandwidth_gbps=1640", NULL};
    static const char *const cheap[] = {"dma.descriptor_ns=10", NULL};
    static const char *const cheap1640[] = {"dma.descriptor_ns=10", "hbm.bandwidth_gbps=1640",
                                            NULL};
    static const char *const both820[] = {"dma.descriptor_ns=10", "hbm.bandwidth_gbps=820",
                                          "dma.engine_bandwidth_gbps=74.8", NULL};
    static const char *const both1640[] = {"dma.descriptor_ns=10", "hbm.bandwidth_gbps=1640",
                                           "dma.engine_bandwidth_gbps=74.8", NULL};
    outcome_t base = run_kernel("kernels/gemm_a_tiled.nca", dflt);
    outcome_t more_hbm = run_kernel("kernels/gemm_a_tiled.nca", hbm1640);
    double r = ratio(more_hbm.total_ps, base.total_ps);
    if (r < 0.97 || r > 1.0)
        fail_msg("gemm_a, default: 1640 / 820 GB/s HBM time ratio %.3f, expected no change "
                 "(bound by the descriptors)", r);
    outcome_t a = run_kernel("kernels/gemm_a_tiled.nca", cheap);
    r = ratio(a.total_ps, base.total_ps);
    if (r > 0.8)
        fail_msg("gemm_a: 10 / 140 ns DMA descriptor time ratio %.3f, expected a clear "
                 "speed-up", r);
    outcome_t b = run_kernel("kernels/gemm_a_tiled.nca", cheap1640);
    r = ratio(b.total_ps, a.total_ps);
    if (r < 0.9 || r > 1.0)
        fail_msg("gemm_a, 16 x 18.7 GB/s DMA engines: 1640 / 820 GB/s HBM time ratio %.3f, "
                 "expected little change (DMA-engine-bound)",
                 r);
    outcome_t c = run_kernel("kernels/gemm_a_tiled.nca", both820);
    outcome_t d = run_kernel("kernels/gemm_a_tiled.nca", both1640);
    r = ratio(d.total_ps, c.total_ps);
    if (r > 0.8 || r < 0.49)
        fail_msg("gemm_a, 16 x 74.8 GB/s DMA engines: 1640 / 820 GB/s HBM time ratio %.3f, "
                 "expected a clear speed-up (HBM-bound)",
                 r);
}

/* Twice the tensor engine clock halves a compute-bound GEMM's pe time. */
static void test_pe_clock(void **state)
{
    (void)state;
    static const char *const slow[] = {"pe.clock_ghz=1.4", NULL};
    outcome_t f = run_kernel("kernels/gemm_d_blocked.nca", NULL);
    outcome_t s = run_kernel("kernels/gemm_d_blocked.nca", slow);
    double busy = ratio(s.pe_busy_ps, f.pe_busy_ps);
    if (busy < 1.99 || busy > 2.01)
        fail_msg("pe busy at 1.4 / 2.8 GHz = %.4f, expected 2", busy);
    double total = ratio(s.total_ps, f.total_ps);
    if (total < 1.9 || total > 2.01)
        fail_msg("compute-bound gemm_d at 1.4 / 2.8 GHz: time ratio %.3f, expected about 2",
                 total);
}

/* An all_reduce of 64 MiB per core over the 32 cores of 16 chips (trn1-32xl, 4 x 4 torus). */
static char *all_reduce_16_chips(void)
{
    size_t cap = 16384, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    n += (size_t)snprintf(t + n, cap - n, ".chips 16\n");
    for (unsigned c = 0; c < 16; c++)
        n += (size_t)snprintf(t + n, cap - n, ".hbm x%u fp32 [2, 16384, 1024] scratch chip=%u\n", c,
                              c);
    n += (size_t)snprintf(t + n, cap - n, ".group all = ");
    for (unsigned c = 0; c < 32; c++)
        n += (size_t)snprintf(t + n, cap - n, "%u%s", c, c == 31 ? "\n" : ", ");
    for (unsigned c = 0; c < 32; c++)
        n += (size_t)snprintf(t + n, cap - n,
                              ".core %u\n.engine cc\nall_reduce x%u[%u, :, :], x%u[%u, :, :], "
                              "op=add, group=all\n",
                              c, c / 2, c % 2, c / 2, c % 2);
    assert_true(n < cap);
    return t;
}

/* Half the NeuronLink bandwidth slows an all_reduce across chips and not a local GEMM. */
static void test_link_bandwidth(void **state)
{
    (void)state;
    /* the collective data path per member (cc.rank_bandwidth_gbps, ~57 GB/s) is opened up so
     * that the links are what limits */
    static const char *const full_link[] = {"cc.rank_bandwidth_gbps=1000", NULL};
    static const char *const half_link[] = {"link.bandwidth_gbps=51.539607552",
                                            "cc.rank_bandwidth_gbps=1000", NULL};
    char *text = all_reduce_16_chips();
    outcome_t fast = run_on("trn1-32xl", "all_reduce_16_chips.nca", text, full_link);
    outcome_t slow = run_on("trn1-32xl", "all_reduce_16_chips.nca", text, half_link);
    free(text);
    double r = ratio(slow.total_ps, fast.total_ps);
    if (r < 1.3 || r > 2.01)
        fail_msg("all_reduce of 64 MiB on 32 cores: half / full link bandwidth time ratio %.3f "
                 "(%.1f vs %.1f us), expected a clear slow-down, at most 2x",
                 r, (double)slow.total_ps / 1e6, (double)fast.total_ps / 1e6);
    outcome_t g = run_kernel("kernels/gemm_d_blocked.nca", NULL);
    outcome_t gs = run_kernel("kernels/gemm_d_blocked.nca", half_link);
    assert_int_equal(gs.total_ps, g.total_ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_array_quarters_peak),
        cmocka_unit_test(test_small_array_gemm_time),
        cmocka_unit_test(test_hbm_bandwidth),
        cmocka_unit_test(test_bottleneck_moves),
        cmocka_unit_test(test_pe_clock),
        cmocka_unit_test(test_link_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
