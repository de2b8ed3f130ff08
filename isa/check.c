/*
 * check.c -- static checks of instructions and programs (ISA.md sections 1, 5, 6, 7, 9).
 *
 * The same function judges what the assembler emits and what the loader decodes, so a
 * hand-made binary is held to the same rules as assembled text. Checks that need run-time
 * state (the K and M of the loaded weights, PSUM accumulation history) happen in models/.
 */
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_SLOT (ISA_MAX_SLOTS + 1)
#define VIEW_MAX_STRIDE (1ll << 40) /* elements */
#define VIEW_MAX_OFFSET (1ull << 48) /* bytes */

static int __attribute__((format(printf, 4, 5))) fail(char *msg, size_t n, int slot,
                                                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
    return slot;
}

static const char *space_name(int s)
{
    return s == ISA_SPACE_SBUF ? "SBUF" : s == ISA_SPACE_PSUM ? "PSUM" : "HBM";
}

int isa_check_view(const isa_view_t *v, const isa_geometry_t *g, char *msg, size_t msglen)
{
    if (v->space >= ISA_SPACE_COUNT)
        return fail(msg, msglen, 1, "bad memory space %u", v->space);
    if (v->dtype >= ISA_DT_COUNT)
        return fail(msg, msglen, 1, "bad data type %u", v->dtype);
    int onchip = v->space != ISA_SPACE_HBM;
    unsigned maxd = onchip ? ISA_MAX_FREE_DIMS : ISA_MAX_HBM_DIMS;
    if (v->ndims > maxd)
        return fail(msg, msglen, 1, "%s view has %u dimensions (at most %u)",
                    space_name(v->space), v->ndims, maxd);
    for (unsigned d = 0; d < v->ndims; d++) {
        if (v->count[d] < 1 || v->count[d] > ISA_MAX_COUNT)
            return fail(msg, msglen, 1, "dimension %u count %u out of range 1..%d", d,
                        v->count[d], ISA_MAX_COUNT);
        /* bounds far beyond any memory that keep the byte-range arithmetic below from
         * overflowing on a hand-made binary */
        if (v->stride[d] < -VIEW_MAX_STRIDE || v->stride[d] > VIEW_MAX_STRIDE)
            return fail(msg, msglen, 1, "dimension %u stride %lld out of range", d,
                        (long long)v->stride[d]);
    }
    if (v->offset > VIEW_MAX_OFFSET)
        return fail(msg, msglen, 1, "%s view offset 0x%llx out of range", space_name(v->space),
                    (unsigned long long)v->offset);
    int64_t lo, hi;
    isa_view_byte_range(v, &lo, &hi);
    if (onchip) {
        uint64_t P = v->pcount, ps = v->pstart;
        if (P < 1 || ps + P > g->partitions)
            return fail(msg, msglen, 1, "%s partitions %llu..%llu out of range 0..%u",
                        space_name(v->space), (unsigned long long)ps,
                        (unsigned long long)(ps + P - 1), g->partitions - 1);
        if ((P > 64 && ps != 0) || (P > 32 && P <= 64 && ps % 64) || (P <= 32 && ps % 32))
            return fail(msg, msglen, 1,
                        "a view of %llu partition%s cannot start at partition %llu (ISA.md "
                        "5.2: more than 64 start at 0; 33..64 at 0 or 64; up to 32 at 0, 32, "
                        "64 or 96)", (unsigned long long)P, P == 1 ? "" : "s",
                        (unsigned long long)ps);
        uint64_t limit = v->space == ISA_SPACE_SBUF ? g->sbuf_bytes : g->psum_bytes;
        if (lo < 0 || (uint64_t)hi > limit)
            return fail(msg, msglen, 1,
                        "%s view bytes %lld..%lld of each partition out of range (%llu bytes "
                        "per partition)", space_name(v->space), (long long)lo,
                        (long long)hi - 1, (unsigned long long)limit);
    } else if (lo < 0 || (uint64_t)hi > g->hbm_bytes) {
        return fail(msg, msglen, 1, "HBM view bytes 0x%llx..0x%llx out of range (%llu bytes)",
                    (unsigned long long)lo, (unsigned long long)hi - 1,
                    (unsigned long long)g->hbm_bytes);
    }
    return 0;
}

/* ---- helpers over operand slots ------------------------------------------------------------------- */

typedef struct ctx {
    const isa_program_t *p;
    const isa_instr_t *in;
    const isa_op_info_t *info;
    const isa_arg_t *a;
    char *msg;
    size_t n;
} ctx_t;

static const isa_view_t *view_of(const ctx_t *c, int slot)
{
    if (slot < 0 || slot >= c->info->nslots)
        return NULL;
    const isa_arg_t *a = &c->a[slot];
    return a->present && a->is_view ? &c->p->views[a->index] : NULL;
}

static uint64_t free_elems(const isa_view_t *v)
{
    return isa_view_free_elems(v);
}

static int is_int_type(int dt)
{
    return !isa_dtype_is_float((isa_dtype_t)dt);
}

static int is_pe_input_type(int dt)
{
    return isa_dtype_is_float((isa_dtype_t)dt);
}

/* Element-wise compatibility (ISA.md 5.3): same partitions, same free elements. */
static int same_shape(const ctx_t *c, int d, int s)
{
    const isa_view_t *D = view_of(c, d), *S = view_of(c, s);
    if (!D || !S)
        return 0;
    if (D->pcount != S->pcount)
        return fail(c->msg, c->n, s + 1,
                    "%s has %u partitions but %s has %u (they must match)",
                    c->info->slots[s].name, S->pcount, c->info->slots[d].name, D->pcount);
    if (free_elems(D) != free_elems(S))
        return fail(c->msg, c->n, s + 1,
                    "%s has %llu elements per partition but %s has %llu (they must match)",
                    c->info->slots[s].name, (unsigned long long)free_elems(S),
                    c->info->slots[d].name, (unsigned long long)free_elems(D));
    return 0;
}

