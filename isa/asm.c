/*
 * asm.c -- the NCA assembler (shared/spec/ISA.md).
 *
 * Two passes over the text:
 *  1. structure (scan_source): lex the text in chunks, reporting every lexical error;
 *     classify each line, match .loop/.endloop and .if/.elif/.else/.endif, find the end of
 *     each .core block, and keep the tokens of lines inside loops (they are replayed);
 *  2. execution (exec_lines): walk the lines like an interpreter, replaying loop bodies and
 *     .core blocks (once per core), evaluating expressions, declaring tensors and
 *     semaphores, and emitting instructions into per-(core, engine) streams. Lines whose
 *     tokens were not kept are re-lexed through a window of consecutive lines, so a
 *     million-line text never holds all its tokens at once.
 * Every statement is checked as it is emitted (isa_check_instr) so errors carry the line
 * and column of the operand at fault. At most one error is reported per source line (a
 * loop would otherwise repeat it), up to the diagnostic limit. Identical views and operand
 * blocks are stored once. Expansion is bounded (ASM_MAX_*): a runaway loop is an error.
 * Loop bodies are compiled as they first run and replayed (see "compiled loop bodies"): an
 * instruction line whose inputs take values seen before is appended without parsing, a
 * .let/.if/.elif/.else/.loop line runs from its compiled expressions, and expressions read
 * the symbols that no loop sets as constants ("constant folding").
 */
#define _GNU_SOURCE /* mremap (Linux) */
#include "asm.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "isa_internal.h"
#include "lex.h"

/* ---- symbol table ----------------------------------------------------------------------------- */

typedef enum sym_ns { NS_INT, NS_TENSOR, NS_SEM, NS_GROUP } sym_ns_t;

typedef struct sym {
    const char *name; /* points into the source text */
    uint32_t len;
    uint8_t ns;
    uint8_t hidden;   /* a loop variable out of scope: looks undefined */
    uint8_t varying;  /* set by a loop or by a .let in a loop body: never folded */
    uint8_t folded;   /* compiled code at the current fold epoch reads it as a constant */
    int32_t core;     /* -1 global, else the owning core (tensors, sems) */
    int64_t value;    /* NS_INT value; otherwise an index into the program's arrays */
    uint32_t next;    /* chain in the hash bucket, UINT32_MAX ends */
    uint32_t line;    /* source line of the declaration */
} sym_t;

typedef struct symtab {
    sym_t *syms;
    uint32_t n, cap;
    uint32_t *buckets;
    uint32_t nbuckets;
} symtab_t;

static uint32_t sym_hash(const char *s, uint32_t len, int ns, int32_t core)
{
    uint32_t h = 2166136261u ^ (uint32_t)ns * 16777619u ^ (uint32_t)(core + 1) * 2654435761u;
    for (uint32_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int symtab_init(symtab_t *t)
{
    memset(t, 0, sizeof *t);
    t->nbuckets = 1024;
    t->buckets = malloc(t->nbuckets * sizeof *t->buckets);
    if (!t->buckets)
        return -1;
    memset(t->buckets, 0xff, t->nbuckets * sizeof *t->buckets);
    return 0;
}

static void symtab_free(symtab_t *t)
{
    free(t->syms);
    free(t->buckets);
}

static sym_t *sym_find(symtab_t *t, const char *s, uint32_t len, int ns, int32_t core)
{
    uint32_t b = sym_hash(s, len, ns, core) & (t->nbuckets - 1);
    for (uint32_t i = t->buckets[b]; i != UINT32_MAX; i = t->syms[i].next) {
        sym_t *y = &t->syms[i];
        if (y->ns == ns && y->core == core && y->len == len && memcmp(y->name, s, len) == 0)
            return y;
    }
    return NULL;
}

static int symtab_grow(symtab_t *t)
{
    uint32_t nb = t->nbuckets * 2;
    uint32_t *b = malloc(nb * sizeof *b);
    if (!b)
        return -1;
    memset(b, 0xff, nb * sizeof *b);
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t h = sym_hash(t->syms[i].name, t->syms[i].len, t->syms[i].ns, t->syms[i].core) &
                     (nb - 1);
        t->syms[i].next = b[h];
        b[h] = i;
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = nb;
    return 0;
}

static sym_t *sym_add(symtab_t *t, const char *s, uint32_t len, int ns, int32_t core)
{
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 256;
        sym_t *p = realloc(t->syms, nc * sizeof *p);
        if (!p)
            return NULL;
        t->syms = p;
        t->cap = nc;
    }
    if (t->n >= t->nbuckets && symtab_grow(t))
        return NULL;
    sym_t *y = &t->syms[t->n];
    memset(y, 0, sizeof *y);
    y->name = s;
    y->len = len;
    y->ns = (uint8_t)ns;
    y->core = core;
    uint32_t b = sym_hash(s, len, ns, core) & (t->nbuckets - 1);
    y->next = t->buckets[b];
    t->buckets[b] = t->n;
    t->n++;
    return y;
}

/* What a kept (replayed) token resolved to: loops look the same names up millions of times.
 * Symbols are never removed, and a per-core name cannot shadow a global one, so a
 * resolution stays right for the same namespace and core. */
typedef struct tok_sym {
    uint32_t sym;  /* index + 1 in the symbol table, 0: not resolved yet */
    int32_t core;  /* A->core when resolved */
    uint8_t ns;
} tok_sym_t;

/* ---- assembler state ---------------------------------------------------------------------------- */

/*
 * Interning of views and operand blocks. Loop-generated code repeats a few distinct views
 * (x[:, i % 4, :] has four) and argument blocks millions of times; sharing one copy of
 * each keeps a million-instruction program in a fraction of the memory. Nothing writes
 * to an assembled program's views or args, so sharing is invisible to its readers.
 * Open addressing over indices (+1; 0 is empty) into prog->views / prog->args.
 */
typedef struct intern {
    uint64_t *slots; /* index + 1 in the low half, the hash's high half above (compared
                      * first: a probe past another entry then reads no view or block) */
    uint32_t cap; /* power of two, or 0 */
    uint32_t n;
} intern_t;

static uint64_t mix64(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* The finish of a hash whose low bits index a table: every input bit reaches them (values
 * that differ only in high bits, as offsets in steps of a row, clustered in the tables
 * otherwise: a million distinct views took 2.5 us each to intern). */
static uint64_t fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ h >> 33;
}

static uint64_t view_hash(const isa_view_t *v)
{
    uint64_t h = mix64(0, (uint64_t)v->space | (uint64_t)v->dtype << 8 |
                              (uint64_t)v->ndims << 16 | (uint64_t)v->pstart << 24 |
                              (uint64_t)v->pcount << 32);
    h = mix64(h, v->offset);
    for (unsigned d = 0; d < v->ndims && d < ISA_MAX_DIMS; d++)
        h = mix64(h, (uint64_t)v->stride[d] ^ (uint64_t)v->count[d] << 40);
    return fmix64(h);
}

/* Equality of every field that means something (padding and unused dims excluded). */
static int view_same(const isa_view_t *a, const isa_view_t *b)
{
    if (a->space != b->space || a->dtype != b->dtype || a->ndims != b->ndims ||
        a->pstart != b->pstart || a->pcount != b->pcount || a->offset != b->offset)
        return 0;
    for (unsigned d = 0; d < a->ndims && d < ISA_MAX_DIMS; d++)
        if (a->stride[d] != b->stride[d] || a->count[d] != b->count[d])
            return 0;
    return 1;
}

static uint64_t args_hash(const isa_arg_t *a, uint32_t n)
{
    uint64_t h = n;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &a[i].v, sizeof bits);
        h = mix64(h, (uint64_t)a[i].present | (uint64_t)a[i].is_view << 8 |
                         (uint64_t)a[i].count << 16 | (uint64_t)a[i].index << 32);
        h = mix64(h, bits);
    }
    return fmix64(h);
}

static int args_same(const isa_arg_t *a, const isa_arg_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i].present != b[i].present || a[i].is_view != b[i].is_view ||
            a[i].count != b[i].count || a[i].index != b[i].index ||
            memcmp(&a[i].v, &b[i].v, sizeof a[i].v) != 0)
            return 0;
    return 1;
}

/* Make room for one more entry (load <= 1/2); rehash with `hash_of`. */
static int intern_reserve(intern_t *t, uint64_t (*hash_of)(void *ctx, uint32_t idx), void *ctx)
{
    if ((uint64_t)(t->n + 1) * 2 <= t->cap)
        return 0;
    uint32_t nc = t->cap ? t->cap * 2 : 1024;
    if (nc <= t->cap)
        return -1;
    uint64_t *slots = calloc(nc, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->slots[i]) {
            uint32_t h = (uint32_t)hash_of(ctx, (uint32_t)t->slots[i] - 1) & (nc - 1);
            while (slots[h])
                h = (h + 1) & (nc - 1);
            slots[h] = t->slots[i];
        }
    free(t->slots);
    t->slots = slots;
    t->cap = nc;
    return 0;
}

/*
 * The instructions of one (core, engine) stream, in a private mapping of their own that grows
 * by mremap (its pages move, nothing is copied). The program keeps all streams in one array,
 * in stream order, whose layout is known only at the end; finish() moves each stream's whole
 * pages into that array with mremap instead of copying them, which works where the stream's
 * first instruction sits at the same offset within a page in both places. So a stream starts
 * `head` bytes into its mapping: its offset in the final array modulo a page, as far as it is
 * known when its first instruction is emitted (exact when every stream before it in stream
 * order is complete by then, as with one `.engine` block per engine in engine order; any
 * other stream is copied, as all were before).
 */
typedef struct instr_vec {
    uint8_t *map; /* page-aligned; NULL before the stream's first instruction */
    size_t map_bytes;
    size_t ready;    /* bytes of map mapped in (populated) so far: cap counts only those */
    uint32_t head;   /* byte offset of instruction 0 in map */
    uint32_t n, cap; /* instructions, and room for them */
} instr_vec_t;

#define STREAM_FIRST_BYTES ((size_t)64 << 10)
/* A stream's mapping doubles, but its pages are mapped in this much at a time as the stream
 * fills: populating the whole new half at once mapped in, zeroed and freed a quarter more
 * memory than streams use, on average (a 36 MB stream had populated 64 MB). */
#define STREAM_POPULATE_BYTES ((size_t)2 << 20)

/* Structure of line i: for .loop the matching .endloop; for .if/.elif/.else the next
 * branch line; for .endif itself nothing; for .core the end of its block. */
typedef enum line_kind {
    LK_STMT, /* a declaration, another directive or an instruction */
    LK_LOOP,
    LK_ENDLOOP,
    LK_IF,
    LK_ELIF,
    LK_ELSE,
    LK_ENDIF,
    LK_CORE
} line_kind_t;

typedef struct line_info {
    uint32_t next;   /* see above */
    uint32_t endif;  /* for .if/.elif/.else: the .endif line */
    uint32_t head;   /* for .elif/.else: the .if line of the chain */
    uint32_t number; /* 1-based source line */
    uint32_t count;  /* tokens, the end-of-line token excluded */
    uint32_t cache;  /* first token in cache_toks, UINT32_MAX when not kept */
    uint32_t col;    /* column of the first token */
    uint32_t len;    /* bytes from the line start to the newline */
    uint64_t start;  /* byte offset of the line start in the text */
    uint8_t kind;    /* line_kind_t */
    uint16_t op;     /* instruction lines: the opcode, UINT16_MAX when unknown */
} line_info_t;

/*
 * Compiled loop bodies. A loop replays the kept tokens of its body at every iteration;
 * parsing them again each time (expressions by recursive descent, views by slicing a
 * tensor) cost most of the assembly. So the first execution of an expression at a kept
 * token compiles it into postfix code (ecode_t) that later executions evaluate without
 * parsing; a view operand remembers which of its expressions it evaluates, and the view
 * each list of their values produced (vmemo_t): a replayed view is a few evaluations and
 * one hash lookup. Anything unusual (an evaluation error, a name that no longer resolves,
 * a value never seen) falls back to the parser, which reports errors at their exact
 * column as before, so diagnostics do not change.
 */
/* Binary operators of compiled code, in one index so that an operation and the way it finds
 * its operands are one dispatch (ecode_t.op = form + operator). */
#define ECODE_BINOPS(X)                                                                         \
    X(OR) X(AND) X(EQ) X(NE) X(LT) X(GT) X(LE) X(GE) X(ADD) X(SUB) X(MUL) X(DIV) X(MOD)
enum {
#define X(n) EB_##n,
    ECODE_BINOPS(X)
#undef X
    EB_COUNT
};

typedef enum ecode_op {
    EC_HEAD,
    EC_CONST,
    EC_SYM,  /* a .let constant or loop variable: symbol index (symbols never move away) */
    EC_NAME, /* another name ('core'): resolved at each evaluation */
    EC_NEG,
    EC_NOT,
    EC_END,
    /* binary operations, EB_COUNT of each form: */
    EC_BIN = 8,                      /* the two top values */
    EC_BINC = EC_BIN + EB_COUNT,     /* the top OP a constant (EC_CONST + EC_BIN, fused) */
    EC_BINS = EC_BINC + EB_COUNT,    /* the top OP a symbol's value (EC_SYM + EC_BIN) */
    EC_SYMBINC = EC_BINS + EB_COUNT, /* push a symbol's value OP a constant (EC_SYM + EC_BINC) */
    EC_SYMBINS = EC_SYMBINC + EB_COUNT, /* push a symbol OP a symbol (EC_SYM + EC_BINS) */
    /* conditions: the top && (or ||) a symbol compared with a constant (EC_SYMBINC + EC_BIN),
     * one per comparison EB_EQ .. EB_GE (folded code only) */
    EC_ANDCMP = EC_SYMBINS + EB_COUNT,
    EC_ORCMP = EC_ANDCMP + EB_GE - EB_EQ + 1,
    EC_OPS = EC_ORCMP + EB_GE - EB_EQ + 1
} ecode_op_t;
_Static_assert(EC_OPS <= 256, "ecode_t.op is a byte");

typedef struct ecode {
    uint8_t op;   /* ecode_op_t (binary forms: form + EB_ operator) */
    uint32_t arg; /* EC_SYM, EC_SYMBINC, EC_BINS, EC_SYMBINS, EC_ANDCMP, EC_ORCMP: symbol;
                   * EC_NAME: kept token; EC_HEAD: tokens */
    int64_t v;    /* EC_CONST, EC_BINC, EC_SYMBINC, EC_ANDCMP, EC_ORCMP: the constant;
                   * EC_SYMBINS: the right symbol; EC_HEAD: see fold_code */
} ecode_t;

#define FAST_MAX_VALS 12  /* expressions a memoised view may depend on */
#define FAST_EVAL_STACK 32

typedef struct vform {
    uint32_t ntok;  /* tokens the view spans */
    uint32_t nexpr;
    uint32_t expr[FAST_MAX_VALS]; /* kept token index of each expression, in order */
    uint32_t hits, misses;        /* replays that found their values remembered, or not */
} vform_t;

typedef struct vmemo {
    uint64_t hash;
    uint32_t tok;   /* kept token index of the view */
    int32_t core;
    uint32_t view;  /* index in prog->views + 1; 0: empty slot */
    uint32_t vals;  /* first value in fast.vals */
} vmemo_t;
_Static_assert(offsetof(vmemo_t, hash) == 0, "table_reserve reads the hash first");

/*
 * Compiled loop bodies: instructions. An instruction line in a loop body produces, at each
 * iteration, an instruction that depends only on the values of its expressions (the
 * symbols it names do not change once the line has run, and it is keyed on the core and
 * engine), so the line's first successful parse records those inputs in order (itmpl_t):
 * the expressions (compiled as above) and the names read outside an expression (float
 * operands, raw-view partitions), each with its role: a KEY decides the operands, a SYNC
 * is a wait or post value, a COND the condition of a clause. The operand block(s) an
 * instruction produced are remembered per list of KEY and COND values (imemo_t): a
 * replay evaluates the inputs, looks the block up, fills in the wait and post values and
 * appends the instruction, without parsing, interning or checking again. A block is
 * remembered only after its instruction passed isa_check_instr, whose result depends on
 * nothing that changes (see isa_check_memo_t). Anything else (a value never seen, a failed
 * evaluation, another core, engine or symbol table) parses the line as before, so
 * diagnostics do not change.
 */
#define TM_MAX_ITEMS 24   /* inputs of one instruction line */
#define TM_MAX_CLAUSES 8  /* wait/post clauses written on one line (kept or not) */
#define TM_MAX_TRIES 64   /* templates built for one line before it is only parsed */

enum { IT_EXPR, IT_NAME };             /* titem_t.kind: a compiled expression, a name */
enum { ROLE_KEY, ROLE_SYNC, ROLE_COND }; /* titem_t.role */

typedef struct titem {
    uint32_t tok;  /* kept token index of the expression or name */
    uint8_t kind, role;
    uint32_t code; /* IT_EXPR in a template: the EC_HEAD of its compiled code */
} titem_t;

typedef struct tclause {
    uint8_t wait, sem, op;
    uint8_t val;   /* item of the value, or 0xff: the constant cval */
    uint8_t cond;  /* item of the condition, or 0xff: none */
    int32_t cval;
} tclause_t;

typedef struct itmpl {
    uint32_t syms;  /* symbols in the table when built (symbols are only ever added) */
    int32_t core;
    int16_t engine;
    uint16_t op;
    uint8_t shorthand; /* matmul D, STAT, MOV: an ldweights, then the matmul */
    uint8_t noslots;   /* the operation takes no operands (nop) */
    uint8_t nitems, nclauses, nkey;
    titem_t items[TM_MAX_ITEMS];
    tclause_t clauses[TM_MAX_CLAUSES];
    uint32_t hits, misses; /* replays that found their inputs remembered, or not */
    uint32_t tries;        /* templates built for the line so far */
} itmpl_t;

typedef struct imemo {
    uint64_t hash;
    uint32_t tmpl;  /* template index + 1; 0: empty slot */
    uint32_t vals;  /* first KEY value in fast.vals */
    uint32_t args, largs; /* operand blocks of the instruction and of the ldweights */
} imemo_t;
_Static_assert(offsetof(imemo_t, hash) == 0, "table_reserve reads the hash first");

/*
 * Compiled loop bodies: directive lines. A `.let`, `.if`/`.elif`/`.else` or `.loop` line in a
 * loop body runs at every iteration of the loops around it; after its first successful run
 * it is remembered as what it does (lform_t): the compiled code of its expressions and the
 * symbol it sets. Later runs evaluate that code without touching the line's tokens; a failed
 * evaluation (an error, a name out of scope) or a zero loop step runs the line as written,
 * which reports the error as before.
 */
enum { LF_UNSEEN, LF_LET, LF_COND, LF_ELSE, LF_LOOP };

typedef struct lform {
    uint8_t kind;     /* LF_ */
    uint32_t sym;     /* LF_LET: the symbol set; LF_LOOP: the loop variable */
    uint32_t code[3]; /* EC_HEAD of each expression in fast.code: LF_LET the value, LF_COND
                       * the condition, LF_LOOP start, end and step (UINT32_MAX: no step) */
} lform_t;

typedef struct fast {
    lform_t *lform;    /* per line (see "compiled loop bodies: directive lines") */
    uint32_t *expr_at; /* per kept token: 0 not seen, 1 not compiled, else code index + 2 */
    uint32_t *view_at; /* per kept token: 0 not seen, 1 not memoised, else vform index + 2 */
    ecode_t *code;
    uint32_t ncode, cap_code;
    vform_t *forms;
    uint32_t nforms, cap_forms;
    vmemo_t *memo;
    uint32_t nmemo, cap_memo; /* cap: power of two, or 0 */
    int64_t *vals;
    uint32_t nvals, cap_vals;
    /* expressions parsed while a view is parsed: their kept token and value */
    int recording;
    uint32_t nrec;
    uint32_t rec_tok[FAST_MAX_VALS];
    int64_t rec_val[FAST_MAX_VALS];
    int failed; /* out of memory in these tables: stop using them */
    /* instruction lines (see "compiled loop bodies: instructions") */
    uint32_t *tmpl_at; /* per line: 0 not seen, 1 not replayable, else template index + 2 */
    itmpl_t *tmpls;
    uint32_t ntmpls, cap_tmpls;
    imemo_t *imemo;
    uint32_t nimemo, cap_imemo; /* cap: power of two, or 0 */
    int lrec;                   /* recording the inputs of an instruction line */
    int lrec_bad;               /* ... that cannot be replayed */
    uint8_t role;               /* role of the expression being parsed (titem_t) */
    uint32_t nitems, nclauses;
    titem_t items[TM_MAX_ITEMS];
    int64_t item_val[TM_MAX_ITEMS];
    tclause_t clauses[TM_MAX_CLAUSES];
    uint32_t out_args, out_largs; /* operand blocks of the instruction(s) just emitted */
    int out_shorthand;
} fast_t;


typedef struct asm_state {
    const isa_asm_options_t *opt;
    isa_geometry_t geo;
    isa_diag_t *diag;
    const char *text;
    size_t len;
    /*
     * Lines with at least one token. Tokens are not kept for the whole text (30 M tokens
     * for a million-line program): the structure pass lexes the text in chunks and keeps
     * only the tokens of lines inside loops, which are replayed; execution re-lexes the
     * other lines, which run once per .core, through a window of consecutive lines.
     */
    line_info_t *info;
    uint32_t nlines, cap_lines;
    isa_tok_t *cache_toks;
    struct tok_sym *cache_sym; /* per kept token: the symbol it last resolved to */
    uint32_t ncache, cap_cache;
    isa_lexed_t win;     /* tokens of lines win_first .. win_first + win_n - 1 */
    uint32_t win_first, win_n;
    uint32_t lex_base;   /* line number offset of the chunk being lexed */
    isa_builder_t b;
    symtab_t syms;

    /* current statement */
    const isa_tok_t *t; /* tokens of the line */
    uint32_t pos, ntok;
    uint32_t lineno;
    uint32_t cur_line;   /* index of the current line in lx.lines */
    int line_failed;
    uint64_t failures;   /* statements that failed, reported or not */     /* an error was reported on this statement */
    uint8_t *line_reported; /* per source line: an error was already reported */
    uint32_t max_line;

    /* context */
    int32_t core;         /* current core, -1 before any .core */
    int in_core_block;
    int engine;           /* current .engine, -1 when none */
    int seen_core;        /* a .core directive has been seen */
    int seen_decl;        /* a declaration or instruction has been seen */
    int seen_chips;
    int loc_active;       /* .loc given: instructions record loc_line, not their text line */
    uint32_t loc_line;
    const char *source;   /* .source NAME: the source name the line map refers to */
    uint32_t source_len;
    uint32_t nsems_core[ISA_MAX_CORES]; /* semaphores allocated per core */
    uint32_t nsems_global;
    instr_vec_t *streams; /* ISA_MAX_CORES * ISA_ENGINE_COUNT */
    int oom;
    uint64_t emitted;     /* instructions emitted */
    uint32_t line_end;    /* the largest line of an emitted instruction, plus one */
    uint64_t steps;       /* statements executed, loop replays included */
    uint64_t max_steps;   /* ... at most (the option, or ASM_MAX_STEPS) */
    intern_t view_tab;    /* distinct views of prog->views */
    intern_t args_tab[ISA_MAX_SLOTS + 1]; /* distinct operand blocks, by length */
    int limit_hit;        /* an expansion limit was reported: stop */
    unsigned expr_depth;  /* nesting of the expression being parsed */
    unsigned in_expr;     /* inside parse_expr: its names are recorded with its value */
    unsigned loop_depth;  /* .loop bodies being executed */
    struct fast fast;     /* loop bodies compiled on first execution (see "compiled loop bodies") */
    uint32_t fold_epoch;  /* folded code is valid while this is the epoch it was folded at */
    isa_check_memo_t checked; /* instructions that passed isa_check_instr */
} asm_state_t;

