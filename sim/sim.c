/*
 * sim.c -- engines, semaphores and the run loop.
 *
 * Each engine runs its stream in order (ISA.md 8). An engine has one "try" event: at its
 * time the engine checks the next instruction's waits, the same-engine interlock and the
 * shared ports; if all hold it starts the instruction now, applies its effect (models/),
 * records its completion in a small in-flight FIFO, and tries again after the initiation
 * interval. When nothing else is queued before that time it continues inline without
 * touching the heap, so a long stream of independent instructions costs one loop iteration
 * each. Posts fire at completion through a second per-engine event.
 */
#include "sim_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dis.h"
#include "npy.h"
#include "rng.h"

/* ---- errors ----------------------------------------------------------------------------------- */

void sim_error_append(struct sim *s, const char *text)
{
    size_t n = strlen(text);
    if (s->error_len + n + 1 > s->error_cap) {
        size_t cap = s->error_cap ? s->error_cap * 2 : 1024;
        while (cap < s->error_len + n + 1)
            cap *= 2;
        char *e = realloc(s->error, cap);
        if (!e)
            return;
        s->error = e;
        s->error_cap = cap;
    }
    memcpy(s->error + s->error_len, text, n + 1);
    s->error_len += n;
}

void sim_fail(struct sim *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    s->failed = 1;
    if (!s->fault.kind)
        s->fault.kind = SIM_FAULT_RUNTIME;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sim_error_append(s, buf);
}

/* "FILE:LINE: core C ENGINE instruction I `text`" */
void sim_instr_where(struct sim *s, const core_t *c, int engine, uint32_t index,
                     const isa_instr_t *in, char *buf, size_t n)
{
    char text[512];
    if (!s->fault.has_site) { /* the first instruction an error names is where it happened */
        s->fault.has_site = 1;
        s->fault.core = c->id;
        s->fault.engine = (uint8_t)engine;
        s->fault.index = index;
        s->fault.line = in->line;
    }
    isa_format_instr(s->prog, c->id, in, text, sizeof text);
    const char *file = isa_string(s->prog, s->prog->source);
    if (in->line && *file)
        snprintf(buf, n, "%s:%u: core %u %s instruction %u `%s`", file, in->line, c->id,
                 isa_engine_name((isa_engine_t)engine), index, text);
    else if (in->line)
        snprintf(buf, n, "line %u: core %u %s instruction %u `%s`", in->line, c->id,
                 isa_engine_name((isa_engine_t)engine), index, text);
    else
        snprintf(buf, n, "core %u %s instruction %u `%s`", c->id,
                 isa_engine_name((isa_engine_t)engine), index, text);
}

/* ---- semaphores -------------------------------------------------------------------------------- */

static int waits_hold(const core_t *c, const isa_instr_t *in, uint8_t *failing)
{
    for (unsigned i = 0; i < in->nwait; i++) {
        const isa_sync_t *w = &in->wait[i];
        int32_t v = c->sems[w->sem];
        int ok = w->op == ISA_WAIT_EQ ? v == w->value : v >= w->value;
        if (!ok) {
            *failing = w->sem;
            return 0;
        }
    }
    return 1;
}

_Static_assert(ISA_ENGINE_COUNT <= 8, "core_t.waiters has one bit per engine");

/* Wake the engines of core c blocked on semaphore `sem` (each blocks on the first of its
 * waits that does not hold; a post to another semaphore cannot release it). */
static void wake_core(struct sim *s, core_t *c, uint8_t sem)
{
    for (unsigned m = c->waiters[sem]; m; m &= m - 1) {
        engine_t *E = &c->engines[__builtin_ctz(m)]; /* in engine order */
        if (!sim_event_queued(&E->ev))
            if (sim_schedule(&s->q, &E->ev, s->q.now))
                sim_fail(s, "out of memory");
    }
}

void sim_apply_post_list(struct sim *s, core_t *c, const isa_instr_t *in,
                         const isa_sync_t *post, unsigned npost, int by_engine,
                         uint32_t by_index)
{
    if (s->opt.observer && s->opt.observer->posts && npost)
        s->opt.observer->posts(s->opt.observer->ctx, s, c->id, by_engine, by_index, in);
    for (unsigned i = 0; i < npost; i++) {
        const isa_sync_t *p = &post[i];
        int64_t v = c->sems[p->sem];
        switch (p->op) {
        case ISA_POST_ADD: v += p->value; break;
        case ISA_POST_SUB: v -= p->value; break;
        default: v = p->value; break;
        }
        if (v > INT32_MAX || v < INT32_MIN) {
            char where[768];
            const engine_t *E = by_engine < ISA_ENGINE_COUNT ? &c->engines[by_engine] : NULL;
            (void)E;
            sim_instr_where(s, c, by_engine < ISA_ENGINE_COUNT ? by_engine : ISA_ENGINE_SP,
                            by_index, in, where, sizeof where);
            sim_fail(s, "%s: semaphore overflow: post takes semaphore %u beyond 32 bits\n",
                     where, p->sem);
            return;
        }
        c->sems[p->sem] = (int32_t)v;
        wake_core(s, c, p->sem);
        if (s->opt.trace && s->opt.trace->sem) {
            sim_trace_sem_t r = {c->id, p->sem, (int32_t)v, s->q.now, (uint8_t)by_engine,
                                 by_index};
            s->opt.trace->sem(s->opt.trace->ctx, &r);
        }
    }
}

void sim_apply_posts(struct sim *s, core_t *c, const isa_instr_t *in, int by_engine,
                     uint32_t by_index)
{
    sim_apply_post_list(s, c, in, in->post, in->npost, by_engine, by_index);
}

/* ---- in-flight FIFO ------------------------------------------------------------------------------ */

/* The ring's capacity is a power of two (16, doubled when full): a mask, not a division. */
static inline inflight_t *fl_at(engine_t *E, uint32_t i)
{
    return &E->fl[(E->fl_head + i) & (E->fl_cap - 1)];
}

/* A new entry at the back, filled by the caller (NULL when out of memory). */
static inflight_t *fl_push(engine_t *E)
{
    if (E->fl_n == E->fl_cap) {
        uint32_t nc = E->fl_cap ? E->fl_cap * 2 : 16;
        inflight_t *p = malloc(nc * sizeof *p);
        if (!p)
            return NULL;
        for (uint32_t i = 0; i < E->fl_n; i++)
            p[i] = *fl_at(E, i);
        free(E->fl);
        E->fl = p;
        E->fl_cap = nc;
        E->fl_head = 0;
    }
    return &E->fl[(E->fl_head + E->fl_n++) & (E->fl_cap - 1)];
}

/* Drop completed entries without posts from the front. */
static void fl_trim(engine_t *E, uint64_t now)
{
    while (E->fl_n) {
        inflight_t *f = fl_at(E, 0);
        if (f->complete > now || f->posts)
            break;
        E->fl_head = (E->fl_head + 1) & (E->fl_cap - 1);
        E->fl_n--;
    }
}

static void schedule_post_event(struct sim *s, engine_t *E)
{
    if (!E->fl_posts)
        return; /* nothing in flight posts: no need to look */
    for (uint32_t i = 0; i < E->fl_n; i++) {
        inflight_t *f = fl_at(E, i);
        if (f->posts) {
            if (!sim_event_queued(&E->post_ev) || E->post_ev.time != f->complete)
                if (sim_schedule(&s->q, &E->post_ev, f->complete))
                    sim_fail(s, "out of memory");
            return;
        }
    }
}

