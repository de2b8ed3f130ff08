/*
 * report_text.c -- the report as text (`ncsim report`): the figures of trc_report_t, each
 * section a table with its units; the verdict from report_verdict.c.
 */
#include "report_internal.h"

#include <stdio.h>
#include <string.h>

/* NeuronLinks and collectives, when the run had any. */
static void print_links_and_collectives(FILE *out, const trc_report_t *r)
{
    char a[40], b[40];
    double total = (double)r->total_ps;
    if (r->nlinks) {
        fprintf(out, "\nNeuronLinks (per direction; busy: at least one chunk crossing; "
                     "utilisation: achieved over capacity for the total time)\n");
        fprintf(out, "  link     transfers           bytes       busy (ns)  busy (%%)  achieved "
                     "(GB/s)  while busy (GB/s)  capacity (GB/s)  utilisation (%%)\n");
        for (size_t i = 0; i < r->nlinks; i++) {
            const trc_report_link_t *l = &r->links[i];
            char link[24], n[24];
            snprintf(link, sizeof link, "%u->%u", l->from_chip, l->to_chip);
            if (l->transfers)
                snprintf(n, sizeof n, "%llu", (unsigned long long)l->transfers);
            else
                snprintf(n, sizeof n, "-");
            double ach = rpt_gbps(l->bytes, r->total_ps);
            fprintf(out, "  %-7s  %9s  %14llu  %14s  %8.1f  %15.1f  %17.1f  %15.1f  %15.1f\n", link,
                    n, (unsigned long long)l->bytes, rpt_ns3(a, sizeof a, l->busy_ps),
                    rpt_pct((double)l->busy_ps, total), ach, rpt_gbps(l->bytes, l->busy_ps),
                    l->gbps, rpt_pct(ach, l->gbps));
        }
    }
    if (r->ncolls) {
        uint64_t sum = 0;
        for (size_t i = 0; i < r->ncolls; i++)
            sum += r->colls[i].end_ps - r->colls[i].start_ps;
        fprintf(out, "\ncollectives: %zu, %s ns in total (algbw: bytes / time; busbw: algbw x "
                     "the ring factor; latency: fixed step latencies; bottleneck: the resource "
                     "busiest in the steps, with its share of their data time)\n",
                r->ncolls, rpt_ns3(a, sizeof a, sum));
        fprintf(out, "     id  collective      group         members  algorithm  steps           "
                     "bytes       time (ns)  algbw (GB/s)  busbw (GB/s)  latency (%%)  "
                     "bottleneck\n");
        for (size_t i = 0; i < r->ncolls; i++) {
            if (r->ncolls > RPT_SHOWN_COLLS && i == RPT_SHOWN_COLLS) {
                fprintf(out, "  ... %zu more (--json has them all) ...\n",
                        r->ncolls - RPT_SHOWN_COLLS);
                break;
            }
            const trc_report_collective_t *c = &r->colls[i];
            uint64_t t = c->end_ps - c->start_ps;
            double alg = rpt_gbps(c->size, t);
            char bn[96];
            if (c->bottleneck[0])
                snprintf(bn, sizeof bn, "%s (%.1f %%)", c->bottleneck,
                         rpt_pct((double)c->bottleneck_ps, (double)c->data_ps));
            else
                snprintf(bn, sizeof bn, "-");
            fprintf(out, "  %5llu  %-14s  %-12s  %7u  %-9s  %5u  %14llu  %14s  %12.1f  %12.1f  "
                         "%11.1f  %s\n",
                    (unsigned long long)c->id, c->op, c->group[0] ? c->group : "-", c->members,
                    c->algorithm, c->steps, (unsigned long long)c->size, rpt_ns3(b, sizeof b, t),
                    alg, alg * rpt_busbw_factor(c), rpt_pct((double)c->latency_ps, (double)t), bn);
        }
    }
}

/* The run, its notes, its total time and the verdict. */
static void print_head(FILE *out, const trc_report_t *r)
{
    char a[40];
    double total = (double)r->total_ps;
    fprintf(out, "ncsim report: %s (%s)\n", r->source,
            r->from_trace ? "trace" : "statistics file");
    fprintf(out, "program: %s; architecture: %s; %llu chip%s, %llu core%s used\n",
            r->program[0] ? r->program : "?", r->arch[0] ? r->arch : "?",
            (unsigned long long)r->chips, r->chips == 1 ? "" : "s",
            (unsigned long long)r->cores_used, r->cores_used == 1 ? "" : "s");
    if (r->failed[0])
        fprintf(out, "RUN FAILED: %s\n(the figures below cover the run up to the failure)\n",
                r->failed);
    for (int i = 0; i < r->nnotes; i++)
        fprintf(out, "note: %s\n", r->notes[i]);
    fprintf(out, "total time: %s ns (%.3f us)\n", rpt_ns3(a, sizeof a, r->total_ps),
            total / 1e6);
    char verdict[TRC_REPORT_VERDICT_MAX];
    trc_report_verdict(r, verdict, sizeof verdict);
    if (verdict[0])
        fprintf(out, "verdict: %s\n", verdict);
}

