/*
 * dis.c -- the disassembler: a program back to NCA text (ISA.md) that assembles to the same
 * program, and the one-line instruction/view formatters used by traces and error messages.
 *
 * Every declaration is printed with explicit placement (addresses, partitions, offsets,
 * semaphore order), so the assembler has nothing left to choose. A view is printed as a named
 * slice only when the slice text provably denotes exactly that view (it is recomputed from the
 * slice and compared field by field); otherwise in raw form, which is always exact.
 */
#include "dis.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- output: a growing string, or snprintf-style into a fixed buffer --------------------- */

typedef struct out {
    char *p;
    size_t len; /* length the text needs (may exceed cap in fixed mode) */
    size_t cap;
    int grow; /* 1: realloc as needed; 0: fixed buffer of cap bytes, truncating */
    int oom;
} out_t;

static void out_write(out_t *o, const char *s, size_t n)
{
    if (o->grow) {
        if (o->oom)
            return;
        if (o->len + n + 1 > o->cap) {
            size_t cap = o->cap ? o->cap : 1024;
            while (cap < o->len + n + 1)
                cap *= 2;
            char *p = realloc(o->p, cap);
            if (!p) {
                o->oom = 1;
                return;
            }
            o->p = p;
            o->cap = cap;
        }
        memcpy(o->p + o->len, s, n);
        o->len += n;
        o->p[o->len] = '\0';
        return;
    }
    if (o->cap && o->len < o->cap - 1) {
        size_t k = o->cap - 1 - o->len < n ? o->cap - 1 - o->len : n;
        memcpy(o->p + o->len, s, k);
        o->p[o->len + k] = '\0';
    }
    o->len += n;
}

static void out_puts(out_t *o, const char *s)
{
    out_write(o, s, strlen(s));
}