static void engine_posts(sim_queue_t *q, sim_event_t *ev)
{
    engine_t *E = ev->owner;
    struct sim *s = E->core->sim;
    while (E->fl_n && !s->failed) {
        inflight_t *f = fl_at(E, 0);
        if (f->complete > q->now)
            break;
        if (f->posts) { /* from the entry: the instruction's record left the cache long ago */
            E->fl_posts--;
            sim_apply_post_list(s, E->core, &E->instrs[f->index], f->post, f->posts, E->id,
                                f->index);
        }
        E->fl_head = (E->fl_head + 1) & (E->fl_cap - 1);
        E->fl_n--;
    }
    schedule_post_event(s, E);
}

/* ---- reads, writes and the interlock ---------------------------------------------------------------- */

static void view_box(const isa_view_t *v, box_t *b)
{
    b->space = v->space;
    b->p0 = v->space == ISA_SPACE_HBM ? 0 : v->pstart;
    b->p1 = (uint16_t)(v->space == ISA_SPACE_HBM ? 1 : v->pstart + v->pcount);
    isa_view_byte_range(v, &b->lo, &b->hi);
}

static int boxes_overlap(const box_t *a, const box_t *b)
{
    return a->space == b->space && a->p0 < b->p1 && b->p0 < a->p1 && a->lo < b->hi &&
           b->lo < a->hi;
}

/* Which slots an instruction writes (for the interlock). DMA and collectives are outside
 * the engine's interlock (ISA.md 8); ldweights writes only the PE array. */
static int writes_slot(int op, unsigned slot)
{
    switch (op) {
    case ISA_OP_LDWEIGHTS:
    case ISA_OP_DMA:
    case ISA_OP_NOP:
    case ISA_OP_ALL_REDUCE:
    case ISA_OP_ALL_GATHER:
    case ISA_OP_REDUCE_SCATTER:
    case ISA_OP_ALL_TO_ALL:
    case ISA_OP_SEND:
    case ISA_OP_RECV:
        return 0;
    case ISA_OP_ACTIVATE:
        return slot == 0 || slot == 5 || slot == 6;
    default:
        return slot == 0;
    }
}

static int reads_slot(int op, unsigned slot)
{
    switch (op) {
    case ISA_OP_DMA:
    case ISA_OP_ALL_REDUCE:
    case ISA_OP_ALL_GATHER:
    case ISA_OP_REDUCE_SCATTER:
    case ISA_OP_ALL_TO_ALL:
    case ISA_OP_SEND:
    case ISA_OP_RECV:
        return 0;
    case ISA_OP_LDWEIGHTS:
        return 1;
    case ISA_OP_SELECT:
        return 1; /* D keeps its old values where the predicate is false */
    case ISA_OP_ACTIVATE:
        return slot != 0 && slot != 5; /* sumacc reads R */
    case ISA_OP_MATMUL:
        return slot != 0; /* accumulation into PSUM is pipelined inside pe */
    default:
        return slot != 0;
    }
}

/* Earliest time an instruction reading boxes r[0..nr) may start because of in-flight writes
 * (0 when none). */
static uint64_t interlock_until(engine_t *E, const box_t *r, unsigned nr, uint64_t now)
{
    /* entries complete in issue order (start_instr), so from the newest back the first
     * overlap is the latest, and nothing older can be later than what is found */
    uint64_t until = 0;
    for (unsigned k = 0; k < nr; k++) {
        /* nothing in flight writes this space past max(now, until): nothing the scan would
         * find (matmul reads SBUF while the entries in flight write PSUM, and so on) */
        uint64_t w_until = E->write_until[r[k].space];
        if (w_until <= now || w_until <= until)
            continue;
        for (uint32_t i = E->fl_n; i-- > 0;) {
            const inflight_t *f = fl_at(E, i);
            if (f->complete <= now || f->complete <= until)
                break;
            for (unsigned w = 0; w < f->nw; w++)
                if (boxes_overlap(&r[k], &f->w[w])) {
                    until = f->complete;
                    break;
                }
            if (until == f->complete)
                break;
        }
    }
    return until;
}

/* ---- the memo ---------------------------------------------------------------------------------- */

static uint64_t ns_to_ps(double ns);

/* The cost part of a memo entry (matmul's changes with the loaded weights). */
static void memo_cost(struct sim *s, const isa_instr_t *in, uint32_t stationary_cols,
                      instr_memo_t *m)
{
    m->cost_cols = stationary_cols;
    mdl_cost_instr(s->arch, s->prog, in, stationary_cols, &m->cost);
    m->ii_ps = ns_to_ps(m->cost.ii_ns);
    m->lat_ps = ns_to_ps(m->cost.latency_ns);
    m->flops = m->cost.flops;
    m->hw_flops = m->cost.hw_flops;
    m->sbuf_port = m->cost.reads_sbuf || m->cost.writes_sbuf;
    m->psum_port = m->cost.reads_psum || m->cost.writes_psum;
}

static void memo_fill(struct sim *s, const isa_instr_t *in, uint32_t stationary_cols,
                      instr_memo_t *m)
{
    memset(m, 0, sizeof *m);
    m->args = in->args;
    m->op = in->op;
    m->engine = in->engine;
    const isa_op_info_t *info = isa_op_info((isa_op_t)in->op);
    const isa_arg_t *args = isa_instr_args(s->prog, in);
    for (unsigned k = 0; k < info->nslots; k++) {
        if (!args[k].present || !args[k].is_view)
            continue;
        if (reads_slot(in->op, k))
            view_box(&s->prog->views[args[k].index], &m->r[m->nr++]);
        if (writes_slot(in->op, k) && m->nw < 2)
            view_box(&s->prog->views[args[k].index], &m->w[m->nw++]);
    }
    if (in->op == ISA_OP_LDWEIGHTS)
        m->loads_cols = (uint32_t)isa_view_free_elems(&s->prog->views[args[0].index]);
    if (in->op == ISA_OP_DMA)
        dma_memo_fill(s, in, &m->dma);
    memo_cost(s, in, stationary_cols, m);
}

/* The slot of a block: indexed by the block's offset itself, so no two blocks collide while
 * the slots hold all (at most 16k slots, 4 bytes each). */
static inline uint32_t *memo_slot(struct sim *s, uint32_t args)
{
    return &s->memo_slot[args & s->memo_mask];
}

const instr_memo_t *sim_memo(struct sim *s, const isa_instr_t *in, uint32_t stationary_cols)
{
    if (!s->memo_slot) {
        uint32_t n = 16;
        while (n < s->prog->nargs && n < (1u << 14) && n < s->memo_max_slots)
            n *= 2;
        /* entries for every slot at once, never cleared (memo_fill writes each in full):
         * only the pages of entries in use are touched, and no growth by realloc (which
         * maps fresh pages again each time, in every run) */
        s->memo_slot = calloc(n, sizeof *s->memo_slot);
        s->memo = malloc(n * sizeof *s->memo);
        if (!s->memo_slot || !s->memo) {
            free(s->memo_slot);
            free(s->memo);
            s->memo_slot = NULL;
            s->memo = NULL;
            return NULL;
        }
        s->memo_mask = n - 1;
    }
    /* A slot holds 1 + the index of its entry in s->memo, 0 while unused: entries are
     * taken in the order blocks are first used, so the memory touched is as large as the
     * blocks in use (not a few MB of mostly empty entries) and neighbours in the program
     * are neighbours in memory. A block whose slot another holds takes over its entry. */
    uint32_t *slot = memo_slot(s, in->args);
    instr_memo_t *m;
    if (!*slot) {
        *slot = ++s->nmemo; /* at most one entry per slot */
        m = &s->memo[*slot - 1];
        memo_fill(s, in, stationary_cols, m);
        return m;
    }
    m = &s->memo[*slot - 1];
    if (m->args != in->args || m->op != in->op || m->engine != in->engine) {
        memo_fill(s, in, stationary_cols, m);
    } else if (in->op == ISA_OP_MATMUL && m->cost_cols != stationary_cols) {
        /* matmul's cost depends on the weights loaded: only its cost changes */
        memo_cost(s, in, stationary_cols, m);
    }
    return m;
}

