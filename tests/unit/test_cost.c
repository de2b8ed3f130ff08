/*
 * test_cost.c -- models/cost.c: single-instruction II/latency against values computed by hand
 * from the published NC-v2 formulas (shared/reference/neuroncore-v2.md section 5, listed in
 * docs/cost-model.md) for trn1, operand accounting (bytes, ports), DMA shapes and the DMA
 * efficiency curve. Programs are built in memory with isa_builder_*.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arch.h"
#include "cost.h"
#include "isa.h"
#include "isa_internal.h"
#include "testutil.h"

/* ---- the trn1 architecture ------------------------------------------------------------------ */

/*
 * The trn1 preset (models/presets/trn1.json). Published numbers are checked as literals below
 * (2.8 GHz, 64, 150, ...); assumption-only values (pipeline latencies, sp issue cost, the
 * per-piece DMA overhead) are used only through the struct.
 */
static int trn1_arch(mdl_arch_t *a)
{
    char err[512];
    if (mdl_arch_load("trn1", a, err, sizeof err) != NCSIM_OK ||
        mdl_arch_validate(a, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "test_cost: trn1 preset: %s\n", err);
        return -1;
    }
    return 0;
}

/* ---- building one instruction ------------------------------------------------------------- */

typedef struct tc {
    mdl_arch_t arch;
    isa_builder_t b;
    isa_op_t op;
    uint32_t first; /* first arg slot of the instruction being built */
} tc_t;

static int setup(void **state)
{
    static tc_t c;
    memset(&c, 0, sizeof c);
    if (trn1_arch(&c.arch) != 0 || isa_builder_init(&c.b) != 0)
        return -1;
    /* The formula tests below use the published VectorE factors (ISA-OLD: tensor_tensor 2N,
     * reciprocal 8N); the trn1 preset's fitted values are checked in test_fitted_factors. */
    c.arch.costs.dve_tensor_tensor_factor = 2.0;
    c.arch.costs.dve_reciprocal_factor = 8.0;
    *state = &c;
    return 0;
}

static int teardown(void **state)
{
    tc_t *c = *state;
    isa_program_free(c->b.prog);
    c->b.prog = NULL;
    return 0;
}

static unsigned slot_index(isa_op_t op, const char *name)
{
    const isa_op_info_t *info = isa_op_info(op);
    for (unsigned i = 0; i < info->nslots; i++)
        if (strcmp(info->slots[i].name, name) == 0)
            return i;
    fail_msg("%s has no slot %s", info->mnemonic, name);
    return 0;
}

static void tc_op(tc_t *c, isa_op_t op)
{
    c->op = op;
    c->first = isa_builder_args(&c->b, isa_op_info(op)->nslots);
    assert_int_not_equal(c->first, UINT32_MAX);
}

static isa_arg_t *tc_arg(tc_t *c, const char *slot)
{
    return &c->b.prog->args[c->first + slot_index(c->op, slot)];
}

/* A view operand (VIEW slot, or a [P,1] vector in a SCALAR slot). */
static void tc_view(tc_t *c, const char *slot, isa_view_t v)
{
    uint32_t vi = isa_builder_view(&c->b, &v);
    assert_int_not_equal(vi, UINT32_MAX);
    isa_arg_t *a = tc_arg(c, slot);
    a->present = 1;
    a->is_view = 1;
    a->index = vi;
}

static void tc_int(tc_t *c, const char *slot, int64_t value)
{
    isa_arg_t *a = tc_arg(c, slot);
    a->present = 1;
    a->v.i = value;
}

static void tc_float(tc_t *c, const char *slot, double value)
{
    isa_arg_t *a = tc_arg(c, slot);
    a->present = 1;
    a->is_view = 0;
    a->v.f = value;
}

/* Append the instruction on engine e and cost it. */
static mdl_cost_t tc_cost(tc_t *c, isa_engine_t e, uint32_t stationary_cols)
{
    isa_instr_t in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)c->op;
    in.engine = (uint8_t)e;
    in.args = c->first;
    uint32_t idx = isa_builder_instr(&c->b, &in);
    assert_int_not_equal(idx, UINT32_MAX);
    mdl_cost_t cost;
    mdl_cost_instr(&c->arch, c->b.prog, &c->b.prog->instrs[idx], stationary_cols, &cost);
    return cost;
}

/* ---- views ---------------------------------------------------------------------------------- */

static isa_view_t view1(isa_space_t s, isa_dtype_t dt, uint16_t p, uint32_t n, int64_t stride)
{
    isa_view_t v;
    memset(&v, 0, sizeof v);
    v.space = (uint8_t)s;
    v.dtype = (uint8_t)dt;
    v.ndims = 1;
    v.pcount = s == ISA_SPACE_HBM ? 1 : p;
    v.stride[0] = stride;
    v.count[0] = n;
    return v;
}

static isa_view_t sb(isa_dtype_t dt, uint16_t p, uint32_t n)
{
    return view1(ISA_SPACE_SBUF, dt, p, n, 1);
}

static isa_view_t ps(isa_dtype_t dt, uint16_t p, uint32_t n)
{
    return view1(ISA_SPACE_PSUM, dt, p, n, 1);
}

/* A view of ndims dims, counts and strides outermost first. */
static isa_view_t viewn(isa_space_t s, isa_dtype_t dt, uint16_t p, unsigned ndims,
                        const uint32_t *counts, const int64_t *strides)
{
    isa_view_t v = view1(s, dt, p, 1, 1);
    v.ndims = (uint8_t)ndims;
    for (unsigned i = 0; i < ndims; i++) {
        v.count[i] = counts[i];
        v.stride[i] = strides[i];
    }
    return v;
}

