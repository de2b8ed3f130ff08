/*
 * cc.c -- the collective engine (ISA.md 7.6): all_reduce, all_gather, reduce_scatter,
 * all_to_all, send and recv, with real results and modelled time.
 *
 * Matching. Each member core's cc engine issues its collectives in order; the k-th
 * collective a core issues on group G meets the k-th of every other member of G (a
 * rendezvous). A member whose collective differs (operation, reduction, sizes) stops the run
 * with a mismatch report; members that never arrive are reported like a deadlock. A send
 * meets the recv with the same (from, to, tag), in order.
 *
 * Time. Once every member has arrived the collective runs as a plan of stages, each a
 * reduce-scatter or an all-gather (an all_reduce is both) of one algorithm over subgroups of
 * the members (docs/data-movement.md, "Collective algorithms"):
 *   - within one instance: one stage pair over the whole group, of Ring, Mesh, KangaRing or
 *     RDH (cc.algorithm; auto is Ring with cc.runtime=sdk2.10, and with cc.runtime=current
 *     picks by size: Mesh below cc.mesh_max_bytes, RDH below cc.rdh_max_bytes, KangaRing
 *     above where every chip of the group gives it both cores; Ring where an algorithm does
 *     not apply);
 *   - across instances (hierarchical, the runtime's default): reduce-scatter within each
 *     instance, then the network stage over the members of equal local index (cc.inter_
 *     algorithm: Ring, Mesh or RDH), then all-gather within each instance; or one flat ring
 *     over all members (cc.inter_algorithm=flat_ring, or auto from cc.flat_min_bytes).
 * A step of a stage is a set of sends (member to member, bytes); each send is a flow
 * (flow.h) over the sender's DMA engines (shared with its core's DMA queues), the sender
 * chip's HBM (read), the NeuronLinks of the route -- or, between instances, the sender
 * instance's network out and the receiver instance's network in (EFA, efa.*) -- and the
 * receiver chip's HBM (write, plus reads for reductions). Two cores of one chip exchange
 * through HBM. A member's sends of one step share its collective data path
 * (cc.rank_bandwidth_gbps). A step costs a fixed latency (cc.step_latency_ns, plus
 * link.hop_latency_ns per hop of its longest route, or efa.latency_ns when a send crosses
 * instances) and ends when its slowest send lands. Simulation cost grows with the number of
 * sends, never with bytes.
 * all_to_all runs n-1 pairwise steps (member i to i+k); send/recv one step.
 * Results are computed when the collective completes, whatever the algorithm: reductions in
 * fp32, member 0 first then 1, 2, ... in group order (a left fold), converted to D's type on
 * write; gathers and exchanges copy exactly when the types match.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dis.h"
#include "sim_internal.h"

typedef struct cc_member {
    core_t *core;
    engine_t *eng;
    const isa_instr_t *in;
    uint32_t index;
    uint64_t arrived;
} cc_member_t;

enum { K_RS, K_AG, K_A2A, K_P2P };               /* stage kinds */
enum { SC_ALL, SC_INTRA, SC_INTER, SC_NSCOPES }; /* whom a stage's subgroups gather */

/* Members of a stage's subgroups: ng subgroups of q members; in each, q = m chips x p members
 * (p = 1 when the chips do not all hold the same number of members). */
typedef struct cc_layout {
    uint32_t ng, q, p, m;
    uint32_t *g, *pos;  /* per member: its subgroup and position in it (group order) */
    uint32_t *slot, *l; /* per member: its chip's index in the subgroup, its index on it */
    uint32_t *bypos;    /* [g * q + pos] -> member */
    uint32_t *at;       /* [g * q + slot * p + l] -> member */
    uint32_t *hpos;     /* per member: its place in the hypercube order (RDH) */
    uint32_t *hbypos;   /* [g * q + hpos] -> member */
} cc_layout_t;

typedef struct cc_stage {
    uint8_t kind, alg, scope;
    uint64_t bytes; /* the stage's buffer: reduce-scatter input, all-gather output */
    uint32_t nsteps;
} cc_stage_t;

typedef struct cc_send {
    uint32_t from, to; /* members */
    uint64_t bytes;
    float src_w, dst_w; /* HBM bytes read at the sender, touched at the receiver, per byte */
    float path;         /* the sender's data-path bytes per byte sent (1) */
    uint8_t reduce;
} cc_send_t;

#define CC_MAX_STAGES 4

typedef struct cc_coll {
    struct cc_coll *next;
    int op;
    int32_t group; /* -1 for send/recv */
    uint64_t seq;
    uint32_t from, to; /* send/recv */
    int64_t tag;
    uint32_t n, arrived;
    cc_member_t *m; /* by position in the group (send/recv: 0 sender, 1 receiver) */
    /* plan */
    cc_stage_t stages[CC_MAX_STAGES];
    uint32_t nstages;
    cc_layout_t lay[SC_NSCOPES];
    uint32_t ninst, per_inst; /* instances the group spans, members in each (0: uneven) */
    uint32_t *inst, *loc;     /* per member */
    /* execution */
    uint32_t step, nsteps, inflight;
    uint64_t bytes; /* S: the collective's size */
    uint64_t start;
    cc_send_t *sends; /* of the current step */
    flow_t *flows;    /* one per send */
    uint32_t *nsent;  /* per member: sends in the current step */
    uint32_t nsends, capsends, capflows;
    sim_event_t step_ev;
    uint64_t id;                  /* 1, 2, ... in the order collectives begin (traces) */
    uint64_t step_start, step_go; /* the step began; its chunks started moving */
} cc_coll_t;

typedef struct p2p_key {
    uint32_t from, to;
    int64_t tag;
    uint64_t sends, recvs;
} p2p_key_t;

struct cc_state {
    cc_coll_t *pending;
    uint64_t *seq; /* ncores x ngroups */
    p2p_key_t *keys;
    uint32_t nkeys, capkeys;
    uint64_t moved_bytes;
    uint64_t ncoll; /* collectives begun */
};

int cc_init(struct sim *s)
{
    s->cc = calloc(1, sizeof *s->cc);
    if (!s->cc)
        return -1;
    size_t n = (size_t)s->ncores * (s->prog->ngroups ? s->prog->ngroups : 1);
    s->cc->seq = calloc(n, sizeof *s->cc->seq);
    return s->cc->seq ? 0 : -1;
}

static void layouts_free(cc_coll_t *co);

