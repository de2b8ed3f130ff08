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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

/* ---- interning ------------------------------------------------------------------------------------ */

typedef struct intern_entry {
    char *s;
    uint64_t hash;
    uint64_t iid;
} intern_entry_t;

typedef struct intern {
    intern_entry_t *e;
    size_t cap, n;
} intern_t;

/* A hash of n bytes, eight at a time (cost texts are a few hundred bytes long and every
 * slice carries some: a byte-wise hash was a fifth of a trace's time). */
static uint64_t hash_mem(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 32);
}

/* iid of s (1-based), *is_new set when it was added now (then *copy_out is the table's
 * copy when copy_out is not NULL); 0 when out of memory. */
static uint64_t intern_get2(intern_t *t, const char *s, int *is_new, const char **copy_out)
{
    *is_new = 0;
    if ((t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        intern_entry_t *e = calloc(cap, sizeof *e);
        if (!e)
            return 0;
        for (size_t i = 0; i < t->cap; i++)
            if (t->e[i].s) {
                size_t j = t->e[i].hash & (cap - 1);
                while (e[j].s)
                    j = (j + 1) & (cap - 1);
                e[j] = t->e[i];
            }
        free(t->e);
        t->e = e;
        t->cap = cap;
    }
    size_t n = strlen(s);
    uint64_t h = hash_mem(s, n);
    size_t j = h & (t->cap - 1);
    while (t->e[j].s) {
        if (t->e[j].hash == h && memcmp(t->e[j].s, s, n + 1) == 0) {
            if (copy_out)
                *copy_out = t->e[j].s;
            return t->e[j].iid;
        }
        j = (j + 1) & (t->cap - 1);
    }
    char *copy = malloc(n + 1);
    if (!copy)
        return 0;
    memcpy(copy, s, n + 1);
    t->e[j].s = copy;
    t->e[j].hash = h;
    t->e[j].iid = ++t->n;
    *is_new = 1;
    if (copy_out)
        *copy_out = copy;
    return t->e[j].iid;
}

static uint64_t intern_get(intern_t *t, const char *s, int *is_new)
{
    return intern_get2(t, s, is_new, NULL);
}

static void intern_free(intern_t *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->e[i].s);
    free(t->e);
}

/* Strings the caller promises to keep unchanged until the writer closes (trc_slice_t.stable)
 * are known by their address: (a, b, c) -> v, never removed. Strings: (text, NULL, table) ->
 * iid; counter tracks: (name, unit, pid) -> track uuid. */
typedef struct ptr_entry {
    const void *a, *b;
    uint64_t c, v;
} ptr_entry_t;

typedef struct ptr_map {
    ptr_entry_t *e;
    size_t cap, n;
} ptr_map_t;

static size_t ptr_slot(const void *a, const void *b, uint64_t c, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)a * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uintptr_t)b * 0xc2b2ae3d27d4eb4full + c * 0x165667b19e3779f9ull;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* The value of (a, b, c), 0 when absent. */
static inline uint64_t ptr_get(const ptr_map_t *m, const void *a, const void *b, uint64_t c)
{
    if (!m->cap)
        return 0;
    for (size_t j = ptr_slot(a, b, c, m->cap);; j = (j + 1) & (m->cap - 1)) {
        const ptr_entry_t *e = &m->e[j];
        if (!e->a)
            return 0;
        if (e->a == a && e->b == b && e->c == c)
            return e->v;
    }
}

/* Add (a, b, c) -> v (not present yet); -1 when out of memory. */
static int ptr_put(ptr_map_t *m, const void *a, const void *b, uint64_t c, uint64_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        ptr_entry_t *e = calloc(cap, sizeof *e);
        if (!e)
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].a) {
                size_t j = ptr_slot(m->e[i].a, m->e[i].b, m->e[i].c, cap);
                while (e[j].a)
                    j = (j + 1) & (cap - 1);
                e[j] = m->e[i];
            }
        free(m->e);
        m->e = e;
        m->cap = cap;
    }
    size_t j = ptr_slot(a, b, c, m->cap);
    while (m->e[j].a)
        j = (j + 1) & (m->cap - 1);
    m->e[j] = (ptr_entry_t){a, b, c, v};
    m->n++;
    return 0;
}

/* ---- state ------------------------------------------------------------------------------------------ */

enum { TBL_CATEGORY, TBL_NAME, TBL_ANNOTATION, TBL_STRING_VALUE, TBL_COUNT };
/* the key of a stable operand text sent whole in the string map (see put_operands) */
#define OPERANDS_WHOLE TBL_COUNT

typedef struct pending_intern {
    uint8_t table;
    uint64_t iid;
    const char *s;
} pending_intern_t;

typedef struct pending_flow {
    uint64_t track, ts_ps, id;
    uint64_t cat_iid, name_iid; /* the source's, for an instant that ends it alone */
} pending_flow_t;

/* Counter tracks by (pid, name, unit) as the caller passes them: a direct-mapped memo in
 * front of the interning table (which needs a formatted key). */
typedef struct counter_memo {
    uint32_t pid;
    const char *name_ptr, *unit_ptr;
    char name[48], unit[16];
    uint64_t uuid;
} counter_memo_t;

#define COUNTER_MEMO 256u

typedef struct str_memo {
    const char *ptr, *copy;
    uint64_t iid;
    int table;
} str_memo_t;

#define STR_MEMO 1024u
#define HOT_STR 512u
#define HOT_COUNTER 64u
#define OPERANDS_MAX 2048

