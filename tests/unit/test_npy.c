/*
 * test_npy.c -- the .npy reader and writer: files we write are read by NumPy
 * (/usr/bin/python3, python3-numpy) with the right dtype, shape and values; files NumPy writes
 * (versions 1.0, 2.0, 3.0) read back exactly; malformed files are refused with their own
 * messages and never crash the reader; writes are atomic.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npy.h"
#include "testutil.h"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "%s", tu_tmpdir());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(tmpdir);
    return 0;
}

static const char *tmp_path(const char *name)
{
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

/*
 * The test pattern of element i for each type, computed identically here and in Python:
 * it covers negative values, the type's extremes and (for floats) fractions, inf and nan.
 */
static const char *const pattern_py =
    "import sys, numpy as np\n"
    "def pattern(descr, n):\n"
    "    t = np.dtype(descr)\n"
    "    if t.kind in 'iu':\n"
    "        info = np.iinfo(t)\n"
    "        lo, span = int(info.min), int(info.max) - int(info.min) + 1\n"
    "        v = [lo if k == 0 else int(info.max) if k == 1 else (k * 37 - 50 - lo) % span + lo\n"
    "             for k in range(n)]\n"
    "        return np.array(v, dtype=t)\n"
    "    if t.kind == 'b':\n"
    "        return np.array([k % 3 == 0 for k in range(n)], dtype=t)\n"
    "    v = np.array([((k * 37 - 50) % 200 - 100) / 8.0 for k in range(n)]).astype(t)\n"
    "    if n > 2:\n"
    "        v[2] = np.inf\n"
    "    if n > 3:\n"
    "        v[3] = np.nan\n"
    "    if n > 4:\n"
    "        v[4] = np.finfo(t).max\n"
    "    return v\n";

/* The same pattern in C, as little-endian bytes of type t. */
static void pattern_bytes(mdl_npy_type_t t, uint64_t n, void *out)
{
    unsigned char *b = out;
    for (uint64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)i * 37 - 50;
        /* Floats: ((37i - 50) mod 200 - 100) / 8, Python's floor modulo; at most 8
         * significant bits, so exact in fp16. */
        int64_t m = v % 200;
        double f64 = (double)((m < 0 ? m + 200 : m) - 100) / 8.0;
        uint32_t size = mdl_npy_type_size(t);
        unsigned char *e = b + i * size;
        switch (t) {
        case MDL_NPY_BOOL:
            e[0] = i % 3 == 0;
            break;
        case MDL_NPY_F2: {
            /* Encoded by hand: 0x7c00 inf, 0x7e00 nan, 0x7bff max, else normal values. */
            uint16_t h;
            if (i == 2)
                h = 0x7c00;
            else if (i == 3)
                h = 0x7e00;
            else if (i == 4)
                h = 0x7bff;
            else {
                float f = (float)f64;
                uint32_t sign = f < 0 ? 0x8000u : 0;
                float a = f < 0 ? -f : f;
                if (a == 0) {
                    h = (uint16_t)sign;
                } else {
                    int exp = 0;
                    while (a >= 2.0f) {
                        a /= 2.0f;
                        exp++;
                    }
                    while (a < 1.0f) {
                        a *= 2.0f;
                        exp--;
                    }
                    uint32_t mant = (uint32_t)((a - 1.0f) * 1024.0f);
                    h = (uint16_t)(sign | (uint32_t)(exp + 15) << 10 | mant);
                }
            }
            memcpy(e, &h, 2);
            break;
        }
        case MDL_NPY_F4: {
            float f = i == 2   ? 1.0f / 0.0f
                      : i == 3 ? __builtin_nanf("")
                      : i == 4 ? 3.40282347e38f
                               : (float)f64;
            memcpy(e, &f, 4);
            break;
        }
        case MDL_NPY_F8: {
            double d = i == 2   ? 1.0 / 0.0
                       : i == 3 ? __builtin_nan("")
                       : i == 4 ? 1.7976931348623157e308
                                : f64;
            memcpy(e, &d, 8);
            break;
        }
        default: {
            /* Integers: extremes at 0 and 1, then wrap 37i - 50 into range. */
            int is_signed =
                t == MDL_NPY_I1 || t == MDL_NPY_I2 || t == MDL_NPY_I4 || t == MDL_NPY_I8;
            uint64_t bits = size * 8;
            uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
            uint64_t u;
            if (i == 0)
                u = is_signed ? (1ull << (bits - 1)) : 0; /* min */
            else if (i == 1)
                u = is_signed ? (1ull << (bits - 1)) - 1 : mask; /* max */
            else
                u = (uint64_t)v & mask; /* two's complement wrap == Python's modulo */
            for (uint32_t k = 0; k < size; k++)
                e[k] = (unsigned char)(u >> (8 * k));
            break;
        }
        }
    }
}

