/*
 * fuzz_nki_passes.c -- libFuzzer target for the NKI lowering's passes in C (api/nki_passes.c),
 * which the Python frontend calls with arrays it builds: any arrays are refused with a message
 * or give a result, never a crash or a read out of bounds.
 *
 * The first byte picks the case:
 *   0: a node list made well (agents and engines in range, each agent's indices in order,
 *      dependences on earlier instructions): the scheduler must order it, and the waits and
 *      the program's streams (folded and not) must be written both for that order and for the
 *      trace order;
 *   1: a node list from raw bytes (any agent, engine, index, dependence, cost): refused with
 *      NCSIM_USAGE and a message, or scheduled;
 *   2: the rest is one engine's stream for the fold: folded, or refused (not ASCII, a number
 *      of 2^62 or more) with a message;
 * and a first byte of 240 or more:
 *   240-247: an access log made well for the dependence pass, whose result must be the rule's
 *      (a scan of every earlier access);
 *   248-255: an access log from raw values: refused with a message, or taken.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "../../api/nki_passes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_ENG 5
#define N_Q 16
#define MAX_NODES 96
#define MAX_DEPS 6

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader_t;

static unsigned next_byte(reader_t *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static void refused_or_ok(ncsim_status_t st, const char *what)
{
    fz_check(st == NCSIM_OK || st == NCSIM_USAGE, "fuzz_nki_passes", what);
    if (st != NCSIM_OK)
        fz_check(ncsim_last_error()[0] != 0, "fuzz_nki_passes", "a refusal without a message");
}

static void nodes_case(reader_t *r, int made_well)
{
    int32_t agent[MAX_NODES], engine[MAX_NODES], index[MAX_NODES];
    int32_t deps[2 * MAX_NODES * MAX_DEPS];
    int64_t offs[MAX_NODES + 1], order[MAX_NODES], ident[MAX_NODES], wo[MAX_NODES + 1];
    int32_t new_index[MAX_NODES], waits[2 * MAX_NODES * MAX_DEPS + 2];
    double cost[2 * MAX_NODES];
    uint8_t pin[MAX_NODES];
    int32_t count[N_ENG + N_Q] = {0};
    int32_t window = (int32_t)next_byte(r) % 70;
    int64_t n = next_byte(r) % (MAX_NODES + 1);
    offs[0] = 0;
    for (int64_t p = 0; p < n; p++) {
        unsigned b = next_byte(r);
        if (made_well) {
            engine[p] = (int32_t)(b % N_ENG);
            agent[p] = (b & 0x80) ? N_ENG + (int32_t)((b >> 3) % N_Q) : engine[p];
            index[p] = count[agent[p]]++;
        } else {
            agent[p] = (int32_t)(int8_t)b % (N_ENG + N_Q + 2);
            engine[p] = (int32_t)(int8_t)next_byte(r) % (N_ENG + 1);
            index[p] = (int32_t)(int8_t)next_byte(r) % 8;
        }
        unsigned nd = next_byte(r) % (MAX_DEPS + 1);
        offs[p + 1] = offs[p];
        for (unsigned d = 0; d < nd; d++) {
            unsigned a = next_byte(r), i = next_byte(r);
            int64_t k = offs[p + 1]++;
            if (made_well) {
                int32_t aa = (int32_t)(a % (N_ENG + N_Q));
                if (!count[aa]) { /* no earlier instruction there: the previous node's agent */
                    offs[p + 1]--;
                    continue;
                }
                /* earlier instructions only (this node's own index is taken already) */
                int32_t lim = count[aa] - (aa == agent[p]);
                if (lim <= 0) {
                    offs[p + 1]--;
                    continue;
                }
                deps[2 * k] = aa;
                deps[2 * k + 1] = (int32_t)(i % (unsigned)lim);
            } else {
                deps[2 * k] = (int32_t)(int8_t)a % (N_ENG + N_Q + 2);
                deps[2 * k + 1] = (int32_t)(int8_t)i % 8;
            }
        }
        unsigned c = next_byte(r);
        cost[2 * p] = made_well || c != 255 ? (double)(c * 7) : NAN;
        cost[2 * p + 1] = (double)(next_byte(r) * 13);
        pin[p] = next_byte(r) < 16;
    }
    ncsim_status_t st = ncsim_nki_internal_schedule(n, agent, engine, offs, deps, cost, pin,
                                                    window, N_ENG, N_Q, 50.0, order);
    if (made_well)
        fz_check(st == NCSIM_OK, "fuzz_nki_passes", "a well-made node list not scheduled");
    refused_or_ok(st, "the scheduler failed otherwise than by refusing");
    if (st != NCSIM_OK)
        return;
    /* the order is a permutation */
    uint8_t seen[MAX_NODES] = {0};
    for (int64_t k = 0; k < n; k++) {
        fz_check(order[k] >= 0 && order[k] < n && !seen[order[k]], "fuzz_nki_passes",
                 "the order is not a permutation");
        seen[order[k]] = 1;
        ident[k] = k;
    }
    /* texts whose offsets step with the node's place in its agent (so that runs fold), and
     * source lines that change now and then */
    static char texts[MAX_NODES * 32];
    int64_t line[MAX_NODES];
    size_t tl = 0;
    unsigned every = next_byte(r) % 8 + 1;
    for (int64_t p = 0; p < n; p++) {
        tl += (size_t)snprintf(texts + tl, sizeof texts - tl, "%sop%d x+%d[1]", p ? "\n" : "",
                               (int)(agent[p] & 3), 64 * (index[p] & 0xffff));
        line[p] = (int64_t)((unsigned)p / every);
    }
    for (int pass = 0; pass < 2; pass++) {
        st = ncsim_nki_internal_waits(n, agent, engine, index, offs, deps, pass ? ident : order,
                                      N_ENG, N_Q, new_index, wo, waits);
        if (made_well)
            fz_check(st == NCSIM_OK, "fuzz_nki_passes", "no waits for a well-made list");
        refused_or_ok(st, "the waits failed otherwise than by refusing");
        if (st != NCSIM_OK)
            continue;
        for (int64_t k = 0; k < n; k++)
            fz_check(wo[k + 1] >= wo[k] && wo[k + 1] <= offs[n], "fuzz_nki_passes",
                     "wait offsets out of order");
        static const char names[] =
            "s_sp\ns_pe\ns_act\ns_dve\ns_pool\ns_q0\ns_q1\ns_q2\ns_q3\ns_q4\ns_q5\ns_q6\n"
            "s_q7\ns_q8\ns_q9\ns_q10\ns_q11\ns_q12\ns_q13\ns_q14\ns_q15\nsp\npe\nact\ndve\npool";
        for (int fold = 0; fold < 2; fold++) {
            char *out = NULL;
            size_t len = 0;
            st = ncsim_nki_internal_streams(n, agent, engine, line, texts, tl,
                                            pass ? ident : order, new_index, wo, waits, names,
                                            sizeof names - 1, N_ENG, N_Q, fold, &out, &len);
            if (made_well)
                fz_check(st == NCSIM_OK, "fuzz_nki_passes", "no text for a well-made list");
            refused_or_ok(st, "the writer failed otherwise than by refusing");
            if (st == NCSIM_OK) {
                fz_check(out != NULL && out[len] == 0, "fuzz_nki_passes",
                         "the written text is not terminated at its length");
                ncsim_free(out);
            }
        }
    }
}

