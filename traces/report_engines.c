/*
 * report_engines.c -- the figures of the report that add up what happened on each track of
 * the model (report_model.c): per engine, instructions, busy and stall time and the stall
 * causes (a semaphore wait by its semaphore); the instruction kinds, merged over cores, with
 * the cost breakdown that took most of each kind's busy time; per core, DMA transfers, bytes
 * and the time any transfer was moving, and the HBM traffic; per NeuronLink direction, chunks,
 * bytes and busy time; per collective, its span, latency and bottleneck resource.
 */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One slice into its track's instruction kinds. */
static int kind_add(rtrack_t *t, const rs_t *x)
{
    kind_acc_t *ka = NULL;
    for (size_t k = 0; k < t->nkinds; k++)
        if (t->kinds[k].name == x->name)
            ka = &t->kinds[k];
    if (!ka) {
        ka = rpt_push((void **)&t->kinds, &t->nkinds, &t->cap_kinds, sizeof *ka);
        if (!ka)
            return -1;
        ka->name = x->name;
    }
    ka->count++;
    ka->busy += x->dur;
    ka->latency += x->end - x->ts;
    for (int c = 0; c < TRC_STALL_COUNT; c++)
        ka->wait += x->wait[c];
    ka->flops += x->flops;
    ka->bytes += x->bytes;
    if (x->cost) {
        int j = 0;
        while (j < KIND_COSTS && ka->cost[j] && ka->cost[j] != x->cost)
            j++;
        if (j == KIND_COSTS) { /* full: replace the least busy */
            j = 0;
            for (int q = 1; q < KIND_COSTS; q++)
                if (ka->cost_busy[q] < ka->cost_busy[j])
                    j = q;
            ka->cost_busy[j] = 0;
        }
        ka->cost[j] = x->cost;
        ka->cost_busy[j] += x->dur;
    }
    return 0;
}

/* One slice's waits into its track's stall causes (a semaphore wait by its semaphore). */
static int stall_add(rtrack_t *t, const rs_t *x)
{
    for (int c = 0; c < TRC_STALL_COUNT; c++) {
        if (!x->wait[c])
            continue;
        uint32_t sem = c == TRC_STALL_SEMAPHORE ? x->sem : 0;
        stall_acc_t *sa = NULL;
        for (size_t k = 0; k < t->nstalls; k++)
            if (t->stalls[k].cause == c && t->stalls[k].sem == sem)
                sa = &t->stalls[k];
        if (!sa) {
            sa = rpt_push((void **)&t->stalls, &t->nstalls, &t->cap_stalls, sizeof *sa);
            if (!sa)
                return -1;
            sa->cause = (uint8_t)c;
            sa->sem = sem;
        }
        sa->ps += x->wait[c];
        sa->n++;
    }
    return 0;
}

/* An engine track's figures, its stall causes and (on the track) its instruction kinds. */
static int engine_and_kinds(model_t *m, rtrack_t *t)
{
    trc_report_t *rep = m->rep;
    int64_t core = rpt_core_of(t);
    trc_report_engine_t *e = trc_report_add_engine(rep);
    if (!e)
        return -1;
    e->core = (uint32_t)(core < 0 ? 0 : core);
    snprintf(e->name, sizeof e->name, "%s", t->name);
    for (size_t i = 0; i < t->n; i++) {
        const rs_t *x = &m->sl[t->s[i]];
        e->instructions++;
        e->busy_ps += x->dur;
        rep->flops += x->flops;
        rep->hw_flops += x->hw_flops;
        for (int c = 0; c < TRC_STALL_COUNT; c++)
            e->stall_ps += x->wait[c];
        if (stall_add(t, x) || kind_add(t, x))
            return -1;
    }
    for (size_t k = 0; k < t->nstalls; k++) {
        trc_report_stall_t *s = trc_report_add_stall(rep);
        if (!s)
            return -1;
        s->core = e->core;
        snprintf(s->engine, sizeof s->engine, "%s", t->name);
        if (t->stalls[k].cause == TRC_STALL_SEMAPHORE)
            snprintf(s->cause, sizeof s->cause, "semaphore %s", rpt_str_of(m, t->stalls[k].sem));
        else
            snprintf(s->cause, sizeof s->cause, "%s", trc_stall_text(t->stalls[k].cause));
        s->ps = t->stalls[k].ps;
        s->instructions = t->stalls[k].n;
    }
    return 0;
}

