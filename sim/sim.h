/*
 * sim.h -- the simulator: a system of N chips x 2 NeuronCores running a program, with real
 * arithmetic (unless timing-only) and engine-level timing.
 *
 * One driver, sim_run(), serves the command line, the tests and the viewer (libuv's
 * uv_run modes): run until idle, one event at a time, or until a time.
 */
#ifndef NCSIM_SIM_SIM_H
#define NCSIM_SIM_SIM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "isa.h"

typedef struct sim sim_t;

/* ---- trace hooks (traces/ implements them; NULL costs nothing) ---------------------------- */

typedef enum sim_stall {
    SIM_STALL_NONE,
    SIM_STALL_SEMAPHORE, /* a wait clause did not hold */
    SIM_STALL_PORT,      /* the shared SBUF (dve/pool) or PSUM (dve/act) port was busy */
    SIM_STALL_INTERLOCK, /* reads what an earlier instruction of the engine still writes */
    SIM_STALL_COLLECTIVE, /* cc: waiting for the other members of a collective */
    SIM_STALL_COUNT
} sim_stall_t;

typedef struct sim_trace_instr {
    uint32_t core;
    uint8_t engine;
    uint32_t index;        /* in the engine's stream */
    const isa_instr_t *instr;
    uint64_t ready_ps;     /* when it could have started but for waits, ports, interlock */
    uint64_t start_ps;
    uint64_t ii_ps;
    uint64_t end_ps;       /* completion (start + latency) */
    uint8_t stall;         /* sim_stall_t: the last reason it waited */
    uint8_t stall_sem;     /* the last semaphore it waited for (when stall_by[SEMAPHORE]) */
    uint64_t flops;
    uint64_t bytes;
    uint64_t hw_flops;     /* all PE FLOPs, transposes included (HFU) */
    uint64_t hw_flops_fp32; /* the part of hw_flops on fp32 operands (mdl_cost_t) */
    /* its operand bytes by memory (mdl_cost_t) */
    uint64_t sbuf_read_bytes, sbuf_write_bytes, psum_read_bytes, psum_write_bytes;
    uint64_t stall_by[SIM_STALL_COUNT]; /* ps it was held between ready and start, by cause */
    /* what its cost was computed from (sim_explain_instr rebuilds the breakdown) */
    uint32_t stationary_cols; /* pe: M of the weights loaded when it started */
    uint64_t model_ii_ps;     /* the cost model's II; ii_ps is less for an ldweights
                               * loading in the background of the previous matmul */
} sim_trace_instr_t;

/* What set a transfer's rate during its data phase (sim_trace_dma_t.limited_ps). */
typedef enum sim_dma_limit {
    SIM_DMA_LIMIT_OWN,     /* its own cap: DMA engines its pieces can use, HBM channels its
                            * address span covers */
    SIM_DMA_LIMIT_ENGINES, /* the core's DMA engines (at its piece efficiency), shared */
    SIM_DMA_LIMIT_HBM,     /* the chip's HBM, shared */
    SIM_DMA_LIMIT_LINK,    /* a NeuronLink */
    SIM_DMA_LIMIT_COUNT
} sim_dma_limit_t;

const char *sim_dma_limit_name(sim_dma_limit_t l);