/*
 * Limits that keep a small text from expanding without bound (a loop of 10^12 iterations,
 * nested loops, deeply nested parentheses): a compiler bug should end in a diagnostic, not
 * in an exhausted machine. They are far above any program the simulator can run in
 * reasonable time (each instruction costs about 300 bytes once assembled).
 */
#define ASM_MAX_INSTRS (1u << 24)   /* instructions in the whole program */
#define ASM_MAX_STEPS (1ull << 26)  /* statements executed, counting loop replays */
#define ASM_MAX_EXPR_DEPTH 200      /* nested parentheses and unary operators */
#define ASM_MAX_NESTING 64          /* nested .loop / .if blocks */

#define TOK(A) (&(A)->t[(A)->pos])

static void vreport(asm_state_t *A, uint32_t col, const char *fmt, va_list ap)
{
    A->line_failed = 1;
    A->failures++;
    if (A->lineno <= A->max_line && A->line_reported[A->lineno])
        return;
    if (A->lineno <= A->max_line)
        A->line_reported[A->lineno] = 1;
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    isa_diag_error(A->diag, A->opt->filename, A->lineno, col ? col : 1, "%s", msg);
}

/* Report an error at column col of the current line; returns -1 for convenience. */
static int __attribute__((format(printf, 3, 4))) err_at(asm_state_t *A, uint32_t col,
                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(A, col, fmt, ap);
    va_end(ap);
    return -1;
}

/* Report at the current token. */
static int __attribute__((format(printf, 2, 3))) err_here(asm_state_t *A, const char *fmt,
                                                           ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(A, TOK(A)->col, fmt, ap);
    va_end(ap);
    return -1;
}

static void lex_error(void *ctx, uint32_t line, uint32_t col, const char *msg)
{
    asm_state_t *A = ctx;
    uint32_t saved = A->lineno;
    A->lineno = A->lex_base + line;
    err_at(A, col, "%s", msg);
    A->lineno = saved;
}

static int tok_is(const isa_tok_t *t, int op)
{
    return t->kind == TK_PUNCT && t->op == op;
}

static int tok_ident(const isa_tok_t *t, const char *word)
{
    return t->kind == TK_IDENT && t->len == strlen(word) && memcmp(t->s, word, t->len) == 0;
}

static int dir_is(const isa_tok_t *t, const char *word)
{
    return t->kind == TK_DIRECTIVE && t->len == strlen(word) && memcmp(t->s, word, t->len) == 0;
}

#define ASM_LEX_CHUNK 256   /* lines lexed at once by the structure pass */
#define ASM_LEX_WINDOW 256  /* lines re-lexed at once by the execution pass */

static void lex_silent(void *ctx, uint32_t line, uint32_t col, const char *msg)
{
    /* re-lexing text that already lexed without error: nothing to report */
    (void)ctx, (void)line, (void)col, (void)msg;
}

/*
 * Tokens of line i, followed by its end-of-line token. The pointer stays valid until the
 * next call for a line that is neither kept nor in the current window.
 */
static const isa_tok_t *line_tok(asm_state_t *A, uint32_t i)
{
    const line_info_t *li = &A->info[i];
    if (li->cache != UINT32_MAX)
        return &A->cache_toks[li->cache];
    if (i < A->win_first || i - A->win_first >= A->win_n) {
        uint32_t last = A->nlines - i < ASM_LEX_WINDOW ? A->nlines : i + ASM_LEX_WINDOW;
        const line_info_t *lo = &A->info[i], *hi = &A->info[last - 1];
        isa_lexed_free(&A->win);
        A->win_n = 0;
        if (isa_lex(A->text + lo->start, (size_t)(hi->start + hi->len - lo->start), &A->win,
                    lex_silent, A) || A->win.nlines != last - i) {
            /* out of memory (or a lexer that disagrees with itself): stop cleanly */
            A->oom = 1;
            static const isa_tok_t end_tok = {TK_END, 0, 0, 1, 0, "", 0, 0.0};
            return &end_tok;
        }
        A->win_first = i;
        A->win_n = last - i;
    }
    return &A->win.toks[A->win.lines[i - A->win_first].first];
}

static int accept(asm_state_t *A, int op)
{
    if (tok_is(TOK(A), op)) {
        A->pos++;
        return 1;
    }
    return 0;
}

static const char *tok_desc(const isa_tok_t *t, char *buf, size_t n)
{
    if (t->kind == TK_END)
        snprintf(buf, n, "end of line");
    else if (t->kind == TK_DIRECTIVE)
        snprintf(buf, n, "'.%.*s'", (int)(t->len > 40 ? 40 : t->len), t->s);
    else
        snprintf(buf, n, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->s);
    return buf;
}

static int expect(asm_state_t *A, int op, const char *what)
{
    if (accept(A, op))
        return 0;
    char b[64];
    return err_here(A, "expected %s, found %s", what, tok_desc(TOK(A), b, sizeof b));
}

/* ---- expressions -------------------------------------------------------------------------------- */

static int parse_expr(asm_state_t *A, int64_t *out);

/* The symbol a name token means in namespace ns on the current core (a per-core one first,
 * then a global one), or NULL. */
static sym_t *resolve(asm_state_t *A, const isa_tok_t *t, int ns)
{
    tok_sym_t *c = NULL;
    uintptr_t at = (uintptr_t)t, base = (uintptr_t)A->cache_toks;
    if (base && at >= base && at < base + (uintptr_t)A->ncache * sizeof *t) {
        c = &A->cache_sym[(at - base) / sizeof *t];
        if (c->sym && c->ns == ns && (ns == NS_INT || c->core == A->core))
            return &A->syms.syms[c->sym - 1];
    }
    sym_t *y = NULL;
    if (ns != NS_INT && ns != NS_GROUP && A->core >= 0)
        y = sym_find(&A->syms, t->s, t->len, ns, A->core);
    if (!y)
        y = sym_find(&A->syms, t->s, t->len, ns, -1);
    if (y && c) {
        c->sym = (uint32_t)(y - A->syms.syms) + 1;
        c->ns = (uint8_t)ns;
        c->core = A->core;
    }
    return y;
}

/* A name read outside parse_expr (a float operand, a raw view's partition range): an input
 * of the instruction line being recorded. A view being memoised cannot depend on it. */
static void lookup_recorded(asm_state_t *A, const isa_tok_t *t, int64_t v)
{
    fast_t *F = &A->fast;
    if (A->in_expr)
        return;
    if (F->recording)
        F->nrec = FAST_MAX_VALS + 1; /* not memoised (view_arg) */
    if (!F->lrec)
        return;
    uintptr_t at = (uintptr_t)t, base = (uintptr_t)A->cache_toks;
    if (!base || at < base || at >= base + (uintptr_t)A->ncache * sizeof *t ||
        (at - base) % sizeof *t || F->nitems == TM_MAX_ITEMS) {
        F->lrec_bad = 1; /* a token made up by the parser (1xN), or too many inputs */
        return;
    }
    F->items[F->nitems] = (titem_t){(uint32_t)((at - base) / sizeof *t), IT_NAME, ROLE_KEY, 0};
    F->item_val[F->nitems++] = v;
}

static int lookup_int(asm_state_t *A, const isa_tok_t *t, int64_t *out)
{
    sym_t *y = resolve(A, t, NS_INT);
    if (y && y->hidden)
        y = NULL;
    if (!y) {
        if (tok_ident(t, "core") && A->core >= 0 && A->in_core_block) {
            *out = A->core;
            lookup_recorded(A, t, *out);
            return 0;
        }
        if (tok_ident(t, "core"))
            return err_at(A, t->col, "'core' is only defined inside a .core block");
        return err_at(A, t->col, "undefined name '%.*s'", (int)t->len, t->s);
    }
    *out = y->value;
    lookup_recorded(A, t, *out);
    return 0;
}

static int parse_primary_inner(asm_state_t *A, int64_t *out);
static int parse_binary(asm_state_t *A, int min_prec, int64_t *out);

/* Recursion guard around the recursive part of the grammar. */
static int parse_primary(asm_state_t *A, int64_t *out)
{
    if (A->expr_depth >= ASM_MAX_EXPR_DEPTH)
        return err_here(A, "expression nested too deeply (more than %d levels)",
                        ASM_MAX_EXPR_DEPTH);
    A->expr_depth++;
    int r = parse_primary_inner(A, out);
    A->expr_depth--;
    return r;
}

static int parse_primary_inner(asm_state_t *A, int64_t *out)
{
    const isa_tok_t *t = TOK(A);
    char b[64];
    if (t->kind == TK_INT) {
        A->pos++;
        *out = t->ival;
        return 0;
    }
    if (t->kind == TK_FLOAT)
        return err_here(A, "expected an integer, found floating-point %s",
                        tok_desc(t, b, sizeof b));
    if (t->kind == TK_IDENT) {
        A->pos++;
        return lookup_int(A, t, out);
    }
    if (accept(A, '(')) {
        if (parse_binary(A, 1, out))
            return -1;
        return expect(A, ')', "')'");
    }
    if (accept(A, '-')) {
        int64_t v;
        if (parse_primary(A, &v))
            return -1;
        if (v == INT64_MIN)
            return err_at(A, t->col, "integer overflow: -(%lld) does not fit in 64 bits",
                          (long long)v);
        *out = -v;
        return 0;
    }
    if (accept(A, '+'))
        return parse_primary(A, out);
    if (accept(A, '!')) {
        int64_t v;
        if (parse_primary(A, &v))
            return -1;
        *out = !v;
        return 0;
    }
    return err_here(A, "expected an expression, found %s", tok_desc(t, b, sizeof b));
}

static int binop_prec(const isa_tok_t *t)
{
    if (t->kind != TK_PUNCT)
        return -1;
    switch (t->op) {
    case OP_OR:
        return 1;
    case OP_AND:
        return 2;
    case OP_EQ:
    case OP_NE:
        return 3;
    case '<':
    case '>':
    case OP_LE:
    case OP_GE:
        return 4;
    case '+':
    case '-':
        return 5;
    case '*':
    case '/':
    case '%':
        return 6;
    default:
        return -1;
    }
}

static int parse_binary(asm_state_t *A, int min_prec, int64_t *out)
{
    int64_t lhs;
    if (parse_primary(A, &lhs))
        return -1;
    for (;;) {
        const isa_tok_t *t = TOK(A);
        int prec = binop_prec(t);
        if (prec < min_prec)
            break;
        A->pos++;
        int64_t rhs;
        if (parse_binary(A, prec + 1, &rhs))
            return -1;
        int64_t r = 0;
        switch (t->op) {
        case OP_OR: lhs = lhs || rhs; break;
        case OP_AND: lhs = lhs && rhs; break;
        case OP_EQ: lhs = lhs == rhs; break;
        case OP_NE: lhs = lhs != rhs; break;
        case '<': lhs = lhs < rhs; break;
        case '>': lhs = lhs > rhs; break;
        case OP_LE: lhs = lhs <= rhs; break;
        case OP_GE: lhs = lhs >= rhs; break;
        /* C semantics on int64, where overflow is undefined: report it instead */
        case '+':
        case '-':
        case '*':
            if (t->op == '+' ? __builtin_add_overflow(lhs, rhs, &r)
                : t->op == '-' ? __builtin_sub_overflow(lhs, rhs, &r)
                               : __builtin_mul_overflow(lhs, rhs, &r))
                return err_at(A, t->col, "integer overflow: %lld %c %lld does not fit in 64 "
                                         "bits", (long long)lhs, (char)t->op, (long long)rhs);
            lhs = r;
            break;
        case '/':
        case '%':
            if (rhs == 0)
                return err_at(A, t->col, "division by zero");
            if (lhs == INT64_MIN && rhs == -1)
                return err_at(A, t->col, "integer overflow: %lld %c -1 does not fit in 64 bits",
                              (long long)lhs, (char)t->op);
            lhs = t->op == '/' ? lhs / rhs : lhs % rhs;
            break;
        }
    }
    *out = lhs;
    return 0;
}

/* ---- compiled loop bodies: expressions ---------------------------------------------------------- */

/* Index of the current token among the kept (replayed) tokens, or UINT32_MAX when the
 * current line was not kept or the tables are not in use. */
static uint32_t kept_index(asm_state_t *A)
{
    if (A->fast.failed || A->info[A->cur_line].cache == UINT32_MAX || A->t != &A->cache_toks[A->info[A->cur_line].cache])
        return UINT32_MAX;
    if (!A->fast.expr_at) {
        A->fast.expr_at = calloc(A->ncache ? A->ncache : 1, sizeof *A->fast.expr_at);
        A->fast.view_at = calloc(A->ncache ? A->ncache : 1, sizeof *A->fast.view_at);
        if (!A->fast.expr_at || !A->fast.view_at) {
            A->fast.failed = 1;
            return UINT32_MAX;
        }
    }
    return A->info[A->cur_line].cache + A->pos;
}

/* The EC_HEAD index of the compiled expression at kept token k, or UINT32_MAX. */
static uint32_t code_at(const fast_t *F, uint32_t k)
{
    uint32_t e = k != UINT32_MAX && F->expr_at ? F->expr_at[k] : 0;
    return e >= 2 ? e - 2 : UINT32_MAX;
}

/* Remember what kept line li does after a successful run (see lform_t); a no-op when the
 * line is not kept or one of its expressions did not compile. */
static void lform_record(asm_state_t *A, uint32_t li, uint8_t kind, uint32_t sym,
                         const uint32_t code[3])
{
    fast_t *F = &A->fast;
    if (F->failed || A->info[li].cache == UINT32_MAX)
        return;
    unsigned n = kind == LF_LET || kind == LF_COND ? 1 : kind == LF_LOOP ? 3 : 0;
    for (unsigned k = 0; k < n; k++)
        if (code[k] == UINT32_MAX && !(kind == LF_LOOP && k == 2))
            return;
    if (!F->lform && !(F->lform = calloc(A->nlines, sizeof *F->lform))) {
        F->failed = 1;
        return;
    }
    lform_t *f = &F->lform[li];
    f->kind = kind;
    f->sym = sym;
    for (unsigned k = 0; k < 3; k++)
        f->code[k] = k < n ? code[k] : UINT32_MAX;
}

/*
 * Room for one more entry in an open-addressed table (linear probing, at most half full) of
 * `size`-byte entries that start with their uint64_t hash and are empty when the uint32_t at
 * `used_off` is 0: doubles it and re-inserts when needed. -1 when out of memory.
 */
static int table_reserve(void **tab, uint32_t *cap, uint32_t n, size_t size, size_t used_off)
{
    if ((uint64_t)(n + 1) * 2 <= *cap)
        return 0;
    uint32_t nc = *cap ? *cap * 2 : 1024;
    unsigned char *m = nc < (1u << 30) ? calloc(nc, size) : NULL;
    if (!m)
        return -1;
    const unsigned char *old = *tab;
    for (uint32_t i = 0; i < *cap; i++) {
        const unsigned char *e = old + (size_t)i * size;
        uint32_t used;
        uint64_t hash;
        memcpy(&used, e + used_off, sizeof used);
        if (!used)
            continue;
        memcpy(&hash, e, sizeof hash);
        uint32_t j = (uint32_t)hash & (nc - 1);
        for (;;) {
            memcpy(&used, m + (size_t)j * size + used_off, sizeof used);
            if (!used)
                break;
            j = (j + 1) & (nc - 1);
        }
        memcpy(m + (size_t)j * size, e, size);
    }
    free(*tab);
    *tab = m;
    *cap = nc;
    return 0;
}

static int fast_grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? (uint64_t)*cap * 2 : 256;
    while (nc < need)
        nc *= 2;
    if (nc > UINT32_MAX / 2)
        return -1;
    void *q = realloc(*p, (size_t)nc * size);
    if (!q)
        return -1;
    *p = q;
    *cap = (uint32_t)nc;
    return 0;
}

static int emit_code(asm_state_t *A, uint8_t op, uint32_t arg, int64_t v)
{
    fast_t *F = &A->fast;
    if (fast_grow((void **)&F->code, &F->cap_code, F->ncode + 1, sizeof *F->code))
        return -1;
    F->code[F->ncode++] = (ecode_t){op, arg, v};
    return 0;
}

/* The EB_ index of a binary operator token (binop_prec accepted it). */
static int binop_index(int op)
{
    switch (op) {
    case OP_OR: return EB_OR;
    case OP_AND: return EB_AND;
    case OP_EQ: return EB_EQ;
    case OP_NE: return EB_NE;
    case '<': return EB_LT;
    case '>': return EB_GT;
    case OP_LE: return EB_LE;
    case OP_GE: return EB_GE;
    case '+': return EB_ADD;
    case '-': return EB_SUB;
    case '*': return EB_MUL;
    case '/': return EB_DIV;
    default: return EB_MOD;
    }
}

/* Compile the tokens from kept index *k (an expression that just parsed without error)
 * into postfix code; mirrors parse_binary / parse_primary_inner. *depth tracks the
 * evaluation stack. Returns -1 for anything it does not handle. */
static int compile_binary(asm_state_t *A, uint32_t *k, int min_prec, unsigned *depth,
                          unsigned *maxdepth);

static int compile_primary(asm_state_t *A, uint32_t *k, unsigned *depth, unsigned *maxdepth)
{
    const isa_tok_t *t = &A->cache_toks[*k];
    if (t->kind == TK_INT || t->kind == TK_IDENT) {
        if (++*depth > *maxdepth)
            *maxdepth = *depth;
        (*k)++;
        if (t->kind == TK_INT)
            return emit_code(A, EC_CONST, 0, t->ival);
        sym_t *y = resolve(A, t, NS_INT);
        if (y && !y->hidden)
            return emit_code(A, EC_SYM, (uint32_t)(y - A->syms.syms), 0);
        return emit_code(A, EC_NAME, *k - 1, 0);
    }
    if (tok_is(t, '(')) {
        (*k)++;
        if (compile_binary(A, k, 1, depth, maxdepth) || !tok_is(&A->cache_toks[*k], ')'))
            return -1;
        (*k)++;
        return 0;
    }
    if (tok_is(t, '-') || tok_is(t, '+') || tok_is(t, '!')) {
        (*k)++;
        if (compile_primary(A, k, depth, maxdepth))
            return -1;
        return tok_is(t, '+') ? 0 : emit_code(A, tok_is(t, '-') ? EC_NEG : EC_NOT, 0, 0);
    }
    return -1;
}

static int compile_binary(asm_state_t *A, uint32_t *k, int min_prec, unsigned *depth,
                          unsigned *maxdepth)
{
    if (compile_primary(A, k, depth, maxdepth))
        return -1;
    for (;;) {
        const isa_tok_t *t = &A->cache_toks[*k];
        int prec = binop_prec(t);
        if (prec < min_prec)
            return 0;
        (*k)++;
        if (compile_binary(A, k, prec + 1, depth, maxdepth) ||
            emit_code(A, (uint8_t)(EC_BIN + binop_index(t->op)), 0, 0))
            return -1;
        (*depth)--;
    }
}

/* Compile the expression at kept index k spanning ntok tokens; records the outcome. */
static void compile_expr(asm_state_t *A, uint32_t k, uint32_t ntok)
{
    fast_t *F = &A->fast;
    uint32_t first = F->ncode, at = k;
    unsigned depth = 0, maxdepth = 0;
    if (emit_code(A, EC_HEAD, ntok, 0) || compile_binary(A, &at, 1, &depth, &maxdepth) ||
        at != k + ntok || maxdepth > FAST_EVAL_STACK || emit_code(A, EC_END, 0, 0) ||
        first >= UINT32_MAX - 2) {
        F->ncode = first;
        F->expr_at[k] = 1;
        return;
    }
    /* fuse the common shapes (i % 4, (i % 8) * 128, j + 1, j % RB, k == KT - 1) into fewer
     * steps: an operand that is a constant or a symbol is read by the operation itself */
    uint32_t w = first + 1;
    for (uint32_t r = first + 1; r < F->ncode; r++) {
        ecode_t c = F->code[r];
        /* the step after r (none after the final EC_END, which is copied as it is) */
        uint8_t nx = r + 1 < F->ncode ? F->code[r + 1].op : (uint8_t)EC_END;
        if (c.op == EC_CONST && nx >= EC_BIN && nx < EC_BINC) {
            c = (ecode_t){(uint8_t)(nx - EC_BIN + EC_BINC), 0, c.v};
            r++;
        } else if (c.op == EC_SYM && nx >= EC_BIN && nx < EC_BINC) {
            c = (ecode_t){(uint8_t)(nx - EC_BIN + EC_BINS), c.arg, 0};
            r++;
        }
        if (w > first + 1 && F->code[w - 1].op == EC_SYM) {
            uint32_t lhs = F->code[w - 1].arg;
            if (c.op >= EC_BINC && c.op < EC_BINS) {
                c = (ecode_t){(uint8_t)(c.op - EC_BINC + EC_SYMBINC), lhs, c.v};
                w--;
            } else if (c.op >= EC_BINS && c.op < EC_SYMBINC) {
                c = (ecode_t){(uint8_t)(c.op - EC_BINS + EC_SYMBINS), lhs, (int64_t)c.arg};
                w--;
            }
        }
        F->code[w++] = c;
    }
    F->ncode = w;
    F->expr_at[k] = first + 2;
}

/*
 * Evaluate compiled code (from its EC_HEAD); -1 on any error (the caller then parses,
 * which reports it). One switch over (form, operator): each case reads its operands and
 * computes as parse_binary does (C semantics on int64; overflow, division by zero and
 * INT64_MIN / -1 are errors, and both sides of && and || are evaluated).
 */
#define EV_OR(a, b, r) r = (a) || (b)
#define EV_AND(a, b, r) r = (a) && (b)
#define EV_EQ(a, b, r) r = (a) == (b)
#define EV_NE(a, b, r) r = (a) != (b)
#define EV_LT(a, b, r) r = (a) < (b)
#define EV_GT(a, b, r) r = (a) > (b)
#define EV_LE(a, b, r) r = (a) <= (b)
#define EV_GE(a, b, r) r = (a) >= (b)
#define EV_ADD(a, b, r) if (__builtin_add_overflow(a, b, &r)) return -1
#define EV_SUB(a, b, r) if (__builtin_sub_overflow(a, b, &r)) return -1
#define EV_MUL(a, b, r) if (__builtin_mul_overflow(a, b, &r)) return -1
#define EV_DIV(a, b, r)                                                                        \
    if ((b) == 0 || ((a) == INT64_MIN && (b) == -1))                                           \
        return -1;                                                                             \
    r = (a) / (b)
