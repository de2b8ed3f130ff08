/*
 * exec_internal.h -- shared machinery of the functional model (exec.c, exec_alu.c,
 * exec_vector.c): the per-instruction context, operand fetching and checking, scratch
 * buffers, ALU kernels. Not part of the public interface of models/.
 *
 * Every instruction follows the same shape: fetch and check all operands (bounds, memory
 * spaces, shapes, types; the vector handlers through one prologue, exec_operands, from a
 * small table of their operand slots), gather the inputs once into fp32 (or int64) scratch
 * arrays, compute with tight loops whose operator switch sits outside the loop, then scatter
 * the result once.
 * Inputs are read completely before anything is written, so D may alias any input.
 */
#ifndef NCSIM_MODELS_EXEC_INTERNAL_H
#define NCSIM_MODELS_EXEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"

/* Operand slots, in the order of each signature in isa/ops.def (checked by test_exec). */
enum { SLOT_LDW_STAT = 0 };
enum { SLOT_MM_D = 0, SLOT_MM_MOV, SLOT_MM_ACC };
enum { SLOT_TR_D = 0, SLOT_TR_SRC };
enum {
    SLOT_ACT_D = 0,
    SLOT_ACT_SRC,
    SLOT_ACT_FUNC,
    SLOT_ACT_SCALE,
    SLOT_ACT_BIAS,
    SLOT_ACT_SUM,
    SLOT_ACT_SUMACC
};
enum { SLOT_TT_D = 0, SLOT_TT_A, SLOT_TT_B, SLOT_TT_OP };
enum {
    SLOT_TS_D = 0,
    SLOT_TS_SRC,
    SLOT_TS_OP0,
    SLOT_TS_S0,
    SLOT_TS_OP1,
    SLOT_TS_S1,
    SLOT_TS_REV0,
    SLOT_TS_REV1
};
enum { SLOT_STT_D = 0, SLOT_STT_A, SLOT_STT_OP0, SLOT_STT_S0, SLOT_STT_OP1, SLOT_STT_B };
enum { SLOT_RED_D = 0, SLOT_RED_SRC, SLOT_RED_OP, SLOT_RED_AXES, SLOT_RED_NEGATE };
enum { SLOT_SCAN_D = 0, SLOT_SCAN_A, SLOT_SCAN_B, SLOT_SCAN_OP0, SLOT_SCAN_OP1, SLOT_SCAN_INIT };
enum { SLOT_CP_D = 0, SLOT_CP_SRC };
enum { SLOT_MS_D = 0, SLOT_MS_VALUE };
enum { SLOT_SEL_D = 0, SLOT_SEL_PRED, SLOT_SEL_A, SLOT_SEL_REVERSE };
enum { SLOT_UN_D = 0, SLOT_UN_SRC }; /* reciprocal, bn_stats, bn_aggr, max8 */
enum { SLOT_SHUF_D = 0, SLOT_SHUF_SRC, SLOT_SHUF_MASK };
enum { SLOT_FI8_D = 0, SLOT_FI8_SRC, SLOT_FI8_VALS };
enum { SLOT_MR8_D = 0, SLOT_MR8_SRC, SLOT_MR8_VALS, SLOT_MR8_IMM };
enum { SLOT_DROP_D = 0, SLOT_DROP_SRC, SLOT_DROP_PROB };
enum { SLOT_IOTA_D = 0, SLOT_IOTA_BASE, SLOT_IOTA_PSTEP, SLOT_IOTA_STEPS };
enum {
    SLOT_AS_D = 0,
    SLOT_AS_SRC,
    SLOT_AS_BASE,
    SLOT_AS_PSTEP,
    SLOT_AS_STEPS,
    SLOT_AS_CMP,
    SLOT_AS_FILL
};
enum { SLOT_PR_D = 0, SLOT_PR_SRC, SLOT_PR_OP };
enum { SLOT_DMA_D = 0, SLOT_DMA_SRC, SLOT_DMA_QUEUE, SLOT_DMA_ACCUMULATE };

/* Largest operand of one compute instruction, in elements: bounds scratch memory when a
 * broadcast (stride 0) view has huge counts. Hardware streams at most 64K elements per
 * partition, so 2^24 (128 partitions x 128K) is never a limit for a real kernel. */
#define EXEC_MAX_ELEMS (1ull << 24)

/* Memory-space masks. */
#define EXEC_SB (1u << ISA_SPACE_SBUF)
#define EXEC_PS (1u << ISA_SPACE_PSUM)
#define EXEC_HBM (1u << ISA_SPACE_HBM)

