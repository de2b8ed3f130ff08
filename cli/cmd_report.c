/*
 * cmd_report.c -- `ncsim report STATS.json|TRACE [--json]` (CLI.md): where the time went.
 *
 * A trace (.json, .json.gz, .pftrace written by `ncsim run --trace`) gives everything,
 * critical path and instruction kinds included (traces/report.c). A statistics file
 * (`ncsim run --stats`) gives what it holds: per-engine busy and stall, DMA, HBM, MFU/HFU
 * and stall causes per engine; the report says what is missing.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "outputs.h"
#include "report.h"
#include "report_load.h"
#include "trace.h"

static const char usage_report[] =
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
    "compares busy times). See docs/explain.md.\n"
    "  --json              machine-readable output (units in the key names)\n"
    "  --by-line           the per-line profile instead: per source line (or .loc) count,\n"
    "                      busy, stall by cause, DMA time, sorted by cost\n"
    "  --csv               with --by-line: CSV\n"
    "  --top N             with --by-line: the N costliest lines (default 30; 0: all)\n"
    "  --source FILE       with --by-line: the text the line numbers refer to (without it,\n"
    "                      only a regular file beside STATS/TRACE under the program's\n"
    "                      recorded file name is read; see docs/security.md)\n"
    "  --format FMT        text (default), json (= --json), or the Neuron profiler's\n"
    "                      summary: neuron-profile (its summary-json object: the\n"
    "                      profiler's field names and units, *_percent as fractions),\n"
    "                      neuron-profile-json (summary plus a record per instruction and\n"
    "                      transfer; traces only), neuron-profile-text (a table). See\n"
    "                      docs/nki.md for every field\n"
    "  --core N            with neuron-profile: the NeuronCore summarised (default 0)\n"
    "  --program PROG      with neuron-profile: the program that ran (.nca/.ncx), for the\n"
    "                      declared input/output sizes\n"
    "  -o, --output FILE   write the report to FILE instead of stdout\n"
    "exit codes: 0 success, 1 the statistics record a failed run (run-time error,\n"
    "deadlock; the report is still printed), 2 usage error, 3 unreadable or invalid file.\n";

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

int cli_report(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"by-line", no_argument, 0, 'L'},
                                         {"csv", no_argument, 0, 'C'},
                                         {"top", required_argument, 0, 'T'},
                                         {"output", required_argument, 0, 'o'},
                                         {"source", required_argument, 0, 'S'},
                                         {"format", required_argument, 0, 'F'},
                                         {"core", required_argument, 0, 'K'},
                                         {"program", required_argument, 0, 'P'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int as_json = 0, by_line = 0, as_csv = 0;
    size_t top = 30;
    char *endp;
    const char *out_path = NULL, *source = NULL;
    ncsim_profile_options_t prof;
    ncsim_profile_options_init(&prof);
    int profile = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = 1; break;
        case 'L': by_line = 1; break;
        case 'C': as_csv = 1; break;
        case 'T':
            top = (size_t)strtoull(optarg, &endp, 10);
            if (*endp || !*optarg || *optarg == '-') {
                fprintf(stderr, "ncsim report: --top wants a count, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'o': out_path = optarg; break;
        case 'S': source = optarg; break;
        case 'F':
            if (!strcmp(optarg, "json"))
                as_json = 1;
            else if (!strcmp(optarg, "neuron-profile"))
                profile = 1, prof.format = NCSIM_PROFILE_SUMMARY_JSON;
            else if (!strcmp(optarg, "neuron-profile-json"))
                profile = 1, prof.format = NCSIM_PROFILE_JSON;
            else if (!strcmp(optarg, "neuron-profile-text"))
                profile = 1, prof.format = NCSIM_PROFILE_TEXT;
            else if (strcmp(optarg, "text") != 0) {
                fprintf(stderr, "ncsim report: unknown --format '%s' (text, json, "
                                "neuron-profile, neuron-profile-json, neuron-profile-text)\n",
                        optarg);
                return 2;
            }
            break;
        case 'K': {
            unsigned long long v = strtoull(optarg, &endp, 10);
            if (*endp || !*optarg || *optarg == '-' || v > UINT32_MAX) {
                fprintf(stderr, "ncsim report: --core wants a core number, not '%s'\n", optarg);
                return 2;
            }
            prof.core = (uint32_t)v;
            break;
        }
        case 'P': prof.program_path = optarg; break;
        case 'h': fputs(usage_report, stdout); return 0;
        default: fputs(usage_report, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ncsim report: expected one statistics or trace file\n%s",
                usage_report);
        return 2;
    }
    if (as_csv && (!by_line || as_json)) {
        fputs("ncsim report: --csv goes with --by-line, without --json\n", stderr);
        return 2;
    }
    if (source && !by_line) {
        fputs("ncsim report: --source goes with --by-line\n", stderr);
        return 2;
    }
    const char *path = argv[optind];
    if (profile && (by_line || as_json || as_csv)) {
        fputs("ncsim report: --format neuron-profile goes without --by-line, --json, --csv\n",
              stderr);
        return 2;
    }
    if (!profile && (prof.core || prof.program_path)) {
        fputs("ncsim report: --core and --program go with --format neuron-profile\n", stderr);
        return 2;
    }
    /* -o FILE: checked now, put in place when complete; a failure or a signal leaves no
     * file of an earlier run under the name (docs/cli.md, "Output files") */
    if (!out_path)
        out_path = "-";
    static cli_outputs_t outputs;
    int rc = cli_output_begin(&outputs, "report", out_path, path, prof.program_path);
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
