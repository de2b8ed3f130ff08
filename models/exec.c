/*
 * exec.c -- the functional model's core: per-core state, the per-opcode dispatch, operand
 * fetching and checking shared by every instruction, the tensor engine (ldweights, matmul,
 * transpose on pe) with PSUM accumulation provenance, and DMA transfers.
 *
 * The exact semantics of every instruction, with the choices ISA.md leaves open, are listed
 * in docs/semantics.md.
 */
#include "exec.h"
#include "exec_internal.h"

#include "blas.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PE array limits (ISA.md 7.1): K and M up to the 128x128 array, N up to one 2 KiB bank. */
#define PE_MAX_K 128u
#define PE_MAX_M 128u
#define PE_MAX_N 512u
#define PE_MAX_TRANSPOSE 128u
/* ISA.md 1: each PSUM partition is 8 banks. */
#define PSUM_BANKS 8u
/* Elements moved per step of a DMA: bounds its scratch memory to 4 MiB per buffer. */
#define DMA_CHUNK_ELEMS (1ull << 20)
#define SMALL_BUFFERS 8u

/* ---- Core state ---------------------------------------------------------------------------------
 */

int mdl_core_state_init(mdl_core_state_t *s, const isa_program_t *prog, uint32_t core,
                        mdl_mem_t mem, mdl_rounding_t rounding, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->prog = prog;
    s->core = core;
    s->mem = mem;
    s->rounding = rounding;
    for (unsigned e = 0; e < ISA_ENGINE_COUNT; e++)
        mdl_rng_seed(&s->rng[e], seed, (uint64_t)core * 8 + e);
    if (mem.psum) {
        size_t words = (size_t)mem.psum->partitions * (size_t)(mem.psum->bytes / 4);
        /* mapped, not calloc'd: half a megabyte per core that calloc came to memset on every
         * simulator of a process, while a program writes few of its PSUM words */
        s->psum_pe_written = mdl_zeroed_alloc(words);
        if (!s->psum_pe_written)
            return -1;
        s->psum_pe_bytes = words;
        s->psum_bank_bytes = mem.psum->bytes / PSUM_BANKS;
        if (mem.psum->bytes % PSUM_BANKS == 0 && s->psum_bank_bytes % 4 == 0 &&
            s->psum_bank_bytes) {
            s->psum_bank_pe = calloc((size_t)mem.psum->partitions * PSUM_BANKS, 1);
            if (!s->psum_bank_pe)
                return -1;
        }
    }
    return 0;
}

void mdl_core_state_free(mdl_core_state_t *s)
{
    free(s->pe.weights);
    mdl_zeroed_free(s->psum_pe_written, s->psum_pe_bytes);
    free(s->psum_bank_pe);
    for (unsigned i = 0; i < 4; i++)
        free(s->scratch[i]);
    for (unsigned i = 0; i < MDL_ONCHIP_WATCHES; i++)
        free(s->widened[i].data);
    memset(s, 0, sizeof *s);
}

/* ---- Context helpers ------------------------------------------------------------------------- */

