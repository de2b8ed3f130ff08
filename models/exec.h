/*
 * exec.h -- what each instruction computes (ISA.md 7.1-7.5, 7.7): the functional model.
 * No timing here: sim/ decides when, this decides what.
 */
#ifndef NCSIM_MODELS_EXEC_H
#define NCSIM_MODELS_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "mem.h"
#include "numerics.h"
#include "rng.h"

/* The PE array's loaded stationary matrix (ldweights). */
typedef struct mdl_pe_state {
    float *weights;   /* K x M, row-major (partition k, column m), fp32-widened */
    uint32_t k, m;    /* 0 x 0 when nothing is loaded */
    uint8_t loaded;
    isa_dtype_t dtype;
} mdl_pe_state_t;

/*
 * Per-core functional state and context. One per core; the simulator owns it.
 * `psum_pe_written` holds one byte per 4-byte PSUM word: 1 when the last write to it came
 * from `pe`, so `matmul ..., acc` into PSUM last written by anything else is an error
 * (0: never written since init, 2: last written by act or dve; both refuse `acc`).
 */
typedef struct mdl_core_state {
    const isa_program_t *prog;
    uint32_t core;
    mdl_mem_t mem;
    mdl_pe_state_t pe;
    uint8_t *psum_pe_written;    /* psum partitions * bytes/4 (mdl_zeroed_alloc) */
    size_t psum_pe_bytes;        /* ... that many */
    uint8_t *psum_bank_pe;       /* per bank of each partition: 1 when every word of it is known
                                  * to be last written by pe (lets the acc check skip it);
                                  * NULL when banks do not divide the partition evenly */
    uint64_t psum_bank_bytes;    /* matmul's D must lie in one bank; init: PSUM bytes / 8 */
    mdl_rounding_t rounding;
    mdl_rng_t rng[ISA_ENGINE_COUNT]; /* one stream per engine (stochastic rounding, dropout) */
    float *scratch[4];           /* reusable buffers */
    size_t scratch_cap[4];
    /* fp32 widenings of recent matmul moving tiles (SBUF), entry i valid while SBUF watch i
     * is live: a tile reused by several stationaries is widened once (exec.c) */
    struct mdl_widened {
        isa_view_t view;
        float *data;
        size_t cap;
        uint64_t used; /* widen_clock when last used (least recently used is replaced) */
    } widened[MDL_ONCHIP_WATCHES];
    uint64_t widen_clock;
} mdl_core_state_t;

int mdl_core_state_init(mdl_core_state_t *s, const isa_program_t *prog, uint32_t core,
                        mdl_mem_t mem, mdl_rounding_t rounding, uint64_t seed);
void mdl_core_state_free(mdl_core_state_t *s);

/*
 * Execute one instruction's effect. DMA (ISA_OP_DMA) is not executed here but by
 * mdl_exec_dma when its transfer lands (here it is only validated: views, spaces, element
 * counts, queue); collectives live in cc (NCSIM_INTERNAL here). Returns NCSIM_OK, or
 * NCSIM_PROGRAM with a message in err (without location: the caller adds core, engine,
 * index and line), or NCSIM_NOMEM.
 */
ncsim_status_t mdl_exec(mdl_core_state_t *s, const isa_instr_t *in, char *err, size_t errlen);
/* Perform a DMA copy dst <- src (or dst += src with accumulate), through fp32. */
ncsim_status_t mdl_exec_dma(mdl_core_state_t *s, const isa_view_t *dst, const isa_view_t *src,
                            int accumulate, char *err, size_t errlen);

#endif
