/*
 * test_sharp_edges.c -- the edges a compiler's generated code and an unattended harness hit
 * (issue 16): one error for one mistake, whole-tensor operands of any contiguous shape,
 * limits that name sizes, and the language conveniences for generated code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asm.h"
#include "testutil.h"

/* Assemble text; returns the number of errors, the diagnostics in *text (static). */
static unsigned assemble(const char *src, const char **text, isa_program_t **prog)
{
    static char buf[16384];
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "t.nca";
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *p = NULL;
    (void)isa_assemble(src, strlen(src), &opt, &p, &diag);
    snprintf(buf, sizeof buf, "%s", diag.text ? diag.text : "");
    unsigned n = diag.errors;
    isa_diag_free(&diag);
    if (prog)
        *prog = p;
    else
        isa_program_free(p);
    if (text)
        *text = buf;
    return n;
}

/* `.chips 65`: one error, not one per core the program names afterwards */
static void test_chips_out_of_range_is_one_error(void **state)
{
    (void)state;
    const char *text;
    unsigned n = assemble(".chips 65\n"
                          ".core 0..127\n"
                          ".sbuf t fp32 [128, 4]\n"
                          ".engine dve\n"
                          "    memset t, 0.0\n",
                          &text, NULL);
    assert_int_equal(n, 1);
    assert_non_null(strstr(text, "t.nca:1:8: error: chip count 65 out of range 1..64"));
}

/* Whole-tensor HBM operands of any contiguous shape: dimensions over 65,535 are folded. */
static void test_whole_tensor_operands_fold(void **state)
{
    (void)state;
    const char *text;
    isa_program_t *p = NULL;
    /* the case: a 256 MiB fp32 [65536, 1024] tensor as an all_reduce operand */
    unsigned n = assemble(".hbm x fp32 [65536, 1024] input\n"
                          ".hbm y fp32 [65536, 1024] output\n"
                          ".group g = 0, 1\n"
                          ".core 0..1\n"
                          ".engine cc\n"
                          "    all_reduce y, x, op=add, group=g\n",
                          &text, &p);
    assert_int_equal(n, 0);
    assert_non_null(p);
    const isa_view_t *v = isa_arg_view(p, &isa_instr_args(p, &p->instrs[0])[1]);
    assert_int_equal(isa_view_elems(v), 65536ull * 1024);
    for (unsigned d = 0; d < v->ndims; d++)
        assert_true(v->count[d] <= ISA_MAX_COUNT);
    isa_program_free(p);

    /* and the data lands in the right order: [3, 70000] -> [210000] through one dma */
    char cmd[4096];
    char *out = NULL;
    const char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/f.nca", dir);
    const char *prog = ".hbm x fp32 [3, 70000] input\n"
                       ".hbm y fp32 [210000] output\n"
                       ".engine sp\n"
                       "    dma y, x\n";
    assert_int_equal(tu_write_file(path, prog, strlen(prog)), 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && /usr/bin/python3 -c \"import numpy as np; np.save('x.npy', "
             "np.arange(210000, dtype=np.float32).reshape(3, 70000))\" && %s run f.nca -q "
             "--in x=x.npy --out y=y.npy && /usr/bin/python3 -c \"import numpy as np, sys; "
             "sys.exit(0 if np.array_equal(np.load('y.npy'), np.arange(210000, "
             "dtype=np.float32)) else 1)\"",
             dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

/* .npy inputs: Fortran order (np.save(f, a.T)), big-endian, float64/float16 for fp32 tensors
 * (converted, with a note), other integer widths for integer tensors (when every value fits) */
static void test_npy_layouts_and_conversions(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/p.nca", dir);
    const char *prog = ".hbm x fp32 [4, 3] input\n"
                       ".hbm y fp32 [4, 3] output\n"
                       ".hbm i i32 [5] input\n"
                       ".hbm j i32 [5] output\n"
                       ".engine sp\n"
                       "    dma y, x\n"
                       "    dma j, i\n";
    assert_int_equal(tu_write_file(path, prog, strlen(prog)), 0);
    char cmd[8192];
    char *out = NULL;
    /* x as a transposed (Fortran-order) float64 array, i as int64 */
    snprintf(cmd, sizeof cmd,
             "(cd %s && /usr/bin/python3 -c \"import numpy as np; "
             "a = (np.arange(12, dtype=np.float64).reshape(3, 4) + 1/3); np.save('x.npy', a.T); "
             "np.save('i.npy', np.array([-5, 0, 7, 2**31 - 1, -2**31])); "
             "np.save('xe.npy', a.T.astype('>f4')); np.save('xh.npy', a.T.astype(np.float16))\" && "
             "%s run p.nca --in x=x.npy --in i=i.npy --out y=y.npy --out j=j.npy && "
             "/usr/bin/python3 -c \"import numpy as np, sys; "
             "a = (np.arange(12, dtype=np.float64).reshape(3, 4) + 1/3); "
             "ok = np.array_equal(np.load('y.npy'), a.T.astype(np.float32)) and "
             "np.array_equal(np.load('j.npy'), np.array([-5, 0, 7, 2**31 - 1, -2**31], np.int32)); "
             "sys.exit(0 if ok else 1)\")",
             dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "note: x.npy holds <f8 data; tensor 'x' (fp32) reads it as <f4 "
                                "(each value rounded to nearest even)"));
    assert_non_null(strstr(out, "note: i.npy holds <i8 data; tensor 'i' (i32) reads it as <i4"));
    free(out);
    /* big-endian and float16 files give the same result as the float32 they hold */
    snprintf(cmd, sizeof cmd,
             "cd %s && for f in xe xh; do %s run p.nca -q --in x=$f.npy --in i=i.npy "
             "--out y=y_$f.npy || exit 1; done && /usr/bin/python3 -c \"import numpy as np, sys; "
             "a = (np.arange(12, dtype=np.float64).reshape(3, 4) + 1/3); "
             "ok = np.array_equal(np.load('y_xe.npy'), a.T.astype(np.float32)) and "
             "np.array_equal(np.load('y_xh.npy'), a.T.astype(np.float16).astype(np.float32)); "
             "sys.exit(0 if ok else 1)\"",
             dir, tu_ncsim());
    rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    assert_int_equal(rc, 0);
    free(out);
    /* an integer that does not fit, and float data for an integer tensor: refused, exit 3 */
    snprintf(cmd, sizeof cmd,
             "cd %s && /usr/bin/python3 -c \"import numpy as np; "
             "np.save('big.npy', np.array([1, 2, 2**31, 4, 5])); "
             "np.save('fl.npy', np.zeros(5))\" && %s run p.nca -q --in x=x.npy --in i=big.npy",
             dir, tu_ncsim());
    rc = tu_run(cmd, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "big.npy: tensor 'i' is int32, but element 2 of the file is "
                                "2147483648, which does not fit"));
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && %s run p.nca -q --in x=x.npy --in i=fl.npy", dir,
             tu_ncsim());
    rc = tu_run(cmd, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "fl.npy: tensor 'i' is i32"));
    free(out);
}

