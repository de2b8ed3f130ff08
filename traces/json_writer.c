/*
 * json_writer.c -- Chrome Trace Event JSON, streamed: one event per line, no event held in
 * memory. Perfetto UI and chrome://tracing open it (gzipped too).
 *
 *   {"displayTimeUnit":"ns","otherData":{RUN fields},"traceEvents":[
 *   {"ph":"M","name":"process_name","pid":1,"args":{"name":"chip 0 core 0"}},
 *   {"ph":"X","cat":"instr","name":"matmul","pid":1,"tid":1,"ts":1.5,"dur":0.045714,
 *    "args":{...}},
 *   {"ph":"C","name":"HBM bandwidth","pid":10001,"ts":2,"args":{"GB/s":412.5}},
 *   {"ph":"s","cat":"semaphore","name":"b_ready","id":3,...},{"ph":"f","bp":"e",...}
 *   ]}
 *
 * ts and dur are microseconds; with six decimals they carry the simulator's picoseconds
 * exactly (numbers are formatted by hand: printf would dominate the cost of tracing).
 */
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

/* Strings of `stable` records (trc_slice_t) that need no escaping, by address: their length,
 * so that they are copied without being measured and scanned again (cost breakdowns are a few
 * hundred bytes and every instruction carries one). Direct-mapped. */
#define PLAIN_MEMO 512u
typedef struct plain_memo {
    const char *s;
    size_t len;
} plain_memo_t;

typedef struct json_state {
    int started; /* header written */
    int any;     /* an event written (a comma precedes the next) */
    plain_memo_t plain[PLAIN_MEMO];
} json_state_t;

/* An event is composed in a fixed buffer; strings that would not fit are cut (never
 * happens for instruction text, which is far shorter): strings end before STR_LIMIT, which
 * leaves room for every key and number of the event after them. */
#define EV_CAP 8192
#define STR_LIMIT (EV_CAP - 4096)

typedef struct ev {
    char *p;
    size_t n;
    json_state_t *js;
    int stable; /* the strings of the record being written are stable */
} ev_t;

/* A literal: always fits (strings stop at STR_LIMIT, far from the end of the buffer), so a
 * constant-size copy the compiler inlines. */
#define PUTS(e, lit)                                                                           \
    do {                                                                                       \
        memcpy((e)->p + (e)->n, lit, sizeof lit - 1);                                          \
        (e)->n += sizeof lit - 1;                                                              \
    } while (0)

static void put_u64(ev_t *e, uint64_t v)
{
    e->n += trc_fmt_u64(e->p + e->n, v);
}

static void put_fixed(ev_t *e, uint64_t v, unsigned decimals)
{
    e->n += trc_fmt_fixed(e->p + e->n, v, decimals);
}

static void put_f64(ev_t *e, double v)
{
    e->n += trc_fmt_f64(e->p + e->n, v);
}

/* Length of the prefix of s[0, n) that needs no escaping, eight bytes at a time. */
static size_t plain_prefix(const char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        uint64_t hit = ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b);
        if (hit & highs)
            break;
    }
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == '"' || ch == '\\')
            break;
        i++;
    }
    return i;
}

/* A JSON string with its quotes: runs of plain characters are copied at once. */
static void put_str(ev_t *e, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    e->p[e->n++] = '"';
    const char *run = s ? s : "";
    size_t len = strlen(run);
    size_t plain = plain_prefix(run, len);
    if (plain == len && e->n + len <= STR_LIMIT) { /* the usual case */
        memcpy(e->p + e->n, run, len);
        e->n += len;
        e->p[e->n++] = '"';
        return;
    }
    for (const char *c = run;; c++) {
        unsigned char ch = (unsigned char)*c;
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        size_t k = (size_t)(c - run);
        if (e->n + k > STR_LIMIT)
            k = e->n < STR_LIMIT ? STR_LIMIT - e->n : 0;
        memcpy(e->p + e->n, run, k);
        e->n += k;
        if (!ch || e->n >= STR_LIMIT)
            break;
        if (ch == '"' || ch == '\\') {
            e->p[e->n++] = '\\';
            e->p[e->n++] = (char)ch;
        } else {
            memcpy(e->p + e->n, "\\u00", 4);
            e->p[e->n + 4] = hex[ch >> 4];
            e->p[e->n + 5] = hex[ch & 15];
            e->n += 6;
        }
        run = c + 1;
    }
    e->p[e->n++] = '"';
}

