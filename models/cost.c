/*
 * cost.c -- initiation interval and latency of one instruction (models/cost.h), and the shape
 * and efficiency of a DMA transfer, from the published NeuronCore-v2 cost formulas.
 *
 * The formulas are the rows of models/cost.def, one per (opcode, engine), each with its source
 * tag (docs/cost-model.md lists the tags) and the cells of its row in docs/cost-model.md, which
 * scripts/cost_tables.py writes from the same rows. This file holds what the rows share: the
 * operand accounting, the stride factor, the MIN_II floor and GpSimd start-up, the latency
 * rules, the breakdowns, and the three tensor-engine formulas the COST_PE rows name. Every
 * constant comes from mdl_arch_t; the only literals here and in the rows are structural (2
 * FLOPs per MAC, "half of N", "two passes", a triple of bn_stats values, log2 of a partition
 * count).
 *
 * Model decisions shared by every compute engine (justified in docs/cost-model.md):
 *  - II (throughput) is the published cost formula. Latency = II + the ~60-cycle static
 *    access overhead (ARCH) + the engine's pipeline latency (assumption). The static overhead
 *    is thus hidden between independent back-to-back instructions and paid in full by a
 *    dependent one (the engine interlock and semaphores wait for completion), which is what
 *    "partly hidden by instruction-level parallelism" (ARCH) describes.
 *  - The ARCH "~100 cycles for N << 128 or dependent instructions" rule of thumb is not a
 *    separate term: it is the MIN_II floor (independent) or MIN_II + static overhead
 *    (+ latency) for a dependent chain.
 *  - Stride penalty (ARCH): an operand whose innermost stride exceeds stride_penalty_bytes
 *    streams at 1/stride_penalty_factor bandwidth; the N-proportional term of the formula is
 *    multiplied by the worst operand's factor.
 *
 * Hot path (mdl_cost_instr): no allocation, no strings, no libm; one table look-up per
 * instruction; the breakdown (mdl_cost_explain) records its terms only when asked. A new row in
 * ops.def needs a row in cost.def: tests/unit/test_cost.c checks that every (opcode, engine)
 * pair ops.def allows has one.
 */
#include "cost.h"

#include <stdio.h>
#include <string.h>

/* ---- operand slot numbers: positions in the signatures of isa/ops.def ---------------------- */
/* (tests/unit/test_cost.c checks these against the slot names of isa_op_info) */

enum {
    SLOT_D = 0,            /* destination of every op that has one */
    SLOT_SRC = 1,          /* SRC / MOV / A / PRED: the first source */
    LDW_STAT = 0,          /* ldweights STAT */
    MM_ACC = 2,            /* matmul !acc */
    ACT_SCALE = 3,         /* activate scale=s? */
    ACT_BIAS = 4,          /* activate bias=v? */
    ACT_SUM = 5,           /* activate sum=v? */
    ACT_SUMACC = 6,        /* activate sumacc=v? */
    TT_B = 2,              /* tensor_tensor B */
    TT_OP = 3,             /* tensor_tensor OP */
    TS_S0 = 3,             /* tensor_scalar S0 */
    TS_S1 = 5,             /* tensor_scalar S1 */
    STT_OP0 = 2,           /* scalar_tensor_tensor OP0 */
    STT_S0 = 3,            /* scalar_tensor_tensor S0 */
    STT_OP1 = 4,           /* scalar_tensor_tensor OP1 */
    STT_B = 5,             /* scalar_tensor_tensor B */
    RED_OP = 2,            /* tensor_reduce OP */
    SCAN_B = 2,            /* tensor_scan B */
    SCAN_INIT = 5,         /* tensor_scan init=s */
    MEMSET_VALUE = 1,      /* memset VALUE */
    SEL_A = 2,             /* select A */
    VALS = 2,              /* find_index8 / match_replace8 VALS */
    DROPOUT_PROB = 2       /* dropout prob=s */
};

/* ---- small helpers ----------------------------------------------------------------------- */

static double max_d(double x, double y)
{
    return x > y ? x : y;
}

static double min_d(double x, double y)
{
    return x < y ? x : y;
}

double mdl_engine_clock_ghz(const mdl_arch_t *a, isa_engine_t e)
{
    switch (e) {
    case ISA_ENGINE_PE:
        return a->pe.clock_ghz;
    case ISA_ENGINE_ACT:
        return a->act.clock_ghz;
    case ISA_ENGINE_DVE:
        return a->dve.clock_ghz;
    case ISA_ENGINE_POOL:
        return a->pool.clock_ghz;
    case ISA_ENGINE_SP:
    case ISA_ENGINE_CC: /* the collective engine's issue runs on a sequencer like sp's */
    case ISA_ENGINE_COUNT:
        break;
    }
    return a->sp.clock_ghz;
}

/* Per-engine constants of act/dve/pool; NULL for pe/sp/cc. */
static const mdl_engine_cfg_t *compute_cfg(const mdl_arch_t *a, isa_engine_t e)
{
    switch (e) {
    case ISA_ENGINE_ACT:
        return &a->act;
    case ISA_ENGINE_DVE:
        return &a->dve;
    case ISA_ENGINE_POOL:
        return &a->pool;
    case ISA_ENGINE_PE:
    case ISA_ENGINE_SP:
    case ISA_ENGINE_CC:
    case ISA_ENGINE_COUNT:
        break;
    }
    return NULL;
}