/* ---- the dependence pass (ncsim_nki_internal_deps) ---------------------------------------- */

#define DEP_NODES 128
#define DEP_ACCS 5
#define DEP_MEMS 3
#define DEP_LOG (DEP_NODES * (3 + DEP_ACCS * 8))

/* The memories of the made-well logs: their extents along dims 0 and 1. */
static const int64_t dep_ext[2 * DEP_MEMS] = {128, 64, 16, 1, 7, 300};

/* A made-well log (agents in range, each agent's indices in order, boxes of 0 to 3 dims,
 * bounds that may lie outside the memory's extents): the C pass must take it, and its
 * dependences must be those of a scan of every earlier access, written here as the header
 * states the rule (no index cells). A raw log: refused with a message, or taken. */
static void deps_case(reader_t *r, int made_well)
{
    static int64_t log[DEP_LOG];
    static uint8_t want[DEP_NODES][DEP_NODES];
    static int64_t rbox[DEP_NODES * DEP_ACCS][6];
    static int32_t rnode[DEP_NODES * DEP_ACCS];
    static uint8_t rmem[DEP_NODES * DEP_ACCS], rnd[DEP_NODES * DEP_ACCS],
        rw[DEP_NODES * DEP_ACCS], rdead[DEP_NODES * DEP_ACCS];
    static int32_t node_of[N_ENG + N_Q][DEP_NODES];
    int32_t agent[DEP_NODES], index[DEP_NODES], count[N_ENG + N_Q] = {0};
    int64_t n = next_byte(r) % (DEP_NODES + 1), nl = 0, nrec = 0;
    int64_t *offs = NULL;
    int32_t *deps = NULL;
    if (!made_well) {
        /* raw values: small ones mostly, now and then one at the edges of the ranges */
        int64_t ext[8];
        int64_t n_mem = next_byte(r) % 5;
        int32_t n_agents = (int32_t)(next_byte(r) % 24) - 1;
        for (int64_t k = 0; k < 2 * n_mem; k++)
            ext[k] = (int64_t)(next_byte(r) % 70) - 2;
        int64_t len = next_byte(r) % 200;
        for (int64_t k = 0; k < len; k++) {
            unsigned b = next_byte(r);
            log[k] = b == 254   ? INT64_MAX
                     : b == 253 ? INT64_MIN
                     : b == 252 ? ((int64_t)1 << 62) + 1
                     : b == 251 ? -((int64_t)1 << 62)
                     : b == 250 ? ((int64_t)1 << 62)
                                : (int64_t)(int8_t)b; /* 255: the end of a node, -1 */
        }
        ncsim_status_t st = ncsim_nki_internal_deps(n % 8, len ? log : NULL, len, n_mem,
                                                    n_mem ? ext : NULL, n_agents, &offs, &deps);
        refused_or_ok(st, "the dependence pass failed otherwise than by refusing");
        if (st == NCSIM_OK)
            fz_check(offs != NULL && deps != NULL && offs[0] == 0, "fuzz_nki_passes",
                     "the dependence pass gave no arrays");
        ncsim_free(offs);
        ncsim_free(deps);
        return;
    }
    memset(want, 0, sizeof want);
    for (int64_t p = 0; p < n; p++) {
        unsigned b = next_byte(r);
        agent[p] = (int32_t)(b % (N_ENG + N_Q));
        index[p] = count[agent[p]]++;
        node_of[agent[p]][index[p]] = (int32_t)p;
        log[nl++] = agent[p];
        log[nl++] = index[p];
        unsigned na = next_byte(r) % (DEP_ACCS + 1);
        for (unsigned a = 0; a < na; a++) {
            unsigned f = next_byte(r);
            int mem = (int)(f % DEP_MEMS), w = (int)((f >> 2) & 1);
            int nd = (f >> 3) % 8 < 5 ? 2 : (int)((f >> 3) % 4); /* mostly 2 dims */
            log[nl++] = mem;
            log[nl++] = w + 2 * nd;
            int64_t *box = rbox[nrec];
            for (int k = 0; k < nd; k++) {
                unsigned lo = next_byte(r), ext = (unsigned)dep_ext[2 * mem + (k > 0)];
                box[2 * k] = (int64_t)(lo % (ext + 8)) - 4;
                box[2 * k + 1] = box[2 * k] + 1 + (int64_t)(next_byte(r) % (ext + 1));
                log[nl++] = box[2 * k];
                log[nl++] = box[2 * k + 1];
            }
            /* the rule, over every earlier record of the memory still met */
            for (int64_t q = 0; q < nrec; q++) {
                if (rmem[q] != mem || rdead[q])
                    continue;
                int ov = 1, cov = 1, m = rnd[q] < nd ? rnd[q] : nd;
                for (int k = 0; k < m; k++) {
                    if (rbox[q][2 * k] >= box[2 * k + 1] || box[2 * k] >= rbox[q][2 * k + 1]) {
                        ov = 0;
                        break;
                    }
                    if (rbox[q][2 * k] < box[2 * k] || rbox[q][2 * k + 1] > box[2 * k + 1])
                        cov = 0;
                }
                if (!ov)
                    continue;
                int same = agent[rnode[q]] == agent[p];
                if (rw[q] || w)
                    want[p][rnode[q]] = 1;
                if (cov && (w || (!rw[q] && same))) {
                    rdead[q] = 1;
                    want[p][rnode[q]] = 1;
                }
            }
            rmem[nrec] = (uint8_t)mem;
            rnd[nrec] = (uint8_t)nd;
            rw[nrec] = (uint8_t)w;
            rdead[nrec] = 0;
            rnode[nrec++] = (int32_t)p;
        }
        log[nl++] = -1;
        want[p][p] = 0; /* its own accesses: no dependence */
    }
    ncsim_status_t st = ncsim_nki_internal_deps(n, nl ? log : NULL, nl, DEP_MEMS, dep_ext,
                                                N_ENG + N_Q, &offs, &deps);
    fz_check(st == NCSIM_OK, "fuzz_nki_passes", "a made-well access log refused");
    static uint8_t got[DEP_NODES];
    for (int64_t p = 0; p < n; p++) {
        memset(got, 0, sizeof got);
        fz_check(offs[p + 1] >= offs[p], "fuzz_nki_passes", "dependence offsets decrease");
        for (int64_t k = offs[p]; k < offs[p + 1]; k++) {
            int32_t a = deps[2 * k], i = deps[2 * k + 1];
            fz_check(a >= 0 && a < N_ENG + N_Q && i >= 0 && i < count[a], "fuzz_nki_passes",
                     "a dependence on no node");
            int64_t q = node_of[a][i];
            fz_check(q < p, "fuzz_nki_passes", "a dependence on no earlier node");
            fz_check(!got[q], "fuzz_nki_passes", "a dependence given twice");
            got[q] = 1;
        }
        for (int64_t j = 0; j < p; j++)
            fz_check(got[j] == want[p][j], "fuzz_nki_passes",
                     "a dependence the rule does not give, or one missing");
    }
    ncsim_free(offs);
    ncsim_free(deps);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    reader_t r = {data + 1, size - 1};
    if (data[0] >= 240) { /* (the cases below keep the seeds' first bytes of before) */
        deps_case(&r, data[0] < 248);
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
        nodes_case(&r, 1);
        break;
    case 1:
        nodes_case(&r, 0);
        break;
    default: {
        int64_t lines = 1;
        for (size_t k = 0; k < r.n; k++)
            lines += r.p[k] == '\n';
        char *out = NULL;
        size_t len = 0;
        ncsim_status_t st =
            ncsim_nki_internal_fold((const char *)r.p, r.n, r.n ? lines : 0, &out, &len);
        refused_or_ok(st, "the fold failed otherwise than by refusing");
        if (st == NCSIM_OK) {
            fz_check(out != NULL && out[len] == 0, "fuzz_nki_passes",
                     "the folded text is not terminated at its length");
            ncsim_free(out);
        }
        break;
    }
    }
    return 0;
}
