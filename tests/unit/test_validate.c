/*
 * test_validate.c -- `ncsim validate` and `ncsim fit` (explore/validate.h, docs/validation.md):
 * manifest errors and their messages, every figure on a fixture with hand-computed values,
 * relative_to and divide, bands and exit codes, the CSV and PNG outputs, generators, --jobs,
 * and fits whose optimum is known (one and two keys), deterministic to the byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch.h"
#include "validate.h"
#include "testutil.h"

/* The keys the hand-computed values depend on, pinned so that preset changes do not move
 * them. */
#define PIN                                                                                        \
    "\"set\": {\"sp.clock_ghz\": 1.4, \"sp.issue_cycles\": 64, \"dma.trigger_latency_ns\": 500, "  \
    "\"dma.descriptor_ns\": 0, "                                                                  \
    "\"hbm.latency_ns\": 200, \"dma.engines\": 16, \"dma.engine_bandwidth_gbps\": 27.2, "          \
    "\"dma.piece_overhead_ns\": 8, \"hbm.bandwidth_gbps\": 820, \"hbm.channels\": 16, "            \
    "\"hbm.interleave_bytes\": 4096, \"act.clock_ghz\": 1.4, \"act.min_ii_cycles\": 64, "         \
    "\"act.static_overhead_cycles\": 60, \"act.latency_cycles\": 140}"

/* The same without the keys the fits vary (a fitted key would override an entry's own). */
#define PIN_FIT                                                                                    \
    "\"set\": {\"sp.clock_ghz\": 1.4, \"sp.issue_cycles\": 64, \"hbm.latency_ns\": 200, "        \
    "\"dma.descriptor_ns\": 0, "                                                                  \
    "\"dma.engines\": 16, \"dma.piece_overhead_ns\": 8, \"hbm.bandwidth_gbps\": 820, "             \
    "\"hbm.channels\": 16, \"hbm.interleave_bytes\": 4096}"

static const double ISSUE_NS = 64.0 / 1.4; /* one nop or dma trigger on sp */
/* an activate of 64 elements: initiation interval (max(min_ii, 64) cycles) and completion
 * (interval + static overhead + latency) */
static const double ACT_II_NS = 64.0 / 1.4, ACT_DONE_NS = (64.0 + 60 + 140) / 1.4;

/* One DMA of `bytes` in pieces of `piece` bytes from HBM: its data phase, in ns, at
 * 16 engines of `bw` GB/s with the piece efficiency p / (p + 8 ns x bw). */
static double dma_data_ns(double bytes, double piece, double bw)
{
    double eff = piece / (piece + 8.0 * bw);
    return bytes / (16.0 * bw * eff);
}

/* figures.nca: a 32 KiB dma (256 B pieces) issued after one nop; then two more nops */
static double figures_total_ns(void)
{
    return ISSUE_NS + 500.0 + 200.0 + dma_data_ns(32768, 256, 27.2);
}

/* fit_dma.nca / gen_dma.py: one dma of [128, cols] fp32 (its fixed cost starts when the
 * trigger issues) */
static double one_dma_ns(unsigned cols, double fixed, double bw)
{
    return fixed + 200.0 + dma_data_ns(512.0 * cols, 4.0 * cols, bw);
}

static char *write_manifest(const char *dir, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static char *write_manifest(const char *dir, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n > 0);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    size_t plen = strlen(dir) + strlen(name) + 2;
    char *path = malloc(plen);
    assert_non_null(path);
    snprintf(path, plen, "%s/%s", dir, name);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    free(text);
    return path;
}

static const char *fixture(const char *name)
{
    static char buf[2][4096];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], "%s", tu_source_path(name));
    return buf[k];
}

/* ---- manifest errors -------------------------------------------------------------------- */

static void expect_load_error(const char *body, ncsim_status_t want_st, const char *want1,
                              const char *want2)
{
    const char *dir = tu_tmpdir();
    char *path = write_manifest(dir, "bad.json", "%s", body);
    sim_validate_manifest_t *m = NULL;
    char err[4096] = "";
    ncsim_status_t st = sim_validate_load(path, &m, err, sizeof err);
    if (st != want_st || !strstr(err, want1) || (want2 && !strstr(err, want2)) ||
        !strstr(err, "bad.json"))
        fprintf(stderr, "manifest %s\n  gave %d \"%s\", wanted \"%s\" and \"%s\"\n", body, st, err,
                want1, want2 ? want2 : "");
    assert_int_equal(st, want_st);
    assert_null(m);
    assert_non_null(strstr(err, "bad.json")); /* every message names the manifest */
    assert_non_null(strstr(err, want1));
    if (want2)
        assert_non_null(strstr(err, want2));
    free(path);
}

