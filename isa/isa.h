/*
 * isa.h -- the decoded NCA program: what the assembler builds, the .ncx loader reads, and
 * every later stage (simulator, checks, traces) consumes.
 *
 * A program is a set of declarations (tensors, semaphores, groups) and one in-order
 * instruction stream per (core, engine). All instructions live in one array, stream by
 * stream; operands live in side pools so an instruction stays small (48 bytes).
 *
 * Depends on libc only.
 */
#ifndef NCSIM_ISA_H
#define NCSIM_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* ---- Fixed limits of the language (ISA.md) ---------------------------------------------- */

#define ISA_MAX_FREE_DIMS 4   /* SBUF/PSUM views: free dims after the partition dim */
#define ISA_MAX_HBM_DIMS 5    /* HBM views */
#define ISA_MAX_DIMS 5        /* storage for either */
#define ISA_MAX_COUNT 65535   /* largest count of one view dim */
#define ISA_MAX_WAITS 2
#define ISA_MAX_POSTS 2
#define ISA_MAX_SEMS 64       /* semaphores per core */
#define ISA_MAX_CHIPS 64
#define ISA_CORES_PER_CHIP 2
#define ISA_MAX_CORES (ISA_MAX_CHIPS * ISA_CORES_PER_CHIP)
#define ISA_MAX_LIST 64       /* longest integer list operand */
#define ISA_MAX_SLOTS 8       /* most operand slots of any instruction */
#define ISA_NO_NAME UINT32_MAX

/* ---- Engines ------------------------------------------------------------------------------- */

/* XX(ID, name) -- order is the engine number used in streams and in the .ncx format */
#define ISA_ENGINE_MAP(XX) XX(PE, "pe") XX(ACT, "act") XX(DVE, "dve") XX(POOL, "pool") \
    XX(SP, "sp") XX(CC, "cc")

typedef enum isa_engine {
#define XX(id, name) ISA_ENGINE_##id,
    ISA_ENGINE_MAP(XX)
#undef XX
        ISA_ENGINE_COUNT
} isa_engine_t;

#define ISA_ENG_PE (1u << ISA_ENGINE_PE)
#define ISA_ENG_ACT (1u << ISA_ENGINE_ACT)
#define ISA_ENG_DVE (1u << ISA_ENGINE_DVE)
#define ISA_ENG_POOL (1u << ISA_ENGINE_POOL)
#define ISA_ENG_SP (1u << ISA_ENGINE_SP)
#define ISA_ENG_CC (1u << ISA_ENGINE_CC)

/* ---- Data types (ISA.md section 3) ---------------------------------------------------------- */

/* XX(ID, name, bytes, is_float, is_signed) */
#define ISA_DTYPE_MAP(XX)                                                                      \
    XX(FP32, "fp32", 4, 1, 1)                                                                  \
    XX(FP16, "fp16", 2, 1, 1)                                                                  \
    XX(BF16, "bf16", 2, 1, 1)                                                                  \
    XX(TF32, "tf32", 4, 1, 1)                                                                  \
    XX(FP8E4, "fp8e4", 1, 1, 1)                                                                \
    XX(FP8E5, "fp8e5", 1, 1, 1)                                                                \
    XX(FP8E3, "fp8e3", 1, 1, 1)                                                                \
    XX(I8, "i8", 1, 0, 1)                                                                      \
    XX(U8, "u8", 1, 0, 0)                                                                      \
    XX(I16, "i16", 2, 0, 1)                                                                    \
    XX(U16, "u16", 2, 0, 0)                                                                    \
    XX(I32, "i32", 4, 0, 1)                                                                    \
    XX(U32, "u32", 4, 0, 0)

typedef enum isa_dtype {
#define XX(id, name, bytes, isf, iss) ISA_DT_##id,
    ISA_DTYPE_MAP(XX)
#undef XX
        ISA_DT_COUNT
} isa_dtype_t;

/* ---- Memory spaces ------------------------------------------------------------------------- */

/* XX(ID, keyword in raw views, directive) */
#define ISA_SPACE_MAP(XX) XX(SBUF, "sb", ".sbuf") XX(PSUM, "ps", ".psum") XX(HBM, "hbm", ".hbm")

