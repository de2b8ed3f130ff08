/*
 * profile.h -- the run as the Neuron profiler's summary sees it (`neuron-profile view
 * --output-format summary-json`): one NeuronCore's total time, engine activity, FLOPs, memory
 * traffic and DMA figures, under the profiler's field names and in its units (seconds, bytes,
 * FLOPs, cycles; `*_percent` fields as fractions in [0, 1], as the JSON carries them).
 *
 * Built from a trace (every field) or from a statistics file (the fields its totals hold);
 * printed as the summary-json object, as the `json` format (summary plus one record per
 * instruction and transfer, traces only) or as a table. `ncsim report --format
 * neuron-profile`, the API (ncsim_profile_summary) and the Python command
 * `ncsim-neuron-profile` all come here. docs/nki.md lists how each field is computed.
 */
#ifndef NCSIM_TRACES_PROFILE_H
#define NCSIM_TRACES_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isa.h"
#include "status.h"

/* Units of the fields: XX(ID, text). Integers: B, FLOP, count, cycles. */
#define TRC_PROFILE_UNIT_MAP(XX)                                                               \
    XX(S, "s") XX(FRACTION, "fraction") XX(B, "B") XX(FLOP, "FLOP") XX(FLOP_PER_B, "FLOP/B")   \
    XX(NUM, "count") XX(CYCLES, "cycles") XX(TEXT, "text")

typedef enum trc_profile_unit {
#define XX(id, text) TRC_PU_##id,
    TRC_PROFILE_UNIT_MAP(XX)
#undef XX
        TRC_PU_COUNT
} trc_profile_unit_t;

/*
 * Every field of the summary, in output order: XX(ID, "key", unit, needs a trace, how ncsim
 * computes it). Fields marked 1 need per-instruction data and are absent from a summary built
 * from a statistics file. The text is the one `--terminology` prints and docs/nki.md quotes.
 */
