/*
 * test_event.c -- sim/event.c: the order events run in (time, then priority, then the order
 * they were last scheduled), moves, cancels, and the end-of-instant event of
 * sim_schedule_last, against hand-written expectations and against a plain reference model
 * under random operations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "event.h"

/* ---- a log of what ran ------------------------------------------------------------------------ */

typedef struct logged {
    sim_event_t ev;
    int id;
} logged_t;

static int ran[64];
static uint64_t ran_at[64];
static int nran;

static void record(sim_queue_t *q, sim_event_t *ev)
{
    logged_t *l = ev->owner;
    ran[nran] = l->id;
    ran_at[nran++] = q->now;
}

static void run_all(sim_queue_t *q)
{
    while (sim_queue_step(q))
        ;
}

static void test_order(void **state)
{
    (void)state;
    sim_queue_t q;
    assert_int_equal(sim_queue_init(&q), 0);
    logged_t e[6];
    /* ids: 0 at t=5 prio 1; 1 at t=5 prio 0; 2 at t=3; 3 at t=5 prio 1 (after 0); 4 at t=9,
     * then moved to t=5 prio 1 (after 3); 5 at t=1, cancelled */
    uint32_t prio[6] = {1, 0, 0, 1, 1, 0};
    for (int i = 0; i < 6; i++) {
        e[i].id = i;
        sim_event_init(&e[i].ev, record, &e[i], prio[i]);
    }
    nran = 0;
    assert_int_equal(sim_schedule(&q, &e[0].ev, 5), 0);
    assert_int_equal(sim_schedule(&q, &e[4].ev, 9), 0);
    assert_int_equal(sim_schedule(&q, &e[1].ev, 5), 0);
    assert_int_equal(sim_schedule(&q, &e[2].ev, 3), 0);
    assert_int_equal(sim_schedule(&q, &e[3].ev, 5), 0);
    assert_int_equal(sim_schedule(&q, &e[5].ev, 1), 0);
    assert_int_equal(sim_schedule(&q, &e[4].ev, 5), 0); /* a move: scheduled last now */
    sim_cancel(&q, &e[5].ev);
    assert_false(sim_event_queued(&e[5].ev));
    assert_int_equal(sim_queue_next_time(&q), 3);
    run_all(&q);
    int want[5] = {2, 1, 0, 3, 4};
    assert_int_equal(nran, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ran[i], want[i]);
    assert_true(sim_queue_empty(&q));
    assert_int_equal(q.processed, 5);
    sim_queue_free(&q);
}

/* ---- the end-of-instant event ------------------------------------------------------------------ */

static logged_t late, early, spawned, next_instant, last_ev;

/* At t=10: schedules the end-of-instant event, and another event at t=10 */
static void spawn(sim_queue_t *q, sim_event_t *ev)
{
    record(q, ev);
    sim_schedule_last(q, &last_ev.ev);
    sim_schedule_last(q, &last_ev.ev); /* queued already: stays */
    assert_int_equal(sim_queue_next_time(q), 10);
    assert_false(sim_queue_empty(q));
    assert_int_equal(sim_schedule(q, &spawned.ev, 10), 0);
}

static void test_last(void **state)
{
    (void)state;
    sim_queue_t q;
    assert_int_equal(sim_queue_init(&q), 0);
    early.id = 1;
    late.id = 2;
    spawned.id = 3;
    last_ev.id = 4;
    next_instant.id = 5;
    sim_event_init(&early.ev, spawn, &early, 0);
    sim_event_init(&late.ev, record, &late, 30); /* a high priority at the same instant */
    sim_event_init(&spawned.ev, record, &spawned, 40);
    sim_event_init(&last_ev.ev, record, &last_ev, 0);
    sim_event_init(&next_instant.ev, record, &next_instant, 0);
    nran = 0;
    assert_int_equal(sim_schedule(&q, &next_instant.ev, 11), 0);
    assert_int_equal(sim_schedule(&q, &late.ev, 10), 0);
    assert_int_equal(sim_schedule(&q, &early.ev, 10), 0);
    run_all(&q);
    /* the end-of-instant event runs after everything at t=10, what was scheduled there while
     * it was pending included, and before t=11 */
    int want[5] = {1, 2, 3, 4, 5};
    uint64_t at[5] = {10, 10, 10, 10, 11};
    assert_int_equal(nran, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ran[i], want[i]);
        assert_int_equal(ran_at[i], at[i]);
    }
    assert_int_equal(q.processed, 5);

    /* cancelled, it does not run; scheduled normally, it leaves the end of the instant */
    nran = 0;
    q.now = 20;
    sim_schedule_last(&q, &last_ev.ev);
    assert_true(sim_event_queued(&last_ev.ev));
    sim_cancel(&q, &last_ev.ev);
    assert_true(sim_queue_empty(&q));
    sim_schedule_last(&q, &last_ev.ev);
    assert_int_equal(sim_schedule(&q, &last_ev.ev, 25), 0);
    assert_int_equal(sim_schedule(&q, &late.ev, 20), 0);
    run_all(&q);
    assert_int_equal(nran, 2);
    assert_int_equal(ran[0], 2);
    assert_int_equal(ran[1], 4);
    assert_int_equal(ran_at[1], 25);
    sim_queue_free(&q);
}

