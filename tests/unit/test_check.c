/*
 * test_check.c -- `ncsim check` (sim/checker.c, docs/check.md).
 *
 *   corpus     every tests/check/NAME.nca against the verdict of its `; expect:` lines (and
 *              `; expect-run: error` when the run itself must fail); at least 25 programs,
 *              covering every kind of race on every memory;
 *   kernels    every kernels/NAME.nca has no finding, apart from the known issues listed below
 *              (races, uninit, psum and sems do not depend on data, so these run in timing-only
 *              mode; NaN depends on the inputs the kernels expect, see kernels/ref.py);
 *   semantics  happens-before rules on programs built here: counting semaphores, `-=`, the
 *              same-engine order, a transfer ordered after its issue, timing independence (the
 *              same verdict when the schedule changes), the checker leaves timing unchanged;
 *   output     text and JSON formats, grouping of loop iterations;
 *   cli        exit codes of `ncsim check` and `ncsim run --check`.
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
#include <jansson.h>

#include "arch.h"
#include "asm.h"
#include "checker.h"
#include "sim.h"
#include "testutil.h"

static mdl_arch_t trn1;

static int setup(void **state)
{
    (void)state;
    return tu_load_arch("trn1", &trn1);
}

typedef struct checked {
    isa_program_t *prog;
    chk_t *chk;
    sim_t *sim;
    ncsim_status_t run;
} checked_t;

/* Assemble, check statically, run with the checker; inputs get values in [-1, 1). */
static checked_t check_text(const char *text, const char *name, unsigned checks,
                            int timing_only)
{
    checked_t r;
    memset(&r, 0, sizeof r);
    r.prog = tu_assemble(text, name);
    assert_non_null(r.prog);
    assert_int_equal(chk_create(r.prog, &trn1, checks, &r.chk), NCSIM_OK);
    chk_static(r.chk);
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = &trn1;
    o.timing_only = timing_only;
    o.observer = chk_observer(r.chk);
    char err[1024];
    assert_int_equal(sim_create(r.prog, &o, &r.sim, err, sizeof err), NCSIM_OK);
    uint32_t seed = 12345;
    for (uint32_t t = 0; t < r.prog->ntensors && !timing_only; t++) {
        const isa_tensor_t *T = &r.prog->tensors[t];
        if (T->space != ISA_SPACE_HBM || (T->kind != ISA_TK_INPUT && T->kind != ISA_TK_INOUT))
            continue;
        uint64_t n = sim_tensor_elems(r.prog, t);
        float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        assert_non_null(v);
        for (uint64_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            v[i] = (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
        }
        assert_int_equal(sim_tensor_write_f32(r.sim, t, v), NCSIM_OK);
        free(v);
    }
    r.run = sim_run(r.sim, SIM_RUN_UNTIL_IDLE, 0);
    assert_false(chk_failed(r.chk));
    return r;
}

static checked_t check_inline(const char *text)
{
    return check_text(text, "t.nca", CHK_ALL, 0);
}

static void checked_free(checked_t *r)
{
    sim_destroy(r->sim);
    chk_destroy(r->chk);
    isa_program_free(r->prog);
}

/* "race RAW sbuf", "uninit hbm", "nan", "psum-acc", ... */
static void finding_token(const chk_finding_t *f, char *buf, size_t n)
{
    if (f->kind == CHK_KIND_RACE)
        snprintf(buf, n, "race %s %s", chk_race_name(f->race), chk_space_name(f->space));
    else if (f->kind == CHK_KIND_UNINIT)
        snprintf(buf, n, "uninit %s", chk_space_name(f->space));
    else
        snprintf(buf, n, "%s", chk_kind_name(f->kind));
}

static int has_token(const checked_t *r, const char *tok)
{
    for (size_t i = 0; i < chk_count(r->chk); i++) {
        char t[64];
        finding_token(chk_finding(r->chk, i), t, sizeof t);
        if (strcmp(t, tok) == 0)
            return 1;
    }
    return 0;
}

static void print_findings(const checked_t *r)
{
    chk_print(r->chk, stderr, 10);
    if (r->run != NCSIM_OK)
        fprintf(stderr, "run: %s", sim_error(r->sim));
}

/* The set of tokens of the findings equals `want` (n tokens; "clean" is none). */
static int verdict_matches(const checked_t *r, char want[][64], size_t nwant, char *why,
                           size_t whylen)
{
    for (size_t i = 0; i < nwant; i++)
        if (strcmp(want[i], "clean") != 0 && !has_token(r, want[i])) {
            snprintf(why, whylen, "expected finding '%.63s' is missing", want[i]);
            return 0;
        }
    for (size_t i = 0; i < chk_count(r->chk); i++) {
        char t[64];
        finding_token(chk_finding(r->chk, i), t, sizeof t);
        int ok = 0;
        for (size_t j = 0; j < nwant && !ok; j++)
            ok = strcmp(want[j], t) == 0;
        if (!ok) {
            snprintf(why, whylen, "unexpected finding '%.63s'", t);
            return 0;
        }
    }
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.nca files of a source directory ("dir/name.nca"), sorted; returns the count. */
static size_t list_nca(const char *rel, char ***out)
{
    DIR *d = opendir(tu_source_path(rel));
    assert_non_null(d);
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".nca") != 0)
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        assert_non_null(grown);
        names = grown;
        size_t sz = strlen(rel) + len + 2;
        names[n] = malloc(sz);
        assert_non_null(names[n]);
        snprintf(names[n], sz, "%s/%s", rel, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

static void free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- corpus -------------------------------------------------------------------------------- */

/* The `; expect:` values of a corpus file; returns their count. */
static size_t expectations(const char *text, char want[][64], size_t max, int *want_error)
{
    size_t nwant = 0;
    *want_error = 0;
    for (const char *l = text; *l;) {
        if (strncmp(l, "; expect-run: error", 19) == 0)
            *want_error = 1;
        if (strncmp(l, "; expect:", 9) == 0) {
            const char *v = l + 9;
            while (*v == ' ')
                v++;
            size_t len = strcspn(v, "\n");
            while (len && v[len - 1] == ' ')
                len--;
            assert_true(nwant < max && len < 64);
            memcpy(want[nwant], v, len);
            want[nwant++][len] = '\0';
        }
        const char *nl = strchr(l, '\n');
        if (!nl)
            break;
        l = nl + 1;
    }
    return nwant;
}

static void test_corpus(void **state)
{
    (void)state;
    char **files;
    size_t n = list_nca("tests/check", &files);
    assert_true(n >= 25);
    int failures = 0;
    size_t races = 0, clean = 0;
    for (size_t i = 0; i < n; i++) {
        char *text = tu_read_file(tu_source_path(files[i]), NULL);
        assert_non_null(text);
        char want[16][64];
        int want_error;
        size_t nwant = expectations(text, want, 16, &want_error);
        if (!nwant) {
            fprintf(stderr, "%s: no `; expect:` line\n", files[i]);
            failures++;
            free(text);
            continue;
        }
        checked_t r = check_text(text, files[i], CHK_ALL, 0);
        char why[2048];
        int ok = verdict_matches(&r, want, nwant, why, sizeof why);
        if (ok && want_error != (r.run != NCSIM_OK)) {
            snprintf(why, sizeof why, "the run %s", want_error ? "should fail" : "failed");
            ok = 0;
        }
        if (!ok) {
            fprintf(stderr, "%s: %s\n", files[i], why);
            print_findings(&r);
            failures++;
        }
        clean += strcmp(want[0], "clean") == 0;
        races += strncmp(want[0], "race", 4) == 0;
        checked_free(&r);
        free(text);
    }
    free_list(files, n);
    assert_int_equal(failures, 0);
    assert_true(races >= 10 && clean >= 10);
}

/* Every kind of race on every memory, and every other kind, is in the corpus. */
static void test_corpus_coverage(void **state)
{
    (void)state;
    char **files;
    size_t n = list_nca("tests/check", &files);
    static const char *const needed[] = {
        "race RAW sbuf", "race WAR sbuf", "race WAW sbuf", "race RAW psum", "race WAR psum",
        "race WAW psum", "race RAW hbm",  "race WAR hbm",  "race WAW hbm",  "uninit sbuf",
        "uninit hbm",    "nan",           "psum-acc",      "psum-open",     "wait-unsat",
        "post-orphan",   "clean"};
    for (size_t k = 0; k < sizeof needed / sizeof needed[0]; k++) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++) {
            char *text = tu_read_file(tu_source_path(files[i]), NULL);
            char line[128];
            snprintf(line, sizeof line, "; expect: %s\n", needed[k]);
            found = text && strstr(text, line);
            free(text);
        }
        if (!found)
            fprintf(stderr, "no corpus program expects '%s'\n", needed[k]);
        assert_true(found);
    }
    free_list(files, n);
}

