/*
 * flow.c -- the fluid bandwidth-sharing model of flow.h.
 */
#include "flow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static void reshare_event(sim_queue_t *q, sim_event_t *ev);


int flow_net_init(flow_net_t *net, struct sim *s, uint32_t nres)
{
    memset(net, 0, sizeof *net);
    net->nres = nres;
    net->sim = s;
    net->res = calloc(nres ? nres : 1, sizeof *net->res);
    net->dirty = calloc(nres ? nres : 1, sizeof *net->dirty);
    net->is_dirty = calloc(nres ? nres : 1, 1);
    sim_event_init(&net->reshare_ev, reshare_event, net, 0); /* sim_schedule_last */
    return net->res && net->dirty && net->is_dirty ? 0 : -1;
}

void flow_net_free(flow_net_t *net)
{
    if (net->res)
        for (uint32_t i = 0; i < net->nres; i++) {
            free(net->res[i].flows);
            free(net->res[i].series);
        }
    free(net->res);
    free(net->dirty);
    free(net->is_dirty);
    memset(net, 0, sizeof *net);
}

void flow_init(flow_t *f, double bytes, double cap, flow_done_fn done, void *owner)
{
    /* every field but the event and the per-resource arrays, which flow_use and flow_start
     * fill up to nres */
    f->rate = 0;
    f->last_update = 0;
    f->nres = f->active = 0;
    f->generation = 0;
    f->binding = 0;
    f->accounted = 0;
    /* the time at each bound: only the slots a binding can name are zeroed, its own cap's
     * here and each resource's in flow_use (a memset of all was a `rep stos` per transfer) */
    f->bound_ps[FLOW_MAX_RES] = 0;
    f->remaining = bytes;
    f->cap = cap;
    f->done = done;
    f->owner = owner;
}

void flow_use(flow_t *f, uint32_t res, double weight, double eff)
{
    for (unsigned i = 0; i < f->nres; i++)
        if (f->res[i] == res) { /* the same resource twice (a loop route): add the weight */
            f->weight[i] += (float)weight;
            return;
        }
    if (f->nres == FLOW_MAX_RES)
        return;
    f->res[f->nres] = res;
    f->weight[f->nres] = (float)weight;
    f->eff[f->nres] = (float)(eff > 0 ? eff : 1.0);
    f->bound_ps[f->nres] = 0;
    f->nres++;
}

/* Add `bytes` spread evenly over [t0, t1) to a resource's series: the long way. */
static __attribute__((noinline)) void series_add_slow(flow_res_t *r, uint64_t t0, uint64_t t1,
                                                      double bytes)
{
    if (!r->series) {
        r->series = calloc(FLOW_SERIES_MAX, sizeof *r->series);
        if (!r->series)
            return;
        r->bucket_ps = 1000000; /* 1 us to start with */
        r->cur_lo = UINT64_MAX / 2;
    }
    while (t1 > r->bucket_ps * FLOW_SERIES_MAX) {
        /* double the bucket width: merge pairs */
        for (uint32_t i = 0; i < FLOW_SERIES_MAX / 2; i++)
            r->series[i] = r->series[2 * i] + r->series[2 * i + 1];
        memset(r->series + FLOW_SERIES_MAX / 2, 0, FLOW_SERIES_MAX / 2 * sizeof *r->series);
        r->bucket_ps *= 2;
        r->cur_lo = UINT64_MAX / 2; /* no last bucket: the next call takes the long way */
        /* the buckets in use were merged by pairs too: without this the series would end
         * in empty buckets past the end of the run */
        r->nbuckets = (r->nbuckets + 1) / 2;
    }
    double per_ps = bytes / (double)(t1 - t0);
    for (uint64_t t = t0; t < t1;) {
        uint64_t b = t / r->bucket_ps;
        uint64_t end = (b + 1) * r->bucket_ps;
        if (end > t1)
            end = t1;
        r->series[b] += per_ps * (double)(end - t);
        if (b + 1 > r->nbuckets)
            r->nbuckets = (uint32_t)(b + 1);
        r->cur_b = (uint32_t)b;
        r->cur_lo = b * r->bucket_ps;
        t = end;
    }
}