static void coll_free(cc_coll_t *co)
{
    free(co->m);
    free(co->flows);
    free(co->sends);
    free(co->nsent);
    layouts_free(co);
    free(co);
}

void cc_free(struct sim *s)
{
    if (!s->cc)
        return;
    for (cc_coll_t *co = s->cc->pending, *next; co; co = next) {
        next = co->next;
        coll_free(co);
    }
    free(s->cc->seq);
    free(s->cc->keys);
    free(s->cc);
    s->cc = NULL;
}

int cc_pending(const struct sim *s)
{
    return s->cc && s->cc->pending != NULL;
}

static const isa_view_t *slot_view(const struct sim *s, const isa_instr_t *in, int slot)
{
    return &s->prog->views[isa_instr_args(s->prog, in)[slot].index];
}

/* Views of a collective: D and SRC (send has SRC only, recv D only). */
static const isa_view_t *view_d(const struct sim *s, const isa_instr_t *in)
{
    return in->op == ISA_OP_SEND ? NULL : slot_view(s, in, 0);
}
static const isa_view_t *view_src(const struct sim *s, const isa_instr_t *in)
{
    if (in->op == ISA_OP_RECV)
        return NULL;
    return slot_view(s, in, in->op == ISA_OP_SEND ? 0 : 1);
}

static uint64_t view_bytes(const isa_view_t *v)
{
    return v ? isa_view_elems(v) * isa_dtype_size((isa_dtype_t)v->dtype) : 0;
}

static void member_where(struct sim *s, const cc_member_t *m, char *buf, size_t n)
{
    sim_instr_where(s, m->core, ISA_ENGINE_CC, m->index, m->in, buf, n);
}

/* ---- plans: stages, layouts, selection ------------------------------------------------------- */

enum { ALG_PAIRWISE = 100, ALG_P2P }; /* beside mdl_cc_algorithm_t */

static int is_pow2(uint32_t n)
{
    return n && !(n & (n - 1));
}

static uint32_t log2u(uint32_t n)
{
    uint32_t l = 0;
    while ((1u << l) < n)
        l++;
    return l;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return b ? (a + b - 1) / b : 0;
}

static uint32_t gray(uint32_t v)
{
    return v ^ (v >> 1);
}

/* A chip's label in the hypercube view of its instance's topology (collectives.md 4.4): a
 * torus of power-of-two sides is a hypercube whose axes flip one bit of the Gray codes of x
 * and y, so chips whose labels differ in one bit are neighbours; a ring uses the Gray code of
 * its position. RDH pairs members along these bits. */
static uint32_t hypercube_label(const struct sim *s, uint32_t chip)
{
    const mdl_arch_t *a = s->arch;
    uint32_t c = chip % (s->topo.chips_per_instance ? s->topo.chips_per_instance : 1);
    if (a->link.topology != MDL_TOPO_TORUS2D || !a->link.torus_x)
        return gray(c);
    uint32_t x = c % a->link.torus_x, y = c / a->link.torus_x, bits = 0;
    while ((1u << bits) < a->link.torus_x)
        bits++;
    return gray(x) | gray(y) << bits;
}

/* The subgroups of one scope. ALL: the group; INTRA: the members of each instance (by local
 * index); INTER: the members of equal local index, one per instance. */
static int layout_build(const struct sim *s, cc_coll_t *co, int scope)
{
    cc_layout_t *L = &co->lay[scope];
    uint32_t n = co->n;
    uint32_t *mem = calloc((size_t)8 * n + 1, sizeof *mem);
    if (!mem)
        return -1;
    L->g = mem;
    L->pos = mem + n;
    L->slot = mem + 2 * n;
    L->l = mem + 3 * n;
    L->bypos = mem + 4 * n;
    L->at = mem + 5 * n;
    L->hpos = mem + 6 * n;
    L->hbypos = mem + 7 * n;
    L->ng = scope == SC_ALL ? 1 : scope == SC_INTRA ? co->ninst : co->per_inst;
    L->q = scope == SC_ALL ? n : scope == SC_INTRA ? co->per_inst : co->ninst;
    for (uint32_t i = 0; i < n; i++) {
        L->g[i] = scope == SC_ALL ? 0 : scope == SC_INTRA ? co->inst[i] : co->loc[i];
        L->pos[i] = scope == SC_ALL ? i : scope == SC_INTRA ? co->loc[i] : co->inst[i];
        L->bypos[L->g[i] * L->q + L->pos[i]] = i;
    }
    /* chips: in order of first appearance in each subgroup; p members on each, or p = 1 */
    uint32_t p = 0;
    int even = 1;
    for (uint32_t g = 0; g < L->ng && even; g++) {
        const uint32_t *row = L->bypos + (size_t)g * L->q;
        uint32_t nchips = 0;
        for (uint32_t j = 0; j < L->q; j++) {
            uint32_t chip = co->m[row[j]].core->chip, onchip = 0, slot = nchips;
            for (uint32_t k = 0; k < j; k++)
                if (co->m[row[k]].core->chip == chip) {
                    slot = L->slot[row[k]];
                    onchip++;
                }
            if (slot == nchips)
                nchips++;
            L->slot[row[j]] = slot;
            L->l[row[j]] = onchip;
        }
        uint32_t per = nchips ? L->q / nchips : 0;
        if (!per || per * nchips != L->q || (p && per != p))
            even = 0;
        for (uint32_t j = 0; j < L->q && even; j++)
            if (L->l[row[j]] >= per)
                even = 0;
        p = per;
    }
    if (!even || !p)
        p = 1;
    L->p = p;
    L->m = L->q / p;
    for (uint32_t i = 0; i < n; i++) {
        if (p == 1) {
            L->slot[i] = L->pos[i];
            L->l[i] = 0;
        }
        L->at[L->g[i] * L->q + L->slot[i] * p + L->l[i]] = i;
    }
    /* the hypercube order: members by (hypercube label of their chip, index on it) */
    uint64_t *key = malloc((size_t)n * sizeof *key);
    if (!key)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        key[i] = (uint64_t)hypercube_label(s, co->m[i].core->chip) << 32 | L->pos[i];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t rank = 0;
        for (uint32_t j = 0; j < n; j++)
            if (L->g[j] == L->g[i] && key[j] < key[i])
                rank++;
        L->hpos[i] = rank;
        L->hbypos[L->g[i] * L->q + rank] = i;
    }
    free(key);
    return 0;
}

