/*
 * profile.c -- the Neuron profiler's summary of a run (profile.h): one pass over a trace, or
 * the totals of a statistics file, into the profiler's fields; then JSON or a table.
 *
 * The definitions follow the profiler's published field descriptions (docs/nki.md has the
 * table and where ncsim's figures may differ from the chip's). Everything is per NeuronCore
 * (the profiler's nc_idx), but total_time, which is the end of the whole run.
 */
#include "profile.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_load.h"
#include "trace.h"
#include "trace_internal.h"

static const struct {
    const char *key;
    uint8_t unit, trace_only;
    const char *text;
} field_table[] = {
#define XX(id, key, unit, trace_only, text) {key, TRC_PU_##unit, trace_only, text},
    TRC_PROFILE_FIELD_MAP(XX)
#undef XX
};

static const char *const unit_names[] = {
#define XX(id, text) text,
    TRC_PROFILE_UNIT_MAP(XX)
#undef XX
};

const char *trc_profile_field_key(trc_profile_field_t f)
{
    return f < TRC_PF_COUNT ? field_table[f].key : "";
}
trc_profile_unit_t trc_profile_field_unit(trc_profile_field_t f)
{
    return f < TRC_PF_COUNT ? (trc_profile_unit_t)field_table[f].unit : TRC_PU_COUNT;
}
const char *trc_profile_field_text(trc_profile_field_t f)
{
    return f < TRC_PF_COUNT ? field_table[f].text : "";
}
int trc_profile_field_trace_only(trc_profile_field_t f)
{
    return f < TRC_PF_COUNT ? field_table[f].trace_only : 0;
}
const char *trc_profile_unit_text(trc_profile_unit_t u)
{
    return u < TRC_PU_COUNT ? unit_names[u] : "";
}

void trc_profile_set(trc_profile_t *p, trc_profile_field_t f, double value)
{
    if (f < TRC_PF_COUNT) {
        p->value[f] = value;
        p->have[f] = 1;
    }
}

/*
 * How the profiler counts FLOPs of fp32 operands. hardware_flops / transpose_flops: 4 per
 * fp32 multiply-add, twice the nominal 2, for matmuls and PE transposes alike: every published
 * trn1 profile of an fp32 kernel shows it, and ncsim's replicas of the matmul and bmm kernels
 * match those profiles' hardware and transpose FLOPs to the FLOP this way (measurements.md
 * 3.0-3.2, AccelOpt's profile CSV). The "adjusted" (bf16-equivalent) fields scale fp32 by 4,
 * the schema's throughput factor (neuron-profile-summary.md 3). Counting conventions of the
 * tool, not timing.
 */
#define PROFILE_FP32_HW_FLOPS_FACTOR 2.0
#define PROFILE_FP32_ADJUSTED_FACTOR 4.0

/* ---- what both sources give: the totals, then every derived field ---------------------- */

/* The engines the profiler names, in isa_engine_t order (cc has its own cc_op fields). */
typedef struct totals {
    uint64_t total_ps;
    double clock_ghz, peak_flops, hbm_peak_gbps_chip;
    uint64_t flops, hw_flops, hw_flops_fp32, tr_flops, tr_flops_fp32;
    uint64_t hbm_read, hbm_write, sbuf_read, sbuf_write, psum_read, psum_write;
    int have_memory;
    int no_operand_bytes; /* a trace older than the operand bytes by memory (0.2.0) */
    uint64_t dma_active_ps, dma_transfers, dma_bytes;
    uint64_t engine_active_ps[ISA_ENGINE_COUNT], engine_count[ISA_ENGINE_COUNT];
    uint64_t cc_op_ps;
    double spill_save, spill_reload;
} totals_t;

static double secs(uint64_t ps)
{
    return (double)ps * 1e-12;
}

static double frac(double a, double b)
{
    return b > 0 ? a / b : 0.0;
}

/* Sizes the program declares, as the NEFF's: inputs (and inouts), outputs. */
static void declared_sizes(trc_profile_t *p, const isa_program_t *prog)
{
    if (!prog)
        return;
    double in = 0, out = 0;
    for (uint32_t i = 0; i < prog->ntensors; i++) {
        const isa_tensor_t *T = &prog->tensors[i];
        if (T->space != (uint8_t)ISA_SPACE_HBM)
            continue;
        double bytes = (double)isa_dtype_size((isa_dtype_t)T->dtype);
        for (unsigned d = 0; d < T->ndims; d++)
            bytes *= (double)T->dims[d];
        if (T->kind == ISA_TK_INPUT || T->kind == ISA_TK_INOUT)
            in += bytes;
        if (T->kind == ISA_TK_OUTPUT || T->kind == ISA_TK_INOUT)
            out += bytes;
    }
    trc_profile_set(p, TRC_PF_IO_WEIGHTS_SIZE, in);
    trc_profile_set(p, TRC_PF_IOW_SIZE, in + out);
    trc_profile_set(p, TRC_PF_WEIGHT_SIZE, 0);
}