typedef struct pf_state {
    pb_buf_t pkt;
    pb_buf_t ev; /* a TrackEvent's body, composed before its packet */
    counter_memo_t memo[COUNTER_MEMO];
    str_memo_t smemo[STR_MEMO];
    intern_t tables[TBL_COUNT];
    intern_t counters; /* "pid\x1fname\x1funit" -> counter track number */
    ptr_map_t stable_str;      /* stable strings -> iid */
    ptr_map_t stable_counters; /* stable counter names -> track uuid */
    /* small direct-mapped memos in front of them, which stay in the first-level cache while
     * megabytes of output stream past (the maps would not) */
    struct {
        const char *s;
        uint32_t table, iid;
    } hot_str[HOT_STR];
    struct {
        const char *name, *unit;
        uint32_t pid;
        uint64_t uuid;
    } hot_counter[HOT_COUNTER];
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
    uint64_t kind_scaled[TRC_SLICE_KIND_COUNT][32][2]; /* 0: not interned yet */
    uint64_t ts_iid, dur_iid, values_iid;
    /* by track (its uuid's low bits): the bytes the lengths of its last slice's begin packet
     * took (2 to 4) */
    uint8_t len_guess[64];
    const trc_slice_t *slice; /* the slice being written */
    char tmpl[OPERANDS_MAX], vals[OPERANDS_MAX];
} pf_state_t;

static uint64_t iid_of(pf_state_t *st, int table, const char *s)
{
    int is_new;
    const char *copy = "";
    if (!s)
        s = "";
    /* string values mostly come from the same few pointers (the sink's caches): a memo by
     * pointer, checked against the interned copy, skips the hash */
    str_memo_t *mo = NULL;
    if (s != st->tmpl) {
        uintptr_t k = (uintptr_t)s;
        mo = &st->smemo[(k ^ (k >> 11) ^ (k >> 23) ^ (uintptr_t)table * 977u) & (STR_MEMO - 1)];
        if (mo->ptr == s && mo->table == table && strcmp(mo->copy, s) == 0)
            return mo->iid;
    }
    uint64_t iid = intern_get2(&st->tables[table], s, &is_new, &copy);
    if (mo && iid) {
        mo->ptr = s;
        mo->table = table;
        mo->copy = copy;
        mo->iid = iid;
    }
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
        p->s = copy; /* the table's copy: the caller's string may be gone by packet_begin */
    }
    return iid;
}

/* The slot of stable string s of `table` in the hot memo. */
static inline unsigned hot_slot(const char *s, int table)
{
    uintptr_t k = (uintptr_t)s;
    return (unsigned)((k >> 3) ^ (k >> 11) ^ (uintptr_t)table * 37u) & (HOT_STR - 1);
}

/* iid_stable past its memo: the map of addresses, then the text (the first time). */
static __attribute__((noinline)) uint64_t iid_stable_slow(pf_state_t *st, int table, const char *s)
{
    unsigned slot = hot_slot(s, table);
    uint64_t iid = ptr_get(&st->stable_str, s, NULL, (uint64_t)table);
    if (!iid) {
        iid = iid_of(st, table, s);
        if (iid && ptr_put(&st->stable_str, s, NULL, (uint64_t)table, iid))
            st->oom = 1;
    }
    if (iid && iid <= UINT32_MAX) {
        st->hot_str[slot].s = s;
        st->hot_str[slot].table = (uint32_t)table;
        st->hot_str[slot].iid = (uint32_t)iid;
    }
    return iid;
}

/* iid of a string that stays unchanged until the writer closes: by its address, the text is
 * read only the first time. The memo's hit is inlined (two per slice: a call that saved and
 * restored the registers of the slow path cost more than the look-up). */
static inline uint64_t iid_stable(pf_state_t *st, int table, const char *s)
{
    if (!s)
        s = "";
    unsigned slot = hot_slot(s, table);
    if (st->hot_str[slot].s == s && st->hot_str[slot].table == (uint32_t)table)
        return st->hot_str[slot].iid;
    return iid_stable_slow(st, table, s);
}

/* A string of the slice being written (st->slice): by address when the slice is stable. */
static inline uint64_t slice_iid(pf_state_t *st, int table, const char *s)
{
    return st->slice && st->slice->stable ? iid_stable(st, table, s) : iid_of(st, table, s);
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
                                                        PF_ID_ANNOTATION_NAMES,
                                                        PF_ID_STRING_VALUES};
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

/* The debug annotations of an args struct: one per field, zero fields skipped unless the
 * table says `always`. Name iids are taken before the packet starts (see collect_names). */
static void annotations(pf_state_t *st, const trc_field_t *f, unsigned nf, const void *base,
                        const uint64_t *name_iids)
{
    for (unsigned i = 0; i < nf; i++) {
        uint64_t u;
        double d;
        const char *s;
        if (!trc_get_field(&f[i], base, &u, &d, &s))
            continue;
        size_t a = pb_begin(&st->pkt, PF_TE_DEBUG);
        pb_varint_field(&st->pkt, PF_DA_NAME_IID, name_iids[i]);
        switch (f[i].type) {
        case TRC_FT_U64: pb_varint_field(&st->pkt, PF_DA_UINT, u); break;
        case TRC_FT_PS: pb_double_field(&st->pkt, PF_DA_DOUBLE, (double)u / 1000.0); break;
        case TRC_FT_F64: pb_double_field(&st->pkt, PF_DA_DOUBLE, d); break;
        default: pb_string_field(&st->pkt, PF_DA_STRING, s); break;
        }
        pb_end(&st->pkt, a);
    }
}