#define ASSERT_NEAR(actual, expected)                                                          \
    do {                                                                                       \
        double a_ = (actual), e_ = (expected);                                                 \
        if (!tu_close(a_, e_, 1e-9, 1e-9))                                                     \
            fail_msg("%s = %.10g, expected %.10g", #actual, a_, e_);                           \
    } while (0)

/* ---- helpers for the common instruction shapes -------------------------------------------- */

static mdl_cost_t matmul(tc_t *c, isa_view_t d, isa_view_t mov, int acc, uint32_t stat)
{
    tc_op(c, ISA_OP_MATMUL);
    tc_view(c, "D", d);
    tc_view(c, "MOV", mov);
    if (acc)
        tc_int(c, "acc", 1);
    return tc_cost(c, ISA_ENGINE_PE, stat);
}

static mdl_cost_t unary(tc_t *c, isa_op_t op, isa_engine_t e, isa_view_t d, isa_view_t src)
{
    tc_op(c, op);
    tc_view(c, "D", d);
    tc_view(c, "SRC", src);
    return tc_cost(c, e, 0);
}

static mdl_cost_t binary(tc_t *c, isa_engine_t e, isa_view_t d, isa_view_t x, isa_view_t y,
                         isa_alu_t alu)
{
    tc_op(c, ISA_OP_TENSOR_TENSOR);
    tc_view(c, "D", d);
    tc_view(c, "A", x);
    tc_view(c, "B", y);
    tc_int(c, "OP", alu);
    return tc_cost(c, e, 0);
}

/* II cycles of an act/dve/pool instruction must also give ii_ns and latency_ns: latency is
 * max(II, raw + static overhead x (1 + vectors) + latency cycles), raw being the streaming
 * work before the MIN_II floor and vectors the [P,1] scalar operands (docs/cost-model.md 2.1). */
static void check_stream_full(const tc_t *c, const mdl_cost_t *k, const mdl_engine_cfg_t *cfg,
                              double cycles, double raw, unsigned vectors, int line)
{
    (void)c;
    double lat = raw + cfg->static_overhead_cycles * (1.0 + vectors) + cfg->latency_cycles;
    if (lat < cycles)
        lat = cycles;
    if (!tu_close(k->cycles, cycles, 1e-9, 1e-9) ||
        !tu_close(k->ii_ns, cycles / cfg->clock_ghz, 1e-9, 1e-9) ||
        !tu_close(k->latency_ns, lat / cfg->clock_ghz, 1e-9, 1e-9))
        fail_msg("line %d: cycles %.10g ii %.10g latency %.10g, expected %.10g %.10g %.10g",
                 line, k->cycles, k->ii_ns, k->latency_ns, cycles, cycles / cfg->clock_ghz,
                 lat / cfg->clock_ghz);
}
/* An instruction whose streaming work is at least MIN_II and which has no [P,1] vector. */
#define check_stream(c, k, cfg, cycles)                                                        \
    check_stream_full((c), (k), (cfg), (cycles), (cycles), 0, __LINE__)
/* Below the floor, or with vectors: raw work and vector count given. */
#define check_stream_v(c, k, cfg, cycles, raw, vectors)                                        \
    check_stream_full((c), (k), (cfg), (cycles), (raw), (vectors), __LINE__)

/* ---- tests --------------------------------------------------------------------------------- */

static void test_clocks(void **state)
{
    tc_t *c = *state;
    ASSERT_NEAR(mdl_engine_clock_ghz(&c->arch, ISA_ENGINE_PE), 2.8);
    ASSERT_NEAR(mdl_engine_clock_ghz(&c->arch, ISA_ENGINE_ACT), 1.4);
    ASSERT_NEAR(mdl_engine_clock_ghz(&c->arch, ISA_ENGINE_DVE), 1.12);
    ASSERT_NEAR(mdl_engine_clock_ghz(&c->arch, ISA_ENGINE_POOL), 1.4);
    ASSERT_NEAR(mdl_engine_clock_ghz(&c->arch, ISA_ENGINE_SP), c->arch.sp.clock_ghz);
    ASSERT_NEAR(mdl_engine_clock_ghz(&c->arch, ISA_ENGINE_CC), c->arch.sp.clock_ghz);
}

/* The reference's worked example: 128x128x512 bf16 = 512 PE cycles = 182.86 ns = 92 TFLOPS. */
static void test_matmul_bf16_peak(void **state)
{
    tc_t *c = *state;
    mdl_cost_t k = matmul(c, ps(ISA_DT_FP32, 128, 512), sb(ISA_DT_BF16, 128, 512), 0, 128);
    ASSERT_NEAR(k.cycles, 512);
    assert_true(tu_close(k.ii_ns, 182.857142857, 1e-9, 1e-6));
    ASSERT_NEAR(k.latency_ns, (512 + c->arch.pe.latency_cycles) / 2.8);
    assert_int_equal(k.flops, 2ull * 128 * 128 * 512);
    assert_int_equal(k.hw_flops, k.flops);
    double tflops = (double)k.flops / k.ii_ns / 1000.0;
    assert_true(tu_close(tflops, 91.75, 0, 0.01));
    /* operands: MOV read from SBUF, D written to PSUM, nothing else */
    assert_int_equal(k.bytes_read, 128u * 512 * 2);
    assert_int_equal(k.bytes_written, 128u * 512 * 4);
    assert_true(k.reads_sbuf && k.writes_psum);
    assert_false(k.writes_sbuf || k.reads_psum);
}

static void test_matmul_dtypes(void **state)
{
    tc_t *c = *state;
    /* fp32 inputs cost 4x [ARCH] */
    mdl_cost_t k = matmul(c, ps(ISA_DT_FP32, 128, 512), sb(ISA_DT_FP32, 128, 512), 0, 128);
    ASSERT_NEAR(k.cycles, 2048);
    ASSERT_NEAR(k.ii_ns, 2048 / 2.8);
    assert_int_equal(k.flops, 2ull * 128 * 128 * 512);
    /* fp8 at the bf16 rate on NC-v2; fp16 and tf32 too */
    static const isa_dtype_t full[] = {ISA_DT_FP8E4, ISA_DT_FP8E5, ISA_DT_FP8E3, ISA_DT_FP16,
                                       ISA_DT_TF32, ISA_DT_BF16};
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
        k = matmul(c, ps(ISA_DT_FP32, 128, 512), sb(full[i], 128, 512), 0, 128);
        ASSERT_NEAR(k.cycles, 512);
    }
    /* fp8_factor is read from the config */
    c->arch.pe.fp8_factor = 0.5;
    k = matmul(c, ps(ISA_DT_FP32, 128, 512), sb(ISA_DT_FP8E4, 128, 512), 0, 128);
    ASSERT_NEAR(k.cycles, 256);
}

/* II = max(min(64, M_stationary), N): small N floors at MM_INIT_LATENCY = 64. */
static void test_matmul_small_n(void **state)
{
    tc_t *c = *state;
    mdl_cost_t k = matmul(c, ps(ISA_DT_FP32, 128, 16), sb(ISA_DT_BF16, 128, 16), 0, 128);
    ASSERT_NEAR(k.cycles, 64);
    ASSERT_NEAR(k.ii_ns, 64 / 2.8);
    k = matmul(c, ps(ISA_DT_FP32, 128, 100), sb(ISA_DT_BF16, 128, 100), 0, 128);
    ASSERT_NEAR(k.cycles, 100);
    /* narrow stationary: min(64, 32) = 32 */
    k = matmul(c, ps(ISA_DT_FP32, 32, 16), sb(ISA_DT_BF16, 128, 16), 0, 32);
    ASSERT_NEAR(k.cycles, 32);
    assert_int_equal(k.flops, 2ull * 128 * 32 * 16);
    /* stationary_cols 0: M from D's partitions */
    k = matmul(c, ps(ISA_DT_FP32, 32, 16), sb(ISA_DT_BF16, 128, 16), 0, 0);
    ASSERT_NEAR(k.cycles, 32);
    /* fp32 small N: 4 x 64 */
    k = matmul(c, ps(ISA_DT_FP32, 128, 8), sb(ISA_DT_FP32, 64, 8), 0, 128);
    ASSERT_NEAR(k.cycles, 256);
    assert_int_equal(k.flops, 2ull * 64 * 128 * 8);
}

static void test_matmul_acc_and_stride(void **state)
{
    tc_t *c = *state;
    mdl_cost_t k = matmul(c, ps(ISA_DT_FP32, 128, 512), sb(ISA_DT_BF16, 128, 512), 1, 128);
    ASSERT_NEAR(k.cycles, 512);
    assert_true(k.reads_psum && k.writes_psum && k.reads_sbuf);
    assert_int_equal(k.bytes_read, 128u * 512 * 2 + 128u * 512 * 4);
    /* bf16 moving with stride 16 elements = 32 B > 16 B: half bandwidth, N term x2 */
    k = matmul(c, ps(ISA_DT_FP32, 128, 512), view1(ISA_SPACE_SBUF, ISA_DT_BF16, 128, 512, 16),
               0, 128);
    ASSERT_NEAR(k.cycles, 1024);
    /* stride 8 bf16 = 16 B: not above the limit */
    k = matmul(c, ps(ISA_DT_FP32, 128, 512), view1(ISA_SPACE_SBUF, ISA_DT_BF16, 128, 512, 8),
               0, 128);
    ASSERT_NEAR(k.cycles, 512);
    /* the penalty scales the N term, not the min(64, M) floor */
    k = matmul(c, ps(ISA_DT_FP32, 128, 16), view1(ISA_SPACE_SBUF, ISA_DT_BF16, 128, 16, 16), 0,
               128);
    ASSERT_NEAR(k.cycles, 64);
}

