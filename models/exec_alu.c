/*
 * exec_alu.c -- the ALU operators (ISA_ALU_MAP) and the instructions built on them:
 * tensor_tensor, tensor_scalar, scalar_tensor_tensor, tensor_scan, tensor_reduce,
 * partition_reduce.
 *
 * Two evaluation domains (docs/semantics.md, "ALU operators"):
 *  - float: the default. Inputs are widened to fp32, every operator is fp32 arithmetic, the
 *    result is rounded to D's type on write.
 *  - integer: an instruction using a bitwise operator or a shift. Its inputs must have integer
 *    types and are read exactly as int64 (sign- or zero-extended). add, subtract, multiply,
 *    max, min, comparisons and logical operators are exact integer operations; divide and pow
 *    go through fp32 and round to the nearest integer. The result is wrapped to D's width
 *    (two's complement) when D is an integer type, converted (RNE) when D is a float type.
 *
 * Kernels put the operator switch outside the element loop (one loop per operator).
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

int exec_alu_is_bitwise(isa_alu_t op)
{
    return op == ISA_ALU_BITWISE_AND || op == ISA_ALU_BITWISE_OR || op == ISA_ALU_BITWISE_XOR ||
           op == ISA_ALU_SHIFT_LEFT || op == ISA_ALU_SHIFT_RIGHT;
}

/* ---- Operator definitions ---------------------------------------------------------------- */

#define B2F(c) ((c) ? 1.0f : 0.0f)

/* max/min propagate NaN from either side, like NumPy's maximum/minimum. */
static inline float max_f(float x, float y)
{
    return (x > y || x != x) ? x : y;
}
static inline float min_f(float x, float y)
{
    return (x < y || x != x) ? x : y;
}

/* fp32 -> int64, round to nearest even, saturating, NaN -> 0 (integer-domain divide/pow). */
static inline int64_t f2i(float f)
{
    if (f != f)
        return 0;
    if (f >= 9223372036854775808.0f)
        return INT64_MAX;
    if (f < -9223372036854775808.0f)
        return INT64_MIN;
    return (int64_t)nearbyintf(f);
}

static inline int64_t shl_i(int64_t x, int64_t y)
{
    return (y < 0 || y > 63) ? 0 : (int64_t)((uint64_t)x << y);
}

/* Logical shift of the 32-bit two's complement pattern (the engines' widest integer). */
static inline int64_t shr_i(int64_t x, int64_t y)
{
    return (y < 0 || y > 31) ? 0 : (int64_t)(((uint64_t)x & 0xffffffffu) >> y);
}

/* Remainders: fmod is C's (the sign of x, exact); mod is Python's and NumPy's (the sign of y):
 * fmod's result moved by y when the signs differ. x % 0 is NaN in fp32, 0 in integers. */
static inline float mod_f(float x, float y)
{
    float r = fmodf(x, y);
    return (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) ? r + y : r;
}

static inline int64_t fmod_i(int64_t x, int64_t y)
{
    if (y == 0)
        return 0;
    if (y == -1)
        return 0; /* INT64_MIN % -1 overflows in C */
    return x % y;
}

