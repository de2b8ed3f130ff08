/*
 * test_api_sweep_calls.c -- the calls `ncsim sweep` added to include/ncsim.h, through it alone.
 * ncsim_npy_check_file: a .npy file the simulator reads (float32, written here byte by byte)
 * is NCSIM_OK; a missing file, a file that is not a .npy and one whose data is cut short are
 * NCSIM_IO with the reason and the path in the last error (its location names the file); no
 * path is NCSIM_USAGE. ncsim_program_load_file_max_errors: a program with 30 bad lines reports
 * exactly 20 errors and the "too many errors" note with a limit of 20, all 30 with the default
 * (as ncsim_program_load_file does), and a good program loads the same under either.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ncsim.h"

/* A version 1.0 .npy of `n` float32 values 0, 1, ...; `cut` bytes of data left out. */
static void write_npy(const char *path, unsigned n, size_t cut)
{
    char dict[128];
    int dl = snprintf(dict, sizeof dict,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': (%u,), }", n);
    size_t header = 10 + (size_t)dl + 1;
    size_t pad = (64 - header % 64) % 64;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    uint16_t hl = (uint16_t)((size_t)dl + pad + 1);
    unsigned char le[2] = {(unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    fwrite(le, 1, 2, f);
    fwrite(dict, 1, (size_t)dl, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    for (unsigned i = 0; i < n; i++) {
        float x = (float)i;
        fwrite(&x, sizeof x, 1, f);
    }
    fflush(f);
    assert_int_equal(ftruncate(fileno(f), ftell(f) - (long)cut), 0);
    fclose(f);
}

static void test_npy_check_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncsim-npy-check-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char good[128], cut[128], text[128], missing[128];
    snprintf(good, sizeof good, "%s/good.npy", dir);
    snprintf(cut, sizeof cut, "%s/cut.npy", dir);
    snprintf(text, sizeof text, "%s/text.npy", dir);
    snprintf(missing, sizeof missing, "%s/missing.npy", dir);

    write_npy(good, 6, 0);
    assert_int_equal(ncsim_npy_check_file(good), NCSIM_OK);

    char expect[256];
    snprintf(expect, sizeof expect, "cannot open '%s': No such file or directory", missing);
    assert_int_equal(ncsim_npy_check_file(missing), NCSIM_IO);
    assert_string_equal(ncsim_last_error(), expect);
    assert_string_equal(ncsim_last_error_info()->file, missing);

    write_npy(cut, 6, 5);
    assert_int_equal(ncsim_npy_check_file(cut), NCSIM_IO);
    assert_non_null(strstr(ncsim_last_error(), cut));

    FILE *f = fopen(text, "w");
    assert_non_null(f);
    fputs("not a numpy file\n", f);
    fclose(f);
    assert_int_equal(ncsim_npy_check_file(text), NCSIM_IO);
    assert_non_null(strstr(ncsim_last_error(), text));
    assert_string_equal(ncsim_last_error_info()->file, text);

    assert_int_equal(ncsim_npy_check_file(NULL), NCSIM_USAGE);

    unlink(good);
    unlink(cut);
    unlink(text);
    rmdir(dir);
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void test_max_errors(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncsim-max-errors-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char bad[128], good[128];
    snprintf(bad, sizeof bad, "%s/bad.nca", dir);
    snprintf(good, sizeof good, "%s/good.nca", dir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs(".arch trn1\n", f);
    for (int i = 0; i < 30; i++)
        fprintf(f, "bogus%d x, y\n", i);
    fclose(f);
    f = fopen(good, "w");
    assert_non_null(f);
    fputs(".arch trn1\n.hbm x fp32 [4, 4] input\n", f);
    fclose(f);

    ncsim_program_t *p = NULL;
    assert_int_equal(ncsim_program_load_file_max_errors(bad, NULL, 20, &p), NCSIM_ASSEMBLY);
    assert_null(p);
    assert_int_equal(count(ncsim_last_error(), ": error: "), 20);
    assert_non_null(strstr(ncsim_last_error(), "'bogus19'"));
    assert_null(strstr(ncsim_last_error(), "'bogus20'"));
    assert_non_null(strstr(ncsim_last_error(), "note: too many errors, stopping"));
    assert_string_equal(ncsim_last_error_info()->file, bad);
    assert_int_equal(ncsim_last_error_info()->line, 2);

    assert_int_equal(ncsim_program_load_file_max_errors(bad, NULL, 0, &p), NCSIM_ASSEMBLY);
    assert_int_equal(count(ncsim_last_error(), ": error: "), 30);
    assert_null(strstr(ncsim_last_error(), "too many errors"));
    assert_int_equal(ncsim_program_load_file(bad, NULL, &p), NCSIM_ASSEMBLY);
    assert_int_equal(count(ncsim_last_error(), ": error: "), 30);

    assert_int_equal(ncsim_program_load_file_max_errors(good, NULL, 20, &p), NCSIM_OK);
    assert_int_equal(ncsim_program_tensor_count(p), 1);
    assert_string_equal(ncsim_program_arch(p), "trn1");
    ncsim_program_free(p);
    assert_int_equal(ncsim_program_load_file_max_errors(NULL, NULL, 20, &p), NCSIM_USAGE);

    unlink(bad);
    unlink(good);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npy_check_file),
        cmocka_unit_test(test_max_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
