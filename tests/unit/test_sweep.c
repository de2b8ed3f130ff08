/*
 * test_sweep.c -- `ncsim sweep`: the spec (strictness, every error names the key), the point
 * order, runs in one process and in workers giving the same bytes, per-point files (skip,
 * force, stale), failed points, the merge, the Slurm script, the PNG plot, the command line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "load.h"
#include "sim.h"
#include "sweep_internal.h"
#include "sweep_plot.h"
#include "testutil.h"

/* The models/ config of a point's ncsim_arch_t, through its JSON (for the independent run). */
static void arch_of(const ncsim_arch_t *h, mdl_arch_t *out)
{
    char *json = NULL, err[1024];
    assert_int_equal(ncsim_arch_to_json(h, &json), NCSIM_OK);
    assert_int_equal(mdl_arch_parse(json, strlen(json), "point", out, err, sizeof err), NCSIM_OK);
    ncsim_free(json);
}

/* Write a spec for kernels/demo_gemm.nca with the given JSON members after "program". */
static const char *write_spec(const char *dir, const char *name, const char *members)
{
    static char path[512];
    char text[4096];
    snprintf(text, sizeof text, "{ \"program\": \"%s\"%s%s }\n",
             tu_source_path("kernels/demo_gemm.nca"), members[0] ? ", " : "", members);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    return path;
}

static ncsim_status_t load_spec(const char *dir, const char *members, sim_sweep_t **sw,
                                char *err, size_t errlen)
{
    return sim_sweep_load(write_spec(dir, "spec.json", members), sw, err, errlen);
}

static void expect_spec_error(const char *members, const char *needle)
{
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[2048] = "";
    ncsim_status_t st = load_spec(dir, members, &sw, err, sizeof err);
    if (st == NCSIM_OK || !strstr(err, needle) || !strstr(err, "spec.json"))
        fail_msg("spec {%s}: status %d, message '%s' (wanted one naming '%s' and the file)",
                 members, (int)st, err, needle);
    assert_null(sw);
}

/* A spec is data: the files it names are opened only when they are regular files. */
static void test_spec_names_special_files(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/f.nca", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *cases[][2] = {{"{\"program\": \"/dev/zero\"}", "character device"},
                              {"{\"program\": \"f.nca\"}", "a FIFO"},
                              {"{\"program\": \".\"}", "a directory"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/s%zu.json", dir, i);
        assert_int_equal(tu_write_file(path, cases[i][0], strlen(cases[i][0])), 0);
        sim_sweep_t *sw = NULL;
        char err[2048] = "";
        assert_int_not_equal(sim_sweep_load(path, &sw, err, sizeof err), NCSIM_OK);
        if (!strstr(err, cases[i][1]))
            fail_msg("%s: '%s' does not say '%s'", cases[i][0], err, cases[i][1]);
        assert_null(sw);
    }
    char path[700];
    snprintf(path, sizeof path, "%s/inputs.json", dir);
    const char *fmt = "{\"program\": \"%s\", \"timing_only\": false, "
                      "\"inputs\": {\"lhsT\": \"f.nca\"}}";
    char text[1200];
    snprintf(text, sizeof text, fmt, tu_source_path("kernels/demo_gemm.nca"));
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    sim_sweep_t *sw = NULL;
    char err[2048] = "";
    assert_int_not_equal(sim_sweep_load(path, &sw, err, sizeof err), NCSIM_OK);
    assert_non_null(strstr(err, "not a regular file"));
}

/* Point files are data too: a FIFO or a symbolic link in their place is refused by the merge
 * at once (no blocking, no reading another file), as unreadable. */
static void test_merge_refuses_special_point_files(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    write_spec(dir, "one.json", "\"timing_only\": true, \"grid\": {\"hbm.bandwidth_gbps\": [820]}");
    assert_int_equal(tu_sh("cd %s && %s sweep one.json --out o -q", dir, tu_ncsim()), 0);
    assert_int_equal(tu_sh("cd %s && mv o/point-0.json kept.json && mkfifo o/point-0.json", dir),
                     0);
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && timeout 20 %s sweep one.json --merge --out o", dir,
             tu_ncsim());
    assert_int_equal(tu_run(cmd, &out), 3);
    assert_non_null(strstr(out, "unreadable"));
    free(out);
    assert_int_equal(tu_sh("cd %s && rm o/point-0.json && ln -s ../kept.json o/point-0.json",
                           dir),
                     0);
    assert_int_equal(tu_run(cmd, &out), 3);
    assert_non_null(strstr(out, "unreadable"));
    free(out);
    assert_int_equal(tu_sh("cd %s && rm o/point-0.json && mv kept.json o/point-0.json", dir), 0);
    assert_int_equal(tu_run(cmd, &out), 0);
    free(out);
}

