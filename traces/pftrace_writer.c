/*
 * pftrace_writer.c -- Perfetto's protobuf trace format, encoded by hand (no Perfetto
 * library is packaged). A trace is `repeated TracePacket packet = 1`; this writer uses one
 * packet sequence with interned category, event and argument names, and:
 *
 *   - a TrackDescriptor per process (ProcessDescriptor), per engine / DMA queue / link
 *     track (ThreadDescriptor), per counter (CounterDescriptor, child of its process), and
 *     one global track "ncsim run" whose single instant event carries the run's fields;
 *   - a slice as TYPE_SLICE_BEGIN (with debug annotations: the arguments, plus ts_ps and
 *     dur_ps because packet timestamps are whole nanoseconds) and TYPE_SLICE_END;
 *   - a counter value as TYPE_COUNTER with double_counter_value;
 *   - a flow as an instant on the source track carrying flow_ids, ended by
 *     terminating_flow_ids on the destination slice's begin event. (The source slice is
 *     already written when the flow becomes known, hence the instant; the destination
 *     slice is written right after its flow, so the id rides on it.)
 *
 * Timestamps are floored to nanoseconds for both ends of a slice, which keeps slices that
 * did not overlap in picoseconds from overlapping after rounding.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

/* ---- interning ------------------------------------------------------------------------------------ */

typedef struct intern_entry {
    char *s;
    uint64_t iid;
} intern_entry_t;

typedef struct intern {
    intern_entry_t *e;
    size_t cap, n;
} intern_t;

