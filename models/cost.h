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
    /* the same bytes by memory (the profiler's sbuf_/psum_ read/write bytes) */
    uint64_t sbuf_read_bytes, sbuf_write_bytes, psum_read_bytes, psum_write_bytes;
    /* the part of hw_flops whose PE operand is fp32 (the profiler counts fp32 FLOPs apart:
     * traces/profile.c) */
    uint64_t hw_flops_fp32;
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
/* 1 when models/cost.def has a formula row for `op` on engine `e` (every pair ops.def allows
 * must have one; others cost the issue only). */
int mdl_cost_has_formula(isa_op_t op, isa_engine_t e);

/*
 * The breakdown of a cost: the formula the cost model used, with the values it filled in.
 * Only built on request (mdl_cost_explain; traces, reports, the API), never on the
 * simulator's hot path. Formulas name their terms as {NAME}; each term has a value and an
 * optional note ("fp32 moving"). A new mechanism joins by adding a {TERM} to its formula
 * and a mdl_cost_term to the list: nothing that prints or stores breakdowns changes.
 */
#define MDL_COST_MAX_TERMS 12

typedef struct mdl_cost_term {
    const char *name;  /* as written in the formula, e.g. "N", "MIN_II", "s" */
    double value;
    const char *note;  /* NULL or a short reason, e.g. "fp32 moving", "stride 32 B > 16 B" */
} mdl_cost_term_t;

typedef struct mdl_cost_terms {
    const char *ii;      /* "II = max({MIN_II}, {N} x {s})": in cycles of the engine clock */
    const char *latency; /* "latency = II + {static} + {pipeline}" */
    unsigned n;
    mdl_cost_term_t t[MDL_COST_MAX_TERMS];
} mdl_cost_terms_t;

/* mdl_cost_instr, and the breakdown of the same cost in `terms` (never NULL here). */
void mdl_cost_explain(const mdl_arch_t *a, const isa_program_t *p, const isa_instr_t *in,
                      uint32_t stationary_cols, mdl_cost_t *out, mdl_cost_terms_t *terms);
/* The value of term `name`; `dflt` when the breakdown has no such term. */
double mdl_cost_term_value(const mdl_cost_terms_t *t, const char *name, double dflt);
/* "II = max(MIN_II=64, N=512 x s=1) = 512 cycles = 457.143 ns; latency = ..." into buf
 * (always terminated); returns the length it needed, like snprintf. */
size_t mdl_cost_terms_format(const mdl_cost_terms_t *t, const mdl_cost_t *c, char *buf,
                             size_t n);

/* Description of a DMA transfer's shape, for the DMA model. */
typedef struct mdl_dma_shape {
    uint64_t bytes;            /* bytes written: the destination side, in its type */
    uint64_t src_bytes;        /* bytes read: the source side, in its type (differs from
                                * bytes when the transfer converts types) */
    uint64_t pieces;           /* contiguous runs (descriptors) on the worse of the two sides */
    double bytes_per_piece;    /* bytes the engines move per piece: the larger side's bytes
                                * over `pieces` (docs/cost-model.md 9.1) */
    uint32_t partitions;       /* SBUF partitions touched (1 for HBM<->HBM) */
    uint8_t src_space, dst_space;
} mdl_dma_shape_t;

void mdl_dma_shape(const isa_view_t *dst, const isa_view_t *src, mdl_dma_shape_t *out);
/* Efficiency in (0, 1] of pieces of this size (overhead-bound below 256 B, near peak from
 * 2 KiB, as DMA-BW publishes). */
double mdl_dma_efficiency(const mdl_arch_t *a, double bytes_per_piece);

#endif
