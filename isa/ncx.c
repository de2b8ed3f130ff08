/*
 * ncx.c -- the .ncx container (isa/FORMAT.md): deterministic writer and checking loader.
 *
 * The byte layout is defined once, in encoding.h; every field below is read and written
 * through those offsets. The loader trusts nothing: each length, count, index and enum value
 * is validated before it is used, and the first problem found is reported with the section
 * and the instruction it concerns. The static checks shared with the assembler
 * (isa_check_program) run once the structure is known to be sound.
 */
#include "ncx.h"

#include "check.h"
#include "encoding.h"
#include "isa_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>
#include <limits.h>

/* Opcodes are ops.def row numbers; they must stay below the reserved ranges (FORMAT.md 3.4). */
_Static_assert(ISA_OP_COUNT <= NCX_OP_ISA_LAST + 1, "ops.def has outgrown the ISA opcode range");
_Static_assert(ISA_MAX_SLOTS <= 8, "the operand presence mask is one byte");

/* ---- little-endian fields -------------------------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint64_t double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
static int bits_are_nan(uint64_t u)
{
    return (u & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (u & 0x000FFFFFFFFFFFFFull);
}

/*
 * CRC-32 as in zlib, gzip and PNG (reflected 0xEDB88320), computed by ISA-L, which folds with
 * carry-less multiplication where the processor has it: 8x zlib's crc32 on the development
 * machine (about 32 against 4 GB/s), which was itself 1.8x our first slicing-by-8. The
 * checksum of a large program was a fifth of its load time.
 */
static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t crc = crc32_gzip_refl(0, p, n);
    isa_avx_clean();
    return crc;
}

static int is_identifier(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

/* ---- a set of (scope, name) pairs: string dedup in the writer, duplicate names in the reader */

typedef struct nameset {
    const char **names;
    int32_t *scopes;
    uint32_t *values;
    size_t mask; /* capacity - 1, capacity a power of two */
} nameset_t;

static int nameset_init(nameset_t *s, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    s->names = calloc(cap, sizeof *s->names);
    s->scopes = calloc(cap, sizeof *s->scopes);
    s->values = calloc(cap, sizeof *s->values);
    s->mask = cap - 1;
    return s->names && s->scopes && s->values ? 0 : -1;
}

static void nameset_free(nameset_t *s)
{
    free(s->names);
    free(s->scopes);
    free(s->values);
}

static uint32_t name_hash(int32_t scope, const char *name)
{
    uint32_t h = 2166136261u ^ (uint32_t)scope;
    for (const char *c = name; *c; c++)
        h = (h ^ (uint8_t)*c) * 16777619u;
    return h;
}

static int nameset_contains(const nameset_t *s, int32_t scope, const char *name)
{
    for (size_t i = name_hash(scope, name) & s->mask; s->names[i]; i = (i + 1) & s->mask)
        if (s->scopes[i] == scope && strcmp(s->names[i], name) == 0)
            return 1;
    return 0;
}

/* Find (scope, name); if absent insert it with `value`. Returns the slot; *found tells which.
 * The set never fills: it is sized for every insertion up front. */
static size_t nameset_find_or_add(nameset_t *s, int32_t scope, const char *name, uint32_t value,
                                  int *found)
{
    size_t i = name_hash(scope, name) & s->mask;
    while (s->names[i]) {
        if (s->scopes[i] == scope && strcmp(s->names[i], name) == 0) {
            *found = 1;
            return i;
        }
        i = (i + 1) & s->mask;
    }
    s->names[i] = name;
    s->scopes[i] = scope;
    s->values[i] = value;
    *found = 0;
    return i;
}

/* ---- writer ---------------------------------------------------------------------------------- */

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} wbuf_t;

/* Append n zero bytes; returns a pointer to them, or NULL once out of memory. */
static uint8_t *wb_grow(wbuf_t *w, size_t n)
{
    if (w->oom)
        return NULL;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *p = realloc(w->p, cap);
        if (!p) {
            w->oom = 1;
            return NULL;
        }
        w->p = p;
        w->cap = cap;
    }
    uint8_t *at = w->p + w->len;
    memset(at, 0, n);
    w->len += n;
    return at;
}
static void wb_u8(wbuf_t *w, uint8_t v)
{
    uint8_t *p = wb_grow(w, 1);
    if (p)
        *p = v;
}
static void wb_u16(wbuf_t *w, uint16_t v)
{
    uint8_t *p = wb_grow(w, 2);
    if (p)
        put16(p, v);
}
static void wb_u32(wbuf_t *w, uint32_t v)
{
    uint8_t *p = wb_grow(w, 4);
    if (p)
        put32(p, v);
}
static void wb_u64(wbuf_t *w, uint64_t v)
{
    uint8_t *p = wb_grow(w, 8);
    if (p)
        put64(p, v);
}
static void wb_f64(wbuf_t *w, double d)
{
    uint64_t u = double_bits(d);
    wb_u64(w, bits_are_nan(u) ? NCX_CANONICAL_NAN : u);
}

/* Start a section: writes its header with length 0; returns the header's offset. */
static size_t wb_section_begin(wbuf_t *w, uint32_t tag, uint32_t flags)
{
    size_t at = w->len;
    uint8_t *h = wb_grow(w, NCX_SEC_HEADER_SIZE);
    if (h) {
        put32(h + NCX_SEC_TAG, tag);
        put32(h + NCX_SEC_FLAGS, flags);
    }
    return at;
}
static void wb_section_end(wbuf_t *w, size_t at, uint32_t *nsections)
{
    if (w->oom)
        return;
    put64(w->p + at + NCX_SEC_LENGTH, (uint64_t)(w->len - at - NCX_SEC_HEADER_SIZE));
    size_t pad = (NCX_SEC_ALIGN - (w->len % NCX_SEC_ALIGN)) % NCX_SEC_ALIGN;
    wb_grow(w, pad);
    (*nsections)++;
}

static void wb_view(wbuf_t *w, const isa_view_t *v)
{
    uint8_t *h = wb_grow(w, NCX_VIEW_HEADER_SIZE);
    if (!h)
        return;
    int hbm = v->space == ISA_SPACE_HBM;
    h[NCX_VIEW_SPACE] = v->space;
    h[NCX_VIEW_DTYPE] = v->dtype;
    h[NCX_VIEW_NDIMS] = v->ndims;
    h[NCX_VIEW_PSTART] = hbm ? 0 : v->pstart; /* HBM views are canonically 0 / 1 */
    put16(h + NCX_VIEW_PCOUNT, hbm ? 1 : v->pcount);
    put64(h + NCX_VIEW_OFFSET, v->offset);
    for (unsigned i = 0; i < v->ndims; i++)
        wb_u64(w, (uint64_t)v->stride[i]);
    for (unsigned i = 0; i < v->ndims; i++)
        wb_u32(w, v->count[i]);
}

/* An instruction's present arguments, in slot order: a view argument as the view itself
 * (vidx NULL: the inline form of an instruction section) or as its index in the view table
 * (vidx[slot]: the blocks of a table section); the other kinds as FORMAT.md gives them. */
static void wb_args(wbuf_t *w, const isa_program_t *p, const isa_op_info_t *info,
                    const isa_arg_t *args, const uint32_t *vidx)
{
    for (unsigned i = 0; i < info->nslots; i++) {
        const isa_arg_t *a = &args[i];
        if (!a->present)
            continue;
        switch (info->slots[i].kind) {
        case ISA_KIND_VIEW:
            if (vidx)
                wb_u32(w, vidx[i]);
            else
                wb_view(w, isa_arg_view(p, a));
            break;
        case ISA_KIND_SCALAR:
            if (a->is_view) {
                wb_u8(w, NCX_SCALAR_VIEW);
                if (vidx)
                    wb_u32(w, vidx[i]);
                else
                    wb_view(w, isa_arg_view(p, a));
            } else {
                wb_u8(w, NCX_SCALAR_IMM);
                wb_f64(w, a->v.f);
            }
            break;
        case ISA_KIND_FLOAT:
            wb_f64(w, a->v.f);
            break;
        case ISA_KIND_INT:
            wb_u64(w, (uint64_t)a->v.i);
            break;
        case ISA_KIND_LIST:
            wb_u16(w, a->count);
            wb_u16(w, 0);
            for (unsigned j = 0; j < a->count; j++)
                wb_u64(w, (uint64_t)p->ints[a->index + j]);
            break;
        case ISA_KIND_ALU:
        case ISA_KIND_RED:
        case ISA_KIND_FUNC:
        case ISA_KIND_CMP:
            wb_u8(w, (uint8_t)a->v.i);
            break;
        case ISA_KIND_GROUP:
            wb_u32(w, (uint32_t)a->v.i);
            break;
        default: /* ISA_KIND_FLAG: the present bit says it all */
            break;
        }
    }
}

/* 1 when a name offset of an in-memory program can be written (or is no name). */
static int name_ok(const isa_program_t *p, uint32_t off)
{
    if (off == ISA_NO_NAME)
        return 1;
    return p->strings && off < p->strings_len &&
           memchr(p->strings + off, '\0', p->strings_len - off) != NULL;
}

/*
 * The writer assumes a program built by the assembler or the loader, but an index out of
 * range in a hand-built one must not make it read wild memory: such a program is refused.
 */