static void test_manifest_errors(void **state)
{
    (void)state;
    char prog[1024];
    snprintf(prog, sizeof prog, "\"program\": \"%.900s\"", fixture("tests/validate/figures.nca"));
    char body[8192];
#define ENTRY(...)                                                                                 \
    (snprintf(body, sizeof body, "{\"entries\": [" __VA_ARGS__), body)
    expect_load_error("{\"entries\": [", NCSIM_USAGE, "bad.json:1:", NULL);
    expect_load_error("[1, 2]", NCSIM_USAGE, "a manifest is a JSON object", NULL);
    expect_load_error("{\"entries\": []}", NCSIM_USAGE, "'entries' must be a non-empty array",
                      NULL);
    expect_load_error("{\"entries\": [{}], \"extra\": 1}", NCSIM_USAGE, "unknown key 'extra'",
                      NULL);
    expect_load_error("{\"name\": 3, \"entries\": [{}]}", NCSIM_USAGE,
                      "key 'name' must be a string", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"title\": 5, \"figure\": \"time_ns\", "
                            "\"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'title' must be a string", NULL);
    expect_load_error(ENTRY("{%s, \"figure\": \"time_ns\", \"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 1: key 'id' is missing", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1}, "
                            "{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1}]}",
                            prog, prog),
                      NCSIM_USAGE, "entry 'a': id is used twice", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"colour\": 3}]}", prog),
                      NCSIM_USAGE, "entry 'a': unknown key 'colour'", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"latency\", \"measured\": 1}]}",
                            prog),
                      NCSIM_USAGE, "entry 'a': key 'figure': unknown figure 'latency'", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"busy_fraction:tpu\", "
                            "\"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'figure'", "unknown engine 'tpu'");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"busy_fraction:pe@cpu1\", "
                            "\"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'figure'", "@coreN");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"busy_fraction\", "
                            "\"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'figure'", "needs an argument");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"mean_duration_ns:fly\", "
                            "\"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'figure'", "unknown instruction mnemonic 'fly'");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns:pe\", "
                            "\"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'figure'", "takes no ':' argument");
    expect_load_error(ENTRY("{\"id\": \"a\", \"program\": \"nowhere.nca\", \"figure\": "
                            "\"time_ns\", \"measured\": 1}]}"),
                      NCSIM_USAGE, "entry 'a': key 'program': cannot read", "nowhere.nca");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"generate\": [\"true\"], \"figure\": "
                            "\"time_ns\", \"measured\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': give exactly one of 'program' and 'generate'",
                      NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", \"figure\": \"time_ns\", \"measured\": 1}]}"),
                      NCSIM_USAGE, "entry 'a': give exactly one of 'program' and 'generate'",
                      NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", \"generate\": [], \"figure\": \"time_ns\", "
                            "\"measured\": 1}]}"),
                      NCSIM_USAGE, "entry 'a': key 'generate' must be a non-empty array", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\"}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'measured' is missing", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 0}]}",
                            prog),
                      NCSIM_USAGE, "entry 'a': key 'measured' must be positive", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": \"1\"}]}",
                            prog),
                      NCSIM_USAGE, "entry 'a': key 'measured' must be a number", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"band\": -0.1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'band' must be positive", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"divide\": 0}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'divide' must be positive", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"weight\": -1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'weight' must not be negative", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"fit\": 1}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'fit' must be true or false", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"known_miss\": 3}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'known_miss' must be a non-empty text", NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"relative_to\": \"b\"}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'relative_to': no entry has the id 'b'",
                      NULL);
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"relative_to\": \"a\"}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'relative_to'", "itself");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"relative_to\": \"b\"}, {\"id\": \"b\", %s, \"figure\": "
                            "\"time_ns\", \"measured\": 1, \"relative_to\": \"a\"}]}",
                            prog, prog),
                      NCSIM_USAGE, "key 'relative_to'", "cycle");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"arch\": \"trn9\"}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'arch'", "unknown architecture 'trn9'");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"arch\": \"missing.json\"}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'arch'", "missing.json");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"set\": {\"dma.speed\": 3}}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'set'", "unknown key 'dma.speed'");
    expect_load_error(ENTRY("{\"id\": \"a\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
                            "\"set\": {\"dma.engines\": [1]}}]}", prog),
                      NCSIM_USAGE, "entry 'a': key 'set'", "dma.engines");
#undef ENTRY
    /* a missing manifest is an I/O error */
    sim_validate_manifest_t *m = NULL;
    char err[1024];
    assert_int_equal(sim_validate_load("/nonexistent/m.json", &m, err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, "/nonexistent/m.json"));
}

/* ---- figures ------------------------------------------------------------------------------ */

