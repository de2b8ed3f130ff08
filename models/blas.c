/*
 * blas.c -- the one place that decides OpenBLAS's threading.
 *
 * The functional model runs one small sgemm per matmul instruction (K and M at most 128, N
 * at most 512): far too little work to share between threads. With OpenBLAS's default (one
 * thread per core) the idle worker spun between calls, 6% of the samples of a functional
 * GEMM, and competed with the simulation thread and with the other points of a sweep. So a
 * run uses one thread unless asked otherwise (docs/api.md, "Threads").
 */
#include "blas.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int explicit_set;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int env_count(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v >= 1 && v <= 1024 ? (int)v : 0;
}

static void apply_default(void)
{
    pthread_mutex_lock(&lock);
    if (!explicit_set) {
        int n = env_count("NCSIM_BLAS_THREADS");
        if (!n)
            n = env_count("OPENBLAS_NUM_THREADS");
        openblas_set_num_threads(n ? n : 1);
    }
    pthread_mutex_unlock(&lock);
}

int mdl_blas_default_threads(void)
{
    pthread_once(&once, apply_default);
    return openblas_get_num_threads();
}

int mdl_blas_set_threads(int n)
{
    if (n >= 1) {
        pthread_mutex_lock(&lock);
        explicit_set = 1;
        openblas_set_num_threads(n);
        pthread_mutex_unlock(&lock);
    }
    return openblas_get_num_threads();
}
