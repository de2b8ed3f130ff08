/*
 * test_mem.c -- memories and views: lazy HBM pages, bounds messages, gather/scatter through
 * views (strides, negative strides, broadcast, page crossings), conversions, raw and ranged
 * access, run iteration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mem.h"
#include "numerics.h"
#include "testutil.h"

#define SBUF_BYTES 196608u
#define PSUM_BYTES 16384u
#define HBM_32G (32ull << 30)

typedef struct mem_fx {
    mdl_onchip_t sbuf, psum;
    mdl_hbm_t hbm;
    mdl_mem_t mem;
} mem_fx_t;

static int setup(void **state)
{
    mem_fx_t *f = calloc(1, sizeof *f);
    if (!f || mdl_onchip_init(&f->sbuf, 128, SBUF_BYTES) ||
        mdl_onchip_init(&f->psum, 128, PSUM_BYTES) || mdl_hbm_init(&f->hbm, HBM_32G))
        return -1;
    f->mem.sbuf = &f->sbuf;
    f->mem.psum = &f->psum;
    f->mem.hbm = &f->hbm;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    mem_fx_t *f = *state;
    mdl_onchip_free(&f->sbuf);
    mdl_onchip_free(&f->psum);
    mdl_hbm_free(&f->hbm);
    free(f);
    return 0;
}


static long resident_kib(void)
{
    char *s = tu_read_file("/proc/self/statm", NULL);
    long size = 0, res = 0;
    if (s) {
        if (sscanf(s, "%ld %ld", &size, &res) != 2)
            res = 0;
        free(s);
    }
    return res * 4; /* 4 KiB pages */
}

/* ---- HBM ------------------------------------------------------------------------------------- */

static void test_hbm_lazy_32g(void **state)
{
    (void)state;
    long before = resident_kib();
    mdl_hbm_t h;
    assert_int_equal(mdl_hbm_init(&h, HBM_32G), 0);
    long after = resident_kib();
    /* The page table of 32768 pointers is 256 KiB; the memory itself costs nothing yet. */
    assert_int_equal(h.npages, 32768);
    assert_int_equal(h.pages_allocated, 0);
    assert_true(after - before < 4096);

    uint8_t buf[64];
    memset(buf, 0xAB, sizeof buf);
    mdl_hbm_read(&h, 0x123456789ull, buf, sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0);
    assert_int_equal(h.pages_allocated, 0);

    /* The top 4 bytes. */
    const uint32_t top = 0xDEADBEEF;
    assert_int_equal(mdl_hbm_write(&h, HBM_32G - 4, &top, 4), 0);
    assert_int_equal(h.pages_allocated, 1);
    uint32_t back = 0;
    mdl_hbm_read(&h, HBM_32G - 4, &back, 4);
    assert_int_equal(back, top);

    /* A write straddling a page boundary allocates both pages. */
    const uint8_t pat[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(mdl_hbm_write(&h, MDL_HBM_PAGE_SIZE * 5 - 3, pat, 8), 0);
    assert_int_equal(h.pages_allocated, 3);
    uint8_t got[8];
    mdl_hbm_read(&h, MDL_HBM_PAGE_SIZE * 5 - 3, got, 8);
    assert_memory_equal(got, pat, 8);
    assert_true(resident_kib() - before < 8192);
    mdl_hbm_free(&h);
}

static void test_hbm_view_top_address(void **state)
{
    mem_fx_t *f = *state;
    /* The last 16 fp32 elements of a 32 GiB HBM, through a view. */
    const int64_t st[] = {1};
    const uint32_t ct[] = {16};
    isa_view_t v = tu_view(ISA_SPACE_HBM, ISA_DT_FP32, 0, 1, HBM_32G - 64, 1, st, ct);
    char err[256];
    assert_int_equal(mdl_view_check(&f->mem, &v, err, sizeof err), 0);
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)i * 1.5f - 3.0f;
    assert_int_equal(mdl_view_write_f32(&f->mem, &v, in, MDL_ROUND_NEAREST_EVEN, NULL), 0);
    mdl_view_read_f32(&f->mem, &v, out);
    assert_memory_equal(in, out, sizeof in);
    assert_int_equal(f->hbm.pages_allocated, 1);
}

/* ---- Bounds messages ---------------------------------------------------------------------- */

