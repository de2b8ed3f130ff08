/*
 * test_trace_report.c -- `ncsim report`: the golden report of the golden kernel
 * (kernels/demo_gemm.nca, tests/golden/trace_report/), the critical path of hand-built
 * examples, the report from a statistics file, --json, whole advice, and errors.
 *
 * NCSIM_UPDATE_GOLDEN=1 rewrites the golden file (after a deliberate cost-model change;
 * review the diff).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "report.h"
#include "testutil.h"
#include "trace_check.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    return 0;
}

/* `ncsim report ARGS` run in the temporary directory; its stdout. */
static char *report(const char *args, int expect_rc)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s report %s", dir, tu_ncsim(), args);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc != expect_rc)
        fprintf(stderr, "%s\n-> %d: %s\n", cmd, rc, out ? out : "");
    assert_int_equal(rc, expect_rc);
    assert_non_null(out);
    return out;
}

static yajl_val parse(const char *text)
{
    char err[256];
    yajl_val v = yajl_tree_parse(text, err, sizeof err);
    if (!v)
        fprintf(stderr, "report JSON: %s\n", err);
    assert_non_null(v);
    return v;
}

static yajl_val get(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    return yajl_tree_get(v, path, yajl_t_any);
}

/* ---- the golden report ---------------------------------------------------------------------------- */

static void test_golden_demo_gemm(void **state)
{
    (void)state;
    /* from the source tree, so the program path in the report is the same everywhere */
    assert_int_equal(tu_sh("cd %s && %s run kernels/demo_gemm.nca --timing-only -q --trace "
                           "%s/golden.json",
                           tu_source_path(""), tu_ncsim(), dir),
                     0);
    assert_int_equal(tc_check_json(tu_join(dir, "golden.json"), NULL, (char[256]){0}, 256), 0);
    char *text = report("golden.json", 0);
    const char *golden = tu_source_path("tests/golden/trace_report/demo_gemm.txt");
    if (getenv("NCSIM_UPDATE_GOLDEN")) {
        assert_int_equal(tu_write_file(golden, text, strlen(text)), 0);
        fprintf(stderr, "updated %s\n", golden);
    }
    char *want = tu_read_file(golden, NULL);
    assert_non_null(want);
    if (strcmp(want, text) != 0) {
        tu_write_file(tu_join(dir, "got.txt"), text, strlen(text));
        fprintf(stderr, "the report differs from %s: see `diff %s %s`\n", golden, golden,
                tu_join(dir, "got.txt"));
    }
    assert_string_equal(want, text);
    free(want);
    free(text);
}

/* Traces written by the first formats (tests/trace_v0: DMA breakdowns as text, times as
 * nanosecond doubles, operands inline) still read, into the report they gave when they were
 * written (frozen with them: the golden report of today's model may move on). */
static void test_old_traces_read(void **state)
{
    (void)state;
    char *want = tu_read_file(tu_source_path("tests/trace_v0/demo_gemm_report.txt"), NULL);
    assert_non_null(want);
    const char *files[] = {"demo_gemm.pftrace.gz", "demo_gemm.json.gz"};
    for (int k = 0; k < 2; k++) {
        char path[1024], cmd[2048];
        snprintf(path, sizeof path, "tests/trace_v0/%s", files[k]);
        snprintf(cmd, sizeof cmd, "%s report %s", tu_ncsim(), tu_source_path(path));
        char *out = NULL;
        assert_int_equal(tu_run(cmd, &out), 0);
        assert_non_null(out);
        /* the same but for the first line (the file's name) */
        const char *a = strchr(out, '\n');
        assert_non_null(a);
        assert_string_equal(a + 1, want);
        free(out);
    }
    free(want);
}

/* ---- critical paths of hand-built examples ------------------------------------------------------ */

typedef struct run_want {
    const char *track, *what, *reached_by;
} run_want_t;

static yajl_val path_runs(const char *prog_text, const char *name, yajl_val *root_out)
{
    char nca[64], trace[64], args[160];
    snprintf(nca, sizeof nca, "%s.nca", name);
    snprintf(trace, sizeof trace, "%s.json", name);
    assert_int_equal(tu_write_file(tu_join(dir, nca), prog_text, strlen(prog_text)), 0);
    assert_int_equal(
        tu_sh("cd %s && %s run %s --timing-only -q --trace %s", dir, tu_ncsim(), nca, trace), 0);
    char msg[512];
    int rc = tc_check_json(tu_join(dir, trace), NULL, msg, sizeof msg);
    if (rc)
        fprintf(stderr, "%s\n", msg);
    assert_int_equal(rc, 0);
    snprintf(args, sizeof args, "%s --json", trace);
    char *text = report(args, 0);
    yajl_val root = parse(text);
    free(text);
    yajl_val cp = get(root, "critical_path");
    assert_true(YAJL_IS_OBJECT(cp));
    /* the path ends at the end of the run */
    assert_true(YAJL_GET_DOUBLE(get(cp, "end_ns")) == YAJL_GET_DOUBLE(get(root, "total_ns")));
    yajl_val runs = get(cp, "runs");
    assert_true(YAJL_IS_ARRAY(runs));
    *root_out = root;
    return runs;
}