/* Host memory: a tensor whose random values cannot fit this host is refused with a message
 * saying how much, exit 4 (not a silent exit or the kernel's OOM killer). */
static void test_host_memory_message(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd %s && printf '.hbm x fp32 [62500, 4000000] input\\n.hbm y fp32 [8] output\\n"
             ".engine sp\\ndma y, x[0, 0:8]\\n' > huge.nca && "
             "echo '{\"name\": \"big\", \"base\": \"trn1\", \"hbm\": {\"size_bytes\": "
             "1100000000000}}' > big.json && %s run huge.nca --random-inputs 1 -q --arch big.json",
             dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    if (rc != 4)
        fprintf(stderr, "%s\n", out ? out : "");
    assert_int_equal(rc, 4);
    assert_non_null(strstr(out, "out of host memory: 1907348.6 MiB for the random values of "
                                "tensor 'x'"));
    free(out);
    /* the same 1 TB input, read by no instruction: not filled, costs nothing */
    snprintf(cmd, sizeof cmd,
             "cd %s && printf '.hbm big fp32 [62500, 4000000] input\\n.hbm x fp32 [8] input\\n"
             ".hbm y fp32 [8] output\\n.engine sp\\ndma y, x\\n' > untouched.nca && "
             "%s run untouched.nca --random-inputs 1 -q --arch big.json",
             dir, tu_ncsim());
    rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

/* system.semaphores is enforced; a tensor that does not fit another architecture says the
 * sizes */
static void test_arch_limits_say_sizes(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd %s && printf '.sem a\\n.sem b\\n.sem c\\n.sem d\\n.engine sp\\n"
             "nop | post d\\n' > sems.nca && %s run sems.nca -q --set system.semaphores=1",
             dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "the program uses 4 semaphores on every core (semaphore 'b' is "
                                "number 1), but architecture 'trn1' has system.semaphores = 1"));
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && %s run sems.nca -q --set system.semaphores=4", dir,
             tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && printf '.sbuf t fp32 [128, 40000]\\n.engine dve\\nmemset t, 0\\n' > "
             "sb.nca && %s run sb.nca -q --set sbuf.bytes_per_partition=65536",
             dir, tu_ncsim());
    rc = tu_run(cmd, &out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "SBUF tensor 't' needs bytes [0, 160000) of each partition, but "
                                "each SBUF partition has 65536 bytes"));
    free(out);
}

