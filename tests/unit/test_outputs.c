/*
 * test_outputs.c -- what `ncsim run` does with the files it is asked to write, and with
 * bytes a harness cannot decode (docs/cli.md, "Output files"):
 *   - every output path is checked before the simulation (exit 3, nothing run);
 *   - a failed run removes its targets (no stale result survives), except files that are
 *     also inputs of the run;
 *   - a failed simulation's --stats says "status": "error", and `ncsim report` exits 1 on it;
 *   - no temporary file is left behind;
 *   - control bytes and invalid UTF-8 in messages are escaped;
 *   - a missing or endless --arch file is an I/O error (exit 3).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

static char dir[256];

static const char prog_ok[] = ".hbm x fp32 [128, 64] input\n"
                              ".hbm y fp32 [128, 64] output\n"
                              ".engine sp\n"
                              "    dma y, x\n";
/* deadlocks: the wait never holds */
static const char prog_deadlock[] = ".hbm x fp32 [128, 64] inout\n"
                                    ".hbm y fp32 [128, 64] output\n"
                                    ".sem never\n"
                                    ".engine sp\n"
                                    "    dma y, x | wait never >= 1\n";

static int exists(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    return stat(p, &st) == 0;
}

static void put(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(tu_write_file(p, text, strlen(text)), 0);
}

/* Run a shell command in the directory; returns the exit status, output in *out. */
static int sh(char **out, const char *fmt, ...)
{
    char body[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && NCSIM=%s; %s", dir, tu_ncsim(), body);
    return tu_run(cmd, out);
}

/* No ".NAME.ncsim-XXXXXX" temporary survives in the directory. */
static void assert_no_temporaries(void)
{
    char *out = NULL;
    assert_int_equal(sh(&out, "ls -A | grep -c 'ncsim-' || true"), 0);
    assert_string_equal(out, "0\n");
    free(out);
}

static void test_paths_checked_before_the_run(void **state)
{
    (void)state;
    put("ok.nca", prog_ok);
    char *out = NULL;
    /* a typo in a directory: exit 3 at once, naming the option and the directory */
    int rc = sh(&out, "$NCSIM run ok.nca --random-inputs 1 --stats s.json --out y=nodir/y.npy");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "--out 'nodir/y.npy': directory 'nodir' does not exist"));
    assert_null(strstr(out, "total simulated time")); /* nothing was simulated */
    free(out);
    assert_false(exists("s.json"));
    /* a directory as the target */
    rc = sh(&out, "mkdir -p d && $NCSIM run ok.nca --random-inputs 1 --trace d");
    assert_int_equal(rc, 2); /* no .json/.pftrace suffix: a usage error */
    free(out);
    rc = sh(&out, "$NCSIM run ok.nca --random-inputs 1 --stats d");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "--stats 'd' is a directory"));
    free(out);
    /* two outputs, one file */
    rc = sh(&out, "$NCSIM run ok.nca --random-inputs 1 --stats a.json --trace a.json");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "name the same file 'a.json'"));
    free(out);
    assert_no_temporaries();
}

static void test_success_writes_everything(void **state)
{
    (void)state;
    put("ok.nca", prog_ok);
    char *out = NULL;
    int rc = sh(&out, "$NCSIM run ok.nca --random-inputs 1 -q --out y=y.npy --stats s.json "
                      "--trace t.pftrace");
    assert_int_equal(rc, 0);
    free(out);
    assert_true(exists("y.npy") && exists("s.json") && exists("s.config.json") &&
                exists("t.pftrace"));
    assert_int_equal(sh(&out, "grep -c '\"status\": \"ok\"' s.json"), 0);
    free(out);
    assert_no_temporaries();
}

static void test_failure_removes_stale_targets(void **state)
{
    (void)state;
    put("ok.nca", prog_ok);
    /* results of an "earlier run" */
    put("y.npy", "stale");
    put("s.json", "stale");
    put("t.json", "stale");
    char *out = NULL;
    int rc = sh(&out, "$NCSIM run ok.nca --in x=missing.npy -q --out y=y.npy --stats s.json "
                      "--trace t.json");
    assert_int_equal(rc, 3);
    free(out);
    assert_false(exists("y.npy"));
    assert_false(exists("s.json"));
    assert_false(exists("t.json"));
    /* an assembly error (exit 2) too */
    put("y.npy", "stale");
    put("bad.nca", ".engine sp\n    dma y\n");
    rc = sh(&out, "$NCSIM run bad.nca -q --out y=y.npy");
    assert_int_equal(rc, 2);
    free(out);
    assert_false(exists("y.npy"));
    assert_no_temporaries();
}

static void test_failed_simulation_stats_say_so(void **state)
{
    (void)state;
    put("dl.nca", prog_deadlock);
    put("y.npy", "stale");
    char *out = NULL;
    /* x is inout: --in x=x.npy --out x=x.npy updates it in place, and a failure keeps it */
    assert_int_equal(sh(&out, "/usr/bin/python3 -c \"import numpy as np; "
                              "np.save('x.npy', np.ones((128, 64), np.float32))\""), 0);
    free(out);
    int rc = sh(&out, "$NCSIM run dl.nca -q --in x=x.npy --out x=x.npy --out y=y.npy "
                      "--stats s.json --trace t.json");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "deadlock"));
    free(out);
    assert_true(exists("x.npy"));  /* an input: never removed */
    assert_false(exists("y.npy")); /* no result */
    assert_true(exists("t.json")); /* the trace shows the run up to the deadlock */
    assert_int_equal(sh(&out, "grep -c '\"status\": \"error\"' s.json && "
                              "grep -c '\"error\": \"deadlock' s.json"), 0);
    free(out);
    rc = sh(&out, "$NCSIM report s.json");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "RUN FAILED: deadlock"));
    free(out);
    rc = sh(&out, "$NCSIM report s.json --json");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "\"status\": \"error\""));
    free(out);
    assert_no_temporaries();
}

