/*
 * dma.c -- DMA queues and transfers (ISA.md 7.5 and 8, reference section 5;
 * docs/data-movement.md has the mechanism with a worked example).
 *
 * A `dma` instruction costs its issuing engine only the trigger; the transfer is appended
 * to one of the core's 16 queues. Then:
 *   1. Trigger latency: dma.trigger_latency_ns (plus hbm.latency_ns when it touches HBM)
 *      pass before the engines can see its descriptors. A latency, not a resource: any
 *      number of transfers wait out theirs at once, so a stream hides it.
 *   2. Descriptors: the transfer's pieces (contiguous runs, one descriptor each) are
 *      processed by the core's DMA engines, dma.descriptor_ns of one engine per descriptor,
 *      over at most as many engines as it has pieces. The engines' descriptor stages are one
 *      resource per core (res_desc, capacity dma.engines) shared by every queue, round-robin
 *      (an equal split between the queues working on descriptors): more queues do not
 *      make it faster. Each queue processes one transfer's descriptors at a time, in order,
 *      at most one transfer ahead of its data phase, so descriptors of the next transfer
 *      overlap the data of the current one: a stream on one queue costs
 *      max(descriptor time, data time) per transfer (measurements.md section 1).
 *   3. Data: within a queue transfers move data one after another and land in order (FIFO).
 *      Queues run concurrently; their data phases are flows (flow.h) over
 *   - the core's DMA engines (engines x engine bandwidth), split evenly among the core's
 *     moving transfers and collective traffic (round-robin between queues), at the
 *     efficiency the transfer's piece size allows (dma.piece_overhead_ns per piece);
 *   - the chip's HBM, shared by the transfers of both cores and collectives; each HBM side
 *     carries its own bytes: a transfer reading and writing HBM uses it twice, an accumulate
 *     into HBM three times;
 * and a transfer can use at most as many engines as it has contiguous pieces, and at most
 * the HBM channels its address span covers (hbm.channels, hbm.interleave_bytes).
 * A transfer that converts types reads the source's bytes and writes the destination's: the
 * flow's size is the larger side (the engines move both sides at once, each at their rate),
 * and HBM and the statistics are charged each side's own bytes.
 */
#include "sim_internal.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static xfer_t *xfer_alloc(struct sim *s)
{
    if (!s->free_xfers) {
        enum { BLOCK = 256 };
        xfer_t *block = calloc(BLOCK, sizeof *block);
        xfer_t **blocks = realloc(s->xfer_blocks, (s->nxfer_blocks + 1) * sizeof *blocks);
        if (!block || !blocks) {
            free(block);
            if (blocks)
                s->xfer_blocks = blocks;
            return NULL;
        }
        s->xfer_blocks = blocks;
        s->xfer_blocks[s->nxfer_blocks++] = block;
        for (int i = BLOCK - 1; i >= 0; i--) {
            block[i].next = s->free_xfers;
            s->free_xfers = &block[i];
        }
    }
    xfer_t *x = s->free_xfers;
    s->free_xfers = x->next;
    return x; /* dma_issue sets every field */
}

static void xfer_release(struct sim *s, xfer_t *x)
{
    x->next = s->free_xfers;
    s->free_xfers = x;
}

static double gbps_to_bytes_per_ps(double gbps)
{
    return gbps * 1e-3; /* 1 GB/s = 1e9 B / 1e12 ps */
}


/* Bytes per ps the HBM channels under [lo, hi) can deliver. */
static double channel_cap(const mdl_arch_t *a, int64_t lo, int64_t hi)
{
    double bw = gbps_to_bytes_per_ps(a->hbm.bandwidth_gbps);
    if (a->hbm.channels <= 1 || a->hbm.interleave_bytes == 0)
        return bw;
    uint64_t span = hi > lo ? (uint64_t)(hi - lo) : 1;
    uint64_t first = (uint64_t)lo / a->hbm.interleave_bytes;
    uint64_t last = ((uint64_t)lo + span - 1) / a->hbm.interleave_bytes;
    uint64_t k = last - first + 1;
    if (k >= a->hbm.channels)
        return bw;
    return bw * (double)k / (double)a->hbm.channels;
}