/* ---- issuing ---------------------------------------------------------------------------------------- */

static uint64_t ns_to_ps(double ns)
{
    double ps = ns * 1000.0;
    if (ps <= 0)
        return 0;
    return (uint64_t)llround(ps);
}

static void stall_segment(engine_t *E, uint64_t now, uint8_t cause, uint8_t sem)
{
    if (E->seg_start != UINT64_MAX && now > E->seg_start)
        E->st->stall_by[E->stall] += now - E->seg_start;
    if (E->seg_start != UINT64_MAX && now > E->seg_start) {
        E->st->stall_ps += now - E->seg_start;
        E->wait_by[E->stall] += now - E->seg_start;
        E->waited = 1;
    }
    E->seg_start = now;
    E->stall = cause;
    E->stall_sem = sem;
    if (cause != SIM_STALL_NONE)
        E->last_stall = cause;
    if (cause == SIM_STALL_SEMAPHORE)
        E->wait_sem = sem;
}

/* Port the instruction needs that another engine holds: time it frees, or 0. */
static uint64_t port_until(const core_t *c, int eng, const instr_memo_t *m, uint64_t now)
{
    uint64_t until = 0;
    int sbuf = m->sbuf_port;
    int psum = m->psum_port;
    if (sbuf && (eng == ISA_ENGINE_DVE || eng == ISA_ENGINE_POOL) &&
        c->sbuf_port_owner != eng && c->sbuf_port_until > now)
        until = c->sbuf_port_until;
    if (psum && (eng == ISA_ENGINE_DVE || eng == ISA_ENGINE_ACT) &&
        c->psum_port_owner != eng && c->psum_port_until > now && c->psum_port_until > until)
        until = c->psum_port_until;
    return until;
}

static void take_ports(core_t *c, int eng, const instr_memo_t *m, uint64_t until)
{
    int sbuf = m->sbuf_port;
    int psum = m->psum_port;
    if (sbuf && (eng == ISA_ENGINE_DVE || eng == ISA_ENGINE_POOL) &&
        (c->sbuf_port_owner == eng || c->sbuf_port_until <= until)) {
        if (c->sbuf_port_owner != eng || c->sbuf_port_until < until)
            c->sbuf_port_until = until;
        c->sbuf_port_owner = (uint8_t)eng;
    }
    if (psum && (eng == ISA_ENGINE_DVE || eng == ISA_ENGINE_ACT)) {
        if (c->psum_port_owner != eng || c->psum_port_until < until)
            c->psum_port_until = until;
        c->psum_port_owner = (uint8_t)eng;
    }
}

static void fail_at(struct sim *s, core_t *c, engine_t *E, const isa_instr_t *in,
                    const char *msg)
{
    char where[768];
    sim_instr_where(s, c, E->id, E->pc, in, where, sizeof where);
    sim_fail(s, "%s: %s\n", where, msg);
}

#define PARKED (UINT64_MAX - 1)

/* Start instruction E->pc now. Returns its II in ps, PARKED when the engine now waits in a
 * collective, or UINT64_MAX on failure. */
static uint64_t start_instr(struct sim *s, engine_t *E, const isa_instr_t *in,
                            const instr_memo_t *m, uint64_t now)
{
    core_t *c = E->core;
    const mdl_cost_t *cost = &m->cost;
    uint64_t ii = m->ii_ps;
    uint64_t model_ii = ii;
    uint32_t stationary_cols = E->stationary_cols; /* what the cost was computed with */
    uint64_t lat = m->lat_ps;
    if (lat < ii)
        lat = ii;
    /* Background LoadStationary (ARCH, PERF): weights load into the array while the
     * previous matmul still streams, so an ldweights right after a matmul costs only what
     * the matmul's streaming time does not hide. */
    if (in->op == ISA_OP_LDWEIGHTS && E->last_op == ISA_OP_MATMUL)
        ii = ii > E->last_ii ? ii - E->last_ii : 0;
    if (ii == 0)
        ii = 1; /* every instruction takes some time: keeps time moving forward */
    E->last_op = in->op;
    E->last_ii = ii;
    if (in->op == ISA_OP_LDWEIGHTS)
        E->stationary_cols = m->loads_cols;
    if (s->opt.observer && s->opt.observer->instr_start)
        s->opt.observer->instr_start(s->opt.observer->ctx, s, c->id, E->id, E->pc, in);
    sim_line_stats_t *ls = sim_line(s, in);
    ls->instructions++;
    if (E->waited) /* else every wait_by is 0 */
        for (int k = 0; k < SIM_STALL_COUNT; k++)
            ls->stall_by[k] += E->wait_by[k];
    if (in->engine != ISA_ENGINE_CC || in->op == ISA_OP_NOP)
        ls->busy_ps += ii;
    if (in->engine == ISA_ENGINE_CC && in->op != ISA_OP_NOP) {
        /* the cc engine waits in the collective until every member has arrived and the
         * data has moved; its posts fire then (cc.c) */
        if (cc_arrive(s, c, E, in, E->pc))
            return UINT64_MAX;
        E->st->instructions++;
        c->st->used = 1;
        s->stats.instructions++;
        return PARKED;
    }
    if (in->op == ISA_OP_DMA) {
        if (dma_issue(s, c, E, in, E->pc, &m->dma))
            return UINT64_MAX;
    } else if (!s->opt.timing_only && in->op != ISA_OP_NOP) {
        char err[1024];
        ncsim_status_t st = mdl_exec(&c->fs, in, err, sizeof err);
        if (st != NCSIM_OK) {
            fail_at(s, c, E, in, st == NCSIM_NOMEM ? "out of memory" : err);
            if (st == NCSIM_NOMEM || st == NCSIM_INTERNAL) /* the host failed, not the program */
                s->fail_status = st;
            return UINT64_MAX;
        }
        if (s->opt.observer && s->opt.observer->instr_done)
            s->opt.observer->instr_done(s->opt.observer->ctx, s, c->id, E->id, E->pc, in);
    }
    uint64_t complete = now + lat;
    if (complete < E->last_complete)
        complete = E->last_complete; /* an engine completes in issue order */
    E->last_complete = complete;
    uint8_t posts = in->op != ISA_OP_DMA ? in->npost : 0;
    if (m->nw || posts) {
        inflight_t *f = fl_push(E); /* written in place: every field */
        if (!f) {
            sim_fail(s, "out of memory");
            return UINT64_MAX;
        }
        f->complete = complete;
        f->index = E->pc;
        f->posts = posts;
        memcpy(f->post, in->post, sizeof f->post);
        f->nw = m->nw;
        /* both boxes, a fixed size: a copy of nw boxes was a `rep movs`, whose start-up cost
         * was most of start_instr's time (memo_fill zeroes the boxes past nw; never read) */
        memcpy(f->w, m->w, sizeof f->w);
        for (unsigned w = 0; w < m->nw; w++) /* completions are in issue order: the latest */
            E->write_until[m->w[w].space] = complete;
        E->fl_posts += posts != 0;
        /* post_ev, when queued, is at the first entry with posts, which this one follows */
        if (posts && !sim_event_queued(&E->post_ev) &&
            sim_schedule(&s->q, &E->post_ev, complete))
            sim_fail(s, "out of memory");
    }
    take_ports(c, E->id, m, now + ii);
    sim_engine_stats_t *st = E->st;
    st->instructions++;
    st->busy_ps += ii;
    if (complete > E->active_end) {
        st->active_ps += complete - (E->active_end > now ? E->active_end : now);
        E->active_end = complete;
    }
    st->flops += m->flops;
    if (complete > st->end_ps)
        st->end_ps = complete;
    s->stats.tensor_flops += m->flops;
    s->stats.tensor_hw_flops += m->hw_flops;
    s->stats.instructions++;
    c->st->used = 1;
    c->st->sbuf_read_bytes += cost->sbuf_read_bytes;
    c->st->sbuf_write_bytes += cost->sbuf_write_bytes;
    c->st->psum_read_bytes += cost->psum_read_bytes;
    c->st->psum_write_bytes += cost->psum_write_bytes;
    c->st->tensor_hw_flops += cost->hw_flops;
    c->st->tensor_hw_flops_fp32 += cost->hw_flops_fp32;
    if (cost->hw_flops > cost->flops) {
        uint64_t waste = cost->hw_flops - cost->flops;
        c->st->tensor_transpose_flops += waste;
        if (cost->hw_flops_fp32)
            c->st->tensor_transpose_flops_fp32 += waste;
    }
    if (s->opt.trace && s->opt.trace->instr) {
        sim_trace_instr_t r;
        r.core = c->id;
        r.engine = E->id;
        r.index = E->pc;
        r.instr = in;
        r.ready_ps = E->ready_ps;
        r.start_ps = now;
        r.ii_ps = ii;
        r.end_ps = complete;
        r.stall = E->last_stall;
        r.stall_sem = E->wait_sem;
        r.flops = cost->flops;
        r.bytes = cost->bytes_read + cost->bytes_written;
        r.hw_flops = cost->hw_flops;
        r.hw_flops_fp32 = cost->hw_flops_fp32;
        r.sbuf_read_bytes = cost->sbuf_read_bytes;
        r.sbuf_write_bytes = cost->sbuf_write_bytes;
        r.psum_read_bytes = cost->psum_read_bytes;
        r.psum_write_bytes = cost->psum_write_bytes;
        memcpy(r.stall_by, E->wait_by, sizeof r.stall_by);
        r.stationary_cols = stationary_cols;
        r.model_ii_ps = model_ii;
        s->opt.trace->instr(s->opt.trace->ctx, &r);
    }
    return ii;
}