/* A scalar slot given as a view must be a [P,1] vector over D's partitions. */
static int check_scalar(const ctx_t *c, int s, int d)
{
    const isa_view_t *S = view_of(c, s), *D = view_of(c, d);
    if (!S)
        return 0;
    if (free_elems(S) != 1)
        return fail(c->msg, c->n, s + 1,
                    "%s must be an immediate or a per-partition [P,1] vector, not %llu "
                    "elements per partition", c->info->slots[s].name,
                    (unsigned long long)free_elems(S));
    if (S->space == ISA_SPACE_HBM)
        return fail(c->msg, c->n, s + 1, "%s cannot be in HBM", c->info->slots[s].name);
    if (D && S->pcount != D->pcount)
        return fail(c->msg, c->n, s + 1, "%s has %u partitions but %s has %u",
                    c->info->slots[s].name, S->pcount, c->info->slots[d].name, D->pcount);
    return 0;
}

/* Spaces an engine may touch (ISA.md 1, 7). */
static int check_spaces(const ctx_t *c)
{
    int eng = c->in->engine;
    int op = c->in->op;
    for (unsigned i = 0; i < c->info->nslots; i++) {
        const isa_view_t *v = view_of(c, (int)i);
        if (!v)
            continue;
        const char *name = c->info->slots[i].name;
        int sp = v->space;
        if (op == ISA_OP_DMA) {
            if (sp == ISA_SPACE_PSUM)
                return fail(c->msg, c->n, (int)i + 1,
                            "dma cannot access PSUM (%s); move PSUM data with an engine "
                            "instruction", name);
            continue;
        }
        if (eng == ISA_ENGINE_CC) {
            if (sp != ISA_SPACE_HBM)
                return fail(c->msg, c->n, (int)i + 1, "collective operand %s must be in HBM, "
                            "not %s", name, space_name(sp));
            continue;
        }
        if (sp == ISA_SPACE_HBM)
            return fail(c->msg, c->n, (int)i + 1,
                        "engine %s cannot access HBM (%s); use dma", isa_engine_name(
                            (isa_engine_t)eng), name);
        if (eng == ISA_ENGINE_POOL && sp == ISA_SPACE_PSUM)
            return fail(c->msg, c->n, (int)i + 1, "pool cannot access PSUM (%s)", name);
        if (eng == ISA_ENGINE_PE) {
            int is_dst = i == 0 && op != ISA_OP_LDWEIGHTS;
            if (is_dst && sp != ISA_SPACE_PSUM)
                return fail(c->msg, c->n, 1, "pe writes only PSUM: %s is in %s", name,
                            space_name(sp));
            if (!is_dst && sp != ISA_SPACE_SBUF)
                return fail(c->msg, c->n, (int)i + 1, "pe reads only SBUF: %s is in %s",
                            name, space_name(sp));
        }
    }
    /* a two-input op may not take both inputs from PSUM */
    static const struct {
        int op, a, b;
    } pairs[] = {{ISA_OP_TENSOR_TENSOR, 1, 2},   {ISA_OP_SCALAR_TENSOR_TENSOR, 1, 5},
                 {ISA_OP_TENSOR_SCAN, 1, 2},     {ISA_OP_SELECT, 1, 2},
                 {ISA_OP_FIND_INDEX8, 1, 2},     {ISA_OP_MATCH_REPLACE8, 1, 2}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        if (pairs[k].op != op)
            continue;
        const isa_view_t *A = view_of(c, pairs[k].a), *B = view_of(c, pairs[k].b);
        if (A && B && A->space == ISA_SPACE_PSUM && B->space == ISA_SPACE_PSUM)
            return fail(c->msg, c->n, pairs[k].b + 1,
                        "a two-input instruction cannot take both inputs (%s, %s) from PSUM",
                        c->info->slots[pairs[k].a].name, c->info->slots[pairs[k].b].name);
    }
    return 0;
}

static int is_bitwise(int alu)
{
    return alu == ISA_ALU_BITWISE_AND || alu == ISA_ALU_BITWISE_OR ||
           alu == ISA_ALU_BITWISE_XOR || alu == ISA_ALU_SHIFT_LEFT ||
           alu == ISA_ALU_SHIFT_RIGHT;
}

/* Bitwise ops and shifts need integer operand types (ISA.md 7.3). */
static int check_int_operands(const ctx_t *c, int alu, int alu_slot, const int *slots, int n)
{
    if (!is_bitwise(alu))
        return 0;
    for (int i = 0; i < n; i++) {
        const isa_view_t *v = view_of(c, slots[i]);
        if (v && !is_int_type(v->dtype))
            return fail(c->msg, c->n, slots[i] + 1,
                        "%s needs integer operands, but %s is %s", isa_alu_name((isa_alu_t)alu),
                        c->info->slots[slots[i]].name, isa_dtype_name((isa_dtype_t)v->dtype));
    }
    (void)alu_slot;
    return 0;
}

static int check_pool_alu(const ctx_t *c, int alu, int slot)
{
    if (c->in->engine != ISA_ENGINE_POOL)
        return 0;
    if (c->in->op == ISA_OP_TENSOR_TENSOR && alu != ISA_ALU_ADD && alu != ISA_ALU_SUBTRACT &&
        alu != ISA_ALU_MULTIPLY && alu != ISA_ALU_POW)
        return fail(c->msg, c->n, slot + 1,
                    "tensor_tensor on pool supports add subtract multiply pow, not %s",
                    isa_alu_name((isa_alu_t)alu));
    return 0;
}

static int same_partitions(const ctx_t *c, int d, int s)
{
    const isa_view_t *D = view_of(c, d), *S = view_of(c, s);
    if (D && S && D->pcount != S->pcount)
        return fail(c->msg, c->n, s + 1, "%s has %u partitions but %s has %u (they must match)",
                    c->info->slots[s].name, S->pcount, c->info->slots[d].name, D->pcount);
    return 0;
}

