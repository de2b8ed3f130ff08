/*
 * report_path.c -- the critical path of a trace, from the model (report_model.c): the chain
 * of instructions, transfers and waits that sets the end time, as runs of consecutive steps
 * on one track (rep->path) and the time on the path per track (rep->path_tracks). Its steps
 * go on to the verdict (rpt_path_bounds, report_verdict.c).
 *
 * Start from the slice that completes last; repeatedly step to whichever of its predecessors
 * released it last:
 *   - an instruction: the previous instruction on its engine (released at its start + II,
 *     or at its completion when the instruction waited on the interlock), or the post
 *     that released its semaphore wait (the poster's completion: flows mark it);
 *   - a DMA transfer: the transfer ahead of it on its queue when it started the moment that
 *     one ended, or when its descriptors started (after its issue) the moment that one's
 *     ended or that one's data started (the queue's descriptor stage held it); otherwise
 *     the instruction that issued it.
 * The chain ends at a slice with no predecessor. Time between a predecessor's release and
 * the next step's start is "waiting" (DMA fixed cost, port contention, wake-up).
 */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The predecessor that released slice `cur` last (-1: none), when (*when) and how (*via). */
static int64_t predecessor(const model_t *m, const uint32_t *pos, uint64_t cur, uint64_t *when,
                           int *via)
{
    const rs_t *x = &m->sl[cur];
    const rtrack_t *t = &m->tracks[x->track];
    uint32_t p = pos[cur];
    int64_t best = -1;
    uint64_t best_t = 0;
    *via = VIA_START;
    if (x->kind == TRC_SLICE_INSTR) {
        if (p > 0) {
            const rs_t *prev = &m->sl[t->s[p - 1]];
            uint64_t r = x->wait[TRC_STALL_INTERLOCK] ? prev->end : prev->ts + prev->dur;
            best = t->s[p - 1];
            best_t = r;
            *via = VIA_ENGINE;
        }
        if (x->sem_pred >= 0 && (best < 0 || m->sl[x->sem_pred].end >= best_t)) {
            best = x->sem_pred;
            best_t = m->sl[x->sem_pred].end;
            *via = VIA_SEMAPHORE;
        }
    } else {
        /* the transfer ahead of it in its queue held it when its data followed that one's at
         * once, or when its descriptors started, after its issue, the moment that one's
         * ended or that one's data started (the queue's descriptor stage takes the next
         * transfer then: docs/data-movement.md) */
        const rs_t *prev = p > 0 ? &m->sl[t->s[p - 1]] : NULL;
        uint64_t issued = x->dma_pred >= 0        ? m->sl[x->dma_pred].ts
                          : x->ts > x->queued ? x->ts - x->queued
                                              : 0;
        if (prev && prev->ts + prev->dur == x->ts) {
            best = t->s[p - 1];
            best_t = x->ts;
            *via = VIA_QUEUE;
        } else if (prev && x->desc_end && x->desc_start > issued &&
                   (x->desc_start == prev->desc_end || x->desc_start == prev->ts)) {
            best = t->s[p - 1];
            best_t = x->desc_start;
            *via = VIA_QUEUE;
        } else if (x->dma_pred >= 0) {
            best = x->dma_pred;
            best_t = m->sl[x->dma_pred].ts;
            *via = VIA_ISSUE;
        }
    }
    /* never later than the step it released */
    *when = best_t > x->ts ? x->ts : best_t;
    return best;
}

/* The chain back from the slice that completes last into steps (latest first); its length,
 * or 0 when out of memory. */
static size_t walk_back(model_t *m, pstep_t *steps)
{
    /* position of each slice in its track */
    uint32_t *pos = malloc(m->nsl * sizeof *pos);
    if (!pos)
        return 0;
    for (size_t k = 0; k < m->ntracks; k++)
        for (size_t i = 0; i < m->tracks[k].n; i++)
            pos[m->tracks[k].s[i]] = (uint32_t)i;
    size_t last = 0;
    for (size_t i = 1; i < m->nsl; i++)
        if (m->sl[i].end > m->sl[last].end)
            last = i;
    m->rep->have_path = 1;
    m->rep->path_end_ps = m->sl[last].end;
    size_t n = 0;
    uint64_t cur = last, release = m->sl[last].end;
    for (;;) {
        pstep_t *st = &steps[n++];
        st->slice = (uint32_t)cur;
        st->release = release;
        st->via = VIA_START;
        if (n == m->nsl)
            break;
        int via;
        uint64_t when;
        int64_t best = predecessor(m, pos, cur, &when, &via);
        if (best < 0)
            break;
        st->via = via;
        st->pred_sem = m->sl[cur].sem;
        cur = (uint64_t)best;
        release = when;
    }
    free(pos);
    return n;
}

