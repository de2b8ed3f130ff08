/*
 * bench_api.c -- the cost of one call of a small kernel through the public API (libncsim.so),
 * the C side of tests/bench/bench_python.py, which runs this program and compares.
 *
 *   bench_api KERNEL.nca [CALLS [ROUNDS]]      (default 1000 calls, 3 rounds)
 *
 * The kernel is assembled once. Each call creates a simulator, binds every input from memory
 * (float32 values), runs to the end, reads every output and frees the simulator: what a test
 * harness does per test case. Prints the best round as "c_us_per_call <value>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncsim.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_api KERNEL.nca [CALLS [ROUNDS]]\n");
        return 2;
    }
    long calls = argc > 2 ? atol(argv[2]) : 1000;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    ncsim_program_t *prog;
    if (ncsim_program_load_file(argv[1], NULL, &prog) != NCSIM_OK) {
        fprintf(stderr, "%s\n", ncsim_last_error());
        return 1;
    }
    uint32_t nt = ncsim_program_tensor_count(prog);
    ncsim_tensor_info_t *info = calloc(nt, sizeof *info);
    float **data = calloc(nt, sizeof *data);
    for (uint32_t t = 0; t < nt; t++) {
        ncsim_program_tensor(prog, t, &info[t]);
        data[t] = malloc(info[t].elements * sizeof(float));
        for (uint64_t i = 0; i < info[t].elements; i++)
            data[t][i] = (float)(i % 7) * 0.25f;
    }
    double best = 1e30;
    long instructions = 0;
    for (int round = 0; round < rounds; round++) {
        double t0 = now_s();
        for (long c = 0; c < calls; c++) {
            ncsim_sim_t *sim;
            if (ncsim_sim_create(prog, NULL, NULL, &sim) != NCSIM_OK) {
                fprintf(stderr, "%s\n", ncsim_last_error());
                return 1;
            }
            for (uint32_t t = 0; t < nt; t++)
                if (info[t].memory == NCSIM_HBM && info[t].role == NCSIM_INPUT &&
                    ncsim_sim_write_tensor(sim, t, -1, NCSIM_HOST_F32, data[t], info[t].ndim,
                                           info[t].shape, NULL) != NCSIM_OK) {
                    fprintf(stderr, "%s\n", ncsim_last_error());
                    return 1;
                }
            if (ncsim_sim_run(sim) != NCSIM_OK) {
                fprintf(stderr, "%s\n", ncsim_last_error());
                return 1;
            }
            for (uint32_t t = 0; t < nt; t++)
                if (info[t].memory == NCSIM_HBM && info[t].role == NCSIM_OUTPUT)
                    ncsim_sim_read_tensor(sim, t, -1, NCSIM_HOST_F32, data[t],
                                          info[t].elements * sizeof(float));
            ncsim_summary_t s;
            ncsim_sim_summary(sim, &s);
            instructions = (long)s.instructions;
            ncsim_sim_free(sim);
        }
        double us = (now_s() - t0) / (double)calls * 1e6;
        if (us < best)
            best = us;
    }
    printf("instructions %ld\nc_us_per_call %.2f\n", instructions, best);
    for (uint32_t t = 0; t < nt; t++)
        free(data[t]);
    free(data);
    free(info);
    ncsim_program_free(prog);
    return 0;
}
