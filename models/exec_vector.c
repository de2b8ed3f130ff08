/*
 * exec_vector.c -- the scalar-engine activation and the vector / GpSimd instructions that are
 * not plain ALU maps: tensor_copy, memset, select, reciprocal, bn_stats, bn_aggr, transpose
 * (dve), shuffle, max8, find_index8, match_replace8, dropout, iota, affine_select.
 *
 * Copies between two integer types go through int64 (exact); everything else through fp32,
 * as ISA.md 3 says the engines compute. Exact choices are in docs/semantics.md.
 */
#include "exec_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Copy-like instructions move integers exactly when both ends are integer types. */
static int int_domain(const isa_view_t *src, const isa_view_t *d)
{
    return !isa_dtype_is_float((isa_dtype_t)src->dtype) &&
           !isa_dtype_is_float((isa_dtype_t)d->dtype);
}

/* A [pcount, 1] view in a view slot (bias, sum=, sumacc=). */
static ncsim_status_t need_column(exec_ctx_t *x, unsigned slot, const isa_view_t *v,
                                  uint32_t pcount)
{
    if (v->pcount == pcount && isa_view_free_elems(v) == 1)
        return NCSIM_OK;
    return exec_fail(x,
                     "%s must be a [%u, 1] per-partition vector, but it has %u partitions x "
                     "%" PRIu64 " elements",
                     exec_slot_name(x, slot), pcount, v->pcount, isa_view_free_elems(v));
}

/* ---- activate ----------------------------------------------------------------------------------
 */

static inline float sigmoid_f(float t)
{
    return 1.0f / (1.0f + expf(-t));
}

/* log(1 + e^t) without overflow for large t. */
static inline float softplus_f(float t)
{
    return fmaxf(t, 0.0f) + log1pf(expf(-fabsf(t)));
}

/* The functions of language.md 7.2, in fp32 with the C library's float functions. */
static void apply_func(isa_func_t fn, float *v, size_t n)
{
#define MAP(E)                                                                                     \
    for (size_t i = 0; i < n; i++) {                                                               \
        const float t = v[i];                                                                      \
        v[i] = (E);                                                                                \
    }                                                                                              \
    break
    switch (fn) {
    case ISA_FUNC_IDENTITY:
    case ISA_FUNC_COPY:
    case ISA_FUNC_COUNT:
        break;
    case ISA_FUNC_SQUARE:
        MAP(t * t);
    case ISA_FUNC_SIGMOID:
        MAP(sigmoid_f(t));
    case ISA_FUNC_RELU:
        MAP((t > 0.0f || t != t) ? t : 0.0f);
    case ISA_FUNC_GELU:
        MAP(0.5f * t * (1.0f + erff(t * 0.70710678118654752f)));
    case ISA_FUNC_GELU_TANH:
        MAP(0.5f * t * (1.0f + tanhf(0.79788456080286536f * (t + 0.044715f * t * t * t))));
    case ISA_FUNC_GELU_SIGMOID:
        MAP(t * sigmoid_f(1.702f * t));
    case ISA_FUNC_SILU:
        MAP(t * sigmoid_f(t));
    case ISA_FUNC_TANH:
        MAP(tanhf(t));
    case ISA_FUNC_SOFTPLUS:
        MAP(softplus_f(t));
    case ISA_FUNC_MISH:
        MAP(t * tanhf(softplus_f(t)));
    case ISA_FUNC_ERF:
        MAP(erff(t));
    case ISA_FUNC_EXP:
        MAP(expf(t));
    case ISA_FUNC_LOG:
        MAP(logf(t));
    case ISA_FUNC_SQRT:
        MAP(sqrtf(t));
    case ISA_FUNC_RSQRT:
        MAP(1.0f / sqrtf(t));
    case ISA_FUNC_RECIPROCAL:
        MAP(1.0f / t);
    case ISA_FUNC_SIGN:
        MAP(t > 0.0f ? 1.0f : t < 0.0f ? -1.0f : t);
    case ISA_FUNC_ABS:
        MAP(fabsf(t));
    case ISA_FUNC_SIN:
        MAP(sinf(t));
    case ISA_FUNC_ARCTAN:
        MAP(atanf(t));
    /* the derivatives of gelu (erf form), silu and erf */
    case ISA_FUNC_GELU_DX:
        MAP(0.5f * (1.0f + erff(t * 0.70710678118654752f)) +
            t * 0.39894228040143268f * expf(-0.5f * t * t));
    case ISA_FUNC_SILU_DX:
        MAP(sigmoid_f(t) * (1.0f + t * (1.0f - sigmoid_f(t))));
    case ISA_FUNC_ERF_DX:
        MAP(1.12837916709551257f * expf(-t * t));
    }
#undef MAP
}

