/*
 * cancel_race.c -- ncsim_sim_cancel from another thread while runs start, stop and resume
 * (issue 28): the cancel flag is written by that thread and consumed by the running one, so
 * both sides must be atomic. Built against libncsim.so as a client; ctest runs it as a stress
 * test (functional runs of about half a second; every run ends, cancelled or finished, and the simulated end time is the same as an
 * uncancelled run's). Under ThreadSanitizer (cmake -DCMAKE_C_FLAGS=-fsanitize=thread) a plain
 * store on either side is reported as a data race.
 */
#define _POSIX_C_SOURCE 200809L
#include <ncsim.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char program[] =
    ".hbm x fp32 [128, 512] input\n"
    ".core 0\n"
    ".sbuf w fp32 [128, 128]\n"
    ".sbuf a fp32 [128, 512]\n"
    ".psum acc fp32 [128, 512]\n"
    ".sem loaded\n"
    ".engine sp\n"
    "dma a, x | post loaded\n"
    ".engine pe\n"
    "nop | wait loaded >= 1\n"
    ".loop i = 0, 1500\n"
    "matmul acc, w, a\n"
    ".endloop\n";

static atomic_int done;
static atomic_uint seen; /* cancellations the running thread has returned from */

/* Cancel, wait until the run has returned CANCELLED (or ended), let it go on for a moment,
 * cancel again. (A cancel that lands just as the last one is consumed is simply lost.) */
static void *canceller(void *arg)
{
    ncsim_sim_t *sim = arg;
    while (!atomic_load(&done)) {
        unsigned before = atomic_load(&seen);
        ncsim_sim_cancel(sim);
        struct timespec pause = {0, 100000};
        while (!atomic_load(&done) && atomic_load(&seen) == before)
            nanosleep(&pause, NULL);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static double end_time(const ncsim_program_t *prog, int with_canceller, unsigned *cancels)
{
    ncsim_options_t opt;
    ncsim_options_init(&opt);
    ncsim_sim_t *sim = NULL;
    if (ncsim_sim_create(prog, NULL, &opt, &sim) != NCSIM_OK)
        return -1;
    if (ncsim_sim_random_inputs(sim, 1) != NCSIM_OK) {
        ncsim_sim_free(sim);
        return -1;
    }
    pthread_t t;
    atomic_store(&done, 0);
    if (with_canceller && pthread_create(&t, NULL, canceller, sim) != 0)
        return -1;
    ncsim_status_t st;
    *cancels = 0;
    /* each call goes on from where the last one was cancelled */
    while ((st = ncsim_sim_run(sim)) == NCSIM_CANCELLED) {
        ++*cancels;
        atomic_fetch_add(&seen, 1u);
    }
    atomic_store(&done, 1);
    if (with_canceller)
        pthread_join(t, NULL);
    double ns = st == NCSIM_OK ? ncsim_sim_now_ns(sim) : -1;
    ncsim_sim_free(sim);
    return ns;
}

int main(void)
{
    ncsim_program_t *prog = NULL;
    if (ncsim_assemble(program, strlen(program), "cancel_race.nca", NULL, &prog) != NCSIM_OK) {
        fprintf(stderr, "cancel_race: assembly failed\n");
        return 1;
    }
    unsigned none = 0, cancels = 0;
    double want = end_time(prog, 0, &none);
    int rc = 0;
    for (int round = 0; round < 5 && !rc; round++) {
        double got = end_time(prog, 1, &cancels);
        if (got != want || none || !cancels) {
            fprintf(stderr, "cancel_race: round %d: end %.3f ns after %u cancellations, "
                            "uncancelled %.3f ns\n", round, got, cancels, want);
            rc = 1;
        }
    }
    printf("cancel_race: %u cancellations in the last round, end %.3f ns as uncancelled\n",
           cancels, want);
    ncsim_program_free(prog);
    return rc;
}
