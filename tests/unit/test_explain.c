/*
 * test_explain.c -- "explain the time" (docs/explain.md): cost breakdowns of instructions
 * and transfers against hand-computed trn1 values, through the simulator's API (a trace sink
 * of our own) and in trace files.
 */
#include <math.h>
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
#include <yajl/yajl_tree.h>

#include "arch.h"
#include "asm.h"
#include "cost.h"
#include "isa.h"
#include "sim.h"
#include "testutil.h"
#include "trace.h"
#include "trace_sink.h"

static mdl_arch_t trn1;

static int setup(void **state)
{
    (void)state;
    return tu_load_arch("trn1", &trn1);
}

static isa_program_t *assemble(const char *text)
{
    isa_program_t *p = tu_assemble(text, NULL);
    assert_non_null(p);
    return p;
}

/* ---- a trace sink that keeps the records --------------------------------------------------- */

typedef struct collect {
    sim_trace_instr_t instr[64];
    size_t ninstr;
    sim_trace_dma_t dma[64];
    size_t ndma;
} collect_t;

static void on_instr(void *ctx, const sim_trace_instr_t *r)
{
    collect_t *c = ctx;
    if (c->ninstr < 64)
        c->instr[c->ninstr++] = *r;
}

static void on_dma(void *ctx, const sim_trace_dma_t *r)
{
    collect_t *c = ctx;
    if (c->ndma < 64)
        c->dma[c->ndma++] = *r;
}

static void on_sem(void *ctx, const sim_trace_sem_t *r)
{
    (void)ctx;
    (void)r;
}

typedef struct run {
    isa_program_t *prog;
    sim_t *sim;
    collect_t rec;
} run_t;

static run_t *run_text(const char *text)
{
    run_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->prog = assemble(text);
    sim_trace_sink_t sink = {&r->rec, on_instr, on_dma, on_sem, NULL, NULL};
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = &trn1;
    o.timing_only = 1;
    o.trace = &sink;
    char err[1024];
    assert_int_equal(sim_create(r->prog, &o, &r->sim, err, sizeof err), NCSIM_OK);
    assert_int_equal(sim_run(r->sim, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
    return r;
}

static void run_free(run_t *r)
{
    sim_destroy(r->sim);
    isa_program_free(r->prog);
    free(r);
}

static const sim_trace_instr_t *find_op(const run_t *r, isa_op_t op, int nth)
{
    for (size_t i = 0; i < r->rec.ninstr; i++)
        if (r->rec.instr[i].instr->op == op && nth-- == 0)
            return &r->rec.instr[i];
    fail_msg("no instruction %d of op %d", nth, (int)op);
    return NULL;
}

/* ---- instruction breakdowns ------------------------------------------------------------------ */

/* An fp32 matmul: II = max(min(64, M=128), N=512) x 4 (fp32) = 2048 PE cycles = 731.429 ns
 * at 2.8 GHz; the text names every term with its value. */
static void test_matmul_fp32_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf w fp32 [128, 128]\n.sbuf x fp32 [128, 512]\n"
                        ".psum acc fp32 [128, 512]\n.engine pe\nldweights w\nmatmul acc, x\n");
    const sim_trace_instr_t *mm = find_op(r, ISA_OP_MATMUL, 0);
    mdl_cost_terms_t terms;
    char text[1024];
    sim_explain_instr(&trn1, r->prog, mm, &terms, text, sizeof text);
    assert_string_equal(terms.ii, "II = max(min({MM_INIT}, {M}), {N} x {s}) x {f} x {passes}");
    assert_true(mdl_cost_term_value(&terms, "N", -1) == 512.0);
    assert_true(mdl_cost_term_value(&terms, "M", -1) == 128.0);
    assert_true(mdl_cost_term_value(&terms, "f", -1) == 4.0);
    assert_true(mdl_cost_term_value(&terms, "s", -1) == 1.0);
    assert_true(mdl_cost_term_value(&terms, "nonexistent", -1) == -1.0);
    assert_string_equal(text,
                        "II = max(min(MM_INIT=64, M=128 (columns of the loaded weights)), "
                        "N=512 (MOV free size) x s=1) x f=4 (fp32: pe.fp32_factor) x passes=1 "
                        "(PE array passes) = 2048 cycles = 731.429 ns; latency = II + "
                        "pipeline=350 (pe.latency_cycles)");
    /* the ldweights: max(64, 128) / 4 x 4 (fp32) = 128 cycles */
    const sim_trace_instr_t *ld = find_op(r, ISA_OP_LDWEIGHTS, 0);
    sim_explain_instr(&trn1, r->prog, ld, &terms, text, sizeof text);
    assert_non_null(strstr(text, "= 128 cycles = 45.714 ns"));
    run_free(r);
}

/* A strided fp32 read on VectorE: innermost stride 8 x 4 B = 32 B > 16 B doubles the N
 * term: max(64, 256 x 2) = 512 DVE cycles = 457.143 ns at 1.12 GHz; latency is that work plus
 * the static overhead 60 (no vector operands) and the trn1 pipeline latency 0. */
static void test_stride_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf x fp32 [128, 2048]\n.sbuf y fp32 [128, 256]\n"
                        ".engine dve\ntensor_copy y, x[:, 0:2048:8]\n");
    const sim_trace_instr_t *tc = find_op(r, ISA_OP_TENSOR_COPY, 0);
    mdl_cost_terms_t terms;
    char text[1024];
    sim_explain_instr(&trn1, r->prog, tc, &terms, text, sizeof text);
    assert_true(mdl_cost_term_value(&terms, "s", -1) == 2.0);
    assert_true(mdl_cost_term_value(&terms, "MIN_II", -1) == 64.0);
    assert_non_null(strstr(text, "II = max(MIN_II=64, N=256 x s=2 ("));
    assert_non_null(strstr(text, "= 512 cycles = 457.143 ns"));
    assert_non_null(strstr(text, "latency = max(II, work=512"));
    assert_non_null(strstr(text, "static=60"));
    assert_non_null(strstr(text, "vectors=0"));
    assert_non_null(strstr(text, "pipeline=0"));
    run_free(r);
}

