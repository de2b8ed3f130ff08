/*
 * numerics.c -- the data types of ISA.md section 3: conversions between fp32 and every
 * storage type (contract in numerics.h).
 *
 * Every narrow float type here (fp16, bf16, tf32, fp8e4, fp8e5, fp8e3) is IEEE-style: a sign,
 * E exponent bits with bias B = 2^(E-1) - 1 (the all-ones exponent reserved for Inf/NaN, so
 * emax = B and emin = 1 - B), M stored mantissa bits and gradual underflow. All of them are
 * no wider than fp32 in either field, so one routine, encode_float(), rounds an fp32 to any
 * of them; its format arguments are always literal constants, so the compiler specialises
 * it per type. The two hot conversions with the same exponent range as fp32 (bf16 and tf32
 * under round-to-nearest-even) use the usual integer carry trick instead.
 *
 * Stochastic rounding rounds the magnitude up with probability (distance to the value below)
 * / (gap between the two neighbours), decided by comparing the dropped bits with as many
 * uniform random bits. It draws exactly one 64-bit number from the generator per element
 * stored in a narrow float type, whatever the value (exact, NaN, Inf), so the position in
 * the random stream depends only on how many elements were written, never on their values.
 * Integer destinations always round to nearest even (ISA.md 3) and draw nothing.
 *
 * Storage is little-endian on every host: elements go through memcpy (no unaligned casts)
 * and are byte-swapped on a big-endian host.
 */
#include "numerics.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* ---- Raw storage access -------------------------------------------------------------------- */

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) &&                                    \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NUM_BIG_ENDIAN 1
#else
#define NUM_BIG_ENDIAN 0
#endif

static inline uint16_t swap16(uint16_t v)
{
    return (uint16_t)((v >> 8) | (v << 8));
}

static inline uint32_t swap32(uint32_t v)
{
    return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

static inline uint16_t get16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return NUM_BIG_ENDIAN ? swap16(v) : v;
}

static inline uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return NUM_BIG_ENDIAN ? swap32(v) : v;
}

static inline void put16(unsigned char *p, uint16_t v)
{
    if (NUM_BIG_ENDIAN)
        v = swap16(v);
    memcpy(p, &v, sizeof v);
}

static inline void put32(unsigned char *p, uint32_t v)
{
    if (NUM_BIG_ENDIAN)
        v = swap32(v);
    memcpy(p, &v, sizeof v);
}

