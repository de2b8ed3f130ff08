/*
 * sim_internal.h -- the simulator's components, shared by sim.c (engines, semaphores, run
 * loop) and dma.c (queues, transfers, bandwidth sharing). Not a public interface.
 */
#ifndef NCSIM_SIM_INTERNAL_H
#define NCSIM_SIM_INTERNAL_H

#include "cost.h"
#include "event.h"
#include "exec.h"
#include "flow.h"
#include "neuronlink.h"
#include "mem.h"
#include "sim.h"

/* Event priorities at equal times: completions (which post semaphores) before issues, so
 * an engine woken at time t sees every post made at t; engines in a fixed order. */
enum {
    PRIO_DMA = 0,
    PRIO_POST = 10,
    PRIO_ENGINE = 20 /* + engine id */
};

/* Bytes an in-flight instruction writes, as a box: partitions x byte range, per space. */
typedef struct box {
    uint8_t space;
    uint16_t p0, p1; /* partitions [p0, p1) (HBM: 0, 1) */
    int64_t lo, hi;  /* bytes [lo, hi) */
} box_t;

/* What an instruction costs and touches that cannot change during a run: a function of its
 * opcode, engine and operand slots (and, for matmul's cost, the columns of the loaded
 * weights), computed once per distinct operand block (programs share equal blocks: isa.h
 * isa_instr_t.args) and kept in a direct-mapped table of slots pointing into entries
 * allocated in first-use order (sim.c sim_memo). */
typedef struct dma_memo {
    const isa_view_t *dst, *src;
    uint8_t queue, accumulate, touches_hbm;
    uint64_t bytes, src_bytes, pieces, latency_ps; /* bytes: written; src_bytes: read */
    double data_bytes;          /* the data flow's size: the larger of the two sides */
    double hbm_weight;          /* HBM bytes per byte of data_bytes (0: no HBM) */
    uint64_t first_ps;          /* one descriptor: its data may start moving after it */
    double desc_work, desc_cap; /* descriptor work (engine-ps) and the engines it can use */
    double eff, cap, data_cap, bytes_per_piece, engines;
} dma_memo_t;

typedef struct instr_memo {
    /* what every instruction reads first, in one cache line: the key, its II and latency,
     * its ports and FLOPs; then the boxes, then what only DMAs or traces read */
    uint32_t args;            /* key: in->args */
    uint16_t op;              /* key */
    uint8_t engine;           /* key */
    uint8_t nr, nw;           /* boxes it reads (interlock) and writes */
    uint8_t sbuf_port, psum_port; /* cost's SBUF / PSUM port use (read or write) */
    uint32_t cost_cols;       /* the stationary columns `cost` was computed with (matmul) */
    uint32_t loads_cols;      /* ldweights: the columns it loads */
    uint64_t ii_ps, lat_ps;   /* cost's II and latency in ps */
    uint64_t flops, hw_flops; /* cost's */
    box_t w[2];
    box_t r[ISA_MAX_SLOTS];
    dma_memo_t dma;
    mdl_cost_t cost;
} instr_memo_t;

typedef struct inflight {
    uint64_t complete;
    uint32_t index;   /* in the engine stream */
    uint8_t posts;    /* posts to apply at completion: post[0, posts) */
    uint8_t nw;
    isa_sync_t post[ISA_MAX_POSTS];
    box_t w[2];
} inflight_t;

struct core;

typedef struct engine {
    sim_event_t ev;      /* try to issue the next instruction */
    sim_event_t post_ev; /* apply posts of completed instructions */
    struct core *core;
    uint8_t id;
    const isa_instr_t *instrs;
    uint32_t n, pc;
    uint64_t last_complete;
    uint64_t write_until[ISA_SPACE_COUNT]; /* completion of its latest in-flight write to each
                                            * space: no interlock scan when it has passed */
    uint64_t seg_start;  /* start of the current stall segment, UINT64_MAX when not stalled */
    uint8_t stall;       /* cause of the current segment */
    uint8_t stall_sem;
    uint8_t last_stall;  /* the last cause the current instruction waited for (traces) */
    uint8_t wait_sem;    /* the last semaphore the current instruction waited for (traces) */
    uint64_t wait_by[SIM_STALL_COUNT]; /* its held time so far, by cause (traces) */
    uint8_t waited;      /* some wait_by is not 0 */
    uint8_t blocked;     /* waiting for semaphores (and its bit set in core.waiters) */
    uint8_t parked;      /* in a collective, until it completes */
    uint8_t blocked_sem; /* the semaphore whose wait did not hold */
    uint8_t sem_waited;  /* the current instruction waited for a semaphore: it pays the
                          * semaphore wake-up latency before it starts */
    uint64_t active_end; /* end of the union of its instructions' start..completion */
    uint64_t ready_ps;   /* when the current instruction became ready */
    inflight_t *fl;      /* FIFO ring of issued, not yet completed instructions */
    uint32_t fl_head, fl_n, fl_cap;
    uint32_t fl_posts;   /* entries of fl with posts */
    uint32_t stationary_cols; /* pe: M of the loaded weights */
    uint16_t last_op;    /* opcode and II of the previous instruction (background ldweights) */
    uint64_t last_ii;
    sim_engine_stats_t *st;
} engine_t;

