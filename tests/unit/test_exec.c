/*
 * test_exec.c -- the functional model (models/exec*.c) against NumPy references.
 *
 * Each test builds a tiny program in memory with the isa builder (one instruction at a time),
 * fills SBUF/PSUM/HBM through views, executes with mdl_exec and compares D with a reference
 * computed by /usr/bin/python3 + NumPy from the same fp32 inputs (exchanged as raw files in a
 * temporary directory). Exact equality is required wherever the model and NumPy perform the
 * same IEEE fp32 operations in the same order; tolerances elsewhere are justified where used.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec.h"
#include "exec_internal.h"
#include "isa_internal.h"
#include "mem.h"
#include "numerics.h"
#include "testutil.h"

#define SBUF_BYTES 196608u
#define PSUM_BYTES 16384u
#define HBM_BYTES (1ull << 30)

typedef struct fx {
    mdl_onchip_t sbuf, psum;
    mdl_hbm_t hbm;
    mdl_mem_t mem;
    mdl_core_state_t st;
    isa_builder_t b;
    char err[512];
    char dir[256];
    uint32_t seed;
} fx_t;

static int fx_open(fx_t *f, mdl_rounding_t rounding, uint64_t seed)
{
    if (mdl_onchip_init(&f->sbuf, 128, SBUF_BYTES) || mdl_onchip_init(&f->psum, 128, PSUM_BYTES) ||
        mdl_hbm_init(&f->hbm, HBM_BYTES) || isa_builder_init(&f->b))
        return -1;
    f->mem.sbuf = &f->sbuf;
    f->mem.psum = &f->psum;
    f->mem.hbm = &f->hbm;
    return mdl_core_state_init(&f->st, f->b.prog, 0, f->mem, rounding, seed);
}

static void fx_close(fx_t *f)
{
    mdl_core_state_free(&f->st);
    isa_program_free(f->b.prog);
    mdl_onchip_free(&f->sbuf);
    mdl_onchip_free(&f->psum);
    mdl_hbm_free(&f->hbm);
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    if (!f || fx_open(f, MDL_ROUND_NEAREST_EVEN, 42))
        return -1;
    snprintf(f->dir, sizeof f->dir, "%s", tu_tmpdir());
    f->seed = 2024;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    tu_rmdir(f->dir);
    fx_close(f);
    free(f);
    return 0;
}

/* ---- Views, arguments, execution ----------------------------------------------------------- */


/* Contiguous [pcount, n] in SBUF or PSUM at byte offset `off`. */
static isa_view_t tile(isa_space_t space, isa_dtype_t dt, unsigned p0, unsigned pc, uint64_t off,
                       uint32_t n)
{
    const int64_t s[] = {1};
    const uint32_t c[] = {n};
    return tu_view(space, dt, p0, pc, off, 1, s, c);
}
#define SB(dt, p0, pc, off, n) tile(ISA_SPACE_SBUF, dt, p0, pc, off, n)
#define PS(dt, p0, pc, off, n) tile(ISA_SPACE_PSUM, dt, p0, pc, off, n)

static isa_view_t hbm(isa_dtype_t dt, uint64_t off, uint32_t rows, uint32_t cols)
{
    const int64_t s[] = {cols, 1};
    const uint32_t c[] = {rows, cols};
    return tu_view(ISA_SPACE_HBM, dt, 0, 1, off, 2, s, c);
}

static isa_arg_t av(fx_t *f, isa_view_t v)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.index = isa_builder_view(&f->b, &v);
    return a;
}
/* A scalar slot given as a [P,1] view. */
static isa_arg_t asv(fx_t *f, isa_view_t v)
{
    isa_arg_t a = av(f, v);
    a.is_view = 1;
    return a;
}
static isa_arg_t af(double d)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.v.f = d;
    return a;
}
static isa_arg_t ai(int64_t i)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.v.i = i;
    return a;
}
static isa_arg_t al(fx_t *f, const int64_t *v, uint32_t n)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.count = (uint16_t)n;
    a.index = isa_builder_ints(&f->b, v, n);
    return a;
}
static const isa_arg_t NONE;

static ncsim_status_t run_(fx_t *f, isa_op_t op, isa_engine_t eng, const isa_arg_t *a, unsigned n)
{
    const isa_op_info_t *info = isa_op_info(op);
    assert_true(n <= info->nslots);
    uint32_t first = isa_builder_args(&f->b, info->nslots ? info->nslots : 1);
    for (unsigned i = 0; i < n; i++)
        f->b.prog->args[first + i] = a[i];
    isa_instr_t in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)op;
    in.engine = (uint8_t)eng;
    in.args = first;
    uint32_t idx = isa_builder_instr(&f->b, &in);
    assert_int_not_equal(idx, UINT32_MAX);
    f->st.prog = f->b.prog;
    f->err[0] = '\0';
    return mdl_exec(&f->st, &f->b.prog->instrs[idx], f->err, sizeof f->err);
}
#define RUN(f, op, eng, ...)                                                                       \
    run_(f, op, eng, (const isa_arg_t[]){__VA_ARGS__},                                             \
         sizeof((const isa_arg_t[]){__VA_ARGS__}) / sizeof(isa_arg_t))

#define EXPECT_OK(expr)                                                                            \
    do {                                                                                           \
        ncsim_status_t st_ = (expr);                                                               \
        if (st_ != NCSIM_OK)                                                                       \
            fail_msg("%s failed (%d): %s", #expr, (int)st_, f->err);                               \
    } while (0)

/* The call fails with NCSIM_PROGRAM and a message containing `want`. */
#define EXPECT_ERR(expr, want)                                                                     \
    do {                                                                                           \
        ncsim_status_t st_ = (expr);                                                               \
        if (st_ != NCSIM_PROGRAM || !strstr(f->err, want))                                         \
            fail_msg("%s: status %d, message \"%s\", wanted \"%s\"", #expr, (int)st_, f->err,      \
                     want);                                                                        \
    } while (0)

static void put(fx_t *f, const isa_view_t *v, const float *x)
{
    assert_int_equal(mdl_view_write_f32(&f->mem, v, x, MDL_ROUND_NEAREST_EVEN, NULL), 0);
}
static void put_i(fx_t *f, const isa_view_t *v, const int64_t *x)
{
    assert_int_equal(mdl_view_write_i64(&f->mem, v, x), 0);
}
static float *get(fx_t *f, const isa_view_t *v)
{
    float *x = malloc(isa_view_elems(v) * sizeof *x);
    assert_non_null(x);
    mdl_view_read_f32(&f->mem, v, x);
    return x;
}
static int64_t *get_i(fx_t *f, const isa_view_t *v)
{
    int64_t *x = malloc(isa_view_elems(v) * sizeof *x);
    assert_non_null(x);
    mdl_view_read_i64(&f->mem, v, x);
    return x;
}

/* Uniform in [lo, hi), deterministic. */
static float urand(fx_t *f, float lo, float hi)
{
    f->seed = f->seed * 1664525u + 1013904223u;
    return lo + (hi - lo) * ((float)(f->seed >> 8) / 16777216.0f);
}
static float *rand_fill(fx_t *f, size_t n, float lo, float hi)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = urand(f, lo, hi);
    return x;
}
/* Fill a view with random values and return them as stored (rounded to the view's type). */
static float *put_rand(fx_t *f, const isa_view_t *v, float lo, float hi)
{
    float *x = rand_fill(f, isa_view_elems(v), lo, hi);
    put(f, v, x);
    mdl_view_read_f32(&f->mem, v, x);
    return x;
}

/* ---- Python exchange --------------------------------------------------------------------------
 */

static void save(fx_t *f, const char *name, const float *x, size_t n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s.f32", f->dir, name);
    assert_int_equal(tu_write_file(path, x, n * sizeof *x), 0);
}
static void save_i(fx_t *f, const char *name, const int64_t *x, size_t n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s.i64", f->dir, name);
    assert_int_equal(tu_write_file(path, x, n * sizeof *x), 0);
}
static float *load(fx_t *f, const char *name, size_t n)
{
    char path[400];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s.out", f->dir, name);
    float *x = (float *)tu_read_file(path, &len);
    if (!x || len != n * sizeof(float))
        fail_msg("reference %s: %zu bytes, expected %zu", name, len, n * sizeof(float));
    return x;
}
/* Helpers every reference script gets: file exchange and the storage-type roundings. */
static const char py_prelude[] =
    "import numpy as np, sys, math\n"
    "np.seterr(all='ignore')\n"
    "D = sys.argv[1]\n"
    "f32 = np.float32\n"
    "def ld(n): return np.fromfile(D + '/' + n + '.f32', f32)\n"
    "def ldi(n): return np.fromfile(D + '/' + n + '.i64', np.int64)\n"
    "def sv(n, a): np.ascontiguousarray(a, dtype=f32).tofile(D + '/' + n + '.out')\n"
    "def svi(n, a): np.ascontiguousarray(a, dtype=np.int64).tofile(D + '/' + n + '.iout')\n"
    "def bf16(a):\n"
    "    a = np.ascontiguousarray(a, dtype=f32)\n"
    "    u = a.view(np.uint32).astype(np.uint64)\n"
    "    r = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(f32)\n"
    "    return np.where(np.isnan(a), a, r)\n"
    "def fp16(a): return np.asarray(a, f32).astype(np.float16).astype(f32)\n"
    "_tab = np.array([((c & 7) / 8) * 2.0**-6 if (c >> 3) == 0 else (1 + (c & 7) / 8) * 2.0**((c "
    ">> 3) - 7) for c in range(120)])\n"
    "def fp8e4(a):\n"
    "    a = np.asarray(a, f32).astype(np.float64)\n"
    "    s, x = np.where(np.signbit(a), -1.0, 1.0), np.abs(a)\n"
    "    j = np.clip(np.searchsorted(_tab, x), 1, len(_tab) - 1)\n"
    "    lo, hi = _tab[j - 1], _tab[j]\n"
    "    r = np.where(x - lo < hi - x, lo, np.where(x - lo > hi - x, hi, np.where((j - 1) % 2 == "
    "0, lo, hi)))\n"
    "    r = np.where(x >= _tab[-1], _tab[-1], r)\n"
    "    return np.where(np.isfinite(a), s * r, a).astype(f32)\n"
    "RND = {'fp32': lambda a: np.asarray(a, f32), 'bf16': bf16, 'fp16': fp16, 'fp8e4': fp8e4}\n"
    "def seqsum(a, axis=-1): return np.add.accumulate(np.asarray(a, f32), axis=axis, "
    "dtype=f32).take(-1, axis=axis)\n";

static void py(fx_t *f, const char *code)
{
    size_t n = strlen(py_prelude) + strlen(code) + 1;
    char *all = malloc(n);
    assert_non_null(all);
    snprintf(all, n, "%s%s", py_prelude, code);
    char *out = NULL;
    int rc = tu_python(all, f->dir, &out);
    free(all);
    if (rc != 0)
        fail_msg("python failed (%d):\n%s", rc, out ? out : "");
    free(out);
}

/* |got - want| <= atol + rtol |want| everywhere (NaN matches NaN, Inf must be equal). */
static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         double rtol, double atol)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!tu_close(got[i], want[i], rtol, atol)) {
            if (bad < 5)
                print_error("%s[%zu]: got %.9g want %.9g\n", what, i, (double)got[i],
                            (double)want[i]);
            bad++;
        }
    if (bad)
        fail_msg("%s: %zu of %zu values differ", what, bad, n);
}
#define EXPECT_EXACT(what, got, want, n) expect_close(what, got, want, n, 0.0, 0.0)

/* ---- Slot layout ------------------------------------------------------------------------------
 */

static void expect_slot(isa_op_t op, unsigned slot, const char *name)
{
    const isa_op_info_t *info = isa_op_info(op);
    if (slot >= info->nslots || strcmp(info->slots[slot].name, name) != 0)
        fail_msg("%s slot %u is \"%s\", exec expects \"%s\"", info->mnemonic, slot,
                 slot < info->nslots ? info->slots[slot].name : "(none)", name);
}

