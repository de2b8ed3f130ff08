/*
 * rng.h -- the seeded generator behind stochastic rounding, dropout and --random-inputs.
 * xoshiro256** seeded through splitmix64: fast, and the same sequence on every host.
 */
#ifndef NCSIM_MODELS_RNG_H
#define NCSIM_MODELS_RNG_H

#include <stdint.h>

typedef struct mdl_rng {
    uint64_t s[4];
} mdl_rng_t;

/* Seed from a 64-bit seed and a stream id (e.g. core * 8 + engine), so every engine has its
 * own reproducible sequence whatever the order other engines run in. */
void mdl_rng_seed(mdl_rng_t *r, uint64_t seed, uint64_t stream);
uint64_t mdl_rng_next(mdl_rng_t *r);
/* Uniform in [0, 1) with 24 random bits. */
float mdl_rng_float(mdl_rng_t *r);
/* Uniform in [0, 2^32). */
uint32_t mdl_rng_u32(mdl_rng_t *r);

#endif