static void collect_names(pf_state_t *st, const trc_field_t *f, unsigned nf, uint64_t *iids)
{
    for (unsigned i = 0; i < nf; i++)
        iids[i] = iid_of(st, TBL_ANNOTATION, f[i].key);
}

/* Slices carry times as integer picoseconds: "ii_ns" is sent as "ii_ps" (a varint of a few
 * bytes instead of a double of eight; the reader takes both). */
static void collect_slice_names(pf_state_t *st, const trc_field_t *f, unsigned nf,
                                uint64_t *iids)
{
    for (unsigned i = 0; i < nf; i++) {
        char key[64];
        size_t n = strlen(f[i].key);
        if (f[i].type == TRC_FT_PS && n > 3 && n < sizeof key &&
            strcmp(f[i].key + n - 3, "_ns") == 0) {
            memcpy(key, f[i].key, n - 3);
            memcpy(key + n - 3, "_ps", 4);
            iids[i] = iid_of(st, TBL_ANNOTATION, key);
        } else {
            iids[i] = iid_of(st, TBL_ANNOTATION, f[i].key);
        }
    }
}

/* ---- the fast path: a TrackEvent composed with plain stores, then its packet -------------------- */

static inline unsigned char *w_ann_u64(unsigned char *p, uint64_t iid, uint64_t v);
static inline unsigned char *w_ann_double(unsigned char *p, uint64_t iid, double v);

static inline unsigned char *w_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static inline unsigned char *w_tag(unsigned char *p, uint32_t field, unsigned wire)
{
    return w_varint(p, (uint64_t)field << 3 | wire);
}

static inline unsigned char *w_fixed64(unsigned char *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8); /* protobuf's fixed64 is little-endian: one store */
    return p + 8;
#else
    for (int i = 0; i < 8; i++)
        *p++ = (unsigned char)(v >> (8 * i));
    return p;
#endif
}

static inline unsigned char *w_double(unsigned char *p, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return w_fixed64(p, bits);
}

/* A debug annotation {name_iid, uint_value}. */
static inline unsigned char *w_ann_u64(unsigned char *p, uint64_t iid, uint64_t v)
{
    *p++ = (unsigned char)(PF_TE_DEBUG << 3 | PB_LEN);
    unsigned char *len = p++;
    unsigned char *q = w_tag(p, PF_DA_NAME_IID, PB_VARINT);
    q = w_varint(q, iid);
    q = w_tag(q, PF_DA_UINT, PB_VARINT);
    q = w_varint(q, v);
    *len = (unsigned char)(q - p); /* at most 24 bytes */
    return q;
}

static inline unsigned char *w_ann_double(unsigned char *p, uint64_t iid, double v)
{
    *p++ = (unsigned char)(PF_TE_DEBUG << 3 | PB_LEN);
    unsigned char *len = p++;
    unsigned char *q = w_tag(p, PF_DA_NAME_IID, PB_VARINT);
    q = w_varint(q, iid);
    q = w_tag(q, PF_DA_DOUBLE, PB_I64);
    q = w_double(q, v);
    *len = (unsigned char)(q - p);
    return q;
}

static inline unsigned char *w_ann_str(unsigned char *p, uint64_t iid, const char *s, size_t n)
{
    size_t inner = 1 + pb_varint_size(iid) + 1 + pb_varint_size(n) + n;
    p = w_tag(p, PF_TE_DEBUG, PB_LEN);
    p = w_varint(p, inner);
    p = w_tag(p, PF_DA_NAME_IID, PB_VARINT);
    p = w_varint(p, iid);
    p = w_tag(p, PF_DA_STRING, PB_LEN);
    p = w_varint(p, n);
    memcpy(p, s, n);
    return p + n;
}


/* The name iid of real field `fi` of the slice being written sent times 1000 (scale 0) or
 * 10^6 (scale 1): "gbps_x1000", interned when first needed. */
static uint64_t scaled_iid(pf_state_t *st, unsigned fi, int scale)
{
    uint64_t *iid = &st->kind_scaled[st->slice->kind][fi][scale];
    if (!*iid) {
        unsigned nf;
        const trc_field_t *f = trc_slice_fields((trc_slice_kind_t)st->slice->kind, &nf);
        char key[64];
        snprintf(key, sizeof key, "%s%s", fi < nf ? f[fi].key : "", scale ? "_x1e6" : "_x1000");
        *iid = iid_of(st, TBL_ANNOTATION, key);
    }
    return *iid;
}

/* A slice's real: a whole number below 2^53 (engines, bytes per piece), a varint; one that is
 * exactly n / 1000 or n / 10^6 (rates rounded to 1 MB/s, shares to 0.1 %, efficiencies to
 * 10^-6), the varint n under the field's name with "_x1000" or "_x1e6" (three bytes instead
 * of eight); otherwise a double. The reader takes each for a real field. */
static inline unsigned char *w_ann_real(pf_state_t *st, unsigned char *p, uint64_t iid,
                                        unsigned fi, double v)
{
    if (v >= 0 && v < 9007199254740992.0 && v == (double)(uint64_t)v)
        return w_ann_u64(p, iid, (uint64_t)v);
    if (v > 0 && v < 1e9) {
        /* the nearest integers (v * 10^6 < 2^53), a cheap test, then the reader's division */
        double m3 = v * 1000.0, k3 = (double)(uint64_t)(m3 + 0.5);
        if (fabs(m3 - k3) < 1e-3 && k3 / 1000.0 == v)
            return w_ann_u64(p, scaled_iid(st, fi, 0), (uint64_t)k3);
        double m6 = v * 1e6, k6 = (double)(uint64_t)(m6 + 0.5);
        if (fabs(m6 - k6) < 1e-3 && k6 / 1e6 == v)
            return w_ann_u64(p, scaled_iid(st, fi, 1), (uint64_t)k6);
    }
    return w_ann_double(p, iid, v);
}

