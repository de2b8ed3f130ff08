/*
 * trace_sink.h -- the simulator's trace hooks (sim_trace_sink_t) implemented on top of
 * traces/: turns instruction, DMA and semaphore records into processes, tracks, slices,
 * counters and flows, applies the --trace-start/--trace-end/--trace-engines filters, and
 * writes .json, .json.gz or .pftrace (docs/traces.md).
 */
#ifndef NCSIM_SIM_TRACE_SINK_H
#define NCSIM_SIM_TRACE_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "isa.h"
#include "sim.h"

/* Engine filter bit for the DMA queues (engines use bit `engine`). */
#define SIM_TRACE_DMA_BIT (1u << ISA_ENGINE_COUNT)
#define SIM_TRACE_ALL ((SIM_TRACE_DMA_BIT << 1) - 1)

typedef struct sim_trace_options {
    const char *path;          /* format from the ending: .json, .json.gz, .pftrace */
    uint64_t start_ps;         /* keep what overlaps [start_ps, end_ps] */
    uint64_t end_ps;           /* 0: to the end of the run */
    uint32_t engines;          /* filter bits; 0 means all */
    const char *engines_text;  /* the filter as the user wrote it (recorded in the trace) */
    const char *program;       /* program path, recorded in the trace */
    int timing_only;
} sim_trace_options_t;

typedef struct sim_trace_file sim_trace_file_t;

/* "pe,act,dma" -> filter bits. NCSIM_USAGE with a message naming the bad item. */
ncsim_status_t sim_trace_parse_engines(const char *list, uint32_t *bits, char *err,
                                       size_t errlen);

/* Create the trace file and write its header (run, processes, engine tracks, initial
 * semaphore values). NCSIM_USAGE for an unknown ending, NCSIM_IO when it cannot be created. */
ncsim_status_t sim_trace_open(const sim_trace_options_t *opt, const isa_program_t *prog,
                              const mdl_arch_t *arch, sim_trace_file_t **out, char *err,
                              size_t errlen);
/* The hooks to put in sim_options_t.trace (valid until close). */
const sim_trace_sink_t *sim_trace_sink(sim_trace_file_t *t);
/* Totals of a finished trace. */
typedef struct sim_trace_totals {
    uint64_t events; /* JSON events, or Perfetto packets */
    uint64_t bytes;  /* before compression */
} sim_trace_totals_t;

/* Write the counters gathered during the run, finish and free. The first error met while
 * tracing (I/O, memory) is returned here, with its message. `totals` may be NULL. */
ncsim_status_t sim_trace_close(sim_trace_file_t *t, sim_trace_totals_t *totals, char *err,
                               size_t errlen);

#endif
