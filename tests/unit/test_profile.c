/*
 * test_profile.c -- the Neuron profiler's summary (traces/profile.c) through `ncsim report
 * --format neuron-profile`: every figure of a small kernel against values worked out by hand
 * from its program (bytes each instruction and transfer moves, FLOPs by formula), the same
 * summary from the trace and from the statistics file, the json format's records, and errors.
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

#include "testutil.h"

static char dir[256];

/*
 * One core, fp32 throughout:
 *   loads   x [128, 64] (32 KiB) and w [128, 256] (128 KiB) into SBUF;
 *   pe      matmul acc[64, 256] = sx^T . sw (an ldweights of sx, then the matmul), and a PE
 *           transpose tp[64, 128] = sx^T;
 *   act     activate sy = copy(acc)              (PSUM -> SBUF, 64 KiB)
 *   dve     tensor_tensor sz = tp + sw[0:64, 0:128]  (PSUM + SBUF -> SBUF, 32 KiB)
 *   stores  y [64, 256] (64 KiB) and z [64, 128] (32 KiB) from SBUF.
 */
static const char kernel[] = ".arch trn1\n"
                             ".hbm x fp32 [128, 64] input\n"
                             ".hbm w fp32 [128, 256] input\n"
                             ".hbm y fp32 [64, 256] output\n"
                             ".hbm z fp32 [64, 128] output\n"
                             ".core 0\n"
                             ".sbuf sx fp32 [128, 64]\n"
                             ".sbuf sw fp32 [128, 256]\n"
                             ".psum acc fp32 [64, 256]\n"
                             ".psum tp fp32 [64, 128]\n"
                             ".sbuf sy fp32 [64, 256]\n"
                             ".sbuf sz fp32 [64, 128]\n"
                             ".sem loaded\n"
                             ".sem mm\n"
                             ".sem cp\n"
                             ".engine sp\n"
                             "    dma sx, x, queue=0 | post loaded\n"
                             "    dma sw, w, queue=1 | post loaded\n"
                             ".engine pe\n"
                             "    matmul acc, sx, sw | wait loaded >= 2\n"
                             "    transpose tp, sx | post mm\n"
                             ".engine act\n"
                             "    activate sy, acc, copy | wait mm >= 1 | post cp\n"
                             ".engine dve\n"
                             "    tensor_tensor sz, tp, sw[0:64, 0:128], add | wait mm >= 1 | post cp\n"
                             ".engine pool\n"
                             "    dma y, sy, queue=2 | wait cp >= 2\n"
                             "    dma z, sz, queue=3 | wait cp >= 2\n";

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    assert_int_equal(tu_write_file(tu_join(dir, "k.nca"), kernel, strlen(kernel)), 0);
    if (tu_sh("cd %s && %s run k.nca --random-inputs 1 -q --trace t.pftrace --stats s.json", dir,
              tu_ncsim()) != 0)
        return -1;
    return tu_sh("cd %s && %s run k.nca --random-inputs 1 -q --trace t.json", dir, tu_ncsim());
}

/* `ncsim report ARGS` in the temporary directory: its exit status, stdout+stderr in *out. */
static int report(const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s report %s", dir, tu_ncsim(), args);
    return tu_run(cmd, out);
}

static yajl_val summary_of(const char *args, yajl_val *root)
{
    char *text = NULL;
    int rc = report(args, &text);
    if (rc != 0)
        fprintf(stderr, "report %s -> %d: %s\n", args, rc, text ? text : "");
    assert_int_equal(rc, 0);
    char err[256];
    *root = yajl_tree_parse(text, err, sizeof err);
    if (!*root)
        fprintf(stderr, "%s\n%s\n", err, text);
    free(text);
    assert_non_null(*root);
    /* summary-json: one top-level key, its value the flat summary */
    assert_true(YAJL_IS_OBJECT(*root));
    assert_int_equal((*root)->u.object.len, 1);
    return (*root)->u.object.values[0];
}