/*
 * Every supported type, written by us, read by numpy.load: dtype string, shape, values and
 * the header layout. One Python run checks all files, listed in a manifest of lines
 * "PATH DESCR DIM...".
 */
static void test_write_read_by_numpy(void **state)
{
    (void)state;
    const uint64_t shapes[][3] = {{3, 4, 5}, {7, 0, 0}, {0, 0, 0}};
    const uint32_t ndims[] = {3, 1, 0};
    char manifest_path[512];
    snprintf(manifest_path, sizeof manifest_path, "%s", tmp_path("manifest.txt"));
    FILE *manifest = fopen(manifest_path, "w");
    assert_non_null(manifest);
    for (int t = 0; t < MDL_NPY_TYPE_COUNT; t++) {
        for (int s = 0; s < 3; s++) {
            uint64_t n = 1;
            for (uint32_t d = 0; d < ndims[s]; d++)
                n *= shapes[s][d];
            size_t size = mdl_npy_type_size((mdl_npy_type_t)t);
            void *data = malloc(n * size + 1);
            assert_non_null(data);
            pattern_bytes((mdl_npy_type_t)t, n, data);
            char name[64];
            snprintf(name, sizeof name, "w%d_%d.npy", t, s);
            const char *path = tmp_path(name);
            char err[512] = "";
            ncsim_status_t st = mdl_npy_write(path, mdl_npy_type_descr((mdl_npy_type_t)t),
                                              shapes[s], ndims[s], data, err, sizeof err);
            if (st != NCSIM_OK)
                fprintf(stderr, "%s\n", err);
            assert_int_equal(st, NCSIM_OK);
            free(data);
            fprintf(manifest, "%s %s", path, mdl_npy_type_descr((mdl_npy_type_t)t));
            for (uint32_t d = 0; d < ndims[s]; d++)
                fprintf(manifest, " %llu", (unsigned long long)shapes[s][d]);
            fprintf(manifest, "\n");
        }
    }
    assert_int_equal(fclose(manifest), 0);

    char code[4096];
    snprintf(
        code, sizeof code,
        "%s"
        "checked = 0\n"
        "for line in open(sys.argv[1]):\n"
        "    path, descr, *dims = line.split()\n"
        "    shape = tuple(int(x) for x in dims)\n"
        "    a = np.load(path)\n"
        "    assert a.dtype.str == descr, (path, a.dtype.str, descr)\n"
        "    assert a.shape == shape, (path, a.shape, shape)\n"
        "    assert a.flags.c_contiguous, path\n"
        "    want = pattern(descr, a.size).reshape(shape)\n"
        "    assert np.array_equal(a, want, equal_nan=(a.dtype.kind == 'f')), (path, a, want)\n"
        "    raw = open(path, 'rb').read()\n"
        "    assert raw[6:8] == bytes([1, 0]), path\n"
        "    hl = raw[8] | raw[9] << 8\n"
        "    assert (10 + hl) %% 64 == 0 and raw[9 + hl] == 10, path\n"
        "    checked += 1\n"
        "print('OK', checked)\n",
        pattern_py);
    char *out = NULL;
    int rc = tu_python(code, manifest_path, &out);
    if (rc != 0)
        fprintf(stderr, "numpy check failed (rc %d): %s\n", rc, out ? out : "");
    assert_int_equal(rc, 0);
    char want[32];
    snprintf(want, sizeof want, "OK %d\n", MDL_NPY_TYPE_COUNT * 3);
    assert_string_equal(out, want);
    free(out);
}