static void begin_data(struct sim *s, xfer_t *x)
{
    core_t *c = x->core;
    x->data_state = XFER_RUNNING;
    x->start = s->q.now;
    flow_init(&x->flow, x->data_bytes, x->data_cap, NULL, x);
    flow_use(&x->flow, res_dma(s, c->id), 1.0, x->eff);
    if (x->hbm_weight > 0)
        flow_use(&x->flow, res_hbm(s, c->chip), x->hbm_weight, 1.0);
    if (flow_start(s, &s->net, &x->flow))
        sim_fail(s, "out of memory");
}

static void desc_finished(struct sim *s, xfer_t *x)
{
    x->desc_state = XFER_DONE;
    x->described = s->q.now;
}

/* Its descriptors start: a flow of descriptor work over the core's descriptor stages. Its
 * data may move once one descriptor per engine is processed (x->first_ps later). */
static void begin_desc(struct sim *s, xfer_t *x)
{
    x->desc_begin = s->q.now;
    if (x->desc_work <= 0) {
        desc_finished(s, x);
        x->data_ok = 1;
        x->data_ok_at = s->q.now;
        return;
    }
    x->desc_state = XFER_RUNNING;
    flow_init(&x->dflow, x->desc_work, x->desc_cap, NULL, x);
    flow_use(&x->dflow, res_desc(s, x->core->id), 1.0, 1.0);
    if (flow_start(s, &s->net, &x->dflow) ||
        sim_schedule(&s->q, &x->ready_ev, s->q.now + x->first_ps))
        sim_fail(s, "out of memory");
}

/* dma.queue_round_robin 0: start the oldest waiting transfer's descriptors if none is being
 * processed. */
static void desc_pump(struct sim *s, core_t *c)
{
    while (!c->desc_busy && c->dwait_head && !s->failed) {
        xfer_t *x = c->dwait_head;
        c->dwait_head = x->dnext;
        if (!c->dwait_head)
            c->dwait_tail = NULL;
        begin_desc(s, x);
        c->desc_busy = x->desc_state == XFER_RUNNING;
    }
}

/* Its descriptors may start: at once when the queues share the descriptor stages
 * round-robin (or there is no descriptor work), else after those ready before it. */
static void desc_request(struct sim *s, xfer_t *x)
{
    core_t *c = x->core;
    if (s->arch->dma.queue_round_robin || x->desc_work <= 0) {
        begin_desc(s, x);
        return;
    }
    x->desc_state = XFER_PENDING;
    x->dnext = NULL;
    if (c->dwait_tail)
        c->dwait_tail->dnext = x;
    else
        c->dwait_head = x;
    c->dwait_tail = x;
    desc_pump(s, c);
}

/* Move a queue on: its head starts moving data once its first descriptors are processed;
 * the queue's descriptor stage takes the first transfer whose descriptors have not started,
 * once its trigger latency has passed, the stage has finished the one before it, and that
 * one moves data (at most one transfer described ahead of the data). */
static void queue_advance(struct sim *s, dma_queue_t *dq)
{
    for (;;) {
        xfer_t *h = dq->head;
        if (!h)
            return;
        if (h->data_state == XFER_WAITING && h->data_ok) {
            begin_data(s, h);
            if (s->failed)
                return;
        }
        xfer_t *prev = NULL, *x = h;
        while (x && x->desc_state == XFER_DONE) {
            prev = x;
            x = x->next;
        }
        if (!x || x->desc_state != XFER_WAITING || !x->eligible ||
            (prev && prev->data_state == XFER_WAITING))
            return;
        desc_request(s, x);
        if (s->failed || x->desc_state != XFER_DONE)
            return;
    }
}

/* ready_ev: the trigger latency has elapsed (descriptors not started), or the first
 * descriptors are processed (data may move). */
static void xfer_ready(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    xfer_t *x = ev->owner;
    struct sim *s = x->core->sim;
    if (x->desc_state == XFER_WAITING) {
        x->eligible = 1;
    } else {
        x->data_ok = 1;
        x->data_ok_at = s->q.now;
    }
    queue_advance(s, &x->core->queues[x->queue]);
}

static void xfer_land(struct sim *s, xfer_t *x);
static int busy_add(core_t *c, uint64_t lo, uint64_t hi);

/* dflow.ev: the descriptors are processed; it lands if its data has moved. */
static void xfer_desc_done(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    xfer_t *x = ev->owner;
    struct sim *s = x->core->sim;
    flow_finish(s, &s->net, &x->dflow);
    desc_finished(s, x);
    core_t *c = x->core;
    if (!s->arch->dma.queue_round_robin) {
        c->desc_busy = 0;
        desc_pump(s, c);
    }
    if (x->data_state == XFER_DONE)
        xfer_land(s, x);
    else
        queue_advance(s, &c->queues[x->queue]);
}