/* A manifest of every figure of figures.nca, with the measured values given. */
static char *figures_manifest(const char *dir, const double *measured)
{
    const char *p = fixture("tests/validate/figures.nca");
    return write_manifest(
        dir, "figures.json",
        "{\"name\": \"figures\", \"entries\": [\n"
        "{\"id\": \"time\", \"program\": \"%s\", %s, \"figure\": \"time_ns\", \"measured\": %.17g},\n"
        "{\"id\": \"time4\", \"program\": \"%s\", %s, \"figure\": \"time_ns\", \"divide\": 4, "
        "\"measured\": %.17g},\n"
        "{\"id\": \"busy-sp\", \"program\": \"%s\", %s, \"figure\": \"busy_fraction:sp\", "
        "\"measured\": %.17g},\n"
        "{\"id\": \"busy-sp1\", \"program\": \"%s\", %s, \"figure\": \"busy_fraction:sp@core1\", "
        "\"measured\": %.17g},\n"
        "{\"id\": \"busy-pool\", \"program\": \"%s\", %s, \"figure\": \"busy_fraction:pool\", "
        "\"measured\": %.17g},\n"
        "{\"id\": \"nop-duration\", \"program\": \"%s\", %s, \"figure\": "
        "\"mean_duration_ns:nop\", \"measured\": %.17g},\n"
        "{\"id\": \"nop-interval\", \"program\": \"%s\", %s, \"figure\": "
        "\"mean_interval_ns:nop\", \"measured\": %.17g},\n"
        "{\"id\": \"transfer\", \"program\": \"%s\", %s, \"figure\": \"dma_transfer_ns\", "
        "\"measured\": %.17g},\n"
        "{\"id\": \"dma-bw\", \"program\": \"%s\", %s, \"figure\": \"dma_bandwidth_gbps\", "
        "\"measured\": %.17g},\n"
        "{\"id\": \"hbm-bw\", \"program\": \"%s\", %s, \"figure\": \"hbm_bandwidth_gbps\", "
        "\"measured\": %.17g},\n"
        "{\"id\": \"hbm-per-dma\", \"program\": \"%s\", %s, \"figure\": "
        "\"hbm_bandwidth_gbps\", \"relative_to\": \"dma-bw\", \"measured\": %.17g, "
        "\"fit\": false},\n"
        "{\"id\": \"interval-per-duration\", \"program\": \"%s\", %s, \"figure\": "
        "\"mean_interval_ns:nop\", \"relative_to\": \"nop-duration\", \"measured\": %.17g},\n"
        "{\"id\": \"busy-act\", \"program\": \"%s\", %s, \"figure\": \"busy_fraction:act\", "
        "\"measured\": %.17g},\n"
        "{\"id\": \"act-duration\", \"program\": \"%s\", %s, \"figure\": "
        "\"mean_duration_ns:activate\", \"measured\": %.17g}\n"
        "]}\n",
        p, PIN, measured[0], p, PIN, measured[1], p, PIN, measured[2], p, PIN, measured[3], p,
        PIN, measured[4], p, PIN, measured[5], p, PIN, measured[6], p, PIN, measured[7], p, PIN,
        measured[8], p, PIN, measured[9], p, PIN, measured[10], p, PIN, measured[11], p, PIN,
        measured[12], p, PIN, measured[13]);
}

#define NFIG 14

static void hand_values(double *v)
{
    double total = figures_total_ns();
    v[0] = total;
    v[1] = total / 4;
    v[2] = 4 * ISSUE_NS / total;           /* nop, dma trigger, nop, nop */
    v[3] = ISSUE_NS / total;
    v[4] = ISSUE_NS / total;
    v[5] = ISSUE_NS;
    v[6] = (2 * ISSUE_NS + ISSUE_NS) / 2;  /* nop -> nop over the dma, then nop -> nop */
    v[7] = dma_data_ns(32768, 256, 27.2);
    v[8] = 32768 / total;                  /* bytes per ns = GB/s */
    v[9] = 32768 / total;                  /* read only */
    v[10] = 1.0;
    v[11] = 1.5;
    /* active, not busy: the two activates overlap, the engine is active from the first start
     * to the second completion (their intervals sum to only 2 x ACT_II_NS) */
    v[12] = (ACT_II_NS + ACT_DONE_NS) / total;
    v[13] = ACT_DONE_NS;
}

