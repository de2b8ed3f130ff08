/*
 * lex.c -- tokenizer for NCA assembly text.
 */
#include "lex.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_ident_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_ident_char(int c)
{
    return is_ident_start(c) || is_digit(c);
}

static int is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

typedef struct lexer {
    isa_lexed_t *out;
    uint32_t cap_toks, cap_lines;
    isa_lex_error_fn err;
    void *ctx;
} lexer_t;

static int push_tok(lexer_t *L, const isa_tok_t *t)
{
    isa_lexed_t *o = L->out;
    if (o->ntoks == L->cap_toks) {
        uint32_t nc = L->cap_toks ? L->cap_toks * 2 : 1024;
        isa_tok_t *p = realloc(o->toks, (size_t)nc * sizeof *p);
        if (!p)
            return -1;
        o->toks = p;
        L->cap_toks = nc;
    }
    o->toks[o->ntoks++] = *t;
    return 0;
}

static int push_line(lexer_t *L, uint32_t first, uint32_t count, uint32_t number)
{
    isa_lexed_t *o = L->out;
    if (o->nlines == L->cap_lines) {
        uint32_t nc = L->cap_lines ? L->cap_lines * 2 : 256;
        isa_line_t *p = realloc(o->lines, (size_t)nc * sizeof *p);
        if (!p)
            return -1;
        o->lines = p;
        L->cap_lines = nc;
    }
    o->lines[o->nlines].first = first;
    o->lines[o->nlines].count = count;
    o->lines[o->nlines].number = number;
    o->nlines++;
    return 0;
}

/*
 * A number may be followed directly by an identifier only in the raw-view dimension syntax
 * STRIDExCOUNT (`64x4`, `1x8`, `0x10x4`), where the lexer splits it into the number and an
 * identifier starting with 'x'. Any other letter glued to a number (`12abc`, `0x1g`, `1.5f`,
 * `1e`) is a malformed number: report it whole rather than as a number and a stray name.
 */
static size_t check_suffix(const char *s, const char *p, const char *end, isa_tok_t *t,
                           lexer_t *L, uint32_t line)
{
    if (p < end && is_ident_char((unsigned char)*p) && !(t->kind == TK_INT && *p == 'x')) {
        const char *q = p;
        while (q < end && is_ident_char((unsigned char)*q))
            q++;
        char msg[96];
        int n = (int)(q - s) > 40 ? 40 : (int)(q - s);
        snprintf(msg, sizeof msg, "malformed number '%.*s'", n, s);
        t->kind = TK_BAD;
        L->err(L->ctx, line, t->col, msg);
        return (size_t)(q - s);
    }
    return (size_t)(p - s);
}

/* Lex a number at s (digits known to start it, or '.' followed by a digit). Underscores
 * separate digits. Returns the length consumed. */
static size_t lex_number(const char *s, const char *end, isa_tok_t *t, lexer_t *L,
                         uint32_t line)
{
    const char *p = s;
    char buf[128];
    size_t n = 0;
    if (p + 1 < end && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        uint64_t v = 0;
        int digits = 0, overflow = 0;
        while (p < end && (is_hex(*p) || *p == '_')) {
            if (*p != '_') {
                int d = is_digit(*p) ? *p - '0' : (*p | 0x20) - 'a' + 10;
                if (v >> 60)
                    overflow = 1;
                v = v * 16 + (uint64_t)d;
                digits++;
            }
            p++;
        }
        t->kind = TK_INT;
        t->hex = 1;
        t->ival = (int64_t)v;
        if (!digits || overflow || v > (uint64_t)INT64_MAX) {
            t->kind = TK_BAD;
            L->err(L->ctx, line, t->col, digits ? "integer constant too large"
                                                : "hexadecimal constant has no digits");
            return (size_t)(p - s);
        }
        return check_suffix(s, p, end, t, L, line);
    }
    /* Fast path: a plain decimal integer (most numbers), accumulated directly. */
    {
        const char *q = p;
        uint64_t v = 0;
        int big = 0;
        while (q < end && (is_digit(*q) || *q == '_')) {
            if (*q != '_') {
                uint64_t d = (uint64_t)(*q - '0');
                if (v > ((uint64_t)INT64_MAX - d) / 10)
                    big = 1;
                else
                    v = v * 10 + d;
            }
            q++;
        }
        if (!(q < end && (*q == '.' || *q == 'e' || *q == 'E'))) {
            t->kind = TK_INT;
            t->ival = (int64_t)v;
            if (big) {
                t->kind = TK_BAD;
                L->err(L->ctx, line, t->col, "integer constant too large");
                return (size_t)(q - s);
            }
            return check_suffix(s, q, end, t, L, line);
        }
    }
    int is_float = 0;
    while (p < end && (is_digit(*p) || *p == '_')) {
        if (*p != '_' && n < sizeof buf - 1)
            buf[n++] = *p;
        p++;
    }
    /* A fraction, unless this is the '..' of a range like 0..3 */
    if (p < end && *p == '.' && !(p + 1 < end && p[1] == '.')) {
        is_float = 1;
        if (n < sizeof buf - 1)
            buf[n++] = '.';
        p++;
        while (p < end && (is_digit(*p) || *p == '_')) {
            if (*p != '_' && n < sizeof buf - 1)
                buf[n++] = *p;
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q < end && is_digit(*q)) {
            is_float = 1;
            while (p < q && n < sizeof buf - 1)
                buf[n++] = *p++;
            while (p < end && is_digit(*p)) {
                if (n < sizeof buf - 1)
                    buf[n++] = *p;
                p++;
            }
        }
    }
    buf[n] = '\0';
    if (is_float) {
        t->kind = TK_FLOAT;
        errno = 0;
        t->fval = strtod(buf, NULL);
        if (n >= sizeof buf - 1) {
            t->kind = TK_BAD;
            L->err(L->ctx, line, t->col, "floating-point constant too long");
        } else if (errno == ERANGE && isinf(t->fval)) {
            t->kind = TK_BAD;
            L->err(L->ctx, line, t->col, "floating-point constant out of range (write inf)");
        }
    } else {
        errno = 0;
        unsigned long long v = strtoull(buf, NULL, 10);
        t->kind = TK_INT;
        t->ival = (int64_t)v;
        if (errno == ERANGE || v > (unsigned long long)INT64_MAX || n >= sizeof buf - 1) {
            t->kind = TK_BAD;
            L->err(L->ctx, line, t->col, "integer constant too large");
            return (size_t)(p - s);
        }
    }
    return check_suffix(s, p, end, t, L, line);
}