ncsim_status_t exec_fail(exec_ctx_t *x, const char *fmt, ...)
{
    if (x->errlen) {
        int n = snprintf(x->err, x->errlen, "%s: ", x->mnemonic);
        if (n < 0)
            n = 0;
        if ((size_t)n < x->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return NCSIM_PROGRAM;
}

ncsim_status_t exec_nomem(exec_ctx_t *x)
{
    if (x->errlen)
        snprintf(x->err, x->errlen, "%s: out of memory", x->mnemonic);
    return NCSIM_NOMEM;
}

const char *exec_slot_name(const exec_ctx_t *x, unsigned slot)
{
    return isa_op_info(x->op)->slots[slot].name;
}

unsigned exec_engine_spaces(const exec_ctx_t *x)
{
    switch (x->engine) {
    case ISA_ENGINE_ACT:
    case ISA_ENGINE_DVE:
        return EXEC_SB | EXEC_PS;
    case ISA_ENGINE_POOL:
        return EXEC_SB;
    default:
        return EXEC_SB | EXEC_PS;
    }
}

static void spaces_label(unsigned mask, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t used = 0;
    for (unsigned sp = 0; sp < ISA_SPACE_COUNT; sp++) {
        if (!(mask & (1u << sp)))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? " or " : "",
                         isa_space_label((isa_space_t)sp));
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
    }
}

ncsim_status_t exec_view(exec_ctx_t *x, unsigned slot, unsigned spaces, const isa_view_t **out)
{
    const isa_arg_t *a = &x->args[slot];
    const isa_slot_desc_t *d = &isa_op_info(x->op)->slots[slot];
    *out = NULL;
    if (!a->present) {
        if (d->optional)
            return NCSIM_OK;
        return exec_fail(x, "missing operand %s", d->name);
    }
    if (d->kind == ISA_KIND_SCALAR && !a->is_view)
        return exec_fail(x, "operand %s must be a view here", d->name);
    if (a->index >= x->prog->nviews)
        return exec_fail(x, "operand %s refers to view %u of a program with %u views", d->name,
                         a->index, x->prog->nviews);
    const isa_view_t *v = &x->prog->views[a->index];
    char msg[256];
    if (mdl_view_check(&x->s->mem, v, msg, sizeof msg))
        return exec_fail(x, "%s: %s", d->name, msg);
    if (!(spaces & (1u << v->space))) {
        char allowed[32];
        spaces_label(spaces, allowed, sizeof allowed);
        return exec_fail(x, "%s is in %s; on %s it must be in %s", d->name,
                         isa_space_label((isa_space_t)v->space), isa_engine_name(x->engine),
                         allowed);
    }
    if (isa_view_elems(v) > EXEC_MAX_ELEMS)
        return exec_fail(x, "%s has %" PRIu64 " elements, more than %llu per instruction", d->name,
                         isa_view_elems(v), EXEC_MAX_ELEMS);
    *out = v;
    return NCSIM_OK;
}

ncsim_status_t exec_operands(exec_ctx_t *x, const exec_operand_t *ops, unsigned n,
                             const isa_view_t **views)
{
    const unsigned sp = exec_engine_spaces(x);
    unsigned last_like = 0; /* the last element-wise operand: shapes are checked once it is in */
    for (unsigned i = 1; i < n; i++)
        if (ops[i].rules & EXEC_LIKE_FIRST)
            last_like = i;
    ncsim_status_t st;
    for (unsigned i = 0; i < n; i++) {
        if ((st = exec_view(x, ops[i].slot, sp, &views[i])) != NCSIM_OK)
            return st;
        for (unsigned j = 1; i == last_like && j <= last_like; j++)
            if ((ops[j].rules & EXEC_LIKE_FIRST) && views[0] && views[j] &&
                (st = exec_same_shape(x, ops[0].slot, views[0], ops[j].slot, views[j])) !=
                    NCSIM_OK)
                return st;
    }
    for (unsigned i = 0; i < n; i++)
        if ((ops[i].rules & EXEC_FP32) && views[i] &&
            (st = exec_need_dtype(x, ops[i].slot, views[i], ISA_DT_FP32)) != NCSIM_OK)
            return st;
    for (unsigned i = 1; i < n; i++)
        if ((ops[i].rules & EXEC_ONE_PSUM) && views[i - 1] && views[i] &&
            (st = exec_not_both_psum(x, ops[i - 1].slot, views[i - 1], ops[i].slot, views[i])) !=
                NCSIM_OK)
            return st;
    return NCSIM_OK;
}

ncsim_status_t exec_need_rows(exec_ctx_t *x, unsigned slot, const isa_view_t *v, uint32_t pc,
                              uint64_t width)
{
    if (v->pcount == pc && isa_view_free_elems(v) == width)
        return NCSIM_OK;
    return exec_fail(x, "%s has %u partitions x %" PRIu64 " elements; it must be [%u, %" PRIu64 "]",
                     exec_slot_name(x, slot), v->pcount, isa_view_free_elems(v), pc, width);
}

ncsim_status_t exec_same_shape(exec_ctx_t *x, unsigned sa, const isa_view_t *a, unsigned sb,
                               const isa_view_t *b)
{
    if (a->pcount == b->pcount && isa_view_free_elems(a) == isa_view_free_elems(b))
        return NCSIM_OK;
    return exec_fail(x,
                     "shape mismatch: %s has %u partitions x %" PRIu64 " elements but %s has %u "
                     "partitions x %" PRIu64 " elements",
                     exec_slot_name(x, sa), a->pcount, isa_view_free_elems(a),
                     exec_slot_name(x, sb), b->pcount, isa_view_free_elems(b));
}

ncsim_status_t exec_not_both_psum(exec_ctx_t *x, unsigned sa, const isa_view_t *a, unsigned sb,
                                  const isa_view_t *b)
{
    if (a->space == ISA_SPACE_PSUM && b->space == ISA_SPACE_PSUM)
        return exec_fail(x,
                         "%s and %s are both in PSUM; a two-input op may read at most one "
                         "input from PSUM",
                         exec_slot_name(x, sa), exec_slot_name(x, sb));
    return NCSIM_OK;
}

ncsim_status_t exec_need_int(exec_ctx_t *x, unsigned slot, const isa_view_t *v, isa_alu_t op)
{
    if (!isa_dtype_is_float((isa_dtype_t)v->dtype))
        return NCSIM_OK;
    return exec_fail(x, "%s needs integer operands, but %s is %s", isa_alu_name(op),
                     exec_slot_name(x, slot), isa_dtype_name((isa_dtype_t)v->dtype));
}

ncsim_status_t exec_need_dtype(exec_ctx_t *x, unsigned slot, const isa_view_t *v, isa_dtype_t t)
{
    if (v->dtype == t)
        return NCSIM_OK;
    return exec_fail(x, "%s has type %s; it must be %s", exec_slot_name(x, slot),
                     isa_dtype_name((isa_dtype_t)v->dtype), isa_dtype_name(t));
}

float *exec_scratch(exec_ctx_t *x, unsigned i, size_t n)
{
    mdl_core_state_t *s = x->s;
    if (n == 0)
        n = 1;
    if (s->scratch_cap[i] < n) {
        size_t cap = s->scratch_cap[i] ? s->scratch_cap[i] : 1024;
        while (cap < n)
            cap *= 2;
        float *p = realloc(s->scratch[i], cap * sizeof *p);
        if (!p)
            return NULL;
        s->scratch[i] = p;
        s->scratch_cap[i] = cap;
    }
    return s->scratch[i];
}

int64_t *exec_scratch_i64(exec_ctx_t *x, unsigned i, size_t n)
{
    /* malloc'd memory is suitably aligned for int64_t; it holds n int64 in 2n floats. */
    return (int64_t *)(void *)exec_scratch(x, i, 2 * n);
}

void *exec_small(exec_ctx_t *x, unsigned k)
{
    const mdl_mem_t *m = &x->s->mem;
    size_t per = 1;
    if (m->sbuf && m->sbuf->partitions > per)
        per = m->sbuf->partitions;
    if (m->psum && m->psum->partitions > per)
        per = m->psum->partitions;
    per *= 2; /* room for int64 values */
    float *base = exec_scratch(x, 3, per * SMALL_BUFFERS);
    return base ? base + per * k : NULL;
}

void exec_read_f32(exec_ctx_t *x, const isa_view_t *v, float *out)
{
    mdl_view_read_f32(&x->s->mem, v, out);
}

void exec_read_i64(exec_ctx_t *x, const isa_view_t *v, int64_t *out)
{
    mdl_view_read_i64(&x->s->mem, v, out);
}

/* ---- PSUM provenance ------------------------------------------------------------------------- */

typedef struct psum_mark {
    uint8_t *flags;
    uint8_t *bank_pe; /* s->psum_bank_pe (may be NULL) */
    uint64_t bank_bytes;
    uint8_t value;
} psum_mark_t;

/*
 * The bank summary for a write of flat PSUM bytes [lo, hi): a pe write that covers a whole
 * bank makes it all-pe; any other engine's write clears it; a partial pe write leaves it
 * (all-pe stays all-pe; otherwise the words must still be scanned). Flat address / bank
 * size is the bank's index since banks divide each partition evenly.
 */
static void psum_mark_banks(const psum_mark_t *pm, uint64_t lo, uint64_t hi)
{
    if (!pm->bank_pe || lo >= hi)
        return;
    const uint64_t bb = pm->bank_bytes;
    for (uint64_t b = lo / bb; b <= (hi - 1) / bb; b++) {
        if (pm->value != EXEC_PSUM_PE)
            pm->bank_pe[b] = 0;
        else if (lo <= b * bb && (b + 1) * bb <= hi)
            pm->bank_pe[b] = 1;
    }
}

/* Whether every PSUM bank the fp32 words [addr, addr + 4 n) touch is known to be all-pe
 * (bank_pe may be NULL: nothing known). */
static int banks_all_pe(const uint8_t *bank_pe, uint64_t bank_bytes, uint64_t addr, uint64_t n)
{
    if (!bank_pe || !n)
        return 0;
    const uint64_t last = (addr + 4 * n - 1) / bank_bytes;
    for (uint64_t b = addr / bank_bytes; b <= last; b++)
        if (!bank_pe[b])
            return 0;
    return 1;
}

static int psum_mark_run(void *c, uint64_t addr, int64_t bs, uint64_t n, uint32_t es)
{
    psum_mark_t *pm = c;
    if (bs == 4 && es == 4 && addr % 4 == 0) {
        /* a bank known to be all-pe has every flag set already (pe rewriting its own
         * accumulation group, once per matmul) */
        if (pm->value == EXEC_PSUM_PE && banks_all_pe(pm->bank_pe, pm->bank_bytes, addr, n))
            return 0;
        memset(pm->flags + addr / 4, pm->value, (size_t)n);
        psum_mark_banks(pm, addr, addr + 4 * n);
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = addr + (uint64_t)((int64_t)i * bs);
        for (uint64_t w = a / 4; w <= (a + es - 1) / 4; w++)
            pm->flags[w] = pm->value;
        psum_mark_banks(pm, a, a + es);
    }
    return 0;
}

/* Record who wrote the PSUM words of v (no-op outside PSUM). */
static void psum_mark(mdl_core_state_t *s, const isa_view_t *v, uint8_t value)
{
    if (v->space != ISA_SPACE_PSUM || !s->psum_pe_written)
        return;
    psum_mark_t pm = {s->psum_pe_written, s->psum_bank_pe, s->psum_bank_bytes, value};
    mdl_view_runs(&s->mem, v, psum_mark_run, &pm);
}

typedef struct psum_scan {
    const uint8_t *flags;
    const uint8_t *bank_pe; /* s->psum_bank_pe (may be NULL) */
    uint64_t bank_bytes;
    uint64_t pbytes;
    uint64_t bad;
    uint64_t pmin, pmax, bmin, bmax;
    int never, other;
} psum_scan_t;

static int psum_scan_run(void *c, uint64_t addr, int64_t bs, uint64_t n, uint32_t es)
{
    psum_scan_t *ps = c;
    uint64_t i = 0;
    /* banks known to be all-pe need no word scan (the usual accumulation group) */
    if (bs == 4 && es == 4 && addr % 4 == 0 && banks_all_pe(ps->bank_pe, ps->bank_bytes, addr, n))
        return 0;
    if (bs == 4 && es == 4 && addr % 4 == 0) {
        /* the common case, a contiguous fp32 run: skip words last written by pe eight at a
         * time (this check runs on every accumulating matmul) */
        const uint8_t *f = ps->flags + addr / 4;
        const uint64_t all_pe = 0x0101010101010101ull * (uint8_t)EXEC_PSUM_PE;
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, f + i, sizeof w);
            if (w != all_pe)
                break;
        }
    }
    for (; i < n; i++) {
        uint64_t a = addr + (uint64_t)((int64_t)i * bs);
        for (uint64_t w = a / 4; w <= (a + es - 1) / 4; w++) {
            uint8_t f = ps->flags[w];
            if (f == EXEC_PSUM_PE)
                continue;
            uint64_t p = a / ps->pbytes, off = a % ps->pbytes;
            if (ps->bad++ == 0) {
                ps->pmin = ps->pmax = p;
                ps->bmin = off;
                ps->bmax = off + es;
            }
            if (p < ps->pmin)
                ps->pmin = p;
            if (p > ps->pmax)
                ps->pmax = p;
            if (off < ps->bmin)
                ps->bmin = off;
            if (off + es > ps->bmax)
                ps->bmax = off + es;
            if (f == EXEC_PSUM_NEVER)
                ps->never = 1;
            else
                ps->other = 1;
        }
    }
    return 0;
}