/* Per engine: busy, stall and idle shares of the total time. */
static void print_engines(FILE *out, const trc_report_t *r)
{
    char a[40], b[40];
    double total = (double)r->total_ps;
    fprintf(out, "\nengines: busy (executing) + stall (ready but held) + idle = 100%% of the "
                 "total time\n");
    fprintf(out, "  core  engine  instructions       busy (ns)  busy (%%)      stall (ns)  "
                 "stall (%%)  idle (%%)\n");
    for (size_t i = 0; i < r->nengines; i++) {
        const trc_report_engine_t *e = &r->engines[i];
        double idle =
            100.0 - rpt_pct((double)e->busy_ps, total) - rpt_pct((double)e->stall_ps, total);
        fprintf(out, "  %4u  %-6s  %12llu  %14s  %8.1f  %14s  %9.1f  %8.1f\n", e->core, e->name,
                (unsigned long long)e->instructions, rpt_ns3(a, sizeof a, e->busy_ps),
                rpt_pct((double)e->busy_ps, total), rpt_ns3(b, sizeof b, e->stall_ps),
                rpt_pct((double)e->stall_ps, total), idle < 0 ? 0.0 : idle);
    }
}

/* DMA per core against its peak. */
static void print_dma(FILE *out, const trc_report_t *r)
{
    char a[40];
    double total = (double)r->total_ps;
    fprintf(out, "\nDMA per core (peak %.1f GB/s per core)\n", r->dma_peak_gbps_per_core);
    if (!r->ndma)
        fprintf(out, "  no DMA transfers\n");
    else
        fprintf(out, "  core  transfers           bytes       busy (ns)  busy (%%)  achieved "
                     "(GB/s)  while busy (GB/s)  of peak (%%)\n");
    for (size_t i = 0; i < r->ndma; i++) {
        const trc_report_dma_t *d = &r->dma[i];
        double ach = rpt_gbps(d->bytes, r->total_ps);
        fprintf(out, "  %4u  %9llu  %14llu  %14s  %8.1f  %15.1f  %17.1f  %11.1f\n", d->core,
                (unsigned long long)d->transfers, (unsigned long long)d->bytes,
                rpt_ns3(a, sizeof a, d->busy_ps), rpt_pct((double)d->busy_ps, total), ach,
                rpt_gbps(d->bytes, d->busy_ps), rpt_pct(ach, r->dma_peak_gbps_per_core));
    }
}

/* MFU and HFU; HBM and DMA bandwidth against peak. */
static void print_compute_memory(FILE *out, const trc_report_t *r)
{
    double total = (double)r->total_ps;
    double secs = total * 1e-12;
    fprintf(out, "\ncompute (tensor engine; peak %.3f TFLOP/s bf16 per core x %llu core%s)\n",
            r->peak_flops_per_core / 1e12, (unsigned long long)r->cores_used,
            r->cores_used == 1 ? "" : "s");
    fprintf(out, "  useful FLOPs: %llu FLOP; MFU %.1f %%\n", (unsigned long long)r->flops,
            rpt_pct((double)r->flops, rpt_peak_flops(r, secs)));
    if (r->have_hw_flops)
        fprintf(out, "  all PE FLOPs (transposes included): %llu FLOP; HFU %.1f %%\n",
                (unsigned long long)r->hw_flops,
                rpt_pct((double)r->hw_flops, rpt_peak_flops(r, secs)));
    else
        fprintf(out, "  HFU: not in this statistics file\n");

    uint64_t hbm = r->hbm_read + r->hbm_write;
    fprintf(out, "\nmemory\n");
    fprintf(out, "  HBM: %llu bytes read, %llu bytes written; %.1f GB/s achieved of %.1f GB/s "
                 "peak (%.1f %%)\n",
            (unsigned long long)r->hbm_read, (unsigned long long)r->hbm_write,
            rpt_gbps(hbm, r->total_ps), r->hbm_peak_gbps,
            rpt_pct(rpt_gbps(hbm, r->total_ps), r->hbm_peak_gbps));
    uint64_t dmab = rpt_dma_bytes_total(r);
    double dpeak = r->dma_peak_gbps_per_core * (double)(r->ndma ? r->ndma : 1);
    fprintf(out, "  DMA: %llu bytes moved; %.1f GB/s achieved of %.1f GB/s peak (%zu core%s, "
                 "%.1f %%)\n",
            (unsigned long long)dmab, rpt_gbps(dmab, r->total_ps), dpeak, r->ndma ? r->ndma : 1,
            r->ndma == 1 || !r->ndma ? "" : "s", rpt_pct(rpt_gbps(dmab, r->total_ps), dpeak));
}

