/*
 * test_kernels_table.c -- the performance table of kernels/README.md is generated
 * (kernels/gen/table.py) and current: it is what the kernels and the cost model give now.
 * Whoever changes either regenerates it with `table.py --ncsim build/ncsim --write`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"

static void test_readme_table_is_current(void **state)
{
    (void)state;
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s --ncsim %s --check",
             tu_source_path("kernels/gen/table.py"), tu_ncsim());
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readme_table_is_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