/* matmul ... acc: every word of D must have been last written by pe (ISA.md 7.1). */
static ncsim_status_t psum_check_accumulate(exec_ctx_t *x, const isa_view_t *d)
{
    mdl_core_state_t *s = x->s;
    if (!s->psum_pe_written)
        return NCSIM_OK;
    psum_scan_t ps;
    memset(&ps, 0, sizeof ps);
    ps.flags = s->psum_pe_written;
    ps.bank_pe = s->psum_bank_pe;
    ps.bank_bytes = s->psum_bank_bytes;
    ps.pbytes = s->mem.psum->bytes;
    mdl_view_runs(&s->mem, d, psum_scan_run, &ps);
    if (!ps.bad)
        return NCSIM_OK;
    const char *why = ps.never && ps.other ? "were never written or were last written by another "
                                             "engine than pe"
                      : ps.never           ? "were never written"
                                           : "were last written by another engine than pe";
    return exec_fail(x,
                     "accumulating (acc) into PSUM partitions %" PRIu64 "..%" PRIu64
                     ", bytes %" PRIu64 "..%" PRIu64 " that %s; the first matmul of an "
                     "accumulation group must not use acc",
                     ps.pmin, ps.pmax, ps.bmin, ps.bmax, why);
}

ncsim_status_t exec_write_f32(exec_ctx_t *x, const isa_view_t *v, const float *in)
{
    mdl_core_state_t *s = x->s;
    if (mdl_view_write_f32(&s->mem, v, in, s->rounding, x->rng))
        return exec_nomem(x);
    psum_mark(s, v, x->engine == ISA_ENGINE_PE ? EXEC_PSUM_PE : EXEC_PSUM_OTHER);
    return NCSIM_OK;
}