static inline int64_t mod_i(int64_t x, int64_t y)
{
    int64_t r = fmod_i(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

/* One operator per line, as a table. */
// clang-format off
#define F32_CASES(LOOP)                                                                        \
    case ISA_ALU_ADD: LOOP(x + y); break;                                                      \
    case ISA_ALU_SUBTRACT: LOOP(x - y); break;                                                 \
    case ISA_ALU_MULTIPLY: LOOP(x * y); break;                                                 \
    case ISA_ALU_DIVIDE: LOOP(x / y); break;                                                   \
    case ISA_ALU_MAX: LOOP(max_f(x, y)); break;                                                \
    case ISA_ALU_MIN: LOOP(min_f(x, y)); break;                                                \
    case ISA_ALU_POW: LOOP(powf(x, y)); break;                                                 \
    case ISA_ALU_IS_EQUAL: LOOP(B2F(x == y)); break;                                           \
    case ISA_ALU_NOT_EQUAL: LOOP(B2F(x != y)); break;                                          \
    case ISA_ALU_IS_GE: LOOP(B2F(x >= y)); break;                                              \
    case ISA_ALU_IS_GT: LOOP(B2F(x > y)); break;                                               \
    case ISA_ALU_IS_LE: LOOP(B2F(x <= y)); break;                                              \
    case ISA_ALU_IS_LT: LOOP(B2F(x < y)); break;                                               \
    case ISA_ALU_LOGICAL_AND: LOOP(B2F(x != 0.0f && y != 0.0f)); break;                        \
    case ISA_ALU_LOGICAL_OR: LOOP(B2F(x != 0.0f || y != 0.0f)); break;                         \
    case ISA_ALU_LOGICAL_XOR: LOOP(B2F((x != 0.0f) != (y != 0.0f))); break;                    \
    case ISA_ALU_MOD: LOOP(mod_f(x, y)); break;                                                \
    case ISA_ALU_FMOD: LOOP(fmodf(x, y)); break;                                               \
    default: LOOP(((void)x, (void)y, 0.0f)); break; /* bitwise: never in the float domain */

#define I64_CASES(LOOP)                                                                        \
    case ISA_ALU_ADD: LOOP((int64_t)((uint64_t)x + (uint64_t)y)); break;                       \
    case ISA_ALU_SUBTRACT: LOOP((int64_t)((uint64_t)x - (uint64_t)y)); break;                  \
    case ISA_ALU_MULTIPLY: LOOP((int64_t)((uint64_t)x * (uint64_t)y)); break;                  \
    case ISA_ALU_DIVIDE: LOOP(f2i((float)x / (float)y)); break;                                \
    case ISA_ALU_MAX: LOOP(x > y ? x : y); break;                                              \
    case ISA_ALU_MIN: LOOP(x < y ? x : y); break;                                              \
    case ISA_ALU_POW: LOOP(f2i(powf((float)x, (float)y))); break;                              \
    case ISA_ALU_IS_EQUAL: LOOP(x == y); break;                                                \
    case ISA_ALU_NOT_EQUAL: LOOP(x != y); break;                                               \
    case ISA_ALU_IS_GE: LOOP(x >= y); break;                                                   \
    case ISA_ALU_IS_GT: LOOP(x > y); break;                                                    \
    case ISA_ALU_IS_LE: LOOP(x <= y); break;                                                   \
    case ISA_ALU_IS_LT: LOOP(x < y); break;                                                    \
    case ISA_ALU_LOGICAL_AND: LOOP(x != 0 && y != 0); break;                                   \
    case ISA_ALU_LOGICAL_OR: LOOP(x != 0 || y != 0); break;                                    \
    case ISA_ALU_LOGICAL_XOR: LOOP((x != 0) != (y != 0)); break;                               \
    case ISA_ALU_BITWISE_AND: LOOP(x & y); break;                                              \
    case ISA_ALU_BITWISE_OR: LOOP(x | y); break;                                               \
    case ISA_ALU_BITWISE_XOR: LOOP(x ^ y); break;                                              \
    case ISA_ALU_SHIFT_LEFT: LOOP(shl_i(x, y)); break;                                         \
    case ISA_ALU_SHIFT_RIGHT: LOOP(shr_i(x, y)); break;                                        \
    case ISA_ALU_MOD: LOOP(mod_i(x, y)); break;                                                \
    case ISA_ALU_FMOD: LOOP(fmod_i(x, y)); break;                                              \
    default: LOOP(((void)x, (void)y, (int64_t)0)); break;
// clang-format on

/* ---- Kernels --------------------------------------------------------------------------------- */

#define LOOP_VV(T, E)                                                                              \
    for (size_t i = 0; i < n; i++) {                                                               \
        const T x = a[i], y = b[i];                                                                \
        d[i] = (E);                                                                                \
    }
#define LOOP_VS(T, E)                                                                              \
    for (size_t i = 0; i < n; i++) {                                                               \
        const T x = a[i], y = s;                                                                   \
        d[i] = (E);                                                                                \
    }
#define LOOP_SV(T, E)                                                                              \
    for (size_t i = 0; i < n; i++) {                                                               \
        const T x = s, y = b[i];                                                                   \
        d[i] = (E);                                                                                \
    }
#define VV_F(E) LOOP_VV(float, E)
#define VS_F(E) LOOP_VS(float, E)
#define SV_F(E) LOOP_SV(float, E)
#define VV_I(E) LOOP_VV(int64_t, E)
#define VS_I(E) LOOP_VS(int64_t, E)
#define SV_I(E) LOOP_SV(int64_t, E)

void exec_alu_vv_f32(isa_alu_t op, float *d, const float *a, const float *b, size_t n)
{
    switch (op) {
        F32_CASES(VV_F)
    }
}
void exec_alu_vs_f32(isa_alu_t op, float *d, const float *a, float s, size_t n)
{
    switch (op) {
        F32_CASES(VS_F)
    }
}
void exec_alu_sv_f32(isa_alu_t op, float *d, float s, const float *b, size_t n)
{
    switch (op) {
        F32_CASES(SV_F)
    }
}
void exec_alu_vv_i64(isa_alu_t op, int64_t *d, const int64_t *a, const int64_t *b, size_t n)
{
    switch (op) {
        I64_CASES(VV_I)
    }
}
void exec_alu_vs_i64(isa_alu_t op, int64_t *d, const int64_t *a, int64_t s, size_t n)
{
    switch (op) {
        I64_CASES(VS_I)
    }
}
void exec_alu_sv_i64(isa_alu_t op, int64_t *d, int64_t s, const int64_t *b, size_t n)
{
    switch (op) {
        I64_CASES(SV_I)
    }
}

#define ONE(E) return (E)

float exec_alu1_f32(isa_alu_t op, float x, float y)
{
    switch (op) {
        F32_CASES(ONE)
    }
}

int64_t exec_alu1_i64(isa_alu_t op, int64_t x, int64_t y)
{
    switch (op) {
        I64_CASES(ONE)
    }
}

int64_t exec_wrap_i64(isa_dtype_t t, int64_t v)
{
    switch (t) {
    case ISA_DT_I8:
        return (int8_t)(uint8_t)v;
    case ISA_DT_U8:
        return (uint8_t)v;
    case ISA_DT_I16:
        return (int16_t)(uint16_t)v;
    case ISA_DT_U16:
        return (uint16_t)v;
    case ISA_DT_I32:
        return (int32_t)(uint32_t)v;
    case ISA_DT_U32:
        return (uint32_t)v;
    default:
        return v;
    }
}

/* ---- Shared helpers ----------------------------------------------------------------------------
 */

/* The ALU operator of a slot; `reduce` requires a reduction operator (ISA_ALU_MAP can_reduce). */
static ncsim_status_t get_alu(exec_ctx_t *x, unsigned slot, int reduce, isa_alu_t *out)
{
    const isa_arg_t *a = &x->args[slot];
    if (!a->present)
        return exec_fail(x, "missing operator %s", exec_slot_name(x, slot));
    if (a->v.i < 0 || a->v.i >= ISA_ALU_COUNT)
        return exec_fail(x, "%s: invalid operator %" PRId64, exec_slot_name(x, slot), a->v.i);
    *out = (isa_alu_t)a->v.i;
    if (reduce && !isa_alu_can_reduce(*out))
        return exec_fail(x,
                         "%s is not a reduction operator (add max min multiply bitwise_and "
                         "bitwise_or bitwise_xor)",
                         isa_alu_name(*out));
    return NCSIM_OK;
}

/* Write an integer-domain result: wrapped to D's width for integer D. */
static ncsim_status_t write_int_result(exec_ctx_t *x, const isa_view_t *d, int64_t *v, size_t n)
{
    const isa_dtype_t t = (isa_dtype_t)d->dtype;
    if (!isa_dtype_is_float(t))
        for (size_t i = 0; i < n; i++)
            v[i] = exec_wrap_i64(t, v[i]);
    return exec_write_i64(x, d, v);
}

/* ---- tensor_tensor ------------------------------------------------------------------------- */

ncsim_status_t exec_tensor_tensor(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_TT_D, 0},
                                         {SLOT_TT_A, EXEC_LIKE_FIRST},
                                         {SLOT_TT_B, EXEC_LIKE_FIRST | EXEC_ONE_PSUM}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    isa_alu_t op = ISA_ALU_ADD; /* set by get_alu; initialised for -Wmaybe-uninitialized */
    ncsim_status_t st;
    if ((st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv)) != NCSIM_OK ||
        (st = get_alu(x, SLOT_TT_OP, 0, &op)) != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *a = opv[1], *b = opv[2];
    if (x->engine == ISA_ENGINE_POOL && op != ISA_ALU_ADD && op != ISA_ALU_SUBTRACT &&
        op != ISA_ALU_MULTIPLY && op != ISA_ALU_POW)
        return exec_fail(x, "%s is not available on pool (add, subtract, multiply, pow only)",
                         isa_alu_name(op));
    const size_t n = (size_t)isa_view_elems(a);
    if (exec_alu_is_bitwise(op)) {
        if ((st = exec_need_int(x, SLOT_TT_A, a, op)) != NCSIM_OK ||
            (st = exec_need_int(x, SLOT_TT_B, b, op)) != NCSIM_OK)
            return st;
        int64_t *ia = exec_scratch_i64(x, 0, n), *ib = exec_scratch_i64(x, 1, n);
        if (!ia || !ib)
            return exec_nomem(x);
        exec_read_i64(x, a, ia);
        exec_read_i64(x, b, ib);
        exec_alu_vv_i64(op, ia, ia, ib, n);
        return write_int_result(x, d, ia, n);
    }
    float *fa = exec_scratch(x, 0, n), *fb = exec_scratch(x, 1, n);
    if (!fa || !fb)
        return exec_nomem(x);
    exec_read_f32(x, a, fa);
    exec_read_f32(x, b, fb);
    exec_alu_vv_f32(op, fa, fa, fb, n);
    return exec_write_f32(x, d, fa);
}

/* ---- tensor_scalar -----------------------------------------------------------------------------
 */

/* row = row OP s (or s OP row when rev), over `pcount` rows of `f` elements. */
static void rows_scalar_f32(isa_alu_t op, float *v, uint32_t pcount, size_t f,
                            const exec_scalar_t *s, int rev)
{
    for (uint32_t p = 0; p < pcount; p++) {
        float *row = v + (size_t)p * f;
        if (rev)
            exec_alu_sv_f32(op, row, exec_scalar_f(s, p), row, f);
        else
            exec_alu_vs_f32(op, row, row, exec_scalar_f(s, p), f);
    }
}

static void rows_scalar_i64(isa_alu_t op, int64_t *v, uint32_t pcount, size_t f,
                            const exec_scalar_t *s, int rev)
{
    for (uint32_t p = 0; p < pcount; p++) {
        int64_t *row = v + (size_t)p * f;
        if (rev)
            exec_alu_sv_i64(op, row, exec_scalar_i(s, p), row, f);
        else
            exec_alu_vs_i64(op, row, row, exec_scalar_i(s, p), f);
    }
}

ncsim_status_t exec_tensor_scalar(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_TS_D, 0}, {SLOT_TS_SRC, EXEC_LIKE_FIRST}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    isa_alu_t op0 = ISA_ALU_ADD, op1 = ISA_ALU_ADD;
    ncsim_status_t st;
    if ((st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv)) != NCSIM_OK ||
        (st = get_alu(x, SLOT_TS_OP0, 0, &op0)) != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const int has1 = x->args[SLOT_TS_OP1].present;
    if (has1 != x->args[SLOT_TS_S1].present)
        return exec_fail(x, has1 ? "OP1 is given without S1" : "S1 is given without OP1");
    if (has1 && (st = get_alu(x, SLOT_TS_OP1, 0, &op1)) != NCSIM_OK)
        return st;
    const int integer = exec_alu_is_bitwise(op0) || (has1 && exec_alu_is_bitwise(op1));
    const isa_alu_t why = exec_alu_is_bitwise(op0) ? op0 : op1;
    if (integer && (st = exec_need_int(x, SLOT_TS_SRC, src, why)) != NCSIM_OK)
        return st;
    const uint32_t pc = src->pcount;
    exec_scalar_t s0, s1;
    if ((st = exec_scalar(x, SLOT_TS_S0, pc, 0.0, integer, why, 0, &s0)) != NCSIM_OK ||
        (has1 && (st = exec_scalar(x, SLOT_TS_S1, pc, 0.0, integer, why, 1, &s1)) != NCSIM_OK))
        return st;
    const int rev0 = exec_flag(x, SLOT_TS_REV0), rev1 = exec_flag(x, SLOT_TS_REV1);
    const size_t f = (size_t)isa_view_free_elems(src), n = f * pc;
    if (integer) {
        int64_t *v = exec_scratch_i64(x, 0, n);
        if (!v)
            return exec_nomem(x);
        exec_read_i64(x, src, v);
        rows_scalar_i64(op0, v, pc, f, &s0, rev0);
        if (has1)
            rows_scalar_i64(op1, v, pc, f, &s1, rev1);
        return write_int_result(x, d, v, n);
    }
    float *v = exec_scratch(x, 0, n);
    if (!v)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    rows_scalar_f32(op0, v, pc, f, &s0, rev0);
    if (has1)
        rows_scalar_f32(op1, v, pc, f, &s1, rev1);
    return exec_write_f32(x, d, v);
}

