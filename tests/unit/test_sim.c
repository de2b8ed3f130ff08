/*
 * test_sim.c -- the simulator core: timing of single instructions against the published
 * formulas, semaphores, the same-engine interlock, the NC-v2 port conflicts, DMA/compute
 * overlap, deadlock and run-time error reports, determinism, and the ncsim run command line.
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
#include "asm.h"
#include "sim.h"
#include "testutil.h"

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

typedef struct run {
    isa_program_t *prog;
    sim_t *sim;
    ncsim_status_t status;
} run_t;

static run_t run_text(const char *text, int timing_only)
{
    run_t r;
    r.prog = assemble(text);
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = &trn1;
    o.timing_only = timing_only;
    char err[1024];
    assert_int_equal(sim_create(r.prog, &o, &r.sim, err, sizeof err), NCSIM_OK);
    r.status = sim_run(r.sim, SIM_RUN_UNTIL_IDLE, 0);
    return r;
}

static void run_free(run_t *r)
{
    sim_destroy(r->sim);
    isa_program_free(r->prog);
}

static double total_ns(run_t *r)
{
    return (double)sim_stats(r->sim)->total_ps / 1000.0;
}

static const sim_engine_stats_t *eng(run_t *r, uint32_t core, isa_engine_t e)
{
    return &sim_stats(r->sim)->cores[core].engines[e];
}

/* One bf16 128x128x512 matmul: II = 512 PE cycles at 2.8 GHz = 182.857 ns (ISA-OLD); it
 * completes after the II plus the pe pipeline latency of the preset. */
static void test_matmul_timing(void **state)
{
    (void)state;
    run_t r = run_text(".sbuf w bf16 [128, 128]\n.sbuf m bf16 [128, 512]\n"
                       ".psum o fp32 [128, 512]\n.engine pe\nmatmul o, w, m\n",
                       1);
    assert_int_equal(r.status, NCSIM_OK);
    const sim_engine_stats_t *pe = eng(&r, 0, ISA_ENGINE_PE);
    assert_int_equal(pe->instructions, 2);
    /* ldweights: max(64, 128) / 4 = 32 cycles; matmul 512 cycles */
    double busy = (double)pe->busy_ps / 1000.0;
    assert_true(tu_close(busy, (32.0 + 512.0) / 2.8, 1e-3, 0.01));
    double expect_end = (32.0 + 512.0 + trn1.pe.latency_cycles) / 2.8;
    assert_true(tu_close(total_ns(&r), expect_end, 1e-3, 0.01));
    assert_int_equal(sim_stats(r.sim)->tensor_flops, 2ull * 128 * 128 * 512);
    run_free(&r);
}

/* act instructions back to back: each II = max(64, N) ScalarE cycles; independent ones
 * pipeline, so n of them end at n*II + the last one's latency. */
static void test_act_pipelining(void **state)
{
    (void)state;
    run_t r = run_text(".sbuf x fp32 [128, 1024]\n.sbuf y fp32 [128, 1024]\n.engine act\n"
                       ".loop i = 0, 4\nactivate y[:, i*256:(i+1)*256], x[:, i*256:(i+1)*256], "
                       "exp\n.endloop\n",
                       1);
    const sim_engine_stats_t *act = eng(&r, 0, ISA_ENGINE_ACT);
    assert_int_equal(act->instructions, 4);
    double ii = 256.0 / 1.4;
    assert_true(tu_close((double)act->busy_ps / 1000.0, 4 * ii, 1e-3, 0.01));
    assert_int_equal(act->stall_ps, 0);
    assert_true(total_ns(&r) > 4 * ii && total_ns(&r) < 4 * ii + 300.0);
    run_free(&r);
}

/* A dependent instruction on the same engine waits for the previous one to complete
 * (ISA.md 8): the stall shows up as interlock time. */
static void test_interlock(void **state)
{
    (void)state;
    run_t dep = run_text(".sbuf x fp32 [128, 64]\n.engine dve\n"
                         "tensor_scalar x, x, add, 1.0\ntensor_scalar x, x, add, 1.0\n",
                         1);
    run_t ind = run_text(".sbuf x fp32 [128, 64]\n.sbuf y fp32 [128, 64]\n.engine dve\n"
                         "tensor_scalar x, x, add, 1.0\ntensor_scalar y, y, add, 1.0\n",
                         1);
    const sim_engine_stats_t *d = eng(&dep, 0, ISA_ENGINE_DVE);
    const sim_engine_stats_t *i = eng(&ind, 0, ISA_ENGINE_DVE);
    assert_true(d->stall_by[SIM_STALL_INTERLOCK] > 0);
    assert_int_equal(i->stall_by[SIM_STALL_INTERLOCK], 0);
    assert_true(total_ns(&dep) > total_ns(&ind));
    run_free(&dep);
    run_free(&ind);
}

/* dve and pool cannot use SBUF at the same time (NC-v2): the loser waits, counted as port
 * stall; act and pool can. */
static void test_port_conflicts(void **state)
{
    (void)state;
    run_t c = run_text(".sbuf x fp32 [128, 2048]\n.sbuf y fp32 [128, 2048]\n"
                       ".engine dve\ntensor_copy x, x\n.engine pool\ntensor_copy y, y\n",
                       1);
    uint64_t port = eng(&c, 0, ISA_ENGINE_DVE)->stall_by[SIM_STALL_PORT] +
                    eng(&c, 0, ISA_ENGINE_POOL)->stall_by[SIM_STALL_PORT];
    assert_true(port > 0);
    run_t n = run_text(".sbuf x fp32 [128, 2048]\n.sbuf y fp32 [128, 2048]\n"
                       ".engine act\ntensor_copy x, x\n.engine pool\ntensor_copy y, y\n",
                       1);
    assert_int_equal(eng(&n, 0, ISA_ENGINE_ACT)->stall_by[SIM_STALL_PORT] +
                         eng(&n, 0, ISA_ENGINE_POOL)->stall_by[SIM_STALL_PORT],
                     0);
    run_free(&c);
    run_free(&n);
}

