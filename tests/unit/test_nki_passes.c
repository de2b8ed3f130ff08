/*
 * test_nki_passes.c -- the NKI lowering's passes in C (api/nki_passes.c): the list scheduler
 * and the waits on node lists worked out by hand (the same cases as
 * python/tests/nki/test_nki_sched.py), the fold on a stream whose loops are written out by
 * hand, the dependence pass on access logs worked out by hand, and every refusal of a bad array
 * with its message. The Python tests
 * (test_nki_native.py) compare these functions with the Python passes on real kernels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../api/nki_passes.h"

enum { SP, PE, ACT, DVE, POOL, N_ENG = 5, N_Q = 16, Q0 = N_ENG };

/* ScalarE: a1; VectorE: d1 (reads a1's result, 300 ns); ScalarE: a2 (reads d1's), a3
 * (independent). At 100 ns ScalarE can start a3 but a2 not before 400: a3 goes first. */
static void test_hand_made_order_and_waits(void **state)
{
    (void)state;
    const int32_t agent[] = {ACT, DVE, ACT, ACT}, engine[] = {ACT, DVE, ACT, ACT};
    const int32_t index[] = {0, 0, 1, 2};
    const int64_t offs[] = {0, 0, 1, 2, 2};
    const int32_t deps[] = {ACT, 0, DVE, 0};
    const double cost[] = {100, 0, 300, 0, 100, 0, 100, 0};
    const uint8_t pin[] = {0, 0, 0, 0};
    int64_t order[4];
    assert_int_equal(ncsim_nki_internal_schedule(4, agent, engine, offs, deps, cost, pin, 64,
                                                 N_ENG, N_Q, 50.0, order),
                     NCSIM_OK);
    const int64_t want[] = {0, 1, 3, 2};
    assert_memory_equal(order, want, sizeof want);
    int32_t new_index[4], waits[4];
    int64_t wo[5];
    assert_int_equal(ncsim_nki_internal_waits(4, agent, engine, index, offs, deps, order, N_ENG,
                                              N_Q, new_index, wo, waits),
                     NCSIM_OK);
    const int32_t want_idx[] = {0, 0, 1, 2};
    assert_memory_equal(new_index, want_idx, sizeof want_idx);
    /* a1: none; d1: ScalarE's 0; a3: none; a2: VectorE's 0 */
    const int64_t want_wo[] = {0, 0, 1, 1, 2};
    assert_memory_equal(wo, want_wo, sizeof want_wo);
    assert_int_equal(waits[0], ACT);
    assert_int_equal(waits[1], 0);
    assert_int_equal(waits[2], DVE);
    assert_int_equal(waits[3], 0);

    /* a window of one keeps the order; pinning a2 and a3 does too */
    assert_int_equal(ncsim_nki_internal_schedule(4, agent, engine, offs, deps, cost, pin, 1,
                                                 N_ENG, N_Q, 50.0, order),
                     NCSIM_OK);
    for (int64_t p = 0; p < 4; p++)
        assert_int_equal(order[p], p);
    const uint8_t pinned[] = {0, 0, 1, 1};
    assert_int_equal(ncsim_nki_internal_schedule(4, agent, engine, offs, deps, cost, pinned, 64,
                                                 N_ENG, N_Q, 50.0, order),
                     NCSIM_OK);
    for (int64_t p = 0; p < 4; p++)
        assert_int_equal(order[p], p);
}

/* Two loads on queue 0 issued by SP; ScalarE's a1 reads the second, a2 the first: a2's data
 * arrives first, so ScalarE takes a2 before a1, and each waits on its load's new place. */
