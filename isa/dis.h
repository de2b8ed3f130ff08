/*
 * dis.h -- the disassembler: a program back to NCA text that assembles to the identical
 * binary. Names come from the program's declarations where they exist; views are printed
 * as named slices when a declared tensor covers them exactly, raw views otherwise.
 */
#ifndef NCSIM_ISA_DIS_H
#define NCSIM_ISA_DIS_H

#include <stddef.h>

#include "isa.h"

/* Whole program as text (malloc'd, NUL-terminated). NULL on out of memory. */
char *isa_disassemble(const isa_program_t *prog);

/* One instruction as text (operands and clauses, no newline) into buf; returns the length
 * it needed (like snprintf). Used by traces and error messages. */
size_t isa_format_instr(const isa_program_t *prog, uint32_t core, const isa_instr_t *in,
                        char *buf, size_t buflen);

/* One view in raw form (ISA.md 5.1) into buf; returns the length needed. */
size_t isa_format_view(const isa_view_t *v, char *buf, size_t buflen);

#endif
