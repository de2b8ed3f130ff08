/*
 * report.c -- the report of a trace or statistics file through the public API
 * (ncsim_report_json): the same report, verdict included, that `ncsim report --json` prints.
 */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "report.h"
#include "report_load.h"

ncsim_status_t ncsim_report_json(const char *path, char **json)
{
    if (!path || !json)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_report_json: no path or no output");
    *json = NULL;
    char err[1024];
    trc_report_t rep;
    ncsim_status_t st = trc_report_load(path, &rep, err, sizeof err);
    if (st != NCSIM_OK)
        return api_fail(st, st == NCSIM_NOMEM ? "nomem" : "input", "%s", err);
    char *text = trc_report_json(&rep);
    trc_report_free(&rep);
    if (!text)
        return api_fail(NCSIM_NOMEM, "nomem", "out of memory");
    *json = text;
    return NCSIM_OK;
}
