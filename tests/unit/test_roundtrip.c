/*
 * test_roundtrip.c -- for every NCA program in the repository (kernels/, tests/asm/,
 * tests/golden/, tests/check/): assemble, write the binary, disassemble, assemble the text
 * again, and require byte-identical binaries; then load the binary back and require the same
 * bytes once more.
 */
#include <dirent.h>
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
#include "asm.h"
#include "dis.h"
#include "ncx.h"
#include "testutil.h"

static isa_program_t *assemble(const char *name, const char *text, size_t len, isa_diag_t *d)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = name;
    opt.arch_lookup = mdl_arch_geometry_lookup;
    isa_diag_init(d, 0);
    isa_program_t *p = NULL;
    isa_assemble(text, len, &opt, &p, d);
    return p;
}

static unsigned checked;

static void roundtrip_file(const char *path)
{
    size_t len;
    char *text = tu_read_file(path, &len);
    assert_non_null(text);
    isa_diag_t d;
    isa_program_t *p1 = assemble(path, text, len, &d);
    free(text);
    if (!p1) {
        fprintf(stderr, "%s does not assemble:\n%s", path, d.text ? d.text : "");
        isa_diag_free(&d);
        fail();
    }
    isa_diag_free(&d);
    uint8_t *b1, *b2, *b3;
    size_t n1, n2, n3;
    assert_int_equal(isa_ncx_write(p1, &b1, &n1), NCSIM_OK);
    char *dis = isa_disassemble(p1);
    assert_non_null(dis);
    /* the disassembly names the same source file so the line map can match */
    isa_program_t *p2 = assemble(path, dis, strlen(dis), &d);
    if (!p2) {
        fprintf(stderr, "disassembly of %s does not assemble:\n%s\n--- text ---\n%.4000s\n",
                path, d.text ? d.text : "", dis);
        isa_diag_free(&d);
        fail();
    }
    isa_diag_free(&d);
    /* .loc and .source carry the line map and the source name through the text */
    assert_int_equal(isa_ncx_write(p2, &b2, &n2), NCSIM_OK);
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) {
        fprintf(stderr, "%s: asm -> dis -> asm changed the binary (%zu vs %zu bytes)\n", path,
                n1, n2);
        fail();
    }
    /* the loader reads back exactly what was written */
    isa_geometry_t g;
    isa_geometry_default(&g);
    if (p1->arch[0])
        mdl_arch_geometry_lookup(NULL, p1->arch, &g);
    isa_program_t *p3 = NULL;
    isa_diag_init(&d, 0);
    ncsim_status_t st = isa_ncx_read(b1, n1, &g, path, &p3, &d);
    if (st != NCSIM_OK)
        fprintf(stderr, "%s", d.text ? d.text : "");
    isa_diag_free(&d);
    assert_int_equal(st, NCSIM_OK);
    assert_int_equal(isa_ncx_write(p3, &b3, &n3), NCSIM_OK);
    assert_int_equal(n3, n1);
    assert_memory_equal(b3, b1, n1);
    free(b1);
    free(b2);
    free(b3);
    free(dis);
    isa_program_free(p1);
    isa_program_free(p2);
    isa_program_free(p3);
    checked++;
}

static void walk(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char **t = realloc(names, (n + 1) * sizeof *names);
        assert_non_null(t);
        names = t;
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            walk(names[i]);
        } else {
            size_t l = strlen(names[i]);
            if (l > 4 && strcmp(names[i] + l - 4, ".nca") == 0)
                roundtrip_file(names[i]);
        }
        free(names[i]);
    }
    free(names);
}

static void test_every_program(void **state)
{
    (void)state;
    static const char *const dirs[] = {"kernels", "tests/asm", "tests/golden", "tests/check"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s", tu_source_path(dirs[i]));
        walk(path);
    }
    fprintf(stderr, "round-tripped %u programs\n", checked);
    assert_true(checked >= 60);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_program)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