typedef struct sim_trace_dma {
    uint32_t core;
    uint8_t queue;
    uint8_t issuing_engine;
    uint32_t index;        /* the dma instruction's index in its engine stream */
    const isa_instr_t *instr;
    uint64_t issue_ps, start_ps, end_ps;
    uint64_t bytes;           /* written: the destination side, in its type */
    uint64_t src_bytes;       /* read: the source side, in its type (a conversion makes the
                               * two differ) */
    /* the breakdown of its time: issue + fixed + queue wait = start; start + data = end */
    uint64_t pieces;          /* contiguous runs on the worse side (descriptors) */
    double bytes_per_piece;
    double efficiency;        /* of pieces this size (dma.piece_overhead_ns) */
    uint64_t fixed_ps;        /* dma.fixed_cost_ns (+ hbm.latency_ns when it touches HBM) */
    uint64_t queue_wait_ps;   /* the rest of issue to start: waiting for the transfers ahead
                               * in its queue (their fixed costs in the queue's descriptor
                               * stage, then their data) */
    double cap_gbps;          /* its own cap (SIM_DMA_LIMIT_OWN) */
    double engines;           /* DMA engines its pieces can use */
    uint64_t limited_ps[SIM_DMA_LIMIT_COUNT]; /* data-phase time each limit set its rate */
    double dma_share;         /* its mean rate over the core's DMA engines' capacity at its
                               * efficiency: the share of the engines it got */
    double hbm_share;         /* its mean HBM use over the chip's HBM bandwidth (0: no HBM) */
    uint64_t desc_start_ps, desc_end_ps; /* its descriptors were processed in between */
} sim_trace_dma_t;

typedef struct sim_trace_sem {
    uint32_t core;
    uint8_t sem;
    int32_t value;
    uint64_t time_ps;
    uint8_t by_engine;     /* engine whose instruction posted (ISA_ENGINE_COUNT: a DMA queue) */
    uint32_t by_index;
} sim_trace_sem_t;

/* A resource a collective's chunk crosses (flow.h): a core's DMA engines, a chip's HBM, a
 * directed NeuronLink, an instance's network (EFA) out or in. */
typedef enum sim_trace_res_kind {
    SIM_TRACE_RES_DMA,
    SIM_TRACE_RES_HBM,
    SIM_TRACE_RES_LINK,
    SIM_TRACE_RES_EFA      /* an instance's network: id = 2 x instance + (0 out, 1 in) */
} sim_trace_res_kind_t;

typedef struct sim_trace_res {
    uint8_t kind;          /* sim_trace_res_kind_t */
    uint32_t id;           /* core (DMA), chip (HBM) or directed link index (LINK) */
    uint32_t from_chip, to_chip; /* LINK */
    double gbps;           /* capacity for this chunk (DMA: with its piece-size efficiency) */
    double weight;         /* resource bytes per byte moved (HBM of a reducing receiver: 2) */
} sim_trace_res_t;

#define SIM_TRACE_MAX_RES 12

typedef enum sim_trace_cc_event {
    SIM_TRACE_CC_STEP_BEGIN, /* a step starts: its fixed latency runs (once per step) */
    SIM_TRACE_CC_FLOW_BEGIN, /* a member's chunk starts moving */
    SIM_TRACE_CC_FLOW_END,   /* that chunk landed */
    SIM_TRACE_CC_STEP_END    /* the step's last chunk landed: once per member, in group order */
} sim_trace_cc_event_t;

typedef enum sim_trace_cc_alg {
    SIM_TRACE_CC_RING,     /* ring (all_reduce: reduce-scatter then all-gather) */
    SIM_TRACE_CC_RDH,      /* recursive doubling / halving */
    SIM_TRACE_CC_PAIRWISE, /* all_to_all: member i to i+k */
    SIM_TRACE_CC_P2P,      /* send/recv */
    SIM_TRACE_CC_MESH,     /* direct writes to every member (or chip) */
    SIM_TRACE_CC_KANGARING /* ring of chip pairs */
} sim_trace_cc_alg_t;