/* LoadStationary: max(64, M) / 4: 128 columns = 32 cycles [PERF]; floor 16. */
static void test_ldweights(void **state)
{
    tc_t *c = *state;
    tc_op(c, ISA_OP_LDWEIGHTS);
    tc_view(c, "STAT", sb(ISA_DT_BF16, 128, 128));
    mdl_cost_t k = tc_cost(c, ISA_ENGINE_PE, 0);
    ASSERT_NEAR(k.cycles, 32);
    ASSERT_NEAR(k.ii_ns, 32 / 2.8);
    ASSERT_NEAR(k.latency_ns, (32 + c->arch.pe.latency_cycles) / 2.8);
    assert_int_equal(k.flops, 0);
    assert_int_equal(k.hw_flops, 0);
    assert_int_equal(k.bytes_read, 128u * 128 * 2);
    assert_int_equal(k.bytes_written, 0);
    assert_true(k.reads_sbuf);
    assert_false(k.writes_psum);

    tc_op(c, ISA_OP_LDWEIGHTS);
    tc_view(c, "STAT", sb(ISA_DT_BF16, 128, 32));
    ASSERT_NEAR(tc_cost(c, ISA_ENGINE_PE, 0).cycles, 16);

    tc_op(c, ISA_OP_LDWEIGHTS);
    tc_view(c, "STAT", sb(ISA_DT_FP32, 128, 128));
    ASSERT_NEAR(tc_cost(c, ISA_ENGINE_PE, 0).cycles, 128);

    /* at least 4x faster than the MM of the same free size */
    tc_op(c, ISA_OP_LDWEIGHTS);
    tc_view(c, "STAT", sb(ISA_DT_BF16, 128, 100));
    mdl_cost_t ls = tc_cost(c, ISA_ENGINE_PE, 0);
    mdl_cost_t mm = matmul(c, ps(ISA_DT_FP32, 128, 100), sb(ISA_DT_BF16, 128, 100), 0, 128);
    ASSERT_NEAR(ls.cycles * 4, mm.cycles);
}

/* PE transpose: max(P, min(64, F)); 2 P P F hardware FLOPs, no useful ones. */
static void test_pe_transpose(void **state)
{
    tc_t *c = *state;
    static const struct {
        uint16_t p;
        uint32_t f;
        isa_dtype_t dt;
        double cycles;
    } cases[] = {
        {128, 128, ISA_DT_BF16, 128}, {32, 128, ISA_DT_BF16, 64}, {32, 16, ISA_DT_BF16, 32},
        {128, 16, ISA_DT_BF16, 128},  {16, 8, ISA_DT_BF16, 16},   {128, 128, ISA_DT_FP32, 512},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mdl_cost_t k = unary(c, ISA_OP_TRANSPOSE, ISA_ENGINE_PE,
                             ps(ISA_DT_FP32, (uint16_t)cases[i].f, cases[i].p),
                             sb(cases[i].dt, cases[i].p, cases[i].f));
        ASSERT_NEAR(k.cycles, cases[i].cycles);
        ASSERT_NEAR(k.ii_ns, cases[i].cycles / 2.8);
        assert_int_equal(k.flops, 0);
        assert_int_equal(k.hw_flops, 2ull * cases[i].p * cases[i].p * cases[i].f);
        assert_true(k.reads_sbuf && k.writes_psum);
    }
}

/* activate: max(MIN_II, N) ScalarE cycles at 1.4 GHz; + ActReadAccumulator with a sum. */
static void test_act_activate(void **state)
{
    tc_t *c = *state;
    const mdl_engine_cfg_t *act = &c->arch.act;
    static const struct {
        uint32_t n;
        double cycles;
    } cases[] = {{512, 512}, {1000, 1000}, {64, 64}, {16, 64}, {1, 64}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_op(c, ISA_OP_ACTIVATE);
        tc_view(c, "D", sb(ISA_DT_BF16, 128, cases[i].n));
        tc_view(c, "SRC", ps(ISA_DT_FP32, 128, cases[i].n));
        tc_int(c, "FUNC", ISA_FUNC_EXP);
        mdl_cost_t k = tc_cost(c, ISA_ENGINE_ACT, 0);
        /* below MIN_II the latency is the N of work + static overhead + latency */
        check_stream_v(c, &k, act, cases[i].cycles, cases[i].n, 0);
        assert_true(k.reads_psum && k.writes_sbuf);
        assert_false(k.reads_sbuf || k.writes_psum);
    }
    ASSERT_NEAR(512 / 1.4, 365.7142857142857);

    /* scale and bias do not change the II [ARCH]; a sum adds act_reduce_cycles; the bias
     * vector is one more static access overhead on the latency (fig16) */
    tc_op(c, ISA_OP_ACTIVATE);
    tc_view(c, "D", sb(ISA_DT_FP32, 128, 512));
    tc_view(c, "SRC", sb(ISA_DT_FP32, 128, 512));
    tc_int(c, "FUNC", ISA_FUNC_GELU);
    tc_float(c, "scale", 2.0);
    tc_view(c, "bias", sb(ISA_DT_FP32, 128, 1));
    tc_view(c, "sum", sb(ISA_DT_FP32, 128, 1));
    mdl_cost_t k = tc_cost(c, ISA_ENGINE_ACT, 0);
    check_stream_v(c, &k, act, 512 + 64, 512 + 64, 1);
    assert_int_equal(k.bytes_read, 128u * 512 * 4 + 128u * 4);
    assert_int_equal(k.bytes_written, 128u * 512 * 4 + 128u * 4);

    /* sumacc: small N, reads and writes R */
    tc_op(c, ISA_OP_ACTIVATE);
    tc_view(c, "D", sb(ISA_DT_FP32, 128, 8));
    tc_view(c, "SRC", sb(ISA_DT_FP32, 128, 8));
    tc_int(c, "FUNC", ISA_FUNC_COPY);
    tc_view(c, "scale", sb(ISA_DT_FP32, 128, 1));
    tc_view(c, "sumacc", ps(ISA_DT_FP32, 128, 1));
    k = tc_cost(c, ISA_ENGINE_ACT, 0);
    check_stream_v(c, &k, act, 64 + 64, 8 + 64, 1); /* scale vector: one more overhead */
    assert_true(k.reads_psum && k.writes_psum);
    assert_int_equal(k.bytes_read, 128u * 8 * 4 + 128u * 4 + 128u * 4);

    /* the static overhead is on latency, not II: fig16's dependent 1-element activation with
     * scale and bias vectors lasts 1 + 3 x 60 + 41 = 222 ScalarE cycles = 158.6 ns (measured
     * 159 ns) while its II stays MIN_II */
    tc_op(c, ISA_OP_ACTIVATE);
    tc_view(c, "D", sb(ISA_DT_FP32, 128, 1));
    tc_view(c, "SRC", sb(ISA_DT_FP32, 128, 1));
    tc_int(c, "FUNC", ISA_FUNC_IDENTITY);
    tc_view(c, "scale", sb(ISA_DT_FP32, 128, 1));
    tc_view(c, "bias", sb(ISA_DT_FP32, 128, 1));
    k = tc_cost(c, ISA_ENGINE_ACT, 0);
    ASSERT_NEAR(k.ii_ns, 64 / 1.4);
    ASSERT_NEAR(k.latency_ns, (1 + 3 * 60 + act->latency_cycles) / 1.4);
    assert_true(act->static_overhead_cycles == 60);
    /* without the vectors: one static overhead */
    tc_op(c, ISA_OP_ACTIVATE);
    tc_view(c, "D", sb(ISA_DT_FP32, 128, 1));
    tc_view(c, "SRC", sb(ISA_DT_FP32, 128, 1));
    tc_int(c, "FUNC", ISA_FUNC_EXP);
    k = tc_cost(c, ISA_ENGINE_ACT, 0);
    ASSERT_NEAR(k.latency_ns, (1 + 60 + act->latency_cycles) / 1.4);
}

/* The trn1 preset's VectorE factors reach the cost: an fp32 tensor_tensor of N = 512 in SBUF
 * streams the published 2 N cycles, a reciprocal the fitted 2.95 N (docs/validation.md). */
static void test_fitted_factors(void **state)
{
    tc_t *c = *state;
    mdl_arch_t saved = c->arch;
    assert_int_equal(trn1_arch(&c->arch), 0);
    const mdl_engine_cfg_t *dve = &c->arch.dve;
    assert_true(c->arch.costs.dve_tensor_tensor_factor == 2.0);
    assert_true(c->arch.costs.dve_reciprocal_factor == 2.95);
    mdl_cost_t k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512), sb(ISA_DT_FP32, 128, 512),
                          sb(ISA_DT_FP32, 128, 512), ISA_ALU_ADD);
    check_stream(c, &k, dve, 2.0 * 512);
    k = unary(c, ISA_OP_RECIPROCAL, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512),
              sb(ISA_DT_FP32, 128, 512));
    check_stream(c, &k, dve, 2.95 * 512);
    /* the optional tensor-engine throttle stretches II and not the pipeline latency */
    c->arch.pe.throttle_factor = 1.25;
    k = matmul(c, ps(ISA_DT_FP32, 128, 512), sb(ISA_DT_BF16, 128, 512), 0, 128);
    ASSERT_NEAR(k.ii_ns, 1.25 * 512 / 2.8);
    ASSERT_NEAR(k.latency_ns, (1.25 * 512 + c->arch.pe.latency_cycles) / 2.8);
    c->arch = saved;
}

