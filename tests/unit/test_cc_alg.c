/*
 * test_cc_alg.c -- the collective algorithms (sim/cc.c, docs/data-movement.md): step counts
 * and times of Ring, RDH, Mesh and KangaRing within an instance and of the hierarchical and
 * flat plans across instances against hand-computed figures; where auto switches algorithm
 * (cc.runtime, the size thresholds, what applies to a group); results of every algorithm
 * against NumPy's left fold in group order, on data where the order of an fp32 sum shows.
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
#include "trace_check.h"

/* What the trace tells of one collective. */
typedef struct cc_seen {
    unsigned steps, sends;
    uint8_t alg[256];         /* per step */
    uint64_t step_bytes[256]; /* per step: the largest send */
    uint64_t efa_sends;
} cc_seen_t;

static void on_cc(void *ctx, const sim_trace_cc_t *r)
{
    cc_seen_t *c = ctx;
    if (r->event == SIM_TRACE_CC_STEP_BEGIN) {
        if (c->steps < 256)
            c->alg[c->steps] = r->algorithm;
        c->steps++;
    } else if (r->event == SIM_TRACE_CC_FLOW_BEGIN) {
        c->sends++;
        if (r->step < 256 && r->bytes > c->step_bytes[r->step])
            c->step_bytes[r->step] = r->bytes;
        for (unsigned k = 0; k < r->nres; k++)
            if (r->res[k].kind == SIM_TRACE_RES_EFA && r->res[k].id % 2 == 0)
                c->efa_sends++;
    }
}

/* One collective over `cores` (n of them, one buffer pair per core on its chip): op of S
 * bytes (all_reduce and reduce_scatter: the input, all_gather: the output). Returns ns. */
