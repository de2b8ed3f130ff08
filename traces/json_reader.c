/*
 * json_reader.c -- Chrome Trace Event JSON back into records, with yajl's SAX parser: memory
 * stays small whatever the size of the file (one event at a time; only unpaired flow ends
 * are kept). Numbers are taken as written (yajl's number callback), so picosecond times
 * written as microseconds with six decimals come back exactly.
 *
 * Understood: "otherData" (the run), "traceEvents" with M process_name / thread_name, X
 * slices whose category is a slice kind, C counters, s/f flows. Other events and keys are
 * skipped, as viewers do.
 */
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "trace_internal.h"

enum { SEC_NONE, SEC_OTHER, SEC_EVENTS, SEC_SKIP };

#define MAX_ARGS 48

typedef struct jarg {
    size_t key, keylen; /* offsets in the arena */
    size_t val, vallen;
    int is_number;
} jarg_t;

typedef struct jreader {
    trc_record_fn fn;
    void *ctx;
    int stop;
    int depth;
    int section;       /* of the top-level value being read */
    int skip_depth;    /* > 0: inside a value being skipped, at this depth */
    char topkey[32];
    /* the event being read */
    char *arena;
    size_t an, acap;
    int in_args;       /* inside "args" (depth 4) */
    size_t curkey, curkeylen;
    jarg_t args[MAX_ARGS];
    int nargs;
    /* event fields: offsets of their text in the arena (SIZE_MAX when absent) */
    size_t ph, name, cat, pid, tid, ts, dur, id;
    size_t phl, namel, catl, pidl, tidl, tsl, durl, idl;
    flowpair_t flows;
    int oom;
    char bad[160];     /* a malformed event: message */
} jreader_t;

static size_t arena_put(jreader_t *r, const void *s, size_t n)
{
    if (r->an + n + 1 > r->acap) {
        size_t cap = r->acap ? r->acap * 2 : 4096;
        while (cap < r->an + n + 1)
            cap *= 2;
        char *a = realloc(r->arena, cap);
        if (!a) {
            r->oom = 1;
            return 0;
        }
        r->arena = a;
        r->acap = cap;
    }
    size_t at = r->an;
    memcpy(r->arena + at, s, n);
    r->arena[at + n] = '\0';
    r->an += n + 1;
    return at;
}

static void reset_event(jreader_t *r)
{
    r->an = 0;
    r->nargs = 0;
    r->in_args = 0;
    r->ph = r->name = r->cat = r->pid = r->tid = r->ts = r->dur = r->id = SIZE_MAX;
}

static const char *txt(const jreader_t *r, size_t at)
{
    return at == SIZE_MAX ? "" : r->arena + at;
}

static int num_u64(const jreader_t *r, size_t at, size_t len, uint64_t *out)
{
    if (at == SIZE_MAX)
        return -1;
    return trc_parse_scaled(r->arena + at, len, 0, out);
}

static int num_ps(const jreader_t *r, size_t at, size_t len, uint64_t *out)
{
    if (at == SIZE_MAX)
        return -1;
    return trc_parse_scaled(r->arena + at, len, 6, out); /* microseconds -> picoseconds */
}

static const jarg_t *find_arg(const jreader_t *r, const char *key)
{
    for (int i = 0; i < r->nargs; i++)
        if (strcmp(r->arena + r->args[i].key, key) == 0)
            return &r->args[i];
    return NULL;
}

static void set_fields(jreader_t *r, const trc_field_t *f, unsigned nf, void *base)
{
    for (int i = 0; i < r->nargs; i++) {
        arg_value_t v;
        memset(&v, 0, sizeof v);
        v.is_text = 1;
        v.is_number = r->args[i].is_number;
        v.text = r->arena + r->args[i].val;
        v.len = r->args[i].vallen;
        trc_set_field(f, nf, base, r->arena + r->args[i].key, r->args[i].keylen, &v);
    }
}

static int emit(jreader_t *r, const trc_record_t *rec)
{
    if (r->fn(r->ctx, rec))
        r->stop = 1;
    return !r->stop;
}