/* Files written by numpy.save (and format versions 2.0 and 3.0) read back exactly. */
static void test_read_numpy_files(void **state)
{
    (void)state;
    char code[4096];
    snprintf(code, sizeof code,
             "%s"
             "import numpy.lib.format as fmt\n"
             "d = sys.argv[1]\n"
             "descrs = ['|b1', '|i1', '|u1', '<i2', '<u2', '<i4', '<u4', '<i8', '<u8', "
             "'<f2', '<f4', '<f8']\n"
             "for k, descr in enumerate(descrs):\n"
             "    np.save(f'{d}/r{k}_a.npy', pattern(descr, 60).reshape(3, 4, 5))\n"
             "    np.save(f'{d}/r{k}_b.npy', pattern(descr, 9))\n"
             "    np.save(f'{d}/r{k}_c.npy', pattern(descr, 1).reshape(()))\n"
             "    np.save(f'{d}/r{k}_d.npy', pattern(descr, 0).reshape(2, 0))\n"
             "    np.save(f'{d}/r{k}_f.npy', np.asfortranarray(pattern(descr, 60).reshape(3, 4, 5)))\n"
             "    np.save(f'{d}/r{k}_e.npy', pattern(descr, 60).reshape(3, 4, 5).astype(descr.replace('<', '>')))\n"
             "    for v in (2, 3):\n"
             "        with open(f'{d}/r{k}_v{v}.npy', 'wb') as f:\n"
             "            fmt.write_array(f, pattern(descr, 6).reshape(1, 2, 3, 1), "
             "version=(v, 0))\n"
             "print('OK')\n",
             pattern_py);
    char *out = NULL;
    int rc = tu_python(code, tmpdir, &out);
    if (rc != 0)
        fprintf(stderr, "python: %s\n", out ? out : "");
    assert_int_equal(rc, 0);
    assert_string_equal(out, "OK\n");
    free(out);

    const struct {
        const char *suffix;
        uint32_t ndim;
        uint64_t shape[4];
        uint8_t version;
    } cases[] = {{"a", 3, {3, 4, 5}, 1}, {"b", 1, {9}, 1},           {"c", 0, {0}, 1},
                 {"d", 2, {2, 0}, 1},    {"v2", 4, {1, 2, 3, 1}, 2}, {"v3", 4, {1, 2, 3, 1}, 3},
                 /* Fortran order (np.asfortranarray), big-endian: the same logical array */
                 {"f", 3, {3, 4, 5}, 1}, {"e", 3, {3, 4, 5}, 1}};
    for (int t = 0; t < MDL_NPY_TYPE_COUNT; t++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            char name[64];
            snprintf(name, sizeof name, "r%d_%s.npy", t, cases[c].suffix);
            mdl_npy_t a;
            char err[512] = "";
            ncsim_status_t st = mdl_npy_read(tmp_path(name), &a, err, sizeof err);
            if (st != NCSIM_OK)
                fprintf(stderr, "%s\n", err);
            assert_int_equal(st, NCSIM_OK);
            assert_int_equal(a.type, t);
            assert_string_equal(a.descr, mdl_npy_type_descr((mdl_npy_type_t)t));
            assert_int_equal(a.itemsize, mdl_npy_type_size((mdl_npy_type_t)t));
            assert_int_equal(a.version, cases[c].version);
            assert_int_equal(a.ndim, cases[c].ndim);
            uint64_t n = 1;
            for (uint32_t d = 0; d < a.ndim; d++) {
                assert_int_equal(a.shape[d], cases[c].shape[d]);
                n *= cases[c].shape[d];
            }
            assert_int_equal(a.count, n);
            assert_int_equal(a.nbytes, n * a.itemsize);
            assert_non_null(a.data);
            void *want = malloc(a.nbytes + 1);
            pattern_bytes((mdl_npy_type_t)t, n, want);
            assert_memory_equal(a.data, want, a.nbytes);
            free(want);
            mdl_npy_free(&a);
            assert_null(a.data);
        }
    }
}