static double run_op(const mdl_arch_t *a, const char *op, const unsigned *cores, unsigned n,
                     uint64_t S, cc_seen_t *seen)
{
    size_t cap = 1 << 16, at = 0;
    char *prog = malloc(cap);
    assert_non_null(prog);
    uint64_t E = S / 4, in = !strcmp(op, "all_gather") ? E / n : E,
             out = !strcmp(op, "reduce_scatter") ? E / n : E;
    unsigned maxcore = 0;
    for (unsigned i = 0; i < n; i++)
        if (cores[i] > maxcore)
            maxcore = cores[i];
    at += (size_t)snprintf(prog + at, cap - at, ".chips %u\n.group g =", maxcore / 2 + 1);
    for (unsigned i = 0; i < n; i++)
        at += (size_t)snprintf(prog + at, cap - at, "%s %u", i ? "," : "", cores[i]);
    at += (size_t)snprintf(prog + at, cap - at, "\n");
    for (unsigned i = 0; i < n; i++)
        at += (size_t)snprintf(prog + at, cap - at,
                               ".hbm s%u fp32 [%llu] scratch chip=%u\n"
                               ".hbm d%u fp32 [%llu] scratch chip=%u\n"
                               ".core %u\n.engine cc\n%s d%u, s%u%s, group=g\n",
                               i, (unsigned long long)in, cores[i] / 2, i, (unsigned long long)out,
                               cores[i] / 2, cores[i], op, i, i,
                               strcmp(op, "all_gather") ? ", op=add" : "");
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "cc.nca";
    isa_diag_t d;
    isa_diag_init(&d, 0);
    isa_program_t *p = NULL;
    if (isa_assemble(prog, at, &opt, &p, &d) != NCSIM_OK)
        fprintf(stderr, "%s%s", prog, d.text ? d.text : "");
    isa_diag_free(&d);
    free(prog);
    assert_non_null(p);
    sim_trace_sink_t sink;
    memset(&sink, 0, sizeof sink);
    cc_seen_t dummy;
    if (!seen)
        seen = &dummy;
    memset(seen, 0, sizeof *seen);
    sink.ctx = seen;
    sink.cc = on_cc;
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = a;
    o.timing_only = 1;
    o.trace = &sink;
    sim_t *s = NULL;
    char err[1024];
    ncsim_status_t st = sim_create(p, &o, &s, err, sizeof err);
    if (st != NCSIM_OK)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(st, NCSIM_OK);
    assert_int_equal(sim_run(s, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
    assert_true(sim_finished(s));
    double ns = (double)sim_stats(s)->total_ps / 1000.0;
    sim_destroy(s);
    isa_program_free(p);
    return ns;
}

static void set(mdl_arch_t *a, const char *kv)
{
    char err[512];
    ncsim_status_t st = mdl_arch_set(a, kv, err, sizeof err);
    if (st != NCSIM_OK)
        fprintf(stderr, "%s: %s\n", kv, err);
    assert_int_equal(st, NCSIM_OK);
}

/*
 * A config in which every figure is easy by hand: no fixed costs, 1 us per step, 0.5 us per
 * NeuronLink hop, 5 us across instances, and one member's data path at 1 GB/s = 1 B/ns while
 * DMA engines, HBM, links and the network are 10^5 GB/s (never the bound). A send of B bytes
 * from a member with k sends in the step then takes k x B ns.
 */
static void hand_arch(mdl_arch_t *a, const char *preset)
{
    char err[512];
    assert_int_equal(mdl_arch_load(preset, a, err, sizeof err), NCSIM_OK);
    const char *kv[] = {"cc.fixed_ns=0",
                        "cc.min_latency_ns=0",
                        "cc.step_latency_ns=1000",
                        "link.hop_latency_ns=500",
                        "efa.latency_ns=5000",
                        "cc.rank_bandwidth_gbps=1",
                        "dma.engine_bandwidth_gbps=100000",
                        "hbm.bandwidth_gbps=100000",
                        "link.bandwidth_gbps=100000",
                        "efa.bandwidth_gbits=800000"};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        set(a, kv[i]);
    assert_int_equal(mdl_arch_validate(a, err, sizeof err), NCSIM_OK);
}

static void expect_ns(double got, double want, const char *what)
{
    fprintf(stderr, "%-44s %10.3f ns (hand %10.3f)\n", what, got, want);
    assert_true(tu_close(got, want, 1e-6, 0.01));
}

/* trn1-32xl: chips c = 4y + x of a 4 x 4 torus, cores 2c and 2c+1. */
static const unsigned four[] = {0, 1, 2, 3};              /* chips 0, 1 */
static const unsigned eight[] = {0, 1, 2, 3, 4, 5, 6, 7}; /* chips 0..3, one torus row */

static void test_ring_rdh_hand(void **state)
{
    (void)state;
    mdl_arch_t a;
    hand_arch(&a, "trn1-32xl");
    cc_seen_t c;
    /* ring all_reduce of 4 KiB over 4 cores: 2 x 3 steps of 1 KiB; 1 -> 2 and 3 -> 0 cross
     * one NeuronLink hop, so every step waits 1 + 0.5 us, then moves 1024 B at 1 B/ns */
    set(&a, "cc.algorithm=ring");
    expect_ns(run_op(&a, "all_reduce", four, 4, 4096, &c), 6 * (1500 + 1024.0), "ring AR 4");
    assert_int_equal(c.steps, 6);
    assert_int_equal(c.sends, 6 * 4);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);
    /* reduce_scatter and all_gather: 3 steps each */
    expect_ns(run_op(&a, "reduce_scatter", four, 4, 4096, &c), 3 * 2524.0, "ring RS 4");
    expect_ns(run_op(&a, "all_gather", four, 4, 4096, &c), 3 * 2524.0, "ring AG 4");
    /* RDH: halving with the chip partner (S/2 = 2048 B through HBM, no hop), then across
     * the link (1024 B, one hop); doubling in reverse: 1024 B across, then 2048 B within */
    set(&a, "cc.algorithm=rdh");
    expect_ns(run_op(&a, "all_reduce", four, 4, 4096, &c),
              (1000 + 2048.0) + (1500 + 1024.0) + (1500 + 1024.0) + (1000 + 2048.0), "rdh AR 4");
    assert_int_equal(c.steps, 4);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RDH);
    assert_int_equal(c.step_bytes[0], 2048);
    assert_int_equal(c.step_bytes[3], 2048);
    /* 16 cores: 2 log2 16 = 8 steps against ring's 30 */
    unsigned sixteen[16];
    for (unsigned i = 0; i < 16; i++)
        sixteen[i] = i;
    run_op(&a, "all_reduce", sixteen, 16, 65536, &c);
    assert_int_equal(c.steps, 8);
    /* all 32 cores of the 4 x 4 torus, listed in a snake order of the chips: RDH pairs them
     * in the hypercube view of the torus (Gray codes of x and y), so after the chip partner
     * (16 KiB through HBM) each step crosses exactly one NeuronLink hop */
    unsigned snake[32], at = 0;
    for (unsigned y = 0; y < 4; y++)
        for (unsigned k = 0; k < 4; k++) {
            unsigned x = y % 2 ? 3 - k : k;
            snake[at++] = 2 * (4 * y + x);
            snake[at++] = 2 * (4 * y + x) + 1;
        }
    double half =
        (1000 + 16384.0) + (1500 + 8192.0) + (1500 + 4096.0) + (1500 + 2048.0) + (1500 + 1024.0);
    expect_ns(run_op(&a, "all_reduce", snake, 32, 32768, &c), 2 * half, "rdh AR 32 (snake)");
    assert_int_equal(c.steps, 10);
    /* RDH needs a power of two: 6 cores fall back to the ring */
    run_op(&a, "all_reduce", eight, 6, 6144, &c);
    assert_int_equal(c.steps, 10);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);
}