typedef enum isa_space {
#define XX(id, kw, dir) ISA_SPACE_##id,
    ISA_SPACE_MAP(XX)
#undef XX
        ISA_SPACE_COUNT
} isa_space_t;

/* ---- Operator names -------------------------------------------------------------------------- */

/* XX(ID, name, can_reduce) -- ISA.md 7.3 binary ops; can_reduce marks tensor_reduce ops */
#define ISA_ALU_MAP(XX)                                                                        \
    XX(ADD, "add", 1)                                                                          \
    XX(SUBTRACT, "subtract", 0)                                                                \
    XX(MULTIPLY, "multiply", 1)                                                                \
    XX(DIVIDE, "divide", 0)                                                                    \
    XX(MAX, "max", 1)                                                                          \
    XX(MIN, "min", 1)                                                                          \
    XX(POW, "pow", 0)                                                                          \
    XX(IS_EQUAL, "is_equal", 0)                                                                \
    XX(NOT_EQUAL, "not_equal", 0)                                                              \
    XX(IS_GE, "is_ge", 0)                                                                      \
    XX(IS_GT, "is_gt", 0)                                                                      \
    XX(IS_LE, "is_le", 0)                                                                      \
    XX(IS_LT, "is_lt", 0)                                                                      \
    XX(LOGICAL_AND, "logical_and", 0)                                                          \
    XX(LOGICAL_OR, "logical_or", 0)                                                            \
    XX(LOGICAL_XOR, "logical_xor", 0)                                                          \
    XX(BITWISE_AND, "bitwise_and", 1)                                                          \
    XX(BITWISE_OR, "bitwise_or", 1)                                                            \
    XX(BITWISE_XOR, "bitwise_xor", 1)                                                          \
    XX(SHIFT_LEFT, "shift_left", 0)                                                            \
    XX(SHIFT_RIGHT, "shift_right", 0)                                                          \
    XX(MOD, "mod", 0)                                                                          \
    XX(FMOD, "fmod", 0)

typedef enum isa_alu {
#define XX(id, name, red) ISA_ALU_##id,
    ISA_ALU_MAP(XX)
#undef XX
        ISA_ALU_COUNT
} isa_alu_t;

/* XX(ID, name) -- ISA.md 7.2 activation functions */
#define ISA_FUNC_MAP(XX)                                                                       \
    XX(IDENTITY, "identity") XX(COPY, "copy") XX(SQUARE, "square") XX(SIGMOID, "sigmoid")      \
    XX(RELU, "relu") XX(GELU, "gelu") XX(GELU_TANH, "gelu_tanh")                               \
    XX(GELU_SIGMOID, "gelu_sigmoid") XX(SILU, "silu") XX(TANH, "tanh")                         \
    XX(SOFTPLUS, "softplus") XX(MISH, "mish") XX(ERF, "erf") XX(EXP, "exp") XX(LOG, "log")     \
    XX(SQRT, "sqrt") XX(RSQRT, "rsqrt") XX(RECIPROCAL, "reciprocal") XX(SIGN, "sign")          \
    XX(ABS, "abs") XX(SIN, "sin") XX(ARCTAN, "arctan") XX(GELU_DX, "gelu_dx")                  \
    XX(SILU_DX, "silu_dx") XX(ERF_DX, "erf_dx")

typedef enum isa_func {
#define XX(id, name) ISA_FUNC_##id,
    ISA_FUNC_MAP(XX)
#undef XX
        ISA_FUNC_COUNT
} isa_func_t;

/* XX(ID, name) -- ISA.md 7.4 affine_select comparisons */
#define ISA_CMP_MAP(XX) XX(GE, "ge") XX(GT, "gt") XX(LE, "le") XX(LT, "lt") XX(EQ, "eq") XX(NE, "ne")

typedef enum isa_cmp {
#define XX(id, name) ISA_CMP_##id,
    ISA_CMP_MAP(XX)
#undef XX
        ISA_CMP_COUNT
} isa_cmp_t;

/* ---- Opcodes (isa/ops.def) ------------------------------------------------------------------ */