static int program_writable(const isa_program_t *p)
{
    if (p->ncores > ISA_MAX_CORES || (p->ncores && !p->streams) || !name_ok(p, p->source))
        return 0;
    for (uint32_t i = 0; i < p->ntensors; i++)
        if (p->tensors[i].ndims > NCX_TENSOR_MAX_DIMS || !name_ok(p, p->tensors[i].name))
            return 0;
    for (uint32_t i = 0; i < p->nsems; i++)
        if (!name_ok(p, p->sems[i].name))
            return 0;
    for (uint32_t i = 0; i < p->ngroups; i++)
        if (!name_ok(p, p->groups[i].name) ||
            (uint64_t)p->groups[i].first + p->groups[i].ncores > p->nints)
            return 0;
    for (uint32_t s = 0; s < p->ncores * ISA_ENGINE_COUNT; s++) {
        const isa_stream_t *st = &p->streams[s];
        if ((uint64_t)st->first + st->count > p->ninstrs)
            return 0;
        for (uint32_t k = 0; k < st->count; k++) {
            const isa_instr_t *in = &p->instrs[st->first + k];
            const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
            if (!info || in->nwait > ISA_MAX_WAITS || in->npost > ISA_MAX_POSTS ||
                (uint64_t)in->args + info->nslots > p->nargs)
                return 0;
            for (unsigned i = 0; i < info->nslots; i++) {
                const isa_arg_t *a = &p->args[in->args + i];
                if (!a->present)
                    continue;
                int kind = info->slots[i].kind;
                if ((kind == ISA_KIND_VIEW || (kind == ISA_KIND_SCALAR && a->is_view)) &&
                    (a->index >= p->nviews || p->views[a->index].ndims > ISA_MAX_DIMS))
                    return 0;
                if (kind == ISA_KIND_LIST && (uint64_t)a->index + a->count > p->nints)
                    return 0;
            }
        }
    }
    return 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Canonical declaration order (FORMAT.md 3.3), as a permutation: HBM tensors, then tensors of
 * every core, then those of core 0, 1, ...; semaphores by (core, index). Keys carry the
 * program index in their low 32 bits so the sort is stable.
 */
static uint32_t *canonical_tensor_order(const isa_program_t *p)
{
    uint64_t *keys = malloc((p->ntensors ? p->ntensors : 1) * sizeof *keys);
    uint32_t *order = malloc((p->ntensors ? p->ntensors : 1) * sizeof *order);
    if (!keys || !order) {
        free(keys);
        free(order);
        return NULL;
    }
    for (uint32_t i = 0; i < p->ntensors; i++) {
        const isa_tensor_t *t = &p->tensors[i];
        uint64_t cls = t->space == ISA_SPACE_HBM ? 0 : t->core < 0 ? 1 : 2 + (uint64_t)t->core;
        keys[i] = cls << 32 | i;
    }
    qsort(keys, p->ntensors, sizeof *keys, cmp_u64);
    for (uint32_t i = 0; i < p->ntensors; i++)
        order[i] = (uint32_t)keys[i];
    free(keys);
    return order;
}

static uint32_t *canonical_sem_order(const isa_program_t *p)
{
    uint64_t *keys = malloc((p->nsems ? p->nsems : 1) * sizeof *keys);
    uint32_t *order = malloc((p->nsems ? p->nsems : 1) * sizeof *order);
    if (!keys || !order) {
        free(keys);
        free(order);
        return NULL;
    }
    for (uint32_t i = 0; i < p->nsems; i++) {
        uint64_t core = (uint64_t)((int64_t)p->sems[i].core + 1) & 0xFFFFFF;
        keys[i] = core << 40 | (uint64_t)p->sems[i].index << 32 | i;
    }
    qsort(keys, p->nsems, sizeof *keys, cmp_u64);
    for (uint32_t i = 0; i < p->nsems; i++)
        order[i] = (uint32_t)keys[i];
    free(keys);
    return order;
}

/* The canonical string table: used names, deduplicated, in order of first use. */
typedef struct strtab {
    wbuf_t bytes;
    nameset_t set;
} strtab_t;

static uint32_t strtab_ref(strtab_t *st, const isa_program_t *p, uint32_t off)
{
    if (off == ISA_NO_NAME)
        return NCX_NO_NAME;
    const char *name = p->strings + off;
    int found;
    size_t slot = nameset_find_or_add(&st->set, 0, name, (uint32_t)st->bytes.len, &found);
    if (!found) {
        size_t n = strlen(name) + 1;
        uint8_t *d = wb_grow(&st->bytes, n);
        if (d)
            memcpy(d, name, n);
    }
    return st->set.values[slot];
}

static void write_instr(wbuf_t *w, const isa_program_t *p, const isa_instr_t *in, isa_engine_t e)
{
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    const isa_arg_t *args = isa_instr_args(p, in);
    uint8_t present = 0;
    for (unsigned i = 0; i < info->nslots; i++)
        if (args[i].present)
            present = (uint8_t)(present | 1u << i);
    uint8_t *h = wb_grow(w, NCX_INSTR_HEADER_SIZE);
    if (!h)
        return;
    put16(h + NCX_INSTR_OPCODE, in->op);
    h[NCX_INSTR_ENGINE] = (uint8_t)e;
    h[NCX_INSTR_SYNC] = NCX_SYNC_BYTE(in->nwait, in->npost);
    h[NCX_INSTR_PRESENT] = present;
    for (unsigned k = 0; k < (unsigned)in->nwait + in->npost; k++) {
        const isa_sync_t *s = k < in->nwait ? &in->wait[k] : &in->post[k - in->nwait];
        uint8_t *c = wb_grow(w, NCX_CLAUSE_SIZE);
        if (!c)
            return;
        c[NCX_CLAUSE_SEM] = s->sem;
        c[NCX_CLAUSE_OP] = s->op;
        put32(c + NCX_CLAUSE_VALUE, (uint32_t)s->value);
    }
    wb_args(w, p, info, args, NULL);
}

/* ---- 1.1 writer: shared tables ---------------------------------------------------------------- */

/*
 * Records stored once: a byte-keyed set over records appended to a wbuf. `find_or_add`
 * looks up the record that starts at byte `at` (the buffer's tail, just encoded) and either
 * keeps it (new: its index is returned) or drops it again (a copy of an earlier one).
 */
typedef struct recset {
    wbuf_t w;          /* the records, back to back */
    size_t *start;     /* per record: offset in w */
    uint32_t n, cap;
    uint32_t *slots;   /* open addressing: record index + 1 */
    uint32_t nslots;   /* power of two */
} recset_t;

static uint64_t bytes_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h ^ h >> 31;
}

/* Length of record i; `at` is where the candidate being looked up starts (the end of the
 * last kept record). */
static size_t rec_len(const recset_t *s, uint32_t i, size_t at)
{
    return (i + 1 < s->n ? s->start[i + 1] : at) - s->start[i];
}

static uint32_t recset_find_or_add(recset_t *s, size_t at)
{
    if (s->w.oom)
        return UINT32_MAX;
    if ((uint64_t)(s->n + 1) * 2 > s->nslots) {
        uint32_t ns = s->nslots ? s->nslots * 2 : 1024;
        uint32_t *sl = ns < (1u << 30) ? calloc(ns, sizeof *sl) : NULL;
        size_t *st = realloc(s->start, (size_t)ns / 2 * sizeof *st);
        if (!sl || !st) {
            free(sl);
            if (st)
                s->start = st;
            s->w.oom = 1;
            return UINT32_MAX;
        }
        s->start = st;
        for (uint32_t i = 0; i < s->n; i++) {
            uint32_t h = (uint32_t)bytes_hash(s->w.p + s->start[i], rec_len(s, i, at)) & (ns - 1);
            while (sl[h])
                h = (h + 1) & (ns - 1);
            sl[h] = i + 1;
        }
        free(s->slots);
        s->slots = sl;
        s->nslots = ns;
    }
    size_t n = s->w.len - at;
    uint32_t h = (uint32_t)bytes_hash(s->w.p + at, n) & (s->nslots - 1);
    for (; s->slots[h]; h = (h + 1) & (s->nslots - 1)) {
        uint32_t i = s->slots[h] - 1;
        if (rec_len(s, i, at) == n && memcmp(s->w.p + s->start[i], s->w.p + at, n) == 0) {
            s->w.len = at;
            return i;
        }
    }
    s->start[s->n] = at;
    s->slots[h] = s->n + 1;
    return s->n++;
}

static void recset_free(recset_t *s)
{
    free(s->w.p);
    free(s->start);
    free(s->slots);
}

/* What the 1.1 writer shares: views and operand blocks, each written once. */
typedef struct tables {
    recset_t views, blocks;
    uint32_t *view_of;    /* per program view: its VIEW index + 1, 0 not yet written */
    uint64_t *memo_key;   /* (op, first arg) + 1 of blocks already encoded, open addressing */
    uint32_t *memo_val;
    uint32_t memo_cap;
    uint32_t memo_n;
} tables_t;

static uint32_t table_view(tables_t *t, const isa_program_t *p, uint32_t index)
{
    if (t->view_of[index])
        return t->view_of[index] - 1;
    size_t at = t->views.w.len;
    wb_view(&t->views.w, &p->views[index]);
    uint32_t i = recset_find_or_add(&t->views, at);
    if (i != UINT32_MAX)
        t->view_of[index] = i + 1;
    return i;
}

/* The OPND index of an instruction's operand block, encoding it if it is new. */
static uint32_t table_block(tables_t *t, const isa_program_t *p, const isa_instr_t *in)
{
    uint64_t key = ((uint64_t)in->op << 32 | in->args) + 1;
    if ((uint64_t)(t->memo_n + 1) * 2 > t->memo_cap) {
        uint32_t nc = t->memo_cap ? t->memo_cap * 2 : 1024;
        uint64_t *k = nc < (1u << 30) ? calloc(nc, sizeof *k) : NULL;
        uint32_t *v = nc < (1u << 30) ? calloc(nc, sizeof *v) : NULL;
        if (!k || !v) {
            free(k);
            free(v);
            t->blocks.w.oom = 1;
            return UINT32_MAX;
        }
        for (uint32_t i = 0; i < t->memo_cap; i++)
            if (t->memo_key[i]) {
                uint32_t h = (uint32_t)((t->memo_key[i] * 0x9e3779b97f4a7c15ull) >> 32) & (nc - 1);
                while (k[h])
                    h = (h + 1) & (nc - 1);
                k[h] = t->memo_key[i];
                v[h] = t->memo_val[i];
            }
        free(t->memo_key);
        free(t->memo_val);
        t->memo_key = k;
        t->memo_val = v;
        t->memo_cap = nc;
    }
    uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (t->memo_cap - 1);
    for (; t->memo_key[h]; h = (h + 1) & (t->memo_cap - 1))
        if (t->memo_key[h] == key)
            return t->memo_val[h];
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    const isa_arg_t *args = isa_instr_args(p, in);
    /* views first (they append to the other table), then the block itself */
    uint32_t vidx[ISA_MAX_SLOTS] = {0};
    uint8_t present = 0;
    for (unsigned i = 0; i < info->nslots; i++) {
        if (!args[i].present)
            continue;
        present = (uint8_t)(present | 1u << i);
        if (info->slots[i].kind == ISA_KIND_VIEW ||
            (args[i].is_view && info->slots[i].kind == ISA_KIND_SCALAR))
            vidx[i] = table_view(t, p, args[i].index);
    }
    wbuf_t *w = &t->blocks.w;
    size_t at = w->len;
    wb_u16(w, in->op);
    wb_u8(w, present);
    wb_u8(w, 0);
    wb_args(w, p, info, args, vidx);
    uint32_t b = recset_find_or_add(&t->blocks, at);
    if (b != UINT32_MAX) {
        t->memo_key[h] = key;
        t->memo_val[h] = b;
        t->memo_n++;
    }
    return b;
}

static void write_code_instr(wbuf_t *w, tables_t *t, const isa_program_t *p, const isa_instr_t *in)
{
    uint32_t b = table_block(t, p, in);
    uint8_t *h =
        wb_grow(w, NCX_CODE_HEADER_SIZE + (size_t)(in->nwait + in->npost) * NCX_CODE_CLAUSE_SIZE);
    if (!h || b == UINT32_MAX) {
        w->oom = 1;
        return;
    }
    put16(h + NCX_CODE_OPCODE, in->op);
    h[NCX_CODE_SYNC] = NCX_SYNC_BYTE(in->nwait, in->npost);
    put32(h + NCX_CODE_BLOCK, b);
    uint8_t *c = h + NCX_CODE_HEADER_SIZE;
    for (unsigned k = 0; k < (unsigned)in->nwait + in->npost; k++, c += NCX_CODE_CLAUSE_SIZE) {
        const isa_sync_t *s = k < in->nwait ? &in->wait[k] : &in->post[k - in->nwait];
        c[NCX_CLAUSE_SEM] = s->sem;
        c[NCX_CLAUSE_OP] = s->op;
        put32(c + NCX_CODE_CLAUSE_VALUE, (uint32_t)s->value);
    }
}

/* A table section: count, 0, then the records. */
static void wb_table(wbuf_t *w, uint32_t tag, const recset_t *s, uint32_t *nsections)
{
    size_t sec = wb_section_begin(w, tag, NCX_SEC_REQUIRED);
    wb_u32(w, s->n);
    wb_u32(w, 0);
    uint8_t *d = wb_grow(w, s->w.len);
    if (d && s->w.len)
        memcpy(d, s->w.p, s->w.len);
    wb_section_end(w, sec, nsections);
}

ncsim_status_t isa_ncx_write(const isa_program_t *prog, uint8_t **buf, size_t *len)
{
    return isa_ncx_write_version(prog, NCX_VERSION_MINOR, buf, len);
}