static void test_mesh_kangaring_hand(void **state)
{
    (void)state;
    mdl_arch_t a;
    hand_arch(&a, "trn1-32xl");
    cc_seen_t c;
    /*
     * Mesh all_reduce of 4 KiB (C = 1 KiB) over 2 chips x 2 cores. Chip b is served by the
     * member l = (b - a) mod 2 of chip a: member 1 of each chip.
     *  RS: member 1 writes the 2 chunks of the other chip (2048 B, pre-reduced with its
     *      partner's) and 1024 B to its partner: 2 sends at 0.5 B/ns, the longer 4096 ns,
     *      after 1 + 0.5 us; member 0 sends its partner 1024 B.
     *  AG step 0: member 1 writes its chip's 2 chunks (2048 B) to member 1 of the other chip.
     *  AG step 1: member 1 gives its partner its own chunk and the 2 received (3072 B), member
     *      0 its own (1024 B), within the chip.
     */
    set(&a, "cc.algorithm=mesh");
    expect_ns(run_op(&a, "all_reduce", four, 4, 4096, &c),
              (1500 + 4096.0) + (1500 + 2048.0) + (1000 + 3072.0), "mesh AR 2x2");
    assert_int_equal(c.steps, 3);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_MESH);
    assert_int_equal(c.sends, 6 + 2 + 4);
    /* one member per chip: one step each way, straight to every member: 3 sends of 1 KiB
     * each at 1/3 B/ns; the farthest (chip 0 -> 2 on the torus row of 4) is two hops */
    static const unsigned spread[] = {0, 2, 4, 6};
    expect_ns(run_op(&a, "all_reduce", spread, 4, 4096, &c), 2 * (2000 + 3 * 1024.0),
              "mesh AR 4 chips");
    assert_int_equal(c.steps, 2);
    /* KangaRing over 4 chips x 2 cores, 8 KiB (C = 1 KiB): member 0 of each chip forwards
     * around the row one way, member 1 the other way, m - 1 = 3 steps each way of C, one
     * hop (the row is a ring of 4); each byte costs the primary two on its data path
     * (it moves its secondary's share too): 2048 ns per step */
    set(&a, "cc.algorithm=kangaring");
    expect_ns(run_op(&a, "all_reduce", eight, 8, 8192, &c), 6 * (1500 + 2048.0), "kanga AR 8");
    assert_int_equal(c.steps, 6);
    assert_int_equal(c.sends, 6 * 8);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_KANGARING);
    set(&a, "cc.algorithm=ring");
    run_op(&a, "all_reduce", eight, 8, 8192, &c);
    assert_int_equal(c.steps, 14); /* KangaRing halves the ring's steps */
    /* a group with one core per chip has no pairs: Ring */
    set(&a, "cc.algorithm=kangaring");
    run_op(&a, "all_reduce", spread, 4, 4096, &c);
    assert_int_equal(c.steps, 6);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);
}