/* ---- kernels -------------------------------------------------------------------------------- */

static void test_kernels(void **state)
{
    (void)state;
    char **files;
    size_t n = list_nca("kernels", &files);
    assert_true(n > 0);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        char *text = tu_read_file(tu_source_path(files[i]), NULL);
        assert_non_null(text);
        checked_t r = check_text(text, files[i], CHK_ALL & ~CHK_NAN, 1);
        if (r.run != NCSIM_OK) {
            fprintf(stderr, "%s: the run failed: %s", files[i], sim_error(r.sim));
            failures++;
        }
        /* every kernel must be clean */
        if (chk_count(r.chk)) {
            char t[64];
            finding_token(chk_finding(r.chk, 0), t, sizeof t);
            fprintf(stderr, "%s: finding '%s'\n", files[i], t);
            print_findings(&r);
            failures++;
        }
        checked_free(&r);
        free(text);
    }
    free_list(files, n);
    assert_int_equal(failures, 0);
}

/* ---- semantics -------------------------------------------------------------------------------- */

/* A wait >= N is ordered after the first N posts of the semaphore, not after later ones. */
static void test_counting_prefix(void **state)
{
    (void)state;
    /* three loads post `ready`; act waits >= 2 then reads the first two tiles: clean; a read
     * of the third tile would need >= 3 */
    const char *base = ".hbm x fp32 [384, 64] input\n"
                       ".sbuf a fp32 [128, 3, 64]\n.sbuf o fp32 [128, 64]\n"
                       ".sbuf pad fp32 [128, 8192]\n"
                       ".sem ready\n.sem slow\n"
                       ".engine sp\n"
                       "dma a[:, 0, :], x[0:128, :], queue=0 | post ready\n"
                       "dma a[:, 1, :], x[128:256, :], queue=0 | post ready\n"
                       "dma a[:, 2, :], x[256:384, :], queue=0 | post ready\n"
                       ".engine pool\nmemset pad, 0.0\nmemset pad, 1.0 | post slow\n"
                       ".engine act\nnop | wait slow >= 1\n"
                       "activate o, a[:, 0, :], copy | wait ready >= 2\n"
                       "activate o, a[:, 1, :], copy\n";
    checked_t r = check_inline(base);
    assert_int_equal(r.run, NCSIM_OK);
    assert_int_equal(chk_count(r.chk), 0);
    checked_free(&r);
    char text[2048];
    snprintf(text, sizeof text, "%sactivate o, a[:, 2, :], copy\n", base);
    r = check_inline(text);
    assert_int_equal(chk_count(r.chk), 1);
    const chk_finding_t *f = chk_finding(r.chk, 0);
    assert_int_equal(f->kind, CHK_KIND_RACE);
    assert_int_equal(f->race, CHK_RACE_RAW);
    assert_int_equal(f->first.queue, 0);
    assert_int_equal(f->first.engine, ISA_ENGINE_SP);
    assert_int_equal(f->first.index, 2); /* the third load */
    assert_int_equal(f->second.engine, ISA_ENGINE_ACT);
    assert_int_equal(f->second.queue, -1);
    assert_int_equal(f->second.index, 3);
    assert_int_equal(f->p0, 0);
    assert_int_equal(f->p1, 128);
    assert_int_equal(f->lo, 512);
    assert_int_equal(f->hi, 768);
    checked_free(&r);
}

