/*
 * program.c -- name tables, opcode signatures, views and the program container.
 */
#include "isa.h"
#include "isa_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- status -------------------------------------------------------------------------------- */

int ncsim_status_exit_code(ncsim_status_t status)
{
    static const int codes[] = {
#define XX(name, code, text) code,
        NCSIM_STATUS_MAP(XX)
#undef XX
    };
    return (unsigned)status < NCSIM_STATUS_COUNT ? codes[status] : 4;
}

const char *ncsim_status_text(ncsim_status_t status)
{
    static const char *const texts[] = {
#define XX(name, code, text) text,
        NCSIM_STATUS_MAP(XX)
#undef XX
    };
    return (unsigned)status < NCSIM_STATUS_COUNT ? texts[status] : "unknown status";
}

const char *ncsim_status_name(ncsim_status_t status)
{
    static const char *const names[] = {
#define XX(name, code, text) #name,
        NCSIM_STATUS_MAP(XX)
#undef XX
    };
    return (unsigned)status < NCSIM_STATUS_COUNT ? names[status] : "UNKNOWN";
}

/* The version of the library (the header's macros are those of the header compiled against). */
const char *ncsim_version(void)
{
#define NCSIM_STR2(x) #x
#define NCSIM_STR(x) NCSIM_STR2(x)
    return NCSIM_STR(NCSIM_VERSION_MAJOR) "." NCSIM_STR(NCSIM_VERSION_MINOR) "." NCSIM_STR(
        NCSIM_VERSION_PATCH);
}

int ncsim_version_number(void)
{
    return NCSIM_VERSION_NUMBER;
}

/* ---- name tables --------------------------------------------------------------------------- */

static const char *const engine_names[] = {
#define XX(id, name) name,
    ISA_ENGINE_MAP(XX)
#undef XX
};

static const struct {
    const char *name;
    uint8_t bytes, is_float, is_signed;
} dtypes[] = {
#define XX(id, name, bytes, isf, iss) {name, bytes, isf, iss},
    ISA_DTYPE_MAP(XX)
#undef XX
};

static const char *const space_keywords[] = {
#define XX(id, kw, dir) kw,
    ISA_SPACE_MAP(XX)
#undef XX
};

static const struct {
    const char *name;
    int can_reduce;
} alus[] = {
#define XX(id, name, red) {name, red},
    ISA_ALU_MAP(XX)
#undef XX
};

static const char *const func_names[] = {
#define XX(id, name) name,
    ISA_FUNC_MAP(XX)
#undef XX
};

static const char *const cmp_names[] = {
#define XX(id, name) name,
    ISA_CMP_MAP(XX)
#undef XX
};

const char *isa_engine_name(isa_engine_t e)
{
    return (unsigned)e < ISA_ENGINE_COUNT ? engine_names[e] : "?";
}
const char *isa_dtype_name(isa_dtype_t t)
{
    return (unsigned)t < ISA_DT_COUNT ? dtypes[t].name : "?";
}
uint32_t isa_dtype_size(isa_dtype_t t)
{
    return (unsigned)t < ISA_DT_COUNT ? dtypes[t].bytes : 0;
}
int isa_dtype_is_float(isa_dtype_t t)
{
    return (unsigned)t < ISA_DT_COUNT && dtypes[t].is_float;
}
int isa_dtype_is_signed(isa_dtype_t t)
{
    return (unsigned)t < ISA_DT_COUNT && dtypes[t].is_signed;
}
const char *isa_space_keyword(isa_space_t s)
{
    return (unsigned)s < ISA_SPACE_COUNT ? space_keywords[s] : "?";
}
const char *isa_space_label(isa_space_t s)
{
    static const char *const labels[] = {
#define XX(id, kw, dir) #id,
        ISA_SPACE_MAP(XX)
#undef XX
    };
    return (unsigned)s < ISA_SPACE_COUNT ? labels[s] : "?";
}
const char *isa_alu_name(isa_alu_t a)
{
    return (unsigned)a < ISA_ALU_COUNT ? alus[a].name : "?";
}
int isa_alu_can_reduce(isa_alu_t a)
{
    return (unsigned)a < ISA_ALU_COUNT && alus[a].can_reduce;
}
const char *isa_func_name(isa_func_t f)
{
    return (unsigned)f < ISA_FUNC_COUNT ? func_names[f] : "?";
}
const char *isa_cmp_name(isa_cmp_t c)
{
    return (unsigned)c < ISA_CMP_COUNT ? cmp_names[c] : "?";
}
const char *isa_tensor_kind_name(isa_tensor_kind_t k)
{
    static const char *const names[] = {"input", "output", "inout", "scratch", "local"};
    return (unsigned)k <= ISA_TK_LOCAL ? names[k] : "?";
}