ncsim_status_t exec_activate(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_ACT_D, 0},
                                         {SLOT_ACT_SRC, EXEC_LIKE_FIRST},
                                         {SLOT_ACT_BIAS, 0},
                                         {SLOT_ACT_SUM, 0},
                                         {SLOT_ACT_SUMACC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1], *bias = opv[2], *sum = opv[3], *sumacc = opv[4];
    const int64_t fn = x->args[SLOT_ACT_FUNC].v.i;
    if (!x->args[SLOT_ACT_FUNC].present || fn < 0 || fn >= ISA_FUNC_COUNT)
        return exec_fail(x, "FUNC: invalid activation function %" PRId64, fn);
    const uint32_t pc = src->pcount;
    const size_t f = (size_t)isa_view_free_elems(src), n = f * pc;
    exec_scalar_t scale;
    if ((st = exec_scalar(x, SLOT_ACT_SCALE, pc, 1.0, 0, ISA_ALU_MULTIPLY, 0, &scale)) != NCSIM_OK)
        return st;
    const float *bv = NULL;
    if (bias) {
        if ((st = need_column(x, SLOT_ACT_BIAS, bias, pc)) != NCSIM_OK)
            return st;
        float *b = exec_small(x, 1);
        if (!b)
            return exec_nomem(x);
        exec_read_f32(x, bias, b);
        bv = b;
    }
    if (sum && sumacc)
        return exec_fail(x, "sum= and sumacc= are exclusive");
    const isa_view_t *r = sum ? sum : sumacc;
    const unsigned rslot = sum ? SLOT_ACT_SUM : SLOT_ACT_SUMACC;
    if (r && ((st = need_column(x, rslot, r, pc)) != NCSIM_OK ||
              (st = exec_need_dtype(x, rslot, r, ISA_DT_FP32)) != NCSIM_OK))
        return st;

    float *v = exec_scratch(x, 0, n);
    if (!v)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    const int scaled = x->args[SLOT_ACT_SCALE].present;
    for (uint32_t p = 0; (scaled || bv) && p < pc; p++) {
        float *row = v + (size_t)p * f;
        const float sc = exec_scalar_f(&scale, p), b = bv ? bv[p] : 0.0f;
        if (scaled && bv)
            for (size_t i = 0; i < f; i++)
                row[i] = row[i] * sc + b;
        else if (scaled)
            for (size_t i = 0; i < f; i++)
                row[i] *= sc;
        else
            for (size_t i = 0; i < f; i++)
                row[i] += b;
    }
    apply_func((isa_func_t)fn, v, n);
    if (!r)
        return exec_write_f32(x, d, v);

    /* sum=/sumacc= add the values as written to D: round in place first, so the write below
     * stores them unchanged and the sums see exactly D's contents. */
    const isa_dtype_t dt = (isa_dtype_t)d->dtype;
    if (dt != ISA_DT_FP32)
        for (size_t i = 0; i < n; i++)
            v[i] = mdl_round_f32(dt, v[i], x->s->rounding, x->rng);
    float *acc = exec_small(x, 2);
    if (!acc)
        return exec_nomem(x);
    if (sumacc)
        exec_read_f32(x, sumacc, acc);
    for (uint32_t p = 0; p < pc; p++) {
        const float *row = v + (size_t)p * f;
        float s = 0.0f;
        for (size_t i = 0; i < f; i++)
            s += row[i];
        acc[p] = sumacc ? acc[p] + s : s;
    }
    if ((st = exec_write_f32(x, d, v)) != NCSIM_OK)
        return st;
    return exec_write_f32(x, r, acc);
}