/* flow.ev: the data has moved; it lands if its descriptors are processed. */
static void xfer_data_done(sim_queue_t *q, sim_event_t *ev)
{
    xfer_t *x = ev->owner;
    core_t *c = x->core;
    struct sim *s = c->sim;
    flow_finish(s, &s->net, &x->flow);
    x->data_state = XFER_DONE;
    x->data_end = q->now;
    if (x->desc_state == XFER_DONE)
        xfer_land(s, x);
}

/* ---- breakdowns (traces only) ---------------------------------------------------------- */

const char *sim_dma_limit_name(sim_dma_limit_t l)
{
    static const char *const names[SIM_DMA_LIMIT_COUNT] = {"own cap", "DMA engines", "HBM",
                                                           "NeuronLink"};
    return l < SIM_DMA_LIMIT_COUNT ? names[l] : "?";
}

/* The shape, fixed cost, queue wait and what set the rate of transfer x (landing now). */
static void xfer_breakdown(const struct sim *s, const xfer_t *x, sim_trace_dma_t *r)
{
    r->pieces = x->pieces;
    r->bytes_per_piece = x->bytes_per_piece;
    r->efficiency = x->eff;
    /* its own fixed cost; the rest of issue to start is queueing: behind the fixed costs of
     * earlier transfers in the queue's descriptor stage, then behind their data */
    const mdl_arch_t *a = s->arch;
    (void)a;
    /* fixed: the trigger latency, waiting for the queue's descriptor stage, its first
     * descriptors, and any wait for its last descriptors after its data moved (the data
     * phase reported ends when it lands); queue wait: the rest, behind the data of the
     * transfers ahead in its queue */
    uint64_t tail = s->q.now > x->data_end ? s->q.now - x->data_end : 0;
    r->fixed_ps = (x->data_ok_at > x->issue ? x->data_ok_at - x->issue : 0) + tail;
    uint64_t queued = x->start > x->issue ? x->start - x->issue : 0;
    if (r->fixed_ps > queued)
        r->fixed_ps = queued;
    r->queue_wait_ps = queued - r->fixed_ps;
    r->cap_gbps = x->cap * 1000.0;
    r->engines = x->engines;
    const flow_t *f = &x->flow;
    uint64_t data = s->q.now > x->start ? s->q.now - x->start : 0;
    double rate = data ? x->data_bytes / (double)data : 0.0; /* flow bytes per ps */
    double engines_cap = s->arch->dma.engines * gbps_to_bytes_per_ps(s->arch->dma.engine_bandwidth_gbps);
    r->dma_share = engines_cap > 0 && x->eff > 0 ? rate / (engines_cap * x->eff) : 0.0;
    double hbm_cap = gbps_to_bytes_per_ps(s->arch->hbm.bandwidth_gbps);
    r->hbm_share = hbm_cap > 0 ? rate * x->hbm_weight / hbm_cap : 0.0;
    r->limited_ps[SIM_DMA_LIMIT_OWN] = f->bound_ps[FLOW_MAX_RES];
    for (unsigned i = 0; i < f->nres; i++) {
        uint32_t id = f->res[i];
        sim_dma_limit_t l = id < s->ncores                ? SIM_DMA_LIMIT_ENGINES
                            : id < s->ncores + s->nchips ? SIM_DMA_LIMIT_HBM
                                                         : SIM_DMA_LIMIT_LINK;
        r->limited_ps[l] += f->bound_ps[i];
    }
}

