/*
 * report_verdict.c -- the verdict: what bounds the run and what would move it. Its candidates
 * come from the critical path (report_path.c hands over its steps: each step's time and the
 * gap before it go to the engine, transfer limit, DMA fixed cost or semaphore chain that
 * explains them) or, for a statistics file, from each resource's busy time. Each candidate
 * carries one of the advice texts of TRC_ADVICE_MAP (report.h), kept whole.
 */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const advice_texts[] = {
#define XX(id, text) text,
    TRC_ADVICE_MAP(XX)
#undef XX
};

const char *trc_advice_text(trc_advice_t a)
{
    return a < TRC_ADVICE_COUNT ? advice_texts[a] : "";
}

/* The advice for time on an engine. */
static trc_advice_t engine_advice(const char *engine)
{
    if (strcmp(engine, "pe") == 0)
        return TRC_ADVICE_ENGINE_PE;
    if (strcmp(engine, "sp") == 0)
        return TRC_ADVICE_ENGINE_SP;
    if (strcmp(engine, "cc") == 0)
        return TRC_ADVICE_ENGINE_CC;
    return TRC_ADVICE_ENGINE_OTHER;
}

int trc_report_bound_add(trc_report_t *rep, const char *what, uint64_t ps, trc_advice_t advice)
{
    if (!ps)
        return 0;
    for (size_t i = 0; i < rep->nbounds; i++)
        if (strcmp(rep->bounds[i].what, what) == 0) {
            rep->bounds[i].ps += ps;
            return 0;
        }
    trc_report_bound_t *b = rpt_append((void **)&rep->bounds, &rep->nbounds, sizeof *rep->bounds);
    if (!b)
        return -1;
    snprintf(b->what, sizeof b->what, "%s", what);
    b->advice = advice;
    b->ps = ps;
    return 0;
}

size_t trc_report_verdict(const trc_report_t *rep, char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    if (!rep->nbounds || !rep->bounds_of_ps)
        return 0;
    const trc_report_bound_t *b = &rep->bounds[0];
    double of = (double)rep->bounds_of_ps;
    const char *whole =
        rep->bounds_from_path ? "critical path" : "run (busy time, from statistics)";
    int len;
    if (rep->nbounds > 1)
        len = snprintf(buf, n, "bound by %s: %.1f %% of the %s; next: %s %.1f %%; to move it: %s",
                       b->what, 100.0 * (double)b->ps / of, whole, rep->bounds[1].what,
                       100.0 * (double)rep->bounds[1].ps / of, trc_advice_text(b->advice));
    else
        len = snprintf(buf, n, "bound by %s: %.1f %% of the %s; to move it: %s", b->what,
                       100.0 * (double)b->ps / of, whole, trc_advice_text(b->advice));
    return len < 0 ? 0 : (size_t)len;
}

/*
 * Without a critical path (a statistics file): each resource's busy time, the busiest core
 * for engines and DMA; HBM as the time its bytes take at peak. A coarser verdict: busy is
 * not necessarily on the path.
 */
void rpt_bounds_from_totals(trc_report_t *rep)
{
    rep->bounds_of_ps = rep->total_ps;
    char what[64];
    for (size_t i = 0; i < rep->nengines; i++) {
        const trc_report_engine_t *e = &rep->engines[i];
        snprintf(what, sizeof what, "engine %s", e->name);
        uint64_t best = 0;
        for (size_t j = 0; j < rep->nengines; j++)
            if (strcmp(rep->engines[j].name, e->name) == 0 && rep->engines[j].busy_ps > best)
                best = rep->engines[j].busy_ps;
        int seen = 0;
        for (size_t j = 0; j < rep->nbounds; j++)
            seen |= strcmp(rep->bounds[j].what, what) == 0;
        if (!seen)
            trc_report_bound_add(rep, what, best, engine_advice(e->name));
    }
    uint64_t dma = 0, desc = 0;
    for (size_t i = 0; i < rep->ndma; i++) {
        if (rep->dma[i].busy_ps > dma)
            dma = rep->dma[i].busy_ps;
        if (rep->dma[i].descriptor_busy_ps > desc)
            desc = rep->dma[i].descriptor_busy_ps;
    }
    /* the descriptor stages are a resource of their own (one descriptor per contiguous
     * piece, every queue's), busy apart from the data phases they run ahead of: a stream of
     * small pieces is bound by them while its data moves a fraction of the time */
    trc_report_bound_add(rep, "DMA descriptors", desc, TRC_ADVICE_DMA_DESC);
    uint64_t hbm = rep->hbm_peak_gbps > 0
                       ? (uint64_t)((double)(rep->hbm_read + rep->hbm_write) /
                                    (rep->hbm_peak_gbps * 1e-3))
                       : 0;
    /* transfers moving while HBM runs at its peak are HBM's: when HBM's time at peak covers
     * nearly all the DMA busy time, the DMA was waiting for HBM */
    if (hbm && (double)hbm >= 0.95 * (double)dma) {
        trc_report_bound_add(rep, "HBM", hbm > dma ? hbm : dma, TRC_ADVICE_HBM);
    } else {
        trc_report_bound_add(rep, "DMA transfers", dma, TRC_ADVICE_DMA_BUSY);
        trc_report_bound_add(rep, "HBM", hbm, TRC_ADVICE_HBM);
    }
    uint64_t link = 0;
    for (size_t i = 0; i < rep->nlinks; i++)
        if (rep->links[i].busy_ps > link)
            link = rep->links[i].busy_ps;
    trc_report_bound_add(rep, "a NeuronLink", link, TRC_ADVICE_LINK);
}
/* Below this efficiency the piece size, not the engines' bandwidth, is what to fix. */
#define GOOD_EFFICIENCY 0.8