static void check_view_msg(mem_fx_t *f, const isa_view_t *v, const char *msg)
{
    char err[256] = "";
    int rc = mdl_view_check(&f->mem, v, err, sizeof err);
    if (!msg) {
        if (rc)
            fail_msg("unexpected error: %s", err);
        return;
    }
    assert_int_equal(rc, -1);
    if (strcmp(err, msg) != 0)
        fail_msg("got \"%s\", want \"%s\"", err, msg);
}

static void test_view_check_messages(void **state)
{
    mem_fx_t *f = *state;
    const int64_t s1[] = {1};
    const uint32_t c4[] = {4}, c128[] = {128};
    isa_view_t v;

    v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 64, 128, 0, 1, s1, c4);
    check_view_msg(f, &v, "SBUF partitions 64..191 out of range (128 partitions)");

    v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 3, 1, 196600, 1, s1, c4);
    check_view_msg(f, &v, "SBUF bytes 196600..196616 of partition 3 beyond 196608");

    v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, 128, 196592, 1, s1, c4);
    check_view_msg(f, &v, NULL); /* exactly up to the end */
    v.offset += 4;
    check_view_msg(f, &v, "SBUF bytes 196596..196612 of partitions 0..127 beyond 196608");

    v = tu_view(ISA_SPACE_PSUM, ISA_DT_FP32, 0, 1, 16384 - 8, 1, s1, c4);
    check_view_msg(f, &v, "PSUM bytes 16376..16392 of partition 0 beyond 16384");

    v = tu_view(ISA_SPACE_HBM, ISA_DT_FP32, 0, 1, 0x7ffffff00ull, 1, s1, c128);
    check_view_msg(f, &v, "HBM bytes 0x7ffffff00-0x800000100 beyond 34359738368");

    /* A negative stride walking below the start of the partition. */
    const int64_t sneg[] = {-4};
    v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, 1, 8, 1, sneg, c4);
    check_view_msg(f, &v, "SBUF bytes -40..12 of partition 0 start below 0");
    v.offset = 48;
    check_view_msg(f, &v, NULL);

    const uint32_t c0[] = {0};
    v = tu_view(ISA_SPACE_SBUF, ISA_DT_BF16, 0, 1, 0, 1, s1, c0);
    check_view_msg(f, &v, "SBUF view dim 1 has count 0 (must be 1..65535)");

    const int64_t s5[] = {1, 1, 1, 1, 1};
    const uint32_t c5[] = {1, 1, 1, 1, 1};
    v = tu_view(ISA_SPACE_SBUF, ISA_DT_BF16, 0, 1, 0, 5, s5, c5);
    check_view_msg(f, &v, "SBUF view has 5 free dims (at most 4)");
    v = tu_view(ISA_SPACE_HBM, ISA_DT_BF16, 0, 1, 0, 5, s5, c5);
    check_view_msg(f, &v, NULL);

    const int64_t shuge[] = {INT64_MAX / 2};
    const uint32_t c3[] = {3};
    v = tu_view(ISA_SPACE_HBM, ISA_DT_FP32, 0, 1, 0, 1, shuge, c3);
    check_view_msg(f, &v, "HBM view strides overflow the address space");

    v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, 0, 0, 1, s1, c4);
    check_view_msg(f, &v, "SBUF view has no partitions");

    mdl_mem_t nohbm = {&f->sbuf, &f->psum, NULL};
    v = tu_view(ISA_SPACE_HBM, ISA_DT_FP32, 0, 1, 0, 1, s1, c4);
    char err[128];
    assert_int_equal(mdl_view_check(&nohbm, &v, err, sizeof err), -1);
    assert_string_equal(err, "no HBM attached");
}

/* ---- Gather / scatter -------------------------------------------------------------------------
 */

/* Byte address of element (p, i0..i3) computed naively. */
static int64_t naive_addr(const isa_view_t *v, uint64_t bytes, unsigned p, const uint32_t *idx)
{
    int64_t es = isa_dtype_size((isa_dtype_t)v->dtype);
    int64_t a = (int64_t)v->offset +
                (v->space == ISA_SPACE_HBM ? 0 : (int64_t)(v->pstart + p) * (int64_t)bytes);
    for (unsigned k = 0; k < v->ndims; k++)
        a += v->stride[k] * (int64_t)idx[k] * es;
    return a;
}

