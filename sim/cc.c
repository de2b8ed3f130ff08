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
 * Time. Once every member has arrived the collective runs as steps of an algorithm; in a
 * step every member sends a chunk to a partner. Each chunk is a flow (flow.h) over the
 * sender's DMA engines (shared with its core's DMA queues), the sender chip's HBM (read), the
 * NeuronLinks of the route between the chips -- or, between chips of different instances, the
 * sender instance's network out and the receiver instance's network in (EFA, efa.*) -- and
 * the receiver chip's HBM (write, and a read for reductions). Two cores of one chip exchange
 * through HBM. A step costs a fixed latency (cc.step_latency_ns, plus link.hop_latency_ns
 * per hop of its longest route, or efa.latency_ns when some pair crosses instances) and ends
 * when its slowest chunk lands. Algorithms (cc.algorithm):
 *   ring: all_reduce = reduce-scatter then all-gather around the ring of the group's order,
 *         2(n-1) steps of S/n bytes; all_gather and reduce_scatter n-1 steps;
 *   rhd:  recursive halving (reduce-scatter) then doubling (all-gather), 2 log2(n) steps of
 *         S/2, S/4, ... bytes between partners i xor 2^k; for n a power of two, ring
 *         otherwise.
 * all_to_all always runs n-1 pairwise steps (member i to i+k); send/recv one step.
 * Results are computed when the collective completes: reductions in fp32 in group order,
 * converted to D's type on write; gathers and exchanges copy exactly when the types match.
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

typedef struct cc_coll {
    struct cc_coll *next;
    int op;
    int32_t group;       /* -1 for send/recv */
    uint64_t seq;
    uint32_t from, to;   /* send/recv */
    int64_t tag;
    uint32_t n, arrived;
    cc_member_t *m;      /* by position in the group (send/recv: 0 sender, 1 receiver) */
    /* execution */
    int rhd;
    uint32_t step, nsteps, inflight;
    uint64_t bytes;      /* S: the size that sets the chunks */
    uint64_t start;
    flow_t *flows;       /* n */
    sim_event_t step_ev;
    uint64_t id;         /* 1, 2, ... in the order collectives begin (traces) */
    uint64_t step_start, step_go; /* the step began; its chunks started moving */
} cc_coll_t;

typedef struct p2p_key {
    uint32_t from, to;
    int64_t tag;
    uint64_t sends, recvs;
} p2p_key_t;