#define EV_MOD(a, b, r)                                                                        \
    if ((b) == 0 || ((a) == INT64_MIN && (b) == -1))                                           \
        return -1;                                                                             \
    r = (a) % (b)
/* the value of symbol index I, or fail when it is out of scope */
#define EV_SYMVAL(I, out)                                                                      \
    do {                                                                                       \
        const sym_t *y_ = &syms[I];                                                            \
        if (y_->hidden)                                                                        \
            return -1;                                                                         \
        out = y_->value;                                                                       \
    } while (0)
/* The value on top of the stack is kept in `acc` (a register) and st[0 .. sp) holds the
 * values below it: an operation on the top reads and writes acc, a push spills it. */
#define EV_PUSH(x)                                                                                 \
    do {                                                                                           \
        st[sp++] = acc;                                                                            \
        acc = (x);                                                                                 \
    } while (0)
#define EV_CASES(n)                                                                                \
    case EC_BIN + EB_##n: {                                                                        \
        int64_t a = st[--sp], b = acc, r;                                                          \
        EV_##n(a, b, r);                                                                           \
        acc = r;                                                                                   \
        break;                                                                                     \
    }                                                                                              \
    case EC_BINC + EB_##n: {                                                                       \
        int64_t a = acc, b = c->v, r;                                                              \
        EV_##n(a, b, r);                                                                           \
        acc = r;                                                                                   \
        break;                                                                                     \
    }                                                                                              \
    case EC_BINS + EB_##n: {                                                                       \
        int64_t a = acc, b, r;                                                                     \
        EV_SYMVAL(c->arg, b);                                                                      \
        EV_##n(a, b, r);                                                                           \
        acc = r;                                                                                   \
        break;                                                                                     \
    }                                                                                              \
    case EC_SYMBINC + EB_##n: {                                                                    \
        int64_t a, b = c->v, r;                                                                    \
        EV_SYMVAL(c->arg, a);                                                                      \
        EV_##n(a, b, r);                                                                           \
        EV_PUSH(r);                                                                                \
        break;                                                                                     \
    }                                                                                              \
    case EC_SYMBINS + EB_##n: {                                                                    \
        int64_t a, b, r;                                                                           \
        EV_SYMVAL(c->arg, a);                                                                      \
        EV_SYMVAL((uint32_t)c->v, b);                                                              \
        EV_##n(a, b, r);                                                                           \
        EV_PUSH(r);                                                                                \
        break;                                                                                     \
    }

#define EV_CMP_CASES(n)                                                                            \
    case EC_ANDCMP + EB_##n - EB_EQ: {                                                             \
        int64_t a, r;                                                                              \
        EV_SYMVAL(c->arg, a);                                                                      \
        EV_##n(a, c->v, r);                                                                        \
        acc = acc && r;                                                                            \
        break;                                                                                     \
    }                                                                                              \
    case EC_ORCMP + EB_##n - EB_EQ: {                                                              \
        int64_t a, r;                                                                              \
        EV_SYMVAL(c->arg, a);                                                                      \
        EV_##n(a, c->v, r);                                                                        \
        acc = acc || r;                                                                            \
        break;                                                                                     \
    }

static __attribute__((noinline)) int eval_code(asm_state_t *A, const ecode_t *c,
                                               int64_t *out)
{
    int64_t st[FAST_EVAL_STACK];
    int64_t acc = 0;
    unsigned sp = 0;
    const sym_t *syms = A->syms.syms; /* evaluating adds no symbol */
    for (c++; c->op != EC_END; c++) {
        switch (c->op) {
#define X(n) EV_CASES(n)
            ECODE_BINOPS(X)
#undef X
            EV_CMP_CASES(EQ)
            EV_CMP_CASES(NE)
            EV_CMP_CASES(LT)
            EV_CMP_CASES(GT)
            EV_CMP_CASES(LE)
            EV_CMP_CASES(GE)
        case EC_CONST:
            EV_PUSH(c->v);
            break;
        case EC_SYM: {
            int64_t v;
            EV_SYMVAL(c->arg, v);
            EV_PUSH(v);
            break;
        }
        case EC_NAME: {
            const isa_tok_t *t = &A->cache_toks[c->arg];
            sym_t *y = resolve(A, t, NS_INT);
            if (y && !y->hidden)
                EV_PUSH(y->value);
            else if (tok_ident(t, "core") && A->core >= 0 && A->in_core_block)
                EV_PUSH(A->core);
            else
                return -1;
            break;
        }
        case EC_NEG:
            if (acc == INT64_MIN)
                return -1;
            acc = -acc;
            break;
        case EC_NOT:
            acc = !acc;
            break;
        default:
            return -1; /* cannot happen */
        }
    }
    *out = acc;
    return 0;
}

/* a OP b for an EB_ operator, as eval_code computes it; -1 where that fails */
static int eval_binop(int op, int64_t a, int64_t b, int64_t *out)
{
    int64_t r = 0;
    switch (op) {
#define X(n)                                                                                   \
    case EB_##n: {                                                                             \
        EV_##n(a, b, r);                                                                       \
        break;                                                                                 \
    }
        ECODE_BINOPS(X)
#undef X
    default:
        return -1;
    }
    *out = r;
    return 0;
}

/*
 * Constant folding. Most names in a loop body do not change while it runs: sizes and other
 * .let constants set outside any loop (K, TBN, KT - 1 in `k == KT - 1`). A compiled
 * expression is evaluated through a folded copy in which every symbol that no loop and no
 * .let inside a loop body sets (sym_t.varying) is replaced by its value, and constant
 * operations are computed; an operation that would fail (division by zero, overflow) is
 * kept, so evaluating the copy fails where the original does and the line is parsed for the
 * message. The copy is valid for one fold epoch: writing or hiding a symbol that some copy
 * read as a constant (sym_t.folded) starts a new epoch, and each copy is rebuilt, in place,
 * the next time it runs.
 */
static void fold_bump(asm_state_t *A)
{
    if (A->fold_epoch < UINT32_MAX)
        A->fold_epoch++; /* UINT32_MAX: folding is off (evaluate the original code) */
}

static inline void sym_write(asm_state_t *A, sym_t *y, int64_t v)
{
    if (y->folded) {
        y->folded = 0;
        fold_bump(A);
    }
    y->value = v;
    y->hidden = 0;
}

static inline void sym_hide(asm_state_t *A, sym_t *y)
{
    if (y->folded) {
        y->folded = 0;
        fold_bump(A);
    }
    y->hidden = 1;
}

/* Append c to the folded code code[base .. *w), merged with the operations before it. */
static void fold_push(ecode_t *code, uint32_t base, uint32_t *w, ecode_t c)
{
    while (*w > base) {
        const ecode_t *last = &code[*w - 1];
        if (c.op >= EC_BIN && c.op < EC_BINC && (last->op == EC_CONST || last->op == EC_SYM)) {
            /* the right operand is a constant or a symbol: read it in the operation */
            c = last->op == EC_CONST ? (ecode_t){(uint8_t)(c.op - EC_BIN + EC_BINC), 0, last->v}
                                     : (ecode_t){(uint8_t)(c.op - EC_BIN + EC_BINS), last->arg, 0};
        } else if (c.op >= EC_BINC && c.op < EC_BINS && last->op == EC_CONST) {
            int64_t r;
            if (eval_binop(c.op - EC_BINC, last->v, c.v, &r))
                break; /* fails when evaluated, as the original */
            c = (ecode_t){EC_CONST, 0, r};
        } else if (c.op >= EC_BINC && c.op < EC_BINS && last->op == EC_SYM) {
            c = (ecode_t){(uint8_t)(c.op - EC_BINC + EC_SYMBINC), last->arg, c.v};
        } else if (c.op >= EC_BINS && c.op < EC_SYMBINC && last->op == EC_SYM) {
            c = (ecode_t){(uint8_t)(c.op - EC_BINS + EC_SYMBINS), last->arg, (int64_t)c.arg};
        } else if ((c.op == EC_BIN + EB_AND || c.op == EC_BIN + EB_OR) &&
                   last->op >= EC_SYMBINC + EB_EQ && last->op <= EC_SYMBINC + EB_GE) {
            c = (ecode_t){(uint8_t)((c.op == EC_BIN + EB_AND ? EC_ANDCMP : EC_ORCMP) +
                                    last->op - (EC_SYMBINC + EB_EQ)),
                          last->arg, last->v};
        } else if (c.op == EC_NOT && last->op == EC_CONST) {
            c = (ecode_t){EC_CONST, 0, !last->v};
        } else if (c.op == EC_NEG && last->op == EC_CONST && last->v != INT64_MIN) {
            c = (ecode_t){EC_CONST, 0, -last->v};
        } else {
            break;
        }
        (*w)--;
    }
    code[(*w)++] = c;
}

/*
 * Fold the code whose EC_HEAD is at e for the current epoch, in place: the original
 * operations are saved aside the first time (the head's v: epoch << 32 | saved index + 1),
 * and are what is put back when the folded code would be longer or folding is off.
 */
static __attribute__((noinline)) void fold_code(asm_state_t *A, uint32_t e)
{
    fast_t *F = &A->fast;
    uint32_t saved = (uint32_t)F->code[e].v;
    const ecode_t *ops = saved ? &F->code[saved - 1] : &F->code[e + 1];
    uint32_t n = 0; /* operations before EC_END in the original */
    while (ops[n].op != EC_END)
        n++;
    /* room for the original (once) and for a scratch copy of the worst case: each operation
     * splits in two */
    uint64_t need = (uint64_t)F->ncode + (saved ? 0 : n + 1) + 2 * (uint64_t)n + 1;
    if (need >= UINT32_MAX - 2 ||
        fast_grow((void **)&F->code, &F->cap_code, (uint32_t)need, sizeof *F->code)) {
        A->fold_epoch = UINT32_MAX; /* out of memory: stop folding */
        if (!saved)
            goto stamp; /* the original is in place */
    }
    ecode_t *code = F->code; /* no reallocation below */
    if (!saved) {
        memcpy(&code[F->ncode], &code[e + 1], (n + 1) * sizeof *code);
        saved = F->ncode + 1;
        F->ncode += n + 1;
    }
    const ecode_t *orig = &code[saved - 1];
    uint32_t w = 0;
    if (A->fold_epoch != UINT32_MAX) {
        ecode_t *out = &code[F->ncode]; /* scratch, past the end */
        sym_t *syms = A->syms.syms;
        for (uint32_t r = 0; r < n; r++) {
            ecode_t c = orig[r];
            sym_t *y = c.op == EC_SYM || (c.op >= EC_BINS && c.op < EC_ANDCMP) ? &syms[c.arg]
                                                                               : NULL;
            int fy = y && !y->varying && !y->hidden;
            if (c.op == EC_SYM && fy) {
                fold_push(out, 0, &w, (ecode_t){EC_CONST, 0, y->value});
            } else if (c.op >= EC_BINS && c.op < EC_SYMBINC && fy) {
                fold_push(out, 0, &w,
                          (ecode_t){(uint8_t)(c.op - EC_BINS + EC_BINC), 0, y->value});
            } else if (c.op >= EC_SYMBINC && c.op < EC_SYMBINS && fy) {
                fold_push(out, 0, &w, (ecode_t){EC_CONST, 0, y->value});
                fold_push(out, 0, &w,
                          (ecode_t){(uint8_t)(c.op - EC_SYMBINC + EC_BINC), 0, c.v});
            } else if (c.op >= EC_SYMBINS && c.op < EC_ANDCMP) {
                sym_t *z = &syms[(uint32_t)c.v];
                int fz = !z->varying && !z->hidden;
                fold_push(out, 0, &w, fy ? (ecode_t){EC_CONST, 0, y->value}
                                         : (ecode_t){EC_SYM, c.arg, 0});
                fold_push(out, 0, &w,
                          fz ? (ecode_t){(uint8_t)(c.op - EC_SYMBINS + EC_BINC), 0, z->value}
                             : (ecode_t){(uint8_t)(c.op - EC_SYMBINS + EC_BINS),
                                         (uint32_t)c.v, 0});
                if (fz)
                    z->folded = 1;
            } else {
                fold_push(out, 0, &w, c);
                fy = 0;
            }
            if (fy)
                y->folded = 1;
        }
    }
    if (A->fold_epoch != UINT32_MAX && w <= n) {
        memcpy(&code[e + 1], &code[F->ncode], w * sizeof *code);
        code[e + 1 + w] = (ecode_t){EC_END, 0, 0};
    } else {
        memcpy(&code[e + 1], orig, (n + 1) * sizeof *code);
    }
stamp:
    F->code[e].v = (int64_t)((uint64_t)A->fold_epoch << 32 | saved);
}

/* Evaluate the compiled expression whose EC_HEAD is at e, folded for the current epoch. */
static inline __attribute__((always_inline)) int eval_at(asm_state_t *A, uint32_t e,
                                                        int64_t *out)
{
    if ((uint32_t)((uint64_t)A->fast.code[e].v >> 32) != A->fold_epoch)
        fold_code(A, e);
    const ecode_t *c = &A->fast.code[e];
    if (c[2].op == EC_END) {
        /* one operation (most expressions once folded): no evaluation loop */
        const sym_t *y = c[1].op == EC_CONST ? NULL : &A->syms.syms[c[1].arg];
        switch (c[1].op) {
        case EC_CONST:
            *out = c[1].v;
            return 0;
        case EC_SYM:
            if (y->hidden)
                return -1;
            *out = y->value;
            return 0;
        case EC_SYMBINC + EB_ADD:
            return y->hidden || __builtin_add_overflow(y->value, c[1].v, out) ? -1 : 0;
        case EC_SYMBINC + EB_MUL:
            return y->hidden || __builtin_mul_overflow(y->value, c[1].v, out) ? -1 : 0;
        case EC_SYMBINC + EB_EQ:
            if (y->hidden)
                return -1;
            *out = y->value == c[1].v;
            return 0;
        case EC_SYMBINC + EB_MOD: {
            int64_t a = y->value, d = c[1].v;
            if (y->hidden || d <= 0)
                break; /* the general path */
            if (d & (d - 1)) {
                *out = a % d;
            } else {
                /* a power of two (i % 4): C's remainder without a division */
                int64_t r = a & (d - 1);
                *out = a < 0 && r ? r - d : r;
            }
            return 0;
        }
        default:
            break;
        }
    }
    return eval_code(A, c, out);
}

static int parse_expr(asm_state_t *A, int64_t *out)
{
    uint32_t k = kept_index(A);
    if (k == UINT32_MAX) {
        A->in_expr++;
        int r = parse_binary(A, 1, out);
        A->in_expr--;
        return r;
    }
    fast_t *F = &A->fast;
    uint32_t e = F->expr_at[k];
    int r = -1;
    if (e >= 2) {
        r = eval_at(A, e - 2, out);
        if (r == 0)
            A->pos += F->code[e - 2].arg;
    }
    if (r) {
        uint32_t p0 = A->pos;
        A->in_expr++;
        r = parse_binary(A, 1, out);
        A->in_expr--;
        if (r)
            return -1;
        if (e == 0)
            compile_expr(A, k, A->pos - p0);
    }
    if (F->lrec) {
        if (F->nitems == TM_MAX_ITEMS) {
            F->lrec_bad = 1;
        } else {
            F->items[F->nitems] = (titem_t){k, IT_EXPR, F->role, 0};
            F->item_val[F->nitems++] = *out;
        }
    }
    if (F->recording) {
        if (F->nrec < FAST_MAX_VALS) {
            F->rec_tok[F->nrec] = k;
            F->rec_val[F->nrec] = *out;
        }
        F->nrec++;
    }
    return 0;
}

/* Floating-point expressions (scalars, fill values): + - * / and parentheses over float and
 * integer literals, .let constants, inf and nan, evaluated in double. */
static int parse_fexpr(asm_state_t *A, double *out);

static int parse_fprimary_inner(asm_state_t *A, double *out);

static int parse_fprimary(asm_state_t *A, double *out)
{
    if (A->expr_depth >= ASM_MAX_EXPR_DEPTH)
        return err_here(A, "expression nested too deeply (more than %d levels)",
                        ASM_MAX_EXPR_DEPTH);
    A->expr_depth++;
    int r = parse_fprimary_inner(A, out);
    A->expr_depth--;
    return r;
}

static int parse_fprimary_inner(asm_state_t *A, double *out)
{
    const isa_tok_t *t = TOK(A);
    char b[64];
    if (t->kind == TK_INT) {
        A->pos++;
        *out = (double)t->ival;
        return 0;
    }
    if (t->kind == TK_FLOAT) {
        A->pos++;
        *out = t->fval;
        return 0;
    }
    if (t->kind == TK_IDENT) {
        A->pos++;
        if (tok_ident(t, "inf")) {
            *out = INFINITY;
            return 0;
        }
        if (tok_ident(t, "nan")) {
            *out = NAN;
            return 0;
        }
        int64_t v;
        if (lookup_int(A, t, &v))
            return -1;
        *out = (double)v;
        return 0;
    }
    if (accept(A, '(')) {
        if (parse_fexpr(A, out))
            return -1;
        return expect(A, ')', "')'");
    }
    if (accept(A, '-')) {
        if (parse_fprimary(A, out))
            return -1;
        *out = -*out;
        return 0;
    }
    if (accept(A, '+'))
        return parse_fprimary(A, out);
    return err_here(A, "expected a number, found %s", tok_desc(t, b, sizeof b));
}

static int parse_fterm(asm_state_t *A, double *out)
{
    if (parse_fprimary(A, out))
        return -1;
    for (;;) {
        if (accept(A, '*')) {
            double r;
            if (parse_fprimary(A, &r))
                return -1;
            *out *= r;
        } else if (accept(A, '/')) {
            double r;
            if (parse_fprimary(A, &r))
                return -1;
            *out /= r;
        } else
            return 0;
    }
}

static int parse_fexpr(asm_state_t *A, double *out)
{
    if (parse_fterm(A, out))
        return -1;
    for (;;) {
        if (accept(A, '+')) {
            double r;
            if (parse_fterm(A, &r))
                return -1;
            *out += r;
        } else if (accept(A, '-')) {
            double r;
            if (parse_fterm(A, &r))
                return -1;
            *out -= r;
        } else
            return 0;
    }
}

/* Name lists for diagnostics, from the tables of isa.h ("one of fp32 fp16 ..."). */
#define XX(id, name, bytes, isf, iss) " " name
static const char dtype_list[] = "one of" ISA_DTYPE_MAP(XX);
#undef XX
#define XX(id, name, red) " " name
static const char alu_list[] = "one of" ISA_ALU_MAP(XX);
#undef XX
#define XX(id, name) " " name
static const char func_list[] = "one of" ISA_FUNC_MAP(XX);
static const char cmp_list[] = "one of" ISA_CMP_MAP(XX);
static const char engine_list[] = "one of" ISA_ENGINE_MAP(XX);
#undef XX

/* ---- tensors and views ---------------------------------------------------------------------------- */

static isa_tensor_t *find_tensor(asm_state_t *A, const isa_tok_t *t)
{
    sym_t *y = resolve(A, t, NS_TENSOR);
    return y ? &A->b.prog->tensors[y->value] : NULL;
}

/* For "undefined" diagnostics: the first core that has a per-core symbol of that name, or
 * -1. A name declared inside another core's .core block is a common slip in SPMD code. */
static int32_t core_owning(asm_state_t *A, const isa_tok_t *t, int ns)
{
    for (uint32_t c = 0; c < A->b.prog->ncores; c++)
        if ((int32_t)c != A->core && sym_find(&A->syms, t->s, t->len, ns, (int32_t)c))
            return (int32_t)c;
    return -1;
}

static int undefined_tensor(asm_state_t *A, const isa_tok_t *t)
{
    int32_t c = core_owning(A, t, NS_TENSOR);
    if (c >= 0)
        return err_at(A, t->col, "undefined tensor '%.*s' on core %d (one is declared on core "
                                 "%d)", (int)t->len, t->s, A->core < 0 ? 0 : A->core, c);
    return err_at(A, t->col, "undefined tensor '%.*s'", (int)t->len, t->s);
}

static int is_raw_space(const isa_tok_t *t, const isa_tok_t *next)
{
    return tok_is(next, ':') && (tok_ident(t, "sb") || tok_ident(t, "ps") || tok_ident(t, "hbm"));
}

/* Does the current token start a view (a declared tensor name or a raw view)? */
static int at_view(asm_state_t *A)
{
    const isa_tok_t *t = TOK(A);
    if (t->kind != TK_IDENT)
        return 0;
    if (is_raw_space(t, t + 1) || (tok_ident(t, "broadcast") && tok_is(t + 1, '(')))
        return 1;
    return find_tensor(A, t) != NULL;
}

/* One slice of a named view: i, a:b, a:b:s, : ... */
typedef struct slice {
    int has_start, has_stop, is_index;
    int64_t start, stop, step;
    uint32_t col;
} slice_t;

static int parse_slice(asm_state_t *A, slice_t *s)
{
    memset(s, 0, sizeof *s);
    s->step = 1;
    s->col = TOK(A)->col;
    if (!tok_is(TOK(A), ':')) {
        if (parse_expr(A, &s->start))
            return -1;
        s->has_start = 1;
        if (!tok_is(TOK(A), ':')) {
            s->is_index = 1;
            return 0;
        }
    }
    accept(A, ':');
    if (!tok_is(TOK(A), ':') && !tok_is(TOK(A), ',') && !tok_is(TOK(A), ']')) {
        if (parse_expr(A, &s->stop))
            return -1;
        s->has_stop = 1;
    }
    if (accept(A, ':')) {
        if (!tok_is(TOK(A), ',') && !tok_is(TOK(A), ']')) {
            uint32_t col = TOK(A)->col;
            if (parse_expr(A, &s->step))
                return -1;
            if (s->step == 0)
                return err_at(A, col, "slice step cannot be zero");
        }
    }
    return 0;
}

