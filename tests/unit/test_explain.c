/*
 * test_explain.c -- "explain the time" (docs/explain.md): cost breakdowns of instructions
 * and transfers against hand-computed trn1 values, through the simulator's API (a trace sink
 * of our own) and in trace files.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch.h"
#include "asm.h"
#include "cost.h"
#include "isa.h"
#include "sim.h"
#include "testutil.h"

static mdl_arch_t trn1;

static int setup(void **state)
{
    (void)state;
    char err[512];
    if (mdl_arch_load("trn1", &trn1, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static isa_program_t *assemble(const char *text)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "t.nca";
    isa_diag_t d;
    isa_diag_init(&d, 0);
    isa_program_t *p = NULL;
    if (isa_assemble(text, strlen(text), &opt, &p, &d) != NCSIM_OK)
        fprintf(stderr, "%s", d.text ? d.text : "");
    isa_diag_free(&d);
    assert_non_null(p);
    return p;
}

/* ---- a trace sink that keeps the records --------------------------------------------------- */

typedef struct collect {
    sim_trace_instr_t instr[64];
    size_t ninstr;
    sim_trace_dma_t dma[64];
    size_t ndma;
} collect_t;

static void on_instr(void *ctx, const sim_trace_instr_t *r)
{
    collect_t *c = ctx;
    if (c->ninstr < 64)
        c->instr[c->ninstr++] = *r;
}

static void on_dma(void *ctx, const sim_trace_dma_t *r)
{
    collect_t *c = ctx;
    if (c->ndma < 64)
        c->dma[c->ndma++] = *r;
}

static void on_sem(void *ctx, const sim_trace_sem_t *r)
{
    (void)ctx;
    (void)r;
}

typedef struct run {
    isa_program_t *prog;
    sim_t *sim;
    collect_t rec;
} run_t;

static run_t *run_text(const char *text)
{
    run_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->prog = assemble(text);
    sim_trace_sink_t sink = {&r->rec, on_instr, on_dma, on_sem, NULL, NULL};
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = &trn1;
    o.timing_only = 1;
    o.trace = &sink;
    char err[1024];
    assert_int_equal(sim_create(r->prog, &o, &r->sim, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_run(r->sim, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
    return r;
}

static void run_free(run_t *r)
{
    sim_destroy(r->sim);
    isa_program_free(r->prog);
    free(r);
}

static const sim_trace_instr_t *find_op(const run_t *r, isa_op_t op, int nth)
{
    for (size_t i = 0; i < r->rec.ninstr; i++)
        if (r->rec.instr[i].instr->op == op && nth-- == 0)
            return &r->rec.instr[i];
    fail_msg("no instruction %d of op %d", nth, (int)op);
    return NULL;
}

/* ---- instruction breakdowns ------------------------------------------------------------------ */

/* An fp32 matmul: II = max(min(64, M=128), N=512) x 4 (fp32) = 2048 PE cycles = 731.429 ns
 * at 2.8 GHz; the text names every term with its value. */
static void test_matmul_fp32_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf w fp32 [128, 128]\n.sbuf x fp32 [128, 512]\n"
                        ".psum acc fp32 [128, 512]\n.engine pe\nldweights w\nmatmul acc, x\n");
    const sim_trace_instr_t *mm = find_op(r, ISA_OP_MATMUL, 0);
    mdl_cost_terms_t terms;
    char text[1024];
    sim_explain_instr(&trn1, r->prog, mm, &terms, text, sizeof text);
    assert_string_equal(terms.ii, "II = max(min({MM_INIT}, {M}), {N} x {s}) x {f} x {passes}");
    assert_true(mdl_cost_term_value(&terms, "N", -1) == 512.0);
    assert_true(mdl_cost_term_value(&terms, "M", -1) == 128.0);
    assert_true(mdl_cost_term_value(&terms, "f", -1) == 4.0);
    assert_true(mdl_cost_term_value(&terms, "s", -1) == 1.0);
    assert_true(mdl_cost_term_value(&terms, "nonexistent", -1) == -1.0);
    assert_string_equal(text,
                        "II = max(min(MM_INIT=64, M=128 (columns of the loaded weights)), "
                        "N=512 (MOV free size) x s=1) x f=4 (fp32: pe.fp32_factor) x passes=1 "
                        "(PE array passes) = 2048 cycles = 731.429 ns; latency = II + "
                        "pipeline=256 (pe.latency_cycles)");
    /* the ldweights: max(64, 128) / 4 x 4 (fp32) = 128 cycles */
    const sim_trace_instr_t *ld = find_op(r, ISA_OP_LDWEIGHTS, 0);
    sim_explain_instr(&trn1, r->prog, ld, &terms, text, sizeof text);
    assert_non_null(strstr(text, "= 128 cycles = 45.714 ns"));
    run_free(r);
}

/* A strided fp32 read on VectorE: innermost stride 8 x 4 B = 32 B > 16 B doubles the N
 * term: max(64, 256 x 2) = 512 DVE cycles = 457.143 ns at 1.12 GHz; latency adds 60 + 40. */
static void test_stride_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf x fp32 [128, 2048]\n.sbuf y fp32 [128, 256]\n"
                        ".engine dve\ntensor_copy y, x[:, 0:2048:8]\n");
    const sim_trace_instr_t *tc = find_op(r, ISA_OP_TENSOR_COPY, 0);
    mdl_cost_terms_t terms;
    char text[1024];
    sim_explain_instr(&trn1, r->prog, tc, &terms, text, sizeof text);
    assert_true(mdl_cost_term_value(&terms, "s", -1) == 2.0);
    assert_true(mdl_cost_term_value(&terms, "MIN_II", -1) == 64.0);
    assert_non_null(strstr(text, "II = max(MIN_II=64, N=256 x s=2 ("));
    assert_non_null(strstr(text, "= 512 cycles = 457.143 ns"));
    assert_non_null(strstr(text, "latency = II + static=60"));
    assert_non_null(strstr(text, "pipeline=40"));
    run_free(r);
}