static int lookup(const char *const *names, size_t n, size_t stride, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)((const char *)names + i * stride);
        if (strlen(name) == len && memcmp(name, s, len) == 0)
            return (int)i;
    }
    return -1;
}

int isa_engine_lookup(const char *s, size_t len)
{
    return lookup(engine_names, ISA_ENGINE_COUNT, sizeof engine_names[0], s, len);
}
int isa_dtype_lookup(const char *s, size_t len)
{
    return lookup(&dtypes[0].name, ISA_DT_COUNT, sizeof dtypes[0], s, len);
}
int isa_alu_lookup(const char *s, size_t len)
{
    return lookup(&alus[0].name, ISA_ALU_COUNT, sizeof alus[0], s, len);
}
int isa_func_lookup(const char *s, size_t len)
{
    return lookup(func_names, ISA_FUNC_COUNT, sizeof func_names[0], s, len);
}
int isa_cmp_lookup(const char *s, size_t len)
{
    return lookup(cmp_names, ISA_CMP_COUNT, sizeof cmp_names[0], s, len);
}

/* ---- opcode signatures ----------------------------------------------------------------------- */

static const struct {
    const char *mnemonic, *signature, *synopsis;
    uint32_t engines;
} op_rows[] = {
#define ISA_OP(id, mn, eng, sig, syn) {mn, sig, syn, eng},
#include "ops.def"
#undef ISA_OP
};

static isa_op_info_t op_infos[ISA_OP_COUNT];

static int kind_from_word(const char *w, size_t n)
{
    static const struct {
        const char *word;
        isa_kind_t kind;
    } kinds[] = {{"v", ISA_KIND_VIEW},  {"s", ISA_KIND_SCALAR}, {"f", ISA_KIND_FLOAT},
                 {"i", ISA_KIND_INT},   {"l", ISA_KIND_LIST},   {"alu", ISA_KIND_ALU},
                 {"red", ISA_KIND_RED}, {"func", ISA_KIND_FUNC}, {"cmp", ISA_KIND_CMP},
                 {"g", ISA_KIND_GROUP}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i].word) == n && memcmp(kinds[i].word, w, n) == 0)
            return (int)kinds[i].kind;
    abort(); /* ops.def is wrong: a build-time invariant */
}

/* Parse one signature string of ops.def into slot descriptors. */
static void parse_signature(isa_op_info_t *info, const char *sig)
{
    const char *p = sig;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *end = p;
        while (*end && *end != ' ')
            end++;
        isa_slot_desc_t *s = &info->slots[info->nslots++];
        memset(s, 0, sizeof *s);
        const char *sep = p;
        while (sep < end && *sep != ':' && *sep != '=')
            sep++;
        if (*p == '!') {
            s->form = ISA_FORM_FLAG;
            s->kind = ISA_KIND_FLAG;
            s->optional = 1;
            memcpy(s->name, p + 1, (size_t)(end - p - 1));
        } else {
            memcpy(s->name, p, (size_t)(sep - p));
            s->form = *sep == ':' ? ISA_FORM_POSITIONAL : ISA_FORM_OPTION;
            const char *k = sep + 1, *kend = end;
            if (kend[-1] == '?') {
                s->optional = 1;
                kend--;
            }
            s->kind = (uint8_t)kind_from_word(k, (size_t)(kend - k));
            if (s->form == ISA_FORM_POSITIONAL)
                info->npositional++;
        }
        p = end;
    }
}

/* Parse every signature once; pthread_once makes the first calls from several threads (several
 * simulators, Python threads) safe. */
static void op_infos_init(void)
{
    for (int i = 0; i < ISA_OP_COUNT; i++) {
        isa_op_info_t info;
        memset(&info, 0, sizeof info);
        info.mnemonic = op_rows[i].mnemonic;
        info.synopsis = op_rows[i].synopsis;
        info.signature = op_rows[i].signature;
        info.engines = op_rows[i].engines;
        parse_signature(&info, op_rows[i].signature);
        op_infos[i] = info;
    }
}

const isa_op_info_t *isa_op_info(isa_op_t op)
{
    /* Called per instruction by loaders and checks: after the first call, one acquire load
     * instead of a pthread_once call (which pairs with the release store below). */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    static atomic_int ready;
    if (!atomic_load_explicit(&ready, memory_order_acquire)) {
        pthread_once(&once, op_infos_init);
        atomic_store_explicit(&ready, 1, memory_order_release);
    }
    return (unsigned)op < ISA_OP_COUNT ? &op_infos[op] : NULL;
}