typedef struct xfer {
    flow_t flow;         /* the data; flow.ev fires when it has moved */
    flow_t dflow;        /* the descriptors; dflow.ev fires when they are processed */
    sim_event_t ready_ev; /* the trigger latency has elapsed, then the first descriptors */
    struct core *core;
    struct xfer *next;   /* queue FIFO / free list */
    struct xfer *dnext;  /* the core's first-come list of descriptor work (queue_round_robin 0) */
    const isa_instr_t *instr;
    uint32_t index;
    uint32_t line;       /* instr's, and its posts: read when it lands, without instr */
    uint8_t npost;
    isa_sync_t post[ISA_MAX_POSTS];
    uint8_t engine, queue, touches_hbm;
    uint8_t desc_state, data_state; /* XFER_WAITING, XFER_RUNNING, XFER_DONE */
    uint8_t eligible;    /* its trigger latency has passed */
    uint8_t data_ok;     /* its first descriptors are processed */
    const isa_view_t *dst, *src;
    int accumulate;
    uint64_t bytes;      /* written (the destination side, in its type) */
    uint64_t src_bytes;  /* read (the source side, in its type) */
    double data_bytes;   /* its data flow: the larger side (dma_memo_fill) */
    double hbm_weight;   /* HBM bytes per byte of data_bytes */
    double eff;          /* efficiency for its piece size */
    double cap;          /* bytes per ps the engines it can use allow */
    double data_cap;     /* cap, and at most what the HBM channels it spans deliver */
    double desc_work, desc_cap;
    uint64_t first_ps;
    uint64_t issue, ready_at, described, data_ok_at, start, data_end;
    uint64_t desc_begin; /* its descriptors started (traces only) */
    uint64_t pieces;     /* shape, for breakdowns */
    double bytes_per_piece, engines;
} xfer_t;

/* A transfer's life: the trigger latency; then, in its queue's order, its descriptors
 * (a flow over the core's descriptor stages) and, once the first are processed and the
 * transfers ahead have landed, its data (a flow over the engines and HBM), the two at once;
 * it lands when both are done. */
enum { XFER_WAITING, XFER_RUNNING, XFER_DONE, XFER_PENDING /* descriptors: in the core's
                                                               * first-come queue */ };

typedef struct dma_queue {
    xfer_t *head, *tail;
} dma_queue_t;

typedef struct core {
    struct sim *sim;
    uint32_t id, chip;
    engine_t engines[ISA_ENGINE_COUNT];
    int32_t sems[ISA_MAX_SEMS];
    uint8_t waiters[ISA_MAX_SEMS]; /* per semaphore: bit e set while engine e is blocked on it */
    mdl_onchip_t sbuf, psum;
    mdl_core_state_t fs; /* functional state */
    int fs_ready;
    /* NC-v2 shared ports: dve/pool on SBUF, dve/act on PSUM */
    uint64_t sbuf_port_until, psum_port_until;
    uint8_t sbuf_port_owner, psum_port_owner;
    dma_queue_t queues[16];
    /* dma.queue_round_robin 0: transfers waiting for the descriptor stages, in the order they
     * became ready, and whether one is being processed */
    struct xfer *dwait_head, *dwait_tail;
    uint8_t desc_busy;
    /* DMA busy time: the union of the transfers' data phases as traces show them (each
     * ending when it lands); disjoint [lo, hi) segments not yet added to st->dma_busy_ps,
     * sorted, kept while a later-landing transfer could still overlap them */
    uint64_t (*busy_seg)[2];
    uint32_t nbusy, capbusy;
    sim_core_stats_t *st;
} core_t;

typedef struct chip {
    mdl_hbm_t hbm;
    int hbm_ready;
} chip_t;

struct cc_state;