static uint64_t free_elems(const isa_view_t *v)
{
    return v ? isa_view_free_elems(v) : 0;
}

static int is_dtype(const isa_view_t *v, isa_dtype_t t)
{
    return v && v->dtype == (uint8_t)t;
}

static int in_space(const isa_view_t *v, isa_space_t s)
{
    return v && v->space == (uint8_t)s;
}

/* Innermost dim that actually moves (count > 1), or -1 when the view is one element. */
static int innermost_dim(const isa_view_t *v)
{
    for (int i = (int)v->ndims - 1; i >= 0; i--)
        if (v->count[i] > 1)
            return i;
    return -1;
}

/* Unit stride: consecutive elements of the innermost moving dim are adjacent in memory. */
static int unit_stride(const isa_view_t *v)
{
    int i = innermost_dim(v);
    return i < 0 || v->stride[i] == 1;
}

/*
 * Bandwidth factor of one streaming operand [ARCH section 3]: SBUF/PSUM deliver full bandwidth
 * while the most-minor stride is within stride_penalty_bytes (16 B = 4 fp32 / 8 bf16 / 16 fp8
 * elements); a larger stride "halves bandwidth", i.e. stride_penalty_factor (2) x the time.
 * A broadcast (stride 0) re-reads one element and pays nothing.
 */
static double stride_factor(const mdl_arch_t *a, const isa_view_t *v)
{
    int i = innermost_dim(v);
    if (i < 0)
        return 1.0;
    int64_t s = v->stride[i] < 0 ? -v->stride[i] : v->stride[i];
    double bytes = (double)s * (double)isa_dtype_size((isa_dtype_t)v->dtype);
    return bytes > a->costs.stride_penalty_bytes ? a->costs.stride_penalty_factor : 1.0;
}

/* View of a VIEW slot, NULL when the optional slot is absent. */
static const isa_view_t *slot_view(const isa_program_t *p, const isa_arg_t *args, unsigned i)
{
    return args[i].present ? &p->views[args[i].index] : NULL;
}

/* View of a SCALAR slot when it is a [P,1] vector, NULL for an immediate or an absent slot. */
static const isa_view_t *scalar_view(const isa_program_t *p, const isa_arg_t *args, unsigned i)
{
    return args[i].present && args[i].is_view ? &p->views[args[i].index] : NULL;
}

static int64_t slot_int(const isa_arg_t *args, unsigned i)
{
    return args[i].present ? args[i].v.i : 0;
}

/*
 * Operand accounting for one instruction: bytes and ports of every SBUF/PSUM operand (the
 * simulator uses the flags for the NC-v2 port conflicts: dve/pool share the SBUF port, dve/act
 * the PSUM port [ARCH]) and the worst stride factor of the operands that stream (more than
 * one element per partition; [P,1] scalars are read once and do not stream).
 */
typedef struct operand_acc {
    mdl_cost_t *out;
    double stride;
    unsigned vectors; /* [P,1] per-partition scalar operands (scale, bias, S0, S1...) */
} operand_acc_t;

static void touch(const mdl_arch_t *a, operand_acc_t *acc, const isa_view_t *v, int write)
{
    if (!v || v->space == (uint8_t)ISA_SPACE_HBM)
        return;
    uint64_t n = free_elems(v);
    uint64_t bytes = n * v->pcount * isa_dtype_size((isa_dtype_t)v->dtype);
    int psum = v->space == (uint8_t)ISA_SPACE_PSUM;
    if (write) {
        acc->out->bytes_written += bytes;
        if (psum) {
            acc->out->writes_psum = 1;
            acc->out->psum_write_bytes += bytes;
        } else {
            acc->out->writes_sbuf = 1;
            acc->out->sbuf_write_bytes += bytes;
        }
    } else {
        acc->out->bytes_read += bytes;
        if (psum) {
            acc->out->reads_psum = 1;
            acc->out->psum_read_bytes += bytes;
        } else {
            acc->out->reads_sbuf = 1;
            acc->out->sbuf_read_bytes += bytes;
        }
    }
    if (n > 1)
        acc->stride = max_d(acc->stride, stride_factor(a, v));
}

/* A [P,1] per-partition scalar operand: accounted like any operand, and counted, because
 * each is a separate small SBUF access that pays the static access overhead before the
 * instruction streams (fig16's activation with scale and bias pointers, measurements.md 6). */
static void touch_vector(const mdl_arch_t *a, operand_acc_t *acc, const isa_view_t *v)
{
    touch(a, acc, v, 0);
    if (v && v->space != (uint8_t)ISA_SPACE_HBM)
        acc->vectors++;
}

/*
 * Tensor-engine rate factor for an input dtype [ARCH, EXPL schema]: fp32 inputs cost
 * fp32_factor (4x, four bf16 passes); fp8 runs at fp8_factor (1.0 on NC-v2: fp8 at the bf16
 * rate, no double-rate mode [TRN2ARCH]); bf16/fp16/tf32 are the 92 TFLOPS base rate [ARCH].
 * Integer types are not TensorE inputs in NCA (ISA.md 7.1); they get the base rate.
 */