/* The operands of the forms with two ALU stages over D, A and B (scalar_tensor_tensor,
 * tensor_scan), slots in that order then OP0, OP1: views of one shape, not both inputs from
 * PSUM, both operators, and whether either is bitwise (then A and B must be integers; `why`
 * is the operator that asks). */
static ncsim_status_t two_stage_operands(exec_ctx_t *x, const unsigned slot[5],
                                         const isa_view_t **d, const isa_view_t **a,
                                         const isa_view_t **b, isa_alu_t *op0, isa_alu_t *op1,
                                         isa_alu_t *why, int *integer)
{
    const exec_operand_t ops[] = {{(uint8_t)slot[0], 0},
                                  {(uint8_t)slot[1], EXEC_LIKE_FIRST},
                                  {(uint8_t)slot[2], EXEC_LIKE_FIRST | EXEC_ONE_PSUM}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st;
    *op0 = *op1 = ISA_ALU_ADD; /* set by get_alu */
    if ((st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv)) != NCSIM_OK ||
        (st = get_alu(x, slot[3], 0, op0)) != NCSIM_OK ||
        (st = get_alu(x, slot[4], 0, op1)) != NCSIM_OK)
        return st;
    *d = opv[0];
    *a = opv[1];
    *b = opv[2];
    *integer = exec_alu_is_bitwise(*op0) || exec_alu_is_bitwise(*op1);
    *why = exec_alu_is_bitwise(*op0) ? *op0 : *op1;
    if (*integer && ((st = exec_need_int(x, slot[1], *a, *why)) != NCSIM_OK ||
                     (st = exec_need_int(x, slot[2], *b, *why)) != NCSIM_OK))
        return st;
    return NCSIM_OK;
}

