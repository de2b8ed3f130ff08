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
#include "file.h"
#include "load.h"
#include "report.h"
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

static uint64_t ps_of(json_t *v)
{
    double ns = json_number_value(v);
    return ns > 0 ? (uint64_t)llround(ns * 1000.0) : 0;
}

static uint64_t u64_of(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
    double d = json_number_value(v);
    return d > 0 ? (uint64_t)llround(d) : 0;
}

/* The statistics JSON (CLI.md schema and sim/stats.c extras) into a report. */
static ncsim_status_t report_from_stats(const char *path, json_t *root, trc_report_t *rep,
                                        char *err, size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    snprintf(rep->source, sizeof rep->source, "%s", path);
    json_t *cores = json_object_get(root, "cores");
    json_t *total = json_object_get(root, "total_ns");
    if (!json_is_array(cores) || !json_is_number(total)) {
        snprintf(err, errlen, "%s: neither a trace nor a statistics file (no \"cores\" and "
                              "\"total_ns\")",
                 path);
        return NCSIM_FORMAT;
    }
    const char *s = json_string_value(json_object_get(root, "program"));
    snprintf(rep->program, sizeof rep->program, "%s", s ? s : "");
    s = json_string_value(json_object_get(root, "arch"));
    snprintf(rep->arch, sizeof rep->arch, "%s", s ? s : "");
    s = json_string_value(json_object_get(root, "status"));
    if (s && strcmp(s, "ok") != 0) { /* a failed run's statistics (ncsim run --stats) */
        const char *why = json_string_value(json_object_get(root, "error"));
        snprintf(rep->failed, sizeof rep->failed, "%s", why && why[0] ? why : s);
    }
    rep->total_ps = ps_of(total);
    rep->flops = u64_of(json_object_get(root, "tensor_flops"));
    json_t *hw = json_object_get(root, "tensor_hw_flops");
    rep->have_hw_flops = json_is_number(hw);
    rep->hw_flops = u64_of(hw);
    rep->peak_flops_per_core = json_number_value(json_object_get(root, "peak_flops_per_core"));
    json_t *hbm = json_object_get(root, "hbm");
    rep->hbm_read = u64_of(json_object_get(hbm, "read_bytes"));
    rep->hbm_write = u64_of(json_object_get(hbm, "write_bytes"));
    rep->hbm_peak_gbps = json_number_value(json_object_get(hbm, "peak_gbps"));
    json_t *cfg = json_object_get(root, "arch_config");
    json_t *dma_cfg = json_object_get(cfg, "dma");
    rep->dma_peak_gbps_per_core =
        json_number_value(json_object_get(dma_cfg, "engine_bandwidth_gbps")) *
        json_number_value(json_object_get(dma_cfg, "engines"));
    uint64_t max_chip = 0;
    size_t i;
    json_t *co;
    json_array_foreach(cores, i, co)
    {
        uint32_t id = (uint32_t)u64_of(json_object_get(co, "id"));
        uint64_t chip = u64_of(json_object_get(co, "chip"));
        if (chip + 1 > max_chip)
            max_chip = chip + 1;
        json_t *engines = json_object_get(co, "engines");
        const char *name;
        json_t *e;
        int used = 0;
        json_object_foreach(engines, name, e)
        {
            uint64_t n = u64_of(json_object_get(e, "instructions"));
            if (!n)
                continue;
            used = 1;
            trc_report_engine_t *re = trc_report_add_engine(rep);
            if (!re)
                return NCSIM_NOMEM;
            re->core = id;
            snprintf(re->name, sizeof re->name, "%s", name);
            re->instructions = n;
            re->busy_ps = ps_of(json_object_get(e, "busy_ns"));
            re->stall_ps = ps_of(json_object_get(e, "stall_ns"));
            json_t *by = json_object_get(e, "stall_by_cause_ns");
            for (int c = 0; c < TRC_STALL_COUNT; c++) {
                uint64_t ps = ps_of(json_object_get(by, trc_stall_key((trc_stall_t)c)));
                if (!ps)
                    continue;
                trc_report_stall_t *st = trc_report_add_stall(rep);
                if (!st)
                    return NCSIM_NOMEM;
                st->core = id;
                snprintf(st->engine, sizeof st->engine, "%s", name);
                snprintf(st->cause, sizeof st->cause, "%s", trc_stall_text((trc_stall_t)c));
                st->ps = ps;
            }
        }
        rep->cores_used += (uint64_t)used;
        json_t *dma = json_object_get(co, "dma");
        uint64_t transfers = u64_of(json_object_get(dma, "transfers"));
        if (transfers) {
            trc_report_dma_t *d = trc_report_add_dma(rep);
            if (!d)
                return NCSIM_NOMEM;
            d->core = id;
            d->transfers = transfers;
            d->bytes = u64_of(json_object_get(dma, "bytes"));
            d->busy_ps = ps_of(json_object_get(dma, "busy_ns"));
        }
    }
    rep->chips = max_chip;
    json_t *lines = json_object_get(root, "lines");
    json_t *ln;
    json_array_foreach(lines, i, ln)
    {
        trc_report_line_t *l = trc_report_line(rep, (uint32_t)u64_of(json_object_get(ln, "line")));
        if (!l)
            return NCSIM_NOMEM;
        l->instructions = u64_of(json_object_get(ln, "instructions"));
        l->busy_ps = ps_of(json_object_get(ln, "busy_ns"));
        json_t *by = json_object_get(ln, "stall_by_cause_ns");
        for (int c = 0; c < TRC_STALL_COUNT; c++)
            l->stall_by[c] = ps_of(json_object_get(by, trc_stall_key((trc_stall_t)c)));
        l->transfers = u64_of(json_object_get(ln, "transfers"));
        l->dma_bytes = u64_of(json_object_get(ln, "dma_bytes"));
        l->dma_ps = ps_of(json_object_get(ln, "dma_ns"));
        l->dma_wait_ps = ps_of(json_object_get(ln, "dma_wait_ns"));
    }
    json_t *links = json_object_get(root, "links");
    json_t *lk;
    json_array_foreach(links, i, lk)
    {
        uint64_t bytes = u64_of(json_object_get(lk, "bytes"));
        if (!bytes)
            continue; /* links no collective used */
        trc_report_link_t *l = trc_report_add_link(rep);
        if (!l)
            return NCSIM_NOMEM;
        l->from_chip = (uint32_t)u64_of(json_object_get(lk, "from_chip"));
        l->to_chip = (uint32_t)u64_of(json_object_get(lk, "to_chip"));
        l->gbps = json_number_value(json_object_get(lk, "peak_gbps"));
        l->bytes = bytes;
        l->busy_ps = ps_of(json_object_get(lk, "busy_ns"));
    }
    trc_report_note(rep, "from a statistics file: no critical path, no instruction kinds, no "
                         "collective steps and no semaphore names (report on a trace for those)");
    trc_report_finish(rep);
    return NCSIM_OK;
}