/* ---- tensor_copy, memset, reciprocal ----------------------------------------------------------
 */

/* D = SRC converted; shapes already checked. */
static ncsim_status_t copy_view(exec_ctx_t *x, const isa_view_t *d, const isa_view_t *src)
{
    const size_t n = (size_t)isa_view_elems(src);
    if (int_domain(src, d)) {
        int64_t *v = exec_scratch_i64(x, 0, n);
        if (!v)
            return exec_nomem(x);
        exec_read_i64(x, src, v);
        return exec_write_i64(x, d, v);
    }
    float *v = exec_scratch(x, 0, n);
    if (!v)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    return exec_write_f32(x, d, v);
}

ncsim_status_t exec_tensor_copy(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_CP_D, 0}, {SLOT_CP_SRC, EXEC_LIKE_FIRST}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    return copy_view(x, d, src);
}

ncsim_status_t exec_memset(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_MS_D, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0];
    if (!x->args[SLOT_MS_VALUE].present)
        return exec_fail(x, "missing VALUE");
    const double value = x->args[SLOT_MS_VALUE].v.f;
    const size_t n = (size_t)isa_view_elems(d);
    if (!isa_dtype_is_float((isa_dtype_t)d->dtype) && value >= -9223372036854775808.0 &&
        value < 9223372036854775808.0 && (double)(int64_t)value == value) {
        /* Integral value into an integer type: exact (saturating), not through fp32. */
        int64_t *v = exec_scratch_i64(x, 0, n);
        if (!v)
            return exec_nomem(x);
        for (size_t i = 0; i < n; i++)
            v[i] = (int64_t)value;
        return exec_write_i64(x, d, v);
    }
    float *v = exec_scratch(x, 0, n);
    if (!v)
        return exec_nomem(x);
    const float fv = (float)value;
    for (size_t i = 0; i < n; i++)
        v[i] = fv;
    return exec_write_f32(x, d, v);
}

ncsim_status_t exec_reciprocal(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_UN_D, 0}, {SLOT_UN_SRC, EXEC_LIKE_FIRST}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const size_t n = (size_t)isa_view_elems(src);
    float *v = exec_scratch(x, 0, n);
    if (!v)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    for (size_t i = 0; i < n; i++)
        v[i] = 1.0f / v[i];
    return exec_write_f32(x, d, v);
}

/* ---- select ------------------------------------------------------------------------------------
 */

ncsim_status_t exec_select(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_SEL_D, 0},
                                         {SLOT_SEL_PRED, EXEC_LIKE_FIRST},
                                         {SLOT_SEL_A, EXEC_LIKE_FIRST | EXEC_ONE_PSUM}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *pred = opv[1], *a = opv[2];
    const int reverse = exec_flag(x, SLOT_SEL_REVERSE);
    const size_t n = (size_t)isa_view_elems(d);
    float *pv = exec_scratch(x, 0, n);
    if (!pv)
        return exec_nomem(x);
    exec_read_f32(x, pred, pv); /* nonzero survives the widening of every type */
    if (!isa_dtype_is_float((isa_dtype_t)d->dtype)) {
        /* Integer D: keep unselected elements exact; A converts as a store would. */
        int64_t *dv = exec_scratch_i64(x, 1, n), *av = exec_scratch_i64(x, 2, n);
        if (!dv || !av)
            return exec_nomem(x);
        exec_read_i64(x, d, dv);
        exec_read_i64(x, a, av);
        for (size_t i = 0; i < n; i++)
            if ((pv[i] != 0.0f) != reverse)
                dv[i] = av[i];
        return exec_write_i64(x, d, dv);
    }
    float *dv = exec_scratch(x, 1, n), *av = exec_scratch(x, 2, n);
    if (!dv || !av)
        return exec_nomem(x);
    exec_read_f32(x, d, dv);
    exec_read_f32(x, a, av);
    for (size_t i = 0; i < n; i++)
        if ((pv[i] != 0.0f) != reverse)
            dv[i] = av[i];
    return exec_write_f32(x, d, dv);
}

/* ---- bn_stats, bn_aggr ------------------------------------------------------------------------
 */