/*
 * Across two instances: cores 0, 1 (chip 0, instance 0) and 32, 33 (chip 16, instance 1).
 * Hierarchical all_reduce of S = 4 KiB: RS within each chip (2048 B, no hop), RS between the
 * instances on S/2 (1024 B, 5 us of network latency), AG between them, AG within: 4 steps.
 * A flat ring 0 -> 1 -> 32 -> 33 -> 0 takes 6 steps of S/4, each with a network crossing.
 */
static void test_across_instances_hand(void **state)
{
    (void)state;
    mdl_arch_t a;
    hand_arch(&a, "trn1-32xl-x2");
    static const unsigned g[] = {0, 1, 32, 33};
    cc_seen_t c;
    expect_ns(run_op(&a, "all_reduce", g, 4, 4096, &c),
              2 * (1000 + 2048.0) + 2 * (1000 + 5000 + 1024.0), "hierarchical AR 2x2");
    assert_int_equal(c.steps, 4);
    assert_int_equal(c.efa_sends, 2 * 4); /* the two network steps: every member crosses */
    /* reduce_scatter: the first two stages; all_gather: the last two */
    expect_ns(run_op(&a, "reduce_scatter", g, 4, 4096, &c), (1000 + 2048.0) + 7024.0,
              "hierarchical RS 2x2");
    expect_ns(run_op(&a, "all_gather", g, 4, 4096, &c), 7024.0 + (1000 + 2048.0),
              "hierarchical AG 2x2");
    set(&a, "cc.inter_algorithm=flat_ring");
    expect_ns(run_op(&a, "all_reduce", g, 4, 4096, &c), 6 * (1000 + 5000 + 1024.0),
              "flat ring AR 2x2");
    assert_int_equal(c.steps, 6);
    assert_int_equal(c.efa_sends, 6 * 2);
    /* 64 cores on the presets: the hierarchical plan (SDK 2.10: Ring + Ring + Ring) takes
     * 31 + 1 + 1 + 31 steps, the flat ring 126 */
    mdl_arch_t x2;
    char err[256];
    assert_int_equal(mdl_arch_load("trn1-32xl-x2", &x2, err, sizeof err), NCSIM_OK);
    unsigned all[64];
    for (unsigned i = 0; i < 64; i++)
        all[i] = i;
    double th = run_op(&x2, "all_reduce", all, 64, 1 << 20, &c);
    assert_int_equal(c.steps, 64);
    set(&x2, "cc.inter_algorithm=flat_ring");
    double tf = run_op(&x2, "all_reduce", all, 64, 1 << 20, &c);
    assert_int_equal(c.steps, 126);
    fprintf(stderr, "64-core all_reduce of 1 MiB: hierarchical %.1f us, flat ring %.1f us\n",
            th / 1e3, tf / 1e3);
    assert_true(th * 4 < tf);
}

/* Where auto changes its mind (cc.runtime=current; the trn1 preset's SDK 2.10 runtime is
 * Ring everywhere). Thresholds are set small so the runs stay small. */