/* A DMA step's category, from what set its rate and its piece efficiency. */
static void dma_bound(const char *limit, double efficiency, const char **what,
                      trc_advice_t *advice)
{
    if (strcmp(limit, "HBM") == 0) {
        *what = "HBM";
        *advice = TRC_ADVICE_HBM;
    } else if (strcmp(limit, "NeuronLink") == 0) {
        *what = "a NeuronLink";
        *advice = TRC_ADVICE_LINK;
    } else if (strcmp(limit, "own cap") == 0) {
        *what = "DMA queues (per-transfer cap)";
        *advice = TRC_ADVICE_DMA_OWN;
    } else if (efficiency > 0 && efficiency >= GOOD_EFFICIENCY) {
        *what = "DMA engines (bandwidth)";
        *advice = TRC_ADVICE_DMA_BW;
    } else {
        *what = "DMA engines (piece efficiency)";
        *advice = TRC_ADVICE_DMA_ENGINES;
    }
}

/* The part of [a, b) inside [c, d). */
static uint64_t overlap(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t lo = a > c ? a : c, hi = b < d ? b : d;
    return hi > lo ? hi - lo : 0;
}

/* An interval of a core's descriptor stages at work (desc_busy below). */
typedef struct desc_busy {
    int64_t core;
    uint64_t a, b;
} desc_busy_t;

static int desc_busy_cmp(const void *p, const void *q)
{
    const desc_busy_t *x = p, *y = q;
    if (x->core != y->core)
        return x->core < y->core ? -1 : 1;
    return x->a < y->a ? -1 : x->a > y->a;
}

/*
 * When each core's DMA descriptor stages were at work: the union of the descriptor intervals
 * of its transfers, sorted by (core, start), disjoint (*n of them; NULL with *n = 0 when the
 * trace has none, and *oom set when out of memory). "At work" is what the statistics'
 * descriptor_busy_ns counts: at least one descriptor being processed.
 */
static desc_busy_t *desc_busy(const model_t *m, size_t *n, int *oom)
{
    size_t k = 0;
    *n = 0;
    *oom = 0;
    for (size_t i = 0; i < m->nsl; i++)
        k += m->sl[i].kind != TRC_SLICE_INSTR && m->sl[i].desc_end > m->sl[i].desc_start;
    if (!k)
        return NULL;
    desc_busy_t *u = malloc(k * sizeof *u);
    if (!u) {
        *oom = 1;
        return NULL;
    }
    k = 0;
    for (size_t i = 0; i < m->nsl; i++) {
        const rs_t *x = &m->sl[i];
        if (x->kind != TRC_SLICE_INSTR && x->desc_end > x->desc_start)
            u[k++] = (desc_busy_t){rpt_core_of(&m->tracks[x->track]), x->desc_start, x->desc_end};
    }
    qsort(u, k, sizeof *u, desc_busy_cmp);
    size_t w = 0;
    for (size_t i = 1; i < k; i++) {
        if (u[i].core == u[w].core && u[i].a <= u[w].b) {
            if (u[i].b > u[w].b)
                u[w].b = u[i].b;
        } else {
            u[++w] = u[i];
        }
    }
    *n = w + 1;
    return u;
}

/* The time in [a, b) during which the descriptor stages of `core` were at work. */
static uint64_t desc_busy_in(const desc_busy_t *u, size_t n, int64_t core, uint64_t a, uint64_t b)
{
    /* the first interval of the core ending after a */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid].core < core || (u[mid].core == core && u[mid].b <= a))
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t t = 0;
    for (size_t i = lo; i < n && u[i].core == core && u[i].a < b; i++)
        t += overlap(a, b, u[i].a, u[i].b);
    return t;
}