/* ncsim check: a raw view that starts in one tensor and runs into the next is reported */
static void test_view_bounds_lint(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char path[512], cmd[4096];
    char *out = NULL;
    snprintf(path, sizeof path, "%s/vb.nca", dir);
    const char *prog = ".hbm x fp32 [64, 64] input @0\n"
                       ".hbm y fp32 [128, 64] output @16384\n"
                       ".sbuf a fp32 [128, 64]\n"
                       ".engine sp\n"
                       "    dma a, hbm:fp32+0[64x128, 1x64]\n"  /* 128 rows of a 64-row x */
                       "    dma y[0:64], hbm:fp32+0[64x64, 1x64]\n"; /* inside x: fine */
    assert_int_equal(tu_write_file(path, prog, strlen(prog)), 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s check vb.nca --checks views --json", dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "\"kind\": \"view-bounds\""));
    assert_non_null(strstr(out, "\"tensor\": \"x\""));
    assert_non_null(strstr(out, "\"count\": 1,"));
    free(out);
}

/* Config values are bounded: a value that would overflow the arithmetic is a usage error */
static void test_config_bounds(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {"dma.piece_overhead_ns=1e30", "dma.piece_overhead_ns = 1e+30: must be at most 1e+08"},
        {"dma.trigger_latency_ns=1e38", "dma.trigger_latency_ns = 1e+38: must be at most 1e+08"},
        {"hbm.size_bytes=18446744073709551615", "hbm.size_bytes = 18446744073709551615: must "
                                                "be at most 1125899906842624"},
        {"pe.clock_ghz=1e-9", "pe.clock_ghz = 1e-09: must be 0 or at least 0.001"},
        {"act.latency_cycles=1e300", "act.latency_cycles = 1e+300: must be at most 1e+08"},
        {"hbm.bandwidth_gbps=1e20", "hbm.bandwidth_gbps = 1e+20: must be at most 1e+07"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[1024];
        char *out = NULL;
        snprintf(cmd, sizeof cmd, "%s arch trn1 --set %s", tu_ncsim(), bad[i][0]);
        int rc = tu_run(cmd, &out);
        if (rc != 2 || !strstr(out, bad[i][1]))
            fprintf(stderr, "--set %s: exit %d\n%s\n", bad[i][0], rc, out ? out : "");
        assert_int_equal(rc, 2);
        assert_non_null(strstr(out, bad[i][1]));
        free(out);
    }
    /* the largest accepted values run (timing-only) without overflow */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s run %s --timing-only -q --set dma.piece_overhead_ns=1e8 --set "
             "dma.trigger_latency_ns=1e8 --set hbm.size_bytes=1125899906842624",
             tu_ncsim(), tu_source_path("kernels/tutorial/03_double_buffer.nca"));
    assert_int_equal(tu_run(cmd, NULL), 0);
}

/* Conveniences for generated code: FLAG=EXPR, CLAUSE if EXPR, tensor-relative raw views,
 * broadcast(VIEW, N) */