static void expect_runs(yajl_val runs, const run_want_t *want, size_t n)
{
    size_t got = YAJL_GET_ARRAY(runs)->len;
    if (got != n)
        for (size_t i = 0; i < got; i++) {
            yajl_val r = YAJL_GET_ARRAY(runs)->values[i];
            fprintf(stderr, "run %zu: %s %s (%s)\n", i, YAJL_GET_STRING(get(r, "track")),
                    YAJL_GET_STRING(get(r, "what")), YAJL_GET_STRING(get(r, "reached_by")));
        }
    assert_int_equal(got, n);
    double prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        yajl_val r = YAJL_GET_ARRAY(runs)->values[i];
        assert_string_equal(YAJL_GET_STRING(get(r, "track")), want[i].track);
        assert_string_equal(YAJL_GET_STRING(get(r, "what")), want[i].what);
        assert_string_equal(YAJL_GET_STRING(get(r, "reached_by")), want[i].reached_by);
        double start = YAJL_GET_DOUBLE(get(r, "start_ns")), end = YAJL_GET_DOUBLE(get(r, "end_ns"));
        double wait = YAJL_GET_DOUBLE(get(r, "wait_ns"));
        /* runs follow one another; each starts when the previous released it, plus waiting */
        assert_true(start >= prev_end - 1e-9);
        assert_true(end >= start);
        assert_true(start - prev_end <= wait + 1e-6);
        prev_end = end;
    }
}

/*
 * load (sp issues, queue 0 moves) -> two activates on act (the second reads the first's
 * result: interlock) -> store (pool issues, queue 1 moves). A short independent memset on
 * dve must not be on the path.
 */
static void test_critical_path_chain(void **state)
{
    (void)state;
    const char *prog = "; a hand-built critical path\n"
                       ".arch trn1\n"
                       ".hbm x bf16 [128, 512] input\n"
                       ".hbm y fp32 [128, 512] output\n"
                       ".core 0\n"
                       ".sbuf xs bf16 [128, 512]\n"
                       ".sbuf ys fp32 [128, 512]\n"
                       ".sbuf zs fp32 [128, 64]\n"
                       ".sem loaded\n"
                       ".sem done\n"
                       ".engine sp\n"
                       "    dma xs, x, queue=0 | post loaded\n"
                       ".engine act\n"
                       "    activate ys, xs, copy | wait loaded >= 1\n"
                       "    activate ys, ys, exp | post done\n"
                       ".engine dve\n"
                       "    memset zs, 0.0\n"
                       ".engine pool\n"
                       "    dma y, ys, queue=1 | wait done >= 1\n";
    yajl_val root;
    yajl_val runs = path_runs(prog, "chain", &root);
    static const run_want_t want[] = {
        {"sp", "dma", "start of the run"},
        {"dma q0", "dma hbm->sbuf", "issued by dma"},
        {"act", "activate x2", "wait on semaphore loaded"},
        {"pool", "dma", "wait on semaphore done"},
        {"dma q1", "dma sbuf->hbm", "issued by dma"},
    };
    expect_runs(runs, want, sizeof want / sizeof want[0]);
    /* lines of the source: the activates are lines 14 and 15 */
    yajl_val act = YAJL_GET_ARRAY(runs)->values[2];
    assert_int_equal(YAJL_GET_INTEGER(get(act, "first_line")), 14);
    assert_int_equal(YAJL_GET_INTEGER(get(act, "last_line")), 15);
    /* the DMA fixed cost shows as waiting before each transfer */
    yajl_val cp = get(root, "critical_path");
    assert_true(YAJL_GET_DOUBLE(get(cp, "waiting_ns")) > 0);
    yajl_tree_free(root);
}

/* Engine order: three memsets on dve then the activate that waits for the last one; the
 * first dma's transfer is shorter than the memsets and is not on the path. */
static void test_critical_path_engine_order(void **state)
{
    (void)state;
    const char *prog = ".core 0\n"
                       ".hbm x fp32 [128, 8] input\n"
                       ".sbuf a fp32 [128, 4096]\n"
                       ".sbuf b fp32 [128, 64]\n"
                       ".sbuf c fp32 [128, 8]\n"
                       ".sem s\n"
                       ".sem t\n"
                       ".engine sp\n"
                       "    dma c, x, queue=2 | post t\n"
                       ".engine dve\n"
                       "    memset a, 1.0\n"
                       "    memset a, 2.0\n"
                       "    memset a, 3.0 | post s\n"
                       ".engine act\n"
                       "    activate b, b, exp | wait s >= 1 | wait t >= 1\n";
    yajl_val root;
    yajl_val runs = path_runs(prog, "order", &root);
    static const run_want_t want[] = {
        {"dve", "memset x3", "start of the run"},
        {"act", "activate", "wait on semaphore s"},
    };
    expect_runs(runs, want, sizeof want / sizeof want[0]);
    yajl_tree_free(root);
}

/* ---- statistics files, JSON, errors --------------------------------------------------------------- */