#define BN_STATS_MAX_FREE 512u

ncsim_status_t exec_bn_stats(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_UN_D, EXEC_FP32}, {SLOT_UN_SRC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const uint32_t pc = src->pcount;
    const size_t f = (size_t)isa_view_free_elems(src);
    if (f > BN_STATS_MAX_FREE)
        return exec_fail(x, "SRC has %zu free elements; bn_stats takes at most %u", f,
                         BN_STATS_MAX_FREE);
    if ((st = exec_need_rows(x, SLOT_UN_D, d, pc, 3)) != NCSIM_OK)
        return st;
    float *v = exec_scratch(x, 0, f * pc), *out = exec_scratch(x, 1, 3 * (size_t)pc);
    if (!v || !out)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    for (uint32_t p = 0; p < pc; p++) {
        const float *row = v + (size_t)p * f;
        float s = 0.0f, m2 = 0.0f;
        for (size_t i = 0; i < f; i++)
            s += row[i];
        const float mean = s / (float)f;
        for (size_t i = 0; i < f; i++) {
            const float dlt = row[i] - mean;
            m2 += dlt * dlt;
        }
        out[3 * p] = (float)f;
        out[3 * p + 1] = mean;
        out[3 * p + 2] = m2;
    }
    return exec_write_f32(x, d, out);
}

ncsim_status_t exec_bn_aggr(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_UN_D, EXEC_FP32}, {SLOT_UN_SRC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const uint32_t pc = src->pcount;
    const size_t f = (size_t)isa_view_free_elems(src);
    if (f % 3 != 0)
        return exec_fail(x, "SRC has %zu free elements; bn_aggr takes (count, mean, m2) triples",
                         f);
    if ((st = exec_need_rows(x, SLOT_UN_D, d, pc, 2)) != NCSIM_OK)
        return st;
    float *v = exec_scratch(x, 0, f * pc), *out = exec_scratch(x, 1, 2 * (size_t)pc);
    if (!v || !out)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    for (uint32_t p = 0; p < pc; p++) {
        const float *t = v + (size_t)p * f;
        float n = 0.0f, mean = 0.0f, m2 = 0.0f;
        for (size_t j = 0; j < f; j += 3) {
            const float nb = t[j], mb = t[j + 1], m2b = t[j + 2];
            if (!(nb > 0.0f))
                continue; /* empty (or invalid) groups contribute nothing */
            if (n == 0.0f) {
                n = nb;
                mean = mb;
                m2 = m2b;
                continue;
            }
            /* Chan, Golub and LeVeque's pairwise combination. */
            const float nt = n + nb, delta = mb - mean;
            mean += delta * (nb / nt);
            m2 += m2b + delta * delta * (n * (nb / nt));
            n = nt;
        }
        out[2 * p] = n > 0.0f ? mean : NAN;
        out[2 * p + 1] = n > 0.0f ? m2 / n : NAN;
    }
    return exec_write_f32(x, d, out);
}

/* ---- transpose (dve), shuffle -------------------------------------------------------------------
 */

#define DVE_TRANSPOSE_MAX 32u

ncsim_status_t exec_transpose_dve(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_TR_D, 0}, {SLOT_TR_SRC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const uint32_t p = src->pcount;
    const size_t f = (size_t)isa_view_free_elems(src);
    if (p > DVE_TRANSPOSE_MAX || f > DVE_TRANSPOSE_MAX)
        return exec_fail(x, "SRC is [%u, %zu]; transpose on dve takes at most [%u, %u]", p, f,
                         DVE_TRANSPOSE_MAX, DVE_TRANSPOSE_MAX);
    if (d->pcount != f || isa_view_free_elems(d) != p)
        return exec_fail(x,
                         "D has %u partitions x %" PRIu64 " elements; the transpose of SRC [%u, "
                         "%zu] needs %zu partitions x %u elements",
                         d->pcount, isa_view_free_elems(d), p, f, f, p);
    const size_t n = (size_t)p * f;
    if (int_domain(src, d)) {
        int64_t *a = exec_scratch_i64(x, 0, n), *t = exec_scratch_i64(x, 1, n);
        if (!a || !t)
            return exec_nomem(x);
        exec_read_i64(x, src, a);
        for (uint32_t i = 0; i < p; i++)
            for (size_t j = 0; j < f; j++)
                t[j * p + i] = a[i * f + j];
        return exec_write_i64(x, d, t);
    }
    float *a = exec_scratch(x, 0, n), *t = exec_scratch(x, 1, n);
    if (!a || !t)
        return exec_nomem(x);
    exec_read_f32(x, src, a);
    for (uint32_t i = 0; i < p; i++)
        for (size_t j = 0; j < f; j++)
            t[j * p + i] = a[i * f + j];
    return exec_write_f32(x, d, t);
}