/* A collective's progress (sim/cc.c): steps and the chunks (flows) that move in them. */
typedef struct sim_trace_cc {
    uint8_t event;         /* sim_trace_cc_event_t */
    uint64_t time_ps;      /* of the event */
    uint64_t coll;         /* the collective: 1, 2, ... in the order they begin */
    uint8_t op;            /* isa_op_t */
    int32_t group;         /* program group; -1 for send/recv */
    uint32_t nmembers;
    uint8_t algorithm;     /* sim_trace_cc_alg_t: of the step's stage */
    uint32_t step, nsteps; /* step counts from 0 */
    uint64_t size;         /* bytes of the operand that sets the chunks */
    /* FLOW_* and STEP_END: a member (position in the group), its core and instruction, the
     * core it sends to in this step and the bytes (0 and its own core: it sends nothing) */
    uint32_t member, core, index;
    const isa_instr_t *instr;
    uint32_t to_core;
    uint64_t bytes;
    uint32_t send;         /* FLOW_*: the chunk's index among the step's (a member may send
                            * several in one step, e.g. Mesh) */
    uint8_t reduce;        /* the receiver combines the chunk with its own data */
    uint64_t start_ps;     /* FLOW_END: when the chunk started moving; STEP_END: step start */
    /* FLOW_*: the resources the chunk crosses */
    uint8_t nres;
    sim_trace_res_t res[SIM_TRACE_MAX_RES];
} sim_trace_cc_t;

typedef struct sim_trace_sink {
    void *ctx;
    void (*instr)(void *ctx, const sim_trace_instr_t *r);
    void (*dma)(void *ctx, const sim_trace_dma_t *r);
    void (*sem)(void *ctx, const sim_trace_sem_t *r);
    void (*cc)(void *ctx, const sim_trace_cc_t *r); /* may be NULL */
    /* The total rate through a resource changed (the bandwidth model's exact value, weights
     * included: an HBM-to-HBM copy counts twice on HBM). kind is a sim_trace_res_kind value;
     * may be NULL. */
    void (*bandwidth)(void *ctx, int kind, uint32_t index, uint64_t time_ps, double gbps);
} sim_trace_sink_t;

/* ---- cost breakdowns of traced work (computed on request only) ---------------------------- */

/*
 * The cost model's breakdown of a traced instruction, rebuilt from the same inputs the
 * simulator used (terms may be NULL), and as one line of text in buf (always terminated):
 * "II = max(min(MM_INIT=64, M=128 (...)), N=512 (...) x s=1) x f=4 (fp32: ...) x passes=1
 * = 2048 cycles = 731.429 ns; latency = II + pipeline=256 (...)". Returns the length needed.
 */
struct mdl_cost_terms;
size_t sim_explain_instr(const mdl_arch_t *a, const isa_program_t *p,
                         const sim_trace_instr_t *r, struct mdl_cost_terms *terms, char *buf,
                         size_t n);
/* A transfer's breakdown as text: "fixed 2000 ns (dma.fixed_cost_ns + hbm.latency_ns),
 * queue wait 0 ns, 128 pieces x 2048 B at efficiency 0.904, data 4519 ns at 58.0 GB/s
 * (own cap 435.2 GB/s, 16 engines); rate set by: DMA engines 100%". */
size_t sim_explain_dma(const sim_trace_dma_t *r, char *buf, size_t n);

/* ---- observers (sim/checker.c is one; NULL costs one pointer test per hook) --------------- */

/*
 * What happens to memory and semaphores, in simulation order, for checkers. Any callback may
 * be NULL. `index` is the instruction's index in its engine stream.
 */
typedef struct sim_observer {
    void *ctx;
    /* An instruction starts: its waits hold, its effect is about to be applied. Called for
     * every instruction (dma, nop and collectives too). */
    void (*instr_start)(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                        const isa_instr_t *in);
    /* Its effect has been applied (functional runs; not for dma, nop or collectives). */
    void (*instr_done)(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                       const isa_instr_t *in);
    /* A dma instruction's transfer landed on `queue` (its data written in functional runs);
     * its posts follow. `engine` and `index` name the issuing instruction. */
    void (*dma_landed)(void *ctx, sim_t *s, uint32_t core, uint8_t queue, uint8_t engine,
                       uint32_t index, const isa_instr_t *in);
    /* A collective completed (data written), before its members' posts: called for every
     * member with phase 0 (the barrier), then for every member with phase 1. */
    void (*collective)(void *ctx, sim_t *s, int phase, uint32_t core, uint32_t index,
                       const isa_instr_t *in);
    /* An instruction's posts are about to be applied: by_engine is ISA_ENGINE_COUNT for a
     * transfer (the one that just landed on that core), the engine otherwise. */
    void (*posts)(void *ctx, sim_t *s, uint32_t core, int by_engine, uint32_t by_index,
                  const isa_instr_t *in);
} sim_observer_t;