static void test_report_from_stats(void **state)
{
    (void)state;
    assert_int_equal(
        tu_sh("cd %s && %s run %s --timing-only -q --stats s.json --trace s-trace.json", dir,
              tu_ncsim(), tu_source_path("kernels/demo_gemm.nca")),
        0);
    char *from_stats = report("s.json", 0);
    char *from_trace = report("s-trace.json", 0);
    assert_non_null(strstr(from_stats, "(statistics file)"));
    assert_non_null(strstr(from_stats, "not available from a statistics file"));
    assert_null(strstr(from_trace, "not available from a statistics file"));
    /* the same engine, DMA, compute and memory figures: sections between "engines:" and
     * "top stall causes" are identical (the verdicts differ: critical path or busy times) */
    assert_non_null(strstr(from_stats, "% of the run (busy time, from statistics)"));
    assert_non_null(strstr(from_trace, "% of the critical path"));
    const char *a = strstr(from_stats, "\nengines:"), *b = strstr(from_trace, "\nengines:");
    const char *ae = strstr(a, "top stall causes"), *be = strstr(b, "top stall causes");
    assert_non_null(ae);
    assert_non_null(be);
    assert_int_equal(ae - a, be - b);
    assert_memory_equal(a, b, (size_t)(ae - a));
    /* units on every figure */
    assert_non_null(strstr(from_stats, "busy (ns)"));
    assert_non_null(strstr(from_stats, "GB/s"));
    assert_non_null(strstr(from_stats, "; MFU "));
    assert_non_null(strstr(from_stats, "; HFU "));
    free(from_stats);
    free(from_trace);
    /* --json from a stats file: no path, no kinds */
    char *j = report("s.json --json", 0);
    yajl_val root = parse(j);
    assert_true(YAJL_IS_NULL(get(root, "critical_path")));
    assert_int_equal(YAJL_GET_ARRAY(get(root, "instruction_kinds"))->len, 0);
    assert_string_equal(YAJL_GET_STRING(get(root, "source_kind")), "statistics");
    yajl_tree_free(root);
    free(j);
    /* --json from the trace: ten stalls at most, engines with percentages that add up */
    j = report("s-trace.json --json -o s-report.json", 0);
    free(j);
    j = tu_read_file(tu_join(dir, "s-report.json"), NULL);
    assert_non_null(j);
    root = parse(j);
    yajl_val stalls = get(root, "top_stalls");
    assert_true(YAJL_GET_ARRAY(stalls)->len == 10);
    yajl_val engines = get(root, "engines");
    for (size_t i = 0; i < YAJL_GET_ARRAY(engines)->len; i++) {
        yajl_val e = YAJL_GET_ARRAY(engines)->values[i];
        double sum = YAJL_GET_DOUBLE(get(e, "busy_pct")) + YAJL_GET_DOUBLE(get(e, "stall_pct")) +
                     YAJL_GET_DOUBLE(get(e, "idle_pct"));
        assert_true(sum > 99.99 && sum < 100.01);
    }
    /* MFU from the trace is the simulator's own figure (statistics "mfu") */
    yajl_val compute = get(root, "compute");
    char *stats_text = tu_read_file(tu_join(dir, "s.json"), NULL);
    assert_non_null(stats_text);
    yajl_val stats = parse(stats_text);
    double mfu = 100.0 * YAJL_GET_DOUBLE(get(stats, "mfu"));
    assert_true(mfu > 1.0);
    assert_true(fabs(YAJL_GET_DOUBLE(get(compute, "mfu_pct")) - mfu) < 1e-3);
    assert_true(fabs(YAJL_GET_DOUBLE(get(compute, "hfu_pct")) -
                     100.0 * YAJL_GET_DOUBLE(get(stats, "hfu"))) < 1e-3);
    yajl_tree_free(stats);
    free(stats_text);
    yajl_tree_free(root);
    free(j);
}

/* ---- verdicts of kernels whose bound is known ------------------------------------------------------ */

/* The first candidate ("bounds"[0].what) of `ncsim report --json FILE`. */
static char *first_bound(const char *file)
{
    char args[160];
    snprintf(args, sizeof args, "%s --json", file);
    char *text = report(args, 0);
    yajl_val root = parse(text);
    free(text);
    yajl_val b = get(root, "bounds");
    assert_true(YAJL_IS_ARRAY(b) && YAJL_GET_ARRAY(b)->len > 0);
    const char *w = YAJL_GET_STRING(get(YAJL_GET_ARRAY(b)->values[0], "what"));
    assert_non_null(w);
    char *what = strdup(w ? w : "");
    yajl_tree_free(root);
    return what;
}

/*
 * Five kernels, each run once with a statistics file and a trace; the verdict of each file
 * names what bounds the kernel (by construction, and by its busy fractions; a statistics
 * file names resources by busy time, a trace by the critical path, so the names of the two
 * differ where the trace knows more: "DMA transfers" is "DMA engines (bandwidth)" there):
 *   desc  32 loads of [128, 128] fp32 on one queue: 128 pieces of 512 B each, 1120 ns of
 *         descriptor work against 275 ns of data -- the descriptor stages bind
 *   bw    8 loads of [128, 16384] fp32 (64 KiB pieces): the engines' bandwidth binds
 *   pe    256 bf16 matmuls of [128, 128] x [128, 512] on resident tiles
 *   dve   64 tensor_scalar of [128, 2048] fp32
 *   sem   act and dve hand a small tile to each other 200 times (each waits for the
 *         other's completion): the semaphore chain (a trace shows it; statistics only busy
 *         times, so from statistics the busier engine)
 */