/* DMA and compute overlap: the total is below the sum of the parts. */
static void test_dma_compute_overlap(void **state)
{
    (void)state;
    const char *dma_only = ".hbm a fp32 [128, 4096] input\n.sbuf s fp32 [128, 4096]\n"
                           ".engine sp\ndma s, a\n";
    const char *compute_only = ".sbuf t fp32 [128, 4096]\n.engine act\n"
                               ".loop i = 0, 8\nactivate t, t, exp\n.endloop\n";
    const char *both = ".hbm a fp32 [128, 4096] input\n.sbuf s fp32 [128, 4096]\n"
                       ".sbuf t fp32 [128, 4096]\n.engine sp\ndma s, a\n.engine act\n"
                       ".loop i = 0, 8\nactivate t, t, exp\n.endloop\n";
    run_t d = run_text(dma_only, 1), c = run_text(compute_only, 1), b = run_text(both, 1);
    double td = total_ns(&d), tc = total_ns(&c), tb = total_ns(&b);
    assert_true(tb < td + tc);
    assert_true(tb >= td - 1e-6 && tb >= tc - 1e-6);
    /* the DMA moved 2 MiB from HBM */
    assert_int_equal(sim_stats(d.sim)->hbm_read_bytes, 128ull * 4096 * 4);
    assert_int_equal(sim_stats(d.sim)->cores[0].dma_bytes, 128ull * 4096 * 4);
    run_free(&d);
    run_free(&c);
    run_free(&b);
}

/* Waits hold an instruction until the semaphore reaches the value; posts fire at completion. */
static void test_semaphore_order(void **state)
{
    (void)state;
    run_t r = run_text(".sbuf x fp32 [128, 512]\n.sem s\n.sem t = 5\n"
                       ".engine act\nactivate x, x, exp | post s += 2\n"
                       ".engine dve\ntensor_scalar x, x, add, 1.0 | wait s == 2 | wait t >= 5\n",
                       1);
    assert_int_equal(r.status, NCSIM_OK);
    const sim_engine_stats_t *dve = eng(&r, 0, ISA_ENGINE_DVE);
    const sim_engine_stats_t *act = eng(&r, 0, ISA_ENGINE_ACT);
    assert_true(dve->stall_by[SIM_STALL_SEMAPHORE] > 0);
    /* dve started only after act completed */
    assert_true(dve->end_ps > act->end_ps);
    run_free(&r);
}

static void test_deadlock_report(void **state)
{
    (void)state;
    run_t r = run_text(".sbuf x fp32 [128, 8]\n.sem a\n.sem b\n"
                       ".engine act\nactivate x, x, exp | wait a >= 1 | post b\n"
                       ".engine dve\nmemset x, 0 | wait b >= 1 | post a\n",
                       1);
    assert_int_equal(r.status, NCSIM_PROGRAM);
    const char *e = sim_error(r.sim);
    assert_non_null(strstr(e, "deadlock"));
    assert_non_null(strstr(e, "t.nca:5: core 0 act instruction 0"));
    assert_non_null(strstr(e, "waits for a >= 1 (now 0)"));
    assert_non_null(strstr(e, "t.nca:7: core 0 dve instruction 0"));
    assert_non_null(strstr(e, "semaphores on core 0: a=0 b=0"));
    assert_false(sim_finished(r.sim));
    run_free(&r);
}

/* Run-time errors name core, engine, instruction index and line. */
static void test_runtime_error_location(void **state)
{
    (void)state;
    run_t r = run_text(".sbuf m bf16 [128, 512]\n.psum o fp32 [128, 512]\n.engine dve\n"
                       "memset o, 0\n.engine pe\nmatmul o, m, acc\n",
                       0);
    assert_int_equal(r.status, NCSIM_PROGRAM);
    const char *e = sim_error(r.sim);
    assert_non_null(strstr(e, "t.nca:6: core 0 pe instruction 0"));
    run_free(&r);
}