static double pe_dtype_factor(const mdl_arch_t *a, const isa_view_t *v)
{
    if (!v)
        return 1.0;
    switch ((isa_dtype_t)v->dtype) {
    case ISA_DT_FP32:
        return a->pe.fp32_factor;
    case ISA_DT_FP8E4:
    case ISA_DT_FP8E5:
    case ISA_DT_FP8E3:
        return a->pe.fp8_factor;
    default:
        return 1.0;
    }
}

/*
 * Cycles of a streaming act/dve/pool instruction whose data-dependent term is `elems`
 * (k x N x stride factor, already scaled by the caller).
 *  - act, dve: max(MIN_II, elems) [ISA-OLD]; MIN_II is the engine's smallest II, so formulas
 *    published without the floor (scalar_tensor_tensor, tensor_reduce, max8, find_index8) get
 *    it too.
 *  - pool: GPSIMD_START + elems [ISA-OLD iota, affine_select, local_gather]: GpSimd runs each
 *    instruction as software on its 8 processors with a ~150-cycle start-up, which every
 *    published GpSimd cost includes; we charge it on every pool instruction (assumption for
 *    the ops whose GpSimd cost is not published). It exceeds MIN_II, so no floor is needed.
 */
static double stream_cycles(const mdl_arch_t *a, isa_engine_t e, double elems, double *raw)
{
    if (e == ISA_ENGINE_POOL)
        elems += a->costs.gpsimd_start_cycles;
    *raw = elems; /* the streaming work without the MIN_II floor, for the latency */
    const mdl_engine_cfg_t *cfg = compute_cfg(a, e);
    return cfg && e != ISA_ENGINE_POOL ? max_d(cfg->min_ii_cycles, elems) : elems;
}

/* ceil(log2(n)), at least 1: tree levels of a reduction over n partitions. */
static unsigned reduction_levels(uint32_t n)
{
    unsigned levels = 0;
    while ((1u << levels) < n && levels < 31)
        levels++;
    return levels ? levels : 1;
}

/* ---- breakdowns (mdl_cost_explain): recorded only when asked, T == NULL costs a test ---- */

static void term(mdl_cost_terms_t *T, const char *name, double v, const char *note)
{
    if (!T || T->n == MDL_COST_MAX_TERMS)
        return;
    T->t[T->n].name = name;
    T->t[T->n].value = v;
    T->t[T->n].note = note;
    T->n++;
}

static const char *stride_note(double s)
{
    return s > 1.0 ? "an operand's innermost stride exceeds costs.stride_penalty_bytes" : NULL;
}

static const char *pe_dtype_note(const isa_view_t *v)
{
    if (!v)
        return NULL;
    switch ((isa_dtype_t)v->dtype) {
    case ISA_DT_FP32:
        return "fp32: pe.fp32_factor";
    case ISA_DT_FP8E4:
    case ISA_DT_FP8E5:
    case ISA_DT_FP8E3:
        return "fp8: pe.fp8_factor";
    default:
        return NULL;
    }
}

/*
 * The terms of stream_cycles(a, e, k x n x s): pool "GPSIMD_START + k N s", act/dve
 * "max(MIN_II, k N s)"; k is left out of the formula when it is 1 with no reason.
 */
static void explain_stream(mdl_cost_terms_t *T, const mdl_arch_t *a, isa_engine_t e, double k,
                           const char *knote, double n, double s)
{
    if (!T)
        return;
    int with_k = k != 1.0 || knote;
    if (e == ISA_ENGINE_POOL) {
        T->ii = with_k ? "II = {GPSIMD_START} + {k} x {N} x {s}" : "II = {GPSIMD_START} + {N} x {s}";
        term(T, "GPSIMD_START", a->costs.gpsimd_start_cycles, NULL);
    } else {
        const mdl_engine_cfg_t *cfg = compute_cfg(a, e);
        T->ii = with_k ? "II = max({MIN_II}, {k} x {N} x {s})" : "II = max({MIN_II}, {N} x {s})";
        term(T, "MIN_II", cfg ? cfg->min_ii_cycles : 0.0, NULL);
    }
    if (with_k)
        term(T, "k", k, knote);
    term(T, "N", n, NULL);
    term(T, "s", s, stride_note(s));
}

/*
 * Passes of the PE array a K x M stationary tile needs: ceil(K / pe.rows) x ceil(M / pe.cols).
 * The ISA's tiles (K, M <= 128) fit the 128 x 128 array of NC-v2 in one pass; an architect's
 * smaller array (pe.rows/pe.cols) works through the tile in several, each streaming the moving
 * data again, so a 64 x 64 array takes 4 passes and has a quarter of the peak (assumption: no
 * other overhead between passes).
 */
static double array_passes(const mdl_arch_t *a, uint64_t k, uint64_t m)
{
    uint64_t r = a->pe.rows ? a->pe.rows : 1, c = a->pe.cols ? a->pe.cols : 1;
    uint64_t pr = k ? (k + r - 1) / r : 1, pc = m ? (m + c - 1) / c : 1;
    return (double)(pr * pc);
}

/* ---- the quantities the formulas of cost.def read ---------------------------------------- */

typedef struct cost_q {
    const isa_arg_t *args;              /* the instruction's slots (NULL: no operands) */
    const isa_view_t *v[ISA_MAX_SLOTS]; /* views of the slots of the op's COST_OPERANDS row */
    const isa_view_t *nv;               /* the N operand (the row's N_SLOT), NULL if absent */
    uint64_t nu;                        /* its free elements per partition */
    double n;                           /* N */
    uint32_t stationary_cols;           /* pe: M of the loaded weights, 0 if unknown */
    operand_acc_t acc;                  /* bytes, ports, the stride factor S, vectors */
} cost_q_t;