static void test_verdicts_of_known_bounds(void **state)
{
    (void)state;
    static const struct {
        const char *name, *prog, *from_stats, *from_trace;
    } k[] = {
        {"v_desc",
         ".arch trn1\n.hbm x fp32 [4096, 128] input\n.core 0\n.sbuf xs fp32 [128, 2, 128]\n"
         ".sem ld\n.engine sp\n    .loop i = 0, 32\n"
         "        dma xs[:, i%2, :], x[i*128:(i+1)*128, :], queue=0 | post ld\n    .endloop\n",
         "DMA descriptors", "DMA descriptors"},
        {"v_bw",
         ".arch trn1\n.hbm x fp32 [1024, 16384] input\n.core 0\n.sbuf xs fp32 [128, 2, 16384]\n"
         ".sem ld\n.engine sp\n    .loop i = 0, 8\n"
         "        dma xs[:, i%2, :], x[i*128:(i+1)*128, :], queue=i%4 | post ld\n    .endloop\n",
         "DMA transfers", "DMA engines (bandwidth)"},
        {"v_pe",
         ".arch trn1\n.core 0\n.sbuf a bf16 [128, 128]\n.sbuf b bf16 [128, 512]\n"
         ".psum acc fp32 [128, 2, 512]\n.engine pe\n    .loop i = 0, 256\n"
         "        matmul acc[:, i%2, :], a, b\n    .endloop\n",
         "engine pe", "engine pe"},
        {"v_dve",
         ".arch trn1\n.core 0\n.sbuf a fp32 [128, 2048]\n.sbuf b fp32 [128, 2048]\n"
         ".engine dve\n    .loop i = 0, 64\n        tensor_scalar b, a, multiply, 2.0\n"
         "    .endloop\n",
         "engine dve", "engine dve"},
        {"v_sem",
         ".arch trn1\n.core 0\n.sbuf a fp32 [128, 8]\n.sbuf b fp32 [128, 8]\n.sem pa\n.sem pb\n"
         ".engine act\n    .loop i = 0, 200\n        activate a, b, copy | wait pb >= i | post pa\n"
         "    .endloop\n.engine dve\n    .loop i = 0, 200\n"
         "        tensor_scalar b, a, multiply, 2.0 | wait pa >= i+1 | post pb\n    .endloop\n",
         "engine dve", "a chain of semaphore waits"},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        char nca[64], st[64], tr[64];
        snprintf(nca, sizeof nca, "%s.nca", k[i].name);
        snprintf(st, sizeof st, "%s.s.json", k[i].name);
        snprintf(tr, sizeof tr, "%s.t.json", k[i].name);
        assert_int_equal(tu_write_file(tu_join(dir, nca), k[i].prog, strlen(k[i].prog)), 0);
        assert_int_equal(tu_sh("cd %s && %s run %s --timing-only -q --stats %s --trace %s", dir,
                               tu_ncsim(), nca, st, tr),
                         0);
        char *a = first_bound(st), *b = first_bound(tr);
        if (strcmp(a, k[i].from_stats) || strcmp(b, k[i].from_trace))
            fprintf(stderr, "%s: statistics say %s, the trace %s\n", k[i].name, a, b);
        assert_string_equal(a, k[i].from_stats);
        assert_string_equal(b, k[i].from_trace);
        free(a);
        free(b);
    }
    /* the descriptor-bound stream: the statistics' descriptor time is the verdict's time
     * (128 descriptors x 140 ns over 16 engines per load, 32 loads), and the critical path
     * gives the descriptors the same time: the path is the first load's trigger latency
     * (870 + 200 ns) then the 32 loads' descriptors back to back, each load landing as its
     * last descriptor is processed */
    const char *files[] = {"v_desc.s.json --json", "v_desc.t.json --json"};
    for (int f = 0; f < 2; f++) {
        char *text = report(files[f], 0);
        yajl_val root = parse(text);
        free(text);
        yajl_val b0 = YAJL_GET_ARRAY(get(root, "bounds"))->values[0];
        double total = YAJL_GET_DOUBLE(get(root, "total_ns"));
        double desc = YAJL_GET_DOUBLE(get(b0, "time_ns"));
        assert_true(fabs(desc - 32 * 128 * 140.0 / 16) < 1.0);
        assert_true(fabs(total - desc - 1070.0) < 1.0);
        yajl_tree_free(root);
    }
}

/* The verdict's candidates of `ncsim report --json TRACE` in *bounds (what, time in ns), their
 * number as the return value; the run's total in *total. */
typedef struct bound_got {
    char what[64];
    double ns;
} bound_got_t;

static size_t bounds_of(const char *trace, bound_got_t *got, size_t max, double *total)
{
    char args[160];
    snprintf(args, sizeof args, "%s --json", trace);
    char *text = report(args, 0);
    yajl_val root = parse(text);
    free(text);
    yajl_val b = get(root, "bounds");
    assert_true(YAJL_IS_ARRAY(b));
    size_t n = YAJL_GET_ARRAY(b)->len < max ? YAJL_GET_ARRAY(b)->len : max;
    for (size_t i = 0; i < n; i++) {
        yajl_val x = YAJL_GET_ARRAY(b)->values[i];
        snprintf(got[i].what, sizeof got[i].what, "%s", YAJL_GET_STRING(get(x, "what")));
        got[i].ns = YAJL_GET_DOUBLE(get(x, "time_ns"));
    }
    *total = YAJL_GET_DOUBLE(get(root, "total_ns"));
    yajl_tree_free(root);
    return n;
}