static yajl_val field(yajl_val o, const char *key)
{
    const char *path[] = {key, NULL};
    return yajl_tree_get(o, path, yajl_t_any);
}

static double num(yajl_val o, const char *key)
{
    yajl_val v = field(o, key);
    if (!v || !YAJL_IS_NUMBER(v))
        fprintf(stderr, "no number \"%s\" in the summary\n", key);
    assert_true(v && YAJL_IS_NUMBER(v));
    return YAJL_GET_DOUBLE(v);
}

static void expect(yajl_val o, const char *key, double want)
{
    double got = num(o, key);
    if (!tu_close(got, want, 1e-9, 1e-12))
        fprintf(stderr, "%s: %.12g, want %.12g\n", key, got, want);
    assert_true(tu_close(got, want, 1e-9, 1e-12));
}

/* Bytes and FLOPs by hand, from the program above. */
#define KIB 1024.0
static void expect_hand_figures(yajl_val s)
{
    /* HBM: the loads read x and w, the stores write y and z */
    expect(s, "hbm_read_bytes", 32 * KIB + 128 * KIB);
    expect(s, "hbm_write_bytes", 64 * KIB + 32 * KIB);
    /* SBUF reads: ldweights sx 32K, matmul sw 128K, transpose sx 32K, tensor_tensor's SBUF
     * operand 32K, the stores of sy 64K and sz 32K */
    expect(s, "sbuf_read_bytes", (32 + 128 + 32 + 32 + 64 + 32) * KIB);
    /* SBUF writes: the loads 32K + 128K, activate 64K, tensor_tensor 32K */
    expect(s, "sbuf_write_bytes", (32 + 128 + 64 + 32) * KIB);
    /* PSUM: matmul writes acc 64K, transpose tp 32K; activate reads acc, tensor_tensor tp */
    expect(s, "psum_write_bytes", (64 + 32) * KIB);
    expect(s, "psum_read_bytes", (64 + 32) * KIB);
    /* FLOPs: matmul 2 K M N, transpose 2 P P F; the profiler counts 4 per fp32 multiply-add
     * in hardware_flops (2x), and fp32 x 4 in the adjusted (bf16-equivalent) fields */
    double mm = 2.0 * 128 * 64 * 256, tr = 2.0 * 128 * 128 * 64;
    expect(s, "model_flops", mm);
    expect(s, "raw_hardware_flops", mm + tr);
    expect(s, "raw_transpose_flops", tr);
    expect(s, "hardware_flops", 2 * (mm + tr));
    expect(s, "transpose_flops", 2 * tr);
    expect(s, "adjusted_hardware_flops", 4 * (mm + tr));
    expect(s, "adjusted_transpose_flops", 4 * tr);
    expect(s, "mm_arithmetic_intensity", 2 * mm / ((160 + 96) * KIB));
    /* trn1: 128 x 128 PE at 2.8 GHz, 2 FLOPs per MAC; one core's HBM share 820 / 2 GB/s */
    double peak = 2.0 * 128 * 128 * 2.8e9, hbm = 410e9;
    expect(s, "peak_flops_bandwidth_ratio", peak / hbm);
    double T = num(s, "total_time");
    assert_true(T > 1e-6 && T < 1e-4);
    expect(s, "hfu_estimated_percent", 2 * (mm + tr) / (peak * T));
    expect(s, "mfu_estimated_percent", mm / (peak * T));
    expect(s, "mbu_estimated_percent", (256 * KIB) / T / hbm);
    expect(s, "neuroncore_cycle_count", round(T * 1.4e9));
    expect(s, "inputs_and_weights_size_bytes", 160 * KIB);
    expect(s, "inputs_outputs_weights_size_bytes", 256 * KIB);
    expect(s, "dma_transfer_count", 4);
    expect(s, "dma_transfer_total_bytes", 256 * KIB);
    expect(s, "dma_transfer_average_bytes", 64 * KIB);
    expect(s, "tensor_engine_instruction_count", 3); /* ldweights, matmul, transpose */
    expect(s, "scalar_engine_instruction_count", 1);
    expect(s, "vector_engine_instruction_count", 1);
    expect(s, "gpsimd_engine_instruction_count", 2);
    expect(s, "sync_engine_instruction_count", 2);
    expect(s, "spill_save_bytes", 0);
    /* fractions, not percent */
    const char *fractions[] = {"hfu_estimated_percent", "tensor_engine_active_time_percent",
                               "vector_engine_active_time_percent",
                               "scalar_engine_active_time_percent",
                               "gpsimd_engine_active_time_percent", "dma_active_time_percent"};
    for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
        double f = num(s, fractions[i]);
        assert_true(f > 0 && f <= 1.0);
    }
    yajl_val sim = field(s, "is_simulation");
    assert_true(sim && YAJL_IS_TRUE(sim));
}