static void layouts_free(cc_coll_t *co)
{
    for (int k = 0; k < SC_NSCOPES; k++)
        free(co->lay[k].g);
    free(co->inst);
}

static int applies(int alg, const cc_layout_t *L)
{
    if (alg == MDL_CC_RDH)
        return is_pow2(L->q);
    if (alg == MDL_CC_KANGARING)
        return L->p == 2 && L->m >= 2;
    return 1;
}

/* Within an instance: the configured algorithm, or auto: Ring in the SDK 2.10 runtime, by size
 * in the current one (collectives.md 4.5). */
static int pick_intra(const mdl_arch_t *a, const cc_layout_t *L, uint64_t S)
{
    int alg = a->cc.algorithm;
    if (alg == MDL_CC_AUTO && a->cc.runtime == MDL_CC_RUNTIME_SDK2_10)
        alg = MDL_CC_RING;
    else if (alg == MDL_CC_AUTO)
        alg = S < a->cc.mesh_max_bytes  ? MDL_CC_MESH
              : S < a->cc.rdh_max_bytes ? MDL_CC_RDH
                                        : MDL_CC_KANGARING;
    return applies(alg, L) ? alg : MDL_CC_RING;
}

/* Across instances: the configured algorithm, or auto: Ring in the SDK 2.10 runtime, by
 * instances and size in the current one (collectives.md 5). */
static int pick_inter(const mdl_arch_t *a, const cc_layout_t *L, uint64_t S)
{
    int alg = a->cc.inter_algorithm;
    if (alg == MDL_CC_AUTO && a->cc.runtime == MDL_CC_RUNTIME_SDK2_10)
        alg = MDL_CC_RING;
    else if (alg == MDL_CC_AUTO)
        alg = L->q <= a->cc.inter_mesh_max_ranks && S < a->cc.inter_mesh_max_bytes ? MDL_CC_MESH
              : S < a->cc.inter_rdh_max_bytes                                      ? MDL_CC_RDH
                                                                                   : MDL_CC_RING;
    return applies(alg, L) ? alg : MDL_CC_RING;
}

static uint32_t stage_steps(const cc_coll_t *co, const cc_stage_t *st)
{
    const cc_layout_t *L = &co->lay[st->scope];
    if (st->alg == ALG_P2P)
        return 1;
    if (L->q <= 1)
        return 0;
    switch (st->alg) {
    case MDL_CC_RDH:
        return log2u(L->q);
    case MDL_CC_MESH:
        return st->kind == K_AG && L->p >= 2 && L->m >= 2 ? 2 : 1;
    case MDL_CC_KANGARING:
        return L->m - 1;
    default: /* ring, pairwise */
        return L->q - 1;
    }
}

static void add_stage(cc_coll_t *co, int kind, int alg, int scope, uint64_t bytes)
{
    cc_stage_t *st = &co->stages[co->nstages++];
    st->kind = (uint8_t)kind;
    st->alg = (uint8_t)alg;
    st->scope = (uint8_t)scope;
    st->bytes = bytes;
    st->nsteps = stage_steps(co, st);
    co->nsteps += st->nsteps;
}

/* Where the members are (instances, local indices), the layouts, the stages. */
static int plan(struct sim *s, cc_coll_t *co)
{
    const mdl_arch_t *a = s->arch;
    uint32_t n = co->n;
    const isa_instr_t *in = co->m[0].in;
    co->inst = calloc((size_t)2 * n + 1, sizeof *co->inst);
    if (!co->inst)
        return -1;
    co->loc = co->inst + n;
    uint32_t ids[64], counts[64], nid = 0;
    int many = 0; /* more distinct instances than tracked: treated as uneven */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = mdl_linkmap_instance(&s->topo, co->m[i].core->chip), x = 0;
        while (x < nid && ids[x] != id)
            x++;
        if (x == nid) {
            if (nid == 64) {
                many = 1;
                x = 0;
            } else {
                ids[nid] = id;
                counts[nid++] = 0;
            }
        }
        co->inst[i] = x;
        co->loc[i] = counts[x]++;
    }
    co->ninst = nid;
    co->per_inst = n / (nid ? nid : 1);
    for (uint32_t x = 0; x < nid; x++)
        if (counts[x] != co->per_inst || many)
            co->per_inst = 0;
    if (layout_build(s, co, SC_ALL))
        return -1;

    co->nsteps = 0;
    co->nstages = 0;
    switch (co->op) {
    case ISA_OP_ALL_TO_ALL:
        co->bytes = view_bytes(view_src(s, in));
        add_stage(co, K_A2A, ALG_PAIRWISE, SC_ALL, co->bytes);
        return 0;
    case ISA_OP_SEND:
    case ISA_OP_RECV:
        co->bytes = view_bytes(view_src(s, in));
        add_stage(co, K_P2P, ALG_P2P, SC_ALL, co->bytes);
        return 0;
    case ISA_OP_ALL_GATHER:
        co->bytes = view_bytes(view_d(s, in));
        break;
    default:
        co->bytes = view_bytes(view_src(s, in));
        break;
    }
    uint64_t S = co->bytes;
    int rs = co->op != ISA_OP_ALL_GATHER, ag = co->op != ISA_OP_REDUCE_SCATTER;
    int ia = a->cc.inter_algorithm;
    int flat =
        co->ninst > 1 && (!co->per_inst || ia == MDL_CC_FLAT_RING ||
                          (ia == MDL_CC_AUTO && a->cc.flat_min_bytes && S >= a->cc.flat_min_bytes));
    if (co->ninst <= 1 || flat) {
        int alg = flat ? MDL_CC_RING : pick_intra(a, &co->lay[SC_ALL], S);
        if (rs)
            add_stage(co, K_RS, alg, SC_ALL, S);
        if (ag)
            add_stage(co, K_AG, alg, SC_ALL, S);
        return 0;
    }
    /* hierarchical: within, across, within (collectives.md 5) */
    if (layout_build(s, co, SC_INTRA) || layout_build(s, co, SC_INTER))
        return -1;
    uint64_t Sx = ceil_div(S, co->per_inst);
    int ai = pick_intra(a, &co->lay[SC_INTRA], S), ax = pick_inter(a, &co->lay[SC_INTER], Sx);
    if (rs)
        add_stage(co, K_RS, ai, SC_INTRA, S);
    if (rs)
        add_stage(co, K_RS, ax, SC_INTER, Sx);
    if (ag)
        add_stage(co, K_AG, ax, SC_INTER, Sx);
    if (ag)
        add_stage(co, K_AG, ai, SC_INTRA, S);
    return 0;
}