/* Predicates of the formula rows; each reads only slots of its op's COST_OPERANDS row. */

/* tensor_tensor: one input in PSUM and the other in SBUF. */
static int tt_mixed(const cost_q_t *q)
{
    const isa_view_t *x = q->v[SLOT_SRC], *y = q->v[TT_B];
    return (in_space(x, ISA_SPACE_PSUM) && in_space(y, ISA_SPACE_SBUF)) ||
           (in_space(x, ISA_SPACE_SBUF) && in_space(y, ISA_SPACE_PSUM));
}

/* tensor_tensor: A, B in SBUF; A, B, D bf16; add/multiply/subtract; unit innermost strides. */
static int tt_fast_bf16(const cost_q_t *q)
{
    const isa_view_t *x = q->v[SLOT_SRC], *y = q->v[TT_B], *d = q->v[SLOT_D];
    int64_t alu = slot_int(q->args, TT_OP);
    return in_space(x, ISA_SPACE_SBUF) && in_space(y, ISA_SPACE_SBUF) &&
           is_dtype(x, ISA_DT_BF16) && is_dtype(y, ISA_DT_BF16) && is_dtype(d, ISA_DT_BF16) &&
           (alu == ISA_ALU_ADD || alu == ISA_ALU_MULTIPLY || alu == ISA_ALU_SUBTRACT) &&
           unit_stride(x) && unit_stride(y) && unit_stride(d);
}

/* scalar_tensor_tensor: A and B bf16, subtract then multiply, N even. */
static int stt_fast(const cost_q_t *q)
{
    return is_dtype(q->v[SLOT_SRC], ISA_DT_BF16) && is_dtype(q->v[STT_B], ISA_DT_BF16) &&
           slot_int(q->args, STT_OP0) == ISA_ALU_SUBTRACT &&
           slot_int(q->args, STT_OP1) == ISA_ALU_MULTIPLY && q->nu % 2u == 0;
}

/* tensor_reduce: SRC and D bf16, add or max. */
static int reduce_fast(const cost_q_t *q)
{
    int64_t alu = slot_int(q->args, RED_OP);
    return is_dtype(q->v[SLOT_SRC], ISA_DT_BF16) && is_dtype(q->v[SLOT_D], ISA_DT_BF16) &&
           (alu == ISA_ALU_ADD || alu == ISA_ALU_MAX);
}

/* select: the predicate or the source in PSUM. */
static int select_psum(const cost_q_t *q)
{
    return in_space(q->v[SLOT_SRC], ISA_SPACE_PSUM) || in_space(q->v[SEL_A], ISA_SPACE_PSUM);
}

/* memset: the value 0 into a bf16/fp16 D. */
static int memset_zero_16(const cost_q_t *q)
{
    double value = q->args[MEMSET_VALUE].present ? q->args[MEMSET_VALUE].v.f : 0.0;
    return value == 0.0 &&
           (is_dtype(q->v[SLOT_D], ISA_DT_BF16) || is_dtype(q->v[SLOT_D], ISA_DT_FP16));
}

/* activate: with sum= or sumacc= (activation_reduce). */
static int act_sum(const cost_q_t *q)
{
    return q->v[ACT_SUM] || q->v[ACT_SUMACC];
}

/* ---- tensor-engine formulas (the functions of the COST_PE rows) -------------------------- */

/*
 * LoadStationary is "up to 4x faster than an MM with the same free size" [ARCH, PERF], and an
 * MM of free size M costs max(MM_INIT_LATENCY, M) [ARCH]:
 *   II = max(MM_INIT_LATENCY, M x stride) / ldweights_speedup x dtype factor x passes.
 * M = 128 gives 128/4 = 32 cycles (the PERF example); the floor is 64/4 = 16 cycles. The fp32
 * factor applies as for the MM (assumption: fp32 weights take 4 passes).
 */
static double pe_ldweights(const mdl_arch_t *a, cost_q_t *q, mdl_cost_t *out,
                           mdl_cost_terms_t *T)
{
    (void)out;
    const isa_view_t *stat = q->nv;
    double s = q->acc.stride, f = pe_dtype_factor(a, stat);
    double passes = array_passes(a, stat ? stat->pcount : 0, q->nu);
    if (T) {
        T->ii = "II = max({MM_INIT}, {M} x {s}) / {speedup} x {f} x {passes}";
        term(T, "MM_INIT", a->pe.mm_init_latency_cycles, NULL);
        term(T, "M", q->n, "STAT free size");
        term(T, "s", s, stride_note(s));
        term(T, "speedup", a->pe.ldweights_speedup, "pe.ldweights_speedup");
        term(T, "f", f, pe_dtype_note(stat));
        term(T, "passes", passes, "PE array passes");
    }
    return max_d(a->pe.mm_init_latency_cycles, q->n * s) / a->pe.ldweights_speedup * f * passes;
}