/* Replace the observer given at sim_create (NULL: none), before the run starts. */
void sim_set_observer(sim_t *s, const sim_observer_t *observer);
/* Replace the trace sink given at sim_create (NULL: none), before the run starts. */
void sim_set_trace_sink(sim_t *s, const sim_trace_sink_t *trace);

/* ---- options and statistics --------------------------------------------------------------- */

typedef struct sim_options {
    const mdl_arch_t *arch;
    int timing_only;          /* skip arithmetic */
    int stochastic_rounding;
    uint64_t seed;
    const sim_trace_sink_t *trace; /* may be NULL */
    const sim_observer_t *observer; /* may be NULL (checks off) */
} sim_options_t;

typedef struct sim_engine_stats {
    uint64_t instructions;
    uint64_t busy_ps;        /* sum of initiation intervals */
    uint64_t active_ps;      /* time with at least one instruction between its start and its
                              * completion (the profiler's "engine active time") */
    uint64_t stall_ps;       /* ready but held: semaphores + ports + interlock */
    uint64_t stall_by[SIM_STALL_COUNT];
    uint64_t end_ps;         /* completion of its last instruction */
    uint64_t flops;
} sim_engine_stats_t;

typedef struct sim_core_stats {
    sim_engine_stats_t engines[ISA_ENGINE_COUNT];
    uint64_t end_ps;
    uint64_t dma_transfers;
    uint64_t dma_bytes;
    uint64_t dma_busy_ps;    /* time with at least one transfer moving data */
    /* memory traffic of the core's own instructions and transfers (the profiler's summary,
     * traces/profile.c): SBUF and PSUM bytes read and written by instruction operands and
     * by transfers (a transfer reads its source and writes its destination); HBM bytes its
     * transfers read and wrote (an accumulating write to HBM reads too) */
    uint64_t sbuf_read_bytes, sbuf_write_bytes, psum_read_bytes, psum_write_bytes;
    uint64_t hbm_read_bytes, hbm_write_bytes;
    uint64_t tensor_hw_flops, tensor_hw_flops_fp32; /* PE FLOPs, transposes included; on fp32 */
    /* of which not useful (hw_flops - flops: PE transposes); on fp32 */
    uint64_t tensor_transpose_flops, tensor_transpose_flops_fp32;
    uint64_t dma_desc_busy_ps; /* time the DMA engines had descriptors to process */
    int used;                /* ran at least one instruction */
} sim_core_stats_t;

/* Where the time went by source line (the instruction's line, or its .loc): what the
 * engine totals hold, split by line. Summed over lines, instructions, busy_ps and stall_by
 * equal the sums over cores and engines. */
typedef struct sim_line_stats {
    uint64_t instructions;
    uint64_t busy_ps;        /* initiation intervals (collectives: their duration) */
    uint64_t stall_by[SIM_STALL_COUNT]; /* held before starting, by cause */
    uint64_t transfers;      /* DMA transfers its dma instructions made */
    uint64_t dma_bytes;
    uint64_t dma_ps;         /* their data phases, summed */
    uint64_t dma_wait_ps;    /* issue to start (fixed cost and queue wait), summed */
} sim_line_stats_t;

typedef struct sim_link_stats {
    uint32_t from, to;        /* chips */
    double gbps;              /* capacity of this direction */
    uint64_t bytes;
    uint64_t busy_ps;         /* time carrying at least one transfer */
} sim_link_stats_t;