static inline uint32_t f32_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline float bits_f32(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* ---- Float formats ------------------------------------------------------------------------- */

/* Format arguments (E, M, B, saturate) of encode_float / decode_small. */
#define FMT_FP16 5, 10, 15, 0
#define FMT_BF16 8, 7, 127, 0
#define FMT_TF32 8, 10, 127, 0
#define FMT_FP8E4 4, 3, 7, 1
#define FMT_FP8E5 5, 2, 15, 1
#define FMT_FP8E3 3, 4, 3, 1

#define F32_ABS_MASK 0x7fffffffu
#define F32_INF 0x7f800000u
#define F32_QUIET 0x00400000u

/*
 * Round the fp32 with bits `bits` to the format (E, M, B, sat) and return its code (sign in
 * bit E + M). `stochastic` selects stochastic rounding with `rnd` as 64 uniform random bits;
 * otherwise round to nearest, ties to even.
 *
 * The magnitude is taken as an integer significand m (implicit bit included) times 2^(e-23).
 * In the target a value of exponent e (or emin, below the normal range) has quantum
 * 2^(max(e, emin) - M), so the low `shift` bits of m are dropped and the rest rounded.
 * Adding the rounded significand to the biased exponent field lets a carry out of the
 * mantissa bump the exponent (and the largest denormal become the smallest normal) for free.
 * A shift beyond 63 only happens for values below 2^-39 of the smallest target denormal:
 * RNE gives zero either way and stochastic rounding's probability is off by less than 2^-39.
 */
static inline uint32_t encode_float(uint32_t bits, int E, int M, int B, int sat, int stochastic,
                                    uint64_t rnd)
{
    const uint32_t sign = (bits >> 31) << (E + M);
    const uint32_t inf = (uint32_t)(2 * B + 1) << M;
    const uint32_t a = bits & F32_ABS_MASK;
    if (a >= F32_INF) {
        if (a == F32_INF)
            return sign | inf;
        /* NaN: keep the top of the payload, force the quiet bit so it cannot become Inf. */
        return sign | inf | (1u << (M - 1)) | ((a & 0x7fffffu) >> (23 - M));
    }
    int e = (int)(a >> 23);
    uint64_t m = a & 0x7fffffu;
    if (e == 0)
        e = 1; /* fp32 denormal: same scale as the smallest normal, no implicit bit */
    else
        m |= 0x800000u;
    e -= 127;
    if (e > B)
        return sign | (sat ? inf - 1 : inf);
    const int emin = 1 - B;
    const int ee = e < emin ? emin : e;
    int shift = 23 - M + (ee - e);
    if (shift > 63)
        shift = 63;
    uint64_t q = m >> shift;
    const uint64_t rem = m & ((UINT64_C(1) << shift) - 1);
    if (stochastic) {
        q += (rnd >> (64 - shift)) < rem;
    } else {
        const uint64_t half = UINT64_C(1) << (shift - 1);
        q += (uint64_t)(rem > half) | ((uint64_t)(rem == half) & q & 1u); /* branch-free */
    }
    const uint32_t code = ((uint32_t)(ee + B - 1) << M) + (uint32_t)q;
    if (code >= inf)
        return sign | (sat ? inf - 1 : inf);
    return sign | code;
}

/*
 * Widen a code of a format with a small bias (fp16, fp8: every value, denormals included, is
 * a normal fp32) to fp32 bits. NaNs come out quiet with the payload kept.
 * `denorm_scale` is the value of the smallest denormal, 2^(1 - B - M).
 */
static inline uint32_t decode_small(uint32_t code, int E, int M, int B, float denorm_scale)
{
    const uint32_t sign = ((code >> (E + M)) & 1u) << 31;
    const uint32_t ef = (code >> M) & ((1u << E) - 1);
    const uint32_t mf = code & ((1u << M) - 1);
    if (ef == (1u << E) - 1)
        return sign | F32_INF | (mf ? F32_QUIET | (mf << (23 - M)) : 0);
    if (ef == 0) /* zero or denormal: mf * 2^(1-B-M), exact in fp32 */
        return sign | f32_bits((float)mf * denorm_scale);
    return sign | ((ef + (uint32_t)(127 - B)) << 23) | (mf << (23 - M));
}

#define DECODE_FP16(c) decode_small((c), 5, 10, 15, 0x1p-24f)
#define DECODE_FP8E4(c) decode_small((c), 4, 3, 7, 0x1p-9f)
#define DECODE_FP8E5(c) decode_small((c), 5, 2, 15, 0x1p-16f)
#define DECODE_FP8E3(c) decode_small((c), 3, 4, 3, 0x1p-6f)

/* bf16 RNE by carry: adding 0x7fff (+1 when the kept lsb is odd) carries into bit 16 exactly
 * when the dropped half is above (or at, for odd) the halfway point; a carry into the
 * exponent gives the next binade or Inf, as IEEE wants. NaNs are kept quiet. */
static inline uint16_t bf16_rne(uint32_t b)
{
    if ((b & F32_ABS_MASK) > F32_INF)
        return (uint16_t)((b >> 16) | 0x40u);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/* Same trick for tf32 (13 dropped bits); the result stays an fp32 bit pattern. */
static inline uint32_t tf32_rne(uint32_t b)
{
    if ((b & F32_ABS_MASK) > F32_INF)
        return (b | F32_QUIET) & 0xffffe000u;
    return (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u;
}

static inline uint32_t bf16_widen(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    if ((b & F32_ABS_MASK) > F32_INF)
        b |= F32_QUIET;
    return b;
}

/* A tf32 element is the top 19 bits of its 4 bytes; the low 13 are not part of the value. */
static inline uint32_t tf32_widen(uint32_t b)
{
    if ((b & F32_ABS_MASK) > F32_INF)
        return b | F32_QUIET;
    return b & 0xffffe000u;
}

/* ---- Integers ------------------------------------------------------------------------------ */

static inline int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/*
 * float -> integer of at most 32 bits: round to nearest even, saturate to [lo, hi], NaN -> 0.
 * Written to compile branch-free (cmov), since data that is half out of range would
 * otherwise mispredict on every element: the magnitude is first capped at 2^33 in the bit
 * domain (NaN -> 0), which keeps the int64 conversion defined and changes no result, then
 * rounded, then clamped as an integer. rint() rounds in the current mode, which the
 * simulator never changes from the default, nearest even.
 */
static inline int64_t f32_to_int(float x, int64_t lo, int64_t hi)
{
    const uint32_t b = f32_bits(x);
    const uint32_t a = b & F32_ABS_MASK;
    uint32_t capped = a > 0x50000000u ? 0x50000000u : a; /* 2^33 */
    capped = a > F32_INF ? 0 : capped;
    const int64_t r = (int64_t)rint((double)bits_f32((b & ~F32_ABS_MASK) | capped));
    return clamp_i64(r, lo, hi);
}

static int64_t f32_to_i64(float x)
{
    if (x != x)
        return 0;
    const double r = rint((double)x);
    if (r >= 0x1p63)
        return INT64_MAX;
    if (r <= -0x1p63)
        return INT64_MIN;
    return (int64_t)r;
}

/*
 * int64 -> fp32 rounded to odd: exact below 2^24, otherwise the top 24 significant bits with
 * the last one or'ed with "anything dropped". Every narrow float type keeps at most 11
 * significant bits, so rounding this to it (RNE) equals rounding the integer directly; going
 * through an ordinary RNE fp32 could round twice (2^30 + 2^22 + 1 would become a bf16 tie).
 */
static float i64_to_f32_odd(int64_t v)
{
    const int neg = v < 0;
    uint64_t u = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int drop = 0;
    while ((u >> drop) >= (UINT64_C(1) << 24))
        drop++;
    uint64_t t = u >> drop;
    if (drop && (u & ((UINT64_C(1) << drop) - 1)))
        t |= 1;
    const float f = ldexpf((float)t, drop);
    return neg ? -f : f;
}

/* ---- Scalar access ------------------------------------------------------------------------- */

float mdl_load_f32(isa_dtype_t t, const void *p)
{
    const unsigned char *s = p;
    switch (t) {
    case ISA_DT_FP32:
        return bits_f32(get32(s));
    case ISA_DT_FP16:
        return bits_f32(DECODE_FP16(get16(s)));
    case ISA_DT_BF16:
        return bits_f32(bf16_widen(get16(s)));
    case ISA_DT_TF32:
        return bits_f32(tf32_widen(get32(s)));
    case ISA_DT_FP8E4:
        return bits_f32(DECODE_FP8E4(s[0]));
    case ISA_DT_FP8E5:
        return bits_f32(DECODE_FP8E5(s[0]));
    case ISA_DT_FP8E3:
        return bits_f32(DECODE_FP8E3(s[0]));
    case ISA_DT_I8:
        return (float)(int8_t)s[0];
    case ISA_DT_U8:
        return (float)s[0];
    case ISA_DT_I16:
        return (float)(int16_t)get16(s);
    case ISA_DT_U16:
        return (float)get16(s);
    case ISA_DT_I32:
        return (float)(int32_t)get32(s);
    case ISA_DT_U32:
        return (float)get32(s);
    case ISA_DT_COUNT:
        break;
    }
    assert(!"mdl_load_f32: bad dtype");
    return 0.0f;
}

/* Draw the random bits for one element (one draw per element; see the file comment). */
static inline uint64_t draw(int stochastic, mdl_rng_t *rng)
{
    return stochastic ? mdl_rng_next(rng) : 0;
}

void mdl_store_f32(isa_dtype_t t, void *p, float x, mdl_rounding_t mode, mdl_rng_t *rng)
{
    unsigned char *d = p;
    const uint32_t b = f32_bits(x);
    assert(mode != MDL_ROUND_STOCHASTIC || rng);
    const int sr = mode == MDL_ROUND_STOCHASTIC && rng;
    switch (t) {
    case ISA_DT_FP32:
        put32(d, b);
        return;
    case ISA_DT_FP16:
        put16(d, (uint16_t)encode_float(b, FMT_FP16, sr, draw(sr, rng)));
        return;
    case ISA_DT_BF16:
        put16(d, sr ? (uint16_t)encode_float(b, FMT_BF16, 1, mdl_rng_next(rng)) : bf16_rne(b));
        return;
    case ISA_DT_TF32:
        put32(d, sr ? encode_float(b, FMT_TF32, 1, mdl_rng_next(rng)) << 13 : tf32_rne(b));
        return;
    case ISA_DT_FP8E4:
        d[0] = (uint8_t)encode_float(b, FMT_FP8E4, sr, draw(sr, rng));
        return;
    case ISA_DT_FP8E5:
        d[0] = (uint8_t)encode_float(b, FMT_FP8E5, sr, draw(sr, rng));
        return;
    case ISA_DT_FP8E3:
        d[0] = (uint8_t)encode_float(b, FMT_FP8E3, sr, draw(sr, rng));
        return;
    case ISA_DT_I8:
        d[0] = (uint8_t)(int8_t)f32_to_int(x, INT8_MIN, INT8_MAX);
        return;
    case ISA_DT_U8:
        d[0] = (uint8_t)f32_to_int(x, 0, UINT8_MAX);
        return;
    case ISA_DT_I16:
        put16(d, (uint16_t)(int16_t)f32_to_int(x, INT16_MIN, INT16_MAX));
        return;
    case ISA_DT_U16:
        put16(d, (uint16_t)f32_to_int(x, 0, UINT16_MAX));
        return;
    case ISA_DT_I32:
        put32(d, (uint32_t)(int32_t)f32_to_int(x, INT32_MIN, INT32_MAX));
        return;
    case ISA_DT_U32:
        put32(d, (uint32_t)f32_to_int(x, 0, UINT32_MAX));
        return;
    case ISA_DT_COUNT:
        break;
    }
    assert(!"mdl_store_f32: bad dtype");
}

float mdl_round_f32(isa_dtype_t t, float x, mdl_rounding_t mode, mdl_rng_t *rng)
{
    unsigned char buf[4];
    if (t == ISA_DT_FP32)
        return x;
    mdl_store_f32(t, buf, x, mode, rng);
    return mdl_load_f32(t, buf);
}

int64_t mdl_load_i64(isa_dtype_t t, const void *p)
{
    const unsigned char *s = p;
    switch (t) {
    case ISA_DT_I8:
        return (int8_t)s[0];
    case ISA_DT_U8:
        return s[0];
    case ISA_DT_I16:
        return (int16_t)get16(s);
    case ISA_DT_U16:
        return get16(s);
    case ISA_DT_I32:
        return (int32_t)get32(s);
    case ISA_DT_U32:
        return get32(s);
    default:
        return f32_to_i64(mdl_load_f32(t, p));
    }
}

void mdl_store_i64(isa_dtype_t t, void *p, int64_t v)
{
    unsigned char *d = p;
    switch (t) {
    case ISA_DT_I8:
        d[0] = (uint8_t)(int8_t)clamp_i64(v, INT8_MIN, INT8_MAX);
        return;
    case ISA_DT_U8:
        d[0] = (uint8_t)clamp_i64(v, 0, UINT8_MAX);
        return;
    case ISA_DT_I16:
        put16(d, (uint16_t)(int16_t)clamp_i64(v, INT16_MIN, INT16_MAX));
        return;
    case ISA_DT_U16:
        put16(d, (uint16_t)clamp_i64(v, 0, UINT16_MAX));
        return;
    case ISA_DT_I32:
        put32(d, (uint32_t)(int32_t)clamp_i64(v, INT32_MIN, INT32_MAX));
        return;
    case ISA_DT_U32:
        put32(d, (uint32_t)clamp_i64(v, 0, UINT32_MAX));
        return;
    case ISA_DT_FP32:
        put32(d, f32_bits((float)v)); /* one RNE rounding, done by the conversion */
        return;
    case ISA_DT_COUNT:
        assert(!"mdl_store_i64: bad dtype");
        return;
    default:
        mdl_store_f32(t, p, i64_to_f32_odd(v), MDL_ROUND_NEAREST_EVEN, NULL);
        return;
    }
}

/* ---- Bulk access --------------------------------------------------------------------------- */

/* One loop per type, the switch outside it. */
/* ---- Bulk bf16, four lanes at a time -------------------------------------------------------
 *
 * The two conversions a functional GEMM runs on every tile (a moving or stationary tile
 * widened for the sgemm, the fp32 result rounded back to bf16 by act) take whole runs of
 * elements. On x86-64 (SSE2 is part of the base instruction set, so no run-time dispatch)
 * they compute bf16_widen / bf16_rne above lane by lane with the same integer operations
 * (shift, carry add, NaN test on the magnitude, quiet bit), so every result is the scalar
 * one bit for bit; the tail of a run, and other hosts, use the scalar functions. Both are
 * compared with the single-element path on every bf16 code and on rounding ties, NaN, Inf
 * and subnormals (tests/unit/test_numerics.c). */

#if defined(__SSE2__) && !NUM_BIG_ENDIAN
#define NUM_SSE2 1
#include <emmintrin.h>
#else
#define NUM_SSE2 0
#endif

static void bf16_widen_n(const unsigned char *s, float *dst, size_t n)
{
    size_t i = 0;
#if NUM_SSE2
    const __m128i zero = _mm_setzero_si128(), abs_mask = _mm_set1_epi32(0x7fffffff),
                  inf = _mm_set1_epi32((int)F32_INF), quiet = _mm_set1_epi32((int)F32_QUIET);
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i));
        __m128i lo = _mm_unpacklo_epi16(zero, h), hi = _mm_unpackhi_epi16(zero, h); /* h << 16 */
        /* magnitudes are below 2^31, so the signed compare is the unsigned one */
        const __m128i nlo = _mm_cmpgt_epi32(_mm_and_si128(lo, abs_mask), inf),
                      nhi = _mm_cmpgt_epi32(_mm_and_si128(hi, abs_mask), inf);
        lo = _mm_or_si128(lo, _mm_and_si128(nlo, quiet));
        hi = _mm_or_si128(hi, _mm_and_si128(nhi, quiet));
        _mm_storeu_si128((__m128i *)(void *)(dst + i), lo);
        _mm_storeu_si128((__m128i *)(void *)(dst + i + 4), hi);
    }
#endif
    for (; i < n; i++)
        dst[i] = bits_f32(bf16_widen(get16(s + 2 * i)));
}

