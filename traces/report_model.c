/*
 * report_model.c -- a trace read once into the compact model the report's figures come from
 * (report_internal.h): slices per track in time order, instruction and transfer arguments,
 * flows resolved to each slice's semaphore and issue predecessors, NeuronLink intervals and
 * collective steps, names interned. trc_report_from_trace then has the figures computed
 * (report_engines.c, report_path.c, report_verdict.c, report_lines.c) and the lists ordered.
 */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Interned string id (0 is ""). */
static uint32_t intern(model_t *m, const char *s)
{
    if (!s || !*s)
        return 0;
    if ((m->nstr + 1) * 2 > m->cap_strix) {
        size_t cap = m->cap_strix ? m->cap_strix * 2 : 256;
        uint32_t *ix = calloc(cap, sizeof *ix);
        if (!ix) {
            m->oom = 1;
            return 0;
        }
        for (size_t i = 1; i < m->nstr; i++) {
            size_t j = hash_bytes(m->str[i]) & (cap - 1);
            while (ix[j])
                j = (j + 1) & (cap - 1);
            ix[j] = (uint32_t)i + 1;
        }
        free(m->strix);
        m->strix = ix;
        m->cap_strix = cap;
    }
    if (!m->nstr) {
        char **z = rpt_push((void **)&m->str, &m->nstr, &m->cap_str, sizeof *m->str);
        if (!z) {
            m->oom = 1;
            return 0;
        }
        *z = NULL; /* id 0 */
    }
    size_t j = hash_bytes(s) & (m->cap_strix - 1);
    while (m->strix[j]) {
        uint32_t id = m->strix[j] - 1;
        if (strcmp(m->str[id], s) == 0)
            return id;
        j = (j + 1) & (m->cap_strix - 1);
    }
    char *c = strdup(s);
    char **slot = c ? rpt_push((void **)&m->str, &m->nstr, &m->cap_str, sizeof *m->str) : NULL;
    if (!slot) {
        free(c);
        m->oom = 1;
        return 0;
    }
    *slot = c;
    m->strix[j] = (uint32_t)(m->nstr - 1) + 1;
    return (uint32_t)(m->nstr - 1);
}

const char *rpt_str_of(const model_t *m, uint32_t id)
{
    return id && id < m->nstr ? m->str[id] : "";
}

static size_t track_slot(uint32_t pid, uint32_t tid, size_t cap)
{
    uint64_t k = ((uint64_t)pid << 32 | tid) * 0x9e3779b97f4a7c15ull;
    return (size_t)(k >> 24) & (cap - 1);
}

static int64_t find_track(const model_t *m, uint32_t pid, uint32_t tid)
{
    if (!m->cap_index)
        return -1;
    for (size_t j = track_slot(pid, tid, m->cap_index); m->index[j];
         j = (j + 1) & (m->cap_index - 1)) {
        const rtrack_t *t = &m->tracks[m->index[j] - 1];
        if (t->pid == pid && t->tid == tid)
            return (int64_t)m->index[j] - 1;
    }
    return -1;
}

static int64_t get_track(model_t *m, uint32_t pid, uint32_t tid, const char *name)
{
    int64_t k = find_track(m, pid, tid);
    if (k >= 0) {
        if (name && *name)
            snprintf(m->tracks[k].name, sizeof m->tracks[k].name, "%s", name);
        return k;
    }
    if ((m->ntracks + 1) * 2 > m->cap_index) {
        size_t cap = m->cap_index ? m->cap_index * 2 : 64;
        size_t *ix = calloc(cap, sizeof *ix);
        if (!ix)
            return -1;
        for (size_t i = 0; i < m->ntracks; i++) {
            size_t j = track_slot(m->tracks[i].pid, m->tracks[i].tid, cap);
            while (ix[j])
                j = (j + 1) & (cap - 1);
            ix[j] = i + 1;
        }
        free(m->index);
        m->index = ix;
        m->cap_index = cap;
    }
    rtrack_t *t = rpt_push((void **)&m->tracks, &m->ntracks, &m->cap_tracks, sizeof *m->tracks);
    if (!t)
        return -1;
    t->pid = pid;
    t->tid = tid;
    if (name && *name) {
        snprintf(t->name, sizeof t->name, "%s", name);
    } else {
        uint32_t n;
        trc_track_kind_t kind = trc_track_kind_of_tid(tid, &n);
        snprintf(t->name, sizeof t->name, "%s %u", trc_track_kind_name(kind), n);
    }
    size_t j = track_slot(pid, tid, m->cap_index);
    while (m->index[j])
        j = (j + 1) & (m->cap_index - 1);
    m->index[j] = m->ntracks;
    return (int64_t)m->ntracks - 1;
}