/* A trace, or a statistics file? Traces: .pftrace, gzip, or JSON with "traceEvents". */
static int looks_like_trace(const char *path, const char *head, size_t n)
{
    if (trc_format_for_path(path) == TRC_FORMAT_PFTRACE)
        return 1;
    if (n >= 2 && (unsigned char)head[0] == 0x1f && (unsigned char)head[1] == 0x8b)
        return 1;
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\t' || head[i] == '\r'))
        i++;
    if (i < n && head[i] != '{' && head[i] != '[')
        return 1; /* binary: the trace reader will say what it is */
    return strstr(head, "\"traceEvents\"") != NULL;
}

/* Control characters of a string read from data as '?': a crafted file must not send escape
 * sequences to the terminal the report is printed on (docs/security.md). */
static void scrub_text(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

ncsim_status_t cli_report_load(const char *path, trc_report_t *rep, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NCSIM_IO;
    }
    char *head = malloc(65537);
    if (!head) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    size_t n = fread(head, 1, 65536, f);
    head[n] = '\0';
    fclose(f);
    ncsim_status_t st;
    if (looks_like_trace(path, head, n)) {
        st = trc_report_from_trace(path, rep, err, errlen);
    } else {
        json_error_t jerr;
        json_t *root = json_load_file(path, 0, &jerr);
        if (!root) {
            snprintf(err, errlen, "%s:%d:%d: not valid JSON: %s", path, jerr.line, jerr.column,
                     jerr.text);
            st = NCSIM_FORMAT;
        } else {
            st = report_from_stats(path, root, rep, err, errlen);
            json_decref(root);
            if (st == NCSIM_NOMEM)
                snprintf(err, errlen, "out of memory");
            if (st != NCSIM_OK)
                trc_report_free(rep);
        }
    }
    free(head);
    if (st == NCSIM_OK) {
        scrub_text(rep->program);
        scrub_text(rep->arch);
        scrub_text(rep->failed);
    }
    return st;
}