isa_op_t isa_op_lookup(const char *mnemonic, size_t len)
{
    for (int i = 0; i < ISA_OP_COUNT; i++)
        if (strlen(op_rows[i].mnemonic) == len && memcmp(op_rows[i].mnemonic, mnemonic, len) == 0)
            return (isa_op_t)i;
    return ISA_OP_COUNT;
}

/* ---- views ----------------------------------------------------------------------------------- */

uint64_t isa_view_free_elems(const isa_view_t *v)
{
    uint64_t n = 1;
    for (unsigned i = 0; i < v->ndims; i++)
        n *= v->count[i];
    return n;
}

uint64_t isa_view_elems(const isa_view_t *v)
{
    uint64_t n = isa_view_free_elems(v);
    return v->space == ISA_SPACE_HBM ? n : n * v->pcount;
}

void isa_view_byte_range(const isa_view_t *v, int64_t *lo, int64_t *hi)
{
    int64_t es = (int64_t)isa_dtype_size((isa_dtype_t)v->dtype);
    int64_t min = 0, max = 0;
    for (unsigned i = 0; i < v->ndims; i++) {
        int64_t span = v->stride[i] * (int64_t)(v->count[i] ? v->count[i] - 1 : 0);
        if (span < 0)
            min += span;
        else
            max += span;
    }
    *lo = (int64_t)v->offset + min * es;
    *hi = (int64_t)v->offset + (max + 1) * es;
}

int isa_view_equal(const isa_view_t *a, const isa_view_t *b)
{
    if (a->space != b->space || a->dtype != b->dtype || a->ndims != b->ndims ||
        a->offset != b->offset)
        return 0;
    if (a->space != ISA_SPACE_HBM && (a->pstart != b->pstart || a->pcount != b->pcount))
        return 0;
    for (unsigned i = 0; i < a->ndims; i++)
        if (a->stride[i] != b->stride[i] || a->count[i] != b->count[i])
            return 0;
    return 1;
}

/* ---- program container ------------------------------------------------------------------------ */

void isa_geometry_default(isa_geometry_t *g)
{
    /* trn1 figures, shared/reference/neuroncore-v2.md section 3 (ARCH). */
    g->partitions = 128;
    g->sbuf_bytes = 196608;
    g->psum_bytes = 16384;
    g->psum_bank_bytes = 2048;
    g->hbm_bytes = 32ull << 30;
}

int isa_geometry_equal(const isa_geometry_t *a, const isa_geometry_t *b)
{
    return a->partitions == b->partitions && a->sbuf_bytes == b->sbuf_bytes &&
           a->psum_bytes == b->psum_bytes && a->psum_bank_bytes == b->psum_bank_bytes &&
           a->hbm_bytes == b->hbm_bytes;
}

void isa_program_free(isa_program_t *prog)
{
    if (!prog)
        return;
    free(prog->tensors);
    free(prog->sems);
    free(prog->groups);
    free(prog->streams);
    if (prog->instrs_mapped)
        munmap(prog->instrs, prog->instrs_mapped);
    else
        free(prog->instrs);
    free(prog->args);
    free(prog->views);
    free(prog->ints);
    free(prog->strings);
    free(prog);
}

const char *isa_string(const isa_program_t *prog, uint32_t offset)
{
    if (offset == ISA_NO_NAME || !prog->strings || offset >= prog->strings_len)
        return "";
    return prog->strings + offset;
}

/* ---- builder ----------------------------------------------------------------------------------- */

int isa_builder_init(isa_builder_t *b)
{
    memset(b, 0, sizeof *b);
    b->prog = calloc(1, sizeof *b->prog);
    if (!b->prog)
        return -1;
    b->prog->chips = 1;
    b->prog->ncores = ISA_CORES_PER_CHIP;
    b->prog->source = ISA_NO_NAME;
    return 0;
}

void isa_populate(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    if (p && bytes >= ((size_t)1 << 20)) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1),
                  hi = ((uintptr_t)p + bytes) & ~(page - 1);
        if (hi > lo)
            (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE); /* advice only */
    }
#else
    (void)p;
    (void)bytes;
#endif
}

/*
 * ncsim is built for baseline x86-64, so its floating point is SSE. After code that leaves
 * the upper halves of the AVX registers set (ISA-L's CRC and deflate pick AVX-512 code where
 * the processor has it, without a vzeroupper at the end), every SSE instruction of the thread
 * waits on those halves: simulating the DMA-heavy bench_speed stream right after loading its
 * .ncx was 30 % slower until this was called after the checksum.
 */
void isa_avx_clean(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx"))
        __asm__ volatile("vzeroupper" ::: "memory");
#endif
}

