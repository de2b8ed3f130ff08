/*
 * test_blas.c -- OpenBLAS is opened on demand (models/blas.c): a timing-only run never loads
 * it, the first functional run loads it with one thread unless asked, and a library that
 * cannot be loaded fails a functional matmul with a clear message and exit code 4 while
 * timing-only runs still work.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "arch.h"
#include "blas.h"
#include "asm.h"
#include "sim.h"
#include "testutil.h"

static const char matmul_program[] = "; one matmul and its copy out\n"
                                     ".hbm a fp32 [128, 128] input\n"
                                     ".hbm b fp32 [128, 64] input\n"
                                     ".hbm c fp32 [128, 64] output\n"
                                     ".sbuf as fp32 [128, 128]\n"
                                     ".sbuf bs fp32 [128, 64]\n"
                                     ".sbuf cs fp32 [128, 64]\n"
                                     ".psum ps fp32 [128, 64]\n"
                                     ".sem loaded\n.sem multiplied\n.sem copied\n"
                                     ".engine sp\n"
                                     "dma as, a, queue=0 | post loaded\n"
                                     "dma bs, b, queue=1 | post loaded\n"
                                     "dma c, cs, queue=2 | wait copied >= 1\n"
                                     ".engine pe\n"
                                     "matmul ps, as, bs | wait loaded >= 2 | post multiplied\n"
                                     ".engine act\n"
                                     "activate cs, ps, copy | wait multiplied >= 1 | post copied\n";

/* Is OpenBLAS mapped into this process? (RTLD_NOLOAD only looks.) */
static int openblas_mapped(void)
{
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static ncsim_status_t run_once(int timing_only)
{
    isa_program_t *p = tu_assemble(matmul_program, "blas.nca");
    assert_non_null(p);
    ncsim_status_t st;
    mdl_arch_t arch;
    char err[1024];
    assert_int_equal(mdl_arch_load("trn1", &arch, err, sizeof err), NCSIM_OK);
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = &arch;
    o.timing_only = timing_only;
    sim_t *sim = NULL;
    assert_int_equal(sim_create(p, &o, &sim, err, sizeof err), NCSIM_OK);
    st = sim_run(sim, SIM_RUN_UNTIL_IDLE, 0);
    sim_destroy(sim);
    isa_program_free(p);
    return st;
}

/* In this process: nothing loads OpenBLAS until a functional matmul needs it, and then it
 * runs with one thread (the test environment's OPENBLAS_NUM_THREADS is removed first, so
 * the default is what is checked). */
static void test_loaded_on_demand_with_one_thread(void **state)
{
    (void)state;
    unsetenv("OPENBLAS_NUM_THREADS");
    unsetenv("NCSIM_BLAS_THREADS");
    unsetenv("NCSIM_BLAS_LIBRARY");
    assert_false(openblas_mapped());
    assert_int_equal(run_once(1), NCSIM_OK);
    assert_false(openblas_mapped());
    assert_int_equal(run_once(0), NCSIM_OK);
    assert_true(openblas_mapped());
    assert_int_equal(mdl_blas_default_threads(), 1);
    assert_non_null(mdl_blas_sgemm(NULL));
    /* an explicit request changes it */
    assert_int_equal(mdl_blas_set_threads(2), 2);
    assert_int_equal(mdl_blas_set_threads(1), 1);
}

/* Through the command: a library that cannot be loaded fails the functional run with exit
 * code 4, a message that names the instruction's line and the cause, and no output file;
 * the timing-only run of the same program does not need the library. */
static void test_missing_library_is_a_clear_error(void **state)
{
    (void)state;
    char prog[512], out[512], cmd[2048];
    snprintf(prog, sizeof prog, "%s/blas.nca", tu_tmpdir());
    snprintf(out, sizeof out, "%s/c.npy", tu_tmpdir());
    assert_int_equal(tu_write_file(prog, matmul_program, strlen(matmul_program)), 0);
    char *text = NULL;
    snprintf(cmd, sizeof cmd,
             "NCSIM_BLAS_LIBRARY=%s/no-such-libopenblas.so.0 %s run %s --random-inputs 1 "
             "--out c=%s",
             tu_tmpdir(), tu_ncsim(), prog, out);
    int rc = tu_run(cmd, &text);
    assert_int_equal(rc, 4);
    assert_non_null(strstr(text, "blas.nca:17:"));
    assert_non_null(strstr(text, "cannot load OpenBLAS"));
    assert_non_null(strstr(text, "no-such-libopenblas"));
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0);
    free(text);
    snprintf(cmd, sizeof cmd,
             "NCSIM_BLAS_LIBRARY=%s/no-such-libopenblas.so.0 %s run %s --timing-only",
             tu_tmpdir(), tu_ncsim(), prog);
    text = NULL;
    assert_int_equal(tu_run(cmd, &text), 0);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loaded_on_demand_with_one_thread),
        cmocka_unit_test(test_missing_library_is_a_clear_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