/* ---- scalar_tensor_tensor ----------------------------------------------------------------------
 */

ncsim_status_t exec_scalar_tensor_tensor(exec_ctx_t *x)
{
    const isa_view_t *d, *a, *b;
    isa_alu_t op0, op1, why;
    int integer;
    ncsim_status_t st;
    const unsigned slots[5] = {SLOT_STT_D, SLOT_STT_A, SLOT_STT_B, SLOT_STT_OP0, SLOT_STT_OP1};
    if ((st = two_stage_operands(x, slots, &d, &a, &b, &op0, &op1, &why, &integer)) != NCSIM_OK)
        return st;
    const uint32_t pc = a->pcount;
    exec_scalar_t s0;
    if ((st = exec_scalar(x, SLOT_STT_S0, pc, 0.0, integer, why, 0, &s0)) != NCSIM_OK)
        return st;
    const size_t f = (size_t)isa_view_free_elems(a), n = f * pc;
    if (integer) {
        int64_t *va = exec_scratch_i64(x, 0, n), *vb = exec_scratch_i64(x, 1, n);
        if (!va || !vb)
            return exec_nomem(x);
        exec_read_i64(x, a, va);
        exec_read_i64(x, b, vb);
        rows_scalar_i64(op0, va, pc, f, &s0, 0);
        exec_alu_vv_i64(op1, va, va, vb, n);
        return write_int_result(x, d, va, n);
    }
    float *va = exec_scratch(x, 0, n), *vb = exec_scratch(x, 1, n);
    if (!va || !vb)
        return exec_nomem(x);
    exec_read_f32(x, a, va);
    exec_read_f32(x, b, vb);
    rows_scalar_f32(op0, va, pc, f, &s0, 0);
    exec_alu_vv_f32(op1, va, va, vb, n);
    return exec_write_f32(x, d, va);
}

