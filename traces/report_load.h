/*
 * report_load.h -- a report from a trace or a statistics file (report_load.c).
 */
#ifndef NCSIM_TRACES_REPORT_LOAD_H
#define NCSIM_TRACES_REPORT_LOAD_H

#include <stddef.h>

#include <jansson.h>

#include "report.h"

/* The report of a trace or statistics file (told apart by content). NCSIM_IO, NCSIM_FORMAT or
 * NCSIM_NOMEM with a message in err; on success free with trc_report_free. */
ncsim_status_t trc_report_load(const char *path, trc_report_t *rep, char *err, size_t errlen);

/* A statistics file's numbers as the report and the profile summary read them: a field that is
 * missing, of the wrong type or negative reads as 0. trc_stats_ps reads nanoseconds as ps. */
uint64_t trc_stats_u64(json_t *v);
uint64_t trc_stats_ps(json_t *v);

/* What every reader of a statistics file checks and takes first: NCSIM_FORMAT (message in err)
 * unless it has "cores" and "total_ns"; else the program and architecture it names and, for a
 * failed run, why it failed (empty when it succeeded), each cut to its buffer. */
ncsim_status_t trc_stats_head(const char *path, json_t *root, char *program, size_t program_len,
                              char *arch, size_t arch_len, char *failed, size_t failed_len,
                              char *err, size_t errlen);

/* Whether `path` holds a trace (*is_trace = 1: .pftrace, gzip, or JSON with "traceEvents",
 * judged by its name and first 64 KiB) or otherwise a statistics file (0): the one rule that
 * `report`, `diff` and the profile summary read files by. NCSIM_IO or NCSIM_NOMEM with a
 * message in err. */
ncsim_status_t trc_sniff_trace(const char *path, int *is_trace, char *err, size_t errlen);

/* A statistics file's JSON into *root (the caller json_decrefs it); NCSIM_FORMAT with
 * "PATH:LINE:COL: not valid JSON: ..." in err when it does not parse. */
ncsim_status_t trc_stats_json(const char *path, json_t **root, char *err, size_t errlen);

#endif