static int want_free(const ctx_t *c, int s, uint64_t n)
{
    const isa_view_t *v = view_of(c, s);
    if (v && free_elems(v) != n)
        return fail(c->msg, c->n, s + 1, "%s must have %llu elements per partition, not %llu",
                    c->info->slots[s].name, (unsigned long long)n,
                    (unsigned long long)free_elems(v));
    return 0;
}

static int want_dtype(const ctx_t *c, int s, int dt)
{
    const isa_view_t *v = view_of(c, s);
    if (v && v->dtype != dt)
        return fail(c->msg, c->n, s + 1, "%s must be %s, not %s", c->info->slots[s].name,
                    isa_dtype_name((isa_dtype_t)dt), isa_dtype_name((isa_dtype_t)v->dtype));
    return 0;
}

static int check_affine_steps(const ctx_t *c, int list_slot)
{
    const isa_arg_t *l = &c->a[list_slot];
    const isa_view_t *D = c->info->nslots ? view_of(c, 0) : NULL; /* nop has no slots */
    if (l->present && D && l->count > D->ndims)
        return fail(c->msg, c->n, list_slot + 1,
                    "steps has %u entries but the destination has %u free dimension%s",
                    l->count, D->ndims, D->ndims == 1 ? "" : "s");
    return 0;
}

static int check_group_member(const ctx_t *c, uint32_t core, int gslot)
{
    const isa_group_t *g = &c->p->groups[c->a[gslot].v.i];
    for (uint32_t i = 0; i < g->ncores; i++)
        if ((uint32_t)c->p->ints[g->first + i] == core)
            return 0;
    return fail(c->msg, c->n, gslot + 1, "core %u is not a member of group '%s'", core,
                isa_string(c->p, g->name));
}

/* ---- per-opcode rules ------------------------------------------------------------------------------ */

#define TRY(x)                                                                                 \
    do {                                                                                       \
        int r_ = (x);                                                                          \
        if (r_)                                                                                \
            return r_;                                                                         \
    } while (0)