#define TRC_PROFILE_FIELD_MAP(XX)                                                              \
    XX(TOTAL_TIME, "total_time", S, 0, "end of the run: the last completion of any "           \
       "instruction or transfer on any core")                                                  \
    XX(TOTAL_EXEC_TIME, "total_exec_time", S, 1, "first start to last completion of the "      \
       "core's instructions and transfers, NOPs excluded")                                     \
    XX(TOTAL_ACTIVE_TIME, "total_active_time", S, 1, "union of the intervals in which any "    \
       "engine of the core has an instruction in progress or a transfer of the core moves")    \
    XX(TOTAL_ACTIVE_TIME_PERCENT, "total_active_time_percent", FRACTION, 1,                    \
       "total_active_time / total_time")                                                       \
    XX(CYCLE_COUNT, "neuroncore_cycle_count", CYCLES, 0, "total_time x the core clock "        \
       "(sp.clock_ghz, 1.4 GHz on trn1)")                                                      \
    XX(TRACE_COUNT, "trace_count", NUM, 1, "instructions, transfers and collective steps "   \
       "of the core in the trace")                                                             \
    XX(EVENT_COUNT, "event_count", NUM, 1, "semaphore notifications (flows) of the core")    \
    XX(TOTAL_ROW_COUNT, "total_row_count", NUM, 1, "records of the core: slices, "           \
       "counter values and flows")                                                             \
    XX(HARDWARE_FLOPS, "hardware_flops", FLOP, 0, "PE FLOPs of every matmul and PE "           \
       "transpose, 2 per multiply-add, 4 on fp32 operands (as published trn1 profiles count)") \
    XX(TRANSPOSE_FLOPS, "transpose_flops", FLOP, 0, "the part of hardware_flops that is not "  \
       "useful work (PE transposes), counted the same way")                                    \
    XX(MODEL_FLOPS, "model_flops", FLOP, 0, "useful matmul FLOPs, 2 per multiply-add, not "    \
       "scaled")                                                                               \
    XX(ADJ_HARDWARE_FLOPS, "adjusted_hardware_flops", FLOP, 0, "bf16-equivalent: 2 per "      \
       "multiply-add, fp32 x 4 (the schema's throughput factor)")                              \
    XX(ADJ_TRANSPOSE_FLOPS, "adjusted_transpose_flops", FLOP, 0, "the same for transposes")    \
    XX(RAW_HARDWARE_FLOPS, "raw_hardware_flops", FLOP, 0, "2 per multiply-add whatever the "   \
       "type (ncsim's)")                                                                       \
    XX(RAW_TRANSPOSE_FLOPS, "raw_transpose_flops", FLOP, 0, "the same for transposes")         \
    XX(MM_AI, "mm_arithmetic_intensity", FLOP_PER_B, 0, "(hardware_flops - "                   \
       "transpose_flops) / (hbm_read_bytes + hbm_write_bytes)")                                \
    XX(PEAK_RATIO, "peak_flops_bandwidth_ratio", FLOP_PER_B, 0, "peak PE FLOP/s of a core / "  \
       "the core's HBM bandwidth (the chip's / cores per chip: one HBM stack on trn1)")        \
    XX(HFU, "hfu_estimated_percent", FRACTION, 0, "hardware_flops / (peak FLOP/s x "           \
       "total_time)")                                                                          \
    XX(MFU, "mfu_estimated_percent", FRACTION, 0, "model_flops / (peak FLOP/s x total_time)")  \
    XX(MFU_MAX, "mfu_max_achievable_estimated_percent", FRACTION, 0, "(model_flops / HBM "     \
       "bytes) / peak_flops_bandwidth_ratio")                                                  \
    XX(MFU_INST, "mfu_inst_estimated_percent", FRACTION, 0, "(hardware_flops - "               \
       "transpose_flops) / (peak FLOP/s x total_time)")                                        \
    XX(MFU_INST_MAX, "mfu_inst_max_achievable_estimated_percent", FRACTION, 0,                 \
       "mm_arithmetic_intensity / peak_flops_bandwidth_ratio")                                 \
    XX(TE_COUNT, "tensor_engine_instruction_count", NUM, 0, "instructions of the PE engine") \
    XX(MM_COUNT, "matmul_instruction_count", NUM, 1, "matmul and transpose instructions "    \
       "of the PE engine")                                                                     \
    XX(HBM_READ, "hbm_read_bytes", B, 0, "bytes the core's transfers read from HBM "           \
       "(an accumulating write into HBM reads its destination too)")                           \
    XX(HBM_WRITE, "hbm_write_bytes", B, 0, "bytes the core's transfers wrote to HBM")          \
    XX(SBUF_READ, "sbuf_read_bytes", B, 0, "SBUF bytes read by instruction operands and by "   \
       "transfers from SBUF")                                                                  \
    XX(SBUF_WRITE, "sbuf_write_bytes", B, 0, "SBUF bytes written by instruction results and "  \
       "by transfers into SBUF")                                                               \
    XX(PSUM_READ, "psum_read_bytes", B, 0, "PSUM bytes read by instructions (a matmul that "   \
       "accumulates reads its destination) and transfers")                                     \
    XX(PSUM_WRITE, "psum_write_bytes", B, 0, "PSUM bytes written by instructions and "         \
       "transfers")                                                                            \
    XX(PSUM_TO_SBUF_COUNT, "psum_read_sbuf_write_count", NUM, 1, "instructions that read "   \
       "PSUM and write SBUF")                                                                  \
    XX(PSUM_TO_SBUF_BYTES, "psum_read_sbuf_write_bytes", B, 1, "the SBUF bytes they write")    \
    XX(SPILL_SAVE, "spill_save_bytes", B, 0, "bytes the NKI lowering spilled from SBUF to "    \
       "HBM (its statistics: spill_save_bytes); 0 for NCA programs")                           \
    XX(SPILL_RELOAD, "spill_reload_bytes", B, 0, "bytes it read back (spill_reload_bytes)")    \
    XX(INPUT_QUEUE, "input_queue_bytes", B, 1, "bytes of transfers from HBM")                  \
    XX(OUTPUT_QUEUE, "output_queue_bytes", B, 1, "bytes of transfers to HBM")                  \
    XX(WEIGHT_QUEUE, "weight_queue_bytes", B, 1, "0: NCA has no weight queues")                \
    XX(IO_WEIGHTS_SIZE, "inputs_and_weights_size_bytes", B, 0, "bytes of the program's "       \
       "input and inout HBM tensors (needs the program)")                                      \
    XX(IOW_SIZE, "inputs_outputs_weights_size_bytes", B, 0, "bytes of its input, output and "  \
       "inout HBM tensors")                                                                    \
    XX(WEIGHT_SIZE, "weight_size_bytes", B, 0, "0: NCA declares no weights")                   \
    XX(MBU, "mbu_estimated_percent", FRACTION, 0, "(hbm_read_bytes + hbm_write_bytes) / "      \
       "total_time / the core's HBM bandwidth")                                                \
    XX(MBU_MIN_READ, "mbu_min_read_util_percent", FRACTION, 0, "inputs_and_weights_size_bytes " \
       "/ total_time / the core's HBM bandwidth")                                              \
    XX(DMA_ACTIVE_TIME, "dma_active_time", S, 0, "time with at least one transfer of the "     \
       "core moving data")                                                                     \
    XX(DMA_ACTIVE_PERCENT, "dma_active_time_percent", FRACTION, 0, "dma_active_time / "        \
       "total_time")                                                                           \
    XX(DMA_ACTIVE_CYCLES, "dma_active_cycles", CYCLES, 0, "dma_active_time x the core clock")  \
    XX(DMA_PACKET_TIME, "dma_packet_time", S, 1, "data phases of the transfers, summed")       \
    XX(DMA_TRANSFER_COUNT, "dma_transfer_count", NUM, 0, "transfers (one per dma "           \
       "instruction)")                                                                         \
    XX(DMA_TRANSFER_TIME, "dma_transfer_time", S, 1, "issue to landing of the transfers, "     \
       "summed")                                                                               \
    XX(DMA_TRANSFER_BYTES, "dma_transfer_total_bytes", B, 0, "bytes of the transfers")         \
    XX(DMA_TRANSFER_AVG, "dma_transfer_average_bytes", B, 0, "dma_transfer_total_bytes / "     \
       "dma_transfer_count")                                                                   \
    XX(DMA_QUEUE_COUNT, "dma_queue_count", NUM, 1, "DMA queues the core's transfers used")   \
    XX(STATIC_ACTIVE, "static_active_time", S, 0, "every NCA transfer is described by the "    \
       "program (static descriptors): = dma_active_time")                                      \
    XX(STATIC_ACTIVE_PERCENT, "static_active_time_percent", FRACTION, 0,                       \
       "= dma_active_time_percent")                                                            \
    XX(STATIC_PACKETS, "static_packet_count", NUM, 0, "= dma_transfer_count")                  \
    XX(STATIC_SIZE, "static_size", B, 0, "= dma_transfer_total_bytes")                         \
    XX(STATIC_PACKET_PERCENT, "static_packet_percent", FRACTION, 0, "1: all of them")          \
    XX(STATIC_SIZE_PERCENT, "static_size_percent", FRACTION, 0, "1: all of them")              \
    XX(DYNAMIC_ACTIVE, "dynamic_active_time", S, 0, "0: no descriptor is made at run time")    \
    XX(DYNAMIC_ACTIVE_PERCENT, "dynamic_active_time_percent", FRACTION, 0, "0")                \
    XX(DYNAMIC_PACKETS, "dynamic_packet_count", NUM, 0, "0")                                   \
    XX(DYNAMIC_SIZE, "dynamic_size", B, 0, "0")                                                \
    XX(DYNAMIC_PACKET_PERCENT, "dynamic_packet_percent", FRACTION, 0, "0")                     \
    XX(DYNAMIC_SIZE_PERCENT, "dynamic_size_percent", FRACTION, 0, "0")                         \
    XX(SW_DYNAMIC_ACTIVE, "software_dynamic_active_time", S, 0, "0: no software DGE")          \
    XX(SW_DYNAMIC_ACTIVE_PERCENT, "software_dynamic_active_time_percent", FRACTION, 0, "0")    \
    XX(SW_DYNAMIC_PACKETS, "software_dynamic_packet_count", NUM, 0, "0")                       \
    XX(SW_DYNAMIC_SIZE, "software_dynamic_size", B, 0, "0")                                    \
    XX(SW_DYNAMIC_PACKET_PERCENT, "software_dynamic_packet_percent", FRACTION, 0, "0")         \
    XX(SW_DYNAMIC_SIZE_PERCENT, "software_dynamic_size_percent", FRACTION, 0, "0")             \
    XX(HW_DYNAMIC_ACTIVE, "hardware_dynamic_active_time", S, 0, "0: no hardware DGE")          \
    XX(HW_DYNAMIC_ACTIVE_PERCENT, "hardware_dynamic_active_time_percent", FRACTION, 0, "0")    \
    XX(HW_DYNAMIC_PACKETS, "hardware_dynamic_packet_count", NUM, 0, "0")                       \
    XX(HW_DYNAMIC_SIZE, "hardware_dynamic_size", B, 0, "0")                                    \
    XX(HW_DYNAMIC_PACKET_PERCENT, "hardware_dynamic_packet_percent", FRACTION, 0, "0")         \
    XX(HW_DYNAMIC_SIZE_PERCENT, "hardware_dynamic_size_percent", FRACTION, 0, "0")             \
    XX(TENSOR_ACTIVE, "tensor_engine_active_time", S, 0, "time the PE engine has an "          \
       "instruction between its start and its completion (semaphore waits excluded)")          \
    XX(TENSOR_ACTIVE_PERCENT, "tensor_engine_active_time_percent", FRACTION, 0,                \
       "tensor_engine_active_time / total_time")                                               \
    XX(TENSOR_INSTR_TIME, "tensor_engine_instruction_time", S, 1, "start to completion of "    \
       "its instructions, summed")                                                             \
    XX(VECTOR_ACTIVE, "vector_engine_active_time", S, 0, "the same for the Vector engine (dve)") \
    XX(VECTOR_ACTIVE_PERCENT, "vector_engine_active_time_percent", FRACTION, 0,                \
       "vector_engine_active_time / total_time")                                               \
    XX(VECTOR_INSTR_TIME, "vector_engine_instruction_time", S, 1, "summed durations")          \
    XX(VECTOR_COUNT, "vector_engine_instruction_count", NUM, 0, "instructions")              \
    XX(SCALAR_ACTIVE, "scalar_engine_active_time", S, 0, "the same for the Scalar engine (act)") \
    XX(SCALAR_ACTIVE_PERCENT, "scalar_engine_active_time_percent", FRACTION, 0,                \
       "scalar_engine_active_time / total_time")                                               \
    XX(SCALAR_INSTR_TIME, "scalar_engine_instruction_time", S, 1, "summed durations")          \
    XX(SCALAR_COUNT, "scalar_engine_instruction_count", NUM, 0, "instructions")              \
    XX(GPSIMD_ACTIVE, "gpsimd_engine_active_time", S, 0, "the same for GpSimd (pool)")         \
    XX(GPSIMD_ACTIVE_PERCENT, "gpsimd_engine_active_time_percent", FRACTION, 0,                \
       "gpsimd_engine_active_time / total_time")                                               \
    XX(GPSIMD_INSTR_TIME, "gpsimd_engine_instruction_time", S, 1, "summed durations")          \
    XX(GPSIMD_COUNT, "gpsimd_engine_instruction_count", NUM, 0, "instructions")              \
    XX(SYNC_ACTIVE, "sync_engine_active_time", S, 0, "the same for the Sync engine (sp)")      \
    XX(SYNC_ACTIVE_PERCENT, "sync_engine_active_time_percent", FRACTION, 0,                    \
       "sync_engine_active_time / total_time")                                                 \
    XX(SYNC_INSTR_TIME, "sync_engine_instruction_time", S, 1, "summed durations")              \
    XX(SYNC_COUNT, "sync_engine_instruction_count", NUM, 0, "instructions")                  \
    XX(ACTIVATE_TIME, "activate_instruction_time", S, 1, "durations of the activate "          \
       "instructions, summed")                                                                 \
    XX(ACTIVATE_COUNT, "activate_instruction_count", NUM, 1, "activate instructions")        \
    XX(CC_OP_TIME, "cc_op_time", S, 0, "collective instructions of the core (cc engine), "     \
       "their durations summed")                                                               \
    XX(CC_OP_ACTIVE, "cc_op_active_time", S, 0, "time with a collective of the core in "       \
       "progress")                                                                             \
    XX(CC_OP_ACTIVE_PERCENT, "cc_op_active_time_percent", FRACTION, 0,                         \
       "cc_op_active_time / total_time")                                                       \
    XX(CC_OP_COUNT, "cc_op_count", NUM, 0, "collective instructions")                          \
    XX(CC_CORES_TIME, "cc_cores_instruction_time", S, 0, "the cc engine's instructions: = "    \
       "cc_op_time")                                                                           \
    XX(CC_CORES_ACTIVE, "cc_cores_instruction_active_time", S, 0, "= cc_op_active_time")       \
    XX(CC_CORES_ACTIVE_PERCENT, "cc_cores_instruction_active_time_percent", FRACTION, 0,       \
       "= cc_op_active_time_percent")                                                          \
    XX(CC_CORES_COUNT, "cc_cores_instruction_count", NUM, 0, "= cc_op_count")

