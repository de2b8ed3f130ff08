/*
 * flow.h -- shared bandwidth: data movements ("flows") crossing resources (a core's DMA
 * engines, a chip's HBM, a NeuronLink direction) that they share.
 *
 * A fluid model: a flow moves bytes at a rate; when any flow starts or stops, the rates of the
 * flows sharing a resource with it are recomputed and their completion events moved. A
 * resource of capacity C carrying flows of weights w (bytes of resource use per byte moved)
 * gives each of them at most C / sum(w) -- an equal split -- and a flow moves at the smallest
 * bound over its resources and its own cap. The cost is a few events per flow whatever the
 * number of bytes.
 */
#ifndef NCSIM_SIM_FLOW_H
#define NCSIM_SIM_FLOW_H

#include <stdint.h>

#include "event.h"

#define FLOW_MAX_RES 12
#define FLOW_SERIES_MAX 512 /* buckets of a resource's bytes-over-time series */

struct sim;
struct flow;

typedef struct flow_res {
    double cap;                 /* bytes per ps */
    struct flow **flows;
    uint32_t n, capn;
    double weight_sum;
    uint64_t busy_since, busy_ps;  /* time with at least one flow */
    int count;                  /* keeps `bytes` (what nobody reads is not summed) */
    double bytes;               /* resource bytes carried (weights included) */
    double last_rate;           /* total bytes per ps last reported to the trace */
    /* bytes over time: `nbuckets` buckets of `bucket_ps` each; the width doubles when the
     * run outgrows the series */
    int track;
    double *series;
    uint32_t nbuckets;
    uint64_t bucket_ps;
    uint32_t cur_b;             /* the bucket the last addition ended in, from cur_lo */
    uint64_t cur_lo;
} flow_res_t;

typedef void (*flow_done_fn)(struct sim *s, struct flow *f);

typedef struct flow {
    sim_event_t ev;             /* completion: set up by the owner, whose handler calls
                                 * flow_finish */
    double remaining;           /* bytes */
    double rate;                /* bytes per ps */
    double cap;                 /* the flow's own limit, bytes per ps */
    uint64_t last_update;
    uint8_t nres, active;
    uint32_t res[FLOW_MAX_RES];
    float weight[FLOW_MAX_RES]; /* resource bytes per byte moved */
    float eff[FLOW_MAX_RES];    /* efficiency on that resource (DMA piece overhead), 0..1 */
    uint32_t slot[FLOW_MAX_RES];
    uint16_t accounted;         /* bit i: res[i] counts bytes or tracks a series */
    double capeff[FLOW_MAX_RES]; /* the resource's cap x eff, the numerator of its share */
    uint64_t generation;
    /* what set its rate, for breakdowns: binding = the resource slot whose share was the
     * smallest bound, FLOW_MAX_RES for the flow's own cap; bound_ps = time at each (set
     * for [0, nres) and FLOW_MAX_RES only, the slots a binding can name) */
    uint8_t binding;
    uint64_t bound_ps[FLOW_MAX_RES + 1];
    flow_done_fn done;
    void *owner;
} flow_t;

typedef struct flow_net {
    flow_res_t *res;
    uint32_t nres;
    /* Flows starting and ending at one instant are re-rated together, once, by an event at
     * that instant that runs after everything else there (16 queues or 32 collective chunks
     * starting at once would otherwise re-rate each other n^2 times). */
    sim_event_t reshare_ev;
    uint32_t *dirty;            /* resources whose flows need new rates */
    uint32_t ndirty;
    uint8_t *is_dirty;
    uint64_t generation;        /* stamps flows already re-rated in this pass */
    struct sim *sim;
} flow_net_t;

int flow_net_init(flow_net_t *net, struct sim *s, uint32_t nres);
void flow_net_free(flow_net_t *net);
/* Prepare a flow of `bytes` with no resources yet; then flow_use() each resource. */
void flow_init(flow_t *f, double bytes, double cap, flow_done_fn done, void *owner);
void flow_use(flow_t *f, uint32_t res, double weight, double eff);
/* Start moving now. Returns -1 when out of memory. */
int flow_start(struct sim *s, flow_net_t *net, flow_t *f);
/* The flow's completion event fired (its owner's handler calls this first): leave the
 * resources and share their bandwidth among the others again. */
void flow_finish(struct sim *s, flow_net_t *net, flow_t *f);
/* Close busy intervals and series up to now (before reading statistics). */
void flow_net_flush(struct sim *s, flow_net_t *net);

#endif