static int check_semantics(const ctx_t *c, uint32_t core, const isa_geometry_t *g)
{
    const isa_arg_t *a = c->a;
    const isa_view_t *D = c->info->nslots ? view_of(c, 0) : NULL; /* nop has no slots */
    char *msg = c->msg;
    size_t n = c->n;
    switch ((isa_op_t)c->in->op) {
    case ISA_OP_LDWEIGHTS: {
        const isa_view_t *S = view_of(c, 0);
        if (S->pcount > 128)
            return fail(msg, n, 1, "STAT has %u partitions (K <= 128)", S->pcount);
        if (free_elems(S) > 128)
            return fail(msg, n, 1, "STAT has %llu columns (M <= 128)",
                        (unsigned long long)free_elems(S));
        if (!is_pe_input_type(S->dtype))
            return fail(msg, n, 1, "pe inputs must be floating point, not %s",
                        isa_dtype_name((isa_dtype_t)S->dtype));
        return 0;
    }
    case ISA_OP_MATMUL: {
        const isa_view_t *M = view_of(c, 1);
        if (free_elems(M) > 512)
            return fail(msg, n, 2, "MOV has %llu elements per partition (N <= 512)",
                        (unsigned long long)free_elems(M));
        if (!is_pe_input_type(M->dtype))
            return fail(msg, n, 2, "pe inputs must be floating point, not %s",
                        isa_dtype_name((isa_dtype_t)M->dtype));
        TRY(want_dtype(c, 0, ISA_DT_FP32));
        TRY(want_free(c, 0, free_elems(M)));
        int64_t lo, hi;
        isa_view_byte_range(D, &lo, &hi);
        if (g->psum_bank_bytes && (uint64_t)lo / g->psum_bank_bytes !=
                                      (uint64_t)(hi - 1) / g->psum_bank_bytes)
            return fail(msg, n, 1, "matmul output bytes %lld..%lld cross a PSUM bank boundary "
                                   "(banks of %llu bytes)", (long long)lo, (long long)hi - 1,
                        (unsigned long long)g->psum_bank_bytes);
        return 0;
    }
    case ISA_OP_TRANSPOSE: {
        const isa_view_t *S = view_of(c, 1);
        if (c->in->engine == ISA_ENGINE_PE && !is_pe_input_type(S->dtype))
            return fail(msg, n, 2, "pe inputs must be floating point, not %s",
                        isa_dtype_name((isa_dtype_t)S->dtype));
        uint32_t lim = c->in->engine == ISA_ENGINE_PE ? 128 : 32;
        if (S->pcount > lim || free_elems(S) > lim)
            return fail(msg, n, 2, "transpose on %s takes at most %ux%u, not %ux%llu",
                        isa_engine_name((isa_engine_t)c->in->engine), lim, lim, S->pcount,
                        (unsigned long long)free_elems(S));
        if (D->pcount != free_elems(S) || free_elems(D) != S->pcount)
            return fail(msg, n, 1, "transpose of [%u, %llu] needs D [%llu, %u], not [%u, %llu]",
                        S->pcount, (unsigned long long)free_elems(S),
                        (unsigned long long)free_elems(S), S->pcount, D->pcount,
                        (unsigned long long)free_elems(D));
        if (c->in->engine == ISA_ENGINE_PE && !isa_dtype_is_float((isa_dtype_t)D->dtype))
            return fail(msg, n, 1, "pe transpose writes a floating-point PSUM tensor");
        return 0;
    }
    case ISA_OP_ACTIVATE:
        TRY(same_shape(c, 0, 1));
        TRY(check_scalar(c, 3, 0));
        TRY(check_scalar(c, 4, 0));
        for (int s = 5; s <= 6; s++)
            if (a[s].present) {
                TRY(check_scalar(c, s, 0));
                TRY(want_dtype(c, s, ISA_DT_FP32));
            }
        if (a[5].present && a[6].present)
            return fail(msg, n, 7, "give sum= or sumacc=, not both");
        return 0;
    case ISA_OP_TENSOR_TENSOR: {
        TRY(same_shape(c, 0, 1));
        TRY(same_shape(c, 0, 2));
        int alu = (int)a[3].v.i;
        TRY(check_pool_alu(c, alu, 3));
        int sl[] = {0, 1, 2};
        return check_int_operands(c, alu, 3, sl, 3);
    }
    case ISA_OP_TENSOR_SCALAR: {
        TRY(same_shape(c, 0, 1));
        TRY(check_scalar(c, 3, 0));
        TRY(check_scalar(c, 5, 0));
        if (a[4].present != a[5].present)
            return fail(msg, n, 5, "OP1 and S1 go together");
        int sl[] = {0, 1};
        TRY(check_int_operands(c, (int)a[2].v.i, 2, sl, 2));
        if (a[4].present)
            TRY(check_int_operands(c, (int)a[4].v.i, 4, sl, 2));
        if (a[7].present && !a[4].present)
            return fail(msg, n, 8, "rev1 needs OP1 and S1");
        return 0;
    }
    case ISA_OP_SCALAR_TENSOR_TENSOR: {
        TRY(same_shape(c, 0, 1));
        TRY(same_shape(c, 0, 5));
        TRY(check_scalar(c, 3, 0));
        int sl[] = {0, 1, 5};
        TRY(check_int_operands(c, (int)a[2].v.i, 2, sl, 3));
        return check_int_operands(c, (int)a[4].v.i, 4, sl, 3);
    }
    case ISA_OP_TENSOR_REDUCE: {
        const isa_view_t *S = view_of(c, 1);
        int64_t axes = a[3].v.i;
        if (axes < 1 || axes > S->ndims)
            return fail(msg, n, 4, "axes=%lld out of range: SRC has %u free dimension%s",
                        (long long)axes, S->ndims, S->ndims == 1 ? "" : "s");
        uint64_t outer = 1;
        for (unsigned d = 0; d < S->ndims - (unsigned)axes; d++)
            outer *= S->count[d];
        TRY(same_partitions(c, 0, 1));
        TRY(want_free(c, 0, outer));
        int sl[] = {0, 1};
        return check_int_operands(c, (int)a[2].v.i, 2, sl, 2);
    }
    case ISA_OP_TENSOR_SCAN:
        TRY(same_shape(c, 0, 1));
        TRY(same_shape(c, 0, 2));
        TRY(check_scalar(c, 5, 0));
        if (D->ndims < 1)
            return fail(msg, n, 1, "tensor_scan needs at least one free dimension");
        return 0;
    case ISA_OP_TENSOR_COPY:
    case ISA_OP_RECIPROCAL:
        return same_shape(c, 0, 1);
    case ISA_OP_MEMSET:
        return 0;
    case ISA_OP_SELECT:
        TRY(same_shape(c, 0, 1));
        return same_shape(c, 0, 2);
    case ISA_OP_BN_STATS:
        TRY(same_partitions(c, 0, 1));
        if (free_elems(view_of(c, 1)) > 512)
            return fail(msg, n, 2, "bn_stats takes at most 512 elements per partition, not %llu",
                        (unsigned long long)free_elems(view_of(c, 1)));
        TRY(want_free(c, 0, 3));
        return want_dtype(c, 0, ISA_DT_FP32);
    case ISA_OP_BN_AGGR: {
        TRY(same_partitions(c, 0, 1));
        uint64_t f = free_elems(view_of(c, 1));
        if (f % 3)
            return fail(msg, n, 2, "bn_aggr input must hold (count, mean, m2) triples: %llu "
                                   "elements per partition is not a multiple of 3",
                        (unsigned long long)f);
        TRY(want_free(c, 0, 2));
        return want_dtype(c, 0, ISA_DT_FP32);
    }
    case ISA_OP_SHUFFLE: {
        TRY(same_shape(c, 0, 1));
        const isa_arg_t *l = &a[2];
        if (l->count != 32)
            return fail(msg, n, 3, "shuffle mask needs 32 entries, not %u", l->count);
        for (unsigned i = 0; i < 32; i++) {
            int64_t m = c->p->ints[l->index + i];
            if (!((m >= 0 && m < 32) || m == 255))
                return fail(msg, n, 3, "shuffle mask entry %u is %lld (0..31 or 255)", i,
                            (long long)m);
        }
        return 0;
    }
    case ISA_OP_MAX8: {
        TRY(same_partitions(c, 0, 1));
        uint64_t f = free_elems(view_of(c, 1));
        if (f < 8 || f > 16384)
            return fail(msg, n, 2, "max8 takes 8..16384 elements per partition, not %llu",
                        (unsigned long long)f);
        return want_free(c, 0, 8);
    }
    case ISA_OP_FIND_INDEX8: {
        TRY(same_partitions(c, 0, 1));
        TRY(same_partitions(c, 0, 2));
        TRY(want_free(c, 0, 8));
        TRY(want_free(c, 2, 8));
        uint64_t f = free_elems(view_of(c, 1));
        if (f > 16384)
            return fail(msg, n, 2, "find_index8 takes at most 16384 elements per partition");
        return want_dtype(c, 0, ISA_DT_U32);
    }
    case ISA_OP_MATCH_REPLACE8:
        TRY(same_shape(c, 0, 1));
        TRY(same_partitions(c, 0, 2));
        return want_free(c, 2, 8);
    case ISA_OP_DROPOUT:
        TRY(same_shape(c, 0, 1));
        TRY(check_scalar(c, 2, 0));
        if (!a[2].is_view && !(a[2].v.f >= 0.0 && a[2].v.f <= 1.0))
            return fail(msg, n, 3, "prob=%g is not a probability in [0, 1]", a[2].v.f);
        return 0;
    case ISA_OP_IOTA:
        return check_affine_steps(c, 3);
    case ISA_OP_AFFINE_SELECT:
        TRY(same_shape(c, 0, 1));
        return check_affine_steps(c, 4);
    case ISA_OP_PARTITION_REDUCE: {
        int op = (int)a[2].v.i;
        if (op != ISA_ALU_ADD && op != ISA_ALU_MAX && op != ISA_ALU_BITWISE_AND &&
            op != ISA_ALU_BITWISE_OR)
            return fail(msg, n, 3, "partition_reduce supports add max bitwise_and bitwise_or, "
                                   "not %s", isa_alu_name((isa_alu_t)op));
        if (D->pcount != 1)
            return fail(msg, n, 1, "partition_reduce writes one partition, not %u", D->pcount);
        TRY(want_free(c, 0, free_elems(view_of(c, 1))));
        int sl[] = {0, 1};
        return check_int_operands(c, op, 2, sl, 2);
    }
    case ISA_OP_DMA: {
        const isa_view_t *S = view_of(c, 1);
        if (isa_view_elems(D) != isa_view_elems(S))
            return fail(msg, n, 2, "dma moves %llu elements into %llu (totals must match)",
                        (unsigned long long)isa_view_elems(S),
                        (unsigned long long)isa_view_elems(D));
        if (a[2].present && (a[2].v.i < 0 || a[2].v.i > 15))
            return fail(msg, n, 3, "queue=%lld out of range 0..15", (long long)a[2].v.i);
        return 0;
    }
    case ISA_OP_ALL_REDUCE:
    case ISA_OP_ALL_GATHER:
    case ISA_OP_REDUCE_SCATTER:
    case ISA_OP_ALL_TO_ALL: {
        int op = c->in->op;
        int gslot = op == ISA_OP_ALL_REDUCE || op == ISA_OP_REDUCE_SCATTER ? 3 : 2;
        if (op == ISA_OP_ALL_REDUCE || op == ISA_OP_REDUCE_SCATTER) {
            int r = (int)a[2].v.i;
            if (r != ISA_ALU_ADD && r != ISA_ALU_MAX && r != ISA_ALU_MIN)
                return fail(msg, n, 3, "collective op must be add, max or min, not %s",
                            isa_alu_name((isa_alu_t)r));
        }
        TRY(check_group_member(c, core, gslot));
        const isa_group_t *gr = &c->p->groups[a[gslot].v.i];
        uint64_t nd = isa_view_elems(D), ns = isa_view_elems(view_of(c, 1));
        uint64_t k = gr->ncores;
        if (op == ISA_OP_ALL_REDUCE && nd != ns)
            return fail(msg, n, 1, "all_reduce: D has %llu elements, SRC %llu (must match)",
                        (unsigned long long)nd, (unsigned long long)ns);
        if (op == ISA_OP_ALL_GATHER && nd != ns * k)
            return fail(msg, n, 1, "all_gather over %llu cores: D must have %llu elements "
                                   "(%llu x SRC), not %llu", (unsigned long long)k,
                        (unsigned long long)(ns * k), (unsigned long long)ns,
                        (unsigned long long)nd);
        if (op == ISA_OP_REDUCE_SCATTER && ns != nd * k)
            return fail(msg, n, 2, "reduce_scatter over %llu cores: SRC must have %llu "
                                   "elements (%llu x D), not %llu", (unsigned long long)k,
                        (unsigned long long)(nd * k), (unsigned long long)k,
                        (unsigned long long)ns);
        if (op == ISA_OP_ALL_TO_ALL && (nd != ns || ns % k))
            return fail(msg, n, 2, "all_to_all over %llu cores: D and SRC must have the same "
                                   "number of elements, a multiple of %llu", (unsigned long long)k,
                        (unsigned long long)k);
        return 0;
    }
    case ISA_OP_SEND:
    case ISA_OP_RECV: {
        int64_t peer = a[1].v.i, tag = a[2].v.i;
        if (peer < 0 || peer >= (int64_t)c->p->ncores)
            return fail(msg, n, 2, "%s=%lld: core out of range: the program has %u cores",
                        c->in->op == ISA_OP_SEND ? "to" : "from", (long long)peer,
                        c->p->ncores);
        if ((uint64_t)peer == core)
            return fail(msg, n, 2, "core %u cannot %s itself", core,
                        c->in->op == ISA_OP_SEND ? "send to" : "receive from");
        if (tag < 0 || tag > INT32_MAX)
            return fail(msg, n, 3, "tag=%lld out of range 0..%d", (long long)tag, INT32_MAX);
        return 0;
    }
    case ISA_OP_NOP:
    case ISA_OP_COUNT:
        return 0;
    }
    return 0;
}

