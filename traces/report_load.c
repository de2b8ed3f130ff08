/*
 * report_load.c -- a report (report.h) from a file: a trace (.json, .json.gz, .pftrace written by
 * `ncsim run --trace`) or a statistics file (`ncsim run --stats`). What `ncsim report` and
 * `ncsim diff` read, and what the public API's ncsim_report_json returns (one verdict for the
 * command line, the C API and the Python package).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_load.h"
#include "trace.h"

uint64_t trc_stats_ps(json_t *v)
{
    double ns = json_number_value(v);
    return ns > 0 ? (uint64_t)llround(ns * 1000.0) : 0;
}

uint64_t trc_stats_u64(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
    double d = json_number_value(v);
    return d > 0 ? (uint64_t)llround(d) : 0;
}

ncsim_status_t trc_stats_head(const char *path, json_t *root, char *program, size_t program_len,
                              char *arch, size_t arch_len, char *failed, size_t failed_len,
                              char *err, size_t errlen)
{
    if (!json_is_array(json_object_get(root, "cores")) ||
        !json_is_number(json_object_get(root, "total_ns"))) {
        snprintf(err, errlen, "%s: neither a trace nor a statistics file (no \"cores\" and "
                              "\"total_ns\")",
                 path);
        return NCSIM_FORMAT;
    }
    const char *s = json_string_value(json_object_get(root, "program"));
    snprintf(program, program_len, "%s", s ? s : "");
    s = json_string_value(json_object_get(root, "arch"));
    snprintf(arch, arch_len, "%s", s ? s : "");
    failed[0] = '\0';
    s = json_string_value(json_object_get(root, "status"));
    if (s && strcmp(s, "ok") != 0) { /* a failed run's statistics (ncsim run --stats) */
        const char *why = json_string_value(json_object_get(root, "error"));
        snprintf(failed, failed_len, "%s", why && why[0] ? why : s);
    }
    return NCSIM_OK;
}


