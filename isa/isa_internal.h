/*
 * isa_internal.h -- growable pools used while building a program (assembler, loader).
 * Not part of the public interface of isa/.
 */
#ifndef NCSIM_ISA_INTERNAL_H
#define NCSIM_ISA_INTERNAL_H

#include "isa.h"

/* Capacities of the growable arrays of a program under construction. */
typedef struct isa_builder {
    isa_program_t *prog;
    uint32_t cap_tensors, cap_sems, cap_groups, cap_instrs, cap_args, cap_views, cap_ints;
    uint32_t cap_strings;
    int oom; /* set once an allocation failed; every later call is a no-op */
} isa_builder_t;

int isa_builder_init(isa_builder_t *b);
/* Each returns the index of the new element, or UINT32_MAX when out of memory. */
uint32_t isa_builder_tensor(isa_builder_t *b, const isa_tensor_t *t);
uint32_t isa_builder_sem(isa_builder_t *b, const isa_sem_t *s);
uint32_t isa_builder_group(isa_builder_t *b, const isa_group_t *g);
uint32_t isa_builder_instr(isa_builder_t *b, const isa_instr_t *in);
/* Room for n instructions in all, allocated at once (a loader that knows the count); -1 when
 * out of memory. */
int isa_builder_reserve_instrs(isa_builder_t *b, uint32_t n);
uint32_t isa_builder_args(isa_builder_t *b, uint32_t n); /* n zeroed slots */
uint32_t isa_builder_view(isa_builder_t *b, const isa_view_t *v);
uint32_t isa_builder_ints(isa_builder_t *b, const int64_t *v, uint32_t n);
uint32_t isa_builder_string(isa_builder_t *b, const char *s, size_t len);
/* Find an existing string (exact match) or add it. */
uint32_t isa_builder_intern(isa_builder_t *b, const char *s, size_t len);

#endif