/* Write then read in C; also the in-memory parser agrees with the file reader. */
static void test_round_trip_in_c(void **state)
{
    (void)state;
    float v[6] = {1.5f, -2.0f, 0.0f, 1e-40f, 3.25f, -7.0f};
    const uint64_t shape[2] = {2, 3};
    char err[512];
    const char *path = tmp_path("rt.npy");
    assert_int_equal(mdl_npy_write(path, "<f4", shape, 2, v, err, sizeof err), NCSIM_OK);
    mdl_npy_t a;
    assert_int_equal(mdl_npy_read(path, &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(a.ndim, 2);
    assert_memory_equal(a.data, v, sizeof v);
    mdl_npy_free(&a);

    size_t len = 0;
    char *bytes = tu_read_file(path, &len);
    assert_non_null(bytes);
    assert_int_equal(len % 64, sizeof v % 64); /* header padded to 64 bytes */
    assert_int_equal(mdl_npy_parse(bytes, len, "mem", &a, err, sizeof err), NCSIM_OK);
    assert_memory_equal(a.data, v, sizeof v);
    mdl_npy_free(&a);
    free(bytes);

    /* '<i1' is accepted as a descr and written canonically as '|i1'. */
    int8_t b[3] = {-128, 0, 127};
    const uint64_t s3[1] = {3};
    assert_int_equal(mdl_npy_write(path, "<i1", s3, 1, b, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_npy_read(path, &a, err, sizeof err), NCSIM_OK);
    assert_string_equal(a.descr, "|i1");
    assert_memory_equal(a.data, b, 3);
    mdl_npy_free(&a);
}

/* ---- Malformed input ---------------------------------------------------------------------- */

/* A v1.0 file with the given header dict text (padded properly) and `data_len` data bytes. */
static size_t make_file(const char *dict, size_t data_len, unsigned char *buf, size_t cap)
{
    size_t dlen = strlen(dict);
    size_t total = (10 + dlen + 1 + 63) / 64 * 64;
    assert_true(total + data_len <= cap);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((total - 10) & 0xff);
    buf[9] = (unsigned char)((total - 10) >> 8);
    memcpy(buf + 10, dict, dlen);
    memset(buf + 10 + dlen, ' ', total - 10 - dlen - 1);
    buf[total - 1] = '\n';
    for (size_t i = 0; i < data_len; i++)
        buf[total + i] = (unsigned char)i;
    return total + data_len;
}

/* Reading these bytes (as a file, and from memory) fails with `status` and a message that
 * contains `want` and the file name. */
static void expect_reject(const void *bytes, size_t len, ncsim_status_t status, const char *want)
{
    const char *path = tmp_path("bad.npy");
    assert_int_equal(tu_write_file(path, bytes, len), 0);
    mdl_npy_t a;
    char err[512] = "";
    ncsim_status_t st = mdl_npy_read(path, &a, err, sizeof err);
    if (st != status || !strstr(err, want))
        fprintf(stderr, "file: status %d, message \"%s\", wanted \"%s\"\n", (int)st, err, want);
    assert_int_equal(st, status);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, path));
    assert_null(a.data);

    err[0] = '\0';
    st = mdl_npy_parse(bytes, len, "mem.npy", &a, err, sizeof err);
    if (st != status || !strstr(err, want))
        fprintf(stderr, "memory: status %d, message \"%s\", wanted \"%s\"\n", (int)st, err, want);
    assert_int_equal(st, status);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "mem.npy"));
    assert_null(a.data);
}