static void derive(trc_profile_t *p, const totals_t *t, const isa_program_t *prog)
{
    double T = secs(t->total_ps);
    double hbm_core_bps = t->hbm_peak_gbps_chip / ISA_CORES_PER_CHIP * 1e9;
    double hbm_bytes = (double)(t->hbm_read + t->hbm_write);
    /* raw FLOPs with the fp32 part counted `factor` times */
#define SCALED(raw, fp32, factor) ((double)(raw) + (double)(fp32) * ((factor) - 1.0))
    double hw = SCALED(t->hw_flops, t->hw_flops_fp32, PROFILE_FP32_HW_FLOPS_FACTOR);
    double tr = SCALED(t->tr_flops, t->tr_flops_fp32, PROFILE_FP32_HW_FLOPS_FACTOR);
    double ratio = frac(t->peak_flops, hbm_core_bps);
    double te_max = t->peak_flops * T;
    trc_profile_set(p, TRC_PF_TOTAL_TIME, T);
    if (t->clock_ghz > 0)
        trc_profile_set(p, TRC_PF_CYCLE_COUNT, round(T * t->clock_ghz * 1e9));
    trc_profile_set(p, TRC_PF_HARDWARE_FLOPS, hw);
    trc_profile_set(p, TRC_PF_TRANSPOSE_FLOPS, tr);
    trc_profile_set(p, TRC_PF_MODEL_FLOPS, (double)t->flops);
    trc_profile_set(p, TRC_PF_ADJ_HARDWARE_FLOPS,
                    SCALED(t->hw_flops, t->hw_flops_fp32, PROFILE_FP32_ADJUSTED_FACTOR));
    trc_profile_set(p, TRC_PF_ADJ_TRANSPOSE_FLOPS,
                    SCALED(t->tr_flops, t->tr_flops_fp32, PROFILE_FP32_ADJUSTED_FACTOR));
#undef SCALED
    trc_profile_set(p, TRC_PF_RAW_HARDWARE_FLOPS, (double)t->hw_flops);
    trc_profile_set(p, TRC_PF_RAW_TRANSPOSE_FLOPS, (double)t->tr_flops);
    trc_profile_set(p, TRC_PF_TE_COUNT, (double)t->engine_count[ISA_ENGINE_PE]);
    if (t->have_memory) {
        trc_profile_set(p, TRC_PF_MM_AI, frac(hw - tr, hbm_bytes));
        trc_profile_set(p, TRC_PF_HBM_READ, (double)t->hbm_read);
        trc_profile_set(p, TRC_PF_HBM_WRITE, (double)t->hbm_write);
    }
    if (t->have_memory && !t->no_operand_bytes) {
        trc_profile_set(p, TRC_PF_SBUF_READ, (double)t->sbuf_read);
        trc_profile_set(p, TRC_PF_SBUF_WRITE, (double)t->sbuf_write);
        trc_profile_set(p, TRC_PF_PSUM_READ, (double)t->psum_read);
        trc_profile_set(p, TRC_PF_PSUM_WRITE, (double)t->psum_write);
    }
    if (t->have_memory) {
        trc_profile_set(p, TRC_PF_MFU_MAX, frac(frac((double)t->flops, hbm_bytes), ratio));
        trc_profile_set(p, TRC_PF_MFU_INST_MAX, frac(frac(hw - tr, hbm_bytes), ratio));
        trc_profile_set(p, TRC_PF_MBU, frac(frac(hbm_bytes, T), hbm_core_bps));
    }
    if (ratio > 0)
        trc_profile_set(p, TRC_PF_PEAK_RATIO, ratio);
    if (te_max > 0) {
        trc_profile_set(p, TRC_PF_HFU, hw / te_max);
        trc_profile_set(p, TRC_PF_MFU, (double)t->flops / te_max);
        trc_profile_set(p, TRC_PF_MFU_INST, (hw - tr) / te_max);
    }
    trc_profile_set(p, TRC_PF_SPILL_SAVE, t->spill_save);
    trc_profile_set(p, TRC_PF_SPILL_RELOAD, t->spill_reload);
    declared_sizes(p, prog);
    if (p->have[TRC_PF_IO_WEIGHTS_SIZE])
        trc_profile_set(p, TRC_PF_MBU_MIN_READ,
                        frac(frac(p->value[TRC_PF_IO_WEIGHTS_SIZE], T), hbm_core_bps));
    double dma_t = secs(t->dma_active_ps);
    trc_profile_set(p, TRC_PF_DMA_ACTIVE_TIME, dma_t);
    trc_profile_set(p, TRC_PF_DMA_ACTIVE_PERCENT, frac(dma_t, T));
    if (t->clock_ghz > 0)
        trc_profile_set(p, TRC_PF_DMA_ACTIVE_CYCLES, round(dma_t * t->clock_ghz * 1e9));
    trc_profile_set(p, TRC_PF_DMA_TRANSFER_COUNT, (double)t->dma_transfers);
    trc_profile_set(p, TRC_PF_DMA_TRANSFER_BYTES, (double)t->dma_bytes);
    trc_profile_set(p, TRC_PF_DMA_TRANSFER_AVG,
                    t->dma_transfers ? round((double)t->dma_bytes / (double)t->dma_transfers) : 0);
    /* how descriptors were made: every NCA transfer's by the program (static) */
    double any = t->dma_transfers ? 1.0 : 0.0;
    trc_profile_set(p, TRC_PF_STATIC_ACTIVE, dma_t);
    trc_profile_set(p, TRC_PF_STATIC_ACTIVE_PERCENT, frac(dma_t, T));
    trc_profile_set(p, TRC_PF_STATIC_PACKETS, (double)t->dma_transfers);
    trc_profile_set(p, TRC_PF_STATIC_SIZE, (double)t->dma_bytes);
    trc_profile_set(p, TRC_PF_STATIC_PACKET_PERCENT, any);
    trc_profile_set(p, TRC_PF_STATIC_SIZE_PERCENT, any);
    static const trc_profile_field_t none[] = {
        TRC_PF_DYNAMIC_ACTIVE,           TRC_PF_DYNAMIC_ACTIVE_PERCENT,
        TRC_PF_DYNAMIC_PACKETS,          TRC_PF_DYNAMIC_SIZE,
        TRC_PF_DYNAMIC_PACKET_PERCENT,   TRC_PF_DYNAMIC_SIZE_PERCENT,
        TRC_PF_SW_DYNAMIC_ACTIVE,        TRC_PF_SW_DYNAMIC_ACTIVE_PERCENT,
        TRC_PF_SW_DYNAMIC_PACKETS,       TRC_PF_SW_DYNAMIC_SIZE,
        TRC_PF_SW_DYNAMIC_PACKET_PERCENT, TRC_PF_SW_DYNAMIC_SIZE_PERCENT,
        TRC_PF_HW_DYNAMIC_ACTIVE,        TRC_PF_HW_DYNAMIC_ACTIVE_PERCENT,
        TRC_PF_HW_DYNAMIC_PACKETS,       TRC_PF_HW_DYNAMIC_SIZE,
        TRC_PF_HW_DYNAMIC_PACKET_PERCENT, TRC_PF_HW_DYNAMIC_SIZE_PERCENT,
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        trc_profile_set(p, none[i], 0);
    static const struct {
        isa_engine_t e;
        trc_profile_field_t active, percent, count;
    } eng[] = {
        {ISA_ENGINE_PE, TRC_PF_TENSOR_ACTIVE, TRC_PF_TENSOR_ACTIVE_PERCENT, TRC_PF_COUNT},
        {ISA_ENGINE_DVE, TRC_PF_VECTOR_ACTIVE, TRC_PF_VECTOR_ACTIVE_PERCENT, TRC_PF_VECTOR_COUNT},
        {ISA_ENGINE_ACT, TRC_PF_SCALAR_ACTIVE, TRC_PF_SCALAR_ACTIVE_PERCENT, TRC_PF_SCALAR_COUNT},
        {ISA_ENGINE_POOL, TRC_PF_GPSIMD_ACTIVE, TRC_PF_GPSIMD_ACTIVE_PERCENT,
         TRC_PF_GPSIMD_COUNT},
        {ISA_ENGINE_SP, TRC_PF_SYNC_ACTIVE, TRC_PF_SYNC_ACTIVE_PERCENT, TRC_PF_SYNC_COUNT},
        {ISA_ENGINE_CC, TRC_PF_CC_OP_ACTIVE, TRC_PF_CC_OP_ACTIVE_PERCENT, TRC_PF_CC_OP_COUNT},
    };
    for (size_t i = 0; i < sizeof eng / sizeof eng[0]; i++) {
        double a = secs(t->engine_active_ps[eng[i].e]);
        trc_profile_set(p, eng[i].active, a);
        trc_profile_set(p, eng[i].percent, frac(a, T));
        trc_profile_set(p, eng[i].count, (double)t->engine_count[eng[i].e]);
    }
    trc_profile_set(p, TRC_PF_CC_OP_TIME, secs(t->cc_op_ps));
    /* the CC cores' instructions are the cc engine's collectives here */
    trc_profile_set(p, TRC_PF_CC_CORES_TIME, secs(t->cc_op_ps));
    trc_profile_set(p, TRC_PF_CC_CORES_ACTIVE, secs(t->engine_active_ps[ISA_ENGINE_CC]));
    trc_profile_set(p, TRC_PF_CC_CORES_ACTIVE_PERCENT,
                    frac(secs(t->engine_active_ps[ISA_ENGINE_CC]), T));
    trc_profile_set(p, TRC_PF_CC_CORES_COUNT, (double)t->engine_count[ISA_ENGINE_CC]);
}

/* ---- from a statistics file --------------------------------------------------------------- */

static ncsim_status_t from_stats(const char *path, json_t *root, uint32_t core, totals_t *t,
                                 trc_profile_t *p, char *err, size_t errlen)
{
    ncsim_status_t head = trc_stats_head(path, root, p->program, sizeof p->program, p->arch,
                                         sizeof p->arch, p->failed, sizeof p->failed, err,
                                         errlen);
    if (head != NCSIM_OK)
        return head;
    json_t *cores = json_object_get(root, "cores");
    json_t *total = json_object_get(root, "total_ns");
    json_t *co = NULL, *c;
    size_t i;
    json_array_foreach(cores, i, c)
    {
        if (trc_stats_u64(json_object_get(c, "id")) == core)
            co = c;
    }
    if (!co) {
        snprintf(err, errlen, "%s: no core %u in the statistics (%zu cores)", path,
                 (unsigned)core, json_array_size(cores));
        return NCSIM_USAGE;
    }
    t->total_ps = trc_stats_ps(total);
    json_t *cfg = json_object_get(root, "arch_config");
    t->clock_ghz = json_number_value(json_object_get(json_object_get(cfg, "sp"), "clock_ghz"));
    t->peak_flops = json_number_value(json_object_get(root, "peak_flops_per_core"));
    t->hbm_peak_gbps_chip =
        json_number_value(json_object_get(json_object_get(cfg, "hbm"), "bandwidth_gbps"));
    json_t *engines = json_object_get(co, "engines");
    for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
        json_t *E = json_object_get(engines, isa_engine_name((isa_engine_t)e));
        t->engine_active_ps[e] = trc_stats_ps(json_object_get(E, "active_ns"));
        t->engine_count[e] = trc_stats_u64(json_object_get(E, "instructions"));
    }
    t->cc_op_ps = trc_stats_ps(json_object_get(json_object_get(engines, "cc"), "busy_ns"));
    t->flops = trc_stats_u64(json_object_get(json_object_get(engines, "pe"), "flops"));
    t->hw_flops = trc_stats_u64(json_object_get(co, "tensor_hw_flops"));
    t->hw_flops_fp32 = trc_stats_u64(json_object_get(co, "tensor_hw_flops_fp32"));
    t->tr_flops = trc_stats_u64(json_object_get(co, "tensor_transpose_flops"));
    t->tr_flops_fp32 = trc_stats_u64(json_object_get(co, "tensor_transpose_flops_fp32"));
    json_t *mem = json_object_get(co, "memory");
    t->have_memory = json_is_object(mem);
    t->hbm_read = trc_stats_u64(json_object_get(mem, "hbm_read_bytes"));
    t->hbm_write = trc_stats_u64(json_object_get(mem, "hbm_write_bytes"));
    t->sbuf_read = trc_stats_u64(json_object_get(mem, "sbuf_read_bytes"));
    t->sbuf_write = trc_stats_u64(json_object_get(mem, "sbuf_write_bytes"));
    t->psum_read = trc_stats_u64(json_object_get(mem, "psum_read_bytes"));
    t->psum_write = trc_stats_u64(json_object_get(mem, "psum_write_bytes"));
    json_t *dma = json_object_get(co, "dma");
    t->dma_active_ps = trc_stats_ps(json_object_get(dma, "busy_ns"));
    t->dma_transfers = trc_stats_u64(json_object_get(dma, "transfers"));
    t->dma_bytes = trc_stats_u64(json_object_get(dma, "bytes"));
    /* the NKI lowering's spill statistics, when the file carries them */
    t->spill_save = (double)trc_stats_u64(json_object_get(root, "spill_save_bytes"));
    t->spill_reload = (double)trc_stats_u64(json_object_get(root, "spill_reload_bytes"));
    return NCSIM_OK;
}