/* Enumerate a view's elements in row-major order, calling back with the naive address. */
static size_t naive_addrs(const isa_view_t *v, uint64_t bytes, int64_t *out)
{
    size_t n = 0;
    unsigned pc = v->space == ISA_SPACE_HBM ? 1 : v->pcount;
    for (unsigned p = 0; p < pc; p++) {
        uint32_t idx[ISA_MAX_DIMS] = {0};
        for (;;) {
            out[n++] = naive_addr(v, bytes, p, idx);
            unsigned k = v->ndims;
            while (k > 0 && ++idx[k - 1] == v->count[k - 1])
                idx[--k] = 0;
            if (k == 0)
                break;
        }
    }
    return n;
}

static void test_sbuf_strided_read_write(void **state)
{
    mem_fx_t *f = *state;
    /* Fill partitions 8..11 with fp32 values that encode (partition, word). */
    for (unsigned p = 8; p < 12; p++)
        for (unsigned w = 0; w < 1024; w++) {
            float val = (float)(p * 100000 + w);
            memcpy(f->sbuf.data + (size_t)p * SBUF_BYTES + 4 * w, &val, 4);
        }
    /* [4 partitions from 8] x [3 rows of stride 40] x [5 elems of stride -2], starting at
     * word 20: exercises a negative innermost stride (staged path). */
    const int64_t st[] = {40, -2};
    const uint32_t ct[] = {3, 5};
    isa_view_t v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 8, 4, 80, 2, st, ct);
    check_view_msg(f, &v, NULL);
    float got[60];
    int64_t addrs[60];
    mdl_view_read_f32(&f->mem, &v, got);
    assert_int_equal(naive_addrs(&v, SBUF_BYTES, addrs), 60);
    for (int i = 0; i < 60; i++) {
        float want;
        memcpy(&want, f->sbuf.data + addrs[i], 4);
        assert_true(got[i] == want);
    }
    /* Write through a transposed-like view (stride 7 innermost) and check memory. */
    const int64_t st2[] = {1, 7};
    const uint32_t ct2[] = {7, 9};
    isa_view_t w = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 8, 4, 4000, 2, st2, ct2);
    float in[4 * 63];
    for (int i = 0; i < 4 * 63; i++)
        in[i] = (float)i + 0.25f;
    assert_int_equal(mdl_view_write_f32(&f->mem, &w, in, MDL_ROUND_NEAREST_EVEN, NULL), 0);
    int64_t waddr[4 * 63];
    assert_int_equal(naive_addrs(&w, SBUF_BYTES, waddr), 4 * 63);
    for (int i = 0; i < 4 * 63; i++) {
        float m;
        memcpy(&m, f->sbuf.data + waddr[i], 4);
        assert_true(m == in[i]);
    }
}

static void test_broadcast_and_unit_dims(void **state)
{
    mem_fx_t *f = *state;
    float v0 = 7.5f, v1 = -2.0f;
    memcpy(f->sbuf.data + 16, &v0, 4);
    memcpy(f->sbuf.data + SBUF_BYTES + 16, &v1, 4);
    /* [2, 1x1, 0x300]: each partition's element broadcast 300 times. */
    const int64_t st[] = {1, 0};
    const uint32_t ct[] = {1, 300};
    isa_view_t v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, 2, 16, 2, st, ct);
    float got[600];
    mdl_view_read_f32(&f->mem, &v, got);
    for (int i = 0; i < 600; i++)
        assert_true(got[i] == (i < 300 ? v0 : v1));
    /* Writing a broadcast view: the last value in row-major order wins. */
    float in[600];
    for (int i = 0; i < 600; i++)
        in[i] = (float)i;
    assert_int_equal(mdl_view_write_f32(&f->mem, &v, in, MDL_ROUND_NEAREST_EVEN, NULL), 0);
    float m0, m1;
    memcpy(&m0, f->sbuf.data + 16, 4);
    memcpy(&m1, f->sbuf.data + SBUF_BYTES + 16, 4);
    assert_true(m0 == 299.0f && m1 == 599.0f);
}