ncsim_status_t isa_ncx_write_version(const isa_program_t *prog, unsigned minor, uint8_t **buf,
                                     size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!prog || !program_writable(prog) || minor > NCX_VERSION_MINOR)
        return NCSIM_INTERNAL;

    ncsim_status_t status = NCSIM_NOMEM;
    wbuf_t w = {0};
    tables_t tables;
    memset(&tables, 0, sizeof tables);
    strtab_t st = {0};
    uint32_t *torder = canonical_tensor_order(prog);
    uint32_t *sorder = canonical_sem_order(prog);
    uint32_t *tname = calloc(prog->ntensors + 1, sizeof *tname);
    uint32_t *sname = calloc(prog->nsems + 1, sizeof *sname);
    uint32_t *gname = calloc(prog->ngroups + 1, sizeof *gname);
    if (!torder || !sorder || !tname || !sname || !gname ||
        nameset_init(&st.set, (size_t)prog->ntensors + prog->nsems + prog->ngroups + 1))
        goto done;

    /* String table first: offsets are needed by META and DECL. */
    for (uint32_t i = 0; i < prog->ntensors; i++)
        tname[i] = strtab_ref(&st, prog, prog->tensors[torder[i]].name);
    for (uint32_t i = 0; i < prog->nsems; i++)
        sname[i] = strtab_ref(&st, prog, prog->sems[sorder[i]].name);
    for (uint32_t i = 0; i < prog->ngroups; i++)
        gname[i] = strtab_ref(&st, prog, prog->groups[i].name);
    uint32_t source = strtab_ref(&st, prog, prog->source);
    if (st.bytes.oom)
        goto done;

    uint32_t nsections = 0;
    wb_grow(&w, NCX_HEADER_SIZE);

    /* META */
    size_t sec = wb_section_begin(&w, NCX_TAG_META, NCX_SEC_REQUIRED);
    uint8_t *m = wb_grow(&w, NCX_META_SIZE);
    if (m) {
        put32(m + NCX_META_CHIPS, prog->chips);
        put32(m + NCX_META_CORES, prog->ncores);
        put32(m + NCX_META_SOURCE, source);
        /* only the bytes up to the NUL: whatever follows it in memory is not written */
        const char *nul = memchr(prog->arch, '\0', sizeof prog->arch);
        size_t alen = nul ? (size_t)(nul - prog->arch) : sizeof prog->arch;
        if (alen > NCX_META_ARCH_LEN - 1)
            alen = NCX_META_ARCH_LEN - 1;
        memcpy(m + NCX_META_ARCH, prog->arch, alen);
    }
    wb_section_end(&w, sec, &nsections);

    /* STRS */
    if (st.bytes.len) {
        sec = wb_section_begin(&w, NCX_TAG_STRS, NCX_SEC_REQUIRED);
        uint8_t *s = wb_grow(&w, st.bytes.len);
        if (s)
            memcpy(s, st.bytes.p, st.bytes.len);
        wb_section_end(&w, sec, &nsections);
    }

    /* DECL */
    sec = wb_section_begin(&w, NCX_TAG_DECL, NCX_SEC_REQUIRED);
    wb_u32(&w, prog->ntensors);
    wb_u32(&w, prog->nsems);
    wb_u32(&w, prog->ngroups);
    wb_u32(&w, 0);
    for (uint32_t i = 0; i < prog->ntensors; i++) {
        const isa_tensor_t *t = &prog->tensors[torder[i]];
        uint8_t *r = wb_grow(&w, NCX_TENSOR_SIZE);
        if (!r)
            break;
        put32(r + NCX_TENSOR_NAME, tname[i]);
        r[NCX_TENSOR_SPACE] = t->space;
        r[NCX_TENSOR_DTYPE] = t->dtype;
        r[NCX_TENSOR_KIND] = t->kind;
        r[NCX_TENSOR_NDIMS] = t->ndims;
        put32(r + NCX_TENSOR_CORE, (uint32_t)t->core);
        put32(r + NCX_TENSOR_CHIP, (uint32_t)t->chip);
        put32(r + NCX_TENSOR_PSTART, t->pstart);
        put64(r + NCX_TENSOR_OFFSET, t->offset);
        for (unsigned d = 0; d < t->ndims; d++)
            put64(r + NCX_TENSOR_DIMS + 8 * d, t->dims[d]);
    }
    for (uint32_t i = 0; i < prog->nsems; i++) {
        const isa_sem_t *s = &prog->sems[sorder[i]];
        uint8_t *r = wb_grow(&w, NCX_SEM_SIZE);
        if (!r)
            break;
        put32(r + NCX_SEM_NAME, sname[i]);
        put32(r + NCX_SEM_CORE, (uint32_t)s->core);
        r[NCX_SEM_INDEX] = s->index;
        put32(r + NCX_SEM_INIT, (uint32_t)s->init);
    }
    for (uint32_t i = 0; i < prog->ngroups; i++) {
        const isa_group_t *gr = &prog->groups[i];
        wb_u32(&w, gname[i]);
        wb_u32(&w, gr->ncores);
        for (uint32_t k = 0; k < gr->ncores; k++)
            wb_u32(&w, (uint32_t)prog->ints[gr->first + k]);
    }
    wb_section_end(&w, sec, &nsections);

    /* 1.1: the streams' operand blocks and views go to tables of their own (VIEW, OPND),
     * written before the streams (CODE), which refer to them by index */
    uint32_t nstreams = prog->ncores * ISA_ENGINE_COUNT;
    if (minor >= 1) {
        tables.view_of = calloc(prog->nviews + 1, sizeof *tables.view_of);
        if (!tables.view_of)
            goto done;
        /* in stream order, as CODE will refer to them: the tables are canonical */
        for (uint32_t k = 0; k < nstreams; k++)
            for (uint32_t i = 0; i < prog->streams[k].count; i++)
                table_block(&tables, prog, &prog->instrs[prog->streams[k].first + i]);
        if (tables.views.w.oom || tables.blocks.w.oom)
            goto done;
        wb_table(&w, NCX_TAG_VIEW, &tables.views, &nsections);
        wb_table(&w, NCX_TAG_OPND, &tables.blocks, &nsections);
    }
    /* STRM (1.0) or CODE (1.1): directory, then bodies; each directory entry is filled once
     * its body is written */
    sec = wb_section_begin(&w, minor >= 1 ? NCX_TAG_CODE : NCX_TAG_STRM, NCX_SEC_REQUIRED);
    wb_u32(&w, prog->ncores);
    wb_u32(&w, ISA_ENGINE_COUNT);
    size_t dir = w.len;
    wb_grow(&w, (size_t)nstreams * NCX_STRM_DIR_SIZE);
    int any_line = 0;
    for (uint32_t s = 0; s < nstreams && !w.oom; s++) {
        const isa_stream_t *strm = &prog->streams[s];
        size_t body = w.len;
        for (uint32_t k = 0; k < strm->count; k++) {
            const isa_instr_t *in = &prog->instrs[strm->first + k];
            any_line |= in->line != 0;
            if (minor >= 1)
                write_code_instr(&w, &tables, prog, in);
            else
                write_instr(&w, prog, in, (isa_engine_t)(s % ISA_ENGINE_COUNT));
        }
        if (w.oom)
            break;
        if (w.len - body > UINT32_MAX) {
            status = NCSIM_INTERNAL; /* a stream too large for the format */
            goto done;
        }
        put32(w.p + dir + s * NCX_STRM_DIR_SIZE + NCX_STRM_DIR_COUNT, strm->count);
        put32(w.p + dir + s * NCX_STRM_DIR_SIZE + NCX_STRM_DIR_BYTES, (uint32_t)(w.len - body));
    }
    wb_section_end(&w, sec, &nsections);

    /* LINE, only when some instruction knows its line */
    if (any_line) {
        uint32_t total = 0;
        for (uint32_t s = 0; s < nstreams; s++)
            total += prog->streams[s].count;
        sec = wb_section_begin(&w, NCX_TAG_LINE, 0);
        wb_u32(&w, total);
        wb_u32(&w, 0);
        for (uint32_t s = 0; s < nstreams; s++)
            for (uint32_t k = 0; k < prog->streams[s].count; k++)
                wb_u32(&w, prog->instrs[prog->streams[s].first + k].line);
        wb_section_end(&w, sec, &nsections);
    }

    if (w.oom)
        goto done;
    memcpy(w.p + NCX_HDR_MAGIC, NCX_MAGIC, NCX_MAGIC_LEN);
    memcpy(w.p + NCX_HDR_SENTINEL, NCX_SENTINEL, NCX_SENTINEL_LEN);
    put16(w.p + NCX_HDR_MAJOR, NCX_VERSION_MAJOR);
    put16(w.p + NCX_HDR_MINOR, (uint16_t)minor);
    put32(w.p + NCX_HDR_FLAGS, 0);
    put64(w.p + NCX_HDR_LENGTH, (uint64_t)w.len);
    put32(w.p + NCX_HDR_CRC, crc32_of(w.p + NCX_HEADER_SIZE, w.len - NCX_HEADER_SIZE));
    put32(w.p + NCX_HDR_NSECTIONS, nsections);
    *buf = w.p;
    *len = w.len;
    w.p = NULL;
    status = NCSIM_OK;

done:
    free(w.p);
    recset_free(&tables.views);
    recset_free(&tables.blocks);
    free(tables.view_of);
    free(tables.memo_key);
    free(tables.memo_val);
    free(st.bytes.p);
    nameset_free(&st.set);
    free(torder);
    free(sorder);
    free(tname);
    free(sname);
    free(gname);
    return status;
}

int isa_ncx_is_binary(const uint8_t *buf, size_t len)
{
    return buf && len >= NCX_MAGIC_LEN && memcmp(buf, NCX_MAGIC, NCX_MAGIC_LEN) == 0;
}

/* ---- reader ---------------------------------------------------------------------------------- */

typedef struct span {
    const uint8_t *p;
    size_t len;
    int seen;
} span_t;

typedef struct reader {
    const char *file;
    isa_diag_t *diag;
    const isa_geometry_t *g;
    unsigned minor;  /* the file's minor version, for "newer file" hints */
    char where[160]; /* context prefix of messages: "section DECL: tensor 3: " */
    /* inside STRM the prefix "section STRM: instruction I of core C ENGINE: MNEMONIC: " is
     * built only when a message needs it (formatting it for every instruction was a third of
     * the load time) */
    int in_instr;
    uint32_t ctx_i, ctx_core;
    int ctx_engine;
    const char *ctx_mnemonic;
    int nomem;
    isa_builder_t b;
    const char *strs; /* STRS payload (NUL-terminated pieces) */
    size_t strs_len;
    uint64_t sem_mask_global;         /* semaphore indices declared on every core */
    uint64_t sem_mask[ISA_MAX_CORES]; /* per core */
    const char *ctx_section;          /* "STRM" or "CODE" */
    int view_refs;                    /* 1.1 operand blocks: a view is a VIEW index */
    uint32_t nblocks;                 /* OPND: per block, its first slot and opcode */
    uint32_t *block_first;
    uint16_t *block_op;
} reader_t;