/* Instruction kinds merged over cores: (engine, mnemonic) in first-seen order. */
static int merge_kinds(model_t *m, const rtrack_t *t, const char *engine)
{
    trc_report_t *rep = m->rep;
    for (size_t k = 0; k < t->nkinds; k++) {
        const kind_acc_t *ka = &t->kinds[k];
        trc_report_kind_t *o = NULL;
        for (size_t j = 0; j < rep->nkinds; j++)
            if (strcmp(rep->kinds[j].engine, engine) == 0 &&
                strcmp(rep->kinds[j].name, rpt_str_of(m, ka->name)) == 0)
                o = &rep->kinds[j];
        if (!o) {
            o = rpt_append((void **)&rep->kinds, &rep->nkinds, sizeof *rep->kinds);
            if (!o)
                return -1;
            snprintf(o->engine, sizeof o->engine, "%s", engine);
            snprintf(o->name, sizeof o->name, "%s", rpt_str_of(m, ka->name));
        }
        o->count += ka->count;
        o->busy_ps += ka->busy;
        o->latency_ps += ka->latency;
        o->wait_ps += ka->wait;
        o->flops += ka->flops;
        o->bytes += ka->bytes;
        for (int j = 0; j < KIND_COSTS; j++) {
            if (!ka->cost[j])
                continue;
            const char *text = rpt_str_of(m, ka->cost[j]);
            if (strcmp(o->cost, text) == 0)
                o->cost_busy_ps += ka->cost_busy[j];
            else if (ka->cost_busy[j] > o->cost_busy_ps) {
                snprintf(o->cost, sizeof o->cost, "%s", text);
                o->cost_busy_ps = ka->cost_busy[j];
            }
        }
    }
    return 0;
}

/* DMA per core (transfers, bytes, time with any transfer moving) and HBM traffic. */
static int dma_figures(model_t *m, rtrack_t **order, size_t norder)
{
    trc_report_t *rep = m->rep;
    size_t i = 0;
    while (i < norder) {
        int64_t core = rpt_core_of(order[i]);
        size_t j = i, total = 0;
        while (j < norder && rpt_core_of(order[j]) == core) {
            if (trc_track_kind_of_tid(order[j]->tid, NULL) == TRC_TRACK_DMA_QUEUE)
                total += order[j]->n;
            j++;
        }
        if (total && core >= 0) {
            interval_t *iv = malloc(total * sizeof *iv);
            trc_report_dma_t *d = iv ? trc_report_add_dma(rep) : NULL;
            if (!d) {
                free(iv);
                return -1;
            }
            d->core = (uint32_t)core;
            size_t n = 0;
            for (size_t k = i; k < j; k++) {
                if (trc_track_kind_of_tid(order[k]->tid, NULL) != TRC_TRACK_DMA_QUEUE)
                    continue;
                for (size_t q = 0; q < order[k]->n; q++) {
                    const rs_t *x = &m->sl[order[k]->s[q]];
                    d->transfers++;
                    d->bytes += x->bytes;
                    if (x->src == SP_HBM)
                        rep->hbm_read += x->src_bytes;
                    if (x->dst == SP_HBM) {
                        rep->hbm_write += x->bytes;
                        if (x->acc)
                            rep->hbm_read += x->bytes;
                    }
                    iv[n].start = x->ts;
                    iv[n++].end = x->ts + x->dur;
                }
            }
            d->busy_ps = trc_interval_union(iv, n);
            free(iv);
        }
        i = j;
    }
    return 0;
}