static uint8_t space_code(const char *s)
{
    if (!s)
        return SP_OTHER;
    return strcmp(s, "sbuf") == 0 ? SP_SBUF
           : strcmp(s, "psum") == 0 ? SP_PSUM
           : strcmp(s, "hbm") == 0  ? SP_HBM
                                    : SP_OTHER;
}

static int link_slice(model_t *m, const trc_slice_t *s)
{
    const trc_link_args_t *a = &s->a.link;
    rlink_t *l = NULL;
    for (size_t i = 0; i < m->nlinks && !l; i++)
        if (m->links[i].from == a->src_chip && m->links[i].to == a->dst_chip)
            l = &m->links[i];
    if (!l) {
        l = rpt_push((void **)&m->links, &m->nlinks, &m->cap_links, sizeof *m->links);
        if (!l)
            return -1;
        l->from = (uint32_t)a->src_chip;
        l->to = (uint32_t)a->dst_chip;
    }
    if (a->link_gbps > l->gbps)
        l->gbps = a->link_gbps;
    l->transfers++;
    l->bytes += a->bytes;
    interval_t *iv = rpt_push((void **)&l->iv, &l->niv, &l->cap_iv, sizeof *l->iv);
    if (!iv)
        return -1;
    iv->start = s->ts_ps;
    iv->end = s->ts_ps + s->dur_ps;
    return 0;
}

static int collective_slice(model_t *m, const trc_slice_t *s)
{
    const trc_collective_args_t *a = &s->a.collective;
    /* HBM traffic of the member's chunk: read at the sender (and the receiver's own data
     * when it combines), written at the receiver */
    m->rep->hbm_read += a->bytes * (a->reduce ? 2 : 1);
    m->rep->hbm_write += a->bytes;
    if (!a->collective_id || !a->step)
        return 0;
    rcoll_t *c = NULL;
    for (size_t i = m->ncolls; i-- > 0 && !c;)
        if (m->colls[i].id == a->collective_id)
            c = &m->colls[i];
    if (!c) {
        c = rpt_push((void **)&m->colls, &m->ncolls, &m->cap_colls, sizeof *m->colls);
        if (!c)
            return -1;
        c->id = a->collective_id;
        c->op = intern(m, a->collective);
        c->group = intern(m, a->group);
        c->algorithm = intern(m, a->algorithm);
        c->members = (uint32_t)a->members;
        c->size = a->size;
    }
    if (a->step > c->nsteps) {
        uint32_t n = (uint32_t)(a->nsteps > a->step ? a->nsteps : a->step);
        if (n > (1u << 24))
            return 0; /* not a step count this writer makes */
        rstep_t *p = realloc(c->steps, n * sizeof *p);
        if (!p)
            return -1;
        memset(p + c->nsteps, 0, (n - c->nsteps) * sizeof *p);
        c->steps = p;
        c->nsteps = n;
    }
    rstep_t *st = &c->steps[a->step - 1];
    if (st->seen)
        return 0;
    st->seen = 1;
    st->start = s->ts_ps;
    st->end = s->ts_ps + s->dur_ps;
    st->latency = a->latency < s->dur_ps ? a->latency : s->dur_ps;
    st->bottleneck = intern(m, a->bottleneck);
    return 0;
}

/* The run record: what the report says of the run, and the trace's window. */
static void run_record(model_t *m, const trc_run_t *u)
{
    trc_report_t *rep = m->rep;
    m->have_run = 1;
    snprintf(rep->program, sizeof rep->program, "%s", u->program ? u->program : "");
    snprintf(rep->arch, sizeof rep->arch, "%s", u->arch ? u->arch : "");
    rep->chips = u->chips;
    rep->peak_flops_per_core = u->peak_flops_per_core;
    rep->hbm_peak_gbps = u->hbm_peak_gbps * (double)(u->chips ? u->chips : 1);
    rep->dma_peak_gbps_per_core = u->dma_peak_gbps;
    m->window_start = u->window_start;
    m->window_end = u->window_end;
    snprintf(m->engines, sizeof m->engines, "%s", u->engines ? u->engines : "");
}

/* An instruction's arguments into its slice. */
static void instr_args(model_t *m, rs_t *x, const trc_slice_t *s)
{
    const trc_instr_args_t *a = &s->a.instr;
    x->name = intern(m, s->name);
    x->end = s->ts_ps + (a->latency > s->dur_ps ? a->latency : s->dur_ps);
    x->index = a->index;
    x->line = (uint32_t)a->line;
    x->wait[TRC_STALL_SEMAPHORE] = a->wait_semaphore;
    x->wait[TRC_STALL_PORT] = a->wait_port;
    x->wait[TRC_STALL_INTERLOCK] = a->wait_interlock;
    x->wait[TRC_STALL_COLLECTIVE] = a->wait_collective;
    x->sem = intern(m, a->semaphore);
    x->bytes = a->bytes;
    x->flops = a->flops;
    x->hw_flops = a->hw_flops;
    x->cost = intern(m, a->cost);
}