/*
 * A gap before a transfer on the path goes to the descriptor stages for the part in which its
 * core's stages were at work (on its descriptors or another transfer's), and to the trigger
 * latency only for the rest (docs/explain.md, "How the verdict is made"). Three kernels by
 * hand, trn1 preset (trigger 870 + HBM 200 = 1070 ns; a [128, 128] fp32 load is 128
 * descriptors of 140 ns over 16 engines = 1120 ns and 128 pieces of 512 B; sp issues a dma in
 * 60 ns; a semaphore wakes its waiter 30 ns after the post):
 *   two    sp loads a [128, 128] tile on queue 0 at 0 and another on queue 1 at 60. Both are
 *          eligible at 1070 and 1130 and share the stages; the second lands last at
 *          1070 + 2 x 1120 = 3310. Its path: sp's first dma (60), the second's trigger latency
 *          from 60 to 1070 while the stages are idle (1010), then the stages at work until it
 *          lands (2240: both loads' descriptors) -- the 60 ns from 1070 to 1130 in which the
 *          stages worked on the first load while the second's trigger latency ran included.
 *          The same with dma.queue_round_robin=0 (the stages take the first load whole, the
 *          second waits for them from 1130 to 2190): the same figures.
 *   copy   the NKI copy_rows of test_nki_verdict.py in NCA: 32 [128, 128] loads (queue 0, sp)
 *          and stores (queue 1, pool), double-buffered. Each transfer's trigger latency runs
 *          while the other buffer's transfer is in its descriptors: the stages work from 1070
 *          to the end, 64 x 1120 ns, and the path is the first trigger latency (1070), 31
 *          wake-ups of 30 ns, and descriptors for the rest (64 x 1120 - 930 = 70750).
 *   chain  8 one-row loads [1, 128] fp32 (one descriptor of 140 ns, 512 B of data), each issued
 *          when the one before landed: nothing else runs, so each trigger latency is the
 *          trigger's (8 x 1070), then 8 x 140 of descriptors, 8 x (512 / 18.7 + 7) ns of data
 *          at the transfer's own cap (one engine) and 7 wake-ups of 30 ns.
 */
static void test_verdict_trigger_latency_while_descriptors_busy(void **state)
{
    (void)state;
    static const struct {
        const char *name, *prog, *set;
        double total;
        bound_got_t want[4];
    } k[] = {
        {"tl_two",
         ".arch trn1\n.hbm x fp32 [256, 128] input\n.core 0\n.sbuf a fp32 [128, 128]\n"
         ".sbuf b fp32 [128, 128]\n.engine sp\n    dma a, x[0:128, :], queue=0\n"
         "    dma b, x[128:256, :], queue=1\n",
         "",
         3310.0,
         {{"DMA descriptors", 2240.0}, {"DMA trigger latency", 1010.0}, {"engine sp", 60.0}}},
        {"tl_two_fifo",
         ".arch trn1\n.hbm x fp32 [256, 128] input\n.core 0\n.sbuf a fp32 [128, 128]\n"
         ".sbuf b fp32 [128, 128]\n.engine sp\n    dma a, x[0:128, :], queue=0\n"
         "    dma b, x[128:256, :], queue=1\n",
         "--set dma.queue_round_robin=0",
         3310.0,
         {{"DMA descriptors", 2240.0}, {"DMA trigger latency", 1010.0}, {"engine sp", 60.0}}},
        {"tl_copy",
         ".arch trn1\n.hbm x fp32 [4096, 128] input\n.hbm y fp32 [4096, 128] output\n.core 0\n"
         ".sbuf t fp32 [128, 2, 128]\n.sem ld\n.sem st\n.engine sp\n"
         "    dma t[:, 0, :], x[0:128, :], queue=0 | post ld\n"
         "    dma t[:, 1, :], x[128:256, :], queue=0 | post ld\n"
         "    .loop i = 2, 32\n"
         "        dma t[:, i%2, :], x[i*128:(i+1)*128, :], queue=0 | wait st >= i-1 | post ld\n"
         "    .endloop\n.engine pool\n    .loop i = 0, 32\n"
         "        dma y[i*128:(i+1)*128, :], t[:, i%2, :], queue=1 | wait ld >= i+1 | post st\n"
         "    .endloop\n",
         "",
         1070.0 + 64 * 1120.0,
         {{"DMA descriptors", 64 * 1120.0 - 31 * 30.0},
          {"DMA trigger latency", 1070.0},
          {"a chain of semaphore waits", 31 * 30.0}}},
        {"tl_chain",
         ".arch trn1\n.hbm x fp32 [8, 128] input\n.core 0\n.sbuf a fp32 [1, 128]\n.sem ld\n"
         ".engine sp\n    .loop i = 0, 8\n"
         "        dma a, x[i:i+1, :], queue=0 | wait ld >= i | post ld\n    .endloop\n",
         "",
         8 * (1070.0 + 140.0 + 512 / 18.7 + 7) + 7 * 30.0,
         {{"DMA trigger latency", 8 * 1070.0},
          {"DMA descriptors", 8 * 140.0},
          {"DMA queues (per-transfer cap)", 8 * (512 / 18.7 + 7)},
          {"a chain of semaphore waits", 7 * 30.0}}},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        size_t nwant = 0;
        while (nwant < 4 && k[i].want[nwant].what[0])
            nwant++;
        char nca[64];
        snprintf(nca, sizeof nca, "%s.nca", k[i].name);
        assert_int_equal(tu_write_file(tu_join(dir, nca), k[i].prog, strlen(k[i].prog)), 0);
        /* both trace formats carry the descriptor intervals */
        const char *ext[] = {"json", "pftrace"};
        for (int f = 0; f < 2; f++) {
            char tr[64];
            snprintf(tr, sizeof tr, "%s.%s", k[i].name, ext[f]);
            assert_int_equal(tu_sh("cd %s && %s run %s --timing-only -q %s --trace %s", dir,
                                   tu_ncsim(), nca, k[i].set, tr),
                             0);
            bound_got_t got[8];
            double total;
            size_t n = bounds_of(tr, got, 8, &total);
            int ok = n == nwant && fabs(total - k[i].total) < 0.01;
            for (size_t j = 0; ok && j < n; j++)
                ok = strcmp(got[j].what, k[i].want[j].what) == 0 &&
                     fabs(got[j].ns - k[i].want[j].ns) < 0.01;
            if (!ok) {
                fprintf(stderr, "%s: total %.3f ns (want %.3f)\n", tr, total, k[i].total);
                for (size_t j = 0; j < n; j++)
                    fprintf(stderr, "  %s %.3f ns\n", got[j].what, got[j].ns);
            }
            assert_true(ok);
        }
    }
}

