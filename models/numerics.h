/*
 * numerics.h -- the data types of ISA.md section 3: exact conversions between fp32 (the
 * engines' working type) and every storage type, with round-to-nearest-even, seeded
 * stochastic rounding, and saturation.
 *
 * Rules (ISA.md 3):
 *  - float -> float (fp16, bf16, tf32, fp8*): round to nearest even (or stochastic);
 *    gradual underflow (denormals kept); NaN stays NaN; +-Inf stays Inf.
 *    fp16/bf16/tf32 overflow to +-Inf as IEEE does. fp8 types saturate to their largest
 *    finite value unless the input is Inf/NaN.
 *  - fp8e4: E4M3 with IEEE-style Inf/NaN (exponent field 15 reserved), bias 7, max 240.
 *    fp8e5: E5M2 IEEE-style, bias 15, max 57344. fp8e3: E3M4 IEEE-style, bias 3, max 15.5.
 *  - tf32: 1-8-10, stored as 4 bytes (an fp32 whose 13 low mantissa bits are zero).
 *  - float -> integer: round to nearest even, saturate to the type's range, NaN -> 0.
 *  - integer -> float: exact to fp32 where representable, otherwise RNE to fp32.
 */
#ifndef NCSIM_MODELS_NUMERICS_H
#define NCSIM_MODELS_NUMERICS_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "rng.h"

typedef enum mdl_rounding {
    MDL_ROUND_NEAREST_EVEN,
    MDL_ROUND_STOCHASTIC
} mdl_rounding_t;

/* Read one element of type t stored (little-endian) at p, widened exactly to fp32
 * (integers beyond 2^24 round to nearest even in fp32). */
float mdl_load_f32(isa_dtype_t t, const void *p);
/* Convert x to type t and store it at p. rng is used only for MDL_ROUND_STOCHASTIC
 * (and may be NULL otherwise). */
void mdl_store_f32(isa_dtype_t t, void *p, float x, mdl_rounding_t mode, mdl_rng_t *rng);
/* The fp32 value x becomes when stored in t and read back (round trip). */
float mdl_round_f32(isa_dtype_t t, float x, mdl_rounding_t mode, mdl_rng_t *rng);

/* Integer access for bitwise ops and iota: value of an integer element (sign- or zero-
 * extended); for float types the float value rounded to nearest even and saturated to int64. */
int64_t mdl_load_i64(isa_dtype_t t, const void *p);
/* Store an integer: integer types saturate to their range; float types convert (RNE). */
void mdl_store_i64(isa_dtype_t t, void *p, int64_t v);

/* Bulk versions over contiguous arrays (n elements). */
void mdl_load_f32_n(isa_dtype_t t, const void *src, float *dst, size_t n);
void mdl_store_f32_n(isa_dtype_t t, void *dst, const float *src, size_t n, mdl_rounding_t mode,
                     mdl_rng_t *rng);

/* Raw encoders for tests and tools. */
uint16_t mdl_f32_to_bf16_bits(float x);  /* RNE */
uint16_t mdl_f32_to_fp16_bits(float x);  /* RNE */
float mdl_bf16_bits_to_f32(uint16_t b);
float mdl_fp16_bits_to_f32(uint16_t b);
uint8_t mdl_f32_to_fp8_bits(isa_dtype_t t, float x); /* RNE, saturating */
float mdl_fp8_bits_to_f32(isa_dtype_t t, uint8_t b);
/* Largest finite value of a float type (fp32 for FLT_MAX); 0 for integer types. */
double mdl_dtype_max(isa_dtype_t t);

#endif
