/*
 * test_asm_errors.c -- the negative corpus tests/asm_errors/NAME.nca: every file must fail to
 * assemble, and its first diagnostic must be the one its first line announces:
 *
 *     ; expect: LINE:COL: MESSAGE SUBSTRING
 *
 * checked as "FILE.nca:LINE:COL: error: MESSAGE SUBSTRING" at the start of the first
 * diagnostic line (so an earlier, unexpected error also fails the test).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "asm.h"
#include "testutil.h"

#define MIN_FILES 45

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the *.nca files of dir; returns the count, -1 when dir cannot be read. */
static int list_corpus(const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0, cap = 0;
    *names = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".nca") != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(*names, (size_t)cap * sizeof *grown);
            assert_non_null(grown);
            *names = grown;
        }
        (*names)[n] = strdup(e->d_name);
        assert_non_null((*names)[n]);
        n++;
    }
    closedir(d);
    if (n)
        qsort(*names, (size_t)n, sizeof **names, cmp_names);
    return n;
}

/*
 * Check one file; returns 0 when it behaves as announced, else prints why and returns 1.
 */
static int check_file(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    if (!text) {
        print_error("%s: cannot read\n", name);
        return 1;
    }
    static const char tag[] = "; expect: ";
    if (strncmp(text, tag, sizeof tag - 1) != 0) {
        print_error("%s: the first line must be '%sLINE:COL: MESSAGE'\n", name, tag);
        free(text);
        return 1;
    }
    const char *exp = text + sizeof tag - 1;
    size_t explen = strcspn(exp, "\r\n");
    unsigned line = 0, col = 0;
    int consumed = 0;
    if (sscanf(exp, "%u:%u: %n", &line, &col, &consumed) != 2 || consumed == 0 || !line ||
        !col || (size_t)consumed >= explen) {
        print_error("%s: malformed expectation '%.*s'\n", name, (int)explen, exp);
        free(text);
        return 1;
    }
    char want[1024];
    snprintf(want, sizeof want, "%s:%u:%u: error: %.*s", name, line, col,
             (int)(explen - (size_t)consumed), exp + consumed);

    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = name;
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *prog = NULL;
    ncsim_status_t st = isa_assemble(text, len, &opt, &prog, &diag);
    int bad = 0;
    const char *got = diag.text ? diag.text : "";
    if (st != NCSIM_ASSEMBLY || prog) {
        print_error("%s: assembled (status %d), expected an error\n", name, (int)st);
        bad = 1;
    } else if (diag.errors == 0) {
        print_error("%s: failed without reporting an error\n", name);
        bad = 1;
    } else if (strncmp(got, want, strlen(want)) != 0) {
        print_error("%s: first diagnostic differs\n  want: %s\n  got:  %.*s\n", name, want,
                    (int)strcspn(got, "\n"), got);
        bad = 1;
    }
    isa_program_free(prog);
    isa_diag_free(&diag);
    free(text);
    return bad;
}

static void test_corpus(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tu_source_path("tests/asm_errors"));
    char **names = NULL;
    int n = list_corpus(dir, &names);
    if (n < 0)
        print_error("cannot open %s (is NCSIM_SOURCE_DIR set?)\n", dir);
    assert_true(n >= MIN_FILES);
    int failures = 0;
    for (int i = 0; i < n; i++) {
        failures += check_file(dir, names[i]);
        free(names[i]);
    }
    free(names);
    if (failures)
        print_error("%d of %d files of %s misbehaved\n", failures, n, dir);
    assert_int_equal(failures, 0);
}

/* The checker itself must be able to fail: a file whose expectation is wrong, a file that
 * assembles, and a file with no expectation are each reported. */
static void test_checker_rejects(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char path[4200];
    static const struct {
        const char *name, *text;
    } cases[] = {
        {"wrong_message.nca", "; expect: 2:10: division by one\n.let x = 1 / 0\n"},
        {"wrong_column.nca", "; expect: 2:11: division by zero\n.let x = 1 / 0\n"},
        {"assembles.nca", "; expect: 2:1: anything\n.let x = 1\n"},
        {"no_expectation.nca", ".let x = 1 / 0\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].name);
        assert_int_equal(tu_write_file(path, cases[i].text, strlen(cases[i].text)), 0);
        assert_int_equal(check_file(dir, cases[i].name), 1);
        remove(path);
    }
    snprintf(path, sizeof path, "%s/right.nca", dir);
    static const char right[] = "; expect: 2:12: division by zero\n.let x = 1 / 0\n";
    assert_int_equal(tu_write_file(path, right, strlen(right)), 0);
    assert_int_equal(check_file(dir, "right.nca"), 0);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_checker_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