static void test_hbm_views_across_pages(void **state)
{
    mem_fx_t *f = *state;
    /* bf16 [3 x 700000] rows 1.5 MB apart straddling page boundaries, odd start address. */
    const uint64_t base = 3 * MDL_HBM_PAGE_SIZE - 1001;
    const int64_t st[] = {800000, 1};
    const uint32_t ct[] = {3, 65535};
    isa_view_t v = tu_view(ISA_SPACE_HBM, ISA_DT_BF16, 0, 1, base, 2, st, ct);
    check_view_msg(f, &v, NULL);
    const size_t n = 3 * 65535;
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    /* Unwritten HBM reads as zeros. */
    mdl_view_read_f32(&f->mem, &v, out);
    for (size_t i = 0; i < n; i++)
        assert_true(out[i] == 0.0f);
    for (size_t i = 0; i < n; i++)
        in[i] = (float)((int)(i % 256) - 128) * 0.5f; /* exact in bf16 */
    assert_int_equal(mdl_view_write_f32(&f->mem, &v, in, MDL_ROUND_NEAREST_EVEN, NULL), 0);
    mdl_view_read_f32(&f->mem, &v, out);
    assert_memory_equal(in, out, n * sizeof *in);
    /* Same data through a strided (every 3rd element, reversed) view, compared naively. */
    const int64_t st2[] = {-3};
    const uint32_t ct2[] = {20000};
    isa_view_t r = tu_view(ISA_SPACE_HBM, ISA_DT_BF16, 0, 1, base + 2 * 60000, 1, st2, ct2);
    check_view_msg(f, &r, NULL);
    mdl_view_read_f32(&f->mem, &r, out);
    for (size_t i = 0; i < 20000; i++) {
        uint8_t raw[2];
        mdl_hbm_read(&f->hbm, base + 2 * 60000 - 6 * i, raw, 2);
        assert_true(out[i] == mdl_load_f32(ISA_DT_BF16, raw));
    }
    /* A strided write over a fresh region straddling a page boundary. */
    const int64_t st3[] = {5};
    const uint32_t ct3[] = {1000};
    isa_view_t w =
        tu_view(ISA_SPACE_HBM, ISA_DT_FP32, 0, 1, 9 * MDL_HBM_PAGE_SIZE - 10002, 1, st3, ct3);
    assert_int_equal(mdl_view_write_f32(&f->mem, &w, in, MDL_ROUND_NEAREST_EVEN, NULL), 0);
    for (size_t i = 0; i < 1000; i++) {
        float m;
        mdl_hbm_read(&f->hbm, 9 * MDL_HBM_PAGE_SIZE - 10002 + 20 * i, &m, 4);
        assert_true(m == in[i]);
    }
    free(in);
    free(out);
}

/* ---- Conversions -------------------------------------------------------------------------- */

/* Values written through views of each type read back as NumPy rounds them. */
static void test_conversions_vs_numpy(void **state)
{
    mem_fx_t *f = *state;
    enum { N = 200 };
    float in[N];
    uint32_t seed = 12345;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        float u = (float)(seed >> 8) / 16777216.0f;
        in[i] = (u - 0.5f) * (i < 100 ? 8.0f : 600.0f); /* small, then beyond fp8e4's 240 */
    }
    in[0] = 0.0f;
    in[1] = 1.0f + 1.0f / 256.0f; /* a bf16 tie: rounds to even (1.0) */
    in[2] = 1.0f + 3.0f / 256.0f; /* a tie rounding up */
    const char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/in.f32", dir);
    assert_int_equal(tu_write_file(path, in, sizeof in), 0);
    const isa_dtype_t types[] = {ISA_DT_BF16, ISA_DT_FP16, ISA_DT_FP8E4, ISA_DT_I8};
    const int64_t st[] = {1};
    const uint32_t ct[] = {N / 2};
    for (unsigned t = 0; t < 4; t++) {
        /* Two partitions of N/2 at an odd offset. */
        isa_view_t v = tu_view(ISA_SPACE_SBUF, types[t], 32, 2, 1000 + 2 * t, 1, st, ct);
        assert_int_equal(mdl_view_write_f32(&f->mem, &v, in, MDL_ROUND_NEAREST_EVEN, NULL), 0);
        float out[N];
        mdl_view_read_f32(&f->mem, &v, out);
        snprintf(path, sizeof path, "%s/%s.f32", dir, isa_dtype_name(types[t]));
        assert_int_equal(tu_write_file(path, out, sizeof out), 0);
    }
    static const char code[] =
        "import numpy as np, sys, math\n"
        "D = sys.argv[1]\n"
        "x = np.fromfile(D + '/in.f32', np.float32)\n"
        "def bf16(a):\n"
        "    u = a.view(np.uint32).astype(np.uint64)\n"
        "    r = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32)\n"
        "    return r.view(np.float32)\n"
        "tab = []\n"
        "for code in range(120):\n"
        "    e, m = code >> 3, code & 7\n"
        "    tab.append((m / 8) * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0**(e - 7))\n"
        "tab = np.array(tab)\n"
        "def fp8e4(a):\n"
        "    out = []\n"
        "    for v in a.astype(np.float64):\n"
        "        s, av = (-1.0 if v < 0 else 1.0), abs(v)\n"
        "        if av >= tab[-1]: out.append(s * tab[-1]); continue\n"
        "        j = int(np.searchsorted(tab, av))\n"
        "        if av == tab[j]: out.append(s * av); continue\n"
        "        lo, hi = tab[j - 1], tab[j]\n"
        "        r = lo if av - lo < hi - av else hi if av - lo > hi - av else (lo if (j - 1) % 2 "
        "== 0 else hi)\n"
        "        out.append(s * r)\n"
        "    return np.array(out, np.float32)\n"
        "want = {'bf16': bf16(x), 'fp16': x.astype(np.float16).astype(np.float32),\n"
        "        'fp8e4': fp8e4(x), 'i8': np.clip(np.rint(x), -128, 127).astype(np.float32)}\n"
        "bad = 0\n"
        "for t, w in want.items():\n"
        "    g = np.fromfile(D + '/' + t + '.f32', np.float32)\n"
        "    for i in np.nonzero(g != w)[0]:\n"
        "        print(t, i, x[i], g[i], w[i]); bad += 1\n"
        "print('bad', bad)\n";
    char *out = NULL;
    int rc = tu_python(code, dir, &out);
    if (rc != 0 || !out || !strstr(out, "bad 0"))
        fail_msg("python rc=%d:\n%s", rc, out ? out : "");
    free(out);
    tu_rmdir(dir);
}