#define SHUFFLE_QUADRANT 32u
#define SHUFFLE_KEEP 255

ncsim_status_t exec_shuffle(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_SHUF_D, 0}, {SLOT_SHUF_SRC, EXEC_LIKE_FIRST}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const isa_arg_t *ma = &x->args[SLOT_SHUF_MASK];
    if (!ma->present || ma->count != SHUFFLE_QUADRANT ||
        (uint64_t)ma->index + ma->count > x->prog->nints)
        return exec_fail(x, "mask must list %u partitions (it has %u)", SHUFFLE_QUADRANT,
                         ma->present ? ma->count : 0);
    const int64_t *mask = &x->prog->ints[ma->index];
    for (unsigned i = 0; i < SHUFFLE_QUADRANT; i++)
        if (mask[i] != SHUFFLE_KEEP && (mask[i] < 0 || mask[i] >= (int64_t)SHUFFLE_QUADRANT))
            return exec_fail(x, "mask[%u] = %" PRId64 " is neither a partition 0..31 nor 255", i,
                             mask[i]);
    const uint32_t pc = src->pcount;
    for (uint32_t base = 0; base < pc; base += SHUFFLE_QUADRANT) {
        const uint32_t qn = pc - base < SHUFFLE_QUADRANT ? pc - base : SHUFFLE_QUADRANT;
        for (uint32_t i = 0; i < qn; i++)
            if (mask[i] != SHUFFLE_KEEP && mask[i] >= (int64_t)qn)
                return exec_fail(x,
                                 "mask[%u] = %" PRId64 " selects a partition beyond the %u of "
                                 "the view's quadrant %u",
                                 i, mask[i], qn, base / SHUFFLE_QUADRANT);
    }
    const size_t f = (size_t)isa_view_free_elems(src), n = f * pc;
    const int integer = int_domain(src, d);
    float *fv = integer ? NULL : exec_scratch(x, 0, n);
    int64_t *iv = integer ? exec_scratch_i64(x, 0, n) : NULL;
    if (!fv && !iv)
        return exec_nomem(x);
    if (integer)
        exec_read_i64(x, src, iv);
    else
        exec_read_f32(x, src, fv);
    /* Partition by partition, so that partitions with mask 255 are not touched at all. */
    for (uint32_t base = 0; base < pc; base += SHUFFLE_QUADRANT) {
        const uint32_t qn = pc - base < SHUFFLE_QUADRANT ? pc - base : SHUFFLE_QUADRANT;
        for (uint32_t i = 0; i < qn; i++) {
            if (mask[i] == SHUFFLE_KEEP)
                continue;
            const isa_view_t row = exec_subview_partitions(d, base + i, 1);
            const size_t from = (size_t)(base + (uint32_t)mask[i]) * f;
            st = integer ? exec_write_i64(x, &row, iv + from) : exec_write_f32(x, &row, fv + from);
            if (st != NCSIM_OK)
                return st;
        }
    }
    return NCSIM_OK;
}

/* ---- max8, find_index8, match_replace8 ------------------------------------------------------- */

#define MAX8_MIN_FREE 8u
#define MAX8_MAX_FREE 16384u

/* Order of max8: NaN above everything, then numeric order. */
static inline int above(float a, float b)
{
    return (a != a && b == b) || a > b;
}