/* A debug annotation {name_iid, string_value_iid}: a string value sent once per trace. */
static inline unsigned char *w_ann_istr(unsigned char *p, uint64_t iid, uint64_t siid)
{
    *p++ = (unsigned char)(PF_TE_DEBUG << 3 | PB_LEN);
    unsigned char *len = p++;
    unsigned char *q = w_tag(p, PF_DA_NAME_IID, PB_VARINT);
    q = w_varint(q, iid);
    q = w_tag(q, PF_DA_STRING_IID, PB_VARINT);
    q = w_varint(q, siid);
    *len = (unsigned char)(q - p);
    return q;
}

/* String values repeat (instructions' cost breakdowns, stall causes, semaphore, memory,
 * group and engine names): each is interned, sent once, then referred to by a varint.
 * Operand texts are split: what the disassembler prints before the first " | " and the
 * clause names repeat, the clauses' numbers do not ("| wait loaded >= 17"). Each number
 * token of the clauses becomes '#' in an interned template ("operands") and the numbers go
 * inline, space-separated ("operand_values": "17"); the reader puts them back. */
static unsigned char *put_operands(pf_state_t *st, unsigned char *p, uint64_t iid, const char *s)
{
    int stable = st->slice && st->slice->stable;
    if (stable) { /* a stable text seen before and sent whole */
        uint64_t siid = ptr_get(&st->stable_str, s, NULL, OPERANDS_WHOLE);
        if (siid)
            return w_ann_istr(p, iid, siid);
    }
    const char *bar = strstr(s, " | ");
    size_t n = strlen(s);
    if (!bar || n >= OPERANDS_MAX || memchr(s, '#', n)) {
        uint64_t siid = iid_of(st, TBL_STRING_VALUE, s);
        if (stable && siid && ptr_put(&st->stable_str, s, NULL, OPERANDS_WHOLE, siid))
            st->oom = 1;
        return w_ann_istr(p, iid, siid);
    }
    char *t = st->tmpl, *v = st->vals;
    size_t at = (size_t)(bar - s), nv = 0;
    memcpy(t, s, at);
    size_t k = at;
    /* the clauses, a space-separated token at a time (s[at] is the space before " | ") */
    while (at < n) {
        t[k++] = s[at++]; /* the space */
        const char *sp = memchr(s + at, ' ', n - at);
        size_t e = sp ? (size_t)(sp - s) : n, d = at + (s[at] == '-');
        int number = e > d;
        for (size_t q = d; q < e && number; q++)
            number = s[q] >= '0' && s[q] <= '9';
        if (number) {
            if (nv)
                v[nv++] = ' ';
            memcpy(v + nv, s + at, e - at);
            nv += e - at;
            t[k++] = '#';
        } else {
            memcpy(t + k, s + at, e - at);
            k += e - at;
        }
        at = e;
    }
    t[k] = '\0';
    p = w_ann_istr(p, iid, iid_of(st, TBL_STRING_VALUE, t));
    if (nv)
        p = w_ann_str(p, st->values_iid, v, nv);
    return p;
}

static unsigned char *put_str_value(pf_state_t *st, unsigned char *p, uint64_t iid,
                                    const char *v, int operands)
{
    const char *s = v ? v : "";
    if (operands && st->slice && st->slice->operands_tmpl && v == st->slice->operands_tmpl) {
        /* the simulator's template and numbers: as put_operands would split them */
        p = w_ann_istr(p, iid, slice_iid(st, TBL_STRING_VALUE, s));
        const char *vals = st->slice->operand_values ? st->slice->operand_values : "";
        if (*vals)
            p = w_ann_str(p, st->values_iid, vals, strlen(vals));
        return p;
    }
    if (operands)
        return put_operands(st, p, iid, s);
    return w_ann_istr(p, iid, slice_iid(st, TBL_STRING_VALUE, s));
}

/* A string value other than operands (stall cause, cost, semaphore, limit, issuer): interned,
 * inlined into each slice kind's writer (several per slice). */
static inline unsigned char *put_istr(pf_state_t *st, unsigned char *p, uint64_t iid,
                                      const char *v)
{
    return w_ann_istr(p, iid, slice_iid(st, TBL_STRING_VALUE, v ? v : ""));
}

/* The annotations of each slice kind, expanded from its field table at compile time (the
 * same as annotations() writes, without its loop); iids: the field names' iids in table
 * order. */
#define PSKIP_U64(v) ((v) == 0)
#define PSKIP_PS(v) ((v) == 0)
#define PSKIP_F64(v) ((v) == 0)
#define PSKIP_STR(v) (!(v) || !*(v))
#define PPUT_U64(p, iid, v, key) w_ann_u64(p, iid, v)
#define PPUT_PS(p, iid, v, key) w_ann_u64(p, iid, v)
#define PPUT_F64(p, iid, v, key) w_ann_real(st, p, iid, fi, v)
#define PPUT_STR(p, iid, v, key)                                                               \
    (strcmp(key, "operands") == 0 ? put_str_value(st, p, iid, v, 1) : put_istr(st, p, iid, v))