#if NUM_SSE2
/* bf16_rne of four fp32 lanes, each result in the low 16 bits of its lane. */
static inline __m128i bf16_rne_4(__m128i b)
{
    const __m128i abs_mask = _mm_set1_epi32(0x7fffffff), inf = _mm_set1_epi32((int)F32_INF),
                  one = _mm_set1_epi32(1), half = _mm_set1_epi32(0x7fff),
                  quiet = _mm_set1_epi32(0x40);
    const __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(b, abs_mask), inf);
    const __m128i top = _mm_srli_epi32(b, 16);
    const __m128i r =
        _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(b, half), _mm_and_si128(top, one)), 16);
    return _mm_or_si128(_mm_and_si128(nan, _mm_or_si128(top, quiet)), _mm_andnot_si128(nan, r));
}
#endif

static void bf16_rne_n(unsigned char *d, const float *src, size_t n)
{
    size_t i = 0;
#if NUM_SSE2
    for (; i + 8 <= n; i += 8) {
        __m128i lo = bf16_rne_4(_mm_loadu_si128((const __m128i *)(const void *)(src + i)));
        __m128i hi = bf16_rne_4(_mm_loadu_si128((const __m128i *)(const void *)(src + i + 4)));
        /* sign-extend the 16-bit codes so that the signed saturating pack keeps them whole */
        lo = _mm_srai_epi32(_mm_slli_epi32(lo, 16), 16);
        hi = _mm_srai_epi32(_mm_slli_epi32(hi, 16), 16);
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * i), _mm_packs_epi32(lo, hi));
    }