static void test_i64_access(void **state)
{
    mem_fx_t *f = *state;
    const int64_t st[] = {1};
    const uint32_t ct[] = {6};
    const int64_t big[6] = {16777217, -2147483648ll, 2147483647, -1, 5000000000ll, 0};
    isa_view_t v = tu_view(ISA_SPACE_SBUF, ISA_DT_I32, 5, 1, 12, 1, st, ct);
    assert_int_equal(mdl_view_write_i64(&f->mem, &v, big), 0);
    int64_t back[6];
    mdl_view_read_i64(&f->mem, &v, back);
    const int64_t want[6] = {16777217, -2147483648ll, 2147483647, -1, 2147483647, 0};
    assert_memory_equal(back, want, sizeof want);
    /* u8 saturates. */
    isa_view_t u = tu_view(ISA_SPACE_SBUF, ISA_DT_U8, 5, 1, 100, 1, st, ct);
    assert_int_equal(mdl_view_write_i64(&f->mem, &u, big), 0);
    mdl_view_read_i64(&f->mem, &u, back);
    const int64_t wu[6] = {255, 0, 255, 0, 255, 0};
    assert_memory_equal(back, wu, sizeof wu);
    /* HBM i64 access on an unwritten page is zero. */
    isa_view_t h = tu_view(ISA_SPACE_HBM, ISA_DT_I16, 0, 1, 12345678, 1, st, ct);
    mdl_view_read_i64(&f->mem, &h, back);
    for (int i = 0; i < 6; i++)
        assert_int_equal(back[i], 0);
}