#define PFIELD(member, key, type, always)                                                      \
    if (!(implied >> fi & 1) && ((always) || !PSKIP_##type(a->member)))                        \
        p = PPUT_##type(p, iids[fi], a->member, key);                                          \
    fi++;
#define XX(ID, member_, cat, FIELDS)                                                           \
    static unsigned char *ann_##member_(pf_state_t *st, unsigned char *p,                      \
                                        const trc_##member_##_args_t *a, const uint64_t *iids, \
                                        uint64_t implied)                                      \
    {                                                                                          \
        unsigned fi = 0;                                                                       \
        const int kind_ = TRC_SLICE_##ID;                                                      \
        FIELDS(PFIELD)                                                                         \
        (void)fi, (void)kind_, (void)st;                                                       \
        return p;                                                                              \
    }
TRC_SLICE_KIND_MAP(XX)
#undef XX

/* Bytes the annotations of a slice take at most: 32 a field (strings are interned: a
 * varint; an operand text split by put_operands is counted apart, see write_slice). */
#define PROOMFIELD(member, key, type, always) +32
static const size_t kind_room[TRC_SLICE_KIND_COUNT] = {
#define XX(ID, member_, cat, FIELDS) [TRC_SLICE_##ID] = 0 FIELDS(PROOMFIELD),
    TRC_SLICE_KIND_MAP(XX)
#undef XX
};

/* implied: the fields left out (trc_pf_implied) */
static unsigned char *slice_annotations(pf_state_t *st, unsigned char *p, const trc_slice_t *s,
                                        const uint64_t *iids, uint64_t implied)
{
    switch ((trc_slice_kind_t)s->kind) {
#define XX(ID, member_, cat, FIELDS)                                                           \
    case TRC_SLICE_##ID: return ann_##member_(st, p, &s->a.member_, iids, implied);
        TRC_SLICE_KIND_MAP(XX)
#undef XX
    default: return p;
    }
}

/* A TrackEvent packet's fields after its own length, up to the event's tag (its length and
 * body follow): timestamp, sequence, the needs-state flag if asked. */
_Static_assert(TRC_PF_SEQUENCE < 128, "one-byte sequence id");
static inline unsigned char *w_event_head(unsigned char *q, uint64_t ts_ns, int needs_state)
{
    *q++ = PF_PKT_TIMESTAMP << 3 | PB_VARINT;
    q = w_varint(q, ts_ns);
    *q++ = PF_PKT_SEQ_ID << 3 | PB_VARINT;
    *q++ = TRC_PF_SEQUENCE;
    if (needs_state) {
        *q++ = PF_PKT_SEQ_FLAGS << 3 | PB_VARINT;
        *q++ = PF_SEQ_NEEDS_STATE;
    }
    *q++ = PF_PKT_TRACK_EVENT << 3 | PB_LEN;
    return q;
}

/* The bytes w_event_head writes. */
static inline size_t event_head_size(uint64_t ts_ns, int needs_state)
{
    return 1 + pb_varint_size(ts_ns) + 2 + (needs_state ? 2 : 0) + 1;
}

/* The packet around a TrackEvent body (st->ev). Interned strings still to be sent, the
 * first packet and very large events go through the general path. */
static ncsim_status_t emit_event(trc_writer_t *w, pf_state_t *st, uint64_t ts_ns,
                                 int needs_state)
{
    if (st->ev.failed || st->oom)
        return NCSIM_NOMEM;
    size_t nbody = st->ev.n;
    if (st->npend || st->first_packet || nbody > (1u << 16)) {
        packet_begin(st, 1, ts_ns, 1);
        pb_bytes_field(&st->pkt, PF_PKT_TRACK_EVENT, st->ev.p, nbody);
        return packet_end(w, st);
    }
    size_t len = event_head_size(ts_ns, needs_state) + pb_varint_size(nbody) + nbody;
    unsigned char *p = trc_out_reserve(&w->out, len + 8);
    unsigned char *q = p;
    q = w_tag(q, PF_TRACE_PACKET, PB_LEN);
    q = w_varint(q, len);
    q = w_event_head(q, ts_ns, needs_state);
    q = w_varint(q, nbody);
    memcpy(q, st->ev.p, nbody);
    q += nbody;
    trc_out_commit(&w->out, (size_t)(q - p));
    w->events++;
    return NCSIM_OK;
}

/* A small TrackEvent (counter values, slice ends, flow instants: at most SMALL_BODY bytes,
 * composed on the stack) and its packet, straight into the output: one-byte tags and lengths,
 * the body copied at a fixed size. Interned strings still to be sent and the first packet
 * take emit_event's general path. */
#define SMALL_BODY 96
static ncsim_status_t emit_small(trc_writer_t *w, pf_state_t *st, uint64_t ts_ns,
                                 int needs_state, const unsigned char *body, size_t nbody)
{
    if (st->npend || st->first_packet || nbody > SMALL_BODY) {
        st->ev.n = 0;
        if (pb_reserve(&st->ev, nbody))
            return NCSIM_NOMEM;
        memcpy(st->ev.p, body, nbody);
        st->ev.n = nbody;
        return emit_event(w, st, ts_ns, needs_state);
    }
    if (st->oom)
        return NCSIM_NOMEM;
    /* tag, length, timestamp (at most 11), sequence (2), flags (2), event tag and length (2)
     * and the body: below 128, so the lengths take a byte */
    _Static_assert(2 + 11 + 2 + 2 + 2 + SMALL_BODY < 128, "one-byte packet length");
    unsigned char *p = trc_out_reserve(&w->out, 2 + 11 + 6 + SMALL_BODY);
    unsigned char *q = p + 2;
    q = w_event_head(q, ts_ns, needs_state);
    *q++ = (unsigned char)nbody;
    memcpy(q, body, SMALL_BODY); /* the whole buffer: a fixed-size copy; the tail is not kept */
    q += nbody;
    p[0] = PF_TRACE_PACKET << 3 | PB_LEN;
    p[1] = (unsigned char)(q - p - 2);
    trc_out_commit(&w->out, (size_t)(q - p));
    w->events++;
    return NCSIM_OK;
}

/* A small TrackEvent composed in place, in the output buffer after its packet's header: no
 * copy of a body composed on the stack (whose byte stores a wide load could not take from the
 * store buffer: a stall on every counter value). Returns where the body goes, or NULL when
 * the packet must take the general path (interned strings to send, the first packet, out of
 * memory): the caller composes the body in a buffer of SMALL_BODY bytes and calls
 * emit_small. The body must stay within SMALL_BODY bytes; small_end closes the packet. */
static inline unsigned char *small_begin(trc_writer_t *w, pf_state_t *st, uint64_t ts_ns,
                                         int needs_state, unsigned char **pkt)
{
    if (st->npend || st->first_packet || st->oom)
        return NULL;
    unsigned char *p = trc_out_reserve(&w->out, 2 + 11 + 6 + SMALL_BODY);
    unsigned char *q = p + 2;
    q = w_event_head(q, ts_ns, needs_state);
    *pkt = p;
    return q + 1; /* after the body's length, a byte (set by small_end) */
}

static inline ncsim_status_t small_end(trc_writer_t *w, unsigned char *pkt,
                                       unsigned char *body, unsigned char *end)
{
    body[-1] = (unsigned char)(end - body);
    pkt[0] = PF_TRACE_PACKET << 3 | PB_LEN;
    pkt[1] = (unsigned char)(end - pkt - 2);
    trc_out_commit(&w->out, (size_t)(end - pkt));
    w->events++;
    return NCSIM_OK;
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
                                    uint64_t ts_ps, uint64_t cat_iid, uint64_t name_iid,
                                    uint64_t flow, int terminating)
{
    if (!st->ts_iid)
        st->ts_iid = iid_of(st, TBL_ANNOTATION, "ts_extra_ps");
    uint64_t ts_iid = st->ts_iid;
    unsigned char body[SMALL_BODY], *pkt, *b = small_begin(w, st, ts_ps / 1000, 1, &pkt);
    unsigned char *p = b ? b : body;
    p = w_tag(p, PF_TE_TYPE, PB_VARINT);
    p = w_varint(p, PF_TYPE_INSTANT);
    p = w_tag(p, PF_TE_TRACK_UUID, PB_VARINT);
    p = w_varint(p, track);
    p = w_tag(p, PF_TE_CATEGORY_IIDS, PB_VARINT);
    p = w_varint(p, cat_iid);
    p = w_tag(p, PF_TE_NAME_IID, PB_VARINT);
    p = w_varint(p, name_iid);
    if (ts_ps % 1000)
        p = w_ann_u64(p, ts_iid, ts_ps % 1000);
    p = w_tag(p, terminating ? PF_TE_TERMINATING_FLOW_IDS : PF_TE_FLOW_IDS, PB_I64);
    p = w_fixed64(p, flow); /* at most 2 + 11 * 3 + 2 + 12 + 10 bytes in all */
    if (b)
        return small_end(w, pkt, b, p);
    return emit_small(w, st, ts_ps / 1000, 1, body, (size_t)(p - body));
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
            ncsim_status_t r =
                write_instant(w, st, f->track, f->ts_ps, f->cat_iid, f->name_iid, f->id, 1);
            if (r != NCSIM_OK)
                rc = r;
        } else {
            st->flows[k++] = *f;
        }
    }
    st->nflows = k;
    return rc;
}

