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

/*
 * Instructions known to pass isa_check_instr. Its result depends on the instruction's
 * opcode, engine, operand block, core and semaphores and operations of its clauses, on the
 * program's declarations and on the geometry, never on wait/post values or the line; a
 * loop-generated program repeats a few such combinations millions of times. A memo is
 * valid for one program and geometry while declarations are only added (a pass stays a
 * pass). Zero-initialise; free with isa_check_memo_free.
 */
typedef struct isa_check_memo {
    struct isa_check_key *slots; /* open addressing */
    uint32_t n, cap;
    uint64_t hits; /* (keys that never repeat are no longer remembered past a point) */
} isa_check_memo_t;

/* isa_check_instr, skipped for an instruction whose key passed before (and remembered when
 * it passes now). Out of memory only stops remembering. */
int isa_check_instr_memo(isa_check_memo_t *m, const isa_program_t *p, uint32_t core,
                         const isa_instr_t *in, const isa_geometry_t *g, char *msg,
                         size_t msglen);
void isa_check_memo_free(isa_check_memo_t *m);

/* What is wrong with wait/post clause s (a wait when is_wait) on a core whose declared
 * semaphores are the bits of `declared`: the one definition of a valid clause, for the
 * checks here and the .ncx reader. ISA_CLAUSE_OK, or the first fault in this order. */
enum { ISA_CLAUSE_OK, ISA_CLAUSE_RANGE, ISA_CLAUSE_OP, ISA_CLAUSE_UNDECLARED };
/* inline: the loaders test every clause of every instruction */
static inline int isa_clause_fault(const isa_sync_t *s, int is_wait, uint64_t declared)
{
    if (s->sem >= ISA_MAX_SEMS)
        return ISA_CLAUSE_RANGE;
    if (is_wait ? s->op > ISA_WAIT_EQ : (s->op < ISA_POST_ADD || s->op > ISA_POST_SET))
        return ISA_CLAUSE_OP;
    return declared >> s->sem & 1 ? ISA_CLAUSE_OK : ISA_CLAUSE_UNDECLARED;
}

/* Check a single view against the geometry and the partition rules (ISA.md 5.1, 5.2). */
int isa_check_view(const isa_view_t *v, const isa_geometry_t *g, char *msg, size_t msglen);

/*
 * Check a whole program (declarations, groups, streams, every instruction). Reports each
 * problem into diag with `file` as the name and no position, or "line N" from the line map.
 * Returns NCSIM_OK or NCSIM_FORMAT.
 */
ncsim_status_t isa_check_program(const isa_program_t *p, const isa_geometry_t *g,
                                 const char *file, isa_diag_t *diag);

/* The same, for a loader that has already checked every instruction's wait and post clauses
 * as isa_check_instr does (the .ncx reader): those are not tested a second time. */
#define ISA_CHECK_CLAUSES_DONE 1u
ncsim_status_t isa_check_program_flags(const isa_program_t *p, const isa_geometry_t *g,
                                       const char *file, isa_diag_t *diag, unsigned flags);

#endif