static void test_ranges_and_bytes(void **state)
{
    mem_fx_t *f = *state;
    /* [16 partitions, 10 x 3 stride 5, ... ] read in pieces equals one full read. */
    const int64_t st[] = {20, 3, 1};
    const uint32_t ct[] = {4, 5, 3};
    isa_view_t v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP16, 16, 16, 64, 3, st, ct);
    check_view_msg(f, &v, NULL);
    const size_t n = isa_view_elems(&v);
    assert_int_equal(n, 16 * 60);
    float *in = malloc(n * sizeof *in), *full = malloc(n * sizeof *full),
          *part = malloc(n * sizeof *part);
    for (size_t i = 0; i < n; i++)
        in[i] = (float)i * 0.5f;
    assert_int_equal(mdl_view_write_f32(&f->mem, &v, in, MDL_ROUND_NEAREST_EVEN, NULL), 0);
    mdl_view_read_f32(&f->mem, &v, full);
    assert_memory_equal(in, full, n * sizeof *in);
    for (size_t first = 0; first < n; first += 77) {
        size_t k = n - first < 77 ? n - first : 77;
        mdl_view_read_f32_range(&f->mem, &v, first, k, part + first);
    }
    assert_memory_equal(full, part, n * sizeof *full);
    /* Raw bytes: copy the view's elements to HBM and back byte-exactly. */
    uint16_t *raw = malloc(n * 2), *raw2 = malloc(n * 2);
    mdl_view_read_bytes_range(&f->mem, &v, 0, n, raw);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(raw[i], mdl_f32_to_fp16_bits(in[i]));
    const int64_t hs[] = {1};
    const uint32_t hc[] = {(uint32_t)n};
    isa_view_t h = tu_view(ISA_SPACE_HBM, ISA_DT_FP16, 0, 1, MDL_HBM_PAGE_SIZE - 100, 1, hs, hc);
    assert_int_equal(mdl_view_write_bytes_range(&f->mem, &h, 0, n, raw), 0);
    mdl_view_read_bytes_range(&f->mem, &h, 0, n, raw2);
    assert_memory_equal(raw, raw2, n * 2);
    /* Ranged writes. */
    for (size_t first = 0; first < n; first += 100) {
        size_t k = n - first < 100 ? n - first : 100;
        assert_int_equal(mdl_view_write_f32_range(&f->mem, &h, first, k, in + first,
                                                  MDL_ROUND_NEAREST_EVEN, NULL),
                         0);
    }
    mdl_view_read_f32(&f->mem, &h, part);
    assert_memory_equal(in, part, n * sizeof *in);
    /* A tile (16 partitions x 24 contiguous fp32: a two-dimensional plan, walked row by
     * row) read and written in whole rows from a row other than the first, and in pieces
     * that cut rows: every way gives the values written. */
    const int64_t ts[] = {1};
    const uint32_t tc[] = {24};
    isa_view_t t = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 8, 16, 512, 1, ts, tc);
    check_view_msg(f, &t, NULL);
    const size_t tn = isa_view_elems(&t);
    assert_int_equal(tn, 16 * 24);
    for (size_t first = 0; first < tn; first += 48) /* two rows at a time */
        assert_int_equal(mdl_view_write_f32_range(&f->mem, &t, first, 48, in + first,
                                                  MDL_ROUND_NEAREST_EVEN, NULL),
                         0);
    memset(full, 0, tn * sizeof *full);
    mdl_view_read_f32(&f->mem, &t, full);
    assert_memory_equal(in, full, tn * sizeof *in);
    for (size_t step = 24; step <= 72; step += 17) { /* 24, 41, 58: whole rows, then not */
        memset(part, 0, tn * sizeof *part);
        for (size_t first = 0; first < tn; first += step) {
            size_t k = tn - first < step ? tn - first : step;
            mdl_view_read_f32_range(&f->mem, &t, first, k, part + first);
        }
        assert_memory_equal(in, part, tn * sizeof *in);
    }
    free(in);
    free(full);
    free(part);
    free(raw);
    free(raw2);
}

/*
 * mdl_view_copy_bytes (a DMA between HBM and SBUF without a staging copy) against the plain
 * path it replaces, a packed read of the source and a packed write of the destination: two
 * identical memories, one copied each way, must end byte for byte the same. Views: strided
 * and reversed, elements straddling HBM pages, contiguous runs crossing them, unwritten HBM
 * pages (zeros), every element size.
 */
static void fill_pattern(mem_fx_t *f, uint32_t seed)
{
    uint32_t x = seed;
    for (size_t i = 0; i < (size_t)128 * SBUF_BYTES; i += 4096) /* a word per page is enough */
        for (size_t j = 0; j < 64; j++) {
            x = x * 1664525u + 1013904223u;
            f->sbuf.data[i + j * 61] = (uint8_t)(x >> 24);
        }
    uint8_t buf[4096];
    for (uint64_t page = 1; page <= 3; page++) /* page 0 and 4.. stay unwritten */
        for (uint64_t o = 0; o < MDL_HBM_PAGE_SIZE; o += sizeof buf) {
            for (size_t j = 0; j < sizeof buf; j++) {
                x = x * 1664525u + 1013904223u;
                buf[j] = (uint8_t)(x >> 24);
            }
            assert_int_equal(mdl_hbm_write(&f->hbm, page * MDL_HBM_PAGE_SIZE + o, buf, sizeof buf),
                             0);
        }
}