/* The statistics JSON (CLI.md schema and sim/stats.c extras) into a report. */
static ncsim_status_t report_from_stats(const char *path, json_t *root, trc_report_t *rep,
                                        char *err, size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    snprintf(rep->source, sizeof rep->source, "%s", path);
    ncsim_status_t head = trc_stats_head(path, root, rep->program, sizeof rep->program,
                                         rep->arch, sizeof rep->arch, rep->failed,
                                         sizeof rep->failed, err, errlen);
    if (head != NCSIM_OK)
        return head;
    json_t *cores = json_object_get(root, "cores");
    json_t *total = json_object_get(root, "total_ns");
    rep->total_ps = trc_stats_ps(total);
    rep->flops = trc_stats_u64(json_object_get(root, "tensor_flops"));
    json_t *hw = json_object_get(root, "tensor_hw_flops");
    rep->have_hw_flops = json_is_number(hw);
    rep->hw_flops = trc_stats_u64(hw);
    rep->peak_flops_per_core = json_number_value(json_object_get(root, "peak_flops_per_core"));
    json_t *hbm = json_object_get(root, "hbm");
    rep->hbm_read = trc_stats_u64(json_object_get(hbm, "read_bytes"));
    rep->hbm_write = trc_stats_u64(json_object_get(hbm, "write_bytes"));
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
        uint32_t id = (uint32_t)trc_stats_u64(json_object_get(co, "id"));
        uint64_t chip = trc_stats_u64(json_object_get(co, "chip"));
        if (chip + 1 > max_chip)
            max_chip = chip + 1;
        json_t *engines = json_object_get(co, "engines");
        const char *name;
        json_t *e;
        int used = 0;
        json_object_foreach(engines, name, e)
        {
            uint64_t n = trc_stats_u64(json_object_get(e, "instructions"));
            if (!n)
                continue;
            used = 1;
            trc_report_engine_t *re = trc_report_add_engine(rep);
            if (!re)
                return NCSIM_NOMEM;
            re->core = id;
            snprintf(re->name, sizeof re->name, "%s", name);
            re->instructions = n;
            re->busy_ps = trc_stats_ps(json_object_get(e, "busy_ns"));
            re->stall_ps = trc_stats_ps(json_object_get(e, "stall_ns"));
            json_t *by = json_object_get(e, "stall_by_cause_ns");
            for (int c = 0; c < TRC_STALL_COUNT; c++) {
                uint64_t ps = trc_stats_ps(json_object_get(by, trc_stall_key((trc_stall_t)c)));
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
        uint64_t transfers = trc_stats_u64(json_object_get(dma, "transfers"));
        if (transfers) {
            trc_report_dma_t *d = trc_report_add_dma(rep);
            if (!d)
                return NCSIM_NOMEM;
            d->core = id;
            d->transfers = transfers;
            d->bytes = trc_stats_u64(json_object_get(dma, "bytes"));
            d->busy_ps = trc_stats_ps(json_object_get(dma, "busy_ns"));
            d->descriptor_busy_ps = trc_stats_ps(json_object_get(dma, "descriptor_busy_ns"));
        }
    }
    rep->chips = max_chip;
    json_t *lines = json_object_get(root, "lines");
    json_t *ln;
    json_array_foreach(lines, i, ln)
    {
        uint32_t no = (uint32_t)trc_stats_u64(json_object_get(ln, "line"));
        trc_report_line_t *l = trc_report_line(rep, no);
        if (!l)
            return NCSIM_NOMEM;
        l->instructions = trc_stats_u64(json_object_get(ln, "instructions"));
        l->busy_ps = trc_stats_ps(json_object_get(ln, "busy_ns"));
        json_t *by = json_object_get(ln, "stall_by_cause_ns");
        for (int c = 0; c < TRC_STALL_COUNT; c++)
            l->stall_by[c] = trc_stats_ps(json_object_get(by, trc_stall_key((trc_stall_t)c)));
        l->transfers = trc_stats_u64(json_object_get(ln, "transfers"));
        l->dma_bytes = trc_stats_u64(json_object_get(ln, "dma_bytes"));
        l->dma_ps = trc_stats_ps(json_object_get(ln, "dma_ns"));
        l->dma_wait_ps = trc_stats_ps(json_object_get(ln, "dma_wait_ns"));
    }
    json_t *links = json_object_get(root, "links");
    json_t *lk;
    json_array_foreach(links, i, lk)
    {
        uint64_t bytes = trc_stats_u64(json_object_get(lk, "bytes"));
        if (!bytes)
            continue; /* links no collective used */
        trc_report_link_t *l = trc_report_add_link(rep);
        if (!l)
            return NCSIM_NOMEM;
        l->from_chip = (uint32_t)trc_stats_u64(json_object_get(lk, "from_chip"));
        l->to_chip = (uint32_t)trc_stats_u64(json_object_get(lk, "to_chip"));
        l->gbps = json_number_value(json_object_get(lk, "peak_gbps"));
        l->bytes = bytes;
        l->busy_ps = trc_stats_ps(json_object_get(lk, "busy_ns"));
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

ncsim_status_t trc_stats_json(const char *path, json_t **root, char *err, size_t errlen)
{
    json_error_t jerr;
    *root = json_load_file(path, 0, &jerr);
    if (*root)
        return NCSIM_OK;
    snprintf(err, errlen, "%s:%d:%d: not valid JSON: %s", path, jerr.line, jerr.column, jerr.text);
    return NCSIM_FORMAT;
}

ncsim_status_t trc_sniff_trace(const char *path, int *is_trace, char *err, size_t errlen)
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
    *is_trace = looks_like_trace(path, head, n);
    free(head);
    return NCSIM_OK;
}

/* Control characters of a string read from data as '?': a crafted file must not send escape
 * sequences to the terminal the report is printed on (docs/security.md). */
static void scrub_text(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

ncsim_status_t trc_report_load(const char *path, trc_report_t *rep, char *err, size_t errlen)
{
    int is_trace;
    ncsim_status_t st = trc_sniff_trace(path, &is_trace, err, errlen);
    if (st != NCSIM_OK)
        return st;
    if (is_trace) {
        st = trc_report_from_trace(path, rep, err, errlen);
    } else {
        json_t *root;
        st = trc_stats_json(path, &root, err, errlen);
        if (st == NCSIM_OK) {
            st = report_from_stats(path, root, rep, err, errlen);
            json_decref(root);
            if (st == NCSIM_NOMEM)
                snprintf(err, errlen, "out of memory");
            if (st != NCSIM_OK)
                trc_report_free(rep);
        }
    }
    if (st == NCSIM_OK) {
        scrub_text(rep->program);
        scrub_text(rep->arch);
        scrub_text(rep->failed);
    }
    return st;
}

