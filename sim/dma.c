/*
 * dma.c -- DMA queues and transfers (first version; ISA.md 7.5 and 8, reference section 5).
 *
 * A `dma` instruction costs its issuing engine only the trigger; the transfer is appended
 * to one of the core's 16 queues. Within a queue transfers move data one after another and
 * complete in order; each pays a fixed cost (descriptor setup and synchronisation) that
 * overlaps the data phase of the transfer ahead of it. Queues run concurrently and share:
 *   - the core's DMA engines: engines x engine bandwidth, split evenly among the core's
 *     transfers that are moving data (round-robin between queues);
 *   - the chip's HBM bandwidth, split evenly among the transfers of both cores that touch HBM;
 *   - a transfer can use at most as many engines as it has contiguous pieces, and moves at
 *     the efficiency its piece size allows (small pieces are overhead-bound, DMA-BW).
 * Rates are recomputed whenever a transfer starts or stops moving data (a fluid model), so
 * the cost is a few events per transfer whatever its size.
 */
#include "sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void xfer_data_done(sim_queue_t *q, sim_event_t *ev);

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
    memset(x, 0, sizeof *x);
    return x;
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

/* Bring every moving transfer of the chip up to now, then share the bandwidth again. */
static void reshare(struct sim *s, chip_t *ch)
{
    const mdl_arch_t *a = s->arch;
    uint64_t now = s->q.now;
    double core_bw = gbps_to_bytes_per_ps(a->dma.engine_bandwidth_gbps) * a->dma.engines;
    double hbm_bw = gbps_to_bytes_per_ps(a->hbm.bandwidth_gbps);
    for (uint32_t i = 0; i < ch->nactive; i++) {
        xfer_t *x = ch->active[i];
        x->remaining -= x->rate * (double)(now - x->last_update);
        if (x->remaining < 0)
            x->remaining = 0;
        x->last_update = now;
    }
    for (uint32_t i = 0; i < ch->nactive; i++) {
        xfer_t *x = ch->active[i];
        double rate = x->cap;
        double share = core_bw / (double)x->core->dma_active;
        if (share < rate)
            rate = share;
        if (x->touches_hbm && ch->hbm_active) {
            double h = hbm_bw / (double)ch->hbm_active;
            if (h < rate)
                rate = h;
        }
        rate *= x->eff;
        if (rate <= 0)
            rate = 1e-9;
        x->rate = rate;
        uint64_t done = now + (uint64_t)ceil(x->remaining / rate);
        if (sim_schedule(&s->q, &x->ev, done))
            sim_fail(s, "out of memory");
    }
}

static void begin_data(struct sim *s, xfer_t *x)
{
    core_t *c = x->core;
    chip_t *ch = &s->chips[c->chip];
    if (ch->nactive == ch->cap_active) {
        uint32_t nc = ch->cap_active ? ch->cap_active * 2 : 64;
        xfer_t **p = realloc(ch->active, nc * sizeof *p);
        if (!p) {
            sim_fail(s, "out of memory");
            return;
        }
        ch->active = p;
        ch->cap_active = nc;
    }
    x->phase = XFER_DATA;
    x->start = s->q.now;
    x->last_update = s->q.now;
    x->rate = 0;
    x->active_slot = ch->nactive;
    ch->active[ch->nactive++] = x;
    if (x->touches_hbm)
        ch->hbm_active++;
    if (c->dma_active++ == 0)
        c->dma_busy_since = s->q.now;
    x->ev.fn = xfer_data_done;
    reshare(s, ch);
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
        x->ev.fn = xfer_ready;
        if (sim_schedule(&s->q, &x->ev, x->ready_at))
            sim_fail(s, "out of memory");
    }
}

static void xfer_data_done(sim_queue_t *q, sim_event_t *ev)
{
    xfer_t *x = ev->owner;
    core_t *c = x->core;
    struct sim *s = c->sim;
    chip_t *ch = &s->chips[c->chip];
    /* leave the active set */
    uint32_t slot = x->active_slot;
    ch->active[slot] = ch->active[--ch->nactive];
    ch->active[slot]->active_slot = slot;
    if (x->touches_hbm)
        ch->hbm_active--;
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
    if (x->src->space == ISA_SPACE_HBM)
        s->stats.hbm_read_bytes += x->bytes;
    if (x->dst->space == ISA_SPACE_HBM) {
        s->stats.hbm_write_bytes += x->bytes;
        if (x->accumulate)
            s->stats.hbm_read_bytes += x->bytes;
    }
    if (q->now > c->st->end_ps)
        c->st->end_ps = q->now;
    if (s->opt.trace && s->opt.trace->dma) {
        sim_trace_dma_t r = {c->id, x->queue, x->engine, x->index, x->instr,
                             x->issue, x->start, q->now, x->bytes};
        s->opt.trace->dma(s->opt.trace->ctx, &r);
    }
    sim_apply_posts(s, c, x->instr, ISA_ENGINE_COUNT, x->index);
    dma_queue_t *dq = &c->queues[x->queue];
    dq->head = x->next;
    if (!dq->head)
        dq->tail = NULL;
    s->pending_xfers--;
    xfer_release(s, x);
    reshare(s, ch);
    queue_advance(s, dq);
}

int dma_issue(struct sim *s, core_t *c, engine_t *e, const isa_instr_t *in, uint32_t index)
{
    const isa_arg_t *args = isa_instr_args(s->prog, in);
    xfer_t *x = xfer_alloc(s);
    if (!x) {
        sim_fail(s, "out of memory");
        return -1;
    }
    x->core = c;
    x->instr = in;
    x->index = index;
    x->engine = e->id;
    x->queue = (uint8_t)(args[2].present ? args[2].v.i : 0);
    x->dst = &s->prog->views[args[0].index];
    x->src = &s->prog->views[args[1].index];
    x->accumulate = args[3].present;
    mdl_dma_shape_t shape;
    mdl_dma_shape(x->dst, x->src, &shape);
    x->bytes = shape.bytes;
    x->remaining = (double)shape.bytes;
    x->eff = mdl_dma_efficiency(s->arch, shape.bytes_per_piece);
    double engines = (double)s->arch->dma.engines;
    if ((double)shape.pieces < engines)
        engines = shape.pieces ? (double)shape.pieces : 1.0;
    x->cap = engines * gbps_to_bytes_per_ps(s->arch->dma.engine_bandwidth_gbps);
    x->touches_hbm = x->src->space == ISA_SPACE_HBM || x->dst->space == ISA_SPACE_HBM;
    x->issue = s->q.now;
    x->ready_at = s->q.now + (uint64_t)llround(s->arch->dma.fixed_cost_ns * 1000.0);
    x->phase = XFER_QUEUED;
    sim_event_init(&x->ev, xfer_ready, x, PRIO_DMA);
    dma_queue_t *dq = &c->queues[x->queue];
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
