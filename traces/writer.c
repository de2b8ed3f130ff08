/*
 * writer.c -- opening, dispatching to the JSON or Perfetto back end, and closing a trace.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

ncsim_status_t trc_writer_open(const char *path, trc_format_t fmt, trc_writer_t **out, char *err,
                               size_t errlen)
{
    *out = NULL;
    if (fmt >= TRC_FORMAT_COUNT) {
        snprintf(err, errlen, "%s: unknown trace format (use .json, .json.gz or .pftrace)",
                 path);
        return NCSIM_USAGE;
    }
    trc_writer_t *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    w->fmt = fmt;
    w->be = fmt == TRC_FORMAT_PFTRACE ? &trc_pftrace_backend : &trc_json_backend;
    if (trc_out_open(&w->out, path, fmt == TRC_FORMAT_JSON_GZ)) {
        snprintf(err, errlen, "%s", w->out.err);
        free(w);
        return NCSIM_IO;
    }
    *out = w;
    return NCSIM_OK;
}

ncsim_status_t trc_write(trc_writer_t *w, const trc_record_t *r)
{
    if (w->status != NCSIM_OK)
        return w->status;
    ncsim_status_t st = w->be->write(w, r);
    if (st == NCSIM_OK && w->out.failed)
        st = NCSIM_IO;
    w->status = st;
    return st;
}

ncsim_status_t trc_writer_close(trc_writer_t *w, char *err, size_t errlen)
{
    if (!w)
        return NCSIM_OK;
    ncsim_status_t st = w->status;
    if (st == NCSIM_OK)
        st = w->be->finish(w);
    if (trc_out_close(&w->out, st == NCSIM_OK) && st == NCSIM_OK)
        st = NCSIM_IO;
    if (st != NCSIM_OK && err && errlen)
        snprintf(err, errlen, "%s", w->out.err[0] ? w->out.err : ncsim_status_text(st));
    w->be->destroy(w);
    free(w);
    return st;
}

const char *trc_writer_error(const trc_writer_t *w)
{
    return w->out.err;
}

uint64_t trc_writer_events(const trc_writer_t *w)
{
    return w->events;
}

uint64_t trc_writer_bytes(const trc_writer_t *w)
{
    return w->out.total;
}
