/*
 * api_internal.h -- what the files of api/ (the public API of include/ncsim.h over isa/,
 * models/, sim/ and traces/) share. Not installed.
 */
#ifndef NCSIM_API_INTERNAL_H
#define NCSIM_API_INTERNAL_H

#include <signal.h>
#include <stdarg.h>

#include "arch.h"
#include "checker.h"
#include "diag.h"
#include "isa.h"
#include "ncsim.h"
#include "sim.h"
#include "trace_sink.h"

struct ncsim_arch {
    mdl_arch_t a;
};

struct ncsim_program {
    isa_program_t *p;
    double load_seconds;        /* ncsim_program_load_file: reading and assembling */
};

struct ncsim_sim {
    const ncsim_program_t *prog;
    mdl_arch_t arch;
    ncsim_options_t opt;
    char *program_name;
    char *trace_path;
    char *trace_engines;
    sim_t *s;
    chk_t *chk;
    sim_trace_file_t *trace;
    uint8_t *bound;             /* per tensor: an input was written */
    int started;                /* the first run call checked the bindings */
    ncsim_progress_fn progress;
    void *progress_ctx;
    double progress_interval;
    volatile sig_atomic_t cancel;
    sim_drive_t drive;          /* the run driver's state: slice size, host time */
    char **finding_text;        /* per finding, made on demand */
    uint32_t at_line;           /* ncsim_sim_set_line_hook */
    void (*at_line_fn)(void *ctx, ncsim_sim_t *sim, uint32_t core);
    void *at_line_ctx;
    void (*note_fn)(void *ctx, const char *note); /* ncsim_sim_set_notes */
    void *note_ctx;
    sim_observer_t line_obs;    /* at_line: calls at_line_fn, then the checker's */
    const sim_observer_t *line_next;
    char *failure;              /* ncsim_sim_set_failure: why the caller judged it failed */
    char *run_failure;          /* the first line of the run's own error, made on demand */
    ncsim_record_hooks_t records; /* ncsim_sim_set_record_hooks */
    sim_trace_sink_t tee;       /* with record hooks: the client's hooks, then the trace's */
};

/* Record the failure of the current call in this thread's error and return `st`. */
ncsim_status_t api_fail(ncsim_status_t st, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with a location. */
ncsim_status_t api_fail_at(ncsim_status_t st, const char *kind, const char *file, uint32_t line,
                           uint32_t column, int32_t core, int32_t engine, int64_t instruction,
                           const char *fmt, ...) __attribute__((format(printf, 9, 10)));
/* An assembler or loader diagnostic report: the first "FILE:LINE:COL: error:" gives the
 * location, the message is the whole report. */
ncsim_status_t api_fail_diag(ncsim_status_t st, const isa_diag_t *d);
double api_now_seconds(void);

#endif