static void engine_try(sim_queue_t *q, sim_event_t *ev)
{
    engine_t *E = ev->owner;
    core_t *c = E->core;
    struct sim *s = c->sim;
    for (;;) {
        if (s->failed || E->pc == E->n)
            return;
        uint64_t now = q->now;
        const isa_instr_t *in = &E->instrs[E->pc];
        if (E->seg_start == UINT64_MAX) {
            E->seg_start = now;
            E->ready_ps = now;
            E->stall = SIM_STALL_NONE;
            E->last_stall = SIM_STALL_NONE;
            E->wait_sem = 0;
            if (E->waited)
                memset(E->wait_by, 0, sizeof E->wait_by);
            E->waited = 0;
        }
        fl_trim(E, now);
        uint8_t sem = 0;
        if (!waits_hold(c, in, &sem)) {
            stall_segment(E, now, SIM_STALL_SEMAPHORE, sem);
            if (E->blocked)
                c->waiters[E->blocked_sem] &= (uint8_t)~(1u << E->id);
            E->blocked = 1;
            E->blocked_sem = sem;
            c->waiters[sem] |= (uint8_t)(1u << E->id);
            E->sem_waited = 1;
            return;
        }
        if (E->blocked) {
            c->waiters[E->blocked_sem] &= (uint8_t)~(1u << E->id);
            E->blocked = 0;
        }
        if (E->sem_waited) {
            /* the semaphore update reaches the waiting sequencer and the instruction is
             * dispatched: costs.semaphore_latency_ns after the post (measurements.md 6) */
            E->sem_waited = 0;
            uint64_t wake = s->sem_wake_ps;
            if (wake) {
                uint64_t at = now + wake;
                if (s->fold && at < sim_queue_next_time(q) && at <= s->run_limit_ps) {
                    /* nothing else is queued before `at`: the event would be the next to
                     * run, so run it now (counted as the event it stands for) */
                    q->now = at;
                    q->processed++;
                    continue;
                }
                if (sim_schedule(q, ev, at))
                    sim_fail(s, "out of memory");
                return;
            }
        }
        const instr_memo_t *m = sim_memo(s, in, E->stationary_cols);
        if (!m) {
            sim_fail(s, "out of memory");
            return;
        }
        uint64_t until = interlock_until(E, m->r, m->nr, now);
        if (until > now) {
            stall_segment(E, now, SIM_STALL_INTERLOCK, 0);
            if (sim_schedule(q, ev, until))
                sim_fail(s, "out of memory");
            return;
        }
        until = port_until(c, E->id, m, now);
        if (until > now) {
            stall_segment(E, now, SIM_STALL_PORT, 0);
            if (sim_schedule(q, ev, until))
                sim_fail(s, "out of memory");
            return;
        }
        stall_segment(E, now, SIM_STALL_NONE, 0);
        E->seg_start = UINT64_MAX;
        uint64_t ii = start_instr(s, E, in, m, now);
        if (ii == UINT64_MAX)
            return;
        E->pc++;
        if (E->pc < E->n) {
            /* the next instruction's memo entry, and the stream a few records ahead (each
             * engine walks its own part of a program of tens of MB): fetched while the
             * queue runs other engines */
            uint32_t next_slot = *memo_slot(s, E->instrs[E->pc].args);
            /* (no branch on the slot: it waits for two loads, and a prefetch of entry 0 for
             * an unused slot costs nothing) */
            __builtin_prefetch(&s->memo[next_slot - (next_slot != 0)]);
            __builtin_prefetch(&E->instrs[E->pc + 4]);
        }
        if (ii == PARKED) {
            E->parked = 1;
            return;
        }
        uint64_t next = now + ii;
        if (E->pc == E->n)
            return;
        /* nothing else can happen before `next`: continue without the heap (not past the
         * time a sim_run(SIM_RUN_UNTIL_TIME) stops at) */
        if (next < sim_queue_next_time(q)) {
            if (next <= s->run_limit_ps) {
                q->now = next;
                continue;
            }
            /* Only the end of a sim_run(SIM_RUN_UNTIL_TIME) slice keeps this step from being
             * folded, and a folded step is not an event: the one scheduled here is not
             * counted either, so the statistics do not depend on how a run is sliced (the
             * slices follow host time). */
            q->processed--;
        }
        if (sim_schedule(q, ev, next))
            sim_fail(s, "out of memory");
        return;
    }
}

void sim_engine_resume(struct sim *s, engine_t *E)
{
    E->parked = 0;
    if (E->pc < E->n && sim_schedule(&s->q, &E->ev, s->q.now))
        sim_fail(s, "out of memory");
}

/* ---- breakdowns -------------------------------------------------------------------------------- */

size_t sim_explain_instr(const mdl_arch_t *a, const isa_program_t *p,
                         const sim_trace_instr_t *r, struct mdl_cost_terms *terms, char *buf,
                         size_t n)
{
    mdl_cost_terms_t local;
    mdl_cost_terms_t *t = terms ? terms : &local;
    mdl_cost_t cost;
    mdl_cost_explain(a, p, r->instr, r->stationary_cols, &cost, t);
    size_t len = mdl_cost_terms_format(t, &cost, buf, n);
    if (r->ii_ps < r->model_ii_ps) {
        /* background LoadStationary (sim.c start_instr) */
        int at = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0,
                          "; loads in the background of the previous matmul: charged %.3f ns "
                          "of %.3f",
                          (double)r->ii_ps / 1e3, (double)r->model_ii_ps / 1e3);
        len += at > 0 ? (size_t)at : 0;
    }
    return len;
}

/* ---- construction --------------------------------------------------------------------------------- */