static void test_selection(void **state)
{
    (void)state;
    mdl_arch_t a;
    hand_arch(&a, "trn1-32xl");
    cc_seen_t c;
    assert_int_equal(a.cc.runtime, MDL_CC_RUNTIME_SDK2_10);
    assert_int_equal(a.cc.algorithm, MDL_CC_AUTO);
    run_op(&a, "all_reduce", eight, 8, 1024, &c);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);
    run_op(&a, "all_reduce", eight, 8, 1 << 20, &c);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);

    set(&a, "cc.runtime=current");
    set(&a, "cc.mesh_max_bytes=4096");
    set(&a, "cc.rdh_max_bytes=65536");
    run_op(&a, "all_reduce", eight, 8, 4096 - 32, &c); /* just under: Mesh */
    assert_int_equal(c.alg[0], SIM_TRACE_CC_MESH);
    run_op(&a, "all_reduce", eight, 8, 4096, &c); /* at the bound: RDH */
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RDH);
    run_op(&a, "all_reduce", eight, 8, 65536 - 32, &c);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RDH);
    run_op(&a, "all_reduce", eight, 8, 65536, &c); /* KangaRing from rdh_max_bytes */
    assert_int_equal(c.alg[0], SIM_TRACE_CC_KANGARING);
    static const unsigned spread[] = {0, 2, 4, 6};
    run_op(&a, "all_reduce", spread, 4, 65536, &c); /* no pairs: Ring */
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);
    run_op(&a, "all_reduce", eight, 6, 6144, &c); /* RDH range, 6 members: Ring */
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);
    /* a group of one moves nothing whatever the algorithm: one step of latency */
    static const char *const each[] = {"cc.algorithm=ring", "cc.algorithm=mesh",
                                       "cc.algorithm=kangaring", "cc.algorithm=rdh"};
    for (int k = 0; k < 4; k++) {
        mdl_arch_t one = a;
        set(&one, each[k]);
        expect_ns(run_op(&one, "all_reduce", eight, 1, 4096, &c), 1000.0, each[k]);
        assert_int_equal(c.sends, 0);
        expect_ns(run_op(&one, "all_gather", eight, 1, 4096, &c), 1000.0, each[k]);
    }
    /* a forced algorithm wins over the runtime's rule */
    set(&a, "cc.algorithm=mesh");
    run_op(&a, "all_reduce", eight, 8, 65536, &c);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_MESH);

    /* across instances: the network stage by instances and size, the flat ring from
     * cc.flat_min_bytes */
    mdl_arch_t x;
    hand_arch(&x, "trn1-32xl-x2");
    set(&x, "cc.runtime=current");
    set(&x, "cc.mesh_max_bytes=0");
    set(&x, "cc.rdh_max_bytes=0"); /* within: KangaRing, or Ring for a single pair */
    set(&x, "cc.inter_mesh_max_bytes=8192");
    set(&x, "cc.inter_mesh_max_ranks=2");
    set(&x, "cc.inter_rdh_max_bytes=65536");
    set(&x, "cc.flat_min_bytes=262144");
    static const unsigned g[] = {0, 1, 32, 33};
    run_op(&x, "all_reduce", g, 4, 8192, &c); /* network stage on 4096 B < 8192: Mesh */
    assert_int_equal(c.steps, 4);
    assert_int_equal(c.alg[0], SIM_TRACE_CC_RING);
    assert_int_equal(c.alg[1], SIM_TRACE_CC_MESH);
    run_op(&x, "all_reduce", g, 4, 16384, &c); /* 8192 B: RDH */
    assert_int_equal(c.alg[1], SIM_TRACE_CC_RDH);
    run_op(&x, "all_reduce", g, 4, 131072, &c); /* 65536 B: Ring */
    assert_int_equal(c.alg[1], SIM_TRACE_CC_RING);
    set(&x, "cc.inter_mesh_max_ranks=1"); /* two instances are too many for Mesh: RDH */
    run_op(&x, "all_reduce", g, 4, 8192, &c);
    assert_int_equal(c.alg[1], SIM_TRACE_CC_RDH);
    run_op(&x, "all_reduce", g, 4, 262144 - 64, &c); /* just under the flat bound */
    assert_int_equal(c.steps, 4);
    run_op(&x, "all_reduce", g, 4, 262144, &c); /* at it: one ring of 4, 6 steps */
    assert_int_equal(c.steps, 6);
    /* a group that is not symmetric across instances runs the flat ring */
    static const unsigned uneven[] = {0, 1, 2, 32};
    run_op(&x, "all_reduce", uneven, 4, 4096, &c);
    assert_int_equal(c.steps, 6);
    /* the config refuses combinations that cannot run */
    char err[512];
    mdl_arch_t bad = x;
    set(&bad, "cc.algorithm=flat_ring");
    assert_int_equal(mdl_arch_validate(&bad, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "cc.inter_algorithm"));
    bad = x;
    set(&bad, "cc.inter_algorithm=kangaring");
    assert_int_equal(mdl_arch_validate(&bad, err, sizeof err), NCSIM_USAGE);
    bad = x;
    set(&bad, "cc.rdh_max_bytes=1");
    set(&bad, "cc.mesh_max_bytes=2");
    assert_int_equal(mdl_arch_validate(&bad, err, sizeof err), NCSIM_USAGE);
}

