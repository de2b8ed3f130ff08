/*
 * cmd_report.c -- `ncsim report STATS.json|TRACE [--json]` (CLI.md): where the time went.
 *
 * A trace (.json, .json.gz, .pftrace written by `ncsim run --trace`) gives everything,
 * critical path and instruction kinds included (traces/report.c). A statistics file
 * (`ncsim run --stats`) gives what it holds: per-engine busy and stall, DMA, HBM, MFU/HFU
 * and stall causes per engine; the report says what is missing.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "outputs.h"
#include "report.h"
#include "report_load.h"
#include "trace.h"

ncsim_status_t cli_report_load(const char *path, trc_report_t *rep, char *err, size_t errlen)
{
    return trc_report_load(path, rep, err, errlen);
}

/* --format neuron-profile: the profiler's summary (traces/profile.c, through the API). */
static int report_profile(const char *path, const ncsim_profile_options_t *opt,
                          cli_outputs_t *outputs, const char *out_path)
{
    char *text = NULL;
    ncsim_status_t st = ncsim_profile_summary(path, opt, &text);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim report: %s\n", ncsim_last_error());
        return cli_exit(st);
    }
    int rc = cli_output_write(outputs, out_path, text, strlen(text));
    ncsim_free(text);
    return rc;
}

/* The report of a loaded trace or statistics file, as text, CSV or JSON, to OUT_PATH. */
static int report_print(trc_report_t *rep, int as_json, int by_line, int as_csv, size_t top,
                        cli_outputs_t *outputs, const char *out_path)
{
    if (as_json) {
        char *text = by_line ? trc_report_lines_json(rep) : trc_report_json(rep);
        if (!text) {
            fputs("ncsim report: out of memory\n", stderr);
            return cli_exit(NCSIM_NOMEM);
        }
        int rc = cli_output_write(outputs, out_path, text, strlen(text));
        free(text);
        return rc;
    }
    FILE *out = cli_output_open(outputs, out_path);
    if (!out)
        return cli_exit(NCSIM_IO);
    if (by_line && as_csv)
        trc_report_print_lines_csv(out, rep);
    else if (by_line)
        trc_report_print_lines(out, rep, top);
    else
        trc_report_print(out, rep);
    return cli_output_close(outputs, out_path, out);
}

/* ---- options: one row each (cli/options.h) -------------------------------------------------- */

typedef struct report_args {
    int as_json, by_line, as_csv, profile;
    size_t top;
    const char *out_path, *source;
    ncsim_profile_options_t prof;
} report_args_t;

static int opt_flag(void *p, const char *name, const char *arg)
{
    report_args_t *a = p;
    (void)arg;
    *(strcmp(name, "json") == 0 ? &a->as_json : strcmp(name, "csv") == 0 ? &a->as_csv
                                                                       : &a->by_line) = 1;
    return 0;
}

static int opt_top(void *p, const char *name, const char *arg)
{
    uint64_t v;
    (void)name;
    if (cli_parse_u64(arg, &v)) {
        fprintf(stderr, "ncsim report: --top wants a count, not '%s'\n", arg);
        return -1;
    }
    ((report_args_t *)p)->top = (size_t)v;
    return 0;
}

static int opt_path(void *p, const char *name, const char *arg)
{
    report_args_t *a = p;
    if (strcmp(name, "output") == 0)
        a->out_path = arg;
    else if (strcmp(name, "source") == 0)
        a->source = arg;
    else
        a->prof.program_path = arg;
    return 0;
}

static int opt_format(void *p, const char *name, const char *arg)
{
    report_args_t *a = p;
    (void)name;
    if (!strcmp(arg, "json"))
        a->as_json = 1;
    else if (!strcmp(arg, "neuron-profile"))
        a->profile = 1, a->prof.format = NCSIM_PROFILE_SUMMARY_JSON;
    else if (!strcmp(arg, "neuron-profile-json"))
        a->profile = 1, a->prof.format = NCSIM_PROFILE_JSON;
    else if (!strcmp(arg, "neuron-profile-text"))
        a->profile = 1, a->prof.format = NCSIM_PROFILE_TEXT;
    else if (strcmp(arg, "text") != 0) {
        fprintf(stderr, "ncsim report: unknown --format '%s' (text, json, neuron-profile, "
                        "neuron-profile-json, neuron-profile-text)\n",
                arg);
        return -1;
    }
    return 0;
}

static int opt_core(void *p, const char *name, const char *arg)
{
    uint64_t v;
    (void)name;
    if (cli_parse_u64(arg, &v) || v > UINT32_MAX) {
        fprintf(stderr, "ncsim report: --core wants a core number, not '%s'\n", arg);
        return -1;
    }
    ((report_args_t *)p)->prof.core = (uint32_t)v;
    return 0;
}