/*
 * MultiplyMoving [ISA-OLD nc_matmul, ARCH]:
 *   II = max(min(MM_INIT_LATENCY, M_stationary), N x stride) x dtype factor x passes
 * N = MOV's free size (moving columns), M_stationary = columns of the loaded weights (the
 * caller's stationary_cols; D's partition count, which equals M, when 0). The dtype is MOV's
 * (the stationary's is checked equal by the functional model). FLOPs = 2 K M N (2 per MAC
 * [EXPL schema]), useful and hardware alike. PSUM accumulation (!acc) is a near-memory
 * read-modify-write [ARCH]: D is also counted as a PSUM read.
 */
static double pe_matmul(const mdl_arch_t *a, cost_q_t *q, mdl_cost_t *out, mdl_cost_terms_t *T)
{
    const isa_view_t *mov = q->nv, *d = q->v[SLOT_D];
    if (slot_int(q->args, MM_ACC))
        touch(a, &q->acc, d, 0);
    uint64_t m = d ? d->pcount : 0;
    uint64_t k = mov ? mov->pcount : 0;
    double m_stat = q->stationary_cols ? (double)q->stationary_cols : (double)m;
    double s = q->acc.stride, f = pe_dtype_factor(a, mov);
    double passes = array_passes(a, k, (uint64_t)m_stat);
    out->flops = 2u * k * m * q->nu;
    out->hw_flops = out->flops;
    if (mov && mov->dtype == (uint8_t)ISA_DT_FP32)
        out->hw_flops_fp32 = out->hw_flops;
    if (T) {
        T->ii = "II = max(min({MM_INIT}, {M}), {N} x {s}) x {f} x {passes}";
        term(T, "MM_INIT", a->pe.mm_init_latency_cycles, NULL);
        term(T, "M", m_stat,
             q->stationary_cols ? "columns of the loaded weights" : "D's partitions");
        term(T, "N", q->n, "MOV free size");
        term(T, "s", s, stride_note(s));
        term(T, "f", f, pe_dtype_note(mov));
        term(T, "passes", passes, "PE array passes");
    }
    return max_d(min_d(a->pe.mm_init_latency_cycles, m_stat), q->n * s) * f * passes;
}

/*
 * nc_transpose on TensorE [ISA-OLD]: II = max(P, min(64, F)) x dtype factor x passes, which is
 * the matmul rule for SRC[P,F] as stationary (M = F) against a P x P identity as moving
 * (N = P). The stride factor of SRC/D scales the whole II (assumption: the engine reads SRC at
 * half rate throughout). FLOPs: the identity matmul does 2 P P F hardware FLOPs (HFU) and no
 * useful ones (MFU) [EXPL].
 */
static double pe_transpose(const mdl_arch_t *a, cost_q_t *q, mdl_cost_t *out,
                           mdl_cost_terms_t *T)
{
    const isa_view_t *src = q->nv;
    uint64_t pu = src ? src->pcount : 0;
    double pp = (double)pu, s = q->acc.stride, f = pe_dtype_factor(a, src);
    double passes = array_passes(a, pu, q->nu);
    out->hw_flops = 2u * pu * pu * q->nu;
    if (src && src->dtype == (uint8_t)ISA_DT_FP32)
        out->hw_flops_fp32 = out->hw_flops;
    if (T) {
        T->ii = "II = max({P}, min({MM_INIT}, {F})) x {s} x {f} x {passes}";
        term(T, "P", pp, "SRC partitions");
        term(T, "MM_INIT", a->pe.mm_init_latency_cycles, NULL);
        term(T, "F", q->n, "SRC free size");
        term(T, "s", s, stride_note(s));
        term(T, "f", f, pe_dtype_note(src));
        term(T, "passes", passes, "PE array passes");
    }
    return max_d(pp, min_d(a->pe.mm_init_latency_cycles, q->n)) * s * f * passes;
}

/* ---- the tables of cost.def -------------------------------------------------------------- */

#define SL(slot) (1u << (slot))

/* Operand accounting per opcode: slot masks. */
typedef struct cost_operands {
    uint8_t reads, writes, vectors;
} cost_operands_t;

static const cost_operands_t OPERANDS[ISA_OP_COUNT] = {
#define COST_OPERANDS(OP, R, W, V) [ISA_OP_##OP] = {(R), (W), (V)},
#define COST_PE(...)
#define COST_STREAM(...)
#define COST_ISSUE(...)
#include "cost.def"
#undef COST_OPERANDS
#undef COST_PE
#undef COST_STREAM
#undef COST_ISSUE
};

/*
 * A COST_STREAM row's formula: sets *k, and *knote, *plus_note when the breakdown is asked
 * for (explain != 0); returns WORK; *plus is PLUS. The row's expressions see N, S, P, k, q and
 * a as in cost.def's header.
 */
typedef double (*stream_fn_t)(const mdl_arch_t *a, const cost_q_t *q, int explain, double *k,
                              const char **knote, double *plus, const char **plus_note);
typedef double (*pe_fn_t)(const mdl_arch_t *a, cost_q_t *q, mdl_cost_t *out,
                          mdl_cost_terms_t *T);

#define N (q->n)
#define S (q->acc.stride)
#define P ((uint32_t)(q->nv ? q->nv->pcount : 1u))
#define COST_OPERANDS(...)
#define COST_PE(...)
#define COST_ISSUE(...)
#define COST_STREAM(OP, ENG, NSLOT, K, KNOTE, WORK, PLUS, PLUS_NOTE, ...)                          \
    static double stream_##OP##_##ENG(const mdl_arch_t *a, const cost_q_t *q, int explain,       \
                                      double *kout, const char **knote, double *plus,             \
                                      const char **plus_note)                                     \
    {                                                                                             \
        (void)a;                                                                                  \
        (void)q;                                                                                  \
        const double k = (K);                                                                     \
        *kout = k;                                                                                \
        *plus = (PLUS);                                                                           \
        if (explain) {                                                                            \
            *knote = (KNOTE);                                                                     \
            *plus_note = (PLUS_NOTE);                                                             \
        }                                                                                         \
        return (WORK);                                                                            \
    }