/* The slot numbers exec_internal.h hard-codes match ops.def's signatures. */
static void test_slot_layout(void **state)
{
    (void)state;
    expect_slot(ISA_OP_LDWEIGHTS, SLOT_LDW_STAT, "STAT");
    expect_slot(ISA_OP_MATMUL, SLOT_MM_D, "D");
    expect_slot(ISA_OP_MATMUL, SLOT_MM_MOV, "MOV");
    expect_slot(ISA_OP_MATMUL, SLOT_MM_ACC, "acc");
    expect_slot(ISA_OP_TRANSPOSE, SLOT_TR_SRC, "SRC");
    expect_slot(ISA_OP_ACTIVATE, SLOT_ACT_FUNC, "FUNC");
    expect_slot(ISA_OP_ACTIVATE, SLOT_ACT_SCALE, "scale");
    expect_slot(ISA_OP_ACTIVATE, SLOT_ACT_BIAS, "bias");
    expect_slot(ISA_OP_ACTIVATE, SLOT_ACT_SUM, "sum");
    expect_slot(ISA_OP_ACTIVATE, SLOT_ACT_SUMACC, "sumacc");
    expect_slot(ISA_OP_TENSOR_TENSOR, SLOT_TT_B, "B");
    expect_slot(ISA_OP_TENSOR_TENSOR, SLOT_TT_OP, "OP");
    expect_slot(ISA_OP_TENSOR_SCALAR, SLOT_TS_S0, "S0");
    expect_slot(ISA_OP_TENSOR_SCALAR, SLOT_TS_OP1, "OP1");
    expect_slot(ISA_OP_TENSOR_SCALAR, SLOT_TS_S1, "S1");
    expect_slot(ISA_OP_TENSOR_SCALAR, SLOT_TS_REV0, "rev0");
    expect_slot(ISA_OP_TENSOR_SCALAR, SLOT_TS_REV1, "rev1");
    expect_slot(ISA_OP_SCALAR_TENSOR_TENSOR, SLOT_STT_S0, "S0");
    expect_slot(ISA_OP_SCALAR_TENSOR_TENSOR, SLOT_STT_OP1, "OP1");
    expect_slot(ISA_OP_SCALAR_TENSOR_TENSOR, SLOT_STT_B, "B");
    expect_slot(ISA_OP_TENSOR_REDUCE, SLOT_RED_OP, "OP");
    expect_slot(ISA_OP_TENSOR_REDUCE, SLOT_RED_AXES, "axes");
    expect_slot(ISA_OP_TENSOR_REDUCE, SLOT_RED_NEGATE, "negate");
    expect_slot(ISA_OP_TENSOR_SCAN, SLOT_SCAN_B, "B");
    expect_slot(ISA_OP_TENSOR_SCAN, SLOT_SCAN_OP1, "OP1");
    expect_slot(ISA_OP_TENSOR_SCAN, SLOT_SCAN_INIT, "init");
    expect_slot(ISA_OP_TENSOR_COPY, SLOT_CP_SRC, "SRC");
    expect_slot(ISA_OP_MEMSET, SLOT_MS_VALUE, "VALUE");
    expect_slot(ISA_OP_SELECT, SLOT_SEL_PRED, "PRED");
    expect_slot(ISA_OP_SELECT, SLOT_SEL_A, "A");
    expect_slot(ISA_OP_SELECT, SLOT_SEL_REVERSE, "reverse");
    expect_slot(ISA_OP_RECIPROCAL, SLOT_UN_SRC, "SRC");
    expect_slot(ISA_OP_BN_STATS, SLOT_UN_SRC, "SRC");
    expect_slot(ISA_OP_BN_AGGR, SLOT_UN_SRC, "SRC");
    expect_slot(ISA_OP_MAX8, SLOT_UN_SRC, "SRC");
    expect_slot(ISA_OP_SHUFFLE, SLOT_SHUF_MASK, "mask");
    expect_slot(ISA_OP_FIND_INDEX8, SLOT_FI8_VALS, "VALS");
    expect_slot(ISA_OP_MATCH_REPLACE8, SLOT_MR8_VALS, "VALS");
    expect_slot(ISA_OP_MATCH_REPLACE8, SLOT_MR8_IMM, "IMM");
    expect_slot(ISA_OP_DROPOUT, SLOT_DROP_PROB, "prob");
    expect_slot(ISA_OP_IOTA, SLOT_IOTA_BASE, "base");
    expect_slot(ISA_OP_IOTA, SLOT_IOTA_PSTEP, "pstep");
    expect_slot(ISA_OP_IOTA, SLOT_IOTA_STEPS, "steps");
    expect_slot(ISA_OP_AFFINE_SELECT, SLOT_AS_SRC, "SRC");
    expect_slot(ISA_OP_AFFINE_SELECT, SLOT_AS_BASE, "base");
    expect_slot(ISA_OP_AFFINE_SELECT, SLOT_AS_PSTEP, "pstep");
    expect_slot(ISA_OP_AFFINE_SELECT, SLOT_AS_STEPS, "steps");
    expect_slot(ISA_OP_AFFINE_SELECT, SLOT_AS_CMP, "cmp");
    expect_slot(ISA_OP_AFFINE_SELECT, SLOT_AS_FILL, "fill");
    expect_slot(ISA_OP_PARTITION_REDUCE, SLOT_PR_OP, "OP");
    expect_slot(ISA_OP_DMA, SLOT_DMA_SRC, "SRC");
    expect_slot(ISA_OP_DMA, SLOT_DMA_QUEUE, "queue");
    expect_slot(ISA_OP_DMA, SLOT_DMA_ACCUMULATE, "accumulate");
}

/* ---- Tensor engine -----------------------------------------------------------------------------
 */

/*
 * matmul vs NumPy in float64 from the same (exactly widened) inputs. fp32 accumulation of K
 * products has error at most about K * 2^-24 * sum|w x| (the classic dot-product bound), so
 * we allow 1e-5 of the absolute-value sum Python also reports (K = 128: 128 * 6e-8 = 7.6e-6).
 */
static void matmul_case(fx_t *f, isa_dtype_t tin, uint32_t k, uint32_t m, uint32_t n,
                        uint64_t psum_off)
{
    isa_view_t w = SB(tin, 0, k, 0, m), x1 = SB(tin, 0, k, 4096, n), x2 = SB(tin, 0, k, 8192, n);
    isa_view_t d = PS(ISA_DT_FP32, 0, m, psum_off, n);
    float *wv = put_rand(f, &w, -2.0f, 2.0f), *x1v = put_rand(f, &x1, -2.0f, 2.0f),
          *x2v = put_rand(f, &x2, -2.0f, 2.0f);
    save(f, "w", wv, (size_t)k * m);
    save(f, "x1", x1v, (size_t)k * n);
    save(f, "x2", x2v, (size_t)k * n);
    char code[1024];
    snprintf(code, sizeof code,
             "K, M, N = %u, %u, %u\n"
             "w = ld('w').astype(np.float64).reshape(K, M)\n"
             "x1 = ld('x1').astype(np.float64).reshape(K, N)\n"
             "x2 = ld('x2').astype(np.float64).reshape(K, N)\n"
             "sv('mm1', w.T @ x1); sv('mm2', w.T @ x1 + w.T @ x2)\n"
             "sv('bound', np.abs(w).T @ (np.abs(x1) + np.abs(x2)))\n",
             k, m, n);
    py(f, code);
    float *want1 = load(f, "mm1", (size_t)m * n), *want2 = load(f, "mm2", (size_t)m * n),
          *bound = load(f, "bound", (size_t)m * n);
    float maxb = 0.0f;
    for (size_t i = 0; i < (size_t)m * n; i++)
        maxb = bound[i] > maxb ? bound[i] : maxb;

    EXPECT_OK(RUN(f, ISA_OP_LDWEIGHTS, ISA_ENGINE_PE, av(f, w)));
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x1)));
    float *got = get(f, &d);
    expect_close("matmul", got, want1, (size_t)m * n, 0.0, 1e-5 * maxb);
    free(got);
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x2), ai(1)));
    got = get(f, &d);
    expect_close("matmul acc", got, want2, (size_t)m * n, 0.0, 1e-5 * maxb);
    free(got);
    free(wv);
    free(x1v);
    free(x2v);
    free(want1);
    free(want2);
    free(bound);
}

/*
 * The widening of a moving tile is reused across stationaries only while its bytes are
 * unchanged (exec.c widened_moving, mem.c watches): W1^T X, W2^T X, then X changed by an
 * engine (memset of one element) and by a host write (one partition), each result against
 * NumPy from the bytes X holds at that moment. A write elsewhere keeps the watch.
 */
static void test_matmul_reuses_only_unchanged_tiles(void **state)
{
    fx_t *f = *state;
    const uint32_t k = 64, m = 32, n = 96;
    isa_view_t w1 = SB(ISA_DT_BF16, 0, k, 0, m), w2 = SB(ISA_DT_BF16, 0, k, 1024, m),
               x = SB(ISA_DT_BF16, 0, k, 4096, n), other = SB(ISA_DT_BF16, 0, k, 8192, n);
    isa_view_t d = PS(ISA_DT_FP32, 0, m, 0, n);
    float *w1v = put_rand(f, &w1, -2.0f, 2.0f), *w2v = put_rand(f, &w2, -2.0f, 2.0f);
    free(put_rand(f, &x, -2.0f, 2.0f));
    save(f, "w1", w1v, (size_t)k * m);
    save(f, "w2", w2v, (size_t)k * m);
    for (int step = 0; step < 4; step++) {
        const int first = step == 0;
        if (step == 2) /* an engine writes one element in the middle of X */
            EXPECT_OK(RUN(f, ISA_OP_MEMSET, ISA_ENGINE_DVE, av(f, SB(ISA_DT_BF16, 17, 1, 4096 + 2 * 50, 1)),
                          af(7.5)));
        if (step == 3) { /* the host rewrites partition 40 of X; a write beside X keeps it */
            free(put_rand(f, &other, -1.0f, 1.0f));
            const isa_view_t row = SB(ISA_DT_BF16, 40, 1, 4096, n);
            free(put_rand(f, &row, -3.0f, 3.0f));
        }
        float *xv = get(f, &x);
        save(f, "x", xv, (size_t)k * n);
        free(xv);
        py(f, "K, M, N = 64, 32, 96\n"
              "x = ld('x').astype(np.float64).reshape(K, N)\n"
              "for name in ('w1', 'w2'):\n"
              "    w = ld(name).astype(np.float64).reshape(K, M)\n"
              "    sv('mm_' + name, w.T @ x)\n"
              "    sv('bound_' + name, np.abs(w).T @ np.abs(x))\n");
        for (int which = 0; which < 2; which++) {
            const char *name = which ? "w2" : "w1";
            char mm[16], bd[16];
            snprintf(mm, sizeof mm, "mm_%s", name);
            snprintf(bd, sizeof bd, "bound_%s", name);
            float *want = load(f, mm, (size_t)m * n), *bound = load(f, bd, (size_t)m * n);
            float maxb = 0.0f;
            for (size_t i = 0; i < (size_t)m * n; i++)
                maxb = bound[i] > maxb ? bound[i] : maxb;
            EXPECT_OK(RUN(f, ISA_OP_LDWEIGHTS, ISA_ENGINE_PE, av(f, which ? w2 : w1)));
            EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x)));
            float *got = get(f, &d);
            expect_close(first ? "matmul, fresh" : "matmul, after a change", got, want,
                         (size_t)m * n, 0.0, 1e-5 * maxb);
            free(got);
            free(want);
            free(bound);
        }
        /* after the two matmuls X is watched; a write beside it leaves the watch live */
        int live = 0;
        for (unsigned i = 0; i < MDL_ONCHIP_WATCHES; i++)
            live += mdl_view_watch_live(&f->mem, ISA_SPACE_SBUF, i);
        assert_int_equal(live, 1);
        free(put_rand(f, &other, -1.0f, 1.0f));
        live = 0;
        for (unsigned i = 0; i < MDL_ONCHIP_WATCHES; i++)
            live += mdl_view_watch_live(&f->mem, ISA_SPACE_SBUF, i);
        assert_int_equal(live, 1);
    }
    /* a write overlapping X ends the watch */
    const isa_view_t last = SB(ISA_DT_BF16, 0, 1, 4096 + 2 * (n - 1), 1);
    free(put_rand(f, &last, 0.0f, 1.0f));
    int live = 0;
    for (unsigned i = 0; i < MDL_ONCHIP_WATCHES; i++)
        live += mdl_view_watch_live(&f->mem, ISA_SPACE_SBUF, i);
    assert_int_equal(live, 0);
    free(w1v);
    free(w2v);
}

static void test_matmul_bf16(void **state)
{
    matmul_case(*state, ISA_DT_BF16, 128, 96, 200, 2048); /* D in bank 1 */
}
static void test_matmul_fp32(void **state)
{
    matmul_case(*state, ISA_DT_FP32, 64, 128, 512, 0);
}
static void test_matmul_fp8e4(void **state)
{
    matmul_case(*state, ISA_DT_FP8E4, 32, 16, 48, 6 * 2048 + 512);
}

static void test_matmul_errors(void **state)
{
    fx_t *f = *state;
    isa_view_t w = SB(ISA_DT_BF16, 0, 64, 0, 32), x = SB(ISA_DT_BF16, 0, 64, 1024, 100);
    isa_view_t d = PS(ISA_DT_FP32, 0, 32, 0, 100);
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x)),
               "matmul: no weights are loaded in the PE array");
    EXPECT_OK(RUN(f, ISA_OP_LDWEIGHTS, ISA_ENGINE_PE, av(f, w)));
    isa_view_t x32 = SB(ISA_DT_BF16, 0, 32, 1024, 100);
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x32)),
               "MOV has 32 partitions (K) but the loaded weights have K = 64");
    /* Accumulating into PSUM nobody wrote. */
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x), ai(1)),
               "accumulating (acc) into PSUM partitions 0..31, bytes 0..400 that were never "
               "written");
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x)));
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x), ai(1)));
    /* act overwrites a part of it: accumulation is now refused, naming that part. */
    isa_view_t part = PS(ISA_DT_FP32, 4, 2, 40, 10);
    EXPECT_OK(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, part), av(f, part), ai(ISA_FUNC_COPY)));
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x), ai(1)),
               "accumulating (acc) into PSUM partitions 4..5, bytes 40..80 that were last "
               "written by another engine than pe");
    /* A fresh group (no acc) makes it pe's again. */
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x)));
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x), ai(1)));
    /* dve writes (memset) count as well. */
    EXPECT_OK(
        RUN(f, ISA_OP_MEMSET, ISA_ENGINE_DVE, av(f, PS(ISA_DT_FP32, 31, 1, 396, 1)), af(0.0)));
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, x), ai(1)),
               "partitions 31..31, bytes 396..400");
    /* The same with whole banks, which the check skips once pe has filled them: one word
     * written by dve inside such a bank is still found, and a fresh group clears it. */
    isa_view_t dbank = PS(ISA_DT_FP32, 0, 32, 2048, 512), x512 = SB(ISA_DT_BF16, 0, 64, 8192, 512);
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, dbank), av(f, x512)));
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, dbank), av(f, x512), ai(1)));
    EXPECT_OK(RUN(f, ISA_OP_MEMSET, ISA_ENGINE_DVE,
                  av(f, PS(ISA_DT_FP32, 7, 1, 2048 + 4 * 300, 1)), af(0.0)));
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, dbank), av(f, x512), ai(1)),
               "partitions 7..7, bytes 3248..3252");
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, dbank), av(f, x512)));
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, dbank), av(f, x512), ai(1)));

    isa_view_t cross = PS(ISA_DT_FP32, 0, 32, 2048 - 200, 100);
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, cross), av(f, x)),
               "D bytes 1848..2248 cross a PSUM bank boundary");
    isa_view_t dbf = PS(ISA_DT_BF16, 0, 32, 0, 100);
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, dbf), av(f, x)),
               "D has type bf16; it must be fp32");
    isa_view_t d64 = PS(ISA_DT_FP32, 0, 64, 0, 100);
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d64), av(f, x)),
               "D has 64 partitions but the loaded weights have M = 32 columns");
    isa_view_t xbig = SB(ISA_DT_BF16, 0, 64, 1024, 600);
    EXPECT_ERR(
        RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, PS(ISA_DT_FP32, 0, 32, 0, 600)), av(f, xbig)),
        "MOV has 600 free elements (N); at most 512");
    isa_view_t xi = SB(ISA_DT_I32, 0, 64, 1024, 100);
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, xi)),
               "MOV has type i32; the PE array takes");
    EXPECT_ERR(
        RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d), av(f, PS(ISA_DT_BF16, 0, 64, 0, 100))),
        "MOV is in PSUM; on pe it must be in SBUF");
    EXPECT_ERR(RUN(f, ISA_OP_LDWEIGHTS, ISA_ENGINE_PE, av(f, SB(ISA_DT_BF16, 0, 64, 0, 130))),
               "STAT has 130 free elements (M); at most 128");
    EXPECT_ERR(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_DVE, av(f, d), av(f, x)),
               "matmul: not an instruction of engine dve");
}