static void test_spec_errors(void **state)
{
    (void)state;
    expect_spec_error("\"grid\": {\"hbm.bandwith_gbps\": [1]}", "hbm.bandwith_gbps");
    expect_spec_error("\"grids\": {}", "grids");
    expect_spec_error("\"grid\": {\"dma.engines\": [1.5]}", "dma.engines");
    expect_spec_error("\"grid\": {\"link.topology\": [\"mesh\"]}", "link.topology");
    expect_spec_error("\"grid\": {\"hbm.bandwidth_gbps\": []}", "hbm.bandwidth_gbps");
    expect_spec_error("\"grid\": {\"hbm.bandwidth_gbps\": [true]}", "hbm.bandwidth_gbps");
    expect_spec_error("\"set\": {\"pe.rowz\": 64}", "pe.rowz");
    expect_spec_error("\"timing_only\": 1", "timing_only");
    expect_spec_error("\"random_inputs\": 1", "timing_only");
    /* an invalid combination names the point and the key */
    expect_spec_error("\"grid\": {\"system.chips\": [1, 4]}", "point 1");
    expect_spec_error("\"grid\": {\"system.chips,link.torus_x\": [[4, 2]]}", "link.torus");
    expect_spec_error("\"grid\": {\"system.chips,link.torus_x\": [4]}", "varies 2 keys");
    expect_spec_error("\"grid\": {\"pe.rows\": [64], \"pe.rows \": [32]}", "pe.rows");
    /* duplicate keys, bad JSON, no program */
    const char *dir = tu_tmpdir();
    char path[512], err[1024];
    sim_sweep_t *sw = NULL;
    snprintf(path, sizeof path, "%s/bad.json", dir);
    const char *dup = "{\"program\": \"x.nca\", \"program\": \"y.nca\"}";
    assert_int_equal(tu_write_file(path, dup, strlen(dup)), 0);
    assert_int_equal(sim_sweep_load(path, &sw, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "bad.json"));
    const char *noprog = "{\"arch\": \"trn1\"}";
    assert_int_equal(tu_write_file(path, noprog, strlen(noprog)), 0);
    assert_int_equal(sim_sweep_load(path, &sw, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "program"));
    const char *missing = "{\"program\": \"no-such.nca\"}";
    assert_int_equal(tu_write_file(path, missing, strlen(missing)), 0);
    assert_int_equal(sim_sweep_load(path, &sw, err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, "no-such.nca"));
    snprintf(path, sizeof path, "%s/none.json", dir);
    assert_int_equal(sim_sweep_load(path, &sw, err, sizeof err), NCSIM_IO);
}