ncsim_status_t exec_max8(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_UN_D, 0}, {SLOT_UN_SRC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const uint32_t pc = src->pcount;
    const size_t f = (size_t)isa_view_free_elems(src);
    if (f < MAX8_MIN_FREE || f > MAX8_MAX_FREE)
        return exec_fail(x, "SRC has %zu free elements; max8 takes %u..%u", f, MAX8_MIN_FREE,
                         MAX8_MAX_FREE);
    if ((st = exec_need_rows(x, SLOT_UN_D, d, pc, 8)) != NCSIM_OK)
        return st;
    float *v = exec_scratch(x, 0, f * pc), *out = exec_scratch(x, 1, 8 * (size_t)pc);
    if (!v || !out)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    for (uint32_t p = 0; p < pc; p++) {
        const float *row = v + (size_t)p * f;
        float *top = out + 8 * (size_t)p;
        unsigned k = 0;
        for (size_t i = 0; i < f; i++) {
            const float e = row[i];
            if (k == 8 && !above(e, top[7]))
                continue;
            unsigned j = k < 8 ? k++ : 7;
            while (j > 0 && above(e, top[j - 1])) {
                top[j] = top[j - 1];
                j--;
            }
            top[j] = e;
        }
    }
    return exec_write_f32(x, d, out);
}

/* VALS of find_index8 / match_replace8: [P, 8], read as fp32. */
static ncsim_status_t get_vals(exec_ctx_t *x, unsigned slot, uint32_t pc, float **out)
{
    const exec_operand_t ops[] = {{(uint8_t)slot, 0}};
    const isa_view_t *opv[1];
    ncsim_status_t st = exec_operands(x, ops, 1, opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *vals = opv[0];
    if ((st = exec_need_rows(x, slot, vals, pc, 8)) != NCSIM_OK)
        return st;
    *out = exec_scratch(x, 1, 8 * (size_t)pc);
    if (!*out)
        return exec_nomem(x);
    exec_read_f32(x, vals, *out);
    return NCSIM_OK;
}

#define FIND_INDEX8_NONE 0xffffffffu

ncsim_status_t exec_find_index8(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_FI8_D, 0}, {SLOT_FI8_SRC, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    if (d->dtype != ISA_DT_U32 && d->dtype != ISA_DT_I32)
        return exec_fail(x, "D has type %s; find_index8 writes u32 (or i32) indices",
                         isa_dtype_name((isa_dtype_t)d->dtype));
    const uint32_t pc = src->pcount;
    const size_t f = (size_t)isa_view_free_elems(src);
    if (f > MAX8_MAX_FREE)
        return exec_fail(x, "SRC has %zu free elements; find_index8 takes at most %u", f,
                         MAX8_MAX_FREE);
    if ((st = exec_need_rows(x, SLOT_FI8_D, d, pc, 8)) != NCSIM_OK)
        return st;
    float *vals;
    if ((st = get_vals(x, SLOT_FI8_VALS, pc, &vals)) != NCSIM_OK)
        return st;
    float *v = exec_scratch(x, 0, f * pc);
    int64_t *out = exec_scratch_i64(x, 2, 8 * (size_t)pc);
    if (!v || !out)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    for (uint32_t p = 0; p < pc; p++) {
        const float *row = v + (size_t)p * f, *want = vals + 8 * (size_t)p;
        int64_t *idx = out + 8 * (size_t)p;
        unsigned left = 8;
        for (unsigned j = 0; j < 8; j++)
            idx[j] = -1;
        for (size_t i = 0; i < f && left; i++)
            for (unsigned j = 0; j < 8; j++)
                if (idx[j] < 0 && row[i] == want[j]) {
                    idx[j] = (int64_t)i;
                    left--;
                }
        for (unsigned j = 0; j < 8; j++)
            idx[j] = exec_wrap_i64((isa_dtype_t)d->dtype, idx[j] < 0 ? FIND_INDEX8_NONE : idx[j]);
    }
    return exec_write_i64(x, d, out);
}

ncsim_status_t exec_match_replace8(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_MR8_D, 0}, {SLOT_MR8_SRC, EXEC_LIKE_FIRST}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    if (!x->args[SLOT_MR8_IMM].present)
        return exec_fail(x, "missing IMM");
    const uint32_t pc = src->pcount;
    const size_t f = (size_t)isa_view_free_elems(src);
    if (f > MAX8_MAX_FREE)
        return exec_fail(x, "SRC has %zu free elements; match_replace8 takes at most %u", f,
                         MAX8_MAX_FREE);
    float *vals;
    if ((st = get_vals(x, SLOT_MR8_VALS, pc, &vals)) != NCSIM_OK)
        return st;
    float *v = exec_scratch(x, 0, f * pc);
    if (!v)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    const float imm = (float)x->args[SLOT_MR8_IMM].v.f;
    for (uint32_t p = 0; p < pc; p++) {
        float *row = v + (size_t)p * f;
        const float *want = vals + 8 * (size_t)p;
        /* In order j = 0..7, each on the row as already replaced: duplicated values in VALS
         * replace successive occurrences (the top-k idiom max8 -> match_replace8). */
        for (unsigned j = 0; j < 8; j++)
            for (size_t i = 0; i < f; i++)
                if (row[i] == want[j]) {
                    row[i] = imm;
                    break;
                }
    }
    return exec_write_f32(x, d, v);
}