static void out_printf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(out_t *o, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof buf) {
        out_write(o, buf, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        o->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    out_write(o, big, (size_t)n);
    free(big);
}

/* ---- numbers --------------------------------------------------------------------------------- */

static void put_int(out_t *o, int64_t v)
{
    if (v == INT64_MIN)
        out_puts(o, "(-9223372036854775807-1)"); /* the literal itself would overflow */
    else
        out_printf(o, "%" PRId64, v);
}

/*
 * The shortest text that reads back (strtod) to the identical double, always looking like a
 * float (a '.' or an exponent) so an assembler cannot take it for an integer: -0.0 keeps its
 * sign that way.
 */
static void put_double(out_t *o, double d)
{
    if (d != d) {
        out_puts(o, "nan");
        return;
    }
    if (d > 1.7976931348623157e308 || d < -1.7976931348623157e308) {
        out_puts(o, d > 0 ? "inf" : "-inf");
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        double back = strtod(buf, NULL);
        if (memcmp(&back, &d, sizeof d) == 0)
            break;
    }
    out_puts(o, buf);
    if (!strpbrk(buf, ".eE"))
        out_puts(o, ".0");
}

/* ---- names ----------------------------------------------------------------------------------- */

static const char *real_name(const isa_program_t *p, uint32_t off)
{
    return off == ISA_NO_NAME ? "" : isa_string(p, off);
}

static int name_taken(const isa_program_t *p, const char *s)
{
    for (uint32_t i = 0; i < p->ntensors; i++)
        if (strcmp(real_name(p, p->tensors[i].name), s) == 0)
            return 1;
    for (uint32_t i = 0; i < p->nsems; i++)
        if (strcmp(real_name(p, p->sems[i].name), s) == 0)
            return 1;
    for (uint32_t i = 0; i < p->ngroups; i++)
        if (strcmp(real_name(p, p->groups[i].name), s) == 0)
            return 1;
    return 0;
}

/*
 * A declared name, or for an unnamed (stripped) declaration a generated one: the prefix and
 * its index, with '_' appended while it collides with a real name. Generated names differ
 * from each other by their digits, so they are unique too.
 */
static void put_name(out_t *o, const isa_program_t *p, uint32_t off, char prefix, uint32_t index)
{
    const char *s = real_name(p, off);
    if (*s) {
        out_puts(o, s);
        return;
    }
    char buf[48];
    int n = snprintf(buf, sizeof buf, "%c%u", prefix, index);
    while (n > 0 && (size_t)n < sizeof buf - 1 && name_taken(p, buf)) {
        buf[n++] = '_';
        buf[n] = '\0';
    }
    out_puts(o, buf);
}

/*
 * Invented names are numbered by canonical position (FORMAT.md 3.3), not by array index, so
 * that a program and its written-and-read-back copy disassemble to the same text.
 */
static uint64_t tensor_class(const isa_tensor_t *t)
{
    return t->space == ISA_SPACE_HBM ? 0 : t->core < 0 ? 1 : 2 + (uint64_t)t->core;
}

static uint32_t tensor_position(const isa_program_t *p, uint32_t ti)
{
    uint64_t key = tensor_class(&p->tensors[ti]);
    uint32_t pos = 0;
    for (uint32_t j = 0; j < p->ntensors; j++) {
        uint64_t k = tensor_class(&p->tensors[j]);
        pos += k < key || (k == key && j < ti);
    }
    return pos;
}

static uint64_t sem_key(const isa_sem_t *s)
{
    return ((uint64_t)((int64_t)s->core + 1) & 0xFFFFFF) << 8 | s->index;
}

static uint32_t sem_position(const isa_program_t *p, uint32_t si)
{
    uint64_t key = sem_key(&p->sems[si]);
    uint32_t pos = 0;
    for (uint32_t j = 0; j < p->nsems; j++) {
        uint64_t k = sem_key(&p->sems[j]);
        pos += k < key || (k == key && j < si);
    }
    return pos;
}

static void put_tensor_name(out_t *o, const isa_program_t *p, uint32_t ti)
{
    const isa_tensor_t *t = &p->tensors[ti];
    if (t->name != ISA_NO_NAME && *isa_string(p, t->name))
        out_puts(o, isa_string(p, t->name));
    else
        put_name(o, p, ISA_NO_NAME, 't', tensor_position(p, ti));
}

static void put_sem_name(out_t *o, const isa_program_t *p, uint32_t si)
{
    const isa_sem_t *s = &p->sems[si];
    if (s->name != ISA_NO_NAME && *isa_string(p, s->name))
        out_puts(o, isa_string(p, s->name));
    else
        put_name(o, p, ISA_NO_NAME, 's', sem_position(p, si));
}

static void put_sem(out_t *o, const isa_program_t *p, uint32_t core, unsigned index)
{
    for (uint32_t i = 0; i < p->nsems; i++) {
        const isa_sem_t *s = &p->sems[i];
        if (s->index == index && (s->core == -1 || (uint32_t)s->core == core)) {
            put_sem_name(o, p, i);
            return;
        }
    }
    out_printf(o, "sem%u", index); /* undeclared: only in programs the loader would reject */
}

/* ---- views ----------------------------------------------------------------------------------- */

static void put_raw_view(out_t *o, const isa_view_t *v)
{
    const char *dt = isa_dtype_name((isa_dtype_t)v->dtype);
    if (v->space == ISA_SPACE_HBM)
        out_printf(o, "hbm:%s+0x%" PRIx64 "[", dt, v->offset);
    else
        out_printf(o, "%s:%s@%u:%u+%" PRIu64 "[", isa_space_keyword((isa_space_t)v->space), dt,
                   v->pstart, (unsigned)v->pstart + v->pcount, v->offset);
    unsigned nd = v->ndims <= ISA_MAX_DIMS ? v->ndims : ISA_MAX_DIMS;
    for (unsigned i = 0; i < nd; i++)
        out_printf(o, "%s%" PRId64 "x%u", i ? ", " : "", v->stride[i], v->count[i]);
    out_puts(o, "]");
}

/* One index of a named slice: an integer index, or start:stop:step with optional bounds. */
typedef struct dim_spec {
    uint8_t is_index;
    uint8_t has_start, has_stop;
    int64_t start, stop, step;
} dim_spec_t;

/* Element strides of a tensor's free dims (row-major), and their product; -1 if too large. */
static int tensor_layout(const isa_tensor_t *t, unsigned first, uint64_t *stride, uint64_t *total)
{
    uint64_t n = 1;
    for (unsigned d = t->ndims; d-- > first;) {
        stride[d] = n;
        if (t->dims[d] == 0 || t->dims[d] > ((uint64_t)1 << 62) / n)
            return -1;
        n *= t->dims[d];
    }
    *total = n;
    return 0;
}

/*
 * The view a named slice denotes (ISA.md 5.1, NumPy basic slicing): integer indices drop a
 * free dim, the partition dim is always kept, omitted bounds follow NumPy for either sign of
 * step. Returns -1 for a slice the assembler would reject.
 */
static int spec_view(const isa_tensor_t *t, const dim_spec_t *sp, isa_view_t *v)
{
    int local = t->space != ISA_SPACE_HBM;
    unsigned first = local ? 1 : 0;
    uint64_t T[ISA_MAX_DIMS + 1], total;
    if (t->ndims < 1 || t->ndims > ISA_MAX_DIMS + 1 || tensor_layout(t, first, T, &total))
        return -1;
    memset(v, 0, sizeof *v);
    v->space = t->space;
    v->dtype = t->dtype;
    v->pcount = 1;
    if (local) {
        int64_t P = (int64_t)t->dims[0];
        int64_t a = sp[0].is_index || sp[0].has_start ? sp[0].start : 0;
        int64_t b = sp[0].is_index ? a + 1 : sp[0].has_stop ? sp[0].stop : P;
        if (a < 0 || b > P || b <= a || (!sp[0].is_index && sp[0].step != 1))
            return -1;
        v->pstart = (uint8_t)(t->pstart + (uint64_t)a);
        v->pcount = (uint16_t)(b - a);
    }
    int64_t off = 0;
    unsigned nd = 0;
    for (unsigned d = first; d < t->ndims; d++) {
        const dim_spec_t *s = &sp[d];
        int64_t f = (int64_t)t->dims[d];
        if (s->is_index) {
            if (s->start < 0 || s->start >= f)
                return -1;
            off += s->start * (int64_t)T[d];
            continue;
        }
        int64_t step = s->step, a, b, n;
        if (step > 0) {
            a = s->has_start ? s->start : 0;
            b = s->has_stop ? s->stop : f;
            n = b > a ? (b - a + step - 1) / step : 0;
        } else if (step < 0) {
            a = s->has_start ? s->start : f - 1;
            b = s->has_stop ? s->stop : -1;
            n = a > b ? (a - b - step - 1) / -step : 0;
        } else {
            return -1;
        }
        if (a < 0 || a >= f || n < 1 || n > ISA_MAX_COUNT || nd >= ISA_MAX_DIMS)
            return -1;
        off += a * (int64_t)T[d];
        /* as the assembler: with one element the step does not matter, the stride is the dim's */
        v->stride[nd] = n == 1 ? (int64_t)T[d] : step * (int64_t)T[d];
        v->count[nd] = (uint32_t)n;
        nd++;
    }
    v->ndims = (uint8_t)nd;
    v->offset = t->offset + (uint64_t)off * isa_dtype_size((isa_dtype_t)t->dtype);
    return 0;
}

/*
 * Find slice indices of tensor t that select exactly view v, or return -1. The element offset
 * of v inside t has a unique mixed-radix decomposition into per-dim starts; the view's dims
 * are then matched to an increasing subset of the tensor's free dims (the rest are integer
 * indices), each view stride being a non-zero multiple (the step) of that dim's stride.
 */
static int derive_slice(const isa_tensor_t *t, const isa_view_t *v, dim_spec_t *sp)
{
    int local = t->space != ISA_SPACE_HBM;
    unsigned first = local ? 1 : 0;
    uint64_t T[ISA_MAX_DIMS + 1], total;
    if (v->space != t->space || v->dtype != t->dtype || t->ndims < 1 ||
        t->ndims > ISA_MAX_DIMS + 1 || v->ndims > ISA_MAX_DIMS ||
        tensor_layout(t, first, T, &total))
        return -1;
    memset(sp, 0, sizeof(dim_spec_t) * (ISA_MAX_DIMS + 1));
    if (local) {
        uint64_t P = t->dims[0];
        if (v->pstart < t->pstart || v->pcount < 1 ||
            v->pstart + (uint64_t)v->pcount > t->pstart + P)
            return -1;
        uint64_t a = v->pstart - t->pstart;
        sp[0].step = 1;
        if (v->pcount == P) {
            /* ':' */
        } else if (v->pcount == 1) {
            sp[0].is_index = 1;
            sp[0].start = (int64_t)a;
        } else {
            sp[0].has_start = sp[0].has_stop = 1;
            sp[0].start = (int64_t)a;
            sp[0].stop = (int64_t)(a + v->pcount);
        }
    }
    uint64_t es = isa_dtype_size((isa_dtype_t)t->dtype);
    if (v->offset < t->offset || (v->offset - t->offset) % es)
        return -1;
    uint64_t e = (v->offset - t->offset) / es;
    if (e >= total)
        return -1;
    int64_t start[ISA_MAX_DIMS + 1];
    for (unsigned d = first; d < t->ndims; d++) {
        start[d] = (int64_t)(e / T[d]);
        e %= T[d];
    }
    unsigned k = t->ndims - first;
    for (unsigned mask = 0; mask < 1u << k; mask++) {
        unsigned bits = 0;
        for (unsigned m = mask; m; m >>= 1)
            bits += m & 1u;
        if (bits != v->ndims)
            continue;
        unsigned j = 0;
        int ok = 1;
        for (unsigned i = 0; i < k && ok; i++) {
            unsigned d = first + i;
            dim_spec_t *s = &sp[d];
            memset(s, 0, sizeof *s);
            if (!(mask >> i & 1)) {
                s->is_index = 1;
                s->start = start[d];
                continue;
            }
            int64_t stride = v->stride[j], f = (int64_t)t->dims[d], a = start[d];
            uint64_t cnt = v->count[j++];
            if (stride == 0 || stride == INT64_MIN || stride % (int64_t)T[d] || cnt < 1) {
                ok = 0;
                break;
            }
            int64_t step = stride / (int64_t)T[d];
            if (cnt == 1 && step != 1) { /* a one-element slice always gets the dim's stride */
                ok = 0;
                break;
            }
            s->step = step;
            if (step > 0) {
                if (cnt - 1 > (uint64_t)(f - 1 - a) / (uint64_t)step) {
                    ok = 0;
                    break;
                }
                int64_t last = a + step * (int64_t)(cnt - 1);
                int64_t stop = f - last > step ? last + step : f;
                if (!(a == 0 && stop == f)) {
                    s->has_start = s->has_stop = 1;
                    s->start = a;
                    s->stop = stop;
                }
            } else {
                if (cnt - 1 > (uint64_t)a / (uint64_t)-step) {
                    ok = 0;
                    break;
                }
                int64_t last = a + step * (int64_t)(cnt - 1);
                if ((uint64_t)-step > (uint64_t)last) { /* runs to the front: omit the stop */
                    s->has_start = a != f - 1;
                    s->start = a;
                } else {
                    s->has_start = s->has_stop = 1;
                    s->start = a;
                    s->stop = last + step;
                }
            }
        }
        isa_view_t check;
        if (ok && spec_view(t, sp, &check) == 0 && isa_view_equal(&check, v))
            return 0;
    }
    return -1;
}

static int spec_is_full(const dim_spec_t *s)
{
    return !s->is_index && !s->has_start && !s->has_stop && s->step == 1;
}

static void put_spec(out_t *o, const dim_spec_t *s)
{
    if (s->is_index) {
        put_int(o, s->start);
        return;
    }
    if (s->has_start)
        put_int(o, s->start);
    out_puts(o, ":");
    if (s->has_stop)
        put_int(o, s->stop);
    if (s->step != 1) {
        out_puts(o, ":");
        put_int(o, s->step);
    }
}

/* Whether tensor t is visible under its name on `core` without ambiguity. */
static int name_unique_on_core(const isa_program_t *p, uint32_t ti, uint32_t core)
{
    const char *name = real_name(p, p->tensors[ti].name);
    if (!*name)
        return 1; /* generated names are unique */
    for (uint32_t i = 0; i < p->ntensors; i++) {
        const isa_tensor_t *u = &p->tensors[i];
        if (i == ti || strcmp(real_name(p, u->name), name) != 0)
            continue;
        if (u->space == ISA_SPACE_HBM || u->core == -1 || (uint32_t)u->core == core)
            return 0;
    }
    return 1;
}

/* Does `name` equal one of the op's flag names (info: NULL when no flag can be meant here)?
 * The assembler reads a bare name after the required operands as the flag, so such a
 * tensor is printed as NAME[:] instead. */
static int is_flag_name(const isa_op_info_t *info, const char *name)
{
    for (unsigned i = 0; info && i < info->nslots; i++)
        if (info->slots[i].form == ISA_FORM_FLAG && strcmp(info->slots[i].name, name) == 0)
            return 1;
    return 0;
}

static void put_view(out_t *o, const isa_program_t *p, uint32_t core, const isa_view_t *v,
                     const isa_op_info_t *info)
{
    dim_spec_t sp[ISA_MAX_DIMS + 1];
    /* Candidates in canonical order (FORMAT.md 3.3: global tensors, then the core's own), so
     * that when tensors alias the choice does not depend on the order in memory. */
    for (uint32_t k = 0; k < 2 * p->ntensors; k++) {
        uint32_t i = k % p->ntensors;
        const isa_tensor_t *t = &p->tensors[i];
        if (t->space != v->space || t->dtype != v->dtype || (t->core >= 0) != (k >= p->ntensors))
            continue;
        if (t->space == ISA_SPACE_HBM ? t->chip != (int32_t)(core / ISA_CORES_PER_CHIP)
                                      : t->core != -1 && (uint32_t)t->core != core)
            continue;
        if (derive_slice(t, v, sp) || !name_unique_on_core(p, i, core))
            continue;
        put_tensor_name(o, p, i);
        unsigned n = t->ndims;
        while (n > 0 && spec_is_full(&sp[n - 1]))
            n--; /* missing trailing indices mean ':' */
        if (n == 0 && !is_flag_name(info, real_name(p, t->name)))
            return;
        if (n == 0) {
            out_puts(o, "[:]");
            return;
        }
        out_puts(o, "[");
        for (unsigned d = 0; d < n; d++) {
            if (d)
                out_puts(o, ", ");
            put_spec(o, &sp[d]);
        }
        out_puts(o, "]");
        return;
    }
    put_raw_view(o, v);
}

size_t isa_format_view(const isa_view_t *v, char *buf, size_t buflen)
{
    out_t o = {buf, 0, buflen, 0, 0};
    if (buf && buflen)
        buf[0] = '\0';
    put_raw_view(&o, v);
    return o.len;
}

/* ---- instructions ---------------------------------------------------------------------------- */

/* Is there a tensor called `name`? (A scalar operand that reads as a name is a view.) */
static int tensor_named(const isa_program_t *p, const char *name)
{
    for (uint32_t i = 0; i < p->ntensors; i++)
        if (strcmp(real_name(p, p->tensors[i].name), name) == 0)
            return 1;
    return 0;
}

static void put_arg(out_t *o, const isa_program_t *p, uint32_t core, const isa_op_info_t *info,
                    const isa_slot_desc_t *slot, const isa_arg_t *a)
{
    switch (slot->kind) {
    case ISA_KIND_VIEW:
        put_view(o, p, core, isa_arg_view(p, a), info);
        break;
    case ISA_KIND_SCALAR:
        if (a->is_view) {
            put_view(o, p, core, isa_arg_view(p, a), info);
        } else if (a->v.f != a->v.f || a->v.f - a->v.f != 0) {
            /* inf, nan: read as a view if a tensor has that name; "(inf)" cannot be */
            out_t t = {NULL, 0, 0, 1, 0};
            put_double(&t, a->v.f);
            const char *txt = t.p ? t.p : "nan";
            int wrap = tensor_named(p, txt);
            out_puts(o, wrap ? "(" : "");
            out_puts(o, txt);
            out_puts(o, wrap ? ")" : "");
            free(t.p);
        } else {
            put_double(o, a->v.f);
        }
        break;
    case ISA_KIND_FLOAT:
        put_double(o, a->v.f);
        break;
    case ISA_KIND_INT:
        put_int(o, a->v.i);
        break;
    case ISA_KIND_LIST:
        out_puts(o, "[");
        for (unsigned k = 0; k < a->count; k++) {
            if (k)
                out_puts(o, ", ");
            put_int(o, p->ints[a->index + k]);
        }
        out_puts(o, "]");
        break;
    case ISA_KIND_ALU:
    case ISA_KIND_RED:
        out_puts(o, isa_alu_name((isa_alu_t)a->v.i));
        break;
    case ISA_KIND_FUNC:
        out_puts(o, isa_func_name((isa_func_t)a->v.i));
        break;
    case ISA_KIND_CMP:
        out_puts(o, isa_cmp_name((isa_cmp_t)a->v.i));
        break;
    case ISA_KIND_GROUP:
        if (a->v.i >= 0 && a->v.i < (int64_t)p->ngroups)
            put_name(o, p, p->groups[a->v.i].name, 'g', (uint32_t)a->v.i);
        else
            out_printf(o, "group%" PRId64, a->v.i);
        break;
    default:
        break;
    }
}

static void put_instr(out_t *o, const isa_program_t *p, uint32_t core, const isa_instr_t *in)
{
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    if (!info) {
        out_printf(o, "<opcode %u>", in->op);
        return;
    }
    out_puts(o, info->mnemonic);
    const isa_arg_t *args = isa_instr_args(p, in);
    unsigned required = 0, npos = 0;
    for (unsigned i = 0; i < info->nslots; i++)
        required += info->slots[i].form == ISA_FORM_POSITIONAL && !info->slots[i].optional;
    int first = 1;
    for (unsigned i = 0; i < info->nslots; i++) {
        const isa_slot_desc_t *slot = &info->slots[i];
        if (!args[i].present)
            continue;
        /* after the required positionals the assembler reads a bare flag name as the flag */
        const isa_op_info_t *flags = NULL;
        if (slot->form == ISA_FORM_POSITIONAL && npos++ >= required)
            flags = info;
        out_puts(o, first ? " " : ", ");
        first = 0;
        if (slot->form == ISA_FORM_FLAG) {
            out_puts(o, slot->name);
            continue;
        }
        if (slot->form == ISA_FORM_OPTION) {
            out_puts(o, slot->name);
            out_puts(o, "=");
        }
        put_arg(o, p, core, flags, slot, &args[i]);
    }
    for (unsigned k = 0; k < in->nwait && k < ISA_MAX_WAITS; k++) {
        out_puts(o, " | wait ");
        put_sem(o, p, core, in->wait[k].sem);
        out_printf(o, " %s %" PRId32,
                   in->wait[k].op == ISA_WAIT_EQ ? "==" : ">=", in->wait[k].value);
    }
    for (unsigned k = 0; k < in->npost && k < ISA_MAX_POSTS; k++) {
        const isa_sync_t *s = &in->post[k];
        out_puts(o, " | post ");
        put_sem(o, p, core, s->sem);
        if (s->op == ISA_POST_ADD && s->value == 1)
            continue;
        out_printf(o, " %s %" PRId32,
                   s->op == ISA_POST_SUB   ? "-="
                   : s->op == ISA_POST_SET ? "="
                                           : "+=",
                   s->value);
    }
}

size_t isa_format_instr(const isa_program_t *prog, uint32_t core, const isa_instr_t *in, char *buf,
                        size_t buflen)
{
    out_t o = {buf, 0, buflen, 0, 0};
    if (buf && buflen)
        buf[0] = '\0';
    put_instr(&o, prog, core, in);
    return o.len;
}

/* ---- whole program --------------------------------------------------------------------------- */

static void put_dims(out_t *o, const isa_tensor_t *t)
{
    out_puts(o, "[");
    for (unsigned d = 0; d < t->ndims && d <= ISA_MAX_DIMS; d++)
        out_printf(o, "%s%" PRIu64, d ? ", " : "", t->dims[d]);
    out_puts(o, "]");
}

static void put_tensor_decl(out_t *o, const isa_program_t *p, uint32_t i)
{
    const isa_tensor_t *t = &p->tensors[i];
    if (t->space == ISA_SPACE_HBM) {
        out_puts(o, ".hbm ");
        put_tensor_name(o, p, i);
        out_printf(o, " %s ", isa_dtype_name((isa_dtype_t)t->dtype));
        put_dims(o, t);
        out_printf(o, " %s @0x%" PRIx64 " chip=%" PRId32 "\n",
                   isa_tensor_kind_name((isa_tensor_kind_t)t->kind), t->offset, t->chip);
        return;
    }
    out_puts(o, t->space == ISA_SPACE_PSUM ? ".psum " : ".sbuf ");
    put_tensor_name(o, p, i);
    out_printf(o, " %s ", isa_dtype_name((isa_dtype_t)t->dtype));
    put_dims(o, t);
    out_printf(o, " @%" PRIu32 " +%" PRIu64 "\n", t->pstart, t->offset);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

char *isa_disassemble(const isa_program_t *prog)
{
    out_t o = {NULL, 0, 0, 1, 0};
    const isa_program_t *p = prog;
    /* semaphores ordered by (core, index): globals first, each core's by index */
    uint64_t *sems = malloc((p->nsems ? p->nsems : 1) * sizeof *sems);
    if (!sems)
        return NULL;
    for (uint32_t i = 0; i < p->nsems; i++)
        sems[i] = ((uint64_t)((int64_t)p->sems[i].core + 1) & 0xFFFFFF) << 40 |
                  (uint64_t)p->sems[i].index << 32 | i;
    qsort(sems, p->nsems, sizeof *sems, cmp_u64);

    out_puts(&o, "; disassembled by ncsim\n");
    const char *nul = memchr(p->arch, '\0', sizeof p->arch);
    size_t alen = nul ? (size_t)(nul - p->arch) : sizeof p->arch;
    if (alen) {
        out_puts(&o, ".arch ");
        out_write(&o, p->arch, alen);
        out_puts(&o, "\n");
    }
    out_printf(&o, ".chips %" PRIu32 "\n", p->chips);
    const char *source = isa_string(p, p->source);
    size_t slen = strlen(source);
    /* `.source` takes the rest of its line, trimmed: any name without line breaks, control
     * characters or surrounding blanks reads back as written */
    int printable = slen > 0 && source[0] != ' ' && source[slen - 1] != ' ';
    for (size_t i = 0; i < slen && printable; i++)
        printable = (unsigned char)source[i] >= 32 && (unsigned char)source[i] != 127;
    if (printable)
        out_printf(&o, ".source %s\n", source);
    uint64_t loc = UINT64_MAX; /* the line .loc last set */
    for (uint32_t i = 0; i < p->ntensors; i++)
        if (p->tensors[i].space == ISA_SPACE_HBM)
            put_tensor_decl(&o, p, i);
    for (uint32_t i = 0; i < p->ntensors; i++)
        if (p->tensors[i].space != ISA_SPACE_HBM && p->tensors[i].core == -1)
            put_tensor_decl(&o, p, i);
    uint32_t si = 0;
    for (; si < p->nsems && p->sems[(uint32_t)sems[si]].core == -1; si++) {
        const isa_sem_t *s = &p->sems[(uint32_t)sems[si]];
        out_puts(&o, ".sem ");
        put_sem_name(&o, p, (uint32_t)sems[si]);
        out_printf(&o, " = %" PRId32 "\n", s->init);
    }
    for (uint32_t i = 0; i < p->ngroups; i++) {
        const isa_group_t *g = &p->groups[i];
        out_puts(&o, ".group ");
        put_name(&o, p, g->name, 'g', i);
        for (uint32_t k = 0; k < g->ncores; k++) {
            out_puts(&o, k ? ", " : " = ");
            put_int(&o, p->ints[g->first + k]);
        }
        out_puts(&o, "\n");
    }

    /* a program without a stream table (only possible in memory) has no instructions */
    uint32_t ncores_with_streams = p->streams ? p->ncores : 0;
    for (uint32_t core = 0; core < p->ncores; core++) {
        int any = 0;
        for (uint32_t i = 0; i < p->ntensors && !any; i++)
            any = p->tensors[i].space != ISA_SPACE_HBM && p->tensors[i].core == (int32_t)core;
        any |= si < p->nsems && p->sems[(uint32_t)sems[si]].core == (int32_t)core;
        for (int e = 0; e < ISA_ENGINE_COUNT && !any && core < ncores_with_streams; e++)
            any = isa_stream(p, core, (isa_engine_t)e)->count != 0;
        if (!any)
            continue;
        out_printf(&o, "\n.core %" PRIu32 "\n", core);
        for (uint32_t i = 0; i < p->ntensors; i++)
            if (p->tensors[i].space != ISA_SPACE_HBM && p->tensors[i].core == (int32_t)core)
                put_tensor_decl(&o, p, i);
        for (; si < p->nsems && p->sems[(uint32_t)sems[si]].core == (int32_t)core; si++) {
            const isa_sem_t *s = &p->sems[(uint32_t)sems[si]];
            out_puts(&o, ".sem ");
            put_sem_name(&o, p, (uint32_t)sems[si]);
            out_printf(&o, " = %" PRId32 "\n", s->init);
        }
        for (int e = 0; e < ISA_ENGINE_COUNT && core < ncores_with_streams; e++) {
            const isa_stream_t *st = isa_stream(p, core, (isa_engine_t)e);
            if (!st->count)
                continue;
            out_printf(&o, ".engine %s\n", isa_engine_name((isa_engine_t)e));
            for (uint32_t k = 0; k < st->count; k++) {
                const isa_instr_t *in = &p->instrs[st->first + k];
                if (in->line != loc) { /* carry the source-line map (extension, isa-notes) */
                    loc = in->line;
                    out_printf(&o, ".loc %" PRIu32 "\n", in->line);
                }
                out_puts(&o, "    ");
                put_instr(&o, p, core, in);
                out_puts(&o, "\n");
            }
        }
    }
    free(sems);
    if (o.oom || !o.p) {
        free(o.p);
        return NULL;
    }
    return o.p;
}
