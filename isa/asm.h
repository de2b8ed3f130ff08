/*
 * asm.h -- the NCA assembler: text (ISA.md) in, isa_program_t out.
 */
#ifndef NCSIM_ISA_ASM_H
#define NCSIM_ISA_ASM_H

#include <stddef.h>

#include "diag.h"
#include "isa.h"

typedef struct isa_asm_options {
    const char *filename;       /* for diagnostics and the source-line map */
    isa_geometry_t geometry;    /* memory sizes to check against */
    /* Called for `.arch NAME`: fill *g with that preset's geometry and return 0, or return -1
     * when the name is unknown. NULL: any name is accepted and `geometry` is kept. */
    int (*arch_lookup)(void *ctx, const char *name, isa_geometry_t *g);
    void *arch_ctx;
    /* Expansion limits (0: the defaults, 2^24 instructions and 2^26 statements executed,
     * loop replays included). A fuzzer sets them low to bound the work per input. */
    uint64_t max_instructions;
    uint64_t max_steps;
} isa_asm_options_t;

void isa_asm_options_default(isa_asm_options_t *o);

/*
 * Assemble `len` bytes of text. On success returns NCSIM_OK and *out; otherwise
 * NCSIM_ASSEMBLY with every error (up to the diag limit) in `diag`, and *out NULL.
 */
ncsim_status_t isa_assemble(const char *text, size_t len, const isa_asm_options_t *opt,
                            isa_program_t **out, isa_diag_t *diag);

#endif