static void test_figures(void **state)
{
    (void)state;
    double v[NFIG];
    hand_values(v);
    const char *dir = tu_tmpdir();
    char *path = figures_manifest(dir, v);
    sim_validate_manifest_t *m = NULL;
    char err[4096];
    assert_int_equal(sim_validate_load(path, &m, err, sizeof err), NCSIM_OK);
    assert_int_equal(m->nentries, NFIG);
    sim_validate_result_t res[NFIG];
    sim_validate_options_t o = {0};
    assert_int_equal(sim_validate_run(m, &o, res, err, sizeof err), NCSIM_OK);
    for (int i = 0; i < NFIG; i++) {
        if (res[i].status != NCSIM_OK || !tu_close(res[i].simulated, v[i], 1e-4, 0))
            fprintf(stderr, "%s: simulated %.9g, hand %.9g (%s)\n", m->entries[i].id,
                    res[i].simulated, v[i], res[i].message);
        assert_int_equal(res[i].status, NCSIM_OK);
        assert_true(tu_close(res[i].simulated, v[i], 1e-4, 0));
        assert_true(res[i].inside);
        assert_true(tu_close(res[i].ratio, 1.0, 1e-4, 0));
    }
    /* relative_to divides by the other entry's own figure (hbm-per-dma: 1, not 1 / 32768) */
    assert_true(tu_close(res[10].raw, v[9], 1e-4, 0));
    sim_validate_summary_t s;
    sim_validate_summarise(m, res, &s);
    assert_int_equal(s.ran, NFIG);
    assert_int_equal(s.failed, 0);
    assert_int_equal(s.outside, 0);
    assert_true(s.geomean_error < 1e-4);
    /* --jobs 3 gives the same figures (workers in other processes) */
    sim_validate_result_t res3[NFIG];
    o.jobs = 3;
    assert_int_equal(sim_validate_run(m, &o, res3, err, sizeof err), NCSIM_OK);
    for (int i = 0; i < NFIG; i++) {
        assert_int_equal(res3[i].status, NCSIM_OK);
        assert_true(res3[i].simulated == res[i].simulated);
    }
    /* --set for every entry: a slower sequencer doubles the nop */
    const char *sets[] = {"sp.issue_cycles=128"};
    sim_validate_options_t o2 = {.sets = sets, .nsets = 1};
    assert_int_equal(sim_validate_run(m, &o2, res3, err, sizeof err), NCSIM_OK);
    assert_true(tu_close(res3[5].simulated, 2 * ISSUE_NS, 1e-4, 0));
    assert_false(res3[5].inside);
    /* --only: the entries whose id contains the text, and those they are relative to */
    const char *only[] = {"per-dma"};
    sim_validate_options_t o3 = {.only = only, .nonly = 1};
    assert_int_equal(sim_validate_run(m, &o3, res3, err, sizeof err), NCSIM_OK);
    for (int i = 0; i < NFIG; i++)
        assert_int_equal(res3[i].ran, i == 8 || i == 10); /* dma-bw, hbm-per-dma */
    assert_true(tu_close(res3[10].simulated, 1.0, 1e-9, 0));
    sim_validate_free(m);
    free(path);
}

/* A figure the run does not have: a failed entry, not a crash. */
static void test_figure_missing(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char *path = write_manifest(
        dir, "m.json",
        "{\"entries\": [{\"id\": \"no-matmul\", \"program\": \"%s\", \"figure\": "
        "\"mean_duration_ns:matmul\", \"measured\": 1}, {\"id\": \"core9\", \"program\": "
        "\"%s\", \"figure\": \"busy_fraction:sp@core9\", \"measured\": 1}]}",
        fixture("tests/validate/figures.nca"), fixture("tests/validate/figures.nca"));
    sim_validate_manifest_t *m = NULL;
    char err[4096];
    assert_int_equal(sim_validate_load(path, &m, err, sizeof err), NCSIM_OK);
    sim_validate_result_t res[2];
    sim_validate_options_t o = {0};
    assert_int_equal(sim_validate_run(m, &o, res, err, sizeof err), NCSIM_OK);
    assert_int_equal(res[0].status, NCSIM_USAGE);
    assert_non_null(strstr(res[0].message, "nothing to average"));
    assert_int_equal(res[1].status, NCSIM_USAGE);
    assert_non_null(strstr(res[1].message, "the program has 2 cores"));
    sim_validate_summary_t s;
    sim_validate_summarise(m, res, &s);
    assert_int_equal(s.failed, 2);
    sim_validate_free(m);
    /* the command says so and exits 2 */
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s validate %s", tu_ncsim(), path);
    assert_int_equal(tu_run(cmd, &out), 2);
    assert_non_null(strstr(out, "no-matmul"));
    assert_non_null(strstr(out, "error: figure 'mean_duration_ns:matmul'"));
    free(out);
    free(path);
}

/* ---- the command: bands, exit codes, CSV, PNG ---------------------------------------------- */