/* Resolve slice s over a dimension of size n: first index and count. */
static int resolve_slice(asm_state_t *A, const slice_t *s, uint64_t n, int dim,
                         const isa_tok_t *name, int64_t *first, uint64_t *count)
{
    if ((s->has_start && s->start < 0) || (s->has_stop && s->stop < 0))
        return err_at(A, s->col, "negative index %lld in dimension %d of '%.*s' (NCA has no "
                                 "negative indexing)",
                      (long long)(s->has_start && s->start < 0 ? s->start : s->stop), dim,
                      (int)name->len, name->s);
    if (s->is_index) {
        if ((uint64_t)s->start >= n)
            return err_at(A, s->col, "index %lld out of range for dimension %d of '%.*s' "
                                     "(size %llu)", (long long)s->start, dim, (int)name->len,
                          name->s, (unsigned long long)n);
        *first = s->start;
        *count = 1;
        return 0;
    }
    int64_t start, stop;
    /* |step| as unsigned: -INT64_MIN does not fit an int64 */
    uint64_t mag = s->step > 0 ? (uint64_t)s->step : 0 - (uint64_t)s->step;
    if (s->step > 0) {
        start = s->has_start ? s->start : 0;
        stop = s->has_stop ? s->stop : (int64_t)n;
        if ((uint64_t)start >= n)
            return err_at(A, s->col,
                          "slice start %lld past the end of dimension %d of '%.*s' (size %llu)",
                          (long long)start, dim, (int)name->len, name->s,
                          (unsigned long long)n);
        if ((uint64_t)stop > n)
            return err_at(A, s->col,
                          "slice end %lld past the end of dimension %d of '%.*s' (size %llu)",
                          (long long)stop, dim, (int)name->len, name->s,
                          (unsigned long long)n);
        if (start >= stop)
            return err_at(A, s->col, "empty slice %lld:%lld in dimension %d of '%.*s'",
                          (long long)start, (long long)stop, dim, (int)name->len, name->s);
        *count = ((uint64_t)(stop - start) - 1) / mag + 1;
    } else {
        start = s->has_start ? s->start : (int64_t)n - 1;
        stop = s->has_stop ? s->stop : -1;
        if ((uint64_t)start >= n)
            return err_at(A, s->col,
                          "slice start %lld past the end of dimension %d of '%.*s' (size %llu)",
                          (long long)start, dim, (int)name->len, name->s,
                          (unsigned long long)n);
        if ((uint64_t)stop + 1 > n) /* stop == -1 wraps to 0 here */
            return err_at(A, s->col,
                          "slice end %lld past the end of dimension %d of '%.*s' (size %llu)",
                          (long long)stop, dim, (int)name->len, name->s,
                          (unsigned long long)n);
        if (start <= stop)
            return err_at(A, s->col, "empty slice %lld:%lld:%lld in dimension %d of '%.*s'",
                          (long long)start, (long long)stop, (long long)s->step, dim,
                          (int)name->len, name->s);
        *count = ((uint64_t)(start - stop) - 1) / mag + 1;
    }
    *first = start;
    return 0;
}

/*
 * An HBM view whose dimensions the encoding cannot hold (a count above ISA_MAX_COUNT, as in
 * a whole [65536, 1024] tensor): the same elements in the same row-major order, described
 * with other dimensions. HBM views are used only by dma and the collectives, which pair
 * elements in row-major order and never look at the dimension structure, so any description
 * of the same sequence means the same thing. Adjacent dimensions that are contiguous
 * (stride[d] == stride[d+1] * count[d+1]) are merged, then each dimension that is still too
 * big is split into factors of at most ISA_MAX_COUNT. Views within the limits are left as
 * written. When no such description fits in ISA_MAX_HBM_DIMS dimensions (a count with no
 * suitable factors), the message says which dimension and how to restructure.
 */
static uint64_t largest_factor_at_most(uint64_t c, uint64_t lim, uint64_t want_outer_at_most)
{
    /* the largest divisor b <= lim of c with c / b <= want_outer_at_most, else the largest
     * divisor <= lim at all (1 when c is prime and above lim) */
    uint64_t best = 1;
    for (uint64_t b = lim < c ? lim : c; b > 1; b--)
        if (c % b == 0) {
            if (c / b <= want_outer_at_most)
                return b;
            if (best == 1)
                best = b;
        }
    return best;
}

static int fold_hbm_view(asm_state_t *A, isa_view_t *v, const uint64_t *count,
                         const int64_t *stride, const uint32_t *col, unsigned n,
                         const isa_tok_t *name)
{
    int too_big = 0;
    for (unsigned d = 0; d < n; d++)
        too_big |= count[d] > ISA_MAX_COUNT;
    if (!too_big) {
        for (unsigned d = 0; d < n; d++) {
            v->stride[v->ndims] = stride[d];
            v->count[v->ndims] = (uint32_t)count[d];
            v->ndims++;
        }
        return 0;
    }
    uint64_t c[2 * ISA_MAX_DIMS + 2];
    int64_t st[2 * ISA_MAX_DIMS + 2];
    unsigned m = 0, first_big = 0;
    for (unsigned d = 0; d < n; d++) {
        if (count[d] > ISA_MAX_COUNT && !first_big)
            first_big = d + 1;
        if (count[d] == 1)
            continue;
        if (m && st[m - 1] == stride[d] * (int64_t)count[d]) { /* contiguous: merge */
            c[m - 1] *= count[d];
            st[m - 1] = stride[d];
            continue;
        }
        c[m] = count[d];
        st[m] = stride[d];
        m++;
    }
    /* split, innermost factor as large as allowed */
    for (unsigned d = 0; d < m && m <= ISA_MAX_HBM_DIMS; d++) {
        if (c[d] <= ISA_MAX_COUNT)
            continue;
        uint64_t b = largest_factor_at_most(c[d], ISA_MAX_COUNT, ISA_MAX_COUNT);
        if (b == 1)
            break;
        memmove(&c[d + 2], &c[d + 1], (m - d - 1) * sizeof c[0]);
        memmove(&st[d + 2], &st[d + 1], (m - d - 1) * sizeof st[0]);
        c[d + 1] = b;
        st[d + 1] = st[d];
        c[d] /= b;
        st[d] *= (int64_t)b;
        m++;
        d--; /* the outer part may still be too big */
    }
    int ok = m <= ISA_MAX_HBM_DIMS;
    for (unsigned d = 0; ok && d < m; d++)
        ok = c[d] <= ISA_MAX_COUNT;
    if (!ok) {
        unsigned d = first_big - 1;
        return err_at(A, col[d], "dimension %u of '%.*s' selects %llu elements; a view "
                                 "dimension holds at most %d and these elements cannot be "
                                 "described in %d dimensions of at most %d (no suitable "
                                 "factors): declare the tensor with smaller dimensions, or "
                                 "make two operands of it", d, (int)name->len, name->s,
                      (unsigned long long)count[d], ISA_MAX_COUNT, ISA_MAX_HBM_DIMS,
                      ISA_MAX_COUNT);
    }
    if (m == 0) { /* every dimension had one element */
        c[0] = 1;
        st[0] = 1;
        m = 1;
    }
    for (unsigned d = 0; d < m; d++) {
        v->stride[v->ndims] = st[d];
        v->count[v->ndims] = (uint32_t)c[d];
        v->ndims++;
    }
    return 0;
}

static int parse_named_view(asm_state_t *A, isa_view_t *v)
{
    const isa_tok_t *name = TOK(A);
    isa_tensor_t *T = find_tensor(A, name);
    if (!T)
        return undefined_tensor(A, name);
    if (T->space == ISA_SPACE_HBM) {
        /* ISA.md 1, 5.1, 7.5, 7.6: a core reaches only its own chip's HBM */
        uint32_t core = A->core < 0 ? 0 : (uint32_t)A->core;
        if ((uint32_t)T->chip != core / ISA_CORES_PER_CHIP)
            return err_here(A, "tensor '%.*s' is in the HBM of chip %d, but core %u is on "
                               "chip %u and reaches only its own chip's HBM", (int)name->len,
                            name->s, T->chip, core, core / ISA_CORES_PER_CHIP);
    }
    A->pos++;
    slice_t sl[ISA_MAX_DIMS + 1];
    unsigned nsl = 0;
    if (accept(A, '[')) {
        if (!tok_is(TOK(A), ']')) {
            for (;;) {
                if (nsl == T->ndims)
                    return err_here(A, "too many indices for tensor '%.*s' of %u dimensions",
                                    (int)name->len, name->s, T->ndims);
                if (parse_slice(A, &sl[nsl]))
                    return -1;
                nsl++;
                if (!accept(A, ','))
                    break;
            }
        }
        if (expect(A, ']', "']' or ','"))
            return -1;
    }
    int onchip = T->space != ISA_SPACE_HBM;
    uint32_t es = isa_dtype_size((isa_dtype_t)T->dtype);
    memset(v, 0, sizeof *v);
    v->space = T->space;
    v->dtype = T->dtype;
    v->offset = T->offset;
    v->pcount = 1;
    int64_t elem_off = 0;
    /* the view's dims before folding (fold_hbm_view): counts may exceed ISA_MAX_COUNT */
    uint64_t big_count[ISA_MAX_DIMS + 1];
    int64_t big_stride[ISA_MAX_DIMS + 1];
    uint32_t big_col[ISA_MAX_DIMS + 1];
    unsigned nbig = 0;
    /* row-major element strides of the free dims */
    int64_t stride[ISA_MAX_DIMS + 1];
    int64_t acc = 1;
    for (int d = (int)T->ndims - 1; d >= (onchip ? 1 : 0); d--) {
        stride[d] = acc;
        acc *= (int64_t)T->dims[d];
    }
    for (unsigned d = 0; d < T->ndims; d++) {
        slice_t full;
        memset(&full, 0, sizeof full);
        full.step = 1;
        full.col = name->col;
        const slice_t *s = d < nsl ? &sl[d] : &full;
        int64_t first = 0;
        uint64_t count = 0;
        if (resolve_slice(A, s, T->dims[d], (int)d, name, &first, &count))
            return -1;
        if (onchip && d == 0) {
            if (s->step != 1)
                return err_at(A, s->col, "the partition slice of '%.*s' must have step 1, not "
                                         "%lld", (int)name->len, name->s, (long long)s->step);
            v->pstart = (uint8_t)(T->pstart + (uint64_t)first);
            v->pcount = (uint16_t)count;
            continue;
        }
        elem_off += first * stride[d];
        if (s->is_index)
            continue;
        if (count > ISA_MAX_COUNT && onchip)
            return err_at(A, s->col, "dimension %u of '%.*s' selects %llu elements; a view "
                                     "dimension of %s holds at most %d: declare the tensor "
                                     "with that dimension as two (A x B = %llu, each at most "
                                     "%d) and slice both", d, (int)name->len, name->s,
                          (unsigned long long)count,
                          T->space == ISA_SPACE_SBUF ? "SBUF" : "PSUM", ISA_MAX_COUNT,
                          (unsigned long long)count, ISA_MAX_COUNT);
        /* with one element the step is irrelevant; otherwise |step| < n keeps this small */
        big_stride[nbig] = count == 1 ? stride[d] : stride[d] * s->step;
        big_count[nbig] = count;
        big_col[nbig] = s->col;
        nbig++;
    }
    if (fold_hbm_view(A, v, big_count, big_stride, big_col, nbig, name))
        return -1;
    v->offset = T->offset + (uint64_t)(elem_off * (int64_t)es);
    return 0;
}

/* Bounds on raw-view numbers, far beyond any memory, so that byte ranges computed from
 * them (offset + stride * count * element size, over every dim) cannot overflow. */
#define RAW_MAX_OFFSET (1ll << 48)
#define RAW_MAX_STRIDE (1ll << 40)

/*
 * The OFFSET (or ADDR) of a raw view: an integer expression, or a tensor's name, optionally
 * followed by `+ EXPR`: the tensor's byte offset (in each partition, or its HBM address)
 * plus that, so that generated code can address inside a tensor the assembler placed
 * (`hbm:fp32+s[0x128, 1x1]`) without pinning it. The tensor must be in the view's memory
 * (and, in HBM, on the issuing core's chip).
 */
static int parse_raw_base(asm_state_t *A, const isa_view_t *v, int64_t *off)
{
    const isa_tok_t *t = TOK(A);
    isa_tensor_t *T = t->kind == TK_IDENT ? find_tensor(A, t) : NULL;
    if (!T)
        return parse_expr(A, off);
    if (T->space != v->space)
        return err_here(A, "tensor '%.*s' is in %s, not in the raw view's %s", (int)t->len,
                        t->s, T->space == ISA_SPACE_HBM ? "HBM" : T->space == ISA_SPACE_SBUF
                                                                    ? "SBUF" : "PSUM",
                        v->space == ISA_SPACE_HBM ? "HBM" : v->space == ISA_SPACE_SBUF ? "SBUF"
                                                                                     : "PSUM");
    if (T->space == ISA_SPACE_HBM) {
        uint32_t core = A->core < 0 ? 0 : (uint32_t)A->core;
        if ((uint32_t)T->chip != core / ISA_CORES_PER_CHIP)
            return err_here(A, "tensor '%.*s' is in the HBM of chip %d, but core %u is on "
                               "chip %u and reaches only its own chip's HBM", (int)t->len, t->s,
                            T->chip, core, core / ISA_CORES_PER_CHIP);
    }
    A->pos++;
    int64_t extra = 0;
    uint32_t ecol = TOK(A)->col;
    if (accept(A, '+')) {
        ecol = TOK(A)->col;
        if (parse_expr(A, &extra))
            return -1;
    }
    if (extra < 0 || (uint64_t)extra > (uint64_t)RAW_MAX_OFFSET)
        return err_at(A, ecol, "byte offset %lld after tensor '%.*s' out of range 0..%lld",
                        (long long)extra, (int)t->len, t->s, (long long)RAW_MAX_OFFSET);
    *off = (int64_t)T->offset + extra;
    return 0;
}

/*
 * broadcast(VIEW, N): VIEW repeated N times, as a new outermost (free) dimension of stride 0.
 * `broadcast(s, 128)` of a one-element HBM tensor is 128 copies of it, which a DMA pairs
 * with an SBUF [128, 1] vector: one copy per partition. A row g[F] broadcast to 128 fills an
 * SBUF [128, F] tile with the row on every partition.
 */
static int parse_view(asm_state_t *A, isa_view_t *v);

static int parse_broadcast_view(asm_state_t *A, isa_view_t *v)
{
    uint32_t col = TOK(A)->col;
    A->pos += 2; /* broadcast ( */
    if (parse_view(A, v))
        return -1;
    if (expect(A, ',', "',' and the number of copies in broadcast(VIEW, N)"))
        return -1;
    uint32_t ncol = TOK(A)->col;
    int64_t n;
    if (parse_expr(A, &n))
        return -1;
    if (expect(A, ')', "')' closing broadcast(VIEW, N)"))
        return -1;
    if (n < 1 || n > ISA_MAX_COUNT)
        return err_at(A, ncol, "broadcast: %lld copies, out of range 1..%d", (long long)n,
                      ISA_MAX_COUNT);
    unsigned maxd = v->space == ISA_SPACE_HBM ? ISA_MAX_HBM_DIMS : ISA_MAX_FREE_DIMS;
    if (v->ndims >= maxd)
        return err_at(A, col, "broadcast: the view already has %u dimensions, the most a%s "
                              "view has; broadcast a view with fewer", v->ndims,
                      v->space == ISA_SPACE_HBM ? "n HBM" : "n on-chip");
    memmove(&v->stride[1], &v->stride[0], v->ndims * sizeof v->stride[0]);
    memmove(&v->count[1], &v->count[0], v->ndims * sizeof v->count[0]);
    v->stride[0] = 0;
    v->count[0] = (uint32_t)n;
    v->ndims++;
    return 0;
}

/* Raw view: SPACE:DTYPE@PSTART:PEND+OFFSET[STRIDExCOUNT, ...] or hbm:DTYPE+ADDR[...] */
static int parse_raw_view(asm_state_t *A, isa_view_t *v)
{
    const isa_tok_t *sp = TOK(A);
    memset(v, 0, sizeof *v);
    v->space = tok_ident(sp, "sb") ? ISA_SPACE_SBUF
               : tok_ident(sp, "ps") ? ISA_SPACE_PSUM
                                     : ISA_SPACE_HBM;
    A->pos += 2; /* space and ':' */
    const isa_tok_t *dt = TOK(A);
    int d = dt->kind == TK_IDENT ? isa_dtype_lookup(dt->s, dt->len) : -1;
    if (d < 0) {
        char b[64];
        return err_here(A, "unknown data type %s in raw view (%s)", tok_desc(dt, b, sizeof b),
                        dtype_list);
    }
    v->dtype = (uint8_t)d;
    A->pos++;
    v->pcount = 1;
    if (v->space != ISA_SPACE_HBM) {
        if (expect(A, '@', "'@PSTART:PEND' in raw view"))
            return -1;
        int64_t p0, p1;
        uint32_t col = TOK(A)->col;
        /* primaries, not full expressions: PEND is followed by +OFFSET */
        if (parse_primary(A, &p0) || expect(A, ':', "':'") || parse_primary(A, &p1))
            return -1;
        if (p0 < 0 || p1 <= p0 || (uint64_t)p1 > A->geo.partitions)
            return err_at(A, col, "bad partition range %lld:%lld (PSTART:PEND with 0 <= "
                                  "PSTART < PEND <= %u)", (long long)p0, (long long)p1,
                          A->geo.partitions);
        v->pstart = (uint8_t)(p0 > 255 ? 255 : p0);
        v->pcount = (uint16_t)(p1 - p0);
    }
    if (expect(A, '+', "'+OFFSET' in raw view"))
        return -1;
    int64_t off;
    uint32_t col = TOK(A)->col;
    if (parse_raw_base(A, v, &off))
        return -1;
    if (off < 0 || off > RAW_MAX_OFFSET)
        return err_at(A, col, "byte offset %lld out of range 0..%lld", (long long)off,
                      (long long)RAW_MAX_OFFSET);
    v->offset = (uint64_t)off;
    if (expect(A, '[', "'[' in raw view"))
        return -1;
    unsigned maxd = v->space == ISA_SPACE_HBM ? ISA_MAX_HBM_DIMS : ISA_MAX_FREE_DIMS;
    if (!tok_is(TOK(A), ']')) {
        for (;;) {
            if (v->ndims == maxd)
                return err_here(A, "too many dimensions in raw view (at most %u)", maxd);
            const isa_tok_t *st = TOK(A);
            int64_t stride, count;
            /* "0x8" is stride 0, count 8 (the lexer read it as hex) */
            if (st->kind == TK_INT && st->hex && !(st[1].kind == TK_IDENT && st[1].s[0] == 'x')) {
                char digits[32];
                uint32_t n = st->len - 2;
                if (n == 0 || n >= sizeof digits)
                    return err_here(A, "bad dimension '%.*s'", (int)st->len, st->s);
                memcpy(digits, st->s + 2, n);
                digits[n] = 0;
                for (uint32_t i = 0; i < n; i++)
                    if (digits[i] < '0' || digits[i] > '9')
                        return err_here(A, "bad dimension '%.*s' (expected STRIDExCOUNT)",
                                        (int)st->len, st->s);
                stride = 0;
                count = strtoll(digits, NULL, 10);
                A->pos++;
            } else {
                if (parse_expr(A, &stride))
                    return -1;
                const isa_tok_t *x = TOK(A);
                if (x->kind != TK_IDENT || x->s[0] != 'x') {
                    char b[64];
                    return err_here(A, "expected 'xCOUNT' after the stride (STRIDExCOUNT), "
                                       "found %s", tok_desc(x, b, sizeof b));
                }
                if (x->len == 1) {
                    A->pos++;
                    if (parse_expr(A, &count))
                        return -1;
                } else if (x->s[1] >= '0' && x->s[1] <= '9') {
                    count = 0;
                    for (uint32_t i = 1; i < x->len; i++) {
                        if (x->s[i] < '0' || x->s[i] > '9')
                            return err_here(A, "bad count '%.*s' in raw view dimension",
                                            (int)x->len - 1, x->s + 1);
                        if (count <= ISA_MAX_COUNT) /* saturate: reported below */
                            count = count * 10 + (x->s[i] - '0');
                    }
                    A->pos++;
                } else {
                    /* 1xN: the count is a .let constant or loop variable glued to the x */
                    isa_tok_t nt = *x;
                    nt.s = x->s + 1;
                    nt.len = x->len - 1;
                    nt.col = x->col + 1;
                    if (lookup_int(A, &nt, &count))
                        return -1;
                    A->pos++;
                }
            }
            if (count < 1 || count > ISA_MAX_COUNT)
                return err_at(A, st->col, "dimension count %lld out of range 1..%d",
                              (long long)count, ISA_MAX_COUNT);
            if (stride < -RAW_MAX_STRIDE || stride > RAW_MAX_STRIDE)
                return err_at(A, st->col, "stride %lld out of range (at most %lld elements "
                                          "either way)", (long long)stride,
                              (long long)RAW_MAX_STRIDE);
            v->stride[v->ndims] = stride;
            v->count[v->ndims] = (uint32_t)count;
            v->ndims++;
            if (!accept(A, ','))
                break;
        }
    }
    return expect(A, ']', "']' or ','");
}

static int parse_view(asm_state_t *A, isa_view_t *v)
{
    const isa_tok_t *t = TOK(A);
    char b[64];
    if (t->kind != TK_IDENT)
        return err_here(A, "expected a view, found %s", tok_desc(t, b, sizeof b));
    if (is_raw_space(t, t + 1))
        return parse_raw_view(A, v);
    if (tok_ident(t, "broadcast") && tok_is(t + 1, '('))
        return parse_broadcast_view(A, v);
    return parse_named_view(A, v);
}

/* ---- placement --------------------------------------------------------------------------------- */

static uint64_t align_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

/* Bytes of a tensor (per partition on chip); UINT64_MAX when that overflows, which no
 * memory can hold, so every "does it fit" test fails cleanly. */
static uint64_t tensor_bytes(const isa_tensor_t *T)
{
    uint64_t n = isa_dtype_size((isa_dtype_t)T->dtype);
    for (unsigned d = T->space == ISA_SPACE_HBM ? 0 : 1; d < T->ndims; d++)
        if (__builtin_mul_overflow(n, T->dims[d], &n))
            return UINT64_MAX;
    return n;
}

/* Does tensor U occupy memory that a new tensor (space, core/chip, partitions p0..p1, bytes
 * lo..hi) would also occupy? */
static int overlaps(const isa_tensor_t *U, const isa_tensor_t *T, uint64_t lo, uint64_t hi)
{
    if (U->space != T->space)
        return 0;
    if (T->space == ISA_SPACE_HBM) {
        if (U->chip != T->chip)
            return 0;
    } else {
        if (U->core != -1 && T->core != -1 && U->core != T->core)
            return 0;
        uint64_t a0 = U->pstart, a1 = U->pstart + U->dims[0];
        uint64_t b0 = T->pstart, b1 = T->pstart + T->dims[0];
        if (a1 <= b0 || b1 <= a0)
            return 0;
    }
    uint64_t ulo = U->offset, uhi = U->offset + tensor_bytes(U);
    return !(uhi <= lo || hi <= ulo);
}

/* "32 GiB" for exact binary multiples, else "N bytes". */
static const char *fmt_bytes(uint64_t n, char *buf, size_t len)
{
    if (n && n % (1ull << 30) == 0)
        snprintf(buf, len, "%llu GiB", (unsigned long long)(n >> 30));
    else if (n && n % (1ull << 20) == 0)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(n >> 20));
    else
        snprintf(buf, len, "%llu bytes", (unsigned long long)n);
    return buf;
}

/* First-fit: the lowest aligned offset where T fits without overlapping any tensor already
 * placed that shares its memory. */