typedef enum isa_op {
#define ISA_OP(id, mn, eng, sig, syn) ISA_OP_##id,
#include "ops.def"
#undef ISA_OP
    ISA_OP_COUNT
} isa_op_t;

/* Operand kinds of a signature slot (see ops.def). */
typedef enum isa_kind {
    ISA_KIND_VIEW,  /* v */
    ISA_KIND_SCALAR, /* s: immediate or [P,1] view */
    ISA_KIND_FLOAT, /* f */
    ISA_KIND_INT,   /* i */
    ISA_KIND_LIST,  /* l */
    ISA_KIND_ALU,   /* alu */
    ISA_KIND_RED,   /* red */
    ISA_KIND_FUNC,  /* func */
    ISA_KIND_CMP,   /* cmp */
    ISA_KIND_GROUP, /* g */
    ISA_KIND_FLAG   /* !name */
} isa_kind_t;

typedef enum isa_slot_form {
    ISA_FORM_POSITIONAL,
    ISA_FORM_OPTION, /* key=value */
    ISA_FORM_FLAG
} isa_slot_form_t;

typedef struct isa_slot_desc {
    char name[16];     /* "D", "SRC", "scale", "acc" ... */
    uint8_t kind;      /* isa_kind_t */
    uint8_t form;      /* isa_slot_form_t */
    uint8_t optional;  /* may be absent */
} isa_slot_desc_t;

typedef struct isa_op_info {
    const char *mnemonic;
    const char *synopsis;
    const char *signature;
    uint32_t engines; /* ISA_ENG_* mask */
    uint8_t nslots;
    uint8_t npositional;
    isa_slot_desc_t slots[ISA_MAX_SLOTS];
} isa_op_info_t;

/* Parsed description of an opcode (signature parsed once, thread-safe after first call). */
const isa_op_info_t *isa_op_info(isa_op_t op);
/* Lookup by mnemonic; returns ISA_OP_COUNT when unknown. */
isa_op_t isa_op_lookup(const char *mnemonic, size_t len);

/* ---- Views ------------------------------------------------------------------------------------ */

/*
 * A view in raw form (ISA.md 5.1). For SBUF/PSUM, partitions [pstart, pstart+pcount) and
 * byte `offset` inside every partition, then `ndims` free dims. For HBM, `offset` is the byte
 * address in the issuing core's chip HBM and all dims are in dim[]. Strides are in elements,
 * outermost first; `offset` is the address of the first element visited.
 */
typedef struct isa_view {
    uint8_t space;  /* isa_space_t */
    uint8_t dtype;  /* isa_dtype_t */
    uint8_t ndims;  /* free dims (SBUF/PSUM) or dims (HBM) */
    uint8_t pstart; /* SBUF/PSUM only */
    uint16_t pcount; /* SBUF/PSUM only; 1 for HBM */
    uint16_t _pad;
    uint64_t offset;
    int64_t stride[ISA_MAX_DIMS];
    uint32_t count[ISA_MAX_DIMS];
} isa_view_t;

/* Elements per partition (SBUF/PSUM) or in total (HBM). */
uint64_t isa_view_free_elems(const isa_view_t *v);
/* Total elements, partitions included. */
uint64_t isa_view_elems(const isa_view_t *v);
/* Lowest and one-past-highest byte touched inside a partition (or in HBM). */
void isa_view_byte_range(const isa_view_t *v, int64_t *lo, int64_t *hi);
/* Equality of two views, field by field. */
int isa_view_equal(const isa_view_t *a, const isa_view_t *b);

/* ---- Instructions ----------------------------------------------------------------------------- */

typedef enum isa_sync_op {
    ISA_WAIT_GE, /* wait SEM >= N */
    ISA_WAIT_EQ, /* wait SEM == N */
    ISA_POST_ADD, /* post SEM += N (post SEM is += 1) */
    ISA_POST_SUB, /* post SEM -= N */
    ISA_POST_SET  /* post SEM = N */
} isa_sync_op_t;

typedef struct isa_sync {
    uint8_t sem; /* index on the instruction's core, < ISA_MAX_SEMS */
    uint8_t op;  /* isa_sync_op_t */
    uint16_t _pad;
    int32_t value;
} isa_sync_t;

