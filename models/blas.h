/*
 * blas.h -- how many threads OpenBLAS may use for the functional model's matmuls.
 */
#ifndef NCSIM_MODELS_BLAS_H
#define NCSIM_MODELS_BLAS_H

/*
 * Apply the default thread count once per process: NCSIM_BLAS_THREADS if set (a positive
 * integer), else OPENBLAS_NUM_THREADS if set, else 1. Called by sim_create for functional
 * runs; later calls do nothing. Returns the count in effect.
 */
int mdl_blas_default_threads(void);

/* Set the count explicitly (n >= 1); the default is then no longer applied. Returns the
 * count in effect. */
int mdl_blas_set_threads(int n);

#endif