/* A transfer's arguments into its slice; its cost text: its pieces and what set its rate. */
static void dma_args(model_t *m, rs_t *x, const trc_slice_t *s)
{
    const trc_dma_args_t *a = &s->a.dma;
    char name[64];
    snprintf(name, sizeof name, "dma %s->%s", a->src ? a->src : "?", a->dst ? a->dst : "?");
    x->name = intern(m, name);
    x->end = s->ts_ps + s->dur_ps;
    x->index = a->index;
    x->line = (uint32_t)a->line;
    x->bytes = a->bytes;
    x->src_bytes = trc_dma_src_bytes(a);
    x->src = space_code(a->src);
    x->dst = space_code(a->dst);
    x->acc = a->accumulate != 0;
    x->limit = intern(m, a->limit);
    x->efficiency = (float)a->efficiency;
    x->queued = a->queued;
    if (a->descriptors) {
        x->desc_start = a->desc_start;
        x->desc_end = a->desc_start + a->descriptors;
    }
    if (a->pieces) {
        char cost[160];
        snprintf(cost, sizeof cost, "%llu pieces x %.0f B, efficiency %.3f, rate set by %s",
                 (unsigned long long)a->pieces, a->piece_bytes, a->efficiency,
                 a->limit && *a->limit ? a->limit : "-");
        x->cost = intern(m, cost);
    }
}

/* An instruction or transfer slice into the model and its track (-1: out of memory). */
static int work_slice(model_t *m, const trc_slice_t *s)
{
    int64_t tk = get_track(m, s->pid, s->tid, NULL);
    rs_t *x = tk < 0 ? NULL : rpt_push((void **)&m->sl, &m->nsl, &m->cap_sl, sizeof *m->sl);
    if (!x)
        return -1;
    x->track = (uint32_t)tk;
    x->kind = s->kind;
    x->ts = s->ts_ps;
    x->dur = s->dur_ps;
    x->sem_pred = x->dma_pred = -1;
    if (s->kind == TRC_SLICE_INSTR)
        instr_args(m, x, s);
    else
        dma_args(m, x, s);
    rtrack_t *t = &m->tracks[tk];
    uint32_t *slot = rpt_push((void **)&t->s, &t->n, &t->cap, sizeof *t->s);
    if (!slot)
        return -1;
    *slot = (uint32_t)(m->nsl - 1);
    if (t->n > 1 && m->sl[t->s[t->n - 2]].ts > x->ts)
        t->unsorted = 1;
    return 0;
}

/* A flow (semaphore post to wait, dma issue to transfer), resolved once all is read. */
static int flow_record(model_t *m, const trc_flow_t *fl)
{
    rflow_t *f = rpt_push((void **)&m->flows, &m->nflows, &m->cap_flows, sizeof *m->flows);
    if (!f)
        return -1;
    f->from_pid = fl->from_pid;
    f->from_tid = fl->from_tid;
    f->from_ts = fl->from_ts_ps;
    f->to_pid = fl->to_pid;
    f->to_tid = fl->to_tid;
    f->to_ts = fl->to_ts_ps;
    f->is_dma = fl->cat && strcmp(fl->cat, "dma") == 0;
    return 0;
}

static int on_record(void *ctx, const trc_record_t *r)
{
    model_t *m = ctx;
    int err = 0;
    switch ((trc_kind_t)r->kind) {
    case TRC_REC_RUN: run_record(m, &r->u.run); break;
    case TRC_REC_TRACK:
        err = get_track(m, r->u.track.pid, r->u.track.tid, r->u.track.name) < 0;
        break;
    case TRC_REC_SLICE: {
        const trc_slice_t *s = &r->u.slice;
        if (s->kind == TRC_SLICE_LINK)
            err = link_slice(m, s);
        else if (s->kind == TRC_SLICE_COLLECTIVE)
            err = collective_slice(m, s);
        else if (s->kind == TRC_SLICE_INSTR || s->kind == TRC_SLICE_DMA)
            err = work_slice(m, s);
        break;
    }
    case TRC_REC_FLOW: err = flow_record(m, &r->u.flow); break;
    default: break;
    }
    if (err)
        m->oom = 1;
    return m->oom;
}

static const rs_t *sort_base;

static int cmp_slice_ix(const void *a, const void *b)
{
    const rs_t *x = &sort_base[*(const uint32_t *)a], *y = &sort_base[*(const uint32_t *)b];
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Position in a track of the slice starting at ts; -1 when none. */
static int64_t slice_at(const model_t *m, const rtrack_t *t, uint64_t ts)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->sl[t->s[mid]].ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && m->sl[t->s[lo]].ts == ts ? (int64_t)lo : -1;
}