/* The first grid key varies slowest; linked keys move together; "set" applies to all. */
static void test_point_order(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[2048];
    assert_int_equal(load_spec(dir, "\"set\": {\"dma.engines\": 8}, \"grid\": {"
                                    "\"hbm.bandwidth_gbps\": [410, 820.5], "
                                    "\"system.chips,link.torus_x,link.torus_y\": "
                                    "[[1, 1, 1], [4, 2, 2], [16, 4, 4]]}",
                               &sw, err, sizeof err),
                     NCSIM_OK);
    assert_int_equal(sim_sweep_point_count(sw), 6);
    assert_int_equal(sim_sweep_param_count(sw), 4);
    assert_string_equal(sim_sweep_param_key(sw, 0), "hbm.bandwidth_gbps");
    assert_string_equal(sim_sweep_param_key(sw, 3), "link.torus_y");
    static const double bw[6] = {410, 410, 410, 820.5, 820.5, 820.5};
    static const unsigned chips[6] = {1, 4, 16, 1, 4, 16};
    for (uint64_t i = 0; i < 6; i++) {
        ncsim_arch_t *h = NULL;
        assert_int_equal(sim_sweep_point_arch(sw, i, &h, err, sizeof err), NCSIM_OK);
        mdl_arch_t a;
        arch_of(h, &a);
        ncsim_arch_free(h);
        assert_true(a.hbm.bandwidth_gbps == bw[i]);
        assert_int_equal(a.chips, chips[i]);
        assert_int_equal(a.link.torus_x * a.link.torus_y, chips[i]);
        assert_int_equal(a.dma.engines, 8);
    }
    ncsim_arch_t *none = NULL;
    assert_int_equal(sim_sweep_point_arch(sw, 6, &none, err, sizeof err), NCSIM_USAGE);
    assert_null(none);
    /* the same points as text, as `--list` prints them: the varied keys in column order,
     * as the resolved config holds them */
    char values[256];
    assert_int_equal(sim_sweep_point_values(sw, 0, values, sizeof values, err, sizeof err),
                     NCSIM_OK);
    assert_string_equal(values, "410.0,1,1,1");
    assert_int_equal(sim_sweep_point_values(sw, 4, values, sizeof values, err, sizeof err),
                     NCSIM_OK);
    assert_string_equal(values, "820.5,4,2,2");
    assert_int_equal(sim_sweep_point_values(sw, 4, values, 8, err, sizeof err), NCSIM_OK);
    assert_string_equal(values, "820.5,4"); /* truncated to the buffer */
    assert_int_equal(sim_sweep_point_values(sw, 6, values, sizeof values, err, sizeof err),
                     NCSIM_USAGE);
    assert_string_equal(values, "");
    assert_non_null(strstr(err, "point 6 does not exist"));
    assert_int_equal(strlen(sim_sweep_fingerprint(sw)), 16);
    char od[256];
    sim_sweep_default_out_dir(sw, od, sizeof od);
    assert_string_equal(od, "spec.sweep");
    sim_sweep_free(sw);

    /* no grid: one point, the base config */
    assert_int_equal(load_spec(dir, "", &sw, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_sweep_point_count(sw), 1);
    assert_int_equal(sim_sweep_param_count(sw), 0);
    assert_int_equal(sim_sweep_point_values(sw, 0, values, sizeof values, err, sizeof err),
                     NCSIM_OK);
    assert_string_equal(values, "");
    sim_sweep_free(sw);
}

static char *read_text(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tu_read_file(path, NULL);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* One process and three workers write the same CSV; each row matches a direct run. */
static void test_jobs_same_bytes(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[4096];
    assert_int_equal(load_spec(dir, "\"grid\": {\"hbm.bandwidth_gbps\": [205, 410, 820, 1640], "
                                    "\"pe.clock_ghz\": [1.4, 2.8]}",
                               &sw, err, sizeof err),
                     NCSIM_OK);
    char d1[600], d3[600], c1[600], c3[600];
    snprintf(d1, sizeof d1, "%s/one", dir);
    snprintf(d3, sizeof d3, "%s/three", dir);
    snprintf(c1, sizeof c1, "%s/one.csv", dir);
    snprintf(c3, sizeof c3, "%s/three.csv", dir);
    sim_sweep_summary_t sum;
    sim_sweep_run_options_t o1 = {d1, 1, 0, SIM_SWEEP_PROGRESS_NEVER};
    sim_sweep_run_options_t o3 = {d3, 3, 0, SIM_SWEEP_PROGRESS_NEVER};
    assert_int_equal(sim_sweep_run(sw, 0, 7, &o1, &sum, err, sizeof err), NCSIM_OK);
    assert_int_equal(sum.ran, 8);
    assert_int_equal(sum.failed, 0);
    assert_int_equal(sim_sweep_run(sw, 0, 7, &o3, &sum, err, sizeof err), NCSIM_OK);
    assert_int_equal(sum.ran, 8);
    sim_sweep_merge_summary_t ms;
    assert_int_equal(sim_sweep_merge(sw, d1, c1, &ms, err, sizeof err), NCSIM_OK);
    assert_int_equal(ms.ok, 8);
    assert_int_equal(sim_sweep_merge(sw, d3, c3, &ms, err, sizeof err), NCSIM_OK);
    char *a = tu_read_file(c1, NULL), *b = tu_read_file(c3, NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    assert_int_equal(count_lines(a), 9);
    assert_true(strncmp(a, "hbm.bandwidth_gbps,pe.clock_ghz,total_ns,mfu,pe_util,act_util,"
                           "dve_util,pool_util,sp_util,cc_util,dma_util,hbm_read_bytes,"
                           "hbm_write_bytes,status\n",
                        140) == 0);

    /* row 5 (hbm 1640... no: 820 x 2.8 is point 5) equals `sim_run` of its config */
    ncsim_arch_t *h5 = NULL;
    assert_int_equal(sim_sweep_point_arch(sw, 5, &h5, err, sizeof err), NCSIM_OK);
    mdl_arch_t arch;
    arch_of(h5, &arch);
    ncsim_arch_free(h5);
    assert_true(arch.hbm.bandwidth_gbps == 820 && arch.pe.clock_ghz == 2.8);
    isa_geometry_t g;
    mdl_arch_geometry(&arch, &g);
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *prog = NULL;
    assert_int_equal(sim_load_program(tu_source_path("kernels/demo_gemm.nca"), &g, NULL, NULL,
                                      &prog, &diag),
                     NCSIM_OK);
    isa_diag_free(&diag);
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &arch;
    so.timing_only = 1;
    sim_t *s = NULL;
    assert_int_equal(sim_create(prog, &so, &s, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_run(s, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
    const sim_stats_t *ss = sim_stats(s);
    char expect[256];
    snprintf(expect, sizeof expect, "\n820.0,2.8,%llu.%03llu,%.6f,",
             (unsigned long long)(ss->total_ps / 1000), (unsigned long long)(ss->total_ps % 1000),
             ss->mfu);
    if (!strstr(a, expect))
        fail_msg("CSV lacks '%s':\n%s", expect + 1, a);
    snprintf(expect, sizeof expect, ",%llu,%llu,ok\n", (unsigned long long)ss->hbm_read_bytes,
             (unsigned long long)ss->hbm_write_bytes);
    assert_non_null(strstr(a, expect));
    sim_destroy(s);
    isa_program_free(prog);
    free(a);
    free(b);

    /* a rerun skips every point; --force reruns them */
    assert_int_equal(sim_sweep_run(sw, 0, 7, &o3, &sum, err, sizeof err), NCSIM_OK);
    assert_int_equal(sum.ran, 0);
    assert_int_equal(sum.skipped, 8);
    o1.force = 1;
    assert_int_equal(sim_sweep_run(sw, 2, 3, &o1, &sum, err, sizeof err), NCSIM_OK);
    assert_int_equal(sum.ran, 2);
    assert_int_equal(sum.skipped, 0);
    sim_sweep_free(sw);
}

/* --index runs write point files; the merge wants them all, and only from this spec. */
static void test_points_and_merge(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[4096];
    assert_int_equal(load_spec(dir, "\"grid\": {\"hbm.bandwidth_gbps\": [410, 820, 1640]}", &sw,
                               err, sizeof err),
                     NCSIM_OK);
    char out[512], csv[600];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    assert_int_equal(mkdir(out, 0777), 0);
    sim_sweep_point_status_t ps;
    assert_int_equal(sim_sweep_run_point(sw, 2, out, 0, &ps, err, sizeof err), NCSIM_OK);
    assert_int_equal(ps, SIM_SWEEP_POINT_OK);
    assert_int_equal(sim_sweep_run_point(sw, 2, out, 0, &ps, err, sizeof err), NCSIM_OK);
    assert_int_equal(ps, SIM_SWEEP_POINT_SKIPPED);
    assert_int_equal(sim_sweep_run_point(sw, 2, out, 1, &ps, err, sizeof err), NCSIM_OK);
    assert_int_equal(ps, SIM_SWEEP_POINT_OK);
    assert_int_equal(sim_sweep_run_point(sw, 3, out, 0, &ps, err, sizeof err), NCSIM_USAGE);

    /* the point file: statistics, resolved config, and the sweep block */
    char *p2 = read_text(out, "point-2.json");
    assert_non_null(p2);
    assert_non_null(strstr(p2, "\"arch_config\""));
    assert_non_null(strstr(p2, "\"total_ns\""));
    assert_non_null(strstr(p2, "\"fingerprint\": \""));
    assert_non_null(strstr(p2, "\"hbm.bandwidth_gbps\": \"1640.0\""));
    assert_non_null(strstr(p2, "\"status\": \"ok\""));
    free(p2);

    sim_sweep_merge_summary_t ms;
    assert_int_equal(sim_sweep_merge(sw, out, csv, &ms, err, sizeof err), NCSIM_IO);
    assert_int_equal(ms.missing, 2);
    assert_non_null(strstr(err, "point 0"));
    assert_non_null(strstr(err, "point 1"));
    assert_int_equal(access(csv, F_OK), -1); /* no partial CSV */

    /* a point file of another spec (other fingerprint) is stale: rerun, not merged */
    char p0[600];
    snprintf(p0, sizeof p0, "%s/point-0.json", out);
    const char *stale = "{\"sweep\": {\"fingerprint\": \"0000000000000000\", \"index\": 0, "
                        "\"status\": \"ok\"}}";
    assert_int_equal(tu_write_file(p0, stale, strlen(stale)), 0);
    assert_int_equal(sim_sweep_run_point(sw, 1, out, 0, &ps, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_sweep_merge(sw, out, csv, &ms, err, sizeof err), NCSIM_IO);
    assert_int_equal(ms.missing, 1);
    assert_non_null(strstr(err, "stale"));
    assert_int_equal(sim_sweep_run_point(sw, 0, out, 0, &ps, err, sizeof err), NCSIM_OK);
    assert_int_equal(ps, SIM_SWEEP_POINT_OK);
    assert_int_equal(sim_sweep_merge(sw, out, csv, &ms, err, sizeof err), NCSIM_OK);
    assert_int_equal(ms.ok, 3);
    char *text = tu_read_file(csv, NULL);
    assert_non_null(text);
    assert_int_equal(count_lines(text), 4);
    /* rows in point order */
    char *r410 = strstr(text, "\n410.0,"), *r820 = strstr(text, "\n820.0,"),
         *r1640 = strstr(text, "\n1640.0,");
    assert_true(r410 && r820 && r1640 && r410 < r820 && r820 < r1640);
    free(text);
    sim_sweep_free(sw);
}

/* A point whose config the program does not fit is a recorded failure, not a crash. */
static void test_failed_point(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[4096];
    /* demo_gemm needs about 43 KiB of SBUF per partition */
    assert_int_equal(load_spec(dir, "\"grid\": {\"sbuf.bytes_per_partition\": [196608, 8192]}",
                               &sw, err, sizeof err),
                     NCSIM_OK);
    char out[512], csv[600];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    sim_sweep_run_options_t o = {out, 2, 0, SIM_SWEEP_PROGRESS_NEVER};
    sim_sweep_summary_t sum;
    assert_int_equal(sim_sweep_run(sw, 0, 1, &o, &sum, err, sizeof err), NCSIM_OK);
    assert_int_equal(sum.ran, 2);
    assert_int_equal(sum.failed, 1);
    char *p1 = read_text(out, "point-1.json");
    assert_non_null(p1);
    assert_non_null(strstr(p1, "\"status\": \"error\""));
    assert_non_null(strstr(p1, "\"exit_code\": 2"));
    free(p1);
    sim_sweep_merge_summary_t ms;
    assert_int_equal(sim_sweep_merge(sw, out, csv, &ms, err, sizeof err), NCSIM_OK);
    assert_int_equal(ms.ok, 1);
    assert_int_equal(ms.failed, 1);
    char *text = tu_read_file(csv, NULL);
    assert_non_null(strstr(text, "\n8192,,,,,,,,,,,,error\n"));
    free(text);
    sim_sweep_free(sw);
}

/* An invalid point (unchecked load): sim_sweep_point_arch says why and still gives the config
 * as far as it was resolved, so the message can show the point's values. */
static void test_invalid_point_config(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[4096];
    const char *spec = write_spec(dir, "bad_clock.json", "\"grid\": {\"pe.clock_ghz\": [1.4, -1]}");
    assert_int_equal(sim_sweep_load(spec, &sw, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "point 1 (pe.clock_ghz=-1.0)"));
    assert_int_equal(sim_sweep_load_unchecked(spec, &sw, err, sizeof err), NCSIM_OK);
    ncsim_arch_t *a = NULL;
    assert_int_equal(sim_sweep_point_arch(sw, 1, &a, err, sizeof err), NCSIM_USAGE);
    assert_non_null(a);
    char *v = NULL;
    assert_int_equal(ncsim_arch_get(a, "pe.clock_ghz", &v), NCSIM_OK);
    assert_string_equal(v, "-1.0");
    ncsim_free(v);
    ncsim_arch_free(a);
    assert_int_equal(sim_sweep_point_arch(sw, 0, &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(ncsim_arch_get(a, "pe.clock_ghz", &v), NCSIM_OK);
    assert_string_equal(v, "1.4");
    ncsim_free(v);
    ncsim_arch_free(a);
    sim_sweep_free(sw);
}

/* A functional sweep binds inputs like `ncsim run --random-inputs`. */
static void test_functional(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[4096];
    assert_int_equal(load_spec(dir, "\"timing_only\": false, \"random_inputs\": 3, "
                                    "\"grid\": {\"pe.clock_ghz\": [1.4, 2.8]}",
                               &sw, err, sizeof err),
                     NCSIM_OK);
    char out[512], csv[600];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    sim_sweep_run_options_t o = {out, 1, 0, SIM_SWEEP_PROGRESS_NEVER};
    sim_sweep_summary_t sum;
    assert_int_equal(sim_sweep_run(sw, 0, 1, &o, &sum, err, sizeof err), NCSIM_OK);
    assert_int_equal(sum.failed, 0);
    char *p0 = read_text(out, "point-0.json");
    assert_non_null(strstr(p0, "\"mode\": \"functional\""));
    free(p0);
    sim_sweep_free(sw);
    /* without inputs a functional point fails and says which tensor is unbound */
    assert_int_equal(load_spec(dir, "\"timing_only\": false", &sw, err, sizeof err), NCSIM_OK);
    sim_sweep_point_status_t ps;
    snprintf(out, sizeof out, "%s/out2", dir);
    assert_int_equal(mkdir(out, 0777), 0);
    assert_int_equal(sim_sweep_run_point(sw, 0, out, 0, &ps, err, sizeof err), NCSIM_OK);
    assert_int_equal(ps, SIM_SWEEP_POINT_FAILED);
    assert_non_null(strstr(err, "lhsT"));
    sim_sweep_free(sw);
}

static void test_slurm_script(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    sim_sweep_t *sw = NULL;
    char err[2048];
    assert_int_equal(load_spec(dir, "\"grid\": {\"hbm.bandwidth_gbps\": [1, 2, 3, 4, 5, 6, 7]}",
                               &sw, err, sizeof err),
                     NCSIM_OK);
    const char *extra[] = {"--partition=cpu", "--time=00:10:00"};
    sim_sweep_slurm_options_t o = {"/opt/ncsim it's", "/data/out", 0, extra, 2, NULL};
    char *s = sim_sweep_slurm_script(sw, &o, err, sizeof err);
    assert_non_null(s);
    assert_non_null(strstr(s, "#!/bin/bash\n"));
    assert_non_null(strstr(s, "\n#SBATCH --array=0-6\n"));
    assert_non_null(strstr(s, "\n#SBATCH --partition=cpu\n#SBATCH --time=00:10:00\n"));
    assert_non_null(strstr(s, "--dependency=afterok:"));
    assert_non_null(strstr(s, "ncsim='/opt/ncsim it'\\''s'\n"));
    assert_non_null(strstr(s, "csv='/data/out/results.csv'"));
    assert_non_null(strstr(s, "--index \"$first-$last\""));
    assert_non_null(strstr(s, "per_task=1\n"));
    free(s);
    o.points_per_task = 3;
    s = sim_sweep_slurm_script(sw, &o, err, sizeof err);
    assert_non_null(strstr(s, "\n#SBATCH --array=0-2\n"));
    assert_non_null(strstr(s, "per_task=3\n"));
    free(s);
    sim_sweep_free(sw);
    /* bash parses it */
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/s.sh", dir);
    o.points_per_task = 0;
    assert_int_equal(load_spec(dir, "", &sw, err, sizeof err), NCSIM_OK);
    s = sim_sweep_slurm_script(sw, &o, err, sizeof err);
    assert_int_equal(tu_write_file(path, s, strlen(s)), 0);
    free(s);
    snprintf(cmd, sizeof cmd, "bash -n %s", path);
    assert_int_equal(tu_run(cmd, NULL), 0);
    /* an #SBATCH value is escaped byte by byte for sbatch's own splitting */
    const char *odd[] = {"--comment=a b#c\"d'e"};
    o.sbatch = odd;
    o.nsbatch = 1;
    s = sim_sweep_slurm_script(sw, &o, err, sizeof err);
    assert_non_null(s);
    assert_non_null(strstr(s, "\n#SBATCH --comment=a\\ b\\#c\\\"d\\'e\n"));
    assert_non_null(strstr(s, " '--comment=a b#c\"d'\\''e' --wrap="));
    free(s);
    /* values that cannot be quoted safely are refused, with a message naming them */
    const char *nl[] = {"--partition=cpu\nrm -rf x"}, *notopt[] = {"partition=cpu"};
    struct {
        const char *out, *const *sbatch, *needle;
    } bad[] = {{"/data/out\ntouch x", NULL, "--out folder"},
               {"/data/o%jut", NULL, "'%'"},
               {"/data/out", nl, "--sbatch option 1"},
               {"/data/out", notopt, "not an sbatch option"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        o.out_dir = bad[i].out;
        o.sbatch = bad[i].sbatch;
        o.nsbatch = bad[i].sbatch ? 1 : 0;
        err[0] = 0;
        assert_null(sim_sweep_slurm_script(sw, &o, err, sizeof err));
        if (!strstr(err, bad[i].needle))
            fail_msg("case %zu: '%s' does not name '%s'", i, err, bad[i].needle);
    }
    sim_sweep_free(sw);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void test_plot(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char csv[512], png[512], err[1024];
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    snprintf(png, sizeof png, "%s/p.png", dir);
    const char *text = "a.x,b.y,total_ns,mfu,status\n"
                       "1,10,100.5,0.5,ok\n"
                       "2,10,90,0.6,ok\n"
                       "4,10,80,0.7,ok\n"
                       "1,20,200,0.25,ok\n"
                       "2,20,150,0.3,ok\n"
                       "4,20,,,error\n";
    assert_int_equal(tu_write_file(csv, text, strlen(text)), 0);
    char spec[] = "X=a.x,Y=total_ns,logx";
    sim_plot_options_t o;
    assert_int_equal(sim_plot_parse(spec, &o, err, sizeof err), NCSIM_OK);
    assert_string_equal(o.x, "a.x");
    assert_string_equal(o.y, "total_ns");
    assert_true(o.log_x && !o.log_y);
    assert_int_equal(sim_plot_csv(csv, &o, png, err, sizeof err), NCSIM_OK);
    size_t len = 0;
    unsigned char *data = (unsigned char *)tu_read_file(png, &len);
    assert_non_null(data);
    assert_true(len > 33);
    assert_memory_equal(data, "\x89PNG\r\n\x1a\n", 8);
    assert_memory_equal(data + 12, "IHDR", 4);
    assert_int_equal(be32(data + 16), 960);
    assert_int_equal(be32(data + 20), 600);
    free(data);
    /* the same input gives the same bytes */
    char png2[600];
    snprintf(png2, sizeof png2, "%s/p2.png", dir);
    assert_int_equal(sim_plot_csv(csv, &o, png2, err, sizeof err), NCSIM_OK);
    size_t l1, l2;
    char *d1 = tu_read_file(png, &l1), *d2 = tu_read_file(png2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(d1, d2, l1);
    free(d1);
    free(d2);

    char bad[] = "X=a.x,Y=nope";
    assert_int_equal(sim_plot_parse(bad, &o, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_plot_csv(csv, &o, png, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "nope"));
    char bad2[] = "X=a.x,Z=1";
    assert_int_equal(sim_plot_parse(bad2, &o, err, sizeof err), NCSIM_USAGE);
    char bad3[] = "X=a.x";
    assert_int_equal(sim_plot_parse(bad3, &o, err, sizeof err), NCSIM_USAGE);
    const char *ragged = "a,b\n1,2\n3\n";
    assert_int_equal(tu_write_file(csv, ragged, strlen(ragged)), 0);
    char ok[] = "X=a,Y=b";
    assert_int_equal(sim_plot_parse(ok, &o, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_plot_csv(csv, &o, png, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, ":3:"));
}

/* The command line: a full run, a Slurm array task by environment, usage errors. */
static void test_cli(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char spec[512];
    snprintf(spec, sizeof spec, "%s",
             write_spec(dir, "cli.json", "\"grid\": {\"hbm.bandwidth_gbps\": [410, 820, 1640]}"));
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && %s sweep %s --jobs 2 -q --plot X=hbm.bandwidth_gbps,"
                              "Y=total_ns --png plot.png",
             dir, tu_ncsim(), spec);
    assert_int_equal(tu_run(cmd, &out), 0);
    free(out);
    char *csv = read_text(dir, "cli.sweep/results.csv");
    assert_non_null(csv);
    assert_int_equal(count_lines(csv), 4);
    free(csv);
    char png[512];
    snprintf(png, sizeof png, "%s/plot.png", dir);
    assert_int_equal(access(png, F_OK), 0);

    /* an array task runs its point: SLURM_ARRAY_TASK_ID=1 into a fresh directory */
    snprintf(cmd, sizeof cmd, "cd %s && SLURM_ARRAY_TASK_ID=1 %s sweep %s --out task", dir,
             tu_ncsim(), spec);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "1 point run"));
    free(out);
    char p[600];
    snprintf(p, sizeof p, "%s/task/point-1.json", dir);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s/task/point-0.json", dir);
    assert_int_equal(access(p, F_OK), -1);
    /* the merge of an incomplete directory is an I/O error that names the points */
    snprintf(cmd, sizeof cmd, "cd %s && %s sweep %s --out task --merge", dir, tu_ncsim(), spec);
    assert_int_equal(tu_run(cmd, &out), 3);
    assert_non_null(strstr(out, "point 0"));
    free(out);
    /* --index ranges */
    snprintf(cmd, sizeof cmd, "cd %s && %s sweep %s --out task --index 0-2 -q && %s sweep %s "
                              "--out task --merge --csv -",
             dir, tu_ncsim(), spec, tu_ncsim(), spec);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "hbm.bandwidth_gbps,total_ns,"));
    assert_non_null(strstr(out, "\n1640.0,"));
    free(out);
    /* --list */
    snprintf(cmd, sizeof cmd, "%s sweep %s --list", tu_ncsim(), spec);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_string_equal(out, "index,hbm.bandwidth_gbps\n0,410.0\n1,820.0\n2,1640.0\n");
    free(out);
    /* usage errors */
    static const char *const bad[] = {"--index 3", "--index 2-1", "--jobs x", "--merge --slurm",
                                      "--plot X=a,Y=b", "--points-per-task 2", NULL};
    for (int i = 0; bad[i]; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s sweep %s --out task %s", dir, tu_ncsim(), spec,
                 bad[i]);
        int rc = tu_run(cmd, &out);
        if (rc != 2)
            fail_msg("'%s' exited %d, not 2: %s", bad[i], rc, out ? out : "");
        free(out);
    }
    snprintf(cmd, sizeof cmd, "%s sweep %s/nonexistent.json", tu_ncsim(), dir);
    assert_int_equal(tu_run(cmd, &out), 3);
    free(out);
    /* a merge that fails (no points in that folder) leaves no CSV of an earlier run behind */
    assert_int_equal(tu_write_file(tu_join(dir, "stale.csv"), "old\n", 4), 0);
    assert_int_equal(mkdir(tu_join(dir, "nothing"), 0777), 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s sweep %s --merge --out nothing --csv stale.csv", dir,
             tu_ncsim(), spec);
    assert_int_equal(tu_run(cmd, &out), 3);
    assert_non_null(strstr(out, "have no result"));
    free(out);
    struct stat stale_st;
    assert_int_not_equal(stat(tu_join(dir, "stale.csv"), &stale_st), 0);
    /* a failed point: exit 1, the CSV is still written */
    const char *spec2 = write_spec(dir, "fail.json", /* (reuses write_spec's buffer) */
                                   "\"grid\": {\"sbuf.bytes_per_partition\": [8192, 196608]}");
    snprintf(cmd, sizeof cmd, "cd %s && %s sweep %s -q", dir, tu_ncsim(), spec2);
    assert_int_equal(tu_run(cmd, &out), 1);
    free(out);
    csv = read_text(dir, "fail.sweep/results.csv");
    assert_non_null(csv);
    assert_non_null(strstr(csv, ",error\n"));
    assert_non_null(strstr(csv, ",ok\n"));
    free(csv);
    /* --slurm prints a script with absolute paths */
    snprintf(cmd, sizeof cmd, "cd %s && %s sweep %s --slurm --out rel", dir, tu_ncsim(), spec);
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "#SBATCH --array=0-2"));
    char want[600];
    snprintf(want, sizeof want, "out='%s/rel'", dir);
    assert_non_null(strstr(out, want));
    free(out);
}

int main(void)
{
    /* the command-line tests run whole sweeps: not one point of an enclosing Slurm array */
    unsetenv("SLURM_ARRAY_TASK_ID");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_errors),     cmocka_unit_test(test_point_order),
        cmocka_unit_test(test_jobs_same_bytes), cmocka_unit_test(test_points_and_merge),
        cmocka_unit_test(test_failed_point),
        cmocka_unit_test(test_invalid_point_config),    cmocka_unit_test(test_functional),
        cmocka_unit_test(test_slurm_script),
        cmocka_unit_test(test_spec_names_special_files),
        cmocka_unit_test(test_merge_refuses_special_point_files),    cmocka_unit_test(test_plot),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