#endif
    for (; i < n; i++)
        put16(d + 2 * i, bf16_rne(f32_bits(src[i])));
}

#define LOOP(body)                                                                                 \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++) {                                                           \
            body;                                                                                  \
        }                                                                                          \
    } while (0)

void mdl_load_f32_n(isa_dtype_t t, const void *src, float *dst, size_t n)
{
    const unsigned char *s = src;
    switch (t) {
    case ISA_DT_FP32:
        if (!NUM_BIG_ENDIAN) {
            if (n)
                memcpy(dst, s, n * sizeof *dst);
            return;
        }
        LOOP(dst[i] = bits_f32(get32(s + 4 * i)));
        return;
    case ISA_DT_FP16:
        LOOP(dst[i] = bits_f32(DECODE_FP16(get16(s + 2 * i))));
        return;
    case ISA_DT_BF16:
        bf16_widen_n(s, dst, n);
        return;
    case ISA_DT_TF32:
        LOOP(dst[i] = bits_f32(tf32_widen(get32(s + 4 * i))));
        return;
    case ISA_DT_FP8E4:
        LOOP(dst[i] = bits_f32(DECODE_FP8E4(s[i])));
        return;
    case ISA_DT_FP8E5:
        LOOP(dst[i] = bits_f32(DECODE_FP8E5(s[i])));
        return;
    case ISA_DT_FP8E3:
        LOOP(dst[i] = bits_f32(DECODE_FP8E3(s[i])));
        return;
    case ISA_DT_I8:
        LOOP(dst[i] = (float)(int8_t)s[i]);
        return;
    case ISA_DT_U8:
        LOOP(dst[i] = (float)s[i]);
        return;
    case ISA_DT_I16:
        LOOP(dst[i] = (float)(int16_t)get16(s + 2 * i));
        return;
    case ISA_DT_U16:
        LOOP(dst[i] = (float)get16(s + 2 * i));
        return;
    case ISA_DT_I32:
        LOOP(dst[i] = (float)(int32_t)get32(s + 4 * i));
        return;
    case ISA_DT_U32:
        LOOP(dst[i] = (float)get32(s + 4 * i));
        return;
    case ISA_DT_COUNT:
        break;
    }
    assert(!"mdl_load_f32_n: bad dtype");
}