/* PSUM word provenance in mdl_core_state_t.psum_pe_written. */
#define EXEC_PSUM_NEVER 0 /* not written since the state was created */
#define EXEC_PSUM_PE 1    /* last written by pe */
#define EXEC_PSUM_OTHER 2 /* last written by act or dve */

typedef struct exec_ctx {
    mdl_core_state_t *s;
    const isa_program_t *prog;
    const isa_instr_t *in;
    const isa_arg_t *args;
    isa_op_t op;
    isa_engine_t engine;
    const char *mnemonic;
    mdl_rng_t *rng;
    char *err;
    size_t errlen;
} exec_ctx_t;

/* A scalar operand (ISA.md 5.4): an immediate or one value per partition. */
typedef struct exec_scalar {
    int is_view;
    float f;           /* immediate as fp32 */
    int64_t i;         /* immediate as an integer (integer domain only) */
    const float *fv;   /* per-partition values (view, float domain) */
    const int64_t *iv; /* per-partition values (view, integer domain) */
} exec_scalar_t;

static inline float exec_scalar_f(const exec_scalar_t *s, uint32_t p)
{
    return s->is_view ? s->fv[p] : s->f;
}
static inline int64_t exec_scalar_i(const exec_scalar_t *s, uint32_t p)
{
    return s->is_view ? s->iv[p] : s->i;
}

/* ---- exec.c: context helpers ---------------------------------------------------------------- */