/* The semaphores declared on a core (for every core, or for that one), as bits by index. */
static uint64_t declared_sems(const isa_program_t *p, uint32_t core)
{
    uint64_t m = 0;
    for (uint32_t k = 0; k < p->nsems; k++)
        if (p->sems[k].index < ISA_MAX_SEMS &&
            (p->sems[k].core == -1 || (uint32_t)p->sems[k].core == core))
            m |= 1ull << p->sems[k].index;
    return m;
}

int isa_check_instr(const isa_program_t *p, uint32_t core, const isa_instr_t *in,
                    const isa_geometry_t *g, char *msg, size_t msglen)
{
    if (in->op >= ISA_OP_COUNT)
        return fail(msg, msglen, NO_SLOT, "unknown opcode %u", in->op);
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    if (in->engine >= ISA_ENGINE_COUNT)
        return fail(msg, msglen, NO_SLOT, "unknown engine %u", in->engine);
    if (!(info->engines & (1u << in->engine)))
        return fail(msg, msglen, NO_SLOT, "'%s' is not legal on engine %s", info->mnemonic,
                    isa_engine_name((isa_engine_t)in->engine));
    if (in->nwait > ISA_MAX_WAITS || in->npost > ISA_MAX_POSTS)
        return fail(msg, msglen, NO_SLOT, "too many clauses (at most %d waits and %d posts)",
                    ISA_MAX_WAITS, ISA_MAX_POSTS);
    uint64_t declared = in->nwait + in->npost ? declared_sems(p, core) : 0;
    for (unsigned i = 0; i < (unsigned)in->nwait + in->npost; i++) {
        const isa_sync_t *s = i < in->nwait ? &in->wait[i] : &in->post[i - in->nwait];
        int is_wait = i < in->nwait;
        switch (isa_clause_fault(s, is_wait, declared)) {
        case ISA_CLAUSE_RANGE:
            return fail(msg, msglen, NO_SLOT, "semaphore %u out of range 0..%d", s->sem,
                        ISA_MAX_SEMS - 1);
        case ISA_CLAUSE_OP:
            return fail(msg, msglen, NO_SLOT, "bad %s operation %u", is_wait ? "wait" : "post",
                        s->op);
        case ISA_CLAUSE_UNDECLARED:
            return fail(msg, msglen, NO_SLOT, "semaphore %u is not declared on core %u", s->sem,
                        core);
        default:
            break;
        }
    }
    if ((uint64_t)in->args + info->nslots > p->nargs)
        return fail(msg, msglen, NO_SLOT, "operand slots out of range");
    /* p->args is NULL in a program whose only instructions have no slots (nop) */
    ctx_t c = {p, in, info, info->nslots ? &p->args[in->args] : NULL, msg, msglen};
    for (unsigned i = 0; i < info->nslots; i++) {
        const isa_slot_desc_t *sd = &info->slots[i];
        const isa_arg_t *a = &c.a[i];
        if (!a->present) {
            if (!sd->optional)
                return fail(msg, msglen, (int)i + 1, "'%s' needs %s", info->mnemonic, sd->name);
            continue;
        }
        switch (sd->kind) {
        case ISA_KIND_VIEW:
        case ISA_KIND_SCALAR:
            if (sd->kind == ISA_KIND_VIEW && !a->is_view)
                return fail(msg, msglen, (int)i + 1, "%s must be a view", sd->name);
            if (a->is_view) {
                if (a->index >= p->nviews)
                    return fail(msg, msglen, (int)i + 1, "view index out of range");
                char vmsg[300];
                if (isa_check_view(&p->views[a->index], g, vmsg, sizeof vmsg))
                    return fail(msg, msglen, (int)i + 1, "%s: %s", sd->name, vmsg);
            }
            break;
        case ISA_KIND_LIST:
            if (a->count > ISA_MAX_LIST || (uint64_t)a->index + a->count > p->nints)
                return fail(msg, msglen, (int)i + 1, "%s: list out of range", sd->name);
            break;
        case ISA_KIND_ALU:
        case ISA_KIND_RED:
            if (a->v.i < 0 || a->v.i >= ISA_ALU_COUNT)
                return fail(msg, msglen, (int)i + 1, "%s: bad operator %lld", sd->name,
                            (long long)a->v.i);
            if (sd->kind == ISA_KIND_RED && !isa_alu_can_reduce((isa_alu_t)a->v.i))
                return fail(msg, msglen, (int)i + 1, "%s: %s is not a reduction operator",
                            sd->name, isa_alu_name((isa_alu_t)a->v.i));
            break;
        case ISA_KIND_FUNC:
            if (a->v.i < 0 || a->v.i >= ISA_FUNC_COUNT)
                return fail(msg, msglen, (int)i + 1, "%s: bad function %lld", sd->name,
                            (long long)a->v.i);
            break;
        case ISA_KIND_CMP:
            if (a->v.i < 0 || a->v.i >= ISA_CMP_COUNT)
                return fail(msg, msglen, (int)i + 1, "%s: bad comparison %lld", sd->name,
                            (long long)a->v.i);
            break;
        case ISA_KIND_GROUP:
            if (a->v.i < 0 || (uint64_t)a->v.i >= p->ngroups)
                return fail(msg, msglen, (int)i + 1, "%s: bad group %lld", sd->name,
                            (long long)a->v.i);
            break;
        default:
            break;
        }
    }
    /* views that must be views (not immediates) for positional D/SRC are covered above */
    int r = check_spaces(&c);
    if (r)
        return r;
    /* partition counts of engine ops: source and destination match (ISA.md 5.2) */
    return check_semantics(&c, core, g);
}

