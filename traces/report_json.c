/*
 * report_json.c -- the report as JSON (`ncsim report --json`, ncsim_report_json): the figures
 * of trc_report_t with units in the key names, every list whole; and the JSON helpers the
 * per-line profile's JSON (report_lines.c) writes with too.
 */
#include "report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

yajl_gen rpt_json_open(void)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g) {
        yajl_gen_config(g, yajl_gen_beautify, 1);
        yajl_gen_config(g, yajl_gen_indent_string, "  ");
    }
    return g;
}

char *rpt_json_close(yajl_gen g)
{
    const unsigned char *buf;
    size_t len;
    char *out = NULL;
    if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) {
        out = malloc(len + 2);
        if (out) {
            memcpy(out, buf, len);
            out[len] = '\n';
            out[len + 1] = '\0';
        }
    }
    yajl_gen_free(g);
    return out;
}

void rpt_jkey(yajl_gen g, const char *k)
{
    yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

void rpt_jstr(yajl_gen g, const char *k, const char *v)
{
    rpt_jkey(g, k);
    yajl_gen_string(g, (const unsigned char *)v, strlen(v));
}

void rpt_jint(yajl_gen g, const char *k, uint64_t v)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    rpt_jkey(g, k);
    yajl_gen_number(g, buf, (size_t)n);
}

void rpt_jns(yajl_gen g, const char *k, uint64_t ps)
{
    char buf[40];
    rpt_ns3(buf, sizeof buf, ps);
    rpt_jkey(g, k);
    yajl_gen_number(g, buf, strlen(buf));
}

void rpt_jreal(yajl_gen g, const char *k, double v, int decimals)
{
    char buf[64];
    if (!isfinite(v))
        v = 0;
    int n = snprintf(buf, sizeof buf, "%.*f", decimals, v);
    if (n < 0 || (size_t)n >= sizeof buf) /* a huge value (a crafted trace): exponent form */
        n = snprintf(buf, sizeof buf, "%.17g", v);
    rpt_jkey(g, k);
    yajl_gen_number(g, buf, (size_t)n);
}


/* The run, the verdict with its candidates, and the notes. */
static void json_head(yajl_gen g, const trc_report_t *r)
{
    rpt_jstr(g, "source", r->source);
    rpt_jstr(g, "source_kind", r->from_trace ? "trace" : "statistics");
    rpt_jstr(g, "status", r->failed[0] ? "error" : "ok");
    if (r->failed[0])
        rpt_jstr(g, "error", r->failed);
    rpt_jstr(g, "program", r->program);
    rpt_jstr(g, "arch", r->arch);
    rpt_jint(g, "chips", r->chips);
    rpt_jint(g, "cores_used", r->cores_used);
    rpt_jns(g, "total_ns", r->total_ps);
    char verdict[TRC_REPORT_VERDICT_MAX];
    trc_report_verdict(r, verdict, sizeof verdict);
    rpt_jstr(g, "verdict", verdict);
    rpt_jkey(g, "bounds");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nbounds; i++) {
        yajl_gen_map_open(g);
        rpt_jstr(g, "what", r->bounds[i].what);
        rpt_jns(g, "time_ns", r->bounds[i].ps);
        rpt_jreal(g, "share_pct", rpt_pct((double)r->bounds[i].ps, (double)r->bounds_of_ps), 3);
        rpt_jstr(g, "of", r->bounds_from_path ? "critical path" : "total time (busy)");
        rpt_jstr(g, "hint", trc_advice_text(r->bounds[i].advice));
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    rpt_jkey(g, "notes");
    yajl_gen_array_open(g);
    for (int i = 0; i < r->nnotes; i++)
        yajl_gen_string(g, (const unsigned char *)r->notes[i], strlen(r->notes[i]));
    yajl_gen_array_close(g);
}