ncsim_status_t exec_write_i64(exec_ctx_t *x, const isa_view_t *v, const int64_t *in)
{
    mdl_core_state_t *s = x->s;
    if (mdl_view_write_i64(&s->mem, v, in))
        return exec_nomem(x);
    psum_mark(s, v, x->engine == ISA_ENGINE_PE ? EXEC_PSUM_PE : EXEC_PSUM_OTHER);
    return NCSIM_OK;
}

isa_view_t exec_subview_partitions(const isa_view_t *v, uint32_t first, uint32_t n)
{
    isa_view_t r = *v;
    r.pstart = (uint8_t)(v->pstart + first);
    r.pcount = (uint16_t)n;
    return r;
}

ncsim_status_t exec_scalar(exec_ctx_t *x, unsigned slot, uint32_t pcount, double dflt, int as_int,
                           isa_alu_t op, unsigned k, exec_scalar_t *out)
{
    const isa_arg_t *a = &x->args[slot];
    memset(out, 0, sizeof *out);
    if (!a->present || !a->is_view) {
        double d = a->present ? a->v.f : dflt;
        out->f = (float)d;
        if (as_int) {
            if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
                (double)(int64_t)d != d)
                return exec_fail(x, "%s = %g is not an integer (%s needs integers)",
                                 exec_slot_name(x, slot), d, isa_alu_name(op));
            out->i = (int64_t)d;
        }
        return NCSIM_OK;
    }
    const isa_view_t *v;
    ncsim_status_t st = exec_view(x, slot, exec_engine_spaces(x), &v);
    if (st != NCSIM_OK)
        return st;
    if (v->space == ISA_SPACE_HBM || v->pcount != pcount || isa_view_free_elems(v) != 1)
        return exec_fail(x,
                         "%s must be an immediate or a [%u, 1] per-partition vector, but it has "
                         "%u partitions x %" PRIu64 " elements",
                         exec_slot_name(x, slot), pcount, v->pcount, isa_view_free_elems(v));
    out->is_view = 1;
    void *buf = exec_small(x, k);
    if (!buf)
        return exec_nomem(x);
    if (as_int) {
        if ((st = exec_need_int(x, slot, v, op)) != NCSIM_OK)
            return st;
        exec_read_i64(x, v, buf);
        out->iv = buf;
    } else {
        exec_read_f32(x, v, buf);
        out->fv = buf;
    }
    return NCSIM_OK;
}