#include "cost.def"
#undef COST_OPERANDS
#undef COST_PE
#undef COST_STREAM
#undef COST_ISSUE
#undef N
#undef S
#undef P

/* Families of rows, which set II and latency differently. */
typedef enum cost_kind {
    KIND_ISSUE,  /* sequencer-only: nop, dma trigger, collectives (also: no row) */
    KIND_PE,     /* tensor engine */
    KIND_STREAM  /* act, dve, pool */
} cost_kind_t;

typedef struct cost_row {
    uint8_t kind;         /* cost_kind_t */
    uint8_t nslot;        /* the N operand's slot */
    pe_fn_t pe;           /* KIND_PE */
    stream_fn_t stream;   /* KIND_STREAM */
    const char *note;     /* KIND_ISSUE: the breakdown's note on "issue" */
} cost_row_t;

#define ISSUE_ROW(NOTE) {KIND_ISSUE, 0, NULL, NULL, (NOTE)}
/* One row per (opcode, engine); an empty row (has_row 0) where ops.def does not allow the pair. */
static const cost_row_t ROWS[ISA_OP_COUNT][ISA_ENGINE_COUNT] = {
#define COST_OPERANDS(...)
#define COST_PE(OP, FN, NSLOT, ...) [ISA_OP_##OP][ISA_ENGINE_PE] = {KIND_PE, (NSLOT), FN, NULL, NULL},
#define COST_STREAM(OP, ENG, NSLOT, ...)                                                          \
    [ISA_OP_##OP][ISA_ENGINE_##ENG] = {KIND_STREAM, (NSLOT), NULL, stream_##OP##_##ENG, NULL},
#define COST_ISSUE(OP, NOTE, ...)                                                                 \
    [ISA_OP_##OP] = {ISSUE_ROW(NOTE), ISSUE_ROW(NOTE), ISSUE_ROW(NOTE),                           \
                     ISSUE_ROW(NOTE), ISSUE_ROW(NOTE), ISSUE_ROW(NOTE)},
#include "cost.def"
#undef COST_OPERANDS
#undef COST_PE
#undef COST_STREAM
#undef COST_ISSUE
};
_Static_assert(ISA_ENGINE_COUNT == 6, "COST_ISSUE rows name one entry per engine");

/* An instruction without a row (an opcode out of range): issue cost only. */
static const cost_row_t NO_ROW = ISSUE_ROW("sp.issue_cycles");

static int has_row(const cost_row_t *r)
{
    return r->pe || r->stream || r->note;
}

int mdl_cost_has_formula(isa_op_t op, isa_engine_t e)
{
    return op < ISA_OP_COUNT && e < ISA_ENGINE_COUNT && has_row(&ROWS[op][e]);
}

/* The formula with " + {reduce}"-style PLUS of a stream row: [pool][with k]. */
static const char *const STREAM_PLUS_II[2][2] = {
    {"II = max({MIN_II}, {N} x {s}) + {reduce}", "II = max({MIN_II}, {k} x {N} x {s}) + {reduce}"},
    {"II = {GPSIMD_START} + {N} x {s} + {reduce}",
     "II = {GPSIMD_START} + {k} x {N} x {s} + {reduce}"}};

static void cost_instr(const mdl_arch_t *a, const isa_program_t *p, const isa_instr_t *in,
                       uint32_t stationary_cols, mdl_cost_t *out, mdl_cost_terms_t *T)
{
    memset(out, 0, sizeof *out);
    isa_engine_t eng = (isa_engine_t)in->engine;
    isa_op_t op = in->op < ISA_OP_COUNT ? (isa_op_t)in->op : ISA_OP_COUNT;
    const cost_row_t *row = op < ISA_OP_COUNT && eng < ISA_ENGINE_COUNT ? &ROWS[op][eng] : &NO_ROW;
    if (!has_row(row))
        row = &NO_ROW; /* a pair ops.def does not allow */

    cost_q_t q = {.args = p->args ? isa_instr_args(p, in) : NULL, /* NULL: no operands */
                  .stationary_cols = stationary_cols,
                  .acc = {out, 1.0, 0}};
    cost_kind_t kind = (cost_kind_t)row->kind;
    if (kind != KIND_ISSUE && q.args) {
        /* the operands: bytes and ports of each, the worst stride, the [P,1] vectors */
        const cost_operands_t *o = &OPERANDS[op];
        unsigned views = o->reads | o->writes;
        for (unsigned i = 0; i < ISA_MAX_SLOTS; i++) {
            if ((views >> i) & 1u)
                q.v[i] = slot_view(p, q.args, i);
            else if ((o->vectors >> i) & 1u)
                q.v[i] = scalar_view(p, q.args, i);
            if ((o->reads >> i) & 1u)
                touch(a, &q.acc, q.v[i], 0);
            if ((o->writes >> i) & 1u)
                touch(a, &q.acc, q.v[i], 1);
            if ((o->vectors >> i) & 1u)
                touch_vector(a, &q.acc, q.v[i]);
        }
        q.nv = q.v[row->nslot];
        q.nu = free_elems(q.nv);
        q.n = (double)q.nu;
    }

    double cycles = 0.0;
    double raw = 0.0; /* act/dve/pool: the streaming work before the MIN_II floor */
    switch (kind) {
    case KIND_PE:
        cycles = row->pe(a, &q, out, T);
        break;
    case KIND_STREAM: {
        double k = 1.0, plus = 0.0;
        const char *knote = NULL, *plus_note = NULL;
        double work = row->stream(a, &q, T != NULL, &k, &knote, &plus, &plus_note);
        explain_stream(T, a, eng, k, knote, q.n, q.acc.stride);
        cycles = stream_cycles(a, eng, work, &raw);
        cycles += plus;
        raw += plus;
        if (T && plus_note) {
            T->ii = STREAM_PLUS_II[eng == ISA_ENGINE_POOL][k != 1.0 || knote];
            term(T, "reduce", plus, plus_note);
        }
        break;
    }
    case KIND_ISSUE:
        /* Sequencer instruction: sp.issue_cycles of the issuing engine's clock (the Sync
         * engine's cost is not published: assumption in the preset). A dma occupies its
         * issuing engine only for the trigger; the transfer is timed by the DMA model
         * (mdl_dma_shape / mdl_dma_efficiency) on its queue; collectives by cc. */
        cycles = a->sp.issue_cycles;
        if (T) {
            T->ii = "II = {issue}";
            term(T, "issue", a->sp.issue_cycles, row->note);
        }
        break;
    }
    double clock = mdl_engine_clock_ghz(a, eng);
    double lat_cycles = cycles;
    if (kind == KIND_PE) {
        /* Optional throttle (pe.throttle_factor, 1 = off): the chip slows the array down,
         * e.g. under a power limit; every pe II stretches by the factor. */
        cycles *= a->pe.throttle_factor;
        lat_cycles = cycles;
        /* PE latency: II + pe.latency_cycles, the pipeline to PSUM (neuron-profile MATMUL
         * record, measurements.md section 8). */
        lat_cycles += a->pe.latency_cycles;
        if (T) {
            T->latency = "latency = II + {pipeline}";
            term(T, "pipeline", a->pe.latency_cycles, "pe.latency_cycles");
        }
    } else if (kind == KIND_STREAM) {
        /* Static access overhead (~60 cycles, ARCH) and pipeline latency on completion, not
         * on II: paid by dependents, hidden between independent instructions. */
        const mdl_engine_cfg_t *cfg = compute_cfg(a, eng);
        if (cfg)
            lat_cycles = max_d(cycles, raw + cfg->static_overhead_cycles * (1.0 + q.acc.vectors) +
                                           cfg->latency_cycles);
        if (T && cfg) {
            T->latency = "latency = max(II, {work} + {static} x (1 + {vectors}) + {pipeline})";
            term(T, "work", raw, "the streaming work before the MIN_II floor");
            term(T, "static", cfg->static_overhead_cycles, "static access overhead per access");
            term(T, "vectors", (double)q.acc.vectors, "[P,1] scale/bias/scalar vector operands");
            term(T, "pipeline", cfg->latency_cycles, "pipeline latency");
        }
    } else if (T) {
        T->latency = "latency = II";
    }
    out->cycles = cycles;
    out->ii_ns = cycles / clock;
    out->latency_ns = lat_cycles / clock;
}

void mdl_cost_instr(const mdl_arch_t *a, const isa_program_t *p, const isa_instr_t *in,
                    uint32_t stationary_cols, mdl_cost_t *out)
{
    cost_instr(a, p, in, stationary_cols, out, NULL);
}

void mdl_cost_explain(const mdl_arch_t *a, const isa_program_t *p, const isa_instr_t *in,
                      uint32_t stationary_cols, mdl_cost_t *out, mdl_cost_terms_t *terms)
{
    memset(terms, 0, sizeof *terms);
    cost_instr(a, p, in, stationary_cols, out, terms);
}

double mdl_cost_term_value(const mdl_cost_terms_t *t, const char *name, double dflt)
{
    for (unsigned i = 0; i < t->n; i++)
        if (strcmp(t->t[i].name, name) == 0)
            return t->t[i].value;
    return dflt;
}

/* Append to buf[0..n) at *at, counting what would not fit (snprintf style). */
static void put_text(char *buf, size_t n, size_t *at, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++, (*at)++)
        if (*at + 1 < n)
            buf[*at] = s[i];
    if (n)
        buf[*at < n ? *at : n - 1] = '\0';
}