static __attribute__((noinline)) ncsim_status_t write_slice(trc_writer_t *w, pf_state_t *st,
                                                             const trc_slice_t *s)
{
    if (s->kind >= TRC_SLICE_KIND_COUNT)
        return NCSIM_INTERNAL;
    uint64_t track = trc_pf_track_uuid(s->pid, s->tid);
    ncsim_status_t rc = st->nflows ? flush_flows(w, st, track, s->ts_ps, 0) : NCSIM_OK;
    if (rc != NCSIM_OK)
        return rc;
    unsigned nf;
    const trc_field_t *f = trc_slice_fields((trc_slice_kind_t)s->kind, &nf);
    if (!st->kind_ready[s->kind]) {
        st->kind_ready[s->kind] = 1;
        collect_slice_names(st, f, nf, st->kind_fields[s->kind]);
        st->kind_cat[s->kind] =
            iid_of(st, TBL_CATEGORY, trc_slice_category((trc_slice_kind_t)s->kind));
        if (!st->ts_iid)
            st->ts_iid = iid_of(st, TBL_ANNOTATION, "ts_extra_ps");
        st->dur_iid = iid_of(st, TBL_ANNOTATION, "dur_ps");
        st->values_iid = iid_of(st, TBL_ANNOTATION, "operand_values");
    }
    const uint64_t *iids = st->kind_fields[s->kind];
    st->slice = s;
    uint64_t name_iid = slice_iid(st, TBL_NAME, s->name);
    /* room: fixed fields, every annotation at its largest, the strings, flow ids */
    /* (an operand text split by put_operands: its numbers, shorter than the text, inline) */
    size_t room = 64 + 2 * 32 + kind_room[s->kind] + OPERANDS_MAX + 32 + st->nflows * 10 +
                  (s->operand_values ? strlen(s->operand_values) + 16 : 0);
    /* The event is composed in place, in the output buffer after the room its packet's
     * header takes: that room depends on the lengths of the body and of the packet (one
     * varint byte below 128, two above), so it is guessed as the last slice of the track had
     * it (an engine runs the same few instructions), and the body moved by a byte or two when
     * the guess was wrong. When the event turned
     * out to need interned strings sent first (or the first packet, or a body of 16 kB), it
     * is copied into st->ev and takes emit_event's general path. */
    uint64_t ts_ns = s->ts_ps / 1000;
    int direct = !st->first_packet && !st->oom && room + 32 <= TRC_OUT_BUFSZ;
    /* the header but its two lengths (w_event_head) */
    size_t fixed = event_head_size(ts_ns, 1);
    unsigned char *pkt = NULL, *body;
    if (direct) {
        pkt = trc_out_reserve(&w->out, room + 32);
        body = pkt + 1 + st->len_guess[track & 63] + fixed;
    } else {
        st->ev.n = 0;
        if (pb_reserve(&st->ev, room))
            return NCSIM_NOMEM;
        body = st->ev.p;
    }
    unsigned char *p = body;
    p = w_tag(p, PF_TE_TYPE, PB_VARINT);
    p = w_varint(p, PF_TYPE_SLICE_BEGIN);
    p = w_tag(p, PF_TE_TRACK_UUID, PB_VARINT);
    p = w_varint(p, track);
    p = w_tag(p, PF_TE_CATEGORY_IIDS, PB_VARINT);
    p = w_varint(p, st->kind_cat[s->kind]);
    p = w_tag(p, PF_TE_NAME_IID, PB_VARINT);
    p = w_varint(p, name_iid);
    p = slice_annotations(st, p, s, iids, trc_pf_implied(s));
    st->slice = NULL;
    if (s->ts_ps % 1000)
        p = w_ann_u64(p, st->ts_iid, s->ts_ps % 1000);
    p = w_ann_u64(p, st->dur_iid, s->dur_ps);
    /* flows that end here */
    size_t k = 0;
    for (size_t i = 0; i < st->nflows; i++) {
        if (st->flows[i].track == track && st->flows[i].ts_ps == s->ts_ps) {
            p = w_tag(p, PF_TE_TERMINATING_FLOW_IDS, PB_I64);
            p = w_fixed64(p, st->flows[i].id);
        } else {
            st->flows[k++] = st->flows[i];
        }
    }
    st->nflows = k;
    size_t nbody = (size_t)(p - body);
    if (direct && !st->npend && !st->oom && nbody + 32 < (1u << 14)) {
        size_t nlen = nbody < 128 ? 1 : 2, npkt = fixed + nlen + nbody;
        unsigned lens = (unsigned)(nlen + (npkt < 128 ? 1 : 2));
        if (lens != st->len_guess[track & 63]) {
            memmove(pkt + 1 + lens + fixed, body, nbody);
            st->len_guess[track & 63] = (uint8_t)lens;
        }
        unsigned char *q = pkt;
        *q++ = PF_TRACE_PACKET << 3 | PB_LEN;
        q = w_varint(q, npkt);
        q = w_event_head(q, ts_ns, 1);
        q = w_varint(q, nbody);
        trc_out_commit(&w->out, (size_t)(q - pkt) + nbody);
        w->events++;
    } else {
        if (direct) { /* out of the output buffer, which the general path writes to */
            st->ev.n = 0;
            if (pb_reserve(&st->ev, nbody))
                return NCSIM_NOMEM;
            memcpy(st->ev.p, body, nbody);
        }
        st->ev.n = nbody;
        rc = emit_event(w, st, ts_ns, 1);
        if (rc != NCSIM_OK)
            return rc;
    }
    unsigned char ebody[SMALL_BODY], *epkt;
    uint64_t end_ns = (s->ts_ps + s->dur_ps) / 1000;
    unsigned char *b = small_begin(w, st, end_ns, 0, &epkt);
    p = b ? b : ebody;
    p = w_tag(p, PF_TE_TYPE, PB_VARINT);
    p = w_varint(p, PF_TYPE_SLICE_END);
    p = w_tag(p, PF_TE_TRACK_UUID, PB_VARINT);
    p = w_varint(p, track);
    if (b)
        return small_end(w, epkt, b, p);
    return emit_small(w, st, end_ns, 0, ebody, (size_t)(p - ebody));
}

