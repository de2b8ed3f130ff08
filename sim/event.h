/*
 * event.h -- the deterministic discrete-event core.
 *
 * Events are structs embedded in the component that owns them (no allocation per event),
 * ordered by (time, priority, insertion sequence) in a binary heap. Time is an integer
 * number of picoseconds, so the order never depends on floating-point rounding. The cost of
 * a run grows with the number of events, never with simulated cycles.
 */
#ifndef NCSIM_SIM_EVENT_H
#define NCSIM_SIM_EVENT_H

#include <stdint.h>

#define SIM_NOT_QUEUED UINT32_MAX
#define SIM_LAST_QUEUED (UINT32_MAX - 1) /* heap_index of the queue's end-of-instant event */
#define SIM_CUR_QUEUED (UINT32_MAX - 2)  /* heap_index of an event in sim_queue.cur */

typedef struct sim_event sim_event_t;
typedef struct sim_queue sim_queue_t;
typedef void (*sim_event_fn)(sim_queue_t *q, sim_event_t *ev);

struct sim_event {
    uint64_t time;       /* picoseconds */
    uint64_t seq;        /* insertion order, the last tie-breaker */
    uint32_t priority;   /* lower runs first at equal time */
    uint32_t heap_index; /* SIM_NOT_QUEUED when not scheduled */
    sim_event_fn fn;
    void *owner;
};

struct sim_queue {
    sim_event_t **heap;
    uint32_t n, cap;
    sim_event_t *last;   /* runs after every event of its instant (sim_schedule_last) */
    sim_event_t **cur;   /* events at time `now`, the next to run last (event.c) */
    uint32_t ncur, cur_cap;
    uint64_t now;        /* time of the event being processed */
    uint64_t next_seq;
    uint64_t processed;  /* events run so far */
};

void sim_event_init(sim_event_t *ev, sim_event_fn fn, void *owner, uint32_t priority);
int sim_queue_init(sim_queue_t *q);
void sim_queue_free(sim_queue_t *q);
/* Schedule (or move) ev at `time` (>= now). Returns -1 when out of memory. */
int sim_schedule(sim_queue_t *q, sim_event_t *ev, uint64_t time);
void sim_cancel(sim_queue_t *q, sim_event_t *ev);
/* Schedule ev now, to run after every other event of this instant, those scheduled while they
 * run included: what a heap event of a priority above all others would do, without the heap.
 * One such event at a time (a queued one stays where it is). */
void sim_schedule_last(sim_queue_t *q, sim_event_t *ev);
static inline int sim_event_queued(const sim_event_t *ev)
{
    return ev->heap_index != SIM_NOT_QUEUED;
}
/* Time of the earliest queued event, UINT64_MAX when empty. */
static inline uint64_t sim_queue_next_time(const sim_queue_t *q)
{
    if (q->ncur)
        return q->now;
    if (q->last)
        return q->last->time;
    return q->n ? q->heap[0]->time : UINT64_MAX;
}
static inline int sim_queue_empty(const sim_queue_t *q)
{
    return !q->n && !q->last && !q->ncur;
}
/* Pop and run the earliest event; returns 0 when the queue was empty. */
int sim_queue_step(sim_queue_t *q);

#endif