/* tensor_scalar and tensor_copy on act/dve: max(MIN_II, N) at each engine's clock. */
static void test_shared_ops(void **state)
{
    tc_t *c = *state;
    static const isa_engine_t engines[] = {ISA_ENGINE_ACT, ISA_ENGINE_DVE};
    for (size_t i = 0; i < 2; i++) {
        const mdl_engine_cfg_t *cfg = engines[i] == ISA_ENGINE_ACT ? &c->arch.act : &c->arch.dve;
        tc_op(c, ISA_OP_TENSOR_SCALAR);
        tc_view(c, "D", sb(ISA_DT_BF16, 128, 256));
        tc_view(c, "SRC", sb(ISA_DT_BF16, 128, 256));
        tc_int(c, "OP0", ISA_ALU_MULTIPLY);
        tc_float(c, "S0", 3.0);
        tc_int(c, "OP1", ISA_ALU_ADD);
        tc_view(c, "S1", sb(ISA_DT_FP32, 128, 1));
        mdl_cost_t k = tc_cost(c, engines[i], 0);
        check_stream_v(c, &k, cfg, 256, 256, 1); /* two ops cost the same as one; S1 is a
                                                   * [P,1] vector: one more static overhead */

        k = unary(c, ISA_OP_TENSOR_COPY, engines[i], sb(ISA_DT_BF16, 128, 32),
                  ps(ISA_DT_FP32, 128, 32));
        check_stream_v(c, &k, cfg, 64, 32, 0);
        k = unary(c, ISA_OP_TENSOR_COPY, engines[i], sb(ISA_DT_BF16, 128, 2048),
                  sb(ISA_DT_FP32, 128, 2048));
        check_stream(c, &k, cfg, 2048);
    }
}

/* dve tensor_tensor: N for PSUM+SBUF or all-bf16 add/mul/sub unit stride, else 2N. */
static void test_dve_tensor_tensor(void **state)
{
    tc_t *c = *state;
    const mdl_engine_cfg_t *dve = &c->arch.dve;
    mdl_cost_t k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512), sb(ISA_DT_FP32, 128, 512),
                          sb(ISA_DT_FP32, 128, 512), ISA_ALU_ADD);
    check_stream(c, &k, dve, 1024);
    ASSERT_NEAR(k.ii_ns, 1024 / 1.12);
    k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512), ps(ISA_DT_FP32, 128, 512),
               sb(ISA_DT_FP32, 128, 512), ISA_ALU_MAX);
    check_stream(c, &k, dve, 512);
    assert_true(k.reads_psum && k.reads_sbuf && k.writes_sbuf);
    assert_false(k.writes_psum);
    k = binary(c, ISA_ENGINE_DVE, ps(ISA_DT_FP32, 128, 512), sb(ISA_DT_BF16, 128, 512),
               ps(ISA_DT_FP32, 128, 512), ISA_ALU_DIVIDE);
    check_stream(c, &k, dve, 512);
    /* all-bf16 add / multiply / subtract in SBUF, unit stride */
    static const isa_alu_t fast[] = {ISA_ALU_ADD, ISA_ALU_MULTIPLY, ISA_ALU_SUBTRACT};
    for (size_t i = 0; i < 3; i++) {
        k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_BF16, 128, 512), sb(ISA_DT_BF16, 128, 512),
                   sb(ISA_DT_BF16, 128, 512), fast[i]);
        check_stream(c, &k, dve, 512);
    }
    k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_BF16, 128, 512), sb(ISA_DT_BF16, 128, 512),
               sb(ISA_DT_BF16, 128, 512), ISA_ALU_DIVIDE);
    check_stream(c, &k, dve, 1024);
    k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512), sb(ISA_DT_BF16, 128, 512),
               sb(ISA_DT_BF16, 128, 512), ISA_ALU_ADD);
    check_stream(c, &k, dve, 1024);
    /* stride 2 bf16 = 4 B: no bandwidth penalty, but not unit stride */
    k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_BF16, 128, 512),
               view1(ISA_SPACE_SBUF, ISA_DT_BF16, 128, 512, 2), sb(ISA_DT_BF16, 128, 512),
               ISA_ALU_ADD);
    check_stream(c, &k, dve, 1024);
    /* small N: max(MIN_II, 2N) */
    k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 16), sb(ISA_DT_FP32, 128, 16),
               sb(ISA_DT_FP32, 128, 16), ISA_ALU_ADD);
    check_stream_v(c, &k, dve, 64, 32, 0);
    k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 40), sb(ISA_DT_FP32, 128, 40),
               sb(ISA_DT_FP32, 128, 40), ISA_ALU_ADD);
    check_stream(c, &k, dve, 80);
    assert_int_equal(k.bytes_read, 2u * 128 * 40 * 4);
    assert_int_equal(k.bytes_written, 128u * 40 * 4);
}

/* An innermost stride above 16 bytes halves bandwidth: the N term doubles. */
static void test_stride_penalty(void **state)
{
    tc_t *c = *state;
    const mdl_engine_cfg_t *dve = &c->arch.dve;
    static const struct {
        isa_dtype_t dt;
        int64_t stride;
        double cycles;
    } cases[] = {
        {ISA_DT_FP32, 1, 512},  {ISA_DT_FP32, 4, 512},  {ISA_DT_FP32, 5, 1024},
        {ISA_DT_FP32, 8, 1024}, {ISA_DT_FP32, -8, 1024}, {ISA_DT_FP32, 0, 512},
        {ISA_DT_BF16, 8, 512},  {ISA_DT_BF16, 9, 1024}, {ISA_DT_FP8E4, 16, 512},
        {ISA_DT_FP8E4, 17, 1024},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mdl_cost_t k =
            unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512),
                  view1(ISA_SPACE_SBUF, cases[i].dt, 128, 512, cases[i].stride));
        check_stream(c, &k, dve, cases[i].cycles);
    }
    /* a strided destination counts too */
    mdl_cost_t k = unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE,
                         view1(ISA_SPACE_SBUF, ISA_DT_FP32, 128, 512, 32),
                         sb(ISA_DT_FP32, 128, 512));
    check_stream(c, &k, dve, 1024);
    /* the innermost dim that moves decides: [64 x 1] with a big stride on a count-1 dim */
    uint32_t counts[2] = {512, 1};
    int64_t strides[2] = {1, 1000};
    k = unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512),
              viewn(ISA_SPACE_SBUF, ISA_DT_FP32, 128, 2, counts, strides));
    check_stream(c, &k, dve, 512);
    /* column read of a row-major tile: innermost stride 64 fp32 */
    uint32_t counts2[2] = {64, 8};
    int64_t strides2[2] = {1, 64};
    k = unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512),
              viewn(ISA_SPACE_SBUF, ISA_DT_FP32, 128, 2, counts2, strides2));
    check_stream(c, &k, dve, 1024);
    /* on act too, and with the 2N rule: 2 x 2N; factor from the config */
    k = binary(c, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 512),
               view1(ISA_SPACE_SBUF, ISA_DT_FP32, 128, 512, 8), sb(ISA_DT_FP32, 128, 512),
               ISA_ALU_ADD);
    check_stream(c, &k, dve, 2048);
    c->arch.costs.stride_penalty_factor = 3;
    k = unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_ACT, sb(ISA_DT_FP32, 128, 512),
              view1(ISA_SPACE_SBUF, ISA_DT_FP32, 128, 512, 8));
    check_stream(c, &k, &c->arch.act, 1536);
    /* a small strided op stays at MIN_II */
    k = unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_ACT, sb(ISA_DT_FP32, 128, 16),
              view1(ISA_SPACE_SBUF, ISA_DT_FP32, 128, 16, 8));
    check_stream_v(c, &k, &c->arch.act, 64, 48, 0); /* 3 x 16 below the floor */
}

