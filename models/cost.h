/*
 * cost.h -- the timing cost of one instruction: initiation interval (II) and latency, from
 * the published NC-v2 cost formulas (shared/reference/neuroncore-v2.md section 5) with every
 * constant taken from the architecture config. docs/cost-model.md lists each formula.
 *
 * II: the time before the same engine may start its next instruction.
 * Latency: start to completion (when results are visible and posts fire); latency >= II.
 * DMA transfers are timed by the DMA model, not here: for ISA_OP_DMA this gives only the
 * issuing engine's cost of triggering it.
 */
#ifndef NCSIM_MODELS_COST_H
#define NCSIM_MODELS_COST_H

#include <stdint.h>

#include "arch.h"
#include "isa.h"

typedef struct mdl_cost {
    double ii_ns;
    double latency_ns;
    double cycles;          /* II in cycles of the engine's clock (for reports) */
    uint64_t flops;         /* useful tensor-engine FLOPs (2 per MAC), for MFU; 0 for others */
    uint64_t hw_flops;      /* all tensor-engine FLOPs, PE transposes (identity matmuls)
                             * included, for HFU (EXPL glossary); >= flops */
    uint64_t bytes_read;    /* SBUF/PSUM bytes the instruction reads */
    uint64_t bytes_written; /* SBUF/PSUM bytes it writes */
    uint8_t reads_sbuf, writes_sbuf, reads_psum, writes_psum; /* ports it needs */
} mdl_cost_t;

/* Engine clock in GHz for engine e (pe/act/dve/pool/sp; cc uses the sp clock). */
double mdl_engine_clock_ghz(const mdl_arch_t *a, isa_engine_t e);

/*
 * Cost of `in` on its engine. `stationary_cols` is the M of the weights currently loaded in
 * the PE array (used by matmul's max(min(64, M), N) rule); pass 0 if none.
 */
void mdl_cost_instr(const mdl_arch_t *a, const isa_program_t *p, const isa_instr_t *in,
                    uint32_t stationary_cols, mdl_cost_t *out);

/* Description of a DMA transfer's shape, for the DMA model. */
typedef struct mdl_dma_shape {
    uint64_t bytes;            /* payload bytes moved (destination side) */
    uint64_t pieces;           /* contiguous runs (descriptors) on the worse of the two sides */
    double bytes_per_piece;    /* average */
    uint32_t partitions;       /* SBUF partitions touched (1 for HBM<->HBM) */
    uint8_t src_space, dst_space;
} mdl_dma_shape_t;

void mdl_dma_shape(const isa_view_t *dst, const isa_view_t *src, mdl_dma_shape_t *out);
/* Efficiency in (0, 1] of pieces of this size (overhead-bound below 256 B, near peak from
 * 2 KiB, as DMA-BW publishes). */
double mdl_dma_efficiency(const mdl_arch_t *a, double bytes_per_piece);

#endif