int isa_lex(const char *text, size_t len, isa_lexed_t *out, isa_lex_error_fn err, void *ctx)
{
    memset(out, 0, sizeof *out);
    lexer_t L = {out, 0, 0, err, ctx};
    const char *p = text, *end = text + len;
    uint32_t line = 1;
    while (p <= end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *line_start = p;
        uint32_t first = out->ntoks;
        while (p < eol) {
            char c = *p;
            if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
                p++;
                continue;
            }
            if (c == ';' || c == '#')
                break;
            isa_tok_t t;
            memset(&t, 0, sizeof t);
            t.col = (uint32_t)(p - line_start) + 1;
            t.s = p;
            size_t n = 1;
            if (is_ident_start((unsigned char)c)) {
                while (p + n < eol && is_ident_char((unsigned char)p[n]))
                    n++;
                t.kind = TK_IDENT;
            } else if (is_digit((unsigned char)c) ||
                       (c == '.' && p + 1 < eol && is_digit((unsigned char)p[1]))) {
                n = lex_number(p, eol, &t, &L, line);
            } else if (c == '.' && p + 1 < eol && p[1] == '.') {
                t.kind = TK_PUNCT;
                t.op = OP_DOTDOT;
                n = 2;
            } else if (c == '.' && p + 1 < eol && is_ident_start((unsigned char)p[1])) {
                n = 2;
                while (p + n < eol && is_ident_char((unsigned char)p[n]))
                    n++;
                t.kind = TK_DIRECTIVE;
                t.s = p + 1;
                t.len = (uint32_t)(n - 1);
            } else {
                char c2 = p + 1 < eol ? p[1] : '\0';
                t.kind = TK_PUNCT;
                t.op = (uint16_t)(unsigned char)c;
                n = 1;
                if (c == '=' && c2 == '=')
                    t.op = OP_EQ, n = 2;
                else if (c == '!' && c2 == '=')
                    t.op = OP_NE, n = 2;
                else if (c == '<' && c2 == '=')
                    t.op = OP_LE, n = 2;
                else if (c == '>' && c2 == '=')
                    t.op = OP_GE, n = 2;
                else if (c == '&' && c2 == '&')
                    t.op = OP_AND, n = 2;
                else if (c == '|' && c2 == '|')
                    t.op = OP_OR, n = 2;
                else if (c == '+' && c2 == '=')
                    t.op = OP_PLUSEQ, n = 2;
                else if (c == '-' && c2 == '=')
                    t.op = OP_MINUSEQ, n = 2;
                else if (!strchr("[](),:=@+-*/%|!<>", c)) {
                    t.kind = TK_BAD;
                    char msg[64];
                    if ((unsigned char)c >= 32 && (unsigned char)c < 127)
                        snprintf(msg, sizeof msg, "unexpected character '%c'", c);
                    else
                        snprintf(msg, sizeof msg, "unexpected byte 0x%02x (NCA text is ASCII "
                                 "outside comments)", (unsigned)(unsigned char)c);
                    err(ctx, line, t.col, msg);
                }
            }
            if (t.kind != TK_DIRECTIVE)
                t.len = (uint32_t)n;
            if (push_tok(&L, &t))
                return -1;
            p += n;
            if (t.kind == TK_DIRECTIVE && out->ntoks - first == 1 && t.len == 6 &&
                memcmp(t.s, "source", 6) == 0) {
                /* `.source NAME`: the rest of the line, trimmed, is one raw token */
                while (p < eol && (*p == ' ' || *p == '\t'))
                    p++;
                const char *q = eol;
                while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r'))
                    q--;
                if (q > p) {
                    isa_tok_t r;
                    memset(&r, 0, sizeof r);
                    r.kind = TK_RAW;
                    r.col = (uint32_t)(p - line_start) + 1;
                    r.s = p;
                    r.len = (uint32_t)(q - p);
                    if (push_tok(&L, &r))
                        return -1;
                }
                p = eol;
            }
        }
        uint32_t count = out->ntoks - first;
        if (count) {
            isa_tok_t e;
            memset(&e, 0, sizeof e);
            e.kind = TK_END;
            e.col = (uint32_t)(eol - line_start) + 1;
            e.s = eol;
            if (push_tok(&L, &e) || push_line(&L, first, count, line))
                return -1;
        }
        line++;
        p = eol + 1;
    }
    return 0;
}

void isa_lexed_free(isa_lexed_t *l)
{
    free(l->toks);
    free(l->lines);
    memset(l, 0, sizeof *l);
}