/* ---- memo of passed checks --------------------------------------------------------------------- */

/* The key of an instruction in three words, built with shifts (byte stores read back as
 * words stall the store buffer): the operand block and core; opcode, engine, a used bit and
 * the clause counts; semaphore and operation of each clause. */
typedef struct isa_check_key {
    uint64_t w[3];
} isa_check_key_t;

#define CHECK_KEY_USED (1ull << 24)

static isa_check_key_t check_key(uint32_t core, const isa_instr_t *in)
{
    isa_check_key_t k;
    k.w[0] = (uint64_t)in->args | (uint64_t)core << 32;
    k.w[1] = (uint64_t)in->op | (uint64_t)in->engine << 16 | CHECK_KEY_USED |
             (uint64_t)in->nwait << 32 | (uint64_t)in->npost << 40;
    uint64_t y = 0;
    unsigned at = 0;
    for (unsigned i = 0; i < ISA_MAX_WAITS; i++, at += 16)
        if (i < in->nwait)
            y |= ((uint64_t)in->wait[i].sem | (uint64_t)in->wait[i].op << 8) << at;
    for (unsigned i = 0; i < ISA_MAX_POSTS; i++, at += 16)
        if (i < in->npost)
            y |= ((uint64_t)in->post[i].sem | (uint64_t)in->post[i].op << 8) << at;
    k.w[2] = y;
    return k;
}

_Static_assert(2 * 8 * (ISA_MAX_WAITS + ISA_MAX_POSTS) <= 64, "clauses fit one key word");