/* A whole event has been read: turn it into a record. */
static int finish_event(jreader_t *r)
{
    const char *ph = txt(r, r->ph);
    trc_record_t rec;
    memset(&rec, 0, sizeof rec);
    uint64_t pid = 0, tid = 0;
    int has_pid = num_u64(r, r->pid, r->pidl, &pid) == 0;
    int has_tid = num_u64(r, r->tid, r->tidl, &tid) == 0;
    if (pid > UINT32_MAX || tid > UINT32_MAX) {
        snprintf(r->bad, sizeof r->bad, "pid or tid out of range");
        return 0;
    }
    if (strcmp(ph, "M") == 0) {
        const jarg_t *a = find_arg(r, "name");
        if (!a || !has_pid)
            return 1;
        if (strcmp(txt(r, r->name), "process_name") == 0) {
            rec.kind = TRC_REC_PROCESS;
            rec.u.process.pid = (uint32_t)pid;
            rec.u.process.name = r->arena + a->val;
            return emit(r, &rec);
        }
        if (strcmp(txt(r, r->name), "thread_name") == 0 && has_tid) {
            rec.kind = TRC_REC_TRACK;
            rec.u.track.pid = (uint32_t)pid;
            rec.u.track.tid = (uint32_t)tid;
            rec.u.track.name = r->arena + a->val;
            return emit(r, &rec);
        }
        return 1;
    }
    if (strcmp(ph, "X") == 0) {
        trc_slice_kind_t k = trc_slice_kind_lookup(txt(r, r->cat), r->cat == SIZE_MAX ? 0 : r->catl);
        if (k == TRC_SLICE_KIND_COUNT)
            return 1; /* someone else's slice */
        trc_slice_t *s = &rec.u.slice;
        rec.kind = TRC_REC_SLICE;
        s->kind = (uint8_t)k;
        s->name = txt(r, r->name);
        if (!has_pid || !has_tid || num_ps(r, r->ts, r->tsl, &s->ts_ps) ||
            num_ps(r, r->dur, r->durl, &s->dur_ps)) {
            snprintf(r->bad, sizeof r->bad, "slice '%s' without a valid pid, tid, ts or dur",
                     s->name);
            return 0;
        }
        s->pid = (uint32_t)pid;
        s->tid = (uint32_t)tid;
        unsigned nf;
        const trc_field_t *f = trc_slice_fields(k, &nf);
        set_fields(r, f, nf, &s->a);
        return emit(r, &rec);
    }
    if (strcmp(ph, "C") == 0) {
        trc_counter_t *c = &rec.u.counter;
        if (!has_pid || num_ps(r, r->ts, r->tsl, &c->ts_ps) || r->nargs < 1 ||
            !r->args[0].is_number) {
            snprintf(r->bad, sizeof r->bad, "counter '%s' without pid, ts or a numeric value",
                     txt(r, r->name));
            return 0;
        }
        rec.kind = TRC_REC_COUNTER;
        c->pid = (uint32_t)pid;
        c->name = txt(r, r->name);
        c->unit = r->arena + r->args[0].key;
        c->value = strtod(r->arena + r->args[0].val, NULL);
        return emit(r, &rec);
    }
    if ((ph[0] == 's' || ph[0] == 'f') && !ph[1]) {
        flow_end_t e;
        memset(&e, 0, sizeof e);
        uint64_t id = 0;
        if (r->id == SIZE_MAX || !has_pid || !has_tid || num_ps(r, r->ts, r->tsl, &e.ts_ps)) {
            snprintf(r->bad, sizeof r->bad, "flow event without id, pid, tid or ts");
            return 0;
        }
        if (trc_parse_scaled(r->arena + r->id, r->idl, 0, &id)) {
            /* a string id: any stable number will do */
            id = 1469598103934665603ull;
            for (const char *p = r->arena + r->id; *p; p++)
                id = (id ^ (unsigned char)*p) * 1099511628211ull;
        }
        e.id = id;
        e.pid = (uint32_t)pid;
        e.tid = (uint32_t)tid;
        e.is_end = ph[0] == 'f';
        snprintf(e.cat, sizeof e.cat, "%s", txt(r, r->cat));
        snprintf(e.name, sizeof e.name, "%s", txt(r, r->name));
        rec.kind = TRC_REC_FLOW;
        int k = flowpair_add(&r->flows, &e, &rec.u.flow);
        if (k < 0) {
            r->oom = 1;
            return 0;
        }
        return k ? emit(r, &rec) : 1;
    }
    return 1;
}