static mdl_cost_t stt(tc_t *c, isa_dtype_t dt, uint32_t n, isa_alu_t op0, isa_alu_t op1)
{
    tc_op(c, ISA_OP_SCALAR_TENSOR_TENSOR);
    tc_view(c, "D", sb(dt, 128, n));
    tc_view(c, "A", sb(dt, 128, n));
    tc_int(c, "OP0", op0);
    tc_view(c, "S0", sb(ISA_DT_FP32, 128, 1));
    tc_int(c, "OP1", op1);
    tc_view(c, "B", sb(dt, 128, n));
    return tc_cost(c, ISA_ENGINE_DVE, 0);
}

static void test_dve_scalar_tensor_tensor(void **state)
{
    tc_t *c = *state;
    const mdl_engine_cfg_t *dve = &c->arch.dve;
    mdl_cost_t k = stt(c, ISA_DT_BF16, 512, ISA_ALU_SUBTRACT, ISA_ALU_MULTIPLY);
    check_stream_v(c, &k, dve, 512, 512, 1); /* S0 is a [P,1] vector */
    k = stt(c, ISA_DT_BF16, 511, ISA_ALU_SUBTRACT, ISA_ALU_MULTIPLY);
    check_stream_v(c, &k, dve, 1022, 1022, 1);
    k = stt(c, ISA_DT_BF16, 512, ISA_ALU_ADD, ISA_ALU_MULTIPLY);
    check_stream_v(c, &k, dve, 1024, 1024, 1);
    k = stt(c, ISA_DT_BF16, 512, ISA_ALU_SUBTRACT, ISA_ALU_ADD);
    check_stream_v(c, &k, dve, 1024, 1024, 1);
    k = stt(c, ISA_DT_FP32, 512, ISA_ALU_SUBTRACT, ISA_ALU_MULTIPLY);
    check_stream_v(c, &k, dve, 1024, 1024, 1);
    k = stt(c, ISA_DT_BF16, 20, ISA_ALU_SUBTRACT, ISA_ALU_MULTIPLY);
    check_stream_v(c, &k, dve, 64, 20, 1);
    assert_int_equal(k.bytes_read, 2u * 128 * 20 * 2 + 128u * 4);
}

static mdl_cost_t reduce(tc_t *c, isa_dtype_t in, isa_dtype_t out, uint32_t n, isa_alu_t op)
{
    tc_op(c, ISA_OP_TENSOR_REDUCE);
    tc_view(c, "D", sb(out, 128, 1));
    tc_view(c, "SRC", sb(in, 128, n));
    tc_int(c, "OP", op);
    tc_int(c, "axes", 1);
    return tc_cost(c, ISA_ENGINE_DVE, 0);
}

static void test_dve_reduce(void **state)
{
    tc_t *c = *state;
    const mdl_engine_cfg_t *dve = &c->arch.dve;
    mdl_cost_t k = reduce(c, ISA_DT_BF16, ISA_DT_BF16, 512, ISA_ALU_ADD);
    check_stream(c, &k, dve, 256);
    k = reduce(c, ISA_DT_BF16, ISA_DT_BF16, 512, ISA_ALU_MAX);
    check_stream(c, &k, dve, 256);
    k = reduce(c, ISA_DT_BF16, ISA_DT_BF16, 512, ISA_ALU_MIN);
    check_stream(c, &k, dve, 512);
    k = reduce(c, ISA_DT_FP32, ISA_DT_FP32, 512, ISA_ALU_ADD);
    check_stream(c, &k, dve, 512);
    k = reduce(c, ISA_DT_BF16, ISA_DT_FP32, 512, ISA_ALU_ADD);
    check_stream(c, &k, dve, 512);
    k = reduce(c, ISA_DT_BF16, ISA_DT_BF16, 100, ISA_ALU_ADD);
    check_stream_v(c, &k, dve, 64, 50, 0);
}

static void test_dve_other_ops(void **state)
{
    tc_t *c = *state;
    const mdl_engine_cfg_t *dve = &c->arch.dve;

    /* tensor_scan: max(MIN_II, 2N) */
    tc_op(c, ISA_OP_TENSOR_SCAN);
    tc_view(c, "D", sb(ISA_DT_FP32, 128, 512));
    tc_view(c, "A", sb(ISA_DT_FP32, 128, 512));
    tc_view(c, "B", sb(ISA_DT_FP32, 128, 512));
    tc_int(c, "OP0", ISA_ALU_MULTIPLY);
    tc_int(c, "OP1", ISA_ALU_ADD);
    tc_float(c, "init", 0.0);
    mdl_cost_t k = tc_cost(c, ISA_ENGINE_DVE, 0);
    check_stream(c, &k, dve, 1024);

    /* select: N with the predicate or source in PSUM, 2N with both in SBUF */
    static const struct {
        isa_space_t pred, src;
        double cycles;
    } sel[] = {{ISA_SPACE_PSUM, ISA_SPACE_SBUF, 512},
               {ISA_SPACE_SBUF, ISA_SPACE_PSUM, 512},
               {ISA_SPACE_SBUF, ISA_SPACE_SBUF, 1024}};
    for (size_t i = 0; i < 3; i++) {
        tc_op(c, ISA_OP_SELECT);
        tc_view(c, "D", sb(ISA_DT_FP32, 128, 512));
        tc_view(c, "PRED", view1(sel[i].pred, ISA_DT_U8, 128, 512, 1));
        tc_view(c, "A", view1(sel[i].src, ISA_DT_FP32, 128, 512, 1));
        k = tc_cost(c, ISA_ENGINE_DVE, 0);
        check_stream(c, &k, dve, sel[i].cycles);
        assert_int_equal(k.bytes_read, 128u * 512 * 5);
    }

    /* memset: N/2 for zero into bf16/fp16, else N */
    static const struct {
        isa_dtype_t dt;
        double value;
        uint32_t n;
        double cycles;
    } ms[] = {{ISA_DT_BF16, 0.0, 512, 256}, {ISA_DT_FP16, 0.0, 512, 256},
              {ISA_DT_BF16, 1.0, 512, 512}, {ISA_DT_FP32, 0.0, 512, 512},
              {ISA_DT_BF16, 0.0, 100, 64}};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        tc_op(c, ISA_OP_MEMSET);
        tc_view(c, "D", sb(ms[i].dt, 128, ms[i].n));
        tc_float(c, "VALUE", ms[i].value);
        k = tc_cost(c, ISA_ENGINE_DVE, 0);
        check_stream_v(c, &k, dve, ms[i].cycles, ms[i].n == 100 ? 50 : ms[i].cycles, 0);
        assert_int_equal(k.bytes_read, 0);
        assert_true(k.writes_sbuf);
    }

    /* one-input ops: max(MIN_II, k N) */
    static const struct {
        isa_op_t op;
        uint32_t n;
        double cycles;
    } un[] = {
        {ISA_OP_BN_STATS, 512, 512},    {ISA_OP_BN_STATS, 30, 64},
        {ISA_OP_BN_AGGR, 192, 832},     {ISA_OP_BN_AGGR, 6, 64},
        {ISA_OP_RECIPROCAL, 512, 4096}, {ISA_OP_RECIPROCAL, 4, 64},
        {ISA_OP_RECIPROCAL, 10, 80},    {ISA_OP_TRANSPOSE, 32, 64},
        {ISA_OP_TRANSPOSE, 512, 512},   {ISA_OP_MAX8, 1024, 1024},
        {ISA_OP_MAX8, 8, 64},
    };
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
        k = unary(c, un[i].op, ISA_ENGINE_DVE, sb(ISA_DT_FP32, 128, 8),
                  sb(ISA_DT_FP32, 128, un[i].n));
        /* the work before the MIN_II floor, which sets the latency */
        double raw = un[i].op == ISA_OP_BN_AGGR      ? 13.0 * un[i].n / 3.0
                     : un[i].op == ISA_OP_RECIPROCAL ? 8.0 * un[i].n
                                                     : (double)un[i].n;
        check_stream_v(c, &k, dve, un[i].cycles, raw, 0);
    }

    tc_op(c, ISA_OP_SHUFFLE);
    tc_view(c, "D", sb(ISA_DT_FP32, 32, 700));
    tc_view(c, "SRC", sb(ISA_DT_FP32, 32, 700));
    k = tc_cost(c, ISA_ENGINE_DVE, 0);
    check_stream(c, &k, dve, 700);

    tc_op(c, ISA_OP_DROPOUT);
    tc_view(c, "D", sb(ISA_DT_FP32, 128, 300));
    tc_view(c, "SRC", sb(ISA_DT_FP32, 128, 300));
    tc_float(c, "prob", 0.1);
    k = tc_cost(c, ISA_ENGINE_DVE, 0);
    check_stream(c, &k, dve, 300);

    /* find_index8: N; match_replace8: max(MIN_II, N) (the published "min" is a typo) */
    static const isa_op_t idx8[] = {ISA_OP_FIND_INDEX8, ISA_OP_MATCH_REPLACE8};
    static const struct {
        uint32_t n;
        double cycles;
    } n8[] = {{4096, 4096}, {10, 64}};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 2; j++) {
            tc_op(c, idx8[i]);
            tc_view(c, "D", sb(ISA_DT_FP32, 128, idx8[i] == ISA_OP_FIND_INDEX8 ? 8 : n8[j].n));
            tc_view(c, "SRC", sb(ISA_DT_FP32, 128, n8[j].n));
            tc_view(c, "VALS", sb(ISA_DT_FP32, 128, 8));
            if (idx8[i] == ISA_OP_MATCH_REPLACE8)
                tc_float(c, "IMM", -1.0);
            k = tc_cost(c, ISA_ENGINE_DVE, 0);
            check_stream_v(c, &k, dve, n8[j].cycles, n8[j].n, 0);
        }
}

