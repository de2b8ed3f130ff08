/*
 * test_trace_protoc.c -- .pftrace files checked by an independent oracle: `protoc --decode`
 * against the subset of Perfetto's schema kept in tests/proto/ (package protobuf-compiler;
 * the test is skipped, exit 77, when protoc is absent).
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

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    return 0;
}

/* protoc's text form of a .pftrace; NULL when protoc rejects it. */
static char *decode(const char *pftrace)
{
    char cmd[4096];
    const char *proto_dir = tu_source_path("tests/proto");
    char pd[1024];
    snprintf(pd, sizeof pd, "%s", proto_dir);
    snprintf(cmd, sizeof cmd,
             "protoc --decode=perfetto.protos.Trace -I %s %s/perfetto_trace_subset.proto < %s "
             "> %s.txt",
             pd, pd, pftrace, pftrace);
    if (tu_run(cmd, NULL) != 0)
        return NULL;
    char out[1100];
    snprintf(out, sizeof out, "%s.txt", pftrace);
    return tu_read_file(out, NULL);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void test_demo_decodes(void **state)
{
    (void)state;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s run %s --timing-only -q --trace demo.pftrace", dir,
             tu_ncsim(), tu_source_path("kernels/demo_gemm.nca"));
    assert_int_equal(tu_run(cmd, NULL), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/demo.pftrace", dir);
    char *t = decode(path);
    assert_non_null(t);
    assert_non_null(strstr(t, "process_name: \"chip 0 core 0\""));
    assert_non_null(strstr(t, "process_name: \"chip 0 core 1\""));
    assert_non_null(strstr(t, "process_name: \"chip 0\""));
    assert_non_null(strstr(t, "thread_name: \"pe\""));
    assert_non_null(strstr(t, "thread_name: \"dma q9\""));
    assert_non_null(strstr(t, "name: \"matmul\""));
    assert_non_null(strstr(t, "name: \"operands\""));
    /* operands as an interned template with the clauses' numbers inline (they differ by
     * instruction), cost breakdowns interned once each; times as integer picoseconds */
    assert_non_null(strstr(t, "name: \"operand_values\""));
    assert_non_null(strstr(t, "string_value: \""));
    assert_true(count(t, " >= #") > 0);
    assert_non_null(strstr(t, "name: \"ii_ps\""));
    assert_null(strstr(t, "name: \"ii_ns\""));
    assert_non_null(strstr(t, "name: \"cost\""));
    /* DMA breakdowns as numbers, not text */
    assert_non_null(strstr(t, "name: \"cap_gbps\""));
    assert_int_equal(count(t, "string_value: \"fixed "), 0);
    assert_int_equal(count(t, "string_value: \"II = max("), 0);
    assert_true(count(t, "str: \"II = max(") > 0);
    assert_true(count(t, "string_value_iid:") > count(t, "debug_annotation_string_values {"));
    assert_non_null(strstr(t, "name: \"HBM bandwidth (GB/s)\""));
    assert_non_null(strstr(t, "unit_name: \"GB/s\""));
    assert_non_null(strstr(t, "double_counter_value:"));
    assert_non_null(strstr(t, " counter_value:")); /* whole values (bytes) as integers */
    /* one counter value per event: no extra counters (traces.md, "Format details") */
    assert_int_equal(count(t, "extra_double_counter_track_uuids:"), 0);
    assert_int_equal(count(t, "extra_counter_track_uuids:"), 0);
    assert_non_null(strstr(t, "flow_ids:"));
    assert_non_null(strstr(t, "terminating_flow_ids:"));
    /* every slice begins and ends: 2 x (114 instructions + 44 transfers) */
    assert_int_equal(count(t, "type: TYPE_SLICE_BEGIN"), 316);
    assert_int_equal(count(t, "type: TYPE_SLICE_END"), 316);
    /* each flow has one source and one end */
    assert_int_equal(count(t, "flow_ids:") - count(t, "terminating_flow_ids:"),
                     count(t, "terminating_flow_ids:"));
    free(t);
}

/* A traced all_reduce over 2 chips: link tracks in the chips' link processes, step slices,
 * link bandwidth counters. */
static void test_collective_decodes(void **state)
{
    (void)state;
    static const char prog[] = ".chips 2\n.group g = 0..3\n"
                               ".hbm x0 fp32 [64, 1024] scratch chip=0\n"
                               ".hbm x1 fp32 [64, 1024] scratch chip=1\n"
                               ".core 0\n.engine cc\nall_reduce x0, x0, op=add, group=g\n"
                               ".core 1\n.engine cc\nall_reduce x0, x0, op=add, group=g\n"
                               ".core 2\n.engine cc\nall_reduce x1, x1, op=add, group=g\n"
                               ".core 3\n.engine cc\nall_reduce x1, x1, op=add, group=g\n";
    char path[512], cmd[4096];
    snprintf(path, sizeof path, "%s/ar.nca", dir);
    assert_int_equal(tu_write_file(path, prog, strlen(prog)), 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s run ar.nca --arch trn1-32xl --set cc.algorithm=ring --timing-only -q "
             "--trace ar.pftrace",
             dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 0);
    snprintf(path, sizeof path, "%s/ar.pftrace", dir);
    char *t = decode(path);
    assert_non_null(t);
    assert_non_null(strstr(t, "process_name: \"chip 0 links\""));
    assert_non_null(strstr(t, "process_name: \"chip 1 links\""));
    assert_non_null(strstr(t, "thread_name: \"link 0->1\""));
    assert_non_null(strstr(t, "thread_name: \"link 1->0\""));
    assert_non_null(strstr(t, "thread_name: \"cc steps\""));
    assert_non_null(strstr(t, "name: \"link 0->1 bandwidth (GB/s)\""));
    assert_non_null(strstr(t, "name: \"all_reduce step 6/6\""));
    assert_non_null(strstr(t, "name: \"bottleneck\""));
    /* repeated string values are interned: sent once, then referred to by iid */
    assert_non_null(strstr(t, "debug_annotation_string_values {"));
    assert_non_null(strstr(t, "str: \"link 0->1\""));
    assert_non_null(strstr(t, "string_value_iid:"));
    /* 4 instructions, 4 x 6 step slices, 2 x 6 link slices: each begins and ends */
    assert_int_equal(count(t, "type: TYPE_SLICE_BEGIN"), 40);
    assert_int_equal(count(t, "type: TYPE_SLICE_END"), 40);
    free(t);
}

/* The oracle is not vacuous: a damaged file is rejected. */
static void test_oracle_rejects_damage(void **state)
{
    (void)state;
    char path[512], bad[512];
    snprintf(path, sizeof path, "%s/demo.pftrace", dir);
    snprintf(bad, sizeof bad, "%s/bad.pftrace", dir);
    size_t n;
    char *b = tu_read_file(path, &n);
    assert_non_null(b);
    assert_true(n > 100);
    assert_int_equal(tu_write_file(bad, b, n - 7), 0); /* cut inside a packet */
    free(b);
    char *t = decode(bad);
    assert_null(t);
}

int main(void)
{
    if (tu_run("command -v protoc", NULL) != 0) {
        fprintf(stderr, "test_trace_protoc: protoc not found (package protobuf-compiler): "
                        "skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_decodes),
        cmocka_unit_test(test_collective_decodes),
        cmocka_unit_test(test_oracle_rejects_damage),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