static void expect_reject_dict(const char *dict, size_t data_len, const char *want)
{
    unsigned char buf[1024];
    size_t len = make_file(dict, data_len, buf, sizeof buf);
    expect_reject(buf, len, NCSIM_FORMAT, want);
}

static void test_malformed(void **state)
{
    (void)state;
    const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    unsigned char buf[1024];
    size_t len = make_file(good, 24, buf, sizeof buf);
    mdl_npy_t a;
    char err[256];
    assert_int_equal(mdl_npy_parse(buf, len, "ok", &a, err, sizeof err), NCSIM_OK);
    mdl_npy_free(&a);

    /* Magic, version, lengths. */
    expect_reject("PK\x03\x04 this is a zip file", 22, NCSIM_FORMAT, "bad magic");
    expect_reject("", 0, NCSIM_FORMAT, "bad magic");
    expect_reject("\x93NUM", 4, NCSIM_FORMAT, "truncated header");
    expect_reject("\x93NUMPY\x01\x00\x40", 9, NCSIM_FORMAT, "truncated header");
    expect_reject("\x93NUMPY\x02\x00\x40\x00", 10, NCSIM_FORMAT, "truncated header");
    memcpy(buf + 6, "\x04\x00", 2);
    expect_reject(buf, len, NCSIM_FORMAT, "unsupported .npy format version 4.0");
    memcpy(buf + 6, "\x01\x01", 2);
    expect_reject(buf, len, NCSIM_FORMAT, "version 1.1");
    len = make_file(good, 24, buf, sizeof buf);
    expect_reject(buf, 40, NCSIM_FORMAT,
                  "truncated header: it should be 118 bytes, the file has 30");

    /* Data size. */
    expect_reject_dict(good, 20,
                       "truncated data: shape (2, 3) of <f4 needs 24 bytes, the file "
                       "has 20");
    expect_reject_dict(good, 30, "6 bytes of unexpected data after the array");
    expect_reject_dict(good, 0, "truncated data");

    /* Header contents. */
    expect_reject_dict("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16,
                       "object arrays ('|O') are not supported");
    expect_reject_dict("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
                       "unsupported dtype '<c8'");
    expect_reject_dict("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 24,
                       "unsupported dtype '<U3'");
    expect_reject_dict("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (2,), }", 16,
                       "unsupported dtype '<M8[ns]'");
    expect_reject_dict("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", 8,
                       "unsupported dtype '|f4'");
    expect_reject_dict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
                       "structured arrays");
    expect_reject_dict("{'descr': '<f4', 'shape': (2, 3), }", 24, "missing key 'fortran_order'");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, }", 24, "missing key 'shape'");
    expect_reject_dict("{'fortran_order': False, 'shape': (2, 3), }", 24, "missing key 'descr'");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24,
                       "unexpected key 'x'");
    expect_reject_dict("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}",
                       24, "key 'descr' appears twice");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24,
                       "negative dimension");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'x'), }", 24,
                       "shape must be a tuple of integers");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 24,
                       "a 1-d shape is written (N,)");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 24,
                       "expected '('");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3), }", 24,
                       "fortran_order must be True or False");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", 4,
                       "more than 8 dimensions");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(99999999999999999999,)}",
                       4, "too large");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(4294967296, 4294967296, 4294967296)}",
                       4, "shape is too large");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } junk", 24,
                       "unexpected text after the header dict");
    expect_reject_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24,
                       "expected '}'");
    expect_reject_dict("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}", 24,
                       "malformed header");
    expect_reject_dict("['descr', '<f4']", 24, "expected '{'");

    /* A shape whose data would need terabytes is refused before any allocation. */
    expect_reject_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000)}", 16,
                       "truncated data: shape (1000000, 1000000) of <f8 needs");

    /* Missing file: an I/O error, not a format error. */
    assert_int_equal(mdl_npy_read(tmp_path("does-not-exist.npy"), &a, err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, "does-not-exist.npy"));
}