static void test_transfer_waits(void **state)
{
    (void)state;
    const int32_t agent[] = {Q0, Q0, ACT, ACT}, engine[] = {SP, SP, ACT, ACT};
    const int32_t index[] = {0, 1, 0, 1};
    const int64_t offs[] = {0, 0, 0, 1, 2};
    const int32_t deps[] = {Q0, 1, Q0, 0};
    const double cost[] = {1000, 1300, 1000, 1300, 100, 0, 100, 0};
    const uint8_t pin[4] = {0};
    int64_t order[4];
    assert_int_equal(ncsim_nki_internal_schedule(4, agent, engine, offs, deps, cost, pin, 64,
                                                 N_ENG, N_Q, 50.0, order),
                     NCSIM_OK);
    const int64_t want[] = {0, 1, 3, 2};
    assert_memory_equal(order, want, sizeof want);
    int32_t new_index[4], waits[4];
    int64_t wo[5];
    assert_int_equal(ncsim_nki_internal_waits(4, agent, engine, index, offs, deps, order, N_ENG,
                                              N_Q, new_index, wo, waits),
                     NCSIM_OK);
    const int64_t want_wo[] = {0, 0, 0, 1, 2};
    assert_memory_equal(wo, want_wo, sizeof want_wo);
    const int32_t want_w[] = {Q0, 0, Q0, 1};
    assert_memory_equal(waits, want_w, sizeof want_w);
}

static void expect_refusal(ncsim_status_t st, const char *words)
{
    assert_int_equal(st, NCSIM_USAGE);
    const char *msg = ncsim_last_error();
    if (!strstr(msg, words))
        fail_msg("message '%s' lacks '%s'", msg, words);
}