/* Two inputs in SBUF on VectorE cost 2N; the reason is in the note of k. */
static void test_tensor_tensor_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf a fp32 [128, 512]\n.sbuf b fp32 [128, 512]\n"
                        ".sbuf c fp32 [128, 512]\n.engine dve\ntensor_tensor c, a, b, add\n");
    mdl_cost_terms_t terms;
    char text[1024];
    sim_explain_instr(&trn1, r->prog, find_op(r, ISA_OP_TENSOR_TENSOR, 0), &terms, text,
                      sizeof text);
    assert_true(mdl_cost_term_value(&terms, "k", -1) == trn1.costs.dve_tensor_tensor_factor);
    /* trn1's factor (costs.dve_tensor_tensor_factor): the published 2 */
    assert_non_null(strstr(text, "k=2 (2 inputs through the SBUF read stream) x N=512"));
    if (!strstr(text, "= 1024 cycles = 914.286 ns"))
        fail_msg("%s", text);
    run_free(r);
}

/* A background ldweights after a matmul is charged only what the matmul does not hide. */
static void test_background_ldweights_note(void **state)
{
    (void)state;
    run_t *r = run_text(".sbuf w bf16 [128, 128]\n.sbuf v bf16 [128, 128]\n"
                        ".sbuf x bf16 [128, 16]\n.psum acc fp32 [128, 16]\n.engine pe\n"
                        "ldweights w\nmatmul acc, x\nldweights v\nmatmul acc, x\n");
    const sim_trace_instr_t *ld = find_op(r, ISA_OP_LDWEIGHTS, 1);
    assert_true(ld->ii_ps < ld->model_ii_ps);
    char text[1024];
    sim_explain_instr(&trn1, r->prog, ld, NULL, text, sizeof text);
    assert_non_null(strstr(text, "loads in the background of the previous matmul"));
    run_free(r);
}

/* ---- transfer breakdowns ------------------------------------------------------------------- */

/* HBM [128 x 512] fp32 -> SBUF: 128 pieces of 2 KiB, efficiency 2048 / (2048 + 7 x 18.7) =
 * 0.93996; fixed cost dma.trigger_latency_ns + hbm.latency_ns + 8 descriptors; the data time is split among the
 * limits that set the rate, and nothing waits in the queue. */
static void test_dma_breakdown(void **state)
{
    (void)state;
    run_t *r = run_text(".hbm x fp32 [128, 512] input\n.core 0\n.sbuf y fp32 [128, 512]\n"
                        ".engine sp\ndma y, x, queue=0\ndma y, x, queue=0\n");
    assert_int_equal(r->rec.ndma, 2);
    const sim_trace_dma_t *d = &r->rec.dma[0];
    assert_int_equal(d->pieces, 128);
    assert_true(d->bytes_per_piece == 2048.0);
    double e = trn1.dma.piece_overhead_ns * trn1.dma.engine_bandwidth_gbps;
    assert_true(tu_close(d->efficiency, 2048.0 / (2048.0 + e), 1e-9, 0));
    /* alone, it waits for nothing ahead: everything before its data is its fixed cost. Its
     * 8 descriptors per engine (1120 ns) outlast its first descriptor plus its data (140 +
     * 8 x (2048 / 18.7 + 7) = 1072.3 ns): it lands when the descriptors are done */
    assert_int_equal(d->queue_wait_ps, 0);
    assert_int_equal(d->fixed_ps, d->start_ps - d->issue_ps);
    double lat = trn1.dma.trigger_latency_ns + trn1.hbm.latency_ns;
    assert_int_equal(d->end_ps, d->issue_ps + (uint64_t)llround((lat + 8 * trn1.dma.descriptor_ns) *
                                                                1000.0));
    uint64_t sum = 0;
    for (int l = 0; l < SIM_DMA_LIMIT_COUNT; l++)
        sum += d->limited_ps[l];
    assert_int_equal(sum, d->end_ps - d->start_ps);
    assert_true(d->dma_share > 0 && d->dma_share <= 1.0 + 1e-9);
    /* the second one's descriptors follow the first's in the queue: it lands 1120 ns later */
    const sim_trace_dma_t *d2 = &r->rec.dma[1];
    assert_int_equal(d2->end_ps, d->end_ps + (uint64_t)llround(8 * trn1.dma.descriptor_ns * 1000.0));
    assert_int_equal(d2->fixed_ps + d2->queue_wait_ps, d2->start_ps - d2->issue_ps);
    char text[1024];
    sim_explain_dma(d, text, sizeof text);
    assert_non_null(strstr(text, "128 pieces x 2048 B at efficiency 0.940"));
    assert_non_null(strstr(text, "rate set by:"));
    run_free(r);
}

/* Reading a matrix column-wise: one 4 B piece per element, efficiency 4 / (4 + 217.6). */
static void test_dma_small_pieces(void **state)
{
    (void)state;
    run_t *r = run_text(".hbm x fp32 [128, 128] input\n.core 0\n.sbuf y fp32 [128, 1]\n"
                        ".engine sp\ndma y, x[:, 0:1]\n");
    const sim_trace_dma_t *d = &r->rec.dma[0];
    assert_int_equal(d->pieces, 128);
    assert_true(d->bytes_per_piece == 4.0);
    double e = trn1.dma.piece_overhead_ns * trn1.dma.engine_bandwidth_gbps;
    assert_true(tu_close(d->efficiency, 4.0 / (4.0 + e), 1e-9, 0));
    run_free(r);
}

/* ---- the command line: verdicts, by-line profiles --------------------------------------------- */

static char dir[256];

static void put_file(const char *name, const char *text)
{
    assert_int_equal(tu_write_file(tu_join(dir, name), text, strlen(text)), 0);
}