static inline ncsim_status_t write_counter_value(trc_writer_t *w, pf_state_t *st,
                                                 const trc_counter_t *c, uint64_t uuid);

static inline unsigned hot_counter_slot(const char *cname, uint32_t pid)
{
    return (unsigned)(((uintptr_t)cname >> 3) ^ ((uintptr_t)cname >> 10) ^ pid * 7u) &
           (HOT_COUNTER - 1);
}

/* write_counter past its memo of stable tracks (a track's first value, records that are not
 * stable). */
static __attribute__((noinline)) ncsim_status_t write_counter_slow(trc_writer_t *w,
                                                                    pf_state_t *st,
                                                                    const trc_counter_t *c)
{
    const char *cname = c->name ? c->name : "", *cunit = c->unit ? c->unit : "";
    unsigned hot = hot_counter_slot(cname, c->pid);
    if (c->stable) {
        uint64_t uuid = ptr_get(&st->stable_counters, cname, cunit, c->pid);
        if (uuid) {
            st->hot_counter[hot].name = cname;
            st->hot_counter[hot].unit = cunit;
            st->hot_counter[hot].pid = c->pid;
            st->hot_counter[hot].uuid = uuid;
            return write_counter_value(w, st, c, uuid);
        }
    }
    uintptr_t hp = (uintptr_t)cname ^ ((uintptr_t)cname >> 9) ^ (uintptr_t)c->pid * 40503u;
    counter_memo_t *mo = &st->memo[hp & (COUNTER_MEMO - 1)];
    uint64_t uuid = 0;
    if (mo->uuid && mo->pid == c->pid && mo->name_ptr == cname && mo->unit_ptr == cunit &&
        strcmp(mo->name, cname) == 0 && strcmp(mo->unit, cunit) == 0)
        uuid = mo->uuid;
    int is_new = 0;
    if (!uuid) {
        char key[512];
        snprintf(key, sizeof key, "%u\x1f%s\x1f%s", c->pid, cname, cunit);
        uint64_t n = intern_get(&st->counters, key, &is_new);
        if (!n)
            return NCSIM_NOMEM;
        uuid = trc_pf_counter_uuid(n);
        if (strlen(cname) < sizeof mo->name && strlen(cunit) < sizeof mo->unit) {
            mo->pid = c->pid;
            mo->name_ptr = cname;
            mo->unit_ptr = cunit;
            strcpy(mo->name, cname);
            strcpy(mo->unit, cunit);
            mo->uuid = uuid;
        }
    }
    if (is_new) {
        char name[300];
        snprintf(name, sizeof name, "%s (%s)", c->name, c->unit);
        ncsim_status_t rc = write_descriptor(w, st, uuid, trc_pf_track_uuid(c->pid, 0), name, 3,
                                             c->pid, 0, c->unit);
        if (rc != NCSIM_OK)
            return rc;
    }
    if (c->stable && ptr_put(&st->stable_counters, cname, cunit, c->pid, uuid))
        return NCSIM_NOMEM;
    return write_counter_value(w, st, c, uuid);
}