static void assert_same_memory(mem_fx_t *a, mem_fx_t *b)
{
    assert_memory_equal(a->sbuf.data, b->sbuf.data, (size_t)128 * SBUF_BYTES);
    uint8_t *x = malloc(MDL_HBM_PAGE_SIZE), *y = malloc(MDL_HBM_PAGE_SIZE);
    assert_non_null(x);
    assert_non_null(y);
    for (uint64_t page = 0; page < 6; page++) {
        mdl_hbm_read(&a->hbm, page * MDL_HBM_PAGE_SIZE, x, MDL_HBM_PAGE_SIZE);
        mdl_hbm_read(&b->hbm, page * MDL_HBM_PAGE_SIZE, y, MDL_HBM_PAGE_SIZE);
        assert_memory_equal(x, y, MDL_HBM_PAGE_SIZE);
    }
    free(x);
    free(y);
}

static void test_copy_bytes_matches_staged(void **state)
{
    mem_fx_t *a = *state, *b = NULL;
    assert_int_equal(setup((void **)&b), 0);
    fill_pattern(a, 7);
    fill_pattern(b, 7);
    const uint64_t P = MDL_HBM_PAGE_SIZE;
    struct {
        isa_view_t d, s;
    } cases[8];
    unsigned nc = 0;
    {
        /* HBM rows crossing page 1 -> 2 into [128, 2, 300] SBUF, bf16 */
        const int64_t hs[] = {600, 1}, ss[] = {700, 1};
        const uint32_t hc[] = {256, 300}, sc[] = {2, 300};
        cases[nc].s = tu_view(ISA_SPACE_HBM, ISA_DT_BF16, 0, 1, 2 * P - 1000, 2, hs, hc);
        cases[nc++].d = tu_view(ISA_SPACE_SBUF, ISA_DT_BF16, 0, 128, 6, 2, ss, sc);
    }
    {
        /* SBUF every other fp32, reversed rows -> HBM with an element straddling page 2 -> 3 */
        const int64_t ss[] = {-40, 2}, hs[] = {1};
        const uint32_t sc[] = {5, 20}, hc[] = {100 * 64};
        cases[nc].s = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 32, 64, 4000, 2, ss, sc);
        cases[nc++].d = tu_view(ISA_SPACE_HBM, ISA_DT_FP32, 0, 1, 3 * P - 4 * 3000 - 2, 1, hs, hc);
    }
    {
        /* unwritten HBM page 0 (zeros) and page 1 into SBUF, fp8, strided destination */
        const int64_t hs[] = {4000, 1}, ss[] = {3};
        const uint32_t hc[] = {128, 4000}, sc[] = {4000};
        cases[nc].s = tu_view(ISA_SPACE_HBM, ISA_DT_FP8E4, 0, 1, P - 128 * 2000, 2, hs, hc);
        cases[nc++].d = tu_view(ISA_SPACE_SBUF, ISA_DT_FP8E4, 0, 128, 20000, 1, ss, sc);
    }
    {
        /* SBUF -> HBM strided destination crossing page 4 -> 5 (fresh pages), fp16 */
        const int64_t ss[] = {1}, hs[] = {3, -1};
        const uint32_t sc[] = {1000}, hc[] = {16000, 8};
        cases[nc].s = tu_view(ISA_SPACE_SBUF, ISA_DT_FP16, 0, 128, 100, 1, ss, sc);
        cases[nc++].d = tu_view(ISA_SPACE_HBM, ISA_DT_FP16, 0, 1, 5 * P - 60000, 2, hs, hc);
    }
    {
        /* a contiguous HBM run spanning whole pages, written and not, into SBUF, i32 */
        const int64_t hs[] = {40000, 1}, ss[] = {1};
        const uint32_t hc[] = {128, 40000}, sc[] = {40000};
        cases[nc].s = tu_view(ISA_SPACE_HBM, ISA_DT_I32, 0, 1, P + 8, 2, hs, hc);
        cases[nc++].d = tu_view(ISA_SPACE_SBUF, ISA_DT_I32, 0, 128, 0, 1, ss, sc);
    }
    for (unsigned i = 0; i < nc; i++) {
        const isa_view_t *d = &cases[i].d, *s = &cases[i].s;
        char msg[256];
        if (mdl_view_check(&a->mem, d, msg, sizeof msg) ||
            mdl_view_check(&a->mem, s, msg, sizeof msg))
            fail_msg("case %u: %s", i, msg);
        const uint64_t n = isa_view_elems(s);
        assert_int_equal(isa_view_elems(d), n);
        uint8_t *buf = malloc(n * isa_dtype_size((isa_dtype_t)s->dtype));
        assert_non_null(buf);
        mdl_view_read_bytes_range(&a->mem, s, 0, n, buf);
        assert_int_equal(mdl_view_write_bytes_range(&a->mem, d, 0, n, buf), 0);
        free(buf);
        assert_int_equal(mdl_view_copy_bytes(&b->mem, d, s), 0);
        assert_same_memory(a, b);
    }
    teardown((void **)&b);
}