/*
 * Results do not depend on the algorithm: every reduction is the left fold of the members'
 * inputs in group order in fp32 (NumPy: acc = x0; acc = acc + x1; ...). The inputs mix
 * magnitudes (1e-3 .. 1e7) so that another order would give other bits; the reference checks
 * that reversing the order does change them (else this test could not fail).
 */
static const char *fold_py =
    "import sys, numpy as np\n"
    "d, op, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "x = [np.load(f'{d}/in{k}.npy') for k in range(n)]\n"
    "def fold(xs):\n"
    "    acc = xs[0].copy()\n"
    "    for a in xs[1:]:\n"
    "        acc = (acc + a).astype(np.float32)\n"
    "    return acc\n"
    "r = fold(x)\n"
    "assert not np.array_equal(r, fold(x[::-1])), 'the data does not show the order'\n"
    "for k in range(n):\n"
    "    y = np.load(f'{d}/out{k}.npy')\n"
    "    ref = r if op == 'all_reduce' else np.split(r, n)[k]\n"
    "    if not np.array_equal(y, ref):\n"
    "        print('member', k, 'differs'); sys.exit(1)\n"
    "print('ok')\n";

static const char *inputs_py = "import sys, numpy as np\n"
                               "d, n, e = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
                               "rng = np.random.default_rng(7)\n"
                               "for k in range(n):\n"
                               "    v = rng.standard_normal(e) * 10.0 ** rng.integers(-3, 8, e)\n"
                               "    np.save(f'{d}/in{k}.npy', v.astype(np.float32))\n";

