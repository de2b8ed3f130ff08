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

#endif