/*
 * The verdict's candidates from the critical path: each step's time [start, release) and the
 * gap before it go to what explains them -- an engine's II, a transfer's rate limit, the DMA
 * descriptor stages (the part of a transfer's data phase, when it landed as its last
 * descriptors were processed, while its descriptors were being processed; and the part of
 * the gap before a transfer while its core's descriptor stages were at work, on its own
 * descriptors or on other transfers'), the DMA trigger latency (the rest of that gap: the
 * stages idle, the transfer's trigger and HBM latency running; a transfer held by its queue
 * is reached from the transfer ahead of it, whose time then explains the wait), or the
 * semaphore chain (completion latency a waiting engine sat through, and the wake-up gaps
 * after posts). A trace without descriptor intervals (written before they were recorded)
 * gives the whole gap to "DMA fixed cost and queueing", as it did then.
 */
int rpt_path_bounds(model_t *m, const pstep_t *steps, size_t n)
{
    trc_report_t *rep = m->rep;
    rep->bounds_from_path = 1;
    rep->bounds_of_ps = rep->path_end_ps;
    char what[64];
    size_t nbusy;
    int oom;
    desc_busy_t *stages = desc_busy(m, &nbusy, &oom);
    if (oom)
        return -1;
    const char *latency = nbusy ? "DMA trigger latency" : "DMA fixed cost and queueing";
    /* transfers limited by the DMA engines are one candidate; whether their pieces or the
     * engines' bandwidth is the matter follows from their time-weighted efficiency */
    uint64_t engines_ps = 0;
    double engines_eff = 0;
    int engines_eff_known = 1;
    for (size_t k = 0; k < n; k++) {
        const rs_t *x = &m->sl[steps[k].slice];
        const rtrack_t *t = &m->tracks[x->track];
        uint64_t rel = steps[k].release;
        uint64_t span = rel > x->ts ? rel - x->ts : 0;
        int next_via = k ? steps[k - 1].via : VIA_ENGINE;
        int err = 0;
        snprintf(what, sizeof what, "engine %s", t->name);
        if (x->kind == TRC_SLICE_INSTR) {
            uint64_t busy = span < x->dur ? span : x->dur;
            err |= trc_report_bound_add(rep, what, busy, engine_advice(t->name));
            if (next_via == VIA_SEMAPHORE)
                err |= trc_report_bound_add(rep, "a chain of semaphore waits", span - busy,
                                            TRC_ADVICE_SYNC);
            else
                err |= trc_report_bound_add(rep, what, span - busy, engine_advice(t->name));
        } else {
            const char *w;
            trc_advice_t h;
            /* landed when its last descriptors were processed: the descriptors, not the
             * data, set the end of its data phase (its data waited for them) */
            uint64_t desc = x->desc_end >= x->end ? overlap(x->ts, rel, x->desc_start, x->desc_end)
                                                  : 0;
            err |= trc_report_bound_add(rep, "DMA descriptors", desc, TRC_ADVICE_DMA_DESC);
            span -= desc;
            dma_bound(rpt_str_of(m, x->limit), x->efficiency, &w, &h);
            if (strncmp(w, "DMA engines", 11) == 0) {
                engines_ps += span;
                engines_eff += x->efficiency * (double)span;
                engines_eff_known &= x->efficiency > 0;
            } else {
                err |= trc_report_bound_add(rep, w, span, h);
            }
        }
        uint64_t prev = k + 1 < n ? steps[k + 1].release : 0;
        uint64_t gap = x->ts > prev ? x->ts - prev : 0;
        switch (steps[k].via) {
        case VIA_ISSUE:
        case VIA_QUEUE: {
            uint64_t desc = x->kind == TRC_SLICE_INSTR
                                ? 0
                                : desc_busy_in(stages, nbusy, rpt_core_of(t), prev, x->ts);
            err |= trc_report_bound_add(rep, "DMA descriptors", desc, TRC_ADVICE_DMA_DESC);
            err |= trc_report_bound_add(rep, latency, gap - desc, TRC_ADVICE_FIXED);
            break;
        }
        case VIA_SEMAPHORE:
            err |= trc_report_bound_add(rep, "a chain of semaphore waits", gap, TRC_ADVICE_SYNC);
            break;
        default:
            err |= trc_report_bound_add(rep, what, gap, engine_advice(t->name));
            break;
        }
        if (err) {
            free(stages);
            return -1;
        }
    }
    free(stages);
    if (engines_ps) {
        const char *w;
        trc_advice_t h;
        double eff = engines_eff_known ? engines_eff / (double)engines_ps : 0.0;
        dma_bound("DMA engines", eff, &w, &h);
        if (trc_report_bound_add(rep, w, engines_ps, h))
            return -1;
    }
    return 0;
}