static void test_transpose(void **state)
{
    fx_t *f = *state;
    /* pe: [100, 70] bf16 SBUF -> [70, 100] fp32 PSUM, exact. */
    isa_view_t src = SB(ISA_DT_BF16, 0, 100, 0, 70), d = PS(ISA_DT_FP32, 0, 70, 0, 100);
    float *sv = put_rand(f, &src, -5.0f, 5.0f);
    EXPECT_OK(RUN(f, ISA_OP_TRANSPOSE, ISA_ENGINE_PE, av(f, d), av(f, src)));
    float *got = get(f, &d);
    for (unsigned p = 0; p < 100; p++)
        for (unsigned j = 0; j < 70; j++)
            assert_true(got[j * 100 + p] == sv[p * 70 + j]);
    free(got);
    /* It counts as a pe write: a matmul may accumulate onto it. */
    EXPECT_OK(RUN(f, ISA_OP_LDWEIGHTS, ISA_ENGINE_PE, av(f, SB(ISA_DT_BF16, 0, 16, 4096, 70))));
    EXPECT_OK(RUN(f, ISA_OP_MATMUL, ISA_ENGINE_PE, av(f, d),
                  av(f, SB(ISA_DT_BF16, 0, 16, 8192, 100)), ai(1)));
    EXPECT_ERR(
        RUN(f, ISA_OP_TRANSPOSE, ISA_ENGINE_PE, av(f, PS(ISA_DT_FP32, 0, 70, 0, 99)), av(f, src)),
        "D has 70 partitions x 99 elements; the transpose of SRC [100, 70] needs 70 "
        "partitions x 100 elements");

    /* dve: [20, 32] fp32 PSUM -> [32, 20] bf16 SBUF (rounded), and i32 exact. */
    isa_view_t ps = PS(ISA_DT_FP32, 32, 20, 8192, 32), sb = SB(ISA_DT_BF16, 0, 32, 0, 20);
    float *pv = put_rand(f, &ps, -3.0f, 3.0f);
    EXPECT_OK(RUN(f, ISA_OP_TRANSPOSE, ISA_ENGINE_DVE, av(f, sb), av(f, ps)));
    got = get(f, &sb);
    for (unsigned p = 0; p < 20; p++)
        for (unsigned j = 0; j < 32; j++)
            assert_true(got[j * 20 + p] ==
                        mdl_round_f32(ISA_DT_BF16, pv[p * 32 + j], MDL_ROUND_NEAREST_EVEN, NULL));
    free(got);
    isa_view_t si = SB(ISA_DT_I32, 64, 3, 0, 5), di = SB(ISA_DT_I32, 96, 5, 0, 3);
    int64_t iv[15];
    for (int i = 0; i < 15; i++)
        iv[i] = 100000007ll * (i + 1) * (i % 2 ? -1 : 1);
    put_i(f, &si, iv);
    EXPECT_OK(RUN(f, ISA_OP_TRANSPOSE, ISA_ENGINE_DVE, av(f, di), av(f, si)));
    int64_t *gi = get_i(f, &di);
    for (unsigned p = 0; p < 3; p++)
        for (unsigned j = 0; j < 5; j++)
            assert_int_equal(gi[j * 3 + p], iv[p * 5 + j]);
    free(gi);
    EXPECT_ERR(RUN(f, ISA_OP_TRANSPOSE, ISA_ENGINE_DVE, av(f, SB(ISA_DT_FP32, 0, 40, 0, 20)),
                   av(f, SB(ISA_DT_FP32, 0, 20, 0, 40))),
               "SRC is [20, 40]; transpose on dve takes at most [32, 32]");
    free(sv);
    free(pv);
}

/* ---- Scalar engine ----------------------------------------------------------------------------
 */

/* Input range of each activation function in the test (inside the hardware's valid range). */
static void func_range(isa_func_t fn, float *lo, float *hi)
{
    *lo = -6.0f;
    *hi = 6.0f;
    switch (fn) {
    case ISA_FUNC_LOG:
    case ISA_FUNC_SQRT:
    case ISA_FUNC_RSQRT:
        *lo = 0.01f;
        *hi = 10.0f;
        break;
    case ISA_FUNC_RECIPROCAL:
        *lo = 0.1f;
        *hi = 10.0f;
        break;
    case ISA_FUNC_SIN:
        *lo = -3.14f;
        *hi = 3.14f;
        break;
    case ISA_FUNC_ARCTAN:
        *lo = -1.5f;
        *hi = 1.5f;
        break;
    case ISA_FUNC_EXP:
        *lo = -10.0f;
        *hi = 10.0f;
        break;
    default:
        break;
    }
}

static const char py_funcs[] =
    "import math\n"
    "erf = np.vectorize(math.erf)\n"
    "def sig(t): return 1 / (1 + np.exp(-t))\n"
    "def softplus(t): return np.logaddexp(0, t)\n"
    "FN = {\n"
    " 'identity': lambda t: t, 'copy': lambda t: t, 'square': lambda t: t * t,\n"
    " 'sigmoid': sig, 'relu': lambda t: np.maximum(t, 0),\n"
    " 'gelu': lambda t: 0.5 * t * (1 + erf(t / math.sqrt(2))),\n"
    " 'gelu_tanh': lambda t: 0.5 * t * (1 + np.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * "
    "t**3))),\n"
    " 'gelu_sigmoid': lambda t: t * sig(1.702 * t), 'silu': lambda t: t * sig(t),\n"
    " 'tanh': np.tanh, 'softplus': softplus, 'mish': lambda t: t * np.tanh(softplus(t)),\n"
    " 'erf': erf, 'exp': np.exp, 'log': np.log, 'sqrt': np.sqrt,\n"
    " 'rsqrt': lambda t: 1 / np.sqrt(t), 'reciprocal': lambda t: 1 / t, 'sign': np.sign,\n"
    " 'abs': np.abs, 'sin': np.sin, 'arctan': np.arctan,\n"
    " 'gelu_dx': lambda t: 0.5 * (1 + erf(t / math.sqrt(2))) + t * np.exp(-t * t / 2) / "
    "math.sqrt(2 * math.pi),\n"
    " 'silu_dx': lambda t: sig(t) * (1 + t * (1 - sig(t))),\n"
    " 'erf_dx': lambda t: 2 / math.sqrt(math.pi) * np.exp(-t * t)}\n";

/*
 * Every activation function, fp32 in and out, with a per-partition scale vector and a bias
 * vector, against NumPy in float64 on the same fp32 argument t = f32(f32(x * scale) + bias).
 * Tolerance: the C library's float functions are within ~2 ulp (2.4e-7 relative); composed
 * functions (gelu, gelu_tanh, mish) suffer cancellation in 1 + erf/tanh, whose absolute error
 * is about ulp(1) = 1.2e-7 times |t|/2. So rtol 1e-5 plus atol 1e-6 * (1 + |t|) is generous
 * yet catches any wrong formula (which errs by > 1e-3).
 */
static void test_activate_all_functions(void **state)
{
    fx_t *f = *state;
    enum { P = 8, F = 96 };
    static char code[32768];
    size_t used = (size_t)snprintf(code, sizeof code, "%s", py_funcs);
    for (int fn = 0; fn < ISA_FUNC_COUNT; fn++) {
        float lo, hi;
        func_range((isa_func_t)fn, &lo, &hi);
        /* scale in [0.9, 1.1] and bias in [-0.05, 0.05] keep t inside the range. */
        isa_view_t src = SB(ISA_DT_FP32, 0, P, 0, F), d = SB(ISA_DT_FP32, 0, P, 4096, F);
        isa_view_t sc = SB(ISA_DT_FP32, 0, P, 8192, 1), bi = SB(ISA_DT_FP32, 0, P, 8196, 1);
        float *x = put_rand(f, &src, lo * 0.9f, hi * 0.9f), *s = put_rand(f, &sc, 0.9f, 1.1f),
              *b = put_rand(f, &bi, -0.05f, 0.05f);
        if (fn == ISA_FUNC_LOG || fn == ISA_FUNC_SQRT || fn == ISA_FUNC_RSQRT ||
            fn == ISA_FUNC_RECIPROCAL)
            for (int p = 0; p < P; p++)
                b[p] = 0.0f; /* keep the argument positive */
        put(f, &bi, b);
        EXPECT_OK(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, d), av(f, src), ai(fn), asv(f, sc),
                      av(f, bi)));
        float *got = get(f, &d);
        char name[32];
        snprintf(name, sizeof name, "x%d", fn);
        save(f, name, x, P * F);
        snprintf(name, sizeof name, "s%d", fn);
        save(f, name, s, P);
        snprintf(name, sizeof name, "b%d", fn);
        save(f, name, b, P);
        snprintf(name, sizeof name, "g%d", fn);
        save(f, name, got, P * F);
        used += (size_t)snprintf(
            code + used, sizeof code - used,
            "x, s, b, g = ld('x%d').reshape(%d, %d), ld('s%d'), ld('b%d'), ld('g%d')\n"
            "t = ((x * s[:, None]).astype(f32) + b[:, None]).astype(f32).astype(np.float64)\n"
            "w = FN['%s'](t).astype(f32)\n"
            "bad = ~(np.isclose(g.reshape(t.shape), w, rtol=1e-5, atol=0) | "
            "(np.abs(g.reshape(t.shape) - w) <= 1e-6 * (1 + np.abs(t))))\n"
            "if bad.any():\n"
            "    i = np.argwhere(bad)[0]\n"
            "    print('%s', bad.sum(), t[tuple(i)], g.reshape(t.shape)[tuple(i)], w[tuple(i)]); "
            "sys.exit(1)\n",
            fn, P, F, fn, fn, fn, isa_func_name((isa_func_t)fn), isa_func_name((isa_func_t)fn));
        assert_true(used < sizeof code);
        free(x);
        free(s);
        free(b);
        free(got);
    }
    py(f, code);
}

/*
 * bf16 destination with an immediate scale and sum= / sumacc=: D is rounded to bf16; the sums
 * are of D's values as written (sequential fp32). The function values themselves may differ by
 * an ulp of fp32 from NumPy's, which can flip a bf16 rounding: D is compared within one bf16
 * ulp (2^-8 relative) and the sums within 2^-8 of the sum of |D|.
 */
static void test_activate_bf16_sum(void **state)
{
    fx_t *f = *state;
    enum { P = 16, F = 200 };
    isa_view_t src = SB(ISA_DT_FP16, 16, P, 0, F), d = SB(ISA_DT_BF16, 16, P, 4096, F);
    isa_view_t r = SB(ISA_DT_FP32, 16, P, 8192, 1), r2 = PS(ISA_DT_FP32, 16, P, 0, 1);
    float *x = put_rand(f, &src, -3.0f, 3.0f);
    float *r2init = put_rand(f, &r2, -10.0f, 10.0f);
    EXPECT_OK(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, d), av(f, src), ai(ISA_FUNC_EXP),
                  af(0.5), NONE, av(f, r)));
    float *got = get(f, &d), *gr = get(f, &r);
    /* The sums are exactly the sequential fp32 sums of D as stored. */
    for (int p = 0; p < P; p++) {
        float s = 0.0f;
        for (int i = 0; i < F; i++)
            s += got[p * F + i];
        assert_true(s == gr[p]);
    }
    EXPECT_OK(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, d), av(f, src), ai(ISA_FUNC_GELU), NONE,
                  NONE, NONE, av(f, r2)));
    float *got2 = get(f, &d), *gr2 = get(f, &r2);
    save(f, "x", x, P * F);
    save(f, "r2init", r2init, P);
    save(f, "exp", got, P * F);
    save(f, "gelu", got2, P * F);
    save(f, "sum", gr, P);
    save(f, "sumacc", gr2, P);
    char code[4096];
    snprintf(code, sizeof code,
             "%s"
             "x = ld('x').reshape(%d, %d).astype(np.float64)\n"
             "we = bf16(np.exp((x.astype(f32) * f32(0.5)).astype(np.float64)).astype(f32))\n"
             "wg = bf16(FN['gelu'](x).astype(f32))\n"
             "ge, gg = ld('exp').reshape(we.shape), ld('gelu').reshape(wg.shape)\n"
             "assert np.allclose(ge, we, rtol=2**-8, atol=0), 'exp'\n"
             "assert np.allclose(gg, wg, rtol=2**-8, atol=1e-30), 'gelu'\n"
             "ws = np.abs(we).sum(1)\n"
             "assert (np.abs(ld('sum') - we.sum(1)) <= 2**-8 * ws).all(), 'sum'\n"
             "wa = ld('r2init') + wg.sum(1)\n"
             "assert (np.abs(ld('sumacc') - wa) <= 2**-8 * (np.abs(wg).sum(1) + 1e-6)).all(), "
             "'sumacc'\n",
             py_funcs, P, F);
    py(f, code);
    EXPECT_ERR(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, d), av(f, src), ai(ISA_FUNC_EXP), NONE,
                   NONE, av(f, r), av(f, r2)),
               "sum= and sumacc= are exclusive");
    EXPECT_ERR(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, d), av(f, src), ai(ISA_FUNC_EXP), NONE,
                   NONE, av(f, SB(ISA_DT_BF16, 16, P, 8192, 1))),
               "sum has type bf16; it must be fp32");
    EXPECT_ERR(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, d), av(f, src), ai(ISA_FUNC_EXP), NONE,
                   av(f, SB(ISA_DT_FP32, 16, P, 8192, 2))),
               "bias must be a [16, 1] per-partition vector");
    free(x);
    free(r2init);
    free(got);
    free(gr);
    free(got2);
    free(gr2);
}

