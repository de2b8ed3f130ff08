/*
 * dma.c -- DMA queues and transfers (ISA.md 7.5 and 8, reference section 5).
 *
 * A `dma` instruction costs its issuing engine only the trigger; the transfer is appended
 * to one of the core's 16 queues. Within a queue transfers move data one after another and
 * complete in order (FIFO); each pays a fixed cost (descriptor setup and synchronisation,
 * plus the HBM access latency when it touches HBM). A queue's fixed costs run one at a time
 * (its descriptor stage), each overlapping the data phase of the transfers ahead of it, so
 * a stream of transfers on one queue costs max(fixed cost, data time) per transfer; queues
 * have their own descriptor stages, so fixed costs on different queues overlap. Queues run concurrently; their data phases are flows (flow.h) over
 *   - the core's DMA engines (engines x engine bandwidth), split evenly among the core's
 *     moving transfers and collective traffic (round-robin between queues), at the
 *     efficiency the transfer's piece size allows (DMA-BW: overhead-bound below 256 B, near
 *     peak from 2 KiB);
 *   - the chip's HBM, shared by the transfers of both cores and collectives; a transfer
 *     reading and writing HBM uses it twice, an accumulate into HBM three times;
 * and a transfer can use at most as many engines as it has contiguous pieces, and at most
 * the HBM channels its address span covers (hbm.channels, hbm.interleave_bytes).
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

static void xfer_landed(sim_queue_t *q, sim_event_t *ev);

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
    x->phase = XFER_DATA;
    x->start = s->q.now;
    flow_init(&x->flow, (double)x->bytes, x->data_cap, NULL, x);
    flow_use(&x->flow, res_dma(s, c->id), 1.0, x->eff);
    if (x->hbm_uses)
        flow_use(&x->flow, res_hbm(s, c->chip), x->hbm_uses, 1.0);
    if (c->dma_active++ == 0)
        c->dma_busy_since = s->q.now;
    if (flow_start(s, &s->net, &x->flow))
        sim_fail(s, "out of memory");
}

/* The fixed cost of the queue's head has elapsed: start moving data. */
static void xfer_ready(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    xfer_t *x = ev->owner;
    begin_data(x->core->sim, x);
}

/* Start the head of a queue: now if its fixed cost has elapsed, otherwise when it has. */
static void queue_advance(struct sim *s, dma_queue_t *dq)
{
    xfer_t *x = dq->head;
    if (!x || x->phase != XFER_QUEUED)
        return;
    if (x->ready_at <= s->q.now) {
        begin_data(s, x);
    } else {
        x->phase = XFER_FIXED;
        if (sim_schedule(&s->q, &x->ready_ev, x->ready_at))
            sim_fail(s, "out of memory");
    }
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
    r->fixed_ps = (uint64_t)llround(
        (a->dma.fixed_cost_ns + (x->touches_hbm ? a->hbm.latency_ns : 0)) * 1000.0);
    uint64_t queued = x->start > x->issue ? x->start - x->issue : 0;
    if (r->fixed_ps > queued)
        r->fixed_ps = queued;
    r->queue_wait_ps = queued - r->fixed_ps;
    r->cap_gbps = x->cap * 1000.0;
    r->engines = x->engines;
    const flow_t *f = &x->flow;
    uint64_t data = s->q.now > x->start ? s->q.now - x->start : 0;
    double rate = data ? (double)x->bytes / (double)data : 0.0; /* bytes per ps */
    double engines_cap = s->arch->dma.engines * gbps_to_bytes_per_ps(s->arch->dma.engine_bandwidth_gbps);
    r->dma_share = engines_cap > 0 && x->eff > 0 ? rate / (engines_cap * x->eff) : 0.0;
    double hbm_cap = gbps_to_bytes_per_ps(s->arch->hbm.bandwidth_gbps);
    int hbm_uses = (x->src->space == ISA_SPACE_HBM) +
                   (x->dst->space == ISA_SPACE_HBM ? (x->accumulate ? 2 : 1) : 0);
    r->hbm_share = hbm_cap > 0 ? rate * hbm_uses / hbm_cap : 0.0;
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

static void xfer_landed(sim_queue_t *q, sim_event_t *ev)
{
    xfer_t *x = ev->owner;
    core_t *c = x->core;
    struct sim *s = c->sim;
    flow_finish(s, &s->net, &x->flow);
    if (--c->dma_active == 0)
        c->st->dma_busy_ps += q->now - c->dma_busy_since;
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
    if (x->src->space == ISA_SPACE_HBM)
        s->stats.hbm_read_bytes += x->bytes;
    if (x->dst->space == ISA_SPACE_HBM) {
        s->stats.hbm_write_bytes += x->bytes;
        if (x->accumulate)
            s->stats.hbm_read_bytes += x->bytes;
    }
    core_memory_traffic(c->st, x->src->space, x->bytes, 0);
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
    xfer_release(s, x);
    queue_advance(s, dq);
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
    double fixed = a->dma.fixed_cost_ns + (m->touches_hbm ? a->hbm.latency_ns : 0);
    m->fixed_ps = (uint64_t)llround(fixed * 1000.0);
    /* the data phase: at most the HBM channels each HBM side spans; HBM used once per side,
     * twice for an accumulate into HBM (it reads, then writes) */
    double cap = m->cap;
    const isa_view_t *sides[2] = {m->src, m->dst};
    for (int i = 0; i < 2; i++)
        if (sides[i]->space == ISA_SPACE_HBM) {
            int64_t lo, hi;
            isa_view_byte_range(sides[i], &lo, &hi);
            double ch = channel_cap(a, lo, hi);
            if (ch < cap)
                cap = ch;
            m->hbm_uses = (uint8_t)(m->hbm_uses + ((i == 1 && m->accumulate) ? 2 : 1));
        }
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
    x->eff = m->eff;
    x->cap = m->cap;
    x->data_cap = m->data_cap;
    x->hbm_uses = m->hbm_uses;
    x->pieces = m->pieces;
    x->bytes_per_piece = m->bytes_per_piece;
    x->engines = m->engines;
    x->touches_hbm = m->touches_hbm;
    x->issue = s->q.now;
    /* The queue's descriptor stage handles one transfer's fixed cost at a time, in order,
     * while earlier transfers move data: a stream of transfers on one queue costs
     * max(fixed cost, data time) each (measurements.md section 1). */
    dma_queue_t *dq = &c->queues[x->queue];
    uint64_t from = dq->desc_free > s->q.now ? dq->desc_free : s->q.now;
    x->ready_at = from + m->fixed_ps;
    dq->desc_free = x->ready_at;
    x->phase = XFER_QUEUED;
    sim_event_init(&x->ready_ev, xfer_ready, x, PRIO_DMA);
    sim_event_init(&x->flow.ev, xfer_landed, x, PRIO_DMA);
    if (dq->tail)
        dq->tail->next = x;
    else
        dq->head = x;
    dq->tail = x;
    s->pending_xfers++;
    queue_advance(s, dq);
    return s->failed ? -1 : 0;
}

void dma_core_flush_busy(struct sim *s, core_t *c)
{
    if (c->dma_active) {
        c->st->dma_busy_ps += s->q.now - c->dma_busy_since;
        c->dma_busy_since = s->q.now;
    }
}
