/*
 * blas.c -- the one place that loads OpenBLAS and decides its threading.
 *
 * The functional model runs one small sgemm per matmul instruction (K and M at most 128, N
 * at most 512): far too little work to share between threads. OpenBLAS starts its worker
 * threads in its library constructor, from OPENBLAS_NUM_THREADS or the core count, and an
 * idle worker spins on sched_yield for a while after start and after every call: linked
 * normally, it took a fifth of the CPU of a short timing-only run that never multiplies, and
 * 6% of a functional GEMM, competing with the simulation thread and with the other points
 * of a sweep. The constructor runs before any code of ours could change that.
 *
 * So OpenBLAS is opened on demand, by the first functional run (sim_create), after the
 * thread count is fixed: NCSIM_BLAS_THREADS, else OPENBLAS_NUM_THREADS, else 1 (set in the
 * environment for OpenBLAS's constructor when the user has not set it). Timing-only runs
 * never load it. NCSIM_BLAS_LIBRARY may name another OpenBLAS-compatible library (a path or
 * a SONAME). docs/api.md ("Threads") documents this.
 */
#define _POSIX_C_SOURCE 200809L
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*set_threads_fn)(int);
typedef int (*get_threads_fn)(void);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int requested;    /* mdl_blas_set_threads before loading; 0 = the default */
static int loaded_ok;    /* written once under `once` */
static char load_error[512];
static mdl_sgemm_fn sgemm_ptr;
static set_threads_fn set_threads_ptr;
static get_threads_fn get_threads_ptr;

/* The library names tried, in order: the SONAME Debian's libopenblas0 packages install
 * (pthread, openmp or serial variant, chosen by update-alternatives), then the unversioned
 * development link. */
static const char *const library_names[] = {"libopenblas.so.0", "libopenblas.so"};

static int env_count(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v >= 1 && v <= 1024 ? (int)v : 0;
}

static void load(void)
{
    pthread_mutex_lock(&lock);
    int n = requested;
    if (!n)
        n = env_count("NCSIM_BLAS_THREADS");
    if (!n)
        n = env_count("OPENBLAS_NUM_THREADS");
    if (!n)
        n = 1;
    /* OpenBLAS's constructor reads this; leave a user's own setting alone */
    if (!getenv("OPENBLAS_NUM_THREADS")) {
        char v[16];
        snprintf(v, sizeof v, "%d", n);
        setenv("OPENBLAS_NUM_THREADS", v, 0);
    }
    void *h = NULL;
    const char *why = "not found";
    /* NCSIM_BLAS_LIBRARY names another build (a path or a SONAME), e.g. a serial variant */
    const char *own = getenv("NCSIM_BLAS_LIBRARY");
    if (own && *own) {
        h = dlopen(own, RTLD_NOW | RTLD_LOCAL);
        const char *e = h ? NULL : dlerror();
        if (e)
            why = e;
    } else {
        for (size_t i = 0; i < sizeof library_names / sizeof *library_names && !h; i++) {
            h = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
            const char *e = h ? NULL : dlerror();
            if (i == 0 && e)
                why = e;
        }
    }
    if (!h) {
        snprintf(load_error, sizeof load_error,
                 "cannot load OpenBLAS for the functional matmuls (%s); install libopenblas0 "
                 "or run with --timing-only",
                 why);
    } else {
        /* POSIX allows converting dlsym's object pointer to a function pointer; ISO C
         * does not, hence the copy through memcpy */
        void *f = dlsym(h, "cblas_sgemm"), *s = dlsym(h, "openblas_set_num_threads"),
             *g = dlsym(h, "openblas_get_num_threads");
        if (!f) {
            snprintf(load_error, sizeof load_error,
                     "the OpenBLAS library loaded has no cblas_sgemm");
        } else {
            memcpy(&sgemm_ptr, &f, sizeof f);
            if (s)
                memcpy(&set_threads_ptr, &s, sizeof s);
            if (g)
                memcpy(&get_threads_ptr, &g, sizeof g);
            if (set_threads_ptr)
                set_threads_ptr(n);
            loaded_ok = 1;
        }
    }
    pthread_mutex_unlock(&lock);
}

mdl_sgemm_fn mdl_blas_sgemm(const char **why)
{
    pthread_once(&once, load);
    if (!loaded_ok && why)
        *why = load_error;
    return loaded_ok ? sgemm_ptr : NULL;
}

int mdl_blas_default_threads(void)
{
    if (!mdl_blas_sgemm(NULL))
        return 0;
    return get_threads_ptr ? get_threads_ptr() : 1;
}

int mdl_blas_set_threads(int n)
{
    if (n < 1)
        return mdl_blas_default_threads();
    pthread_mutex_lock(&lock);
    requested = n;
    pthread_mutex_unlock(&lock);
    pthread_once(&once, load);
    if (!loaded_ok)
        return 0;
    pthread_mutex_lock(&lock);
    if (set_threads_ptr)
        set_threads_ptr(n);
    pthread_mutex_unlock(&lock);
    return get_threads_ptr ? get_threads_ptr() : 1;
}