/* ---- from a trace ------------------------------------------------------------------------- */

typedef trc_interval_t interval_t;

typedef struct intervals {
    interval_t *v;
    size_t n, cap;
} intervals_t;

static int iv_add(intervals_t *s, uint64_t start, uint64_t end)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        interval_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n].start = start;
    s->v[s->n].end = end;
    s->n++;
    return 0;
}

typedef struct scan {
    trc_profile_t *p;
    totals_t *t;
    uint32_t pid;
    unsigned flags;
    int saw_run, saw_core;
    intervals_t engine[ISA_ENGINE_COUNT], dma, all;
    uint64_t exec_start, exec_end;
    int have_exec;
    uint64_t instr_ps[ISA_ENGINE_COUNT];
    uint64_t slices, counters, flows, notifications;
    uint64_t mm_count, psum_sbuf_count, psum_sbuf_bytes;
    uint64_t in_queue, out_queue, packet_ps, transfer_ps;
    uint64_t activate_ps, activate_count;
    uint64_t queues_seen[2]; /* bit per DMA queue track (64 + 64) */
    /* the per-instruction records */
    char *recs;
    size_t len, cap;
    int oom;
} scan_t;

static int rec_append(scan_t *s, const char *text)
{
    size_t n = strlen(text);
    if (s->len + n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 65536;
        while (cap < s->len + n + 2)
            cap *= 2;
        char *b = realloc(s->recs, cap);
        if (!b)
            return -1;
        s->recs = b;
        s->cap = cap;
    }
    if (s->len)
        s->recs[s->len++] = ',';
    memcpy(s->recs + s->len, text, n + 1);
    s->len += n;
    s->p->ninstructions++;
    return 0;
}