/* Format "mnemonic: message" into the error buffer; returns NCSIM_PROGRAM. */
ncsim_status_t exec_fail(exec_ctx_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ncsim_status_t exec_nomem(exec_ctx_t *x);
const char *exec_slot_name(const exec_ctx_t *x, unsigned slot);
static inline int exec_flag(const exec_ctx_t *x, unsigned slot)
{
    return x->args[slot].present && x->args[slot].v.i != 0;
}
/* Memory spaces the instruction's engine may touch (act/dve: SBUF, PSUM; pool: SBUF). */
unsigned exec_engine_spaces(const exec_ctx_t *x);
/*
 * Fetch the view of a slot and check it: present (unless optional: *out = NULL), inside its
 * memory, in one of `spaces`, at most EXEC_MAX_ELEMS elements.
 */
ncsim_status_t exec_view(exec_ctx_t *x, unsigned slot, unsigned spaces, const isa_view_t **out);
/* Element-wise compatibility (ISA.md 5.3): same partitions, same free elements. */
ncsim_status_t exec_same_shape(exec_ctx_t *x, unsigned sa, const isa_view_t *a, unsigned sb,
                               const isa_view_t *b);
/*
 * The operand prologue of an instruction: the views of `n` slots, in the engine's memory spaces,
 * checked as exec_view does, then by each operand's rules:
 *   EXEC_LIKE_FIRST  the same shape as the first operand (element-wise, ISA.md 5.3)
 *   EXEC_FP32        type fp32
 *   EXEC_ONE_PSUM    not in PSUM together with the operand before it (a two-input op)
 * Checks run in a fixed order, so that a program with several faults always gets the same
 * message: the views are fetched in the listed order; the shape checks run as soon as the last
 * EXEC_LIKE_FIRST operand is fetched, then the later views; then the type checks, then the
 * PSUM pairs. An absent optional slot gives NULL and no check. views[i] is ops[i]'s view.
 */
#define EXEC_LIKE_FIRST 1u
#define EXEC_FP32 2u
#define EXEC_ONE_PSUM 4u
typedef struct exec_operand {
    uint8_t slot;
    uint8_t rules;
} exec_operand_t;
ncsim_status_t exec_operands(exec_ctx_t *x, const exec_operand_t *ops, unsigned n,
                             const isa_view_t **views);
#define EXEC_NOPERANDS(ops) ((unsigned)(sizeof(ops) / sizeof((ops)[0])))
/* The slot's view must be [pc, width]: "D has P partitions x N elements; it must be
 * [pc, width]" otherwise. */
ncsim_status_t exec_need_rows(exec_ctx_t *x, unsigned slot, const isa_view_t *v, uint32_t pc,
                              uint64_t width);
/* "a two-input op may not take both inputs from PSUM" (ISA.md 1). */
ncsim_status_t exec_not_both_psum(exec_ctx_t *x, unsigned sa, const isa_view_t *a, unsigned sb,
                                  const isa_view_t *b);
/* The slot's view must have an integer type (bitwise operators). */
ncsim_status_t exec_need_int(exec_ctx_t *x, unsigned slot, const isa_view_t *v, isa_alu_t op);
/* The slot's view must have type t. */
ncsim_status_t exec_need_dtype(exec_ctx_t *x, unsigned slot, const isa_view_t *v, isa_dtype_t t);
/*
 * A scalar slot for an instruction over `pcount` partitions: absent -> `dflt`; immediate; or
 * a [P,1] view read into small buffer `k` (0..7). With `as_int` the integer domain is used:
 * an immediate must be integral and a view must have an integer type (`op` names the reason).
 */
ncsim_status_t exec_scalar(exec_ctx_t *x, unsigned slot, uint32_t pcount, double dflt, int as_int,
                           isa_alu_t op, unsigned k, exec_scalar_t *out);

/* Scratch slot i (0..2) with room for n floats (or n/2 int64); NULL when out of memory. */
float *exec_scratch(exec_ctx_t *x, unsigned i, size_t n);
int64_t *exec_scratch_i64(exec_ctx_t *x, unsigned i, size_t n);
/* Small per-partition buffer k (0..7) with room for one float or int64 per partition. */
void *exec_small(exec_ctx_t *x, unsigned k);

void exec_read_f32(exec_ctx_t *x, const isa_view_t *v, float *out);
void exec_read_i64(exec_ctx_t *x, const isa_view_t *v, int64_t *out);
/* Write with the core's rounding mode and the engine's generator; track PSUM provenance. */
ncsim_status_t exec_write_f32(exec_ctx_t *x, const isa_view_t *v, const float *in);
ncsim_status_t exec_write_i64(exec_ctx_t *x, const isa_view_t *v, const int64_t *in);

/* A view restricted to `n` partitions starting `first` partitions into v (SBUF/PSUM). */
isa_view_t exec_subview_partitions(const isa_view_t *v, uint32_t first, uint32_t n);

/* ---- exec_alu.c --------------------------------------------------------------------------- */

int exec_alu_is_bitwise(isa_alu_t op);
/* Element-wise kernels, d may alias the inputs. vv: d = a OP b; vs: d = a OP s; sv: d = s OP b. */
void exec_alu_vv_f32(isa_alu_t op, float *d, const float *a, const float *b, size_t n);
void exec_alu_vs_f32(isa_alu_t op, float *d, const float *a, float s, size_t n);
void exec_alu_sv_f32(isa_alu_t op, float *d, float s, const float *b, size_t n);
void exec_alu_vv_i64(isa_alu_t op, int64_t *d, const int64_t *a, const int64_t *b, size_t n);
void exec_alu_vs_i64(isa_alu_t op, int64_t *d, const int64_t *a, int64_t s, size_t n);
void exec_alu_sv_i64(isa_alu_t op, int64_t *d, int64_t s, const int64_t *b, size_t n);
/* One application (sequential ops: scans). */
float exec_alu1_f32(isa_alu_t op, float a, float b);
int64_t exec_alu1_i64(isa_alu_t op, int64_t a, int64_t b);
/* The value an integer-domain result takes in type t (two's complement wrap for integer
 * types, unchanged for float types, which round on store). */
int64_t exec_wrap_i64(isa_dtype_t t, int64_t v);

ncsim_status_t exec_tensor_tensor(exec_ctx_t *x);
ncsim_status_t exec_tensor_scalar(exec_ctx_t *x);
ncsim_status_t exec_scalar_tensor_tensor(exec_ctx_t *x);
ncsim_status_t exec_tensor_scan(exec_ctx_t *x);
ncsim_status_t exec_tensor_reduce(exec_ctx_t *x);
ncsim_status_t exec_partition_reduce(exec_ctx_t *x);

/* ---- exec_vector.c -------------------------------------------------------------------------- */

ncsim_status_t exec_activate(exec_ctx_t *x);
ncsim_status_t exec_tensor_copy(exec_ctx_t *x);
ncsim_status_t exec_memset(exec_ctx_t *x);
ncsim_status_t exec_select(exec_ctx_t *x);
ncsim_status_t exec_reciprocal(exec_ctx_t *x);
ncsim_status_t exec_bn_stats(exec_ctx_t *x);
ncsim_status_t exec_bn_aggr(exec_ctx_t *x);
ncsim_status_t exec_transpose_dve(exec_ctx_t *x);
ncsim_status_t exec_shuffle(exec_ctx_t *x);
ncsim_status_t exec_max8(exec_ctx_t *x);
ncsim_status_t exec_find_index8(exec_ctx_t *x);
ncsim_status_t exec_match_replace8(exec_ctx_t *x);
ncsim_status_t exec_dropout(exec_ctx_t *x);
ncsim_status_t exec_iota(exec_ctx_t *x);
ncsim_status_t exec_affine_select(exec_ctx_t *x);

#endif