/* How the run starting at steps[k] was reached from the previous one. */
static void run_via(const model_t *m, const pstep_t *steps, size_t k, size_t n,
                    trc_report_step_t *run)
{
    switch (steps[k].via) {
    case VIA_START: snprintf(run->via, sizeof run->via, k + 1 == n ? "start" : "?"); break;
    case VIA_SEMAPHORE:
        snprintf(run->via, sizeof run->via, "wait on semaphore %s",
                 rpt_str_of(m, steps[k].pred_sem));
        break;
    case VIA_ISSUE: snprintf(run->via, sizeof run->via, "issued by dma"); break;
    case VIA_QUEUE: snprintf(run->via, sizeof run->via, "queue order"); break;
    default: snprintf(run->via, sizeof run->via, "engine order"); break;
    }
    if (k + 1 == n)
        snprintf(run->via, sizeof run->via, "start of the run");
}

/* The distinct instruction names of a run, joined by '/' (as many as fit, leaving room for
 * the " xN" count). */
static void run_add_name(trc_report_step_t *run, const char *nm)
{
    size_t L = strlen(nm), W = strlen(run->what);
    int seen = L == 0; /* a nameless instruction (a crafted trace) adds nothing; and
                        * strstr of "" would walk past the terminator */
    for (const char *p = run->what; !seen && (p = strstr(p, nm)) != NULL; p++)
        if ((p == run->what || p[-1] == '/') && (p[L] == '/' || p[L] == '\0'))
            seen = 1;
    if (!seen && W + L + 2 < sizeof run->what - 12)
        snprintf(run->what + W, sizeof run->what - W, "/%s", nm);
}

/* A new run for steps[k], which was not reached in engine or queue order. */
static trc_report_step_t *run_open(model_t *m, const pstep_t *steps, size_t k, size_t n)
{
    const rs_t *x = &m->sl[steps[k].slice];
    const rtrack_t *t = &m->tracks[x->track];
    trc_report_t *rep = m->rep;
    trc_report_step_t *run = rpt_append((void **)&rep->path, &rep->npath, sizeof *rep->path);
    if (!run)
        return NULL;
    run->core = (uint32_t)(rpt_core_of(t) < 0 ? 0 : rpt_core_of(t));
    snprintf(run->track, sizeof run->track, "%s", t->name);
    snprintf(run->what, sizeof run->what, "%s", rpt_str_of(m, x->name));
    run->start_ps = x->ts;
    run->first_index = x->index;
    run_via(m, steps, k, n, run);
    return run;
}

/* Add a step's time [start, release) to its track's time on the path. */
static int track_time_add(trc_report_t *rep, uint32_t core, const char *track, uint64_t ps)
{
    trc_report_track_time_t *tt = NULL;
    for (size_t j = 0; j < rep->npath_tracks; j++)
        if (rep->path_tracks[j].core == core && strcmp(rep->path_tracks[j].track, track) == 0)
            tt = &rep->path_tracks[j];
    if (!tt) {
        tt = rpt_append((void **)&rep->path_tracks, &rep->npath_tracks, sizeof *rep->path_tracks);
        if (!tt)
            return -1;
        tt->core = core;
        snprintf(tt->track, sizeof tt->track, "%s", track);
    }
    tt->ps += ps;
    return 0;
}

/* The steps in time order as runs of consecutive steps on one track. */
static int path_runs(model_t *m, const pstep_t *steps, size_t n)
{
    trc_report_t *rep = m->rep;
    for (size_t k = n; k-- > 0;) {
        const pstep_t *st = &steps[k];
        const rs_t *x = &m->sl[st->slice];
        const rtrack_t *t = &m->tracks[x->track];
        /* waiting before this step: from the previous step's release (or 0) to its start */
        uint64_t prev_release = k + 1 < n ? steps[k + 1].release : 0;
        uint64_t wait = x->ts > prev_release ? x->ts - prev_release : 0;
        rep->path_wait_ps += wait;
        trc_report_step_t *run = rep->npath ? &rep->path[rep->npath - 1] : NULL;
        /* steps[k] was reached from steps[k + 1] through steps[k].via: engine and queue
         * order continue a run on the same track */
        if (run && (st->via == VIA_ENGINE || st->via == VIA_QUEUE)) {
            run->wait_ps += wait;
            run_add_name(run, rpt_str_of(m, x->name));
        } else {
            run = run_open(m, steps, k, n);
            if (!run)
                return -1;
            run->wait_ps = wait;
        }
        if (x->line && (!run->line_first || x->line < run->line_first))
            run->line_first = x->line;
        if (x->line > run->line_last)
            run->line_last = x->line;
        run->count++;
        run->end_ps = st->release;
        run->last_index = x->index;
        if (track_time_add(rep, run->core, t->name, st->release > x->ts ? st->release - x->ts : 0))
            return -1;
    }
    return 0;
}

int rpt_critical_path(model_t *m)
{
    trc_report_t *rep = m->rep;
    if (!m->nsl)
        return 0;
    pstep_t *steps = malloc(m->nsl * sizeof *steps);
    size_t n = steps ? walk_back(m, steps) : 0;
    if (!n || path_runs(m, steps, n) || rpt_path_bounds(m, steps, n)) {
        free(steps);
        return -1;
    }
    free(steps);
    for (size_t j = 0; j < rep->npath; j++) {
        trc_report_step_t *run = &rep->path[j];
        if (run->count > 1) {
            size_t L = strlen(run->what);
            snprintf(run->what + L, sizeof run->what - L, " x%llu",
                     (unsigned long long)run->count);
        }
    }
    return 0;
}