/* ---- the sends of a step --------------------------------------------------------------------- */

static int push(cc_coll_t *co, uint32_t from, uint32_t to, uint64_t bytes, float src_w, float dst_w,
                float path, int reduce)
{
    if (!bytes || from == to)
        return 0;
    if (co->nsends == co->capsends) {
        uint32_t nc = co->capsends ? co->capsends * 2 : 64;
        cc_send_t *p = realloc(co->sends, nc * sizeof *p);
        if (!p)
            return -1;
        co->sends = p;
        co->capsends = nc;
    }
    cc_send_t *x = &co->sends[co->nsends++];
    x->from = from;
    x->to = to;
    x->bytes = bytes;
    x->src_w = src_w;
    x->dst_w = dst_w;
    x->path = path;
    x->reduce = (uint8_t)reduce;
    return 0;
}

/* The stage of global step k, and k within it. */
static const cc_stage_t *stage_of(const cc_coll_t *co, uint32_t k, uint32_t *local)
{
    for (uint32_t j = 0; j < co->nstages; j++) {
        if (k < co->stages[j].nsteps) {
            *local = k;
            return &co->stages[j];
        }
        k -= co->stages[j].nsteps;
    }
    *local = 0;
    return co->nstages ? &co->stages[co->nstages - 1] : NULL;
}

/* Member i's sends in step k of stage st. */
static int member_sends(cc_coll_t *co, const cc_stage_t *st, uint32_t k, uint32_t i)
{
    const cc_layout_t *L = &co->lay[st->scope];
    uint32_t q = L->q, p = L->p, m = L->m, pos = L->pos[i];
    uint32_t a = L->slot[i], l = L->l[i];
    const uint32_t *bypos = L->bypos + (size_t)L->g[i] * q, *at = L->at + (size_t)L->g[i] * q;
    uint64_t S = st->bytes, C = ceil_div(S, q);
    int rs = st->kind == K_RS;
    float dw = rs ? 2.0f : 1.0f;
    switch (st->alg) {
    case ALG_P2P:
        return i == 0 ? push(co, 0, 1, S, 1, 1, 1, 0) : 0;
    case ALG_PAIRWISE:
        return push(co, i, bypos[(pos + k + 1) % q], C, 1, 1, 1, 0);
    case MDL_CC_RDH: {
        /* in the hypercube order (chips by label, then the cores of a chip): reduce-scatter
         * halves along bits 0, 1, ... (the chip partner first, through HBM, then one
         * NeuronLink axis per step); all-gather doubles in reverse */
        uint32_t L2 = log2u(q), bit = rs ? k : L2 - 1 - k;
        uint64_t bytes = rs ? ceil_div(S, (uint64_t)1 << (k + 1)) : C << k;
        const uint32_t *hb = L->hbypos + (size_t)L->g[i] * q;
        return push(co, i, hb[L->hpos[i] ^ (1u << bit)], bytes, 1, dw, 1, rs);
    }
    case MDL_CC_MESH:
        if (p < 2 || m < 2) { /* one step: straight to every member */
            for (uint32_t j = 0; j < q; j++)
                if (push(co, i, bypos[j], C, 1, dw, 1, rs))
                    return -1;
            return 0;
        }
        /* by chips: member l of a chip serves the chips b with (b - a) mod m = l (mod p),
         * writing one rank there all p chunks meant for (reduce-scatter) or held by
         * (all-gather) its chip; all-gather then swaps what arrived within each chip */
        if (k == 0) {
            for (uint32_t b = 0; b < m; b++)
                if (b != a && ((b + m - a) % m) % p == l &&
                    push(co, i, at[b * p + l], p * C, rs ? (float)p : 1.0f, dw, 1, rs))
                    return -1;
            if (rs)
                for (uint32_t l2 = 0; l2 < p; l2++)
                    if (push(co, i, at[a * p + l2], C, 1, dw, 1, rs))
                        return -1;
            return 0;
        }
        {
            uint64_t r = 0;
            for (uint32_t b = 0; b < m; b++)
                if (b != a && ((a + m - b) % m) % p == l)
                    r++;
            for (uint32_t l2 = 0; l2 < p; l2++)
                if (push(co, i, at[a * p + l2], (1 + p * r) * C, 1, 1, 1, 0))
                    return -1;
            return 0;
        }
    case MDL_CC_KANGARING: {
        /* the chip's member 0 is primary in a ring of chips one way, member 1 in the ring
         * the other way (disjoint directed links); each carries half of the pair's data,
         * C per step; the receiver writes what arrives twice (all-gather: to itself and its
         * secondary, the DMA's duplication, charged to its HBM) or reduces it with both
         * members' chunks (reduce-scatter: 3 HBM touches per byte). The primary does the
         * data movement of both members (the secondary stays idle): each byte costs two on
         * its data path, so KangaRing gains steps and HBM touches over Ring, not bandwidth */
        uint32_t nb = l == 0 ? (a + 1) % m : (a + m - 1) % m;
        return push(co, i, at[nb * 2 + l], C, 1, rs ? 3.0f : 2.0f, 2, rs);
    }
    default: /* ring in group (subgroup) order */
        return push(co, i, bypos[(pos + 1) % q], C, 1, dw, 1, rs);
    }
}

/* Fill co->sends with the sends of step co->step. */
static int step_sends(cc_coll_t *co)
{
    co->nsends = 0;
    uint32_t k;
    const cc_stage_t *st = stage_of(co, co->step, &k);
    memset(co->nsent, 0, co->n * sizeof *co->nsent);
    if (!st || !st->nsteps) /* a group of one: the step moves nothing */
        return 0;
    for (uint32_t i = 0; i < co->n; i++)
        if (member_sends(co, st, k, i))
            return -1;
    for (uint32_t j = 0; j < co->nsends; j++)
        co->nsent[co->sends[j].from]++;
    return 0;
}

static uint8_t trace_alg(int alg)
{
    switch (alg) {
    case MDL_CC_RDH:
        return SIM_TRACE_CC_RDH;
    case MDL_CC_MESH:
        return SIM_TRACE_CC_MESH;
    case MDL_CC_KANGARING:
        return SIM_TRACE_CC_KANGARING;
    case ALG_PAIRWISE:
        return SIM_TRACE_CC_PAIRWISE;
    case ALG_P2P:
        return SIM_TRACE_CC_P2P;
    default:
        return SIM_TRACE_CC_RING;
    }
}