/* ---- Tensor engine -----------------------------------------------------------------------------
 */

static ncsim_status_t need_pe_input_type(exec_ctx_t *x, unsigned slot, const isa_view_t *v)
{
    if (isa_dtype_is_float((isa_dtype_t)v->dtype))
        return NCSIM_OK;
    return exec_fail(x,
                     "%s has type %s; the PE array takes fp32, bf16, fp16, tf32, fp8e4, fp8e5 or "
                     "fp8e3",
                     exec_slot_name(x, slot), isa_dtype_name((isa_dtype_t)v->dtype));
}

/* ldweights STAT: the stationary [K, M] matrix, widened to fp32, stays in the array. */
static ncsim_status_t exec_ldweights(exec_ctx_t *x)
{
    const isa_view_t *stat;
    ncsim_status_t st;
    if ((st = exec_view(x, SLOT_LDW_STAT, EXEC_SB, &stat)) != NCSIM_OK ||
        (st = need_pe_input_type(x, SLOT_LDW_STAT, stat)) != NCSIM_OK)
        return st;
    uint32_t k = stat->pcount;
    uint64_t m = isa_view_free_elems(stat);
    if (k > PE_MAX_K)
        return exec_fail(x, "STAT has %u partitions (K); at most %u", k, PE_MAX_K);
    if (m > PE_MAX_M)
        return exec_fail(x, "STAT has %" PRIu64 " free elements (M); at most %u", m, PE_MAX_M);
    mdl_pe_state_t *pe = &x->s->pe;
    float *w = realloc(pe->weights, (size_t)k * (size_t)m * sizeof *w);
    if (!w)
        return exec_nomem(x);
    pe->weights = w;
    exec_read_f32(x, stat, w); /* row-major over (partition k, element m): K x M */
    pe->k = k;
    pe->m = (uint32_t)m;
    pe->loaded = 1;
    pe->dtype = (isa_dtype_t)stat->dtype;
    return NCSIM_OK;
}

/*
 * MOV widened to fp32. A blocked GEMM streams each moving tile through several stationaries,
 * and widening it again each time cost about a tenth of a functional GEMM; so the widening
 * of the last few tiles is kept while their SBUF bytes are unchanged (a watch on them ends
 * at the first write that overlaps: models/mem.c). The values are the ones a fresh read
 * gives, bit for bit. NULL when out of memory.
 */
static const float *widened_moving(exec_ctx_t *x, const isa_view_t *mov, size_t n)
{
    mdl_core_state_t *s = x->s;
    struct mdl_widened *w = s->widened;
    unsigned victim = 0;
    uint64_t oldest = UINT64_MAX;
    for (unsigned i = 0; i < MDL_ONCHIP_WATCHES; i++) {
        const int live = mdl_view_watch_live(&s->mem, mov->space, i);
        if (live && isa_view_equal(&w[i].view, mov)) {
            w[i].used = ++s->widen_clock;
            return w[i].data;
        }
        /* replace a tile whose bytes changed first, else the least recently used */
        const uint64_t age = live ? w[i].used : 0;
        if (age < oldest) {
            oldest = age;
            victim = i;
        }
    }
    struct mdl_widened *e = &w[victim];
    if (e->cap < n) {
        float *p = realloc(e->data, n * sizeof *p);
        if (!p)
            return NULL;
        e->data = p;
        e->cap = n;
    }
    exec_read_f32(x, mov, e->data);
    e->view = *mov;
    e->used = ++s->widen_clock;
    mdl_view_watch(&s->mem, mov, victim);
    return e->data;
}

