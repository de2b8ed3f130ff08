/*
 * lex.h -- the NCA tokenizer (ISA.md section 2), used by the assembler.
 *
 * The whole source is tokenized once, line by line, before assembly: loops and .core blocks
 * then replay token arrays instead of re-reading text, which keeps a million-instruction
 * loop fast.
 */
#ifndef NCSIM_ISA_LEX_H
#define NCSIM_ISA_LEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum isa_tok_kind {
    TK_END,       /* end of line */
    TK_IDENT,     /* identifier or keyword */
    TK_DIRECTIVE, /* .name (text without the dot) */
    TK_INT,
    TK_FLOAT,
    TK_PUNCT,     /* one of the operators below; `op` holds it */
    TK_BAD,       /* a character that starts no token */
    TK_RAW        /* the rest of a `.source` line, as written (a file name is no NCA token) */
} isa_tok_kind_t;

/* Multi-character operators get codes above 255; single characters are their own code. */
enum {
    OP_EQ = 256, /* == */
    OP_NE,       /* != */
    OP_LE,       /* <= */
    OP_GE,       /* >= */
    OP_AND,      /* && */
    OP_OR,       /* || */
    OP_PLUSEQ,   /* += */
    OP_MINUSEQ,  /* -= */
    OP_DOTDOT    /* .. */
};

typedef struct isa_tok {
    uint8_t kind;
    uint8_t hex;   /* TK_INT written as 0x... */
    uint16_t op;   /* TK_PUNCT */
    uint32_t col;  /* 1-based column */
    uint32_t len;
    const char *s; /* points into the source text */
    int64_t ival;  /* TK_INT */
    double fval;   /* TK_FLOAT */
} isa_tok_t;

typedef struct isa_line {
    uint32_t first; /* index of the first token in the token array */
    uint32_t count; /* tokens, TK_END excluded */
    uint32_t number; /* 1-based source line */
} isa_line_t;

typedef struct isa_lexed {
    isa_tok_t *toks;  /* every line's tokens, each line followed by a TK_END token */
    uint32_t ntoks;
    isa_line_t *lines; /* only lines with at least one token */
    uint32_t nlines;
} isa_lexed_t;

/* Errors found while tokenizing (bad characters, bad numbers). */
typedef void (*isa_lex_error_fn)(void *ctx, uint32_t line, uint32_t col, const char *msg);

/* Returns 0, or -1 when out of memory. Lexical errors are reported through `err` and the
 * offending token becomes TK_BAD. */
int isa_lex(const char *text, size_t len, isa_lexed_t *out, isa_lex_error_fn err, void *ctx);
void isa_lexed_free(isa_lexed_t *l);

#endif
