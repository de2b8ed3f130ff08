/*
 * blas.h -- OpenBLAS for the functional model's matmuls: opened on demand, with a
 * deliberate thread count (models/blas.c says why).
 */
#ifndef NCSIM_MODELS_BLAS_H
#define NCSIM_MODELS_BLAS_H

#include <cblas.h>

/* cblas_sgemm's signature (OpenBLAS's cblas.h). */
typedef void (*mdl_sgemm_fn)(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transa,
                             enum CBLAS_TRANSPOSE transb, blasint m, blasint n, blasint k,
                             float alpha, const float *a, blasint lda, const float *b,
                             blasint ldb, float beta, float *c, blasint ldc);

/*
 * OpenBLAS's cblas_sgemm, loading the library on the first call with the thread count fixed
 * first: NCSIM_BLAS_THREADS if set (a positive integer), else OPENBLAS_NUM_THREADS if set,
 * else 1. NULL if the library cannot be loaded, with *why (if why is not NULL) set to a
 * message that stays valid. Thread-safe.
 */
mdl_sgemm_fn mdl_blas_sgemm(const char **why);

/* Load OpenBLAS as above and return the thread count in effect (0 if it cannot be loaded). */
int mdl_blas_default_threads(void);

/* Set the count explicitly (n >= 1), loading the library if needed. Returns the count in
 * effect, 0 if the library cannot be loaded. */
int mdl_blas_set_threads(int n);

#endif