/* A string of the record being written: when the record is stable and the string needs no
 * escaping, its length is remembered by address and the text copied at once; otherwise
 * put_str. The same bytes either way. */
/* The length of a stable string that needs no escaping; SIZE_MAX when it needs some. */
static size_t plain_len(ev_t *e, const char *s)
{
    uintptr_t k = (uintptr_t)s;
    plain_memo_t *m = &e->js->plain[(k >> 3 ^ k >> 12) & (PLAIN_MEMO - 1)];
    if (m->s != s) {
        size_t len = strlen(s);
        if (plain_prefix(s, len) != len)
            return SIZE_MAX; /* to escape: not remembered */
        m->s = s;
        m->len = len;
    }
    return m->len;
}

static void put_str_rec(ev_t *e, const char *s)
{
    size_t len = e->stable && s ? plain_len(e, s) : SIZE_MAX;
    if (len == SIZE_MAX || e->n + 1 + len > STR_LIMIT) { /* put_str's test, after its quote */
        put_str(e, s); /* escaped or cut there by put_str */
        return;
    }
    e->p[e->n++] = '"';
    memcpy(e->p + e->n, s, len);
    e->n += len;
    e->p[e->n++] = '"';
}

/* Operands given as a template and its numbers (trc_slice_t.operands_tmpl): the whole text. */
static void put_tmpl(ev_t *e, const char *tmpl, const char *vals)
{
    char buf[STR_LIMIT];
    size_t k = 0;
    const char *v = vals ? vals : "";
    if (!*v) { /* no numbers: the template is the text */
        put_str_rec(e, tmpl);
        return;
    }
    size_t tl = e->stable ? plain_len(e, tmpl) : SIZE_MAX;
    if (tl != SIZE_MAX) {
        /* a stable template needing no escaping and numbers needing none, short enough not
         * to be cut: straight into the event, a run of the template at a time (the bytes
         * the general path below gives) */
        size_t vl = strlen(v);
        if (plain_prefix(v, vl) == vl && e->n + 2 + tl + vl <= STR_LIMIT) {
            char *o = e->p + e->n;
            *o++ = '"';
            const char *c = tmpl, *end = tmpl + tl;
            while (c < end) {
                const char *h = memchr(c, '#', (size_t)(end - c));
                size_t run = h ? (size_t)(h - c) : (size_t)(end - c);
                memcpy(o, c, run);
                o += run;
                c += run;
                if (!h)
                    break;
                c++; /* the '#' */
                if (!*v) {
                    *o++ = '#';
                    continue;
                }
                while (*v && *v != ' ')
                    *o++ = *v++;
                if (*v == ' ')
                    v++;
            }
            *o++ = '"';
            e->n = (size_t)(o - e->p);
            return;
        }
    }
    for (const char *c = tmpl; *c && k + 1 < sizeof buf; c++) {
        if (*c != '#' || !*v) {
            buf[k++] = *c;
            continue;
        }
        while (*v && *v != ' ' && k + 1 < sizeof buf)
            buf[k++] = *v++;
        if (*v == ' ')
            v++;
    }
    buf[k] = '\0';
    put_str(e, buf);
}

/* The fields of an args struct as JSON members (no braces); returns how many. */
static int put_fields(ev_t *e, const trc_field_t *f, unsigned nf, const void *base, int any)
{
    for (unsigned i = 0; i < nf; i++) {
        uint64_t u;
        double d;
        const char *s;
        if (!trc_get_field(&f[i], base, &u, &d, &s))
            continue;
        if (any++)
            e->p[e->n++] = ',';
        put_str(e, f[i].key);
        e->p[e->n++] = ':';
        switch (f[i].type) {
        case TRC_FT_U64: put_u64(e, u); break;
        case TRC_FT_PS: put_fixed(e, u, 3); break;
        case TRC_FT_F64: put_f64(e, d); break;
        default: put_str(e, s); break;
        }
    }
    return any;
}

/* The arguments of each slice kind, expanded from its field table at compile time: the
 * same members in the same order as put_fields writes them, without its loop. */