/* Profiler-style names of the engine rows. */
static const char *row_label(uint32_t engine)
{
    static const char *const labels[ISA_ENGINE_COUNT] = {"Tensor", "Scalar", "Vector",
                                                         "GpSimd", "Sync",   "CC"};
    return engine < ISA_ENGINE_COUNT ? labels[engine] : "engine";
}

static void keep_record(scan_t *s, const trc_slice_t *sl, const char *label, uint64_t dur_ps,
                        uint64_t line, const char *operands, uint64_t bytes)
{
    if (!(s->flags & TRC_PROFILE_INSTRUCTIONS) || s->oom)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "timestamp", json_real((double)sl->ts_ps / 1000.0));
    json_object_set_new(o, "duration", json_real((double)dur_ps / 1000.0));
    json_object_set_new(o, "label", json_string(label));
    json_object_set_new(o, "opcode", json_string(sl->name ? sl->name : ""));
    json_object_set_new(o, "operands", json_string(operands ? operands : ""));
    if (line) {
        char loc[600];
        snprintf(loc, sizeof loc, "%s:%llu", s->p->program, (unsigned long long)line);
        json_object_set_new(o, "nki_source_location", json_string(loc));
        json_object_set_new(o, "line", json_integer((json_int_t)line));
    }
    if (bytes)
        json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text || rec_append(s, text))
        s->oom = 1;
    free(text);
}