/* Report a problem (prefixed with the current context) and return -1. */
static int fail(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader_t *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->diag && r->in_instr)
        isa_diag_error(r->diag, r->file, 0, 0, "section %s: instruction %u of core %u %s: %s%s%s",
                       r->ctx_section ? r->ctx_section : "STRM", r->ctx_i, r->ctx_core, isa_engine_name((isa_engine_t)r->ctx_engine),
                       r->ctx_mnemonic ? r->ctx_mnemonic : "", r->ctx_mnemonic ? ": " : "", msg);
    else if (r->diag)
        isa_diag_error(r->diag, r->file, 0, 0, "%s%s", r->where, msg);
    return -1;
}

static int fail_nomem(reader_t *r)
{
    r->nomem = 1;
    return fail(r, "out of memory");
}

static void set_where(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_where(reader_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->where, sizeof r->where, fmt, ap);
    va_end(ap);
}

#define NCX_STR2(x) #x
#define NCX_STR(x) NCX_STR2(x)

/* Suffix for values this reader does not know when the file is of a newer minor version. */
static const char *newer(const reader_t *r)
{
    return r->minor > NCX_VERSION_MINOR
               ? " (the file is of a newer minor version than this reader's " NCX_STR(
                     NCX_VERSION_MAJOR) "." NCX_STR(NCX_VERSION_MINOR) "; a newer ncsim may "
                                                                       "read it)"
               : "";
}

static void tag_text(uint32_t tag, char out[20])
{
    char *o = out;
    for (int i = 0; i < 4; i++) {
        unsigned c = (tag >> (8 * i)) & 0xFFu;
        if (c >= 0x20 && c < 0x7F && c != '\\')
            *o++ = (char)c;
        else
            o += sprintf(o, "\\x%02x", c);
    }
    *o = '\0';
}

/* A bounded cursor over one piece of the file. */
typedef struct cursor {
    const uint8_t *p;
    size_t len, pos;
} cursor_t;

static int have(const cursor_t *c, size_t n)
{
    return n <= c->len - c->pos;
}
static const uint8_t *take(cursor_t *c, size_t n)
{
    const uint8_t *at = c->p + c->pos;
    c->pos += n;
    return at;
}

/*
 * A name field: no name, or the offset of the start of a string in STRS. `ident` asks for an
 * identifier (tensor, semaphore and group names), otherwise any string without control
 * characters (the source file name).
 */
static int check_name(reader_t *r, uint32_t off, int ident, const char *what)
{
    if (off == NCX_NO_NAME)
        return 0;
    if (!r->strs)
        return fail(r, "%s name offset %u, but the file has no string table (STRS)", what, off);
    if (off >= r->strs_len)
        return fail(r, "%s name offset %u is outside the string table (%zu bytes)", what, off,
                    r->strs_len);
    if (off > 0 && r->strs[off - 1] != '\0')
        return fail(r, "%s name offset %u is not at the start of a string", what, off);
    const char *s = r->strs + off;
    if (ident && !is_identifier(s))
        return fail(r, "%s name \"%.40s\" is not an identifier", what, s);
    for (const char *c = s; *c; c++)
        if ((uint8_t)*c < 0x20 || *c == 0x7F)
            return fail(r, "%s name contains control character 0x%02x", what, (uint8_t)*c);
    return 0;
}

static int read_strs(reader_t *r, const span_t *s)
{
    set_where(r, "section STRS: ");
    if (!s->seen)
        return 0;
    if (s->len >= UINT32_MAX - 1)
        return fail(r, "string table of %zu bytes is too large", s->len);
    if (s->len && s->p[s->len - 1] != '\0')
        return fail(r, "the last string is not NUL-terminated");
    r->strs = (const char *)s->p;
    r->strs_len = s->len;
    /* Same bytes, same offsets, in the program's own table. */
    for (size_t off = 0; off < s->len;) {
        size_t n = strlen(r->strs + off);
        if (isa_builder_string(&r->b, r->strs + off, n) == UINT32_MAX)
            return fail_nomem(r);
        off += n + 1;
    }
    return 0;
}

static int read_meta(reader_t *r, const span_t *s)
{
    set_where(r, "section META: ");
    if (s->len != NCX_META_SIZE)
        return fail(r, "length is %zu bytes, expected %d", s->len, NCX_META_SIZE);
    isa_program_t *p = r->b.prog;
    uint32_t chips = get32(s->p + NCX_META_CHIPS), cores = get32(s->p + NCX_META_CORES);
    if (chips < 1 || chips > ISA_MAX_CHIPS)
        return fail(r, "chip count %u is out of range (1..%d)", chips, ISA_MAX_CHIPS);
    if (cores != chips * ISA_CORES_PER_CHIP)
        return fail(r, "core count %u does not match %u chips (expected %u)", cores, chips,
                    chips * ISA_CORES_PER_CHIP);
    if (get32(s->p + NCX_META_RESERVED))
        return fail(r, "reserved field is not zero%s", newer(r));
    uint32_t source = get32(s->p + NCX_META_SOURCE);
    if (check_name(r, source, 0, "source file"))
        return -1;
    const char *arch = (const char *)s->p + NCX_META_ARCH;
    const char *nul = memchr(arch, '\0', NCX_META_ARCH_LEN);
    size_t alen = nul ? (size_t)(nul - arch) : NCX_META_ARCH_LEN;
    if (alen == NCX_META_ARCH_LEN)
        return fail(r, "architecture name is not NUL-terminated");
    for (size_t i = alen; i < NCX_META_ARCH_LEN; i++)
        if (arch[i])
            return fail(r, "architecture name padding is not zero");
    if (alen && !is_identifier(arch))
        return fail(r, "architecture name \"%s\" is not an identifier", arch);
    memcpy(p->arch, arch, alen + 1);
    p->chips = chips;
    p->ncores = cores;
    p->source = source;
    return 0;
}