/* `ncsim ARGS` in the temporary directory: its exit status; its output in *out (may be NULL). */
static int ncsim(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ncsim(char **out, const char *fmt, ...)
{
    char args[3072], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", dir, tu_ncsim(), args);
    char *o = NULL;
    int rc = tu_run(cmd, &o);
    if (out)
        *out = o;
    else
        free(o);
    return rc;
}

static yajl_val parse(const char *text)
{
    char err[256];
    yajl_val v = yajl_tree_parse(text, err, sizeof err);
    if (!v)
        fprintf(stderr, "JSON: %s\n%s\n", err, text);
    assert_non_null(v);
    return v;
}

static yajl_val get(yajl_val v, const char *key)
{
    const char *path[] = {key, NULL};
    return yajl_tree_get(v, path, yajl_t_any);
}

static double num(yajl_val v, const char *key)
{
    yajl_val x = get(v, key);
    return x && YAJL_IS_NUMBER(x) ? YAJL_GET_DOUBLE(x) : 0.0;
}

static const char *str(yajl_val v, const char *key)
{
    yajl_val x = get(v, key);
    return x && YAJL_IS_STRING(x) ? YAJL_GET_STRING(x) : "";
}

/* Programs built to be bound by one thing each. */
static const char prog_pe[] = ".core 0\n.sbuf w bf16 [128, 128]\n.sbuf x bf16 [128, 512]\n"
                              ".psum acc fp32 [128, 512]\n.engine pe\n.loop i = 0, 50\n"
                              "    matmul acc, w, x\n.endloop\n";
/* one transfer of 4-byte pieces (every other SBUF element): one descriptor each, DMA
 * efficiency 0.03 */
static const char prog_dma[] = ".hbm x fp32 [128, 2048] input\n.core 0\n.sbuf y fp32 [128, 4096]\n"
                               ".engine sp\n    dma y[:, 0:4096:2], x, queue=0\n";
/* four 1 MiB contiguous reads on four queues; with HBM at 50 GB/s, HBM is the limit */
static const char prog_hbm[] = ".hbm x fp32 [512, 2048] input\n.core 0\n"
                               ".sbuf y fp32 [128, 4, 2048]\n.engine sp\n.loop i = 0, 4\n"
                               "    dma y[:, i, :], x[i*128:(i+1)*128, :], queue=i\n.endloop\n";
/* act and dve hand one small tile back and forth: each waits for the other's completion */
static const char prog_sem[] =
    ".core 0\n.sbuf x fp32 [128, 4]\n.sem a\n.sem b\n.engine act\n.loop i = 0, 20\n"
    "    activate x, x, copy | wait b >= i | post a\n.endloop\n.engine dve\n"
    ".loop i = 0, 20\n    tensor_scalar x, x, add, 1.0 | wait a >= i+1 | post b\n.endloop\n";

/* The verdict's first candidate of `ncsim report FILE --json`, and its share. */
static void verdict_of(const char *file, char *what, size_t n, double *share)
{
    char *out = NULL;
    assert_int_equal(ncsim(&out, "report %s --json", file), 0);
    yajl_val v = parse(out);
    yajl_val b = get(v, "bounds");
    assert_true(b && YAJL_IS_ARRAY(b) && b->u.array.len > 0);
    snprintf(what, n, "%s", str(b->u.array.values[0], "what"));
    *share = num(b->u.array.values[0], "share_pct");
    assert_non_null(strstr(str(v, "verdict"), what));
    yajl_tree_free(v);
    free(out);
}

static void check_verdict(const char *name, const char *text, const char *set,
                          const char *expect, double min_share)
{
    char file[64], trace[64];
    snprintf(file, sizeof file, "%s.nca", name);
    snprintf(trace, sizeof trace, "%s.pftrace", name);
    put_file(file, text);
    assert_int_equal(ncsim(NULL, "run %s --timing-only -q %s --trace %s", file, set, trace), 0);
    char what[64];
    double share;
    verdict_of(trace, what, sizeof what, &share);
    if (strcmp(what, expect) != 0)
        fail_msg("%s: verdict '%s', expected '%s'", name, what, expect);
    assert_true(share >= min_share);
}

static void test_verdicts(void **state)
{
    (void)state;
    check_verdict("pe", prog_pe, "", "engine pe", 90.0);
    /* 262,144 descriptors of 4 bytes: 2.3 ms of the engines' descriptor stages, against
     * 118 us of data at 3% piece efficiency; with free descriptors the efficiency binds */
    check_verdict("dma", prog_dma, "", "DMA descriptors", 90.0);
    check_verdict("dma_pieces", prog_dma, "--set dma.descriptor_ns=0",
                  "DMA engines (piece efficiency)", 90.0);
    check_verdict("hbm", prog_hbm, "--set hbm.bandwidth_gbps=50", "HBM", 90.0);
    check_verdict("sem", prog_sem, "", "a chain of semaphore waits", 40.0); /* 46% with trn1 */
    /* the text report says it in one line */
    char *out = NULL;
    assert_int_equal(ncsim(&out, "report pe.pftrace"), 0);
    assert_non_null(strstr(out, "\nverdict: bound by engine pe: "));
    free(out);
    /* the advice for descriptor-bound DMA: descriptors are a core-wide resource, so it asks
     * for fewer, larger pieces and must not suggest more queues */
    out = NULL;
    assert_int_equal(ncsim(&out, "report dma.pftrace"), 0);
    assert_non_null(strstr(out, "fewer, larger contiguous pieces per DMA"));
    assert_null(strstr(out, "; more queues"));
    free(out);
}

/* By line, from the statistics and from the trace: the totals equal the engine totals, and
 * both sources agree line by line. */
static void test_by_line_totals(void **state)
{
    (void)state;
    const char *kernel = tu_source_path("kernels/demo_gemm.nca");
    assert_int_equal(ncsim(NULL, "run %s --timing-only -q --stats s.json --trace s.json.gz", kernel),
                     0);
    char *text = tu_read_file(tu_join(dir, "s.json"), NULL);
    assert_non_null(text);
    yajl_val st = parse(text);
    free(text);
    double busy = 0, stall = 0, lbusy = 0, lstall = 0, instrs = 0, linstrs = 0;
    yajl_val cores = get(st, "cores");
    for (size_t i = 0; i < cores->u.array.len; i++) {
        yajl_val e = get(cores->u.array.values[i], "engines");
        for (size_t k = 0; k < e->u.object.len; k++) {
            busy += num(e->u.object.values[k], "busy_ns");
            stall += num(e->u.object.values[k], "stall_ns");
            instrs += num(e->u.object.values[k], "instructions");
        }
    }
    yajl_val lines = get(st, "lines");
    assert_true(lines && lines->u.array.len >= 5);
    for (size_t i = 0; i < lines->u.array.len; i++) {
        lbusy += num(lines->u.array.values[i], "busy_ns");
        lstall += num(lines->u.array.values[i], "stall_ns");
        linstrs += num(lines->u.array.values[i], "instructions");
    }
    assert_true(busy > 0 && stall > 0);
    assert_true(tu_close(lbusy, busy, 1e-9, 0.01));
    assert_true(tu_close(lstall, stall, 1e-9, 0.01));
    assert_true(linstrs == instrs);
    /* the report of each source agrees */
    char *a = NULL, *b = NULL;
    assert_int_equal(ncsim(&a, "report s.json --by-line --json --source %s", kernel), 0);
    assert_int_equal(ncsim(&b, "report s.json.gz --by-line --json --source %s", kernel), 0);
    yajl_val ra = parse(a), rb = parse(b);
    yajl_val la = get(ra, "lines"), lb = get(rb, "lines");
    assert_int_equal(la->u.array.len, lb->u.array.len);
    double tbusy = 0;
    for (size_t i = 0; i < la->u.array.len; i++) {
        yajl_val x = la->u.array.values[i];
        yajl_val y = NULL;
        for (size_t j = 0; j < lb->u.array.len && !y; j++)
            if (num(lb->u.array.values[j], "line") == num(x, "line"))
                y = lb->u.array.values[j];
        assert_non_null(y);
        assert_true(tu_close(num(x, "busy_ns"), num(y, "busy_ns"), 1e-9, 0.01));
        assert_true(tu_close(num(x, "stall_ns"), num(y, "stall_ns"), 1e-9, 0.01));
        assert_true(tu_close(num(x, "dma_ns"), num(y, "dma_ns"), 1e-6, 0.01));
        assert_true(num(x, "instructions") == num(y, "instructions"));
        assert_true(num(x, "transfers") == num(y, "transfers"));
        tbusy += num(y, "busy_ns");
        /* sorted by cost, costliest first */
        if (i)
            assert_true(num(la->u.array.values[i - 1], "cost_ns") >= num(x, "cost_ns"));
    }
    assert_true(tu_close(tbusy, busy, 1e-9, 0.01));
    /* the source text of each line comes along */
    assert_non_null(strstr(a, "matmul acc[:, n%2, :]"));
    yajl_tree_free(ra);
    yajl_tree_free(rb);
    free(a);
    free(b);
    /* CSV: a header and a row per line */
    char *csv = NULL;
    assert_int_equal(ncsim(&csv, "report s.json --by-line --csv --source %s", kernel), 0);
    assert_int_equal(strncmp(csv, "line,instructions,busy_ns,", 26), 0);
    size_t rows = 0;
    for (const char *p = csv; *p; p++)
        rows += *p == '\n';
    assert_int_equal(rows, lines->u.array.len + 1);
    free(csv);
    /* --csv alone is a usage error */
    assert_int_equal(ncsim(NULL, "report s.json --csv"), 2);
    yajl_tree_free(st);
}

/* A program whose line map refers to its `.source` file (a compiler's output, e.g. an NKI
 * kernel): --by-line shows that file's lines; when the file cannot be read, the program's. */
static void test_by_line_source_file(void **state)
{
    (void)state;
    put_file("kern.py", "import nki\nres = nl.matmul(w, x)  # the kernel line\n");
    const char *body = ".core 0\n.sbuf w fp32 [128, 128]\n.sbuf x fp32 [128, 512]\n"
                       ".psum acc fp32 [128, 512]\n.engine pe\n.loc 2\nmatmul acc, w, x\n";
    char text[512];
    snprintf(text, sizeof text, ".source kern.py\n%s", body);
    put_file("src.nca", text);
    snprintf(text, sizeof text, ".source gone.py\n%s", body);
    put_file("gone.nca", text);
    char *out = NULL;
    assert_int_equal(ncsim(NULL, "run src.nca --timing-only -q --trace src.json"), 0);
    assert_int_equal(ncsim(&out, "report src.json --by-line"), 0);
    assert_non_null(strstr(out, "res = nl.matmul(w, x)  # the kernel line"));
    assert_null(strstr(out, ".core 0"));
    free(out);
    /* a trace beside its program in another directory: the .source is found beside it */
    assert_int_equal(mkdir(tu_join(dir, "sub"), 0777), 0);
    put_file("sub/k2.py", "\nout = nl.matmul(w, x)  # in sub/\n");
    snprintf(text, sizeof text, ".source k2.py\n%s", body);
    put_file("sub/s2.nca", text);
    assert_int_equal(ncsim(NULL, "run sub/s2.nca --timing-only -q --trace sub/s2.json"), 0);
    assert_int_equal(ncsim(&out, "report sub/s2.json --by-line --json"), 0);
    assert_non_null(strstr(out, "out = nl.matmul(w, x)  # in sub/"));
    free(out);
    /* the same program's trace elsewhere: no text, a note saying why and what to do */
    assert_int_equal(ncsim(NULL, "run sub/s2.nca --timing-only -q --trace s3.json"), 0);
    assert_int_equal(ncsim(&out, "report s3.json --by-line"), 0);
    assert_null(strstr(out, "out = nl.matmul"));
    assert_non_null(strstr(out, "note: no source text: 's2.nca'"));
    assert_non_null(strstr(out, "--source FILE"));
    free(out);
    assert_int_equal(ncsim(&out, "report s3.json --by-line --source sub/k2.py"), 0);
    assert_non_null(strstr(out, "out = nl.matmul(w, x)  # in sub/"));
    free(out);
    /* an unreadable .source: the program's own line 2 */
    assert_int_equal(ncsim(NULL, "run gone.nca --timing-only -q --trace gone.json"), 0);
    assert_int_equal(ncsim(&out, "report gone.json --by-line"), 0);
    assert_non_null(strstr(out, ".core 0"));
    free(out);
}

/* A statistics file is data: the program it names is never opened as written (issue 28). A
 * crafted "program" pointing at another file, a device, a FIFO, a directory, a symbolic link
 * or a huge file beside it shows no text and returns at once; --source names the text, and
 * is refused when it is not a regular file of bounded size. */
static void test_by_line_untrusted_names(void **state)
{
    (void)state;
    const char *kernel = tu_source_path("kernels/demo_gemm.nca");
    assert_int_equal(ncsim(NULL, "run %s --timing-only -q --stats h.json", kernel), 0);
    char *stats = tu_read_file(tu_join(dir, "h.json"), NULL);
    assert_non_null(stats);
    const char *at = strstr(stats, "\"program\": \"");
    assert_non_null(at);
    const char *end = strchr(at + 12, '"');
    assert_int_equal(mkdir(tu_join(dir, "elsewhere"), 0777), 0);
    char lines[2000] = "";
    for (int i = 1; i <= 100; i++) /* more lines than the demo GEMM has */
        snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "SECRET %d\n", i);
    put_file("elsewhere/secret.nca", lines);
    char secret[600], link_target[600];
    snprintf(secret, sizeof secret, "%s", tu_join(dir, "elsewhere/secret.nca"));
    snprintf(link_target, sizeof link_target, "%s", secret);
    assert_int_equal(symlink(link_target, tu_join(dir, "link.nca")), 0);
    assert_int_equal(mkfifo(tu_join(dir, "fifo.nca"), 0600), 0);
    assert_int_equal(mkdir(tu_join(dir, "adir.nca"), 0777), 0);
    FILE *big = fopen(tu_join(dir, "big.nca"), "w");
    assert_non_null(big);
    fclose(big);
    assert_int_equal(truncate(tu_join(dir, "big.nca"), (off_t)(65ll << 20)), 0);
    struct {
        const char *program, *why;
    } cases[] = {{secret, "not beside"},   {"/dev/zero", "No such file"},
                 {"link.nca", "symbolic link"}, {"fifo.nca", "a FIFO"},
                 {"adir.nca", "a directory"},   {"big.nca", "larger than"},
                 {"../elsewhere/../elsewhere/secret.nca", "No such file"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t cap = strlen(stats) + 700;
        char *crafted = malloc(cap);
        assert_non_null(crafted);
        snprintf(crafted, cap, "%.*s\"program\": \"%s%s", (int)(at - stats), stats,
                 cases[i].program, end);
        put_file("crafted.json", crafted);
        free(crafted);
        char *out = NULL;
        /* `timeout`: a FIFO that blocked the open would hang the test, not pass it */
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "cd %s && timeout 20 %s report crafted.json --by-line", dir,
                 tu_ncsim());
        int rc = tu_run(cmd, &out);
        if (rc != 0 || strstr(out, "SECRET") || !strstr(out, "note: no source text") ||
            !strstr(out, cases[i].why))
            fail_msg("program '%s': exit %d, output:\n%s", cases[i].program, rc, out);
        free(out);
    }
    free(stats);
    /* --source: the user's file is read; a device, FIFO or directory is refused (exit 3) */
    char *out = NULL;
    assert_int_equal(ncsim(&out, "report h.json --by-line --source %s", secret), 0);
    assert_non_null(strstr(out, "SECRET"));
    free(out);
    const char *refused[][2] = {{"/dev/zero", "character device"}, {"fifo.nca", "a FIFO"},
                                {"adir.nca", "a directory"},      {"big.nca", "larger than"},
                                {"nothere.py", "No such file"}};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "cd %s && timeout 20 %s report h.json --by-line --source %s",
                 dir, tu_ncsim(), refused[i][0]);
        int rc = tu_run(cmd, &out);
        if (rc != 3 || !strstr(out, refused[i][1]) || !strstr(out, "--source"))
            fail_msg("--source %s: exit %d, output:\n%s", refused[i][0], rc, out);
        free(out);
    }
    assert_int_equal(ncsim(NULL, "report h.json --source %s", secret), 2);
}