size_t sim_explain_dma(const sim_trace_dma_t *r, char *buf, size_t n)
{
    /* one formatter for the text, here and in trace readers (traces/records.c) */
    trc_dma_args_t a;
    memset(&a, 0, sizeof a);
    a.bytes = r->bytes;
    a.src_bytes = r->src_bytes != r->bytes ? r->src_bytes : 0;
    a.pieces = r->pieces;
    a.piece_bytes = r->bytes_per_piece;
    a.efficiency = r->efficiency;
    a.fixed = r->fixed_ps;
    a.queue_wait = r->queue_wait_ps;
    a.cap_gbps = r->cap_gbps;
    a.engines = r->engines;
    a.dma_share = 100.0 * r->dma_share;
    a.hbm_share = 100.0 * r->hbm_share;
    a.limited_own = r->limited_ps[SIM_DMA_LIMIT_OWN];
    a.limited_engines = r->limited_ps[SIM_DMA_LIMIT_ENGINES];
    a.limited_hbm = r->limited_ps[SIM_DMA_LIMIT_HBM];
    a.limited_link = r->limited_ps[SIM_DMA_LIMIT_LINK];
    return trc_dma_cost_text(&a, r->end_ps > r->start_ps ? r->end_ps - r->start_ps : 0, buf, n);
}

/* A transfer's bytes in the core's memory traffic (sim_core_stats_t), by space. */
static void core_memory_traffic(sim_core_stats_t *st, uint8_t space, uint64_t bytes, int write)
{
    switch ((isa_space_t)space) {
    case ISA_SPACE_SBUF: *(write ? &st->sbuf_write_bytes : &st->sbuf_read_bytes) += bytes; break;
    case ISA_SPACE_PSUM: *(write ? &st->psum_write_bytes : &st->psum_read_bytes) += bytes; break;
    case ISA_SPACE_HBM: *(write ? &st->hbm_write_bytes : &st->hbm_read_bytes) += bytes; break;
    default: break;
    }
}

/* Data moved and descriptors processed: the transfer lands now (the data phase reported
 * is its data time ending now, so a wait for the last descriptors counts as fixed cost). */
static void xfer_land(struct sim *s, xfer_t *x)
{
    core_t *c = x->core;
    sim_queue_t *q = &s->q;
    if (q->now > x->data_end)
        x->start += q->now - x->data_end;
    /* the data lands now */
    if (!s->opt.timing_only) {
        char err[1024];
        ncsim_status_t st = mdl_exec_dma(&c->fs, x->dst, x->src, x->accumulate, err,
                                         sizeof err);
        if (st != NCSIM_OK) {
            char where[768];
            sim_instr_where(s, c, x->engine, x->index, x->instr, where, sizeof where);
            sim_fail(s, "%s: %s\n", where, st == NCSIM_NOMEM ? "out of memory" : err);
            return;
        }
    }
    c->st->dma_transfers++;
    c->st->dma_bytes += x->bytes;
    sim_line_stats_t *ls = sim_line_at(s, x->line);
    ls->transfers++;
    ls->dma_bytes += x->bytes;
    ls->dma_ps += q->now - x->start;
    ls->dma_wait_ps += x->start - x->issue;
    /* each side its own bytes: a converting transfer reads the source's type and writes the
     * destination's (docs/data-movement.md, "Type conversion") */
    if (x->src->space == ISA_SPACE_HBM)
        s->stats.hbm_read_bytes += x->src_bytes;
    if (x->dst->space == ISA_SPACE_HBM) {
        s->stats.hbm_write_bytes += x->bytes;
        if (x->accumulate)
            s->stats.hbm_read_bytes += x->bytes;
    }
    core_memory_traffic(c->st, x->src->space, x->src_bytes, 0);
    core_memory_traffic(c->st, x->dst->space, x->bytes, 1);
    if (x->accumulate) /* read-modify-write of the destination */
        core_memory_traffic(c->st, x->dst->space, x->bytes, 0);
    if (q->now > c->st->end_ps)
        c->st->end_ps = q->now;
    if (s->opt.trace && s->opt.trace->dma) {
        sim_trace_dma_t r;
        memset(&r, 0, sizeof r);
        r.core = c->id;
        r.queue = x->queue;
        r.issuing_engine = x->engine;
        r.index = x->index;
        r.instr = x->instr;
        r.issue_ps = x->issue;
        r.start_ps = x->start;
        r.end_ps = q->now;
        r.bytes = x->bytes;
        r.src_bytes = x->src_bytes;
        r.desc_start_ps = x->desc_begin;
        r.desc_end_ps = x->described;
        xfer_breakdown(s, x, &r);
        s->opt.trace->dma(s->opt.trace->ctx, &r);
    }
    if (s->opt.observer && s->opt.observer->dma_landed)
        s->opt.observer->dma_landed(s->opt.observer->ctx, s, c->id, x->queue, x->engine,
                                    x->index, x->instr);
    sim_apply_post_list(s, c, x->instr, x->post, x->npost, ISA_ENGINE_COUNT, x->index);
    dma_queue_t *dq = &c->queues[x->queue];
    dq->head = x->next;
    if (!dq->head)
        dq->tail = NULL;
    s->pending_xfers--;
    if (busy_add(c, x->start, q->now)) {
        sim_fail(s, "out of memory");
        return;
    }
    xfer_release(s, x);
    queue_advance(s, dq);
    dma_core_flush_busy(s, c);
}