/* Add `bytes` spread evenly over [t0, t1) to a resource's series. */
static inline void series_add(flow_res_t *r, uint64_t t0, uint64_t t1, double bytes)
{
    if (!r->track || t1 <= t0 || bytes <= 0)
        return;
    if (t0 >= r->cur_lo && t1 <= r->cur_lo + r->bucket_ps) {
        /* within the bucket of the last call (most calls; inside the series, so no bucket
         * doubling either): the long way's arithmetic, without its integer divisions */
        r->series[r->cur_b] += bytes / (double)(t1 - t0) * (double)(t1 - t0);
        return;
    }
    series_add_slow(r, t0, t1, bytes);
}

/* Bring a flow's remaining bytes up to now at its current rate. */
static inline void advance(flow_net_t *net, flow_t *f, uint64_t now)
{
    if (now <= f->last_update)
        return;
    double moved = f->rate * (double)(now - f->last_update);
    if (moved > f->remaining)
        moved = f->remaining;
    for (unsigned m = f->accounted; m; m &= m - 1) {
        unsigned i = (unsigned)__builtin_ctz(m);
        flow_res_t *r = &net->res[f->res[i]];
        if (r->count)
            r->bytes += moved * f->weight[i];
        series_add(r, f->last_update, now, moved * f->weight[i]);
    }
    f->remaining -= moved;
    f->bound_ps[f->binding] += now - f->last_update;
    f->last_update = now;
}

static inline void rate_and_schedule(struct sim *s, flow_net_t *net, flow_t *f)
{
    double rate = f->cap > 0 ? f->cap : INFINITY;
    uint8_t binding = FLOW_MAX_RES;
    for (unsigned i = 0; i < f->nres; i++) {
        const flow_res_t *r = &net->res[f->res[i]];
        double bound = f->capeff[i] / (r->weight_sum > 0 ? r->weight_sum : 1.0);
        if (bound < rate) {
            rate = bound;
            binding = (uint8_t)i;
        }
    }
    f->binding = binding;
    if (!(rate > 0) || isinf(rate))
        rate = 1e-9;
    if (rate == f->rate && sim_event_queued(&f->ev))
        return; /* same rate: its completion time stands */
    f->rate = rate;
    double x = f->remaining / rate, ps;
    if (x > 0 && x < 4e15) { /* ceil(x) without the library call: exact below 2^52 */
        ps = (double)(int64_t)x;
        ps += (double)(ps < x); /* without a branch: it goes either way at random */
    } else {
        ps = ceil(x);
    }
    uint64_t done = s->q.now + (ps > 0 ? (uint64_t)ps : 0);
    if (!sim_event_queued(&f->ev) || f->ev.time != done)
        if (sim_schedule(&s->q, &f->ev, done))
            sim_fail(s, "out of memory");
}

/* Mark f's resources for re-rating at the end of this instant. Flows on them are brought up
 * to now first, so bytes moved so far are counted at the old rates. */
static void mark_dirty(struct sim *s, flow_net_t *net, flow_t *f)
{
    for (unsigned i = 0; i < f->nres; i++) {
        uint32_t id = f->res[i];
        if (net->is_dirty[id])
            continue;
        net->is_dirty[id] = 1;
        net->dirty[net->ndirty++] = id;
    }
    sim_schedule_last(&s->q, &net->reshare_ev);
}