#define JSKIP_U64(v) ((v) == 0)
#define JSKIP_PS(v) ((v) == 0)
#define JSKIP_F64(v) ((v) == 0)
#define JSKIP_STR(v) (!(v) || !*(v))
#define JPUT_U64(e, v) put_u64(e, v)
#define JPUT_PS(e, v) put_fixed(e, v, 3)
#define JPUT_F64(e, v) put_f64(e, v)
#define JPUT_STR(e, v)                                                                         \
    (s->operands_tmpl && (v) == s->operands_tmpl ? put_tmpl(e, v, s->operand_values)          \
                                                 : put_str_rec(e, (v) ? (v) : ""))
#define JFIELD(member, key, type, always)                                                      \
    if ((always) || !JSKIP_##type(a->member)) {                                                \
        if (any++)                                                                             \
            e->p[e->n++] = ',';                                                                \
        PUTS(e, "\"" key "\":");                                                               \
        JPUT_##type(e, a->member);                                                             \
    }
#define XX(ID, member_, cat, FIELDS)                                                           \
    static void put_args_##member_(ev_t *e, const trc_##member_##_args_t *a,                   \
                                   const trc_slice_t *s)                                       \
    {                                                                                          \
        int any = 0;                                                                           \
        FIELDS(JFIELD)                                                                         \
        (void)any, (void)s;                                                                    \
    }
TRC_SLICE_KIND_MAP(XX)
#undef XX

static void put_slice_args(ev_t *e, const trc_slice_t *s)
{
    switch ((trc_slice_kind_t)s->kind) {
#define XX(ID, member_, cat, FIELDS)                                                           \
    case TRC_SLICE_##ID: put_args_##member_(e, &s->a.member_, s); break;
        TRC_SLICE_KIND_MAP(XX)
#undef XX
    default: break;
    }
}

static void begin_event(trc_writer_t *w, ev_t *e)
{
    json_state_t *js = w->state;
    if (js->any++)
        PUTS(e, ",\n");
    w->events++;
}

static void put_pid_tid(ev_t *e, uint32_t pid, uint32_t tid)
{
    PUTS(e, ",\"pid\":");
    put_u64(e, pid);
    PUTS(e, ",\"tid\":");
    put_u64(e, tid);
}