/* ---- yajl callbacks -------------------------------------------------------------------------------- */

/* A scalar value arrived at the current position. */
static int on_value(jreader_t *r, const char *s, size_t n, int is_number)
{
    if (r->skip_depth || r->oom)
        return !r->oom;
    if (r->depth == 2 && r->section == SEC_OTHER) {
        /* a run field: collected like event args, emitted at the end of otherData */
        if (r->nargs < MAX_ARGS) {
            jarg_t *a = &r->args[r->nargs++];
            a->key = r->curkey;
            a->keylen = r->curkeylen;
            a->val = arena_put(r, s, n);
            a->vallen = n;
            a->is_number = is_number;
        }
        return !r->oom;
    }
    if (r->section != SEC_EVENTS)
        return 1;
    if (r->depth == 3) {
        size_t at = arena_put(r, s, n);
        if (r->oom)
            return 0;
        const char *k = r->arena + r->curkey; /* after arena_put, which may move the arena */
        if (strcmp(k, "ph") == 0) {
            r->ph = at;
            r->phl = n;
        } else if (strcmp(k, "name") == 0) {
            r->name = at;
            r->namel = n;
        } else if (strcmp(k, "cat") == 0) {
            r->cat = at;
            r->catl = n;
        } else if (strcmp(k, "pid") == 0) {
            r->pid = at;
            r->pidl = n;
        } else if (strcmp(k, "tid") == 0) {
            r->tid = at;
            r->tidl = n;
        } else if (strcmp(k, "ts") == 0) {
            r->ts = at;
            r->tsl = n;
        } else if (strcmp(k, "dur") == 0) {
            r->dur = at;
            r->durl = n;
        } else if (strcmp(k, "id") == 0) {
            r->id = at;
            r->idl = n;
        }
    } else if (r->depth == 4 && r->in_args && r->nargs < MAX_ARGS) {
        jarg_t *a = &r->args[r->nargs++];
        a->key = r->curkey;
        a->keylen = r->curkeylen;
        a->val = arena_put(r, s, n);
        a->vallen = n;
        a->is_number = is_number;
    }
    return !r->oom;
}

static int cb_null(void *ctx)
{
    return on_value(ctx, "", 0, 0);
}

static int cb_boolean(void *ctx, int b)
{
    return on_value(ctx, b ? "1" : "0", 1, 1);
}

static int cb_number(void *ctx, const char *s, size_t n)
{
    return on_value(ctx, s, n, 1);
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    return on_value(ctx, (const char *)s, n, 0);
}

static int cb_start(void *ctx, int is_map)
{
    jreader_t *r = ctx;
    r->depth++;
    if (r->skip_depth)
        return 1;
    if (r->depth == 1) {
        if (!is_map) {
            /* a bare array of events (the other form of the format) */
            r->section = SEC_EVENTS;
            r->depth++; /* read its events as if under "traceEvents" */
        }
        return 1;
    }
    if (r->depth == 2) {
        if (strcmp(r->topkey, "traceEvents") == 0 && !is_map)
            r->section = SEC_EVENTS;
        else if (strcmp(r->topkey, "otherData") == 0 && is_map) {
            r->section = SEC_OTHER;
            reset_event(r);
        } else {
            r->section = SEC_SKIP;
            r->skip_depth = r->depth;
        }
        return 1;
    }
    if (r->section == SEC_EVENTS && r->depth == 3) {
        if (!is_map) {
            snprintf(r->bad, sizeof r->bad, "an event is not an object");
            return 0;
        }
        reset_event(r);
        return 1;
    }
    if (r->section == SEC_EVENTS && r->depth == 4 && is_map &&
        strcmp(r->arena + r->curkey, "args") == 0) {
        r->in_args = 1;
        return 1;
    }
    r->skip_depth = r->depth; /* nested values we do not use */
    return 1;
}

static int cb_start_map(void *ctx)
{
    return cb_start(ctx, 1);
}

static int cb_start_array(void *ctx)
{
    return cb_start(ctx, 0);
}