/* Special values through the simple functions: zeros keep their sign, NaN propagates. */
static void test_activate_edge_values(void **state)
{
    fx_t *f = *state;
    isa_view_t src = SB(ISA_DT_FP32, 0, 1, 0, 6), d = SB(ISA_DT_FP32, 0, 1, 100, 6);
    const float x[6] = {0.0f, -0.0f, 3.0f, -2.0f, NAN, INFINITY};
    put(f, &src, x);
    const struct {
        isa_func_t fn;
        float want[6];
    } cases[] = {
        {ISA_FUNC_SIGN, {0.0f, -0.0f, 1.0f, -1.0f, NAN, 1.0f}},
        {ISA_FUNC_RELU, {0.0f, 0.0f, 3.0f, 0.0f, NAN, INFINITY}},
        {ISA_FUNC_ABS, {0.0f, 0.0f, 3.0f, 2.0f, NAN, INFINITY}},
        {ISA_FUNC_RECIPROCAL, {INFINITY, -INFINITY, 1.0f / 3.0f, -0.5f, NAN, 0.0f}},
        {ISA_FUNC_SIGMOID,
         {0.5f, 0.5f, 1.0f / (1.0f + expf(-3.0f)), 1.0f / (1.0f + expf(2.0f)), NAN, 1.0f}},
        {ISA_FUNC_SOFTPLUS,
         {logf(2.0f), logf(2.0f), 3.0f + log1pf(expf(-3.0f)), log1pf(expf(-2.0f)), NAN, INFINITY}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        EXPECT_OK(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, d), av(f, src), ai(cases[c].fn)));
        float *g = get(f, &d);
        /* The expectations are folded at compile time (correctly rounded); glibc's float
         * functions may be an ulp away: allow 2 ulp (2.4e-7 relative). */
        expect_close(isa_func_name(cases[c].fn), g, cases[c].want, 6, 2.4e-7, 0.0);
        if (cases[c].fn == ISA_FUNC_SIGN)
            assert_true(signbit(g[1]) && !signbit(g[0]));
        free(g);
    }
}

/* ---- ALU: every operator -------------------------------------------------------------------- */

static const char *const float_ops[] = {"add",       "subtract",    "multiply",   "divide",
                                        "max",       "min",         "pow",        "is_equal",
                                        "not_equal", "is_ge",       "is_gt",      "is_le",
                                        "is_lt",     "logical_and", "logical_or", "logical_xor",
                                        "mod",       "fmod"};

static const char py_alu[] =
    "OPS = {'add': np.add, 'subtract': np.subtract, 'multiply': np.multiply,\n"
    " 'divide': np.divide, 'max': np.maximum, 'min': np.minimum, 'pow': np.power,\n"
    " 'is_equal': lambda a, b: (a == b).astype(f32), 'not_equal': lambda a, b: (a != "
    "b).astype(f32),\n"
    " 'is_ge': lambda a, b: (a >= b).astype(f32), 'is_gt': lambda a, b: (a > b).astype(f32),\n"
    " 'is_le': lambda a, b: (a <= b).astype(f32), 'is_lt': lambda a, b: (a < b).astype(f32),\n"
    " 'logical_and': lambda a, b: ((a != 0) & (b != 0)).astype(f32),\n"
    " 'logical_or': lambda a, b: ((a != 0) | (b != 0)).astype(f32),\n"
    " 'logical_xor': lambda a, b: ((a != 0) ^ (b != 0)).astype(f32),\n"
    " 'mod': np.mod, 'fmod': np.fmod}\n";

/*
 * tensor_tensor with every float operator, in fp32, bf16, fp16 and fp8e4 (A, B and D of that
 * type). NumPy float32 arithmetic is the same IEEE fp32 operation, then the same RNE rounding
 * to the storage type: exact equality, except pow (the C library's powf and NumPy's may differ
 * by an ulp of fp32: 2.4e-7 relative, then possibly one ulp of the storage type).
 */
static void test_tensor_tensor_all_float_ops(void **state)
{
    fx_t *f = *state;
    enum { P = 4, F = 64, NOPS = sizeof float_ops / sizeof float_ops[0] };
    const isa_dtype_t types[] = {ISA_DT_FP32, ISA_DT_BF16, ISA_DT_FP16, ISA_DT_FP8E4};
    const double pow_rtol[] = {1e-6, 2.0 / 256, 2.0 / 2048, 2.0 / 16};
    static float got[4][NOPS][P * F];
    char name[32];
    for (unsigned t = 0; t < 4; t++) {
        for (unsigned k = 0; k < NOPS; k++) {
            int op = isa_alu_lookup(float_ops[k], strlen(float_ops[k]));
            assert_true(op >= 0);
            isa_view_t a = SB(types[t], 0, P, 0, F), b = SB(types[t], 0, P, 1024, F),
                       d = SB(types[t], 0, P, 2048, F);
            int is_pow = op == ISA_ALU_POW;
            float *av_ = rand_fill(f, P * F, is_pow ? 0.1f : -4.0f, 4.0f);
            float *bv = rand_fill(f, P * F, is_pow ? -2.0f : -4.0f, is_pow ? 2.0f : 4.0f);
            for (int i = 0; i < P * F; i += 7)
                bv[i] = av_[i]; /* equal pairs for the comparisons */
            bv[3] = 0.0f;       /* division by zero, logical with zero */
            bv[5] = 0.0f;
            av_[5] = 0.0f; /* 0/0 = NaN */
            put(f, &a, av_);
            put(f, &b, bv);
            mdl_view_read_f32(&f->mem, &b, bv);
            mdl_view_read_f32(&f->mem, &a, av_);
            EXPECT_OK(
                RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, d), av(f, a), av(f, b), ai(op)));
            mdl_view_read_f32(&f->mem, &d, got[t][k]);
            snprintf(name, sizeof name, "a_%u_%u", t, k);
            save(f, name, av_, P * F);
            snprintf(name, sizeof name, "b_%u_%u", t, k);
            save(f, name, bv, P * F);
            free(av_);
            free(bv);
        }
    }
    char code[2048];
    snprintf(code, sizeof code,
             "%s"
             "T, K = ['fp32', 'bf16', 'fp16', 'fp8e4'], %s\n"
             "for t in range(4):\n"
             "    for k in range(len(K)):\n"
             "        a, b = ld('a_%%d_%%d' %% (t, k)), ld('b_%%d_%%d' %% (t, k))\n"
             "        sv('r_%%d_%%d' %% (t, k), RND[T[t]](OPS[K[k]](a, b)))\n",
             py_alu,
             "['add', 'subtract', 'multiply', 'divide', 'max', 'min', 'pow', 'is_equal', "
             "'not_equal', 'is_ge', 'is_gt', 'is_le', 'is_lt', 'logical_and', 'logical_or', "
             "'logical_xor', 'mod', 'fmod']");
    py(f, code);
    for (unsigned t = 0; t < 4; t++)
        for (unsigned k = 0; k < NOPS; k++) {
            snprintf(name, sizeof name, "r_%u_%u", t, k);
            float *want = load(f, name, P * F);
            char what[64];
            snprintf(what, sizeof what, "%s %s", float_ops[k], isa_dtype_name(types[t]));
            expect_close(what, got[t][k], want, P * F,
                         strcmp(float_ops[k], "pow") == 0 ? pow_rtol[t] : 0.0, 0.0);
            free(want);
        }
}

/* Bitwise operators and shifts on i32 (and u8): exact integer results vs NumPy int64. */
static void test_bitwise_ops(void **state)
{
    fx_t *f = *state;
    enum { P = 4, F = 50, N = P * F };
    const char *ops[] = {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"};
    int64_t a[N], b[N];
    for (int i = 0; i < N; i++) {
        f->seed = f->seed * 1664525u + 1013904223u;
        a[i] = (int64_t)(int32_t)(f->seed ^ (f->seed << 7));
        f->seed = f->seed * 1664525u + 1013904223u;
        b[i] = (int64_t)(int32_t)f->seed;
    }
    save_i(f, "a", a, N);
    for (unsigned k = 0; k < 5; k++) {
        int op = isa_alu_lookup(ops[k], strlen(ops[k]));
        int64_t bb[N];
        for (int i = 0; i < N; i++)
            bb[i] = k >= 3 ? (b[i] & 31) : b[i];
        isa_view_t va = SB(ISA_DT_I32, 32, P, 0, F), vb = SB(ISA_DT_I32, 32, P, 400, F),
                   vd = SB(ISA_DT_I32, 32, P, 800, F);
        put_i(f, &va, a);
        put_i(f, &vb, bb);
        EXPECT_OK(
            RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, vd), av(f, va), av(f, vb), ai(op)));
        int64_t *got = get_i(f, &vd);
        char name[16];
        snprintf(name, sizeof name, "g%u", k);
        save_i(f, name, got, N);
        snprintf(name, sizeof name, "b%u", k);
        save_i(f, name, bb, N);
        free(got);
    }
    /* u8 xor and i32 (x & 0xff) << 3 through tensor_scalar with immediates. */
    int64_t u[N];
    for (int i = 0; i < N; i++)
        u[i] = a[i] & 0xff;
    isa_view_t vu = SB(ISA_DT_U8, 0, P, 0, F), vu2 = SB(ISA_DT_U8, 0, P, 100, F),
               vud = SB(ISA_DT_U8, 0, P, 200, F);
    put_i(f, &vu, u);
    put_i(f, &vu2, b);
    int64_t *ub = get_i(f, &vu2); /* b saturated into u8 */
    save_i(f, "ub", ub, N);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, vud), av(f, vu), av(f, vu2),
                  ai(ISA_ALU_BITWISE_XOR)));
    int64_t *gx = get_i(f, &vud);
    save_i(f, "gx", gx, N);
    isa_view_t va = SB(ISA_DT_I32, 32, P, 0, F), vd = SB(ISA_DT_I32, 32, P, 800, F);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, vd), av(f, va),
                  ai(ISA_ALU_BITWISE_AND), af(255), ai(ISA_ALU_SHIFT_LEFT), af(3)));
    int64_t *gs = get_i(f, &vd);
    save_i(f, "gs", gs, N);
    /* shift_left that overflows 32 bits wraps (1 << 31 is INT32_MIN). */
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, vd), av(f, va),
                  ai(ISA_ALU_SHIFT_LEFT), af(31)));
    int64_t *gw = get_i(f, &vd);
    save_i(f, "gw", gw, N);
    py(f, "a = ldi('a')\n"
          "ops = [np.bitwise_and, np.bitwise_or, np.bitwise_xor,\n"
          "       lambda x, y: ((x.astype(np.uint64) << y.astype(np.uint64)) & 0xffffffff),\n"
          "       lambda x, y: ((x & 0xffffffff) >> y)]\n"
          "def i32(v): v = np.asarray(v, np.int64) & 0xffffffff; return np.where(v >= 2**31, v - "
          "2**32, v)\n"
          "for k in range(5):\n"
          "    w = i32(ops[k](a, ldi('b%d' % k)))\n"
          "    assert (ldi('g%d' % k) == w).all(), k\n"
          "assert (ldi('gx') == ((a & 0xff) ^ ldi('ub'))).all(), 'u8 xor'\n"
          "assert (ldi('gs') == i32((a & 255) << 3)).all(), 'and-shift'\n"
          "assert (ldi('gw') == i32(a << 31)).all(), 'wrap'\n");
    free(ub);
    free(gx);
    free(gs);
    free(gw);

    /* Integer-only operators on float types are errors. */
    isa_view_t fa = SB(ISA_DT_FP32, 0, P, 0, F);
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, fa), av(f, fa), av(f, va),
                   ai(ISA_ALU_BITWISE_AND)),
               "tensor_tensor: bitwise_and needs integer operands, but A is fp32");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, vd), av(f, fa),
                   ai(ISA_ALU_SHIFT_RIGHT), af(2)),
               "shift_right needs integer operands, but SRC is fp32");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, vd), av(f, va),
                   ai(ISA_ALU_BITWISE_OR), af(2.5)),
               "S0 = 2.5 is not an integer (bitwise_or needs integers)");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, SB(ISA_DT_I32, 0, P, 0, 1)),
                   av(f, fa), ai(ISA_ALU_BITWISE_XOR), ai(1)),
               "bitwise_xor needs integer operands, but SRC is fp32");
}

