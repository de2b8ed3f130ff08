/*
 * stats.c -- statistics: JSON for machines (CLI.md schema plus more), a summary for people.
 * Every number a person reads says its unit.
 */
#include "stats.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static double ns(uint64_t ps)
{
    return (double)ps / 1000.0;
}

static json_t *engine_json(const sim_engine_stats_t *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "instructions", json_integer((json_int_t)e->instructions));
    json_object_set_new(o, "busy_ns", json_real(ns(e->busy_ps)));
    json_object_set_new(o, "active_ns", json_real(ns(e->active_ps)));
    json_object_set_new(o, "stall_ns", json_real(ns(e->stall_ps)));
    json_t *by = json_object();
    json_object_set_new(by, "semaphore", json_real(ns(e->stall_by[SIM_STALL_SEMAPHORE])));
    json_object_set_new(by, "port", json_real(ns(e->stall_by[SIM_STALL_PORT])));
    json_object_set_new(by, "interlock", json_real(ns(e->stall_by[SIM_STALL_INTERLOCK])));
    json_object_set_new(by, "collective", json_real(ns(e->stall_by[SIM_STALL_COLLECTIVE])));
    json_object_set_new(o, "stall_by_cause_ns", by);
    json_object_set_new(o, "end_ns", json_real(ns(e->end_ps)));
    if (e->flops)
        json_object_set_new(o, "flops", json_integer((json_int_t)e->flops));
    return o;
}