/*
 * matmul D, MOV [, acc]: D[M, N] (+)= W^T . MOV[K, N], W the loaded [K, M]. Inputs are exact
 * fp32 widenings, so one sgemm in fp32 reproduces the array's fp32 accumulation (up to the
 * summation order inside a column, which the hardware does not publish either).
 */
static ncsim_status_t exec_matmul(exec_ctx_t *x)
{
    const isa_view_t *d, *mov;
    ncsim_status_t st;
    if ((st = exec_view(x, SLOT_MM_D, EXEC_PS, &d)) != NCSIM_OK ||
        (st = exec_view(x, SLOT_MM_MOV, EXEC_SB, &mov)) != NCSIM_OK ||
        (st = need_pe_input_type(x, SLOT_MM_MOV, mov)) != NCSIM_OK ||
        (st = exec_need_dtype(x, SLOT_MM_D, d, ISA_DT_FP32)) != NCSIM_OK)
        return st;
    const mdl_pe_state_t *pe = &x->s->pe;
    if (!pe->loaded)
        return exec_fail(x, "no weights are loaded in the PE array (ldweights must come first)");
    const uint32_t k = mov->pcount, m = pe->m;
    const uint64_t n = isa_view_free_elems(mov);
    if (k != pe->k)
        return exec_fail(x, "MOV has %u partitions (K) but the loaded weights have K = %u", k,
                         pe->k);
    if (n > PE_MAX_N)
        return exec_fail(x, "MOV has %" PRIu64 " free elements (N); at most %u", n, PE_MAX_N);
    if (d->pcount != m)
        return exec_fail(x, "D has %u partitions but the loaded weights have M = %u columns",
                         d->pcount, m);
    if (isa_view_free_elems(d) != n)
        return exec_fail(x,
                         "D has %" PRIu64 " free elements per partition but MOV has N = %" PRIu64,
                         isa_view_free_elems(d), n);
    const uint64_t bank = x->s->psum_bank_bytes;
    if (bank) {
        int64_t lo, hi;
        isa_view_byte_range(d, &lo, &hi);
        if ((uint64_t)lo / bank != (uint64_t)(hi - 1) / bank)
            return exec_fail(x,
                             "D bytes %" PRId64 "..%" PRId64 " cross a PSUM bank boundary (banks "
                             "of %" PRIu64 " bytes)",
                             lo, hi, bank);
    }
    const int acc = exec_flag(x, SLOT_MM_ACC);
    if (acc && (st = psum_check_accumulate(x, d)) != NCSIM_OK)
        return st;
    const char *why = NULL;
    const mdl_sgemm_fn sgemm = mdl_blas_sgemm(&why);
    if (!sgemm) {
        if (x->errlen)
            snprintf(x->err, x->errlen, "%s: %s", x->mnemonic, why);
        return NCSIM_INTERNAL;
    }
    const float *b = widened_moving(x, mov, (size_t)k * n);
    float *c = exec_scratch(x, 1, (size_t)m * n);
    if (!b || !c)
        return exec_nomem(x);
    const mdl_onchip_t *ps = x->s->mem.psum;
    if (d->ndims == 1 && d->stride[0] == 1 && d->offset % 4 == 0 && ps->bytes % 4 == 0) {
        /* D is a contiguous fp32 row in each partition (the usual case): sgemm accumulates
         * straight into PSUM, one partition ps->bytes apart, without copying D out and back */
        float *cp = (float *)(void *)(ps->data + (uint64_t)d->pstart * ps->bytes + d->offset);
        sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,
                    pe->weights, (int)m, b, (int)n, acc ? 1.0f : 0.0f, cp, (int)(ps->bytes / 4));
        psum_mark(x->s, d, EXEC_PSUM_PE);
        return NCSIM_OK;
    }
    if (acc)
        exec_read_f32(x, d, c);
    else
        memset(c, 0, (size_t)m * n * sizeof *c);
    sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, pe->weights,
          (int)m, b, (int)n, acc ? 1.0f : 0.0f, c, (int)n);
    return exec_write_f32(x, d, c);
}