/* tensor_scalar: immediates, per-partition vectors, two ops, rev0/rev1 (exact vs NumPy). */
static void test_tensor_scalar(void **state)
{
    fx_t *f = *state;
    enum { P = 32, F = 40 };
    isa_view_t src = SB(ISA_DT_FP32, 64, P, 0, F), d = SB(ISA_DT_BF16, 64, P, 1000, F);
    isa_view_t s1 = SB(ISA_DT_FP32, 64, P, 2000, 1);
    float *x = put_rand(f, &src, -5.0f, 5.0f), *sv = put_rand(f, &s1, 0.5f, 2.0f);
    /* D = bf16( (S0 - x) / s1[p] ) with rev0 on the subtract, then (x * 3) max 0.5 reversed. */
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_ACT, av(f, d), av(f, src),
                  ai(ISA_ALU_SUBTRACT), af(1.25), ai(ISA_ALU_DIVIDE), asv(f, s1), ai(1)));
    float *g1 = get(f, &d);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_POOL, av(f, d), av(f, src),
                  ai(ISA_ALU_MULTIPLY), af(3), ai(ISA_ALU_DIVIDE), af(7), NONE, ai(1)));
    float *g2 = get(f, &d);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, d), av(f, src), ai(ISA_ALU_IS_GT),
                  asv(f, s1)));
    float *g3 = get(f, &d);
    save(f, "x", x, P * F);
    save(f, "s", sv, P);
    save(f, "g1", g1, P * F);
    save(f, "g2", g2, P * F);
    save(f, "g3", g3, P * F);
    py(f, "x, s = ld('x').reshape(32, 40), ld('s')[:, None]\n"
          "assert (ld('g1').reshape(x.shape) == bf16((f32(1.25) - x) / s)).all(), 'g1'\n"
          "assert (ld('g2').reshape(x.shape) == bf16(f32(7) / (x * f32(3)))).all(), 'g2'\n"
          "assert (ld('g3').reshape(x.shape) == (x > s).astype(f32)).all(), 'g3'\n");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, d), av(f, src), ai(ISA_ALU_ADD),
                   asv(f, SB(ISA_DT_FP32, 64, P, 2000, 2))),
               "S0 must be an immediate or a [32, 1] per-partition vector, but it has 32 "
               "partitions x 2 elements");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, d), av(f, src), ai(ISA_ALU_ADD),
                   af(1), ai(ISA_ALU_ADD)),
               "OP1 is given without S1");
    free(x);
    free(sv);
    free(g1);
    free(g2);
    free(g3);
}

static void test_scalar_tensor_tensor(void **state)
{
    fx_t *f = *state;
    enum { P = 16, F = 70 };
    isa_view_t a = SB(ISA_DT_FP32, 0, P, 0, F), b = PS(ISA_DT_BF16, 0, P, 0, F),
               d = SB(ISA_DT_FP32, 0, P, 1000, F), s = SB(ISA_DT_FP32, 0, P, 2000, 1);
    float *x = put_rand(f, &a, -5.0f, 5.0f), *y = put_rand(f, &b, -5.0f, 5.0f),
          *sv = put_rand(f, &s, -2.0f, 2.0f);
    EXPECT_OK(RUN(f, ISA_OP_SCALAR_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, d), av(f, a),
                  ai(ISA_ALU_SUBTRACT), asv(f, s), ai(ISA_ALU_MULTIPLY), av(f, b)));
    float *g = get(f, &d);
    for (int p = 0; p < P; p++)
        for (int i = 0; i < F; i++)
            assert_true(g[p * F + i] == (x[p * F + i] - sv[p]) * y[p * F + i]);
    EXPECT_ERR(RUN(f, ISA_OP_SCALAR_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, d), av(f, b),
                   ai(ISA_ALU_ADD), af(1), ai(ISA_ALU_ADD), av(f, b)),
               "A and B are both in PSUM");
    free(x);
    free(y);
    free(sv);
    free(g);
}

/* tensor_scan along the innermost dim, restarting per outer index (exact: same fp32 order). */
static void test_tensor_scan(void **state)
{
    fx_t *f = *state;
    enum { P = 4, O = 3, L = 16, N = P * O * L };
    const int64_t st[] = {L, 1};
    const uint32_t ct[] = {O, L};
    isa_view_t a = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, P, 0, 2, st, ct);
    isa_view_t b = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, P, 1024, 2, st, ct);
    isa_view_t d = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, P, 2048, 2, st, ct);
    isa_view_t init = SB(ISA_DT_FP32, 0, P, 4000, 1);
    float *x = put_rand(f, &a, 0.5f, 1.0f), *y = put_rand(f, &b, -1.0f, 1.0f),
          *iv = put_rand(f, &init, -2.0f, 2.0f);
    /* r = A * r + B: a linear recurrence (Mamba's scan). */
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCAN, ISA_ENGINE_DVE, av(f, d), av(f, a), av(f, b),
                  ai(ISA_ALU_MULTIPLY), ai(ISA_ALU_ADD), asv(f, init)));
    float *g = get(f, &d);
    save(f, "a", x, N);
    save(f, "b", y, N);
    save(f, "i", iv, P);
    save(f, "g", g, N);
    py(f, "a, b = ld('a').reshape(4, 3, 16), ld('b').reshape(4, 3, 16)\n"
          "w = np.zeros_like(a)\n"
          "for p in range(4):\n"
          "    for o in range(3):\n"
          "        r = ld('i')[p]\n"
          "        for i in range(16):\n"
          "            r = f32(f32(a[p, o, i] * r) + b[p, o, i]); w[p, o, i] = r\n"
          "assert (ld('g') == w.ravel()).all()\n");
    /* max scan with an immediate init: running maximum. */
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCAN, ISA_ENGINE_DVE, av(f, d), av(f, b), av(f, b),
                  ai(ISA_ALU_MAX), ai(ISA_ALU_MAX), af(-0.5)));
    free(g);
    g = get(f, &d);
    for (int s = 0; s < P * O; s++) {
        float r = -0.5f;
        for (int i = 0; i < L; i++) {
            r = y[s * L + i] > r ? y[s * L + i] : r;
            assert_true(g[s * L + i] == r);
        }
    }
    free(x);
    free(y);
    free(iv);
    free(g);
}

/* tensor_reduce over 1, 2 and 3 innermost dims; sequential fp32 order, so exact. */
static void test_tensor_reduce(void **state)
{
    fx_t *f = *state;
    enum { P = 8, A = 4, B = 5, C = 6, N = P * A * B * C };
    const int64_t st[] = {B * C, C, 1};
    const uint32_t ct[] = {A, B, C};
    isa_view_t src = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, P, 0, 3, st, ct);
    float *x = put_rand(f, &src, 0.8f, 1.25f);
    save(f, "x", x, N);
    isa_view_t d1 = SB(ISA_DT_FP32, 0, P, 4096, A * B), d2 = SB(ISA_DT_FP32, 0, P, 8192, A),
               d3 = SB(ISA_DT_FP32, 0, P, 12288, 1), d4 = PS(ISA_DT_BF16, 0, P, 0, A * B);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, d1), av(f, src), ai(ISA_ALU_ADD),
                  ai(1)));
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, d2), av(f, src), ai(ISA_ALU_MAX),
                  ai(2)));
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, d3), av(f, src),
                  ai(ISA_ALU_MULTIPLY), ai(3)));
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, d4), av(f, src), ai(ISA_ALU_MIN),
                  ai(1), ai(1)));
    float *g1 = get(f, &d1), *g2 = get(f, &d2), *g3 = get(f, &d3), *g4 = get(f, &d4);
    save(f, "g1", g1, P * A * B);
    save(f, "g2", g2, P * A);
    save(f, "g3", g3, P);
    save(f, "g4", g4, P * A * B);
    py(f, "x = ld('x').reshape(8, 4, 5, 6)\n"
          "assert (ld('g1') == seqsum(x).ravel()).all(), 'add'\n"
          "assert (ld('g2') == x.max(axis=(2, 3)).ravel()).all(), 'max'\n"
          "m = np.multiply.accumulate(x.reshape(8, -1), axis=1, dtype=f32)[:, -1]\n"
          "assert (ld('g3') == m).all(), 'multiply'\n"
          "assert (ld('g4') == bf16(-x.min(axis=3)).ravel()).all(), 'negated min'\n");
    /* Integer reduction with a bitwise operator: exact. */
    int64_t iv[4 * 10];
    for (int i = 0; i < 40; i++)
        iv[i] = (int64_t)(int32_t)(0x9E3779B9u * (uint32_t)(i + 1));
    isa_view_t si = SB(ISA_DT_I32, 0, 4, 0, 10), di = SB(ISA_DT_I32, 0, 4, 100, 1);
    put_i(f, &si, iv);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, di), av(f, si),
                  ai(ISA_ALU_BITWISE_XOR), ai(1)));
    int64_t *gi = get_i(f, &di);
    for (int p = 0; p < 4; p++) {
        int32_t w = 0;
        for (int i = 0; i < 10; i++)
            w ^= (int32_t)iv[p * 10 + i];
        assert_int_equal(gi[p], w);
    }
    free(gi);
    EXPECT_ERR(
        RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, d3), av(f, src), ai(ISA_ALU_ADD), ai(4)),
        "axes=4 but SRC has 3 free dims (axes must be 1..3)");
    EXPECT_ERR(
        RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, d2), av(f, src), ai(ISA_ALU_ADD), ai(1)),
        "D has 8 partitions x 4 elements; reducing the innermost 1 dim of SRC leaves 8 "
        "partitions x 20 elements");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, d2), av(f, src),
                   ai(ISA_ALU_SUBTRACT), ai(2)),
               "subtract is not a reduction operator");
    free(x);
    free(g1);
    free(g2);
    free(g3);
    free(g4);
}

/* ---- Vector engine: copies, select, reciprocal -------------------------------------------- */

static void test_copy_memset_select_reciprocal(void **state)
{
    fx_t *f = *state;
    enum { P = 8, F = 50, N = P * F };
    isa_view_t x32 = SB(ISA_DT_FP32, 0, P, 0, F), xbf = SB(ISA_DT_BF16, 0, P, 1000, F),
               xi8 = SB(ISA_DT_I8, 0, P, 2000, F), xr = PS(ISA_DT_FP32, 0, P, 0, F);
    float *x = put_rand(f, &x32, -200.0f, 200.0f);
    x[0] = 0.0f;
    x[1] = 2.5f; /* RNE to i8: 2 */
    x[2] = 3.5f; /* 4 */
    put(f, &x32, x);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_ACT, av(f, xbf), av(f, x32)));
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_POOL, av(f, xi8), av(f, x32)));
    EXPECT_OK(RUN(f, ISA_OP_RECIPROCAL, ISA_ENGINE_DVE, av(f, xr), av(f, x32)));
    float *gbf = get(f, &xbf), *gi8 = get(f, &xi8), *gr = get(f, &xr);
    save(f, "x", x, N);
    save(f, "bf", gbf, N);
    save(f, "i8", gi8, N);
    save(f, "r", gr, N);
    py(f, "x = ld('x')\n"
          "assert (ld('bf') == bf16(x)).all(), 'bf16'\n"
          "assert (ld('i8') == np.clip(np.rint(x), -128, 127)).all(), 'i8'\n"
          "assert (ld('r') == f32(1) / x).all(), 'reciprocal'\n");
    /* i32 -> i32 copies are exact beyond 2^24. */
    int64_t big[4] = {16777217, -2147483647, 123456789, 2147483647};
    isa_view_t i1 = SB(ISA_DT_I32, 0, 1, 0, 4), i2 = SB(ISA_DT_I32, 0, 1, 100, 4);
    put_i(f, &i1, big);
    EXPECT_OK(RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, av(f, i2), av(f, i1)));
    int64_t *gb = get_i(f, &i2);
    assert_memory_equal(gb, big, sizeof big);
    free(gb);
    /* memset: bf16 rounding, exact large integers, fp8 saturation. */
    EXPECT_OK(RUN(f, ISA_OP_MEMSET, ISA_ENGINE_POOL, av(f, xbf), af(3.14159)));
    float *m = get(f, &xbf);
    for (int i = 0; i < N; i++)
        assert_true(m[i] == mdl_round_f32(ISA_DT_BF16, 3.14159f, MDL_ROUND_NEAREST_EVEN, NULL));
    free(m);
    EXPECT_OK(RUN(f, ISA_OP_MEMSET, ISA_ENGINE_DVE, av(f, i2), af(16777217.0)));
    gb = get_i(f, &i2);
    for (int i = 0; i < 4; i++)
        assert_int_equal(gb[i], 16777217);
    free(gb);
    isa_view_t f8 = SB(ISA_DT_FP8E4, 0, 1, 0, 3);
    EXPECT_OK(RUN(f, ISA_OP_MEMSET, ISA_ENGINE_DVE, av(f, f8), af(1000.0)));
    m = get(f, &f8);
    assert_true(m[0] == 240.0f && m[2] == 240.0f);
    free(m);
    EXPECT_ERR(RUN(f, ISA_OP_MEMSET, ISA_ENGINE_POOL, av(f, xr), af(1.0)),
               "memset: D is in PSUM; on pool it must be in SBUF");

    /* select: D = PRED != 0 ? A : D, and reversed. */
    isa_view_t pred = SB(ISA_DT_U8, 0, P, 3000, F), a = SB(ISA_DT_FP32, 0, P, 4000, F),
               d = SB(ISA_DT_FP16, 0, P, 6000, F);
    int64_t pv[N];
    for (int i = 0; i < N; i++)
        pv[i] = (i * 7) % 3 == 0 ? 0 : (i % 5) + 1;
    put_i(f, &pred, pv);
    float *avv = put_rand(f, &a, -10.0f, 10.0f), *dv = put_rand(f, &d, -10.0f, 10.0f);
    EXPECT_OK(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, d), av(f, pred), av(f, a)));
    float *g = get(f, &d);
    for (int i = 0; i < N; i++)
        assert_true(
            g[i] ==
            (pv[i] ? mdl_round_f32(ISA_DT_FP16, avv[i], MDL_ROUND_NEAREST_EVEN, NULL) : dv[i]));
    put(f, &d, dv);
    EXPECT_OK(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, d), av(f, pred), av(f, a), ai(1)));
    free(g);
    g = get(f, &d);
    for (int i = 0; i < N; i++)
        assert_true(
            g[i] ==
            (!pv[i] ? mdl_round_f32(ISA_DT_FP16, avv[i], MDL_ROUND_NEAREST_EVEN, NULL) : dv[i]));
    /* Integer D keeps unselected values exactly. */
    isa_view_t di = SB(ISA_DT_I32, 0, 1, 8000, 4), ai_ = SB(ISA_DT_I32, 0, 1, 8100, 4),
               pi = SB(ISA_DT_I32, 0, 1, 8200, 4);
    const int64_t dvals[4] = {16777217, 5, 16777219, 7}, avals[4] = {1, 2, 3, 4},
                  pvals[4] = {0, 1, 0, 1};
    put_i(f, &di, dvals);
    put_i(f, &ai_, avals);
    put_i(f, &pi, pvals);
    EXPECT_OK(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, di), av(f, pi), av(f, ai_)));
    int64_t *gsel = get_i(f, &di);
    const int64_t wsel[4] = {16777217, 2, 16777219, 4};
    assert_memory_equal(gsel, wsel, sizeof wsel);
    free(gsel);
    free(x);
    free(gbf);
    free(gi8);
    free(gr);
    free(avv);
    free(dv);
    free(g);
}