/* Each NeuronLink direction's figures; each collective's, from its steps. */
static int link_and_collective_figures(model_t *m)
{
    trc_report_t *rep = m->rep;
    for (size_t i = 0; i < m->nlinks; i++) {
        rlink_t *l = &m->links[i];
        trc_report_link_t *o = trc_report_add_link(rep);
        if (!o)
            return -1;
        o->from_chip = l->from;
        o->to_chip = l->to;
        o->gbps = l->gbps;
        o->transfers = l->transfers;
        o->bytes = l->bytes;
        o->busy_ps = trc_interval_union(l->iv, l->niv);
    }
    for (size_t i = 0; i < m->ncolls; i++) {
        const rcoll_t *c = &m->colls[i];
        trc_report_collective_t *o =
            rpt_append((void **)&rep->colls, &rep->ncolls, sizeof *rep->colls);
        if (!o)
            return -1;
        o->id = c->id;
        snprintf(o->op, sizeof o->op, "%s", rpt_str_of(m, c->op));
        snprintf(o->group, sizeof o->group, "%s", rpt_str_of(m, c->group));
        snprintf(o->algorithm, sizeof o->algorithm, "%s", rpt_str_of(m, c->algorithm));
        o->members = c->members;
        o->size = c->size;
        int first = 1;
        /* data time per bottleneck resource: small lists, linear search */
        uint32_t names[64];
        uint64_t times[64];
        unsigned nnames = 0;
        for (uint32_t k = 0; k < c->nsteps; k++) {
            const rstep_t *st = &c->steps[k];
            if (!st->seen)
                continue;
            o->steps++;
            if (first || st->start < o->start_ps)
                o->start_ps = st->start;
            if (first || st->end > o->end_ps)
                o->end_ps = st->end;
            first = 0;
            o->latency_ps += st->latency;
            uint64_t data = st->end - st->start - st->latency;
            o->data_ps += data;
            if (!st->bottleneck)
                continue;
            unsigned j = 0;
            while (j < nnames && names[j] != st->bottleneck)
                j++;
            if (j == nnames && nnames < 64) {
                names[nnames] = st->bottleneck;
                times[nnames++] = 0;
            }
            if (j < nnames)
                times[j] += data;
        }
        for (unsigned j = 0; j < nnames; j++)
            if (times[j] > o->bottleneck_ps || !o->bottleneck[0]) {
                o->bottleneck_ps = times[j];
                snprintf(o->bottleneck, sizeof o->bottleneck, "%s", rpt_str_of(m, names[j]));
            }
    }
    return 0;
}

int rpt_engine_figures(model_t *m, rtrack_t **order)
{
    trc_report_t *rep = m->rep;
    uint64_t cores_seen = 0;
    int64_t last_core = -1;
    for (size_t k = 0; k < m->ntracks; k++) {
        rtrack_t *t = order[k];
        if (trc_track_kind_of_tid(t->tid, NULL) != TRC_TRACK_ENGINE || !t->n)
            continue;
        if (rpt_core_of(t) != last_core) {
            last_core = rpt_core_of(t);
            cores_seen++;
        }
        if (engine_and_kinds(m, t))
            return -1;
    }
    rep->cores_used = cores_seen;
    rep->have_hw_flops = 1;
    for (size_t k = 0; k < m->ntracks; k++) {
        rtrack_t *t = order[k];
        if (trc_track_kind_of_tid(t->tid, NULL) == TRC_TRACK_ENGINE && merge_kinds(m, t, t->name))
            return -1;
    }
    for (size_t k = 0; k < m->ntracks; k++) {
        rtrack_t *t = order[k];
        if (trc_track_kind_of_tid(t->tid, NULL) != TRC_TRACK_DMA_QUEUE)
            continue;
        for (size_t i = 0; i < t->n; i++)
            if (kind_add(t, &m->sl[t->s[i]]))
                return -1;
        if (merge_kinds(m, t, "dma"))
            return -1;
    }
    if (dma_figures(m, order, m->ntracks))
        return -1;
    return link_and_collective_figures(m);
}