static void test_trace_against_hand(void **state)
{
    (void)state;
    yajl_val root;
    yajl_val s = summary_of("t.pftrace --format neuron-profile --program k.nca", &root);
    expect_hand_figures(s);
    /* the per-instruction fields a trace adds */
    expect(s, "matmul_instruction_count", 2);
    expect(s, "psum_read_sbuf_write_count", 2);
    expect(s, "psum_read_sbuf_write_bytes", (64 + 32) * KIB);
    expect(s, "input_queue_bytes", 160 * KIB);
    expect(s, "output_queue_bytes", 96 * KIB);
    expect(s, "dma_queue_count", 4);
    expect(s, "activate_instruction_count", 1);
    /* the sync engine's two DMA triggers, back to back: 2 x 84 cycles at 1.4 GHz */
    expect(s, "sync_engine_active_time", 2 * 84 / 1.4e9);
    double active = num(s, "total_active_time"), T = num(s, "total_time");
    assert_true(active > 0 && active <= T);
    yajl_tree_free(root);
}

/* The trace and the statistics file give the same figures, computed apart: the union of the
 * trace's intervals against the simulator's own active times. */
static void test_trace_and_stats_agree(void **state)
{
    (void)state;
    yajl_val ra, rb, rc;
    yajl_val a = summary_of("t.pftrace --format neuron-profile --program k.nca", &ra);
    yajl_val b = summary_of("s.json --format neuron-profile --program k.nca", &rb);
    yajl_val c = summary_of("t.json --format neuron-profile --program k.nca", &rc);
    expect_hand_figures(b);
    const char *keys[] = {"total_time", "tensor_engine_active_time", "vector_engine_active_time",
                          "scalar_engine_active_time", "gpsimd_engine_active_time",
                          "sync_engine_active_time", "dma_active_time", "hardware_flops",
                          "hfu_estimated_percent", "mbu_estimated_percent"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        expect(b, keys[i], num(a, keys[i]));
        expect(c, keys[i], num(a, keys[i]));
    }
    /* per-instruction fields are absent from a statistics file's summary, not zero */
    assert_null(field(b, "matmul_instruction_count"));
    assert_null(field(b, "psum_read_sbuf_write_count"));
    yajl_tree_free(ra);
    yajl_tree_free(rb);
    yajl_tree_free(rc);
}

/* Transfers that convert types (docs/cost-model.md 9.3): each side counts its own bytes, in
 * the summary from a Perfetto trace, a JSON trace and a statistics file, and in `ncsim
 * report`'s HBM figures from a trace. By hand:
 *   sp    dma s, x   fp32 HBM [128, 256] -> bf16 SBUF: reads 128 KiB of HBM, writes 64 KiB
 *   pool  dma y, s   bf16 SBUF -> bf16 HBM: reads 64 KiB, writes 64 KiB (no conversion)
 *   pool  dma z, s   bf16 SBUF -> fp32 HBM: reads 64 KiB of SBUF, writes 128 KiB of HBM */
