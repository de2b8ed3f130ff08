/*
 * pftrace_reader.c -- a Perfetto protobuf trace back into records: our own decoder for the
 * subset pftrace_writer.c writes (track descriptors, track events with interned names,
 * debug annotations, counters and flows). Packets are read one at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

enum { TBL_CATEGORY, TBL_NAME, TBL_ANNOTATION, TBL_STRING_VALUE, TBL_COUNT };
enum { TK_GLOBAL, TK_PROCESS, TK_THREAD, TK_COUNTER };

typedef struct pf_track {
    uint64_t uuid;
    uint64_t parent;
    uint32_t pid, tid;
    int kind;
    char *name;
    char *unit;
} pf_track_t;

typedef struct pf_reader {
    trc_record_fn fn;
    void *ctx;
    int stop;
    char **iids[TBL_COUNT];
    size_t niids[TBL_COUNT];
    pf_track_t *tracks;
    size_t ntracks, cap_tracks;
    size_t *index; /* open addressing: uuid -> track + 1 */
    size_t cap_index;
    flowpair_t flows;
    char *arena;  /* string copies for the packet being read */
    size_t an, acap;
    char *ops;    /* operands rebuilt from a template and its values */
    size_t ops_cap;
    struct pf_event *ev; /* the event being read */
    char side[2][TRC_PF_SIDE_MAX]; /* a transfer's src and dst taken from its name */
    int oom;
    char bad[160];
} pf_reader_t;

/* ---- small stores --------------------------------------------------------------------------------- */

/* Strings copied out of a packet (NUL-terminated) fit in twice the packet's size, since
 * each takes at least a tag and a length byte there: arena_reserve sizes the arena once
 * per packet and copies never move it. */
static int arena_reserve(pf_reader_t *r, size_t packet_len)
{
    size_t need = 2 * packet_len + 64;
    r->an = 0;
    if (need <= r->acap)
        return 0;
    char *a = realloc(r->arena, need);
    if (!a) {
        r->oom = 1;
        return -1;
    }
    r->arena = a;
    r->acap = need;
    return 0;
}

static const char *arena_str(pf_reader_t *r, const unsigned char *s, size_t n)
{
    if (r->an + n + 1 > r->acap)
        return ""; /* cannot happen (see arena_reserve) */
    char *p = r->arena + r->an;
    if (n) /* s may be NULL for an empty string; memcpy from NULL is undefined even for 0 */
        memcpy(p, s, n);
    p[n] = '\0';
    r->an += n + 1;
    return p;
}

static int set_iid(pf_reader_t *r, int table, uint64_t iid, const unsigned char *s, size_t n)
{
    if (iid > (1u << 24))
        return 0; /* not one of ours: ignore */
    if (iid >= r->niids[table]) {
        size_t cap = r->niids[table] ? r->niids[table] : 64;
        while (cap <= iid)
            cap *= 2;
        char **p = realloc(r->iids[table], cap * sizeof *p);
        if (!p)
            return -1;
        memset(p + r->niids[table], 0, (cap - r->niids[table]) * sizeof *p);
        r->iids[table] = p;
        r->niids[table] = cap;
    }
    char *c = malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, s, n);
    c[n] = '\0';
    free(r->iids[table][iid]);
    r->iids[table][iid] = c;
    return 0;
}

static const char *get_iid(const pf_reader_t *r, int table, uint64_t iid)
{
    if (iid < r->niids[table] && r->iids[table][iid])
        return r->iids[table][iid];
    return NULL;
}

static void clear_iids(pf_reader_t *r)
{
    for (int t = 0; t < TBL_COUNT; t++) {
        for (size_t i = 0; i < r->niids[t]; i++)
            free(r->iids[t][i]);
        free(r->iids[t]);
        r->iids[t] = NULL;
        r->niids[t] = 0;
    }
}