/* The same missing synchronisation is reported whether the reader runs before or after the
 * transfer lands in this schedule: the check does not depend on when things happened. */
static void test_timing_independent(void **state)
{
    (void)state;
    static const char *const delays[] = {"", "memset pad, 0.0\nmemset pad, 1.0\n"
                                             "memset pad, 2.0\nmemset pad, 3.0\n"};
    for (int d = 0; d < 2; d++) {
        char text[2048];
        snprintf(text, sizeof text,
                 ".hbm x fp32 [128, 64] input\n.sbuf a fp32 [128, 64]\n"
                 ".sbuf b fp32 [128, 64]\n.sbuf pad fp32 [128, 2048]\n.sem go\n"
                 ".engine sp\ndma a, x, queue=0\n"
                 ".engine pool\n%smemset b, 0.0 | post go\n"
                 ".engine act\nactivate b, a, copy | wait go >= 1\n",
                 delays[d]);
        checked_t r = check_inline(text);
        /* fast: the read comes first (WAR, and it read nothing written yet); slow: RAW */
        if (d == 0) {
            assert_true(has_token(&r, "race WAR sbuf"));
            assert_true(has_token(&r, "uninit sbuf"));
        } else {
            assert_true(has_token(&r, "race RAW sbuf"));
            assert_int_equal(chk_count(r.chk), 1);
        }
        checked_free(&r);
    }
}