uint64_t sim_tensor_elems(const isa_program_t *p, uint32_t tensor)
{
    const isa_tensor_t *T = &p->tensors[tensor];
    uint64_t n = 1;
    for (unsigned d = 0; d < T->ndims; d++)
        n *= T->dims[d];
    return n;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The by-line statistics' table: one entry per line up to MAX_LINE, or, when that would be
 * far larger than the program (line numbers from `.loc` or a crafted .ncx are any 32-bit
 * value), one entry per distinct line its instructions carry (line_ids; sim_line_at finds
 * them by bisection). The statistics written are the same either way. -1 when out of memory. */
static int sim_lines_init(sim_stats_t *st, const isa_program_t *prog, uint32_t max_line)
{
    uint64_t dense = (uint64_t)max_line + 1;
    if (dense <= 2 * (uint64_t)prog->ninstrs + 4096) {
        st->nlines = (uint32_t)dense;
        st->lines = calloc(st->nlines, sizeof *st->lines);
        return st->lines ? 0 : -1;
    }
    uint32_t *ids = malloc(((size_t)prog->ninstrs + 1) * sizeof *ids);
    if (!ids)
        return -1;
    size_t n = 0;
    ids[n++] = 0;
    for (uint32_t i = 0; i < prog->ninstrs; i++)
        ids[n++] = prog->instrs[i].line;
    qsort(ids, n, sizeof *ids, cmp_u32);
    size_t m = 1; /* ids[0] is 0, the smallest */
    for (size_t i = 1; i < n; i++)
        if (ids[i] != ids[m - 1])
            ids[m++] = ids[i];
    st->line_ids = ids;
    st->nlines = (uint32_t)m;
    st->lines = calloc(m, sizeof *st->lines);
    return st->lines ? 0 : -1;
}

ncsim_status_t sim_create(const isa_program_t *prog, const sim_options_t *opt, sim_t **out,
                          char *err, size_t errlen)
{
    *out = NULL;
    const mdl_arch_t *a = opt->arch;
    if (prog->chips > a->chips) {
        snprintf(err, errlen, "the program needs %u chips but architecture '%s' has %u "
                              "(choose a larger preset or --set system.chips=%u)",
                 prog->chips, a->name, a->chips, prog->chips);
        return NCSIM_USAGE;
    }
    isa_geometry_t g;
    mdl_arch_geometry(a, &g);
    isa_diag_t diag;
    isa_diag_init(&diag, 5);
    /* the program may have been assembled for other sizes: check again against this arch
     * (a sweep runs the same program on many configs; most keep the memory sizes) */
    if (!isa_geometry_equal(&prog->checked, &g) &&
        isa_check_program(prog, &g, a->name, &diag) != NCSIM_OK) {
        snprintf(err, errlen, "the program does not fit architecture '%s':\n%s", a->name,
                 diag.text ? diag.text : "");
        isa_diag_free(&diag);
        return NCSIM_USAGE;
    }
    isa_diag_free(&diag);
    /* system.semaphores: the semaphores a core has (docs/architecture.md) */
    for (uint32_t i = 0; i < prog->nsems; i++) {
        const isa_sem_t *m = &prog->sems[i];
        if (m->index >= a->semaphores) {
            uint32_t used = 0;
            for (uint32_t k = 0; k < prog->nsems; k++)
                if ((m->core == -1 || prog->sems[k].core == -1 || prog->sems[k].core == m->core) &&
                    prog->sems[k].index + 1u > used)
                    used = prog->sems[k].index + 1u;
            char who[32];
            if (m->core < 0)
                snprintf(who, sizeof who, "every core");
            else
                snprintf(who, sizeof who, "core %d", (int)m->core);
            snprintf(err, errlen, "the program uses %u semaphores on %s (semaphore '%s' is "
                     "number %u), but architecture '%s' has system.semaphores = %u per core",
                     used, who, m->name == ISA_NO_NAME ? "?" : isa_string(prog, m->name),
                     (unsigned)m->index, a->name, a->semaphores);
            return NCSIM_USAGE;
        }
    }
    /* what an allocation failure was for, for the message (docs/cli.md, "Host memory") */
    const char *what = "the simulator's state";
    double how = 0;
    struct sim *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of host memory allocating the simulator's state");
        return NCSIM_NOMEM;
    }
    s->run_limit_ps = UINT64_MAX;
    s->memo_max_slots = UINT32_MAX;
    s->sem_wake_ps = ns_to_ps(a->costs.semaphore_latency_ns);
    s->prog = prog;
    s->opt = *opt;
    s->arch = a;
    s->nchips = prog->chips;
    s->ncores = prog->ncores;
    s->cores = calloc(s->ncores, sizeof *s->cores);
    s->chips = calloc(s->nchips, sizeof *s->chips);
    s->stats.cores = calloc(s->ncores, sizeof *s->stats.cores);
    uint32_t max_line = 0;
    if (prog->line_end)
        max_line = prog->line_end - 1;
    else
        for (uint32_t i = 0; i < prog->ninstrs; i++)
            if (prog->instrs[i].line > max_line)
                max_line = prog->instrs[i].line;
    if (sim_lines_init(&s->stats, prog, max_line))
        goto oom;
    s->stats.ncores = s->ncores;
    s->stats.peak_flops_per_core = (double)a->pe.rows * a->pe.cols * 2.0 * a->pe.clock_ghz * 1e9;
    if (!s->cores || !s->chips || !s->stats.cores || sim_queue_init(&s->q))
        goto oom;
    /* the machine's links, whether or not the program uses every chip */
    if (mdl_linkmap_build(a, a->chips, &s->topo, err, errlen)) {
        sim_destroy(s);
        return NCSIM_USAGE;
    }
    if (flow_net_init(&s->net, s, s->ncores + s->nchips + s->topo.nlinks +
                                      2 * s->topo.instances + s->ncores))
        goto oom;
    s->stats.ninstances = s->topo.instances;
    /* Gbit/s -> bytes per ps */
    for (uint32_t k = 0; k < s->topo.instances; k++)
        for (uint32_t d = 0; d < 2; d++)
            s->net.res[res_efa(s, k, d)].cap = a->efa.bandwidth_gbits / 8.0 * 1e-3;
    for (uint32_t i = 0; i < s->ncores; i++) {
        s->net.res[res_dma(s, i)].cap = a->dma.engines * a->dma.engine_bandwidth_gbps * 1e-3;
        s->net.res[res_desc(s, i)].cap = a->dma.engines; /* engine-ps of descriptors per ps */
    }
    for (uint32_t i = 0; i < s->nchips; i++) {
        s->net.res[res_hbm(s, i)].cap = a->hbm.bandwidth_gbps * 1e-3;
        s->net.res[res_hbm(s, i)].track = 1;
    }
    for (uint32_t i = 0; i < s->topo.nlinks; i++) {
        s->net.res[res_link(s, i)].cap = s->topo.links[i].gbps * 1e-3;
        s->net.res[res_link(s, i)].count = 1; /* the statistics' link bytes */
    }
    if (cc_init(s))
        goto oom;
    for (uint32_t ch = 0; ch < s->nchips && !opt->timing_only; ch++) {
        what = "the HBM page table";
        how = (double)(a->hbm.size_bytes >> MDL_HBM_PAGE_BITS) * sizeof(void *);
        if (mdl_hbm_init(&s->chips[ch].hbm, a->hbm.size_bytes))
            goto oom;
        s->chips[ch].hbm_ready = 1;
    }
    for (uint32_t i = 0; i < s->ncores; i++) {
        core_t *c = &s->cores[i];
        c->sim = s;
        c->id = i;
        c->chip = i / ISA_CORES_PER_CHIP;
        c->st = &s->stats.cores[i];
        c->sbuf_port_owner = c->psum_port_owner = ISA_ENGINE_COUNT;
        for (uint32_t k = 0; k < prog->nsems; k++)
            if (prog->sems[k].core == -1 || (uint32_t)prog->sems[k].core == i)
                c->sems[prog->sems[k].index] = prog->sems[k].init;
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            engine_t *E = &c->engines[e];
            E->core = c;
            E->id = (uint8_t)e;
            const isa_stream_t *st = isa_stream(prog, i, (isa_engine_t)e);
            E->instrs = &prog->instrs[st->first];
            E->n = st->count;
            E->seg_start = UINT64_MAX;
            E->st = &c->st->engines[e];
            sim_event_init(&E->ev, engine_try, E, PRIO_ENGINE + (uint32_t)e);
            sim_event_init(&E->post_ev, engine_posts, E, PRIO_POST + (uint32_t)e);
            if (E->n && sim_schedule(&s->q, &E->ev, 0))
                goto oom;
        }
        if (!opt->timing_only) {
            what = "SBUF and PSUM";
            how = (double)a->sbuf.partitions * (double)a->sbuf.bytes_per_partition +
                  (double)a->psum.partitions * (double)a->psum.bytes_per_partition;
            if (mdl_onchip_init(&c->sbuf, a->sbuf.partitions, a->sbuf.bytes_per_partition) ||
                mdl_onchip_init(&c->psum, a->psum.partitions, a->psum.bytes_per_partition))
                goto oom;
            mdl_mem_t mem = {&c->sbuf, &c->psum, &s->chips[c->chip].hbm};
            if (mdl_core_state_init(&c->fs, prog, i, mem,
                                    opt->stochastic_rounding ? MDL_ROUND_STOCHASTIC
                                                             : MDL_ROUND_NEAREST_EVEN,
                                    opt->seed))
                goto oom;
            c->fs_ready = 1;
        }
    }
    *out = s;
    return NCSIM_OK;