static void test_conveniences(void **state)
{
    (void)state;
    const char *text;
    isa_program_t *p = NULL;
    unsigned n = assemble(".hbm s fp32 [1] input\n"
                          ".hbm x fp32 [128, 64] input\n"
                          ".sbuf a fp32 [128, 3, 128]\n"
                          ".sbuf b fp32 [128, 3, 512]\n"
                          ".sbuf sv fp32 [128, 1]\n"
                          ".sbuf t fp32 [64, 128]\n"
                          ".psum ps fp32 [128, 512]\n"
                          ".sem go\n.sem done\n"
                          ".engine pe\n"
                          ".loop k = 0, 3\n"
                          "    matmul ps, a[:, k, :], b[:, k, :], acc=k>0 | wait go >= 1 if k == 0 "
                          "| post done if k == 2\n"
                          ".endloop\n"
                          ".engine sp\n"
                          "    dma sv, broadcast(s, 128)\n"
                          "    dma t, hbm:fp32+x[1x64, 64x128]\n"
                          "    dma t, hbm:fp32+x+256[1x64, 64x128]\n"
                          "    nop | post go\n",
                          &text, &p);
    if (n)
        fprintf(stderr, "%s", text);
    assert_int_equal(n, 0);
    /* pe: ldweights, matmul x 3 */
    const isa_stream_t *pe = isa_stream(p, 0, ISA_ENGINE_PE);
    assert_int_equal(pe->count, 6);
    const isa_instr_t *mm[3];
    for (int k = 0; k < 3; k++)
        mm[k] = &p->instrs[pe->first + 2 * (unsigned)k + 1];
    const isa_op_info_t *info = isa_op_info(ISA_OP_MATMUL);
    unsigned acc_slot = 0;
    for (unsigned i = 0; i < info->nslots; i++)
        if (strcmp(info->slots[i].name, "acc") == 0)
            acc_slot = i;
    assert_false(isa_instr_args(p, mm[0])[acc_slot].present); /* acc=0 */
    assert_true(isa_instr_args(p, mm[1])[acc_slot].present);
    assert_true(isa_instr_args(p, mm[2])[acc_slot].present);
    /* the wait went on the first ldweights only, the post on the last matmul only */
    assert_int_equal(p->instrs[pe->first].nwait, 1);
    for (unsigned i = 1; i < pe->count; i++)
        assert_int_equal(p->instrs[pe->first + i].nwait, 0);
    assert_int_equal(mm[0]->npost + mm[1]->npost, 0);
    assert_int_equal(mm[2]->npost, 1);
    /* broadcast: 128 copies (stride 0) of s; raw views relative to x's address */
    const isa_stream_t *sp = isa_stream(p, 0, ISA_ENGINE_SP);
    const isa_view_t *b = isa_arg_view(p, &isa_instr_args(p, &p->instrs[sp->first])[1]);
    assert_int_equal(b->ndims, 2);
    assert_int_equal(b->stride[0], 0);
    assert_int_equal(b->count[0], 128);
    assert_int_equal(b->count[1], 1);
    uint64_t xaddr = 0, saddr = 0;
    for (uint32_t i = 0; i < p->ntensors; i++) {
        if (strcmp(isa_string(p, p->tensors[i].name), "x") == 0)
            xaddr = p->tensors[i].offset;
        if (strcmp(isa_string(p, p->tensors[i].name), "s") == 0)
            saddr = p->tensors[i].offset;
    }
    assert_int_equal(b->offset, saddr);
    assert_true(xaddr != 0); /* placed after s: the test would not see a missing base */
    const isa_view_t *r1 = isa_arg_view(p, &isa_instr_args(p, &p->instrs[sp->first + 1])[1]);
    const isa_view_t *r2 = isa_arg_view(p, &isa_instr_args(p, &p->instrs[sp->first + 2])[1]);
    assert_int_equal(r1->offset, xaddr);
    assert_int_equal(r2->offset, xaddr + 256);
    isa_program_free(p);
}

/* hbm.over_time in --stats covers the run and no more, also once its buckets have been
 * widened (a run longer than 512 of the initial 1 us buckets) */
static void test_hbm_over_time_ends_with_the_run(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "(cd %s && %s run %s --timing-only -q --set hbm.bandwidth_gbps=1 --stats s.json && "
             "/usr/bin/python3 -c \"import json; s = json.load(open('s.json')); "
             "o = s['hbm']['over_time']; n = len(o['gbps_by_chip'][0]); w = o['bucket_ns']; "
             "t = s['total_ns']; print(n, w, t); assert w > 1000 and (n - 1) * w < t <= n * w\")",
             dir, tu_ncsim(), tu_source_path("kernels/tutorial/03_double_buffer.nca"));
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chips_out_of_range_is_one_error),
        cmocka_unit_test(test_whole_tensor_operands_fold),
        cmocka_unit_test(test_npy_layouts_and_conversions),
        cmocka_unit_test(test_host_memory_message),
        cmocka_unit_test(test_arch_limits_say_sizes),
        cmocka_unit_test(test_view_bounds_lint),
        cmocka_unit_test(test_config_bounds),
        cmocka_unit_test(test_conveniences),
        cmocka_unit_test(test_hbm_over_time_ends_with_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