/* Same-engine order needs no semaphore between instructions of the engine; a transfer is
 * outside the interlock: it is ordered after the issuing engine's earlier instructions only
 * when a semaphore says they completed, and its post orders what waits for it after its
 * reads. */
static void test_program_order(void **state)
{
    (void)state;
    checked_t r = check_inline(".sbuf a fp32 [128, 64]\n.sbuf b fp32 [128, 64]\n"
                               ".engine dve\nmemset a, 1.0\ntensor_copy b, a\nmemset a, 2.0\n");
    assert_int_equal(chk_count(r.chk), 0);
    checked_free(&r);
    /* act copies into a tile and stores it with no semaphore between: the transfer may read
     * the tile while the copy still writes it (issue 16): a race */
    r = check_inline(".hbm y fp32 [128, 64] output\n.sbuf a fp32 [128, 64]\n"
                     ".sbuf c fp32 [128, 64]\n.sem init\n"
                     ".engine pool\nmemset c, 1.0 | post init\n"
                     ".engine act\ntensor_copy a, c | wait init >= 1\n"
                     "dma y, a, queue=3\n");
    assert_int_equal(r.run, NCSIM_OK);
    assert_int_equal(chk_count(r.chk), 1);
    const chk_finding_t *f = chk_finding(r.chk, 0);
    assert_int_equal(f->kind, CHK_KIND_RACE);
    assert_true(has_token(&r, "race RAW sbuf"));
    checked_free(&r);
    /* and the other way: a transfer overwriting what the engine's earlier instruction reads */
    r = check_inline(".hbm x fp32 [128, 64] input\n.sbuf a fp32 [128, 64]\n"
                     ".sbuf c fp32 [128, 64]\n.sem init\n"
                     ".engine pool\nmemset a, 1.0 | post init\n"
                     ".engine act\ntensor_copy c, a | wait init >= 1\n"
                     "dma a, x, queue=3\n");
    assert_int_equal(chk_count(r.chk), 1);
    assert_true(has_token(&r, "race WAR sbuf"));
    checked_free(&r);
    /* ordered: the copy posts, the dma waits for it; dve overwrites once the store landed */
    r = check_inline(".hbm y fp32 [128, 64] output\n.sbuf a fp32 [128, 64]\n"
                     ".sbuf c fp32 [128, 64]\n.sem st\n.sem init\n.sem cp\n"
                     ".engine pool\nmemset c, 1.0 | post init\n"
                     ".engine act\ntensor_copy a, c | wait init >= 1 | post cp\n"
                     "dma y, a, queue=3 | wait cp >= 1 | post st\n"
                     ".engine dve\nmemset a, 5.0 | wait st >= 1\n");
    assert_int_equal(r.run, NCSIM_OK);
    assert_int_equal(chk_count(r.chk), 0);
    checked_free(&r);
    /* dve overwrites the tile after act's copy only: the store's read is not ordered */
    r = check_inline(".hbm y fp32 [128, 64] output\n.sbuf a fp32 [128, 64]\n"
                     ".sbuf c fp32 [128, 64]\n.sem st\n.sem init\n.sem copied\n"
                     ".engine pool\nmemset c, 1.0 | post init\n"
                     ".engine act\ntensor_copy a, c | wait init >= 1 | post copied\n"
                     "dma y, a, queue=3 | wait copied >= 1 | post st\n"
                     ".engine dve\nmemset a, 5.0 | wait copied >= 1\nnop | wait st >= 1\n");
    assert_int_equal(chk_count(r.chk), 1);
    f = chk_finding(r.chk, 0);
    assert_int_equal(f->kind, CHK_KIND_RACE);
    /* the store (queue 3, issued by act) and dve's memset, in whichever order they ran */
    const chk_site_t *q = f->first.queue == 3 ? &f->first : &f->second;
    const chk_site_t *d = f->first.queue == 3 ? &f->second : &f->first;
    assert_int_equal(q->queue, 3);
    assert_int_equal(q->engine, ISA_ENGINE_ACT);
    assert_int_equal(q->index, 1);
    assert_int_equal(d->engine, ISA_ENGINE_DVE);
    assert_int_equal(d->queue, -1);
    checked_free(&r);
}