static void check_numerics(const char *preset, const unsigned *cores, unsigned n, const char *op,
                           const char *sets)
{
    const char *dir = tu_tmpdir();
    unsigned e = 64 * n, oute = !strcmp(op, "reduce_scatter") ? e / n : e;
    size_t cap = 1 << 15, at = 0;
    char *prog = malloc(cap);
    assert_non_null(prog);
    unsigned maxcore = 0;
    for (unsigned i = 0; i < n; i++)
        maxcore = cores[i] > maxcore ? cores[i] : maxcore;
    at += (size_t)snprintf(prog + at, cap - at, ".chips %u\n.group g =", maxcore / 2 + 1);
    for (unsigned i = 0; i < n; i++)
        at += (size_t)snprintf(prog + at, cap - at, "%s %u", i ? "," : "", cores[i]);
    at += (size_t)snprintf(prog + at, cap - at, "\n");
    for (unsigned i = 0; i < n; i++)
        at += (size_t)snprintf(prog + at, cap - at,
                               ".hbm in%u fp32 [%u] input chip=%u\n"
                               ".hbm out%u fp32 [%u] output chip=%u\n"
                               ".core %u\n.engine cc\n%s out%u, in%u, op=add, group=g\n",
                               i, e, cores[i] / 2, i, oute, cores[i] / 2, cores[i], op, i, i);
    assert_int_equal(tu_write_file(tu_join(dir, "f.nca"), prog, at), 0);
    free(prog);
    char args[1024];
    snprintf(args, sizeof args, "%s %u %u", dir, n, e);
    assert_int_equal(tu_python(inputs_py, args, NULL), 0);
    char cmd[8192];
    int len = snprintf(cmd, sizeof cmd, "cd %s && %s run f.nca --arch %s %s -q", dir, tu_ncsim(),
                       preset, sets);
    for (unsigned i = 0; i < n; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len,
                        " --in in%u=in%u.npy --out out%u=out%u.npy", i, i, i, i);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s: %s\n", sets, out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
    snprintf(args, sizeof args, "%s %s %u", dir, op, n);
    out = NULL;
    rc = tu_python(fold_py, args, &out);
    if (rc)
        fprintf(stderr, "%s %s %s: %s\n", preset, op, sets, out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

static void test_numerics_every_algorithm(void **state)
{
    (void)state;
    static const char *const algs[] = {"ring", "mesh", "kangaring", "rdh"};
    for (int i = 0; i < 4; i++) {
        char sets[128];
        snprintf(sets, sizeof sets, "--set cc.algorithm=%s", algs[i]);
        check_numerics("trn1-32xl", eight, 8, "all_reduce", sets);
        check_numerics("trn1-32xl", eight, 8, "reduce_scatter", sets);
    }
    static const unsigned g[] = {0, 1, 2, 3, 32, 33, 34, 35};
    static const char *const inter[] = {"ring", "mesh", "rdh", "flat_ring"};
    for (int i = 0; i < 4; i++) {
        char sets[160];
        snprintf(sets, sizeof sets, "--set cc.runtime=current --set cc.inter_algorithm=%s",
                 inter[i]);
        check_numerics("trn1-32xl-x2", g, 8, "all_reduce", sets);
        check_numerics("trn1-32xl-x2", g, 8, "reduce_scatter", sets);
    }
}

/* A Mesh step has several sends per member: the trace keeps each on its own link lanes
 * (the checker finds no overlapping slices on a track) and sums them in the member's step. */
static void test_mesh_trace(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    assert_int_equal(tu_sh("cd %s && /usr/bin/python3 %s --op all_reduce --ranks 32 --bytes "
                           "65536 --arch trn1-32xl > m.nca && %s run m.nca --timing-only -q --set "
                           "cc.runtime=current --trace m.json --stats m-stats.json",
                           dir, tu_source_path("validation/gen/collective.py"), tu_ncsim()),
                     0);
    char msg[1024];
    tc_stats_t st;
    memset(&st, 0, sizeof st);
    int rc = tc_check_json(tu_join(dir, "m.json"), &st, msg, sizeof msg);
    if (rc)
        fprintf(stderr, "checker: %s\n", msg);
    assert_int_equal(rc, 0);
    char *t = tu_read_file(tu_join(dir, "m.json"), NULL);
    assert_non_null(t);
    assert_non_null(strstr(t, "\"algorithm\":\"mesh\""));
    free(t);
    /* every byte the links carried (the statistics) is on some link slice */
    static const char *py =
        "import json, sys\n"
        "d = sys.argv[1]\n"
        "t = json.load(open(d + '/m.json'))\n"
        "ev = t['traceEvents'] if isinstance(t, dict) else t\n"
        "got = sum(e['args']['bytes'] for e in ev if e.get('cat') == 'link' and e.get('ph') == "
        "'X')\n"
        "want = sum(l['bytes'] for l in json.load(open(d + '/m-stats.json'))['links'])\n"
        "print(got, want)\n"
        "sys.exit(0 if got == want and want > 0 else 1)\n";
    char *out = NULL;
    rc = tu_python(py, dir, &out);
    if (rc)
        fprintf(stderr, "link slice bytes, link bytes: %s\n", out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_rdh_hand),
        cmocka_unit_test(test_mesh_kangaring_hand),
        cmocka_unit_test(test_across_instances_hand),
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_numerics_every_algorithm),
        cmocka_unit_test(test_mesh_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