/* The trace files carry the breakdowns, in both formats. */
static void test_trace_cost_args(void **state)
{
    (void)state;
    put_file("fp32.nca", ".core 0\n.sbuf w fp32 [128, 128]\n.sbuf x fp32 [128, 512]\n"
                         ".psum acc fp32 [128, 512]\n.engine pe\nmatmul acc, w, x\n");
    const char *formats[] = {"json", "pftrace"};
    for (int f = 0; f < 2; f++) {
        char *out = NULL;
        assert_int_equal(ncsim(NULL, "run fp32.nca --timing-only -q --trace t.%s", formats[f]),
                         0);
        assert_int_equal(ncsim(&out, "report t.%s", formats[f]), 0);
        assert_non_null(strstr(out, "f=4 (fp32: pe.fp32_factor)"));
        assert_non_null(strstr(out, "= 2048 cycles = 731.429 ns"));
        free(out);
    }
}

/* Trace files store a transfer's breakdown as numbers; the readers rebuild the text, which
 * must be sim_explain_dma's. A sink of our own forwards to the trace writer and keeps
 * sim_explain_dma's text of every transfer; transfers on 8 queues share the engines and HBM,
 * so the limits and shares vary. */
typedef struct fwd {
    const sim_trace_sink_t *to;
    char text[64][1024];
    size_t n;
} fwd_t;