static const char cast_kernel[] = ".arch trn1\n"
                                  ".hbm x fp32 [128, 256] input\n"
                                  ".hbm y bf16 [128, 256] output\n"
                                  ".hbm z fp32 [128, 256] output\n"
                                  ".core 0\n"
                                  ".sbuf s bf16 [128, 256]\n"
                                  ".sem ld\n"
                                  ".engine sp\n"
                                  "    dma s, x, queue=0 | post ld\n"
                                  ".engine pool\n"
                                  "    dma y, s, queue=1 | wait ld >= 1\n"
                                  "    dma z, s, queue=2 | wait ld >= 1\n";

static void test_converting_transfers(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(tu_join(dir, "cast.nca"), cast_kernel, strlen(cast_kernel)),
                     0);
    assert_int_equal(tu_sh("cd %s && %s run cast.nca --random-inputs 1 -q --trace c.pftrace "
                           "--stats c_stats.json && %s run cast.nca --random-inputs 1 -q "
                           "--trace c.json",
                           dir, tu_ncsim(), tu_ncsim()),
                     0);
    /* the JSON trace names src_bytes for the two converting transfers only: the load's 128
     * KiB of fp32 and the z store's 64 KiB of bf16 */
    char *trace = tu_read_file(tu_join(dir, "c.json"), NULL);
    assert_non_null(trace);
    const char *p = trace;
    int n_src = 0, load = 0, store = 0;
    while ((p = strstr(p, "\"src_bytes\"")) != NULL) {
        p += strlen("\"src_bytes\"");
        while (*p == ':' || *p == ' ')
            p++;
        long v = strtol(p, NULL, 10);
        n_src++;
        load += v == 128 * 1024;
        store += v == 64 * 1024;
    }
    free(trace);
    assert_int_equal(n_src, 2);
    assert_int_equal(load, 1);
    assert_int_equal(store, 1);
    const char *sources[] = {"c.pftrace", "c.json", "c_stats.json"};
    for (size_t i = 0; i < 3; i++) {
        char args[256];
        snprintf(args, sizeof args, "%s --format neuron-profile --program cast.nca", sources[i]);
        yajl_val root;
        yajl_val s = summary_of(args, &root);
        expect(s, "hbm_read_bytes", 128 * KIB);
        expect(s, "hbm_write_bytes", (64 + 128) * KIB);
        expect(s, "sbuf_read_bytes", (64 + 64) * KIB);
        expect(s, "sbuf_write_bytes", 64 * KIB);
        expect(s, "mbu_estimated_percent",
               (128 + 192) * KIB / num(s, "total_time") / 410e9);
        if (i < 2) { /* the per-transfer fields a trace adds */
            expect(s, "input_queue_bytes", 128 * KIB);
            expect(s, "output_queue_bytes", (64 + 128) * KIB);
            /* what the transfers delivered: the destinations' bytes */
            expect(s, "dma_transfer_total_bytes", (64 + 64 + 128) * KIB);
        }
        yajl_tree_free(root);
        /* ncsim report's HBM traffic, from the trace or the statistics */
        snprintf(args, sizeof args, "%s --format json", sources[i]);
        char *text = NULL;
        assert_int_equal(report(args, &text), 0);
        char err[256];
        yajl_val r = yajl_tree_parse(text, err, sizeof err);
        free(text);
        assert_non_null(r);
        const char *rd[] = {"hbm", "read_bytes", NULL}, *wr[] = {"hbm", "write_bytes", NULL};
        yajl_val vr = yajl_tree_get(r, rd, yajl_t_number), vw = yajl_tree_get(r, wr, yajl_t_number);
        assert_non_null(vr);
        assert_non_null(vw);
        assert_int_equal(YAJL_GET_INTEGER(vr), 128 * 1024);
        assert_int_equal(YAJL_GET_INTEGER(vw), 192 * 1024);
        yajl_tree_free(r);
    }
}