/* A semaphore given back with `-=` and raised again: a wait needs the post that raised it
 * last, not the first post that ever reached the value. */
static void test_decrement(void **state)
{
    (void)state;
    /* s: dve 0->1 (a written); act reads a and posts back; dve takes s back 1->0, then posts
     * go; pool rewrites a after go and posts s 0->1; act's second read waits go and s >= 1,
     * which only pool's post can satisfy: ordered after pool's write. (Ordering it after
     * dve's first post, the first time s reached 1, would report a race with pool.) */
    checked_t r = check_inline(".sbuf a fp32 [128, 64]\n.sbuf o fp32 [128, 64]\n"
                               ".sem s\n.sem back\n.sem go\n"
                               ".engine dve\nmemset a, 1.0 | post s\n"
                               "nop | wait back >= 1 | post s -= 1\n"
                               "nop | post go\n"
                               ".engine act\nactivate o, a, copy | wait s >= 1 | post back\n"
                               "activate o, a, copy | wait go >= 1 | wait s >= 1\n"
                               ".engine pool\nmemset a, 2.0 | wait go >= 1 | post s\n");
    assert_int_equal(r.run, NCSIM_OK);
    if (chk_count(r.chk))
        print_findings(&r);
    assert_int_equal(chk_count(r.chk), 0);
    checked_free(&r);
}