static void put_num(char *buf, size_t n, size_t *at, double v)
{
    char num[40];
    /* integers as integers, others with up to 4 significant decimals */
    int len = v == (double)(long long)v && v < 1e15 && v > -1e15
                  ? snprintf(num, sizeof num, "%lld", (long long)v)
                  : snprintf(num, sizeof num, "%.4g", v);
    put_text(buf, n, at, num, len > 0 ? (size_t)len : 0);
}

/* A formula with each {NAME} replaced by NAME=value (note). */
static void put_formula(const mdl_cost_terms_t *t, const char *f, char *buf, size_t n,
                        size_t *at)
{
    while (*f) {
        const char *open = strchr(f, '{');
        const char *close = open ? strchr(open, '}') : NULL;
        if (!open || !close) {
            put_text(buf, n, at, f, strlen(f));
            return;
        }
        put_text(buf, n, at, f, (size_t)(open - f));
        size_t len = (size_t)(close - open - 1);
        const mdl_cost_term_t *tm = NULL;
        for (unsigned i = 0; i < t->n && !tm; i++)
            if (strlen(t->t[i].name) == len && memcmp(t->t[i].name, open + 1, len) == 0)
                tm = &t->t[i];
        put_text(buf, n, at, open + 1, len);
        if (tm) {
            put_text(buf, n, at, "=", 1);
            put_num(buf, n, at, tm->value);
            if (tm->note) {
                put_text(buf, n, at, " (", 2);
                put_text(buf, n, at, tm->note, strlen(tm->note));
                put_text(buf, n, at, ")", 1);
            }
        }
        f = close + 1;
    }
}