static ncsim_status_t json_write(trc_writer_t *w, const trc_record_t *r)
{
    json_state_t *js = w->state;
    /* events are composed in place, in the output buffer */
    ev_t e = {(char *)trc_out_reserve(&w->out, EV_CAP), 0, js, 0};
    if (!js->started) {
        js->started = 1;
        PUTS(&e, "{\"displayTimeUnit\":\"ns\",");
        if (r->kind == TRC_REC_RUN) {
            unsigned nf;
            const trc_field_t *f = trc_run_fields(&nf);
            PUTS(&e, "\"otherData\":{");
            put_fields(&e, f, nf, &r->u.run, 0);
            PUTS(&e, "},");
        }
        PUTS(&e, "\"traceEvents\":[\n");
        trc_out_commit(&w->out, e.n);
        if (r->kind == TRC_REC_RUN)
            return NCSIM_OK;
        e.p = (char *)trc_out_reserve(&w->out, EV_CAP);
        e.n = 0;
    }
    switch ((trc_kind_t)r->kind) {
    case TRC_REC_RUN:
        return NCSIM_USAGE; /* the run comes first or not at all */
    case TRC_REC_PROCESS: {
        const trc_process_t *p = &r->u.process;
        begin_event(w, &e);
        PUTS(&e, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
        put_u64(&e, p->pid);
        PUTS(&e, ",\"args\":{\"name\":");
        put_str(&e, p->name);
        PUTS(&e, "}}");
        begin_event(w, &e);
        PUTS(&e, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
        put_u64(&e, p->pid);
        PUTS(&e, ",\"args\":{\"sort_index\":");
        put_u64(&e, (uint64_t)(p->sort_index < 0 ? 0 : p->sort_index));
        PUTS(&e, "}}");
        break;
    }
    case TRC_REC_TRACK: {
        const trc_track_t *t = &r->u.track;
        begin_event(w, &e);
        PUTS(&e, "{\"ph\":\"M\",\"name\":\"thread_name\"");
        put_pid_tid(&e, t->pid, t->tid);
        PUTS(&e, ",\"args\":{\"name\":");
        put_str(&e, t->name);
        PUTS(&e, "}}");
        begin_event(w, &e);
        PUTS(&e, "{\"ph\":\"M\",\"name\":\"thread_sort_index\"");
        put_pid_tid(&e, t->pid, t->tid);
        PUTS(&e, ",\"args\":{\"sort_index\":");
        put_u64(&e, (uint64_t)(t->sort_index < 0 ? 0 : t->sort_index));
        PUTS(&e, "}}");
        break;
    }
    case TRC_REC_SLICE: {
        const trc_slice_t *s = &r->u.slice;
        if (s->kind >= TRC_SLICE_KIND_COUNT)
            return NCSIM_INTERNAL;
        begin_event(w, &e);
        e.stable = s->stable;
        PUTS(&e, "{\"ph\":\"X\",\"cat\":");
        put_str(&e, trc_slice_category((trc_slice_kind_t)s->kind));
        PUTS(&e, ",\"name\":");
        put_str_rec(&e, s->name);
        put_pid_tid(&e, s->pid, s->tid);
        PUTS(&e, ",\"ts\":");
        put_fixed(&e, s->ts_ps, 6);
        PUTS(&e, ",\"dur\":");
        put_fixed(&e, s->dur_ps, 6);
        PUTS(&e, ",\"args\":{");
        put_slice_args(&e, s);
        PUTS(&e, "}}");
        break;
    }
    case TRC_REC_COUNTER: {
        const trc_counter_t *c = &r->u.counter;
        begin_event(w, &e);
        e.stable = c->stable;
        PUTS(&e, "{\"ph\":\"C\",\"name\":");
        put_str_rec(&e, c->name);
        PUTS(&e, ",\"pid\":");
        put_u64(&e, c->pid);
        PUTS(&e, ",\"ts\":");
        put_fixed(&e, c->ts_ps, 6);
        PUTS(&e, ",\"args\":{");
        put_str_rec(&e, c->unit);
        e.p[e.n++] = ':';
        put_f64(&e, c->value);
        PUTS(&e, "}}");
        break;
    }
    case TRC_REC_FLOW: {
        const trc_flow_t *fl = &r->u.flow;
        for (int end = 0; end < 2; end++) {
            begin_event(w, &e);
            PUTS(&e, "{\"ph\":");
            if (end)
                PUTS(&e, "\"f\",\"bp\":\"e\"");
            else
                PUTS(&e, "\"s\"");
            e.stable = fl->stable;
            PUTS(&e, ",\"cat\":");
            put_str_rec(&e, fl->cat);
            PUTS(&e, ",\"name\":");
            put_str_rec(&e, fl->name);
            PUTS(&e, ",\"id\":");
            put_u64(&e, fl->id);
            put_pid_tid(&e, end ? fl->to_pid : fl->from_pid, end ? fl->to_tid : fl->from_tid);
            PUTS(&e, ",\"ts\":");
            put_fixed(&e, end ? fl->to_ts_ps : fl->from_ts_ps, 6);
            PUTS(&e, "}");
        }
        break;
    }
    default: return NCSIM_INTERNAL;
    }
    trc_out_commit(&w->out, e.n);
    return NCSIM_OK;
}

static ncsim_status_t json_finish(trc_writer_t *w)
{
    json_state_t *js = w->state;
    static const char head[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    if (!js->started)
        trc_out_str(&w->out, head, sizeof head - 1);
    trc_out_str(&w->out, "\n]}\n", 4);
    return NCSIM_OK;
}

static void json_destroy(trc_writer_t *w)
{
    free(w->state);
    w->state = NULL;
}

static ncsim_status_t json_init(trc_writer_t *w)
{
    if (!w->state)
        w->state = calloc(1, sizeof(json_state_t));
    return w->state ? NCSIM_OK : NCSIM_NOMEM;
}

static ncsim_status_t json_write_lazy(trc_writer_t *w, const trc_record_t *r)
{
    ncsim_status_t st = json_init(w);
    return st != NCSIM_OK ? st : json_write(w, r);
}

static ncsim_status_t json_finish_lazy(trc_writer_t *w)
{
    ncsim_status_t st = json_init(w);
    return st != NCSIM_OK ? st : json_finish(w);
}

const trc_backend_t trc_json_backend = {json_write_lazy, json_finish_lazy, json_destroy};
