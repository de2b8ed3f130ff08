/*
 * report_load.h -- a report from a trace or a statistics file (report_load.c).
 */
#ifndef NCSIM_TRACES_REPORT_LOAD_H
#define NCSIM_TRACES_REPORT_LOAD_H

#include <stddef.h>

#include "report.h"

/* The report of a trace or statistics file (told apart by content). NCSIM_IO, NCSIM_FORMAT or
 * NCSIM_NOMEM with a message in err; on success free with trc_report_free. */
ncsim_status_t trc_report_load(const char *path, trc_report_t *rep, char *err, size_t errlen);

/* Whether `path` holds a trace (*is_trace = 1: .pftrace, gzip, or JSON with "traceEvents",
 * judged by its name and first 64 KiB) or otherwise a statistics file (0): the one rule that
 * `report`, `diff` and the profile summary read files by. NCSIM_IO or NCSIM_NOMEM with a
 * message in err. */
ncsim_status_t trc_sniff_trace(const char *path, int *is_trace, char *err, size_t errlen);

#endif