static void exec_span(scan_t *s, uint64_t start, uint64_t end)
{
    if (!s->have_exec || start < s->exec_start)
        s->exec_start = start;
    if (!s->have_exec || end > s->exec_end)
        s->exec_end = end;
    s->have_exec = 1;
}

static void on_space(totals_t *t, const char *space, uint64_t bytes, int write)
{
    if (!space)
        return;
    if (!strcmp(space, "hbm"))
        *(write ? &t->hbm_write : &t->hbm_read) += bytes;
    else if (!strcmp(space, "sbuf"))
        *(write ? &t->sbuf_write : &t->sbuf_read) += bytes;
    else if (!strcmp(space, "psum"))
        *(write ? &t->psum_write : &t->psum_read) += bytes;
}

static void on_instr(scan_t *s, const trc_slice_t *sl)
{
    totals_t *t = s->t;
    const trc_instr_args_t *a = &sl->a.instr;
    uint32_t n;
    if (trc_track_kind_of_tid(sl->tid, &n) != TRC_TRACK_ENGINE || n >= ISA_ENGINE_COUNT)
        return;
    uint64_t lat = a->latency > sl->dur_ps ? a->latency : sl->dur_ps;
    uint64_t end = sl->ts_ps + lat;
    if (iv_add(&s->engine[n], sl->ts_ps, end) || iv_add(&s->all, sl->ts_ps, end))
        s->oom = 1;
    if (!sl->name || strcmp(sl->name, "nop") != 0)
        exec_span(s, sl->ts_ps, end);
    s->instr_ps[n] += lat;
    t->engine_count[n]++;
    if (n == ISA_ENGINE_CC)
        t->cc_op_ps += sl->dur_ps;
    t->flops += a->flops;
    t->hw_flops += a->hw_flops;
    t->hw_flops_fp32 += a->hw_flops_fp32;
    if (a->hw_flops > a->flops) {
        t->tr_flops += a->hw_flops - a->flops;
        if (a->hw_flops_fp32)
            t->tr_flops_fp32 += a->hw_flops - a->flops;
    }
    if (n == ISA_ENGINE_PE && a->hw_flops)
        s->mm_count++;
    t->sbuf_read += a->sbuf_read;
    t->sbuf_write += a->sbuf_write;
    t->psum_read += a->psum_read;
    t->psum_write += a->psum_write;
    if (a->psum_read && a->sbuf_write) {
        s->psum_sbuf_count++;
        s->psum_sbuf_bytes += a->sbuf_write;
    }
    if (sl->name && !strncmp(sl->name, "activate", 8)) {
        s->activate_count++;
        s->activate_ps += lat;
    }
    keep_record(s, sl, row_label(n), lat, a->line, a->operands, a->bytes);
}