static const cli_option_t report_options[] = {
    {"json", 0, NULL, opt_flag, "machine-readable output (units in the key names)"},
    {"by-line", 0, NULL, opt_flag,
     "the per-line profile instead: per source line (or .loc) count,\n"
     "busy, stall by cause, DMA time, sorted by cost"},
    {"csv", 0, NULL, opt_flag, "with --by-line: CSV"},
    {"top", 0, "N", opt_top, "with --by-line: the N costliest lines (default 30; 0: all)"},
    {"source", 0, "FILE", opt_path,
     "with --by-line: the text the line numbers refer to (without it,\n"
     "only a regular file beside STATS/TRACE under the program's\n"
     "recorded file name is read; see docs/security.md)"},
    {"format", 0, "FMT", opt_format,
     "text (default), json (= --json), or the Neuron profiler's\n"
     "summary: neuron-profile (its summary-json object: the\n"
     "profiler's field names and units, *_percent as fractions),\n"
     "neuron-profile-json (summary plus a record per instruction and\n"
     "transfer; traces only), neuron-profile-text (a table). See\n"
     "docs/nki.md for every field"},
    {"core", 0, "N", opt_core, "with neuron-profile: the NeuronCore summarised (default 0)"},
    {"program", 0, "PROG", opt_path,
     "with neuron-profile: the program that ran (.nca/.ncx), for the\n"
     "declared input/output sizes"},
    {"output", 'o', "FILE", opt_path, "write the report to FILE instead of stdout"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t report_command = {
    "report",
    "usage: ncsim report STATS.json|TRACE [--json] [-o FILE]\n"
    "       ncsim report STATS.json|TRACE --by-line [--source FILE] [--csv|--json] [--top N]\n"
    "                    [-o FILE]\n"
    "       ncsim report STATS.json|TRACE --format neuron-profile[-json|-text] [--core N]\n"
    "                    [--program PROG] [-o FILE]\n"
    "\n"
    "Summarise a run: total time; a one-line verdict of what bounds it (an engine, DMA,\n"
    "HBM, a link, a chain of semaphore waits) with its share of the critical path and what\n"
    "would move it; per-engine busy, stall and idle percentages; MFU and HFU; HBM and DMA\n"
    "bandwidth against peak; the ten largest stall causes; the critical path; a table per\n"
    "instruction kind with the cost breakdown that dominates it. TRACE is a file written by\n"
    "`ncsim run --trace` (.json, .json.gz, .pftrace); a statistics file (`ncsim run\n"
    "--stats`) gives all but the critical path and the instruction kinds (its verdict\n"
    "compares busy times). See docs/explain.md.\n",
    report_options,
    22,
    "exit codes: 0 success, 1 the statistics record a failed run (run-time error,\n"
    "deadlock; the report is still printed), 2 usage error, 3 unreadable or invalid file.\n",
    1,
    1,
    "expected one statistics or trace file",
};

/* The combinations of options that cannot work. 0 or 2. */
static int check_combinations(const report_args_t *a)
{
    const char *why = NULL;
    if (a->as_csv && (!a->by_line || a->as_json))
        why = "--csv goes with --by-line, without --json";
    else if (a->source && !a->by_line)
        why = "--source goes with --by-line";
    else if (a->profile && (a->by_line || a->as_json || a->as_csv))
        why = "--format neuron-profile goes without --by-line, --json, --csv";
    else if (!a->profile && (a->prof.core || a->prof.program_path))
        why = "--core and --program go with --format neuron-profile";
    if (why)
        fprintf(stderr, "ncsim report: %s\n", why);
    return why ? 2 : 0;
}

int cli_report(int argc, char **argv)
{
    report_args_t a;
    memset(&a, 0, sizeof a);
    a.top = 30;
    ncsim_profile_options_init(&a.prof);
    int first;
    int rc = cli_parse(&report_command, argc, argv, &a, &first);
    if (rc >= 0)
        return rc;
    if ((rc = check_combinations(&a)))
        return rc;
    const char *path = argv[first], *out_path = a.out_path, *source = a.source;
    int as_json = a.as_json, by_line = a.by_line, as_csv = a.as_csv, profile = a.profile;
    size_t top = a.top;
    ncsim_profile_options_t prof = a.prof;
    /* -o FILE: checked now, put in place when complete; a failure or a signal leaves no
     * file of an earlier run under the name (docs/cli.md, "Output files") */
    if (!out_path)
        out_path = "-";
    static cli_outputs_t outputs;
    rc = cli_output_begin(&outputs, "report", out_path, path, prof.program_path);
    if (rc)
        return rc;
    if (profile)
        return cli_output_end(&outputs, report_profile(path, &prof, &outputs, out_path));
    char err[1024];
    trc_report_t rep;
    ncsim_status_t st = cli_report_load(path, &rep, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim report: %s\n", err);
        return cli_output_end(&outputs, cli_exit(st));
    }
    if (by_line) {
        char why[1024];
        int lt = trc_report_line_texts(&rep, source, why, sizeof why);
        if (lt < 0) {
            fprintf(stderr, "ncsim report: %s\n", why);
            trc_report_free(&rep);
            return cli_output_end(&outputs, cli_exit(NCSIM_IO));
        }
        if (lt > 0)
            fprintf(stderr, "ncsim report: note: no source text: %s\n", why);
    }
    rc = report_print(&rep, as_json, by_line, as_csv, top, &outputs, out_path);
    if (!rc && rep.failed[0]) { /* the report is printed, but a failed run is not a result */
        fprintf(stderr, "ncsim report: %s records a failed run: %s\n", path, rep.failed);
        rc = 1;
    }
    trc_report_free(&rep);
    /* the report of a failed run is kept: it says RUN FAILED, nobody takes it for a result */
    return cli_output_end_keep(&outputs, rc, 1);
}