/* a*b, or UINT64_MAX when it overflows. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static int read_tensor(reader_t *r, const uint8_t *rec, uint32_t index, nameset_t *names)
{
    const isa_program_t *p = r->b.prog;
    const isa_geometry_t *g = r->g;
    isa_tensor_t t;
    memset(&t, 0, sizeof t);
    t.name = get32(rec + NCX_TENSOR_NAME);
    t.space = rec[NCX_TENSOR_SPACE];
    t.dtype = rec[NCX_TENSOR_DTYPE];
    t.kind = rec[NCX_TENSOR_KIND];
    t.ndims = rec[NCX_TENSOR_NDIMS];
    t.core = (int32_t)get32(rec + NCX_TENSOR_CORE);
    t.chip = (int32_t)get32(rec + NCX_TENSOR_CHIP);
    t.pstart = get32(rec + NCX_TENSOR_PSTART);
    t.offset = get64(rec + NCX_TENSOR_OFFSET);

    set_where(r, "section DECL: tensor %u: ", index);
    if (check_name(r, t.name, 1, "tensor"))
        return -1;
    if (t.name != NCX_NO_NAME)
        set_where(r, "section DECL: tensor %u (%s): ", index, r->strs + t.name);
    if (t.space >= ISA_SPACE_COUNT)
        return fail(r, "memory space %u is unknown%s", t.space, newer(r));
    if (t.dtype >= ISA_DT_COUNT)
        return fail(r, "dtype %u is unknown%s", t.dtype, newer(r));
    if (t.kind > ISA_TK_LOCAL)
        return fail(r, "tensor kind %u is unknown%s", t.kind, newer(r));
    if (get32(rec + NCX_TENSOR_RESERVED))
        return fail(r, "reserved field is not zero%s", newer(r));
    int hbm = t.space == ISA_SPACE_HBM;
    if (hbm != (t.kind != ISA_TK_LOCAL))
        return fail(r, "kind %s does not fit a %s tensor", isa_tensor_kind_name(t.kind),
                    isa_space_keyword(t.space));
    unsigned maxdims = hbm ? ISA_MAX_HBM_DIMS : ISA_MAX_FREE_DIMS + 1;
    if (t.ndims < 1 || t.ndims > maxdims)
        return fail(r, "%u dims, expected 1..%u", t.ndims, maxdims);
    for (unsigned d = 0; d < NCX_TENSOR_MAX_DIMS; d++) {
        uint64_t v = get64(rec + NCX_TENSOR_DIMS + 8 * d);
        if (d < t.ndims && v == 0)
            return fail(r, "dim %u is 0", d);
        if (d >= t.ndims && v != 0)
            return fail(r, "unused dim %u is not zero", d);
        t.dims[d] = v;
    }
    if (t.kind <= ISA_TK_INOUT && t.name == NCX_NO_NAME)
        return fail(r, "an %s tensor must have a name (it is bound by name at run time)",
                    isa_tensor_kind_name(t.kind));

    uint64_t es = isa_dtype_size((isa_dtype_t)t.dtype), bytes = es, limit;
    if (hbm) {
        if (t.core != -1)
            return fail(r, "an HBM tensor has core %d, expected -1", t.core);
        if (t.chip < 0 || (uint32_t)t.chip >= p->chips)
            return fail(r, "chip %d is out of range (the program has %u chips)", t.chip, p->chips);
        if (t.pstart != 0)
            return fail(r, "an HBM tensor has first partition %u, expected 0", t.pstart);
        for (unsigned d = 0; d < t.ndims; d++)
            bytes = mul_sat(bytes, t.dims[d]);
        limit = g->hbm_bytes;
    } else {
        if (t.core < -1 || t.core >= (int32_t)p->ncores)
            return fail(r, "core %d is out of range (-1..%u)", t.core, p->ncores - 1);
        if (t.chip != -1)
            return fail(r, "an on-core tensor has chip %d, expected -1", t.chip);
        uint64_t P = t.dims[0], ps = t.pstart;
        if (P > g->partitions || ps >= g->partitions || ps + P > g->partitions)
            return fail(r, "partitions %llu..%llu are outside 0..%u", (unsigned long long)ps,
                        (unsigned long long)(ps + P), g->partitions);
        if ((P > 64 && ps != 0) || (P > 32 && P <= 64 && ps % 64) || (P <= 32 && ps % 32))
            return fail(r, "%llu partitions cannot start at partition %llu (ISA.md 5.2)",
                        (unsigned long long)P, (unsigned long long)ps);
        for (unsigned d = 1; d < t.ndims; d++)
            bytes = mul_sat(bytes, t.dims[d]);
        limit = t.space == ISA_SPACE_SBUF ? g->sbuf_bytes : g->psum_bytes;
    }
    if (bytes > limit || t.offset > limit - bytes)
        return fail(r, "bytes %llu..%llu are outside the %s (%llu bytes%s)",
                    (unsigned long long)t.offset,
                    (unsigned long long)(bytes == UINT64_MAX ? UINT64_MAX : t.offset + bytes),
                    hbm                         ? "HBM"
                    : t.space == ISA_SPACE_SBUF ? "SBUF"
                                                : "PSUM",
                    (unsigned long long)limit, hbm ? "" : " per partition");
    if (t.name != NCX_NO_NAME) {
        int found;
        nameset_find_or_add(names, hbm ? -1 : t.core, r->strs + t.name, 0, &found);
        if (found)
            return fail(r, "another tensor of the same scope is named \"%s\"", r->strs + t.name);
    }
    if (isa_builder_tensor(&r->b, &t) == UINT32_MAX)
        return fail_nomem(r);
    return 0;
}

static int read_decl(reader_t *r, const span_t *s)
{
    set_where(r, "section DECL: ");
    if (s->len < NCX_DECL_HEADER_SIZE)
        return fail(r, "length %zu is shorter than its %d-byte header", s->len,
                    NCX_DECL_HEADER_SIZE);
    uint32_t nt = get32(s->p + NCX_DECL_NTENSORS), ns = get32(s->p + NCX_DECL_NSEMS);
    uint32_t ng = get32(s->p + NCX_DECL_NGROUPS);
    if (get32(s->p + NCX_DECL_RESERVED))
        return fail(r, "reserved field is not zero%s", newer(r));
    uint64_t fixed = (uint64_t)nt * NCX_TENSOR_SIZE + (uint64_t)ns * NCX_SEM_SIZE +
                     (uint64_t)ng * NCX_GROUP_HEADER_SIZE;
    if (fixed > s->len - NCX_DECL_HEADER_SIZE)
        return fail(r,
                    "%u tensors, %u semaphores and %u groups need at least %llu bytes, the "
                    "section has %zu",
                    nt, ns, ng, (unsigned long long)(fixed + NCX_DECL_HEADER_SIZE), s->len);
    isa_program_t *p = r->b.prog;
    cursor_t c = {s->p, s->len, NCX_DECL_HEADER_SIZE};
    nameset_t names;
    if (nameset_init(&names, (size_t)nt + ns + ng))
        return nameset_free(&names), fail_nomem(r);
    int rc = 0;

    for (uint32_t i = 0; i < nt && !rc; i++)
        rc = read_tensor(r, take(&c, NCX_TENSOR_SIZE), i, &names);

    /* Semaphores: canonical indices (FORMAT.md 3.3): globals 0.. in order, then per core. */
    uint32_t nglobal = 0;
    for (uint32_t i = 0; i < ns && !rc; i++)
        nglobal += (int32_t)get32(c.p + c.pos + i * NCX_SEM_SIZE + NCX_SEM_CORE) == -1;
    uint32_t next_global = 0;
    uint8_t next_local[ISA_MAX_CORES];
    memset(next_local, 0, sizeof next_local);
    for (uint32_t i = 0; i < ns && !rc; i++) {
        const uint8_t *rec = take(&c, NCX_SEM_SIZE);
        isa_sem_t sem;
        memset(&sem, 0, sizeof sem);
        sem.name = get32(rec + NCX_SEM_NAME);
        sem.core = (int32_t)get32(rec + NCX_SEM_CORE);
        sem.index = rec[NCX_SEM_INDEX];
        sem.init = (int32_t)get32(rec + NCX_SEM_INIT);
        set_where(r, "section DECL: semaphore %u: ", i);
        if ((rc = check_name(r, sem.name, 1, "semaphore")))
            break;
        if (sem.name != NCX_NO_NAME)
            set_where(r, "section DECL: semaphore %u (%s): ", i, r->strs + sem.name);
        if (rec[NCX_SEM_RESERVED] || rec[NCX_SEM_RESERVED + 1] || rec[NCX_SEM_RESERVED + 2]) {
            rc = fail(r, "reserved bytes are not zero%s", newer(r));
            break;
        }
        if (sem.core < -1 || sem.core >= (int32_t)p->ncores) {
            rc = fail(r, "core %d is out of range (-1..%u)", sem.core, p->ncores - 1);
            break;
        }
        if (sem.index >= ISA_MAX_SEMS) {
            rc = fail(r, "index %u is out of range (0..%d)", sem.index, ISA_MAX_SEMS - 1);
            break;
        }
        unsigned expect = sem.core < 0 ? next_global : nglobal + next_local[sem.core];
        if (sem.index != expect) {
            rc = fail(r, "index %u, expected %u (globals first, then each core's in order)",
                      sem.index, expect);
            break;
        }
        if (sem.core < 0) {
            next_global++;
            r->sem_mask_global |= 1ull << sem.index;
        } else {
            next_local[sem.core]++;
            r->sem_mask[sem.core] |= 1ull << sem.index;
        }
        if (sem.name != NCX_NO_NAME) {
            int found;
            nameset_find_or_add(&names, sem.core + 0x10000, r->strs + sem.name, 0, &found);
            if (found) {
                rc = fail(r, "another semaphore of the same scope is named \"%s\"",
                          r->strs + sem.name);
                break;
            }
        }
        if (isa_builder_sem(&r->b, &sem) == UINT32_MAX)
            rc = fail_nomem(r);
    }

    for (uint32_t i = 0; i < ng && !rc; i++) {
        set_where(r, "section DECL: group %u: ", i);
        if (!have(&c, NCX_GROUP_HEADER_SIZE)) {
            rc = fail(r, "truncated group record");
            break;
        }
        const uint8_t *rec = take(&c, NCX_GROUP_HEADER_SIZE);
        isa_group_t gr;
        memset(&gr, 0, sizeof gr);
        gr.name = get32(rec + NCX_GROUP_NAME);
        gr.ncores = get32(rec + NCX_GROUP_NCORES);
        if ((rc = check_name(r, gr.name, 1, "group")))
            break;
        if (gr.name != NCX_NO_NAME)
            set_where(r, "section DECL: group %u (%s): ", i, r->strs + gr.name);
        if (gr.ncores < 1 || gr.ncores > p->ncores) {
            rc = fail(r, "%u members, expected 1..%u", gr.ncores, p->ncores);
            break;
        }
        if (!have(&c, (size_t)gr.ncores * NCX_GROUP_CORE_SIZE)) {
            rc = fail(r, "member list runs past the end of the section");
            break;
        }
        int64_t members[ISA_MAX_CORES];
        uint64_t seen[ISA_MAX_CORES / 64] = {0};
        for (uint32_t k = 0; k < gr.ncores && !rc; k++) {
            uint32_t core = get32(take(&c, NCX_GROUP_CORE_SIZE));
            if (core >= p->ncores)
                rc = fail(r, "member %u is core %u, out of range (0..%u)", k, core, p->ncores - 1);
            else if (seen[core / 64] >> (core % 64) & 1)
                rc = fail(r, "core %u appears twice", core);
            else {
                seen[core / 64] |= 1ull << (core % 64);
                members[k] = core;
            }
        }
        if (rc)
            break;
        if (gr.name != NCX_NO_NAME) {
            int found;
            nameset_find_or_add(&names, 0x20000, r->strs + gr.name, 0, &found);
            if (found) {
                rc = fail(r, "another group is named \"%s\"", r->strs + gr.name);
                break;
            }
        }
        gr.first = isa_builder_ints(&r->b, members, gr.ncores);
        if (gr.first == UINT32_MAX || isa_builder_group(&r->b, &gr) == UINT32_MAX)
            rc = fail_nomem(r);
    }
    /* As in the assembler, a per-core name may not hide a global one of the same kind. */
    for (uint32_t i = 0; i < p->ntensors && !rc; i++) {
        const isa_tensor_t *t = &p->tensors[i];
        if (t->core >= 0 && t->name != NCX_NO_NAME &&
            nameset_contains(&names, -1, r->strs + t->name)) {
            set_where(r, "section DECL: tensor %u (%s): ", i, r->strs + t->name);
            rc = fail(r, "a tensor of core %d hides the global tensor of the same name", t->core);
        }
    }
    for (uint32_t i = 0; i < p->nsems && !rc; i++) {
        const isa_sem_t *sem = &p->sems[i];
        if (sem->core >= 0 && sem->name != NCX_NO_NAME &&
            nameset_contains(&names, -1 + 0x10000, r->strs + sem->name)) {
            set_where(r, "section DECL: semaphore %u (%s): ", i, r->strs + sem->name);
            rc = fail(r, "a semaphore of core %d hides the global semaphore of the same name",
                      sem->core);
        }
    }
    nameset_free(&names);
    if (!rc && c.pos != c.len) {
        set_where(r, "section DECL: ");
        rc = fail(r, "%zu bytes left after the last group", c.len - c.pos);
    }
    return rc;
}

/* Decode a view record into *v. `what` names the operand in messages. */
static int read_view(reader_t *r, cursor_t *c, const char *what, isa_view_t *v)
{
    if (!have(c, NCX_VIEW_HEADER_SIZE))
        return fail(r, "operand %s: truncated view", what);
    const uint8_t *h = take(c, NCX_VIEW_HEADER_SIZE);
    memset(v, 0, sizeof *v);
    v->space = h[NCX_VIEW_SPACE];
    v->dtype = h[NCX_VIEW_DTYPE];
    v->ndims = h[NCX_VIEW_NDIMS];
    v->pstart = h[NCX_VIEW_PSTART];
    v->pcount = get16(h + NCX_VIEW_PCOUNT);
    v->offset = get64(h + NCX_VIEW_OFFSET);
    if (v->space >= ISA_SPACE_COUNT)
        return fail(r, "operand %s: memory space %u is unknown%s", what, v->space, newer(r));
    if (v->dtype >= ISA_DT_COUNT)
        return fail(r, "operand %s: dtype %u is unknown%s", what, v->dtype, newer(r));
    if (get16(h + NCX_VIEW_DYN))
        return fail(r,
                    "operand %s: dynamic addressing field is set; it is reserved for a later "
                    "version%s",
                    what, newer(r));
    int hbm = v->space == ISA_SPACE_HBM;
    unsigned maxdims = hbm ? ISA_MAX_HBM_DIMS : ISA_MAX_FREE_DIMS;
    if (v->ndims > maxdims)
        return fail(r, "operand %s: %u dims, at most %u for %s", what, v->ndims, maxdims,
                    isa_space_keyword(v->space));
    if (hbm && (v->pstart != 0 || v->pcount != 1))
        return fail(r, "operand %s: an HBM view has partitions %u+%u, expected 0+1", what,
                    v->pstart, v->pcount);
    if (!hbm && (v->pcount < 1 || v->pstart + v->pcount > r->g->partitions))
        return fail(r, "operand %s: partitions %u..%u are outside 0..%u", what, v->pstart,
                    v->pstart + v->pcount, r->g->partitions);
    if (v->offset > NCX_MAX_OFFSET)
        return fail(r, "operand %s: offset %llu exceeds the format limit 2^48", what,
                    (unsigned long long)v->offset);
    if (!have(c, (size_t)v->ndims * (NCX_VIEW_STRIDE_SIZE + NCX_VIEW_COUNT_SIZE)))
        return fail(r, "operand %s: truncated view dims", what);
    for (unsigned d = 0; d < v->ndims; d++) {
        v->stride[d] = (int64_t)get64(take(c, NCX_VIEW_STRIDE_SIZE));
        if (v->stride[d] > NCX_MAX_ABS_STRIDE || v->stride[d] < -NCX_MAX_ABS_STRIDE)
            return fail(r, "operand %s: stride %lld of dim %u exceeds the format limit 2^40", what,
                        (long long)v->stride[d], d);
    }
    for (unsigned d = 0; d < v->ndims; d++) {
        v->count[d] = get32(take(c, NCX_VIEW_COUNT_SIZE));
        if (v->count[d] < 1 || v->count[d] > ISA_MAX_COUNT)
            return fail(r, "operand %s: count %u of dim %u is out of range (1..%d)", what,
                        v->count[d], d, ISA_MAX_COUNT);
    }
    /* With the limits above, every term fits in 64 bits. */
    int64_t lo, hi;
    isa_view_byte_range(v, &lo, &hi);
    uint64_t limit = hbm                          ? r->g->hbm_bytes
                     : v->space == ISA_SPACE_SBUF ? r->g->sbuf_bytes
                                                  : r->g->psum_bytes;
    if (lo < 0 || (uint64_t)hi > limit)
        return fail(r, "operand %s: bytes %lld..%lld are outside the %s (%llu bytes%s)", what,
                    (long long)lo, (long long)hi,
                    hbm                          ? "HBM"
                    : v->space == ISA_SPACE_SBUF ? "SBUF"
                                                 : "PSUM",
                    (unsigned long long)limit, hbm ? "" : " per partition");
    return 0;
}