/* Per engine: busy, stall and idle shares of the total time. */
static void json_engines(yajl_gen g, const trc_report_t *r)
{
    double total = (double)r->total_ps;
    rpt_jkey(g, "engines");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nengines; i++) {
        const trc_report_engine_t *e = &r->engines[i];
        double idle =
            100.0 - rpt_pct((double)e->busy_ps, total) - rpt_pct((double)e->stall_ps, total);
        yajl_gen_map_open(g);
        rpt_jint(g, "core", e->core);
        rpt_jstr(g, "engine", e->name);
        rpt_jint(g, "instructions", e->instructions);
        rpt_jns(g, "busy_ns", e->busy_ps);
        rpt_jreal(g, "busy_pct", rpt_pct((double)e->busy_ps, total), 3);
        rpt_jns(g, "stall_ns", e->stall_ps);
        rpt_jreal(g, "stall_pct", rpt_pct((double)e->stall_ps, total), 3);
        rpt_jreal(g, "idle_pct", idle < 0 ? 0 : idle, 3);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* What a core's DMA and a NeuronLink direction both have: bytes, busy time and share of the
 * run, the rate over the run and while busy, and that rate against `peak` (named peak_key,
 * the share share_key). */
static void json_traffic(yajl_gen g, const trc_report_t *r, uint64_t bytes, uint64_t busy_ps,
                         double peak, const char *peak_key, const char *share_key)
{
    double ach = rpt_gbps(bytes, r->total_ps);
    rpt_jint(g, "bytes", bytes);
    rpt_jns(g, "busy_ns", busy_ps);
    rpt_jreal(g, "busy_pct", rpt_pct((double)busy_ps, (double)r->total_ps), 3);
    rpt_jreal(g, "achieved_gbps", ach, 3);
    rpt_jreal(g, "while_busy_gbps", rpt_gbps(bytes, busy_ps), 3);
    rpt_jreal(g, peak_key, peak, 3);
    rpt_jreal(g, share_key, rpt_pct(ach, peak), 3);
}

/* DMA per core against its peak. */
static void json_dma(yajl_gen g, const trc_report_t *r)
{
    rpt_jkey(g, "dma");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->ndma; i++) {
        const trc_report_dma_t *d = &r->dma[i];
        yajl_gen_map_open(g);
        rpt_jint(g, "core", d->core);
        rpt_jint(g, "transfers", d->transfers);
        json_traffic(g, r, d->bytes, d->busy_ps, r->dma_peak_gbps_per_core, "peak_gbps",
                     "of_peak_pct");
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* MFU and HFU; HBM and DMA bandwidth against peak. */
static void json_compute_memory(yajl_gen g, const trc_report_t *r)
{
    double total = (double)r->total_ps, secs = total * 1e-12;
    rpt_jkey(g, "compute");
    yajl_gen_map_open(g);
    rpt_jint(g, "flops", r->flops);
    rpt_jreal(g, "mfu_pct", rpt_pct((double)r->flops, rpt_peak_flops(r, secs)), 3);
    if (r->have_hw_flops) {
        rpt_jint(g, "hw_flops", r->hw_flops);
        rpt_jreal(g, "hfu_pct", rpt_pct((double)r->hw_flops, rpt_peak_flops(r, secs)), 3);
    }
    rpt_jreal(g, "peak_flops_per_core", r->peak_flops_per_core, 0);
    yajl_gen_map_close(g);

    uint64_t hbm = r->hbm_read + r->hbm_write, dmab = rpt_dma_bytes_total(r);
    double dpeak = r->dma_peak_gbps_per_core * (double)(r->ndma ? r->ndma : 1);
    rpt_jkey(g, "hbm");
    yajl_gen_map_open(g);
    rpt_jint(g, "read_bytes", r->hbm_read);
    rpt_jint(g, "write_bytes", r->hbm_write);
    rpt_jreal(g, "achieved_gbps", rpt_gbps(hbm, r->total_ps), 3);
    rpt_jreal(g, "peak_gbps", r->hbm_peak_gbps, 3);
    rpt_jreal(g, "of_peak_pct", rpt_pct(rpt_gbps(hbm, r->total_ps), r->hbm_peak_gbps), 3);
    yajl_gen_map_close(g);
    rpt_jkey(g, "dma_total");
    yajl_gen_map_open(g);
    rpt_jint(g, "bytes", dmab);
    rpt_jreal(g, "achieved_gbps", rpt_gbps(dmab, r->total_ps), 3);
    rpt_jreal(g, "peak_gbps", dpeak, 3);
    rpt_jreal(g, "of_peak_pct", rpt_pct(rpt_gbps(dmab, r->total_ps), dpeak), 3);
    yajl_gen_map_close(g);
}

/* Each NeuronLink direction. */
static void json_links(yajl_gen g, const trc_report_t *r)
{
    rpt_jkey(g, "links");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nlinks; i++) {
        const trc_report_link_t *l = &r->links[i];
        yajl_gen_map_open(g);
        rpt_jint(g, "from_chip", l->from_chip);
        rpt_jint(g, "to_chip", l->to_chip);
        if (l->transfers)
            rpt_jint(g, "transfers", l->transfers);
        json_traffic(g, r, l->bytes, l->busy_ps, l->gbps, "capacity_gbps", "utilisation_pct");
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* Each collective. */
static void json_collectives(yajl_gen g, const trc_report_t *r)
{
    rpt_jkey(g, "collectives");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->ncolls; i++) {
        const trc_report_collective_t *c = &r->colls[i];
        uint64_t t = c->end_ps - c->start_ps;
        double alg = rpt_gbps(c->size, t);
        yajl_gen_map_open(g);
        rpt_jint(g, "id", c->id);
        rpt_jstr(g, "collective", c->op);
        rpt_jstr(g, "group", c->group);
        rpt_jint(g, "members", c->members);
        rpt_jstr(g, "algorithm", c->algorithm);
        rpt_jint(g, "steps", c->steps);
        rpt_jint(g, "bytes", c->size);
        rpt_jns(g, "start_ns", c->start_ps);
        rpt_jns(g, "time_ns", t);
        rpt_jreal(g, "algbw_gbps", alg, 3);
        rpt_jreal(g, "busbw_gbps", alg * rpt_busbw_factor(c), 3);
        rpt_jns(g, "latency_ns", c->latency_ps);
        rpt_jreal(g, "latency_pct", rpt_pct((double)c->latency_ps, (double)t), 3);
        rpt_jstr(g, "bottleneck", c->bottleneck);
        rpt_jreal(g, "bottleneck_pct_of_data_time",
              rpt_pct((double)c->bottleneck_ps, (double)c->data_ps), 3);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* The largest stall causes. */
static void json_stalls(yajl_gen g, const trc_report_t *r)
{
    double total = (double)r->total_ps;
    rpt_jkey(g, "top_stalls");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nstalls && i < RPT_SHOWN_STALLS; i++) {
        const trc_report_stall_t *s = &r->stalls[i];
        yajl_gen_map_open(g);
        rpt_jint(g, "core", s->core);
        rpt_jstr(g, "engine", s->engine);
        rpt_jstr(g, "cause", s->cause);
        rpt_jns(g, "time_ns", s->ps);
        rpt_jreal(g, "of_total_pct", rpt_pct((double)s->ps, total), 3);
        if (s->instructions)
            rpt_jint(g, "instructions", s->instructions);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* The critical path, every run (null from a statistics file). */
static void json_path(yajl_gen g, const trc_report_t *r)
{
    rpt_jkey(g, "critical_path");
    if (!r->have_path) {
        yajl_gen_null(g);
    } else {
        yajl_gen_map_open(g);
        rpt_jns(g, "end_ns", r->path_end_ps);
        rpt_jns(g, "waiting_ns", r->path_wait_ps);
        rpt_jkey(g, "by_track");
        yajl_gen_array_open(g);
        for (size_t i = 0; i < r->npath_tracks; i++) {
            yajl_gen_map_open(g);
            rpt_jint(g, "core", r->path_tracks[i].core);
            rpt_jstr(g, "track", r->path_tracks[i].track);
            rpt_jns(g, "time_ns", r->path_tracks[i].ps);
            yajl_gen_map_close(g);
        }
        yajl_gen_array_close(g);
        rpt_jkey(g, "runs");
        yajl_gen_array_open(g);
        for (size_t i = 0; i < r->npath; i++) {
            const trc_report_step_t *s = &r->path[i];
            yajl_gen_map_open(g);
            rpt_jint(g, "core", s->core);
            rpt_jstr(g, "track", s->track);
            rpt_jstr(g, "what", s->what);
            rpt_jint(g, "count", s->count);
            rpt_jns(g, "start_ns", s->start_ps);
            rpt_jns(g, "end_ns", s->end_ps);
            rpt_jns(g, "wait_ns", s->wait_ps);
            rpt_jint(g, "first_index", s->first_index);
            rpt_jint(g, "last_index", s->last_index);
            rpt_jint(g, "first_line", s->line_first);
            rpt_jint(g, "last_line", s->line_last);
            rpt_jstr(g, "reached_by", s->via);
            yajl_gen_map_close(g);
        }
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
    }
}

/* The instruction kinds and what each costs. */
static void json_kinds(yajl_gen g, const trc_report_t *r)
{
    rpt_jkey(g, "instruction_kinds");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nkinds; i++) {
        const trc_report_kind_t *k = &r->kinds[i];
        double n = (double)(k->count ? k->count : 1);
        yajl_gen_map_open(g);
        rpt_jstr(g, "engine", k->engine);
        rpt_jstr(g, "instruction", k->name);
        rpt_jint(g, "count", k->count);
        rpt_jns(g, "busy_ns", k->busy_ps);
        rpt_jreal(g, "mean_ii_ns", (double)k->busy_ps / 1000.0 / n, 3);
        rpt_jreal(g, "mean_latency_ns", (double)k->latency_ps / 1000.0 / n, 3);
        rpt_jns(g, "wait_ns", k->wait_ps);
        rpt_jint(g, "flops", k->flops);
        rpt_jint(g, "bytes", k->bytes);
        if (k->cost[0]) {
            rpt_jstr(g, "cost", k->cost);
            rpt_jreal(g, "cost_busy_pct", rpt_pct((double)k->cost_busy_ps, (double)k->busy_ps), 3);
        }
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

char *trc_report_json(const trc_report_t *r)
{
    yajl_gen g = rpt_json_open();
    if (!g)
        return NULL;
    yajl_gen_map_open(g);
    json_head(g, r);
    json_engines(g, r);
    json_dma(g, r);
    json_compute_memory(g, r);
    json_links(g, r);
    json_collectives(g, r);
    json_stalls(g, r);
    json_path(g, r);
    json_kinds(g, r);
    yajl_gen_map_close(g);
    return rpt_json_close(g);
}