/* ---- random operations against a reference ------------------------------------------------------ */

enum { NEV = 40 };

typedef struct ref {
    int queued;
    uint64_t time, seq;
    uint32_t prio;
} ref_t;

static ref_t refs[NEV];
static uint64_t ref_seq;
static logged_t pool[NEV];
static int got_order;
static int bad;
static uint64_t rng = 12345;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The reference's next event: the smallest (time, priority, sequence). */
static int ref_next(void)
{
    int best = -1;
    for (int i = 0; i < NEV; i++) {
        const ref_t *r = &refs[i];
        if (!r->queued)
            continue;
        if (best < 0 || r->time < refs[best].time ||
            (r->time == refs[best].time &&
             (r->prio < refs[best].prio ||
              (r->prio == refs[best].prio && r->seq < refs[best].seq))))
            best = i;
    }
    return best;
}

static void both_schedule(sim_queue_t *q, int i, uint64_t t)
{
    if (t < q->now)
        t = q->now;
    refs[i].queued = 1;
    refs[i].time = t;
    refs[i].seq = ref_seq++;
    assert_int_equal(sim_schedule(q, &pool[i].ev, t), 0);
}

/* What the queue says comes next agrees with the reference (the running event is no longer
 * queued, though the heap may still hold it at its root while its handler runs). */
static void check_next(const sim_queue_t *q)
{
    int want = ref_next();
    uint64_t t = want < 0 ? UINT64_MAX : refs[want].time;
    if (sim_queue_next_time(q) != t || sim_queue_empty(q) != (want < 0))
        bad = 1;
}

/* Each event checks it is the one the reference expects, then schedules, moves or cancels a
 * few others at random (times now..now+3, so that many share an instant), and often itself:
 * later (it moves from the heap's root), now, or now and then later. */
static void random_step(sim_queue_t *q, sim_event_t *ev)
{
    logged_t *l = ev->owner;
    int want = ref_next();
    if (want != l->id || refs[want].time != q->now)
        bad = 1;
    refs[l->id].queued = 0;
    got_order++;
    if (got_order > 20000)
        return;
    check_next(q);
    if (next_rand() % 4 == 0) {
        sim_cancel(q, ev); /* not queued: nothing to do */
        check_next(q);
    }
    int k = (int)(next_rand() % 4);
    for (int j = 0; j < k; j++) {
        int i = (int)(next_rand() % NEV);
        if (next_rand() % 8 == 0) {
            refs[i].queued = 0;
            sim_cancel(q, &pool[i].ev);
        } else {
            both_schedule(q, i, q->now + next_rand() % 4);
        }
        check_next(q);
    }
    switch (next_rand() % 5) {
    case 0:
    case 1:
        both_schedule(q, l->id, q->now + 1 + next_rand() % 3);
        break;
    case 2:
        both_schedule(q, l->id, q->now);
        break;
    case 3:
        both_schedule(q, l->id, q->now);
        both_schedule(q, l->id, q->now + 1 + next_rand() % 3);
        break;
    default:
        break;
    }
    check_next(q);
}

static void test_random_against_reference(void **state)
{
    (void)state;
    sim_queue_t q;
    assert_int_equal(sim_queue_init(&q), 0);
    memset(refs, 0, sizeof refs);
    for (int i = 0; i < NEV; i++) {
        pool[i].id = i;
        refs[i].prio = (uint32_t)(next_rand() % 3);
        sim_event_init(&pool[i].ev, random_step, &pool[i], refs[i].prio);
    }
    for (int i = 0; i < NEV; i++)
        both_schedule(&q, i, next_rand() % 8);
    got_order = 0;
    bad = 0;
    run_all(&q);
    assert_false(bad);
    assert_true(got_order > 20000);
    assert_int_equal(ref_next(), -1);
    sim_queue_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_last),
        cmocka_unit_test(test_random_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