static void test_json_records(void **state)
{
    (void)state;
    char *text = NULL;
    assert_int_equal(report("t.json --format neuron-profile-json -o p.json", &text), 0);
    free(text);
    char *json = tu_read_file(tu_join(dir, "p.json"), NULL);
    assert_non_null(json);
    char err[256];
    yajl_val root = yajl_tree_parse(json, err, sizeof err);
    free(json);
    assert_non_null(root);
    yajl_val sum = field(root, "summary"), ins = field(root, "instruction");
    assert_true(sum && YAJL_IS_ARRAY(sum) && sum->u.array.len == 1);
    assert_true(ins && YAJL_IS_ARRAY(ins));
    /* 9 instructions (ldweights and matmul are two) and 4 transfers */
    assert_int_equal(ins->u.array.len, 13);
    size_t matmuls = 0;
    for (size_t i = 0; i < ins->u.array.len; i++) {
        yajl_val r = ins->u.array.values[i];
        assert_true(YAJL_IS_NUMBER(field(r, "timestamp")));
        assert_true(YAJL_IS_NUMBER(field(r, "duration")));
        assert_true(YAJL_IS_STRING(field(r, "label")));
        const char *op = YAJL_GET_STRING(field(r, "opcode"));
        if (!strcmp(op, "matmul")) {
            matmuls++;
            assert_string_equal(YAJL_GET_STRING(field(r, "label")), "Tensor");
            assert_string_equal(YAJL_GET_STRING(field(r, "nki_source_location")), "k.nca:20");
        }
    }
    assert_int_equal(matmuls, 1);
    yajl_tree_free(root);
}

/*
 * Against published trn1 profiles: validation/'s replicas of three AccelOpt baseline kernels
 * (their generators, as `ncsim validate` runs them), summarised, against the figures of the
 * profiles published with them (AccelOpt's profile CSV; validation/manifest.json cites the
 * same rows for the latencies). Byte and FLOP counts are exact or nearly; total_time and HFU
 * within the manifest's 15 % band.
 */
typedef struct published {
    const char *kernel;
    double total_time, hbm_read, hbm_write, hardware_flops, transpose_flops;
    double read_tolerance; /* relative */
} published_t;