/*
 * Every truncation and every single-byte corruption of a valid file is either read or
 * refused cleanly (run under ASan/UBSan in CI, this is a small deterministic fuzz).
 */
static void test_never_crashes(void **state)
{
    (void)state;
    unsigned char good[1024], buf[1024];
    size_t len = make_file("{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }", 24, good,
                           sizeof good);
    char err[512];
    mdl_npy_t a;
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_not_equal(mdl_npy_parse(good, cut, "cut", &a, err, sizeof err), NCSIM_OK);
        assert_true(strlen(err) > 0);
    }
    const unsigned char values[] = {0x00, 0x0a, ' ', '\'', '(', ')', ',', '-', '9', 0xff, 0x80};
    unsigned accepted = 0, rejected = 0;
    for (size_t pos = 0; pos < len; pos++) {
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(buf, good, len);
            buf[pos] = values[v];
            err[0] = '\0';
            ncsim_status_t st = mdl_npy_parse(buf, len, "fuzz", &a, err, sizeof err);
            if (st == NCSIM_OK) {
                assert_true(a.nbytes <= len);
                mdl_npy_free(&a);
                accepted++;
            } else {
                assert_true(st == NCSIM_FORMAT);
                assert_true(strlen(err) > 0);
                rejected++;
            }
        }
    }
    assert_true(accepted > 0 && rejected > 0);
}

/* ---- Writing ------------------------------------------------------------------------------ */

static int count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

