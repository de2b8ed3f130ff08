/*
 * test_cc.c -- collectives (ISA.md 7.6): every collective against NumPy on 2, 4 and 16 cores
 * (1, 2 and 8 chips of trn1-32xl), send/recv, mismatch and missing-member reports, and the
 * shape of collective time: a latency floor for small sizes, bandwidth-bound for large ones,
 * growing with the ring.
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

/* NumPy reference for one collective: reads in*.npy, out*.npy from the directory. */
static const char *check_py =
    "import sys, numpy as np\n"
    "d, op, red, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])\n"
    "x = [np.load(f'{d}/in{k}.npy') for k in range(n)]\n"
    "y = [np.load(f'{d}/out{k}.npy') for k in range(n)]\n"
    "def reduce(xs):\n"
    "    acc = xs[0].astype(np.float32).copy()\n"
    "    for a in xs[1:]:\n"
    "        acc = {'add': acc + a, 'max': np.maximum(acc, a), 'min': np.minimum(acc, a)}[red]\n"
    "    return acc.astype(np.float32)\n"
    "if op == 'all_reduce':\n"
    "    ref = [reduce(x)] * n\n"
    "elif op == 'reduce_scatter':\n"
    "    r = reduce(x); ref = np.split(r, n, axis=0)\n"
    "elif op == 'all_gather':\n"
    "    ref = [np.concatenate(x, axis=0)] * n\n"
    "elif op == 'all_to_all':\n"
    "    ch = [np.split(a, n, axis=0) for a in x]\n"
    "    ref = [np.concatenate([ch[i][j] for i in range(n)], axis=0) for j in range(n)]\n"
    "for k in range(n):\n"
    "    if not np.array_equal(y[k], ref[k]):\n"
    "        print('core', k, 'differs: max abs', np.abs(y[k] - ref[k]).max()); sys.exit(1)\n"
    "print('ok')\n";

static const char *make_inputs_py =
    "import sys, numpy as np\n"
    "d, n, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "rng = np.random.default_rng(n * 1000 + rows)\n"
    "for k in range(n):\n"
    "    np.save(f'{d}/in{k}.npy', rng.standard_normal((rows, 8)).astype(np.float32))\n";

static void run_collective(const char *op, const char *red, unsigned n)
{
    const char *dir = tu_tmpdir();
    unsigned rows = 2 * n;
    unsigned out_rows = !strcmp(op, "all_gather") ? rows * n
                        : !strcmp(op, "reduce_scatter") ? rows / n
                                                        : rows;
    size_t cap = 65536, at = 0;
    char *prog = malloc(cap);
    assert_non_null(prog);
    at += (size_t)snprintf(prog + at, cap - at, ".chips %u\n.group g = 0..%u\n", (n + 1) / 2,
                           n - 1);
    for (unsigned k = 0; k < n; k++)
        at += (size_t)snprintf(prog + at, cap - at,
                               ".hbm in%u fp32 [%u, 8] input chip=%u\n"
                               ".hbm out%u fp32 [%u, 8] output chip=%u\n",
                               k, rows, k / 2, k, out_rows, k / 2);
    for (unsigned k = 0; k < n; k++)
        at += (size_t)snprintf(prog + at, cap - at, ".core %u\n.engine cc\n%s out%u, in%u%s%s, "
                                                    "group=g\n",
                               k, op, k, k, red[0] ? ", op=" : "", red);
    char path[512];
    snprintf(path, sizeof path, "%s/cc.nca", dir);
    assert_int_equal(tu_write_file(path, prog, at), 0);
    free(prog);
    char args[1024];
    snprintf(args, sizeof args, "%s %u %u", dir, n, rows);
    assert_int_equal(tu_python(make_inputs_py, args, NULL), 0);
    char cmd[16384];
    int len = snprintf(cmd, sizeof cmd, "cd %s && %s run cc.nca --arch trn1-32xl -q", dir,
                       tu_ncsim());
    for (unsigned k = 0; k < n; k++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --in in%u=in%u.npy --out out%u=out%u.npy",
                        k, k, k, k);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s %s on %u cores: %s\n", op, red, n, out);
    free(out);
    assert_int_equal(rc, 0);
    snprintf(args, sizeof args, "%s %s %s %u", dir, op, red[0] ? red : "add", n);
    rc = tu_python(check_py, args, &out);
    if (rc)
        fprintf(stderr, "%s %s on %u cores: %s\n", op, red, n, out ? out : "");
    free(out);
    assert_int_equal(rc, 0);
}