static size_t uuid_slot(uint64_t uuid, size_t cap)
{
    return (size_t)((uuid * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static pf_track_t *find_track(pf_reader_t *r, uint64_t uuid)
{
    if (!r->cap_index)
        return NULL;
    for (size_t j = uuid_slot(uuid, r->cap_index); r->index[j]; j = (j + 1) & (r->cap_index - 1))
        if (r->tracks[r->index[j] - 1].uuid == uuid)
            return &r->tracks[r->index[j] - 1];
    return NULL;
}

static pf_track_t *add_track(pf_reader_t *r, uint64_t uuid)
{
    pf_track_t *t = find_track(r, uuid);
    if (t)
        return t;
    if (r->ntracks == r->cap_tracks) {
        size_t cap = r->cap_tracks ? r->cap_tracks * 2 : 64;
        pf_track_t *p = realloc(r->tracks, cap * sizeof *p);
        if (!p)
            return NULL;
        r->tracks = p;
        r->cap_tracks = cap;
    }
    if ((r->ntracks + 1) * 2 > r->cap_index) {
        size_t cap = r->cap_index ? r->cap_index * 2 : 128;
        size_t *ix = calloc(cap, sizeof *ix);
        if (!ix)
            return NULL;
        for (size_t i = 0; i < r->ntracks; i++) {
            size_t j = uuid_slot(r->tracks[i].uuid, cap);
            while (ix[j])
                j = (j + 1) & (cap - 1);
            ix[j] = i + 1;
        }
        free(r->index);
        r->index = ix;
        r->cap_index = cap;
    }
    t = &r->tracks[r->ntracks++];
    memset(t, 0, sizeof *t);
    t->uuid = uuid;
    size_t j = uuid_slot(uuid, r->cap_index);
    while (r->index[j])
        j = (j + 1) & (r->cap_index - 1);
    r->index[j] = r->ntracks;
    return t;
}

static char *dup_n(const unsigned char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static int emit(pf_reader_t *r, const trc_record_t *rec)
{
    if (r->fn(r->ctx, rec))
        r->stop = 1;
    return !r->stop;
}

/* ---- messages ------------------------------------------------------------------------------------- */

static int read_interned(pf_reader_t *r, const unsigned char *p, size_t n)
{
    pb_in_t in = {p, p + n};
    pb_field_t f;
    int k;
    while ((k = pb_next(&in, &f)) > 0) {
        int table = f.field == PF_ID_CATEGORIES       ? TBL_CATEGORY
                    : f.field == PF_ID_NAMES            ? TBL_NAME
                    : f.field == PF_ID_ANNOTATION_NAMES ? TBL_ANNOTATION
                    : f.field == PF_ID_STRING_VALUES    ? TBL_STRING_VALUE
                                                        : -1;
        if (table < 0 || f.wire != PB_LEN)
            continue;
        pb_in_t e = {f.data, f.data + f.len};
        pb_field_t g;
        uint64_t iid = 0;
        const unsigned char *s = NULL;
        size_t sl = 0;
        int kk;
        while ((kk = pb_next(&e, &g)) > 0) {
            if (g.field == PF_IE_IID && g.wire == PB_VARINT)
                iid = g.v;
            else if (g.field == PF_IE_NAME && g.wire == PB_LEN) {
                s = g.data;
                sl = g.len;
            }
        }
        if (kk < 0)
            return -1;
        if (s && set_iid(r, table, iid, s, sl)) {
            r->oom = 1;
            return -1;
        }
    }
    return k;
}

static int read_descriptor(pf_reader_t *r, const unsigned char *p, size_t n)
{
    pb_in_t in = {p, p + n};
    pb_field_t f;
    int k;
    uint64_t uuid = 0, parent = 0;
    const unsigned char *name = NULL, *unit = NULL;
    size_t namel = 0, unitl = 0;
    int kind = TK_GLOBAL;
    uint64_t pid = 0, tid = 0;
    while ((k = pb_next(&in, &f)) > 0) {
        if (f.field == PF_TD_UUID && f.wire == PB_VARINT)
            uuid = f.v;
        else if (f.field == PF_TD_PARENT && f.wire == PB_VARINT)
            parent = f.v;
        else if (f.field == PF_TD_NAME && f.wire == PB_LEN) {
            name = f.data;
            namel = f.len;
        } else if ((f.field == PF_TD_PROCESS || f.field == PF_TD_THREAD ||
                    f.field == PF_TD_COUNTER) &&
                   f.wire == PB_LEN) {
            kind = f.field == PF_TD_PROCESS  ? TK_PROCESS
                   : f.field == PF_TD_THREAD ? TK_THREAD
                                             : TK_COUNTER;
            pb_in_t s = {f.data, f.data + f.len};
            pb_field_t g;
            int kk;
            while ((kk = pb_next(&s, &g)) > 0) {
                if (kind == TK_PROCESS && g.field == PF_PD_PID)
                    pid = g.v;
                else if (kind == TK_PROCESS && g.field == PF_PD_NAME && g.wire == PB_LEN) {
                    name = g.data;
                    namel = g.len;
                } else if (kind == TK_THREAD && g.field == PF_THD_PID)
                    pid = g.v;
                else if (kind == TK_THREAD && g.field == PF_THD_TID)
                    tid = g.v;
                else if (kind == TK_THREAD && g.field == PF_THD_NAME && g.wire == PB_LEN) {
                    name = g.data;
                    namel = g.len;
                } else if (kind == TK_COUNTER && g.field == PF_CD_UNIT_NAME &&
                           g.wire == PB_LEN) {
                    unit = g.data;
                    unitl = g.len;
                }
            }
            if (kk < 0)
                return -1;
        }
    }
    if (k < 0)
        return -1;
    pf_track_t *t = add_track(r, uuid);
    if (!t) {
        r->oom = 1;
        return -1;
    }
    free(t->name);
    free(t->unit);
    t->parent = parent;
    t->kind = kind;
    t->pid = (uint32_t)pid;
    t->tid = (uint32_t)tid;
    t->name = dup_n(name ? name : (const unsigned char *)"", namel);
    t->unit = dup_n(unit ? unit : (const unsigned char *)"", unitl);
    if (!t->name || !t->unit) {
        r->oom = 1;
        return -1;
    }
    if (kind == TK_COUNTER) {
        const pf_track_t *pt = find_track(r, parent);
        t->pid = pt ? pt->pid : 0;
        /* "NAME (UNIT)" -> NAME */
        size_t L = strlen(t->name), U = strlen(t->unit);
        if (L > U + 3 && t->name[L - 1] == ')' && t->name[L - U - 2] == '(' &&
            memcmp(t->name + L - U - 1, t->unit, U) == 0)
            t->name[L - U - 3] = '\0';
    }
    trc_record_t rec;
    memset(&rec, 0, sizeof rec);
    if (kind == TK_PROCESS) {
        rec.kind = TRC_REC_PROCESS;
        rec.u.process.pid = t->pid;
        rec.u.process.name = t->name;
        return emit(r, &rec) ? 1 : 0;
    }
    if (kind == TK_THREAD) {
        rec.kind = TRC_REC_TRACK;
        rec.u.track.pid = t->pid;
        rec.u.track.tid = t->tid;
        rec.u.track.name = t->name;
        return emit(r, &rec) ? 1 : 0;
    }
    return 1;
}

#define MAX_ANN 64
#define MAX_FLOWS 16
#define MAX_EXTRA 16 /* extra counter values of one event kept (ours: at most 3) */

struct pf_event {
    uint64_t type, track;
    const char *cat, *name;
    int has_value;
    double value;
    unsigned nann;
    const char *ann_name[MAX_ANN];
    arg_value_t ann[MAX_ANN];
    unsigned nflow, nterm;
    uint64_t flow[MAX_FLOWS], term[MAX_FLOWS];
    /* extra counters: [0] whole values (int64), [1] doubles; tracks and values in order */
    unsigned nxt[2], nxv[2];
    uint64_t xtrack[2][MAX_EXTRA], xval[2][MAX_EXTRA];
};
typedef struct pf_event pf_event_t;

static void add_ids(uint64_t *ids, unsigned *n, const pb_field_t *f)
{
    if (f->wire == PB_LEN) { /* packed */
        pb_in_t in = {f->data, f->data + f->len};
        while (in.p + 8 <= in.end && *n < MAX_FLOWS) {
            uint64_t v = 0;
            for (int i = 0; i < 8; i++)
                v |= (uint64_t)in.p[i] << (8 * i);
            in.p += 8;
            ids[(*n)++] = v;
        }
    } else if (*n < MAX_FLOWS) {
        ids[(*n)++] = f->v;
    }
}

/* A repeated scalar, unpacked (one field each, as Perfetto's proto declares them) or packed:
 * varints, or fixed64 when `fixed`. */
static void add_scalars(uint64_t *vals, unsigned *n, const pb_field_t *f, int fixed)
{
    if (f->wire == PB_LEN) {
        pb_in_t in = {f->data, f->data + f->len};
        while (in.p < in.end && *n < MAX_EXTRA &&
               !(fixed ? pb_get_fixed(&in, 8, &vals[*n]) : pb_get_varint(&in, &vals[*n])))
            (*n)++;
    } else if (*n < MAX_EXTRA && f->wire == (fixed ? PB_I64 : PB_VARINT)) {
        vals[(*n)++] = f->v;
    }
}

static int read_annotation(pf_reader_t *r, pf_event_t *ev, const unsigned char *p, size_t n)
{
    pb_in_t in = {p, p + n};
    pb_field_t f;
    int k;
    const char *name = NULL;
    arg_value_t v;
    memset(&v, 0, sizeof v);
    int has = 0;
    while ((k = pb_next(&in, &f)) > 0) {
        switch (f.field) {
        case PF_DA_NAME_IID: name = get_iid(r, TBL_ANNOTATION, f.v); break;
        case PF_DA_NAME: name = arena_str(r, f.data, f.len); break;
        case PF_DA_BOOL:
        case PF_DA_UINT:
        case PF_DA_INT:
            v.u = f.v;
            has = 1;
            break;
        case PF_DA_DOUBLE:
            memcpy(&v.d, &f.v, sizeof v.d);
            v.is_double = 1;
            has = 1;
            break;
        case PF_DA_STRING:
            if (f.wire == PB_LEN) {
                v.is_text = 1;
                v.text = arena_str(r, f.data, f.len);
                v.len = f.len;
                has = 1;
            }
            break;
        case PF_DA_STRING_IID:
            if (f.wire == PB_VARINT) {
                v.is_text = 1;
                v.text = get_iid(r, TBL_STRING_VALUE, f.v);
                v.len = v.text ? strlen(v.text) : 0;
                has = v.text != NULL;
            }
            break;
        default: break;
        }
    }
    if (k < 0)
        return -1;
    if (name && has && ev->nann < MAX_ANN) {
        ev->ann_name[ev->nann] = name;
        ev->ann[ev->nann++] = v;
    }
    return 0;
}

static int read_event(pf_reader_t *r, pf_event_t *ev, const unsigned char *p, size_t n)
{
    pb_in_t in = {p, p + n};
    pb_field_t f;
    int k;
    while ((k = pb_next(&in, &f)) > 0) {
        switch (f.field) {
        case PF_TE_TYPE: ev->type = f.v; break;
        case PF_TE_TRACK_UUID: ev->track = f.v; break;
        case PF_TE_CATEGORY_IIDS:
            if (f.wire == PB_VARINT)
                ev->cat = get_iid(r, TBL_CATEGORY, f.v);
            break;
        case PF_TE_CATEGORIES:
            if (f.wire == PB_LEN)
                ev->cat = arena_str(r, f.data, f.len);
            break;
        case PF_TE_NAME_IID: ev->name = get_iid(r, TBL_NAME, f.v); break;
        case PF_TE_NAME:
            if (f.wire == PB_LEN)
                ev->name = arena_str(r, f.data, f.len);
            break;
        case PF_TE_DEBUG:
            if (f.wire == PB_LEN && read_annotation(r, ev, f.data, f.len))
                return -1;
            break;
        case PF_TE_COUNTER_VALUE:
            ev->has_value = 1;
            ev->value = (double)(int64_t)f.v;
            break;
        case PF_TE_DOUBLE_COUNTER_VALUE:
            ev->has_value = 1;
            memcpy(&ev->value, &f.v, sizeof ev->value);
            break;
        case PF_TE_EXTRA_COUNTER_UUIDS: add_scalars(ev->xtrack[0], &ev->nxt[0], &f, 0); break;
        case PF_TE_EXTRA_COUNTER_VALUES: add_scalars(ev->xval[0], &ev->nxv[0], &f, 0); break;
        case PF_TE_EXTRA_DOUBLE_COUNTER_UUIDS:
            add_scalars(ev->xtrack[1], &ev->nxt[1], &f, 0);
            break;
        case PF_TE_EXTRA_DOUBLE_COUNTER_VALUES:
            add_scalars(ev->xval[1], &ev->nxv[1], &f, 1);
            break;
        case PF_TE_FLOW_IDS:
        case 36: add_ids(ev->flow, &ev->nflow, &f); break;
        case PF_TE_TERMINATING_FLOW_IDS:
        case 42: add_ids(ev->term, &ev->nterm, &f); break;
        default: break;
        }
    }
    return k < 0 ? -1 : 0;
}

static int ann_u64(const pf_event_t *ev, const char *key, uint64_t *out)
{
    for (unsigned i = 0; i < ev->nann; i++)
        if (strcmp(ev->ann_name[i], key) == 0 && !ev->ann[i].is_text) {
            double d = ev->ann[i].d;
            if (ev->ann[i].is_double && !(d >= 0 && d < 18446744073709551616.0))
                return -1; /* not a time (negative, too large, NaN): a damaged file */
            *out = ev->ann[i].is_double ? (uint64_t)d : ev->ann[i].u;
            return 0;
        }
    return -1;
}

/* Returns the fields set, a bit per field index. */
static uint64_t set_fields(const pf_event_t *ev, const trc_field_t *f, unsigned nf, void *base)
{
    uint64_t set = 0;
    for (unsigned i = 0; i < ev->nann; i++) {
        int k = trc_set_field(f, nf, base, ev->ann_name[i], strlen(ev->ann_name[i]), &ev->ann[i]);
        if (k >= 0 && k < 64)
            set |= 1ull << k;
    }
    return set;
}

/* Operands sent as a template and its numbers (pftrace_writer.c put_operands): each '#' of
 * the template takes the next space-separated value. Returns -1 when out of memory. */
static int rebuild_operands(pf_reader_t *r, const pf_event_t *ev, const trc_field_t *f,
                            unsigned nf, void *base)
{
    const arg_value_t *vals = NULL;
    for (unsigned i = 0; i < ev->nann && !vals; i++)
        if (ev->ann[i].is_text && strcmp(ev->ann_name[i], "operand_values") == 0)
            vals = &ev->ann[i];
    if (!vals)
        return 0;
    for (unsigned i = 0; i < nf; i++) {
        if (f[i].type != TRC_FT_STR || strcmp(f[i].key, "operands") != 0)
            continue;
        const char *t;
        memcpy(&t, (unsigned char *)base + f[i].offset, sizeof t);
        if (!t)
            return 0;
        size_t need = strlen(t) + vals->len + 1;
        if (need > r->ops_cap) {
            char *p = realloc(r->ops, need);
            if (!p)
                return -1;
            r->ops = p;
            r->ops_cap = need;
        }
        const char *v = vals->text, *vend = vals->text + vals->len;
        size_t k = 0;
        for (; *t; t++) {
            if (*t != '#' || v >= vend) {
                r->ops[k++] = *t;
                continue;
            }
            while (v < vend && *v != ' ')
                r->ops[k++] = *v++;
            if (v < vend)
                v++;
        }
        r->ops[k] = '\0';
        const char *out = r->ops;
        memcpy((unsigned char *)base + f[i].offset, &out, sizeof out);
    }
    return 0;
}

/* A flow end on this event: pair it, emit when complete. The destination is a slice of
 * another category than the source, so ends pair on the id alone; the flow reports the
 * source's category and name. */
static int flow_end(pf_reader_t *r, const pf_event_t *ev, const pf_track_t *t, uint64_t ts_ps,
                    uint64_t id, int is_end)
{
    flow_end_t e;
    memset(&e, 0, sizeof e);
    e.id = id;
    e.pid = t->pid;
    e.tid = t->tid;
    e.ts_ps = ts_ps;
    e.is_end = (uint8_t)is_end;
    snprintf(e.cat, sizeof e.cat, "flow");
    if (!is_end) {
        snprintf(e.label, sizeof e.label, "%s", ev->cat ? ev->cat : "");
        snprintf(e.name, sizeof e.name, "%s", ev->name ? ev->name : "");
    }
    trc_record_t rec;
    memset(&rec, 0, sizeof rec);
    rec.kind = TRC_REC_FLOW;
    int k = flowpair_add(&r->flows, &e, &rec.u.flow);
    if (k < 0) {
        r->oom = 1;
        return -1;
    }
    if (k && !emit(r, &rec))
        return 1;
    return 0;
}

/* One TracePacket. Returns 0 to go on, 1 to stop, -1 on error (r->bad or r->oom). */
static int read_packet(pf_reader_t *r, const unsigned char *p, size_t n)
{
    pb_in_t in = {p, p + n};
    pb_field_t f;
    int k;
    uint64_t ts_ns = 0;
    const unsigned char *te = NULL, *td = NULL;
    size_t tel = 0, tdl = 0;
    if (arena_reserve(r, n))
        return -1;
    /* interned data first (it may follow the event in the packet), then the rest */
    while ((k = pb_next(&in, &f)) > 0) {
        if (f.field == PF_PKT_TIMESTAMP && f.wire == PB_VARINT)
            ts_ns = f.v;
        else if (f.field == PF_PKT_SEQ_FLAGS && f.wire == PB_VARINT && (f.v & PF_SEQ_CLEARED))
            clear_iids(r);
        else if (f.field == PF_PKT_INTERNED && f.wire == PB_LEN) {
            if (read_interned(r, f.data, f.len) < 0) {
                if (!r->oom)
                    snprintf(r->bad, sizeof r->bad, "malformed interned data");
                return -1;
            }
        } else if (f.field == PF_PKT_TRACK_EVENT && f.wire == PB_LEN) {
            te = f.data;
            tel = f.len;
        } else if (f.field == PF_PKT_TRACK_DESCRIPTOR && f.wire == PB_LEN) {
            td = f.data;
            tdl = f.len;
        }
    }
    if (k < 0) {
        snprintf(r->bad, sizeof r->bad, "malformed packet");
        return -1;
    }
    if (td) {
        int d = read_descriptor(r, td, tdl);
        if (d < 0) {
            if (!r->oom)
                snprintf(r->bad, sizeof r->bad, "malformed track descriptor");
            return -1;
        }
        if (d == 0)
            return 1;
    }
    if (!te)
        return 0;
    /* one event reused for every packet: only its counts and scalars need clearing (the
     * annotation arrays are a few kB) */
    pf_event_t *ev = r->ev;
    if (!ev) {
        ev = r->ev = malloc(sizeof *ev);
        if (!ev) {
            r->oom = 1;
            return -1;
        }
    }
    ev->type = ev->track = 0;
    ev->cat = ev->name = NULL;
    ev->has_value = 0;
    ev->value = 0;
    ev->nann = ev->nflow = ev->nterm = 0;
    ev->nxt[0] = ev->nxt[1] = ev->nxv[0] = ev->nxv[1] = 0;
    int rc = 0;
    if (read_event(r, ev, te, tel)) {
        snprintf(r->bad, sizeof r->bad, "malformed track event");
        rc = -1;
        goto out;
    }
    const pf_track_t *t = find_track(r, ev->track);
    if (!t) {
        snprintf(r->bad, sizeof r->bad, "track event on undeclared track %llu",
                 (unsigned long long)ev->track);
        rc = -1;
        goto out;
    }
    trc_record_t rec;
    memset(&rec, 0, sizeof rec);
    /* the exact time: ts_ps (older traces), or the picoseconds past the whole nanosecond */
    uint64_t ts_ps = ts_ns * 1000, exact;
    if (ann_u64(ev, "ts_ps", &exact) == 0)
        ts_ps = exact;
    else if (ann_u64(ev, "ts_extra_ps", &exact) == 0 && exact < 1000)
        ts_ps += exact;
    const char *cat = ev->cat ? ev->cat : "";
    if (ev->type == PF_TYPE_INSTANT && strcmp(cat, "run") == 0) {
        rec.kind = TRC_REC_RUN;
        unsigned nf;
        const trc_field_t *fd = trc_run_fields(&nf);
        set_fields(ev, fd, nf, &rec.u.run);
        if (!emit(r, &rec))
            rc = 1;
    } else if (ev->type == PF_TYPE_SLICE_BEGIN) {
        trc_slice_kind_t kind = trc_slice_kind_lookup(cat, strlen(cat));
        for (unsigned i = 0; i < ev->nterm && !rc; i++)
            rc = flow_end(r, ev, t, ts_ps, ev->term[i], 1);
        if (kind != TRC_SLICE_KIND_COUNT && !rc) {
            trc_slice_t *s = &rec.u.slice;
            rec.kind = TRC_REC_SLICE;
            s->kind = (uint8_t)kind;
            s->pid = t->pid;
            s->tid = t->tid;
            s->ts_ps = ts_ps;
            s->name = ev->name ? ev->name : "";
            if (ann_u64(ev, "dur_ps", &s->dur_ps)) {
                snprintf(r->bad, sizeof r->bad, "slice '%s' without dur_ps", s->name);
                rc = -1;
                goto out;
            }
            unsigned nf;
            const trc_field_t *fd = trc_slice_fields(kind, &nf);
            trc_pf_restore(s, set_fields(ev, fd, nf, &s->a), r->side);
            if (rebuild_operands(r, ev, fd, nf, &s->a)) {
                r->oom = 1;
                rc = -1;
                goto out;
            }
            if (!emit(r, &rec))
                rc = 1;
        }
    } else if (ev->type == PF_TYPE_INSTANT) {
        for (unsigned i = 0; i < ev->nflow && !rc; i++)
            rc = flow_end(r, ev, t, ts_ps, ev->flow[i], 0);
        for (unsigned i = 0; i < ev->nterm && !rc; i++)
            rc = flow_end(r, ev, t, ts_ps, ev->term[i], 1);
    } else if (ev->type == PF_TYPE_COUNTER && ev->has_value && t->kind == TK_COUNTER) {
        rec.kind = TRC_REC_COUNTER;
        rec.u.counter.pid = t->pid;
        rec.u.counter.name = t->name;
        rec.u.counter.unit = t->unit;
        rec.u.counter.ts_ps = ts_ps;
        rec.u.counter.value = ev->value;
        if (!emit(r, &rec))
            rc = 1;
    }
    /* extra counters of the event (any type): whole values, then doubles, each on its own
     * counter track at the event's time; pairs without a counter track are left out */
    for (int d = 0; d < 2 && !rc; d++) {
        unsigned nx = ev->nxt[d] < ev->nxv[d] ? ev->nxt[d] : ev->nxv[d];
        for (unsigned i = 0; i < nx && !rc; i++) {
            const pf_track_t *xt = find_track(r, ev->xtrack[d][i]);
            if (!xt || xt->kind != TK_COUNTER)
                continue;
            memset(&rec, 0, sizeof rec);
            rec.kind = TRC_REC_COUNTER;
            rec.u.counter.pid = xt->pid;
            rec.u.counter.name = xt->name;
            rec.u.counter.unit = xt->unit;
            rec.u.counter.ts_ps = ts_ps;
            if (d)
                memcpy(&rec.u.counter.value, &ev->xval[d][i], sizeof rec.u.counter.value);
            else
                rec.u.counter.value = (double)(int64_t)ev->xval[d][i];
            if (!emit(r, &rec))
                rc = 1;
        }
    }
out:
    return rc;
}

/* ---- the stream ------------------------------------------------------------------------------------ */

typedef struct pf_stream {
    trc_src_t *src;
    unsigned char *buf;
    size_t len, pos, cap;
    int eof, ioerr;
} pf_stream_t;

/* Make at least `need` bytes available from pos; 0 when they are, -1 at end of input. */
static int stream_fill(pf_stream_t *s, size_t need)
{
    while (s->len - s->pos < need) {
        if (s->eof)
            return -1;
        if (s->pos) {
            memmove(s->buf, s->buf + s->pos, s->len - s->pos);
            s->len -= s->pos;
            s->pos = 0;
        }
        /* grow as the bytes arrive, not to `need` at once: a damaged length field may claim
         * a gigabyte in a file of a few kilobytes (found by fuzz_pftrace) */
        if (s->cap - s->len < (1u << 16)) {
            size_t cap = s->cap ? s->cap * 2 : (size_t)1 << 17;
            unsigned char *b = realloc(s->buf, cap);
            if (!b)
                return -2;
            s->buf = b;
            s->cap = cap;
        }
        int got = gzread(s->src->gz, s->buf + s->len, (unsigned)(s->cap - s->len));
        if (got < 0) {
            s->ioerr = 1;
            return -1;
        }
        if (got == 0) {
            int code = Z_OK;
            gzerror(s->src->gz, &code);
            if (code == Z_BUF_ERROR) { /* a gzip stream cut short */
                s->ioerr = 1;
                return -1;
            }
            s->eof = 1;
        }
        s->len += (size_t)got;
    }
    return 0;
}

ncsim_status_t trc_read_pftrace(trc_src_t *src, const unsigned char *head, size_t nhead,
                                trc_record_fn fn, void *ctx, char *err, size_t errlen)
{
    pf_reader_t r;
    memset(&r, 0, sizeof r);
    r.fn = fn;
    r.ctx = ctx;
    pf_stream_t s;
    memset(&s, 0, sizeof s);
    s.src = src;
    s.cap = 1u << 18;
    s.buf = malloc(s.cap);
    ncsim_status_t st = NCSIM_OK;
    if (!s.buf) {
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    memcpy(s.buf, head, nhead);
    s.len = nhead;
    uint64_t offset = 0;
    for (;;) {
        if (stream_fill(&s, 1) != 0)
            break; /* clean end */
        /* tag (1 byte for field 1 LEN) and a length varint of at most 10 bytes */
        stream_fill(&s, 11);
        pb_in_t in = {s.buf + s.pos, s.buf + s.len};
        pb_field_t f;
        unsigned char tag = s.buf[s.pos];
        uint64_t len = 0;
        const unsigned char *p = in.p + 1;
        int shift = 0, ok = 0;
        while (p < in.end && shift < 64) {
            len |= (uint64_t)(*p & 0x7f) << shift;
            shift += 7;
            if (!(*p++ & 0x80)) {
                ok = 1;
                break;
            }
        }
        (void)f;
        if (tag != ((PF_TRACE_PACKET << 3) | PB_LEN) || !ok || len > (1u << 30)) {
            snprintf(err, errlen, "%s: byte %llu: not a Perfetto trace packet", src->path,
                     (unsigned long long)offset);
            st = NCSIM_FORMAT;
            break;
        }
        size_t hdr = (size_t)(p - (s.buf + s.pos));
        int fr = stream_fill(&s, hdr + (size_t)len);
        if (fr == -2) {
            st = NCSIM_NOMEM;
            snprintf(err, errlen, "out of memory");
            break;
        }
        if (fr) {
            snprintf(err, errlen, "%s: byte %llu: truncated packet", src->path,
                     (unsigned long long)offset);
            st = s.ioerr ? NCSIM_IO : NCSIM_FORMAT;
            break;
        }
        int rc = read_packet(&r, s.buf + s.pos + hdr, (size_t)len);
        if (rc < 0) {
            if (r.oom) {
                st = NCSIM_NOMEM;
                snprintf(err, errlen, "out of memory");
            } else {
                st = NCSIM_FORMAT;
                snprintf(err, errlen, "%s: byte %llu: %s", src->path, (unsigned long long)offset,
                         r.bad);
            }
            break;
        }
        if (rc > 0 || r.stop)
            break;
        s.pos += hdr + (size_t)len;
        offset += hdr + len;
    }
    if (st == NCSIM_OK && s.ioerr) {
        int code;
        snprintf(err, errlen, "%s: %s", src->path, gzerror(src->gz, &code));
        st = NCSIM_IO;
    }
    clear_iids(&r);
    for (size_t i = 0; i < r.ntracks; i++) {
        free(r.tracks[i].name);
        free(r.tracks[i].unit);
    }
    free(r.tracks);
    free(r.index);
    flowpair_free(&r.flows);
    free(r.arena);
    free(r.ops);
    free(r.ev);
    free(s.buf);
    return st;
}