/* ---- collectives ------------------------------------------------------------------------------------ */

/* Per-link utilisation and collective time, from a trace and from a statistics file. */
static void test_report_collectives(void **state)
{
    (void)state;
    static const char prog[] = ".chips 2\n.group g = 0..3\n"
                               ".hbm x0 fp32 [64, 1024] scratch chip=0\n"
                               ".hbm x1 fp32 [64, 1024] scratch chip=1\n"
                               ".core 0\n.engine cc\nall_reduce x0, x0, op=add, group=g\n"
                               ".core 1\n.engine cc\nall_reduce x0, x0, op=add, group=g\n"
                               ".core 2\n.engine cc\nall_reduce x1, x1, op=add, group=g\n"
                               ".core 3\n.sbuf a fp32 [128, 512]\n.sem s\n"
                               ".engine dve\nmemset a, 1.0 | post s\n"
                               ".engine cc\nall_reduce x1, x1, op=add, group=g | wait s >= 1\n";
    assert_int_equal(tu_write_file(tu_join(dir, "ar.nca"), prog, strlen(prog)), 0);
    assert_int_equal(tu_sh("cd %s && %s run ar.nca --arch trn1-32xl --set cc.algorithm=ring "
                           "--timing-only -q --stats ar-stats.json --trace ar.pftrace",
                           dir, tu_ncsim()),
                     0);
    char *text = report("ar.pftrace", 0);
    assert_non_null(strstr(text, "\nNeuronLinks ("));
    assert_non_null(strstr(text, "  0->1 "));
    assert_non_null(strstr(text, "  1->0 "));
    assert_non_null(strstr(text, "\ncollectives: 1, "));
    assert_non_null(strstr(text, "all_reduce"));
    assert_non_null(strstr(text, "busbw (GB/s)"));
    /* the early members' wait for core 3 is a stall cause of its own */
    assert_non_null(strstr(text, "collective (waiting for the other members)"));
    free(text);
    char *j = report("ar.pftrace --json", 0);
    yajl_val root = parse(j);
    yajl_val links = get(root, "links"), colls = get(root, "collectives");
    assert_int_equal(YAJL_GET_ARRAY(links)->len, 2);
    assert_int_equal(YAJL_GET_ARRAY(colls)->len, 1);
    yajl_val l = YAJL_GET_ARRAY(links)->values[0];
    /* 6 chunks of 64 KiB each way */
    assert_int_equal(YAJL_GET_INTEGER(get(l, "transfers")), 6);
    assert_int_equal(YAJL_GET_INTEGER(get(l, "bytes")), 6 * 65536);
    double util = YAJL_GET_DOUBLE(get(l, "utilisation_pct"));
    double busy = YAJL_GET_DOUBLE(get(l, "busy_pct"));
    assert_true(util > 1.0 && util <= 100.0);
    assert_true(busy >= util - 0.01); /* never faster than its capacity */
    yajl_val c = YAJL_GET_ARRAY(colls)->values[0];
    assert_string_equal(YAJL_GET_STRING(get(c, "collective")), "all_reduce");
    assert_string_equal(YAJL_GET_STRING(get(c, "algorithm")), "ring");
    assert_int_equal(YAJL_GET_INTEGER(get(c, "members")), 4);
    assert_int_equal(YAJL_GET_INTEGER(get(c, "steps")), 6);
    assert_int_equal(YAJL_GET_INTEGER(get(c, "bytes")), 262144);
    double alg = YAJL_GET_DOUBLE(get(c, "algbw_gbps")), bus = YAJL_GET_DOUBLE(get(c, "busbw_gbps"));
    assert_true(alg > 0 && fabs(bus - alg * 1.5) < 0.01); /* 2 (n - 1) / n for n = 4 */
    const char *bn = YAJL_GET_STRING(get(c, "bottleneck"));
    assert_non_null(bn);
    assert_true(strncmp(bn ? bn : "", "link ", 5) == 0);
    /* the collective's time matches the instruction slices of its members */
    double t = YAJL_GET_DOUBLE(get(c, "time_ns"));
    yajl_val engines = get(root, "engines");
    int cc_seen = 0;
    for (size_t i = 0; i < YAJL_GET_ARRAY(engines)->len; i++) {
        yajl_val e = YAJL_GET_ARRAY(engines)->values[i];
        const char *en = YAJL_GET_STRING(get(e, "engine"));
        if (en && strcmp(en, "cc") == 0) {
            assert_true(fabs(YAJL_GET_DOUBLE(get(e, "busy_ns")) - t) < 0.01);
            cc_seen++;
        }
    }
    assert_int_equal(cc_seen, 4);
    /* HBM traffic of the chunks, as the simulator counts it */
    char *stats_text = tu_read_file(tu_join(dir, "ar-stats.json"), NULL);
    assert_non_null(stats_text);
    yajl_val stats = parse(stats_text);
    yajl_val hbm = get(root, "hbm"), shbm = get(stats, "hbm");
    assert_int_equal(YAJL_GET_INTEGER(get(hbm, "read_bytes")),
                     YAJL_GET_INTEGER(get(shbm, "read_bytes")));
    assert_int_equal(YAJL_GET_INTEGER(get(hbm, "write_bytes")),
                     YAJL_GET_INTEGER(get(shbm, "write_bytes")));
    yajl_tree_free(stats);
    free(stats_text);
    yajl_tree_free(root);
    free(j);
    /* the statistics file gives the same link figures (but no chunk counts) */
    char *from_stats = report("ar-stats.json --json", 0);
    yajl_val sroot = parse(from_stats);
    yajl_val slinks = get(sroot, "links");
    assert_int_equal(YAJL_GET_ARRAY(slinks)->len, 2);
    yajl_val sl = YAJL_GET_ARRAY(slinks)->values[0];
    assert_int_equal(YAJL_GET_INTEGER(get(sl, "bytes")), 6 * 65536);
    assert_true(fabs(YAJL_GET_DOUBLE(get(sl, "utilisation_pct")) - util) < 0.01);
    assert_true(fabs(YAJL_GET_DOUBLE(get(sl, "busy_pct")) - busy) < 0.01);
    assert_int_equal(YAJL_GET_ARRAY(get(sroot, "collectives"))->len, 0);
    yajl_tree_free(sroot);
    free(from_stats);
}