/* Two inputs in SBUF on VectorE cost 2N; the reason is in the note of k. */
static void test_tensor_tensor_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf a fp32 [128, 512]\n.sbuf b fp32 [128, 512]\n"
                        ".sbuf c fp32 [128, 512]\n.engine dve\ntensor_tensor c, a, b, add\n");
    mdl_cost_terms_t terms;
    char text[1024];
    sim_explain_instr(&trn1, r->prog, find_op(r, ISA_OP_TENSOR_TENSOR, 0), &terms, text,
                      sizeof text);
    assert_true(mdl_cost_term_value(&terms, "k", -1) == 2.0);
    assert_non_null(strstr(text, "k=2 (2 inputs through the SBUF read stream) x N=512"));
    assert_non_null(strstr(text, "= 1024 cycles"));
    run_free(r);
}

/* A background ldweights after a matmul is charged only what the matmul does not hide. */
static void test_background_ldweights_note(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf w bf16 [128, 128]\n.sbuf v bf16 [128, 128]\n"
                        ".sbuf x bf16 [128, 16]\n.psum acc fp32 [128, 16]\n.engine pe\n"
                        "ldweights w\nmatmul acc, x\nldweights v\nmatmul acc, x\n");
    const sim_trace_instr_t *ld = find_op(r, ISA_OP_LDWEIGHTS, 1);
    assert_true(ld->ii_ps < ld->model_ii_ps);
    char text[1024];
    sim_explain_instr(&trn1, r->prog, ld, NULL, text, sizeof text);
    assert_non_null(strstr(text, "loads in the background of the previous matmul"));
    run_free(r);
}

/* ---- transfer breakdowns ------------------------------------------------------------------- */

/* HBM [128 x 512] fp32 -> SBUF: 128 pieces of 2 KiB, efficiency 2048 / (2048 + 8 x 27.2) =
 * 0.90395; fixed cost dma.fixed_cost_ns + hbm.latency_ns; the data time is split among the
 * limits that set the rate, and nothing waits in the queue. */
static void test_dma_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".hbm x fp32 [128, 512] input\n.core 0\n.sbuf y fp32 [128, 512]\n"
                        ".engine sp\ndma y, x, queue=0\ndma y, x, queue=0\n");
    assert_int_equal(r->rec.ndma, 2);
    const sim_trace_dma_t *d = &r->rec.dma[0];
    assert_int_equal(d->pieces, 128);
    assert_true(d->bytes_per_piece == 2048.0);
    double e = trn1.dma.piece_overhead_ns * trn1.dma.engine_bandwidth_gbps;
    assert_true(tu_close(d->efficiency, 2048.0 / (2048.0 + e), 1e-9, 0));
    assert_int_equal(d->fixed_ps,
                     (uint64_t)llround((trn1.dma.fixed_cost_ns + trn1.hbm.latency_ns) * 1000.0));
    assert_int_equal(d->queue_wait_ps, 0);
    uint64_t sum = 0;
    for (int l = 0; l < SIM_DMA_LIMIT_COUNT; l++)
        sum += d->limited_ps[l];
    assert_int_equal(sum, d->end_ps - d->start_ps);
    assert_true(d->dma_share > 0 && d->dma_share <= 1.0 + 1e-9);
    /* the second one waits behind the first in queue 0 */
    const sim_trace_dma_t *d2 = &r->rec.dma[1];
    assert_int_equal(d2->start_ps, d->end_ps);
    assert_int_equal(d2->queue_wait_ps, d2->start_ps - d2->issue_ps - d2->fixed_ps);
    assert_true(d2->queue_wait_ps > 0);
    char text[1024];
    sim_explain_dma(d, text, sizeof text);
    assert_non_null(strstr(text, "128 pieces x 2048 B at efficiency 0.904"));
    assert_non_null(strstr(text, "rate set by:"));
    run_free(r);
}

/* Reading a matrix column-wise: one 4 B piece per element, efficiency 4 / (4 + 217.6). */
static void test_dma_small_pieces(void **state)
{
    (void)state;
    run_t *r = run_text(".hbm x fp32 [128, 128] input\n.core 0\n.sbuf y fp32 [128, 1]\n"
                        ".engine sp\ndma y, x[:, 0:1]\n");
    const sim_trace_dma_t *d = &r->rec.dma[0];
    assert_int_equal(d->pieces, 128);
    assert_true(d->bytes_per_piece == 4.0);
    double e = trn1.dma.piece_overhead_ns * trn1.dma.engine_bandwidth_gbps;
    assert_true(tu_close(d->efficiency, 4.0 / (4.0 + e), 1e-9, 0));
    run_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_fp32_breakdown),
        cmocka_unit_test(test_stride_breakdown),
        cmocka_unit_test(test_tensor_tensor_breakdown),
        cmocka_unit_test(test_background_ldweights_note),
        cmocka_unit_test(test_dma_breakdown),
        cmocka_unit_test(test_dma_small_pieces),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