void *isa_alloc_large(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    isa_populate(p, bytes);
    return p;
}

/* Grow *arr (element size es) so that it holds at least need elements. */
static int grow(isa_builder_t *b, void **arr, uint32_t *cap, uint32_t need, size_t es)
{
    if (b->oom)
        return -1;
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? (uint64_t)*cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    if (nc > UINT32_MAX - 1)
        nc = UINT32_MAX - 1;
    if (nc < need) {
        b->oom = 1;
        return -1;
    }
    void *p = realloc(*arr, (size_t)nc * es);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    *arr = p;
    *cap = (uint32_t)nc;
    return 0;
}

#define BUILDER_APPEND(b, field, count, cap, item)                                            \
    do {                                                                                       \
        if (grow(b, (void **)&(b)->prog->field, &(b)->cap, (b)->prog->count + 1,               \
                 sizeof(*(b)->prog->field)))                                                   \
            return UINT32_MAX;                                                                 \
        (b)->prog->field[(b)->prog->count] = *(item);                                          \
        return (b)->prog->count++;                                                             \
    } while (0)

uint32_t isa_builder_tensor(isa_builder_t *b, const isa_tensor_t *t)
{
    BUILDER_APPEND(b, tensors, ntensors, cap_tensors, t);
}
uint32_t isa_builder_sem(isa_builder_t *b, const isa_sem_t *s)
{
    BUILDER_APPEND(b, sems, nsems, cap_sems, s);
}
uint32_t isa_builder_group(isa_builder_t *b, const isa_group_t *g)
{
    BUILDER_APPEND(b, groups, ngroups, cap_groups, g);
}
uint32_t isa_builder_instr(isa_builder_t *b, const isa_instr_t *in)
{
    BUILDER_APPEND(b, instrs, ninstrs, cap_instrs, in);
}
int isa_builder_reserve_instrs(isa_builder_t *b, uint32_t n)
{
    if (b->oom)
        return -1;
    if (n <= b->cap_instrs)
        return 0;
    size_t bytes = (size_t)n * sizeof *b->prog->instrs;
    void *p = isa_alloc_large(bytes);
    if (p && b->prog->ninstrs)
        memcpy(p, b->prog->instrs, (size_t)b->prog->ninstrs * sizeof *b->prog->instrs);
    if (p)
        free(b->prog->instrs);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->prog->instrs = p;
    b->cap_instrs = n;
    return 0;
}

uint32_t isa_builder_view(isa_builder_t *b, const isa_view_t *v)
{
    BUILDER_APPEND(b, views, nviews, cap_views, v);
}

uint32_t isa_builder_args(isa_builder_t *b, uint32_t n)
{
    isa_program_t *p = b->prog;
    if ((uint64_t)p->nargs + n >= UINT32_MAX ||
        grow(b, (void **)&p->args, &b->cap_args, p->nargs + n, sizeof *p->args))
        return UINT32_MAX;
    if (n) /* an empty pool has no array yet: memset(NULL, 0, 0) is undefined */
        memset(&p->args[p->nargs], 0, n * sizeof *p->args);
    uint32_t first = p->nargs;
    p->nargs += n;
    return first;
}

uint32_t isa_builder_ints(isa_builder_t *b, const int64_t *v, uint32_t n)
{
    isa_program_t *p = b->prog;
    if ((uint64_t)p->nints + n >= UINT32_MAX ||
        grow(b, (void **)&p->ints, &b->cap_ints, p->nints + n, sizeof *p->ints))
        return UINT32_MAX;
    if (n)
        memcpy(&p->ints[p->nints], v, n * sizeof *v);
    uint32_t first = p->nints;
    p->nints += n;
    return first;
}

uint32_t isa_builder_string(isa_builder_t *b, const char *s, size_t len)
{
    isa_program_t *p = b->prog;
    if ((uint64_t)p->strings_len + len + 1 >= UINT32_MAX ||
        grow(b, (void **)&p->strings, &b->cap_strings, p->strings_len + (uint32_t)len + 1, 1))
        return UINT32_MAX;
    memcpy(p->strings + p->strings_len, s, len);
    p->strings[p->strings_len + len] = '\0';
    uint32_t off = p->strings_len;
    p->strings_len += (uint32_t)len + 1;
    return off;
}

uint32_t isa_builder_intern(isa_builder_t *b, const char *s, size_t len)
{
    isa_program_t *p = b->prog;
    for (uint32_t off = 0; off < p->strings_len;) {
        size_t n = strlen(p->strings + off);
        if (n == len && memcmp(p->strings + off, s, len) == 0)
            return off;
        off += (uint32_t)n + 1;
    }
    return isa_builder_string(b, s, len);
}
