/*
 * test_sharp_edges.c -- the edges a compiler's generated code and an unattended harness hit
 * (issue 16): one error for one mistake, whole-tensor operands of any contiguous shape,
 * limits that name sizes, and the language conveniences for generated code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asm.h"
#include "testutil.h"

/* Assemble text; returns the number of errors, the diagnostics in *text (static). */
static unsigned assemble(const char *src, const char **text, isa_program_t **prog)
{
    static char buf[16384];
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "t.nca";
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *p = NULL;
    (void)isa_assemble(src, strlen(src), &opt, &p, &diag);
    snprintf(buf, sizeof buf, "%s", diag.text ? diag.text : "");
    unsigned n = diag.errors;
    isa_diag_free(&diag);
    if (prog)
        *prog = p;
    else
        isa_program_free(p);
    if (text)
        *text = buf;
    return n;
}

/* `.chips 65`: one error, not one per core the program names afterwards */
static void test_chips_out_of_range_is_one_error(void **state)
{
    (void)state;
    const char *text;
    unsigned n = assemble(".chips 65\n"
                          ".core 0..127\n"
                          ".sbuf t fp32 [128, 4]\n"
                          ".engine dve\n"
                          "    memset t, 0.0\n",
                          &text, NULL);
    assert_int_equal(n, 1);
    assert_non_null(strstr(text, "t.nca:1:8: error: chip count 65 out of range 1..64"));
}

/* Whole-tensor HBM operands of any contiguous shape: dimensions over 65,535 are folded. */
static void test_whole_tensor_operands_fold(void **state)
{
    (void)state;
    const char *text;
    isa_program_t *p = NULL;
    /* the case: a 256 MiB fp32 [65536, 1024] tensor as an all_reduce operand */
    unsigned n = assemble(".hbm x fp32 [65536, 1024] input\n"
                          ".hbm y fp32 [65536, 1024] output\n"
                          ".group g = 0, 1\n"
                          ".core 0..1\n"
                          ".engine cc\n"
                          "    all_reduce y, x, op=add, group=g\n",
                          &text, &p);
    assert_int_equal(n, 0);
    assert_non_null(p);
    const isa_view_t *v = isa_arg_view(p, &isa_instr_args(p, &p->instrs[0])[1]);
    assert_int_equal(isa_view_elems(v), 65536ull * 1024);
    for (unsigned d = 0; d < v->ndims; d++)
        assert_true(v->count[d] <= ISA_MAX_COUNT);
    isa_program_free(p);

    /* and the data lands in the right order: [3, 70000] -> [210000] through one dma */
    char cmd[4096];
    char *out = NULL;
    const char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/f.nca", dir);
    const char *prog = ".hbm x fp32 [3, 70000] input\n"
                       ".hbm y fp32 [210000] output\n"
                       ".engine sp\n"
                       "    dma y, x\n";
    assert_int_equal(tu_write_file(path, prog, strlen(prog)), 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && /usr/bin/python3 -c \"import numpy as np; np.save('x.npy', "
             "np.arange(210000, dtype=np.float32).reshape(3, 70000))\" && %s run f.nca -q "
             "--in x=x.npy --out y=y.npy && /usr/bin/python3 -c \"import numpy as np, sys; "
             "sys.exit(0 if np.array_equal(np.load('y.npy'), np.arange(210000, "
             "dtype=np.float32)) else 1)\"",
             dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chips_out_of_range_is_one_error),
        cmocka_unit_test(test_whole_tensor_operands_fold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
