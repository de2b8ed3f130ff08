/*
 * diag.h -- collected diagnostics.
 *
 * The assembler and the loader report every problem they find (up to a limit) into an
 * isa_diag_t rather than printing: the command line prints them, tests inspect them.
 * Each message is one line: "FILE:LINE:COL: error: MESSAGE" for source positions, or
 * "FILE: error: MESSAGE" when there is no position.
 */
#ifndef NCSIM_ISA_DIAG_H
#define NCSIM_ISA_DIAG_H

#include <stddef.h>
#include <stdint.h>

typedef struct isa_diag {
    char *text;        /* all messages, each ending in '\n'; NUL-terminated */
    size_t len, cap;
    unsigned errors;   /* errors reported (including those past the limit) */
    unsigned limit;    /* stop storing after this many errors (0: 50) */
} isa_diag_t;

void isa_diag_init(isa_diag_t *d, unsigned limit);
void isa_diag_free(isa_diag_t *d);
/* Report an error; line/col 0 omit the position. Returns 1 while below the limit. */
int isa_diag_error(isa_diag_t *d, const char *file, uint32_t line, uint32_t col,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Append a free-form note line (no counting). */
void isa_diag_note(isa_diag_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when the limit has been reached and callers may stop early. */
int isa_diag_full(const isa_diag_t *d);

#endif
