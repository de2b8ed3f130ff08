/*
 * drive.c -- the one run driver: a run in slices of simulated time, so that a progress
 * report, a signal or another thread can act between two slices. `ncsim run` and the public
 * API (api/sim.c) both drive their runs with it.
 */
#include <time.h>

#include "sim.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ncsim_status_t sim_drive(sim_t *s, uint64_t target_ps, sim_drive_t *d, int *stopped)
{
    *stopped = 0;
    if (!d->slice_ps)
        d->slice_ps = 1000000; /* 1 us of simulated time at first, adapted below */
    double t0 = now_seconds(), last = t0;
    /* slices are counted from where the last one ended, not from the simulated time, which
     * does not move while the next event lies beyond a slice */
    uint64_t cursor = sim_now_ps(s);
    ncsim_status_t st = NCSIM_OK;
    while (!sim_finished(s) && cursor < target_ps) {
        if (d->stop && __atomic_load_n(d->stop, __ATOMIC_RELAXED)) {
            *stopped = 1;
            break;
        }
        uint64_t limit = target_ps - cursor > d->slice_ps ? cursor + d->slice_ps : target_ps;
        double before = now_seconds();
        st = sim_run(s, SIM_RUN_UNTIL_TIME, limit);
        cursor = limit;
        if (st != NCSIM_OK)
            break;
        double after = now_seconds();
        /* aim for slices of ~20 ms of host time */
        if (after - before < 0.01 && d->slice_ps < (UINT64_MAX >> 2))
            d->slice_ps *= 2;
        else if (after - before > 0.05 && d->slice_ps > 1000)
            d->slice_ps /= 2;
        if (d->progress && after - last >= d->interval && !sim_finished(s)) {
            last = after;
            if (d->progress(d->ctx, s, after - t0)) {
                *stopped = 1;
                break;
            }
        }
    }
    d->host_seconds += now_seconds() - t0;
    return st;
}