struct sim {
    const isa_program_t *prog;
    sim_options_t opt;
    const mdl_arch_t *arch;
    sim_queue_t q;
    uint32_t ncores, nchips;
    core_t *cores;
    chip_t *chips;
    xfer_t *free_xfers;
    xfer_t **xfer_blocks;
    uint32_t nxfer_blocks;
    sim_stats_t stats;
    uint64_t pending_xfers;   /* issued, not yet landed */
    /* shared bandwidth: resource ids are [0, ncores) the cores' DMA engines, then
     * [ncores, ncores + nchips) the chips' HBM, then the directed NeuronLinks */
    flow_net_t net;
    mdl_linkmap_t topo;
    struct cc_state *cc;
    int failed;
    ncsim_status_t fail_status; /* what sim_run returns once failed: 0 means NCSIM_PROGRAM */
    sim_fault_t fault;
    uint64_t run_limit_ps;    /* sim_run(SIM_RUN_UNTIL_TIME)'s limit, else UINT64_MAX */
    int fold;                 /* an engine may run its next event itself when nothing is
                               * queued before it (not when sim_run steps one event) */
    int finished;
    char *error;
    size_t error_len, error_cap;
    instr_memo_t *memo;       /* sim_memo's entries, in the order they were first used */
    uint32_t nmemo;
    uint32_t *memo_slot;      /* per slot: 1 + its entry in memo, 0 when unused */
    uint32_t memo_mask;
    uint32_t memo_max_slots;  /* sim_limit_memo (tests) */
    uint64_t sem_wake_ps;     /* costs.semaphore_latency_ns in ps */
};

/* sim.c */
void sim_fail(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Add text to the error report without failing (deadlock details). */
void sim_error_append(struct sim *s, const char *text);
void sim_instr_where(struct sim *s, const core_t *c, int engine, uint32_t index,
                     const isa_instr_t *in, char *buf, size_t n);
void sim_apply_posts(struct sim *s, core_t *c, const isa_instr_t *in, int by_engine,
                     uint32_t by_index);
/* The same with in's posts given (a copy kept where it is cheaper to read than `in`). */
void sim_apply_post_list(struct sim *s, core_t *c, const isa_instr_t *in,
                         const isa_sync_t *post, unsigned npost, int by_engine,
                         uint32_t by_index);
/* The by-line statistics of instruction `in` (never NULL: out-of-range lines go to 0). */
static inline sim_line_stats_t *sim_line_at(struct sim *s, uint32_t line)
{
    const uint32_t *ids = s->stats.line_ids;
    if (!ids)
        return &s->stats.lines[line < s->stats.nlines ? line : 0];
    uint32_t lo = 0, hi = s->stats.nlines; /* sparse lines: the entry whose id is line */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] <= line)
            lo = mid;
        else
            hi = mid;
    }
    return &s->stats.lines[ids[lo] == line ? lo : 0];
}
static inline sim_line_stats_t *sim_line(struct sim *s, const isa_instr_t *in)
{
    return sim_line_at(s, in->line);
}

static inline uint32_t res_dma(const struct sim *s, uint32_t core)
{
    (void)s;
    return core;
}
static inline uint32_t res_hbm(const struct sim *s, uint32_t chip)
{
    return s->ncores + chip;
}
static inline uint32_t res_link(const struct sim *s, uint32_t link)
{
    return s->ncores + s->nchips + link;
}
/* An instance's network (EFA): dir 0 what leaves the instance, 1 what enters it. */
static inline uint32_t res_efa(const struct sim *s, uint32_t instance, uint32_t dir)
{
    return s->ncores + s->nchips + s->topo.nlinks + 2 * instance + dir;
}
/* A core's DMA engines' descriptor stages: capacity dma.engines engine-ps per ps, carrying
 * each transfer's descriptor work (pieces x dma.descriptor_ns), not bytes. */
static inline uint32_t res_desc(const struct sim *s, uint32_t core)
{
    return s->ncores + s->nchips + s->topo.nlinks + 2 * s->topo.instances + core;
}

/* sim.c: the memo of instruction `in` (its cost for the given loaded stationary columns),
 * filled on first use; NULL when out of memory. */
const instr_memo_t *sim_memo(struct sim *s, const isa_instr_t *in, uint32_t stationary_cols);

/* dma.c */
void dma_memo_fill(const struct sim *s, const isa_instr_t *in, dma_memo_t *m);
int dma_issue(struct sim *s, core_t *c, engine_t *e, const isa_instr_t *in, uint32_t index,
              const dma_memo_t *m);
void dma_core_flush_busy(struct sim *s, core_t *c);

/* cc.c: collectives. cc_arrive parks the calling engine until the collective completes.
 * Returns -1 on failure (sim_fail called). */
int cc_init(struct sim *s);
void cc_free(struct sim *s);
int cc_arrive(struct sim *s, core_t *c, engine_t *e, const isa_instr_t *in, uint32_t index);
int cc_pending(const struct sim *s);
void cc_report_pending(struct sim *s);
/* sim.c: an engine parked in a collective continues */
void sim_engine_resume(struct sim *s, engine_t *e);

#endif