/* What a transfer's instruction alone decides (sim_memo keeps it): its views, shape,
 * efficiency, caps and fixed cost. */
void dma_memo_fill(const struct sim *s, const isa_instr_t *in, dma_memo_t *m)
{
    const isa_arg_t *args = isa_instr_args(s->prog, in);
    const mdl_arch_t *a = s->arch;
    memset(m, 0, sizeof *m);
    m->queue = (uint8_t)(args[2].present ? args[2].v.i : 0);
    m->dst = &s->prog->views[args[0].index];
    m->src = &s->prog->views[args[1].index];
    m->accumulate = args[3].present;
    mdl_dma_shape_t shape;
    mdl_dma_shape(m->dst, m->src, &shape);
    m->bytes = shape.bytes;
    m->src_bytes = shape.src_bytes;
    /* The engines read the source and write the destination of a piece at once, each side at
     * the engine's rate, so the larger side bounds the data time (docs/data-movement.md,
     * "Type conversion"); shape.bytes_per_piece is that side's bytes per piece. */
    m->data_bytes = (double)(shape.src_bytes > shape.bytes ? shape.src_bytes : shape.bytes);
    m->eff = mdl_dma_efficiency(a, shape.bytes_per_piece);
    double engines = (double)a->dma.engines;
    if ((double)shape.pieces < engines)
        engines = shape.pieces ? (double)shape.pieces : 1.0;
    /* each engine moves its pieces at the efficiency their size allows */
    m->cap = engines * gbps_to_bytes_per_ps(a->dma.engine_bandwidth_gbps) * m->eff;
    m->pieces = shape.pieces;
    m->bytes_per_piece = shape.bytes_per_piece;
    m->engines = engines;
    m->touches_hbm = m->src->space == ISA_SPACE_HBM || m->dst->space == ISA_SPACE_HBM;
    double latency = a->dma.trigger_latency_ns + (m->touches_hbm ? a->hbm.latency_ns : 0);
    m->latency_ps = (uint64_t)llround(latency * 1000.0);
    /* one descriptor per piece, each dma.descriptor_ns of one engine, over at most as many
     * engines as there are pieces */
    double pieces = shape.pieces ? (double)shape.pieces : 1.0;
    m->desc_work = pieces * a->dma.descriptor_ns * 1000.0;
    m->desc_cap = engines;
    m->first_ps = (uint64_t)llround(a->dma.descriptor_ns * 1000.0);
    /* the data phase: at most the HBM channels each HBM side spans; HBM carries each HBM
     * side's own bytes (the source's read, the destination's written; an accumulate into HBM
     * reads the destination too), per byte of the flow (data_bytes) */
    double cap = m->cap;
    const isa_view_t *sides[2] = {m->src, m->dst};
    const uint64_t side_bytes[2] = {m->src_bytes, m->bytes};
    double hbm_bytes = 0.0;
    for (int i = 0; i < 2; i++)
        if (sides[i]->space == ISA_SPACE_HBM) {
            int64_t lo, hi;
            isa_view_byte_range(sides[i], &lo, &hi);
            /* this side moves side_bytes per data_bytes of the flow */
            double ch = channel_cap(a, lo, hi);
            if (side_bytes[i] > 0)
                ch *= m->data_bytes / (double)side_bytes[i];
            if (ch < cap)
                cap = ch;
            hbm_bytes += (double)side_bytes[i] * ((i == 1 && m->accumulate) ? 2 : 1);
        }
    m->hbm_weight = m->data_bytes > 0 ? hbm_bytes / m->data_bytes : 0.0;
    m->data_cap = cap;
}