/* ---- results --------------------------------------------------------------------------------- */

static ncsim_status_t compute(struct sim *s, cc_coll_t *co, char *err, size_t errlen)
{
    uint32_t n = co->n;
    const isa_instr_t *in0 = co->m[0].in;
    for (uint32_t i = 0; i < n; i++) {
        const isa_view_t *vs[2] = {view_d(s, co->m[i].in), view_src(s, co->m[i].in)};
        for (int k = 0; k < 2; k++)
            if (vs[k] && mdl_view_check(&co->m[i].core->fs.mem, vs[k], err, errlen))
                return NCSIM_PROGRAM;
    }

    if (co->op == ISA_OP_ALL_REDUCE || co->op == ISA_OP_REDUCE_SCATTER) {
        uint64_t E = isa_view_elems(view_src(s, in0));
        float *acc = malloc(E * sizeof *acc), *tmp = malloc(E * sizeof *tmp);
        if (!acc || !tmp) {
            free(acc);
            free(tmp);
            return NCSIM_NOMEM;
        }
        int red = (int)isa_instr_args(s->prog, in0)[2].v.i;
        for (uint32_t i = 0; i < n; i++) {
            const isa_view_t *src = view_src(s, co->m[i].in);
            mdl_view_read_f32(&co->m[i].core->fs.mem, src, i ? tmp : acc);
            if (!i)
                continue;
            for (uint64_t e = 0; e < E; e++)
                acc[e] = red == ISA_ALU_ADD ? acc[e] + tmp[e]
                         : red == ISA_ALU_MAX
                             ? (tmp[e] > acc[e] || isnan(tmp[e]) ? tmp[e] : acc[e])
                             : (tmp[e] < acc[e] || isnan(tmp[e]) ? tmp[e] : acc[e]);
        }
        ncsim_status_t st = NCSIM_OK;
        for (uint32_t i = 0; i < n && st == NCSIM_OK; i++) {
            mdl_core_state_t *fs = &co->m[i].core->fs;
            const isa_view_t *d = view_d(s, co->m[i].in);
            const float *part = co->op == ISA_OP_ALL_REDUCE ? acc : acc + i * (E / n);
            if (mdl_view_write_f32(&fs->mem, d, part, fs->rounding, &fs->rng[ISA_ENGINE_CC]))
                st = NCSIM_NOMEM;
        }
        free(acc);
        free(tmp);
        return st;
    }
    /* all_gather, all_to_all, send/recv: chunks move whole, exactly when the types match */
    int all_to_all = co->op == ISA_OP_ALL_TO_ALL;
    int p2p = co->op == ISA_OP_SEND || co->op == ISA_OP_RECV;
    uint64_t chunk =
        all_to_all ? isa_view_elems(view_src(s, in0)) / n : isa_view_elems(view_src(s, in0));
    size_t cap = (size_t)chunk * 4 + 16;
    void *buf = malloc(cap);
    if (!buf)
        return NCSIM_NOMEM;
    ncsim_status_t st = NCSIM_OK;
    for (uint32_t j = p2p ? 1 : 0; j < n && st == NCSIM_OK; j++) { /* receiver */
        mdl_core_state_t *fs = &co->m[j].core->fs;
        const isa_view_t *d = view_d(s, co->m[j].in);
        for (uint32_t i = 0; i < (p2p ? 1 : n) && st == NCSIM_OK; i++) { /* sender */
            const isa_view_t *src = view_src(s, co->m[i].in);
            const mdl_mem_t *sm = &co->m[i].core->fs.mem;
            uint64_t from = all_to_all ? (uint64_t)j * chunk : 0, to = (uint64_t)i * chunk;
            if (src->dtype == d->dtype) {
                if ((size_t)chunk * isa_dtype_size((isa_dtype_t)src->dtype) > cap)
                    st = NCSIM_INTERNAL;
                else {
                    mdl_view_read_bytes_range(sm, src, from, chunk, buf);
                    if (mdl_view_write_bytes_range(&fs->mem, d, to, chunk, buf))
                        st = NCSIM_NOMEM;
                }
            } else {
                mdl_view_read_f32_range(sm, src, from, chunk, buf);
                if (mdl_view_write_f32_range(&fs->mem, d, to, chunk, buf, fs->rounding,
                                             &fs->rng[ISA_ENGINE_CC]))
                    st = NCSIM_NOMEM;
            }
        }
    }
    free(buf);
    return st;
}

/* ---- trace records --------------------------------------------------------------------------- */

/* Tell the trace sink about a step (STEP_BEGIN), a send (FLOW_*, x = the send; member = its
 * sender) or the end of a step (STEP_END, x = UINT32_MAX: once per member, with the bytes it
 * sent and the first member it sent to). */