/* ---- dropout -----------------------------------------------------------------------------------
 */

ncsim_status_t exec_dropout(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_DROP_D, 0}, {SLOT_DROP_SRC, EXEC_LIKE_FIRST}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    if (!x->args[SLOT_DROP_PROB].present)
        return exec_fail(x, "missing prob=");
    const uint32_t pc = src->pcount;
    exec_scalar_t prob;
    if ((st = exec_scalar(x, SLOT_DROP_PROB, pc, 0.0, 0, ISA_ALU_MULTIPLY, 0, &prob)) != NCSIM_OK)
        return st;
    const size_t f = (size_t)isa_view_free_elems(src), n = f * pc;
    const int integer = int_domain(src, d);
    float *fv = integer ? NULL : exec_scratch(x, 0, n);
    int64_t *iv = integer ? exec_scratch_i64(x, 0, n) : NULL;
    if (!fv && !iv)
        return exec_nomem(x);
    if (integer)
        exec_read_i64(x, src, iv);
    else
        exec_read_f32(x, src, fv);
    /* One draw per element in row-major order, whatever the probability. */
    for (uint32_t p = 0; p < pc; p++) {
        const float pr = exec_scalar_f(&prob, p);
        for (size_t i = (size_t)p * f; i < (size_t)(p + 1) * f; i++)
            if (mdl_rng_float(x->rng) < pr) {
                if (integer)
                    iv[i] = 0;
                else
                    fv[i] = 0.0f;
            }
    }
    return integer ? exec_write_i64(x, d, iv) : exec_write_f32(x, d, fv);
}

/* ---- iota, affine_select
 * ------------------------------------------------------------------------- */

/*
 * v = base + pstep * p + sum steps[k] * i_k over the elements of d in row-major order, with p
 * the partition index relative to d's first partition and i_k the index along d's free dim k;
 * int32 arithmetic (wrapping), returned sign-extended.
 */
static ncsim_status_t affine_values(exec_ctx_t *x, const isa_view_t *d, unsigned sbase,
                                    unsigned spstep, unsigned ssteps, int64_t *out)
{
    if (!x->args[sbase].present)
        return exec_fail(x, "missing base=");
    const uint64_t base = (uint64_t)x->args[sbase].v.i;
    const uint64_t pstep = x->args[spstep].present ? (uint64_t)x->args[spstep].v.i : 0;
    uint64_t steps[ISA_MAX_FREE_DIMS] = {0};
    const isa_arg_t *sa = &x->args[ssteps];
    if (sa->present) {
        if (sa->count != d->ndims || (uint64_t)sa->index + sa->count > x->prog->nints)
            return exec_fail(x, "steps has %u entr%s but D has %u free dim%s", sa->count,
                             sa->count == 1 ? "y" : "ies", d->ndims, d->ndims == 1 ? "" : "s");
        for (unsigned k = 0; k < sa->count; k++)
            steps[k] = (uint64_t)x->prog->ints[sa->index + k];
    }
    const unsigned nd = d->ndims;
    size_t o = 0;
    for (uint32_t p = 0; p < d->pcount; p++) {
        uint32_t idx[ISA_MAX_FREE_DIMS] = {0};
        const uint64_t row = base + pstep * p;
        for (;;) {
            uint64_t v = row;
            for (unsigned k = 0; k < nd; k++)
                v += steps[k] * idx[k];
            out[o++] = (int32_t)(uint32_t)v;
            unsigned k = nd;
            while (k > 0 && ++idx[k - 1] == d->count[k - 1])
                idx[--k] = 0;
            if (k == 0)
                break;
        }
    }
    return NCSIM_OK;
}

