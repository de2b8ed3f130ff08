/*
 * profile.c -- ncsim_profile_summary (include/ncsim.h): the Neuron profiler's summary of a
 * trace or statistics file, computed by traces/profile.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "profile.h"

void ncsim_profile_options_init(ncsim_profile_options_t *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->spill_save_bytes = -1;
    opt->spill_reload_bytes = -1;
}

const char *ncsim_profile_field(size_t index, const char **unit, const char **text,
                                int *trace_only)
{
    if (index >= TRC_PF_COUNT)
        return NULL;
    trc_profile_field_t f = (trc_profile_field_t)index;
    if (unit)
        *unit = trc_profile_unit_text(trc_profile_field_unit(f));
    if (text)
        *text = trc_profile_field_text(f);
    if (trace_only)
        *trace_only = trc_profile_field_trace_only(f);
    return trc_profile_field_key(f);
}

ncsim_status_t ncsim_profile_summary(const char *path, const ncsim_profile_options_t *opt,
                                     char **text)
{
    if (!path || !text)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_profile_summary: no path or output");
    *text = NULL;
    ncsim_profile_options_t o;
    ncsim_profile_options_init(&o);
    if (opt)
        o = *opt;
    if ((unsigned)o.format >= NCSIM_PROFILE_FORMAT_COUNT)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_profile_summary: unknown format %d",
                        (int)o.format);
    ncsim_program_t *prog = NULL;
    if (o.program_path) {
        ncsim_status_t st = ncsim_program_load_file(o.program_path, NULL, &prog);
        if (st != NCSIM_OK)
            return st;
    }
    trc_profile_t p;
    char err[1024];
    ncsim_status_t st =
        trc_profile_load(path, o.core, prog ? prog->p : NULL,
                         o.format == NCSIM_PROFILE_JSON ? TRC_PROFILE_INSTRUCTIONS : 0u, &p,
                         err, sizeof err);
    ncsim_program_free(prog);
    if (st != NCSIM_OK)
        return api_fail(st, st == NCSIM_IO ? "io" : st == NCSIM_NOMEM ? "memory" : "input",
                        "%s", err);
    if (o.spill_save_bytes >= 0)
        trc_profile_set(&p, TRC_PF_SPILL_SAVE, (double)o.spill_save_bytes);
    if (o.spill_reload_bytes >= 0)
        trc_profile_set(&p, TRC_PF_SPILL_RELOAD, (double)o.spill_reload_bytes);
    static const trc_profile_format_t fmts[] = {TRC_PROFILE_SUMMARY_JSON, TRC_PROFILE_JSON,
                                                TRC_PROFILE_TEXT};
    *text = trc_profile_format(&p, fmts[o.format], o.key);
    trc_profile_free(&p);
    if (!*text)
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    return NCSIM_OK;
}
