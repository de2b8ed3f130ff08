/*
 * test_pool.c -- explore/pool.h: tasks in forked workers, results by task, workers that die.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pool.h"

#define NT 40

typedef struct result {
    uint64_t square;
    int32_t pid;
    int32_t pad;
} result_t;

typedef struct ctx {
    int done_count[NT];
    uint64_t square[NT];
    int pids[NT];
    int lost_count[NT];
    int lost_status[NT];
    uint64_t kill_task;  /* this task raises SIGKILL in its worker (NT: none) */
    uint64_t exit_task;  /* this task _exits(3) (NT: none) */
    uint64_t crash_from; /* every task from here on kills its worker (NT: none) */
    int stop_after;      /* done returns 1 after this many results (0: never) */
    int ndone;
} ctx_t;

static void run(void *vc, uint64_t task, void *result)
{
    const ctx_t *c = vc;
    if (task == c->kill_task || task >= c->crash_from)
        raise(SIGKILL);
    if (task == c->exit_task)
        _exit(3);
    result_t r = {task * task, (int32_t)getpid(), 0};
    memcpy(result, &r, sizeof r);
}

static int done(void *vc, uint64_t task, const void *result)
{
    ctx_t *c = vc;
    result_t r;
    memcpy(&r, result, sizeof r);
    c->done_count[task]++;
    c->square[task] = r.square;
    c->pids[task] = r.pid;
    c->ndone++;
    return c->stop_after && c->ndone >= c->stop_after;
}

static void lost(void *vc, uint64_t task, int wstatus)
{
    ctx_t *c = vc;
    c->lost_count[task]++;
    c->lost_status[task] = wstatus;
}

static void ctx_init(ctx_t *c)
{
    memset(c, 0, sizeof *c);
    c->kill_task = c->exit_task = c->crash_from = NT;
}

static sim_pool_t pool_of(ctx_t *c, unsigned jobs, uint64_t ntasks)
{
    sim_pool_t p = {jobs, ntasks, sizeof(result_t), c, run, done, lost};
    return p;
}

static void test_every_task_once_in_workers(void **state)
{
    (void)state;
    ctx_t c;
    ctx_init(&c);
    sim_pool_t p = pool_of(&c, 3, NT);
    uint64_t next = 99;
    char err[256] = "";
    assert_int_equal(sim_pool_run(&p, &next, err, sizeof err), NCSIM_OK);
    assert_int_equal(next, NT);
    for (int t = 0; t < NT; t++) {
        assert_int_equal(c.done_count[t], 1);
        assert_int_equal(c.square[t], (uint64_t)t * (uint64_t)t);
        assert_int_not_equal(c.pids[t], getpid()); /* in a worker, not here */
        assert_int_equal(c.lost_count[t], 0);
    }
    /* more workers than tasks: only as many start as there are tasks */
    ctx_init(&c);
    p = pool_of(&c, 8, 2);
    assert_int_equal(sim_pool_run(&p, &next, err, sizeof err), NCSIM_OK);
    assert_int_equal(next, 2);
    assert_int_equal(c.ndone, 2);
    /* no tasks: nothing to do */
    p = pool_of(&c, 2, 0);
    assert_int_equal(sim_pool_run(&p, &next, err, sizeof err), NCSIM_OK);
    assert_int_equal(next, 0);
}

/* A worker killed by a signal, or one that exits, loses its task; the others do the rest. */
static void test_a_dead_worker_loses_only_its_task(void **state)
{
    (void)state;
    ctx_t c;
    ctx_init(&c);
    c.kill_task = 5;
    c.exit_task = 11;
    sim_pool_t p = pool_of(&c, 3, NT);
    uint64_t next = 0;
    char err[256] = "";
    assert_int_equal(sim_pool_run(&p, &next, err, sizeof err), NCSIM_OK);
    assert_int_equal(next, NT);
    for (int t = 0; t < NT; t++) {
        int gone = t == 5 || t == 11;
        assert_int_equal(c.done_count[t], !gone);
        assert_int_equal(c.lost_count[t], gone);
    }
    assert_true(WIFSIGNALED(c.lost_status[5]));
    assert_int_equal(WTERMSIG(c.lost_status[5]), SIGKILL);
    assert_true(WIFEXITED(c.lost_status[11]));
    assert_int_equal(WEXITSTATUS(c.lost_status[11]), 3);
}

/* When every worker has died, the tasks never handed out are said. */
static void test_all_workers_dead(void **state)
{
    (void)state;
    ctx_t c;
    ctx_init(&c);
    c.crash_from = 10;
    sim_pool_t p = pool_of(&c, 2, NT);
    uint64_t next = 0;
    char err[256] = "";
    assert_int_equal(sim_pool_run(&p, &next, err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, "the workers stopped before task 12 of 40"));
    assert_int_equal(next, 12);
    for (int t = 0; t < 10; t++)
        assert_int_equal(c.done_count[t], 1);
    assert_int_equal(c.lost_count[10] + c.lost_count[11], 2);
}

/* `done` asking to stop: no more tasks go out, the running ones finish. */
static void test_stop_hands_out_no_more(void **state)
{
    (void)state;
    ctx_t c;
    ctx_init(&c);
    c.stop_after = 4;
    sim_pool_t p = pool_of(&c, 2, NT);
    uint64_t next = 0;
    char err[256] = "";
    assert_int_equal(sim_pool_run(&p, &next, err, sizeof err), NCSIM_OK);
    /* 4 results asked to stop; at most one more task was running then */
    assert_true(c.ndone >= 4 && c.ndone <= 5);
    assert_int_equal(next, (uint64_t)c.ndone);
    for (int t = 0; t < NT; t++)
        assert_int_equal(c.done_count[t], t < c.ndone);
}

static void test_bad_result_size(void **state)
{
    (void)state;
    ctx_t c;
    ctx_init(&c);
    sim_pool_t p = pool_of(&c, 2, NT);
    p.result_size = SIM_POOL_MAX_RESULT + 1;
    char err[256] = "";
    assert_int_equal(sim_pool_run(&p, NULL, err, sizeof err), NCSIM_INTERNAL);
    assert_non_null(strstr(err, "worker results"));
    assert_int_equal(c.ndone, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_task_once_in_workers),
        cmocka_unit_test(test_a_dead_worker_loses_only_its_task),
        cmocka_unit_test(test_all_workers_dead),
        cmocka_unit_test(test_stop_hands_out_no_more),
        cmocka_unit_test(test_bad_result_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