oom:
    sim_destroy(s);
    if (how > 0)
        snprintf(err, errlen, "out of host memory allocating %s (%.1f MiB)", what,
                 how / 1048576.0);
    else
        snprintf(err, errlen, "out of host memory allocating %s", what);
    return NCSIM_NOMEM;
}

void sim_destroy(sim_t *s)
{
    if (!s)
        return;
    if (s->cores)
        for (uint32_t i = 0; i < s->ncores; i++) {
            core_t *c = &s->cores[i];
            for (int e = 0; e < ISA_ENGINE_COUNT; e++)
                free(c->engines[e].fl);
            free(c->busy_seg);
            if (c->fs_ready)
                mdl_core_state_free(&c->fs);
            mdl_onchip_free(&c->sbuf);
            mdl_onchip_free(&c->psum);
        }
    if (s->chips)
        for (uint32_t i = 0; i < s->nchips; i++) {
            if (s->chips[i].hbm_ready)
                mdl_hbm_free(&s->chips[i].hbm);
        }
    for (uint32_t i = 0; i < s->nxfer_blocks; i++)
        free(s->xfer_blocks[i]);
    cc_free(s);
    flow_net_free(&s->net);
    mdl_linkmap_free(&s->topo);
    free(s->xfer_blocks);
    free(s->cores);
    free(s->chips);
    free(s->stats.cores);
    free(s->stats.lines);
    free(s->stats.line_ids);
    free(s->stats.links);
    free(s->stats.hbm_series);
    free(s->error);
    free(s->memo);
    free(s->memo_slot);
    sim_queue_free(&s->q);
    free(s);
}

/* ---- tensor I/O --------------------------------------------------------------------------------- */

/* Express n elements as up to `max` row-major dims of counts <= ISA_MAX_COUNT with unit
 * innermost stride; returns the number of dims, 0 when n does not factor that way. */
static unsigned flat_dims(uint64_t n, unsigned max, uint32_t *count, int64_t *stride)
{
    uint64_t rest = n;
    uint32_t counts[ISA_MAX_DIMS];
    unsigned nd = 0;
    while (rest > 1 || nd == 0) {
        if (nd == max)
            return 0;
        /* the largest count <= ISA_MAX_COUNT dividing rest: rest over its smallest cofactor
         * at or above rest / ISA_MAX_COUNT */
        uint64_t d = rest <= ISA_MAX_COUNT ? 1 : (rest + ISA_MAX_COUNT - 1) / ISA_MAX_COUNT;
        while (rest % d)
            d++;
        uint32_t cnt = (uint32_t)(rest / d);
        if (cnt == 1 && rest > 1)
            return 0; /* a prime above ISA_MAX_COUNT */
        counts[nd++] = cnt;
        rest /= cnt;
        if (cnt == 1)
            break;
    }
    /* counts are innermost first */
    int64_t st = 1;
    for (unsigned i = 0; i < nd; i++) {
        count[nd - 1 - i] = counts[i];
        stride[nd - 1 - i] = st;
        st *= counts[i];
    }
    return nd;
}

/* The view covering a whole tensor, row-major (partition first for SBUF/PSUM), on `core` for
 * an on-chip tensor (one declared for every core takes the core given, its own otherwise). */
static ncsim_status_t tensor_view(sim_t *s, uint32_t tensor, uint32_t core, isa_view_t *v,
                                  mdl_mem_t *mem)
{
    if (s->opt.timing_only || tensor >= s->prog->ntensors)
        return NCSIM_USAGE;
    const isa_tensor_t *T = &s->prog->tensors[tensor];
    memset(v, 0, sizeof *v);
    memset(mem, 0, sizeof *mem);
    v->dtype = T->dtype;
    v->space = T->space;
    if (T->space == ISA_SPACE_HBM) {
        v->pcount = 1;
        v->offset = T->offset;
        v->ndims = (uint8_t)flat_dims(sim_tensor_elems(s->prog, tensor), ISA_MAX_HBM_DIMS,
                                      v->count, v->stride);
        if (!v->ndims || T->chip < 0 || (uint32_t)T->chip >= s->nchips)
            return NCSIM_USAGE;
        mem->hbm = &s->chips[T->chip].hbm;
        return NCSIM_OK;
    }
    if (T->core >= 0)
        core = (uint32_t)T->core;
    if (core >= s->ncores || T->ndims < 1)
        return NCSIM_USAGE;
    uint64_t free_elems = 1;
    for (unsigned d = 1; d < T->ndims; d++)
        free_elems *= T->dims[d];
    v->pstart = (uint8_t)T->pstart;
    v->pcount = (uint16_t)T->dims[0];
    v->offset = T->offset;
    v->ndims = (uint8_t)flat_dims(free_elems, ISA_MAX_FREE_DIMS, v->count, v->stride);
    if (!v->ndims)
        return NCSIM_USAGE;
    core_t *c = &s->cores[core];
    mem->sbuf = &c->sbuf;
    mem->psum = &c->psum;
    mem->hbm = &s->chips[c->chip].hbm;
    return NCSIM_OK;
}

int sim_find_tensor(const isa_program_t *p, const char *name, size_t len, uint32_t core)
{
    for (uint32_t i = 0; i < p->ntensors; i++) {
        const isa_tensor_t *T = &p->tensors[i];
        const char *n = isa_string(p, T->name);
        if (strlen(n) != len || memcmp(n, name, len) != 0)
            continue;
        if (T->space == ISA_SPACE_HBM || T->core == -1 || (uint32_t)T->core == core)
            return (int)i;
    }
    return -1;
}