static int read_f64(reader_t *r, cursor_t *c, const char *what, double *out)
{
    if (!have(c, 8))
        return fail(r, "operand %s: truncated number", what);
    uint64_t u = get64(take(c, 8));
    if (bits_are_nan(u) && u != NCX_CANONICAL_NAN)
        return fail(r, "operand %s: NaN 0x%016llx is not the canonical quiet NaN", what,
                    (unsigned long long)u);
    *out = bits_double(u);
    return 0;
}

/* 1.1: a view operand is the index of a record of VIEW. */
static int read_view_ref(reader_t *r, cursor_t *c, const char *what, isa_arg_t *a)
{
    if (!have(c, 4))
        return fail(r, "operand %s: truncated view index", what);
    a->index = get32(take(c, 4));
    if (a->index >= r->b.prog->nviews)
        return fail(r, "operand %s: view %u does not exist (VIEW has %u)", what, a->index,
                    r->b.prog->nviews);
    return 0;
}

/* Decode one operand of kind `kind` into *a (already zeroed, `present` set). */
static int read_operand(reader_t *r, cursor_t *c, const isa_slot_desc_t *slot, isa_arg_t *a)
{
    const char *what = slot->name;
    isa_view_t v;
    uint8_t e;
    switch (slot->kind) {
    case ISA_KIND_VIEW:
        a->is_view = 1; /* set for VIEW slots too: isa_check_instr relies on it */
        if (r->view_refs)
            return read_view_ref(r, c, what, a);
        if (read_view(r, c, what, &v))
            return -1;
        if ((a->index = isa_builder_view(&r->b, &v)) == UINT32_MAX)
            return fail_nomem(r);
        return 0;
    case ISA_KIND_SCALAR:
        if (!have(c, 1))
            return fail(r, "operand %s: truncated scalar", what);
        e = *take(c, 1);
        if (e == NCX_SCALAR_IMM)
            return read_f64(r, c, what, &a->v.f);
        if (e != NCX_SCALAR_VIEW)
            return fail(r, "operand %s: scalar form %u is unknown%s", what, e, newer(r));
        a->is_view = 1;
        if (r->view_refs)
            return read_view_ref(r, c, what, a);
        if (read_view(r, c, what, &v))
            return -1;
        if ((a->index = isa_builder_view(&r->b, &v)) == UINT32_MAX)
            return fail_nomem(r);
        return 0;
    case ISA_KIND_FLOAT:
        return read_f64(r, c, what, &a->v.f);
    case ISA_KIND_INT:
        if (!have(c, 8))
            return fail(r, "operand %s: truncated integer", what);
        a->v.i = (int64_t)get64(take(c, 8));
        return 0;
    case ISA_KIND_LIST: {
        if (!have(c, NCX_LIST_HEADER_SIZE))
            return fail(r, "operand %s: truncated list", what);
        const uint8_t *h = take(c, NCX_LIST_HEADER_SIZE);
        uint16_t n = get16(h);
        if (get16(h + 2))
            return fail(r, "operand %s: reserved list field is not zero%s", what, newer(r));
        if (n > ISA_MAX_LIST)
            return fail(r, "operand %s: list of %u integers, at most %d", what, n, ISA_MAX_LIST);
        if (!have(c, (size_t)n * 8))
            return fail(r, "operand %s: truncated list", what);
        int64_t vals[ISA_MAX_LIST];
        for (unsigned k = 0; k < n; k++)
            vals[k] = (int64_t)get64(take(c, 8));
        a->count = n;
        if ((a->index = isa_builder_ints(&r->b, vals, n)) == UINT32_MAX)
            return fail_nomem(r);
        return 0;
    }
    case ISA_KIND_ALU:
    case ISA_KIND_RED:
    case ISA_KIND_FUNC:
    case ISA_KIND_CMP:
        if (!have(c, 1))
            return fail(r, "operand %s: truncated", what);
        e = *take(c, 1);
        a->v.i = e;
        if (slot->kind == ISA_KIND_FUNC && e >= ISA_FUNC_COUNT)
            return fail(r, "operand %s: activation function %u is unknown%s", what, e, newer(r));
        if (slot->kind == ISA_KIND_CMP && e >= ISA_CMP_COUNT)
            return fail(r, "operand %s: comparison %u is unknown%s", what, e, newer(r));
        if ((slot->kind == ISA_KIND_ALU || slot->kind == ISA_KIND_RED) && e >= ISA_ALU_COUNT)
            return fail(r, "operand %s: ALU operator %u is unknown%s", what, e, newer(r));
        if (slot->kind == ISA_KIND_RED && !isa_alu_can_reduce((isa_alu_t)e))
            return fail(r, "operand %s: %s is not a reduction operator", what,
                        isa_alu_name((isa_alu_t)e));
        return 0;
    case ISA_KIND_GROUP: {
        if (!have(c, 4))
            return fail(r, "operand %s: truncated group index", what);
        uint32_t gi = get32(take(c, 4));
        if (gi >= r->b.prog->ngroups)
            return fail(r, "operand %s: group %u does not exist (the program has %u)", what, gi,
                        r->b.prog->ngroups);
        a->v.i = gi;
        return 0;
    }
    default: /* ISA_KIND_FLAG */
        a->v.i = 1;
        return 0;
    }
}

/* The wait/post clauses of an instruction whose counts are set in *in. */
/* A zeroed instruction of this header, field by field rather than by memset: GCC turned the
 * memset (or a copy of a zero struct) of this 4-byte-aligned struct into a 'rep stos' ('rep
 * movs'), 5% of a 1.1 load. Every byte is still set (no padding in isa_instr_t). */
static inline void instr_init(isa_instr_t *in, isa_op_t op, isa_engine_t e, uint32_t nwait,
                              uint32_t npost)
{
    in->op = (uint16_t)op;
    in->engine = (uint8_t)e;
    in->nwait = (uint8_t)nwait;
    in->npost = (uint8_t)npost;
    memset(in->_pad, 0, sizeof in->_pad);
    in->args = 0;
    in->line = 0;
    for (int k = 0; k < ISA_MAX_WAITS; k++)
        in->wait[k] = (isa_sync_t){0};
    for (int k = 0; k < ISA_MAX_POSTS; k++)
        in->post[k] = (isa_sync_t){0};
}

/* The first bad clause of in (decoded by read_clauses from the `size`-byte clauses at cl),
 * reported; -1. Out of line: the common path through read_clauses stays small. */
static __attribute__((noinline, cold)) int clause_error(reader_t *r, const uint8_t *cl, size_t size,
                                                        uint32_t core, const isa_instr_t *in,
                                                        int code, uint64_t declared)
{
    for (unsigned k = 0; k < in->nwait + in->npost; k++, cl += size) {
        const isa_sync_t *s = k < in->nwait ? &in->wait[k] : &in->post[k - in->nwait];
        const char *kind = k < in->nwait ? "wait" : "post";
        if (!code && get16(cl + NCX_CLAUSE_RESERVED))
            return fail(r, "%s clause %u: reserved field is not zero%s", kind, k, newer(r));
        switch (isa_clause_fault(s, k < in->nwait, declared)) {
        case ISA_CLAUSE_RANGE:
            return fail(r, "%s clause: semaphore index %u is out of range (0..%d)", kind, s->sem,
                        ISA_MAX_SEMS - 1);
        case ISA_CLAUSE_OP:
            return fail(r, "%s clause: operation %u is not a %s%s", kind, s->op, kind, newer(r));
        case ISA_CLAUSE_UNDECLARED:
            return fail(r, "%s clause: semaphore %u is not declared on core %u", kind, s->sem,
                        core);
        default:
            break;
        }
    }
    return fail(r, "wait/post clauses rejected"); /* not reached: read_clauses saw a fault */
}

/* One clause of `size` bytes at cl into s; whether it is valid. */
static inline __attribute__((always_inline)) int
read_clause(const uint8_t *cl, int code, isa_sync_t *s, int is_wait, uint64_t declared)
{
    s->sem = cl[NCX_CLAUSE_SEM];
    s->op = cl[NCX_CLAUSE_OP];
    s->value = (int32_t)get32(cl + (code ? NCX_CODE_CLAUSE_VALUE : NCX_CLAUSE_VALUE));
    return (code || !get16(cl + NCX_CLAUSE_RESERVED)) &&
           isa_clause_fault(s, is_wait, declared) == ISA_CLAUSE_OK;
}

/* Inlined into each caller, where `code` is a constant (per instruction: 1.1 files). */
static inline __attribute__((always_inline)) int
read_clauses(reader_t *r, cursor_t *c, uint32_t core, isa_instr_t *in, int code)
{
    size_t size = code ? NCX_CODE_CLAUSE_SIZE : NCX_CLAUSE_SIZE;
    unsigned n = (unsigned)in->nwait + in->npost;
    if (!have(c, n * size))
        return fail(r, "truncated wait/post clauses");
    uint64_t declared = r->sem_mask_global | r->sem_mask[core];
    const uint8_t *first = take(c, n * size), *cl = first;
    int ok = 1;
    for (unsigned k = 0; k < in->nwait; k++, cl += size)
        ok &= read_clause(cl, code, &in->wait[k], 1, declared);
    for (unsigned k = 0; k < in->npost; k++, cl += size)
        ok &= read_clause(cl, code, &in->post[k], 0, declared);
    return ok ? 0 : clause_error(r, first, size, core, in, code, declared);
}

static int read_slots(reader_t *r, cursor_t *c, const isa_op_info_t *info, uint8_t present,
                      uint32_t *first_out);

static int read_instr(reader_t *r, cursor_t *c, uint32_t core, isa_engine_t e, uint32_t *index)
{
    if (!have(c, NCX_INSTR_HEADER_SIZE))
        return fail(r, "truncated instruction header");
    const uint8_t *h = take(c, NCX_INSTR_HEADER_SIZE);
    uint16_t op = get16(h + NCX_INSTR_OPCODE);
    if (op >= ISA_OP_COUNT) {
        if (op >= NCX_OP_SEQ_FIRST && op <= NCX_OP_SEQ_LAST)
            return fail(r,
                        "opcode 0x%04x is in the range reserved for sequencer and "
                        "control-flow instructions of a later version%s",
                        op, newer(r));
        return fail(r, "opcode %u is unknown%s", op, newer(r));
    }
    const isa_op_info_t *info = isa_op_info((isa_op_t)op);
    /* from here on messages name the instruction */
    r->ctx_mnemonic = info->mnemonic;
    if (h[NCX_INSTR_ENGINE] != (uint8_t)e)
        return fail(r, "engine byte %u does not match the stream's engine (%s)",
                    h[NCX_INSTR_ENGINE], isa_engine_name(e));
    if (!(info->engines & (1u << e)))
        return fail(r, "%s is not legal on engine %s", info->mnemonic, isa_engine_name(e));
    unsigned nwait = NCX_SYNC_NWAIT(h[NCX_INSTR_SYNC]), npost = NCX_SYNC_NPOST(h[NCX_INSTR_SYNC]);
    if (nwait > ISA_MAX_WAITS || npost > ISA_MAX_POSTS)
        return fail(r, "%u waits and %u posts, at most %d of each", nwait, npost, ISA_MAX_WAITS);
    uint8_t present = h[NCX_INSTR_PRESENT];
    if (info->nslots < 8 && present >> info->nslots)
        return fail(r,
                    "operand mask 0x%02x marks slots the instruction does not have (it has "
                    "%u)",
                    present, info->nslots);
    if (h[NCX_INSTR_EXT] || get16(h + NCX_INSTR_RESERVED))
        return fail(r,
                    "extension byte or reserved field is set; reserved for a later "
                    "version%s",
                    newer(r));

    isa_instr_t in;
    instr_init(&in, op, e, nwait, npost);
    if (read_clauses(r, c, core, &in, 0))
        return -1;

    if (read_slots(r, c, info, present, &in.args))
        return -1;
    if ((*index = isa_builder_instr(&r->b, &in)) == UINT32_MAX)
        return fail_nomem(r);
    return 0;
}