static uint32_t check_slot(const isa_check_memo_t *m, const isa_check_key_t *k)
{
    uint64_t h = k->w[0] * 0x9e3779b97f4a7c15ull ^ k->w[1] * 0xc2b2ae3d27d4eb4full ^
                 k->w[2] * 0x165667b19e3779f9ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    uint32_t i = (uint32_t)h & (m->cap - 1);
    for (;; i = (i + 1) & (m->cap - 1)) {
        const isa_check_key_t *s = &m->slots[i];
        if (!(s->w[1] & CHECK_KEY_USED))
            return i;
        if (s->w[0] == k->w[0] && s->w[1] == k->w[1] && s->w[2] == k->w[2])
            return i;
    }
}

int isa_check_instr_memo(isa_check_memo_t *m, const isa_program_t *p, uint32_t core,
                         const isa_instr_t *in, const isa_geometry_t *g, char *msg,
                         size_t msglen)
{
    isa_check_key_t k = check_key(core, in);
    if (m->cap && m->slots[check_slot(m, &k)].w[1] & CHECK_KEY_USED) {
        m->hits++;
        return 0;
    }
    int bad = isa_check_instr(p, core, in, g, msg, msglen);
    if (bad || (m->n >= 65536 && m->hits < m->n))
        return bad; /* a program whose keys rarely repeat: remembering them costs more */
    if ((uint64_t)(m->n + 1) * 2 > m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 256;
        isa_check_key_t *slots = nc < (1u << 28) ? calloc(nc, sizeof *slots) : NULL;
        if (!slots)
            return 0;
        isa_check_key_t *old = m->slots;
        uint32_t oc = m->cap;
        m->slots = slots;
        m->cap = nc;
        for (uint32_t i = 0; i < oc; i++)
            if (old[i].w[1] & CHECK_KEY_USED)
                m->slots[check_slot(m, &old[i])] = old[i];
        free(old);
    }
    uint32_t i = check_slot(m, &k);
    if (!(m->slots[i].w[1] & CHECK_KEY_USED)) {
        m->slots[i] = k;
        m->n++;
    }
    return 0;
}