typedef enum trc_profile_field {
#define XX(id, key, unit, trace_only, text) TRC_PF_##id,
    TRC_PROFILE_FIELD_MAP(XX)
#undef XX
        TRC_PF_COUNT
} trc_profile_field_t;

const char *trc_profile_field_key(trc_profile_field_t f);
trc_profile_unit_t trc_profile_field_unit(trc_profile_field_t f);
const char *trc_profile_field_text(trc_profile_field_t f);
int trc_profile_field_trace_only(trc_profile_field_t f);
const char *trc_profile_unit_text(trc_profile_unit_t u);

typedef struct trc_profile {
    char source[512];
    char program[512];
    char arch[64];
    char generator[64];
    uint32_t core;      /* nc_idx */
    int from_trace;
    int filtered;       /* a trace kept only a time window or some engines: partial figures */
    char failed[512];   /* a statistics file of a failed run: its error */
    double value[TRC_PF_COUNT];
    uint8_t have[TRC_PF_COUNT];
    /* with TRC_PROFILE_INSTRUCTIONS: one JSON object per instruction and transfer of the
     * core, comma-separated, in file order (malloc'd, NULL when not asked or none) */
    char *instructions;
    size_t ninstructions;
} trc_profile_t;

/* Flags of trc_profile_load. */
#define TRC_PROFILE_INSTRUCTIONS 1u /* keep the per-instruction records (traces only) */

