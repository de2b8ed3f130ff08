#include "event.h"

#include <stdlib.h>
#include <string.h>

void sim_event_init(sim_event_t *ev, sim_event_fn fn, void *owner, uint32_t priority)
{
    memset(ev, 0, sizeof *ev);
    ev->fn = fn;
    ev->owner = owner;
    ev->priority = priority;
    ev->heap_index = SIM_NOT_QUEUED;
}

int sim_queue_init(sim_queue_t *q)
{
    memset(q, 0, sizeof *q);
    q->cap = 256;
    q->heap = malloc(q->cap * sizeof *q->heap);
    q->cur_cap = 16;
    q->cur = malloc(q->cur_cap * sizeof *q->cur);
    return q->heap && q->cur ? 0 : -1;
}

void sim_queue_free(sim_queue_t *q)
{
    free(q->heap);
    free(q->cur);
    memset(q, 0, sizeof *q);
}

static int before(const sim_event_t *a, const sim_event_t *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    if (a->priority != b->priority)
        return a->priority < b->priority;
    return a->seq < b->seq;
}

static void place(sim_queue_t *q, uint32_t i, sim_event_t *ev)
{
    q->heap[i] = ev;
    ev->heap_index = i;
}

static inline __attribute__((always_inline)) void sift_up(sim_queue_t *q, uint32_t i)
{
    sim_event_t *ev = q->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(ev, q->heap[parent]))
            break;
        place(q, i, q->heap[parent]);
        i = parent;
    }
    place(q, i, ev);
}

static inline __attribute__((always_inline)) void sift_down(sim_queue_t *q, uint32_t i)
{
    sim_event_t *ev = q->heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        const sim_event_t *best = ev;
        if (l < q->n && before(q->heap[l], best)) {
            m = l;
            best = q->heap[l];
        }
        if (r < q->n && before(q->heap[r], best))
            m = r;
        if (m == i)
            break;
        place(q, i, q->heap[m]);
        i = m;
    }
    place(q, i, ev);
}

/* ---- the current instant's events -------------------------------------------------------------
 * Events scheduled at the current time (wake-ups, mostly) wait in q->cur, sorted from the
 * last to run to the next, instead of climbing to the heap's root and sinking back: they
 * all run before anything later, in (priority, sequence) order among themselves and with
 * the heap's events of the same time. */

static __attribute__((noinline)) void cur_remove(sim_queue_t *q, sim_event_t *ev)
{
    uint32_t j = 0;
    while (q->cur[j] != ev)
        j++;
    memmove(&q->cur[j], &q->cur[j + 1], (q->ncur - j - 1) * sizeof *q->cur);
    q->ncur--;
    ev->heap_index = SIM_NOT_QUEUED;
}

/* Double an array of event pointers (the heap, the current instant's list): the rare growth,
 * kept out of line. */
static __attribute__((noinline)) int grow_events(sim_event_t ***a, uint32_t *cap)
{
    uint32_t nc = *cap * 2;
    sim_event_t **h = realloc(*a, nc * sizeof *h);
    if (!h)
        return -1;
    *a = h;
    *cap = nc;
    return 0;
}

/* ev (time now, the newest sequence number) runs after the events of its priority or lower
 * and before those of a higher one. */
static int cur_insert(sim_queue_t *q, sim_event_t *ev)
{
    if (q->ncur == q->cur_cap && grow_events(&q->cur, &q->cur_cap))
        return -1;
    /* from the end (the next to run) down past the events that run before ev: a few at most,
     * moved one by one (a memmove call cost more than the moves) */
    uint32_t j = q->ncur;
    while (j > 0 && q->cur[j - 1]->priority <= ev->priority) {
        q->cur[j] = q->cur[j - 1];
        j--;
    }
    q->cur[j] = ev;
    q->ncur++;
    ev->heap_index = SIM_CUR_QUEUED;
    return 0;
}

void sim_cancel(sim_queue_t *q, sim_event_t *ev)
{
    uint32_t i = ev->heap_index;
    if (i == SIM_NOT_QUEUED)
        return;
    if (i == SIM_LAST_QUEUED) {
        ev->heap_index = SIM_NOT_QUEUED;
        q->last = NULL;
        return;
    }
    if (i == SIM_CUR_QUEUED) {
        cur_remove(q, ev);
        return;
    }
    ev->heap_index = SIM_NOT_QUEUED;
    q->n--;
    if (i == q->n)
        return;
    sim_event_t *moved = q->heap[q->n];
    place(q, i, moved);
    sift_up(q, i);
    sift_down(q, moved->heap_index);
}

void sim_schedule_last(sim_queue_t *q, sim_event_t *ev)
{
    if (ev->heap_index != SIM_NOT_QUEUED)
        return;
    ev->time = q->now;
    ev->heap_index = SIM_LAST_QUEUED;
    q->last = ev;
}


int sim_schedule(sim_queue_t *q, sim_event_t *ev, uint64_t time)
{
    uint64_t t = time < q->now ? q->now : time;
    if (ev->heap_index != SIM_NOT_QUEUED) {
        if (ev->heap_index < SIM_CUR_QUEUED && t > q->now) {
            /* from the heap to a later time in the heap: move it in place, cheaper than
             * removing and inserting again */
            int earlier = t < ev->time;
            ev->time = t;
            ev->seq = q->next_seq++;
            if (earlier)
                sift_up(q, ev->heap_index);
            else
                sift_down(q, ev->heap_index);
            return 0;
        }
        sim_cancel(q, ev);
    }
    if (t == q->now) {
        ev->time = t;
        ev->seq = q->next_seq++;
        return cur_insert(q, ev);
    }
    if (q->n == q->cap && grow_events(&q->heap, &q->cap))
        return -1;
    ev->time = t;
    ev->seq = q->next_seq++;
    q->heap[q->n] = ev;
    ev->heap_index = q->n;
    q->n++;
    sift_up(q, q->n - 1);
    return 0;
}

int sim_queue_step(sim_queue_t *q)
{
    if (q->ncur && !(q->n && q->heap[0]->time == q->now && before(q->heap[0], q->cur[q->ncur - 1]))) {
        sim_event_t *ev = q->cur[--q->ncur];
        ev->heap_index = SIM_NOT_QUEUED;
        q->processed++;
        ev->fn(q, ev);
        return 1;
    }
    if (q->last && (!q->n || q->heap[0]->time > q->last->time)) {
        /* nothing else is left at its instant */
        sim_event_t *ev = q->last;
        q->last = NULL;
        ev->heap_index = SIM_NOT_QUEUED;
        q->now = ev->time;
        q->processed++;
        ev->fn(q, ev);
        return 1;
    }
    if (!q->n)
        return 0;
    sim_event_t *ev = q->heap[0];
    q->n--;
    if (q->n) {
        place(q, 0, q->heap[q->n]);
        sift_down(q, 0);
    }
    ev->heap_index = SIM_NOT_QUEUED;
    q->now = ev->time;
    q->processed++;
    ev->fn(q, ev);
    return 1;
}
