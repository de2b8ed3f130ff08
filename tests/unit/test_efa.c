/*
 * test_efa.c -- systems of several instances joined by EFA (efa.*, docs/data-movement.md):
 * the presets, the topology split into instances, a 64-core all_reduce across two
 * trn1.32xlarge against NumPy (bit-exact), and its time against the hand-computed cost of
 * the EFA path.
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
#include "neuronlink.h"
#include "sim.h"
#include "testutil.h"

static void test_presets(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint32_t chips, instances;
        double gbits;
    } want[] = {{"trn1", 1, 1, 25},           {"trn1-32xl", 16, 1, 800},
                {"trn1-32xl-x2", 32, 2, 800}, {"trn1n-32xl", 16, 1, 1600},
                {"trn1n-32xl-x2", 32, 2, 1600}, {"inf2-48xl", 12, 1, 100}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        mdl_arch_t a;
        char err[512];
        assert_int_equal(mdl_arch_load(want[i].name, &a, err, sizeof err), NCSIM_OK);
        assert_int_equal(mdl_arch_validate(&a, err, sizeof err), NCSIM_OK);
        assert_int_equal(a.chips, want[i].chips);
        assert_int_equal(a.efa.instances, want[i].instances);
        assert_true(a.efa.bandwidth_gbits == want[i].gbits);
        assert_int_equal(mdl_arch_chips_per_instance(&a), want[i].chips / want[i].instances);
    }
    /* trn1n doubles the NeuronLink bandwidth of trn1 */
    mdl_arch_t t1, tn;
    char err[512];
    assert_int_equal(mdl_arch_load("trn1-32xl", &t1, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_load("trn1n-32xl", &tn, err, sizeof err), NCSIM_OK);
    assert_true(tu_close(tn.link.bandwidth_gbps, 2 * t1.link.bandwidth_gbps, 1e-12, 0));
    /* `ncsim arch` lists the new presets */
    char *out = NULL;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s arch", tu_ncsim());
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_non_null(strstr(out, "trn1-32xl-x2 "));
    assert_non_null(strstr(out, "trn1n-32xl "));
    assert_non_null(strstr(out, "trn1n-32xl-x2 "));
    free(out);
}