static void test_command(void **state)
{
    (void)state;
    double v[NFIG];
    hand_values(v);
    const char *dir = tu_tmpdir();
    char *path = figures_manifest(dir, v);
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && %s validate figures.json --csv out.csv --png out.png",
             dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "all 14 entries are inside their band"));
    assert_non_null(strstr(out, "geometric-mean error 0.0% over 14 entries"));
    assert_non_null(strstr(out, "nop-interval"));
    free(out);
    /* CSV: a header and one row per entry */
    char csvp[512];
    snprintf(csvp, sizeof csvp, "%s/out.csv", dir);
    char *csv = tu_read_file(csvp, NULL);
    assert_non_null(csv);
    const char *header = "id,title,figure,relative_to,measured,simulated,ratio,error_pct,band,"
                         "inside,weight,fit,status,known_miss\n";
    assert_true(strncmp(csv, header, strlen(header)) == 0);
    /* the nop-duration row: measured as written, simulated within rounding, the verdict */
    char row[256];
    snprintf(row, sizeof row, "\nnop-duration,,mean_duration_ns:nop,,%.10g,", v[5]);
    const char *r = strstr(csv, row);
    if (!r)
        fprintf(stderr, "CSV lacks %s in:\n%s", row, csv);
    assert_non_null(r);
    double sim = 0, ratio = 0;
    assert_int_equal(sscanf(r + strlen(row), "%lf,%lf,", &sim, &ratio), 2);
    assert_true(tu_close(sim, v[5], 1e-4, 0));
    assert_true(tu_close(ratio, 1.0, 1e-4, 0));
    const char *eol = strchr(r + 1, '\n');
    assert_non_null(eol);
    assert_true(strncmp(eol - 20, ",0.15,yes,1,true,ok,\n", 21) == 0);
    assert_non_null(strstr(csv, "\nhbm-per-dma,,hbm_bandwidth_gbps,dma-bw,1,1,1.000000,0.000,"
                                "0.15,yes,1,false,ok,\n"));
    int lines = 0;
    for (const char *c = csv; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 1 + NFIG);
    free(csv);
    /* PNG: a real, non-trivial image */
    char pngp[512];
    snprintf(pngp, sizeof pngp, "%s/out.png", dir);
    size_t len = 0;
    char *png = tu_read_file(pngp, &len);
    assert_non_null(png);
    assert_true(len > 2000);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    free(png);

    /* one entry 20% off with a 15% band: exit 1, the row says NO; a 25% band takes it in */
    double w[NFIG];
    memcpy(w, v, sizeof w);
    w[5] = v[5] / 1.2;
    free(path);
    path = figures_manifest(dir, w);
    snprintf(cmd, sizeof cmd, "%s validate %s -q", tu_ncsim(), path);
    assert_int_equal(tu_run(cmd, &out), 1);
    assert_non_null(strstr(out, "nop-duration"));
    assert_non_null(strstr(out, "+20.0%"));
    assert_non_null(strstr(out, "NO"));
    assert_non_null(strstr(out, "1 of 14 entries are outside their band"));
    assert_null(strstr(out, "nop-interval ")); /* -q: only the entries outside */
    free(out);
    w[5] = v[5] / 1.149;
    free(path);
    path = figures_manifest(dir, w);
    assert_int_equal(tu_run(cmd, &out), 0);
    free(out);

    /* known_miss: an entry outside its band and marked passes, with its reason printed; a
     * marked entry back inside its band fails until the mark goes */
    const char *fig = fixture("tests/validate/figures.nca");
    char *known = write_manifest(dir, "known.json",
                                 "{\"entries\": [{\"id\": \"t\", \"program\": \"%s\", %s, "
                                 "\"figure\": \"time_ns\", \"measured\": %.17g, "
                                 "\"known_miss\": \"a reason\"}]}\n",
                                 fig, PIN, v[0] * 2);
    snprintf(cmd, sizeof cmd, "%s validate %s --csv %s/known.csv", tu_ncsim(), known, dir);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "NO (known miss)"));
    assert_non_null(strstr(out, "1 of 1 entry is outside their band as the manifest expects"));
    assert_non_null(strstr(out, "  t: a reason"));
    free(out);
    char kcsv[512];
    snprintf(kcsv, sizeof kcsv, "%s/known.csv", dir);
    char *kc = tu_read_file(kcsv, NULL);
    assert_non_null(kc);
    assert_non_null(strstr(kc, ",no,1,true,ok,a reason\n"));
    free(kc);
    free(known);
    known = write_manifest(dir, "known.json",
                           "{\"entries\": [{\"id\": \"t\", \"program\": \"%s\", %s, "
                           "\"figure\": \"time_ns\", \"measured\": %.17g, "
                           "\"known_miss\": \"a reason\"}]}\n",
                           fig, PIN, v[0]);
    assert_int_equal(tu_run(cmd, &out), 1);
    assert_non_null(strstr(out, "marked known_miss but now inside the band: remove the mark"));
    free(out);
    free(known);

    /* usage and I/O errors */
    snprintf(cmd, sizeof cmd, "%s validate", tu_ncsim());
    assert_int_equal(tu_run(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "%s validate %s --jobs x", tu_ncsim(), path);
    assert_int_equal(tu_run(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "%s validate %s/none.json", tu_ncsim(), dir);
    assert_int_equal(tu_run(cmd, &out), 3);
    assert_non_null(strstr(out, "none.json"));
    free(out);
    /* a failed command leaves no stale CSV behind (docs/cli.md's output discipline) */
    snprintf(cmd, sizeof cmd, "%s validate %s --set dma.nothing=1 --csv %s", tu_ncsim(), path,
             csvp);
    assert_int_equal(tu_run(cmd, &out), 2);
    assert_non_null(strstr(out, "unknown key 'dma.nothing'"));
    free(out);
    assert_null(tu_read_file(csvp, NULL));
    snprintf(cmd, sizeof cmd, "%s validate %s --csv /nonexistent/dir/x.csv", tu_ncsim(), path);
    assert_int_equal(tu_run(cmd, &out), 3);
    free(out);
    free(path);
}

/* ---- generators --------------------------------------------------------------------------- */

static void test_generator(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    /* relative paths are relative to the manifest's folder: copy the generator there */
    char *gen = tu_read_file(fixture("tests/validate/gen_dma.py"), NULL);
    assert_non_null(gen);
    char gpath[512];
    snprintf(gpath, sizeof gpath, "%s/gen", dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", gpath);
    assert_int_equal(tu_run(cmd, NULL), 0);
    snprintf(gpath, sizeof gpath, "%s/gen/gen_dma.py", dir);
    assert_int_equal(tu_write_file(gpath, gen, strlen(gen)), 0);
    free(gen);
    char *path = write_manifest(
        dir, "gen.json",
        "{\"entries\": [{\"id\": \"g64\", \"generate\": [\"python3\", \"gen/gen_dma.py\", "
        "\"--cols\", \"64\"], %s, \"figure\": \"time_ns\", \"measured\": %.17g}, "
        "{\"id\": \"g2k\", \"generate\": [\"python3\", \"gen/gen_dma.py\", \"--cols\", "
        "\"2048\"], %s, \"figure\": \"time_ns\", \"measured\": %.17g}]}",
        PIN, one_dma_ns(64, 500, 27.2), PIN, one_dma_ns(2048, 500, 27.2));
    sim_validate_manifest_t *m = NULL;
    char err[4096];
    assert_int_equal(sim_validate_load(path, &m, err, sizeof err), NCSIM_OK);
    assert_string_equal(m->entries[0].generate[0], "/usr/bin/python3");
    sim_validate_result_t res[2];
    sim_validate_options_t o = {0};
    assert_int_equal(sim_validate_run(m, &o, res, err, sizeof err), NCSIM_OK);
    for (int i = 0; i < 2; i++) {
        if (res[i].status != NCSIM_OK)
            fprintf(stderr, "%s\n", res[i].message);
        assert_int_equal(res[i].status, NCSIM_OK);
        assert_true(tu_close(res[i].ratio, 1.0, 1e-4, 0));
    }
    sim_validate_free(m);
    free(path);
    /* a failing generator: a usage error naming the entry */
    path = write_manifest(dir, "bad.json",
                          "{\"entries\": [{\"id\": \"broken\", \"generate\": [\"python3\", "
                          "\"gen/gen_dma.py\"], \"figure\": \"time_ns\", \"measured\": 1}]}");
    assert_int_equal(sim_validate_load(path, &m, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_validate_run(m, &o, res, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "bad.json: entry 'broken': key 'generate'"));
    assert_non_null(strstr(err, "exited with status 2"));
    sim_validate_free(m);
    free(path);
    /* a generator printing a wrong program: the assembler's message, naming the entry */
    path = write_manifest(dir, "bad2.json",
                          "{\"entries\": [{\"id\": \"wrong\", \"generate\": [\"echo\", "
                          "\"frobnicate\"], \"figure\": \"time_ns\", \"measured\": 1}]}");
    assert_int_equal(sim_validate_load(path, &m, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_validate_run(m, &o, res, err, sizeof err), NCSIM_ASSEMBLY);
    assert_non_null(strstr(err, "entry 'wrong': the program does not load"));
    assert_non_null(strstr(err, "wrong (generated)"));
    sim_validate_free(m);
    free(path);
}

/* ---- fit ---------------------------------------------------------------------------------- */

static char *fit_manifest(const char *dir, double fixed, double bw)
{
    char *gen = tu_read_file(fixture("tests/validate/gen_dma.py"), NULL);
    assert_non_null(gen);
    char gpath[512];
    snprintf(gpath, sizeof gpath, "%s/gen_dma.py", dir);
    assert_int_equal(tu_write_file(gpath, gen, strlen(gen)), 0);
    free(gen);
    return write_manifest(
        dir, "fit.json",
        "{\"name\": \"toy DMA\", \"entries\": [\n"
        "{\"id\": \"small\", \"generate\": [\"python3\", \"gen_dma.py\", \"--cols\", \"64\"], %s, "
        "\"figure\": \"time_ns\", \"measured\": %.17g},\n"
        "{\"id\": \"mid\", \"program\": \"%s\", %s, \"figure\": \"time_ns\", \"measured\": %.17g},\n"
        "{\"id\": \"large\", \"generate\": [\"python3\", \"gen_dma.py\", \"--cols\", \"4096\"], %s, "
        "\"figure\": \"time_ns\", \"measured\": %.17g},\n"
        "{\"id\": \"unused\", \"program\": \"%s\", %s, \"figure\": \"time_ns\", \"measured\": 1, "
        "\"fit\": false}\n"
        "]}\n",
        PIN_FIT, one_dma_ns(64, fixed, bw), fixture("tests/validate/fit_dma.nca"), PIN_FIT,
        one_dma_ns(1024, fixed, bw), PIN_FIT, one_dma_ns(4096, fixed, bw),
        fixture("tests/validate/fit_dma.nca"), PIN_FIT);
}

static void test_fit_one_key(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    /* measured with a 1300 ns fixed cost: time is linear in it, the optimum is exact */
    char *path = fit_manifest(dir, 1300, 27.2);
    sim_validate_manifest_t *m = NULL;
    char err[4096];
    assert_int_equal(sim_validate_load(path, &m, err, sizeof err), NCSIM_OK);
    char kb[128];
    sim_fit_key_t key;
    assert_int_equal(sim_fit_parse_key("dma.trigger_latency_ns=100:3000", kb, sizeof kb, &key, err,
                                       sizeof err),
                     NCSIM_OK);
    sim_fit_options_t fo;
    memset(&fo, 0, sizeof fo);
    fo.keys = &key;
    fo.nkeys = 1;
    const char *hold[] = {"dma.engine_bandwidth_gbps=27.2"}; /* held fixed, written out too */
    fo.run.sets = hold;
    fo.run.nsets = 1;
    sim_fit_outcome_t out;
    assert_int_equal(sim_fit_run(m, &fo, &out, err, sizeof err), NCSIM_OK);
    fprintf(stderr, "one key: %s=%.3f from %.1f in %u evaluations (%s)\n", key.key, out.best[0],
            out.start[0], out.evals, out.stop);
    assert_true(tu_close(out.best[0], 1300, 0.01, 0));
    assert_true(out.cost_after < out.cost_before);
    assert_true(out.evals <= 200);
    /* the fitted config: base, the value, its source; loadable by --arch */
    char *json = sim_fit_config_json(m, &fo, &out, "fitted");
    assert_non_null(json);
    assert_non_null(strstr(json, "\"base\": \"trn1\""));
    assert_non_null(strstr(json, "fitted by `ncsim fit` to the manifest"));
    assert_non_null(strstr(json, "toy DMA"));
    char fpath[512];
    snprintf(fpath, sizeof fpath, "%s/fitted.json", dir);
    assert_int_equal(tu_write_file(fpath, json, strlen(json)), 0);
    free(json);
    mdl_arch_t a;
    assert_int_equal(mdl_arch_load(fpath, &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_validate(&a, err, sizeof err), NCSIM_OK);
    assert_true(a.dma.trigger_latency_ns == out.best[0]);
    assert_true(a.dma.engine_bandwidth_gbps == 27.2);
    sim_validate_free(m);
    free(path);

    /* bad keys and bounds */
    assert_int_equal(sim_fit_parse_key("dma.trigger_latency_ns=3:1", kb, sizeof kb, &key, err,
                                       sizeof err),
                     NCSIM_USAGE);
    assert_non_null(strstr(err, "lower bound"));
    assert_int_equal(sim_fit_parse_key("dma.trigger_latency_ns", kb, sizeof kb, &key, err, sizeof err),
                     NCSIM_USAGE);
    assert_int_equal(sim_fit_parse_key("dma.trigger_latency_ns=a:b", kb, sizeof kb, &key, err,
                                       sizeof err),
                     NCSIM_USAGE);
}

static void test_fit_two_keys_and_determinism(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    /* fixed cost and engine bandwidth: small transfers pin the first, large ones the second */
    char *path = fit_manifest(dir, 1300, 17.0);
    char cmd[4096], *out = NULL;
    for (int run = 0; run < 2; run++) {
        snprintf(cmd, sizeof cmd,
                 "cd %s && %s fit fit.json --key dma.trigger_latency_ns=100:3000 "
                 "--key dma.engine_bandwidth_gbps=5:50 -o fit%d.json --name fitted -q",
                 dir, tu_ncsim(), run);
        int rc = tu_run(cmd, &out);
        if (rc || run == 0)
            fprintf(stderr, "%s\n", out);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(out, "before the fit"));
        assert_non_null(strstr(out, "after the fit"));
        assert_non_null(strstr(out, "wrote fit"));
        free(out);
    }
    char p0[512], p1[512];
    snprintf(p0, sizeof p0, "%s/fit0.json", dir);
    snprintf(p1, sizeof p1, "%s/fit1.json", dir);
    size_t l0, l1;
    char *f0 = tu_read_file(p0, &l0), *f1 = tu_read_file(p1, &l1);
    assert_non_null(f0);
    assert_non_null(f1);
    assert_int_equal(l0, l1);
    assert_memory_equal(f0, f1, l0); /* deterministic to the byte */
    free(f0);
    free(f1);
    mdl_arch_t a;
    char err[1024];
    assert_int_equal(mdl_arch_load(p0, &a, err, sizeof err), NCSIM_OK);
    fprintf(stderr, "two keys: fixed %.3f ns, engine bandwidth %.4f GB/s\n", a.dma.trigger_latency_ns,
            a.dma.engine_bandwidth_gbps);
    assert_true(tu_close(a.dma.trigger_latency_ns, 1300, 0.01, 0));
    assert_true(tu_close(a.dma.engine_bandwidth_gbps, 17.0, 0.01, 0));
    /* the fitted file makes every fit entry match */
    snprintf(cmd, sizeof cmd, "cd %s && %s validate fit.json --arch fit0.json -q", dir,
             tu_ncsim());
    assert_int_equal(tu_run(cmd, &out), 1); /* "unused" (fit: false, measured 1) is outside */
    assert_non_null(strstr(out, "unused"));
    assert_null(strstr(out, "small "));
    free(out);
    /* usage errors */
    snprintf(cmd, sizeof cmd, "cd %s && %s fit fit.json -q", dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && %s fit fit.json --key link.topology=0:1 -q", dir,
             tu_ncsim());
    assert_int_equal(tu_run(cmd, &out), 2);
    assert_non_null(strstr(out, "not a numeric key"));
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && %s fit fit.json --key dma.nothing=0:1 -q", dir,
             tu_ncsim());
    assert_int_equal(tu_run(cmd, &out), 2);
    assert_non_null(strstr(out, "unknown key"));
    free(out);
    free(path);
}

/* ---- the repository's manifest -------------------------------------------------------------- */

/* validation/manifest.json is written by validation/gen/mkmanifest.py (edit the entries there):
 * the committed file must be exactly what the script prints, or one of them was edited alone. */
static void test_repo_manifest_fresh(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char outpath[512], cmd[2048];
    snprintf(outpath, sizeof outpath, "%s/manifest.json", dir);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s > %s", fixture("validation/gen/mkmanifest.py"),
             outpath);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc != 0)
        fprintf(stderr, "mkmanifest.py: %s\n", out ? out : "");
    assert_int_equal(rc, 0);
    free(out);
    size_t glen = 0, clen = 0;
    char *generated = tu_read_file(outpath, &glen);
    char *committed = tu_read_file(fixture("validation/manifest.json"), &clen);
    assert_non_null(generated);
    assert_non_null(committed);
    if (glen != clen || memcmp(generated, committed, glen) != 0)
        fail_msg("validation/manifest.json differs from what validation/gen/mkmanifest.py "
                 "prints: regenerate it (/usr/bin/python3 validation/gen/mkmanifest.py > "
                 "validation/manifest.json)");
    free(generated);
    free(committed);
    /* and it loads: ids unique, keys known, programs and presets resolvable */
    sim_validate_manifest_t *m = NULL;
    char err[4096];
    ncsim_status_t st = sim_validate_load(fixture("validation/manifest.json"), &m, err, sizeof err);
    if (st != NCSIM_OK)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(st, NCSIM_OK);
    assert_true(m->nentries > 50);
    sim_validate_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_errors),
        cmocka_unit_test(test_figures),
        cmocka_unit_test(test_figure_missing),
        cmocka_unit_test(test_command),
        cmocka_unit_test(test_generator),
        cmocka_unit_test(test_fit_one_key),
        cmocka_unit_test(test_fit_two_keys_and_determinism),
        cmocka_unit_test(test_repo_manifest_fresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