/* GpSimd: ~150-cycle start-up on every instruction [ISA-OLD], never PSUM. */
static void test_pool(void **state)
{
    tc_t *c = *state;
    const mdl_engine_cfg_t *pool = &c->arch.pool;

    tc_op(c, ISA_OP_IOTA);
    tc_view(c, "D", sb(ISA_DT_I32, 128, 512));
    tc_int(c, "base", 0);
    mdl_cost_t k = tc_cost(c, ISA_ENGINE_POOL, 0);
    check_stream(c, &k, pool, 150 + 512);
    ASSERT_NEAR(k.ii_ns, 662 / 1.4);
    assert_true(k.writes_sbuf);
    assert_false(k.reads_sbuf || k.reads_psum || k.writes_psum);

    tc_op(c, ISA_OP_IOTA);
    tc_view(c, "D", sb(ISA_DT_I32, 128, 1));
    tc_int(c, "base", 5);
    k = tc_cost(c, ISA_ENGINE_POOL, 0);
    check_stream(c, &k, pool, 151);

    tc_op(c, ISA_OP_AFFINE_SELECT);
    tc_view(c, "D", sb(ISA_DT_BF16, 128, 128));
    tc_view(c, "SRC", sb(ISA_DT_BF16, 128, 128));
    tc_int(c, "base", 0);
    tc_int(c, "pstep", 1);
    tc_int(c, "cmp", ISA_CMP_GE);
    tc_float(c, "fill", -1e30);
    k = tc_cost(c, ISA_ENGINE_POOL, 0);
    check_stream(c, &k, pool, 150 + 128);
    assert_true(k.reads_sbuf && k.writes_sbuf);

    k = unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_POOL, sb(ISA_DT_BF16, 128, 256),
              sb(ISA_DT_FP32, 128, 256));
    check_stream(c, &k, pool, 150 + 256);

    tc_op(c, ISA_OP_TENSOR_SCALAR);
    tc_view(c, "D", sb(ISA_DT_FP32, 128, 10));
    tc_view(c, "SRC", sb(ISA_DT_FP32, 128, 10));
    tc_int(c, "OP0", ISA_ALU_ADD);
    tc_float(c, "S0", 1.0);
    k = tc_cost(c, ISA_ENGINE_POOL, 0);
    check_stream(c, &k, pool, 160);

    /* memset on pool: no bf16-zero halving (a VectorE figure) */
    tc_op(c, ISA_OP_MEMSET);
    tc_view(c, "D", sb(ISA_DT_BF16, 128, 512));
    tc_float(c, "VALUE", 0.0);
    k = tc_cost(c, ISA_ENGINE_POOL, 0);
    check_stream(c, &k, pool, 150 + 512);

    k = binary(c, ISA_ENGINE_POOL, sb(ISA_DT_I32, 128, 512), sb(ISA_DT_I32, 128, 512),
               sb(ISA_DT_I32, 128, 512), ISA_ALU_ADD);
    check_stream(c, &k, pool, 150 + 1024);

    /* partition_reduce: GPSIMD_START + N ceil(log2 P) (assumption) */
    static const struct {
        uint16_t p;
        double cycles;
    } pr[] = {{128, 150 + 7 * 64}, {32, 150 + 5 * 64}, {2, 150 + 64}, {1, 150 + 64},
              {100, 150 + 7 * 64}};
    for (size_t i = 0; i < sizeof pr / sizeof pr[0]; i++) {
        tc_op(c, ISA_OP_PARTITION_REDUCE);
        tc_view(c, "D", sb(ISA_DT_FP32, 1, 64));
        tc_view(c, "SRC", sb(ISA_DT_FP32, pr[i].p, 64));
        tc_int(c, "OP", ISA_ALU_ADD);
        k = tc_cost(c, ISA_ENGINE_POOL, 0);
        check_stream(c, &k, pool, pr[i].cycles);
    }

    /* the start-up comes from the config */
    c->arch.costs.gpsimd_start_cycles = 300;
    k = unary(c, ISA_OP_TENSOR_COPY, ISA_ENGINE_POOL, sb(ISA_DT_BF16, 128, 256),
              sb(ISA_DT_FP32, 128, 256));
    check_stream(c, &k, pool, 300 + 256);
}

/* nop, dma trigger and collectives: sp.issue_cycles of the issuing engine's clock. */
static void test_issue_only(void **state)
{
    tc_t *c = *state;
    const double issue = c->arch.sp.issue_cycles;
    static const isa_engine_t engines[] = {ISA_ENGINE_PE, ISA_ENGINE_ACT, ISA_ENGINE_DVE,
                                           ISA_ENGINE_POOL, ISA_ENGINE_SP};
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++) {
        double clock = mdl_engine_clock_ghz(&c->arch, engines[i]);
        tc_op(c, ISA_OP_DMA);
        tc_view(c, "D", sb(ISA_DT_BF16, 128, 4096));
        tc_view(c, "SRC", view1(ISA_SPACE_HBM, ISA_DT_BF16, 1, 128 * 4096, 1));
        mdl_cost_t k = tc_cost(c, engines[i], 0);
        ASSERT_NEAR(k.cycles, issue);
        ASSERT_NEAR(k.ii_ns, issue / clock);
        ASSERT_NEAR(k.latency_ns, k.ii_ns);
        /* the transfer's bytes are the DMA model's, not the engine's ports */
        assert_int_equal(k.bytes_read + k.bytes_written, 0);
        assert_false(k.reads_sbuf || k.writes_sbuf || k.reads_psum || k.writes_psum);

        tc_op(c, ISA_OP_NOP);
        k = tc_cost(c, engines[i], 0);
        ASSERT_NEAR(k.ii_ns, issue / clock);
        ASSERT_NEAR(k.latency_ns, issue / clock);
    }
    ASSERT_NEAR(issue / 2.8, issue / mdl_engine_clock_ghz(&c->arch, ISA_ENGINE_PE));

    tc_op(c, ISA_OP_ALL_REDUCE);
    tc_view(c, "D", view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 1 << 20, 1));
    tc_view(c, "SRC", view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 1 << 20, 1));
    tc_int(c, "op", ISA_ALU_ADD);
    tc_int(c, "group", 0);
    mdl_cost_t k = tc_cost(c, ISA_ENGINE_CC, 0);
    ASSERT_NEAR(k.ii_ns, issue / c->arch.sp.clock_ghz);
    ASSERT_NEAR(k.latency_ns, k.ii_ns);
    assert_int_equal(k.flops, 0);
}