/* The present operands of an instruction (or 1.1 operand block) into fresh slots; *first
 * receives the first one. */
static int read_slots(reader_t *r, cursor_t *c, const isa_op_info_t *info, uint8_t present,
                      uint32_t *first_out)
{
    /* (no call for 0 slots: the builder would memset a still-NULL pool) */
    uint32_t first = info->nslots ? isa_builder_args(&r->b, info->nslots) : r->b.prog->nargs;
    if (first == UINT32_MAX)
        return fail_nomem(r);
    *first_out = first;
    int gap = 0; /* an optional positional slot was left out */
    for (unsigned i = 0; i < info->nslots; i++) {
        const isa_slot_desc_t *slot = &info->slots[i];
        int here = present >> i & 1;
        if (!here && !slot->optional)
            return fail(r, "required operand %s is missing", slot->name);
        if (slot->form == ISA_FORM_POSITIONAL) {
            if (here && gap)
                return fail(r, "operand %s is present after an omitted optional operand",
                            slot->name);
            gap |= !here;
        }
        if (!here)
            continue;
        isa_arg_t a;
        memset(&a, 0, sizeof a);
        a.present = 1;
        if (read_operand(r, c, slot, &a))
            return -1;
        r->b.prog->args[first + i] = a; /* args may have moved: index, never keep pointers */
    }
    return 0;
}

/* ---- 1.1: VIEW, OPND, CODE ------------------------------------------------------------------- */

static int opcode_known(reader_t *r, uint16_t op)
{
    if (op < ISA_OP_COUNT)
        return 0;
    if (op >= NCX_OP_SEQ_FIRST && op <= NCX_OP_SEQ_LAST)
        return fail(r,
                    "opcode 0x%04x is in the range reserved for sequencer and control-flow "
                    "instructions of a later version%s",
                    op, newer(r));
    return fail(r, "opcode %u is unknown%s", op, newer(r));
}

/* The count of a table section (VIEW, OPND), each record taking at least `min` bytes. */
static int table_count(reader_t *r, const span_t *s, size_t min, uint32_t *n)
{
    if (s->len < NCX_TABLE_HEADER_SIZE)
        return fail(r, "length %zu is shorter than its %d-byte header", s->len,
                    NCX_TABLE_HEADER_SIZE);
    *n = get32(s->p + NCX_TABLE_COUNT);
    if (get32(s->p + NCX_TABLE_RESERVED))
        return fail(r, "reserved field is not zero%s", newer(r));
    if (*n > (s->len - NCX_TABLE_HEADER_SIZE) / min)
        return fail(r, "%u records cannot fit in %zu bytes", *n, s->len - NCX_TABLE_HEADER_SIZE);
    return 0;
}

static int read_views(reader_t *r, const span_t *s)
{
    set_where(r, "section VIEW: ");
    uint32_t n;
    if (table_count(r, s, NCX_VIEW_HEADER_SIZE, &n))
        return -1;
    cursor_t c = {s->p + NCX_TABLE_HEADER_SIZE, s->len - NCX_TABLE_HEADER_SIZE, 0};
    for (uint32_t i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "view %u", i);
        isa_view_t v;
        if (read_view(r, &c, what, &v))
            return -1;
        if (isa_builder_view(&r->b, &v) == UINT32_MAX)
            return fail_nomem(r);
    }
    if (c.pos != c.len)
        return fail(r, "%zu bytes left after its %u views", c.len - c.pos, n);
    return 0;
}

static int read_opnd(reader_t *r, const span_t *s)
{
    set_where(r, "section OPND: ");
    uint32_t n;
    if (table_count(r, s, NCX_BLOCK_HEADER_SIZE, &n))
        return -1;
    r->block_first = malloc(((size_t)n + 1) * sizeof *r->block_first);
    r->block_op = malloc(((size_t)n + 1) * sizeof *r->block_op);
    if (!r->block_first || !r->block_op)
        return fail_nomem(r);
    cursor_t c = {s->p + NCX_TABLE_HEADER_SIZE, s->len - NCX_TABLE_HEADER_SIZE, 0};
    r->view_refs = 1;
    for (uint32_t i = 0; i < n; i++) {
        set_where(r, "section OPND: block %u: ", i);
        if (!have(&c, NCX_BLOCK_HEADER_SIZE))
            return fail(r, "truncated block header");
        const uint8_t *h = take(&c, NCX_BLOCK_HEADER_SIZE);
        uint16_t op = get16(h + NCX_BLOCK_OPCODE);
        uint8_t present = h[NCX_BLOCK_PRESENT];
        if (opcode_known(r, op))
            return -1;
        const isa_op_info_t *info = isa_op_info((isa_op_t)op);
        set_where(r, "section OPND: block %u: %s: ", i, info->mnemonic);
        if (info->nslots < 8 && present >> info->nslots)
            return fail(r,
                        "operand mask 0x%02x marks slots the instruction does not have (it has "
                        "%u)",
                        present, info->nslots);
        if (h[NCX_BLOCK_RESERVED])
            return fail(r, "reserved byte is set%s", newer(r));
        if (read_slots(r, &c, info, present, &r->block_first[i]))
            return -1;
        r->block_op[i] = op;
    }
    r->view_refs = 0;
    r->nblocks = n;
    set_where(r, "section OPND: ");
    if (c.pos != c.len)
        return fail(r, "%zu bytes left after its %u blocks", c.len - c.pos, n);
    return 0;
}

static int read_code_instr(reader_t *r, cursor_t *c, uint32_t core, isa_engine_t e)
{
    if (!have(c, NCX_CODE_HEADER_SIZE))
        return fail(r, "truncated instruction header");
    const uint8_t *h = take(c, NCX_CODE_HEADER_SIZE);
    uint16_t op = get16(h + NCX_CODE_OPCODE);
    if (opcode_known(r, op))
        return -1;
    const isa_op_info_t *info = isa_op_info((isa_op_t)op);
    r->ctx_mnemonic = info->mnemonic;
    if (!(info->engines & (1u << e)))
        return fail(r, "%s is not legal on engine %s", info->mnemonic, isa_engine_name(e));
    unsigned nwait = NCX_SYNC_NWAIT(h[NCX_CODE_SYNC]), npost = NCX_SYNC_NPOST(h[NCX_CODE_SYNC]);
    if (nwait > ISA_MAX_WAITS || npost > ISA_MAX_POSTS)
        return fail(r, "%u waits and %u posts, at most %d of each", nwait, npost, ISA_MAX_WAITS);
    if (h[NCX_CODE_RESERVED])
        return fail(r, "reserved byte is set; reserved for a later version%s", newer(r));
    uint32_t b = get32(h + NCX_CODE_BLOCK);
    if (b >= r->nblocks)
        return fail(r, "operand block %u does not exist (OPND has %u)", b, r->nblocks);
    if (r->block_op[b] != op)
        return fail(r, "operand block %u belongs to a '%s', not to this instruction", b,
                    isa_op_info((isa_op_t)r->block_op[b])->mnemonic);
    /* decoded in place: read_strm reserved every instruction (a copy through the stack was
     * a tenth of a load) */
    isa_program_t *p = r->b.prog;
    isa_instr_t tmp, *in = p->ninstrs < r->b.cap_instrs ? &p->instrs[p->ninstrs] : &tmp;
    instr_init(in, op, e, nwait, npost);
    in->args = r->block_first[b];
    if (read_clauses(r, c, core, in, 1))
        return -1;
    if (in != &tmp)
        p->ninstrs++;
    else if (isa_builder_instr(&r->b, in) == UINT32_MAX)
        return fail_nomem(r);
    return 0;
}

/* The streams: STRM (1.0, operands inline) or CODE (1.1, operand blocks by index). */
static int read_strm(reader_t *r, const span_t *s, int code)
{
    const char *name = code ? "CODE" : "STRM";
    r->ctx_section = name;
    set_where(r, "section %s: ", name);
    isa_program_t *p = r->b.prog;
    if (s->len < NCX_STRM_HEADER_SIZE)
        return fail(r, "length %zu is shorter than its %d-byte header", s->len,
                    NCX_STRM_HEADER_SIZE);
    uint32_t cores = get32(s->p + NCX_STRM_CORES), engines = get32(s->p + NCX_STRM_ENGINES);
    if (cores != p->ncores)
        return fail(r, "%u cores, but META says %u", cores, p->ncores);
    if (engines != ISA_ENGINE_COUNT)
        return fail(r, "%u engines per core, expected %d%s", engines, ISA_ENGINE_COUNT, newer(r));
    uint32_t nstreams = cores * ISA_ENGINE_COUNT;
    size_t dirlen = (size_t)nstreams * NCX_STRM_DIR_SIZE;
    if (dirlen > s->len - NCX_STRM_HEADER_SIZE)
        return fail(r, "the stream directory (%u streams) runs past the end of the section",
                    nstreams);
    const uint8_t *dir = s->p + NCX_STRM_HEADER_SIZE;
    uint64_t total = 0, ninstrs = 0;
    for (uint32_t k = 0; k < nstreams; k++) {
        uint32_t count = get32(dir + k * NCX_STRM_DIR_SIZE + NCX_STRM_DIR_COUNT);
        uint32_t bytes = get32(dir + k * NCX_STRM_DIR_SIZE + NCX_STRM_DIR_BYTES);
        if (count > bytes / (code ? NCX_CODE_HEADER_SIZE : NCX_INSTR_HEADER_SIZE))
            return fail(r, "stream of core %u %s: %u instructions cannot fit in %u bytes",
                        k / ISA_ENGINE_COUNT, isa_engine_name((isa_engine_t)(k % ISA_ENGINE_COUNT)),
                        count, bytes);
        total += bytes;
        ninstrs += count;
    }
    if (total != s->len - NCX_STRM_HEADER_SIZE - dirlen)
        return fail(r, "the streams hold %llu bytes, the section %zu after its directory",
                    (unsigned long long)total, s->len - NCX_STRM_HEADER_SIZE - dirlen);
    p->streams = calloc(nstreams, sizeof *p->streams);
    /* every instruction at once (the counts fit in the section, checked above): growing
     * the array by doubling copied and faulted in twice the memory */
    if (!p->streams || ninstrs >= UINT32_MAX ||
        isa_builder_reserve_instrs(&r->b, (uint32_t)ninstrs))
        return fail_nomem(r);
    size_t pos = NCX_STRM_HEADER_SIZE + dirlen;
    for (uint32_t k = 0; k < nstreams; k++) {
        uint32_t count = get32(dir + k * NCX_STRM_DIR_SIZE + NCX_STRM_DIR_COUNT);
        uint32_t bytes = get32(dir + k * NCX_STRM_DIR_SIZE + NCX_STRM_DIR_BYTES);
        uint32_t core = k / ISA_ENGINE_COUNT;
        isa_engine_t e = (isa_engine_t)(k % ISA_ENGINE_COUNT);
        cursor_t c = {s->p + pos, bytes, 0};
        p->streams[k].first = p->ninstrs;
        p->streams[k].count = count;
        for (uint32_t i = 0; i < count; i++) {
            r->in_instr = 1;
            r->ctx_i = i;
            r->ctx_core = core;
            r->ctx_engine = (int)e;
            r->ctx_mnemonic = NULL;
            uint32_t index;
            if (code ? read_code_instr(r, &c, core, e) : read_instr(r, &c, core, e, &index))
                return -1;
        }
        r->in_instr = 0;
        if (c.pos != c.len) {
            set_where(r, "section %s: ", name);
            return fail(r, "stream of core %u %s: %zu bytes left after its %u instructions", core,
                        isa_engine_name(e), c.len - c.pos, count);
        }
        pos += bytes;
    }
    return 0;
}