/* ---- the per-line profile ------------------------------------------------------------------------- */

/* Any line number a .loc can give: a dense table of every number up to the largest (the old
 * way) made a trace with line 4000000000 "out of memory". */
static void test_report_huge_line(void **state)
{
    (void)state;
    const char *trace =
        "{\"otherData\":{\"program\":\"p\"},\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"instr\",\"name\":\"a\",\"pid\":1,\"tid\":1001,\"ts\":0,\"dur\":1,"
        "\"args\":{\"line\":4000000000}},"
        "{\"ph\":\"X\",\"cat\":\"instr\",\"name\":\"b\",\"pid\":1,\"tid\":1001,\"ts\":1,\"dur\":2,"
        "\"args\":{\"line\":3}}]}";
    tu_write_file(tu_join(dir, "hugeline.json"), trace, strlen(trace));
    char *j = report("hugeline.json --by-line --json -o hugeline-lines.json", 0);
    free(j);
    j = tu_read_file(tu_join(dir, "hugeline-lines.json"), NULL);
    assert_non_null(j);
    yajl_val root = parse(j);
    yajl_val lines = get(root, "lines");
    assert_int_equal(YAJL_GET_ARRAY(lines)->len, 2);
    assert_int_equal(YAJL_GET_INTEGER(get(YAJL_GET_ARRAY(lines)->values[0], "line")), 3);
    assert_int_equal(YAJL_GET_INTEGER(get(YAJL_GET_ARRAY(lines)->values[1], "line")),
                     4000000000ll);
    yajl_tree_free(root);
    free(j);
}

/* trc_report_line and trc_report_line_find through the index, before and after
 * trc_report_finish moves the lines: many lines in scrambled order, each met twice. */
static void test_lines_index(void **state)
{
    (void)state;
    enum { N = 50000 };
    trc_report_t rep;
    memset(&rep, 0, sizeof rep);
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < N; i++) {
            uint32_t line = (i * 7919u) % N * 3u + 1u;
            trc_report_line_t *l = trc_report_line(&rep, line);
            assert_non_null(l);
            assert_int_equal(l->line, line);
            l->busy_ps += line; /* the cost sorts by it: line order */
            l->instructions++;
        }
    assert_int_equal(rep.nlines, N);
    trc_report_finish(&rep);
    for (uint32_t k = 0; k < N; k++) {
        uint32_t line = k * 3u + 1u;
        const trc_report_line_t *l = trc_report_line_find(&rep, line);
        assert_non_null(l);
        assert_int_equal(l->line, line);
        assert_int_equal(l->busy_ps, 2ull * line);
        assert_int_equal(l->instructions, 2);
        assert_ptr_equal(trc_report_line(&rep, line), l);
        assert_null(trc_report_line_find(&rep, line + 1));
    }
    /* costliest first */
    assert_int_equal(rep.lines[0].line, (N - 1) * 3 + 1);
    /* a new line after the sort */
    trc_report_line_t *l = trc_report_line(&rep, 2);
    assert_non_null(l);
    assert_int_equal(rep.nlines, N + 1);
    assert_ptr_equal(trc_report_line_find(&rep, 2), l);
    trc_report_free(&rep);
}