static void expect_invalid(const char *base, const char *set, const char *want)
{
    mdl_arch_t a;
    char err[1024] = "";
    assert_int_equal(mdl_arch_load(base, &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_set(&a, set, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_validate(&a, err, sizeof err), NCSIM_USAGE);
    if (!strstr(err, want))
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, want);
    assert_non_null(strstr(err, want));
}

static void test_validation(void **state)
{
    (void)state;
    expect_invalid("trn1-32xl", "efa.instances=3", "efa.instances = 3: must be at least 1 and "
                                                   "divide system.chips (16)");
    expect_invalid("trn1-32xl", "efa.instances=0", "efa.instances = 0");
    /* two instances of 8 chips do not fill a 4 x 4 torus each */
    expect_invalid("trn1-32xl", "efa.instances=2", "must equal the chips of one instance");
    expect_invalid("trn1-32xl-x2", "efa.bandwidth_gbits=0", "efa.bandwidth_gbits = 0");
}

static void test_topology(void **state)
{
    (void)state;
    mdl_arch_t a;
    char err[512];
    assert_int_equal(mdl_arch_load("trn1-32xl-x2", &a, err, sizeof err), NCSIM_OK);
    mdl_linkmap_t t;
    assert_int_equal(mdl_linkmap_build(&a, a.chips, &t, err, sizeof err), 0);
    assert_int_equal(t.instances, 2);
    /* a 4 x 4 torus per instance: 16 chips x 4 directed links, twice */
    assert_int_equal(t.nlinks, 2 * 16 * 4);
    for (uint32_t i = 0; i < t.nlinks; i++)
        assert_int_equal(mdl_linkmap_instance(&t, t.links[i].from),
                         mdl_linkmap_instance(&t, t.links[i].to));
    uint32_t links[MDL_LINK_MAX_HOPS];
    assert_int_equal(mdl_linkmap_instance(&t, 15), 0);
    assert_int_equal(mdl_linkmap_instance(&t, 16), 1);
    assert_int_equal(mdl_linkmap_route(&t, 15, 16, links, MDL_LINK_MAX_HOPS), 0);
    assert_int_equal(mdl_linkmap_route(&t, 16, 17, links, MDL_LINK_MAX_HOPS), 1);
    /* the second instance's torus is the first one's shifted by 16 chips */
    assert_int_equal(mdl_linkmap_route(&t, 16, 31, links, MDL_LINK_MAX_HOPS),
                     mdl_linkmap_route(&t, 0, 15, links, MDL_LINK_MAX_HOPS));
    mdl_linkmap_free(&t);
}

/* ---- a 64-core all_reduce against NumPy ---------------------------------------------------- */

static const char *check_py =
    "import sys, numpy as np\n"
    "d, op, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "x = [np.load(f'{d}/in{k}.npy') for k in range(n)]\n"
    "y = [np.load(f'{d}/out{k}.npy') for k in range(n)]\n"
    "if op == 'all_reduce':\n"
    "    acc = x[0].astype(np.float32).copy()\n"
    "    for a in x[1:]:\n"
    "        acc = (acc + a).astype(np.float32)\n"
    "    ref = [acc] * n\n"
    "else:\n"
    "    ref = [np.concatenate(x, axis=0)] * n\n"
    "for k in range(n):\n"
    "    if not np.array_equal(y[k], ref[k]):\n"
    "        print('core', k, 'differs: max abs', np.abs(y[k] - ref[k]).max()); sys.exit(1)\n"
    "print('ok')\n";

static const char *make_inputs_py =
    "import sys, numpy as np\n"
    "d, n, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "rng = np.random.default_rng(7 * n + rows)\n"
    "for k in range(n):\n"
    "    np.save(f'{d}/in{k}.npy', rng.standard_normal((rows, 8)).astype(np.float32))\n";

static void run_64(const char *op, const char *arch)
{
    const unsigned n = 64, rows = 128;
    unsigned out_rows = !strcmp(op, "all_gather") ? rows * n : rows;
    const char *dir = tu_tmpdir();
    size_t cap = 1 << 16, at = 0;
    char *prog = malloc(cap);
    assert_non_null(prog);
    at += (size_t)snprintf(prog + at, cap - at, ".chips 32\n.group g = 0..63\n");
    for (unsigned k = 0; k < n; k++)
        at += (size_t)snprintf(prog + at, cap - at,
                               ".hbm in%u fp32 [%u, 8] input chip=%u\n"
                               ".hbm out%u fp32 [%u, 8] output chip=%u\n",
                               k, rows, k / 2, k, out_rows, k / 2);
    for (unsigned k = 0; k < n; k++)
        at += (size_t)snprintf(prog + at, cap - at, ".core %u\n.engine cc\n%s out%u, in%u%s, "
                                                    "group=g\n",
                               k, op, k, k, !strcmp(op, "all_reduce") ? ", op=add" : "");
    char path[512];
    snprintf(path, sizeof path, "%s/cc64.nca", dir);
    assert_int_equal(tu_write_file(path, prog, at), 0);
    free(prog);
    char args[1024];
    snprintf(args, sizeof args, "%s %u %u", dir, n, rows);
    assert_int_equal(tu_python(make_inputs_py, args, NULL), 0);
    size_t clen = 65536;
    char *cmd = malloc(clen);
    assert_non_null(cmd);
    int len = snprintf(cmd, clen, "cd %s && %s run cc64.nca --arch %s -q", dir, tu_ncsim(),
                       arch);
    for (unsigned k = 0; k < n; k++)
        len += snprintf(cmd + len, clen - (size_t)len,
                        " --in in%u=in%u.npy --out out%u=out%u.npy", k, k, k, k);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s on %s: %s\n", op, arch, out ? out : "");
    free(out);
    free(cmd);
    assert_int_equal(rc, 0);
    snprintf(args, sizeof args, "%s %s %u", dir, op, n);
    rc = tu_python(check_py, args, &out);
    if (rc)
        fprintf(stderr, "%s on %s: %s\n", op, arch, out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

static void test_numerics_64_cores(void **state)
{
    (void)state;
    run_64("all_reduce", "trn1-32xl-x2");
    run_64("all_gather", "trn1-32xl-x2");
    run_64("all_reduce", "trn1n-32xl-x2");
}

/* ---- time ------------------------------------------------------------------------------------ */

/* Timing-only all_reduce of `bytes` per member over cores 0..n-1 of `a`; its stats. */
static double all_reduce_ns(const mdl_arch_t *a, unsigned n, uint64_t bytes, uint64_t *efa)
{
    unsigned chips = (n + 1) / 2;
    unsigned long long rows = bytes / 4096;
    size_t cap = 1 << 16, at = 0;
    char *prog = malloc(cap);
    assert_non_null(prog);
    at += (size_t)snprintf(prog + at, cap - at, ".chips %u\n.group g = 0..%u\n", chips, n - 1);
    for (unsigned c = 0; c < chips; c++)
        at += (size_t)snprintf(prog + at, cap - at, ".hbm x%u fp32 [%llu, 1024] scratch chip=%u\n",
                               c, rows, c);
    for (unsigned k = 0; k < n; k++)
        at += (size_t)snprintf(prog + at, cap - at,
                               ".core %u\n.engine cc\nall_reduce x%u, x%u, op=add, group=g\n", k,
                               k / 2, k / 2);
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "ar.nca";
    isa_diag_t d;
    isa_diag_init(&d, 0);
    isa_program_t *p = NULL;
    if (isa_assemble(prog, at, &opt, &p, &d) != NCSIM_OK)
        fprintf(stderr, "%s", d.text ? d.text : "");
    isa_diag_free(&d);
    free(prog);
    assert_non_null(p);
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = a;
    o.timing_only = 1;
    sim_t *s = NULL;
    char err[1024];
    ncsim_status_t st = sim_create(p, &o, &s, err, sizeof err);
    if (st != NCSIM_OK)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(st, NCSIM_OK);
    assert_int_equal(sim_run(s, SIM_RUN_UNTIL_IDLE, 0), NCSIM_OK);
    assert_true(sim_finished(s));
    const sim_stats_t *ss = sim_stats(s);
    double ns = (double)ss->total_ps / 1000.0;
    if (efa)
        *efa = ss->efa_bytes;
    sim_destroy(s);
    isa_program_free(p);
    return ns;
}

/*
 * Flat ring all_reduce of S bytes on n = 64 cores of two instances: 2(n-1) steps, each member
 * sending S/n to the next. Exactly two chunks per step cross instances (core 31 -> 32 and
 * 63 -> 0), one through each instance's network out and in. With the network much slower
 * than everything else, each step costs cc.step_latency_ns + efa.latency_ns + (S/n) /
 * (bandwidth / 8): the hand-computed time, up to the collective's issue cost.
 */
static void test_time_across_instances(void **state)
{
    (void)state;
    mdl_arch_t x2, one;
    char err[512];
    assert_int_equal(mdl_arch_load("trn1-32xl-x2", &x2, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_load("trn1-32xl", &one, err, sizeof err), NCSIM_OK);
    /* the flat ring (the hierarchical plans: test_cc_alg.c) */
    assert_int_equal(mdl_arch_set(&x2, "cc.inter_algorithm=flat_ring", err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_set(&one, "cc.algorithm=ring", err, sizeof err), NCSIM_OK);
    const uint64_t S = 64ull << 20;
    const unsigned n = 64;

    /* a slow network (80 Gbit/s = 10 GB/s) makes the EFA path the bottleneck of every step */
    mdl_arch_t slow = x2;
    assert_int_equal(mdl_arch_set(&slow, "efa.bandwidth_gbits=80", err, sizeof err), NCSIM_OK);
    uint64_t efa_bytes = 0;
    double t_slow = all_reduce_ns(&slow, n, S, &efa_bytes);
    double steps = 2.0 * (n - 1);
    double step_ns = slow.cc.step_latency_ns + slow.efa.latency_ns +
                     (double)(S / n) / (slow.efa.bandwidth_gbits / 8.0); /* B / (GB/s) = ns */
    double expect = steps * step_ns;
    fprintf(stderr, "all_reduce 64 MiB on 64 cores, EFA 80 Gbit/s: %.1f us (hand: %.1f us)\n",
            t_slow / 1e3, expect / 1e3);
    assert_true(t_slow >= expect * (1 - 1e-6)); /* event times are whole picoseconds */
    assert_true(tu_close(t_slow, expect, 0.01, 0));
    /* two chunks of S/n cross per step */
    assert_int_equal(efa_bytes, (uint64_t)(2 * steps) * (S / n));

    /* the presets: crossing instances costs more than the same collective within one
     * instance's 32 cores, and at least the EFA bound */
    double t64 = all_reduce_ns(&x2, n, S, NULL);
    double t32 = all_reduce_ns(&one, 32, S, NULL);
    double bound = steps * (x2.cc.step_latency_ns + x2.efa.latency_ns +
                            (double)(S / n) / (x2.efa.bandwidth_gbits / 8.0));
    fprintf(stderr, "all_reduce 64 MiB: 32 cores on one trn1.32xlarge %.1f us, 64 cores on two "
                    "%.1f us (EFA bound %.1f us)\n",
            t32 / 1e3, t64 / 1e3, bound / 1e3);
    assert_true(t64 >= bound * 0.999);
    assert_true(t64 > t32);
    /* trn1n's network is twice as wide: faster across instances once the network is what
     * limits (the calibrated ~57 GB/s collective data path per member, cc.rank_bandwidth_gbps,
     * is opened up: with it, both instance types move 1 MiB chunks at the same rate) */
    mdl_arch_t n2, x2w = x2;
    assert_int_equal(mdl_arch_load("trn1n-32xl-x2", &n2, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_set(&n2, "cc.inter_algorithm=flat_ring", err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_set(&n2, "cc.rank_bandwidth_gbps=1000", err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_set(&x2w, "cc.rank_bandwidth_gbps=1000", err, sizeof err),
                     NCSIM_OK);
    assert_true(all_reduce_ns(&n2, n, S, NULL) < all_reduce_ns(&x2w, n, S, NULL));
    /* nothing crosses instances within one instance's cores */
    all_reduce_ns(&x2, 32, S, &efa_bytes);
    assert_int_equal(efa_bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),          cmocka_unit_test(test_validation),
        cmocka_unit_test(test_topology),         cmocka_unit_test(test_numerics_64_cores),
        cmocka_unit_test(test_time_across_instances),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
