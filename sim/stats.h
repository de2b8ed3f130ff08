/*
 * stats.h -- the statistics JSON of CLI.md and the human summary printed by `ncsim run`.
 */
#ifndef NCSIM_SIM_STATS_H
#define NCSIM_SIM_STATS_H

#include <stdio.h>

#include "arch.h"
#include "isa.h"
#include "sim.h"

typedef struct sim_run_info {
    const char *program;  /* path as given */
    int timing_only;
    uint64_t seed;
    double host_seconds;  /* wall time of the simulation itself */
    const char *error;    /* NULL: the run succeeded; else why it failed ("status": "error") */
    double load_seconds;  /* wall time of reading (and assembling) the program; 0: unknown */
} sim_run_info_t;

/* The statistics as JSON text (malloc'd), with the resolved architecture config under
 * "arch_config". NULL when out of memory. */
char *sim_stats_json(const sim_stats_t *st, const mdl_arch_t *arch, const isa_program_t *prog,
                     const sim_run_info_t *info);

/* Human summary: total time, per-engine busy and stall, DMA and HBM use, MFU. */
void sim_stats_print(FILE *out, const sim_stats_t *st, const mdl_arch_t *arch,
                     const isa_program_t *prog, const sim_run_info_t *info);

#endif