size_t mdl_cost_terms_format(const mdl_cost_terms_t *t, const mdl_cost_t *c, char *buf,
                             size_t n)
{
    size_t at = 0;
    if (n)
        buf[0] = '\0';
    if (t->ii) {
        put_formula(t, t->ii, buf, n, &at);
        put_text(buf, n, &at, " = ", 3);
        put_num(buf, n, &at, c->cycles);
        put_text(buf, n, &at, " cycles = ", 10);
        char num[40];
        int len = snprintf(num, sizeof num, "%.3f ns", c->ii_ns);
        put_text(buf, n, &at, num, len > 0 ? (size_t)len : 0);
    }
    if (t->latency) {
        put_text(buf, n, &at, "; ", 2);
        put_formula(t, t->latency, buf, n, &at);
    }
    return at;
}

/* ---- DMA shape and efficiency ------------------------------------------------------------ */

/*
 * Contiguous pieces of one side of a transfer. A piece is a maximal run of consecutive
 * ascending bytes: dims are merged from the innermost outwards while each dim's stride equals
 * the run built so far (dims of count 1 do not break a run). A run never crosses an
 * SBUF/PSUM partition: partitions are separate buffers (ARCH SBUF address map). Reversed
 * (negative) and broadcast (zero) strides give one-element pieces.
 */
static void side_pieces(const isa_view_t *v, uint64_t *bytes, uint64_t *pieces)
{
    uint64_t elems = isa_view_free_elems(v);
    uint64_t rows = v->space == (uint8_t)ISA_SPACE_HBM ? 1u : v->pcount;
    uint64_t run = 1;
    for (int i = (int)v->ndims - 1; i >= 0; i--) {
        if (v->count[i] == 1)
            continue;
        if (v->stride[i] != (int64_t)run)
            break;
        run *= v->count[i];
    }
    *bytes = elems * rows * isa_dtype_size((isa_dtype_t)v->dtype);
    *pieces = elems ? rows * (elems / run) : 0;
}

void mdl_dma_shape(const isa_view_t *dst, const isa_view_t *src, mdl_dma_shape_t *out)
{
    memset(out, 0, sizeof *out);
    uint64_t db, dp, sb, sp;
    side_pieces(dst, &db, &dp);
    side_pieces(src, &sb, &sp);
    /* The worse side has more pieces. A piece's engine time is set by the larger of its two
     * sides: the engine reads the source bytes and writes the destination bytes of a
     * converting transfer at once (docs/cost-model.md 9.1), so the bytes per piece are the
     * larger side's over the worse side's pieces (the worse side's run size when the types
     * match). */
    uint64_t wp = sp > dp ? sp : dp;
    uint64_t mb = sb > db ? sb : db;
    out->bytes = db;
    out->src_bytes = sb;
    out->pieces = wp;
    out->bytes_per_piece = wp ? (double)mb / (double)wp : 0.0;
    uint32_t parts = 0;
    if (dst->space != (uint8_t)ISA_SPACE_HBM)
        parts = dst->pcount;
    if (src->space != (uint8_t)ISA_SPACE_HBM && src->pcount > parts)
        parts = src->pcount;
    out->partitions = parts ? parts : 1u;
    out->src_space = src->space;
    out->dst_space = dst->space;
}

/*
 * Efficiency of pieces of b bytes [DMA-BW: < 256 B overhead-bound, 256 B - 2 KiB improving,
 * >= 2 KiB near peak, 4 KiB saturating]. Each piece (descriptor element) costs
 * piece_overhead_ns on top of its transfer time b / BW at the engine's peak BW, so
 *   eff(b) = (b / BW) / (piece_overhead_ns + b / BW) = b / (b + E),  E = piece_overhead_ns x BW
 * (GB/s = B/ns). Smooth, increasing, in (0, 1), tending to 1; the "2 KiB near peak" point
 * fixes E: eff(2 KiB) = 0.90 for E ~ 220 B (piece_overhead_ns ~ 8 ns at 27.2 GB/s).
 */
double mdl_dma_efficiency(const mdl_arch_t *a, double bytes_per_piece)
{
    double e = a->dma.piece_overhead_ns * a->dma.engine_bandwidth_gbps;
    if (!(e > 0.0))
        return 1.0;
    double b = bytes_per_piece < 1.0 ? 1.0 : bytes_per_piece; /* a piece moves >= 1 byte */
    return b / (b + e);
}