/* transpose on pe: D[F, P] = SRC[P, F]^T, SBUF -> PSUM, an identity matmul (a pe write). */
static ncsim_status_t exec_transpose_pe(exec_ctx_t *x)
{
    const isa_view_t *d, *src;
    ncsim_status_t st;
    if ((st = exec_view(x, SLOT_TR_D, EXEC_PS, &d)) != NCSIM_OK ||
        (st = exec_view(x, SLOT_TR_SRC, EXEC_SB, &src)) != NCSIM_OK ||
        (st = need_pe_input_type(x, SLOT_TR_SRC, src)) != NCSIM_OK)
        return st;
    if (!isa_dtype_is_float((isa_dtype_t)d->dtype))
        return exec_fail(x, "D has type %s; pe writes floating-point PSUM",
                         isa_dtype_name((isa_dtype_t)d->dtype));
    const uint32_t p = src->pcount;
    const uint64_t f = isa_view_free_elems(src);
    if (p > PE_MAX_TRANSPOSE || f > PE_MAX_TRANSPOSE)
        return exec_fail(x, "SRC is [%u, %" PRIu64 "]; transpose on pe takes at most [%u, %u]", p,
                         f, PE_MAX_TRANSPOSE, PE_MAX_TRANSPOSE);
    if (d->pcount != f || isa_view_free_elems(d) != p)
        return exec_fail(x,
                         "D has %u partitions x %" PRIu64 " elements; the transpose of SRC [%u, "
                         "%" PRIu64 "] needs %" PRIu64 " partitions x %u elements",
                         d->pcount, isa_view_free_elems(d), p, f, f, p);
    float *a = exec_scratch(x, 0, (size_t)p * f), *t = exec_scratch(x, 1, (size_t)p * f);
    if (!a || !t)
        return exec_nomem(x);
    exec_read_f32(x, src, a);
    for (uint32_t i = 0; i < p; i++)
        for (uint64_t j = 0; j < f; j++)
            t[j * p + i] = a[(uint64_t)i * f + j];
    return exec_write_f32(x, d, t);
}

/* ---- DMA --------------------------------------------------------------------------------------
 */

static ncsim_status_t dma_check(exec_ctx_t *x, const isa_view_t *dst, const isa_view_t *src)
{
    const isa_view_t *v[2] = {dst, src};
    const char *names[2] = {"D", "SRC"};
    char msg[256];
    for (int i = 0; i < 2; i++) {
        if (mdl_view_check(&x->s->mem, v[i], msg, sizeof msg))
            return exec_fail(x, "%s: %s", names[i], msg);
        if (v[i]->space == ISA_SPACE_PSUM)
            return exec_fail(x,
                             "%s is in PSUM; DMA moves data between HBM and SBUF only "
                             "(PSUM is reached through act or dve)",
                             names[i]);
    }
    if (isa_view_elems(dst) != isa_view_elems(src))
        return exec_fail(x, "D has %" PRIu64 " elements but SRC has %" PRIu64, isa_view_elems(dst),
                         isa_view_elems(src));
    return NCSIM_OK;
}

/* Validate a dma at issue (the copy itself happens in mdl_exec_dma when it lands). */
static ncsim_status_t exec_dma_issue(exec_ctx_t *x)
{
    const isa_arg_t *a = x->args;
    for (unsigned slot = SLOT_DMA_D; slot <= SLOT_DMA_SRC; slot++)
        if (!a[slot].present || a[slot].index >= x->prog->nviews)
            return exec_fail(x, "missing operand %s", exec_slot_name(x, slot));
    if (a[SLOT_DMA_QUEUE].present && (a[SLOT_DMA_QUEUE].v.i < 0 || a[SLOT_DMA_QUEUE].v.i > 15))
        return exec_fail(x, "queue=%" PRId64 " is not a DMA queue (0..15)", a[SLOT_DMA_QUEUE].v.i);
    return dma_check(x, &x->prog->views[a[SLOT_DMA_D].index],
                     &x->prog->views[a[SLOT_DMA_SRC].index]);
}