static void test_atomic_write(void **state)
{
    (void)state;
    char err[512];
    const uint64_t shape[1] = {4};
    int32_t v1[4] = {1, 2, 3, 4}, v2[4] = {5, 6, 7, 8};
    const char *path = tmp_path("atomic.npy");
    assert_int_equal(mdl_npy_write(path, "<i4", shape, 1, v1, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_npy_write(path, "<i4", shape, 1, v2, err, sizeof err), NCSIM_OK);
    mdl_npy_t a;
    assert_int_equal(mdl_npy_read(path, &a, err, sizeof err), NCSIM_OK);
    assert_memory_equal(a.data, v2, sizeof v2); /* replaced */
    mdl_npy_free(&a);
    assert_int_equal(count_entries(tmpdir, "atomic.npy"), 1); /* no temporary left over */

    /* A directory that does not exist: an I/O error naming the path, nothing created. */
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.npy", tmpdir);
    assert_int_equal(mdl_npy_write(missing, "<i4", shape, 1, v1, err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, missing));
    /* The destination is a directory. */
    assert_int_equal(mdl_npy_write(tmpdir, "<i4", shape, 1, v1, err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, "directory"));
    /* A device is written in place, not replaced. */
    assert_int_equal(mdl_npy_write("/dev/null", "<i4", shape, 1, v1, err, sizeof err), NCSIM_OK);
    char *out = NULL;
    assert_int_equal(tu_run("test -c /dev/null", &out), 0);
    free(out);

    /* Bad arguments. */
    assert_int_equal(mdl_npy_write(path, "<c8", shape, 1, v1, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "<c8"));
    assert_int_equal(mdl_npy_write(path, ">i4", shape, 1, v1, err, sizeof err), NCSIM_USAGE);
    const uint64_t big[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(mdl_npy_write(path, "<i4", big, 9, v1, err, sizeof err), NCSIM_USAGE);
    assert_int_equal(mdl_npy_write(path, "<i4", shape, 1, NULL, err, sizeof err), NCSIM_USAGE);
    /* Empty arrays need no data. */
    const uint64_t empty[2] = {0, 5};
    assert_int_equal(mdl_npy_write(path, "<f4", empty, 2, NULL, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_npy_read(path, &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(a.count, 0);
    assert_int_equal(a.shape[1], 5);
    mdl_npy_free(&a);
}

/* ---- Tensor types (CLI.md) ------------------------------------------------------------------ */

static void test_dtype_mapping(void **state)
{
    (void)state;
    const struct {
        isa_dtype_t t;
        const char *descr;
        int native;
    } map[] = {{ISA_DT_FP32, "<f4", 1},  {ISA_DT_FP16, "<f2", 1},  {ISA_DT_BF16, "<f4", 0},
               {ISA_DT_TF32, "<f4", 0},  {ISA_DT_FP8E4, "<f4", 0}, {ISA_DT_FP8E5, "<f4", 0},
               {ISA_DT_FP8E3, "<f4", 0}, {ISA_DT_I8, "|i1", 1},    {ISA_DT_U8, "|u1", 1},
               {ISA_DT_I16, "<i2", 1},   {ISA_DT_U16, "<u2", 1},   {ISA_DT_I32, "<i4", 1},
               {ISA_DT_U32, "<u4", 1}};
    assert_int_equal(sizeof map / sizeof map[0], ISA_DT_COUNT);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        assert_string_equal(mdl_npy_type_descr(mdl_npy_type_for_dtype(map[i].t)), map[i].descr);
        assert_int_equal(mdl_npy_dtype_is_native(map[i].t), map[i].native);
    }
    assert_int_equal(mdl_npy_type_lookup("<f4"), MDL_NPY_F4);
    assert_int_equal(mdl_npy_type_lookup("|u1"), MDL_NPY_U1);
    assert_int_equal(mdl_npy_type_lookup(">u1"), MDL_NPY_U1); /* byte order moot for 1 byte */
    assert_int_equal(mdl_npy_type_lookup(">f4"), MDL_NPY_TYPE_COUNT);
    assert_int_equal(mdl_npy_type_lookup("=f4"), MDL_NPY_TYPE_COUNT);
    assert_int_equal(mdl_npy_type_lookup("<f16"), MDL_NPY_TYPE_COUNT);
    assert_int_equal(mdl_npy_type_lookup(""), MDL_NPY_TYPE_COUNT);
    assert_int_equal(mdl_npy_type_lookup(NULL), MDL_NPY_TYPE_COUNT);
}

static void test_expect(void **state)
{
    (void)state;
    char err[512];
    const uint64_t shape[2] = {128, 512};
    float *z = calloc(128 * 512, sizeof *z);
    assert_non_null(z);
    const char *path = tmp_path("x.npy");
    assert_int_equal(mdl_npy_write(path, "<f4", shape, 2, z, err, sizeof err), NCSIM_OK);
    free(z);
    mdl_npy_t a;
    assert_int_equal(mdl_npy_read(path, &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_npy_expect(&a, path, "x", ISA_DT_BF16, shape, 2, err, sizeof err),
                     NCSIM_OK);
    assert_int_equal(mdl_npy_expect(&a, path, "x", ISA_DT_FP32, shape, 2, err, sizeof err),
                     NCSIM_OK);
    assert_int_equal(mdl_npy_expect(&a, path, "x", ISA_DT_FP16, shape, 2, err, sizeof err),
                     NCSIM_FORMAT);
    assert_non_null(strstr(err, "tensor 'x' is fp16"));
    assert_non_null(strstr(err, "arr.astype(np.float16)"));
    assert_non_null(strstr(err, path));
    const uint64_t wrong[2] = {512, 128};
    assert_int_equal(mdl_npy_expect(&a, path, "x", ISA_DT_FP32, wrong, 2, err, sizeof err),
                     NCSIM_FORMAT);
    assert_non_null(strstr(err, "has shape (512, 128) but the file's array has shape (128, 512)"));
    assert_int_equal(mdl_npy_expect(&a, path, "x", ISA_DT_FP32, shape, 1, err, sizeof err),
                     NCSIM_FORMAT);
    assert_non_null(strstr(err, "(128,)"));
    mdl_npy_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_read_by_numpy), cmocka_unit_test(test_read_numpy_files),
        cmocka_unit_test(test_round_trip_in_c),     cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_never_crashes),       cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_dtype_mapping),       cmocka_unit_test(test_expect),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
