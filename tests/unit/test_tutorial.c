/*
 * test_tutorial.c -- every program of docs/tutorial.md (kernels/tutorial/) against NumPy, and
 * clean under `ncsim check`.
 *
 * kernels/tutorial/check.py holds the inputs, the NumPy references and the tolerances (each
 * with its reason); it exits 0 only when every output element of the step is within them.
 * docs/tutorial.md is rendered from the programs (kernels/tutorial/render_doc.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static const char *const STEPS[] = {
    "01_dma",     "02_semaphores", "03_double_buffer", "04_psum_accumulate", "05_transpose",
    "06_broadcast", "07_fp8",      "08_conv",          "09_all_reduce",
};
#define NSTEPS (sizeof STEPS / sizeof STEPS[0])

static void test_tutorial_against_numpy(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSTEPS; i++) {
        char cmd[4096];
        char *out = NULL;
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s --ncsim %s %s",
                 tu_source_path("kernels/tutorial/check.py"), tu_ncsim(), STEPS[i]);
        int st = tu_run(cmd, &out);
        if (st != 0)
            fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
        free(out);
        assert_int_equal(st, 0);
    }
}

static void test_tutorial_check_clean(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSTEPS; i++) {
        char cmd[4096];
        char rel[256];
        char *out = NULL;
        snprintf(rel, sizeof rel, "kernels/tutorial/%s.nca", STEPS[i]);
        snprintf(cmd, sizeof cmd, "%s check %s --random-inputs 1", tu_ncsim(),
                 tu_source_path(rel));
        int st = tu_run(cmd, &out);
        if (st != 0)
            fprintf(stderr, "%s\n-> exit %d\n%s\n", cmd, st, out ? out : "");
        free(out);
        assert_int_equal(st, 0);
    }
}

/* docs/tutorial.md shows exactly the programs tested here (it is rendered from them). */
static void test_tutorial_doc_in_sync(void **state)
{
    (void)state;
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s --check",
             tu_source_path("kernels/tutorial/render_doc.py"));
    int st = tu_run(cmd, &out);
    if (st != 0)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(st, 0);
}

/* No user document points outside the repository: no reference to the project's private
 * contract files, and every relative markdown link resolves to a file of the repository. */
static void test_docs_self_contained(void **state)
{
    (void)state;
    static const char code[] =
        "import glob, os, re, sys\n"
        "root = sys.argv[1]\n"
        "files = [os.path.join(root, 'README.md'), os.path.join(root, 'kernels/README.md'),\n"
        "         os.path.join(root, 'isa/FORMAT.md')] + sorted(glob.glob(os.path.join(root, 'docs/*.md')))\n"
        "bad = []\n"
        "for f in files:\n"
        "    text = open(f).read()\n"
        "    for n, line in enumerate(text.splitlines(), 1):\n"
        "        if re.search(r'shared/(spec|reference|guides)|\\bISA\\.md|\\bCLI\\.md|neuroncore-v2\\.md', line):\n"
        "            bad.append(f'{f}:{n}: points outside the repository: {line.strip()[:80]}')\n"
        "        for target in re.findall(r'\\]\\(([^)#\\s]+)', re.sub(r'`[^`]*`', '', line)):\n"
        "            if re.match(r'[a-z]+:', target):\n"
        "                continue\n"
        "            if not os.path.exists(os.path.join(os.path.dirname(f), target)):\n"
        "                bad.append(f'{f}:{n}: broken link {target}')\n"
        "print('\\n'.join(bad))\n"
        "sys.exit(1 if bad else 0)\n";
    char *out = NULL;
    int rc = tu_python(code, tu_source_path("."), &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tutorial_against_numpy),
        cmocka_unit_test(test_tutorial_check_clean),
        cmocka_unit_test(test_tutorial_doc_in_sync),
        cmocka_unit_test(test_docs_self_contained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