void mdl_store_f32_n(isa_dtype_t t, void *dst, const float *src, size_t n, mdl_rounding_t mode,
                     mdl_rng_t *rng)
{
    unsigned char *d = dst;
    assert(mode != MDL_ROUND_STOCHASTIC || rng);
    const int sr = mode == MDL_ROUND_STOCHASTIC && rng;
    switch (t) {
    case ISA_DT_FP32:
        if (!NUM_BIG_ENDIAN) {
            if (n)
                memcpy(d, src, n * sizeof *src);
            return;
        }
        LOOP(put32(d + 4 * i, f32_bits(src[i])));
        return;
    case ISA_DT_FP16:
        if (sr)
            LOOP(put16(d + 2 * i,
                       (uint16_t)encode_float(f32_bits(src[i]), FMT_FP16, 1, mdl_rng_next(rng))));
        else
            LOOP(put16(d + 2 * i, (uint16_t)encode_float(f32_bits(src[i]), FMT_FP16, 0, 0)));
        return;
    case ISA_DT_BF16:
        if (sr)
            LOOP(put16(d + 2 * i,
                       (uint16_t)encode_float(f32_bits(src[i]), FMT_BF16, 1, mdl_rng_next(rng))));
        else
            bf16_rne_n(d, src, n);
        return;
    case ISA_DT_TF32:
        if (sr)
            LOOP(put32(d + 4 * i, encode_float(f32_bits(src[i]), FMT_TF32, 1, mdl_rng_next(rng))
                                      << 13));
        else
            LOOP(put32(d + 4 * i, tf32_rne(f32_bits(src[i]))));
        return;
    case ISA_DT_FP8E4:
        if (sr)
            LOOP(d[i] = (uint8_t)encode_float(f32_bits(src[i]), FMT_FP8E4, 1, mdl_rng_next(rng)));
        else
            LOOP(d[i] = (uint8_t)encode_float(f32_bits(src[i]), FMT_FP8E4, 0, 0));
        return;
    case ISA_DT_FP8E5:
        if (sr)
            LOOP(d[i] = (uint8_t)encode_float(f32_bits(src[i]), FMT_FP8E5, 1, mdl_rng_next(rng)));
        else
            LOOP(d[i] = (uint8_t)encode_float(f32_bits(src[i]), FMT_FP8E5, 0, 0));
        return;
    case ISA_DT_FP8E3:
        if (sr)
            LOOP(d[i] = (uint8_t)encode_float(f32_bits(src[i]), FMT_FP8E3, 1, mdl_rng_next(rng)));
        else
            LOOP(d[i] = (uint8_t)encode_float(f32_bits(src[i]), FMT_FP8E3, 0, 0));
        return;
    case ISA_DT_I8:
        LOOP(d[i] = (uint8_t)(int8_t)f32_to_int(src[i], INT8_MIN, INT8_MAX));
        return;
    case ISA_DT_U8:
        LOOP(d[i] = (uint8_t)f32_to_int(src[i], 0, UINT8_MAX));
        return;
    case ISA_DT_I16:
        LOOP(put16(d + 2 * i, (uint16_t)(int16_t)f32_to_int(src[i], INT16_MIN, INT16_MAX)));
        return;
    case ISA_DT_U16:
        LOOP(put16(d + 2 * i, (uint16_t)f32_to_int(src[i], 0, UINT16_MAX)));
        return;
    case ISA_DT_I32:
        LOOP(put32(d + 4 * i, (uint32_t)(int32_t)f32_to_int(src[i], INT32_MIN, INT32_MAX)));
        return;
    case ISA_DT_U32:
        LOOP(put32(d + 4 * i, (uint32_t)f32_to_int(src[i], 0, UINT32_MAX)));
        return;
    case ISA_DT_COUNT:
        break;
    }
    assert(!"mdl_store_f32_n: bad dtype");
}