ncsim_status_t sim_tensor_read_any(sim_t *s, uint32_t tensor, uint32_t core, int raw,
                                   void *values)
{
    if (s->opt.timing_only || tensor >= s->prog->ntensors)
        return NCSIM_USAGE;
    const isa_tensor_t *T = &s->prog->tensors[tensor];
    if (T->space == ISA_SPACE_HBM)
        return raw ? sim_tensor_read_raw(s, tensor, values)
                   : sim_tensor_read_f32(s, tensor, values);
    if (core >= s->ncores || (T->core != -1 && (uint32_t)T->core != core) || !T->ndims ||
        T->ndims > ISA_MAX_DIMS + 1)
        return NCSIM_USAGE;
    core_t *c = &s->cores[core];
    if (!c->fs_ready)
        return NCSIM_USAGE;
    /* the whole tensor as a view: its partitions, then its free dims row-major */
    isa_view_t v;
    memset(&v, 0, sizeof v);
    v.space = T->space;
    v.dtype = T->dtype;
    v.pstart = (uint8_t)T->pstart;
    v.pcount = (uint16_t)T->dims[0];
    v.offset = T->offset;
    v.ndims = (uint8_t)(T->ndims > 1 ? T->ndims - 1 : 1);
    int64_t stride = 1;
    if (T->ndims == 1) {
        v.count[0] = 1;
        v.stride[0] = 1;
    }
    for (int d = (int)T->ndims - 1; d >= 1; d--) {
        if (T->dims[d] > UINT32_MAX)
            return NCSIM_USAGE;
        v.count[d - 1] = (uint32_t)T->dims[d];
        v.stride[d - 1] = stride;
        stride *= (int64_t)T->dims[d];
    }
    mdl_mem_t mem = {&c->sbuf, &c->psum, &s->chips[c->chip].hbm};
    char err[256];
    if (mdl_view_check(&mem, &v, err, sizeof err))
        return NCSIM_USAGE;
    if (raw)
        mdl_view_read_bytes_range(&mem, &v, 0, isa_view_elems(&v), values);
    else
        mdl_view_read_f32(&mem, &v, values);
    return NCSIM_OK;
}

int sim_find_hbm_tensor(const isa_program_t *p, const char *name, size_t len)
{
    for (uint32_t i = 0; i < p->ntensors; i++) {
        const char *n = isa_string(p, p->tensors[i].name);
        if (p->tensors[i].space == ISA_SPACE_HBM && strlen(n) == len && memcmp(n, name, len) == 0)
            return (int)i;
    }
    return -1;
}

ncsim_status_t sim_tensor_write_npy(sim_t *s, uint32_t tensor, const mdl_npy_t *a,
                                    const char *path, char *err, size_t errlen)
{
    const isa_program_t *p = s->prog;
    if (tensor >= p->ntensors)
        return NCSIM_USAGE;
    const isa_tensor_t *T = &p->tensors[tensor];
    /* float16/64 for a float tensor, other integer widths for an integer one: converted
     * (mdl_npy_convert) on a copy */
    mdl_npy_t conv;
    mdl_npy_type_t want = mdl_npy_type_for_dtype((isa_dtype_t)T->dtype);
    if (a->type != want && mdl_npy_convertible(a->type, want)) {
        conv = *a;
        conv.data = malloc(a->nbytes ? a->nbytes : 1);
        if (!conv.data) {
            snprintf(err, errlen, "%s: out of host memory: %zu bytes to convert tensor '%s'",
                     path, a->nbytes, isa_string(p, T->name));
            return NCSIM_NOMEM;
        }
        memcpy(conv.data, a->data, a->nbytes);
        ncsim_status_t cst = mdl_npy_convert(&conv, want, path, isa_string(p, T->name), err,
                                             errlen);
        if (cst == NCSIM_OK)
            cst = sim_tensor_write_npy(s, tensor, &conv, path, err, errlen);
        free(conv.data);
        return cst == NCSIM_FORMAT ? NCSIM_IO : cst;
    }
    if (mdl_npy_expect(a, path, isa_string(p, T->name), (isa_dtype_t)T->dtype, T->dims,
                       T->ndims, err, errlen) != NCSIM_OK)
        return NCSIM_IO;
    ncsim_status_t st = mdl_npy_dtype_is_native((isa_dtype_t)T->dtype)
                            ? sim_tensor_write_raw(s, tensor, a->data)
                            : sim_tensor_write_f32(s, tensor, (const float *)a->data);
    if (st != NCSIM_OK)
        snprintf(err, errlen, "cannot store tensor '%s': %s", isa_string(p, T->name),
                 ncsim_status_text(st));
    return st;
}

ncsim_status_t sim_tensor_fill_random(sim_t *s, uint32_t tensor, uint64_t seed)
{
    uint64_t n = sim_tensor_elems(s->prog, tensor);
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NCSIM_NOMEM;
    mdl_rng_t r;
    mdl_rng_seed(&r, seed, 0x1000 + tensor);
    for (uint64_t i = 0; i < n; i++)
        v[i] = mdl_rng_float(&r) * 2.0f - 1.0f;
    ncsim_status_t st = sim_tensor_write_f32(s, tensor, v);
    free(v);
    return st;
}

ncsim_status_t sim_tensor_write(sim_t *s, uint32_t tensor, uint32_t core, int raw,
                                const void *data)
{
    isa_view_t v;
    mdl_mem_t mem;
    ncsim_status_t st = tensor_view(s, tensor, core, &v, &mem);
    if (st != NCSIM_OK)
        return st;
    int bad = raw ? mdl_view_write_bytes_range(&mem, &v, 0, isa_view_elems(&v), data)
                  : mdl_view_write_f32(&mem, &v, data, MDL_ROUND_NEAREST_EVEN, NULL);
    return bad ? NCSIM_NOMEM : NCSIM_OK;
}

ncsim_status_t sim_tensor_read(sim_t *s, uint32_t tensor, uint32_t core, int raw, void *data)
{
    isa_view_t v;
    mdl_mem_t mem;
    ncsim_status_t st = tensor_view(s, tensor, core, &v, &mem);
    if (st != NCSIM_OK)
        return st;
    if (raw)
        mdl_view_read_bytes_range(&mem, &v, 0, isa_view_elems(&v), data);
    else
        mdl_view_read_f32(&mem, &v, data);
    return NCSIM_OK;
}

ncsim_status_t sim_tensor_write_f32(sim_t *s, uint32_t tensor, const float *values)
{
    return sim_tensor_write(s, tensor, 0, 0, values);
}

ncsim_status_t sim_tensor_read_f32(sim_t *s, uint32_t tensor, float *values)
{
    return sim_tensor_read(s, tensor, 0, 0, values);
}

ncsim_status_t sim_tensor_write_raw(sim_t *s, uint32_t tensor, const void *data)
{
    return sim_tensor_write(s, tensor, 0, 1, data);
}

ncsim_status_t sim_tensor_read_raw(sim_t *s, uint32_t tensor, void *data)
{
    return sim_tensor_read(s, tensor, 0, 1, data);
}

const sim_fault_t *sim_fault(const sim_t *s)
{
    return &s->fault;
}

/* ---- the run loop -------------------------------------------------------------------------------- */

static void sem_name(const struct sim *s, uint32_t core, uint8_t index, char *buf, size_t n)
{
    for (uint32_t k = 0; k < s->prog->nsems; k++) {
        const isa_sem_t *m = &s->prog->sems[k];
        if (m->index == index && (m->core == -1 || (uint32_t)m->core == core)) {
            const char *name = isa_string(s->prog, m->name);
            if (*name) {
                snprintf(buf, n, "%s", name);
                return;
            }
        }
    }
    snprintf(buf, n, "semaphore %u", index);
}