static void reshare_event(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    flow_net_t *net = ev->owner;
    struct sim *s = net->sim;
    uint64_t gen = ++net->generation;
    for (uint32_t d = 0; d < net->ndirty; d++) {
        flow_res_t *r = &net->res[net->dirty[d]];
        for (uint32_t k = 0; k < r->n; k++) {
            flow_t *g = r->flows[k];
            if (g->generation == gen)
                continue; /* rated already through another of its resources */
            g->generation = gen;
            advance(net, g, s->q.now);
            rate_and_schedule(s, net, g);
        }
    }
    /* the trace's bandwidth counters: the exact total through each resource that changed */
    const sim_trace_sink_t *tr = s->opt.trace;
    for (uint32_t d = 0; d < net->ndirty; d++) {
        uint32_t id = net->dirty[d];
        flow_res_t *r = &net->res[id];
        net->is_dirty[id] = 0;
        if (!tr || !tr->bandwidth)
            continue;
        /* the DMA engines' descriptor stages (res_desc) carry descriptor work, not bytes */
        if (id >= s->ncores + s->nchips + s->topo.nlinks + 2 * s->topo.instances)
            continue;
        double total = 0;
        for (uint32_t k = 0; k < r->n; k++) {
            const flow_t *g = r->flows[k];
            for (unsigned i = 0; i < g->nres; i++)
                if (g->res[i] == id)
                    total += g->rate * g->weight[i];
        }
        if (total == r->last_rate)
            continue;
        r->last_rate = total;
        uint32_t nlinks = s->topo.nlinks;
        int kind = id < s->ncores                       ? SIM_TRACE_RES_DMA
                   : id < s->ncores + s->nchips          ? SIM_TRACE_RES_HBM
                   : id < s->ncores + s->nchips + nlinks ? SIM_TRACE_RES_LINK
                                                         : SIM_TRACE_RES_EFA;
        uint32_t index = kind == SIM_TRACE_RES_DMA    ? id
                         : kind == SIM_TRACE_RES_HBM  ? id - s->ncores
                         : kind == SIM_TRACE_RES_LINK ? id - s->ncores - s->nchips
                                                      : id - s->ncores - s->nchips - nlinks;
        tr->bandwidth(tr->ctx, kind, index, s->q.now, total * 1000.0); /* bytes/ps -> GB/s */
    }
    net->ndirty = 0;
}

int flow_start(struct sim *s, flow_net_t *net, flow_t *f)
{
    uint64_t now = s->q.now;
    for (unsigned i = 0; i < f->nres; i++) {
        flow_res_t *r = &net->res[f->res[i]];
        if (r->n == r->capn) {
            uint32_t nc = r->capn ? r->capn * 2 : 16;
            flow_t **p = realloc(r->flows, nc * sizeof *p);
            if (!p)
                return -1;
            r->flows = p;
            r->capn = nc;
        }
        /* bring the others up to now before the split changes */
        for (uint32_t k = 0; k < r->n; k++)
            advance(net, r->flows[k], now);
        if (r->n == 0)
            r->busy_since = now;
        f->slot[i] = r->n;
        f->capeff[i] = r->cap * f->eff[i];
        if (r->count || r->track)
            f->accounted |= (uint16_t)(1u << i);
        r->flows[r->n++] = f;
        r->weight_sum += f->weight[i];
    }
    f->active = 1;
    f->last_update = now;
    f->rate = 0;
    if (!f->nres)
        rate_and_schedule(s, net, f);
    else
        mark_dirty(s, net, f);
    return 0;
}

void flow_finish(struct sim *s, flow_net_t *net, flow_t *f)
{
    uint64_t now = s->q.now;
    advance(net, f, now);
    for (unsigned i = 0; i < f->nres; i++) {
        flow_res_t *r = &net->res[f->res[i]];
        uint32_t slot = f->slot[i];
        flow_t *last = r->flows[--r->n];
        r->flows[slot] = last;
        /* fix the moved flow's slot for this resource */
        for (unsigned k = 0; k < last->nres; k++)
            if (last->res[k] == f->res[i])
                last->slot[k] = slot;
        r->weight_sum -= f->weight[i];
        if (r->n == 0) {
            r->weight_sum = 0.0; /* no drift left behind by float subtraction */
            r->busy_ps += now - r->busy_since;
        }
    }
    f->active = 0;
    mark_dirty(s, net, f);
}

void flow_net_flush(struct sim *s, flow_net_t *net)
{
    uint64_t now = s->q.now;
    for (uint32_t i = 0; i < net->nres; i++) {
        flow_res_t *r = &net->res[i];
        for (uint32_t k = 0; k < r->n; k++)
            advance(net, r->flows[k], now);
        if (r->n) {
            r->busy_ps += now - r->busy_since;
            r->busy_since = now;
        }
    }
}