static int place_tensor(asm_state_t *A, isa_tensor_t *T, uint64_t align, uint64_t limit)
{
    isa_program_t *p = A->b.prog;
    uint64_t size = tensor_bytes(T);
    if (size > limit)
        return -1;
    uint64_t cand = 0;
    for (;;) {
        int moved = 0;
        for (uint32_t i = 0; i < p->ntensors; i++) {
            const isa_tensor_t *U = &p->tensors[i];
            if (overlaps(U, T, cand, cand + size)) {
                cand = align_up(U->offset + tensor_bytes(U), align);
                moved = 1;
            }
        }
        if (!moved)
            break;
    }
    if (cand > limit - size)
        return -1;
    T->offset = cand;
    return 0;
}

/* ---- declarations --------------------------------------------------------------------------------- */

static int parse_dims(asm_state_t *A, uint64_t *dims, unsigned max, const char *maxwhat,
                      unsigned *n)
{
    if (expect(A, '[', "'[' and the dimensions"))
        return -1;
    *n = 0;
    if (tok_is(TOK(A), ']'))
        return err_here(A, "a tensor needs at least one dimension");
    for (;;) {
        uint32_t col = TOK(A)->col;
        int64_t v;
        if (parse_expr(A, &v))
            return -1;
        if (*n == max)
            return err_at(A, col, "too many dimensions (at most %u: %s)", max, maxwhat);
        if (v <= 0)
            return err_at(A, col, "dimension %u must be positive, not %lld", *n, (long long)v);
        dims[(*n)++] = (uint64_t)v;
        if (!accept(A, ','))
            break;
    }
    return expect(A, ']', "']'");
}

static int expect_end(asm_state_t *A)
{
    if (TOK(A)->kind == TK_END)
        return 0;
    char b[64];
    return err_here(A, "unexpected %s at end of statement", tok_desc(TOK(A), b, sizeof b));
}

/* Report a redefinition of `name` (0 when the name is free). Checked before anything else
 * about a declaration, so that a repeated line is reported as such. */
static int check_free_name(asm_state_t *A, const isa_tok_t *name, int ns, int32_t core)
{
    sym_t *y = sym_find(&A->syms, name->s, name->len, ns, core);
    /* A per-core name may not hide a global one of the same kind, nor the reverse. */
    if (!y && ns != NS_INT && ns != NS_GROUP && core >= 0)
        y = sym_find(&A->syms, name->s, name->len, ns, -1);
    if (y) {
        static const char *const what[] = {"constant", "tensor", "semaphore", "group"};
        if (y->line == A->lineno && A->loop_depth)
            return err_at(A, name->col, "%s '%.*s' is declared again by the next iteration of "
                                        "a loop: declare it once, before the loop", what[ns],
                          (int)name->len, name->s);
        if (y->line == A->lineno && y->core == -1 && core == -1 && A->in_core_block)
            /* a global declaration inside a .core block replayed for its next core */
            return err_at(A, name->col, "%s '%.*s' is global but declared inside a .core "
                                        "block of several cores: declare it once, before "
                                        "the first .core", what[ns], (int)name->len, name->s);
        if (y->core == -1 && core >= 0)
            return err_at(A, name->col, "%s '%.*s' is already defined for every core (line "
                                        "%u)", what[ns], (int)name->len, name->s, y->line);
        return err_at(A, name->col, "%s '%.*s' is already defined (line %u)", what[ns],
                      (int)name->len, name->s, y->line);
    }
    return 0;
}

static int declare_name(asm_state_t *A, const isa_tok_t *name, int ns, int32_t core,
                        int64_t value)
{
    if (check_free_name(A, name, ns, core))
        return -1;
    sym_t *y = sym_add(&A->syms, name->s, name->len, ns, core);
    if (!y) {
        A->oom = 1;
        return -1;
    }
    y->value = value;
    y->line = A->lineno;
    return 0;
}

static int dir_tensor(asm_state_t *A, isa_space_t space)
{
    const isa_tok_t *name = TOK(A);
    if (name->kind != TK_IDENT) {
        char b[64];
        return err_here(A, "expected a tensor name, found %s", tok_desc(name, b, sizeof b));
    }
    if (check_free_name(A, name, NS_TENSOR, space == ISA_SPACE_HBM ? -1 : A->core))
        return -1;
    A->pos++;
    const isa_tok_t *dt = TOK(A);
    int d = dt->kind == TK_IDENT ? isa_dtype_lookup(dt->s, dt->len) : -1;
    if (d < 0)
    {
        char b[64];
        return err_here(A, "unknown data type %s (%s)", tok_desc(dt, b, sizeof b), dtype_list);
    }
    A->pos++;
    isa_tensor_t T;
    memset(&T, 0, sizeof T);
    T.space = (uint8_t)space;
    T.dtype = (uint8_t)d;
    T.name = ISA_NO_NAME;
    uint32_t dims_col = TOK(A)->col;
    unsigned nd;
    unsigned maxd = space == ISA_SPACE_HBM ? ISA_MAX_HBM_DIMS : ISA_MAX_FREE_DIMS + 1;
    if (parse_dims(A, T.dims, maxd,
                   space == ISA_SPACE_HBM ? "the most an HBM view can address"
                                          : "the partition dimension and 4 free dimensions",
                   &nd))
        return -1;
    T.ndims = (uint8_t)nd;
    int explicit_addr = 0;
    uint32_t addr_col = dims_col;
    char sz1[32], sz2[32];
    if (space == ISA_SPACE_HBM) {
        const isa_tok_t *k = TOK(A);
        static const char *const kinds[] = {"input", "output", "inout", "scratch"};
        int kind = -1;
        for (int i = 0; i < 4; i++)
            if (tok_ident(k, kinds[i]))
                kind = i;
        if (kind < 0) {
            char b[64];
            return err_here(A, "expected the tensor kind (input, output, inout or scratch), "
                               "found %s", tok_desc(k, b, sizeof b));
        }
        A->pos++;
        T.kind = (uint8_t)kind;
        T.core = -1;
        T.chip = 0;
        if (accept(A, '@')) {
            uint32_t col = addr_col = TOK(A)->col;
            int64_t addr;
            if (parse_expr(A, &addr))
                return -1;
            if (addr < 0)
                return err_at(A, col, "negative address %lld", (long long)addr);
            T.offset = (uint64_t)addr;
            explicit_addr = 1;
        }
        if (tok_ident(TOK(A), "chip")) {
            A->pos++;
            if (expect(A, '=', "'=' after chip"))
                return -1;
            uint32_t col = TOK(A)->col;
            int64_t c;
            if (parse_expr(A, &c))
                return -1;
            if (c < 0 || c >= (int64_t)A->b.prog->chips)
                return err_at(A, col, "chip %lld out of range: the program has %u chip(s)",
                              (long long)c, A->b.prog->chips);
            T.chip = (int32_t)c;
        }
        if (expect_end(A))
            return -1;
        uint64_t size = tensor_bytes(&T);
        if (explicit_addr) {
            if (size > A->geo.hbm_bytes || T.offset > A->geo.hbm_bytes - size)
                return err_at(A, addr_col, "tensor '%.*s' (%s at 0x%llx) does not fit in the "
                                           "%s HBM of chip %d", (int)name->len, name->s,
                              fmt_bytes(size, sz1, sizeof sz1), (unsigned long long)T.offset,
                              fmt_bytes(A->geo.hbm_bytes, sz2, sizeof sz2), T.chip);
        } else if (place_tensor(A, &T, 64, A->geo.hbm_bytes)) {
            return err_at(A, dims_col, "tensor '%.*s' (%s) does not fit in the free space of "
                                       "the %s HBM of chip %d", (int)name->len, name->s,
                          fmt_bytes(size, sz1, sizeof sz1),
                          fmt_bytes(A->geo.hbm_bytes, sz2, sizeof sz2), T.chip);
        }
    } else {
        T.kind = ISA_TK_LOCAL;
        T.core = A->core;
        T.chip = -1;
        if (T.dims[0] > A->geo.partitions)
            return err_at(A, dims_col, "tensor '%.*s' has %llu partitions; %s has %u",
                          (int)name->len, name->s, (unsigned long long)T.dims[0],
                          space == ISA_SPACE_SBUF ? "SBUF" : "PSUM", A->geo.partitions);
        if (accept(A, '@')) {
            uint32_t col = TOK(A)->col;
            int64_t ps;
            /* a primary, not a full expression: `@0 +2048` is PSTART then +OFFSET */
            if (parse_primary(A, &ps))
                return -1;
            if (ps < 0 || (uint64_t)ps + T.dims[0] > A->geo.partitions)
                return err_at(A, col, "partitions %lld..%llu out of range 0..%u",
                              (long long)ps, (unsigned long long)ps + T.dims[0] - 1,
                              A->geo.partitions - 1);
            T.pstart = (uint32_t)ps;
        }
        if (accept(A, '+')) {
            uint32_t col = addr_col = TOK(A)->col;
            int64_t off;
            if (parse_expr(A, &off))
                return -1;
            if (off < 0)
                return err_at(A, col, "negative offset %lld", (long long)off);
            T.offset = (uint64_t)off;
            explicit_addr = 1;
        }
        if (expect_end(A))
            return -1;
        /* partition rule (ISA.md 5.2) */
        uint64_t P = T.dims[0];
        uint32_t ps = T.pstart;
        if ((P > 64 && ps != 0) || (P > 32 && P <= 64 && ps % 64) || (P <= 32 && ps % 32))
            return err_at(A, dims_col, "tensor '%.*s': %llu partitions cannot start at "
                                       "partition %u (ISA.md 5.2: more than 64 start at 0; "
                                       "33..64 at 0 or 64; up to 32 at 0, 32, 64 or 96)",
                          (int)name->len, name->s, (unsigned long long)P, ps);
        uint64_t limit = space == ISA_SPACE_SBUF ? A->geo.sbuf_bytes : A->geo.psum_bytes;
        uint64_t size = tensor_bytes(&T);
        const char *mem = space == ISA_SPACE_SBUF ? "SBUF" : "PSUM";
        if (explicit_addr) {
            if (size > limit || T.offset > limit - size)
                return err_at(A, addr_col, "tensor '%.*s' (%llu bytes per partition at +%llu) "
                                           "does not fit in %s of %llu bytes per partition",
                              (int)name->len, name->s, (unsigned long long)size,
                              (unsigned long long)T.offset, mem, (unsigned long long)limit);
        } else if (size > limit) {
            return err_at(A, dims_col, "tensor '%.*s' (%llu bytes per partition) is larger "
                                       "than %s (%llu bytes per partition)", (int)name->len,
                          name->s, (unsigned long long)size, mem, (unsigned long long)limit);
        } else {
            uint64_t align = space == ISA_SPACE_PSUM ? A->geo.psum_bank_bytes : 64;
            if (place_tensor(A, &T, align, limit))
                return err_at(A, dims_col, "tensor '%.*s' (%llu bytes per partition) does not "
                                           "fit in %s: no free range that large is left in "
                                           "partitions %u..%llu (%llu bytes per partition)%s",
                              (int)name->len, name->s, (unsigned long long)size, mem, T.pstart,
                              (unsigned long long)(T.pstart + T.dims[0] - 1),
                              (unsigned long long)limit,
                              space == ISA_SPACE_PSUM ? ", tensors start on 2 KiB banks" : "");
        }
    }
    T.name = isa_builder_string(&A->b, name->s, name->len);
    int32_t scope = space == ISA_SPACE_HBM ? -1 : A->core;
    if (declare_name(A, name, NS_TENSOR, scope, A->b.prog->ntensors))
        return -1;
    if (isa_builder_tensor(&A->b, &T) == UINT32_MAX)
        A->oom = 1;
    return 0;
}

static int dir_sem(asm_state_t *A)
{
    const isa_tok_t *name = TOK(A);
    if (name->kind != TK_IDENT) {
        char b[64];
        return err_here(A, "expected a semaphore name, found %s", tok_desc(name, b, sizeof b));
    }
    if (check_free_name(A, name, NS_SEM, A->core))
        return -1;
    A->pos++;
    int64_t init = 0;
    if (accept(A, '=')) {
        uint32_t col = TOK(A)->col;
        if (parse_expr(A, &init))
            return -1;
        if (init < INT32_MIN || init > INT32_MAX)
            return err_at(A, col, "initial value %lld does not fit a 32-bit semaphore",
                          (long long)init);
    }
    if (expect_end(A))
        return -1;
    uint32_t index;
    if (A->core < 0) {
        index = A->nsems_global;
        if (index >= ISA_MAX_SEMS)
            return err_at(A, name->col, "too many semaphores: '%.*s' would be number %u, but a "
                                        "core has %d", (int)name->len, name->s, index + 1,
                          ISA_MAX_SEMS);
        A->nsems_global++;
        for (int c = 0; c < ISA_MAX_CORES; c++)
            A->nsems_core[c] = A->nsems_global;
    } else {
        index = A->nsems_core[A->core];
        if (index >= ISA_MAX_SEMS)
            return err_at(A, name->col, "too many semaphores on core %d: '%.*s' would be "
                                        "number %u, but a core has %d", A->core, (int)name->len,
                          name->s, index + 1, ISA_MAX_SEMS);
        A->nsems_core[A->core]++;
    }
    if (declare_name(A, name, NS_SEM, A->core, index))
        return -1;
    isa_sem_t s;
    memset(&s, 0, sizeof s);
    s.name = isa_builder_string(&A->b, name->s, name->len);
    s.core = A->core;
    s.index = (uint8_t)index;
    s.init = (int32_t)init;
    if (isa_builder_sem(&A->b, &s) == UINT32_MAX)
        A->oom = 1;
    return 0;
}

/* Core list: K | A..B | K, K, ... (expressions allowed). */
static int parse_core_list(asm_state_t *A, int64_t *cores, unsigned max, unsigned *n)
{
    *n = 0;
    for (;;) {
        uint32_t col = TOK(A)->col;
        int64_t a, b;
        if (parse_expr(A, &a))
            return -1;
        b = a;
        if (accept(A, OP_DOTDOT) && parse_expr(A, &b))
            return -1;
        if (b < a)
            return err_at(A, col, "empty core range %lld..%lld", (long long)a, (long long)b);
        if (a < 0 || b >= (int64_t)A->b.prog->ncores)
            return err_at(A, col, "core %lld out of range: the program has %u cores, 0..%u "
                                  "(%u chip(s) of %d; .chips N sets the chip count)",
                          (long long)(a < 0 ? a : b), A->b.prog->ncores,
                          A->b.prog->ncores - 1, A->b.prog->chips, ISA_CORES_PER_CHIP);
        for (int64_t c = a; c <= b; c++) {
            for (unsigned i = 0; i < *n; i++)
                if (cores[i] == c)
                    return err_at(A, col, "core %lld is listed twice", (long long)c);
            if (*n == max)
                return err_at(A, col, "too many cores in the list");
            cores[(*n)++] = c;
        }
        if (!accept(A, ','))
            break;
    }
    return expect_end(A);
}

static int dir_group(asm_state_t *A)
{
    const isa_tok_t *name = TOK(A);
    char b[64];
    if (name->kind != TK_IDENT)
        return err_here(A, "expected a group name, found %s", tok_desc(name, b, sizeof b));
    if (check_free_name(A, name, NS_GROUP, -1))
        return -1;
    A->pos++;
    if (expect(A, '=', "'=' and the member cores"))
        return -1;
    int64_t cores[ISA_MAX_CORES];
    unsigned n;
    if (parse_core_list(A, cores, ISA_MAX_CORES, &n))
        return -1;
    if (declare_name(A, name, NS_GROUP, -1, A->b.prog->ngroups))
        return -1;
    isa_group_t g;
    g.name = isa_builder_string(&A->b, name->s, name->len);
    g.ncores = n;
    g.first = isa_builder_ints(&A->b, cores, n);
    if (isa_builder_group(&A->b, &g) == UINT32_MAX)
        A->oom = 1;
    return 0;
}

/* ---- instructions ---------------------------------------------------------------------------------- */

static int parse_enum_slot(asm_state_t *A, const isa_slot_desc_t *sd, isa_arg_t *arg)
{
    const isa_tok_t *t = TOK(A);
    int v = -1;
    const char *what, *list;
    switch (sd->kind) {
    case ISA_KIND_FUNC:
        what = "activation function";
        list = func_list;
        if (t->kind == TK_IDENT)
            v = isa_func_lookup(t->s, t->len);
        break;
    case ISA_KIND_CMP:
        what = "comparison";
        list = cmp_list;
        if (t->kind == TK_IDENT)
            v = isa_cmp_lookup(t->s, t->len);
        break;
    default:
        what = sd->kind == ISA_KIND_RED ? "reduction operator" : "ALU operator";
        list = alu_list;
        if (t->kind == TK_IDENT)
            v = isa_alu_lookup(t->s, t->len);
        break;
    }
    if (v < 0) {
        char b[64];
        if (t->kind == TK_IDENT)
            return err_here(A, "%s: unknown %s '%.*s' (%s)", sd->name, what, (int)t->len, t->s,
                            list);
        return err_here(A, "%s: expected an %s, found %s", sd->name, what,
                        tok_desc(t, b, sizeof b));
    }
    if (sd->kind == ISA_KIND_RED && !isa_alu_can_reduce((isa_alu_t)v)) {
        char reds[160] = "";
        for (int k = 0; k < ISA_ALU_COUNT; k++)
            if (isa_alu_can_reduce((isa_alu_t)k)) {
                strcat(reds, " ");
                strcat(reds, isa_alu_name((isa_alu_t)k));
            }
        return err_here(A, "%s: '%.*s' is not a reduction operator (one of%s)", sd->name,
                        (int)t->len, t->s, reds);
    }
    A->pos++;
    arg->v.i = v;
    return 0;
}

static uint64_t view_hash_at(void *ctx, uint32_t idx)
{
    asm_state_t *A = ctx;
    return view_hash(&A->b.prog->views[idx]);
}

/* Store the index of view v (in prog->views, added if new) in arg. */
static int add_view_arg(asm_state_t *A, const isa_view_t *v, isa_arg_t *arg)
{
    intern_t *t = &A->view_tab;
    if (intern_reserve(t, view_hash_at, A)) {
        A->oom = 1;
        return -1;
    }
    uint64_t hv = view_hash(v), tag = hv & 0xffffffff00000000ull;
    uint32_t h = (uint32_t)hv & (t->cap - 1);
    for (; t->slots[h]; h = (h + 1) & (t->cap - 1))
        if ((t->slots[h] & 0xffffffff00000000ull) == tag &&
            view_same(&A->b.prog->views[(uint32_t)t->slots[h] - 1], v)) {
            arg->index = (uint32_t)t->slots[h] - 1;
            return 0;
        }
    uint32_t idx = isa_builder_view(&A->b, v);
    if (idx >= UINT32_MAX - 1) {
        A->oom = 1;
        return -1;
    }
    t->slots[h] = tag | (idx + 1);
    t->n++;
    arg->index = idx;
    return 0;
}

/* ---- compiled loop bodies: views ------------------------------------------------------------------ */

static uint64_t memo_hash(uint32_t tok, int32_t core, const int64_t *vals, uint32_t n)
{
    uint64_t h = mix64((uint64_t)tok, (uint64_t)(uint32_t)core);
    for (uint32_t i = 0; i < n; i++)
        h = mix64(h, (uint64_t)vals[i]);
    return fmix64(h);
}

/* The memo slot for (view at kept token tok, core, values): a filled one, or the empty
 * one where such an entry goes. NULL when the table is empty. */
static vmemo_t *memo_find(fast_t *F, uint64_t h, uint32_t tok, int32_t core, const int64_t *vals,
                          uint32_t n)
{
    if (!F->cap_memo)
        return NULL;
    for (uint32_t i = (uint32_t)h & (F->cap_memo - 1);; i = (i + 1) & (F->cap_memo - 1)) {
        vmemo_t *m = &F->memo[i];
        if (!m->view)
            return m;
        if (m->hash == h && m->tok == tok && m->core == core &&
            memcmp(&F->vals[m->vals], vals, n * sizeof *vals) == 0)
            return m;
    }
}

static void memo_add(asm_state_t *A, uint32_t tok, const int64_t *vals, uint32_t n,
                     uint32_t view)
{
    fast_t *F = &A->fast;
    if (table_reserve((void **)&F->memo, &F->cap_memo, F->nmemo, sizeof *F->memo,
                      offsetof(vmemo_t, view))) {
        F->failed = 1;
        return;
    }
    if (fast_grow((void **)&F->vals, &F->cap_vals, F->nvals + n + 1, sizeof *F->vals)) {
        F->failed = 1;
        return;
    }
    uint64_t h = memo_hash(tok, A->core, vals, n);
    vmemo_t *m = memo_find(F, h, tok, A->core, vals, n);
    if (m->view)
        return;
    memcpy(&F->vals[F->nvals], vals, n * sizeof *vals);
    *m = (vmemo_t){h, tok, A->core, view + 1, F->nvals};
    F->nvals += n;
    F->nmemo++;
}

/* A named view operand at a kept token whose form is known: evaluate its expressions and
 * look the view up. 0 on a hit (arg filled, tokens consumed), -1 to parse instead. */
static int view_replay(asm_state_t *A, uint32_t k, isa_arg_t *arg)
{
    fast_t *F = &A->fast;
    vform_t *f = &F->forms[F->view_at[k] - 2];
    int64_t vals[FAST_MAX_VALS];
    for (uint32_t i = 0; i < f->nexpr; i++) {
        uint32_t e = F->expr_at[f->expr[i]];
        if (e < 2 || eval_at(A, e - 2, &vals[i]))
            return -1;
    }
    vmemo_t *m = memo_find(F, memo_hash(k, A->core, vals, f->nexpr), k, A->core, vals,
                           f->nexpr);
    if (!m || !m->view) {
        f->misses++;
        return -1;
    }
    f->hits++;
    if (F->lrec) {
        /* the inputs parse_view would have recorded (the same expressions, in order) */
        for (uint32_t i = 0; i < f->nexpr; i++) {
            if (F->nitems == TM_MAX_ITEMS) {
                F->lrec_bad = 1;
                break;
            }
            F->items[F->nitems] = (titem_t){f->expr[i], IT_EXPR, F->role, 0};
            F->item_val[F->nitems++] = vals[i];
        }
    }
    arg->is_view = 1;
    arg->index = m->view - 1;
    A->pos += f->ntok;
    return 0;
}

/* Parse a view operand into arg (present already set), through the memo when the view is
 * a named one in a loop body. */