static void test_all_reduce(void **state)
{
    (void)state;
    unsigned ns[] = {2, 4, 16};
    for (int i = 0; i < 3; i++) {
        run_collective("all_reduce", "add", ns[i]);
        run_collective("all_reduce", "max", ns[i]);
        run_collective("all_reduce", "min", ns[i]);
    }
}

static void test_gather_scatter_alltoall(void **state)
{
    (void)state;
    unsigned ns[] = {2, 4, 16};
    for (int i = 0; i < 3; i++) {
        run_collective("all_gather", "", ns[i]);
        run_collective("reduce_scatter", "add", ns[i]);
        run_collective("all_to_all", "", ns[i]);
    }
}

/* ---- in-process runs ----------------------------------------------------------------------- */

static sim_t *run_prog(const char *text, const mdl_arch_t *arch, isa_program_t **prog,
                       ncsim_status_t *st)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "t.nca";
    isa_diag_t d;
    isa_diag_init(&d, 0);
    *prog = NULL;
    if (isa_assemble(text, strlen(text), &opt, prog, &d) != NCSIM_OK)
        fprintf(stderr, "%s", d.text ? d.text : "");
    isa_diag_free(&d);
    assert_non_null(*prog);
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = arch;
    o.timing_only = 1;
    sim_t *s = NULL;
    char err[1024];
    ncsim_status_t cst = sim_create(*prog, &o, &s, err, sizeof err);
    if (cst != NCSIM_OK)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(cst, NCSIM_OK);
    *st = sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
    return s;
}

static void test_send_recv(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/p2p.nca", dir);
    const char *prog = ".chips 2\n.hbm a bf16 [64, 32] input chip=0\n"
                       ".hbm b fp32 [2048] output chip=1\n"
                       ".core 0\n.engine cc\nsend a, to=3, tag=7\n"
                       ".core 3\n.engine cc\nrecv b, from=0, tag=7\n";
    assert_int_equal(tu_write_file(path, prog, strlen(prog)), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && /usr/bin/python3 -c \"import numpy as np; np.save('a.npy', "
             "np.linspace(-3, 3, 2048, dtype=np.float32).reshape(64, 32))\" && "
             "%s run p2p.nca --arch trn1-32xl --in a=a.npy --out b=b.npy -q && "
             "/usr/bin/python3 -c \"import numpy as np; a=np.load('a.npy'); b=np.load('b.npy'); "
             "u=a.view(np.uint32); r=((u+0x7fff+((u>>16)&1))>>16<<16).view(np.float32); "
             "assert np.array_equal(b, r.reshape(-1)), 'mismatch'\"",
             dir, tu_ncsim());
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc)
        fprintf(stderr, "%s\n", out);
    free(out);
    assert_int_equal(rc, 0);
}

static void test_mismatch_and_missing(void **state)
{
    (void)state;
    mdl_arch_t a;
    char err[256];
    assert_int_equal(mdl_arch_load("trn1", &a, err, sizeof err), NCSIM_OK);
    isa_program_t *p;
    ncsim_status_t st;
    sim_t *s = run_prog(".hbm x fp32 [8] scratch\n.hbm y fp32 [16] scratch\n.group g = 0, 1\n"
                        ".core 0\n.engine cc\nall_reduce x, x, op=add, group=g\n"
                        ".core 1\n.engine cc\nall_gather y, x, group=g\n",
                        &a, &p, &st);
    assert_int_equal(st, NCSIM_PROGRAM);
    assert_non_null(strstr(sim_error(s), "collective mismatch on group 'g'"));
    assert_non_null(strstr(sim_error(s), "different operations"));
    assert_non_null(strstr(sim_error(s), "t.nca:6: core 0 cc instruction 0"));
    assert_non_null(strstr(sim_error(s), "t.nca:9: core 1 cc instruction 0"));
    sim_destroy(s);
    isa_program_free(p);
    /* core 1 never issues the second all_reduce */
    s = run_prog(".hbm x fp32 [8] scratch\n.group g = 0, 1\n"
                 ".core 0\n.engine cc\nall_reduce x, x, op=add, group=g\n"
                 "all_reduce x, x, op=max, group=g\n"
                 ".core 1\n.engine cc\nall_reduce x, x, op=add, group=g\n",
                 &a, &p, &st);
    assert_int_equal(st, NCSIM_PROGRAM);
    assert_non_null(strstr(sim_error(s), "deadlock"));
    assert_non_null(strstr(sim_error(s), "collective all_reduce #2 on group 'g': never issued "
                                         "by core 1"));
    sim_destroy(s);
    isa_program_free(p);
    /* a send nobody receives */
    s = run_prog(".hbm x fp32 [8] scratch\n.core 0\n.engine cc\nsend x, to=1, tag=2\n", &a, &p,
                 &st);
    assert_int_equal(st, NCSIM_PROGRAM);
    assert_non_null(strstr(sim_error(s), "send from core 0 to core 1 tag 2: no matching recv"));
    sim_destroy(s);
    isa_program_free(p);
}