/* A default operand for every kind, to cost every opcode on every engine it is legal on. */
static void fill_default(tc_t *c, isa_op_t op, isa_engine_t e)
{
    const isa_op_info_t *info = isa_op_info(op);
    tc_op(c, op);
    for (unsigned i = 0; i < info->nslots; i++) {
        const isa_slot_desc_t *s = &info->slots[i];
        isa_arg_t *a = &c->b.prog->args[c->first + i];
        switch ((isa_kind_t)s->kind) {
        case ISA_KIND_VIEW:
            if (op >= ISA_OP_ALL_REDUCE && op <= ISA_OP_RECV)
                tc_view(c, s->name, view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 4096, 1));
            else if (e == ISA_ENGINE_PE && i == 0 && op != ISA_OP_LDWEIGHTS)
                tc_view(c, s->name, ps(ISA_DT_FP32, 128, 64));
            else
                tc_view(c, s->name, sb(ISA_DT_BF16, 128, 64));
            break;
        case ISA_KIND_SCALAR:
        case ISA_KIND_FLOAT:
            a->present = 1;
            a->v.f = 1.0;
            break;
        case ISA_KIND_INT:
        case ISA_KIND_ALU:
        case ISA_KIND_RED:
        case ISA_KIND_FUNC:
        case ISA_KIND_CMP:
        case ISA_KIND_GROUP:
            a->present = 1;
            a->v.i = 1;
            break;
        case ISA_KIND_LIST:
        case ISA_KIND_FLAG:
            break;
        }
    }
}

static void test_every_op(void **state)
{
    tc_t *c = *state;
    for (int op = 0; op < ISA_OP_COUNT; op++) {
        const isa_op_info_t *info = isa_op_info((isa_op_t)op);
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            if (!(info->engines & (1u << e)))
                continue;
            fill_default(c, (isa_op_t)op, (isa_engine_t)e);
            mdl_cost_t k = tc_cost(c, (isa_engine_t)e, 64);
            if (!(k.ii_ns > 0 && k.ii_ns < 1e9 && k.latency_ns >= k.ii_ns && k.cycles > 0))
                fail_msg("%s on %s: ii %g ns, latency %g ns", info->mnemonic,
                         isa_engine_name((isa_engine_t)e), k.ii_ns, k.latency_ns);
            ASSERT_NEAR(k.ii_ns, k.cycles / mdl_engine_clock_ghz(&c->arch, (isa_engine_t)e));
            assert_true(k.flops <= k.hw_flops);
            if (e != ISA_ENGINE_PE)
                assert_int_equal(k.hw_flops, 0);
            if (e == ISA_ENGINE_POOL)
                assert_false(k.reads_psum || k.writes_psum);
        }
    }
}

/* Every (opcode, engine) pair ops.def allows has its formula row in models/cost.def. */
static void test_every_pair_has_a_row(void **state)
{
    (void)state;
    for (int op = 0; op < ISA_OP_COUNT; op++) {
        const isa_op_info_t *info = isa_op_info((isa_op_t)op);
        for (int e = 0; e < ISA_ENGINE_COUNT; e++)
            if ((info->engines & (1u << e)) && !mdl_cost_has_formula((isa_op_t)op, (isa_engine_t)e))
                fail_msg("models/cost.def has no row for %s on %s", info->mnemonic,
                         isa_engine_name((isa_engine_t)e));
    }
    assert_false(mdl_cost_has_formula(ISA_OP_COUNT, ISA_ENGINE_PE));
    assert_false(mdl_cost_has_formula(ISA_OP_ACTIVATE, ISA_ENGINE_DVE)); /* not allowed */
}

/* The slot positions cost.c relies on (its enum) are those of isa/ops.def. */
static void test_slot_positions(void **state)
{
    (void)state;
    static const struct {
        isa_op_t op;
        unsigned slot;
        const char *name;
    } slots[] = {
        {ISA_OP_LDWEIGHTS, 0, "STAT"},
        {ISA_OP_MATMUL, 0, "D"},
        {ISA_OP_MATMUL, 1, "MOV"},
        {ISA_OP_MATMUL, 2, "acc"},
        {ISA_OP_TRANSPOSE, 1, "SRC"},
        {ISA_OP_ACTIVATE, 1, "SRC"},
        {ISA_OP_ACTIVATE, 3, "scale"},
        {ISA_OP_ACTIVATE, 4, "bias"},
        {ISA_OP_ACTIVATE, 5, "sum"},
        {ISA_OP_ACTIVATE, 6, "sumacc"},
        {ISA_OP_TENSOR_TENSOR, 1, "A"},
        {ISA_OP_TENSOR_TENSOR, 2, "B"},
        {ISA_OP_TENSOR_TENSOR, 3, "OP"},
        {ISA_OP_TENSOR_SCALAR, 1, "SRC"},
        {ISA_OP_TENSOR_SCALAR, 3, "S0"},
        {ISA_OP_TENSOR_SCALAR, 5, "S1"},
        {ISA_OP_SCALAR_TENSOR_TENSOR, 1, "A"},
        {ISA_OP_SCALAR_TENSOR_TENSOR, 2, "OP0"},
        {ISA_OP_SCALAR_TENSOR_TENSOR, 3, "S0"},
        {ISA_OP_SCALAR_TENSOR_TENSOR, 4, "OP1"},
        {ISA_OP_SCALAR_TENSOR_TENSOR, 5, "B"},
        {ISA_OP_TENSOR_REDUCE, 1, "SRC"},
        {ISA_OP_TENSOR_REDUCE, 2, "OP"},
        {ISA_OP_TENSOR_SCAN, 1, "A"},
        {ISA_OP_TENSOR_SCAN, 2, "B"},
        {ISA_OP_TENSOR_SCAN, 5, "init"},
        {ISA_OP_TENSOR_COPY, 1, "SRC"},
        {ISA_OP_MEMSET, 1, "VALUE"},
        {ISA_OP_SELECT, 1, "PRED"},
        {ISA_OP_SELECT, 2, "A"},
        {ISA_OP_RECIPROCAL, 1, "SRC"},
        {ISA_OP_BN_STATS, 1, "SRC"},
        {ISA_OP_BN_AGGR, 1, "SRC"},
        {ISA_OP_SHUFFLE, 1, "SRC"},
        {ISA_OP_MAX8, 1, "SRC"},
        {ISA_OP_FIND_INDEX8, 1, "SRC"},
        {ISA_OP_FIND_INDEX8, 2, "VALS"},
        {ISA_OP_MATCH_REPLACE8, 1, "SRC"},
        {ISA_OP_MATCH_REPLACE8, 2, "VALS"},
        {ISA_OP_DROPOUT, 1, "SRC"},
        {ISA_OP_DROPOUT, 2, "prob"},
        {ISA_OP_IOTA, 0, "D"},
        {ISA_OP_AFFINE_SELECT, 1, "SRC"},
        {ISA_OP_PARTITION_REDUCE, 1, "SRC"},
    };
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        const isa_op_info_t *info = isa_op_info(slots[i].op);
        if (slots[i].slot >= info->nslots || strcmp(info->slots[slots[i].slot].name,
                                                    slots[i].name) != 0)
            fail_msg("%s: slot %u is not %s", info->mnemonic, slots[i].slot, slots[i].name);
    }
    /* every op with a destination has it in slot 0 */
    for (int op = 0; op < ISA_OP_COUNT; op++) {
        const isa_op_info_t *info = isa_op_info((isa_op_t)op);
        for (unsigned s = 1; s < info->nslots; s++)
            if (strcmp(info->slots[s].name, "D") == 0)
                fail_msg("%s: D is slot %u", info->mnemonic, s);
    }
}

/* ---- DMA shape ------------------------------------------------------------------------------ */