static int view_arg(asm_state_t *A, isa_arg_t *arg)
{
    uint32_t k = kept_index(A);
    const isa_tok_t *t = TOK(A);
    if (k == UINT32_MAX || t->kind != TK_IDENT || is_raw_space(t, t + 1)) {
        isa_view_t v;
        if (parse_view(A, &v))
            return -1;
        arg->is_view = 1;
        return add_view_arg(A, &v, arg);
    }
    fast_t *F = &A->fast;
    if (F->view_at[k] >= 2 && view_replay(A, k, arg) == 0)
        return 0;
    uint32_t p0 = A->pos;
    F->recording = 1;
    F->nrec = 0;
    isa_view_t v;
    int r = parse_view(A, &v);
    F->recording = 0;
    arg->is_view = 1;
    if (r || add_view_arg(A, &v, arg))
        return -1;
    if (F->failed || F->nrec > FAST_MAX_VALS)
        return 0;
    if (F->view_at[k] == 0) {
        vform_t f = {A->pos - p0, F->nrec, {0}, 0, 0};
        memcpy(f.expr, F->rec_tok, F->nrec * sizeof *f.expr);
        for (uint32_t i = 0; i < F->nrec; i++)
            if (F->expr_at[f.expr[i]] < 2) {
                F->view_at[k] = 1;
                return 0;
            }
        if (fast_grow((void **)&F->forms, &F->cap_forms, F->nforms + 1, sizeof *F->forms) ||
            F->nforms >= UINT32_MAX - 2) {
            F->failed = 1;
            return 0;
        }
        F->forms[F->nforms] = f;
        F->view_at[k] = F->nforms + 2;
        F->nforms++;
    }
    if (F->view_at[k] >= 2) {
        const vform_t *f = &F->forms[F->view_at[k] - 2];
        if (f->misses > 4096 && f->misses > 2 * f->hits)
            F->view_at[k] = 1; /* values that rarely repeat (an HBM offset): parse them */
        else
            memo_add(A, k, F->rec_val, F->nrec, arg->index);
    }
    return 0;
}

typedef struct args_ctx {
    asm_state_t *A;
    uint32_t n;
} args_ctx_t;

static uint64_t args_hash_at(void *ctx, uint32_t first)
{
    args_ctx_t *c = ctx;
    return args_hash(&c->A->b.prog->args[first], c->n);
}

/* The first slot of an operand block equal to args[0..n) in prog->args, added if new.
 * UINT32_MAX when out of memory. n == 0 (nop) takes no slots. */
static uint32_t intern_args(asm_state_t *A, const isa_arg_t *args, uint32_t n)
{
    if (n == 0)
        return A->b.prog->nargs;
    intern_t *t = &A->args_tab[n];
    args_ctx_t ctx = {A, n};
    if (intern_reserve(t, args_hash_at, &ctx)) {
        A->oom = 1;
        return UINT32_MAX;
    }
    uint64_t ha = args_hash(args, n), tag = ha & 0xffffffff00000000ull;
    uint32_t h = (uint32_t)ha & (t->cap - 1);
    for (; t->slots[h]; h = (h + 1) & (t->cap - 1))
        if ((t->slots[h] & 0xffffffff00000000ull) == tag &&
            args_same(&A->b.prog->args[(uint32_t)t->slots[h] - 1], args, n))
            return (uint32_t)t->slots[h] - 1;
    uint32_t first = isa_builder_args(&A->b, n);
    if (first >= UINT32_MAX - 1) {
        A->oom = 1;
        return UINT32_MAX;
    }
    memcpy(&A->b.prog->args[first], args, n * sizeof *args);
    t->slots[h] = tag | (first + 1);
    t->n++;
    return first;
}

static int parse_slot_value(asm_state_t *A, const isa_slot_desc_t *sd, isa_arg_t *arg)
{
    arg->present = 1;
    switch (sd->kind) {
    case ISA_KIND_VIEW:
        return view_arg(A, arg);
    case ISA_KIND_SCALAR: {
        const isa_tok_t *t = TOK(A);
        if (t->kind == TK_IDENT && !at_view(A) && !tok_ident(t, "inf") && !tok_ident(t, "nan") &&
            !resolve(A, t, NS_INT) && !tok_ident(t, "core")) {
            if (core_owning(A, t, NS_TENSOR) >= 0)
                return undefined_tensor(A, t);
            return err_here(A, "%s: '%.*s' is neither a tensor nor a constant", sd->name,
                            (int)t->len, t->s);
        }
        if (at_view(A))
            return view_arg(A, arg);
        return parse_fexpr(A, &arg->v.f);
    }
    case ISA_KIND_FLOAT:
        return parse_fexpr(A, &arg->v.f);
    case ISA_KIND_INT:
        return parse_expr(A, &arg->v.i);
    case ISA_KIND_LIST: {
        if (expect(A, '[', "'[' starting a list"))
            return -1;
        int64_t vals[ISA_MAX_LIST];
        unsigned n = 0;
        if (!tok_is(TOK(A), ']')) {
            for (;;) {
                if (n == ISA_MAX_LIST)
                    return err_here(A, "list too long (at most %d)", ISA_MAX_LIST);
                if (parse_expr(A, &vals[n]))
                    return -1;
                n++;
                if (!accept(A, ','))
                    break;
            }
        }
        if (expect(A, ']', "']' or ','"))
            return -1;
        /* each list is stored anew (lists are not interned): a replay that reused the
         * first one would change the program's layout, so such lines are always parsed */
        A->fast.lrec_bad = 1;
        uint32_t idx = isa_builder_ints(&A->b, vals, n);
        if (idx == UINT32_MAX) {
            A->oom = 1;
            return -1;
        }
        arg->index = idx;
        arg->count = (uint16_t)n;
        return 0;
    }
    case ISA_KIND_ALU:
    case ISA_KIND_RED:
    case ISA_KIND_FUNC:
    case ISA_KIND_CMP:
        return parse_enum_slot(A, sd, arg);
    case ISA_KIND_GROUP: {
        const isa_tok_t *t = TOK(A);
        sym_t *y = t->kind == TK_IDENT ? sym_find(&A->syms, t->s, t->len, NS_GROUP, -1) : NULL;
        if (!y && t->kind == TK_IDENT)
            return err_here(A, "undefined group '%.*s'", (int)t->len, t->s);
        if (!y) {
            char b[64];
            return err_here(A, "expected a group name, found %s", tok_desc(t, b, sizeof b));
        }
        A->pos++;
        arg->v.i = y->value;
        return 0;
    }
    default:
        return err_here(A, "internal error: bad slot kind");
    }
}

static int find_sem(asm_state_t *A, const isa_tok_t *t, uint8_t *index)
{
    sym_t *y = t->kind == TK_IDENT ? resolve(A, t, NS_SEM) : NULL;
    if (!y) {
        char b[64];
        int32_t c = t->kind == TK_IDENT ? core_owning(A, t, NS_SEM) : -1;
        if (c >= 0)
            return err_at(A, t->col, "undefined semaphore '%.*s' on core %d (one is declared "
                                     "on core %d; semaphores are private to a core)",
                          (int)t->len, t->s, A->core < 0 ? 0 : A->core, c);
        if (t->kind == TK_IDENT)
            return err_at(A, t->col, "undefined semaphore '%.*s'", (int)t->len, t->s);
        return err_at(A, t->col, "expected a semaphore name, found %s", tok_desc(t, b, sizeof b));
    }
    *index = (uint8_t)y->value;
    return 0;
}

static int parse_clause_body(asm_state_t *A, isa_instr_t *in);

/*
 * One clause, optionally conditional: `post s if EXPR`, `wait s >= N if EXPR`. A clause whose
 * condition is zero is dropped, so that generated code needs no .if around the first or last
 * instruction of a pipeline. The limits (2 waits, 2 posts) count the clauses kept.
 */
static int parse_clause(asm_state_t *A, isa_instr_t *in)
{
    isa_instr_t tmp;
    memset(&tmp, 0, sizeof tmp);
    const isa_tok_t *kw = TOK(A);
    fast_t *F = &A->fast;
    uint32_t item0 = F->nitems;
    F->role = ROLE_SYNC;
    int r = parse_clause_body(A, &tmp);
    F->role = ROLE_KEY;
    if (r)
        return -1;
    tclause_t *tc = NULL;
    if (F->lrec) {
        /* the clause, kept or not, for the line's template */
        if (F->nclauses == TM_MAX_CLAUSES || F->nitems > item0 + 1) {
            F->lrec_bad = 1;
        } else {
            const isa_sync_t *y = tmp.nwait ? &tmp.wait[0] : &tmp.post[0];
            tc = &F->clauses[F->nclauses++];
            int has_val = F->nitems > item0;
            *tc = (tclause_t){tmp.nwait != 0, y->sem, y->op, has_val ? (uint8_t)item0 : 0xff,
                              0xff, has_val ? 0 : y->value};
        }
    }
    if (TOK(A)->kind == TK_IDENT && tok_ident(TOK(A), "if")) {
        A->pos++;
        int64_t cond;
        item0 = F->nitems;
        F->role = ROLE_COND;
        r = parse_expr(A, &cond);
        F->role = ROLE_KEY;
        if (r)
            return -1;
        if (tc && F->nitems == item0 + 1)
            tc->cond = (uint8_t)item0;
        else if (F->lrec)
            F->lrec_bad = 1;
        if (!cond)
            return 0;
    }
    if (tmp.nwait) {
        if (in->nwait == ISA_MAX_WAITS)
            return err_at(A, kw->col, "too many waits: at most %d per instruction",
                          ISA_MAX_WAITS);
        in->wait[in->nwait++] = tmp.wait[0];
    } else {
        if (in->npost == ISA_MAX_POSTS)
            return err_at(A, kw->col, "too many posts: at most %d per instruction",
                          ISA_MAX_POSTS);
        in->post[in->npost++] = tmp.post[0];
    }
    return 0;
}

static int parse_clause_body(asm_state_t *A, isa_instr_t *in)
{
    const isa_tok_t *kw = TOK(A);
    if (tok_ident(kw, "wait")) {
        A->pos++;
        if (in->nwait == ISA_MAX_WAITS)
            return err_at(A, kw->col, "too many waits: at most %d per instruction",
                          ISA_MAX_WAITS);
        isa_sync_t *s = &in->wait[in->nwait];
        if (find_sem(A, TOK(A), &s->sem))
            return -1;
        A->pos++;
        if (accept(A, OP_GE))
            s->op = ISA_WAIT_GE;
        else if (accept(A, OP_EQ))
            s->op = ISA_WAIT_EQ;
        else {
            char b[64];
            return err_here(A, "expected '>=' or '==' after the semaphore in a wait clause, "
                               "found %s", tok_desc(TOK(A), b, sizeof b));
        }
        uint32_t col = TOK(A)->col;
        int64_t v;
        if (parse_expr(A, &v))
            return -1;
        if (v < INT32_MIN || v > INT32_MAX)
            return err_at(A, col, "wait value %lld does not fit a 32-bit semaphore",
                          (long long)v);
        s->value = (int32_t)v;
        in->nwait++;
        return 0;
    }
    if (tok_ident(kw, "post")) {
        A->pos++;
        if (in->npost == ISA_MAX_POSTS)
            return err_at(A, kw->col, "too many posts: at most %d per instruction",
                          ISA_MAX_POSTS);
        isa_sync_t *s = &in->post[in->npost];
        if (find_sem(A, TOK(A), &s->sem))
            return -1;
        A->pos++;
        s->op = ISA_POST_ADD;
        s->value = 1;
        int has_value = 1;
        if (accept(A, OP_PLUSEQ))
            s->op = ISA_POST_ADD;
        else if (accept(A, OP_MINUSEQ))
            s->op = ISA_POST_SUB;
        else if (accept(A, '='))
            s->op = ISA_POST_SET;
        else
            has_value = 0;
        if (has_value) {
            uint32_t col = TOK(A)->col;
            int64_t v;
            if (parse_expr(A, &v))
                return -1;
            if (v < INT32_MIN || v > INT32_MAX)
                return err_at(A, col, "post value %lld does not fit a 32-bit semaphore",
                              (long long)v);
            s->value = (int32_t)v;
        }
        in->npost++;
        return 0;
    }
    char b[64];
    return err_here(A, "expected 'wait' or 'post' after '|', found %s",
                    tok_desc(kw, b, sizeof b));
}