static void fwd_instr(void *ctx, const sim_trace_instr_t *r)
{
    fwd_t *f = ctx;
    f->to->instr(f->to->ctx, r);
}

static void fwd_dma(void *ctx, const sim_trace_dma_t *r)
{
    fwd_t *f = ctx;
    if (f->n < 64)
        sim_explain_dma(r, f->text[f->n++], sizeof f->text[0]);
    f->to->dma(f->to->ctx, r);
}

static void fwd_sem(void *ctx, const sim_trace_sem_t *r)
{
    fwd_t *f = ctx;
    f->to->sem(f->to->ctx, r);
}

static void fwd_bandwidth(void *ctx, int kind, uint32_t index, uint64_t time_ps, double gbps)
{
    fwd_t *f = ctx;
    f->to->bandwidth(f->to->ctx, kind, index, time_ps, gbps);
}

typedef struct dma_costs {
    char text[64][1024];
    size_t n;
} dma_costs_t;

static int on_dma_slice(void *ctx, const trc_record_t *r)
{
    dma_costs_t *c = ctx;
    if (r->kind == TRC_REC_SLICE && r->u.slice.kind == TRC_SLICE_DMA && c->n < 64)
        snprintf(c->text[c->n++], sizeof c->text[0], "%s",
                 r->u.slice.a.dma.cost ? r->u.slice.a.dma.cost : "");
    return 0;
}

