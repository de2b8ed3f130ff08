/*
 * pool.h -- tasks run in forked worker processes, handed out one at a time: the workers of
 * sweeps (explore/sweep.c) and of validation (explore/validate.c).
 *
 * The parent forks `jobs` copies of itself, so what it has loaded (programs, inputs,
 * manifests) is shared and nothing is loaded twice. Each idle worker is sent the next task;
 * a task's result (a fixed-size record) comes back on a pipe shared by all workers, so a
 * worker that finishes early takes more tasks than one on a slow task. A worker that dies
 * (a crash, the OOM killer) takes its task with it: the parent is told which, and the other
 * workers go on with the rest.
 */
#ifndef NCSIM_EXPLORE_POOL_H
#define NCSIM_EXPLORE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "ncsim.h"

/* A result record is at most this size: with its header it fits one atomic pipe write
 * (PIPE_BUF, 4096 bytes on Linux), so records of different workers never interleave. */
#define SIM_POOL_MAX_RESULT 3072u

typedef struct sim_pool {
    unsigned jobs;      /* worker processes (at most the number of tasks are started) */
    uint64_t ntasks;    /* tasks 0 .. ntasks-1 */
    size_t result_size; /* bytes of one task's result, 1 .. SIM_POOL_MAX_RESULT */
    void *ctx;
    /* In a worker: run task `task` and fill `result` (result_size bytes, zeroed). */
    void (*run)(void *ctx, uint64_t task, void *result);
    /* In the parent, as results arrive (in no particular order): nonzero to hand out no
     * more tasks (the ones running finish). */
    int (*done)(void *ctx, uint64_t task, const void *result);
    /* In the parent: task `task` was running in a worker that died or exited without
     * reporting it; wstatus as waitpid gives it. May be NULL. */
    void (*lost)(void *ctx, uint64_t task, int wstatus);
} sim_pool_t;

/* Run the tasks. NCSIM_OK when every task was handed out or `done` asked to stop (lost
 * tasks included: `lost` said which); NCSIM_IO with a message when no worker could be
 * started, or the workers stopped before every task was handed out; NCSIM_NOMEM. When some
 * workers could not be forked, the ones that were run all the tasks. `next_task`, if not
 * NULL, receives the first task never handed out (ntasks when all were). */
ncsim_status_t sim_pool_run(const sim_pool_t *p, uint64_t *next_task, char *err, size_t errlen);

/* Write all len bytes (retrying on EINTR and short writes): 0, or -1 on error. */
int sim_fd_write_all(int fd, const void *buf, size_t len);
/* Read exactly len bytes: 1 when read, 0 at end of file before any byte, -1 on error or a
 * short read (the writer died mid-message). */
int sim_fd_read_all(int fd, void *buf, size_t len);

#endif