/* ---- bn_stats / bn_aggr --------------------------------------------------------------------- */

/*
 * Six bn_stats groups of 80 elements then bn_aggr, vs NumPy mean/var (population) of the 480
 * values in float64. fp32 two-pass statistics and Chan's combination have relative errors of a
 * few times n * 2^-24 for data whose mean and spread are of the same order (here mean 3, std
 * about 1.7): 1e-5 relative bounds them with margin.
 */
static void test_bn_stats_aggr(void **state)
{
    fx_t *f = *state;
    enum { P = 16, G = 6, F = 80 };
    const isa_dtype_t types[] = {ISA_DT_FP32, ISA_DT_BF16};
    for (unsigned t = 0; t < 2; t++) {
        isa_view_t src = SB(types[t], 0, P, 0, G * F);
        float *x = put_rand(f, &src, 0.0f, 6.0f);
        isa_view_t stats = SB(ISA_DT_FP32, 0, P, 4096, 3 * G);
        for (unsigned g = 0; g < G; g++) {
            isa_view_t part = SB(types[t], 0, P, g * F * isa_dtype_size(types[t]), F);
            isa_view_t out = SB(ISA_DT_FP32, 0, P, 4096 + 12 * g, 3);
            EXPECT_OK(RUN(f, ISA_OP_BN_STATS, ISA_ENGINE_DVE, av(f, out), av(f, part)));
        }
        isa_view_t mv = SB(ISA_DT_FP32, 0, P, 8192, 2);
        EXPECT_OK(RUN(f, ISA_OP_BN_AGGR, ISA_ENGINE_DVE, av(f, mv), av(f, stats)));
        float *gs = get(f, &stats), *gm = get(f, &mv);
        save(f, "x", x, P * G * F);
        save(f, "st", gs, P * G * 3);
        save(f, "mv", gm, P * 2);
        py(f, "x = ld('x').astype(np.float64).reshape(16, 6, 80)\n"
              "st = ld('st').reshape(16, 6, 3)\n"
              "assert (st[:, :, 0] == 80).all()\n"
              "assert np.allclose(st[:, :, 1], x.mean(2), rtol=1e-5, atol=0)\n"
              "m2 = ((x - x.mean(2, keepdims=True))**2).sum(2)\n"
              "assert np.allclose(st[:, :, 2], m2, rtol=1e-5, atol=0)\n"
              "mv = ld('mv').reshape(16, 2)\n"
              "xx = x.reshape(16, -1)\n"
              "assert np.allclose(mv[:, 0], xx.mean(1), rtol=1e-5, atol=0)\n"
              "assert np.allclose(mv[:, 1], xx.var(1), rtol=1e-5, atol=0)\n");
        free(x);
        free(gs);
        free(gm);
    }
    /* Empty groups are skipped; all-empty gives NaN. */
    isa_view_t tri = SB(ISA_DT_FP32, 0, 2, 0, 6), out = SB(ISA_DT_FP32, 0, 2, 100, 2);
    const float t6[12] = {0, 99, 99, 4, 2.5f, 8, /* partition 1: */ 0, 1, 1, 0, 5, 5};
    put(f, &tri, t6);
    EXPECT_OK(RUN(f, ISA_OP_BN_AGGR, ISA_ENGINE_DVE, av(f, out), av(f, tri)));
    float *g = get(f, &out);
    assert_true(g[0] == 2.5f && g[1] == 2.0f);
    assert_true(g[2] != g[2] && g[3] != g[3]);
    free(g);
    EXPECT_ERR(RUN(f, ISA_OP_BN_STATS, ISA_ENGINE_DVE, av(f, SB(ISA_DT_FP32, 0, 2, 0, 3)),
                   av(f, SB(ISA_DT_FP32, 0, 2, 100, 513))),
               "SRC has 513 free elements; bn_stats takes at most 512");
    EXPECT_ERR(
        RUN(f, ISA_OP_BN_AGGR, ISA_ENGINE_DVE, av(f, out), av(f, SB(ISA_DT_FP32, 0, 2, 0, 7))),
        "SRC has 7 free elements; bn_aggr takes (count, mean, m2) triples");
    EXPECT_ERR(RUN(f, ISA_OP_BN_STATS, ISA_ENGINE_DVE, av(f, SB(ISA_DT_BF16, 0, 2, 0, 3)),
                   av(f, SB(ISA_DT_FP32, 0, 2, 100, 50))),
               "D has type bf16; it must be fp32");
}

/* ---- max8 / find_index8 / match_replace8 ------------------------------------------------------
 */

static void test_max8_family(void **state)
{
    fx_t *f = *state;
    enum { P = 8, F = 300 };
    isa_view_t src = SB(ISA_DT_FP32, 0, P, 0, F);
    float *x = rand_fill(f, P * F, -20.0f, 20.0f);
    for (int i = 0; i < P * F; i++)
        x[i] = (float)(int)(x[i] * 4.0f) / 4.0f; /* many ties */
    put(f, &src, x);
    isa_view_t top = SB(ISA_DT_FP32, 0, P, 4096, 8), top2 = SB(ISA_DT_FP32, 0, P, 4128, 8);
    isa_view_t idx = SB(ISA_DT_U32, 0, P, 5000, 8), rep = SB(ISA_DT_FP32, 0, P, 6000, F);
    EXPECT_OK(RUN(f, ISA_OP_MAX8, ISA_ENGINE_DVE, av(f, top), av(f, src)));
    EXPECT_OK(RUN(f, ISA_OP_FIND_INDEX8, ISA_ENGINE_DVE, av(f, idx), av(f, src), av(f, top)));
    EXPECT_OK(RUN(f, ISA_OP_MATCH_REPLACE8, ISA_ENGINE_DVE, av(f, rep), av(f, src), av(f, top),
                  af(-1e30)));
    /* The top-16 idiom: max8 of the replaced row gives the next 8. */
    EXPECT_OK(RUN(f, ISA_OP_MAX8, ISA_ENGINE_DVE, av(f, top2), av(f, rep)));
    float *g1 = get(f, &top), *g2 = get(f, &top2), *gr = get(f, &rep);
    int64_t *gi = get_i(f, &idx);
    save(f, "x", x, P * F);
    save(f, "t1", g1, P * 8);
    save(f, "t2", g2, P * 8);
    save(f, "rep", gr, P * F);
    save_i(f, "idx", gi, P * 8);
    py(f, "x = ld('x').reshape(8, 300)\n"
          "s = -np.sort(-x, axis=1)\n"
          "assert (ld('t1').reshape(8, 8) == s[:, :8]).all(), 'max8'\n"
          "assert (ld('t2').reshape(8, 8) == s[:, 8:16]).all(), 'top16'\n"
          "idx = ldi('idx').reshape(8, 8)\n"
          "for p in range(8):\n"
          "    for j in range(8):\n"
          "        assert idx[p, j] == np.nonzero(x[p] == s[p, j])[0][0], (p, j)\n"
          "r = x.copy()\n"
          "for p in range(8):\n"
          "    for j in range(8):\n"
          "        i = np.nonzero(r[p] == s[p, j])[0]\n"
          "        if len(i): r[p, i[0]] = f32(-1e30)\n"
          "assert (ld('rep').reshape(8, 300) == r).all(), 'match_replace8'\n");
    /* A value absent from the row: index 0xFFFFFFFF (u32) or -1 (i32). */
    const float vals[8] = {1000, x[3], 1000, 1000, 1000, 1000, 1000, x[299]};
    isa_view_t v1 = SB(ISA_DT_FP32, 0, 1, 7000, 8), i1 = SB(ISA_DT_U32, 0, 1, 7100, 8),
               i2 = SB(ISA_DT_I32, 0, 1, 7200, 8);
    put(f, &v1, vals);
    EXPECT_OK(RUN(f, ISA_OP_FIND_INDEX8, ISA_ENGINE_DVE, av(f, i1),
                  av(f, SB(ISA_DT_FP32, 0, 1, 0, F)), av(f, v1)));
    EXPECT_OK(RUN(f, ISA_OP_FIND_INDEX8, ISA_ENGINE_DVE, av(f, i2),
                  av(f, SB(ISA_DT_FP32, 0, 1, 0, F)), av(f, v1)));
    int64_t *n1 = get_i(f, &i1), *n2 = get_i(f, &i2);
    assert_int_equal(n1[0], 0xFFFFFFFFll);
    assert_int_equal(n2[0], -1);
    assert_true(n1[1] <= 3 && x[n1[1]] == x[3]);
    assert_true(x[n1[7]] == x[299]);
    free(n1);
    free(n2);
    EXPECT_ERR(RUN(f, ISA_OP_MAX8, ISA_ENGINE_DVE, av(f, top), av(f, SB(ISA_DT_FP32, 0, P, 0, 7))),
               "SRC has 7 free elements; max8 takes 8..16384");
    EXPECT_ERR(RUN(f, ISA_OP_FIND_INDEX8, ISA_ENGINE_DVE, av(f, top), av(f, src), av(f, top)),
               "D has type fp32; find_index8 writes u32 (or i32) indices");
    free(x);
    free(g1);
    free(g2);
    free(gr);
    free(gi);
}

/* ---- shuffle ------------------------------------------------------------------------------------
 */

static void test_shuffle(void **state)
{
    fx_t *f = *state;
    enum { P = 64, F = 10 };
    isa_view_t src = SB(ISA_DT_FP32, 0, P, 0, F), d = SB(ISA_DT_BF16, 0, P, 1000, F);
    float x[P * F], init[P * F];
    for (int p = 0; p < P; p++)
        for (int i = 0; i < F; i++) {
            x[p * F + i] = (float)(p * 100 + i);
            init[p * F + i] = -1.0f;
        }
    put(f, &src, x);
    put(f, &d, init);
    int64_t mask[32];
    for (int i = 0; i < 32; i++)
        mask[i] = i % 4 == 3 ? 255 : 31 - i;
    EXPECT_OK(RUN(f, ISA_OP_SHUFFLE, ISA_ENGINE_DVE, av(f, d), av(f, src), al(f, mask, 32)));
    float *g = get(f, &d);
    for (int p = 0; p < P; p++) {
        int q = p / 32 * 32, i = p % 32;
        for (int e = 0; e < F; e++) {
            float want = mask[i] == 255 ? -1.0f : (float)((q + (int)mask[i]) * 100 + e);
            want = mdl_round_f32(ISA_DT_BF16, want, MDL_ROUND_NEAREST_EVEN, NULL);
            if (g[p * F + e] != want)
                fail_msg("partition %d elem %d: got %g want %g", p, e, (double)g[p * F + e],
                         (double)want);
        }
    }
    free(g);
    EXPECT_ERR(RUN(f, ISA_OP_SHUFFLE, ISA_ENGINE_DVE, av(f, d), av(f, src), al(f, mask, 31)),
               "mask must list 32 partitions (it has 31)");
    mask[0] = 40;
    EXPECT_ERR(RUN(f, ISA_OP_SHUFFLE, ISA_ENGINE_DVE, av(f, d), av(f, src), al(f, mask, 32)),
               "mask[0] = 40 is neither a partition 0..31 nor 255");
    mask[0] = 20;
    EXPECT_ERR(RUN(f, ISA_OP_SHUFFLE, ISA_ENGINE_DVE, av(f, SB(ISA_DT_FP32, 96, 16, 0, F)),
                   av(f, SB(ISA_DT_FP32, 64, 16, 0, F)), al(f, mask, 32)),
               "mask[0] = 20 selects a partition beyond the 16 of the view's quadrant 0");
}

/* ---- GpSimd: iota, affine_select, partition_reduce ---------------------------------------------
 */