/* Time of an all_reduce of `bytes` per member over `n` cores of trn1-32xl, in ns. */
static double all_reduce_ns(const mdl_arch_t *a, unsigned n, uint64_t bytes)
{
    char prog[8192];
    /* [rows, 1024] fp32: 4 KiB rows keep every view dimension under 65,536 */
    size_t at = (size_t)snprintf(prog, sizeof prog, ".chips %u\n.hbm x fp32 [%llu, 1024] scratch\n",
                                 (n + 1) / 2, (unsigned long long)(bytes < 4096 ? 1 : bytes / 4096));
    for (unsigned c = 1; c < (n + 1) / 2; c++)
        at += (size_t)snprintf(prog + at, sizeof prog - at,
                               ".hbm x%u fp32 [%llu, 1024] scratch chip=%u\n", c,
                               (unsigned long long)(bytes < 4096 ? 1 : bytes / 4096), c);
    at += (size_t)snprintf(prog + at, sizeof prog - at, ".group g = 0..%u\n", n - 1);
    for (unsigned k = 0; k < n; k++) {
        if (k / 2 == 0)
            at += (size_t)snprintf(prog + at, sizeof prog - at,
                                   ".core %u\n.engine cc\nall_reduce x, x, op=add, group=g\n", k);
        else
            at += (size_t)snprintf(prog + at, sizeof prog - at,
                                   ".core %u\n.engine cc\nall_reduce x%u, x%u, op=add, "
                                   "group=g\n",
                                   k, k / 2, k / 2);
    }
    isa_program_t *p;
    ncsim_status_t st;
    sim_t *s = run_prog(prog, a, &p, &st);
    assert_int_equal(st, NCSIM_OK);
    double ns = (double)sim_stats(s)->total_ps / 1000.0;
    sim_destroy(s);
    isa_program_free(p);
    return ns;
}

static void test_collective_time(void **state)
{
    (void)state;
    mdl_arch_t a;
    char err[256];
    assert_int_equal(mdl_arch_load("trn1-32xl", &a, err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_set(&a, "cc.algorithm=ring", err, sizeof err), NCSIM_OK);
    /* latency floor: 4 KiB and 16 KiB cost about the same, dominated by the step latencies */
    double t1k = all_reduce_ns(&a, 8, 4096), t4k = all_reduce_ns(&a, 8, 16384);
    double floor_ns = 2 * 7 * a.cc.step_latency_ns;
    assert_true(t1k >= floor_ns && t4k < t1k * 1.2);
    /* bandwidth-bound: 64 MiB takes about twice 32 MiB */
    double t32 = all_reduce_ns(&a, 8, 32u << 20), t64 = all_reduce_ns(&a, 8, 64u << 20);
    assert_true(tu_close(t64 / t32, 2.0, 0.1, 0));
    /* a ring of 16 cores moves the same bytes per member in more, smaller steps: at large
     * sizes about the same bus bandwidth (2(n-1)/n S), at small sizes more latency */
    double t16_small = all_reduce_ns(&a, 16, 4096);
    assert_true(t16_small > t1k * 1.5);
    /* a slower link slows a collective across chips */
    mdl_arch_t slow = a;
    assert_int_equal(mdl_arch_set(&slow, "link.bandwidth_gbps=10", err, sizeof err), NCSIM_OK);
    assert_true(all_reduce_ns(&slow, 8, 32u << 20) > t32 * 2);
    /* recursive halving-doubling takes fewer steps: faster at small sizes on 16 cores */
    mdl_arch_t rhd = a;
    assert_int_equal(mdl_arch_set(&rhd, "cc.algorithm=rdh", err, sizeof err), NCSIM_OK);
    assert_true(all_reduce_ns(&rhd, 16, 4096) < t16_small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_reduce),          cmocka_unit_test(test_gather_scatter_alltoall),
        cmocka_unit_test(test_send_recv),           cmocka_unit_test(test_mismatch_and_missing),
        cmocka_unit_test(test_collective_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