/* SBUF/PSUM memory freed by one simulator and taken by the next reads as zero everywhere:
 * pages written, pages only read (the shared zero page), pages never touched, a last page
 * cut short. */
static void test_onchip_reuse_is_zero(void **state)
{
    (void)state;
    const uint64_t bytes = 3 * 4096 + 100; /* not a whole number of pages per partition */
    const size_t n = (size_t)16 * bytes, pages = (n + 4095) / 4096;
    for (int round = 0; round < 4; round++) {
        mdl_onchip_t m;
        assert_int_equal(mdl_onchip_init(&m, 16, bytes), 0);
        if (round == 3) {
            for (size_t i = 0; i < n; i++)
                if (m.data[i])
                    fail_msg("byte %zu of a reused on-chip memory is %u", i, m.data[i]);
            mdl_onchip_free(&m);
            break;
        }
        /* (reading every byte would map every page: the last round does) */
        if (m.data[n - 1])
            fail_msg("round %d: the last byte of a reused on-chip memory is %u", round,
                     m.data[n - 1]);
        /* dirty every third page (a different third each round) but the two before the
         * last, read others, dirty the last byte alone in its page */
        volatile uint8_t sink = 0;
        for (size_t q = 0; q + 3 < pages; q++) {
            uint8_t *b = &m.data[q * 4096 + (q * 131) % 4096];
            if (*b)
                fail_msg("round %d: byte %zu of a reused on-chip memory is %u", round,
                         (size_t)(b - m.data), *b);
            if (q % 3 == (size_t)round)
                *b = (uint8_t)(q | 1);
            else if (q % 3 == (size_t)(round + 1) % 3)
                sink = (uint8_t)(sink + m.data[q * 4096 + 7]);
        }
        m.data[n - 1] = 0xff;
        (void)sink;
        mdl_onchip_free(&m);
    }
}

typedef struct runs_seen {
    unsigned runs;
    uint64_t elems;
    uint64_t first_addr;
} runs_seen_t;

static int count_run(void *ctx, uint64_t addr, int64_t bs, uint64_t n, uint32_t es)
{
    runs_seen_t *r = ctx;
    if (r->runs == 0)
        r->first_addr = addr;
    r->runs++;
    r->elems += n;
    (void)bs;
    (void)es;
    return 0;
}

static void test_runs_merge(void **state)
{
    mem_fx_t *f = *state;
    /* Whole partitions, contiguous: one run across all 128 partitions. */
    const int64_t st[] = {SBUF_BYTES / 4 / 2, 1};
    const uint32_t ct[] = {2, SBUF_BYTES / 4 / 2};
    isa_view_t v = tu_view(ISA_SPACE_SBUF, ISA_DT_FP32, 0, 128, 0, 2, st, ct);
    check_view_msg(f, &v, NULL);
    runs_seen_t r = {0, 0, 0};
    assert_int_equal(mdl_view_runs(&f->mem, &v, count_run, &r), 0);
    assert_int_equal(r.runs, 1);
    assert_int_equal(r.elems, 128ull * SBUF_BYTES / 4);
    /* [64 partitions from 64, 512 contiguous]: one run per partition. */
    const int64_t st2[] = {1};
    const uint32_t ct2[] = {512};
    v = tu_view(ISA_SPACE_PSUM, ISA_DT_FP32, 64, 64, 2048, 1, st2, ct2);
    memset(&r, 0, sizeof r);
    assert_int_equal(mdl_view_runs(&f->mem, &v, count_run, &r), 0);
    assert_int_equal(r.runs, 64);
    assert_int_equal(r.elems, 64 * 512);
    assert_int_equal(r.first_addr, 64ull * PSUM_BYTES + 2048);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hbm_lazy_32g),
        cmocka_unit_test_setup_teardown(test_hbm_view_top_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_view_check_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sbuf_strided_read_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broadcast_and_unit_dims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hbm_views_across_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conversions_vs_numpy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_i64_access, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges_and_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runs_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_bytes_matches_staged, setup, teardown),
        cmocka_unit_test(test_onchip_reuse_is_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