/* The checker observes; it does not change the schedule. */
static void test_no_perturbation(void **state)
{
    (void)state;
    char *text = tu_read_file(tu_source_path("kernels/softmax.nca"), NULL);
    assert_non_null(text);
    checked_t r = check_text(text, "softmax.nca", CHK_RACES | CHK_UNINIT, 1);
    uint64_t with = sim_stats(r.sim)->total_ps;
    checked_free(&r);
    isa_program_t *p = tu_assemble(text, "softmax.nca");
    assert_non_null(p);
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = &trn1;
    o.timing_only = 1;
    sim_t *s;
    char err[512];
    assert_int_equal(sim_create(p, &o, &s, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_run(s, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
    assert_int_equal(sim_stats(s)->total_ps, with);
    sim_destroy(s);
    isa_program_free(p);
    free(text);
}

/* Static checks: an `==` wait outside the reachable range; overflow at run time. */
static void test_static_and_overflow(void **state)
{
    (void)state;
    checked_t r = check_inline(".sem s = 5\n.engine dve\nnop | post s -= 2\n"
                               ".engine act\nnop | wait s == 2\n");
    assert_true(has_token(&r, "wait-unsat"));
    assert_false(has_token(&r, "post-orphan")); /* a decrement signals nobody */
    checked_free(&r);
    r = check_inline(".sem s = 2147483647\n.engine dve\nnop | post s\n"
                     ".engine act\nnop | wait s >= 0\n");
    assert_true(has_token(&r, "sem-overflow"));
    assert_int_equal(r.run, NCSIM_PROGRAM); /* the simulator stops there too */
    checked_free(&r);
    /* a wait later in the poster's own stream observes the post: not an orphan */
    r = check_inline(".sem s\n.engine dve\nnop | post s\nnop | wait s >= 1\n");
    assert_int_equal(chk_count(r.chk), 0);
    checked_free(&r);
}

static void test_parse_list(void **state)
{
    (void)state;
    unsigned m;
    char err[128];
    assert_int_equal(chk_parse_list("races,uninit,nan", &m, err, sizeof err), 0);
    assert_int_equal(m, CHK_RACES | CHK_UNINIT | CHK_NAN);
    assert_int_equal(chk_parse_list("all", &m, err, sizeof err), 0);
    assert_int_equal(m, CHK_ALL);
    assert_int_equal(chk_parse_list("races,bogus", &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "bogus"));
    assert_int_equal(chk_parse_list("", &m, err, sizeof err), -1);
}

/* ---- output -------------------------------------------------------------------------------- */

static char *print_to_string(const chk_t *k, size_t limit)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    chk_print(k, f, limit);
    fclose(f);
    return buf;
}

static void test_text_and_json(void **state)
{
    (void)state;
    /* four iterations of one racy loop: one group in text, four findings in JSON */
    checked_t r = check_inline(".sbuf a fp32 [128, 4, 64]\n.sbuf o fp32 [128, 64]\n"
                               ".sbuf pad fp32 [128, 2048]\n.sem go\n"
                               ".engine dve\n.loop i = 0, 4\nmemset a[:, i, :], 1.0\n.endloop\n"
                               ".engine pool\nmemset pad, 0.0 | post go\n"
                               ".engine act\nnop | wait go >= 1\n"
                               ".loop i = 0, 4\nactivate o, a[:, i, :], copy\n.endloop\n");
    assert_int_equal(chk_count(r.chk), 4);
    char *text = print_to_string(r.chk, 0);
    assert_non_null(strstr(text, "race RAW sbuf: SBUF of core 0, partitions [0, 128), bytes "
                                 "[0, 256) (tensor a)"));
    assert_non_null(strstr(text, "write t.nca:7: core 0 dve instruction 0 `memset a[:, 0], "
                                 "1.0`"));
    assert_non_null(strstr(text, "read  t.nca:14: core 0 act instruction 1 `activate o, "
                                 "a[:, 0], copy`"));
    assert_non_null(strstr(text, "(and 3 more like it"));
    free(text);
    char *js = chk_json(r.chk);
    assert_non_null(js);
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    assert_non_null(root);
    json_t *arr = json_object_get(root, "findings");
    assert_int_equal(json_array_size(arr), 4);
    json_t *f0 = json_array_get(arr, 0);
    assert_string_equal(json_string_value(json_object_get(f0, "kind")), "race");
    assert_string_equal(json_string_value(json_object_get(f0, "race")), "RAW");
    assert_string_equal(json_string_value(json_object_get(f0, "memory")), "sbuf");
    assert_string_equal(json_string_value(json_object_get(f0, "tensor")), "a");
    json_t *first = json_object_get(f0, "first");
    assert_string_equal(json_string_value(json_object_get(first, "engine")), "dve");
    assert_int_equal(json_integer_value(json_object_get(first, "line")), 7);
    assert_string_equal(json_string_value(json_object_get(first, "access")), "write");
    json_t *second = json_object_get(f0, "second");
    assert_string_equal(json_string_value(json_object_get(second, "engine")), "act");
    assert_string_equal(json_string_value(json_object_get(second, "access")), "read");
    assert_int_equal(json_integer_value(json_object_get(root, "count")), 4);
    json_decref(root);
    free(js);
    checked_free(&r);
}

/* ---- command line ---------------------------------------------------------------------------- */

static int run_cmd(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run_cmd(char **out, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    *out = NULL;
    return tu_run(cmd, out);
}

static void test_cli(void **state)
{
    (void)state;
    char racy[4096], clean[4096], unsat[4096], inputs[4096];
    snprintf(racy, sizeof racy, "%s", tu_source_path("tests/check/raw_sbuf_engines.nca"));
    snprintf(clean, sizeof clean, "%s",
             tu_source_path("tests/check/raw_sbuf_engines_fixed.nca"));
    snprintf(unsat, sizeof unsat, "%s", tu_source_path("tests/check/wait_unsat.nca"));
    snprintf(inputs, sizeof inputs, "%s", tu_source_path("tests/check/inputs_bound.nca"));
    const char *nc = tu_ncsim();
    char *out;

    assert_int_equal(run_cmd(&out, "%s check %s 2>&1", nc, racy), 1);
    assert_non_null(strstr(out, "race RAW sbuf"));
    assert_non_null(strstr(out, "1 finding"));
    free(out);

    assert_int_equal(run_cmd(&out, "%s check %s 2>&1", nc, clean), 0);
    assert_non_null(strstr(out, "clean"));
    free(out);

    assert_int_equal(run_cmd(&out, "%s check %s --json 2>/dev/null", nc, racy), 1);
    json_error_t je;
    json_t *root = json_loads(out, 0, &je);
    if (!root)
        fprintf(stderr, "bad JSON (%s): %s\n", je.text, out);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "run")), "ok");
    assert_int_equal(json_array_size(json_object_get(root, "findings")), 1);
    json_decref(root);
    free(out);

    /* a deadlocking program: the static finding and the run error, exit 1 */
    assert_int_equal(run_cmd(&out, "%s check %s --json 2>/dev/null", nc, unsat), 1);
    root = json_loads(out, 0, &je);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "run")), "error");
    assert_non_null(strstr(json_string_value(json_object_get(root, "run_error")), "deadlock"));
    json_decref(root);
    free(out);

    /* run --check: findings on stderr, exit 1; clean: exit 0; usage errors: 2 */
    assert_int_equal(run_cmd(&out, "%s run %s -q --check races,uninit,nan 2>&1", nc, racy), 1);
    assert_non_null(strstr(out, "race RAW sbuf"));
    free(out);
    assert_int_equal(run_cmd(&out, "%s run %s -q --check races,uninit,nan 2>&1", nc, clean), 0);
    free(out);
    assert_int_equal(run_cmd(&out, "%s run %s -q --check races --timing-only 2>&1", nc, racy),
                     1);
    free(out);
    assert_int_equal(run_cmd(&out, "%s run %s -q --check nan --timing-only 2>&1", nc, racy), 2);
    free(out);
    assert_int_equal(run_cmd(&out, "%s run %s -q --check racez 2>&1", nc, racy), 2);
    assert_non_null(strstr(out, "racez"));
    free(out);
    assert_int_equal(run_cmd(&out, "%s check 2>&1", nc), 2);
    free(out);
    /* unbound inputs get random values (seed 0): no --in needed */
    assert_int_equal(run_cmd(&out, "%s check %s 2>&1", nc, inputs), 0);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_corpus_coverage),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_counting_prefix),
        cmocka_unit_test(test_timing_independent),
        cmocka_unit_test(test_program_order),
        cmocka_unit_test(test_decrement),
        cmocka_unit_test(test_no_perturbation),
        cmocka_unit_test(test_static_and_overflow),
        cmocka_unit_test(test_parse_list),
        cmocka_unit_test(test_text_and_json),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