/* Same program, same seed: identical statistics (and timing-only gives the same times). */
static void test_determinism(void **state)
{
    (void)state;
    char *text = tu_read_file(tu_source_path("kernels/demo_gemm.nca"), NULL);
    assert_non_null(text);
    run_t a = run_text(text, 0), b = run_text(text, 0), c = run_text(text, 1);
    free(text);
    assert_int_equal(a.status, NCSIM_OK);
    assert_int_equal(sim_stats(a.sim)->total_ps, sim_stats(b.sim)->total_ps);
    assert_int_equal(sim_stats(a.sim)->total_ps, sim_stats(c.sim)->total_ps);
    assert_int_equal(sim_stats(a.sim)->events, sim_stats(b.sim)->events);
    for (int e = 0; e < ISA_ENGINE_COUNT; e++)
        assert_int_equal(eng(&a, 1, (isa_engine_t)e)->stall_ps,
                         eng(&b, 1, (isa_engine_t)e)->stall_ps);
    /* both cores did the same work */
    assert_int_equal(sim_stats(a.sim)->cores[0].end_ps, sim_stats(a.sim)->cores[1].end_ps);
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

/* ---- shortcuts of the run loop change nothing ----------------------------------------------------
 * An engine runs its next event itself when nothing is queued before it (counted as the
 * event), except when sim_run steps one event at a time; the cost memo evicts blocks when its
 * slots are few. Both must give the same times, statistics, trace records and event count. */

typedef struct rec_log {
    sim_trace_sink_t sink; /* the run's, kept while it lives */
    uint64_t v[4096];
    size_t n;
} rec_log_t;

static void log_val(rec_log_t *l, uint64_t x)
{
    if (l->n < sizeof l->v / sizeof l->v[0])
        l->v[l->n] = x;
    l->n++;
}

static void log_instr(void *ctx, const sim_trace_instr_t *r)
{
    rec_log_t *l = ctx;
    log_val(l, (uint64_t)r->core << 40 | (uint64_t)r->engine << 32 | r->index);
    log_val(l, r->ready_ps);
    log_val(l, r->start_ps);
    log_val(l, r->end_ps);
    log_val(l, r->ii_ps);
    for (int k = 0; k < SIM_STALL_COUNT; k++)
        log_val(l, r->stall_by[k]);
}

static void log_dma(void *ctx, const sim_trace_dma_t *r)
{
    rec_log_t *l = ctx;
    log_val(l, r->index);
    log_val(l, r->issue_ps);
    log_val(l, r->start_ps);
    log_val(l, r->end_ps);
}

static void log_sem(void *ctx, const sim_trace_sem_t *r)
{
    rec_log_t *l = ctx;
    log_val(l, (uint64_t)r->sem << 32 | (uint32_t)r->value);
    log_val(l, r->time_ps);
}

/* Run `p` to the end: in one sim_run, or one event per call; with `slots` memo slots (0:
 * the default). */
static sim_t *run_logged(const isa_program_t *p, int step, uint32_t slots, rec_log_t *log)
{
    sim_trace_sink_t sink = {log, log_instr, log_dma, log_sem, NULL, NULL};
    log->sink = sink;
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = &trn1;
    o.timing_only = 1;
    o.trace = &log->sink;
    char err[1024];
    sim_t *s;
    assert_int_equal(sim_create(p, &o, &s, err, sizeof err), NCSIM_OK);
    if (slots)
        sim_limit_memo(s, slots);
    if (step) {
        uint64_t calls = 0;
        while (!sim_finished(s)) {
            assert_int_equal(sim_run(s, SIM_RUN_ONE_EVENT, 0), NCSIM_OK);
            calls++;
        }
        /* one event per call (the last call finds the queue empty) */
        assert_true(calls >= sim_stats(s)->events);
    } else {
        assert_int_equal(sim_run(s, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
    }
    return s;
}

static void assert_same_run(sim_t *a, const rec_log_t *la, sim_t *b, const rec_log_t *lb)
{
    const sim_stats_t *x = sim_stats(a), *y = sim_stats(b);
    assert_int_equal(x->total_ps, y->total_ps);
    assert_int_equal(x->events, y->events);
    assert_int_equal(x->instructions, y->instructions);
    for (uint32_t c = 0; c < x->ncores; c++) {
        assert_int_equal(x->cores[c].dma_busy_ps, y->cores[c].dma_busy_ps);
        for (int e = 0; e < ISA_ENGINE_COUNT; e++)
            assert_memory_equal(&x->cores[c].engines[e], &y->cores[c].engines[e],
                                sizeof x->cores[c].engines[e]);
    }
    assert_int_equal(x->nlines, y->nlines);
    assert_memory_equal(x->lines, y->lines, x->nlines * sizeof *x->lines);
    assert_int_equal(la->n, lb->n);
    assert_true(la->n > 0 && la->n <= sizeof la->v / sizeof la->v[0]);
    assert_memory_equal(la->v, lb->v, la->n * sizeof la->v[0]);
}

static void test_shortcuts_change_nothing(void **state)
{
    (void)state;
    /* software-pipelined load / matmul / gelu / store (bench_speed's program, 40 steps):
     * engines woken by semaphores with nothing else queued, DMAs sharing bandwidth */
    const char *loop =
        ".hbm x bf16 [8192, 512] input\n.hbm w bf16 [128, 128] input\n"
        ".hbm y fp32 [8192, 512] output\n.core 0\n.sbuf ws bf16 [128, 128]\n"
        ".sbuf xs bf16 [128, 4, 512]\n.sbuf ys fp32 [128, 4, 512]\n"
        ".psum acc fp32 [128, 4, 512]\n"
        ".sem wl\n.sem loaded\n.sem mm\n.sem act_done\n.sem stored\n.sem done\n"
        ".let T = 40\n.engine sp\ndma ws, w, queue=15 | post wl\n"
        ".loop i = 0, T + 2\n"
        "    .if i < T\n"
        "        .let r = (i % 64) * 128\n"
        "        dma xs[:, i % 4, :], x[r:r + 128, :], queue=i % 8 | wait act_done >= i - 3 "
        "| post loaded\n"
        "    .endif\n"
        "    .if i >= 2\n"
        "        .let j = i - 2\n"
        "        dma y[(j % 64) * 128:(j % 64 + 1) * 128, :], ys[:, j % 4, :], "
        "queue=8 + j % 8 | wait act_done >= j + 1 | post stored\n"
        "    .endif\n"
        ".endloop\n"
        "nop | wait stored >= T | post done\n.engine pe\nldweights ws | wait wl >= 1\n"
        ".loop i = 0, T\n"
        "    matmul acc[:, i % 4, :], xs[:, i % 4, :] | wait loaded >= i + 1 "
        "| wait act_done >= i - 3 | post mm\n"
        ".endloop\n"
        "nop | wait done >= 1\n.engine act\n"
        ".loop i = 0, T\n"
        "    activate ys[:, i % 4, :], acc[:, i % 4, :], gelu, scale=0.125 "
        "| wait mm >= i + 1 | wait stored >= i - 3 | post act_done\n"
        ".endloop\n";
    char *gemm = tu_read_file(tu_source_path("kernels/demo_gemm.nca"), NULL);
    assert_non_null(gemm);
    const char *texts[2] = {loop, gemm};
    for (int t = 0; t < 2; t++) {
        isa_program_t *p = assemble(texts[t]);
        static rec_log_t la, lb, lc;
        memset(&la, 0, sizeof la);
        memset(&lb, 0, sizeof lb);
        memset(&lc, 0, sizeof lc);
        sim_t *a = run_logged(p, 0, 0, &la);  /* shortcuts taken, memo holds every block */
        sim_t *b = run_logged(p, 1, 0, &lb);  /* one event per call: no shortcut */
        sim_t *c = run_logged(p, 0, 16, &lc); /* 16 memo slots: blocks evict each other */
        assert_true(p->nargs > 16);
        assert_same_run(a, &la, b, &lb);
        assert_same_run(a, &la, c, &lc);
        sim_destroy(a);
        sim_destroy(b);
        sim_destroy(c);
        isa_program_free(p);
    }
    free(gemm);
}

/* The command line: .npy in and out (inout tensor through SBUF), exit codes, stats JSON. */
static void test_cli_run(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char path[512], cmd[4096];
    snprintf(path, sizeof path, "%s/copy.nca", dir);
    const char *prog = ".hbm x fp16 [128, 64] inout\n.hbm y bf16 [128, 64] output\n"
                       ".sbuf s fp32 [128, 64]\n.sem in\n.sem done\n.sem out\n"
                       ".engine sp\ndma s, x | post in\ndma x, s | wait done >= 1 | post out\n"
                       "dma y, s | wait done >= 1\n"
                       ".engine act\nactivate s, s, square | wait in >= 1 | post done\n";
    assert_int_equal(tu_write_file(path, prog, strlen(prog)), 0);
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd %s && /usr/bin/python3 -c \"import numpy as np; "
             "np.save('x.npy', (np.arange(128*64).reshape(128,64) %% 17 - 8).astype(np.float16) / 4)\"",
             dir);
    assert_int_equal(tu_run(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s run copy.nca --in x=x.npy --out x=x2.npy --out y=y.npy --stats s.json -q",
             dir, tu_ncsim());
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    free(out);
    snprintf(cmd, sizeof cmd,
             "cd %s && /usr/bin/python3 -c \"import numpy as np, json; x=np.load('x.npy'); "
             "x2=np.load('x2.npy'); y=np.load('y.npy'); "
             "assert x2.dtype==np.float16 and y.dtype==np.float32, (x2.dtype, y.dtype); "
             "ref=x.astype(np.float32)**2; assert (x2==ref.astype(np.float16)).all(); "
             "assert (y==ref).all(); s=json.load(open('s.json')); "
             "assert s['cores'][0]['dma']['transfers']==3; assert s['total_ns']>0; "
             "assert s['arch_config']['hbm']['bandwidth_gbps']==820; "
             "c=json.load(open('s.config.json')); assert c==s['arch_config'], 'config file'\"",
             dir);
    rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    free(out);
    /* missing input binding: usage error 2; bad npy shape: 3; missing file: 3 */
    snprintf(cmd, sizeof cmd, "cd %s && %s run copy.nca -q", dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 2);
    snprintf(cmd, sizeof cmd,
             "cd %s && /usr/bin/python3 -c \"import numpy as np; "
             "np.save('bad.npy', np.zeros((64,128), np.float16))\" && %s run copy.nca "
             "--in x=bad.npy -q",
             dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 3);
    snprintf(cmd, sizeof cmd, "cd %s && %s run copy.nca --in x=nope.npy -q", dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 3);
    snprintf(cmd, sizeof cmd, "cd %s && %s run copy.nca --in z=x.npy -q", dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 2);
    snprintf(cmd, sizeof cmd, "cd %s && %s run copy.nca --random-inputs 3 --set hbm.nope=1 -q",
             dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 2);
    /* a deadlock exits 1 with the report on stderr */
    snprintf(path, sizeof path, "%s/dead.nca", dir);
    const char *dead = ".sem a\n.engine sp\nnop | wait a >= 1\n";
    assert_int_equal(tu_write_file(path, dead, strlen(dead)), 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s run dead.nca -q", dir, tu_ncsim());
    rc = tu_run(cmd, &out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "deadlock"));
    assert_non_null(strstr(out, "dead.nca:3: core 0 sp instruction 0"));
    free(out);
    /* an assembly error exits 2 */
    snprintf(path, sizeof path, "%s/bad.nca", dir);
    assert_int_equal(tu_write_file(path, "bogus\n", 6), 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s run bad.nca -q", dir, tu_ncsim());
    assert_int_equal(tu_run(cmd, NULL), 2);
}

/* A 32 GiB HBM costs host memory only for what is touched: write the last bytes. */
static void test_hbm_lazy(void **state)
{
    (void)state;
    run_t r = run_text(".hbm top fp32 [128, 64] scratch @34359705600\n.sbuf s fp32 [128, 64]\n"
                       ".sem d\n.engine sp\ndma top, s | post d\ndma s, top | wait d >= 1\n",
                       0);
    assert_int_equal(r.status, NCSIM_OK);
    run_free(&r);
}

/* Achieved DMA bandwidth of one transfer HBM -> SBUF of `bytes_per_partition` per partition. */
static double dma_gbps(unsigned bytes_per_partition, unsigned partitions)
{
    char text[512];
    snprintf(text, sizeof text,
             ".hbm a u8 [%u, %u] input\n.sbuf s u8 [%u, %u]\n.engine sp\ndma s, a\n", partitions,
             bytes_per_partition, partitions, bytes_per_partition);
    run_t r = run_text(text, 1);
    double ns = total_ns(&r);
    run_free(&r);
    /* the transfer is issued at 0; take out its trigger latency, the HBM latency and its
     * first descriptor per engine, after which data moves (its time is then the larger of
     * its data and the rest of its descriptors) */
    double data_ns = ns - trn1.dma.trigger_latency_ns - trn1.hbm.latency_ns -
                     trn1.dma.descriptor_ns;
    return (double)bytes_per_partition * partitions / data_ns;
}

/* Efficiency by bytes per partition piece (DMA-BW): overhead-bound below 256 B, near peak
 * from 2 KiB; the curve rises and saturates at the engines' bandwidth. */
static void test_dma_bandwidth_curve(void **state)
{
    (void)state;
    double peak = trn1.dma.engines * trn1.dma.engine_bandwidth_gbps;
    double prev = 0;
    unsigned sizes[] = {64, 256, 1024, 2048, 4096, 16384};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double bw = dma_gbps(sizes[i], 128);
        assert_true(bw > prev);
        assert_true(bw <= peak * 1.001);
        prev = bw;
        if (sizes[i] == 64)
            assert_true(bw < 0.35 * peak); /* 64 / (64 + 7 ns x 18.7 B/ns) = 0.33 */
        if (sizes[i] >= 2048)
            assert_true(bw > 0.85 * peak);
    }
    /* one partition is served by one engine: at most one engine's bandwidth */
    assert_true(dma_gbps(16384, 1) <= trn1.dma.engine_bandwidth_gbps * 1.001);
}

/* Queues run concurrently; a queue completes its transfers in order, one after another. */
static void test_dma_queues(void **state)
{
    (void)state;
    const char *one_queue = ".hbm a u8 [16, 65536] input\n.sbuf s u8 [16, 65536]\n.engine sp\n"
                            "dma s[0:16, 0:32768], a[:, 0:32768], queue=0\n"
                            "dma s[0:16, 32768:65536], a[:, 32768:65536], queue=0\n";
    const char *two_queues = ".hbm a u8 [16, 65536] input\n.sbuf s u8 [16, 65536]\n.engine sp\n"
                             "dma s[0:16, 0:32768], a[:, 0:32768], queue=0\n"
                             "dma s[0:16, 32768:65536], a[:, 32768:65536], queue=1\n";
    run_t a = run_text(one_queue, 1), b = run_text(two_queues, 1);
    /* 16 partitions = 16 pieces: each transfer can use all 16 engines, so two queues share
     * them and end about together; on one queue the second waits for the first, but its
     * descriptors overlap the first's data phase, so the totals are close (two queues
     * share the descriptor stage round-robin, which delays the first one's data by 70 ns) */
    assert_true(tu_close(total_ns(&b), total_ns(&a), 0.05, 0));
    run_free(&a);
    run_free(&b);
    /* one-partition transfers use one DMA engine each: on one queue they move one after
     * another, spread over four queues they move at the same time */
    const char *small1 = ".hbm a fp32 [128, 4096] input\n.sbuf s fp32 [128, 4096]\n.engine sp\n"
                         ".loop i = 0, 4\ndma s[i*32, :], a[i*32, :], queue=0\n.endloop\n";
    const char *small4 = ".hbm a fp32 [128, 4096] input\n.sbuf s fp32 [128, 4096]\n.engine sp\n"
                         ".loop i = 0, 4\ndma s[i*32, :], a[i*32, :], queue=i\n.endloop\n";
    run_t c = run_text(small1, 1), d = run_text(small4, 1);
    /* one descriptor each, on one engine */
    double fixed = trn1.dma.trigger_latency_ns + trn1.hbm.latency_ns + trn1.dma.descriptor_ns;
    double one = total_ns(&c) - fixed, four = total_ns(&d) - fixed;
    /* four queues: about 4x, less the 46 ns between the issues of consecutive dma */
    assert_true(one / four > 3.0 && one / four <= 4.0);
    run_free(&c);
    run_free(&d);
}

/* The chip's HBM bandwidth is shared by the transfers of both cores: with it set below
 * one core's DMA bandwidth, two cores take about twice as long as one. */
static void test_hbm_shared_by_cores(void **state)
{
    (void)state;
    mdl_arch_t saved = trn1;
    char err[256];
    assert_int_equal(mdl_arch_set(&trn1, "hbm.bandwidth_gbps=100", err, sizeof err), NCSIM_OK);
    const char *one = ".hbm a fp32 [2, 128, 8192] input\n.sbuf s fp32 [128, 8192]\n"
                      ".core 0\n.engine sp\ndma s, a[0]\n";
    const char *two = ".hbm a fp32 [2, 128, 8192] input\n.sbuf s fp32 [128, 8192]\n"
                      ".core 0..1\n.engine sp\ndma s, a[core]\n";
    run_t a = run_text(one, 1), b = run_text(two, 1);
    /* data moves once each engine has processed its first descriptor */
    double fixed = trn1.dma.trigger_latency_ns + trn1.hbm.latency_ns + trn1.dma.descriptor_ns;
    double t1 = total_ns(&a) - fixed, t2 = total_ns(&b) - fixed;
    assert_true(tu_close(t2 / t1, 2.0, 0.05, 0));
    /* each core got about half: 4 MiB at 100 GB/s is 41.9 us, two of them about 83.9 us */
    assert_true(tu_close(t1, 128.0 * 8192 * 4 / 100.0, 0.05, 0));
    run_free(&a);
    run_free(&b);
    trn1 = saved;
}

/* ---- calibrated mechanisms (docs/validation.md) --------------------------------------------- */

/* The DMA mechanism of docs/data-movement.md, by hand, with the trn1 preset: trigger latency
 * 870 ns + HBM latency 200 ns, descriptors of 140 ns of one engine per piece, 16 engines at
 * 18.7 B/ns, 7 ns per piece. A [128 x B] load from HBM is 128 pieces of B bytes: 8
 * descriptors per engine (1120 ns); its data, 8 x (B / 18.7 + 7) ns per engine, starts after
 * the first descriptor (140 ns), and it lands when both are done. sp issues one dma every
 * 60 ns (84 cycles at 1.4 GHz). */
static double dma_run(const char *text)
{
    run_t r = run_text(text, 1);
    double t = total_ns(&r);
    run_free(&r);
    return t;
}

static void dma_expect(const char *what, double got, double want)
{
    if (!tu_close(got, want, 0, 1.0))
        fail_msg("%s: %.3f ns, expected %.3f", what, got, want);
}

static void test_dma_mechanism_by_hand(void **state)
{
    (void)state;
    assert_true(trn1.dma.trigger_latency_ns == 870.0 && trn1.hbm.latency_ns == 200.0 &&
                trn1.dma.descriptor_ns == 140.0 && trn1.dma.engine_bandwidth_gbps == 18.7 &&
                trn1.dma.piece_overhead_ns == 7.0 && trn1.dma.engines == 16 &&
                trn1.sp.issue_cycles == 84.0 && trn1.sp.clock_ghz == 1.4);
    double bw = 18.7, lat = 870 + 200, desc = 8 * 140.0, first = 140;
    double d1k = 8 * (1024 / bw + 7), d4k = 8 * (4096 / bw + 7); /* 494.1, 1808.3 ns */
    char text[2048];
    assert_true(first + d1k < desc && first + d4k > desc);
    /* one load alone: latency, then descriptors and data together */
    dma_expect("one 1 KiB/partition load",
               dma_run(".hbm a fp32 [128, 256] input\n.sbuf s fp32 [128, 256]\n.engine sp\n"
                       "dma s, a\n"),
               lat + desc); /* 2190: descriptor-bound (140 + 494.1 < 1120) */
    dma_expect("one 4 KiB/partition load",
               dma_run(".hbm a fp32 [128, 1024] input\n.sbuf s fp32 [128, 1024]\n.engine sp\n"
                       "dma s, a\n"),
               lat + first + d4k); /* 3018.3: data-bound */
    /* four on one queue: each queue works on one transfer's descriptors at a time, and
     * starts the next once the one before moves data; data moves in order. 1 KiB: the
     * descriptors bind, 1120 ns each; 4 KiB: the data binds, 1808.3 ns each */
    const char *four = ".hbm a fp32 [4, 128, %d] input\n.sbuf s fp32 [128, 4, %d]\n.engine sp\n"
                       ".loop i = 0, 4\ndma s[:, i, :], a[i], queue=%s\n.endloop\n";
    snprintf(text, sizeof text, four, 256, 256, "0");
    double q1 = dma_run(text);
    dma_expect("four 1 KiB/partition loads on one queue", q1, lat + 4 * desc); /* 5550 */
    snprintf(text, sizeof text, four, 1024, 1024, "0");
    double q1big = dma_run(text);
    dma_expect("four 4 KiB/partition loads on one queue", q1big,
               lat + first + 4 * d4k); /* 8443.2 */
    /* the same on four queues (triggers at 0, 60, 120, 180 ns): the queues share the
     * engines' descriptor stages round-robin, so the 4 x 128 descriptors still take 4 x 1120
     * ns of the engines, and the data the same 4 x 1808.3 ns: more queues hide neither */
    snprintf(text, sizeof text, four, 256, 256, "i");
    dma_expect("four 1 KiB/partition loads on four queues", dma_run(text), q1);
    snprintf(text, sizeof text, four, 1024, 1024, "i");
    dma_expect("four 4 KiB/partition loads on four queues", dma_run(text), q1big);
    /* a one-piece transfer occupies one engine's descriptor stage, then moves its data */
    dma_expect("one [1 x 4 KiB] load",
               dma_run(".hbm a fp32 [1, 1024] input\n.sbuf s fp32 [1, 1024]\n.engine sp\n"
                       "dma s, a\n"),
               lat + first + 4096 / bw + 7); /* 1296.0 */
    /* ... and sixteen of them on one queue use sixteen engines' stages one after another
     * (140 ns each, the queue's order), but their data overlaps */
    mdl_arch_t saved = trn1;
    char err[128];
    assert_int_equal(mdl_arch_set(&trn1, "dma.trigger_latency_ns=0", err, sizeof err), NCSIM_OK);
    dma_expect("one [128 x 1 KiB] load without trigger latency",
               dma_run(".hbm a fp32 [128, 256] input\n.sbuf s fp32 [128, 256]\n.engine sp\n"
                       "dma s, a\n"),
               200 + desc);
    trn1 = saved;
}

/* dma.queue_round_robin: four [128 x 1 KiB] loads on four queues; act starts a long activate
 * when the first has landed. Round-robin (trn1), the four share the descriptor stages and the
 * first lands at 5290 ns (test_dma_mechanism_by_hand); first come, first served, the first
 * takes the stages alone and lands at 1070 + 1120 = 2190 ns, 3100 ns earlier. The last lands
 * at 5550 ns either way. */
static void test_dma_queue_arbitration(void **state)
{
    (void)state;
    const char *text = ".hbm a fp32 [4, 128, 256] input\n.sbuf s fp32 [128, 4, 256]\n"
                       ".sbuf big fp32 [128, 8192]\n.sem l0\n.engine sp\n"
                       "dma s[:, 0, :], a[0], queue=0 | post l0\n"
                       ".loop i = 1, 4\ndma s[:, i, :], a[i], queue=i\n.endloop\n"
                       ".engine act\nactivate big, big, copy | wait l0 >= 1\n";
    assert_int_equal(trn1.dma.queue_round_robin, 1);
    double rr = dma_run(text);
    mdl_arch_t saved = trn1;
    char err[128];
    assert_int_equal(mdl_arch_set(&trn1, "dma.queue_round_robin=0", err, sizeof err), NCSIM_OK);
    double fifo = dma_run(text);
    trn1 = saved;
    if (!tu_close(rr - fifo, 3100.0, 0, 1.0))
        fail_msg("round-robin %.3f ns, first come first served %.3f ns: %.3f apart, expected 3100",
                 rr, fifo, rr - fifo);
    assert_int_equal(mdl_arch_set(&saved, "dma.queue_round_robin=2", err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_validate(&saved, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "dma.queue_round_robin = 2: must be 1"));
}

/* Eight tiny [128 x 32 B] loads: 8 x 1120 ns of descriptors whether on one queue or on eight
 * (the engines' descriptor stages are shared by every queue); their data (128 pieces of 32 B,
 * 8 x (32 / 18.7 + 7) = 69.7 ns per engine, or 79.9 ns for the 4 KiB source in one of the 16
 * HBM channels) hides under the descriptors. */
static void test_dma_descriptor_stage(void **state)
{
    (void)state;
    double lat = trn1.dma.trigger_latency_ns + trn1.hbm.latency_ns;
    double desc = 8 * trn1.dma.descriptor_ns;
    char text[1024];
    for (int queues = 1; queues <= 8; queues += 7) {
        int n = snprintf(text, sizeof text,
                         ".hbm x fp32 [128, 8] input\n.core 0\n.sbuf y fp32 [128, 8, 8]\n"
                         ".engine sp\n");
        for (int i = 0; i < 8; i++)
            n += snprintf(text + n, sizeof text - (size_t)n, "dma y[:, %d, :], x, queue=%d\n", i,
                          queues == 1 ? 0 : i);
        double t = dma_run(text);
        if (!tu_close(t, lat + 8 * desc, 0, 1.0))
            fail_msg("8 DMAs on %d queue(s): %.3f ns, expected %.3f", queues, t, lat + 8 * desc);
    }
}

/* The NKI matmul tutorial's tiled and hoisted kernels in miniature (docs/validation.md,
 * "The tiled matmul"): strided loads on one queue, [128 x 256 B] lhsT tiles from rows 8 KiB
 * apart and [128 x 1 KiB] rhs tiles from rows 16 KiB apart. Each row is one piece, so both are
 * 8 descriptors per engine (1120 ns), which bind over their data (140 + 8 x (256 / 18.7 + 7)
 * = 305.5 ns and 140 + 494.1 ns): eight of either, or four of each alternating, take the
 * trigger and HBM latency (1070 ns) + 8 x 1120 ns. The model thus charges the tiled kernel
 * two of these per step where the hoisted one pays one; the chip's times (51.8 and 42.96 ms)
 * make an lhsT load cost 0.22 of an rhs load. Rows of 4 KiB, 48 KiB apart (the NKIBench
 * matmul's B loads), are data-bound: 140 + 8 x 1808.3 / 8 per transfer, one after another. */
static void test_dma_strided_rows_on_one_queue(void **state)
{
    (void)state;
    double lat = trn1.dma.trigger_latency_ns + trn1.hbm.latency_ns;
    double desc = 8 * trn1.dma.descriptor_ns, bw = trn1.dma.engine_bandwidth_gbps;
    double d4k = 8 * (4096 / bw + trn1.dma.piece_overhead_ns);
    const char *head = ".hbm l bf16 [1024, 4096] input\n.hbm r bf16 [128, 8192] input\n"
                       ".core 0\n.sbuf ls bf16 [128, 8, 128]\n.sbuf rs bf16 [128, 8, 512]\n"
                       ".engine sp\n";
    const char *lhs = "dma ls[:, %d, :], l[%d:%d, 0:128], queue=0\n";
    const char *rhs = "dma rs[:, %d, :], r[:, %d:%d], queue=0\n";
    const char *names[3] = {"8 lhsT-like", "8 rhs-like", "4 + 4 alternating"};
    for (int kind = 0; kind < 3; kind++) {
        char text[2048];
        int n = snprintf(text, sizeof text, "%s", head);
        for (int i = 0; i < 8; i++) {
            int is_lhs = kind == 0 || (kind == 2 && i % 2 == 0);
            n += is_lhs ? snprintf(text + n, sizeof text - (size_t)n, lhs, i, i * 128,
                                   (i + 1) * 128)
                        : snprintf(text + n, sizeof text - (size_t)n, rhs, i, i * 512,
                                   (i + 1) * 512);
        }
        run_t r = run_text(text, 1);
        double t = total_ns(&r);
        const sim_core_stats_t *c = &sim_stats(r.sim)->cores[0];
        uint64_t nl = kind == 0 ? 8 : kind == 1 ? 0 : 4;
        assert_int_equal(c->dma_transfers, 8);
        assert_int_equal(c->dma_bytes, nl * 32768 + (8 - nl) * 131072);
        run_free(&r);
        if (!tu_close(t, lat + 8 * desc, 0, 1.0))
            fail_msg("%s strided loads on one queue: %.3f ns, expected %.3f", names[kind], t,
                     lat + 8 * desc);
    }
    double t = dma_run(".hbm b fp32 [128, 12288] input\n.core 0\n.sbuf s fp32 [128, 4, 1024]\n"
                       ".engine sp\n.loop i = 0, 4\n"
                       "dma s[:, i, :], b[:, i * 1024:(i + 1) * 1024], queue=0\n.endloop\n");
    dma_expect("four [128 x 4 KiB] loads from rows 48 KiB apart", t,
               lat + trn1.dma.descriptor_ns + 4 * d4k);
}

/* Memory traffic of one run: the chip's HBM bytes and core 0's by space. */
typedef struct traffic {
    uint64_t hbm_read, hbm_write, core_hbm_read, core_hbm_write, sbuf_read, sbuf_write;
    uint64_t dma_bytes;
    double ns;
} traffic_t;

static traffic_t traffic_of(const char *text)
{
    run_t r = run_text(text, 1);
    assert_int_equal(r.status, NCSIM_OK);
    const sim_stats_t *st = sim_stats(r.sim);
    const sim_core_stats_t *c = &st->cores[0];
    traffic_t t = {st->hbm_read_bytes, st->hbm_write_bytes, c->hbm_read_bytes,
                   c->hbm_write_bytes, c->sbuf_read_bytes, c->sbuf_write_bytes, c->dma_bytes,
                   total_ns(&r)};
    run_free(&r);
    return t;
}

static void traffic_expect(const char *what, traffic_t t, uint64_t hbm_read, uint64_t hbm_write,
                           uint64_t sbuf_read, uint64_t sbuf_write, uint64_t dma_bytes)
{
    if (t.hbm_read != hbm_read || t.hbm_write != hbm_write || t.core_hbm_read != hbm_read ||
        t.core_hbm_write != hbm_write || t.sbuf_read != sbuf_read ||
        t.sbuf_write != sbuf_write || t.dma_bytes != dma_bytes)
        fail_msg("%s: HBM read %llu (core %llu) write %llu (core %llu), SBUF read %llu write "
                 "%llu, DMA %llu; expected HBM %llu / %llu, SBUF %llu / %llu, DMA %llu",
                 what, (unsigned long long)t.hbm_read, (unsigned long long)t.core_hbm_read,
                 (unsigned long long)t.hbm_write, (unsigned long long)t.core_hbm_write,
                 (unsigned long long)t.sbuf_read, (unsigned long long)t.sbuf_write,
                 (unsigned long long)t.dma_bytes, (unsigned long long)hbm_read,
                 (unsigned long long)hbm_write, (unsigned long long)sbuf_read,
                 (unsigned long long)sbuf_write, (unsigned long long)dma_bytes);
}

/* A transfer that converts types (docs/data-movement.md, "Type conversion"): each side is
 * charged its own bytes (the source's read in its type, the destination's written in its
 * type) and the engines' data time is set by the larger side. [128, 1024] elements: 512 KiB
 * in fp32, 256 KiB in bf16; the SBUF side is 128 pieces, so every case below is 8 pieces per
 * engine of 4 KiB on the fp32 side: lat + 140 + 8 x (4096 / 18.7 + 7) = 3018.3 ns, the time
 * of the fp32 copy (test_dma_mechanism_by_hand). Before this rule a fp32 -> bf16 load counted
 * 256 KiB read from HBM and took 2190 ns, as if it had read bf16. */
static void test_dma_conversion_by_hand(void **state)
{
    (void)state;
    const uint64_t f32 = 128u * 1024 * 4, b16 = 128u * 1024 * 2;
    double lat = 870 + 200, bw = 18.7;
    double fp32_copy = lat + 140 + 8 * (4096 / bw + 7); /* 3018.3 */
    /* the control: no conversion */
    traffic_t t = traffic_of(".hbm a fp32 [128, 1024] input\n.sbuf s fp32 [128, 1024]\n"
                             ".engine sp\ndma s, a\n");
    traffic_expect("fp32 -> fp32 load", t, f32, 0, 0, f32, f32);
    dma_expect("fp32 -> fp32 load", t.ns, fp32_copy);
    /* a casting load fp32 -> bf16: reads 512 KiB of HBM, writes 256 KiB of SBUF */
    t = traffic_of(".hbm a fp32 [128, 1024] input\n.sbuf s bf16 [128, 1024]\n"
                   ".engine sp\ndma s, a\n");
    traffic_expect("fp32 -> bf16 load", t, f32, 0, 0, b16, b16);
    dma_expect("fp32 -> bf16 load", t.ns, fp32_copy);
    /* bf16 -> fp32: reads 256 KiB of HBM, writes 512 KiB of SBUF */
    t = traffic_of(".hbm a bf16 [128, 1024] input\n.sbuf s fp32 [128, 1024]\n"
                   ".engine sp\ndma s, a\n");
    traffic_expect("bf16 -> fp32 load", t, b16, 0, 0, f32, f32);
    dma_expect("bf16 -> fp32 load", t.ns, fp32_copy);
    /* a casting store fp32 SBUF -> bf16 HBM: reads 512 KiB of SBUF, writes 256 KiB of HBM */
    t = traffic_of(".hbm o bf16 [128, 1024] output\n.sbuf s fp32 [128, 1024]\n"
                   ".engine sp\ndma o, s\n");
    traffic_expect("fp32 -> bf16 store", t, 0, b16, f32, 0, b16);
    dma_expect("fp32 -> bf16 store", t.ns, fp32_copy);
    /* an accumulating store bf16 -> fp32 HBM reads and writes the fp32 destination */
    t = traffic_of(".hbm o fp32 [128, 1024] output\n.sbuf s bf16 [128, 1024]\n"
                   ".engine sp\ndma o, s, accumulate\n");
    traffic_expect("bf16 -> fp32 accumulating store", t, f32, f32, b16, 0, f32);

    /* HBM carries each side's own bytes: with HBM at 50 GB/s it binds, and a bf16 -> fp32
     * load draws 256 KiB from it (5242.88 ns, where the engines would take 1808.3), not the
     * 512 KiB it writes into SBUF (10485.76 ns); a fp32 -> bf16 load draws 512 KiB */
    mdl_arch_t saved = trn1;
    char err[128];
    assert_int_equal(mdl_arch_set(&trn1, "hbm.bandwidth_gbps=50", err, sizeof err), NCSIM_OK);
    t = traffic_of(".hbm a bf16 [128, 1024] input\n.sbuf s fp32 [128, 1024]\n"
                   ".engine sp\ndma s, a\n");
    dma_expect("bf16 -> fp32 load, HBM at 50 GB/s", t.ns, lat + 140 + (double)b16 / 50);
    t = traffic_of(".hbm a fp32 [128, 1024] input\n.sbuf s bf16 [128, 1024]\n"
                   ".engine sp\ndma s, a\n");
    dma_expect("fp32 -> bf16 load, HBM at 50 GB/s", t.ns, lat + 140 + (double)f32 / 50);
    /* HBM to HBM fp32 -> bf16 (one piece a side, one engine): HBM carries 512 + 256 KiB,
     * at 5 GB/s 157286.4 ns, where the one engine would take 524288 / 18.7 = 28036.8 */
    assert_int_equal(mdl_arch_set(&trn1, "hbm.bandwidth_gbps=5", err, sizeof err), NCSIM_OK);
    t = traffic_of(".hbm a fp32 [128, 1024] input\n.hbm o bf16 [128, 1024] output\n"
                   ".engine sp\ndma o, a\n");
    traffic_expect("fp32 -> bf16 HBM copy", t, f32, b16, 0, 0, b16);
    dma_expect("fp32 -> bf16 HBM copy, HBM at 5 GB/s", t.ns, lat + 140 + (double)(f32 + b16) / 5);
    trn1 = saved;
}

/* An instruction waiting on a semaphore starts costs.semaphore_latency_ns after the post: a
 * chain of 10 hand-offs between act and dve is 10 x 2 x 30 ns longer than without it. */
static void test_semaphore_latency(void **state)
{
    (void)state;
    const char *text = ".core 0\n.sbuf x fp32 [128, 4]\n.sem a\n.sem b\n.engine act\n"
                       ".loop i = 0, 10\n    activate x, x, copy | wait b >= i | post a\n"
                       ".endloop\n.engine dve\n.loop i = 0, 10\n"
                       "    tensor_scalar x, x, add, 1.0 | wait a >= i+1 | post b\n.endloop\n";
    double lat = trn1.costs.semaphore_latency_ns;
    assert_true(lat == 30.0);
    run_t r = run_text(text, 1);
    double with = total_ns(&r);
    run_free(&r);
    trn1.costs.semaphore_latency_ns = 0;
    r = run_text(text, 1);
    double without = total_ns(&r);
    run_free(&r);
    trn1.costs.semaphore_latency_ns = lat;
    /* act's 2nd..10th waits (9) and dve's 10 waits pay it */
    if (!tu_close(with - without, 19 * lat, 0, 0.01))
        fail_msg("semaphore latency adds %.3f ns, expected %.3f", with - without, 19 * lat);
}

/* Collectives: no all_reduce completes before cc.min_latency_ns; a large one costs cc.fixed_ns +
 * 2 steps x cc.step_latency_ns + S / cc.rank_bandwidth_gbps on the two cores of one chip. */
static void test_collective_costs(void **state)
{
    (void)state;
    const char *small = ".hbm d fp32 [2, 256] scratch\n.group g = 0, 1\n.core 0..1\n"
                        ".engine cc\nall_reduce d[core % 2], d[core % 2], op=add, group=g\n";
    run_t r = run_text(small, 1);
    double t = total_ns(&r);
    run_free(&r);
    if (!tu_close(t, trn1.cc.min_latency_ns, 0, 0.5))
        fail_msg("1 KiB all_reduce: %.3f ns, expected the floor %.3f", t, trn1.cc.min_latency_ns);
    const char *big = ".hbm d fp32 [2, 16384, 1024] scratch\n.group g = 0, 1\n.core 0..1\n"
                      ".engine cc\nall_reduce d[core % 2], d[core % 2], op=add, group=g\n";
    r = run_text(big, 1);
    t = total_ns(&r);
    run_free(&r);
    double S = 64.0 * 1024 * 1024;
    double expect = trn1.cc.fixed_ns + 2 * trn1.cc.step_latency_ns +
                    S / trn1.cc.rank_bandwidth_gbps; /* 2 steps of S/2 at the member's rate */
    if (!tu_close(t, expect, 0.002, 0))
        fail_msg("64 MiB all_reduce: %.1f ns, expected %.1f", t, expect);
}

/* Engine active time: the union of start..completion intervals (the profiler's active time),
 * not the sum of IIs: two independent 512-wide tensor_copy on dve overlap their latency tails. */
static void test_active_time(void **state)
{
    (void)state;
    run_t r = run_text(".core 0\n.sbuf x fp32 [128, 512]\n.sbuf y fp32 [128, 2, 512]\n"
                       ".engine dve\ntensor_copy y[:, 0, :], x\ntensor_copy y[:, 1, :], x\n",
                       1);
    const sim_engine_stats_t *e = eng(&r, 0, ISA_ENGINE_DVE);
    double ii = 512 / 1.12, lat = (512 + trn1.dve.static_overhead_cycles +
                                   trn1.dve.latency_cycles) / 1.12;
    assert_true(tu_close((double)e->busy_ps / 1000.0, 2 * ii, 0, 0.01));
    assert_true(tu_close((double)e->active_ps / 1000.0, ii + lat, 0, 0.01));
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_timing),
        cmocka_unit_test(test_act_pipelining),
        cmocka_unit_test(test_interlock),
        cmocka_unit_test(test_port_conflicts),
        cmocka_unit_test(test_dma_compute_overlap),
        cmocka_unit_test(test_semaphore_order),
        cmocka_unit_test(test_deadlock_report),
        cmocka_unit_test(test_runtime_error_location),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_cli_run),
        cmocka_unit_test(test_hbm_lazy),
        cmocka_unit_test(test_dma_bandwidth_curve),
        cmocka_unit_test(test_dma_queues),
        cmocka_unit_test(test_hbm_shared_by_cores),
        cmocka_unit_test(test_dma_descriptor_stage),
        cmocka_unit_test(test_dma_mechanism_by_hand),
        cmocka_unit_test(test_dma_queue_arbitration),
        cmocka_unit_test(test_dma_strided_rows_on_one_queue),
        cmocka_unit_test(test_dma_conversion_by_hand),
        cmocka_unit_test(test_semaphore_latency),
        cmocka_unit_test(test_collective_costs),
        cmocka_unit_test(test_active_time),
        cmocka_unit_test(test_shortcuts_change_nothing),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