/* Nothing is queued but streams remain: report every blocked instruction. */
static void report_deadlock(struct sim *s)
{
    char line[2048];
    snprintf(line, sizeof line, "deadlock at %.3f ns: no engine can make progress\n",
             (double)s->q.now / 1000.0);
    s->failed = 1;
    s->fault.kind = SIM_FAULT_DEADLOCK;
    sim_error_append(s, line);
    cc_report_pending(s);
    for (uint32_t i = 0; i < s->ncores; i++) {
        core_t *c = &s->cores[i];
        int any = 0;
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            engine_t *E = &c->engines[e];
            if (E->pc == E->n || E->parked)
                continue; /* parked engines are reported with their collective */
            any = 1;
            const isa_instr_t *in = &E->instrs[E->pc];
            char where[768];
            sim_instr_where(s, c, e, E->pc, in, where, sizeof where);
            size_t at = (size_t)snprintf(line, sizeof line, "  %s waits for", where);
            for (unsigned w = 0; w < in->nwait && at < sizeof line; w++) {
                char name[64];
                sem_name(s, c->id, in->wait[w].sem, name, sizeof name);
                at += (size_t)snprintf(line + at, sizeof line - at, "%s %s %s %d (now %d)",
                                       w ? "," : "", name,
                                       in->wait[w].op == ISA_WAIT_EQ ? "==" : ">=",
                                       in->wait[w].value, c->sems[in->wait[w].sem]);
            }
            if (at < sizeof line)
                snprintf(line + at, sizeof line - at, "\n");
            sim_error_append(s, line);
        }
        if (any) {
            size_t at = (size_t)snprintf(line, sizeof line, "  semaphores on core %u:", c->id);
            for (uint32_t k = 0; k < s->prog->nsems && at < sizeof line; k++) {
                const isa_sem_t *m = &s->prog->sems[k];
                if (m->core != -1 && (uint32_t)m->core != c->id)
                    continue;
                char name[64];
                sem_name(s, c->id, m->index, name, sizeof name);
                at += (size_t)snprintf(line + at, sizeof line - at, " %s=%d", name,
                                       c->sems[m->index]);
            }
            if (at < sizeof line)
                snprintf(line + at, sizeof line - at, "\n");
            sim_error_append(s, line);
        }
    }
}

/* Link and HBM-over-time figures from the bandwidth model. */
static void movement_stats(struct sim *s)
{
    sim_stats_t *st = &s->stats;
    st->nchips = s->nchips;
    if (!st->links && s->topo.nlinks)
        st->links = calloc(s->topo.nlinks, sizeof *st->links);
    if (st->links) {
        st->nlinks = s->topo.nlinks;
        for (uint32_t i = 0; i < s->topo.nlinks; i++) {
            const flow_res_t *r = &s->net.res[res_link(s, i)];
            st->links[i].from = s->topo.links[i].from;
            st->links[i].to = s->topo.links[i].to;
            st->links[i].gbps = s->topo.links[i].gbps;
            st->links[i].bytes = (uint64_t)llround(r->bytes);
            st->links[i].busy_ps = r->busy_ps;
        }
    }
    /* one common bucket width: the widest any chip reached */
    uint64_t bucket = 0;
    uint32_t len = 0;
    for (uint32_t c = 0; c < s->nchips; c++) {
        const flow_res_t *r = &s->net.res[res_hbm(s, c)];
        if (r->series && r->bucket_ps > bucket)
            bucket = r->bucket_ps;
    }
    if (!bucket)
        return;
    for (uint32_t c = 0; c < s->nchips; c++) {
        const flow_res_t *r = &s->net.res[res_hbm(s, c)];
        if (r->series) {
            uint32_t n = (uint32_t)(((uint64_t)r->nbuckets * r->bucket_ps + bucket - 1) / bucket);
            if (n > len)
                len = n;
        }
    }
    free(st->hbm_series);
    st->hbm_series = calloc((size_t)s->nchips * len + 1, sizeof *st->hbm_series);
    if (!st->hbm_series)
        return;
    st->hbm_series_len = len;
    st->hbm_series_bucket_ps = bucket;
    for (uint32_t c = 0; c < s->nchips; c++) {
        const flow_res_t *r = &s->net.res[res_hbm(s, c)];
        if (!r->series)
            continue;
        uint64_t ratio = bucket / r->bucket_ps;
        for (uint32_t b = 0; b < r->nbuckets; b++)
            st->hbm_series[(size_t)c * len + b / ratio] += r->series[b];
    }
}

static void finish_stats(struct sim *s)
{
    flow_net_flush(s, &s->net);
    movement_stats(s);
    uint64_t total = 0;
    uint32_t used = 0;
    for (uint32_t i = 0; i < s->ncores; i++) {
        core_t *c = &s->cores[i];
        dma_core_flush_busy(s, c);
        sim_core_stats_t *cs = c->st;
        cs->dma_desc_busy_ps = s->net.res[res_desc(s, i)].busy_ps; /* flushed above */
        for (int e = 0; e < ISA_ENGINE_COUNT; e++)
            if (cs->engines[e].end_ps > cs->end_ps)
                cs->end_ps = cs->engines[e].end_ps;
        if (cs->end_ps > total)
            total = cs->end_ps;
        used += cs->used;
    }
    if (s->q.now > total && s->failed)
        total = s->q.now;
    s->stats.total_ps = total;
    s->stats.events = s->q.processed;
    double seconds = (double)total * 1e-12;
    s->stats.mfu = used && seconds > 0
                       ? (double)s->stats.tensor_flops /
                             (s->stats.peak_flops_per_core * used * seconds)
                       : 0.0;
    s->stats.hfu = used && seconds > 0
                       ? (double)s->stats.tensor_hw_flops /
                             (s->stats.peak_flops_per_core * used * seconds)
                       : 0.0;
}

static int all_done(const struct sim *s)
{
    if (s->pending_xfers || cc_pending(s))
        return 0;
    for (uint32_t i = 0; i < s->ncores; i++)
        for (int e = 0; e < ISA_ENGINE_COUNT; e++)
            if (s->cores[i].engines[e].pc != s->cores[i].engines[e].n)
                return 0;
    return 1;
}

ncsim_status_t sim_run(sim_t *s, sim_run_mode_t mode, uint64_t limit_ps)
{
    if (s->failed)
        return s->fail_status ? s->fail_status : NCSIM_PROGRAM;
    if (s->finished)
        return NCSIM_OK;
    s->run_limit_ps = mode == SIM_RUN_UNTIL_TIME ? limit_ps : UINT64_MAX;
    s->fold = mode != SIM_RUN_ONE_EVENT;
    for (;;) {
        if (mode == SIM_RUN_UNTIL_TIME && sim_queue_next_time(&s->q) > limit_ps)
            break;
        if (!sim_queue_step(&s->q)) {
            if (!all_done(s))
                report_deadlock(s);
            else
                s->finished = 1;
            finish_stats(s);
            break;
        }
        if (s->failed) {
            finish_stats(s);
            break;
        }
        if (mode == SIM_RUN_ONE_EVENT)
            break;
    }
    if (!s->finished && !s->failed && sim_queue_empty(&s->q)) {
        if (!all_done(s))
            report_deadlock(s);
        else
            s->finished = 1;
        finish_stats(s);
    }
    return s->failed ? (s->fail_status ? s->fail_status : NCSIM_PROGRAM) : NCSIM_OK;
}

void sim_limit_memo(sim_t *s, uint32_t slots)
{
    if (!s->memo_slot && slots)
        s->memo_max_slots = slots;
}

void sim_set_observer(sim_t *s, const sim_observer_t *observer)
{
    s->opt.observer = observer;
}

void sim_set_trace_sink(sim_t *s, const sim_trace_sink_t *trace)
{
    s->opt.trace = trace;
}

int sim_finished(const sim_t *s)
{
    return s->finished;
}

uint64_t sim_now_ps(const sim_t *s)
{
    return s->q.now;
}

const char *sim_error(const sim_t *s)
{
    return s->error ? s->error : "";
}

const sim_stats_t *sim_stats(sim_t *s)
{
    if (!s->finished && !s->failed)
        finish_stats(s);
    return &s->stats;
}