static void test_iota(void **state)
{
    fx_t *f = *state;
    const int64_t st[] = {8, 1};
    const uint32_t ct[] = {4, 8};
    isa_view_t d = tu_view(ISA_SPACE_SBUF, ISA_DT_I32, 0, 128, 0, 2, st, ct);
    const int64_t steps[2] = {100, -1};
    EXPECT_OK(RUN(f, ISA_OP_IOTA, ISA_ENGINE_POOL, av(f, d), ai(5), ai(3), al(f, steps, 2)));
    int64_t *g = get_i(f, &d);
    save_i(f, "g", g, 128 * 32);
    /* Relative partitions: a view from partition 32 starts at p = 0; bf16 conversion. */
    isa_view_t d2 = tu_view(ISA_SPACE_SBUF, ISA_DT_BF16, 32, 32, 512, 2, st, ct);
    const int64_t steps2[2] = {1000, 1};
    EXPECT_OK(RUN(f, ISA_OP_IOTA, ISA_ENGINE_POOL, av(f, d2), ai(-7), ai(300), al(f, steps2, 2)));
    float *g2 = get(f, &d2);
    save(f, "g2", g2, 32 * 32);
    /* int32 arithmetic wraps. */
    isa_view_t d3 = SB(ISA_DT_I32, 0, 2, 1000, 2);
    const int64_t steps3[1] = {1};
    EXPECT_OK(
        RUN(f, ISA_OP_IOTA, ISA_ENGINE_POOL, av(f, d3), ai(2147483647), ai(0), al(f, steps3, 1)));
    int64_t *g3 = get_i(f, &d3);
    assert_int_equal(g3[0], 2147483647);
    assert_int_equal(g3[1], -2147483648ll);
    py(f, "p = np.arange(128)[:, None, None]; i = np.arange(4)[None, :, None]; j = "
          "np.arange(8)[None, None, :]\n"
          "assert (ldi('g') == (5 + 3 * p + 100 * i - j).ravel()).all(), 'i32'\n"
          "p = p[:32]\n"
          "assert (ld('g2') == bf16((-7 + 300 * p + 1000 * i + j).astype(f32)).ravel()).all(), "
          "'bf16'\n");
    EXPECT_ERR(RUN(f, ISA_OP_IOTA, ISA_ENGINE_POOL, av(f, d), ai(0), NONE, al(f, steps, 1)),
               "steps has 1 entry but D has 2 free dims");
    free(g);
    free(g2);
    free(g3);
}

/* The causal mask: keep SRC[p, i] where p - i >= 0 (lower triangle), else -inf. */
static void test_affine_select_causal(void **state)
{
    fx_t *f = *state;
    enum { P = 128, F = 128 };
    isa_view_t src = SB(ISA_DT_FP32, 0, P, 0, F), d = SB(ISA_DT_BF16, 0, P, 1024, F);
    float *x = put_rand(f, &src, -3.0f, 3.0f);
    const int64_t steps[1] = {-1};
    EXPECT_OK(RUN(f, ISA_OP_AFFINE_SELECT, ISA_ENGINE_POOL, av(f, d), av(f, src), ai(0), ai(1),
                  al(f, steps, 1), ai(ISA_CMP_GE), af(-INFINITY)));
    float *g = get(f, &d);
    save(f, "x", x, P * F);
    save(f, "g", g, P * F);
    /* A query block at offset 64 over keys 0..255 (base = 64): keep i <= p + 64; and cmp=lt
     * with an i32 SRC and an integer fill. */
    isa_view_t src2 = SB(ISA_DT_FP32, 0, 64, 0, 256), d2 = SB(ISA_DT_FP32, 0, 64, 2048, 256);
    float *x2 = put_rand(f, &src2, -3.0f, 3.0f);
    EXPECT_OK(RUN(f, ISA_OP_AFFINE_SELECT, ISA_ENGINE_POOL, av(f, d2), av(f, src2), ai(64), ai(1),
                  al(f, steps, 1), ai(ISA_CMP_GE), af(-30000.0)));
    float *g2 = get(f, &d2);
    save(f, "x2", x2, 64 * 256);
    save(f, "g2", g2, 64 * 256);
    py(f, "x = ld('x').reshape(128, 128)\n"
          "w = bf16(np.where(np.tril(np.ones((128, 128), bool)), x, -np.inf))\n"
          "assert (ld('g').reshape(128, 128) == w).all(), 'causal'\n"
          "x2 = ld('x2').reshape(64, 256)\n"
          "p, i = np.arange(64)[:, None], np.arange(256)[None, :]\n"
          "assert (ld('g2').reshape(64, 256) == np.where(64 + p - i >= 0, x2, f32(-30000))).all(), "
          "'offset'\n");
    isa_view_t si = SB(ISA_DT_I32, 0, 4, 8192, 4), di = SB(ISA_DT_I32, 0, 4, 8300, 4);
    int64_t iv[16];
    for (int i = 0; i < 16; i++)
        iv[i] = 100000000 + i;
    put_i(f, &si, iv);
    EXPECT_OK(RUN(f, ISA_OP_AFFINE_SELECT, ISA_ENGINE_POOL, av(f, di), av(f, si), ai(0), ai(1),
                  al(f, steps, 1), ai(ISA_CMP_LT), af(-5)));
    int64_t *gi = get_i(f, &di);
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 4; i++)
            assert_int_equal(gi[p * 4 + i], p - i < 0 ? iv[p * 4 + i] : -5);
    free(gi);
    free(x);
    free(g);
    free(x2);
    free(g2);
}

static void test_partition_reduce(void **state)
{
    fx_t *f = *state;
    enum { P = 128, F = 37 };
    isa_view_t src = SB(ISA_DT_FP32, 0, P, 0, F), d1 = SB(ISA_DT_FP32, 0, 1, 1000, F),
               d2 = SB(ISA_DT_FP16, 0, 1, 2000, F);
    float *x = put_rand(f, &src, -1.0f, 1.0f);
    EXPECT_OK(
        RUN(f, ISA_OP_PARTITION_REDUCE, ISA_ENGINE_POOL, av(f, d1), av(f, src), ai(ISA_ALU_ADD)));
    EXPECT_OK(
        RUN(f, ISA_OP_PARTITION_REDUCE, ISA_ENGINE_POOL, av(f, d2), av(f, src), ai(ISA_ALU_MAX)));
    float *g1 = get(f, &d1), *g2 = get(f, &d2);
    save(f, "x", x, P * F);
    save(f, "g1", g1, F);
    save(f, "g2", g2, F);
    py(f, "x = ld('x').reshape(128, 37)\n"
          "assert (ld('g1') == seqsum(x, axis=0)).all(), 'add'\n"
          "assert (ld('g2') == fp16(x.max(0))).all(), 'max'\n");
    int64_t iv[4 * 3];
    for (int i = 0; i < 12; i++)
        iv[i] = (int64_t)(int32_t)(0x9E3779B9u * (uint32_t)(i + 3));
    isa_view_t si = SB(ISA_DT_I32, 0, 4, 4000, 3), da = SB(ISA_DT_I32, 0, 1, 4100, 3),
               dor = SB(ISA_DT_U32, 0, 1, 4200, 3);
    put_i(f, &si, iv);
    EXPECT_OK(RUN(f, ISA_OP_PARTITION_REDUCE, ISA_ENGINE_POOL, av(f, da), av(f, si),
                  ai(ISA_ALU_BITWISE_AND)));
    EXPECT_OK(RUN(f, ISA_OP_PARTITION_REDUCE, ISA_ENGINE_POOL, av(f, dor), av(f, si),
                  ai(ISA_ALU_BITWISE_OR)));
    int64_t *ga = get_i(f, &da), *go = get_i(f, &dor);
    for (int j = 0; j < 3; j++) {
        uint32_t wa = 0xffffffffu, wo = 0;
        for (int p = 0; p < 4; p++) {
            wa &= (uint32_t)iv[p * 3 + j];
            wo |= (uint32_t)iv[p * 3 + j];
        }
        assert_int_equal(ga[j], (int32_t)wa);
        assert_int_equal(go[j], wo);
    }
    EXPECT_ERR(
        RUN(f, ISA_OP_PARTITION_REDUCE, ISA_ENGINE_POOL, av(f, d1), av(f, src), ai(ISA_ALU_MIN)),
        "min is not a partition_reduce operator");
    EXPECT_ERR(RUN(f, ISA_OP_PARTITION_REDUCE, ISA_ENGINE_POOL, av(f, SB(ISA_DT_FP32, 0, 2, 0, F)),
                   av(f, src), ai(ISA_ALU_ADD)),
               "D has 2 partitions x 37 elements; it must be [1, 37]");
    free(x);
    free(g1);
    free(g2);
    free(ga);
    free(go);
}

/* ---- dropout and stochastic rounding ------------------------------------------------------------
 */

static void test_dropout(void **state)
{
    fx_t *f = *state;
    enum { P = 128, F = 1000 };
    isa_view_t src = SB(ISA_DT_FP32, 0, P, 0, F), d = SB(ISA_DT_BF16, 0, P, 4096, F);
    float *x = rand_fill(f, P * F, 1.0f, 2.0f);
    put(f, &src, x);
    EXPECT_OK(RUN(f, ISA_OP_DROPOUT, ISA_ENGINE_DVE, av(f, d), av(f, src), af(0.3)));
    float *g = get(f, &d);
    size_t zeros = 0;
    for (int i = 0; i < P * F; i++) {
        if (g[i] == 0.0f)
            zeros++;
        else
            assert_true(g[i] == mdl_round_f32(ISA_DT_BF16, x[i], MDL_ROUND_NEAREST_EVEN, NULL));
    }
    /* Binomial(128000, 0.3): standard deviation of the fraction is 0.0013; 0.01 is 7 sigma. */
    double frac = (double)zeros / (P * F);
    assert_true(frac > 0.29 && frac < 0.31);
    /* Same seed, same mask: a second core state seeded alike drops the same elements. */
    fx_t *h = calloc(1, sizeof *h);
    assert_int_equal(fx_open(h, MDL_ROUND_NEAREST_EVEN, 42), 0);
    put(h, &src, x);
    assert_int_equal(RUN(h, ISA_OP_DROPOUT, ISA_ENGINE_DVE, av(h, d), av(h, src), af(0.3)),
                     NCSIM_OK);
    float *g2 = get(h, &d);
    assert_memory_equal(g, g2, (size_t)P * F * sizeof *g);
    free(g2);
    /* Per-partition probabilities: 0 keeps everything, 1 drops everything. */
    isa_view_t pr = SB(ISA_DT_FP32, 0, 2, 8192, 1);
    const float probs[2] = {0.0f, 1.0f};
    put(h, &pr, probs);
    isa_view_t s2 = SB(ISA_DT_FP32, 0, 2, 0, F), d2 = SB(ISA_DT_FP32, 0, 2, 4096, F);
    assert_int_equal(RUN(h, ISA_OP_DROPOUT, ISA_ENGINE_DVE, av(h, d2), av(h, s2), asv(h, pr)),
                     NCSIM_OK);
    g2 = get(h, &d2);
    for (int i = 0; i < F; i++)
        assert_true(g2[i] == x[i] && g2[F + i] == 0.0f);
    free(g2);
    fx_close(h);
    free(h);
    free(x);
    free(g);
}

/*
 * The reference's example (neuroncore-v2.md 7): adding 0.5 to fp16 1024 2048 times stays 1024
 * with RNE. With stochastic rounding each step adds 0.5 in expectation (+1 with probability 1/2
 * below 2048, +2 with probability 1/4 above), so 128 independent runs average 2048 with a
 * standard deviation of about sqrt(2048 / 4) / sqrt(128) = 2: (2000, 2100) is > 20 sigma wide.
 */
static void test_stochastic_rounding(void **state)
{
    (void)state;
    for (int sr = 0; sr < 2; sr++) {
        fx_t *f = calloc(1, sizeof *f);
        assert_int_equal(fx_open(f, sr ? MDL_ROUND_STOCHASTIC : MDL_ROUND_NEAREST_EVEN, 7), 0);
        isa_view_t d = SB(ISA_DT_FP16, 0, 128, 0, 1);
        float init[128];
        for (int i = 0; i < 128; i++)
            init[i] = 1024.0f;
        put(f, &d, init);
        for (int k = 0; k < 2048; k++)
            EXPECT_OK(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, d), av(f, d),
                          ai(ISA_ALU_ADD), af(0.5)));
        float *g = get(f, &d);
        double mean = 0;
        for (int i = 0; i < 128; i++)
            mean += g[i] / 128.0;
        if (!sr)
            assert_true(mean == 1024.0);
        else
            assert_true(mean > 2000.0 && mean < 2100.0);
        free(g);
        fx_close(f);
        free(f);
    }
}

/* ---- DMA
 * ----------------------------------------------------------------------------------------- */