static void test_dma_shape(void **state)
{
    (void)state;
    mdl_dma_shape_t s;

    /* HBM [128 x 512] fp32 contiguous -> SBUF [128, 512]: 128 pieces of 2 KiB (SBUF side) */
    isa_view_t hbm = view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 128 * 512, 1);
    isa_view_t sbuf = sb(ISA_DT_FP32, 128, 512);
    mdl_dma_shape(&sbuf, &hbm, &s);
    assert_int_equal(s.bytes, 128u * 512 * 4);
    assert_int_equal(s.pieces, 128);
    ASSERT_NEAR(s.bytes_per_piece, 2048);
    assert_int_equal(s.partitions, 128);
    assert_int_equal(s.src_space, ISA_SPACE_HBM);
    assert_int_equal(s.dst_space, ISA_SPACE_SBUF);
    /* and back */
    mdl_dma_shape(&hbm, &sbuf, &s);
    assert_int_equal(s.pieces, 128);
    assert_int_equal(s.partitions, 128);
    assert_int_equal(s.src_space, ISA_SPACE_SBUF);

    /* ISA.md 5.3 example: SBUF [128, 8, 256] bf16 <- HBM [1024, 256]: per partition the
     * 8 x 256 block is contiguous on both sides: 128 pieces of 4 KiB */
    uint32_t sc[2] = {8, 256};
    int64_t ss[2] = {256, 1};
    isa_view_t t = viewn(ISA_SPACE_SBUF, ISA_DT_BF16, 128, 2, sc, ss);
    uint32_t hc[2] = {1024, 256};
    int64_t hs[2] = {256, 1};
    isa_view_t r = viewn(ISA_SPACE_HBM, ISA_DT_BF16, 1, 2, hc, hs);
    mdl_dma_shape(&t, &r, &s);
    assert_int_equal(s.pieces, 128);
    ASSERT_NEAR(s.bytes_per_piece, 4096);

    /* HBM rows with a gap: [1024 rows of 256 of a 512-wide matrix]: 1024 pieces of 512 B,
     * worse than the SBUF side's 128 */
    int64_t gap[2] = {512, 1};
    isa_view_t rg = viewn(ISA_SPACE_HBM, ISA_DT_BF16, 1, 2, hc, gap);
    mdl_dma_shape(&t, &rg, &s);
    assert_int_equal(s.pieces, 1024);
    ASSERT_NEAR(s.bytes_per_piece, 512);
    assert_int_equal(s.bytes, 1024u * 256 * 2);

    /* transposing read: innermost stride 512 elements -> one piece per element */
    uint32_t tc2[2] = {128, 512};
    int64_t ts2[2] = {1, 128};
    isa_view_t tr = viewn(ISA_SPACE_HBM, ISA_DT_FP32, 1, 2, tc2, ts2);
    mdl_dma_shape(&sbuf, &tr, &s);
    assert_int_equal(s.pieces, 128u * 512);
    ASSERT_NEAR(s.bytes_per_piece, 4);

    /* a count-1 dim does not break a run; a negative or zero stride does */
    uint32_t c1[3] = {4, 1, 64};
    int64_t s1[3] = {64, 12345, 1};
    isa_view_t v1 = viewn(ISA_SPACE_SBUF, ISA_DT_FP32, 16, 3, c1, s1);
    isa_view_t h1 = view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 16 * 256, 1);
    mdl_dma_shape(&v1, &h1, &s);
    assert_int_equal(s.pieces, 16);
    ASSERT_NEAR(s.bytes_per_piece, 1024);
    assert_int_equal(s.partitions, 16);
    isa_view_t neg = view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 16 * 256, -1);
    mdl_dma_shape(&v1, &neg, &s);
    assert_int_equal(s.pieces, 16u * 256);
    isa_view_t bc = view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 16 * 256, 0);
    mdl_dma_shape(&v1, &bc, &s);
    assert_int_equal(s.pieces, 16u * 256);

    /* HBM <-> HBM: 1 partition; type conversion: bytes written on the destination side,
     * bytes read on the source side, and the engines move the larger side per piece */
    isa_view_t h16 = view1(ISA_SPACE_HBM, ISA_DT_BF16, 1, 1 << 20, 1);
    isa_view_t h32 = view1(ISA_SPACE_HBM, ISA_DT_FP32, 1, 1 << 20, 1);
    mdl_dma_shape(&h16, &h32, &s);
    assert_int_equal(s.bytes, 2u << 20);
    assert_int_equal(s.src_bytes, 4u << 20);
    assert_int_equal(s.pieces, 1);
    assert_int_equal(s.partitions, 1);
    ASSERT_NEAR(s.bytes_per_piece, 4u << 20);
    mdl_dma_shape(&h32, &h16, &s);
    assert_int_equal(s.bytes, 4u << 20);
    assert_int_equal(s.src_bytes, 2u << 20);
    ASSERT_NEAR(s.bytes_per_piece, 4u << 20);
    /* a casting store SBUF fp32 [128, 512] -> HBM bf16: 128 pieces (the SBUF side) of the
     * fp32 side's 2 KiB */
    isa_view_t hb = view1(ISA_SPACE_HBM, ISA_DT_BF16, 1, 128 * 512, 1);
    mdl_dma_shape(&hb, &sbuf, &s);
    assert_int_equal(s.bytes, 128u * 512 * 2);
    assert_int_equal(s.src_bytes, 128u * 512 * 4);
    assert_int_equal(s.pieces, 128);
    ASSERT_NEAR(s.bytes_per_piece, 2048);
    /* no conversion: both sides the same bytes */
    mdl_dma_shape(&sbuf, &hbm, &s);
    assert_int_equal(s.src_bytes, s.bytes);

    /* SBUF -> SBUF: the larger partition count; one partition of 64 KiB is one piece */
    isa_view_t s64 = sb(ISA_DT_FP32, 64, 100);
    isa_view_t s32 = view1(ISA_SPACE_SBUF, ISA_DT_FP32, 32, 200, 1);
    mdl_dma_shape(&s32, &s64, &s);
    assert_int_equal(s.partitions, 64);
    assert_int_equal(s.pieces, 64);
    ASSERT_NEAR(s.bytes_per_piece, 400);
}

/* The efficiency curve: overhead-bound below 256 B, near peak at 2 KiB, tending to 1. */
static void test_dma_efficiency(void **state)
{
    tc_t *c = *state;
    const mdl_arch_t *a = &c->arch;
    double prev = 0.0;
    for (double b = 1; b <= 64.0 * 1024 * 1024; b *= 1.25) {
        double e = mdl_dma_efficiency(a, b);
        assert_true(e > 0.0 && e <= 1.0);
        if (!(e > prev))
            fail_msg("not increasing at %g B: %g after %g", b, e, prev);
        prev = e;
    }
    assert_true(mdl_dma_efficiency(a, 64) < 0.35); /* 64 / (64 + 7 ns x 18.7 B/ns) = 0.33 */
    assert_true(mdl_dma_efficiency(a, 4) < 0.05);
    double e256 = mdl_dma_efficiency(a, 256);
    assert_true(e256 > 0.3 && e256 < 0.85); /* "improving" between 256 B and 2 KiB */
    assert_true(mdl_dma_efficiency(a, 2048) > 0.85);
    assert_true(mdl_dma_efficiency(a, 4096) > 0.9);
    /* saturating: doubling 4 KiB gains < 5 points */
    assert_true(mdl_dma_efficiency(a, 8192) - mdl_dma_efficiency(a, 4096) < 0.05);
    assert_true(mdl_dma_efficiency(a, 1 << 20) > 0.999);
    /* the formula: b / (b + piece_overhead_ns x engine bandwidth) */
    double e = a->dma.piece_overhead_ns * a->dma.engine_bandwidth_gbps;
    ASSERT_NEAR(mdl_dma_efficiency(a, 1000), 1000 / (1000 + e));
    /* degenerate inputs stay in (0, 1] */
    double z = mdl_dma_efficiency(a, 0);
    assert_true(z > 0 && z <= 1);
    assert_true(mdl_dma_efficiency(a, -5) > 0);
    c->arch.dma.piece_overhead_ns = 0;
    ASSERT_NEAR(mdl_dma_efficiency(&c->arch, 64), 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_bf16_peak, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_small_n, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_acc_and_stride, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ldweights, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pe_transpose, setup, teardown),
        cmocka_unit_test_setup_teardown(test_act_activate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fitted_factors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dve_tensor_tensor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stride_penalty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dve_scalar_tensor_tensor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dve_reduce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dve_other_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_issue_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_op, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slot_positions, setup, teardown),
        cmocka_unit_test(test_every_pair_has_a_row),
        cmocka_unit_test_setup_teardown(test_dma_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dma_efficiency, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