/* A counter value: a stable track seen before is found by its name's address (several values
 * per simulated instruction: the hit is inlined, the rest is write_counter_slow). */
static inline ncsim_status_t write_counter(trc_writer_t *w, pf_state_t *st,
                                           const trc_counter_t *c)
{
    if (c->stable && c->name && c->unit) {
        unsigned hot = hot_counter_slot(c->name, c->pid);
        if (st->hot_counter[hot].name == c->name && st->hot_counter[hot].unit == c->unit &&
            st->hot_counter[hot].pid == c->pid)
            return write_counter_value(w, st, c, st->hot_counter[hot].uuid);
    }
    return write_counter_slow(w, st, c);
}

/* A counter value as protobuf has it: whole values (bytes, semaphore values) as an int64
 * varint, the others as a double. */
static inline int counter_is_int(double v)
{
    return v > -9e15 && v < 9e15 && v == (double)(int64_t)v;
}

/* A counter value: one TYPE_COUNTER event on its track, a whole value as counter_value, any
 * other as double_counter_value. (Values of one instant on several tracks could share one
 * event through TrackEvent's extra_counter_track_uuids / extra_counter_values; our reader
 * reads those, but the writer does not write them: whether Perfetto's importer takes them
 * on a counter event, and in which wire encoding, could not be checked against it; they
 * made the file 3% smaller and saved about as much as they cost.) */
static inline ncsim_status_t write_counter_value(trc_writer_t *w, pf_state_t *st,
                                                 const trc_counter_t *c, uint64_t uuid)
{
    uint64_t ts = c->ts_ps / 1000;
    unsigned char body[SMALL_BODY], *pkt, *b = small_begin(w, st, ts, 0, &pkt);
    unsigned char *p = b ? b : body;
    p = w_tag(p, PF_TE_TYPE, PB_VARINT);
    p = w_varint(p, PF_TYPE_COUNTER);
    p = w_tag(p, PF_TE_TRACK_UUID, PB_VARINT);
    p = w_varint(p, uuid);
    if (counter_is_int(c->value)) {
        p = w_tag(p, PF_TE_COUNTER_VALUE, PB_VARINT);
        p = w_varint(p, (uint64_t)(int64_t)c->value);
    } else {
        p = w_tag(p, PF_TE_DOUBLE_COUNTER_VALUE, PB_I64);
        p = w_double(p, c->value);
    }
    if (b)
        return small_end(w, pkt, b, p);
    return emit_small(w, st, ts, 0, body, (size_t)(p - body));
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
        memset(st->len_guess, 3, sizeof st->len_guess);
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
        uint64_t cat_iid = fl->stable ? iid_stable(st, TBL_CATEGORY, fl->cat)
                                      : iid_of(st, TBL_CATEGORY, fl->cat);
        uint64_t name_iid = fl->stable ? iid_stable(st, TBL_NAME, fl->name)
                                       : iid_of(st, TBL_NAME, fl->name);
        ncsim_status_t rc = write_instant(w, st, trc_pf_track_uuid(fl->from_pid, fl->from_tid),
                                          fl->from_ts_ps, cat_iid, name_iid, fl->id, 0);
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
        p->cat_iid = cat_iid;
        p->name_iid = name_iid;
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
    free(st->stable_str.e);
    free(st->stable_counters.e);
    free(st->flows);
    free(st->pkt.p);
    free(st->ev.p);
    free(st);
    w->state = NULL;
}

const trc_backend_t trc_pftrace_backend = {pf_write, pf_finish, pf_destroy};