/* --format neuron-profile: the profiler's summary (traces/profile.c, through the API). */
static int report_profile(const char *path, const ncsim_profile_options_t *opt,
                          const char *out_path)
{
    char *text = NULL;
    ncsim_status_t st = ncsim_profile_summary(path, opt, &text);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim report: %s\n", ncsim_last_error());
        return cli_exit(st);
    }
    int rc = 0;
    if (out_path ? sim_write_file(out_path, text, strlen(text)) != 0 : fputs(text, stdout) < 0) {
        fprintf(stderr, "ncsim report: cannot write %s: %s\n", out_path ? out_path : "stdout",
                strerror(errno));
        rc = cli_exit(NCSIM_IO);
    }
    ncsim_free(text);
    return rc;
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
    if (profile)
        return report_profile(path, &prof, out_path);
    char err[1024];
    trc_report_t rep;
    ncsim_status_t st = cli_report_load(path, &rep, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim report: %s\n", err);
        return cli_exit(st);
    }
    int rc = 0;
    if (by_line) {
        char why[1024];
        int lt = trc_report_line_texts(&rep, source, why, sizeof why);
        if (lt < 0) {
            fprintf(stderr, "ncsim report: %s\n", why);
            trc_report_free(&rep);
            return cli_exit(NCSIM_IO);
        }
        if (lt > 0)
            fprintf(stderr, "ncsim report: note: no source text: %s\n", why);
    }
    if (as_json) {
        char *text = by_line ? trc_report_lines_json(&rep) : trc_report_json(&rep);
        if (!text) {
            fputs("ncsim report: out of memory\n", stderr);
            rc = cli_exit(NCSIM_NOMEM);
        } else if (out_path ? sim_write_file(out_path, text, strlen(text)) != 0
                            : fputs(text, stdout) < 0) {
            fprintf(stderr, "ncsim report: cannot write %s: %s\n",
                    out_path ? out_path : "stdout", strerror(errno));
            rc = cli_exit(NCSIM_IO);
        }
        free(text);
    } else {
        FILE *out = stdout;
        isa_file_out_t file = {0};
        if (out_path && isa_file_begin(&file, out_path)) {
            fprintf(stderr, "ncsim report: cannot write %s: %s\n", out_path, strerror(errno));
            rc = cli_exit(NCSIM_IO);
        } else {
            if (out_path)
                out = file.f;
            if (by_line && as_csv)
                trc_report_print_lines_csv(out, &rep);
            else if (by_line)
                trc_report_print_lines(out, &rep, top);
            else
                trc_report_print(out, &rep);
            /* through a temporary renamed into place: a failure leaves no partial file */
            if (out_path && isa_file_commit(&file, 1) != 0) {
                fprintf(stderr, "ncsim report: cannot write %s: %s\n", out_path,
                        strerror(errno));
                rc = cli_exit(NCSIM_IO);
            }
        }
    }
    if (!rc && rep.failed[0]) { /* the report is printed, but a failed run is not a result */
        fprintf(stderr, "ncsim report: %s records a failed run: %s\n", path, rep.failed);
        rc = 1;
    }
    trc_report_free(&rep);
    return rc;
}