static int cb_end(void *ctx)
{
    jreader_t *r = ctx;
    int ok = 1;
    if (r->skip_depth) {
        if (r->depth == r->skip_depth)
            r->skip_depth = 0;
    } else if (r->section == SEC_EVENTS && r->depth == 3) {
        ok = finish_event(r) && !r->stop;
    } else if (r->section == SEC_EVENTS && r->depth == 4) {
        r->in_args = 0;
    } else if (r->section == SEC_OTHER && r->depth == 2) {
        trc_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.kind = TRC_REC_RUN;
        unsigned nf;
        const trc_field_t *f = trc_run_fields(&nf);
        set_fields(r, f, nf, &rec.u.run);
        ok = emit(r, &rec);
    }
    r->depth--;
    if (r->depth == 1 && r->section == SEC_EVENTS && r->topkey[0] == '\0')
        r->depth--; /* the bare-array form */
    if (r->depth == 1)
        r->section = SEC_NONE;
    return ok;
}

static int cb_key(void *ctx, const unsigned char *s, size_t n)
{
    jreader_t *r = ctx;
    if (r->skip_depth)
        return 1;
    if (r->depth == 1) {
        size_t k = n < sizeof r->topkey - 1 ? n : sizeof r->topkey - 1;
        memcpy(r->topkey, s, k);
        r->topkey[k] = '\0';
        return 1;
    }
    r->curkey = arena_put(r, s, n);
    r->curkeylen = n;
    return !r->oom;
}

static const yajl_callbacks callbacks = {cb_null,      cb_boolean, NULL,   NULL,
                                         cb_number,    cb_string,  cb_start_map,
                                         cb_key,       cb_end,     cb_start_array,
                                         cb_end};

ncsim_status_t trc_read_json(trc_src_t *src, const unsigned char *head, size_t nhead,
                             trc_record_fn fn, void *ctx, char *err, size_t errlen)
{
    jreader_t *r = calloc(1, sizeof *r);
    unsigned char *buf = malloc(1u << 17);
    yajl_handle h = r ? yajl_alloc(&callbacks, NULL, r) : NULL;
    if (!r || !buf || !h) {
        if (h)
            yajl_free(h);
        free(buf);
        free(r);
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    r->fn = fn;
    r->ctx = ctx;
    reset_event(r);
    ncsim_status_t st = NCSIM_OK;
    uint64_t offset = 0;
    const unsigned char *chunk = head;
    size_t n = nhead;
    for (;;) {
        yajl_status ys = n ? yajl_parse(h, chunk, n) : yajl_complete_parse(h);
        if (ys != yajl_status_ok) {
            if (r->stop)
                break;
            if (r->oom) {
                st = NCSIM_NOMEM;
                snprintf(err, errlen, "out of memory");
            } else if (r->bad[0]) {
                st = NCSIM_FORMAT;
                snprintf(err, errlen, "%s: byte %llu: %s", src->path,
                         (unsigned long long)(offset + yajl_get_bytes_consumed(h)), r->bad);
            } else {
                unsigned char *msg = yajl_get_error(h, 0, NULL, 0);
                st = NCSIM_FORMAT;
                snprintf(err, errlen, "%s: byte %llu: not valid JSON: %s", src->path,
                         (unsigned long long)(offset + (n ? yajl_get_bytes_consumed(h) : 0)),
                         msg ? (const char *)msg : "parse error");
                /* yajl's message ends with a newline */
                size_t L = strlen(err);
                while (L && (err[L - 1] == '\n' || err[L - 1] == ' '))
                    err[--L] = '\0';
                if (msg)
                    yajl_free_error(h, msg);
            }
            break;
        }
        if (!n)
            break;
        offset += n;
        int got = gzread(src->gz, buf, 1u << 17);
        int code = Z_OK;
        if (got == 0)
            gzerror(src->gz, &code); /* a gzip stream cut short ends in Z_BUF_ERROR */
        if (got < 0 || code == Z_BUF_ERROR) {
            snprintf(err, errlen, "%s: %s", src->path,
                     got < 0 ? gzerror(src->gz, &code) : "truncated gzip data");
            st = NCSIM_IO;
            break;
        }
        chunk = buf;
        n = (size_t)got;
    }
    yajl_free(h);
    flowpair_free(&r->flows);
    free(r->arena);
    free(r);
    free(buf);
    return st;
}