/* The largest stall causes. */
static void print_stalls(FILE *out, const trc_report_t *r)
{
    char a[40];
    double total = (double)r->total_ps;
    fprintf(out, "\ntop stall causes (time an engine was ready but held)\n");
    if (!r->nstalls)
        fprintf(out, "  none\n");
    else
        fprintf(out, "   #  core  engine  cause                                      time (ns)  "
                     "of total (%%)  instructions\n");
    for (size_t i = 0; i < r->nstalls && i < RPT_SHOWN_STALLS; i++) {
        const trc_report_stall_t *s = &r->stalls[i];
        char n[32];
        if (s->instructions)
            snprintf(n, sizeof n, "%llu", (unsigned long long)s->instructions);
        else
            snprintf(n, sizeof n, "-");
        fprintf(out, "  %2zu  %4u  %-6s  %-38s  %13s  %12.1f  %12s\n", i + 1, s->core,
                s->engine, s->cause, rpt_ns3(a, sizeof a, s->ps), rpt_pct((double)s->ps, total), n);
    }
}

/* The critical path: its runs (the middle ones elided when many). */
static void print_path(FILE *out, const trc_report_t *r)
{
    char a[40], b[40], c[40], w[40];
    fprintf(out, "\ncritical path (the chain of instructions and waits that sets the end time)\n");
    if (!r->have_path) {
        fprintf(out, "  not available from a statistics file: run with --trace FILE and "
                     "report on the trace\n");
    } else {
        fprintf(out, "  ends at %s ns; waiting on the path: %s ns (%.1f %%)\n",
                rpt_ns3(a, sizeof a, r->path_end_ps), rpt_ns3(b, sizeof b, r->path_wait_ps),
                rpt_pct((double)r->path_wait_ps, (double)r->path_end_ps));
        fprintf(out, "  time on the path by track:");
        for (size_t i = 0; i < r->npath_tracks; i++)
            fprintf(out, "%s core %u %s %s ns (%.1f %%)", i ? "," : "", r->path_tracks[i].core,
                    r->path_tracks[i].track, rpt_ns3(a, sizeof a, r->path_tracks[i].ps),
                    rpt_pct((double)r->path_tracks[i].ps, (double)r->path_end_ps));
        fprintf(out, "\n");
        fprintf(out, "      start (ns)        end (ns)     length (ns)  wait (ns)  core  track   "
                     "what                    lines      reached by\n");
        for (size_t i = 0; i < r->npath; i++) {
            if (r->npath > RPT_SHOWN_RUNS && i == RPT_SHOWN_RUNS / 2) {
                fprintf(out, "  ... %zu runs not shown (--json has them all) ...\n",
                        r->npath - RPT_SHOWN_RUNS);
                i = r->npath - RPT_SHOWN_RUNS / 2;
            }
            const trc_report_step_t *s = &r->path[i];
            char lines[32];
            if (s->line_first == s->line_last)
                snprintf(lines, sizeof lines, "%u", s->line_first);
            else
                snprintf(lines, sizeof lines, "%u-%u", s->line_first, s->line_last);
            fprintf(out, "  %14s  %14s  %14s  %9s  %4u  %-6s  %-22s  %-9s  %s\n",
                    rpt_ns3(a, sizeof a, s->start_ps), rpt_ns3(b, sizeof b, s->end_ps),
                    rpt_ns3(c, sizeof c, s->end_ps - s->start_ps),
                    rpt_ns3(w, sizeof w, s->wait_ps), s->core, s->track,
                    s->what, lines, s->via);
        }
    }
}

/* The instruction kinds and what each costs. */
static void print_kinds(FILE *out, const trc_report_t *r)
{
    char a[40], b[40];
    fprintf(out, "\ninstruction kinds\n");
    if (!r->nkinds) {
        fprintf(out, "  not available from a statistics file: run with --trace FILE and "
                     "report on the trace\n");
    } else {
        fprintf(out, "  engine  instruction        count       busy (ns)  mean II (ns)  "
                     "mean latency (ns)       wait (ns)            FLOPs           bytes\n");
        for (size_t i = 0; i < r->nkinds; i++) {
            const trc_report_kind_t *k = &r->kinds[i];
            double n = (double)(k->count ? k->count : 1);
            fprintf(out, "  %-6s  %-15s  %8llu  %14s  %12.3f  %17.3f  %14s  %15llu  %14llu\n",
                    k->engine, k->name, (unsigned long long)k->count,
                    rpt_ns3(a, sizeof a, k->busy_ps), (double)k->busy_ps / 1000.0 / n,
                    (double)k->latency_ps / 1000.0 / n, rpt_ns3(b, sizeof b, k->wait_ps),
                    (unsigned long long)k->flops, (unsigned long long)k->bytes);
        }
        int any = 0;
        for (size_t i = 0; i < r->nkinds; i++) {
            const trc_report_kind_t *k = &r->kinds[i];
            if (!k->cost[0])
                continue;
            if (!any)
                fprintf(out, "\nwhat each kind costs (the breakdown of the instances that took "
                             "most of its busy time)\n");
            any = 1;
            fprintf(out, "  %-6s %-15s %5.1f %% of its busy time: %s\n", k->engine, k->name,
                    rpt_pct((double)k->cost_busy_ps, (double)k->busy_ps), k->cost);
        }
    }
}

void trc_report_print(FILE *out, const trc_report_t *r)
{
    print_head(out, r);
    print_engines(out, r);
    print_dma(out, r);
    print_compute_memory(out, r);
    print_links_and_collectives(out, r);
    print_stalls(out, r);
    print_path(out, r);
    print_kinds(out, r);
}