typedef struct sim_stats {
    uint64_t total_ps;
    uint32_t ncores;
    sim_core_stats_t *cores;
    uint64_t tensor_flops;
    uint64_t tensor_hw_flops; /* all PE FLOPs, transposes included (HFU) */
    uint64_t instructions;
    uint64_t events;
    uint64_t hbm_read_bytes, hbm_write_bytes;
    double peak_flops_per_core; /* bf16 dense peak, FLOP/s */
    double mfu;
    double hfu;                 /* tensor_hw_flops over the same peak */
    /* data movement */
    uint32_t nchips;
    sim_link_stats_t *links;    /* every directed NeuronLink of the machine */
    uint32_t nlinks;
    uint64_t collective_bytes;  /* bytes collectives moved between members */
    uint32_t ninstances;        /* instances joined by EFA (efa.instances) */
    uint64_t efa_bytes;         /* bytes collectives sent from one instance to another */
    /* HBM bytes over time per chip: hbm_series[chip * hbm_series_len + bucket], buckets of
     * hbm_series_bucket_ps (reads and writes together) */
    double *hbm_series;
    uint32_t hbm_series_len;
    uint64_t hbm_series_bucket_ps;
    /* by source line: lines[l] for l in [0, nlines); line 0 gathers instructions with no
     * line. When line_ids is not NULL (a program whose line numbers are sparse: a `.loc
     * 4000000000`), entry l is line line_ids[l] instead, line_ids sorted and line_ids[0] = 0. */
    sim_line_stats_t *lines;
    uint32_t nlines;
    uint32_t *line_ids;
} sim_stats_t;

/* ---- life cycle ---------------------------------------------------------------------------- */

/* Build the system for a program. The program and arch must outlive the simulator.
 * NCSIM_USAGE when the program does not fit the architecture (chips, sizes). */
ncsim_status_t sim_create(const isa_program_t *prog, const sim_options_t *opt, sim_t **out,
                          char *err, size_t errlen);
void sim_destroy(sim_t *s);

/* Tensor data: element values of a declared HBM tensor, widened to / converted from fp32 (RNE).
 * Not available in timing-only mode (NCSIM_USAGE). */
ncsim_status_t sim_tensor_write_f32(sim_t *s, uint32_t tensor, const float *values);
ncsim_status_t sim_tensor_read_f32(sim_t *s, uint32_t tensor, float *values);
/* Raw bytes in the tensor's own type. */
ncsim_status_t sim_tensor_write_raw(sim_t *s, uint32_t tensor, const void *data);
ncsim_status_t sim_tensor_read_raw(sim_t *s, uint32_t tensor, void *data);
/* Any tensor (HBM, SBUF, PSUM), all its elements in row-major order (partition first), as fp32
 * values (raw 0) or packed raw bytes (raw 1). An SBUF/PSUM tensor declared for every core is
 * accessed on `core`; one of a single core on its own. NCSIM_USAGE in timing-only runs or for
 * a bad tensor or core. */
ncsim_status_t sim_tensor_write(sim_t *s, uint32_t tensor, uint32_t core, int raw,
                                const void *data);
ncsim_status_t sim_tensor_read(sim_t *s, uint32_t tensor, uint32_t core, int raw, void *data);
uint64_t sim_tensor_elems(const isa_program_t *p, uint32_t tensor);
/*
 * Any declared tensor's values as they are now (ncsim run --dump): HBM tensors (inputs,
 * outputs, scratch) and on-chip ones (SBUF, PSUM) of core `core` (ignored for HBM), row-major
 * over the declared dims (partitions first). raw: the tensor's own element type, packed;
 * else widened to fp32. NCSIM_USAGE in timing-only runs, for a bad index, or a core the
 * tensor does not live on.
 */
ncsim_status_t sim_tensor_read_any(sim_t *s, uint32_t tensor, uint32_t core, int raw,
                                   void *values);