static size_t page_bytes(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* Room for more instructions in stream `idx`: its first mapping, the next pages of its
 * mapping, or a mapping twice as large. */
static int stream_grow(asm_state_t *A, instr_vec_t *s, uint32_t idx)
{
    if (!s->map) {
        uint64_t before = 0; /* instructions of the streams before it, so far */
        for (uint32_t j = 0; j < idx; j++)
            before += A->streams[j].n;
        s->head = (uint32_t)(before * sizeof(isa_instr_t) % page_bytes());
        void *m = mmap(NULL, STREAM_FIRST_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        s->map = m;
        s->map_bytes = s->ready = STREAM_FIRST_BYTES; /* small: faulted in as written */
    } else {
        if (s->ready == s->map_bytes) {
            void *m = mremap(s->map, s->map_bytes, s->map_bytes * 2, MREMAP_MAYMOVE);
            if (m == MAP_FAILED)
                return -1;
            s->map = m;
            s->map_bytes *= 2;
        }
        size_t more = s->map_bytes - s->ready;
        if (more > STREAM_POPULATE_BYTES)
            more = STREAM_POPULATE_BYTES;
        isa_populate(s->map + s->ready, more); /* written right after */
        s->ready += more;
    }
    s->cap = (uint32_t)((s->ready - s->head) / sizeof(isa_instr_t));
    return 0;
}

/* The next instruction of stream (core, engine), to be filled in (before the next call: the
 * stream may move); NULL after reporting the instruction limit or running out of memory. */
static isa_instr_t *stream_slot(asm_state_t *A, uint32_t core, int engine)
{
    uint32_t idx = core * ISA_ENGINE_COUNT + (uint32_t)engine;
    instr_vec_t *s = &A->streams[idx];
    uint64_t max_instrs = A->opt->max_instructions ? A->opt->max_instructions : ASM_MAX_INSTRS;
    if (A->emitted >= max_instrs) {
        if (!A->limit_hit)
            err_at(A, 1, "the program has more than %llu instructions (the assembler's limit)",
                   (unsigned long long)max_instrs);
        A->limit_hit = 1;
        return NULL;
    }
    if (s->n == s->cap && stream_grow(A, s, idx)) {
        A->oom = 1;
        return NULL;
    }
    A->emitted++;
    return (isa_instr_t *)(s->map + s->head) + s->n++;
}

static int stream_push(asm_state_t *A, uint32_t core, int engine, const isa_instr_t *in)
{
    isa_instr_t *slot = stream_slot(A, core, engine);
    if (!slot)
        return -1;
    *slot = *in;
    if (in->line >= A->line_end)
        A->line_end = in->line + 1;
    return 0;
}

/* Run the static checks on an emitted instruction, reporting at the right column. */
static int check_emitted(asm_state_t *A, const isa_instr_t *in, const uint32_t *slot_cols,
                         uint32_t instr_col)
{
    char msg[512];
    int bad = isa_check_instr_memo(&A->checked, A->b.prog, A->core < 0 ? 0 : (uint32_t)A->core,
                                   in, &A->geo, msg, sizeof msg);
    if (!bad)
        return 0;
    uint32_t col = instr_col;
    if (bad >= 1 && bad <= ISA_MAX_SLOTS && slot_cols[bad - 1])
        col = slot_cols[bad - 1];
    return err_at(A, col, "%s", msg);
}

/*
 * After a flag's name: `=EXPR` lets an expression decide it (non-zero sets it), so generated
 * code writes `matmul ps, w, x, acc=k>0` instead of three branches. Without `=` the flag is
 * set.
 */
static int parse_flag_value(asm_state_t *A, int *on)
{
    *on = 1;
    if (!accept(A, '='))
        return 0;
    int64_t v;
    if (parse_expr(A, &v))
        return -1;
    *on = v != 0;
    return 0;
}

/* Does token t name the flag slot of this op? */
static int flag_slot(const isa_op_info_t *info, const isa_tok_t *t)
{
    /* followed by the end, ',', '|' or '=EXPR' (parse_flag_value) */
    if (t->kind != TK_IDENT || !(t[1].kind == TK_END || tok_is(&t[1], ',') ||
                                 tok_is(&t[1], '|') || tok_is(&t[1], '=')))
        return -1;
    for (unsigned i = 0; i < info->nslots; i++)
        if (info->slots[i].form == ISA_FORM_FLAG && strlen(info->slots[i].name) == t->len &&
            memcmp(info->slots[i].name, t->s, t->len) == 0)
            return (int)i;
    return -1;
}

static int option_slot(const isa_op_info_t *info, const isa_tok_t *t)
{
    if (t->kind != TK_IDENT || !tok_is(&t[1], '='))
        return -1;
    for (unsigned i = 0; i < info->nslots; i++)
        if (info->slots[i].form == ISA_FORM_OPTION && strlen(info->slots[i].name) == t->len &&
            memcmp(info->slots[i].name, t->s, t->len) == 0)
            return (int)i;
    return -2; /* looks like an option, but this op has none by that name */
}

/* Human-readable usage of an instruction, built from its ops.def signature:
 * "dma D, SRC [, queue=N] [, accumulate]". */
static const char *op_usage(const isa_op_info_t *info, char *buf, size_t n)
{
    size_t at = 0;
#define PUT(...)                                                                               \
    do {                                                                                       \
        int w_ = snprintf(buf + at, n - at, __VA_ARGS__);                                      \
        if (w_ > 0)                                                                            \
            at = at + (size_t)w_ < n ? at + (size_t)w_ : n - 1;                                \
    } while (0)
    PUT("%s", info->mnemonic);
    for (unsigned i = 0; i < info->nslots; i++) {
        const isa_slot_desc_t *sd = &info->slots[i];
        const char *sep = i == 0 ? " " : ", ";
        static const char *const placeholder[] = {"VIEW", "S", "F", "N", "[...]", "OP", "OP",
                                                  "FUNC", "CMP", "GROUP", ""};
        if (sd->form == ISA_FORM_FLAG)
            PUT(" [%s%s]", i == 0 ? "" : ", ", sd->name);
        else if (sd->form == ISA_FORM_OPTION)
            PUT("%s%s%s=%s%s", sd->optional ? " [" : sep, sd->optional && i ? ", " : "",
                sd->name, placeholder[sd->kind], sd->optional ? "]" : "");
        else
            PUT("%s%s%s%s", sd->optional ? " [" : sep, sd->optional && i ? ", " : "", sd->name,
                sd->optional ? "]" : "");
    }
#undef PUT
    return buf;
}

/* "dve pool": the engines on which an instruction is legal. */
static const char *op_engines(const isa_op_info_t *info, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int e = 0; e < ISA_ENGINE_COUNT; e++)
        if (info->engines & (1u << e)) {
            size_t at = strlen(buf);
            snprintf(buf + at, n - at, "%s%s", at ? " " : "", isa_engine_name((isa_engine_t)e));
        }
    return buf;
}

/* Directive names, to recognise a forgotten dot ("loop i = 0, 4"). */
static int is_directive_name(const isa_tok_t *t)
{
    static const char *const names[] = {"arch", "chips", "let", "loop", "endloop", "if",
                                        "elif", "else", "endif", "hbm", "sbuf", "psum",
                                        "sem", "group", "core", "engine"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (tok_ident(t, names[i]))
            return 1;
    return 0;
}

static int instr_parse(asm_state_t *A)
{
    const isa_tok_t *mn = TOK(A);
    /* the opcode was looked up once per source line by the structure pass */
    uint16_t cached = A->info[A->cur_line].op;
    isa_op_t op = cached == UINT16_MAX ? ISA_OP_COUNT : (isa_op_t)cached;
    char ub[256];
    if (op == ISA_OP_COUNT) {
        if (is_directive_name(mn))
            return err_here(A, "unknown instruction '%.*s' (the directive is '.%.*s')",
                            (int)mn->len, mn->s, (int)mn->len, mn->s);
        return err_here(A, "unknown instruction '%.*s'", (int)mn->len, mn->s);
    }
    if (A->engine < 0) {
        if (A->in_core_block)
            return err_here(A, "instruction '%.*s' has no engine: each .core block starts "
                               "without one; put '.engine NAME' (%s) before it", (int)mn->len,
                            mn->s, engine_list);
        return err_here(A, "instruction '%.*s' before any .engine directive: put '.engine "
                           "NAME' (%s) before it", (int)mn->len, mn->s, engine_list);
    }
    const isa_op_info_t *info = isa_op_info(op);
    if (!(info->engines & (1u << A->engine)))
        return err_here(A, "'%s' is not legal on engine %s (legal on: %s)", info->mnemonic,
                        isa_engine_name((isa_engine_t)A->engine),
                        op_engines(info, ub, sizeof ub));
    A->pos++;
    A->seen_decl = 1;

    isa_arg_t args[ISA_MAX_SLOTS];
    uint32_t cols[ISA_MAX_SLOTS];
    memset(args, 0, sizeof args);
    memset(cols, 0, sizeof cols);
    /* matmul D, STAT, MOV is shorthand for ldweights STAT + matmul D, MOV */
    isa_arg_t stat_arg;
    uint32_t stat_col = 0;
    int shorthand = 0;
    unsigned npos = 0;
    int first_item = 1;
    unsigned required = 0;
    unsigned flags_seen = 0; /* flag slots given, set or not (FLAG=EXPR may clear one) */
    for (unsigned i = 0; i < info->nslots; i++)
        if (info->slots[i].form == ISA_FORM_POSITIONAL && !info->slots[i].optional)
            required++;
    while (TOK(A)->kind != TK_END && !tok_is(TOK(A), '|')) {
        if (!first_item && expect(A, ',', "',' between operands"))
            return -1;
        first_item = 0;
        const isa_tok_t *t = TOK(A);
        int s;
        /* required positionals come first; after them a bare flag name is the flag */
        if (npos >= required && (s = flag_slot(info, t)) >= 0) {
            if (args[s].present || (flags_seen >> s & 1u))
                return err_here(A, "flag '%.*s' given twice", (int)t->len, t->s);
            flags_seen |= 1u << s;
            cols[s] = t->col;
            A->pos++;
            int on = 1;
            if (parse_flag_value(A, &on))
                return -1;
            args[s].present = (uint8_t)on;
            args[s].v.i = on;
            continue;
        }
        s = option_slot(info, t);
        if (s >= 0) {
            if (args[s].present)
                return err_here(A, "option '%.*s' given twice", (int)t->len, t->s);
            A->pos += 2;
            cols[s] = TOK(A)->col;
            if (parse_slot_value(A, &info->slots[s], &args[s]))
                return -1;
            continue;
        }
        if (s == -2)
            return err_here(A, "'%s' has no option '%.*s' (usage: %s)", info->mnemonic,
                            (int)t->len, t->s, op_usage(info, ub, sizeof ub));
        /* positional */
        if (op == ISA_OP_MATMUL && npos == 2 && !shorthand && t->kind == TK_IDENT) {
            /* third view: shorthand; what we parsed as MOV was STAT */
            shorthand = 1;
            stat_arg = args[1];
            stat_col = cols[1];
            memset(&args[1], 0, sizeof args[1]);
            cols[1] = t->col;
            if (parse_slot_value(A, &info->slots[1], &args[1]))
                return -1;
            continue;
        }
        unsigned k = 0, slot = UINT32_MAX;
        for (unsigned i = 0; i < info->nslots; i++)
            if (info->slots[i].form == ISA_FORM_POSITIONAL) {
                if (k == npos) {
                    slot = i;
                    break;
                }
                k++;
            }
        if (slot == UINT32_MAX) {
            int has_flags = 0;
            for (unsigned i = 0; i < info->nslots; i++)
                has_flags |= info->slots[i].form == ISA_FORM_FLAG;
            if (has_flags && t->kind == TK_IDENT && flag_slot(info, t) < 0 &&
                !tok_is(&t[1], '[') && !tok_is(&t[1], ':') && !find_tensor(A, t))
                return err_here(A, "'%s' has no flag '%.*s' (usage: %s)", info->mnemonic,
                                (int)t->len, t->s, op_usage(info, ub, sizeof ub));
            return err_here(A, "too many operands for '%s' (usage: %s)", info->mnemonic,
                            op_usage(info, ub, sizeof ub));
        }
        cols[slot] = t->col;
        if (parse_slot_value(A, &info->slots[slot], &args[slot]))
            return -1;
        npos++;
    }
    isa_instr_t in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)op;
    in.engine = (uint8_t)A->engine;
    in.line = A->loc_active ? A->loc_line : A->lineno;
    while (accept(A, '|'))
        if (parse_clause(A, &in))
            return -1;
    if (expect_end(A))
        return -1;
    for (unsigned i = 0; i < info->nslots; i++)
        if (!info->slots[i].optional && !args[i].present) {
            const isa_slot_desc_t *sd = &info->slots[i];
            return err_at(A, mn->col, "'%s' needs %s%s%s (usage: %s)", info->mnemonic,
                          sd->form == ISA_FORM_OPTION ? "option " : "operand ", sd->name,
                          sd->form == ISA_FORM_OPTION ? "=..." : "",
                          op_usage(info, ub, sizeof ub));
        }
    /* optional positionals come in pairs that go together (OP1 with S1) */
    if (op == ISA_OP_TENSOR_SCALAR && args[4].present != args[5].present)
        return err_at(A, mn->col, "tensor_scalar: OP1 and S1 go together (usage: %s)",
                      op_usage(info, ub, sizeof ub));

    uint32_t core = A->core < 0 ? 0 : (uint32_t)A->core;
    if (shorthand) {
        /* ldweights STAT gets the waits, matmul the posts */
        const isa_op_info_t *lw = isa_op_info(ISA_OP_LDWEIGHTS);
        isa_instr_t l;
        memset(&l, 0, sizeof l);
        l.op = ISA_OP_LDWEIGHTS;
        l.engine = in.engine;
        l.line = in.line;
        l.nwait = in.nwait;
        memcpy(l.wait, in.wait, sizeof l.wait);
        in.nwait = 0;
        memset(in.wait, 0, sizeof in.wait);
        isa_arg_t largs[ISA_MAX_SLOTS];
        memset(largs, 0, sizeof largs);
        largs[0] = stat_arg;
        uint32_t first = intern_args(A, largs, lw->nslots);
        if (first == UINT32_MAX)
            return -1;
        l.args = first;
        A->fast.out_largs = first;
        uint32_t lcols[ISA_MAX_SLOTS] = {stat_col};
        if (check_emitted(A, &l, lcols, mn->col) || stream_push(A, core, A->engine, &l))
            return -1;
    }
    /* (nop has no slots: no allocation, where the builder would index a NULL array) */
    uint32_t first = intern_args(A, args, info->nslots);
    if (first == UINT32_MAX)
        return -1;
    in.args = first;
    if (check_emitted(A, &in, cols, mn->col))
        return -1;
    A->fast.out_args = first;
    A->fast.out_shorthand = shorthand;
    return stream_push(A, core, A->engine, &in);
}

/* ---- compiled loop bodies: instructions ------------------------------------------------------------ */

static uint64_t imemo_hash(uint32_t tmpl, const int64_t *key, uint32_t n)
{
    /* a multiplier per position, summed: independent multiplies (a chain of mix64 was a
     * tenth of a replay), then one mix */
    uint64_t h = (uint64_t)tmpl * 0xff51afd7ed558ccdull;
    for (uint32_t i = 0; i < n; i++)
        h += (uint64_t)key[i] * (0x9e3779b97f4a7c15ull + 2 * (uint64_t)i);
    return fmix64(h);
}

/* The memo slot of (template, KEY values): a filled one, or the empty one where it goes.
 * NULL when the table is empty. */
static inline imemo_t *imemo_find(fast_t *F, uint64_t h, uint32_t tmpl, const int64_t *key,
                           uint32_t n)
{
    if (!F->cap_imemo)
        return NULL;
    for (uint32_t i = (uint32_t)h & (F->cap_imemo - 1);; i = (i + 1) & (F->cap_imemo - 1)) {
        imemo_t *m = &F->imemo[i];
        if (!m->tmpl)
            return m;
        if (m->hash == h && m->tmpl == tmpl + 1) {
            const int64_t *v = &F->vals[m->vals];
            uint32_t k = 0;
            while (k < n && v[k] == key[k])
                k++;
            if (k == n)
                return m;
        }
    }
}

static void imemo_add(fast_t *F, uint32_t tmpl, const int64_t *key, uint32_t n, uint32_t args,
                      uint32_t largs)
{
    if (table_reserve((void **)&F->imemo, &F->cap_imemo, F->nimemo, sizeof *F->imemo,
                      offsetof(imemo_t, tmpl))) {
        F->failed = 1;
        return;
    }
    if (fast_grow((void **)&F->vals, &F->cap_vals, F->nvals + n + 1, sizeof *F->vals)) {
        F->failed = 1;
        return;
    }
    uint64_t h = imemo_hash(tmpl, key, n);
    imemo_t *m = imemo_find(F, h, tmpl, key, n);
    if (m->tmpl)
        return;
    if (n)
        memcpy(&F->vals[F->nvals], key, n * sizeof *key);
    *m = (imemo_t){h, tmpl + 1, F->nvals, args, largs};
    F->nvals += n;
    F->nimemo++;
}

/* A name read outside an expression, as lookup_int reads it; -1 where it would fail. */
static int eval_name(asm_state_t *A, uint32_t k, int64_t *out)
{
    const isa_tok_t *t = &A->cache_toks[k];
    sym_t *y = resolve(A, t, NS_INT);
    if (y && !y->hidden) {
        *out = y->value;
        return 0;
    }
    if (tok_ident(t, "core") && A->core >= 0 && A->in_core_block) {
        *out = A->core;
        return 0;
    }
    return -1;
}

/* The KEY values of a list of inputs (a condition counts as 0 or 1). */
static uint32_t tmpl_key(const titem_t *items, uint32_t n, const int64_t *val, int64_t *key)
{
    uint32_t nkey = 0;
    for (uint32_t i = 0; i < n; i++)
        if (items[i].role == ROLE_KEY)
            key[nkey++] = val[i];
        else if (items[i].role == ROLE_COND)
            key[nkey++] = val[i] != 0;
    return nkey;
}

/* Replay template ti at the current line: 0 done, -1 error (reported), 1 parse instead. */
static int instr_replay(asm_state_t *A, uint32_t ti)
{
    fast_t *F = &A->fast;
    const itmpl_t *tm = &F->tmpls[ti];
    int64_t val[TM_MAX_ITEMS], key[TM_MAX_ITEMS];
    /* the inputs, and the KEY values with their hash as imemo_hash computes it */
    uint32_t nkey = 0;
    uint64_t h = (uint64_t)ti * 0xff51afd7ed558ccdull;
    for (uint32_t i = 0; i < tm->nitems; i++) {
        const titem_t *it = &tm->items[i];
        if (it->kind == IT_EXPR ? eval_at(A, it->code, &val[i]) : eval_name(A, it->tok, &val[i]))
            return 1;
        if (it->role != ROLE_SYNC) {
            int64_t kv = it->role == ROLE_KEY ? val[i] : val[i] != 0;
            h += (uint64_t)kv * (0x9e3779b97f4a7c15ull + 2 * (uint64_t)nkey);
            key[nkey++] = kv;
        }
    }
    imemo_t *m = imemo_find(F, fmix64(h), ti, key, nkey);
    if (!m || !m->tmpl) {
        F->tmpls[ti].misses++;
        return 1;
    }
    isa_sync_t wait[ISA_MAX_WAITS], post[ISA_MAX_POSTS];
    uint8_t nwait = 0, npost = 0;
    for (uint32_t i = 0; i < tm->nclauses; i++) {
        const tclause_t *c = &tm->clauses[i];
        if (c->cond != 0xff && !val[c->cond])
            continue;
        int64_t v = c->val == 0xff ? c->cval : val[c->val];
        if (v < INT32_MIN || v > INT32_MAX)
            return 1;
        isa_sync_t y = {c->sem, c->op, 0, (int32_t)v};
        if (c->wait) {
            if (nwait == ISA_MAX_WAITS)
                return 1;
            wait[nwait++] = y;
        } else {
            if (npost == ISA_MAX_POSTS)
                return 1;
            post[npost++] = y;
        }
    }
    F->tmpls[ti].hits++;
    uint32_t core = A->core < 0 ? 0 : (uint32_t)A->core;
    uint32_t line = A->loc_active ? A->loc_line : A->lineno;
    if (line >= A->line_end)
        A->line_end = line + 1;
    if (tm->shorthand) {
        /* as instr_parse: the ldweights gets the waits, the matmul the posts */
        isa_instr_t *l = stream_slot(A, core, A->engine);
        if (!l)
            return -1;
        *l = (isa_instr_t){.op = ISA_OP_LDWEIGHTS, .engine = (uint8_t)A->engine,
                           .nwait = nwait, .args = m->largs, .line = line};
        for (uint8_t k = 0; k < nwait; k++)
            l->wait[k] = wait[k];
        nwait = 0;
    }
    isa_instr_t *in = stream_slot(A, core, A->engine);
    if (!in)
        return -1;
    /* a nop takes no slots: its block starts where the pool ends, as intern_args says */
    *in = (isa_instr_t){.op = tm->op, .engine = (uint8_t)A->engine, .nwait = nwait,
                        .npost = npost, .line = line,
                        .args = tm->noslots ? A->b.prog->nargs : m->args};
    for (uint8_t k = 0; k < nwait; k++)
        in->wait[k] = wait[k];
    for (uint8_t k = 0; k < npost; k++)
        in->post[k] = post[k];
    return 0;
}

/* After a recorded parse of line li that emitted its instruction(s): the line's template
 * (the same one, or a new one) and the memo entry of these inputs. */
static void tmpl_learn(asm_state_t *A, uint32_t li)
{
    fast_t *F = &A->fast;
    for (uint32_t i = 0; i < F->nitems; i++)
        if (F->items[i].kind == IT_EXPR && F->expr_at[F->items[i].tok] < 2) {
            F->tmpl_at[li] = 1; /* an expression that did not compile: parse this line */
            return;
        }
    itmpl_t c;
    memset(&c, 0, sizeof c);
    c.syms = A->syms.n;
    c.core = A->core;
    c.engine = (int16_t)A->engine;
    c.op = A->info[li].op;
    c.shorthand = (uint8_t)F->out_shorthand;
    c.noslots = isa_op_info((isa_op_t)c.op)->nslots == 0;
    c.nitems = (uint8_t)F->nitems;
    c.nclauses = (uint8_t)F->nclauses;
    memcpy(c.items, F->items, F->nitems * sizeof *c.items);
    for (uint32_t i = 0; i < c.nitems; i++)
        if (c.items[i].kind == IT_EXPR)
            c.items[i].code = F->expr_at[c.items[i].tok] - 2; /* compiled: checked above */
    memcpy(c.clauses, F->clauses, F->nclauses * sizeof *c.clauses);
    int64_t key[TM_MAX_ITEMS];
    c.nkey = (uint8_t)tmpl_key(F->items, F->nitems, F->item_val, key);
    uint32_t ti = F->tmpl_at[li];
    itmpl_t *old = ti >= 2 ? &F->tmpls[ti - 2] : NULL;
    if (old && old->misses > 4096 && old->misses > 2 * old->hits) {
        F->tmpl_at[li] = 1; /* inputs that rarely repeat: remembering them is no use */
        return;
    }
    int same = old && old->syms == c.syms && old->core == c.core && old->engine == c.engine &&
               old->op == c.op && old->shorthand == c.shorthand && old->nitems == c.nitems &&
               old->nclauses == c.nclauses;
    for (uint32_t i = 0; same && i < c.nitems; i++)
        same = old->items[i].tok == c.items[i].tok && old->items[i].kind == c.items[i].kind &&
               old->items[i].role == c.items[i].role;
    for (uint32_t i = 0; same && i < c.nclauses; i++) {
        const tclause_t *x = &old->clauses[i], *y = &c.clauses[i];
        same = x->wait == y->wait && x->sem == y->sem && x->op == y->op && x->val == y->val &&
               x->cond == y->cond && x->cval == y->cval;
    }
    if (!same) {
        /* first parse, or another core, engine or symbol table: a new template */
        uint32_t tries = old ? old->tries + 1u : 1u;
        if (tries > TM_MAX_TRIES || F->ntmpls >= UINT32_MAX - 2 ||
            fast_grow((void **)&F->tmpls, &F->cap_tmpls, F->ntmpls + 1, sizeof *F->tmpls)) {
            F->tmpl_at[li] = 1;
            return;
        }
        c.tries = tries;
        F->tmpls[F->ntmpls] = c;
        ti = F->ntmpls + 2;
        F->tmpl_at[li] = ti;
        F->ntmpls++;
    }
    imemo_add(F, ti - 2, key, c.nkey, F->out_args, F->out_largs);
}

/* An instruction statement: replayed when its line ran before with the same inputs,
 * otherwise parsed (and recorded, in a loop body). `replay` 0: the replay was tried. */
static int statement_instr(asm_state_t *A, int replay)
{
    fast_t *F = &A->fast;
    uint32_t li = A->cur_line;
    if (A->info[li].cache == UINT32_MAX || A->info[li].op == UINT16_MAX ||
        kept_index(A) == UINT32_MAX)
        return instr_parse(A);
    if (!F->tmpl_at && !(F->tmpl_at = calloc(A->nlines, sizeof *F->tmpl_at))) {
        F->failed = 1;
        return instr_parse(A);
    }
    uint32_t ti = F->tmpl_at[li];
    if (ti == 1)
        return instr_parse(A);
    if (ti >= 2 && replay) {
        const itmpl_t *tm = &F->tmpls[ti - 2];
        if (tm->core == A->core && tm->engine == A->engine && tm->syms == A->syms.n) {
            int r = instr_replay(A, ti - 2);
            if (r <= 0)
                return r;
        }
    }
    F->lrec = 1;
    F->lrec_bad = 0;
    F->nitems = 0;
    F->nclauses = 0;
    F->role = ROLE_KEY;
    F->out_shorthand = 0;
    F->out_largs = 0;
    uint32_t syms = A->syms.n;
    int r = instr_parse(A);
    F->lrec = 0;
    if (r == 0 && !F->lrec_bad && !F->failed && A->syms.n == syms && F->tmpl_at[li] != 1)
        tmpl_learn(A, li);
    return r;
}

/* ---- directives ------------------------------------------------------------------------------------ */

static int statement(asm_state_t *A)
{
    const isa_tok_t *t = TOK(A);
    if (t->kind == TK_IDENT)
        return statement_instr(A, 1);
    if (t->kind != TK_DIRECTIVE) {
        char b[64];
        return err_here(A, "expected a directive or an instruction, found %s",
                        tok_desc(t, b, sizeof b));
    }
    A->pos++;
#define IS(word) (t->len == sizeof(word) - 1 && memcmp(t->s, word, t->len) == 0)
    /* .let first: it is the directive loop bodies run most */
    if (IS("let")) {
        const isa_tok_t *n = TOK(A);
        if (n->kind != TK_IDENT) {
            char b[64];
            return err_here(A, "expected a name after .let, found %s", tok_desc(n, b, sizeof b));
        }
        if (tok_ident(n, "core"))
            return err_here(A, "'core' is reserved (it is the core being emitted); choose "
                               "another name");
        A->pos++;
        int64_t v;
        if (expect(A, '=', "'='"))
            return -1;
        uint32_t k = kept_index(A);
        if (parse_expr(A, &v) || expect_end(A))
            return -1;
        sym_t *y = resolve(A, n, NS_INT); /* the global one (cached for kept lines) */
        if (!y) {
            y = sym_add(&A->syms, n->s, n->len, NS_INT, -1);
            if (!y) {
                A->oom = 1;
                return -1;
            }
        }
        if (A->info[A->cur_line].cache != UINT32_MAX)
            y->varying = 1; /* set again at each iteration of the loop around it */
        sym_write(A, y, v);
        uint32_t code[3] = {code_at(&A->fast, k), UINT32_MAX, UINT32_MAX};
        lform_record(A, A->cur_line, LF_LET, (uint32_t)(y - A->syms.syms), code);
        return 0;
    }
    if (IS("arch")) {
        const isa_tok_t *n = TOK(A);
        if (A->seen_decl)
            return err_at(A, t->col, ".arch must come before declarations and instructions");
        if (n->kind != TK_IDENT && n->kind != TK_INT)
            return err_here(A, "expected an architecture name");
        /* names like trn1-32xl: glue identifier, '-' and number tokens without spaces */
        char name[32];
        size_t len = 0;
        const char *start = n->s;
        const isa_tok_t *e = n;
        while (e->kind != TK_END && e->s == start + len) {
            if (len + e->len >= sizeof name)
                return err_at(A, n->col, "architecture name too long");
            memcpy(name + len, e->s, e->len);
            len += e->len;
            e++;
            A->pos++;
        }
        name[len] = 0;
        if (expect_end(A))
            return -1;
        if (A->opt->arch_lookup) {
            isa_geometry_t g;
            if (A->opt->arch_lookup(A->opt->arch_ctx, name, &g))
                return err_at(A, n->col, "unknown architecture '%s'", name);
            A->geo = g;
        }
        memcpy(A->b.prog->arch, name, len + 1);
        return 0;
    }
    if (IS("loc")) {
        /* extension: the source line the following instructions record (the disassembler
         * writes it so that text carries the line map back to the identical binary) */
        uint32_t col = TOK(A)->col;
        int64_t n;
        if (parse_expr(A, &n) || expect_end(A))
            return -1;
        if (n < 0 || n > UINT32_MAX)
            return err_at(A, col, "line %lld out of range 0..%u", (long long)n, UINT32_MAX);
        A->loc_active = 1;
        A->loc_line = (uint32_t)n;
        return 0;
    }
    if (IS("source")) {
        /* extension: the source file name of the line map: the rest of the line as written
         * (the lexer keeps it as one raw token) */
        const isa_tok_t *name = TOK(A);
        if (name->kind != TK_RAW)
            return err_here(A, "expected a source file name after .source");
        A->source = name->s;
        A->source_len = name->len;
        A->pos++;
        return expect_end(A);
    }
    if (IS("chips")) {
        uint32_t col = TOK(A)->col;
        int64_t n;
        if (parse_expr(A, &n) || expect_end(A))
            return -1;
        if (A->seen_chips)
            return err_at(A, t->col, ".chips given twice");
        if (A->seen_core || A->seen_decl)
            return err_at(A, t->col, ".chips must come before .core, declarations and "
                                     "instructions");
        if (n < 1 || n > ISA_MAX_CHIPS) {
            /* assemble the rest as if for the largest system, so that the cores the program
             * names are not each reported again as out of range: one error, not fifty */
            A->seen_chips = 1;
            A->b.prog->chips = ISA_MAX_CHIPS;
            A->b.prog->ncores = ISA_MAX_CORES;
            return err_at(A, col, "chip count %lld out of range 1..%d", (long long)n,
                          ISA_MAX_CHIPS);
        }
        A->seen_chips = 1;
        A->b.prog->chips = (uint32_t)n;
        A->b.prog->ncores = (uint32_t)n * ISA_CORES_PER_CHIP;
        return 0;
    }
    if (IS("hbm") || IS("sbuf") || IS("psum")) {
        A->seen_decl = 1;
        return dir_tensor(A, IS("hbm") ? ISA_SPACE_HBM : IS("sbuf") ? ISA_SPACE_SBUF
                                                                    : ISA_SPACE_PSUM);
    }
    if (IS("sem")) {
        A->seen_decl = 1;
        return dir_sem(A);
    }
    if (IS("group")) {
        A->seen_decl = 1;
        return dir_group(A);
    }
    if (IS("engine")) {
        const isa_tok_t *n = TOK(A);
        int e = n->kind == TK_IDENT ? isa_engine_lookup(n->s, n->len) : -1;
        if (e < 0) {
            char b[64];
            if (n->kind == TK_IDENT)
                return err_here(A, "unknown engine '%.*s' (%s)", (int)n->len, n->s,
                                engine_list);
            return err_here(A, "expected an engine name (%s), found %s", engine_list,
                            tok_desc(n, b, sizeof b));
        }
        A->pos++;
        if (expect_end(A))
            return -1;
        A->engine = e;
        return 0;
    }
    if (IS("endloop") || IS("endif") || IS("else") || IS("elif"))
        return err_at(A, t->col, "'.%.*s' without a matching opening directive", (int)t->len,
                      t->s);
    if (IS("loop") || IS("if") || IS("core"))
        return err_at(A, t->col, "internal error: unexpected structural directive");
    return err_at(A, t->col, "unknown directive '.%.*s'", (int)t->len, t->s);
#undef IS
}

/* ---- structure and execution ------------------------------------------------------------------------ */



/* The structural kind of a line, found once (the execution pass replays lines often). */
static uint8_t classify_line(const isa_tok_t *t)
{
    if (t->kind != TK_DIRECTIVE)
        return LK_STMT;
    static const struct {
        const char *word;
        uint8_t kind;
    } words[] = {{"loop", LK_LOOP}, {"endloop", LK_ENDLOOP}, {"if", LK_IF},
                 {"elif", LK_ELIF}, {"else", LK_ELSE},       {"endif", LK_ENDIF},
                 {"core", LK_CORE}};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (dir_is(t, words[k].word))
            return words[k].kind;
    return LK_STMT;
}

/* The .if line that starts the chain line i (an .if, .elif or .else) belongs to. */
static uint32_t if_head(asm_state_t *A, uint32_t i)
{
    return A->info[i].kind == LK_IF ? i : A->info[i].head;
}

/* State of the structure pass between chunks. */
typedef struct scan {
    uint32_t *stack; /* open .loop/.if/.elif/.else lines */
    uint32_t sp, cap;
    uint32_t loops;  /* .loop lines on the stack */
    uint32_t last_core;
    int bad;
} scan_t;

static int keep_tokens(asm_state_t *A, const isa_tok_t *t, uint32_t n, uint32_t *at)
{
    if (A->ncache + (uint64_t)n > UINT32_MAX - 1)
        return -1;
    if (A->ncache + n > A->cap_cache) {
        uint64_t nc = A->cap_cache ? (uint64_t)A->cap_cache * 2 : 4096;
        while (nc < A->ncache + n)
            nc *= 2;
        if (nc > UINT32_MAX - 1)
            nc = UINT32_MAX - 1;
        isa_tok_t *p = realloc(A->cache_toks, (size_t)nc * sizeof *p);
        if (!p)
            return -1;
        A->cache_toks = p;
        tok_sym_t *q = realloc(A->cache_sym, (size_t)nc * sizeof *q);
        if (!q)
            return -1;
        memset(q + A->cap_cache, 0, (size_t)(nc - A->cap_cache) * sizeof *q);
        A->cache_sym = q;
        A->cap_cache = (uint32_t)nc;
    }
    memcpy(&A->cache_toks[A->ncache], t, n * sizeof *t);
    *at = A->ncache;
    A->ncache += n;
    return 0;
}

/*
 * One line of the structure pass: record it, match .loop/.endloop and .if/.elif/.else/
 * .endif, find where each .core block ends, and reject structure errors with a message
 * naming the block that is open. `t` are the line's tokens (ending in TK_END).
 */
static int scan_line(asm_state_t *A, scan_t *S, const isa_tok_t *t, uint32_t count,
                     uint32_t number)
{
    if (A->nlines == A->cap_lines) {
        uint32_t nc = A->cap_lines ? A->cap_lines * 2 : 1024;
        line_info_t *p = nc > A->cap_lines ? realloc(A->info, (size_t)nc * sizeof *p) : NULL;
        if (!p)
            return -1;
        A->info = p;
        A->cap_lines = nc;
    }
    if (S->sp == S->cap) {
        uint32_t nc = S->cap ? S->cap * 2 : 64;
        uint32_t *p = realloc(S->stack, (size_t)nc * sizeof *p);
        if (!p)
            return -1;
        S->stack = p;
        S->cap = nc;
    }
    uint32_t i = A->nlines++;
    line_info_t *li = &A->info[i];
    memset(li, 0, sizeof *li);
    const isa_tok_t *end = &t[count];
    li->next = UINT32_MAX;
    li->endif = UINT32_MAX;
    li->number = number;
    li->count = count;
    li->col = t->col;
    li->len = end->col - 1;
    li->start = (uint64_t)(end->s - li->len - A->text);
    li->kind = classify_line(t);
    li->op = UINT16_MAX;
    li->cache = UINT32_MAX;
    if (t->kind == TK_IDENT) {
        isa_op_t op = isa_op_lookup(t->s, t->len);
        li->op = (uint16_t)(op == ISA_OP_COUNT ? UINT16_MAX : op);
    }
    /* lines inside a loop are replayed: keep their tokens */
    if (S->loops && li->kind != LK_ENDLOOP && keep_tokens(A, t, count + 1, &li->cache))
        return -1;
    A->lineno = number;
    uint32_t *stack = S->stack, sp = S->sp;
    const line_info_t *top = sp ? &A->info[stack[sp - 1]] : NULL;
    uint32_t top_line = top ? top->number : 0;
    uint32_t head_line = top && top->kind != LK_LOOP ? A->info[if_head(A, stack[sp - 1])].number
                                                     : 0;
    if ((li->kind == LK_ENDLOOP || li->kind == LK_ENDIF) && count > 1) {
        char b[64];
        err_at(A, t[1].col, "unexpected %s after '.%.*s'", tok_desc(&t[1], b, sizeof b),
               (int)t->len, t->s);
        S->bad = 1;
    }
    switch (li->kind) {
    case LK_LOOP:
    case LK_IF:
        if (sp == ASM_MAX_NESTING) {
            err_at(A, t->col, "'.%.*s' nested too deeply (at most %d levels of .loop and .if)",
                   (int)t->len, t->s, ASM_MAX_NESTING);
            S->bad = 1;
        }
        stack[S->sp++] = i;
        S->loops += li->kind == LK_LOOP;
        break;
    case LK_ELIF:
    case LK_ELSE:
        if (!top) {
            err_at(A, t->col, "'.%.*s' without a matching .if", (int)t->len, t->s);
            S->bad = 1;
        } else if (top->kind == LK_LOOP) {
            err_at(A, t->col, "'.%.*s' without a matching .if: the innermost open block is "
                              "the .loop of line %u", (int)t->len, t->s, top_line);
            S->bad = 1;
        } else if (top->kind == LK_ELSE) {
            err_at(A, t->col, "'.%.*s' after the .else (line %u) of the .if of line %u",
                   (int)t->len, t->s, top_line, head_line);
            S->bad = 1;
        } else {
            A->info[stack[sp - 1]].next = i;
            li->head = if_head(A, stack[sp - 1]);
            stack[sp - 1] = i;
        }
        break;
    case LK_ENDIF:
        if (!top) {
            err_at(A, t->col, "'.endif' without a matching .if");
            S->bad = 1;
        } else if (top->kind == LK_LOOP) {
            err_at(A, t->col, "'.endif' without a matching .if: the innermost open block is "
                              "the .loop of line %u (close it with .endloop first)",
                   top_line);
            S->bad = 1;
        } else {
            uint32_t last = stack[--S->sp];
            A->info[last].next = i;
            for (uint32_t j = if_head(A, last); j != i; j = A->info[j].next)
                A->info[j].endif = i;
        }
        break;
    case LK_ENDLOOP:
        if (!top) {
            err_at(A, t->col, "'.endloop' without a matching .loop");
            S->bad = 1;
        } else if (top->kind != LK_LOOP) {
            err_at(A, t->col, "'.endloop' without a matching .loop: the innermost open block "
                              "is the .if of line %u (close it with .endif first)", head_line);
            S->bad = 1;
        } else {
            A->info[stack[--S->sp]].next = i;
            S->loops--;
        }
        break;
    case LK_CORE:
        if (top) {
            err_at(A, t->col, ".core must be at the top level, not inside the %s of line %u",
                   top->kind == LK_LOOP ? ".loop" : ".if",
                   top->kind == LK_LOOP ? top_line : head_line);
            S->bad = 1;
        } else {
            if (S->last_core != UINT32_MAX)
                A->info[S->last_core].next = i;
            S->last_core = i;
        }
        break;
    default:
        break;
    }
    return 0;
}

/*
 * The structure pass: lex the whole text chunk by chunk (reporting every lexical error),
 * and scan each line. Returns -1 when out of memory; structure errors go to the
 * diagnostics (and set *bad).
 */
static int scan_source(asm_state_t *A, int *bad)
{
    scan_t S;
    memset(&S, 0, sizeof S);
    S.last_core = UINT32_MAX;
    const char *text = A->text;
    size_t len = A->len, pos = 0;
    uint32_t base = 0;
    int rc = 0;
    /* a UTF-8 byte-order mark, as some editors write, is not part of the program */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        pos = 3;
    while (pos < len && !rc) {
        size_t end = pos;
        uint32_t nl = 0;
        while (end < len && nl < ASM_LEX_CHUNK) {
            const char *q = memchr(text + end, '\n', len - end);
            end = q ? (size_t)(q - text) + 1 : len;
            nl += q != NULL;
        }
        isa_lexed_t lx;
        A->lex_base = base;
        if (isa_lex(text + pos, end - pos, &lx, lex_error, A)) {
            rc = -1;
        } else {
            for (uint32_t k = 0; k < lx.nlines && !rc; k++)
                rc = scan_line(A, &S, &lx.toks[lx.lines[k].first], lx.lines[k].count,
                               base + lx.lines[k].number);
        }
        isa_lexed_free(&lx);
        base += nl;
        pos = end;
    }
    if (!rc) {
        if (S.last_core != UINT32_MAX)
            A->info[S.last_core].next = A->nlines;
        while (S.sp) {
            uint32_t i = S.stack[--S.sp];
            int is_loop = A->info[i].kind == LK_LOOP;
            if (!is_loop)
                i = if_head(A, i);
            A->lineno = A->info[i].number;
            err_at(A, A->info[i].col, "'.%s' is never closed (missing .%s)",
                   is_loop ? "loop" : "if", is_loop ? "endloop" : "endif");
            S.bad = 1;
        }
    }
    free(S.stack);
    *bad = S.bad;
    return rc;
}

static void begin_line(asm_state_t *A, uint32_t i)
{
    A->t = line_tok(A, i);
    A->pos = 0;
    A->ntok = A->info[i].count;
    A->lineno = A->info[i].number;
    A->cur_line = i;
    A->line_failed = 0;
    A->expr_depth = 0;
}

static int stop_now(asm_state_t *A)
{
    /* isa_diag_full, without a call per statement */
    return A->oom || A->limit_hit || A->diag->errors >= A->diag->limit;
}

/* Count one executed statement or loop iteration against ASM_MAX_STEPS. */
static int count_step_over(asm_state_t *A, uint32_t line)
{
    uint64_t max_steps = A->max_steps;
    if (!A->limit_hit)
        isa_diag_error(A->diag, A->opt->filename, line, 1,
                       "the program expands to more than %llu statements and loop iterations "
                       "(an assembly-time loop that is too long?)",
                       (unsigned long long)max_steps);
    A->limit_hit = 1;
    return -1;
}

static inline int count_step(asm_state_t *A, uint32_t line)
{
    return ++A->steps <= A->max_steps ? 0 : count_step_over(A, line);
}

static void exec_lines(asm_state_t *A, uint32_t first, uint32_t last);

/* The iterations of the .loop at line i, its header evaluated: variable symbol yi. */
static void run_loop(asm_state_t *A, uint32_t i, uint32_t yi, int64_t start, int64_t stop,
                     int64_t step)
{
    uint32_t end = A->info[i].next;
    /* Iteration count in unsigned arithmetic: START + k*STEP never overflows below. */
    uint64_t mag = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
    uint64_t iters = 0;
    if (step > 0 && start < stop)
        iters = ((uint64_t)stop - (uint64_t)start - 1) / mag + 1;
    else if (step < 0 && start > stop)
        iters = ((uint64_t)start - (uint64_t)stop - 1) / mag + 1;
    sym_t *y = &A->syms.syms[yi];
    int existed = !y->hidden;
    int64_t saved = y->value;
    y->varying = 1;
    sym_write(A, y, start);
    uint32_t line = A->info[i].number;
    int64_t v = start;
    A->loop_depth++;
    for (uint64_t k = 0; k < iters; k++) {
        if (count_step(A, line))
            break;
        sym_write(A, &A->syms.syms[yi], v);
        uint64_t failures = A->failures;
        exec_lines(A, i + 1, end);
        /* After a failed iteration the next ones would mostly repeat the errors (reported
         * once per line) at the cost of the whole loop: stop here. */
        if (stop_now(A) || A->failures != failures)
            break;
        if (k + 1 < iters)
            v += step;
    }
    A->loop_depth--;
    /* After the loop the name means what it meant before: the old value, or nothing. */
    if (existed)
        sym_write(A, &A->syms.syms[yi], saved);
    else
        sym_hide(A, &A->syms.syms[yi]);
}

static void exec_loop(asm_state_t *A, uint32_t i)
{
    const lform_t *lf = A->fast.lform ? &A->fast.lform[i] : NULL;
    if (lf && lf->kind == LF_LOOP) {
        /* compiled header: anything unusual runs the line as written below */
        int64_t start, stop, step = 1;
        if (!eval_at(A, lf->code[0], &start) && !eval_at(A, lf->code[1], &stop) &&
            (lf->code[2] == UINT32_MAX || !eval_at(A, lf->code[2], &step)) &&
            step != 0) {
            run_loop(A, i, lf->sym, start, stop, step);
            return;
        }
    }
    begin_line(A, i);
    A->pos = 1;
    const isa_tok_t *var = TOK(A);
    if (var->kind != TK_IDENT) {
        char b[64];
        err_here(A, "expected a loop variable name after .loop, found %s",
                 tok_desc(var, b, sizeof b));
        return;
    }
    if (tok_ident(var, "core")) {
        err_here(A, "'core' is reserved (it is the core being emitted); choose another loop "
                    "variable name");
        return;
    }
    A->pos++;
    int64_t start, stop, step = 1;
    uint32_t k[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX}; /* kept index of each expression */
    if (expect(A, '=', "'=' after the loop variable"))
        return;
    k[0] = kept_index(A);
    if (parse_expr(A, &start) || expect(A, ',', "',' and the end value"))
        return;
    k[1] = kept_index(A);
    if (parse_expr(A, &stop))
        return;
    if (accept(A, ',')) {
        uint32_t col = TOK(A)->col;
        k[2] = kept_index(A);
        if (parse_expr(A, &step))
            return;
        if (step == 0) {
            err_at(A, col, "loop step cannot be zero");
            return;
        }
    }
    if (expect_end(A))
        return;
    sym_t *y = sym_find(&A->syms, var->s, var->len, NS_INT, -1);
    if (!y) {
        if (!(y = sym_add(&A->syms, var->s, var->len, NS_INT, -1))) {
            A->oom = 1;
            return;
        }
        y->hidden = 1; /* did not exist before the loop: out of scope after it */
    }
    uint32_t yi = (uint32_t)(y - A->syms.syms);
    uint32_t code[3] = {code_at(&A->fast, k[0]), code_at(&A->fast, k[1]),
                        code_at(&A->fast, k[2])};
    if (k[2] == UINT32_MAX || code[2] != UINT32_MAX)
        lform_record(A, i, LF_LOOP, yi, code);
    run_loop(A, i, yi, start, stop, step);
}

static void exec_if(asm_state_t *A, uint32_t i)
{
    uint32_t endif = A->info[i].endif;
    uint32_t cur = i;
    while (cur != endif) {
        uint32_t next = A->info[cur].next;
        int take = -1;
        const lform_t *lf = A->fast.lform ? &A->fast.lform[cur] : NULL;
        if (lf && lf->kind == LF_ELSE) {
            take = 1;
        } else if (lf && lf->kind == LF_COND) {
            int64_t v;
            if (!eval_at(A, lf->code[0], &v))
                take = v != 0;
        }
        if (take < 0) {
            /* as written (the first time, or to report an error) */
            begin_line(A, cur);
            A->pos = 1;
            uint32_t code[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
            if (A->info[cur].kind == LK_ELSE) {
                if (expect_end(A))
                    return;
                take = 1;
                lform_record(A, cur, LF_ELSE, 0, code);
            } else {
                int64_t v;
                uint32_t k = kept_index(A);
                if (parse_expr(A, &v) || expect_end(A))
                    return;
                take = v != 0;
                code[0] = code_at(&A->fast, k);
                lform_record(A, cur, LF_COND, 0, code);
            }
        }
        if (take) {
            exec_lines(A, cur + 1, next);
            return;
        }
        cur = next;
    }
}

static void exec_lines(asm_state_t *A, uint32_t first, uint32_t last)
{
    for (uint32_t i = first; i < last && !stop_now(A);) {
        const line_info_t *li = &A->info[i];
        if (count_step(A, li->number))
            return;
        switch (li->kind) {
        case LK_LOOP:
            exec_loop(A, i);
            i = A->info[i].next + 1;
            break;
        case LK_IF:
            exec_if(A, i);
            i = A->info[i].endif + 1;
            break;
        case LK_CORE: {
            begin_line(A, i);
            A->pos = 1;
            uint32_t end = A->info[i].next;
            int64_t cores[ISA_MAX_CORES];
            unsigned n;
            A->seen_core = 1;
            if (parse_core_list(A, cores, ISA_MAX_CORES, &n) == 0) {
                for (unsigned k = 0; k < n && !stop_now(A); k++) {
                    A->core = (int32_t)cores[k];
                    A->in_core_block = 1;
                    A->engine = -1;
                    exec_lines(A, i + 1, end);
                }
            }
            A->engine = -1;
            i = end;
            break;
        }
        default: {
            const lform_t *lf = A->fast.lform ? &A->fast.lform[i] : NULL;
            if (lf && lf->kind == LF_LET) {
                int64_t v;
                if (!eval_at(A, lf->code[0], &v)) {
                    sym_write(A, &A->syms.syms[lf->sym], v);
                    i++;
                    break;
                }
            }
            int replay = 1;
            uint32_t ti = li->op != UINT16_MAX && A->fast.tmpl_at ? A->fast.tmpl_at[i] : 0;
            if (ti >= 2) {
                /* an instruction line that ran before: replay it without its tokens */
                const itmpl_t *tm = &A->fast.tmpls[ti - 2];
                if (tm->core == A->core && tm->engine == A->engine && tm->syms == A->syms.n) {
                    A->lineno = li->number;
                    A->cur_line = i;
                    if (instr_replay(A, ti - 2) <= 0) {
                        i++;
                        break;
                    }
                    replay = 0; /* values never seen: parse */
                }
            }
            begin_line(A, i);
            if (li->op != UINT16_MAX)
                statement_instr(A, replay);
            else
                statement(A);
            i++;
            break;
        }
        }
    }
}

/* ---- finishing ------------------------------------------------------------------------------------ */

static int finish(asm_state_t *A)
{
    isa_program_t *p = A->b.prog;
    uint32_t nstreams = p->ncores * ISA_ENGINE_COUNT;
    p->streams = calloc(nstreams, sizeof *p->streams);
    uint64_t total = 0;
    for (uint32_t s = 0; s < nstreams; s++)
        total += A->streams[s].n;
    for (uint32_t s = nstreams; s < ISA_MAX_CORES * ISA_ENGINE_COUNT; s++)
        if (A->streams[s].n)
            return -1; /* cannot happen: cores are range-checked */
    if (total >= UINT32_MAX)
        return -1;
    /* one private mapping, filled stream by stream: whole pages moved where the stream's
     * offset within a page matches (instr_vec_t), the rest copied */
    const size_t page = page_bytes();
    size_t bytes = ((size_t)total * sizeof *p->instrs + page - 1) / page * page;
    if (!bytes)
        bytes = page;
    void *dst = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (dst != MAP_FAILED) { /* the program owns it from here, failing or not */
        p->instrs = dst;
        p->instrs_mapped = bytes;
    }
    if (!p->streams || dst == MAP_FAILED)
        return -1;
    uint32_t at = 0;
    for (uint32_t s = 0; s < nstreams; s++) {
        const instr_vec_t *v = &A->streams[s];
        p->streams[s].first = at;
        p->streams[s].count = v->n;
        if (!v->n)
            continue;
        uint8_t *to = (uint8_t *)dst + (size_t)at * sizeof *p->instrs;
        const uint8_t *from = v->map + v->head;
        size_t len = (size_t)v->n * sizeof *p->instrs, done = 0;
        if ((uintptr_t)to % page == v->head) {
            size_t lead = (page - v->head) % page; /* from and to reach a page boundary */
            size_t mid = len > lead ? (len - lead) / page * page : 0;
            if (mid && mremap((void *)(from + lead), mid, mid, MREMAP_MAYMOVE | MREMAP_FIXED,
                              to + lead) != MAP_FAILED) {
                memcpy(to, from, lead);
                done = lead + mid;
            }
        }
        /* all of it when nothing moved: its pages mapped in at once, not faulted one by one */
        isa_populate(to + done, len - done);
        memcpy(to + done, from + done, len - done);
        at += v->n;
    }
    p->ninstrs = at;
    p->checked = A->geo; /* every instruction passed isa_check_instr against it */
    p->line_end = at ? A->line_end : 0; /* the largest line any emitted instruction carries */
    if (A->source)
        p->source = isa_builder_string(&A->b, A->source, A->source_len);
    else if (A->opt->filename)
        p->source = isa_builder_string(&A->b, A->opt->filename, strlen(A->opt->filename));
    return A->b.oom ? -1 : 0;
}

void isa_asm_options_default(isa_asm_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->filename = "<input>";
    isa_geometry_default(&o->geometry);
}

ncsim_status_t isa_assemble(const char *text, size_t len, const isa_asm_options_t *opt,
                            isa_program_t **out, isa_diag_t *diag)
{
    *out = NULL;
    asm_state_t *A = calloc(1, sizeof *A);
    if (!A)
        return NCSIM_NOMEM;
    isa_asm_options_t defaults;
    if (!opt) {
        isa_asm_options_default(&defaults);
        opt = &defaults;
    }
    A->opt = opt;
    A->geo = opt->geometry;
    A->diag = diag;
    A->core = -1;
    A->engine = -1;
    A->text = text;
    A->len = len;
    A->max_steps = opt->max_steps ? opt->max_steps : ASM_MAX_STEPS;
    A->fold_epoch = 1;
    ncsim_status_t st = NCSIM_NOMEM;
    if (len >= UINT32_MAX) {
        isa_diag_error(diag, opt->filename, 0, 0, "input of %zu bytes is too large (at most "
                       "4 GiB of text)", len);
        st = NCSIM_ASSEMBLY;
        goto done;
    }
    /* count lines for the one-error-per-line table */
    uint32_t nl = 1;
    for (const char *q = text, *e = text + len; q && q < e; q++) {
        q = memchr(q, '\n', (size_t)(e - q));
        if (!q)
            break;
        nl++;
    }
    A->max_line = nl;
    A->line_reported = calloc(nl + 1, 1);
    A->streams = calloc(ISA_MAX_CORES * ISA_ENGINE_COUNT, sizeof *A->streams);
    if (!A->line_reported || !A->streams || isa_builder_init(&A->b) || symtab_init(&A->syms))
        goto done;
    if (len && memchr(text, '\0', len)) {
        isa_diag_error(diag, opt->filename, 0, 0, "input contains a NUL byte: not NCA text");
        st = NCSIM_ASSEMBLY;
        goto done;
    }
    unsigned errors_before = diag->errors;
    int structure_bad = 0;
    if (scan_source(A, &structure_bad))
        goto done;
    /* any lexical or structure error: do not execute (it would only add cascades) */
    if (!structure_bad && diag->errors == errors_before)
        exec_lines(A, 0, A->nlines);
    if (A->oom || A->b.oom)
        goto done;
    if (diag->errors != errors_before) {
        st = NCSIM_ASSEMBLY;
        goto done;
    }
    if (finish(A))
        goto done;
    *out = A->b.prog;
    A->b.prog = NULL;
    st = NCSIM_OK;
done:
    if (st == NCSIM_NOMEM)
        isa_diag_error(diag, opt->filename, 0, 0, "out of memory");
    isa_program_free(A->b.prog);
    if (A->streams)
        for (uint32_t s = 0; s < ISA_MAX_CORES * ISA_ENGINE_COUNT; s++)
            if (A->streams[s].map) /* (pages moved into the program leave holes: fine) */
                munmap(A->streams[s].map, A->streams[s].map_bytes);
    free(A->streams);
    free(A->line_reported);
    free(A->info);
    free(A->cache_toks);
    free(A->cache_sym);
    free(A->fast.expr_at);
    free(A->fast.view_at);
    free(A->fast.code);
    free(A->fast.forms);
    free(A->fast.memo);
    free(A->fast.vals);
    isa_check_memo_free(&A->checked);
    free(A->fast.tmpl_at);
    free(A->fast.tmpls);
    free(A->fast.imemo);
    free(A->fast.lform);
    isa_lexed_free(&A->win);
    free(A->view_tab.slots);
    for (int k = 0; k <= ISA_MAX_SLOTS; k++)
        free(A->args_tab[k].slots);
    symtab_free(&A->syms);
    free(A);
    return st;
}