static void on_dma(scan_t *s, const trc_slice_t *sl)
{
    totals_t *t = s->t;
    const trc_dma_args_t *a = &sl->a.dma;
    uint64_t end = sl->ts_ps + sl->dur_ps;
    if (iv_add(&s->dma, sl->ts_ps, end) || iv_add(&s->all, sl->ts_ps, end))
        s->oom = 1;
    exec_span(s, sl->ts_ps, end);
    t->dma_transfers++;
    t->dma_bytes += a->bytes;
    /* each side its own bytes (a converting transfer reads the source's type) */
    uint64_t read = trc_dma_src_bytes(a);
    on_space(t, a->src, read, 0);
    on_space(t, a->dst, a->bytes, 1);
    if (a->accumulate)
        on_space(t, a->dst, a->bytes, 0);
    if (a->src && !strcmp(a->src, "hbm"))
        s->in_queue += read;
    if (a->dst && !strcmp(a->dst, "hbm"))
        s->out_queue += a->bytes;
    s->packet_ps += sl->dur_ps;
    s->transfer_ps += sl->dur_ps + a->queued;
    uint32_t q;
    if (trc_track_kind_of_tid(sl->tid, &q) == TRC_TRACK_DMA_QUEUE && q < 128)
        s->queues_seen[q / 64] |= 1ull << (q % 64);
    char label[32];
    snprintf(label, sizeof label, "DMA queue %u", (unsigned)q);
    keep_record(s, sl, label, sl->dur_ps, a->line, a->operands, a->bytes);
}

static int on_record(void *ctx, const trc_record_t *r)
{
    scan_t *s = ctx;
    trc_profile_t *p = s->p;
    switch ((trc_kind_t)r->kind) {
    case TRC_REC_RUN: {
        const trc_run_t *u = &r->u.run;
        s->saw_run = 1;
        snprintf(p->program, sizeof p->program, "%s", u->program ? u->program : "");
        snprintf(p->arch, sizeof p->arch, "%s", u->arch ? u->arch : "");
        snprintf(p->generator, sizeof p->generator, "%s", u->generator ? u->generator : "");
        s->t->peak_flops = u->peak_flops_per_core;
        s->t->hbm_peak_gbps_chip = u->hbm_peak_gbps;
        s->t->clock_ghz = u->core_clock_ghz;
        p->filtered = u->window_start || u->window_end || (u->engines && u->engines[0]);
        break;
    }
    case TRC_REC_SLICE: {
        const trc_slice_t *sl = &r->u.slice;
        uint64_t end = sl->ts_ps + sl->dur_ps;
        if (sl->kind == TRC_SLICE_INSTR && sl->a.instr.latency > sl->dur_ps)
            end = sl->ts_ps + sl->a.instr.latency;
        if (end > s->t->total_ps)
            s->t->total_ps = end;
        if (sl->pid != s->pid)
            break;
        s->saw_core = 1;
        s->slices++;
        if (sl->kind == TRC_SLICE_INSTR)
            on_instr(s, sl);
        else if (sl->kind == TRC_SLICE_DMA)
            on_dma(s, sl);
        break;
    }
    case TRC_REC_COUNTER:
        if (r->u.counter.pid == s->pid)
            s->counters++;
        break;
    case TRC_REC_FLOW:
        if (r->u.flow.from_pid == s->pid || r->u.flow.to_pid == s->pid) {
            s->flows++;
            if (r->u.flow.cat && !strcmp(r->u.flow.cat, "semaphore") &&
                r->u.flow.from_pid == s->pid)
                s->notifications++;
        }
        break;
    default: break;
    }
    return s->oom;
}

