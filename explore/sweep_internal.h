/*
 * sweep_internal.h -- what explore/sweep.c shares with its unit test (tests/unit/test_sweep.c)
 * beyond sweep.h: the resolved config of a point as an ncsim_arch_t. Not for cli/, which reads
 * a point's values through sim_sweep_point_values.
 */
#ifndef NCSIM_SWEEP_INTERNAL_H
#define NCSIM_SWEEP_INTERNAL_H

#include "ncsim.h"
#include "sweep.h"

/* The resolved config of point `index` in *out (free with ncsim_arch_free): NCSIM_OK when it
 * is valid; otherwise the error says why, and *out still holds the config as far as it was
 * resolved (NULL when the point does not exist). */
ncsim_status_t sim_sweep_point_arch(const sim_sweep_t *sw, uint64_t index, ncsim_arch_t **out,
                                    char *err, size_t errlen);

#endif