void isa_check_memo_free(isa_check_memo_t *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* ---- whole programs ------------------------------------------------------------------------------ */

/* The clause checks of isa_check_instr, as one test. */
static int clauses_pass(const isa_instr_t *in, uint64_t declared)
{
    if (in->nwait > ISA_MAX_WAITS || in->npost > ISA_MAX_POSTS)
        return 0;
    for (unsigned i = 0; i < in->nwait; i++)
        if (isa_clause_fault(&in->wait[i], 1, declared) != ISA_CLAUSE_OK)
            return 0;
    for (unsigned i = 0; i < in->npost; i++)
        if (isa_clause_fault(&in->post[i], 0, declared) != ISA_CLAUSE_OK)
            return 0;
    return 1;
}

ncsim_status_t isa_check_program(const isa_program_t *p, const isa_geometry_t *g,
                                 const char *file, isa_diag_t *diag)
{
    return isa_check_program_flags(p, g, file, diag, 0);
}

ncsim_status_t isa_check_program_flags(const isa_program_t *p, const isa_geometry_t *g,
                                       const char *file, isa_diag_t *diag, unsigned flags)
{
    unsigned before = diag->errors;
    if (p->chips < 1 || p->chips > ISA_MAX_CHIPS || p->ncores != p->chips * ISA_CORES_PER_CHIP)
        isa_diag_error(diag, file, 0, 0, "bad chip count %u (cores %u)", p->chips, p->ncores);
    for (uint32_t i = 0; i < p->ntensors; i++) {
        const isa_tensor_t *T = &p->tensors[i];
        const char *name = isa_string(p, T->name);
        if (T->space >= ISA_SPACE_COUNT || T->dtype >= ISA_DT_COUNT || T->kind > ISA_TK_LOCAL) {
            isa_diag_error(diag, file, 0, 0, "tensor %u ('%s'): bad space, type or kind", i,
                           name);
            continue;
        }
        unsigned maxd = T->space == ISA_SPACE_HBM ? ISA_MAX_HBM_DIMS : ISA_MAX_FREE_DIMS + 1;
        int ok = T->ndims >= 1 && T->ndims <= maxd;
        uint64_t bytes = isa_dtype_size((isa_dtype_t)T->dtype);
        for (unsigned d = 0; ok && d < T->ndims; d++) {
            ok = T->dims[d] >= 1 && T->dims[d] <= (1ull << 40);
            if (T->space == ISA_SPACE_HBM || d > 0)
                bytes *= T->dims[d];
            ok = ok && bytes <= (1ull << 62);
        }
        if (!ok) {
            isa_diag_error(diag, file, 0, 0, "tensor %u ('%s'): bad dimensions", i, name);
            continue;
        }
        if (T->space == ISA_SPACE_HBM) {
            if (T->kind == ISA_TK_LOCAL || T->chip < 0 || (uint32_t)T->chip >= p->chips ||
                T->offset + bytes > g->hbm_bytes || T->offset + bytes < T->offset)
                isa_diag_error(diag, file, 0, 0, "HBM tensor '%s' (number %u): bad kind, or "
                                                 "chip %d of %u, or bytes %llu..%llu beyond "
                                                 "the %llu bytes of HBM", name, i, (int)T->chip,
                               p->chips, (unsigned long long)T->offset,
                               (unsigned long long)(T->offset + bytes),
                               (unsigned long long)g->hbm_bytes);
            else if (T->kind != ISA_TK_SCRATCH && !*name)
                isa_diag_error(diag, file, 0, 0, "HBM %s tensor %u has no name",
                               isa_tensor_kind_name((isa_tensor_kind_t)T->kind), i);
        } else {
            uint64_t limit = T->space == ISA_SPACE_SBUF ? g->sbuf_bytes : g->psum_bytes;
            const char *mem = T->space == ISA_SPACE_SBUF ? "SBUF" : "PSUM";
            if (T->kind != ISA_TK_LOCAL || T->core < -1 || T->core >= (int32_t)p->ncores)
                isa_diag_error(diag, file, 0, 0, "on-chip tensor %u ('%s'): bad kind or core "
                                                 "%d (the program has %u cores)", i, name,
                               (int)T->core, p->ncores);
            else if ((uint64_t)T->pstart + T->dims[0] > g->partitions)
                isa_diag_error(diag, file, 0, 0, "%s tensor '%s' needs partitions %u..%llu, "
                                                 "but %s has %u partitions", mem, name,
                               (unsigned)T->pstart,
                               (unsigned long long)(T->pstart + T->dims[0] - 1), mem,
                               g->partitions);
            else if (T->offset + bytes > limit || T->offset + bytes < T->offset)
                isa_diag_error(diag, file, 0, 0, "%s tensor '%s' needs bytes [%llu, %llu) of each "
                                                 "partition, but each %s partition has %llu bytes",
                               mem, name, (unsigned long long)T->offset,
                               (unsigned long long)(T->offset + bytes), mem,
                               (unsigned long long)limit);
        }
    }
    for (uint32_t i = 0; i < p->nsems; i++) {
        const isa_sem_t *s = &p->sems[i];
        if (s->index >= ISA_MAX_SEMS || s->core < -1 || s->core >= (int32_t)p->ncores)
            isa_diag_error(diag, file, 0, 0, "semaphore %u: bad index or core", i);
        for (uint32_t k = 0; k < i; k++)
            if (p->sems[k].index == s->index &&
                (p->sems[k].core == -1 || s->core == -1 || p->sems[k].core == s->core))
                isa_diag_error(diag, file, 0, 0, "semaphore %u reuses index %u of semaphore %u",
                               i, s->index, k);
    }
    for (uint32_t i = 0; i < p->ngroups; i++) {
        const isa_group_t *gr = &p->groups[i];
        if (gr->ncores < 1 || (uint64_t)gr->first + gr->ncores > p->nints) {
            isa_diag_error(diag, file, 0, 0, "group %u: bad member list", i);
            continue;
        }
        for (uint32_t k = 0; k < gr->ncores; k++) {
            int64_t c = p->ints[gr->first + k];
            if (c < 0 || c >= (int64_t)p->ncores)
                isa_diag_error(diag, file, 0, 0, "group %u: core %lld out of range", i,
                               (long long)c);
            for (uint32_t j = 0; j < k; j++)
                if (p->ints[gr->first + j] == c)
                    isa_diag_error(diag, file, 0, 0, "group %u lists core %lld twice", i,
                                   (long long)c);
        }
    }
    if (diag->errors != before)
        return NCSIM_FORMAT;
    isa_check_memo_t memo = {0};
    /* What passed, by operand block and core: the opcode and a mask of engines. The slot
     * and semantic checks depend on nothing else (the clauses are checked per instruction,
     * below, against a mask of declared semaphores), so an instruction whose block passed
     * on its core and engine for its opcode passes too: one load instead of a hash probe,
     * which was a fifth of loading a .ncx. Too large a table falls back to the hashed memo. */
    uint32_t stride = p->nargs + 1u;
    uint32_t *passed = NULL;
    uint64_t declared[ISA_MAX_CORES] = {0};
    if (p->ncores <= ISA_MAX_CORES && (uint64_t)stride * p->ncores <= (1u << 24)) {
        passed = calloc((size_t)stride * p->ncores, sizeof *passed);
        for (uint32_t c = 0; c < p->ncores; c++)
            declared[c] = declared_sems(p, c);
    }
    uint64_t at = 0;
    for (uint32_t core = 0; core < p->ncores; core++)
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            const isa_stream_t *s = isa_stream(p, core, (isa_engine_t)e);
            if (s->first != at || (uint64_t)s->first + s->count > p->ninstrs) {
                isa_diag_error(diag, file, 0, 0, "stream of core %u %s is out of order or range",
                               core, isa_engine_name((isa_engine_t)e));
                isa_check_memo_free(&memo);
                return NCSIM_FORMAT;
            }
            at += s->count;
            for (uint32_t i = 0; i < s->count; i++) {
                if (diag->errors != before && isa_diag_full(diag))
                    break;
                const isa_instr_t *in = &p->instrs[s->first + i];
                char msg[512];
                if (in->engine != e) {
                    isa_diag_error(diag, file, 0, 0, "core %u %s instruction %u: engine field "
                                                     "%u does not match its stream", core,
                                   isa_engine_name((isa_engine_t)e), i, in->engine);
                    continue;
                }
                uint32_t *seen =
                    passed && in->args < stride ? &passed[core * stride + in->args] : NULL;
                if (seen && *seen >> 16 == in->op + 1u && (*seen >> e & 1) &&
                    ((flags & ISA_CHECK_CLAUSES_DONE) || clauses_pass(in, declared[core])))
                    continue;
                int bad = seen ? isa_check_instr(p, core, in, g, msg, sizeof msg)
                               : isa_check_instr_memo(&memo, p, core, in, g, msg, sizeof msg);
                if (seen && !bad) {
                    if (*seen >> 16 != in->op + 1u)
                        *seen = (in->op + 1u) << 16; /* another opcode: its engines only */
                    *seen |= 1u << e;
                }
                if (bad) {
                    if (in->line)
                        isa_diag_error(diag, file, 0, 0, "core %u %s instruction %u (line %u): %s",
                                       core, isa_engine_name((isa_engine_t)e), i, in->line, msg);
                    else
                        isa_diag_error(diag, file, 0, 0, "core %u %s instruction %u: %s", core,
                                       isa_engine_name((isa_engine_t)e), i, msg);
                }
            }
        }
    isa_check_memo_free(&memo);
    free(passed);
    if (at != p->ninstrs)
        isa_diag_error(diag, file, 0, 0, "%llu instructions outside any stream",
                       (unsigned long long)(p->ninstrs - at));
    return diag->errors != before ? NCSIM_FORMAT : NCSIM_OK;
}