static ncsim_status_t from_trace(const char *path, uint32_t core, unsigned flags, totals_t *t,
                                 trc_profile_t *p, char *err, size_t errlen)
{
    scan_t s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.t = t;
    s.pid = trc_pid_core(core);
    s.flags = flags;
    ncsim_status_t st = trc_read_flags(path, TRC_READ_NO_DMA_TEXT, on_record, &s, err, errlen);
    if (st == NCSIM_OK && s.oom) {
        snprintf(err, errlen, "out of memory");
        st = NCSIM_NOMEM;
    }
    if (st == NCSIM_OK && !s.saw_run) {
        snprintf(err, errlen, "%s: not a trace of ncsim run (no run record)", path);
        st = NCSIM_FORMAT;
    }
    if (st == NCSIM_OK && !s.saw_core) {
        snprintf(err, errlen, "%s: core %u ran nothing in this trace", path, (unsigned)core);
        st = NCSIM_USAGE;
    }
    if (st == NCSIM_OK) {
        t->have_memory = 1;
        for (int e = 0; e < ISA_ENGINE_COUNT; e++)
            t->engine_active_ps[e] = trc_interval_union(s.engine[e].v, s.engine[e].n);
        t->dma_active_ps = trc_interval_union(s.dma.v, s.dma.n);
        double T = secs(t->total_ps);
        double active = secs(trc_interval_union(s.all.v, s.all.n));
        trc_profile_set(p, TRC_PF_TOTAL_EXEC_TIME,
                        s.have_exec ? secs(s.exec_end - s.exec_start) : 0.0);
        trc_profile_set(p, TRC_PF_TOTAL_ACTIVE_TIME, active);
        trc_profile_set(p, TRC_PF_TOTAL_ACTIVE_TIME_PERCENT, frac(active, T));
        trc_profile_set(p, TRC_PF_TRACE_COUNT, (double)s.slices);
        trc_profile_set(p, TRC_PF_EVENT_COUNT, (double)s.notifications);
        trc_profile_set(p, TRC_PF_TOTAL_ROW_COUNT, (double)(s.slices + s.counters + s.flows));
        trc_profile_set(p, TRC_PF_MM_COUNT, (double)s.mm_count);
        /* traces written before the run record had core_clock_ghz have no operand bytes by
         * memory either: leave those fields out rather than print zeros */
        t->no_operand_bytes = t->clock_ghz <= 0;
        if (!t->no_operand_bytes) {
            trc_profile_set(p, TRC_PF_PSUM_TO_SBUF_COUNT, (double)s.psum_sbuf_count);
            trc_profile_set(p, TRC_PF_PSUM_TO_SBUF_BYTES, (double)s.psum_sbuf_bytes);
        }
        trc_profile_set(p, TRC_PF_INPUT_QUEUE, (double)s.in_queue);
        trc_profile_set(p, TRC_PF_OUTPUT_QUEUE, (double)s.out_queue);
        trc_profile_set(p, TRC_PF_WEIGHT_QUEUE, 0);
        trc_profile_set(p, TRC_PF_DMA_PACKET_TIME, secs(s.packet_ps));
        trc_profile_set(p, TRC_PF_DMA_TRANSFER_TIME, secs(s.transfer_ps));
        trc_profile_set(p, TRC_PF_DMA_QUEUE_COUNT,
                        (double)(__builtin_popcountll(s.queues_seen[0]) +
                                 __builtin_popcountll(s.queues_seen[1])));
        trc_profile_set(p, TRC_PF_TENSOR_INSTR_TIME, secs(s.instr_ps[ISA_ENGINE_PE]));
        trc_profile_set(p, TRC_PF_VECTOR_INSTR_TIME, secs(s.instr_ps[ISA_ENGINE_DVE]));
        trc_profile_set(p, TRC_PF_SCALAR_INSTR_TIME, secs(s.instr_ps[ISA_ENGINE_ACT]));
        trc_profile_set(p, TRC_PF_GPSIMD_INSTR_TIME, secs(s.instr_ps[ISA_ENGINE_POOL]));
        trc_profile_set(p, TRC_PF_SYNC_INSTR_TIME, secs(s.instr_ps[ISA_ENGINE_SP]));
        trc_profile_set(p, TRC_PF_ACTIVATE_TIME, secs(s.activate_ps));
        trc_profile_set(p, TRC_PF_ACTIVATE_COUNT, (double)s.activate_count);
        p->instructions = s.recs;
        s.recs = NULL;
    }
    for (int e = 0; e < ISA_ENGINE_COUNT; e++)
        free(s.engine[e].v);
    free(s.dma.v);
    free(s.all.v);
    free(s.recs);
    return st;
}

ncsim_status_t trc_profile_load(const char *path, uint32_t core, const isa_program_t *prog,
                                unsigned flags, trc_profile_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "%s", path);
    out->core = core;
    int is_trace;
    ncsim_status_t st = trc_sniff_trace(path, &is_trace, err, errlen);
    if (st != NCSIM_OK)
        return st;
    totals_t t;
    memset(&t, 0, sizeof t);
    if (is_trace) {
        out->from_trace = 1;
        st = from_trace(path, core, flags, &t, out, err, errlen);
    } else {
        json_t *root;
        st = trc_stats_json(path, &root, err, errlen);
        if (st == NCSIM_OK) {
            st = from_stats(path, root, core, &t, out, err, errlen);
            json_decref(root);
        }
    }
    if (st == NCSIM_OK)
        derive(out, &t, prog);
    else
        trc_profile_free(out);
    return st;
}