/*
 * The summary of core `core` from `path`: a trace written by `ncsim run --trace` or a
 * statistics file (`ncsim run --stats`). `prog`, when not NULL, is the program that ran:
 * the declared tensor sizes come from it. NCSIM_IO / NCSIM_FORMAT (a message naming the file
 * and what is wrong) / NCSIM_USAGE (the core did not run) / NCSIM_NOMEM.
 */
ncsim_status_t trc_profile_load(const char *path, uint32_t core, const isa_program_t *prog,
                                unsigned flags, trc_profile_t *out, char *err, size_t errlen);
/* Set a field (the caller's own knowledge, e.g. spill bytes from the lowering). */
void trc_profile_set(trc_profile_t *p, trc_profile_field_t f, double value);

/* Output formats. */
typedef enum trc_profile_format {
    TRC_PROFILE_SUMMARY_JSON, /* {"KEY": {field: value, ...}}: neuron-profile summary-json */
    TRC_PROFILE_JSON,         /* {"summary": [{...}], "instruction": [...]}: its json format */
    TRC_PROFILE_TEXT          /* a table: field, value, unit (summary-text) */
} trc_profile_format_t;

/* The profile as text in `fmt` (malloc'd, ends with a newline); `key` is summary-json's one
 * top-level key (NULL: "ncsim"). NULL when out of memory. */
char *trc_profile_format(const trc_profile_t *p, trc_profile_format_t fmt, const char *key);
void trc_profile_free(trc_profile_t *p);

#endif