/* One operand slot. `present` is 0 for an optional slot left out. */
typedef struct isa_arg {
    uint8_t present;
    uint8_t is_view; /* 1 for VIEW slots, and for SCALAR slots given as a [P,1] view */
    uint16_t count;  /* LIST: number of integers */
    uint32_t index;  /* VIEW / SCALAR view: index in prog->views; LIST: index in prog->ints */
    union {
        double f;    /* FLOAT, SCALAR immediate */
        int64_t i;   /* INT, ALU/RED/FUNC/CMP enum value, GROUP index, FLAG (1) */
    } v;
} isa_arg_t;

typedef struct isa_instr {
    uint16_t op;     /* isa_op_t */
    uint8_t engine;  /* isa_engine_t of the stream */
    uint8_t nwait;
    uint8_t npost;
    uint8_t _pad[3];
    uint32_t args;   /* first slot in prog->args; isa_op_info(op)->nslots slots */
    uint32_t line;   /* source line, 0 when unknown */
    isa_sync_t wait[ISA_MAX_WAITS];
    isa_sync_t post[ISA_MAX_POSTS];
} isa_instr_t;

/* ---- Declarations ------------------------------------------------------------------------------- */

typedef enum isa_tensor_kind {
    ISA_TK_INPUT,
    ISA_TK_OUTPUT,
    ISA_TK_INOUT,
    ISA_TK_SCRATCH,
    ISA_TK_LOCAL /* SBUF/PSUM tensors */
} isa_tensor_kind_t;

typedef struct isa_tensor {
    uint32_t name;   /* offset in prog->strings, or ISA_NO_NAME */
    uint8_t space;   /* isa_space_t */
    uint8_t dtype;
    uint8_t kind;    /* isa_tensor_kind_t */
    uint8_t ndims;   /* HBM: dims; SBUF/PSUM: 1 + free dims (dim 0 is the partition dim) */
    int32_t core;    /* SBUF/PSUM: owning core, -1 for every core; HBM: -1 */
    int32_t chip;    /* HBM: chip; otherwise -1 */
    uint32_t pstart; /* SBUF/PSUM first partition */
    uint64_t offset; /* SBUF/PSUM byte offset in each partition; HBM byte address */
    uint64_t dims[ISA_MAX_DIMS + 1];
} isa_tensor_t;

typedef struct isa_sem {
    uint32_t name;  /* string offset or ISA_NO_NAME */
    int32_t core;   /* -1: declared before any .core, exists on every core */
    uint8_t index;  /* semaphore number on its core(s) */
    int32_t init;
} isa_sem_t;

typedef struct isa_group {
    uint32_t name;
    uint32_t ncores;
    uint32_t first; /* index of the first core id in prog->ints */
} isa_group_t;

typedef struct isa_stream {
    uint32_t first; /* index of the first instruction in prog->instrs */
    uint32_t count;
} isa_stream_t;

/*
 * Memory geometry the assembler and the loader check against. Filled from the architecture
 * config by the caller (isa/ knows no presets); isa_geometry_default() gives trn1's.
 */
typedef struct isa_geometry {
    uint32_t partitions;           /* 128 */
    uint64_t sbuf_bytes;           /* per partition: 196,608 */
    uint64_t psum_bytes;           /* per partition: 16,384 */
    uint64_t psum_bank_bytes;      /* 2,048 */
    uint64_t hbm_bytes;            /* per chip */
} isa_geometry_t;

void isa_geometry_default(isa_geometry_t *g);
/* 1 when two geometries have the same sizes. */
int isa_geometry_equal(const isa_geometry_t *a, const isa_geometry_t *b);