/* ---- output ------------------------------------------------------------------------------- */

static json_t *summary_object(const trc_profile_t *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "nc_idx", json_integer(p->core));
    json_object_set_new(o, "nd_idx", json_integer(0));
    for (int f = 0; f < TRC_PF_COUNT; f++) {
        if (!p->have[f])
            continue;
        double v = p->value[f];
        switch ((trc_profile_unit_t)field_table[f].unit) {
        case TRC_PU_B:
        case TRC_PU_FLOP:
        case TRC_PU_NUM:
        case TRC_PU_CYCLES:
            json_object_set_new(o, field_table[f].key, json_integer((json_int_t)llround(v)));
            break;
        default: json_object_set_new(o, field_table[f].key, json_real(v)); break;
        }
    }
    /* what a consumer needs to tell a simulated profile from a measured one */
    json_object_set_new(o, "is_simulation", json_true());
    json_object_set_new(o, "simulator", json_string(p->generator[0] ? p->generator : "ncsim"));
    json_object_set_new(o, "summary_source", json_string(p->from_trace ? "trace" : "statistics"));
    /* figures a consumer must not take at face value */
    if (p->filtered)
        json_object_set_new(o, "trace_filtered", json_true());
    if (p->failed[0]) {
        json_object_set_new(o, "run_status", json_string("error"));
        json_object_set_new(o, "run_error", json_string(p->failed));
    }
    json_object_set_new(o, "program", json_string(p->program));
    json_object_set_new(o, "arch", json_string(p->arch));
    return o;
}

static char *dump(json_t *root)
{
    if (!root)
        return NULL;
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(root);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *t = realloc(text, n + 2);
    if (!t) {
        free(text);
        return NULL;
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    return t;
}

char *trc_profile_format(const trc_profile_t *p, trc_profile_format_t fmt, const char *key)
{
    if (fmt == TRC_PROFILE_SUMMARY_JSON) {
        json_t *root = json_object();
        json_object_set_new(root, key && key[0] ? key : "ncsim", summary_object(p));
        return dump(root);
    }
    if (fmt == TRC_PROFILE_JSON) {
        /* the records are JSON text already: splice them in rather than parse them again */
        json_t *root = json_object();
        json_t *list = json_array();
        json_array_append_new(list, summary_object(p));
        json_object_set_new(root, "summary", list);
        json_object_set_new(root, "instruction", json_array());
        char *text = dump(root);
        if (!text)
            return NULL;
        const char *mark = "\"instruction\": []";
        char *at = strstr(text, mark);
        size_t rl = p->instructions ? strlen(p->instructions) : 0;
        if (!at || !rl)
            return text;
        size_t head = (size_t)(at - text) + strlen("\"instruction\": [");
        size_t total = strlen(text) + rl + 1;
        char *out = malloc(total);
        if (!out) {
            free(text);
            return NULL;
        }
        memcpy(out, text, head);
        memcpy(out + head, p->instructions, rl);
        strcpy(out + head + rl, text + head);
        free(text);
        return out;
    }
    /* a table: field, value, unit */
    size_t cap = 16384, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    len += (size_t)snprintf(buf, cap, "%s (simulated by %s, %s, nc_idx %u)\n",
                            p->source, p->generator[0] ? p->generator : "ncsim",
                            p->from_trace ? "from a trace" : "from a statistics file",
                            (unsigned)p->core);
    if (p->filtered)
        len += (size_t)snprintf(buf + len, cap - len,
                                "note: the trace kept a time window or some engines only: the "
                                "figures describe what it kept\n");
    if (p->failed[0])
        len += (size_t)snprintf(buf + len, cap - len, "note: the run failed: %.400s\n",
                                p->failed);
    for (int f = 0; f < TRC_PF_COUNT; f++) {
        if (!p->have[f])
            continue;
        if (cap - len < 256) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
            cap *= 2;
        }
        trc_profile_unit_t u = (trc_profile_unit_t)field_table[f].unit;
        int integer = u == TRC_PU_B || u == TRC_PU_FLOP || u == TRC_PU_NUM ||
                      u == TRC_PU_CYCLES;
        if (integer)
            len += (size_t)snprintf(buf + len, cap - len, "%-44s %20.0f %s\n",
                                    field_table[f].key, p->value[f], unit_names[u]);
        else
            len += (size_t)snprintf(buf + len, cap - len, "%-44s %20.9g %s\n",
                                    field_table[f].key, p->value[f], unit_names[u]);
    }
    return buf;
}

void trc_profile_free(trc_profile_t *p)
{
    free(p->instructions);
    p->instructions = NULL;
    p->ninstructions = 0;
}