/* The tensor named name[0..len) that lives on `core` (HBM tensors: any core), or -1. */
int sim_find_tensor(const isa_program_t *p, const char *name, size_t len, uint32_t core);
/* Index of the HBM tensor named name[0..len), or -1. */
int sim_find_hbm_tensor(const isa_program_t *p, const char *name, size_t len);
/* Store a .npy array read from `path` into a tensor: the type and shape must be the ones
 * CLI.md requires (mdl_npy_expect); bf16, tf32 and fp8 tensors take float32 arrays, rounded
 * to nearest even. NCSIM_IO with a message naming the file and tensor when they are not. */
struct mdl_npy;
ncsim_status_t sim_tensor_write_npy(sim_t *s, uint32_t tensor, const struct mdl_npy *a,
                                    const char *path, char *err, size_t errlen);
/* The values of `--random-inputs SEED`: uniform in [-1, 1), one generator stream per tensor
 * so that the values do not depend on which other tensors are bound. */
ncsim_status_t sim_tensor_fill_random(sim_t *s, uint32_t tensor, uint64_t seed);

typedef enum sim_run_mode {
    SIM_RUN_UNTIL_IDLE, /* until the program ends (or fails) */
    SIM_RUN_ONE_EVENT,  /* process a single event */
    SIM_RUN_UNTIL_TIME  /* process events up to `limit_ps` */
} sim_run_mode_t;

/*
 * Run. Returns NCSIM_OK while (or when) the run proceeds normally, NCSIM_PROGRAM on a
 * run-time error or deadlock (message from sim_error), NCSIM_NOMEM. sim_finished() tells
 * whether the program has ended.
 */
ncsim_status_t sim_run(sim_t *s, sim_run_mode_t mode, uint64_t limit_ps);
int sim_finished(const sim_t *s);
uint64_t sim_now_ps(const sim_t *s);
/* For tests: keep the per-operand-block memo of instruction costs in about `slots` slots
 * (rounded up to a power of two, at least 16) so that blocks evict each other; before the
 * first sim_run only. Results are the same whatever the size. */
void sim_limit_memo(sim_t *s, uint32_t slots);
/* The run-time error or deadlock report ("" when none); may span several lines. */
const char *sim_error(const sim_t *s);
/* Run in slices of simulated time up to target_ps (UINT64_MAX: to the end), calling
 * `progress` every `interval` seconds of host time between slices and stopping early when it
 * returns nonzero or *stop becomes nonzero (a signal handler or another thread may set it):
 * then *stopped is 1 and a later call goes on. Slices adapt to about 20 ms of host time
 * (slice_ps keeps the size between calls; 0 starts at 1 us). Returns sim_run's status. */
typedef struct sim_drive {
    uint64_t slice_ps;
    double interval;
    int (*progress)(void *ctx, sim_t *s, double host_seconds);
    void *ctx;
    volatile sig_atomic_t *stop;
    double host_seconds; /* wall time spent in sim_drive, summed over calls */
} sim_drive_t;
ncsim_status_t sim_drive(sim_t *s, uint64_t target_ps, sim_drive_t *d, int *stopped);

/* What failed, as data (the text is sim_error's): the kind, and the first instruction the
 * report names. */
typedef enum sim_fault_kind { SIM_FAULT_NONE, SIM_FAULT_RUNTIME, SIM_FAULT_DEADLOCK } sim_fault_kind_t;
typedef struct sim_fault {
    uint8_t kind;      /* sim_fault_kind_t */
    uint8_t has_site;  /* core, engine, index and line are known */
    uint8_t engine;
    uint32_t core;
    uint32_t index;    /* in the engine's stream */
    uint32_t line;     /* source line, 0 when unknown */
} sim_fault_t;
const sim_fault_t *sim_fault(const sim_t *s);
/* Statistics so far (final after the run ends). */
const sim_stats_t *sim_stats(sim_t *s);

#endif