/* ---- tensor_scan ------------------------------------------------------------------------------
 */

/* Length of the innermost free dim of v (1 for a view without free dims). */
static size_t innermost(const isa_view_t *v)
{
    return v->ndims ? v->count[v->ndims - 1] : 1;
}

ncsim_status_t exec_tensor_scan(exec_ctx_t *x)
{
    const isa_view_t *d, *a, *b;
    isa_alu_t op0, op1, why;
    int integer;
    ncsim_status_t st;
    const unsigned slots[5] = {SLOT_SCAN_D, SLOT_SCAN_A, SLOT_SCAN_B, SLOT_SCAN_OP0, SLOT_SCAN_OP1};
    if ((st = two_stage_operands(x, slots, &d, &a, &b, &op0, &op1, &why, &integer)) != NCSIM_OK)
        return st;
    if (!x->args[SLOT_SCAN_INIT].present)
        return exec_fail(x, "missing init=");
    const uint32_t pc = a->pcount;
    exec_scalar_t init;
    if ((st = exec_scalar(x, SLOT_SCAN_INIT, pc, 0.0, integer, why, 0, &init)) != NCSIM_OK)
        return st;
    const size_t f = (size_t)isa_view_free_elems(a), n = f * pc, len = innermost(a);
    if (integer) {
        int64_t *va = exec_scratch_i64(x, 0, n), *vb = exec_scratch_i64(x, 1, n);
        if (!va || !vb)
            return exec_nomem(x);
        exec_read_i64(x, a, va);
        exec_read_i64(x, b, vb);
        for (uint32_t p = 0; p < pc; p++)
            for (size_t seg = (size_t)p * f; seg < (size_t)(p + 1) * f; seg += len) {
                int64_t r = exec_scalar_i(&init, p);
                for (size_t i = seg; i < seg + len; i++)
                    va[i] = r = exec_alu1_i64(op1, exec_alu1_i64(op0, va[i], r), vb[i]);
            }
        return write_int_result(x, d, va, n);
    }
    float *va = exec_scratch(x, 0, n), *vb = exec_scratch(x, 1, n);
    if (!va || !vb)
        return exec_nomem(x);
    exec_read_f32(x, a, va);
    exec_read_f32(x, b, vb);
    for (uint32_t p = 0; p < pc; p++)
        for (size_t seg = (size_t)p * f; seg < (size_t)(p + 1) * f; seg += len) {
            float r = exec_scalar_f(&init, p);
            for (size_t i = seg; i < seg + len; i++)
                va[i] = r = exec_alu1_f32(op1, exec_alu1_f32(op0, va[i], r), vb[i]);
        }
    return exec_write_f32(x, d, va);
}