ncsim_status_t mdl_exec_dma(mdl_core_state_t *s, const isa_view_t *dst, const isa_view_t *src,
                            int accumulate, char *err, size_t errlen)
{
    exec_ctx_t x = {.s = s,
                    .prog = s->prog,
                    .op = ISA_OP_DMA,
                    .engine = ISA_ENGINE_SP,
                    .mnemonic = "dma",
                    .rng = &s->rng[ISA_ENGINE_SP],
                    .err = err,
                    .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    ncsim_status_t st = dma_check(&x, dst, src);
    if (st != NCSIM_OK)
        return st;
    const uint64_t total = isa_view_elems(dst);
    const uint64_t chunk = total < DMA_CHUNK_ELEMS ? total : DMA_CHUNK_ELEMS;
    if (!accumulate && dst->dtype == src->dtype) {
        /* Same type: the fp32 round trip is the identity, so move the bytes (exact for
         * integers beyond 2^24 and NaN payloads too). */
        if (dst->space != src->space) {
            /* HBM <-> SBUF: straight from one to the other, no staging copy */
            if (mdl_view_copy_bytes(&s->mem, dst, src))
                return exec_nomem(&x);
            return NCSIM_OK;
        }
        const uint32_t es = isa_dtype_size((isa_dtype_t)src->dtype);
        float *buf = exec_scratch(&x, 0, (size_t)((chunk * es + 3) / 4));
        if (!buf)
            return exec_nomem(&x);
        for (uint64_t first = 0; first < total; first += chunk) {
            uint64_t n = total - first < chunk ? total - first : chunk;
            mdl_view_read_bytes_range(&s->mem, src, first, n, buf);
            if (mdl_view_write_bytes_range(&s->mem, dst, first, n, buf))
                return exec_nomem(&x);
        }
        return NCSIM_OK;
    }
    float *a = exec_scratch(&x, 0, (size_t)chunk);
    float *b = accumulate ? exec_scratch(&x, 1, (size_t)chunk) : NULL;
    if (!a || (accumulate && !b))
        return exec_nomem(&x);
    for (uint64_t first = 0; first < total; first += chunk) {
        uint64_t n = total - first < chunk ? total - first : chunk;
        mdl_view_read_f32_range(&s->mem, src, first, n, a);
        if (accumulate) {
            mdl_view_read_f32_range(&s->mem, dst, first, n, b);
            for (uint64_t i = 0; i < n; i++)
                a[i] += b[i];
        }
        if (mdl_view_write_f32_range(&s->mem, dst, first, n, a, s->rounding, x.rng))
            return exec_nomem(&x);
    }
    return NCSIM_OK;
}

/* ---- Dispatch ------------------------------------------------------------------------------ */

ncsim_status_t mdl_exec(mdl_core_state_t *s, const isa_instr_t *in, char *err, size_t errlen)
{
    exec_ctx_t x = {.s = s,
                    .prog = s->prog,
                    .in = in,
                    .op = (isa_op_t)in->op,
                    .engine = (isa_engine_t)in->engine,
                    .mnemonic = "?",
                    .err = err,
                    .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    if (in->op >= ISA_OP_COUNT)
        return exec_fail(&x, "invalid opcode %u", in->op);
    const isa_op_info_t *info = isa_op_info(x.op);
    x.mnemonic = info->mnemonic;
    if (in->engine >= ISA_ENGINE_COUNT || !(info->engines & (1u << in->engine)))
        return exec_fail(&x, "not an instruction of engine %s",
                         isa_engine_name((isa_engine_t)in->engine));
    if (info->nslots && (uint64_t)in->args + info->nslots > s->prog->nargs)
        return exec_fail(&x, "operand slots %u..%u beyond the program's %u", in->args,
                         in->args + info->nslots - 1, s->prog->nargs);
    x.args = info->nslots ? isa_instr_args(s->prog, in) : NULL;
    x.rng = &s->rng[in->engine];

    switch (x.op) {
    case ISA_OP_LDWEIGHTS:
        return exec_ldweights(&x);
    case ISA_OP_MATMUL:
        return exec_matmul(&x);
    case ISA_OP_TRANSPOSE:
        return x.engine == ISA_ENGINE_PE ? exec_transpose_pe(&x) : exec_transpose_dve(&x);
    case ISA_OP_ACTIVATE:
        return exec_activate(&x);
    case ISA_OP_TENSOR_TENSOR:
        return exec_tensor_tensor(&x);
    case ISA_OP_TENSOR_SCALAR:
        return exec_tensor_scalar(&x);
    case ISA_OP_SCALAR_TENSOR_TENSOR:
        return exec_scalar_tensor_tensor(&x);
    case ISA_OP_TENSOR_REDUCE:
        return exec_tensor_reduce(&x);
    case ISA_OP_TENSOR_SCAN:
        return exec_tensor_scan(&x);
    case ISA_OP_TENSOR_COPY:
        return exec_tensor_copy(&x);
    case ISA_OP_MEMSET:
        return exec_memset(&x);
    case ISA_OP_SELECT:
        return exec_select(&x);
    case ISA_OP_RECIPROCAL:
        return exec_reciprocal(&x);
    case ISA_OP_BN_STATS:
        return exec_bn_stats(&x);
    case ISA_OP_BN_AGGR:
        return exec_bn_aggr(&x);
    case ISA_OP_SHUFFLE:
        return exec_shuffle(&x);
    case ISA_OP_MAX8:
        return exec_max8(&x);
    case ISA_OP_FIND_INDEX8:
        return exec_find_index8(&x);
    case ISA_OP_MATCH_REPLACE8:
        return exec_match_replace8(&x);
    case ISA_OP_DROPOUT:
        return exec_dropout(&x);
    case ISA_OP_IOTA:
        return exec_iota(&x);
    case ISA_OP_AFFINE_SELECT:
        return exec_affine_select(&x);
    case ISA_OP_PARTITION_REDUCE:
        return exec_partition_reduce(&x);
    case ISA_OP_DMA:
        return exec_dma_issue(&x);
    case ISA_OP_NOP:
        return NCSIM_OK;
    case ISA_OP_ALL_REDUCE:
    case ISA_OP_ALL_GATHER:
    case ISA_OP_REDUCE_SCATTER:
    case ISA_OP_ALL_TO_ALL:
    case ISA_OP_SEND:
    case ISA_OP_RECV:
        if (errlen)
            snprintf(err, errlen,
                     "%s: collectives are executed by the collective model, not "
                     "mdl_exec",
                     x.mnemonic);
        return NCSIM_INTERNAL;
    case ISA_OP_COUNT:
        break;
    }
    return exec_fail(&x, "invalid opcode %u", in->op);
}