static void test_messages_are_printable(void **state)
{
    (void)state;
    char *out = NULL;
    /* a file name with a control byte and a byte that is not UTF-8 */
    int rc = sh(&out, "$NCSIM run \"$(printf 'a\\001b\\377c.nca')\"");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "a\\x01b\\xffc.nca"));
    for (const unsigned char *p = (const unsigned char *)out; *p; p++)
        assert_true(*p == '\n' || (*p >= 0x20 && *p < 0x7F));
    free(out);
    /* valid UTF-8 passes unchanged */
    rc = sh(&out, "$NCSIM run \"$(printf 'caf\\303\\251.nca')\"");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "caf\xc3\xa9.nca"));
    free(out);
}

static void test_arch_file_errors(void **state)
{
    (void)state;
    put("ok.nca", prog_ok);
    char *out = NULL;
    int rc = sh(&out, "$NCSIM run ok.nca --random-inputs 1 --arch missing.json");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "cannot open architecture config 'missing.json'"));
    free(out);
    rc = sh(&out, "$NCSIM run ok.nca --random-inputs 1 --arch /dev/zero");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "larger than 16 MiB"));
    free(out);
    rc = sh(&out, "$NCSIM asm ok.nca -o ok.ncx --arch missing.json");
    assert_int_equal(rc, 3);
    free(out);
    rc = sh(&out, "$NCSIM run ok.nca --random-inputs 1 --arch nosuchpreset");
    assert_int_equal(rc, 2);
    free(out);
}

/* sweep: -q still says that every point failed; --index validates only its own point */
static void test_sweep_failures_are_said(void **state)
{
    (void)state;
    put("dl.nca", prog_deadlock);
    put("ok.nca", prog_ok);
    put("fail.json", "{\"program\": \"dl.nca\", \"timing_only\": true, "
                     "\"grid\": {\"hbm.bandwidth_gbps\": [410, 820]}}");
    char *out = NULL;
    int rc = sh(&out, "$NCSIM sweep fail.json -q");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "(0 ok, 2 failed"));
    free(out);
    put("mixed.json", "{\"program\": \"ok.nca\", \"timing_only\": true, "
                      "\"grid\": {\"pe.clock_ghz\": [1.4, -1]}}");
    rc = sh(&out, "$NCSIM sweep mixed.json --index 0 -q");
    assert_int_equal(rc, 0); /* point 1 is invalid, but it is not this task's point */
    free(out);
    rc = sh(&out, "$NCSIM sweep mixed.json --index 1 -q");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "point 1 (pe.clock_ghz=-1.0)"));
    free(out);
    rc = sh(&out, "$NCSIM sweep mixed.json -q"); /* the whole sweep checks every point first */
    assert_int_equal(rc, 2);
    free(out);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    return 0;
}

/* Outputs that exist and are not regular files (/dev/null, FIFOs) are written where they are:
 * never replaced by a renamed temporary (as root, `--stats /dev/null` turned the device into a
 * file) nor removed by a failed run. FIFOs stand in for /dev/null here. */
static void test_special_files_written_in_place(void **state)
{
    (void)state;
    put("ok.nca", prog_ok);
    put("dl.nca", prog_deadlock);
    char *out = NULL;
    int rc = sh(&out, "rm -f f_* && mkfifo f_stats f_trace.pftrace f_y.npy f_prog.ncx && "
                      "(timeout 60 cat f_stats > got_stats & timeout 60 cat f_trace.pftrace > "
                      "got_trace & timeout 60 cat f_y.npy > got_y & "
                      "$NCSIM run ok.nca --random-inputs 1 -q --stats f_stats "
                      "--trace f_trace.pftrace --out y=f_y.npy; echo rc=$?; wait) && "
                      "(timeout 60 cat f_prog.ncx > got.ncx & $NCSIM asm ok.nca -o f_prog.ncx; "
                      "echo rc=$?; wait) && $NCSIM asm ok.nca -o ok.ncx && cmp got.ncx ok.ncx && "
                      "test -p f_stats && test -p f_trace.pftrace && test -p f_y.npy && "
                      "test -p f_prog.ncx && grep -c '\"status\": \"ok\"' got_stats && "
                      "head -c 6 got_y | grep -c NUMPY && test -s got_trace && echo fine");
    if (rc != 0 || !strstr(out, "fine"))
        fprintf(stderr, "rc %d: %s\n", rc, out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "rc=0\nrc=0\n"));
    assert_non_null(strstr(out, "fine"));
    free(out);
    /* a failed run removes its regular targets, not a device */
    rc = sh(&out, "(timeout 60 cat f_stats > got_stats & $NCSIM run dl.nca --random-inputs 1 "
                  "-q --stats f_stats; echo rc=$?; wait) && test -p f_stats && "
                  "grep -c '\"status\": \"error\"' got_stats && echo fine");
    if (rc != 0 || !strstr(out, "fine"))
        fprintf(stderr, "rc %d: %s\n", rc, out);
    assert_non_null(strstr(out, "rc=1\n"));
    assert_non_null(strstr(out, "fine"));
    free(out);
    assert_no_temporaries();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_checked_before_the_run),
        cmocka_unit_test(test_success_writes_everything),
        cmocka_unit_test(test_failure_removes_stale_targets),
        cmocka_unit_test(test_failed_simulation_stats_say_so),
        cmocka_unit_test(test_messages_are_printable),
        cmocka_unit_test(test_arch_file_errors),
        cmocka_unit_test(test_sweep_failures_are_said),
        cmocka_unit_test(test_special_files_written_in_place),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