int dma_issue(struct sim *s, core_t *c, engine_t *e, const isa_instr_t *in, uint32_t index,
              const dma_memo_t *m)
{
    xfer_t *x = xfer_alloc(s);
    if (!x) {
        sim_fail(s, "out of memory");
        return -1;
    }
    x->core = c;
    x->next = NULL;
    x->start = 0;
    x->instr = in;
    x->index = index;
    x->line = in->line;
    x->npost = in->npost;
    memcpy(x->post, in->post, sizeof x->post);
    x->engine = e->id;
    x->queue = m->queue;
    x->dst = m->dst;
    x->src = m->src;
    x->accumulate = m->accumulate;
    x->bytes = m->bytes;
    x->src_bytes = m->src_bytes;
    x->data_bytes = m->data_bytes;
    x->hbm_weight = m->hbm_weight;
    x->eff = m->eff;
    x->cap = m->cap;
    x->data_cap = m->data_cap;
    x->pieces = m->pieces;
    x->bytes_per_piece = m->bytes_per_piece;
    x->engines = m->engines;
    x->touches_hbm = m->touches_hbm;
    x->desc_work = m->desc_work;
    x->desc_cap = m->desc_cap;
    x->first_ps = m->first_ps;
    x->issue = s->q.now;
    x->described = x->start = x->data_end = x->data_ok_at = x->desc_begin = 0;
    x->ready_at = s->q.now + m->latency_ps;
    x->desc_state = x->data_state = XFER_WAITING;
    x->eligible = x->data_ok = 0;
    sim_event_init(&x->ready_ev, xfer_ready, x, PRIO_DMA);
    sim_event_init(&x->dflow.ev, xfer_desc_done, x, PRIO_DMA);
    sim_event_init(&x->flow.ev, xfer_data_done, x, PRIO_DMA);
    dma_queue_t *dq = &c->queues[x->queue];
    if (dq->tail)
        dq->tail->next = x;
    else
        dq->head = x;
    dq->tail = x;
    s->pending_xfers++;
    if (m->latency_ps == 0) {
        x->eligible = 1;
        queue_advance(s, dq);
    } else if (sim_schedule(&s->q, &x->ready_ev, x->ready_at)) {
        sim_fail(s, "out of memory");
    }
    return s->failed ? -1 : 0;
}

/* Add to the busy time the segments no transfer still in flight can overlap: a transfer
 * lands later than now, with a data phase that starts no earlier than its data started (a
 * queue's head) or now (the others). */
void dma_core_flush_busy(struct sim *s, core_t *c)
{
    uint64_t lb = s->q.now;
    for (uint32_t k = 0; k < 16; k++) {
        const xfer_t *h = c->queues[k].head;
        if (h && h->data_state != XFER_WAITING && h->start < lb)
            lb = h->start;
    }
    uint32_t i = 0;
    while (i < c->nbusy && c->busy_seg[i][1] <= lb) {
        c->st->dma_busy_ps += c->busy_seg[i][1] - c->busy_seg[i][0];
        i++;
    }
    if (i) {
        memmove(c->busy_seg, c->busy_seg + i, (c->nbusy - i) * sizeof *c->busy_seg);
        c->nbusy -= i;
    }
}

/* The union of [lo, hi) with the core's busy segments. */
static int busy_add(core_t *c, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return 0;
    uint32_t i = 0;
    while (i < c->nbusy && c->busy_seg[i][1] < lo)
        i++;
    uint32_t j = i;
    while (j < c->nbusy && c->busy_seg[j][0] <= hi) {
        if (c->busy_seg[j][0] < lo)
            lo = c->busy_seg[j][0];
        if (c->busy_seg[j][1] > hi)
            hi = c->busy_seg[j][1];
        j++;
    }
    if (j > i) { /* merged segments i..j-1 into one */
        c->busy_seg[i][0] = lo;
        c->busy_seg[i][1] = hi;
        memmove(c->busy_seg + i + 1, c->busy_seg + j, (c->nbusy - j) * sizeof *c->busy_seg);
        c->nbusy -= j - i - 1;
        return 0;
    }
    if (c->nbusy == c->capbusy) {
        uint32_t n = c->capbusy ? 2 * c->capbusy : 16;
        void *p = realloc(c->busy_seg, n * sizeof *c->busy_seg);
        if (!p)
            return -1;
        c->busy_seg = p;
        c->capbusy = n;
    }
    memmove(c->busy_seg + i + 1, c->busy_seg + i, (c->nbusy - i) * sizeof *c->busy_seg);
    c->busy_seg[i][0] = lo;
    c->busy_seg[i][1] = hi;
    c->nbusy++;
    return 0;
}