char *sim_stats_json(const sim_stats_t *st, const mdl_arch_t *arch, const isa_program_t *prog,
                     const sim_run_info_t *info)
{
    json_t *root = json_object();
    /* first, so that a harness (and `ncsim report`) cannot miss a failed run */
    json_object_set_new(root, "status", json_string(info->error ? "error" : "ok"));
    if (info->error)
        json_object_set_new(root, "error", json_string(info->error));
    json_object_set_new(root, "arch", json_string(arch->name));
    json_object_set_new(root, "program", json_string(info->program ? info->program : ""));
    json_object_set_new(root, "mode", json_string(info->timing_only ? "timing-only"
                                                                     : "functional"));
    json_object_set_new(root, "seed", json_integer((json_int_t)info->seed));
    json_object_set_new(root, "total_ns", json_real(ns(st->total_ps)));
    json_t *cores = json_array();
    for (uint32_t i = 0; i < st->ncores; i++) {
        const sim_core_stats_t *c = &st->cores[i];
        json_t *co = json_object();
        json_object_set_new(co, "id", json_integer(i));
        json_object_set_new(co, "chip", json_integer(i / ISA_CORES_PER_CHIP));
        json_object_set_new(co, "end_ns", json_real(ns(c->end_ps)));
        json_t *engines = json_object();
        for (int e = 0; e < ISA_ENGINE_COUNT; e++)
            json_object_set_new(engines, isa_engine_name((isa_engine_t)e),
                                engine_json(&c->engines[e]));
        json_object_set_new(co, "engines", engines);
        json_t *dma = json_object();
        json_object_set_new(dma, "transfers", json_integer((json_int_t)c->dma_transfers));
        json_object_set_new(dma, "bytes", json_integer((json_int_t)c->dma_bytes));
        json_object_set_new(dma, "busy_ns", json_real(ns(c->dma_busy_ps)));
        json_object_set_new(dma, "descriptor_busy_ns", json_real(ns(c->dma_desc_busy_ps)));
        json_object_set_new(co, "dma", dma);
        json_t *mem = json_object(); /* the core's own traffic (sim_core_stats_t) */
        json_object_set_new(mem, "sbuf_read_bytes", json_integer((json_int_t)c->sbuf_read_bytes));
        json_object_set_new(mem, "sbuf_write_bytes",
                            json_integer((json_int_t)c->sbuf_write_bytes));
        json_object_set_new(mem, "psum_read_bytes", json_integer((json_int_t)c->psum_read_bytes));
        json_object_set_new(mem, "psum_write_bytes",
                            json_integer((json_int_t)c->psum_write_bytes));
        json_object_set_new(mem, "hbm_read_bytes", json_integer((json_int_t)c->hbm_read_bytes));
        json_object_set_new(mem, "hbm_write_bytes", json_integer((json_int_t)c->hbm_write_bytes));
        json_object_set_new(co, "memory", mem);
        json_object_set_new(co, "tensor_hw_flops", json_integer((json_int_t)c->tensor_hw_flops));
        json_object_set_new(co, "tensor_hw_flops_fp32",
                            json_integer((json_int_t)c->tensor_hw_flops_fp32));
        json_object_set_new(co, "tensor_transpose_flops",
                            json_integer((json_int_t)c->tensor_transpose_flops));
        json_object_set_new(co, "tensor_transpose_flops_fp32",
                            json_integer((json_int_t)c->tensor_transpose_flops_fp32));
        json_array_append_new(cores, co);
    }
    json_object_set_new(root, "cores", cores);
    json_object_set_new(root, "tensor_flops", json_integer((json_int_t)st->tensor_flops));
    json_object_set_new(root, "mfu", json_real(st->mfu));
    json_object_set_new(root, "tensor_hw_flops", json_integer((json_int_t)st->tensor_hw_flops));
    json_object_set_new(root, "hfu", json_real(st->hfu));
    json_object_set_new(root, "peak_flops_per_core", json_real(st->peak_flops_per_core));
    json_t *hbm = json_object();
    json_object_set_new(hbm, "read_bytes", json_integer((json_int_t)st->hbm_read_bytes));
    json_object_set_new(hbm, "write_bytes", json_integer((json_int_t)st->hbm_write_bytes));
    double secs = (double)st->total_ps * 1e-12;
    double bw = secs > 0 ? (double)(st->hbm_read_bytes + st->hbm_write_bytes) / secs / 1e9 : 0;
    json_object_set_new(hbm, "achieved_gbps", json_real(bw));
    json_object_set_new(hbm, "peak_gbps", json_real(arch->hbm.bandwidth_gbps * prog->chips));
    /* achieved HBM bandwidth over time, per chip */
    if (st->hbm_series && st->hbm_series_len) {
        json_t *series = json_object();
        double bucket_ns = ns(st->hbm_series_bucket_ps);
        json_object_set_new(series, "bucket_ns", json_real(bucket_ns));
        json_t *chips = json_array();
        for (uint32_t c = 0; c < st->nchips; c++) {
            json_t *row = json_array();
            for (uint32_t b = 0; b < st->hbm_series_len; b++)
                json_array_append_new(
                    row, json_real(st->hbm_series[(size_t)c * st->hbm_series_len + b] /
                                   bucket_ns));
            json_array_append_new(chips, row);
        }
        json_object_set_new(series, "gbps_by_chip", chips);
        json_object_set_new(hbm, "over_time", series);
    }
    json_object_set_new(root, "hbm", hbm);
    if (st->nlinks) {
        json_t *links = json_array();
        for (uint32_t i = 0; i < st->nlinks; i++) {
            const sim_link_stats_t *l = &st->links[i];
            json_t *o = json_object();
            json_object_set_new(o, "from_chip", json_integer(l->from));
            json_object_set_new(o, "to_chip", json_integer(l->to));
            json_object_set_new(o, "bytes", json_integer((json_int_t)l->bytes));
            json_object_set_new(o, "busy_ns", json_real(ns(l->busy_ps)));
            json_object_set_new(o, "peak_gbps", json_real(l->gbps));
            json_object_set_new(o, "utilisation",
                                json_real(st->total_ps ? (double)l->bytes /
                                                             (l->gbps * 1e-3 *
                                                              (double)st->total_ps)
                                                       : 0.0));
            json_array_append_new(links, o);
        }
        json_object_set_new(root, "links", links);
    }
    /* by source line (ncsim report --by-line): lines that ran something */
    json_t *lines = json_array();
    for (uint32_t l = 0; l < st->nlines; l++) {
        const sim_line_stats_t *L = &st->lines[l];
        if (!L->instructions && !L->transfers)
            continue;
        json_t *o = json_object();
        uint64_t stall = 0;
        for (int k = 0; k < SIM_STALL_COUNT; k++)
            stall += L->stall_by[k];
        json_object_set_new(o, "line", json_integer(st->line_ids ? st->line_ids[l] : l));
        json_object_set_new(o, "instructions", json_integer((json_int_t)L->instructions));
        json_object_set_new(o, "busy_ns", json_real(ns(L->busy_ps)));
        json_object_set_new(o, "stall_ns", json_real(ns(stall)));
        json_t *by = json_object();
        json_object_set_new(by, "semaphore", json_real(ns(L->stall_by[SIM_STALL_SEMAPHORE])));
        json_object_set_new(by, "port", json_real(ns(L->stall_by[SIM_STALL_PORT])));
        json_object_set_new(by, "interlock", json_real(ns(L->stall_by[SIM_STALL_INTERLOCK])));
        json_object_set_new(by, "collective", json_real(ns(L->stall_by[SIM_STALL_COLLECTIVE])));
        json_object_set_new(o, "stall_by_cause_ns", by);
        if (L->transfers) {
            json_object_set_new(o, "transfers", json_integer((json_int_t)L->transfers));
            json_object_set_new(o, "dma_bytes", json_integer((json_int_t)L->dma_bytes));
            json_object_set_new(o, "dma_ns", json_real(ns(L->dma_ps)));
            json_object_set_new(o, "dma_wait_ns", json_real(ns(L->dma_wait_ps)));
        }
        json_array_append_new(lines, o);
    }
    json_object_set_new(root, "lines", lines);
    json_object_set_new(root, "collective_bytes", json_integer((json_int_t)st->collective_bytes));
    if (st->ninstances > 1) {
        json_t *efa = json_object();
        json_object_set_new(efa, "instances", json_integer(st->ninstances));
        json_object_set_new(efa, "bytes", json_integer((json_int_t)st->efa_bytes));
        json_object_set_new(efa, "gbits_per_instance", json_real(arch->efa.bandwidth_gbits));
        json_object_set_new(root, "efa", efa);
    }
    json_object_set_new(root, "instructions", json_integer((json_int_t)st->instructions));
    json_object_set_new(root, "events", json_integer((json_int_t)st->events));
    char *cfg = mdl_arch_to_json(arch);
    if (cfg) {
        json_error_t jerr;
        json_t *c = json_loads(cfg, 0, &jerr);
        if (c)
            json_object_set_new(root, "arch_config", c);
        free(cfg);
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(root);
    if (!text)
        return NULL;
    /* jansson's memory comes from malloc; append a newline for a well-formed text file */
    size_t n = strlen(text);
    char *out = realloc(text, n + 2);
    if (!out) {
        free(text);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    return out;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void sim_stats_print(FILE *out, const sim_stats_t *st, const mdl_arch_t *arch,
                     const isa_program_t *prog, const sim_run_info_t *info)
{
    fprintf(out, "ncsim: %s on %s (%u chip%s, %u cores), %s\n",
            info->program ? info->program : "program", arch->name, prog->chips,
            prog->chips == 1 ? "" : "s", prog->ncores,
            info->timing_only ? "timing only" : "functional");
    fprintf(out, "total simulated time: %.3f ns (%.3f us)\n", ns(st->total_ps),
            ns(st->total_ps) / 1000.0);
    for (uint32_t i = 0; i < st->ncores; i++) {
        const sim_core_stats_t *c = &st->cores[i];
        if (!c->used && !c->dma_transfers)
            continue;
        fprintf(out, "core %u (chip %u): ends at %.3f ns\n", i, i / ISA_CORES_PER_CHIP,
                ns(c->end_ps));
        fprintf(out, "  engine  instructions    busy (ns)  busy %%   stall (ns)  stall %%  "
                     "main stall cause\n");
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            const sim_engine_stats_t *es = &c->engines[e];
            if (!es->instructions)
                continue;
            static const char *const causes[] = {"-", "semaphore", "port", "interlock",
                                                 "collective peers"};
            int cause = 0;
            for (int k = 1; k < SIM_STALL_COUNT; k++)
                if (es->stall_by[k] > es->stall_by[cause] && es->stall_by[k])
                    cause = k;
            fprintf(out, "  %-6s %13llu %12.3f %6.1f %12.3f %7.1f  %s\n",
                    isa_engine_name((isa_engine_t)e), (unsigned long long)es->instructions,
                    ns(es->busy_ps), pct(es->busy_ps, st->total_ps), ns(es->stall_ps),
                    pct(es->stall_ps, st->total_ps), causes[cause]);
        }
        if (c->dma_transfers) {
            double secs = (double)c->dma_busy_ps * 1e-12;
            fprintf(out, "  dma: %llu transfers, %llu bytes, busy %.3f ns (%.1f%% of the run), "
                         "%.1f GB/s while busy\n",
                    (unsigned long long)c->dma_transfers, (unsigned long long)c->dma_bytes,
                    ns(c->dma_busy_ps), pct(c->dma_busy_ps, st->total_ps),
                    secs > 0 ? (double)c->dma_bytes / secs / 1e9 : 0.0);
        }
    }
    double secs = (double)st->total_ps * 1e-12;
    fprintf(out, "HBM: %llu bytes read, %llu bytes written, %.1f GB/s average of %.1f GB/s "
                 "peak\n",
            (unsigned long long)st->hbm_read_bytes, (unsigned long long)st->hbm_write_bytes,
            secs > 0 ? (double)(st->hbm_read_bytes + st->hbm_write_bytes) / secs / 1e9 : 0.0,
            arch->hbm.bandwidth_gbps * prog->chips);
    if (st->collective_bytes || st->nlinks) {
        uint64_t link_bytes = 0, busiest = 0;
        double busiest_util = 0;
        for (uint32_t i = 0; i < st->nlinks; i++) {
            link_bytes += st->links[i].bytes;
            double u = st->total_ps ? (double)st->links[i].bytes /
                                          (st->links[i].gbps * 1e-3 * (double)st->total_ps)
                                    : 0;
            if (u > busiest_util) {
                busiest_util = u;
                busiest = i;
            }
        }
        fprintf(out, "collectives: %llu bytes between members; NeuronLink: %llu bytes over %u "
                     "directed links",
                (unsigned long long)st->collective_bytes, (unsigned long long)link_bytes,
                st->nlinks);
        if (link_bytes)
            fprintf(out, ", busiest chip %u -> %u at %.1f%% of %.1f GB/s",
                    st->links[busiest].from, st->links[busiest].to, 100.0 * busiest_util,
                    st->links[busiest].gbps);
        fputc('\n', out);
        if (st->ninstances > 1)
            fprintf(out, "EFA: %llu bytes between %u instances (%.0f Gbit/s each way per "
                         "instance)\n",
                    (unsigned long long)st->efa_bytes, st->ninstances, arch->efa.bandwidth_gbits);
    }
    uint32_t used = 0;
    for (uint32_t i = 0; i < st->ncores; i++)
        used += st->cores[i].used;
    fprintf(out, "tensor engine: %llu FLOPs; MFU %.1f%% of %u core%s x %.2f TFLOP/s bf16 peak\n",
            (unsigned long long)st->tensor_flops, 100.0 * st->mfu, used, used == 1 ? "" : "s",
            st->peak_flops_per_core / 1e12);
    if (info->host_seconds > 0) {
        /* where the host's time went: a .nca is assembled at every run (`ncsim asm` once,
         * then run the .ncx, when it is run many times) */
        fputs("host: ", out);
        if (info->load_seconds > 0)
            fprintf(out, "loading %.3f s, ", info->load_seconds);
        double rate = (double)st->instructions / info->host_seconds;
        fprintf(out, "simulating %.3f s (%.*f %sinstructions/s), %llu instructions, %llu events\n",
                info->host_seconds, rate >= 1e3 ? 1 : 0,
                rate >= 1e6   ? rate / 1e6
                : rate >= 1e3 ? rate / 1e3
                              : rate,
                rate >= 1e6   ? "M "
                : rate >= 1e3 ? "k "
                              : "",
                (unsigned long long)st->instructions, (unsigned long long)st->events);
    }
}