struct cc_state {
    cc_coll_t *pending;
    uint64_t *seq;       /* ncores x ngroups */
    p2p_key_t *keys;
    uint32_t nkeys, capkeys;
    uint64_t moved_bytes;
    uint64_t ncoll;      /* collectives begun */
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

static void coll_free(cc_coll_t *co)
{
    free(co->m);
    free(co->flows);
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

/* ---- step plans ------------------------------------------------------------------------------ */

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

static void plan(struct sim *s, cc_coll_t *co)
{
    uint32_t n = co->n;
    const isa_instr_t *in = co->m[0].in;
    co->rhd = s->arch->cc.algorithm == MDL_CC_RHD && is_pow2(n) && n > 1 &&
              (co->op == ISA_OP_ALL_REDUCE || co->op == ISA_OP_REDUCE_SCATTER ||
               co->op == ISA_OP_ALL_GATHER);
    switch (co->op) {
    case ISA_OP_ALL_REDUCE:
        co->bytes = view_bytes(view_src(s, in));
        co->nsteps = n > 1 ? (co->rhd ? 2 * log2u(n) : 2 * (n - 1)) : 0;
        break;
    case ISA_OP_REDUCE_SCATTER:
        co->bytes = view_bytes(view_src(s, in));
        co->nsteps = n > 1 ? (co->rhd ? log2u(n) : n - 1) : 0;
        break;
    case ISA_OP_ALL_GATHER:
        co->bytes = view_bytes(view_d(s, in));
        co->nsteps = n > 1 ? (co->rhd ? log2u(n) : n - 1) : 0;
        break;
    case ISA_OP_ALL_TO_ALL:
        co->bytes = view_bytes(view_src(s, in));
        co->nsteps = n > 1 ? n - 1 : 0;
        break;
    default: /* send/recv */
        co->bytes = view_bytes(view_src(s, in));
        co->nsteps = 1;
        break;
    }
}

/* In step k, member i sends `*bytes` to member `*partner` (reduce: the receiver combines). */
static void step_of(const cc_coll_t *co, uint32_t k, uint32_t i, uint32_t *partner,
                    uint64_t *bytes, int *reduce)
{
    uint32_t n = co->n;
    uint64_t S = co->bytes;
    *reduce = 0;
    if (co->op == ISA_OP_SEND || co->op == ISA_OP_RECV) {
        *partner = 1;
        *bytes = i == 0 ? S : 0;
        return;
    }
    if (co->op == ISA_OP_ALL_TO_ALL) {
        *partner = (i + k + 1) % n;
        *bytes = (S + n - 1) / n;
        return;
    }
    if (co->rhd) {
        uint32_t L = log2u(n);
        if (co->op == ISA_OP_ALL_GATHER) {
            /* doubling: distance 1, 2, ...; the block held doubles */
            *partner = i ^ (1u << k);
            *bytes = (S / n) << k;
            return;
        }
        if (k < L) { /* halving */
            *partner = i ^ (n >> (k + 1));
            *bytes = S >> (k + 1);
            *reduce = 1;
            return;
        }
        uint32_t j = k - L;
        *partner = i ^ (1u << j);
        *bytes = (S / n) << j;
        return;
    }
    *partner = (i + 1) % n;
    *bytes = (S + n - 1) / n;
    if (co->op == ISA_OP_ALL_GATHER)
        *bytes = S / n; /* D is n x SRC: each step forwards one SRC */
    *reduce = co->op == ISA_OP_REDUCE_SCATTER || (co->op == ISA_OP_ALL_REDUCE && k < n - 1);
}

/* ---- results ---------------------------------------------------------------------------------- */

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
                         : red == ISA_ALU_MAX ? (tmp[e] > acc[e] || isnan(tmp[e]) ? tmp[e] : acc[e])
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
    uint64_t chunk = all_to_all ? isa_view_elems(view_src(s, in0)) / n
                                : isa_view_elems(view_src(s, in0));
    size_t cap = (size_t)chunk * 4 + 16;
    void *buf = malloc(cap);
    if (!buf)
        return NCSIM_NOMEM;
    ncsim_status_t st = NCSIM_OK;
    for (uint32_t j = p2p ? 1 : 0; j < n && st == NCSIM_OK; j++) {        /* receiver */
        mdl_core_state_t *fs = &co->m[j].core->fs;
        const isa_view_t *d = view_d(s, co->m[j].in);
        for (uint32_t i = 0; i < (p2p ? 1 : n) && st == NCSIM_OK; i++) {    /* sender */
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

/* ---- trace records ------------------------------------------------------------------------------ */

/* Tell the trace sink about a step (STEP_BEGIN), a member's chunk (FLOW_*, member = the
 * sender) or the end of a step (STEP_END, member UINT32_MAX: once per member). */
static void trace_cc(struct sim *s, const cc_coll_t *co, int event, uint32_t member)
{
    if (!s->opt.trace || !s->opt.trace->cc)
        return;
    if (event == SIM_TRACE_CC_STEP_END && member == UINT32_MAX) {
        for (uint32_t i = 0; i < co->n; i++)
            trace_cc(s, co, event, i);
        return;
    }
    sim_trace_cc_t r;
    memset(&r, 0, offsetof(sim_trace_cc_t, res));
    r.event = (uint8_t)event;
    r.time_ps = s->q.now;
    r.coll = co->id;
    r.op = (uint8_t)co->op;
    r.group = co->group;
    r.nmembers = co->n;
    r.algorithm = co->op == ISA_OP_SEND || co->op == ISA_OP_RECV ? SIM_TRACE_CC_P2P
                  : co->op == ISA_OP_ALL_TO_ALL                  ? SIM_TRACE_CC_PAIRWISE
                  : co->rhd                                      ? SIM_TRACE_CC_RHD
                                                                 : SIM_TRACE_CC_RING;
    r.step = co->step;
    r.nsteps = co->nsteps;
    r.size = co->bytes;
    r.start_ps = event == SIM_TRACE_CC_FLOW_END ? co->step_go : co->step_start;
    if (event != SIM_TRACE_CC_STEP_BEGIN) {
        const cc_member_t *m = &co->m[member];
        uint32_t partner;
        uint64_t bytes;
        int reduce;
        step_of(co, co->step, member, &partner, &bytes, &reduce);
        int sends = bytes && partner != member && partner < co->n;
        r.member = member;
        r.core = m->core->id;
        r.index = m->index;
        r.instr = m->in;
        r.to_core = sends ? co->m[partner].core->id : m->core->id;
        r.bytes = sends ? bytes : 0;
        r.reduce = (uint8_t)(sends && reduce);
    }
    if (event == SIM_TRACE_CC_FLOW_BEGIN || event == SIM_TRACE_CC_FLOW_END) {
        const flow_t *f = &co->flows[member];
        for (unsigned k = 0; k < f->nres && k < SIM_TRACE_MAX_RES; k++) {
            sim_trace_res_t *x = &r.res[r.nres++];
            uint32_t id = f->res[k];
            memset(x, 0, sizeof *x);
            if (id < s->ncores) {
                x->kind = SIM_TRACE_RES_DMA;
                x->id = id;
            } else if (id < s->ncores + s->nchips) {
                x->kind = SIM_TRACE_RES_HBM;
                x->id = id - s->ncores;
            } else if (id < s->ncores + s->nchips + s->topo.nlinks) {
                x->kind = SIM_TRACE_RES_LINK;
                x->id = id - s->ncores - s->nchips;
                x->from_chip = s->topo.links[x->id].from;
                x->to_chip = s->topo.links[x->id].to;
            } else {
                x->kind = SIM_TRACE_RES_EFA;
                x->id = id - s->ncores - s->nchips - s->topo.nlinks;
            }
            x->gbps = s->net.res[id].cap * f->eff[k] * 1000.0; /* bytes/ps -> GB/s */
            x->weight = f->weight[k];
        }
    }
    s->opt.trace->cc(s->opt.trace->ctx, &r);
}

/* ---- running ----------------------------------------------------------------------------------- */

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

/* The step's fixed latency has elapsed: start its flows. */
static void step_go(sim_queue_t *q, sim_event_t *ev)
{
    (void)q;
    cc_coll_t *co = ev->owner;
    struct sim *s = co->m[0].core->sim;
    const mdl_arch_t *a = s->arch;
    co->inflight = 0;
    co->step_go = s->q.now;
    for (uint32_t i = 0; i < co->n; i++) {
        uint32_t partner;
        uint64_t bytes;
        int reduce;
        step_of(co, co->step, i, &partner, &bytes, &reduce);
        if (!bytes || partner == i)
            continue;
        core_t *src = co->m[i].core, *dst = co->m[partner].core;
        flow_t *f = &co->flows[i];
        double piece = (double)(bytes < a->cc.packet_bytes ? bytes : a->cc.packet_bytes);
        double cap = a->dma.engines * a->dma.engine_bandwidth_gbps * 1e-3;
        double rank = a->cc.rank_bandwidth_gbps * 1e-3; /* the member's collective data path */
        if (rank < cap)
            cap = rank;
        flow_init(f, (double)bytes, cap, NULL, co);
        sim_event_init(&f->ev, flow_landed, f, PRIO_DMA);
        flow_use(f, res_dma(s, src->id), 1.0, mdl_dma_efficiency(a, piece));
        flow_use(f, res_hbm(s, src->chip), 1.0, 1.0);
        uint32_t from_inst = mdl_linkmap_instance(&s->topo, src->chip),
                 to_inst = mdl_linkmap_instance(&s->topo, dst->chip);
        if (from_inst != to_inst) {
            /* between instances: out through the sender's instance network, in through the
             * receiver's (EFA); each is shared by every chunk crossing it */
            flow_use(f, res_efa(s, from_inst, 0), 1.0, 1.0);
            flow_use(f, res_efa(s, to_inst, 1), 1.0, 1.0);
            s->stats.efa_bytes += bytes;
        } else {
            uint32_t links[MDL_LINK_MAX_HOPS];
            uint32_t hops = mdl_linkmap_route(&s->topo, src->chip, dst->chip, links,
                                               MDL_LINK_MAX_HOPS);
            for (uint32_t h = 0; h < hops; h++)
                flow_use(f, res_link(s, links[h]), 1.0, 1.0);
        }
        flow_use(f, res_hbm(s, dst->chip), reduce ? 2.0 : 1.0, 1.0);
        s->cc->moved_bytes += bytes;
        s->stats.collective_bytes += bytes;
        s->stats.hbm_read_bytes += bytes * (reduce ? 2 : 1);
        s->stats.hbm_write_bytes += bytes;
        co->inflight++;
        if (flow_start(s, &s->net, f)) {
            sim_fail(s, "out of memory");
            return;
        }
        trace_cc(s, co, SIM_TRACE_CC_FLOW_BEGIN, i);
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
    trace_cc(s, co, SIM_TRACE_CC_STEP_BEGIN, 0);
    const mdl_arch_t *a = s->arch;
    /* the step waits for its slowest pair to be connected: hops over NeuronLink, or the
     * network latency between instances */
    double path_ns = 0;
    for (uint32_t i = 0; i < co->n; i++) {
        uint32_t partner;
        uint64_t bytes;
        int reduce;
        step_of(co, co->step, i, &partner, &bytes, &reduce);
        if (!bytes || partner == i)
            continue;
        uint32_t from = co->m[i].core->chip, to = co->m[partner].core->chip;
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
    plan(s, co);
    co->flows = calloc(co->n, sizeof *co->flows);
    if (!co->flows) {
        sim_fail(s, "out of memory");
        return;
    }
    if (co->nsteps == 0) { /* one member: only the fixed latency */
        co->nsteps = 1;
        co->step = 0;
    }
    start_step(s, co);
}

/* ---- arrival ------------------------------------------------------------------------------------ */

/* Two members' instructions agree (ISA.md 7.6: same collectives, same shapes). */
static int compatible(const struct sim *s, const isa_instr_t *a, const isa_instr_t *b,
                      char *why, size_t n)
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
                sim_fail(s, "collective mismatch: send/recv from core %u to core %u tag %lld: "
                            "%s\n  %s\n  %s\n",
                         from, to, (long long)tag, why, w1, w2);
            else
                sim_fail(s, "collective mismatch on group '%s' (collective #%llu of the "
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
            at = (size_t)snprintf(line, sizeof line,
                                  "  collective %s #%llu on group '%s': never issued by core",
                                  isa_op_info((isa_op_t)co->op)->mnemonic,
                                  (unsigned long long)co->seq + 1,
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