/* ---- Raw encoders -------------------------------------------------------------------------- */

uint16_t mdl_f32_to_bf16_bits(float x)
{
    return bf16_rne(f32_bits(x));
}

uint16_t mdl_f32_to_fp16_bits(float x)
{
    return (uint16_t)encode_float(f32_bits(x), FMT_FP16, 0, 0);
}

float mdl_bf16_bits_to_f32(uint16_t b)
{
    return bits_f32(bf16_widen(b));
}

float mdl_fp16_bits_to_f32(uint16_t b)
{
    return bits_f32(DECODE_FP16(b));
}

uint8_t mdl_f32_to_fp8_bits(isa_dtype_t t, float x)
{
    const uint32_t b = f32_bits(x);
    switch (t) {
    case ISA_DT_FP8E4:
        return (uint8_t)encode_float(b, FMT_FP8E4, 0, 0);
    case ISA_DT_FP8E5:
        return (uint8_t)encode_float(b, FMT_FP8E5, 0, 0);
    case ISA_DT_FP8E3:
        return (uint8_t)encode_float(b, FMT_FP8E3, 0, 0);
    default:
        assert(!"mdl_f32_to_fp8_bits: not an fp8 type");
        return 0;
    }
}

float mdl_fp8_bits_to_f32(isa_dtype_t t, uint8_t b)
{
    switch (t) {
    case ISA_DT_FP8E4:
        return bits_f32(DECODE_FP8E4(b));
    case ISA_DT_FP8E5:
        return bits_f32(DECODE_FP8E5(b));
    case ISA_DT_FP8E3:
        return bits_f32(DECODE_FP8E3(b));
    default:
        assert(!"mdl_fp8_bits_to_f32: not an fp8 type");
        return 0.0f;
    }
}

/* (2 - 2^-M) * 2^B for the IEEE-style types. */
double mdl_dtype_max(isa_dtype_t t)
{
    switch (t) {
    case ISA_DT_FP32:
        return FLT_MAX;
    case ISA_DT_FP16:
        return 65504.0;
    case ISA_DT_BF16:
        return 0x1.fep127;
    case ISA_DT_TF32:
        return 0x1.ffcp127;
    case ISA_DT_FP8E4:
        return 240.0;
    case ISA_DT_FP8E5:
        return 57344.0;
    case ISA_DT_FP8E3:
        return 15.5;
    default:
        return 0.0;
    }
}