static void trace_cc(struct sim *s, const cc_coll_t *co, int event, uint32_t x)
{
    if (!s->opt.trace || !s->opt.trace->cc)
        return;
    uint32_t k;
    const cc_stage_t *st = stage_of(co, co->step, &k);
    sim_trace_cc_t r;
    memset(&r, 0, offsetof(sim_trace_cc_t, res));
    r.event = (uint8_t)event;
    r.time_ps = s->q.now;
    r.coll = co->id;
    r.op = (uint8_t)co->op;
    r.group = co->group;
    r.nmembers = co->n;
    r.algorithm = trace_alg(st ? st->alg : MDL_CC_RING);
    r.step = co->step;
    r.nsteps = co->nsteps;
    r.size = co->bytes;
    r.start_ps = event == SIM_TRACE_CC_FLOW_END ? co->step_go : co->step_start;
    if (event == SIM_TRACE_CC_STEP_END) {
        for (uint32_t i = 0; i < co->n; i++) {
            const cc_member_t *m = &co->m[i];
            r.member = i;
            r.core = m->core->id;
            r.index = m->index;
            r.instr = m->in;
            r.to_core = m->core->id;
            r.bytes = 0;
            r.reduce = 0;
            for (uint32_t j = 0; j < co->nsends; j++)
                if (co->sends[j].from == i) {
                    if (!r.bytes) {
                        r.to_core = co->m[co->sends[j].to].core->id;
                        r.reduce = co->sends[j].reduce;
                    }
                    r.bytes += co->sends[j].bytes;
                }
            s->opt.trace->cc(s->opt.trace->ctx, &r);
        }
        return;
    }
    if (event == SIM_TRACE_CC_FLOW_BEGIN || event == SIM_TRACE_CC_FLOW_END) {
        const cc_send_t *x_ = &co->sends[x];
        const cc_member_t *m = &co->m[x_->from];
        r.member = x_->from;
        r.core = m->core->id;
        r.index = m->index;
        r.instr = m->in;
        r.to_core = co->m[x_->to].core->id;
        r.bytes = x_->bytes;
        r.send = x;
        r.reduce = x_->reduce;
        const flow_t *f = &co->flows[x];
        for (unsigned j = 0; j < f->nres && j < SIM_TRACE_MAX_RES; j++) {
            sim_trace_res_t *y = &r.res[r.nres++];
            uint32_t id = f->res[j];
            memset(y, 0, sizeof *y);
            if (id < s->ncores) {
                y->kind = SIM_TRACE_RES_DMA;
                y->id = id;
            } else if (id < s->ncores + s->nchips) {
                y->kind = SIM_TRACE_RES_HBM;
                y->id = id - s->ncores;
            } else if (id < s->ncores + s->nchips + s->topo.nlinks) {
                y->kind = SIM_TRACE_RES_LINK;
                y->id = id - s->ncores - s->nchips;
                y->from_chip = s->topo.links[y->id].from;
                y->to_chip = s->topo.links[y->id].to;
            } else {
                y->kind = SIM_TRACE_RES_EFA;
                y->id = id - s->ncores - s->nchips - s->topo.nlinks;
            }
            y->gbps = s->net.res[id].cap * f->eff[j] * 1000.0; /* bytes/ps -> GB/s */
            y->weight = f->weight[j];
        }
    }
    s->opt.trace->cc(s->opt.trace->ctx, &r);
}

/* ---- running --------------------------------------------------------------------------------- */

static void start_step(struct sim *s, cc_coll_t *co);

static void complete(struct sim *s, cc_coll_t *co)
{
    if (!s->opt.timing_only) {
        char err[1024];
        ncsim_status_t st = compute(s, co, err, sizeof err);
        if (st != NCSIM_OK) {
            char where[768];
            member_where(s, &co->m[0], where, sizeof where);
            sim_fail(s, "%s: %s\n", where, st == NCSIM_NOMEM ? "out of memory" : err);
            return;
        }
    }
    /* unlink */
    for (cc_coll_t **pp = &s->cc->pending; *pp; pp = &(*pp)->next)
        if (*pp == co) {
            *pp = co->next;
            break;
        }
    uint64_t now = s->q.now;
    for (uint32_t i = 0; i < co->n; i++) {
        cc_member_t *m = &co->m[i];
        sim_engine_stats_t *st = m->eng->st;
        st->busy_ps += now - co->start;
        st->active_ps += now - co->start;
        /* waiting for the other members counts as a stall */
        st->stall_ps += co->start - m->arrived;
        st->stall_by[SIM_STALL_COLLECTIVE] += co->start - m->arrived;
        sim_line_stats_t *ls = sim_line(s, m->in);
        ls->busy_ps += now - co->start;
        ls->stall_by[SIM_STALL_COLLECTIVE] += co->start - m->arrived;
        if (now > st->end_ps)
            st->end_ps = now;
        if (s->opt.trace && s->opt.trace->instr) {
            sim_trace_instr_t r;
            memset(&r, 0, sizeof r);
            r.core = m->core->id;
            r.engine = ISA_ENGINE_CC;
            r.index = m->index;
            r.instr = m->in;
            r.ready_ps = m->arrived;
            r.start_ps = co->start;
            r.ii_ps = now - co->start;
            r.end_ps = now;
            r.stall = co->start > m->arrived ? SIM_STALL_COLLECTIVE : SIM_STALL_NONE;
            r.stall_by[SIM_STALL_COLLECTIVE] = co->start - m->arrived;
            r.bytes = co->bytes;
            s->opt.trace->instr(s->opt.trace->ctx, &r);
        }
    }
    if (s->opt.observer && s->opt.observer->collective)
        for (int phase = 0; phase < 2; phase++)
            for (uint32_t i = 0; i < co->n; i++)
                s->opt.observer->collective(s->opt.observer->ctx, s, phase, co->m[i].core->id,
                                            co->m[i].index, co->m[i].in);
    for (uint32_t i = 0; i < co->n && !s->failed; i++) {
        sim_apply_posts(s, co->m[i].core, co->m[i].in, ISA_ENGINE_CC, co->m[i].index);
        sim_engine_resume(s, co->m[i].eng);
    }
    coll_free(co);
}

static void finish_ev(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    cc_coll_t *co = ev->owner;
    complete(co->m[0].core->sim, co);
}

/* The last step has ended: complete now, or when cc.min_latency_ns has passed since the
 * collective began (no collective completes faster, measurements.md section 5). */
static void last_step_done(struct sim *s, cc_coll_t *co)
{
    uint64_t floor = co->start + (uint64_t)llround(s->arch->cc.min_latency_ns * 1000.0);
    if (floor <= s->q.now) {
        complete(s, co);
        return;
    }
    sim_event_init(&co->step_ev, finish_ev, co, PRIO_DMA);
    if (sim_schedule(&s->q, &co->step_ev, floor))
        sim_fail(s, "out of memory");
}

static void flow_landed(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    flow_t *f = ev->owner;
    cc_coll_t *co = f->owner;
    struct sim *s = co->m[0].core->sim;
    flow_finish(s, &s->net, f);
    trace_cc(s, co, SIM_TRACE_CC_FLOW_END, (uint32_t)(f - co->flows));
    if (--co->inflight == 0) {
        trace_cc(s, co, SIM_TRACE_CC_STEP_END, UINT32_MAX);
        co->step++;
        if (co->step < co->nsteps)
            start_step(s, co);
        else
            last_step_done(s, co);
    }
}

