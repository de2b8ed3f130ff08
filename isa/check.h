/*
 * check.h -- static checks of a decoded instruction, shared by the assembler (which adds
 * FILE:LINE:COL) and the .ncx loader (which adds core/engine/index).
 */
#ifndef NCSIM_ISA_CHECK_H
#define NCSIM_ISA_CHECK_H

#include <stddef.h>

#include "diag.h"
#include "isa.h"

/*
 * Check one instruction of core `core`: engine legality, operand kinds and presence, views
 * inside the geometry, partition rules, memory spaces each engine may use, shapes, dtypes,
 * semaphore indices and clause limits. Returns 0 when fine; otherwise 1 + the index of the
 * offending slot (or ISA_MAX_SLOTS + 1 when no slot is to blame) and a message in msg.
 */
int isa_check_instr(const isa_program_t *p, uint32_t core, const isa_instr_t *in,
                    const isa_geometry_t *g, char *msg, size_t msglen);

/* Check a single view against the geometry and the partition rules (ISA.md 5.1, 5.2). */
int isa_check_view(const isa_view_t *v, const isa_geometry_t *g, char *msg, size_t msglen);

/*
 * Check a whole program (declarations, groups, streams, every instruction). Reports each
 * problem into diag with `file` as the name and no position, or "line N" from the line map.
 * Returns NCSIM_OK or NCSIM_FORMAT.
 */
ncsim_status_t isa_check_program(const isa_program_t *p, const isa_geometry_t *g,
                                 const char *file, isa_diag_t *diag);

#endif
