/*
 * pool.c -- forked workers fed one task at a time (pool.h).
 */
#include "pool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

int sim_fd_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sim_fd_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return got ? -1 : 0;
        got += (size_t)n;
    }
    return 1;
}

/* What a worker sends back for each task: this header, then result_size bytes. */
typedef struct record_head {
    uint64_t task;
    uint32_t worker;
    uint32_t pad;
} record_head_t;

/*
 * A worker: run the tasks the parent sends until it closes the pipe. It ends with _exit() so
 * that the parent's stdio buffers and atexit handlers are not run twice.
 */
static void worker_main(const sim_pool_t *p, uint32_t id, int task_fd, int result_fd)
{
    unsigned char rec[sizeof(record_head_t) + SIM_POOL_MAX_RESULT];
    size_t len = sizeof(record_head_t) + p->result_size;
    for (;;) {
        uint64_t task;
        if (sim_fd_read_all(task_fd, &task, sizeof task) <= 0)
            break;
        memset(rec, 0, len);
        record_head_t h = {task, id, 0};
        memcpy(rec, &h, sizeof h);
        p->run(p->ctx, task, rec + sizeof h);
        fflush(stdout);
        fflush(stderr);
        if (sim_fd_write_all(result_fd, rec, len)) /* one write of at most PIPE_BUF: atomic */
            break;
    }
    fflush(stdout);
    fflush(stderr);
    _exit(0);
}

ncsim_status_t sim_pool_run(const sim_pool_t *p, uint64_t *next_task, char *err, size_t errlen)
{
    if (next_task)
        *next_task = 0;
    if (!p->ntasks)
        return NCSIM_OK;
    if (!p->result_size || p->result_size > SIM_POOL_MAX_RESULT) {
        xp_errf(err, errlen, "worker results of %zu bytes (1 to %u)", p->result_size,
                 SIM_POOL_MAX_RESULT);
        return NCSIM_INTERNAL;
    }
    unsigned jobs = p->jobs ? p->jobs : 1;
    if (jobs > p->ntasks)
        jobs = (unsigned)p->ntasks;
    int(*task)[2] = calloc(jobs, sizeof *task);
    pid_t *pids = calloc(jobs, sizeof *pids);
    uint64_t *inflight = calloc(jobs, sizeof *inflight);
    uint8_t *busy = calloc(jobs, 1);
    unsigned char *rec = malloc(sizeof(record_head_t) + p->result_size);
    ncsim_status_t st = NCSIM_OK;
    int result_pipe[2] = {-1, -1};
    unsigned started = 0;
    if (!task || !pids || !inflight || !busy || !rec) {
        xp_errf(err, errlen, "out of memory starting %u workers", jobs);
        st = NCSIM_NOMEM;
        goto out;
    }
    for (unsigned w = 0; w < jobs; w++)
        task[w][0] = task[w][1] = -1;
    if (pipe(result_pipe)) {
        xp_errf(err, errlen, "pipe: %s", strerror(errno));
        st = NCSIM_IO;
        goto out;
    }
    /* a worker that dies closes its pipe: writing to it must fail, not kill the parent */
    struct sigaction ign, old_pipe;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);
    fflush(stdout);
    fflush(stderr);
    char why[256] = "";
    for (; started < jobs; started++) {
        if (pipe(task[started])) {
            snprintf(why, sizeof why, "pipe: %s", strerror(errno));
            break;
        }
        pid_t pid = fork();
        if (pid < 0) {
            snprintf(why, sizeof why, "fork: %s", strerror(errno));
            close(task[started][0]);
            close(task[started][1]);
            task[started][0] = task[started][1] = -1;
            break;
        }
        if (pid == 0) {
            /* keep only this worker's task reader and the shared result writer */
            close(result_pipe[0]);
            for (unsigned w = 0; w <= started; w++) {
                close(task[w][1]);
                if (w != started)
                    close(task[w][0]);
            }
            sigaction(SIGPIPE, &old_pipe, NULL);
            worker_main(p, started, task[started][0], result_pipe[1]);
        }
        pids[started] = pid;
        close(task[started][0]);
        task[started][0] = -1;
    }
    close(result_pipe[1]);
    result_pipe[1] = -1;
    if (!started) {
        /* (workers that could not be started: the others do their share) */
        xp_errf(err, errlen, "cannot start a worker process: %s", why);
        st = NCSIM_IO;
        sigaction(SIGPIPE, &old_pipe, NULL);
        goto out;
    }
    /* hand out tasks one at a time; a worker gets the next when it reports */
    uint64_t next = 0;
    int stop = 0;
    for (unsigned w = 0; w < started; w++) {
        if (next < p->ntasks && sim_fd_write_all(task[w][1], &next, sizeof next) == 0) {
            inflight[w] = next++;
            busy[w] = 1;
        } else {
            close(task[w][1]);
            task[w][1] = -1;
        }
    }
    size_t len = sizeof(record_head_t) + p->result_size;
    while (sim_fd_read_all(result_pipe[0], rec, len) == 1) {
        record_head_t h;
        memcpy(&h, rec, sizeof h);
        if (h.worker >= started || !busy[h.worker] || inflight[h.worker] != h.task)
            continue; /* cannot happen: records are written whole by one worker */
        unsigned w = h.worker;
        busy[w] = 0;
        if (p->done && p->done(p->ctx, h.task, rec + sizeof h))
            stop = 1;
        if (task[w][1] < 0)
            continue;
        if (!stop && next < p->ntasks && sim_fd_write_all(task[w][1], &next, sizeof next) == 0) {
            inflight[w] = next++;
            busy[w] = 1;
        } else {
            close(task[w][1]);
            task[w][1] = -1;
        }
    }
    /* every worker has exited (or the pipe failed): close what is left, reap, and report
     * the tasks that died with their worker */
    for (unsigned w = 0; w < started; w++)
        if (task[w][1] >= 0) {
            close(task[w][1]);
            task[w][1] = -1;
        }
    for (unsigned w = 0; w < started; w++) {
        int wstatus = 0;
        while (waitpid(pids[w], &wstatus, 0) < 0 && errno == EINTR)
            ;
        if (busy[w] && p->lost)
            p->lost(p->ctx, inflight[w], wstatus);
    }
    sigaction(SIGPIPE, &old_pipe, NULL);
    if (!stop && next < p->ntasks) {
        xp_errf(err, errlen, "the workers stopped before task %llu of %llu",
                 (unsigned long long)next, (unsigned long long)p->ntasks);
        st = NCSIM_IO;
    }
    if (next_task)
        *next_task = next;
out:
    if (task)
        for (unsigned w = 0; w < jobs; w++) {
            if (task[w][0] >= 0)
                close(task[w][0]);
            if (task[w][1] >= 0)
                close(task[w][1]);
        }
    if (result_pipe[0] >= 0)
        close(result_pipe[0]);
    if (result_pipe[1] >= 0)
        close(result_pipe[1]);
    free(task);
    free(pids);
    free(inflight);
    free(busy);
    free(rec);
    return st;
}