static void test_published_profiles(void **state)
{
    (void)state;
    static const published_t rows[] = {
        /* matmul M=4096 N=12288 K=5120 fp32: the compiled program re-reads B per m-tile */
        {"matmul", 35.199742e-3, 9059762176.0, 201326592.0, 1159641169920.0, 128849018880.0, 0},
        /* bmm B=16 M=4096 K=64 N=4096 fp32: the profile's spill reloads differ by 256 KiB */
        {"bmm", 4.610889e-3, 67436544.0, 1086324736.0, 70866960384.0, 2147483648.0, 0.005},
        /* adamw M=10944 N=2048 fp32: no TensorE work */
        {"adamw", 1.999829e-3, 358612992.0, 89653248.0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const published_t *r = &rows[i];
        assert_int_equal(tu_sh("cd %s && python3 validation/gen/%s.py > %s/%s.nca",
                               tu_source_path(""), r->kernel, dir, r->kernel),
                         0);
        char args[256];
        snprintf(args, sizeof args, "%s.json --format neuron-profile --program %s.nca",
                 r->kernel, r->kernel);
        assert_int_equal(tu_sh("cd %s && %s run %s.nca --timing-only -q --stats %s.json", dir,
                               tu_ncsim(), r->kernel, r->kernel),
                         0);
        yajl_val root;
        yajl_val s = summary_of(args, &root);
        double T = num(s, "total_time");
        fprintf(stderr, "%s: total_time %.6g s (published %.6g, %+.1f %%), hfu %.4f\n",
                r->kernel, T, r->total_time, 100.0 * (T / r->total_time - 1.0),
                num(s, "hfu_estimated_percent"));
        assert_true(fabs(T / r->total_time - 1.0) <= 0.15);
        assert_true(tu_close(num(s, "hbm_read_bytes"), r->hbm_read, r->read_tolerance, 0));
        expect(s, "hbm_write_bytes", r->hbm_write);
        expect(s, "hardware_flops", r->hardware_flops);
        expect(s, "transpose_flops", r->transpose_flops);
        if (r->hardware_flops > 0) {
            double peak = 2.0 * 128 * 128 * 2.8e9;
            double hfu_published = r->hardware_flops / (peak * r->total_time);
            assert_true(fabs(num(s, "hfu_estimated_percent") / hfu_published - 1.0) <= 0.15);
        }
        yajl_tree_free(root);
    }
}

/* Figures not to take at face value say so: a trace that kept only some engines, the
 * statistics of a failed run. */
static void test_partial_and_failed_runs(void **state)
{
    (void)state;
    assert_int_equal(tu_sh("cd %s && %s run k.nca --random-inputs 1 -q --trace w.json "
                           "--trace-engines pe,dma",
                           dir, tu_ncsim()),
                     0);
    yajl_val root;
    yajl_val s = summary_of("w.json --format neuron-profile", &root);
    assert_true(YAJL_IS_TRUE(field(s, "trace_filtered")));
    yajl_tree_free(root);
    s = summary_of("t.json --format neuron-profile", &root);
    assert_null(field(s, "trace_filtered"));
    assert_null(field(s, "run_status"));
    yajl_tree_free(root);
    static const char deadlock[] = ".core 0\n.sem s\n.engine sp\n    nop | wait s >= 1\n";
    assert_int_equal(tu_write_file(tu_join(dir, "dl.nca"), deadlock, strlen(deadlock)), 0);
    assert_int_equal(tu_sh("cd %s && %s run dl.nca -q --stats dl.json 2>/dev/null || true", dir,
                           tu_ncsim()),
                     0);
    s = summary_of("dl.json --format neuron-profile", &root);
    assert_string_equal(YAJL_GET_STRING(field(s, "run_status")), "error");
    yajl_val why = field(s, "run_error");
    assert_true(why && YAJL_IS_STRING(why));
    assert_non_null(strstr(why->u.string, "deadlock"));
    yajl_tree_free(root);
}

static void test_errors(void **state)
{
    (void)state;
    struct {
        const char *args;
        int rc;
        const char *says;
    } cases[] = {
        {"t.json --format neuron-profile --core 1", 2, "core 1 ran nothing"},
        {"s.json --format neuron-profile --core 7", 2, "no core 7"},
        {"missing.json --format neuron-profile", 3, "cannot open missing.json"},
        {"k.nca --format neuron-profile", 3, "neither trace JSON"},
        {"t.json --format neuron-profile --program missing.ncx", 3, "missing.ncx"},
        {"t.json --format bogus", 2, "unknown --format 'bogus'"},
        {"t.json --core 1", 2, "--core and --program go with --format neuron-profile"},
        {"t.json --format neuron-profile --by-line", 2, "without --by-line"},
        {"t.json --format neuron-profile --core x", 2, "--core wants a core number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        int rc = report(cases[i].args, &out);
        if (rc != cases[i].rc || !out || !strstr(out, cases[i].says))
            fprintf(stderr, "report %s -> %d: %s\n", cases[i].args, rc, out ? out : "");
        assert_int_equal(rc, cases[i].rc);
        assert_non_null(strstr(out, cases[i].says));
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_against_hand),
        cmocka_unit_test(test_trace_and_stats_agree),
        cmocka_unit_test(test_converting_transfers),
        cmocka_unit_test(test_json_records),
        cmocka_unit_test(test_published_profiles),
        cmocka_unit_test(test_partial_and_failed_runs),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