/* The step's fixed latency has elapsed: start its sends. */
static void step_go(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    cc_coll_t *co = ev->owner;
    struct sim *s = co->m[0].core->sim;
    const mdl_arch_t *a = s->arch;
    co->inflight = 0;
    co->step_go = s->q.now;
    for (uint32_t j = 0; j < co->nsends; j++) {
        const cc_send_t *x = &co->sends[j];
        core_t *src = co->m[x->from].core, *dst = co->m[x->to].core;
        flow_t *f = &co->flows[j];
        double piece = (double)(x->bytes < a->cc.packet_bytes ? x->bytes : a->cc.packet_bytes);
        double cap = a->dma.engines * a->dma.engine_bandwidth_gbps * 1e-3;
        double rank = a->cc.rank_bandwidth_gbps * 1e-3; /* the member's collective data path */
        if (rank < cap)
            cap = rank;
        /* the member's sends of this step share its data path */
        cap /= (double)co->nsent[x->from] * x->path;
        memset(f, 0, sizeof *f);
        flow_init(f, (double)x->bytes, cap, NULL, co);
        sim_event_init(&f->ev, flow_landed, f, PRIO_DMA);
        flow_use(f, res_dma(s, src->id), 1.0, mdl_dma_efficiency(a, piece));
        flow_use(f, res_hbm(s, src->chip), x->src_w, 1.0);
        uint32_t from_inst = mdl_linkmap_instance(&s->topo, src->chip),
                 to_inst = mdl_linkmap_instance(&s->topo, dst->chip);
        if (from_inst != to_inst) {
            /* between instances: out through the sender's instance network, in through the
             * receiver's (EFA); each is shared by every send crossing it */
            flow_use(f, res_efa(s, from_inst, 0), 1.0, 1.0);
            flow_use(f, res_efa(s, to_inst, 1), 1.0, 1.0);
            s->stats.efa_bytes += x->bytes;
        } else {
            uint32_t links[MDL_LINK_MAX_HOPS];
            uint32_t hops =
                mdl_linkmap_route(&s->topo, src->chip, dst->chip, links, MDL_LINK_MAX_HOPS);
            for (uint32_t h = 0; h < hops; h++)
                flow_use(f, res_link(s, links[h]), 1.0, 1.0);
        }
        flow_use(f, res_hbm(s, dst->chip), x->dst_w, 1.0); /* adds up on one chip */
        s->cc->moved_bytes += x->bytes;
        s->stats.collective_bytes += x->bytes;
        double touches = (double)x->bytes * x->dst_w;
        uint64_t wr = x->reduce ? x->bytes : (uint64_t)llround(touches);
        s->stats.hbm_read_bytes += (uint64_t)llround((double)x->bytes * x->src_w) +
                                   (x->reduce ? (uint64_t)llround(touches) - wr : 0);
        s->stats.hbm_write_bytes += wr;
        co->inflight++;
        if (flow_start(s, &s->net, f)) {
            sim_fail(s, "out of memory");
            return;
        }
        trace_cc(s, co, SIM_TRACE_CC_FLOW_BEGIN, j);
    }
    if (!co->inflight) { /* nothing moves in this step (a group of one) */
        trace_cc(s, co, SIM_TRACE_CC_STEP_END, UINT32_MAX);
        co->step++;
        if (co->step < co->nsteps)
            start_step(s, co);
        else
            last_step_done(s, co);
    }
}

static void start_step(struct sim *s, cc_coll_t *co)
{
    co->step_start = s->q.now;
    if (step_sends(co)) {
        sim_fail(s, "out of memory");
        return;
    }
    if (co->nsends > co->capflows) {
        free(co->flows);
        co->flows = calloc(co->capsends, sizeof *co->flows);
        if (!co->flows) {
            co->capflows = 0;
            sim_fail(s, "out of memory");
            return;
        }
        co->capflows = co->capsends;
    }
    trace_cc(s, co, SIM_TRACE_CC_STEP_BEGIN, 0);
    const mdl_arch_t *a = s->arch;
    /* the step waits for its slowest pair to be connected: hops over NeuronLink, or the
     * network latency between instances */
    double path_ns = 0;
    for (uint32_t j = 0; j < co->nsends; j++) {
        uint32_t from = co->m[co->sends[j].from].core->chip, to = co->m[co->sends[j].to].core->chip;
        double ns;
        if (mdl_linkmap_instance(&s->topo, from) != mdl_linkmap_instance(&s->topo, to)) {
            ns = a->efa.latency_ns;
        } else {
            uint32_t links[MDL_LINK_MAX_HOPS];
            ns = mdl_linkmap_route(&s->topo, from, to, links, MDL_LINK_MAX_HOPS) *
                 a->link.hop_latency_ns;
        }
        if (ns > path_ns)
            path_ns = ns;
    }
    double ns = a->cc.step_latency_ns + path_ns;
    if (co->step == 0)
        ns += a->cc.fixed_ns; /* the collective's own set-up, once */
    sim_event_init(&co->step_ev, step_go, co, PRIO_DMA);
    if (sim_schedule(&s->q, &co->step_ev, s->q.now + (uint64_t)llround(ns * 1000.0)))
        sim_fail(s, "out of memory");
}

static void begin(struct sim *s, cc_coll_t *co)
{
    co->start = s->q.now;
    co->id = ++s->cc->ncoll;
    co->nsent = calloc(co->n, sizeof *co->nsent);
    if (!co->nsent || plan(s, co)) {
        sim_fail(s, "out of memory");
        return;
    }
    if (co->nsteps == 0) /* one member: only the fixed latency */
        co->nsteps = 1;
    co->step = 0;
    start_step(s, co);
}

/* ---- arrival --------------------------------------------------------------------------------- */

/* Two members' instructions agree (ISA.md 7.6: same collectives, same shapes). */
static int compatible(const struct sim *s, const isa_instr_t *a, const isa_instr_t *b, char *why,
                      size_t n)
{
    if (a->op != b->op) {
        snprintf(why, n, "different operations");
        return 0;
    }
    if ((a->op == ISA_OP_ALL_REDUCE || a->op == ISA_OP_REDUCE_SCATTER) &&
        isa_instr_args(s->prog, a)[2].v.i != isa_instr_args(s->prog, b)[2].v.i) {
        snprintf(why, n, "different reductions");
        return 0;
    }
    const isa_view_t *da = view_d(s, a), *db = view_d(s, b);
    const isa_view_t *sa = view_src(s, a), *sb = view_src(s, b);
    if ((da && isa_view_elems(da) != isa_view_elems(db)) ||
        (sa && isa_view_elems(sa) != isa_view_elems(sb))) {
        snprintf(why, n, "different operand sizes");
        return 0;
    }
    return 1;
}