typedef struct isa_program {
    char arch[32];  /* from .arch, empty when absent */
    uint32_t chips; /* from .chips, default 1 */
    uint32_t ncores; /* chips * 2 */
    uint32_t source; /* string offset of the source file name, or ISA_NO_NAME */

    isa_tensor_t *tensors;
    uint32_t ntensors;
    isa_sem_t *sems;
    uint32_t nsems;
    isa_group_t *groups;
    uint32_t ngroups;

    /* streams[core * ISA_ENGINE_COUNT + engine]; ncores * ISA_ENGINE_COUNT entries */
    isa_stream_t *streams;
    isa_instr_t *instrs;
    uint32_t ninstrs;
    size_t instrs_mapped; /* nonzero: instrs is a private mapping of this many bytes (the
                           * assembler's), unmapped by isa_program_free; 0: malloc'd */

    isa_arg_t *args;
    uint32_t nargs;
    isa_view_t *views;
    uint32_t nviews;
    int64_t *ints;
    uint32_t nints;
    char *strings; /* NUL-terminated names, back to back */
    uint32_t strings_len;
    /* the geometry every static check passed against (all zero: not checked); a run on the
     * same sizes need not check again. Not part of the .ncx format. */
    isa_geometry_t checked;
    /* the largest instrs[].line plus one, when the assembler or loader that made the program
     * knew it (0: not known; sim_create then scans the instructions, which on a program of a
     * million instructions was a twentieth of a timing-only run). Not part of the .ncx. */
    uint32_t line_end;
} isa_program_t;

/* malloc for a large array written whole right after (an instruction array, a file read
 * whole): from 1 MiB on, its pages are mapped in one call (Linux's MADV_POPULATE_WRITE, advice
 * only) instead of one page fault per 4 KiB, which was a third of loading a large .ncx.
 * (Transparent huge pages were faster on average but stalled some runs for a second in the
 * kernel's compaction.) Freed with free(); realloc accepts it. */
void *isa_alloc_large(size_t bytes);
/* The same policy for memory already allocated and about to be written whole: [p, p + bytes)
 * from 1 MiB on has its pages mapped in one call (advice only). */
void isa_populate(void *p, size_t bytes);

/* Clear the upper halves of the AVX registers after a library call that may have used them
 * (ISA-L picks AVX-512 code where the processor has it and leaves them set); see program.c. */
void isa_avx_clean(void);
/* Frees everything a program owns (the struct itself too). NULL is fine. */
void isa_program_free(isa_program_t *prog);
/* Name of a string offset ("" for ISA_NO_NAME). */
const char *isa_string(const isa_program_t *prog, uint32_t offset);
static inline const isa_arg_t *isa_instr_args(const isa_program_t *p, const isa_instr_t *in)
{
    /* a program of operand-less instructions (nop) has no args array: indexing NULL, even by
     * 0, is undefined behaviour */
    static const isa_arg_t none[ISA_MAX_SLOTS];
    return p->args ? &p->args[in->args] : none;
}
static inline const isa_view_t *isa_arg_view(const isa_program_t *p, const isa_arg_t *a)
{
    return &p->views[a->index];
}
static inline const isa_stream_t *isa_stream(const isa_program_t *p, uint32_t core,
                                             isa_engine_t e)
{
    return &p->streams[core * ISA_ENGINE_COUNT + (uint32_t)e];
}

/* ---- Name tables ------------------------------------------------------------------------------ */

const char *isa_engine_name(isa_engine_t e);
const char *isa_dtype_name(isa_dtype_t t);
uint32_t isa_dtype_size(isa_dtype_t t);
int isa_dtype_is_float(isa_dtype_t t);
int isa_dtype_is_signed(isa_dtype_t t);
const char *isa_space_keyword(isa_space_t s);
/* "SBUF", "PSUM", "HBM" (messages); "?" for another value. */
const char *isa_space_label(isa_space_t s);
const char *isa_alu_name(isa_alu_t a);
int isa_alu_can_reduce(isa_alu_t a);
const char *isa_func_name(isa_func_t f);
const char *isa_cmp_name(isa_cmp_t c);
const char *isa_tensor_kind_name(isa_tensor_kind_t k);

/* Lookups by name; return -1 when unknown. */
int isa_engine_lookup(const char *s, size_t len);
int isa_dtype_lookup(const char *s, size_t len);
int isa_alu_lookup(const char *s, size_t len);
int isa_func_lookup(const char *s, size_t len);
int isa_cmp_lookup(const char *s, size_t len);

#endif