static void test_bad_arrays(void **state)
{
    (void)state;
    int32_t agent[] = {ACT, DVE}, engine[] = {ACT, DVE}, index[] = {0, 0};
    int64_t offs[] = {0, 0, 1};
    int32_t deps[] = {ACT, 0};
    double cost[] = {1, 0, 1, 0};
    uint8_t pin[2] = {0};
    int64_t order[2];
    int32_t ni[2], waits[2];
    int64_t wo[3];
    deps[1] = 7; /* ScalarE has one instruction */
    expect_refusal(ncsim_nki_internal_schedule(2, agent, engine, offs, deps, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "dependence on instruction 7 of agent 2");
    int64_t ok_order[] = {0, 1};
    expect_refusal(ncsim_nki_internal_waits(2, agent, engine, index, offs, deps, ok_order,
                                            N_ENG, N_Q, ni, wo, waits),
                   "dependence on instruction 7");
    deps[1] = 0;
    deps[0] = 99;
    expect_refusal(ncsim_nki_internal_schedule(2, agent, engine, offs, deps, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "agent 99");
    deps[0] = ACT;
    agent[1] = -1;
    expect_refusal(ncsim_nki_internal_schedule(2, agent, engine, offs, deps, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "node 1: agent -1");
    agent[1] = DVE;
    engine[0] = Q0;
    expect_refusal(ncsim_nki_internal_schedule(2, agent, engine, offs, deps, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "node 0: engine 5");
    engine[0] = ACT;
    offs[2] = -3;
    expect_refusal(ncsim_nki_internal_schedule(2, agent, engine, offs, deps, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "dependence offset");
    offs[2] = 1;
    cost[2] = -1;
    expect_refusal(ncsim_nki_internal_schedule(2, agent, engine, offs, deps, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "node 1: cost");
    cost[2] = 1;
    expect_refusal(ncsim_nki_internal_schedule(-1, agent, engine, offs, deps, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "node count");
    expect_refusal(ncsim_nki_internal_schedule(2, NULL, engine, offs, deps, cost, pin, 64, N_ENG,
                                               N_Q, 50, order),
                   "NULL");
    /* a cycle: each follows the other */
    int32_t agent2[] = {ACT, DVE}, cyc[] = {DVE, 0, ACT, 0};
    int64_t offs2[] = {0, 1, 2};
    expect_refusal(ncsim_nki_internal_schedule(2, agent2, engine, offs2, cyc, cost, pin, 64,
                                               N_ENG, N_Q, 50, order),
                   "cycle");
    /* the waits: an order that is no permutation, one that puts a dependence later, an
     * agent's index given twice */
    int64_t bad_order[] = {1, 1};
    expect_refusal(ncsim_nki_internal_waits(2, agent, engine, index, offs, deps, bad_order,
                                            N_ENG, N_Q, ni, wo, waits),
                   "order[1] = 1");
    int64_t late[] = {1, 0};
    expect_refusal(ncsim_nki_internal_waits(2, agent, engine, index, offs, deps, late, N_ENG,
                                            N_Q, ni, wo, waits),
                   "puts later");
    int32_t same_agent[] = {ACT, ACT}, same_eng[] = {ACT, ACT};
    expect_refusal(ncsim_nki_internal_waits(2, same_agent, same_eng, index, offs, deps,
                                            ok_order, N_ENG, N_Q, ni, wo, waits),
                   "given twice");
    /* nothing at all is fine */
    assert_int_equal(ncsim_nki_internal_schedule(0, NULL, NULL, NULL, NULL, NULL, NULL, 64,
                                                 N_ENG, N_Q, 50, NULL),
                     NCSIM_OK);
}

/* Two rounds of: a line, then eight lines whose offset steps by 64; the second round's
 * numbers 4096 (and the wait 1) further. Short periods are found first: a loop of two over
 * (a line, a loop of eight). */
static void test_fold_nested(void **state)
{
    (void)state;
    char text[2048];
    size_t n = 0;
    for (int r = 0; r < 2; r++) {
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "%s    act_op sb:fp32@0:128+%d[1x8] | wait s_pe >= %d",
                              r ? "\n" : "", 4096 * r, r + 1);
        for (int k = 0; k < 8; k++)
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "\n    dve_op sb:fp32@0:128+%d[1x8]", 4096 * r + 64 * k);
    }
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(ncsim_nki_internal_fold(text, n, 18, &out, &len), NCSIM_OK);
    const char *want = "    .loop i0 = 0, 2\n"
                       "        act_op sb:fp32@0:128+(0+4096*i0)[1x8] | wait s_pe >= (1+1*i0)\n"
                       "        .loop i1 = 0, 8\n"
                       "            dve_op sb:fp32@0:128+((0+4096*i0)+64*i1)[1x8]\n"
                       "        .endloop\n"
                       "    .endloop";
    assert_string_equal(out, want);
    assert_int_equal(len, strlen(want));
    ncsim_free(out);

    /* a short run stays as it is, its numbers rewritten as integers (leading zeros go) */
    const char *few = "  op x+007[1]\nop x+8[1]";
    assert_int_equal(ncsim_nki_internal_fold(few, strlen(few), 2, &out, &len), NCSIM_OK);
    assert_string_equal(out, "    op x+7[1]\n    op x+8[1]");
    ncsim_free(out);
    /* a decreasing run */
    const char *down = "op x+30[1]\nop x+20[1]\nop x+10[1]\nop x+0[1]";
    assert_int_equal(ncsim_nki_internal_fold(down, strlen(down), 4, &out, &len), NCSIM_OK);
    assert_string_equal(out, "    .loop i0 = 0, 4\n        op x+(30-10*i0)[1]\n    .endloop");
    ncsim_free(out);
}

static void test_fold_refusals(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    expect_refusal(ncsim_nki_internal_fold("a\nb", 3, 3, &out, &len), "holds 2 lines, not 3");
    assert_null(out);
    expect_refusal(ncsim_nki_internal_fold("op \xc3\xa9", 5, 1, &out, &len), "not ASCII");
    const char *big = "op x+4611686018427387904[1]";
    expect_refusal(ncsim_nki_internal_fold(big, strlen(big), 1, &out, &len), "2^62");
    const char *huge = "op x+99999999999999999999999999[1]"; /* would overflow 64 bits */
    expect_refusal(ncsim_nki_internal_fold(huge, strlen(huge), 1, &out, &len), "2^62");
    const char *most = "op x+4611686018427387903[1]\nop x+00000000000000000000000001[1]";
    assert_int_equal(ncsim_nki_internal_fold(most, strlen(most), 2, &out, &len), NCSIM_OK);
    assert_string_equal(out, "    op x+4611686018427387903[1]\n    op x+1[1]");
    ncsim_free(out);
    expect_refusal(ncsim_nki_internal_fold("x", 1, 1, NULL, &len), "NULL");
    assert_int_equal(ncsim_nki_internal_fold("", 0, 0, &out, &len), NCSIM_OK);
    assert_string_equal(out, "");
    ncsim_free(out);
}

/* The writer: the hand-made case above (a1, d1, a3, a2 after scheduling) with source lines
 * 7, 7, 8, 7. a1 and d1 post (a wait names them); a3 follows a1 on ScalarE without a new
 * .loc only if its line is the same. */
static const char SEMS[] = "s_sp\ns_pe\ns_act\ns_dve\ns_pool\ns_q0\ns_q1\ns_q2\ns_q3\ns_q4\n"
                           "s_q5\ns_q6\ns_q7\ns_q8\ns_q9\ns_q10\ns_q11\ns_q12\ns_q13\ns_q14\n"
                           "s_q15\nsp\npe\nact\ndve\npool";

static void test_streams(void **state)
{
    (void)state;
    const int32_t agent[] = {ACT, DVE, ACT, ACT}, engine[] = {ACT, DVE, ACT, ACT};
    const int64_t line[] = {7, 7, 8, 7};
    const char texts[] = "exp a\nmul d\nexp b\ntanh c";
    const int64_t order[] = {0, 1, 3, 2};
    const int32_t new_index[] = {0, 0, 1, 2};
    const int64_t wo[] = {0, 0, 1, 1, 2};
    const int32_t waits[] = {ACT, 0, DVE, 0};
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(ncsim_nki_internal_streams(4, agent, engine, line, texts, strlen(texts),
                                                order, new_index, wo, waits, SEMS, strlen(SEMS),
                                                N_ENG, N_Q, 1, &out, &len),
                     NCSIM_OK);
    const char *want = ".sem s_act\n"
                       ".sem s_dve\n"
                       ".engine act\n"
                       "    .loc 7\n"
                       "    exp a | post s_act\n"
                       "    tanh c\n"
                       "    .loc 8\n"
                       "    exp b | wait s_dve >= 1\n"
                       ".engine dve\n"
                       "    .loc 7\n"
                       "    mul d | wait s_act >= 1 | post s_dve";
    assert_string_equal(out, want);
    assert_int_equal(len, strlen(want));
    ncsim_free(out);

    /* three waits: one nop takes the first two */
    const int32_t agent3[] = {SP, PE, POOL, ACT}, engine3[] = {SP, PE, POOL, ACT};
    const int64_t line3[] = {1, 1, 1, 1};
    const char texts3[] = "a\nb\nc\nd";
    const int64_t order3[] = {0, 1, 2, 3};
    const int32_t idx3[] = {0, 0, 0, 0};
    const int64_t wo3[] = {0, 0, 0, 0, 3};
    const int32_t waits3[] = {POOL, 0, PE, 0, SP, 0};
    assert_int_equal(ncsim_nki_internal_streams(4, agent3, engine3, line3, texts3,
                                                strlen(texts3), order3, idx3, wo3, waits3, SEMS,
                                                strlen(SEMS), N_ENG, N_Q, 0, &out, &len),
                     NCSIM_OK);
    assert_non_null(strstr(out, ".engine act\n    .loc 1\n    nop | wait s_pool >= 1 | wait "
                                "s_pe >= 1\n    d | wait s_sp >= 1"));
    ncsim_free(out);

    /* refusals */
    const int64_t bad_order[] = {0, 0, 3, 2};
    expect_refusal(ncsim_nki_internal_streams(4, agent, engine, line, texts, strlen(texts),
                                              bad_order, new_index, wo, waits, SEMS,
                                              strlen(SEMS), N_ENG, N_Q, 1, &out, &len),
                   "given twice");
    expect_refusal(ncsim_nki_internal_streams(4, agent, engine, line, texts, strlen(texts) - 7,
                                              order, new_index, wo, waits, SEMS, strlen(SEMS),
                                              N_ENG, N_Q, 1, &out, &len),
                   "texts do not hold 4 lines");
    expect_refusal(ncsim_nki_internal_streams(4, agent, engine, line, texts, strlen(texts),
                                              order, new_index, wo, waits, "s_sp", 4, N_ENG,
                                              N_Q, 1, &out, &len),
                   "names do not hold");
    const int32_t bad_waits[] = {ACT, 5, DVE, 0};
    expect_refusal(ncsim_nki_internal_streams(4, agent, engine, line, texts, strlen(texts),
                                              order, new_index, wo, bad_waits, SEMS,
                                              strlen(SEMS), N_ENG, N_Q, 1, &out, &len),
                   "a wait on instruction 5 of agent 2");
    const int32_t bad_idx[] = {0, 0, 3, 2};
    expect_refusal(ncsim_nki_internal_streams(4, agent, engine, line, texts, strlen(texts),
                                              order, bad_idx, wo, waits, SEMS, strlen(SEMS),
                                              N_ENG, N_Q, 1, &out, &len),
                   "new index 3");
    assert_null(out);
}

/* ---- the dependence pass ------------------------------------------------------------------ */

/* The dependences the pass gives node p, as "agent:index" words in its order, sorted. */
static void node_deps(const int64_t *offs, const int32_t *deps, int64_t p, char *out,
                      size_t size)
{
    int64_t k0 = offs[p], k1 = offs[p + 1];
    int32_t pairs[64][2];
    int64_t n = k1 - k0;
    assert_true(n >= 0 && n <= 64);
    for (int64_t k = 0; k < n; k++) {
        pairs[k][0] = deps[2 * (k0 + k)];
        pairs[k][1] = deps[2 * (k0 + k) + 1];
    }
    for (int64_t a = 1; a < n; a++) /* insertion sort by (agent, index) */
        for (int64_t b = a; b > 0 && (pairs[b - 1][0] > pairs[b][0] ||
                                      (pairs[b - 1][0] == pairs[b][0] &&
                                       pairs[b - 1][1] > pairs[b][1]));
             b--) {
            int32_t t0 = pairs[b][0], t1 = pairs[b][1];
            pairs[b][0] = pairs[b - 1][0];
            pairs[b][1] = pairs[b - 1][1];
            pairs[b - 1][0] = t0;
            pairs[b - 1][1] = t1;
        }
    size_t len = 0;
    out[0] = 0;
    for (int64_t k = 0; k < n; k++)
        len += (size_t)snprintf(out + len, size - len, "%s%d:%d", k ? " " : "",
                                (int)pairs[k][0], (int)pairs[k][1]);
}

#define R2(m, w, a, b, c, d) (m), 4 + (w), (a), (b), (c), (d)

/* A load, a matmul, reads that cover reads, a write that retires what it covers, accesses of
 * 1 and 3 dims to one memory, an accumulating read-and-write: each node's dependences worked
 * out by hand (memory 0: an SBUF buffer, 1: an HBM input, 2: a PSUM buffer, 3: an HBM output,
 * 4: a 3-dim HBM tensor). */
static void test_deps_hand_made(void **state)
{
    (void)state;
    const int64_t ext[] = {128, 2048, 256, 512, 128, 2048, 256, 512, 4, 8};
    const int64_t log[] = {
        Q0, 0, R2(1, 0, 0, 128, 0, 512), R2(0, 1, 0, 128, 0, 1024), -1,       /* 0: load */
        PE, 0, R2(0, 0, 0, 128, 0, 512), R2(2, 1, 0, 128, 0, 2048), -1,       /* 1: matmul */
        ACT, 0, R2(2, 0, 0, 128, 0, 2048), R2(0, 1, 0, 64, 0, 1024), -1,      /* 2 */
        ACT, 1, R2(2, 0, 0, 128, 0, 1024), -1,                                /* 3 */
        ACT, 2, R2(2, 0, 0, 128, 0, 2048), -1,                                /* 4 */
        DVE, 0, R2(2, 1, 0, 128, 0, 2048), -1,                                /* 5 */
        POOL, 0, R2(2, 0, 0, 128, 0, 16), -1,                                 /* 6 */
        Q0 + 1, 0, R2(1, 0, 0, 128, 0, 512), R2(3, 1, 0, 128, 0, 512), -1,    /* 7 */
        SP, 0, 4, 7, 0, 4, 0, 8, 0, 2, -1,                                    /* 8: 3 dims */
        SP, 1, 4, 2, 2, 3, -1,                                                /* 9: 1 dim */
        ACT, 3, R2(0, 0, 0, 64, 0, 1024), R2(0, 1, 0, 64, 0, 1024), -1,       /* 10 */
        PE, 1, -1,                                                            /* 11: none */
    };
    const char *want[] = {
        "",
        "5:0",                  /* RAW on the load */
        "1:0 5:0",              /* RAW on the matmul's PSUM; WAR and WAW on SBUF */
        "1:0",                  /* RAW; the earlier read of ACT is not contained */
        "1:0 2:0 2:1",          /* RAW; it covers ACT's two earlier reads: their order kept */
        "1:0 2:2",              /* WAW; WAR on the one read left (the covered ones not met) */
        "3:0",                  /* RAW on the write that retired the matmul's */
        "",                     /* another queue's read of the input: none */
        "",
        "0:0",                  /* over the dim both have */
        "1:0 2:0 5:0",          /* read: RAW on 0 and 2; write: WAR on 1, WAW on 2 */
        "",
    };
    int64_t *offs = NULL;
    int32_t *deps = NULL;
    int64_t n = (int64_t)(sizeof want / sizeof *want);
    assert_int_equal(ncsim_nki_internal_deps(n, log, (int64_t)(sizeof log / sizeof *log), 5,
                                             ext, N_ENG + N_Q, &offs, &deps),
                     NCSIM_OK);
    char got[256];
    for (int64_t p = 0; p < n; p++) {
        node_deps(offs, deps, p, got, sizeof got);
        if (strcmp(got, want[p]))
            fail_msg("node %lld: dependences '%s', expected '%s'", (long long)p, got, want[p]);
    }
    ncsim_free(offs);
    ncsim_free(deps);
}

/* A write of the whole buffer, then 400 reads of disjoint columns of it (the index's only cell
 * fills up and is narrowed), then a write of one column and a read of the whole: the
 * dependences after the narrowing are those of the rule. */
static void test_deps_many_records(void **state)
{
    (void)state;
    enum { READS = 400 };
    const int64_t ext[] = {128, 16 * READS};
    static int64_t log[9 + READS * 9 + 18];
    int64_t nl = 0;
    int64_t head[] = {Q0, 0, R2(0, 1, 0, 128, 0, 16 * READS), -1};
    memcpy(log, head, sizeof head);
    nl += 9;
    for (int k = 0; k < READS; k++) {
        int64_t rd[] = {SP, k, R2(0, 0, 0, 128, 16 * k, 16 * k + 16), -1};
        memcpy(log + nl, rd, sizeof rd);
        nl += 9;
    }
    int64_t tail[] = {DVE, 0, R2(0, 1, 0, 128, 80, 96), -1,
                      ACT, 0, R2(0, 0, 0, 128, 0, 16 * READS), -1};
    memcpy(log + nl, tail, sizeof tail);
    nl += 18;
    int64_t *offs = NULL;
    int32_t *deps = NULL;
    assert_int_equal(ncsim_nki_internal_deps(READS + 3, log, nl, 1, ext, N_ENG + N_Q, &offs,
                                             &deps),
                     NCSIM_OK);
    char got[256];
    node_deps(offs, deps, 1, got, sizeof got);
    assert_string_equal(got, "5:0");
    node_deps(offs, deps, READS, got, sizeof got);
    assert_string_equal(got, "5:0");
    node_deps(offs, deps, READS + 1, got, sizeof got); /* WAR on column 5's read; WAW */
    assert_string_equal(got, "0:5 5:0");
    node_deps(offs, deps, READS + 2, got, sizeof got); /* RAW on both writes */
    assert_string_equal(got, "3:0 5:0");
    ncsim_free(offs);
    ncsim_free(deps);
}

static void test_deps_refusals(void **state)
{
    (void)state;
    const int64_t ext[] = {128, 64}, bad_ext[] = {128, 0};
    int64_t *offs = NULL;
    int32_t *deps = NULL;
    const int64_t ok[] = {ACT, 0, R2(0, 1, 0, 1, 0, 1), -1};
    expect_refusal(ncsim_nki_internal_deps(1, ok, 9, 1, ext, N_ENG + N_Q, NULL, &deps),
                   "NULL argument");
    expect_refusal(ncsim_nki_internal_deps(-1, ok, 9, 1, ext, N_ENG + N_Q, &offs, &deps),
                   "node count -1");
    expect_refusal(ncsim_nki_internal_deps(1, ok, 9, 1, bad_ext, N_ENG + N_Q, &offs, &deps),
                   "extent 0 along dim 1");
    expect_refusal(ncsim_nki_internal_deps(1, ok, 9, 1, ext, 0, &offs, &deps), "0 agents");
    expect_refusal(ncsim_nki_internal_deps(2, ok, 9, 1, ext, N_ENG + N_Q, &offs, &deps),
                   "the log ends at node 1");
    expect_refusal(ncsim_nki_internal_deps(1, ok, 7, 1, ext, N_ENG + N_Q, &offs, &deps),
                   "ends inside an access's bounds");
    expect_refusal(ncsim_nki_internal_deps(1, ok, 8, 1, ext, N_ENG + N_Q, &offs, &deps),
                   "the log ends inside its accesses");
    expect_refusal(ncsim_nki_internal_deps(0, ok, 9, 1, ext, N_ENG + N_Q, &offs, &deps),
                   "9 log values after the last node's");
    expect_refusal(ncsim_nki_internal_deps(1, ok, 9, 0, NULL, N_ENG + N_Q, &offs, &deps),
                   "memory 0 out of range");
    const int64_t bad_agent[] = {N_ENG + N_Q, 0, -1};
    expect_refusal(ncsim_nki_internal_deps(1, bad_agent, 3, 0, NULL, N_ENG + N_Q, &offs,
                                           &deps),
                   "agent 21 out of range");
    const int64_t bad_dims[] = {ACT, 0, 0, 2 * 17, -1};
    expect_refusal(ncsim_nki_internal_deps(1, bad_dims, 5, 1, ext, N_ENG + N_Q, &offs, &deps),
                   "at most 16 dims");
    const int64_t big[] = {ACT, 0, R2(0, 1, 0, (int64_t)1 << 62, 0, ((int64_t)1 << 62) + 1),
                           -1};
    expect_refusal(ncsim_nki_internal_deps(1, big, 9, 1, ext, N_ENG + N_Q, &offs, &deps),
                   "out of range (+-2^62)");
    assert_null(offs);
    assert_null(deps);
    /* the widest bounds taken: a first access from -2^62 to 2^62 (its extent not computed
     * as their difference, which overflows), then one inside it */
    const int64_t wide[] = {ACT, 0, R2(0, 1, -((int64_t)1 << 62), (int64_t)1 << 62, 0, 1), -1,
                            DVE, 0, R2(0, 0, 5, 6, 0, 1), -1};
    assert_int_equal(ncsim_nki_internal_deps(2, wide, 18, 1, ext, N_ENG + N_Q, &offs, &deps),
                     NCSIM_OK);
    char got[64];
    node_deps(offs, deps, 1, got, sizeof got);
    assert_string_equal(got, "2:0");
    ncsim_free(offs);
    ncsim_free(deps);
    offs = NULL;
    deps = NULL;
    /* no nodes: empty arrays, not NULL ones */
    assert_int_equal(ncsim_nki_internal_deps(0, NULL, 0, 0, NULL, N_ENG + N_Q, &offs, &deps),
                     NCSIM_OK);
    assert_non_null(offs);
    assert_non_null(deps);
    assert_int_equal(offs[0], 0);
    ncsim_free(offs);
    ncsim_free(deps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_made_order_and_waits),
        cmocka_unit_test(test_transfer_waits),
        cmocka_unit_test(test_bad_arrays),
        cmocka_unit_test(test_fold_nested),
        cmocka_unit_test(test_fold_refusals),
        cmocka_unit_test(test_streams),
        cmocka_unit_test(test_deps_hand_made),
        cmocka_unit_test(test_deps_many_records),
        cmocka_unit_test(test_deps_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