/* ---- tensor_reduce ----------------------------------------------------------------------------
 */

/* Sequential reduction of n >= 1 values, in order (fp32 accumulator). */
static float reduce_f32(isa_alu_t op, const float *a, size_t n)
{
    float r = a[0];
#define RED_F(E)                                                                                   \
    for (size_t i = 1; i < n; i++) {                                                               \
        const float x = r, y = a[i];                                                               \
        r = (E);                                                                                   \
    }
    switch (op) {
        F32_CASES(RED_F)
    }
#undef RED_F
    return r;
}

static int64_t reduce_i64(isa_alu_t op, const int64_t *a, size_t n)
{
    int64_t r = a[0];
#define RED_I(E)                                                                                   \
    for (size_t i = 1; i < n; i++) {                                                               \
        const int64_t x = r, y = a[i];                                                             \
        r = (E);                                                                                   \
    }
    switch (op) {
        I64_CASES(RED_I)
    }
#undef RED_I
    return r;
}

ncsim_status_t exec_tensor_reduce(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_RED_D, 0}, {SLOT_RED_SRC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    isa_alu_t op = ISA_ALU_ADD; /* set by get_alu; initialised for -Wmaybe-uninitialized */
    ncsim_status_t st;
    if ((st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv)) != NCSIM_OK ||
        (st = get_alu(x, SLOT_RED_OP, 1, &op)) != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const unsigned ndims = src->ndims ? src->ndims : 1;
    const int64_t axes = x->args[SLOT_RED_AXES].present ? x->args[SLOT_RED_AXES].v.i : 0;
    if (axes < 1 || axes > (int64_t)ndims)
        return exec_fail(x, "axes=%" PRId64 " but SRC has %u free dim%s (axes must be 1..%u)", axes,
                         ndims, ndims == 1 ? "" : "s", ndims);
    size_t inner = 1;
    for (unsigned i = ndims - (unsigned)axes; i < src->ndims; i++)
        inner *= src->count[i];
    const size_t f = (size_t)isa_view_free_elems(src), outer = f / inner;
    const uint32_t pc = src->pcount;
    if (d->pcount != pc || isa_view_free_elems(d) != outer)
        return exec_fail(x,
                         "D has %u partitions x %" PRIu64 " elements; reducing the innermost "
                         "%" PRId64 " dim%s of SRC leaves %u partitions x %zu elements",
                         d->pcount, isa_view_free_elems(d), axes, axes == 1 ? "" : "s", pc, outer);
    const int negate = exec_flag(x, SLOT_RED_NEGATE);
    const size_t n = f * pc, m = outer * pc;
    if (exec_alu_is_bitwise(op)) {
        if ((st = exec_need_int(x, SLOT_RED_SRC, src, op)) != NCSIM_OK)
            return st;
        int64_t *v = exec_scratch_i64(x, 0, n), *r = exec_scratch_i64(x, 1, m);
        if (!v || !r)
            return exec_nomem(x);
        exec_read_i64(x, src, v);
        for (size_t j = 0; j < m; j++) {
            int64_t t = reduce_i64(op, v + j * inner, inner);
            r[j] = negate ? (int64_t)(0 - (uint64_t)t) : t;
        }
        return write_int_result(x, d, r, m);
    }
    float *v = exec_scratch(x, 0, n), *r = exec_scratch(x, 1, m);
    if (!v || !r)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    for (size_t j = 0; j < m; j++) {
        float t = reduce_f32(op, v + j * inner, inner);
        r[j] = negate ? -t : t;
    }
    return exec_write_f32(x, d, r);
}

