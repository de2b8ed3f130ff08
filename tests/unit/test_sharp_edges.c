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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chips_out_of_range_is_one_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