static void resolve_flows(model_t *m)
{
    for (size_t i = 0; i < m->nflows; i++) {
        const rflow_t *f = &m->flows[i];
        int64_t ft = find_track(m, f->from_pid, f->from_tid);
        int64_t tt = find_track(m, f->to_pid, f->to_tid);
        if (ft < 0 || tt < 0)
            continue;
        int64_t a = slice_at(m, &m->tracks[ft], f->from_ts);
        int64_t b = slice_at(m, &m->tracks[tt], f->to_ts);
        if (a < 0 || b < 0)
            continue;
        uint32_t src = m->tracks[ft].s[a];
        rs_t *dst = &m->sl[m->tracks[tt].s[b]];
        int64_t *pred = f->is_dma ? &dst->dma_pred : &dst->sem_pred;
        if (*pred < 0 || m->sl[*pred].end < m->sl[src].end)
            *pred = src;
    }
}

static int cmp_track_ptr(const void *a, const void *b)
{
    const rtrack_t *x = *(rtrack_t *const *)a, *y = *(rtrack_t *const *)b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}
/* The report's figures from the model read whole (-1: out of memory). */
static int figures(model_t *m)
{
    rtrack_t **order = malloc((m->ntracks + 1) * sizeof *order);
    if (!order)
        return -1;
    sort_base = m->sl;
    for (size_t k = 0; k < m->ntracks; k++) {
        if (m->tracks[k].unsorted)
            qsort(m->tracks[k].s, m->tracks[k].n, sizeof *m->tracks[k].s, cmp_slice_ix);
        order[k] = &m->tracks[k];
    }
    qsort(order, m->ntracks, sizeof *order, cmp_track_ptr);
    resolve_flows(m);
    uint64_t total = 0;
    for (size_t i = 0; i < m->nsl; i++)
        if (m->sl[i].end > total)
            total = m->sl[i].end;
    m->rep->total_ps = total;
    int rc = rpt_engine_figures(m, order);
    free(order);
    if (rc || rpt_critical_path(m) || rpt_lines_from_slices(m))
        return -1;
    return 0;
}

/* A note when the trace holds part of the run (a window or some engines only). */
static void note_window(const model_t *m)
{
    if (!m->window_start && !m->window_end && !m->engines[0])
        return;
    char what[200] = "";
    size_t L = 0;
    if (m->window_start)
        L += (size_t)snprintf(what + L, sizeof what - L, " --trace-start %.3f",
                              (double)m->window_start / 1e3);
    if (m->window_end && L < sizeof what)
        L += (size_t)snprintf(what + L, sizeof what - L, " --trace-end %.3f",
                              (double)m->window_end / 1e3);
    if (m->engines[0] && L < sizeof what)
        snprintf(what + L, sizeof what - L, " --trace-engines %s", m->engines);
    trc_report_note(m->rep, "the trace holds part of the run (%s): the figures describe "
                            "what it holds",
                    what + 1);
}

static void model_free(model_t *m)
{
    for (size_t k = 0; k < m->ntracks; k++) {
        free(m->tracks[k].s);
        free(m->tracks[k].stalls);
        free(m->tracks[k].kinds);
    }
    free(m->tracks);
    free(m->index);
    free(m->sl);
    free(m->flows);
    for (size_t i = 0; i < m->nlinks; i++)
        free(m->links[i].iv);
    free(m->links);
    for (size_t i = 0; i < m->ncolls; i++)
        free(m->colls[i].steps);
    free(m->colls);
    for (size_t i = 1; i < m->nstr; i++)
        free(m->str[i]);
    free(m->str);
    free(m->strix);
}

ncsim_status_t trc_report_from_trace(const char *path, trc_report_t *rep, char *err,
                                     size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    rep->from_trace = 1;
    snprintf(rep->source, sizeof rep->source, "%s", path);
    model_t m;
    memset(&m, 0, sizeof m);
    m.rep = rep;
    /* the report describes transfers from their numbers: no breakdown text needed */
    ncsim_status_t st = trc_read_flags(path, TRC_READ_NO_DMA_TEXT, on_record, &m, err, errlen);
    if (st == NCSIM_OK && !m.oom && !m.have_run) {
        st = NCSIM_FORMAT;
        snprintf(err, errlen, "%s: not an ncsim trace (no run information)", path);
    }
    if (st == NCSIM_OK && (m.oom || figures(&m))) {
        st = NCSIM_NOMEM;
        snprintf(err, errlen, "out of memory");
    }
    if (st == NCSIM_OK) {
        note_window(&m);
        trc_report_finish(rep);
    }
    model_free(&m);
    if (st != NCSIM_OK)
        trc_report_free(rep);
    return st;
}