static uint64_t hash_str(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* iid of s (1-based), *is_new set when it was added now; 0 when out of memory. */
static uint64_t intern_get(intern_t *t, const char *s, int *is_new)
{
    *is_new = 0;
    if ((t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        intern_entry_t *e = calloc(cap, sizeof *e);
        if (!e)
            return 0;
        for (size_t i = 0; i < t->cap; i++)
            if (t->e[i].s) {
                size_t j = hash_str(t->e[i].s, 14695981039346656037ull) & (cap - 1);
                while (e[j].s)
                    j = (j + 1) & (cap - 1);
                e[j] = t->e[i];
            }
        free(t->e);
        t->e = e;
        t->cap = cap;
    }
    size_t j = hash_str(s, 14695981039346656037ull) & (t->cap - 1);
    while (t->e[j].s) {
        if (strcmp(t->e[j].s, s) == 0)
            return t->e[j].iid;
        j = (j + 1) & (t->cap - 1);
    }
    char *copy = strdup(s);
    if (!copy)
        return 0;
    t->e[j].s = copy;
    t->e[j].iid = ++t->n;
    *is_new = 1;
    return t->e[j].iid;
}

static void intern_free(intern_t *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->e[i].s);
    free(t->e);
}

/* ---- state ------------------------------------------------------------------------------------------ */

enum { TBL_CATEGORY, TBL_NAME, TBL_ANNOTATION, TBL_COUNT };

typedef struct pending_intern {
    uint8_t table;
    uint64_t iid;
    const char *s;
} pending_intern_t;

typedef struct pending_flow {
    uint64_t track, ts_ps, id;
    char cat[32];
    char name[64];
} pending_flow_t;

typedef struct pf_state {
    pb_buf_t pkt;
    intern_t tables[TBL_COUNT];
    intern_t counters; /* "pid\x1fname\x1funit" -> counter track number */
    pending_intern_t pend[64];
    unsigned npend;
    pending_flow_t *flows;
    size_t nflows, cap_flows;
    int first_packet;
    int oom;
    /* iids of each slice kind's category and argument names, taken once */
    int kind_ready[TRC_SLICE_KIND_COUNT];
    uint64_t kind_cat[TRC_SLICE_KIND_COUNT];
    uint64_t kind_fields[TRC_SLICE_KIND_COUNT][32];
    uint64_t ts_iid, dur_iid;
} pf_state_t;

static uint64_t iid_of(pf_state_t *st, int table, const char *s)
{
    int is_new;
    uint64_t iid = intern_get(&st->tables[table], s ? s : "", &is_new);
    if (!iid) {
        st->oom = 1;
        return 0;
    }
    if (is_new) {
        if (st->npend == sizeof st->pend / sizeof st->pend[0]) {
            st->oom = 1; /* never: at most a few dozen strings per packet */
            return iid;
        }
        pending_intern_t *p = &st->pend[st->npend++];
        p->table = (uint8_t)table;
        p->iid = iid;
        p->s = s ? s : ""; /* the caller's string: emitted by packet_begin in this call */
    }
    return iid;
}

/* ---- packets --------------------------------------------------------------------------------------- */

/* Start a packet: timestamp (when has_ts), sequence, flags, and the pending interned
 * strings. Returns 0, or -1 when out of memory. */
static void packet_begin(pf_state_t *st, int has_ts, uint64_t ts_ns, int needs_state)
{
    pb_buf_t *b = &st->pkt;
    b->n = 0;
    if (has_ts)
        pb_varint_field(b, PF_PKT_TIMESTAMP, ts_ns);
    pb_varint_field(b, PF_PKT_SEQ_ID, TRC_PF_SEQUENCE);
    uint64_t flags = needs_state ? PF_SEQ_NEEDS_STATE : 0;
    if (st->first_packet) {
        flags |= PF_SEQ_CLEARED;
        st->first_packet = 0;
    }
    if (flags)
        pb_varint_field(b, PF_PKT_SEQ_FLAGS, flags);
    if (st->npend) {
        size_t id = pb_begin(b, PF_PKT_INTERNED);
        static const uint32_t table_field[TBL_COUNT] = {PF_ID_CATEGORIES, PF_ID_NAMES,
                                                        PF_ID_ANNOTATION_NAMES};
        for (unsigned i = 0; i < st->npend; i++) {
            size_t e = pb_begin(b, table_field[st->pend[i].table]);
            pb_varint_field(b, PF_IE_IID, st->pend[i].iid);
            pb_string_field(b, PF_IE_NAME, st->pend[i].s);
            pb_end(b, e);
        }
        pb_end(b, id);
        st->npend = 0;
    }
}

static ncsim_status_t packet_end(trc_writer_t *w, pf_state_t *st)
{
    if (st->pkt.failed || st->oom)
        return NCSIM_NOMEM;
    unsigned char *p = trc_out_reserve(&w->out, 16);
    size_t n = pb_put_tag(p, PF_TRACE_PACKET, PB_LEN);
    n += pb_put_varint(p + n, st->pkt.n);
    trc_out_commit(&w->out, n);
    trc_out_write(&w->out, st->pkt.p, st->pkt.n);
    w->events++;
    return NCSIM_OK;
}

static void annotation_u64(pf_state_t *st, uint64_t name_iid, uint64_t v)
{
    size_t a = pb_begin(&st->pkt, PF_TE_DEBUG);
    pb_varint_field(&st->pkt, PF_DA_NAME_IID, name_iid);
    pb_varint_field(&st->pkt, PF_DA_UINT, v);
    pb_end(&st->pkt, a);
}

/* The debug annotations of an args struct: one per field, zero fields skipped unless the
 * table says `always`. Name iids are taken before the packet starts (see collect_names). */
static void annotations(pf_state_t *st, const trc_field_t *f, unsigned nf, const void *base,
                        const uint64_t *name_iids)
{
    const unsigned char *b = base;
    for (unsigned i = 0; i < nf; i++) {
        const void *m = b + f[i].offset;
        uint64_t u = 0;
        double d = 0;
        const char *s = NULL;
        switch (f[i].type) {
        case TRC_FT_U64:
        case TRC_FT_PS: memcpy(&u, m, sizeof u); break;
        case TRC_FT_F64: memcpy(&d, m, sizeof d); break;
        default: memcpy(&s, m, sizeof s); break;
        }
        if (!f[i].always && !u && d == 0 && !(s && *s))
            continue;
        size_t a = pb_begin(&st->pkt, PF_TE_DEBUG);
        pb_varint_field(&st->pkt, PF_DA_NAME_IID, name_iids[i]);
        switch (f[i].type) {
        case TRC_FT_U64: pb_varint_field(&st->pkt, PF_DA_UINT, u); break;
        case TRC_FT_PS: pb_double_field(&st->pkt, PF_DA_DOUBLE, (double)u / 1000.0); break;
        case TRC_FT_F64: pb_double_field(&st->pkt, PF_DA_DOUBLE, d); break;
        default: pb_string_field(&st->pkt, PF_DA_STRING, s ? s : ""); break;
        }
        pb_end(&st->pkt, a);
    }
}

static void collect_names(pf_state_t *st, const trc_field_t *f, unsigned nf, uint64_t *iids)
{
    for (unsigned i = 0; i < nf; i++)
        iids[i] = iid_of(st, TBL_ANNOTATION, f[i].key);
}

/* ---- descriptors ------------------------------------------------------------------------------------ */

static ncsim_status_t write_descriptor(trc_writer_t *w, pf_state_t *st, uint64_t uuid,
                                       uint64_t parent, const char *name, int kind, uint32_t pid,
                                       uint32_t tid, const char *unit)
{
    packet_begin(st, 0, 0, 0);
    pb_buf_t *b = &st->pkt;
    size_t td = pb_begin(b, PF_PKT_TRACK_DESCRIPTOR);
    pb_varint_field(b, PF_TD_UUID, uuid);
    if (parent)
        pb_varint_field(b, PF_TD_PARENT, parent);
    if (kind == 1) { /* process */
        size_t p = pb_begin(b, PF_TD_PROCESS);
        pb_sint_field(b, PF_PD_PID, pid);
        pb_string_field(b, PF_PD_NAME, name);
        pb_end(b, p);
    } else if (kind == 2) { /* thread */
        size_t t = pb_begin(b, PF_TD_THREAD);
        pb_sint_field(b, PF_THD_PID, pid);
        pb_sint_field(b, PF_THD_TID, tid);
        pb_string_field(b, PF_THD_NAME, name);
        pb_end(b, t);
    } else {
        pb_string_field(b, PF_TD_NAME, name);
        if (kind == 3) { /* counter */
            size_t c = pb_begin(b, PF_TD_COUNTER);
            pb_string_field(b, PF_CD_UNIT_NAME, unit);
            pb_end(b, c);
        }
    }
    pb_end(b, td);
    return packet_end(w, st);
}

/* ---- events ------------------------------------------------------------------------------------------ */

static ncsim_status_t write_instant(trc_writer_t *w, pf_state_t *st, uint64_t track,
                                    uint64_t ts_ps, const char *cat, const char *name,
                                    uint64_t flow, int terminating)
{
    uint64_t cat_iid = iid_of(st, TBL_CATEGORY, cat);
    uint64_t name_iid = iid_of(st, TBL_NAME, name);
    uint64_t ts_iid = iid_of(st, TBL_ANNOTATION, "ts_ps");
    packet_begin(st, 1, ts_ps / 1000, 1);
    pb_buf_t *b = &st->pkt;
    size_t te = pb_begin(b, PF_PKT_TRACK_EVENT);
    pb_varint_field(b, PF_TE_TYPE, PF_TYPE_INSTANT);
    pb_varint_field(b, PF_TE_TRACK_UUID, track);
    pb_varint_field(b, PF_TE_CATEGORY_IIDS, cat_iid);
    pb_varint_field(b, PF_TE_NAME_IID, name_iid);
    annotation_u64(st, ts_iid, ts_ps);
    pb_fixed64_field(b, terminating ? PF_TE_TERMINATING_FLOW_IDS : PF_TE_FLOW_IDS, flow);
    pb_end(b, te);
    return packet_end(w, st);
}

/* Flows whose destination never got a matching slice end on an instant of their own. */
static ncsim_status_t flush_flows(trc_writer_t *w, pf_state_t *st, uint64_t track,
                                  uint64_t before_ps, int all)
{
    size_t k = 0;
    ncsim_status_t rc = NCSIM_OK;
    for (size_t i = 0; i < st->nflows; i++) {
        pending_flow_t *f = &st->flows[i];
        if (all || (f->track == track && f->ts_ps < before_ps)) {
            ncsim_status_t r = write_instant(w, st, f->track, f->ts_ps, f->cat, f->name, f->id, 1);
            if (r != NCSIM_OK)
                rc = r;
        } else {
            st->flows[k++] = *f;
        }
    }
    st->nflows = k;
    return rc;
}

static ncsim_status_t write_slice(trc_writer_t *w, pf_state_t *st, const trc_slice_t *s)
{
    if (s->kind >= TRC_SLICE_KIND_COUNT)
        return NCSIM_INTERNAL;
    uint64_t track = trc_pf_track_uuid(s->pid, s->tid);
    ncsim_status_t rc = flush_flows(w, st, track, s->ts_ps, 0);
    if (rc != NCSIM_OK)
        return rc;
    unsigned nf;
    const trc_field_t *f = trc_slice_fields((trc_slice_kind_t)s->kind, &nf);
    if (!st->kind_ready[s->kind]) {
        st->kind_ready[s->kind] = 1;
        collect_names(st, f, nf, st->kind_fields[s->kind]);
        st->kind_cat[s->kind] =
            iid_of(st, TBL_CATEGORY, trc_slice_category((trc_slice_kind_t)s->kind));
        st->ts_iid = iid_of(st, TBL_ANNOTATION, "ts_ps");
        st->dur_iid = iid_of(st, TBL_ANNOTATION, "dur_ps");
    }
    const uint64_t *iids = st->kind_fields[s->kind];
    uint64_t cat_iid = st->kind_cat[s->kind];
    uint64_t name_iid = iid_of(st, TBL_NAME, s->name);
    uint64_t ts_iid = st->ts_iid, dur_iid = st->dur_iid;
    packet_begin(st, 1, s->ts_ps / 1000, 1);
    pb_buf_t *b = &st->pkt;
    size_t te = pb_begin(b, PF_PKT_TRACK_EVENT);
    pb_varint_field(b, PF_TE_TYPE, PF_TYPE_SLICE_BEGIN);
    pb_varint_field(b, PF_TE_TRACK_UUID, track);
    pb_varint_field(b, PF_TE_CATEGORY_IIDS, cat_iid);
    pb_varint_field(b, PF_TE_NAME_IID, name_iid);
    annotations(st, f, nf, &s->a, iids);
    annotation_u64(st, ts_iid, s->ts_ps);
    annotation_u64(st, dur_iid, s->dur_ps);
    /* flows that end here */
    size_t k = 0;
    for (size_t i = 0; i < st->nflows; i++) {
        if (st->flows[i].track == track && st->flows[i].ts_ps == s->ts_ps)
            pb_fixed64_field(b, PF_TE_TERMINATING_FLOW_IDS, st->flows[i].id);
        else
            st->flows[k++] = st->flows[i];
    }
    st->nflows = k;
    pb_end(b, te);
    rc = packet_end(w, st);
    if (rc != NCSIM_OK)
        return rc;
    packet_begin(st, 1, (s->ts_ps + s->dur_ps) / 1000, 1);
    te = pb_begin(b, PF_PKT_TRACK_EVENT);
    pb_varint_field(b, PF_TE_TYPE, PF_TYPE_SLICE_END);
    pb_varint_field(b, PF_TE_TRACK_UUID, track);
    pb_end(b, te);
    return packet_end(w, st);
}

static ncsim_status_t write_counter(trc_writer_t *w, pf_state_t *st, const trc_counter_t *c)
{
    char key[512];
    snprintf(key, sizeof key, "%u\x1f%s\x1f%s", c->pid, c->name, c->unit);
    int is_new;
    uint64_t n = intern_get(&st->counters, key, &is_new);
    if (!n)
        return NCSIM_NOMEM;
    uint64_t uuid = TRC_PF_COUNTER_UUID + n;
    if (is_new) {
        char name[300];
        snprintf(name, sizeof name, "%s (%s)", c->name, c->unit);
        ncsim_status_t rc = write_descriptor(w, st, uuid, trc_pf_track_uuid(c->pid, 0), name, 3,
                                             c->pid, 0, c->unit);
        if (rc != NCSIM_OK)
            return rc;
    }
    packet_begin(st, 1, c->ts_ps / 1000, 1);
    pb_buf_t *b = &st->pkt;
    size_t te = pb_begin(b, PF_PKT_TRACK_EVENT);
    pb_varint_field(b, PF_TE_TYPE, PF_TYPE_COUNTER);
    pb_varint_field(b, PF_TE_TRACK_UUID, uuid);
    pb_double_field(b, PF_TE_DOUBLE_COUNTER_VALUE, c->value);
    pb_end(b, te);
    return packet_end(w, st);
}

static ncsim_status_t write_run(trc_writer_t *w, pf_state_t *st, const trc_run_t *r)
{
    ncsim_status_t rc = write_descriptor(w, st, TRC_PF_RUN_UUID, 0, "ncsim run", 0, 0, 0, NULL);
    if (rc != NCSIM_OK)
        return rc;
    unsigned nf;
    const trc_field_t *f = trc_run_fields(&nf);
    uint64_t iids[32];
    collect_names(st, f, nf, iids);
    uint64_t cat_iid = iid_of(st, TBL_CATEGORY, "run");
    uint64_t name_iid = iid_of(st, TBL_NAME, "ncsim run");
    packet_begin(st, 1, 0, 1);
    pb_buf_t *b = &st->pkt;
    size_t te = pb_begin(b, PF_PKT_TRACK_EVENT);
    pb_varint_field(b, PF_TE_TYPE, PF_TYPE_INSTANT);
    pb_varint_field(b, PF_TE_TRACK_UUID, TRC_PF_RUN_UUID);
    pb_varint_field(b, PF_TE_CATEGORY_IIDS, cat_iid);
    pb_varint_field(b, PF_TE_NAME_IID, name_iid);
    annotations(st, f, nf, r, iids);
    pb_end(b, te);
    return packet_end(w, st);
}

static ncsim_status_t pf_write(trc_writer_t *w, const trc_record_t *r)
{
    pf_state_t *st = w->state;
    if (!st) {
        st = w->state = calloc(1, sizeof *st);
        if (!st)
            return NCSIM_NOMEM;
        st->first_packet = 1;
    }
    switch ((trc_kind_t)r->kind) {
    case TRC_REC_RUN: return write_run(w, st, &r->u.run);
    case TRC_REC_PROCESS:
        return write_descriptor(w, st, trc_pf_track_uuid(r->u.process.pid, 0), 0,
                                r->u.process.name, 1, r->u.process.pid, 0, NULL);
    case TRC_REC_TRACK:
        return write_descriptor(w, st, trc_pf_track_uuid(r->u.track.pid, r->u.track.tid), 0,
                                r->u.track.name, 2, r->u.track.pid, r->u.track.tid, NULL);
    case TRC_REC_SLICE: return write_slice(w, st, &r->u.slice);
    case TRC_REC_COUNTER: return write_counter(w, st, &r->u.counter);
    case TRC_REC_FLOW: {
        const trc_flow_t *fl = &r->u.flow;
        ncsim_status_t rc = write_instant(w, st, trc_pf_track_uuid(fl->from_pid, fl->from_tid),
                                          fl->from_ts_ps, fl->cat, fl->name, fl->id, 0);
        if (rc != NCSIM_OK)
            return rc;
        if (st->nflows == st->cap_flows) {
            size_t cap = st->cap_flows ? st->cap_flows * 2 : 16;
            pending_flow_t *p = realloc(st->flows, cap * sizeof *p);
            if (!p)
                return NCSIM_NOMEM;
            st->flows = p;
            st->cap_flows = cap;
        }
        pending_flow_t *p = &st->flows[st->nflows++];
        p->track = trc_pf_track_uuid(fl->to_pid, fl->to_tid);
        p->ts_ps = fl->to_ts_ps;
        p->id = fl->id;
        snprintf(p->cat, sizeof p->cat, "%s", fl->cat);
        snprintf(p->name, sizeof p->name, "%s", fl->name);
        return NCSIM_OK;
    }
    default: return NCSIM_INTERNAL;
    }
}

static ncsim_status_t pf_finish(trc_writer_t *w)
{
    pf_state_t *st = w->state;
    if (!st)
        return NCSIM_OK; /* an empty trace is an empty file: zero packets */
    return flush_flows(w, st, 0, 0, 1);
}

static void pf_destroy(trc_writer_t *w)
{
    pf_state_t *st = w->state;
    if (!st)
        return;
    for (int i = 0; i < TBL_COUNT; i++)
        intern_free(&st->tables[i]);
    intern_free(&st->counters);
    free(st->flows);
    free(st->pkt.p);
    free(st);
    w->state = NULL;
}

const trc_backend_t trc_pftrace_backend = {pf_write, pf_finish, pf_destroy};