static p2p_key_t *p2p_key(struct sim *s, uint32_t from, uint32_t to, int64_t tag)
{
    struct cc_state *cc = s->cc;
    for (uint32_t i = 0; i < cc->nkeys; i++)
        if (cc->keys[i].from == from && cc->keys[i].to == to && cc->keys[i].tag == tag)
            return &cc->keys[i];
    if (cc->nkeys == cc->capkeys) {
        uint32_t nc = cc->capkeys ? cc->capkeys * 2 : 16;
        p2p_key_t *p = realloc(cc->keys, nc * sizeof *p);
        if (!p)
            return NULL;
        cc->keys = p;
        cc->capkeys = nc;
    }
    p2p_key_t *k = &cc->keys[cc->nkeys++];
    memset(k, 0, sizeof *k);
    k->from = from;
    k->to = to;
    k->tag = tag;
    return k;
}

int cc_arrive(struct sim *s, core_t *c, engine_t *e, const isa_instr_t *in, uint32_t index)
{
    struct cc_state *cc = s->cc;
    const isa_arg_t *args = isa_instr_args(s->prog, in);
    int p2p = in->op == ISA_OP_SEND || in->op == ISA_OP_RECV;
    int32_t group = -1;
    uint32_t pos = 0, n = 2, from = 0, to = 0;
    int64_t tag = 0;
    uint64_t seq;
    if (p2p) {
        uint32_t peer = (uint32_t)args[1].v.i;
        tag = args[2].v.i;
        from = in->op == ISA_OP_SEND ? c->id : peer;
        to = in->op == ISA_OP_SEND ? peer : c->id;
        pos = in->op == ISA_OP_SEND ? 0 : 1;
        p2p_key_t *k = p2p_key(s, from, to, tag);
        if (!k) {
            sim_fail(s, "out of memory");
            return -1;
        }
        seq = in->op == ISA_OP_SEND ? k->sends++ : k->recvs++;
    } else {
        int gslot = in->op == ISA_OP_ALL_REDUCE || in->op == ISA_OP_REDUCE_SCATTER ? 3 : 2;
        group = (int32_t)args[gslot].v.i;
        const isa_group_t *g = &s->prog->groups[group];
        n = g->ncores;
        for (uint32_t i = 0; i < n; i++)
            if ((uint32_t)s->prog->ints[g->first + i] == c->id)
                pos = i;
        seq = cc->seq[(size_t)c->id * s->prog->ngroups + (uint32_t)group]++;
    }
    cc_coll_t *co = NULL;
    for (cc_coll_t *p = cc->pending; p; p = p->next)
        if (p->group == group && p->seq == seq &&
            (!p2p || (p->from == from && p->to == to && p->tag == tag))) {
            co = p;
            break;
        }
    if (!co) {
        co = calloc(1, sizeof *co);
        if (co)
            co->m = calloc(n, sizeof *co->m);
        if (!co || !co->m) {
            free(co);
            sim_fail(s, "out of memory");
            return -1;
        }
        co->op = in->op;
        co->group = group;
        co->seq = seq;
        co->n = n;
        co->from = from;
        co->to = to;
        co->tag = tag;
        co->next = cc->pending;
        cc->pending = co;
    } else {
        /* check against a member already there */
        const cc_member_t *other = NULL;
        for (uint32_t i = 0; i < co->n && !other; i++)
            if (co->m[i].in)
                other = &co->m[i];
        char why[128];
        int ok = 1;
        if (p2p) {
            const isa_view_t *sv = view_src(s, pos ? other->in : in);
            const isa_view_t *dv = view_d(s, pos ? in : other->in);
            ok = isa_view_elems(sv) == isa_view_elems(dv);
            snprintf(why, sizeof why, "the send moves %llu elements, the recv takes %llu",
                     (unsigned long long)isa_view_elems(sv),
                     (unsigned long long)isa_view_elems(dv));
        } else {
            ok = compatible(s, other->in, in, why, sizeof why);
        }
        if (!ok) {
            char w1[768], w2[768];
            member_where(s, other, w1, sizeof w1);
            cc_member_t me = {c, e, in, index, s->q.now};
            member_where(s, &me, w2, sizeof w2);
            if (p2p)
                sim_fail(s,
                         "collective mismatch: send/recv from core %u to core %u tag %lld: "
                         "%s\n  %s\n  %s\n",
                         from, to, (long long)tag, why, w1, w2);
            else
                sim_fail(s,
                         "collective mismatch on group '%s' (collective #%llu of the "
                         "group): %s\n  %s\n  %s\n",
                         isa_string(s->prog, s->prog->groups[group].name),
                         (unsigned long long)seq + 1, why, w1, w2);
            return -1;
        }
    }
    cc_member_t *m = &co->m[pos];
    m->core = c;
    m->eng = e;
    m->in = in;
    m->index = index;
    m->arrived = s->q.now;
    co->arrived++;
    if (co->arrived == co->n)
        begin(s, co);
    return s->failed ? -1 : 0;
}

/* Part of the deadlock report: collectives some members never reached. */
void cc_report_pending(struct sim *s)
{
    if (!s->cc)
        return;
    char line[4096];
    for (cc_coll_t *co = s->cc->pending; co; co = co->next) {
        if (co->arrived == co->n)
            continue;
        size_t at;
        if (co->group >= 0)
            at = (size_t)snprintf(
                line, sizeof line, "  collective %s #%llu on group '%s': never issued by core",
                isa_op_info((isa_op_t)co->op)->mnemonic, (unsigned long long)co->seq + 1,
                isa_string(s->prog, s->prog->groups[co->group].name));
        else
            at = (size_t)snprintf(line, sizeof line,
                                  "  %s from core %u to core %u tag %lld: no matching %s on core",
                                  co->m[0].in ? "send" : "recv", co->from, co->to,
                                  (long long)co->tag, co->m[0].in ? "recv" : "send");
        const isa_group_t *g = co->group >= 0 ? &s->prog->groups[co->group] : NULL;
        for (uint32_t i = 0; i < co->n && at < sizeof line; i++)
            if (!co->m[i].in)
                at += (size_t)snprintf(line + at, sizeof line - at, " %lld",
                                       g ? (long long)s->prog->ints[g->first + i]
                                         : (long long)(i ? co->to : co->from));
        if (at < sizeof line)
            snprintf(line + at, sizeof line - at, "\n");
        sim_error_append(s, line);
        for (uint32_t i = 0; i < co->n; i++)
            if (co->m[i].in) {
                char w[768];
                member_where(s, &co->m[i], w, sizeof w);
                snprintf(line, sizeof line, "    waiting since %.3f ns: %s\n",
                         (double)co->m[i].arrived / 1000.0, w);
                sim_error_append(s, line);
            }
    }
}