/* ---- advice ------------------------------------------------------------------------------------------ */

/* Every advice is printed whole, in the verdict and in the JSON's "hint": for each advice the
 * longest verdict there can be (two candidate names as long as what[] holds, shares of
 * 100 x UINT64_MAX %, the longer "of the run (busy time, from statistics)") fits
 * TRC_REPORT_VERDICT_MAX and ends with the whole text. */
static void test_advice_whole(void **state)
{
    (void)state;
    for (int a = 1; a < TRC_ADVICE_COUNT; a++) {
        const char *text = trc_advice_text((trc_advice_t)a);
        size_t tl = strlen(text);
        assert_true(tl > 40);
        for (int from_path = 0; from_path < 2; from_path++) {
            trc_report_t rep;
            memset(&rep, 0, sizeof rep);
            char w1[sizeof rep.bounds->what], w2[sizeof rep.bounds->what];
            memset(w1, 'x', sizeof w1 - 1);
            w1[sizeof w1 - 1] = '\0';
            memset(w2, 'y', sizeof w2 - 1);
            w2[sizeof w2 - 1] = '\0';
            assert_int_equal(trc_report_bound_add(&rep, w1, UINT64_MAX, (trc_advice_t)a), 0);
            assert_int_equal(trc_report_bound_add(&rep, w2, UINT64_MAX - 1, TRC_ADVICE_NONE), 0);
            rep.bounds_of_ps = 1;
            rep.bounds_from_path = from_path;
            char v[TRC_REPORT_VERDICT_MAX];
            size_t len = trc_report_verdict(&rep, v, sizeof v);
            assert_true(len < sizeof v);
            assert_int_equal(strlen(v), len);
            assert_true(len > tl);
            assert_string_equal(v + len - tl, text);
            assert_non_null(strstr(v, w1));
            assert_non_null(strstr(v, w2));
            /* a smaller buffer: cut and terminated, the whole length still returned */
            char small[16];
            assert_int_equal(trc_report_verdict(&rep, small, sizeof small), len);
            assert_int_equal(strlen(small), sizeof small - 1);
            /* the JSON: both candidates, the first with its whole advice */
            char *j = trc_report_json(&rep);
            assert_non_null(j);
            yajl_val root = parse(j);
            yajl_val bounds = get(root, "bounds");
            assert_int_equal(YAJL_GET_ARRAY(bounds)->len, 2);
            assert_string_equal(YAJL_GET_STRING(get(YAJL_GET_ARRAY(bounds)->values[0], "hint")),
                                text);
            assert_string_equal(YAJL_GET_STRING(get(root, "verdict")), v);
            yajl_tree_free(root);
            free(j);
            trc_report_free(&rep);
        }
    }
    /* nothing to say: an empty verdict */
    trc_report_t rep;
    memset(&rep, 0, sizeof rep);
    char v[8] = "junk";
    assert_int_equal(trc_report_verdict(&rep, v, sizeof v), 0);
    assert_string_equal(v, "");
    assert_string_equal(trc_advice_text(TRC_ADVICE_COUNT), "");
}

static void test_report_errors(void **state)
{
    (void)state;
    char *out = report("nothere.json", 3);
    assert_non_null(strstr(out, "cannot open nothere.json"));
    free(out);
    tu_write_file(tu_join(dir, "empty.json"), "{}", 2);
    out = report("empty.json", 3);
    assert_non_null(strstr(out, "neither a trace nor a statistics file"));
    free(out);
    tu_write_file(tu_join(dir, "junk.json"), "{\"a\":", 5);
    out = report("junk.json", 3);
    assert_non_null(strstr(out, "not valid JSON"));
    free(out);
    /* a Chrome trace from elsewhere (no run information) */
    const char *alien = "{\"traceEvents\":[]}";
    tu_write_file(tu_join(dir, "alien.json"), alien, strlen(alien));
    out = report("alien.json", 3);
    assert_non_null(strstr(out, "not an ncsim trace"));
    free(out);
    out = report("", 2);
    free(out);
    out = report("--help", 0);
    assert_non_null(strstr(out, "usage: ncsim report"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_demo_gemm),
        cmocka_unit_test(test_old_traces_read),
        cmocka_unit_test(test_critical_path_chain),
        cmocka_unit_test(test_critical_path_engine_order),
        cmocka_unit_test(test_report_from_stats),
        cmocka_unit_test(test_verdicts_of_known_bounds),
        cmocka_unit_test(test_verdict_trigger_latency_while_descriptors_busy),
        cmocka_unit_test(test_report_collectives),
        cmocka_unit_test(test_report_huge_line),
        cmocka_unit_test(test_lines_index),
        cmocka_unit_test(test_advice_whole),
        cmocka_unit_test(test_report_errors),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
