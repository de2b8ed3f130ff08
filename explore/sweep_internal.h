/*
 * sweep_internal.h -- what explore/sweep.c shares with its unit test (tests/unit/test_sweep.c)
 * beyond sweep.h: the resolved config of a point as the models' struct. Not for cli/ (which
 * reads a point's values through sim_sweep_point_values): sweeps still hold models/ configs
 * by value (docs/design.md, "Known exceptions"), the last debt of issue #26, item 1.
 */
#ifndef NCSIM_SWEEP_INTERNAL_H
#define NCSIM_SWEEP_INTERNAL_H

#include "arch.h"
#include "sweep.h"

/* The resolved, validated config of point `index`. */
ncsim_status_t sim_sweep_point_arch(const sim_sweep_t *sw, uint64_t index, mdl_arch_t *out,
                                    char *err, size_t errlen);

#endif