/* ---- partition_reduce ---------------------------------------------------------------------------
 */

ncsim_status_t exec_partition_reduce(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_PR_D, 0}, {SLOT_PR_SRC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    isa_alu_t op = ISA_ALU_ADD; /* set by get_alu; initialised for -Wmaybe-uninitialized */
    ncsim_status_t st;
    if ((st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv)) != NCSIM_OK ||
        (st = get_alu(x, SLOT_PR_OP, 1, &op)) != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    if (op != ISA_ALU_ADD && op != ISA_ALU_MAX && op != ISA_ALU_BITWISE_AND &&
        op != ISA_ALU_BITWISE_OR)
        return exec_fail(x,
                         "%s is not a partition_reduce operator (add, max, bitwise_and, "
                         "bitwise_or)",
                         isa_alu_name(op));
    const size_t f = (size_t)isa_view_free_elems(src);
    if (d->pcount != 1 || isa_view_free_elems(d) != f)
        return exec_fail(x,
                         "D has %u partitions x %" PRIu64 " elements; it must be [1, %zu] (one "
                         "partition, SRC's free size)",
                         d->pcount, isa_view_free_elems(d), f);
    const uint32_t pc = src->pcount;
    if (exec_alu_is_bitwise(op)) {
        if ((st = exec_need_int(x, SLOT_PR_SRC, src, op)) != NCSIM_OK)
            return st;
        int64_t *v = exec_scratch_i64(x, 0, f * pc);
        if (!v)
            return exec_nomem(x);
        exec_read_i64(x, src, v);
        for (uint32_t p = 1; p < pc; p++)
            exec_alu_vv_i64(op, v, v, v + (size_t)p * f, f);
        return write_int_result(x, d, v, f);
    }
    float *v = exec_scratch(x, 0, f * pc);
    if (!v)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    for (uint32_t p = 1; p < pc; p++)
        exec_alu_vv_f32(op, v, v, v + (size_t)p * f, f);
    return exec_write_f32(x, d, v);
}