static void test_trace_dma_cost_text(void **state)
{
    (void)state;
    isa_program_t *p = assemble(".hbm x fp32 [128, 512] input\n.hbm z fp32 [128, 512] output\n"
                                ".core 0\n.sbuf y fp32 [128, 8, 512]\n.engine sp\n"
                                ".loop i = 0, 8\n    dma y[:, i, :], x, queue=i\n.endloop\n"
                                "dma z, y[:, 0, :], queue=9\n"
                                "dma y[:, 1, 0:1], x[:, 0:1], queue=10\n"
                                ".loop i = 0, 4\n    dma y[:, i, :], x, queue=0\n.endloop\n");
    const char *formats[] = {"json", "json.gz", "pftrace"};
    for (int k = 0; k < 3; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/costs.%s", dir, formats[k]);
        sim_trace_options_t to;
        memset(&to, 0, sizeof to);
        to.path = path;
        to.timing_only = 1;
        sim_trace_file_t *tf = NULL;
        char err[1024];
        assert_int_equal(sim_trace_open(&to, p, &trn1, &tf, err, sizeof err), NCSIM_OK);
        fwd_t *f = calloc(1, sizeof *f);
        assert_non_null(f);
        f->to = sim_trace_sink(tf);
        sim_trace_sink_t sink = {f, fwd_instr, fwd_dma, fwd_sem, NULL, fwd_bandwidth};
        sim_options_t o;
        memset(&o, 0, sizeof o);
        o.arch = &trn1;
        o.timing_only = 1;
        o.trace = &sink;
        sim_t *sim = NULL;
        assert_int_equal(sim_create(p, &o, &sim, err, sizeof err), NCSIM_OK);
        assert_int_equal(sim_run(sim, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
        sim_destroy(sim);
        assert_int_equal(sim_trace_close(tf, NULL, err, sizeof err), NCSIM_OK);
        assert_int_equal(f->n, 14);
        dma_costs_t *c = calloc(1, sizeof *c);
        assert_non_null(c);
        assert_int_equal(trc_read(path, on_dma_slice, c, err, sizeof err), NCSIM_OK);
        assert_int_equal(c->n, f->n);
        int shared = 0;
        for (size_t i = 0; i < f->n; i++) {
            if (k == 0 && getenv("NCSIM_TEST_VERBOSE"))
                fprintf(stderr, "%s\n", f->text[i]);
            assert_string_equal(c->text[i], f->text[i]);
            shared += strstr(f->text[i], "DMA engines 1") != NULL ||
                      strstr(f->text[i], "HBM 1") != NULL;
        }
        assert_true(shared > 0); /* the test sees transfers limited by shared resources */
        free(c);
        free(f);
    }
    isa_program_free(p);
}

/* ---- ncsim diff ------------------------------------------------------------------------------ */

static double total_of(const char *stats)
{
    char *text = tu_read_file(tu_join(dir, stats), NULL);
    assert_non_null(text);
    yajl_val v = parse(text);
    double t = num(v, "total_ns");
    yajl_tree_free(v);
    free(text);
    return t;
}

/* B is the same kernel with an eighth of the HBM bandwidth: slower, by HBM. The deltas are
 * B - A, per engine and per line; --fail-if-slower gives the CI exit status. */
static void test_diff(void **state)
{
    (void)state;
    const char *kernel = tu_source_path("kernels/demo_gemm.nca");
    assert_int_equal(ncsim(NULL, "run %s --timing-only -q --stats da.json --trace da.pftrace",
                           kernel),
                     0);
    assert_int_equal(ncsim(NULL, "run %s --timing-only -q --stats db.json --trace db.json.gz "
                                 "--set hbm.bandwidth_gbps=100",
                           kernel),
                     0);
    double ta = total_of("da.json"), tb = total_of("db.json");
    assert_true(tb > ta * 1.2);
    const char *pairs[][2] = {{"da.json", "db.json"}, {"da.pftrace", "db.json.gz"},
                              {"da.json", "db.json.gz"}};
    for (int k = 0; k < 3; k++) {
        char *out = NULL;
        assert_int_equal(ncsim(&out, "diff %s %s --json", pairs[k][0], pairs[k][1]), 0);
        yajl_val v = parse(out);
        assert_true(tu_close(num(v, "total_a_ns"), ta, 1e-9, 0.001));
        assert_true(tu_close(num(v, "total_b_ns"), tb, 1e-9, 0.001));
        assert_true(tu_close(num(v, "delta_ns"), tb - ta, 1e-9, 0.001));
        assert_true(tu_close(num(v, "delta_pct"), 100.0 * (tb - ta) / ta, 1e-6, 1e-6));
        yajl_val engines = get(v, "engines");
        assert_true(engines && engines->u.array.len >= 8);
        for (size_t i = 0; i < engines->u.array.len; i++) {
            yajl_val e = engines->u.array.values[i];
            assert_true(tu_close(num(e, "stall_delta_ns"),
                                 num(e, "stall_b_ns") - num(e, "stall_a_ns"), 1e-9, 0.001));
            assert_true(tu_close(num(e, "busy_delta_ns"), 0.0, 0, 0.01)); /* same work */
        }
        yajl_val lines = get(v, "lines");
        assert_true(lines && lines->u.array.len >= 5);
        double sum = 0;
        for (size_t i = 0; i < lines->u.array.len; i++) {
            yajl_val l = lines->u.array.values[i];
            const char *pa[] = {"a", "cost_ns", NULL}, *pb[] = {"b", "cost_ns", NULL};
            double ca = YAJL_GET_DOUBLE(yajl_tree_get(l, pa, yajl_t_number));
            double cb = YAJL_GET_DOUBLE(yajl_tree_get(l, pb, yajl_t_number));
            assert_true(tu_close(num(l, "cost_delta_ns"), cb - ca, 1e-9, 0.001));
            sum += fabs(num(l, "cost_delta_ns"));
            if (i) /* largest change first */
                assert_true(fabs(num(lines->u.array.values[i - 1], "cost_delta_ns")) >=
                            fabs(num(l, "cost_delta_ns")));
        }
        assert_true(sum > 0);
        assert_non_null(strstr(str(v, "verdict_b"), "bound by HBM"));
        yajl_tree_free(v);
        free(out);
    }
    /* the critical paths side by side (traces only) */
    char *out = NULL;
    assert_int_equal(ncsim(&out, "diff da.pftrace db.json.gz"), 0);
    assert_non_null(strstr(out, "B is slower"));
    assert_non_null(strstr(out, "the paths side by side"));
    free(out);
    assert_int_equal(ncsim(&out, "diff da.json db.json"), 0);
    assert_non_null(strstr(out, "not available: A and B are a statistics file"));
    free(out);
    /* exit status for CI */
    double slower = 100.0 * (tb - ta) / ta;
    assert_int_equal(ncsim(NULL, "diff da.json db.json --fail-if-slower %.3f", slower - 1), 1);
    assert_int_equal(ncsim(NULL, "diff da.json db.json --fail-if-slower %.3f", slower + 1), 0);
    assert_int_equal(ncsim(NULL, "diff db.json da.json --fail-if-slower 0"), 0);
    assert_int_equal(ncsim(NULL, "diff da.json da.pftrace --fail-if-slower 0"), 0);
    /* usage and I/O errors */
    assert_int_equal(ncsim(NULL, "diff da.json"), 2);
    assert_int_equal(ncsim(NULL, "diff da.json db.json --fail-if-slower x"), 2);
    assert_int_equal(ncsim(NULL, "diff da.json nothere.json"), 3);
}

/* ---- live SBUF / PSUM ---------------------------------------------------------------------------- */

typedef struct ctr {
    const char *name;
    uint64_t ts[64];
    double v[64];
    int n;
} ctr_t;

static int on_counter(void *ctx, const trc_record_t *r)
{
    ctr_t *c = ctx;
    if (r->kind == TRC_REC_COUNTER && r->u.counter.pid == trc_pid_core(0) &&
        strcmp(r->u.counter.name, c->name) == 0 && c->n < 64) {
        c->ts[c->n] = r->u.counter.ts_ps;
        c->v[c->n++] = r->u.counter.value;
    }
    return 0;
}

static void read_counter(const char *trace, ctr_t *c, const char *name)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    char err[256];
    assert_int_equal(trc_read(tu_join(dir, trace), on_counter, c, err, sizeof err), NCSIM_OK);
    assert_true(c->n > 0);
}

/* Three 256 KiB tensors on VectorE: a is written, copied to b, c written, copied to b. SBUF in
 * use rises to 768 KiB and falls: a dies when its only read (the first copy, which waited for
 * the memset's completion) completes, at 2 x (512 + static overhead + pipeline latency) DVE
 * cycles (2 x (512 + 60 + 40) = 1092.857 ns with the trn1 preset of the time); b and c when the
 * second copy completes. PSUM: written by a matmul, read by an activate, then free. */
static void test_live_counters(void **state)
{
    (void)state;
    put_file("live.nca", ".core 0\n.sbuf a fp32 [128, 512]\n.sbuf b fp32 [128, 512]\n"
                         ".sbuf c fp32 [128, 512]\n.engine dve\n    memset a, 1.0\n"
                         "    tensor_copy b, a\n    memset c, 2.0\n    tensor_copy b, c\n");
    for (int f = 0; f < 2; f++) {
        const char *trace = f ? "live.pftrace" : "live.json";
        assert_int_equal(ncsim(NULL, "run live.nca --timing-only -q --trace %s", trace), 0);
        ctr_t c;
        read_counter(trace, &c, "SBUF in use");
        double max = 0;
        int fell = 0;
        for (int i = 0; i < c.n; i++) {
            if (c.v[i] > max)
                max = c.v[i];
            if (i && c.v[i] < c.v[i - 1] && c.v[i] > 0) {
                fell = 1;
                assert_int_equal(c.v[i], 2 * 262144.0);
                double lat = 512 + trn1.dve.static_overhead_cycles + trn1.dve.latency_cycles;
                uint64_t expect = (uint64_t)llround(2.0 * lat / trn1.dve.clock_ghz * 1000.0);
                uint64_t tol = f ? 1000 : 1; /* .pftrace times are whole ns */
                assert_true(c.ts[i] + tol >= expect && c.ts[i] <= expect + tol);
            }
        }
        assert_true(max == 3 * 262144.0);
        assert_true(fell);
        assert_true(c.v[c.n - 1] == 0.0); /* nothing live at the end */
    }
    put_file("psum.nca", ".core 0\n.sbuf w bf16 [128, 128]\n.sbuf x bf16 [128, 512]\n"
                         ".sbuf y fp32 [128, 512]\n.psum acc fp32 [128, 512]\n.engine pe\n"
                         "    matmul acc, w, x\n.engine act\n    activate y, acc, copy\n");
    assert_int_equal(ncsim(NULL, "run psum.nca --timing-only -q --trace psum.json"), 0);
    ctr_t p;
    read_counter("psum.json", &p, "PSUM in use");
    double max = 0;
    for (int i = 0; i < p.n; i++)
        max = p.v[i] > max ? p.v[i] : max;
    assert_true(max == 128.0 * 512 * 4);
    assert_true(p.v[p.n - 1] == 0.0);
}

/* ---- --dump ------------------------------------------------------------------------------------- */

/* D = W^T X into PSUM, copied to SBUF with exp, stored to a scratch tensor, then y cleared:
 * every space. Line 19 is the activate. */
static const char prog_dump[] =
    ".hbm w bf16 [128, 128] input\n"                                /* 1 */
    ".hbm x bf16 [128, 64] input\n"                                 /* 2 */
    ".hbm s fp32 [128, 64] scratch\n"                               /* 3 */
    ".core 0\n"                                                     /* 4 */
    ".sbuf ws bf16 [128, 128]\n"                                    /* 5 */
    ".sbuf xs bf16 [128, 64]\n"                                     /* 6 */
    ".psum acc fp32 [128, 64]\n"                                    /* 7 */
    ".sbuf y fp32 [128, 64]\n"                                      /* 8 */
    ".sem in\n.sem mm\n.sem done\n.sem stored\n"                 /* 9-12 */
    ".engine sp\n"                                                  /* 13 */
    "    dma ws, w, queue=0 | post in\n"                            /* 14 */
    "    dma xs, x, queue=1 | post in\n"                            /* 15 */
    ".engine pe\n"                                                  /* 16 */
    "    matmul acc, ws, xs | wait in >= 2 | post mm\n"             /* 17 */
    ".engine act\n"                                                 /* 18 */
    "    activate y, acc, exp | wait mm >= 1 | post done\n"         /* 19 */
    "    tensor_scalar y, y, multiply, 0.0 | wait stored >= 1\n"    /* 20 */
    ".engine pool\n"                                                /* 21 */
    "    dma s, y | wait done >= 1 | post stored\n";                /* 22 */

static void test_dump(void **state)
{
    (void)state;
    put_file("dump.nca", prog_dump);
    char gen[512];
    snprintf(gen, sizeof gen,
             "import numpy as np, sys\n"
             "d = sys.argv[1]\n"
             "rng = np.random.default_rng(7)\n"
             "np.save(d + '/w.npy', (rng.integers(-4, 5, (128, 128)) / 8).astype(np.float32))\n"
             "np.save(d + '/x.npy', (rng.integers(-4, 5, (128, 64)) / 8).astype(np.float32))\n");
    char args[300];
    snprintf(args, sizeof args, "%s", dir);
    assert_int_equal(tu_python(gen, args, NULL), 0);
    /* at the end: the PSUM product, SBUF tiles, the scratch tensor; y was cleared after */
    assert_int_equal(ncsim(NULL, "run dump.nca -q --in w=w.npy --in x=x.npy --dump acc=acc.npy "
                                 "--dump ws@0=ws.npy --dump y=y_end.npy --dump s=s.npy"),
                     0);
    /* when line 19 (the activate) has taken effect: y = exp(acc) */
    assert_int_equal(ncsim(NULL, "run dump.nca -q --in w=w.npy --in x=x.npy --dump y=y18.npy "
                                 "--dump-at 19"),
                     0);
    /* line 17, `matmul acc, ws, xs`, is an ldweights and a matmul: after the matmul */
    assert_int_equal(ncsim(NULL, "run dump.nca -q --in w=w.npy --in x=x.npy --dump acc=acc17.npy "
                                 "--dump-at 17"),
                     0);
    char check[2048];
    snprintf(check, sizeof check,
             "import numpy as np, sys\n"
             "d = sys.argv[1]\n"
             "w = np.load(d + '/w.npy'); x = np.load(d + '/x.npy')\n"
             "acc = np.load(d + '/acc.npy'); ws = np.load(d + '/ws.npy')\n"
             "y_end = np.load(d + '/y_end.npy'); s = np.load(d + '/s.npy')\n"
             "y18 = np.load(d + '/y18.npy')\n"
             "ref = w.T.astype(np.float64) @ x.astype(np.float64)\n"
             "assert acc.shape == (128, 64) and acc.dtype == np.float32, (acc.shape, acc.dtype)\n"
             "assert np.array_equal(acc, ref.astype(np.float32)), 'psum'\n"
             "assert np.array_equal(np.load(d + '/acc17.npy'), acc), 'psum at line 17'\n"
             "assert ws.shape == (128, 128) and np.array_equal(ws, w), 'sbuf'\n"
             "assert np.all(y_end == 0), 'y at the end'\n"
             "e = np.exp(ref)\n"
             "assert np.allclose(y18, e, rtol=2e-3, atol=1e-6), np.max(np.abs(y18 - e) / e)\n"
             "assert np.array_equal(s, y18), 'scratch holds exp(acc): stored before y was cleared'\n"
             "print('ok')\n");
    char *out = NULL;
    int rc = tu_python(check, args, &out);
    if (rc != 0)
        fprintf(stderr, "%s\n", out ? out : "");
    assert_int_equal(rc, 0);
    free(out);
    /* errors: unknown tensor, a line with no instruction, timing-only, bad syntax */
    assert_int_equal(ncsim(NULL, "run dump.nca -q --random-inputs 1 --dump nope=n.npy"), 2);
    assert_int_equal(ncsim(NULL, "run dump.nca -q --random-inputs 1 --dump y=y.npy --dump-at 4"),
                     2);
    assert_int_equal(ncsim(NULL, "run dump.nca -q --timing-only --dump y=y.npy"), 2);
    assert_int_equal(ncsim(NULL, "run dump.nca -q --random-inputs 1 --dump y"), 2);
    assert_int_equal(ncsim(NULL, "run dump.nca -q --random-inputs 1 --dump y@x=y.npy"), 2);
    assert_int_equal(ncsim(NULL, "run dump.nca -q --random-inputs 1 --dump y@3=y.npy"), 2);
    assert_int_equal(ncsim(NULL, "run dump.nca -q --random-inputs 1 --dump-at 19"), 2);
    assert_int_equal(ncsim(NULL, "run dump.nca -q --random-inputs 1 --dump y=/nonexistent/y.npy"),
                     3);
}

/* docs/explain.md's session: each version is faster, and the verdicts it quotes hold. */
static void test_doc_session(void **state)
{
    (void)state;
    const char *v[] = {"v1_transposed", "v2_layout", "v3_bf16", "v4_overlap"};
    const char *verdict[] = {"DMA descriptors", "DMA engines (bandwidth)",
                             "DMA engines (bandwidth)", "DMA queues (per-transfer cap)"};
    double prev = 0;
    for (int i = 0; i < 4; i++) {
        char path[128], trace[64], stats[64];
        snprintf(path, sizeof path, "kernels/explain/%s.nca", v[i]);
        snprintf(trace, sizeof trace, "%s.pftrace", v[i]);
        snprintf(stats, sizeof stats, "%s.json", v[i]);
        assert_int_equal(ncsim(NULL, "run %s --random-inputs 1 -q --trace %s --stats %s",
                               tu_source_path(path), trace, stats),
                         0);
        char what[64];
        double share;
        verdict_of(trace, what, sizeof what, &share);
        if (strcmp(what, verdict[i]) != 0)
            fail_msg("%s: verdict '%s', docs/explain.md says '%s'", v[i], what, verdict[i]);
        double t = total_of(stats);
        if (i)
            assert_true(t < prev);
        prev = t;
    }
    assert_int_equal(ncsim(NULL, "diff v3_bf16.json v4_overlap.json --fail-if-slower 2"), 0);
    assert_int_equal(ncsim(NULL, "diff v4_overlap.json v3_bf16.json --fail-if-slower 2"), 1);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_fp32_breakdown),
        cmocka_unit_test(test_stride_breakdown),
        cmocka_unit_test(test_tensor_tensor_breakdown),
        cmocka_unit_test(test_background_ldweights_note),
        cmocka_unit_test(test_dma_breakdown),
        cmocka_unit_test(test_dma_small_pieces),
        cmocka_unit_test(test_verdicts),
        cmocka_unit_test(test_by_line_totals),
        cmocka_unit_test(test_by_line_source_file),
        cmocka_unit_test(test_by_line_untrusted_names),
        cmocka_unit_test(test_trace_cost_args),
        cmocka_unit_test(test_trace_dma_cost_text),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_live_counters),
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_doc_session),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