ncsim_status_t exec_iota(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_IOTA_D, 0}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0];
    int64_t *v = exec_scratch_i64(x, 0, (size_t)isa_view_elems(d));
    if (!v)
        return exec_nomem(x);
    if ((st = affine_values(x, d, SLOT_IOTA_BASE, SLOT_IOTA_PSTEP, SLOT_IOTA_STEPS, v)) != NCSIM_OK)
        return st;
    return exec_write_i64(x, d,
                          v); /* int32 values: exact or saturating for integer D, RNE for float */
}

ncsim_status_t exec_affine_select(exec_ctx_t *x)
{
    static const exec_operand_t ops[] = {{SLOT_AS_D, 0}, {SLOT_AS_SRC, EXEC_LIKE_FIRST}};
    const isa_view_t *opv[EXEC_NOPERANDS(ops)];
    ncsim_status_t st = exec_operands(x, ops, EXEC_NOPERANDS(ops), opv);
    if (st != NCSIM_OK)
        return st;
    const isa_view_t *d = opv[0], *src = opv[1];
    const int64_t cmp = x->args[SLOT_AS_CMP].v.i;
    if (!x->args[SLOT_AS_CMP].present || cmp < 0 || cmp >= ISA_CMP_COUNT)
        return exec_fail(x, "cmp: invalid comparison %" PRId64, cmp);
    if (!x->args[SLOT_AS_FILL].present)
        return exec_fail(x, "missing fill=");
    const double fill = x->args[SLOT_AS_FILL].v.f;
    const size_t n = (size_t)isa_view_elems(d);
    int64_t *av = exec_scratch_i64(x, 2, n);
    if (!av)
        return exec_nomem(x);
    if ((st = affine_values(x, d, SLOT_AS_BASE, SLOT_AS_PSTEP, SLOT_AS_STEPS, av)) != NCSIM_OK)
        return st;
        /* Turn av into the condition, one loop per comparison. */
#define COND(E)                                                                                    \
    for (size_t i = 0; i < n; i++) {                                                               \
        const int64_t t = av[i];                                                                   \
        av[i] = (E);                                                                               \
    }                                                                                              \
    break
    switch ((isa_cmp_t)cmp) {
    case ISA_CMP_GE:
        COND(t >= 0);
    case ISA_CMP_GT:
        COND(t > 0);
    case ISA_CMP_LE:
        COND(t <= 0);
    case ISA_CMP_LT:
        COND(t < 0);
    case ISA_CMP_EQ:
        COND(t == 0);
    case ISA_CMP_NE:
        COND(t != 0);
    case ISA_CMP_COUNT:
        break;
    }
#undef COND
    if (int_domain(src, d)) {
        int64_t *v = exec_scratch_i64(x, 0, n);
        if (!v)
            return exec_nomem(x);
        exec_read_i64(x, src, v);
        /* fill as a store converts it: RNE, saturating (NaN -> 0). */
        const int64_t fi = fill != fill                    ? 0
                           : fill >= 9223372036854775808.0 ? INT64_MAX
                           : fill < -9223372036854775808.0 ? INT64_MIN
                                                           : (int64_t)nearbyint(fill);
        for (size_t i = 0; i < n; i++)
            if (!av[i])
                v[i] = fi;
        return exec_write_i64(x, d, v);
    }
    float *v = exec_scratch(x, 0, n);
    if (!v)
        return exec_nomem(x);
    exec_read_f32(x, src, v);
    const float ff = (float)fill;
    for (size_t i = 0; i < n; i++)
        if (!av[i])
            v[i] = ff;
    return exec_write_f32(x, d, v);
}