static void test_dma(void **state)
{
    fx_t *f = *state;
    /* ISA.md 5.3: SBUF [128, 8, 256] <- HBM [1024, 256]: rows 8p..8p+7 land in partition p. */
    isa_view_t h = hbm(ISA_DT_BF16, 0x100000, 1024, 256);
    const int64_t st[] = {256, 1};
    const uint32_t ct[] = {8, 256};
    isa_view_t t = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, 128, 0, 2, st, ct);
    float *x = put_rand(f, &h, -100.0f, 100.0f);
    char msg[512];
    assert_int_equal(mdl_exec_dma(&f->st, &t, &h, 0, msg, sizeof msg), NCSIM_OK);
    float *g = get(f, &t);
    EXPECT_EXACT("dma bf16->fp32", g, x, 1024 * 256);
    /* Accumulate: SBUF fp32 += HBM bf16. */
    assert_int_equal(mdl_exec_dma(&f->st, &t, &h, 1, msg, sizeof msg), NCSIM_OK);
    free(g);
    g = get(f, &t);
    for (int i = 0; i < 1024 * 256; i++)
        assert_true(g[i] == x[i] + x[i]);
    /* SBUF -> HBM with conversion to fp8e4 (saturating at 240). */
    isa_view_t h8 = hbm(ISA_DT_FP8E4, 0x10000000, 1024, 256);
    assert_int_equal(mdl_exec_dma(&f->st, &h8, &t, 0, msg, sizeof msg), NCSIM_OK);
    float *g8 = get(f, &h8);
    save(f, "g", g, 1024 * 256);
    save(f, "g8", g8, 1024 * 256);
    py(f, "assert (ld('g8') == fp8e4(ld('g'))).all()\n");
    /* Same type: a byte copy, exact for i32 beyond 2^24. */
    int64_t big[6] = {16777217, -16777219, 2147483647, -2147483648ll, 1, 0};
    isa_view_t hi = hbm(ISA_DT_I32, 0x20000000, 2, 3), si = SB(ISA_DT_I32, 3, 2, 100, 3);
    put_i(f, &hi, big);
    assert_int_equal(mdl_exec_dma(&f->st, &si, &hi, 0, msg, sizeof msg), NCSIM_OK);
    int64_t *gi = get_i(f, &si);
    assert_memory_equal(gi, big, sizeof big);
    free(gi);
    /* Long transfers go in chunks: 1.5M elements HBM fp32 -> HBM bf16 and HBM -> HBM fp32. */
    const uint32_t rows = 1536, cols = 1024;
    isa_view_t a = hbm(ISA_DT_FP32, 0x30000000, rows, cols),
               b = hbm(ISA_DT_BF16, 0x20000000 + 4096, rows, cols),
               c = hbm(ISA_DT_FP32, 0x38000000, rows, cols);
    float *y = malloc((size_t)rows * cols * sizeof *y);
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        y[i] = (float)(i % 100003) * 0.001f;
    put(f, &a, y);
    assert_int_equal(mdl_exec_dma(&f->st, &b, &a, 0, msg, sizeof msg), NCSIM_OK);
    assert_int_equal(mdl_exec_dma(&f->st, &c, &a, 0, msg, sizeof msg), NCSIM_OK);
    float *gb = get(f, &b), *gc = get(f, &c);
    for (size_t i = 0; i < (size_t)rows * cols; i++) {
        assert_true(gb[i] == mdl_round_f32(ISA_DT_BF16, y[i], MDL_ROUND_NEAREST_EVEN, NULL));
        assert_true(gc[i] == y[i]);
    }
    free(gb);
    free(gc);
    free(y);
    /* Errors. */
    isa_view_t p = PS(ISA_DT_FP32, 0, 128, 0, 512);
    assert_int_equal(mdl_exec_dma(&f->st, &p, &t, 0, msg, sizeof msg), NCSIM_PROGRAM);
    assert_string_equal(msg, "dma: D is in PSUM; DMA moves data between HBM and SBUF only (PSUM "
                             "is reached through act or dve)");
    isa_view_t h2 = hbm(ISA_DT_BF16, 0, 1024, 255);
    assert_int_equal(mdl_exec_dma(&f->st, &t, &h2, 0, msg, sizeof msg), NCSIM_PROGRAM);
    assert_string_equal(msg, "dma: D has 262144 elements but SRC has 261120");
    isa_view_t hoob = hbm(ISA_DT_BF16, HBM_BYTES - 100, 1, 64);
    assert_int_equal(mdl_exec_dma(&f->st, &hoob, &hoob, 0, msg, sizeof msg), NCSIM_PROGRAM);
    assert_string_equal(msg, "dma: D: HBM bytes 0x3fffff9c-0x4000001c beyond 1073741824");
    /* The dma instruction itself is only validated by mdl_exec. */
    EXPECT_OK(RUN(f, ISA_OP_DMA, ISA_ENGINE_SP, av(f, t), av(f, h), ai(3)));
    EXPECT_ERR(RUN(f, ISA_OP_DMA, ISA_ENGINE_SP, av(f, t), av(f, h2)),
               "dma: D has 262144 elements but SRC has 261120");
    EXPECT_ERR(RUN(f, ISA_OP_DMA, ISA_ENGINE_SP, av(f, t), av(f, h), ai(16)),
               "queue=16 is not a DMA queue (0..15)");
    free(x);
    free(g);
    free(g8);
}

/* ---- The operand prologue of the vector handlers (exec_operands) ------------------------------ */

static void test_operand_prologue(void **state)
{
    fx_t *f = *state;
    isa_view_t a = SB(ISA_DT_FP32, 0, 64, 0, 16), b = SB(ISA_DT_FP32, 0, 64, 100, 16);
    isa_view_t narrow = SB(ISA_DT_FP32, 0, 32, 200, 16), pa = PS(ISA_DT_FP32, 0, 64, 0, 16);
    isa_view_t pb = PS(ISA_DT_FP32, 0, 64, 64, 16), h = hbm(ISA_DT_FP32, 0, 64, 16);
    /* element-wise: every operand the shape of the first */
    EXPECT_ERR(RUN(f, ISA_OP_RECIPROCAL, ISA_ENGINE_DVE, av(f, a), av(f, narrow)),
               "reciprocal: shape mismatch: D has 64 partitions x 16 elements but SRC has 32 "
               "partitions x 16 elements");
    EXPECT_ERR(RUN(f, ISA_OP_DROPOUT, ISA_ENGINE_DVE, av(f, narrow), av(f, a), af(0.5)),
               "dropout: shape mismatch: D has 32 partitions x 16 elements but SRC has 64");
    EXPECT_ERR(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, a), av(f, narrow), av(f, b)),
               "select: shape mismatch: D has 64 partitions x 16 elements but PRED has 32");
    EXPECT_ERR(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, a), av(f, b), av(f, narrow)),
               "select: shape mismatch: D has 64 partitions x 16 elements but A has 32");
    EXPECT_ERR(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, a), av(f, pa), av(f, pb)),
               "select: PRED and A are both in PSUM; a two-input op may read at most one input "
               "from PSUM");
    /* several faults: the views first, then the shapes, then PSUM */
    EXPECT_ERR(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, a), av(f, narrow), av(f, h)),
               "select: A is in HBM; on dve it must be in SBUF or PSUM");
    EXPECT_ERR(RUN(f, ISA_OP_SELECT, ISA_ENGINE_DVE, av(f, a), av(f, pa),
                   av(f, PS(ISA_DT_FP32, 0, 32, 64, 16))),
               "select: shape mismatch: D has 64 partitions x 16 elements but A has 32");
    /* activate checks D against SRC before it fetches bias, sum= and sumacc= */
    EXPECT_ERR(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, a), av(f, narrow), ai(ISA_FUNC_COPY),
                   NONE, av(f, h)),
               "activate: shape mismatch: D has 64 partitions x 16 elements but SRC has 32");
    EXPECT_ERR(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_ACT, av(f, a), av(f, b), ai(ISA_FUNC_COPY),
                   NONE, av(f, h)),
               "activate: bias is in HBM; on act it must be in SBUF or PSUM");
    /* views only, D's type checked after both are fetched */
    EXPECT_ERR(RUN(f, ISA_OP_BN_STATS, ISA_ENGINE_DVE, av(f, SB(ISA_DT_BF16, 0, 64, 0, 3)),
                   av(f, h)),
               "bn_stats: SRC is in HBM; on dve it must be in SBUF or PSUM");
    EXPECT_ERR(RUN(f, ISA_OP_BN_AGGR, ISA_ENGINE_DVE, av(f, SB(ISA_DT_BF16, 0, 64, 0, 2)),
                   av(f, b)),
               "bn_aggr: D has type bf16; it must be fp32");
    EXPECT_ERR(RUN(f, ISA_OP_MAX8, ISA_ENGINE_DVE, av(f, a)), "max8: missing operand SRC");
    EXPECT_ERR(RUN(f, ISA_OP_TRANSPOSE, ISA_ENGINE_DVE, av(f, h), av(f, a)),
               "transpose: D is in HBM; on dve it must be in SBUF or PSUM");
    EXPECT_ERR(RUN(f, ISA_OP_SHUFFLE, ISA_ENGINE_DVE, av(f, a)), "shuffle: missing operand SRC");
    EXPECT_ERR(RUN(f, ISA_OP_IOTA, ISA_ENGINE_POOL, av(f, pa), ai(0)),
               "iota: D is in PSUM; on pool it must be in SBUF");
    EXPECT_ERR(RUN(f, ISA_OP_AFFINE_SELECT, ISA_ENGINE_POOL, av(f, a), av(f, narrow), ai(0)),
               "affine_select: shape mismatch: D has 64 partitions x 16 elements but SRC has 32");
    /* VALS is fetched after the checks of D and SRC */
    EXPECT_ERR(RUN(f, ISA_OP_MATCH_REPLACE8, ISA_ENGINE_DVE, av(f, a), av(f, b), av(f, h),
                   af(0.0)),
               "match_replace8: VALS is in HBM; on dve it must be in SBUF or PSUM");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_REDUCE, ISA_ENGINE_DVE, av(f, a)),
               "tensor_reduce: missing operand SRC");
    EXPECT_ERR(RUN(f, ISA_OP_PARTITION_REDUCE, ISA_ENGINE_POOL, av(f, pa), av(f, a)),
               "partition_reduce: D is in PSUM; on pool it must be in SBUF");
    /* the ALU handlers: the same prologue, then their operators */
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_SCALAR, ISA_ENGINE_DVE, av(f, a), av(f, narrow),
                   ai(ISA_ALU_ADD), af(1.0)),
               "tensor_scalar: shape mismatch: D has 64 partitions x 16 elements but SRC has 32");
    EXPECT_ERR(RUN(f, ISA_OP_SCALAR_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, a), av(f, pa),
                   ai(ISA_ALU_ADD), af(1.0), ai(ISA_ALU_MULTIPLY), av(f, pb)),
               "scalar_tensor_tensor: A and B are both in PSUM");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_SCAN, ISA_ENGINE_DVE, av(f, a), av(f, b), av(f, narrow),
                   ai(ISA_ALU_ADD), ai(ISA_ALU_ADD), af(0.0)),
               "tensor_scan: shape mismatch: D has 64 partitions x 16 elements but B has 32");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, a), av(f, b), av(f, b),
                   ai(ISA_ALU_COUNT)),
               "tensor_tensor: OP: invalid operator");
}

/* ---- Generic checks -----------------------------------------------------------------------------
 */

static void test_generic_errors(void **state)
{
    fx_t *f = *state;
    isa_view_t a = SB(ISA_DT_FP32, 0, 64, 0, 16), b = SB(ISA_DT_FP32, 0, 64, 100, 16);
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, av(f, a),
                   av(f, SB(ISA_DT_FP32, 64, 128, 0, 16))),
               "tensor_copy: SRC: SBUF partitions 64..191 out of range (128 partitions)");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, av(f, a),
                   av(f, SB(ISA_DT_FP32, 3, 1, 196600, 4))),
               "tensor_copy: SRC: SBUF bytes 196600..196616 of partition 3 beyond 196608");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, a), av(f, a),
                   av(f, SB(ISA_DT_FP32, 0, 32, 0, 16)), ai(ISA_ALU_ADD)),
               "tensor_tensor: shape mismatch: D has 64 partitions x 16 elements but B has 32 "
               "partitions x 16 elements");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_POOL, av(f, a), av(f, a), av(f, b),
                   ai(ISA_ALU_DIVIDE)),
               "divide is not available on pool (add, subtract, multiply, pow only)");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_POOL, av(f, a),
                   av(f, PS(ISA_DT_FP32, 0, 64, 0, 16)), av(f, b), ai(ISA_ALU_ADD)),
               "A is in PSUM; on pool it must be in SBUF");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_TENSOR, ISA_ENGINE_DVE, av(f, a),
                   av(f, PS(ISA_DT_FP32, 0, 64, 0, 16)), av(f, PS(ISA_DT_FP32, 0, 64, 64, 16)),
                   ai(ISA_ALU_ADD)),
               "A and B are both in PSUM; a two-input op may read at most one input from PSUM");
    EXPECT_ERR(
        RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, av(f, a), av(f, hbm(ISA_DT_FP32, 0, 64, 16))),
        "SRC is in HBM; on dve it must be in SBUF or PSUM");
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, av(f, a)), "missing operand SRC");
    /* Huge broadcast views are refused rather than allocating gigabytes. */
    const int64_t z[] = {0, 0};
    const uint32_t big[] = {65535, 65535};
    isa_view_t bc = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, 1, 0, 2, z, big);
    EXPECT_ERR(RUN(f, ISA_OP_TENSOR_COPY, ISA_ENGINE_DVE, av(f, bc), av(f, bc)),
               "D has 4294836225 elements, more than 16777216 per instruction");
    EXPECT_OK(run_(f, ISA_OP_NOP, ISA_ENGINE_CC, NULL, 0));
    assert_int_equal(RUN(f, ISA_OP_ALL_REDUCE, ISA_ENGINE_CC, av(f, a), av(f, a)), NCSIM_INTERNAL);
    EXPECT_ERR(RUN(f, ISA_OP_ACTIVATE, ISA_ENGINE_DVE, av(f, a), av(f, a), ai(0)),
               "activate: not an instruction of engine dve");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_layout),
        T(test_matmul_bf16),
        T(test_matmul_reuses_only_unchanged_tiles),
        T(test_matmul_fp32),
        T(test_matmul_fp8e4),
        T(test_matmul_errors),
        T(test_transpose),
        T(test_activate_all_functions),
        T(test_activate_bf16_sum),
        T(test_activate_edge_values),
        T(test_tensor_tensor_all_float_ops),
        T(test_bitwise_ops),
        T(test_tensor_scalar),
        T(test_scalar_tensor_tensor),
        T(test_tensor_scan),
        T(test_tensor_reduce),
        T(test_copy_memset_select_reciprocal),
        T(test_bn_stats_aggr),
        T(test_max8_family),
        T(test_shuffle),
        T(test_iota),
        T(test_affine_select_causal),
        T(test_partition_reduce),
        T(test_dropout),
        cmocka_unit_test(test_stochastic_rounding),
        T(test_dma),
        T(test_operand_prologue),
        T(test_generic_errors),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