static int read_line(reader_t *r, const span_t *s)
{
    set_where(r, "section LINE: ");
    if (!s->seen)
        return 0;
    isa_program_t *p = r->b.prog;
    if (s->len < NCX_LINE_HEADER_SIZE)
        return fail(r, "length %zu is shorter than its %d-byte header", s->len,
                    NCX_LINE_HEADER_SIZE);
    uint32_t n = get32(s->p + NCX_LINE_COUNT);
    if (get32(s->p + NCX_LINE_RESERVED))
        return fail(r, "reserved field is not zero%s", newer(r));
    if (n != p->ninstrs)
        return fail(r, "%u lines for %u instructions", n, p->ninstrs);
    if (s->len != NCX_LINE_HEADER_SIZE + (size_t)n * 4)
        return fail(r, "length %zu, expected %zu for %u lines", s->len,
                    NCX_LINE_HEADER_SIZE + (size_t)n * 4, n);
    /* Instructions were appended stream by stream, in directory order: the same order. */
    uint32_t line_max = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t line = get32(s->p + NCX_LINE_HEADER_SIZE + (size_t)i * 4);
        p->instrs[i].line = line;
        if (line > line_max)
            line_max = line;
    }
    p->line_end = line_max < UINT32_MAX ? line_max + 1 : 0;
    return 0;
}

/* Header and section table; fills the spans of the known sections. */
static int read_container(reader_t *r, const uint8_t *buf, size_t len, span_t *meta, span_t *strs,
                          span_t *decl, span_t *strm, span_t *line, span_t *view, span_t *opnd,
                          span_t *code)
{
    set_where(r, "%s", "");
    if (len == 0)
        return fail(r, "the file is empty");
    size_t m = len < NCX_MAGIC_LEN ? len : NCX_MAGIC_LEN;
    if (memcmp(buf, NCX_MAGIC, m) != 0) {
        if (len >= NCX_MAGIC_LEN && memcmp(buf, NCX_MAGIC, 3) == 0 && buf[3] == 0x09)
            return fail(r, "the magic lost its high bit: the file went through a 7-bit channel");
        return fail(r, "not an .ncx file (bad magic)");
    }
    if (len < NCX_MAGIC_LEN)
        return fail(r, "truncated header (%zu of %d bytes)", len, NCX_HEADER_SIZE);
    const uint8_t *sn = buf + NCX_HDR_SENTINEL;
    size_t have_sn =
        len - NCX_HDR_SENTINEL < NCX_SENTINEL_LEN ? len - NCX_HDR_SENTINEL : NCX_SENTINEL_LEN;
    if (memcmp(sn, NCX_SENTINEL, have_sn) != 0) {
        if (have_sn >= 3 && sn[0] == '\n' && sn[1] == 0x1A && sn[2] == '\n')
            return fail(r, "corruption sentinel damaged: CR LF became LF (the file was copied "
                           "in text mode)");
        if (have_sn >= 3 && sn[0] == '\r' && sn[1] == '\r' && sn[2] == '\n')
            return fail(r, "corruption sentinel damaged: LF became CR LF (the file was copied "
                           "in text mode)");
        return fail(r, "corruption sentinel damaged");
    }
    if (len == NCX_HDR_SENTINEL + 2)
        return fail(r, "the file ends at the ^Z of the sentinel (copied as DOS text, which "
                       "stops at ^Z)");
    if (len < NCX_HEADER_SIZE)
        return fail(r, "truncated header (%zu of %d bytes)", len, NCX_HEADER_SIZE);
    unsigned major = get16(buf + NCX_HDR_MAJOR), minor = get16(buf + NCX_HDR_MINOR);
    if (major > NCX_VERSION_MAJOR)
        return fail(r,
                    "format version %u.%u is newer than this reader (%d.%d); a newer ncsim "
                    "is needed",
                    major, minor, NCX_VERSION_MAJOR, NCX_VERSION_MINOR);
    if (major < NCX_VERSION_MAJOR)
        return fail(r, "format version %u.%u is not supported (this reader reads %d.x)", major,
                    minor, NCX_VERSION_MAJOR);
    r->minor = minor;
    uint64_t flen = get64(buf + NCX_HDR_LENGTH);
    if (flen > len)
        return fail(r, "the file is truncated: the header says %llu bytes, there are %zu",
                    (unsigned long long)flen, len);
    if (flen < len)
        return fail(r,
                    "%llu unexpected bytes after the end of the file (the header says %llu "
                    "bytes)",
                    (unsigned long long)(len - flen), (unsigned long long)flen);
    uint32_t flags = get32(buf + NCX_HDR_FLAGS);
    uint32_t unknown = flags & NCX_FLAGS_MUST_UNDERSTAND & ~NCX_FLAGS_KNOWN;
    if (unknown) {
        unsigned bit = 0;
        while (!(unknown >> bit & 1))
            bit++;
        return fail(r, "header flag bit %u is not understood by this reader%s", bit, newer(r));
    }
    uint32_t crc = get32(buf + NCX_HDR_CRC),
             calc = crc32_of(buf + NCX_HEADER_SIZE, len - NCX_HEADER_SIZE);
    if (crc != calc)
        return fail(r, "CRC mismatch: the file is corrupt (stored 0x%08x, computed 0x%08x)", crc,
                    calc);

    uint32_t nsect = get32(buf + NCX_HDR_NSECTIONS);
    size_t pos = NCX_HEADER_SIZE;
    for (uint32_t i = 0; i < nsect; i++) {
        set_where(r, "%s", "");
        if (len - pos < NCX_SEC_HEADER_SIZE)
            return fail(r, "section %u of %u: header runs past the end of the file", i, nsect);
        const uint8_t *h = buf + pos;
        uint32_t tag = get32(h + NCX_SEC_TAG), sflags = get32(h + NCX_SEC_FLAGS);
        uint64_t slen = get64(h + NCX_SEC_LENGTH);
        char tname[20];
        tag_text(tag, tname);
        set_where(r, "section %s: ", tname);
        size_t room = len - pos - NCX_SEC_HEADER_SIZE;
        if (slen > room)
            return fail(r, "length %llu runs past the end of the file (%zu bytes left)",
                        (unsigned long long)slen, room);
        size_t pad = (NCX_SEC_ALIGN - (size_t)(slen % NCX_SEC_ALIGN)) % NCX_SEC_ALIGN;
        if (pad > room - slen)
            return fail(r, "padding runs past the end of the file");
        const uint8_t *payload = h + NCX_SEC_HEADER_SIZE;
        for (size_t k = 0; k < pad; k++)
            if (payload[slen + k])
                return fail(r, "padding byte %zu is not zero", k);
        span_t *known = tag == NCX_TAG_META   ? meta
                        : tag == NCX_TAG_STRS ? strs
                        : tag == NCX_TAG_DECL ? decl
                        : tag == NCX_TAG_STRM ? strm
                        : tag == NCX_TAG_LINE ? line
                        : tag == NCX_TAG_VIEW ? view
                        : tag == NCX_TAG_OPND ? opnd
                        : tag == NCX_TAG_CODE ? code
                                              : NULL;
        if (tag == NCX_TAG_SEQR)
            return fail(r,
                        "sequencer registers are reserved for a later version of the "
                        "format%s",
                        newer(r));
        if (known) {
            if (known->seen)
                return fail(r, "appears twice");
            if (sflags & ~NCX_SEC_REQUIRED)
                return fail(r, "flags 0x%08x have reserved bits set%s", sflags, newer(r));
            known->p = payload;
            known->len = (size_t)slen;
            known->seen = 1;
        } else if (sflags & NCX_SEC_REQUIRED) {
            return fail(r,
                        "unknown section marked required: this reader cannot use the "
                        "file%s",
                        newer(r));
        } /* else: an unknown optional section, skipped */
        pos += NCX_SEC_HEADER_SIZE + (size_t)slen + pad;
    }
    set_where(r, "%s", "");
    if (pos != len)
        return fail(r, "%zu bytes after the last of %u sections", len - pos, nsect);
    if (!meta->seen)
        return fail(r, "section META is missing");
    if (!decl->seen)
        return fail(r, "section DECL is missing");
    if (!strm->seen && !code->seen)
        return fail(r, "section STRM is missing (or CODE, in 1.1)");
    if (strm->seen && code->seen)
        return fail(r, "sections STRM and CODE both hold streams: only one may");
    if (code->seen && (!view->seen || !opnd->seen))
        return fail(r, "section CODE needs sections VIEW and OPND");
    if (!code->seen && (view->seen || opnd->seen))
        return fail(r, "section %s without CODE", view->seen ? "VIEW" : "OPND");
    return 0;
}

ncsim_status_t isa_ncx_read(const uint8_t *buf, size_t len, const isa_geometry_t *g,
                            const char *file, isa_program_t **out, isa_diag_t *diag)
{
    *out = NULL;
    isa_geometry_t defaults;
    if (!g) {
        isa_geometry_default(&defaults);
        g = &defaults;
    }
    reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return NCSIM_NOMEM;
    r->file = file ? file : "<input>";
    r->diag = diag;
    r->g = g;
    if (!buf)
        len = 0;
    span_t meta = {0}, strs = {0}, decl = {0}, strm = {0}, line = {0}, view = {0}, opnd = {0},
           code = {0};
    ncsim_status_t status = NCSIM_FORMAT;
    if (isa_builder_init(&r->b)) {
        free(r);
        return NCSIM_NOMEM;
    }
    if (read_container(r, buf, len, &meta, &strs, &decl, &strm, &line, &view, &opnd, &code) ||
        read_strs(r, &strs) || read_meta(r, &meta) || read_decl(r, &decl) ||
        (code.seen && (read_views(r, &view) || read_opnd(r, &opnd))) ||
        read_strm(r, code.seen ? &code : &strm, code.seen) || read_line(r, &line))
        goto fail;
    isa_diag_t quiet;
    isa_diag_init(&quiet, 1);
    /* read_clauses checked every clause against the declared semaphores */
    ncsim_status_t checked = isa_check_program_flags(r->b.prog, g, r->file, diag ? diag : &quiet,
                                                     ISA_CHECK_CLAUSES_DONE);
    isa_diag_free(&quiet);
    if (checked != NCSIM_OK)
        goto fail;
    r->b.prog->checked = *g;
    *out = r->b.prog;
    free(r->block_first);
    free(r->block_op);
    free(r);
    return NCSIM_OK;
fail:
    if (r->nomem)
        status = NCSIM_NOMEM;
    isa_program_free(r->b.prog);
    free(r->block_first);
    free(r->block_op);
    free(r);
    return status;
}
